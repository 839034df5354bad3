/*
 * reshard.c - resharding's bookkeeping (doc/DESIGN.md, "Buckets and
 * resharding"): the plan that spreads buckets over the configured shards
 * (draining ones excepted), the moves table (bagstore_moves, one row per
 * move on its source shard: recording a plan, listing, pause / resume /
 * cancel), the map's view per shard (`bagstore buckets`), and whether a
 * move is in flight (backfills wait). Running a move is move.c's.
 */
#include "cleaner.h"

#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define DEFAULT_RATE 20000.0 /* rows/s a plan assumes before any move ran */

/* ------------------------------------------------------------ names */

static const char *const phase_names[] = { "copy", "index rows", "catch-up", "cut-over", "cleanup", "done", "undo" };
static const char *const phase_sql[] = { "copy", "index", "catchup", "cutover", "cleanup", "done", "undo" };

const char *bs_move_phase_name(bs_move_phase_t p)
{
	return (unsigned)p < sizeof phase_names / sizeof *phase_names ? phase_names[p] : "unknown";
}

static bs_move_phase_t phase_parse(const char *s)
{
	for (size_t k = 0; s && k < sizeof phase_sql / sizeof *phase_sql; k++)
		if (!strcmp(s, phase_sql[k]))
			return (bs_move_phase_t)k;
	return BS_MOVE_COPY;
}

const char *bs_reshard_state_name(bs_reshard_state_t s)
{
	static const char *const n[] = { "idle", "running", "paused", "done", "failed", "cancelled" };
	return (unsigned)s < sizeof n / sizeof *n ? n[s] : "unknown";
}

bs_reshard_state_t bs_reshard_state(const bs_move_list_t *l)
{
	bool running = false, paused = false, failed = false, all_done = true;
	if (!l || !l->len)
		return BS_RESHARD_IDLE;
	for (int k = 0; k < l->len; k++) {
		bs_job_state_t s = l->items[k].state;
		failed |= s == BS_JOB_FAILED;
		running |= s == BS_JOB_QUEUED || s == BS_JOB_RUNNING || s == BS_JOB_THROTTLED;
		paused |= s == BS_JOB_PAUSED;
		all_done &= s == BS_JOB_DONE;
	}
	return failed     ? BS_RESHARD_FAILED
	       : running  ? BS_RESHARD_RUNNING
	       : paused   ? BS_RESHARD_PAUSED
	       : all_done ? BS_RESHARD_DONE
	                  : BS_RESHARD_CANCELLED;
}

/* ------------------------------------------------------------ bucket ranges */

void bs__buckets_format(bs_buf_t *b, const int *buckets, int n)
{
	for (int k = 0; k < n;) {
		int j = k;
		while (j + 1 < n && buckets[j + 1] == buckets[j] + 1)
			j++;
		bs__buf_printf(b, k ? ",%d" : "%d", buckets[k]);
		if (j > k)
			bs__buf_printf(b, "-%d", buckets[j]);
		k = j + 1;
	}
}

int bs__buckets_parse(int **out, int *n, const char *text, int max)
{
	size_t cap = 64, len = 0;
	int *v = malloc(cap * sizeof *v);
	const char *p = text ? text : "";
	*out = NULL;
	*n = 0;
	BS_ERR_ALLOC(v);
	while (*p) {
		char *end;
		long a = strtol(p, &end, 10), z = a;
		if (end == p)
			goto bad;
		p = end;
		if (*p == '-') {
			z = strtol(p + 1, &end, 10);
			if (end == p + 1)
				goto bad;
			p = end;
		}
		if (a < 0 || z < a || z >= max)
			goto bad;
		for (long x = a; x <= z; x++) {
			int rc = BS_ARRAY_GROW(v, len, cap, 64);
			if (rc) {
				free(v);
				return rc;
			}
			v[len++] = (int)x;
		}
		if (*p == ',')
			p++;
		else if (*p)
			goto bad;
	}
	*out = v;
	*n = (int)len;
	return 0;
bad:
	free(v);
	return bs_error(BS_ECORRUPT, "a move's bucket list does not parse: %.80s", text ? text : "");
}

/* ------------------------------------------------------------ rows */

#define MOVE_COLS \
	"move_id, plan_id, map_version, source, target, buckets, nbuckets, state, phase, started_copy, reason," \
	" cursor_id, max_id, index_name, index_cursor, rows_total, rows_scanned, rows_copied, index_total," \
	" index_rows, log_rows, rate, fence_ms, fence_tries, flip_us, src_watermark_us, worker_host, worker_pid," \
	" UNIX_TIMESTAMP(heartbeat), UNIX_TIMESTAMP(created), UNIX_TIMESTAMP(started), UNIX_TIMESTAMP(finished)"

void bs__move_free(bs__move_t *m)
{
	if (!m)
		return;
	free(m->buckets);
	free(m->in);
	m->buckets = NULL;
	m->in = NULL;
}

static int64_t ll(const char *s)
{
	return s ? strtoll(s, NULL, 10) : 0;
}

/* Progress of the current phase and the move's ETA, from its counters. */
static void move_progress(bs_move_t *p)
{
	int64_t left = 0;
	p->progress = 0;
	switch (p->phase) {
	case BS_MOVE_COPY:
		p->progress = p->rows_total ? (double)p->rows_scanned / (double)p->rows_total : 0;
		left = (p->rows_total > p->rows_scanned ? p->rows_total - p->rows_scanned : 0) + p->index_total +
		       p->rows_total;
		break;
	case BS_MOVE_INDEX:
		p->progress = p->index_total ? (double)p->index_rows / (double)p->index_total : 0;
		left = (p->index_total > p->index_rows ? p->index_total - p->index_rows : 0) + p->rows_total;
		break;
	case BS_MOVE_CLEANUP:
		p->progress = p->rows_total ? (double)p->rows_scanned / (double)p->rows_total : 0;
		left = p->rows_total > p->rows_scanned ? p->rows_total - p->rows_scanned : 0;
		break;
	case BS_MOVE_DONE: p->progress = 1; break;
	default: break;
	}
	if (p->progress > 1)
		p->progress = 1;
	p->eta_s = p->phase == BS_MOVE_DONE ? 0 : p->rate > 0 && left ? (double)left / p->rate : -1;
}

static int move_from_row(bs__move_t *m, MYSQL_ROW row, const unsigned long *lens, const bs_store_t *st, int shard)
{
	bs_move_t *p = &m->pub;
	int rc;
	memset(m, 0, sizeof *m);
	m->shard = shard;
	p->id = ll(row[0]);
	p->plan_id = ll(row[1]);
	p->map_version = ll(row[2]);
	snprintf(p->source, sizeof p->source, "%s", row[3] ? row[3] : "");
	snprintf(p->target, sizeof p->target, "%s", row[4] ? row[4] : "");
	p->source_shard = bs__shard_by_name(st, p->source);
	p->target_shard = bs__shard_by_name(st, p->target);
	if ((rc = bs__buckets_parse(&m->buckets, &m->nb, row[5], 65536)))
		return rc;
	snprintf(p->buckets, sizeof p->buckets, "%s", row[5] ? row[5] : "");
	if (row[5] && strlen(row[5]) >= sizeof p->buckets)
		memcpy(p->buckets + sizeof p->buckets - 4, "...", 4);
	p->nbuckets = (int)ll(row[6]);
	if (bs__job_state_parse(&p->state, row[7]))
		p->state = BS_JOB_FAILED;
	p->phase = phase_parse(row[8]);
	m->started_copy = row[9] && atoi(row[9]);
	snprintf(p->reason, sizeof p->reason, "%s", row[10] ? row[10] : "");
	m->cursor = ll(row[11]);
	m->max_id = row[12] ? ll(row[12]) : -1;
	snprintf(m->index_name, sizeof m->index_name, "%s", row[13] ? row[13] : "");
	if (row[14] && lens[14] == 16)
		memcpy(m->index_cursor, row[14], 16);
	p->rows_total = ll(row[15]);
	p->rows_scanned = ll(row[16]);
	p->rows_copied = ll(row[17]);
	p->index_total = ll(row[18]);
	p->index_rows = ll(row[19]);
	p->log_rows = ll(row[20]);
	p->rate = row[21] ? bs__strtod_c(row[21], NULL) : 0;
	p->fence_ms = row[22] ? bs__strtod_c(row[22], NULL) : 0;
	p->fence_tries = (int)ll(row[23]);
	p->flip_us = ll(row[24]);
	m->src_watermark_us = ll(row[25]);
	snprintf(p->worker_host, sizeof p->worker_host, "%s", row[26] ? row[26] : "");
	p->worker_pid = (int)ll(row[27]);
	p->heartbeat_us = bs__parse_unix_us(row[28]);
	p->created_us = bs__parse_unix_us(row[29]);
	p->started_us = bs__parse_unix_us(row[30]);
	p->finished_us = bs__parse_unix_us(row[31]);
	p->worker_beat_s = -1;
	if (p->state != BS_JOB_RUNNING && p->state != BS_JOB_THROTTLED && p->state != BS_JOB_DONE)
		p->rate = 0;
	move_progress(p);
	return 0;
}

/* A running move's ETA from its own rate over its run so far (start to
 * now, on its shard's clock: throttling and writers included), so that it
 * does not jump with the last 10 s of one phase, nor vanish while the move
 * is held: the work done and left counted as move_progress counts them. */
static void eta_own(bs_move_t *p, int64_t now_us)
{
	double done = 0, left = -1, secs = (double)(now_us - p->started_us) / 1e6;
	if ((p->state != BS_JOB_RUNNING && p->state != BS_JOB_THROTTLED) || p->started_us <= 0 || secs <= 1)
		return;
	switch (p->phase) {
	case BS_MOVE_COPY:
		done = (double)p->rows_scanned;
		left = (double)(p->rows_total - p->rows_scanned + p->index_total + p->rows_total);
		break;
	case BS_MOVE_INDEX:
		done = (double)(p->rows_total + p->index_rows);
		left = (double)(p->index_total - p->index_rows + p->rows_total);
		break;
	case BS_MOVE_CLEANUP:
		done = (double)(p->rows_total + p->index_total + p->rows_scanned);
		left = (double)(p->rows_total - p->rows_scanned);
		break;
	default: return; /* catch-up, cut-over: no count to go by */
	}
	if (done > 0 && left >= 0)
		p->eta_s = left / (done / secs);
}

/* The moves of plan on shard (plan 0: of the latest plan there). */
static int read_moves(bs__move_t **out, int *n, bs_store_t *st, int shard, int64_t plan)
{
	bs_buf_t b = { 0 };
	MYSQL_RES *res = NULL;
	char label[192];
	int rc;
	*out = NULL;
	*n = 0;
	bs__buf_puts(&b, "SELECT " MOVE_COLS ", UNIX_TIMESTAMP(NOW(6)), " BS__WORKER_BEAT_AGE_SQL(
				 "bagstore_moves") " FROM bagstore_moves WHERE plan_id=");
	if (plan)
		bs__buf_printf(&b, "%lld", (long long)plan);
	else
		bs__buf_puts(&b, "(SELECT MAX(plan_id) FROM bagstore_moves)");
	bs__buf_puts(&b, " ORDER BY move_id");
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, shard, b.ptr, b.len)))
		goto done;
	size_t rows = (size_t)mysql_num_rows(res);
	if (rows && !(*out = calloc(rows, sizeof **out))) {
		rc = bs__oom();
		goto done;
	}
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res))) {
		bs__move_t *m = &(*out)[*n];
		if ((rc = move_from_row(m, row, mysql_fetch_lengths(res), st, shard))) {
			char msg[512];
			snprintf(msg, sizeof msg, "%s", bs_last_error());
			rc = bs_error(rc, "%s: %s", bs__shard_label(label, sizeof label, &st->shards[shard]), msg);
			goto done;
		}
		(*n)++;
		int64_t now = bs__parse_unix_us(row[32]);
		bs_move_t *p = &m->pub;
		eta_own(p, now);
		p->worker_beat_s = -1;
		if ((p->state == BS_JOB_RUNNING || p->state == BS_JOB_THROTTLED) && p->heartbeat_us &&
		    now - p->heartbeat_us > BS__ROW_QUIET_US)
			bs__worker_quiet(p->reason, sizeof p->reason, &p->worker_beat_s, now - p->heartbeat_us, row[33],
			                 p->worker_host, p->worker_pid);
	}
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	if (rc) {
		for (int k = 0; k < *n; k++)
			bs__move_free(&(*out)[k]);
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

int bs__moves_on(bs__move_t **out, int *n, bs_store_t *st, int shard)
{
	return read_moves(out, n, st, shard, 0);
}

int bs__move_read(bs__move_t *out, bs_store_t *st, int shard, int64_t id)
{
	bs_buf_t b = { 0 };
	MYSQL_RES *res = NULL;
	char label[192];
	int rc;
	bs__buf_printf(&b, "SELECT " MOVE_COLS ", 0 FROM bagstore_moves WHERE move_id=%lld", (long long)id);
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, shard, b.ptr, b.len)))
		goto done;
	MYSQL_ROW row = mysql_fetch_row(res);
	if (!row)
		rc = bs_error(BS_ENOTFOUND, "%s: no move %lld",
		              bs__shard_label(label, sizeof label, &st->shards[shard]), (long long)id);
	else
		rc = move_from_row(out, row, mysql_fetch_lengths(res), st, shard);
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

void bs__move_lock_name(char buf[65], const bs_store_t *st, int shard, int64_t id)
{
	const char *db = st->shards[shard].conf->database ? st->shards[shard].conf->database : "";
	snprintf(buf, 65, "bagstore.mv.%08lx.%lld", (unsigned long)crc32(0, (const Bytef *)db, (uInt)strlen(db)),
	         (long long)id);
}

/* ------------------------------------------------------------ listing */

void bs_move_list_free(bs_move_list_t *l)
{
	if (!l)
		return;
	for (int k = 0; l->items && k < l->len; k++)
		free(l->items[k].ranges);
	free(l->items);
	l->items = NULL;
	l->len = 0;
}

/* The move's buckets (ascending) as [first, last] ranges, into p. */
static int move_ranges(bs_move_t *p, const int *b, int n)
{
	int k, r = 0;

	p->ranges = NULL;
	p->nranges = 0;
	if (!n)
		return 0;
	if (!(p->ranges = malloc((size_t)n * sizeof *p->ranges)))
		return bs_error(BS_ENOMEM, "out of memory");
	for (k = 0; k < n; k++) {
		if (r && b[k] == p->ranges[r - 1][1] + 1)
			p->ranges[r - 1][1] = b[k];
		else {
			p->ranges[r][0] = p->ranges[r][1] = b[k];
			r++;
		}
	}
	p->nranges = r;
	return 0;
}

struct list_arg {
	bs__move_t **per;
	int *n;
	int64_t *latest; /* per shard: its latest plan */
};

static int latest_plan_on(bs_store_t *st, int i, void *p)
{
	struct list_arg *a = p;
	static const char q[] = "SELECT COALESCE(MAX(plan_id),0) FROM bagstore_moves";
	MYSQL_RES *res;
	int rc = bs__shard_query(&res, st, i, q, sizeof q - 1);
	if (rc)
		return rc;
	MYSQL_ROW row = mysql_fetch_row(res);
	a->latest[i] = row ? ll(row[0]) : 0;
	mysql_free_result(res);
	return 0;
}

static int list_on(bs_store_t *st, int i, void *p)
{
	struct list_arg *a = p;
	int64_t plan = 0;
	for (int j = 0; j < st->n; j++)
		if (a->latest[j] > plan)
			plan = a->latest[j];
	return plan ? read_moves(&a->per[i], &a->n[i], st, i, plan) : 0;
}

/* Every shard's moves of the latest plan into out (by id). */
static int list_moves(bs__move_t **out, int *nout, bs_store_t *st, int *unreachable, char *first, size_t first_size)
{
	static const bs__up_msgs_t msgs = { "listing moves", "the moves", false };
	struct list_arg a = { 0 };
	int *rcs = calloc((size_t)st->n, sizeof *rcs);
	int rc = 0, total = 0;
	bs__up_t up = { 0 }, up2 = { 0 };
	bool *answered = NULL;
	a.per = calloc((size_t)st->n, sizeof *a.per);
	a.n = calloc((size_t)st->n, sizeof *a.n);
	a.latest = calloc((size_t)st->n, sizeof *a.latest);
	*out = NULL;
	*nout = 0;
	if (!rcs || !a.per || !a.n || !a.latest) {
		rc = bs__oom();
		goto done;
	}
	/* a shard that does not answer is counted (whether or not there is a
	 * plan to read), and the first one's message kept: it names the
	 * shard and carries MySQL's */
	if ((rc = bs__shard_each_up(&up, rcs, st, NULL, latest_plan_on, &a, &msgs)))
		goto done;
	if (!(answered = calloc((size_t)st->n, sizeof *answered))) {
		rc = bs__oom();
		goto done;
	}
	for (int i = 0; i < st->n; i++)
		answered[i] = rcs[i] == 0;
	if ((rc = bs__shard_each_up(&up2, rcs, st, answered, list_on, &a, &msgs)))
		goto done;
	if (!up.down) /* one gone between the two reads */
		snprintf(up.down_first, sizeof up.down_first, "%s", up2.down_first);
	up.down += up2.down;
	for (int i = 0; i < st->n; i++)
		total += a.n[i];
	bs_error_clear();
	if (total && !(*out = calloc((size_t)total, sizeof **out))) {
		rc = bs__oom();
		goto done;
	}
	for (int i = 0; i < st->n; i++)
		for (int k = 0; k < a.n[i]; k++) {
			(*out)[(*nout)++] = a.per[i][k];
			memset(&a.per[i][k], 0, sizeof a.per[i][k]);
		}
	for (int x = 1; x < *nout; x++) { /* by id */
		bs__move_t t = (*out)[x];
		int y = x - 1;
		while (y >= 0 && (*out)[y].pub.id > t.pub.id) {
			(*out)[y + 1] = (*out)[y];
			y--;
		}
		(*out)[y + 1] = t;
	}
	if (unreachable)
		*unreachable = up.down;
	if (first && first_size)
		snprintf(first, first_size, "%s", up.down_first);
done:
	for (int i = 0; a.per && i < st->n; i++) {
		for (int k = 0; k < a.n[i]; k++)
			bs__move_free(&a.per[i][k]);
		free(a.per[i]);
	}
	free(a.per);
	free(a.n);
	free(a.latest);
	free(answered);
	free(rcs);
	return rc;
}

int bs_move_list(bs_move_list_t *out, bs_store_t *st, int *unreachable)
{
	bs__move_t *mv = NULL;
	int n = 0, rc;
	out->items = NULL;
	out->len = 0;
	out->unreachable_first[0] = '\0';
	if ((rc = list_moves(&mv, &n, st, unreachable, out->unreachable_first, sizeof out->unreachable_first)))
		return rc;
	if (n && !(out->items = calloc((size_t)n, sizeof *out->items)))
		rc = bs__oom();
	for (int k = 0; k < n; k++) {
		if (!rc) {
			out->items[out->len] = mv[k].pub;
			rc = move_ranges(&out->items[out->len++], mv[k].buckets, mv[k].nb);
		}
		bs__move_free(&mv[k]);
	}
	free(mv);
	return rc;
}

/* What to say of a move cancelled and not undone yet (id, source, target):
 * neither start nor cancel applies to it, the undo is a mover's. */
#define UNDO_WAITS \
	"move %lld (%s to %s) is cancelled and not undone yet: `bagstore cleaner --reshard` (or a " \
	"running daemon) undoes it"

/* A move is unfinished until done, or cancelled and undone. */
static bool unfinished(const bs__move_t *m)
{
	return m->pub.state != BS_JOB_DONE && (m->pub.state != BS_JOB_CANCELLED || m->started_copy);
}

int bs__moves_in_flight(bool *busy, char *why, size_t size, bs_store_t *st)
{
	bs__move_t *mv = NULL;
	int n = 0, rc;
	*busy = false;
	if (why && size)
		why[0] = '\0';
	if ((rc = list_moves(&mv, &n, st, NULL, NULL, 0)))
		return rc;
	for (int k = 0; k < n; k++) {
		if (!*busy && mv[k].started_copy && mv[k].pub.phase != BS_MOVE_DONE) {
			*busy = true;
			if (why)
				snprintf(why, size, "move %lld (%s to %s) is in flight", (long long)mv[k].pub.id,
				         mv[k].pub.source, mv[k].pub.target);
		}
		bs__move_free(&mv[k]);
	}
	free(mv);
	return 0;
}

/* ------------------------------------------------------------ sizes */

struct size_arg {
	int64_t *entities, *bytes, *index_rows;
	bool *up;
};

static int size_on(bs_store_t *st, int i, void *p)
{
	struct size_arg *a = p;
	static const char q[] =
		"SELECT (SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA=DATABASE()"
		"  AND TABLE_NAME='entities'),"
		" (SELECT SUM(DATA_LENGTH+INDEX_LENGTH) FROM information_schema.TABLES WHERE TABLE_SCHEMA=DATABASE()),"
		" (SELECT SUM(t.TABLE_ROWS) FROM information_schema.TABLES t JOIN bagstore_indexes x"
		"  ON x.name=t.TABLE_NAME WHERE t.TABLE_SCHEMA=DATABASE() AND x.state<>'disabled')";
	MYSQL_RES *res;
	int rc = bs__shard_query(&res, st, i, q, sizeof q - 1);
	if (rc) {
		a->entities[i] = a->bytes[i] = a->index_rows[i] = -1;
		bs_error_clear();
		return 0; /* reported as unknown */
	}
	MYSQL_ROW row = mysql_fetch_row(res);
	a->entities[i] = row && row[0] ? ll(row[0]) : -1;
	a->bytes[i] = row && row[1] ? ll(row[1]) : 0;
	a->index_rows[i] = row && row[2] ? ll(row[2]) : 0;
	a->up[i] = true;
	mysql_free_result(res);
	return 0;
}

static int sizes(struct size_arg *a, bs_store_t *st)
{
	a->entities = calloc((size_t)st->n, sizeof *a->entities);
	a->bytes = calloc((size_t)st->n, sizeof *a->bytes);
	a->index_rows = calloc((size_t)st->n, sizeof *a->index_rows);
	a->up = calloc((size_t)st->n, sizeof *a->up);
	if (!a->entities || !a->bytes || !a->index_rows || !a->up)
		return bs__oom();
	return bs__shard_each(st, NULL, size_on, a, NULL);
}

static void sizes_free(struct size_arg *a)
{
	free(a->entities);
	free(a->bytes);
	free(a->index_rows);
	free(a->up);
}

/* ------------------------------------------------------------ the plan */

static int owned_by(const bs_store_t *st, int shard)
{
	int n = 0;
	for (int b = 0; b < st->map.buckets; b++)
		n += st->map.owner[b] == shard;
	return n;
}

/* Each configured shard's share after the plan: B over the shards not
 * draining, the first ones in configured order one more when it does not
 * divide. */
static int shares(int *share, const bs_store_t *st)
{
	int targets = 0;
	for (int i = 0; i < st->n; i++)
		targets += !st->cfg->shards[i].drain;
	if (!targets)
		return bs_error(BS_ECONFIG, "every shard of the configuration is marked drain: true: the buckets have "
		                            "nowhere to go");
	int base = st->map.buckets / targets, extra = st->map.buckets % targets;
	for (int i = 0; i < st->n; i++) {
		share[i] = st->cfg->shards[i].drain ? 0 : base + (extra > 0);
		if (!st->cfg->shards[i].drain && extra > 0)
			extra--;
	}
	return 0;
}

static bs_plan_move_t *plan_move(bs_reshard_plan_t *p, const bs_store_t *st, int s, int t)
{
	for (int k = 0; k < p->len; k++)
		if (p->moves[k].source_shard == s && p->moves[k].target_shard == t)
			return &p->moves[k];
	bs_plan_move_t *m = realloc(p->moves, (size_t)(p->len + 1) * sizeof *m);
	if (!m)
		return NULL;
	p->moves = m;
	m = &p->moves[p->len++];
	memset(m, 0, sizeof *m);
	m->source_shard = s;
	m->target_shard = t;
	snprintf(m->source, sizeof m->source, "%s", st->shards[s].conf->name);
	snprintf(m->target, sizeof m->target, "%s", st->shards[t].conf->name);
	if (!(m->buckets = calloc((size_t)st->map.buckets, sizeof *m->buckets)))
		return NULL;
	return m;
}

/* Over-share shards give their highest buckets to under-share ones, both
 * in configured order. */
static int plan_moves(bs_reshard_plan_t *p, const bs_store_t *st, const int *share)
{
	int *have = calloc((size_t)st->n, sizeof *have), t = 0;
	BS_ERR_ALLOC(have);
	for (int i = 0; i < st->n; i++)
		have[i] = owned_by(st, i);
	for (int s = 0; s < st->n; s++) {
		int surplus = have[s] - share[s];
		for (int b = st->map.buckets - 1; b >= 0 && surplus > 0; b--) {
			if (st->map.owner[b] != s)
				continue;
			while (t < st->n && have[t] >= share[t])
				t++;
			if (t == st->n)
				break;
			bs_plan_move_t *m = plan_move(p, st, s, t);
			if (!m) {
				free(have);
				return bs__oom();
			}
			m->buckets[m->nbuckets++] = b;
			have[s]--;
			have[t]++;
			surplus--;
		}
	}
	free(have);
	for (int k = 0; k < p->len; k++) { /* ascending */
		bs_plan_move_t *m = &p->moves[k];
		for (int x = 0, y = m->nbuckets - 1; x < y; x++, y--) {
			int tmp = m->buckets[x];
			m->buckets[x] = m->buckets[y];
			m->buckets[y] = tmp;
		}
	}
	return 0;
}

/* What the last plan's finished moves measured, per source shard and over
 * all of them: rows read and written (as plan_estimates counts them) over
 * the time from each move's start to its end, throttling and writers'
 * load included. A move's source runs its moves one after the other, so a
 * move's own rate is what its source's next one will go at. */
typedef struct {
	double *rows, *secs; /* per configured shard, as the source */
	double all_rows, all_secs;
	int moves;
} measured_t;

static void measured(measured_t *m, bs_store_t *st)
{
	bs__move_t *mv = NULL;
	int n = 0;
	if (list_moves(&mv, &n, st, NULL, NULL, 0)) {
		bs_error_clear();
		return;
	}
	for (int k = 0; k < n; k++) {
		const bs_move_t *p = &mv[k].pub;
		double secs = (double)(p->finished_us - p->started_us) / 1e6;
		double rows = (double)(p->rows_total + p->index_rows + p->rows_copied);
		if (p->state == BS_JOB_DONE && secs > 0 && rows > 0) {
			if (m->rows && p->source_shard >= 0 && p->source_shard < st->n) {
				m->rows[p->source_shard] += rows;
				m->secs[p->source_shard] += secs;
			}
			m->all_rows += rows;
			m->all_secs += secs;
			m->moves++;
		}
		bs__move_free(&mv[k]);
	}
	free(mv);
}

static void plan_estimates(bs_reshard_plan_t *p, bs_store_t *st, const struct size_arg *sz)
{
	double *per_source = calloc((size_t)st->n, sizeof *per_source);
	measured_t ms = { calloc((size_t)st->n, sizeof(double)), calloc((size_t)st->n, sizeof(double)), 0, 0, 0 };
	int own = 0, other = 0; /* moves whose source measured itself; that did not */
	char r[48];
	if (!ms.rows || !ms.secs) {
		free(ms.rows);
		free(ms.secs);
		ms.rows = ms.secs = NULL;
	}
	measured(&ms, st);
	p->rate_measured = ms.all_secs > 0;
	p->rate = p->rate_measured ? ms.all_rows / ms.all_secs : DEFAULT_RATE;
	for (int k = 0; k < p->len; k++) {
		bs_plan_move_t *m = &p->moves[k];
		int owned = owned_by(st, m->source_shard);
		double share = owned ? (double)m->nbuckets / owned : 0, rate = p->rate;
		if (ms.secs && ms.secs[m->source_shard] > 0) { /* its source's own rate */
			rate = ms.rows[m->source_shard] / ms.secs[m->source_shard];
			own++;
		} else {
			other++;
		}
		m->entities_est = sz->entities[m->source_shard] < 0
		                          ? -1
		                          : (int64_t)((double)sz->entities[m->source_shard] * share + 0.5);
		m->index_rows_est = (int64_t)((double)sz->index_rows[m->source_shard] * share + 0.5);
		/* a copy reads every row of the source, writes the moving ones,
		 * then the cleanup deletes them */
		double rows = (double)(sz->entities[m->source_shard] > 0 ? sz->entities[m->source_shard] : 0) +
		              (double)m->index_rows_est + (double)(m->entities_est > 0 ? m->entities_est : 0);
		m->seconds_est = rows / rate;
		if (per_source)
			per_source[m->source_shard] += m->seconds_est;
	}
	for (int i = 0; per_source && i < st->n; i++)
		if (per_source[i] > p->seconds_est)
			p->seconds_est = per_source[i];
	snprintf(r, sizeof r, "%.0f", p->rate);
	if (!p->rate_measured)
		snprintf(p->basis, sizeof p->basis,
		         "no basis: no move has run on this store since its last plan; "
		         "%s rows/s assumed",
		         r);
	else if (!other)
		snprintf(p->basis, sizeof p->basis,
		         "from the last reshard's moves off these sources (%d move%s, "
		         "%s rows/s in all)",
		         ms.moves, ms.moves == 1 ? "" : "s", r);
	else
		snprintf(p->basis, sizeof p->basis, "from the last reshard's %s rows/s (%d move%s%s)", r, ms.moves,
		         ms.moves == 1 ? "" : "s", own ? "; sources it measured at their own rate" : "");
	free(per_source);
	free(ms.rows);
	free(ms.secs);
}

void bs_reshard_plan_free(bs_reshard_plan_t *p)
{
	if (!p)
		return;
	for (int k = 0; k < p->len; k++)
		free(p->moves[k].buckets);
	free(p->moves);
	memset(p, 0, sizeof *p);
}

int bs_reshard_plan(bs_reshard_plan_t *out, bs_store_t *st)
{
	struct size_arg sz = { 0 };
	int *share = calloc((size_t)st->n, sizeof *share);
	int rc;
	memset(out, 0, sizeof *out);
	BS_ERR_ALLOC(share);
	if ((rc = bs__map_reload(st)) || (rc = shares(share, st)) || (rc = plan_moves(out, st, share)) ||
	    (rc = sizes(&sz, st)))
		goto done;
	out->map_version = st->map.version;
	out->buckets = st->map.buckets;
	plan_estimates(out, st, &sz);
done:
	sizes_free(&sz);
	free(share);
	if (rc)
		bs_reshard_plan_free(out);
	return rc;
}

/* ------------------------------------------------------------ the map, per shard */

/* What the topology screen draws of the map itself: each bucket's owner,
 * and the members the configuration does not list. */
static int map_drawing(bs_buckets_t *out, const bs_store_t *st)
{
	size_t o = 0;
	if (st->map.buckets > 0 && !(out->owner = malloc((size_t)st->map.buckets * sizeof *out->owner)))
		return bs_error(BS_ENOMEM, "out of memory");
	for (int b = 0; b < st->map.buckets; b++) {
		out->owner[b] = st->map.owner[b];
		out->unlisted_buckets += st->map.owner[b] < 0;
	}
	for (int k = 0; k < st->map.nnames; k++)
		if (st->map.name_shard[k] < 0 && o < sizeof out->unlisted)
			o += (size_t)snprintf(out->unlisted + o, sizeof out->unlisted - o, "%s%s", o ? "," : "",
			                      st->map.names[k]);
	return 0;
}

void bs_buckets_free(bs_buckets_t *b)
{
	if (!b)
		return;
	free(b->shards);
	free(b->owner);
	memset(b, 0, sizeof *b);
}

int bs_buckets(bs_buckets_t *out, bs_store_t *st)
{
	struct size_arg sz = { 0 };
	bs__move_t *mv = NULL;
	int *share = calloc((size_t)st->n, sizeof *share), nmv = 0, rc;
	memset(out, 0, sizeof *out);
	BS_ERR_ALLOC(share);
	if ((rc = bs__map_reload(st)) || (rc = sizes(&sz, st)))
		goto done;
	if (shares(share, st))
		bs_error_clear(); /* every shard draining: no share to show */
	if (list_moves(&mv, &nmv, st, NULL, NULL, 0))
		bs_error_clear(); /* moves unknown: none counted */
	if (!(out->shards = calloc((size_t)st->n, sizeof *out->shards))) {
		rc = bs__oom();
		goto done;
	}
	out->version = st->map.version;
	out->buckets = st->map.buckets;
	memcpy(out->store_id, st->map.store_id, sizeof out->store_id);
	if ((rc = map_drawing(out, st)))
		goto done;
	for (int i = 0; i < st->n; i++) {
		bs_bucket_shard_t *s = &out->shards[out->nshards++];
		snprintf(s->name, sizeof s->name, "%s", st->shards[i].conf->name);
		s->shard = i;
		s->buckets = owned_by(st, i);
		s->share = share[i];
		s->draining = st->cfg->shards[i].drain;
		for (int k = 0; k < st->map.nnames && !s->in_map; k++)
			s->in_map = st->map.name_shard[k] == i;
		s->reachable = sz.up[i];
		s->entities_est = sz.entities[i];
		s->data_bytes = sz.bytes[i];
		for (int k = 0; k < nmv; k++) {
			if (!unfinished(&mv[k]) || mv[k].pub.state == BS_JOB_CANCELLED)
				continue;
			s->moves_out += mv[k].pub.source_shard == i;
			s->moves_in += mv[k].pub.target_shard == i;
		}
	}
done:
	for (int k = 0; k < nmv; k++)
		bs__move_free(&mv[k]);
	free(mv);
	sizes_free(&sz);
	free(share);
	if (rc)
		bs_buckets_free(out);
	return rc;
}

/* ------------------------------------------------------------ start */

struct start_arg {
	const bs_reshard_plan_t *plan;
	int64_t plan_id;
};

/* On shard i: earlier plans' rows go; this plan's moves from i are written. */
static int start_on(bs_store_t *st, int i, void *p)
{
	struct start_arg *a = p;
	bs_buf_t b = { 0 };
	int rc;
	if ((rc = bs__shard_check(st, i)))
		return rc;
	/* an unfinished move of an earlier plan is never deleted: it is the
	 * only record of buckets that may be leaving (bs_reshard_start looked
	 * on every shard, which all answered; this holds for a shard that
	 * went away and came back between) */
	bs__buf_printf(&b,
	               "BEGIN NOT ATOMIC IF EXISTS (SELECT 1 FROM bagstore_moves WHERE plan_id<>%lld AND state<>'done'"
	               " AND NOT (state='cancelled' AND started_copy=0)) THEN SIGNAL SQLSTATE '45000' SET"
	               " MESSAGE_TEXT='a move of an earlier reshard is unfinished here: let it finish or cancel"
	               " it (bagstore reshard status)'; END IF; END;"
	               "DELETE FROM bagstore_moves WHERE plan_id<>%lld",
	               (long long)a->plan_id, (long long)a->plan_id);
	for (int k = 0; k < a->plan->len; k++) {
		const bs_plan_move_t *m = &a->plan->moves[k];
		if (m->source_shard != i)
			continue;
		bs_buf_t ranges = { 0 };
		bs__buckets_format(&ranges, m->buckets, m->nbuckets);
		bs__buf_printf(&b,
		               ";INSERT IGNORE INTO bagstore_moves (move_id, plan_id, map_version, source, target,"
		               " buckets, nbuckets, state) VALUES (%lld,%lld,%lld,",
		               (long long)(a->plan_id * 1000 + k), (long long)a->plan_id,
		               (long long)a->plan->map_version);
		bs__buf_hex(&b, m->source, strlen(m->source));
		bs__buf_puts(&b, ",");
		bs__buf_hex(&b, m->target, strlen(m->target));
		bs__buf_puts(&b, ",");
		bs__buf_hex(&b, ranges.ptr ? ranges.ptr : "", ranges.len);
		bs__buf_printf(&b, ",%d,'queued')", m->nbuckets);
		if (ranges.oom)
			b.oom = true;
		bs__buf_free(&ranges);
	}
	if (!(rc = bs__buf_ok(&b)))
		rc = bs__shard_exec(st, i, b.ptr, b.len);
	bs__buf_free(&b);
	return rc;
}

/* A move of any plan not ended on shard i (done, or cancelled before it
 * marked anything) is an error naming it: a shard's older plan would be
 * deleted by start_on. A shard that does not answer is one too: a move
 * there would go unseen, and its buckets stay leaving for good. */
static int none_unfinished_on(bs_store_t *st, int i, void *p)
{
	static const char q[] = "SELECT move_id, source, target, state FROM bagstore_moves WHERE state<>'done' AND"
				" NOT (state='cancelled' AND started_copy=0) ORDER BY move_id LIMIT 1";
	MYSQL_RES *res = NULL;
	char label[192];
	int rc;
	(void)p;
	if ((rc = bs__shard_query(&res, st, i, q, sizeof q - 1)))
		return rc == BS_EUNREACHABLE
		               ? bs_error(rc, "a reshard starts only when every shard answers: %s", bs_last_error())
		               : rc;
	MYSQL_ROW row = mysql_fetch_row(res);
	bs__shard_label(label, sizeof label, &st->shards[i]);
	if (row && row[3] && !strcmp(row[3], "cancelled"))
		rc = bs_error(BS_ECONFLICT, "%s: " UNDO_WAITS "; then start again", label,
		              (long long)(row[0] ? atoll(row[0]) : 0), row[1] ? row[1] : "?", row[2] ? row[2] : "?");
	else if (row)
		rc = bs_error(BS_ECONFLICT,
		              "%s: move %s (%s to %s) of an earlier reshard is %s: let it finish, or cancel it "
		              "(`bagstore reshard cancel`) before starting another",
		              label, row[0] ? row[0] : "?", row[1] ? row[1] : "?", row[2] ? row[2] : "?",
		              row[3] ? row[3] : "?");
	mysql_free_result(res);
	return rc;
}

int bs_reshard_start(bs_store_t *st, const bs_reshard_plan_t *plan)
{
	int rc;
	int64_t now = 0;
	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing to start a reshard");
	if (!plan->len)
		return bs_error(BS_ECONFLICT, "nothing to move: the buckets are spread as the configuration asks");
	/* one pass over every shard, all answering, before any shard changes */
	if ((rc = bs__shard_each(st, NULL, none_unfinished_on, NULL, NULL)) || (rc = bs__map_reload(st)))
		return rc;
	if (st->map.version != plan->map_version)
		return bs_error(BS_ECONFLICT,
		                "the bucket map moved (version %lld, the plan was made from %lld): plan again",
		                (long long)st->map.version, (long long)plan->map_version);
	if ((rc = bs__shard_now_us(&now, st, 0)))
		return rc;
	struct start_arg a = { plan, now };
	if ((rc = bs__shard_each(st, NULL, start_on, &a, NULL)))
		return rc;
	char detail[128];
	snprintf(detail, sizeof detail, "%d moves, plan %lld, map version %lld", plan->len, (long long)now,
	         (long long)plan->map_version);
	bs_audit(st, "reshard.start", "buckets", detail); /* best effort */
	bs_error_clear();
	return 0;
}

/* ------------------------------------------------------------ control */

int bs_reshard_control(bs_store_t *st, const char *action)
{
	bs__move_t *mv = NULL;
	int n = 0, rc;
	int64_t m = 0, total = 0, plan = 0;
	if (!bs__control_action(action))
		return bs_error(BS_EINVAL, "unknown reshard action '%s' (pause, resume or cancel)", action);
	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing to %s the reshard", action);
	if ((rc = list_moves(&mv, &n, st, NULL, NULL, 0)))
		return rc;
	for (int k = 0; k < n; k++)
		if (mv[k].pub.plan_id > plan)
			plan = mv[k].pub.plan_id;
	char rows[48];
	snprintf(rows, sizeof rows, "plan_id=%lld", (long long)plan);
	/* a cancel before the cut-over only: a move past it finishes */
	bs__control_t c = { "bagstore_moves", rows, "phase IN ('copy','index','catchup','undo')", action };
	if (!plan)
		rc = bs_error(BS_ENOTFOUND, "no reshard recorded (`bagstore reshard start` records one)");
	else if (!(rc = bs__control_rows(&m, &total, st, &c)) && !m) {
		/* nothing to act on: a move waiting for its undo says what will */
		for (int k = 0; k < n && !rc; k++)
			if (mv[k].pub.plan_id == plan && mv[k].pub.state == BS_JOB_CANCELLED && unfinished(&mv[k]))
				rc = bs_error(BS_ECONFLICT, UNDO_WAITS, (long long)mv[k].pub.id, mv[k].pub.source,
				              mv[k].pub.target);
		if (!rc)
			rc = bs_error(BS_ECONFLICT, "no move of the reshard is in a state to %s%s", action,
			              !strcmp(action, "cancel") ? " (a move past its cut-over finishes)" : "");
	}
	for (int k = 0; k < n; k++)
		bs__move_free(&mv[k]);
	free(mv);
	if (rc)
		return rc;
	char detail[64], what[32];
	snprintf(detail, sizeof detail, "%lld moves of plan %lld", (long long)m, (long long)plan);
	snprintf(what, sizeof what, "reshard.%s", action);
	bs_audit(st, what, "buckets", detail); /* best effort */
	bs_error_clear();
	return 0;
}

/* ------------------------------------------------------------ backlog */

int bs_move_backlog(int64_t *out, bs_store_t *st, const bs_move_t *m)
{
	bs_buf_t b = { 0 };
	MYSQL_RES *res = NULL;
	MYSQL_ROW row;
	int rc;

	*out = -1;
	if (m->source_shard < 0 || m->source_shard >= st->n)
		return bs_error(BS_ENOTFOUND, "move %lld: its source %s is not a configured shard", (long long)m->id,
		                m->source);
	bs__buf_printf(&b, "SELECT COUNT(*) FROM bagstore_move_log WHERE move_id=%lld", (long long)m->id);
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, m->source_shard, b.ptr, b.len)))
		goto done;
	if ((row = mysql_fetch_row(res)) && row[0])
		*out = strtoll(row[0], NULL, 10);
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

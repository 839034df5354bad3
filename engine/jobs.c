/*
 * jobs.c - the backfill jobs table (bagstore_jobs, on each source shard):
 * queueing, listing, pause/resume/cancel, job lock names, and the small
 * helpers every cleaner file uses (sleeping, worker identity).
 *
 * A job row is the only shared state of a backfill: whichever worker holds
 * the job's GET_LOCK on its source shard runs it, and checkpoints into the
 * row after every chunk. Control actions are state changes on the row,
 * which the worker's checkpoint notices.
 */
#include "cleaner.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static const char *const state_names[] = { "queued", "running", "throttled", "paused", "done", "failed", "cancelled" };

const char *bs_job_state_name(bs_job_state_t s)
{
	if ((unsigned)s < sizeof state_names / sizeof *state_names)
		return state_names[s];
	return "unknown";
}

int bs__job_state_parse(bs_job_state_t *out, const char *s)
{
	for (size_t i = 0; s && i < sizeof state_names / sizeof *state_names; i++)
		if (!strcmp(s, state_names[i])) {
			*out = (bs_job_state_t)i;
			return 0;
		}
	return -1;
}

void bs__cleaner_sleep(double s, atomic_int *stop)
{
	double end = bs_now_mono() + s;
	for (;;) {
		if (stop && atomic_load_explicit(stop, memory_order_relaxed))
			return;
		double left = end - bs_now_mono();
		if (left <= 0)
			return;
		if (left > 0.05)
			left = 0.05;
		struct timespec ts = { 0, (long)(left * 1e9) };
		nanosleep(&ts, NULL);
	}
}

bool bs__cleaner_transient(int rc)
{
	return rc == BS_EUNREACHABLE || rc == BS_ECONFLICT;
}

void bs__cleaner_worker_id(char host[64], int *pid)
{
	if (gethostname(host, 64) != 0)
		snprintf(host, 64, "unknown");
	host[63] = '\0';
	*pid = (int)getpid();
}

int bs__exec_count(int64_t *matched, bs_store_t *st, int shard, bs_buf_t *sql)
{
	MYSQL_RES *res = NULL;
	int rc;
	*matched = 0;
	bs__buf_puts(sql, ";SELECT ROW_COUNT()");
	if ((rc = bs__buf_ok(sql)) || (rc = bs__shard_query(&res, st, shard, sql->ptr, sql->len)))
		return rc;
	MYSQL_ROW row = mysql_fetch_row(res);
	*matched = row && row[0] ? strtoll(row[0], NULL, 10) : 0;
	mysql_free_result(res);
	return 0;
}

void bs__job_lock_name(char buf[65], const bs_store_t *st, int shard, const char *index)
{
	/* locks are per server: the database and index make it unique */
	const char *db = st->shards[shard].conf->database ? st->shards[shard].conf->database : "";
	uLong crc = crc32(0, (const Bytef *)db, (uInt)strlen(db));
	crc = crc32(crc, (const Bytef *)"/", 1);
	crc = crc32(crc, (const Bytef *)index, (uInt)strlen(index));
	snprintf(buf, 65, "bagstore.bf.%08lx.%.43s", (unsigned long)crc, index);
}

#define JOB_COLS \
	"index_name, state, reason, cursor_id, max_id, rows_scanned, rows_total, rows_written," \
	" rate, chunk, worker_host, worker_pid, UNIX_TIMESTAMP(heartbeat), UNIX_TIMESTAMP(created)," \
	" UNIX_TIMESTAMP(started), UNIX_TIMESTAMP(finished), index_created_us"

static void job_from_row(bs_job_t *j, int64_t *created_us, MYSQL_ROW row, int shard)
{
	memset(j, 0, sizeof *j);
	snprintf(j->index, sizeof j->index, "%s", row[0] ? row[0] : "");
	j->shard = shard;
	if (bs__job_state_parse(&j->state, row[1]))
		j->state = BS_JOB_FAILED;
	snprintf(j->reason, sizeof j->reason, "%s", row[2] ? row[2] : "");
	j->cursor = row[3] ? strtoll(row[3], NULL, 10) : 0;
	j->max_id = row[4] ? strtoll(row[4], NULL, 10) : -1;
	j->rows_scanned = row[5] ? strtoll(row[5], NULL, 10) : 0;
	j->rows_total = row[6] ? strtoll(row[6], NULL, 10) : 0;
	j->rows_written = row[7] ? strtoll(row[7], NULL, 10) : 0;
	j->rate = row[8] ? bs__strtod_c(row[8], NULL) : 0;
	j->chunk = row[9] ? strtoll(row[9], NULL, 10) : 0;
	snprintf(j->worker_host, sizeof j->worker_host, "%s", row[10] ? row[10] : "");
	j->worker_pid = row[11] ? atoi(row[11]) : 0;
	j->heartbeat_us = bs__parse_unix_us(row[12]);
	j->created_us = bs__parse_unix_us(row[13]);
	j->started_us = bs__parse_unix_us(row[14]);
	j->finished_us = bs__parse_unix_us(row[15]);
	if (created_us)
		*created_us = row[16] ? strtoll(row[16], NULL, 10) : 0;
	/* a rate is only current while a worker runs the job (done keeps its last) */
	if (j->state != BS_JOB_RUNNING && j->state != BS_JOB_THROTTLED && j->state != BS_JOB_DONE)
		j->rate = 0;
	j->eta_s = -1;
	if (j->state == BS_JOB_DONE)
		j->eta_s = 0;
	else if (j->state == BS_JOB_RUNNING && j->rate > 0 && j->rows_total > 0) /* held: no end in sight */
		j->eta_s = (double)(j->rows_total > j->rows_scanned ? j->rows_total - j->rows_scanned : 0) / j->rate;
}

int bs__job_read(bs_job_t *out, int64_t *index_created_us, bs_store_t *st, int shard, const char *index)
{
	bs_buf_t b = { 0 };
	MYSQL_RES *res = NULL;
	char label[192];
	int rc;
	bs__buf_puts(&b, "SELECT " JOB_COLS " FROM bagstore_jobs WHERE index_name=");
	bs__buf_hex(&b, index, strlen(index));
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, shard, b.ptr, b.len)))
		goto done;
	MYSQL_ROW row = mysql_fetch_row(res);
	if (!row) {
		rc = bs_error(BS_ENOTFOUND, "%s: no backfill job for index %s",
		              bs__shard_label(label, sizeof label, &st->shards[shard]), index);
		goto done;
	}
	job_from_row(out, index_created_us, row, shard);
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

void bs_job_list_free(bs_job_list_t *l)
{
	if (!l)
		return;
	free(l->items);
	l->items = NULL;
	l->len = 0;
}

/* A shard's jobs into its part of the list (bs__collect). */
static int list_rows(bs__part_t *part, bs_store_t *st, int i, void *arg)
{
	static const char q[] = "SELECT " JOB_COLS ", UNIX_TIMESTAMP(NOW(6)), " BS__WORKER_BEAT_AGE_SQL(
		"bagstore_jobs") " FROM bagstore_jobs ORDER BY index_name";
	MYSQL_RES *res = NULL;
	bs_job_t *items;
	int rc;
	(void)arg;
	if ((rc = bs__shard_check(st, i)) || (rc = bs__shard_query(&res, st, i, q, sizeof q - 1)))
		return rc;
	size_t n = (size_t)mysql_num_rows(res);
	if (n && !(part->items = calloc(n, sizeof *items))) {
		rc = bs_error(BS_ENOMEM, "out of memory listing jobs");
		goto done;
	}
	items = part->items;
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res))) {
		bs_job_t *j = &items[part->len++];
		job_from_row(j, NULL, row, i);
		int64_t now = bs__parse_unix_us(row[17]);
		if ((j->state == BS_JOB_RUNNING || j->state == BS_JOB_THROTTLED) && j->heartbeat_us &&
		    now - j->heartbeat_us > BS__ROW_QUIET_US) {
			bs__worker_quiet(j->reason, sizeof j->reason, NULL, now - j->heartbeat_us, row[18],
			                 j->worker_host, j->worker_pid);
			j->rate = 0; /* nobody runs it now: its row's rate is old */
			j->eta_s = -1;
		}
	}
done:
	mysql_free_result(res);
	return rc;
}

int bs_job_list(bs_job_list_t *out, bs_store_t *st, int *unreachable)
{
	static const bs__collect_t c = {
		sizeof(bs_job_t), list_rows, NULL, NULL, { "listing backfill jobs", "the jobs list", false }
	};
	void *items;
	bs__up_t up;
	int rc;

	out->items = NULL;
	out->len = 0;
	out->unreachable_first[0] = '\0';
	if ((rc = bs__collect(&items, &out->len, &up, st, &c)))
		return rc;
	out->items = items;
	/* by index, then shard */
	for (int x = 1; x < out->len; x++) {
		bs_job_t t = out->items[x];
		int y = x - 1;
		while (y >= 0 && (strcmp(out->items[y].index, t.index) > 0 ||
		                  (!strcmp(out->items[y].index, t.index) && out->items[y].shard > t.shard))) {
			out->items[y + 1] = out->items[y];
			y--;
		}
		out->items[y + 1] = t;
	}
	if (unreachable)
		*unreachable = up.down;
	snprintf(out->unreachable_first, sizeof out->unreachable_first, "%s", up.down_first);
	return 0;
}

struct queue_arg {
	const bs_index_t *idx;
};

static int queue_on(bs_store_t *st, int i, void *p)
{
	struct queue_arg *a = p;
	bs_buf_t b = { 0 };
	int rc;
	if ((rc = bs__shard_check(st, i)))
		return rc;
	/* a job left by an earlier index of the same name is replaced */
	bs__buf_puts(&b, "DELETE FROM bagstore_jobs WHERE index_name=");
	bs__buf_hex(&b, a->idx->name, strlen(a->idx->name));
	bs__buf_printf(&b,
	               " AND index_created_us<>%lld;INSERT IGNORE INTO bagstore_jobs"
	               " (index_name, index_created_us, state) VALUES (",
	               (long long)a->idx->created_us);
	bs__buf_hex(&b, a->idx->name, strlen(a->idx->name));
	bs__buf_printf(&b, ",%lld,'queued')", (long long)a->idx->created_us);
	if (!(rc = bs__buf_ok(&b)))
		rc = bs__shard_exec(st, i, b.ptr, b.len);
	bs__buf_free(&b);
	return rc;
}

int bs_backfill_queue(bs_store_t *st, const char *index)
{
	bs_index_t idx;
	int rc;
	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing to queue a backfill of %s", index);
	if ((rc = bs_index_get(&idx, st, index)))
		return rc;
	if (idx.state == BS_INDEX_DISABLED)
		return bs_error(BS_ECONFLICT, "index %s is disabled: nothing to backfill", index);
	struct queue_arg a = { &idx };
	return bs__shard_each(st, NULL, queue_on, &a, NULL);
}

bool bs__control_action(const char *action)
{
	return !strcmp(action, "pause") || !strcmp(action, "resume") || !strcmp(action, "cancel");
}

struct control_arg {
	const bs__control_t *c;
	int64_t *matched; /* per shard */
	int64_t *total;   /* per shard */
};

static int control_on(bs_store_t *st, int i, void *p)
{
	struct control_arg *a = p;
	const bs__control_t *c = a->c;
	bs_buf_t b = { 0 };
	MYSQL_RES *res = NULL;
	int rc;
	if ((rc = bs__shard_check(st, i)))
		goto done;
	bs__buf_puts(&b, "UPDATE ");
	bs__buf_puts(&b, c->table);
	if (!strcmp(c->action, "pause"))
		bs__buf_puts(&b, " SET state='paused', reason='paused by an operator'"
		                 " WHERE state IN ('queued','running','throttled') AND ");
	else if (!strcmp(c->action, "resume"))
		bs__buf_puts(&b, " SET state='queued', reason='' WHERE state IN ('paused','failed','cancelled') AND ");
	else
		bs__buf_printf(&b,
		               " SET state='cancelled', reason='cancelled by an operator'"
		               " WHERE state NOT IN ('done','cancelled') AND %s%s",
		               c->cancel_only ? c->cancel_only : "", c->cancel_only ? " AND " : "");
	bs__buf_puts(&b, c->rows);
	if ((rc = bs__exec_count(&a->matched[i], st, i, &b)))
		goto done;
	bs__buf_reset(&b);
	bs__buf_printf(&b, "SELECT COUNT(*) FROM %s WHERE %s", c->table, c->rows);
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, i, b.ptr, b.len)))
		goto done;
	MYSQL_ROW row = mysql_fetch_row(res);
	a->total[i] = row && row[0] ? strtoll(row[0], NULL, 10) : 0;
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

int bs__control_rows(int64_t *matched, int64_t *total, bs_store_t *st, const bs__control_t *c)
{
	struct control_arg a = { c, calloc((size_t)st->n, sizeof *a.matched), calloc((size_t)st->n, sizeof *a.total) };
	int rc;
	*matched = *total = 0;
	if (!a.matched || !a.total) {
		rc = bs__oom();
		goto done;
	}
	if ((rc = bs__shard_each(st, NULL, control_on, &a, NULL)))
		goto done;
	for (int i = 0; i < st->n; i++) {
		*matched += a.matched[i];
		*total += a.total[i];
	}
done:
	free(a.matched);
	free(a.total);
	return rc;
}

int bs_job_control(bs_store_t *st, const char *index, const char *action)
{
	bs_buf_t rows = { 0 };
	int64_t m = 0, j = 0;
	int rc;
	if (!bs__control_action(action))
		return bs_error(BS_EINVAL, "unknown job action '%s' (pause, resume or cancel)", action);
	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing to %s backfill %s", action, index);
	bs__buf_puts(&rows, "index_name=");
	bs__buf_hex(&rows, index, strlen(index));
	if ((rc = bs__buf_ok(&rows)))
		goto done;
	bs__control_t c = { "bagstore_jobs", rows.ptr, NULL, action };
	if ((rc = bs__control_rows(&m, &j, st, &c)))
		goto done;
	if (j == 0) {
		rc = bs_error(BS_ENOTFOUND, "no backfill jobs for index %s", index);
		goto done;
	}
	if (m == 0) {
		rc = bs_error(BS_ECONFLICT, "backfill of %s: no job in a state to %s", index, action);
		goto done;
	}
	char detail[64];
	snprintf(detail, sizeof detail, "%lld jobs", (long long)m);
	char what[32];
	snprintf(what, sizeof what, "backfill.%s", action); /* dotted, as every action */
	bs_audit(st, what, index, detail);                  /* best effort */
	bs_error_clear();
done:
	bs__buf_free(&rows);
	return rc;
}

struct done_arg {
	const char *index;
	bool *done; /* per shard */
};

static int done_on(bs_store_t *st, int i, void *p)
{
	struct done_arg *a = p;
	bs_buf_t b = { 0 };
	MYSQL_RES *res = NULL;
	int rc;
	bs__buf_puts(&b, "SELECT state FROM bagstore_jobs WHERE index_name=");
	bs__buf_hex(&b, a->index, strlen(a->index));
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, i, b.ptr, b.len)))
		goto done;
	MYSQL_ROW row = mysql_fetch_row(res);
	a->done[i] = row && row[0] && !strcmp(row[0], "done");
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

int bs__jobs_all_done(bool *all_done, bs_store_t *st, const char *index)
{
	bool *done = calloc((size_t)st->n, sizeof *done);
	int rc;
	*all_done = false;
	BS_ERR_ALLOC(done);
	struct done_arg a = { index, done };
	if (!(rc = bs__shard_each(st, NULL, done_on, &a, NULL))) {
		*all_done = true;
		for (int i = 0; i < st->n; i++)
			if (!done[i])
				*all_done = false;
	}
	free(done);
	return rc;
}

int bs__jobs_forget(bs_store_t *st, const char *index)
{
	bs_buf_t b = { 0 };
	int rc;
	bs__buf_puts(&b, "DELETE FROM bagstore_jobs WHERE index_name=");
	bs__buf_hex(&b, index, strlen(index));
	if (!(rc = bs__buf_ok(&b)))
		rc = bs__exec_everywhere(st, b.ptr, b.len);
	bs__buf_free(&b);
	return rc;
}

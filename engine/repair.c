/*
 * repair.c - the repair loop and the daemon: per shard, entities updated
 * since the watermark (minus cleaner.repair_overlap), newest first, get
 * their index rows made right on every shard (drift.c); index rows whose
 * entity is gone are swept a bounded batch per pass; the watermark and lag
 * are recorded (lag.c). Also the index lifecycle's promotion rule
 * (bs__index_promote) and bs_cleaner_run, which runs pending backfills beside
 * the repair loop.
 */
#include "cleaner.h"

#include <mysqld_error.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define REPAIR_BATCH 1000
#define SWEEP_BATCH 500

static void ts_lit(bs_buf_t *b, int64_t us)
{
	if (us < 0)
		us = 0;
	bs__buf_printf(b, "FROM_UNIXTIME(%lld.%06lld)", (long long)(us / 1000000), (long long)(us % 1000000));
}

static int db_now(int64_t *out, bs_store_t *st, int shard)
{
	static const char q[] = "SELECT CAST(UNIX_TIMESTAMP(NOW(6))*1000000 AS SIGNED)";
	MYSQL_RES *res;
	int rc = bs__shard_query(&res, st, shard, q, sizeof q - 1);
	if (rc)
		return rc;
	MYSQL_ROW row = mysql_fetch_row(res);
	*out = row && row[0] ? strtoll(row[0], NULL, 10) : 0;
	mysql_free_result(res);
	return 0;
}

/* After fixing rows for the entities of eb (read from shard), look at
 * them again: any a writer changed or deleted meanwhile is done again from
 * its new body, so that a fix made from an old body never stands in front
 * of a writer's newer rows. (A writer writes its entity first, then its
 * rows: a change not yet visible here is followed by the writer's own
 * index writes, after ours.) A few rounds at most. */
int bs__drift_settle(drift_counts_t *out, bs_store_t *st, int shard, const bs_index_t *idx, int nidx,
                 const ebatch_t *eb)
{
	ebatch_t again = {0};
	bs_buf_t b = {0};
	bs_id_t *ids = NULL;
	int64_t *upd = NULL;
	size_t n = eb->len;
	int rc = 0;
	if (!n)
		return 0;
	ids = malloc(n * sizeof *ids);
	upd = malloc(n * sizeof *upd);
	if (!ids || !upd) {
		rc = bs_error(BS_ENOMEM, "out of memory");
		goto done;
	}
	memcpy(ids, eb->ids, n * sizeof *ids);
	memcpy(upd, eb->updated, n * sizeof *upd);
	for (int round = 0; round < 3 && n; round++) {
		bs__buf_reset(&b);
		bs__buf_puts(&b, "SELECT added_id, id, UNIX_TIMESTAMP(updated), body FROM entities WHERE id IN (");
		for (size_t k = 0; k < n; k++) {
			bs__buf_puts(&b, k ? "," : "");
			bs__buf_hex(&b, ids[k].b, 16);
		}
		bs__buf_puts(&b, ") ORDER BY id");
		if ((rc = bs__ebatch_fetch(&again, NULL, st, shard, &b)))
			goto done;
		/* keep what changed; what is gone should have no row (NIL bag) */
		size_t m = 0;
		for (size_t k = 0; k < n; k++) {
			long found = bs__ids_find(again.ids, again.len, ids[k].b);
			if (found >= 0 && again.updated[found] == upd[k])
				continue;
			ids[m] = ids[k];
			upd[m] = found >= 0 ? again.updated[found] : -1;
			m++;
		}
		n = m;
		if (!n)
			break;
		/* their current bodies, in ids[] order */
		bs_value_t *bags = calloc(n, sizeof *bags);
		if (!bags) {
			rc = bs_error(BS_ENOMEM, "out of memory");
			goto done;
		}
		for (size_t k = 0; k < n; k++) {
			long j = bs__ids_find(again.ids, again.len, ids[k].b);
			bs_value_nil(&bags[k]);
			if (j >= 0) {
				bags[k] = again.bags[j];
				bs_value_nil(&again.bags[j]); /* moved */
			}
		}
		for (int x = 0; x < nidx && !rc; x++)
			rc = bs__drift_check(out, st, &idx[x], ids, bags, n, true);
		for (size_t k = 0; k < n; k++)
			bs_value_clear(&bags[k]);
		free(bags);
		if (rc)
			goto done;
	}
done:
	bs__ebatch_free(&again);
	bs__buf_free(&b);
	free(ids);
	free(upd);
	return rc;
}

/* Entities of shard updated in [since, until] (until 0: no bound), newest
 * first, made right in each of idx[nidx]. */
static int repair_shard(int64_t *rows, int64_t *repaired, bs_store_t *st, int shard,
                        const bs_index_t *idx, int nidx, int64_t since_us, int64_t until_us)
{
	ebatch_t eb = {0};
	bs_buf_t b = {0};
	int64_t cu = 0, ca = 0;
	bool first = true;
	int rc = 0;
	if (nidx == 0)
		return 0;
	for (;;) {
		bs__buf_reset(&b);
		bs__buf_puts(&b, "SELECT added_id, id, UNIX_TIMESTAMP(updated), body FROM entities WHERE updated>=");
		ts_lit(&b, since_us);
		if (until_us) {
			bs__buf_puts(&b, " AND updated<=");
			ts_lit(&b, until_us);
		}
		if (!first) {
			bs__buf_puts(&b, " AND updated<=");
			ts_lit(&b, cu);
			bs__buf_puts(&b, " AND (updated<");
			ts_lit(&b, cu);
			bs__buf_printf(&b, " OR added_id<%lld)", (long long)ca);
		}
		bs__buf_printf(&b, " ORDER BY updated DESC, added_id DESC LIMIT %d", REPAIR_BATCH);
		size_t got;
		if ((rc = bs__ebatch_fetch(&eb, &got, st, shard, &b)) || eb.len == 0)
			goto done;
		drift_counts_t d = {0};
		for (int k = 0; k < nidx; k++)
			if ((rc = bs__drift_check(&d, st, &idx[k], eb.ids, eb.bags, eb.len, true)))
				goto done;
		if ((rc = bs__drift_settle(&d, st, shard, idx, nidx, &eb)))
			goto done;
		*repaired += d.repaired;
		*rows += (int64_t)eb.len;
		first = false;
		cu = eb.updated[eb.len - 1];
		ca = eb.added[eb.len - 1];
		if (got < REPAIR_BATCH)
			break;
	}
done:
	bs__ebatch_free(&eb);
	bs__buf_free(&b);
	return rc;
}

int bs__repair_since(int64_t *rows, bs_store_t *st, const bs_index_t *idx, int64_t since_us)
{
	bs_index_list_t l = {0};
	int64_t r = 0, fixed = 0;
	int rc = 0;
	if (!idx) {
		if ((rc = bs_index_list(&l, st)))
			return rc;
		/* maintained ones first, in place */
		int m = 0;
		for (int k = 0; k < l.len; k++)
			if (l.items[k].state != BS_INDEX_DISABLED)
				l.items[m++] = l.items[k];
		l.len = m;
	}
	for (int s = 0; s < st->n && !rc; s++)
		rc = repair_shard(&r, &fixed, st, s, idx ? idx : l.items, idx ? 1 : l.len, since_us, 0);
	if (rows)
		*rows = r;
	bs_index_list_free(&l);
	return rc;
}

/* ------------------------------------------------------------ promotion */

int bs__index_promote(bool *promoted, bs_store_t *st, const char *name)
{
	bs_index_t idx;
	bs_buf_t b = {0};
	bool done = false;
	int64_t now = 0;
	int rc;
	*promoted = false;
	if ((rc = bs_index_get(&idx, st, name)))
		return rc;
	if (idx.state == BS_INDEX_READY) {
		*promoted = true;
		return 0;
	}
	if (idx.state == BS_INDEX_DISABLED)
		return bs_error(BS_ECONFLICT, "index %s is disabled", name);
	/* 1. every shard's backfill is done */
	if ((rc = bs__jobs_all_done(&done, st, name)) || !done)
		return rc;
	/* 2. every writer has seen the index: its creation plus the TTL is past */
	int64_t ttl_us = (int64_t)(st->cfg->catalog_ttl * 1e6);
	for (int s = 0; s < st->n; s++) {
		if ((rc = db_now(&now, st, s)))
			return rc;
		if (now < idx.created_us + ttl_us)
			bs__cleaner_sleep((double)(idx.created_us + ttl_us - now) / 1e6, NULL);
	}
	/* 3. a repair pass over every entity updated since creation minus the TTL */
	if ((rc = bs__repair_since(NULL, st, &idx, idx.created_us - ttl_us)))
		return rc;
	bs__buf_puts(&b, "UPDATE bagstore_indexes SET state='ready', changed=NOW(6) WHERE state='building' AND name=");
	bs__buf_hex(&b, name, strlen(name));
	if (!(rc = bs__buf_ok(&b)) && !(rc = bs__exec_everywhere(st, b.ptr, b.len))) {
		bs__catalog_invalidate(st);
		*promoted = true;
	}
	bs__buf_free(&b);
	return rc;
}

/* ------------------------------------------------------------ the daemon */

typedef struct {
	char index[BS_NAME_MAX + 1];
	bs_store_t *st;
	const bs_cleaner_opts_t *opts;
	pthread_t tid;
	bool running;
	atomic_bool finished;
	bool all_done;
	int rc;
	char msg[1024];
	double ended;     /* monotonic, when it last finished */
} bgjob_t;

static void *bg_thread(void *p)
{
	bgjob_t *g = p;
	mysql_thread_init();
	g->rc = bs__backfill_run_pending(&g->all_done, g->st, g->index, g->opts);
	if (g->rc)
		snprintf(g->msg, sizeof g->msg, "%s", bs_last_error());
	mysql_thread_end();
	atomic_store(&g->finished, true);
	return NULL;
}

typedef struct {
	char name[BS_NAME_MAX + 1];
	int64_t created_us;
	uint8_t (*cursor)[16]; /* per shard */
	bool *loaded;          /* per shard: cursor read from the shard */
} sweep_t;

static int sweep_cursor_io(bs_store_t *st, int shard, const char *index, uint8_t cursor[16], bool save)
{
	bs_buf_t b = {0};
	MYSQL_RES *res = NULL;
	int rc;
	char key[80];
	snprintf(key, sizeof key, "sweep:%s", index);
	if (save) {
		bs__buf_puts(&b, "INSERT INTO bagstore_watermarks (name, cursor_bin) VALUES (");
		bs__buf_hex(&b, key, strlen(key));
		bs__buf_puts(&b, ",");
		bs__buf_hex(&b, cursor, 16);
		bs__buf_puts(&b, ") ON DUPLICATE KEY UPDATE cursor_bin=VALUES(cursor_bin)");
		if (!(rc = bs__buf_ok(&b)))
			rc = bs__shard_exec(st, shard, b.ptr, b.len);
	} else {
		memset(cursor, 0, 16);
		bs__buf_puts(&b, "SELECT cursor_bin FROM bagstore_watermarks WHERE name=");
		bs__buf_hex(&b, key, strlen(key));
		if (!(rc = bs__buf_ok(&b)) && !(rc = bs__shard_query(&res, st, shard, b.ptr, b.len))) {
			MYSQL_ROW row = mysql_fetch_row(res);
			if (row && row[0] && mysql_fetch_lengths(res)[0] == 16)
				memcpy(cursor, row[0], 16);
		}
	}
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

typedef struct {
	bgjob_t bg[32];
	int nbg;
	sweep_t sw[64];
	int nsw;
	char repair_lock[65];
} daemon_t;

static sweep_t *sweep_for(daemon_t *d, bs_store_t *st, const bs_index_t *idx)
{
	for (int k = 0; k < d->nsw; k++)
		if (!strcmp(d->sw[k].name, idx->name) && d->sw[k].created_us == idx->created_us)
			return &d->sw[k];
	if (d->nsw == 64)
		return NULL;
	sweep_t *s = &d->sw[d->nsw];
	s->cursor = calloc((size_t)st->n, 16);
	s->loaded = calloc((size_t)st->n, sizeof *s->loaded);
	if (!s->cursor || !s->loaded) {
		free(s->cursor);
		free(s->loaded);
		s->cursor = NULL;
		s->loaded = NULL;
		return NULL;
	}
	snprintf(s->name, sizeof s->name, "%s", idx->name);
	s->created_us = idx->created_us;
	d->nsw++;
	return s;
}

/* One repair pass on one shard: entities since its watermark, then one
 * bounded sweep batch of every maintained index's table on it. */
static int repair_pass(daemon_t *d, bs_store_t *st, int shard, const bs_index_list_t *cat)
{
	bs_buf_t b = {0};
	MYSQL_RES *res = NULL;
	bs_index_t *live = NULL;
	int nlive = 0, rc;
	int64_t wm = 0, start = 0, rows = 0, repaired = 0;
	double t0 = bs_now_mono();

	/* one repairer per shard, among any number of cleaners */
	bs__buf_printf(&b, "SELECT IF(IS_USED_LOCK('%s')=CONNECTION_ID(),1,GET_LOCK('%s',0))",
	           d->repair_lock, d->repair_lock);
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, shard, b.ptr, b.len)))
		goto done;
	MYSQL_ROW row = mysql_fetch_row(res);
	bool mine = row && row[0] && !strcmp(row[0], "1");
	mysql_free_result(res);
	res = NULL;
	if (!mine)
		goto done;
	if (!(live = calloc((size_t)cat->len + 1, sizeof *live))) {
		rc = bs_error(BS_ENOMEM, "out of memory");
		goto done;
	}
	int64_t oldest = 0;
	for (int k = 0; k < cat->len; k++)
		if (cat->items[k].state != BS_INDEX_DISABLED) {
			live[nlive++] = cat->items[k];
			if (!oldest || cat->items[k].created_us < oldest)
				oldest = cat->items[k].created_us;
		}
	if ((rc = db_now(&start, st, shard)) || (rc = bs__lag_watermark(&wm, st, shard)))
		goto done;
	int64_t ttl_us = (int64_t)(st->cfg->catalog_ttl * 1e6);
	if (!wm) /* never ran: what backfills do not cover starts at the oldest index's creation */
		wm = oldest ? oldest - ttl_us : start;
	int64_t since = wm - (int64_t)(st->cfg->cleaner.repair_overlap * 1e6);
	if ((rc = repair_shard(&rows, &repaired, st, shard, live, nlive, since, start)))
		goto done;
	/* orphans: a bounded batch per index on this shard */
	for (int k = 0; k < nlive; k++) {
		sweep_t *s = sweep_for(d, st, &live[k]);
		int64_t orphans = 0, fixed = 0;
		bool wrapped;
		if (!s)
			continue;
		if (!s->loaded[shard] && !sweep_cursor_io(st, shard, live[k].name, s->cursor[shard], false))
			s->loaded[shard] = true;
		uint8_t before[16];
		memcpy(before, s->cursor[shard], 16);
		if ((rc = bs__drift_orphans(&orphans, &fixed, st, &live[k], shard, s->cursor[shard], SWEEP_BATCH,
		                        true, &wrapped))) {
			if (rc == BS_ESQL && bs__shard_last_errno(st, shard) == ER_NO_SUCH_TABLE) {
				rc = 0; /* the table went away (dropped meanwhile) */
				bs_error_clear();
				continue;
			}
			goto done;
		}
		repaired += fixed;
		if (memcmp(before, s->cursor[shard], 16))
			sweep_cursor_io(st, shard, live[k].name, s->cursor[shard], true);
	}
	rc = bs__lag_record(st, shard, start, rows, repaired, bs_now_mono() - t0);
done:
	if (res)
		mysql_free_result(res);
	free(live);
	bs__buf_free(&b);
	return rc;
}

/* An error the daemon survives, for the caller to log (opts->error). */
static void daemon_say(const bs_cleaner_opts_t *opts, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void daemon_say(const bs_cleaner_opts_t *opts, int code, const char *fmt, ...)
{
	char msg[1280];
	va_list ap;
	if (!opts || !opts->error)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	opts->error(opts->ctx, code, msg);
}

/* Finished backfills: promote what is done; say what failed (a failed
 * promotion is retried with the next run of its jobs). */
static void bg_reap(daemon_t *d, bs_store_t *st, const bs_cleaner_opts_t *opts)
{
	for (int k = 0; k < d->nbg; k++) {
		bgjob_t *g = &d->bg[k];
		if (g->running && atomic_load(&g->finished)) {
			pthread_join(g->tid, NULL);
			g->running = false;
			g->ended = bs_now_mono();
			if (g->rc)
				daemon_say(opts, g->rc, "backfill of %s: %s", g->index, g->msg);
			if (g->all_done) {
				bool promoted;
				int prc = bs__index_promote(&promoted, st, g->index);
				if (prc)
					daemon_say(opts, prc, "promoting %s: %s", g->index, bs_last_error());
				bs_error_clear();
			}
		}
	}
}

static bgjob_t *bg_for(daemon_t *d, const char *index)
{
	for (int k = 0; k < d->nbg; k++)
		if (!strcmp(d->bg[k].index, index))
			return &d->bg[k];
	if (d->nbg == 32)
		return NULL;
	bgjob_t *g = &d->bg[d->nbg++];
	memset(g, 0, sizeof *g);
	snprintf(g->index, sizeof g->index, "%s", index);
	return g;
}

int bs_cleaner_run(bs_store_t *st, const bs_cleaner_opts_t *opts)
{
	daemon_t *d = calloc(1, sizeof *d);
	int rc = 0;
	if (!d)
		return bs_error(BS_ENOMEM, "out of memory");
	if (st->cfg->read_only) {
		free(d);
		return bs_error(BS_EREADONLY, "read-only: refusing to run the cleaner");
	}
	{
		const char *db = st->cfg->shards[0].database ? st->cfg->shards[0].database : "";
		snprintf(d->repair_lock, sizeof d->repair_lock, "bagstore.repair.%08lx",
		         (unsigned long)crc32(0, (const Bytef *)db, (uInt)strlen(db)));
	}
	for (;;) {
		bs_index_list_t cat = {0};
		int prc = 0;
		if ((prc = bs_index_list(&cat, st)))
			goto pass_done;
		/* backfills: building indexes */
		for (int k = 0; k < cat.len; k++) {
			const bs_index_t *ix = &cat.items[k];
			if (ix->state != BS_INDEX_BUILDING)
				continue;
			if (opts && opts->once) {
				bool all_done = false, promoted;
				int r = bs_backfill_queue(st, ix->name);
				if (!r)
					r = bs__backfill_run_pending(&all_done, st, ix->name, opts);
				if (!r && all_done)
					r = bs__index_promote(&promoted, st, ix->name);
				if (r && !prc)
					prc = r;
				continue;
			}
			bgjob_t *g = bg_for(d, ix->name);
			if (!g || g->running || (g->ended > 0 && bs_now_mono() - g->ended < 2.0))
				continue;
			/* jobs exist for every building index, whoever created it */
			if (bs_backfill_queue(st, ix->name)) {
				bs_error_clear();
				continue;
			}
			*g = (bgjob_t){ .st = st, .opts = opts };
			snprintf(g->index, sizeof g->index, "%s", ix->name);
			if (pthread_create(&g->tid, NULL, bg_thread, g) == 0)
				g->running = true;
		}
		/* repair, shard by shard */
		for (int s = 0; s < st->n; s++) {
			int r = repair_pass(d, st, s, &cat);
			if (r && !prc)
				prc = r;
		}
		bg_reap(d, st, opts);
	pass_done:
		bs_index_list_free(&cat);
		if (opts && opts->once) {
			rc = prc;
			break;
		}
		if (prc) /* the daemon goes on; the error is the caller's to log */
			daemon_say(opts, prc, "repair: %s", bs_last_error());
		if (bs__stopping(opts))
			break;
		bs__cleaner_sleep(st->cfg->cleaner.repair_interval, bs__stop_flag(opts));
		if (bs__stopping(opts))
			break;
	}
	/* background backfills end at their next chunk */
	for (int k = 0; k < d->nbg; k++)
		if (d->bg[k].running)
			pthread_join(d->bg[k].tid, NULL);
	for (int k = 0; k < d->nsw; k++) {
		free(d->sw[k].cursor);
		free(d->sw[k].loaded);
	}
	free(d);
	return rc;
}

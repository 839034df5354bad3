/*
 * lifecycle.c - an index's life, in one place (doc/DESIGN.md, "Index
 * lifecycle"):
 *
 *     create --> building --(backfill done, writers' TTL past, repair
 *                            since creation, orphans swept)--> ready
 *     building|ready --drop--> disabled --(TTL)--> tables and rows gone
 *
 * The catalog (catalog.c) keeps the rows and runs the DDL; the cleaner's
 * files run the backfill jobs (jobs.c, backfill.c) and the repair
 * (repair.c). Only this file decides when an index changes state.
 */
#include "cleaner.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------ create */

static int has_entities(bs_store_t *st, int i, void *p)
{
	bool *any = p;
	MYSQL_RES *res;
	static const char q[] = "SELECT 1 FROM entities LIMIT 1";
	int rc = bs__shard_query(&res, st, i, q, sizeof q - 1);
	if (rc)
		return rc;
	if (mysql_num_rows(res))
		any[i] = true;
	mysql_free_result(res);
	return 0;
}

/* Does no shard hold an entity? */
static int store_empty(bool *empty, bs_store_t *st)
{
	bool *any = calloc((size_t)st->n, sizeof *any);
	int rc;
	*empty = false;
	BS_ERR_ALLOC(any);
	if (!(rc = bs__shard_each(st, NULL, has_entities, any, NULL))) {
		*empty = true;
		for (int i = 0; i < st->n; i++)
			if (any[i])
				*empty = false;
	}
	free(any);
	return rc;
}

int bs_index_create(bs_store_t *st, const bs_index_t *def)
{
	char on[1024];
	bs_index_t cur;
	bool empty = false;
	int rc;

	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing to create index %s", def->name);
	/* the definition reaches SQL as names: check it as if it were typed */
	bs_index_format_on(on, sizeof on, def);
	if (def->shard_on < 0 || def->shard_on >= def->nprops)
		return bs_error(BS_EINVAL, "index %s: shard_on is not one of its properties", def->name);
	if ((rc = bs_index_parse(&cur, def->name, on, def->props[def->shard_on].name)))
		return rc;
	rc = bs_index_get(&cur, st, def->name);
	if (rc == 0 && cur.diverged && cur.state == BS_INDEX_BUILDING)
		return bs__index_heal(st, &cur); /* a create cut short: this retry completes it */
	if (rc == 0)
		return bs_error(BS_ECONFLICT, "index %s already exists (%s)", def->name,
		                bs_index_state_name(cur.state));
	if (rc != BS_ENOTFOUND)
		return rc;
	bs_error_clear();
	if ((rc = bs__catalog_create_tables(st, def)) || (rc = store_empty(&empty, st)))
		return rc;
	/* Always building first: writers that cached the catalog do not know
	 * the index yet. Backfill jobs are queued for the cleaner, which makes
	 * the index ready by the one rule of bs__index_promote. */
	if ((rc = bs__catalog_insert(st, def)) || (rc = bs_backfill_queue(st, def->name)))
		return rc;
	/* On an empty store the backfill is instant: build it here, which waits
	 * out the catalog TTL and repairs what writers wrote meanwhile. */
	if (empty)
		rc = bs_cleaner_backfill(st, def->name, NULL);
	return rc;
}

/* ------------------------------------------------------------ promotion */

#define SWEEP_BATCH 2000
#define PROMOTE_ROUNDS 4
/* a write's `updated` is its NOW(6), taken before its fence wait (up to
 * BS__FENCE_WAIT_S): a row can commit that long after it */
#define PROMOTE_MARGIN_US BS__LATE_COMMIT_US

/* The sweep of one index shard, from the first row to the last, cut short
 * between batches by a stop or by another worker's failure (failed, may be
 * NULL). */
static int sweep_shard(bs_store_t *st, const bs_index_t *idx, int s, const bs_cleaner_opts_t *opts, atomic_int *failed)
{
	uint8_t cursor[16] = { 0 };
	bool wrapped = false;
	int64_t orphans = 0, fixed = 0;
	int rc = 0;
	while (!rc && !wrapped && !bs__stopping(opts) && !(failed && atomic_load(failed)))
		rc = bs__drift_orphans(&orphans, &fixed, st, idx, s, cursor, SWEEP_BATCH, true, &wrapped);
	return rc;
}

/* The sweep's workers: each takes the next index shard nobody has taken
 * and sweeps it through a store of its own (a batch's entity lookups go to
 * every shard, so two sweeps cannot share connections). */
typedef struct {
	const bs_config_t *cfg;
	const bs_index_t *idx;
	const bs_cleaner_opts_t *opts;
	bs_trace_fn trace; /* the caller's store's trace, for the workers' own */
	void *trace_arg;
	atomic_int next;   /* the next shard to take */
	atomic_int failed; /* set by the first failure: the others stop taking shards */
	int n;
	int *rcs; /* per shard, and its message */
	char (*msg)[1024];
} sweep_t;

static void *sweep_worker(void *p)
{
	sweep_t *w = p;
	bs_store_t *own = NULL;
	mysql_thread_init();
	int s, rc = bs_store_open(&own, w->cfg);
	if (!rc)
		bs_store_trace(own, w->trace, w->trace_arg);
	while ((s = atomic_fetch_add(&w->next, 1)) < w->n && !atomic_load(&w->failed) && !bs__stopping(w->opts)) {
		if (!rc)
			rc = sweep_shard(own, w->idx, s, w->opts, &w->failed);
		if (rc) {
			w->rcs[s] = rc;
			snprintf(w->msg[s], sizeof w->msg[s], "%s", bs_last_error());
			atomic_store(&w->failed, 1);
		}
	}
	bs_store_free(own);
	mysql_thread_end();
	return NULL;
}

#define SWEEP_WORKERS 4 /* index shards swept at once, each with a store of its own */

/* Every index row of idx on every shard whose entity is gone, deleted
 * (cut short, between batches, when opts says stop; the first failure
 * stops the other workers at their next batch). Up to SWEEP_WORKERS index
 * shards at once: a batch's index read and its entity lookups are round
 * trips that leave the servers idle between them. */
static int sweep_all(bs_store_t *st, const bs_index_t *idx, const bs_cleaner_opts_t *opts)
{
	int n = st->n, nw = n < SWEEP_WORKERS ? n : SWEEP_WORKERS, rc = 0, running = 0;
	sweep_t w = { .cfg = st->cfg, .idx = idx, .opts = opts, .n = n };
	bs_store_trace_get(st, &w.trace, &w.trace_arg);
	pthread_t tids[SWEEP_WORKERS];
	bool started[SWEEP_WORKERS] = { false };
	w.rcs = calloc((size_t)n, sizeof *w.rcs);
	w.msg = calloc((size_t)n, sizeof *w.msg);
	if (!w.rcs || !w.msg) {
		rc = bs__oom();
		goto done;
	}
	for (int k = 0; k < nw && n > 1; k++)
		running += started[k] = pthread_create(&tids[k], NULL, sweep_worker, &w) == 0;
	for (int k = 0; k < nw; k++)
		if (started[k])
			pthread_join(tids[k], NULL);
	if (!running) { /* one shard, or no thread at all: here, one after another */
		for (int s = 0; s < n && !rc && !bs__stopping(opts); s++)
			rc = sweep_shard(st, idx, s, opts, NULL);
		goto done;
	}
	for (int s = 0; s < n && !rc; s++)
		if (w.rcs[s])
			rc = bs_error(w.rcs[s], "%s", w.msg[s]);
done:
	free(w.rcs);
	free(w.msg);
	return rc;
}

int bs__index_promote(bool *promoted, bs_store_t *st, const char *name, const bs_cleaner_opts_t *opts)
{
	bs_index_t idx;
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
	if (bs_fault(BS_FAULT_SLOW_PROMOTE)) /* tests: a promotion as long as a big index's */
		bs__cleaner_sleep(6.0, bs__stop_flag(opts));
	/* 2. every writer has seen the index: its creation plus the TTL is past */
	int64_t ttl_us = (int64_t)(st->cfg->catalog_ttl * 1e6);
	for (int s = 0; s < st->n; s++) {
		if ((rc = bs__shard_now_us(&now, st, s)))
			return rc;
		if (now < idx.created_us + ttl_us)
			bs__cleaner_sleep((double)(idx.created_us + ttl_us - now) / 1e6, bs__stop_flag(opts));
	}
	/* A stop leaves the index building with its jobs done: nothing below
	 * changes the catalog before step 4 is whole, and the next run of its
	 * jobs (the next daemon, `cleaner --once`) promotes it from step 1. */
	if (bs__stopping(opts))
		return 0;
	/* 3. a repair pass over every entity updated since creation minus the
	 * TTL. A pass reads newest first: an entity a writer changes behind
	 * its cursor is not seen again, and the writer's own index writes
	 * remove only the rows of the body it replaced, not a row a backfill
	 * chunk wrote from an older body. So passes follow over what was
	 * updated since the pass before began (less PROMOTE_MARGIN_US, for
	 * the shards' clocks and writes that waited at the fence), until one finds nothing, or PROMOTE_ROUNDS;
	 * beyond that the daemon's repair loop, which walks the same way from
	 * its watermark, finds what is left. The first pass reaches back the
	 * margin when it is longer than the TTL: a writer whose catalog
	 * lacked the index took its version before creation, waited at the
	 * fence and committed after a chunk read the body it replaced (a
	 * chunk reads after creation: a version older than the margin was
	 * committed by then). */
	int64_t since = idx.created_us - (ttl_us > PROMOTE_MARGIN_US ? ttl_us : PROMOTE_MARGIN_US);
	for (int round = 0; round < PROMOTE_ROUNDS && !bs__stopping(opts); round++) {
		int64_t start = INT64_MAX, rows = 0;
		for (int s = 0; s < st->n; s++) {
			if ((rc = bs__shard_now_us(&now, st, s)))
				return rc;
			if (now < start)
				start = now;
		}
		if ((rc = bs__repair_since(&rows, st, &idx, since)))
			return rc;
		if (round > 0 && rows == 0)
			break;
		since = start - PROMOTE_MARGIN_US;
	}
	/* 4. and a sweep of the whole index for rows whose entity is gone: a
	 * backfill chunk read before a delete and written after it leaves one,
	 * and the repair of step 3 walks entities, which a deleted one is not */
	if (bs__stopping(opts) || (rc = sweep_all(st, &idx, opts)) || bs__stopping(opts))
		return rc;
	if ((rc = bs__catalog_set_state(st, name, BS_INDEX_BUILDING, BS_INDEX_READY)))
		return rc;
	*promoted = true;
	/* the backfill filled the table: InnoDB's row estimate, which the
	 * indexes screen and `index list` show, is made fresh (best effort) */
	if (bs__catalog_analyze(st, name))
		bs_error_clear();
	return 0;
}

int bs_cleaner_backfill(bs_store_t *st, const char *index, const bs_cleaner_opts_t *opts)
{
	bs_index_t idx;
	bool all_done = false, promoted = false;
	int rc;
	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing to backfill %s", index);
	if ((rc = bs_index_get(&idx, st, index)))
		return rc;
	if (idx.state == BS_INDEX_DISABLED)
		return bs_error(BS_ECONFLICT, "index %s is disabled: nothing to backfill", index);
	if (idx.state == BS_INDEX_READY)
		return 0;
	if ((rc = bs_backfill_queue(st, index)))
		return rc;
	if ((rc = bs__backfill_run(&all_done, st, index, opts, true)))
		return rc;
	if (!all_done)
		return bs__stopping(opts) ? 0 : bs_error(BS_ERROR, "backfill of %s did not finish", index);
	/* a shard that went away meanwhile: wait for it, as the jobs did */
	for (int tries = 0;; tries++) {
		rc = bs__index_promote(&promoted, st, index, opts);
		if (rc != BS_EUNREACHABLE || tries >= 60 || bs__stopping(opts))
			break;
		bs__cleaner_sleep(1.0, bs__stop_flag(opts));
	}
	if (!rc && promoted) /* it was building (see above): ready now */
		bs__event_emit(opts, &(bs_event_t){ .type = BS_EV_INDEX_READY, .shard = -1, .index = index });
	return rc;
}

/* ------------------------------------------------------------ healing */

int bs__index_heal(bs_store_t *st, const bs_index_t *ix)
{
	bs_index_list_t *per = NULL;
	int *rcs = NULL, rc;
	if (!ix->diverged)
		return 0;
	/* a drop cut short: finish it (disable everywhere, wait, remove) */
	if (ix->state == BS_INDEX_DISABLED)
		return bs_index_drop(st, ix->name);
	/* a create or a promotion cut short: every shard gets the row in the
	 * state the store acts on (its table made where it is missing) */
	if (!(rcs = calloc((size_t)st->n, sizeof *rcs)))
		return bs__oom();
	if ((rc = bs__catalog_per_shard(&per, rcs, st)))
		goto done;
	for (int i = 0; i < st->n && !rc; i++) {
		const bs_index_t *mine = rcs[i] ? NULL : bs__index_find(&per[i], ix->name);
		if (!rcs[i] && (!mine || mine->state != ix->state))
			rc = bs__catalog_put_row(st, i, ix);
	}
	if (!rc && ix->state == BS_INDEX_BUILDING)
		rc = bs_backfill_queue(st, ix->name);
done:
	bs__catalog_per_shard_free(per, st->n);
	free(rcs);
	return rc;
}

/* ------------------------------------------------------------ drop */

/* A drop that failed on some shard after changing others: say so, and
 * how it completes. */
static int cut_short(int rc, const char *name)
{
	char msg[1024];
	snprintf(msg, sizeof msg, "%s", bs_last_error());
	return bs_error(rc,
	                "%s; the drop of %s is cut short and the shards' catalogs may differ: retry "
	                "`bagstore index drop %s --yes` once the shard answers (a running cleaner "
	                "also completes it)",
	                msg, name, name);
}

int bs_index_drop(bs_store_t *st, const char *name)
{
	bs_index_t ix;
	int rc;

	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing to drop index %s", name);
	if ((rc = bs_index_get(&ix, st, name)))
		return rc;
	if (ix.state != BS_INDEX_DISABLED || ix.diverged) {
		if ((rc = bs__catalog_set_state(st, name, -1, BS_INDEX_DISABLED)))
			return cut_short(rc, name);
		/* writers that cached the catalog stop maintaining it within a TTL */
		double wait = st->cfg->catalog_ttl;
		struct timespec ts = { (time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9) };
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	/* the tables and the catalog row, then the cleaner's bookkeeping of it:
	 * jobs, the last verify, the orphan sweep's cursor */
	if ((rc = bs__catalog_remove(st, name)) || (rc = bs__jobs_forget(st, name)) ||
	    (rc = bs__verify_forget(st, name)) || (rc = bs__repair_forget(st, name)))
		return cut_short(rc, name);
	return 0;
}

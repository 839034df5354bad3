/*
 * daemon.c - `bagstore cleaner`: the daemon's loop. Each pass reads the
 * catalog, starts a background backfill for every building index that has
 * none running (backfill.c; any number of cleaners share jobs through their
 * locks), runs one repair pass on every shard (repair.c), and promotes the
 * indexes whose backfills finished (lifecycle.c). Errors it survives go to
 * the caller's opts->error and the loop goes on; it returns when opts->stop
 * is set, or after one pass with opts->once.
 */
#include "cleaner.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* bs_cleaner_opts_t.stop may be set by a signal handler: C11 allows that
 * only for lock-free atomics. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "atomic_int must be lock-free for the cleaner's stop flag");

#define MAX_BG 32

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
	g->rc = bs__backfill_run(&g->all_done, g->st, g->index, g->opts, false);
	if (g->rc)
		snprintf(g->msg, sizeof g->msg, "%s", bs_last_error());
	mysql_thread_end();
	atomic_store(&g->finished, true);
	return NULL;
}

typedef struct {
	bgjob_t bg[MAX_BG];
	int nbg;
	bs__repairer_t *rep;
} daemon_t;

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
	if (d->nbg == MAX_BG)
		return NULL;
	bgjob_t *g = &d->bg[d->nbg++];
	memset(g, 0, sizeof *g);
	snprintf(g->index, sizeof g->index, "%s", index);
	return g;
}

/* A pass's first error, its message kept at once: later calls (another
 * shard's pass, a promotion) set and clear the thread's slot. */
typedef struct {
	int rc;
	char msg[1024];
} first_err_t;

static void keep(first_err_t *f, int rc)
{
	if (rc && !f->rc) {
		f->rc = rc;
		snprintf(f->msg, sizeof f->msg, "%s", bs_last_error());
	}
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
	if ((rc = bs__repairer_new(&d->rep))) {
		free(d);
		return rc;
	}
	/* the heartbeat on every shard all its life, and the throttle its
	 * background backfills share (a pass of --once has its backfills') */
	bs__throttle_t *thr = NULL;
	if (!(opts && opts->once) && !bs__throttle_open(&thr, st->cfg))
		bs__throttle_run(thr);
	bs_error_clear();
	for (;;) {
		bs_index_list_t cat = {0};
		first_err_t fe = {0};
		keep(&fe, bs_index_list(&cat, st));
		if (fe.rc)
			goto pass_done;
		/* catalogs the shards disagree on: a create, promotion or drop that
		 * a shard going away cut short is completed */
		for (int k = 0; k < cat.len; k++)
			if (cat.items[k].diverged && bs__index_heal(st, &cat.items[k]))
				daemon_say(opts, bs_last_error_code(), "healing index %s (%s): %s", cat.items[k].name,
				           cat.items[k].divergence, bs_last_error());
		/* backfills: building indexes */
		for (int k = 0; k < cat.len; k++) {
			const bs_index_t *ix = &cat.items[k];
			if (ix->state != BS_INDEX_BUILDING)
				continue;
			if (opts && opts->once) {
				bool all_done = false, promoted;
				int r = bs_backfill_queue(st, ix->name);
				if (!r)
					r = bs__backfill_run(&all_done, st, ix->name, opts, false);
				if (!r && all_done)
					r = bs__index_promote(&promoted, st, ix->name);
				keep(&fe, r);
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
		for (int s = 0; s < st->n; s++)
			keep(&fe, bs__repair_pass(d->rep, st, s, &cat));
		bg_reap(d, st, opts);
	pass_done:
		bs_index_list_free(&cat);
		if (opts && opts->once) {
			rc = fe.rc ? bs_error(fe.rc, "%s", fe.msg) : 0;
			break;
		}
		if (fe.rc) /* the daemon goes on; the error is the caller's to log */
			daemon_say(opts, fe.rc, "repair: %s", fe.msg);
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
	bs__throttle_close(thr);
	bs__repairer_free(d->rep);
	free(d);
	return rc;
}

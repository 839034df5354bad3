/*
 * daemon.c - `bagstore cleaner`: the daemon's loop. Each pass reads the
 * catalog, starts a background backfill for every building index that has
 * none running (backfill.c; any number of cleaners share jobs through their
 * locks) and a background run of a reshard's moves (move.c), runs one
 * repair pass on every shard (repair.c), and promotes the
 * indexes whose backfills finished (lifecycle.c). Errors it survives go to
 * the caller's opts->error and the loop goes on; it returns when opts->stop
 * is set, or after one pass with opts->once.
 */
#include "cleaner.h"

#include <inttypes.h>
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
	int prc; /* the promotion's, when all_done */
	char pmsg[1024];
	double ended; /* monotonic, when it last finished */
} bgjob_t;

static int promote(bs_store_t *st, const char *name, const bs_cleaner_opts_t *opts);

/* A background backfill, then the promotion of its index when every job is
 * done, through a store of its own: the promotion's repair rounds and sweep
 * take as long as the index is big (half a minute at 150,000 entities), and
 * on the daemon's thread they held up its repair passes, its moves and its
 * `loop` events. */
static void *bg_thread(void *p)
{
	bgjob_t *g = p;
	mysql_thread_init();
	g->rc = bs__backfill_run(&g->all_done, g->st, g->index, g->opts, false);
	if (g->rc)
		snprintf(g->msg, sizeof g->msg, "%s", bs_last_error());
	if (!g->rc && g->all_done && !bs__stopping(g->opts)) {
		bs_store_t *own = NULL;
		g->prc = bs_store_open(&own, g->st->cfg);
		if (!g->prc)
			g->prc = promote(own, g->index, g->opts);
		if (g->prc)
			snprintf(g->pmsg, sizeof g->pmsg, "%s", bs_last_error());
		bs_store_free(own);
	}
	mysql_thread_end();
	atomic_store(&g->finished, true);
	return NULL;
}

/* The reshard's moves, run in the background as backfills are. */
typedef struct {
	bs_store_t *st;
	const bs_cleaner_opts_t *opts;
	pthread_t tid;
	bool running;
	atomic_bool finished;
	int rc;
	char msg[1024];
	double ended;
} bgmoves_t;

static void *moves_thread(void *p)
{
	bgmoves_t *g = p;
	bool all_done;
	mysql_thread_init();
	g->rc = bs__moves_run(&all_done, g->st, g->opts, false);
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
	signed char *up; /* per shard: 1 answers, 0 lost, -1 not known yet */
	bgmoves_t mv;
	double fence_at; /* mono s: the fence's parent rows last checked (fence) */
} daemon_t;


/* An error the daemon survives, for the caller to log (opts->error, and
 * the event). */
static void daemon_say(const bs_cleaner_opts_t *opts, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void daemon_say(const bs_cleaner_opts_t *opts, int code, const char *fmt, ...)
{
	char msg[1280];
	va_list ap;
	if (!opts || (!opts->error && !opts->event))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (opts->error)
		opts->error(opts->ctx, code, msg);
	bs__event_emit(opts, &(bs_event_t){ .type = BS_EV_ERROR, .shard = -1, .message = msg, .code = code });
}

/* How often the daemon checks each shard's fence (bs__fence_check); every
 * pass of --once. */
#define FENCE_CHECK_S 30.0


/* Promote an index whose jobs are all done; say so when it became ready
 * here. */
static int promote(bs_store_t *st, const char *name, const bs_cleaner_opts_t *opts)
{
	bs_index_t before;
	bool promoted = false;
	int rc;
	if ((rc = bs_index_get(&before, st, name)) || (rc = bs__index_promote(&promoted, st, name, opts)))
		return rc;
	if (promoted && before.state == BS_INDEX_BUILDING)
		bs__event_emit(opts, &(bs_event_t){ .type = BS_EV_INDEX_READY, .shard = -1, .index = name });
	return 0;
}

/* Finished backfills (promoted on their own thread): say what failed (a
 * failed promotion is retried with the next run of its jobs). */
static void bg_reap(daemon_t *d, const bs_cleaner_opts_t *opts)
{
	for (int k = 0; k < d->nbg; k++) {
		bgjob_t *g = &d->bg[k];
		if (g->running && atomic_load(&g->finished)) {
			pthread_join(g->tid, NULL);
			g->running = false;
			g->ended = bs_now_mono();
			if (g->rc)
				daemon_say(opts, g->rc, "backfill of %s: %s", g->index, g->msg);
			if (g->prc) /* promoted, or not, on its thread (bg_thread) */
				daemon_say(opts, g->prc, "promoting %s: %s", g->index, g->pmsg);
		}
	}
}

/* Moves: a background run when none runs (each of its runners returns as
 * soon as its move cannot go on; the next pass starts another); with
 * --once, in the foreground. */
static int moves_pass(daemon_t *d, bs_store_t *st, const bs_cleaner_opts_t *opts)
{
	bgmoves_t *g = &d->mv;
	if (opts && opts->once) {
		bool all_done;
		return bs__moves_run(&all_done, st, opts, false);
	}
	if (g->running && atomic_load(&g->finished)) {
		pthread_join(g->tid, NULL);
		g->running = false;
		g->ended = bs_now_mono();
		if (g->rc)
			daemon_say(opts, g->rc, "reshard: %s", g->msg);
	}
	if (g->running || (g->ended > 0 && bs_now_mono() - g->ended < 1.0))
		return 0;
	*g = (bgmoves_t){ .st = st, .opts = opts, .ended = g->ended };
	if (pthread_create(&g->tid, NULL, moves_thread, g) == 0)
		g->running = true;
	return 0;
}

/* The slot of index's background backfill: its own, a new one, or, when
 * MAX_BG are taken, the one whose backfill ended longest ago (indexes come
 * and go over a daemon's life: slots are not kept for those that went).
 * NULL only while MAX_BG backfills run at once. */
static bgjob_t *bg_for(daemon_t *d, const char *index)
{
	bgjob_t *g = NULL;
	for (int k = 0; k < d->nbg; k++)
		if (!strcmp(d->bg[k].index, index))
			return &d->bg[k];
	if (d->nbg < MAX_BG) {
		g = &d->bg[d->nbg++];
	} else {
		for (int k = 0; k < d->nbg; k++)
			if (!d->bg[k].running && (!g || d->bg[k].ended < g->ended))
				g = &d->bg[k];
		if (!g)
			return NULL;
	}
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

/* Backfills: every building index gets its jobs run, in the background
 * (with --once, here, its first error kept in fe). */
static void backfills(first_err_t *fe, daemon_t *d, bs_store_t *st, const bs_cleaner_opts_t *opts,
                      const bs_index_list_t *cat)
{
	for (int k = 0; k < cat->len; k++) {
		const bs_index_t *ix = &cat->items[k];
		if (ix->state != BS_INDEX_BUILDING)
			continue;
		if (opts && opts->once) {
			bool all_done = false;
			int r = bs_backfill_queue(st, ix->name);
			if (!r)
				r = bs__backfill_run(&all_done, st, ix->name, opts, false);
			if (!r && all_done)
				r = promote(st, ix->name, opts);
			keep(fe, r);
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
}

/* Does the shard answer? 0, or the error (its message set). A change is
 * an event (lost, back). */
static int shard_answers(daemon_t *d, bs_store_t *st, int s, const bs_cleaner_opts_t *opts)
{
	int64_t now;
	int rc = bs__shard_now_us(&now, st, s);
	signed char was = d->up[s];
	d->up[s] = rc == 0;
	if (rc && was != 0)
		bs__event_emit(
			opts,
			&(bs_event_t){ .type = BS_EV_SHARD_LOST, .shard = s, .message = bs_last_error(), .code = rc });
	else if (!rc && was == 0)
		bs__event_emit(opts, &(bs_event_t){ .type = BS_EV_SHARD_BACK, .shard = s });
	return rc;
}

/* The fence's parent rows on shard s checked against its ownership, and
 * brought in line; said when they were not, or a trigger is missing or
 * could not be tried (with --once, kept in fe too: the pass fails, for
 * scripts to see). */
static void say_fence(first_err_t *fe, const bs_cleaner_opts_t *opts, int code, const char *msg)
{
	daemon_say(opts, code, "%s", msg);
	if (opts && opts->once)
		keep(fe, bs_error(code, "%s", msg));
}

static void fence(first_err_t *fe, bs_store_t *st, int s, const bs_cleaner_opts_t *opts)
{
	bs__fence_t f;
	char msg[1100];
	const char *name = st->shards[s].conf->name;
	if (bs__shard_check(st, s)) { /* not this store's, not initialised, older: touch nothing */
		int code = bs_last_error_code();
		snprintf(msg, sizeof msg, "%s", bs_last_error());
		bs_error_clear();
		say_fence(fe, opts, code, msg);
		return;
	}
	if (bs__fence_check(&f, st, s)) {
		int code = bs_last_error_code();
		char found[192] = "";
		if (f.stray >= 0)
			snprintf(found, sizeof found,
			         " (%" PRId64 " rows for buckets not owned there, %" PRId64
			         " owned buckets without both of theirs: %" PRId64 " rows removed, %" PRId64 " added)",
			         f.stray, f.lacking, f.dropped, f.added);
		snprintf(msg, sizeof msg, "shard %s: checking the fence's parent rows: %s%s", name, bs_last_error(),
		         found);
		bs_error_clear();
		say_fence(fe, opts, code, msg);
		return;
	}
	if (f.stray || f.lacking) { /* found, and brought in line */
		snprintf(msg, sizeof msg,
		         "shard %s: the fence's parent rows (bagstore_owned) were out of step with bagstore_buckets: "
		         "%" PRId64 " rows for buckets not owned there (buckets %s%s), %" PRId64
		         " owned buckets without both of theirs; brought in line (%" PRId64 " rows removed, %" PRId64
		         " added). A TRUNCATE, a dump restored without triggers or a change by hand does this; a"
		         " write to those buckets while one of them moved may have landed unlogged: compare its"
		         " entities with the shard it moved to",
		         name, f.stray, f.stray ? f.stray_buckets : "none", strlen(f.stray_buckets) >= 120 ? "..." : "",
		         f.lacking, f.dropped, f.added);
		say_fence(fe, opts, BS_ECONFIG, msg);
	}
	if (f.triggers < 0) {
		snprintf(msg, sizeof msg, "shard %s: " BS__FENCE_TRY_FMT, name, f.tried);
		say_fence(fe, opts, f.tried_code, msg);
	} else if (f.triggers < 3) {
		snprintf(msg, sizeof msg, "shard %s: " BS__FENCE_TRIGGERS_FMT, name, f.triggers,
		         "run `bagstore init` (a trigger of its name that does something else must be dropped first)");
		say_fence(fe, opts, BS_ECONFIG, msg);
	}
}

/* Whether shard s answers; when not, said once (as shard_lost) and, with
 * --once, kept in fe. */
static bool answers(first_err_t *fe, daemon_t *d, bs_store_t *st, int s, const bs_cleaner_opts_t *opts)
{
	int r = shard_answers(d, st, s, opts);
	if (r) {
		if (opts && opts->once)
			keep(fe, r);
		bs_error_clear();
	}
	return r == 0;
}

/* Every FENCE_CHECK_S (every pass of --once), the fence of each shard
 * that answers: apart from the repair pass, so that a catalog that cannot
 * be read does not stop it. Whether it asked every shard (d->up says
 * which answered). */
static bool fences(first_err_t *fe, daemon_t *d, bs_store_t *st, const bs_cleaner_opts_t *opts)
{
	double now = bs_now_mono();
	if (!(opts && opts->once) && d->fence_at != 0 && now - d->fence_at < FENCE_CHECK_S)
		return false;
	d->fence_at = now;
	for (int s = 0; s < st->n; s++) {
		if (answers(fe, d, st, s, opts))
			fence(fe, st, s, opts);
	}
	return true;
}

/* One repair pass on every shard that answers (asked: the fence check
 * just asked them, and d->up holds their answers); the first error kept
 * in fe. */
static void repairs(first_err_t *fe, daemon_t *d, bs_store_t *st, const bs_cleaner_opts_t *opts,
                    const bs_index_list_t *cat, bool asked)
{
	bs_cleaner_conf_t cl;
	bs__cleaner_conf(&cl, opts, st->cfg);
	for (int s = 0; s < st->n; s++) {
		bs__repair_stats_t rs = { 0 };
		if (asked ? d->up[s] != 1 : !answers(fe, d, st, s, opts))
			continue;
		int r = bs__repair_pass(&rs, d->rep, st, s, cat, cl.repair_overlap);
		keep(fe, r);
		if (rs.ran && !r) {
			char msg[32];
			snprintf(msg, sizeof msg, "%" PRId64 " entities", rs.rows);
			bs__event_emit(opts, &(bs_event_t){ .type = BS_EV_REPAIR_PASS,
			                                    .shard = s,
			                                    .message = msg,
			                                    .rows = rs.rows,
			                                    .seconds = rs.seconds,
			                                    .watermark_us = rs.watermark_us,
			                                    .indexes = rs.per,
			                                    .nindexes = rs.nper });
		}
		free(rs.per);
	}
}

int bs_cleaner_run(bs_store_t *st, const bs_cleaner_opts_t *opts)
{
	daemon_t *d = calloc(1, sizeof *d);
	bs__throttle_t *thr = NULL;
	int rc = 0;
	if (!d || !(d->up = malloc((size_t)st->n))) {
		free(d);
		return bs__oom();
	}
	memset(d->up, -1, (size_t)st->n);
	if (st->cfg->read_only) {
		rc = bs_error(BS_EREADONLY, "read-only: refusing to run the cleaner");
		goto done;
	}
	if ((rc = bs__repairer_new(&d->rep)))
		goto done;
	/* the heartbeat on every shard all its life, and the throttle its
	 * background backfills share (a pass of --once has its backfills') */
	if (!(opts && opts->once) && !bs__throttle_open(&thr, st->cfg))
		bs__throttle_run(thr);
	bs_error_clear();
	for (;;) {
		bs_index_list_t cat = { 0 };
		first_err_t fe = { 0 }, ff = { 0 };
		/* the fence first, kept apart: a shard down or a fence mended
		 * stops no other work on the shards that answer */
		bool asked = fences(&ff, d, st, opts);
		int crc = bs_index_list(&cat, st);
		keep(&fe, crc);
		if (!crc) {
			/* catalogs the shards disagree on: a create, promotion or drop
			 * that a shard going away cut short is completed */
			for (int k = 0; k < cat.len; k++)
				if (cat.items[k].diverged && bs__index_heal(st, &cat.items[k]))
					daemon_say(opts, bs_last_error_code(), "healing index %s (%s): %s",
					           cat.items[k].name, cat.items[k].divergence, bs_last_error());
			backfills(&fe, d, st, opts, &cat);
			/* moves of a reshard */
			keep(&fe, moves_pass(d, st, opts));
			repairs(&fe, d, st, opts, &cat, asked);
			bg_reap(d, opts);
		}
		bs_index_list_free(&cat);
		if (ff.rc) /* what the fence check found is --once's error, whatever failed after */
			fe = ff;
		if (opts && opts->once) {
			rc = fe.rc ? bs_error(fe.rc, "%s", fe.msg) : 0;
			break;
		}
		if (fe.rc) /* the daemon goes on; the error is the caller's to log */
			daemon_say(opts, fe.rc, "repair: %s", fe.msg);
		bs__event_emit(opts, &(bs_event_t){ .type = BS_EV_LOOP, .shard = -1 });
		if (bs__stopping(opts))
			break;
		bs_cleaner_conf_t cl;
		bs__cleaner_conf(&cl, opts, st->cfg); /* the interval in force now (SIGHUP) */
		if (thr) /* and the throttle's thresholds, jobs and writers (the heartbeat's too) */
			bs__throttle_settings(thr, &cl);
		bs__cleaner_sleep(cl.repair_interval, bs__stop_flag(opts));
		if (bs__stopping(opts))
			break;
	}
done:
	/* background backfills and moves end at their next chunk */
	for (int k = 0; k < d->nbg; k++)
		if (d->bg[k].running)
			pthread_join(d->bg[k].tid, NULL);
	if (d->mv.running)
		pthread_join(d->mv.tid, NULL);
	bs__throttle_close(thr);
	bs__repairer_free(d->rep);
	free(d->up);
	free(d);
	return rc;
}

/*
 * svc_watch.c - the daemon's collector: a thread with a store of its own
 * that reads, every interval, the shards' status, the repair lag, the
 * backfill jobs, the latest reshard's moves (with each unfinished move's
 * log backlog), the workers and (less often) the last verify of every
 * index, into a snapshot. Whoever shows these values (/metrics, STATUS=)
 * reads the snapshot and never waits on a shard; each group carries the
 * time of its last success, so its age can be shown beside it.
 *
 * Its store is opened over a copy of the configuration whose timeouts are
 * capped at 2 s: a hung shard delays a refresh by seconds, and a stop by
 * as much at most.
 */
#include "service.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fmt.h"

#define CAP_S 2.0
#define VERIFY_EVERY 5 /* rounds between two reads of the verifies */

struct svc_watch {
	bs_config_t cfg;
	svc_snap_t *snap;
	double interval;
	pthread_t tid;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	void (*on_dead)(void *ctx, const bs_worker_info_t *w);
	void *ctx;
	char (*dead)[33]; /* workers already said dead (by id) */
	int ndead, capdead;
};

static void note_err(char *dst, size_t n, int rc, int64_t *errors)
{
	snprintf(dst, n, "%s", rc < 0 ? bs_last_error() : "");
	if (rc < 0)
		(*errors)++;
}

static void refresh_status(svc_watch_t *w, bs_store_t *st, int64_t now)
{
	svc_snap_t *s = w->snap;
	bs_shard_status_t *stt = calloc((size_t)s->n, sizeof *stt);
	bs_lag_t *lag = calloc((size_t)s->n, sizeof *lag);
	int rc, lrc;

	if (!stt || !lag) {
		free(stt);
		free(lag);
		return;
	}
	rc = bs_shard_status(stt, st);
	pthread_mutex_lock(&s->mu);
	note_err(s->status_err, sizeof s->status_err, rc, &s->errors_total);
	if (rc == 0) {
		free(s->status);
		s->status = stt;
		stt = NULL;
		s->status_at_us = now;
		s->all_answered = true;
		for (int i = 0; i < s->n; i++) {
			s->answered[i] |= s->status[i].state != BS_SHARD_DOWN;
			s->all_answered &= s->answered[i];
		}
	}
	pthread_mutex_unlock(&s->mu);
	lrc = bs_lag(lag, st);
	pthread_mutex_lock(&s->mu);
	note_err(s->lag_err, sizeof s->lag_err, lrc, &s->errors_total);
	if (lrc == 0) {
		free(s->lag);
		s->lag = lag;
		lag = NULL;
		s->lag_at_us = now_us();
	}
	pthread_mutex_unlock(&s->mu);
	free(stt);
	free(lag);
}

static void refresh_jobs(svc_watch_t *w, bs_store_t *st)
{
	svc_snap_t *s = w->snap;
	bs_job_list_t jobs = { 0 };
	bs_worker_list_t wl = { 0 };
	int rc = bs_job_list(&jobs, st, NULL);

	pthread_mutex_lock(&s->mu);
	note_err(s->jobs_err, sizeof s->jobs_err, rc, &s->errors_total);
	if (rc == 0) {
		bs_job_list_free(&s->jobs);
		s->jobs = jobs;
		jobs = (bs_job_list_t){ 0 };
		s->jobs_at_us = now_us();
	}
	pthread_mutex_unlock(&s->mu);
	rc = bs_workers_list(&wl, st, NULL);
	pthread_mutex_lock(&s->mu);
	note_err(s->workers_err, sizeof s->workers_err, rc, &s->errors_total);
	if (rc == 0) {
		bs_worker_list_free(&s->workers);
		s->workers = wl;
		s->workers_at_us = now_us();
	}
	pthread_mutex_unlock(&s->mu);
	bs_job_list_free(&jobs);
}

/* The latest reshard's moves, and the log backlog of those not ended (a
 * count on the source's bagstore_move_log: a move whose source does not
 * answer keeps -1, unknown). */
static void refresh_moves(svc_watch_t *w, bs_store_t *st)
{
	svc_snap_t *s = w->snap;
	bs_move_list_t l = { 0 };
	int64_t *backlog = NULL;
	int down = 0, rc = bs_move_list(&l, st, &down);

	if (rc == 0 && l.len && !(backlog = malloc((size_t)l.len * sizeof *backlog)))
		rc = bs_error(BS_ENOMEM, "out of memory");
	for (int k = 0; rc == 0 && k < l.len; k++) {
		const bs_move_t *m = &l.items[k];
		backlog[k] = -1;
		if (m->phase == BS_MOVE_DONE || m->state == BS_JOB_DONE ||
		    (m->state == BS_JOB_CANCELLED && m->phase != BS_MOVE_UNDO))
			backlog[k] = 0;
		else if (bs_move_backlog(&backlog[k], st, m) < 0) {
			backlog[k] = -1; /* its source does not answer: unknown, the rest stands */
			bs_error_clear();
		}
	}
	pthread_mutex_lock(&s->mu);
	note_err(s->moves_err, sizeof s->moves_err, rc, &s->errors_total);
	if (rc == 0) {
		bs_move_list_free(&s->moves);
		free(s->backlog);
		s->moves = l;
		s->backlog = backlog;
		s->moves_unreachable = down;
		l = (bs_move_list_t){ 0 };
		backlog = NULL;
		s->moves_at_us = now_us();
	}
	pthread_mutex_unlock(&s->mu);
	bs_move_list_free(&l);
	free(backlog);
}

/* Asked to stop? Looked at between calls that may each wait a capped
 * timeout on a hung shard, so that a stop waits for one of them, not all. */
static bool stopping(svc_watch_t *w)
{
	bool stop;

	pthread_mutex_lock(&w->mu);
	stop = w->stop;
	pthread_mutex_unlock(&w->mu);
	return stop;
}

static void refresh_verify(svc_watch_t *w, bs_store_t *st)
{
	svc_snap_t *s = w->snap;
	bs_index_list_t l = { 0 };
	bs_drift_t *d = NULL;
	bool *have = NULL;
	int rc = bs_index_list(&l, st);

	if (rc == 0 && l.len && (!(d = calloc((size_t)l.len, sizeof *d)) || !(have = calloc((size_t)l.len, 1))))
		rc = bs_error(BS_ENOMEM, "out of memory");
	for (int k = 0; rc == 0 && k < l.len; k++) {
		if (stopping(w)) { /* nothing published: the snapshot goes anyway */
			bs_index_list_free(&l);
			free(d);
			free(have);
			return;
		}
		int r = bs_verify_last(&d[k], st, l.items[k].name);
		if (r == 0)
			have[k] = true;
		else if (r != BS_ENOTFOUND)
			rc = r;
	}
	pthread_mutex_lock(&s->mu);
	note_err(s->verify_err, sizeof s->verify_err, rc, &s->errors_total);
	if (rc == 0) {
		bs_index_list_free(&s->indexes);
		free(s->verify);
		free(s->have_verify);
		s->indexes = l;
		s->verify = d;
		s->have_verify = have;
		l = (bs_index_list_t){ 0 };
		d = NULL;
		have = NULL;
		s->verify_at_us = now_us();
	}
	pthread_mutex_unlock(&s->mu);
	bs_index_list_free(&l);
	free(d);
	free(have);
}

/* Workers newly seen dead: said once each (on_dead). */
static void check_dead(svc_watch_t *w)
{
	svc_snap_t *s = w->snap;
	bs_worker_info_t *dead = NULL;
	int ndead = 0;

	pthread_mutex_lock(&s->mu);
	if (s->workers.len && (dead = calloc((size_t)s->workers.len, sizeof *dead)))
		for (int k = 0; k < s->workers.len; k++) {
			const bs_worker_info_t *x = &s->workers.items[k];
			int j;
			if (x->alive)
				continue;
			for (j = 0; j < w->ndead && strcmp(w->dead[j], x->id); j++)
				;
			if (j < w->ndead)
				continue;
			if (w->ndead == w->capdead) {
				int cap = w->capdead ? 2 * w->capdead : 16;
				char(*nd)[33] = realloc(w->dead, (size_t)cap * sizeof *nd);
				if (!nd)
					break;
				w->dead = nd;
				w->capdead = cap;
			}
			memcpy(w->dead[w->ndead++], x->id, 33);
			dead[ndead++] = *x;
		}
	pthread_mutex_unlock(&s->mu);
	for (int k = 0; k < ndead && w->on_dead; k++)
		w->on_dead(w->ctx, &dead[k]);
	free(dead);
}

/* Wait an interval; false when asked to stop. */
static bool watch_wait(svc_watch_t *w)
{
	struct timespec ts;
	bool go;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* the cv's clock: a wall clock stepped back stalls nothing */
	ts.tv_sec += (time_t)w->interval;
	ts.tv_nsec += (long)((w->interval - (double)(time_t)w->interval) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&w->mu);
	if (!w->stop)
		pthread_cond_timedwait(&w->cv, &w->mu, &ts);
	go = !w->stop;
	pthread_mutex_unlock(&w->mu);
	return go;
}

static void *watch_thread(void *p)
{
	svc_watch_t *w = p;
	bs_store_t *st = NULL;
	unsigned round = 0;

	if (bs_store_open(&st, &w->cfg) < 0)
		return NULL;
	do {
		refresh_status(w, st, now_us());
		if (!stopping(w))
			refresh_jobs(w, st);
		if (!stopping(w))
			refresh_moves(w, st);
		if (round++ % VERIFY_EVERY == 0 && !stopping(w))
			refresh_verify(w, st);
		check_dead(w);
		bs_error_clear();
	} while (watch_wait(w));
	bs_store_free(st);
	return NULL;
}

static void snap_free(svc_snap_t *s)
{
	if (!s)
		return;
	free(s->status);
	free(s->lag);
	bs_job_list_free(&s->jobs);
	bs_index_list_free(&s->indexes);
	free(s->verify);
	free(s->have_verify);
	bs_worker_list_free(&s->workers);
	bs_move_list_free(&s->moves);
	free(s->backlog);
	free(s->answered);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

int svc_watch_start(svc_watch_t **out, svc_snap_t **snap, const bs_config_t *cfg, double interval_s,
                    void (*on_dead)(void *ctx, const bs_worker_info_t *w), void *ctx)
{
	svc_watch_t *w = calloc(1, sizeof *w);
	svc_snap_t *s = calloc(1, sizeof *s);

	*out = NULL;
	*snap = NULL;
	if (!w || !s || !(s->answered = calloc((size_t)cfg->nshards, sizeof *s->answered))) {
		free(w);
		free(s);
		return bs_error(BS_ENOMEM, "out of memory");
	}
	pthread_mutex_init(&s->mu, NULL);
	s->n = cfg->nshards;
	w->cfg = *cfg;
	w->cfg.connect_timeout = cfg->connect_timeout < CAP_S ? cfg->connect_timeout : CAP_S;
	w->cfg.read_timeout = cfg->read_timeout < CAP_S ? cfg->read_timeout : CAP_S;
	w->cfg.write_timeout = cfg->write_timeout < CAP_S ? cfg->write_timeout : CAP_S;
	w->snap = s;
	w->interval = interval_s;
	w->on_dead = on_dead;
	w->ctx = ctx;
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&w->tid, NULL, watch_thread, w) != 0) {
		snap_free(s);
		free(w);
		return bs_error(BS_ERROR, "cannot start the collector thread");
	}
	w->started = true;
	*out = w;
	*snap = s;
	return 0;
}

void svc_watch_stop(svc_watch_t *w, svc_snap_t *snap)
{
	if (w) {
		pthread_mutex_lock(&w->mu);
		w->stop = true;
		pthread_cond_broadcast(&w->cv);
		pthread_mutex_unlock(&w->mu);
		if (w->started)
			pthread_join(w->tid, NULL);
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		free(w->dead);
		free(w);
	}
	snap_free(snap);
}

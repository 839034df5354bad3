/*
 * worker.c - the console's lanes (one thread and one store each), their
 * request queues, the snapshot lock, backfills run from the console, and
 * the notices and pages requests leave for the UI. See worker.h for the
 * threading contract; who owns what is written beside each variable.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "worker.h"

typedef struct req {
	struct req *next;
	char key[96];
	work_fn fn;
	void *arg;
	void (*free_arg)(void *);
	int64_t queued_us;
	char origin[64]; /* the operator's action that asked for it, "" a refresh */
} req_t;

typedef struct {
	pthread_t thread;      /* the UI thread's (worker_start, worker_stop) */
	bool started;          /* the UI thread's: a thread to join */
	bool finished;         /* q_mu: the thread left its loop */
	bs_store_t *st;        /* the lane thread's while it runs */
	unsigned gen;          /* the lane thread's: the configuration st is over */
	req_t *head, *tail;    /* q_mu */
	req_t *running;        /* q_mu */
	int64_t running_since; /* q_mu */
	/* the running request's origin: written by the lane thread before it
	 * runs the request, read by the trace (lane_trace) on that thread and
	 * the fan-out threads it starts meanwhile */
	char label[64];
	int no; /* its LANE_* */
} lane_t;

static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;    /* the lanes' queues */
static pthread_cond_t q_cv = PTHREAD_COND_INITIALIZER;      /* work arrived, or stop */
static pthread_cond_t idle_cv;                              /* a request ended, a lane finished (cv_init) */
static pthread_mutex_t snap_mu = PTHREAD_MUTEX_INITIALIZER; /* snapshots, backfill slots, notices */
static lane_t lanes[LANE_COUNT];
/* Set once by worker_stop, under q_mu so that a lane about to wait on q_cv
 * cannot miss it; atomic so that it may be read anywhere. */
static atomic_bool stopping;
/* The lanes' and backfills' configurations: each a shallow copy of one the
 * caller gave (worker_start, worker_set_config; its shards array is the
 * caller's), timeouts capped. cur is the newest, gen its number (both
 * under q_mu); a lane opens its store again over cur before its next
 * request when its gen is older, a backfill opens its store over cur. No
 * copy is freed before worker_stop has joined every thread (a store and a
 * backfill read theirs until then), so a configuration's pointer names it
 * for as long as the console runs. */
#define MAX_CFG 256
static bs_config_t *cfgs[MAX_CFG]; /* q_mu; every copy made */
static int ncfgs;                  /* q_mu */
static const bs_config_t *cur;     /* q_mu */
static unsigned gen;               /* q_mu */
static double cap_s;               /* worker_start's timeout, read-only afterwards */
/* Written by worker_start before any thread exists, closed by worker_stop
 * after every thread is joined. */
static int wake_pipe[2] = { -1, -1 };

void snap_lock(void)
{
	pthread_mutex_lock(&snap_mu);
}
void snap_unlock(void)
{
	pthread_mutex_unlock(&snap_mu);
}

void worker_published(void)
{
	char c = 1;

	if (wake_pipe[1] >= 0 && write(wake_pipe[1], &c, 1) < 0 && errno != EAGAIN) {
		/* nothing to do: the UI also wakes on its timer */
	}
}

int worker_wake_fd(void)
{
	return wake_pipe[0];
}

void worker_drain_wake(void)
{
	char buf[64];

	while (wake_pipe[0] >= 0 && read(wake_pipe[0], buf, sizeof buf) > 0)
		;
}

/* The condition variables waited on with a deadline measure it on
 * CLOCK_MONOTONIC, so that a step of the wall clock (NTP, an operator's
 * `date -s`) neither stretches a wait nor ends it early. Set up once, by
 * worker_start before any thread exists (or by a wait when none ever did). */
static pthread_cond_t bf_cv; /* with snap_mu: a backfill ended (see below) */
static pthread_once_t cv_once = PTHREAD_ONCE_INIT;

static void cv_init_once(void)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&idle_cv, &ca);
	pthread_cond_init(&bf_cv, &ca);
	pthread_condattr_destroy(&ca);
}

static void cv_init(void)
{
	pthread_once(&cv_once, cv_init_once);
}

/* CLOCK_MONOTONIC (what idle_cv and bf_cv measure) secs from now. */
static struct timespec deadline_in(double secs)
{
	struct timespec ts;

	cv_init();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (secs < 0)
		secs = 0;
	ts.tv_sec += (time_t)secs;
	ts.tv_nsec += (long)((secs - (double)(time_t)secs) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

/* ------------------------------------------------------------ statement log */

/* The operator's action the calling thread is handling (the UI thread's
 * key or command; a lane's running request): stamped on what it queues. */
static _Thread_local char worker_origin[64];

void worker_set_origin(const char *label)
{
	snprintf(worker_origin, sizeof worker_origin, "%s", label ? label : "");
}

/* The last WORKER_LOG_MAX statements the operator's actions sent, a ring
 * under log_mu (taken alone: never with q_mu or snap_mu held). Lanes' trace
 * callbacks write it, the :log screen copies it. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static log_entry_t log_ring[WORKER_LOG_MAX]; /* log_mu */
static int log_next, log_len;                /* log_mu */
static uint64_t log_seq;                     /* log_mu: statements listed so far */
static int64_t log_refresh;                  /* log_mu: refresh statements, not listed */

static const char *const lane_names[LANE_COUNT] = { "status", "browse", "action", "scan" };

/* A lane store's trace (bs_store_trace): from the lane's thread or the
 * fan-out threads it started. A refresh's statements are counted only. */
static void lane_trace(void *arg, const bs_trace_t *t)
{
	const lane_t *l = arg;
	char *sql = NULL, *err = NULL;
	log_entry_t *e;

	if (!l->label[0]) {
		pthread_mutex_lock(&log_mu);
		log_refresh++;
		pthread_mutex_unlock(&log_mu);
		return;
	}
	sql = strdup(t->sql);
	err = t->error[0] ? strdup(t->error) : NULL;
	pthread_mutex_lock(&log_mu);
	e = &log_ring[log_next];
	free(e->sql);
	free(e->error);
	e->seq = ++log_seq;
	e->at_us = t->at_us;
	e->seconds = t->seconds;
	e->rows = t->rows;
	e->err = t->err;
	e->async = t->async;
	e->lane = lane_names[l->no];
	snprintf(e->shard, sizeof e->shard, "%s", t->shard);
	snprintf(e->action, sizeof e->action, "%s", l->label);
	e->sql = sql;
	e->error = err;
	log_next = (log_next + 1) % WORKER_LOG_MAX;
	if (log_len < WORKER_LOG_MAX)
		log_len++;
	pthread_mutex_unlock(&log_mu);
}

int worker_log_copy(log_entry_t **out, uint64_t *seq, int64_t *unlisted)
{
	int n, k;

	*out = NULL;
	pthread_mutex_lock(&log_mu);
	n = log_len;
	*seq = log_seq;
	*unlisted = log_refresh;
	if (n && !(*out = calloc((size_t)n, sizeof **out)))
		n = -1;
	for (k = 0; k < n; k++) {
		/* newest first */
		const log_entry_t *e = &log_ring[(log_next - 1 - k + 2 * WORKER_LOG_MAX) % WORKER_LOG_MAX];
		(*out)[k] = *e;
		(*out)[k].sql = e->sql ? strdup(e->sql) : NULL;
		(*out)[k].error = e->error ? strdup(e->error) : NULL;
	}
	pthread_mutex_unlock(&log_mu);
	return n;
}

void worker_log_free(log_entry_t *l, int n)
{
	for (int k = 0; l && k < n; k++) {
		free(l[k].sql);
		free(l[k].error);
	}
	free(l);
}

/* ------------------------------------------------------------ lanes */

static void req_free(req_t *r)
{
	if (!r)
		return;
	if (r->free_arg)
		r->free_arg(r->arg);
	free(r);
}

static void *lane_main(void *p)
{
	lane_t *l = p;

	pthread_mutex_lock(&q_mu);
	for (;;) {
		req_t *r;

		while (!atomic_load(&stopping) && !l->head)
			pthread_cond_wait(&q_cv, &q_mu);
		if (atomic_load(&stopping))
			break;
		r = l->head;
		l->head = r->next;
		if (!l->head)
			l->tail = NULL;
		l->running = r;
		l->running_since = now_us();
		{
			const bs_config_t *c = cur;
			unsigned g = gen;

			snprintf(l->label, sizeof l->label, "%s", r->origin);
			pthread_mutex_unlock(&q_mu);
			if (g != l->gen) {
				/* the configuration changed: a store over the new one (a
				 * store opens no connection until it is used) */
				bs_store_t *n = NULL;

				if (bs_store_open(&n, c) == 0) {
					bs_store_trace(n, lane_trace, l); /* :log goes on */
					bs_store_free(l->st);
					l->st = n;
					l->gen = g;
				}
			}
		}

		bs_error_clear();
		worker_set_origin(r->origin); /* what it queues is of the same action */
		r->fn(l->st, r->arg);
		worker_set_origin(NULL);
		l->label[0] = '\0';

		pthread_mutex_lock(&q_mu);
		l->running = NULL;
		req_free(r);
		pthread_cond_broadcast(&idle_cv);
		worker_published();
	}
	l->finished = true;
	pthread_cond_broadcast(&idle_cv);
	pthread_mutex_unlock(&q_mu);
	return NULL;
}

/* A capped copy of cfg, kept until worker_stop; NULL when out of room. */
static bs_config_t *capped_copy(const bs_config_t *cfg)
{
	bs_config_t *c;

	if (ncfgs == MAX_CFG || !(c = malloc(sizeof *c)))
		return NULL;
	*c = *cfg;
	if (cap_s > 0) {
		if (c->connect_timeout <= 0 || c->connect_timeout > cap_s)
			c->connect_timeout = cap_s;
		if (c->read_timeout <= 0 || c->read_timeout > cap_s)
			c->read_timeout = cap_s;
		if (c->write_timeout <= 0 || c->write_timeout > cap_s)
			c->write_timeout = cap_s;
	}
	cfgs[ncfgs++] = c;
	return c;
}

int worker_set_config(const bs_config_t *cfg)
{
	bs_config_t *c;

	pthread_mutex_lock(&q_mu);
	if ((c = capped_copy(cfg))) {
		cur = c;
		gen++;
	}
	pthread_mutex_unlock(&q_mu);
	return c ? 0 : bs_error(BS_ENOMEM, "too many configurations read in this console: restart it");
}

const bs_config_t *worker_config(void)
{
	const bs_config_t *c;

	pthread_mutex_lock(&q_mu);
	c = cur;
	pthread_mutex_unlock(&q_mu);
	return c;
}

int worker_start(const bs_config_t *cfg, double timeout_s)
{
	int i, rc;

	cv_init();
	cap_s = timeout_s;
	if ((rc = worker_set_config(cfg)) < 0)
		return rc;
	if (pipe(wake_pipe) == 0) {
		fcntl(wake_pipe[0], F_SETFL, O_NONBLOCK);
		fcntl(wake_pipe[1], F_SETFL, O_NONBLOCK);
		fcntl(wake_pipe[0], F_SETFD, FD_CLOEXEC);
		fcntl(wake_pipe[1], F_SETFD, FD_CLOEXEC);
	} else {
		wake_pipe[0] = wake_pipe[1] = -1;
	}
	for (i = 0; i < LANE_COUNT; i++) {
		lanes[i].gen = gen;
		if ((rc = bs_store_open(&lanes[i].st, cur)) < 0)
			return rc;
		lanes[i].no = i;
		bs_store_trace(lanes[i].st, lane_trace, &lanes[i]);
		if (pthread_create(&lanes[i].thread, NULL, lane_main, &lanes[i]) != 0)
			return bs_error(BS_ERROR, "cannot start a worker thread");
		lanes[i].started = true;
	}
	return 0;
}

int worker_submit(int lane, const char *key, bool skip_running, work_fn fn, void *arg, void (*free_arg)(void *))
{
	lane_t *l = &lanes[lane];
	req_t *r, *q;
	/* the status lane only refreshes screens: never listed in the log */
	const char *origin = lane == LANE_STATUS ? "" : worker_origin;

	pthread_mutex_lock(&q_mu);
	/* closing (a request queueing another while the lanes stop), or a
	 * periodic reload already running: dropped */
	if (atomic_load(&stopping) || (key && skip_running && l->running && strcmp(l->running->key, key) == 0)) {
		pthread_mutex_unlock(&q_mu);
		if (free_arg)
			free_arg(arg);
		return 1;
	}
	if (key) {
		for (q = l->head; q; q = q->next) {
			if (strcmp(q->key, key) == 0) {
				if (q->free_arg)
					q->free_arg(q->arg);
				q->fn = fn;
				q->arg = arg;
				q->free_arg = free_arg;
				if (origin[0]) /* a refresh does not take an action's place */
					snprintf(q->origin, sizeof q->origin, "%s", origin);
				pthread_mutex_unlock(&q_mu);
				return 0;
			}
		}
	}
	r = calloc(1, sizeof *r);
	if (!r) {
		pthread_mutex_unlock(&q_mu);
		if (free_arg)
			free_arg(arg);
		return bs_error(BS_ENOMEM, "out of memory");
	}
	snprintf(r->key, sizeof r->key, "%s", key ? key : "");
	r->fn = fn;
	r->arg = arg;
	r->free_arg = free_arg;
	r->queued_us = now_us();
	snprintf(r->origin, sizeof r->origin, "%s", origin);
	if (l->tail)
		l->tail->next = r;
	else
		l->head = r;
	l->tail = r;
	pthread_cond_broadcast(&q_cv);
	pthread_mutex_unlock(&q_mu);
	return 0;
}

bool worker_pending(const char *key, int64_t *since_us)
{
	bool found = false;
	int i;

	pthread_mutex_lock(&q_mu);
	for (i = 0; i < LANE_COUNT && !found; i++) {
		req_t *q;

		if (lanes[i].running && strcmp(lanes[i].running->key, key) == 0) {
			found = true;
			if (since_us)
				*since_us = lanes[i].running_since;
		}
		for (q = lanes[i].head; q && !found; q = q->next) {
			if (strcmp(q->key, key) == 0) {
				found = true;
				if (since_us)
					*since_us = q->queued_us;
			}
		}
	}
	pthread_mutex_unlock(&q_mu);
	return found;
}

static bool idle_locked(void)
{
	int i;

	for (i = 0; i < LANE_COUNT; i++)
		if (lanes[i].running || lanes[i].head)
			return false;
	return true;
}

bool worker_wait_idle(double timeout_s)
{
	struct timespec ts = deadline_in(timeout_s);
	bool idle;

	pthread_mutex_lock(&q_mu);
	while (!(idle = idle_locked()))
		if (pthread_cond_timedwait(&idle_cv, &q_mu, &ts) == ETIMEDOUT)
			break;
	idle = idle_locked();
	pthread_mutex_unlock(&q_mu);
	return idle;
}

/* Join every started lane that finishes before the deadline, then free its
 * store and what was still queued. false when some lane is still running
 * (stuck in a shard): its store and queue are left alone. */
static bool lanes_join(const struct timespec *deadline)
{
	bool all = true;
	int i;

	for (i = 0; i < LANE_COUNT; i++) {
		bool done;

		if (!lanes[i].started)
			continue;
		pthread_mutex_lock(&q_mu);
		while (!(done = lanes[i].finished))
			if (pthread_cond_timedwait(&idle_cv, &q_mu, deadline) == ETIMEDOUT)
				break;
		done = lanes[i].finished;
		pthread_mutex_unlock(&q_mu);
		if (!done) {
			all = false;
			continue;
		}
		pthread_join(lanes[i].thread, NULL);
		lanes[i].started = false;
	}
	if (!all)
		return false;
	/* every lane joined: nothing can queue or run any more */
	for (i = 0; i < LANE_COUNT; i++) {
		while (lanes[i].head) {
			req_t *r = lanes[i].head;
			lanes[i].head = r->next;
			req_free(r);
		}
		lanes[i].tail = NULL;
		bs_store_free(lanes[i].st);
		lanes[i].st = NULL;
	}
	return true;
}

/* ------------------------------------------------------------ backfills */

#define MAX_LOCAL 16

/*
 * A slot of a backfill run by this console. Its bookkeeping (info, used,
 * joined) is under snap_mu: the UI copies info (worker_backfills), the
 * backfill's thread publishes into it, the action lane claims slots
 * (worker_backfill_start) and worker_stop reads them. thread and st belong
 * to the action lane while it starts a backfill in the slot, then to that
 * backfill's thread until it ends, then to whoever joins it: the action
 * lane when it reuses the slot, or worker_stop once the action lane is
 * joined (so the two never meet).
 */
typedef struct {
	local_backfill_t info;
	bool used;   /* claimed: a backfill is starting, runs or ran here */
	bool joined; /* its thread was joined (or never started) */
	pthread_t thread;
	bs_store_t *st;
	const bs_config_t *cfg; /* st's, as thread and st (a job's shard indexes it) */
} bf_slot_t;

static bf_slot_t bf[MAX_LOCAL];
/* The backfills' stop flag (their bs_cleaner_opts_t.stop). Set under
 * snap_mu by worker_stop, and read under snap_mu with the slot claim in
 * worker_backfill_start: no slot is claimed once it is set. */
static atomic_int bf_stop;
/* bf_cv (declared with cv_init, above), with snap_mu: a backfill ended */

/*
 * The console in the worker registry (`bagstore workers`, kind "console")
 * while it runs backfills: the first backfill's thread registers it, the
 * last one's deregisters it (bs_worker_start and _stop may take seconds
 * with a shard down: under reg_mu, never under snap_mu, and only on
 * backfill threads). Progress updates what it does when reg_mu is free.
 */
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static bs_worker_t *reg; /* reg_mu */
static int reg_users;    /* reg_mu: backfill threads holding it */

static void reg_hold(const bs_config_t *cfg)
{
	pthread_mutex_lock(&reg_mu);
	if (!reg && bs_worker_start(&reg, cfg, "console", NULL) < 0)
		bs_error_clear(); /* not listed; the backfill runs all the same */
	reg_users++;
	pthread_mutex_unlock(&reg_mu);
}

static void reg_release(void)
{
	pthread_mutex_lock(&reg_mu);
	if (--reg_users == 0) {
		bs_worker_stop(reg); /* deregisters */
		reg = NULL;
	}
	pthread_mutex_unlock(&reg_mu);
}

/* Under snap_mu: the jobs this console's backfills run, "INDEX@SHARD,...". */
static void reg_jobs_locked(char *buf, size_t n)
{
	size_t o = 0;
	int i, k;

	buf[0] = 0;
	for (i = 0; i < MAX_LOCAL; i++)
		for (k = 0; bf[i].used && bf[i].info.running && k < bf[i].info.njobs && o + 140 < n; k++) {
			const bs_job_t *j = &bf[i].info.jobs[k];
			if (j->state == BS_JOB_RUNNING || j->state == BS_JOB_THROTTLED)
				o += (size_t)snprintf(buf + o, n - o, "%s%s@%s", o ? "," : "", j->index,
				                      j->shard >= 0 && j->shard < bf[i].cfg->nshards
				                              ? bf[i].cfg->shards[j->shard].name
				                              : "?");
		}
}

static void bf_progress(void *ctx, const bs_job_t *job)
{
	bf_slot_t *s = ctx;
	char jobs[1024];
	int i;

	snap_lock();
	for (i = 0; i < s->info.njobs; i++)
		if (s->info.jobs[i].shard == job->shard)
			break;
	if (i < (int)(sizeof s->info.jobs / sizeof s->info.jobs[0])) {
		s->info.jobs[i] = *job;
		if (i == s->info.njobs)
			s->info.njobs++;
	}
	reg_jobs_locked(jobs, sizeof jobs);
	snap_unlock();
	if (pthread_mutex_trylock(&reg_mu) == 0) { /* never wait: a backfill is running */
		bs_worker_doing(reg, jobs, NULL);
		pthread_mutex_unlock(&reg_mu);
	}
	worker_published();
}

static void *bf_main(void *p)
{
	bf_slot_t *s = p;
	bs_cleaner_opts_t o;
	char index[BS_NAME_MAX + 1], err[256];
	int rc;

	snap_lock();
	snprintf(index, sizeof index, "%s", s->info.index);
	snap_unlock();
	memset(&o, 0, sizeof o);
	o.stop = &bf_stop;
	o.progress = bf_progress;
	o.ctx = s;
	reg_hold(s->cfg);
	rc = bs_backfill_queue(s->st, index);
	if (rc == 0)
		rc = bs_cleaner_backfill(s->st, index, &o);
	/* the message, before deregistering may replace it */
	snprintf(err, sizeof err, "%s", rc < 0 ? bs_last_error() : "");
	/* ended short because an operator cancelled its jobs: a cancel, not a failure */
	bool cancelled = false;
	if (rc < 0 && !atomic_load(&bf_stop)) {
		bs_job_list_t l = { 0 };
		if (bs_job_list(&l, s->st, NULL) == 0)
			for (int k = 0; k < l.len && !cancelled; k++)
				cancelled = !strcmp(l.items[k].index, index) && l.items[k].state == BS_JOB_CANCELLED;
		bs_job_list_free(&l);
		bs_error_clear();
	}
	reg_release();
	snap_lock();
	s->info.rc = cancelled ? 0 : rc;
	s->info.cancelled = cancelled;
	if (rc < 0 && !cancelled)
		snprintf(s->info.error, sizeof s->info.error, "%s", err);
	s->info.running = false;
	s->info.finished_us = now_us();
	pthread_cond_broadcast(&bf_cv);
	snap_unlock();
	worker_published();
	return NULL;
}

/* Under snap_mu: *out, the slot for a backfill of index, claimed (used,
 * running, not joined), and *was_live, whether the slot's previous thread
 * is still to be joined. 0, or the error when no slot may be claimed. */
static int bf_claim_locked(bf_slot_t **out, bool *was_live, const char *index)
{
	bf_slot_t *s = NULL;
	int i;

	*out = NULL;
	if (atomic_load(&bf_stop))
		return bs_error(BS_ERROR, "the console is closing");
	for (i = 0; i < MAX_LOCAL; i++)
		if (bf[i].used && bf[i].info.running && strcmp(bf[i].info.index, index) == 0)
			return bs_error(BS_ECONFLICT, "this console already backfills %s", index);
	/* a free slot, else the one of the oldest finished backfill */
	for (i = 0; i < MAX_LOCAL && !s; i++)
		if (!bf[i].used)
			s = &bf[i];
	if (!s)
		for (i = 0; i < MAX_LOCAL; i++)
			if (!bf[i].info.running && (!s || bf[i].info.finished_us < s->info.finished_us))
				s = &bf[i];
	if (!s)
		return bs_error(BS_ERROR, "too many backfills in this console");
	*was_live = s->used && !s->joined;
	memset(&s->info, 0, sizeof s->info);
	snprintf(s->info.index, sizeof s->info.index, "%s", index);
	s->info.running = true;
	s->info.started_us = now_us();
	s->used = true;
	s->joined = false;
	*out = s;
	return 0;
}

/* Called from the action lane only (one at a time). */
int worker_backfill_start(const char *index)
{
	bf_slot_t *s;
	bool was_live = false;
	int rc;

	/* the stop check and the claim under one lock (see bf_stop) */
	snap_lock();
	rc = bf_claim_locked(&s, &was_live, index);
	snap_unlock();
	if (rc < 0)
		return rc;
	if (was_live) /* finished: it published its end and is returning */
		pthread_join(s->thread, NULL);
	bs_store_free(s->st);
	s->st = NULL;
	snap_lock();
	s->cfg = worker_config(); /* under snap_mu too: reg_jobs_locked reads it */
	snap_unlock();
	if ((rc = bs_store_open(&s->st, s->cfg)) < 0 || pthread_create(&s->thread, NULL, bf_main, s) != 0) {
		if (rc == 0)
			rc = bs_error(BS_ERROR, "cannot start a backfill thread");
		snap_lock();
		s->info.running = false;
		s->used = false;
		s->joined = true;
		pthread_cond_broadcast(&bf_cv);
		snap_unlock();
		bs_store_free(s->st); /* no thread got it: still this lane's */
		s->st = NULL;
	}
	return rc;
}

int worker_backfill_resume(bs_store_t *st, const char *index, char *did, size_t n)
{
	bs_index_t ix;
	bs_job_list_t l = { 0 };
	int stopped[3] = { 0, 0, 0 }, rc; /* paused, cancelled, failed */

	did[0] = 0;
	if ((rc = bs_index_get(&ix, st, index)) < 0)
		return rc;
	if (ix.state != BS_INDEX_BUILDING)
		return bs_error(BS_ECONFLICT, "%s is %s: nothing to backfill (B works on a building index)", index,
		                bs_index_state_name(ix.state));
	if ((rc = bs_job_list(&l, st, NULL)) < 0)
		return rc;
	for (int k = 0; k < l.len; k++) {
		const bs_job_t *j = &l.items[k];
		if (strcmp(j->index, index) != 0)
			continue;
		stopped[0] += j->state == BS_JOB_PAUSED;
		stopped[1] += j->state == BS_JOB_CANCELLED;
		stopped[2] += j->state == BS_JOB_FAILED;
	}
	bs_job_list_free(&l);
	if (stopped[0] + stopped[1] + stopped[2] > 0) {
		/* what an operator stopped, B takes up again (and says so) */
		if ((rc = bs_job_control(st, index, "resume")) < 0)
			return rc;
		size_t o = (size_t)snprintf(did, n, "resumed");
		const char *what[3] = { "paused", "cancelled", "failed" };
		for (int k = 0, first = 1; k < 3 && o < n; k++)
			if (stopped[k]) {
				o += (size_t)snprintf(did + o, n - o, "%s %d %s", first ? "" : ",", stopped[k],
				                      what[k]);
				first = 0;
			}
		if (o < n)
			snprintf(did + o, n - o, " job%s", stopped[0] + stopped[1] + stopped[2] == 1 ? "" : "s");
	}
	return worker_backfill_start(index);
}

int worker_backfills(local_backfill_t *out, int max)
{
	int i, n = 0;

	snap_lock();
	for (i = 0; i < MAX_LOCAL && n < max; i++)
		if (bf[i].used)
			out[n++] = bf[i].info;
	snap_unlock();
	return n;
}

/* Wait until no backfill runs (or the deadline); then, when may_join (the
 * action lane is joined, so no backfill is being started), join the
 * finished ones and free their stores. false when one still runs. */
static bool backfills_join(const struct timespec *deadline, bool may_join)
{
	bool running, all = true;
	int i;

	snap_lock();
	for (;;) {
		for (running = false, i = 0; i < MAX_LOCAL && !running; i++)
			running = bf[i].used && bf[i].info.running;
		if (!running || pthread_cond_timedwait(&bf_cv, &snap_mu, deadline) == ETIMEDOUT)
			break;
	}
	snap_unlock();
	for (i = 0; i < MAX_LOCAL; i++) {
		bool join;

		snap_lock();
		running = bf[i].used && bf[i].info.running;
		join = bf[i].used && !bf[i].joined && !running && may_join;
		if (join)
			bf[i].joined = true;
		snap_unlock();
		if (running)
			all = false;
		if (!join)
			continue;
		pthread_join(bf[i].thread, NULL);
		bs_store_free(bf[i].st);
		bf[i].st = NULL;
	}
	return all && may_join;
}

bool worker_stop(double wait_s)
{
	struct timespec deadline = deadline_in(wait_s);
	bool lanes_done, all;

	/* 1. Ask every thread to stop. From here on no backfill slot is
	 * claimed (bf_stop, under the claim's lock), running backfills return
	 * within a chunk, and lanes leave their loop after their request. */
	snap_lock();
	atomic_store(&bf_stop, 1);
	snap_unlock();
	pthread_mutex_lock(&q_mu);
	atomic_store(&stopping, true);
	pthread_cond_broadcast(&q_cv);
	pthread_mutex_unlock(&q_mu);

	/* 2. The lanes first: once the action lane is joined, no backfill is
	 * half started, so every claimed slot has a thread to join. */
	lanes_done = lanes_join(&deadline);

	/* 3. Then the backfills. When a lane is stuck the backfills are still
	 * given until the deadline to stop (and leave their jobs in order),
	 * but none is joined: a slot might be half started. */
	all = backfills_join(&deadline, lanes_done) && lanes_done;
	if (all) {
		/* every thread joined: nobody writes to the pipe any more */
		if (wake_pipe[0] >= 0) {
			close(wake_pipe[0]);
			close(wake_pipe[1]);
		}
		wake_pipe[0] = wake_pipe[1] = -1;
		/* and no store reads a configuration copy any more */
		pthread_mutex_lock(&q_mu);
		for (int i = 0; i < ncfgs; i++)
			free(cfgs[i]);
		ncfgs = 0;
		cur = NULL;
		pthread_mutex_unlock(&q_mu);
	}
	return all;
}

/* ------------------------------------------------------------ notices */

static char notice[512];
static bool notice_err, notice_new;
static _Thread_local char audit_failed[256]; /* this lane's last audit failure */

void worker_notify(bool err, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	snap_lock();
	va_start(ap, fmt);
	vsnprintf(notice, sizeof notice, fmt, ap);
	va_end(ap);
	if (audit_failed[0]) {
		/* a change that reached the store but not the audit table says so */
		n = strlen(notice);
		snprintf(notice + n, sizeof notice - n, " -- NOT AUDITED: %s", audit_failed);
		audit_failed[0] = 0;
		err = true;
	}
	notice_err = err;
	notice_new = true;
	snap_unlock();
	worker_published();
}

bool worker_take_notice(char *buf, size_t n, bool *err)
{
	bool had;

	snap_lock();
	had = notice_new;
	if (had) {
		snprintf(buf, n, "%s", notice);
		*err = notice_err;
		notice_new = false;
	}
	snap_unlock();
	return had;
}

int worker_audit(bs_store_t *st, const char *action, const char *target, const char *detail)
{
	int rc = bs_audit(st, action, target, detail);

	if (rc < 0)
		snprintf(audit_failed, sizeof audit_failed, "%s", bs_last_error());
	return rc;
}

int worker_audit_entity(bs_store_t *st, const char *action, const bs_audit_entity_t *e, const char *detail)
{
	int rc = bs_audit_entity(st, action, e, detail);

	if (rc < 0)
		snprintf(audit_failed, sizeof audit_failed, "%s", bs_last_error());
	return rc;
}

static char *page_title, *page_text;

void worker_page(const char *title, const char *text)
{
	snap_lock();
	free(page_title);
	free(page_text);
	page_title = strdup(title);
	page_text = strdup(text);
	snap_unlock();
	worker_published();
}

bool worker_take_page(char **title, char **text)
{
	bool had;

	snap_lock();
	had = page_title && page_text;
	*title = page_title;
	*text = page_text;
	page_title = page_text = NULL;
	snap_unlock();
	return had;
}

/*
 * worker.c - the console's lanes (one thread and one store each), their
 * request queues, the snapshot lock, and backfills run from the console.
 * See worker.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <pthread.h>
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
} req_t;

typedef struct {
	pthread_t thread;
	bool started;
	bool finished;
	bs_store_t *st;
	req_t *head, *tail;
	req_t *running;
	int64_t running_since;
} lane_t;

static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cv = PTHREAD_COND_INITIALIZER;   /* work arrived */
static pthread_cond_t idle_cv = PTHREAD_COND_INITIALIZER; /* a request ended */
static pthread_mutex_t snap_mu = PTHREAD_MUTEX_INITIALIZER;
static lane_t lanes[LANE_COUNT];
static volatile int stopping;
static bs_config_t wcfg; /* shallow copy of the caller's, timeouts capped */
static int wake_pipe[2] = {-1, -1};

void snap_lock(void) { pthread_mutex_lock(&snap_mu); }
void snap_unlock(void) { pthread_mutex_unlock(&snap_mu); }

void worker_published(void)
{
	char c = 1;

	if (wake_pipe[1] >= 0 && write(wake_pipe[1], &c, 1) < 0 && errno != EAGAIN) {
		/* nothing to do: the UI also wakes on its timer */
	}
}

int worker_wake_fd(void) { return wake_pipe[0]; }

void worker_drain_wake(void)
{
	char buf[64];

	while (wake_pipe[0] >= 0 && read(wake_pipe[0], buf, sizeof buf) > 0)
		;
}

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

		while (!stopping && !l->head)
			pthread_cond_wait(&q_cv, &q_mu);
		if (stopping)
			break;
		r = l->head;
		l->head = r->next;
		if (!l->head)
			l->tail = NULL;
		l->running = r;
		l->running_since = now_us();
		pthread_mutex_unlock(&q_mu);

		bs_error_clear();
		r->fn(l->st, r->arg);

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

int worker_start(const bs_config_t *cfg, double timeout_s)
{
	int i, rc;

	wcfg = *cfg;
	if (timeout_s > 0) {
		if (wcfg.connect_timeout <= 0 || wcfg.connect_timeout > timeout_s)
			wcfg.connect_timeout = timeout_s;
		if (wcfg.read_timeout <= 0 || wcfg.read_timeout > timeout_s)
			wcfg.read_timeout = timeout_s;
		if (wcfg.write_timeout <= 0 || wcfg.write_timeout > timeout_s)
			wcfg.write_timeout = timeout_s;
	}
	if (pipe(wake_pipe) == 0) {
		fcntl(wake_pipe[0], F_SETFL, O_NONBLOCK);
		fcntl(wake_pipe[1], F_SETFL, O_NONBLOCK);
		fcntl(wake_pipe[0], F_SETFD, FD_CLOEXEC);
		fcntl(wake_pipe[1], F_SETFD, FD_CLOEXEC);
	}
	for (i = 0; i < LANE_COUNT; i++) {
		if ((rc = bs_store_open(&lanes[i].st, &wcfg)) < 0)
			return rc;
		if (pthread_create(&lanes[i].thread, NULL, lane_main, &lanes[i]) != 0)
			return bs_error(BS_ERROR, "cannot start a worker thread");
		lanes[i].started = true;
	}
	return 0;
}

int worker_submit(int lane, const char *key, bool skip_running,
                  work_fn fn, void *arg, void (*free_arg)(void *))
{
	lane_t *l = &lanes[lane];
	req_t *r, *q;

	pthread_mutex_lock(&q_mu);
	if (key && skip_running && l->running && strcmp(l->running->key, key) == 0) {
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
	struct timespec ts;
	bool idle;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)timeout_s;
	ts.tv_nsec += (long)((timeout_s - (double)(time_t)timeout_s) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&q_mu);
	while (!(idle = idle_locked()))
		if (pthread_cond_timedwait(&idle_cv, &q_mu, &ts) == ETIMEDOUT)
			break;
	idle = idle_locked();
	pthread_mutex_unlock(&q_mu);
	return idle;
}

/* ------------------------------------------------------------ backfills */

#define MAX_LOCAL 16

typedef struct {
	local_backfill_t info;
	pthread_t thread;
	bool used, joined;
	bs_store_t *st;
} bf_slot_t;

static bf_slot_t bf[MAX_LOCAL];
static atomic_int bf_stop;

static void bf_progress(void *ctx, const bs_job_t *job)
{
	bf_slot_t *s = ctx;
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
	snap_unlock();
	worker_published();
}

static void *bf_main(void *p)
{
	bf_slot_t *s = p;
	bs_cleaner_opts_t o;
	int rc;

	memset(&o, 0, sizeof o);
	o.stop = &bf_stop;
	o.progress = bf_progress;
	o.ctx = s;
	rc = bs_backfill_queue(s->st, s->info.index);
	if (rc == 0)
		rc = bs_cleaner_backfill(s->st, s->info.index, &o);
	snap_lock();
	s->info.rc = rc;
	if (rc < 0)
		snprintf(s->info.error, sizeof s->info.error, "%s", bs_last_error());
	s->info.running = false;
	s->info.finished_us = now_us();
	snap_unlock();
	worker_published();
	return NULL;
}

/* Called from the action lane only (one at a time). */
int worker_backfill_start(const char *index)
{
	bf_slot_t *s = NULL;
	int i, rc;

	if (atomic_load(&bf_stop))
		return bs_error(BS_ERROR, "the console is closing");
	snap_lock();
	for (i = 0; i < MAX_LOCAL; i++) {
		if (bf[i].used && bf[i].info.running && strcmp(bf[i].info.index, index) == 0) {
			snap_unlock();
			return bs_error(BS_ECONFLICT, "this console already backfills %s", index);
		}
	}
	/* a free slot, else the one of the oldest finished backfill */
	for (i = 0; i < MAX_LOCAL && !s; i++)
		if (!bf[i].used)
			s = &bf[i];
	if (!s)
		for (i = 0; i < MAX_LOCAL; i++)
			if (!bf[i].info.running && (!s || bf[i].info.finished_us < s->info.finished_us))
				s = &bf[i];
	snap_unlock();
	if (!s)
		return bs_error(BS_ERROR, "too many backfills in this console");
	if (s->used && !s->joined) {
		/* finished: its thread has published its end and is returning */
		pthread_join(s->thread, NULL);
		s->joined = true;
	}
	if (s->st) {
		bs_store_free(s->st);
		s->st = NULL;
	}
	if ((rc = bs_store_open(&s->st, &wcfg)) < 0)
		return rc;
	snap_lock();
	memset(&s->info, 0, sizeof s->info);
	snprintf(s->info.index, sizeof s->info.index, "%s", index);
	s->info.running = true;
	s->info.started_us = now_us();
	s->used = true;
	s->joined = false;
	snap_unlock();
	if (pthread_create(&s->thread, NULL, bf_main, s) != 0) {
		snap_lock();
		s->info.running = false;
		s->used = false;
		snap_unlock();
		return bs_error(BS_ERROR, "cannot start a backfill thread");
	}
	return 0;
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

bool worker_stop(double wait_s)
{
	int64_t deadline = now_us() + (int64_t)(wait_s * 1e6);
	bool all = true;
	int i;

	atomic_store(&bf_stop, 1);
	pthread_mutex_lock(&q_mu);
	stopping = 1;
	pthread_cond_broadcast(&q_cv);
	pthread_mutex_unlock(&q_mu);

	for (i = 0; i < MAX_LOCAL; i++) {
		bool running;

		if (!bf[i].used || bf[i].joined)
			continue;
		for (;;) {
			snap_lock();
			running = bf[i].info.running;
			snap_unlock();
			if (!running || now_us() > deadline)
				break;
			usleep(20000);
		}
		if (running) {
			all = false;
			continue;
		}
		pthread_join(bf[i].thread, NULL);
		bf[i].joined = true;
		bs_store_free(bf[i].st);
		bf[i].st = NULL;
	}
	for (i = 0; i < LANE_COUNT; i++) {
		bool done;

		if (!lanes[i].started)
			continue;
		for (;;) {
			pthread_mutex_lock(&q_mu);
			done = lanes[i].finished;
			pthread_mutex_unlock(&q_mu);
			if (done || now_us() > deadline)
				break;
			usleep(10000);
		}
		if (!done) {
			all = false;
			continue;
		}
		pthread_join(lanes[i].thread, NULL);
		lanes[i].started = false;
		while (lanes[i].head) {
			req_t *r = lanes[i].head;
			lanes[i].head = r->next;
			req_free(r);
		}
		bs_store_free(lanes[i].st);
		lanes[i].st = NULL;
	}
	return all;
}

/* ------------------------------------------------------------ notices */

static char notice[512];
static bool notice_err, notice_new;
static __thread char audit_failed[256]; /* this lane's last audit failure */

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

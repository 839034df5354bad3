/*
 * writers.c - the cleaner's writers: per target shard, threads with a
 * connection of their own that run the statements a job hands them (a
 * backfill chunk's INSERTs of many rows, bs__shard_rows), each inside one
 * of the throttle's lanes for that shard. A job's statements form a batch, which it waits for as one:
 * the first failure is the batch's, and an aborted batch skips what has
 * not started.
 *
 * Threads are started when a shard's queue has work and none is idle, up
 * to bs__throttle_writers (cleaner.writers, or the server's CPUs); they
 * lower their priority (nice 10: background work) and end with the pool.
 */
#include "cleaner.h"

#include <mysqld_error.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64

typedef struct item {
	struct item *next;       /* in its queue */
	struct item *all;        /* in its batch, for freeing */
	const char *head, *tail; /* bs__shard_rows's */
	const bs__param_t *const *rows;
	int ncols;
	size_t nrows;
	int shard;
	bs__batch_t *batch;
} item_t;

struct bs__batch {
	bs__writers_t *w;
	int pending;         /* statements not ended (under w->mu) */
	bool abort, skipped; /* under w->mu */
	int rc;              /* the first failure's code */
	char msg[1024];      /* and its message */
	double busy;         /* seconds its statements ran */
	item_t *items;       /* every item, freed with the batch */
};

typedef struct {
	bs__writers_t *w;
	int shard;
	pthread_t tid;
} wthread_t;

typedef struct {
	item_t *head, *tail;
	int threads, idle;
	wthread_t th[MAX_THREADS];
} queue_t;

struct bs__writers {
	const bs_config_t *cfg;
	bs__throttle_t *thr;
	atomic_int *stop; /* the caller's (may be NULL) */
	pthread_mutex_t mu;
	pthread_cond_t cv; /* work queued, batches ended */
	bool closing;
	int n;
	queue_t *q;
};

/* Background work: its threads yield the CPU to the application's (on
 * this host; the servers' threads are theirs to share). */
static void lower_priority(void)
{
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
}

int bs__writers_new(bs__writers_t **out, const bs_config_t *cfg, bs__throttle_t *thr, atomic_int *stop)
{
	bs__writers_t *w = calloc(1, sizeof *w);
	*out = NULL;
	if (!w || !(w->q = calloc((size_t)cfg->nshards, sizeof *w->q))) {
		free(w);
		return bs_error(BS_ENOMEM, "out of memory starting the writers");
	}
	w->cfg = cfg;
	w->thr = thr;
	w->stop = stop;
	w->n = cfg->nshards;
	pthread_mutex_init(&w->mu, NULL);
	/* bs__batch_wait's deadline is on CLOCK_MONOTONIC: a step of the
	 * wall clock neither stretches nor cuts it */
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	*out = w;
	return 0;
}

void bs__writers_free(bs__writers_t *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->closing = true;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	for (int i = 0; i < w->n; i++)
		for (int k = 0; k < w->q[i].threads; k++)
			pthread_join(w->q[i].th[k].tid, NULL);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w->q);
	free(w);
}

#define DEADLOCK_TRIES 5 /* a statement chosen as a deadlock's victim runs again this many times */

/* Run one statement on shard i through st, inside a lane of the shard.
 * Returns 0, 1 when it was skipped (abort or stop), or an error code. */
static int run_one(bs_store_t *st, bs__writers_t *w, item_t *it)
{
	double t0 = 0;
	int r, rc;
	for (;;) {
		pthread_mutex_lock(&w->mu);
		bool skip = it->batch->abort;
		pthread_mutex_unlock(&w->mu);
		if (skip)
			return 1;
		if ((r = bs__throttle_enter(&t0, w->thr, it->shard, 0.1, w->stop)) != 1)
			break;
	}
	if (r < 0)
		return 1;
	/* a deadlock's victim is rolled back whole: its upsert (idempotent: a
	 * backfill's rows never overwrite) runs again, as writers' retries do */
	for (int tries = 0;; tries++) {
		int64_t affected;
		if (!(rc = bs__shard_check(st, it->shard)))
			rc = bs__shard_rows(&affected, st, it->shard, it->head, it->tail, it->rows, it->ncols,
			                    it->nrows);
		unsigned err = rc == BS_ECONFLICT ? bs__shard_last_errno(st, it->shard) : 0;
		if (!(err == ER_LOCK_DEADLOCK || err == ER_AUTOINC_READ_FAILED) || tries == DEADLOCK_TRIES)
			break;
		bs_error_clear();
		usleep((useconds_t)(10000 * (tries + 1)));
	}
	bs__throttle_leave(w->thr, it->shard, t0);
	pthread_mutex_lock(&w->mu);
	it->batch->busy += bs_now_mono() - t0;
	pthread_mutex_unlock(&w->mu);
	return rc;
}

/* An item ended with rc (0, 1 skipped, or an error with its message in
 * msg): count it in its batch. Under w->mu. */
static void item_done(bs__writers_t *w, item_t *it, int rc, const char *msg)
{
	bs__batch_t *b = it->batch;
	if (rc == 1)
		b->skipped = true;
	else if (rc && !b->rc) {
		b->rc = rc;
		snprintf(b->msg, sizeof b->msg, "%s", msg);
	}
	if (--b->pending == 0)
		pthread_cond_broadcast(&w->cv);
}

static void *writer_thread(void *p)
{
	wthread_t *th = p;
	bs__writers_t *w = th->w;
	queue_t *q = &w->q[th->shard];
	bs_store_t *st = NULL;
	mysql_thread_init();
	lower_priority();
	bs_error_clear();
	int orc = bs_store_open(&st, w->cfg);
	char omsg[1024];
	snprintf(omsg, sizeof omsg, "%s", orc ? bs_last_error() : "");
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!q->head && !w->closing) {
			q->idle++;
			pthread_cond_wait(&w->cv, &w->mu);
			q->idle--;
		}
		if (!q->head)
			break;
		item_t *it = q->head;
		if (!(q->head = it->next))
			q->tail = NULL;
		pthread_mutex_unlock(&w->mu);
		int rc = orc ? orc : run_one(st, w, it);
		pthread_mutex_lock(&w->mu);
		item_done(w, it, rc, orc ? omsg : bs_last_error());
		bs_error_clear();
	}
	pthread_mutex_unlock(&w->mu);
	bs_store_free(st);
	mysql_thread_end();
	return NULL;
}

/* No writer thread could start for q: its items run on the caller's
 * thread, with a store of their own. */
static void run_inline(bs__writers_t *w, queue_t *q)
{
	bs_store_t *st = NULL;
	int orc = bs_store_open(&st, w->cfg);
	for (;;) {
		pthread_mutex_lock(&w->mu);
		item_t *it = q->threads ? NULL : q->head;
		if (it && !(q->head = it->next))
			q->tail = NULL;
		pthread_mutex_unlock(&w->mu);
		if (!it)
			break;
		int rc = orc ? orc : run_one(st, w, it);
		pthread_mutex_lock(&w->mu);
		item_done(w, it, rc, bs_last_error());
		pthread_mutex_unlock(&w->mu);
		bs_error_clear();
	}
	bs_store_free(st);
}

int bs__batch_new(bs__batch_t **out, bs__writers_t *w)
{
	bs__batch_t *b = calloc(1, sizeof *b);
	*out = NULL;
	BS_ERR_ALLOC(b);
	b->w = w;
	*out = b;
	return 0;
}

int bs__batch_add(bs__batch_t *b, int shard, const char *head, const char *tail, const bs__param_t *const *rows,
                  int ncols, size_t nrows)
{
	bs__writers_t *w = b->w;
	queue_t *q = &w->q[shard];
	item_t *it = calloc(1, sizeof *it);
	BS_ERR_ALLOC(it);
	*it = (item_t){ .head = head,
		        .tail = tail,
		        .rows = rows,
		        .ncols = ncols,
		        .nrows = nrows,
		        .shard = shard,
		        .batch = b,
		        .all = b->items };
	b->items = it;
	int most = bs__throttle_writers(w->thr, shard);
	pthread_mutex_lock(&w->mu);
	b->pending++;
	if (q->tail)
		q->tail->next = it;
	else
		q->head = it;
	q->tail = it;
	if (q->idle == 0 && q->threads < most && q->threads < MAX_THREADS) {
		wthread_t *th = &q->th[q->threads];
		*th = (wthread_t){ .w = w, .shard = shard };
		if (pthread_create(&th->tid, NULL, writer_thread, th) == 0)
			q->threads++;
	}
	pthread_cond_broadcast(&w->cv);
	bool none = q->threads == 0;
	pthread_mutex_unlock(&w->mu);
	if (none) /* no thread could start: run the queue here */
		run_inline(w, q);
	return 0;
}

int bs__batch_wait(bs__batch_t *b, double s)
{
	bs__writers_t *w = b->w;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts); /* w->cv's clock */
	double end = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + s;
	ts.tv_sec = (time_t)end;
	ts.tv_nsec = (long)((end - (double)ts.tv_sec) * 1e9);
	pthread_mutex_lock(&w->mu);
	while (b->pending > 0)
		if (pthread_cond_timedwait(&w->cv, &w->mu, &ts))
			break;
	bool done = b->pending == 0;
	pthread_mutex_unlock(&w->mu);
	return done;
}

int bs__batch_result(const bs__batch_t *b, bool *skipped, double *busy)
{
	if (skipped)
		*skipped = b->skipped;
	if (busy)
		*busy = b->busy;
	if (b->rc)
		return bs_error(b->rc, "%s", b->msg);
	return 0;
}

void bs__batch_abort(bs__batch_t *b)
{
	pthread_mutex_lock(&b->w->mu);
	b->abort = true;
	pthread_mutex_unlock(&b->w->mu);
}

void bs__batch_free(bs__batch_t *b)
{
	if (!b)
		return;
	bs__batch_abort(b);
	while (!bs__batch_wait(b, 1.0))
		;
	for (item_t *it = b->items, *next; it; it = next) {
		next = it->all;
		free(it);
	}
	free(b);
}

/*
 * worker.h - the console's engine calls, off the UI thread.
 *
 * Work runs on lanes: one thread each, each with its own bs_store_t (a store
 * is single-threaded) opened over a copy of the configuration whose
 * timeouts are capped, so that a hung shard costs a lane seconds, not the
 * console. Lanes keep slow things apart: the periodic status reads, the
 * entity browser, operator actions (create, drop, verify, edits), and long
 * reads asked for (exact counts, the census).
 *
 * A request is a function run on the lane's store. It builds its result and
 * publishes it into the screen's snapshot under snap_lock(), then calls
 * worker_published(): the UI thread redraws from the snapshot and never
 * waits for a request.
 *
 * Backfills launched from the console get a thread and a store of their own
 * (bs_cleaner_backfill); their jobs live in the shards' jobs table, so any
 * cleaner resumes them if the console closes. While any runs, the console
 * is in the worker registry (`bagstore workers`, kind "console"): the first
 * backfill's thread registers it, the last one's deregisters it.
 *
 * Threads: the UI thread (the loop, the screens' draw and key hooks), one
 * thread per lane, one per console backfill. What they share is under one
 * of three locks, q_mu (the queues, worker.c's own), snap_mu (snap_lock:
 * every screen's published snapshot, the backfill slots, notices and
 * pages) and log_mu (the statement log, taken alone, never with another
 * held); flags read outside them are atomics.
 *
 * The statement log: each lane's store has a trace (bs_store_trace) that
 * writes every statement the lane sends into a ring of the last
 * WORKER_LOG_MAX, with the operator's action that asked for it: a request
 * carries the origin of what queued it (worker_set_origin: the UI thread
 * sets it around a key's or a command's handling; a lane sets it to its
 * running request's, so what a request queues is of the same action). A
 * request with no origin (the periodic refresh) and every request of the
 * status lane (the screens' reloads, also those an action asks for after
 * it is done) are refreshes: their statements are counted, not listed. The trace runs on the lane's thread and on the
 * fan-out threads it starts (bs__shard_each), hence the ring's mutex.
 * Console backfills' own stores are not traced (the action's request that
 * queued the backfill is). A lane's store is its own;
 * a screen's lane-side state (the entity browser's scan positions) is
 * touched by requests of that lane only.
 *
 * Every lane and backfill reads the configuration given to worker_start or
 * the latest worker_set_config (their stores keep a pointer to it, and to
 * its shards) until it is joined: a configuration given is never freed
 * before worker_stop returns true. A lane moves to a new configuration
 * before its next request (a new store, on its own thread); a backfill
 * keeps the one it started with.
 * worker_stop stops and joins the lanes first, then the backfills (no
 * backfill can be started once it began); when it returns false a thread is
 * still running, stuck in a shard past the deadline, and the caller must
 * leave the configuration alone: exit without freeing it.
 */
#ifndef BS_WORKER_H
#define BS_WORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bagstore.h"
#include "fmt.h" /* now_us(): what snapshots and notices are stamped with */

/* status: the periodic reloads; browse: entity pages, one entity, queries;
 * action: operator changes; scan: long reads an operator asked for (exact
 * counts, the property census), kept off the others' way. */
enum { LANE_STATUS, LANE_BROWSE, LANE_ACTION, LANE_SCAN, LANE_COUNT };

typedef void (*work_fn)(bs_store_t *st, void *arg);

/* Start the lanes over cfg (borrowed until worker_stop returns true);
 * timeout_s caps the connect, read and write timeouts of their stores. On
 * failure, call worker_stop all the same (some lanes may run). */
int worker_start(const bs_config_t *cfg, double timeout_s);
/* From now on the lanes and new backfills work over cfg (borrowed until
 * worker_stop returns true, as worker_start's): each lane opens its store
 * again before its next request. UI thread only. */
int worker_set_config(const bs_config_t *cfg);
/* The lanes' configuration now: the capped copy of the latest one given.
 * Its pointer names it (copies are kept until worker_stop): a snapshot
 * stamped with bs_store_config(st) was taken over it when they are equal.
 * Any thread. */
const bs_config_t *worker_config(void);
/* Ask every thread to stop; join the lanes, then the backfills, waiting up
 * to wait_s in all. true: every thread is joined and its store freed.
 * false: some thread is still stuck in a shard and reads cfg: the caller
 * must exit without freeing cfg. Requests submitted from now on are
 * dropped. UI thread only, once. */
bool worker_stop(double wait_s);

/* Queue fn(store, arg) on a lane. With a key, a queued request of the same
 * key is replaced (its arg freed), and with skip_running a request whose key
 * is running is dropped (periodic reloads). free_arg frees arg after the
 * run (may be NULL). Returns 0, or 1 when dropped. */
int worker_submit(int lane, const char *key, bool skip_running, work_fn fn, void *arg, void (*free_arg)(void *));
/* Is a request of this key queued or running? *since_us: since when. */
bool worker_pending(const char *key, int64_t *since_us);
/* Wait until idle (or timeout); true when idle. */
bool worker_wait_idle(double timeout_s);

/* Snapshots: one lock for every screen's published data. */
void snap_lock(void);
void snap_unlock(void);
/* A request published something: the UI redraws. */
void worker_published(void);
/* A descriptor that becomes readable on publication (drain with
 * worker_drain_wake). */
int worker_wake_fd(void);
void worker_drain_wake(void);

/* ------------------------------------------------------------ statement log */

#define WORKER_LOG_MAX 1000

typedef struct {
	uint64_t seq;  /* its number: 1 for the first listed */
	int64_t at_us; /* when it was sent */
	double seconds;
	int64_t rows;
	unsigned err;     /* MySQL's error number, 0 */
	bool async;       /* sent without waiting (see bs_trace_t) */
	const char *lane; /* "status", "browse", "action", "scan" (static) */
	char shard[BS_NAME_MAX + 1];
	char action[64]; /* the operator's action that sent it */
	char *sql;       /* shortened, passwords masked (bs_trace_t) */
	char *error;     /* MySQL's message, NULL when none */
} log_entry_t;

/* The operator's action the calling thread handles now (NULL or "": none,
 * a refresh): what it queues is stamped with it. UI thread, or a lane. */
void worker_set_origin(const char *label);
/* A copy of the log, newest first (*out: n entries; free with
 * worker_log_free); *seq: how many were ever listed; *unlisted: refresh
 * statements left out. Returns n (-1 when out of memory). Any thread. */
int worker_log_copy(log_entry_t **out, uint64_t *seq, int64_t *unlisted);
void worker_log_free(log_entry_t *l, int n);

/* ------------------------------------------------------------ backfills */

typedef struct {
	char index[BS_NAME_MAX + 1];
	bool running;   /* the thread is still working */
	bool cancelled; /* it ended because an operator cancelled its jobs */
	int rc;         /* its result once finished */
	char error[256];
	int64_t started_us, finished_us;
	bs_job_t jobs[16]; /* last progress per source shard */
	int njobs;
} local_backfill_t;

/* Start a backfill of index on a thread of its own (queues the jobs first).
 * BS_ECONFLICT when this console already runs one for the index, BS_ERROR
 * once worker_stop has begun. Called from the action lane only. */
int worker_backfill_start(const char *index);
/* What B does, from the action lane: an index that is not building is
 * refused with its state; its jobs that were paused, cancelled or failed
 * are resumed first (bs_job_control, audited); then the backfill starts
 * (worker_backfill_start). did: what was done, for the status line
 * ("resumed 2 cancelled jobs", or ""). 0 or the error (its message set). */
int worker_backfill_resume(bs_store_t *st, const char *index, char *did, size_t n);
/* Copy the console's backfills (under snap_lock inside); returns count. */
int worker_backfills(local_backfill_t *out, int max);

/* ------------------------------------------------------------ notices */

/* From a request: a message for the status line (the UI shows it on its
 * next tick). */
void worker_notify(bool err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The UI takes the newest notice; false when none. */
bool worker_take_notice(char *buf, size_t n, bool *err);
/* From a request: a page of text for the UI to open (title and text are
 * copied); the UI takes it on its next tick. */
void worker_page(const char *title, const char *text);
/* The UI takes the page; false when none. The caller frees both. */
bool worker_take_page(char **title, char **text);
/* Record an operator's change in the audit table (bs_audit). A failure is
 * added to the lane's next worker_notify, as an error. */
int worker_audit(bs_store_t *st, const char *action, const char *target, const char *detail);
/* The same for an entity change, with its before and after (bs_audit_entity). */
int worker_audit_entity(bs_store_t *st, const char *action, const bs_audit_entity_t *e, const char *detail);

#endif

/*
 * cleaner.h - what the cleaner's files (layer L4 of internal.h: events.c,
 * jobs.c, throttle.c, writers.c, lag.c, drift.c, repair.c, backfill.c,
 * verify.c, lifecycle.c, workers.c) and the daemon (daemon.c) share, and
 * nobody else sees.
 */
#ifndef BS_CLEANER_H
#define BS_CLEANER_H

#include "internal.h"

/* ------------------------------------------------------------ batches */

/* Entities read from one shard, decoded. A body that does not decode
 * leaves its bag NIL (it should have no index row). */
typedef struct {
	bs_id_t *ids;
	bs_value_t *bags;
	int64_t *added;   /* added_id */
	int64_t *updated; /* unix microseconds */
	size_t len, cap;
	size_t corrupt;                   /* bodies that are corrupt (do not decode, or hold
	                    * another id): their bag is NIL */
	char corrupt_first[320];          /* the first of those, why */
	int64_t ov;                       /* the shard's ownership version, read with the rows
	                    * (a fifth column, BS__OV_SQL), -1 when not */
	int64_t last_added, last_updated; /* of the last row read, owned or not:
	                    * the keyset cursor */
	bool no_bodies;                   /* rows without bodies: bags stay NIL, not corrupt */
} ebatch_t;

/* 16-byte ids, growable. */
typedef struct {
	uint8_t (*ids)[16];
	size_t n, cap;
} idvec16_t;

void bs__ebatch_reset(ebatch_t *b);
void bs__ebatch_free(ebatch_t *b);
/* Append the rows of res: columns added_id, id, UNIX_TIMESTAMP(updated), body. */
int bs__ebatch_load(ebatch_t *b, MYSQL_RES *res);
/* Reset b and fill it with the rows sql (selecting those columns) returns on
 * shard; *got (optional) gets the rows returned, undecodable ids included. */
int bs__ebatch_fetch(ebatch_t *b, size_t *got, bs_store_t *st, int shard, const bs_buf_t *sql);
/* Keep only b's entities whose bucket's byte in by_bucket (the map's
 * `buckets` of them) passes keep; the others' bags are freed. */
void bs__ebatch_keep(ebatch_t *b, const bs_store_t *st, const uint8_t *by_bucket, bool (*keep)(uint8_t));
/* Keep only b's entities whose bucket the shard owned in the snapshot
 * they were read in (b->ov); *again when the shard has moved past it (read
 * the batch again). */
int bs__ebatch_owned(bool *again, ebatch_t *b, bs_store_t *st, int shard);
/* bs__ebatch_fetch of a scan whose SQL selects BS__OV_SQL fifth, keeping the
 * shard's own entities (read again when ownership moved under the read).
 * *got counts every row returned (the scan's end), b->last_* the cursor. */
int bs__ebatch_scan(ebatch_t *b, size_t *got, bs_store_t *st, int shard, const bs_buf_t *sql);
/* The current rows of ids[n], read from the shards owning their buckets
 * (following buckets that moved), sorted by id; ids absent are gone. */
int bs__entities_current(ebatch_t *out, bs_store_t *st, const bs_id_t *ids, size_t n, bool no_bodies);
/* qsort_r order of indexes into an array of ids (its argument). */
int bs__cmp_order_ids(const void *a, const void *b, void *ids);
/* qsort order of bs_id_t (bytes ascending). */
int bs__id_cmp(const void *a, const void *b);
/* Position of id in ids[n] (16-byte ids in ascending order); -1 when absent. */
long bs__ids_find(const void *ids, size_t n, const void *id);

/* ------------------------------------------------------------ drift (drift.c) */

typedef struct {
	int64_t missing, stale, misfit, repaired;
	int64_t inserted, deleted; /* of repaired: rows upserted, rows deleted */
} drift_counts_t;

/* Compare idx's rows for n entities (ids[k], bags[k]; a NIL bag means the
 * entity should have no row) with what every shard holds, reading them with
 * entity_id IN (...) on every shard at once. With fix, delete stale rows
 * and upsert missing or wrong ones. Counts are added to *out. */
int bs__drift_check(drift_counts_t *out, bs_store_t *st, const bs_index_t *idx, const bs_id_t *ids,
                    const bs_value_t *bags, size_t n, bool fix);

/* Index rows on shard `shard` after *cursor (16 bytes, all zero to start)
 * whose entity is gone: up to limit rows looked at; with fix, deleted.
 * *cursor moves on; *wrapped is set when the end of the table was reached. */
int bs__drift_orphans(int64_t *orphans, int64_t *fixed, bs_store_t *st, const bs_index_t *idx, int shard,
                      uint8_t cursor[16], size_t limit, bool fix, bool *wrapped);

/* ------------------------------------------------------------ repair (repair.c) */

/* After bs__drift_check(fix) over eb (read from shard): redo the entities a
 * writer changed or deleted meanwhile from their new bodies, and read them
 * again, until a read after the last fix finds them unchanged (16 fixes at
 * most; one still changing is left an intent for the repair loop), so that
 * no fix made from an old body outlives a writer's newer rows.
 * out[nidx]: counts added per index (out[x] for idx[x]). */
int bs__drift_settle(drift_counts_t *out, bs_store_t *st, int shard, const bs_index_t *idx, int nidx,
                     const ebatch_t *eb);
/* bs__drift_check(fix) of idx[nidx]'s rows for eb's entities (read from
 * shard), counted into d[nidx], then bs__drift_settle, counted into s[nidx]
 * (may be d). The settle runs whether or not a check failed, and again (4
 * tries) when it fails: a check may have committed fixes on some shards
 * before it failed, and a fix that no read follows can stand on a body a
 * writer deleted or replaced meanwhile (an entity deleted is in no later
 * batch to look at it again). Before each fix, the entities it changes get
 * an intent (drift.c's fix_intents); they are removed when the check and
 * the settle both succeeded, else left to the repair loop. After a check
 * that failed before sending any fix, no settle. The first error is
 * returned. */
int bs__drift_fix_settle(drift_counts_t *d, drift_counts_t *s, bs_store_t *st, int shard, const bs_index_t *idx,
                         int nidx, const ebatch_t *eb);
/* (drift.c) The token (and named lock) of a fix scope's intents on shard i: the
 * scope's st->fix_token and the shard's number, since named locks are the
 * server's, and two shards may share one. */
void bs__fix_name(char out[64], const bs_store_t *st, int i);

/* Make every entity updated at or after since_us (on every shard) right in
 * idx (NULL: every maintained index), newest first. */
int bs__repair_since(int64_t *rows, bs_store_t *st, const bs_index_t *idx, int64_t since_us);

/* Make right every entity of shard updated at or after since_us whose
 * bucket is in only[] (per bucket of the map, 1: in), in every maintained
 * index: a move's target covers what the source's repair had not yet. */
int bs__repair_moved(int64_t *rows, bs_store_t *st, int shard, int64_t since_us, const uint8_t *only);

/* The repair loop's state across passes (the orphan sweeps' cursors). */
typedef struct bs__repairer bs__repairer_t;
int bs__repairer_new(bs__repairer_t **out);
void bs__repairer_free(bs__repairer_t *r);
/* What one repair pass did (bs__repair_pass). */
typedef struct {
	bool ran;             /* this cleaner holds the shard's repair lock: it ran */
	int64_t rows;         /* entities looked at */
	int64_t watermark_us; /* recorded after it */
	double seconds;
	bs_event_index_t *per; /* per maintained index: rows inserted and deleted
	                          * (owned: free()) */
	int nper;
} bs__repair_stats_t;
/* One repair pass on one shard, under the shard's repair lock (a pass
 * another cleaner holds the lock for is skipped): entities since its
 * watermark minus overlap_s (cleaner.repair_overlap), newest first, then
 * one bounded orphan sweep batch of every maintained index's table on it;
 * records the watermark and lag (lag.c). *out (may be NULL) says what it
 * did, also on failure (rows fixed before it). */
int bs__repair_pass(bs__repair_stats_t *out, bs__repairer_t *r, bs_store_t *st, int shard, const bs_index_list_t *cat,
                    double overlap_s);
/* Forget an index's sweep cursors on every shard (index drop). */
int bs__repair_forget(bs_store_t *st, const char *index);

/* ------------------------------------------------------------ backfill (backfill.c) */

/* Run the jobs of index, one thread per source shard (st is only read for
 * its configuration: each thread opens stores of its own). until_done:
 * each job is waited for and retried until it ends (done, cancelled,
 * failed) or opts->stop; otherwise each returns as soon as it cannot go on
 * (someone else holds it, it is paused, a shard is down), as the daemon
 * wants. *all_done: every job is done. */
int bs__backfill_run(bool *all_done, bs_store_t *st, const char *index, const bs_cleaner_opts_t *opts, bool until_done);

/* ------------------------------------------------------------ jobs (jobs.c) */

/* The GET_LOCK name of a job (at most 64 characters) into buf[65]. */
void bs__job_lock_name(char buf[65], const bs_store_t *st, int shard, const char *index);
/* The job row of index on shard; BS_ENOTFOUND when absent. */
int bs__job_read(bs_job_t *out, int64_t *index_created_us, bs_store_t *st, int shard, const char *index);
int bs__job_state_parse(bs_job_state_t *out, const char *s);
/* Are all jobs of index done, on every shard? (*all_done false when any is
 * not, or when there are none.) */
int bs__jobs_all_done(bool *all_done, bs_store_t *st, const char *index);
/* Remove the index's jobs on every shard (index drop). */
int bs__jobs_forget(bs_store_t *st, const char *index);

/* A job's or a move's row says running or throttled and its heartbeat
 * (written by its worker at each checkpoint) is older than this: the
 * worker is judged by its own beat in the registry (workers.c), which its
 * heartbeat threads write every second whatever the job waits for. */
#define BS__ROW_QUIET_US 10000000
/* SQL: the age in microseconds, on the row's shard's clock, of the
 * registry's newest beat of the worker that the row names (its worker_host
 * and worker_pid columns); NULL when that worker is not registered. */
#define BS__WORKER_BEAT_AGE_SQL(table) \
	"(SELECT TIMESTAMPDIFF(MICROSECOND, MAX(w.heartbeat), NOW(6)) FROM bagstore_workers w" \
	" WHERE w.host=" table ".worker_host AND w.pid=" table ".worker_pid)"
/* The reason a quiet row shows (quiet_us since its heartbeat; beat_age:
 * the column above as text, NULL when not registered): a live worker's
 * row keeps its own reason ("no checkpoint for N s; worker H:P is alive"
 * when it has none); only a worker whose registry beat is missing or older
 * than BS_WORKER_DEAD_S is called gone. *beat_s: the beat's age, -1 when
 * unknown. */
void bs__worker_quiet(char *reason, size_t n, double *beat_s, int64_t quiet_us, const char *beat_age, const char *host,
                      int pid);
/* An operator's pause, resume or cancel of job rows (backfills'
 * bagstore_jobs, moves' bagstore_moves): the same state changes on both. */
bool bs__control_action(const char *action); /* pause, resume or cancel? */
typedef struct {
	const char *table;       /* bagstore_jobs or bagstore_moves */
	const char *rows;        /* SQL: the rows it is about ("index_name=X'..'") */
	const char *cancel_only; /* SQL: those of them a cancel may change (NULL: all) */
	const char *action;      /* pause, resume or cancel */
} bs__control_t;
/* The action on every shard at once (each checked writable): *matched the
 * rows in a state to take it (now changed), *total the rows there are. */
int bs__control_rows(int64_t *matched, int64_t *total, bs_store_t *st, const bs__control_t *c);

/* ------------------------------------------------------------ throttle (throttle.c) */

/*
 * The throttle every cleaner job goes through (doc/DESIGN.md, "The
 * throttle"). One per configuration per process, shared by reference: a
 * sampler thread per shard writes the heartbeat every 100 ms, times it
 * (the probe) and reads the shard's signals and its replicas' lag; per
 * shard an AIMD pace (statements at once; below one, a share of the time)
 * grows slowly while every signal is under its threshold and halves when
 * one is over. A job uses it in three ways:
 *
 *   bs__throttle_job_begin/end    around an attempt: cleaner.jobs at once
 *   bs__throttle_gate             before each chunk, over the shards the
 *                                 chunk touches: go (at what pace), wait
 *                                 (why), or stop (critical)
 *   bs__throttle_enter/leave      around each statement on a shard (a
 *                                 chunk's read, a batch of rows): waits for
 *                                 one of the shard's lanes, none while it is
 *                                 over a threshold or unreadable; leaving
 *                                 keeps the lane closed for the pause a
 *                                 pace below one asks
 */
typedef struct bs__throttle bs__throttle_t;

/* A reference to the process's throttle for cfg (made on first use; its
 * samplers start at the first gate, enter or sample). */
int bs__throttle_open(bs__throttle_t **out, const bs_config_t *cfg);
/* Drop a reference; the last one stops the samplers. Accepts NULL. */
void bs__throttle_close(bs__throttle_t *t);
/* Start its samplers now (they start at the first gate or enter
 * otherwise): the daemon writes the heartbeat all its life. Call it from a
 * thread of normal priority: the samplers inherit it, and the probe must
 * time a write as a writer, not as a backfill, waits for the CPU. */
void bs__throttle_run(bs__throttle_t *t);
/* The settings in force from now on (a reload's). */
void bs__throttle_settings(bs__throttle_t *t, const bs_cleaner_conf_t *cl);

/* Job slots: at most cleaner.jobs attempts at once in the process. begin
 * returns false when stop was set while it waited (no slot taken). */
bool bs__throttle_job_begin(bs__throttle_t *t, atomic_int *stop);
void bs__throttle_job_end(bs__throttle_t *t);

typedef enum { BS__THR_GO, BS__THR_WAIT, BS__THR_STOP } bs__thr_verdict_t;
typedef struct {
	bs__thr_verdict_t verdict;
	bs_throttle_state_t state; /* of the shard that decided (GO when all go) */
	int shard;                 /* that shard, -1 when all go */
	char signal[24];           /* the signal holding it, or that last cut the pace */
	double value, limit;
	char reason[256]; /* why it waits, or how it is paced ("" at full pace) */
	double pace;      /* the lowest pace over the shards */
	bool full;        /* every shard at its most */
	/* latency-free gate: the first shard over on the probe's latency
	 * alone, which would have paced or held the job ("" none) */
	char latency_ignored[64];
} bs__thr_gate_t;
/* The verdict for a job touching the shards in which[nshards] (NULL: all). */
void bs__throttle_gate(bs__thr_gate_t *out, bs__throttle_t *t, const bool *which);
/* The same for work the probe's latency neither holds nor paces (a move's
 * catch-up: see doc/DESIGN.md, "The throttle"): every other signal, and
 * failing closed, hold it as they hold any job. */
void bs__throttle_gate_latency_free(bs__thr_gate_t *out, bs__throttle_t *t, const bool *which);

/* Wait for a lane of shard (at most max_wait seconds): 0 entered (*t0 set,
 * for leave), 1 not yet (look again), -1 stop was set. */
int bs__throttle_enter(double *t0, bs__throttle_t *t, int shard, double max_wait, atomic_int *stop);
/* The same for work the probe's latency neither holds nor paces: a lane
 * over the latency alone is open to it, and the pause of a pace the
 * latency last cut does not apply to it. */
int bs__throttle_enter_latency_free(double *t0, bs__throttle_t *t, int shard, double max_wait, atomic_int *stop);
/* Leave a lane entered latency-free: it sets no pause (its statements do
 * not make other jobs on the shard wait out a pace they were not held
 * to). */
void bs__throttle_leave_latency_free(bs__throttle_t *t, int shard, double t0);
void bs__throttle_leave(bs__throttle_t *t, int shard, double t0);
/* Statements at once the shard may take from this process at most:
 * cleaner.writers, or the server's CPUs (waits for its first reading). */
int bs__throttle_writers(bs__throttle_t *t, int shard);

/* ------------------------------------------------------------ writers (writers.c) */

/* Per target shard, threads with connections of their own that run a
 * job's statements, each inside a lane of the throttle (at most
 * bs__throttle_writers threads a shard). stop (may be NULL) ends lane
 * waits. Freeing waits for the statements under way. */
typedef struct bs__writers bs__writers_t;
int bs__writers_new(bs__writers_t **out, const bs_config_t *cfg, bs__throttle_t *thr, atomic_int *stop);
void bs__writers_free(bs__writers_t *w);

/* A batch: statements that a job waits for as one (a chunk's). add queues
 * one at once, an INSERT of nrows rows as bs__shard_rows runs it (head,
 * tail and rows are borrowed until the batch is freed); wait returns
 * true when every statement ended, false after s seconds; result gives
 * the first failure (its message in the error slot), whether any was
 * skipped (aborted, or stop) and the seconds they ran; abort skips what
 * has not started; free aborts and waits. */
typedef struct bs__batch bs__batch_t;
int bs__batch_new(bs__batch_t **out, bs__writers_t *w);
int bs__batch_add(bs__batch_t *b, int shard, const char *head, const char *tail, const bs__param_t *const *rows,
                  int ncols, size_t nrows);
int bs__batch_wait(bs__batch_t *b, double s);
int bs__batch_result(const bs__batch_t *b, bool *skipped, double *busy);
void bs__batch_abort(bs__batch_t *b);
void bs__batch_free(bs__batch_t *b);

/* ------------------------------------------------------------ lag (lag.c) */

/* After a repair pass on shard: record the watermark, rows, repairs and a
 * lag sample (at most one per history step): the lag just before the
 * watermark moved, now minus prev_us (the watermark the pass started from;
 * 0 when there was none). */
int bs__lag_record(bs_store_t *st, int shard, int64_t watermark_us, int64_t prev_us, int64_t pass_rows, int64_t repairs,
                   int64_t fills, double pass_seconds);
/* A lag sample without a pass (now minus the watermark as it stands, at
 * most one per step): a pass that was blocked or failed on a shard that
 * answers still shows in the history. */
int bs__lag_sample(bs_store_t *st, int shard);
/* The watermark of shard (0 when never recorded). */
int bs__lag_watermark(int64_t *out, bs_store_t *st, int shard);

/* ------------------------------------------------------------ verify (verify.c) */

/* Remove the index's recorded verify on every shard (index drop). */
int bs__verify_forget(bs_store_t *st, const char *index);

/* ------------------------------------------------------------ lifecycle (lifecycle.c) */

/* The one promotion rule of doc/DESIGN.md's index lifecycle: a building
 * index becomes ready once every shard's backfill job is done, the
 * writers' catalog TTL has passed since its creation, a repair pass has
 * covered every entity updated since its creation minus that TTL, and a
 * sweep of the whole index has removed rows whose entity is gone (a
 * backfill racing deletes leaves some).
 * Waits out the rest of the TTL when needed. *promoted tells whether it is
 * ready now (false, without error, while jobs are not done, or when
 * opts->stop cut it short: the index stays building, its jobs done, and a
 * later call promotes it). */
int bs__index_promote(bool *promoted, bs_store_t *st, const char *name, const bs_cleaner_opts_t *opts);
/* An index the shards' catalogs disagree on (ix as bs_index_list merged
 * it): a drop cut short is finished; a create or promotion cut short gets
 * its row (and table) on every shard in the merged state. */
int bs__index_heal(bs_store_t *st, const bs_index_t *ix);

/* ------------------------------------------------------------ events (events.c) */

/* Send ev to opts->event (when there is one): at_us, index and message
 * filled when left zero. */
void bs__event_emit(const bs_cleaner_opts_t *opts, bs_event_t *ev);
/* The cleaner settings in force now: opts->live's copy, else cfg's. Read
 * it where a setting is used, each time: a reload takes effect there. */
void bs__cleaner_conf(bs_cleaner_conf_t *out, const bs_cleaner_opts_t *opts, const bs_config_t *cfg);

/* ------------------------------------------------------------ moves (reshard.c) */

/* A move's row as its runner needs it: the public view, its buckets and
 * its cursors. */
typedef struct {
	bs_move_t pub;
	int shard;    /* where its row is (the source) */
	int *buckets; /* ascending */
	int nb;
	uint8_t *in;            /* per bucket of the map: 1 when it moves */
	bool started_copy;      /* the source's buckets are leaving */
	int64_t cursor, max_id; /* copy and cleanup: added_id */
	char index_name[BS_NAME_MAX + 1];
	uint8_t index_cursor[16];
	int64_t src_watermark_us;
} bs__move_t;

void bs__move_free(bs__move_t *m);
/* The moves whose rows are on shard (its source moves), by id; the
 * latest plan's only. */
int bs__moves_on(bs__move_t **out, int *n, bs_store_t *st, int shard);
/* One move's row, read now. BS_ENOTFOUND when gone. */
int bs__move_read(bs__move_t *out, bs_store_t *st, int shard, int64_t id);
/* The GET_LOCK name of a move (at most 64 characters) into buf[65]. */
void bs__move_lock_name(char buf[65], const bs_store_t *st, int shard, int64_t id);
/* Is a move past its start and not done on any shard (backfills wait)?
 * why names it. */
int bs__moves_in_flight(bool *busy, char *why, size_t size, bs_store_t *st);
/* Buckets as text ranges "0-9,12" and back. */
void bs__buckets_format(bs_buf_t *b, const int *buckets, int n);
int bs__buckets_parse(int **out, int *n, const char *text, int max);

/* ------------------------------------------------------------ running moves (move.c) */

/* Run the moves of the latest plan, one thread per source shard (moves of
 * one source one after another). st is only read for its configuration:
 * each thread opens stores of its own. until_done as bs__backfill_run's. */
int bs__moves_run(bool *all_done, bs_store_t *st, const bs_cleaner_opts_t *opts, bool until_done);

/* ------------------------------------------------------------ misc */

/* Run one data-changing statement and return the rows it matched
 * (ROW_COUNT(); the connection reports found rows, not changed ones). */
int bs__exec_count(int64_t *matched, bs_store_t *st, int shard, bs_buf_t *sql);

/* Sleep up to s seconds, waking early when *stop is set. */
void bs__cleaner_sleep(double s, atomic_int *stop);
/* Has the caller asked the cleaner to stop? (opts or its flag may be NULL) */
static inline atomic_int *bs__stop_flag(const bs_cleaner_opts_t *opts)
{
	return opts ? opts->stop : NULL;
}
static inline bool bs__stopping(const bs_cleaner_opts_t *opts)
{
	return opts && opts->stop && atomic_load_explicit(opts->stop, memory_order_relaxed);
}
/* Is the error a shard that cannot be reached (wait and retry)? */
bool bs__cleaner_transient(int rc);
/* "host" of this machine and our pid. */
void bs__cleaner_worker_id(char host[64], int *pid);

#endif

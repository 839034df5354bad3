/*
 * backfill.c - running backfill jobs: one index on one source shard,
 * walking `entities` by added_id in keyset chunks, decoding bodies and
 * upserting index rows in multi-row batches to the shards that own them.
 *
 * A job runs on its own thread with a store of its own (the source store)
 * and hands each chunk's INSERTs to the run's writers (writers.c: threads
 * per target shard with connections of their own), reading the next chunk
 * while they write the current one, so reading, decoding and writing
 * overlap. Every statement on a shard, the reads included, runs inside one
 * of the throttle's lanes for that shard (throttle.c), and a gate before
 * each chunk waits while a shard the chunk touches is over a threshold.
 * The job's GET_LOCK lives on the source store's connection; the
 * checkpoint after every chunk is an UPDATE that only matches while that
 * connection still holds the lock and the job is still running, which is
 * how pause, cancel and a lost lock are noticed within one chunk.
 *
 * Rows are written with ON DUPLICATE KEY UPDATE entity_id=entity_id: a
 * backfill never overwrites a row a writer wrote (the post-backfill repair
 * covers the entities a writer changed since the index was created).
 */
#include "cleaner.h"

#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHUNK_START 2000
#define CHUNK_MIN 100
#define CHUNK_MAX 100000
#define ROWS_PER_INSERT 2000
#define ROWS_PER_INSERT_MIN 200 /* at the lowest pace: short statements */
#define SAY_AFTER 0.5           /* a throttle wait this long is said in the job row */
#define RATE_WINDOW_S 10.0
#define RATE_MIN_SPAN_S 2.0 /* a rate over less (one chunk after a resume) is a burst, not a rate */
#define RATE_SAMPLES 64

/* What one attempt at a job ended with. */
enum outcome { OUT_DONE, OUT_PAUSED, OUT_CANCELLED, OUT_FAILED, OUT_BUSY, OUT_WAIT, OUT_LOST, OUT_STOP };

/* One index row of a chunk: a sort key (the row's primary key, roughly:
 * the first property's bytes, then the entity id) and where its
 * parameters are. */
typedef struct {
	uint64_t lead; /* key's first 8 bytes as a number that sorts as they do */
	uint8_t key[40];
	uint32_t row; /* its parameters: the target's vals from row * ncols */
} crow_t;

/* A statement of a chunk: its rows in its target's sorted parameters. */
typedef struct {
	size_t from, n;
} stmt_t;

/* One target shard's rows of a chunk, for bs__shard_rows: each row's
 * parameters (its properties' values, then its entity id) as read, their
 * bytes copied (a row's bag is freed once its row is taken), then the rows
 * in key order, cut into statements. */
typedef struct {
	bs_buf_t bytes;             /* the rows' bytes */
	bs__param_t *vals;          /* ncols a row, as read; bytes' offsets in .u until emitted */
	crow_t *rowv;               /* a row's sort key, in key order once emitted */
	const bs__param_t **sorted; /* each row's parameters in key order */
	stmt_t *stmts;
	size_t rows, nstmts, valcap, rowcap, sortcap, stmtcap;
} target_t;

typedef struct {
	bs_buf_t head; /* "INSERT INTO `index` (..., entity_id) VALUES " */
	int ncols;     /* parameters a row */
	target_t *tg;  /* per target shard */
	int64_t scanned, written, last_id;
} chunk_t;

static const char ROWS_TAIL[] = " ON DUPLICATE KEY UPDATE entity_id=entity_id";

static void chunk_free(chunk_t *c, int n)
{
	for (int i = 0; c->tg && i < n; i++) {
		target_t *g = &c->tg[i];
		bs__buf_free(&g->bytes);
		free(g->vals);
		free(g->rowv);
		free(g->sorted);
		free(g->stmts);
	}
	bs__buf_free(&c->head);
	free(c->tg);
	memset(c, 0, sizeof *c);
}

static int chunk_init(chunk_t *c, int n)
{
	memset(c, 0, sizeof *c);
	if (!(c->tg = calloc((size_t)n, sizeof *c->tg)))
		return bs_error(BS_ENOMEM, "out of memory for a backfill chunk");
	return 0;
}

static void chunk_reset(chunk_t *c, int n)
{
	for (int i = 0; i < n; i++) {
		bs__buf_reset(&c->tg[i].bytes);
		c->tg[i].rows = c->tg[i].nstmts = 0;
	}
	c->scanned = c->written = 0;
}

/* A byte string that sorts as the column does, near enough for locality. */
static void sort_key(uint8_t key[24], const bs_value_t *v)
{
	memset(key, 0, 24);
	switch (v->type) {
	case BS_STR:
	case BS_BIN: memcpy(key, v->v.s.ptr, v->v.s.len < 24 ? v->v.s.len : 24); break;
	case BS_INT: {
		uint64_t u = (uint64_t)v->v.i ^ (1ull << 63);
		for (int k = 0; k < 8; k++)
			key[k] = (uint8_t)(u >> (56 - 8 * k));
		break;
	}
	case BS_FLOAT: {
		uint64_t u;
		memcpy(&u, &v->v.f, 8);
		u = (u >> 63) ? ~u : u | (1ull << 63);
		for (int k = 0; k < 8; k++)
			key[k] = (uint8_t)(u >> (56 - 8 * k));
		break;
	}
	case BS_BOOL: key[0] = v->v.b; break;
	default: break;
	}
}

/* Bytes p..len kept in target t's bytes: the parameter's offset there. */
static void keep_bytes(bs__param_t *p, bs_buf_t *b)
{
	p->u = b->len;
	bs__buf_putn(b, p->p, p->len);
	p->p = NULL;
}

static int chunk_add(chunk_t *c, int t, const bs_index_t *idx, const bs_value_t *const *vals, const void *id)
{
	target_t *g = &c->tg[t];
	size_t at = g->rows * (size_t)c->ncols;
	int rc = BS_ARRAY_GROW(g->rowv, g->rows, g->rowcap, 1024);
	if (!rc) /* grows past ncols: doubling from 1024 */
		rc = BS_ARRAY_GROW(g->vals, at + (size_t)c->ncols - 1, g->valcap, 1024);
	if (rc)
		return rc;
	crow_t *r = &g->rowv[g->rows];
	sort_key(r->key, vals[0]);
	memcpy(r->key + 24, id, 16);
	r->lead = 0;
	for (int k = 0; k < 8; k++)
		r->lead = r->lead << 8 | r->key[k];
	r->row = (uint32_t)g->rows++;
	bs__param_t *p = &g->vals[at];
	for (int k = 0; k < idx->nprops; k++) {
		p[k] = bs__param_value(vals[k], &idx->props[k]);
		if (p[k].type == BS__P_BYTES || p[k].type == BS__P_TEXT)
			keep_bytes(&p[k], &g->bytes);
	}
	p[idx->nprops] = (bs__param_t){ .type = BS__P_BYTES, .p = id, .len = 16 };
	keep_bytes(&p[idx->nprops], &g->bytes);
	c->written++;
	return 0;
}

static int crow_cmp(const void *a, const void *b)
{
	const crow_t *x = a, *y = b;
	if (x->lead != y->lead) /* most rows differ in their first 8 bytes */
		return x->lead < y->lead ? -1 : 1;
	return memcmp(x->key, y->key, 40);
}

/* Rows of each target in key order, cut into statements of per_insert
 * rows: sorted rows fill InnoDB's pages in order, which is most of the
 * write's cost. */
static int chunk_emit(chunk_t *c, int n, int64_t per_insert)
{
	size_t nc = (size_t)c->ncols;
	for (int t = 0; t < n; t++) {
		target_t *g = &c->tg[t];
		int rc;
		if (!g->rows)
			continue;
		if (g->sortcap < g->rows) {
			const bs__param_t **grown = realloc(g->sorted, g->rows * sizeof *grown);
			if (!grown)
				return bs__oom();
			g->sorted = grown;
			g->sortcap = g->rows;
		}
		for (size_t k = 0; k < g->rows * nc; k++) /* the bytes stay where they are now */
			if (g->vals[k].type == BS__P_BYTES || g->vals[k].type == BS__P_TEXT)
				g->vals[k].p = g->bytes.ptr + g->vals[k].u;
		qsort(g->rowv, g->rows, sizeof *g->rowv, crow_cmp);
		for (size_t k = 0; k < g->rows; k++)
			g->sorted[k] = &g->vals[(size_t)g->rowv[k].row * nc];
		for (size_t from = 0; from < g->rows; from += (size_t)per_insert) {
			if ((rc = BS_ARRAY_GROW(g->stmts, g->nstmts, g->stmtcap, 16)))
				return rc;
			size_t left = g->rows - from;
			g->stmts[g->nstmts++] = (stmt_t){ from, left < (size_t)per_insert ? left : (size_t)per_insert };
		}
	}
	return 0;
}

/* Build the chunk's index rows from res (added_id, id, body of entities
 * after `after`, in order). */
static int chunk_fill(chunk_t *c, MYSQL_RES *res, bs_store_t *st, const uint8_t *states, const bs_index_t *idx,
                      int64_t per_insert)
{
	MYSQL_ROW row;
	int rc = 0, n = st->n;
	bs__buf_reset(&c->head);
	bs__buf_index_insert(&c->head, idx);
	bs__buf_puts(&c->head, " VALUES ");
	c->ncols = idx->nprops + 1;
	while ((row = mysql_fetch_row(res))) {
		unsigned long *lens = mysql_fetch_lengths(res);
		bs_value_t bag;
		const bs_value_t *vals[BS_INDEX_MAX_PROPS];
		bs_value_t tmps[BS_INDEX_MAX_PROPS];
		c->scanned++;
		c->last_id = strtoll(row[0], NULL, 10);
		if (row[1] && lens[1] == 16 && states) {
			bs_id_t id;
			memcpy(id.b, row[1], 16);
			if (!bs__owns(states[bs_route_id(&id, st->map.buckets)]))
				continue;
		}
		if (!row[1] || lens[1] != 16 || !row[2] ||
		    bs__body_decode_row(&bag, row[2], lens[2], row[1], "backfill")) {
			bs_error_clear();
			continue; /* corrupt: no row; verify reports it */
		}
		int bucket, t = bs__index_row_route(vals, tmps, &bucket, idx, &bag, st, NULL);
		if (t >= 0 && !rc)
			rc = chunk_add(c, t, idx, vals, row[1]);
		for (int k = 0; t >= 0 && k < idx->nprops; k++)
			if (vals[k] == &tmps[k])
				bs_value_clear(&tmps[k]);
		bs_value_clear(&bag);
	}
	if (!rc)
		rc = bs__buf_ok(&c->head);
	for (int i = 0; i < n && !rc; i++)
		rc = bs__buf_ok(&c->tg[i].bytes);
	if (!rc)
		rc = chunk_emit(c, n, per_insert);
	return rc;
}

/* A backfill is background work: its threads yield the CPU to the
 * application's (on this host; the servers' threads are theirs to share). */
static void lower_priority(void)
{
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
}

/* The moves in flight as a run's runners last saw them: one looks (every
 * shard), the others take its answer for 2 s. Safe to share: none starts
 * while an index builds, and the run is of a building index. */
typedef struct {
	pthread_mutex_t lock;
	double at; /* monotonic; 0: never looked */
	bool busy;
	char why[200];
} moves_seen_t;

typedef struct {
	const bs_config_t *cfg;
	const char *index;
	int shard;
	moves_seen_t *moves; /* the run's, shared */
	const bs_cleaner_opts_t *opts;
	bs__throttle_t *thr; /* the process's, shared */
	bs__writers_t *wr;   /* the run's, shared */
	pthread_mutex_t *progress_lock;
	bool daemon; /* return on busy/paused/wait instead of waiting */
	/* kept across attempts */
	bs_store_t *src, *dst;
	char lock[65];
	char host[64];
	int pid;
	double moves_checked; /* monotonic: when a move in flight was last looked for */
	bool validated;       /* this attempt validated the job (a queued one is running since) */
	/* the job as this worker sees it */
	bs_job_t job;
	int64_t index_created_us;
	double samp_t[RATE_SAMPLES];
	int64_t samp_n[RATE_SAMPLES];
	int nsamp;
	/* events: this attempt claimed the job; it ended with its own event
	 * (done, failed); it is throttled (and why, for the event that ends it) */
	bool claimed, ended;
	bool throttled;
	char throttle_why[256];
	char release_msg[1100];
	/* result */
	enum outcome out;
	int rc;
	char msg[1024];
} runner_t;

/* ------------------------------------------------------------ job row */

static int src_exec(runner_t *r, bs_buf_t *b)
{
	int rc = bs__buf_ok(b);
	if (!rc)
		rc = bs__shard_exec(r->src, r->shard, b->ptr, b->len);
	return rc;
}

/* Run a job-row UPDATE; *matched gets the rows it matched. */
static int src_count(runner_t *r, bs_buf_t *b, int64_t *matched)
{
	return bs__exec_count(matched, r->src, r->shard, b);
}

static void where_mine(runner_t *r, bs_buf_t *b)
{
	bs__buf_puts(b, " WHERE index_name=");
	bs__buf_hex(b, r->index, strlen(r->index));
	/* before validate (a move waited for), a queued job claimed is ours too */
	bs__buf_puts(b, r->validated ? " AND state IN ('running','throttled') AND "
	                             : " AND state IN ('queued','running','throttled') AND ");
	bs__lock_held_sql(b, r->lock);
}

static double rate_now(runner_t *r, double now)
{
	if (r->nsamp < 2)
		return 0;
	int last = (r->nsamp - 1) % RATE_SAMPLES, first = last;
	/* the oldest sample within the window */
	for (int k = 1; k < r->nsamp && k < RATE_SAMPLES; k++) {
		int s = (r->nsamp - 1 - k) % RATE_SAMPLES;
		if (now - r->samp_t[s] > RATE_WINDOW_S)
			break;
		first = s;
	}
	double dt = r->samp_t[last] - r->samp_t[first];
	return dt >= RATE_MIN_SPAN_S ? (double)(r->samp_n[last] - r->samp_n[first]) / dt : 0;
}

static void sample(runner_t *r)
{
	int s = r->nsamp % RATE_SAMPLES;
	r->samp_t[s] = bs_now_mono();
	r->samp_n[s] = r->job.rows_scanned;
	r->nsamp++;
	r->job.rate = rate_now(r, r->samp_t[s]);
	r->job.eta_s = r->job.rate > 0 ? (double)(r->job.rows_total > r->job.rows_scanned
	                                                  ? r->job.rows_total - r->job.rows_scanned
	                                                  : 0) /
	                                         r->job.rate
	                               : -1;
}

static void report(runner_t *r)
{
	if (!r->opts || !r->opts->progress)
		return;
	r->job.heartbeat_us = bs_now_us();
	snprintf(r->job.worker_host, sizeof r->job.worker_host, "%s", r->host);
	r->job.worker_pid = r->pid;
	if (r->progress_lock)
		pthread_mutex_lock(r->progress_lock);
	r->opts->progress(r->opts->ctx, &r->job);
	if (r->progress_lock)
		pthread_mutex_unlock(r->progress_lock);
}

/* An event about this job (serialised with the progress callbacks). */
static void emit(runner_t *r, bs_event_type_t type, const char *msg, int code)
{
	if (!r->opts || !r->opts->event)
		return;
	bs_event_t ev = {
		.type = type, .shard = r->shard, .index = r->index, .message = msg, .code = code, .job = &r->job
	};
	r->job.heartbeat_us = bs_now_us();
	snprintf(r->job.worker_host, sizeof r->job.worker_host, "%s", r->host);
	r->job.worker_pid = r->pid;
	if (r->progress_lock)
		pthread_mutex_lock(r->progress_lock);
	bs__event_emit(r->opts, &ev);
	if (r->progress_lock)
		pthread_mutex_unlock(r->progress_lock);
}

/* The job runs (again): a throttle it was under is over. */
static void unthrottle(runner_t *r)
{
	if (!r->throttled)
		return;
	r->throttled = false;
	emit(r, BS_EV_THROTTLE_OFF, r->throttle_why, 0);
}

/* Say why the job waits (best effort: the source may be the one down).
 * Returns the rows matched: 0 when the job is no longer ours to run. */
static int64_t say_throttled(runner_t *r, const char *why)
{
	bs_buf_t b = { 0 };
	int64_t matched = 0;
	r->job.state = BS_JOB_THROTTLED;
	snprintf(r->job.reason, sizeof r->job.reason, "%s", why);
	if (!r->throttled) {
		r->throttled = true;
		snprintf(r->throttle_why, sizeof r->throttle_why, "%s", why);
		emit(r, BS_EV_THROTTLE_ON, why, 0);
	}
	/* the rate over the last 10 s goes on falling while the job is held
	 * (a held job's row kept its last chunk's, and its ETA shrank) */
	sample(r);
	bs__buf_printf(&b,
	               "UPDATE bagstore_jobs SET state='throttled', heartbeat=NOW(6), rate=%.3f, reason=", r->job.rate);
	bs__buf_hex(&b, r->job.reason, strlen(r->job.reason));
	where_mine(r, &b);
	src_count(r, &b, &matched);
	bs__buf_free(&b);
	bs_error_clear();
	report(r);
	return matched;
}

/* The checkpoint matched nothing: why? */
static enum outcome why_not_mine(runner_t *r)
{
	bs_job_t j;
	if (bs__job_read(&j, NULL, r->src, r->shard, r->index)) {
		if (bs_last_error_code() == BS_ENOTFOUND) {
			snprintf(r->msg, sizeof r->msg, "backfill of %s on shard %s: job removed", r->index,
			         r->src->shards[r->shard].conf->name);
			return OUT_CANCELLED;
		}
		return OUT_WAIT;
	}
	r->job.state = j.state;
	snprintf(r->job.reason, sizeof r->job.reason, "%s", j.reason);
	switch (j.state) {
	case BS_JOB_PAUSED: return OUT_PAUSED;
	case BS_JOB_CANCELLED: return OUT_CANCELLED;
	case BS_JOB_DONE: return OUT_DONE;
	case BS_JOB_FAILED: snprintf(r->msg, sizeof r->msg, "%s", j.reason); return OUT_FAILED;
	default: return OUT_LOST; /* another worker holds it now */
	}
}

static void release_lock(runner_t *r)
{
	bs__lock_release(r->src, r->shard, r->lock);
}

/* ------------------------------------------------------------ one attempt */

static enum outcome fail_with(runner_t *r, int rc)
{
	r->rc = rc;
	snprintf(r->msg, sizeof r->msg, "%s", bs_last_error());
	return bs__cleaner_transient(rc) ? OUT_WAIT : OUT_FAILED;
}

/* Run a job-row UPDATE that only matches while the job is ours to run.
 * Returns true when it matched; otherwise *out says why not. */
static bool job_update(runner_t *r, bs_buf_t *b, enum outcome *out)
{
	int64_t matched = 0;
	int rc = src_count(r, b, &matched);
	if (rc)
		*out = fail_with(r, rc);
	else if (matched == 0)
		*out = why_not_mine(r);
	return !rc && matched > 0;
}

/* Mark the job failed with reason m (best effort) and report it. */
static void job_fail(runner_t *r, const char *m)
{
	bs_buf_t b = { 0 };
	bs__buf_puts(&b, "UPDATE bagstore_jobs SET state='failed', heartbeat=NOW(6), reason=");
	bs__buf_hex(&b, m, strlen(m));
	where_mine(r, &b);
	src_exec(r, &b);
	bs__buf_free(&b);
	bs_error_clear();
	r->job.state = BS_JOB_FAILED;
	snprintf(r->job.reason, sizeof r->job.reason, "%s", m);
	report(r);
	r->ended = true;
	emit(r, BS_EV_JOB_FAILED, m, r->rc ? r->rc : BS_ERROR);
}

/* An attempt's working state: two chunks (one written while the next is
 * read), the shards the current one touches, the chunk size, the pace the
 * throttle gave and how long the job has waited for it. */
typedef struct {
	chunk_t cur, next;
	bool *which; /* the shards the current chunk touches */
	bool *one;   /* scratch: one shard */
	bs_index_t idx;
	int64_t chunk;
	bool slow;
	int64_t per_insert;    /* rows per INSERT, from the pace */
	char pace_reason[256]; /* how the throttle paces it ("" at full pace) */
	double wait_since;     /* the throttle holds it since (monotonic), 0 not */
	double said_at;        /* the job row last said so */
	bool moved;            /* it waited for a move: the map and chunk read again */
} attempt_t;

/* Step 1, claim: take the job's lock and read its row; OUT_* when it is
 * not ours to run now, -1 when it is. */
static int claim(runner_t *r)
{
	const char *sname = r->src->shards[r->shard].conf->name;
	bool got = false;
	int rc;
	if ((rc = bs__lock_try(&got, r->src, r->shard, r->lock)) ||
	    (rc = bs__job_read(&r->job, &r->index_created_us, r->src, r->shard, r->index)))
		return fail_with(r, rc);
	switch (r->job.state) {
	case BS_JOB_DONE: return OUT_DONE;
	case BS_JOB_CANCELLED:
		snprintf(r->msg, sizeof r->msg, "backfill of %s on shard %s was cancelled", r->index, sname);
		return OUT_CANCELLED;
	case BS_JOB_FAILED:
		snprintf(r->msg, sizeof r->msg, "backfill of %s on shard %s failed: %s", r->index, sname,
		         r->job.reason);
		return OUT_FAILED;
	case BS_JOB_PAUSED: return OUT_PAUSED;
	default:
		if (got && r->job.state == BS_JOB_THROTTLED && !r->throttled) {
			/* held when an earlier attempt ended (a daemon's each pass, a
			 * wait for a move): its throttle_on was said then, not again;
			 * throttle_off is said when the job goes on */
			r->throttled = true;
			snprintf(r->throttle_why, sizeof r->throttle_why, "%s", r->job.reason);
		}
		return got ? -1 : OUT_BUSY;
	}
}

/* Step 2, validate: the index must still be the one the job was queued
 * for; fix the high-water mark and total when the job first starts; mark
 * the job running. -1 when it may go on, else the outcome. */
static int validate(runner_t *r, bs_index_t *idx)
{
	bs_buf_t b = { 0 };
	MYSQL_RES *res = NULL;
	enum outcome out;
	int rc, ret = -1;
	if ((rc = bs_index_get(idx, r->dst, r->index))) {
		if (rc != BS_ENOTFOUND)
			return fail_with(r, rc);
		snprintf(r->msg, sizeof r->msg, "backfill of %s: the index is gone", r->index);
		return OUT_CANCELLED;
	}
	if (idx->state == BS_INDEX_DISABLED || idx->created_us != r->index_created_us) {
		bs__buf_puts(&b,
		             "UPDATE bagstore_jobs SET state='cancelled', reason='the index was disabled or re-created'"
		             " WHERE index_name=");
		bs__buf_hex(&b, r->index, strlen(r->index));
		/* this job's row only: a re-created index's job may have replaced it */
		bs__buf_printf(&b, " AND index_created_us=%lld", (long long)r->index_created_us);
		src_exec(r, &b);
		snprintf(r->msg, sizeof r->msg, "backfill of %s: the index was disabled or re-created", r->index);
		ret = OUT_CANCELLED;
		goto done;
	}
	if (r->job.max_id < 0) {
		static const char q[] = "SELECT COALESCE(MAX(added_id),0), COUNT(*) FROM entities";
		if ((rc = bs__shard_query(&res, r->src, r->shard, q, sizeof q - 1))) {
			ret = fail_with(r, rc);
			goto done;
		}
		MYSQL_ROW row = mysql_fetch_row(res);
		r->job.max_id = row && row[0] ? strtoll(row[0], NULL, 10) : 0;
		r->job.rows_total = row && row[1] ? strtoll(row[1], NULL, 10) : 0;
	}
	bs__buf_printf(&b,
	               "UPDATE bagstore_jobs SET state='running', reason='', heartbeat=NOW(6),"
	               " started=COALESCE(started,NOW(6)), max_id=%lld, rows_total=%lld, worker_pid=%d, worker_host=",
	               (long long)r->job.max_id, (long long)r->job.rows_total, r->pid);
	bs__buf_hex(&b, r->host, strlen(r->host));
	bs__buf_puts(&b, " WHERE index_name=");
	bs__buf_hex(&b, r->index, strlen(r->index));
	bs__buf_puts(&b, " AND state IN ('queued','running','throttled')");
	if (!job_update(r, &b, &out)) {
		ret = out;
		goto done;
	}
	r->job.state = BS_JOB_RUNNING;
	r->job.reason[0] = '\0';
	r->nsamp = 0;
	sample(r);
	report(r);
	r->claimed = r->validated = true;
	emit(r, BS_EV_JOB_CLAIMED, "", 0);
	unthrottle(r);
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return ret;
}

/* What the throttle says of the shards in which: into the job (for the
 * progress callback), and the attempt's pace. */
static void gate_look(bs__thr_gate_t *g, runner_t *r, attempt_t *a, const bool *which)
{
	bs_cleaner_conf_t cl;
	bs__cleaner_conf(&cl, r->opts, r->cfg); /* the settings in force now (SIGHUP) */
	bs__throttle_settings(r->thr, &cl);
	bs__throttle_gate(g, r->thr, which);
	snprintf(r->job.throttle_signal, sizeof r->job.throttle_signal, "%s", g->signal);
	r->job.throttle_value = g->value;
	r->job.throttle_limit = g->limit;
	r->job.pace = g->pace;
	if (g->verdict == BS__THR_GO) {
		double p = g->pace < 1 ? g->pace : 1;
		a->per_insert = (int64_t)(ROWS_PER_INSERT * p);
		if (a->per_insert < ROWS_PER_INSERT_MIN)
			a->per_insert = ROWS_PER_INSERT_MIN;
		snprintf(a->pace_reason, sizeof a->pace_reason, "%s", g->reason);
	}
}

/* The throttle holds the job (g says why): the job row says so, again
 * every SAY_AFTER (which is also how a pause or a cancel is noticed
 * meanwhile); a wait on the probe's latency, which comes and goes with
 * the pace, or on the first readings, only once it has lasted SAY_AFTER.
 * -1 to wait on, else the outcome. */
static int held(runner_t *r, attempt_t *a, const bs__thr_gate_t *g)
{
	double now = bs_now_mono();
	if (!a->wait_since)
		a->wait_since = now;
	if (bs__stopping(r->opts))
		return OUT_STOP;
	bool soft = !strcmp(g->signal, "write_latency") || g->state == BS_THR_STARTING;
	if ((soft && now - a->wait_since < SAY_AFTER) || now - a->said_at < SAY_AFTER)
		return -1;
	const char *why = g->reason;
	a->said_at = now;
	if (say_throttled(r, why) == 0)
		return why_not_mine(r);
	return -1;
}

/* The throttle does not let the job go (g says why): a shard above
 * critical_load fails it, saying how to resume; otherwise it waits (held).
 * -1 to wait on, else the outcome. */
static int not_go(runner_t *r, attempt_t *a, const bs__thr_gate_t *g)
{
	if (g->verdict == BS__THR_STOP) {
		char m[256];
		snprintf(m, sizeof m, "stopped: %.140s (resume with `bagstore backfill resume %.64s`)", g->reason,
		         r->index);
		snprintf(r->msg, sizeof r->msg, "backfill of %s on shard %s %s", r->index,
		         r->src->shards[r->shard].conf->name, m);
		job_fail(r, m);
		return OUT_FAILED;
	}
	return held(r, a, g);
}

/* The throttle, before a chunk: -1 go; -2 wait and look again; else the
 * outcome that ends the attempt. */
/* Backfills and moves take turns (doc/DESIGN.md, "Moves"): a backfill's
 * multi-row upserts are not fenced row by row, so it waits while a move is
 * in flight. Looked at every 2 s at most. -1 go, -2 look again, else the
 * outcome. strict: moves that cannot be listed end the attempt (before the
 * job starts); else the throttle's own check holds it. */
static int moves_gate(runner_t *r, bool strict)
{
	char why[200], m[256];
	bool busy = false;
	int rc = 0;
	double seen = bs_now_mono(); /* when the answer used was asked for */
	if (seen - r->moves_checked < 2.0)
		return -1;
	pthread_mutex_lock(&r->moves->lock);
	if (r->moves->at > 0 && seen - r->moves->at < 2.0) {
		busy = r->moves->busy;
		seen = r->moves->at;
		snprintf(why, sizeof why, "%s", r->moves->why);
	} else if (!(rc = bs__moves_in_flight(&busy, why, sizeof why, r->dst))) {
		r->moves->at = seen;
		r->moves->busy = busy;
		snprintf(r->moves->why, sizeof r->moves->why, "%s", why);
	}
	pthread_mutex_unlock(&r->moves->lock);
	if (rc && strict) /* before the job starts: not known, not started */
		return fail_with(r, rc);
	if (rc) {
		bs_error_clear(); /* the throttle's own check says which shard is down */
		return -1;
	}
	if (!busy) {
		r->moves_checked = seen;
		return -1;
	}
	snprintf(m, sizeof m, "waiting: a reshard is moving buckets (%.180s)", why);
	if (say_throttled(r, m) == 0)
		return why_not_mine(r);
	bs__cleaner_sleep(1.0, bs__stop_flag(r->opts));
	return -2;
}

static int throttle_gate(runner_t *r, attempt_t *a)
{
	bs__thr_gate_t g;
	int out;
	if ((out = moves_gate(r, false)) == -2)
		a->moved = true;
	if (out != -1)
		return out;
	for (int i = 0; i < r->src->n; i++)
		a->which[i] = a->cur.tg[i].rows > 0 || i == r->shard;
	gate_look(&g, r, a, a->which);
	if (g.verdict != BS__THR_GO) {
		if ((out = not_go(r, a, &g)) >= 0)
			return out;
		bs__cleaner_sleep(g.state == BS_THR_STARTING ? 0.01 : 0.05, bs__stop_flag(r->opts));
		return -2;
	}
	a->wait_since = 0;
	return -1;
}

/* A lane of shard for one of this job's statements: -1 entered (*t0 set),
 * else the outcome that ends the attempt. While it waits, the job row says
 * why (held). */
static int lane_wait(double *t0, runner_t *r, attempt_t *a, int shard)
{
	int e, out;
	while ((e = bs__throttle_enter(t0, r->thr, shard, 0.1, bs__stop_flag(r->opts))) == 1) {
		bs__thr_gate_t g;
		memset(a->one, 0, (size_t)r->src->n * sizeof *a->one);
		a->one[shard] = true;
		gate_look(&g, r, a, a->one);
		if (g.verdict == BS__THR_GO)
			continue; /* the pace itself: no reason to give */
		if ((out = not_go(r, a, &g)) >= 0)
			return out;
	}
	return e < 0 ? OUT_STOP : -1;
}

/* Read the chunk after `after` on the source shard (inside a lane of it)
 * and build its index rows. 0, or an error; *out an outcome that ends the
 * attempt (-1 none). */
static int chunk_read(int *out, runner_t *r, attempt_t *a, chunk_t *c, int64_t after)
{
	bs_buf_t q = { 0 };
	MYSQL_RES *res = NULL;
	double t0;
	int rc = 0;
	*out = -1;
	chunk_reset(c, r->src->n);
	c->last_id = after;
	if (after >= r->job.max_id)
		return 0;
	if ((rc = bs__map_need(r->src)))
		return rc;
	bs__buf_printf(&q,
	               "SELECT added_id, id, body, " BS__OV_SQL " FROM entities WHERE added_id>%lld AND added_id<=%lld"
	               " ORDER BY added_id LIMIT %lld",
	               (long long)after, (long long)r->job.max_id, (long long)a->chunk);
	if ((rc = bs__buf_ok(&q)) || (*out = lane_wait(&t0, r, a, r->shard)) >= 0)
		goto done;
	/* the shard's own entities: the copies it holds for a move are indexed
	 * by their owner's job (backfills and moves take turns); read again
	 * (up to 4 times) until the ownership read matches the rows' version */
	const uint8_t *states = NULL;
	for (int round = 0;; round++) {
		bool exact = false;
		if ((rc = bs__shard_query(&res, r->src, r->shard, q.ptr, q.len)))
			break;
		MYSQL_ROW first = mysql_fetch_row(res);
		mysql_data_seek(res, 0);
		if (!first ||
		    (rc = bs__owned_at(&states, &exact, r->src, r->shard,
		                       first[3] ? strtoll(first[3], NULL, 10) : -1)) ||
		    exact || round == 4)
			break;
		mysql_free_result(res);
		res = NULL;
	}
	bs__throttle_leave(r->thr, r->shard, t0);
	if (!rc)
		rc = chunk_fill(c, res, r->src, states, &a->idx, a->per_insert);
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&q);
	return rc;
}

/* The next chunk size: aim at cleaner.chunk_time per chunk. */
static int64_t next_chunk_size(const attempt_t *a, double elapsed, const bs_cleaner_conf_t *cl)
{
	int64_t chunk = a->chunk;
	double target = cl->chunk_time > 0 ? cl->chunk_time : 0.5;
	if (a->slow)
		return CHUNK_MIN;
	if (a->cur.scanned >= chunk && elapsed > 0) {
		double f = target / elapsed;
		f = f < 0.5 ? 0.5 : f > 2 ? 2 : f;
		chunk = (int64_t)((double)chunk * f);
		chunk = chunk < CHUNK_MIN ? CHUNK_MIN : chunk > CHUNK_MAX ? CHUNK_MAX : chunk;
	}
	return chunk;
}

/* Hand the current chunk's statements to the writers. */
static int chunk_submit(bs__batch_t **out, runner_t *r, attempt_t *a)
{
	int rc = bs__batch_new(out, r->wr);
	for (int t = 0; t < r->src->n && !rc; t++) {
		const target_t *g = &a->cur.tg[t];
		for (size_t k = 0; k < g->nstmts && !rc; k++)
			rc = bs__batch_add(*out, t, a->cur.head.ptr, ROWS_TAIL, g->sorted + g->stmts[k].from,
			                   a->cur.ncols, g->stmts[k].n);
	}
	return rc;
}

/* Wait for the chunk's statements, saying so in the job row while the
 * throttle holds them. -1 when they all ended (*rc their result), else the
 * outcome that ends the attempt (the batch aborted). */
static int chunk_wait(int *rc, runner_t *r, attempt_t *a, bs__batch_t *b)
{
	bool skipped = false;
	int out = -1;
	while (!bs__batch_wait(b, 0.1)) {
		bs__thr_gate_t g;
		gate_look(&g, r, a, a->which);
		if (g.verdict == BS__THR_GO) {
			a->wait_since = 0;
			continue;
		}
		if ((out = not_go(r, a, &g)) >= 0)
			break;
	}
	if (out >= 0) {
		bs__batch_abort(b);
		while (!bs__batch_wait(b, 1.0))
			;
		return out;
	}
	*rc = bs__batch_result(b, &skipped, NULL);
	if (!*rc && skipped)
		return OUT_STOP; /* stop was set while statements waited for a lane */
	return -1;
}

/* Step 3, one chunk: the writers write the current chunk's rows while this
 * thread reads the next, then checkpoint. -1 to go on, else the outcome. */
static int chunk_step(runner_t *r, attempt_t *a)
{
	bs_buf_t b = { 0 };
	bs__batch_t *batch = NULL;
	enum outcome out;
	int ret = -1, wrc = 0, rout = -1, rrc;
	double t0 = bs_now_mono();
	char rmsg[1024] = "";
	if (a->slow) /* fault point: small, slow chunks, for tests that interrupt a backfill */
		bs__cleaner_sleep(0.05, NULL);
	if ((wrc = chunk_submit(&batch, r, a))) {
		bs__batch_free(batch);
		return fail_with(r, wrc);
	}
	if ((rrc = chunk_read(&rout, r, a, &a->next, a->cur.last_id)))
		snprintf(rmsg, sizeof rmsg, "%s", bs_last_error());
	if (rout >= 0) {
		bs__batch_free(batch);
		return rout;
	}
	int wout = chunk_wait(&wrc, r, a, batch);
	bs__batch_free(batch);
	if (wout >= 0)
		return wout;
	if (wrc) {
		char wmsg[1024], m[1100];
		snprintf(wmsg, sizeof wmsg, "%s", bs_last_error());
		snprintf(m, sizeof m, "waiting for a shard: %s", wmsg);
		if (bs__cleaner_transient(wrc))
			say_throttled(r, m);
		bs_error(wrc, "%s", wmsg);
		return fail_with(r, wrc);
	}
	/* checkpoint */
	r->job.cursor = a->cur.last_id;
	r->job.rows_scanned += a->cur.scanned;
	r->job.rows_written += a->cur.written;
	sample(r);
	double elapsed = bs_now_mono() - t0;
	bs_cleaner_conf_t cl;
	bs__cleaner_conf(&cl, r->opts, r->cfg); /* the settings in force now (SIGHUP) */
	a->chunk = next_chunk_size(a, elapsed, &cl);
	r->job.chunk = a->chunk;
	bs__buf_printf(&b,
	               "UPDATE bagstore_jobs SET state='running', heartbeat=NOW(6), cursor_id=%lld,"
	               " rows_scanned=%lld, rows_written=%lld, rate=%.3f, chunk=%lld, reason=",
	               (long long)r->job.cursor, (long long)r->job.rows_scanned, (long long)r->job.rows_written,
	               r->job.rate, (long long)a->chunk);
	bs__buf_hex(&b, a->pace_reason, strlen(a->pace_reason));
	where_mine(r, &b);
	if (!job_update(r, &b, &out)) {
		ret = out;
		goto done;
	}
	r->job.state = BS_JOB_RUNNING;
	snprintf(r->job.reason, sizeof r->job.reason, "%s", a->pace_reason);
	report(r);
	unthrottle(r);
	emit(r, BS_EV_JOB_PROGRESS, "", 0);
	if (rrc) {
		bs_error(rrc, "%s", rmsg);
		ret = fail_with(r, rrc);
		goto done;
	}
	/* pacing, once the chunk is recorded: leave the servers (and the
	 * writers) time between chunks */
	if (cl.sleep_coef > 0)
		bs__cleaner_sleep(elapsed * cl.sleep_coef, bs__stop_flag(r->opts));
	chunk_t t = a->cur;
	a->cur = a->next;
	a->next = t;
done:
	bs__buf_free(&b);
	return ret;
}

/* Step 4, finish: every chunk done; the job row says so. */
static enum outcome finish(runner_t *r)
{
	bs_buf_t b = { 0 };
	enum outcome out = OUT_DONE;
	bs__buf_printf(&b,
	               "UPDATE bagstore_jobs SET state='done', reason='', heartbeat=NOW(6), finished=NOW(6),"
	               " cursor_id=GREATEST(cursor_id,max_id), rows_scanned=%lld, rows_written=%lld, rate=%.3f",
	               (long long)r->job.rows_scanned, (long long)r->job.rows_written, r->job.rate);
	where_mine(r, &b);
	if (job_update(r, &b, &out)) {
		r->job.state = BS_JOB_DONE;
		r->job.eta_s = 0;
		report(r);
		r->ended = true;
		emit(r, BS_EV_JOB_DONE, "", 0);
		out = OUT_DONE;
	}
	bs__buf_free(&b);
	return out;
}

/* Why a job this worker had claimed is no longer its own. */
static const char *released_why(runner_t *r, enum outcome out)
{
	static const char *const why[] = {
		[OUT_DONE] = "done by another worker",
		[OUT_PAUSED] = "paused",
		[OUT_CANCELLED] = "cancelled",
		[OUT_FAILED] = "failed",
		[OUT_BUSY] = "held by another worker",
		[OUT_WAIT] = "waiting for a shard",
		[OUT_LOST] = "taken by another worker",
		[OUT_STOP] = "stopped: queued for any worker; it resumes from its checkpoint",
	};
	if (out == OUT_WAIT || out == OUT_FAILED || out == OUT_CANCELLED) {
		snprintf(r->release_msg, sizeof r->release_msg, "%s%s%s", why[out], r->msg[0] ? ": " : "", r->msg);
		return r->release_msg;
	}
	return (unsigned)out < sizeof why / sizeof *why ? why[out] : "released";
}

/* How an attempt ends, whatever the outcome: a failure the job row should
 * show, a stop that leaves it for any worker, the lock released. */
static void wind_up(runner_t *r, enum outcome out)
{
	if (out == OUT_FAILED && r->rc) { /* an error no wait cures: the job says it */
		char m[256];
		snprintf(m, sizeof m, "%.255s", r->msg);
		job_fail(r, m);
	}
	if (out == OUT_STOP) { /* asked to stop: the job waits for any worker */
		bs_buf_t b = { 0 };
		bs__buf_puts(&b, "UPDATE bagstore_jobs SET state='queued', reason='its worker stopped; it resumes from "
		                 "its checkpoint'");
		where_mine(r, &b);
		src_exec(r, &b);
		bs__buf_free(&b);
		bs_error_clear();
	}
	if (out != OUT_WAIT || r->src->shards[r->shard].conn)
		release_lock(r);
	if (r->claimed && !r->ended)
		emit(r, BS_EV_JOB_RELEASED, released_why(r, out), 0);
	r->claimed = r->ended = r->throttled = r->validated = false;
}

/* One attempt at the job: claim, validate, chunks until the end (or until
 * it cannot go on), finish. */
static enum outcome attempt(runner_t *r)
{
	attempt_t a = { 0 };
	int out, rc;

	r->rc = 0;
	r->msg[0] = '\0';
	if ((rc = chunk_init(&a.cur, r->src->n)) || (rc = chunk_init(&a.next, r->src->n)) ||
	    !(a.which = calloc((size_t)r->src->n, sizeof *a.which)) ||
	    !(a.one = calloc((size_t)r->src->n, sizeof *a.one))) {
		out = fail_with(r, rc ? rc : bs__oom());
		goto done;
	}
	if ((out = claim(r)) >= 0)
		goto done;
	/* a move in flight first (backfills and moves take turns): the
	 * high-water mark validate fixes must count the rows a move copies
	 * here, and the chunks route by the map the move leaves (a store
	 * kept across attempts has the map it read first) */
	r->moves_checked = 0;
	while ((out = moves_gate(r, true)) == -2) {
		if (bs__stopping(r->opts)) {
			out = OUT_STOP;
			goto done;
		}
		if (r->daemon) { /* said in the job's row; the daemon's pass (its moves) goes on */
			snprintf(r->msg, sizeof r->msg, "a reshard is moving buckets");
			out = OUT_WAIT;
			goto done;
		}
	}
	if (out >= 0)
		goto done;
	if ((rc = bs__map_reload(r->src))) {
		out = fail_with(r, rc);
		goto done;
	}
	if ((out = validate(r, &a.idx)) >= 0)
		goto done;
	a.slow = bs_fault(BS_FAULT_SLOW_CHUNK);
	a.chunk = a.slow ? CHUNK_MIN : r->job.chunk > 0 ? r->job.chunk : CHUNK_START;
	a.per_insert = ROWS_PER_INSERT;
	if ((rc = chunk_read(&out, r, &a, &a.cur, r->job.cursor)) || out >= 0) {
		if (rc)
			out = fail_with(r, rc);
		goto done;
	}
	while (a.cur.scanned > 0) {
		if (bs__stopping(r->opts)) {
			out = OUT_STOP;
			goto done;
		}
		if ((out = throttle_gate(r, &a)) == -2)
			continue;
		if (out == -1 && a.moved) {
			/* a move ran while the job waited (none starts while an
			 * index builds; one in flight the check above missed): the
			 * chunk read before it again, by the map it left */
			a.moved = false;
			if ((rc = bs__map_reload(r->src)) || (rc = chunk_read(&out, r, &a, &a.cur, r->job.cursor)) ||
			    out >= 0) {
				if (rc)
					out = fail_with(r, rc);
				goto done;
			}
			continue;
		}
		if (out >= 0 || (out = chunk_step(r, &a)) >= 0)
			goto done;
	}
	out = finish(r);
done:
	wind_up(r, (enum outcome)out);
	chunk_free(&a.cur, r->src->n);
	chunk_free(&a.next, r->src->n);
	free(a.which);
	free(a.one);
	return (enum outcome)out;
}

/* Run a job until it ends (done, cancelled, failed) or, for the daemon,
 * until someone else has it or it cannot go on now. */
static void *runner_thread(void *p)
{
	runner_t *r = p;
	int rc;
	mysql_thread_init();
	lower_priority();
	bs_error_clear();
	bs__cleaner_worker_id(r->host, &r->pid);
	if ((rc = bs_store_open(&r->src, r->cfg)) || (rc = bs_store_open(&r->dst, r->cfg))) {
		r->out = OUT_FAILED;
		r->rc = rc;
		snprintf(r->msg, sizeof r->msg, "%s", bs_last_error());
		goto done;
	}
	bs__job_lock_name(r->lock, r->src, r->shard, r->index);
	snprintf(r->job.index, sizeof r->job.index, "%s", r->index);
	r->job.shard = r->shard;
	for (;;) {
		if (!bs__throttle_job_begin(r->thr, bs__stop_flag(r->opts))) {
			r->out = OUT_STOP; /* asked to stop while it waited for a slot: claims nothing */
			break;
		}
		r->out = attempt(r);
		bs__throttle_job_end(r->thr);
		if (r->out == OUT_DONE || r->out == OUT_CANCELLED || r->out == OUT_FAILED || r->out == OUT_STOP)
			break;
		if (bs__stopping(r->opts)) {
			r->out = OUT_STOP;
			break;
		}
		if (r->out == OUT_PAUSED) {
			r->job.state = BS_JOB_PAUSED;
			report(r);
		} else if (r->out == OUT_WAIT) {
			r->job.state = BS_JOB_THROTTLED;
			snprintf(r->job.reason, sizeof r->job.reason, "waiting: %.240s", r->msg);
			report(r);
		}
		if (r->daemon)
			break;
		bs__cleaner_sleep(r->out == OUT_WAIT ? 1.0 : 0.5, bs__stop_flag(r->opts));
	}
done:
	bs_store_free(r->src);
	bs_store_free(r->dst);
	r->src = r->dst = NULL;
	mysql_thread_end();
	return NULL;
}

/* Run the jobs of index on the shards in which (NULL: all) at once. With
 * daemon, each returns as soon as it cannot go on. *all_done tells whether
 * every job ended done. Not through bs__shard_each: it runs a shard on the
 * caller's thread, whose priority a runner would lower for good (and the
 * next throttle's samplers inherit it), and a runner's outcome is more
 * than a code (done, paused, cancelled). */
static int run_jobs(bool *all_done, bs_store_t *st, const char *index, const bs_cleaner_opts_t *opts, bool daemon)
{
	int n = st->n, rc = 0;
	runner_t *rs = calloc((size_t)n, sizeof *rs);
	pthread_t *tids = calloc((size_t)n, sizeof *tids);
	bool *started = calloc((size_t)n, sizeof *started);
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	moves_seen_t moves = { .lock = PTHREAD_MUTEX_INITIALIZER };
	bs__throttle_t *thr = NULL;
	bs__writers_t *wr = NULL;
	*all_done = false;
	if (!rs || !tids || !started) {
		rc = bs_error(BS_ENOMEM, "out of memory starting backfill workers");
		goto done;
	}
	if ((rc = bs__throttle_open(&thr, st->cfg)) || (rc = bs__writers_new(&wr, st->cfg, thr, bs__stop_flag(opts))))
		goto done;
	/* the samplers start here, on the caller's thread: a thread inherits its
	 * creator's priority, and the probe must not wait as a backfill does */
	bs__throttle_run(thr);
	for (int i = 0; i < n; i++) {
		rs[i] = (runner_t){ .cfg = st->cfg,
			            .index = index,
			            .shard = i,
			            .moves = &moves,
			            .opts = opts,
			            .thr = thr,
			            .wr = wr,
			            .progress_lock = &lock,
			            .daemon = daemon };
		if (pthread_create(&tids[i], NULL, runner_thread, &rs[i]) == 0)
			started[i] = true;
		else
			runner_thread(&rs[i]);
	}
	for (int i = 0; i < n; i++)
		if (started[i])
			pthread_join(tids[i], NULL);
	*all_done = true;
	for (int i = 0; i < n; i++) {
		if (rs[i].out != OUT_DONE)
			*all_done = false;
		if (!rc && (rs[i].out == OUT_FAILED || rs[i].out == OUT_CANCELLED)) {
			rc = rs[i].out == OUT_CANCELLED ? BS_ECONFLICT : (rs[i].rc ? rs[i].rc : BS_ERROR);
			/* an error from below names its shard, not the job: say which */
			if (!strncmp(rs[i].msg, "backfill of ", 12))
				bs_error(rc, "%s", rs[i].msg);
			else
				bs_error(rc, "backfill of %s on shard %s: %s", index, st->shards[i].conf->name,
				         rs[i].msg[0] ? rs[i].msg : "failed");
		}
	}
done:
	bs__writers_free(wr);
	bs__throttle_close(thr);
	free(rs);
	free(tids);
	free(started);
	return rc;
}

int bs__backfill_run(bool *all_done, bs_store_t *st, const char *index, const bs_cleaner_opts_t *opts, bool until_done)
{
	return run_jobs(all_done, st, index, opts, !until_done);
}

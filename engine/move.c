/*
 * move.c - running a reshard's moves (doc/DESIGN.md, "Moves"): per source
 * shard, its moves one after another, each through its phases (copy, index
 * rows, catch-up and the cut-over fence, the roll-forward, cleanup; undo
 * when cancelled), checkpointing into its bagstore_moves row after every
 * chunk with an UPDATE that only matches while this worker holds the
 * move's GET_LOCK on the source and the row says running.
 *
 * Two stores per runner, as a backfill's: src holds the lock, reads the
 * source and runs the cut-over's transaction; dst writes the target (and
 * reads whatever else a phase needs).
 */
#include "cleaner.h"

#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CHUNK_START 2000
#define CHUNK_MIN 100
#define CHUNK_MAX 20000
#define FLUSH_BYTES (4u << 20) /* a multi-row statement's size */
#define LOG_BATCH 1000         /* change-log rows per replay round */
#define LOG_SMALL 500          /* a round under this: try the cut-over */
#define RATE_WINDOW_S 10.0
#define RATE_SAMPLES 64

/* What an attempt at a move ended with (the first member keeps the enum
 * signed: phase steps return these or GO / AGAIN). */
enum outcome {
	OUT_SIGNED_ = -100,
	OUT_DONE = 0,
	OUT_PAUSED,
	OUT_CANCELLED,
	OUT_FAILED,
	OUT_BUSY,
	OUT_WAIT,
	OUT_LOST,
	OUT_STOP
};
#define GO (-1)    /* a phase step: go on */
#define AGAIN (-2) /* a phase step: look again (throttled) */

typedef struct {
	const bs_config_t *cfg;
	int shard; /* the source whose moves this runs */
	const bs_cleaner_opts_t *opts;
	pthread_mutex_t *progress_lock;
	bool daemon;
	bs_store_t *src, *dst;
	bs__throttle_t *thr;
	char host[64];
	int pid;
	/* the move being run */
	bs__move_t m;
	char lock[65];
	int t; /* its target shard */
	int64_t chunk;
	bool slow;
	bool in_lanes; /* holding a lane of the source and of the target */
	double lane_t0[2];
	/* the probe's latency neither holds nor paces the chunks (catch-up),
	 * and note says so while it is over (the row's reason while running) */
	bool latency_free;
	char note[256];
	double samp_t[RATE_SAMPLES];
	int64_t samp_n[RATE_SAMPLES];
	int nsamp;
	/* result */
	enum outcome out;
	int rc;
	char msg[1024];
	bool all_done, cancelled;
} mover_t;

/* ------------------------------------------------------------ small things */

static int64_t *phase_counter(mover_t *r)
{
	bs_move_t *p = &r->m.pub;
	switch (p->phase) {
	case BS_MOVE_INDEX: return &p->index_rows;
	case BS_MOVE_CATCHUP: return &p->log_rows;
	default: return &p->rows_scanned;
	}
}

static void sample(mover_t *r)
{
	int s = r->nsamp % RATE_SAMPLES, first = s;
	double now = bs_now_mono();
	r->samp_t[s] = now;
	r->samp_n[s] = *phase_counter(r);
	r->nsamp++;
	for (int k = 1; k < r->nsamp && k < RATE_SAMPLES; k++) {
		int x = (r->nsamp - 1 - k) % RATE_SAMPLES;
		if (now - r->samp_t[x] > RATE_WINDOW_S)
			break;
		first = x;
	}
	double dt = r->samp_t[s] - r->samp_t[first];
	r->m.pub.rate = dt > 0 ? (double)(r->samp_n[s] - r->samp_n[first]) / dt : r->m.pub.rate;
}

static void report(mover_t *r)
{
	if (!r->opts || !r->opts->move_progress)
		return;
	r->m.pub.heartbeat_us = bs_now_us();
	snprintf(r->m.pub.worker_host, sizeof r->m.pub.worker_host, "%s", r->host);
	r->m.pub.worker_pid = r->pid;
	bs_move_t p = r->m.pub;
	if (r->m.pub.rate > 0) { /* ETA from this worker's rate */
		int64_t rows = p.rows_total;
		double left = p.phase == BS_MOVE_COPY      ? (double)(rows - p.rows_scanned + p.index_total + rows)
		              : p.phase == BS_MOVE_INDEX   ? (double)(p.index_total - p.index_rows + rows)
		              : p.phase == BS_MOVE_CLEANUP ? (double)(rows - p.rows_scanned)
		                                           : -1;
		p.eta_s = left >= 0 ? left / p.rate : -1;
	}
	if (r->progress_lock)
		pthread_mutex_lock(r->progress_lock);
	r->opts->move_progress(r->opts->ctx, &p);
	if (r->progress_lock)
		pthread_mutex_unlock(r->progress_lock);
}

static const char *tname(const mover_t *r)
{
	return r->m.pub.target;
}

static enum outcome fail_with(mover_t *r, int rc)
{
	r->rc = rc;
	snprintf(r->msg, sizeof r->msg, "%s", bs_last_error());
	return bs__cleaner_transient(rc) ? OUT_WAIT : OUT_FAILED;
}

/* " WHERE move_id=M AND <this worker runs it>" */
static void where_mine(mover_t *r, bs_buf_t *b)
{
	bs__buf_printf(b, " WHERE move_id=%lld AND state IN ('running','throttled') AND ", (long long)r->m.pub.id);
	bs__lock_held_sql(b, r->lock);
}

/* The row matched nothing: why? */
static enum outcome why_not_mine(mover_t *r)
{
	bs__move_t now;
	if (bs__move_read(&now, r->src, r->shard, r->m.pub.id))
		return bs_last_error_code() == BS_ENOTFOUND ? OUT_CANCELLED : OUT_WAIT;
	r->m.pub.state = now.pub.state;
	snprintf(r->m.pub.reason, sizeof r->m.pub.reason, "%s", now.pub.reason);
	bs__move_free(&now);
	switch (r->m.pub.state) {
	case BS_JOB_PAUSED: return OUT_PAUSED;
	case BS_JOB_CANCELLED: return OUT_CANCELLED;
	case BS_JOB_DONE: return OUT_DONE;
	case BS_JOB_FAILED: snprintf(r->msg, sizeof r->msg, "%s", r->m.pub.reason); return OUT_FAILED;
	default: return OUT_LOST;
	}
}

/* An UPDATE of the move's row (sets, then where_mine): GO when it matched. */
static int row_update(mover_t *r, const char *sets)
{
	bs_buf_t b = { 0 };
	int64_t matched = 0;
	int rc, out = GO;
	bs__buf_printf(&b, "UPDATE bagstore_moves SET heartbeat=NOW(6), %s", sets);
	where_mine(r, &b);
	if ((rc = bs__exec_count(&matched, r->src, r->shard, &b)))
		out = fail_with(r, rc);
	else if (!matched)
		out = why_not_mine(r);
	bs__buf_free(&b);
	return out;
}

/* Checkpoint the move's counters and cursors, state running. */
static int checkpoint(mover_t *r)
{
	bs_buf_t s = { 0 };
	const bs_move_t *p = &r->m.pub;
	int out;
	sample(r);
	static const char *const sql[] = { "copy", "index", "catchup", "cutover", "cleanup", "done", "undo" };
	const char *ph = (unsigned)p->phase < sizeof sql / sizeof *sql ? sql[p->phase] : "copy";
	bs__buf_puts(&s, "state='running', reason=");
	bs__buf_hex(&s, r->note, strlen(r->note));
	bs__buf_puts(&s, ", phase=");
	bs__buf_hex(&s, ph, strlen(ph));
	bs__buf_printf(&s,
	               ", cursor_id=%lld, max_id=%lld, rows_total=%lld,"
	               " rows_scanned=%lld, rows_copied=%lld, index_total=%lld, index_rows=%lld, log_rows=%lld,"
	               " rate=%.3f, chunk=%lld, started_copy=%d, index_name=",
	               (long long)r->m.cursor, (long long)r->m.max_id, (long long)p->rows_total,
	               (long long)p->rows_scanned, (long long)p->rows_copied, (long long)p->index_total,
	               (long long)p->index_rows, (long long)p->log_rows, p->rate, (long long)r->chunk,
	               r->m.started_copy ? 1 : 0);
	bs__buf_hex(&s, r->m.index_name, strlen(r->m.index_name));
	bs__buf_puts(&s, ", index_cursor=");
	bs__buf_hex(&s, r->m.index_cursor, 16);
	out = bs__buf_ok(&s) ? fail_with(r, BS_ENOMEM) : row_update(r, s.ptr);
	bs__buf_free(&s);
	if (out == GO) {
		r->m.pub.state = BS_JOB_RUNNING;
		snprintf(r->m.pub.reason, sizeof r->m.pub.reason, "%s", r->note);
		report(r);
	}
	return out;
}

static void new_phase(mover_t *r, bs_move_phase_t ph)
{
	r->m.pub.phase = ph;
	r->nsamp = 0;
	r->m.pub.rate = 0;
	r->m.cursor = 0;
	r->m.index_name[0] = '\0';
	memset(r->m.index_cursor, 0, 16);
}

/* Say why the move waits (best effort); 0 when it is no longer ours. */
static int64_t say_throttled(mover_t *r, const char *why)
{
	bs_buf_t b = { 0 };
	int64_t matched = 0;
	r->m.pub.state = BS_JOB_THROTTLED;
	snprintf(r->m.pub.reason, sizeof r->m.pub.reason, "%s", why);
	bs__buf_puts(&b, "UPDATE bagstore_moves SET state='throttled', heartbeat=NOW(6), reason=");
	bs__buf_hex(&b, r->m.pub.reason, strlen(r->m.pub.reason));
	where_mine(r, &b);
	bs__exec_count(&matched, r->src, r->shard, &b);
	bs__buf_free(&b);
	bs_error_clear();
	report(r);
	return matched;
}

/* Before a chunk: GO, AGAIN (throttled: looked again later) or an outcome.
 * The backfills' throttle (throttle.c) over the source and the target. */
static int gate_once(mover_t *r)
{
	bool *which = calloc((size_t)r->src->n, sizeof *which);
	bs__thr_gate_t g;
	int out = GO;
	bs_cleaner_conf_t cl;
	if (!which)
		return fail_with(r, bs__oom());
	which[r->shard] = which[r->t] = true;
	bs__cleaner_conf(&cl, r->opts, r->cfg); /* the settings in force now (SIGHUP) */
	bs__throttle_settings(r->thr, &cl);
	if (r->latency_free)
		bs__throttle_gate_latency_free(&g, r->thr, which);
	else
		bs__throttle_gate(&g, r->thr, which);
	/* the same words while it holds (the numbers move every round: a
	 * reason that changed is a line in the cleaner's log) */
	if (r->latency_free && g.latency_ignored[0])
		snprintf(r->note, sizeof r->note, "catch-up not paced by the writers' latency on shard %.64s",
		         g.latency_ignored);
	else
		r->note[0] = '\0';
	if (g.verdict == BS__THR_STOP) {
		snprintf(r->msg, sizeof r->msg, "stopped: %.200s (resume with `bagstore reshard resume`)", g.reason);
		out = OUT_FAILED;
	} else if (g.verdict == BS__THR_WAIT && g.state == BS_THR_STARTING) {
		bs__cleaner_sleep(0.05, bs__stop_flag(r->opts)); /* the first readings: a moment */
		out = AGAIN;
	} else if (g.verdict == BS__THR_WAIT) {
		out = say_throttled(r, g.reason) ? AGAIN : why_not_mine(r);
		if (out == AGAIN)
			bs__cleaner_sleep(0.5, bs__stop_flag(r->opts));
	}
	free(which);
	return out;
}

/* One lane of shard, taken and left as the phase asks (latency-free in
 * catch-up). */
static int lane_enter(mover_t *r, int shard, double *t0)
{
	return (r->latency_free ? bs__throttle_enter_latency_free : bs__throttle_enter)(t0, r->thr, shard, 0.1,
	                                                                                bs__stop_flag(r->opts));
}

static void lane_leave(mover_t *r, int shard, double t0)
{
	(r->latency_free ? bs__throttle_leave_latency_free : bs__throttle_leave)(r->thr, shard, t0);
}

/* Leave the lanes a chunk held (none held: nothing). */
static void lanes_leave(mover_t *r)
{
	if (!r->in_lanes)
		return;
	if (r->t != r->shard)
		lane_leave(r, r->t, r->lane_t0[1]);
	lane_leave(r, r->shard, r->lane_t0[0]);
	r->in_lanes = false;
}

/* A lane of the source, then of the target, as a backfill's statements
 * take them: the pace the throttle sets (statements at once, or a share of
 * the time) holds moves too, and their load counts as the job's, not as the
 * probe's idle baseline. While it waits, the gate is looked at again (a
 * signal over holds the move, critical load fails it). GO holding both, or
 * an outcome holding none. */
static int lanes_enter(mover_t *r)
{
	int sh[2] = { r->shard, r->t }, e, out = GO;
	for (int k = 0; k < (r->t != r->shard ? 2 : 1); k++)
		while ((e = lane_enter(r, sh[k], &r->lane_t0[k])) != 0)
			if (e < 0 || ((out = gate_once(r)) != GO && out != AGAIN)) {
				if (k)
					lane_leave(r, sh[0], r->lane_t0[0]);
				return e < 0 ? OUT_STOP : out;
			}
	r->in_lanes = true;
	return GO;
}

/* Before a chunk: the previous chunk's lanes left, the gate, then a lane
 * on each side held until the next chunk's gate (or the phase's end). */
static int throttle_gate(mover_t *r)
{
	int out;
	lanes_leave(r);
	if ((out = gate_once(r)) == GO)
		out = lanes_enter(r);
	if (out == GO && r->slow)
		bs__cleaner_sleep(0.05, NULL);
	return out;
}

static void next_chunk(mover_t *r, int64_t got, double elapsed)
{
	bs_cleaner_conf_t cl;
	bs__cleaner_conf(&cl, r->opts, r->cfg);
	double target = cl.chunk_time > 0 ? cl.chunk_time : 0.5;
	if (r->slow) {
		r->chunk = CHUNK_MIN;
		return;
	}
	if (got >= r->chunk && elapsed > 0) {
		double f = target / elapsed;
		f = f < 0.5 ? 0.5 : f > 2 ? 2 : f;
		r->chunk = (int64_t)((double)r->chunk * f);
		r->chunk = r->chunk < CHUNK_MIN ? CHUNK_MIN : r->chunk > CHUNK_MAX ? CHUNK_MAX : r->chunk;
	}
	if (cl.sleep_coef > 0)
		bs__cleaner_sleep(elapsed * cl.sleep_coef, bs__stop_flag(r->opts));
}

static void fault(const mover_t *r, bs_fault_t point)
{
	if (bs_fault(point)) {
		fprintf(stderr, "bagstore: fault %s: move %lld (%s to %s) exits here\n", bs_fault_name(point),
		        (long long)r->m.pub.id, r->m.pub.source, r->m.pub.target);
		bs__fault_exit();
	}
}

/* A phase's chunk: its work, *got the rows it went through. */
typedef int (*chunk_fn)(mover_t *r, int64_t *got);

/* A phase's chunks, each behind the throttle's gate and checkpointed
 * after it (a SIGKILL resumes from the last checkpoint). With more, the
 * phase goes on while more(r), asked before each chunk; without, until a
 * chunk goes through no row, which is not checkpointed (the caller's
 * new_phase and checkpoint follow). kill: the fault point after the first
 * chunk's checkpoint (BS_FAULT_COUNT: none). GO when the chunks are done. */
static int run_chunks(mover_t *r, chunk_fn chunk, bool (*more)(const mover_t *r), bs_fault_t kill)
{
	int out;
	for (bool first = true;; first = false) {
		int64_t got = 0;
		double t0 = bs_now_mono();
		if (more && !more(r))
			return GO;
		if (bs__stopping(r->opts))
			return OUT_STOP;
		if ((out = throttle_gate(r)) == AGAIN)
			continue;
		if (out != GO)
			return out;
		int rc = chunk(r, &got);
		if (rc)
			return fail_with(r, rc);
		next_chunk(r, got, bs_now_mono() - t0);
		if (!more && !got)
			return GO;
		if ((out = checkpoint(r)) != GO)
			return out;
		if (first && kill != BS_FAULT_COUNT)
			fault(r, kill);
	}
}

/* Run sql on the target through dst. */
static int on_target(mover_t *r, const bs_buf_t *b)
{
	int rc = bs__buf_ok(b);
	if (!rc)
		rc = bs__shard_check(r->dst, r->t);
	if (!rc)
		rc = bs__shard_exec(r->dst, r->t, b->ptr, b->len);
	return rc;
}

static int on_source(mover_t *r, const bs_buf_t *b)
{
	int rc = bs__buf_ok(b);
	if (!rc)
		rc = bs__shard_exec(r->src, r->shard, b->ptr, b->len);
	return rc;
}

/* " bucket IN (...)" of the move's buckets */
static void in_buckets(bs_buf_t *b, const mover_t *r)
{
	bs__buf_puts(b, " bucket IN (-1");
	for (int k = 0; k < r->m.nb; k++)
		bs__buf_printf(b, ",%d", r->m.buckets[k]);
	bs__buf_puts(b, ")");
}

/* The maintained indexes (building or ready), by name; *n of them. */
static int maintained(bs_index_list_t *l, bs_store_t *st)
{
	int rc = bs_index_list(l, st), m = 0;
	if (rc)
		return rc;
	for (int k = 0; k < l->len; k++)
		if (l->items[k].state != BS_INDEX_DISABLED)
			l->items[m++] = l->items[k];
	l->len = m;
	return 0;
}

/* ------------------------------------------------------------ begin (phase copy) */

/* The target takes the buckets as incoming; the source gives them up as
 * leaving (waiting for the writers inside: every write after is logged). */
static int mark_buckets(mover_t *r)
{
	bs_buf_t b = { 0 };
	MYSQL_RES *res = NULL;
	int rc;
	/* the target must not own any of them (the plan would be stale) */
	bs__buf_puts(&b, "SELECT COUNT(*) FROM bagstore_buckets WHERE state IN " BS__OWNING_SQL " AND");
	in_buckets(&b, r);
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, r->dst, r->t, b.ptr, b.len)))
		goto done;
	MYSQL_ROW row = mysql_fetch_row(res);
	if (row && row[0] && strcmp(row[0], "0")) {
		rc = bs_error(BS_ECONFLICT, "move %lld: the target %s already owns %s of its buckets: plan again",
		              (long long)r->m.pub.id, tname(r), row[0]);
		goto done;
	}
	bs__buf_reset(&b);
	bs__buf_puts(&b, "START TRANSACTION;" BS__OWNERSHIP_DML
	                 "INSERT INTO bagstore_buckets (bucket, state, peer, move_id) VALUES ");
	for (int k = 0; k < r->m.nb; k++) {
		bs__buf_printf(&b, "%s(%d,'incoming',", k ? "," : "", r->m.buckets[k]);
		bs__buf_hex(&b, r->m.pub.source, strlen(r->m.pub.source));
		bs__buf_printf(&b, ",%lld)", (long long)r->m.pub.id);
	}
	bs__buf_puts(&b, " ON DUPLICATE KEY UPDATE state='incoming', peer=VALUES(peer), move_id=VALUES(move_id);"
	                 "UPDATE bagstore_meta SET v=v+1 WHERE k='owned_version';COMMIT");
	if ((rc = on_target(r, &b)))
		goto done;
	bs__buf_reset(&b);
	bs__buf_puts(&b, "START TRANSACTION;" BS__OWNERSHIP_DML "UPDATE bagstore_buckets SET state='leaving', peer=");
	bs__buf_hex(&b, tname(r), strlen(tname(r)));
	bs__buf_printf(&b, ", move_id=%lld WHERE (state='owned' OR (state='leaving' AND move_id=%lld)) AND",
	               (long long)r->m.pub.id, (long long)r->m.pub.id);
	in_buckets(&b, r);
	/* the buckets' fence rows go in this transaction whatever the
	 * trigger did: a trigger missing (a dump restored without them)
	 * must not leave fast writes landing unlogged in leaving buckets */
	bs__buf_printf(&b,
	               ";SET @bs_n=ROW_COUNT();" BS__OWNERSHIP_DML
	               "DELETE FROM bagstore_owned WHERE bucket IN (SELECT bucket FROM bagstore_buckets WHERE"
	               " move_id=%lld AND state='leaving');UPDATE bagstore_meta SET v=v+1 WHERE k='owned_version';"
	               "SELECT @bs_n",
	               (long long)r->m.pub.id);
	if (res)
		mysql_free_result(res);
	res = NULL;
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, r->src, r->shard, b.ptr, b.len)))
		goto done;
	row = mysql_fetch_row(res);
	if (!row || !row[0] || atoi(row[0]) != r->m.nb) {
		bs__shard_exec(r->src, r->shard, "ROLLBACK", 8);
		rc = bs_error(BS_ECONFLICT, "move %lld: the source %s owns %s of its %d buckets: plan again",
		              (long long)r->m.pub.id, r->m.pub.source, row && row[0] ? row[0] : "none of", r->m.nb);
		goto done;
	}
	rc = bs__shard_exec(r->src, r->shard, "COMMIT", 6);
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

/* Give the buckets back to the source (owned again); the log goes. */
static int unmark_source(mover_t *r)
{
	bs_buf_t b = { 0 };
	bs__buf_printf(&b,
	               "START TRANSACTION;UPDATE bagstore_buckets SET state='owned', peer='', move_id=0"
	               " WHERE move_id=%lld AND state='leaving';UPDATE bagstore_meta SET v=v+1"
	               " WHERE k='owned_version';COMMIT;DELETE FROM bagstore_move_log WHERE move_id=%lld",
	               (long long)r->m.pub.id, (long long)r->m.pub.id);
	int rc = on_source(r, &b);
	bs__buf_free(&b);
	return rc;
}

/* The high-water mark and the totals, once the buckets are leaving. */
static int copy_totals(mover_t *r)
{
	static const char q[] =
		"SELECT COALESCE(MAX(added_id),0), COUNT(*),"
		" (SELECT COALESCE(SUM(t.TABLE_ROWS),0) FROM information_schema.TABLES t JOIN bagstore_indexes x"
		"  ON x.name=t.TABLE_NAME WHERE t.TABLE_SCHEMA=DATABASE() AND x.state<>'disabled') FROM entities";
	MYSQL_RES *res;
	int rc = bs__shard_query(&res, r->src, r->shard, q, sizeof q - 1);
	if (rc)
		return rc;
	MYSQL_ROW row = mysql_fetch_row(res);
	r->m.max_id = row && row[0] ? strtoll(row[0], NULL, 10) : 0;
	r->m.pub.rows_total = row && row[1] ? strtoll(row[1], NULL, 10) : 0;
	int owned = 0;
	for (int b = 0; b < r->src->map.buckets; b++)
		owned += r->src->map.owner[b] == r->shard;
	double share = owned ? (double)r->m.nb / owned : 0;
	r->m.pub.index_total = row && row[2] ? (int64_t)((double)strtoll(row[2], NULL, 10) * share) : 0;
	mysql_free_result(res);
	return 0;
}

/* The target's incoming rows of this move go (an undo, or a start that
 * gave its buckets back). */
static int unmark_target(mover_t *r)
{
	bs_buf_t b = { 0 };
	bs__buf_printf(&b,
	               "START TRANSACTION;DELETE FROM bagstore_buckets WHERE move_id=%lld AND state='incoming';"
	               "UPDATE bagstore_meta SET v=v+1 WHERE k='owned_version';COMMIT",
	               (long long)r->m.pub.id);
	int rc = on_target(r, &b);
	bs__buf_free(&b);
	return rc;
}

/* An index building (backfills and moves take turns): 1 and why, 0 none,
 * or an error. */
static int building(char *why, size_t size, mover_t *r)
{
	bs_index_list_t l = { 0 };
	int rc = maintained(&l, r->dst), found = 0;
	for (int k = 0; !rc && k < l.len && !found; k++)
		if (l.items[k].state == BS_INDEX_BUILDING) {
			snprintf(why, size, "waiting: index %s is building (backfills and moves take turns)",
			         l.items[k].name);
			found = 1;
		}
	bs_index_list_free(&l);
	return rc ? rc : found; /* BS_E* codes are negative */
}

/* The buckets given back on both sides, and the row says nothing is
 * marked: started_copy cleared (a kill before that checkpoint leaves it
 * set with nothing marked, which the next begin gives back again). GO,
 * or the outcome; a failure keeps its own error. */
static int give_back(mover_t *r)
{
	int rc;
	if ((rc = unmark_source(r)) || (rc = unmark_target(r)))
		return fail_with(r, rc);
	r->m.started_copy = false;
	return checkpoint(r);
}

/* The move's start: no index building (backfills and moves take turns),
 * the buckets marked, the totals; GO, AGAIN or an outcome. The row says
 * started_copy before the buckets change: from there a cancel owes an
 * undo (a kill or a failure before the totals leaves them marked), and
 * backfills wait. It says the copy began once max_id is fixed. */
static int begin(mover_t *r)
{
	int rc, out = GO, b;
	char why[200] = "";
	if (r->m.started_copy && r->m.max_id >= 0)
		return GO;
	/* looked at before the buckets change, so that a long backfill does
	 * not have them marked and given back every second; and after, for
	 * an index made meanwhile */
	if ((b = building(why, sizeof why, r)) < 0)
		return fail_with(r, b);
	if (!b) {
		if (!r->m.started_copy) {
			r->m.started_copy = true;
			if ((out = checkpoint(r)) != GO)
				return out;
		}
		if ((rc = bs__map_reload(r->src)) || (rc = mark_buckets(r))) {
			/* not marked (a stale plan, a lock wait): given back, so that
			 * backfills do not wait for a move that cannot start */
			char msg[1024];
			snprintf(msg, sizeof msg, "%s", bs_last_error());
			if ((out = give_back(r)) != GO)
				return out;
			bs_error(rc, "%s", msg);
			return fail_with(r, rc);
		}
		fault(r, BS_FAULT_MOVE_KILL_MARKED);
		if ((b = building(why, sizeof why, r)) < 0)
			return fail_with(r, b);
	}
	/* an index building: whatever this or an earlier attempt marked is
	 * given back before the move waits (a backfill waits while
	 * started_copy says a move began, and would wait for this one) */
	if (b && r->m.started_copy && (out = give_back(r)) != GO)
		return out;
	if (b) {
		if (!say_throttled(r, why))
			return why_not_mine(r);
		bs__cleaner_sleep(1.0, bs__stop_flag(r->opts));
		return AGAIN;
	}
	if ((rc = copy_totals(r)))
		return fail_with(r, rc);
	new_phase(r, BS_MOVE_COPY);
	if ((out = checkpoint(r)) == GO)
		out = row_update(r, "started=COALESCE(started,NOW(6))");
	return out;
}

/* ------------------------------------------------------------ copying entities */

/* Row at of SELECT id, updated, body has a version that reads as a time:
 * digits, dashes, colons, a space and a point, MySQL's own text. The
 * version goes on as that text: both sessions' time zone is UTC (every
 * connection's, bs__shard_prepare), so the text is the instant, and a
 * literal costs the target a fraction of what FROM_UNIXTIME of a decimal
 * does per row (doc/DESIGN.md, "Bulk put"). */
static int version_ok(MYSQL_ROW row, const unsigned long *lens, int at, const mover_t *r)
{
	const char *v = row[at + 1];
	if (!v || lens[at + 1] < 19 || lens[at + 1] > 26 || strspn(v, "0123456789-: .") != lens[at + 1] ||
	    v[0] == '0') {
		char hex[33];
		bs_id_t id;
		memcpy(id.b, row[at], 16);
		bs_id_hex(hex, &id);
		return bs_error(BS_ESQL, "shard %s: entity %s's version is '%.40s', not a time: the move stops",
		                r->src->shards[r->shard].conf->name, hex, v ? v : "NULL");
	}
	return 0;
}

static bool moving_id(const mover_t *r, const void *id)
{
	bs_id_t x;
	memcpy(x.b, id, 16);
	return r->m.in[bs_route_id(&x, r->src->map.buckets)] != 0;
}

#define COPY_ROWS 500 /* a statement's rows at most */

/* Entity rows upserted into the target, the newer version winning, up to
 * COPY_ROWS a statement (bs__shard_rows: a bulk execution, the bodies
 * binary, where the server takes it): the copy's and the catch-up's. The
 * values are borrowed from a result that stays until the last flush. */
typedef struct {
	bs__param_t p[COPY_ROWS][3];
	const bs__param_t *rows[COPY_ROWS];
	size_t n, bytes; /* rows waiting, and their size as text */
	int64_t sent;    /* rows sent so far */
} copier_t;

static int copier_flush(mover_t *r, copier_t *c)
{
	int64_t affected;
	int rc = 0;
	if (!c->n)
		return 0;
	if (!(rc = bs__shard_check(r->dst, r->t)))
		rc = bs__shard_rows(&affected, r->dst, r->t, "INSERT INTO entities (id, updated, body) VALUES ",
		                    " ON DUPLICATE KEY UPDATE body=IF(VALUES(updated)>updated,VALUES(body),body),"
		                    " updated=GREATEST(updated,VALUES(updated))",
		                    c->rows, 3, c->n);
	if (!rc)
		c->sent += (int64_t)c->n;
	c->n = c->bytes = 0;
	return rc;
}

/* Row at of SELECT id, updated, body, its version checked. */
static int copier_add(mover_t *r, copier_t *c, MYSQL_ROW row, const unsigned long *lens, int at)
{
	int rc = version_ok(row, lens, at, r);
	if (rc)
		return rc;
	bs__param_t *p = c->p[c->n];
	p[0] = (bs__param_t){ .type = BS__P_BYTES, .p = row[at], .len = 16 };
	p[1] = (bs__param_t){ .type = BS__P_TEXT, .p = row[at + 1], .len = lens[at + 1] };
	p[2] = (bs__param_t){ .type = BS__P_BYTES, .p = row[at + 2], .len = lens[at + 2] };
	c->rows[c->n] = p;
	c->bytes += 2 * (size_t)lens[at + 2] + 100; /* as text: the body in hex, the rest */
	return ++c->n == COPY_ROWS || c->bytes > FLUSH_BYTES ? copier_flush(r, c) : 0;
}

/* One chunk of the source's entities, the moving ones upserted into the
 * target; *got the rows read. */
static int copy_chunk(mover_t *r, int64_t *got)
{
	bs_buf_t q = { 0 };
	MYSQL_RES *res = NULL;
	copier_t *c = calloc(1, sizeof *c);
	int rc;
	*got = 0;
	BS_ERR_ALLOC(c);
	/* the versions are read as the session's text: a session checked to be UTC */
	if ((rc = bs__shard_check(r->src, r->shard)))
		goto done;
	bs__buf_printf(&q,
	               "SELECT added_id, id, updated, body FROM entities WHERE added_id>%lld"
	               " AND added_id<=%lld ORDER BY added_id LIMIT %lld",
	               (long long)r->m.cursor, (long long)r->m.max_id, (long long)r->chunk);
	if ((rc = bs__buf_ok(&q)) || (rc = bs__shard_query(&res, r->src, r->shard, q.ptr, q.len)))
		goto done;
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res))) {
		unsigned long *lens = mysql_fetch_lengths(res);
		(*got)++;
		r->m.cursor = strtoll(row[0], NULL, 10);
		if (!row[1] || lens[1] != 16 || !row[3] || !moving_id(r, row[1]))
			continue;
		if ((rc = copier_add(r, c, row, lens, 1)))
			goto done;
	}
	if (!(rc = copier_flush(r, c)))
		r->m.pub.rows_scanned += *got;
done:
	r->m.pub.rows_copied += c->sent;
	free(c);
	if (res)
		mysql_free_result(res);
	bs__buf_free(&q);
	return rc;
}

/* Phase copy: chunks up to the high-water mark, then phase index. */
static int phase_copy(mover_t *r)
{
	int out;
	if ((out = begin(r)) != GO || (out = run_chunks(r, copy_chunk, NULL, BS_FAULT_MOVE_KILL_COPY)) != GO)
		return out;
	new_phase(r, BS_MOVE_INDEX);
	return checkpoint(r);
}

/* ------------------------------------------------------------ copying index rows */

/* The next maintained index after name ("": the first); "" when none. */
static int next_index(bs_index_t *out, bool *found, mover_t *r, const char *name)
{
	bs_index_list_t l = { 0 };
	int rc = maintained(&l, r->dst);
	*found = false;
	for (int k = 0; !rc && k < l.len && !*found; k++)
		if (strcmp(l.items[k].name, name) > 0) {
			*out = l.items[k];
			*found = true;
		}
	bs_index_list_free(&l);
	return rc;
}

/* One chunk of the source's rows of idx (by entity_id), those of moving
 * buckets inserted into the target without overwriting; *got rows read. */
/* One chunk of idx's rows copied; *sql_errno: MySQL's error number of
 * the side whose statement failed (source or target), 0 else. */
static int index_chunk(mover_t *r, const bs_index_t *idx, int64_t *got, unsigned *sql_errno)
{
	bs_buf_t q = { 0 }, w = { 0 };
	MYSQL_RES *res = NULL;
	bs_value_t *vals = NULL;
	bs__param_t *p = NULL;
	const bs__param_t **rows = NULL;
	size_t n = 0, nc = (size_t)idx->nprops + 1;
	int rc;
	*got = 0;
	*sql_errno = 0;
	bs__buf_puts(&q, "SELECT ");
	for (int k = 0; k < idx->nprops; k++) {
		bs__buf_ident(&q, idx->props[k].name);
		bs__buf_puts(&q, ",");
	}
	bs__buf_puts(&q, "entity_id FROM ");
	bs__buf_ident(&q, idx->name);
	bs__buf_puts(&q, " WHERE entity_id>");
	bs__buf_hex(&q, r->m.index_cursor, 16);
	bs__buf_printf(&q, " ORDER BY entity_id LIMIT %lld", (long long)r->chunk);
	if ((rc = bs__buf_ok(&q)) || (rc = bs__shard_query(&res, r->src, r->shard, q.ptr, q.len))) {
		if (rc == BS_ESQL)
			*sql_errno = bs__shard_last_errno(r->src, r->shard);
		goto done;
	}
	/* each row's values decoded and kept (its parameters borrow them) until
	 * the one statement is sent */
	size_t most = (size_t)mysql_num_rows(res) + 1;
	vals = calloc(most * nc, sizeof *vals);
	p = calloc(most * nc, sizeof *p);
	rows = calloc(most, sizeof *rows);
	if (!vals || !p || !rows) {
		rc = bs__oom();
		goto done;
	}
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res))) {
		unsigned long *lens = mysql_fetch_lengths(res);
		(*got)++;
		if (!row[idx->nprops] || lens[idx->nprops] != 16)
			continue;
		memcpy(r->m.index_cursor, row[idx->nprops], 16);
		int b = bs__column_bucket(r->src, &idx->props[idx->shard_on], row[idx->shard_on], lens[idx->shard_on]);
		if (b < 0 || !r->m.in[b])
			continue;
		bs_value_t *v = &vals[n * nc];
		bs__param_t *pr = &p[n * nc];
		bs__index_row_decode(v, idx, row, lens);
		for (int k = 0; k < idx->nprops; k++)
			pr[k] = bs__param_value(&v[k], &idx->props[k]);
		pr[idx->nprops] = (bs__param_t){ .type = BS__P_BYTES, .p = row[idx->nprops], .len = 16 };
		rows[n++] = pr;
	}
	if (n) {
		int64_t affected;
		bs__buf_index_insert(&w, idx);
		bs__buf_puts(&w, " VALUES ");
		if (!(rc = bs__buf_ok(&w)) && !(rc = bs__shard_check(r->dst, r->t)) &&
		    (rc = bs__shard_rows(&affected, r->dst, r->t, w.ptr, " ON DUPLICATE KEY UPDATE entity_id=entity_id",
		                         rows, (int)nc, n)) == BS_ESQL)
			*sql_errno = bs__shard_last_errno(r->dst, r->t);
		if (!rc)
			r->m.pub.index_rows += (int64_t)n;
	}
done:
	for (size_t k = 0; vals && k < n * nc; k++)
		bs_value_clear(&vals[k]);
	free(vals);
	free(p);
	free(rows);
	if (res)
		mysql_free_result(res);
	bs__buf_free(&q);
	bs__buf_free(&w);
	return rc;
}

/* Phase index: every maintained index's table, then phase catch-up. */
/* A chunk of the current index's rows; the next index after its last. */
static int index_step(mover_t *r, int64_t *got)
{
	bs_index_t idx;
	bool found;
	unsigned err = 0;
	int rc;
	if ((rc = bs_index_get(&idx, r->dst, r->m.index_name)) && rc != BS_ENOTFOUND)
		return rc;
	rc = rc ? 0 : index_chunk(r, &idx, got, &err);
	if (rc == BS_ESQL && err == ER_NO_SUCH_TABLE) {
		/* on either side: dropped meanwhile, when the catalog says so */
		char msg[1024];
		bs_index_t now;
		snprintf(msg, sizeof msg, "%s", bs_last_error());
		int grc = bs_index_get(&now, r->dst, r->m.index_name);
		if (grc == BS_ENOTFOUND ||
		    (!grc && (now.state == BS_INDEX_DISABLED || now.created_us != idx.created_us)))
			rc = 0, *got = 0;
		else
			bs_error(rc, "%s", msg);
	}
	if (rc)
		return rc;
	bs_error_clear();
	if (!*got) { /* this index is done: the next */
		char was[BS_NAME_MAX + 1];
		snprintf(was, sizeof was, "%s", r->m.index_name);
		if ((rc = next_index(&idx, &found, r, was)))
			return rc;
		snprintf(r->m.index_name, sizeof r->m.index_name, "%s", found ? idx.name : "");
		memset(r->m.index_cursor, 0, 16);
	}
	return 0;
}

static bool index_left(const mover_t *r)
{
	return r->m.index_name[0];
}

static int phase_index(mover_t *r)
{
	bs_index_t idx;
	bool found;
	int out, rc;
	if (!r->m.index_name[0]) {
		if ((rc = next_index(&idx, &found, r, "")))
			return fail_with(r, rc);
		if (found)
			snprintf(r->m.index_name, sizeof r->m.index_name, "%s", idx.name);
	}
	if ((out = run_chunks(r, index_step, index_left, BS_FAULT_COUNT)) != GO)
		return out;
	new_phase(r, BS_MOVE_CATCHUP);
	return checkpoint(r);
}

/* "DELETE FROM idx WHERE (props..., entity_id) IN (" */
static void delete_rows_head(bs_buf_t *d, const bs_index_t *idx)
{
	bs__buf_puts(d, "DELETE FROM ");
	bs__buf_ident(d, idx->name);
	bs__buf_puts(d, " WHERE (");
	for (int k = 0; k < idx->nprops; k++) {
		bs__buf_ident(d, idx->props[k].name);
		bs__buf_puts(d, ",");
	}
	bs__buf_puts(d, "entity_id) IN (");
}

/* One row, as the key of the delete above: a row read is deleted only as
 * it was read (a writer may have replaced it by the entity's right row
 * meanwhile: entity_id is unique per table). row: the props, then id. */
static void delete_rows_key(bs_buf_t *d, bool first, const bs_index_t *idx, MYSQL_ROW row, const unsigned long *lens)
{
	bs_value_t vals[BS_INDEX_MAX_PROPS];
	bs__index_row_decode(vals, idx, row, lens);
	bs__buf_puts(d, first ? "(" : ",(");
	for (int k = 0; k < idx->nprops; k++) {
		bs__buf_value(d, &vals[k], &idx->props[k]);
		bs__buf_puts(d, ",");
		bs_value_clear(&vals[k]);
	}
	bs__buf_hex(d, row[idx->nprops], 16);
	bs__buf_puts(d, ")");
}

/* "SELECT props..., entity_id FROM idx WHERE entity_id<op>" */
static void select_rows_head(bs_buf_t *q, const bs_index_t *idx, const char *op)
{
	bs__buf_puts(q, "SELECT ");
	for (int k = 0; k < idx->nprops; k++) {
		bs__buf_ident(q, idx->props[k].name);
		bs__buf_puts(q, ",");
	}
	bs__buf_puts(q, "entity_id FROM ");
	bs__buf_ident(q, idx->name);
	bs__buf_puts(q, " WHERE entity_id");
	bs__buf_puts(q, op);
}

/* ------------------------------------------------------------ replaying the log */

typedef struct {
	bs_buf_t seqs;      /* the log rows read, "(kind,id,n)", to delete */
	idvec16_t ent, idx; /* ids of kind 0, kind 1 (each once) */
	int64_t rows;
} logbatch_t;

static void logbatch_free(logbatch_t *l)
{
	bs__buf_free(&l->seqs);
	free(l->ent.ids);
	free(l->idx.ids);
	memset(l, 0, sizeof *l);
}

static int ids_add(idvec16_t *v, const void *id)
{
	for (size_t k = 0; k < v->n; k++)
		if (!memcmp(v->ids[k], id, 16))
			return 0;
	int rc = BS_ARRAY_GROW(v->ids, v->n, v->cap, 64);
	if (rc)
		return rc;
	memcpy(v->ids[v->n++], id, 16);
	return 0;
}

static int log_read(logbatch_t *l, mover_t *r)
{
	bs_buf_t q = { 0 };
	MYSQL_RES *res = NULL;
	int rc;
	bs__buf_printf(&q, "SELECT kind, id, n FROM bagstore_move_log WHERE move_id=%lld LIMIT %d",
	               (long long)r->m.pub.id, LOG_BATCH);
	if ((rc = bs__buf_ok(&q)) || (rc = bs__shard_query(&res, r->src, r->shard, q.ptr, q.len)))
		goto done;
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res)) && !rc) {
		unsigned long *lens = mysql_fetch_lengths(res);
		if (!row[0] || !row[1] || lens[1] != 16 || !row[2])
			continue;
		/* a write after this read counts n up: its row stays for a later round */
		bs__buf_printf(&l->seqs, "%s(%lld,", l->rows++ ? "," : "", strtoll(row[0], NULL, 10));
		bs__buf_hex(&l->seqs, row[1], 16);
		bs__buf_printf(&l->seqs, ",%lld)", strtoll(row[2], NULL, 10));
		rc = ids_add(!strcmp(row[0], "0") ? &l->ent : &l->idx, row[1]);
	}
	if (!rc)
		rc = bs__buf_ok(&l->seqs);
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&q);
	return rc;
}

/* Kind 0: the target's copies of these entities made what the source
 * holds now (newer wins), or deleted when the source no longer has them. */
static int replay_entities(mover_t *r, const idvec16_t *ids)
{
	bs_buf_t q = { 0 }, gone = { 0 };
	MYSQL_RES *res = NULL;
	bool *seen = calloc(ids->n ? ids->n : 1, sizeof *seen);
	copier_t *c = calloc(1, sizeof *c);
	int rc;
	if (!seen || !c) {
		free(seen);
		free(c);
		return bs__oom();
	}
	if ((rc = bs__shard_check(r->src, r->shard))) /* a UTC session: see copy_chunk */
		goto done;
	bs__buf_puts(&q, "SELECT id, updated, body FROM entities WHERE id IN (");
	for (size_t k = 0; k < ids->n; k++) {
		bs__buf_puts(&q, k ? "," : "");
		bs__buf_hex(&q, ids->ids[k], 16);
	}
	bs__buf_puts(&q, ")");
	if ((rc = bs__buf_ok(&q)) || (rc = bs__shard_query(&res, r->src, r->shard, q.ptr, q.len)))
		goto done;
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res))) {
		unsigned long *lens = mysql_fetch_lengths(res);
		if (!row[0] || lens[0] != 16 || !row[2])
			continue;
		for (size_t k = 0; k < ids->n; k++)
			if (!memcmp(ids->ids[k], row[0], 16))
				seen[k] = true;
		if ((rc = copier_add(r, c, row, lens, 0)))
			goto done;
	}
	if ((rc = copier_flush(r, c)))
		goto done;
	/* the ones the source no longer has go from the target */
	size_t g = 0;
	for (size_t k = 0; k < ids->n; k++) {
		if (seen[k])
			continue;
		bs__buf_puts(&gone, g++ ? "," : "DELETE FROM entities WHERE id IN (");
		bs__buf_hex(&gone, ids->ids[k], 16);
	}
	if (g) {
		bs__buf_puts(&gone, ")");
		rc = on_target(r, &gone);
	}
done:
	free(seen);
	free(c);
	if (res)
		mysql_free_result(res);
	bs__buf_free(&q);
	bs__buf_free(&gone);
	return rc;
}

static bool ids_has(const idvec16_t *v, const void *id)
{
	for (size_t k = 0; k < v->n; k++)
		if (!memcmp(v->ids[k], id, 16))
			return true;
	return false;
}

/* Kind 1, one index: the target's rows of these entities in the moving
 * buckets made what their current bodies imply. */
static int replay_index(mover_t *r, const bs_index_t *idx, const idvec16_t *ids, const ebatch_t *cur)
{
	bs_buf_t q = { 0 }, w = { 0 };
	MYSQL_RES *res = NULL;
	int rc, ups = 0, dels = 0;
	/* the target's rows now: those of moving buckets whose entity's row
	 * belongs elsewhere (or nowhere) now go */
	int id = idx->nprops;
	select_rows_head(&q, idx, " IN (");
	for (size_t k = 0; k < ids->n; k++) {
		bs__buf_puts(&q, k ? "," : "");
		bs__buf_hex(&q, ids->ids[k], 16);
	}
	bs__buf_puts(&q, ")");
	if ((rc = bs__buf_ok(&q)) || (rc = bs__shard_query(&res, r->dst, r->t, q.ptr, q.len)))
		goto done;
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res))) {
		unsigned long *lens = mysql_fetch_lengths(res);
		int b = bs__column_bucket(r->dst, &idx->props[idx->shard_on], row[idx->shard_on], lens[idx->shard_on]);
		if (!row[id] || lens[id] != 16 || b < 0 || !r->m.in[b])
			continue;
		long j = bs__ids_find(cur->ids, cur->len, row[id]);
		const bs_value_t *vals[BS_INDEX_MAX_PROPS];
		bs_value_t tmps[BS_INDEX_MAX_PROPS];
		int eb = j >= 0 && cur->bags[j].type == BS_MAP
		                 ? bs__index_row_for(vals, tmps, idx, &cur->bags[j], r->dst->map.buckets, NULL)
		                 : -1;
		if (eb >= 0 && r->m.in[eb])
			continue; /* upserted below */
		if (!dels)
			delete_rows_head(&w, idx);
		delete_rows_key(&w, !dels++, idx, row, lens);
	}
	if (dels)
		bs__buf_puts(&w, ")");
	for (size_t k = 0; k < cur->len; k++) {
		const bs_value_t *vals[BS_INDEX_MAX_PROPS];
		bs_value_t tmps[BS_INDEX_MAX_PROPS];
		if (cur->bags[k].type != BS_MAP || !ids_has(ids, cur->ids[k].b))
			continue;
		int eb = bs__index_row_for(vals, tmps, idx, &cur->bags[k], r->dst->map.buckets, NULL);
		if (eb < 0 || !r->m.in[eb])
			continue;
		if (!ups++) {
			if (w.len)
				bs__buf_puts(&w, ";");
			bs__buf_index_insert(&w, idx);
			bs__buf_puts(&w, " VALUES ");
		}
		bs__buf_puts(&w, ups > 1 ? ",(" : "(");
		for (int p = 0; p < idx->nprops; p++) {
			bs__buf_value(&w, vals[p], &idx->props[p]);
			bs__buf_puts(&w, ",");
		}
		bs__buf_hex(&w, cur->ids[k].b, 16);
		bs__buf_puts(&w, ")");
	}
	if (ups)
		bs__buf_index_update(&w, idx);
	if (w.len)
		rc = on_target(r, &w);
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&q);
	bs__buf_free(&w);
	return rc;
}

/* Kind 1: the target's index rows of these entities, every index, from
 * their current bodies (read from their owners). */
static int replay_rows(mover_t *r, const idvec16_t *ids)
{
	bs_index_list_t l = { 0 };
	ebatch_t cur = { 0 };
	bs_id_t *v = malloc((ids->n ? ids->n : 1) * sizeof *v);
	int rc;
	BS_ERR_ALLOC(v);
	memcpy(v, ids->ids, ids->n * 16);
	if (!(rc = maintained(&l, r->dst)) && !(rc = bs__entities_current(&cur, r->dst, v, ids->n, false)))
		for (int k = 0; k < l.len && !rc; k++) {
			rc = replay_index(r, &l.items[k], ids, &cur);
			if (rc == BS_ESQL && bs__shard_last_errno(r->dst, r->t) == ER_NO_SUCH_TABLE) {
				rc = 0; /* dropped meanwhile */
				bs_error_clear();
			}
		}
	bs__ebatch_free(&cur);
	bs_index_list_free(&l);
	free(v);
	return rc;
}

/* One round of the change log: at most LOG_BATCH of its rows applied to
 * the target, then deleted, each only if no write counted it up meanwhile
 * (a row written or committed later is seen by a later round). *n: the
 * rows read. */
static int replay_round(mover_t *r, int64_t *n)
{
	logbatch_t l = { 0 };
	bs_buf_t d = { 0 };
	int rc;
	*n = 0;
	if ((rc = log_read(&l, r)) || !l.rows)
		goto done;
	if ((l.ent.n && (rc = replay_entities(r, &l.ent))) || (l.idx.n && (rc = replay_rows(r, &l.idx))))
		goto done;
	bs__buf_printf(&d, "DELETE FROM bagstore_move_log WHERE move_id=%lld AND (kind, id, n) IN (",
	               (long long)r->m.pub.id);
	bs__buf_putn(&d, l.seqs.ptr, l.seqs.len);
	bs__buf_puts(&d, ")");
	if (!(rc = on_source(r, &d))) {
		*n = l.rows;
		r->m.pub.log_rows += l.rows;
	}
done:
	logbatch_free(&l);
	bs__buf_free(&d);
	return rc;
}

/* ------------------------------------------------------------ the cut-over */

static void rollback_fence(mover_t *r)
{
	char msg[1024];
	int code = bs_last_error_code();
	snprintf(msg, sizeof msg, "%s", bs_last_error());
	if (r->src->shards[r->shard].conn)
		bs__shard_exec(r->src, r->shard, "ROLLBACK", 8);
	bs_error(code, "%s", msg);
}

/* Inside the fence, after the last replay: the source's repair watermark
 * (the target repairs what it had not covered), then the flip. *flipped
 * unless the row was no longer ours (or an error). */
static int flip(mover_t *r, double fence_s, bool *flipped)
{
	bs_buf_t b = { 0 };
	MYSQL_RES *res = NULL;
	int rc;
	*flipped = false;
	bs__buf_puts(&b, "SELECT COALESCE((SELECT watermark_us FROM bagstore_watermarks WHERE name='repair'),0);"
	                 "UPDATE bagstore_buckets SET state='gone', peer=");
	bs__buf_hex(&b, tname(r), strlen(tname(r)));
	bs__buf_printf(&b,
	               " WHERE move_id=%lld AND state='leaving';UPDATE bagstore_meta SET v=v+1 WHERE"
	               " k='owned_version';UPDATE bagstore_moves SET phase='cutover', reason='', heartbeat=NOW(6),"
	               " flip_us=CAST(UNIX_TIMESTAMP(NOW(6))*1000000 AS SIGNED), fence_ms=GREATEST(fence_ms,%.3f),"
	               " log_rows=%lld, src_watermark_us=(SELECT COALESCE((SELECT watermark_us FROM"
	               " bagstore_watermarks WHERE name='repair'),0))",
	               (long long)r->m.pub.id, fence_s * 1000, (long long)r->m.pub.log_rows);
	where_mine(r, &b);
	bs__buf_puts(&b, ";SELECT ROW_COUNT()");
	MYSQL_RES *sets[2] = { NULL, NULL };
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query_sets(sets, 2, r->src, r->shard, b.ptr, b.len)))
		goto done;
	MYSQL_ROW row = mysql_fetch_row(sets[0]);
	r->m.src_watermark_us = row && row[0] ? strtoll(row[0], NULL, 10) : 0;
	row = sets[1] ? mysql_fetch_row(sets[1]) : NULL;
	*flipped = row && row[0] && strcmp(row[0], "0");
	mysql_free_result(sets[0]);
	if (sets[1])
		mysql_free_result(sets[1]);
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

/* The fence: the move's ownership rows FOR UPDATE on the source (writers
 * to its buckets wait), the log replayed to its end, the flip; all within
 * cleanler.max_fence or rolled back. GO when flipped, AGAIN when the fence
 * gave up (too long, or the lock not had), else an outcome. */
static int fence(mover_t *r)
{
	bs_cleaner_conf_t cl;
	lanes_leave(r); /* the fence waits for no lane */
	bs__cleaner_conf(&cl, r->opts, r->cfg);
	double budget = cl.max_fence > 0 ? cl.max_fence : 1.0, t0 = bs_now_mono();
	bs_buf_t b = { 0 };
	int64_t n = 0;
	bool flipped = false;
	int rc;
	bs__buf_printf(&b,
	               "SET TRANSACTION ISOLATION LEVEL READ COMMITTED;START TRANSACTION;SELECT COUNT(*) FROM"
	               " bagstore_buckets WHERE move_id=%lld FOR UPDATE WAIT 1",
	               (long long)r->m.pub.id);
	rc = on_source(r, &b);
	bs__buf_free(&b);
	if (rc) {
		rollback_fence(r);
		return bs__cleaner_transient(rc) ? AGAIN : fail_with(r, rc);
	}
	do {
		if ((rc = replay_round(r, &n)))
			break;
	} while (n && bs_now_mono() - t0 < budget);
	if (!rc && (n || bs_now_mono() - t0 >= budget)) { /* the log would not end in time */
		rollback_fence(r);
		r->m.pub.fence_tries++;
		return AGAIN;
	}
	if (!rc) {
		fault(r, BS_FAULT_MOVE_KILL_CUTOVER);
		rc = flip(r, bs_now_mono() - t0, &flipped);
	}
	if (rc || !flipped) {
		rollback_fence(r);
		return rc ? (bs__cleaner_transient(rc) ? AGAIN : fail_with(r, rc)) : why_not_mine(r);
	}
	if ((rc = bs__shard_exec(r->src, r->shard, "COMMIT", 6)))
		return fail_with(r, rc);
	double held = bs_now_mono() - t0;
	if (held * 1000 > r->m.pub.fence_ms)
		r->m.pub.fence_ms = held * 1000;
	r->m.pub.phase = BS_MOVE_CUTOVER;
	fault(r, BS_FAULT_MOVE_KILL_FLIPPED);
	return GO;
}

/* Phase catch-up: rounds of the log until one is small, then the fence
 * (rounds again if it gives up). */
static int catchup_rounds(mover_t *r)
{
	int out;
	for (bool first = true;; first = false) {
		int64_t n = 0;
		if (bs__stopping(r->opts))
			return OUT_STOP;
		if ((out = throttle_gate(r)) == AGAIN)
			continue;
		if (out != GO)
			return out;
		int rc = replay_round(r, &n);
		if (rc)
			return fail_with(r, rc);
		if ((out = checkpoint(r)) != GO)
			return out;
		if (first)
			fault(r, BS_FAULT_MOVE_KILL_CATCHUP);
		if (n >= LOG_SMALL)
			continue;
		if ((out = fence(r)) == GO)
			return GO;
		if (out != AGAIN)
			return out;
		bs__cleaner_sleep(0.05, bs__stop_flag(r->opts));
	}
}

/* The catch-up replays writes the writers made to the leaving buckets, and
 * every write to them costs its writer the fence's full form and a log
 * row until the cut-over: paced below the writers' own rate by their
 * latency, it would never end. So the probe's latency neither holds nor
 * paces it; every other signal, and failing closed, do (doc/DESIGN.md,
 * "The throttle"). */
static int phase_catchup(mover_t *r)
{
	r->latency_free = true;
	int out = catchup_rounds(r);
	lanes_leave(r); /* taken latency-free: the next phase's gate takes its own */
	r->latency_free = false;
	r->note[0] = '\0';
	if (r->m.pub.state == BS_JOB_RUNNING) /* a running move's reason is its note: the flip cleared the row's */
		r->m.pub.reason[0] = '\0';
	return out;
}

/* Phase cut-over, after the flip (each step idempotent): the target's
 * roll-forward, the map's next version, the repair of what the source's
 * watermark had not covered; then phase cleanup. */
static int phase_cutover(mover_t *r)
{
	bs_buf_t b = { 0 };
	int64_t rows = 0;
	int rc;
	bs__buf_printf(&b,
	               "START TRANSACTION;UPDATE bagstore_buckets SET state='owned', peer='', move_id=0"
	               " WHERE move_id=%lld AND state='incoming';UPDATE bagstore_meta SET v=v+1"
	               " WHERE k='owned_version';COMMIT",
	               (long long)r->m.pub.id);
	rc = on_target(r, &b);
	bs__buf_free(&b);
	if (rc || (rc = bs__map_publish_move(r->dst, r->m.buckets, r->m.nb, tname(r))))
		return fail_with(r, rc);
	bs_cleaner_conf_t cl;
	bs__cleaner_conf(&cl, r->opts, r->cfg);
	int64_t since =
		r->m.src_watermark_us - (int64_t)(cl.repair_overlap * 1e6) - (int64_t)(r->cfg->catalog_ttl * 1e6);
	if ((rc = bs__repair_moved(&rows, r->dst, r->t, since > 0 ? since : 0, r->m.in)))
		return fail_with(r, rc);
	new_phase(r, BS_MOVE_CLEANUP);
	r->m.pub.rows_scanned = 0;
	return checkpoint(r);
}

/* ------------------------------------------------------------ cleanup and undo */

/* One chunk of shard's entities (keyset by added_id from *cursor) whose
 * bucket moves, deleted by their primary key (nobody writes these rows any
 * more: their buckets are gone, or incoming and undone). *got: rows read. */
static int drop_entities(mover_t *r, bs_store_t *st, int shard, int64_t *cursor, int64_t *got)
{
	bs_buf_t q = { 0 }, d = { 0 };
	MYSQL_RES *res = NULL;
	int rc, n = 0;
	*got = 0;
	bs__buf_printf(&q, "SELECT added_id, id FROM entities WHERE added_id>%lld ORDER BY added_id LIMIT %lld",
	               (long long)*cursor, (long long)r->chunk);
	if ((rc = bs__buf_ok(&q)) || (rc = bs__shard_query(&res, st, shard, q.ptr, q.len)))
		goto done;
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res))) {
		unsigned long *lens = mysql_fetch_lengths(res);
		(*got)++;
		*cursor = strtoll(row[0], NULL, 10);
		if (!row[1] || lens[1] != 16 || !moving_id(r, row[1]))
			continue;
		bs__buf_puts(&d, n++ ? "," : "DELETE FROM entities WHERE added_id IN (");
		bs__buf_printf(&d, "%lld", (long long)*cursor);
	}
	if (n) {
		bs__buf_puts(&d, ")");
		if (!(rc = bs__buf_ok(&d)) && !(rc = bs__shard_check(st, shard)))
			rc = bs__shard_exec(st, shard, d.ptr, d.len);
	}
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&q);
	bs__buf_free(&d);
	return rc;
}

/* One chunk of shard's rows of idx (keyset by entity_id from cursor) in a
 * moving bucket, deleted. *got: rows read. */
static int drop_rows(mover_t *r, bs_store_t *st, int shard, const bs_index_t *idx, uint8_t cursor[16], int64_t *got)
{
	bs_buf_t q = { 0 }, d = { 0 };
	MYSQL_RES *res = NULL;
	int rc, n = 0, id = idx->nprops;
	*got = 0;
	select_rows_head(&q, idx, ">");
	bs__buf_hex(&q, cursor, 16);
	bs__buf_printf(&q, " ORDER BY entity_id LIMIT %lld", (long long)r->chunk);
	if ((rc = bs__buf_ok(&q)) || (rc = bs__shard_query(&res, st, shard, q.ptr, q.len)))
		goto done;
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res))) {
		unsigned long *lens = mysql_fetch_lengths(res);
		(*got)++;
		if (!row[id] || lens[id] != 16)
			continue;
		memcpy(cursor, row[id], 16);
		int b = bs__column_bucket(st, &idx->props[idx->shard_on], row[idx->shard_on], lens[idx->shard_on]);
		if (b < 0 || !r->m.in[b])
			continue;
		if (!n)
			delete_rows_head(&d, idx);
		delete_rows_key(&d, !n++, idx, row, lens);
	}
	if (n) {
		bs__buf_puts(&d, ")");
		if (!(rc = bs__buf_ok(&d)) && !(rc = bs__shard_check(st, shard)))
			rc = bs__shard_exec(st, shard, d.ptr, d.len);
	}
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&q);
	bs__buf_free(&d);
	return rc;
}

/* Wait until the catalog TTL has passed since the flip on the source's
 * clock: readers holding the old map have met a `gone` row by then. */
static int grace(mover_t *r)
{
	int64_t now = 0;
	int rc = bs__shard_now_us(&now, r->src, r->shard);
	if (rc)
		return rc;
	int64_t until = r->m.pub.flip_us + (int64_t)(r->cfg->catalog_ttl * 1e6);
	if (r->m.pub.flip_us && now < until)
		bs__cleaner_sleep((double)(until - now) / 1e6, bs__stop_flag(r->opts));
	return 0;
}

/* Phase cleanup: the source's entities in the moved buckets, then its
 * rows of every index in them, deleted; then done. */
/* A chunk of the source's copies: the entities first, then each index's
 * rows ("\x01" in index_name once all are gone). */
static int cleanup_step(mover_t *r, int64_t *got)
{
	bs_index_t idx;
	bool found;
	int rc;
	if (!r->m.index_name[0]) { /* the entities first */
		rc = drop_entities(r, r->src, r->shard, &r->m.cursor, got);
		r->m.pub.rows_scanned += *got;
		if (!rc && !*got && !(rc = next_index(&idx, &found, r, "")))
			snprintf(r->m.index_name, sizeof r->m.index_name, "%s", found ? idx.name : "\x01");
	} else { /* then each index's rows */
		if (!(rc = bs_index_get(&idx, r->dst, r->m.index_name)))
			rc = drop_rows(r, r->src, r->shard, &idx, r->m.index_cursor, got);
		if (rc == BS_ENOTFOUND || (rc == BS_ESQL && bs__shard_last_errno(r->src, r->shard) == ER_NO_SUCH_TABLE))
			rc = 0, *got = 0; /* the index went away */
		if (!rc && !*got) {
			char was[BS_NAME_MAX + 1];
			snprintf(was, sizeof was, "%s", r->m.index_name);
			if (!(rc = next_index(&idx, &found, r, was))) {
				snprintf(r->m.index_name, sizeof r->m.index_name, "%s", found ? idx.name : "\x01");
				memset(r->m.index_cursor, 0, 16);
			}
		}
	}
	if (!rc)
		bs_error_clear();
	return rc;
}

static bool copies_left(const mover_t *r)
{
	return !r->m.index_name[0] || strcmp(r->m.index_name, "\x01");
}

static int phase_cleanup(mover_t *r)
{
	int rc, out;
	if ((rc = grace(r)))
		return fail_with(r, rc);
	if ((out = run_chunks(r, cleanup_step, copies_left, BS_FAULT_COUNT)) != GO)
		return out;
	/* the forwarding pointers stay, no longer the move's: rows in those
	 * buckets now are drift, for repair and verify to see */
	bs_buf_t b = { 0 };
	bs__buf_printf(&b,
	               "DELETE FROM bagstore_move_log WHERE move_id=%lld;START TRANSACTION;UPDATE bagstore_buckets"
	               " SET move_id=0 WHERE move_id=%lld AND state='gone';UPDATE bagstore_meta SET v=v+1 WHERE"
	               " k='owned_version';COMMIT",
	               (long long)r->m.pub.id, (long long)r->m.pub.id);
	rc = on_source(r, &b);
	bs__buf_free(&b);
	if (rc)
		return fail_with(r, rc);
	new_phase(r, BS_MOVE_DONE);
	if ((out = checkpoint(r)) != GO)
		return out;
	if ((out = row_update(r, "state='done', finished=NOW(6)")) == GO) {
		r->m.pub.state = BS_JOB_DONE;
		report(r);
	}
	return out == GO ? OUT_DONE : out;
}

/* The target's copies of the moving buckets (entities, then every index's
 * rows) deleted: the target does not own them. */
static int drop_target_copies(mover_t *r)
{
	bs_index_list_t l = { 0 };
	int64_t cursor = 0, got = 1;
	int rc = 0;
	while (!rc && got)
		rc = drop_entities(r, r->dst, r->t, &cursor, &got);
	if (!rc && !(rc = maintained(&l, r->dst)))
		for (int k = 0; k < l.len && !rc; k++) {
			uint8_t cur[16] = { 0 };
			for (got = 1; !rc && got;)
				rc = drop_rows(r, r->dst, r->t, &l.items[k], cur, &got);
			if (rc == BS_ESQL && bs__shard_last_errno(r->dst, r->t) == ER_NO_SUCH_TABLE) {
				rc = 0;
				bs_error_clear();
			}
		}
	bs_index_list_free(&l);
	return rc;
}

/* A cancelled move before its cut-over, undone: the buckets stay where
 * they were, the target's copies and incoming rows go, the row starts
 * over (state cancelled). */
static enum outcome undo(mover_t *r)
{
	bs_buf_t b = { 0 };
	int rc;
	r->m.pub.phase = BS_MOVE_UNDO;
	report(r);
	if ((rc = unmark_source(r)))
		return fail_with(r, rc);
	fault(r, BS_FAULT_MOVE_KILL_UNDO);
	if ((rc = drop_target_copies(r)))
		return fail_with(r, rc);
	rc = unmark_target(r);
	bs__buf_printf(&b,
	               "UPDATE bagstore_moves SET started_copy=0, phase='copy', cursor_id=0, max_id=-1,"
	               " index_name='', index_cursor='', rows_scanned=0, rows_copied=0, index_rows=0, log_rows=0,"
	               " heartbeat=NOW(6) WHERE move_id=%lld AND ",
	               (long long)r->m.pub.id);
	bs__lock_held_sql(&b, r->lock);
	if (!rc)
		rc = on_source(r, &b);
	bs__buf_free(&b);
	if (rc)
		return fail_with(r, rc);
	r->m.started_copy = false;
	r->m.pub.phase = BS_MOVE_COPY;
	snprintf(r->msg, sizeof r->msg, "move %lld (%s to %s) was cancelled; its buckets stay on %s",
	         (long long)r->m.pub.id, r->m.pub.source, r->m.pub.target, r->m.pub.source);
	report(r);
	return OUT_CANCELLED;
}

/* ------------------------------------------------------------ one attempt */

/* Claim: the move's lock, its row. -1 (GO) when it is ours to run now. */
static int claim(mover_t *r, int64_t id)
{
	bool got = false;
	int rc;
	bs__move_free(&r->m);
	bs__move_lock_name(r->lock, r->src, r->shard, id);
	if ((rc = bs__lock_try(&got, r->src, r->shard, r->lock)) || (rc = bs__move_read(&r->m, r->src, r->shard, id)))
		return fail_with(r, rc);
	if ((rc = bs__map_need(r->src)) || (rc = bs__map_need(r->dst)))
		return fail_with(r, rc);
	if (!(r->m.in = calloc((size_t)r->src->map.buckets, 1)))
		return fail_with(r, bs__oom());
	for (int k = 0; k < r->m.nb; k++)
		r->m.in[r->m.buckets[k]] = 1;
	r->t = r->m.pub.target_shard;
	r->m.pub.source_shard = r->shard;
	r->slow = bs_fault(BS_FAULT_SLOW_MOVE);
	r->chunk = r->slow ? CHUNK_MIN : CHUNK_START;
	switch (r->m.pub.state) {
	case BS_JOB_DONE: return OUT_DONE;
	case BS_JOB_CANCELLED: return !r->m.started_copy ? OUT_CANCELLED : got ? undo(r) : OUT_BUSY;
	case BS_JOB_FAILED:
		snprintf(r->msg, sizeof r->msg, "move %lld (%s to %s) failed: %s", (long long)id, r->m.pub.source,
		         r->m.pub.target, r->m.pub.reason);
		return OUT_FAILED;
	case BS_JOB_PAUSED: return OUT_PAUSED;
	default: break;
	}
	if (!got)
		return OUT_BUSY;
	if (r->t < 0) {
		snprintf(r->msg, sizeof r->msg, "move %lld: its target %s is not in the configuration", (long long)id,
		         r->m.pub.target);
		return OUT_FAILED;
	}
	return GO;
}

/* The row says running, with this worker. */
static int mark_running(mover_t *r)
{
	bs_buf_t b = { 0 };
	int64_t matched = 0;
	int rc, out = GO;
	bs__buf_printf(&b,
	               "UPDATE bagstore_moves SET state='running', reason='', heartbeat=NOW(6), worker_pid=%d,"
	               " worker_host=",
	               r->pid);
	bs__buf_hex(&b, r->host, strlen(r->host));
	bs__buf_printf(&b, " WHERE move_id=%lld AND state IN ('queued','running','throttled')", (long long)r->m.pub.id);
	if ((rc = bs__exec_count(&matched, r->src, r->shard, &b)))
		out = fail_with(r, rc);
	else if (!matched)
		out = why_not_mine(r);
	bs__buf_free(&b);
	if (out == GO) {
		r->m.pub.state = BS_JOB_RUNNING;
		r->nsamp = 0;
		report(r);
	}
	return out;
}

/* How an attempt ends: a failure the row shows, a stop that leaves the
 * move for any worker, the lock released. */
static void wind_up(mover_t *r, enum outcome out)
{
	bs_buf_t b = { 0 };
	if (out == OUT_FAILED) {
		char m[256];
		snprintf(m, sizeof m, "%.255s", r->msg);
		bs__buf_puts(&b, "UPDATE bagstore_moves SET state='failed', heartbeat=NOW(6), reason=");
		bs__buf_hex(&b, m, strlen(m));
		where_mine(r, &b);
		on_source(r, &b);
		r->m.pub.state = BS_JOB_FAILED;
		snprintf(r->m.pub.reason, sizeof r->m.pub.reason, "%s", m);
		report(r);
	} else if (out == OUT_STOP) {
		bs__buf_puts(&b, "UPDATE bagstore_moves SET state='queued', reason='its worker stopped; it resumes from"
		                 " its checkpoint'");
		where_mine(r, &b);
		on_source(r, &b);
	}
	bs__buf_free(&b);
	bs_error_clear();
	if (out != OUT_WAIT || r->src->shards[r->shard].conn)
		bs__lock_release(r->src, r->shard, r->lock);
}

/* One attempt at move id: claim, then its phases from where it stands. */
static enum outcome attempt(mover_t *r, int64_t id)
{
	int out;
	r->rc = 0;
	r->msg[0] = '\0';
	if ((out = claim(r, id)) != GO)
		goto done;
	if ((out = mark_running(r)) != GO)
		goto done;
	while (out == GO || out == AGAIN) {
		switch (r->m.pub.phase) {
		case BS_MOVE_COPY: out = phase_copy(r); break;
		case BS_MOVE_INDEX: out = phase_index(r); break;
		case BS_MOVE_CATCHUP: out = phase_catchup(r); break;
		case BS_MOVE_CUTOVER: out = phase_cutover(r); break;
		case BS_MOVE_CLEANUP: out = phase_cleanup(r); break;
		case BS_MOVE_UNDO: /* resumed while it was being undone: undone first */
			if ((out = undo(r)) == OUT_CANCELLED)
				out = (r->m.pub.state = BS_JOB_RUNNING, GO);
			break;
		case BS_MOVE_DONE: out = OUT_DONE; break;
		}
		lanes_leave(r); /* a phase ends holding its last chunk's */
		if (out == AGAIN && r->daemon)
			out = OUT_WAIT;
	}
	/* cancelled under this worker, before the cut-over: undone here, now,
	 * holding the lock, before anyone is told it was (a kill meanwhile
	 * leaves it cancelled with started_copy: the next claim undoes it) */
	if (out == OUT_CANCELLED && r->m.pub.state == BS_JOB_CANCELLED && r->m.started_copy &&
	    r->m.pub.phase < BS_MOVE_CUTOVER)
		out = undo(r);
done:
	wind_up(r, (enum outcome)out);
	return (enum outcome)out;
}

/* ------------------------------------------------------------ runners */

static void lower_priority(void)
{
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
}

/* This source's moves of the latest plan, one after another: OUT_DONE when
 * every one has ended (done, or cancelled and undone), else the outcome
 * that stopped the round. */
static enum outcome source_round(mover_t *r)
{
	bs__move_t *mv = NULL;
	int n = 0, rc;
	enum outcome out = OUT_DONE;
	if ((rc = bs__moves_on(&mv, &n, r->src, r->shard)))
		return fail_with(r, rc);
	for (int k = 0; k < n && out == OUT_DONE; k++) {
		if (mv[k].pub.state == BS_JOB_DONE || (mv[k].pub.state == BS_JOB_CANCELLED && !mv[k].started_copy)) {
			r->cancelled |= mv[k].pub.state == BS_JOB_CANCELLED;
			continue;
		}
		out = attempt(r, mv[k].pub.id);
		if (out == OUT_CANCELLED) {
			r->cancelled = true;
			out = OUT_DONE;
		}
	}
	for (int k = 0; k < n; k++)
		bs__move_free(&mv[k]);
	free(mv);
	return out;
}

static void *runner_thread(void *p)
{
	mover_t *r = p;
	int rc;
	mysql_thread_init();
	lower_priority();
	bs_error_clear();
	bs__cleaner_worker_id(r->host, &r->pid);
	if ((rc = bs_store_open(&r->src, r->cfg)) || (rc = bs_store_open(&r->dst, r->cfg)) ||
	    (rc = bs__throttle_open(&r->thr, r->cfg))) {
		r->out = fail_with(r, rc);
		goto done;
	}
	for (;;) {
		r->out = source_round(r);
		if (r->out == OUT_DONE) {
			r->all_done = true;
			break;
		}
		if (r->out == OUT_FAILED || r->out == OUT_STOP || r->daemon)
			break;
		if (bs__stopping(r->opts)) {
			r->out = OUT_STOP;
			break;
		}
		if (r->out == OUT_WAIT) {
			r->m.pub.state = BS_JOB_THROTTLED;
			snprintf(r->m.pub.reason, sizeof r->m.pub.reason, "waiting: %.240s", r->msg);
			report(r);
		}
		bs__cleaner_sleep(r->out == OUT_WAIT ? 1.0 : 0.5, bs__stop_flag(r->opts));
	}
done:
	bs__move_free(&r->m);
	bs__throttle_close(r->thr);
	bs_store_free(r->src);
	bs_store_free(r->dst);
	r->thr = NULL;
	r->src = r->dst = NULL;
	mysql_thread_end();
	return NULL;
}

/* The shards that are a source of an unfinished move of the latest plan,
 * read through a store of its own (st's may be another thread's). */
static int sources(bool *which, const bs_store_t *st)
{
	bs_move_list_t l = { 0 };
	bs_store_t *own = NULL;
	int rc = bs_store_open(&own, st->cfg);
	if (!rc)
		rc = bs_move_list(&l, own, NULL);
	bs_store_free(own);
	if (rc)
		return rc;
	for (int k = 0; k < l.len; k++)
		if (l.items[k].source_shard >= 0 && l.items[k].state != BS_JOB_DONE)
			which[l.items[k].source_shard] = true;
	bs_move_list_free(&l);
	return 0;
}

/* A thread per source shard, as backfill.c's run_jobs and not through
 * bs__shard_each, for the same reasons (the caller's thread keeps its
 * priority; a mover's outcome is more than a code). */
int bs__moves_run(bool *all_done, bs_store_t *st, const bs_cleaner_opts_t *opts, bool until_done)
{
	int n = st->n, rc;
	mover_t *rs = calloc((size_t)n, sizeof *rs);
	pthread_t *tids = calloc((size_t)n, sizeof *tids);
	bool *started = calloc((size_t)n, sizeof *started), *which = calloc((size_t)n, sizeof *which);
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	bool cancelled = false;
	bs__throttle_t *thr = NULL;
	*all_done = false;
	if (!rs || !tids || !started || !which) {
		rc = bs_error(BS_ENOMEM, "out of memory starting movers");
		goto done;
	}
	if ((rc = sources(which, st)))
		goto done;
	/* the samplers started here, at the caller's priority (the movers run
	 * at a lower one: a probe timed from there would wait for the CPU as a
	 * background job does, not as a writer) */
	if ((rc = bs__throttle_open(&thr, st->cfg)))
		goto done;
	bs__throttle_run(thr);
	for (int i = 0; i < n; i++) {
		if (!which[i])
			continue;
		rs[i] = (mover_t){
			.cfg = st->cfg, .shard = i, .opts = opts, .progress_lock = &lock, .daemon = !until_done
		};
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
		if (!which[i])
			continue;
		cancelled |= rs[i].cancelled;
		if (!rs[i].all_done)
			*all_done = false;
		if (!rc && rs[i].out == OUT_FAILED)
			rc = bs_error(rs[i].rc ? rs[i].rc : BS_ERROR, "moves from shard %s: %s",
			              st->shards[i].conf->name, rs[i].msg[0] ? rs[i].msg : "failed");
	}
	if (!rc && *all_done && cancelled && until_done)
		rc = bs_error(BS_ECONFLICT, "the reshard was cancelled: the moves that had not cut over were undone, "
		                            "their buckets stay where they were");
done:
	bs__throttle_close(thr);
	free(rs);
	free(tids);
	free(started);
	free(which);
	return rc;
}

int bs_cleaner_reshard(bs_store_t *st, const bs_cleaner_opts_t *opts)
{
	bool all_done = false;
	int rc;
	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing to run the reshard");
	if ((rc = bs__map_need(st)) || (rc = bs__moves_run(&all_done, st, opts, true)))
		return rc;
	if (!all_done && !bs__stopping(opts))
		return bs_error(BS_ERROR, "the reshard did not finish");
	return 0;
}

/*
 * throttle.c - how fast the cleaner's jobs may go without writers feeling
 * them (doc/DESIGN.md, "The throttle"); every job that writes in the
 * background goes through it: its job slots, its gate before each chunk,
 * its lanes around each statement.
 *
 * Per shard a sampler thread, with a store of its own (timeouts capped),
 * writes the heartbeat row every 100 ms (bagstore_heartbeat: the shard's
 * name, NOW(6); pt-heartbeat style) and times the write: the probe, a
 * write like a writer's. It reads Threads_running and InnoDB's history
 * list length, and on each replica the heartbeat row as replicated (the
 * replica's NOW(6) minus its value: sub-second lag). After each round it
 * moves the shard's pace, AIMD: halved while a signal is over its
 * threshold or cannot be read (at most every CUT_EVERY), grown while every
 * signal is under HEADROOM of its threshold and the jobs use all they are
 * allowed (doubling a second until the first cut, then AI_STEP a round).
 *
 * The pace is statements at once on the shard, from this process; below
 * one, one statement and a lane closed after it for (1/pace - 1) times its
 * duration. No lane opens while a signal is over its threshold or unread
 * for cleaner.max_signal_age (fail closed).
 *
 * Throttles are kept in a list by configuration, shared by reference, so
 * the jobs of one process (several indexes, the console's backfills, the
 * daemon) share one set of samplers, lanes and job slots.
 */
#include "cleaner.h"

#include <math.h>
#include <stdarg.h>
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define HB_EVERY 0.1    /* seconds between two rounds of a sampler */
#define PROBES 24       /* probe latencies kept */
#define PROBE_WINDOW 5  /* the signal: the median of the last 5 (half a second) */
#define TAIL_WINDOW 20  /* or (write_latency_signal: tail) the second highest of the last 20 (2 s) */
#define IDLE_PROBES 31  /* idle probe latencies kept; the baseline is their median */
#define IDLE_QUIET 0.05 /* a probe is idle when no lane of ours was used for this long */
#define FIRST_PROBES 3  /* probes of a sampler's first round, back to back */
#define LAT_MARGIN \
	0.0005            /* the probe's threshold is at least its baseline plus this:
                             * closer is a busy host's scheduling noise */
#define PACE_MIN 0.05     /* the lowest pace: a statement, then 19 times its time closed */
#define CUT_EVERY 0.5     /* at most one halving in this many seconds (a window) */
#define SS_GROWTH 1.2     /* a round, until the first cut: twice in 0.4 s */
#define AI_STEP 0.02      /* a round at one statement or more: one more every 5 s */
#define AI_STEP_LOW 0.01  /* a round below one: +10% of the time a second */
#define IDLE_RESTART 10.0 /* seconds unused after which a shard's pace starts afresh */
#define HEADROOM 0.8      /* grow only while every signal is below this share of its threshold */
#define SAMPLER_TIMEOUT 2 /* seconds: the samplers' connect, read and write timeouts */
#define DEFAULT_WRITERS 2 /* when the server does not say how many CPUs it has */
#define MAX_WRITERS 64
#define FW_RING 64      /* rounds of write counters kept (6 s at HB_EVERY) */
#define FW_WINDOW 2.0   /* seconds over which other clients' writes are counted */
#define FW_SPAN_MIN 0.5 /* fewer seconds read: not known yet (the latency signal applies) */
#define FW_SLACK \
	2 /* other clients' writes in a window that count as none: a
                             * statement of ours counted as sent but not yet run by the
                             * server, at either end of the window, at most our lanes
                             * (most_of) plus this */

enum { HIST_STATUS, HIST_METRICS, HIST_NONE };

typedef struct {
	const bs_replica_conf_t *conf;
	MYSQL *conn; /* the sampler's own */
	char address[128];
	/* under mu */
	double lag;   /* seconds; -1 unknown */
	double ok_at; /* monotonic time of its last reading, 0 never */
	char err[200];
} rep_t;

typedef struct {
	bs__throttle_t *t;
	int i;
	/* the sampler's own */
	pthread_t tid;
	bool started;
	bs_store_t *st;
	int64_t first_hb_us; /* the shard's clock just before our first heartbeat */
	int history_src;
	bool table_made; /* bagstore_heartbeat made here once */
	/* under mu: readings */
	double lat[PROBES];
	int nlat; /* probes ever (the ring holds the last PROBES) */
	double idle[IDLE_PROBES];
	int nidle;
	double probe_at; /* a probe in flight since (monotonic), 0 none */
	double lat_ok_at, status_ok_at;
	char lat_err[320], status_err[320];
	int64_t running, history, heartbeats;
	/* the server's data-changing statements (its Com_insert... counters
	 * summed) and this process's own (bs__shard_writes_sent), each round */
	struct {
		double at;
		int64_t com;
		uint64_t own;
	} fw[FW_RING];
	int nfw;       /* rounds ever (the ring holds the last FW_RING) */
	unsigned cpus; /* @@thread_pool_size; 0 unknown */
	bool cpus_read;
	int nrep;
	rep_t *rep;
	/* under mu: the pace */
	double pace, last_cut;
	double provisional; /* the pace before cuts for write latency made while
	                     * other clients' writes were not known yet: given
	                     * back once they are known to be none; 0 none */
	bool slow_start, demand;
	char cut_signal[24];
	double cut_value, cut_limit, cut_at;
	/* under mu: lanes */
	int inflight;
	double next_free, last_used;
} shard_t;

struct bs__throttle {
	const bs_config_t *cfg;
	int refs;             /* under reg_mu */
	bs__throttle_t *next; /* under reg_mu */
	pthread_mutex_t mu;
	pthread_cond_t cv;    /* lanes, slots, readings: broadcast on every change */
	bs_cleaner_conf_t cl; /* the settings in force */
	int n;
	shard_t *sh;
	bool running; /* samplers started */
	double started_at;
	atomic_int stop;
	int slots;       /* job slots free (negative after a reload that lowered jobs) */
	char writer[96]; /* host:pid, written in the heartbeat row */
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static bs__throttle_t *reg;

static const char *const state_names[] = {
	[BS_THR_STARTING] = "starting", [BS_THR_GO] = "go", [BS_THR_OVER] = "over", [BS_THR_UNREADABLE] = "unreadable",
	[BS_THR_CRITICAL] = "critical",
};

const char *bs_throttle_state_name(bs_throttle_state_t s)
{
	if ((unsigned)s < sizeof state_names / sizeof *state_names && state_names[s])
		return state_names[s];
	return "unknown";
}

/* ------------------------------------------------------------ helpers */

static unsigned jobs_of(const bs_cleaner_conf_t *cl, int n)
{
	return cl->jobs ? cl->jobs : (unsigned)n;
}

/* Statements at once the shard may take at most (writers, plus a read). */
static int writers_of(const bs__throttle_t *t, const shard_t *s)
{
	unsigned w = t->cl.writers ? t->cl.writers : s->cpus ? s->cpus : DEFAULT_WRITERS;
	return w > MAX_WRITERS ? MAX_WRITERS : (int)w;
}

static double most_of(const bs__throttle_t *t, const shard_t *s)
{
	return (double)writers_of(t, s) + 1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(const double *v, int n)
{
	double tmp[IDLE_PROBES > PROBES ? IDLE_PROBES : PROBES];
	if (n <= 0)
		return -1;
	memcpy(tmp, v, (size_t)n * sizeof *tmp);
	qsort(tmp, (size_t)n, sizeof *tmp, cmp_double);
	return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

/* The probe's signal: the median of the last PROBE_WINDOW latencies, or
 * with tail the second highest of the last TAIL_WINDOW (one slow probe in
 * two seconds is not a signal, two are), or longer while one is in
 * flight for longer. -1 unknown. */
static double latency_now(const shard_t *s, double now, bool tail)
{
	double last[TAIL_WINDOW] = { 0 };
	int k, w = tail ? TAIL_WINDOW : PROBE_WINDOW, n = s->nlat < w ? s->nlat : w;
	for (k = 0; k < n; k++)
		last[k] = s->lat[(s->nlat - 1 - k) % PROBES];
	double v;
	if (!tail || n <= 0) {
		v = median(last, n);
	} else {
		qsort(last, (size_t)n, sizeof *last, cmp_double);
		v = last[n > 1 ? n - 2 : 0];
	}
	if (s->probe_at > 0 && now - s->probe_at > v && s->nlat > 0)
		v = now - s->probe_at;
	return v;
}

static double baseline(const shard_t *s)
{
	return median(s->idle, s->nidle < IDLE_PROBES ? s->nidle : IDLE_PROBES);
}

/* Other clients' writes on the shard in the FW_WINDOW before its last
 * reading: the server's data-changing statements less ours; -1 while fewer
 * than FW_SPAN_MIN seconds were read (or the counters cannot be). *span:
 * the seconds they cover. A reading too old is the status signal's
 * unreadable (eval_ages), which holds jobs whatever this says. */
static int64_t foreign_writes(const shard_t *s, double *span)
{
	int n = s->nfw < FW_RING ? s->nfw : FW_RING;
	*span = 0;
	if (n < 2)
		return -1;
	int last = (s->nfw - 1) % FW_RING, first = last;
	for (int k = 1; k < n; k++) {
		int j = (s->nfw - 1 - k) % FW_RING;
		if (s->fw[j].at < s->fw[last].at - FW_WINDOW)
			break;
		first = j;
	}
	*span = s->fw[last].at - s->fw[first].at;
	if (*span < FW_SPAN_MIN)
		return -1;
	int64_t theirs = (s->fw[last].com - s->fw[first].com) - (int64_t)(s->fw[last].own - s->fw[first].own);
	return theirs > 0 ? theirs : 0;
}

/* Does anybody else write to the shard, by its foreign_writes f? Unknown
 * (f < 0) counts as yes. */
static bool others_write(const bs__throttle_t *t, const shard_t *s, int64_t f)
{
	return f < 0 || f > (int64_t)most_of(t, s) + FW_SLACK;
}

/* The probe's threshold now (0: no signal); *how says where it comes from. */
static double latency_limit(const bs__throttle_t *t, const shard_t *s, char *how, size_t size)
{
	const bs_cleaner_conf_t *cl = &t->cl;
	if (cl->max_write_latency > 0) {
		snprintf(how, size, "max_write_latency");
		return cl->max_write_latency;
	}
	double b = baseline(s);
	if (cl->write_latency_factor <= 0 || b < 0) {
		snprintf(how, size, "no threshold");
		return 0;
	}
	double l = b * cl->write_latency_factor;
	if (l < b + LAT_MARGIN) {
		snprintf(how, size, "its idle baseline %.2f ms + %.2f ms", b * 1e3, LAT_MARGIN * 1e3);
		return b + LAT_MARGIN;
	}
	snprintf(how, size, "%.1fx its idle baseline %.2f ms", cl->write_latency_factor, b * 1e3);
	return l;
}

/* A reason, cut to fit. */
static void say(char *dst, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *dst, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(dst, size, fmt, ap);
	va_end(ap);
}

static void cond_wait_s(pthread_cond_t *cv, pthread_mutex_t *mu, double s)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	double end = (double)ts.tv_nsec / 1e9 + (s > 0 ? s : 0);
	ts.tv_sec += (time_t)end;
	ts.tv_nsec = (long)((end - floor(end)) * 1e9);
	pthread_cond_timedwait(cv, mu, &ts);
}

/* ------------------------------------------------------------ verdicts */

/* A shard's verdict now, under mu. */
typedef struct {
	bs_throttle_state_t state;
	char signal[24];
	double value, limit;
	char reason[256];
	bool headroom;   /* every signal under HEADROOM of its threshold */
	bool soft;       /* over on the probe's latency alone: the pace is cut,
	                        * jobs wait only once it is at its lowest */
	bool alone;      /* nobody else writes to the shard: its latency is
	                        * not a signal (nobody to protect) */
	bool fw_unknown; /* whether anybody else writes is not known yet */
} eval_t;

/* Does the verdict close the shard's lanes? */
static bool closed(const eval_t *e, const shard_t *s)
{
	return e->state != BS_THR_GO && !(e->soft && s->pace > PACE_MIN);
}

static void set_eval(eval_t *e, bs_throttle_state_t state, const char *signal, double value, double limit)
{
	e->state = state;
	snprintf(e->signal, sizeof e->signal, "%s", signal);
	e->value = value;
	e->limit = limit;
}

/* Is every signal read, and recently? Fills e and returns false when not. */
static bool eval_ages(eval_t *e, const bs__throttle_t *t, const shard_t *s, double now)
{
	const char *name = t->cfg->shards[s->i].name;
	double age_max = t->cl.max_signal_age > 0 ? t->cl.max_signal_age : 3;
	bool starting = now - t->started_at < age_max;
	struct {
		double ok_at;
		const char *what, *err;
	} sig[2] = {
		{ s->lat_ok_at, "its heartbeat write", s->lat_err },
		{ s->status_ok_at, "its status", s->status_err },
	};
	for (int k = 0; k < 2 + s->nrep; k++) {
		double ok_at = k < 2 ? sig[k].ok_at : s->rep[k - 2].ok_at;
		double age = now - (ok_at > 0 ? ok_at : t->started_at);
		if (ok_at > 0 && age <= age_max)
			continue;
		char what[200];
		const char *err = k < 2 ? sig[k].err : s->rep[k - 2].err;
		if (k < 2)
			snprintf(what, sizeof what, "%s", sig[k].what);
		else
			snprintf(what, sizeof what, "replica %s lag", s->rep[k - 2].address);
		if (ok_at <= 0 && starting) {
			set_eval(e, BS_THR_STARTING, "unreadable", age, age_max);
			say(e->reason, sizeof e->reason, "waiting: shard %s: the first reading of %s, for %.1f s", name,
			    what, age);
		} else {
			set_eval(e, BS_THR_UNREADABLE, "unreadable", age, age_max);
			say(e->reason, sizeof e->reason,
			    "waiting: shard %s: %s unreadable for %.1f s (max_signal_age %.1f s)%s%s", name, what, age,
			    age_max, err[0] ? ": " : "", err);
		}
		e->headroom = false;
		return false;
	}
	return true;
}

static void eval_shard(eval_t *e, const bs__throttle_t *t, const shard_t *s, double now)
{
	const bs_cleaner_conf_t *cl = &t->cl;
	const char *name = t->cfg->shards[s->i].name;
	memset(e, 0, sizeof *e);
	e->state = BS_THR_GO;
	e->headroom = true;
	if (!eval_ages(e, t, s, now))
		return;
	if (s->running > (int64_t)cl->critical_load) {
		set_eval(e, BS_THR_CRITICAL, "critical_load", (double)s->running, cl->critical_load);
		snprintf(e->reason, sizeof e->reason, "shard %s: Threads_running %lld above critical_load %u", name,
		         (long long)s->running, cl->critical_load);
		e->headroom = false;
		return;
	}
	if (s->running > HEADROOM * cl->max_load || (s->history >= 0 && s->history > HEADROOM * cl->max_history_length))
		e->headroom = false;
	if (s->running > (int64_t)cl->max_load) {
		set_eval(e, BS_THR_OVER, "threads_running", (double)s->running, cl->max_load);
		snprintf(e->reason, sizeof e->reason, "shard %s: Threads_running %lld above max_load %u", name,
		         (long long)s->running, cl->max_load);
		return;
	}
	if (s->history >= 0 && s->history > (int64_t)cl->max_history_length) {
		set_eval(e, BS_THR_OVER, "history_length", (double)s->history, cl->max_history_length);
		snprintf(e->reason, sizeof e->reason,
		         "shard %s: InnoDB history list length %lld above max_history_length %u", name,
		         (long long)s->history, cl->max_history_length);
		return;
	}
	for (int r = 0; r < s->nrep; r++) {
		if (s->rep[r].lag > HEADROOM * cl->max_replica_lag)
			e->headroom = false;
		if (s->rep[r].lag > cl->max_replica_lag) {
			set_eval(e, BS_THR_OVER, "replica_lag", s->rep[r].lag, cl->max_replica_lag);
			snprintf(e->reason, sizeof e->reason,
			         "shard %s: replica %s %.2f s behind, above max_replica_lag %.2f s", name,
			         s->rep[r].address, s->rep[r].lag, cl->max_replica_lag);
			return;
		}
	}
	char how[96];
	double lat = latency_now(s, now, t->cl.write_latency_tail), limit = latency_limit(t, s, how, sizeof how);
	double span;
	int64_t f = foreign_writes(s, &span);
	e->fw_unknown = f < 0;
	if (!others_write(t, s, f)) {
		e->alone = true;
		say(e->reason, sizeof e->reason, "full pace: no other writers on shard %s", name);
		return;
	}
	if (limit > 0 && lat > HEADROOM * limit)
		e->headroom = false;
	if (limit > 0 && lat > limit) {
		set_eval(e, BS_THR_OVER, "write_latency", lat, limit);
		e->soft = true;
		snprintf(e->reason, sizeof e->reason, "shard %s: write latency%s %.2f ms above %.2f ms (%s)", name,
		         t->cl.write_latency_tail ? " (tail)" : "", lat * 1e3, limit * 1e3, how);
	}
}

/* Halve the pace when a signal is over (or unreadable) and our jobs use
 * the shard, at most every CUT_EVERY. Called after each round and where
 * jobs look (a sampler stuck in a probe cannot), under mu. */
static void cut_if_over(shard_t *s, const eval_t *e, double now)
{
	bool used = s->inflight > 0 || now - s->last_used < 1.0;
	if (!used || now - s->last_cut < CUT_EVERY ||
	    !(e->state == BS_THR_OVER || e->state == BS_THR_UNREADABLE || e->state == BS_THR_CRITICAL))
		return;
	if (e->soft && e->fw_unknown) {
		if (s->provisional <= 0)
			s->provisional = s->pace;
	} else {
		s->provisional = 0;
	}
	s->pace = s->pace / 2 < PACE_MIN ? PACE_MIN : s->pace / 2;
	s->last_cut = now;
	s->slow_start = false;
	snprintf(s->cut_signal, sizeof s->cut_signal, "%s", e->signal);
	s->cut_value = e->value;
	s->cut_limit = e->limit;
	s->cut_at = now;
}

/* After a round of readings: move the shard's pace (AIMD), under mu. A
 * shard our jobs have not used for IDLE_RESTART starts afresh (slow
 * start from one statement); one they did not use in the last second is
 * not cut for what others do to it (jobs still wait while it is over). */
static void update_pace(bs__throttle_t *t, shard_t *s, double now)
{
	eval_t e;
	double most = most_of(t, s);
	bool used = s->inflight > 0 || now - s->last_used < 1.0;
	eval_shard(&e, t, s, now);
	if (!used && now - s->last_used > IDLE_RESTART && !s->slow_start) {
		s->pace = 1;
		s->slow_start = true;
		s->provisional = 0;
	}
	if (e.alone && s->cut_at > 0) {
		/* nobody else writes: a cut for them is void, the pace grows back
		 * fast; one made before that was known (the first FW_SPAN_MIN:
		 * the shard's latency rises with our own load) is given back whole */
		s->slow_start = true;
		s->cut_at = 0;
		if (s->provisional > s->pace)
			s->pace = s->provisional;
	}
	if (!e.fw_unknown)
		s->provisional = 0;
	if (e.state != BS_THR_GO) {
		cut_if_over(s, &e, now);
	} else if (e.headroom && s->demand) {
		s->pace = s->slow_start ? s->pace * SS_GROWTH : s->pace + (s->pace < 1 ? AI_STEP_LOW : AI_STEP);
	}
	if (s->pace > most)
		s->pace = most;
	s->demand = false;
}

/* ------------------------------------------------------------ the sampler */

static void set_err(bs__throttle_t *t, char *dst, size_t size, const char *msg)
{
	pthread_mutex_lock(&t->mu);
	snprintf(dst, size, "%s", msg);
	pthread_mutex_unlock(&t->mu);
}

/* The heartbeat write, timed: the probe. */
static void probe(shard_t *s)
{
	bs__throttle_t *t = s->t;
	const char *name = t->cfg->shards[s->i].name;
	bs_buf_t b = { 0 };
	int rc;
	if ((rc = bs__shard_check(s->st, s->i)) ||
	    (!s->first_hb_us && (rc = bs__shard_now_us(&s->first_hb_us, s->st, s->i)))) {
		set_err(t, s->lat_err, sizeof s->lat_err, bs_last_error());
		return;
	}
	bs__buf_puts(&b, "INSERT INTO bagstore_heartbeat (shard, ts, writer) VALUES (");
	bs__buf_hex(&b, name, strlen(name));
	bs__buf_puts(&b, ",NOW(6),");
	bs__buf_hex(&b, t->writer, strlen(t->writer));
	bs__buf_puts(&b, ") ON DUPLICATE KEY UPDATE ts=VALUES(ts), writer=VALUES(writer)");
	if ((rc = bs__buf_ok(&b)))
		goto done;
	pthread_mutex_lock(&t->mu);
	double t0 = bs_now_mono();
	bool quiet = s->inflight == 0 && t0 - s->last_used >= IDLE_QUIET;
	s->probe_at = t0;
	pthread_mutex_unlock(&t->mu);
	rc = bs__shard_exec(s->st, s->i, b.ptr, b.len);
	double t1 = bs_now_mono();
	pthread_mutex_lock(&t->mu);
	s->probe_at = 0;
	if (!rc) {
		s->lat[s->nlat++ % PROBES] = t1 - t0;
		s->lat_ok_at = t1;
		s->heartbeats++;
		if (quiet && s->inflight == 0 && s->last_used < t0)
			s->idle[s->nidle++ % IDLE_PROBES] = t1 - t0;
	} else {
		snprintf(s->lat_err, sizeof s->lat_err, "%s", bs_last_error());
	}
	pthread_mutex_unlock(&t->mu);
	/* a store made before the table: make it (once) */
	if (rc && bs__shard_last_errno(s->st, s->i) == ER_NO_SUCH_TABLE && !s->table_made) {
		s->table_made = true;
		bs__schema_heartbeat(s->st, s->i);
	}
done:
	bs__buf_free(&b);
	bs_error_clear();
}

static int64_t status_int(const char *v)
{
	return v ? strtoll(v, NULL, 10) : -1;
}

/* Threads_running and InnoDB's history list length (MariaDB's status
 * variable; MySQL's INNODB_METRICS counter; else no such signal). */
static void read_status(shard_t *s)
{
	bs__throttle_t *t = s->t;
	static const char q[] =
		"SHOW GLOBAL STATUS WHERE Variable_name IN ('Threads_running','Innodb_history_list_length',"
		"'Com_insert','Com_insert_select','Com_replace','Com_replace_select','Com_update',"
		"'Com_update_multi','Com_delete','Com_delete_multi')";
	static const char qm[] =
		"SELECT COUNT FROM information_schema.INNODB_METRICS WHERE NAME='trx_rseg_history_len'";
	MYSQL_RES *res = NULL;
	int64_t running = -1, history = -1, com = -1;
	int rc;
	/* ours before the server's: a statement of ours counted here and not
	 * yet run there is one of ours too many, never one of theirs too few */
	uint64_t own = bs__shard_writes_sent(s->st, s->i);
	if ((rc = bs__shard_query(&res, s->st, s->i, q, sizeof q - 1)))
		goto done;
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res))) {
		if (!row[0])
			continue;
		if (!strcasecmp(row[0], "Threads_running"))
			running = status_int(row[1]);
		else if (!strncasecmp(row[0], "Com_", 4))
			com = (com < 0 ? 0 : com) + (status_int(row[1]) > 0 ? status_int(row[1]) : 0);
		else
			history = status_int(row[1]);
	}
	mysql_free_result(res);
	res = NULL;
	if (history < 0 && s->history_src == HIST_STATUS)
		s->history_src = HIST_METRICS;
	if (history < 0 && s->history_src == HIST_METRICS) {
		/* a failed read is an unreadable status (it holds jobs); only a
		 * server that answers without the counter has no such signal */
		if ((rc = bs__shard_query(&res, s->st, s->i, qm, sizeof qm - 1)) &&
		    !(rc == BS_ESQL && bs__denied(bs__shard_last_errno(s->st, s->i))))
			goto done;
		if (rc) { /* not ours to read (MySQL wants PROCESS): not a signal here */
			s->history_src = HIST_NONE;
			bs_error_clear();
			rc = 0;
		} else if ((row = mysql_fetch_row(res)) && row[0])
			history = status_int(row[0]);
		else
			s->history_src = HIST_NONE; /* no such counter: not a signal here */
	}
	if (running < 0)
		rc = bs_error(BS_ERROR, "shard %s: Threads_running not in its status", t->cfg->shards[s->i].name);
done:
	if (res)
		mysql_free_result(res);
	pthread_mutex_lock(&t->mu);
	if (!rc) {
		s->running = running;
		s->history = history;
		s->status_ok_at = bs_now_mono();
		if (com >= 0) {
			int k = s->nfw++ % FW_RING;
			s->fw[k].at = s->status_ok_at;
			s->fw[k].com = com;
			s->fw[k].own = own;
		}
	} else {
		snprintf(s->status_err, sizeof s->status_err, "%s", bs_last_error());
	}
	pthread_mutex_unlock(&t->mu);
	bs_error_clear();
}

/* The server's CPUs, from MariaDB's thread pool size (its default is the
 * CPU count); unknown elsewhere. Once. */
static void read_cpus(shard_t *s)
{
	static const char q[] = "SELECT @@thread_pool_size";
	MYSQL_RES *res = NULL;
	unsigned cpus = 0;
	int rc = bs__shard_query(&res, s->st, s->i, q, sizeof q - 1);
	if (!rc) {
		MYSQL_ROW row = mysql_fetch_row(res);
		cpus = row && row[0] ? (unsigned)strtoul(row[0], NULL, 10) : 0;
		mysql_free_result(res);
	}
	if (rc && bs__shard_last_errno(s->st, s->i) == 0)
		return; /* not reached: try again next round */
	pthread_mutex_lock(&s->t->mu);
	s->cpus = cpus;
	s->cpus_read = true;
	pthread_mutex_unlock(&s->t->mu);
	bs_error_clear();
}

/* A replica's lag from the heartbeat row it has: its NOW(6) minus the row's
 * time. Before our first heartbeat reached it, at least the time since we
 * wrote it (or Seconds_Behind_Master, when more). */
static void read_replica(shard_t *s, rep_t *r)
{
	bs__throttle_t *t = s->t;
	const bs_shard_conf_t *sc = &t->cfg->shards[s->i];
	bs__replica_hb_t hb;
	char err[200] = "";
	double lag = -1;
	if (bs__replica_heartbeat(&hb, &r->conn, r->conf, sc, SAMPLER_TIMEOUT, err, sizeof err) == 0) {
		if (hb.hb_us > 0 && s->first_hb_us > 0 && hb.hb_us >= s->first_hb_us)
			lag = (double)(hb.now_us - hb.hb_us) / 1e6;
		else if (s->first_hb_us > 0 && hb.now_us > 0)
			lag = fmax((double)(hb.now_us - s->first_hb_us) / 1e6, hb.sbm);
		else if (hb.sbm >= 0)
			lag = hb.sbm;
		else
			snprintf(err, sizeof err, "no heartbeat yet");
		if (lag < 0 && hb.sbm >= 0)
			lag = 0; /* clocks apart by more than the lag */
	}
	pthread_mutex_lock(&t->mu);
	if (lag >= 0) {
		r->lag = lag;
		r->ok_at = bs_now_mono();
	} else {
		snprintf(r->err, sizeof r->err, "%s", err);
	}
	pthread_mutex_unlock(&t->mu);
}

static void round_of(shard_t *s, bool first)
{
	if (!s->cpus_read)
		read_cpus(s);
	for (int k = 0; k < (first ? FIRST_PROBES : 1); k++)
		probe(s);
	read_status(s);
	for (int r = 0; r < s->nrep; r++)
		read_replica(s, &s->rep[r]);
	pthread_mutex_lock(&s->t->mu);
	update_pace(s->t, s, bs_now_mono());
	pthread_cond_broadcast(&s->t->cv);
	pthread_mutex_unlock(&s->t->mu);
}

static void *sampler_thread(void *p)
{
	shard_t *s = p;
	bs__throttle_t *t = s->t;
	mysql_thread_init();
	bs_error_clear();
	for (bool first = true; !atomic_load(&t->stop); first = false) {
		double t0 = bs_now_mono();
		round_of(s, first);
		double left = t0 + HB_EVERY - bs_now_mono();
		if (left > 0)
			bs__cleaner_sleep(left, &t->stop);
	}
	for (int r = 0; r < s->nrep; r++)
		if (s->rep[r].conn) {
			mysql_close(s->rep[r].conn);
			s->rep[r].conn = NULL;
		}
	mysql_thread_end();
	return NULL;
}

/* Start the samplers, once. Under mu. */
static void start(bs__throttle_t *t)
{
	if (t->running)
		return;
	t->running = true;
	t->started_at = bs_now_mono();
	for (int i = 0; i < t->n; i++) {
		shard_t *s = &t->sh[i];
		if (!s->st) {
			snprintf(s->lat_err, sizeof s->lat_err, "its sampler has no store (out of memory)");
			continue;
		}
		if (pthread_create(&s->tid, NULL, sampler_thread, s) == 0)
			s->started = true;
		else
			snprintf(s->lat_err, sizeof s->lat_err, "its sampler thread could not start");
	}
}

/* ------------------------------------------------------------ making one */

static void throttle_free(bs__throttle_t *t)
{
	for (int i = 0; t->sh && i < t->n; i++) {
		bs_store_free(t->sh[i].st);
		free(t->sh[i].rep);
	}
	free(t->sh);
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

static int shard_init(shard_t *s, bs__throttle_t *t, int i)
{
	const bs_shard_conf_t *sc = &t->cfg->shards[i];
	s->t = t;
	s->i = i;
	s->running = s->history = -1;
	s->pace = 1;
	s->slow_start = true;
	s->last_cut = -1e9;
	if (bs_store_open(&s->st, t->cfg))
		return -1;
	s->st->connect_timeout = s->st->connect_timeout < SAMPLER_TIMEOUT ? s->st->connect_timeout : SAMPLER_TIMEOUT;
	s->st->read_timeout = s->st->write_timeout = SAMPLER_TIMEOUT;
	if (sc->nreplicas && !(s->rep = calloc((size_t)sc->nreplicas, sizeof *s->rep)))
		return -1;
	s->nrep = sc->nreplicas;
	for (int r = 0; r < s->nrep; r++) {
		const bs_replica_conf_t *rc = &sc->replicas[r];
		s->rep[r].conf = rc;
		s->rep[r].lag = -1;
		if (rc->host)
			snprintf(s->rep[r].address, sizeof s->rep[r].address, "%s:%u", rc->host,
			         rc->port ? rc->port : 3306);
		else
			snprintf(s->rep[r].address, sizeof s->rep[r].address, "%s",
			         rc->socket ? rc->socket : "localhost");
	}
	return 0;
}

static int throttle_new(bs__throttle_t **out, const bs_config_t *cfg)
{
	bs__throttle_t *t = calloc(1, sizeof *t);
	pthread_condattr_t ca;
	char host[64];
	int pid;
	*out = NULL;
	BS_ERR_ALLOC(t);
	pthread_mutex_init(&t->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->cv, &ca);
	pthread_condattr_destroy(&ca);
	t->cfg = cfg;
	t->cl = cfg->cleaner;
	t->n = cfg->nshards;
	t->slots = (int)jobs_of(&t->cl, t->n);
	bs__cleaner_worker_id(host, &pid);
	snprintf(t->writer, sizeof t->writer, "%s:%d", host, pid);
	if (!(t->sh = calloc((size_t)t->n, sizeof *t->sh))) {
		throttle_free(t);
		return bs__oom();
	}
	for (int i = 0; i < t->n; i++)
		if (shard_init(&t->sh[i], t, i)) {
			throttle_free(t);
			return bs__oom();
		}
	*out = t;
	return 0;
}

int bs__throttle_open(bs__throttle_t **out, const bs_config_t *cfg)
{
	bs__throttle_t *t;
	int rc = 0;
	pthread_mutex_lock(&reg_mu);
	for (t = reg; t && t->cfg != cfg; t = t->next)
		;
	if (t) {
		t->refs++;
	} else if (!(rc = throttle_new(&t, cfg))) {
		t->refs = 1;
		t->next = reg;
		reg = t;
		bs__shard_count_writes(true); /* before its first reading: ours from then on */
	}
	pthread_mutex_unlock(&reg_mu);
	*out = rc ? NULL : t;
	return rc;
}

void bs__throttle_close(bs__throttle_t *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&reg_mu);
	bool last = --t->refs == 0;
	if (last) {
		bs__throttle_t **pp = &reg;
		while (*pp != t)
			pp = &(*pp)->next;
		*pp = t->next;
		bs__shard_count_writes(false);
	}
	pthread_mutex_unlock(&reg_mu);
	if (!last)
		return;
	atomic_store(&t->stop, 1);
	for (int i = 0; i < t->n; i++)
		if (t->sh[i].started)
			pthread_join(t->sh[i].tid, NULL);
	throttle_free(t);
}

void bs__throttle_run(bs__throttle_t *t)
{
	pthread_mutex_lock(&t->mu);
	start(t);
	pthread_mutex_unlock(&t->mu);
}

void bs__throttle_settings(bs__throttle_t *t, const bs_cleaner_conf_t *cl)
{
	pthread_mutex_lock(&t->mu);
	t->slots += (int)jobs_of(cl, t->n) - (int)jobs_of(&t->cl, t->n);
	t->cl = *cl;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
}

/* ------------------------------------------------------------ jobs' side */

bool bs__throttle_job_begin(bs__throttle_t *t, atomic_int *stop)
{
	bool got = false;
	pthread_mutex_lock(&t->mu);
	while (!(stop && atomic_load(stop))) {
		if (t->slots > 0) {
			t->slots--;
			got = true;
			break;
		}
		cond_wait_s(&t->cv, &t->mu, 0.05);
	}
	pthread_mutex_unlock(&t->mu);
	return got;
}

void bs__throttle_job_end(bs__throttle_t *t)
{
	pthread_mutex_lock(&t->mu);
	t->slots++;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
}

/* How bad a state is, for picking the shard that decides. */
static int severity(bs_throttle_state_t s)
{
	switch (s) {
	case BS_THR_CRITICAL: return 4;
	case BS_THR_UNREADABLE: return 3;
	case BS_THR_OVER: return 2;
	case BS_THR_STARTING: return 1;
	default: return 0;
	}
}

/* How the slowest shard is paced, for a job's reason: which signal last
 * cut it there (its value and threshold then in the fields; the reason
 * stays the same while that holds, so that a log of reasons is not a line
 * a chunk). Under mu. */
static void pace_reason(bs__thr_gate_t *out, const bs__throttle_t *t, const shard_t *s)
{
	const char *name = t->cfg->shards[s->i].name;
	if (s->cut_at > 0) {
		snprintf(out->reason, sizeof out->reason, "paced by %s on shard %s", s->cut_signal, name);
		snprintf(out->signal, sizeof out->signal, "%s", s->cut_signal);
		out->value = s->cut_value;
		out->limit = s->cut_limit;
	} else {
		snprintf(out->reason, sizeof out->reason, "paced on shard %s: starting", name);
	}
}

/* What a gate found of each shard's writers, for full_reason. */
enum { WITHIN = 0, ALONE = 1, OVER_UNHEEDED = 2 };

/* Why a job goes at full pace, for its reason: the shards nobody else
 * writes to, and those where the probe's latency is within its threshold
 * (someone else writes, or that is not known yet). */
static void full_reason(bs__thr_gate_t *out, const bs__throttle_t *t, const uint8_t *alone, const bool *which)
{
	char none[160] = "", within[160] = "", over[160] = "";
	for (int i = 0; i < t->n; i++) {
		if (which && !which[i])
			continue;
		char *dst = alone[i] == ALONE ? none : alone[i] == OVER_UNHEEDED ? over : within;
		size_t len = strlen(dst);
		snprintf(dst + len, sizeof none - len, "%s%s", len ? ", " : "", t->cfg->shards[i].name);
	}
	if (over[0]) /* a latency-free gate (a move's catch-up): say it is not heeded */
		say(out->reason, sizeof out->reason,
		    "full pace: write latency over its limit on shard %s, not heeded here", over);
	else if (within[0] && none[0])
		say(out->reason, sizeof out->reason,
		    "full pace: write latency within its limit on shard %s, no other writers on shard %s", within,
		    none);
	else if (within[0])
		say(out->reason, sizeof out->reason, "full pace: write latency within its limit on shard %s", within);
	else if (none[0])
		say(out->reason, sizeof out->reason, "full pace: no other writers on shard %s", none);
}

/* latency_free: a shard over on the probe's latency alone holds nothing */
static void gate(bs__thr_gate_t *out, bs__throttle_t *t, const bool *which, bool latency_free)
{
	const shard_t *slowest = NULL;
	uint8_t *alone = calloc((size_t)t->n, sizeof *alone);
	memset(out, 0, sizeof *out);
	out->state = BS_THR_GO;
	out->shard = -1;
	out->full = true;
	pthread_mutex_lock(&t->mu);
	start(t);
	double now = bs_now_mono();
	for (int i = 0; i < t->n; i++) {
		const shard_t *s = &t->sh[i];
		eval_t e;
		if (which && !which[i])
			continue;
		eval_shard(&e, t, s, now);
		cut_if_over(&t->sh[i], &e, now);
		if (alone)
			alone[i] = e.alone ? ALONE : latency_free && e.soft ? OVER_UNHEEDED : WITHIN;
		if (latency_free && e.soft && !out->latency_ignored[0])
			snprintf(out->latency_ignored, sizeof out->latency_ignored, "%s", t->cfg->shards[i].name);
		if (!closed(&e, s) || (latency_free && e.soft))
			e.state = BS_THR_GO; /* paced, not held */
		if (severity(e.state) > severity(out->state)) {
			out->state = e.state;
			out->shard = i;
			snprintf(out->signal, sizeof out->signal, "%s", e.signal);
			out->value = e.value;
			out->limit = e.limit;
			snprintf(out->reason, sizeof out->reason, "%s", e.reason);
		}
		if (!slowest || s->pace < slowest->pace)
			slowest = s;
		if (s->pace < most_of(t, s))
			out->full = false;
	}
	out->pace = slowest ? slowest->pace : 1;
	out->verdict = out->state == BS_THR_CRITICAL ? BS__THR_STOP
	               : out->state == BS_THR_GO     ? BS__THR_GO
	                                             : BS__THR_WAIT;
	/* paced by a signal, or going as fast as its jobs ask: say which */
	if (out->verdict == BS__THR_GO && !out->full && slowest && slowest->cut_at > 0)
		pace_reason(out, t, slowest);
	else if (out->verdict == BS__THR_GO && alone) /* nothing cut: the pace grows as the jobs ask */
		full_reason(out, t, alone, which);
	else if (out->verdict == BS__THR_GO && !out->full && slowest)
		pace_reason(out, t, slowest);
	pthread_mutex_unlock(&t->mu);
	free(alone);
}

void bs__throttle_gate(bs__thr_gate_t *out, bs__throttle_t *t, const bool *which)
{
	gate(out, t, which, false);
}

void bs__throttle_gate_latency_free(bs__thr_gate_t *out, bs__throttle_t *t, const bool *which)
{
	gate(out, t, which, true);
}

/* latency_free: a lane over on the probe's latency alone is open, and the
 * pause of a pace the latency cut last does not apply */
static int enter(double *t0, bs__throttle_t *t, int shard, double max_wait, atomic_int *stop, bool latency_free)
{
	shard_t *s = &t->sh[shard];
	int ret = 1;
	pthread_mutex_lock(&t->mu);
	start(t);
	double end = bs_now_mono() + max_wait;
	for (;;) {
		eval_t e;
		double now = bs_now_mono();
		if (stop && atomic_load(stop)) {
			ret = -1;
			break;
		}
		eval_shard(&e, t, s, now);
		cut_if_over(s, &e, now);
		int lanes = s->pace >= 1 ? (int)s->pace : 1;
		bool open = !closed(&e, s) || (latency_free && e.soft);
		bool paused = now < s->next_free &&
		              !(latency_free && s->cut_at > 0 && !strcmp(s->cut_signal, "write_latency"));
		if (open && s->inflight < lanes && !paused) {
			if (++s->inflight >= lanes)
				s->demand = true;
			s->last_used = *t0 = now;
			ret = 0;
			break;
		}
		if (open)
			s->demand = true; /* held back by the pace itself */
		if (now >= end)
			break;
		double wait = end - now < 0.02 ? end - now : 0.02;
		if (open && s->inflight < lanes && s->next_free - now < wait)
			wait = s->next_free - now;
		cond_wait_s(&t->cv, &t->mu, wait);
	}
	pthread_mutex_unlock(&t->mu);
	return ret;
}

int bs__throttle_enter(double *t0, bs__throttle_t *t, int shard, double max_wait, atomic_int *stop)
{
	return enter(t0, t, shard, max_wait, stop, false);
}

int bs__throttle_enter_latency_free(double *t0, bs__throttle_t *t, int shard, double max_wait, atomic_int *stop)
{
	return enter(t0, t, shard, max_wait, stop, true);
}

static void leave(bs__throttle_t *t, int shard, double t0, bool latency_free)
{
	shard_t *s = &t->sh[shard];
	pthread_mutex_lock(&t->mu);
	double now = bs_now_mono();
	s->inflight--;
	s->last_used = now;
	if (s->pace < 1 && !latency_free) {
		double gap = (now - t0) * (1 / s->pace - 1);
		if (now + gap > s->next_free)
			s->next_free = now + gap;
	}
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
}

void bs__throttle_leave(bs__throttle_t *t, int shard, double t0)
{
	leave(t, shard, t0, false);
}

void bs__throttle_leave_latency_free(bs__throttle_t *t, int shard, double t0)
{
	leave(t, shard, t0, true);
}

int bs__throttle_writers(bs__throttle_t *t, int shard)
{
	shard_t *s = &t->sh[shard];
	pthread_mutex_lock(&t->mu);
	start(t);
	double end = bs_now_mono() + SAMPLER_TIMEOUT + 0.5;
	while (!s->cpus_read && !t->cl.writers && s->started && bs_now_mono() < end)
		cond_wait_s(&t->cv, &t->mu, 0.05);
	int w = writers_of(t, s);
	pthread_mutex_unlock(&t->mu);
	return w;
}

/* ------------------------------------------------------------ public */

static void reading(bs_throttle_shard_t *o, const bs__throttle_t *t, const shard_t *s, double now)
{
	eval_t e;
	char how[96];
	memset(o, 0, sizeof *o);
	snprintf(o->shard, sizeof o->shard, "%s", t->cfg->shards[s->i].name);
	eval_shard(&e, t, s, now);
	o->state = e.state;
	snprintf(o->signal, sizeof o->signal, "%s", e.signal);
	o->value = e.value;
	o->limit = e.limit;
	snprintf(o->reason, sizeof o->reason, "%s", e.reason);
	o->write_latency_s = s->nlat ? latency_now(s, now, t->cl.write_latency_tail) : -1;
	o->write_latency_tail = t->cl.write_latency_tail;
	o->write_baseline_s = baseline(s);
	o->write_limit_s = latency_limit(t, s, how, sizeof how);
	double span;
	int64_t f = foreign_writes(s, &span);
	o->other_writes_s = f >= 0 && span > 0 ? (double)f / span : -1;
	o->others_write = others_write(t, s, f);
	o->threads_running = s->running;
	o->history_length = s->history;
	o->nreplicas = s->nrep < BS_THROTTLE_REPLICAS ? s->nrep : BS_THROTTLE_REPLICAS;
	for (int r = 0; r < o->nreplicas; r++) {
		snprintf(o->replicas[r].address, sizeof o->replicas[r].address, "%s", s->rep[r].address);
		o->replicas[r].lag_s = s->rep[r].ok_at > 0 ? s->rep[r].lag : -1;
		snprintf(o->replicas[r].error, sizeof o->replicas[r].error, "%s", s->rep[r].err);
	}
	o->pace = s->pace;
	o->most = (int)most_of(t, s);
	o->heartbeats = s->heartbeats;
}

int bs_throttle_sample(bs_throttle_shard_t *out, bs_store_t *st, double seconds)
{
	bs__throttle_t *t;
	int rc;
	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: the throttle writes heartbeats; refusing to run it");
	if ((rc = bs__throttle_open(&t, st->cfg)))
		return rc;
	bs__throttle_run(t);
	bs__cleaner_sleep(seconds, NULL);
	/* and until every signal was read once, or is unreadable */
	for (bool starting = true; starting;) {
		starting = false;
		pthread_mutex_lock(&t->mu);
		double now = bs_now_mono();
		for (int i = 0; i < t->n; i++) {
			eval_t e;
			eval_shard(&e, t, &t->sh[i], now);
			if (e.state == BS_THR_STARTING)
				starting = true;
			else
				reading(&out[i], t, &t->sh[i], now);
		}
		if (starting)
			cond_wait_s(&t->cv, &t->mu, 0.05);
		pthread_mutex_unlock(&t->mu);
	}
	bs__throttle_close(t);
	return 0;
}

/*
 * svc_metrics.c - /metrics: the cleaner daemon's numbers in Prometheus's
 * text exposition format (version 0.0.4), served by libmicrohttpd on its
 * own thread.
 *
 * A scrape never touches a shard: it renders the collector's snapshot
 * (svc_watch.c) and the service's counters, under their locks, and says
 * how old each group of values is (bagstore_collector_age_seconds). Names
 * follow Prometheus's naming guide: the bagstore_ prefix, base units in
 * the name (_seconds, unix times as _timestamp_seconds), _total on
 * counters only, _info for build information, one label per dimension
 * (shard, index, state...). A shard that does not answer shows
 * bagstore_shard_up 0 and its other per-shard series go until it answers.
 */
#include "service.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>

#include "fmt.h"

/* One libmicrohttpd daemon and the web configuration it serves with
 * (a reload starts another on the same socket). */
typedef struct {
	struct MHD_Daemon *d;
	svc_web_t *web; /* NULL: open */
	struct svc_metrics *m;
} server_t;

struct svc_metrics {
	server_t *srv;
	int fd;
	char addr[256];
	const bs_config_t *cfg;
	svc_snap_t *snap;
	svc_counters_t *ctr;
};

/* ------------------------------------------------------------ text */

typedef struct {
	char *p;
	size_t len, cap;
	bool oom;
} mbuf_t;

static void put(mbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(mbuf_t *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if (b->p && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = b->cap ? b->cap * 2 : 16384;
		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
}

static void family(mbuf_t *b, const char *name, const char *type, const char *help)
{
	put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A reason as a label value: its numbers as '#' ("Threads_running # above
 * max_load #"; a shard's name such as s1 stays as it is), so that a label is one series per kind of reason, not one
 * per reading (a value that changes every scrape would make a new series
 * every scrape); the numbers are in the other gauges and the job row. */
static void reason_kind(char *dst, size_t n, const char *s)
{
	size_t o = 0;
	char prev = ' ', before = ' ';

	for (; *s && o + 1 < n; before = prev, prev = *s++) {
		/* digits inside a name ("shard s1", "db-02") are not readings; a
		 * minus sign is a name's only after a letter or digit ("-5" is) */
		bool named =
			isalnum((unsigned char)prev) || prev == '_' || (prev == '-' && isalnum((unsigned char)before));
		if (*s >= '0' && *s <= '9' && !named) {
			while ((s[1] >= '0' && s[1] <= '9') ||
			       ((s[1] == '.' || s[1] == ',' || s[1] == ':') && s[2] >= '0' && s[2] <= '9'))
				s++;
			dst[o++] = '#';
		} else {
			dst[o++] = *s;
		}
	}
	dst[o] = '\0';
}

/* Bytes of the whole UTF-8 character at s (1 to 4), or 0 when s does not
 * start one (a stray continuation byte, a character cut short). */
static size_t utf8_len(const unsigned char *s)
{
	size_t k, len = *s < 0x80 ? 1 : *s < 0xc2 ? 0 : *s < 0xe0 ? 2 : *s < 0xf0 ? 3 : *s < 0xf5 ? 4 : 0;

	for (k = 1; k < len; k++)
		if ((s[k] & 0xc0) != 0x80)
			return 0;
	return len;
}

/* A label value, escaped as the format wants (\\, \", \n), valid UTF-8
 * (a byte that is not part of a whole character becomes '?': a reason cut
 * mid-character would make the whole scrape unreadable). */
static void esc(char *dst, size_t n, const char *s)
{
	size_t o = 0;

	for (; *s && o + 4 < n; s++) {
		size_t len = utf8_len((const unsigned char *)s);
		if (len > 1) {
			memcpy(dst + o, s, len);
			o += len;
			s += len - 1;
			continue;
		}
		if (len == 0) {
			dst[o++] = '?';
			continue;
		}
		if (*s == '\\' || *s == '"') {
			dst[o++] = '\\';
			dst[o++] = *s;
		} else if (*s == '\n') {
			dst[o++] = '\\';
			dst[o++] = 'n';
		} else {
			dst[o++] = *s;
		}
	}
	dst[o] = '\0';
}

static void num(char *dst, size_t n, double v)
{
	if (isnan(v))
		snprintf(dst, n, "NaN");
	else if (isinf(v))
		snprintf(dst, n, v > 0 ? "+Inf" : "-Inf");
	else if (fabs(v) < 9e15 && v == (double)(int64_t)v) /* (the cast is defined only in range) */
		snprintf(dst, n, "%lld", (long long)v);
	else {
		/* the shortest of 15 or 17 digits that reads back as v */
		snprintf(dst, n, "%.15g", v);
		if (strtod(dst, NULL) != v)
			snprintf(dst, n, "%.17g", v);
	}
}

/* name{labels} value; labels is "" or `a="x",b="y"` (already escaped). */
static void sample(mbuf_t *b, const char *name, const char *labels, double v)
{
	char val[64];

	num(val, sizeof val, v);
	if (labels[0])
		put(b, "%s{%s} %s\n", name, labels, val);
	else
		put(b, "%s %s\n", name, val);
}

static const char *shard_label(char *buf, size_t n, const bs_config_t *cfg, int i)
{
	char e[200];

	esc(e, sizeof e, i >= 0 && i < cfg->nshards ? cfg->shards[i].name : "?");
	snprintf(buf, n, "shard=\"%s\"", e);
	return buf;
}

/* ------------------------------------------------------------ families */

static void render_process(mbuf_t *b, svc_counters_t *c)
{
	char l[128];

	family(b, "bagstore_build_info", "gauge", "bagstore's version (the value is always 1)");
	snprintf(l, sizeof l, "version=\"%s\"", BS_VERSION);
	sample(b, "bagstore_build_info", l, 1);
	family(b, "bagstore_start_time_seconds", "gauge", "When this cleaner started, unix seconds");
	sample(b, "bagstore_start_time_seconds", "", (double)c->start_us / 1e6);
}

static void age_sample(mbuf_t *b, const char *source, int64_t at_us, int64_t now)
{
	char l[64];

	if (!at_us)
		return;
	snprintf(l, sizeof l, "source=\"%s\"", source);
	sample(b, "bagstore_collector_age_seconds", l, (double)(now - at_us) / 1e6);
}

static void render_collector(mbuf_t *b, const svc_snap_t *s)
{
	static const char *const names[] = { "status", "lag", "jobs", "verify", "workers", "moves" };
	const char *errs[] = { s->status_err, s->lag_err, s->jobs_err, s->verify_err, s->workers_err, s->moves_err };
	const int64_t at[] = { s->status_at_us, s->lag_at_us,     s->jobs_at_us,
		               s->verify_at_us, s->workers_at_us, s->moves_at_us };
	int64_t now = now_us();
	char l[64];

	family(b, "bagstore_collector_age_seconds", "gauge",
	       "Seconds since the values of a source were last read from the shards (scrapes never wait on a shard)");
	age_sample(b, "status", s->status_at_us, now);
	age_sample(b, "lag", s->lag_at_us, now);
	age_sample(b, "jobs", s->jobs_at_us, now);
	age_sample(b, "verify", s->verify_at_us, now);
	age_sample(b, "workers", s->workers_at_us, now);
	age_sample(b, "moves", s->moves_at_us, now);
	family(b, "bagstore_collector_up", "gauge", "1 when the last read of a source succeeded (0 before the first)");
	for (int k = 0; k < 6; k++) {
		snprintf(l, sizeof l, "source=\"%s\"", names[k]);
		sample(b, "bagstore_collector_up", l, errs[k][0] || !at[k] ? 0 : 1);
	}
	family(b, "bagstore_collector_errors_total", "counter", "Reads of a source that failed");
	sample(b, "bagstore_collector_errors_total", "", (double)s->errors_total);
}

static void render_shards(mbuf_t *b, const bs_config_t *cfg, const svc_snap_t *s)
{
	char l[256];

	if (!s->status)
		return;
	family(b, "bagstore_shard_up", "gauge", "1 when the shard answered the last status read");
	for (int i = 0; i < s->n; i++)
		sample(b, "bagstore_shard_up", shard_label(l, sizeof l, cfg, i), s->status[i].state != BS_SHARD_DOWN);
	family(b, "bagstore_shard_rtt_seconds", "gauge", "Round trip of a trivial query to the shard");
	for (int i = 0; i < s->n; i++)
		if (s->status[i].state != BS_SHARD_DOWN)
			sample(b, "bagstore_shard_rtt_seconds", shard_label(l, sizeof l, cfg, i),
			       s->status[i].rtt_ms / 1e3);
	family(b, "bagstore_shard_threads_running", "gauge", "The shard's Threads_running (what throttles backfills)");
	for (int i = 0; i < s->n; i++)
		if (s->status[i].state != BS_SHARD_DOWN)
			sample(b, "bagstore_shard_threads_running", shard_label(l, sizeof l, cfg, i),
			       (double)s->status[i].threads_running);
	family(b, "bagstore_shard_replica_lag_seconds", "gauge",
	       "The largest Seconds_Behind_Master over the shard's replicas (shards with replicas, when known)");
	for (int i = 0; i < s->n; i++)
		if (s->status[i].state != BS_SHARD_DOWN && s->status[i].replica_lag >= 0)
			sample(b, "bagstore_shard_replica_lag_seconds", shard_label(l, sizeof l, cfg, i),
			       s->status[i].replica_lag);
}

static void render_lag(mbuf_t *b, const bs_config_t *cfg, const svc_snap_t *s)
{
	char l[256];

	if (!s->lag)
		return;
	family(b, "bagstore_repair_lag_seconds", "gauge",
	       "Now minus the repair watermark, on the shard's clock (every entity updated before it is repaired)");
	for (int i = 0; i < s->n; i++)
		if (s->lag[i].reachable && s->lag[i].watermark_us)
			sample(b, "bagstore_repair_lag_seconds", shard_label(l, sizeof l, cfg, i), s->lag[i].lag_s);
	family(b, "bagstore_repair_watermark_timestamp_seconds", "gauge", "The shard's repair watermark, unix seconds");
	for (int i = 0; i < s->n; i++)
		if (s->lag[i].reachable && s->lag[i].watermark_us)
			sample(b, "bagstore_repair_watermark_timestamp_seconds", shard_label(l, sizeof l, cfg, i),
			       (double)s->lag[i].watermark_us / 1e6);
	family(b, "bagstore_repair_last_pass_timestamp_seconds", "gauge",
	       "When the last repair pass on the shard ended (by any cleaner), unix seconds");
	for (int i = 0; i < s->n; i++)
		if (s->lag[i].reachable && s->lag[i].last_pass_us)
			sample(b, "bagstore_repair_last_pass_timestamp_seconds", shard_label(l, sizeof l, cfg, i),
			       (double)s->lag[i].last_pass_us / 1e6);
}

static void render_repair_counters(mbuf_t *b, const bs_config_t *cfg, const svc_counters_t *c)
{
	char l[512], sl[256], ix[200];

	family(b, "bagstore_repair_passes_total", "counter", "Repair passes this cleaner ran, per shard");
	for (int i = 0; i < c->n; i++)
		sample(b, "bagstore_repair_passes_total", shard_label(sl, sizeof sl, cfg, i),
		       (double)c->repair_passes[i]);
	family(b, "bagstore_repair_entities_total", "counter", "Entities this cleaner's repair passes looked at");
	for (int i = 0; i < c->n; i++)
		sample(b, "bagstore_repair_entities_total", shard_label(sl, sizeof sl, cfg, i),
		       (double)c->repair_rows[i]);
	family(b, "bagstore_repair_index_rows_inserted_total", "counter",
	       "Index rows this cleaner's repair passes inserted or overwrote (shard: where the pass ran)");
	for (int k = 0; k < c->nrepair; k++) {
		esc(ix, sizeof ix, c->repair[k].index);
		snprintf(l, sizeof l, "index=\"%s\",%s", ix, shard_label(sl, sizeof sl, cfg, c->repair[k].shard));
		sample(b, "bagstore_repair_index_rows_inserted_total", l, (double)c->repair[k].inserted);
	}
	family(b, "bagstore_repair_index_rows_deleted_total", "counter",
	       "Index rows this cleaner's repair passes deleted (stale or orphaned)");
	for (int k = 0; k < c->nrepair; k++) {
		esc(ix, sizeof ix, c->repair[k].index);
		snprintf(l, sizeof l, "index=\"%s\",%s", ix, shard_label(sl, sizeof sl, cfg, c->repair[k].shard));
		sample(b, "bagstore_repair_index_rows_deleted_total", l, (double)c->repair[k].deleted);
	}
}

static const char *job_labels(char *l, size_t n, const bs_config_t *cfg, const bs_job_t *j)
{
	char ix[200], sl[256];

	esc(ix, sizeof ix, j->index);
	snprintf(l, n, "index=\"%s\",%s", ix, shard_label(sl, sizeof sl, cfg, j->shard));
	return l;
}

static void render_jobs(mbuf_t *b, const bs_config_t *cfg, const svc_snap_t *s)
{
	static const struct {
		const char *name, *help;
	} g[] = {
		{ "bagstore_backfill_rows_scanned",
		  "Entities a backfill job scanned (one job: an index on a source shard)" },
		{ "bagstore_backfill_rows_expected", "Entities the job expects to scan (counted when it started)" },
		{ "bagstore_backfill_rows_written", "Index rows the job wrote" },
		{ "bagstore_backfill_rate_rows_per_second",
		  "Entities scanned per second over the last 10 s (0 when not running)" },
	};
	char l[512], rs[1200], reason[520];

	if (!s->jobs_at_us)
		return;
	for (size_t f = 0; f < sizeof g / sizeof *g; f++) {
		family(b, g[f].name, "gauge", g[f].help);
		for (int k = 0; k < s->jobs.len; k++) {
			const bs_job_t *j = &s->jobs.items[k];
			double v = f == 0   ? (double)j->rows_scanned
			           : f == 1 ? (double)j->rows_total
			           : f == 2 ? (double)j->rows_written
			                    : j->rate;
			sample(b, g[f].name, job_labels(l, sizeof l, cfg, j), v);
		}
	}
	family(b, "bagstore_backfill_eta_seconds", "gauge", "Seconds a running job should still take, at its rate");
	for (int k = 0; k < s->jobs.len; k++)
		if (s->jobs.items[k].eta_s >= 0)
			sample(b, "bagstore_backfill_eta_seconds", job_labels(l, sizeof l, cfg, &s->jobs.items[k]),
			       s->jobs.items[k].eta_s);
	family(b, "bagstore_backfill_state", "gauge",
	       "1 for a job's state now; reason: why it is throttled, paused or failed, numbers as # (\"\" when none)");
	for (int k = 0; k < s->jobs.len; k++) {
		const bs_job_t *j = &s->jobs.items[k];
		char kind[sizeof j->reason];
		reason_kind(kind, sizeof kind, j->reason);
		esc(reason, sizeof reason, kind);
		snprintf(rs, sizeof rs, "%s,state=\"%s\",reason=\"%s\"", job_labels(l, sizeof l, cfg, j),
		         bs_job_state_name(j->state), reason);
		sample(b, "bagstore_backfill_state", rs, 1);
	}
}

static const char *move_labels(char *l, size_t n, const bs_move_t *m)
{
	char src[200], dst[200];

	esc(src, sizeof src, m->source);
	esc(dst, sizeof dst, m->target);
	snprintf(l, n, "move=\"%lld\",source=\"%s\",target=\"%s\"", (long long)m->id, src, dst);
	return l;
}

/* The latest reshard's moves, labelled as backfill jobs are (a move is a
 * job: its id, its source and target shards), and the reshard's state. */
static void render_moves(mbuf_t *b, const svc_snap_t *s)
{
	/* a phase as a label: the column's names (bagstore_moves.phase) */
	static const char *const phases[] = { "copy", "index", "catchup", "cutover", "cleanup", "done", "undo" };
	static const struct {
		const char *name, *help;
	} g[] = {
		{ "bagstore_move_buckets", "Buckets a move moves (one move: buckets from a source shard to a target)" },
		{ "bagstore_move_rows_scanned", "Entities of the source the move's copy scanned" },
		{ "bagstore_move_rows_expected",
		  "Entities of the source the copy expects to scan (counted when it started)" },
		{ "bagstore_move_rows_copied", "Entities of the moving buckets the copy wrote to the target" },
		{ "bagstore_move_index_rows_copied", "Index rows of the moving buckets copied to the target" },
		{ "bagstore_move_index_rows_expected",
		  "Index rows of the source the index phase expects to scan (estimate)" },
		{ "bagstore_move_log_rows_replayed", "Change-log entries (writes during the move) catch-up replayed" },
		{ "bagstore_move_rate_rows_per_second",
		  "Rows per second of the current phase over the last 10 s (0 when not running)" },
		{ "bagstore_move_progress_ratio", "How much of the whole move is done, 0 to 1" },
		{ "bagstore_move_fence_seconds",
		  "The longest cut-over fence the move held (writers of its buckets wait during it)" },
		{ "bagstore_move_fence_rollbacks",
		  "Cut-overs of the move rolled back for holding the fence past cleaner.max_fence" },
	};
	char l[600], rs[1400], reason[520];

	if (!s->moves_at_us)
		return;
	family(b, "bagstore_reshard_state", "gauge",
	       "1 for the latest reshard's state now (idle: none recorded; then running, paused, done, failed, "
	       "cancelled)");
	snprintf(l, sizeof l, "state=\"%s\"", bs_reshard_state_name(bs_reshard_state(&s->moves)));
	sample(b, "bagstore_reshard_state", l, 1);
	family(b, "bagstore_reshard_plan", "gauge", "The latest reshard's plan id (0: none recorded)");
	sample(b, "bagstore_reshard_plan", "", s->moves.len ? (double)s->moves.items[0].plan_id : 0);
	family(b, "bagstore_reshard_unreachable_shards", "gauge",
	       "Shards whose moves could not be read at the last read (their moves are missing above)");
	sample(b, "bagstore_reshard_unreachable_shards", "", s->moves_unreachable);
	for (size_t f = 0; f < sizeof g / sizeof *g; f++) {
		family(b, g[f].name, "gauge", g[f].help);
		for (int k = 0; k < s->moves.len; k++) {
			const bs_move_t *m = &s->moves.items[k];
			const double v[] = { m->nbuckets,           (double)m->rows_scanned,
				             (double)m->rows_total, (double)m->rows_copied,
				             (double)m->index_rows, (double)m->index_total,
				             (double)m->log_rows,   m->rate,
				             m->progress,           m->fence_ms / 1e3,
				             m->fence_tries };
			sample(b, g[f].name, move_labels(l, sizeof l, m), v[f]);
		}
	}
	family(b, "bagstore_move_log_backlog_rows", "gauge",
	       "Change-log entries on the source not replayed yet (writes to the moving buckets catch-up still owes; "
	       "absent while the source does not answer)");
	for (int k = 0; k < s->moves.len; k++)
		if (s->backlog && s->backlog[k] >= 0)
			sample(b, "bagstore_move_log_backlog_rows", move_labels(l, sizeof l, &s->moves.items[k]),
			       (double)s->backlog[k]);
	family(b, "bagstore_move_eta_seconds", "gauge", "Seconds a running move should still take, at its rate");
	for (int k = 0; k < s->moves.len; k++)
		if (s->moves.items[k].eta_s >= 0)
			sample(b, "bagstore_move_eta_seconds", move_labels(l, sizeof l, &s->moves.items[k]),
			       s->moves.items[k].eta_s);
	family(b, "bagstore_move_heartbeat_timestamp_seconds", "gauge",
	       "When the move's worker last beat on it, unix seconds on the source's clock (a running move whose beat "
	       "stops is stuck)");
	for (int k = 0; k < s->moves.len; k++)
		if (s->moves.items[k].heartbeat_us)
			sample(b, "bagstore_move_heartbeat_timestamp_seconds",
			       move_labels(l, sizeof l, &s->moves.items[k]),
			       (double)s->moves.items[k].heartbeat_us / 1e6);
	family(b, "bagstore_move_phase", "gauge",
	       "1 for a move's phase now (copy, index, catchup, cutover, cleanup, done, undo)");
	for (int k = 0; k < s->moves.len; k++) {
		const bs_move_t *m = &s->moves.items[k];
		snprintf(rs, sizeof rs, "%s,phase=\"%s\"", move_labels(l, sizeof l, m),
		         (unsigned)m->phase < sizeof phases / sizeof *phases ? phases[m->phase] : "unknown");
		sample(b, "bagstore_move_phase", rs, 1);
	}
	family(b, "bagstore_move_state", "gauge",
	       "1 for a move's state now; reason: why it is throttled, waiting or failed, or how a running one is "
	       "paced, numbers as # (\"\" when none)");
	for (int k = 0; k < s->moves.len; k++) {
		const bs_move_t *m = &s->moves.items[k];
		char kind[sizeof m->reason];
		reason_kind(kind, sizeof kind, m->reason);
		esc(reason, sizeof reason, kind);
		snprintf(rs, sizeof rs, "%s,state=\"%s\",reason=\"%s\"", move_labels(l, sizeof l, m),
		         bs_job_state_name(m->state), reason);
		sample(b, "bagstore_move_state", rs, 1);
	}
}

/* One gauge family over the indexes with a recorded verify: field f of
 * each (0 checked, 1..3 missing/stale/orphaned by kind, 4 misfit, 5
 * corrupt, 6 when). */
static void verify_family(mbuf_t *b, const svc_snap_t *s, const char *name, const char *help, int f)
{
	static const char *const kinds[] = { "missing", "stale", "orphaned" };
	char ix[200], l[360];

	family(b, name, "gauge", help);
	for (int k = 0; k < s->indexes.len; k++) {
		const bs_drift_t *d = &s->verify[k];
		if (!s->have_verify[k])
			continue;
		esc(ix, sizeof ix, s->indexes.items[k].name);
		if (f >= 1 && f <= 3) {
			const int64_t drift[] = { d->missing, d->stale, d->orphaned };
			for (int x = 0; x < 3; x++) {
				snprintf(l, sizeof l, "index=\"%s\",kind=\"%s\"", ix, kinds[x]);
				sample(b, name, l, (double)drift[x]);
			}
			continue;
		}
		snprintf(l, sizeof l, "index=\"%s\"", ix);
		sample(b, name, l,
		       f == 0   ? (double)d->checked
		       : f == 4 ? (double)d->misfit
		       : f == 5 ? (double)(d->corrupt + d->unprintable)
		                : (double)d->at_us / 1e6);
	}
}

static void render_verify(mbuf_t *b, const svc_snap_t *s)
{
	char ix[200], l[300];

	if (!s->verify_at_us)
		return;
	family(b, "bagstore_index_state", "gauge", "1 for an index's state now (building, ready, disabled)");
	for (int k = 0; k < s->indexes.len; k++) {
		esc(ix, sizeof ix, s->indexes.items[k].name);
		snprintf(l, sizeof l, "index=\"%s\",state=\"%s\"", ix, bs_index_state_name(s->indexes.items[k].state));
		sample(b, "bagstore_index_state", l, 1);
	}
	verify_family(b, s, "bagstore_verify_entities_checked", "Entities the last verify of the index read", 0);
	verify_family(b, s, "bagstore_verify_drift_rows", "Index rows the last verify found missing, stale or orphaned",
	              1);
	verify_family(b, s, "bagstore_verify_misfit_entities", "Entities whose value does not fit the index's type", 4);
	verify_family(b, s, "bagstore_verify_corrupt_bodies", "Bodies the last verify found corrupt or unprintable", 5);
	verify_family(b, s, "bagstore_verify_timestamp_seconds", "When the last verify of the index ran, unix seconds",
	              6);
}

static void render_service(mbuf_t *b, const svc_snap_t *s, const svc_counters_t *c)
{
	static const char *const hooks[] = { "ok", "failed", "timeout", "dropped" };
	const int64_t hv[] = { c->hooks_ok, c->hooks_failed, c->hooks_timeout, c->hooks_dropped };
	char l[128];

	if (s->workers_at_us) {
		static const char *const kinds[] = { "cleaner", "backfill", "console" };
		family(b, "bagstore_workers", "gauge", "Registered workers (bagstore workers), by kind and state");
		for (int k = 0; k < 3; k++)
			for (int alive = 1; alive >= 0; alive--) {
				int n = 0;
				for (int x = 0; x < s->workers.len; x++)
					n += s->workers.items[x].alive == alive &&
					     !strcmp(s->workers.items[x].kind, kinds[k]);
				snprintf(l, sizeof l, "kind=\"%s\",state=\"%s\"", kinds[k], alive ? "alive" : "dead");
				sample(b, "bagstore_workers", l, n);
			}
	}
	family(b, "bagstore_events_total", "counter", "Events of this cleaner, by event (as logged)");
	for (int e = 0; e < BS_EV_COUNT; e++) {
		snprintf(l, sizeof l, "event=\"%s\"", bs_event_name((bs_event_type_t)e));
		sample(b, "bagstore_events_total", l, (double)c->events[e]);
	}
	family(b, "bagstore_hooks_total", "counter", "Hook runs, by result");
	for (int k = 0; k < 4; k++) {
		snprintf(l, sizeof l, "result=\"%s\"", hooks[k]);
		sample(b, "bagstore_hooks_total", l, (double)hv[k]);
	}
	family(b, "bagstore_reloads_total", "counter", "SIGHUP reloads of the cleaner: settings, by result");
	sample(b, "bagstore_reloads_total", "result=\"ok\"", (double)c->reloads_ok);
	sample(b, "bagstore_reloads_total", "result=\"failed\"", (double)c->reloads_failed);
}

char *svc_metrics_render(size_t *len, const bs_config_t *cfg, svc_snap_t *snap, svc_counters_t *ctr)
{
	mbuf_t b = { 0 };

	pthread_mutex_lock(&ctr->mu);
	render_process(&b, ctr);
	render_repair_counters(&b, cfg, ctr);
	pthread_mutex_lock(&snap->mu);
	render_collector(&b, snap);
	render_shards(&b, cfg, snap);
	render_lag(&b, cfg, snap);
	render_jobs(&b, cfg, snap);
	render_moves(&b, snap);
	render_verify(&b, snap);
	render_service(&b, snap, ctr);
	pthread_mutex_unlock(&snap->mu);
	pthread_mutex_unlock(&ctr->mu);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	*len = b.len;
	return b.p;
}

/* ------------------------------------------------------------ HTTP */

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, const char *type, char *body, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result text(struct MHD_Connection *c, unsigned status, const char *msg)
{
	char *body = strdup(msg);

	return answer(c, status, "text/plain; charset=utf-8", body, body ? strlen(msg) : 0);
}

/* The client's certificate, as the web configuration asks: NULL when it
 * passes, else why not. */
static const char *client_cert_refused(struct MHD_Connection *c, const svc_web_t *w)
{
	const union MHD_ConnectionInfo *ci;
	unsigned status = 0, npeers = 0;
	int rc;

	if (w->client_auth == SVC_WEB_NO_CLIENT_CERT)
		return NULL;
	if (!(ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION)) || !ci->tls_session)
		return "no TLS session\n";
	rc = gnutls_certificate_verify_peers2((gnutls_session_t)ci->tls_session, &status);
	if (rc == GNUTLS_E_NO_CERTIFICATE_FOUND ||
	    (rc == 0 && (!gnutls_certificate_get_peers(ci->tls_session, &npeers) || !npeers)))
		return w->client_auth == SVC_WEB_REQUIRE_AND_VERIFY ? "a client certificate is required\n" : NULL;
	if (rc < 0 || status != 0)
		return "the client certificate is not signed by the client CA (or not valid now)\n";
	return NULL;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	server_t *sv = cls;
	svc_metrics_t *m = sv->m;
	size_t len = 0;
	char *body;
	const char *why;

	(void)version;
	(void)upload;
	(void)upload_size;
	(void)con_cls;
	if (sv->web) {
		if ((why = client_cert_refused(c, sv->web)))
			return text(c, MHD_HTTP_FORBIDDEN, why);
		if (sv->web->nusers) {
			char *pass = NULL, *user = MHD_basic_auth_get_username_password(c, &pass);
			bool ok = svc_web_check(sv->web, user, pass);
			if (pass) {
				explicit_bzero(pass, strlen(pass));
				MHD_free(pass);
			}
			if (user)
				MHD_free(user);
			if (!ok) {
				static const char msg[] = "401 Unauthorized: /metrics wants a user and password\n";
				struct MHD_Response *r = MHD_create_response_from_buffer(sizeof msg - 1, (void *)msg,
				                                                         MHD_RESPMEM_PERSISTENT);
				enum MHD_Result ret;
				if (!r)
					return MHD_NO;
				MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
				ret = MHD_queue_basic_auth_fail_response(c, "bagstore cleaner", r);
				MHD_destroy_response(r);
				return ret;
			}
		}
	}
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET only\n");
	if (strcmp(url, "/metrics") == 0) {
		if (!(body = svc_metrics_render(&len, m->cfg, m->snap, m->ctr)))
			return text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
		return answer(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, len);
	}
	if (strcmp(url, "/") == 0)
		return text(c, MHD_HTTP_OK, "bagstore cleaner: metrics at /metrics\n");
	return text(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n");
}

static bool loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

/* A listening socket on HOST:PORT (IPv6 in brackets), or -1 with err;
 * *lo: whether it is a loopback address. */
static int listen_on(const char *addr, bool *lo, char *err, size_t size)
{
	char host[256];
	const char *colon = strrchr(addr, ':');
	struct addrinfo hints = { .ai_flags = AI_NUMERICSERV | AI_PASSIVE, .ai_socktype = SOCK_STREAM }, *ai = NULL;
	int fd = -1, one = 1, rc;

	if (bs_listen_addr_check(err, size, addr) < 0)
		return -1;
	if ((size_t)(colon - addr) >= sizeof host) {
		snprintf(err, size, "%s: the host is too long", addr);
		return -1;
	}
	snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	if ((rc = getaddrinfo(host, colon + 1, &hints, &ai)) != 0) {
		snprintf(err, size, "%s: %s", addr, gai_strerror(rc));
		return -1;
	}
	*lo = loopback(ai->ai_addr);
	if ((fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 64) != 0) {
		snprintf(err, size, "%s: %s", addr, strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	return fd;
}

/* A daemon on m's socket serving with web (taken over; NULL: open). */
static server_t *serve(svc_metrics_t *m, svc_web_t *web, char *err, size_t size)
{
	server_t *sv = calloc(1, sizeof *sv);
	unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ITC;

	if (!sv) {
		snprintf(err, size, "out of memory");
		svc_web_free(web);
		return NULL;
	}
	*sv = (server_t){ .web = web, .m = m };
	if (web && web->cert_pem && !MHD_is_feature_supported(MHD_FEATURE_TLS)) {
		snprintf(err, size, "%s: tls_server_config: this libmicrohttpd is built without TLS", web->path);
		goto fail;
	}
	if (web && web->cert_pem)
		sv->d = MHD_start_daemon(flags | MHD_USE_TLS, 0, NULL, NULL, handle, sv, MHD_OPTION_LISTEN_SOCKET,
		                         m->fd, MHD_OPTION_CONNECTION_LIMIT, (unsigned)32,
		                         MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_HTTPS_MEM_KEY,
		                         web->key_pem, MHD_OPTION_HTTPS_MEM_CERT, web->cert_pem,
		                         MHD_OPTION_HTTPS_MEM_TRUST, web->ca_pem, MHD_OPTION_END);
	else
		sv->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, sv, MHD_OPTION_LISTEN_SOCKET, m->fd,
		                         MHD_OPTION_CONNECTION_LIMIT, (unsigned)32, MHD_OPTION_CONNECTION_TIMEOUT,
		                         (unsigned)10, MHD_OPTION_END);
	if (sv->d)
		return sv;
	snprintf(err, size, "%s: libmicrohttpd did not start%s", m->addr, web && web->cert_pem ? " with TLS" : "");
fail:
	svc_web_free(web);
	free(sv);
	return NULL;
}

int svc_metrics_start(svc_metrics_t **out, const svc_metrics_conf_t *mc, const bs_config_t *cfg, svc_snap_t *snap,
                      svc_counters_t *ctr, char *err, size_t size)
{
	svc_metrics_t *m = calloc(1, sizeof *m);
	svc_web_t *web = NULL;
	bool lo = false;
	int rc = -2;

	*out = NULL;
	if (!m) {
		snprintf(err, size, "out of memory");
		return -1;
	}
	*m = (svc_metrics_t){ .fd = -1, .cfg = cfg, .snap = snap, .ctr = ctr };
	snprintf(m->addr, sizeof m->addr, "%s", mc->addr);
	if (mc->web_config && svc_web_load(&web, mc->web_config, err, size) < 0) {
		char msg[768];
		snprintf(msg, sizeof msg, "%s", err);
		snprintf(err, size, "%s: %s", mc->web_from, msg);
		goto fail;
	}
	rc = -1;
	if ((m->fd = listen_on(mc->addr, &lo, err, size)) < 0)
		goto fail;
	rc = -2;
	if (!lo && !web && !mc->insecure) {
		snprintf(err, size,
		         "%s: %s is not a loopback address and /metrics has no web configuration: anyone who "
		         "reaches it would read it; give one (cleaner.metrics_web_config or --web.config.file: TLS and "
		         "basic auth, as Prometheus's exporters take) or say cleaner.metrics_insecure: true",
		         mc->addr_from, mc->addr);
		goto fail;
	}
	rc = -1;
	if (!(m->srv = serve(m, web, err, size))) {
		web = NULL;
		goto fail;
	}
	*out = m;
	return 0;
fail:
	svc_web_free(web);
	if (m->fd >= 0)
		close(m->fd);
	free(m);
	return rc;
}

int svc_metrics_reload_web(svc_metrics_t *m, char *err, size_t size)
{
	svc_web_t *web = NULL;
	server_t *old = m->srv, *sv;

	if (!old || !old->web)
		return 1;
	if (svc_web_load(&web, old->web->path, err, size) < 0)
		return -1;
	/* the old daemon stops accepting (its socket stays open), the new one
	 * accepts on it, then the old one stops: a scrape it was answering at
	 * that instant is cut (the scraper's next one goes to the new one) */
	if (MHD_quiesce_daemon(old->d) < 0) {
		snprintf(err, size, "%s: libmicrohttpd could not hand its socket over", m->addr);
		svc_web_free(web);
		return -1;
	}
	if (!(sv = serve(m, web, err, size))) {
		/* serve with what served before (else there is no /metrics) */
		char e2[256];
		MHD_stop_daemon(old->d);
		sv = serve(m, old->web, e2, sizeof e2);
		free(old);
		if (!(m->srv = sv))
			snprintf(err + strlen(err), size - strlen(err), "; and again with the old one: %s", e2);
		return -1;
	}
	m->srv = sv;
	MHD_stop_daemon(old->d);
	svc_web_free(old->web);
	free(old);
	return 0;
}

const char *svc_metrics_protection(const svc_metrics_t *m)
{
	const svc_web_t *w = m->srv ? m->srv->web : NULL;

	if (!m->srv)
		return NULL;
	if (!w)
		return "open";
	if (w->cert_pem && w->client_auth != SVC_WEB_NO_CLIENT_CERT)
		return w->nusers ? "TLS, client certificates and basic auth" : "TLS and client certificates";
	if (w->cert_pem)
		return w->nusers ? "TLS and basic auth" : "TLS";
	return "basic auth, no TLS: passwords cross the network in clear";
}

void svc_metrics_stop(svc_metrics_t *m)
{
	if (!m)
		return;
	if (m->srv) {
		MHD_stop_daemon(m->srv->d); /* closes the listening socket it was given */
		svc_web_free(m->srv->web);
		free(m->srv);
	} else if (m->fd >= 0) {
		close(m->fd);
	}
	free(m);
}

/*
 * svc.c - `bagstore cleaner`, the daemon, as a service: its start and stop,
 * its signals, the engine's events turned into log lines, counters and
 * hooks, the worker registry, and systemd's notify protocol.
 *
 * Threads (see service.h): the main thread runs the engine's loop
 * (bs_cleaner_run); svc's own thread waits for SIGTERM, SIGINT and SIGHUP
 * (blocked in every other thread, before any starts) and, four times a
 * second, does the periodic work: READY=1 once every shard answered,
 * STATUS= when it changes, WATCHDOG=1 while the loop is alive, repair
 * summaries in the log, the registry's "doing". It never touches a shard.
 *
 * SIGTERM or SIGINT: the stop flag the engine polls (backfills finish the
 * chunk in hand, checkpoint and put their jobs back to queued; the loop
 * ends), then the registry row is deleted and the process exits 0. A
 * second one exits at once, whatever the stop is waiting on (a hung shard,
 * a hook), status 1, with a log line that says so; the jobs it held are
 * taken over from their checkpoints as after a kill (their locks die with
 * its connections). svc's thread keeps waiting for signals until svc_end
 * is done: it stops its periodic work when svc_end begins (`ending`).
 * SIGHUP: the configuration file is read again; its cleaner: settings and
 * hooks take effect (doc/DESIGN.md says when each one does); the rest of
 * it needs a restart, and the log says so when it changed.
 */
#include "service.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fmt.h"

#define TICK_MS 250
#define MAX_HELD 256
#define MAX_AGG 32         /* indexes per shard in a repair summary */
#define IDLE_SUMMARY 12    /* an idle shard's summary: every 12 log_every */
#define LOOP_STALL_S 600.0 /* the watchdog starves after this without a loop pass */
#define REPAIR_FRESH_S 5.0 /* a shard is "repaired here" this long after a pass */

typedef struct {
	char index[BS_NAME_MAX + 1];
	int shard;
	bs_job_t job;
	double last_log; /* monotonic: its last progress line */
} held_t;

/* A shard's repair passes since its last summary line. */
typedef struct {
	int64_t passes, rows;
	svc_repair_ctr_t ix[MAX_AGG];
	int nix;
	double last_line, last_pass;
	int64_t watermark_us;
} agg_t;

typedef struct {
	cli_ctx_t *ctx;
	const bs_config_t *cfg;
	const svc_opts_t *opts;
	atomic_int stop;
	atomic_bool quit;     /* svc's thread: leave */
	atomic_llong loop_ms; /* monotonic ms of the engine loop's last pass */
	bs_cleaner_live_t *live;
	bs_worker_t *worker;
	svc_log_t log;
	svc_counters_t ctr;
	svc_notify_t nfy;
	svc_watch_t *watch;
	svc_snap_t *snap;
	svc_metrics_t *metrics;
	const char *metrics_addr;
	svc_hooks_t *hooks;
	pthread_t tid;
	bool tid_started;
	/* set by svc_end under tick_mu: svc's thread then only waits for
	 * signals (no tick touches what svc_end stops); on_signal and the
	 * ticks run under tick_mu */
	pthread_mutex_t tick_mu;
	bool ending;
	double started;  /* monotonic */
	int64_t signals; /* TERM/INT received (svc's thread only) */
	char stop_reason[32];
	/* under mu: what events tell */
	pthread_mutex_t mu;
	held_t held[MAX_HELD];
	int nheld;
	agg_t *agg; /* per shard */
	double log_every;
	char last_err[512];
	/* svc's thread only */
	bool ready_sent;
	double last_status, last_watchdog;
	char status[256], doing_jobs[1024], doing_repair[1024];
	int registry_ok;
	bool *plain_said; /* per shard: its plain text under tls.mode preferred logged */
	/* under mu: what was last logged of each move (a line when it changes) */
	struct {
		int64_t id;
		bs_job_state_t state;
		bs_move_phase_t phase;
	} moves[32];
	int nmoves;
} svc_t;

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *sname(const svc_t *s, int i)
{
	return i >= 0 && i < s->cfg->nshards ? s->cfg->shards[i].name : "?";
}

/* ------------------------------------------------------------ counters */

int svc_counters_init(svc_counters_t *c, int nshards)
{
	memset(c, 0, sizeof *c);
	pthread_mutex_init(&c->mu, NULL);
	c->n = nshards;
	c->start_us = now_us();
	c->repair_passes = calloc((size_t)nshards, sizeof *c->repair_passes);
	c->repair_rows = calloc((size_t)nshards, sizeof *c->repair_rows);
	if (!c->repair_passes || !c->repair_rows)
		return bs_error(BS_ENOMEM, "out of memory");
	return 0;
}

void svc_counters_free(svc_counters_t *c)
{
	free(c->repair_passes);
	free(c->repair_rows);
	free(c->repair);
	pthread_mutex_destroy(&c->mu);
}

void svc_counters_repair(svc_counters_t *c, const bs_event_t *ev)
{
	pthread_mutex_lock(&c->mu);
	if (ev->shard >= 0 && ev->shard < c->n) {
		c->repair_passes[ev->shard]++;
		c->repair_rows[ev->shard] += ev->rows;
	}
	for (int k = 0; k < ev->nindexes; k++) {
		int x;
		for (x = 0; x < c->nrepair; x++)
			if (c->repair[x].shard == ev->shard && !strcmp(c->repair[x].index, ev->indexes[k].index))
				break;
		if (x == c->nrepair) {
			if (c->nrepair == c->caprepair) {
				int cap = c->caprepair ? 2 * c->caprepair : 16;
				svc_repair_ctr_t *r = realloc(c->repair, (size_t)cap * sizeof *r);
				if (!r)
					continue;
				c->repair = r;
				c->caprepair = cap;
			}
			memset(&c->repair[x], 0, sizeof c->repair[x]);
			snprintf(c->repair[x].index, sizeof c->repair[x].index, "%s", ev->indexes[k].index);
			c->repair[x].shard = ev->shard;
			c->nrepair++;
		}
		c->repair[x].inserted += ev->indexes[k].inserted;
		c->repair[x].deleted += ev->indexes[k].deleted;
	}
	pthread_mutex_unlock(&c->mu);
}

/* ------------------------------------------------------------ hooks */

/* The hook's environment for an event about a job (job may be NULL). */
static void fire(svc_t *s, bs_hook_t h, const bs_event_t *ev)
{
	char v[12][1200], when[40];
	const char *env[12];
	int n = 0;

	if (!s->hooks)
		return;
	fmt_iso_utc(when, sizeof when, ev->at_us);
	snprintf(v[n++], sizeof v[0], "BAGSTORE_EVENT=%s", bs_hook_name(h));
	snprintf(v[n++], sizeof v[0], "BAGSTORE_INDEX=%s", ev->index ? ev->index : "");
	snprintf(v[n++], sizeof v[0], "BAGSTORE_SHARD=%s", ev->shard >= 0 ? sname(s, ev->shard) : "");
	snprintf(v[n++], sizeof v[0], "BAGSTORE_MESSAGE=%.1100s", ev->message ? ev->message : "");
	snprintf(v[n++], sizeof v[0], "BAGSTORE_TIME=%s", when);
	snprintf(v[n++], sizeof v[0], "BAGSTORE_WORKER_ID=%s", bs_worker_id(s->worker));
	snprintf(v[n++], sizeof v[0], "BAGSTORE_PID=%d", (int)getpid());
	snprintf(v[n++], sizeof v[0], "BAGSTORE_CONFIG=%s", s->cfg->path ? s->cfg->path : "");
	if (ev->job) {
		snprintf(v[n++], sizeof v[0], "BAGSTORE_ROWS_SCANNED=%" PRId64, ev->job->rows_scanned);
		snprintf(v[n++], sizeof v[0], "BAGSTORE_ROWS_TOTAL=%" PRId64, ev->job->rows_total);
		snprintf(v[n++], sizeof v[0], "BAGSTORE_ROWS_WRITTEN=%" PRId64, ev->job->rows_written);
	}
	for (int k = 0; k < n; k++)
		env[k] = v[k];
	svc_hooks_fire(s->hooks, h, env, n);
}

/* ------------------------------------------------------------ job events */

static held_t *held_find(svc_t *s, const bs_event_t *ev, bool add)
{
	for (int k = 0; k < s->nheld; k++)
		if (s->held[k].shard == ev->shard && !strcmp(s->held[k].index, ev->index))
			return &s->held[k];
	if (!add || s->nheld == MAX_HELD)
		return NULL;
	held_t *h = &s->held[s->nheld++];
	memset(h, 0, sizeof *h);
	snprintf(h->index, sizeof h->index, "%s", ev->index);
	h->shard = ev->shard;
	return h;
}

static void held_drop(svc_t *s, const bs_event_t *ev)
{
	held_t *h = held_find(s, ev, false);
	if (h)
		*h = s->held[--s->nheld];
}

static json_t *job_fields(const svc_t *s, const bs_event_t *ev)
{
	json_t *f = json_object();
	const bs_job_t *j = ev->job;

	json_object_set_new(f, "index", cli_jstr(ev->index));
	json_object_set_new(f, "shard", cli_jstr(sname(s, ev->shard)));
	if (j) {
		json_object_set_new(f, "state", json_string(bs_job_state_name(j->state)));
		json_object_set_new(f, "rows_scanned", json_integer(j->rows_scanned));
		json_object_set_new(f, "rows_total", json_integer(j->rows_total));
		json_object_set_new(f, "rows_written", json_integer(j->rows_written));
		json_object_set_new(f, "rate", json_real(j->rate));
		json_object_set_new(f, "cursor", json_integer(j->cursor));
	}
	if (ev->message && ev->message[0])
		json_object_set_new(f, "reason", cli_jstr(ev->message));
	if (ev->code)
		json_object_set_new(f, "code", json_string(bs_strerror(ev->code)));
	return f;
}

static double pct(const bs_job_t *j)
{
	return j->rows_total > 0 ? 100.0 * (double)j->rows_scanned / (double)j->rows_total : 100.0;
}

static void on_progress_event(svc_t *s, const bs_event_t *ev)
{
	held_t *h = held_find(s, ev, true);
	const bs_job_t *j = ev->job;
	char eta[32];

	if (!h)
		return;
	h->job = *j;
	if (mono() - h->last_log < s->log_every)
		return;
	h->last_log = mono();
	svc_log(&s->log, LOG_INFO_, "job_progress", job_fields(s, ev),
	        "backfill of %s on shard %s: %" PRId64 " of %" PRId64 " rows (%.1f%%), %.0f rows/s, eta %s", ev->index,
	        sname(s, ev->shard), j->rows_scanned, j->rows_total, pct(j), j->rate,
	        fmt_secs(eta, sizeof eta, j->eta_s));
}

/* Under s->mu. */
static void on_job_event(svc_t *s, const bs_event_t *ev)
{
	const bs_job_t *j = ev->job;
	const char *sh = sname(s, ev->shard);
	held_t *h;

	switch (ev->type) {
	case BS_EV_JOB_CLAIMED:
		if ((h = held_find(s, ev, true))) {
			h->job = *j;
			h->last_log = mono();
		}
		svc_log(&s->log, LOG_INFO_, "job_claimed", job_fields(s, ev),
		        "backfill of %s on shard %s claimed: %s at %" PRId64 " of %" PRId64 " rows", ev->index, sh,
		        j->rows_scanned ? "resumes" : "starts", j->rows_scanned, j->rows_total);
		fire(s, BS_HOOK_BACKFILL_STARTED, ev);
		break;
	case BS_EV_JOB_PROGRESS: on_progress_event(s, ev); break;
	case BS_EV_JOB_DONE:
		held_drop(s, ev);
		svc_log(&s->log, LOG_INFO_, "job_done", job_fields(s, ev),
		        "backfill of %s on shard %s done: %" PRId64 " entities scanned, %" PRId64 " index rows written",
		        ev->index, sh, j->rows_scanned, j->rows_written);
		fire(s, BS_HOOK_BACKFILL_DONE, ev);
		break;
	case BS_EV_JOB_FAILED:
		held_drop(s, ev);
		svc_log(&s->log, LOG_ERROR_, "job_failed", job_fields(s, ev), "backfill of %s on shard %s failed: %s",
		        ev->index, sh, ev->message);
		fire(s, BS_HOOK_BACKFILL_FAILED, ev);
		break;
	case BS_EV_JOB_RELEASED:
		held_drop(s, ev);
		svc_log(&s->log, LOG_INFO_, "job_released", job_fields(s, ev),
		        "backfill of %s on shard %s released: %s", ev->index, sh, ev->message);
		break;
	case BS_EV_THROTTLE_ON:
		svc_log(&s->log, LOG_WARN_, "throttle_on", job_fields(s, ev),
		        "backfill of %s on shard %s throttled: %s", ev->index, sh, ev->message);
		fire(s, BS_HOOK_THROTTLED, ev);
		break;
	case BS_EV_THROTTLE_OFF:
		svc_log(&s->log, LOG_INFO_, "throttle_off", job_fields(s, ev),
		        "backfill of %s on shard %s goes on (it waited: %s)", ev->index, sh, ev->message);
		break;
	default: break;
	}
}

/* ------------------------------------------------------------ repair summaries */

static void agg_add(agg_t *a, const bs_event_t *ev)
{
	a->passes++;
	a->rows += ev->rows;
	a->last_pass = mono();
	a->watermark_us = ev->watermark_us;
	for (int k = 0; k < ev->nindexes; k++) {
		int x;
		for (x = 0; x < a->nix && strcmp(a->ix[x].index, ev->indexes[k].index); x++)
			;
		if (x == a->nix) {
			if (a->nix == MAX_AGG)
				continue;
			memset(&a->ix[x], 0, sizeof a->ix[x]);
			snprintf(a->ix[x].index, sizeof a->ix[x].index, "%s", ev->indexes[k].index);
			a->nix++;
		}
		a->ix[x].inserted += ev->indexes[k].inserted;
		a->ix[x].deleted += ev->indexes[k].deleted;
	}
}

/* A shard's summary line, when due: every log_every when it repaired
 * something, every IDLE_SUMMARY times that when idle. Under s->mu. */
static void agg_flush(svc_t *s, int i, double now)
{
	agg_t *a = &s->agg[i];
	int64_t ins = 0, del = 0;
	char per[512] = "";
	size_t o = 0;

	if (!a->passes)
		return;
	for (int x = 0; x < a->nix; x++) {
		ins += a->ix[x].inserted;
		del += a->ix[x].deleted;
	}
	if (now - a->last_line < s->log_every * ((ins || del) ? 1 : IDLE_SUMMARY))
		return;
	json_t *f = json_object(), *ix = json_object();
	json_object_set_new(f, "shard", cli_jstr(sname(s, i)));
	json_object_set_new(f, "passes", json_integer(a->passes));
	json_object_set_new(f, "rows", json_integer(a->rows));
	json_object_set_new(f, "inserted", json_integer(ins));
	json_object_set_new(f, "deleted", json_integer(del));
	json_object_set_new(f, "watermark_us", json_integer(a->watermark_us));
	for (int x = 0; x < a->nix; x++) {
		json_t *o2 = json_object();
		json_object_set_new(o2, "inserted", json_integer(a->ix[x].inserted));
		json_object_set_new(o2, "deleted", json_integer(a->ix[x].deleted));
		json_object_set_new(ix, a->ix[x].index, o2);
		if ((a->ix[x].inserted || a->ix[x].deleted) && o < sizeof per - 80)
			o += (size_t)snprintf(per + o, sizeof per - o, " %s +%" PRId64 " -%" PRId64, a->ix[x].index,
			                      a->ix[x].inserted, a->ix[x].deleted);
	}
	json_object_set_new(f, "indexes", ix);
	svc_log(&s->log, LOG_INFO_, "repair_pass", f,
	        "repair on shard %s: %" PRId64 " passes, %" PRId64 " entities, %" PRId64
	        " index rows inserted, %" PRId64 " deleted%s%s",
	        sname(s, i), a->passes, a->rows, ins, del, per[0] ? ":" : "", per);
	double last_pass = a->last_pass;
	memset(a, 0, sizeof *a);
	a->last_line = now;
	a->last_pass = last_pass;
}

/* ------------------------------------------------------------ the event callback */

static void on_shard_event(svc_t *s, const bs_event_t *ev)
{
	json_t *f = json_object();

	json_object_set_new(f, "shard", cli_jstr(sname(s, ev->shard)));
	if (ev->type == BS_EV_SHARD_LOST) {
		json_object_set_new(f, "reason", cli_jstr(ev->message));
		svc_log(&s->log, LOG_WARN_, "shard_lost", f, "shard %s lost: %s", sname(s, ev->shard), ev->message);
		fire(s, BS_HOOK_SHARD_LOST, ev);
	} else {
		svc_log(&s->log, LOG_INFO_, "shard_back", f, "shard %s answers again", sname(s, ev->shard));
		fire(s, BS_HOOK_SHARD_BACK, ev);
	}
}

static void on_event(void *p, const bs_event_t *ev)
{
	svc_t *s = p;

	pthread_mutex_lock(&s->ctr.mu);
	s->ctr.events[ev->type]++;
	pthread_mutex_unlock(&s->ctr.mu);
	if (ev->type == BS_EV_LOOP) {
		atomic_store(&s->loop_ms, (long long)(mono() * 1000));
		return;
	}
	if (ev->type == BS_EV_REPAIR_PASS)
		svc_counters_repair(&s->ctr, ev);
	pthread_mutex_lock(&s->mu);
	switch (ev->type) {
	case BS_EV_REPAIR_PASS:
		if (ev->shard >= 0 && ev->shard < s->cfg->nshards)
			agg_add(&s->agg[ev->shard], ev);
		break;
	case BS_EV_INDEX_READY:
		svc_log(&s->log, LOG_INFO_, "index_ready", json_pack("{s:s}", "index", ev->index), "index %s is ready",
		        ev->index);
		fire(s, BS_HOOK_INDEX_READY, ev);
		break;
	case BS_EV_SHARD_LOST:
	case BS_EV_SHARD_BACK: on_shard_event(s, ev); break;
	case BS_EV_ERROR: /* said when it changes: the loop retries every pass */
		if (strcmp(s->last_err, ev->message) != 0) {
			snprintf(s->last_err, sizeof s->last_err, "%s", ev->message);
			svc_log(&s->log, LOG_ERROR_, "error",
			        json_pack("{s:o,s:s}", "reason", cli_jstr(ev->message), "code", bs_strerror(ev->code)),
			        "%s", ev->message);
		}
		break;
	default: on_job_event(s, ev);
	}
	pthread_mutex_unlock(&s->mu);
}

/* A worker the registry shows dead for the first time (the collector's). */
static void on_dead(void *p, const bs_worker_info_t *w)
{
	svc_t *s = p;
	json_t *f = json_object();

	pthread_mutex_lock(&s->ctr.mu);
	s->ctr.workers_dead_seen++;
	pthread_mutex_unlock(&s->ctr.mu);
	json_object_set_new(f, "worker_id", json_string(w->id));
	json_object_set_new(f, "kind", cli_jstr(w->kind));
	json_object_set_new(f, "host", cli_jstr(w->host));
	json_object_set_new(f, "pid", json_integer(w->pid));
	json_object_set_new(f, "heartbeat_age_s", json_real(w->age_s));
	json_object_set_new(f, "jobs", cli_jstr(w->jobs));
	svc_log(&s->log, LOG_WARN_, "worker_dead", f,
	        "worker %s:%d (%s) is dead: no heartbeat for %.0f s; the jobs it held (%s) go back to any cleaner",
	        w->host, w->pid, w->kind, w->age_s, w->jobs[0] ? w->jobs : "none");
}

/* ------------------------------------------------------------ reload (SIGHUP) */

/* "name old -> new" for each cleaner setting that changed, into f and msg. */
static void settings_diff(json_t *f, char *msg, size_t n, const bs_cleaner_conf_t *a, const bs_cleaner_conf_t *b)
{
	const struct {
		const char *name;
		double x, y;
	} d[] = {
		{ "chunk_time", a->chunk_time, b->chunk_time },
		{ "max_load", a->max_load, b->max_load },
		{ "critical_load", a->critical_load, b->critical_load },
		{ "max_replica_lag", a->max_replica_lag, b->max_replica_lag },
		{ "repair_overlap", a->repair_overlap, b->repair_overlap },
		{ "repair_interval", a->repair_interval, b->repair_interval },
		{ "sleep_coef", a->sleep_coef, b->sleep_coef },
		{ "jobs", a->jobs, b->jobs },
		{ "writers", a->writers, b->writers },
		{ "max_history_length", a->max_history_length, b->max_history_length },
		{ "max_write_latency", a->max_write_latency, b->max_write_latency },
		{ "write_latency_factor", a->write_latency_factor, b->write_latency_factor },
		{ "max_signal_age", a->max_signal_age, b->max_signal_age },
	};
	size_t o = 0;

	msg[0] = '\0';
	for (size_t k = 0; k < sizeof d / sizeof *d; k++) {
		if (d[k].x == d[k].y)
			continue;
		json_object_set_new(f, d[k].name, json_pack("[f,f]", d[k].x, d[k].y));
		if (o < n)
			o += (size_t)snprintf(msg + o, n - o, "%s%s %g -> %g", o ? ", " : "", d[k].name, d[k].x,
			                      d[k].y);
	}
	if (a->write_latency_tail != b->write_latency_tail) {
		const char *was = a->write_latency_tail ? "tail" : "median",
			   *now = b->write_latency_tail ? "tail" : "median";
		json_object_set_new(f, "write_latency_signal", json_pack("[s,s]", was, now));
		if (o < n)
			o += (size_t)snprintf(msg + o, n - o, "%swrite_latency_signal %s -> %s", o ? ", " : "", was,
			                      now);
	}
	if (!o)
		snprintf(msg, n, "no cleaner setting changed");
}

static bool streq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* /metrics's web configuration, read again: its file's path stays (a new
 * path, or metrics_insecure changed, wants a restart), its contents apply. */
static void reload_metrics_web(svc_t *s)
{
	char err[768];
	int rc;

	if (!s->metrics || (rc = svc_metrics_reload_web(s->metrics, err, sizeof err)) > 0)
		return;
	if (rc < 0) {
		pthread_mutex_lock(&s->ctr.mu);
		s->ctr.reloads_failed++;
		pthread_mutex_unlock(&s->ctr.mu);
		svc_log(&s->log, LOG_ERROR_, "reload_failed", json_pack("{s:o}", "reason", cli_jstr(err)),
		        "SIGHUP: /metrics's web configuration: %s: the one in force stays", err);
		return;
	}
	svc_log(&s->log, LOG_INFO_, "reload",
	        json_pack("{s:o}", "metrics_protection", cli_jstr(svc_metrics_protection(s->metrics))),
	        "SIGHUP: /metrics's web configuration read again (%s)", svc_metrics_protection(s->metrics));
}

/* What a reload cannot apply, said. */
static void reload_restart_notes(svc_t *s, const bs_config_t *nc)
{
	char a[17], b[17];
	const char *m = s->cfg->daemon.metrics, *nm = nc->daemon.metrics;

	bs_config_fingerprint(a, s->cfg);
	bs_config_fingerprint(b, nc);
	if (strcmp(a, b) != 0)
		svc_log(&s->log, LOG_WARN_, "reload_partial", NULL,
		        "the shard list in %s changed: restart the cleaner to use it (it keeps the list it started "
		        "with)",
		        nc->path);
	if (!s->opts->metrics && ((m == NULL) != (nm == NULL) || (m && nm && strcmp(m, nm) != 0)))
		svc_log(&s->log, LOG_WARN_, "reload_partial", NULL,
		        "cleaner.metrics changed: restart the cleaner to "
		        "serve /metrics on %s",
		        nm ? nm : "(none)");
	if (!s->opts->web_config && (!streq(s->cfg->daemon.metrics_web_config, nc->daemon.metrics_web_config) ||
	                             s->cfg->daemon.metrics_insecure != nc->daemon.metrics_insecure))
		svc_log(&s->log, LOG_WARN_, "reload_partial", NULL,
		        "cleaner.metrics_web_config or metrics_insecure "
		        "changed: restart the cleaner to serve /metrics with them");
	if (nc->connect_timeout != s->cfg->connect_timeout || nc->read_timeout != s->cfg->read_timeout ||
	    nc->write_timeout != s->cfg->write_timeout || nc->catalog_ttl != s->cfg->catalog_ttl)
		svc_log(&s->log, LOG_WARN_, "reload_partial", NULL,
		        "timeouts or catalog_ttl changed: restart the cleaner to use them");
}

/* A changed shard list is checked against the shards
 * (bs_shard_list_check) through a store of its own with timeouts capped at
 * 2 s, on svc's thread. */
#define LIST_CHECK_CAP_S 2.0

static void reload_refused(svc_t *s, const char *why)
{
	pthread_mutex_lock(&s->ctr.mu);
	s->ctr.reloads_failed++;
	pthread_mutex_unlock(&s->ctr.mu);
	svc_log(&s->log, LOG_ERROR_, "reload_failed", json_pack("{s:o}", "reason", cli_jstr(why)),
	        "SIGHUP: %s: the settings in force stay", why);
}

static void reload(svc_t *s)
{
	bs_config_t *nc = NULL;
	bs_cleaner_conf_t was;
	char msg[1024], unchecked[512] = "";
	json_t *f;

	if (bs_config_load(&nc, s->cfg->path) < 0) {
		reload_refused(s, bs_last_error());
		return;
	}
	/* a file whose shard list the shards disagree with is not applied at
	 * all (a restart would refuse it): the cleaner goes on as it was */
	if (!bs_config_same_shards(s->cfg, nc) &&
	    bs_shard_list_check(nc, LIST_CHECK_CAP_S, unchecked, sizeof unchecked) < 0) {
		snprintf(msg, sizeof msg,
		         "the shard list in %s disagrees with the shards: %s; the cleaner keeps the "
		         "list it started with",
		         nc->path, bs_last_error());
		reload_refused(s, msg);
		bs_config_free(nc);
		return;
	}
	bs_cleaner_live_get(&was, s->live);
	f = json_object();
	settings_diff(f, msg, sizeof msg, &was, &nc->cleaner);
	bs_cleaner_live_set(s->live, &nc->cleaner);
	if (s->hooks)
		svc_hooks_set(s->hooks, nc);
	if (!s->opts->log_format)
		svc_log_set_json(&s->log, nc->daemon.log_format && !strcmp(nc->daemon.log_format, "json"));
	pthread_mutex_lock(&s->mu);
	if (!(s->opts->log_every > 0))
		s->log_every = nc->daemon.log_every;
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_lock(&s->ctr.mu);
	s->ctr.reloads_ok++;
	pthread_mutex_unlock(&s->ctr.mu);
	svc_log(&s->log, LOG_INFO_, "reload", json_pack("{s:o,s:o}", "config", cli_jstr(nc->path), "changed", f),
	        "SIGHUP: reloaded %s: %s", nc->path, msg);
	reload_restart_notes(s, nc);
	reload_metrics_web(s);
	if (unchecked[0])
		svc_log(&s->log, LOG_WARN_, "reload_partial", json_pack("{s:o}", "reason", cli_jstr(unchecked)),
		        "the new shard list could not be checked against every shard: %s: a restart will check it",
		        unchecked);
	bs_config_free(nc);
}

/* ------------------------------------------------------------ svc's thread */

static void on_signal(svc_t *s, int sig)
{
	const char *name = sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "SIGHUP";

	if (sig == SIGHUP) {
		if (s->ending)
			svc_log(&s->log, LOG_WARN_, "signal", json_pack("{s:s}", "signal", name),
			        "SIGHUP: not reloaded: the cleaner is stopping");
		else
			reload(s);
		return;
	}
	if (s->signals++) {
		svc_log(&s->log, LOG_WARN_, "signal", json_pack("{s:s,s:i}", "signal", name, "exit_status", 1),
		        "%s again: exiting at once, status 1 (the jobs in hand go back to any cleaner, as after a "
		        "kill)",
		        name);
		_exit(1);
	}
	if (s->ending) { /* the loop ended on an error: svc_end is under way */
		svc_log(&s->log, LOG_INFO_, "signal", json_pack("{s:s}", "signal", name),
		        "%s: the cleaner is already stopping; a second one exits at once", name);
		return;
	}
	snprintf(s->stop_reason, sizeof s->stop_reason, "%s", name);
	svc_notify_send(&s->nfy, "STOPPING=1\nSTATUS=stopping: finishing the chunks in hand");
	svc_log(&s->log, LOG_INFO_, "signal", json_pack("{s:s}", "signal", name),
	        "%s: stopping: the backfills finish their chunk, checkpoint and go back to the queue", name);
	atomic_store(&s->stop, 1);
}

/* The registry's "doing" from the jobs held and the shards repaired here
 * lately. Under s->mu. */
static void doing_text(svc_t *s, char *jobs, size_t jn, char *rep, size_t rn, double now)
{
	size_t o = 0;

	jobs[0] = rep[0] = '\0';
	for (int k = 0; k < s->nheld && o + 140 < jn; k++)
		o += (size_t)snprintf(jobs + o, jn - o, "%s%s@%s", o ? "," : "", s->held[k].index,
		                      sname(s, s->held[k].shard));
	o = 0;
	for (int i = 0; i < s->cfg->nshards && o + 70 < rn; i++)
		if (s->agg[i].last_pass > 0 && now - s->agg[i].last_pass < REPAIR_FRESH_S)
			o += (size_t)snprintf(rep + o, rn - o, "%s%s", o ? "," : "", sname(s, i));
}

/* STATUS=: a line that changes as the cleaner works. */
static void status_text(svc_t *s, char *buf, size_t n, const char *rep)
{
	double lag = -1;
	int down = 0;
	size_t o;

	pthread_mutex_lock(&s->snap->mu);
	for (int i = 0; s->snap->lag && i < s->snap->n; i++)
		if (s->snap->lag[i].reachable && s->snap->lag[i].lag_s > lag)
			lag = s->snap->lag[i].lag_s;
	for (int i = 0; s->snap->status && i < s->snap->n; i++)
		down += s->snap->status[i].state == BS_SHARD_DOWN;
	pthread_mutex_unlock(&s->snap->mu);
	o = (size_t)snprintf(buf, n, "%s: repairing %s", s->ready_sent ? "running" : "starting",
	                     rep[0] ? rep : "no shard");
	if (lag >= 0 && o < n)
		o += (size_t)snprintf(buf + o, n - o, " (lag %.1f s)", lag);
	pthread_mutex_lock(&s->mu);
	for (int k = 0; k < s->nheld && o + 40 < n; k++)
		o += (size_t)snprintf(buf + o, n - o, "%s %s@%s %.0f%%", k ? "," : "; backfilling", s->held[k].index,
		                      sname(s, s->held[k].shard), pct(&s->held[k].job));
	pthread_mutex_unlock(&s->mu);
	if (down && o < n)
		snprintf(buf + o, n - o, "; %d shard%s down", down, down == 1 ? "" : "s");
}

/* A shard whose tls.mode is preferred and whose server offered no TLS is
 * connected in plain text: said once per shard (a warning, event
 * tls_plaintext), from the collector's snapshot. */
static void tick_plaintext(svc_t *s)
{
	char names[8][BS_NAME_MAX + 1], addr[8][128];
	int n = 0, idx[8];

	pthread_mutex_lock(&s->snap->mu);
	for (int i = 0; s->snap->status && i < s->snap->n && i < s->cfg->nshards && n < 8; i++) {
		const bs_shard_status_t *st = &s->snap->status[i];
		if (st->tls_plaintext_preferred && !s->plain_said[i]) {
			snprintf(names[n], sizeof names[n], "%s", st->name);
			snprintf(addr[n], sizeof addr[n], "%s", st->address);
			idx[n++] = i;
		}
	}
	pthread_mutex_unlock(&s->snap->mu);
	for (int k = 0; k < n; k++) {
		json_t *f = json_object();
		s->plain_said[idx[k]] = true;
		json_object_set_new(f, "shard", cli_jstr(names[k]));
		json_object_set_new(f, "address", cli_jstr(addr[k]));
		json_object_set_new(f, "tls_mode", json_string("preferred"));
		svc_log(&s->log, LOG_WARN_, "tls_plaintext", f,
		        "shard %s (%s): connected in plain text: tls.mode is "
		        "preferred and the server offers no TLS (require it with tls.mode required or stricter)",
		        names[k], addr[k]);
	}
}

static void tick_notify(svc_t *s, double now)
{
	char st[256], msg[280];

	if (!s->ready_sent) {
		bool all;
		pthread_mutex_lock(&s->snap->mu);
		all = s->snap->all_answered;
		pthread_mutex_unlock(&s->snap->mu);
		if (all) {
			s->ready_sent = true;
			svc_notify_send(&s->nfy, "READY=1");
			svc_log(&s->log, LOG_INFO_, "ready", NULL,
			        "the configuration is read and every shard answered");
		}
	}
	if (now - s->last_status >= 1.0 && !atomic_load(&s->stop)) {
		status_text(s, st, sizeof st, s->doing_repair);
		if (strcmp(st, s->status) != 0) {
			snprintf(s->status, sizeof s->status, "%s", st);
			snprintf(msg, sizeof msg, "STATUS=%s", st);
			svc_notify_send(&s->nfy, msg);
			s->last_status = now;
		}
	}
	/* the watchdog: fed while the engine's loop goes round */
	if (s->nfy.watchdog_us && now - s->last_watchdog >= (double)s->nfy.watchdog_us / 2e6) {
		long long last = atomic_load(&s->loop_ms);
		double since = last ? now - (double)last / 1000 : now - s->started;
		if (since < LOOP_STALL_S) {
			svc_notify_send(&s->nfy, "WATCHDOG=1");
			s->last_watchdog = now;
		}
	}
}

/* The registry: what it does, and whether its heartbeats take. */
static void tick_registry(svc_t *s, double now)
{
	char jobs[1024], rep[1024], err[256];
	int ok;

	pthread_mutex_lock(&s->mu);
	doing_text(s, jobs, sizeof jobs, rep, sizeof rep, now);
	for (int i = 0; i < s->cfg->nshards; i++)
		agg_flush(s, i, now);
	pthread_mutex_unlock(&s->mu);
	if (strcmp(jobs, s->doing_jobs) || strcmp(rep, s->doing_repair)) {
		snprintf(s->doing_jobs, sizeof s->doing_jobs, "%s", jobs);
		snprintf(s->doing_repair, sizeof s->doing_repair, "%s", rep);
		bs_worker_doing(s->worker, jobs, rep);
	}
	if (now - s->started < 3 * BS_WORKER_HEARTBEAT_S)
		return;
	ok = bs_worker_shards_ok(s->worker, err, sizeof err);
	if (ok != s->registry_ok) {
		if (ok < s->cfg->nshards)
			svc_log(&s->log, LOG_WARN_, "registry",
			        json_pack("{s:i,s:i,s:o}", "shards_ok", ok, "shards", s->cfg->nshards, "reason",
			                  cli_jstr(err)),
			        "worker registry: %d of %d shards take this cleaner's heartbeat: %s", ok,
			        s->cfg->nshards, err);
		else if (s->registry_ok >= 0)
			svc_log(&s->log, LOG_INFO_, "registry", json_pack("{s:i,s:i}", "shards_ok", ok, "shards", ok),
			        "worker registry: every shard takes this cleaner's heartbeat");
		s->registry_ok = ok;
	}
}

static void *svc_thread(void *p)
{
	svc_t *s = p;
	sigset_t set;
	struct timespec tmo = { 0, TICK_MS * 1000000L };

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	while (!atomic_load(&s->quit)) {
		int sig = sigtimedwait(&set, NULL, &tmo);
		pthread_mutex_lock(&s->tick_mu);
		if (sig > 0)
			on_signal(s, sig);
		if (!s->ending) {
			double now = mono();
			tick_notify(s, now);
			tick_plaintext(s);
			tick_registry(s, now);
		}
		pthread_mutex_unlock(&s->tick_mu);
	}
	return NULL;
}

/* ------------------------------------------------------------ start, stop */

static void log_start(svc_t *s)
{
	json_t *f = json_object(), *sh = json_array();
	char names[512] = "";
	size_t o = 0;

	for (int i = 0; i < s->cfg->nshards; i++) {
		json_array_append_new(sh, cli_jstr(s->cfg->shards[i].name));
		if (o < sizeof names - 70)
			o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", i ? " " : "",
			                      s->cfg->shards[i].name);
	}
	json_object_set_new(f, "version", json_string(BS_VERSION));
	json_object_set_new(f, "pid", json_integer(getpid()));
	json_object_set_new(f, "worker_id", json_string(bs_worker_id(s->worker)));
	json_object_set_new(f, "config", cli_jstr(s->cfg->path));
	json_object_set_new(f, "shards", sh);
	json_object_set_new(f, "metrics", cli_jstr(s->metrics_addr));
	json_object_set_new(f, "metrics_protection", cli_jstr(s->metrics ? svc_metrics_protection(s->metrics) : NULL));
	json_object_set_new(f, "systemd_notify", json_boolean(s->nfy.fd >= 0));
	json_object_set_new(f, "watchdog_s", json_real((double)s->nfy.watchdog_us / 1e6));
	svc_log(&s->log, LOG_INFO_, "start", f,
	        "bagstore %s cleaner started: pid %d, worker %s, %d shards (%s)%s%s%s%s%s, "
	        "config %s",
	        BS_VERSION, (int)getpid(), bs_worker_id(s->worker), s->cfg->nshards, names,
	        s->metrics_addr ? ", /metrics on " : "", s->metrics_addr ? s->metrics_addr : "", s->metrics ? " (" : "",
	        s->metrics ? svc_metrics_protection(s->metrics) : "", s->metrics ? ")" : "",
	        s->cfg->path ? s->cfg->path : "-");
}

/* Signals go to svc's thread only: blocked here, before any thread starts
 * (threads inherit the mask). */
static void block_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* Everything before the engine's loop; 0 or the error (logged). */
static int svc_begin(svc_t *s)
{
	const bs_daemon_conf_t *dm = &s->cfg->daemon;
	const char *fmt = s->opts->log_format ? s->opts->log_format : dm->log_format;
	char err[512];
	int rc;

	block_signals();
	svc_log_init(&s->log, stderr, fmt && !strcmp(fmt, "json"));
	if (svc_notify_open(&s->nfy, err, sizeof err) < 0)
		svc_log(&s->log, LOG_WARN_, "systemd", NULL, "%s: not notifying systemd", err);
	s->log_every = s->opts->log_every > 0 ? s->opts->log_every : dm->log_every > 0 ? dm->log_every : 5;
	s->metrics_addr = s->opts->metrics ? s->opts->metrics : dm->metrics;
	s->started = mono();
	s->registry_ok = -1;
	if ((rc = svc_counters_init(&s->ctr, s->cfg->nshards)) < 0 ||
	    (rc = bs_cleaner_live_new(&s->live, &s->cfg->cleaner)) < 0)
		return rc;
	if (!(s->agg = calloc((size_t)s->cfg->nshards, sizeof *s->agg)) ||
	    !(s->plain_said = calloc((size_t)s->cfg->nshards, sizeof *s->plain_said)))
		return bs_error(BS_ENOMEM, "out of memory");
	if ((rc = svc_watch_start(&s->watch, &s->snap, s->cfg, 1.0, on_dead, s)) < 0)
		return rc;
	if (s->metrics_addr) {
		svc_metrics_conf_t mc = {
			.addr = s->metrics_addr,
			.addr_from = s->opts->metrics ? "--metrics" : dm->metrics_at,
			.web_config = s->opts->web_config ? s->opts->web_config : dm->metrics_web_config,
			.web_from = s->opts->web_config ? "--web.config.file" : dm->metrics_web_config_at,
			.insecure = dm->metrics_insecure,
		};
		if ((rc = svc_metrics_start(&s->metrics, &mc, s->cfg, s->snap, &s->ctr, err, sizeof err)) < 0)
			return rc == -2 ? bs_error(BS_ECONFIG, "cannot serve /metrics: %s", err)
			                : bs_error(BS_ERROR, "cannot serve /metrics on %s", err);
	} else if (s->opts->web_config || dm->metrics_web_config)
		svc_log(&s->log, LOG_WARN_, "metrics", NULL,
		        "%s is not used: /metrics is not served (neither --metrics "
		        "nor cleaner.metrics)",
		        s->opts->web_config ? "--web.config.file" : dm->metrics_web_config_at);
	if ((rc = svc_hooks_start(&s->hooks, s->cfg, &s->log, &s->ctr)) < 0 ||
	    (rc = bs_worker_start(&s->worker, s->cfg, "cleaner", s->metrics_addr)) < 0)
		return rc;
	log_start(s);
	svc_notify_send(&s->nfy, "STATUS=starting: waiting for every shard to answer");
	if (pthread_create(&s->tid, NULL, svc_thread, s) != 0)
		return bs_error(BS_ERROR, "cannot start the service thread");
	s->tid_started = true;
	return 0;
}

/* Everything after it, in the reverse order; each part bounded in time
 * (hooks 2 s, the registry and the collector by their capped timeouts). */
static void svc_end(svc_t *s, int rc)
{
	double up = mono() - s->started;

	/* svc's thread stays, for a second SIGTERM while what follows waits
	 * on a hung shard or a hook; its periodic work stops here */
	pthread_mutex_lock(&s->tick_mu);
	s->ending = true;
	pthread_mutex_unlock(&s->tick_mu);
	if (s->log.f && s->tid_started)
		svc_log(&s->log, LOG_INFO_, "stopping", NULL,
		        "the engine's loop ended: leaving the worker registry, "
		        "stopping hooks and the collector (a second SIGTERM exits at once)");
	if (!s->stop_reason[0])
		svc_notify_send(&s->nfy, "STOPPING=1");
	bs_worker_stop(s->worker); /* deregisters */
	svc_hooks_stop(s->hooks, 2.0);
	svc_metrics_stop(s->metrics);
	svc_watch_stop(s->watch, s->snap);
	if (s->log.f)
		svc_log(&s->log, rc < 0 ? LOG_ERROR_ : LOG_INFO_, "stop",
		        json_pack("{s:s,s:i,s:f,s:o}", "reason", s->stop_reason[0] ? s->stop_reason : "error",
		                  "exit_status", cli_exit_code(rc), "uptime_s", up, "error",
		                  rc < 0 ? cli_jstr(bs_last_error()) : json_null()),
		        "cleaner stopped (%s) after %.0f s: exit %d%s%s", s->stop_reason[0] ? s->stop_reason : "error",
		        up, cli_exit_code(rc), rc < 0 ? ": " : "", rc < 0 ? bs_last_error() : "");
	atomic_store(&s->quit, true);
	if (s->tid_started)
		pthread_join(s->tid, NULL);
	svc_notify_close(&s->nfy);
	bs_cleaner_live_free(s->live);
	free(s->agg);
	free(s->plain_said);
	if (s->ctr.repair_passes)
		svc_counters_free(&s->ctr);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->tick_mu);
}

/* A reshard's move (the engine's move_progress): a line when its state or
 * phase changes, as `cleaner --reshard` says it; a move is named by its
 * number in its plan, as `reshard status` shows it. */
static void on_move(void *p, const bs_move_t *m)
{
	svc_t *s = p;
	int k;
	bool changed = true;

	pthread_mutex_lock(&s->mu);
	for (k = 0; k < s->nmoves && s->moves[k].id != m->id; k++)
		;
	if (k < s->nmoves)
		changed = s->moves[k].state != m->state || s->moves[k].phase != m->phase;
	else if (s->nmoves < (int)(sizeof s->moves / sizeof s->moves[0]))
		s->nmoves++;
	else
		k = -1;
	if (k >= 0) {
		s->moves[k].id = m->id;
		s->moves[k].state = m->state;
		s->moves[k].phase = m->phase;
	}
	pthread_mutex_unlock(&s->mu);
	/* (running, done) is the moment before the row says done */
	if (!changed || (m->phase == BS_MOVE_DONE && m->state == BS_JOB_RUNNING))
		return;
	svc_log(&s->log, m->state == BS_JOB_FAILED ? LOG_ERROR_ : LOG_INFO_, "move",
	        json_pack("{s:I,s:s,s:s,s:i,s:s,s:s,s:s}", "move", (json_int_t)(m->id - m->plan_id * 1000 + 1),
	                  "source", m->source, "target", m->target, "buckets", m->nbuckets, "state",
	                  bs_job_state_name(m->state), "phase", bs_move_phase_name(m->phase), "reason", m->reason),
	        "move %" PRId64 " (%s to %s, %d buckets): %s, %s%s%s", m->id - m->plan_id * 1000 + 1, m->source,
	        m->target, m->nbuckets, bs_job_state_name(m->state), bs_move_phase_name(m->phase),
	        m->reason[0] ? ": " : "", m->reason);
}

int svc_run(cli_ctx_t *ctx, const svc_opts_t *o)
{
	svc_t *s = calloc(1, sizeof *s);
	int rc;

	if (!s)
		return bs_error(BS_ENOMEM, "out of memory");
	s->ctx = ctx;
	s->cfg = bs_store_config(ctx->st);
	s->opts = o;
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->tick_mu, NULL);
	if ((rc = svc_begin(s)) == 0) {
		bs_cleaner_opts_t eo = {
			.stop = &s->stop, .event = on_event, .ctx = s, .live = s->live, .move_progress = on_move
		};
		rc = bs_cleaner_run(ctx->st, &eo);
	}
	svc_end(s, rc);
	free(s);
	return rc;
}

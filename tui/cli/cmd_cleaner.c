/*
 * cmd_cleaner.c - the cleaner's commands: `cleaner` (one backfill, one
 * pass, the recorded moves of a reshard, or the daemon, whose service is
 * svc.c), `verify` (index rows
 * against the bodies, optionally repaired), `backfill list|pause|resume|
 * cancel` (the jobs table), `lag` (the repair loop's lag per shard) and
 * `workers` (the worker registry: cleaners and consoles at work).
 */
#include "cli.h"
#include "service.h"

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt.h"

/* ------------------------------------------------------------ cleaner */

/*
 * Set by the SIGTERM / SIGINT handler, read by the cleaner's threads (the
 * engine's bs_cleaner_opts_t.stop). A lock-free atomic object may be
 * written from a signal handler (C11 7.14.1.1), and unlike a volatile
 * sig_atomic_t it may also be read from other threads without a race.
 */
static atomic_int stop_flag, hup_flag;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the signal handler needs a lock-free atomic_int");

/* A second SIGTERM or SIGINT while the first one's stop waits (a chunk on
 * a hung shard) exits at once, status 1, as the daemon does (svc.c): the
 * job in hand is taken over from its checkpoint as after a kill. write(2)
 * and _exit(2) are async-signal-safe. */
static void on_signal(int sig)
{
	static const char again[] = "bagstore: cleaner: stop signal again: exiting at once, status 1 "
				    "(the jobs in hand go back to any cleaner, as after a kill)\n";

	if (sig != SIGHUP && atomic_exchange(&stop_flag, 1)) {
		if (write(STDERR_FILENO, again, sizeof again - 1) < 0) {
			/* nothing more to say */
		}
		_exit(1);
	}
	if (sig == SIGHUP)
		atomic_store(&hup_flag, 1);
}

/* What the cleaner's threads report, under lock (progress and errors come
 * from every shard's thread at once). */
typedef struct {
	pthread_mutex_t lock;
	bool tty, daemon;
	int n;
	const bs_config_t *cfg;
	bs_job_t *last;    /* one backfill: the last progress per shard */
	bs_job_t seen[64]; /* the daemon: per index and shard */
	int nseen;
	char last_err[512];
	bs_cleaner_live_t *live; /* one backfill: what SIGHUP reloads */
	bs_worker_t *worker;     /* one backfill: its registry row */
	/* what was last reported of each move (a line only when it changes) */
	struct {
		int64_t id;
		bs_job_state_t state;
		bs_move_phase_t phase;
		char reason[256];
	} moves[32];
	int nmoves;
} progress_t;

/* The daemon logs what changes, one line each, per index and shard. */
static void progress_daemon(progress_t *pr, const bs_job_t *job)
{
	bs_job_t *was;
	int k;

	for (k = 0; k < pr->nseen; k++)
		if (pr->seen[k].shard == job->shard && strcmp(pr->seen[k].index, job->index) == 0)
			break;
	if (k == pr->nseen && pr->nseen < (int)(sizeof pr->seen / sizeof *pr->seen))
		pr->nseen++;
	else if (k == pr->nseen)
		k = 0;
	was = &pr->seen[k];
	if (strcmp(was->index, job->index) != 0 || was->state != job->state || strcmp(was->reason, job->reason) != 0)
		fprintf(stderr, "bagstore: cleaner: backfill of %s on shard %s: %s%s%s\n", job->index,
		        pr->cfg->shards[job->shard].name, bs_job_state_name(job->state), job->reason[0] ? ": " : "",
		        job->reason);
	*was = *job;
}

/* One backfill on a terminal: one line, rewritten, summing every shard. */
static void progress_line(progress_t *pr, const bs_job_t *job)
{
	char line[1024], eta_text[32];
	size_t len = 0;
	int64_t scanned = 0, total = 0;
	double rate = 0, eta = 0;
	int i;

	for (i = 0; i < pr->n; i++) {
		const bs_job_t *j = &pr->last[i];

		scanned += j->rows_scanned;
		total += j->rows_total;
		rate += j->rate;
		if (j->eta_s > eta)
			eta = j->eta_s;
	}
	/* a job's rate is measured over 2 s at least (a burst is not a rate):
	 * until then, and while some job has none, there is no figure to show */
	bool known = rate > 0;
	for (i = 0; i < pr->n; i++)
		if (pr->last[i].state == BS_JOB_RUNNING && pr->last[i].eta_s < 0)
			known = false;
	char rate_text[48];
	if (known) {
		char e[32];
		snprintf(eta_text, sizeof eta_text, "~%s", fmt_secs(e, sizeof e, eta)); /* an estimate */
		snprintf(rate_text, sizeof rate_text, "%.0f rows/s", rate);
	} else {
		snprintf(eta_text, sizeof eta_text, "not known yet");
		snprintf(rate_text, sizeof rate_text, "rate measuring");
	}
	len += (size_t)snprintf(line + len, sizeof line - len,
	                        "\rbackfill %s: %" PRId64 "/%" PRId64 " rows (%.0f%%), %s, eta %s", job->index, scanned,
	                        total, total ? 100.0 * (double)scanned / (double)total : 100.0, rate_text, eta_text);
	for (i = 0; i < pr->n && len < sizeof line - 64; i++) {
		const bs_job_t *j = &pr->last[i];

		if (j->state == BS_JOB_THROTTLED || j->state == BS_JOB_PAUSED)
			len += (size_t)snprintf(line + len, sizeof line - len, "; shard %s %s%s%.60s",
			                        pr->cfg->shards[i].name, bs_job_state_name(j->state),
			                        j->reason[0] ? ": " : "", j->reason);
	}
	fprintf(stderr, "%s\033[K", line);
	fflush(stderr);
}

/* `cleaner --index`: SIGHUP reads the configuration again; its cleaner:
 * settings take effect at the next chunk. Under pr->lock. */
static void backfill_reload(progress_t *pr)
{
	bs_config_t *nc = NULL;

	if (!pr->live || !atomic_exchange(&hup_flag, 0))
		return;
	if (pr->tty)
		fputc('\n', stderr);
	if (bs_config_load(&nc, pr->cfg->path) < 0) {
		fprintf(stderr, "bagstore: cleaner: SIGHUP: %s: the settings in force stay\n", bs_last_error());
		bs_error_clear();
		return;
	}
	bs_cleaner_live_set(pr->live, &nc->cleaner);
	fprintf(stderr, "bagstore: cleaner: SIGHUP: reloaded the cleaner: settings of %s\n", nc->path);
	bs_config_free(nc);
}

/* `cleaner --index`: the jobs it holds, for its registry row. Under pr->lock. */
static void backfill_doing(progress_t *pr)
{
	char jobs[1024];
	size_t o = 0;

	jobs[0] = '\0';
	for (int i = 0; i < pr->n && o + 140 < sizeof jobs; i++)
		if (pr->last[i].state == BS_JOB_RUNNING || pr->last[i].state == BS_JOB_THROTTLED)
			o += (size_t)snprintf(jobs + o, sizeof jobs - o, "%s%s@%s", o ? "," : "", pr->last[i].index,
			                      pr->cfg->shards[i].name);
	bs_worker_doing(pr->worker, jobs, NULL);
}

static void on_progress(void *p, const bs_job_t *job)
{
	progress_t *pr = p;

	pthread_mutex_lock(&pr->lock);
	if (job->shard >= 0 && job->shard < pr->n) {
		if (pr->daemon) {
			progress_daemon(pr, job);
		} else {
			pr->last[job->shard] = *job;
			backfill_reload(pr);
			backfill_doing(pr);
			if (pr->tty)
				progress_line(pr, job);
		}
	}
	pthread_mutex_unlock(&pr->lock);
}

/* Did the move's state, phase or reason change since it was last
 * reported? (It is recorded as reported.) */
static bool move_changed(progress_t *pr, const bs_move_t *m)
{
	int k;

	for (k = 0; k < pr->nmoves && pr->moves[k].id != m->id; k++)
		;
	if (k == pr->nmoves) {
		if (k == (int)(sizeof pr->moves / sizeof pr->moves[0]))
			k = 0; /* more moves than slots: reuse the first */
		else
			pr->nmoves++;
	} else if (pr->moves[k].state == m->state && pr->moves[k].phase == m->phase &&
	           !strcmp(pr->moves[k].reason, m->reason)) {
		return false;
	}
	pr->moves[k].id = m->id;
	pr->moves[k].state = m->state;
	pr->moves[k].phase = m->phase;
	snprintf(pr->moves[k].reason, sizeof pr->moves[k].reason, "%s", m->reason);
	return true;
}

/* A move's progress: on a terminal one line, rewritten; else a line when
 * its state, phase or reason changes (the daemon logs the same way). A
 * move is named by its number in its plan, as `reshard status` shows it. */
static void on_move(void *p, const bs_move_t *m)
{
	progress_t *pr = p;
	char eta[32] = "-";
	int64_t no = m->id - m->plan_id * 1000 + 1;

	pthread_mutex_lock(&pr->lock);
	if (m->eta_s >= 0)
		fmt_secs(eta, sizeof eta, m->eta_s);
	if (pr->tty && !pr->daemon) {
		fprintf(stderr, "\rmove %" PRId64 " %s->%s: %s %s %.0f%%, %.0f rows/s, eta ~%s%s%.60s\033[K", no,
		        m->source, m->target, bs_job_state_name(m->state), bs_move_phase_name(m->phase),
		        m->progress * 100, m->rate, eta, m->reason[0] ? ": " : "", m->reason);
		fflush(stderr);
	} else if (move_changed(pr, m) && !(m->phase == BS_MOVE_DONE && m->state == BS_JOB_RUNNING)) {
		/* (running, done) is the moment before the row says done */
		if (m->phase == BS_MOVE_DONE || m->state == BS_JOB_DONE)
			fprintf(stderr, "bagstore: cleaner: move %" PRId64 " (%s to %s, %d buckets): %s\n", no,
			        m->source, m->target, m->nbuckets, bs_job_state_name(m->state));
		else
			fprintf(stderr, "bagstore: cleaner: move %" PRId64 " (%s to %s, %d buckets): %s, %s%s%s\n", no,
			        m->source, m->target, m->nbuckets, bs_job_state_name(m->state),
			        bs_move_phase_name(m->phase), m->reason[0] ? ": " : "", m->reason);
	}
	pthread_mutex_unlock(&pr->lock);
}

/* An error the daemon survives: logged when it changes. */
static void on_error(void *p, int code, const char *msg)
{
	progress_t *pr = p;

	(void)code;
	pthread_mutex_lock(&pr->lock);
	if (strcmp(pr->last_err, msg) != 0) {
		snprintf(pr->last_err, sizeof pr->last_err, "%s", msg);
		fprintf(stderr, "bagstore: cleaner: %s\n", msg);
	}
	pthread_mutex_unlock(&pr->lock);
}

/* `cleaner --index NAME`: the backfill, then what became of it. */
static int backfill_one(cli_ctx_t *ctx, const char *index, bs_cleaner_opts_t *o, progress_t *pr)
{
	int64_t scanned = 0, written = 0;
	int i, rc;

	rc = bs_cleaner_backfill(ctx->st, index, o);
	if (pr->tty)
		fputc('\n', stderr);
	if (rc < 0)
		return rc;
	if (atomic_load(&stop_flag)) {
		printf("backfill of %s stopped; it resumes where it stopped\n", index);
		return 0;
	}
	for (i = 0; i < pr->n; i++) {
		scanned += pr->last[i].rows_scanned;
		written += pr->last[i].rows_written;
	}
	if (scanned)
		printf("index %s is ready (%" PRId64 " entities scanned, %" PRId64 " index rows written)\n", index,
		       scanned, written);
	else
		printf("index %s is ready\n", index);
	return 0;
}

static int reshard_all(cli_ctx_t *ctx, bs_cleaner_opts_t *o, progress_t *pr);

/* `cleaner --index NAME`, `cleaner --once` or `cleaner --reshard`: signals
 * by handler (SIGTERM and SIGINT stop, SIGHUP reloads the cleaner: settings
 * at the next chunk). */
static int cleaner_oneshot(cli_ctx_t *ctx, const char *index, bool once, bool reshard, progress_t *pr)
{
	bs_cleaner_opts_t o = {
		.stop = &stop_flag, .progress = on_progress, .error = on_error, .ctx = pr, .move_progress = on_move
	};
	struct sigaction sa;
	int rc;

	pr->n = bs_store_nshards(ctx->st);
	pr->cfg = bs_store_config(ctx->st);
	pr->tty = isatty(STDERR_FILENO);
	pr->daemon = !index && !reshard;
	if (!(pr->last = calloc((size_t)pr->n, sizeof *pr->last)))
		return bs_error(BS_ENOMEM, "out of memory");
	if ((rc = bs_cleaner_live_new(&pr->live, &pr->cfg->cleaner)) < 0)
		return rc;
	o.live = pr->live;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	o.once = once;
	if (index)
		cli_audit(ctx, "index.backfill", index, "cleaner --index");
	else if (reshard)
		cli_audit(ctx, "reshard.run", "buckets", "cleaner --reshard");
	/* a backfill or a reshard run is a worker: `bagstore workers` lists it
	 * while it runs, and its beat there says its moves are alive */
	if ((index || reshard) && bs_worker_start(&pr->worker, pr->cfg, index ? "backfill" : "reshard", NULL) < 0)
		bs_error_clear(); /* not listed; the backfill goes on */
	rc = index     ? backfill_one(ctx, index, &o, pr)
	     : reshard ? reshard_all(ctx, &o, pr)
	               : bs_cleaner_run(ctx->st, &o);
	bs_worker_stop(pr->worker);
	return rc;
}

/* `cleaner --reshard`: the recorded moves, then what became of them. */
static int reshard_all(cli_ctx_t *ctx, bs_cleaner_opts_t *o, progress_t *pr)
{
	bs_move_list_t l = { 0 };
	int rc = bs_cleaner_reshard(ctx->st, o);

	if (pr->tty)
		fputc('\n', stderr);
	if (rc < 0)
		return rc;
	if (atomic_load(&stop_flag)) {
		printf("reshard stopped; its moves resume where they stopped\n");
		return 0;
	}
	if ((rc = bs_move_list(&l, ctx->st, NULL)) < 0)
		return rc;
	printf("reshard %s: %d moves", bs_reshard_state_name(bs_reshard_state(&l)), l.len);
	if (l.len) {
		bs_buckets_t b = { 0 };
		if (bs_buckets(&b, ctx->st) == 0)
			printf(", bucket map version %" PRId64, b.version);
		bs_buckets_free(&b);
	}
	printf("\n");
	bs_move_list_free(&l);
	return 0;
}

int cli_cmd_cleaner(cli_ctx_t *ctx, int argc, char **argv)
{
	const char *index = NULL, *metrics = NULL, *log_format = NULL, *log_every = NULL, *web_config = NULL;
	bool once = false, reshard = false;
	const cli_opt_t opts[] = { { "index", &index, NULL },           { "once", NULL, &once },
		                   { "metrics", &metrics, NULL },       { "web.config.file", &web_config, NULL },
		                   { "log-format", &log_format, NULL }, { "log-every", &log_every, NULL },
		                   { "reshard", NULL, &reshard },       { NULL, NULL, NULL } };
	cli_args_t args = { 0 };
	progress_t pr = { .lock = PTHREAD_MUTEX_INITIALIZER };
	svc_opts_t so = { 0 };
	int rc;

	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 0, 0)) != 0)
		goto done;
	if ((index != NULL) + once + reshard > 1) {
		rc = cli_usage_error(ctx, "--index, --once and --reshard do not go together");
		goto done;
	}
	if ((index || once || reshard) && (metrics || web_config || log_format || log_every)) {
		rc = cli_usage_error(ctx, "--metrics, --web.config.file, --log-format and --log-every are the daemon's "
		                          "(no --index, --once or --reshard)");
		goto done;
	}
	if (log_format && strcmp(log_format, "text") != 0 && strcmp(log_format, "json") != 0) {
		rc = cli_usage_error(ctx, "--log-format: expected text or json, got '%s'", log_format);
		goto done;
	}
	/* checked as cleaner.metrics is: getaddrinfo would listen on a port
	 * out of range modulo 65536 */
	char why[200];
	if (metrics && bs_listen_addr_check(why, sizeof why, metrics) < 0) {
		rc = cli_usage_error(ctx, "--metrics: %s", why);
		goto done;
	}
	char *end = NULL;
	if (log_every && !((so.log_every = strtod(log_every, &end)) > 0 && so.log_every <= 86400 && !*end)) {
		rc = cli_usage_error(ctx, "--log-every: expected seconds above 0, at most 86400, got '%s'", log_every);
		goto done;
	}
	if ((rc = cli_open(ctx)) < 0)
		goto done;
	if (index || once || reshard) {
		rc = cleaner_oneshot(ctx, index, once, reshard, &pr);
	} else {
		so.metrics = metrics;
		so.web_config = web_config;
		so.log_format = log_format;
		rc = svc_run(ctx, &so);
	}
done:
	free(pr.last);
	bs_cleaner_live_free(pr.live);
	pthread_mutex_destroy(&pr.lock);
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------ verify */

static json_t *drift_json(const bs_index_t *ix, const bs_drift_t *d, int64_t left)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "index", cli_jstr(ix->name));
	json_object_set_new(o, "checked", json_integer(d->checked));
	json_object_set_new(o, "missing", json_integer(d->missing));
	json_object_set_new(o, "stale", json_integer(d->stale));
	json_object_set_new(o, "orphaned", json_integer(d->orphaned));
	json_object_set_new(o, "misfit", json_integer(d->misfit));
	json_object_set_new(o, "repaired", json_integer(d->repaired));
	json_object_set_new(o, "corrupt", json_integer(d->corrupt));
	json_object_set_new(o, "unprintable", json_integer(d->unprintable));
	json_object_set_new(o, "state", cli_jstr(bs_index_state_name(ix->state)));
	json_object_set_new(o, "remaining", json_integer(left));
	return o;
}

static void drift_text(const bs_index_t *ix, const bs_drift_t *d, bool repair)
{
	printf("%s: %" PRId64 " entities checked, %" PRId64 " missing, %" PRId64 " stale, %" PRId64
	       " orphaned, %" PRId64 " misfit, %" PRId64 " corrupt, %" PRId64 " unprintable",
	       ix->name, d->checked, d->missing, d->stale, d->orphaned, d->misfit, d->corrupt, d->unprintable);
	if (repair)
		printf(", %" PRId64 " repaired", d->repaired);
	putchar('\n');
}

static bool index_named(const bs_index_list_t *l, const char *name)
{
	int k;

	for (k = 0; k < l->len; k++)
		if (strcmp(l->items[k].name, name) == 0)
			return true;
	return false;
}

int cli_cmd_verify(cli_ctx_t *ctx, int argc, char **argv)
{
	const char *index = NULL;
	bool repair = false, as_json = false;
	const cli_opt_t opts[] = {
		{ "index", &index, NULL }, { "repair", NULL, &repair }, { "json", NULL, &as_json }, { NULL, NULL, NULL }
	};
	cli_args_t args = { 0 };
	bs_index_list_t l = { 0 };
	json_t *arr = NULL;
	int64_t remaining = 0, corrupt = 0;
	char first_bad[320] = "";
	int k, rc;

	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 0, 0)) != 0)
		goto done;
	if ((rc = cli_open(ctx)) < 0 || (rc = bs_index_list(&l, ctx->st)) < 0)
		goto done;
	if (index && !index_named(&l, index)) {
		bs_index_t one;
		if ((rc = bs_index_get(&one, ctx->st, index)) < 0) /* for its message */
			goto done;
	}
	if (as_json && !(arr = json_array())) {
		rc = bs_error(BS_ENOMEM, "out of memory");
		goto done;
	}
	for (k = 0; k < l.len; k++) {
		const bs_index_t *ix = &l.items[k];
		int64_t drift, left;
		bs_drift_t d;

		if (index ? strcmp(ix->name, index) != 0 : ix->state == BS_INDEX_DISABLED)
			continue;
		if ((rc = bs_verify(&d, ctx->st, ix->name, repair)) < 0) {
			char msg[600];
			snprintf(msg, sizeof msg, "%s", bs_last_error());
			if (d.cut_short[0]) /* rows changed before it failed: audited all the same */
				cli_audit(ctx, "index.repair", ix->name, d.cut_short);
			bs_error(rc, "verify %s: %s", ix->name, msg);
			break;
		}
		if (d.repaired) {
			char det[100];
			snprintf(det, sizeof det, "%" PRId64 " index rows repaired by verify --repair", d.repaired);
			cli_audit(ctx, "index.repair", ix->name, det);
		}
		drift = d.missing + d.stale + d.orphaned;
		left = repair ? (drift > d.repaired ? drift - d.repaired : 0) : drift;
		remaining += left;
		/* once per store: every index reads the same bodies */
		if (d.corrupt + d.unprintable > corrupt) {
			corrupt = d.corrupt + d.unprintable;
			snprintf(first_bad, sizeof first_bad, "%s", d.first_bad);
		}
		if (as_json)
			json_array_append_new(arr, drift_json(ix, &d, left));
		else
			drift_text(ix, &d, repair);
		if (d.not_recorded)
			fprintf(stderr,
			        "bagstore: verify %s: not recorded for the console: the account may not "
			        "write bagstore_verify\n",
			        ix->name);
	}
	/* the indexes verified before a failure are printed all the same (none:
	 * []), as the text form prints each as it goes; the failure stays the
	 * error */
	if (as_json) { /* printing sets no error unless it fails itself */
		int prc = cli_json_print(arr);
		if (rc >= 0)
			rc = prc;
	}
	if (rc < 0)
		goto done;
	char drift_msg[200] = "", bad_msg[512] = "";
	if (remaining)
		snprintf(drift_msg, sizeof drift_msg, "%" PRId64 " index rows drift from the bodies%s", remaining,
		         repair ? " after repair" : "; `bagstore verify --repair` fixes them");
	if (corrupt)
		snprintf(bad_msg, sizeof bad_msg,
		         "%" PRId64 " stored bodies are corrupt or cannot be shown (no index "
		         "holds them); the first: %.300s",
		         corrupt, first_bad);
	if (remaining || corrupt)
		rc = bs_error(corrupt ? BS_ECORRUPT : BS_ERROR, "%s%s%s", drift_msg, remaining && corrupt ? "; " : "",
		              bad_msg);
done:
	json_decref(arr);
	bs_index_list_free(&l);
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------ backfill */

static json_t *job_json(const bs_job_t *j, const char *shard)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "index", cli_jstr(j->index));
	json_object_set_new(o, "shard", cli_jstr(shard));
	json_object_set_new(o, "state", cli_jstr(bs_job_state_name(j->state)));
	json_object_set_new(o, "reason", cli_jstr(j->reason));
	json_object_set_new(o, "cursor", json_integer(j->cursor));
	json_object_set_new(o, "max_id", json_integer(j->max_id));
	json_object_set_new(o, "rows_scanned", json_integer(j->rows_scanned));
	json_object_set_new(o, "rows_total", json_integer(j->rows_total));
	json_object_set_new(o, "rows_written", json_integer(j->rows_written));
	json_object_set_new(o, "rate", json_real(j->rate));
	json_object_set_new(o, "eta_s", j->eta_s >= 0 ? json_real(j->eta_s) : json_null());
	json_object_set_new(o, "chunk", json_integer(j->chunk));
	json_object_set_new(o, "worker_host", cli_jstr(j->worker_host));
	json_object_set_new(o, "worker_pid", j->worker_pid ? json_integer(j->worker_pid) : json_null());
	json_object_set_new(o, "heartbeat_us", j->heartbeat_us ? json_integer(j->heartbeat_us) : json_null());
	return o;
}

static int jobs_json(const bs_job_list_t *l, const bs_config_t *cfg)
{
	json_t *arr = json_array();
	int k, rc;

	if (!arr)
		return bs_error(BS_ENOMEM, "out of memory");
	for (k = 0; k < l->len; k++)
		json_array_append_new(arr, job_json(&l->items[k], cfg->shards[l->items[k].shard].name));
	rc = cli_json_print(arr);
	json_decref(arr);
	return rc;
}

static void jobs_table(const bs_job_list_t *l, const bs_config_t *cfg)
{
	int k;

	printf("%-20s %-6s %-9s %10s %10s %10s %9s %7s  %-24s %-20s %s\n", "INDEX", "SHARD", "STATE", "SCANNED",
	       "TOTAL", "WRITTEN", "RATE/S", "ETA", "WORKER", "HEARTBEAT", "REASON");
	for (k = 0; k < l->len; k++) {
		const bs_job_t *j = &l->items[k];
		char eta[32], e[32], hb[32], worker[96];

		/* an estimate from the last 10 s (0 once done: exact) */
		snprintf(eta, sizeof eta, "%s%s", j->eta_s > 0 ? "~" : "", fmt_secs(e, sizeof e, j->eta_s));
		fmt_iso_utc(hb, sizeof hb, j->heartbeat_us);
		if (j->worker_host[0])
			snprintf(worker, sizeof worker, "%s:%d", j->worker_host, j->worker_pid);
		else
			snprintf(worker, sizeof worker, "-");
		printf("%-20s %-6s %-9s %10" PRId64 " %10" PRId64 " %10" PRId64 " %9.0f %7s  %-24s %-20s %s\n",
		       j->index, cfg->shards[j->shard].name, bs_job_state_name(j->state), j->rows_scanned,
		       j->rows_total, j->rows_written, j->rate, eta, worker, hb, j->reason[0] ? j->reason : "");
	}
	if (!l->len)
		printf("(no backfill jobs)\n");
}

/* Work queued (backfill jobs, or a reshard's moves) and no live worker in
 * the registry that would run it: say so, and how to start one. */
void cli_queued_note(cli_ctx_t *ctx, FILE *f, int queued, bool moves)
{
	bs_worker_list_t wl = { 0 };
	const char *what = moves ? "move" : "job";

	if (!queued)
		return;
	if (bs_workers_list(&wl, ctx->st, NULL) < 0) {
		fprintf(f, "note: %d %s%s queued; whether a cleaner runs is unknown: %s\n", queued, what,
		        queued == 1 ? "" : "s", bs_last_error());
		bs_error_clear();
		return;
	}
	/* moves are run by the daemon and by `cleaner --reshard` (kind reshard) */
	if (!bs_workers_alive(&wl, "cleaner") && !(moves && bs_workers_alive(&wl, "reshard")))
		fprintf(f,
		        "note: %d %s%s queued and no cleaner daemon is running (`bagstore workers` lists none): "
		        "start one with `bagstore cleaner`%s\n",
		        queued, what, queued == 1 ? "" : "s",
		        moves ? ", or run them with `bagstore cleaner --reshard`"
		              : ", or press B on the console's indexes screen");
	bs_worker_list_free(&wl);
}

/* Jobs queued and no live cleaner daemon to run them (on stdout after the
 * table; on stderr beside JSON). */
static void queued_hint(cli_ctx_t *ctx, const bs_job_list_t *l, bool as_json)
{
	int queued = 0;

	for (int k = 0; k < l->len; k++)
		queued += l->items[k].state == BS_JOB_QUEUED;
	cli_queued_note(ctx, as_json ? stderr : stdout, queued, false);
}

int cli_cmd_backfill_list(cli_ctx_t *ctx, int argc, char **argv)
{
	bool as_json = false;
	const cli_opt_t opts[] = { { "json", NULL, &as_json }, { NULL, NULL, NULL } };
	cli_args_t args = { 0 };
	bs_job_list_t l = { 0 };
	int unreachable = 0, rc;

	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 0, 0)) != 0)
		goto done;
	if ((rc = cli_open(ctx)) < 0 || (rc = bs_job_list(&l, ctx->st, &unreachable)) < 0)
		goto done;
	if (as_json)
		rc = jobs_json(&l, bs_store_config(ctx->st));
	else
		jobs_table(&l, bs_store_config(ctx->st));
	if (!rc)
		queued_hint(ctx, &l, as_json);
	if (!rc && unreachable)
		rc = cli_unreachable(unreachable, "their jobs are not listed", l.unreachable_first);
done:
	bs_job_list_free(&l);
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

/* backfill pause|resume|cancel NAME: one action on every job of the index. */
static int control(cli_ctx_t *ctx, int argc, char **argv, const char *action, const char *done)
{
	cli_args_t args = { 0 };
	int rc;

	if ((rc = cli_parse(&args, ctx, argc, argv, NULL, 1, 1)) != 0)
		goto out;
	if ((rc = cli_open(ctx)) < 0 || (rc = bs_job_control(ctx->st, args.v[0], action)) < 0)
		goto out;
	printf("backfill of %s %s\n", args.v[0], done);
out:
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

int cli_cmd_backfill_pause(cli_ctx_t *ctx, int argc, char **argv)
{
	return control(ctx, argc, argv, "pause", "paused (its worker stops within one chunk)");
}

int cli_cmd_backfill_resume(cli_ctx_t *ctx, int argc, char **argv)
{
	return control(ctx, argc, argv, "resume", "resumed (queued for a cleaner)");
}

int cli_cmd_backfill_cancel(cli_ctx_t *ctx, int argc, char **argv)
{
	return control(ctx, argc, argv, "cancel", "cancelled");
}

/* ------------------------------------------------------------ lag */

/* A shard's repair state: ok only while a cleaner repairs it. cleaners:
 * live cleaners in the registry, -1 unknown. */
static const char *lag_state(const bs_lag_t *g, int cleaners)
{
	return !g->reachable ? "unreachable" : !g->watermark_us ? "never ran" : cleaners == 0 ? "no cleaner" : "ok";
}

static json_t *lag_json(const bs_lag_t *g, int cleaners)
{
	json_t *o = json_object(), *h = json_array();
	int k;

	if (!o || !h) {
		json_decref(o);
		json_decref(h);
		return NULL;
	}
	json_object_set_new(o, "shard", cli_jstr(g->shard));
	json_object_set_new(o, "reachable", json_boolean(g->reachable));
	json_object_set_new(o, "state", json_string(lag_state(g, cleaners)));
	json_object_set_new(o, "watermark_us", g->watermark_us ? json_integer(g->watermark_us) : json_null());
	json_object_set_new(o, "lag_s", g->lag_s >= 0 ? json_real(g->lag_s) : json_null());
	/* what is not known is null: a shard that did not answer, a pass that
	 * never ran */
	json_object_set_new(o, "repairs_per_s", g->last_pass_us ? json_real(g->repairs_per_s) : json_null());
	json_object_set_new(o, "last_pass_us", g->last_pass_us ? json_integer(g->last_pass_us) : json_null());
	json_object_set_new(o, "last_pass_rows", g->last_pass_us ? json_integer(g->last_pass_rows) : json_null());
	json_object_set_new(o, "history_step_s", json_real(g->history_step_s));
	for (k = 0; k < g->nhistory; k++)
		json_array_append_new(h, json_real(g->history[k]));
	json_object_set_new(o, "history", h);
	/* when each sample was taken: a span without one is a gap (no pass ran) */
	if ((h = json_array())) {
		for (k = 0; k < g->nhistory; k++)
			json_array_append_new(h, json_integer(g->history_at_us[k]));
		json_object_set_new(o, "history_at_us", h);
	}
	json_object_set_new(o, "repairs_total", g->reachable ? json_integer(g->repairs_total) : json_null());
	json_object_set_new(o, "fills_total", g->reachable ? json_integer(g->fills_total) : json_null());
	return o;
}

static void lag_table(const bs_lag_t *lag, int n, int cleaners)
{
	int i;

	printf("%-8s %-11s %10s %-20s %-20s %10s %10s\n", "SHARD", "STATE", "LAG_S", "WATERMARK", "LAST_PASS",
	       "PASS_ROWS", "REPAIRS/S");
	for (i = 0; i < n; i++) {
		const bs_lag_t *g = &lag[i];
		char wm[32], lp[32], l[32], rows[32] = "-", rate[32] = "-";

		fmt_iso_utc(wm, sizeof wm, g->watermark_us);
		fmt_iso_utc(lp, sizeof lp, g->last_pass_us);
		if (g->lag_s >= 0)
			snprintf(l, sizeof l, "%.3f", g->lag_s);
		else
			snprintf(l, sizeof l, "-");
		/* a shard that did not answer, or where no pass ran, has no last pass */
		if (g->last_pass_us) {
			snprintf(rows, sizeof rows, "%" PRId64, g->last_pass_rows);
			snprintf(rate, sizeof rate, "%.1f", g->repairs_per_s);
		}
		printf("%-8s %-11s %10s %-20s %-20s %10s %10s\n", g->shard, lag_state(g, cleaners), l, wm, lp, rows,
		       rate);
	}
}

int cli_cmd_lag(cli_ctx_t *ctx, int argc, char **argv)
{
	bool as_json = false;
	const cli_opt_t opts[] = { { "json", NULL, &as_json }, { NULL, NULL, NULL } };
	cli_args_t args = { 0 };
	bs_lag_t *lag = NULL;
	bs_worker_list_t wl = { 0 };
	json_t *arr = NULL;
	int i, n, down = 0, cleaners = -1, rc;

	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 0, 0)) != 0)
		goto done;
	if ((rc = cli_open(ctx)) < 0)
		goto done;
	n = bs_store_nshards(ctx->st);
	if (!(lag = cli_per_shard_alloc(ctx, sizeof *lag))) {
		rc = BS_ENOMEM;
		goto done;
	}
	if ((rc = bs_lag(lag, ctx->st)) < 0)
		goto done;
	for (i = 0; i < n; i++)
		down += !lag[i].reachable;
	/* who repairs: a lag is ok only while a cleaner is alive to shrink it */
	if (bs_workers_list(&wl, ctx->st, NULL) == 0)
		cleaners = bs_workers_alive(&wl, "cleaner");
	bs_error_clear();
	if (as_json) {
		if (!(arr = json_array())) {
			rc = bs_error(BS_ENOMEM, "out of memory");
			goto done;
		}
		for (i = 0; i < n; i++)
			json_array_append_new(arr, lag_json(&lag[i], cleaners));
		if ((rc = cli_json_print(arr)) < 0)
			goto done;
	} else {
		lag_table(lag, n, cleaners);
		if (cleaners == 0)
			printf("no cleaner is running: nothing repairs the shards and the lag grows; "
			       "start one with `bagstore cleaner`\n");
	}
	if (down) { /* which, and the first one's error */
		char names[512] = "";
		const char *why = "";
		size_t o = 0;
		for (i = 0; i < n; i++)
			if (!lag[i].reachable && o < sizeof names) {
				o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", o ? ", " : "", lag[i].shard);
				if (!*why)
					why = lag[i].error;
			}
		rc = bs_error(BS_EUNREACHABLE, "%d shard%s did not answer: %s%s%s%s", down, down == 1 ? "" : "s", names,
		              *why ? " (" : "", why, *why ? ")" : "");
	}
done:
	json_decref(arr);
	bs_worker_list_free(&wl);
	free(lag);
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------ workers */

/* "a,b,c" as a JSON array of strings. */
static json_t *csv_json(const char *s)
{
	json_t *a = json_array();

	while (a && s && *s) {
		size_t n = strcspn(s, ",");
		json_array_append_new(a, json_stringn(s, n));
		s += n + (s[n] == ',');
	}
	return a;
}

static json_t *worker_json(const bs_worker_info_t *w)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "id", json_string(w->id));
	json_object_set_new(o, "kind", cli_jstr(w->kind));
	json_object_set_new(o, "host", cli_jstr(w->host));
	json_object_set_new(o, "pid", json_integer(w->pid));
	json_object_set_new(o, "version", cli_jstr(w->version));
	json_object_set_new(o, "state", json_string(w->alive ? "alive" : "dead"));
	json_object_set_new(o, "alive", json_boolean(w->alive));
	json_object_set_new(o, "started_us", json_integer(w->started_us));
	json_object_set_new(o, "heartbeat_us", json_integer(w->heartbeat_us));
	json_object_set_new(o, "heartbeat_age_s", json_real(w->age_s));
	json_object_set_new(o, "jobs", csv_json(w->jobs));
	json_object_set_new(o, "repair_shards", csv_json(w->repair));
	json_object_set_new(o, "metrics", cli_jstr(w->metrics));
	json_object_set_new(o, "shards", json_integer(w->shards));
	return o;
}

static int workers_table(const bs_worker_list_t *l)
{
	static const char *const head[] = { "WORKER",    "KIND", "HOST:PID", "VERSION", "STARTED",
		                            "HEARTBEAT", "JOBS", "REPAIRS",  "METRICS" };
	cli_table_t t = { .ncols = 9 };
	int rc;

	if (!l->len) {
		printf("(no worker registered: no cleaner runs, and no console runs backfills)\n");
		return 0;
	}
	rc = cli_table_add(&t, head, NULL);

	for (int k = 0; k < l->len && !rc; k++) {
		const bs_worker_info_t *w = &l->items[k];
		char id[9], who[300], started[64], hb[80], age[32];
		snprintf(id, sizeof id, "%.8s", w->id);
		snprintf(who, sizeof who, "%s:%d", w->host, w->pid);
		fmt_age(started, sizeof started, w->started_us);
		fmt_secs(age, sizeof age, w->age_s);
		snprintf(hb, sizeof hb, "%s ago%s", age, w->alive ? "" : " (DEAD)");
		const char *cells[] = { id,
			                w->kind,
			                who,
			                w->version,
			                started,
			                hb,
			                w->jobs[0] ? w->jobs : "-",
			                w->repair[0] ? w->repair : "-",
			                w->metrics[0] ? w->metrics : "-" };
		rc = cli_table_add(&t, cells, NULL);
	}
	if (!rc)
		cli_table_print(stdout, &t);
	cli_table_free(&t);
	return rc;
}

int cli_cmd_workers(cli_ctx_t *ctx, int argc, char **argv)
{
	bool as_json = false;
	const cli_opt_t opts[] = { { "json", NULL, &as_json }, { NULL, NULL, NULL } };
	cli_args_t args = { 0 };
	bs_worker_list_t l = { 0 };
	json_t *arr = NULL;
	int unreachable = 0, rc;

	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 0, 0)) != 0)
		goto done;
	if ((rc = cli_open(ctx)) < 0 || (rc = bs_workers_list(&l, ctx->st, &unreachable)) < 0)
		goto done;
	if (as_json) {
		if (!(arr = json_array())) {
			rc = bs_error(BS_ENOMEM, "out of memory");
			goto done;
		}
		for (int k = 0; k < l.len; k++)
			json_array_append_new(arr, worker_json(&l.items[k]));
		rc = cli_json_print(arr);
	} else {
		rc = workers_table(&l);
	}
	if (!rc && unreachable)
		rc = cli_unreachable(unreachable, "a worker only they list is not shown", l.unreachable_first);
done:
	json_decref(arr);
	bs_worker_list_free(&l);
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

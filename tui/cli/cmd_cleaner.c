/*
 * cli_cleaner.c - the cleaner's subcommands: `cleaner` (one backfill, or
 * the daemon), `verify`, `backfill list|pause|resume|cancel` and `lag`.
 * Each handler parses its options, asks the engine through bagstore.h and
 * prints; main.c prints errors and maps codes to exit statuses.
 */
#include "cli_cleaner.h"
#include "fmt.h"

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

/* ------------------------------------------------------------ options */

typedef struct {
	const char *name;
	const char **value; /* NULL: a flag */
	bool *flag;
} opt_t;

#define HELP_SHOWN 1

/* Options anywhere; positionals into pos[] (at most maxpos). */
static int parse(cli_ctx_t *ctx, int argc, char **argv, const opt_t *opts, const char **pos,
                 int minpos, int maxpos)
{
	int npos = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			cli_print_command_help(stdout, ctx->cmd);
			return HELP_SHOWN;
		}
		if (a[0] != '-' || !a[1]) {
			if (npos >= maxpos)
				return cli_usage_error(ctx, "unexpected argument '%s'", a);
			pos[npos++] = a;
			continue;
		}
		const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
		size_t nlen = eq ? (size_t)(eq - a - 2) : strlen(a) - 2;
		const opt_t *o = NULL;
		for (const opt_t *p = opts; a[1] == '-' && p && p->name; p++)
			if (strlen(p->name) == nlen && !strncmp(p->name, a + 2, nlen))
				o = p;
		if (!o)
			return cli_usage_error(ctx, "unknown option '%s'", a);
		if (o->value) {
			if (eq)
				*o->value = eq + 1;
			else if (i + 1 < argc)
				*o->value = argv[++i];
			else
				return cli_usage_error(ctx, "option --%s needs a value", o->name);
		} else if (eq) {
			return cli_usage_error(ctx, "option --%s takes no value", o->name);
		} else {
			*o->flag = true;
		}
	}
	if (npos < minpos)
		return cli_usage_error(ctx, "missing NAME");
	return 0;
}

static json_t *jstr(const char *s)
{
	json_t *j = json_string(s ? s : "");
	return j ? j : json_string("(not UTF-8)");
}

static int json_out(json_t *doc)
{
	char *s = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(doc);
	if (!s)
		return bs_error(BS_ENOMEM, "out of memory");
	puts(s);
	free(s);
	return 0;
}

/* ------------------------------------------------------------ cleaner */

static atomic_int stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&stop_flag, 1);
}

typedef struct {
	pthread_mutex_t lock; /* progress comes from the cleaner's threads */
	bool tty, daemon;
	int n;
	const bs_config_t *cfg;
	bs_job_t *last; /* per shard */
	bs_job_t seen[64]; /* the daemon: per index and shard */
	int nseen;
	char last_err[512];
} progress_t;

static void progress_locked(progress_t *pr, const bs_job_t *job);

static void on_progress(void *p, const bs_job_t *job)
{
	progress_t *pr = p;
	pthread_mutex_lock(&pr->lock);
	progress_locked(pr, job);
	pthread_mutex_unlock(&pr->lock);
}

/* An error the daemon survives: logged when it changes. */
static void on_error(void *p, int code, const char *msg)
{
	progress_t *pr = p;
	(void)code;
	pthread_mutex_lock(&pr->lock);
	if (strcmp(pr->last_err, msg)) {
		snprintf(pr->last_err, sizeof pr->last_err, "%s", msg);
		fprintf(stderr, "bagstore: cleaner: %s\n", msg);
	}
	pthread_mutex_unlock(&pr->lock);
}

static void progress_locked(progress_t *pr, const bs_job_t *job)
{
	if (job->shard < 0 || job->shard >= pr->n)
		return;
	if (pr->daemon) { /* the daemon logs what changes, one line each */
		int k;
		for (k = 0; k < pr->nseen; k++)
			if (pr->seen[k].shard == job->shard && !strcmp(pr->seen[k].index, job->index))
				break;
		if (k == pr->nseen && pr->nseen < (int)(sizeof pr->seen / sizeof *pr->seen))
			pr->nseen++;
		else if (k == pr->nseen)
			k = 0;
		bs_job_t *was = &pr->seen[k];
		if (strcmp(was->index, job->index) || was->state != job->state || strcmp(was->reason, job->reason))
			fprintf(stderr, "bagstore: cleaner: backfill of %s on shard %s: %s%s%s\n", job->index,
			        pr->cfg->shards[job->shard].name, bs_job_state_name(job->state), job->reason[0] ? ": " : "",
			        job->reason);
		*was = *job;
		return;
	}
	pr->last[job->shard] = *job;
	if (!pr->tty)
		return;
	char line[1024];
	size_t len = 0;
	int64_t scanned = 0, total = 0;
	double rate = 0, eta = 0;
	for (int i = 0; i < pr->n; i++) {
		const bs_job_t *j = &pr->last[i];
		scanned += j->rows_scanned;
		total += j->rows_total;
		rate += j->rate;
		if (j->eta_s > eta)
			eta = j->eta_s;
	}
	char e[32];
	fmt_secs(e, sizeof e, eta);
	len += (size_t)snprintf(line + len, sizeof line - len, "\rbackfill %s: %" PRId64 "/%" PRId64 " rows (%.0f%%), %.0f rows/s, eta %s",
	                        job->index, scanned, total, total ? 100.0 * (double)scanned / (double)total : 100.0, rate, e);
	for (int i = 0; i < pr->n && len < sizeof line - 64; i++) {
		const bs_job_t *j = &pr->last[i];
		if (j->state == BS_JOB_THROTTLED || j->state == BS_JOB_PAUSED)
			len += (size_t)snprintf(line + len, sizeof line - len, "; shard %s %s%s%.60s", pr->cfg->shards[i].name,
			                        bs_job_state_name(j->state), j->reason[0] ? ": " : "", j->reason);
	}
	fprintf(stderr, "%s\033[K", line);
	fflush(stderr);
}

int cli_cmd_cleaner(cli_ctx_t *ctx, int argc, char **argv)
{
	const char *index = NULL;
	bool once = false;
	opt_t opts[] = { {"index", &index, NULL}, {"once", NULL, &once}, {NULL, NULL, NULL} };
	progress_t pr = {0};
	int rc;
	if ((rc = parse(ctx, argc, argv, opts, NULL, 0, 0)))
		return rc == HELP_SHOWN ? 0 : rc;
	if (index && once)
		return cli_usage_error(ctx, "--index and --once do not go together");
	if ((rc = cli_open(ctx)))
		return rc;
	pthread_mutex_init(&pr.lock, NULL);
	pr.n = bs_store_nshards(ctx->st);
	pr.cfg = bs_store_config(ctx->st);
	pr.tty = isatty(STDERR_FILENO);
	pr.daemon = !index;
	if (!(pr.last = calloc((size_t)pr.n, sizeof *pr.last)))
		return bs_error(BS_ENOMEM, "out of memory");
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	bs_cleaner_opts_t o = { .stop = &stop_flag, .once = once, .progress = on_progress,
	                       .error = on_error, .ctx = &pr };
	if (index) {
		rc = bs_cleaner_backfill(ctx->st, index, &o);
		if (pr.tty)
			fputc('\n', stderr);
		if (!rc && !atomic_load(&stop_flag)) {
			int64_t scanned = 0, written = 0;
			for (int i = 0; i < pr.n; i++) {
				scanned += pr.last[i].rows_scanned;
				written += pr.last[i].rows_written;
			}
			if (scanned)
				printf("index %s is ready (%" PRId64 " entities scanned, %" PRId64
				       " index rows written)\n", index, scanned, written);
			else
				printf("index %s is ready\n", index);
		} else if (!rc) {
			printf("backfill of %s stopped; it resumes where it stopped\n", index);
		}
	} else {
		rc = bs_cleaner_run(ctx->st, &o);
	}
	free(pr.last);
	pthread_mutex_destroy(&pr.lock);
	return rc;
}

/* ------------------------------------------------------------ verify */

static json_t *drift_json(const char *name, const bs_drift_t *d)
{
	json_t *o = json_object();
	json_object_set_new(o, "index", jstr(name));
	json_object_set_new(o, "checked", json_integer(d->checked));
	json_object_set_new(o, "missing", json_integer(d->missing));
	json_object_set_new(o, "stale", json_integer(d->stale));
	json_object_set_new(o, "orphaned", json_integer(d->orphaned));
	json_object_set_new(o, "misfit", json_integer(d->misfit));
	json_object_set_new(o, "repaired", json_integer(d->repaired));
	return o;
}

static bool index_named(const bs_index_list_t *l, const char *name)
{
	for (int k = 0; k < l->len; k++)
		if (!strcmp(l->items[k].name, name))
			return true;
	return false;
}

int cli_cmd_verify(cli_ctx_t *ctx, int argc, char **argv)
{
	const char *index = NULL;
	bool repair = false, as_json = false;
	opt_t opts[] = { {"index", &index, NULL}, {"repair", NULL, &repair}, {"json", NULL, &as_json},
	                 {NULL, NULL, NULL} };
	bs_index_list_t l = {0};
	json_t *arr = NULL;
	int rc;
	int64_t remaining = 0;
	if ((rc = parse(ctx, argc, argv, opts, NULL, 0, 0)))
		return rc == HELP_SHOWN ? 0 : rc;
	if ((rc = cli_open(ctx)))
		return rc;
	if ((rc = bs_index_list(&l, ctx->st)))
		return rc;
	if (index && !index_named(&l, index)) {
		bs_index_t one;
		if ((rc = bs_index_get(&one, ctx->st, index))) /* for its message */
			goto done;
	}
	arr = json_array();
	for (int k = 0; k < l.len; k++) {
		const bs_index_t *ix = &l.items[k];
		bs_drift_t d;
		if (index ? strcmp(ix->name, index) != 0 : ix->state == BS_INDEX_DISABLED)
			continue;
		if ((rc = bs_verify(&d, ctx->st, ix->name, repair)))
			goto done;
		int64_t drift = d.missing + d.stale + d.orphaned;
		int64_t left = repair ? (drift > d.repaired ? drift - d.repaired : 0) : drift;
		remaining += left;
		if (as_json) {
			json_t *o = drift_json(ix->name, &d);
			json_object_set_new(o, "state", jstr(bs_index_state_name(ix->state)));
			json_object_set_new(o, "remaining", json_integer(left));
			json_array_append_new(arr, o);
		} else {
			printf("%s: %" PRId64 " entities checked, %" PRId64 " missing, %" PRId64 " stale, %" PRId64
			       " orphaned, %" PRId64 " misfit%s",
			       ix->name, d.checked, d.missing, d.stale, d.orphaned, d.misfit, repair ? "" : "\n");
			if (repair)
				printf(", %" PRId64 " repaired\n", d.repaired);
		}
	}
	if (as_json) {
		rc = json_out(arr);
		arr = NULL;
		if (rc)
			goto done;
	}
	if (remaining)
		rc = bs_error(BS_ERROR, "%" PRId64 " index rows drift from the bodies%s", remaining,
		              repair ? " after repair" : "; `bagstore verify --repair` fixes them");
done:
	json_decref(arr);
	bs_index_list_free(&l);
	return rc;
}

/* ------------------------------------------------------------ backfill */

int cli_cmd_backfill_list(cli_ctx_t *ctx, int argc, char **argv)
{
	bool as_json = false;
	opt_t opts[] = { {"json", NULL, &as_json}, {NULL, NULL, NULL} };
	bs_job_list_t l = {0};
	int unreachable = 0, rc;
	if ((rc = parse(ctx, argc, argv, opts, NULL, 0, 0)))
		return rc == HELP_SHOWN ? 0 : rc;
	if ((rc = cli_open(ctx)) || (rc = bs_job_list(&l, ctx->st, &unreachable)))
		return rc;
	if (as_json) {
		json_t *arr = json_array();
		for (int k = 0; k < l.len; k++) {
			const bs_job_t *j = &l.items[k];
			json_t *o = json_object();
			json_object_set_new(o, "index", jstr(j->index));
			json_object_set_new(o, "shard", jstr(bs_store_config(ctx->st)->shards[j->shard].name));
			json_object_set_new(o, "state", jstr(bs_job_state_name(j->state)));
			json_object_set_new(o, "reason", j->reason[0] ? jstr(j->reason) : json_null());
			json_object_set_new(o, "cursor", json_integer(j->cursor));
			json_object_set_new(o, "max_id", json_integer(j->max_id));
			json_object_set_new(o, "rows_scanned", json_integer(j->rows_scanned));
			json_object_set_new(o, "rows_total", json_integer(j->rows_total));
			json_object_set_new(o, "rows_written", json_integer(j->rows_written));
			json_object_set_new(o, "rate", json_real(j->rate));
			json_object_set_new(o, "eta_s", j->eta_s >= 0 ? json_real(j->eta_s) : json_null());
			json_object_set_new(o, "chunk", json_integer(j->chunk));
			json_object_set_new(o, "worker_host", j->worker_host[0] ? jstr(j->worker_host) : json_null());
			json_object_set_new(o, "worker_pid", j->worker_pid ? json_integer(j->worker_pid) : json_null());
			json_object_set_new(o, "heartbeat_us", j->heartbeat_us ? json_integer(j->heartbeat_us) : json_null());
			json_array_append_new(arr, o);
		}
		rc = json_out(arr);
	} else {
		printf("%-20s %-6s %-9s %10s %10s %10s %9s %7s  %-24s %-20s %s\n", "INDEX", "SHARD", "STATE",
		       "SCANNED", "TOTAL", "WRITTEN", "RATE/S", "ETA", "WORKER", "HEARTBEAT", "REASON");
		for (int k = 0; k < l.len; k++) {
			const bs_job_t *j = &l.items[k];
			char eta[32], hb[32], worker[96];
			fmt_secs(eta, sizeof eta, j->eta_s);
			fmt_iso_utc(hb, sizeof hb, j->heartbeat_us);
			if (j->worker_host[0])
				snprintf(worker, sizeof worker, "%s:%d", j->worker_host, j->worker_pid);
			else
				snprintf(worker, sizeof worker, "-");
			printf("%-20s %-6s %-9s %10" PRId64 " %10" PRId64 " %10" PRId64 " %9.0f %7s  %-24s %-20s %s\n",
			       j->index, bs_store_config(ctx->st)->shards[j->shard].name, bs_job_state_name(j->state),
			       j->rows_scanned, j->rows_total, j->rows_written, j->rate, eta, worker, hb,
			       j->reason[0] ? j->reason : "");
		}
		if (!l.len)
			printf("(no backfill jobs)\n");
	}
	if (!rc && unreachable)
		rc = bs_error(BS_EUNREACHABLE, "%d shards did not answer; their jobs are not listed", unreachable);
	bs_job_list_free(&l);
	return rc;
}

static int control(cli_ctx_t *ctx, int argc, char **argv, const char *action, const char *done)
{
	const char *pos[1] = { NULL };
	int rc;
	if ((rc = parse(ctx, argc, argv, NULL, pos, 1, 1)))
		return rc == HELP_SHOWN ? 0 : rc;
	if ((rc = cli_open(ctx)) || (rc = bs_job_control(ctx->st, pos[0], action)))
		return rc;
	printf("backfill of %s %s\n", pos[0], done);
	return 0;
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

int cli_cmd_lag(cli_ctx_t *ctx, int argc, char **argv)
{
	bool as_json = false;
	opt_t opts[] = { {"json", NULL, &as_json}, {NULL, NULL, NULL} };
	bs_lag_t *lag = NULL;
	int rc, n;
	if ((rc = parse(ctx, argc, argv, opts, NULL, 0, 0)))
		return rc == HELP_SHOWN ? 0 : rc;
	if ((rc = cli_open(ctx)))
		return rc;
	n = bs_store_nshards(ctx->st);
	if (!(lag = calloc((size_t)n, sizeof *lag)))
		return bs_error(BS_ENOMEM, "out of memory");
	if ((rc = bs_lag(lag, ctx->st)))
		goto done;
	int down = 0;
	if (as_json) {
		json_t *arr = json_array();
		for (int i = 0; i < n; i++) {
			json_t *o = json_object(), *h = json_array();
			json_object_set_new(o, "shard", jstr(lag[i].shard));
			json_object_set_new(o, "reachable", json_boolean(lag[i].reachable));
			json_object_set_new(o, "watermark_us", lag[i].watermark_us ? json_integer(lag[i].watermark_us) : json_null());
			json_object_set_new(o, "lag_s", lag[i].lag_s >= 0 ? json_real(lag[i].lag_s) : json_null());
			json_object_set_new(o, "repairs_per_s", json_real(lag[i].repairs_per_s));
			json_object_set_new(o, "last_pass_us", lag[i].last_pass_us ? json_integer(lag[i].last_pass_us) : json_null());
			json_object_set_new(o, "last_pass_rows", json_integer(lag[i].last_pass_rows));
			json_object_set_new(o, "history_step_s", json_real(lag[i].history_step_s));
			for (int k = 0; k < lag[i].nhistory; k++)
				json_array_append_new(h, json_real(lag[i].history[k]));
			json_object_set_new(o, "history", h);
			json_array_append_new(arr, o);
			down += !lag[i].reachable;
		}
		rc = json_out(arr);
	} else {
		printf("%-8s %-11s %10s %-20s %-20s %10s %10s\n", "SHARD", "STATE", "LAG_S", "WATERMARK",
		       "LAST_PASS", "PASS_ROWS", "REPAIRS/S");
		for (int i = 0; i < n; i++) {
			char wm[32], lp[32], l[32];
			fmt_iso_utc(wm, sizeof wm, lag[i].watermark_us);
			fmt_iso_utc(lp, sizeof lp, lag[i].last_pass_us);
			if (lag[i].lag_s >= 0)
				snprintf(l, sizeof l, "%.3f", lag[i].lag_s);
			else
				snprintf(l, sizeof l, "-");
			printf("%-8s %-11s %10s %-20s %-20s %10" PRId64 " %10.1f\n", lag[i].shard,
			       !lag[i].reachable ? "unreachable" : lag[i].watermark_us ? "ok" : "never ran", l, wm, lp,
			       lag[i].last_pass_rows, lag[i].repairs_per_s);
			down += !lag[i].reachable;
		}
	}
	if (!rc && down)
		rc = bs_error(BS_EUNREACHABLE, "%d shards did not answer", down);
done:
	free(lag);
	return rc;
}

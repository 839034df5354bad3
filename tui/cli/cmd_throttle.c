/*
 * cmd_throttle.c - `bagstore throttle`: what the cleaner's throttle reads
 * on every shard (its heartbeat write's latency against its threshold,
 * Threads_running, InnoDB's history list length, each replica's lag from
 * the heartbeat) and what it would do: let backfills go, at what pace, or
 * hold them, and why.
 */
#include "cli.h"
#include "fmt.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "1.23" milliseconds, or "-" when unknown. */
static const char *ms(char *buf, size_t size, double s)
{
	if (s < 0)
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%.2f", s * 1e3);
	return buf;
}

static json_t *ms_json(double s)
{
	return s >= 0 ? json_real(s * 1e3) : json_null();
}

static json_t *reading_json(const bs_throttle_shard_t *r)
{
	json_t *o = json_object(), *reps = json_array();
	if (!o || !reps) {
		json_decref(o);
		json_decref(reps);
		return NULL;
	}
	json_object_set_new(o, "shard", cli_jstr(r->shard));
	json_object_set_new(o, "state", cli_jstr(bs_throttle_state_name(r->state)));
	json_object_set_new(o, "signal", cli_jstr(r->signal));
	json_object_set_new(o, "value", r->signal[0] ? json_real(r->value) : json_null());
	json_object_set_new(o, "limit", r->signal[0] ? json_real(r->limit) : json_null());
	json_object_set_new(o, "reason", cli_jstr(r->reason));
	json_object_set_new(o, "write_latency_ms", ms_json(r->write_latency_s));
	json_object_set_new(o, "write_latency_signal", cli_jstr(r->write_latency_tail ? "tail" : "median"));
	json_object_set_new(o, "write_baseline_ms", ms_json(r->write_baseline_s));
	json_object_set_new(o, "write_limit_ms",
	                    r->write_limit_s > 0 ? json_real(r->write_limit_s * 1e3) : json_null());
	json_object_set_new(o, "other_writes_per_s",
	                    r->other_writes_s >= 0 ? json_real(r->other_writes_s) : json_null());
	json_object_set_new(o, "others_write", json_boolean(r->others_write));
	json_object_set_new(o, "threads_running",
	                    r->threads_running >= 0 ? json_integer(r->threads_running) : json_null());
	json_object_set_new(o, "history_length",
	                    r->history_length >= 0 ? json_integer(r->history_length) : json_null());
	for (int k = 0; k < r->nreplicas; k++) {
		json_t *x = json_object();
		json_object_set_new(x, "address", cli_jstr(r->replicas[k].address));
		json_object_set_new(x, "lag_s",
		                    r->replicas[k].lag_s >= 0 ? json_real(r->replicas[k].lag_s) : json_null());
		json_object_set_new(x, "error", cli_jstr(r->replicas[k].lag_s >= 0 ? "" : r->replicas[k].error));
		json_array_append_new(reps, x);
	}
	json_object_set_new(o, "replicas", reps);
	json_object_set_new(o, "pace", json_real(r->pace));
	json_object_set_new(o, "most", json_integer(r->most));
	json_object_set_new(o, "heartbeats", json_integer(r->heartbeats));
	return o;
}

/* The replicas' lag, "0.08 s" each ("?" unknown), or "-" without any. */
static void replicas_text(char *buf, size_t size, const bs_throttle_shard_t *r)
{
	size_t len = 0;
	snprintf(buf, size, "-");
	for (int k = 0; k < r->nreplicas && len < size; k++) {
		if (r->replicas[k].lag_s >= 0)
			len += (size_t)snprintf(buf + len, size - len, "%s%.2f s", k ? ", " : "", r->replicas[k].lag_s);
		else
			len += (size_t)snprintf(buf + len, size - len, "%s?", k ? ", " : "");
	}
}

static void readings_table(const bs_throttle_shard_t *r, int n, const bs_config_t *cfg)
{
	cli_table_t t = { .ncols = 10, .right = 0x3fc };
	const char *head[] = { "SHARD",     "STATE",   "WRITE_MS", "BASELINE_MS", "LIMIT_MS",
		               "OTHER_W/S", "THREADS", "HISTORY",  "REPLICA_LAG", "PACE" };
	cli_table_add(&t, head, NULL);
	for (int i = 0; i < n; i++) {
		char w[32], b[32], l[32], ow[32], th[48], h[48], rl[160], p[48];
		if (r[i].other_writes_s >= 0)
			snprintf(ow, sizeof ow, "%.0f", r[i].other_writes_s);
		else
			snprintf(ow, sizeof ow, "?");
		snprintf(th, sizeof th, "%" PRId64 "/%u", r[i].threads_running, cfg->cleaner.max_load);
		if (r[i].history_length >= 0)
			snprintf(h, sizeof h, "%" PRId64 "/%u", r[i].history_length, cfg->cleaner.max_history_length);
		else
			snprintf(h, sizeof h, "-");
		replicas_text(rl, sizeof rl, &r[i]);
		snprintf(p, sizeof p, "%.2f/%d", r[i].pace, r[i].most);
		const char *row[] = { r[i].shard,
			              bs_throttle_state_name(r[i].state),
			              ms(w, sizeof w, r[i].write_latency_s),
			              ms(b, sizeof b, r[i].write_baseline_s),
			              r[i].write_limit_s > 0 ? ms(l, sizeof l, r[i].write_limit_s) : "-",
			              ow,
			              r[i].threads_running >= 0 ? th : "-",
			              h,
			              rl,
			              p };
		cli_table_add(&t, row, NULL);
	}
	cli_table_print(stdout, &t);
	cli_table_free(&t);
	for (int i = 0; i < n; i++)
		if (r[i].reason[0])
			printf("%s\n", r[i].reason);
}

int cli_cmd_throttle(cli_ctx_t *ctx, int argc, char **argv)
{
	bool as_json = false;
	const char *secs_text = NULL;
	const cli_opt_t opts[] = { { "json", NULL, &as_json }, { "seconds", &secs_text, NULL }, { NULL, NULL, NULL } };
	cli_args_t args = { 0 };
	bs_throttle_shard_t *r = NULL;
	json_t *arr = NULL;
	double secs = 1.0;
	int n, unreadable = 0, rc;

	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 0, 0)) != 0)
		goto done;
	if (secs_text) {
		char *end;
		secs = strtod(secs_text, &end);
		if (end == secs_text || *end || !(secs >= 0 && secs <= 3600)) {
			rc = cli_usage_error(ctx, "--seconds wants a number of seconds from 0 to 3600, got \"%s\"",
			                     secs_text);
			goto done;
		}
	}
	if ((rc = cli_open(ctx)) < 0)
		goto done;
	n = bs_store_nshards(ctx->st);
	if (!(r = cli_per_shard_alloc(ctx, sizeof *r))) {
		rc = BS_ENOMEM;
		goto done;
	}
	if ((rc = bs_throttle_sample(r, ctx->st, secs)) < 0)
		goto done;
	for (int i = 0; i < n; i++)
		unreadable += r[i].state == BS_THR_UNREADABLE;
	if (as_json) {
		if (!(arr = json_array())) {
			rc = bs_error(BS_ENOMEM, "out of memory");
			goto done;
		}
		for (int i = 0; i < n; i++)
			json_array_append_new(arr, reading_json(&r[i]));
		if ((rc = cli_json_print(arr)) < 0)
			goto done;
	} else {
		readings_table(r, n, bs_store_config(ctx->st));
	}
	if (unreadable)
		rc = bs_error(BS_EUNREACHABLE, "the signals of %d shards could not be read", unreadable);
done:
	json_decref(arr);
	free(r);
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

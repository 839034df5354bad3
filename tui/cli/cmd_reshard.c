/*
 * cmd_reshard.c - the bucket map and resharding: `buckets` (the map and
 * each shard's part of it), `reshard plan | start | status` and `reshard
 * pause | resume | cancel`. The moves themselves run in a cleaner
 * (`cleaner --reshard`, cmd_cleaner.c, or the daemon).
 */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt.h"

/* ------------------------------------------------------------ moves as JSON and text */

static json_t *move_json(const bs_move_t *m)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "id", json_integer(m->id));
	json_object_set_new(o, "source", cli_jstr(m->source));
	json_object_set_new(o, "target", cli_jstr(m->target));
	json_object_set_new(o, "nbuckets", json_integer(m->nbuckets));
	json_object_set_new(o, "buckets", cli_jstr(m->buckets));
	json_object_set_new(o, "state", json_string(bs_job_state_name(m->state)));
	json_object_set_new(o, "phase", json_string(bs_move_phase_name(m->phase)));
	json_object_set_new(o, "progress", json_real(m->progress));
	json_object_set_new(o, "rows_total", json_integer(m->rows_total));
	json_object_set_new(o, "rows_scanned", json_integer(m->rows_scanned));
	json_object_set_new(o, "rows_copied", json_integer(m->rows_copied));
	json_object_set_new(o, "index_total_est", json_integer(m->index_total));
	json_object_set_new(o, "index_rows", json_integer(m->index_rows));
	json_object_set_new(o, "log_rows", json_integer(m->log_rows));
	json_object_set_new(o, "rate", json_real(m->rate));
	json_object_set_new(o, "eta_s", m->eta_s >= 0 ? json_real(m->eta_s) : json_null());
	json_object_set_new(o, "fence_ms", json_real(m->fence_ms));
	json_object_set_new(o, "fence_tries", json_integer(m->fence_tries));
	json_object_set_new(o, "reason", cli_jstr(m->reason));
	json_object_set_new(o, "worker_host", cli_jstr(m->worker_host));
	json_object_set_new(o, "worker_pid", m->worker_pid ? json_integer(m->worker_pid) : json_null());
	json_object_set_new(o, "heartbeat_us", m->heartbeat_us ? json_integer(m->heartbeat_us) : json_null());
	return o;
}

/* "45%" of the current phase ("~" where its total is an estimate). */
static void phase_progress(char *buf, size_t n, const bs_move_t *m)
{
	if (m->phase == BS_MOVE_COPY || m->phase == BS_MOVE_INDEX || m->phase == BS_MOVE_CLEANUP)
		snprintf(buf, n, "%s%.0f%%", m->phase == BS_MOVE_INDEX ? "~" : "", m->progress * 100);
	else if (m->phase == BS_MOVE_DONE)
		snprintf(buf, n, "100%%");
	else if (m->phase == BS_MOVE_CATCHUP)
		snprintf(buf, n, "%" PRId64 " log", m->log_rows);
	else
		snprintf(buf, n, "-");
}

static int moves_table(const bs_move_list_t *l)
{
	static const char *const head[] = {"MOVE", "SOURCE", "TARGET", "BUCKETS", "STATE", "PHASE", "PROGRESS",
	                                   "COPIED", "RATE/S", "ETA", "FENCE", "WORKER"};
	cli_table_t t = {.ncols = 12, .right = (1u << 3) | (1u << 6) | (1u << 7) | (1u << 8) | (1u << 9) | (1u << 10)};
	int rc;

	if ((rc = cli_table_add(&t, head, NULL)) < 0)
		goto done;
	for (int k = 0; k < l->len; k++) {
		const bs_move_t *m = &l->items[k];
		char id[32], nb[16], prog[32], copied[32], rate[32], eta[32] = "-", fence[32] = "-", worker[96] = "-";
		const char *cells[12];

		/* its number in the plan (--json has the id) */
		snprintf(id, sizeof id, "%" PRId64, m->id - m->plan_id * 1000 + 1);
		snprintf(nb, sizeof nb, "%d", m->nbuckets);
		phase_progress(prog, sizeof prog, m);
		fmt_count(copied, sizeof copied, m->rows_copied);
		snprintf(rate, sizeof rate, "%.0f", m->rate);
		if (m->eta_s >= 0 && m->state != BS_JOB_DONE && m->state != BS_JOB_CANCELLED && m->state != BS_JOB_FAILED) {
			eta[0] = '~';
			fmt_secs(eta + 1, sizeof eta - 1, m->eta_s);
		}
		if (m->fence_ms > 0)
			snprintf(fence, sizeof fence, "%.0fms", m->fence_ms);
		if (m->worker_host[0])
			snprintf(worker, sizeof worker, "%s:%d", m->worker_host, m->worker_pid);
		cells[0] = id;
		cells[1] = m->source;
		cells[2] = m->target;
		cells[3] = nb;
		cells[4] = bs_job_state_name(m->state);
		cells[5] = bs_move_phase_name(m->phase);
		cells[6] = prog;
		cells[7] = copied;
		cells[8] = rate;
		cells[9] = eta;
		cells[10] = fence;
		cells[11] = worker;
		if ((rc = cli_table_add(&t, cells, m->reason[0] ? m->reason : NULL)) < 0)
			goto done;
	}
	cli_table_print(stdout, &t);
done:
	cli_table_free(&t);
	return rc;
}

/* ------------------------------------------------------------ buckets */

static json_t *bucket_shard_json(const bs_bucket_shard_t *s)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "name", cli_jstr(s->name));
	json_object_set_new(o, "buckets", json_integer(s->buckets));
	json_object_set_new(o, "share", json_integer(s->share));
	json_object_set_new(o, "draining", json_boolean(s->draining));
	json_object_set_new(o, "reachable", json_boolean(s->reachable));
	json_object_set_new(o, "entities_est", s->entities_est >= 0 ? json_integer(s->entities_est) : json_null());
	json_object_set_new(o, "data_bytes", s->reachable ? json_integer(s->data_bytes) : json_null());
	json_object_set_new(o, "moves_out", json_integer(s->moves_out));
	json_object_set_new(o, "moves_in", json_integer(s->moves_in));
	return o;
}

static int buckets_json(const bs_buckets_t *b, const bs_move_list_t *l)
{
	json_t *o = json_object(), *shards = json_array(), *moves = json_array();
	int rc = 0;

	if (!o || !shards || !moves) {
		json_decref(o);
		json_decref(shards);
		json_decref(moves);
		return bs_error(BS_ENOMEM, "out of memory");
	}
	json_object_set_new(o, "version", json_integer(b->version));
	json_object_set_new(o, "buckets", json_integer(b->buckets));
	json_object_set_new(o, "store_id", cli_jstr(b->store_id));
	for (int i = 0; i < b->nshards; i++)
		json_array_append_new(shards, bucket_shard_json(&b->shards[i]));
	json_object_set_new(o, "shards", shards);
	for (int k = 0; k < l->len; k++)
		if (l->items[k].state != BS_JOB_DONE && l->items[k].state != BS_JOB_CANCELLED)
			json_array_append_new(moves, move_json(&l->items[k]));
	json_object_set_new(o, "moves", moves);
	rc = cli_json_print(o);
	json_decref(o);
	return rc;
}

static int buckets_table(const bs_buckets_t *b, const bs_move_list_t *l)
{
	static const char *const head[] = {"SHARD", "BUCKETS", "SHARE", "ENTITIES", "DATA", "MOVES"};
	cli_table_t t = {.ncols = 6, .right = (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4)};
	int rc, inflight = 0;

	printf("bucket map version %" PRId64 ", %d buckets, store %s\n", b->version, b->buckets, b->store_id);
	if ((rc = cli_table_add(&t, head, NULL)) < 0)
		goto done;
	for (int i = 0; i < b->nshards; i++) {
		const bs_bucket_shard_t *s = &b->shards[i];
		char nb[16], share[16], ents[32] = "-", data[32] = "-", moves[48] = "-", note[64] = "";
		const char *cells[6];

		snprintf(nb, sizeof nb, "%d", s->buckets);
		snprintf(share, sizeof share, "%d", s->share);
		if (s->entities_est >= 0) {
			ents[0] = '~';
			fmt_count(ents + 1, sizeof ents - 1, s->entities_est);
		}
		if (s->reachable)
			fmt_bytes(data, sizeof data, s->data_bytes);
		if (s->moves_out || s->moves_in)
			snprintf(moves, sizeof moves, "%d out, %d in", s->moves_out, s->moves_in);
		snprintf(note, sizeof note, "%s%s%s", !s->reachable ? "unreachable " : "",
		         s->draining ? "draining " : "", !s->buckets && !s->draining ? "new: owns nothing yet" : "");
		cells[0] = s->name;
		cells[1] = nb;
		cells[2] = share;
		cells[3] = ents;
		cells[4] = data;
		cells[5] = moves;
		if ((rc = cli_table_add(&t, cells, note[0] ? note : NULL)) < 0)
			goto done;
	}
	cli_table_print(stdout, &t);
	for (int k = 0; k < l->len; k++)
		inflight += l->items[k].state != BS_JOB_DONE && l->items[k].state != BS_JOB_CANCELLED;
	if (inflight)
		printf("%d moves in flight (`bagstore reshard status`)\n", inflight);
done:
	cli_table_free(&t);
	return rc;
}

int cli_cmd_buckets(cli_ctx_t *ctx, int argc, char **argv)
{
	bool as_json = false;
	const cli_opt_t opts[] = {{"json", NULL, &as_json}, {NULL, NULL, NULL}};
	cli_args_t args = {0};
	bs_buckets_t b = {0};
	bs_move_list_t l = {0};
	int rc;

	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 0, 0)) != 0)
		goto done;
	if ((rc = cli_open(ctx)) < 0 || (rc = bs_buckets(&b, ctx->st)) < 0)
		goto done;
	if (bs_move_list(&l, ctx->st, NULL) < 0)
		bs_error_clear(); /* the map is shown anyway; its moves unknown */
	rc = as_json ? buckets_json(&b, &l) : buckets_table(&b, &l);
done:
	bs_buckets_free(&b);
	bs_move_list_free(&l);
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------ plan */

static json_t *plan_json(const bs_reshard_plan_t *p)
{
	json_t *o = json_object(), *moves = json_array();

	if (!o || !moves) {
		json_decref(o);
		json_decref(moves);
		return NULL;
	}
	json_object_set_new(o, "map_version", json_integer(p->map_version));
	json_object_set_new(o, "buckets", json_integer(p->buckets));
	json_object_set_new(o, "seconds_est", json_real(p->seconds_est));
	json_object_set_new(o, "rate", json_real(p->rate));
	json_object_set_new(o, "rate_measured", json_boolean(p->rate_measured));
	for (int k = 0; k < p->len; k++) {
		const bs_plan_move_t *m = &p->moves[k];
		json_t *j = json_object(), *bk = json_array();

		for (int x = 0; x < m->nbuckets; x++)
			json_array_append_new(bk, json_integer(m->buckets[x]));
		json_object_set_new(j, "source", cli_jstr(m->source));
		json_object_set_new(j, "target", cli_jstr(m->target));
		json_object_set_new(j, "nbuckets", json_integer(m->nbuckets));
		json_object_set_new(j, "buckets", bk);
		json_object_set_new(j, "entities_est", json_integer(m->entities_est));
		json_object_set_new(j, "index_rows_est", json_integer(m->index_rows_est));
		json_object_set_new(j, "seconds_est", json_real(m->seconds_est));
		json_array_append_new(moves, j);
	}
	json_object_set_new(o, "moves", moves);
	return o;
}

static int plan_text(const bs_reshard_plan_t *p)
{
	static const char *const head[] = {"SOURCE", "TARGET", "BUCKETS", "ENTITIES", "INDEX_ROWS", "TIME", "RANGES"};
	cli_table_t t = {.ncols = 7, .right = (1u << 2) | (1u << 3) | (1u << 4) | (1u << 5)};
	int64_t ents = 0, rows = 0;
	char a[32], b[32], c[32];
	int rc;

	if (!p->len) {
		printf("nothing to move: map version %" PRId64 " already spreads its %d buckets as the configuration asks\n",
		       p->map_version, p->buckets);
		return 0;
	}
	for (int k = 0; k < p->len; k++) {
		ents += p->moves[k].entities_est > 0 ? p->moves[k].entities_est : 0;
		rows += p->moves[k].index_rows_est;
	}
	fmt_secs(c, sizeof c, p->seconds_est);
	printf("plan from bucket map version %" PRId64 " (%d buckets): %d moves, ~%s entities, ~%s index rows, "
	       "~%s at %s%.0f rows/s%s\n", p->map_version, p->buckets, p->len, fmt_count(a, sizeof a, ents),
	       fmt_count(b, sizeof b, rows), c, p->rate_measured ? "" : "~", p->rate,
	       p->rate_measured ? " (the last move's rate)" : " (assumed: no move has run yet)");
	if ((rc = cli_table_add(&t, head, NULL)) < 0)
		goto done;
	for (int k = 0; k < p->len; k++) {
		const bs_plan_move_t *m = &p->moves[k];
		char nb[16], e[40] = "-", r[40], secs[32], rg[96];
		const char *cells[7];

		snprintf(nb, sizeof nb, "%d", m->nbuckets);
		if (m->entities_est >= 0) {
			e[0] = '~';
			fmt_count(e + 1, sizeof e - 1, m->entities_est);
		}
		r[0] = '~';
		fmt_count(r + 1, sizeof r - 1, m->index_rows_est);
		secs[0] = '~';
		fmt_secs(secs + 1, sizeof secs - 1, m->seconds_est);
		fmt_ranges(rg, sizeof rg, m->buckets, m->nbuckets);
		cells[0] = m->source;
		cells[1] = m->target;
		cells[2] = nb;
		cells[3] = e;
		cells[4] = r;
		cells[5] = secs;
		cells[6] = rg;
		if ((rc = cli_table_add(&t, cells, NULL)) < 0)
			goto done;
	}
	cli_table_print(stdout, &t);
done:
	cli_table_free(&t);
	return rc;
}

int cli_cmd_reshard_plan(cli_ctx_t *ctx, int argc, char **argv)
{
	bool as_json = false;
	const cli_opt_t opts[] = {{"json", NULL, &as_json}, {NULL, NULL, NULL}};
	cli_args_t args = {0};
	bs_reshard_plan_t p = {0};
	int rc;

	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 0, 0)) != 0)
		goto done;
	if ((rc = cli_open(ctx)) < 0 || (rc = bs_reshard_plan(&p, ctx->st)) < 0)
		goto done;
	if (as_json) {
		json_t *o = plan_json(&p);
		rc = o ? cli_json_print(o) : bs_error(BS_ENOMEM, "out of memory");
		json_decref(o);
	} else {
		rc = plan_text(&p);
	}
done:
	bs_reshard_plan_free(&p);
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------ start */

/* Ask on the terminal; false without one. */
static bool confirmed(const bs_reshard_plan_t *p)
{
	char line[64];

	if (!isatty(STDIN_FILENO))
		return false;
	fprintf(stderr, "record these %d moves as jobs for the cleaners? type yes: ", p->len);
	fflush(stderr);
	if (!fgets(line, sizeof line, stdin))
		return false;
	line[strcspn(line, "\r\n")] = '\0';
	return strcmp(line, "yes") == 0;
}

int cli_cmd_reshard_start(cli_ctx_t *ctx, int argc, char **argv)
{
	bool yes = false;
	const cli_opt_t opts[] = {{"yes", NULL, &yes}, {NULL, NULL, NULL}};
	cli_args_t args = {0};
	bs_reshard_plan_t p = {0};
	int rc;

	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 0, 0)) != 0)
		goto done;
	if ((rc = cli_open(ctx)) < 0 || (rc = bs_reshard_plan(&p, ctx->st)) < 0)
		goto done;
	if ((rc = plan_text(&p)) < 0 || !p.len)
		goto done;
	if (!yes && !confirmed(&p)) {
		rc = cli_usage_error(ctx, "not started: confirm on a terminal, or pass --yes");
		goto done;
	}
	if ((rc = bs_reshard_start(ctx->st, &p)) < 0)
		goto done;
	printf("recorded %d moves; a cleaner runs them (`bagstore cleaner --reshard`, or the daemon); "
	       "`bagstore reshard status` follows them\n", p.len);
done:
	bs_reshard_plan_free(&p);
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------ status */

int cli_cmd_reshard_status(cli_ctx_t *ctx, int argc, char **argv)
{
	bool as_json = false;
	const cli_opt_t opts[] = {{"json", NULL, &as_json}, {NULL, NULL, NULL}};
	cli_args_t args = {0};
	bs_move_list_t l = {0};
	int unreachable = 0, rc;

	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 0, 0)) != 0)
		goto done;
	if ((rc = cli_open(ctx)) < 0 || (rc = bs_move_list(&l, ctx->st, &unreachable)) < 0)
		goto done;
	bs_reshard_state_t state = bs_reshard_state(&l);
	if (as_json) {
		json_t *o = json_object(), *moves = json_array();

		json_object_set_new(o, "state", json_string(bs_reshard_state_name(state)));
		json_object_set_new(o, "plan_id", l.len ? json_integer(l.items[0].plan_id) : json_null());
		json_object_set_new(o, "map_version", l.len ? json_integer(l.items[0].map_version) : json_null());
		for (int k = 0; k < l.len; k++)
			json_array_append_new(moves, move_json(&l.items[k]));
		json_object_set_new(o, "moves", moves);
		rc = cli_json_print(o);
		json_decref(o);
	} else {
		printf("reshard: %s", bs_reshard_state_name(state));
		if (l.len)
			printf(" (plan %" PRId64 ", from bucket map version %" PRId64 ", %d moves)", l.items[0].plan_id,
			       l.items[0].map_version, l.len);
		printf("\n");
		if (l.len)
			rc = moves_table(&l);
	}
	if (rc >= 0 && unreachable)
		rc = bs_error(BS_EUNREACHABLE, "%d shards did not answer; their moves are not listed", unreachable);
done:
	bs_move_list_free(&l);
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------ pause, resume, cancel */

static int control(cli_ctx_t *ctx, int argc, char **argv, const char *action, const char *done_text)
{
	cli_args_t args = {0};
	int rc;

	if ((rc = cli_parse(&args, ctx, argc, argv, NULL, 0, 0)) != 0)
		goto out;
	if ((rc = cli_open(ctx)) < 0 || (rc = bs_reshard_control(ctx->st, action)) < 0)
		goto out;
	printf("reshard %s\n", done_text);
out:
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

int cli_cmd_reshard_pause(cli_ctx_t *ctx, int argc, char **argv)
{
	return control(ctx, argc, argv, "pause", "paused (its workers stop within one chunk)");
}

int cli_cmd_reshard_resume(cli_ctx_t *ctx, int argc, char **argv)
{
	return control(ctx, argc, argv, "resume", "resumed (queued for a cleaner)");
}

int cli_cmd_reshard_cancel(cli_ctx_t *ctx, int argc, char **argv)
{
	return control(ctx, argc, argv, "cancel",
	               "cancelled: the moves before their cut-over are undone by the next cleaner (their buckets stay "
	               "where they were); a move past its cut-over finishes");
}

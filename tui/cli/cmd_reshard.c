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

/* ------------------------------------------------------------ showing */

/* What buckets, reshard plan and reshard status read and show: each
 * fills its own part (all of it freed after). */
typedef struct {
	bs_buckets_t b;
	bs_reshard_plan_t p;
	bs_move_list_t l;
	int unreachable; /* shards that did not answer for l */
} shown_t;

/* One of those commands (and reshard start): its one flag (--json, or
 * --yes), read() fills a shown_t, print() shows it (as JSON when the flag
 * is --json and given) and does what else the command does. */
typedef struct {
	const char *flag;
	int (*read)(shown_t *w, bs_store_t *st);
	int (*print)(cli_ctx_t *ctx, const shown_t *w, bool flag);
} show_t;

static int show(cli_ctx_t *ctx, int argc, char **argv, const show_t *s)
{
	bool flag = false;
	const cli_opt_t opts[] = { { s->flag, NULL, &flag }, { NULL, NULL, NULL } };
	cli_args_t args = { 0 };
	shown_t w = { 0 };
	int rc;

	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 0, 0)) != 0)
		goto done;
	if ((rc = cli_open(ctx)) < 0 || (rc = s->read(&w, ctx->st)) < 0)
		goto done;
	rc = s->print(ctx, &w, flag);
done:
	bs_buckets_free(&w.b);
	bs_reshard_plan_free(&w.p);
	bs_move_list_free(&w.l);
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------ moves as JSON and text */

static json_t *move_json(const bs_move_t *m)
{
	json_t *o = json_object(), *ranges = json_array();

	if (!o || !ranges) {
		json_decref(o);
		json_decref(ranges);
		return NULL;
	}
	/* every bucket, as data: [[first, last], ...] */
	for (int k = 0; k < m->nranges; k++)
		json_array_append_new(ranges, json_pack("[ii]", m->ranges[k][0], m->ranges[k][1]));
	json_object_set_new(o, "id", json_integer(m->id));
	json_object_set_new(o, "source", cli_jstr(m->source));
	json_object_set_new(o, "target", cli_jstr(m->target));
	json_object_set_new(o, "nbuckets", json_integer(m->nbuckets));
	json_object_set_new(o, "buckets", ranges);
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

/* o (released here) with "moves": those of l (only those in flight when
 * in_flight), printed on stdout. */
static int moves_json_print(json_t *o, const bs_move_list_t *l, bool in_flight)
{
	json_t *moves = json_array();
	int rc;

	if (!o || !moves) {
		json_decref(o);
		json_decref(moves);
		return bs_error(BS_ENOMEM, "out of memory");
	}
	for (int k = 0; k < l->len; k++)
		if (!in_flight || (l->items[k].state != BS_JOB_DONE && l->items[k].state != BS_JOB_CANCELLED))
			json_array_append_new(moves, move_json(&l->items[k]));
	json_object_set_new(o, "moves", moves);
	rc = cli_json_print(o);
	json_decref(o);
	return rc;
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

/* A move of a plan being run: its row of `reshard status`. */
static void move_row(cli_row_t *r, const void *items, int k)
{
	const bs_move_t *m = (const bs_move_t *)items + k;

	/* its number in the plan (--json has the id) */
	snprintf(r->buf[0], sizeof r->buf[0], "%" PRId64, m->id - m->plan_id * 1000 + 1);
	snprintf(r->buf[3], sizeof r->buf[3], "%d", m->nbuckets);
	phase_progress(r->buf[6], sizeof r->buf[6], m);
	fmt_count(r->buf[7], sizeof r->buf[7], m->rows_copied);
	snprintf(r->buf[8], sizeof r->buf[8], "%.0f", m->rate);
	snprintf(r->buf[9], sizeof r->buf[9], "-");
	if (m->eta_s >= 0 && m->state != BS_JOB_DONE && m->state != BS_JOB_CANCELLED && m->state != BS_JOB_FAILED) {
		r->buf[9][0] = '~';
		fmt_secs(r->buf[9] + 1, sizeof r->buf[9] - 1, m->eta_s);
	}
	snprintf(r->buf[10], sizeof r->buf[10], "-");
	if (m->fence_ms > 0)
		snprintf(r->buf[10], sizeof r->buf[10], "%.0fms", m->fence_ms);
	snprintf(r->buf[11], sizeof r->buf[11], "-");
	if (m->worker_host[0])
		snprintf(r->buf[11], sizeof r->buf[11], "%s:%d", m->worker_host, m->worker_pid);
	for (int c = 0; c < 12; c++)
		r->cells[c] = r->buf[c];
	r->cells[1] = m->source;
	r->cells[2] = m->target;
	r->cells[4] = bs_job_state_name(m->state);
	r->cells[5] = bs_move_phase_name(m->phase);
	r->tail = m->reason;
}

static int moves_table(const bs_move_list_t *l)
{
	static const char *const head[] = { "MOVE",     "SOURCE", "TARGET", "BUCKETS", "STATE", "PHASE",
		                            "PROGRESS", "COPIED", "RATE/S", "ETA",     "FENCE", "WORKER" };

	return cli_table_rows(head, 12, (1u << 3) | (1u << 6) | (1u << 7) | (1u << 8) | (1u << 9) | (1u << 10), l->len,
	                      move_row, l->items);
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
	json_t *o = json_object(), *shards = json_array();

	if (!o || !shards) {
		json_decref(o);
		json_decref(shards);
		return bs_error(BS_ENOMEM, "out of memory");
	}
	json_object_set_new(o, "version", json_integer(b->version));
	json_object_set_new(o, "buckets", json_integer(b->buckets));
	json_object_set_new(o, "store_id", cli_jstr(b->store_id));
	for (int i = 0; i < b->nshards; i++)
		json_array_append_new(shards, bucket_shard_json(&b->shards[i]));
	json_object_set_new(o, "shards", shards);
	return moves_json_print(o, l, true);
}

/* A shard's part of the map: its row of `buckets`. */
static void bucket_shard_row(cli_row_t *r, const void *items, int k)
{
	const bs_bucket_shard_t *s = (const bs_bucket_shard_t *)items + k;

	snprintf(r->buf[1], sizeof r->buf[1], "%d", s->buckets);
	snprintf(r->buf[2], sizeof r->buf[2], "%d", s->share);
	snprintf(r->buf[3], sizeof r->buf[3], "-");
	if (s->entities_est >= 0) {
		r->buf[3][0] = '~';
		fmt_count(r->buf[3] + 1, sizeof r->buf[3] - 1, s->entities_est);
	}
	snprintf(r->buf[4], sizeof r->buf[4], "-");
	if (s->reachable)
		fmt_bytes(r->buf[4], sizeof r->buf[4], s->data_bytes);
	snprintf(r->buf[5], sizeof r->buf[5], "-");
	if (s->moves_out || s->moves_in)
		snprintf(r->buf[5], sizeof r->buf[5], "%d out, %d in", s->moves_out, s->moves_in);
	snprintf(r->tail_buf, sizeof r->tail_buf, "%s%s%s", !s->reachable ? "unreachable " : "",
	         s->draining ? "draining " : "", !s->buckets && !s->draining ? "new: owns nothing yet" : "");
	for (int c = 1; c < 6; c++)
		r->cells[c] = r->buf[c];
	r->cells[0] = s->name;
	r->tail = r->tail_buf;
}

static int buckets_table(const bs_buckets_t *b, const bs_move_list_t *l)
{
	static const char *const head[] = { "SHARD", "BUCKETS", "SHARE", "ENTITIES", "DATA", "MOVES" };
	int rc, inflight = 0;

	printf("bucket map version %" PRId64 ", %d buckets, store %s\n", b->version, b->buckets, b->store_id);
	rc = cli_table_rows(head, 6, (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4), b->nshards, bucket_shard_row,
	                    b->shards);
	if (rc < 0)
		return rc;
	for (int k = 0; k < l->len; k++)
		inflight += l->items[k].state != BS_JOB_DONE && l->items[k].state != BS_JOB_CANCELLED;
	if (inflight)
		printf("%d moves in flight (`bagstore reshard status`)\n", inflight);
	return rc;
}

/* The map, and the moves in flight. */
static int buckets_read(shown_t *w, bs_store_t *st)
{
	int rc = bs_buckets(&w->b, st);

	if (rc >= 0 && bs_move_list(&w->l, st, NULL) < 0)
		bs_error_clear(); /* the map is shown anyway; its moves unknown */
	return rc;
}

static int buckets_print(cli_ctx_t *ctx, const shown_t *w, bool as_json)
{
	char names[256] = "";
	size_t o = 0;
	int rc, down = 0;

	(void)ctx;
	if ((rc = as_json ? buckets_json(&w->b, &w->l) : buckets_table(&w->b, &w->l)) < 0)
		return rc;
	/* shown, then said: a shard that did not answer is exit 1, as for lag */
	for (int i = 0; i < w->b.nshards; i++) {
		if (w->b.shards[i].reachable)
			continue;
		down++;
		if (o < sizeof names)
			o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", o ? ", " : "", w->b.shards[i].name);
	}
	if (down)
		rc = bs_error(BS_EUNREACHABLE, "%d shard%s did not answer: %s (%s entities and data are not shown)",
		              down, down == 1 ? "" : "s", names, down == 1 ? "its" : "their");
	return rc;
}

int cli_cmd_buckets(cli_ctx_t *ctx, int argc, char **argv)
{
	static const show_t s = { "json", buckets_read, buckets_print };

	return show(ctx, argc, argv, &s);
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
	json_object_set_new(o, "basis", json_string(p->basis));
	for (int k = 0; k < p->len; k++) {
		const bs_plan_move_t *m = &p->moves[k];
		json_t *j = json_object(), *bk = json_array();

		for (int x = 0; x < m->nbuckets; x++)
			json_array_append_new(bk, json_integer(m->buckets[x]));
		json_object_set_new(j, "source", cli_jstr(m->source));
		json_object_set_new(j, "target", cli_jstr(m->target));
		json_object_set_new(j, "nbuckets", json_integer(m->nbuckets));
		json_object_set_new(j, "buckets", bk);
		json_object_set_new(j, "entities_est",
		                    m->entities_est >= 0 ? json_integer(m->entities_est) : json_null());
		json_object_set_new(j, "index_rows_est", json_integer(m->index_rows_est));
		json_object_set_new(j, "seconds_est", json_real(m->seconds_est));
		json_array_append_new(moves, j);
	}
	json_object_set_new(o, "moves", moves);
	return o;
}

/* A planned move: its row of `reshard plan` (estimates marked ~). */
static void plan_row(cli_row_t *r, const void *items, int k)
{
	const bs_plan_move_t *m = (const bs_plan_move_t *)items + k;

	snprintf(r->buf[2], sizeof r->buf[2], "%d", m->nbuckets);
	snprintf(r->buf[3], sizeof r->buf[3], "-");
	if (m->entities_est >= 0) {
		r->buf[3][0] = '~';
		fmt_count(r->buf[3] + 1, sizeof r->buf[3] - 1, m->entities_est);
	}
	r->buf[4][0] = '~';
	fmt_count(r->buf[4] + 1, sizeof r->buf[4] - 1, m->index_rows_est);
	r->buf[5][0] = '~';
	fmt_secs(r->buf[5] + 1, sizeof r->buf[5] - 1, m->seconds_est);
	fmt_ranges(r->buf[6], sizeof r->buf[6], m->buckets, m->nbuckets);
	for (int c = 2; c < 7; c++)
		r->cells[c] = r->buf[c];
	r->cells[0] = m->source;
	r->cells[1] = m->target;
}

static int plan_text(const bs_reshard_plan_t *p)
{
	static const char *const head[] = { "SOURCE", "TARGET", "BUCKETS", "ENTITIES", "INDEX_ROWS", "TIME", "RANGES" };
	int64_t ents = 0, rows = 0;
	char a[32], b[32], c[32];

	if (!p->len) {
		printf("nothing to move: map version %" PRId64
		       " already spreads its %d buckets as the configuration asks\n",
		       p->map_version, p->buckets);
		return 0;
	}
	bool some_unknown = false;
	for (int k = 0; k < p->len; k++) {
		ents += p->moves[k].entities_est > 0 ? p->moves[k].entities_est : 0;
		some_unknown |= p->moves[k].entities_est < 0;
		rows += p->moves[k].index_rows_est;
	}
	fmt_secs(c, sizeof c, p->seconds_est);
	/* a move whose shard did not say: the sum is a floor, not an estimate */
	printf("plan from bucket map version %" PRId64 " (%d buckets): %d moves, %s%s entities, ~%s index rows, "
	       "~%s, %s\n",
	       p->map_version, p->buckets, p->len, some_unknown ? ">=" : "~", fmt_count(a, sizeof a, ents),
	       fmt_count(b, sizeof b, rows), c, p->basis);
	return cli_table_rows(head, 7, (1u << 2) | (1u << 3) | (1u << 4) | (1u << 5), p->len, plan_row, p->moves);
}

static int plan_read(shown_t *w, bs_store_t *st)
{
	return bs_reshard_plan(&w->p, st);
}

static int plan_print(cli_ctx_t *ctx, const shown_t *w, bool as_json)
{
	json_t *o;
	int rc;

	(void)ctx;
	if (!as_json)
		return plan_text(&w->p);
	o = plan_json(&w->p);
	rc = o ? cli_json_print(o) : bs_error(BS_ENOMEM, "out of memory");
	json_decref(o);
	return rc;
}

int cli_cmd_reshard_plan(cli_ctx_t *ctx, int argc, char **argv)
{
	static const show_t s = { "json", plan_read, plan_print };

	return show(ctx, argc, argv, &s);
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

/* The plan shown, confirmed (--yes, or on the terminal) and recorded. */
static int start_print(cli_ctx_t *ctx, const shown_t *w, bool yes)
{
	int rc;

	if ((rc = plan_text(&w->p)) < 0 || !w->p.len)
		return rc;
	if (!yes && !confirmed(&w->p))
		return cli_usage_error(ctx, "not started: confirm on a terminal, or pass --yes");
	if ((rc = bs_reshard_start(ctx->st, &w->p)) < 0)
		return rc;
	printf("recorded %d moves; a cleaner runs them (`bagstore cleaner --reshard`, or the daemon); "
	       "`bagstore reshard status` follows them\n",
	       w->p.len);
	cli_queued_note(ctx, stdout, w->p.len, true);
	return rc;
}

int cli_cmd_reshard_start(cli_ctx_t *ctx, int argc, char **argv)
{
	static const show_t s = { "yes", plan_read, start_print };

	return show(ctx, argc, argv, &s);
}

/* ------------------------------------------------------------ status */

/* The moves of the last plan, from the shards that answered. */
static int status_read(shown_t *w, bs_store_t *st)
{
	return bs_move_list(&w->l, st, &w->unreachable);
}

static int status_json(const bs_move_list_t *l, bs_reshard_state_t state)
{
	json_t *o = json_object();

	if (o) {
		json_object_set_new(o, "state", json_string(bs_reshard_state_name(state)));
		json_object_set_new(o, "plan_id", l->len ? json_integer(l->items[0].plan_id) : json_null());
		json_object_set_new(o, "map_version", l->len ? json_integer(l->items[0].map_version) : json_null());
	}
	return moves_json_print(o, l, false);
}

static int status_print(cli_ctx_t *ctx, const shown_t *w, bool as_json)
{
	const bs_move_list_t *l = &w->l;
	bs_reshard_state_t state = bs_reshard_state(l);
	int rc = 0, queued = 0;

	for (int k = 0; k < l->len; k++)
		queued += l->items[k].state == BS_JOB_QUEUED;
	if (as_json) {
		rc = status_json(l, state);
	} else {
		printf("reshard: %s", bs_reshard_state_name(state));
		if (l->len)
			printf(" (plan %" PRId64 ", from bucket map version %" PRId64 ", %d moves)",
			       l->items[0].plan_id, l->items[0].map_version, l->len);
		printf("\n");
		if (l->len)
			rc = moves_table(l);
	}
	if (rc >= 0) /* queued with nothing to run them (beside JSON: on stderr) */
		cli_queued_note(ctx, as_json ? stderr : stdout, queued, true);
	if (rc >= 0 && w->unreachable)
		rc = cli_unreachable(w->unreachable, "their moves are not listed", l->unreachable_first);
	return rc;
}

int cli_cmd_reshard_status(cli_ctx_t *ctx, int argc, char **argv)
{
	static const show_t s = { "json", status_read, status_print };

	return show(ctx, argc, argv, &s);
}

/* ------------------------------------------------------------ pause, resume, cancel */

static int control(cli_ctx_t *ctx, int argc, char **argv, const char *action, const char *done_text)
{
	cli_args_t args = { 0 };
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
	               "cancelled: the moves before their cut-over are undone by the cleaner running them, or the next "
	               "one (`bagstore cleaner --reshard`); their buckets stay where they were; a move past its "
	               "cut-over finishes");
}

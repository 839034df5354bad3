/*
 * topology.c - the bucket map and resharding. Per shard a bar of the
 * buckets it owns (of the map's B), the share a plan would give it, its
 * entities (InnoDB's estimate, marked ~) and data size, with new and
 * draining shards marked; below, the latest plan's moves live: state,
 * phase, progress, rows copied, rate, ETA (~), the longest cut-over fence,
 * the worker, and why a move is throttled, waiting or failed.
 *
 * Between them, the map itself, read from the shards on every refresh: a
 * strip of the B buckets, each shard as many cells as it owns, and under
 * it a bar per move in flight marking the part of its source's cells that
 * it moves; any difference between the file and the map is marked (a
 * configured shard the map does not name, a member the file lacks).
 *
 * r previews the plan the configuration asks for (computed on every
 * refresh of this screen, so the preview never waits on a shard) and,
 * after `reshard` is typed, records it, unless the plan changed since the
 * preview. p, u and x pause, resume and cancel every move of the plan
 * (bs_reshard_control; the engine audits each). The moves themselves run
 * in cleaners: the daemon or `bagstore cleaner --reshard`.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views.h"

#define KEY_SNAP "topology"

static struct {
	bs_buckets_t map;
	int map_rc;
	char map_err[256];
	bs_move_list_t moves;
	int moves_rc, unreachable;
	char moves_err[256];
	bs_reshard_plan_t plan;
	int plan_rc;
	char plan_err[256];
	const bs_config_t *cfg; /* the configuration the plan was computed from */
	int runners;            /* live workers that run moves (cleaner, reshard); -1 unknown */
	int64_t taken_us;
} snap;

static table_t tbl;

static const col_t cols[] = {
	{ "MOVE", 4, true, 0 },    { "ROUTE", 12, false, 0 },    { "BUCKETS", 7, true, 2 }, { "STATE", 9, false, 0 },
	{ "PHASE", 16, false, 1 }, { "PROGRESS", 18, false, 1 }, { "COPIED", 9, true, 3 },  { "RATE/S", 7, true, 2 },
	{ "ETA", 7, true, 2 },     { "FENCE", 6, true, 3 },      { "WORKER", 0, false, 4 },
};
#define NCOLS ((int)(sizeof cols / sizeof cols[0]))

/* The plan shown by the last preview: what `reshard` typed starts. */
static struct {
	const bs_config_t *cfg;
	int64_t map_version;
	uint64_t hash;
	int len;
} preview;

/* ------------------------------------------------------------ the snapshot */

static void work(bs_store_t *st, void *arg)
{
	bs_buckets_t map = { 0 };
	bs_move_list_t moves = { 0 };
	bs_reshard_plan_t plan = { 0 };
	char map_err[256], moves_err[256], plan_err[256];
	int map_rc, moves_rc, plan_rc, unr = 0;

	(void)arg;
	/* each message taken before the next call replaces it */
	map_rc = bs_buckets(&map, st);
	snprintf(map_err, sizeof map_err, "%s", map_rc < 0 ? bs_last_error() : "");
	moves_rc = bs_move_list(&moves, st, &unr);
	snprintf(moves_err, sizeof moves_err, "%s", moves_rc < 0 ? bs_last_error() : "");
	plan_rc = bs_reshard_plan(&plan, st);
	snprintf(plan_err, sizeof plan_err, "%s", plan_rc < 0 ? bs_last_error() : "");
	/* moves queued and nothing to run them: the registry, as backfills ask it */
	int runners = -1;
	for (int k = 0; k < moves.len; k++)
		if (moves.items[k].state == BS_JOB_QUEUED) {
			bs_worker_list_t wl = { 0 };
			if (bs_workers_list(&wl, st, NULL) == 0)
				runners = bs_workers_alive(&wl, "cleaner") + bs_workers_alive(&wl, "reshard");
			bs_worker_list_free(&wl);
			bs_error_clear();
			break;
		}
	snap_lock();
	snap.runners = runners;
	bs_buckets_free(&snap.map);
	snap.map = map;
	snap.map_rc = map_rc;
	memcpy(snap.map_err, map_err, sizeof map_err);
	bs_move_list_free(&snap.moves);
	snap.moves = moves;
	snap.moves_rc = moves_rc;
	snap.unreachable = unr;
	memcpy(snap.moves_err, moves_err, sizeof moves_err);
	bs_reshard_plan_free(&snap.plan);
	snap.plan = plan;
	snap.plan_rc = plan_rc;
	memcpy(snap.plan_err, plan_err, sizeof plan_err);
	snap.cfg = bs_store_config(st);
	snap.taken_us = now_us();
	snap_unlock();
	worker_published();
}

static void tp_reload(void)
{
	worker_submit(LANE_STATUS, KEY_SNAP, true, work, NULL, NULL);
}

static void tp_open(void)
{
	static bool init;

	if (!init) {
		tbl_init(&tbl, cols, NCOLS);
		init = true;
	}
}

/* ------------------------------------------------------------ drawing */

static bool move_open(const bs_move_t *m)
{
	return m->state != BS_JOB_DONE && m->state != BS_JOB_CANCELLED && m->state != BS_JOB_FAILED;
}

static void add_move(const bs_move_t *m)
{
	char a[32], phase[64], fence[32] = "-", worker[128] = "-";
	double frac = m->phase == BS_MOVE_DONE ? 1 : m->progress > 1 ? 1 : m->progress;
	int r, attr;

	attr = m->state == BS_JOB_FAILED                                   ? C_BAD
	       : m->state == BS_JOB_THROTTLED || m->state == BS_JOB_PAUSED ? C_WARN
	       : m->state == BS_JOB_DONE || m->state == BS_JOB_CANCELLED   ? C_DIM
	                                                                   : C_NORMAL;
	r = tbl_add(&tbl, attr);
	/* its number in the plan, as `reshard status` shows it */
	tbl_set(&tbl, r, 0, (double)m->id, "%lld", (long long)(m->id - m->plan_id * 1000 + 1));
	tbl_set(&tbl, r, 1, NAN, "%s -> %s", m->source, m->target);
	tbl_set(&tbl, r, 2, m->nbuckets, "%d", m->nbuckets);
	tbl_set(&tbl, r, 3, m->state, "%s%s", bs_job_state_name(m->state), m->reason[0] ? "*" : "");
	if (m->phase == BS_MOVE_CATCHUP)
		snprintf(phase, sizeof phase, "catch-up %s log", fmt_count(a, sizeof a, m->log_rows));
	else
		snprintf(phase, sizeof phase, "%s", bs_move_phase_name(m->phase));
	tbl_set(&tbl, r, 4, m->phase, "%s", phase);
	/* the index rows' total is an estimate: so is the progress in that phase */
	progress_t p = { .frac = frac,
		         .width = 10,
		         .estimate = m->phase == BS_MOVE_INDEX,
		         .rate = m->rate,
		         .eta_s = move_open(m) ? m->eta_s : -1,
		         .eta_key = m->eta_s };
	tbl_set_progress(&tbl, r, 5, 7, &p);
	tbl_set(&tbl, r, 6, (double)m->rows_copied, "%s", fmt_count(a, sizeof a, m->rows_copied));
	if (m->fence_ms > 0)
		snprintf(fence, sizeof fence, "%.0fms", m->fence_ms);
	tbl_set(&tbl, r, 9, m->fence_ms, "%s", fence);
	if (m->worker_host[0])
		snprintf(worker, sizeof worker, "%s:%d", m->worker_host, m->worker_pid);
	tbl_set(&tbl, r, 10, NAN, "%s", worker);
}

static void build(void)
{
	tbl_clear(&tbl);
	for (int k = 0; k < snap.moves.len; k++)
		add_move(&snap.moves.items[k]);
	tbl_finish(&tbl, ui_filter());
}

/* The glyph of configured shard i on the map strip: 0-9, then a-z, A-Z. */
static char glyph(int i)
{
	static const char g[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

	return i < 0 ? '?' : i < (int)sizeof g - 1 ? g[i] : '*';
}

/* The strip's width at w columns (0: no room for it). */
static int strip_width(int w)
{
	int n = w - 30;

	return n < 8 ? 0 : n > 200 ? 200 : n;
}

/* The cells of shard i's part of the strip, [*lo, *hi): the shards in
 * configured order, each as many cells as its share of the buckets (the
 * members the file lacks last), rounded so that the parts add up to n. */
static void part_of(int *lo, int *hi, int i, int n)
{
	const bs_buckets_t *b = &snap.map;
	int64_t before = 0;

	for (int k = 0; k < i && k < b->nshards; k++)
		before += b->shards[k].buckets;
	*lo = (int)(before * n / b->buckets);
	*hi = (int)((before + (i < b->nshards ? b->shards[i].buckets : b->unlisted_buckets)) * n / b->buckets);
}

/* The map strip: per shard as many cells as its share of the buckets, in
 * its glyph (snap held). Returns the line after it. */
static int draw_map(int line, int w)
{
	const bs_buckets_t *b = &snap.map;
	char buf[256], legend[256];
	int n = strip_width(w), o = 0, lo, hi;

	if (!n || b->buckets <= 0)
		return line;
	memset(buf, '.', (size_t)n);
	buf[n] = 0;
	for (int i = 0; i <= b->nshards; i++) {
		part_of(&lo, &hi, i, n);
		for (int c = lo; c < hi; c++)
			buf[c] = glyph(i < b->nshards ? i : -1);
	}
	for (int i = 0; i < b->nshards && o < (int)sizeof legend - 20; i++)
		o += snprintf(legend + o, sizeof legend - (size_t)o, "%s%c=%s", i ? " " : "", glyph(i),
		              b->shards[i].name);
	if (b->unlisted_buckets && o < (int)sizeof legend - 4)
		snprintf(legend + o, sizeof legend - (size_t)o, " ?=not in the file");
	ui_printf(line++, 0, w, "%-8s [%s] %s", "map", buf, legend);
	return line;
}

/* A bar per move in flight, under the strip: the cells of its source's
 * part that it moves (each source's moves from the end of its part, as a
 * plan gives its highest-numbered buckets), its target named. */
static int draw_move_bars(int line, int end, int w)
{
	const bs_buckets_t *b = &snap.map;
	int n = strip_width(w), taken[64] = { 0 };

	if (!n || b->buckets <= 0)
		return line;
	for (int k = 0; k < snap.moves.len && line < end; k++) {
		const bs_move_t *m = &snap.moves.items[k];
		char buf[256], label[160];
		int lo, hi, cells, src = m->source_shard;

		if (m->state == BS_JOB_DONE || m->state == BS_JOB_CANCELLED || m->state == BS_JOB_FAILED)
			continue;
		memset(buf, ' ', (size_t)n);
		buf[n] = 0;
		if (src >= 0 && src < b->nshards && src < 64) {
			part_of(&lo, &hi, src, n);
			cells = (int)(((int64_t)m->nbuckets * n + b->buckets - 1) / b->buckets);
			for (int c = hi - taken[src] - 1; c >= lo && c >= hi - taken[src] - cells; c--)
				buf[c] = '#';
			taken[src] += cells;
		}
		snprintf(label, sizeof label, "%s>%s", m->source, m->target);
		ui_color(C_WARN, true);
		ui_printf(line++, 0, w, "%-8.8s [%s] %d bucket%s", label, buf, m->nbuckets,
		          m->nbuckets == 1 ? "" : "s");
		ui_color(C_WARN, false);
	}
	return line;
}

/* One line per member of the map: a bar of its buckets of B. */
static int draw_shards(int y, int h, int w)
{
	const bs_buckets_t *b = &snap.map;
	int line = y;

	for (int i = 0; i < b->nshards && line < y + h; i++) {
		const bs_bucket_shard_t *s = &b->shards[i];
		char pb[256], share[48] = "", ents[48] = "?", data[32] = "-", moves[48] = "", note[128] = "";
		int attr = !s->reachable ? C_BAD : s->draining ? C_WARN : C_NORMAL;

		/* 24 wide at 120 columns, narrower (10 at least) on narrower screens */
		int bw = w - 96 < 10 ? 10 : w - 96 > 32 ? 32 : w - 96;
		ui_bar(pb, sizeof pb, b->buckets > 0 ? (double)s->buckets / b->buckets : 0, bw);
		if (s->share != s->buckets)
			snprintf(share, sizeof share, "-> %d", s->share);
		if (s->entities_est >= 0) {
			ents[0] = '~';
			fmt_count(ents + 1, sizeof ents - 1, s->entities_est);
		}
		if (s->reachable)
			fmt_bytes(data, sizeof data, s->data_bytes);
		if (s->moves_out || s->moves_in)
			snprintf(moves, sizeof moves, "moves:%s%.0d%s%s%.0d%s", s->moves_out ? " " : "", s->moves_out,
			         s->moves_out ? " out" : "", s->moves_in ? " " : "", s->moves_in,
			         s->moves_in ? " in" : "");
		snprintf(note, sizeof note, "%s%s%s", !s->reachable ? "unreachable" : "",
		         s->draining ? (s->reachable ? "draining" : ", draining") : "",
		         !s->in_map                    ? "in the file, not in the map: run bagstore init"
		         : !s->buckets && !s->draining ? "new: owns nothing yet"
		                                       : "");
		if (!s->in_map)
			attr = C_BAD;
		ui_color(attr, true);
		if (w >= 110)
			ui_printf(line++, 0, w, "%-8s %s %5d/%-5d %-8s %10s entities %10s  %s%s%s", s->name, pb,
			          s->buckets, b->buckets, share, ents, data, note, note[0] && moves[0] ? "  " : "",
			          moves);
		else /* narrow: the note before the size, which gives way */
			ui_printf(line++, 0, w, "%-8s %s %5d/%-5d %-8s %8s ents  %s%s%s  %s", s->name, pb, s->buckets,
			          b->buckets, share, ents, note, note[0] && moves[0] ? "  " : "", moves, data);
		ui_color(attr, false);
	}
	if (b->unlisted[0] && line < y + h) { /* the map's members the file lacks */
		ui_color(C_BAD, true);
		ui_printf(line++, 0, w, "in the map, not in the file: %s (%d bucket%s)", b->unlisted,
		          b->unlisted_buckets, b->unlisted_buckets == 1 ? "" : "s");
		ui_color(C_BAD, false);
	}
	return line;
}

/* Two lines: "reshard: running (plan P from map version 2: 4 moves, 1
 * done)"; then, unless a plan is in flight, what the configuration asks. */
static void draw_state(int y, int w)
{
	const bs_move_list_t *l = &snap.moves;
	bs_reshard_state_t state = bs_reshard_state(l);
	int done = 0;
	char a[32], t[32];

	for (int k = 0; k < l->len; k++)
		done += l->items[k].state == BS_JOB_DONE;
	if (l->len)
		ui_printf(y, 0, w, "reshard: %s (plan %lld from map version %lld: %d moves, %d done)",
		          bs_reshard_state_name(state), (long long)l->items[0].plan_id,
		          (long long)l->items[0].map_version, l->len, done);
	else
		ui_put(y, 0, w, "reshard: idle");
	if (snap.runners == 0) { /* "running" with every move queued and nothing to run them */
		int queued = 0;
		for (int k = 0; k < l->len; k++)
			queued += l->items[k].state == BS_JOB_QUEUED;
		ui_color(C_WARN, true);
		ui_printf(y + 1, 0, w,
		          "%d move%s queued; no cleaner runs them: `bagstore cleaner` (or cleaner --reshard)", queued,
		          queued == 1 ? "" : "s");
		ui_color(C_WARN, false);
		return;
	}
	if (state == BS_RESHARD_RUNNING || state == BS_RESHARD_PAUSED || snap.plan_rc < 0)
		return;
	if (snap.cfg != worker_config()) {
		ui_put(y + 1, 0, w, "the configuration was read again: computing the plan it asks for ...");
		return;
	}
	if (snap.plan.len) {
		int64_t ents = 0;

		bool some_unknown = false;
		for (int k = 0; k < snap.plan.len; k++) {
			ents += snap.plan.moves[k].entities_est > 0 ? snap.plan.moves[k].entities_est : 0;
			some_unknown |= snap.plan.moves[k].entities_est < 0; /* the sum is a floor */
		}
		ui_printf(y + 1, 0, w, "the configuration asks for %d moves (%s%s entities, ~%s%s): r previews them",
		          snap.plan.len, some_unknown ? ">=" : "~", fmt_count(a, sizeof a, ents),
		          fmt_secs(t, sizeof t, snap.plan.seconds_est), snap.plan.rate_measured ? "" : ", no basis");
	} else {
		ui_put(y + 1, 0, w, "the buckets are spread as the configuration asks");
	}
}

/* Why (a state marked *): the selected move's reason, or the first one's
 * that has one, one not running first (a running move's says how it is
 * paced), so a throttled, waiting or failed move always says why. The
 * table's rows are the snapshot's moves in order (under snap_lock). */
static void draw_reason(int y, int w)
{
	int row = tbl_selected(&tbl);
	const bs_move_t *m;
	char age[32];

	if (row < 0 || row >= snap.moves.len || !snap.moves.items[row].reason[0]) {
		int found = -1;
		for (int pass = 0; pass < 2 && found < 0; pass++)
			for (int i = 0; i < snap.moves.len; i++)
				if (snap.moves.items[i].reason[0] &&
				    (pass || snap.moves.items[i].state != BS_JOB_RUNNING)) {
					found = i;
					break;
				}
		if (found >= 0)
			row = found;
	}
	if (row < 0 || row >= snap.moves.len)
		return;
	m = &snap.moves.items[row];
	/* the row's heartbeat is its last checkpoint; a quiet one's worker was
	 * looked up in the registry (reason says alive or gone) */
	ui_printf(y, 0, w, "move %s (%s -> %s): %s%s%s%s%s", tbl_cell(&tbl, row, 0), m->source, m->target,
	          bs_job_state_name(m->state), m->reason[0] ? ": " : "", m->reason,
	          m->worker_host[0] && move_open(m) && m->worker_beat_s < 0 ? "; last checkpoint " : "",
	          m->worker_host[0] && move_open(m) && m->worker_beat_s < 0 ? fmt_age(age, sizeof age, m->heartbeat_us)
	                                                                    : "");
}

static void draw_errors(int y, int h, int w)
{
	int line = y;

	ui_color(C_BAD, true);
	if (snap.map_rc < 0 && line < y + h)
		ui_printf(line++, 0, w, "bucket map: %s", snap.map_err);
	if (snap.moves_rc < 0 && line < y + h)
		ui_printf(line++, 0, w, "moves: %s", snap.moves_err);
	if (snap.plan_rc < 0 && line < y + h)
		ui_printf(line++, 0, w, "plan: %s", snap.plan_err);
	ui_color(C_BAD, false);
	if (snap.unreachable && line < y + h)
		ui_printf(line++, 0, w, "%d shard(s) unreachable: their moves are not listed%s%s%s", snap.unreachable,
		          *snap.moves.unreachable_first ? " (" : "", snap.moves.unreachable_first,
		          *snap.moves.unreachable_first ? ")" : "");
}

static void tp_draw(int y, int h, int w)
{
	char stale[128], t[64];
	int line, rows;

	snap_lock();
	build();
	ui_stale(KEY_SNAP, snap.taken_us, stale, sizeof stale);
	if (!snap.taken_us || snap.map_rc < 0)
		ui_printf(y, 0, w, "Topology: %s  %s",
		          snap.taken_us ? "the bucket map could not be read" : "reading the bucket map ...", stale);
	else
		ui_printf(y, 0, w, "Topology: bucket map version %lld, %d buckets, store %.12s  (as of %s)  %s",
		          (long long)snap.map.version, snap.map.buckets, snap.map.store_id,
		          fmt_time(t, sizeof t, snap.taken_us), stale);
	line = draw_shards(y + 1, h / 2, w);
	if (snap.taken_us && snap.map_rc < 0) {
		/* why, in full where the map would be: a file and a map that
		 * disagree (a shard init has not added, a member the file lacks)
		 * say which shard */
		int starts[8], lens[8], n = ui_wrap(snap.map_err, w, starts, lens, 8);

		ui_color(C_BAD, true);
		for (int i = 0; i < n && line < y + h / 2; i++) {
			char part[512];
			snprintf(part, sizeof part, "%.*s", lens[i], snap.map_err + starts[i]);
			ui_put(line++, 0, w, part);
		}
		ui_color(C_BAD, false);
	}
	if (snap.taken_us && snap.map_rc == 0) {
		line = draw_map(line, w);
		/* the bars leave the state, the table's header and a row at least */
		line = draw_move_bars(line, y + h - 10, w);
		draw_state(line + 1, w);
	}
	rows = y + h - 5 - (line + 3);
	if (rows > tbl.nshown + 2)
		rows = tbl.nshown + 2;
	if (snap.moves.len && rows > 1)
		tbl_draw(&tbl, line + 3, rows, w);
	draw_reason(y + h - 4, w);
	draw_errors(y + h - 3, 2, w);
	snap_unlock();
	ui_color(C_DIM, true);
	ui_put(y + h - 1, 0, w,
	       ui.read_only ? "? help" : "r preview/start the plan  p pause  u resume  x cancel (every move)  ? help");
	ui_color(C_DIM, false);
}

/* ------------------------------------------------------------ keys */

/* What identifies a plan: its moves, their shards and buckets (FNV-1a). */
static uint64_t plan_hash(const bs_reshard_plan_t *p)
{
	uint64_t h = 1469598103934665603ULL;

	for (int k = 0; k < p->len; k++) {
		const bs_plan_move_t *m = &p->moves[k];
		int v[3] = { m->source_shard, m->target_shard, m->nbuckets };

		for (int x = 0; x < 3 + m->nbuckets; x++) {
			h ^= (uint64_t)(uint32_t)(x < 3 ? v[x] : m->buckets[x - 3]);
			h *= 1099511628211ULL;
		}
	}
	return h;
}

typedef struct {
	char action[16];
	const bs_config_t *cfg;
	int64_t map_version;
	uint64_t hash;
} treq_t;

static void do_start(bs_store_t *st, treq_t *q)
{
	bs_reshard_plan_t p = { 0 };

	if (bs_store_config(st) != q->cfg) {
		/* the file changed since the preview: its plan is not this one's */
		worker_notify(true,
		              "reshard not started: the configuration changed since the preview (%s was read "
		              "again); r shows the plan it asks for now",
		              bs_store_config(st)->path);
		goto done;
	}
	if (bs_reshard_plan(&p, st) < 0) {
		worker_notify(true, "reshard not started: %s", bs_last_error());
		goto done;
	}
	if (p.map_version != q->map_version || plan_hash(&p) != q->hash) {
		worker_notify(true,
		              "reshard not started: the plan changed since the preview (bucket map version %lld); "
		              "r shows the new one",
		              (long long)p.map_version);
		goto done;
	}
	if (bs_reshard_start(st, &p) < 0) {
		worker_notify(true, "reshard not started: %s", bs_last_error());
		goto done;
	}
	worker_notify(false, "recorded %d moves; a cleaner runs them (the daemon, or bagstore cleaner --reshard)",
	              p.len);
done:
	bs_reshard_plan_free(&p);
}

static void do_action(bs_store_t *st, void *arg)
{
	treq_t *q = arg;

	if (strcmp(q->action, "start") == 0)
		do_start(st, q);
	else if (bs_reshard_control(st, q->action) < 0)
		worker_notify(true, "reshard %s failed: %s", q->action, bs_last_error());
	else
		worker_notify(false, "reshard %s: every move of the plan%s",
		              strcmp(q->action, "pause") == 0    ? "paused"
		              : strcmp(q->action, "resume") == 0 ? "resumed"
		                                                 : "cancelled",
		              strcmp(q->action, "cancel") == 0 ? " before its cut-over is undone" : "");
	work(st, NULL);
}

static void submit(const char *action)
{
	treq_t *q = calloc(1, sizeof *q);

	if (!q) {
		ui_err("out of memory");
		return;
	}
	snprintf(q->action, sizeof q->action, "%s", action);
	q->cfg = preview.cfg;
	q->map_version = preview.map_version;
	q->hash = preview.hash;
	worker_submit(LANE_ACTION, NULL, false, do_action, q, free);
}

static reaction_t start_typed(const char *text, void *ctx)
{
	(void)ctx;
	if (!text)
		return R_REDRAW;
	if (strcmp(text, "reshard") != 0) {
		ui_err("not started: the word typed was not reshard");
		return R_REDRAW;
	}
	submit("start");
	ui_msg("recording the plan's %d moves ...", preview.len);
	return R_REDRAW;
}

static reaction_t plan_confirm(void *ctx)
{
	char label[200];

	(void)ctx;
	snprintf(label, sizeof label,
	         "start resharding: %d moves from bucket map version %lld. Type reshard to confirm: ", preview.len,
	         (long long)preview.map_version);
	ui_prompt(label, "", start_typed, NULL);
	return R_POP;
}

/* The preview page: the plan as `bagstore reshard plan` shows it. */
static void plan_page(FILE *f, const bs_reshard_plan_t *p, bool in_flight)
{
	int64_t ents = 0, rows = 0;
	char a[32], b[32], c[32], rg[96];

	bool some_unknown = false;
	for (int k = 0; k < p->len; k++) {
		ents += p->moves[k].entities_est > 0 ? p->moves[k].entities_est : 0;
		some_unknown |= p->moves[k].entities_est < 0; /* the sum is a floor */
		rows += p->moves[k].index_rows_est;
	}
	fprintf(f,
	        "plan from bucket map version %lld (%d buckets): %d moves, %s%s entities, ~%s index rows\n"
	        "~%s, %s\n\n",
	        (long long)p->map_version, p->buckets, p->len, some_unknown ? ">=" : "~", fmt_count(a, sizeof a, ents),
	        fmt_count(b, sizeof b, rows), fmt_secs(c, sizeof c, p->seconds_est), p->basis);
	fprintf(f, "%-10s %-10s %8s %14s %14s %9s  %s\n", "SOURCE", "TARGET", "BUCKETS", "ENTITIES", "INDEX ROWS",
	        "TIME", "RANGES");
	for (int k = 0; k < p->len; k++) {
		const bs_plan_move_t *m = &p->moves[k];
		char e[40] = "-", r[40], s[40];

		if (m->entities_est >= 0)
			snprintf(e, sizeof e, "~%s", fmt_count(a, sizeof a, m->entities_est));
		snprintf(r, sizeof r, "~%s", fmt_count(b, sizeof b, m->index_rows_est));
		snprintf(s, sizeof s, "~%s", fmt_secs(c, sizeof c, m->seconds_est));
		fprintf(f, "%-10s %-10s %8d %14s %14s %9s  %s\n", m->source, m->target, m->nbuckets, e, r, s,
		        fmt_ranges(rg, sizeof rg, m->buckets, m->nbuckets));
	}
	fprintf(f, "\nEach move copies its buckets' entities and index rows while writes go on, replays the changes\n"
	           "made meanwhile, then cuts over under a short fence. The cleaners run the moves.\n");
	if (in_flight)
		fprintf(f, "\nAn earlier plan still has moves in flight: starting is refused until they end.\n");
}

static reaction_t preview_plan(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	bool in_flight = false;

	snap_lock();
	if (snap.plan_rc < 0 || !snap.taken_us) {
		ui_err("no plan yet%s%s", snap.plan_rc < 0 ? ": " : " (the first read is under way)",
		       snap.plan_rc < 0 ? snap.plan_err : "");
		snap_unlock();
		return R_REDRAW;
	}
	if (snap.cfg != worker_config()) {
		/* computed before the configuration was read again */
		ui_err("the configuration changed: the plan is being computed again; r in a moment shows it");
		snap_unlock();
		return R_RELOAD;
	}
	if (!snap.plan.len) {
		ui_msg("nothing to move: bucket map version %lld already spreads its %d buckets as the configuration "
		       "asks",
		       (long long)snap.plan.map_version, snap.plan.buckets);
		snap_unlock();
		return R_REDRAW;
	}
	for (int k = 0; k < snap.moves.len; k++)
		in_flight |= move_open(&snap.moves.items[k]);
	preview.cfg = snap.cfg;
	preview.map_version = snap.plan.map_version;
	preview.hash = plan_hash(&snap.plan);
	preview.len = snap.plan.len;
	if ((f = open_memstream(&text, &len))) {
		plan_page(f, &snap.plan, in_flight);
		fclose(f);
	}
	snap_unlock();
	if (!text) {
		ui_err("out of memory");
		return R_REDRAW;
	}
	text_open("reshard: the plan", text, plan_confirm, NULL, "start these moves (then type reshard)");
	free(text);
	return R_REDRAW;
}

static reaction_t cancel_typed(const char *text, void *ctx)
{
	(void)ctx;
	if (!text)
		return R_REDRAW;
	if (strcmp(text, "cancel") != 0) {
		ui_err("not cancelled: the word typed was not cancel");
		return R_REDRAW;
	}
	submit("cancel");
	ui_msg("cancelling the plan's moves ...");
	return R_REDRAW;
}

static reaction_t ask_cancel(void)
{
	int before = 0, past = 0;
	char label[300];

	snap_lock();
	for (int k = 0; k < snap.moves.len; k++) {
		const bs_move_t *m = &snap.moves.items[k];

		if (!move_open(m))
			continue;
		if (m->phase == BS_MOVE_CUTOVER || m->phase == BS_MOVE_CLEANUP)
			past++;
		else
			before++;
	}
	snap_unlock();
	if (!before && !past) {
		ui_err("no move in flight to cancel");
		return R_REDRAW;
	}
	snprintf(label, sizeof label,
	         "cancel resharding: %d move%s before cut-over undone (buckets stay), %d past it "
	         "finish%s. Type cancel to confirm: ",
	         before, before == 1 ? "" : "s", past, past == 1 ? "es" : "");
	ui_prompt(label, "", cancel_typed, NULL);
	return R_REDRAW;
}

static reaction_t tp_key(action_t a, int key)
{
	reaction_t r = tbl_key(&tbl, a, key);

	if (r != R_UNHANDLED)
		return r;
	switch (a) {
	case ACT_RESHARD_PLAN: return preview_plan();
	case ACT_MOVE_PAUSE:
		submit("pause");
		ui_msg("pausing every move ...");
		return R_REDRAW;
	case ACT_MOVE_RESUME:
		submit("resume");
		ui_msg("resuming every move ...");
		return R_REDRAW;
	case ACT_MOVE_CANCEL: return ask_cancel();
	default: return R_UNHANDLED;
	}
}

const struct view_ops view_topology = {
	.name = "topology",
	.scope = 'O',
	.open = tp_open,
	.reload = tp_reload,
	.draw = tp_draw,
	.key = tp_key,
};

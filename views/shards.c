/*
 * shards.c - the first screen: every shard's state, address, version,
 * round trip, entity count (InnoDB's estimate, marked ~, or exact after
 * `#`), data size, Threads_running, replica lag and fingerprint, with a
 * totals row over the rows shown; an unreachable shard, or a replica whose
 * lag is unknown, shows the message why. Below, the load at a glance as
 * innotop's first screen: per shard statements/s and rows written/s (the
 * server's counters between two refreshes), connections and InnoDB's
 * history list length, each with a sparkline of the last refreshes. Then
 * each shard's TLS (protocol, cipher, what was verified, its replicas'); a
 * shard in plain text while another is encrypted is marked.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views.h"

#define KEY_SNAP "shards"
#define KEY_COUNT "shards.count"
#define LOAD_HISTORY 40

static struct {
	bs_shard_status_t *st; /* published snapshot (snap_lock) */
	int n;
	const bs_config_t *cfg; /* the lane's when it read them: shard i is its shards[i] */
	int64_t taken_us;
	unsigned seq; /* bumped by every snapshot */
	int rc;
	char err[256];
	/* the exact count (`#`) */
	int64_t *exact; /* per shard (of exact_cfg), -1 unknown */
	const bs_config_t *exact_cfg;
	int64_t exact_at_us;
	bool counting;
	int count_rc;
	char count_err[256];
} snap;

static atomic_int count_stop;

static table_t tbl;

static const col_t cols[] = {
	{ "SHARD", 6, false, 0 },       { "ADDRESS", 20, false, 1 }, { "STATE", 11, false, 0 },
	{ "VERSION", 16, false, 3 },    { "RTT", 7, true, 2 },       { "ENTITIES", 12, true, 0 },
	{ "SIZE", 10, true, 2 },        { "THREADS", 7, true, 1 },   { "REPL LAG", 8, true, 1 },
	{ "FINGERPRINT", 0, false, 2 },
};
#define NCOLS ((int)(sizeof cols / sizeof cols[0]))

/* The load, derived from consecutive snapshots by the status lane as it
 * publishes them (snap_lock); the UI draws it. */
typedef struct {
	int64_t questions, rows, at_us, uptime; /* the last counters seen */
	double qps[LOAD_HISTORY], wps[LOAD_HISTORY], conn[LOAD_HISTORY], hist[LOAD_HISTORY];
	int nh; /* samples kept (the newest last) */
} load_t;
static load_t *load;
static const bs_config_t *load_cfg; /* whose shards load[] follows */
static unsigned load_seq;
/* The screen came back (sh_open): the next snapshot is a new baseline, not
 * the end of an interval that spans the time it was away (whose statements
 * would be the other screens' own). snap_lock. */
static bool load_restart;

static void push(double *v, int nh, double x)
{
	if (nh == LOAD_HISTORY)
		memmove(v, v + 1, sizeof *v * (LOAD_HISTORY - 1));
	v[nh < LOAD_HISTORY ? nh : LOAD_HISTORY - 1] = x;
}

/* A new snapshot: each shard's rates since the one before (snap_lock held),
 * if that one is one refresh away: a longer interval (the screen was not
 * refreshed: another was shown, or the refresh paused) is a gap, and this
 * snapshot the new baseline. refresh_s: the interval asked for. */
static void load_update(double refresh_s)
{
	int i;

	if (load_seq == snap.seq || !snap.st)
		return;
	load_seq = snap.seq;
	if (load && load_cfg != snap.cfg) { /* the configuration followed changed: its shards start over */
		free(load);
		load = NULL;
	}
	if (!load && !(load = calloc((size_t)snap.n, sizeof *load)))
		return;
	load_cfg = snap.cfg;
	if (load_restart) {
		for (i = 0; i < snap.n; i++)
			load[i].at_us = 0; /* a gap, then rates over one refresh each */
		load_restart = false;
	}
	for (i = 0; i < snap.n; i++) {
		const bs_shard_status_t *s = &snap.st[i];
		load_t *l = &load[i];
		double dt = (double)(s->load_at_us - l->at_us) / 1e6, q = -1, w = -1;
		bool fresh = s->state != BS_SHARD_DOWN && s->load_at_us > 0;

		if (fresh && l->at_us > 0 && dt > 0 && dt <= 2 * refresh_s + 5 && s->uptime_s >= l->uptime &&
		    s->questions >= l->questions && s->rows_written >= l->rows) {
			q = s->questions >= 0 ? (double)(s->questions - l->questions) / dt : -1;
			w = s->rows_written >= 0 ? (double)(s->rows_written - l->rows) / dt : -1;
		}
		/* a shard down, or restarted: a gap, and the counting starts over */
		push(l->qps, l->nh, q);
		push(l->wps, l->nh, w);
		push(l->conn, l->nh, fresh ? (double)s->connections : -1);
		push(l->hist, l->nh, fresh ? (double)s->history_length : -1);
		if (l->nh < LOAD_HISTORY)
			l->nh++;
		l->at_us = fresh ? s->load_at_us : 0;
		l->questions = s->questions;
		l->rows = s->rows_written;
		l->uptime = s->uptime_s;
	}
}

static void work(bs_store_t *st, void *arg)
{
	int n = bs_store_nshards(st), rc;
	bs_shard_status_t *s = calloc((size_t)n, sizeof *s);
	double refresh_s = arg ? *(double *)arg : 1;

	if (!s)
		return;
	rc = bs_shard_status(s, st);
	snap_lock();
	free(snap.st);
	snap.st = s;
	snap.n = n;
	snap.cfg = bs_store_config(st);
	if (snap.exact && snap.exact_cfg != snap.cfg) { /* counted over other shards */
		free(snap.exact);
		snap.exact = NULL;
	}
	snap.rc = rc;
	snprintf(snap.err, sizeof snap.err, "%s", rc < 0 ? bs_last_error() : "");
	snap.taken_us = now_us();
	snap.seq++;
	load_update(refresh_s); /* every snapshot, drawn or not */
	snap_unlock();
	worker_published();
}

/* `#`: every shard's entities counted by key on the scan lane. */
static void count_work(bs_store_t *st, void *arg)
{
	int n = bs_store_nshards(st), rc;
	int64_t *c = calloc((size_t)n, sizeof *c);

	(void)arg;
	if (!c)
		return;
	rc = bs_count_exact(c, st, NULL, &count_stop);
	snap_lock();
	snap.counting = false;
	snap.count_rc = rc;
	snprintf(snap.count_err, sizeof snap.count_err, "%s", rc < 0 ? bs_last_error() : "");
	if (rc == 0 || !atomic_load(&count_stop)) {
		free(snap.exact);
		snap.exact = c;
		snap.exact_cfg = bs_store_config(st);
		snap.exact_at_us = now_us();
		c = NULL;
	}
	snap_unlock();
	free(c);
	if (rc < 0)
		worker_notify(true, "count: %s", bs_last_error());
	else
		worker_notify(false, "entities counted exactly");
}

static void sh_reload(void)
{
	double *refresh_s = malloc(sizeof *refresh_s);

	if (refresh_s)
		*refresh_s = ui.refresh_s;
	worker_submit(LANE_STATUS, KEY_SNAP, true, work, refresh_s, free);
}

static void sh_open(void)
{
	static bool init;

	if (!init) {
		tbl_init(&tbl, cols, NCOLS);
		init = true;
	}
	snap_lock();
	load_restart = true;
	snap_unlock();
}

/* "1,234/s ▁▂▃" : the last value and the sparkline of the last `w`. */
static void load_cell(char *buf, size_t n, const double *v, int nh, int width, const char *unit)
{
	char num[32], spark[512];
	double last = nh ? v[nh - 1] : -1;
	int from = nh > width ? nh - width : 0;

	if (last < 0)
		snprintf(num, sizeof num, "-");
	else if (last >= 100 || !*unit)
		fmt_count(num, sizeof num, (int64_t)(last + 0.5));
	else
		snprintf(num, sizeof num, "%.1f", last);
	ui_sparkline(spark, sizeof spark, v + from, nh - from, 0);
	snprintf(buf, n, "%9s%s %s", num, unit, spark);
}

static void add_shard_row(const bs_shard_status_t *s, int i)
{
	bool down = s->state == BS_SHARD_DOWN;
	int r = tbl_add(&tbl, down ? C_BAD
	                      : s->state == BS_SHARD_SLOW || s->tls_plaintext_mixed || s->tls_plaintext_preferred
	                              ? C_WARN
	                              : C_NORMAL),
	    c;
	char a[64], b[64];

	tbl_set(&tbl, r, 0, NAN, "%s", s->name);
	tbl_set(&tbl, r, 1, NAN, "%s", s->address);
	tbl_set(&tbl, r, 2, NAN, "%s", bs_shard_state_name(s->state));
	tbl_set(&tbl, r, 3, NAN, "%s", down ? "-" : s->version);
	if (snap.exact && snap.exact_cfg == snap.cfg && snap.exact[i] >= 0)
		tbl_set(&tbl, r, 5, (double)snap.exact[i], "%s", fmt_count(a, sizeof a, snap.exact[i]));
	else if (!down && s->entities_est >= 0)
		tbl_set(&tbl, r, 5, (double)s->entities_est, "~%s", fmt_count(a, sizeof a, s->entities_est));
	else
		tbl_set(&tbl, r, 5, -1, "-");
	if (down) {
		for (c = 4; c < 9; c++)
			if (c != 5)
				tbl_set(&tbl, r, c, -1, "-");
	} else {
		tbl_set(&tbl, r, 4, s->rtt_ms, "%.1fms", s->rtt_ms);
		tbl_set(&tbl, r, 6, (double)s->data_bytes, "%s", fmt_bytes(b, sizeof b, s->data_bytes));
		tbl_set(&tbl, r, 7, (double)s->threads_running, "%lld", (long long)s->threads_running);
		if (s->replica_lag == -2)
			tbl_set(&tbl, r, 8, -2, "unknown");
		else if (s->replica_lag < 0)
			tbl_set(&tbl, r, 8, -1, "-");
		else
			tbl_set(&tbl, r, 8, s->replica_lag, "%.1fs", s->replica_lag);
	}
	tbl_set(&tbl, r, 9, s->fingerprint_ok, "%s",
	        /* the command line's words (bagstore shards) */
	        down                     ? "-"
	        : s->fingerprint_ok == 1 ? "ok"
	        : s->fingerprint_ok == 0 ? "MISMATCH"
	                                 : "uninitialised");
}

/* The totals row: over the rows the filter shows, marked ~ while any
 * count added is an estimate, and ">=N?" (a part) while a shard shown did
 * not answer. */
static void add_totals(void)
{
	int i, up = 0, shown = 0;
	int64_t ents = 0, bytes = 0, threads = 0;
	bool est = false, unknown = false;
	char a[64], b[64];

	for (i = 0; i < snap.n; i++) {
		const bs_shard_status_t *s = &snap.st[i];
		if (!tbl_matches(&tbl, i, ui_filter()))
			continue;
		shown++;
		if (snap.exact && snap.exact_cfg == snap.cfg && snap.exact[i] >= 0) {
			ents += snap.exact[i];
		} else if (s->state != BS_SHARD_DOWN && s->entities_est >= 0) {
			ents += s->entities_est;
			est = true;
		} else {
			unknown = true;
		}
		if (s->state == BS_SHARD_DOWN)
			continue;
		up++;
		bytes += s->data_bytes;
		threads += s->threads_running;
	}
	int r = tbl_add(&tbl, C_HEADER);
	tbl_set(&tbl, r, 0, NAN, "TOTAL");
	if (shown == snap.n)
		tbl_set(&tbl, r, 1, NAN, "%d shards", snap.n);
	else
		tbl_set(&tbl, r, 1, NAN, "%d of %d shards", shown, snap.n);
	tbl_set(&tbl, r, 2, NAN, "%d/%d up", up, shown);
	tbl_set(&tbl, r, 5, NAN, "%s%s%s",
	        unknown ? ">="
	        : est   ? "~"
	                : "",
	        fmt_count(a, sizeof a, ents), unknown ? "?" : "");
	/* a shard that did not answer adds nothing it has: the sums are of
	 * the others, at least that much, marked as the entities are */
	tbl_set(&tbl, r, 6, NAN, "%s%s%s", up < shown ? ">=" : "", fmt_bytes(b, sizeof b, bytes),
	        up < shown ? "?" : "");
	tbl_set(&tbl, r, 7, NAN, "%s%lld%s", up < shown ? ">=" : "", (long long)threads, up < shown ? "?" : "");
	tbl_pin_last(&tbl);
}

static void build(void)
{
	int i;

	tbl_clear(&tbl);
	for (i = 0; i < snap.n; i++)
		add_shard_row(&snap.st[i], i);
	if (snap.n > 0)
		add_totals();
	tbl_finish(&tbl, ui_filter());
}

/* The load panel: one line per shard the table shows, in its order,
 * scrolled with its selection. */
static int draw_load(int y, int h, int w)
{
	int i, k, first = 0, line = y, rows = h - 1, nshown = tbl.nshown - tbl.npinned, cw, spark;
	char q[600], wr[600], c[600], hl[600];

	if (h < 2 || !load)
		return y;
	cw = (w - 8) / 4 - 1;
	spark = cw - 12 > 4 ? cw - 12 : 4;
	ui_color(C_HEADER, true);
	ui_printf(line++, 0, w, " %-6s %-*s %-*s %-*s %s", "LOAD", cw, "STATEMENTS/S", cw, "ROWS WRITTEN/S", cw,
	          "CONNECTIONS", "HISTORY LIST");
	ui_color(C_HEADER, false);
	if (tbl.sel >= rows && tbl.sel < nshown)
		first = tbl.sel - rows + 1;
	for (k = first; k < nshown && line < y + h; k++) {
		i = tbl.order[k];
		if (i >= snap.n)
			continue;
		load_cell(q, sizeof q, load[i].qps, load[i].nh, spark, "/s");
		load_cell(wr, sizeof wr, load[i].wps, load[i].nh, spark, "/s");
		load_cell(c, sizeof c, load[i].conn, load[i].nh, spark, "");
		load_cell(hl, sizeof hl, load[i].hist, load[i].nh, spark, "");
		ui_printf(line++, 0, w, " %-6.6s %-*s %-*s %-*s %s", snap.st[i].name, cw, q, cw, wr, cw, c, hl);
	}
	return line;
}

/* ------------------------------------------------------------ TLS (issue 14) */

/* One shard's TLS, in words: "TLSv1.3 verified  TLS_AES_256_GCM_SHA384
 * (mode verify_identity)", its replicas' after it. */
static void tls_line(char *buf, size_t n, const bs_shard_status_t *s)
{
	char t[48], r[48] = "";
	int len;

	fmt_tls(t, sizeof t, &s->tls, s->tls_plaintext_mixed || s->tls_plaintext_preferred);
	len = snprintf(buf, n, "%-20s %s  (mode %s)", t, s->tls.cipher[0] ? s->tls.cipher : "-",
	               bs_tls_mode_name(s->tls_mode));
	if (s->nreplica_tls > 0 && len > 0 && (size_t)len < n)
		snprintf(buf + len, n - (size_t)len, "  replicas: %s", fmt_tls(r, sizeof r, &s->replica_tls, false));
	if (s->tls_plaintext_preferred && len > 0 && (size_t)len < n)
		snprintf(buf + strlen(buf), n - strlen(buf), "  the server offers no TLS");
	else if (s->tls_plaintext_mixed && len > 0 && (size_t)len < n)
		snprintf(buf + strlen(buf), n - strlen(buf), "  not encrypted, while other shards are");
}

/* The TLS section from `line` to end: a count, then a line per shard that
 * is up (as many as fit). Returns the next free line. */
static int draw_tls(int line, int end, int w)
{
	int i, up = 0, enc = 0, shown = 0;
	char buf[256];

	for (i = 0; i < snap.n; i++)
		if (snap.st[i].state != BS_SHARD_DOWN) {
			up++;
			enc += snap.st[i].tls.level > BS_TLS_NONE;
		}
	if (line >= end || up == 0)
		return line;
	ui_printf(line++, 0, w, "TLS: %d of %d shards up encrypted", enc, up);
	for (i = 0; i < snap.n && line < end; i++) {
		const bs_shard_status_t *s = &snap.st[i];
		if (s->state == BS_SHARD_DOWN)
			continue;
		if (shown + 1 < up && line == end - 1) {
			ui_printf(line++, 0, w, "  ... %d more (bagstore shards)", up - shown);
			break;
		}
		tls_line(buf, sizeof buf, s);
		bool plain = s->tls_plaintext_mixed || s->tls_plaintext_preferred;
		if (plain)
			ui_color(C_WARN, true);
		ui_printf(line++, 0, w, "  %-6s %s", s->name, buf);
		if (plain)
			ui_color(C_WARN, false);
		shown++;
	}
	return line;
}

static int draw_errors(int line, int end, int w)
{
	int i;

	if (snap.rc < 0 && line < end)
		ui_printf(line++, 0, w, "error: %s", snap.err);
	if (snap.count_rc < 0 && line < end)
		ui_printf(line++, 0, w, "exact count: %s", snap.count_err);
	for (i = 0; i < snap.n && line < end; i++) {
		const bs_shard_status_t *s = &snap.st[i];
		if (!s->error[0] || (s->state == BS_SHARD_UP && s->replica_lag != -2 && s->fingerprint_ok != 0))
			continue;
		ui_color(C_BAD, true);
		if (s->state == BS_SHARD_UP && s->replica_lag == -2)
			ui_printf(line++, 0, w, "%s replica lag unknown: %s", s->name, s->error);
		else
			ui_printf(line++, 0, w, "%s %s: %s", s->name, bs_shard_state_name(s->state), s->error);
		ui_color(C_BAD, false);
	}
	return line;
}

static void sh_draw(int y, int h, int w)
{
	char stale[128], t[64], age[32], how[160];
	int rows, line, nerr = 0, i;

	snap_lock();
	build();
	ui_stale(KEY_SNAP, snap.taken_us, stale, sizeof stale);
	if (snap.counting)
		snprintf(how, sizeof how, "ENTITIES: counting exactly (# cancels)");
	else if (snap.exact && snap.exact_cfg == snap.cfg)
		snprintf(how, sizeof how, "ENTITIES: exact, counted %s", fmt_age(age, sizeof age, snap.exact_at_us));
	else
		snprintf(how, sizeof how, "ENTITIES: ~ InnoDB's estimate (# counts exactly)");
	ui_printf(y, 0, w, "Shards  (as of %s; %s)  %s", snap.taken_us ? fmt_time(t, sizeof t, snap.taken_us) : "-",
	          how, stale);
	for (i = 0; i < snap.n; i++)
		nerr += snap.st[i].error[0] != 0;
	nerr += (snap.rc < 0) + (snap.count_rc < 0);
	/* the table, then the load panel, then the errors: room for each */
	rows = tbl.nshown + 1;
	if (rows > (h - 2 - nerr) / 2)
		rows = (h - 2 - nerr) / 2 > 2 ? (h - 2 - nerr) / 2 : 2;
	tbl_draw(&tbl, y + 1, rows, w);
	line = draw_load(y + 2 + rows,
	                 h - rows - 2 - (nerr ? nerr + 1 : 0) > 1 ? h - rows - 2 - (nerr ? nerr + 1 : 0) : 0, w);
	line = draw_errors(line + (line > y + 2 + rows), y + h, w);
	if (line + 1 < y + h)
		draw_tls(line + 1, y + h, w);
	snap_unlock();
}

static reaction_t count_key(void)
{
	bool counting;

	snap_lock();
	counting = snap.counting;
	if (!counting) {
		snap.counting = true;
		snap.count_rc = 0;
	}
	snap_unlock();
	if (counting) {
		atomic_store(&count_stop, 1);
		ui_msg("cancelling the count");
		return R_REDRAW;
	}
	atomic_store(&count_stop, 0);
	worker_submit(LANE_SCAN, KEY_COUNT, true, count_work, NULL, NULL);
	ui_msg("counting every shard's entities exactly (# again cancels)");
	return R_REDRAW;
}

static reaction_t sh_key(action_t a, int key)
{
	reaction_t r = tbl_key(&tbl, a, key);

	if (r != R_UNHANDLED)
		return r;
	if (a == ACT_EXACT_COUNT)
		return count_key();
	if (a == ACT_OPEN) {
		int row = tbl_selected(&tbl);
		/* a shard's row, not the totals (the table's rows, not the
		 * snapshot, which a lane may be replacing) */
		if (row >= 0 && row < tbl.nrows - tbl.npinned) {
			char crumb[96];
			snprintf(crumb, sizeof crumb, "%s > entities", tbl_cell(&tbl, row, 0));
			/* the shard first: the screen's first page is of it */
			entities_show_shard(row);
			ui_push_crumb(&view_entities, crumb);
			ui_msg("entities of %s (s: all shards merged; Esc: back to the shards)",
			       tbl_cell(&tbl, row, 0));
			return R_REDRAW;
		}
		return R_NONE;
	}
	return R_UNHANDLED;
}

const struct view_ops view_shards = {
	.name = "shards",
	.scope = 'S',
	.open = sh_open,
	.reload = sh_reload,
	.draw = sh_draw,
	.key = sh_key,
};

/*
 * shards.c - the first screen: every shard's state, address, version,
 * round trip, entity estimate, data size, Threads_running, replica lag and
 * fingerprint, with a totals row; an unreachable shard shows MySQL's
 * message. Under the table, each shard's TLS (protocol, cipher, what was
 * verified, its replicas'); a shard in plain text while another is
 * encrypted is marked.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views.h"

#define KEY_SNAP "shards"

static struct {
	bs_shard_status_t *st; /* published snapshot (snap_lock) */
	int n;
	int64_t taken_us;
	int rc;
	char err[256];
} snap;

static table_t tbl;

static const col_t cols[] = {
	{"SHARD", 6, false}, {"ADDRESS", 20, false}, {"STATE", 11, false},
	{"VERSION", 16, false}, {"RTT", 7, true}, {"ENTITIES", 11, true},
	{"SIZE", 10, true}, {"THREADS", 7, true}, {"REPL LAG", 8, true}, {"FINGERPRINT", 0, false},
};
#define NCOLS ((int)(sizeof cols / sizeof cols[0]))

static void work(bs_store_t *st, void *arg)
{
	int n = bs_store_nshards(st), rc;
	bs_shard_status_t *s = calloc((size_t)n, sizeof *s);

	(void)arg;
	if (!s)
		return;
	rc = bs_shard_status(s, st);
	snap_lock();
	free(snap.st);
	snap.st = s;
	snap.n = n;
	snap.rc = rc;
	snprintf(snap.err, sizeof snap.err, "%s", rc < 0 ? bs_last_error() : "");
	snap.taken_us = now_us();
	snap_unlock();
	worker_published();
}

static void sh_reload(void)
{
	worker_submit(LANE_STATUS, KEY_SNAP, true, work, NULL, NULL);
}

static void sh_open(void)
{
	static bool init;

	if (!init) {
		tbl_init(&tbl, cols, NCOLS);
		init = true;
	}
}

static void build(void)
{
	int i, r, up = 0;
	int64_t ents = 0, bytes = 0, threads = 0;
	char a[64], b[64];

	tbl_clear(&tbl);
	for (i = 0; i < snap.n; i++) {
		const bs_shard_status_t *s = &snap.st[i];
		bool down = s->state == BS_SHARD_DOWN;

		r = tbl_add(&tbl, down ? C_BAD : s->state == BS_SHARD_SLOW || s->tls_plaintext_mixed ? C_WARN : C_NORMAL);
		tbl_set(&tbl, r, 0, NAN, "%s", s->name);
		tbl_set(&tbl, r, 1, NAN, "%s", s->address);
		tbl_set(&tbl, r, 2, NAN, "%s", bs_shard_state_name(s->state));
		tbl_set(&tbl, r, 3, NAN, "%s", down ? "-" : s->version);
		if (down) {
			for (int c = 4; c < 9; c++)
				tbl_set(&tbl, r, c, -1, "-");
		} else {
			up++;
			ents += s->entities_est;
			bytes += s->data_bytes;
			threads += s->threads_running;
			tbl_set(&tbl, r, 4, s->rtt_ms, "%.1fms", s->rtt_ms);
			tbl_set(&tbl, r, 5, (double)s->entities_est, "%s", fmt_count(a, sizeof a, s->entities_est));
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
		        down ? "-" : s->fingerprint_ok == 1 ? "agrees" :
		        s->fingerprint_ok == 0 ? "DISAGREES" : "not initialised");
	}
	if (snap.n > 0) {
		r = tbl_add(&tbl, C_HEADER);
		tbl_set(&tbl, r, 0, NAN, "TOTAL");
		tbl_set(&tbl, r, 1, NAN, "%d shards", snap.n);
		tbl_set(&tbl, r, 2, NAN, "%d/%d up", up, snap.n);
		tbl_set(&tbl, r, 5, NAN, "%s", fmt_count(a, sizeof a, ents));
		tbl_set(&tbl, r, 6, NAN, "%s", fmt_bytes(b, sizeof b, bytes));
		tbl_set(&tbl, r, 7, NAN, "%lld", (long long)threads);
		tbl_pin_last(&tbl);
	}
	tbl_finish(&tbl, ui_filter());
}

/* ------------------------------------------------------------ TLS (issue 14) */

/* One shard's TLS, in words: "TLSv1.3 verified  TLS_AES_256_GCM_SHA384
 * (mode verify_identity)", its replicas' after it. */
static void tls_line(char *buf, size_t n, const bs_shard_status_t *s)
{
	char t[48], r[48] = "";
	int len;

	fmt_tls(t, sizeof t, &s->tls, s->tls_plaintext_mixed);
	len = snprintf(buf, n, "%-20s %s  (mode %s)", t, s->tls.cipher[0] ? s->tls.cipher : "-",
	               bs_tls_mode_name(s->tls_mode));
	if (s->nreplica_tls > 0 && len > 0 && (size_t)len < n)
		snprintf(buf + len, n - (size_t)len, "  replicas: %s", fmt_tls(r, sizeof r, &s->replica_tls, false));
	if (s->tls_plaintext_mixed && len > 0 && (size_t)len < n)
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
		if (s->tls_plaintext_mixed)
			ui_color(C_WARN, true);
		ui_printf(line++, 0, w, "  %-6s %s", s->name, buf);
		if (s->tls_plaintext_mixed)
			ui_color(C_WARN, false);
		shown++;
	}
	return line;
}

static void sh_draw(int y, int h, int w)
{
	char stale[128], t[64];
	int i, rows, line;

	snap_lock();
	build();
	ui_stale(KEY_SNAP, snap.taken_us, stale, sizeof stale);
	ui_printf(y, 0, w, "Shards  (as of %s)  %s", snap.taken_us ? fmt_time(t, sizeof t, snap.taken_us) : "-",
	          stale);
	rows = tbl.nshown + 2;
	if (rows > h - 2)
		rows = h - 2;
	tbl_draw(&tbl, y + 1, rows, w);
	line = y + 1 + rows + 1;
	if (snap.rc < 0 && line < y + h)
		ui_printf(line++, 0, w, "error: %s", snap.err);
	for (i = 0; i < snap.n && line < y + h; i++) {
		if (snap.st[i].state != BS_SHARD_UP && snap.st[i].error[0]) {
			ui_color(C_BAD, true);
			ui_printf(line++, 0, w, "%s %s: %s", snap.st[i].name, bs_shard_state_name(snap.st[i].state), snap.st[i].error);
			ui_color(C_BAD, false);
		}
	}
	if (line + 1 < y + h)
		line = draw_tls(line + 1, y + h, w);
	snap_unlock();
}

static reaction_t sh_key(action_t a, int key)
{
	reaction_t r = tbl_key(&tbl, a, key);

	if (r != R_UNHANDLED)
		return r;
	if (a == ACT_OPEN) {
		int row = tbl_selected(&tbl);
		/* a shard's row, not the totals (the table's rows, not the
		 * snapshot, which a lane may be replacing) */
		if (row >= 0 && row < tbl.nrows - tbl.npinned) {
			ui_switch(&view_entities);
			entities_show_shard(row);
			ui_msg("entities of %s (s: all shards merged)", tbl_cell(&tbl, row, 0));
			return R_REDRAW;
		}
		return R_NONE;
	}
	return R_UNHANDLED;
}

const struct view_ops view_shards = {
	.name = "shards", .scope = 'S', .open = sh_open, .reload = sh_reload,
	.draw = sh_draw, .key = sh_key,
};

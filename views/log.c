/*
 * log.c - the statement log screen (:log, 9): the last 1,000 statements
 * the console's own actions sent to the shards, newest first: when, the
 * shard, how long, rows, the action that sent it (and its lane), MySQL's
 * error, the statement (values over 64 bytes shortened, passwords
 * masked). The periodic refresh's statements are not listed, only counted
 * in the header. `/` filters the rows as it is typed; Enter shows one
 * statement in full.
 *
 * The log is the lanes' (worker.h, worker_log_copy): this screen copies it
 * when it reloads; it never waits on a shard.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "views.h"

static struct {
	log_entry_t *items;
	int n;
	uint64_t seq;
	int64_t unlisted;
} snap; /* the UI thread's: a copy of the lanes' log */

static table_t tbl;

static const col_t cols[] = {
	{ "#", 6, true, 1 },    { "AT (UTC)", 12, false, 0 }, { "SHARD", 8, false, 0 }, { "TIME", 9, true, 0 },
	{ "ROWS", 7, true, 1 }, { "ACTION", 18, false, 0 },   { "LANE", 6, false, 2 },  { "STATEMENT", 0, false, 0 },
};
#define NCOLS ((int)(sizeof cols / sizeof cols[0]))

static void lg_reload(void)
{
	log_entry_t *items;
	uint64_t seq;
	int64_t unlisted;
	int n = worker_log_copy(&items, &seq, &unlisted);

	if (n < 0) {
		ui_err("out of memory copying the statement log");
		return;
	}
	worker_log_free(snap.items, snap.n);
	snap.items = items;
	snap.n = n;
	snap.seq = seq;
	snap.unlisted = unlisted;
}

static void lg_open(void)
{
	static bool init;

	if (!init) {
		tbl_init(&tbl, cols, NCOLS);
		init = true;
	}
	lg_reload();
}

/* HH:MM:SS.mmm in UTC. */
static char *clock_ms(char *buf, size_t n, int64_t us)
{
	time_t t = (time_t)(us / 1000000);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(buf, n, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(us % 1000000 / 1000));
	return buf;
}

static void build(void)
{
	tbl_clear(&tbl);
	for (int k = 0; k < snap.n; k++) {
		const log_entry_t *e = &snap.items[k];
		char t[32], d[32];
		int r = tbl_add(&tbl, e->err ? C_BAD : C_NORMAL);

		tbl_set(&tbl, r, 0, (double)e->seq, "%llu", (unsigned long long)e->seq);
		tbl_set(&tbl, r, 1, (double)e->at_us, "%s", clock_ms(t, sizeof t, e->at_us));
		tbl_set(&tbl, r, 2, NAN, "%s", e->shard);
		tbl_set(&tbl, r, 3, e->seconds, "%s%s", e->async ? "<=" : "", fmt_ms(d, sizeof d, e->seconds));
		tbl_set(&tbl, r, 4, (double)e->rows, "%lld", (long long)e->rows);
		tbl_set(&tbl, r, 5, NAN, "%s", e->action);
		tbl_set(&tbl, r, 6, NAN, "%s", e->lane);
		if (e->err)
			tbl_set(&tbl, r, 7, NAN, "error %u: %s", e->err, e->sql ? e->sql : "");
		else
			tbl_set(&tbl, r, 7, NAN, "%s", e->sql ? e->sql : "");
	}
	tbl_finish(&tbl, ui_filter());
}

static void lg_draw(int y, int h, int w)
{
	char c[32];
	int rows;

	build();
	if (ui_filter()[0])
		ui_printf(y, 0, w,
		          "Statements: '%s' shows %d of the last %d the console's actions sent (newest first; "
		          "%s refresh statements not listed)",
		          ui_filter(), tbl.nshown, snap.n, fmt_count(c, sizeof c, snap.unlisted));
	else
		ui_printf(y, 0, w,
		          "Statements: the last %d the console's actions sent, newest first (at most %d; %s "
		          "refresh statements not listed)",
		          snap.n, WORKER_LOG_MAX, fmt_count(c, sizeof c, snap.unlisted));
	rows = h - 2 > 2 ? h - 2 : 2;
	tbl_draw(&tbl, y + 1, rows, w);
	ui_color(C_DIM, true);
	ui_put(y + h - 1, 0, w, "Enter the statement in full  / filter  R reload  ? help");
	ui_color(C_DIM, false);
}

/* Enter: the statement in full, as a page. */
static reaction_t open_selected(void)
{
	int r = tbl_selected(&tbl);
	const log_entry_t *e = NULL;
	char *page = NULL, title[64], t[64], d[32];

	if (r < 0)
		return R_REDRAW;
	for (int k = 0; k < snap.n && !e; k++) {
		char no[32];
		snprintf(no, sizeof no, "%llu", (unsigned long long)snap.items[k].seq);
		if (!strcmp(no, tbl_cell(&tbl, r, 0)))
			e = &snap.items[k];
	}
	if (!e)
		return R_REDRAW;
	if (asprintf(&page,
	             "statement %llu, sent at %s UTC to shard %s by %s (the %s lane)\n%s%s, %lld rows%s%s%s\n\n%s\n",
	             (unsigned long long)e->seq, fmt_iso_utc(t, sizeof t, e->at_us), e->shard, e->action, e->lane,
	             e->async ? "sent without waiting: at most " : "took ", fmt_ms(d, sizeof d, e->seconds),
	             (long long)e->rows, e->err ? "\nMySQL error: " : "", e->error ? e->error : "", e->err ? "" : "",
	             e->sql ? e->sql : "") < 0)
		return R_REDRAW;
	snprintf(title, sizeof title, "statement %llu", (unsigned long long)e->seq);
	text_open(title, page, NULL, NULL, NULL);
	free(page);
	return R_REDRAW;
}

static reaction_t lg_key(action_t a, int key)
{
	reaction_t r = tbl_key(&tbl, a, key);

	if (r != R_UNHANDLED)
		return r;
	if (a == ACT_OPEN)
		return open_selected();
	return R_UNHANDLED;
}

static void lg_close(void)
{
	worker_log_free(snap.items, snap.n);
	snap.items = NULL;
	snap.n = 0;
}

const struct view_ops view_log = {
	.name = "log",
	.scope = 'L',
	.open = lg_open,
	.reload = lg_reload,
	.draw = lg_draw,
	.key = lg_key,
	.close = lg_close,
};

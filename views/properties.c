/*
 * properties.c - the properties screen: the census of the bodies
 * (bs_census), as MongoDB Compass's schema tab shows documents: every
 * property path of a sample of up to 1,000 bodies per shard (spread over
 * each table, not only the newest), the types seen and their shares,
 * presence, distinct values (~ an estimate for the store unless every
 * entity was read), the largest value, the indexes holding it, the index
 * type its values fit, and an example. `c` on a row opens the create-index
 * form with that property and the suggested type filled in. The census is
 * taken on the scan lane when the screen first opens and again on `R`.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views.h"

#define KEY_SNAP "properties"
#define SAMPLE 1000

static struct {
	bs_census_t c;
	int64_t taken_us;
	double took_s;
	bool running, ever;
	int rc;
	char err[256];
} snap;

static table_t tbl;

static const col_t cols[] = {
	{ "PATH", 22, false, 0 },  { "TYPES", 20, false, 0 },   { "PRESENT", 7, true, 0 },   { "DISTINCT", 9, true, 1 },
	{ "LARGEST", 9, true, 1 }, { "SUGGEST", 12, false, 0 }, { "INDEXES", 14, false, 0 }, { "EXAMPLE", 0, false, 2 },
};
#define NCOLS ((int)(sizeof cols / sizeof cols[0]))

static void work(bs_store_t *st, void *arg)
{
	bs_census_t c;
	double t0 = (double)now_us();
	int rc;

	(void)arg;
	rc = bs_census(&c, st, SAMPLE, -1);
	snap_lock();
	if (rc == 0) {
		bs_census_free(&snap.c);
		snap.c = c;
		snap.taken_us = now_us();
		snap.took_s = ((double)snap.taken_us - t0) / 1e6;
	}
	snap.rc = rc;
	snprintf(snap.err, sizeof snap.err, "%s", rc < 0 ? bs_last_error() : "");
	snap.running = false;
	snap_unlock();
	worker_published();
}

static void take_census(void)
{
	snap_lock();
	snap.running = snap.ever = true;
	snap_unlock();
	worker_submit(LANE_SCAN, KEY_SNAP, true, work, NULL, NULL);
}

static void pr_open(void)
{
	static bool init;

	if (!init) {
		tbl_init(&tbl, cols, NCOLS);
		init = true;
	}
	snap_lock();
	bool ever = snap.ever;
	snap_unlock();
	if (!ever)
		take_census();
}

/* "string 90% int 10%": the kinds seen, most first. */
static void types_text(char *buf, size_t n, const bs_census_prop_t *p)
{
	bool done[BS_CT_COUNT] = { false };
	char pct[16];
	size_t o = 0;

	buf[0] = 0;
	for (;;) {
		int best = -1, k;
		for (k = 0; k < BS_CT_COUNT; k++)
			if (!done[k] && p->types[k] && (best < 0 || p->types[k] > p->types[best]))
				best = k;
		if (best < 0 || o + 2 >= n)
			break;
		done[best] = true;
		o += (size_t)snprintf(buf + o, n - o, "%s%s %s", o ? " " : "",
		                      bs_census_type_name((bs_census_type_t)best),
		                      fmt_share(pct, sizeof pct, p->types[best], p->values));
	}
}

static void add_prop(const bs_census_prop_t *p)
{
	char types[128], a[32], pc[16];
	int r = tbl_add(&tbl, p->suggest[0] ? C_NORMAL : C_DIM);
	double share = snap.c.sampled ? 100.0 * (double)p->present / (double)snap.c.sampled : 0;

	types_text(types, sizeof types, p);
	tbl_set(&tbl, r, 0, NAN, "%s", p->path);
	tbl_set(&tbl, r, 1, NAN, "%s", types);
	tbl_set(&tbl, r, 2, share, "%s", fmt_share(pc, sizeof pc, p->present, snap.c.sampled));
	tbl_set(&tbl, r, 3, p->distinct_est, "%s%s%s", snap.c.complete ? "" : "~",
	        fmt_count(a, sizeof a, (int64_t)(p->distinct_est + 0.5)), p->distinct_capped ? "+" : "");
	if (p->max_chars)
		tbl_set(&tbl, r, 4, (double)p->max_chars, "%lld ch", (long long)p->max_chars);
	else if (p->max_bytes)
		tbl_set(&tbl, r, 4, (double)p->max_bytes, "%lld B", (long long)p->max_bytes);
	else if (p->max_items)
		tbl_set(&tbl, r, 4, (double)p->max_items, "%lld it", (long long)p->max_items);
	else
		tbl_set(&tbl, r, 4, -1, "-");
	tbl_set(&tbl, r, 5, NAN, "%s", p->suggest[0] ? p->suggest : "-");
	tbl_set(&tbl, r, 6, NAN, "%s", p->indexes[0] ? p->indexes : "-");
	tbl_set(&tbl, r, 7, NAN, "%s", p->example);
}

static void build(void)
{
	int k;

	tbl_clear(&tbl);
	for (k = 0; k < snap.c.nprops; k++)
		add_prop(&snap.c.props[k]);
	tbl_finish(&tbl, ui_filter());
}

static const bs_census_prop_t *selected_locked(void)
{
	int r = tbl_selected(&tbl), k;

	if (r < 0)
		return NULL;
	for (k = 0; k < snap.c.nprops; k++)
		if (strcmp(snap.c.props[k].path, tbl_cell(&tbl, r, 0)) == 0)
			return &snap.c.props[k];
	return NULL;
}

static void draw_header(int y, int w)
{
	char age[32], n[32], e[32];

	if (!snap.taken_us) {
		ui_printf(y, 0, w, "Properties: %s",
		          snap.running  ? "taking the census of the bodies ..."
		          : snap.rc < 0 ? "the census failed (below)"
		                        : "no census yet (R takes one)");
		return;
	}
	ui_printf(y, 0, w,
	          "Properties of %s sampled entities (up to %d per shard, spread over each table) of %s%s "
	          "on %d shard%s; taken %s in %.1fs%s",
	          fmt_count(n, sizeof n, snap.c.sampled), snap.c.per_shard, snap.c.complete ? "" : "~",
	          fmt_count(e, sizeof e, snap.c.entities_est), snap.c.shards_sampled,
	          snap.c.shards_sampled == 1 ? "" : "s", fmt_age(age, sizeof age, snap.taken_us), snap.took_s,
	          snap.running ? "; taking it again ..." : "; R takes it again");
}

static void pr_draw(int y, int h, int w)
{
	const bs_census_prop_t *p;
	int rows, line;

	snap_lock();
	build();
	draw_header(y, w);
	rows = h - 4 > 2 ? h - 4 : 2;
	tbl_draw(&tbl, y + 1, rows, w);
	line = y + 1 + rows;
	if ((p = selected_locked()) && line < y + h - 1)
		ui_printf(line++, 0, w, "%s: %lld of %lld sampled entities, %lld values%s%s%s%s", p->path,
		          (long long)p->present, (long long)snap.c.sampled, (long long)p->values,
		          p->suggest[0] ? "; an index would take " : "", p->suggest, p->note[0] ? "; " : "", p->note);
	ui_color(C_BAD, true);
	if (snap.rc < 0 && line < y + h - 1)
		ui_printf(line++, 0, w, "census: %s", snap.err);
	else if (snap.c.shards_unreachable && line < y + h - 1)
		ui_printf(line++, 0, w, "%d shard%s not sampled: %s", snap.c.shards_unreachable,
		          snap.c.shards_unreachable == 1 ? "" : "s", snap.c.unreachable_first);
	else if (snap.c.corrupt && line < y + h - 1)
		ui_printf(line++, 0, w, "%lld corrupt bodies left out; the first: %s", (long long)snap.c.corrupt,
		          snap.c.corrupt_first);
	ui_color(C_BAD, false);
	snap_unlock();
	ui_color(C_DIM, true);
	ui_put(y + h - 1, 0, w,
	       ui.read_only ? "R census again  / filter  ? help"
	                    : "c create an index on it  R census again  / filter  ? help");
	ui_color(C_DIM, false);
}

/* c: the create-index form, the property and its suggested type filled in. */
static reaction_t create_on_selected(void)
{
	const bs_census_prop_t *p;
	char name[BS_NAME_MAX + 1], on[300], note[160];
	bool ok;

	snap_lock();
	p = selected_locked();
	ok = p && p->suggest[0];
	if (ok) {
		snprintf(name, sizeof name, "index_%.58s", p->path);
		snprintf(on, sizeof on, "%s:%s", p->path, p->suggest);
	} else {
		snprintf(note, sizeof note, "%s", p ? p->note : "no property selected");
	}
	snap_unlock();
	if (!ok) {
		ui_err("no index type to suggest: %s", note);
		return R_REDRAW;
	}
	ui_switch(&view_indexes);
	return indexes_create_form(name, on);
}

static reaction_t pr_key(action_t a, int key)
{
	reaction_t r = tbl_key(&tbl, a, key);

	if (r != R_UNHANDLED)
		return r;
	switch (a) {
	case ACT_CENSUS_RUN:
		take_census();
		ui_msg("taking the census again (up to %d bodies per shard)", SAMPLE);
		return R_REDRAW;
	case ACT_CENSUS_INDEX: return create_on_selected();
	default: return R_UNHANDLED;
	}
}

const struct view_ops view_properties = {
	.name = "properties",
	.scope = 'P',
	.open = pr_open,
	.draw = pr_draw,
	.key = pr_key,
};

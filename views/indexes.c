/*
 * indexes.c - the indexes screen: state, properties and types, shard_on,
 * rows per shard and in total, backfill progress while building, drift from
 * the last verify. Create (a form, then the DDL preview), drop (the name
 * typed, the confirmation naming rows and shards), verify, repair, and a
 * backfill run by this console.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views.h"

#define KEY_SNAP "indexes"

typedef struct {
	bs_index_t def;
	int64_t *rows;     /* per shard, -1 unknown */
	int64_t total;
	bool have_drift;
	bs_drift_t drift;
	int64_t scanned, to_scan; /* backfill, summed over jobs */
	int njobs, jobs_done;
	char job_state[32];
} irow_t;

static struct {
	irow_t *items;
	int n;
	int nshards;
	int64_t taken_us;
	int rc;
	char err[256];
} snap;

static table_t tbl;
static col_t *cols;
static int ncols;

static void snap_free_items(irow_t *it, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(it[i].rows);
	free(it);
}

static void work(bs_store_t *st, void *arg)
{
	bs_index_list_t l = {0};
	int ns = bs_store_nshards(st), rc, i, j;
	irow_t *items = NULL;
	bs_job_list_t jobs = {0};
	bool have_jobs = false;

	(void)arg;
	rc = bs_index_list(&l, st);
	if (rc == 0 && l.len > 0)
		items = calloc((size_t)l.len, sizeof *items);
	if (rc == 0)
		have_jobs = bs_job_list(&jobs, st, NULL) == 0;
	for (i = 0; rc == 0 && i < l.len && items; i++) {
		irow_t *it = &items[i];

		it->def = l.items[i];
		it->rows = calloc((size_t)ns, sizeof(int64_t));
		if (!it->rows || bs_index_rows(it->rows, st, it->def.name, false) < 0) {
			for (j = 0; it->rows && j < ns; j++)
				it->rows[j] = -1;
			it->total = -1;
		} else {
			for (j = 0; j < ns; j++)
				it->total += it->rows[j];
		}
		it->have_drift = bs_verify_last(&it->drift, st, it->def.name) == 0;
		for (j = 0; have_jobs && j < jobs.len; j++) {
			const bs_job_t *jb = &jobs.items[j];
			if (strcmp(jb->index, it->def.name) != 0)
				continue;
			it->njobs++;
			it->scanned += jb->rows_scanned;
			it->to_scan += jb->rows_total;
			if (jb->state == BS_JOB_DONE)
				it->jobs_done++;
			else
				snprintf(it->job_state, sizeof it->job_state, "%s", bs_job_state_name(jb->state));
		}
	}
	if (have_jobs)
		bs_job_list_free(&jobs);
	snap_lock();
	if (rc == 0) {
		snap_free_items(snap.items, snap.n);
		snap.items = items;
		snap.n = items ? l.len : 0;
		items = NULL;
	}
	snap.nshards = ns;
	snap.rc = rc;
	snprintf(snap.err, sizeof snap.err, "%s", rc < 0 ? bs_last_error() : "");
	snap.taken_us = now_us();
	snap_unlock();
	if (items)
		snap_free_items(items, l.len);
	bs_index_list_free(&l);
	worker_published();
}

static void ix_reload(void)
{
	worker_submit(LANE_STATUS, KEY_SNAP, true, work, NULL, NULL);
}

static void ix_open(void)
{
	int i;

	if (cols)
		return;
	ncols = 4 + ui.cfg->nshards + 3;
	cols = calloc((size_t)ncols, sizeof *cols);
	cols[0] = (col_t){"INDEX", 16, false};
	cols[1] = (col_t){"STATE", 9, false};
	cols[2] = (col_t){"PROPERTIES", 20, false};
	cols[3] = (col_t){"SHARD_ON", 9, false};
	for (i = 0; i < ui.cfg->nshards; i++)
		cols[4 + i] = (col_t){ui.cfg->shards[i].name, 9, true};
	cols[4 + i] = (col_t){"TOTAL", 10, true};
	cols[5 + i] = (col_t){"BACKFILL", 13, false};
	cols[6 + i] = (col_t){"DRIFT", 0, false};
	tbl_init(&tbl, cols, ncols);
}

static void build(void)
{
	int i, j, r, ns = ui.cfg->nshards;
	char a[64], on[512];

	tbl_clear(&tbl);
	for (i = 0; i < snap.n; i++) {
		const irow_t *it = &snap.items[i];
		int attr = it->def.state == BS_INDEX_READY ? C_NORMAL :
		           it->def.state == BS_INDEX_BUILDING ? C_WARN : C_DIM;

		r = tbl_add(&tbl, attr);
		tbl_set(&tbl, r, 0, NAN, "%s", it->def.name);
		tbl_set(&tbl, r, 1, NAN, "%s", bs_index_state_name(it->def.state));
		tbl_set(&tbl, r, 2, NAN, "%s", bs_index_format_on(on, sizeof on, &it->def));
		tbl_set(&tbl, r, 3, NAN, "%s", it->def.props[it->def.shard_on].name);
		for (j = 0; j < ns; j++) {
			if (j < snap.nshards && it->rows && it->rows[j] >= 0)
				tbl_set(&tbl, r, 4 + j, (double)it->rows[j], "%s", fmt_count(a, sizeof a, it->rows[j]));
			else
				tbl_set(&tbl, r, 4 + j, -1, "?");
		}
		if (it->total >= 0)
			tbl_set(&tbl, r, 4 + ns, (double)it->total, "%s", fmt_count(a, sizeof a, it->total));
		else
			tbl_set(&tbl, r, 4 + ns, -1, "?");
		if (it->njobs == 0)
			tbl_set(&tbl, r, 5 + ns, -1, "%s", it->def.state == BS_INDEX_BUILDING ? "not queued" : "-");
		else if (it->jobs_done == it->njobs)
			tbl_set(&tbl, r, 5 + ns, 100, "done");
		else {
			double pct = it->to_scan > 0 ? 100.0 * (double)it->scanned / (double)it->to_scan : 0;
			if (pct > 100)
				pct = 100;
			tbl_set(&tbl, r, 5 + ns, pct, "%.1f%% %s", pct, it->job_state);
		}
		if (!it->have_drift)
			tbl_set(&tbl, r, 6 + ns, NAN, "never verified");
		else {
			const bs_drift_t *d = &it->drift;
			char age[32];
			int64_t sum = d->missing + d->stale + d->orphaned;
			if (sum == 0)
				tbl_set(&tbl, r, 6 + ns, 0, "ok, %s", fmt_age(age, sizeof age, d->at_us));
			else
				tbl_set(&tbl, r, 6 + ns, (double)sum, "miss %lld stale %lld orph %lld, %s",
				        (long long)d->missing, (long long)d->stale, (long long)d->orphaned,
				        fmt_age(age, sizeof age, d->at_us));
		}
	}
	tbl_finish(&tbl, ui_filter());
}

static void ix_draw(int y, int h, int w)
{
	char stale[128], t[64];
	int rows;

	snap_lock();
	build();
	ui_stale(KEY_SNAP, snap.taken_us, stale, sizeof stale);
	ui_printf(y, 0, w, "Indexes: %d  (rows: InnoDB estimates; as of %s)  %s", snap.n,
	          snap.taken_us ? fmt_time(t, sizeof t, snap.taken_us) : "-", stale);
	rows = h - 3;
	tbl_draw(&tbl, y + 1, rows, w);
	if (snap.rc < 0) {
		ui_color(C_BAD, true);
		ui_printf(y + h - 2, 0, w, "error: %s", snap.err);
		ui_color(C_BAD, false);
	}
	ui_color(C_DIM, true);
	ui_put(y + h - 1, 0, w, ui.read_only ? "v verify   ? help" :
	       "c create  d drop  v verify  V repair  B backfill  ? help");
	ui_color(C_DIM, false);
	snap_unlock();
}

/* ------------------------------------------------------------ actions */

typedef struct {
	bs_index_t def;
	char name[BS_NAME_MAX + 1];
	char detail[512];
	bool repair;
} ixreq_t;

static void free_req(void *p) { free(p); }

static void do_create(bs_store_t *st, void *arg)
{
	ixreq_t *q = arg;
	int rc = bs_index_create(st, &q->def);

	if (rc < 0) {
		worker_notify(true, "create %s failed: %s", q->def.name, bs_last_error());
		return;
	}
	worker_audit(st, "index.create", q->def.name, q->detail);
	worker_notify(false, "created index %s (%s)", q->def.name, q->detail);
	worker_submit(LANE_STATUS, KEY_SNAP, false, work, NULL, NULL);
}

static void do_drop(bs_store_t *st, void *arg)
{
	ixreq_t *q = arg;
	int rc = bs_index_drop(st, q->name);

	if (rc < 0) {
		worker_notify(true, "drop %s failed: %s", q->name, bs_last_error());
		return;
	}
	worker_audit(st, "index.drop", q->name, q->detail);
	worker_notify(false, "dropped index %s", q->name);
	worker_submit(LANE_STATUS, KEY_SNAP, false, work, NULL, NULL);
}

static void do_verify(bs_store_t *st, void *arg)
{
	ixreq_t *q = arg;
	bs_drift_t d;
	int rc;

	memset(&d, 0, sizeof d);
	rc = bs_verify(&d, st, q->name, q->repair);
	if (rc < 0) {
		worker_notify(true, "verify %s failed: %s", q->name, bs_last_error());
		return;
	}
	if (q->repair) {
		char det[256];
		snprintf(det, sizeof det, "missing %lld stale %lld orphaned %lld repaired %lld",
		         (long long)d.missing, (long long)d.stale, (long long)d.orphaned, (long long)d.repaired);
		worker_audit(st, "index.repair", q->name, det);
	}
	worker_notify(d.missing + d.stale + d.orphaned > 0 && !q->repair,
	              "verify %s: checked %lld, missing %lld, stale %lld, orphaned %lld, misfit %lld%s",
	              q->name, (long long)d.checked, (long long)d.missing, (long long)d.stale,
	              (long long)d.orphaned, (long long)d.misfit, q->repair ? ", repaired" : "");
	worker_submit(LANE_STATUS, KEY_SNAP, false, work, NULL, NULL);
}

static void do_backfill(bs_store_t *st, void *arg)
{
	ixreq_t *q = arg;

	if (worker_backfill_start(q->name) < 0) {
		worker_notify(true, "backfill %s: %s", q->name, bs_last_error());
		return;
	}
	worker_audit(st, "index.backfill", q->name, "launched from the console");
	worker_notify(false, "backfilling %s on a console worker (4 shows it)", q->name);
}

/* create: name, then properties, then shard_on, then the DDL preview */
static struct {
	char name[BS_NAME_MAX + 1];
	char on[256];
	char shard_on[BS_NAME_MAX + 1];
	bs_index_t def;
} form;

static reaction_t create_confirm(void *ctx)
{
	ixreq_t *q = calloc(1, sizeof *q);

	(void)ctx;
	if (!q) {
		ui_err("not created: out of memory");
		return R_REDRAW;
	}
	q->def = form.def;
	snprintf(q->detail, sizeof q->detail, "on %s shard_on %s", form.on, form.shard_on);
	worker_submit(LANE_ACTION, NULL, false, do_create, q, free_req);
	ui_msg("creating index %s ...", form.name);
	return R_POP;
}

static reaction_t form_shard_on(const char *text, void *ctx)
{
	char *ddl = NULL, *page = NULL;
	int rc;

	(void)ctx;
	if (!text)
		return R_REDRAW;
	snprintf(form.shard_on, sizeof form.shard_on, "%s", text);
	if (!form.shard_on[0]) /* the first property */
		snprintf(form.shard_on, sizeof form.shard_on, "%.*s", (int)strcspn(form.on, ":,"), form.on);
	memset(&form.def, 0, sizeof form.def);
	rc = bs_index_parse(&form.def, form.name, form.on, form.shard_on);
	if (rc == 0)
		rc = bs_index_ddl(&ddl, &form.def);
	if (rc < 0) {
		ui_err("create index: %s", bs_last_error());
		return R_REDRAW;
	}
	if (asprintf(&page, "Create index %s on %s, rows sharded by %s, on %d shards.\n"
	             "It starts building (ready at once when the store is empty); writers maintain it,\n"
	             "readers use it once a backfill (B) has covered every row.\n\n"
	             "DDL run on every shard:\n\n%s\n", form.name, form.on,
	             form.def.props[form.def.shard_on].name, ui.nshards, ddl) < 0)
		page = NULL;
	text_open("create index: DDL preview", page ? page : ddl, create_confirm, NULL, "create this index");
	free(page);
	free(ddl);
	return R_REDRAW;
}

static reaction_t form_on(const char *text, void *ctx)
{
	(void)ctx;
	if (!text || !*text)
		return R_REDRAW;
	snprintf(form.on, sizeof form.on, "%s", text);
	ui_prompt("create index: shard_on property (Enter: the first): ", "", form_shard_on, NULL);
	return R_REDRAW;
}

static reaction_t form_name(const char *text, void *ctx)
{
	(void)ctx;
	if (!text || !*text)
		return R_REDRAW;
	snprintf(form.name, sizeof form.name, "%s", text);
	ui_prompt("create index: properties (user_id:uuid,title:string(80)): ", "", form_on, NULL);
	return R_REDRAW;
}

static char drop_name[BS_NAME_MAX + 1];
static char drop_what[256];

static reaction_t drop_typed(const char *text, void *ctx)
{
	ixreq_t *q;

	(void)ctx;
	if (!text)
		return R_REDRAW;
	if (strcmp(text, drop_name) != 0) {
		ui_err("not dropped: the name typed was not %s", drop_name);
		return R_REDRAW;
	}
	if (!(q = calloc(1, sizeof *q))) {
		ui_err("not dropped: out of memory");
		return R_REDRAW;
	}
	snprintf(q->name, sizeof q->name, "%s", drop_name);
	snprintf(q->detail, sizeof q->detail, "%s", drop_what);
	worker_submit(LANE_ACTION, NULL, false, do_drop, q, free_req);
	ui_msg("dropping %s ...", drop_name);
	return R_REDRAW;
}

static const irow_t *selected(void)
{
	int r = tbl_selected(&tbl), i;
	const char *name;

	if (r < 0)
		return NULL;
	name = tbl_cell(&tbl, r, 0);
	for (i = 0; i < snap.n; i++)
		if (strcmp(snap.items[i].def.name, name) == 0)
			return &snap.items[i];
	return NULL;
}

static reaction_t ix_key(action_t a, int key)
{
	reaction_t r = tbl_key(&tbl, a, key);
	const irow_t *it;
	ixreq_t *q;
	char label[512], cnt[64], name[BS_NAME_MAX + 1];

	if (r != R_UNHANDLED)
		return r;
	switch (a) {
	case ACT_INDEX_CREATE:
		memset(&form, 0, sizeof form);
		ui_prompt("create index: name: ", "", form_name, NULL);
		return R_REDRAW;
	case ACT_INDEX_DROP:
	case ACT_INDEX_VERIFY:
	case ACT_INDEX_REPAIR:
	case ACT_INDEX_BACKFILL:
	case ACT_OPEN:
		break;
	default:
		return R_UNHANDLED;
	}
	snap_lock();
	it = selected();
	if (!it) {
		snap_unlock();
		ui_err("no index selected");
		return R_REDRAW;
	}
	snprintf(name, sizeof name, "%s", it->def.name);
	if (a == ACT_INDEX_DROP) {
		snprintf(drop_name, sizeof drop_name, "%s", it->def.name);
		/* an unknown count (a shard did not answer) is not shown as 0 */
		snprintf(drop_what, sizeof drop_what, "drop %s: %s rows on %d shard%s", it->def.name,
		         it->total < 0 ? "? (not counted: a shard did not answer)" : fmt_count(cnt, sizeof cnt, it->total),
		         snap.nshards, snap.nshards == 1 ? "" : "s");
		snprintf(label, sizeof label, "%s. Type %s to confirm: ", drop_what, it->def.name);
		snap_unlock();
		ui_prompt(label, "", drop_typed, NULL);
		return R_REDRAW;
	}
	snap_unlock();
	if (a == ACT_OPEN) {
		ui_switch(&view_backfills);
		ui_set_filter(name);
		return R_RELOAD;
	}
	if (!(q = calloc(1, sizeof *q))) {
		ui_err("%s: out of memory", name);
		return R_REDRAW;
	}
	snprintf(q->name, sizeof q->name, "%s", name);
	if (a == ACT_INDEX_VERIFY || a == ACT_INDEX_REPAIR) {
		q->repair = a == ACT_INDEX_REPAIR;
		/* the message first: the request is the lane's once submitted */
		ui_msg("%s %s on every shard ...", q->repair ? "verifying and repairing" : "verifying", q->name);
		worker_submit(LANE_ACTION, NULL, false, do_verify, q, free_req);
		return R_REDRAW;
	}
	ui_msg("starting a backfill of %s ...", q->name);
	worker_submit(LANE_ACTION, NULL, false, do_backfill, q, free_req);
	return R_REDRAW;
}

const struct view_ops view_indexes = {
	.name = "indexes", .scope = 'I', .open = ix_open, .reload = ix_reload,
	.draw = ix_draw, .key = ix_key,
};

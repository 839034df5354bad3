/*
 * indexes.c - the indexes screen: state, properties and types, shard_on,
 * rows per shard and in total (InnoDB's estimates, marked ~; `#` counts the
 * selected index exactly; a shard that does not answer keeps its last
 * numbers, marked stale with their age and the shard's error), backfill
 * progress while building, drift from the last verify. Create (a form whose
 * fields are checked as they are entered, then the DDL preview), drop (the
 * name typed, the confirmation naming rows and shards), verify, repair, and
 * a backfill run by this console (of a building index only).
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views.h"

#define KEY_SNAP "indexes"
#define KEY_COUNT "indexes.count"

typedef struct {
	bs_index_t def;
	int64_t *rows;    /* per shard, -1 unknown */
	int64_t *rows_at; /* per shard: when the number was read (older than the
	                    * snapshot: the shard did not answer, the number is stale) */
	int64_t total;    /* of the rows known */
	int unknown;      /* shards with no number at all */
	int stale;        /* shards whose number is an old one */
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
	const bs_config_t *cfg; /* the lane's when it read them (shard i is its shards[i]) */
	int64_t taken_us;
	int rc;
	char err[256];
	char rows_err[256]; /* why some shard's rows could not be read */
	/* the exact count of one index (`#`) */
	char exact_name[BS_NAME_MAX + 1];
	int64_t exact_created_us;
	int64_t *exact;               /* per shard, -1 unknown */
	const bs_config_t *exact_cfg; /* whose shards exact counts */
	int64_t exact_at_us;
	bool counting;
	int count_rc;
	char count_err[256];
	int queued;   /* backfill jobs queued */
	int cleaners; /* live cleaner daemons; -1 unknown */
} snap;

static atomic_int count_stop;
static table_t tbl;
static col_t *cols;
static int ncols;
static const bs_config_t *cols_cfg; /* whose shards the columns name */

static void snap_free_items(irow_t *it, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		free(it[i].rows);
		free(it[i].rows_at);
	}
	free(it);
}

/* The last snapshot's numbers for shards that did not answer now
 * (snap_lock held): kept, as stale. */
static void keep_old_rows(irow_t *it, int ns)
{
	int i, j;

	for (i = 0; i < snap.n; i++) {
		const irow_t *o = &snap.items[i];
		if (strcmp(o->def.name, it->def.name) != 0 || o->def.created_us != it->def.created_us)
			continue;
		for (j = 0; j < ns && j < snap.nshards; j++)
			if (it->rows[j] < 0 && o->rows[j] >= 0) {
				it->rows[j] = o->rows[j];
				it->rows_at[j] = o->rows_at[j];
			}
	}
}

static void rows_of(irow_t *it, bs_store_t *st, int ns, int64_t now, char *err, size_t errn)
{
	int j;

	it->rows = calloc((size_t)ns, sizeof(int64_t));
	it->rows_at = calloc((size_t)ns, sizeof(int64_t));
	if (!it->rows || !it->rows_at)
		return;
	/* a shard that fails keeps -1; the others' estimates stand */
	if (bs_index_rows(it->rows, st, it->def.name, false) < 0 && !err[0])
		snprintf(err, errn, "%s", bs_last_error());
	for (j = 0; j < ns; j++)
		it->rows_at[j] = it->rows[j] >= 0 ? now : 0;
	snap_lock();
	if (snap.cfg == bs_store_config(st)) /* the same shards */
		keep_old_rows(it, ns);
	snap_unlock();
	for (j = 0; j < ns; j++) {
		if (it->rows[j] < 0)
			it->unknown++;
		else
			it->total += it->rows[j];
		if (it->rows[j] >= 0 && it->rows_at[j] < now)
			it->stale++;
	}
}

static void jobs_of(irow_t *it, const bs_job_list_t *jobs)
{
	int j;

	for (j = 0; j < jobs->len; j++) {
		const bs_job_t *jb = &jobs->items[j];
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

static void work(bs_store_t *st, void *arg)
{
	bs_index_list_t l = { 0 };
	int ns = bs_store_nshards(st), rc, i;
	irow_t *items = NULL;
	bs_job_list_t jobs = { 0 };
	bool have_jobs = false;
	int64_t now = now_us();
	char rows_err[256] = "";

	(void)arg;
	rc = bs_index_list(&l, st);
	if (rc == 0 && l.len > 0)
		items = calloc((size_t)l.len, sizeof *items);
	if (rc == 0)
		have_jobs = bs_job_list(&jobs, st, NULL) == 0;
	for (i = 0; rc == 0 && i < l.len && items; i++) {
		irow_t *it = &items[i];

		it->def = l.items[i];
		rows_of(it, st, ns, now, rows_err, sizeof rows_err);
		it->have_drift = bs_verify_last(&it->drift, st, it->def.name) == 0;
		if (have_jobs)
			jobs_of(it, &jobs);
	}
	int queued = 0, cleaners = -1;
	for (int j = 0; have_jobs && j < jobs.len; j++)
		queued += jobs.items[j].state == BS_JOB_QUEUED;
	if (queued) {
		bs_worker_list_t wl = { 0 };
		if (bs_workers_list(&wl, st, NULL) == 0)
			cleaners = bs_workers_alive(&wl, "cleaner");
		bs_worker_list_free(&wl);
	}
	if (have_jobs)
		bs_job_list_free(&jobs);
	snap_lock();
	snap.queued = queued;
	snap.cleaners = cleaners;
	if (rc == 0) {
		snap_free_items(snap.items, snap.n);
		snap.items = items;
		snap.n = items ? l.len : 0;
		items = NULL;
		snprintf(snap.rows_err, sizeof snap.rows_err, "%s", rows_err);
	}
	snap.nshards = ns;
	snap.cfg = bs_store_config(st);
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

/* The columns: one per shard of c (the configuration followed: they change
 * with its shard list). */
static void make_cols(const bs_config_t *c)
{
	int i;

	if (cols && cols_cfg == c)
		return;
	if (cols) { /* the table's rows are laid out by its columns: all of it goes */
		tbl_clear(&tbl);
		free(tbl.cells);
		free(tbl.keys);
		free(tbl.attr);
		free(tbl.order);
		free(tbl.x);
		free(tbl.wid);
	}
	free(cols);
	cols_cfg = c;
	ncols = 4 + c->nshards + 3;
	cols = calloc((size_t)ncols, sizeof *cols);
	cols[0] = (col_t){ "INDEX", 15, false, 0 };
	cols[1] = (col_t){ "STATE", 9, false, 0 };
	cols[2] = (col_t){ "PROPERTIES", 18, false, 1 };
	cols[3] = (col_t){ "SHARD_ON", 9, false, 2 };
	for (i = 0; i < c->nshards; i++)
		cols[4 + i] = (col_t){ c->shards[i].name, 10, true, 3 };
	cols[4 + i] = (col_t){ "TOTAL", 10, true, 0 };
	cols[5 + i] = (col_t){ "BACKFILL", 13, false, 0 };
	cols[6 + i] = (col_t){ "DRIFT", 0, false, 1 };
	tbl_init(&tbl, cols, ncols);
}

static void ix_open(void)
{
	make_cols(worker_config());
}

/* The exact count of this index, when `#` counted it (snap_lock held). */
static const int64_t *exact_of(const irow_t *it)
{
	if (!snap.exact || snap.exact_cfg != snap.cfg || strcmp(snap.exact_name, it->def.name) != 0 ||
	    snap.exact_created_us != it->def.created_us)
		return NULL;
	return snap.exact;
}

/* Is the exact count of an index listed, the one counted (snap_lock held)?
 * Not once it was dropped, made again under its name, or the configuration
 * changed: its rows are estimates again, and the note would say otherwise. */
static bool exact_shown(void)
{
	int i;

	for (i = 0; snap.exact && i < snap.n; i++)
		if (exact_of(&snap.items[i]))
			return true;
	return false;
}

static void row_counts(int r, const irow_t *it, int ns)
{
	const int64_t *ex = exact_of(it);
	int64_t total = 0;
	bool est = false, unknown = false, stale = false;
	char a[64];
	int j;

	for (j = 0; j < ns; j++) {
		bool known = j < snap.nshards && it->rows && it->rows[j] >= 0;
		if (ex && ex[j] >= 0) {
			tbl_set(&tbl, r, 4 + j, (double)ex[j], "%s", fmt_count(a, sizeof a, ex[j]));
			total += ex[j];
		} else if (known) {
			bool old = it->rows_at[j] < snap.taken_us - 1000000;
			tbl_set(&tbl, r, 4 + j, (double)it->rows[j], "~%s%s", fmt_count(a, sizeof a, it->rows[j]),
			        old ? "*" : "");
			total += it->rows[j];
			est = true;
			stale |= old;
		} else {
			tbl_set(&tbl, r, 4 + j, -1, "?");
			unknown = true;
		}
	}
	tbl_set(&tbl, r, 4 + ns, unknown ? -1 : (double)total, "%s%s%s%s",
	        unknown ? ">="
	        : est   ? "~"
	                : "",
	        fmt_count(a, sizeof a, total), unknown ? "?" : "", stale ? "*" : "");
}

static void row_progress(int r, const irow_t *it, int ns)
{
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
		else if (d->repaired > 0) /* what it found, it fixed (V) */
			tbl_set(&tbl, r, 6 + ns, 0, "ok: %lld repaired, %s", (long long)d->repaired,
			        fmt_age(age, sizeof age, d->at_us));
		else
			tbl_set(&tbl, r, 6 + ns, (double)sum, "miss %lld stale %lld orph %lld, %s",
			        (long long)d->missing, (long long)d->stale, (long long)d->orphaned,
			        fmt_age(age, sizeof age, d->at_us));
	}
}

static void build(void)
{
	int i, r, ns;
	char on[512];

	make_cols(snap.cfg ? snap.cfg : worker_config());
	ns = cols_cfg->nshards;
	tbl_clear(&tbl);
	for (i = 0; i < snap.n; i++) {
		const irow_t *it = &snap.items[i];
		int attr = it->def.state == BS_INDEX_READY      ? C_NORMAL
		           : it->def.state == BS_INDEX_BUILDING ? C_WARN
		                                                : C_DIM;

		r = tbl_add(&tbl, attr);
		tbl_set(&tbl, r, 0, NAN, "%s", it->def.name);
		tbl_set(&tbl, r, 1, NAN, "%s", bs_index_state_name(it->def.state));
		tbl_set(&tbl, r, 2, NAN, "%s", bs_index_format_on(on, sizeof on, &it->def));
		tbl_set(&tbl, r, 3, NAN, "%s", it->def.props[it->def.shard_on].name);
		row_counts(r, it, ns);
		row_progress(r, it, ns);
	}
	tbl_finish(&tbl, ui_filter());
}

/* Below the table: what the numbers are, what is stale and why. */
static int draw_notes(int line, int end, int w)
{
	char age[32];
	int i, stale = 0;
	int64_t oldest = 0;

	for (i = 0; i < snap.n; i++)
		for (int j = 0; snap.items[i].rows_at && j < snap.nshards; j++)
			if (snap.items[i].rows[j] >= 0 && snap.items[i].rows_at[j] < snap.taken_us - 1000000) {
				stale++;
				if (!oldest || snap.items[i].rows_at[j] < oldest)
					oldest = snap.items[i].rows_at[j];
			}
	if (snap.queued && snap.cleaners == 0 && line < end) { /* "queued" with nothing to run it */
		ui_color(C_WARN, true);
		ui_printf(line++, 0, w,
		          "%d backfill job%s queued and no cleaner is running: start `bagstore cleaner`, "
		          "or press B to backfill here",
		          snap.queued, snap.queued == 1 ? "" : "s");
		ui_color(C_WARN, false);
	}
	if ((stale || snap.rows_err[0]) && line < end) {
		ui_color(C_WARN, true);
		if (stale)
			ui_printf(line++, 0, w, "* stale: the shard did not answer; its numbers are from %s. %s",
			          fmt_age(age, sizeof age, oldest), snap.rows_err);
		else
			ui_printf(line++, 0, w, "? not counted: %s", snap.rows_err);
		ui_color(C_WARN, false);
	}
	if (snap.counting && line < end)
		ui_printf(line++, 0, w, "counting %s exactly ... (# cancels)", snap.exact_name);
	else if (snap.count_rc < 0 && line < end)
		ui_printf(line++, 0, w, "exact count of %s: %s", snap.exact_name, snap.count_err);
	else if (exact_shown() && line < end)
		ui_printf(line++, 0, w, "%s: rows counted exactly %s; the others are InnoDB's estimates (~)",
		          snap.exact_name, fmt_age(age, sizeof age, snap.exact_at_us));
	return line;
}

static void ix_draw(int y, int h, int w)
{
	char stale[128], t[64], cnt[32];
	int rows, line;

	snap_lock();
	build();
	ui_stale(KEY_SNAP, snap.taken_us, stale, sizeof stale);
	ui_printf(y, 0, w, "Indexes: %s  (rows: ~ InnoDB's estimates, # counts exactly; as of %s)  %s",
	          tbl_count(cnt, sizeof cnt, &tbl), snap.taken_us ? fmt_time(t, sizeof t, snap.taken_us) : "-", stale);
	rows = tbl.nshown + 1 < h - 4 ? tbl.nshown + 1 : h - 4;
	if (rows < 2)
		rows = 2;
	tbl_draw(&tbl, y + 1, rows, w);
	line = draw_notes(y + 2 + rows, y + h - 1, w);
	if (snap.rc < 0 && line < y + h - 1) {
		ui_color(C_BAD, true);
		ui_printf(line, 0, w, "error: %s", snap.err);
		ui_color(C_BAD, false);
	}
	snap_unlock();
	ui_color(C_DIM, true);
	ui_put(y + h - 1, 0, w,
	       ui.read_only ? "v verify  # count  Enter backfills  ? help"
	                    : "c create  d drop  v verify  V repair  B backfill  # count  Enter backfills  ? help");
	ui_color(C_DIM, false);
}

/* ------------------------------------------------------------ actions */

typedef struct {
	bs_index_t def;
	char name[BS_NAME_MAX + 1];
	char detail[512];
	bool repair;
} ixreq_t;

static void free_req(void *p)
{
	free(p);
}

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
	int rc;

	/* recorded first: a drop cut short (a shard lost, the console quit
	 * during its wait) has disabled the index already */
	worker_audit(st, "index.drop", q->name, q->detail);
	if ((rc = bs_index_drop(st, q->name)) < 0) {
		worker_notify(true, "drop %s failed: %s", q->name, bs_last_error());
		return;
	}
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
		char msg[600];
		snprintf(msg, sizeof msg, "%s", bs_last_error());
		if (d.cut_short[0]) /* rows changed before it failed: audited all the same */
			worker_audit(st, "index.repair", q->name, d.cut_short);
		worker_notify(true, "verify %s failed: %s", q->name, msg);
		return;
	}
	if (q->repair) {
		char det[256];
		snprintf(det, sizeof det, "missing %lld stale %lld orphaned %lld repaired %lld", (long long)d.missing,
		         (long long)d.stale, (long long)d.orphaned, (long long)d.repaired);
		worker_audit(st, "index.repair", q->name, det);
	}
	char fixed[64] = "";
	if (q->repair)
		snprintf(fixed, sizeof fixed, "; %lld index row%s repaired", (long long)d.repaired,
		         d.repaired == 1 ? "" : "s");
	worker_notify(d.missing + d.stale + d.orphaned > 0 && !q->repair,
	              "verify %s: checked %lld, missing %lld, stale %lld, orphaned %lld, misfit %lld%s", q->name,
	              (long long)d.checked, (long long)d.missing, (long long)d.stale, (long long)d.orphaned,
	              (long long)d.misfit, fixed);
	worker_submit(LANE_STATUS, KEY_SNAP, false, work, NULL, NULL);
}

static void do_backfill(bs_store_t *st, void *arg)
{
	ixreq_t *q = arg;

	char did[128];

	if (worker_backfill_resume(st, q->name, did, sizeof did) < 0) {
		worker_notify(true, "backfill %s not started: %s", q->name, bs_last_error());
		return;
	}
	worker_audit(st, "index.backfill", q->name, "launched from the console");
	worker_notify(false, "backfilling %s on a console worker%s%s%s (4 shows it)", q->name, did[0] ? " (" : "", did,
	              did[0] ? ")" : "");
}

/* `#`: the selected index's rows counted by key on the scan lane. */
static void count_work(bs_store_t *st, void *arg)
{
	ixreq_t *q = arg;
	int n = bs_store_nshards(st), rc;
	int64_t *c = calloc((size_t)n, sizeof *c);

	if (!c)
		return;
	rc = bs_count_exact(c, st, q->name, &count_stop);
	snap_lock();
	snap.counting = false;
	snap.count_rc = rc;
	snprintf(snap.count_err, sizeof snap.count_err, "%s", rc < 0 ? bs_last_error() : "");
	if (rc == 0) {
		free(snap.exact);
		snap.exact = c;
		snap.exact_cfg = bs_store_config(st);
		snap.exact_at_us = now_us();
		snap.exact_created_us = q->def.created_us;
		c = NULL;
	}
	snap_unlock();
	free(c);
	if (rc < 0)
		worker_notify(true, "count of %s: %s", q->name, bs_last_error());
	else
		worker_notify(false, "%s: rows counted exactly", q->name);
}

/* ------------------------------------------------------------ create form */

/* create: name, then properties, then shard_on, then the DDL preview; each
 * field is checked as it is entered and asked again, as typed, when wrong */
static struct {
	char name[BS_NAME_MAX + 1];
	char on[256];
	char shard_on[BS_NAME_MAX + 1];
	bs_index_t def;
} form;

static reaction_t form_name(const char *text, void *ctx);
static reaction_t form_on(const char *text, void *ctx);
static reaction_t form_shard_on(const char *text, void *ctx);

static void ask_name(const char *initial)
{
	ui_prompt("create index: name (index_...): ", initial, form_name, NULL);
}

static void ask_on(const char *initial)
{
	ui_prompt("create index: properties (user_id:uuid,title:string(80)): ", initial, form_on, NULL);
}

/* Nothing typed for the operator (text typed after it would be taken as
 * one name with it): Enter takes the first property, which the question
 * names. initial is what was typed, given back when it was refused. */
static void ask_shard_on(const char *initial)
{
	char label[384];

	snprintf(label, sizeof label,
	         "create index: shard_on property (Enter: %.*s, the first): ", (int)strcspn(form.on, ":,"), form.on);
	ui_prompt(label, initial, form_shard_on, NULL);
}

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
	/* the new index is the selected one when it shows up */
	snprintf(tbl.selkey, sizeof tbl.selkey, "%s", form.name);
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
		ui_err("shard_on: %s", bs_last_error());
		ask_shard_on(text);
		return R_REDRAW;
	}
	if (asprintf(&page,
	             "Create index %s on %s, rows sharded by %s, on %d shards.\n"
	             "It starts building (ready at once when the store is empty); writers maintain it,\n"
	             "readers use it once a backfill (B) has covered every row.\n\n"
	             "DDL run on every shard:\n\n%s\n",
	             form.name, form.on, form.def.props[form.def.shard_on].name, ui.nshards, ddl) < 0)
		page = NULL;
	text_open("create index: DDL preview", page ? page : ddl, create_confirm, NULL, "create this index");
	free(page);
	free(ddl);
	return R_REDRAW;
}

static reaction_t form_on(const char *text, void *ctx)
{
	bs_index_t def;
	char first[BS_NAME_MAX + 1];

	(void)ctx;
	if (!text)
		return R_REDRAW;
	snprintf(first, sizeof first, "%.*s", (int)strcspn(text, ":,"), text);
	if (!*text || bs_index_parse(&def, form.name, text, first) < 0) {
		ui_err("properties: %s", *text ? bs_last_error() : "at least one PROP:TYPE");
		ask_on(text);
		return R_REDRAW;
	}
	snprintf(form.on, sizeof form.on, "%s", text);
	ask_shard_on("");
	return R_REDRAW;
}

static reaction_t form_name(const char *text, void *ctx)
{
	bs_index_t def;
	int i;
	bool exists = false;

	(void)ctx;
	if (!text)
		return R_REDRAW;
	if (!*text || bs_index_parse(&def, text, "x:int", "x") < 0) {
		ui_err("name: %s", *text ? bs_last_error() : "an index needs a name");
		ask_name(text);
		return R_REDRAW;
	}
	snap_lock();
	for (i = 0; i < snap.n; i++)
		exists |= strcmp(snap.items[i].def.name, text) == 0;
	snap_unlock();
	if (exists) {
		ui_err("name: index %s exists already (d drops it; or choose another name)", text);
		ask_name(text);
		return R_REDRAW;
	}
	snprintf(form.name, sizeof form.name, "%s", text);
	ask_on(form.on);
	return R_REDRAW;
}

reaction_t indexes_create_form(const char *name, const char *on)
{
	if (!action_enabled(ACT_INDEX_CREATE)) {
		ui_err("read-only: this key changes data and is disabled");
		return R_REDRAW;
	}
	memset(&form, 0, sizeof form);
	if (on)
		snprintf(form.on, sizeof form.on, "%s", on);
	ask_name(name ? name : "");
	return R_REDRAW;
}

/* ------------------------------------------------------------ drop */

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

/* The drop prompt names the index's rows: exact when `#` counted them,
 * else InnoDB's estimate, marked (snap_lock held). */
static void ask_drop(const irow_t *it)
{
	const int64_t *ex = exact_of(it);
	char cnt[64], label[512], rows[128];
	int64_t total = 0;
	int j;
	bool exact = ex != NULL;

	for (j = 0; ex && j < snap.nshards; j++) {
		if (ex[j] < 0)
			exact = false;
		else
			total += ex[j];
	}
	if (exact)
		snprintf(rows, sizeof rows, "%s rows (counted)", fmt_count(cnt, sizeof cnt, total));
	else if (it->unknown)
		snprintf(rows, sizeof rows, "? rows (not counted: a shard did not answer)");
	else if (it->stale) /* numbers kept from shards that did not answer since: say so */
		snprintf(rows, sizeof rows, "~%s rows (InnoDB's estimate, stale on %d shard%s)",
		         fmt_count(cnt, sizeof cnt, it->total), it->stale, it->stale == 1 ? "" : "s");
	else
		snprintf(rows, sizeof rows, "~%s rows (InnoDB's estimate)", fmt_count(cnt, sizeof cnt, it->total));
	snprintf(drop_name, sizeof drop_name, "%s", it->def.name);
	/* an estimate stays marked in the audit too */
	snprintf(drop_what, sizeof drop_what, "drop %s: %s on %d shard%s", it->def.name, rows, snap.nshards,
	         snap.nshards == 1 ? "" : "s");
	snprintf(label, sizeof label, "%s. Type %s to confirm: ", drop_what, it->def.name);
	ui_prompt(label, "", drop_typed, NULL);
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

static reaction_t count_key(const irow_t *it)
{
	ixreq_t *q;
	char name[BS_NAME_MAX + 1];

	/* names copied before the lock goes (the snapshot is the worker's
	 * then) and before the request is handed over (the lane frees it) */
	if (snap.counting) {
		atomic_store(&count_stop, 1);
		snprintf(name, sizeof name, "%s", snap.exact_name);
		snap_unlock();
		ui_msg("cancelling the count of %s", name);
		return R_REDRAW;
	}
	if (!(q = calloc(1, sizeof *q))) {
		snap_unlock();
		return R_REDRAW;
	}
	q->def = it->def;
	snprintf(q->name, sizeof q->name, "%s", it->def.name);
	free(snap.exact);
	snap.exact = NULL;
	snprintf(snap.exact_name, sizeof snap.exact_name, "%s", it->def.name);
	snap.counting = true;
	snap.count_rc = 0;
	snprintf(name, sizeof name, "%s", q->name);
	snap_unlock();
	atomic_store(&count_stop, 0);
	worker_submit(LANE_SCAN, KEY_COUNT, false, count_work, q, free_req);
	ui_msg("counting the rows of %s exactly (# again cancels)", name);
	return R_REDRAW;
}

/* B: only a building index has something to backfill. */
static bool backfill_refused(const irow_t *it)
{
	if (it->def.state == BS_INDEX_BUILDING)
		return false;
	ui_err("%s is %s: nothing to backfill (B works on a building index)", it->def.name,
	       bs_index_state_name(it->def.state));
	return true;
}

static reaction_t on_index(action_t a)
{
	const irow_t *it;
	ixreq_t *q;
	char name[BS_NAME_MAX + 1], crumb[96];

	snap_lock();
	if (!(it = selected())) {
		snap_unlock();
		ui_err("no index selected");
		return R_REDRAW;
	}
	if (a == ACT_EXACT_COUNT)
		return count_key(it); /* unlocks */
	if (a == ACT_INDEX_DROP) {
		ask_drop(it);
		snap_unlock();
		return R_REDRAW;
	}
	if (a == ACT_INDEX_BACKFILL && backfill_refused(it)) {
		snap_unlock();
		return R_REDRAW;
	}
	snprintf(name, sizeof name, "%s", it->def.name);
	snap_unlock();
	if (a == ACT_OPEN) {
		snprintf(crumb, sizeof crumb, "%s > backfills", name);
		ui_push_crumb(&view_backfills, crumb);
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

static reaction_t ix_key(action_t a, int key)
{
	reaction_t r = tbl_key(&tbl, a, key);

	if (r != R_UNHANDLED)
		return r;
	switch (a) {
	case ACT_INDEX_CREATE: return indexes_create_form(NULL, NULL);
	case ACT_INDEX_DROP:
	case ACT_INDEX_VERIFY:
	case ACT_INDEX_REPAIR:
	case ACT_INDEX_BACKFILL:
	case ACT_EXACT_COUNT:
	case ACT_OPEN: return on_index(a);
	default: return R_UNHANDLED;
	}
}

const struct view_ops view_indexes = {
	.name = "indexes",
	.scope = 'I',
	.open = ix_open,
	.reload = ix_reload,
	.draw = ix_draw,
	.key = ix_key,
};

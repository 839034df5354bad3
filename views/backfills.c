/*
 * backfills.c - backfills, live: per job (index, source shard) a progress
 * bar, rows scanned of the total, the rate over the worker's last 10 s and
 * the ETA from it (an estimate, ~; both "-" unless the job is running), the
 * state with the throttle reason (the selected job's in full below), and
 * the worker holding it; pause, resume and cancel go through the jobs table
 * (bs_job_control audits them), so any worker anywhere obeys. Backfills this
 * console runs itself (B on the indexes screen) are marked "here".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "views.h"

#define KEY_SNAP "backfills"

static struct {
	bs_job_list_t jobs;
	int rc, unreachable;
	char err[256];
	int cleaners; /* live cleaner daemons; -1 unknown */
	int64_t taken_us;
} snap;

static table_t tbl;

static const col_t cols[] = {
	{ "JOB", 20, false, 0 },      { "STATE", 20, false, 0 },
	{ "PROGRESS", 23, false, 1 }, { "SCANNED / TOTAL", 19, true, 0 },
	{ "RATE/S", 7, true, 0 },     { "ETA", 7, true, 0 },
	{ "WORKER", 0, false, 2 },
};

static void work(bs_store_t *st, void *arg)
{
	bs_job_list_t jobs = { 0 };
	int unr = 0, rc;

	bs_worker_list_t wl = { 0 };
	int cleaners;

	(void)arg;
	rc = bs_job_list(&jobs, st, &unr);
	cleaners = bs_workers_list(&wl, st, NULL) == 0 ? bs_workers_alive(&wl, "cleaner") : -1;
	bs_worker_list_free(&wl);
	snap_lock();
	snap.cleaners = cleaners;
	if (rc == 0) {
		bs_job_list_free(&snap.jobs);
		snap.jobs = jobs;
	}
	snap.rc = rc;
	snap.unreachable = unr;
	snprintf(snap.err, sizeof snap.err, "%s", rc < 0 ? bs_last_error() : "");
	snap.taken_us = now_us();
	snap_unlock();
	worker_published();
}

static void bf_reload(void)
{
	worker_submit(LANE_STATUS, KEY_SNAP, true, work, NULL, NULL);
}

static void bf_open(void)
{
	static bool init;

	if (!init) {
		tbl_init(&tbl, cols, (int)(sizeof cols / sizeof cols[0]));
		init = true;
	}
}

static void add_job(const bs_job_t *j, bool here)
{
	char a[32], b[32], state[300];
	double frac = j->rows_total > 0 ? (double)j->rows_scanned / (double)j->rows_total : 0;
	bool running = j->state == BS_JOB_RUNNING && j->rate > 0;
	int r, attr;

	if (j->state == BS_JOB_DONE)
		frac = 1;
	if (frac > 1)
		frac = 1;
	attr = j->state == BS_JOB_FAILED                                   ? C_BAD
	       : j->state == BS_JOB_THROTTLED || j->state == BS_JOB_PAUSED ? C_WARN
	       : j->state == BS_JOB_DONE                                   ? C_DIM
	                                                                   : C_NORMAL;
	r = tbl_add(&tbl, attr);
	tbl_set(&tbl, r, 0, NAN, "%s@%s", j->index, shard_name(j->shard));
	snprintf(state, sizeof state, "%s%s%s", bs_job_state_name(j->state), j->reason[0] ? ": " : "", j->reason);
	tbl_set(&tbl, r, 1, j->state, "%s", state);
	/* a rate and an ETA only while the job runs: a throttled or paused job's
	 * last rate says nothing of when it will end; the ETA is an estimate */
	progress_t p = { .frac = frac,
		         .width = 14,
		         .decimals = 1,
		         .rate = running ? j->rate : -1,
		         .eta_s = running ? j->eta_s : -1,
		         .eta_key = running                   ? j->eta_s
		                    : j->state == BS_JOB_DONE ? 0
		                                              : -1 };
	tbl_set_progress(&tbl, r, 2, 4, &p);
	tbl_set(&tbl, r, 3, (double)j->rows_scanned, "%s / %s", fmt_count(a, sizeof a, j->rows_scanned),
	        fmt_count(b, sizeof b, j->rows_total));
	if (j->worker_host[0])
		tbl_set(&tbl, r, 6, NAN, "%s:%d%s", j->worker_host, j->worker_pid, here ? " (here)" : "");
	else
		tbl_set(&tbl, r, 6, NAN, "%s", here ? "(here)" : "-");
}

static void build(local_backfill_t *loc, int nloc)
{
	int i, k;

	tbl_clear(&tbl);
	for (i = 0; i < snap.jobs.len; i++) {
		const bs_job_t *j = &snap.jobs.items[i];
		bool here = false;

		for (k = 0; k < nloc; k++)
			if (loc[k].running && strcmp(loc[k].index, j->index) == 0 && j->worker_pid == (int)getpid())
				here = true;
		add_job(j, here);
	}
	tbl_finish(&tbl, ui_filter());
}

static void bf_draw(int y, int h, int w)
{
	static local_backfill_t loc[16];
	char stale[128], t[64], cnt[32];
	int nloc = worker_backfills(loc, 16), i, line, queued = 0, hint;

	snap_lock();
	for (i = 0; i < snap.jobs.len; i++)
		queued += snap.jobs.items[i].state == BS_JOB_QUEUED;
	hint = queued && snap.cleaners == 0; /* jobs wait and nothing will run them */
	if (hint)
		h--;
	build(loc, nloc);
	ui_stale(KEY_SNAP, snap.taken_us, stale, sizeof stale);
	ui_printf(y, 0, w, "Backfills: %s jobs (as of %s)  %s", tbl_count(cnt, sizeof cnt, &tbl),
	          snap.taken_us ? fmt_time(t, sizeof t, snap.taken_us) : "-", stale);
	tbl_draw(&tbl, y + 1, h - 4 - (nloc > 0 ? 1 : 0), w);
	line = y + h - 3 - (nloc > 0 ? 1 : 0);
	{
		/* the selected job's state in full (the STATE column cuts reasons
		 * short), and how many others have a reason to read */
		int row = tbl_selected(&tbl), other = -1, others = 0;
		char text[1024];
		for (i = 0; i < tbl.nshown; i++)
			if (tbl.order[i] != row && strchr(tbl_cell(&tbl, tbl.order[i], 1), ':') && !others++)
				other = tbl.order[i];
		snprintf(text, sizeof text, "selected %s: %s", row >= 0 ? tbl_cell(&tbl, row, 0) : "-",
		         row >= 0 ? tbl_cell(&tbl, row, 1) : "none");
		if (other >= 0) /* a job that is not selected and says why it waits or failed */
			snprintf(text + strlen(text), sizeof text - strlen(text), "   |   %s: %s%s",
			         tbl_cell(&tbl, other, 0), tbl_cell(&tbl, other, 1),
			         others > 1 ? " (and others: select them)" : "");
		ui_put(line, 0, w, text);
	}
	line++;
	if (snap.rc < 0) {
		ui_color(C_BAD, true);
		ui_printf(line, 0, w, "error: %s", snap.err);
		ui_color(C_BAD, false);
	} else if (snap.unreachable) {
		const char *first = snap.jobs.unreachable_first;
		ui_printf(line, 0, w, "%d shard(s) unreachable: their jobs are not listed%s%s%s", snap.unreachable,
		          *first ? " (" : "", first, *first ? ")" : "");
	}
	line++;
	if (nloc > 0) {
		int running = 0;
		const local_backfill_t *last = NULL; /* the last one that failed or was cancelled */

		for (i = 0; i < nloc; i++) {
			running += loc[i].running;
			if ((loc[i].error[0] || loc[i].cancelled) && !loc[i].running &&
			    (!last || loc[i].finished_us > last->finished_us))
				last = &loc[i];
		}
		if (last && last->cancelled) /* a cancel is a cancel, not an error */
			ui_printf(line++, 0, w,
			          "this console runs %d backfill%s; %s: cancelled by an operator (B resumes it)",
			          running, running == 1 ? "" : "s", last->index);
		else
			ui_printf(line++, 0, w, "this console runs %d backfill%s%s%s%s%s", running,
			          running == 1 ? "" : "s", last ? "; last error (" : "", last ? last->index : "",
			          last ? "): " : "", last ? last->error : "");
	}
	snap_unlock();
	if (hint) {
		ui_color(C_WARN, true);
		ui_printf(y + h - 1, 0, w,
		          "%d job%s queued and no cleaner is running: start `bagstore cleaner`, "
		          "or press B to backfill here",
		          queued, queued == 1 ? "" : "s");
		ui_color(C_WARN, false);
		h++;
	}
	ui_color(C_DIM, true);
	ui_put(y + h - 1, 0, w,
	       ui.read_only ? "? help" : "p pause  r resume  x cancel  (every job of the index)  ? help");
	ui_color(C_DIM, false);
}

typedef struct {
	char index[BS_NAME_MAX + 1];
	char action[16];
} jreq_t;

static void do_control(bs_store_t *st, void *arg)
{
	jreq_t *q = arg;

	if (strcmp(q->action, "run") == 0) {
		char did[128];

		if (worker_backfill_resume(st, q->index, did, sizeof did) < 0) {
			worker_notify(true, "backfill %s not started: %s", q->index, bs_last_error());
			return;
		}
		worker_audit(st, "index.backfill", q->index, "run from the console's backfills screen");
		worker_notify(false, "this console now works the backfill of %s%s%s%s", q->index, did[0] ? " (" : "",
		              did, did[0] ? ")" : "");
		work(st, NULL);
		return;
	}
	/* the engine audits the change (backfill.pause ...): one row, whichever
	 * front end made it */
	if (bs_job_control(st, q->index, q->action) < 0) {
		worker_notify(true, "%s %s failed: %s", q->action, q->index, bs_last_error());
		return;
	}
	worker_notify(false, "%s: every job of %s (within one chunk)", q->action, q->index);
	work(st, NULL);
}

static char cancel_index[BS_NAME_MAX + 1];

static void submit_control(const char *index, const char *action)
{
	jreq_t *q = calloc(1, sizeof *q);

	if (!q)
		return;
	snprintf(q->index, sizeof q->index, "%s", index);
	snprintf(q->action, sizeof q->action, "%s", action);
	worker_submit(LANE_ACTION, NULL, false, do_control, q, free);
}

static reaction_t cancel_typed(const char *text, void *ctx)
{
	(void)ctx;
	if (!text)
		return R_REDRAW;
	if (strcmp(text, cancel_index) != 0) {
		ui_err("not cancelled: the name typed was not %s", cancel_index);
		return R_REDRAW;
	}
	submit_control(cancel_index, "cancel");
	return R_REDRAW;
}

static reaction_t bf_key(action_t a, int key)
{
	reaction_t r = tbl_key(&tbl, a, key);
	int row, i, njobs = 0; /* one job per source shard */
	char index[BS_NAME_MAX + 1], label[300], *at;
	int64_t scanned = 0, total = 0;

	if (r != R_UNHANDLED)
		return r;
	if (a != ACT_JOB_PAUSE && a != ACT_JOB_RESUME && a != ACT_JOB_CANCEL && a != ACT_INDEX_BACKFILL)
		return R_UNHANDLED;
	if ((row = tbl_selected(&tbl)) < 0) {
		ui_err("no backfill selected");
		return R_REDRAW;
	}
	snprintf(index, sizeof index, "%s", tbl_cell(&tbl, row, 0));
	if ((at = strrchr(index, '@')))
		*at = 0;
	if (a == ACT_INDEX_BACKFILL) {
		submit_control(index, "run");
		ui_msg("running the backfill of %s on a console worker ...", index);
		return R_REDRAW;
	}
	if (a == ACT_JOB_PAUSE || a == ACT_JOB_RESUME) {
		submit_control(index, a == ACT_JOB_PAUSE ? "pause" : "resume");
		ui_msg("%s %s ...", a == ACT_JOB_PAUSE ? "pausing" : "resuming", index);
		return R_REDRAW;
	}
	snap_lock();
	for (i = 0; i < snap.jobs.len; i++) {
		if (strcmp(snap.jobs.items[i].index, index) != 0)
			continue;
		njobs++;
		scanned += snap.jobs.items[i].rows_scanned;
		total += snap.jobs.items[i].rows_total;
	}
	snap_unlock();
	snprintf(cancel_index, sizeof cancel_index, "%s", index);
	{
		char a1[32], a2[32];
		snprintf(label, sizeof label,
		         "cancel backfill %s: %d job%s on %d shard%s, %s of %s rows scanned. Type %s to confirm: ",
		         index, njobs, njobs == 1 ? "" : "s", njobs, njobs == 1 ? "" : "s",
		         fmt_count(a1, sizeof a1, scanned), fmt_count(a2, sizeof a2, total), index);
	}
	ui_prompt(label, "", cancel_typed, NULL);
	return R_REDRAW;
}

const struct view_ops view_backfills = {
	.name = "backfills",
	.scope = 'B',
	.open = bf_open,
	.reload = bf_reload,
	.draw = bf_draw,
	.key = bf_key,
};

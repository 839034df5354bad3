/*
 * cleaner.c - the cleaner screen: per shard the repair watermark, lag now,
 * a sparkline of the lag history on a real time axis (its span in the
 * column's title; a column with no sample is a gap, drawn blank; `max` is
 * the largest value drawn), rows repaired per second over the last 30 s of
 * refreshes and in all, and the last pass; below, which workers hold which
 * backfill jobs, and the worker registry (bs_workers_list: every cleaner
 * and console at work, live or dead), with a hint when jobs wait and no
 * cleaner runs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views.h"

#define KEY_SNAP "cleaner"

static struct {
	bs_lag_t *lag;
	int n;
	int lag_rc;
	char lag_err[256];
	bs_job_list_t jobs;
	int jobs_rc, unreachable;
	char jobs_err[256];
	bs_worker_list_t workers;
	int workers_rc;
	char workers_err[256];
	int64_t taken_us;
} snap;

static table_t tbl;

/* The lag column's title says its real span ("LAG, LAST 2m"), set as drawn. */
static char lag_title[64] = "LAG, LAST MINUTES";

static const col_t cols[] = {
	{ "SHARD", 8, false, 0 },    { "WATERMARK (UTC)", 19, false, 1 }, { "LAG", 8, true, 0 },
	{ lag_title, 38, false, 0 }, { "REPAIRS/S", 9, true, 1 },         { "REPAIRED", 10, true, 2 },
	{ "FILLED", 8, true, 2 },    { "LAST PASS", 0, false, 2 },
};
#define NCOLS ((int)(sizeof cols / sizeof cols[0]))
#define SPARK_W 24 /* columns of the lag sparkline */
#define RATE_WINDOW_US 30000000

/* UI thread: each shard's repaired-rows counter as seen at each refresh,
 * for a rate over the last 30 s rather than the last pass's burst. */
#define NOBS 64
static struct {
	char shard[BS_NAME_MAX + 1]; /* whose: a reload may move shards about */
	int64_t at[NOBS], total[NOBS];
	int n;
} obs[64];
static int64_t obs_seen;

static void work(bs_store_t *st, void *arg)
{
	int n = bs_store_nshards(st), rc, jrc, wrc, unr = 0;
	bs_lag_t *lag = calloc((size_t)n, sizeof *lag);
	bs_job_list_t jobs = { 0 };
	bs_worker_list_t wl = { 0 };
	char lag_err[256], jobs_err[256], workers_err[256];

	(void)arg;
	if (!lag)
		return;
	/* each message taken before the next call replaces it */
	rc = bs_lag(lag, st);
	snprintf(lag_err, sizeof lag_err, "%s", rc < 0 ? bs_last_error() : "");
	jrc = bs_job_list(&jobs, st, &unr);
	snprintf(jobs_err, sizeof jobs_err, "%s", jrc < 0 ? bs_last_error() : "");
	wrc = bs_workers_list(&wl, st, NULL);
	snprintf(workers_err, sizeof workers_err, "%s", wrc < 0 ? bs_last_error() : "");
	snap_lock();
	bs_worker_list_free(&snap.workers);
	snap.workers = wl;
	snap.workers_rc = wrc;
	memcpy(snap.workers_err, workers_err, sizeof workers_err);
	free(snap.lag);
	snap.lag = lag;
	snap.n = n;
	snap.lag_rc = rc;
	memcpy(snap.lag_err, lag_err, sizeof lag_err);
	bs_job_list_free(&snap.jobs);
	snap.jobs = jobs;
	snap.jobs_rc = jrc;
	memcpy(snap.jobs_err, jobs_err, sizeof jobs_err);
	snap.unreachable = unr;
	snap.taken_us = now_us();
	snap_unlock();
	worker_published();
}

static void cl_reload(void)
{
	worker_submit(LANE_STATUS, KEY_SNAP, true, work, NULL, NULL);
}

static void cl_open(void)
{
	static bool init;

	if (!init) {
		tbl_init(&tbl, cols, NCOLS);
		init = true;
	}
}

/* The lag history in SPARK_W columns of bin_s seconds each, the newest on
 * the right, ending at the shard's now: a column holds the largest sample
 * taken in its time, or -1 when none was (a gap: no repair pass ran). */
static double lag_bins(double *out, const bs_lag_t *l, double bin_s)
{
	int64_t end = l->now_us, span = (int64_t)(bin_s * 1e6) * SPARK_W;
	double max = 0;
	int i, k;

	for (k = 0; k < SPARK_W; k++)
		out[k] = -1;
	for (i = 0; i < l->nhistory; i++) {
		int64_t age = end - l->history_at_us[i];
		if (age < 0)
			age = 0;
		if (age >= span)
			continue;
		k = SPARK_W - 1 - (int)(age / (int64_t)(bin_s * 1e6));
		if (l->history[i] > out[k])
			out[k] = l->history[i];
		if (l->history[i] > max)
			max = l->history[i];
	}
	return max;
}

/* Seconds a column stands for: the history's span over the columns, at
 * least two sample steps (so that a sample a little late is no gap), on a
 * round value. */
static double bin_seconds(void)
{
	static const double nice[] = { 2, 4, 5, 10, 15, 30, 60, 120, 300 };
	double span = 0, step = 1, want;
	int i;

	for (i = 0; i < snap.n; i++) {
		const bs_lag_t *l = &snap.lag[i];
		if (l->nhistory > 1 && (double)(l->now_us - l->history_at_us[0]) / 1e6 > span)
			span = (double)(l->now_us - l->history_at_us[0]) / 1e6;
		if (l->history_step_s > step)
			step = l->history_step_s;
	}
	want = span / SPARK_W;
	if (want < 2 * step)
		want = 2 * step;
	for (i = 0; i < (int)(sizeof nice / sizeof nice[0]) - 1 && nice[i] < want; i++)
		;
	return nice[i];
}

/* A new snapshot's counters into obs (snap_lock held). */
static void obs_update(void)
{
	int i;

	if (obs_seen == snap.taken_us)
		return;
	obs_seen = snap.taken_us;
	for (i = 0; i < snap.n && i < 64; i++) {
		const bs_lag_t *l = &snap.lag[i];
		if (!l->reachable || !l->now_us)
			continue;
		if (strcmp(obs[i].shard, l->shard)) { /* another shard at this place (a reload) */
			snprintf(obs[i].shard, sizeof obs[i].shard, "%s", l->shard);
			obs[i].n = 0;
		}
		if (obs[i].n && l->repairs_total < obs[i].total[obs[i].n - 1])
			obs[i].n = 0; /* the counter went back (re-created): start over */
		if (obs[i].n == NOBS) {
			memmove(obs[i].at, obs[i].at + 1, sizeof obs[i].at[0] * (NOBS - 1));
			memmove(obs[i].total, obs[i].total + 1, sizeof obs[i].total[0] * (NOBS - 1));
			obs[i].n--;
		}
		obs[i].at[obs[i].n] = l->now_us;
		obs[i].total[obs[i].n++] = l->repairs_total;
	}
}

/* Rows repaired per second over the last 30 s of refreshes; -1 when the
 * refreshes seen span less than 5 s. */
static double repair_rate(int i)
{
	int k, last;

	if (i >= 64 || obs[i].n < 2)
		return -1;
	last = obs[i].n - 1;
	/* refreshes missed (another screen, a pause): the last two apart by
	 * more than the window are no rate of its last 30 s */
	if (obs[i].at[last] - obs[i].at[last - 1] > RATE_WINDOW_US)
		return -1;
	for (k = last - 1; k > 0 && obs[i].at[last] - obs[i].at[k - 1] <= RATE_WINDOW_US; k--)
		;
	double dt = (double)(obs[i].at[last] - obs[i].at[k]) / 1e6;
	return dt >= 5 ? (double)(obs[i].total[last] - obs[i].total[k]) / dt : -1;
}

static void build(double bin_s)
{
	int i, r;
	char t[64], s[64], spark[512], age[64], cnt[32];
	double bins[SPARK_W];

	tbl_clear(&tbl);
	for (i = 0; i < snap.n; i++) {
		const bs_lag_t *l = &snap.lag[i];
		double max, rate;

		r = tbl_add(&tbl, !l->reachable ? C_BAD : l->lag_s > 10 ? C_WARN : C_NORMAL);
		tbl_set(&tbl, r, 0, NAN, "%s", l->shard);
		if (!l->reachable) {
			tbl_set(&tbl, r, 1, NAN, "unreachable");
			continue;
		}
		tbl_set(&tbl, r, 1, (double)l->watermark_us, "%s",
		        l->watermark_us ? fmt_time(t, sizeof t, l->watermark_us) : "never ran");
		tbl_set(&tbl, r, 2, l->watermark_us ? l->lag_s : -1, "%s",
		        l->watermark_us ? fmt_secs(s, sizeof s, l->lag_s) : "-");
		max = lag_bins(bins, l, bin_s);
		ui_sparkline(spark, sizeof spark, bins, SPARK_W, max);
		if (l->nhistory)
			tbl_set(&tbl, r, 3, max, "%s max %s", spark, fmt_secs(s, sizeof s, max));
		else
			tbl_set(&tbl, r, 3, -1, "(no sample yet)");
		rate = repair_rate(i);
		if (rate < 0)
			tbl_set(&tbl, r, 4, -1, "-");
		else
			tbl_set(&tbl, r, 4, rate, "%.1f", rate);
		tbl_set(&tbl, r, 5, (double)l->repairs_total, "%s", fmt_count(cnt, sizeof cnt, l->repairs_total));
		/* rows of indexes still building: backfill's work, not drift */
		tbl_set(&tbl, r, 6, (double)l->fills_total, "%s", fmt_count(cnt, sizeof cnt, l->fills_total));
		/* no pass ran: no count of its entities either, not a 0 */
		if (l->last_pass_us > 0)
			tbl_set(&tbl, r, 7, (double)l->last_pass_us, "%s, %lld entities",
			        fmt_age(age, sizeof age, l->last_pass_us), (long long)l->last_pass_rows);
		else
			tbl_set(&tbl, r, 7, 0, "never");
	}
	tbl_finish(&tbl, ui_filter());
}

/* The worker registry, from line to end (under snap_lock): who works, how
 * fresh its heartbeat is, what it does; and the hint when jobs are queued
 * while no cleaner runs. */
static void draw_registry(int line, int end, int w)
{
	int i, queued = 0;
	char up[32], hb[32];

	for (i = 0; i < snap.jobs.len; i++)
		queued += snap.jobs.items[i].state == BS_JOB_QUEUED;
	if (queued && snap.workers_rc == 0 && !bs_workers_alive(&snap.workers, "cleaner") && line < end) {
		ui_color(C_WARN, true);
		ui_printf(line++, 0, w,
		          "%d job%s queued and no cleaner is running: start `bagstore cleaner`, "
		          "or press B on the indexes screen",
		          queued, queued == 1 ? "" : "s");
		ui_color(C_WARN, false);
	}
	if (line >= end)
		return;
	ui_color(C_HEADER, true);
	ui_printf(line++, 0, w, "%-24s %-8s %-8s %-9s %-14s %-22s %-10s %s", "REGISTERED WORKER", "KIND", "VERSION",
	          "UP", "HEARTBEAT", "JOBS", "REPAIRS", "METRICS");
	ui_color(C_HEADER, false);
	if (snap.workers_rc < 0 && line < end) {
		ui_color(C_BAD, true);
		ui_printf(line++, 0, w, "workers not read: %s", snap.workers_err);
		ui_color(C_BAD, false);
		return;
	}
	for (i = 0; i < snap.workers.len && line < end; i++) {
		const bs_worker_info_t *x = &snap.workers.items[i];
		char who[300];
		snprintf(who, sizeof who, "%s:%d", x->host, x->pid);
		fmt_secs(up, sizeof up, (double)(now_us() - x->started_us) / 1e6);
		fmt_secs(hb, sizeof hb, x->age_s);
		if (!x->alive)
			ui_color(C_BAD, true);
		ui_printf(line++, 0, w, "%-24.24s %-8s %-8s %-9s %-5s%-9s %-22.22s %-10.10s %s", who, x->kind,
		          x->version, up, x->alive ? "" : "DEAD", hb, x->jobs[0] ? x->jobs : "-",
		          x->repair[0] ? x->repair : "-", x->metrics[0] ? x->metrics : "-");
		if (!x->alive)
			ui_color(C_BAD, false);
	}
	if (!snap.workers.len && line < end)
		ui_put(line++, 0, w, "(no worker registered: no cleaner runs, no console runs backfills)");
}

static void cl_draw(int y, int h, int w)
{
	char stale[128], t[64], span[32], bin[32];
	int rows, line, i, j;
	bool any = false;
	double bin_s;

	snap_lock();
	bin_s = bin_seconds();
	fmt_secs(span, sizeof span, bin_s * SPARK_W);
	snprintf(lag_title, sizeof lag_title, "LAG, LAST %s", span);
	obs_update();
	build(bin_s);
	ui_stale(KEY_SNAP, snap.taken_us, stale, sizeof stale);
	ui_printf(y, 0, w,
	          "Cleaner: repair lag per shard (as of %s; a column is %s, its largest sample; "
	          "blank: no sample, no pass ran)  %s",
	          snap.taken_us ? fmt_time(t, sizeof t, snap.taken_us) : "-", fmt_secs(bin, sizeof bin, bin_s), stale);
	rows = tbl.nshown + 1;
	if (rows > h / 2)
		rows = h / 2;
	tbl_draw(&tbl, y + 1, rows, w);
	line = y + rows + 2;
	if (snap.lag_rc < 0 && line < y + h)
		ui_printf(line++, 0, w, "error: %s", snap.lag_err);
	ui_color(C_BAD, true);
	for (i = 0; i < snap.n && line < y + h; i++)
		if (!snap.lag[i].reachable && snap.lag[i].error[0])
			ui_printf(line++, 0, w, "%s unreachable: %s", snap.lag[i].shard, snap.lag[i].error);
	ui_color(C_BAD, false);
	ui_color(C_HEADER, true);
	ui_printf(line++, 0, w, "%-24s %-22s %-8s %-10s %s", "WORKER", "INDEX", "SHARD", "STATE", "HEARTBEAT");
	ui_color(C_HEADER, false);
	/* workers (host:pid) and the jobs they hold, grouped */
	for (i = 0; i < snap.jobs.len && line < y + h; i++) {
		const bs_job_t *jb = &snap.jobs.items[i];
		char who[96], age[64];

		if (!jb->worker_host[0] || jb->state == BS_JOB_DONE || jb->state == BS_JOB_CANCELLED)
			continue;
		snprintf(who, sizeof who, "%s:%d", jb->worker_host, jb->worker_pid);
		for (j = 0; j < i; j++) {
			const bs_job_t *o = &snap.jobs.items[j];
			if (strcmp(o->worker_host, jb->worker_host) == 0 && o->worker_pid == jb->worker_pid &&
			    o->state != BS_JOB_DONE && o->state != BS_JOB_CANCELLED)
				break;
		}
		ui_printf(line++, 0, w, "%-24s %-22s %-8s %-10s %s", j < i ? "" : who, jb->index, shard_name(jb->shard),
		          bs_job_state_name(jb->state), fmt_age(age, sizeof age, jb->heartbeat_us));
		any = true;
	}
	if (snap.jobs_rc < 0 && line < y + h) {
		ui_color(C_BAD, true);
		ui_printf(line++, 0, w, "jobs not read: %s", snap.jobs_err);
		ui_color(C_BAD, false);
	} else if (!any && line < y + h) {
		ui_put(line++, 0, w, "(no worker holds a job)");
	}
	if (snap.unreachable && line < y + h)
		ui_printf(line++, 0, w, "%d shard(s) unreachable: their jobs are not listed", snap.unreachable);
	draw_registry(line + 1, y + h, w);
	snap_unlock();
}

static reaction_t cl_key(action_t a, int key)
{
	return tbl_key(&tbl, a, key);
}

const struct view_ops view_cleaner = {
	.name = "cleaner",
	.scope = 'C',
	.open = cl_open,
	.reload = cl_reload,
	.draw = cl_draw,
	.key = cl_key,
};

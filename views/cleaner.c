/*
 * cleaner.c - the cleaner screen: per shard the repair watermark, lag now,
 * a sparkline of lag over the last minutes (bs_lag history), repairs per
 * second and the last pass; below, which workers hold which backfill jobs.
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
	int64_t taken_us;
} snap;

static table_t tbl;

static const col_t cols[] = {
	{"SHARD", 8, false}, {"WATERMARK (UTC)", 19, false}, {"LAG", 8, true},
	{"LAG, LAST MINUTES", 42, false}, {"REPAIRS/S", 9, true}, {"LAST PASS", 0, false},
};

static void work(bs_store_t *st, void *arg)
{
	int n = bs_store_nshards(st), rc, jrc, unr = 0;
	bs_lag_t *lag = calloc((size_t)n, sizeof *lag);
	bs_job_list_t jobs = {0};
	char lag_err[256], jobs_err[256];

	(void)arg;
	if (!lag)
		return;
	/* each message taken before the next call replaces it */
	rc = bs_lag(lag, st);
	snprintf(lag_err, sizeof lag_err, "%s", rc < 0 ? bs_last_error() : "");
	jrc = bs_job_list(&jobs, st, &unr);
	snprintf(jobs_err, sizeof jobs_err, "%s", jrc < 0 ? bs_last_error() : "");
	snap_lock();
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
		tbl_init(&tbl, cols, (int)(sizeof cols / sizeof cols[0]));
		init = true;
	}
}

/* The last `width` samples as a sparkline scaled to their maximum. */
static void sparkline(char *buf, size_t n, const double *h, int nh, int width)
{
	static const char *blocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
	static const char ascii[] = "_.-~=*#@";
	double max = 0;
	int i, start = nh > width ? nh - width : 0;
	size_t o = 0;

	buf[0] = 0;
	for (i = start; i < nh; i++)
		if (h[i] > max)
			max = h[i];
	for (i = start; i < nh && o + 4 < n; i++) {
		int k = max > 0 ? (int)(h[i] / max * 7.0 + 0.5) : 0;
		if (k < 0)
			k = 0;
		if (k > 7)
			k = 7;
		if (ui.ascii)
			buf[o++] = ascii[k];
		else
			o += (size_t)snprintf(buf + o, n - o, "%s", blocks[k]);
	}
	buf[o] = 0;
}

static void build(void)
{
	int i, r;
	char t[64], s[64], spark[512], age[64];

	tbl_clear(&tbl);
	for (i = 0; i < snap.n; i++) {
		const bs_lag_t *l = &snap.lag[i];
		double max = 0;
		int k;

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
		for (k = 0; k < l->nhistory; k++)
			if (l->history[k] > max)
				max = l->history[k];
		sparkline(spark, sizeof spark, l->history, l->nhistory, 32);
		tbl_set(&tbl, r, 3, max, "%s%s max %s", spark, l->nhistory ? "" : "(no history)",
		        fmt_secs(s, sizeof s, max));
		tbl_set(&tbl, r, 4, l->repairs_per_s, "%.1f", l->repairs_per_s);
		tbl_set(&tbl, r, 5, (double)l->last_pass_us, "%s, %lld entities",
		        fmt_age(age, sizeof age, l->last_pass_us), (long long)l->last_pass_rows);
	}
	tbl_finish(&tbl, ui_filter());
}

static void cl_draw(int y, int h, int w)
{
	char stale[128], t[64], step[32];
	int rows, line, i, j;
	bool any = false;

	snap_lock();
	build();
	ui_stale(KEY_SNAP, snap.taken_us, stale, sizeof stale);
	ui_printf(y, 0, w, "Cleaner: repair lag per shard (as of %s; one sample every %s)  %s",
	          snap.taken_us ? fmt_time(t, sizeof t, snap.taken_us) : "-",
	          fmt_secs(step, sizeof step, snap.n ? snap.lag[0].history_step_s : 0), stale);
	rows = tbl.nshown + 1;
	if (rows > h / 2)
		rows = h / 2;
	tbl_draw(&tbl, y + 1, rows, w);
	line = y + rows + 2;
	if (snap.lag_rc < 0 && line < y + h)
		ui_printf(line++, 0, w, "error: %s", snap.lag_err);
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
		ui_printf(line++, 0, w, "%-24s %-22s %-8s %-10s %s", j < i ? "" : who, jb->index,
		          shard_name(jb->shard),
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
	snap_unlock();
}

static reaction_t cl_key(action_t a, int key)
{
	return tbl_key(&tbl, a, key);
}

const struct view_ops view_cleaner = {
	.name = "cleaner", .scope = 'C', .open = cl_open, .reload = cl_reload,
	.draw = cl_draw, .key = cl_key,
};

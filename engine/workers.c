/*
 * workers.c - the worker registry: bagstore_workers, a row per running
 * cleaner (and console running backfills) on every shard, kept fresh by a
 * heartbeat, listed by bs_workers_list.
 *
 * A worker's row is written on every shard, so that one shard down hides
 * no worker. Each shard gets a heartbeat thread of its own with a store of
 * its own (opened over a copy of the configuration whose timeouts are
 * capped), so that a hung shard holds up only its own heartbeat, and a
 * stop waits at most the capped timeouts for it. Heartbeats are stamped
 * with the shard's clock (NOW(6)) and ages are measured on the same clock,
 * so clock skew between hosts never makes a live worker look dead.
 */
#include "cleaner.h"

#include <mysqld_error.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CAP_TIMEOUT_S 2.0
#define CLEAR_EVERY 60 /* heartbeats between two deletions of long-dead rows */

typedef struct {
	struct bs_worker *w;
	int shard;
	pthread_t tid;
	bool started;
	bool ok;       /* the last heartbeat took (under w->mu) */
	char err[256]; /* why not (under w->mu) */
} beat_t;

struct bs_worker {
	bs_config_t cfg; /* a shallow copy: the caller's shards, capped timeouts */
	char id[33], kind[16], host[256], metrics[256];
	int pid;
	int64_t started_us;
	pthread_mutex_t mu; /* what follows */
	pthread_cond_t cv;
	bool stopping;
	char jobs[1024], repair[1024];
	beat_t *beats;
	int n;
};

/* The row's INSERT (or refresh) on one shard. */
static void beat_sql(bs_buf_t *b, struct bs_worker *w)
{
	char jobs[1024], repair[1024];

	pthread_mutex_lock(&w->mu);
	memcpy(jobs, w->jobs, sizeof jobs);
	memcpy(repair, w->repair, sizeof repair);
	pthread_mutex_unlock(&w->mu);
	bs__buf_puts(b, "INSERT INTO bagstore_workers (worker_id, kind, host, pid, version, started_us, heartbeat,"
	                " jobs, repair_shards, metrics) VALUES (");
	bs__buf_hex(b, w->id, strlen(w->id));
	bs__buf_puts(b, ",");
	bs__buf_hex(b, w->kind, strlen(w->kind));
	bs__buf_puts(b, ",");
	bs__buf_hex(b, w->host, strlen(w->host));
	bs__buf_printf(b, ",%d,", w->pid);
	bs__buf_hex(b, BS_VERSION, strlen(BS_VERSION));
	bs__buf_printf(b, ",%lld,NOW(6),", (long long)w->started_us);
	bs__buf_hex(b, jobs, strlen(jobs));
	bs__buf_puts(b, ",");
	bs__buf_hex(b, repair, strlen(repair));
	bs__buf_puts(b, ",");
	bs__buf_hex(b, w->metrics, strlen(w->metrics));
	bs__buf_puts(b, ") ON DUPLICATE KEY UPDATE heartbeat=NOW(6), jobs=VALUES(jobs),"
	                " repair_shards=VALUES(repair_shards), metrics=VALUES(metrics)");
}

static int beat_once(bs_store_t *st, beat_t *bt, unsigned count)
{
	bs_buf_t b = { 0 };
	int rc;

	beat_sql(&b, bt->w);
	/* rows of workers dead for long, now and then (any live worker does it) */
	if (count % CLEAR_EVERY == 0)
		bs__buf_printf(&b, ";DELETE FROM bagstore_workers WHERE heartbeat<NOW(6)-INTERVAL %d SECOND",
		               (int)BS_WORKER_CLEAR_S);
	/* the shard's identity first (once per connection): servers swapped
	 * under a running worker take no heartbeat of it */
	if (!(rc = bs__buf_ok(&b)) && !(rc = bs__shard_check(st, bt->shard)) &&
	    (rc = bs__shard_exec(st, bt->shard, b.ptr, b.len)) &&
	    bs__shard_last_errno(st, bt->shard) == ER_NO_SUCH_TABLE) {
		char label[192];
		rc = bs_error(BS_ECONFIG,
		              "%s: no worker registry (bagstore_workers): run `bagstore init` once with "
		              "this version",
		              bs__shard_label(label, sizeof label, &st->shards[bt->shard]));
	}
	bs__buf_free(&b);
	return rc;
}

static void beat_note(beat_t *bt, int rc)
{
	pthread_mutex_lock(&bt->w->mu);
	bt->ok = rc == 0;
	snprintf(bt->err, sizeof bt->err, "%s", rc ? bs_last_error() : "");
	pthread_mutex_unlock(&bt->w->mu);
}

/* Wait one heartbeat interval; false when asked to stop. */
static bool beat_wait(struct bs_worker *w)
{
	struct timespec ts;
	bool go;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* the cv's clock: a wall clock stepped back stalls nothing */
	ts.tv_sec += (time_t)BS_WORKER_HEARTBEAT_S;
	pthread_mutex_lock(&w->mu);
	if (!w->stopping)
		pthread_cond_timedwait(&w->cv, &w->mu, &ts);
	go = !w->stopping;
	pthread_mutex_unlock(&w->mu);
	return go;
}

static void *beat_thread(void *p)
{
	beat_t *bt = p;
	struct bs_worker *w = bt->w;
	bs_store_t *st = NULL;
	bs_buf_t b = { 0 };
	unsigned count = 0;
	int rc;

	mysql_thread_init();
	if ((rc = bs_store_open(&st, &w->cfg))) {
		beat_note(bt, rc);
		goto done;
	}
	do
		beat_note(bt, beat_once(st, bt, count++));
	while (beat_wait(w));
	/* a clean exit: the row goes */
	bs__buf_puts(&b, "DELETE FROM bagstore_workers WHERE worker_id=");
	bs__buf_hex(&b, w->id, strlen(w->id));
	if (!bs__buf_ok(&b) && !bs__shard_check(st, bt->shard))
		bs__shard_exec(st, bt->shard, b.ptr, b.len);
	bs__buf_free(&b);
done:
	bs_store_free(st);
	mysql_thread_end();
	return NULL;
}

static double cap(double s)
{
	return s > CAP_TIMEOUT_S ? CAP_TIMEOUT_S : s;
}

int bs_worker_start(bs_worker_t **out, const bs_config_t *cfg, const char *kind, const char *metrics)
{
	struct bs_worker *w = calloc(1, sizeof *w);
	bs_id_t id;

	*out = NULL;
	if (!w || !(w->beats = calloc((size_t)cfg->nshards, sizeof *w->beats))) {
		free(w);
		return bs__oom();
	}
	w->cfg = *cfg;
	w->cfg.connect_timeout = cap(cfg->connect_timeout);
	w->cfg.read_timeout = cap(cfg->read_timeout);
	w->cfg.write_timeout = cap(cfg->write_timeout);
	bs_id_generate(&id);
	bs_id_hex(w->id, &id);
	snprintf(w->kind, sizeof w->kind, "%s", kind);
	snprintf(w->metrics, sizeof w->metrics, "%s", metrics ? metrics : "");
	if (gethostname(w->host, sizeof w->host - 1) != 0)
		snprintf(w->host, sizeof w->host, "unknown");
	w->pid = (int)getpid();
	w->started_us = bs_now_us();
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	w->n = cfg->nshards;
	for (int i = 0; i < w->n; i++) {
		w->beats[i] = (beat_t){ .w = w, .shard = i };
		snprintf(w->beats[i].err, sizeof w->beats[i].err, "no heartbeat yet");
		if (pthread_create(&w->beats[i].tid, NULL, beat_thread, &w->beats[i]) == 0)
			w->beats[i].started = true;
	}
	*out = w;
	return 0;
}

void bs_worker_doing(bs_worker_t *w, const char *jobs, const char *repair)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	snprintf(w->jobs, sizeof w->jobs, "%s", jobs ? jobs : "");
	snprintf(w->repair, sizeof w->repair, "%s", repair ? repair : "");
	pthread_mutex_unlock(&w->mu);
}

const char *bs_worker_id(const bs_worker_t *w)
{
	return w ? w->id : "";
}

int bs_worker_shards_ok(bs_worker_t *w, char *first_error, size_t size)
{
	int ok = 0;

	if (first_error && size)
		first_error[0] = '\0';
	if (!w)
		return 0;
	pthread_mutex_lock(&w->mu);
	for (int i = 0; i < w->n; i++) {
		if (w->beats[i].ok)
			ok++;
		else if (first_error && size && !first_error[0])
			snprintf(first_error, size, "%s", w->beats[i].err);
	}
	pthread_mutex_unlock(&w->mu);
	return ok;
}

void bs_worker_stop(bs_worker_t *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stopping = true;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	for (int i = 0; i < w->n; i++)
		if (w->beats[i].started)
			pthread_join(w->beats[i].tid, NULL);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w->beats);
	free(w);
}

/* ------------------------------------------------------------ listing */

void bs_worker_list_free(bs_worker_list_t *l)
{
	if (!l)
		return;
	free(l->items);
	l->items = NULL;
	l->len = 0;
}

int bs_workers_alive(const bs_worker_list_t *l, const char *kind)
{
	int n = 0;

	for (int k = 0; l && k < l->len; k++)
		if (l->items[k].alive && (!kind || !strcmp(l->items[k].kind, kind)))
			n++;
	return n;
}

static void info_from_row(bs_worker_info_t *x, MYSQL_ROW row)
{
	memset(x, 0, sizeof *x);
	snprintf(x->id, sizeof x->id, "%s", row[0] ? row[0] : "");
	snprintf(x->kind, sizeof x->kind, "%s", row[1] ? row[1] : "");
	snprintf(x->host, sizeof x->host, "%s", row[2] ? row[2] : "");
	x->pid = row[3] ? atoi(row[3]) : 0;
	snprintf(x->version, sizeof x->version, "%s", row[4] ? row[4] : "");
	x->started_us = row[5] ? strtoll(row[5], NULL, 10) : 0;
	x->heartbeat_us = bs__parse_unix_us(row[6]);
	x->age_s = row[7] ? (double)strtoll(row[7], NULL, 10) / 1e6 : 1e9;
	if (x->age_s < 0)
		x->age_s = 0;
	snprintf(x->jobs, sizeof x->jobs, "%s", row[8] ? row[8] : "");
	snprintf(x->repair, sizeof x->repair, "%s", row[9] ? row[9] : "");
	snprintf(x->metrics, sizeof x->metrics, "%s", row[10] ? row[10] : "");
	x->shards = 1;
}

/* A shard's registry into its part of the list (bs__collect). */
static int wl_rows(bs__part_t *part, bs_store_t *st, int i, void *arg)
{
	static const char q[] = "SELECT worker_id, kind, host, pid, version, started_us, UNIX_TIMESTAMP(heartbeat),"
				" TIMESTAMPDIFF(MICROSECOND, heartbeat, NOW(6)), jobs, repair_shards, metrics"
				" FROM bagstore_workers ORDER BY started_us LIMIT 10000";
	MYSQL_RES *res = NULL;
	bs_worker_info_t *items;
	char label[192];
	int rc = bs__shard_check(st, i);

	(void)arg;
	if (!rc && (rc = bs__shard_query(&res, st, i, q, sizeof q - 1)) &&
	    bs__shard_last_errno(st, i) == ER_NO_SUCH_TABLE)
		rc = bs_error(BS_ECONFIG,
		              "%s: no worker registry (bagstore_workers): run `bagstore init` once "
		              "with this version",
		              bs__shard_label(label, sizeof label, &st->shards[i]));
	if (rc)
		return rc;
	size_t n = (size_t)mysql_num_rows(res);
	if (n && !(part->items = calloc(n, sizeof *items))) {
		mysql_free_result(res);
		return bs_error(BS_ENOMEM, "out of memory listing workers");
	}
	items = part->items;
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res)))
		info_from_row(&items[part->len++], row);
	mysql_free_result(res);
	return 0;
}

/* Add x to out (whose items are every shard's rows, merged in place: out
 * never grows past x's row), merged with the same worker's row from
 * another shard: the freshest heartbeat's fields win. */
static void wl_merge(bs_worker_list_t *out, const bs_worker_info_t *x)
{
	for (int k = 0; k < out->len; k++) {
		bs_worker_info_t *y = &out->items[k];
		if (strcmp(y->id, x->id) != 0)
			continue;
		int shards = y->shards + 1;
		if (x->age_s < y->age_s)
			*y = *x;
		y->shards = shards;
		return;
	}
	out->items[out->len++] = *x;
}

static int wl_cmp(const void *a, const void *b)
{
	const bs_worker_info_t *x = a, *y = b;
	if (x->alive != y->alive)
		return x->alive ? -1 : 1;
	if (x->started_us != y->started_us)
		return x->started_us < y->started_us ? -1 : 1;
	return strcmp(x->id, y->id);
}

int bs_workers_list(bs_worker_list_t *out, bs_store_t *st, int *unreachable)
{
	static const bs__collect_t c = {
		sizeof(bs_worker_info_t), wl_rows, NULL, NULL, { "listing workers", "the workers list", false }
	};
	bs_worker_info_t *all = NULL;
	void *items;
	bs__up_t up;
	int rc, len = 0;

	out->items = NULL;
	out->len = 0;
	rc = bs__collect(&items, &len, &up, st, &c);
	if (unreachable)
		*unreachable = up.down;
	snprintf(out->unreachable_first, sizeof out->unreachable_first, "%s", rc ? "" : up.down_first);
	if (rc)
		return rc;
	/* every shard's rows, each worker's merged in place */
	out->items = all = items;
	for (int k = 0; k < len; k++) {
		bs_worker_info_t x = all[k];
		wl_merge(out, &x);
	}
	for (int k = 0; k < out->len; k++)
		out->items[k].alive = out->items[k].age_s < BS_WORKER_DEAD_S;
	if (out->len > 1)
		qsort(out->items, (size_t)out->len, sizeof *out->items, wl_cmp);
	return 0;
}

void bs__worker_quiet(char *reason, size_t n, double *beat_s, int64_t quiet_us, const char *beat_age, const char *host,
                      int pid)
{
	/* a beat ahead of the shard's clock (another host's) is a live one */
	double beat = beat_age ? (double)strtoll(beat_age, NULL, 10) / 1e6 : -1;

	if (beat_age && beat < 0)
		beat = 0;
	if (beat_s)
		*beat_s = beat;
	if (beat_age && beat < BS_WORKER_DEAD_S) { /* alive: waiting, not gone */
		if (!reason[0])
			snprintf(reason, n, "no checkpoint for %.0f s; worker %s:%d is alive (beat %.1f s ago)",
			         (double)quiet_us / 1e6, host, pid, beat);
		return;
	}
	snprintf(reason, n, "no heartbeat for %.0f s: worker %s:%d gone?", (double)quiet_us / 1e6, host, pid);
}

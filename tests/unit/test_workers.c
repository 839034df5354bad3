/*
 * test_workers.c - the cleaner as a service, in the engine, against the two
 * real test shards: the worker registry (a row on every shard, heartbeat,
 * what it does, merged over shards with the freshest heartbeat winning,
 * dead when stale, long-dead rows cleared, deregistered on stop), the
 * events of a daemon pass (jobs claimed and done, an index ready, repair
 * passes with rows deleted per index), and the live settings box read by
 * several threads while another swaps it (consistent copies; TSan clean).
 */
#include "bagstore.h"
#include "rawsql.h"
#include "t.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void nap(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------ names */

static void test_names(void)
{
	for (int e = 0; e < BS_EV_COUNT; e++) {
		CHECK(strcmp(bs_event_name((bs_event_type_t)e), "unknown") != 0, "event %d has a name", e);
		for (int f = 0; f < e; f++)
			CHECK(strcmp(bs_event_name((bs_event_type_t)e), bs_event_name((bs_event_type_t)f)) != 0,
			      "events %d and %d named alike", e, f);
	}
	CHECK_STR(bs_event_name(BS_EV_JOB_CLAIMED), "job_claimed");
	CHECK_STR(bs_event_name(BS_EV_REPAIR_PASS), "repair_pass");
	CHECK_STR(bs_event_name(BS_EV_COUNT), "unknown");
	CHECK_STR(bs_hook_name(BS_HOOK_BACKFILL_STARTED), "backfill_started");
	CHECK_STR(bs_hook_name(BS_HOOK_INDEX_READY), "index_ready");
	CHECK_STR(bs_hook_name(BS_HOOK_COUNT), "unknown");
}

/* ------------------------------------------------------------ live settings */

static bs_cleaner_live_t *live;
static volatile int live_bad;
static pthread_mutex_t bad_mu = PTHREAD_MUTEX_INITIALIZER;

static void *live_reader(void *p)
{
	(void)p;
	for (int k = 0; k < 20000; k++) {
		bs_cleaner_conf_t c;
		bs_cleaner_live_get(&c, live);
		/* every copy is one whole setting: A (1, 10, ...) or B (2, 20, ...) */
		bool a = c.chunk_time == 1 && c.max_load == 10 && c.critical_load == 100 && c.sleep_coef == 1;
		bool b = c.chunk_time == 2 && c.max_load == 20 && c.critical_load == 200 && c.sleep_coef == 2;
		if (!a && !b) {
			pthread_mutex_lock(&bad_mu);
			live_bad++;
			pthread_mutex_unlock(&bad_mu);
		}
	}
	return NULL;
}

static void test_live(void)
{
	bs_cleaner_conf_t a = { .chunk_time = 1, .max_load = 10, .critical_load = 100, .sleep_coef = 1 };
	bs_cleaner_conf_t b = { .chunk_time = 2, .max_load = 20, .critical_load = 200, .sleep_coef = 2 };
	pthread_t t[3];

	CHECK_OK(bs_cleaner_live_new(&live, &a));
	for (int k = 0; k < 3; k++)
		pthread_create(&t[k], NULL, live_reader, NULL);
	for (int k = 0; k < 20000; k++)
		bs_cleaner_live_set(live, k % 2 ? &a : &b);
	for (int k = 0; k < 3; k++)
		pthread_join(t[k], NULL);
	CHECK(live_bad == 0, "%d torn copies", live_bad);
	bs_cleaner_live_set(live, &b);
	bs_cleaner_conf_t c;
	bs_cleaner_live_get(&c, live);
	CHECK(c.max_load == 20 && c.chunk_time == 2, "the last set is what is read");
	bs_cleaner_live_free(live);
	bs_cleaner_live_free(NULL);
}

/* ------------------------------------------------------------ registry */

static const bs_worker_info_t *find_worker(const bs_worker_list_t *l, const char *id)
{
	for (int k = 0; k < l->len; k++)
		if (!strcmp(l->items[k].id, id))
			return &l->items[k];
	return NULL;
}

/* Wait (up to 5 s) until the worker is listed with jobs (NULL: any). */
static bool wait_listed(bs_store_t *st, const char *id, const char *jobs, bs_worker_info_t *out)
{
	for (int tries = 0; tries < 50; tries++) {
		bs_worker_list_t l = { 0 };
		const bs_worker_info_t *w;
		if (bs_workers_list(&l, st, NULL) == 0 && (w = find_worker(&l, id)) && w->shards == cfg->nshards &&
		    (!jobs || !strcmp(w->jobs, jobs))) {
			*out = *w;
			bs_worker_list_free(&l);
			return true;
		}
		bs_worker_list_free(&l);
		nap(0.1);
	}
	return false;
}

static void test_registry(bs_store_t *st)
{
	bs_worker_t *w = NULL;
	bs_worker_info_t x;
	bs_worker_list_t l = { 0 };
	char q[512], err[256];

	/* a row dead for two hours: the first heartbeat of any worker clears it */
	sql(0, "INSERT INTO bagstore_workers (worker_id, kind, host, pid, version, started_us, heartbeat)"
	       " VALUES ('0ld0ld', 'cleaner', 'gone', 1, '0.0.1', 0, NOW(6) - INTERVAL 2 HOUR)");
	CHECK_OK(bs_worker_start(&w, cfg, "cleaner", "127.0.0.1:9999"));
	if (!w)
		return;
	CHECK(strlen(bs_worker_id(w)) == 32, "a 32 hex digit id: %s", bs_worker_id(w));
	CHECK(wait_listed(st, bs_worker_id(w), NULL, &x), "the worker is listed on every shard");
	CHECK_STR(x.kind, "cleaner");
	CHECK(x.pid == (int)getpid(), "pid %d", x.pid);
	CHECK_STR(x.version, BS_VERSION);
	CHECK_STR(x.metrics, "127.0.0.1:9999");
	CHECK(x.alive && x.age_s < BS_WORKER_DEAD_S, "alive, age %.1f", x.age_s);
	CHECK(sql_int(0, "SELECT COUNT(*) FROM bagstore_workers WHERE worker_id='0ld0ld'") == 0,
	      "a row dead for longer than BS_WORKER_CLEAR_S is cleared");
	CHECK(bs_worker_shards_ok(w, err, sizeof err) == cfg->nshards, "every shard takes the heartbeat: %s", err);
	bs_worker_doing(w, "ix@s0,ix@s1", "s0,s1");
	CHECK(wait_listed(st, bs_worker_id(w), "ix@s0,ix@s1", &x), "what it does reaches the registry");
	CHECK_STR(x.repair, "s0,s1");

	/* someone else's rows: stale on s0, fresh on s1: the fresh one wins */
	sql(0, "INSERT INTO bagstore_workers (worker_id, kind, host, pid, version, started_us, heartbeat, jobs)"
	       " VALUES ('other', 'console', 'h2', 42, '0.1.0', 1, NOW(6) - INTERVAL 30 SECOND, 'old')");
	sql(1, "INSERT INTO bagstore_workers (worker_id, kind, host, pid, version, started_us, heartbeat, jobs)"
	       " VALUES ('other', 'console', 'h2', 42, '0.1.0', 1, NOW(6), 'new')");
	/* and a dead one, on s0 only */
	sql(0, "INSERT INTO bagstore_workers (worker_id, kind, host, pid, version, started_us, heartbeat)"
	       " VALUES ('dead1', 'cleaner', 'h3', 7, '0.1.0', 2, NOW(6) - INTERVAL 20 SECOND)");
	CHECK_OK(bs_workers_list(&l, st, NULL));
	const bs_worker_info_t *o = find_worker(&l, "other"), *d = find_worker(&l, "dead1");
	CHECK(o && o->alive && o->shards == 2 && !strcmp(o->jobs, "new"), "merged: the freshest row wins");
	CHECK(d && !d->alive && d->shards == 1 && d->age_s >= 19, "a stale heartbeat: dead (age %.1f)",
	      d ? d->age_s : -1);
	CHECK(l.len >= 3 && l.items[l.len - 1].alive == false, "live workers first, the dead last");
	CHECK(bs_workers_alive(&l, "cleaner") == 1, "one live cleaner (this one)");
	CHECK(bs_workers_alive(&l, "console") == 1, "one live console");
	CHECK(bs_workers_alive(&l, NULL) == 2, "two live workers");
	bs_worker_list_free(&l);

	/* stop: deregistered everywhere */
	snprintf(q, sizeof q, "SELECT COUNT(*) FROM bagstore_workers WHERE worker_id='%s'", bs_worker_id(w));
	char id[33];
	snprintf(id, sizeof id, "%s", bs_worker_id(w));
	bs_worker_stop(w);
	CHECK(sql_int(0, q) == 0 && sql_int(1, q) == 0, "its rows are gone from both shards (%s)", id);
	bs_worker_stop(NULL);
	sql(0, "DELETE FROM bagstore_workers");
	sql(1, "DELETE FROM bagstore_workers");
}

/* ------------------------------------------------------------ events of a pass */

typedef struct {
	pthread_mutex_t mu;
	int count[BS_EV_COUNT];
	int64_t deleted, inserted, rows;
	bool per_index_named;
	char ready[BS_NAME_MAX + 1];
} seen_t;

static void on_event(void *p, const bs_event_t *ev)
{
	seen_t *s = p;

	pthread_mutex_lock(&s->mu);
	s->count[ev->type]++;
	if (ev->type == BS_EV_REPAIR_PASS) {
		s->rows += ev->rows;
		for (int k = 0; k < ev->nindexes; k++) {
			s->inserted += ev->indexes[k].inserted;
			s->deleted += ev->indexes[k].deleted;
			s->per_index_named |= !strcmp(ev->indexes[k].index, "by_v");
		}
	}
	if (ev->type == BS_EV_INDEX_READY)
		snprintf(s->ready, sizeof s->ready, "%s", ev->index);
	if (ev->job)
		CHECK(ev->shard == ev->job->shard && !strcmp(ev->index, ev->job->index), "a job event names its job");
	pthread_mutex_unlock(&s->mu);
}

static void test_events(bs_store_t *st)
{
	seen_t s = { .mu = PTHREAD_MUTEX_INITIALIZER };
	bs_cleaner_opts_t o = { .once = true, .event = on_event, .ctx = &s };
	bs_index_t def;

	for (int k = 0; k < 200; k++) {
		bs_value_t bag, v;
		bs_id_t id;
		bs_id_generate(&id);
		bs_value_map(&bag);
		bs_value_bin(&v, id.b, 16);
		bs_map_set(&bag, "id", 2, &v);
		bs_value_int(&v, k);
		bs_map_set(&bag, "v", 1, &v);
		CHECK_OK(bs_put(st, &bag, NULL));
		bs_value_clear(&bag);
	}
	CHECK_OK(bs_index_parse(&def, "by_v", "v:int", "v"));
	CHECK_OK(bs_index_create(st, &def));
	CHECK_OK(bs_cleaner_run(st, &o));
	CHECK(s.count[BS_EV_JOB_CLAIMED] == cfg->nshards, "a job claimed per shard: %d", s.count[BS_EV_JOB_CLAIMED]);
	CHECK(s.count[BS_EV_JOB_DONE] == cfg->nshards, "a job done per shard: %d", s.count[BS_EV_JOB_DONE]);
	CHECK(s.count[BS_EV_JOB_PROGRESS] >= cfg->nshards, "progress: %d", s.count[BS_EV_JOB_PROGRESS]);
	CHECK(s.count[BS_EV_JOB_FAILED] == 0 && s.count[BS_EV_ERROR] == 0, "no failure");
	CHECK_STR(s.ready, "by_v");
	CHECK(s.count[BS_EV_REPAIR_PASS] == cfg->nshards, "a repair pass per shard: %d", s.count[BS_EV_REPAIR_PASS]);
	CHECK(s.per_index_named, "the pass names its index");

	/* an orphan: the next pass deletes it, and says so per index */
	memset(s.count, 0, sizeof s.count);
	s.deleted = s.inserted = 0;
	sql(1, "INSERT INTO by_v VALUES (123456, X'ffffffffffffffffffffffffffffff02')");
	CHECK_OK(bs_cleaner_run(st, &o));
	CHECK(s.deleted == 1 && s.inserted == 0, "one index row deleted by repair (deleted %lld, inserted %lld)",
	      (long long)s.deleted, (long long)s.inserted);
	CHECK(sql_int(1, "SELECT COUNT(*) FROM by_v WHERE v=123456") == 0, "the orphan is gone");
	CHECK(s.count[BS_EV_SHARD_LOST] == 0, "no shard lost");
}

int main(void)
{
	bs_store_t *st = NULL;
	const char *path = getenv("BAGSTORE_TEST_CONFIG");

	test_names();
	test_live();
	if (bs_config_load(&cfg, path)) {
		printf("workers: cannot load %s: %s\n", path ? path : "(default)", bs_last_error());
		return 1;
	}
	if (bs_store_open(&st, cfg)) {
		printf("workers: %s\n", bs_last_error());
		return 1;
	}
	CHECK_OK(bs_init(st));
	test_registry(st);
	test_events(st);
	bs_store_free(st);
	raw_close_all();
	bs_config_free(cfg);
	mysql_library_end();
	return t_done("workers");
}

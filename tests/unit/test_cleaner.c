/*
 * test_cleaner.c - the cleaner against two real MariaDB shards (started by
 * tests/run.sh; config in $BAGSTORE_TEST_CONFIG): backfill jobs, the
 * index lifecycle, verify and repair, lag. What the engine wrote is checked
 * with plain SQL through connections of our own, and the index is compared
 * with one computed from the bodies here.
 */
#include "bagstore.h"
#include "rawsql.h"
#include "t.h"

#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_ENT 3000

static bs_id_t ids[N_ENT];
static bs_id_t users[N_ENT];

/* entity k: user_id (uuid) for most; every 10th has none; every 25th has a
 * user_id that does not fit (a string) */
static void make_bag(bs_value_t *bag, int k, int version)
{
	bs_value_t v;
	bs_value_map(bag);
	bs_value_bin(&v, ids[k].b, 16);
	bs_map_set(bag, "id", 2, &v);
	if (k % 25 == 0) {
		bs_value_str(&v, "not-a-uuid", 10);
		bs_map_set(bag, "user_id", 7, &v);
	} else if (k % 10 != 0) {
		bs_value_bin(&v, users[k].b, 16);
		bs_map_set(bag, "user_id", 7, &v);
	}
	bs_value_int(&v, k * 10 + version);
	bs_map_set(bag, "n", 1, &v);
}

/* Rows index_user_id should have, per shard, from the bodies we wrote. */
static void expected_rows(long long *per_shard)
{
	bs_prop_t p = { "user_id", BS_COL_UUID, 0 };
	memset(per_shard, 0, sizeof(long long) * (size_t)cfg->nshards);
	for (int k = 0; k < N_ENT; k++) {
		if (k % 25 == 0 || k % 10 == 0)
			continue;
		bs_value_t v;
		bs_value_bin(&v, users[k].b, 16);
		per_shard[bs_route_value(&v, &p, cfg->nshards)]++;
		bs_value_clear(&v);
	}
}

static void check_index_matches(const char *name, const char *what)
{
	long long want[8], total = 0;
	char q[256];
	expected_rows(want);
	for (int i = 0; i < cfg->nshards; i++) {
		snprintf(q, sizeof q, "SELECT COUNT(*) FROM `%s`", name);
		long long got = sql_int(i, q);
		CHECK(got == want[i], "%s: shard %d holds %lld rows, the bodies say %lld", what, i, got, want[i]);
		total += got;
	}
	(void)total;
}

static void test_backfill(bs_store_t *st)
{
	bs_index_t def, cur;
	bs_job_list_t jobs;

	for (int k = 0; k < N_ENT; k++) {
		bs_value_t bag;
		bs_id_generate(&ids[k]);
		bs_id_generate(&users[k]);
		make_bag(&bag, k, 0);
		int rc = bs_put(st, &bag, NULL);
		if (rc)
			CHECK_OK(rc);
		bs_value_clear(&bag);
	}
	CHECK_OK(bs_index_parse(&def, "by_user", "user_id:uuid", "user_id"));
	CHECK_OK(bs_index_create(st, &def));
	CHECK_OK(bs_index_get(&cur, st, "by_user"));
	CHECK(cur.state == BS_INDEX_BUILDING, "an index created over entities starts building, is %s",
	      bs_index_state_name(cur.state));
	CHECK_OK(bs_job_list(&jobs, st, NULL));
	CHECK(jobs.len == cfg->nshards, "one job per shard, got %d", jobs.len);
	for (int k = 0; k < jobs.len; k++)
		CHECK(jobs.items[k].state == BS_JOB_QUEUED, "job %d queued, is %s", k,
		      bs_job_state_name(jobs.items[k].state));
	bs_job_list_free(&jobs);
	CHECK_OK(bs_backfill_queue(st, "by_user")); /* idempotent */
	CHECK_OK(bs_job_list(&jobs, st, NULL));
	CHECK(jobs.len == cfg->nshards, "still one job per shard, got %d", jobs.len);
	bs_job_list_free(&jobs);

	CHECK_OK(bs_cleaner_backfill(st, "by_user", NULL));
	CHECK_OK(bs_index_get(&cur, st, "by_user"));
	CHECK(cur.state == BS_INDEX_READY, "ready after its backfill, is %s", bs_index_state_name(cur.state));
	check_index_matches("by_user", "after backfill");

	CHECK_OK(bs_job_list(&jobs, st, NULL));
	int64_t scanned = 0;
	for (int k = 0; k < jobs.len; k++) {
		CHECK(jobs.items[k].state == BS_JOB_DONE, "job %d done, is %s (%s)", k,
		      bs_job_state_name(jobs.items[k].state), jobs.items[k].reason);
		scanned += jobs.items[k].rows_scanned;
		CHECK(jobs.items[k].worker_pid > 0, "job %d names its worker", k);
	}
	CHECK(scanned == N_ENT, "every entity scanned once: %lld", (long long)scanned);
	bs_job_list_free(&jobs);
	CHECK_ERR(bs_job_control(st, "by_user", "pause"), BS_ECONFLICT);
	CHECK_ERR(bs_job_control(st, "nosuch", "pause"), BS_ENOTFOUND);
	CHECK_ERR(bs_job_control(st, "by_user", "explode"), BS_EINVAL);

	bs_drift_t d;
	CHECK_OK(bs_verify(&d, st, "by_user", false));
	CHECK(d.checked == N_ENT, "verify read every entity: %lld", (long long)d.checked);
	CHECK(d.missing == 0 && d.stale == 0 && d.orphaned == 0, "no drift after backfill: %lld %lld %lld",
	      (long long)d.missing, (long long)d.stale, (long long)d.orphaned);
	CHECK(d.misfit == N_ENT / 25, "misfits counted: %lld", (long long)d.misfit);
}

static void test_verify_repair(bs_store_t *st)
{
	char q[512];
	/* plant drift: rows deleted, a wrong value, an orphan, a row on the wrong shard */
	sql(0, "DELETE FROM by_user ORDER BY entity_id LIMIT 5");
	sql(1, "DELETE FROM by_user ORDER BY entity_id LIMIT 5");
	sql(0, "UPDATE by_user SET user_id=X'00000000000000000000000000000001' ORDER BY entity_id DESC LIMIT 2");
	sql(1, "INSERT INTO by_user VALUES (X'00000000000000000000000000000002', X'000000000000000000000000000000aa')");
	/* an entity's row copied to the other shard */
	snprintf(q, sizeof q, "SELECT COUNT(*) FROM by_user");
	long long before0 = sql_int(0, q);
	(void)before0;

	bs_drift_t d, last;
	CHECK_OK(bs_verify(&d, st, "by_user", false));
	CHECK(d.missing == 10, "10 missing rows found: %lld", (long long)d.missing);
	CHECK(d.stale == 2, "2 stale rows found: %lld", (long long)d.stale);
	CHECK(d.orphaned == 1, "1 orphan found: %lld", (long long)d.orphaned);
	CHECK(d.repaired == 0, "read-only verify repairs nothing");
	CHECK_OK(bs_verify_last(&last, st, "by_user"));
	CHECK(last.missing == 10 && last.orphaned == 1, "the last verify is recorded");

	CHECK_OK(bs_verify(&d, st, "by_user", true));
	CHECK(d.repaired == 13, "13 rows repaired: %lld", (long long)d.repaired);
	CHECK_OK(bs_verify(&d, st, NULL, false));
	CHECK(d.missing == 0 && d.stale == 0 && d.orphaned == 0, "no drift after repair: %lld %lld %lld",
	      (long long)d.missing, (long long)d.stale, (long long)d.orphaned);
	check_index_matches("by_user", "after verify --repair");
	CHECK_ERR(bs_verify(&d, st, "nosuch", false), BS_ENOTFOUND);
}

static void test_repair_loop(bs_store_t *st)
{
	char q[512], hex[33];
	bs_value_t bag;
	bs_lag_t lag[8];
	/* new versions of some entities, then their index rows broken by hand
	 * (as a writer that died between the entity and its rows would) */
	for (int k = 1; k < 40; k++) {
		if (k % 10 == 0 || k % 25 == 0)
			continue;
		bs_id_generate(&users[k]);
		make_bag(&bag, k, 1);
		CHECK_OK(bs_put(st, &bag, NULL));
		bs_value_clear(&bag);
		bs_id_hex(hex, &ids[k]);
		for (int i = 0; i < cfg->nshards; i++) {
			snprintf(q, sizeof q, "DELETE FROM by_user WHERE entity_id=X'%s'", hex);
			sql(i, q);
		}
	}
	bs_cleaner_opts_t o = { .once = true };
	CHECK_OK(bs_cleaner_run(st, &o));
	check_index_matches("by_user", "after a repair pass");
	bs_drift_t d;
	CHECK_OK(bs_verify(&d, st, "by_user", false));
	CHECK(d.missing == 0 && d.stale == 0 && d.orphaned == 0, "no drift after a repair pass: %lld %lld %lld",
	      (long long)d.missing, (long long)d.stale, (long long)d.orphaned);
	CHECK_OK(bs_lag(lag, st));
	for (int i = 0; i < cfg->nshards; i++) {
		CHECK(lag[i].reachable, "shard %d reachable", i);
		CHECK(lag[i].watermark_us > 0, "shard %d has a watermark", i);
		CHECK(lag[i].lag_s >= 0 && lag[i].lag_s < 60, "shard %d lag %.3f", i, lag[i].lag_s);
		CHECK(lag[i].nhistory >= 1, "shard %d has lag history", i);
	}
	/* an orphan is swept by the loop */
	sql(0, "INSERT INTO by_user VALUES (X'00000000000000000000000000000003', X'000000000000000000000000000000bb')");
	/* the sweep takes a bounded batch per pass: a few passes go round */
	for (int pass = 0; pass < 6; pass++)
		CHECK_OK(bs_cleaner_run(st, &o));
	CHECK(sql_int(0, "SELECT COUNT(*) FROM by_user WHERE entity_id=X'000000000000000000000000000000bb'") == 0,
	      "the orphan is swept");
}

static void test_empty_create(bs_store_t *st)
{
	bs_index_t def, cur;
	/* a second index over a store with entities, built by the daemon's --once */
	CHECK_OK(bs_index_parse(&def, "by_n", "n:int", "n"));
	CHECK_OK(bs_index_create(st, &def));
	CHECK_OK(bs_index_get(&cur, st, "by_n"));
	CHECK(cur.state == BS_INDEX_BUILDING, "by_n starts building");
	bs_cleaner_opts_t o = { .once = true };
	CHECK_OK(bs_cleaner_run(st, &o));
	CHECK_OK(bs_index_get(&cur, st, "by_n"));
	CHECK(cur.state == BS_INDEX_READY, "by_n ready after cleaner --once, is %s", bs_index_state_name(cur.state));
	long long rows = sql_int(0, "SELECT COUNT(*) FROM by_n") + sql_int(1, "SELECT COUNT(*) FROM by_n");
	CHECK(rows == N_ENT, "by_n has a row per entity: %lld", rows);
	bs_drift_t d;
	CHECK_OK(bs_verify(&d, st, "by_n", false));
	CHECK(d.missing == 0 && d.stale == 0 && d.orphaned == 0, "by_n without drift");
	CHECK_OK(bs_index_drop(st, "by_n"));
	/* re-created under the same name: its old done jobs do not count */
	CHECK_OK(bs_index_create(st, &def));
	bs_job_list_t jobs;
	CHECK_OK(bs_job_list(&jobs, st, NULL));
	int queued = 0;
	for (int k = 0; k < jobs.len; k++)
		if (!strcmp(jobs.items[k].index, "by_n") && jobs.items[k].state == BS_JOB_QUEUED)
			queued++;
	CHECK(queued == cfg->nshards, "a re-created index gets fresh jobs: %d queued", queued);
	bs_job_list_free(&jobs);
	CHECK_OK(bs_job_control(st, "by_n", "pause"));
	CHECK_OK(bs_job_list(&jobs, st, NULL));
	for (int k = 0; k < jobs.len; k++)
		if (!strcmp(jobs.items[k].index, "by_n"))
			CHECK(jobs.items[k].state == BS_JOB_PAUSED, "paused: %s",
			      bs_job_state_name(jobs.items[k].state));
	bs_job_list_free(&jobs);
	CHECK_OK(bs_job_control(st, "by_n", "cancel"));
	CHECK_ERR(bs_cleaner_backfill(st, "by_n", NULL), BS_ECONFLICT);
	CHECK_OK(bs_job_control(st, "by_n", "resume"));
	CHECK_OK(bs_cleaner_backfill(st, "by_n", NULL));
	CHECK_OK(bs_index_get(&cur, st, "by_n"));
	CHECK(cur.state == BS_INDEX_READY, "by_n ready after resume");
	CHECK_OK(bs_index_drop(st, "by_n"));
}

int main(void)
{
	bs_store_t *st = NULL;
	const char *path = getenv("BAGSTORE_TEST_CONFIG");
	if (bs_config_load(&cfg, path)) {
		printf("cleaner: cannot load %s: %s\n", path ? path : "(default)", bs_last_error());
		return 1;
	}
	if (bs_store_open(&st, cfg)) {
		printf("cleaner: %s\n", bs_last_error());
		return 1;
	}
	CHECK_OK(bs_init(st));
	test_backfill(st);
	test_verify_repair(st);
	test_repair_loop(st);
	test_empty_create(st);
	bs_store_free(st);
	raw_close_all();
	bs_config_free(cfg);
	mysql_library_end();
	return t_done("cleaner");
}

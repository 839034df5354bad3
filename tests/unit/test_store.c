/*
 * test_store.c - the engine against two real MariaDB shards (started by
 * tests/run.sh; config in $BAGSTORE_TEST_CONFIG). What the engine wrote is
 * checked with plain SQL on the shards, through connections of our own.
 */
#include "bagstore.h"
#include "internal.h"
#include "cleaner.h"
#include "rawsql.h"
#include "t.h"

#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

static const char *seed_json = "{\"id\":{\"$uuid\":\"71f0c4d2-2918-44cc-a2df-6f486e96e37c\"},"
			       "\"user_id\":{\"$uuid\":\"f48b0440-ca0c-4f66-991c-4d5f6a078eaf\"},"
			       "\"title\":\"We just launched a new backend system for FriendFeed!\","
			       "\"link\":\"http://friendfeed.com/e/71f0c4d2-2918-44cc-a2df-6f486e96e37c\","
			       "\"published\":1235697046,\"updated\":1235697046}";

static void test_init(bs_store_t *st)
{
	CHECK_OK(bs_init(st));
	CHECK_OK(bs_init(st)); /* idempotent */
	char fp[17];
	bs_config_fingerprint(fp, cfg);
	for (int i = 0; i < cfg->nshards; i++) {
		char q[256];
		snprintf(q, sizeof q, "SELECT COUNT(*) FROM bagstore_meta WHERE k='fingerprint' AND v='%s'", fp);
		CHECK(sql_int(i, q) == 1, "shard %d records the fingerprint %s", i, fp);
		snprintf(q, sizeof q, "SELECT v FROM bagstore_meta WHERE k='shard_index'");
		CHECK(sql_int(i, q) == i, "shard %d records its position", i);
	}
}

static void test_seed(bs_store_t *st)
{
	bs_value_t bag, got;
	bs_id_t id, want;
	bs_index_t def;
	char *json = NULL;
	int shard = -1;
	int64_t updated = 0;

	CHECK_OK(bs_index_parse(&def, "index_user_id", "user_id:uuid", "user_id"));
	CHECK_OK(bs_index_create(st, &def));
	bs_index_t cur;
	CHECK_OK(bs_index_get(&cur, st, "index_user_id"));
	CHECK(cur.state == BS_INDEX_READY, "index on an empty store starts ready, is %s",
	      bs_index_state_name(cur.state));
	CHECK_ERR(bs_index_create(st, &def), BS_ECONFLICT);

	CHECK_OK(bs_json_decode(&bag, seed_json, strlen(seed_json), "seed"));
	CHECK_OK(bs_put(st, &bag, &id));
	CHECK_OK(bs_id_parse(&want, "71f0c4d2291844cca2df6f486e96e37c"));
	CHECK(memcmp(id.b, want.b, 16) == 0, "put returns the bag's id");

	CHECK_OK(bs_get(&got, st, &id, &updated, &shard));
	CHECK(bs_value_equal(&bag, &got), "get returns the bag put");
	CHECK_OK(bs_json_encode(&json, &got, 0));
	CHECK_STR(json, seed_json);
	free(json);
	CHECK(shard == bs_route_id(&id, cfg->nshards), "entity on shard id mod N");
	CHECK(updated > 1600000000000000LL, "updated is a recent timestamp in us: %lld", (long long)updated);

	/* the entity row is on the shard the id names, and only there */
	int es = bs_route_id(&id, cfg->nshards);
	for (int i = 0; i < cfg->nshards; i++)
		CHECK(sql_int(i, "SELECT COUNT(*) FROM entities WHERE id=X'71f0c4d2291844cca2df6f486e96e37c'") ==
		              (i == es),
		      "entity row on shard %d: %s", i, i == es ? "yes" : "no");

	/* the index row is on the shard of user_id mod N: f48b... is even? compute */
	const bs_value_t *uid = bs_map_get(&bag, "user_id");
	int is = bs_route_value(uid, &def.props[0], cfg->nshards);
	/* by hand: the 128-bit big-endian value mod 2 is the low bit of the last byte (0xaf) */
	if (cfg->nshards == 2)
		CHECK(is == (0xaf & 1), "user_id f48b...eaf routes to shard %d", 0xaf & 1);
	for (int i = 0; i < cfg->nshards; i++)
		CHECK(sql_int(i, "SELECT COUNT(*) FROM index_user_id WHERE user_id=X'f48b0440ca0c4f66991c4d5f6a078eaf'"
		                 " AND entity_id=X'71f0c4d2291844cca2df6f486e96e37c'") == (i == is),
		      "index row on shard %d: %s", i, i == is ? "yes" : "no");

	/* found through the index */
	bs_cond_t c = { "user_id", { 0 } };
	CHECK_OK(bs_value_copy(&c.value, uid));
	bs_result_t r;
	CHECK_OK(bs_query(&r, st, "index_user_id", &c, 1, 0));
	CHECK(r.len == 1 && memcmp(r.items[0].id.b, id.b, 16) == 0, "query finds the seed entity (%zu)", r.len);
	bs_result_free(&r);

	/* a stale row planted by hand: entity 71f0... under another user */
	char q[512];
	snprintf(q, sizeof q,
	         "INSERT INTO index_user_id VALUES (X'00000000000000000000000000000002', "
	         "X'71f0c4d2291844cca2df6f486e96e37c')");
	/* user ...02 routes to shard 0 with two shards; the right row is on shard 1: no clash */
	int stale_shard = bs_route_value(
		&(bs_value_t){ .type = BS_BIN, .v.s = { (char *)"\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\2", 16, 0 } },
		&def.props[0], cfg->nshards);
	CHECK(stale_shard != is, "planted row goes to another shard than the real one");
	sql(stale_shard, q);
	bs_cond_t c2 = { "user_id", { 0 } };
	CHECK_OK(bs_value_from_text(&c2.value, &def.props[0], "00000000-0000-0000-0000-000000000002"));
	CHECK_OK(bs_query(&r, st, "index_user_id", &c2, 1, 0));
	CHECK(r.len == 0 && r.candidates == 1 && r.dropped == 1,
	      "stale row filtered: len %zu candidates %zu dropped %zu", r.len, r.candidates, r.dropped);
	bs_result_free(&r);
	/* and the real query still returns it once, though two rows name it */
	CHECK_OK(bs_query(&r, st, "index_user_id", &c, 1, 0));
	CHECK(r.len == 1, "real query unaffected (%zu)", r.len);
	bs_result_free(&r);
	snprintf(q, sizeof q, "DELETE FROM index_user_id WHERE user_id=X'00000000000000000000000000000002'");
	sql(stale_shard, q);

	/* moving the entity to another user moves its index row */
	bs_value_t moved, nu;
	CHECK_OK(bs_value_copy(&moved, &bag));
	CHECK_OK(bs_value_from_text(&nu, &def.props[0], "00000000000000000000000000000002"));
	CHECK_OK(bs_map_set(&moved, "user_id", 7, &nu));
	CHECK_OK(bs_put(st, &moved, NULL));
	CHECK(sql_int(is, "SELECT COUNT(*) FROM index_user_id WHERE entity_id=X'71f0c4d2291844cca2df6f486e96e37c'") ==
	              0,
	      "old index row deleted");
	CHECK(sql_int(stale_shard,
	              "SELECT COUNT(*) FROM index_user_id WHERE user_id=X'00000000000000000000000000000002'"
	              " AND entity_id=X'71f0c4d2291844cca2df6f486e96e37c'") == 1,
	      "new index row on the new value's shard");
	CHECK_OK(bs_query(&r, st, "index_user_id", &c2, 1, 0));
	CHECK(r.len == 1, "found under the new user (%zu)", r.len);
	bs_result_free(&r);
	CHECK_OK(bs_query(&r, st, "index_user_id", &c, 1, 0));
	CHECK(r.len == 0, "gone from the old user (%zu)", r.len);
	bs_result_free(&r);

	/* conditional put: stale expectation refused, nothing written */
	int64_t now_us;
	bs_value_t cur_bag;
	CHECK_OK(bs_get(&cur_bag, st, &id, &now_us, NULL));
	CHECK_ERR(bs_put_if(st, &bag, now_us - 1), BS_ECONFLICT);
	CHECK_ERR(bs_put_if(st, &bag, 0), BS_ECONFLICT);
	bs_value_t after;
	CHECK_OK(bs_get(&after, st, &id, NULL, NULL));
	CHECK(bs_value_equal(&after, &moved), "refused put_if changed nothing");
	bs_value_clear(&after);
	CHECK_OK(bs_put_if(st, &bag, now_us));
	CHECK_OK(bs_get(&after, st, &id, NULL, NULL));
	CHECK(bs_value_equal(&after, &bag), "put_if with the current timestamp writes");
	bs_value_clear(&after);
	bs_value_clear(&cur_bag);

	/* delete removes the entity and its index row */
	CHECK_OK(bs_delete(st, &id));
	CHECK_ERR(bs_get(&after, st, &id, NULL, NULL), BS_ENOTFOUND);
	CHECK_ERR(bs_delete(st, &id), BS_ENOTFOUND);
	long long left = 0;
	for (int i = 0; i < cfg->nshards; i++)
		left += sql_int(i, "SELECT COUNT(*) FROM index_user_id");
	CHECK(left == 0, "no index rows left after delete (%lld)", left);

	bs_value_clear(&moved);
	bs_value_clear(&got);
	bs_value_clear(&bag);
	bs_value_clear(&c.value);
	bs_value_clear(&c2.value);
}

/* This process's own writes, which the throttle tells other clients' from,
 * are counted while the process has a throttle, and only then (an
 * application that has none does not scan its statements' text). */
static void test_own_writes(bs_store_t *st)
{
	static const char w[] = "DELETE FROM bagstore_heartbeat WHERE shard='nobody'";
	uint64_t n0 = bs__shard_writes_sent(st, 0);
	CHECK_OK(bs__shard_exec(st, 0, w, sizeof w - 1));
	CHECK(bs__shard_writes_sent(st, 0) == n0, "no throttle: a write is not counted (%llu, was %llu)",
	      (unsigned long long)bs__shard_writes_sent(st, 0), (unsigned long long)n0);
	bs__throttle_t *thr = NULL;
	CHECK_OK(bs__throttle_open(&thr, cfg));
	CHECK_OK(bs__shard_exec(st, 0, w, sizeof w - 1));
	CHECK_OK(bs__shard_exec(st, 0, "SELECT 1", 8));
	CHECK(bs__shard_writes_sent(st, 0) == n0 + 1,
	      "a throttle open: the write is counted, the read is not (%llu, was %llu)",
	      (unsigned long long)bs__shard_writes_sent(st, 0), (unsigned long long)n0);
	bs__throttle_close(thr);
	CHECK_OK(bs__shard_exec(st, 0, w, sizeof w - 1));
	CHECK(bs__shard_writes_sent(st, 0) == n0 + 1, "closed: no longer counted (%llu)",
	      (unsigned long long)bs__shard_writes_sent(st, 0));
}

/* The throttle's cuts for the probe's latency made before other clients'
 * writes are known (the first half second) are given back whole once the
 * shard turns out to have none. A latency threshold nothing meets, a lane
 * of s0 kept busy, nobody else writing: the pace when the shard is first
 * said to be at full pace is at least the pace before the first cut (the
 * halved pace, grown for a round, was there before the give-back). */
/* A throttle whose write-latency threshold nothing meets (and whose
 * signals may age 30 s), its samplers running; which[] names s0 alone.
 * NULL, having said why, when none opens. */
static bs__throttle_t *unmeetable_throttle(bool which[64])
{
	bs__throttle_t *thr = NULL;
	if (cfg->nshards > 64 || bs__throttle_open(&thr, cfg)) {
		CHECK(0, "a throttle: %s", bs_last_error());
		return NULL;
	}
	memset(which, 0, 64 * sizeof *which);
	which[0] = true;
	bs_cleaner_conf_t cl = cfg->cleaner;
	cl.max_write_latency = 1e-6;
	cl.max_signal_age = 30;
	bs__throttle_settings(thr, &cl);
	bs__throttle_run(thr);
	return thr;
}

static void test_pace_given_back(void)
{
	bool which[64];
	double before = 0, cut_to = -1, at_alone = -1;
	bs__throttle_t *thr = unmeetable_throttle(which);
	if (!thr)
		return;
	bs__thr_gate_t g;
	bs__throttle_gate(&g, thr, which); /* no lane used yet: nothing cut */
	before = g.pace;
	for (double end = bs_now_mono() + 20; bs_now_mono() < end;) {
		double t0;
		if (bs__throttle_enter(&t0, thr, 0, 0.05, NULL) == 0) {
			usleep(2000);
			bs__throttle_leave(thr, 0, t0);
		}
		bs__throttle_gate(&g, thr, which);
		if (strstr(g.reason, "no other writers")) {
			at_alone = g.pace;
			break;
		}
		if (cut_to < 0 && g.pace < before)
			cut_to = g.pace;
		if (cut_to < 0 && g.pace > before)
			before = g.pace;
	}
	bs__throttle_close(thr);
	CHECK(cut_to > 0, "the probe's latency cut the pace before other writers were known (%.3f, was %.3f)", cut_to,
	      before);
	CHECK(at_alone > 0, "the shard was then said to have no other writers");
	CHECK(at_alone >= before, "and its pace was given back: %.3f, %.3f before the cut, cut to %.3f", at_alone,
	      before, cut_to);
}

/* Work the probe's latency neither holds nor paces (a move's catch-up):
 * another client writing to s0 (plain SQL through a connection of the
 * test's own, which the throttle does not count as its own), a latency
 * threshold nothing meets, a lane of s0 kept busy until the latency holds
 * jobs there (the pace at its lowest): then the gate still holds a job,
 * and a lane is still closed to it, while the latency-free gate says go
 * and the latency-free enter takes a lane at once. */
static void test_latency_free(void)
{
	bool which[64], held = false;
	bs__throttle_t *thr = unmeetable_throttle(which);
	if (!thr)
		return;
	sql(0, "CREATE TABLE IF NOT EXISTS t_other_writes (id INT AUTO_INCREMENT PRIMARY KEY)");
	bs__thr_gate_t g;
	for (double end = bs_now_mono() + 30; bs_now_mono() < end && !held;) {
		double t0;
		sql(0, "INSERT INTO t_other_writes VALUES ()");
		if (bs__throttle_enter(&t0, thr, 0, 0.05, NULL) == 0) {
			usleep(2000);
			bs__throttle_leave(thr, 0, t0);
		}
		bs__throttle_gate(&g, thr, which);
		held = g.verdict == BS__THR_WAIT && !strcmp(g.signal, "write_latency");
	}
	CHECK(held, "another client writing, the probe's latency holds a job on s0 (%s)", g.reason);
	sql(0, "INSERT INTO t_other_writes VALUES ()");
	bs__throttle_gate(&g, thr, which);
	CHECK(g.verdict == BS__THR_WAIT, "the gate still holds it: %s", g.reason);
	bs__throttle_gate_latency_free(&g, thr, which);
	CHECK(g.verdict == BS__THR_GO, "the latency-free gate lets it go (%s)", g.reason);
	double t0;
	CHECK(bs__throttle_enter(&t0, thr, 0, 0.2, NULL) == 1, "a lane of s0 stays closed to a job");
	int e = bs__throttle_enter_latency_free(&t0, thr, 0, 0.2, NULL);
	CHECK(e == 0, "and opens at once to latency-free work (%d)", e);
	if (e == 0)
		bs__throttle_leave(thr, 0, t0);
	bs__throttle_close(thr);
	sql(0, "DROP TABLE t_other_writes");
}

static void test_errors(bs_store_t *st)
{
	bs_value_t bag, got;
	bs_id_t id;
	bs_result_t r;
	bs_cond_t c = { "user_id", { 0 } };

	bs_value_bin(&c.value, "0123456789abcdef", 16);
	CHECK_ERR(bs_query(&r, st, "index_nope", &c, 1, 0), BS_ENOTFOUND);
	CHECK(strstr(bs_last_error(), "index_nope") != NULL, "names the index: %s", bs_last_error());
	bs_value_clear(&c.value);

	/* a corrupt body planted by hand: get says so and names the shard */
	CHECK_OK(bs_id_parse(&id, "0123456789abcdef0123456789abcdef"));
	int s = bs_route_id(&id, cfg->nshards);
	sql(s, "INSERT INTO entities (id, updated, body) VALUES "
	       "(X'0123456789abcdef0123456789abcdef', NOW(6), X'789c0000')");
	CHECK_ERR(bs_get(&got, st, &id, NULL, NULL), BS_ECORRUPT);
	CHECK(strstr(bs_last_error(), cfg->shards[s].name) != NULL, "names the shard: %s", bs_last_error());
	CHECK(sql_int(s, "SELECT COUNT(*) FROM entities WHERE id=X'0123456789abcdef0123456789abcdef'") == 1,
	      "the corrupt row is still there");
	/* index rows of the undecodable old body, where it left them: a put
	 * cannot know their shard, so it clears the entity's rows everywhere */
	for (int i = 0; i < cfg->nshards; i++) {
		char q[256];
		snprintf(q, sizeof q,
		         "INSERT INTO index_user_id VALUES (X'%032x', X'0123456789abcdef0123456789abcdef')", i + 7);
		sql(i, q);
	}
	/* a put over it still works */
	bs_value_map(&bag);
	bs_value_t v;
	bs_value_bin(&v, id.b, 16);
	bs_map_set(&bag, "id", 2, &v);
	bs_value_str(&v, "fixed", 5);
	bs_map_set(&bag, "title", 5, &v);
	CHECK_OK(bs_put(st, &bag, NULL));
	CHECK_OK(bs_get(&got, st, &id, NULL, NULL));
	CHECK(bs_value_equal(&got, &bag), "overwritten");
	long long stale = 0;
	for (int i = 0; i < cfg->nshards; i++)
		stale += sql_int(
			i, "SELECT COUNT(*) FROM index_user_id WHERE entity_id=X'0123456789abcdef0123456789abcdef'");
	CHECK(stale == 0, "the undecodable body's index rows are gone from every shard (%lld left)", stale);
	bs_value_clear(&got);
	bs_value_clear(&bag);

	/* a bag without an id is refused before any shard is touched */
	bs_value_map(&bag);
	bs_value_str(&v, "x", 1);
	bs_map_set(&bag, "title", 5, &v);
	CHECK_ERR(bs_put(st, &bag, NULL), BS_EINVAL);
	bs_value_clear(&bag);
}

/* A shard's identity replaces the ordered list's fingerprint (the bucket
 * map names shards): two shards' addresses swapped are refused, by writes
 * and by init; the same shards listed in another order are the same store. */
static bs_config_t *config_listing(char **text, bool swap_addresses, bool reverse)
{
	bs_config_t *c = NULL;
	size_t len = 0;
	FILE *f = open_memstream(text, &len);
	fprintf(f, "shards:\n");
	for (int k = 0; k < cfg->nshards; k++) {
		int i = reverse ? cfg->nshards - 1 - k : k;
		int a = swap_addresses ? cfg->nshards - 1 - i : i;
		fprintf(f, "  - {name: %s, host: %s, port: %u, database: %s, user: %s}\n", cfg->shards[i].name,
		        cfg->shards[a].host, cfg->shards[a].port, cfg->shards[a].database, cfg->shards[a].user);
	}
	fclose(f);
	CHECK_OK(bs_config_parse(&c, *text, len, "other.yaml"));
	return c;
}

static void test_fingerprint(void)
{
	char *text = NULL;
	bs_config_t *sw = config_listing(&text, true, false);
	bs_store_t *st = NULL;
	CHECK_OK(bs_store_open(&st, sw));
	bs_value_t bag, got;
	CHECK_OK(bs_json_decode(&bag, seed_json, strlen(seed_json), "seed"));
	CHECK_ERR(bs_put(st, &bag, NULL), BS_ECONFIG);
	CHECK(strstr(bs_last_error(), "another shard list") != NULL, "says why: %s", bs_last_error());
	CHECK_ERR(bs_init(st), BS_ECONFIG);
	CHECK(strstr(bs_last_error(), "another shard list") != NULL, "init says why: %s", bs_last_error());
	bs_store_free(st);
	bs_config_free(sw);
	free(text);

	/* the same shards in the other order: the map names them, order is free */
	text = NULL;
	bs_config_t *rev = config_listing(&text, false, true);
	CHECK_OK(bs_store_open(&st, rev));
	bs_id_t id;
	CHECK_OK(bs_put(st, &bag, &id));
	int shard = -1;
	CHECK_OK(bs_get(&got, st, &id, NULL, &shard));
	CHECK(bs_value_equal(&got, &bag), "read back through the reordered list");
	CHECK(shard >= 0 && !strcmp(rev->shards[shard].name, cfg->shards[bs_route_id(&id, cfg->nshards)].name),
	      "found on the same named shard (%d)", shard);
	bs_value_clear(&got);
	bs_value_clear(&bag);
	bs_store_free(st);
	bs_config_free(rev);
	free(text);
}

static void test_unreachable(void)
{
	bs_config_t *bad = NULL;
	const char *text = "shards:\n  - {name: gone, host: 127.0.0.1, port: 1, database: bagstore, user: root}\n"
			   "timeouts: {connect: 1, read: 1, write: 1}\n";
	CHECK_OK(bs_config_parse(&bad, text, strlen(text), "gone.yaml"));
	bs_store_t *st = NULL;
	CHECK_OK(bs_store_open(&st, bad));
	bs_id_t id;
	bs_value_t got;
	bs_id_generate(&id);
	CHECK_ERR(bs_get(&got, st, &id, NULL, NULL), BS_EUNREACHABLE);
	CHECK(strstr(bs_last_error(), "shard gone (127.0.0.1:1)") != NULL, "names the shard: %s", bs_last_error());
	bs_shard_status_t ss[1];
	CHECK_OK(bs_shard_status(ss, st));
	CHECK(ss[0].state == BS_SHARD_DOWN && ss[0].error[0], "status reports it down: %s", ss[0].error);
	bs_store_free(st);
	bs_config_free(bad);
}

static void test_status_and_drop(bs_store_t *st)
{
	bs_shard_status_t ss[8];
	CHECK_OK(bs_shard_status(ss, st));
	for (int i = 0; i < cfg->nshards; i++) {
		CHECK(ss[i].state == BS_SHARD_UP, "shard %d up (%s)", i, ss[i].error);
		CHECK(ss[i].fingerprint_ok == 1, "shard %d fingerprint agrees", i);
		CHECK(strstr(ss[i].version, "MariaDB") != NULL, "version %s", ss[i].version);
	}
	bs_index_t def;
	CHECK_OK(bs_index_parse(&def, "index_title", "title:string(40),published:int", "title"));
	CHECK_OK(bs_index_create(st, &def));
	bs_index_list_t l;
	CHECK_OK(bs_index_list(&l, st));
	CHECK(l.len == 2, "two indexes listed (%d)", l.len);
	bs_index_list_free(&l);
	CHECK_OK(bs_index_drop(st, "index_title"));
	for (int i = 0; i < cfg->nshards; i++)
		CHECK(sql_int(i, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA=DATABASE()"
		                 " AND TABLE_NAME='index_title'") == 0,
		      "table dropped on shard %d", i);
	CHECK_ERR(bs_index_drop(st, "index_title"), BS_ENOTFOUND);
}

/* Properties named as the ownership table's columns (state, bucket): the
 * fence's fast form reads bagstore_buckets inside the index statement
 * (INSERT ... SELECT ... ON DUPLICATE KEY UPDATE), where a bare column
 * name could be ambiguous or read the wrong table. The rows must be the
 * body's, through a put, a change that moves the row to the other shard,
 * a put of the same values, and a delete. */
static void test_fence_names(bs_store_t *st)
{
	bs_index_t def;
	bs_value_t bag;
	bs_id_t id;
	const char *ix = "SELECT COUNT(*) FROM index_fence WHERE entity_id=X'0000000a00004000800000000000f0e1'";
	const char *v1 = "{\"id\":{\"$uuid\":\"0000000a-0000-4000-8000-00000000f0e1\"},\"state\":3,\"bucket\":9}";
	const char *v2 = "{\"id\":{\"$uuid\":\"0000000a-0000-4000-8000-00000000f0e1\"},\"state\":4,\"bucket\":11}";
	CHECK_OK(bs_index_parse(&def, "index_fence", "state:int,bucket:int", "state"));
	CHECK_OK(bs_index_create(st, &def));
	CHECK_OK(bs_json_decode(&bag, v1, strlen(v1), "v1"));
	CHECK_OK(bs_put(st, &bag, &id));
	bs_value_clear(&bag);
	/* an int's shard is its value mod N (two shards: 3 on s1, 4 on s0) */
	CHECK(sql_int(1, "SELECT COUNT(*) FROM index_fence WHERE state=3 AND bucket=9") == 1, "row 3/9 on s1");
	CHECK_OK(bs_json_decode(&bag, v2, strlen(v2), "v2"));
	CHECK_OK(bs_put(st, &bag, &id));
	CHECK_OK(bs_put(st, &bag, &id)); /* the same values again: the upsert matches, changes nothing */
	bs_value_clear(&bag);
	CHECK(sql_int(0, "SELECT COUNT(*) FROM index_fence WHERE state=4 AND bucket=11") == 1, "row 4/11 on s0");
	CHECK(sql_int(1, ix) == 0, "the old row on s1 is gone");
	CHECK_OK(bs_delete(st, &id));
	CHECK(sql_int(0, ix) + sql_int(1, ix) == 0, "no row after the delete");
	CHECK_OK(bs_index_drop(st, "index_fence"));
}

/* A reader that finds a cut-over's roll-forward half done (its bucket
 * incoming here, gone at the source) finishes it, unless its account may
 * not write bagstore_buckets (the app's, the readonly one): then ownership
 * is left to the mover, and the refused transaction is rolled back, not
 * left open on the connection, where its later reads would see one frozen
 * snapshot and its writes outside a transaction would never commit. */
static void test_denied_roll_forward(bs_store_t *st)
{
	static const char user[] = "bs_u_norf";
	bs_config_t *ucfg = NULL;
	bs_store_t *ust = NULL;
	bs_value_t bag, got;
	bs_id_t id;
	int shard = -1, bucket = -1, k;
	char q[512], *yaml = NULL;
	size_t o = 0, cap = 4096;

	for (k = 0; k < 200 && shard != 1; k++) { /* an entity on s1 */
		bs_id_generate(&id);
		CHECK_OK(bs__route_entity(&shard, &bucket, st, &id));
	}
	if (shard != 1)
		return;
	bs_value_map(&bag);
	bs_value_bin(&got, id.b, 16);
	bs_map_set(&bag, "id", 2, &got);
	CHECK_OK(bs_put(st, &bag, NULL));
	bs_value_clear(&bag);
	/* an account that reads only, as a store of its own */
	for (int i = 0; i < 2; i++) {
		snprintf(q, sizeof q, "DROP USER IF EXISTS %s@'%%'", user);
		sql(i, q);
		snprintf(q, sizeof q, "CREATE USER %s@'%%' IDENTIFIED BY 'norf-pw'", user);
		sql(i, q);
		snprintf(q, sizeof q, "GRANT SELECT ON %s.* TO %s@'%%'", cfg->shards[i].database, user);
		sql(i, q);
	}
	setenv("BS_U_NORF_PW", "norf-pw", 1);
	yaml = malloc(cap);
	o += (size_t)snprintf(yaml + o, cap - o, "shards:\n");
	for (int i = 0; i < 2; i++)
		o += (size_t)snprintf(yaml + o, cap - o,
		                      "  - {name: %s, host: %s, port: %u, database: %s, user: %s, "
		                      "password_env: BS_U_NORF_PW}\n",
		                      cfg->shards[i].name, cfg->shards[i].host, cfg->shards[i].port,
		                      cfg->shards[i].database, user);
	CHECK_OK(bs_config_parse(&ucfg, yaml, o, "norf.yaml"));
	if (ucfg)
		CHECK_OK(bs_store_open(&ust, ucfg));
	/* the cut-over's flip committed at s0, its roll-forward on s1 not yet */
	snprintf(q, sizeof q, "UPDATE bagstore_buckets SET state='incoming', peer='%s', move_id=99 WHERE bucket=%d",
	         cfg->shards[0].name, bucket);
	sql(1, q);
	snprintf(q, sizeof q,
	         "INSERT INTO bagstore_buckets (bucket, state, peer, move_id) VALUES (%d, 'gone', '%s', 99)"
	         " ON DUPLICATE KEY UPDATE state='gone', peer='%s', move_id=99",
	         bucket, cfg->shards[1].name, cfg->shards[1].name);
	sql(0, q);
	if (ust) {
		MYSQL_RES *res = NULL;
		int rc = bs_get(&got, ust, &id, NULL, &shard);
		CHECK(rc == BS_EUNREACHABLE, "a reader that may not roll forward waits for the mover: %d %s", rc,
		      bs_last_error());
		if (rc == 0)
			bs_value_clear(&got);
		snprintf(q, sizeof q, "SELECT @@in_transaction");
		CHECK_OK(bs__shard_query(&res, ust, 1, q, strlen(q)));
		MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
		CHECK(row && row[0] && !strcmp(row[0], "0"),
		      "the refused roll-forward left no transaction open on s1 (%s)",
		      row && row[0] ? row[0] : "no row");
		if (res)
			mysql_free_result(res);
	}
	snprintf(q, sizeof q, "SELECT COUNT(*) FROM bagstore_buckets WHERE bucket=%d AND state='incoming'", bucket);
	CHECK(sql_int(1, q) == 1, "ownership unchanged by the account that may not write it");
	/* the mover's roll-forward, and the entity reads again */
	snprintf(q, sizeof q, "UPDATE bagstore_buckets SET state='owned', peer='', move_id=0 WHERE bucket=%d", bucket);
	sql(1, q);
	snprintf(q, sizeof q, "DELETE FROM bagstore_buckets WHERE bucket=%d", bucket);
	sql(0, q);
	sql(1, "UPDATE bagstore_meta SET v=v+1 WHERE k='owned_version'");
	sql(0, "UPDATE bagstore_meta SET v=v+1 WHERE k='owned_version'");
	if (ust) {
		CHECK_OK(bs_get(&got, ust, &id, NULL, &shard));
		bs_value_clear(&got);
		bs_store_free(ust);
	}
	CHECK_OK(bs_delete(st, &id));
	for (int i = 0; i < 2; i++) {
		snprintf(q, sizeof q, "DROP USER IF EXISTS %s@'%%'", user);
		sql(i, q);
	}
	bs_config_free(ucfg);
	free(yaml);
}

/* A bulk put of 100 bags stops at the first one refused on input,
 * whichever half of the batch (each half is encoded on its own thread):
 * the ones before it are written, it and the rest are not. */
static void test_bulk_refused(bs_store_t *st)
{
	enum { N = 100 };
	bs_value_t bags[N], v;
	bs_id_t ids[N];
	bool written[N];
	const int bad[][2] = { { 80, -1 }, { 10, 70 } }; /* refused bags (-1: none) */
	for (int c = 0; c < 2; c++) {
		for (int k = 0; k < N; k++) {
			bs_id_t id;
			char hex[64]; /* 32 hex digits; room for what the compiler cannot see of c and k */
			snprintf(hex, sizeof hex, "b0%02d%04d000040008000000000000000", c, k);
			CHECK_OK(bs_id_parse(&id, hex));
			bs_value_map(&bags[k]);
			if (k == bad[c][0] || k == bad[c][1]) {
				bs_value_str(&v, "not an id", 9); /* refused: an id is 16 bytes */
			} else {
				bs_value_bin(&v, id.b, 16);
			}
			bs_map_set(&bags[k], "id", 2, &v);
			bs_value_int(&v, k);
			bs_map_set(&bags[k], "k", 1, &v);
		}
		int rc = bs_put_many(st, bags, N, ids, written);
		char want[64];
		snprintf(want, sizeof want, "entity %d of the batch", bad[c][0] + 1);
		CHECK(rc == BS_EINVAL, "a batch with bag %d refused fails (%d)", bad[c][0] + 1, rc);
		CHECK(strstr(bs_last_error(), want) != NULL, "naming the first refused: %s", bs_last_error());
		int nw = 0, first_unwritten = -1;
		for (int k = 0; k < N; k++) {
			nw += written[k];
			if (!written[k] && first_unwritten < 0)
				first_unwritten = k;
		}
		CHECK(nw == bad[c][0] && first_unwritten == bad[c][0],
		      "the %d before it are written, no other (%d, %d)", bad[c][0], nw, first_unwritten);
		bs_value_t got;
		CHECK_OK(bs_get(&got, st, &ids[bad[c][0] - 1], NULL, NULL));
		bs_value_clear(&got);
		for (int k = 0; k < N; k++)
			bs_value_clear(&bags[k]);
	}
}

typedef struct {
	const bs_value_t *bags;
	size_t n;
	bs_id_t *ids;
	bs_encoded_t *enc;
	int rc;
} ahead_t;

static void *encode_ahead(void *arg)
{
	ahead_t *a = arg;
	a->rc = bs_encode_many(&a->enc, a->bags, a->n, a->ids);
	return NULL;
}

/* A bag of 100 per batch, id b1BBKKKK..., "k" its batch times 1000 plus k;
 * bad: a bag whose id is refused (-1: none). */
static void encoded_batch(bs_value_t *bags, int batch, int bad)
{
	for (int k = 0; k < 100; k++) {
		bs_id_t id;
		bs_value_t v;
		char hex[64];
		snprintf(hex, sizeof hex, "b1%02d%04d000040008000000000000000", batch, k);
		CHECK_OK(bs_id_parse(&id, hex));
		bs_value_map(&bags[k]);
		if (k == bad)
			bs_value_str(&v, "not an id", 9);
		else
			bs_value_bin(&v, id.b, 16);
		bs_map_set(&bags[k], "id", 2, &v);
		bs_value_int(&v, batch * 1000 + k);
		bs_map_set(&bags[k], "k", 1, &v);
	}
}

/* A loader's pipeline, as `bagstore put` runs it: each batch encoded on a
 * thread (bs_encode_many) while the one before it is written
 * (bs_put_encoded); every entity is stored as given. A batch with a bag
 * refused on input writes the ones before it and names it; an empty one
 * writes nothing. */
static void test_bulk_encoded(bs_store_t *st)
{
	enum { B = 3, N = 100 };
	bs_value_t bags[B][N];
	bs_id_t ids[B][N];
	bool written[N];
	for (int b = 0; b < B; b++)
		encoded_batch(bags[b], b, -1);
	ahead_t a = { bags[0], N, ids[0], NULL, 0 };
	encode_ahead(&a);
	for (int b = 0; b < B; b++) {
		bs_encoded_t *cur = a.enc;
		CHECK(a.rc == 0 && cur, "batch %d encoded (%d, on the thread that encoded it)", b, a.rc);
		pthread_t t;
		bool more = false;
		if (b + 1 < B) {
			a = (ahead_t){ bags[b + 1], N, ids[b + 1], NULL, 0 };
			more = pthread_create(&t, NULL, encode_ahead, &a) == 0;
			CHECK(more, "a thread encodes batch %d", b + 1);
		}
		memset(written, 0, sizeof written);
		if (cur)
			CHECK_OK(bs_put_encoded(st, cur, written));
		bs_encoded_free(cur);
		if (more)
			pthread_join(t, NULL);
		int nw = 0;
		for (int k = 0; k < N; k++)
			nw += written[k];
		CHECK(nw == N, "batch %d: all %d written (%d)", b, N, nw);
	}
	int right = 0;
	for (int b = 0; b < B; b++)
		for (int k = 0; k < N; k++) {
			bs_value_t got;
			const bs_value_t *kv;
			if (bs_get(&got, st, &ids[b][k], NULL, NULL) == 0) {
				kv = bs_map_get(&got, "k");
				right += kv && kv->type == BS_INT && kv->v.i == b * 1000 + k;
				bs_value_clear(&got);
			}
			bs_value_clear(&bags[b][k]);
		}
	CHECK(right == B * N, "every entity reads back as given (%d of %d)", right, B * N);

	/* bag 31 refused: the 30 before it written, the call names it */
	bs_encoded_t *e = NULL;
	encoded_batch(bags[0], 9, 30);
	CHECK_OK(bs_encode_many(&e, bags[0], N, ids[0]));
	int rc = e ? bs_put_encoded(st, e, written) : -1;
	CHECK(rc == BS_EINVAL && strstr(bs_last_error(), "entity 31 of the batch"),
	      "the refused bag is the write's answer (%d: %s)", rc, bs_last_error());
	int nw = 0, first = -1;
	for (int k = 0; k < N; k++) {
		nw += written[k];
		if (!written[k] && first < 0)
			first = k;
	}
	CHECK(nw == 30 && first == 30, "the 30 before it are written, no other (%d, %d)", nw, first);
	bs_encoded_free(e);
	for (int k = 0; k < N; k++)
		bs_value_clear(&bags[0][k]);
	CHECK_OK(bs_encode_many(&e, bags[0], 0, ids[0]));
	CHECK_OK(e ? bs_put_encoded(st, e, written) : -1);
	bs_encoded_free(e);
	CHECK_ERR(bs_put_encoded(st, NULL, written), BS_EINVAL);
}

int main(void)
{
	if (test_config("store"))
		return 1;
	bs_store_t *st = NULL;
	CHECK_OK(bs_store_open(&st, cfg));
	test_init(st);
	test_seed(st);
	test_errors(st);
	test_own_writes(st);
	test_pace_given_back();
	test_latency_free();
	test_bulk_refused(st);
	test_bulk_encoded(st);
	test_fingerprint();
	test_unreachable();
	test_status_and_drop(st);
	if (cfg->nshards == 2) {
		test_fence_names(st);
		test_denied_roll_forward(st);
	}
	bs_store_free(st);
	raw_close_all();
	bs_config_free(cfg);
	mysql_library_end();
	return t_done("store");
}

/*
 * test_leaving_log.c - every write to a bucket that is `leaving` leaves its
 * row in the source's bagstore_move_log, whichever form wrote it (the
 * fence's fast forms must refuse a leaving bucket and hand the write to
 * the full form, which logs it): puts and deletes without any index, with
 * one, and bulk puts with and without, against the two real test shards
 * (tests/run.sh starts them). With the index, whose rows live in the same
 * bucket, their writes are logged too (kind 1): a put's, a delete's and a
 * bulk put's. The bucket is made `leaving` by hand, as a move's copy phase
 * does, and the log read with plain SQL. A write to an `owned` bucket logs
 * nothing. And a bulk put over both shards, one of them leaving: both
 * written, only the leaving one's logged; and when the other shard fails
 * (its max_allowed_packet too small for the batch), the leaving shard's
 * full form is still sent: its entity is written and logged, the other
 * reported not written, the error naming that shard. A repair's fixes in
 * leaving buckets are logged too. So are overwrites there by a store that
 * has not seen the bucket leave, of a row a fast form wrote (its bucket
 * stored) and of one with no bucket (a bulk put's, an older bagstore's):
 * the fence's check refuses both, on servers whose sessions start with
 * the check off as well.
 */
#include "bagstore.h"
#include "rawsql.h"
#include "t.h"

#include <mysql.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOVE 7001

static void bag_of(bs_value_t *bag, const char *hex, int g)
{
	char json[200];
	snprintf(json, sizeof json, "{\"id\":{\"$uuid\":\"%.8s-%.4s-%.4s-%.4s-%.12s\"},\"g\":%d}", hex, hex + 8,
	         hex + 12, hex + 16, hex + 20, g);
	if (bs_json_decode(bag, json, strlen(json), "bag")) {
		fprintf(stderr, "bag: %s\n", bs_last_error());
		exit(1);
	}
}

/* The shard that owns bucket b. */
static int owner_of(int b)
{
	char q[160];
	snprintf(q, sizeof q, "SELECT COUNT(*) FROM bagstore_buckets WHERE bucket=%d AND state='owned'", b);
	for (int i = 0; i < cfg->nshards; i++)
		if (sql_int(i, q) == 1)
			return i;
	return -1;
}

/* Bucket b's state on shard, its ownership version counted up (as a
 * move's steps do: a cleaner's check judges rows by the version it read). */
static void set_state(int shard, int b, const char *state)
{
	char q[200];
	snprintf(q, sizeof q, "UPDATE bagstore_buckets SET state='%s', move_id=%d WHERE bucket=%d", state, MOVE, b);
	sql(shard, q);
	sql(shard, "UPDATE bagstore_meta SET v=v+1 WHERE k='owned_version'");
}

/* Rows of the move's log for id (kind -1: any kind) on shard. */
static long long logged(int shard, const char *hex, int kind)
{
	char q[240];
	snprintf(q, sizeof q, "SELECT COUNT(*) FROM bagstore_move_log WHERE move_id=%d AND id=X'%s'%s", MOVE, hex,
	         kind == 0   ? " AND kind=0"
	         : kind == 1 ? " AND kind=1"
	                     : "");
	return sql_int(shard, q);
}

static long long count_of(int shard, const char *hex)
{
	char q[160];
	snprintf(q, sizeof q, "SELECT COUNT(*) FROM entities WHERE id=X'%s'", hex);
	return sql_int(shard, q);
}

/* A store of its own (a fresh catalog cache: sees the index just made). */
static bs_store_t *store(void)
{
	bs_store_t *st = NULL;
	if (bs_store_open(&st, cfg)) {
		fprintf(stderr, "open: %s\n", bs_last_error());
		exit(1);
	}
	return st;
}

/* The statements a store sent: how many, whether one was refused with
 * error 1452 (a fast form's fence), and the opening of the first that is
 * not a read (the write's first form: a catalog or map read the store
 * makes on its own schedule may come before it). */
typedef struct {
	int n, refused;
	char first[128];
} sent_t;

#define FULL_FORM "SET @bs_own=0;START"

/* called from the store's threads too (a new store loads its map from
 * every shard at once) */
static pthread_mutex_t sent_mu = PTHREAD_MUTEX_INITIALIZER;

static void on_sent(void *arg, const bs_trace_t *t)
{
	sent_t *s = arg;
	pthread_mutex_lock(&sent_mu);
	s->n++;
	s->refused += t->err == 1452;
	if (!s->first[0] && strncmp(t->sql, "SELECT ", 7))
		snprintf(s->first, sizeof s->first, "%s", t->sql);
	pthread_mutex_unlock(&sent_mu);
}

/* One put, one delete and a bulk put of three into bucket b while it is
 * leaving (logged), then a put once it is owned again (not logged).
 * Between them, what the writer's hint does (entity.c's leaving_hinted):
 * once a full form found the bucket leaving, the next put there is the
 * full form alone (one statement, no refused fast form), logged as well;
 * once the bucket is owned again, one full form finds it so and the next
 * put is the fast form again.
 * prefix: the ids' first 8 hex digits; their last 3 name bucket b (B is
 * 4096 for the two test shards: an id's bucket is its last 12 bits). */
static void writes_logged(const char *what, const char *prefix, int g)
{
	char ids[4][64]; /* 32 hex digits; room for what the compiler cannot see of prefix */
	bs_id_t id;
	bs_value_t bag, bags[3];
	for (int k = 0; k < 4; k++)
		snprintf(ids[k], sizeof ids[k], "%s00004000800000000000%d%03x", prefix, k, 0x10a);
	CHECK_OK(bs_id_parse(&id, ids[0]));
	int b = bs_route_id(&id, 4096), s = owner_of(b);
	CHECK(s >= 0, "%s: bucket %d has an owner", what, b);
	if (s < 0)
		return;
	bs_store_t *st = store();
	set_state(s, b, "leaving");

	bag_of(&bag, ids[0], g);
	CHECK_OK(bs_put(st, &bag, NULL));
	bs_value_clear(&bag);
	CHECK(logged(s, ids[0], 0) == 1, "%s: a put into a leaving bucket is in the move log", what);
	CHECK(count_of(s, ids[0]) == 1, "%s: and written", what);
	if (g >= 0)
		CHECK(logged(s, ids[0], 1) == 1, "%s: and so are its index rows (kind 1)", what);
	sent_t sent = { 0 };
	sql(s, "DELETE FROM bagstore_move_log");
	bs_store_trace(st, on_sent, &sent);
	bag_of(&bag, ids[0], g);
	CHECK_OK(bs_put(st, &bag, NULL));
	bs_value_clear(&bag);
	bs_store_trace(st, NULL, NULL);
	CHECK(sent.refused == 0, "%s: a second put into the leaving bucket sends no fast form to be refused (%d were)",
	      what, sent.refused);
	CHECK(!strncmp(sent.first, FULL_FORM, strlen(FULL_FORM)), "%s: its first statement is the full form: %s", what,
	      sent.first);
	CHECK(logged(s, ids[0], 0) == 1, "%s: and it is in the move log", what);
	if (g >= 0)
		CHECK(logged(s, ids[0], 1) == 1, "%s: and so are its index rows (kind 1)", what);
	sql(s, "DELETE FROM bagstore_move_log");
	CHECK_OK(bs_delete(st, &id));
	CHECK(logged(s, ids[0], 0) == 1, "%s: a delete from a leaving bucket is in the move log", what);
	CHECK(count_of(s, ids[0]) == 0, "%s: and deleted", what);
	if (g >= 0)
		CHECK(logged(s, ids[0], 1) == 1, "%s: and so is the removal of its index rows (kind 1)", what);

	for (int k = 0; k < 3; k++)
		bag_of(&bags[k], ids[k + 1], g);
	bs_id_t out[3];
	CHECK_OK(bs_put_many(st, bags, 3, out, NULL));
	for (int k = 0; k < 3; k++) {
		CHECK(logged(s, ids[k + 1], 0) == 1, "%s: bulk put's entity %d is in the move log", what, k + 1);
		CHECK(count_of(s, ids[k + 1]) == 1, "%s: and written", what);
		if (g >= 0)
			CHECK(logged(s, ids[k + 1], 1) == 1, "%s: and entity %d's index rows (kind 1)", what, k + 1);
		bs_value_clear(&bags[k]);
	}

	set_state(s, b, "owned");
	sql(s, "DELETE FROM bagstore_move_log");
	bag_of(&bag, ids[0], g);
	CHECK_OK(bs_put(st, &bag, NULL));
	bs_value_clear(&bag);
	memset(&sent, 0, sizeof sent);
	bs_store_trace(st, on_sent, &sent);
	bag_of(&bag, ids[0], g);
	CHECK_OK(bs_put(st, &bag, NULL));
	bs_value_clear(&bag);
	bs_store_trace(st, NULL, NULL);
	/* the fast form: its upsert, or with an index the write procedure's
	 * CALL (the intent and that upsert) */
	CHECK(sent.n >= 1 && sent.refused == 0 && strncmp(sent.first, FULL_FORM, strlen(FULL_FORM)) &&
	              (strstr(sent.first, "INSERT") != NULL || !strncmp(sent.first, "CALL bagstore_put_v2(", 21)),
	      "%s: back to owned, the put after the one that found it so is the fast form: %s", what, sent.first);
	bag_of(&bags[0], ids[1], g);
	CHECK_OK(bs_put_many(st, bags, 1, out, NULL));
	bs_value_clear(&bags[0]);
	CHECK(sql_int(s, "SELECT COUNT(*) FROM bagstore_move_log") == 0, "%s: writes to an owned bucket log nothing",
	      what);
	bs_store_free(st);
}

/* Overwrites into a leaving bucket, each by a store of its own (no hint
 * that the bucket leaves: the fast form goes first): X, which a fast form
 * wrote while the bucket was owned (its bucket stored: the overwrite's
 * check is its turned flip), and Y, whose row has no bucket (a bulk put's,
 * a move's copy, an older bagstore's: the overwrite's check is the bucket
 * it sets). Each is refused by the fence and logged by the full form. */
static void overwrites_logged(const char *what, const char *prefix, int g)
{
	char x[64], y[64], q[200];
	bs_value_t bag;
	snprintf(x, sizeof x, "%s00004000800000000000%d%03x", prefix, 1, 0x10b);
	snprintf(y, sizeof y, "%s00004000800000000000%d%03x", prefix, 2, 0x10b);
	bs_id_t id;
	CHECK_OK(bs_id_parse(&id, x));
	int b = bs_route_id(&id, 4096), s = owner_of(b);
	CHECK(s >= 0, "%s: bucket %d has an owner", what, b);
	if (s < 0)
		return;
	bs_store_t *st = store();
	for (int k = 0; k < 2; k++) {
		bag_of(&bag, k ? y : x, g);
		CHECK_OK(bs_put(st, &bag, NULL));
		bs_value_clear(&bag);
	}
	bs_store_free(st);
	snprintf(q, sizeof q, "SELECT COUNT(*) FROM entities WHERE id=X'%s' AND bucket=%d", x, b);
	CHECK(sql_int(s, q) == 1, "%s: a put while the bucket is owned stores its bucket", what);
	snprintf(q, sizeof q, "UPDATE entities SET bucket=NULL WHERE id=X'%s'", y);
	sql(s, q);
	set_state(s, b, "leaving");
	sql(s, "DELETE FROM bagstore_move_log");
	for (int k = 0; k < 2; k++) {
		sent_t sent = { 0 };
		st = store();
		bs_store_trace(st, on_sent, &sent);
		bag_of(&bag, k ? y : x, g);
		CHECK_OK(bs_put(st, &bag, NULL));
		bs_value_clear(&bag);
		bs_store_trace(st, NULL, NULL);
		bs_store_free(st);
		CHECK(sent.refused == 1, "%s: the overwrite of %s: its fast form refused by the fence (%d)", what,
		      k ? "a row with no bucket" : "a row with its bucket", sent.refused);
		CHECK(logged(s, k ? y : x, 0) == 1, "%s: and the overwrite of %s is in the move log", what,
		      k ? "a row with no bucket" : "a row with its bucket");
	}
	set_state(s, b, "owned");
	sql(s, "DELETE FROM bagstore_move_log");
}

/* New sessions on both shards start with foreign_key_checks off (or on
 * again). */
static void checks_off(bool off)
{
	for (int i = 0; i < cfg->nshards; i++)
		sql(i, off ? "SET GLOBAL foreign_key_checks=0" : "SET GLOBAL foreign_key_checks=1");
}

/* The first bucket from 0x200 that shard i owns. */
static int bucket_of(int i)
{
	for (int b = 0x200; b < 0x400; b++)
		if (owner_of(b) == i)
			return b;
	return -1;
}

/* plant (SQL on shard, a wrong row of ix_g in bucket b there), b made
 * leaving there (its move log emptied), then verify --repair of ix_g. */
static void repair_in_leaving(bs_store_t *st, int shard, int b, const char *plant)
{
	bs_drift_t d;
	sql(shard, plant);
	set_state(shard, b, "leaving");
	sql(shard, "DELETE FROM bagstore_move_log");
	CHECK_OK(bs_verify(&d, st, "ix_g", true));
}

/* A repair's fixes (verify --repair: drift.c) in leaving buckets are
 * logged for their move as a writer's are, each in its fenced
 * transaction: a row of X on the wrong shard, in a bucket leaving there,
 * deleted and logged; X's row on the right shard but in another bucket,
 * leaving, overwritten and logged (the bucket it leaves). ix_g's rows are
 * in the bucket of g. */
static void repair_logged(const char *prefix)
{
	char x[64], q[300];
	bs_id_t id;
	bs_value_t bag;
	bs_drift_t d;
	snprintf(x, sizeof x, "%s00004000800000000000%d%03x", prefix, 0, 0x10a);
	CHECK_OK(bs_id_parse(&id, x));
	int s = owner_of(0x10a), o = 1 - s, b2 = bucket_of(o), b3 = bucket_of(s);
	CHECK(s >= 0 && b2 >= 0 && b3 >= 0, "repair: buckets to plant rows in (%d, %d, %d)", s, b2, b3);
	if (s < 0 || b2 < 0 || b3 < 0)
		return;
	bs_store_t *st = store();
	bag_of(&bag, x, 0x10a);
	CHECK_OK(bs_put(st, &bag, NULL));
	bs_value_clear(&bag);

	snprintf(q, sizeof q, "INSERT INTO ix_g (g, entity_id) VALUES (%d, X'%s')", b2, x);
	repair_in_leaving(st, o, b2, q);
	snprintf(q, sizeof q, "SELECT COUNT(*) FROM ix_g WHERE entity_id=X'%s'", x);
	CHECK(sql_int(o, q) == 0, "repair: X's row on the wrong shard, in a leaving bucket, is deleted");
	CHECK(logged(o, x, 1) == 1, "repair: and its entity logged for the move (kind 1)");
	set_state(o, b2, "owned");

	snprintf(q, sizeof q, "UPDATE ix_g SET g=%d WHERE entity_id=X'%s'", b3, x);
	repair_in_leaving(st, s, b3, q);
	snprintf(q, sizeof q, "SELECT g FROM ix_g WHERE entity_id=X'%s'", x);
	CHECK(sql_int(s, q) == 0x10a, "repair: X's row in a leaving bucket of the right shard is overwritten");
	CHECK(logged(s, x, 1) == 1, "repair: and its entity logged for the move of the bucket it leaves (kind 1)");
	set_state(s, b3, "owned");
	sql(s, "DELETE FROM bagstore_move_log");

	/* a row on a shard that holds its bucket in no state (no ownership
	 * row there): deleted, fenced on the bucket still having none */
	snprintf(q, sizeof q, "SELECT COUNT(*) FROM bagstore_buckets WHERE bucket=%d", b3);
	CHECK(sql_int(o, q) == 0, "repair: shard %d holds bucket %d in no state", o, b3);
	snprintf(q, sizeof q, "INSERT INTO ix_g (g, entity_id) VALUES (%d, X'%s')", b3, x);
	sql(o, q);
	CHECK_OK(bs_verify(&d, st, "ix_g", true));
	snprintf(q, sizeof q, "SELECT COUNT(*) FROM ix_g WHERE entity_id=X'%s'", x);
	CHECK(sql_int(o, q) == 0, "repair: X's row there is deleted");
	CHECK(sql_int(s, q) == 1, "repair: and its right row kept");
	CHECK_OK(bs_delete(st, &id));
	bs_store_free(st);
}

/* A bag whose body is larger than pad bytes (letters that do not
 * compress). */
static void big_bag_of(bs_value_t *bag, const char *hex, int g, size_t pad)
{
	size_t cap = pad + 200;
	char *json = malloc(cap);
	if (!json)
		exit(1);
	int n = snprintf(json, cap, "{\"id\":{\"$uuid\":\"%.8s-%.4s-%.4s-%.4s-%.12s\"},\"g\":%d,\"pad\":\"", hex,
	                 hex + 8, hex + 12, hex + 16, hex + 20, g);
	unsigned r = 12345;
	for (size_t k = 0; k < pad; k++) {
		r = r * 1103515245u + 12345u;
		json[n + k] = (char)('a' + (r >> 16) % 26);
	}
	snprintf(json + n + pad, cap - (size_t)n - pad, "\"}");
	if (bs_json_decode(bag, json, strlen(json), "bag")) {
		fprintf(stderr, "bag: %s\n", bs_last_error());
		exit(1);
	}
	free(json);
}

/* A bulk put of one entity into leaving bucket b (0x10a: ids ending
 * ...10a) and one into bucket b+1, on the other shard. */
static void mixed_shards(const char *what, const char *prefix, int g)
{
	char ids[4][64]; /* 32 hex digits; room for what the compiler cannot see of prefix */
	bs_id_t id, out[2];
	bs_value_t bags[2];
	bool written[2];
	for (int k = 0; k < 4; k++)
		snprintf(ids[k], sizeof ids[k], "%s00004000800000000000%d%03x", prefix, k, 0x10a + k % 2);
	CHECK_OK(bs_id_parse(&id, ids[0]));
	int b = bs_route_id(&id, 4096), s = owner_of(b), o = owner_of(b + 1);
	CHECK(s >= 0 && o >= 0 && s != o, "%s: buckets %d and %d on two shards", what, b, b + 1);
	if (s < 0 || o < 0 || s == o)
		return;
	set_state(s, b, "leaving");
	sql(s, "DELETE FROM bagstore_move_log");

	/* both shards answer */
	bs_store_t *st = store();
	bag_of(&bags[0], ids[0], g);
	bag_of(&bags[1], ids[1], g);
	CHECK_OK(bs_put_many(st, bags, 2, out, written));
	CHECK(written[0] && written[1], "%s: a bulk put over both shards, one leaving: both written", what);
	CHECK(count_of(s, ids[0]) == 1 && count_of(o, ids[1]) == 1, "%s: both are there", what);
	CHECK(logged(s, ids[0], 0) == 1, "%s: the leaving one is in the move log", what);
	if (g >= 0)
		CHECK(logged(s, ids[0], 1) == 1, "%s: and its index rows (kind 1)", what);
	CHECK(logged(o, ids[1], -1) == 0, "%s: the owned one is not", what);
	bs_value_clear(&bags[0]);
	bs_value_clear(&bags[1]);
	bs_store_free(st);

	/* the other shard fails for good: its statement is too big for it */
	sql(s, "DELETE FROM bagstore_move_log");
	long long old_max = sql_int(o, "SELECT @@global.max_allowed_packet");
	sql(o, "SET GLOBAL max_allowed_packet=16384");
	st = store(); /* new connections: the new limit */
	bag_of(&bags[0], ids[2], g);
	big_bag_of(&bags[1], ids[3], g, 30000);
	int rc = bs_put_many(st, bags, 2, out, written);
	char msg[1024], name[64];
	snprintf(msg, sizeof msg, "%s", bs_last_error());
	snprintf(name, sizeof name, "shard %s", cfg->shards[o].name);
	CHECK(rc != 0, "%s: a bulk put whose other shard fails fails", what);
	CHECK(strstr(msg, name) != NULL, "%s: naming that shard (%s): %s", what, name, msg);
	CHECK(written[0], "%s: the leaving shard's entity is written all the same", what);
	CHECK(!written[1], "%s: the failed shard's is not", what);
	CHECK(count_of(s, ids[2]) == 1, "%s: it is there", what);
	CHECK(logged(s, ids[2], 0) == 1, "%s: and in the move log", what);
	if (g >= 0)
		CHECK(logged(s, ids[2], 1) == 1, "%s: and its index rows (kind 1)", what);
	CHECK(count_of(o, ids[3]) == 0, "%s: the failed shard's is not there", what);
	bs_value_clear(&bags[0]);
	bs_value_clear(&bags[1]);
	/* the intents' removal is the write's last statement, sent without
	 * waiting: it has run once the store is freed (its answer read) */
	bs_store_free(st);
	CHECK(sql_int(s,
	              "SELECT (SELECT COUNT(*) FROM bagstore_intents)+(SELECT COUNT(*) FROM bagstore_batch_intents)") ==
	              0,
	      "%s: no intent left on the leaving shard", what);
	char q[80];
	snprintf(q, sizeof q, "SET GLOBAL max_allowed_packet=%lld", old_max);
	sql(o, q);

	set_state(s, b, "owned");
	sql(s, "DELETE FROM bagstore_move_log");
}

int main(void)
{
	if (test_config("leaving_log"))
		return 1;
	bs_store_t *st = store();
	CHECK_OK(bs_init(st));

	writes_logged("no index", "1eaf0001", -1);
	overwrites_logged("no index", "1eaf0006", -1);
	/* servers whose sessions start with the foreign-key check off (a
	 * global setting, an init_connect): the fence turns it on for itself */
	checks_off(true);
	overwrites_logged("no index, sessions without the check", "1eaf0008", -1);
	checks_off(false);
	mixed_shards("no index, two shards", "1eaf0003", -1);

	/* one index, its rows in the entity's bucket (an int's bucket is its
	 * residue: 0x10a) */
	bs_index_t def;
	CHECK_OK(bs_index_parse(&def, "ix_g", "g:int", "g"));
	CHECK_OK(bs_index_create(st, &def));
	bs_store_free(st);
	writes_logged("one index", "1eaf0002", 0x10a);
	overwrites_logged("one index", "1eaf0007", 0x10b);
	checks_off(true);
	overwrites_logged("one index, sessions without the check", "1eaf0009", 0x10b);
	checks_off(false);
	mixed_shards("one index, two shards", "1eaf0004", 0x10a);
	repair_logged("1eaf0005");

	raw_close_all();
	bs_config_free(cfg);
	mysql_library_end();
	return t_done("leaving_log");
}

/*
 * test_fast_kill.c - a single put and a single delete, each with one
 * index, SIGKILLed between their entity write (the fence's fast form:
 * the intent inserted, the entity written from the bucket's ownership row,
 * one transaction) and their index rows, against the two real
 * test shards (tests/run.sh starts them). The entity is written and its
 * intent is there, its named lock gone with the process; `bagstore
 * cleaner --once` (the repair loop) makes the index rows what the body
 * says and removes the intent. Then the window batched intent removal
 * opens (a write done, its intent waiting for its batch): a put killed
 * there leaves its intent, lock free, for the repair loop; a batch removes
 * only the intents whose entity is still at their version; a later write
 * of the same connection supersedes an earlier one's intent only when it
 * replaced exactly that version (here another writer came between, and
 * the earlier write's rows landed after that writer's: its intent must
 * stay), and a delete's only by a later write that found no entity (a
 * put that replaced another writer's body may skip its unchanged row,
 * which the delete's late rows took: the delete's intent must stay); and a write tried again after its fast form was refused (its
 * intent committed) and its full form timed out finds its own intent and
 * goes on. Last, a put whose intent's named lock another session holds
 * (fault fixed_token) fails and writes nothing: its refused token is not
 * taken for the fence's refusal of the entity (in the write procedure
 * SQLSTATE 45000, in the two statements' form error 1048, a NULL token;
 * the fence's is 1452);
 * and so do a put and a conditional put whose full form goes first (their
 * bucket leaving, the store's hint set).
 */
#include "bagstore.h"
#include "rawsql.h"
#include "gbag.h"
#include "t.h"

#include <limits.h>
#include <mysql.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* An id on shard 1 (bucket 0x00b, odd) whose g's index row is on shard 0
 * (g even). */
#define ID \
	"fa570000000040008000000000000" \
	"00b"
#define UUID "fa570000-0000-4000-8000-00000000000b"

#define NONE INT_MIN

/* How a child's process ends once its writes are done. */
enum end { LEAVE, CLOSE, DIE };

/* In a child with a store of its own: write g1 (a put, or a delete when
 * negative), stopped before its index rows when pause; then, once
 * continued, put g2 unpaused unless it is NONE; then leave the store as a
 * killed process leaves it (its intents' batch not run), close it (the
 * batch runs), or SIGKILL itself. A failed write exits 1, saying why. */
static pid_t child(int g1, bool pause, int g2, enum end end)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	bs_store_t *st = NULL;
	bs_value_t bag;
	bs_id_t id;
	int rc;
	if (pause)
		setenv("BAGSTORE_FAULT", "pause_before_index_rows", 1);
	if (!(rc = bs_store_open(&st, cfg))) {
		if (g1 >= 0) {
			gbag(&bag, UUID, g1);
			rc = bs_put(st, &bag, NULL);
			bs_value_clear(&bag);
		} else if (!(rc = bs_id_parse(&id, ID))) {
			rc = bs_delete(st, &id);
		}
	}
	unsetenv("BAGSTORE_FAULT");
	if (!rc && g2 != NONE) {
		gbag(&bag, UUID, g2);
		rc = bs_put(st, &bag, NULL);
		bs_value_clear(&bag);
	}
	if (rc) {
		fprintf(stderr, "writer: %d: %s\n", rc, bs_last_error());
		_exit(1);
	}
	if (end == DIE)
		raise(SIGKILL);
	if (end == CLOSE)
		bs_store_free(st);
	_exit(0);
}

/* A put with g stopped before its index rows (g < 0: a delete), killed
 * from outside. */
static pid_t writer(int g)
{
	return child(g, true, NONE, LEAVE);
}

/* A put with g, all of it (rows written, the lock released), then SIGKILL
 * before its intent's batch. */
static void put_then_die(int g)
{
	int status;
	waitpid(child(g, false, NONE, DIE), &status, 0);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the put returned, then the process was killed");
}

static bool wait_stopped(pid_t pid)
{
	int status;
	return waitpid(pid, &status, WUNTRACED) == pid && WIFSTOPPED(status);
}

static void kill_it(pid_t pid)
{
	int status;
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

/* q's count on shard (-1: both) once it is want, or after 3 s what it
 * is: a store's last batch of intent removals, sent when it is freed, is
 * waited for a second at most (a loaded server may answer later). */
static long long count_when(int shard, const char *q, long long want)
{
	long long v = 0;
	for (int k = 0; k < 60; k++) {
		if ((v = shard < 0 ? sql_both(q) : sql_int(shard, q)) == want)
			break;
		struct timespec ts = { 0, 50000000L };
		nanosleep(&ts, NULL);
	}
	return v;
}

/* The repair loop, once: intents older than a second whose lock is free. */
static int cleaner_once(void)
{
	const char *bin = getenv("BAGSTORE"), *path = getenv("BAGSTORE_TEST_CONFIG");
	char cmd[2048];
	struct timespec ts = { 1, 300 * 1000000L };
	nanosleep(&ts, NULL);
	snprintf(cmd, sizeof cmd, "'%s' -c '%s' cleaner --once >/dev/null", bin ? bin : "build/bagstore", path);
	return system(cmd);
}

int main(void)
{
	if (test_config("fast_kill"))
		return 1;
	bs_store_t *st = NULL;
	bs_index_t def;
	bs_value_t bag;
	bs_id_t id0;
	(void)sql; /* rawsql.h's: this test only reads */
	CHECK_OK(bs_store_open(&st, cfg));
	CHECK_OK(bs_init(st));
	CHECK_OK(bs_index_parse(&def, "ix_g", "g:int", "g"));
	CHECK_OK(bs_index_create(st, &def));
	bs_store_free(st);
	CHECK_OK(bs_store_open(&st, cfg));
	gbag(&bag, UUID, 7);
	CHECK_OK(bs_put(st, &bag, NULL));
	bs_value_clear(&bag);
	bs_store_free(st); /* the put done: its intent's batch runs */
	st = NULL;
	CHECK(sql_int(1, "SELECT COUNT(*) FROM ix_g WHERE g=7 AND entity_id=X'" ID "'") == 1,
	      "the entity's row g=7 is on shard 1");

	/* a put moving the row to shard 0, killed before it */
	pid_t p = writer(8);
	CHECK(wait_stopped(p), "the put stopped between its entity and its index rows");
	kill_it(p);
	CHECK(sql_int(1, "SELECT COUNT(*) FROM entities WHERE id=X'" ID "'") == 1, "the entity is on shard 1");
	CHECK(sql_both("SELECT COUNT(*) FROM ix_g WHERE g=8") == 0, "its new index row is not written");
	CHECK(sql_int(1, "SELECT COUNT(*) FROM bagstore_intents WHERE entity_id=X'" ID "'") == 1,
	      "its intent is there, on the entity's shard");
	CHECK(sql_int(1, "SELECT COUNT(*) FROM bagstore_intents WHERE IS_USED_LOCK(token) IS NOT NULL") == 0,
	      "its lock went with the process");
	CHECK(cleaner_once() == 0, "cleaner --once");
	CHECK(sql_both("SELECT COUNT(*) FROM bagstore_intents") == 0, "the repair loop settled the intent");
	CHECK(sql_int(0, "SELECT COUNT(*) FROM ix_g WHERE g=8 AND entity_id=X'" ID "'") == 1 &&
	              sql_both("SELECT COUNT(*) FROM ix_g") == 1,
	      "the index row is what the body says, alone");

	/* a delete, killed the same way */
	p = writer(-1);
	CHECK(wait_stopped(p), "the delete stopped between its entity and its index rows");
	kill_it(p);
	CHECK(sql_both("SELECT COUNT(*) FROM entities") == 0, "the entity is deleted");
	CHECK(sql_both("SELECT COUNT(*) FROM ix_g") == 1, "its index row stands");
	CHECK(sql_int(1, "SELECT COUNT(*) FROM bagstore_intents WHERE entity_id=X'" ID "'") == 1,
	      "its intent is there");
	CHECK(cleaner_once() == 0, "cleaner --once");
	CHECK(sql_both("SELECT COUNT(*) FROM bagstore_intents") == 0, "the repair loop settled the intent");
	CHECK(sql_both("SELECT COUNT(*) FROM ix_g") == 0, "and the index row is gone");

	/* a put done, its intent waiting for its batch, killed */
	put_then_die(10);
	CHECK(sql_int(1, "SELECT COUNT(*) FROM bagstore_intents WHERE entity_id=X'" ID "'") == 1,
	      "a put killed before its intent's batch: the intent is there");
	CHECK(sql_int(1, "SELECT COUNT(*) FROM bagstore_intents WHERE IS_USED_LOCK(token) IS NOT NULL") == 0,
	      "its lock went with the process");
	CHECK(sql_int(0, "SELECT COUNT(*) FROM ix_g WHERE g=10 AND entity_id=X'" ID "'") == 1,
	      "its index row is written");
	CHECK(cleaner_once() == 0, "cleaner --once");
	CHECK(sql_both("SELECT COUNT(*) FROM bagstore_intents") == 0, "the repair loop settled the intent");
	CHECK(sql_int(0, "SELECT COUNT(*) FROM ix_g WHERE g=10 AND entity_id=X'" ID "'") == 1 &&
	              sql_both("SELECT COUNT(*) FROM ix_g") == 1,
	      "the index row is what the body says, alone");

	/* a batch removes an intent only where its version is the last: A
	 * (g=12) stopped before its rows, B (g=14) writes the entity and its
	 * rows and closes (its batch), A's rows land after B's, A closes */
	p = child(12, true, NONE, CLOSE);
	CHECK(wait_stopped(p), "A stopped between its entity and its index rows");
	CHECK_OK(bs_store_open(&st, cfg));
	gbag(&bag, UUID, 14);
	CHECK_OK(bs_put(st, &bag, NULL));
	bs_value_clear(&bag);
	bs_store_free(st);
	st = NULL;
	CHECK(count_when(1, "SELECT COUNT(*) FROM bagstore_intents WHERE entity_id=X'" ID "'", 1) == 1,
	      "B's batch removed its own intent (its version is the last), not A's (A's lock is held)");
	kill(p, SIGCONT);
	int status;
	CHECK(waitpid(p, &status, 0) == p && WIFEXITED(status) && WEXITSTATUS(status) == 0, "A finished");
	CHECK(sql_int(0, "SELECT COUNT(*) FROM ix_g WHERE g=12 AND entity_id=X'" ID "'") == 1,
	      "A's row (g=12) landed after B's: stale");
	CHECK(sql_int(1, "SELECT COUNT(*) FROM bagstore_intents WHERE entity_id=X'" ID "'") == 1,
	      "A's batch kept A's intent: the entity is not at A's version");
	CHECK(cleaner_once() == 0, "cleaner --once");
	CHECK(sql_both("SELECT COUNT(*) FROM bagstore_intents") == 0, "the repair loop settled it");
	CHECK(sql_int(0, "SELECT COUNT(*) FROM ix_g WHERE g=14 AND entity_id=X'" ID "'") == 1 &&
	              sql_both("SELECT COUNT(*) FROM ix_g") == 1,
	      "the index row is B's (g=14), alone");

	/* P writes W1 (g=21, its row on shard 1) stopped before its rows; X
	 * (g=22) writes and settles; P's g=21 row lands after X's, stale; P
	 * writes W2 (g=24) on the same connection, which replaced X's version,
	 * not W1's: W1's intent must stay */
	p = child(21, true, 24, CLOSE);
	CHECK(wait_stopped(p), "P stopped between W1's entity and its index rows");
	CHECK_OK(bs_store_open(&st, cfg));
	gbag(&bag, UUID, 22);
	CHECK_OK(bs_put(st, &bag, NULL));
	bs_value_clear(&bag);
	bs_store_free(st);
	st = NULL;
	kill(p, SIGCONT);
	CHECK(waitpid(p, &status, 0) == p && WIFEXITED(status) && WEXITSTATUS(status) == 0, "P finished");
	CHECK(sql_int(1, "SELECT COUNT(*) FROM ix_g WHERE g=21 AND entity_id=X'" ID "'") == 1,
	      "W1's row (g=21) landed after X's: stale");
	CHECK(sql_int(1, "SELECT COUNT(*) FROM bagstore_intents WHERE entity_id=X'" ID "'") >= 1,
	      "an intent covers it: W2 did not supersede W1 (X wrote between them)");
	CHECK(cleaner_once() == 0, "cleaner --once");
	CHECK(sql_both("SELECT COUNT(*) FROM bagstore_intents") == 0, "the repair loop settled it");
	CHECK(sql_int(0, "SELECT COUNT(*) FROM ix_g WHERE g=24 AND entity_id=X'" ID "'") == 1 &&
	              sql_both("SELECT COUNT(*) FROM ix_g") == 1,
	      "the index row is W2's (g=24), alone");

	/* P deletes the entity (D), stopped before its rows; X puts g=26 (its
	 * row on shard 0, where D's old row is) and settles; D's rows land
	 * after X's: D's delete of the entity's rows there takes X's row too;
	 * P puts g=26 (W) on the same connection, which replaced X's version
	 * and finds the ready index's row unchanged, so writes none: D's
	 * intent must stay (W did not rewrite the rows from scratch) */
	CHECK(sql_int(0, "SELECT COUNT(*) FROM bagstore_indexes WHERE name='ix_g' AND state='ready'") == 1,
	      "ix_g is ready (a put skips its unchanged row)");
	p = child(-1, true, 26, CLOSE);
	CHECK(wait_stopped(p), "P stopped between D's entity delete and its index rows");
	CHECK_OK(bs_store_open(&st, cfg));
	gbag(&bag, UUID, 26);
	CHECK_OK(bs_put(st, &bag, NULL));
	bs_value_clear(&bag);
	bs_store_free(st);
	st = NULL;
	CHECK(count_when(1, "SELECT COUNT(*) FROM bagstore_intents WHERE IS_USED_LOCK(token) IS NULL", 0) == 0,
	      "X's batch removed X's intent");
	kill(p, SIGCONT);
	CHECK(waitpid(p, &status, 0) == p && WIFEXITED(status) && WEXITSTATUS(status) == 0, "P finished");
	CHECK(sql_both("SELECT COUNT(*) FROM ix_g WHERE entity_id=X'" ID "'") == 0,
	      "D's rows landed after X's and took X's row; W wrote none (its row unchanged)");
	CHECK(sql_int(1, "SELECT COUNT(*) FROM bagstore_intents WHERE entity_id=X'" ID "'") >= 1,
	      "an intent covers it: W did not supersede D (the entity was there when W wrote)");
	CHECK(cleaner_once() == 0, "cleaner --once");
	CHECK(sql_both("SELECT COUNT(*) FROM bagstore_intents") == 0, "the repair loop settled it");
	CHECK(sql_int(0, "SELECT COUNT(*) FROM ix_g WHERE g=26 AND entity_id=X'" ID "'") == 1 &&
	              sql_both("SELECT COUNT(*) FROM ix_g") == 1,
	      "the index row is W's (g=26), alone");

	/* a delete then a put of the entity on one connection, nobody between:
	 * the put found no row and wrote its rows whole, so it supersedes the
	 * delete's intent and none is left */
	CHECK_OK(bs_store_open(&st, cfg));
	CHECK_OK(bs_id_parse(&id0, ID));
	CHECK_OK(bs_delete(st, &id0));
	gbag(&bag, UUID, 28);
	CHECK_OK(bs_put(st, &bag, NULL));
	bs_value_clear(&bag);
	bs_store_free(st);
	st = NULL;
	CHECK(count_when(-1, "SELECT COUNT(*) FROM bagstore_intents", 0) == 0,
	      "a delete and a put of one entity on one connection: no intent left");
	CHECK(sql_int(0, "SELECT COUNT(*) FROM ix_g WHERE g=28 AND entity_id=X'" ID "'") == 1 &&
	              sql_both("SELECT COUNT(*) FROM ix_g") == 1,
	      "the index row is the put's (g=28), alone");

	/* the same connection writing an entity over and over leaves no
	 * intent: each write replaced exactly the one before */
	CHECK_OK(bs_store_open(&st, cfg));
	for (int g = 30; g < 40; g++) {
		gbag(&bag, UUID, g);
		CHECK_OK(bs_put(st, &bag, NULL));
		bs_value_clear(&bag);
	}
	bs_store_free(st);
	st = NULL;
	CHECK(count_when(-1, "SELECT COUNT(*) FROM bagstore_intents", 0) == 0,
	      "ten writes of one entity on one connection: no intent left");

	/* a put into a leaving bucket whose row another session holds past
	 * the lock wait timeout: the fast form is refused (its intent
	 * committed), the full form times out, the write is tried again with
	 * its token and finds its intent there */
	bs_id_t id;
	CHECK_OK(bs_id_parse(&id, ID));
	int bk = bs_route_id(&id, 4096);
	char q[200];
	sql(1, "SET GLOBAL innodb_lock_wait_timeout=1");
	snprintf(q, sizeof q, "UPDATE bagstore_buckets SET state='leaving', move_id=7001 WHERE bucket=%d", bk);
	sql(1, q);
	fflush(stdout);
	pid_t h = fork();
	if (h == 0) {
		const bs_shard_conf_t *c = &cfg->shards[1];
		MYSQL *m = mysql_init(NULL);
		if (!mysql_real_connect(m, c->host, c->user, NULL, c->database, c->port, c->socket, 0))
			_exit(2);
		if (mysql_query(m, "START TRANSACTION") ||
		    mysql_query(m, "SELECT id FROM entities WHERE id=X'" ID "' FOR UPDATE"))
			_exit(3);
		mysql_free_result(mysql_store_result(m));
		struct timespec ts = { 2, 500000000L };
		nanosleep(&ts, NULL);
		mysql_query(m, "COMMIT");
		mysql_close(m);
		_exit(0);
	}
	struct timespec ts = { 0, 300000000L };
	nanosleep(&ts, NULL);
	CHECK_OK(bs_store_open(&st, cfg));
	gbag(&bag, UUID, 42);
	int rc = bs_put(st, &bag, NULL);
	CHECK(rc == 0, "a put into a leaving bucket survives a lock wait timeout, tried again: %s",
	      rc ? bs_last_error() : "ok");
	bs_value_clear(&bag);
	bs_store_free(st);
	st = NULL;
	waitpid(h, &status, 0);
	sql(1, "SET GLOBAL innodb_lock_wait_timeout=50");
	snprintf(q, sizeof q, "UPDATE bagstore_buckets SET state='owned', move_id=0 WHERE bucket=%d", bk);
	sql(1, q);
	sql(1, "DELETE FROM bagstore_move_log");
	CHECK(cleaner_once() == 0, "cleaner --once");
	CHECK(sql_both("SELECT COUNT(*) FROM bagstore_intents") == 0, "no intent left");
	CHECK(sql_int(0, "SELECT COUNT(*) FROM ix_g WHERE g=42 AND entity_id=X'" ID "'") == 1 &&
	              sql_both("SELECT COUNT(*) FROM ix_g") == 1,
	      "the index row is g=42, alone");

	/* a put whose intent's named lock another session holds (fault
	 * fixed_token: its token is bagstore.w.fault): the write procedure
	 * refuses it (SQLSTATE 45000, naming the 'token'), as the two
	 * statements' form refuses its NULL token (1048; the fence's refusal
	 * of the entity is 1452); the put fails and writes nothing, not
	 * taken for the fence's "not here" (whose full form would write
	 * without an intent) */
	CHECK(sql_int(1, "SELECT GET_LOCK('bagstore.w.fault', 0)") == 1, "another session holds the token's lock");
	setenv("BAGSTORE_FAULT", "fixed_token", 1);
	CHECK_OK(bs_store_open(&st, cfg));
	gbag(&bag, UUID, 50);
	rc = bs_put(st, &bag, NULL);
	bs_value_clear(&bag);
	CHECK(rc != 0 && strstr(bs_last_error(), "'token'"),
	      "a put that cannot take its intent's lock fails, saying the intent's token was refused: %s",
	      rc ? bs_last_error() : "ok");
	bs_store_free(st);
	st = NULL;
	unsetenv("BAGSTORE_FAULT");
	CHECK(sql_both("SELECT COUNT(*) FROM ix_g WHERE g=50") == 0 &&
	              sql_int(0, "SELECT COUNT(*) FROM ix_g WHERE g=42 AND entity_id=X'" ID "'") == 1,
	      "and writes no index row");
	long long g = gbag_read(&id);
	CHECK(g == 42, "nor the entity: its body is the one before (g=42, read %lld)", g);
	CHECK(sql_both("SELECT COUNT(*) FROM bagstore_intents WHERE token='bagstore.w.fault'") == 0, "nor an intent");
	sql_int(1, "SELECT RELEASE_LOCK('bagstore.w.fault')");

	/* the same when the full form goes first: the bucket leaving (a
	 * move's copy), and the store's hint set by a put that found it so;
	 * then a put and a conditional put whose lock another session holds
	 * fail, naming the token, and write nothing: not the entity without
	 * its intent */
	sql(1, "UPDATE bagstore_buckets SET state='leaving', move_id=7001 WHERE bucket=11");
	setenv("BAGSTORE_FAULT", "fixed_token", 1);
	CHECK_OK(bs_store_open(&st, cfg));
	gbag(&bag, UUID, 60);
	CHECK_OK(bs_put(st, &bag, NULL));
	bs_value_clear(&bag);
	int64_t ver = 0;
	bs_value_t got;
	CHECK_OK(bs_get(&got, st, &id, &ver, NULL)); /* on the entity's shard: the lock's release answered */
	bs_value_clear(&got);
	CHECK(sql_int(1, "SELECT GET_LOCK('bagstore.w.fault', 5)") == 1,
	      "another session holds the token's lock again");
	gbag(&bag, UUID, 62);
	rc = bs_put(st, &bag, NULL);
	CHECK(rc != 0 && strstr(bs_last_error(), "'token'"),
	      "leaving and hinted: a put that cannot take its intent's lock fails, naming the token: %s",
	      rc ? bs_last_error() : "ok");
	rc = bs_put_if(st, &bag, ver);
	CHECK(rc != 0 && strstr(bs_last_error(), "'token'"),
	      "and so does a conditional put (the full form, its read first): %s", rc ? bs_last_error() : "ok");
	bs_value_clear(&bag);
	bs_store_free(st);
	st = NULL;
	unsetenv("BAGSTORE_FAULT");
	CHECK(sql_both("SELECT COUNT(*) FROM ix_g WHERE g=62") == 0 &&
	              sql_int(0, "SELECT COUNT(*) FROM ix_g WHERE g=60 AND entity_id=X'" ID "'") == 1,
	      "they write no index row: the entity's row is the first put's (g=60)");
	g = gbag_read(&id);
	CHECK(g == 60, "nor the entity: its body is the first put's (g=60, read %lld)", g);
	sql_int(1, "SELECT RELEASE_LOCK('bagstore.w.fault')");
	CHECK(count_when(1, "SELECT COUNT(*) FROM bagstore_intents WHERE token='bagstore.w.fault'", 0) == 0,
	      "nor an intent (the first put's removed with its batch)");
	sql(1, "UPDATE bagstore_buckets SET state='owned', move_id=0 WHERE bucket=11");
	sql(1, "DELETE FROM bagstore_move_log");

	bs_store_free(st);
	raw_close_all();
	bs_config_free(cfg);
	mysql_library_end();
	return t_done("fast_kill");
}

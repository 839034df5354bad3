/*
 * test_write_proc.c - a single put or delete with an index writes its
 * intent and its entity in one CALL of init's write procedures
 * (bagstore_put_v2, bagstore_delete_v1), against two real shards: the
 * trace shows the CALL and no intent statement of its own; the entity, its
 * index row and its old body (the row moved off the old value's shard)
 * come out as with two statements, and no intent stays. A store whose
 * procedures are gone (made by an older init) or not the account's to
 * call (an account without EXECUTE) writes with the two statements
 * instead, as correctly; init makes them again. An init whose account
 * may not make them (no CREATE ROUTINE: an older bagstore's cleaner
 * grants) goes on and says on which shards. A bucket not owned here is still the fence's refusal
 * inside the procedure, its full form deciding.
 */
#include "bagstore.h"
#include "rawsql.h"
#include "gbag.h"
#include "t.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UUID "5a1e0000-0000-4000-8000-00000000000c"
#define ID "5a1e000000004000800000000000000c"

/* what the trace saw: statements starting with CALL and with the intent's
 * own INSERT, on any shard */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int calls_put, calls_delete, intent_stmts, call_errors, fence_refused;
static unsigned call_err; /* the last CALL's error number */

static void trace(void *arg, const bs_trace_t *t)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	if (!strncmp(t->sql, "CALL bagstore_put_v2(", 21))
		calls_put++;
	else if (!strncmp(t->sql, "CALL bagstore_delete_v1(", 24))
		calls_delete++;
	else if (!strncmp(t->sql, "INSERT INTO bagstore_intents", 28))
		intent_stmts++;
	fence_refused += t->err == 1452;
	if (!strncmp(t->sql, "CALL ", 5) && t->err) {
		call_errors++;
		call_err = t->err;
	}
	pthread_mutex_unlock(&mu);
}

static void counts_reset(void)
{
	pthread_mutex_lock(&mu);
	calls_put = calls_delete = intent_stmts = call_errors = fence_refused = 0;
	call_err = 0;
	pthread_mutex_unlock(&mu);
}

#define DELETE INT_MIN

/* One write through a store of its own, traced, then the store freed (its
 * intents' batch runs): a put of g, or with DELETE the entity's delete. */
static int write_g(int g)
{
	bs_store_t *st = NULL;
	bs_value_t bag;
	bs_id_t id;
	int rc = bs_store_open(&st, cfg);
	if (rc)
		return rc;
	bs_store_trace(st, trace, NULL);
	if (g != DELETE) {
		gbag(&bag, UUID, g);
		rc = bs_put(st, &bag, NULL);
		bs_value_clear(&bag);
	} else if (!(rc = bs_id_parse(&id, UUID))) {
		rc = bs_delete(st, &id);
	}
	bs_store_free(st);
	return rc;
}

/* The index rows are exactly g's one, and no intent is left. */
static void rows_are(int g, const char *when)
{
	char q[160];
	snprintf(q, sizeof q, "SELECT COUNT(*) FROM ix_g WHERE g=%d AND entity_id=X'" ID "'", g);
	CHECK(sql_both(q) == 1 && sql_both("SELECT COUNT(*) FROM ix_g") == 1, "%s: the one index row is g=%d", when, g);
	CHECK(sql_both("SELECT COUNT(*) FROM bagstore_intents") == 0, "%s: no intent stays", when);
	bs_id_t id;
	CHECK(!bs_id_parse(&id, UUID) && gbag_read(&id) == g, "%s: the entity's body has g=%d", when, g);
}

/* Bucket bk on shard leaving for move (0: owned again, the move log
 * emptied). */
static void leaving(int shard, long long bk, int move)
{
	char q[200];
	if (move)
		snprintf(q, sizeof q, "UPDATE bagstore_buckets SET state='leaving', move_id=%d WHERE bucket=%lld", move,
		         bk);
	else
		snprintf(q, sizeof q, "UPDATE bagstore_buckets SET state='owned', move_id=0 WHERE bucket=%lld", bk);
	sql(shard, q);
	if (!move)
		sql(shard, "DELETE FROM bagstore_move_log");
}

/* Is the test's entity in shard's move log for move? */
static bool logged(int shard, int move)
{
	char q[200];
	snprintf(q, sizeof q, "SELECT COUNT(*) FROM bagstore_move_log WHERE move_id=%d AND kind=0 AND id=X'" ID "'",
	         move);
	return sql_int(shard, q) == 1;
}

#define PROCS \
	"SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA=DATABASE() AND ROUTINE_NAME IN " \
	"('bagstore_put_v1','bagstore_put_v2','bagstore_delete_v1') AND SECURITY_TYPE='INVOKER'"

/* The test's configuration with another account, made on both shards
 * with these privileges on the database (its password from the
 * environment, as a configuration must take it). */
static bs_config_t *as_account(const char *user, const char *privileges)
{
	const char *path = getenv("BAGSTORE_TEST_CONFIG");
	FILE *f = fopen(path, "r");
	static char text[8192], out[8192];
	char q[256];
	size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
	if (f)
		fclose(f);
	text[n] = '\0';
	size_t o = 0;
	for (const char *p = text; *p && o < sizeof out - 128;) {
		if (!strncmp(p, "user: root", 10)) {
			o += (size_t)snprintf(out + o, sizeof out - o, "user: %s, password_env: BS_T_ACCOUNT_PW", user);
			p += 10;
		} else {
			out[o++] = *p++;
		}
	}
	out[o] = '\0';
	for (int i = 0; i < 2; i++) {
		snprintf(q, sizeof q, "DROP USER IF EXISTS %s@'%%'", user);
		sql(i, q);
		snprintf(q, sizeof q, "CREATE USER %s@'%%' IDENTIFIED BY 'pw'", user);
		sql(i, q);
		snprintf(q, sizeof q, "GRANT %s ON bagstore.* TO %s@'%%'", privileges, user);
		sql(i, q);
	}
	setenv("BS_T_ACCOUNT_PW", "pw", 1);
	bs_config_t *c = NULL;
	CHECK_OK(bs_config_parse(&c, out, o, "account.yaml"));
	CHECK(c && strstr(out, user), "the configuration names %s", user);
	return c;
}

static void drop_account(const char *user)
{
	char q[128];
	snprintf(q, sizeof q, "DROP USER IF EXISTS %s@'%%'", user);
	sql(0, q);
	sql(1, q);
}

int main(void)
{
	if (test_config("write_proc"))
		return 1;
	bs_store_t *st = NULL;
	bs_index_t def;
	CHECK_OK(bs_store_open(&st, cfg));
	CHECK_OK(bs_init(st));
	CHECK_OK(bs_index_parse(&def, "ix_g", "g:int", "g"));
	CHECK_OK(bs_index_create(st, &def));
	bs_store_free(st);
	CHECK(sql_both(PROCS) == 6,
	      "init made the write procedures (put v1 and v2, delete) on both shards, SQL SECURITY INVOKER");

	/* g's row moves between the shards as g changes (int mod buckets):
	 * every put replaces the row on another shard than it goes to, for
	 * some of them */
	counts_reset();
	for (int g = 1; g <= 6; g++)
		CHECK_OK(write_g(g));
	CHECK(calls_put == 6 && intent_stmts == 0 && call_errors == 0,
	      "six puts: six CALLs of bagstore_put_v2, no intent statement of their own (%d calls, %d intents, %d "
	      "errors)",
	      calls_put, intent_stmts, call_errors);
	rows_are(6, "through the procedure");
	CHECK_OK(write_g(DELETE));
	CHECK(calls_delete == 1, "a delete is one CALL of bagstore_delete_v1 (%d)", calls_delete);
	CHECK(sql_both("SELECT COUNT(*) FROM ix_g") == 0 && sql_both("SELECT COUNT(*) FROM entities") == 0 &&
	              sql_both("SELECT COUNT(*) FROM bagstore_intents") == 0,
	      "the delete removed the entity and its row, and left no intent");

	/* a bucket leaving here (a move's copy): the procedure's fence says no,
	 * its intent in; the full form writes and logs the entity for the move */
	bs_id_t id;
	CHECK_OK(bs_id_parse(&id, UUID));
	CHECK_OK(write_g(7));
	int shard = sql_int(0, "SELECT COUNT(*) FROM entities WHERE id=X'" ID "'") == 1 ? 0 : 1;
	long long bk =
		bs_route_id(&id, (int)sql_int(0, "SELECT buckets FROM bagstore_map ORDER BY version DESC LIMIT 1"));
	leaving(shard, bk, 8101);
	counts_reset();
	CHECK_OK(write_g(8));
	CHECK(calls_put == 1 && call_errors == 1 && call_err == 1452,
	      "the CALL went first and its fence refused, error 1452 (%d calls, %d errors, the last %u)", calls_put,
	      call_errors, call_err);
	CHECK(logged(shard, 8101), "the full form wrote the entity and logged it for its move");
	rows_are(8, "a leaving bucket");
	leaving(shard, bk, 0);

	/* the procedures gone, as on a store an older init made: the two
	 * statements, as right */
	sql(0, "DROP PROCEDURE bagstore_put_v2");
	sql(1, "DROP PROCEDURE bagstore_put_v2");
	sql(0, "DROP PROCEDURE bagstore_delete_v1");
	counts_reset();
	for (int g = 9; g <= 12; g++)
		CHECK_OK(write_g(g));
	CHECK(calls_put == 4 && intent_stmts == 4,
	      "without the procedure: each put's CALL refused, then its intent's own statement (%d calls, %d intents)",
	      calls_put, intent_stmts);
	rows_are(12, "without the procedure");
	/* the two statements' fence: in a leaving bucket the entity's
	 * statement is refused (1452), its intent in; the full form writes
	 * and logs the entity for the move */
	leaving(shard, bk, 8102);
	counts_reset();
	CHECK_OK(write_g(12));
	CHECK(calls_put == 1 && intent_stmts == 1 && fence_refused == 1,
	      "without the procedure, a leaving bucket: the intent, then the entity's statement refused by the fence "
	      "(%d calls, %d intents, %d refused)",
	      calls_put, intent_stmts, fence_refused);
	CHECK(logged(shard, 8102), "and the full form wrote the entity and logged it for its move");
	rows_are(12, "without the procedure, a leaving bucket");
	leaving(shard, bk, 0);
	counts_reset();
	{
		/* one store, several puts: the CALL is tried once per connection */
		bs_value_t bag;
		CHECK_OK(bs_store_open(&st, cfg));
		bs_store_trace(st, trace, NULL);
		for (int g = 13; g <= 16; g++) {
			gbag(&bag, UUID, g);
			CHECK_OK(bs_put(st, &bag, NULL));
			bs_value_clear(&bag);
		}
		bs_store_free(st);
	}
	CHECK(calls_put == 1 && intent_stmts == 4, "one store: the missing procedure tried once (%d calls, %d intents)",
	      calls_put, intent_stmts);
	rows_are(16, "one store without the procedure");
	CHECK_OK(write_g(DELETE));
	CHECK(sql_both("SELECT COUNT(*) FROM entities") == 0 && sql_both("SELECT COUNT(*) FROM ix_g") == 0 &&
	              sql_both("SELECT COUNT(*) FROM bagstore_intents") == 0,
	      "a delete where one shard lacks the procedure: entity, row and intent gone");

	/* an account without EXECUTE (error 1370): the two statements, as
	 * right; its other privileges are the database's DML */
	{
		bs_config_t *noexec = as_account("bs_t_noexec", "SELECT, INSERT, UPDATE, DELETE");
		counts_reset();
		for (int g = 18; g <= 19 && noexec; g++) {
			bs_value_t bag;
			CHECK_OK(bs_store_open(&st, noexec));
			bs_store_trace(st, trace, NULL);
			gbag(&bag, UUID, g);
			CHECK_OK(bs_put(st, &bag, NULL));
			bs_value_clear(&bag);
			bs_store_free(st);
		}
		CHECK(calls_put == 2 && call_errors == 2 && call_err == 1370 && intent_stmts == 2,
		      "without EXECUTE: each store's CALL refused (1370), then the intent's own statement (%d calls, "
		      "%d "
		      "refused, the last %u, %d intents)",
		      calls_put, call_errors, call_err, intent_stmts);
		rows_are(19, "an account without EXECUTE");
		bs_config_free(noexec);
		drop_account("bs_t_noexec");
	}

	/* init again makes them */
	CHECK_OK(bs_store_open(&st, cfg));
	CHECK_OK(bs_init(st));
	bs_store_free(st);
	counts_reset();
	CHECK_OK(write_g(17));
	CHECK(calls_put == 1 && call_errors == 0 && intent_stmts == 0, "init made them again: one CALL (%d, %d, %d)",
	      calls_put, call_errors, intent_stmts);
	rows_are(17, "after init");

	/* init by a cleaner account without CREATE ROUTINE (an older
	 * bagstore's grants, TRIGGER given since, which init needs):
	 * refused the procedures, init goes on and says where */
	{
		bs_config_t *old =
			as_account("bs_t_oldcl", "SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, TRIGGER");
		char names[64];
		CHECK_OK(bs_store_open(&st, old));
		CHECK_OK(bs_init(st));
		CHECK(bs_init_noproc(st, names, sizeof names) == 2 && !strcmp(names, "s0, s1"),
		      "init without CREATE ROUTINE succeeds, naming the shards it could not make them on: %s", names);
		bs_store_free(st);
		CHECK(sql_both(PROCS) == 6, "the procedures there before are still there");
		for (int i = 0; i < 2; i++) {
			sql(i, "DROP PROCEDURE bagstore_put_v1");
			sql(i, "DROP PROCEDURE bagstore_put_v2");
			sql(i, "DROP PROCEDURE bagstore_delete_v1");
		}
		CHECK_OK(bs_store_open(&st, old));
		CHECK_OK(bs_init(st));
		CHECK(bs_init_noproc(st, names, sizeof names) == 2, "and where they are gone: %s", names);
		bs_store_free(st);
		CHECK(sql_both(PROCS) == 0, "which it does not make");
		counts_reset();
		CHECK_OK(write_g(20));
		CHECK(calls_put == 1 && call_err == 1305 && intent_stmts == 1,
		      "a put there: the CALL refused (1305), the two statements (%d calls, the last error %u, %d "
		      "intents)",
		      calls_put, call_err, intent_stmts);
		rows_are(20, "a store whose init could not make the procedures");
		bs_config_free(old);
		drop_account("bs_t_oldcl");
		CHECK_OK(bs_store_open(&st, cfg));
		CHECK_OK(bs_init(st));
		CHECK(bs_init_noproc(st, names, sizeof names) == 0, "init by an account with CREATE ROUTINE says none");
		bs_store_free(st);
		CHECK(sql_both(PROCS) == 6, "and makes them");
	}
	/* init by an account without TRIGGER (an older bagstore's cleaner
	 * grants): where the fence's triggers are all there it passes them
	 * by; where one is missing it stops, saying what it needs */
	{
		bs_config_t *old = as_account(
			"bs_t_notrig", "SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, CREATE ROUTINE, EXECUTE");
		CHECK_OK(bs_store_open(&st, old));
		CHECK_OK(bs_init(st));
		bs_store_free(st);
		sql(1, "DROP TRIGGER bagstore_owned_upd");
		CHECK_OK(bs_store_open(&st, old));
		CHECK(bs_init(st) == BS_ESQL && strstr(bs_last_error(), "TRIGGER command denied") &&
		              strstr(bs_last_error(), "init needs the TRIGGER privilege"),
		      "init without TRIGGER where a trigger is missing is refused, naming it: %s", bs_last_error());
		bs_store_free(st);
		bs_config_free(old);
		drop_account("bs_t_notrig");
		CHECK(sql_both("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA=DATABASE()") == 5,
		      "the other triggers are still there");
		CHECK_OK(bs_store_open(&st, cfg));
		CHECK_OK(bs_init(st));
		bs_store_free(st);
		CHECK(sql_both("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA=DATABASE()") == 6,
		      "init by an account with TRIGGER makes the missing one again");
	}

	raw_close_all();
	bs_config_free(cfg);
	mysql_library_end();
	return t_done("write_proc");
}

/*
 * test_write_races.c - writers that meet in InnoDB's locks, against two
 * real MariaDB shards (tests/run.sh starts them): the engine's writes in
 * processes of their own (fork), one stopped inside its transaction by a
 * fault point (SIGSTOP), the other sent into its locks, the outcome checked
 * with plain SQL.
 *
 * The AUTO_INCREMENT deadlock: the fence's fast form (entity.c) writes a
 * put as INSERT ... SELECT, which holds the entities table's AUTO_INCREMENT
 * lock for the statement (innodb_autoinc_lock_mode=1) while it waits for a
 * row or gap lock. A conditional write holds such a lock from its read FOR
 * UPDATE and then inserts: it waits for the AUTO_INCREMENT lock, InnoDB
 * breaks the cycle, and the victim gets MySQL error 1467
 * (ER_AUTOINC_READ_FAILED), not 1213. That must be retried as a deadlock
 * is, not returned to the caller.
 */
#include "bagstore.h"
#include "rawsql.h"
#include "t.h"

#include <mysql.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void bag_of(bs_value_t *bag, const char *uuid, int v)
{
	char json[160];
	snprintf(json, sizeof json, "{\"id\":{\"$uuid\":\"%s\"},\"v\":%d}", uuid, v);
	if (bs_json_decode(bag, json, strlen(json), "bag")) {
		fprintf(stderr, "bag: %s\n", bs_last_error());
		exit(1);
	}
}

/* In a child process with a store of its own: put uuid (conditionally:
 * only if absent, when cond), exit 0 on success, else 1 (the error on
 * stderr, which the test's log keeps). */
static pid_t writer(const char *uuid, bool cond, const char *fault)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	bs_store_t *st = NULL;
	bs_value_t bag;
	int rc;
	if (fault)
		setenv("BAGSTORE_FAULT", fault, 1);
	bag_of(&bag, uuid, cond ? 1 : 2);
	if (!(rc = bs_store_open(&st, cfg)))
		rc = cond ? bs_put_if(st, &bag, 0) : bs_put(st, &bag, NULL);
	if (rc)
		fprintf(stderr, "writer %s (%s): %d: %s\n", uuid, cond ? "put_if" : "put", rc, bs_last_error());
	_exit(rc ? 1 : 0);
}

static bool wait_stopped(pid_t pid)
{
	int status;
	return waitpid(pid, &status, WUNTRACED) == pid && WIFSTOPPED(status);
}

static int exit_code(pid_t pid)
{
	int status;
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Until an INSERT into shard's entities has been running for half a
 * second: it waits for a lock (10 s at most; INNODB_TRX does not list an
 * autocommit statement's transaction while it waits). */
static bool lock_wait_seen(int shard)
{
	for (int k = 0; k < 200; k++) {
		if (sql_int(shard, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE "
		                   "'%INSERT INTO entities%' AND INFO NOT LIKE '%PROCESSLIST%' AND TIME_MS>500") > 0)
			return true;
		struct timespec ts = { 0, 50 * 1000000L };
		nanosleep(&ts, NULL);
	}
	return false;
}

/* A conditional put of a new entity reads its id FOR UPDATE (on an empty
 * table: the gap up to the index's end) and stops; a plain put of another
 * new entity on the same shard (the fast form's INSERT) waits for that
 * gap; the conditional put goes on. When the fast form was an INSERT ...
 * SELECT, it held the AUTO_INCREMENT lock meanwhile, and the conditional
 * put waited for that: a deadlock. Both writes must succeed: one InnoDB
 * rolls back is retried. */
static void test_autoinc_deadlock(void)
{
	const char *a = "a0000000-0000-4000-8000-000000000010";
	char b[40] = "";
	bs_id_t ia, ib;
	CHECK_OK(bs_id_parse(&ia, "a0000000000040008000000000000010"));
	int shard = bs_route_id(&ia, cfg->nshards);
	/* another id on the same shard */
	for (unsigned k = 11; k < 40 && !b[0]; k++) {
		char hex[33];
		snprintf(hex, sizeof hex, "a00000000000400080000000000000%02u", k % 100);
		CHECK_OK(bs_id_parse(&ib, hex));
		if (bs_route_id(&ib, cfg->nshards) == shard)
			snprintf(b, sizeof b, "a0000000-0000-4000-8000-0000000000%02u", k % 100);
	}
	CHECK(b[0], "a second id on shard %d", shard);
	CHECK(sql_int(shard, "SELECT COUNT(*) FROM entities") == 0, "shard %d holds no entity yet", shard);

	pid_t pa = writer(a, true, "pause_conditional_write");
	CHECK(wait_stopped(pa), "the conditional put stopped after its read");
	pid_t pb = writer(b, false, NULL);
	CHECK(lock_wait_seen(shard), "the plain put waits for the conditional put's gap lock");
	kill(pa, SIGCONT);
	int ca = exit_code(pa), cb = exit_code(pb);
	CHECK(ca == 0, "the conditional put succeeded (exit %d; its error above)", ca);
	CHECK(cb == 0, "the plain put succeeded (exit %d; its error above)", cb);
	CHECK(sql_int(shard, "SELECT COUNT(*) FROM entities") == 2, "both entities are stored on shard %d", shard);
	CHECK(sql_int(shard, "SELECT COUNT(*) FROM entities WHERE id=X'a0000000000040008000000000000010'") == 1,
	      "the conditional put's entity among them");
}

int main(void)
{
	if (test_config("write_races"))
		return 1;
	bs_store_t *st = NULL;
	(void)sql; /* rawsql.h's: this test only reads */
	CHECK_OK(bs_store_open(&st, cfg));
	CHECK_OK(bs_init(st));
	bs_store_free(st);
	test_autoinc_deadlock();
	raw_close_all();
	bs_config_free(cfg);
	mysql_library_end();
	return t_done("write_races");
}

/*
 * test_rows_down.c - a single put (bs_put) and a console edit (bs_put_if)
 * whose entity's shard answers and whose index rows' shard does not (s1
 * paused, SIGSTOP, through conf/shards.sh), against the two real test
 * shards (tests/run.sh starts them). The CLI's put goes through bulk.c;
 * these are entity.c's paths, which removed the write's intent after its
 * index rows had failed: the rows stayed wrong with nothing telling the
 * repair loop. The write must fail saying the entity is written and its
 * rows are not, its intent must stay on the entity's shard, and once s1
 * is back one `cleaner --once` makes the rows right and verify is clean
 * (tests/integration/test_rows_down.sh does the same for the CLI's delete
 * and put). And a store freed while the entity's shard (s0) owes the
 * write's last answer returns within a second, not its read timeout.
 */
#include "bagstore.h"
#include "rawsql.h"
#include "t.h"

#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* bucket = the id mod 4096: s0 owns the even buckets, s1 the odd ones */
#define E_UUID "00000007-0000-4000-8000-000000000002" /* on s0 */
#define E_HEX "00000007000040008000000000000002"
#define U1 "00000008-0000-4000-8000-000000000001" /* its row on s1 */
#define U3 "00000009-0000-4000-8000-000000000003"
#define U5 "0000000a-0000-4000-8000-000000000005"

static void bag_of(bs_value_t *bag, const char *user, int v)
{
	char json[200];
	snprintf(json, sizeof json, "{\"id\":{\"$uuid\":\"" E_UUID "\"},\"u\":{\"$uuid\":\"%s\"},\"v\":%d}", user, v);
	if (bs_json_decode(bag, json, strlen(json), "bag")) {
		fprintf(stderr, "bag: %s\n", bs_last_error());
		exit(1);
	}
}

/* sh -c CMD with $BAGSTORE, $SHARDS_SH, $SHARDS_DIR, $CFG; its exit code */
static int shell(const char *cmd)
{
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void shard_do(const char *what, const char *shard)
{
	char cmd[80];
	snprintf(cmd, sizeof cmd, "sh \"$SHARDS_SH\" %s %s --dir \"$SHARDS_DIR\" >/dev/null", what, shard);
	CHECK(shell(cmd) == 0, "%s %s", what, shard);
}

static void s1(const char *what)
{
	shard_do(what, "s1");
}

/* The row of E on s1 is user's (its hex, upper case) */
static bool row_is(const char *user)
{
	char q[200], hex[33];
	int n = 0;
	for (const char *p = user; *p && n < 32; p++)
		if (*p != '-')
			hex[n++] = *p;
	hex[n] = '\0';
	snprintf(q, sizeof q, "SELECT COUNT(*) FROM by_u WHERE entity_id=X'" E_HEX "' AND u=X'%s'", hex);
	return sql_int(1, q) == 1 && sql_int(1, "SELECT COUNT(*) FROM by_u WHERE entity_id=X'" E_HEX "'") == 1;
}

/* One write with s1 paused: it fails saying the entity is written and
 * its rows are not; its intent stays; once s1 is back, one cleaner --once
 * makes the row user's, verify is clean. */
static void one(const char *name, bool conditional, const char *user, int v)
{
	bs_store_t *st = NULL;
	bs_value_t bag;
	int64_t us = 0;
	bs_value_t cur;
	char want[200];
	printf("# %s\n", name);
	CHECK_OK(bs_store_open(&st, cfg));
	bs_id_t id;
	CHECK_OK(bs_id_parse(&id, E_HEX));
	CHECK_OK(bs_get(&cur, st, &id, &us, NULL));
	bs_value_clear(&cur);
	bag_of(&bag, user, v);
	s1("pause");
	int rc = conditional ? bs_put_if(st, &bag, us) : bs_put(st, &bag, NULL);
	CHECK(rc < 0, "%s fails with s1 paused (%d)", name, rc);
	snprintf(want, sizeof want, "entity %s is written, but its index rows are not", E_HEX);
	CHECK(strstr(bs_last_error(), want) != NULL, "%s: says \"%s\": %s", name, want, bs_last_error());
	CHECK(strstr(bs_last_error(), "s1") != NULL, "%s: names the shard: %s", name, bs_last_error());
	bs_value_clear(&bag);
	bs_store_free(st); /* step 3's statement, sent without waiting, has run */
	CHECK(sql_int(0, "SELECT COUNT(*) FROM bagstore_intents WHERE entity_id=X'" E_HEX "'") == 1,
	      "%s: its intent stays on s0", name);
	s1("resume");
	CHECK(!row_is(user), "%s: the row is not yet the new user's", name);
	sleep(2); /* the repair loop takes intents older than a second */
	CHECK(shell("\"$BAGSTORE\" -c \"$CFG\" cleaner --once >/dev/null") == 0, "%s: cleaner --once", name);
	CHECK(row_is(user), "%s: the cleaner made the row the new user's", name);
	CHECK(sql_int(0, "SELECT COUNT(*) FROM bagstore_intents") == 0, "%s: no intent left", name);
	CHECK(shell("\"$BAGSTORE\" -c \"$CFG\" verify >/dev/null") == 0, "%s: verify is clean", name);
}

#define U7 "0000000b-0000-4000-8000-000000000007"

/* A store freed while the entity's shard (s0) does not answer the write's
 * last step (its lock's release, sent without waiting) returns within a
 * second or two, not after its read timeout (10 s here): a writer in a
 * child process stops itself after its entity write (fault point
 * pause_before_index_rows), s0 is paused, the writer goes on (its index
 * row on s1, the release into s0's socket) and frees its store, timed.
 * The intent it could not settle is the repair loop's once s0 is back. */
static void free_with_s0_paused(void)
{
	printf("# bs_store_free with s0 paused\n");
	unsigned keep = cfg->read_timeout;
	cfg->read_timeout = 10;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		bs_store_t *st = NULL;
		bs_value_t bag;
		setenv("BAGSTORE_FAULT", "pause_before_index_rows", 1);
		bag_of(&bag, U7, 4);
		if (bs_store_open(&st, cfg) || bs_put(st, &bag, NULL)) {
			fprintf(stderr, "writer: %s\n", bs_last_error());
			_exit(1);
		}
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		bs_store_free(st);
		clock_gettime(CLOCK_MONOTONIC, &b);
		double secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
		printf("# the writer's bs_store_free took %.2f s\n", secs);
		fflush(stdout);
		_exit(secs < 5 ? 0 : 2);
	}
	cfg->read_timeout = keep;
	int status = 0;
	bool stopped = pid > 0 && waitpid(pid, &status, WUNTRACED) == pid && WIFSTOPPED(status);
	CHECK(stopped, "the writer stopped after its entity write");
	shard_do("pause", "s0");
	if (pid > 0)
		kill(pid, SIGCONT);
	int code = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	shard_do("resume", "s0");
	CHECK(code == 0, "the writer's put went through and its store was freed within 5 s of a 10 s read timeout"
	                 " (exit %d: 2 is a free that waited)", code);
	CHECK(row_is(U7), "its row on s1 is U7's");
	sleep(2); /* the repair loop takes intents older than a second */
	CHECK(shell("\"$BAGSTORE\" -c \"$CFG\" cleaner --once >/dev/null") == 0, "cleaner --once");
	CHECK(sql_int(0, "SELECT COUNT(*) FROM bagstore_intents") == 0, "no intent left");
	CHECK(shell("\"$BAGSTORE\" -c \"$CFG\" verify >/dev/null") == 0, "verify is clean");
}

int main(void)
{
	const char *path = getenv("BAGSTORE_TEST_CONFIG");
	if (!path || !getenv("SHARDS_SH") || !getenv("BAGSTORE")) {
		printf("rows_down: BAGSTORE_TEST_CONFIG, SHARDS_SH or BAGSTORE is not set (tests/run.sh sets them)\n"
		       "rows_down: 0 passed, 1 failed\n");
		return 1;
	}
	if (bs_config_load(&cfg, path)) {
		printf("config: %s\nrows_down: 0 passed, 1 failed\n", bs_last_error());
		return 1;
	}
	/* a paused shard given up on quickly */
	cfg->connect_timeout = 1;
	cfg->read_timeout = cfg->write_timeout = 2;
	setenv("CFG", path, 1);
	(void)sql;
	bs_store_t *st = NULL;
	bs_value_t bag;
	CHECK_OK(bs_store_open(&st, cfg));
	CHECK_OK(bs_init(st));
	bs_store_free(st);
	CHECK(shell("\"$BAGSTORE\" -c \"$CFG\" index create by_u --on u:uuid --shard-on u >/dev/null && "
	            "\"$BAGSTORE\" -c \"$CFG\" cleaner --once >/dev/null") == 0,
	      "index by_u, ready");
	CHECK_OK(bs_store_open(&st, cfg));
	bag_of(&bag, U1, 1);
	CHECK_OK(bs_put(st, &bag, NULL));
	bs_value_clear(&bag);
	bs_store_free(st);
	CHECK(sql_int(0, "SELECT COUNT(*) FROM entities WHERE id=X'" E_HEX "'") == 1, "E is on s0");
	CHECK(row_is(U1), "its row on s1");
	one("bs_put", false, U3, 2);
	one("bs_put_if (a console edit)", true, U5, 3);
	free_with_s0_paused();
	raw_close_all();
	bs_config_free(cfg);
	mysql_library_end();
	return t_done("rows_down");
}

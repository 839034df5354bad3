/*
 * rawsql.h - plain SQL on the test shards, through connections of the
 * test's own, to check what the engine wrote without asking the engine.
 * For the unit tests that run against real shards (one translation unit
 * each): the test loads `cfg`, then calls sql() and sql_int().
 */
#ifndef BS_RAWSQL_H
#define BS_RAWSQL_H
#include "bagstore.h"

#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>

static bs_config_t *cfg;
static MYSQL *raw[8];

/* cfg loaded from $BAGSTORE_TEST_CONFIG (tests/run.sh sets it); 0, else
 * the test's one failed summary printed (name: its t_done name) and -1. */
static inline int test_config(const char *name)
{
	const char *path = getenv("BAGSTORE_TEST_CONFIG");
	if (!path) {
		printf("%s: BAGSTORE_TEST_CONFIG is not set (tests/run.sh sets it)\n%s: 0 passed, 1 failed\n", name,
		       name);
		return -1;
	}
	if (bs_config_load(&cfg, path)) {
		printf("config: %s\n%s: 0 passed, 1 failed\n", bs_last_error(), name);
		return -1;
	}
	return 0;
}

static MYSQL *rawconn(int i)
{
	if (!raw[i]) {
		raw[i] = mysql_init(NULL);
		if (!mysql_real_connect(raw[i], cfg->shards[i].host, cfg->shards[i].user, NULL, cfg->shards[i].database,
		                        cfg->shards[i].port, NULL, CLIENT_MULTI_STATEMENTS)) {
			fprintf(stderr, "raw connect to shard %d: %s\n", i, mysql_error(raw[i]));
			exit(1);
		}
	}
	return raw[i];
}

static void sql(int i, const char *q)
{
	MYSQL *m = rawconn(i);
	if (mysql_query(m, q)) {
		fprintf(stderr, "sql on shard %d: %s: %s\n", i, q, mysql_error(m));
		exit(1);
	}
	MYSQL_RES *r = mysql_store_result(m);
	if (r)
		mysql_free_result(r);
}

/* The first column of the first row as an integer; -1 when NULL or none. */
static long long sql_int(int i, const char *q)
{
	MYSQL *m = rawconn(i);
	long long v = -1;
	if (mysql_query(m, q)) {
		fprintf(stderr, "sql on shard %d: %s: %s\n", i, q, mysql_error(m));
		exit(1);
	}
	MYSQL_RES *r = mysql_store_result(m);
	MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
	if (row && row[0])
		v = atoll(row[0]);
	if (r)
		mysql_free_result(r);
	return v;
}

/* sql_int's sum over shards 0 and 1 (a count, where either may hold it) */
static inline long long sql_both(const char *q)
{
	return sql_int(0, q) + sql_int(1, q);
}

static void raw_close_all(void)
{
	for (int i = 0; i < 8; i++)
		if (raw[i]) {
			mysql_close(raw[i]);
			raw[i] = NULL;
		}
}
#endif

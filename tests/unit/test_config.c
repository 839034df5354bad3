/*
 * test_config.c - unit tests of engine/config.c and engine/indexdef.c: the
 * configuration file (every key, defaults, every refusal with its exact
 * FILE:LINE:COL, passwords never echoed, $BAGSTORE_CONFIG and the default
 * path), the shard-list fingerprint, and index definitions with their DDL.
 *
 * Bad configurations live in tests/fixtures/config/, found next to this
 * file's own path (run from the repository's top, as make does).
 */
#include "bagstore.h"
#include "t.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char fixtures[PATH_MAX];

static void find_fixtures(void)
{
	const char *env = getenv("BAGSTORE_FIXTURES");
	const char *self = __FILE__, *cut = strstr(self, "unit/test_config.c");

	if (env && env[0])
		snprintf(fixtures, sizeof fixtures, "%s/config", env);
	else if (cut)
		snprintf(fixtures, sizeof fixtures, "%.*sfixtures/config", (int)(cut - self), self);
	else
		snprintf(fixtures, sizeof fixtures, "tests/fixtures/config");
}

/* hay is a message from bs_last_error(), never NULL. */
static bool has(const char *hay, const char *needle)
{
	return strstr(hay, needle) != NULL;
}

static bool starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int parse(bs_config_t **cfg, const char *text)
{
	return bs_config_parse(cfg, text, strlen(text), NULL);
}

/* --------------------------------------------------------------- good */

static const char good_yaml[] = "# every key, none at its default\n"
				"shards:\n"
				"  - name: alpha\n"
				"    host: db1.example.com\n"
				"    port: 3310\n"
				"    database: store_1\n"
				"    user: app\n"
				"    password_env: ALPHA_PW\n"
				"    replicas:\n"
				"      - {host: db1-r.example.com, port: 3311, user: mon, password_env: ALPHA_R_PW}\n"
				"      - socket: /run/r.sock\n"
				"  - {name: beta-2, socket: /run/mysqld/beta.sock, drain: true}\n"
				"  - name: GAMMA_3\n"
				"    defaults_file: /etc/bagstore/g.cnf\n"
				"    option_group: bagstore_gamma\n"
				"timeouts: {connect: 1.5, read: 30, write: 45}\n"
				"catalog_ttl: 0\n"
				"read_only: true\n"
				"indexes:\n"
				"  - {name: index_user_id, on: [user_id:uuid], shard_on: user_id}\n"
				"  - name: index_title\n"
				"    on: \" title:string(80) , published:int \"\n"
				"    shard_on: title\n"
				"  - name: by_flags\n"
				"    on:\n"
				"      - score:float\n"
				"      - ok:bool\n"
				"      - key:binary(20)\n"
				"      - label:string\n"
				"    shard_on: key\n"
				"cleaner:\n"
				"  chunk_time: 0.25\n"
				"  max_load: 10\n"
				"  critical_load: 20\n"
				"  max_replica_lag: 2.5\n"
				"  repair_overlap: 0\n"
				"  repair_interval: 1e-1\n"
				"  sleep_coef: 1.5\n"
				"  jobs: 3\n"
				"  writers: auto\n"
				"  max_history_length: 50000\n"
				"  max_write_latency: 0.005\n"
				"  write_latency_factor: 1.5\n"
				"  write_latency_signal: tail\n"
				"  max_signal_age: 2\n"
				"  max_fence: 0.25\n"
				"buckets: 1024\n";

static void test_good(void)
{
	bs_config_t *cfg = NULL;
	char on[256];

	CHECK_OK(bs_config_parse(&cfg, good_yaml, strlen(good_yaml), "good.yaml"));
	if (cfg == NULL)
		return;
	CHECK_STR(cfg->path, "good.yaml");
	CHECK(cfg->nshards == 3, "nshards %d", cfg->nshards);
	if (cfg->nshards == 3) {
		const bs_shard_conf_t *a = &cfg->shards[0], *b = &cfg->shards[1], *g = &cfg->shards[2];
		CHECK_STR(a->name, "alpha");
		CHECK_STR(a->host, "db1.example.com");
		CHECK(a->port == 3310, "port %u", a->port);
		CHECK_STR(a->database, "store_1");
		CHECK_STR(a->user, "app");
		CHECK_STR(a->password_env, "ALPHA_PW");
		CHECK(a->socket == NULL && a->defaults_file == NULL && a->option_group == NULL, "unset fields");
		CHECK(a->line == 3, "line %d", a->line);
		CHECK(a->nreplicas == 2, "nreplicas %d", a->nreplicas);
		if (a->nreplicas == 2) {
			CHECK_STR(a->replicas[0].host, "db1-r.example.com");
			CHECK(a->replicas[0].port == 3311, "replica port %u", a->replicas[0].port);
			CHECK_STR(a->replicas[0].user, "mon");
			CHECK_STR(a->replicas[0].password_env, "ALPHA_R_PW");
			CHECK(a->replicas[0].socket == NULL, "replica socket");
			CHECK_STR(a->replicas[1].socket, "/run/r.sock");
			CHECK(a->replicas[1].host == NULL && a->replicas[1].port == 0, "replica 2 host");
		}
		CHECK_STR(b->name, "beta-2");
		CHECK_STR(b->socket, "/run/mysqld/beta.sock");
		CHECK(b->host == NULL && b->port == 0 && b->user == NULL, "beta defaults");
		CHECK_STR(b->database, "bagstore");
		CHECK(b->nreplicas == 0 && b->replicas == NULL, "beta replicas");
		CHECK(b->drain && !a->drain && !g->drain, "drain: true on beta only");
		CHECK(b->line == 12, "line %d", b->line);
		CHECK_STR(g->name, "GAMMA_3");
		CHECK_STR(g->defaults_file, "/etc/bagstore/g.cnf");
		CHECK_STR(g->option_group, "bagstore_gamma");
		CHECK(g->host == NULL && g->socket == NULL, "gamma host");
	}
	CHECK(cfg->connect_timeout == 1.5, "connect %g", cfg->connect_timeout);
	CHECK(cfg->read_timeout == 30, "read %g", cfg->read_timeout);
	CHECK(cfg->write_timeout == 45, "write %g", cfg->write_timeout);
	CHECK(cfg->catalog_ttl == 0, "ttl %g", cfg->catalog_ttl);
	CHECK(cfg->read_only, "read_only");
	CHECK(cfg->nindexes == 3, "nindexes %d", cfg->nindexes);
	if (cfg->nindexes == 3) {
		const bs_index_t *i0 = &cfg->indexes[0], *i1 = &cfg->indexes[1], *i2 = &cfg->indexes[2];
		CHECK_STR(i0->name, "index_user_id");
		CHECK(i0->nprops == 1 && i0->props[0].type == BS_COL_UUID && i0->shard_on == 0, "index 0");
		CHECK(i0->state == BS_INDEX_BUILDING, "state %d", i0->state);
		CHECK_STR(i1->name, "index_title");
		CHECK_STR(bs_index_format_on(on, sizeof on, i1), "title:string(80),published:int");
		CHECK(i1->shard_on == 0, "shard_on %d", i1->shard_on);
		CHECK_STR(i2->name, "by_flags");
		CHECK_STR(bs_index_format_on(on, sizeof on, i2), "score:float,ok:bool,key:binary(20),label:string");
		CHECK(i2->shard_on == 2, "shard_on %d", i2->shard_on);
		CHECK(i2->props[3].len == 255, "default string length %u", i2->props[3].len);
	}
	CHECK(cfg->cleaner.chunk_time == 0.25, "chunk_time %g", cfg->cleaner.chunk_time);
	CHECK(cfg->cleaner.max_load == 10, "max_load %u", cfg->cleaner.max_load);
	CHECK(cfg->cleaner.critical_load == 20, "critical_load %u", cfg->cleaner.critical_load);
	CHECK(cfg->cleaner.max_replica_lag == 2.5, "lag %g", cfg->cleaner.max_replica_lag);
	CHECK(cfg->cleaner.repair_overlap == 0, "overlap %g", cfg->cleaner.repair_overlap);
	CHECK(cfg->cleaner.repair_interval == 0.1, "interval %g", cfg->cleaner.repair_interval);
	CHECK(cfg->cleaner.sleep_coef == 1.5, "sleep_coef %g", cfg->cleaner.sleep_coef);
	CHECK(cfg->cleaner.max_fence == 0.25, "max_fence %g", cfg->cleaner.max_fence);
	CHECK(cfg->buckets == 1024, "buckets %u", (unsigned)cfg->buckets);
	CHECK(cfg->cleaner.jobs == 3, "jobs %u", cfg->cleaner.jobs);
	CHECK(cfg->cleaner.writers == 0, "writers auto is 0, got %u", cfg->cleaner.writers);
	CHECK(cfg->cleaner.max_history_length == 50000, "max_history_length %u", cfg->cleaner.max_history_length);
	CHECK(cfg->cleaner.max_write_latency == 0.005, "max_write_latency %g", cfg->cleaner.max_write_latency);
	CHECK(cfg->cleaner.write_latency_factor == 1.5, "write_latency_factor %g", cfg->cleaner.write_latency_factor);
	CHECK(cfg->cleaner.write_latency_tail, "write_latency_signal: tail");
	CHECK(cfg->cleaner.max_signal_age == 2, "max_signal_age %g", cfg->cleaner.max_signal_age);
	bs_config_free(cfg);
}

static void test_defaults(void)
{
	bs_config_t *cfg = NULL;

	CHECK_OK(parse(&cfg, "shards: [{name: s0, host: localhost}]\n"
	                     "indexes:\n"
	                     "cleaner:\n"
	                     "timeouts: ~\n"));
	if (cfg == NULL)
		return;
	CHECK_STR(cfg->path, "<string>");
	CHECK(cfg->nshards == 1, "nshards");
	CHECK_STR(cfg->shards[0].database, "bagstore");
	CHECK(cfg->shards[0].port == 0, "port %u", cfg->shards[0].port);
	CHECK(cfg->connect_timeout == 2 && cfg->read_timeout == 10 && cfg->write_timeout == 10, "timeouts");
	CHECK(cfg->catalog_ttl == 2, "ttl %g", cfg->catalog_ttl);
	CHECK(!cfg->read_only, "read_only");
	CHECK(cfg->nindexes == 0 && cfg->indexes == NULL, "indexes");
	CHECK(cfg->cleaner.chunk_time == 0.5, "chunk_time");
	CHECK(cfg->cleaner.max_load == 25 && cfg->cleaner.critical_load == 50, "loads");
	CHECK(cfg->cleaner.max_replica_lag == 1.0 && cfg->cleaner.repair_overlap == 1.0, "lag/overlap");
	CHECK(cfg->cleaner.repair_interval == 0.2, "interval");
	CHECK(cfg->cleaner.sleep_coef == 0, "sleep_coef defaults to full speed");
	CHECK(cfg->cleaner.max_fence == 1.0, "max_fence defaults to 1 s");
	CHECK(cfg->buckets == 0, "buckets: 0, init picks the count");
	CHECK(!cfg->shards[0].drain, "drain defaults to false");
	CHECK(cfg->cleaner.jobs == 0 && cfg->cleaner.writers == 0, "jobs and writers default to auto");
	CHECK(cfg->cleaner.max_history_length == 1000000, "max_history_length %u", cfg->cleaner.max_history_length);
	CHECK(cfg->cleaner.max_write_latency == 0, "max_write_latency defaults to the baseline's");
	CHECK(cfg->cleaner.write_latency_factor == 2.0, "write_latency_factor %g", cfg->cleaner.write_latency_factor);
	CHECK(!cfg->cleaner.write_latency_tail, "write_latency_signal defaults to median");
	CHECK(cfg->cleaner.max_signal_age == 3.0, "max_signal_age %g", cfg->cleaner.max_signal_age);
	bs_config_free(cfg);
	bs_config_free(NULL);
}

/* The daemon's own keys of cleaner: metrics, log_format, log_every, hooks. */
static void test_daemon_keys(void)
{
	static const char text[] = "shards: [{name: s0, host: h}]\n"
				   "cleaner:\n"
				   "  max_load: 9\n"
				   "  metrics: \"[::1]:9108\"\n"
				   "  log_format: json\n"
				   "  log_every: 2.5\n"
				   "  hooks:\n"
				   "    on_event: /usr/local/bin/notify-ops\n"
				   "    on_backfill_failed: \"echo failed >>/tmp/x\"\n"
				   "    on_shard_lost: page-me\n"
				   "    timeout: 3\n";
	static const struct {
		const char *text, *prefix, *phrase;
	} bad[] = {
		{ "shards: [{name: s0, host: h}]\ncleaner: {metrics: localhost}",
		  "<string>:2:20: ", "expected HOST:PORT" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {metrics: \"h:0\"}", "<string>:2:20: ", "from 1 to 65535" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {metrics: \"h:99999\"}", "<string>:2:20: ", "HOST:PORT" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {metrics: \"[::1:9\"}", "<string>:2:20: ", "brackets" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {log_format: yaml}", "<string>:2:23: ", "text or json" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {log_every: 0}", "<string>:2:22: ", "greater than 0" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {hooks: {on_done: x}}", "<string>:2:19: ", "on_done" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {hooks: {timeout: 0}}",
		  "<string>:2:28: ", "greater than 0" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {hooks: [x]}", "<string>:2:18: ", "expected a mapping" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {hooks: {on_event: \"\"}}", "<string>:2:29: ", "non-empty" },
	};
	bs_config_t *cfg = NULL;

	CHECK_OK(parse(&cfg, text));
	if (cfg) {
		CHECK(cfg->cleaner.max_load == 9, "max_load beside the daemon's keys");
		CHECK_STR(cfg->daemon.metrics, "[::1]:9108");
		CHECK_STR(cfg->daemon.log_format, "json");
		CHECK(cfg->daemon.log_every == 2.5, "log_every %g", cfg->daemon.log_every);
		CHECK_STR(cfg->daemon.hook_on_event, "/usr/local/bin/notify-ops");
		CHECK_STR(cfg->daemon.hooks[BS_HOOK_BACKFILL_FAILED], "echo failed >>/tmp/x");
		CHECK_STR(cfg->daemon.hooks[BS_HOOK_SHARD_LOST], "page-me");
		CHECK(cfg->daemon.hooks[BS_HOOK_BACKFILL_DONE] == NULL, "an unset hook is NULL");
		CHECK(cfg->daemon.hook_timeout == 3, "hook timeout %g", cfg->daemon.hook_timeout);
		bs_config_free(cfg);
	}
	cfg = NULL;
	CHECK_OK(parse(&cfg, "shards: [{name: s0, host: h}]\n"));
	if (cfg) {
		CHECK(cfg->daemon.metrics == NULL && cfg->daemon.log_format == NULL &&
		              cfg->daemon.hook_on_event == NULL,
		      "no metrics, text logs, no hooks by default");
		CHECK(cfg->daemon.log_every == 5 && cfg->daemon.hook_timeout == 10, "log_every 5 s, hooks 10 s");
		bs_config_free(cfg);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cfg = NULL;
		CHECK_ERR(parse(&cfg, bad[i].text), BS_ECONFIG);
		CHECK(starts(bs_last_error(), bad[i].prefix), "case %zu: got \"%s\", wanted prefix \"%s\"", i,
		      bs_last_error(), bad[i].prefix);
		CHECK(has(bs_last_error(), bad[i].phrase), "case %zu: got \"%s\", wanted \"%s\"", i, bs_last_error(),
		      bad[i].phrase);
	}
}

/* The brief's own sample, and the shipped reference file. */
static void test_examples(void)
{
	static const char brief[] =
		"shards:\n"
		"  - {name: s0, host: 127.0.0.1, port: 3307, database: bagstore, user: root}\n"
		"  - {name: s1, host: 127.0.0.1, port: 3308, database: bagstore, user: app, password_env: "
		"S1_PASSWORD}\n"
		"  - {name: s2, socket: /run/mysqld/mysqld.sock, database: bagstore}\n"
		"  - {name: s3, defaults_file: /etc/bagstore/s3.cnf, option_group: client}   # comment\n"
		"timeouts: {connect: 2, read: 10, write: 10}\n"
		"catalog_ttl: 2\n"
		"read_only: false\n"
		"indexes:\n"
		"  - {name: index_user_id, on: [user_id:uuid], shard_on: user_id}\n"
		"  - {name: index_title, on: \"title:string(80),published:int\", shard_on: title}\n"
		"cleaner: {chunk_time: 0.5, max_load: 25, critical_load: 50, max_replica_lag: 1.0, "
		"repair_overlap: 1.0, repair_interval: 0.2}\n";
	bs_config_t *cfg = NULL;
	char path[PATH_MAX + 64];

	CHECK_OK(parse(&cfg, brief));
	CHECK(cfg && cfg->nshards == 4 && cfg->nindexes == 2, "brief sample");
	bs_config_free(cfg);
	cfg = NULL;

	snprintf(path, sizeof path, "%s/../../../conf/example.yaml", fixtures);
	CHECK_OK(bs_config_load(&cfg, path));
	if (cfg) {
		CHECK(cfg->nshards == 4, "example shards %d", cfg->nshards);
		CHECK(cfg->nshards == 4 && cfg->shards[1].nreplicas == 2, "example replicas");
		CHECK(cfg->nindexes == 2, "example indexes %d", cfg->nindexes);
		CHECK_STR(cfg->path, path);
	}
	bs_config_free(cfg);
}

/* ---------------------------------------------------------------- bad */

static const struct {
	const char *file;
	int line, col;
	const char *phrase;
} bad[] = {
	{ "not_mapping.yaml", 2, 1, "expected a mapping, got a sequence" },
	{ "empty.yaml", 1, 1, "got an empty document" },
	{ "no_shards.yaml", 2, 1, "missing required key \"shards\"" },
	{ "empty_shards.yaml", 1, 9, "expected at least one shard" },
	{ "shards_mapping.yaml", 3, 3, "shards: expected a sequence, got a mapping" },
	{ "shard_scalar.yaml", 1, 10, "shards[0]: expected a mapping, got a scalar" },
	{ "unknown_key.yaml", 4, 5, "unknown key \"hots\" in shards[0] (valid keys: name, host, port," },
	{ "unknown_top_key.yaml", 3, 1, "did you mean \"read_only\"?" },
	{ "password.yaml", 5, 5, "passwords do not belong in the configuration: use password_env or defaults_file" },
	{ "password_replica.yaml", 5, 29, "passwords do not belong in the configuration" },
	{ "password_env_value.yaml", 5, 19, "the value is not shown" },
	{ "dup_shard.yaml", 4, 12, "duplicate shard name \"s0\" (first declared at line 2)" },
	{ "dup_key.yaml", 5, 5, "duplicate key \"host\" (first at line 3, column 5)" },
	{ "bad_shard_name.yaml", 2, 11, "shard name \"shard 0\" is not valid" },
	{ "no_host.yaml", 2, 5, "a shard needs host, socket or defaults_file" },
	{ "bad_port.yaml", 2, 38, "expected a port number from 1 to 65535, got \"70000\"" },
	{ "port_text.yaml", 4, 11, "got \"three-thousand\"" },
	{ "negative_timeout.yaml", 5, 9, "timeouts.read: expected a number of seconds greater than 0, got -5" },
	{ "timeouts_sequence.yaml", 3, 11, "timeouts: expected a mapping, got a sequence" },
	{ "bad_catalog_ttl.yaml", 3, 14, "catalog_ttl: expected a number of seconds, got \"soon\"" },
	{ "read_only_yes.yaml", 3, 12, "expected true or false, got \"yes\"" },
	{ "alias.yaml", 3, 5, "aliases (*first) are not supported" },
	{ "syntax.yaml", 4, 4, "invalid YAML: did not find expected '-' indicator" },
	{ "unclosed.yaml", 3, 1, "invalid YAML: did not find expected ',' or '}'" },
	{ "multi_doc.yaml", 3, 1, "expected a single YAML document" },
	{ "bad_index_type.yaml", 4, 5, "unknown type \"text\"" },
	{ "index_shard_on.yaml", 3, 5, "shard_on \"userid\" is not one of the index's properties (user_id)" },
	{ "index_missing_on.yaml", 3, 5, "missing required key \"on\"" },
	{ "index_dup.yaml", 4, 12, "duplicate index name \"index_user_id\"" },
	{ "critical_below_max.yaml", 4, 18, "critical_load (40) must not be below max_load (60)" },
	{ "replica_no_host.yaml", 5, 9, "a replica needs host or socket" },
	{ "null_host.yaml", 3, 10, "shards[0].host: expected a string, got null" },
};

static void test_bad_fixtures(void)
{
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		bs_config_t *cfg = (bs_config_t *)&cfg; /* must come back NULL */
		char path[PATH_MAX + 64], prefix[PATH_MAX + 96];
		const char *msg;

		snprintf(path, sizeof path, "%s/%s", fixtures, bad[i].file);
		snprintf(prefix, sizeof prefix, "%s:%d:%d: ", path, bad[i].line, bad[i].col);
		CHECK_ERR(bs_config_load(&cfg, path), BS_ECONFIG);
		CHECK(cfg == NULL, "%s: *out not NULL", bad[i].file);
		CHECK(bs_last_error_code() == BS_ECONFIG, "%s: code %d", bad[i].file, bs_last_error_code());
		msg = bs_last_error();
		CHECK(starts(msg, prefix), "%s: got \"%s\", wanted prefix \"%s\"", bad[i].file, msg, prefix);
		CHECK(has(msg, bad[i].phrase), "%s: got \"%s\", wanted \"%s\"", bad[i].file, msg, bad[i].phrase);
	}
}

/* No value written under a password-like key shows up in the message. */
static void test_password_not_echoed(void)
{
	static const struct {
		const char *file, *secret;
	} cases[] = {
		{ "password.yaml", "horse" },
		{ "password_replica.yaml", "s3cr3t" },
		{ "password_env_value.yaml", "tr0ub4dor" },
	};
	bs_config_t *cfg = NULL;
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char path[PATH_MAX + 64];
		snprintf(path, sizeof path, "%s/%s", fixtures, cases[i].file);
		CHECK_ERR(bs_config_load(&cfg, path), BS_ECONFIG);
		CHECK(!has(bs_last_error(), cases[i].secret), "%s echoed: %s", cases[i].file, bs_last_error());
	}
	/* Anywhere: at the top, under an unknown key, in any case, and even
	 * when something else is wrong earlier in the file. */
	CHECK_ERR(parse(&cfg, "shards: [{name: s0, host: h}]\npassword: hunter2\n"), BS_ECONFIG);
	CHECK(starts(bs_last_error(), "<string>:2:1: passwords do not belong"), "%s", bs_last_error());
	CHECK(!has(bs_last_error(), "hunter2"), "echoed");
	CHECK_ERR(parse(&cfg, "shards: [{name: s0, host: h, port: x}]\nmisc: {deep: [{Password: hunter2}]}\n"),
	          BS_ECONFIG);
	CHECK(starts(bs_last_error(), "<string>:2:16: passwords do not belong"), "%s", bs_last_error());
	CHECK(!has(bs_last_error(), "hunter2"), "echoed");
	CHECK(cfg == NULL, "out");
}

/* Errors on text given inline: "<string>" names it. */
static void test_bad_inline(void)
{
	static const struct {
		const char *text, *prefix, *phrase;
	} cases[] = {
		{ "shards: [{name: s0, host: h, port: 0}]", "<string>:1:36: ", "from 1 to 65535" },
		{ "shards: [{name: s0, host: h, port: -1}]", "<string>:1:36: ", "got \"-1\"" },
		{ "shards: [{name: s0, host: h, port: 3306.5}]", "<string>:1:36: ", "port number" },
		{ "shards: [{name: s0, host: h}]\ncatalog_ttl: -0.5", "<string>:2:14: ", "0 or more" },
		{ "shards: [{name: s0, host: h}]\ncatalog_ttl: .inf", "<string>:2:14: ", "number of seconds" },
		{ "shards: [{name: s0, host: h}]\ncatalog_ttl: 1e400", "<string>:2:14: ", "at most" },
		{ "shards: [{name: s0, host: h}]\ncatalog_ttl: 0x10", "<string>:2:14: ", "got \"0x10\"" },
		{ "shards: [{name: s0, host: h}]\ntimeouts: {connect: 0}", "<string>:2:21: ", "greater than 0" },
		{ "shards: [{name: s0, host: h}]\ntimeouts: {conect: 3}",
		  "<string>:2:12: ", "did you mean \"connect\"" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {chunk_time: 0}", "<string>:2:23: ", "greater than 0" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {max_load: 0}", "<string>:2:21: ", "from 1 to" },
		{ "shards: [{name: s0, host: h}]\ncleaner: [1]", "<string>:2:10: ", "expected a mapping" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {max_fence: 0}", "<string>:2:22: ", "greater than 0" },
		{ "shards: [{name: s0, host: h}]\nbuckets: 0", "<string>:2:10: ", "from 1 to 65536" },
		{ "shards: [{name: s0, host: h}]\nbuckets: 70000", "<string>:2:10: ", "from 1 to 65536" },
		{ "shards: [{name: s0, host: h}]\nbuckets: many", "<string>:2:10: ", "a number of buckets" },
		{ "shards: [{name: s0, host: h, drain: 2}]", "<string>:1:37: ", "true or false" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {jobs: 0}",
		  "<string>:2:17: ", "cleaner.jobs: expected auto or a number of jobs from 1 to 1024, got \"0\"" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {jobs: all}", "<string>:2:17: ", "got \"all\"" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {writers: 65}",
		  "<string>:2:20: ", "cleaner.writers: expected auto or a number of writers from 1 to 64" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {max_history_length: -3}",
		  "<string>:2:31: ", "expected a history list length from 1 to 4000000000" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {write_latency_factor: 0.5}", "<string>:2:33: ",
		  "cleaner.write_latency_factor: expected a factor from 1 to 1000 (or 0: off), got \"0.5\"" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {max_write_latency: -1}", "<string>:2:30: ", "0 or more" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {write_latency_signal: p99}",
		  "<string>:2:33: ", "cleaner.write_latency_signal: expected median or tail, got \"p99\"" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {write_latency_signal: [tail]}",
		  "<string>:2:33: ", "cleaner.write_latency_signal: expected a string" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {max_signal_age: 0}", "<string>:2:27: ", "greater than 0" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {max_signal: 3}",
		  "<string>:2:11: ", "write_latency_signal, max_signal_age)" },
		{ "shards: [{name: s0, host: h}]\ncleaner: {writer: 3}",
		  "<string>:2:11: ", "did you mean \"writers\"" },
		{ "shards: [{name: s0, host: h}]\nindexes: {a: 1}",
		  "<string>:2:10: ", "expected a sequence, got a mapping" },
		{ "shards: [{name: s0, host: h}]\nindexes: [{name: i, on: [], shard_on: a}]",
		  "<string>:2:25: ", "at least one PROP:TYPE" },
		{ "shards: [{name: s0, host: h}]\nindexes: [{name: i, on: [\"a:int,b:int\"], shard_on: a}]",
		  "<string>:2:26: ", "one PROP:TYPE per item" },
		{ "shards: [{name: s0, host: h}]\nindexes: [{name: entities, on: a:int, shard_on: a}]",
		  "<string>:2:11: ", "reserved" },
		{ "shards: [{name: s0, host: h}]\nindexes:\n  - {name: ok, on: \"a:string(2000)\", shard_on: a}",
		  "<string>:3:5: ", "string(2000) is out of range" },
		{ "shards: [{name: s0, host: h, replicas: {host: r}}]", "<string>:1:40: ", "expected a sequence" },
		{ "shards: [{name: s0, host: \"\"}]", "<string>:1:27: ", "non-empty string" },
		{ "shards: [{name: s0, host: \"a\\0b\"}]", "<string>:1:27: ", "NUL" },
		{ "shards: [{name: s0, host: h, database: \"a`b\"}]", "<string>:1:40: ", "database name" },
		{ "shards: [{host: h}]", "<string>:1:10: ", "missing required key \"name\"" },
		{ "shards: [{name: s0, host: h}]\n{a: 1}: 2", "<string>:2:1: ", "expected a string key" },
		{ "shards: [{name: s0, host: h}]\nread_only: \"\xff\"", "<string>:2:13: ", "invalid YAML" },
		{ "shards: [{name: s0, host: h}]\nx: "
		  "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
		  "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
		  "<string>:2:", "nested too deeply" },
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		bs_config_t *cfg = NULL;
		CHECK_ERR(parse(&cfg, cases[i].text), BS_ECONFIG);
		CHECK(cfg == NULL, "case %zu: out", i);
		CHECK(starts(bs_last_error(), cases[i].prefix), "case %zu: got \"%s\", wanted prefix \"%s\"", i,
		      bs_last_error(), cases[i].prefix);
		CHECK(has(bs_last_error(), cases[i].phrase), "case %zu: got \"%s\", wanted \"%s\"", i, bs_last_error(),
		      cases[i].phrase);
	}
	/* embedded NUL bytes in the text itself */
	{
		static const char text[] = "shards: [{name: s0, host: h}]\n\0x: 1\n";
		bs_config_t *cfg = NULL;
		CHECK_ERR(bs_config_parse(&cfg, text, sizeof text - 1, "nul.yaml"), BS_ECONFIG);
		CHECK(starts(bs_last_error(), "nul.yaml:2:1: invalid YAML"), "%s", bs_last_error());
	}
}

/* ------------------------------------------------------------ lookup */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	CHECK(f != NULL, "cannot write %s", path);
}

static void test_lookup(void)
{
	char dir[] = "/tmp/bagstore-test-config-XXXXXX", cwd[PATH_MAX], path[PATH_MAX + 64];
	char *saved = getenv("BAGSTORE_CONFIG") ? strdup(getenv("BAGSTORE_CONFIG")) : NULL;
	bs_config_t *cfg = NULL;

	if (getcwd(cwd, sizeof cwd) == NULL || mkdtemp(dir) == NULL) {
		CHECK(0, "cannot set up a temporary folder");
		free(saved);
		return;
	}
	snprintf(path, sizeof path, "%s/env.yaml", dir);
	write_file(path, "shards: [{name: from_env, host: h}]\n");

	/* $BAGSTORE_CONFIG */
	setenv("BAGSTORE_CONFIG", path, 1);
	CHECK_OK(bs_config_load(&cfg, NULL));
	CHECK(cfg && cfg->nshards == 1 && strcmp(cfg->shards[0].name, "from_env") == 0, "env config");
	CHECK_STR(cfg ? cfg->path : NULL, path);
	bs_config_free(cfg);
	cfg = NULL;

	/* an explicit path wins over the environment */
	snprintf(path, sizeof path, "%s/explicit.yaml", dir);
	write_file(path, "shards: [{name: explicit, host: h}]\n");
	CHECK_OK(bs_config_load(&cfg, path));
	CHECK(cfg && strcmp(cfg->shards[0].name, "explicit") == 0, "explicit path");
	bs_config_free(cfg);
	cfg = NULL;

	/* $BAGSTORE_CONFIG naming a missing file */
	snprintf(path, sizeof path, "%s/missing.yaml", dir);
	setenv("BAGSTORE_CONFIG", path, 1);
	CHECK_ERR(bs_config_load(&cfg, NULL), BS_ECONFIG);
	{
		char want[PATH_MAX + 128];
		snprintf(want, sizeof want, "%s: cannot read: No such file or directory", path);
		CHECK_STR(bs_last_error(), want);
	}
	CHECK(cfg == NULL, "out");

	/* unset: ./bagstore.yaml */
	unsetenv("BAGSTORE_CONFIG");
	CHECK(chdir(dir) == 0, "chdir");
	CHECK_ERR(bs_config_load(&cfg, NULL), BS_ECONFIG);
	CHECK_STR(bs_last_error(), "./bagstore.yaml: cannot read: No such file or directory");
	write_file("bagstore.yaml", "shards: [{name: from_cwd, host: h}]\n");
	CHECK_OK(bs_config_load(&cfg, NULL));
	CHECK(cfg && strcmp(cfg->shards[0].name, "from_cwd") == 0, "default path");
	CHECK_STR(cfg ? cfg->path : NULL, "./bagstore.yaml");
	bs_config_free(cfg);
	cfg = NULL;

	/* empty $BAGSTORE_CONFIG counts as unset */
	setenv("BAGSTORE_CONFIG", "", 1);
	CHECK_OK(bs_config_load(&cfg, NULL));
	CHECK_STR(cfg ? cfg->path : NULL, "./bagstore.yaml");
	bs_config_free(cfg);
	cfg = NULL;

	/* a folder is not a file */
	CHECK_ERR(bs_config_load(&cfg, "."), BS_ECONFIG);
	CHECK_STR(bs_last_error(), ".: cannot read: Is a directory");

	unlink("bagstore.yaml");
	unlink("env.yaml");
	unlink("explicit.yaml");
	CHECK(chdir(cwd) == 0, "chdir back");
	rmdir(dir);
	if (saved)
		setenv("BAGSTORE_CONFIG", saved, 1);
	else
		unsetenv("BAGSTORE_CONFIG");
	free(saved);
}

/* ------------------------------------------------------- fingerprint */

static void test_fingerprint(void)
{
	bs_config_t *a = NULL, *b = NULL, *c = NULL, *d = NULL;
	char fa[17], fb[17], fc[17], fd[17];

	CHECK_OK(parse(&a, "shards: [{name: s0, host: h0}, {name: s1, host: h1}]"));
	/* other keys do not count, only the ordered names */
	CHECK_OK(parse(&b, "shards:\n  - {name: s0, socket: /x, port: 1}\n  - {name: s1, host: other}\n"
	                   "read_only: true\n"));
	CHECK_OK(parse(&c, "shards: [{name: s1, host: h0}, {name: s0, host: h1}]"));
	CHECK_OK(parse(&d, "shards: [{name: s0, host: h0}, {name: s1, host: h1}, {name: s2, host: h2}]"));
	if (!a || !b || !c || !d)
		goto done;
	bs_config_fingerprint(fa, a);
	bs_config_fingerprint(fb, b);
	bs_config_fingerprint(fc, c);
	bs_config_fingerprint(fd, d);
	/* FNV-1a 64 of "2\ns0\ns1\n", worked out independently */
	CHECK_STR(fa, "13a3ab9106f6fb0a");
	CHECK_STR(fb, fa);
	CHECK_STR(fc, "4e30cb605ef3b568");
	CHECK(strcmp(fa, fc) != 0, "order must change the fingerprint");
	CHECK(strcmp(fa, fd) != 0, "count must change the fingerprint");
	CHECK(strlen(fd) == 16, "16 hex digits");
	bs_config_fingerprint(fb, a);
	CHECK_STR(fb, fa);
done:
	bs_config_free(a);
	bs_config_free(b);
	bs_config_free(c);
	bs_config_free(d);
}

/* ------------------------------------------------------------ indexes */

static void test_index_parse(void)
{
	bs_index_t def;
	char buf[600];

	CHECK_OK(bs_index_parse(&def, "index_user_id", "user_id:uuid", "user_id"));
	CHECK_STR(def.name, "index_user_id");
	CHECK(def.nprops == 1 && def.shard_on == 0 && def.state == BS_INDEX_BUILDING, "user_id");
	CHECK(def.created_us == 0 && def.changed_us == 0, "zeroed");

	CHECK_OK(bs_index_parse(&def, "t", " title : string(80) ,\tpublished:int ", "published"));
	CHECK(def.nprops == 2 && def.shard_on == 1, "two props");
	CHECK(def.props[0].type == BS_COL_STRING && def.props[0].len == 80, "string(80)");
	CHECK_STR(bs_index_format_on(buf, sizeof buf, &def), "title:string(80),published:int");

	CHECK_OK(bs_index_parse(&def, "_all", "a:uuid,b:string,c:string(255),d:int,e:float,f:bool,g:binary(16)", "g"));
	CHECK(def.nprops == 7, "seven");
	CHECK(def.props[1].len == 255 && def.props[2].len == 255 && def.props[6].len == 16, "lengths");
	CHECK_STR(bs_index_format_on(buf, sizeof buf, &def),
	          "a:uuid,b:string,c:string,d:int,e:float,f:bool,g:binary(16)");
	/* a short buffer is cut after the last whole item */
	CHECK_STR(bs_index_format_on(buf, 12, &def), "a:uuid");
	CHECK_OK(bs_index_parse(&def, "x", "a:string(1),b:binary(1)", "a"));
	CHECK_OK(bs_index_parse(&def, "x", "a:int,b:int,c:int,d:int,e:int,f:int,g:int,h:int", "h"));
	CHECK(def.nprops == BS_INDEX_MAX_PROPS, "eight");
	CHECK_OK(bs_index_parse(&def, "x", "a:binary(3056)", "a")); /* 3056 + 16 = 3072 */
	CHECK_OK(bs_index_parse(&def, "x", "a:string(764)", "a"));  /* 4 * 764 + 16 = 3072 */
	CHECK_OK(bs_index_parse(&def, "A234567890123456789012345678901234567890123456789012345678901234",
	                        "B234567890123456789012345678901234567890123456789012345678901234:int",
	                        "B234567890123456789012345678901234567890123456789012345678901234"));

	CHECK_STR(bs_coltype_name(BS_COL_UUID), "uuid");
	CHECK_STR(bs_coltype_name(BS_COL_STRING), "string");
	CHECK_STR(bs_coltype_name(BS_COL_INT), "int");
	CHECK_STR(bs_coltype_name(BS_COL_FLOAT), "float");
	CHECK_STR(bs_coltype_name(BS_COL_BOOL), "bool");
	CHECK_STR(bs_coltype_name(BS_COL_BINARY), "binary");
	CHECK_STR(bs_index_state_name(BS_INDEX_BUILDING), "building");
	CHECK_STR(bs_index_state_name(BS_INDEX_READY), "ready");
	CHECK_STR(bs_index_state_name(BS_INDEX_DISABLED), "disabled");
}

static void test_index_bad(void)
{
	static const struct {
		const char *name, *on, *shard_on, *phrase;
	} cases[] = {
		{ "", "a:int", "a", "index name is empty" },
		{ NULL, "a:int", "a", "index name is empty" },
		{ "9lives", "a:int", "a", "index name \"9lives\" is not valid" },
		{ "has-dash", "a:int", "a", "is not valid" },
		{ "A2345678901234567890123456789012345678901234567890123456789012345", "a:int", "a", "at most 64" },
		{ "entities", "a:int", "a", "is reserved" },
		{ "bagstore_jobs", "a:int", "a", "is reserved" },
		{ "Entities", "a:int", "a", "is reserved" },
		{ "i", "", "a", "index has no properties" },
		{ "i", NULL, "a", "index has no properties" },
		{ "i", "a:int,", "a", "property 2 is empty" },
		{ "i", "a:int,,b:int", "a", "property 2 is empty" },
		{ "i", "a", "a", "property 1 (\"a\"): expected PROP:TYPE" },
		{ "i", "a:int,b-c:int", "a", "property 2: name \"b-c\" is not valid" },
		{ "i", ":int", "a", "property 1: name \"\" is not valid" },
		{ "i", "entity_id:uuid", "entity_id", "\"entity_id\" is reserved" },
		{ "i", "a:int,a:uuid", "a", "property 2: \"a\" is listed twice" },
		{ "i", "a:text", "a", "property 1 (\"a\"): unknown type \"text\"" },
		{ "i", "a:UUID", "a", "unknown type \"UUID\"" },
		{ "i", "a:", "a", "unknown type \"\"" },
		{ "i", "a:string(0)", "a", "string(0) is out of range: N must be 1 to 1024" },
		{ "i", "a:string(1025)", "a", "string(1025) is out of range" },
		{ "i", "a:string()", "a", "expected string(N)" },
		{ "i", "a:string(-1)", "a", "expected string(N)" },
		{ "i", "a:string(80", "a", "expected string(N)" },
		{ "i", "a:string(80)x", "a", "unexpected text after \"string(80)\"" },
		{ "i", "a:binary", "a", "binary needs a length: binary(N)" },
		{ "i", "a:binary(0)", "a", "binary(0) is out of range: N must be 1 to 3072" },
		{ "i", "a:binary(3073)", "a", "out of range" },
		{ "i", "a:binary(99999999999999999999)", "a", "out of range" },
		{ "i", "a:binary(3057)", "a", "3073 bytes with entity_id, InnoDB allows 3072" },
		{ "i", "a:string(765)", "a", "too wide for one key" },
		{ "i", "a:int,b:int,c:int,d:int,e:int,f:int,g:int,h:int,i:int", "a", "at most 8" },
		{ "i", "user_id:uuid", "x", "shard_on \"x\" is not one of the index's properties (user_id)" },
		{ "i", "a:int,b:int", "c", "shard_on \"c\" is not one of the index's properties (a, b)" },
		{ "i", "a:int", NULL, "shard_on is missing" },
		{ "i", "a:int", "", "shard_on is missing" },
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		bs_index_t def;
		memset(&def, 0x5a, sizeof def);
		CHECK_ERR(bs_index_parse(&def, cases[i].name, cases[i].on, cases[i].shard_on), BS_EINVAL);
		CHECK(has(bs_last_error(), cases[i].phrase), "case %zu: got \"%s\", wanted \"%s\"", i, bs_last_error(),
		      cases[i].phrase);
		CHECK(def.nprops == 0 && def.name[0] == '\0', "case %zu: def left half-filled", i);
	}
}

static void test_index_ddl(void)
{
	bs_index_t def;
	char *sql = NULL;

	CHECK_OK(bs_index_parse(&def, "index_user_id", "user_id:uuid", "user_id"));
	CHECK_OK(bs_index_ddl(&sql, &def));
	CHECK_STR(sql, "CREATE TABLE IF NOT EXISTS `index_user_id` (\n"
	               "  `user_id` BINARY(16) NOT NULL,\n"
	               "  `entity_id` BINARY(16) NOT NULL,\n"
	               "  PRIMARY KEY (`user_id`, `entity_id`),\n"
	               "  UNIQUE KEY `entity_id` (`entity_id`)\n"
	               ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='bagstore index table'");
	free(sql);
	sql = NULL;

	CHECK_OK(bs_index_parse(&def, "mixed", "title:string(80),n:int,f:float,ok:bool,raw:binary(20),s:string",
	                        "title"));
	CHECK_OK(bs_index_ddl(&sql, &def));
	CHECK_STR(sql, "CREATE TABLE IF NOT EXISTS `mixed` (\n"
	               "  `title` VARCHAR(80) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,\n"
	               "  `n` BIGINT NOT NULL,\n"
	               "  `f` DOUBLE NOT NULL,\n"
	               "  `ok` TINYINT(1) NOT NULL,\n"
	               "  `raw` VARBINARY(20) NOT NULL,\n"
	               "  `s` VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,\n"
	               "  `entity_id` BINARY(16) NOT NULL,\n"
	               "  PRIMARY KEY (`title`, `n`, `f`, `ok`, `raw`, `s`, `entity_id`),\n"
	               "  UNIQUE KEY `entity_id` (`entity_id`)\n"
	               ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin COMMENT='bagstore index table'");
	free(sql);
	sql = NULL;

	/* A definition built by hand is checked before it becomes SQL. */
	strcpy(def.props[1].name, "n`; DROP TABLE entities; --");
	sql = (char *)&def;
	CHECK_ERR(bs_index_ddl(&sql, &def), BS_EINVAL);
	CHECK(sql == NULL, "out cleared");
	CHECK_OK(bs_index_parse(&def, "x", "a:int", "a"));
	def.nprops = 0;
	CHECK_ERR(bs_index_ddl(&sql, &def), BS_EINVAL);
	def.nprops = 1;
	def.props[0].type = (bs_coltype_t)42;
	CHECK_ERR(bs_index_ddl(&sql, &def), BS_EINVAL);
	CHECK_ERR(bs_index_ddl(&sql, NULL), BS_EINVAL);
}

/* ------------------------------------------------------------ tls */

static bool streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

/* The top level's tls is every shard's, key by key under the shard's own,
 * and a replica's under its shard's; a mapping without mode means
 * verify_identity; no tls anywhere leaves the mode unset. */
static void test_tls_good(void)
{
	static const char text[] =
		"tls: {mode: verify_ca, ca: /dev/null, cipher: ECDHE-RSA-AES256-GCM-SHA384}\n"
		"shards:\n"
		"  - {name: a, host: h1, replicas: [{host: r, tls: {mode: verify_identity}}, {host: r2}]}\n"
		"  - {name: b, host: h2, tls: {mode: required, cert: /dev/null, key: /dev/null, versions: "
		"\"TLSv1.2,TLSv1.3\"}}\n"
		"  - {name: c, host: h3, tls: {mode: disabled}}\n";
	bs_config_t *cfg = NULL;

	CHECK_OK(parse(&cfg, text));
	if (!cfg)
		return;
	CHECK(cfg->tls.mode == BS_TLS_VERIFY_CA, "top mode %d", cfg->tls.mode);
	CHECK(cfg->shards[0].tls.mode == BS_TLS_VERIFY_CA && streq(cfg->shards[0].tls.ca, "/dev/null") &&
	              streq(cfg->shards[0].tls.cipher, "ECDHE-RSA-AES256-GCM-SHA384"),
	      "a inherits the top level");
	CHECK(cfg->shards[0].replicas[0].tls.mode == BS_TLS_VERIFY_IDENTITY &&
	              streq(cfg->shards[0].replicas[0].tls.ca, "/dev/null"),
	      "a replica: its mode over its shard's ca");
	CHECK(cfg->shards[0].replicas[1].tls.mode == BS_TLS_VERIFY_CA, "a replica without tls: its shard's");
	CHECK(cfg->shards[1].tls.mode == BS_TLS_REQUIRED && streq(cfg->shards[1].tls.cert, "/dev/null") &&
	              streq(cfg->shards[1].tls.key, "/dev/null") &&
	              streq(cfg->shards[1].tls.versions, "TLSv1.2,TLSv1.3") &&
	              streq(cfg->shards[1].tls.ca, "/dev/null"),
	      "b: its own keys over the top level's");
	CHECK(cfg->shards[2].tls.mode == BS_TLS_DISABLED, "c disabled");
	CHECK_STR(bs_tls_mode_name(cfg->shards[1].tls.mode), "required");
	bs_config_free(cfg);

	CHECK_OK(parse(&cfg, "shards: [{name: a, host: h1, tls: {ca: /dev/null}}, {name: b, host: h2}]\n"));
	if (cfg) {
		CHECK(cfg->shards[0].tls.mode == BS_TLS_VERIFY_IDENTITY, "a CA alone means verify_identity");
		CHECK(cfg->shards[1].tls.mode == BS_TLS_MODE_UNSET, "no tls: unset");
		CHECK_STR(bs_tls_mode_name(BS_TLS_MODE_UNSET), "unset");
		bs_config_free(cfg);
	}
	/* verify_ca without ca, when an option file may name it */
	CHECK_OK(parse(&cfg, "shards: [{name: a, defaults_file: /etc/x.cnf, tls: {mode: verify_ca}}]\n"));
	bs_config_free(cfg);
	CHECK_STR(bs_tls_level_name(BS_TLS_IDENTITY), "identity");
	CHECK_STR(bs_tls_level_name(BS_TLS_NONE), "none");
}

static void test_tls_bad(void)
{
	static const struct {
		const char *text, *prefix, *phrase;
	} cases[] = {
		{ "shards: [{name: s0, host: h}]\ntls: {mode: verify-full}", "<string>:2:13: ",
		  "tls.mode: expected disabled, preferred, required, verify_ca or verify_identity, got "
		  "\"verify-full\"" },
		{ "shards: [{name: s0, host: h, tls: {mode: VERIFY_IDENTITY}}]",
		  "<string>:1:42: ", "shards[0].tls.mode: expected disabled" },
		{ "shards: [{name: s0, host: h}]\ntls: {ca: /nonexistent/ca.pem}",
		  "<string>:2:11: ", "tls.ca: cannot read \"/nonexistent/ca.pem\": No such file or directory" },
		{ "shards: [{name: s0, host: h, tls: {cert: /dev/null, key: /nonexistent/k.pem}}]",
		  "<string>:1:58: ", "shards[0].tls.key: cannot read" },
		{ "shards: [{name: s0, host: h, tls: {cert: /dev/null}}]",
		  "<string>:1:35: ", "cert and key go together: key is missing" },
		{ "shards: [{name: s0, host: h, tls: {mode: verify_ca}}]",
		  "<string>:1:35: ", "mode verify_ca needs ca" },
		{ "tls: {mode: verify_ca}\nshards: [{name: s0, host: h}]",
		  "<string>:2:10: ", "shards[0]: tls: mode verify_ca (from the top-level tls) needs ca" },
		{ "shards: [{name: s0, host: h, tls: {mode: disabled, ca: /dev/null}}]",
		  "<string>:1:35: ", "mode disabled takes no other key" },
		{ "shards: [{name: s0, host: h, tls: {mode: required, versions: TLSv1.4}}]",
		  "<string>:1:62: ", "expected TLS versions from TLSv1.0" },
		{ "shards: [{name: s0, host: h, tls: {mod: required}}]", "<string>:1:36: ", "did you mean \"mode\"" },
		{ "shards: [{name: s0, host: h, tls: required}]",
		  "<string>:1:35: ", "shards[0].tls: expected a mapping" },
		{ "shards: [{name: s0, host: h, replicas: [{host: r, tls: {mode: maybe}}]}]",
		  "<string>:1:63: ", "shards[0].replicas[0].tls.mode: expected disabled" },
		{ "shards: [{name: s0, host: h, replicas: [{host: r, tls: {mode: verify_ca}}]}]",
		  "<string>:1:56: ", "mode verify_ca needs ca" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		bs_config_t *cfg = NULL;
		CHECK_ERR(parse(&cfg, cases[i].text), BS_ECONFIG);
		CHECK(cfg == NULL, "tls case %zu: out", i);
		CHECK(starts(bs_last_error(), cases[i].prefix), "tls case %zu: got \"%s\", wanted prefix \"%s\"", i,
		      bs_last_error(), cases[i].prefix);
		CHECK(has(bs_last_error(), cases[i].phrase), "tls case %zu: got \"%s\", wanted \"%s\"", i,
		      bs_last_error(), cases[i].phrase);
	}
}

/* ------------------------------------------------------------ grants */

static void test_grants(void)
{
	static const char text[] = "tls: {ca: /dev/null}\n"
				   "shards:\n"
				   "  - {name: a, host: h1, port: 3307, replicas: [{host: r1, port: 3308}]}\n"
				   "  - {name: b, host: h2, database: other_db, tls: {mode: preferred}}\n";
	bs_config_t *cfg = NULL;
	char *sql = NULL;
	bs_role_t role;

	CHECK_OK(parse(&cfg, text));
	if (!cfg)
		return;
	CHECK_OK(bs_role_parse(&role, "readonly"));
	CHECK(role == BS_ROLE_READONLY, "readonly");
	CHECK_ERR(bs_role_parse(&role, "admin"), BS_EINVAL);
	CHECK(has(bs_last_error(), "app, cleaner, console or readonly"), "%s", bs_last_error());

	CHECK_OK(bs_grants(&sql, cfg, BS_ROLE_READONLY, "ro", "10.0.0.%", NULL, NULL, 0));
	CHECK(sql && has(sql, "GRANT SELECT ON `bagstore`.* TO `ro`@`10.0.0.%`;\n"), "readonly: SELECT on a's db: %s",
	      sql);
	CHECK(sql && has(sql, "GRANT SELECT ON `other_db`.* TO `ro`@`10.0.0.%`;\n"), "readonly: SELECT on b's db");
	CHECK(sql && has(sql, "GRANT SLAVE MONITOR ON *.* TO `ro`@`10.0.0.%`;"), "readonly: a's replicas' status");
	CHECK(sql && has(sql, "r1:3308"), "the replica named");
	CHECK(sql && has(sql, "ALTER USER `ro`@`10.0.0.%` REQUIRE SSL;"), "a: verify_identity: REQUIRE SSL");
	CHECK(sql && !has(sql, "INSERT") && !has(sql, "CREATE,") && !has(sql, "DROP"), "readonly: nothing else");
	free(sql);

	{
		static const bs_grant_table_t ix[] = { { "idx_a", true }, { "idx_new", false } };
		CHECK_OK(bs_grants(&sql, cfg, BS_ROLE_APP, "app", "%", "b", ix, 2));
	}
	CHECK(sql && has(sql, "GRANT SELECT ON `other_db`.* TO `app`@`%`;"), "app: SELECT on b's database: %s", sql);
	CHECK(sql && has(sql, "GRANT EXECUTE ON PROCEDURE `other_db`.`bagstore_put_v2` TO `app`@`%`;") &&
	              has(sql, "GRANT EXECUTE ON PROCEDURE `other_db`.`bagstore_put_v1` TO `app`@`%`;") &&
	              has(sql, "GRANT EXECUTE ON PROCEDURE `other_db`.`bagstore_delete_v1` TO `app`@`%`;"),
	      "app: EXECUTE on the write procedures, by name");
	CHECK(sql && has(sql, "GRANT INSERT, UPDATE, DELETE ON `other_db`.`entities` TO `app`@`%`;"),
	      "app: DML on entities");
	CHECK(sql && has(sql, "GRANT INSERT, UPDATE, DELETE ON `other_db`.`bagstore_intents` TO `app`@`%`;"),
	      "app: intents");
	CHECK(sql && has(sql, "GRANT INSERT, UPDATE, DELETE ON `other_db`.`bagstore_batch_intents` TO `app`@`%`;"),
	      "app: a bulk put's intents");
	CHECK(sql && has(sql, "GRANT INSERT, UPDATE ON `other_db`.`bagstore_move_log` TO `app`@`%`;"), "app: move log");
	CHECK(sql && has(sql, "GRANT INSERT ON `other_db`.`bagstore_audit` TO `app`@`%`;"),
	      "app: audit rows added only");
	CHECK(sql && has(sql, "GRANT INSERT, UPDATE, DELETE ON `other_db`.`idx_a` TO `app`@`%`;"),
	      "app: an index table");
	CHECK(sql && has(sql, "GRANT INSERT, UPDATE, DELETE, CREATE ON `other_db`.`idx_new` TO `app`@`%`;"),
	      "app: an index table not made yet: with CREATE");
	CHECK(sql && !has(sql, "bagstore_buckets") && !has(sql, "bagstore_map") &&
	              !has(sql, "ON `other_db`.* TO `app`@`%`;\nGRANT INSERT") && !has(sql, "DROP,") &&
	              !has(sql, "ALTER,"),
	      "app: nothing on ownership, no DDL");
	{
		/* every GRANT line but the database's SELECT names one table */
		int db = 0;
		for (const char *p = sql; p && (p = strstr(p, "\nGRANT ")); p++)
			db += strncmp(strstr(p, " ON ") + 4, "`other_db`.*", 12) == 0;
		CHECK(db == 1, "app: one database-wide grant (SELECT), got %d", db);
	}
	CHECK(sql && !has(sql, "`bagstore`") && !has(sql, "SLAVE MONITOR") && !has(sql, "REQUIRE SSL"),
	      "app, shard b only: no replica grant, preferred needs no REQUIRE SSL");
	free(sql);

	CHECK_OK(bs_grants(&sql, cfg, BS_ROLE_CLEANER, "cl", "%", "a", NULL, 0));
	CHECK(sql && has(sql, "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, CREATE ROUTINE, EXECUTE, "
	                      "TRIGGER, REFERENCES ON `bagstore`.* TO `cl`@`%`;"),
	      "cleaner: DML and DDL: %s", sql);
	CHECK(sql && has(sql, "SLAVE MONITOR"), "cleaner reads its replicas' lag");
	free(sql);
	CHECK_OK(bs_grants(&sql, cfg, BS_ROLE_CONSOLE, "op", "%", "a", NULL, 0));
	CHECK(sql && has(sql, "CREATE, DROP, ALTER, CREATE ROUTINE, EXECUTE, TRIGGER, REFERENCES ON `bagstore`.* TO "
	                      "`op`@`%`;"),
	      "console: as the cleaner");
	free(sql);

	sql = (char *)1;
	CHECK_ERR(bs_grants(&sql, cfg, BS_ROLE_APP, "a`b", "%", NULL, NULL, 0), BS_EINVAL);
	CHECK(sql == NULL, "out cleared");
	CHECK_ERR(bs_grants(&sql, cfg, BS_ROLE_APP, "app", "h'; DROP", NULL, NULL, 0), BS_EINVAL);
	CHECK_ERR(bs_grants(&sql, cfg, BS_ROLE_APP, "", "%", NULL, NULL, 0), BS_EINVAL);
	CHECK_ERR(bs_grants(&sql, cfg, BS_ROLE_APP, "app", "%", "zz", NULL, 0), BS_ENOTFOUND);
	{
		/* an index name is checked: never bagstore's own tables */
		static const bs_grant_table_t reserved[] = { { "bagstore_audit", false } };
		static const bs_grant_table_t bad2[] = { { "x`; DROP", false } };
		CHECK_ERR(bs_grants(&sql, cfg, BS_ROLE_APP, "app", "%", NULL, reserved, 1), BS_EINVAL);
		CHECK(has(bs_last_error(), "reserved"), "%s", bs_last_error());
		CHECK_ERR(bs_grants(&sql, cfg, BS_ROLE_APP, "app", "%", NULL, bad2, 1), BS_EINVAL);
	}
	CHECK_STR(bs_role_name(BS_ROLE_CLEANER), "cleaner");
	bs_config_free(cfg);
}

/* ------------------------------------------------------ many shards */

/* "shards:" and n shards s0.. on hosts h0.., then tail (one more shard). */
static char *many_shards(int n, const char *tail)
{
	size_t cap = (size_t)n * 48 + strlen(tail) + 64, o;
	char *t = malloc(cap);

	if (!t)
		return NULL;
	o = (size_t)snprintf(t, cap, "shards:\n");
	for (int i = 0; i < n; i++)
		o += (size_t)snprintf(t + o, cap - o, "  - {name: s%d, host: h%d, port: 3306}\n", i, i);
	snprintf(t + o, cap - o, "%s", tail);
	return t;
}

/* The duplicate checks over a list at the 65,536-shard cap: each shard was
 * compared with every earlier one (minutes; the runner's timeout); now a
 * hash per key. Same messages, FILE:LINE of both shards. */
static void test_many_shards(void)
{
	static const struct {
		const char *tail, *want;
	} cases[] = {
		{ "  - {name: s0, host: other}\n",
		  "<string>:65537:12: shards[65535].name: duplicate shard name \"s0\" (first declared at line 2)" },
		{ "  - {name: s65534, host: other}\n", "<string>:65537:12: shards[65535].name: duplicate shard name "
		                                       "\"s65534\" (first declared at line 65536)" },
		{ "  - {name: last, host: h7}\n", /* 3306 by default */
		  "<string>:65537:5: shards[65535]: shard last is the same server and database as shard s7 (line 9): "
		  "two shards cannot share one set of tables" },
		{ "  - {name: last, host: h65534, port: 3306, database: bagstore}\n",
		  "<string>:65537:5: shards[65535]: shard last is the same server and database as shard s65534 (line "
		  "65536)" },
	};
	bs_config_t *cfg = NULL;
	char *t;

	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
		if (!(t = many_shards(65535, cases[k].tail))) {
			CHECK(0, "out of memory");
			return;
		}
		CHECK_ERR(parse(&cfg, t), BS_ECONFIG);
		CHECK(starts(bs_last_error(), cases[k].want), "case %zu: %s", k, bs_last_error());
		free(t);
	}
	/* not duplicates: another database, another port, a socket named like a host */
	t = many_shards(65533, "  - {name: x1, host: h7, database: other}\n"
	                       "  - {name: x2, host: h7, port: 3307}\n"
	                       "  - {name: x3, socket: h7}\n");
	if (t) {
		CHECK_OK(parse(&cfg, t));
		CHECK(cfg && cfg->nshards == 65536, "%d shards", cfg ? cfg->nshards : -1);
		bs_config_free(cfg);
		cfg = NULL;
		free(t);
	}
	/* a socket shard twice, far apart */
	t = many_shards(3, "  - {name: a, socket: /run/a.sock}\n  - {name: b, socket: /run/b.sock}\n"
	                   "  - {name: c, socket: /run/a.sock}\n");
	if (t) {
		CHECK_ERR(parse(&cfg, t), BS_ECONFIG);
		CHECK(has(bs_last_error(),
		          "<string>:7:5: shards[5]: shard c is the same server and database as shard a (line 5)"),
		      "%s", bs_last_error());
		free(t);
	}
}

/* ---------------------------------------------------- hostile sizes */

typedef struct {
	int rc;
	long maxrss_kb;
	char msg[600];
} load_result_t;

/* bs_config_load(path) in a child, which reports its result and its peak
 * resident set (getrusage: the child starts small, so the peak is the
 * load's). */
static bool load_in_child(load_result_t *r, const char *path)
{
	int fd[2], st;
	pid_t pid;

	memset(r, 0, sizeof *r);
	if (pipe(fd) < 0 || (pid = fork()) < 0)
		return false;
	if (pid == 0) {
		bs_config_t *cfg = NULL;
		struct rusage ru;
		load_result_t c = { 0 };

		close(fd[0]);
		c.rc = bs_config_load(&cfg, path);
		getrusage(RUSAGE_SELF, &ru);
		c.maxrss_kb = ru.ru_maxrss;
		snprintf(c.msg, sizeof c.msg, "%s", c.rc < 0 ? bs_last_error() : "");
		bs_config_free(cfg);
		_exit(write(fd[1], &c, sizeof c) == (ssize_t)sizeof c ? 0 : 1);
	}
	close(fd[1]);
	bool ok = read(fd[0], r, sizeof *r) == (ssize_t)sizeof *r;
	close(fd[0]);
	waitpid(pid, &st, 0);
	return ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* A flat list just under the 16 MiB file cap, two bytes per node ("-\n",
 * a null), took ~1 GB to read (a malloc per node and per text, kid arrays
 * doubling): refused at the node cap with FILE:LINE:COL, in a bounded
 * memory. Under a sanitizer or valgrind the bound is theirs, not ours. */
static void test_hostile_size(void)
{
	char path[] = "/tmp/bagstore-test-config-XXXXXX", want[256];
	const size_t n = ((16u << 20) - 16) / 2;
	load_result_t r;
	long bound = 128 * 1024;
	FILE *f;
	int fd;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	bound = 0; /* ASan's shadow and allocator: ~520 MB for either file below */
#endif
	if (getenv("BAGSTORE_VALGRIND") && !strcmp(getenv("BAGSTORE_VALGRIND"), "1"))
		bound = 0;
	if ((fd = mkstemp(path)) < 0 || !(f = fdopen(fd, "w"))) {
		CHECK(0, "cannot make %s", path);
		return;
	}
	fputs("shards:\n", f);
	for (size_t i = 0; i < n; i++)
		fputs("-\n", f);
	fclose(f);
	CHECK(load_in_child(&r, path), "the child reported");
	CHECK(r.rc == BS_ECONFIG, "rc %d", r.rc);
	/* node 1 is the root mapping, 2 the key, 3 the list: the 1,048,577th
	 * is the list's 1,048,574th item, on line 1,048,575 (an empty
	 * scalar starts after its dash) */
	snprintf(want, sizeof want,
	         "%s:1048575:2: more than 1048576 YAML nodes (keys, values, lists and mappings): "
	         "a bagstore configuration is far smaller; is this the right file?",
	         path);
	CHECK_STR(r.msg, want);
	if (bound)
		CHECK(r.maxrss_kb < bound, "peak resident set %ld KiB reading a hostile 16 MiB list (bound %ld KiB)",
		      r.maxrss_kb, bound);
	printf("# hostile 16 MiB flat list: peak resident set %ld KiB\n", r.maxrss_kb);
	unlink(path);

	/* bs_config_parse holds a string to the file's cap too */
	{
		size_t big = (16u << 20) + 1;
		char *text = malloc(big);
		bs_config_t *cfg = NULL;

		if (text) {
			memset(text, '#', big);
			CHECK_ERR(bs_config_parse(&cfg, text, big, "big.yaml"), BS_ECONFIG);
			CHECK_STR(bs_last_error(), "big.yaml: cannot read: larger than 16777216 bytes");
			free(text);
		}
	}

	/* a legitimate list of 65,536 shards still reads */
	strcpy(path, "/tmp/bagstore-test-config-XXXXXX");
	if ((fd = mkstemp(path)) < 0 || !(f = fdopen(fd, "w"))) {
		CHECK(0, "cannot make %s", path);
		return;
	}
	fputs("shards:\n", f);
	for (int i = 0; i < 65536; i++)
		fprintf(f,
		        "  - name: s%d\n    host: db%d.example.com\n    port: 3306\n    database: store_%d\n"
		        "    user: app\n    password_env: PW_%d\n",
		        i, i, i, i);
	fclose(f);
	CHECK(load_in_child(&r, path), "the child reported");
	CHECK(r.rc == 0, "65,536 shards: %d %s", r.rc, r.msg);
	printf("# 65,536 shards of six keys: peak resident set %ld KiB\n", r.maxrss_kb);
	unlink(path);
}

int main(void)
{
	find_fixtures();
	test_good();
	test_defaults();
	test_daemon_keys();
	test_examples();
	test_bad_fixtures();
	test_password_not_echoed();
	test_bad_inline();
	test_lookup();
	test_fingerprint();
	test_index_parse();
	test_index_bad();
	test_index_ddl();
	test_tls_good();
	test_tls_bad();
	test_grants();
	test_many_shards();
	test_hostile_size();
	return t_done("config");
}

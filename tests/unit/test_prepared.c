/*
 * test_prepared.c - the statements the engine sends prepared (a get, and
 * a put or delete with no index: bs__shard_prep_run, engine/shard.c),
 * against two real shards: prepared once per connection and kind, run
 * for every call, prepared again on a new connection after the old one
 * was killed, shown by the trace as the text form with its values, and
 * sent as text where the server will not prepare (max_prepared_stmt_count
 * 0); and with an index, the intent and the fenced write in one prepared
 * CALL of a write procedure (two prepared statements where there is
 * none: test_write_proc), every index row right and no intent left after. Outcomes
 * are checked with plain SQL through connections of our own, the server's
 * counters included.
 */
#include "bagstore.h"
#include "internal.h"
#include "rawsql.h"
#include "t.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 40

/* The server's count of a global status variable (Com_stmt_prepare...). */
static long long status(int shard, const char *name)
{
	char q[160];
	snprintf(q, sizeof q, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='%s'",
	         name);
	return sql_int(shard, q);
}

static long long both(const char *name)
{
	return status(0, name) + status(1, name);
}

static void bag_of(bs_value_t *bag, const bs_id_t *id, const char *title)
{
	bs_value_t v;
	bs_value_map(bag);
	bs_value_bin(&v, id->b, 16);
	bs_map_set(bag, "id", 2, &v);
	bs_value_str(&v, title, strlen(title));
	bs_map_set(bag, "title", 5, &v);
}

/* Is id's entity there with title? */
static bool holds(bs_store_t *st, const bs_id_t *id, const char *title, int *shard)
{
	bs_value_t got, want;
	bool same;
	if (bs_get(&got, st, id, NULL, shard))
		return false;
	bag_of(&want, id, title);
	same = bs_value_equal(&got, &want);
	bs_value_clear(&got);
	bs_value_clear(&want);
	return same;
}

static char traced[8192];
static int ntraced, nrefused; /* nrefused: statements the fence refused (1452) */

static void trace(void *arg, const bs_trace_t *t)
{
	(void)arg;
	if (t->err == 1452) /* from the store's threads too (a map's load): atomic */
		__atomic_add_fetch(&nrefused, 1, __ATOMIC_RELAXED);
	if (strstr(t->sql, "FROM bagstore_buckets o LEFT JOIN entities e") ||
	    strstr(t->sql, "INSERT INTO entities (id, updated, body, bucket) VALUES (")) {
		snprintf(traced, sizeof traced, "%s", t->sql);
		ntraced++;
	}
}

/* Puts, gets and deletes of N entities, every one checked; the shard
 * each was read from into shard[]. */
static void round_trip(bs_store_t *st, bs_id_t *ids, int *shard, const char *what)
{
	for (int k = 0; k < N; k++) {
		bs_value_t bag;
		bag_of(&bag, &ids[k], what);
		CHECK_OK(bs_put(st, &bag, NULL));
		bs_value_clear(&bag);
	}
	int found = 0;
	for (int k = 0; k < N; k++)
		found += holds(st, &ids[k], what, &shard[k]);
	CHECK(found == N, "%s: %d of %d entities read back as written", what, found, N);
	for (int k = 0; k < N; k += 4)
		CHECK_OK(bs_delete(st, &ids[k]));
	int gone = 0;
	for (int k = 0; k < N; k += 4) {
		bs_value_t got;
		gone += bs_get(&got, st, &ids[k], NULL, NULL) == BS_ENOTFOUND;
	}
	CHECK(gone == N / 4, "%s: %d of %d deleted entities gone", what, gone, N / 4);
}

/* A store's connection on shard s killed from outside: the next call may
 * fail as unreachable, the one after reconnects and prepares again. */
static void killed(bs_store_t *st, const bs_id_t *id, const char *title, int s)
{
	char q[256];
	snprintf(q, sizeof q,
	         "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID<>CONNECTION_ID() AND DB='%s'"
	         " AND USER='%s'",
	         cfg->shards[s].database, cfg->shards[s].user);
	long long before = sql_int(s, q);
	MYSQL *m = rawconn(s);
	snprintf(q, sizeof q, "SELECT ID FROM information_schema.PROCESSLIST WHERE ID<>CONNECTION_ID() AND DB='%s'",
	         cfg->shards[s].database);
	CHECK(mysql_query(m, q) == 0, "listing connections: %s", mysql_error(m));
	MYSQL_RES *r = mysql_store_result(m);
	int nkilled = 0;
	for (MYSQL_ROW row; r && (row = mysql_fetch_row(r));) {
		char kq[64];
		snprintf(kq, sizeof kq, "KILL CONNECTION %s", row[0]);
		nkilled += mysql_query(m, kq) == 0;
	}
	if (r)
		mysql_free_result(r);
	CHECK(before >= 1 && nkilled >= 1, "the store's connection to shard %d killed (%lld there, %d killed)", s,
	      before, nkilled);
	long long prepared = status(s, "Com_stmt_prepare");
	int shard = -1;
	bool ok = holds(st, id, title, &shard) || holds(st, id, title, &shard);
	CHECK(ok && shard == s, "read again from shard %d after its connection was killed (from %d): %s", s, shard,
	      bs_last_error());
	CHECK(status(s, "Com_stmt_prepare") > prepared, "prepared again on the new connection to shard %d", s);
}

/* How many entities the index finds with title t. */
static size_t titled(bs_store_t *st, const char *t)
{
	bs_cond_t c = { "title", { 0 } };
	bs_result_t r;
	size_t n = 0;
	bs_value_str(&c.value, t, strlen(t));
	if (!bs_query(&r, st, "ix_title", &c, 1, 0)) {
		n = r.len;
		bs_result_free(&r);
	}
	bs_value_clear(&c.value);
	return n;
}

/* An index over every column type, its rows written prepared (one row
 * on one shard: bs__shard_prep_sql): each entity found by all five
 * values, an int given for the float widened as the text form does. */
static void mixed_types(bs_store_t *st)
{
	bs_id_t ids[6];
	for (int k = 0; k < 6; k++) {
		bs_value_t bag, v;
		char t[24], bin[8];
		bs_id_generate(&ids[k]);
		bs_value_map(&bag);
		bs_value_bin(&v, ids[k].b, 16);
		bs_map_set(&bag, "id", 2, &v);
		bs_value_int(&v, k % 2 ? -5 - k : 5000000000LL + k);
		bs_map_set(&bag, "n", 1, &v);
		if (k % 3)
			bs_value_float(&v, 0.1 * k);
		else
			bs_value_int(&v, k); /* an int where the column is a float */
		bs_map_set(&bag, "f", 1, &v);
		bs_value_bool(&v, k % 2);
		bs_map_set(&bag, "b", 1, &v);
		snprintf(t, sizeof t, "h\xc3\xa9 %d", k); /* non-ASCII UTF-8 */
		bs_value_str(&v, t, strlen(t));
		bs_map_set(&bag, "t", 1, &v);
		memset(bin, k, sizeof bin);
		bs_value_bin(&v, bin, sizeof bin);
		bs_map_set(&bag, "x", 1, &v);
		CHECK_OK(bs_put(st, &bag, NULL));
		bs_value_clear(&bag);
	}
	int found = 0;
	for (int k = 0; k < 6; k++) {
		bs_cond_t c[5] = { { "n", { 0 } }, { "f", { 0 } }, { "b", { 0 } }, { "t", { 0 } }, { "x", { 0 } } };
		char t[24], bin[8];
		bs_result_t r;
		bs_value_int(&c[0].value, k % 2 ? -5 - k : 5000000000LL + k);
		bs_value_float(&c[1].value, k % 3 ? 0.1 * k : (double)k);
		bs_value_bool(&c[2].value, k % 2);
		snprintf(t, sizeof t, "h\xc3\xa9 %d", k);
		bs_value_str(&c[3].value, t, strlen(t));
		memset(bin, k, sizeof bin);
		bs_value_bin(&c[4].value, bin, sizeof bin);
		if (!bs_query(&r, st, "ix_mix", c, 5, 0)) {
			found += r.len == 1 && !memcmp(r.items[0].id.b, ids[k].b, 16);
			bs_result_free(&r);
		}
		for (int j = 0; j < 5; j++)
			bs_value_clear(&c[j].value);
	}
	CHECK(found == 6, "every type's value written prepared and found again: %d of 6 (%s)", found, bs_last_error());
}

/* A client whose character set is latin1 (an option file's
 * default-character-set, as an operator's ~/.my.cnf may say; or a
 * server's init_connect): index rows' strings, sent prepared as
 * parameters, keep their UTF-8 bytes, and the index finds them. The
 * server reads a string parameter in the connection's character set
 * (the text form's _utf8mb4 X'..' says its own): each connection sets
 * utf8mb4 itself once connected. */
static void latin1_client(void)
{
	char cnf[300], yaml[4096];
	const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(cnf, sizeof cnf, "%s/bagstore-latin1-%d.cnf", tmp, (int)getpid());
	FILE *f = fopen(cnf, "w");
	CHECK(f != NULL, "%s written", cnf);
	if (!f)
		return;
	fprintf(f, "[client]\ndefault-character-set=latin1\n");
	fclose(f);
	int o = snprintf(yaml, sizeof yaml, "shards:\n");
	for (int i = 0; i < cfg->nshards && o < (int)sizeof yaml; i++)
		o += snprintf(yaml + o, sizeof yaml - (size_t)o,
		              "  - {name: %s, host: %s, port: %u, user: %s, database: %s, defaults_file: %s}\n",
		              cfg->shards[i].name, cfg->shards[i].host, cfg->shards[i].port, cfg->shards[i].user,
		              cfg->shards[i].database, cnf);
	bs_config_t *c2 = NULL;
	bs_store_t *st = NULL, *plain = NULL;
	CHECK_OK(bs_config_parse(&c2, yaml, strlen(yaml), "latin1.yaml"));
	if (!c2 || bs_store_open(&st, c2) || bs_store_open(&plain, cfg)) {
		CHECK(false, "stores open: %s", bs_last_error());
		goto done;
	}
	bs_id_t ids[8];
	int puts = 0, found = 0, bytes = 0;
	for (int k = 0; k < 8; k++) {
		bs_value_t bag;
		char t[40];
		bs_id_generate(&ids[k]);
		snprintf(t, sizeof t, "latin1 \xc3\xa9\xe2\x82\xac %d", k); /* é and € in UTF-8 */
		bag_of(&bag, &ids[k], t);
		puts += bs_put(st, &bag, NULL) == 0;
		bs_value_clear(&bag);
	}
	CHECK(puts == 8, "8 puts through latin1 connections: %d (%s)", puts, bs_last_error());
	for (int k = 0; k < 8; k++) {
		bs_cond_t c = { "title", { 0 } };
		bs_result_t r;
		char t[40], hex[33], q[300];
		snprintf(t, sizeof t, "latin1 \xc3\xa9\xe2\x82\xac %d", k);
		bs_value_str(&c.value, t, strlen(t));
		if (!bs_query(&r, plain, "ix_title", &c, 1, 0)) {
			found += r.len == 1 && !memcmp(r.items[0].id.b, ids[k].b, 16);
			bs_result_free(&r);
		}
		bs_value_clear(&c.value);
		bs_id_hex(hex, &ids[k]);
		/* the row's bytes: "latin1 é€ " then the digit */
		char want[80];
		snprintf(want, sizeof want, "6C6174696E3120C3A9E282AC20%02X", '0' + k);
		snprintf(q, sizeof q, "SELECT COUNT(*) FROM ix_title WHERE entity_id=X'%s' AND HEX(title)='%s'", hex,
		         want);
		bytes += sql_int(0, q) + sql_int(1, q) == 1;
	}
	CHECK(found == 8, "each found by its title through a utf8mb4 connection: %d of 8", found);
	CHECK(bytes == 8, "each index row holds the title's UTF-8 bytes: %d of 8", bytes);
	/* the counts after this are of with_index's entities: these go, once
	 * their writer's store has settled their intents (freed) */
	bs_store_free(st);
	st = NULL;
	for (int k = 0; k < 8; k++)
		CHECK_OK(bs_delete(plain, &ids[k]));
done:
	bs_store_free(st);
	bs_store_free(plain);
	bs_config_free(c2);
	unlink(cnf);
}

/* A statement that answers rows, answered with an OK alone (the
 * optimizer proved its WHERE empty): no rows, the connection and the
 * statement fine (the client library keeps the last answer's column
 * count: storing a result that is not there put it out of step, "Commands
 * out of sync", taken for a lost connection). */
static void ok_without_rows(bs_store_t *st)
{
	static const char q[] = "DELETE FROM prep_t WHERE id=? AND ? RETURNING id";
	MYSQL_STMT *res;
	int64_t affected;
	bool text;
	sql(0, "CREATE TABLE prep_t (id INT PRIMARY KEY)");
	sql(0, "INSERT INTO prep_t VALUES (1),(2),(3)");
	for (int k = 0; k < 3; k++) {
		long long keep = k != 1; /* the second: WHERE ... AND 0 */
		bs__param_t p[2] = { { .i = k + 1, .type = BS__P_INT }, { .i = keep, .type = BS__P_INT } };
		int rc = bs__shard_prep_sql(&res, &affected, &text, st, 0, q, p, 2);
		CHECK(rc == 0 && !text, "run %d of a DELETE ... RETURNING: %s", k, rc ? bs_last_error() : "");
		if (rc)
			continue;
		CHECK(keep ? res != NULL && mysql_stmt_num_rows(res) == 1 : res == NULL, "run %d answers %s", k,
		      keep ? "its row" : "no result set");
		bs__shard_prep_end(res);
	}
	CHECK(sql_int(0, "SELECT COUNT(*) FROM prep_t") == 1 && sql_int(0, "SELECT id FROM prep_t") == 2,
	      "the two rows kept deleted, the one proved empty left");
	sql(0, "DROP TABLE prep_t");
}

/* Servers that will not prepare, with an index: a put's text form
 * (START, the intent, the entity's fenced upsert, COMMIT). An overwrite
 * into a bucket that leaves its shard is refused by the foreign key at
 * the third statement (1452), and the full form writes it and logs it
 * for the move. */
static void text_leaving(void)
{
	long long keep[2];
	char q[200], hex[33];
	bs_store_t *st = NULL;
	bs_value_t bag;
	bs_id_t id;
	for (int i = 0; i < 2; i++) {
		keep[i] = sql_int(i, "SELECT @@GLOBAL.max_prepared_stmt_count");
		sql(i, "SET GLOBAL max_prepared_stmt_count=0");
	}
	bs_id_generate(&id);
	bs_id_hex(hex, &id);
	CHECK_OK(bs_store_open(&st, cfg));
	bag_of(&bag, &id, "text, owned");
	CHECK_OK(bs_put(st, &bag, NULL));
	bs_value_clear(&bag);
	bs_store_free(st);
	snprintf(q, sizeof q, "SELECT COUNT(*) FROM entities WHERE id=X'%s'", hex);
	int s = sql_int(0, q) == 1 ? 0 : 1, b = bs_route_id(&id, 4096);
	snprintf(q, sizeof q, "UPDATE bagstore_buckets SET state='leaving', move_id=8302 WHERE bucket=%d", b);
	sql(s, q);
	CHECK_OK(bs_store_open(&st, cfg));
	nrefused = 0;
	bs_store_trace(st, trace, NULL);
	long long ex0 = status(s, "Com_stmt_execute");
	bag_of(&bag, &id, "text, leaving");
	CHECK_OK(bs_put(st, &bag, NULL));
	bs_value_clear(&bag);
	bs_store_trace(st, NULL, NULL);
	CHECK(status(s, "Com_stmt_execute") == ex0, "as text, with an index: no prepared execution on the shard");
	CHECK(nrefused == 1, "as text, with an index: the overwrite into a leaving bucket refused by the fence (%d)",
	      nrefused);
	snprintf(q, sizeof q, "SELECT COUNT(*) FROM bagstore_move_log WHERE move_id=8302 AND kind=0 AND id=X'%s'", hex);
	CHECK(sql_int(s, q) == 1, "as text, with an index: and logged for the move by the full form");
	CHECK(holds(st, &id, "text, leaving", NULL), "as text, with an index: and written");
	bs_store_free(st);
	snprintf(q, sizeof q, "UPDATE bagstore_buckets SET state='owned', move_id=0 WHERE bucket=%d", b);
	sql(s, q);
	sql(s, "DELETE FROM bagstore_move_log");
	for (int i = 0; i < 2; i++) {
		snprintf(q, sizeof q, "SET GLOBAL max_prepared_stmt_count=%lld", keep[i]);
		sql(i, q);
	}
}

/* With an index: puts, overwrites and deletes through the prepared
 * intent and write; the index right after, no intent left. */
static void with_index(void)
{
	bs_store_t *st = NULL;
	bs_index_t def;
	bs_id_t ids[N];
	int shard[N];
	CHECK_OK(bs_store_open(&st, cfg));
	CHECK_OK(bs_index_parse(&def, "ix_title", "title:string(80)", "title"));
	CHECK_OK(bs_index_create(st, &def));
	bs_index_t mix;
	CHECK_OK(bs_index_parse(&mix, "ix_mix", "n:int,f:float,b:bool,t:string(20),x:binary(8)", "t"));
	CHECK_OK(bs_index_create(st, &mix));
	mixed_types(st);
	latin1_client();
	for (int k = 0; k < N; k++)
		bs_id_generate(&ids[k]);
	long long prep0 = both("Com_stmt_prepare"), exec0 = both("Com_stmt_execute");
	long long call0 = both("Com_call_procedure");
	round_trip(st, ids, shard, "indexed");
	long long prep1 = both("Com_stmt_prepare"), exec1 = both("Com_stmt_execute");
	long long call1 = both("Com_call_procedure");
	CHECK(prep1 - prep0 <= 12, "with an index: prepared %lld times (at most 6 kinds a shard)", prep1 - prep0);
	CHECK(exec1 - exec0 >= 2 * (N + N / 4) + N + N / 4,
	      "with an index: %lld prepared executions (each write two: the write procedure's CALL, its index row "
	      "on one shard; each get one)",
	      exec1 - exec0);
	CHECK(call1 - call0 == N + N / 4, "each write one CALL of a write procedure (the intent and the entity): %lld",
	      call1 - call0);
	CHECK(titled(st, "indexed") == N - N / 4, "the index finds the %d entities left, found %zu", N - N / 4,
	      titled(st, "indexed"));
	/* overwrites move every row to another value */
	for (int k = 1; k < N; k += 2) {
		bs_value_t bag;
		bag_of(&bag, &ids[k], "indexed again");
		CHECK_OK(bs_put(st, &bag, NULL));
		bs_value_clear(&bag);
	}
	CHECK(titled(st, "indexed again") == N / 2, "the index finds the %d overwritten, found %zu", N / 2,
	      titled(st, "indexed again"));
	/* the fence refuses a prepared write (every bucket of the shard made
	 * leaving by hand): the full form writes it; the next prepared writes
	 * on the same connection go on (a refused RETURNING statement once
	 * left the client library out of step: "Server has gone away") */
	int s = shard[1];
	char q[200];
	snprintf(q, sizeof q, "UPDATE bagstore_buckets SET state='leaving', move_id=7 WHERE state='owned'");
	sql(s, q);
	sql(s, "UPDATE bagstore_meta SET v=v+1 WHERE k='owned_version'");
	bs_value_t bag;
	bag_of(&bag, &ids[1], "refused");
	CHECK_OK(bs_put(st, &bag, NULL));
	bs_value_clear(&bag);
	CHECK(sql_int(s, "SELECT COUNT(*) FROM bagstore_move_log WHERE move_id=7") >= 1,
	      "the refused put went through the full form, logged for the move");
	sql(s, "UPDATE bagstore_buckets SET state='owned' WHERE state='leaving' AND move_id=7");
	sql(s, "UPDATE bagstore_meta SET v=v+1 WHERE k='owned_version'");
	sql(s, "DELETE FROM bagstore_move_log");
	for (int k = 0; k < 3; k++) {
		bag_of(&bag, &ids[1], "indexed again");
		CHECK_OK(bs_put(st, &bag, NULL));
		bs_value_clear(&bag);
	}
	CHECK(holds(st, &ids[1], "indexed again", NULL), "written again after the refusal");
	CHECK(titled(st, "indexed again") == N / 2 && titled(st, "refused") == 0,
	      "the index follows the refusal and the writes after it");
	long long rows = sql_int(0, "SELECT COUNT(*) FROM ix_title") + sql_int(1, "SELECT COUNT(*) FROM ix_title");
	CHECK(rows == N - N / 4, "%lld index rows for %d entities", rows, N - N / 4);
	/* a shard reconnected whose identity is wrong: a prepared index row
	 * checks it first, as every statement's connection does (once) */
	bs__shard_close(st, 1);
	sql(1, "UPDATE bagstore_meta SET v='impostor' WHERE k='shard_name'");
	int refused = 0, bad = 0;
	bs_id_t failed[8];
	for (int k = 0; k < 8; k++) {
		char t[32];
		bs_id_generate(&failed[refused + bad]);
		snprintf(t, sizeof t, "impostor %d", k);
		bag_of(&bag, &failed[refused + bad], t);
		int rc = bs_put(st, &bag, NULL);
		bs_value_clear(&bag);
		if (rc) {
			refused += strstr(bs_last_error(), "records that it is shard impostor") != NULL;
			bad += !strstr(bs_last_error(), "records that it is shard impostor");
		}
	}
	CHECK(refused > 0 && bad == 0, "writes touching the impostor refused, naming it (%d refused, %d otherwise)",
	      refused, bad);
	CHECK(sql_int(1, "SELECT COUNT(*) FROM ix_title WHERE title LIKE 'impostor%'") == 0,
	      "no index row written on the impostor");
	snprintf(q, sizeof q, "UPDATE bagstore_meta SET v='%s' WHERE k='shard_name'", cfg->shards[1].name);
	sql(1, q);
	bs__shard_close(st, 1);
	/* a refused put whose entity was written (on s0) keeps its intent
	 * for the repair loop; one refused at the entity wrote nothing */
	int written = 0;
	for (int k = 0; k < refused + bad; k++) {
		bs_value_t got;
		if (!bs_get(&got, st, &failed[k], NULL, NULL)) {
			written++;
			bs_value_clear(&got);
		}
	}
	text_leaving();
	CHECK_OK(bs_index_drop(st, "ix_title")); /* the rest of the test writes without one */
	CHECK_OK(bs_index_drop(st, "ix_mix"));
	bs_store_free(st); /* its last batch of intent removals */
	long long left = sql_int(0, "SELECT COUNT(*) FROM bagstore_intents") +
	                 sql_int(1, "SELECT COUNT(*) FROM bagstore_intents");
	CHECK(left == written,
	      "%lld intents left once the store is freed, %d wanted (the entities written whose rows "
	      "the impostor refused)",
	      left, written);
}

int main(void)
{
	if (test_config("prepared"))
		return 1;
	bs_store_t *st = NULL;
	bs_id_t ids[N];
	int shard[N];
	CHECK_OK(bs_store_open(&st, cfg));
	CHECK_OK(bs_init(st)); /* tests/run.sh reset the shards: no entity, no index */
	bs_store_free(st);
	with_index(); /* on the empty store: the index is ready at once */
	CHECK_OK(bs_store_open(&st, cfg));
	bs_store_trace(st, trace, NULL);
	for (int k = 0; k < N; k++)
		bs_id_generate(&ids[k]);

	/* prepared once per connection and kind, run for every call */
	long long prep0 = both("Com_stmt_prepare"), exec0 = both("Com_stmt_execute");
	round_trip(st, ids, shard, "prepared");
	long long prep1 = both("Com_stmt_prepare"), exec1 = both("Com_stmt_execute");
	CHECK(prep1 - prep0 <= 6, "prepared %lld times for %d puts, %d gets, %d deletes (at most 3 kinds a shard)",
	      prep1 - prep0, N, N + N / 4, N / 4);
	CHECK(exec1 - exec0 >= N + N + N / 4 + N / 4, "%lld prepared executions for %d calls", exec1 - exec0,
	      N + N + N / 4 + N / 4);
	int on0 = 0;
	for (int k = 0; k < N; k++)
		on0 += shard[k] == 0;
	CHECK(on0 > 0 && on0 < N, "the entities are on both shards (%d of %d on s0)", on0, N);

	/* the trace shows the text form, the values in place */
	char hex[33];
	int last = N - 1;
	bs_id_hex(hex, &ids[last]);
	ntraced = 0;
	CHECK(holds(st, &ids[last], "prepared", NULL), "the last entity is there");
	CHECK(ntraced == 1 && strstr(traced, hex) && !strchr(traced, '?') && strstr(traced, "WHERE o.bucket="),
	      "the get traced with its id and bucket: %s", traced);
	ntraced = 0;
	bs_value_t bag;
	bag_of(&bag, &ids[last], "prepared");
	CHECK_OK(bs_put(st, &bag, NULL));
	bs_value_clear(&bag);
	char bucket_lit[24]; /* the bucket, the statement's last value (4096 buckets for the test shards) */
	snprintf(bucket_lit, sizeof bucket_lit, ",%d)", bs_route_id(&ids[last], 4096));
	CHECK(ntraced == 1 && strstr(traced, hex) && !strchr(traced, '?') && strstr(traced, bucket_lit),
	      "the put traced with its id and bucket (%s): %s", bucket_lit, traced);

	/* a killed connection: a new one, prepared again */
	for (int s = 0; s < 2; s++)
		for (int k = 1; k < N; k++)
			if (k % 4 && shard[k] == s) {
				killed(st, &ids[k], "prepared", s);
				break;
			}

	/* a body far larger than any bound buffer, both ways */
	size_t big = 300000;
	char *title = malloc(big + 1);
	CHECK(title != NULL, "memory");
	if (title) {
		srand(7);
		for (size_t k = 0; k < big; k++)
			title[k] = (char)('a' + rand() % 26);
		title[big] = '\0';
		bag_of(&bag, &ids[1], title);
		CHECK_OK(bs_put(st, &bag, NULL));
		bs_value_clear(&bag);
		CHECK(holds(st, &ids[1], title, NULL), "a %zu-byte title read back whole", big);
		free(title);
	}
	ok_without_rows(st);
	bs_store_free(st);

	/* a server that will not prepare: the same statements as text */
	long long keep = sql_int(0, "SELECT @@GLOBAL.max_prepared_stmt_count");
	sql(0, "SET GLOBAL max_prepared_stmt_count=0");
	CHECK_OK(bs_store_open(&st, cfg));
	bs_id_t more[N];
	for (int k = 0; k < N; k++)
		bs_id_generate(&more[k]);
	long long ex0 = status(0, "Com_stmt_execute"), q0 = status(0, "Com_select");
	/* the first statement on each connection a get, then puts */
	int absent = 0;
	for (int k = 0; k < N; k++) {
		bs_value_t got;
		absent += bs_get(&got, st, &more[k], NULL, NULL) == BS_ENOTFOUND;
	}
	CHECK(absent == N, "as text: %d of %d entities not there yet", absent, N);
	round_trip(st, more, shard, "as text");
	long long ex1 = status(0, "Com_stmt_execute"), q1 = status(0, "Com_select");
	CHECK(ex1 == ex0, "no prepared execution on shard 0 (%lld)", ex1 - ex0);
	CHECK(q1 - q0 >= 1, "shard 0 answered the gets as text (%lld SELECTs)", q1 - q0);
	/* the text form's fence: an overwrite on shard 0 into a bucket that
	 * leaves it is refused by the foreign key (1452, the third of the
	 * text form's four statements) and written and logged by the full form */
	int k0 = 0;
	while (k0 < N - 1 && shard[k0] != 0)
		k0++;
	CHECK(shard[k0] == 0, "an entity on shard 0 (%d)", k0);
	char q[200], hex0[33];
	bs_id_hex(hex0, &more[k0]);
	snprintf(q, sizeof q, "UPDATE bagstore_buckets SET state='leaving', move_id=8301 WHERE bucket=%d",
	         bs_route_id(&more[k0], 4096));
	sql(0, q);
	nrefused = 0;
	bs_store_trace(st, trace, NULL);
	bag_of(&bag, &more[k0], "as text, leaving");
	CHECK_OK(bs_put(st, &bag, NULL));
	bs_value_clear(&bag);
	bs_store_trace(st, NULL, NULL);
	CHECK(nrefused == 1, "as text: the overwrite into a leaving bucket refused by the fence (%d)", nrefused);
	snprintf(q, sizeof q, "SELECT COUNT(*) FROM bagstore_move_log WHERE move_id=8301 AND kind=0 AND id=X'%s'",
	         hex0);
	CHECK(sql_int(0, q) == 1, "as text: and logged for the move by the full form");
	CHECK(holds(st, &more[k0], "as text, leaving", NULL), "as text: and written");
	snprintf(q, sizeof q, "UPDATE bagstore_buckets SET state='owned', move_id=0 WHERE bucket=%d",
	         bs_route_id(&more[k0], 4096));
	sql(0, q);
	sql(0, "DELETE FROM bagstore_move_log");
	bs_store_free(st);
	char restore[96];
	snprintf(restore, sizeof restore, "SET GLOBAL max_prepared_stmt_count=%lld", keep);
	sql(0, restore);
	CHECK(sql_int(0, "SELECT @@GLOBAL.max_prepared_stmt_count") == keep, "max_prepared_stmt_count put back");

	raw_close_all();
	bs_config_free(cfg);
	mysql_library_end();
	return t_done("prepared");
}

/*
 * test_route_text.c - routing and query text, with no server (make quick).
 *
 * Routing: bs_route_id and bs_route_value against arithmetic done here
 * independently (a 128-bit big-endian id mod n; integers by their
 * non-negative residue, so x and -x differ whenever n does not divide 2x;
 * strings and other bytes by zlib's crc32), over many values and shard
 * counts 1 to 7, 4096, a large prime and INT_MAX. Query text: bs_query_parse and
 * bs_query_parse_text against an in-memory catalog (index picked, values
 * read by type, quoting, and every refusal naming what was wrong). The
 * throttle's count of a statement's writes (bs__sql_writes, shard.c: what
 * the server's Com_ counters will count of it), compound blocks included.
 */
#include "bagstore.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static uint64_t rnd_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static const int counts[] = { 1, 2, 3, 4, 5, 6, 7, 4096, 1000003, 2147483647 };
#define NCOUNTS ((int)(sizeof counts / sizeof counts[0]))

static void test_route_id(void)
{
	for (int k = 0; k < 2000; k++) {
		bs_id_t id;
		unsigned __int128 x = 0;

		for (int i = 0; i < 16; i++) {
			id.b[i] = (uint8_t)rnd();
			x = (x << 8) | id.b[i];
		}
		if (k == 0) {
			memset(id.b, 0xff, 16);
			x = ~(unsigned __int128)0;
		}
		for (int c = 0; c < NCOUNTS; c++) {
			int want = (int)(x % (unsigned)counts[c]);
			int got = bs_route_id(&id, counts[c]);
			if (got != want) {
				CHECK(got == want, "id #%d mod %d: got %d, wanted %d", k, counts[c], got, want);
				return;
			}
		}
	}
	CHECK(1, "ids");
}

static void test_route_values(void)
{
	bs_prop_t p = { .name = "p" };
	int bad = 0;

	for (int k = 0; k < 2000 && !bad; k++) {
		int64_t i = (int64_t)rnd() >> (rnd() % 63);
		if (k == 1)
			i = INT64_MIN;
		bs_value_t v, neg;
		bs_value_int(&v, i);
		bs_value_int(&neg, i == INT64_MIN ? i : -i);
		for (int c = 0; c < NCOUNTS; c++) {
			int n = counts[c];
			int64_t r = i % n;
			int want = (int)(r < 0 ? r + n : r);
			if (bs_route_value(&v, &p, n) != want) {
				bad = 1;
				CHECK(0, "int %lld mod %d: got %d, wanted %d", (long long)i, n,
				      bs_route_value(&v, &p, n), want);
			}
			r = neg.v.i % n;
			want = (int)(r < 0 ? r + n : r);
			if (bs_route_value(&neg, &p, n) != want) {
				bad = 1;
				CHECK(0, "int %lld mod %d: got %d, wanted %d", (long long)neg.v.i, n,
				      bs_route_value(&neg, &p, n), want);
			}
		}
	}
	/* the residue, not the absolute value: -1 and 1 part with 3 shards */
	bs_value_t one, minus;
	bs_value_int(&one, 1);
	bs_value_int(&minus, -1);
	CHECK(bs_route_value(&one, &p, 3) == 1 && bs_route_value(&minus, &p, 3) == 2,
	      "1 and -1 over 3 shards: %d and %d, wanted 1 and 2", bs_route_value(&one, &p, 3),
	      bs_route_value(&minus, &p, 3));

	const char *strs[] = { "", "a", "title", "Zürich → Tōkyō", "0123456789abcdef" };
	for (size_t k = 0; k < sizeof strs / sizeof strs[0]; k++) {
		bs_value_t s, b;
		size_t len = strlen(strs[k]);
		CHECK_OK(bs_value_str(&s, strs[k], len));
		CHECK_OK(bs_value_bin(&b, strs[k], len));
		for (int c = 0; c < NCOUNTS; c++) {
			int want = (int)(crc32(0L, (const Bytef *)strs[k], (uInt)len) % (uLong)counts[c]);
			CHECK(bs_route_value(&s, &p, counts[c]) == want, "string \"%s\" mod %d", strs[k], counts[c]);
			if (len != 16)
				CHECK(bs_route_value(&b, &p, counts[c]) == want, "bytes \"%s\" mod %d", strs[k],
				      counts[c]);
		}
		bs_value_clear(&s);
		bs_value_clear(&b);
	}

	/* 16 bytes route as an id does */
	bs_id_t id;
	bs_value_t u;
	for (int i = 0; i < 16; i++)
		id.b[i] = (uint8_t)(0xf0 + i);
	CHECK_OK(bs_value_bin(&u, id.b, 16));
	for (int c = 0; c < NCOUNTS; c++)
		CHECK(bs_route_value(&u, &p, counts[c]) == bs_route_id(&id, counts[c]), "uuid mod %d", counts[c]);
	bs_value_clear(&u);

	bs_value_t t, f;
	bs_value_bool(&t, true);
	bs_value_bool(&f, false);
	CHECK(bs_route_value(&t, &p, 2) == 1 && bs_route_value(&f, &p, 2) == 0, "bools as 1 and 0");
}

/* ------------------------------------------------------------ query text */

static bs_index_list_t catalog;

static void add_index(const char *name, const char *on, const char *shard_on, bs_index_state_t state)
{
	bs_index_t *n = realloc(catalog.items, (size_t)(catalog.len + 1) * sizeof *n);
	if (!n)
		abort();
	catalog.items = n;
	memset(&n[catalog.len], 0, sizeof *n);
	CHECK_OK(bs_index_parse(&n[catalog.len], name, on, shard_on));
	n[catalog.len].state = state;
	catalog.len++;
}

static void test_query_parse(void)
{
	bs_query_spec_t q = { 0 };

	add_index("by_user", "user_id:uuid", "user_id", BS_INDEX_READY);
	add_index("by_user_title", "user_id:uuid,title:string(80)", "user_id", BS_INDEX_READY);
	add_index("by_likes", "likes:int", "likes", BS_INDEX_READY);
	add_index("by_score", "score:float,ok:bool", "score", BS_INDEX_READY);
	add_index("by_new", "fresh:string", "fresh", BS_INDEX_BUILDING);

	const char *t1[] = { "user_id=f48b0000-0000-4000-8000-000000000001" };
	CHECK_OK(bs_query_parse(&q, &catalog, NULL, t1, 1));
	CHECK_STR(q.index, "by_user");
	CHECK(q.nconds == 1 && q.conds[0].value.type == BS_BIN && q.conds[0].value.v.s.len == 16 &&
	              (uint8_t)q.conds[0].value.v.s.ptr[0] == 0xf4 && (uint8_t)q.conds[0].value.v.s.ptr[15] == 0x01,
	      "a dashed uuid reads as its 16 bytes");
	bs_query_spec_clear(&q);

	const char *t2[] = { "title=a b", "user_id=f48b00000000400080000000000000ff" };
	CHECK_OK(bs_query_parse(&q, &catalog, NULL, t2, 2));
	CHECK_STR(q.index, "by_user_title");
	bs_query_spec_clear(&q);

	const char *t3[] = { "likes=-42" };
	CHECK_OK(bs_query_parse(&q, &catalog, "by_likes", t3, 1));
	CHECK(q.nconds == 1 && q.conds[0].value.type == BS_INT && q.conds[0].value.v.i == -42, "an int");
	bs_query_spec_clear(&q);

	const char *t4[] = { "ok=true", "score=2.5" };
	CHECK_OK(bs_query_parse(&q, &catalog, NULL, t4, 2));
	CHECK(q.nconds == 2, "two conditions");
	for (int i = 0; i < q.nconds; i++) {
		if (!strcmp(q.conds[i].prop, "ok"))
			CHECK(q.conds[i].value.type == BS_BOOL && q.conds[i].value.v.b, "a bool");
		else
			CHECK(q.conds[i].value.type == BS_FLOAT && q.conds[i].value.v.f == 2.5, "a float");
	}
	bs_query_spec_clear(&q);

	/* refusals */
	const char *bad_int[] = { "likes=many" };
	CHECK_ERR(bs_query_parse(&q, &catalog, "by_likes", bad_int, 1), BS_EINVAL);
	CHECK(strstr(bs_last_error(), "likes") != NULL, "names the property: %s", bs_last_error());
	bs_query_spec_clear(&q);
	const char *twice[] = { "title=a", "title=b" };
	CHECK_ERR(bs_query_parse(&q, &catalog, "by_user_title", twice, 2), BS_EINVAL);
	CHECK(strstr(bs_last_error(), "twice") != NULL, "a property given twice: %s", bs_last_error());
	bs_query_spec_clear(&q);
	const char *other[] = { "title=x" };
	CHECK(bs_query_parse(&q, &catalog, "by_likes", other, 1) < 0, "a property the index lacks");
	CHECK(strstr(bs_last_error(), "title") != NULL, "names it: %s", bs_last_error());
	bs_query_spec_clear(&q);
	CHECK(bs_query_parse(&q, &catalog, "nosuch", t3, 1) < 0, "an unknown index");
	CHECK(strstr(bs_last_error(), "by_likes") != NULL, "names the indexes that exist: %s", bs_last_error());
	bs_query_spec_clear(&q);
	const char *building[] = { "fresh=x" };
	CHECK(bs_query_parse(&q, &catalog, NULL, building, 1) < 0, "only a building index holds it");
	bs_query_spec_clear(&q);
	const char *noeq[] = { "likes" };
	CHECK(bs_query_parse(&q, &catalog, "by_likes", noeq, 1) < 0, "no '='");
	bs_query_spec_clear(&q);
	const char *baduuid[] = { "user_id=f48b" };
	CHECK(bs_query_parse(&q, &catalog, "by_user", baduuid, 1) < 0, "a short uuid");
	bs_query_spec_clear(&q);
}

static void test_query_text(void)
{
	bs_query_spec_t q = { 0 };

	CHECK_OK(bs_query_parse_text(
		&q, &catalog, "by_user_title: title=\"a, \\\"b\\\" c\" user_id=f48b0000-0000-4000-8000-000000000001"));
	CHECK_STR(q.index, "by_user_title");
	CHECK(q.nconds == 2, "two conditions: %d", q.nconds);
	for (int i = 0; i < q.nconds; i++)
		if (!strcmp(q.conds[i].prop, "title"))
			CHECK(q.conds[i].value.type == BS_STR && q.conds[i].value.v.s.len == 8 &&
			              !memcmp(q.conds[i].value.v.s.ptr, "a, \"b\" c", 8),
			      "a quoted value keeps its comma, blanks and quotes");
	bs_query_spec_clear(&q);

	CHECK_OK(bs_query_parse_text(&q, &catalog, "likes=3"));
	CHECK_STR(q.index, "by_likes");
	bs_query_spec_clear(&q);
	CHECK_OK(bs_query_parse_text(&q, &catalog, "ok=false,score=1"));
	CHECK_STR(q.index, "by_score");
	CHECK(q.nconds == 2, "commas separate conditions");
	bs_query_spec_clear(&q);

	CHECK(bs_query_parse_text(&q, &catalog, "") < 0, "empty text");
	bs_query_spec_clear(&q);
	CHECK(bs_query_parse_text(&q, &catalog, "title=\"unclosed") < 0, "an unclosed quote");
	bs_query_spec_clear(&q);
	CHECK(bs_query_parse_text(&q, &catalog, "nosuch: likes=1") < 0, "an unknown index");
	bs_query_spec_clear(&q);
	bs_index_list_free(&catalog);
}

/* shard.c's own (internal.h): the data-changing statements in sql */
uint64_t bs__sql_writes(const char *sql, size_t len);

static void test_sql_writes(void)
{
	static const struct {
		const char *sql;
		unsigned long want;
	} c[] = {
		{ "INSERT INTO t VALUES (1)", 1 },
		{ "  /* c */ insert into t values (1)", 1 },
		{ "SELECT 1", 0 },
		{ "INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a=1", 1 },
		{ "START TRANSACTION; SELECT 1 FOR UPDATE; INSERT INTO a VALUES (1); DELETE FROM b WHERE x=';'; COMMIT",
		  2 },
		{ "BEGIN NOT ATOMIC IF @bs_o=@bs_want THEN INSERT INTO entities VALUES (X'00'); "
		  "INSERT INTO i VALUES (1); END IF; END",
		  2 },
		{ "SELECT 1; BEGIN NOT ATOMIC IF @x=1 THEN UPDATE t SET a='INSERT;'; ELSE DELETE FROM t; END IF; END",
		  2 },
		{ "INSERTS INTO x", 0 },
		{ "SELECT 'a;b'; REPLACE INTO t VALUES (1)", 1 },
		{ "", 0 },
		{ "DO RELEASE_LOCK('x'); SELECT `INSERT`; -- INSERT\nSELECT 1", 0 },
		/* the statement after SET STATEMENT's FOR is the one counted */
		{ "SET STATEMENT innodb_lock_wait_timeout=1 FOR DELETE i FROM t i JOIN u ON 1", 1 },
		{ "SET STATEMENT innodb_lock_wait_timeout=1 FOR DELETE FROM t;DO RELEASE_LOCK('x')", 1 },
		{ "SET STATEMENT max_statement_time=5 FOR SELECT 1 FOR UPDATE", 0 },
		{ "SET @a=1; DELETE FROM t", 1 },
		{ "SET @bs_own=0;START TRANSACTION;SELECT 1 FOR UPDATE;COMMIT", 0 },
	};
	for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
		unsigned long got = (unsigned long)bs__sql_writes(c[k].sql, strlen(c[k].sql));
		CHECK(got == c[k].want, "bs__sql_writes(%s): %lu, want %lu", c[k].sql, got, c[k].want);
	}
}

int main(void)
{
	test_sql_writes();
	test_route_id();
	test_route_values();
	test_query_parse();
	test_query_text();
	return t_done("route_text");
}

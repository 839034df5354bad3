/*
 * test_codec.c - values, ids, MessagePack, bodies, JSON and YAML: round
 * trips, limits and every broken-body fixture in tests/fixtures/bodies.
 */
#include "bagstore.h"
#include "codec_internal.h"
#include "t.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define SEED_JSON \
	"{\"id\":{\"$uuid\":\"71f0c4d2-2918-44cc-a2df-6f486e96e37c\"}," \
	"\"user_id\":{\"$uuid\":\"f48b0440-ca0c-4f66-991c-4d5f6a078eaf\"}," \
	"\"title\":\"We just launched a new backend system for FriendFeed!\"," \
	"\"link\":\"http://friendfeed.com/e/71f0c4d2-2918-44cc-a2df-6f486e96e37c\"," \
	"\"published\":1235697046,\"updated\":1235697046}"

static const uint8_t ID1[16] = { 0x71, 0xf0, 0xc4, 0xd2, 0x29, 0x18, 0x44, 0xcc,
	                         0xa2, 0xdf, 0x6f, 0x48, 0x6e, 0x96, 0xe3, 0x7c };

static bool has(const char *hay, const char *needle)
{
	return hay && strstr(hay, needle) != NULL;
}

static void set_str(bs_value_t *map, const char *key, const char *s)
{
	bs_value_t v;

	bs_value_str(&v, s, strlen(s));
	bs_map_set(map, key, strlen(key), &v);
}

static void set_int(bs_value_t *map, const char *key, int64_t i)
{
	bs_value_t v;

	bs_value_int(&v, i);
	bs_map_set(map, key, strlen(key), &v);
}

static void set_id(bs_value_t *map)
{
	bs_value_t v;

	bs_value_bin(&v, ID1, 16);
	bs_map_set(map, "id", 2, &v);
}

/* ------------------------------------------------------------ values */

static void test_values(void)
{
	bs_value_t m, a, v, c;
	const bs_value_t *g;

	bs_value_map(&m);
	set_str(&m, "a", "x");
	set_int(&m, "b", 2);
	set_int(&m, "a", 3); /* replaces in place */
	CHECK(m.v.m.len == 2, "len %zu", m.v.m.len);
	CHECK(strcmp(m.v.m.items[0].key, "a") == 0, "order kept");
	g = bs_map_get(&m, "a");
	CHECK(g && g->type == BS_INT && g->v.i == 3, "map_get a");
	CHECK(bs_map_get(&m, "zz") == NULL, "absent key");

	bs_value_array(&a);
	for (int i = 0; i < 100; i++) {
		bs_value_int(&v, i);
		CHECK_OK(bs_array_push(&a, &v));
		CHECK(v.type == BS_NIL, "item left NIL");
	}
	CHECK(a.v.a.len == 100 && a.v.a.items[99].v.i == 99, "array");
	CHECK_OK(bs_map_set(&m, "arr", 3, &a));
	CHECK(a.type == BS_NIL, "moved");
	CHECK(bs_map_get(&m, "x") == NULL, "x");
	bs_value_int(&v, 1);
	CHECK_ERR(bs_array_push(&m, &v), BS_EINVAL);

	CHECK_OK(bs_value_copy(&c, &m));
	CHECK(bs_value_equal(&c, &m), "copy equal");
	set_int(&c, "b", 5);
	CHECK(!bs_value_equal(&c, &m), "changed copy differs");
	bs_value_clear(&c);
	CHECK(c.type == BS_NIL, "cleared");
	bs_value_clear(&m);
	bs_value_clear(NULL);

	/* Type-sensitive, floats bitwise, NaN equals NaN. */
	{
		bs_value_t i1, f1, n1, n2, z1, z2, s1, b1;

		bs_value_int(&i1, 1);
		bs_value_float(&f1, 1.0);
		CHECK(!bs_value_equal(&i1, &f1), "INT 1 != FLOAT 1.0");
		bs_value_float(&n1, NAN);
		bs_value_float(&n2, -NAN);
		CHECK(bs_value_equal(&n1, &n2), "NaN == NaN");
		bs_value_float(&z1, 0.0);
		bs_value_float(&z2, -0.0);
		CHECK(!bs_value_equal(&z1, &z2), "0.0 != -0.0");
		bs_value_str(&s1, "ab", 2);
		bs_value_bin(&b1, "ab", 2);
		CHECK(!bs_value_equal(&s1, &b1), "STR != BIN");
		CHECK(s1.v.s.ptr[2] == '\0', "NUL-terminated");
		bs_value_clear(&s1);
		bs_value_clear(&b1);
	}
	/* Maps compare as maps: same pairs in another order are equal. */
	{
		bs_value_t m1, m2;

		bs_value_map(&m1);
		bs_value_map(&m2);
		set_int(&m1, "a", 1);
		set_int(&m1, "b", 2);
		set_int(&m2, "b", 2);
		set_int(&m2, "a", 1);
		CHECK(bs_value_equal(&m1, &m2), "key order does not matter to equality");
		set_int(&m2, "a", 9);
		CHECK(!bs_value_equal(&m1, &m2), "values differ");
		bs_value_clear(&m1);
		bs_value_clear(&m2);
	}
}

/* ------------------------------------------------------------ ids */

static void test_ids(void)
{
	bs_id_t id, id2;
	char hex[33], dashed[37];
	bs_value_t bag, v;

	CHECK_OK(bs_id_parse(&id, "71f0c4d2-2918-44cc-a2df-6f486e96e37c"));
	CHECK(memcmp(id.b, ID1, 16) == 0, "dashed parse");
	CHECK_OK(bs_id_parse(&id2, "71F0C4D2291844CCA2DF6F486E96E37C"));
	CHECK(memcmp(id2.b, ID1, 16) == 0, "upper hex parse");
	bs_id_hex(hex, &id);
	CHECK_STR(hex, "71f0c4d2291844cca2df6f486e96e37c");
	bs_id_dashed(dashed, &id);
	CHECK_STR(dashed, "71f0c4d2-2918-44cc-a2df-6f486e96e37c");

	CHECK_ERR(bs_id_parse(&id, "xyz"), BS_EINVAL);
	CHECK_STR(bs_last_error(), "malformed id \"xyz\": expected 32 hex digits or the dashed UUID form");
	CHECK_ERR(bs_id_parse(&id, ""), BS_EINVAL);
	CHECK_ERR(bs_id_parse(&id, NULL), BS_EINVAL);
	CHECK_ERR(bs_id_parse(&id, "71f0c4d2291844cca2df6f486e96e37"), BS_EINVAL);   /* 31 */
	CHECK_ERR(bs_id_parse(&id, "71f0c4d2291844cca2df6f486e96e37cc"), BS_EINVAL); /* 33 */
	CHECK_ERR(bs_id_parse(&id, "71f0c4d2291844cca2df6f486e96e37g"), BS_EINVAL);
	CHECK_ERR(bs_id_parse(&id, "71f0c4d22918-44cc-a2df-6f486e96e37c-"), BS_EINVAL);
	CHECK_ERR(bs_id_parse(&id, "71f0c4d2-2918-44cc-a2df-6f486e96e37 "), BS_EINVAL);
	CHECK_ERR(bs_id_parse(&id, " 71f0c4d2291844cca2df6f486e96e37c"), BS_EINVAL);
	CHECK_ERR(bs_id_parse(&id, "{71f0c4d2-2918-44cc-a2df-6f486e96e37c}"), BS_EINVAL);
	CHECK(has(bs_last_error(), "\"{71f0c4d2"), "quotes input: %s", bs_last_error());
	CHECK_ERR(bs_id_parse(&id, "bad\nid\x01"), BS_EINVAL);
	CHECK(has(bs_last_error(), "\"bad\\nid\\x01\""), "escapes input: %s", bs_last_error());

	bs_id_generate(&id);
	bs_id_generate(&id2);
	CHECK(memcmp(id.b, id2.b, 16) != 0, "two ids differ");
	CHECK((id.b[6] >> 4) == 4 && (id.b[8] & 0xc0) == 0x80, "version 4 id");

	bs_value_map(&bag);
	CHECK_ERR(bs_bag_id(&id, &bag), BS_EINVAL);
	CHECK(has(bs_last_error(), "body has no \"id\""), "%s", bs_last_error());
	set_str(&bag, "id", "71f0c4d2-2918-44cc-a2df-6f486e96e37c");
	CHECK_ERR(bs_bag_id(&id, &bag), BS_EINVAL);
	bs_value_bin(&v, ID1, 16);
	bs_map_set(&bag, "id", 2, &v);
	CHECK_OK(bs_bag_id(&id, &bag));
	CHECK(memcmp(id.b, ID1, 16) == 0, "bag id");
	bs_value_clear(&bag);
	bs_value_int(&bag, 3);
	CHECK_ERR(bs_bag_id(&id, &bag), BS_EINVAL);
}

/* ------------------------------------------------------------ seed entity */

static void test_seed_round_trip(void)
{
	bs_value_t v, v2;
	bs_bytes_t body = { 0 };
	char *json = NULL, *pretty = NULL;
	const bs_value_t *id;

	CHECK_OK(bs_json_decode(&v, SEED_JSON, strlen(SEED_JSON), "seed"));
	id = bs_map_get(&v, "id");
	CHECK(id && id->type == BS_BIN && id->v.s.len == 16 && memcmp(id->v.s.ptr, ID1, 16) == 0, "id");
	CHECK(bs_map_get(&v, "published") && bs_map_get(&v, "published")->type == BS_INT, "int");
	CHECK_OK(bs_body_encode(&body, &v));
	CHECK(body.len > 0 && body.len < 256, "body %zu bytes", body.len);
	CHECK_OK(bs_body_decode(&v2, body.ptr, body.len));
	CHECK(bs_value_equal(&v, &v2), "body round trip");
	CHECK_OK(bs_json_encode(&json, &v2, 0));
	CHECK_STR(json, SEED_JSON);
	/* Key order survives. */
	CHECK(v2.v.m.len == 6 && strcmp(v2.v.m.items[2].key, "title") == 0, "order");

	CHECK_OK(bs_json_encode(&pretty, &v2, BS_JSON_PRETTY));
	CHECK(has(pretty, "{\n  \"id\": {\n    \"$uuid\": \"71f0c4d2-2918-44cc-a2df-6f486e96e37c\"\n  },"),
	      "pretty: %s", pretty);
	free(pretty);
	pretty = NULL;

	/* And through YAML. */
	CHECK_OK(bs_yaml_encode(&pretty, &v2));
	CHECK(has(pretty, "id: !uuid 71f0c4d2-2918-44cc-a2df-6f486e96e37c\n"), "yaml: %s", pretty);
	CHECK(has(pretty, "title: We just launched a new backend system for FriendFeed!\n"), "yaml: %s", pretty);
	CHECK(has(pretty, "published: 1235697046\n"), "yaml: %s", pretty);
	bs_value_clear(&v2);
	CHECK_OK(bs_yaml_decode(&v2, pretty, strlen(pretty), "seed.yaml"));
	CHECK(bs_value_equal(&v, &v2), "yaml round trip");
	free(json);
	json = NULL;
	CHECK_OK(bs_json_encode(&json, &v2, 0));
	CHECK_STR(json, SEED_JSON);

	free(json);
	free(pretty);
	bs_bytes_free(&body);
	bs_value_clear(&v);
	bs_value_clear(&v2);
}

/* ------------------------------------------------------------ msgpack */

static void check_mp(const bs_value_t *v, const char *hex)
{
	bs_bytes_t b = { 0 };
	char got[256] = "";
	bs_value_t back;

	CHECK_OK(bs_msgpack_encode(&b, v));
	for (size_t i = 0; i < b.len && i < 100; i++)
		sprintf(got + 2 * i, "%02x", b.ptr[i]);
	CHECK_STR(got, hex);
	CHECK_OK(bs_msgpack_decode(&back, b.ptr, b.len));
	CHECK(bs_value_equal(v, &back), "msgpack round trip of %s", hex);
	bs_value_clear(&back);
	bs_bytes_free(&b);
}

static void test_msgpack(void)
{
	bs_value_t v, m;
	char s40[41];

	bs_value_nil(&v);
	check_mp(&v, "c0");
	bs_value_bool(&v, true);
	check_mp(&v, "c3");
	bs_value_int(&v, 1);
	check_mp(&v, "01");
	bs_value_int(&v, -1);
	check_mp(&v, "ff");
	bs_value_int(&v, 200);
	check_mp(&v, "ccc8");
	bs_value_int(&v, -200);
	check_mp(&v, "d1ff38");
	bs_value_int(&v, INT64_MAX);
	check_mp(&v, "cf7fffffffffffffff");
	bs_value_int(&v, INT64_MIN);
	check_mp(&v, "d38000000000000000");
	v.type = BS_UINT;
	v.v.u = UINT64_MAX;
	check_mp(&v, "cfffffffffffffffff");
	bs_value_float(&v, 1.5);
	check_mp(&v, "cb3ff8000000000000");
	bs_value_str(&v, "hi", 2);
	check_mp(&v, "a26869");
	bs_value_clear(&v);
	memset(s40, 'a', 40);
	bs_value_str(&v, s40, 40);
	check_mp(&v,
	         "d928" /* str8 */ "61616161616161616161616161616161616161616161616161616161616161616161616161616161");
	bs_value_clear(&v);
	bs_value_bin(&v, "\x01\x02", 2);
	check_mp(&v, "c4020102");
	bs_value_clear(&v);
	bs_value_map(&m);
	set_int(&m, "a", 1);
	check_mp(&m, "81a16101");
	bs_value_clear(&m);

	/* Decoding: every integer width, float32, and UINT only above INT64_MAX. */
	{
		static const struct {
			const char *bytes;
			size_t n;
			bs_type_t t;
			int64_t i;
		} ints[] = {
			{ "\xcc\xff", 2, BS_INT, 255 },
			{ "\xcd\xff\xff", 3, BS_INT, 65535 },
			{ "\xce\xff\xff\xff\xff", 5, BS_INT, 4294967295LL },
			{ "\xcf\x00\x00\x00\x00\x00\x00\x00\x05", 9, BS_INT, 5 },
			{ "\xd0\x80", 2, BS_INT, -128 },
			{ "\xd1\x80\x00", 3, BS_INT, -32768 },
			{ "\xd2\x80\x00\x00\x00", 5, BS_INT, INT32_MIN },
			{ "\xe0", 1, BS_INT, -32 },
		};
		for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
			CHECK_OK(bs_msgpack_decode(&v, (const uint8_t *)ints[i].bytes, ints[i].n));
			CHECK(v.type == ints[i].t && v.v.i == ints[i].i, "int %zu: %lld", i, (long long)v.v.i);
		}
		CHECK_OK(bs_msgpack_decode(&v, (const uint8_t *)"\xcf\x80\x00\x00\x00\x00\x00\x00\x00", 9));
		CHECK(v.type == BS_UINT && v.v.u == (uint64_t)INT64_MAX + 1, "uint");
		CHECK_OK(bs_msgpack_decode(&v, (const uint8_t *)"\xca\x3f\xc0\x00\x00", 5));
		CHECK(v.type == BS_FLOAT && v.v.f == 1.5, "float32");
	}

	/* Errors. */
	CHECK_ERR(bs_msgpack_decode(&v, (const uint8_t *)"", 0), BS_ECORRUPT);
	CHECK_ERR(bs_msgpack_decode(&v, (const uint8_t *)"\xdd\x80\x00\x00\x00", 5), BS_ECORRUPT);
	CHECK(has(bs_last_error(), "2147483648 items"), "%s", bs_last_error());
	CHECK_ERR(bs_msgpack_decode(&v, (const uint8_t *)"\x81\x01\x02", 3), BS_ECORRUPT);
	CHECK(has(bs_last_error(), "not a string"), "%s", bs_last_error());
	CHECK_ERR(bs_msgpack_decode(&v, (const uint8_t *)"\xd4\x01\x02", 3), BS_ECORRUPT);
	CHECK(has(bs_last_error(), "unsupported msgpack ext type"), "%s", bs_last_error());
	CHECK_ERR(bs_msgpack_decode(&v, (const uint8_t *)"\xc0\xc0", 2), BS_ECORRUPT);
	CHECK(has(bs_last_error(), "trailing"), "%s", bs_last_error());
	CHECK_ERR(bs_msgpack_decode(&v,
	                            (const uint8_t *)"\x82\xa1"
	                                             "a\x01\xa1"
	                                             "a\x02",
	                            7),
	          BS_ECORRUPT);
	CHECK(has(bs_last_error(), "duplicate key \"a\""), "%s", bs_last_error());
	CHECK_ERR(bs_msgpack_decode(&v, (const uint8_t *)"\xa2\xff\xfe", 3), BS_ECORRUPT);
	CHECK_ERR(bs_msgpack_decode(&v, (const uint8_t *)"\xcb\x00", 2), BS_ECORRUPT);
	CHECK(v.type == BS_NIL, "out left NIL on error");

	/* Depth: 32 nested arrays decode, 33 do not; a wide map of many keys
	 * (duplicate check through the hash index) decodes. */
	{
		uint8_t buf[40];

		memset(buf, 0x91, 31);
		buf[31] = 0x90;
		CHECK_OK(bs_msgpack_decode(&v, buf, 32));
		bs_bytes_t b = { 0 };
		CHECK_OK(bs_msgpack_encode(&b, &v));
		CHECK(b.len == 32 && memcmp(b.ptr, buf, 32) == 0, "32 deep re-encodes");
		bs_bytes_free(&b);
		bs_value_clear(&v);
		memset(buf, 0x91, 32);
		buf[32] = 0x90;
		CHECK_ERR(bs_msgpack_decode(&v, buf, 33), BS_ECORRUPT);
		CHECK(has(bs_last_error(), "deeper than 32"), "%s", bs_last_error());
	}
	{
		bs_value_t big, back;
		bs_bytes_t b = { 0 };
		char key[16];

		bs_value_map(&big);
		for (int i = 0; i < 5000; i++) {
			snprintf(key, sizeof key, "k%d", i);
			set_int(&big, key, i);
		}
		CHECK_OK(bs_msgpack_encode(&b, &big));
		CHECK_OK(bs_msgpack_decode(&back, b.ptr, b.len));
		CHECK(bs_value_equal(&big, &back), "big map");
		bs_value_clear(&back);
		/* Rename the last key to an early one: a duplicate far apart. */
		bs_bytes_free(&b);
		set_int(&big, "k4999", 1);
		CHECK_OK(bs_msgpack_encode(&b, &big));
		size_t n = b.len;
		CHECK(b.ptr[n - 7] == 0xa5 && b.ptr[n - 1] == 0x01, "layout");
		memcpy(b.ptr + n - 6, "k1000", 5);
		CHECK_ERR(bs_msgpack_decode(&back, b.ptr, b.len), BS_ECORRUPT);
		CHECK(has(bs_last_error(), "duplicate key \"k1000\""), "%s", bs_last_error());
		bs_bytes_free(&b);
		bs_value_clear(&big);
	}

	/* Encode refuses what decode would refuse. */
	{
		bs_value_t s;
		bs_bytes_t b = { 0 };

		bs_value_str(&s, "\xff", 1);
		CHECK_ERR(bs_msgpack_encode(&b, &s), BS_EINVAL);
		CHECK(b.ptr == NULL, "nothing returned");
		bs_value_clear(&s);
	}
}

/* ------------------------------------------------------------ bodies */

static char fixture_dir[512];

static void find_fixtures(void)
{
	const char *env = getenv("BAGSTORE_FIXTURES");
	const char *f = __FILE__, *cut = strstr(f, "unit/test_codec.c");

	if (env)
		snprintf(fixture_dir, sizeof fixture_dir, "%s/bodies", env);
	else if (cut)
		snprintf(fixture_dir, sizeof fixture_dir, "%.*sfixtures/bodies", (int)(cut - f), f);
	else
		snprintf(fixture_dir, sizeof fixture_dir, "tests/fixtures/bodies");
}

static uint8_t *read_fixture(const char *name, size_t *len)
{
	char path[768];
	uint8_t *buf = NULL;
	FILE *f;
	long n;

	snprintf(path, sizeof path, "%s/%s", fixture_dir, name);
	if (!(f = fopen(path, "rb")))
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

static void test_body_fixtures(void)
{
	/* Prefixes of every fixture but trailing_garbage.z are corrupt too. */
	static const struct {
		const char *file;
		int code;
		const char *msg;
	} cases[] = {
		{ "ok_minimal.z", 0, "" },
		{ "truncated.z", BS_ECORRUPT, "truncated zlib stream" },
		{ "trailing_garbage.z", BS_ECORRUPT, "trailing bytes after the zlib stream" },
		{ "empty.z", BS_ECORRUPT, "empty body" },
		{ "bad_header.z", BS_ECORRUPT, "incorrect header check" },
		{ "missing_id.z", BS_ECORRUPT, "body has no 16-byte \"id\"" },
		{ "id_15_bytes.z", BS_ECORRUPT, "body has no 16-byte \"id\"" },
		{ "id_is_string.z", BS_ECORRUPT, "body has no 16-byte \"id\"" },
		{ "int_key.z", BS_ECORRUPT, "is int, not a string" },
		{ "dup_key.z", BS_ECORRUPT, "duplicate key" },
		{ "nested_33.z", BS_ECORRUPT, "nested deeper than 32" },
		{ "huge_array_count.z", BS_ECORRUPT, "2147483647 items" },
		{ "huge_map_count.z", BS_ECORRUPT, "4294967295 pairs" },
		{ "huge_str_len.z", BS_ECORRUPT, "truncated" },
		{ "ext_type.z", BS_ECORRUPT, "unsupported msgpack ext type" },
		{ "msgpack_trailing.z", BS_ECORRUPT, "trailing bytes after the msgpack value" },
		{ "msgpack_truncated.z", BS_ECORRUPT, "truncated" },
		{ "not_a_map.z", BS_ECORRUPT, "not a map" },
		{ "bad_utf8.z", BS_ECORRUPT, "not valid UTF-8" },
		{ "invalid_c1.z", BS_ECORRUPT, "0xc1" },
		{ "empty_stream.z", BS_ECORRUPT, "empty msgpack" },
		{ "random.bin", BS_ECORRUPT, "" },
	};

	find_fixtures();
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t len = 0;
		uint8_t *data = read_fixture(cases[i].file, &len);
		bs_value_t v;
		int rc;

		CHECK(data != NULL, "fixture %s/%s missing", fixture_dir, cases[i].file);
		if (!data)
			continue;
		bs_error_clear();
		rc = bs_body_decode(&v, data, len);
		CHECK(rc == cases[i].code, "%s: rc %d, wanted %d (%s)", cases[i].file, rc, cases[i].code,
		      bs_last_error());
		CHECK(has(bs_last_error(), cases[i].msg), "%s: message \"%s\" lacks \"%s\"", cases[i].file,
		      bs_last_error(), cases[i].msg);
		CHECK(rc == 0 || v.type == BS_NIL, "%s: out NIL on error", cases[i].file);
		bs_value_clear(&v);
		/* Every prefix of every fixture is an error, never a crash. */
		for (size_t n = 0; n < len; n++) {
			if (strcmp(cases[i].file, "trailing_garbage.z") == 0 && n + 7 >= len)
				break;
			rc = bs_body_decode(&v, data, n);
			CHECK(rc == BS_ECORRUPT, "%s[:%zu]: rc %d", cases[i].file, n, rc);
			bs_value_clear(&v);
		}
		free(data);
	}
}

/* msgpack of {"id": <16 bytes>, "x": <bin of n bytes>} compressed. */
static uint8_t *bin_body(size_t n, size_t *zlen, size_t *mplen)
{
	size_t hdr = 1 + 3 + 18 + 2 + 5;
	uint8_t *mp = calloc(1, hdr + n), *z;
	uLongf zl;

	memcpy(mp, "\x82\xa2id\xc4\x10", 6);
	memcpy(mp + 6, ID1, 16);
	memcpy(mp + 22, "\xa1x\xc6", 3);
	mp[25] = (uint8_t)(n >> 24);
	mp[26] = (uint8_t)(n >> 16);
	mp[27] = (uint8_t)(n >> 8);
	mp[28] = (uint8_t)n;
	*mplen = hdr + n;
	zl = compressBound(hdr + n);
	z = malloc(zl);
	compress2(z, &zl, mp, hdr + n, 9);
	free(mp);
	*zlen = zl;
	return z;
}

/* v's body (into body) and MessagePack (into mp, emptied first): zlib
 * itself inflates the body to the MessagePack, and the body decodes to v
 * (each checked, named by what). */
static void body_of(bs_bytes_t *body, bs_bytes_t *mp, const bs_value_t *v, const char *what)
{
	uint8_t back[4096];
	uLongf blen = sizeof back;
	bs_value_t v2;
	mp->len = 0;
	CHECK_OK(bs__msgpack_append(mp, v));
	CHECK_OK(bs_body_encode(body, v));
	bool ok = uncompress(back, &blen, body->ptr, body->len) == Z_OK && blen == mp->len &&
	          !memcmp(back, mp->ptr, mp->len);
	CHECK(ok, "%s: zlib inflates it to the MessagePack", what);
	CHECK_OK(bs_body_decode(&v2, body->ptr, body->len));
	CHECK(bs_value_equal(v, &v2), "%s: it decodes to the bag", what);
	bs_value_clear(&v2);
}

/* A small body is a zlib stream of one stored block, a larger one
 * deflated: both are zlib that zlib itself inflates to the MessagePack. */
static void test_body_stored(void)
{
	bs_value_t v, v2, s;
	bs_bytes_t body = { 0 }, mp = { 0 };
	char pad[600];

	CHECK_OK(bs_json_decode(&v, SEED_JSON, strlen(SEED_JSON), "seed"));
	body_of(&body, &mp, &v, "a small body");
	CHECK(mp.len < 256, "the seed's MessagePack is small (%zu bytes)", mp.len);
	CHECK(body.len == mp.len + 11, "a small body: its MessagePack and 11 bytes of framing (%zu, %zu)", body.len,
	      mp.len);
	CHECK(body.len > 3 && body.ptr[0] == 0x78 && body.ptr[1] == 0x01 && body.ptr[2] == 0x01,
	      "a zlib header, then one final stored block");
	body.ptr[body.len - 1] ^= 1;
	CHECK(bs_body_decode(&v2, body.ptr, body.len) < 0, "a stored body with a wrong checksum is refused");
	bs_bytes_free(&body);

	memset(pad, 'a', sizeof pad - 1);
	pad[sizeof pad - 1] = '\0';
	bs_value_str(&s, pad, strlen(pad));
	bs_map_set(&v, "pad", 3, &s);
	body_of(&body, &mp, &v, "a larger body");
	CHECK(body.len < mp.len / 2, "a larger body is deflated (%zu bytes of %zu)", body.len, mp.len);
	bs_bytes_free(&body);
	bs_bytes_free(&mp);
	bs_value_clear(&v);
}

static void test_body_limits(void)
{
	size_t zlen, mplen;
	uint8_t *z;
	bs_value_t v, bag;
	bs_bytes_t b = { 0 };

	/* A bomb: 40 KB that inflates past 16 MiB. */
	z = bin_body(BS_BODY_MAX_INFLATED, &zlen, &mplen);
	CHECK(zlen < 100000, "bomb is small: %zu", zlen);
	CHECK_ERR(bs_body_decode(&v, z, zlen), BS_ECORRUPT);
	CHECK(has(bs_last_error(), "body inflates past 16 MiB"), "%s", bs_last_error());
	free(z);

	/* Exactly at the limit decodes. */
	z = bin_body(BS_BODY_MAX_INFLATED - 29, &zlen, &mplen);
	CHECK(mplen == BS_BODY_MAX_INFLATED, "mplen %zu", mplen);
	CHECK_OK(bs_body_decode(&v, z, zlen));
	CHECK(bs_map_get(&v, "x") && bs_map_get(&v, "x")->v.s.len == BS_BODY_MAX_INFLATED - 29, "x");
	/* And encode agrees about the limit. */
	CHECK_OK(bs_body_encode(&b, &v));
	bs_bytes_free(&b);
	free(v.v.m.items[1].val.v.s.ptr);
	v.v.m.items[1].val.v.s.ptr = calloc(1, BS_BODY_MAX_INFLATED - 27);
	v.v.m.items[1].val.v.s.len = BS_BODY_MAX_INFLATED - 28;
	CHECK_ERR(bs_body_encode(&b, &v), BS_EINVAL);
	CHECK(b.ptr == NULL, "no output");
	bs_value_clear(&v);
	free(z);

	/* Still works after a big one (buffer was released). */
	bs_value_map(&bag);
	set_id(&bag);
	set_str(&bag, "t", "x");
	CHECK_OK(bs_body_encode(&b, &bag));
	CHECK_OK(bs_body_decode(&v, b.ptr, b.len));
	CHECK(bs_value_equal(&v, &bag), "small after big");
	bs_value_clear(&v);
	bs_bytes_free(&b);

	/* Encode refuses bags without a proper id. */
	bs_value_clear(&bag);
	bs_value_map(&bag);
	set_str(&bag, "t", "x");
	CHECK_ERR(bs_body_encode(&b, &bag), BS_EINVAL);
	CHECK(has(bs_last_error(), "body has no \"id\""), "%s", bs_last_error());
	set_str(&bag, "id", "71f0c4d2-2918-44cc-a2df-6f486e96e37c");
	CHECK_ERR(bs_body_encode(&b, &bag), BS_EINVAL);
	bs_value_clear(&bag);
	bs_value_array(&bag);
	CHECK_ERR(bs_body_encode(&b, &bag), BS_EINVAL);
	CHECK_ERR(bs_body_decode(&v, NULL, 0), BS_ECORRUPT);

	/* Random bytes and random damage to a good body: errors, never crashes. */
	{
		uint32_t seed = 12345;
		uint8_t buf[256];
		int ok = 0, bad = 0;

		bs_value_clear(&bag);
		bs_value_map(&bag);
		set_id(&bag);
		set_str(&bag, "title", "We just launched a new backend system for FriendFeed!");
		set_int(&bag, "n", 1235697046);
		CHECK_OK(bs_body_encode(&b, &bag));
		for (int i = 0; i < 20000; i++) {
			size_t n;
			int rc;

			seed = seed * 1103515245u + 12345u;
			if (i & 1) {
				n = (seed >> 8) % sizeof buf;
				for (size_t k = 0; k < n; k++) {
					seed = seed * 1103515245u + 12345u;
					buf[k] = (uint8_t)(seed >> 16);
				}
			} else {
				n = b.len;
				memcpy(buf, b.ptr, n);
				buf[(seed >> 8) % n] ^= (uint8_t)(1u << ((seed >> 4) & 7));
			}
			rc = bs_body_decode(&v, buf, n);
			if (rc == 0)
				ok++;
			else
				bad++;
			CHECK(rc == 0 || rc == BS_ECORRUPT, "random %d: rc %d", i, rc);
			bs_value_clear(&v);
		}
		CHECK(bad > 9000, "most random inputs are corrupt (%d ok, %d bad)", ok, bad);
		bs_bytes_free(&b);
		bs_value_clear(&bag);
	}
}

/* ------------------------------------------------------------ JSON */

static void json_round(const char *in, const char *want)
{
	bs_value_t v, v2;
	char *out = NULL;

	CHECK_OK(bs_json_decode(&v, in, strlen(in), "t.json"));
	CHECK_OK(bs_json_encode(&out, &v, 0));
	CHECK_STR(out, want);
	if (out) {
		CHECK_OK(bs_json_decode(&v2, out, strlen(out), "t.json"));
		CHECK(bs_value_equal(&v, &v2), "json round trip of %s", in);
		bs_value_clear(&v2);
	}
	free(out);
	bs_value_clear(&v);
}

static void test_json(void)
{
	bs_value_t v;
	char *out = NULL;

	json_round("[1, -2, 1.5, 0.1, 1e300, -0.0, 2.0, true, false, null, \"\", \"é\\u0000x\"]",
	           "[1,-2,1.5,0.1,1e300,-0.0,2.0,true,false,null,\"\",\"é\\u0000x\"]");
	json_round("{\"b\":{\"$binary\":{\"base64\":\"AQID\",\"subType\":\"00\"}},\"e\":{\"$binary\":{\"base64\":\"\","
	           "\"subType\":\"0\"}}}",
	           "{\"b\":{\"$binary\":{\"base64\":\"AQID\",\"subType\":\"00\"}},\"e\":{\"$binary\":{\"base64\":\"\","
	           "\"subType\":\"00\"}}}");
	json_round("{\"u\":{\"$uuid\":\"71F0C4D2291844CCA2DF6F486E96E37C\"}}",
	           "{\"u\":{\"$uuid\":\"71f0c4d2-2918-44cc-a2df-6f486e96e37c\"}}");
	json_round("[{\"$numberDouble\":\"NaN\"},{\"$numberDouble\":\"Infinity\"},{\"$numberDouble\":\"-Infinity\"}]",
	           "[{\"$numberDouble\":\"NaN\"},{\"$numberDouble\":\"Infinity\"},{\"$numberDouble\":\"-Infinity\"}]");
	json_round("[{\"$numberDecimal\":\"18446744073709551615\"},{\"$numberDecimal\":\"5\"},9223372036854775807,-"
	           "9223372036854775808]",
	           "[{\"$numberDecimal\":\"18446744073709551615\"},5,9223372036854775807,-9223372036854775808]");
	json_round("{\"a\":[],\"b\":{},\"c\":{\"$uuid\":1,\"x\":2}}",
	           "{\"a\":[],\"b\":{},\"c\":{\"$uuid\":1,\"x\":2}}");

	CHECK_OK(bs_json_decode(&v, "{\"$numberDecimal\":\"18446744073709551615\"}", 41, "t"));
	CHECK(v.type == BS_UINT && v.v.u == UINT64_MAX, "uint");
	bs_value_clear(&v);
	{
		const char *bin = "{\"$binary\":{\"base64\":\"cXVpY2s=\",\"subType\":\"00\"}}";

		CHECK_OK(bs_json_decode(&v, bin, strlen(bin), "t"));
	}
	CHECK(v.type == BS_BIN && v.v.s.len == 5 && memcmp(v.v.s.ptr, "quick", 5) == 0, "binary");
	bs_value_clear(&v);

	/* Errors. */
	CHECK_ERR(bs_json_decode(&v, "{\"a\":1,\"a\":2}", 13, "in.json"), BS_EINVAL);
	CHECK(has(bs_last_error(), "in.json:1:") && has(bs_last_error(), "duplicate"), "%s", bs_last_error());
	CHECK_ERR(bs_json_decode(&v, "{\n  \"a\": 1,\n  \"b\": x\n}", 22, "in.json"), BS_EINVAL);
	CHECK(has(bs_last_error(), "in.json:3:"), "%s", bs_last_error());
	CHECK_ERR(bs_json_decode(&v, "", 0, "in.json"), BS_EINVAL);
	CHECK_ERR(bs_json_decode(&v, "[1] [2]", 7, "in.json"), BS_EINVAL);
	CHECK_ERR(bs_json_decode(&v, "\"\xff\"", 3, "in.json"), BS_EINVAL);
	CHECK_ERR(bs_json_decode(&v, "18446744073709551616", 20, "in.json"), BS_EINVAL);
	CHECK_ERR(bs_json_decode(&v, "{\"u\":{\"$uuid\":\"xyz\"}}", 21, "in.json"), BS_EINVAL);
	CHECK_STR(bs_last_error(),
	          "in.json: at .u: malformed id \"xyz\": expected 32 hex digits or the dashed UUID form");
	CHECK_ERR(bs_json_decode(&v, "{\"$binary\":{\"base64\":\"!!\"}}", 27, "in.json"), BS_EINVAL);
	CHECK_ERR(bs_json_decode(&v, "{\"$numberDouble\":\"fast\"}", 24, "in.json"), BS_EINVAL);
	CHECK_ERR(bs_json_decode(&v, "{\"$numberDecimal\":\"1.5\"}", 24, "in.json"), BS_EINVAL);
	CHECK_ERR(bs_json_decode(&v, "{\"$numberDecimal\":\"18446744073709551616\"}", 41, "in.json"), BS_EINVAL);
	CHECK(v.type == BS_NIL, "out NIL on error");

	/* Depth: 32 containers fine, 33 refused. */
	{
		char deep[80];

		memset(deep, '[', 32);
		memset(deep + 32, ']', 32);
		CHECK_OK(bs_json_decode(&v, deep, 64, "deep"));
		bs_value_clear(&v);
		memset(deep, '[', 33);
		memset(deep + 33, ']', 33);
		CHECK_ERR(bs_json_decode(&v, deep, 66, "deep"), BS_EINVAL);
		CHECK(has(bs_last_error(), "nested deeper than 32"), "%s", bs_last_error());
	}

	/* Output refuses what would not read back. */
	{
		bs_value_t m, s;

		bs_value_map(&m);
		set_str(&m, "$uuid", "71f0c4d2-2918-44cc-a2df-6f486e96e37c");
		CHECK_ERR(bs_json_encode(&out, &m, 0), BS_EINVAL);
		CHECK(out == NULL, "no output");
		bs_value_clear(&m);
		bs_value_str(&s, "\xc3\x28", 2);
		CHECK_ERR(bs_json_encode(&out, &s, 0), BS_EINVAL);
		bs_value_clear(&s);
	}
}

/* ------------------------------------------------------------ YAML */

static void yaml_round(const bs_value_t *v, const char *want)
{
	char *out = NULL;
	bs_value_t back;

	CHECK_OK(bs_yaml_encode(&out, v));
	if (want)
		CHECK_STR(out, want);
	if (!out)
		return;
	CHECK_OK(bs_yaml_decode(&back, out, strlen(out), "rt.yaml"));
	CHECK(bs_value_equal(v, &back), "yaml round trip of:\n%s", out);
	bs_value_clear(&back);
	free(out);
}

static void check_yaml_scalar(const char *text, bs_type_t type)
{
	bs_value_t v;

	CHECK_OK(bs_yaml_decode(&v, text, strlen(text), "s.yaml"));
	CHECK(v.type == type, "\"%s\" decoded as type %d, wanted %d", text, (int)v.type, (int)type);
	bs_value_clear(&v);
}

static void test_yaml(void)
{
	static const char *tricky[] = {
		"true",
		"false",
		"True",
		"yes",
		"no",
		"on",
		"null",
		"Null",
		"~",
		"",
		" x",
		"x ",
		"a: b",
		"a #b",
		"#c",
		"123",
		"-5",
		"0x1F",
		"0o17",
		"1.5",
		"1e3",
		".inf",
		"-.inf",
		".nan",
		".5",
		"- item",
		"? q",
		"[a]",
		"{a}",
		"*alias",
		"&anchor",
		"!tag",
		"%dir",
		"@x",
		"`x",
		"'single'",
		"\"double\"",
		"---",
		"...",
		"a\nb",
		"trailing\n",
		"\ttab",
		"é ü 日本語",
		"🎉 emoji",
		"back\\slash",
		"\x01ctl",
		"plain words",
		"key:",
		"http://x.com/a#b",
		"\xc2\x85nel",
		"\xe2\x80\xa8ls",
		"\xef\xbb\xbf\x62om",
		"0",
		"-",
		"+1",
		"1_000",
		"0b101",
		"2001-12-14",
		"=",
		"<<",
		"|",
		">",
		"a, b",
		"a]",
		"multi\n\nline\n",
		"  ",
		"\r\n",
	};
	bs_value_t m, a, v;
	size_t n = sizeof tricky / sizeof tricky[0];

	/* Every type and every tricky string, as values and as keys. */
	bs_value_map(&m);
	set_id(&m);
	bs_value_nil(&v);
	bs_map_set(&m, "nil", 3, &v);
	bs_value_bool(&v, true);
	bs_map_set(&m, "t", 1, &v);
	bs_value_bool(&v, false);
	bs_map_set(&m, "f", 1, &v);
	set_int(&m, "i", -42);
	set_int(&m, "imin", INT64_MIN);
	v.type = BS_UINT;
	v.v.u = UINT64_MAX;
	bs_map_set(&m, "u", 1, &v);
	bs_value_nil(&v);
	bs_value_float(&v, 1.0);
	bs_map_set(&m, "f1", 2, &v);
	bs_value_float(&v, 0.1);
	bs_map_set(&m, "f2", 2, &v);
	bs_value_float(&v, -0.0);
	bs_map_set(&m, "f3", 2, &v);
	bs_value_float(&v, 1e300);
	bs_map_set(&m, "f4", 2, &v);
	bs_value_float(&v, 5e-324);
	bs_map_set(&m, "f5", 2, &v);
	bs_value_float(&v, NAN);
	bs_map_set(&m, "f6", 2, &v);
	bs_value_float(&v, -INFINITY);
	bs_map_set(&m, "f7", 2, &v);
	bs_value_float(&v, 1.0 / 3);
	bs_map_set(&m, "f8", 2, &v);
	bs_value_bin(&v, "\x00\x01\xfe\xff", 4);
	bs_map_set(&m, "bin", 3, &v);
	bs_value_bin(&v, "", 0);
	bs_map_set(&m, "bin0", 4, &v);
	bs_value_array(&a);
	bs_map_set(&m, "empty_a", 7, &a);
	bs_value_map(&a);
	bs_map_set(&m, "empty_m", 7, &a);
	bs_value_array(&a);
	for (size_t i = 0; i < n; i++) {
		bs_value_str(&v, tricky[i], strlen(tricky[i]));
		bs_array_push(&a, &v);
		bs_value_int(&v, (int64_t)i);
		bs_map_set(&m, tricky[i], strlen(tricky[i]), &v);
	}
	bs_value_str(&v, "nul\0byte", 8);
	bs_array_push(&a, &v);
	bs_value_int(&v, -1);
	bs_map_set(&m, "nul\0byte", 8, &v);
	bs_map_set(&m, "strings", 7, &a);
	yaml_round(&m, NULL);
	{
		char *out = NULL;

		CHECK_OK(bs_yaml_encode(&out, &m));
		CHECK(has(out, "id: !uuid 71f0c4d2-2918-44cc-a2df-6f486e96e37c\n"), "%s", out);
		CHECK(has(out, "\n- \"true\"\n"), "true quoted");
		CHECK(has(out, "\n- \"123\"\n"), "123 quoted");
		CHECK(has(out, "\n- \"\"\n"), "empty quoted");
		CHECK(has(out, "\n- \" x\"\n"), "leading space quoted");
		CHECK(has(out, "\n- \"a: b\"\n"), "colon quoted");
		CHECK(has(out, "\n- é ü 日本語\n"), "unicode plain");
		CHECK(has(out, "\n- plain words\n"), "plain");
		CHECK(has(out, "bin: !!binary AAH+/w==\n"), "binary");
		CHECK(has(out, "empty_a: []\n") && has(out, "empty_m: {}\n"), "empty flow");
		CHECK(has(out, "f1: 1.0\n") && has(out, "f2: 0.1\n") && has(out, "f3: -0.0\n"), "floats");
		CHECK(has(out, "f6: .nan\n") && has(out, "f7: -.inf\n"), "nan inf");
		CHECK(has(out, "u: 18446744073709551615\n"), "uint");
		CHECK(has(out, "nil: null\n"), "nil");
		free(out);
	}
	bs_value_clear(&m);

	/* Scalars at the top, nested containers. */
	bs_value_str(&v, "true", 4);
	yaml_round(&v, "\"true\"\n");
	bs_value_clear(&v);
	bs_value_int(&v, 7);
	yaml_round(&v, NULL);
	bs_value_array(&a);
	yaml_round(&a, "[]\n");
	{
		bs_value_t inner;

		bs_value_map(&inner);
		set_int(&inner, "x", 1);
		bs_array_push(&a, &inner);
		bs_value_array(&inner);
		bs_array_push(&a, &inner);
		yaml_round(&a, "- x: 1\n- []\n");
		bs_value_clear(&a);
	}

	/* Core schema resolution of plain scalars; quoted scalars are strings. */
	check_yaml_scalar("null", BS_NIL);
	check_yaml_scalar("~", BS_NIL);
	check_yaml_scalar("NULL", BS_NIL);
	check_yaml_scalar("True", BS_BOOL);
	check_yaml_scalar("FALSE", BS_BOOL);
	check_yaml_scalar("yes", BS_STR);
	check_yaml_scalar("0x1F", BS_INT);
	check_yaml_scalar("0o17", BS_INT);
	check_yaml_scalar("-17", BS_INT);
	check_yaml_scalar("18446744073709551615", BS_UINT);
	check_yaml_scalar("1.5", BS_FLOAT);
	check_yaml_scalar("1e3", BS_FLOAT);
	check_yaml_scalar(".inf", BS_FLOAT);
	check_yaml_scalar("-.Inf", BS_FLOAT);
	check_yaml_scalar(".NaN", BS_FLOAT);
	check_yaml_scalar("'123'", BS_STR);
	check_yaml_scalar("\"null\"", BS_STR);
	check_yaml_scalar("!!str 123", BS_STR);
	check_yaml_scalar("!!int \"12\"", BS_INT);
	check_yaml_scalar("!!float 1", BS_FLOAT);
	check_yaml_scalar("!!bool true", BS_BOOL);
	check_yaml_scalar("!!null ''", BS_NIL);
	check_yaml_scalar("!!binary |\n  cXVp\n  Y2s=\n", BS_BIN);
	check_yaml_scalar("!uuid 71F0C4D2291844CCA2DF6F486E96E37C", BS_BIN);
	check_yaml_scalar("|\n  block\n", BS_STR);
	check_yaml_scalar("a: 1", BS_MAP);
	check_yaml_scalar("1: x", BS_MAP); /* keys are strings */
	check_yaml_scalar("key:", BS_MAP);
	{
		const char *doc = "n: 0x10\nf: -1.25e2\nk:\ns: 'it''s'\n";

		CHECK_OK(bs_yaml_decode(&v, doc, strlen(doc), "d.yaml"));
		CHECK(bs_map_get(&v, "n")->v.i == 16, "hex");
		CHECK(bs_map_get(&v, "f")->v.f == -125.0, "float");
		CHECK(bs_map_get(&v, "k")->type == BS_NIL, "empty value is null");
		CHECK_STR(bs_map_get(&v, "s")->v.s.ptr, "it's");
		bs_value_clear(&v);
		CHECK_OK(bs_yaml_decode(&v, "1: x", 4, "d.yaml"));
		CHECK(v.type == BS_MAP && v.v.m.items[0].klen == 1 && v.v.m.items[0].key[0] == '1', "key '1'");
		bs_value_clear(&v);
	}

	/* Errors. */
	CHECK_ERR(bs_yaml_decode(&v, "a: 1\nb: 2\na: 3\n", 15, "in.yaml"), BS_EINVAL);
	CHECK_STR(bs_last_error(), "in.yaml:3:1: duplicate key \"a\"");
	CHECK_ERR(bs_yaml_decode(&v, "a: &x 1\nb: *x\n", 14, "in.yaml"), BS_EINVAL);
	CHECK(has(bs_last_error(), "aliases are not supported") && has(bs_last_error(), "in.yaml:1:4:"), "%s",
	      bs_last_error());
	CHECK_ERR(bs_yaml_decode(&v, "a: *x\n", 6, "in.yaml"), BS_EINVAL);
	CHECK(has(bs_last_error(), "aliases are not supported"), "%s", bs_last_error());
	/* a body holds at most BS_BODY_MAX_ITEMS values, as JSON's: a longer
	 * list is refused where it goes past the cap (not read whole first) */
	{
		/* the pair "a" and BS_BODY_MAX_ITEMS items: one too many */
		size_t cnt = BS_BODY_MAX_ITEMS, len = 3 + 2 * cnt;
		char *doc = malloc(len + 1), want[96];

		if (doc) {
			memcpy(doc, "a:\n", 3);
			for (size_t i = 0; i < cnt; i++)
				memcpy(doc + 3 + 2 * i, "-\n", 2);
			doc[len] = '\0';
			CHECK_ERR(bs_yaml_decode(&v, doc, len, "big.yaml"), BS_EINVAL);
			/* the last item, an empty scalar just after its dash */
			snprintf(want, sizeof want, "big.yaml:%u:2: body holds more than %u values",
			         BS_BODY_MAX_ITEMS + 1, BS_BODY_MAX_ITEMS);
			CHECK_STR(bs_last_error(), want);
			doc[len - 2] = '\0'; /* one fewer: the cap itself reads */
			CHECK_OK(bs_yaml_decode(&v, doc, len - 2, "big.yaml"));
			CHECK(v.type == BS_MAP && v.v.m.len == 1 && v.v.m.items[0].val.v.a.len == BS_BODY_MAX_ITEMS - 1,
			      "the list read");
			bs_value_clear(&v);
			free(doc);
		}
	}
	CHECK_ERR(bs_yaml_decode(&v, "a: !secret 1\n", 13, "in.yaml"), BS_EINVAL);
	CHECK_STR(bs_last_error(), "in.yaml:1:4: unsupported tag \"!secret\"");
	CHECK_ERR(bs_yaml_decode(&v, "a: !!set {}\n", 12, "in.yaml"), BS_EINVAL);
	CHECK(has(bs_last_error(), "\"!!set\""), "%s", bs_last_error());
	CHECK_ERR(bs_yaml_decode(&v, "a: !uuid 1234\n", 14, "in.yaml"), BS_EINVAL);
	CHECK(has(bs_last_error(), "in.yaml:1:4: malformed id \"1234\""), "%s", bs_last_error());
	CHECK_ERR(bs_yaml_decode(&v, "a: !!binary '!!'\n", 17, "in.yaml"), BS_EINVAL);
	CHECK_ERR(bs_yaml_decode(&v, "a: !!int x\n", 11, "in.yaml"), BS_EINVAL);
	CHECK_ERR(bs_yaml_decode(&v, "a: 99999999999999999999\n", 24, "in.yaml"), BS_EINVAL);
	CHECK_ERR(bs_yaml_decode(&v, "? [a]\n: 1\n", 10, "in.yaml"), BS_EINVAL);
	CHECK(has(bs_last_error(), "mapping keys must be scalars"), "%s", bs_last_error());
	CHECK_ERR(bs_yaml_decode(&v, "a: 1\n---\nb: 2\n", 14, "in.yaml"), BS_EINVAL);
	CHECK(has(bs_last_error(), "in.yaml:2:1: expected a single YAML document"), "%s", bs_last_error());
	CHECK_ERR(bs_yaml_decode(&v, "", 0, "in.yaml"), BS_EINVAL);
	CHECK_ERR(bs_yaml_decode(&v, "a: [1, 2\n", 9, "in.yaml"), BS_EINVAL);
	CHECK(has(bs_last_error(), "in.yaml:2:1: "), "%s", bs_last_error());
	CHECK_ERR(bs_yaml_decode(&v, "a: b: c\n", 8, "in.yaml"), BS_EINVAL);
	CHECK(has(bs_last_error(), "in.yaml:1:5: mapping values are not allowed"), "%s", bs_last_error());
	CHECK_ERR(bs_yaml_decode(&v, "a: \"\xff\"\n", 7, "in.yaml"), BS_EINVAL);
	CHECK(v.type == BS_NIL, "out NIL on error");
	{
		char deep[80];

		memset(deep, '[', 32);
		memset(deep + 32, ']', 32);
		CHECK_OK(bs_yaml_decode(&v, deep, 64, "deep"));
		bs_value_clear(&v);
		memset(deep, '[', 33);
		memset(deep + 33, ']', 33);
		CHECK_ERR(bs_yaml_decode(&v, deep, 66, "deep"), BS_EINVAL);
		CHECK(has(bs_last_error(), "deep:1:33: nested deeper than 32"), "%s", bs_last_error());
	}
	/* Billion laughs is refused at the first anchor. */
	{
		const char *lol = "a: &a [\"lol\",\"lol\"]\nb: &b [*a,*a,*a]\nc: [*b,*b,*b]\n";

		CHECK_ERR(bs_yaml_decode(&v, lol, strlen(lol), "lol.yaml"), BS_EINVAL);
	}
	{
		bs_value_t s;
		char *out = NULL;

		bs_value_str(&s, "\xc3\x28", 2);
		CHECK_ERR(bs_yaml_encode(&out, &s), BS_EINVAL);
		CHECK(out == NULL, "no output");
		bs_value_clear(&s);
	}
}

/* Strings glued from YAML's troublemakers, as keys and values: every one
 * reads back as written. */
static void test_yaml_random_strings(void)
{
	static const char *atoms[] = {
		" ",
		":",
		"#",
		"-",
		"?",
		"[",
		"]",
		"{",
		"}",
		",",
		"&",
		"*",
		"!",
		"|",
		">",
		"'",
		"\"",
		"%",
		"@",
		"`",
		"\n",
		"\t",
		"\\",
		"~",
		".",
		"0",
		"1",
		"9",
		"e",
		"E",
		"+",
		"x",
		"o",
		"a",
		"null",
		"true",
		"No",
		"inf",
		"nan",
		"\xc3\xa9",
		"\xc2\x85",
		"\xe2\x80\xa8",
		"\xef\xbb\xbf",
		"\r",
		"",
		"---",
		"...",
		"<<",
		"=",
		"\x7f",
		"\x01",
		"\xf0\x9f\x8e\x89",
		"  ",
		"\n\n",
		"_",
		"0x",
		"0o",
		".inf",
		"/",
	};
	uint32_t seed = 2009;
	int failed = 0;

	for (int it = 0; it < 10000 && failed < 5; it++) {
		char buf[64], *out = NULL;
		size_t n = 0;
		bs_value_t m, s, arr, back;
		int k;

		seed = seed * 1103515245u + 12345u;
		k = (int)((seed >> 16) % 6);
		for (int j = 0; j < k; j++) {
			const char *a;
			size_t l;

			seed = seed * 1103515245u + 12345u;
			a = atoms[(seed >> 16) % (sizeof atoms / sizeof atoms[0])];
			l = a[0] ? strlen(a) : 1; /* "" stands for a NUL byte */
			memcpy(buf + n, a, l);
			n += l;
		}
		bs_value_map(&m);
		bs_value_array(&arr);
		bs_value_str(&s, buf, n);
		bs_array_push(&arr, &s);
		bs_map_set(&m, "k", 1, &arr);
		bs_value_str(&s, buf, n);
		bs_map_set(&m, buf, n, &s);
		if (bs_yaml_encode(&out, &m) != 0 || bs_yaml_decode(&back, out, strlen(out), "r.yaml") != 0 ||
		    !bs_value_equal(&m, &back)) {
			failed++;
			CHECK(0, "random string %d does not round-trip (%s):\n%s", it, bs_last_error(), out ? out : "");
		}
		bs_value_clear(&back);
		bs_value_clear(&m);
		free(out);
	}
	CHECK(failed == 0, "random YAML strings");
}

/* A body of one array of n nils: 16 KB of MessagePack can declare
 * millions of one-byte items (issue 13.9). */
static uint8_t *many_items_body(size_t n, size_t *zlen)
{
	size_t mplen = 22 + 2 + 5 + n;
	uint8_t *mp = malloc(mplen), *z;
	uLongf zl;

	memcpy(mp, "\x82\xa2id\xc4\x10", 6);
	memcpy(mp + 6, ID1, 16);
	memcpy(mp + 22, "\xa1x\xdd", 3);
	mp[25] = (uint8_t)(n >> 24);
	mp[26] = (uint8_t)(n >> 16);
	mp[27] = (uint8_t)(n >> 8);
	mp[28] = (uint8_t)n;
	memset(mp + 29, 0xc0, n);
	zl = compressBound(mplen);
	z = malloc(zl);
	compress2(z, &zl, mp, mplen, 9);
	free(mp);
	*zlen = zl;
	return z;
}

/* ------------------------------------------------------------ the compact writer */

static uint32_t rnd_state = 2463534242u;
static uint32_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 17;
	rnd_state ^= rnd_state << 5;
	return rnd_state;
}

/* Random UTF-8 text with quotes, backslashes, control characters and
 * multi-byte characters. */
static void rnd_text(char *buf, size_t *len)
{
	static const char *const pieces[] = { "a",
		                              "Z",
		                              "\"",
		                              "\\",
		                              "\n",
		                              "\t",
		                              "\x01",
		                              "\x1f",
		                              "\x7f",
		                              "/",
		                              "\xc3\xa9",
		                              "\xe2\x9c\x93",
		                              "\xf0\x9f\x98\x80",
		                              " ",
		                              "0",
		                              "\b",
		                              "\f",
		                              "\r" };
	size_t n = rnd() % 12, o = 0;
	for (size_t i = 0; i < n; i++) {
		const char *p = pieces[rnd() % (sizeof pieces / sizeof *pieces)];
		memcpy(buf + o, p, strlen(p));
		o += strlen(p);
	}
	*len = o;
}

static void rnd_value(bs_value_t *v, int depth)
{
	char text[64];
	size_t n;
	unsigned kind = rnd() % (depth < 3 ? 10 : 8);
	static const double reals[] = { 0.1,    1.0 / 3, 1e300, -2.5e-300, 123456789.0, 0.0,      -0.0,      1e21,
		                        5e-324, 3.14159, 1e15,  100.0,     2.0e-7,      INFINITY, -INFINITY, NAN };
	switch (kind) {
	case 0: bs_value_nil(v); break;
	case 1: bs_value_bool(v, rnd() & 1); break;
	case 2: bs_value_int(v, (int64_t)(((uint64_t)rnd() << 32) | rnd())); break;
	case 3: bs_value_float(v, reals[rnd() % (sizeof reals / sizeof *reals)] * (double)(1 + rnd() % 7)); break;
	case 4:
		rnd_text(text, &n);
		bs_value_str(v, text, n);
		break;
	case 5: {
		uint8_t b[20];
		for (int i = 0; i < 20; i++)
			b[i] = (uint8_t)rnd();
		bs_value_bin(v, b, rnd() % 2 ? 16 : rnd() % 20);
		break;
	}
	case 6: bs_value_int(v, -(int64_t)(rnd() % 1000)); break;
	case 7:
		v->type = BS_UINT;
		v->v.u = 9223372036854775808ull + rnd();
		break;
	case 8: {
		bs_value_array(v);
		for (unsigned i = rnd() % 4; i > 0; i--) {
			bs_value_t x;
			rnd_value(&x, depth + 1);
			bs_array_push(v, &x);
		}
		break;
	}
	default: {
		bs_value_map(v);
		for (unsigned i = rnd() % 4; i > 0; i--) {
			bs_value_t x;
			rnd_text(text, &n);
			text[n++] = (char)('a' + i); /* never empty, so never a lone $uuid */
			rnd_value(&x, depth + 1);
			bs_map_set(v, text, n, &x);
		}
	}
	}
}

/* bs_json_encode's compact form is written by hand for speed; jansson's
 * json_dumps is its reference: the same bytes for any printable value. */
static void test_json_compact_writer(void)
{
	int same = 0;
	for (int i = 0; i < 3000; i++) {
		bs_value_t v, w;
		bs_value_map(&v);
		rnd_value(&w, 1);
		bs_map_set(&v, "v", 1, &w);
		char *fast = NULL, *ref = NULL;
		int a = bs_json_encode(&fast, &v, 0), b = bs__json_encode_jansson(&ref, &v, 0);
		if (a == 0 && b == 0 && !strcmp(fast, ref))
			same++;
		else
			CHECK(0, "value %d: writer %d \"%s\" vs jansson %d \"%s\"", i, a, fast ? fast : "", b,
			      ref ? ref : "");
		/* and it reads back as the same value */
		if (a == 0) {
			bs_value_t back;
			CHECK_OK(bs_json_decode(&back, fast, strlen(fast), "round trip"));
			CHECK(bs_value_equal(&back, &v), "value %d reads back equal: %s", i, fast);
			bs_value_clear(&back);
		}
		free(fast);
		free(ref);
		bs_value_clear(&v);
	}
	CHECK(same == 3000, "the writer and jansson agree on %d of 3000 random values", same);
}

/* Numbers a double cannot hold are refused, not stored as 0 (issue 13.14). */
static void test_json_underflow(void)
{
	static const char *const refused[] = { "{\"a\":1e-400}", "{\"a\":[1,\n -2.5E-999]}" };
	static const char *const taken[] = { "{\"a\":0e-400}", "{\"a\":\"1e-400\"}", "{\"a\":2.5e-320}",
		                             "{\"1e-400\":1}" };
	bs_value_t v;
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
		CHECK_ERR(bs_json_decode(&v, refused[i], strlen(refused[i]), "in"), BS_EINVAL);
		CHECK(has(bs_last_error(), "too small for a double"), "%s: %s", refused[i], bs_last_error());
	}
	CHECK(has(bs_last_error(), "in:2:2: the number -2.5E-999"), "names the spot: %s", bs_last_error());
	for (size_t i = 0; i < sizeof taken / sizeof *taken; i++) {
		CHECK_OK(bs_json_decode(&v, taken[i], strlen(taken[i]), "in"));
		bs_value_clear(&v);
	}
}

static void test_body_items(void)
{
	size_t zlen;
	uint8_t *z;
	bs_value_t v, bag, sub;
	bs_bytes_t b = { 0 };

	/* 15 million nils: refused by count, before the memory is spent */
	z = many_items_body(15u << 20, &zlen);
	CHECK(zlen < 40000, "the body is small: %zu bytes", zlen);
	CHECK_ERR(bs_body_decode(&v, z, zlen), BS_ECORRUPT);
	CHECK(has(bs_last_error(), "more than 1048576 values"), "%s", bs_last_error());
	free(z);
	/* at the limit (the id, the array and its items): decodes */
	z = many_items_body(BS_BODY_MAX_ITEMS - 3, &zlen);
	CHECK_OK(bs_body_decode(&v, z, zlen));
	CHECK(bs_map_get(&v, "x") && bs_map_get(&v, "x")->v.a.len == BS_BODY_MAX_ITEMS - 3, "x has its items");
	/* and encode agrees */
	CHECK_OK(bs_body_encode(&b, &v));
	bs_bytes_free(&b);
	bs_value_t nil;
	bs_value_nil(&nil);
	bs_value_t *x = (bs_value_t *)bs_map_get(&v, "x");
	for (int i = 0; i < 10; i++) {
		bs_value_nil(&nil);
		bs_array_push(x, &nil);
	}
	CHECK_ERR(bs_body_encode(&b, &v), BS_EINVAL);
	CHECK(has(bs_last_error(), "more than 1048576 values"), "%s", bs_last_error());
	bs_value_clear(&v);
	free(z);

	/* what cannot be printed back is refused on the way in (issue 13.5) */
	bs_value_map(&bag);
	set_id(&bag);
	bs_value_int(&v, 1);
	bs_map_set(&bag, "a\0b", 3, &v);
	CHECK_ERR(bs_body_encode(&b, &bag), BS_EINVAL);
	CHECK(has(bs_last_error(), "NUL"), "a key holding a NUL: %s", bs_last_error());
	bs_value_clear(&bag);
	bs_value_map(&bag);
	set_id(&bag);
	bs_value_map(&sub);
	set_str(&sub, "$uuid", "abc");
	bs_map_set(&bag, "x", 1, &sub);
	CHECK_ERR(bs_body_encode(&b, &bag), BS_EINVAL);
	CHECK(has(bs_last_error(), "x: a map whose only key is \"$uuid\""), "a lone $uuid key: %s", bs_last_error());
	/* beside another key it is an ordinary map */
	bs_value_t *xm = (bs_value_t *)bs_map_get(&bag, "x");
	set_str(xm, "other", "y");
	CHECK_OK(bs_body_encode(&b, &bag));
	bs_bytes_free(&b);
	bs_value_clear(&bag);
}

/* A binary's subtype (Extended JSON's subType) is kept: JSON -> stored body
 * -> JSON, and through YAML, for generic, function, old binary, old UUID,
 * MD5, encrypted, compressed, sensitive and user-defined subtypes, empty
 * and 16 bytes long too (16 bytes of a subtype but 0 or 4 are no uuid). */
static void test_binary_subtypes(void)
{
	static const struct {
		const char *in, *sub;
	} cases[] = {
		{ "AAAA", "01" },
		{ "AAAA", "02" },
		{ "AAAA", "03" },
		{ "AAAA", "05" },
		{ "AAAA", "06" },
		{ "AAAA", "07" },
		{ "AAAA", "08" },
		{ "AAAA", "80" },
		{ "AAAA", "ff" },
		{ "AAAA", "5" },
		{ "", "09" },
		{ "cfDE0ikYRMyi329IbpbjfA==", "05" },
		{ "cfDE0ikYRMyi329IbpbjfA==", "03" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char in[256], want[256], hex[3];
		bs_value_t v, back, y;
		bs_bytes_t body = { 0 };
		char *out = NULL, *yml = NULL, *out2 = NULL;

		snprintf(hex, sizeof hex, "%02x", (unsigned)strtoul(cases[i].sub, NULL, 16));
		snprintf(in, sizeof in,
		         "{\"id\":{\"$uuid\":\"71f0c4d2-2918-44cc-a2df-6f486e96e37c\"},"
		         "\"b\":{\"$binary\":{\"base64\":\"%s\",\"subType\":\"%s\"}}}",
		         cases[i].in, cases[i].sub);
		snprintf(want, sizeof want,
		         "{\"id\":{\"$uuid\":\"71f0c4d2-2918-44cc-a2df-6f486e96e37c\"},"
		         "\"b\":{\"$binary\":{\"base64\":\"%s\",\"subType\":\"%s\"}}}",
		         cases[i].in, hex);
		CHECK_OK(bs_json_decode(&v, in, strlen(in), "t.json"));
		CHECK(bs_map_get(&v, "b") && bs_map_get(&v, "b")->v.s.sub == strtoul(hex, NULL, 16),
		      "subtype %s decoded", cases[i].sub);
		CHECK_OK(bs_body_encode(&body, &v));
		CHECK_OK(bs_body_decode(&back, body.ptr, body.len));
		CHECK(bs_value_equal(&v, &back), "subtype %s: the stored body reads back equal", cases[i].sub);
		CHECK_OK(bs_json_encode(&out, &back, 0));
		CHECK_STR(out, want);
		CHECK_OK(bs_yaml_encode(&yml, &back));
		{
			char tag[32];
			snprintf(tag, sizeof tag, "b: !binary/%s%s%s\n", hex, cases[i].in[0] ? " " : "", cases[i].in);
			CHECK(has(yml, tag), "yaml shows %s: %s", tag, yml ? yml : "(null)");
		}
		CHECK_OK(bs_yaml_decode(&y, yml, yml ? strlen(yml) : 0, "t.yaml"));
		CHECK(bs_value_equal(&v, &y), "subtype %s: through YAML, equal", cases[i].sub);
		CHECK_OK(bs_json_encode(&out2, &y, 0));
		CHECK_STR(out2, want);
		free(out);
		free(out2);
		free(yml);
		bs_bytes_free(&body);
		bs_value_clear(&v);
		bs_value_clear(&back);
		bs_value_clear(&y);
	}

	/* 16 bytes of subtype 04 (UUID) are a uuid, what "$uuid" stands for;
	 * of 00, the uuid they always were */
	json_round("[{\"$binary\":{\"base64\":\"cfDE0ikYRMyi329IbpbjfA==\",\"subType\":\"04\"}},"
	           "{\"$binary\":{\"base64\":\"cfDE0ikYRMyi329IbpbjfA==\",\"subType\":\"00\"}},"
	           "{\"$binary\":{\"base64\":\"AAAA\",\"subType\":\"04\"}}]",
	           "[{\"$uuid\":\"71f0c4d2-2918-44cc-a2df-6f486e96e37c\"},{\"$uuid\":\"71f0c4d2-2918-44cc-a2df-"
	           "6f486e96e37c\"},"
	           "{\"$binary\":{\"base64\":\"AAAA\",\"subType\":\"04\"}}]");

	/* the MessagePack: subtype 0 is bin; another is ext 0, the subtype first */
	{
		bs_value_t v, d;
		bs_bytes_t mp = { 0 };
		static const uint8_t want[] = { 0xd6, 0x00, 0x05, 0x00, 0x00, 0x00 }; /* fixext 4: 05 + 3 bytes */

		const char *in = "{\"$binary\":{\"base64\":\"AAAA\",\"subType\":\"05\"}}";
		CHECK_OK(bs_json_decode(&v, in, strlen(in), "t"));
		CHECK_OK(bs_msgpack_encode(&mp, &v));
		CHECK(mp.len == sizeof want && memcmp(mp.ptr, want, sizeof want) == 0, "ext 0 with the subtype");
		bs_bytes_free(&mp);
		bs_value_clear(&v);
		static const uint8_t other[] = { 0xd4, 0x07, 0x01 };      /* fixext 1 of type 7 */
		static const uint8_t sub0[] = { 0xd5, 0x00, 0x00, 0x01 }; /* ext 0, subtype 0 */
		static const uint8_t none[] = { 0xc7, 0x00, 0x00 };       /* ext 0, no byte */
		static const uint8_t cut[] = { 0xc7, 0x05, 0x00, 0x05, 0x01 };
		static const uint8_t uuid4[20] = { 0xc7, 17, 0x00, 0x04 }; /* ext 8 of 17: subtype 04, 16 bytes */
		CHECK_ERR(bs_msgpack_decode(&d, uuid4, sizeof uuid4), BS_ECORRUPT);
		CHECK(has(bs_last_error(), "a uuid"), "%s", bs_last_error());
		CHECK_ERR(bs_msgpack_decode(&d, other, sizeof other), BS_ECORRUPT);
		CHECK(has(bs_last_error(), "unsupported msgpack ext type 7"), "%s", bs_last_error());
		CHECK_ERR(bs_msgpack_decode(&d, sub0, sizeof sub0), BS_ECORRUPT);
		CHECK_ERR(bs_msgpack_decode(&d, none, sizeof none), BS_ECORRUPT);
		CHECK_ERR(bs_msgpack_decode(&d, cut, sizeof cut), BS_ECORRUPT);
		bs_value_bin(&v, "0123456789abcdef", 16);
		v.v.s.sub = 4;
		CHECK_ERR(bs_msgpack_encode(&mp, &v), BS_EINVAL);
		bs_value_clear(&v);
	}

	/* an id is a uuid: 16 bytes of another subtype are refused */
	{
		bs_value_t v;
		bs_bytes_t body = { 0 };
		const char *in = "{\"id\":{\"$binary\":{\"base64\":\"cfDE0ikYRMyi329IbpbjfA==\",\"subType\":\"03\"}}}";

		CHECK_OK(bs_json_decode(&v, in, strlen(in), "t"));
		CHECK_ERR(bs_body_encode(&body, &v), BS_EINVAL);
		CHECK(has(bs_last_error(), "subtype 03"), "%s", bs_last_error());
		bs_value_clear(&v);
	}
	/* YAML: a bad subtype tag */
	{
		bs_value_t v;
		CHECK_ERR(bs_yaml_decode(&v, "a: !binary/xyz AAAA\n", 20, "in.yaml"), BS_EINVAL);
		CHECK(has(bs_last_error(), "1 or 2 hex digits"), "%s", bs_last_error());
	}
}

/* bs__float_short writes what "%.15g" writes, when it writes anything,
 * and that reads back as the double; it takes the decimals it is for. */
static void test_float_short(void)
{
	static const double fixed[] = { 0.25, 24999.5, 0.1, 0.0001, 0.001, 1.5e-4, 123456789012345.0, 99999999999999.9,
		                        1e14, 3.0, -2.5, -0.0001, 1e-5, 1e15, 0.3, 2.675, 1.0 / 3, 100.0, 0.0, -0.0 };
	char a[40], b[40];
	int fast = 0;

	for (int i = 0; i < 200000; i++) {
		double d;
		if (i < (int)(sizeof fixed / sizeof *fixed)) {
			d = fixed[i];
		} else if (i % 3) {
			/* a decimal of up to 15 digits */
			uint64_t m = (((uint64_t)rnd() << 32) | rnd()) % (i % 2 ? 1000000000000000ull : 100000ull);
			d = (double)m / pow(10, (double)(rnd() % 19));
			if (rnd() & 1)
				d = -d;
		} else {
			uint64_t bits = ((uint64_t)rnd() << 32) | rnd();
			memcpy(&d, &bits, sizeof d);
			if (!isfinite(d))
				continue;
		}
		int n = bs__float_short(a, d);
		if (!n)
			continue;
		fast++;
		snprintf(b, sizeof b, "%.15g", d);
		CHECK(strcmp(a, b) == 0 && (size_t)n == strlen(a), "%.17g: \"%s\" where %%.15g writes \"%s\"", d, a, b);
		CHECK(strtod(a, NULL) == d, "%.17g: \"%s\" reads back", d, a);
	}
	CHECK(fast > 50000, "the short form applies to most decimals (%d)", fast);
	CHECK(bs__float_short(a, 0.25) == 4 && strcmp(a, "0.25") == 0, "0.25");
	/* the writer's refusal names the path to the value */
	{
		bs_value_t v, arr, m, x;
		char *out = NULL;
		bs_value_map(&v);
		bs_value_array(&arr);
		bs_value_int(&x, 1);
		bs_array_push(&arr, &x);
		bs_value_map(&m);
		bs_value_str(&x, "\xff", 1);
		bs_map_set(&m, "k", 1, &x);
		bs_array_push(&arr, &m);
		bs_map_set(&v, "a", 1, &arr);
		CHECK_ERR(bs_json_encode(&out, &v, 0), BS_EINVAL);
		CHECK(has(bs_last_error(), "a[1].k: string \"") && has(bs_last_error(), "is not valid UTF-8"), "%s",
		      bs_last_error());
		bs_value_clear(&v);
	}
	CHECK(bs__float_short(a, 1e-5) == 0 && bs__float_short(a, 1e15) == 0 && bs__float_short(a, 0.1 + 0.2) == 0,
	      "out of its range, or no short decimal: printf's");
}

/* The reader (json_read.c) against jansson's (json.c's reference): one
 * verdict, and the same value when both take the text, but for the
 * reference's known misses (bs__json_jansson_misses). */
static int reader_agree(const char *text, size_t len)
{
	bs_value_t a, b;
	char amsg[1024];
	int ra = bs_json_decode(&a, text, len, "r"), ok = 1;

	snprintf(amsg, sizeof amsg, "%s", ra ? bs_last_error() : "");
	int rb = bs__json_decode_jansson(&b, text, len, "r");
	char shown[200];

	bs__quote(shown, sizeof shown, text, len);
	if (ra == 0 && rb == 0)
		ok = bs_value_equal(&a, &b);
	else if (ra < 0 && rb == 0)
		ok = bs__json_jansson_misses(text, len, amsg);
	else if (ra == 0)
		ok = 0;
	CHECK(ok, "reader %d (%s) vs jansson %d (%s) on %s", ra, amsg, rb, rb ? bs_last_error() : "", shown);
	CHECK(ra == 0 || a.type == BS_NIL, "the value is NIL after the reader refuses %s", shown);
	bs_value_clear(&a);
	bs_value_clear(&b);
	return ra == 0;
}

static void test_json_reader(void)
{
	static const struct {
		const char *text;
		int take;
	} cases[] = {
		{ "{}", 1 },
		{ " \t\r\n[ 1 , -0 , 0.5e1 , 1E+2 , -1.25e-3 , true , false , null , \"\" ] \n", 1 },
		{ "\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\u2713 \\ud83d\\ude00 \\u0000\"", 1 },
		{ "\"caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80\"", 1 },
		{ "{\"a\\u0000b\":1}", 0 },
		{ "\"\\ud83d\"", 0 },
		{ "\"\\ude00\"", 0 },
		{ "\"\\ud83d\\u0041\"", 0 },
		{ "\"\\ud83dx\"", 0 },
		{ "\"\\u12\"", 0 },
		{ "\"\\x\"", 0 },
		{ "\"\\", 0 },
		{ "\"a", 0 },
		{ "\"\x01\"", 0 },
		{ "\"\t\"", 0 },
		{ "\"\x7f\"", 1 },
		{ "\"\xc0\xaf\"", 0 },
		{ "\"\xe0\x80\xaf\"", 0 },
		{ "\"\xed\xa0\x80\"", 0 },
		{ "\"\xf4\x90\x80\x80\"", 0 },
		{ "\"\xc3\"", 0 },
		{ "\"\x80\"", 0 },
		{ "\xef\xbb\xbf{}", 0 },
		{ "9223372036854775807", 1 },
		{ "-9223372036854775808", 1 },
		{ "9223372036854775808", 0 },
		{ "-9223372036854775809", 0 },
		{ "123456789012345678901234567890", 0 },
		{ "01", 0 },
		{ "-", 0 },
		{ "-a", 0 },
		{ "1.", 0 },
		{ ".5", 0 },
		{ "+1", 0 },
		{ "1e", 0 },
		{ "1e+", 0 },
		{ "1.5.3", 0 },
		{ "1e400", 0 },
		{ "-1e400", 0 },
		{ "1e-400", 0 },
		{ "0e-400", 1 },
		{ "0.000e-999", 1 },
		{ "2.5e-320", 1 },
		{ "1.7976931348623157e308", 1 },
		{ "tru", 0 },
		{ "nulll", 0 },
		{ "true1", 0 },
		{ "[1,]", 0 },
		{ "{\"a\":1,}", 0 },
		{ "[,1]", 0 },
		{ "{\"a\" 1}", 0 },
		{ "{a:1}", 0 },
		{ "{\"a\":1 \"b\":2}", 0 },
		{ "[1 2]", 0 },
		{ "", 0 },
		{ "  \n ", 0 },
		{ "[] []", 0 },
		{ "[]x", 0 },
		{ "{\"a\":1,\"a\":1}", 0 },
		{ "{\"a\":1,\"b\":{\"a\":1}}", 1 },
		{ "{\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,\"k9\":9,\"k10\":10,"
		  "\"k11\":11,\"k12\":12,\"k13\":13,\"k14\":14,\"k15\":15,\"k16\":16,\"k17\":17,\"k8\":0}",
		  0 },
		{ "{\"$uuid\":\"71f0c4d2-2918-44cc-a2df-6f486e96e37c\"}", 1 },
		{ "{\"$uuid\":\"71f0c4d2291844cca2df6f486e96e37c\",\"x\":1}", 1 },
		{ "{\"$uuid\":{\"$uuid\":\"71f0c4d2291844cca2df6f486e96e37c\"}}", 0 },
		{ "{\"$binary\":{\"base64\":\"cXVpY2s=\",\"subType\":\"80\"}}", 1 },
		{ "{\"$binary\":{\"subType\":\"4\",\"base64\":\"AAAAAAAAAAAAAAAAAAAAAA==\"}}", 1 },
		{ "{\"$binary\":{\"base64\":\"AA==\",\"base64\":\"AA==\"}}", 0 },
		{ "{\"$binary\":{\"base64\":\"AA==\",\"other\":1}}", 0 },
		{ "{\"$numberDouble\":\"NaN\"}", 1 },
		{ "{\"$numberDouble\":\"-Infinity\"}", 1 },
		{ "{\"$numberDouble\":\"NaN\\u0000x\"}", 0 },
		{ "{\"$numberDouble\":\"2.5\"}", 1 },
		{ "{\"$numberDecimal\":\"18446744073709551615\"}", 1 },
		{ "{\"$numberDecimal\":\"-5\"}", 1 },
		{ "{\"$nope\":1}", 1 },
		{ "{\"$uuid\":1,\"$uuid\":2}", 0 },
	};
	int took = 0;

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		int t = reader_agree(cases[i].text, strlen(cases[i].text));
		CHECK(t == cases[i].take, "case %zu %s: %s", i, cases[i].take ? "taken" : "refused", cases[i].text);
	}
	/* where a fault is: the line and column of the character at fault,
	 * a newline too; an unclosed string names where it opened */
	{
		static const struct {
			const char *text, *want;
		} at[] = {
			{ "[1.\n]", "r:1:3: " },
			{ "[1,\n  -x]", "r:2:3: " },
			{ "{\"a\nb\":1}", "r:1:4: control character 0x0a" },
			{ "{\n  \"g\": x\n}", "r:2:8: " },
			{ "{\"g\":", "r:1:5: " },
			{ "{\n  \"a\": \"x\",\n  \"b\": \"open", "opened at line 3, column 8" },
			{ "[\"\xc3\xa9\", tru]", "r:1:7: " },
			{ "\"\\", "r:1:2: the text ends inside the string opened at line 1, column 1" },
		};
		bs_value_t v;
		for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
			CHECK_ERR(bs_json_decode(&v, at[i].text, strlen(at[i].text), "r"), BS_EINVAL);
			CHECK(has(bs_last_error(), at[i].want), "%s: wanted %s, got %s", at[i].text, at[i].want,
			      bs_last_error());
		}
	}
	/* a NUL byte is text like any other, inside a string or out */
	reader_agree("\"a\0b\"", 5);
	reader_agree("[1,\0]", 5);
	CHECK(!reader_agree("1\0", 2), "a NUL after the value is refused");

	/* Depth: every container kind around every kind of innermost value,
	 * at the limit and on either side of it. */
	static const char *const inner[] = {
		"1",
		"[]",
		"{}",
		"{\"$uuid\":\"71f0c4d2291844cca2df6f486e96e37c\"}",
		"{\"$binary\":{\"base64\":\"AA==\",\"subType\":\"00\"}}",
		"{\"$uuid\":\"71f0c4d2291844cca2df6f486e96e37c\",\"x\":1}",
		"{\"$uuid\":[1],\"x\":1}",
		"{\"$uuid\":{\"a\":1},\"x\":1}",
		"{\"$uuid\":{\"a\":[1]},\"x\":1}",
		"{\"$binary\":{\"base64\":[\"AA==\"]}}",
		"{\"$uuid\":{\"$uuid\":{\"$uuid\":{\"$uuid\":{\"a\":1}}}}}",
	};
	char *buf = malloc(4096);
	for (int d = 28; d <= 35; d++)
		for (size_t k = 0; k < sizeof inner / sizeof *inner; k++)
			for (int wrap = 0; wrap < 3; wrap++) {
				size_t o = 0;
				for (int i = 0; i < d; i++)
					o += (size_t)sprintf(buf + o, "%s", wrap == 0 ? "[" : wrap == 1 ? "{\"k\":" : (i & 1) ? "[" : "{\"$uuid\":");
				o += (size_t)sprintf(buf + o, "%s", inner[k]);
				for (int i = d - 1; i >= 0; i--)
					o += (size_t)sprintf(buf + o, "%s", wrap == 0 ? "]" : wrap == 1 ? "}" : (i & 1) ? "]" : "}");
				took += reader_agree(buf, o);
			}
	CHECK(took > 20, "some of the deep texts are taken (%d)", took);

	/* Mutants of encoded random values: a byte replaced, inserted or
	 * taken out, one to three times. */
	static const char bytes[] = "\"\\{}[],:0-9e.uED+ \n\x80\xc3\xff\x01tn";
	int taken = 0, refused = 0;
	for (int i = 0; i < 20000; i++) {
		bs_value_t v, w;
		char *text = NULL;
		bs_value_map(&v);
		rnd_value(&w, 1);
		bs_map_set(&v, "v", 1, &w);
		if (bs_json_encode(&text, &v, rnd() % 4 ? 0 : BS_JSON_PRETTY) == 0) {
			size_t n = strlen(text);
			for (unsigned m = 1 + rnd() % 3; m > 0 && n + 1 < 4096 && n > 0; m--) {
				size_t at = rnd() % n;
				char c = bytes[rnd() % (sizeof bytes - 1)];
				switch (rnd() % 3) {
				case 0: text[at] = c; break;
				case 1:
					if (!(text = realloc(text, n + 2)))
						abort();
					memmove(text + at + 1, text + at, n - at + 1);
					text[at] = c;
					n++;
					break;
				default:
					memmove(text + at, text + at + 1, n - at);
					n--;
				}
			}
			if (reader_agree(text, n))
				taken++;
			else
				refused++;
		}
		free(text);
		bs_value_clear(&v);
	}
	CHECK(taken > 1000 && refused > 1000, "the mutants exercise both verdicts: %d taken, %d refused", taken,
	      refused);
	free(buf);
}

int main(void)
{
	test_values();
	test_ids();
	test_seed_round_trip();
	test_msgpack();
	test_body_fixtures();
	test_body_stored();
	test_body_limits();
	test_body_items();
	test_json_underflow();
	test_json_compact_writer();
	test_json_reader();
	test_float_short();
	test_json();
	test_binary_subtypes();
	test_yaml();
	test_yaml_random_strings();
	return t_done("codec");
}

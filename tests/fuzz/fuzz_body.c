/*
 * fuzz_body.c - libFuzzer target for the codecs: feeds each input to
 * bs_body_decode (as is, and deflated so the fuzzer reaches past zlib),
 * bs_msgpack_decode, bs_json_decode and bs_yaml_decode, and round-trips
 * whatever decodes through every face (MessagePack, body, JSON, YAML),
 * trapping when a round trip loses or changes anything.
 *
 * Build and run: tests/fuzz/run.sh [seconds]
 */
#include "bagstore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

enum { FROM_BODY, FROM_MSGPACK, FROM_JSON, FROM_YAML };
static const char *const origin_name[] = { "body", "msgpack", "json", "yaml" };

static void die(int origin, const char *what)
{
	fprintf(stderr, "fuzz_body: from %s: %s (%s)\n", origin_name[origin], what, bs_last_error());
	__builtin_trap();
}

static bool has_body_id(const bs_value_t *v)
{
	const bs_value_t *id = bs_map_get(v, "id");

	return v->type == BS_MAP && id && id->type == BS_BIN && id->v.s.len == 16 && !id->v.s.sub;
}

static void round_trips(const bs_value_t *v, int origin)
{
	bs_bytes_t b = { 0 }, b2 = { 0 };
	bs_value_t back;
	char *text = NULL;
	int rc;

	/* MessagePack: always encodes, reads back equal, and is canonical. */
	if (bs_msgpack_encode(&b, v) != 0)
		die(origin, "msgpack encode failed");
	if (bs_msgpack_decode(&back, b.ptr, b.len) != 0)
		die(origin, "msgpack decode of our own encoding failed");
	if (!bs_value_equal(v, &back))
		die(origin, "msgpack round trip differs");
	if (bs_msgpack_encode(&b2, &back) != 0 || b2.len != b.len || memcmp(b.ptr, b2.ptr, b.len) != 0)
		die(origin, "msgpack re-encoding differs");
	bs_value_clear(&back);
	bs_bytes_free(&b);
	bs_bytes_free(&b2);

	/* Body: when the value has an id, and it can be printed back (a key
	 * with a NUL byte, a map whose only key is "$uuid" and the like are
	 * refused, as JSON refuses them). */
	rc = bs_body_encode(&b, v);
	if (rc == 0 && !has_body_id(v))
		die(origin, "body encode took a value without an id");
	if (rc != 0 && has_body_id(v)) {
		char *t = NULL;
		int jrc = bs_json_encode(&t, v, 0);
		free(t);
		if (rc != BS_EINVAL || jrc != BS_EINVAL)
			die(origin, "body encode refused a value with an id that JSON prints");
	}
	if (rc == 0) {
		if (bs_body_decode(&back, b.ptr, b.len) != 0)
			die(origin, "body decode of our own encoding failed");
		if (!bs_value_equal(v, &back))
			die(origin, "body round trip differs");
		bs_value_clear(&back);
	}
	bs_bytes_free(&b);

	/* JSON: may refuse a map whose only key is "$uuid" and the like, or a
	 * key with a NUL byte, but never what came from JSON. */
	rc = bs_json_encode(&text, v, origin == FROM_JSON ? BS_JSON_PRETTY : 0);
	if (rc == 0) {
		if (bs_json_decode(&back, text, strlen(text), "fuzz.json") != 0)
			die(origin, "json decode of our own encoding failed");
		if (!bs_value_equal(v, &back))
			die(origin, "json round trip differs");
		bs_value_clear(&back);
	} else if (origin == FROM_JSON || rc != BS_EINVAL) {
		die(origin, "json encode failed");
	}
	free(text);
	text = NULL;

	/* YAML: always encodes and reads back equal. */
	if (bs_yaml_encode(&text, v) != 0)
		die(origin, "yaml encode failed");
	if (bs_yaml_decode(&back, text, strlen(text), "fuzz.yaml") != 0) {
		fprintf(stderr, "---- yaml ----\n%s\n----\n", text);
		die(origin, "yaml decode of our own encoding failed");
	}
	if (!bs_value_equal(v, &back)) {
		fprintf(stderr, "---- yaml ----\n%s\n----\n", text);
		die(origin, "yaml round trip differs");
	}
	bs_value_clear(&back);
	free(text);
}

static void expect_error(int rc, const bs_value_t *v, int origin, int code)
{
	if (rc != code && rc != BS_ENOMEM)
		die(origin, "unexpected error code");
	if (v->type != BS_NIL)
		die(origin, "out not NIL after an error");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bs_value_t v;
	int rc;

	rc = bs_body_decode(&v, data, size);
	if (rc == 0)
		round_trips(&v, FROM_BODY);
	else
		expect_error(rc, &v, FROM_BODY, BS_ECORRUPT);
	bs_value_clear(&v);

	if (size < 65536) {
		uLongf zlen = compressBound(size);
		uint8_t *z = malloc(zlen);

		if (z && compress2(z, &zlen, data, size, 1) == Z_OK) {
			rc = bs_body_decode(&v, z, zlen);
			if (rc == 0)
				round_trips(&v, FROM_BODY);
			else
				expect_error(rc, &v, FROM_BODY, BS_ECORRUPT);
			bs_value_clear(&v);
		}
		free(z);
	}

	rc = bs_msgpack_decode(&v, data, size);
	if (rc == 0)
		round_trips(&v, FROM_MSGPACK);
	else
		expect_error(rc, &v, FROM_MSGPACK, BS_ECORRUPT);
	bs_value_clear(&v);

	rc = bs_json_decode(&v, (const char *)data, size, "fuzz");
	if (rc == 0)
		round_trips(&v, FROM_JSON);
	else
		expect_error(rc, &v, FROM_JSON, BS_EINVAL);
	bs_value_clear(&v);

	rc = bs_yaml_decode(&v, (const char *)data, size, "fuzz");
	if (rc == 0)
		round_trips(&v, FROM_YAML);
	else
		expect_error(rc, &v, FROM_YAML, BS_EINVAL);
	bs_value_clear(&v);
	return 0;
}

/*
 * fuzz_jsonl.c - libFuzzer target for JSON Lines as `put` reads them and
 * `export` writes them: the input is split into lines, each decoded with
 * bs_json_decode; whatever decodes is written back compact (export's form)
 * and pretty, each must decode to the same value, and the compact form must
 * be one line. The whole input is also decoded as one document (put's
 * pretty-printed object). Refusals are BS_EINVAL with the value left NIL.
 * Every text is also read by the reference reader through jansson
 * (bs__json_decode_jansson): the same verdict, and the same value when
 * taken (the differences allowed are test_codec's: a number too small for
 * a double that jansson does not check, a NUL byte jansson drops after a
 * number or a true, false or null).
 *
 * Build and run: tests/fuzz/run.sh [seconds]; replayed by make quick.
 */
#include "bagstore.h"
#include "codec_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, const char *text)
{
	fprintf(stderr, "fuzz_jsonl: %s (%s)\n", what, bs_last_error());
	if (text)
		fprintf(stderr, "---- json ----\n%s\n----\n", text);
	__builtin_trap();
}

static void one(const char *p, size_t n)
{
	bs_value_t v, back, ref;
	char *text = NULL;
	int rc = bs_json_decode(&v, p, n, "fuzz.jsonl:1");
	bool missed = rc != 0 && bs__json_jansson_misses(p, n, bs_last_error());
	int rrc = bs__json_decode_jansson(&ref, p, n, "fuzz.jsonl:1");

	if (rc == 0 && rrc != 0)
		die("the reader takes what jansson refuses", NULL);
	if (rc != 0 && rrc == 0 && !missed)
		die("the reader refuses what jansson takes", NULL);
	if (rc == 0 && !bs_value_equal(&v, &ref))
		die("the reader and jansson read different values", NULL);
	bs_value_clear(&ref);

	if (rc != 0) {
		if (rc != BS_EINVAL && rc != BS_ENOMEM)
			die("unexpected error code", NULL);
		if (v.type != BS_NIL)
			die("value not NIL after an error", NULL);
		return;
	}
	for (int pretty = 0; pretty <= 1; pretty++) {
		if (bs_json_encode(&text, &v, pretty ? BS_JSON_PRETTY : 0) != 0)
			die("encoding what was decoded failed", NULL);
		if (!pretty && strchr(text, '\n'))
			die("the compact form is not one line", text);
		if (bs_json_decode(&back, text, strlen(text), "fuzz.jsonl:2") != 0)
			die("our own encoding does not decode", text);
		if (!bs_value_equal(&v, &back))
			die("the round trip differs", text);
		bs_value_clear(&back);
		free(text);
		text = NULL;
	}
	bs_value_clear(&v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		one(p, n);
		p += n + 1;
	}
	one((const char *)data, size);
	return 0;
}

/*
 * fuzz_yaml.c - libFuzzer target for YAML bodies, what an operator's
 * $EDITOR hands back to the console: bs_yaml_decode of the input; whatever
 * decodes is written back with bs_yaml_encode and must decode to the same
 * value. A refusal is BS_EINVAL (or BS_ECORRUPT past the limits) with the
 * value left NIL.
 *
 * Build and run: tests/fuzz/run.sh [seconds]; replayed by make quick.
 */
#include "bagstore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, const char *text)
{
	fprintf(stderr, "fuzz_yaml: %s (%s)\n", what, bs_last_error());
	if (text)
		fprintf(stderr, "---- yaml ----\n%s\n----\n", text);
	__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bs_value_t v, back;
	char *text = NULL;
	int rc = bs_yaml_decode(&v, (const char *)data, size, "fuzz.yaml");

	if (rc != 0) {
		if (rc != BS_EINVAL && rc != BS_ECORRUPT && rc != BS_ENOMEM)
			die("unexpected error code", NULL);
		if (v.type != BS_NIL)
			die("value not NIL after an error", NULL);
		return 0;
	}
	if (bs_yaml_encode(&text, &v) != 0)
		die("encoding what was decoded failed", NULL);
	if (bs_yaml_decode(&back, text, strlen(text), "fuzz.yaml") != 0)
		die("our own encoding does not decode", text);
	if (!bs_value_equal(&v, &back))
		die("the round trip differs", text);
	bs_value_clear(&back);
	bs_value_clear(&v);
	free(text);
	return 0;
}

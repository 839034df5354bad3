/*
 * fuzz_config.c - libFuzzer target for the configuration parser: each input
 * is a configuration file's text for bs_config_parse. A configuration is
 * untrusted input as much as a body: whatever it says, the parser accepts
 * it or refuses it with BS_ECONFIG and a FILE:LINE:COL message, and never
 * crashes, leaks or leaves *out set on a refusal.
 *
 * Build and run: tests/fuzz/run.sh [seconds]; replayed by make quick.
 */
#include "bagstore.h"

#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bs_config_t *cfg = NULL;
	int rc = bs_config_parse(&cfg, (const char *)data, size, "fuzz.yaml");

	if (rc == 0) {
		if (!cfg || cfg->nshards < 1) {
			fprintf(stderr, "fuzz_config: accepted without a shard\n");
			__builtin_trap();
		}
	} else {
		if (cfg) {
			fprintf(stderr, "fuzz_config: refused (%d) but *out is set\n", rc);
			__builtin_trap();
		}
		if (rc != BS_ECONFIG && rc != BS_ENOMEM) {
			fprintf(stderr, "fuzz_config: unexpected code %d: %s\n", rc, bs_last_error());
			__builtin_trap();
		}
		if (rc == BS_ECONFIG && strncmp(bs_last_error(), "fuzz.yaml", 9) != 0) {
			fprintf(stderr, "fuzz_config: a refusal that does not name the file: %s\n", bs_last_error());
			__builtin_trap();
		}
	}
	bs_config_free(cfg);
	return 0;
}

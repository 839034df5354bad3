/*
 * console_stub.c - stands in for the console until it is written; the real
 * console replaces this file.
 */
#include <stdio.h>

#include "console.h"

int bs_console_main(bs_store_t *st, const bs_config_t *cfg, int argc, char **argv)
{
	(void)st;
	(void)cfg;
	(void)argc;
	(void)argv;
	fprintf(stderr, "bagstore: the console is not built yet; try `bagstore --help`\n");
	return 2;
}

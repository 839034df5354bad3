/*
 * test_program.c - the program's pieces that need no server (make quick):
 * the command line's option parser (tui/cli/opt.c), its command table and
 * exit codes (tui/cli/commands.c), and the formatting both rooms share
 * (tui/common/fmt.c). Linked with the program's objects but tui/main.c.
 */
#include "cli.h"
#include "fmt.h"
#include "t.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ options */

static const char *limit, *index_name;
static bool json, yes;
static const cli_opt_t opts[] = {
	{ "limit", &limit, NULL }, { "index", &index_name, NULL }, { "json", NULL, &json },
	{ "yes", NULL, &yes },     { NULL, NULL, NULL },
};

/* cli_parse over words (NULL-terminated), min..max positionals. */
static int parse(cli_args_t *a, int min, int max, ...)
{
	static char *argv[16];
	static char store[16][64];
	cli_ctx_t ctx = { .cmd = cli_find(NULL, "query") };
	va_list ap;
	int argc = 0;
	const char *w;

	limit = index_name = NULL;
	json = yes = false;
	va_start(ap, max);
	while ((w = va_arg(ap, const char *)) && argc < 15) {
		snprintf(store[argc], sizeof store[argc], "%s", w);
		argv[argc] = store[argc];
		argc++;
	}
	va_end(ap);
	argv[argc] = NULL;
	memset(a, 0, sizeof *a);
	return cli_parse(a, &ctx, argc, argv, opts, min, max);
}

static void test_options(void)
{
	cli_args_t a;

	CHECK_OK(parse(&a, 1, -1, "idx", "--limit", "5", "p=1", "--json", NULL));
	CHECK(a.n == 2 && !strcmp(a.v[0], "idx") && !strcmp(a.v[1], "p=1"), "options anywhere among positionals");
	CHECK(limit && !strcmp(limit, "5") && json && !yes, "--limit 5 and --json");
	cli_args_free(&a);

	CHECK_OK(parse(&a, 0, -1, "--limit=7", "--index=by_x", NULL));
	CHECK(limit && !strcmp(limit, "7") && index_name && !strcmp(index_name, "by_x") && a.n == 0, "--name=VALUE");
	cli_args_free(&a);

	CHECK_OK(parse(&a, 0, -1, "--", "--json", "-", NULL));
	CHECK(!json && a.n == 2 && !strcmp(a.v[0], "--json") && !strcmp(a.v[1], "-"),
	      "-- ends the options; - alone is positional");
	cli_args_free(&a);

	CHECK_ERR(parse(&a, 0, -1, "--nosuch", NULL), BS_EINVAL);
	CHECK(strstr(bs_last_error(), "nosuch") != NULL, "an unknown option is named: %s", bs_last_error());
	cli_args_free(&a);
	CHECK_ERR(parse(&a, 0, -1, "--limit", NULL), BS_EINVAL);
	CHECK(strstr(bs_last_error(), "limit") != NULL, "a missing value is named: %s", bs_last_error());
	cli_args_free(&a);
	CHECK_ERR(parse(&a, 0, -1, "--json=yes", NULL), BS_EINVAL);
	cli_args_free(&a);
	CHECK_ERR(parse(&a, 2, 2, "one", NULL), BS_EINVAL);
	cli_args_free(&a);
	CHECK_ERR(parse(&a, 0, 1, "one", "two", NULL), BS_EINVAL);
	cli_args_free(&a);

	/* --help prints the command's help (to stdout, here /dev/null) */
	fflush(stdout);
	int saved = dup(1);
	FILE *devnull = freopen("/dev/null", "w", stdout);
	int rc = parse(&a, 1, 1, "--help", NULL);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	(void)devnull;
	CHECK(rc == CLI_HELP_SHOWN, "--help: %d", rc);
	cli_args_free(&a);
}

static void test_commands(void)
{
	CHECK(cli_exit_code(0) == 0, "0 is 0");
	CHECK(cli_exit_code(BS_EINVAL) == 2 && cli_exit_code(BS_ECONFIG) == 2, "usage and configuration are 2");
	CHECK(cli_exit_code(BS_ENOTFOUND) == 1 && cli_exit_code(BS_EUNREACHABLE) == 1 &&
	              cli_exit_code(BS_EREADONLY) == 1 && cli_exit_code(BS_ESQL) == 1,
	      "the rest are 1");
	CHECK(cli_find(NULL, "put") && cli_find("index", "create") && cli_find("reshard", "start"), "commands found");
	CHECK(!cli_find(NULL, "nosuch") && !cli_find("index", "put"), "unknown commands are not");
	CHECK(cli_is_group("index") && cli_is_group("backfill") && !cli_is_group("put"), "groups");
	CHECK(cli_find("index", "drop")->dangerous && !cli_find(NULL, "get")->dangerous, "dangerous rows");
}

/* ------------------------------------------------------------ formatting */

static void test_fmt(void)
{
	char b[64];

	CHECK_STR(fmt_count(b, sizeof b, 1204331), "1,204,331");
	CHECK_STR(fmt_count(b, sizeof b, 0), "0");
	CHECK_STR(fmt_count(b, sizeof b, 999), "999");
	CHECK_STR(fmt_count(b, sizeof b, 1000), "1,000");
	CHECK_STR(fmt_count(b, sizeof b, -1234567), "-1,234,567");
	CHECK_STR(fmt_count(b, 6, 1204331), "1,204");

	CHECK_STR(fmt_bytes(b, sizeof b, 512), "512 B");
	CHECK_STR(fmt_bytes(b, sizeof b, 256 * 1024), "256.0 KiB");
	CHECK_STR(fmt_bytes(b, sizeof b, (int64_t)(12.3 * 1024 * 1024)), "12.3 MiB");
	CHECK_STR(fmt_bytes(b, sizeof b, -1), "-");

	/* a share that is not 0% or 100% never prints as either */
	CHECK_STR(fmt_share(b, sizeof b, 10, 2000), "<1%");
	CHECK_STR(fmt_share(b, sizeof b, 1, 5000), "<1%");
	CHECK_STR(fmt_share(b, sizeof b, 0, 5000), "0%");
	CHECK_STR(fmt_share(b, sizeof b, 1990, 2000), ">99%");
	CHECK_STR(fmt_share(b, sizeof b, 5000, 5000), "100%");
	CHECK_STR(fmt_share(b, sizeof b, 1, 3), "33%");
	CHECK_STR(fmt_share(b, sizeof b, 1, 0), "-");
	CHECK_STR(fmt_iso_utc(b, sizeof b, 1714564800000000LL), "2024-05-01T12:00:00Z");
	CHECK_STR(fmt_iso_utc(b, sizeof b, 0), "-");
	CHECK_STR(fmt_time(b, sizeof b, 0), "-");

	CHECK_STR(fmt_secs(b, sizeof b, 4.2), "4.2s");
	CHECK_STR(fmt_secs(b, sizeof b, 37), "37s");
	CHECK_STR(fmt_secs(b, sizeof b, 9.96), "10s"); /* not 10.0s: one decimal only under 10 s */
	CHECK_STR(fmt_secs(b, sizeof b, 119.7), "1m59s"); /* not 120s */
	CHECK_STR(fmt_secs(b, sizeof b, 725), "12m05s");
	CHECK_STR(fmt_secs(b, sizeof b, 3 * 3600 + 7 * 60), "3h07m");
	CHECK_STR(fmt_secs(b, sizeof b, 2 * 86400 + 4 * 3600), "2d04h");
	CHECK_STR(fmt_secs(b, sizeof b, -1), "-");
	CHECK_STR(fmt_age(b, sizeof b, 0), "never");

	int r[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12 };
	CHECK_STR(fmt_ranges(b, sizeof b, r, 11), "0-9,12");
	int many[400];
	for (int i = 0; i < 400; i++)
		many[i] = 2 * i;
	fmt_ranges(b, 24, many, 400);
	CHECK(strlen(b) < 24 && strstr(b, ",...") != NULL, "cut with ,... to fit: %s", b);

	CHECK_STR(fmt_quote(b, sizeof b, "index_likes"), "'index_likes'");
	bs_tls_state_t off = { 0 };
	CHECK_STR(fmt_tls(b, sizeof b, &off, false), "off");
	CHECK_STR(fmt_tls(b, sizeof b, &off, true), "PLAINTEXT");
}

int main(void)
{
	test_options();
	test_commands();
	test_fmt();
	return t_done("program");
}

/*
 * main.c - the program's entry, and the only file that sees both rooms:
 * global options, then a command of the command line (tui/cli/), or the
 * console (tui/console/) on a terminal when none is given.
 *
 * Exit status: 0 success, 1 the operation failed, 2 usage or configuration
 * error (see cli_exit_code). Errors go to stderr as "bagstore: MESSAGE",
 * MESSAGE being the engine's last error, unchanged.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bagstore.h"
#include "cli.h"
#include "console.h"
#include "fmt.h"

#ifndef BAGSTORE_VERSION
#define BAGSTORE_VERSION "0.1.0"
#endif

static void report(int rc)
{
	const char *msg = bs_last_error();

	fprintf(stderr, "bagstore: %s\n", msg[0] ? msg : bs_strerror(rc));
}

/* "bagstore: MESSAGE" and the usage of group (NULL: every command) on
 * stderr; returns the exit status of a usage error. */
__attribute__((format(printf, 2, 3))) static int usage_error(const char *group, const char *fmt, ...)
{
	va_list ap;

	fputs("bagstore: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	cli_print_usage(stderr, group);
	return 2;
}

/* Set by --headless (console.h): the console runs without a terminal. */
static bool console_headless;
static const char *console_opt; /* the first console option given, if any */
/* Set by --trace: every statement a command sends, on stderr. */
static bool trace;

/* No subcommand: the console on a terminal, usage otherwise. */
static int run_console(cli_ctx_t *ctx, int argc, char **argv)
{
	int rc;

	if (!console_headless && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)))
		return usage_error(NULL, "no command given");
	/* the configuration only: the console opens a store per lane */
	if ((rc = cli_load_config(ctx)) < 0) {
		report(rc);
		return cli_exit_code(rc);
	}
	return bs_console_main(ctx->cfg, argc, argv);
}

/* The global options (before the command) into ctx; *next: where the
 * command is (argc when none). Returns -1 to go on, else the exit status
 * (after --help, --version or a usage error). */
static int global_options(int *next, cli_ctx_t *ctx, int argc, char **argv)
{
	char q[1024];
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (a[0] != '-' || a[1] == '\0')
			break;
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (strcmp(a, "-c") == 0) {
			if (++i == argc)
				return usage_error(NULL, "option %s needs a FILE", a);
			ctx->config_path = argv[i];
		} else if (strncmp(a, "-c", 2) == 0) {
			ctx->config_path = a + 2;
		} else if (strcmp(a, "--read-only") == 0) {
			ctx->read_only = true;
		} else if (strcmp(a, "--trace") == 0) {
			trace = true;
		} else if (bs_console_option(a) == 2) {
			/* the console's own option; bs_console_main reads it from argv */
			if (++i == argc)
				return usage_error(NULL, "option %s needs a value", a);
			console_headless |= strcmp(a, "--headless") == 0;
			if (!console_opt)
				console_opt = a;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			cli_print_usage(stdout, NULL);
			return 0;
		} else if (strcmp(a, "--version") == 0) {
			printf("bagstore %s\n", BAGSTORE_VERSION);
			return 0;
		} else {
			return usage_error(NULL, "unknown option %s", fmt_quote(q, sizeof q, a));
		}
	}
	*next = i;
	return -1;
}

/* The command at argv[*i]: a group and its subcommand, or a top-level
 * name; *i moves past it. NULL when there is none to run, with *status
 * the exit status (a usage error, or a group's --help). */
static const cli_cmd_t *find_command(int *status, int *i, int argc, char **argv)
{
	const char *group = argv[*i];
	const cli_cmd_t *cmd;
	char q[1024];

	if (!cli_is_group(group)) {
		if (!(cmd = cli_find(NULL, argv[*i])))
			*status = usage_error(NULL, "unknown command %s", fmt_quote(q, sizeof q, argv[*i]));
		*i += 1;
		return cmd;
	}
	if (*i + 1 == argc) {
		*status = usage_error(group, "%s: missing subcommand", group);
		return NULL;
	}
	if (strcmp(argv[*i + 1], "--help") == 0 || strcmp(argv[*i + 1], "-h") == 0) {
		cli_print_usage(stdout, group);
		*status = 0;
		return NULL;
	}
	if (!(cmd = cli_find(group, argv[*i + 1])))
		*status = usage_error(group, "%s: unknown subcommand %s", group, fmt_quote(q, sizeof q, argv[*i + 1]));
	*i += 2;
	return cmd;
}

/* Run a command's handler; its error and, for a usage error, its usage on
 * stderr. Returns the exit status. */
static int run_command(cli_ctx_t *ctx, const cli_cmd_t *cmd, int argc, char **argv)
{
	int rc;

	ctx->cmd = cmd;
	rc = cmd->run(ctx, argc, argv);
	if (rc < 0) {
		report(rc);
		if (ctx->show_usage) {
			fputs("usage: ", stderr);
			cli_print_usage_line(stderr, cmd);
			fputc('\n', stderr);
		}
	}
	return cli_exit_code(rc);
}

int main(int argc, char **argv)
{
	cli_ctx_t ctx;
	const cli_cmd_t *cmd;
	int i, status;

	memset(&ctx, 0, sizeof ctx);
	if ((status = global_options(&i, &ctx, argc, argv)) >= 0)
		return status;
	if (i == argc) {
		/* the console draws on the terminal: its :log lists its statements */
		if (trace)
			return usage_error(NULL, "--trace is for a command (the console's :log lists its statements)");
		status = run_console(&ctx, argc, argv);
	} else {
		if (!(cmd = find_command(&status, &i, argc, argv)))
			return status;
		/* the console's options, given to a command, would do nothing */
		if (console_opt) {
			fprintf(stderr, "bagstore: %s is the console's option: `%s%s%s` runs no console\n", console_opt,
			        cmd->group ? cmd->group : "", cmd->group ? " " : "", cmd->name);
			return 2;
		}
		/* before any store is opened: every store starts with it */
		if (trace)
			bs_trace_set(cli_trace_print, NULL);
		status = run_command(&ctx, cmd, argc - i, argv + i);
	}
	/* Output that did not reach its reader is a failure too. */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "bagstore: writing to stdout: %s\n", strerror(errno));
		if (status == 0)
			status = 1;
	}
	cli_ctx_clear(&ctx);
	return status;
}

/*
 * cli.h - the command line's subcommands (`bagstore SUBCOMMAND ...`).
 *
 * Each subcommand is one row of a table (cli_commands[]): its name, its
 * handler, its usage text and whether it changes data. main.c finds the row,
 * --help output is generated from the table, and the read-only rule is
 * applied in one place (cli_open) from the row's `dangerous` flag.
 *
 * Handlers return 0 or a negative BS_E* code with the message in
 * bs_last_error(); main.c prints it and turns the code into an exit status
 * with cli_exit_code(). The CLI speaks to the store only through bagstore.h.
 */
#ifndef BS_CLI_H
#define BS_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "bagstore.h"

typedef struct cli_ctx cli_ctx_t;
typedef struct cli_cmd cli_cmd_t;

struct cli_cmd {
	const char *group;   /* "index" for `index list`, NULL for top level */
	const char *name;
	int (*run)(cli_ctx_t *ctx, int argc, char **argv);
	const char *args;    /* usage after the name: "ID [--yaml]" */
	const char *summary; /* one line */
	const char *help;    /* options and details, for --help; may be NULL */
	bool dangerous;      /* changes data: refused in read-only mode */
};

/* What main.c hands a handler. The store is opened on demand (cli_open),
 * so `--help` and argument errors never need a configuration. */
struct cli_ctx {
	const char *config_path; /* -c FILE, or NULL for the engine's default */
	bool read_only;          /* --read-only */
	const cli_cmd_t *cmd;    /* the row being run */
	bool show_usage;         /* set by cli_usage_error: main prints usage */
	bs_config_t *cfg;        /* owned; freed by cli_ctx_clear */
	bs_store_t *st;          /* owned; freed by cli_ctx_clear */
};

/* The table, terminated by a row with name NULL. */
extern const cli_cmd_t cli_commands[];

/* Find a command: group NULL for a top-level name. NULL when unknown. */
const cli_cmd_t *cli_find(const char *group, const char *name);
/* Is `name` a group (like "index")? */
bool cli_is_group(const char *name);

/* "bagstore [-c FILE] index drop NAME --yes" (no newline) to f. */
void cli_print_usage_line(FILE *f, const cli_cmd_t *cmd);
/* The usage and help of one command. */
void cli_print_command_help(FILE *f, const cli_cmd_t *cmd);
/* Every command of a group (group NULL: the whole program's usage). */
void cli_print_usage(FILE *f, const char *group);

/* Load the configuration (once) into ctx->cfg, applying --read-only. */
int cli_load_config(cli_ctx_t *ctx);
/* Load the configuration and open the store, once; refuses a dangerous
 * command in read-only mode with BS_EREADONLY. */
int cli_open(cli_ctx_t *ctx);
void cli_ctx_clear(cli_ctx_t *ctx);

/* Record a usage error (BS_EINVAL, and ask main to print the usage). */
int cli_usage_error(cli_ctx_t *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The one mapping from engine codes to exit statuses:
 * 0 ok; 2 usage or configuration (BS_EINVAL, BS_ECONFIG); 1 otherwise. */
int cli_exit_code(int rc);

#endif

/*
 * cli.h - the command line (`bagstore COMMAND ...`): the context a command
 * runs in, the command table, and the plumbing every command shares: one
 * option parser (opt.c), one output module (out.c: text tables, JSON) and
 * the table's services (commands.c: lookup, usage and --help generated from
 * the table, opening the store, exit codes).
 *
 * Adding a command: write its handler in the cmd_*.c file of its group
 * (cmd_store.c init, shards, grants; cmd_entity.c put, get, delete, query;
 * cmd_explain.c explain; cmd_export.c export; cmd_index.c index
 * list/create/drop; cmd_cleaner.c cleaner, verify, backfill, lag, workers;
 * cmd_census.c properties; cmd_audit.c audit; cmd_reshard.c buckets,
 * reshard; cmd_throttle.c throttle; cmd_completion.c completion), declare it below, and add its row to
 * cli_commands[] in commands.c. The row gives its usage, --help text and whether it changes
 * data; --help output and the read-only rule (cli_open) come from the row.
 *
 * A handler parses its arguments with cli_parse(), asks the engine through
 * bagstore.h, writes results on stdout and returns 0 or a negative BS_E*
 * code with the message in bs_last_error(); main.c prints the message and
 * maps the code with cli_exit_code(). Nothing here calls the console.
 */
#ifndef BS_CLI_H
#define BS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "bagstore.h"

typedef struct cli_ctx cli_ctx_t;
typedef struct cli_cmd cli_cmd_t;

/* A handler: argv[0] is the first argument after the command's name. */
typedef int (*cli_run_fn)(cli_ctx_t *ctx, int argc, char **argv);

/* One row of the command table. */
struct cli_cmd {
	const char *group; /* "index" for `index list`, NULL for top level */
	const char *name;
	cli_run_fn run;
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

/* ------------------------------------------------------------ commands.c */

/* Every command, in the table's order, ending with a row of name NULL
 * (what cmd_completion.c generates its scripts from). */
const cli_cmd_t *cli_command_table(void);
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
/* A zeroed array of one item of `size` bytes per shard of the open store;
 * NULL, with the error set (BS_ENOMEM), when out of memory. */
void *cli_per_shard_alloc(cli_ctx_t *ctx, size_t size);

/* Record a usage error (BS_EINVAL, and ask main to print the usage). */
int cli_usage_error(cli_ctx_t *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The one mapping from engine codes to exit statuses:
 * 0 ok; 2 usage or configuration (BS_EINVAL, BS_ECONFIG); 1 otherwise. */
int cli_exit_code(int rc);

/* ------------------------------------------------------------ opt.c */

/* One option of a command: --name, or --name VALUE / --name=VALUE when
 * value is non-NULL. flag (may be NULL) is set when the option is given. */
typedef struct {
	const char *name;
	const char **value;
	bool *flag;
} cli_opt_t;

/* The positional arguments (pointers into argv). */
typedef struct {
	char **v;
	int n;
} cli_args_t;

/* cli_parse's result when it printed --help: the handler returns 0. */
#define CLI_HELP_SHOWN 1

/*
 * Parse a command's arguments. Options may come anywhere; "--" ends them;
 * "-" alone is a positional argument; --help or -h prints the command's help.
 * opts ends with a row of name NULL (opts NULL: no options). Between min and
 * max positionals are accepted (max < 0: any). Returns 0, CLI_HELP_SHOWN, or
 * BS_EINVAL through cli_usage_error. The caller frees *args with
 * cli_args_free whatever the result.
 */
int cli_parse(cli_args_t *args, cli_ctx_t *ctx, int argc, char **argv, const cli_opt_t *opts, int min, int max);
void cli_args_free(cli_args_t *args);

/* ------------------------------------------------------------ out.c */

/* A text table: left-aligned columns two spaces apart, right-aligned where
 * the `right` bit is set, and an optional tail after a row's last cell. */
#define CLI_TABLE_MAX_COLS 16

typedef struct {
	int ncols;
	unsigned right;
	size_t nrows, cap;
	char **cells; /* nrows * ncols, owned */
	char **tails; /* nrows, owned, NULL for none */
} cli_table_t;

/* Add a row of t->ncols cells (NULL cells print as "-"). */
int cli_table_add(cli_table_t *t, const char *const *cells, const char *tail);
void cli_table_print(FILE *f, const cli_table_t *t);
void cli_table_free(cli_table_t *t);

/* One row of a table written by a cli_row_fn: cells[c] points into buf[c]
 * or at text that outlives the table's printing (NULL prints "-"); tail
 * likewise (into tail_buf), NULL or "" for none. */
typedef struct {
	const char *cells[CLI_TABLE_MAX_COLS];
	const char *tail;
	char buf[CLI_TABLE_MAX_COLS][96];
	char tail_buf[128];
} cli_row_t;
typedef void (*cli_row_fn)(cli_row_t *r, const void *items, int k);
/* A table of ncols columns (right as in cli_table_t): head, then the row
 * row() writes of each of items 0..n-1, printed on stdout. */
int cli_table_rows(const char *const *head, int ncols, unsigned right, int n, cli_row_fn row, const void *items);

/* A JSON string, null for NULL or "" (and a placeholder for text that is
 * not UTF-8, so that a server's message never loses the document). */
json_t *cli_jstr(const char *s);
/* The document, indented, on stdout (the caller keeps its reference). */
int cli_json_print(json_t *doc);
/* An entity as one line of JSON on stdout. */
int cli_print_bag(const bs_value_t *bag);
/* What a listing says after its rows when shards did not answer (exit 1):
 * "N shard(s) did not answer: WHAT (FIRST)", FIRST the first one's message
 * (it names the shard and carries MySQL's); BS_EUNREACHABLE. */
int cli_unreachable(int n, const char *what, const char *first);
/* The statement trace (--trace), a bs_trace_fn: one line on stderr per
 * statement, "trace: SHARD TIME ROWS[ error N (MESSAGE)]: SQL". */
void cli_trace_print(void *arg, const bs_trace_t *t);

/* ------------------------------------------------------------ handlers */

int cli_cmd_init(cli_ctx_t *ctx, int argc, char **argv); /* cmd_store.c */
int cli_cmd_shards(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_put(cli_ctx_t *ctx, int argc, char **argv); /* cmd_entity.c */
int cli_cmd_get(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_delete(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_query(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_explain(cli_ctx_t *ctx, int argc, char **argv);    /* cmd_explain.c */
int cli_cmd_export(cli_ctx_t *ctx, int argc, char **argv);     /* cmd_export.c */
int cli_cmd_completion(cli_ctx_t *ctx, int argc, char **argv); /* cmd_completion.c */
int cli_cmd_index_list(cli_ctx_t *ctx, int argc, char **argv); /* cmd_index.c */
int cli_cmd_index_create(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_index_drop(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_cleaner(cli_ctx_t *ctx, int argc, char **argv); /* cmd_cleaner.c */
int cli_cmd_verify(cli_ctx_t *ctx, int argc, char **argv);
/* queued backfill jobs (moves: a reshard's moves) and no live worker in the
 * registry to run them: a note on f saying how to start one (cmd_cleaner.c) */
void cli_queued_note(cli_ctx_t *ctx, FILE *f, int queued, bool moves);
int cli_cmd_backfill_list(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_backfill_pause(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_backfill_resume(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_backfill_cancel(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_lag(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_grants(cli_ctx_t *ctx, int argc, char **argv);     /* cmd_store.c */
int cli_cmd_properties(cli_ctx_t *ctx, int argc, char **argv); /* cmd_census.c */
int cli_cmd_audit(cli_ctx_t *ctx, int argc, char **argv);      /* cmd_audit.c */
/* Record a change made from the command line in the audit log (cmd_audit.c;
 * the detail gains "from the command line"). The change is made already:
 * a row that cannot be written is a warning on stderr, not an error. */
void cli_audit(cli_ctx_t *ctx, const char *action, const char *target, const char *detail);
/* An entity change with its images; detail as it is (it names the command
 * line itself). */
void cli_audit_entity(cli_ctx_t *ctx, const char *action, const bs_audit_entity_t *e, const char *detail);
int cli_cmd_workers(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_buckets(cli_ctx_t *ctx, int argc, char **argv); /* cmd_reshard.c */
int cli_cmd_reshard_plan(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_reshard_start(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_reshard_status(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_reshard_pause(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_reshard_resume(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_reshard_cancel(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_throttle(cli_ctx_t *ctx, int argc, char **argv); /* cmd_throttle.c */

#endif

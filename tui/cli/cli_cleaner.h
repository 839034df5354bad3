/*
 * cli_cleaner.h - the cleaner's subcommands: cleaner, verify, backfill
 * list/pause/resume/cancel and lag. Rows for them sit in cli_commands[]
 * (cli.c); the handlers live in cli_cleaner.c.
 */
#ifndef BS_CLI_CLEANER_H
#define BS_CLI_CLEANER_H

#include "cli.h"

int cli_cmd_cleaner(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_verify(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_backfill_list(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_backfill_pause(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_backfill_resume(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_backfill_cancel(cli_ctx_t *ctx, int argc, char **argv);
int cli_cmd_lag(cli_ctx_t *ctx, int argc, char **argv);

/* The rows of cli_commands[] for these, to paste into the table. */
#define CLI_CLEANER_COMMANDS \
	{NULL, "cleaner", cli_cmd_cleaner, "[--index NAME] [--once]", \
	 "backfill one index, or run the cleaner daemon (backfills and repair)", \
	 "  --index NAME   backfill NAME on every shard, then exit (a progress line on\n" \
	 "                 stderr when it is a terminal); the index becomes ready\n" \
	 "  --once         one pass of the daemon (pending backfills, one repair pass), then exit\n" \
	 "Without options: the daemon, until SIGTERM or SIGINT. Settings: `cleaner:` in\n" \
	 "the configuration (chunk_time, max_load, critical_load, max_replica_lag,\n" \
	 "repair_overlap, repair_interval). Any number of cleaners may run at once.\n", \
	 true}, \
	{NULL, "verify", cli_cmd_verify, "[--index NAME] [--repair] [--json]", \
	 "compare index rows with the bodies: missing, stale, orphaned rows", \
	 "  --index NAME   only this index (default: every index)\n" \
	 "  --repair       fix what is found\n" \
	 "  --json         a JSON array instead of text\n" \
	 "Exits 1 when drift remains.\n", \
	 false}, \
	{"backfill", "list", cli_cmd_backfill_list, "[--json]", \
	 "backfill jobs on every shard, with progress", \
	 "  --json   a JSON array instead of the table\n", \
	 false}, \
	{"backfill", "pause", cli_cmd_backfill_pause, "NAME", \
	 "pause the backfill of index NAME (honoured within one chunk)", NULL, true}, \
	{"backfill", "resume", cli_cmd_backfill_resume, "NAME", \
	 "resume a paused, stopped or cancelled backfill of index NAME", NULL, true}, \
	{"backfill", "cancel", cli_cmd_backfill_cancel, "NAME", \
	 "cancel the backfill of index NAME (the index stays building)", NULL, true}, \
	{NULL, "lag", cli_cmd_lag, "[--json]", \
	 "the repair loop's lag on every shard", \
	 "  --json   a JSON array instead of the table\n", \
	 false},

#endif

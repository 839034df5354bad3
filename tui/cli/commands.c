/*
 * commands.c - the command table (cli_commands[]: every command once, with
 * its usage, help text and `dangerous` flag) and what is derived from it:
 * lookup, the usage and --help texts, the read-only rule (cli_open, the
 * only reader of the flag); plus the context's store and configuration,
 * usage errors and the one mapping from engine codes to exit statuses.
 */
#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ the table */

static const cli_cmd_t cli_commands[] = {
	{ NULL, "init", cli_cmd_init, "", "create bagstore's tables and the configured indexes on every shard",
	  "Idempotent. Gives the store its bucket map (a store made by an older\n"
	  "bagstore migrates with no row moved), adds shards appended to the\n"
	  "configuration as members owning nothing, and records each shard's name\n"
	  "and the store's id. Later reads and writes through a configuration whose\n"
	  "shards disagree with the map (a shard's name, its store, a member missing\n"
	  "or not yet added) are refused (exit status 2).\n",
	  true },
	{ NULL, "shards", cli_cmd_shards, "[--json]", "status of every shard",
	  "  --json   a JSON array instead of the table\n"
	  "Exits 2 when any shard belongs to another shard list (FINGERPRINT\n"
	  "MISMATCH), or a shard appended to the list is not in the store's bucket\n"
	  "map yet (the others' MISMATCH: run `bagstore init` to add it), else 1 when\n"
	  "any shard is unreachable.\n",
	  false },
	{ NULL, "put", cli_cmd_put, "[FILE|-] [--batch N]", "store entities from one JSON object or JSON Lines",
	  "Reads FILE, or standard input for - or no argument. Prints each id as\n"
	  "32 hex digits, one a line, in input order. An object without \"id\" gets\n"
	  "a new one. Stops at the first bad line (FILE:LINE); the entities before\n"
	  "it stay written, it and the rest are not.\n"
	  "  --batch N   lines per batch (500): a batch's entities go to each shard\n"
	  "              in one transaction, every shard at once, their index rows\n"
	  "              batched per target shard. A shard that fails stores none of\n"
	  "              the batch's entities of its own; the others' are stored and\n"
	  "              printed.\n"
	  "On a terminal, a progress line on stderr: count, rate, ETA for a file.\n",
	  true },
	{ NULL, "get", cli_cmd_get, "ID [--yaml]", "print an entity as JSON (or YAML)",
	  "  --yaml   YAML (!uuid, !!binary) instead of one line of JSON\n"
	  "ID is 32 hex digits or the dashed form.\n",
	  false },
	{ NULL, "delete", cli_cmd_delete, "ID", "delete an entity", NULL, true },
	{ NULL, "query", cli_cmd_query, "INDEX PROP=VALUE... [--limit N]",
	  "entities matching through an index, newest first, as JSON Lines",
	  "  --limit N   at most N entities\n"
	  "Each PROP is one of the index's properties; VALUE is read per its type\n"
	  "(uuid: hex or dashed; int; float; bool: true/false; string; binary: hex).\n",
	  false },
	{ NULL, "explain", cli_cmd_explain, "[--index NAME] [--run] [--json] PROP=VALUE...",
	  "how a query would be answered: index, routing, estimates, statements",
	  "  --index NAME   through this index (default: the one `query` would pick, the\n"
	  "                 ready index holding every property with the fewest properties)\n"
	  "  --run          run the query too: index rows, entities, matches and time per\n"
	  "                 shard and step\n"
	  "  --json         a JSON document instead of the text\n"
	  "Names the index and why, or why none can answer with the census's suggestion of\n"
	  "one (its type and a backfill time from the last backfills' measured rate); one\n"
	  "shard (and the bucket) or every shard; MariaDB's EXPLAIN of step 1 per shard (~);\n"
	  "the statements of both steps as they are sent. Changes nothing.\n",
	  false },
	{ NULL, "export", cli_cmd_export,
	  "[--shard NAME] [--since TIME] [--order newest|added] [--index NAME PROP=VALUE...]",
	  "every entity as JSON Lines (the form get prints, what put reads)",
	  "  --shard NAME   only this shard's entities\n"
	  "  --since TIME   only those updated at or after TIME: unix seconds, or UTC\n"
	  "                 as 2026-11-23T03:00:00Z\n"
	  "  --order O      newest (default): newest first across shards;\n"
	  "                 added: shard after shard, each in insertion order\n"
	  "  --index NAME   only the entities matching PROP=VALUE... through the\n"
	  "                 ready index NAME (newest first)\n"
	  "Pages through each shard by key, never OFFSET; a corrupt body is named on\n"
	  "stderr and skipped (exit 1 at the end). A progress line on stderr on a\n"
	  "terminal. `bagstore export | bagstore -c OTHER put` copies a store.\n",
	  false },
	{ "index", "list", cli_cmd_index_list, "[--json]", "the index catalog, with estimated rows",
	  "  --json   a JSON array instead of the table\n"
	  "Exits 1 when a shard does not answer.\n",
	  false },
	{ "index", "create", cli_cmd_index_create, "NAME --on PROP:TYPE[,PROP:TYPE...] --shard-on PROP",
	  "create an index; the cleaner builds it",
	  "  --on SPEC        properties and types: uuid, string, string(N), int,\n"
	  "                   float, bool, binary(N)\n"
	  "  --shard-on PROP  the property whose value routes the index rows\n",
	  true },
	{ "index", "drop", cli_cmd_index_drop, "NAME --yes", "disable an index, then drop its tables on every shard",
	  "  --yes    required; without it, says what would be dropped and exits 2\n", true },
	{ NULL, "cleaner", cli_cmd_cleaner,
	  "[--index NAME | --once | --reshard] [--metrics HOST:PORT] [--web.config.file FILE] "
	  "[--log-format text|json] [--log-every S]",
	  "backfill one index, run the recorded moves, or run the cleaner daemon (backfills, moves and repair)",
	  "  --index NAME          backfill NAME on every shard, then exit (a progress line on\n"
	  "                        stderr when it is a terminal); the index becomes ready\n"
	  "  --once                one pass of the daemon (pending backfills, one repair pass), then exit\n"
	  "  --reshard             run the recorded moves of a reshard to completion, then exit\n"
	  "  --metrics HOST:PORT   the daemon serves Prometheus's /metrics there (cleaner.metrics);\n"
	  "                        an address that is not loopback needs a web configuration\n"
	  "                        (or cleaner.metrics_insecure: true)\n"
	  "  --web.config.file FILE  TLS and basic auth of /metrics, the exporters' web configuration\n"
	  "                        (cleaner.metrics_web_config); SIGHUP reads it again\n"
	  "  --log-format FORMAT   the daemon's log on stderr: text or json, one line per event\n"
	  "                        (cleaner.log_format; default text)\n"
	  "  --log-every S         seconds between a job's progress lines and between repair\n"
	  "                        summaries (cleaner.log_every; default 5)\n"
	  "Without --index, --once or --reshard: the daemon, until SIGTERM or SIGINT (it finishes the\n"
	  "chunks in hand and exits 0); SIGHUP reloads the `cleaner:` settings. It registers\n"
	  "in `bagstore workers`, speaks systemd's notify protocol when $NOTIFY_SOCKET is set,\n"
	  "and runs cleaner.hooks. Settings: `cleaner:` in the configuration (chunk_time,\n"
	  "max_load, critical_load, max_replica_lag, repair_overlap, repair_interval,\n"
	  "sleep_coef, max_fence, metrics, metrics_web_config, metrics_insecure, log_format,\n"
	  "log_every, hooks). Any number of cleaners\n"
	  "may run; the daemon runs a reshard's moves as it runs backfills.\n",
	  true },
	{ NULL, "verify", cli_cmd_verify, "[--index NAME] [--repair] [--json]",
	  "compare index rows with the bodies: missing, stale, orphaned rows",
	  "  --index NAME   only this index (default: every index)\n"
	  "  --repair       fix what is found\n"
	  "  --json         a JSON array instead of text\n"
	  "Exits 1 when drift remains.\n",
	  false },
	{ "backfill", "list", cli_cmd_backfill_list, "[--json]", "backfill jobs on every shard, with progress",
	  "  --json   a JSON array instead of the table\n", false },
	{ "backfill", "pause", cli_cmd_backfill_pause, "NAME",
	  "pause the backfill of index NAME (honoured within one chunk)", NULL, true },
	{ "backfill", "resume", cli_cmd_backfill_resume, "NAME",
	  "resume a paused, stopped or cancelled backfill of index NAME", NULL, true },
	{ "backfill", "cancel", cli_cmd_backfill_cancel, "NAME",
	  "cancel the backfill of index NAME (the index stays building)", NULL, true },
	{ NULL, "lag", cli_cmd_lag, "[--json]", "the repair loop's lag on every shard",
	  "  --json   a JSON array instead of the table\n", false },
	{ NULL, "grants", cli_cmd_grants, "--role ROLE [--user NAME] [--host HOST] [--shard NAME] [--index NAME]",
	  "the GRANT statements a role's MySQL account needs on every shard",
	  "  --role ROLE    app (reads; writes entities, index rows, intents, move-log and\n"
	  "                 audit rows, table by table), cleaner (and its tables, index\n"
	  "                 tables made and dropped, init), console (an operator: what the\n"
	  "                 cleaner does, and edits), readonly (reads; changes refused)\n"
	  "  --user NAME    the account's user (default bagstore_ROLE)\n"
	  "  --host HOST    the account's host (default %, any)\n"
	  "  --shard NAME   only this shard's statements (to pipe into its server)\n"
	  "  --index NAME   app: also index NAME, not made yet (run before index create)\n"
	  "The app's grants name each index table: they read the catalog (after init);\n"
	  "the other roles' read the configuration only. Shards whose tls.mode is\n"
	  "required or stricter get REQUIRE SSL on the account. Create the account first\n"
	  "(CREATE USER ... IDENTIFIED BY ...): no password is ever printed.\n",
	  false },
	{ NULL, "properties", cli_cmd_properties, "[--sample N] [--shard NAME] [--json]",
	  "the property census: every property path of a sample of bodies",
	  "  --sample N     bodies per shard, spread over each table (default 1000)\n"
	  "  --shard NAME   only this shard\n"
	  "  --json         a JSON document instead of the table\n"
	  "Per path (a.b inside maps, a[] for array elements): the types seen and\n"
	  "their shares, presence in the sample, distinct values (~ an estimate for\n"
	  "the store unless every entity was read), the largest value, the indexes\n"
	  "holding it, the index type its values fit, and an example.\n",
	  false },
	{ NULL, "audit", cli_cmd_audit, "[--limit N] [--json]", "the audit log of operators' changes, newest first",
	  "  --limit N   at most N rows (default 50)\n"
	  "  --json      a JSON array, with entity changes' before and after bodies\n"
	  "Who (OS user, host, pid), when, what, on which shards. Entity changes made\n"
	  "in the console can be undone there (:audit, u).\n",
	  false },
	{ NULL, "workers", cli_cmd_workers, "[--json]",
	  "the cleaners (and consoles running backfills) at work, from their heartbeats",
	  "  --json   a JSON array instead of the table\n"
	  "A worker whose newest heartbeat (on any shard) is older than 5 s is shown dead;\n"
	  "its rows are deleted an hour later. Exits 1 when a shard did not answer.\n",
	  false },
	{ NULL, "buckets", cli_cmd_buckets, "[--json]",
	  "the bucket map: version, buckets, entities and bytes per shard, moves in flight",
	  "  --json   a JSON object instead of the table\n"
	  "SHARE is what `reshard plan` would give each shard (none to a shard marked\n"
	  "drain: true). Entities are InnoDB's estimates (~). Exits 1 when a shard does\n"
	  "not answer.\n",
	  false },
	{ "reshard", "plan", cli_cmd_reshard_plan, "[--json]",
	  "the moves needed: buckets, estimated entities and index rows per move",
	  "  --json   a JSON object instead of the table\n"
	  "Spreads the buckets evenly over every configured shard not marked\n"
	  "drain: true; a draining shard's buckets all move off. Changes nothing.\n",
	  false },
	{ "reshard", "start", cli_cmd_reshard_start, "[--yes]", "record the plan as move jobs (asks unless --yes)",
	  "  --yes    do not ask (without a terminal, --yes is required)\n"
	  "A cleaner runs the moves: `bagstore cleaner --reshard`, or the daemon.\n"
	  "Refused while a move of an earlier reshard has not ended.\n",
	  true },
	{ "reshard", "status", cli_cmd_reshard_status, "[--json]",
	  "overall state and per move: phase, progress, rate, ETA, throttle reason",
	  "  --json   a JSON object: \"state\" (idle, running, paused, done, failed,\n"
	  "           cancelled) and \"moves\"\n",
	  false },
	{ "reshard", "pause", cli_cmd_reshard_pause, "", "pause every move (honoured within one chunk)", NULL, true },
	{ "reshard", "resume", cli_cmd_reshard_resume, "", "resume paused, failed or cancelled moves", NULL, true },
	{ "reshard", "cancel", cli_cmd_reshard_cancel, "",
	  "cancel: a move before its cut-over leaves its buckets where they were",
	  "A move past its cut-over finishes. The cleaner running the others undoes\n"
	  "them (with none running, the next `bagstore cleaner --reshard`).\n",
	  true },
	{ NULL, "throttle", cli_cmd_throttle, "[--seconds S] [--json]",
	  "what the cleaner's throttle reads on every shard, and what it would do",
	  "  --seconds S   sample this long (default 1): the heartbeat is written on\n"
	  "                every shard every 100 ms meanwhile\n"
	  "  --json        a JSON array instead of the table\n"
	  "Per shard: the heartbeat write's latency (the probe) beside its idle baseline\n"
	  "and threshold, Threads_running, InnoDB's history list length, each replica's\n"
	  "lag from the heartbeat row, the pace (statements at once it allows, of its\n"
	  "most), and why it holds backfills when it does. Exits 1 when a shard's signals\n"
	  "could not be read. Settings: `cleaner:` (max_write_latency,\n"
	  "write_latency_factor, write_latency_signal, max_load, max_history_length,\n"
	  "max_replica_lag, max_signal_age, writers).\n",
	  true },
	{ NULL, "completion", cli_cmd_completion, "bash|zsh | --list indexes|shards", "print a shell completion script",
	  "  bash, zsh        the script for that shell, made from this command table:\n"
	  "                   source <(bagstore completion bash)\n"
	  "  --list WHAT      index or shard names, one a line, through the\n"
	  "                   configuration (what the script completes them with)\n",
	  false },
	{ NULL, NULL, NULL, NULL, NULL, NULL, false },
};

const cli_cmd_t *cli_command_table(void)
{
	return cli_commands;
}

static bool in_group(const cli_cmd_t *c, const char *group)
{
	return group ? c->group && strcmp(c->group, group) == 0 : !c->group;
}

const cli_cmd_t *cli_find(const char *group, const char *name)
{
	const cli_cmd_t *c;

	for (c = cli_commands; c->name; c++)
		if (in_group(c, group) && strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

bool cli_is_group(const char *name)
{
	const cli_cmd_t *c;

	for (c = cli_commands; c->name; c++)
		if (c->group && strcmp(c->group, name) == 0)
			return true;
	return false;
}

/* ------------------------------------------------------------ usage, help */

static void command_name(char *buf, size_t size, const cli_cmd_t *cmd)
{
	if (cmd->group)
		snprintf(buf, size, "%s %s", cmd->group, cmd->name);
	else
		snprintf(buf, size, "%s", cmd->name);
}

void cli_print_usage_line(FILE *f, const cli_cmd_t *cmd)
{
	char name[64];

	command_name(name, sizeof name, cmd);
	fprintf(f, "bagstore [-c FILE] %s%s%s", name, cmd->args[0] ? " " : "", cmd->args);
}

void cli_print_command_help(FILE *f, const cli_cmd_t *cmd)
{
	fputs("usage: ", f);
	cli_print_usage_line(f, cmd);
	fprintf(f, "\n\n%s.\n", cmd->summary);
	if (cmd->help)
		fprintf(f, "\n%s", cmd->help);
	if (cmd->dangerous)
		fputs("\nChanges data: refused with --read-only or read_only: true.\n", f);
}

/* "  NAME  SUMMARY" for every command of group (NULL: all), the summaries
 * in one column at least two spaces right of the longest name. */
static void print_summaries(FILE *f, const char *group)
{
	const cli_cmd_t *c;
	char name[64];
	int width = 0, len;

	for (c = cli_commands; c->name; c++) {
		if (group && !in_group(c, group))
			continue;
		command_name(name, sizeof name, c);
		if ((len = (int)strlen(name)) > width)
			width = len;
	}
	for (c = cli_commands; c->name; c++) {
		if (group && !in_group(c, group))
			continue;
		command_name(name, sizeof name, c);
		fprintf(f, "  %-*s  %s\n", width, name, c->summary);
	}
}

void cli_print_usage(FILE *f, const char *group)
{
	const cli_cmd_t *c;

	fputs("usage:\n", f);
	for (c = cli_commands; c->name; c++) {
		if (group && !in_group(c, group))
			continue;
		fputs("  ", f);
		cli_print_usage_line(f, c);
		fputc('\n', f);
	}
	if (group) {
		fputs("\ncommands:\n", f);
		print_summaries(f, group);
		return;
	}
	fputs("  bagstore [-c FILE] [--read-only]        the console, on a terminal\n"
	      "\n"
	      "global options, before the command:\n"
	      "  -c FILE       configuration (default $BAGSTORE_CONFIG, else ./bagstore.yaml)\n"
	      "  --read-only   refuse every command that changes data\n"
	      "  --trace       print every statement the command sends on stderr: shard,\n"
	      "                time, rows, MySQL's error (long values shortened, passwords masked)\n"
	      "  --help        this text; `bagstore COMMAND --help` for one command\n"
	      "  --version     print the version\n"
	      "\n"
	      "commands:\n",
	      f);
	print_summaries(f, NULL);
	fputs("\nexit status: 0 ok, 1 the operation failed, 2 usage or configuration error\n", f);
}

/* ------------------------------------------------------------ the store */

int cli_load_config(cli_ctx_t *ctx)
{
	int rc;

	if (ctx->cfg)
		return 0;
	rc = bs_config_load(&ctx->cfg, ctx->config_path);
	if (rc < 0) {
		const char *env = getenv("BAGSTORE_CONFIG");
		char why[512];

		ctx->cfg = NULL;
		/* no file named, and none where one is looked for: say how to name one */
		snprintf(why, sizeof why, "%s", bs_last_error());
		if (!ctx->config_path && rc == BS_ECONFIG && strstr(why, ": cannot read: ") &&
		    access(env && env[0] ? env : "./bagstore.yaml", F_OK) != 0)
			bs_error(rc,
			         "%s; name the configuration with -c FILE or $BAGSTORE_CONFIG "
			         "(conf/example.yaml is one to start from)",
			         why);
		/* Whatever went wrong reading it, it is a configuration error. */
		return rc == BS_ENOMEM ? rc : BS_ECONFIG;
	}
	if (ctx->read_only)
		ctx->cfg->read_only = true;
	return 0;
}

int cli_open(cli_ctx_t *ctx)
{
	int rc;

	if ((rc = cli_load_config(ctx)) < 0)
		return rc;
	/* The read-only rule, in one place: dangerous commands are refused. */
	if (ctx->cmd && ctx->cmd->dangerous && ctx->cfg->read_only) {
		char name[64];
		command_name(name, sizeof name, ctx->cmd);
		return bs_error(BS_EREADONLY, "read-only: refusing %s", name);
	}
	if (!ctx->st && (rc = bs_store_open(&ctx->st, ctx->cfg)) < 0) {
		ctx->st = NULL;
		return rc;
	}
	return 0;
}

void cli_ctx_clear(cli_ctx_t *ctx)
{
	bs_store_free(ctx->st);
	ctx->st = NULL;
	bs_config_free(ctx->cfg);
	ctx->cfg = NULL;
}

void *cli_per_shard_alloc(cli_ctx_t *ctx, size_t size)
{
	int n = bs_store_nshards(ctx->st);
	void *p = calloc((size_t)(n > 0 ? n : 1), size);

	if (!p)
		bs_error(BS_ENOMEM, "out of memory");
	return p;
}

/* ------------------------------------------------------------ errors */

int cli_usage_error(cli_ctx_t *ctx, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	ctx->show_usage = true;
	return bs_error(BS_EINVAL, "%s", msg);
}

int cli_exit_code(int rc)
{
	switch (rc) {
	case BS_OK: return 0;
	case BS_EINVAL: /* arguments, ids, JSON input */
	case BS_ECONFIG: /* the configuration file or shard list */ return 2;
	default: /* not found, unreachable, conflict, SQL, corrupt, ... */ return 1;
	}
}

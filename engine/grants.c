/*
 * grants.c - the MySQL privileges each bagstore role needs on each shard,
 * as the GRANT statements an operator runs (`bagstore grants`). It knows
 * the roles and the configuration; it contacts no shard.
 *
 * What each role runs, and so needs (doc/DESIGN.md, "Privileges", has the
 * statement-by-statement table):
 *  - every role reads: the catalog (bagstore_indexes), each shard's
 *    identity (bagstore_meta), entities and index tables; status reads
 *    information_schema and Threads_running (no privilege in MariaDB), and
 *    named locks (GET_LOCK, IS_USED_LOCK, RELEASE_LOCK) need none;
 *  - app: SELECT on the database (every table, index tables made later
 *    too), EXECUTE on init's two write procedures, by name (a single
 *    write's intent and entity in one CALL; SQL SECURITY INVOKER: the
 *    app's own privileges below apply inside; without it the two
 *    statements are sent instead; not on the database, which would cover
 *    any routine added there later), and per table what puts and deletes write: entities and each
 *    index table (INSERT ... ON DUPLICATE KEY UPDATE, DELETE),
 *    bagstore_intents and bagstore_batch_intents (INSERT, UPDATE for
 *    their ON DUPLICATE KEY, DELETE),
 *    bagstore_move_log (INSERT ... ON DUPLICATE KEY UPDATE while a bucket
 *    moves), bagstore_audit (INSERT: an audited put or delete adds its row;
 *    never UPDATE or DELETE). Nothing on ownership (bagstore_buckets,
 *    bagstore_map, bagstore_meta: a half-done roll-forward it finds is left
 *    to the mover), the catalog, jobs or moves, and no DDL. MySQL grants
 *    per table on no name pattern, and on a table that does not exist yet
 *    only with CREATE in the grant: the index tables are the catalog's,
 *    read by the caller, and one not made yet (grants --index, before
 *    `index create`) gets CREATE too, which lets the grant be given ahead.
 *  - cleaner: SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER,
 *    CREATE ROUTINE, EXECUTE on the database (init's tables, its write
 *    procedures, and bagstore_verify's added columns, index
 *    tables made and dropped by the index lifecycle and then backfilled and
 *    repaired, moves, the map, jobs, the worker registry, the throttle's
 *    heartbeat): tables it makes at run time need its DML at once, and
 *    DROP on the database covers every table anyway, so nothing is gained
 *    per table. SHOW SLAVE STATUS on the shard's replicas for the throttle
 *    (SLAVE MONITOR; REPLICATION CLIENT on MySQL); reading the heartbeat's
 *    replicated row on a replica is the database's SELECT there;
 *  - console: an operator's console and CLI, which do what the cleaner
 *    does (create, drop, backfill, repair) and edit entities: the same
 *    privileges as the cleaner, under an account of its own;
 *  - readonly: SELECT on the database and the replicas' status: every
 *    reading command and screen works, and every change is refused by the
 *    server itself ("INSERT command denied to user ..."), --read-only or
 *    not.
 * A shard whose tls.mode is required or stricter also gets REQUIRE SSL on
 * the account, so that the server refuses it without TLS too.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	const char *privileges; /* on the shard's database */
	bool per_table;         /* and per table: tables[] and each index table */
	bool replicas;          /* reads its replicas' lag */
	const char *what;
} roles[] = {
	[BS_ROLE_APP] = { "app", "SELECT", true, false,
	                  "the application: reads everything, writes entities, their index rows, write "
	                  "intents, move-log rows and audit rows; no ownership, catalog or audit change, no DDL" },
	[BS_ROLE_CLEANER] = { "cleaner",
	                      "SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, CREATE ROUTINE, EXECUTE, TRIGGER, "
	                      "REFERENCES",
	                      false, true,
	                      "the cleaner: backfills, repair, moves, its bookkeeping tables, index tables made "
	                      "and dropped, init; its replicas' lag" },
	[BS_ROLE_CONSOLE] = { "console",
	                      "SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, CREATE ROUTINE, EXECUTE, TRIGGER, "
	                      "REFERENCES",
	                      false, true, "an operator's console and CLI: what the cleaner does, and entity edits" },
	[BS_ROLE_READONLY] = { "readonly", "SELECT", false, true, "reads only: every change is refused by the server" },
};
/* The app's writes, table by table (its SELECT is the database's). */
static const struct {
	const char *table, *privileges, *why;
} app_tables[] = {
	{ "entities", "INSERT, UPDATE, DELETE", "puts (INSERT ... ON DUPLICATE KEY UPDATE) and deletes" },
	{ "bagstore_intents", "INSERT, UPDATE, DELETE", "each write's intent, made first and removed after" },
	{ "bagstore_batch_intents", "INSERT, UPDATE, DELETE", "a bulk put's intent, one per shard and batch" },
	{ "bagstore_move_log", "INSERT, UPDATE", "writes in a moving bucket, for its move's catch-up" },
	{ "bagstore_audit", "INSERT", "an audited put or delete adds its row (no UPDATE, no DELETE)" },
};
#define APP_INDEX_PRIVILEGES "INSERT, UPDATE, DELETE"
#define NROLES ((int)(sizeof roles / sizeof roles[0]))

const char *bs_role_name(bs_role_t r)
{
	return (int)r >= 0 && (int)r < NROLES ? roles[r].name : "unknown";
}

int bs_role_parse(bs_role_t *out, const char *name)
{
	for (int i = 0; i < NROLES; i++)
		if (name && strcmp(name, roles[i].name) == 0) {
			*out = (bs_role_t)i;
			return 0;
		}
	return bs_error(BS_EINVAL, "unknown role \"%s\": expected app, cleaner, console or readonly", name ? name : "");
}

/* An account's user or host: printed as an identifier, so only characters
 * that need no escaping (and the host's % wildcard, / netmask, : of IPv6). */
static int check_account_part(const char *what, const char *s, size_t max, const char *extra)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > max)
		return bs_error(BS_EINVAL, "%s: expected 1 to %zu characters", what, max);
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' ||
		      ch == '-' || ch == '.' || strchr(extra, ch)))
			return bs_error(BS_EINVAL, "%s \"%s\": expected A-Z a-z 0-9 _ - .%s%s", what, s,
			                extra[0] ? " " : "", extra);
	}
	return 0;
}

/* Configuration text (an address, a socket path) inside a "-- " comment:
 * one line, whatever the YAML held. A newline there would end the comment
 * and splice the rest into the script an administrator runs. */
static void comment_text(bs_buf_t *b, const char *s)
{
	for (; s && *s; s++)
		bs__buf_printf(b, "%c", (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
}

static void account(bs_buf_t *b, const char *user, const char *host)
{
	bs__buf_ident(b, user);
	bs__buf_puts(b, "@");
	bs__buf_ident(b, host);
}

/* GRANT privileges ON [kind] db.table (db.* without a table) TO the
 * account; kind "PROCEDURE " for a routine, "" for a table */
static void grant_on(bs_buf_t *b, const char *privileges, const char *kind, const char *db, const char *table,
                     const char *user, const char *host)
{
	bs__buf_printf(b, "GRANT %s ON %s", privileges, kind);
	bs__buf_ident(b, db);
	if (table) {
		bs__buf_puts(b, ".");
		bs__buf_ident(b, table);
	} else {
		bs__buf_puts(b, ".*");
	}
	bs__buf_puts(b, " TO ");
	account(b, user, host);
	bs__buf_puts(b, ";\n");
}

static void grant(bs_buf_t *b, const char *privileges, const char *db, const char *table, const char *user,
                  const char *host)
{
	grant_on(b, privileges, "", db, table, user, host);
}

/* The write procedures the app calls (schema.c), EXECUTE on each. */
static const char *const app_procs[] = { "bagstore_put_v2", "bagstore_put_v1", "bagstore_delete_v1" };

/* The app's per-table grants on one shard's database. */
static void app_grants(bs_buf_t *b, const bs_shard_conf_t *s, const bs_grant_table_t *ix, int nix, const char *user,
                       const char *host)
{
	int listed = 0;

	for (size_t k = 0; k < sizeof app_tables / sizeof app_tables[0]; k++) {
		bs__buf_printf(b, "-- %s: %s\n", app_tables[k].table, app_tables[k].why);
		grant(b, app_tables[k].privileges, s->database, app_tables[k].table, user, host);
	}
	bs__buf_puts(b, "-- init's write procedures (a single write's intent and entity in one CALL; they run with "
	                "the app's own privileges)\n");
	for (size_t k = 0; k < sizeof app_procs / sizeof app_procs[0]; k++)
		grant_on(b, "EXECUTE", "PROCEDURE ", s->database, app_procs[k], user, host);
	for (int k = 0; k < nix; k++)
		listed += ix[k].exists;
	bs__buf_printf(b,
	               "-- index tables (%d in the catalog); grant a new one before `index create NAME`: "
	               "`bagstore grants --role app --index NAME`\n",
	               listed);
	for (int k = 0; k < nix; k++) {
		if (!ix[k].exists)
			bs__buf_printf(b,
			               "-- %s: not made yet; MySQL grants on a table that does not exist only "
			               "with CREATE (the app runs no DDL)\n",
			               ix[k].name);
		grant(b, ix[k].exists ? APP_INDEX_PRIVILEGES : APP_INDEX_PRIVILEGES ", CREATE", s->database, ix[k].name,
		      user, host);
	}
	bs__buf_puts(b, "-- an account given the database-wide DML of an earlier bagstore keeps it: revoke it with\n"
	                "--   REVOKE INSERT, UPDATE, DELETE ON ");
	bs__buf_ident(b, s->database);
	bs__buf_puts(b, ".* FROM ");
	account(b, user, host);
	bs__buf_puts(b, ";\n");
}

/* One shard's statements. */
static void shard_grants(bs_buf_t *b, const bs_shard_conf_t *s, bs_role_t role, const char *user, const char *host,
                         const bs_grant_table_t *ix, int nix)
{
	char addr[128];

	bs__shard_address(addr, sizeof addr, s);
	bs__buf_printf(b, "\n-- shard %s (", s->name);
	comment_text(b, addr);
	bs__buf_printf(b, "), database %s\n", s->database);
	grant(b, roles[role].privileges, s->database, NULL, user, host);
	if (roles[role].per_table)
		app_grants(b, s, ix, nix, user, host);
	if (roles[role].replicas && s->nreplicas > 0) {
		bs__buf_puts(b, "-- SHOW SLAVE STATUS on its replicas (");
		for (int r = 0; r < s->nreplicas; r++) {
			const bs_replica_conf_t *rc = &s->replicas[r];
			bs__buf_puts(b, r ? ", " : "");
			comment_text(b, rc->host ? rc->host : rc->socket);
			if (rc->host)
				bs__buf_printf(b, ":%u", rc->port ? rc->port : 3306);
		}
		bs__buf_puts(b, "): replicated from here, or run on each; MySQL and MariaDB before 10.5.9 "
		                "call it REPLICATION CLIENT\nGRANT SLAVE MONITOR ON *.* TO ");
		account(b, user, host);
		bs__buf_puts(b, ";\n");
	}
	if (s->tls.mode >= BS_TLS_REQUIRED) {
		bs__buf_printf(b, "-- tls.mode is %s: the server refuses this account without TLS too\nALTER USER ",
		               bs_tls_mode_name(s->tls.mode));
		account(b, user, host);
		bs__buf_puts(b, " REQUIRE SSL;\n");
	}
}

bool bs_role_per_table(bs_role_t role)
{
	return (int)role >= 0 && (int)role < NROLES && roles[role].per_table;
}

int bs_grants(char **out, const bs_config_t *cfg, bs_role_t role, const char *user, const char *host, const char *shard,
              const bs_grant_table_t *indexes, int nindexes)
{
	bs_buf_t b = { 0 };
	int rc, found = 0;

	*out = NULL;
	if ((int)role < 0 || (int)role >= NROLES)
		return bs_error(BS_EINVAL, "unknown role %d", (int)role);
	if ((rc = check_account_part("user", user, 80, "")) < 0 ||
	    (rc = check_account_part("host", host, 255, "%:/")) < 0)
		return rc;
	for (int k = 0; k < nindexes; k++) /* (checked as the catalog's names are) */
		if ((rc = bs__index_name_check(indexes[k].name)) < 0)
			return rc;
	bs__buf_printf(&b, "-- bagstore grants for role %s: %s.\n", roles[role].name, roles[role].what);
	bs__buf_puts(&b, "-- Run each shard's statements on that shard's server, after creating the account there\n"
	                 "-- (bagstore never prints a password):\n--   CREATE USER IF NOT EXISTS ");
	account(&b, user, host);
	bs__buf_puts(&b, " IDENTIFIED BY '...';\n");
	for (int i = 0; i < cfg->nshards; i++) {
		if (shard && strcmp(shard, cfg->shards[i].name) != 0)
			continue;
		found++;
		shard_grants(&b, &cfg->shards[i], role, user, host, indexes, nindexes);
	}
	if (shard && !found) {
		bs__buf_free(&b);
		return bs_error(BS_ENOTFOUND, "no shard named \"%s\" in %s", shard,
		                cfg->path ? cfg->path : "the configuration");
	}
	if ((rc = bs__buf_ok(&b)) < 0) {
		bs__buf_free(&b);
		return rc;
	}
	*out = b.ptr;
	return 0;
}

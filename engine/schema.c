/*
 * schema.c - the per-shard tables of doc/DESIGN.md (entities, the catalog,
 * the audit log, the cleaner's bookkeeping) and each shard's identity in
 * bagstore_meta: the shard list's fingerprint and the shard's position.
 *
 * Every statement is idempotent: init can run again at any time. A shard
 * that records another list's fingerprint, or another position in it, is
 * refused: the order of shards is part of the data's identity.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the cleaner's heartbeat (throttle.c), pt-heartbeat style: one row per
 * shard that writes it, NOW(6) every 100 ms while a cleaner runs; a
 * replica's copy of its shard's row tells its lag */
#define HEARTBEAT_DDL \
	"CREATE TABLE IF NOT EXISTS bagstore_heartbeat (" \
	" shard VARCHAR(64) NOT NULL PRIMARY KEY," \
	" ts TIMESTAMP(6) NOT NULL," \
	" writer VARCHAR(128) NOT NULL DEFAULT ''" \
	") ENGINE=InnoDB"

static const char *const schema[] = {
	"CREATE TABLE IF NOT EXISTS entities ("
	" added_id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,"
	" id BINARY(16) NOT NULL,"
	" updated TIMESTAMP(6) NOT NULL,"
	" body MEDIUMBLOB,"
	" UNIQUE KEY (id),"
	" KEY (updated)"
	") ENGINE=InnoDB",

	"CREATE TABLE IF NOT EXISTS bagstore_meta ("
	" k VARCHAR(64) NOT NULL PRIMARY KEY,"
	" v VARCHAR(255) NOT NULL"
	") ENGINE=InnoDB",

	/* the index catalog, the same on every shard */
	"CREATE TABLE IF NOT EXISTS bagstore_indexes ("
	" name VARCHAR(64) NOT NULL PRIMARY KEY,"
	" on_spec VARCHAR(1024) NOT NULL,"
	" shard_on VARCHAR(64) NOT NULL,"
	" state ENUM('building','ready','disabled') NOT NULL,"
	" created TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),"
	" changed TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)"
	") ENGINE=InnoDB",

	/* operator changes, from the console and the command line */
	"CREATE TABLE IF NOT EXISTS bagstore_audit ("
	" id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,"
	" at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),"
	" os_user VARCHAR(64) NOT NULL,"
	" host VARCHAR(255) NOT NULL,"
	" action VARCHAR(64) NOT NULL,"
	" target VARCHAR(255) NOT NULL,"
	" detail TEXT"
	") ENGINE=InnoDB",

	/* writes in flight (entity.c, bulk.c): one row per entity a put or
	 * delete is writing, between its entity and its index rows (a batch
	 * shares one token); ver, when known, is the version written. A row
	 * that stays is the repair loop's to settle once its named lock (the
	 * token) is free. */
	"CREATE TABLE IF NOT EXISTS bagstore_intents ("
	" token VARCHAR(64) NOT NULL,"
	" entity_id BINARY(16) NOT NULL,"
	" ver TIMESTAMP(6) NULL DEFAULT NULL,"
	" created TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),"
	" PRIMARY KEY (token, entity_id),"
	" KEY (created)"
	") ENGINE=InnoDB",

	/* ------------------------------------------------ the cleaner's */

	/* one backfill job per index on this (source) shard */
	"CREATE TABLE IF NOT EXISTS bagstore_jobs ("
	" index_name VARCHAR(64) NOT NULL PRIMARY KEY,"
	" index_created_us BIGINT NOT NULL,"
	" state ENUM('queued','running','throttled','paused','done','failed','cancelled') NOT NULL,"
	" reason VARCHAR(255) NOT NULL DEFAULT '',"
	" cursor_id BIGINT NOT NULL DEFAULT 0,"
	" max_id BIGINT NOT NULL DEFAULT -1,"
	" rows_scanned BIGINT NOT NULL DEFAULT 0,"
	" rows_total BIGINT NOT NULL DEFAULT 0,"
	" rows_written BIGINT NOT NULL DEFAULT 0,"
	" rate DOUBLE NOT NULL DEFAULT 0,"
	" chunk INT NOT NULL DEFAULT 0,"
	" worker_host VARCHAR(64) NOT NULL DEFAULT '',"
	" worker_pid INT NOT NULL DEFAULT 0,"
	" heartbeat TIMESTAMP(6) NULL DEFAULT NULL,"
	" created TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),"
	" started TIMESTAMP(6) NULL DEFAULT NULL,"
	" finished TIMESTAMP(6) NULL DEFAULT NULL"
	") ENGINE=InnoDB",

	/* 'repair': this shard's repair watermark; 'sweep:INDEX': the orphan
	 * sweep's cursor over INDEX's table on this shard */
	"CREATE TABLE IF NOT EXISTS bagstore_watermarks ("
	" name VARCHAR(80) NOT NULL PRIMARY KEY,"
	" watermark_us BIGINT NOT NULL DEFAULT 0,"
	" cursor_bin VARBINARY(16) NOT NULL DEFAULT '',"
	" last_pass_us BIGINT NOT NULL DEFAULT 0,"
	" last_pass_rows BIGINT NOT NULL DEFAULT 0,"
	" repairs BIGINT NOT NULL DEFAULT 0,"
	" repairs_per_s DOUBLE NOT NULL DEFAULT 0"
	") ENGINE=InnoDB",

	/* lag samples of this shard's repair loop, one per step */
	"CREATE TABLE IF NOT EXISTS bagstore_lag_history ("
	" at_us BIGINT NOT NULL PRIMARY KEY,"
	" lag_s DOUBLE NOT NULL"
	") ENGINE=InnoDB",

	/* the last verify of each index */
	"CREATE TABLE IF NOT EXISTS bagstore_verify ("
	" index_name VARCHAR(64) NOT NULL PRIMARY KEY,"
	" checked BIGINT NOT NULL,"
	" missing BIGINT NOT NULL,"
	" stale BIGINT NOT NULL,"
	" orphaned BIGINT NOT NULL,"
	" misfit BIGINT NOT NULL,"
	" repaired BIGINT NOT NULL,"
	" at_us BIGINT NOT NULL"
	") ENGINE=InnoDB",
	/* the worker registry (workers.c): a row per running cleaner, and per
	 * console running backfills, on every shard; heartbeat on the shard's clock */
	"CREATE TABLE IF NOT EXISTS bagstore_workers ("
	" worker_id VARCHAR(64) NOT NULL PRIMARY KEY,"
	" kind VARCHAR(16) NOT NULL,"
	" host VARCHAR(255) NOT NULL,"
	" pid INT NOT NULL,"
	" version VARCHAR(64) NOT NULL,"
	" started_us BIGINT NOT NULL,"
	" heartbeat TIMESTAMP(6) NOT NULL,"
	" jobs VARCHAR(1024) NOT NULL DEFAULT '',"
	" repair_shards VARCHAR(1024) NOT NULL DEFAULT '',"
	" metrics VARCHAR(255) NOT NULL DEFAULT '',"
	" KEY (heartbeat)"
	") ENGINE=InnoDB",
	/* added later: a store made before gains them at its next init */
	"ALTER TABLE bagstore_verify ADD COLUMN IF NOT EXISTS corrupt BIGINT NOT NULL DEFAULT 0,"
	" ADD COLUMN IF NOT EXISTS unprintable BIGINT NOT NULL DEFAULT 0",
	/* the audit's who and where, and an entity change's images (audit.c,
	 * undo.c): before_body NULL is a create, after_body NULL a delete */
	"ALTER TABLE bagstore_audit ADD COLUMN IF NOT EXISTS pid INT NOT NULL DEFAULT 0,"
	" ADD COLUMN IF NOT EXISTS shards VARCHAR(1024) NOT NULL DEFAULT '',"
	" ADD COLUMN IF NOT EXISTS entity_id BINARY(16) NULL DEFAULT NULL,"
	" ADD COLUMN IF NOT EXISTS before_us BIGINT NULL DEFAULT NULL,"
	" ADD COLUMN IF NOT EXISTS before_body MEDIUMBLOB NULL,"
	" ADD COLUMN IF NOT EXISTS after_us BIGINT NULL DEFAULT NULL,"
	" ADD COLUMN IF NOT EXISTS after_body MEDIUMBLOB NULL",
	HEARTBEAT_DDL,
};

struct init_arg {
	const char *fingerprint;
	int n;
};

/* Does shard i's identity (as read) name another list? 0 when it names
 * ours or none. */
static int meta_agrees(bs_store_t *st, int i, const shard_meta_t *meta, const struct init_arg *a)
{
	char label[192];
	if (meta->fingerprint[0] && (strcmp(meta->fingerprint, a->fingerprint) != 0 || meta->index != i))
		return bs_error(BS_ECONFIG,
		                "%s already belongs to another shard list (fingerprint %s, position %d of %d); "
		                "this configuration's list is %s with it at position %d of %d: refusing to "
		                "initialise it (resharding is not supported)",
		                bs__shard_label(label, sizeof label, &st->shards[i]), meta->fingerprint, meta->index,
		                meta->count, a->fingerprint, i, a->n);
	return 0;
}

/* Before anything is created anywhere: a list one shard disagrees with
 * must not claim the others (a new shard among them included). */
static int check_shard(bs_store_t *st, int i, void *p)
{
	static const char q[] = "SELECT COUNT(*) FROM information_schema.TABLES"
	                        " WHERE TABLE_SCHEMA=DATABASE() AND TABLE_NAME='bagstore_meta'";
	MYSQL_RES *res;
	int rc = bs__shard_query(&res, st, i, q, sizeof q - 1);
	if (rc)
		return rc;
	MYSQL_ROW row = mysql_fetch_row(res);
	bool made = row && row[0] && strcmp(row[0], "0") != 0;
	mysql_free_result(res);
	if (!made) /* none yet: a new shard */
		return 0;
	shard_meta_t meta;
	return (rc = bs__shard_meta(&meta, st, i)) ? rc : meta_agrees(st, i, &meta, p);
}

static int init_shard(bs_store_t *st, int i, void *p)
{
	struct init_arg *a = p;
	bs_buf_t b = {0};
	int rc = 0;

	for (size_t k = 0; k < sizeof schema / sizeof *schema; k++)
		if ((rc = bs__shard_exec(st, i, schema[k], strlen(schema[k]))))
			goto done;

	shard_meta_t meta;
	if ((rc = bs__shard_meta(&meta, st, i)))
		goto done;
	if (meta.fingerprint[0]) {
		rc = meta_agrees(st, i, &meta, a);
		goto done;
	}
	/* values as hex literals, like every value bagstore sends */
	char idx[16], count[16];
	snprintf(idx, sizeof idx, "%d", i);
	snprintf(count, sizeof count, "%d", a->n);
	const char *kv[][2] = { { "fingerprint", a->fingerprint }, { "shard_index", idx },
	                        { "shard_count", count }, { "shard_name", st->shards[i].conf->name },
	                        { "schema_version", "1" } };
	bs__buf_puts(&b, "INSERT INTO bagstore_meta (k, v) VALUES ");
	for (size_t k = 0; k < sizeof kv / sizeof *kv; k++) {
		bs__buf_puts(&b, k ? ",(" : "(");
		bs__buf_hex(&b, kv[k][0], strlen(kv[k][0]));
		bs__buf_puts(&b, ",");
		bs__buf_hex(&b, kv[k][1], strlen(kv[k][1]));
		bs__buf_puts(&b, ")");
	}
	if ((rc = bs__buf_ok(&b)))
		goto done;
	rc = bs__shard_exec(st, i, b.ptr, b.len);
done:
	bs__buf_free(&b);
	return rc;
}

int bs__schema_init(bs_store_t *st)
{
	struct init_arg a = { st->fingerprint, st->n };
	int rc = bs__shard_each(st, NULL, check_shard, &a, NULL);
	if (!rc)
		rc = bs__shard_each(st, NULL, init_shard, &a, NULL);
	for (int i = 0; i < st->n; i++)
		st->shards[i].fp_state = 0;
	return rc;
}

int bs__schema_heartbeat(bs_store_t *st, int i)
{
	static const char q[] = HEARTBEAT_DDL;
	return bs__shard_exec(st, i, q, sizeof q - 1);
}

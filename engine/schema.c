/*
 * schema.c - the per-shard tables of doc/DESIGN.md (entities, the catalog,
 * the audit log, the cleaner's bookkeeping, the bucket map and ownership).
 * Each shard's identity in bagstore_meta and the map's rows are map.c's.
 *
 * Every statement is idempotent: init can run again at any time.
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

/* The write procedures, made by init on every shard: what entity.c's
 * fast_returning_prepared sends as two statements, in one round trip.
 * Each statement in them commits on its own, as in autocommit outside:
 * the intent first (its named lock taken, or the call refused with
 * SQLSTATE 45000 before anything is written; @bs_old and @bs_ou, which
 * the upsert sets only when it replaces a row, reset as the lock is
 * tested), then the entity, fenced as outside: bagstore_put_v2 by its
 * bucket's bagstore_owned row (the foreign key, error 1452 when the bucket
 * is not simply owned here), bagstore_put_v1 (an older bagstore's
 * writers') and the delete by a read of its ownership row (error 1048, a
 * NULL id, for v1); the fence's wait, WAIT 3 outside, is the statement's
 * lock waits inside, InnoDB's and the metadata locks', where WAIT is not
 * allowed. The token is bytes (VARBINARY), as the lock's release names
 * it (X'..'), whatever the database's character set. SQL SECURITY INVOKER: the
 * caller's own privileges, no definer to go missing. A procedure changed
 * here gets a new name (_v2): init makes what is missing and never
 * replaces, and writers of another version may run beside it. */
#define PROC_INTENT \
	"IF COALESCE(IF(IS_USED_LOCK(tok)=CONNECTION_ID(),1,GET_LOCK(tok,0)),0)<>1" \
	" OR (@bs_old:=NULL) IS NOT NULL OR (@bs_ou:=NULL) IS NOT NULL THEN BEGIN" \
	" DECLARE m VARCHAR(255) DEFAULT CONCAT('the intent''s ''token'' ',tok,' is refused: another" \
	" session holds its named lock'); SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT=m; END; END IF;" \
	" INSERT INTO bagstore_intents (token, entity_id) VALUES (tok, eid) ON DUPLICATE KEY UPDATE " \
	"token=VALUES(token);"
#define PROC_LOCK PROC_INTENT " " BS__FENCE_WAITS
#define PROC_OWNED "(SELECT state FROM bagstore_buckets WHERE bucket=b LOCK IN SHARE MODE)='owned'"
static const char *const write_procs[] = {
	"CREATE PROCEDURE IF NOT EXISTS bagstore_put_v1(tok VARBINARY(64), b INT, eid BINARY(16), bd MEDIUMBLOB)"
	" MODIFIES SQL DATA SQL SECURITY INVOKER COMMENT 'bagstore: a put''s intent, then its entity, fenced'"
	" BEGIN " PROC_LOCK "INSERT INTO entities (id, updated, body) VALUES (IF(" PROC_OWNED
	",eid,NULL),NOW(6),bd)" BS__ENTITY_UPSERT_RETURNING "; END",
	/* v2: the entity fenced by its bucket's bagstore_owned row (the
	 * foreign key), not a read of its ownership row; v1 stays for the
	 * writers of an older bagstore */
	"CREATE PROCEDURE IF NOT EXISTS bagstore_put_v2(tok VARBINARY(64), b INT, eid BINARY(16), bd MEDIUMBLOB)"
	" MODIFIES SQL DATA SQL SECURITY INVOKER COMMENT 'bagstore: a put''s intent, then its entity, fenced by its "
	"bucket'"
	" BEGIN " PROC_INTENT " " BS__FENCED_INSERT "eid,NOW(6),bd,b)" BS__FENCED_TAIL_RETURNING "; END",
	"CREATE PROCEDURE IF NOT EXISTS bagstore_delete_v1(tok VARBINARY(64), b INT, eid BINARY(16))"
	" MODIFIES SQL DATA SQL SECURITY INVOKER COMMENT 'bagstore: a delete''s intent, then the delete, fenced'"
	" BEGIN " PROC_LOCK "DELETE FROM entities WHERE id=eid AND " PROC_OWNED
	" RETURNING body, UNIX_TIMESTAMP(updated); END",
	NULL
};

/* bagstore_owned brought in line with bagstore_buckets under the
 * ownership rows' locks: the parent rows an owned bucket lacks, and those
 * of a bucket not owned (init, bs__fence_check) */
#define OWNED_ADD \
	"SET STATEMENT innodb_lock_wait_timeout=3 FOR INSERT IGNORE INTO bagstore_owned (bucket, flip) SELECT" \
	" b.bucket, f.flip FROM bagstore_buckets b JOIN (SELECT 0 AS flip UNION ALL SELECT 1) f" \
	" WHERE b.state='owned' LOCK IN SHARE MODE"
#define OWNED_DROP \
	"SET STATEMENT foreign_key_checks=0, innodb_lock_wait_timeout=3 FOR DELETE o FROM bagstore_owned o" \
	" LEFT JOIN bagstore_buckets b ON b.bucket=o.bucket AND b.state='owned' WHERE b.bucket IS NULL"
/* the fence's triggers, by name */
#define FENCE_TRIGGERS "('bagstore_owned_ins','bagstore_owned_upd','bagstore_owned_del')"

/* the fence's triggers' DDL (init_shard sends only those not there) */
#define TRIGGER_DDL "CREATE TRIGGER IF NOT EXISTS "

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

	/* writes in flight (entity.c): one row per entity a put or delete is
	 * writing, from its entity write until its index rows are written and
	 * its removal's batch runs. A row that stays is the repair loop's to
	 * settle once its named lock (the token) is free. ver: the version
	 * written, by bulk puts of bagstores before bagstore_batch_intents
	 * (kept while such writers may run). */
	"CREATE TABLE IF NOT EXISTS bagstore_intents ("
	" token VARCHAR(64) NOT NULL,"
	" entity_id BINARY(16) NOT NULL,"
	" ver TIMESTAMP(6) NULL DEFAULT NULL,"
	" created TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),"
	" PRIMARY KEY (token, entity_id),"
	" KEY (created)"
	") ENGINE=InnoDB",
	/* a bulk put's writes in flight (bulk.c): one token per shard and
	 * batch, its entities' ids (16 bytes each) in parts of at most
	 * BS__BATCH_PART; settled by the repair loop as bagstore_intents' rows
	 * are, a part at a time. A table of its own: the repair loop of a
	 * bagstore from before it reads bagstore_intents a row per entity, and
	 * would settle a batch's first entity only. */
	"CREATE TABLE IF NOT EXISTS bagstore_batch_intents ("
	" token VARCHAR(64) NOT NULL,"
	" part INT NOT NULL,"
	" ids MEDIUMBLOB NOT NULL,"
	" created TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),"
	" PRIMARY KEY (token, part),"
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

	/* ------------------------------------------------ buckets (map.c) */

	/* the bucket map's versions: B, the members' names, an owner per bucket
	 * (two bytes, big-endian: the index of a name); the same on every shard */
	"CREATE TABLE IF NOT EXISTS bagstore_map ("
	" version BIGINT NOT NULL PRIMARY KEY,"
	" buckets INT NOT NULL,"
	" store_id CHAR(32) NOT NULL,"
	" shards TEXT NOT NULL,"
	" owners MEDIUMBLOB NOT NULL,"
	" created TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)"
	") ENGINE=InnoDB",

	/* what this shard owns, or has a move relation with: the truth every
	 * read and write checks (a bucket without a row was never owned here) */
	"CREATE TABLE IF NOT EXISTS bagstore_buckets ("
	" bucket INT NOT NULL PRIMARY KEY,"
	" state ENUM('owned','leaving','incoming','gone') NOT NULL,"
	" peer VARCHAR(64) NOT NULL DEFAULT '',"
	" move_id BIGINT NOT NULL DEFAULT 0,"
	" changed TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),"
	" KEY (move_id)"
	") ENGINE=InnoDB",

	/* The fence's parent rows (doc/DESIGN.md, "The fence"): two rows,
	 * flip 0 and 1, for each bucket bagstore_buckets says is 'owned' here,
	 * none for any other. Kept by the triggers below in the transaction
	 * that changes a bucket's row, whoever changes it (a cut-over, an
	 * older bagstore's, an operator's UPDATE), under the same row locks. */
	"CREATE TABLE IF NOT EXISTS bagstore_owned ("
	" bucket INT NOT NULL,"
	" flip TINYINT NOT NULL,"
	" PRIMARY KEY (bucket, flip)"
	") ENGINE=InnoDB",
	/* A bucket that stops being owned loses its rows with the foreign-key
	 * check off for that one statement: entities still reference them (a
	 * leaving bucket's rows stay until its move's cleanup), and the fence
	 * is about new writes, not the rows there. The delete takes the rows'
	 * exclusive locks: it waits for every write whose check holds one. */
	TRIGGER_DDL "bagstore_owned_ins AFTER INSERT ON bagstore_buckets FOR EACH ROW"
		    " IF NEW.state='owned' THEN INSERT IGNORE INTO bagstore_owned (bucket, flip) VALUES "
		    "(NEW.bucket,0),(NEW.bucket,1);"
		    " END IF",
	TRIGGER_DDL
	"bagstore_owned_upd AFTER UPDATE ON bagstore_buckets FOR EACH ROW BEGIN"
	" IF OLD.state='owned' AND (NEW.state<>'owned' OR NEW.bucket<>OLD.bucket) THEN"
	" SET STATEMENT foreign_key_checks=0 FOR DELETE FROM bagstore_owned WHERE bucket=OLD.bucket; END IF;"
	" IF NEW.state='owned' THEN INSERT IGNORE INTO bagstore_owned (bucket, flip) VALUES "
	"(NEW.bucket,0),(NEW.bucket,1);"
	" END IF; END",
	TRIGGER_DDL
	"bagstore_owned_del AFTER DELETE ON bagstore_buckets FOR EACH ROW"
	" IF OLD.state='owned' THEN"
	" SET STATEMENT foreign_key_checks=0 FOR DELETE FROM bagstore_owned WHERE bucket=OLD.bucket; END IF",
	/* rows from before the triggers (a store an older bagstore made)
	 * are brought in line by bs__fence_check, after these */
	/* The entity's bucket and flip, the fast form's fence (entity.c): an
	 * upsert that sets them is checked by InnoDB against bagstore_owned,
	 * the row share-locked, and refused (error 1452) when it is not there.
	 * Rows written otherwise (the full form, bulk puts, a move's copy) leave
	 * bucket NULL or as it was, which the check passes by. Added with the
	 * check off: the rows there have no bucket yet, and so the index is
	 * built in place, writes going on. */
	"SET STATEMENT foreign_key_checks=0 FOR ALTER TABLE entities"
	" ADD COLUMN IF NOT EXISTS bucket INT NULL DEFAULT NULL,"
	" ADD COLUMN IF NOT EXISTS flip TINYINT NOT NULL DEFAULT 0,"
	" ADD CONSTRAINT bagstore_fence FOREIGN KEY IF NOT EXISTS (bucket, flip) REFERENCES bagstore_owned (bucket, "
	"flip)",

	/* entities written in leaving buckets, for their move's catch-up (kind
	 * 0 the entity, 1 its index rows): a set of dirty ids, n counting the
	 * writes since the row was last replayed (no AUTO_INCREMENT: writers
	 * insert with INSERT ... SELECT, which would take its table lock) */
	"CREATE TABLE IF NOT EXISTS bagstore_move_log ("
	" move_id BIGINT NOT NULL,"
	" kind TINYINT NOT NULL,"
	" id BINARY(16) NOT NULL,"
	" n BIGINT NOT NULL DEFAULT 1,"
	" PRIMARY KEY (move_id, kind, id)"
	") ENGINE=InnoDB",

	/* one move of a reshard (buckets from this shard to a target), run
	 * like a backfill job: its row is its only shared state (reshard.c,
	 * move.c) */
	"CREATE TABLE IF NOT EXISTS bagstore_moves ("
	" move_id BIGINT NOT NULL PRIMARY KEY,"
	" plan_id BIGINT NOT NULL,"
	" map_version BIGINT NOT NULL,"
	" source VARCHAR(64) NOT NULL,"
	" target VARCHAR(64) NOT NULL,"
	" buckets MEDIUMTEXT NOT NULL,"
	" nbuckets INT NOT NULL,"
	" state ENUM('queued','running','throttled','paused','done','failed','cancelled') NOT NULL,"
	" phase ENUM('copy','index','catchup','cutover','cleanup','done','undo') NOT NULL DEFAULT 'copy',"
	" started_copy TINYINT NOT NULL DEFAULT 0,"
	" reason VARCHAR(255) NOT NULL DEFAULT '',"
	" cursor_id BIGINT NOT NULL DEFAULT 0,"
	" max_id BIGINT NOT NULL DEFAULT -1,"
	" index_name VARCHAR(64) NOT NULL DEFAULT '',"
	" index_cursor VARBINARY(16) NOT NULL DEFAULT '',"
	" rows_total BIGINT NOT NULL DEFAULT 0,"
	" rows_scanned BIGINT NOT NULL DEFAULT 0,"
	" rows_copied BIGINT NOT NULL DEFAULT 0,"
	" index_total BIGINT NOT NULL DEFAULT 0,"
	" index_rows BIGINT NOT NULL DEFAULT 0,"
	" log_rows BIGINT NOT NULL DEFAULT 0,"
	" rate DOUBLE NOT NULL DEFAULT 0,"
	" chunk INT NOT NULL DEFAULT 0,"
	" fence_ms DOUBLE NOT NULL DEFAULT 0,"
	" fence_tries INT NOT NULL DEFAULT 0,"
	" flip_us BIGINT NOT NULL DEFAULT 0,"
	" src_watermark_us BIGINT NOT NULL DEFAULT 0,"
	" worker_host VARCHAR(64) NOT NULL DEFAULT '',"
	" worker_pid INT NOT NULL DEFAULT 0,"
	" heartbeat TIMESTAMP(6) NULL DEFAULT NULL,"
	" created TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),"
	" started TIMESTAMP(6) NULL DEFAULT NULL,"
	" finished TIMESTAMP(6) NULL DEFAULT NULL"
	") ENGINE=InnoDB",
	HEARTBEAT_DDL,
};

/* A fence's trigger that is not there, refused to an account without
 * TRIGGER: init stops, saying what the account needs (a fence whose
 * parent rows nothing keeps would let writes land in buckets that left).
 * Where every trigger is there, such an account passes them by
 * (triggers_there). */
static int trigger_denied(void)
{
	char msg[512];
	snprintf(msg, sizeof msg, "%s", bs_last_error());
	return bs_error(BS_ESQL,
	                "%s; init needs the TRIGGER privilege to make the fence's triggers (`bagstore grants --role "
	                "cleaner` prints what it needs now)",
	                msg);
}

/* The fence's triggers already on shard i, their names each followed by
 * a space, into have (an account that may not see them sees none: it is
 * sent the DDL, and refused). CREATE TRIGGER takes the table's exclusive
 * metadata lock before it looks whether the trigger is there: sent every
 * init, it would wait for every transaction that read bagstore_buckets,
 * and every write of the shard would queue behind it. */
static int triggers_there(char *have, size_t size, bs_store_t *st, int i)
{
	static const char q[] = "SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE"
				" TRIGGER_SCHEMA=DATABASE() AND EVENT_OBJECT_TABLE='bagstore_buckets'"
				" AND TRIGGER_NAME IN " FENCE_TRIGGERS;
	MYSQL_RES *res = NULL;
	MYSQL_ROW row;
	int rc;
	have[0] = '\0';
	if ((rc = bs__shard_query(&res, st, i, q, sizeof q - 1)) || !res)
		return rc;
	while ((row = mysql_fetch_row(res)))
		if (row[0] && strlen(have) + strlen(row[0]) + 2 < size) {
			strcat(have, row[0]);
			strcat(have, " ");
		}
	mysql_free_result(res);
	return 0;
}

/* Is schema statement sql a trigger that have names? */
static bool trigger_made(const char *sql, const char *have)
{
	char name[72];
	size_t n = 0;
	if (strncmp(sql, TRIGGER_DDL, sizeof TRIGGER_DDL - 1))
		return false;
	sql += sizeof TRIGGER_DDL - 1;
	while (sql[n] && sql[n] != ' ' && n + 2 < sizeof name) {
		name[n] = sql[n];
		n++;
	}
	name[n++] = ' ';
	name[n] = '\0';
	for (const char *p = have; (p = strstr(p, name)); p++)
		if (p == have || p[-1] == ' ')
			return true;
	return false;
}

static int init_shard(bs_store_t *st, int i, void *p)
{
	char have[256];
	int rc = triggers_there(have, sizeof have, st, i);
	for (size_t k = 0; k < sizeof schema / sizeof *schema && !rc; k++) {
		if (trigger_made(schema[k], have))
			continue;
		rc = bs__shard_exec(st, i, schema[k], strlen(schema[k]));
		if (rc == BS_ESQL && bs__denied(bs__shard_last_errno(st, i)) &&
		    !strncmp(schema[k], TRIGGER_DDL, sizeof TRIGGER_DDL - 1))
			rc = trigger_denied();
	}
	bs__fence_t f;
	char label[192];
	if (!rc) /* the parent rows in line: filled on an upgrade */
		rc = bs__fence_check(&f, st, i);
	/* a trigger of the fence's name there already, that does something
	 * else (init made none in its place): the fence would not be kept */
	if (!rc && f.triggers < 0)
		rc = bs_error(f.tried_code, BS__FENCE_TRY_FMT, f.tried);
	else if (!rc && f.triggers < 3)
		rc = bs_error(BS_ECONFIG, "%s: " BS__FENCE_TRIGGERS_FMT,
		              bs__shard_label(label, sizeof label, &st->shards[i]), f.triggers,
		              "drop the bagstore_owned_* trigger that does something else, then run init again");
	/* the procedures hold INSERT ... RETURNING: on the servers that have
	 * it (MariaDB 10.5 and later), the only ones whose writers call them.
	 * An account without CREATE ROUTINE (granted by an older bagstore)
	 * is refused even where they exist: init goes on, and says so
	 * (bs_init_noproc); writers send two statements where they miss */
	st->shards[i].proc_denied = false;
	for (size_t k = 0; write_procs[k] && !rc && st->shards[i].returning; k++) {
		rc = bs__shard_exec(st, i, write_procs[k], strlen(write_procs[k]));
		if (rc == BS_ESQL && bs__denied(bs__shard_last_errno(st, i))) {
			st->shards[i].proc_denied = true;
			bs_error_clear();
			rc = 0;
			break;
		}
	}
	return rc;
}

/* How many of the fence's triggers do their work on shard i, tried on a
 * bucket no map has (INT's largest: a gap no fenced read locks, where the
 * lists' sentinel -1 is) in a transaction rolled back: inserted owned
 * (its two parent rows made), set leaving (taken away), deleted once
 * owned again (taken away). By what they do, not by information_schema,
 * which shows a table's triggers only to some accounts, and would pass a
 * trigger of that name with another body. Each statement waits a second
 * at most for a lock: a busy shard fails the try, not its writers. */
#define PROBE_BUCKET "2147483647"
#define PROBE_WAIT "SET STATEMENT innodb_lock_wait_timeout=1, lock_wait_timeout=1 FOR "
static int triggers_work(int *n, bs_store_t *st, int i)
{
	static const char q[] =
		"START TRANSACTION;" PROBE_WAIT "INSERT INTO bagstore_buckets (bucket, state) VALUES (" PROBE_BUCKET
		",'owned');SELECT COUNT(*) FROM bagstore_owned WHERE bucket=" PROBE_BUCKET ";" PROBE_WAIT
		"UPDATE bagstore_buckets SET state='leaving' WHERE bucket=" PROBE_BUCKET
		";SELECT COUNT(*) FROM bagstore_owned WHERE bucket=" PROBE_BUCKET ";" PROBE_WAIT
		"UPDATE bagstore_buckets SET state='owned' WHERE bucket=" PROBE_BUCKET ";" PROBE_WAIT
		"INSERT IGNORE INTO bagstore_owned (bucket, flip) VALUES (" PROBE_BUCKET ",0),(" PROBE_BUCKET
		",1);" PROBE_WAIT "DELETE FROM bagstore_buckets WHERE bucket=" PROBE_BUCKET
		";SELECT COUNT(*) FROM bagstore_owned WHERE bucket=" PROBE_BUCKET ";ROLLBACK";
	static const char want[3] = { 2, 0, 0 };
	MYSQL_RES *res[3] = { NULL, NULL, NULL };
	int rc = bs__shard_query_sets(res, 3, st, i, q, sizeof q - 1);
	*n = 0;
	if (rc) {
		char msg[1024];
		snprintf(msg, sizeof msg, "%s", bs_last_error());
		if (st->shards[i].conn) /* the transaction, if a statement in it failed */
			bs__shard_exec(st, i, "ROLLBACK", 8);
		return bs_error(rc, "%s", msg);
	}
	for (int k = 0; k < 3; k++) {
		MYSQL_ROW row = res[k] ? mysql_fetch_row(res[k]) : NULL;
		*n += row && row[0] && atoi(row[0]) == want[k];
		if (res[k])
			mysql_free_result(res[k]);
	}
	return 0;
}

int bs__fence_check(bs__fence_t *out, bs_store_t *st, int i)
{
	/* one statement, one snapshot: the triggers change both tables in
	 * one transaction, so any difference seen is real. The mend runs
	 * only then: its statements lock every row they read */
	static const char q[] =
		"SELECT (SELECT COUNT(*) FROM bagstore_owned o LEFT JOIN bagstore_buckets b ON b.bucket=o.bucket"
		" AND b.state='owned' WHERE b.bucket IS NULL),"
		" (SELECT COUNT(*) FROM bagstore_buckets b WHERE b.state='owned' AND"
		" (SELECT COUNT(*) FROM bagstore_owned o WHERE o.bucket=b.bucket)<>2),"
		" (SELECT SUBSTRING(GROUP_CONCAT(DISTINCT o.bucket ORDER BY o.bucket),1,120) FROM bagstore_owned o"
		" LEFT JOIN bagstore_buckets b ON b.bucket=o.bucket AND b.state='owned' WHERE b.bucket IS NULL)";
	MYSQL_RES *res = NULL;
	MYSQL_ROW row;
	int rc;
	memset(out, 0, sizeof *out);
	out->stray = out->lacking = out->triggers = -1; /* unknown until read */
	if ((rc = bs__shard_query(&res, st, i, q, sizeof q - 1)))
		return rc;
	out->stray = out->lacking = 0;
	if (res && (row = mysql_fetch_row(res)) && row[0] && row[1]) {
		out->stray = atoll(row[0]);
		out->lacking = atoll(row[1]);
		snprintf(out->stray_buckets, sizeof out->stray_buckets, "%s", row[2] ? row[2] : "");
	}
	if (res)
		mysql_free_result(res);
	/* the mend first: rows out of step let writes through now, whatever
	 * the triggers' try says after */
	if (out->stray && (rc = bs__shard_exec_rows(&out->dropped, st, i, OWNED_DROP, sizeof OWNED_DROP - 1)))
		return rc;
	if (out->lacking && (rc = bs__shard_exec_rows(&out->added, st, i, OWNED_ADD, sizeof OWNED_ADD - 1)))
		return rc;
	if ((out->tried_code = triggers_work(&out->triggers, st, i))) {
		out->triggers = -1;
		snprintf(out->tried, sizeof out->tried, "%s", bs_last_error());
		bs_error_clear();
	}
	return 0;
}

int bs__schema_init(bs_store_t *st)
{
	return bs__shard_each(st, NULL, init_shard, NULL, NULL);
}

int bs__schema_heartbeat(bs_store_t *st, int i)
{
	static const char q[] = HEARTBEAT_DDL;
	return bs__shard_exec(st, i, q, sizeof q - 1);
}

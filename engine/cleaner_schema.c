/*
 * cleaner_schema.c - the cleaner's bookkeeping tables, created by init
 * beside the tables of schema.c: backfill jobs with their checkpoints,
 * repair watermarks and sweep cursors, lag history and verify results.
 */
#include "internal.h"

const char *const bs_schema_extra[] = {
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
};
const int bs_schema_nextra = sizeof bs_schema_extra / sizeof *bs_schema_extra;

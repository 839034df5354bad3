/*
 * schema.c - the per-shard tables of DESIGN.md, `init`, and the shard
 * list's fingerprint.
 *
 * Every statement is idempotent: init can run again at any time. A shard
 * that records another list's fingerprint, or another position in it, is
 * refused: the order of shards is part of the data's identity.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
};

/* More tables, registered by the cleaner's files (see bs_schema_extra). */
extern const char *const bs_schema_extra[];
extern const int bs_schema_nextra;

struct init_arg {
	const char *fingerprint;
	int n;
};

static int init_shard(bs_store_t *st, int i, void *p)
{
	struct init_arg *a = p;
	bs_buf_t b = {0};
	char label[192];
	int rc = 0;

	for (size_t k = 0; k < sizeof schema / sizeof *schema; k++)
		if ((rc = bs__shard_exec(st, i, schema[k], strlen(schema[k]))))
			goto done;
	for (int k = 0; k < bs_schema_nextra; k++)
		if ((rc = bs__shard_exec(st, i, bs_schema_extra[k], strlen(bs_schema_extra[k]))))
			goto done;

	shard_meta_t meta;
	if ((rc = bs__shard_meta(&meta, st, i)))
		goto done;
	if (meta.fingerprint[0]) {
		if (strcmp(meta.fingerprint, a->fingerprint) != 0 || meta.index != i) {
			rc = bs_error(BS_ECONFIG,
			              "%s already belongs to another shard list (fingerprint %s, position %d of %d); "
			              "this configuration's list is %s with it at position %d of %d: refusing to "
			              "initialise it (resharding is not supported)",
			              bs__shard_label(label, sizeof label, &st->shards[i]), meta.fingerprint, meta.index,
			              meta.count, a->fingerprint, i, a->n);
		}
		goto done;
	}
	bs__buf_printf(&b, "INSERT INTO bagstore_meta (k, v) VALUES ('fingerprint','%s'),"
	               "('shard_index','%d'),('shard_count','%d'),('shard_name',",
	           a->fingerprint, i, a->n);
	bs__buf_hex(&b, st->shards[i].conf->name, strlen(st->shards[i].conf->name));
	bs__buf_puts(&b, "),('schema_version','1')");
	if ((rc = bs__buf_ok(&b)))
		goto done;
	rc = bs__shard_exec(st, i, b.ptr, b.len);
done:
	bs__buf_free(&b);
	return rc;
}

int bs_init(bs_store_t *st)
{
	struct init_arg a = { st->fingerprint, st->n };
	int rc;
	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing init");
	if ((rc = bs__shard_each(st, NULL, init_shard, &a, NULL)))
		return rc;
	for (int i = 0; i < st->n; i++)
		st->shards[i].fp_state = 0;
	/* the configuration's indexes, created when absent */
	for (int k = 0; k < st->cfg->nindexes; k++) {
		bs_index_t cur;
		rc = bs_index_get(&cur, st, st->cfg->indexes[k].name);
		if (rc == BS_ENOTFOUND)
			rc = bs_index_create(st, &st->cfg->indexes[k]);
		if (rc)
			return rc;
	}
	return 0;
}

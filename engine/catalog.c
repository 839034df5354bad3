/*
 * catalog.c - the index catalog: bagstore_indexes, kept alike on every
 * shard, the writers' cache of it, and the DDL of the index tables it
 * names. Rows, cache and DDL only: when an index is created, promoted or
 * dropped is lifecycle.c's to say.
 *
 * The catalog is read from the first shard that answers, in list order;
 * writes go to every shard. Writers cache it for catalog_ttl seconds, which
 * is why a drop disables first and waits that long before dropping tables.
 */
#include "internal.h"

#include <mysqld_error.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int parse_state(bs_index_state_t *out, const char *s)
{
	if (!s)
		return -1;
	if (!strcmp(s, "building"))
		*out = BS_INDEX_BUILDING;
	else if (!strcmp(s, "ready"))
		*out = BS_INDEX_READY;
	else if (!strcmp(s, "disabled"))
		*out = BS_INDEX_DISABLED;
	else
		return -1;
	return 0;
}

static int read_catalog(bs_index_list_t *out, bs_store_t *st, int i)
{
	static const char q[] =
		"SELECT name, on_spec, shard_on, state, UNIX_TIMESTAMP(created), UNIX_TIMESTAMP(changed)"
		" FROM bagstore_indexes ORDER BY name";
	MYSQL_RES *res = NULL;
	char label[192];
	int rc;

	out->items = NULL;
	out->len = 0;
	if ((rc = bs__shard_query(&res, st, i, q, sizeof q - 1))) {
		if (bs__shard_last_errno(st, i) == ER_NO_SUCH_TABLE)
			rc = bs_error(BS_ECONFIG, "%s is not initialised: run `bagstore init`",
			              bs__shard_label(label, sizeof label, &st->shards[i]));
		return rc;
	}
	my_ulonglong rows = mysql_num_rows(res);
	if (rows && !(out->items = calloc((size_t)rows, sizeof *out->items))) {
		rc = bs_error(BS_ENOMEM, "out of memory reading the catalog");
		goto done;
	}
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res))) {
		bs_index_t *ix = &out->items[out->len];
		if (bs_index_parse(ix, row[0], row[1], row[2]) || parse_state(&ix->state, row[3])) {
			rc = bs_error(BS_ECORRUPT, "%s: catalog row for index %s does not parse: %s",
			              bs__shard_label(label, sizeof label, &st->shards[i]), row[0] ? row[0] : "?",
			              bs_last_error());
			goto done;
		}
		ix->created_us = bs__parse_unix_us(row[4]);
		ix->changed_us = bs__parse_unix_us(row[5]);
		out->len++;
	}
done:
	mysql_free_result(res);
	if (rc)
		bs_index_list_free(out);
	return rc;
}

int bs_index_list(bs_index_list_t *out, bs_store_t *st)
{
	int rc = BS_EUNREACHABLE, first = 0;
	char first_msg[1024] = "";
	for (int i = 0; i < st->n; i++) {
		rc = read_catalog(out, st, i);
		if (rc != BS_EUNREACHABLE)
			return rc;
		if (!first) {
			first = rc;
			snprintf(first_msg, sizeof first_msg, "%s", bs_last_error());
		}
	}
	return bs_error(first, "no shard answered for the index catalog; first: %s", first_msg);
}

int bs_index_get(bs_index_t *out, bs_store_t *st, const char *name)
{
	bs_index_list_t l;
	int rc = bs_index_list(&l, st);
	if (rc)
		return rc;
	const bs_index_t *ix = bs__index_find(&l, name);
	if (ix) {
		*out = *ix;
	} else {
		bs_buf_t names = {0};
		for (int i = 0; i < l.len; i++) {
			bs__buf_puts(&names, i ? ", " : "");
			bs__buf_puts(&names, l.items[i].name);
		}
		rc = bs_error(BS_ENOTFOUND, "no index named %s (indexes: %s)", name,
		              names.len ? names.ptr : "none");
		bs__buf_free(&names);
	}
	bs_index_list_free(&l);
	return rc;
}

int bs__catalog_cached(const bs_index_list_t **out, bs_store_t *st)
{
	double now = bs_now_mono();
	if (st->cat_loaded < 0 || now - st->cat_loaded >= st->cfg->catalog_ttl) {
		bs_index_list_t fresh;
		int rc = bs_index_list(&fresh, st);
		if (rc)
			return rc;
		bs_index_list_free(&st->cat);
		st->cat = fresh;
		st->cat_loaded = now;
	}
	*out = &st->cat;
	return 0;
}

void bs__catalog_invalidate(bs_store_t *st) { st->cat_loaded = -1; }

/* ------------------------------------------------------------ create/drop */

/* ------------------------------------------------------------ DDL */

/* Is the table `name` on shard i missing, or one bagstore made (its
 * comment marks it)? A table of that name that bagstore did not make is
 * BS_ECONFLICT, naming the shard and the table: never dropped. */
static int table_ours(bs_store_t *st, int i, void *p)
{
	const char *name = p;
	bs_buf_t b = {0};
	MYSQL_RES *res = NULL;
	char label[192];
	int rc;
	bs__buf_puts(&b, "SELECT TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA=DATABASE()"
	                 " AND TABLE_NAME=");
	bs__buf_hex(&b, name, strlen(name));
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, i, b.ptr, b.len)))
		goto done;
	MYSQL_ROW row = mysql_fetch_row(res);
	if (row && !(row[0] && !strcmp(row[0], BS__INDEX_TABLE_MARK)))
		rc = bs_error(BS_ECONFLICT, "%s: table %s exists and bagstore did not create it: refusing to "
		                            "create index %s over it (drop or rename that table, or choose "
		                            "another name); nothing was changed",
		              bs__shard_label(label, sizeof label, &st->shards[i]), name, name);
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

int bs__catalog_create_tables(bs_store_t *st, const bs_index_t *def)
{
	bs_buf_t b = {0};
	char *ddl = NULL;
	int rc;
	/* A table of the name on any shard that bagstore did not create stops
	 * it before anything changes anywhere. A table bagstore created with no
	 * catalog row is what an interrupted create leaves: it is replaced.
	 * (The catalog row is written only once tables exist, and removed only
	 * after they are dropped.) */
	if ((rc = bs__shard_each(st, NULL, table_ours, (void *)def->name, NULL)))
		return rc;
	if ((rc = bs_index_ddl(&ddl, def)))
		return rc;
	bs__buf_puts(&b, "DROP TABLE IF EXISTS ");
	bs__buf_ident(&b, def->name);
	bs__buf_puts(&b, "; ");
	bs__buf_puts(&b, ddl);
	if (!(rc = bs__buf_ok(&b)))
		rc = bs__exec_everywhere(st, b.ptr, b.len);
	free(ddl);
	bs__buf_free(&b);
	return rc;
}

/* One creation time for every shard's row, the first answering shard's
 * clock as an SQL expression into buf: the cleaner's jobs name the index
 * they build by it. */
static void creation_time(char *buf, size_t size, bs_store_t *st)
{
	static const char q[] = "SELECT UNIX_TIMESTAMP(NOW(6))";
	snprintf(buf, size, "NOW(6)");
	for (int i = 0; i < st->n; i++) {
		MYSQL_RES *res;
		if (bs__shard_query(&res, st, i, q, sizeof q - 1))
			continue;
		MYSQL_ROW row = mysql_fetch_row(res);
		/* digits and a point: MySQL's own text, checked before use */
		if (row && row[0] && strspn(row[0], "0123456789.") == strlen(row[0]) && strlen(row[0]) <= 20)
			snprintf(buf, size, "FROM_UNIXTIME(%s)", row[0]);
		mysql_free_result(res);
		break;
	}
	bs_error_clear();
}

int bs__catalog_insert(bs_store_t *st, const bs_index_t *def)
{
	bs_buf_t b = {0};
	char on[1024], created[40];
	int rc;
	bs_index_format_on(on, sizeof on, def);
	creation_time(created, sizeof created, st);
	const char *shard_on = def->props[def->shard_on].name;
	bs__buf_puts(&b, "INSERT INTO bagstore_indexes (name, on_spec, shard_on, state, created, changed) VALUES (");
	bs__buf_hex(&b, def->name, strlen(def->name));
	bs__buf_puts(&b, ",");
	bs__buf_hex(&b, on, strlen(on));
	bs__buf_puts(&b, ",");
	bs__buf_hex(&b, shard_on, strlen(shard_on));
	bs__buf_printf(&b, ",'building',%s,%s)", created, created);
	if (!(rc = bs__buf_ok(&b)) && !(rc = bs__exec_everywhere(st, b.ptr, b.len)))
		bs__catalog_invalidate(st);
	bs__buf_free(&b);
	return rc;
}

int bs__catalog_set_state(bs_store_t *st, const char *name, int from, bs_index_state_t to)
{
	bs_buf_t b = {0};
	int rc;
	const char *t = bs_index_state_name(to);
	bs__buf_puts(&b, "UPDATE bagstore_indexes SET changed=NOW(6), state=");
	bs__buf_hex(&b, t, strlen(t));
	if (from >= 0) {
		const char *f = bs_index_state_name((bs_index_state_t)from);
		bs__buf_puts(&b, " WHERE state=");
		bs__buf_hex(&b, f, strlen(f));
		bs__buf_puts(&b, " AND name=");
	} else {
		bs__buf_puts(&b, " WHERE name=");
	}
	bs__buf_hex(&b, name, strlen(name));
	if (!(rc = bs__buf_ok(&b)) && !(rc = bs__exec_everywhere(st, b.ptr, b.len)))
		bs__catalog_invalidate(st);
	bs__buf_free(&b);
	return rc;
}

int bs__catalog_remove(bs_store_t *st, const char *name)
{
	bs_buf_t b = {0};
	int rc;
	bs__buf_puts(&b, "DROP TABLE IF EXISTS ");
	bs__buf_ident(&b, name);
	bs__buf_puts(&b, "; DELETE FROM bagstore_indexes WHERE name=");
	bs__buf_hex(&b, name, strlen(name));
	if (!(rc = bs__buf_ok(&b)) && !(rc = bs__exec_everywhere(st, b.ptr, b.len)))
		bs__catalog_invalidate(st);
	bs__buf_free(&b);
	return rc;
}

struct rows_arg {
	const char *name;
	bool exact;
	int64_t *counts;
};

static int rows_on(bs_store_t *st, int i, void *p)
{
	struct rows_arg *a = p;
	bs_buf_t b = {0};
	MYSQL_RES *res = NULL;
	int rc;
	if (a->exact) {
		bs__buf_puts(&b, "SELECT COUNT(*) FROM ");
		bs__buf_ident(&b, a->name);
	} else {
		bs__buf_puts(&b, "SELECT TABLE_ROWS FROM information_schema.TABLES"
		                 " WHERE TABLE_SCHEMA=DATABASE() AND TABLE_NAME=");
		bs__buf_hex(&b, a->name, strlen(a->name));
	}
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, i, b.ptr, b.len)))
		goto done;
	MYSQL_ROW row = mysql_fetch_row(res);
	a->counts[i] = row && row[0] ? strtoll(row[0], NULL, 10) : 0;
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

int bs_index_rows(int64_t *counts, bs_store_t *st, const char *name, bool exact)
{
	struct rows_arg a = { name, exact, counts };
	for (int i = 0; i < st->n; i++)
		counts[i] = -1;
	return bs__shard_each(st, NULL, rows_on, &a, NULL);
}

/*
 * catalog.c - the index catalog: bagstore_indexes, kept alike on every
 * shard, and the index tables it names.
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

void bs_index_list_free(bs_index_list_t *l)
{
	if (!l)
		return;
	free(l->items);
	l->items = NULL;
	l->len = 0;
}

const bs_index_t *bs__index_find(const bs_index_list_t *l, const char *name)
{
	for (int i = 0; i < l->len; i++)
		if (!strcmp(l->items[i].name, name))
			return &l->items[i];
	return NULL;
}

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

struct sql_arg {
	const char *sql;
	size_t len;
	bool writable; /* check the fingerprint first */
};

static int exec_on(bs_store_t *st, int i, void *p)
{
	struct sql_arg *a = p;
	int rc;
	if (a->writable && (rc = bs__shard_check_writable(st, i)))
		return rc;
	return bs__shard_exec(st, i, a->sql, a->len);
}

int bs__exec_everywhere(bs_store_t *st, const char *sql, size_t len)
{
	struct sql_arg a = { sql, len, true };
	return bs__shard_each(st, NULL, exec_on, &a, NULL);
}

static int has_entities(bs_store_t *st, int i, void *p)
{
	bool *any = p;
	MYSQL_RES *res;
	static const char q[] = "SELECT 1 FROM entities LIMIT 1";
	int rc = bs__shard_query(&res, st, i, q, sizeof q - 1);
	if (rc)
		return rc;
	if (mysql_num_rows(res))
		any[i] = true;
	mysql_free_result(res);
	return 0;
}

int bs_index_create(bs_store_t *st, const bs_index_t *def)
{
	bs_buf_t b = {0};
	char *ddl = NULL, on[1024];
	bool *any = NULL;
	bs_index_t cur;
	int rc;

	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing to create index %s", def->name);
	/* the definition reaches SQL as names: check it as if it were typed */
	bs_index_format_on(on, sizeof on, def);
	if (def->shard_on < 0 || def->shard_on >= def->nprops)
		return bs_error(BS_EINVAL, "index %s: shard_on is not one of its properties", def->name);
	if ((rc = bs_index_parse(&cur, def->name, on, def->props[def->shard_on].name)))
		return rc;
	rc = bs_index_get(&cur, st, def->name);
	if (rc == 0)
		return bs_error(BS_ECONFLICT, "index %s already exists (%s)", def->name,
		                bs_index_state_name(cur.state));
	if (rc != BS_ENOTFOUND)
		return rc;

	/* A table with no catalog row is what an interrupted create leaves:
	 * replace it. (The catalog row is written only once tables exist, and
	 * removed only after they are dropped.) */
	if ((rc = bs_index_ddl(&ddl, def)))
		goto done;
	bs__buf_puts(&b, "DROP TABLE IF EXISTS ");
	bs__buf_ident(&b, def->name);
	bs__buf_puts(&b, "; ");
	bs__buf_puts(&b, ddl);
	if ((rc = bs__buf_ok(&b)) || (rc = bs__exec_everywhere(st, b.ptr, b.len)))
		goto done;

	if (!(any = calloc((size_t)st->n, sizeof *any))) {
		rc = bs_error(BS_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = bs__shard_each(st, NULL, has_entities, any, NULL)))
		goto done;
	bool empty = true;
	for (int i = 0; i < st->n; i++)
		if (any[i])
			empty = false;
	/* Always building first: writers that cached the catalog do not know
	 * the index yet. The cleaner's backfill jobs are queued here; it marks
	 * the index ready by the one rule of bs__index_promote. One creation time
	 * on every shard (the first answering shard's clock): the jobs name the
	 * index they build by it. */
	char created[40] = "NOW(6)";
	for (int i = 0; i < st->n; i++) {
		MYSQL_RES *res;
		static const char q[] = "SELECT UNIX_TIMESTAMP(NOW(6))";
		if (bs__shard_query(&res, st, i, q, sizeof q - 1))
			continue;
		MYSQL_ROW row = mysql_fetch_row(res);
		if (row && row[0])
			snprintf(created, sizeof created, "FROM_UNIXTIME(%.20s)", row[0]);
		mysql_free_result(res);
		break;
	}
	bs_error_clear();
	bs__buf_reset(&b);
	bs__buf_puts(&b, "INSERT INTO bagstore_indexes (name, on_spec, shard_on, state, created, changed) VALUES ('");
	bs__buf_puts(&b, def->name);
	bs__buf_puts(&b, "','");
	bs__buf_puts(&b, on);
	bs__buf_puts(&b, "','");
	bs__buf_puts(&b, def->props[def->shard_on].name);
	bs__buf_printf(&b, "','building',%s,%s)", created, created);
	if ((rc = bs__buf_ok(&b)) || (rc = bs__exec_everywhere(st, b.ptr, b.len)))
		goto done;
	bs__catalog_invalidate(st);
	if ((rc = bs_backfill_queue(st, def->name)))
		goto done;
	/* On an empty store the backfill is instant: build it here, which waits
	 * out the catalog TTL and repairs what writers wrote meanwhile. */
	if (empty)
		rc = bs_cleaner_backfill(st, def->name, NULL);
done:
	free(any);
	free(ddl);
	bs__buf_free(&b);
	return rc;
}

int bs_index_drop(bs_store_t *st, const char *name)
{
	bs_buf_t b = {0};
	bs_index_t ix;
	int rc;

	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing to drop index %s", name);
	if ((rc = bs_index_get(&ix, st, name)))
		return rc;
	if (ix.state != BS_INDEX_DISABLED) {
		bs__buf_printf(&b, "UPDATE bagstore_indexes SET state='disabled', changed=NOW(6) WHERE name='%s'", name);
		if ((rc = bs__buf_ok(&b)) || (rc = bs__exec_everywhere(st, b.ptr, b.len)))
			goto done;
		bs__catalog_invalidate(st);
		/* writers that cached the catalog stop maintaining it within a TTL */
		double wait = st->cfg->catalog_ttl;
		struct timespec ts = { (time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9) };
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	bs__buf_reset(&b);
	bs__buf_puts(&b, "DROP TABLE IF EXISTS ");
	bs__buf_ident(&b, name);
	bs__buf_printf(&b, "; DELETE FROM bagstore_indexes WHERE name='%s'", name);
	/* and the cleaner's bookkeeping of it: jobs, last verify, sweep cursor */
	bs__buf_printf(&b, "; DELETE FROM bagstore_jobs WHERE index_name='%s'; DELETE FROM bagstore_verify"
	               " WHERE index_name='%s'; DELETE FROM bagstore_watermarks WHERE name='sweep:%s'",
	           name, name, name);
	if ((rc = bs__buf_ok(&b)) || (rc = bs__exec_everywhere(st, b.ptr, b.len)))
		goto done;
	bs__catalog_invalidate(st);
done:
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
		bs__buf_printf(&b, "SELECT TABLE_ROWS FROM information_schema.TABLES"
		               " WHERE TABLE_SCHEMA=DATABASE() AND TABLE_NAME='%s'", a->name);
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

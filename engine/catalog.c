/*
 * catalog.c - the index catalog: bagstore_indexes, kept alike on every
 * shard, the writers' cache of it, and the DDL of the index tables it
 * names. Rows, cache and DDL only: when an index is created, promoted or
 * dropped is lifecycle.c's to say.
 *
 * The catalog is read from every shard that answers, at once, and merged:
 * an index the shards disagree on (a create, promotion or drop cut short by
 * a shard going away) is marked diverged, with each shard's state, and acts
 * as the furthest transition says (lifecycle.c heals it). Writes go to
 * every shard. Writers cache it for catalog_ttl seconds, which is why a
 * drop disables first and waits that long before dropping tables.
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

#define CATALOG_SQL \
	"SELECT name, on_spec, shard_on, state, UNIX_TIMESTAMP(created), UNIX_TIMESTAMP(changed)" \
	" FROM bagstore_indexes ORDER BY name"

/* Shard i's catalog rows into out. */
static int parse_catalog(bs_index_list_t *out, bs_store_t *st, int i, MYSQL_RES *res)
{
	char label[192];
	int rc = 0;
	out->items = NULL;
	out->len = 0;
	my_ulonglong rows = mysql_num_rows(res);
	if (rows && !(out->items = calloc((size_t)rows, sizeof *out->items)))
		return bs_error(BS_ENOMEM, "out of memory reading the catalog");
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res))) {
		bs_index_t *ix = &out->items[out->len];
		if (bs_index_parse(ix, row[0], row[1], row[2]) || parse_state(&ix->state, row[3])) {
			rc = bs_error(BS_ECORRUPT, "%s: catalog row for index %s does not parse: %s",
			              bs__shard_label(label, sizeof label, &st->shards[i]), row[0] ? row[0] : "?",
			              bs_last_error());
			break;
		}
		ix->created_us = bs__parse_unix_us(row[4]);
		ix->changed_us = bs__parse_unix_us(row[5]);
		out->len++;
	}
	if (rc)
		bs_index_list_free(out);
	return rc;
}

void bs__catalog_per_shard_free(bs_index_list_t *per, int n)
{
	for (int i = 0; per && i < n; i++)
		bs_index_list_free(&per[i]);
	free(per);
}

int bs__catalog_per_shard(bs_index_list_t **out, int *rcs, bs_store_t *st)
{
	bs__shard_stmt_t *q = calloc((size_t)st->n, sizeof *q);
	bs_index_list_t *per = calloc((size_t)st->n, sizeof *per);
	char label[192];
	int rc = 0, down = 0, first = -1;
	*out = NULL;
	if (!q || !per) {
		rc = bs_error(BS_ENOMEM, "out of memory reading the catalog");
		goto done;
	}
	/* every shard at once, from this thread */
	for (int i = 0; i < st->n; i++) {
		q[i].sql = CATALOG_SQL;
		q[i].len = sizeof CATALOG_SQL - 1;
	}
	bs__shard_run(st, q);
	for (int i = 0; i < st->n; i++) {
		rcs[i] = q[i].rc;
		if (!rcs[i] && q[i].nres && (rcs[i] = parse_catalog(&per[i], st, i, q[i].res[0])))
			snprintf(q[i].msg, sizeof q[i].msg, "%s", bs_last_error());
		if (rcs[i] && bs__shard_last_errno(st, i) == ER_NO_SUCH_TABLE) {
			rcs[i] = BS_ECONFIG;
			snprintf(q[i].msg, sizeof q[i].msg,
			         "%s is not initialised: run `bagstore init`"
			         " (or is this another shard list?)",
			         bs__shard_label(label, sizeof label, &st->shards[i]));
		}
		if (rcs[i] == BS_EUNREACHABLE) {
			down++;
			per[i].unreachable = 1;
			snprintf(per[i].unreachable_first, sizeof per[i].unreachable_first, "%.*s",
			         (int)sizeof per[i].unreachable_first - 1, q[i].msg);
		} else if (rcs[i] && first < 0)
			first = i;
	}
	if (first >= 0) /* its message names the shard */
		rc = bs_error(rcs[first], "%s", q[first].msg);
	else if (down == st->n)
		rc = bs_error(BS_EUNREACHABLE, "no shard answered for the index catalog; first: %s", q[0].msg);
done:
	if (q)
		bs__shard_stmts_clear(q, st->n);
	free(q);
	if (rc)
		bs__catalog_per_shard_free(per, st->n);
	else
		*out = per;
	return rc;
}

/* One index as every answering shard has it: the state the store acts on
 * (disabled when any shard says so: a drop was under way; building when a
 * shard lacks the row: a create was; ready when some are ready and the rest
 * building: a promotion was), whether the shards differ, and each one's
 * state in words when they do. */
static void merge_one(bs_index_t *out, const bs_index_list_t *per, const int *rcs, const bs_store_t *st,
                      const char *name)
{
	bool any_disabled = false, any_absent = false, any_ready = false, differ = false;
	const bs_index_t *first = NULL;
	char text[sizeof out->divergence];
	size_t off = 0;
	for (int i = 0; i < st->n; i++) {
		if (rcs[i])
			continue;
		const bs_index_t *ix = bs__index_find(&per[i], name);
		if (!ix) {
			any_absent = true;
		} else {
			if (!first)
				first = ix;
			any_disabled |= ix->state == BS_INDEX_DISABLED;
			any_ready |= ix->state == BS_INDEX_READY;
			differ |= ix->state != first->state || ix->created_us != first->created_us;
		}
		if (off < sizeof text)
			off += (size_t)snprintf(text + off, sizeof text - off, "%s%s %s", off ? ", " : "",
			                        st->shards[i].conf->name,
			                        ix ? bs_index_state_name(ix->state) : "(no row)");
	}
	*out = *first;
	out->diverged = differ || any_absent;
	out->divergence[0] = '\0';
	if (!out->diverged)
		return;
	snprintf(out->divergence, sizeof out->divergence, "%s", text);
	if (any_disabled)
		out->state = BS_INDEX_DISABLED;
	else if (any_absent)
		out->state = BS_INDEX_BUILDING;
	else if (any_ready)
		out->state = BS_INDEX_READY;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const bs_index_t *)a)->name, ((const bs_index_t *)b)->name);
}

int bs_index_list(bs_index_list_t *out, bs_store_t *st)
{
	bs_index_list_t *per = NULL;
	int *rcs = calloc((size_t)st->n, sizeof *rcs), total = 0, rc;
	out->items = NULL;
	out->len = 0;
	out->unreachable = 0;
	out->unreachable_first[0] = '\0';
	BS_ERR_ALLOC(rcs);
	if ((rc = bs__catalog_per_shard(&per, rcs, st)))
		goto done;
	for (int i = 0; i < st->n; i++) {
		total += per[i].len;
		if (per[i].unreachable && !out->unreachable++)
			snprintf(out->unreachable_first, sizeof out->unreachable_first, "%s", per[i].unreachable_first);
	}
	if (total && !(out->items = calloc((size_t)total, sizeof *out->items))) {
		rc = bs_error(BS_ENOMEM, "out of memory reading the catalog");
		goto done;
	}
	/* the union of the names, each merged across the shards */
	for (int i = 0; i < st->n; i++)
		for (int k = 0; k < per[i].len; k++) {
			const char *name = per[i].items[k].name;
			if (bs__index_find(out, name))
				continue;
			merge_one(&out->items[out->len++], per, rcs, st, name);
		}
	if (out->len > 1) /* an empty catalog has no array at all */
		qsort(out->items, (size_t)out->len, sizeof *out->items, by_name);
done:
	bs__catalog_per_shard_free(per, st->n);
	free(rcs);
	if (rc)
		bs_index_list_free(out);
	return rc;
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
		bs_buf_t names = { 0 };
		for (int i = 0; i < l.len; i++) {
			bs__buf_puts(&names, i ? ", " : "");
			bs__buf_puts(&names, l.items[i].name);
		}
		rc = bs_error(BS_ENOTFOUND, "no index named %s (indexes: %s)", name, names.len ? names.ptr : "none");
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

void bs__catalog_invalidate(bs_store_t *st)
{
	st->cat_loaded = -1;
}

/* ------------------------------------------------------------ create/drop */

/* ------------------------------------------------------------ DDL */

/* Is the table `name` on shard i missing, or one bagstore made (its
 * comment marks it)? A table of that name that bagstore did not make is
 * BS_ECONFLICT, naming the shard and the table: never dropped. */
static int table_ours(bs_store_t *st, int i, void *p)
{
	const char *name = p;
	bs_buf_t b = { 0 };
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
		rc = bs_error(BS_ECONFLICT,
		              "%s: table %s exists and bagstore did not create it: refusing to "
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
	bs_buf_t b = { 0 };
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

struct insert_arg {
	bs_buf_t row;  /* the INSERT */
	bs_buf_t mine; /* does the shard hold this very row? */
};

/* The row on shard i. A row of the same name already there is this
 * create's own when it has the same definition and creation time: a
 * cleaner that read the catalog while the row was on some shards only
 * took it for a create cut short and copied it here (bs__index_heal).
 * Any other row of that name is another index's, and refused. */
static int insert_on(bs_store_t *st, int i, void *p)
{
	struct insert_arg *a = p;
	MYSQL_RES *res;
	char msg[1024];
	int rc;
	if ((rc = bs__shard_check(st, i)) || !(rc = bs__shard_exec(st, i, a->row.ptr, a->row.len)))
		return rc;
	if (bs__shard_last_errno(st, i) != ER_DUP_ENTRY)
		return rc;
	snprintf(msg, sizeof msg, "%s", bs_last_error());
	if (bs__shard_query(&res, st, i, a->mine.ptr, a->mine.len)) /* both messages: the read's says why */
		return bs_error(rc, "%s; and reading the row there: %s", msg, bs_last_error());
	bool ours = mysql_num_rows(res) == 1;
	mysql_free_result(res);
	if (!ours)
		return bs_error(rc, "%s", msg);
	bs_error_clear();
	return 0;
}

/* ",<name>,<on_spec>,<shard_on>" of def as hex literals, each after its
 * separator (sep[0..2]): the row's values, or the conditions naming it. */
static void def_lits(bs_buf_t *b, const char *const sep[3], const bs_index_t *def, const char *on)
{
	const char *v[3] = { def->name, on, def->props[def->shard_on].name };
	for (int k = 0; k < 3; k++) {
		bs__buf_puts(b, sep[k]);
		bs__buf_hex(b, v[k], strlen(v[k]));
	}
}

int bs__catalog_insert(bs_store_t *st, const bs_index_t *def)
{
	struct insert_arg a = { { 0 }, { 0 } };
	char on[1024], created[40];
	int rc;
	bs_index_format_on(on, sizeof on, def);
	creation_time(created, sizeof created, st);
	def_lits(&a.row,
	         (const char *const[3]){ "INSERT INTO bagstore_indexes (name, on_spec, shard_on, state, created, changed)"
	                                 " VALUES (",
	                                 ",", "," },
	         def, on);
	bs__buf_printf(&a.row, ",'building',%s,%s)", created, created);
	def_lits(&a.mine, (const char *const[3]){ "SELECT 1 FROM bagstore_indexes WHERE name=", " AND on_spec=", " AND shard_on=" },
	         def, on);
	bs__buf_printf(&a.mine, " AND created=%s AND state<>'disabled'", created);
	if (!(rc = bs__buf_ok(&a.row)) && !(rc = bs__buf_ok(&a.mine)) &&
	    !(rc = bs__shard_each(st, NULL, insert_on, &a, NULL)))
		bs__catalog_invalidate(st);
	bs__buf_free(&a.row);
	bs__buf_free(&a.mine);
	return rc;
}

int bs__catalog_set_state(bs_store_t *st, const char *name, int from, bs_index_state_t to)
{
	bs_buf_t b = { 0 };
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

int bs__catalog_put_row(bs_store_t *st, int i, const bs_index_t *def)
{
	bs_buf_t b = { 0 };
	char *ddl = NULL, on[1024];
	const char *state = bs_index_state_name(def->state), *shard_on = def->props[def->shard_on].name;
	int rc;
	if ((rc = table_ours(st, i, (void *)def->name)) || (rc = bs_index_ddl(&ddl, def)))
		goto done;
	bs_index_format_on(on, sizeof on, def);
	bs__buf_puts(&b, ddl); /* CREATE TABLE IF NOT EXISTS: a table there is kept */
	bs__buf_puts(&b, ";INSERT INTO bagstore_indexes (name, on_spec, shard_on, state, created, changed) VALUES (");
	bs__buf_hex(&b, def->name, strlen(def->name));
	bs__buf_puts(&b, ",");
	bs__buf_hex(&b, on, strlen(on));
	bs__buf_puts(&b, ",");
	bs__buf_hex(&b, shard_on, strlen(shard_on));
	bs__buf_puts(&b, ",");
	bs__buf_hex(&b, state, strlen(state));
	bs__buf_puts(&b, ",");
	bs__buf_from_unixtime(&b, def->created_us);
	bs__buf_puts(&b, ",NOW(6)) ON DUPLICATE KEY UPDATE state=VALUES(state), changed=NOW(6)");
	if (!(rc = bs__buf_ok(&b)) && !(rc = bs__shard_check(st, i)) && !(rc = bs__shard_exec(st, i, b.ptr, b.len)))
		bs__catalog_invalidate(st);
done:
	free(ddl);
	bs__buf_free(&b);
	return rc;
}

int bs__catalog_remove(bs_store_t *st, const char *name)
{
	bs_buf_t b = { 0 };
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

int bs__catalog_analyze(bs_store_t *st, const char *name)
{
	bs_buf_t b = { 0 };
	int rc;
	bs__buf_puts(&b, "ANALYZE TABLE ");
	bs__buf_ident(&b, name);
	if (!(rc = bs__buf_ok(&b)))
		rc = bs__exec_everywhere(st, b.ptr, b.len);
	bs__buf_free(&b);
	return rc;
}

/* ------------------------------------------------------------ new shards */

/* On shard i: the catalog's rows and tables it lacks (a shard added to the
 * store since the indexes were created). */
static int extend_on(bs_store_t *st, int i, void *p)
{
	const bs_index_list_t *l = p;
	bs_buf_t b = { 0 };
	int rc = 0;
	for (int k = 0; k < l->len && !rc; k++) {
		const bs_index_t *ix = &l->items[k];
		char on[1024], *ddl = NULL;
		if (ix->state == BS_INDEX_DISABLED)
			continue; /* being dropped */
		if ((rc = bs_index_ddl(&ddl, ix)))
			break;
		bs_index_format_on(on, sizeof on, ix);
		const char *state = bs_index_state_name(ix->state), *shard_on = ix->props[ix->shard_on].name;
		bs__buf_reset(&b);
		bs__buf_puts(&b, ddl);
		bs__buf_puts(&b,
		             ";INSERT IGNORE INTO bagstore_indexes (name, on_spec, shard_on, state, created, changed)"
		             " VALUES (");
		bs__buf_hex(&b, ix->name, strlen(ix->name));
		bs__buf_puts(&b, ",");
		bs__buf_hex(&b, on, strlen(on));
		bs__buf_puts(&b, ",");
		bs__buf_hex(&b, shard_on, strlen(shard_on));
		bs__buf_puts(&b, ",");
		bs__buf_hex(&b, state, strlen(state));
		bs__buf_puts(&b, ",");
		bs__buf_from_unixtime(&b, ix->created_us);
		bs__buf_puts(&b, ",");
		bs__buf_from_unixtime(&b, ix->changed_us);
		bs__buf_puts(&b, ")");
		free(ddl);
		if (!(rc = bs__buf_ok(&b)))
			rc = bs__shard_exec(st, i, b.ptr, b.len);
	}
	bs__buf_free(&b);
	return rc;
}

int bs__catalog_extend(bs_store_t *st)
{
	bs_index_list_t l = { 0 };
	int rc = bs_index_list(&l, st);
	if (!rc && l.len && !(rc = bs__shard_each(st, NULL, extend_on, &l, NULL)))
		bs__catalog_invalidate(st);
	bs_index_list_free(&l);
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
	bs_buf_t b = { 0 };
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

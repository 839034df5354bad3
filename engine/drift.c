/*
 * drift.c - comparing an index's rows with the bodies, and fixing them:
 * the one routine under repair, verify and promotion.
 *
 * For a batch of entities, the rows they should have are computed from
 * their bodies (bs__index_row_for), the rows they do have are read with
 * `entity_id IN (...)` on every shard at once, and values are compared in a
 * canonical text form (hex for bytes and strings, decimal for ints and
 * bools, %.17g for floats), so no comparison depends on a collation.
 * Orphans (rows whose entity is gone) are found by walking an index table
 * by entity_id and asking the entity shards which ids exist.
 *
 * Also here: ebatch_t, a batch of entities read and decoded.
 */
#include "cleaner.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ batches */

void bs__ebatch_reset(ebatch_t *b)
{
	for (size_t i = 0; i < b->len; i++)
		bs_value_clear(&b->bags[i]);
	b->len = 0;
	b->corrupt = 0;
}

void bs__ebatch_free(ebatch_t *b)
{
	bs__ebatch_reset(b);
	free(b->ids);
	free(b->bags);
	free(b->added);
	free(b->updated);
	memset(b, 0, sizeof *b);
}

static int ebatch_grow(ebatch_t *b, size_t need)
{
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	bs_id_t *ids = realloc(b->ids, cap * sizeof *ids);
	if (ids)
		b->ids = ids;
	bs_value_t *bags = realloc(b->bags, cap * sizeof *bags);
	if (bags)
		b->bags = bags;
	int64_t *added = realloc(b->added, cap * sizeof *added);
	if (added)
		b->added = added;
	int64_t *updated = realloc(b->updated, cap * sizeof *updated);
	if (updated)
		b->updated = updated;
	if (!ids || !bags || !added || !updated)
		return bs_error(BS_ENOMEM, "out of memory reading entities");
	b->cap = cap;
	return 0;
}

int bs__ebatch_load(ebatch_t *b, MYSQL_RES *res)
{
	int rc;
	if ((rc = ebatch_grow(b, b->len + (size_t)mysql_num_rows(res))))
		return rc;
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res))) {
		unsigned long *lens = mysql_fetch_lengths(res);
		if (!row[1] || lens[1] != 16)
			continue;
		size_t k = b->len++;
		b->added[k] = row[0] ? strtoll(row[0], NULL, 10) : 0;
		memcpy(b->ids[k].b, row[1], 16);
		b->updated[k] = bs__parse_unix_us(row[2]);
		if (!row[3] || bs__body_decode_row(&b->bags[k], row[3], row[3] ? lens[3] : 0, row[1], NULL)) {
			bs_value_nil(&b->bags[k]);
			if (!b->corrupt++)
				snprintf(b->corrupt_first, sizeof b->corrupt_first, "%s", bs_last_error());
			bs_error_clear();
		}
	}
	return 0;
}

int bs__ebatch_fetch(ebatch_t *b, size_t *got, bs_store_t *st, int shard, const bs_buf_t *sql)
{
	MYSQL_RES *res = NULL;
	int rc;
	bs__ebatch_reset(b);
	if (got)
		*got = 0;
	if ((rc = bs__buf_ok(sql)) || (rc = bs__shard_query(&res, st, shard, sql->ptr, sql->len)))
		return rc;
	if (got)
		*got = (size_t)mysql_num_rows(res);
	rc = bs__ebatch_load(b, res);
	mysql_free_result(res);
	return rc;
}

_Static_assert(sizeof(bs_id_t) == 16, "bs__ids_find walks bs_id_t arrays as 16-byte ids");

int bs__id_cmp(const void *a, const void *b) { return memcmp(a, b, 16); }

long bs__ids_find(const void *ids, size_t n, const void *id)
{
	const uint8_t *base = ids;
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int r = memcmp(base + 16 * mid, id, 16);
		if (r == 0)
			return (long)mid;
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* ------------------------------------------------------------ canonical values */

static void canon_float(bs_buf_t *b, double f)
{
	if (f == 0)
		f = 0; /* -0 and 0 are one value */
	bs__buf_printf(b, "%.17g", f);
}

/* The expected value of prop, canonical. */
static void canon_value(bs_buf_t *b, const bs_value_t *v, const bs_prop_t *prop)
{
	static const char hx[] = "0123456789ABCDEF";
	switch (prop->type) {
	case BS_COL_UUID:
	case BS_COL_BINARY:
	case BS_COL_STRING:
		for (size_t i = 0; i < v->v.s.len; i++) {
			char two[2] = { hx[(uint8_t)v->v.s.ptr[i] >> 4], hx[(uint8_t)v->v.s.ptr[i] & 15] };
			bs__buf_putn(b, two, 2);
		}
		break;
	case BS_COL_INT:
		bs__buf_printf(b, "%lld", (long long)v->v.i);
		break;
	case BS_COL_BOOL:
		bs__buf_puts(b, v->v.b ? "1" : "0");
		break;
	case BS_COL_FLOAT:
		canon_float(b, v->type == BS_INT ? (double)v->v.i : v->v.f);
		break;
	}
}

/* The select expression whose text canon_db turns into the canonical form. */
static void canon_select(bs_buf_t *b, const bs_prop_t *prop)
{
	if (prop->type == BS_COL_UUID || prop->type == BS_COL_BINARY || prop->type == BS_COL_STRING) {
		bs__buf_puts(b, "HEX(");
		bs__buf_ident(b, prop->name);
		bs__buf_puts(b, ")");
	} else {
		bs__buf_ident(b, prop->name);
	}
}

static void canon_db(bs_buf_t *b, const char *text, const bs_prop_t *prop)
{
	if (!text) {
		bs__buf_puts(b, "NULL");
		return;
	}
	if (prop->type == BS_COL_FLOAT)
		canon_float(b, strtod(text, NULL));
	else if (prop->type == BS_COL_BOOL)
		bs__buf_puts(b, strcmp(text, "0") ? "1" : "0");
	else
		bs__buf_puts(b, text);
}

/* ------------------------------------------------------------ check */

typedef struct {
	const bs_index_t *idx;
	const bs_id_t *ids;
	size_t n;
	int *expect;          /* shard, -1 none */
	size_t *expect_off;   /* into expect_text */
	bs_buf_t expect_text; /* canonical rows, NUL-separated */
	size_t *order;        /* ids sorted */
	bool *ok, *upsert;
	bs_buf_t *del;        /* per shard: entity_id list */
	int64_t *ndel;
	bs_buf_t *ins;        /* per shard: VALUES list */
	int64_t *nins;
	MYSQL_RES **res;      /* per shard */
} check_t;

static int cmp_order(const void *a, const void *b, void *ids)
{
	const bs_id_t *v = ids;
	return memcmp(v[*(const size_t *)a].b, v[*(const size_t *)b].b, 16);
}

static long find_id(const check_t *c, const void *id)
{
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int r = memcmp(c->ids[c->order[mid]].b, id, 16);
		if (r == 0)
			return (long)c->order[mid];
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static int read_rows_on(bs_store_t *st, int i, void *p)
{
	check_t *c = p;
	bs_buf_t b = {0};
	int rc;
	bs__buf_puts(&b, "SELECT entity_id");
	for (int k = 0; k < c->idx->nprops; k++) {
		bs__buf_puts(&b, ",");
		canon_select(&b, &c->idx->props[k]);
	}
	bs__buf_puts(&b, " FROM ");
	bs__buf_ident(&b, c->idx->name);
	bs__buf_puts(&b, " WHERE entity_id IN (");
	for (size_t k = 0; k < c->n; k++) {
		if (k)
			bs__buf_puts(&b, ",");
		bs__buf_hex(&b, c->ids[k].b, 16);
	}
	bs__buf_puts(&b, ")");
	if (!(rc = bs__buf_ok(&b)))
		rc = bs__shard_query(&c->res[i], st, i, b.ptr, b.len);
	bs__buf_free(&b);
	return rc;
}

static int fix_on(bs_store_t *st, int i, void *p)
{
	check_t *c = p;
	bs_buf_t b = {0};
	int rc;
	if (!c->ndel[i] && !c->nins[i])
		return 0;
	if ((rc = bs__shard_check(st, i)))
		return rc;
	if (c->ndel[i]) {
		bs__buf_puts(&b, "DELETE FROM ");
		bs__buf_ident(&b, c->idx->name);
		bs__buf_puts(&b, " WHERE entity_id IN (");
		bs__buf_putn(&b, c->del[i].ptr, c->del[i].len);
		bs__buf_puts(&b, ")");
	}
	if (c->nins[i]) {
		bs__buf_puts(&b, b.len ? ";INSERT INTO " : "INSERT INTO ");
		bs__buf_ident(&b, c->idx->name);
		bs__buf_puts(&b, " (");
		for (int k = 0; k < c->idx->nprops; k++) {
			bs__buf_ident(&b, c->idx->props[k].name);
			bs__buf_puts(&b, ",");
		}
		bs__buf_puts(&b, "entity_id) VALUES ");
		bs__buf_putn(&b, c->ins[i].ptr, c->ins[i].len);
		bs__buf_puts(&b, " ON DUPLICATE KEY UPDATE ");
		for (int k = 0; k < c->idx->nprops; k++) {
			if (k)
				bs__buf_puts(&b, ",");
			bs__buf_ident(&b, c->idx->props[k].name);
			bs__buf_puts(&b, "=VALUES(");
			bs__buf_ident(&b, c->idx->props[k].name);
			bs__buf_puts(&b, ")");
		}
	}
	if (!(rc = bs__buf_ok(&b)))
		rc = bs__shard_exec(st, i, b.ptr, b.len);
	bs__buf_free(&b);
	return rc;
}

static void check_free(check_t *c, int ns)
{
	for (int j = 0; c->res && j < ns; j++)
		if (c->res[j])
			mysql_free_result(c->res[j]);
	for (int j = 0; c->del && j < ns; j++)
		bs__buf_free(&c->del[j]);
	for (int j = 0; c->ins && j < ns; j++)
		bs__buf_free(&c->ins[j]);
	bs__buf_free(&c->expect_text);
	free(c->expect);
	free(c->expect_off);
	free(c->order);
	free(c->ok);
	free(c->upsert);
	free(c->del);
	free(c->ins);
	free(c->ndel);
	free(c->nins);
	free(c->res);
}

static int check_alloc(check_t *c, size_t n, int ns)
{
	c->expect = calloc(n, sizeof *c->expect);
	c->expect_off = calloc(n, sizeof *c->expect_off);
	c->order = calloc(n, sizeof *c->order);
	c->ok = calloc(n, sizeof *c->ok);
	c->upsert = calloc(n, sizeof *c->upsert);
	c->del = calloc((size_t)ns, sizeof *c->del);
	c->ins = calloc((size_t)ns, sizeof *c->ins);
	c->ndel = calloc((size_t)ns, sizeof *c->ndel);
	c->nins = calloc((size_t)ns, sizeof *c->nins);
	c->res = calloc((size_t)ns, sizeof *c->res);
	if (!c->expect || !c->expect_off || !c->order || !c->ok || !c->upsert || !c->del || !c->ins ||
	    !c->ndel || !c->nins || !c->res)
		return bs_error(BS_ENOMEM, "out of memory checking index rows");
	return 0;
}

/* What each entity should have: its shard (-1 none) and canonical row. */
static int expect_rows(drift_counts_t *out, check_t *c, const bs_value_t *bags, int ns)
{
	const bs_index_t *idx = c->idx;
	for (size_t k = 0; k < c->n; k++) {
		const bs_value_t *vals[BS_INDEX_MAX_PROPS];
		bs_value_t tmps[BS_INDEX_MAX_PROPS];
		bool misfit = false;
		c->order[k] = k;
		c->expect[k] = bags[k].type == BS_MAP ? bs__index_row_for(vals, tmps, idx, &bags[k], ns, &misfit) : -1;
		if (misfit)
			out->misfit++;
		c->expect_off[k] = c->expect_text.len;
		if (c->expect[k] >= 0) {
			for (int p = 0; p < idx->nprops; p++) {
				if (p)
					bs__buf_puts(&c->expect_text, "\x1f");
				canon_value(&c->expect_text, vals[p], &idx->props[p]);
			}
			for (int p = 0; p < idx->nprops; p++)
				if (vals[p] == &tmps[p])
					bs_value_clear(&tmps[p]);
		}
		bs__buf_putn(&c->expect_text, "", 1); /* the NUL separator */
	}
	qsort_r(c->order, c->n, sizeof *c->order, cmp_order, (void *)c->ids);
	return bs__buf_ok(&c->expect_text);
}

/* The rows every shard has (read by read_rows_on) against the expected:
 * right ones marked ok, wrong ones on the right shard to overwrite, rows
 * on a wrong shard to delete; then what is missing. */
static int compare_rows(drift_counts_t *out, check_t *c, int ns)
{
	const bs_index_t *idx = c->idx;
	bs_buf_t row = {0};
	int rc = 0;
	for (int j = 0; j < ns; j++) {
		MYSQL_ROW r;
		while ((r = mysql_fetch_row(c->res[j]))) {
			unsigned long *lens = mysql_fetch_lengths(c->res[j]);
			if (!r[0] || lens[0] != 16)
				continue;
			long k = find_id(c, r[0]);
			if (k < 0)
				continue;
			bs__buf_reset(&row);
			for (int p = 0; p < idx->nprops; p++) {
				if (p)
					bs__buf_puts(&row, "\x1f");
				canon_db(&row, r[1 + p], &idx->props[p]);
			}
			if ((rc = bs__buf_ok(&row)))
				goto done;
			const char *want = c->expect_text.ptr + c->expect_off[k];
			if (c->expect[k] == j && !strcmp(row.ptr, want) && !c->ok[k]) {
				c->ok[k] = true;
				continue;
			}
			out->stale++;
			if (c->expect[k] == j) {
				c->upsert[k] = true; /* wrong values on the right shard: overwrite */
			} else {
				bs__buf_puts(&c->del[j], c->ndel[j] ? "," : "");
				bs__buf_hex(&c->del[j], r[0], 16);
				c->ndel[j]++;
			}
		}
	}
	for (size_t k = 0; k < c->n; k++) {
		if (c->expect[k] < 0 || c->ok[k])
			continue;
		if (!c->upsert[k])
			out->missing++;
		c->upsert[k] = true;
	}
done:
	bs__buf_free(&row);
	return rc;
}

/* The upserts of what is missing or wrong, per target shard, then the
 * deletes and upserts on every shard at once. */
static int fix_rows(drift_counts_t *out, check_t *c, bs_store_t *st, const bs_value_t *bags)
{
	const bs_index_t *idx = c->idx;
	int ns = st->n, rc;
	for (size_t k = 0; k < c->n; k++) {
		if (!c->upsert[k] || c->ok[k])
			continue;
		const bs_value_t *vals[BS_INDEX_MAX_PROPS];
		bs_value_t tmps[BS_INDEX_MAX_PROPS];
		int t = bs__index_row_for(vals, tmps, idx, &bags[k], ns, NULL);
		bs_buf_t *b = &c->ins[t];
		bs__buf_puts(b, c->nins[t] ? ",(" : "(");
		for (int p = 0; p < idx->nprops; p++) {
			bs__buf_value(b, vals[p], &idx->props[p]);
			bs__buf_puts(b, ",");
			if (vals[p] == &tmps[p])
				bs_value_clear(&tmps[p]);
		}
		bs__buf_hex(b, c->ids[k].b, 16);
		bs__buf_puts(b, ")");
		c->nins[t]++;
	}
	for (int j = 0; j < ns; j++)
		if ((rc = bs__buf_ok(&c->del[j])) || (rc = bs__buf_ok(&c->ins[j])))
			return rc;
	if ((rc = bs__shard_each(st, NULL, fix_on, c, NULL)))
		return rc;
	for (int j = 0; j < ns; j++) {
		out->repaired += c->ndel[j] + c->nins[j];
		out->inserted += c->nins[j];
		out->deleted += c->ndel[j];
	}
	return 0;
}

int bs__drift_check(drift_counts_t *out, bs_store_t *st, const bs_index_t *idx,
                    const bs_id_t *ids, const bs_value_t *bags, size_t n, bool fix)
{
	check_t c = { .idx = idx, .ids = ids, .n = n };
	int rc;
	if (n == 0)
		return 0;
	if (!(rc = check_alloc(&c, n, st->n)) && !(rc = expect_rows(out, &c, bags, st->n)) &&
	    !(rc = bs__shard_each(st, NULL, read_rows_on, &c, NULL)) && !(rc = compare_rows(out, &c, st->n)) && fix)
		rc = fix_rows(out, &c, st, bags);
	check_free(&c, st->n);
	return rc;
}

/* ------------------------------------------------------------ orphans */

typedef struct {
	uint8_t (*ids)[16];
	size_t n;
	bool *present;
} exist_t;

static int exist_on(bs_store_t *st, int i, void *p)
{
	exist_t *e = p;
	bs_buf_t b = {0};
	MYSQL_RES *res = NULL;
	size_t count = 0;
	int rc = 0;
	bs__buf_puts(&b, "SELECT id FROM entities WHERE id IN (");
	for (size_t k = 0; k < e->n; k++) {
		bs_id_t id;
		memcpy(id.b, e->ids[k], 16);
		if (bs_route_id(&id, st->n) != i)
			continue;
		bs__buf_puts(&b, count++ ? "," : "");
		bs__buf_hex(&b, e->ids[k], 16);
	}
	bs__buf_puts(&b, ")");
	if (!count)
		goto done;
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, i, b.ptr, b.len)))
		goto done;
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res))) {
		if (!row[0] || mysql_fetch_lengths(res)[0] != 16)
			continue;
		/* ids are in entity_id order (the index walk's ORDER BY) */
		long k = bs__ids_find(e->ids, e->n, row[0]);
		if (k >= 0)
			e->present[k] = true;
	}
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

int bs__drift_orphans(int64_t *orphans, int64_t *fixed, bs_store_t *st, const bs_index_t *idx,
                  int shard, uint8_t cursor[16], size_t limit, bool fix, bool *wrapped)
{
	bs_buf_t b = {0};
	MYSQL_RES *res = NULL;
	exist_t e = {0};
	int rc;
	*wrapped = false;
	bs__buf_puts(&b, "SELECT entity_id FROM ");
	bs__buf_ident(&b, idx->name);
	bs__buf_puts(&b, " WHERE entity_id>");
	bs__buf_hex(&b, cursor, 16);
	bs__buf_printf(&b, " ORDER BY entity_id LIMIT %zu", limit);
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, shard, b.ptr, b.len)))
		goto done;
	size_t rows = (size_t)mysql_num_rows(res);
	if (rows < limit)
		*wrapped = true;
	if (!rows) {
		memset(cursor, 0, 16);
		goto done;
	}
	e.ids = calloc(rows, 16);
	e.present = calloc(rows, sizeof *e.present);
	if (!e.ids || !e.present) {
		rc = bs_error(BS_ENOMEM, "out of memory sweeping orphans");
		goto done;
	}
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res)))
		if (row[0] && mysql_fetch_lengths(res)[0] == 16)
			memcpy(e.ids[e.n++], row[0], 16);
	if ((rc = bs__shard_each(st, NULL, exist_on, &e, NULL)))
		goto done;
	if (e.n)
		memcpy(cursor, e.ids[e.n - 1], 16);
	if (*wrapped)
		memset(cursor, 0, 16);
	bs__buf_reset(&b);
	size_t gone = 0;
	for (size_t k = 0; k < e.n; k++) {
		if (e.present[k])
			continue;
		bs__buf_puts(&b, gone++ ? "," : "");
		bs__buf_hex(&b, e.ids[k], 16);
	}
	*orphans += (int64_t)gone;
	if (!gone || !fix)
		goto done;
	bs_buf_t d = {0};
	bs__buf_puts(&d, "DELETE FROM ");
	bs__buf_ident(&d, idx->name);
	bs__buf_puts(&d, " WHERE entity_id IN (");
	bs__buf_putn(&d, b.ptr, b.len);
	bs__buf_puts(&d, ")");
	if (!(rc = bs__buf_ok(&d)) && !(rc = bs__shard_check(st, shard)))
		rc = bs__shard_exec(st, shard, d.ptr, d.len);
	bs__buf_free(&d);
	if (!rc)
		*fixed += (int64_t)gone;
done:
	if (res)
		mysql_free_result(res);
	free(e.ids);
	free(e.present);
	bs__buf_free(&b);
	return rc;
}

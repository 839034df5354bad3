/*
 * browse.c - what the console's entity browser reads: entities newest
 * first, one shard or all merged, paged by key; and one entity's rows in
 * every index on every shard beside the rows it should have.
 *
 * Paging is by (updated, added_id) per shard, walking KEY(updated)
 * backwards (InnoDB appends the primary key to it): never COUNT(*) or
 * OFFSET. A merged page asks every shard for a page, merges newest first,
 * and moves each shard's position only past the rows it contributed.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	bool started, done;
	int64_t updated_us;
	int64_t added_id;
} scan_pos_t;

struct bs_scan {
	int n;
	int only; /* -1: all shards */
	scan_pos_t *pos;
};

int bs_scan_open(bs_scan_t **out, bs_store_t *st, int shard)
{
	*out = NULL;
	if (shard < -1 || shard >= st->n)
		return bs_error(BS_EINVAL, "no shard number %d (the store has %d)", shard, st->n);
	bs_scan_t *sc = calloc(1, sizeof *sc);
	if (!sc || !(sc->pos = calloc((size_t)st->n, sizeof *sc->pos))) {
		free(sc);
		return bs__oom();
	}
	sc->n = st->n;
	sc->only = shard;
	*out = sc;
	return 0;
}

int bs_scan_clone(bs_scan_t **out, const bs_scan_t *sc)
{
	*out = NULL;
	bs_scan_t *c = calloc(1, sizeof *c);
	if (!c || !(c->pos = malloc((size_t)sc->n * sizeof *c->pos))) {
		free(c);
		return bs__oom();
	}
	c->n = sc->n;
	c->only = sc->only;
	memcpy(c->pos, sc->pos, (size_t)sc->n * sizeof *c->pos);
	*out = c;
	return 0;
}

void bs_scan_free(bs_scan_t *sc)
{
	if (!sc)
		return;
	free(sc->pos);
	free(sc);
}

typedef struct {
	bs_entity_t e;
	int64_t added_id;
	bool skip; /* a copy the shard holds for a move, not its own */
} scan_row_t;

struct scan_arg {
	bs_scan_t *sc;
	size_t limit;
	scan_row_t **rows; /* per shard */
	size_t *nrows;
	int64_t *ov; /* per shard: ownership version of its page */
};

static int scan_shard(bs_store_t *st, int i, void *p)
{
	struct scan_arg *a = p;
	scan_pos_t *pos = &a->sc->pos[i];
	bs_buf_t b = { 0 };
	MYSQL_RES *res = NULL;
	int rc;

	bs__buf_puts(&b, "SELECT added_id, id, UNIX_TIMESTAMP(updated), body, " BS__OV_SQL " FROM entities");
	if (pos->started) {
		char ts[40];
		snprintf(ts, sizeof ts, "%lld.%06lld", (long long)(pos->updated_us / 1000000),
		         (long long)(pos->updated_us % 1000000));
		bs__buf_printf(
			&b, " WHERE updated <= FROM_UNIXTIME(%s) AND (updated < FROM_UNIXTIME(%s) OR added_id < %lld)",
			ts, ts, (long long)pos->added_id);
	}
	bs__buf_printf(&b, " ORDER BY updated DESC, added_id DESC LIMIT %zu", a->limit);
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_check(st, i)) || (rc = bs__shard_query(&res, st, i, b.ptr, b.len)))
		goto done;
	size_t n = (size_t)mysql_num_rows(res);
	if (n && !(a->rows[i] = calloc(n, sizeof *a->rows[i]))) {
		rc = bs__oom();
		goto done;
	}
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res))) {
		unsigned long *lens = mysql_fetch_lengths(res);
		scan_row_t *r = &a->rows[i][a->nrows[i]];
		if (!row[0] || !row[1] || lens[1] != 16)
			continue;
		r->added_id = strtoll(row[0], NULL, 10);
		a->ov[i] = row[4] ? strtoll(row[4], NULL, 10) : -1;
		memcpy(r->e.id.b, row[1], 16);
		r->e.updated_us = bs__parse_unix_us(row[2]);
		r->e.shard = i;
		/* a corrupt body is shown as such (NIL), not hidden */
		if (!row[3] || bs__body_decode_row(&r->e.bag, row[3], lens[3], row[1], "browse"))
			bs_value_nil(&r->e.bag);
		bs_error_clear();
		a->nrows[i]++;
	}
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

/* Rows in buckets a shard holds only for a move (copies coming in, or gone
 * and not yet cleaned up) are skipped, not shown: the owner shows them.
 * The page's position still moves past them. */
static int mark_copies(bs_store_t *st, struct scan_arg *a)
{
	int rc;
	if ((rc = bs__map_need(st)))
		return rc;
	for (int i = 0; i < st->n; i++) {
		const uint8_t *states;
		bool exact;
		if (!a->nrows[i])
			continue;
		if ((rc = bs__owned_at(&states, &exact, st, i, a->ov[i])))
			return rc;
		for (size_t k = 0; k < a->nrows[i]; k++)
			a->rows[i][k].skip = !bs__owns(states[bs_route_id(&a->rows[i][k].e.id, st->map.buckets)]);
	}
	return 0;
}

int bs_scan_next(bs_result_t *out, bs_store_t *st, bs_scan_t *sc, size_t limit)
{
	struct scan_arg a = { sc, limit, NULL, NULL, NULL };
	bool *which = NULL;
	size_t *taken = NULL;
	int rc = 0, n = st->n;

	memset(out, 0, sizeof *out);
	if (sc->n != n)
		return bs_error(BS_EINVAL, "scan was opened on another store");
	if (limit == 0)
		return 0;
	a.rows = calloc((size_t)n, sizeof *a.rows);
	a.nrows = calloc((size_t)n, sizeof *a.nrows);
	a.ov = calloc((size_t)n, sizeof *a.ov);
	which = calloc((size_t)n, sizeof *which);
	taken = calloc((size_t)n, sizeof *taken);
	if (!a.rows || !a.nrows || !a.ov || !which || !taken) {
		rc = bs__oom();
		goto done;
	}
	bool any = false;
	for (int i = 0; i < n; i++) {
		which[i] = (sc->only < 0 || sc->only == i) && !sc->pos[i].done;
		any |= which[i];
	}
	if (!any)
		goto done;
	if ((rc = bs__shard_each(st, which, scan_shard, &a, NULL)) || (rc = mark_copies(st, &a)))
		goto done;
	if (!(out->items = calloc(limit, sizeof *out->items))) {
		rc = bs__oom();
		goto done;
	}
	out->cap = limit;
	/* k-way merge, newest first; ties by shard then added_id (descending) */
	while (out->len < limit) {
		int best = -1;
		for (int i = 0; i < n; i++) {
			if (taken[i] >= a.nrows[i])
				continue;
			if (best < 0 || a.rows[i][taken[i]].e.updated_us > a.rows[best][taken[best]].e.updated_us)
				best = i;
		}
		if (best < 0)
			break;
		scan_row_t *r = &a.rows[best][taken[best]++];
		if (!r->skip) {
			out->items[out->len++] = r->e;
			bs_value_nil(&r->e.bag); /* moved */
		}
		sc->pos[best].started = true;
		sc->pos[best].updated_us = r->e.updated_us;
		sc->pos[best].added_id = r->added_id;
	}
	for (int i = 0; i < n; i++)
		if (which[i] && a.nrows[i] < limit && taken[i] == a.nrows[i])
			sc->pos[i].done = true;
done:
	for (int i = 0; a.rows && i < n; i++) {
		for (size_t k = 0; k < a.nrows[i]; k++)
			bs_value_clear(&a.rows[i][k].e.bag);
		free(a.rows[i]);
	}
	free(a.rows);
	free(a.nrows);
	free(a.ov);
	free(which);
	free(taken);
	if (rc)
		bs_result_free(out);
	return rc;
}

/* ------------------------------------------------------------ index rows */

void bs__index_value_text(char *buf, size_t size, const bs_value_t *v)
{
	switch (v ? v->type : BS_NIL) {
	case BS_BIN:
		if (v->v.s.len == 16) {
			bs_id_t id;
			memcpy(id.b, v->v.s.ptr, 16);
			char d[37];
			bs_id_dashed(d, &id);
			snprintf(buf, size, "%s", d);
		} else {
			size_t o = 0;
			for (size_t i = 0; i < v->v.s.len && o + 3 < size; i++)
				o += (size_t)snprintf(buf + o, size - o, "%02x", (unsigned char)v->v.s.ptr[i]);
			if (o == 0 && size)
				buf[0] = '\0';
		}
		break;
	case BS_STR: snprintf(buf, size, "%.*s", (int)v->v.s.len, v->v.s.ptr); break;
	case BS_INT: snprintf(buf, size, "%lld", (long long)v->v.i); break;
	case BS_UINT: snprintf(buf, size, "%llu", (unsigned long long)v->v.u); break;
	case BS_FLOAT: {
		char f[40];
		bs_float_text(f, v->v.f); /* the C locale's '.', the shortest that reads back */
		snprintf(buf, size, "%s", f);
		break;
	}
	case BS_BOOL: snprintf(buf, size, "%s", v->v.b ? "true" : "false"); break;
	default: snprintf(buf, size, "null");
	}
}

int bs__index_row_decode(bs_value_t *vals, const bs_index_t *idx, MYSQL_ROW row, const unsigned long *lens)
{
	for (int k = 0; k < idx->nprops; k++) {
		const char *c = row[k];
		bs_value_nil(&vals[k]);
		if (!c)
			continue;
		switch (idx->props[k].type) {
		case BS_COL_UUID:
		case BS_COL_BINARY: bs_value_bin(&vals[k], c, lens[k]); break;
		case BS_COL_STRING: bs_value_str(&vals[k], c, lens[k]); break;
		case BS_COL_INT: bs_value_int(&vals[k], strtoll(c, NULL, 10)); break;
		case BS_COL_FLOAT: bs_value_float(&vals[k], bs__strtod_c(c, NULL)); break;
		case BS_COL_BOOL: bs_value_bool(&vals[k], atoi(c) != 0); break;
		}
	}
	return 0;
}

struct rows_arg {
	const bs_index_list_t *cat;
	const bs_id_t *id;
	bs_entity_rows_t *out;
	const bs_value_t *(*expect)[BS_INDEX_MAX_PROPS];
	pthread_mutex_t lock;
};

static int rows_on_shard(bs_store_t *st, int i, void *p)
{
	struct rows_arg *a = p;
	bs_buf_t b = { 0 };
	MYSQL_RES *res = NULL;
	int rc = 0, slot = 0;
	for (int x = 0; x < a->cat->len; x++) {
		const bs_index_t *idx = &a->cat->items[x];
		if (idx->state == BS_INDEX_DISABLED)
			continue;
		bs_entity_rows_t *er = &a->out[slot];
		bs__buf_reset(&b);
		bs__buf_puts(&b, "SELECT ");
		for (int k = 0; k < idx->nprops; k++) {
			bs__buf_ident(&b, idx->props[k].name);
			bs__buf_puts(&b, ",");
		}
		bs__buf_puts(&b, "entity_id FROM ");
		bs__buf_ident(&b, idx->name);
		bs__buf_puts(&b, " WHERE entity_id=");
		bs__buf_hex(&b, a->id->b, 16);
		if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_check(st, i)) ||
		    (rc = bs__shard_query(&res, st, i, b.ptr, b.len)))
			goto done;
		MYSQL_ROW row;
		while ((row = mysql_fetch_row(res))) {
			bs_value_t vals[BS_INDEX_MAX_PROPS];
			char text[256] = "";
			size_t o = 0;
			bool right = er->expect_shard == i;
			bs__index_row_decode(vals, idx, row, mysql_fetch_lengths(res));
			for (int k = 0; k < idx->nprops; k++) {
				char one[200];
				bs__index_value_text(one, sizeof one, &vals[k]);
				o += (size_t)snprintf(text + o, o < sizeof text ? sizeof text - o : 0, "%s%s=%s",
				                      k ? " " : "", idx->props[k].name, one);
				if (o >= sizeof text)
					o = sizeof text - 1;
				if (right && !bs_value_equal(&vals[k], a->expect[slot][k]))
					right = false;
				bs_value_clear(&vals[k]);
			}
			pthread_mutex_lock(&a->lock);
			if (er->nfound < (int)(sizeof er->found / sizeof er->found[0])) {
				er->found[er->nfound].shard = i;
				er->found[er->nfound].right = right;
				snprintf(er->found[er->nfound].values, sizeof er->found[0].values, "%s", text);
				er->nfound++;
			}
			pthread_mutex_unlock(&a->lock);
		}
		mysql_free_result(res);
		res = NULL;
		slot++;
	}
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

int bs_entity_index_rows(bs_entity_rows_t **out, int *n, bs_store_t *st, const bs_value_t *bag)
{
	const bs_index_list_t *cat;
	struct rows_arg a = { 0 };
	bs_value_t(*tmps)[BS_INDEX_MAX_PROPS] = NULL;
	bs_id_t id;
	int rc, m = 0;

	*out = NULL;
	*n = 0;
	if ((rc = bs_bag_id(&id, bag)))
		return rc;
	bs__catalog_invalidate(st);
	if ((rc = bs__map_need(st)) || (rc = bs__catalog_cached(&cat, st)))
		return rc;
	for (int x = 0; x < cat->len; x++)
		if (cat->items[x].state != BS_INDEX_DISABLED)
			m++;
	a.cat = cat;
	a.id = &id;
	a.out = calloc((size_t)(m ? m : 1), sizeof *a.out);
	a.expect = calloc((size_t)(m ? m : 1), sizeof *a.expect);
	tmps = calloc((size_t)(m ? m : 1), sizeof *tmps);
	if (!a.out || !a.expect || !tmps) {
		rc = bs__oom();
		goto done;
	}
	pthread_mutex_init(&a.lock, NULL);
	int slot = 0;
	for (int x = 0; x < cat->len; x++) {
		const bs_index_t *idx = &cat->items[x];
		if (idx->state == BS_INDEX_DISABLED)
			continue;
		bs_entity_rows_t *er = &a.out[slot];
		snprintf(er->index, sizeof er->index, "%s", idx->name);
		int bucket;
		er->expect_shard = bs__index_row_route(a.expect[slot], tmps[slot], &bucket, idx, bag, st, &er->misfit);
		if (er->expect_shard >= 0) {
			size_t o = 0;
			for (int k = 0; k < idx->nprops; k++) {
				char one[200];
				bs__index_value_text(one, sizeof one, a.expect[slot][k]);
				o += (size_t)snprintf(er->expect + o, o < sizeof er->expect ? sizeof er->expect - o : 0,
				                      "%s%s=%s", k ? " " : "", idx->props[k].name, one);
				if (o >= sizeof er->expect)
					o = sizeof er->expect - 1;
			}
		}
		slot++;
	}
	rc = bs__shard_each(st, NULL, rows_on_shard, &a, NULL);
	pthread_mutex_destroy(&a.lock);
	if (!rc) {
		*out = a.out;
		*n = m;
		a.out = NULL;
	}
done:
	free(a.out);
	free(a.expect);
	free(tmps); /* floats only: nothing inside to free */
	return rc;
}

/*
 * query.c - reading entities through a ready index.
 *
 * 1. Matching entity_ids come from the index table on every shard at once,
 *    or from one shard when the query fixes the shard_on value.
 * 2. Their entities are fetched grouped by entity shard, in batches, all
 *    entity shards at once.
 * 3. Every entity is decoded and kept only if its real values still match:
 *    index rows are never trusted.
 * Results are sorted newest first (then by id) and cut at the limit.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FETCH_BATCH 500

void bs_result_free(bs_result_t *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->len; i++)
		bs_value_clear(&r->items[i].bag);
	free(r->items);
	memset(r, 0, sizeof *r);
}

typedef struct {
	bs_id_t *ids;
	size_t len, cap;
} idvec_t;

static int idvec_push(idvec_t *v, const void *id)
{
	if (v->len == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 64;
		bs_id_t *p = realloc(v->ids, cap * sizeof *p);
		if (!p)
			return bs_error(BS_ENOMEM, "out of memory collecting ids");
		v->ids = p;
		v->cap = cap;
	}
	memcpy(v->ids[v->len++].b, id, 16);
	return 0;
}

struct qctx {
	const bs_index_t *idx;
	const bs_cond_t *conds;
	int nconds;
	const bs_prop_t **cprops; /* the index property of each condition */
	idvec_t *found;           /* per index shard: matching entity_ids */
	idvec_t *byshard;         /* per entity shard: ids to fetch */
	bs_result_t *part;        /* per entity shard: kept entities */
	void *meta;               /* per entity shard: metavec_t, with a limit */
};

static int scan_index(bs_store_t *st, int i, void *p)
{
	struct qctx *q = p;
	bs_buf_t b = {0};
	MYSQL_RES *res = NULL;
	int rc;
	bs__buf_puts(&b, "SELECT entity_id FROM ");
	bs__buf_ident(&b, q->idx->name);
	for (int k = 0; k < q->nconds; k++) {
		bs__buf_puts(&b, k ? " AND " : " WHERE ");
		bs__buf_ident(&b, q->conds[k].prop);
		bs__buf_puts(&b, "=");
		bs__buf_value(&b, &q->conds[k].value, q->cprops[k]);
	}
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_check(st, i)) || (rc = bs__shard_query(&res, st, i, b.ptr, b.len)))
		goto done;
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res)))
		if (row[0] && mysql_fetch_lengths(res)[0] == 16 && (rc = idvec_push(&q->found[i], row[0])))
			goto done;
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

static bool still_matches(const struct qctx *q, const bs_value_t *bag)
{
	for (int k = 0; k < q->nconds; k++) {
		const bs_value_t *v;
		bs_value_t tmp;
		if (bs__index_prop_value(&v, &tmp, bag, q->cprops[k]) != 1 || !bs_value_equal(v, &q->conds[k].value))
			return false;
	}
	return true;
}

static int result_push(bs_result_t *r, bs_entity_t *e)
{
	if (r->len == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 16;
		bs_entity_t *p = realloc(r->items, cap * sizeof *p);
		if (!p)
			return bs_error(BS_ENOMEM, "out of memory collecting results");
		r->items = p;
		r->cap = cap;
	}
	r->items[r->len++] = *e;
	return 0;
}

static int id_cmp(const void *a, const void *b) { return memcmp(a, b, 16); }

static const char *shard_where(char *buf, size_t size, const bs_store_t *st, int i)
{
	snprintf(buf, size, "shard %s", st->shards[i].conf->name);
	return buf;
}

static int fetch_entities(bs_store_t *st, int i, void *p)
{
	struct qctx *q = p;
	idvec_t *want = &q->byshard[i];
	bs_result_t *out = &q->part[i];
	char where[96];
	bs_buf_t b = {0};
	MYSQL_RES *res = NULL;
	int rc = 0;

	/* a stale row on one shard and a right one on another name the same
	 * entity twice: fetch it once */
	qsort(want->ids, want->len, sizeof *want->ids, id_cmp);
	size_t uniq = 0;
	for (size_t k = 0; k < want->len; k++)
		if (!uniq || memcmp(want->ids[uniq - 1].b, want->ids[k].b, 16))
			want->ids[uniq++] = want->ids[k];
	out->dropped += want->len - uniq;
	want->len = uniq;

	for (size_t off = 0; off < want->len; off += FETCH_BATCH) {
		size_t end = off + FETCH_BATCH < want->len ? off + FETCH_BATCH : want->len;
		bs__buf_reset(&b);
		bs__buf_puts(&b, "SELECT id, UNIX_TIMESTAMP(updated), body FROM entities WHERE id IN (");
		for (size_t k = off; k < end; k++) {
			if (k > off)
				bs__buf_puts(&b, ",");
			bs__buf_hex(&b, want->ids[k].b, 16);
		}
		bs__buf_puts(&b, ")");
		if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_check(st, i)) || (rc = bs__shard_query(&res, st, i, b.ptr, b.len)))
			goto done;
		size_t got = 0;
		MYSQL_ROW row;
		while ((row = mysql_fetch_row(res))) {
			unsigned long *lens = mysql_fetch_lengths(res);
			bs_entity_t e = { .shard = i };
			got++;
			if (!row[0] || lens[0] != 16 || !row[2])
				continue;
			memcpy(e.id.b, row[0], 16);
			e.updated_us = bs__parse_unix_us(row[1]);
			/* a corrupt body cannot be returned: skipped, counted, and the
			 * first named, so the caller reports it without failing the rest */
			if (bs__body_decode_row(&e.bag, row[2], lens[2], row[0], shard_where(where, sizeof where, st, i))) {
				if (!out->corrupt++)
					snprintf(out->corrupt_first, sizeof out->corrupt_first, "%s", bs_last_error());
				bs_error_clear();
				continue;
			}
			if (!still_matches(q, &e.bag)) {
				bs_value_clear(&e.bag);
				out->dropped++;
				continue;
			}
			if ((rc = result_push(out, &e))) {
				bs_value_clear(&e.bag);
				goto done;
			}
		}
		out->dropped += (end - off) - got; /* index rows whose entity is gone */
		mysql_free_result(res);
		res = NULL;
	}
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

/* ------------------------------------------------------------ with a limit */

/* A candidate's id, its entity's update time and shard: what a limited
 * query orders by before it fetches any body. */
typedef struct {
	bs_id_t id;
	int64_t updated_us;
	int shard;
} meta_t;

typedef struct {
	meta_t *items;
	size_t len;
	size_t gone; /* candidates whose entity is gone */
} metavec_t;

/* The update times of shard i's candidates (no bodies), in batches. */
static int fetch_meta(bs_store_t *st, int i, void *p)
{
	struct qctx *q = p;
	idvec_t *want = &q->byshard[i];
	metavec_t *out = &((metavec_t *)q->meta)[i];
	bs_buf_t b = {0};
	MYSQL_RES *res = NULL;
	int rc = 0;
	if (!want->len)
		return 0;
	/* an entity named by two index rows (a stale one and a right one) once */
	qsort(want->ids, want->len, sizeof *want->ids, id_cmp);
	size_t uniq = 0;
	for (size_t k = 0; k < want->len; k++)
		if (!uniq || memcmp(want->ids[uniq - 1].b, want->ids[k].b, 16))
			want->ids[uniq++] = want->ids[k];
	out->gone += want->len - uniq;
	want->len = uniq;
	if (!(out->items = calloc(want->len, sizeof *out->items)))
		return bs_error(BS_ENOMEM, "out of memory");
	for (size_t off = 0; off < want->len; off += FETCH_BATCH) {
		size_t end = off + FETCH_BATCH < want->len ? off + FETCH_BATCH : want->len;
		bs__buf_reset(&b);
		bs__buf_puts(&b, "SELECT id, UNIX_TIMESTAMP(updated) FROM entities WHERE id IN (");
		for (size_t k = off; k < end; k++) {
			bs__buf_puts(&b, k > off ? "," : "");
			bs__buf_hex(&b, want->ids[k].b, 16);
		}
		bs__buf_puts(&b, ")");
		if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_check(st, i)) || (rc = bs__shard_query(&res, st, i, b.ptr, b.len)))
			goto done;
		size_t got = 0;
		MYSQL_ROW row;
		while ((row = mysql_fetch_row(res))) {
			if (!row[0] || mysql_fetch_lengths(res)[0] != 16)
				continue;
			meta_t *m = &out->items[out->len++];
			memcpy(m->id.b, row[0], 16);
			m->updated_us = bs__parse_unix_us(row[1]);
			m->shard = i;
			got++;
		}
		out->gone += (end - off) - got;
		mysql_free_result(res);
		res = NULL;
	}
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

static int meta_newest_first(const void *a, const void *b)
{
	const meta_t *x = a, *y = b;
	if (x->updated_us != y->updated_us)
		return x->updated_us > y->updated_us ? -1 : 1;
	return memcmp(x->id.b, y->id.b, 16);
}

static int newest_first(const void *a, const void *b);

/* Append every shard's kept entities to out (whose items grow). */
static int take_parts(bs_result_t *out, struct qctx *q, int n)
{
	for (int i = 0; i < n; i++) {
		bs_result_t *p = &q->part[i];
		out->dropped += p->dropped;
		if (p->corrupt && !out->corrupt)
			snprintf(out->corrupt_first, sizeof out->corrupt_first, "%s", p->corrupt_first);
		out->corrupt += p->corrupt;
		p->dropped = p->corrupt = 0;
		for (size_t k = 0; k < p->len; k++) {
			if (result_push(out, &p->items[k])) {
				for (; k < p->len; k++)
					bs_value_clear(&p->items[k].bag);
				p->len = 0;
				return BS_ENOMEM;
			}
		}
		p->len = 0;
	}
	return 0;
}

/* The limited read: every candidate's update time first (no body), then
 * bodies newest first in windows, each window re-checked, until `limit`
 * entities are kept: a query asking for one entity reads a few bodies, not
 * every candidate's. */
static int query_limited(bs_result_t *out, struct qctx *q, bs_store_t *st, size_t limit)
{
	int n = st->n, rc;
	metavec_t *meta = calloc((size_t)n, sizeof *meta);
	meta_t *all = NULL;
	size_t total = 0;
	if (!meta)
		return bs_error(BS_ENOMEM, "out of memory");
	q->meta = meta;
	if ((rc = bs__shard_each(st, NULL, fetch_meta, q, NULL)))
		goto done;
	for (int i = 0; i < n; i++) {
		total += meta[i].len;
		out->dropped += meta[i].gone;
	}
	if (total && !(all = malloc(total * sizeof *all))) {
		rc = bs_error(BS_ENOMEM, "out of memory");
		goto done;
	}
	total = 0;
	for (int i = 0; i < n; i++) {
		if (meta[i].len)
			memcpy(all + total, meta[i].items, meta[i].len * sizeof *all);
		total += meta[i].len;
	}
	qsort(all, total, sizeof *all, meta_newest_first);
	bool *which = calloc((size_t)n, sizeof *which);
	if (!which) {
		rc = bs_error(BS_ENOMEM, "out of memory");
		goto done;
	}
	/* windows of twice what is still wanted, doubling while they keep
	 * nothing (stale candidates) */
	size_t grow = 2;
	for (size_t off = 0; off < total && out->len < limit && !rc;) {
		size_t before = out->len, want = (limit - out->len) * grow;
		size_t end = want < total - off ? off + want : total;
		memset(which, 0, (size_t)n * sizeof *which);
		for (int i = 0; i < n; i++)
			q->byshard[i].len = 0;
		for (size_t k = off; k < end && !rc; k++) {
			which[all[k].shard] = true;
			rc = idvec_push(&q->byshard[all[k].shard], all[k].id.b);
		}
		if (!rc && !(rc = bs__shard_each(st, which, fetch_entities, q, NULL)))
			rc = take_parts(out, q, n);
		if (out->len == before && grow < 1024)
			grow *= 2;
		off = end;
	}
	free(which);
	if (!rc) {
		qsort(out->items, out->len, sizeof *out->items, newest_first);
		while (out->len > limit)
			bs_value_clear(&out->items[--out->len].bag);
	}
done:
	for (int i = 0; i < n; i++)
		free(meta[i].items);
	free(meta);
	free(all);
	q->meta = NULL;
	return rc;
}

static int newest_first(const void *a, const void *b)
{
	const bs_entity_t *x = a, *y = b;
	if (x->updated_us != y->updated_us)
		return x->updated_us > y->updated_us ? -1 : 1;
	return memcmp(x->id.b, y->id.b, 16);
}

/* The index and each condition's property; *route the one shard to read
 * when the conditions fix the shard_on value, else -1. */
static int resolve(struct qctx *q, int *route, bs_store_t *st, const char *index)
{
	const bs_index_list_t *cat;
	int rc;
	*route = -1;
	/* the writers' cached catalog will do: results are re-checked against
	 * the bodies, so a catalog a TTL old cannot return a wrong entity */
	if ((rc = bs__catalog_cached(&cat, st)))
		return rc;
	const bs_index_t *idx = bs__index_find(cat, index);
	if (!idx) {
		bs_index_t tmp;
		return bs_index_get(&tmp, st, index); /* for its message */
	}
	if (idx->state != BS_INDEX_READY)
		return bs_error(BS_ECONFLICT, "index %s is %s: queries use an index once it is ready", index,
		                bs_index_state_name(idx->state));
	if (q->nconds < 1 || q->nconds > idx->nprops)
		return bs_error(BS_EINVAL, "query on %s needs 1 to %d conditions", index, idx->nprops);
	q->idx = idx;
	for (int k = 0; k < q->nconds; k++) {
		const bs_cond_t *c = &q->conds[k];
		q->cprops[k] = NULL;
		for (int j = 0; j < idx->nprops; j++)
			if (!strcmp(idx->props[j].name, c->prop))
				q->cprops[k] = &idx->props[j];
		if (!q->cprops[k])
			return bs_error(BS_EINVAL, "index %s has no property %s", index, c->prop);
		if (!bs_value_fits(&c->value, q->cprops[k]))
			return bs_error(BS_EINVAL, "value for %s does not fit the index's type %s", c->prop,
			                bs_coltype_name(q->cprops[k]->type));
		if (q->cprops[k] == &idx->props[idx->shard_on])
			*route = bs_route_value(&c->value, q->cprops[k], st->n);
	}
	return 0;
}

/* Every shard's kept entities into out, newest first, cut at limit. */
static int merge(bs_result_t *out, struct qctx *q, int n, size_t limit)
{
	size_t total = 0;
	for (int i = 0; i < n; i++) {
		total += q->part[i].len;
		out->dropped += q->part[i].dropped;
		if (q->part[i].corrupt && !out->corrupt)
			snprintf(out->corrupt_first, sizeof out->corrupt_first, "%s", q->part[i].corrupt_first);
		out->corrupt += q->part[i].corrupt;
	}
	if (!total)
		return 0;
	if (!(out->items = malloc(total * sizeof *out->items)))
		return bs_error(BS_ENOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		if (q->part[i].len)
			memcpy(out->items + out->len, q->part[i].items, q->part[i].len * sizeof *out->items);
		out->len += q->part[i].len;
		q->part[i].len = 0;
	}
	out->cap = total;
	qsort(out->items, out->len, sizeof *out->items, newest_first);
	while (limit && out->len > limit)
		bs_value_clear(&out->items[--out->len].bag);
	return 0;
}

int bs_query(bs_result_t *out, bs_store_t *st, const char *index, const bs_cond_t *conds, int nconds,
             size_t limit)
{
	const bs_prop_t *cprops[BS_INDEX_MAX_PROPS];
	struct qctx q = { .conds = conds, .nconds = nconds, .cprops = cprops };
	bool *which = NULL;
	int n = st->n, route, rc;

	memset(out, 0, sizeof *out);
	if ((rc = resolve(&q, &route, st, index)))
		return rc;
	q.found = calloc((size_t)n, sizeof *q.found);
	q.byshard = calloc((size_t)n, sizeof *q.byshard);
	q.part = calloc((size_t)n, sizeof *q.part);
	which = calloc((size_t)n, sizeof *which);
	if (!q.found || !q.byshard || !q.part || !which) {
		rc = bs_error(BS_ENOMEM, "out of memory");
		goto done;
	}
	/* 1. matching entity_ids from the index, 2. their entities by shard */
	if (route >= 0)
		which[route] = true;
	if ((rc = bs__shard_each(st, route >= 0 ? which : NULL, scan_index, &q, NULL)))
		goto done;
	memset(which, 0, (size_t)n * sizeof *which);
	for (int i = 0; i < n; i++)
		for (size_t k = 0; k < q.found[i].len; k++) {
			int s = bs_route_id(&q.found[i].ids[k], n);
			which[s] = true;
			out->candidates++;
			if ((rc = idvec_push(&q.byshard[s], q.found[i].ids[k].b)))
				goto done;
		}
	/* with a limit smaller than the candidates, bodies are read newest
	 * first until enough match; otherwise all at once */
	if (limit && out->candidates > limit) {
		rc = query_limited(out, &q, st, limit);
		goto done;
	}
	if (out->candidates && (rc = bs__shard_each(st, which, fetch_entities, &q, NULL)))
		goto done;
	/* 3. newest first, at most limit */
	rc = merge(out, &q, n, limit);
done:
	for (int i = 0; q.found && i < n; i++)
		free(q.found[i].ids);
	for (int i = 0; q.byshard && i < n; i++)
		free(q.byshard[i].ids);
	for (int i = 0; q.part && i < n; i++)
		bs_result_free(&q.part[i]);
	free(q.found);
	free(q.byshard);
	free(q.part);
	free(which);
	if (rc)
		bs_result_free(out);
	return rc;
}

/*
 * query.c - reading entities through a ready index.
 *
 * 1. Matching entity_ids come from the index table on every shard at once,
 *    or from one shard when the query fixes the shard_on value.
 * 2. Their entities are fetched grouped by entity shard, in batches, every
 *    entity shard at once.
 * 3. Every entity is decoded and kept only if its real values still match:
 *    index rows are never trusted.
 * Results are sorted newest first (then by id) and cut at the limit. With a
 * limit under the candidate count, step 2 reads update times first and
 * bodies newest first until enough match.
 *
 * Every step reaches all its shards at once from this thread (fanout.c):
 * no thread is started for a query.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FETCH_BATCH 1000

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

static int id_cmp(const void *a, const void *b) { return memcmp(a, b, 16); }

/* Sort and drop repeats (a stale row on one shard and a right one on
 * another name the same entity twice); returns how many were dropped. */
static size_t idvec_uniq(idvec_t *v)
{
	size_t uniq = 0, n = v->len;
	if (v->len > 1)
		qsort(v->ids, v->len, sizeof *v->ids, id_cmp);
	for (size_t k = 0; k < v->len; k++)
		if (!uniq || memcmp(v->ids[uniq - 1].b, v->ids[k].b, 16))
			v->ids[uniq++] = v->ids[k];
	v->len = uniq;
	return n - uniq;
}

struct qctx {
	const bs_index_t *idx;
	const bs_cond_t *conds;
	int nconds;
	const bs_prop_t **cprops; /* the index property of each condition */
	idvec_t *byshard;         /* per entity shard: ids to fetch */
	bs__shard_stmt_t *stmt;   /* per shard: this round's statements */
	bs_buf_t *sql;            /* per shard: their text */
};

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

/* Run this round's statements (q->sql[i] non-empty) on their shards. */
static int run_round(struct qctx *q, bs_store_t *st)
{
	for (int i = 0; i < st->n; i++) {
		int rc = bs__buf_ok(&q->sql[i]);
		if (rc)
			return rc;
		q->stmt[i].sql = q->sql[i].len ? q->sql[i].ptr : NULL;
		q->stmt[i].len = q->sql[i].len;
	}
	return bs__shard_run(st, q->stmt);
}

static void clear_round(struct qctx *q, int n)
{
	bs__shard_stmts_clear(q->stmt, n);
	for (int i = 0; i < n; i++)
		bs__buf_reset(&q->sql[i]);
}

/* 1. the matching entity_ids, from one shard (route) or all; each goes to
 * its entity shard's list */
static int scan(size_t *candidates, struct qctx *q, bs_store_t *st, int route)
{
	int rc;
	for (int i = 0; i < st->n; i++) {
		bs_buf_t *b = &q->sql[i];
		if (route >= 0 && i != route)
			continue;
		bs__buf_puts(b, "SELECT entity_id FROM ");
		bs__buf_ident(b, q->idx->name);
		for (int k = 0; k < q->nconds; k++) {
			bs__buf_puts(b, k ? " AND " : " WHERE ");
			bs__buf_ident(b, q->conds[k].prop);
			bs__buf_puts(b, "=");
			bs__buf_value(b, &q->conds[k].value, q->cprops[k]);
		}
	}
	if ((rc = run_round(q, st)))
		goto done;
	for (int i = 0; i < st->n && !rc; i++)
		for (int r = 0; r < q->stmt[i].nres && !rc; r++) {
			MYSQL_ROW row;
			MYSQL_RES *res = q->stmt[i].res[r];
			while (!rc && (row = mysql_fetch_row(res))) {
				if (!row[0] || mysql_fetch_lengths(res)[0] != 16)
					continue;
				bs_id_t id;
				memcpy(id.b, row[0], 16);
				(*candidates)++;
				rc = idvec_push(&q->byshard[bs_route_id(&id, st->n)], id.b);
			}
		}
done:
	clear_round(q, st->n);
	return rc;
}

/* 2. bodies: the ids of byshard[i][from[i], to[i]) on every shard at once,
 * each decoded, re-checked and kept in out. */
static int fetch(bs_result_t *out, struct qctx *q, bs_store_t *st, const size_t *from, const size_t *to)
{
	char where[96];
	int rc;
	for (int i = 0; i < st->n; i++) {
		if (from[i] >= to[i])
			continue;
		bs_buf_t *b = &q->sql[i];
		bs__buf_puts(b, "SELECT id, UNIX_TIMESTAMP(updated), body FROM entities WHERE id IN (");
		for (size_t k = from[i]; k < to[i]; k++) {
			bs__buf_puts(b, k > from[i] ? "," : "");
			bs__buf_hex(b, q->byshard[i].ids[k].b, 16);
		}
		bs__buf_puts(b, ")");
	}
	if ((rc = run_round(q, st)))
		goto done;
	for (int i = 0; i < st->n && !rc; i++) {
		size_t got = 0;
		snprintf(where, sizeof where, "shard %s", st->shards[i].conf->name);
		for (int r = 0; r < q->stmt[i].nres && !rc; r++) {
			MYSQL_RES *res = q->stmt[i].res[r];
			MYSQL_ROW row;
			while (!rc && (row = mysql_fetch_row(res))) {
				unsigned long *lens = mysql_fetch_lengths(res);
				bs_entity_t e = { .shard = i };
				got++;
				if (!row[0] || lens[0] != 16 || !row[2])
					continue;
				memcpy(e.id.b, row[0], 16);
				e.updated_us = bs__parse_unix_us(row[1]);
				/* a corrupt body cannot be returned: skipped, counted, and
				 * the first named, so the caller reports it without failing
				 * the rest */
				if (bs__body_decode_row(&e.bag, row[2], lens[2], row[0], where)) {
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
				if ((rc = result_push(out, &e)))
					bs_value_clear(&e.bag);
			}
		}
		if (from[i] < to[i])
			out->dropped += (to[i] - from[i]) - got; /* index rows whose entity is gone */
	}
done:
	clear_round(q, st->n);
	return rc;
}

static int newest_first(const void *a, const void *b)
{
	const bs_entity_t *x = a, *y = b;
	if (x->updated_us != y->updated_us)
		return x->updated_us > y->updated_us ? -1 : 1;
	return memcmp(x->id.b, y->id.b, 16);
}

/* 2, without a limit (or with one the candidates fit under): every
 * candidate's body, in batches, every shard at once per batch. */
static int fetch_all(bs_result_t *out, struct qctx *q, bs_store_t *st)
{
	int n = st->n, rc = 0;
	size_t *from = calloc((size_t)n, sizeof *from), *to = calloc((size_t)n, sizeof *to);
	if (!from || !to) {
		rc = bs_error(BS_ENOMEM, "out of memory");
		goto done;
	}
	for (;;) {
		bool any = false;
		for (int i = 0; i < n; i++) {
			from[i] = to[i];
			to[i] = from[i] + FETCH_BATCH < q->byshard[i].len ? from[i] + FETCH_BATCH : q->byshard[i].len;
			any |= from[i] < to[i];
		}
		if (!any || (rc = fetch(out, q, st, from, to)))
			break;
	}
done:
	free(from);
	free(to);
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

static int meta_newest_first(const void *a, const void *b)
{
	const meta_t *x = a, *y = b;
	if (x->updated_us != y->updated_us)
		return x->updated_us > y->updated_us ? -1 : 1;
	return memcmp(x->id.b, y->id.b, 16);
}

/* The update times of byshard[i][from[i], to[i]) on every shard at once,
 * appended to all (sized for every candidate). */
static int meta_batch(meta_t *all, size_t *nall, size_t cap, struct qctx *q, bs_store_t *st, const size_t *from,
                      const size_t *to)
{
	int rc;
	for (int i = 0; i < st->n; i++) {
		if (from[i] >= to[i])
			continue;
		bs_buf_t *b = &q->sql[i];
		bs__buf_puts(b, "SELECT id, UNIX_TIMESTAMP(updated) FROM entities WHERE id IN (");
		for (size_t k = from[i]; k < to[i]; k++) {
			bs__buf_puts(b, k > from[i] ? "," : "");
			bs__buf_hex(b, q->byshard[i].ids[k].b, 16);
		}
		bs__buf_puts(b, ")");
	}
	if ((rc = run_round(q, st)))
		goto done;
	for (int i = 0; i < st->n; i++)
		for (int r = 0; r < q->stmt[i].nres; r++) {
			MYSQL_ROW row;
			while ((row = mysql_fetch_row(q->stmt[i].res[r]))) {
				if (!row[0] || mysql_fetch_lengths(q->stmt[i].res[r])[0] != 16 || *nall == cap)
					continue;
				meta_t *m = &all[(*nall)++];
				memcpy(m->id.b, row[0], 16);
				m->updated_us = bs__parse_unix_us(row[1]);
				m->shard = i;
			}
		}
done:
	clear_round(q, st->n);
	return rc;
}

/* Every candidate's update time (no body), every shard at once, in
 * batches of FETCH_BATCH ids per shard (one statement of them all would
 * outgrow max_allowed_packet): *all (caller frees) newest first. */
static int fetch_meta(meta_t **all, size_t *nall, bs_result_t *out, struct qctx *q, bs_store_t *st)
{
	size_t want = 0;
	int n = st->n, rc = 0;
	size_t *from = calloc((size_t)n, sizeof *from), *to = calloc((size_t)n, sizeof *to);
	*all = NULL;
	*nall = 0;
	if (!from || !to) {
		rc = bs_error(BS_ENOMEM, "out of memory");
		goto done;
	}
	for (int i = 0; i < n; i++)
		want += q->byshard[i].len;
	if (want && !(*all = malloc(want * sizeof **all))) {
		rc = bs_error(BS_ENOMEM, "out of memory");
		goto done;
	}
	for (;;) {
		bool any = false;
		for (int i = 0; i < n; i++) {
			from[i] = to[i];
			to[i] = from[i] + FETCH_BATCH < q->byshard[i].len ? from[i] + FETCH_BATCH : q->byshard[i].len;
			any |= from[i] < to[i];
		}
		if (!any || (rc = meta_batch(*all, nall, want, q, st, from, to)))
			break;
	}
	if (rc)
		goto done;
	out->dropped += want - *nall; /* candidates whose entity is gone */
	if (*nall > 1)
		qsort(*all, *nall, sizeof **all, meta_newest_first);
done:
	free(from);
	free(to);
	return rc;
}

/* 2, with a limit under the candidates: update times first, then bodies
 * newest first in windows of twice what is still wanted (doubling while a
 * window keeps nothing: stale candidates), each re-checked, until `limit`
 * entities are kept. A query for one entity reads a few bodies, not every
 * candidate's. */
static int fetch_limited(bs_result_t *out, struct qctx *q, bs_store_t *st, size_t limit, bool *every)
{
	int n = st->n, rc;
	meta_t *all = NULL;
	size_t total = 0, grow = 2, off = 0;
	if ((rc = fetch_meta(&all, &total, out, q, st)))
		goto done;
	for (; off < total && out->len < limit && !rc;) {
		size_t before = out->len, want = (limit - out->len) * grow;
		size_t end = want < total - off ? off + want : total;
		for (int i = 0; i < n; i++)
			q->byshard[i].len = 0;
		for (size_t k = off; k < end && !rc; k++)
			rc = idvec_push(&q->byshard[all[k].shard], all[k].id.b);
		/* the window's bodies in batches, as without a limit */
		if (!rc)
			rc = fetch_all(out, q, st);
		if (out->len == before && grow < 1024)
			grow *= 2;
		off = end;
	}
	*every = off >= total; /* every candidate read: the count found is whole */
done:
	free(all);
	return rc;
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

int bs_query(bs_result_t *out, bs_store_t *st, const char *index, const bs_cond_t *conds, int nconds,
             size_t limit)
{
	const bs_prop_t *cprops[BS_INDEX_MAX_PROPS];
	struct qctx q = { .conds = conds, .nconds = nconds, .cprops = cprops };
	int n = st->n, route, rc;

	memset(out, 0, sizeof *out);
	if ((rc = resolve(&q, &route, st, index)))
		return rc;
	q.byshard = calloc((size_t)n, sizeof *q.byshard);
	q.stmt = calloc((size_t)n, sizeof *q.stmt);
	q.sql = calloc((size_t)n, sizeof *q.sql);
	if (!q.byshard || !q.stmt || !q.sql) {
		rc = bs_error(BS_ENOMEM, "out of memory");
		goto done;
	}
	/* 1. matching entity_ids, each on its entity shard's list */
	if ((rc = scan(&out->candidates, &q, st, route)))
		goto done;
	for (int i = 0; i < n; i++)
		out->dropped += idvec_uniq(&q.byshard[i]);
	/* 2. bodies: all at once, or newest first while a limit is not met */
	bool every = true;
	if (limit && out->candidates > limit)
		rc = fetch_limited(out, &q, st, limit, &every);
	else
		rc = fetch_all(out, &q, st);
	if (rc)
		goto done;
	/* 3. newest first, at most limit; how many matched, when all were read */
	if (out->len > 1)
		qsort(out->items, out->len, sizeof *out->items, newest_first);
	out->matched = every ? out->len : 0;
	while (limit && out->len > limit)
		bs_value_clear(&out->items[--out->len].bag);
done:
	for (int i = 0; q.byshard && i < n; i++)
		free(q.byshard[i].ids);
	for (int i = 0; q.sql && i < n; i++)
		bs__buf_free(&q.sql[i]);
	free(q.byshard);
	free(q.stmt);
	free(q.sql);
	if (rc)
		bs_result_free(out);
	return rc;
}

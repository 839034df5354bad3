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
 *
 * Every read checks, in its own snapshot, that its shard owns the bucket of
 * what it reads (doc/DESIGN.md, "Buckets and resharding"): index rows of
 * buckets a shard holds only for a move are left out (and a scan that saw
 * a bucket nobody owned, a cut-over between two shards' snapshots, reads
 * again); an entity read where its bucket no longer is is read again from
 * its owner, the map read again.
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
	int rc = BS_ARRAY_GROW(v->ids, v->len, v->cap, 64);
	if (rc)
		return rc;
	memcpy(v->ids[v->len++].b, id, 16);
	return 0;
}

static int id_cmp(const void *a, const void *b)
{
	return memcmp(a, b, 16);
}

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
	int route_bucket;         /* the shard_on value's bucket, -1: every shard */
	idvec_t *byshard;         /* per entity shard: ids to fetch */
	idvec_t moved;            /* ids read where their bucket no longer is: again */
	bs__shard_stmt_t *stmt;   /* per shard: this round's statements */
	bs_buf_t *sql;            /* per shard: their text */
	const uint8_t **states;   /* per shard: ownership as of its last read */
	bs__query_stats_t *stats; /* explain's counts, NULL for a plain query */
};

/* The ownership version of shard i's read (its first row's first column);
 * states[i] as of it. *exact false when the shard moved past it. */
static int states_of(bool *exact, struct qctx *q, bs_store_t *st, int i, const char *v)
{
	*exact = false;
	q->states[i] = NULL;
	return bs__owned_at(&q->states[i], exact, st, i, v ? strtoll(v, NULL, 10) : -1);
}

static bool owned_by(const struct qctx *q, const bs_store_t *st, int i, const bs_id_t *id)
{
	return q->states[i] && bs__owns(q->states[i][bs_route_id(id, st->map.buckets)]);
}

static int entity_shard(const bs_store_t *st, const bs_id_t *id)
{
	return bs__map_shard(st, bs_route_id(id, st->map.buckets));
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
	int rc = BS_ARRAY_GROW(r->items, r->len, r->cap, 16);
	if (rc)
		return rc;
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

/* Step 1's statement on shard i: with the ownership version of the same
 * snapshot and the routed bucket's state (one row even when none matches),
 * each row's shard_on value for its bucket. */
static void scan_sql(bs_buf_t *b, const struct qctx *q)
{
	bs__buf_puts(b, "SELECT m.v, o.state, o.peer, i.entity_id, i.");
	bs__buf_ident(b, q->idx->props[q->idx->shard_on].name);
	bs__buf_printf(b, " FROM bagstore_meta m LEFT JOIN bagstore_buckets o ON o.bucket=%d LEFT JOIN ",
	               q->route_bucket);
	bs__buf_ident(b, q->idx->name);
	bs__buf_puts(b, " i ON ");
	for (int k = 0; k < q->nconds; k++) {
		bs__buf_puts(b, k ? " AND i." : "i.");
		bs__buf_ident(b, q->conds[k].prop);
		bs__buf_puts(b, "=");
		bs__buf_value(b, &q->conds[k].value, q->cprops[k]);
	}
	bs__buf_puts(b, " WHERE m.k='owned_version'");
}

/* One scan of the shards in which[] (route >= 0: that one); *again when
 * ownership moved under it (the routed shard does not own the bucket, a
 * shard moved past its snapshot, a bucket nobody owned). found[] gets the
 * ids of the rows each shard owns. */
static int scan_once(bool *again, idvec_t *found, struct qctx *q, bs_store_t *st, int *route)
{
	const bs_prop_t *on = &q->idx->props[q->idx->shard_on];
	int rc;
	*again = false;
	for (int i = 0; i < st->n; i++)
		if (*route < 0 || i == *route)
			scan_sql(&q->sql[i], q);
	if ((rc = run_round(q, st)))
		goto done;
	for (int i = 0; i < st->n && !rc; i++) {
		if (*route >= 0 && i != *route)
			continue;
		MYSQL_RES *res = q->stmt[i].nres ? q->stmt[i].res[0] : NULL;
		MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
		bool exact;
		if (*route >= 0 && (!row || !row[1] || (strcmp(row[1], "owned") && strcmp(row[1], "leaving")))) {
			*again = true; /* the routed bucket went elsewhere */
			rc = bs__map_moved(route, st, q->route_bucket, i, row ? row[1] : NULL, row ? row[2] : NULL);
			goto done;
		}
		if ((rc = states_of(&exact, q, st, i, row ? row[0] : NULL)) || !exact) {
			*again = !rc;
			goto done;
		}
		for (; row && !rc; row = mysql_fetch_row(res)) {
			unsigned long *lens = mysql_fetch_lengths(res);
			/* routed: every row holds the condition's shard_on value, whose
			 * bucket is known exactly (a float column's text cannot tell
			 * -0.0 from 0.0, whose buckets differ) */
			int b = q->route_bucket >= 0 ? q->route_bucket : bs__column_bucket(st, on, row[4], lens[4]);
			if (b >= 0 && !bs__owns(q->states[i][b]) && q->route_bucket < 0)
				b = bs__column_bucket_zero(st, on, row[4], lens[4], b);
			if (row[3] && lens[3] == 16 && b >= 0 && bs__owns(q->states[i][b]))
				rc = idvec_push(&found[i], row[3]);
			if (row[3] && q->stats)
				q->stats->index_rows[i]++;
		}
	}
	if (!rc && *route < 0 && !bs__map_covered(st, q->states))
		*again = true;
done:
	clear_round(q, st->n);
	return rc;
}

/* 1. the matching entity_ids, from one shard (route) or all; each goes to
 * its entity shard's list */
static int scan(size_t *candidates, struct qctx *q, bs_store_t *st, int route)
{
	idvec_t *found = calloc((size_t)st->n, sizeof *found);
	int rc = 0;
	BS_ERR_ALLOC(found);
	for (int round = 0;; round++) {
		bool again = false;
		for (int i = 0; i < st->n; i++)
			found[i].len = 0;
		if ((rc = scan_once(&again, found, q, st, &route)) || !again)
			break;
		if (round == 8) {
			rc = bs_error(BS_EUNREACHABLE, "query on %s: the index's buckets kept moving", q->idx->name);
			break;
		}
	}
	for (int i = 0; i < st->n && !rc; i++)
		for (size_t k = 0; k < found[i].len && !rc; k++) {
			int s = entity_shard(st, &found[i].ids[k]);
			(*candidates)++;
			rc = s < 0 ? bs_error(BS_ECONFIG, "an entity's bucket has no configured shard")
			           : idvec_push(&q->byshard[s], found[i].ids[k].b);
		}
	for (int i = 0; i < st->n; i++)
		free(found[i].ids);
	free(found);
	return rc;
}

/* Was id returned (ret sorted)? */
static bool returned(const idvec_t *ret, const bs_id_t *id)
{
	return ret->len && bsearch(id->b, ret->ids, ret->len, sizeof *ret->ids, id_cmp) != NULL;
}

/* One row of step 2 into out (decoded, re-checked), or counted. */
static int fetched_row(bs_result_t *out, struct qctx *q, MYSQL_ROW row, const unsigned long *lens, int i,
                       const char *where)
{
	bs_entity_t e = { .shard = i };
	memcpy(e.id.b, row[0], 16);
	e.updated_us = bs__parse_unix_us(row[1]);
	/* a corrupt body cannot be returned: skipped, counted, and the first
	 * named, so the caller reports it without failing the rest */
	if (bs__body_decode_row(&e.bag, row[2], lens[2], row[0], where)) {
		if (!out->corrupt++)
			snprintf(out->corrupt_first, sizeof out->corrupt_first, "%s", bs_last_error());
		bs_error_clear();
		return 0;
	}
	if (!still_matches(q, &e.bag)) {
		bs_value_clear(&e.bag);
		out->dropped++;
		return 0;
	}
	int rc = result_push(out, &e);
	if (rc)
		bs_value_clear(&e.bag);
	return rc;
}

/* What a batch keeps of a row whose entity its shard owns (keep_body: the
 * body, keep_meta: the update time): *kept when it kept the row. */
typedef int (*keep_fn)(bool *kept, void *arg, struct qctx *q, MYSQL_ROW row, const unsigned long *lens, int i,
                       const char *where);

/* What a batch reads: its columns before m.v (the first e.id), and what
 * it keeps of a row. */
typedef struct {
	const char *cols;
	unsigned vcol; /* m.v's column: after cols */
	keep_fn keep;
	void *arg;
} batch_t;

/* The statement of byshard[i][from[i], to[i]) on shard i: the ids' rows
 * with the ownership version of the same snapshot (one row even when no id
 * is there). */
static void batch_open(bs_buf_t *b, const char *cols)
{
	bs__buf_puts(b, "SELECT ");
	bs__buf_puts(b, cols);
	bs__buf_puts(b, ", m.v FROM bagstore_meta m LEFT JOIN entities e ON e.id IN (");
}

static void batch_close(bs_buf_t *b)
{
	bs__buf_puts(b, ") WHERE m.k='owned_version'");
}

static void batch_sql(bs_buf_t *b, const struct qctx *q, const batch_t *bt, int i, size_t from, size_t to)
{
	batch_open(b, bt->cols);
	for (size_t k = from; k < to; k++) {
		bs__buf_puts(b, k > from ? "," : "");
		bs__buf_hex(b, q->byshard[i].ids[k].b, 16);
	}
	batch_close(b);
}

/* Shard i's answer to its batch: the rows its owner kept (bt->keep),
 * their ids into ret; then every id of the batch not owned in that
 * snapshot goes to q->moved (read again from its owner), and one owned
 * but not there is counted dropped (its entity is gone). */
static int batch_rows(idvec_t *ret, bs_result_t *out, struct qctx *q, bs_store_t *st, const batch_t *bt, int i,
                      size_t from, size_t to)
{
	MYSQL_RES *res = q->stmt[i].nres ? q->stmt[i].res[0] : NULL;
	MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
	char where[96];
	bool exact = false;
	int rc;
	if ((rc = states_of(&exact, q, st, i, row ? row[bt->vcol] : NULL)))
		return rc;
	snprintf(where, sizeof where, "shard %s", st->shards[i].conf->name);
	ret->len = 0;
	for (; row && !rc; row = mysql_fetch_row(res)) {
		unsigned long *lens = mysql_fetch_lengths(res);
		bool kept = false;
		bs_id_t id;
		if (!row[0] || lens[0] != 16)
			continue;
		if (q->stats)
			q->stats->entity_rows[i]++;
		memcpy(id.b, row[0], 16);
		if (!exact || !owned_by(q, st, i, &id))
			continue; /* read again from its owner, below */
		if (!(rc = bt->keep(&kept, bt->arg, q, row, lens, i, where)) && kept)
			rc = idvec_push(ret, id.b);
	}
	if (ret->len > 1)
		qsort(ret->ids, ret->len, sizeof *ret->ids, id_cmp);
	for (size_t k = from; k < to && !rc; k++) {
		const bs_id_t *id = &q->byshard[i].ids[k];
		if (!exact || !owned_by(q, st, i, id))
			rc = idvec_push(&q->moved, id->b);
		else if (!returned(ret, id))
			out->dropped++; /* a candidate whose entity is gone */
	}
	return rc;
}

/* One batch: byshard[i][from[i], to[i]) on every shard at once, each row
 * through bt->keep. */
static int batch(bs_result_t *out, struct qctx *q, bs_store_t *st, const batch_t *bt, const size_t *from,
                 const size_t *to)
{
	idvec_t ret = { 0 };
	int rc;
	for (int i = 0; i < st->n; i++)
		if (from[i] < to[i])
			batch_sql(&q->sql[i], q, bt, i, from[i], to[i]);
	if ((rc = run_round(q, st)))
		goto done;
	for (int i = 0; i < st->n && !rc; i++)
		if (from[i] < to[i])
			rc = batch_rows(&ret, out, q, st, bt, i, from[i], to[i]);
done:
	free(ret.ids);
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

/* The ids read where their bucket no longer was, back into byshard by
 * the map read again (false when there are none). */
static int regroup_moved(bool *any, struct qctx *q, bs_store_t *st, int round)
{
	int rc;
	*any = q->moved.len > 0;
	if (!*any)
		return 0;
	if (round == 8)
		return bs_error(BS_EUNREACHABLE, "query on %s: entities' buckets kept moving", q->idx->name);
	if ((rc = bs__map_reload(st)))
		return rc;
	for (int i = 0; i < st->n; i++)
		q->byshard[i].len = 0;
	for (size_t k = 0; k < q->moved.len; k++) {
		int s = entity_shard(st, &q->moved.ids[k]);
		if (s < 0)
			return bs_error(BS_ECONFIG, "an entity's bucket has no configured shard");
		if ((rc = idvec_push(&q->byshard[s], q->moved.ids[k].b)))
			return rc;
	}
	q->moved.len = 0;
	return 0;
}

/* Every candidate of byshard through bt, every shard at once, in batches
 * of FETCH_BATCH ids per shard (one statement of them all would outgrow
 * max_allowed_packet); then, in rounds, what moved under it, from its
 * owner. */
static int batched(bs_result_t *out, struct qctx *q, bs_store_t *st, const batch_t *bt)
{
	int n = st->n, rc = 0;
	size_t *from = calloc((size_t)n, sizeof *from), *to = calloc((size_t)n, sizeof *to);
	if (!from || !to) {
		rc = bs__oom();
		goto done;
	}
	for (int round = 0;; round++) {
		bool any = true;
		if (round && ((rc = regroup_moved(&any, q, st, round)) || !any))
			break;
		memset(to, 0, (size_t)n * sizeof *to);
		for (;;) {
			any = false;
			for (int i = 0; i < n; i++) {
				from[i] = to[i];
				to[i] = from[i] + FETCH_BATCH < q->byshard[i].len ? from[i] + FETCH_BATCH
				                                                  : q->byshard[i].len;
				any |= from[i] < to[i];
			}
			if (!any || (rc = batch(out, q, st, bt, from, to)))
				break;
		}
		if (rc)
			break;
	}
done:
	free(from);
	free(to);
	return rc;
}

/* fetch_all's row: its body decoded and re-checked, kept in out (a row
 * without a body is not there). */
static int keep_body(bool *kept, void *arg, struct qctx *q, MYSQL_ROW row, const unsigned long *lens, int i,
                     const char *where)
{
	*kept = row[2] != NULL;
	return *kept ? fetched_row(arg, q, row, lens, i, where) : 0;
}

/* 2, without a limit (or with one the candidates fit under): every
 * candidate's body, decoded, re-checked and kept in out. */
static int fetch_all(bs_result_t *out, struct qctx *q, bs_store_t *st)
{
	batch_t bt = { "e.id, UNIX_TIMESTAMP(e.updated), e.body", 3, keep_body, out };
	return batched(out, q, st, &bt);
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

/* Where fetch_meta's rows go: all, sized for every candidate. */
struct meta_arg {
	meta_t *all;
	size_t *nall, cap;
};

/* fetch_meta's row: its id, update time and shard into all. */
static int keep_meta(bool *kept, void *arg, struct qctx *q, MYSQL_ROW row, const unsigned long *lens, int i,
                     const char *where)
{
	struct meta_arg *a = arg;
	(void)q;
	(void)lens;
	(void)where;
	*kept = *a->nall < a->cap;
	if (*kept) {
		meta_t *m = &a->all[(*a->nall)++];
		memcpy(m->id.b, row[0], 16);
		m->updated_us = bs__parse_unix_us(row[1]);
		m->shard = i;
	}
	return 0;
}

/* Every candidate's update time (no body), in batches as fetch_all reads
 * bodies, from the shards owning them: *all (caller frees) newest first. */
static int fetch_meta(meta_t **all, size_t *nall, bs_result_t *out, struct qctx *q, bs_store_t *st)
{
	size_t cap = 0;
	int rc = 0;
	*all = NULL;
	*nall = 0;
	for (int i = 0; i < st->n; i++)
		cap += q->byshard[i].len;
	if (cap && !(*all = malloc(cap * sizeof **all)))
		return bs__oom();
	struct meta_arg a = { *all, nall, cap };
	batch_t bt = { "e.id, UNIX_TIMESTAMP(e.updated)", 2, keep_meta, &a };
	if (!(rc = batched(out, q, st, &bt)) && *nall > 1)
		qsort(*all, *nall, sizeof **all, meta_newest_first);
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
		if (q->cprops[k] == &idx->props[idx->shard_on]) {
			q->route_bucket = bs_route_value(&c->value, q->cprops[k], st->map.buckets);
			*route = q->route_bucket < 0 ? -1 : bs__map_shard(st, q->route_bucket);
		}
	}
	return 0;
}

int bs_query(bs_result_t *out, bs_store_t *st, const char *index, const bs_cond_t *conds, int nconds, size_t limit)
{
	return bs__query_run(out, st, index, conds, nconds, limit, NULL);
}

int bs__query_run(bs_result_t *out, bs_store_t *st, const char *index, const bs_cond_t *conds, int nconds, size_t limit,
                  bs__query_stats_t *stats)
{
	const bs_prop_t *cprops[BS_INDEX_MAX_PROPS];
	struct qctx q = { .conds = conds, .nconds = nconds, .cprops = cprops, .route_bucket = -1, .stats = stats };
	int n = st->n, route, rc;

	memset(out, 0, sizeof *out);
	if ((rc = bs__map_need(st)) || (rc = resolve(&q, &route, st, index)))
		return rc;
	q.byshard = calloc((size_t)n, sizeof *q.byshard);
	q.stmt = calloc((size_t)n, sizeof *q.stmt);
	q.sql = calloc((size_t)n, sizeof *q.sql);
	q.states = calloc((size_t)n, sizeof *q.states);
	if (!q.byshard || !q.stmt || !q.sql || !q.states) {
		rc = bs__oom();
		goto done;
	}
	/* 1. matching entity_ids, each on its entity shard's list */
	if (stats)
		stats->step = 1;
	if ((rc = scan(&out->candidates, &q, st, route)))
		goto done;
	if (stats)
		stats->step = 2;
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
	free(q.states);
	free(q.moved.ids);
	if (rc)
		bs_result_free(out);
	return rc;
}

/* ------------------------------------------------------------ the plan */

int bs__query_plan(bs__query_plan_t *out, bs_store_t *st, const char *index, const bs_cond_t *conds, int nconds)
{
	const bs_prop_t *cprops[BS_INDEX_MAX_PROPS];
	struct qctx q = { .conds = conds, .nconds = nconds, .cprops = cprops, .route_bucket = -1 };
	int route, rc;

	memset(out, 0, sizeof *out);
	out->route_bucket = out->route_shard = -1;
	if ((rc = bs__map_need(st)) || (rc = resolve(&q, &route, st, index)))
		return rc;
	out->index = *q.idx;
	out->buckets = st->map.buckets;
	out->route_bucket = q.route_bucket;
	out->route_shard = route;
	/* what bs_query sends: step 1 as it is, step 2 with its ids elided */
	scan_sql(&out->step1, &q);
	batch_open(&out->step2, "e.id, UNIX_TIMESTAMP(e.updated), e.body");
	bs__buf_puts(&out->step2, "<the ids step 1 found whose entities this shard holds, at most 1,000 a statement>");
	batch_close(&out->step2);
	if ((rc = bs__buf_ok(&out->step1)) || (rc = bs__buf_ok(&out->step2)))
		bs__query_plan_free(out);
	return rc;
}

void bs__query_plan_free(bs__query_plan_t *p)
{
	bs__buf_free(&p->step1);
	bs__buf_free(&p->step2);
}

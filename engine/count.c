/*
 * count.c - exact row counts, for when InnoDB's estimate will not do: the
 * entities of every shard, or an index's rows. Counted by key in chunks
 * (keyset: added_id for entities, entity_id for an index table, both
 * unique keys), every shard at once, so that a caller's stop flag ends a
 * count of any size within one chunk. While a reshard's move leaves copies
 * (buckets incoming on a target, or gone and not yet cleaned up on a
 * source), each shard's entities are counted only in the buckets it is the
 * truth for (owned or leaving there; incoming where no shard owns it: a
 * cut-over committed, its roll-forward not yet done), the bucket computed
 * in SQL, so that every entity counts once.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT_CHUNK 100000

struct count_arg {
	const char *index; /* NULL: entities */
	int64_t *counts;
	atomic_int *stop;
	bs_buf_t *truth; /* per shard, "b,b,...": its buckets; NULL: all */
};

/* An entity's bucket in SQL: its 16 id bytes big-endian mod B, as
 * (hi mod B) * (2^64 mod B) + lo mod B, in exact DECIMAL arithmetic. */
static void bucket_sql(bs_buf_t *b, unsigned buckets)
{
	unsigned long long m = (unsigned long long)(((unsigned __int128)1 << 64) % buckets);
	bs__buf_printf(b,
	               "MOD(MOD(CAST(CONV(HEX(LEFT(id,8)),16,10) AS DECIMAL(20,0)),%u)*%llu"
	               "+MOD(CAST(CONV(HEX(RIGHT(id,8)),16,10) AS DECIMAL(20,0)),%u),%u)",
	               buckets, m, buckets, buckets);
}

/* When some shard holds a move's copies: per shard the buckets it is the
 * truth for (*truth NULL when none does: every row counts). */
static int truth_buckets(bs_buf_t **truth, bs_store_t *st)
{
	const uint8_t **states = calloc((size_t)st->n, sizeof *states);
	bool exact, copies = false;
	int rc = 0, nb;
	*truth = NULL;
	BS_ERR_ALLOC(states);
	if ((rc = bs__map_need(st)))
		goto done;
	nb = st->map.buckets;
	for (int i = 0; i < st->n && !rc; i++)
		rc = bs__owned_at(&states[i], &exact, st, i, -1);
	for (int i = 0; i < st->n && !rc && !copies; i++)
		for (int b = 0; b < nb && !copies; b++)
			copies = states[i][b] == BS__B_INCOMING || states[i][b] == BS__B_GONE;
	if (rc || !copies)
		goto done;
	if (!(*truth = calloc((size_t)st->n, sizeof **truth))) {
		rc = bs__oom();
		goto done;
	}
	for (int b = 0; b < nb; b++) {
		int t = -1;
		for (int i = 0; i < st->n && t < 0; i++)
			if (bs__owns(states[i][b]))
				t = i;
		for (int i = 0; i < st->n && t < 0; i++)
			if (states[i][b] == BS__B_INCOMING)
				t = i;
		if (t >= 0)
			bs__buf_printf(&(*truth)[t], "%s%d", (*truth)[t].len ? "," : "", b);
	}
	for (int i = 0; i < st->n && !rc; i++) {
		if (!(*truth)[i].len)
			bs__buf_puts(&(*truth)[i], "-1");
		rc = bs__buf_ok(&(*truth)[i]);
	}
done:
	free(states);
	return rc;
}

/* One chunk after the cursor: its rows (*n) and its last key (the cursor). */
static int count_chunk(int64_t *n, int64_t *owned, bs_store_t *st, int i, const char *index, int64_t *last_id,
                       uint8_t last_key[16], bool *first, const bs_buf_t *truth)
{
	bs_buf_t b = { 0 };
	MYSQL_RES *res = NULL;
	int rc;

	if (!index && truth) {
		bs__buf_puts(&b, "SELECT COUNT(*), MAX(added_id), COALESCE(SUM(bk IN (");
		bs__buf_putn(&b, truth->ptr, truth->len);
		bs__buf_puts(&b, ")),0) FROM (SELECT added_id, ");
		bucket_sql(&b, (unsigned)st->map.buckets);
		bs__buf_printf(&b, " AS bk FROM entities WHERE added_id>%lld ORDER BY added_id LIMIT %d) c",
		               (long long)*last_id, COUNT_CHUNK);
	} else if (!index) {
		bs__buf_printf(&b,
		               "SELECT COUNT(*), MAX(added_id) FROM (SELECT added_id FROM entities"
		               " WHERE added_id>%lld ORDER BY added_id LIMIT %d) c",
		               (long long)*last_id, COUNT_CHUNK);
	} else {
		bs__buf_puts(&b, "SELECT COUNT(*), MAX(entity_id) FROM (SELECT entity_id FROM ");
		bs__buf_ident(&b, index);
		if (!*first) {
			bs__buf_puts(&b, " WHERE entity_id>");
			bs__buf_hex(&b, last_key, 16);
		}
		bs__buf_printf(&b, " ORDER BY entity_id LIMIT %d) c", COUNT_CHUNK);
	}
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, i, b.ptr, b.len)))
		goto done;
	MYSQL_ROW row = mysql_fetch_row(res);
	*n = row && row[0] ? strtoll(row[0], NULL, 10) : 0;
	*owned = !index && truth ? (row && row[2] ? strtoll(row[2], NULL, 10) : 0) : *n;
	if (*n > 0 && row[1]) {
		if (!index)
			*last_id = strtoll(row[1], NULL, 10);
		else if (mysql_fetch_lengths(res)[1] == 16)
			memcpy(last_key, row[1], 16);
	}
	*first = false;
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

static int count_on(bs_store_t *st, int i, void *p)
{
	struct count_arg *a = p;
	int64_t n = COUNT_CHUNK, last_id = 0;
	uint8_t last_key[16] = { 0 };
	bool first = true;
	int rc = 0;

	if ((rc = bs__shard_check(st, i)))
		return rc;
	a->counts[i] = 0;
	while (n == COUNT_CHUNK) {
		if (a->stop && atomic_load(a->stop)) {
			a->counts[i] = -1;
			return bs_error(BS_ERROR, "count cancelled");
		}
		int64_t owned = 0;
		if ((rc = count_chunk(&n, &owned, st, i, a->index, &last_id, last_key, &first,
		                      a->truth ? &a->truth[i] : NULL))) {
			a->counts[i] = -1;
			return rc;
		}
		a->counts[i] += owned;
	}
	return 0;
}

int bs_count_exact(int64_t *counts, bs_store_t *st, const char *index, atomic_int *stop)
{
	struct count_arg a = { index, counts, stop, NULL };
	int rc;

	for (int i = 0; i < st->n; i++)
		counts[i] = -1;
	if (index) {
		bs_index_t def;
		rc = bs_index_get(&def, st, index); /* a name the catalog knows: safe as an identifier */
		if (rc)
			return rc;
	} else if ((rc = truth_buckets(&a.truth, st))) {
		return rc;
	}
	rc = bs__shard_each(st, NULL, count_on, &a, NULL);
	for (int i = 0; a.truth && i < st->n; i++)
		bs__buf_free(&a.truth[i]);
	free(a.truth);
	return rc;
}

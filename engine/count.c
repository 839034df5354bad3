/*
 * count.c - exact row counts, for when InnoDB's estimate will not do: the
 * entities of every shard, or an index's rows. Counted by key in chunks
 * (keyset: added_id for entities, entity_id for an index table, both
 * unique keys), every shard at once, so that a caller's stop flag ends a
 * count of any size within one chunk.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT_CHUNK 100000

struct count_arg {
	const char *index;   /* NULL: entities */
	int64_t *counts;
	atomic_int *stop;
};

/* One chunk after the cursor: its rows (*n) and its last key (the cursor). */
static int count_chunk(int64_t *n, bs_store_t *st, int i, const char *index, int64_t *last_id,
                       uint8_t last_key[16], bool *first)
{
	bs_buf_t b = {0};
	MYSQL_RES *res = NULL;
	int rc;

	if (!index) {
		bs__buf_printf(&b, "SELECT COUNT(*), MAX(added_id) FROM (SELECT added_id FROM entities"
		               " WHERE added_id>%lld ORDER BY added_id LIMIT %d) c", (long long)*last_id, COUNT_CHUNK);
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
	uint8_t last_key[16] = {0};
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
		if ((rc = count_chunk(&n, st, i, a->index, &last_id, last_key, &first))) {
			a->counts[i] = -1;
			return rc;
		}
		a->counts[i] += n;
	}
	return 0;
}

int bs_count_exact(int64_t *counts, bs_store_t *st, const char *index, atomic_int *stop)
{
	struct count_arg a = { index, counts, stop };

	for (int i = 0; i < st->n; i++)
		counts[i] = -1;
	if (index) {
		bs_index_t def;
		int rc = bs_index_get(&def, st, index); /* a name the catalog knows: safe as an identifier */
		if (rc)
			return rc;
	}
	return bs__shard_each(st, NULL, count_on, &a, NULL);
}

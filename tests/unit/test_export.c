/*
 * test_export.c - an export (bs_export_*) while writers write, against two
 * real shards: each shard is read in one snapshot from its first page, so
 * an entity written after the export began is exported once, as it was
 * (newest first, an overwrite moves it up past the shard's cursor: before
 * the snapshot it was in neither page), a deleted one still is, and one
 * created after is not; in insertion order the same. After the export
 * is freed, the next sees the writes.
 */
#include "bagstore.h"
#include "rawsql.h"
#include "t.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 2500      /* entities: more than two pages (1,000) a shard */
#define CHANGED 200 /* overwritten while the export runs */
#define DELETED 50
#define ADDED 100

static bs_id_t ids[N], more[ADDED];

static void bag_of(bs_value_t *bag, const bs_id_t *id, int n, const char *v)
{
	bs_value_t x;
	bs_value_map(bag);
	bs_value_bin(&x, id->b, 16);
	bs_map_set(bag, "id", 2, &x);
	bs_value_int(&x, n);
	bs_map_set(bag, "n", 1, &x);
	bs_value_str(&x, v, strlen(v));
	bs_map_set(bag, "v", 1, &x);
}

static int index_of(const bs_id_t *id, const bs_id_t *set, int n)
{
	for (int k = 0; k < n; k++)
		if (!memcmp(set[k].b, id->b, 16))
			return k;
	return -1;
}

/* "first" or "second": the bag's v */
static const char *v_of(const bs_value_t *bag)
{
	const bs_value_t *v = bs_map_get(bag, "v");
	if (!v || v->type != BS_STR)
		return "?";
	return v->v.s.len == 5 && !memcmp(v->v.s.ptr, "first", 5)    ? "first"
	       : v->v.s.len == 6 && !memcmp(v->v.s.ptr, "second", 6) ? "second"
	                                                                : "?";
}

/* One export in order: its first page read, then (through another store)
 * CHANGED of the entities put first overwritten, the DELETED after them
 * deleted and ADDED new ones put, then the rest read. Every entity of the
 * start exported once, as it was. Undone after (the overwritten put back,
 * the deleted put again, the new ones deleted). */
static void during(bs_store_t *st, bs_store_t *other, bs_export_order_t order, const char *name)
{
	bs_export_opts_t o = { .shard = -1, .order = order };
	bs_export_t *ex = NULL;
	static int seen[N];
	int extra = 0, as_was = 0, total = 0, dup = 0, unordered = 0;
	int64_t last_us = INT64_MAX;
	memset(seen, 0, sizeof seen);
	CHECK_OK(bs_export_open(&ex, st, &o));
	for (int page = 0; ex; page++) {
		bs_result_t r;
		int rc = bs_export_next(&r, st, ex, 0);
		CHECK(rc == 0, "%s: page %d: %s", name, page, rc ? bs_last_error() : "");
		if (rc || r.len == 0) {
			if (!rc)
				bs_result_free(&r);
			break;
		}
		for (size_t k = 0; k < r.len; k++) {
			int at = index_of(&r.items[k].id, ids, N);
			total++;
			if (at < 0) {
				extra++;
				continue;
			}
			dup += seen[at]++ > 0;
			as_was += !strcmp(v_of(&r.items[k].bag), "first");
			if (order == BS_EXPORT_NEWEST) {
				unordered += r.items[k].updated_us > last_us;
				last_us = r.items[k].updated_us;
			}
		}
		bs_result_free(&r);
		if (page == 0) { /* the writers, meanwhile */
			CHECK(total == 1000, "%s: the first page holds 1000 (%d)", name, total);
			for (int k = 0; k < CHANGED + DELETED; k++) {
				if (k < CHANGED) {
					bs_value_t bag;
					bag_of(&bag, &ids[k], k, "second");
					CHECK_OK(bs_put(other, &bag, NULL));
					bs_value_clear(&bag);
				} else {
					CHECK_OK(bs_delete(other, &ids[k]));
				}
			}
			for (int k = 0; k < ADDED; k++) {
				bs_value_t bag;
				bs_id_generate(&more[k]);
				bag_of(&bag, &more[k], N + k, "first");
				CHECK_OK(bs_put(other, &bag, NULL));
				bs_value_clear(&bag);
			}
		}
	}
	bs_export_free(ex);
	int once = 0;
	for (int k = 0; k < N; k++)
		once += seen[k] == 1;
	CHECK(once == N && dup == 0, "%s: every entity of the start exported once: %d of %d (%d twice)", name, once, N,
	      dup);
	CHECK(as_was == N, "%s: each as it was when the export began: %d of %d", name, as_was, N);
	CHECK(extra == 0, "%s: none created after it began: %d", name, extra);
	CHECK(unordered == 0, "%s: newest first throughout (%d out of order)", name, unordered);
	/* the next export sees the writes; then they are undone */
	o.order = BS_EXPORT_ADDED;
	int second = 0, now = 0;
	CHECK_OK(bs_export_open(&ex, st, &o));
	for (;;) {
		bs_result_t r;
		if (bs_export_next(&r, st, ex, 0) || r.len == 0) {
			bs_result_free(&r);
			break;
		}
		now += (int)r.len;
		for (size_t k = 0; k < r.len; k++)
			second += !strcmp(v_of(&r.items[k].bag), "second");
		bs_result_free(&r);
	}
	bs_export_free(ex);
	CHECK(now == N - DELETED + ADDED && second == CHANGED, "%s: the next export sees the writes: %d (%d changed)",
	      name, now, second);
	for (int k = 0; k < CHANGED + DELETED; k++) {
		bs_value_t bag;
		bag_of(&bag, &ids[k], k, "first");
		CHECK_OK(bs_put(other, &bag, NULL));
		bs_value_clear(&bag);
	}
	for (int k = 0; k < ADDED; k++)
		CHECK_OK(bs_delete(other, &more[k]));
	/* the export's own store writes again */
	bs_value_t bag;
	bag_of(&bag, &ids[0], 0, "first");
	CHECK_OK(bs_put(st, &bag, NULL));
	bs_value_clear(&bag);
}

int main(void)
{
	if (test_config("export"))
		return 1;
	(void)sql;
	bs_store_t *st = NULL, *other = NULL;
	CHECK_OK(bs_store_open(&st, cfg));
	CHECK_OK(bs_store_open(&other, cfg));
	CHECK_OK(bs_init(st)); /* tests/run.sh reset the shards: no entity, no index */
	/* put in batches: the first ones are the oldest, last newest first */
	static bs_value_t bags[N];
	for (int k = 0; k < N; k++) {
		bs_id_generate(&ids[k]);
		bag_of(&bags[k], &ids[k], k, "first");
	}
	static bs_id_t got[N];
	for (int k = 0; k < N; k += 500)
		CHECK_OK(bs_put_many(st, bags + k, 500, got + k, NULL));
	for (int k = 0; k < N; k++)
		bs_value_clear(&bags[k]);
	long long on0 = sql_int(0, "SELECT COUNT(*) FROM entities"), on1 = sql_int(1, "SELECT COUNT(*) FROM entities");
	CHECK(on0 > 1000 && on1 > 1000 && on0 + on1 == N, "more than a page on each shard: %lld and %lld", on0, on1);
	during(st, other, BS_EXPORT_NEWEST, "newest first");
	during(st, other, BS_EXPORT_ADDED, "in insertion order");
	bs_store_free(other);
	bs_store_free(st);
	raw_close_all();
	bs_config_free(cfg);
	mysql_library_end();
	return t_done("export");
}

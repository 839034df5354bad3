/*
 * bench_fanout.c - a query that reads every shard beside one that reads
 * one shard, the same number of results each (issue 12.3: with the shards
 * read at once from one thread, the all-shard query should cost about the
 * one-shard one, not N times it).
 *
 * Index ix_ab on (a, b), sharded by b. Entity i has a = i % 100 and
 * b = (i / 100) % 100: `a = X` finds its rows on every shard, `b = Y` on
 * one; each matches N / 100 entities, spread over every entity shard.
 *
 * Usage: bench_fanout CONFIG [N] [QUERIES]   (fresh, empty shards)
 */
#include "bagstore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "bench_fanout: %s: %s\n", what, bs_last_error());
	exit(1);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* p50 and p95 of `q` queries on prop = (k % 100), microseconds. */
static void timed(double *p50, double *p95, bs_store_t *st, const char *prop, int q, size_t *found)
{
	double *lat = malloc((size_t)q * sizeof *lat);
	*found = 0;
	for (int k = 0; k < q; k++) {
		bs_cond_t c = { "", { 0 } };
		bs_result_t r;
		snprintf(c.prop, sizeof c.prop, "%s", prop);
		bs_value_int(&c.value, k % 100);
		double t0 = now();
		if (bs_query(&r, st, "ix_ab", &c, 1, 0))
			die("query");
		lat[k] = (now() - t0) * 1e6;
		*found += r.len;
		bs_result_free(&r);
	}
	qsort(lat, (size_t)q, sizeof *lat, cmp_d);
	*p50 = lat[q / 2];
	*p95 = lat[q * 95 / 100];
	free(lat);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_fanout CONFIG [N] [QUERIES]\n");
		return 2;
	}
	int n = argc > 2 ? atoi(argv[2]) : 16000, q = argc > 3 ? atoi(argv[3]) : 400;
	if (n < 1000 || q < 20) {
		fprintf(stderr, "bench_fanout: N at least 1000, QUERIES at least 20\n");
		return 2;
	}
	bs_config_t *cfg;
	bs_store_t *st;
	bs_index_t def;
	if (bs_config_load(&cfg, argv[1]) || bs_store_open(&st, cfg) || bs_init(st))
		die("setup");
	if (bs_index_parse(&def, "ix_ab", "a:int,b:int", "b") || bs_index_create(st, &def))
		die("index");
	bs_value_t *bags = calloc(500, sizeof *bags);
	bs_id_t *ids = calloc(500, sizeof *ids);
	for (int from = 0; from < n; from += 500) {
		int k = 0;
		for (int i = from; i < n && k < 500; i++, k++) {
			bs_value_t v;
			bs_id_t id;
			bs_id_generate(&id);
			bs_value_map(&bags[k]);
			bs_value_bin(&v, id.b, 16);
			bs_map_set(&bags[k], "id", 2, &v);
			bs_value_int(&v, i % 100);
			bs_map_set(&bags[k], "a", 1, &v);
			bs_value_int(&v, (i / 100) % 100);
			bs_map_set(&bags[k], "b", 1, &v);
		}
		if (bs_put_many(st, bags, (size_t)k, ids, NULL))
			die("load");
		for (int j = 0; j < k; j++)
			bs_value_clear(&bags[j]);
	}
	printf("bench_fanout: %d shards, %d entities, %d queries each, %d results per query\n", cfg->nshards, n, q,
	       n / 100);
	printf("  (the shards share this machine's cores with the client)\n");
	double one50, one95, all50, all95;
	size_t f1, f2;
	timed(&one50, &one95, st, "b", q / 4, &f1); /* warm up */
	timed(&one50, &one95, st, "b", q, &f1);
	timed(&all50, &all95, st, "a", q, &f2);
	printf("  one-shard query (b = Y)       p50 %8.0f us   p95 %8.0f us   (%zu found)\n", one50, one95, f1);
	printf("  all-shard query (a = X)       p50 %8.0f us   p95 %8.0f us   (%zu found)\n", all50, all95, f2);
	printf("  all-shard / one-shard : p50 %.2fx  p95 %.2fx  (target at most 1.5x)\n", all50 / one50, all95 / one95);
	free(bags);
	free(ids);
	bs_store_free(st);
	bs_config_free(cfg);
	return 0;
}

/*
 * bench_stmts.c - the statements each kind of write costs the shards,
 * counted exactly: the servers' own counters (SHOW GLOBAL STATUS: Queries,
 * Questions and every Com_*), summed over the shards before and after N
 * operations of one kind, divided by N, with the index lookups
 * (Handler_read_key). A loaded machine changes timings,
 * not these counts (the bench's own status reads are left out).
 *
 * Kinds: put and delete without an index; get; put and delete with one
 * uuid index whose rows live on the other shard than their entity; bulk
 * put (bs_put_many, batches of BATCH, counted per batch) without and
 * with that index.
 *
 * Usage: bench_stmts CONFIG [N]   (two fresh shards, initialised here;
 * N per kind, default 200). With BENCH_STMTS_SLOWLOG=DIR (the servers on
 * this host, their slow query log on with long_query_time=0), each kind's
 * statements go to DIR/KIND-sI.log on shard I, for pt-query-digest.
 */
#include "bagstore.h"

#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 500
#define MAXC 400

static void die(const char *what)
{
	fprintf(stderr, "bench_stmts: %s: %s\n", what, bs_last_error());
	exit(1);
}

typedef struct {
	char name[64];
	long long v;
} counter_t;

typedef struct {
	counter_t c[MAXC];
	int n;
} status_t;

static MYSQL *raw[8];
static int nraw;

static void status_read(status_t *s)
{
	s->n = 0;
	for (int i = 0; i < nraw; i++) {
		if (mysql_query(raw[i], "SHOW GLOBAL STATUS WHERE Variable_name LIKE 'Com\\_%' OR Variable_name IN "
		                        "('Queries','Questions','Handler_read_key')")) {
			fprintf(stderr, "bench_stmts: status: %s\n", mysql_error(raw[i]));
			exit(1);
		}
		MYSQL_RES *r = mysql_store_result(raw[i]);
		MYSQL_ROW row;
		while (r && (row = mysql_fetch_row(r))) {
			int k;
			for (k = 0; k < s->n && strcmp(s->c[k].name, row[0]); k++)
				;
			if (k == s->n) {
				if (s->n == MAXC)
					continue;
				snprintf(s->c[k].name, sizeof s->c[k].name, "%s", row[0]);
				s->c[k].v = 0;
				s->n++;
			}
			s->c[k].v += atoll(row[1]);
		}
		if (r)
			mysql_free_result(r);
	}
}

static long long get(const status_t *s, const char *name)
{
	for (int k = 0; k < s->n; k++)
		if (!strcmp(s->c[k].name, name))
			return s->c[k].v;
	return 0;
}

static void slowlog(const char *kind)
{
	const char *dir = getenv("BENCH_STMTS_SLOWLOG");
	char q[600];
	if (!dir)
		return;
	for (int i = 0; i < nraw; i++) {
		snprintf(q, sizeof q, "SET GLOBAL slow_query_log_file='%s/%s-s%d.log'", dir, kind, i);
		if (mysql_query(raw[i], q))
			fprintf(stderr, "bench_stmts: %s\n", mysql_error(raw[i]));
	}
}

static status_t before;
static const char *cur;

static void begin(const char *kind)
{
	cur = kind;
	slowlog(kind);
	status_read(&before);
}

/* Per operation: Queries (every statement, those inside compound
 * statements too), Questions (the statements clients sent), and each Com_
 * counter that moved; and Handler_read_key, the index lookups (rows
 * found by key, those of the status reads' own tables included: a
 * constant). The status reads themselves (one SHOW per shard
 * after `before`) are taken out. */
static void end(int ops, const char *unit)
{
	status_t after;
	status_read(&after);
	slowlog("idle");
	printf("%-18s per %-6s %6.2f statements (Queries), %6.2f sent (Questions):", cur, unit,
	       (double)(get(&after, "Queries") - get(&before, "Queries") - nraw) / ops,
	       (double)(get(&after, "Questions") - get(&before, "Questions") - nraw) / ops);
	for (int k = 0; k < after.n; k++) {
		const char *name = after.c[k].name;
		long long d = after.c[k].v - get(&before, name);
		if (!strcmp(name, "Com_show_status"))
			d -= nraw;
		if (strncmp(name, "Com_", 4) || d <= 0)
			continue;
		printf(" %s %.2f", name + 4, (double)d / ops);
	}
	printf("; index lookups %.2f\n",
	       (double)(get(&after, "Handler_read_key") - get(&before, "Handler_read_key")) / ops);
}

static void make_bag(bs_value_t *bag, const bs_id_t *id, const bs_id_t *user, int i)
{
	bs_value_t v;
	char title[96];
	bs_value_map(bag);
	bs_value_bin(&v, id->b, 16);
	bs_map_set(bag, "id", 2, &v);
	bs_value_bin(&v, user->b, 16);
	bs_map_set(bag, "user_id", 7, &v);
	snprintf(title, sizeof title, "Entry number %d: we just launched a new backend system", i);
	bs_value_str(&v, title, strlen(title));
	bs_map_set(bag, "title", 5, &v);
	bs_value_int(&v, 1235697046 + i);
	bs_map_set(bag, "published", 9, &v);
}

/* n fresh entities; each one's user_id is its id with the last bit
 * flipped: with two shards and the first map, on the other shard. */
static void make_bags(bs_value_t *bags, bs_id_t *ids, int n)
{
	for (int i = 0; i < n; i++) {
		bs_id_t u;
		bs_id_generate(&ids[i]);
		u = ids[i];
		u.b[15] ^= 1;
		make_bag(&bags[i], &ids[i], &u, i);
	}
}

static void free_bags(bs_value_t *bags, int n)
{
	for (int i = 0; i < n; i++)
		bs_value_clear(&bags[i]);
}

static void singles(bs_store_t *st, const char *what, int n)
{
	bs_value_t *bags = calloc((size_t)n, sizeof *bags);
	bs_id_t *ids = calloc((size_t)n, sizeof *ids);
	char kind[64];
	make_bags(bags, ids, n);
	snprintf(kind, sizeof kind, "put-%s", what);
	begin(kind);
	for (int i = 0; i < n; i++)
		if (bs_put(st, &bags[i], NULL))
			die("put");
	end(n, "op");
	snprintf(kind, sizeof kind, "overwrite-%s", what);
	begin(kind);
	for (int i = 0; i < n; i++)
		if (bs_put(st, &bags[i], NULL))
			die("put");
	end(n, "op");
	if (!strcmp(what, "noindex")) {
		begin("get");
		for (int i = 0; i < n; i++) {
			bs_value_t out;
			if (bs_get(&out, st, &ids[i], NULL, NULL))
				die("get");
			bs_value_clear(&out);
		}
		end(n, "op");
	}
	snprintf(kind, sizeof kind, "delete-%s", what);
	begin(kind);
	for (int i = 0; i < n; i++)
		if (bs_delete(st, &ids[i]))
			die("delete");
	end(n, "op");
	free_bags(bags, n);
	free(bags);
	free(ids);
}

static void bulk(bs_store_t *st, const char *what, int n)
{
	bs_value_t *bags = calloc((size_t)n, sizeof *bags);
	bs_id_t *ids = calloc((size_t)n, sizeof *ids), *out = calloc((size_t)n, sizeof *out);
	char kind[64];
	make_bags(bags, ids, n);
	snprintf(kind, sizeof kind, "bulk-%s", what);
	begin(kind);
	for (int i = 0; i < n; i += BATCH) {
		int k = n - i < BATCH ? n - i : BATCH;
		if (bs_put_many(st, bags + i, (size_t)k, out + i, NULL))
			die("put_many");
	}
	end((n + BATCH - 1) / BATCH, "batch");
	free_bags(bags, n);
	free(bags);
	free(ids);
	free(out);
}

int main(int argc, char **argv)
{
	bs_config_t *cfg;
	bs_store_t *st = NULL;
	if (argc < 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: bench_stmts CONFIG [N]\n");
		return 2;
	}
	int n = argc > 2 ? atoi(argv[2]) : 200;
	if (n < 1)
		n = 200;
	if (bs_config_load(&cfg, argv[1]) || bs_store_open(&st, cfg))
		die(argv[1]);
	if (bs_init(st))
		die("init");
	nraw = cfg->nshards < 8 ? cfg->nshards : 8;
	for (int i = 0; i < nraw; i++) {
		raw[i] = mysql_init(NULL);
		if (!mysql_real_connect(raw[i], cfg->shards[i].host, cfg->shards[i].user, NULL, cfg->shards[i].database,
		                        cfg->shards[i].port, cfg->shards[i].socket, 0)) {
			fprintf(stderr, "bench_stmts: connect %s: %s\n", cfg->shards[i].name, mysql_error(raw[i]));
			return 1;
		}
	}
	printf("bench_stmts: %d shards, %d operations per kind, bulk batches of %d\n", nraw, n, BATCH);
	singles(st, "noindex", n);
	bulk(st, "noindex", n * 10);

	/* an empty store: the index starts ready, as a long-lived one is */
	for (int i = 0; i < nraw; i++)
		if (mysql_query(raw[i], "DELETE FROM entities"))
			die("empty");
	bs_index_t def;
	if (bs_index_parse(&def, "index_user", "user_id:uuid", "user_id") || bs_index_create(st, &def))
		die("index create");
	bs_store_free(st);
	if (bs_store_open(&st, cfg)) /* a fresh catalog cache: the index is maintained */
		die("open");
	singles(st, "1index", n);
	bulk(st, "1index", n * 10);

	bs_store_free(st);
	for (int i = 0; i < nraw; i++)
		mysql_close(raw[i]);
	bs_config_free(cfg);
	mysql_library_end();
	return 0;
}

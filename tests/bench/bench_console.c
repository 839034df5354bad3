/*
 * bench_console.c - the console's figures beside their targets, with N
 * entities (default 1,000,000) on the shards of CONFIG:
 *
 *  1. time from a key to the redrawn screen when paging the entity browser
 *     (next page and previous page; target under 50 ms), measured by the
 *     console itself in headless mode (`measure`: the key, the engine's
 *     work on the browse lane, the redraw);
 *  2. the console's resident memory after paging through 100,000 entities
 *     (target under 64 MiB), read from its own /proc/self/status;
 *  3. key to redrawn screen when reloading the shards screen (status, load
 *     counters and replica lag of every shard) and the indexes screen;
 *  4. the property census of 1,000 bodies per shard (bs_census), beside a
 *     reference from the same run: reading and decoding as many bodies per
 *     shard in one range scan each, every shard at once (the census's cost
 *     over that is its spread sampling and its paths).
 *
 * Usage: bench_console CONFIG BAGSTORE [N]
 * The shards must be reachable; when they hold fewer than N entities the
 * benchmark loads them first, with multi-row INSERTs of bodies built by
 * bs_body_encode (the loader is the benchmark's, not the console's: the
 * console only reads through bagstore.h). tests/bench/console.sh starts
 * throwaway shards.
 */
#include "bagstore.h"

#include <mysql.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LINES_PINNED 40
#define ROWS_PER_PAGE (LINES_PINNED - 5) /* what the entity table shows */

static bs_config_t *cfg;
static long nent;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *msg)
{
	fprintf(stderr, "bench_console: %s: %s\n", what, msg);
	exit(1);
}

typedef struct {
	char *p;
	size_t len, cap;
} str_t;

static void sput(str_t *s, const char *p, size_t n)
{
	if (s->len + n + 1 > s->cap) {
		s->cap = (s->len + n + 1) * 2;
		if (!(s->p = realloc(s->p, s->cap)))
			die("memory", "out of memory");
	}
	memcpy(s->p + s->len, p, n);
	s->len += n;
	s->p[s->len] = 0;
}

static void sputs(str_t *s, const char *p)
{
	sput(s, p, strlen(p));
}

static void shex(str_t *s, const uint8_t *p, size_t n)
{
	static const char hx[] = "0123456789abcdef";
	size_t i;

	sputs(s, "0x");
	for (i = 0; i < n; i++) {
		char c[2] = { hx[p[i] >> 4], hx[p[i] & 15] };
		sput(s, c, 2);
	}
}

static MYSQL *raw_connect(int shard)
{
	const bs_shard_conf_t *sc = &cfg->shards[shard];
	MYSQL *m = mysql_init(NULL);

	if (!m || !mysql_real_connect(m, sc->host, sc->user ? sc->user : "root", NULL,
	                              sc->database ? sc->database : "bagstore", sc->port, sc->socket, 0))
		die("connect", m ? mysql_error(m) : "mysql_init");
	return m;
}

typedef struct {
	int shard;
	long have;
	pthread_t tid;
} load_t;

/* Entities k of this shard's share, each a few properties like a post. */
static void *load_thread(void *p)
{
	load_t *l = p;
	MYSQL *m;
	str_t q = { 0 };
	int inrow = 0;
	long k;
	int64_t base = (int64_t)time(NULL) - 1000000; /* one per millisecond up to now-ish */

	mysql_thread_init();
	m = raw_connect(l->shard);
	for (k = 0; k <= nent; k++) {
		bs_value_t bag, v;
		bs_bytes_t body = { 0 };
		bs_id_t id;
		char title[96], ts[64];
		int len;

		if (inrow && (inrow == 2000 || k == nent)) {
			if (mysql_real_query(m, q.p, q.len))
				die("insert", mysql_error(m));
			q.len = 0;
			inrow = 0;
		}
		if (k == nent)
			break;
		if (k % cfg->nshards != l->shard)
			continue;
		do /* an id that lives on this thread's shard */
			bs_id_generate(&id);
		while (bs_route_id(&id, cfg->nshards) != l->shard);
		bs_value_map(&bag);
		bs_value_bin(&v, id.b, 16);
		bs_map_set(&bag, "id", 2, &v);
		bs_value_int(&v, k);
		bs_map_set(&bag, "n", 1, &v);
		len = snprintf(title, sizeof title, "entity number %ld of the console benchmark", k);
		bs_value_str(&v, title, (size_t)len);
		bs_map_set(&bag, "title", 5, &v);
		if (bs_body_encode(&body, &bag))
			die("encode", bs_last_error());
		sputs(&q, inrow ? ",(" : "INSERT INTO entities (id, updated, body) VALUES (");
		shex(&q, id.b, 16);
		snprintf(ts, sizeof ts, ",FROM_UNIXTIME(%lld.%03ld),", (long long)(base + k / 1000), k % 1000);
		sputs(&q, ts);
		shex(&q, body.ptr, body.len);
		sputs(&q, ")");
		inrow++;
		bs_bytes_free(&body);
		bs_value_clear(&bag);
	}
	free(q.p);
	mysql_close(m);
	mysql_thread_end();
	return NULL;
}

static long count_entities(int shard)
{
	MYSQL *m = raw_connect(shard);
	MYSQL_RES *r;
	MYSQL_ROW row;
	long n = -1;

	if (mysql_query(m, "SELECT COUNT(*) FROM entities") == 0 && (r = mysql_store_result(m))) {
		if ((row = mysql_fetch_row(r)) && row[0])
			n = atol(row[0]);
		mysql_free_result(r);
	}
	mysql_close(m);
	return n;
}

typedef struct {
	double median, p95, max;
	int n;
	bool ok;
} measure_t;

typedef struct {
	int shard;
	long rows;
	pthread_t tid;
} scan_t;

/* The census's reference: 1,000 bodies of a shard in one range scan, decoded. */
static void *scan_thread(void *p)
{
	scan_t *s = p;
	MYSQL *m;
	MYSQL_RES *r = NULL;
	MYSQL_ROW row;

	mysql_thread_init();
	m = raw_connect(s->shard);
	if (mysql_query(m, "SELECT id, body FROM entities ORDER BY added_id LIMIT 1000") ||
	    !(r = mysql_store_result(m)))
		die("scan", mysql_error(m));
	while ((row = mysql_fetch_row(r))) {
		unsigned long *len = mysql_fetch_lengths(r);
		bs_value_t bag;
		if (bs_body_decode(&bag, (const uint8_t *)row[1], len[1]) == 0) {
			bs_value_clear(&bag);
			s->rows++;
		}
	}
	mysql_free_result(r);
	mysql_close(m);
	mysql_thread_end();
	return NULL;
}

/* The census of 1,000 bodies per shard and its reference, best of three each. */
static void census_figures(bs_store_t *st, double *census_s, double *ref_s, long *sampled, int *paths)
{
	int k, i;

	*census_s = *ref_s = 1e9;
	for (k = 0; k < 3; k++) {
		bs_census_t c;
		scan_t *sc = calloc((size_t)cfg->nshards, sizeof *sc);
		double t0 = now(), t;

		if (bs_census(&c, st, 1000, -1))
			die("census", bs_last_error());
		if ((t = now() - t0) < *census_s)
			*census_s = t;
		*sampled = (long)c.sampled;
		*paths = c.nprops;
		bs_census_free(&c);
		t0 = now();
		for (i = 0; i < cfg->nshards; i++) {
			sc[i].shard = i;
			pthread_create(&sc[i].tid, NULL, scan_thread, &sc[i]);
		}
		for (i = 0; i < cfg->nshards; i++)
			pthread_join(sc[i].tid, NULL);
		if ((t = now() - t0) < *ref_s)
			*ref_s = t;
		free(sc);
	}
}

/* The console's figures beside their targets. */
static void report(const measure_t *next_, const measure_t *prev_, const measure_t *walk_, const measure_t *shards_,
                   const measure_t *indexes_, long rss_before, long rss_after, long pages)
{
	measure_t next = *next_, prev = *prev_, walk = *walk_, shards = *shards_, indexes = *indexes_;

	printf("\n  %-46s %9s %9s %9s   %s\n", "key to redrawn screen (entity browser)", "median", "p95", "max",
	       "target");
	if (next.ok)
		printf("  %-46s %7.2fms %7.2fms %7.2fms   < 50 ms: %s\n", "next page (PgDn), 300 times", next.median,
		       next.p95, next.max, next.p95 < 50 ? "met" : "MISSED");
	if (prev.ok)
		printf("  %-46s %7.2fms %7.2fms %7.2fms   < 50 ms: %s\n", "previous page (PgUp), 300 times",
		       prev.median, prev.p95, prev.max, prev.p95 < 50 ? "met" : "MISSED");
	if (walk.ok)
		printf("  %-46s %7.2fms %7.2fms %7.2fms   < 50 ms: %s\n", "paging through 100,000 entities",
		       walk.median, walk.p95, walk.max, walk.p95 < 50 ? "met" : "MISSED");
	printf("\n  %-46s %9s %9s %9s\n", "key to redrawn screen (reload, R)", "median", "p95", "max");
	if (shards.ok)
		printf("  %-46s %7.2fms %7.2fms %7.2fms\n", "shards screen (status, load, every shard)", shards.median,
		       shards.p95, shards.max);
	if (indexes.ok)
		printf("  %-46s %7.2fms %7.2fms %7.2fms\n", "indexes screen (rows, jobs, verify)", indexes.median,
		       indexes.p95, indexes.max);
	if (rss_after >= 0)
		printf("\n  resident memory: %.1f MiB at the first page, %.1f MiB after paging through %ld entities"
		       "   (target < 64 MiB: %s)\n",
		       rss_before / 1024.0, rss_after / 1024.0, pages * ROWS_PER_PAGE,
		       rss_after < 64 * 1024 ? "met" : "MISSED");
}

int main(int argc, char **argv)
{
	bs_store_t *st = NULL;
	long have = 0, pages;
	int i;
	char script[] = "/tmp/bench-console-XXXXXX";
	char dumps[] = "/tmp/bench-console-dumps-XXXXXX";
	char cmd[4096], line[512];
	FILE *f = NULL, *p = NULL;
	measure_t next = { 0 }, prev = { 0 }, walk = { 0 }, shards = { 0 }, indexes = { 0 };
	double census_s, ref_s;
	long sampled;
	int paths;
	long rss_before = -1, rss_after = -1;
	double t0;

	if (argc < 3) {
		fprintf(stderr, "usage: bench_console CONFIG BAGSTORE [N]\n");
		return 2;
	}
	nent = argc > 3 ? atol(argv[3]) : 1000000;
	if (bs_config_load(&cfg, argv[1]) || bs_store_open(&st, cfg) || bs_init(st))
		die(argv[1], bs_last_error());
	if (mysql_library_init(0, NULL, NULL))
		die("mysql", "library init");
	for (i = 0; i < cfg->nshards; i++)
		have += count_entities(i);
	if (have < nent) {
		load_t *lt = calloc((size_t)cfg->nshards, sizeof *lt);

		printf("loading %ld entities on %d shards ...\n", nent, cfg->nshards);
		fflush(stdout);
		t0 = now();
		for (i = 0; i < cfg->nshards; i++) {
			lt[i].shard = i;
			pthread_create(&lt[i].tid, NULL, load_thread, &lt[i]);
		}
		for (i = 0; i < cfg->nshards; i++)
			pthread_join(lt[i].tid, NULL);
		free(lt);
		for (have = 0, i = 0; i < cfg->nshards; i++)
			have += count_entities(i);
		printf("loaded in %.1f s\n", now() - t0);
	}
	printf("console benchmark: %ld entities on %d shards, %d rows a page (%dx120 terminal)\n", have, cfg->nshards,
	       ROWS_PER_PAGE, LINES_PINNED);

	pages = (100000 + ROWS_PER_PAGE - 1) / ROWS_PER_PAGE;
	int fd = mkstemp(script);
	if (fd < 0 || !(f = fdopen(fd, "w")) || !mkdtemp(dumps))
		die("tmp", "cannot create files");
	fprintf(f,
	        "wait-idle\nmeasure shards_reload 50 R\n"
	        "keys 2\nwait-idle\nmeasure indexes_reload 20 R\n"
	        "keys 5\nwait-idle\n"
	        "measure page_next 300 PgDn\n"
	        "measure page_prev 300 PgUp\n"
	        "key Home\nwait-idle\nrss\n"
	        "measure page_walk %ld PgDn\n"
	        "rss\ndump last\nkeys :q\\n\n",
	        pages);
	fclose(f);
	snprintf(cmd, sizeof cmd, "LINES=%d COLUMNS=120 TZ=UTC '%s' -c '%s' --headless '%s' --dump-dir '%s'",
	         LINES_PINNED, argv[2], argv[1], script, dumps);
	t0 = now();
	if (!(p = popen(cmd, "r")))
		die("popen", cmd);
	while (fgets(line, sizeof line, p)) {
		measure_t m = { 0 };
		char name[64];
		long kib;

		if (sscanf(line, "measure %63[^:]: n=%d median=%lfms p95=%lfms max=%lfms", name, &m.n, &m.median,
		           &m.p95, &m.max) == 5) {
			m.ok = true;
			if (strcmp(name, "page_next") == 0)
				next = m;
			else if (strcmp(name, "page_prev") == 0)
				prev = m;
			else if (strcmp(name, "page_walk") == 0)
				walk = m;
			else if (strcmp(name, "shards_reload") == 0)
				shards = m;
			else if (strcmp(name, "indexes_reload") == 0)
				indexes = m;
		} else if (sscanf(line, "rss %ld KiB", &kib) == 1) {
			if (rss_before < 0)
				rss_before = kib;
			else
				rss_after = kib;
		}
	}
	if (pclose(p) != 0)
		fprintf(stderr, "bench_console: the console exited with an error\n");
	unlink(script);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dumps);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_console: could not remove %s\n", dumps);

	report(&next, &prev, &walk, &shards, &indexes, rss_before, rss_after, pages);
	census_figures(st, &census_s, &ref_s, &sampled, &paths);
	printf("\n  census of 1,000 bodies per shard (%ld sampled, %d paths): %.3f s; reading and decoding as many\n"
	       "  bodies in one range scan per shard: %.3f s; ratio %.2f (best of 3 each)\n",
	       sampled, paths, census_s, ref_s, ref_s > 0 ? census_s / ref_s : 0);
	printf("  (the console ran %.1f s)\n", now() - t0);
	bs_store_free(st);
	bs_config_free(cfg);
	mysql_library_end();
	return next.ok && rss_after >= 0 ? 0 : 1;
}

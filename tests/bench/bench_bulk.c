/*
 * bench_bulk.c - bulk put and export beside their floors, in the same run
 * on the same servers (issue 12, items 1 and 2):
 *
 *  - floor for loading: the same bodies, precomputed, sent as multi-row
 *    INSERTs (500 rows each) into a table shaped like `entities`, on one
 *    connection per shard, every shard at once; and the same with each
 *    batch's index rows (the group value's, on the shard it routes to)
 *    as multi-row INSERTs after it, the one-index load's own floor;
 *  - bs_put_many in batches of 500, with no index and with one; and the
 *    same batches encoded ahead (bs_encode_many on a thread while the
 *    batch before is written with bs_put_encoded, as `bagstore put` does);
 *  - floor for reading: SELECT id, body by key pages of 1,000 on one
 *    connection per shard, every body decoded;
 *  - bs_export_next over the same rows (decoded, newest first merged), and
 *    the same with every entity written as a JSON line (what `bagstore
 *    export` does, to /dev/null).
 *
 * And `bagstore put` of the same bags as JSON Lines (written to a file in
 * $TMPDIR first), the command beside this program's folder, its CPU the
 * client's.
 *
 * Each load also prints the CPU it cost per entity: the shards' servers
 * (from /proc, when they run on this host) and this process (its threads
 * included). On a 2-core host the servers and the client share the cores,
 * so the CPU, not the wall time, says where a load's cost went; it is read
 * around each load's timed part only (not the tables emptied, nor the
 * index made, before it). The loads run in one order in even runs and
 * the reverse in odd ones, so that no figure always follows the same
 * one's after-effects.
 *
 * Usage: bench_bulk CONFIG [N] [RUNS]   (fresh, empty shards; N entities,
 * default 100000; RUNS repetitions of each figure, default 3: the median
 * is printed beside every run).
 */
#include "bagstore.h"
#include "cpu.h"

#include <mysql.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#define BATCH 500

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "bench_bulk: %s: %s\n", what, bs_last_error());
	exit(1);
}

static MYSQL *raw_connect(const bs_shard_conf_t *c)
{
	MYSQL *m = mysql_init(NULL);
	if (!mysql_real_connect(m, c->host, c->user, NULL, c->database, c->port, c->socket, CLIENT_MULTI_STATEMENTS)) {
		fprintf(stderr, "bench_bulk: connect %s: %s\n", c->name, mysql_error(m));
		exit(1);
	}
	return m;
}

static void raw_exec(MYSQL *m, const char *q, size_t len)
{
	if (mysql_real_query(m, q, (unsigned long)len)) {
		fprintf(stderr, "bench_bulk: %s\n", mysql_error(m));
		exit(1);
	}
	do {
		MYSQL_RES *r = mysql_store_result(m);
		if (r)
			mysql_free_result(r);
	} while (mysql_next_result(m) == 0);
}

static size_t hex(char *o, const uint8_t *p, size_t n)
{
	static const char d[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		o[2 * i] = d[p[i] >> 4];
		o[2 * i + 1] = d[p[i] & 15];
	}
	return 2 * n;
}

static void make_bag(bs_value_t *bag, const bs_id_t *id, int i)
{
	bs_value_t v;
	char title[96];
	bs_value_map(bag);
	bs_value_bin(&v, id->b, 16);
	bs_map_set(bag, "id", 2, &v);
	bs_value_int(&v, i % 1000);
	bs_map_set(bag, "group", 5, &v);
	snprintf(title, sizeof title, "Entry number %d: we just launched a new backend system", i);
	bs_value_str(&v, title, strlen(title));
	bs_map_set(bag, "title", 5, &v);
	bs_value_str(&v, "http://friendfeed.com/e/71f0c4d2-2918-44cc-a2df-6f486e96e37c", 60);
	bs_map_set(bag, "link", 4, &v);
	bs_value_float(&v, (double)i * 0.25);
	bs_map_set(bag, "score", 5, &v);
	bs_value_int(&v, 1235697046 + i);
	bs_map_set(bag, "published", 9, &v);
}

typedef struct {
	const bs_config_t *cfg;
	int nshards, n;
	bs_id_t *ids;
	bs_value_t *bags;
	bs_bytes_t *bodies;
	MYSQL **raw;
	char *q;
} bench_t;

typedef struct {
	double secs, srv_us, cli_us; /* CPU per entity: the servers', this process's */
} cost_t;

/* The shards' servers, each once (0: not known), and the load being
 * measured: tick() and tock() bracket its timed part only, not the
 * tables emptied or the index made before it. */
static long server_pid[64];
static int nservers;
static cost_t *measuring;
static int measuring_n;
static double cpu_srv0, cpu_me0;

static double servers_cpu(void)
{
	return cpu_of_all(server_pid, nservers);
}

/* The CPU of this process's ended children (`bagstore put`), seconds. */
static double children_cpu(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_CHILDREN, &ru))
		return 0;
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

static double tick(void)
{
	cpu_srv0 = servers_cpu();
	cpu_me0 = cpu_of((long)getpid()) + children_cpu();
	return now();
}

static double tock(double t0)
{
	double t = now() - t0;
	if (measuring) {
		measuring->secs = t;
		measuring->srv_us = (servers_cpu() - cpu_srv0) * 1e6 / measuring_n;
		measuring->cli_us = (cpu_of((long)getpid()) + children_cpu() - cpu_me0) * 1e6 / measuring_n;
	}
	return t;
}

/* Each shard's statement (rows[s] > 0) sent, then every answer read. */
static void send_all(bench_t *b, char **sql, const size_t *len, const int *rows)
{
	for (int s = 0; s < b->nshards; s++)
		if (rows[s] && mysql_send_query(b->raw[s], sql[s], (unsigned long)len[s]))
			die("send");
	for (int s = 0; s < b->nshards; s++)
		if (rows[s] && mysql_read_query_result(b->raw[s])) {
			fprintf(stderr, "bench_bulk: %s\n", mysql_error(b->raw[s]));
			exit(1);
		}
}

/* The floor for loading: multi-row INSERTs per shard, every shard at once
 * (sent, then read back); with ix, each batch's index rows too (the
 * group value's row on the shard its value routes to, as multi-row
 * INSERTs into a table shaped like the index table, every shard at once,
 * after the batch's entities). Returns seconds. */
static double floor_load(bench_t *b, const bs_prop_t *ix)
{
	size_t cap = 0;
	for (int i = 0; i < b->n; i++)
		cap += 2 * b->bodies[i].len + 96;
	for (int s = 0; s < b->nshards; s++) {
		raw_exec(b->raw[s], "TRUNCATE TABLE bench_layout", 27);
		raw_exec(b->raw[s], "TRUNCATE TABLE bench_ix", 23);
	}
	size_t ns = b->nshards > 0 ? (size_t)b->nshards : 1; /* (main refuses fewer than one) */
	char **sql = calloc(ns, sizeof *sql);
	size_t *len = calloc(ns, sizeof *len);
	int *rows = calloc(ns, sizeof *rows);
	for (int s = 0; s < b->nshards; s++)
		sql[s] = malloc(cap / ns * 2 + 1024 * BATCH);
	double t0 = tick();
	for (int from = 0; from < b->n; from += BATCH) {
		int to = from + BATCH < b->n ? from + BATCH : b->n;
		for (int s = 0; s < b->nshards; s++) {
			len[s] = (size_t)sprintf(sql[s], "INSERT INTO bench_layout (id, updated, body) VALUES ");
			rows[s] = 0;
		}
		for (int i = from; i < to; i++) {
			int s = bs_route_id(&b->ids[i], b->nshards);
			char *o = sql[s] + len[s];
			o += sprintf(o, "%s(X'", rows[s]++ ? "," : "");
			o += hex(o, b->ids[i].b, 16);
			o += sprintf(o, "',NOW(6),X'");
			o += hex(o, b->bodies[i].ptr, b->bodies[i].len);
			o += sprintf(o, "')");
			len[s] = (size_t)(o - sql[s]);
		}
		send_all(b, sql, len, rows);
		if (!ix)
			continue;
		for (int s = 0; s < b->nshards; s++) {
			len[s] = (size_t)sprintf(sql[s], "INSERT INTO bench_ix (grp, entity_id) VALUES ");
			rows[s] = 0;
		}
		for (int i = from; i < to; i++) {
			const bs_value_t *g = bs_map_get(&b->bags[i], "group");
			int s = g ? bs_route_value(g, ix, b->nshards) : -1;
			if (s < 0)
				die("route the group value");
			char *o = sql[s] + len[s];
			o += sprintf(o, "%s(%lld,X'", rows[s]++ ? "," : "", (long long)g->v.i);
			o += hex(o, b->ids[i].b, 16);
			o += sprintf(o, "')");
			len[s] = (size_t)(o - sql[s]);
		}
		send_all(b, sql, len, rows);
	}
	double t = tock(t0);
	for (int s = 0; s < b->nshards; s++)
		free(sql[s]);
	free(sql);
	free(len);
	free(rows);
	return t;
}

typedef struct {
	const bs_value_t *bags;
	size_t n;
	bs_id_t *ids;
	bs_encoded_t *enc;
} ahead_t;

static void *encode_ahead(void *arg)
{
	ahead_t *a = arg;
	if (bs_encode_many(&a->enc, a->bags, a->n, a->ids))
		a->enc = NULL;
	return NULL;
}

/* bs_put_many in batches, a call each; or (ahead) as `bagstore put` does,
 * each batch encoded (bs_encode_many) on a thread while the one before it
 * is written (bs_put_encoded): seconds. */
static double put_many(bench_t *b, bs_store_t *st, bool ahead)
{
	bool *written = calloc(BATCH, sizeof *written);
	bs_id_t *ids = calloc((size_t)b->n, sizeof *ids);
	double t0 = tick();
	ahead_t next = { b->bags, (size_t)(b->n < BATCH ? b->n : BATCH), ids, NULL };
	if (ahead)
		encode_ahead(&next);
	for (int from = 0; from < b->n; from += BATCH) {
		int k = from + BATCH < b->n ? BATCH : b->n - from;
		if (!ahead) {
			if (bs_put_many(st, b->bags + from, (size_t)k, ids + from, written))
				die("put_many");
			continue;
		}
		bs_encoded_t *cur = next.enc;
		pthread_t t;
		bool more = from + k < b->n;
		if (!cur) {
			fprintf(stderr, "bench_bulk: a batch could not be encoded (out of memory)\n");
			exit(1);
		}
		if (more) {
			int k2 = from + k + BATCH < b->n ? BATCH : b->n - from - k;
			next = (ahead_t){ b->bags + from + k, (size_t)k2, ids + from + k, NULL };
			if (pthread_create(&t, NULL, encode_ahead, &next))
				die("thread");
		}
		if (bs_put_encoded(st, cur, written))
			die("put_encoded");
		bs_encoded_free(cur);
		if (more)
			pthread_join(t, NULL);
	}
	double t = tock(t0);
	free(written);
	free(ids);
	return t;
}

/* The floor for reading: every row by key pages, bodies decoded. */
static double floor_read(bench_t *b, size_t *count)
{
	double t0 = now();
	*count = 0;
	for (int s = 0; s < b->nshards; s++) {
		long long after = 0;
		for (;;) {
			int len =
				sprintf(b->q,
			                "SELECT added_id, id, body FROM entities WHERE added_id>%lld ORDER BY added_id"
			                " LIMIT 1000",
			                after);
			if (mysql_real_query(b->raw[s], b->q, (unsigned long)len))
				die("select");
			MYSQL_RES *res = mysql_store_result(b->raw[s]);
			MYSQL_ROW row;
			size_t got = 0;
			while ((row = mysql_fetch_row(res))) {
				unsigned long *lens = mysql_fetch_lengths(res);
				bs_value_t v;
				after = strtoll(row[0], NULL, 10);
				if (bs_body_decode(&v, (const uint8_t *)row[2], lens[2]) == 0)
					bs_value_clear(&v);
				got++;
			}
			mysql_free_result(res);
			*count += got;
			if (got < 1000)
				break;
		}
	}
	return now() - t0;
}

/* bs_export over everything, newest first; with json, every entity
 * written as a JSON line to /dev/null. */
static double export_all(bs_store_t *st, bool json, size_t *count)
{
	FILE *null = fopen("/dev/null", "w");
	bs_export_opts_t o = { .shard = -1, .order = BS_EXPORT_NEWEST };
	bs_export_t *ex;
	double t0 = now();
	*count = 0;
	if (bs_export_open(&ex, st, &o))
		die("export open");
	for (;;) {
		bs_result_t r;
		if (bs_export_next(&r, st, ex, 0))
			die("export");
		if (!r.len) {
			bs_result_free(&r);
			break;
		}
		for (size_t k = 0; json && k < r.len; k++) {
			char *s = NULL;
			if (bs_json_encode(&s, &r.items[k].bag, 0) == 0)
				fprintf(null, "%s\n", s);
			free(s);
		}
		*count += r.len;
		bs_result_free(&r);
	}
	bs_export_free(ex);
	fclose(null);
	return now() - t0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	return v[n / 2];
}

static void show(const char *what, double *secs, int runs, int n)
{
	printf("  %-46s", what);
	for (int r = 0; r < runs; r++)
		printf(" %7.0f/s", n / secs[r]);
	printf("   median %7.0f/s\n", n / median(secs, runs));
}

/* The four loads, each from empty tables, the floor's and the store's
 * alike (a DELETE would leave the store's purge running under its next
 * load). */
enum { FLOOR, FLOOR_IX, PUT, PUT_IX, PUTB, PUTB_IX, CLI, LOADS };
static const char *const load_name[LOADS] = { "floor", "floor with index rows", "bs_put_many, no index",
	                                      "bs_put_many, one index", "encoded ahead, no index",
	                                      "encoded ahead, one index", "bagstore put (JSON Lines), no index" };

/* `bagstore put` of the same bags as JSON Lines: the command (its
 * output to /dev/null), and where the lines are. */
static char cli_cmd[4096], cli_lines[512];

/* The bags as JSON Lines in a file of their own, and the command that
 * puts them: the program beside this one's folder (build/bagstore). */
static void cli_setup(bench_t *b, const char *argv0, const char *config)
{
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char dir[2048];
	snprintf(dir, sizeof dir, "%s", argv0);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	else
		snprintf(dir, sizeof dir, ".");
	snprintf(cli_lines, sizeof cli_lines, "%s/bench_bulk.%ld.jsonl", tmp, (long)getpid());
	snprintf(cli_cmd, sizeof cli_cmd, "'%s/../bagstore' -c '%s' put '%s' >/dev/null", dir, config, cli_lines);
	FILE *f = fopen(cli_lines, "w");
	if (!f)
		die("JSON Lines file");
	for (int i = 0; i < b->n; i++) {
		char *j = NULL;
		if (bs_json_encode(&j, &b->bags[i], 0))
			die("JSON");
		fprintf(f, "%s\n", j);
		free(j);
	}
	if (fclose(f))
		die("JSON Lines file");
}




static double load(bench_t *b, bs_store_t *st, const bs_index_t *def, int l)
{
	static const char clear[] = "TRUNCATE TABLE entities; TRUNCATE TABLE bagstore_intents;"
	                            " TRUNCATE TABLE bagstore_batch_intents";
	if (l == FLOOR || l == FLOOR_IX)
		return floor_load(b, l == FLOOR_IX ? &def->props[def->shard_on] : NULL);
	for (int s = 0; s < b->nshards; s++)
		raw_exec(b->raw[s], clear, sizeof clear - 1);
	if (l == PUT || l == PUTB)
		return put_many(b, st, l == PUTB);
	if (l == CLI) {
		double t0 = tick();
		if (system(cli_cmd) != 0) {
			fprintf(stderr, "bench_bulk: %s failed\n", cli_cmd);
			exit(1);
		}
		return tock(t0);
	}
	/* one index maintained (ready: created on an empty store) */
	bs_index_drop(st, def->name);
	bs_error_clear();
	if (bs_index_create(st, def))
		die("index create");
	double t = put_many(b, st, l == PUTB_IX);
	bs_index_drop(st, def->name);
	bs_error_clear();
	return t;
}

static double median_of(cost_t (*c)[9], int l, int runs, size_t off)
{
	double v[9];
	for (int r = 0; r < runs; r++)
		v[r] = *(const double *)((const char *)&c[l][r] + off);
	return median(v, runs);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_bulk CONFIG [N] [RUNS]\n");
		return 2;
	}
	int n = argc > 2 ? atoi(argv[2]) : 100000, runs = argc > 3 ? atoi(argv[3]) : 3;
	if (n < 1000 || runs < 1 || runs > 9) {
		fprintf(stderr, "bench_bulk: N at least 1000, RUNS 1 to 9\n");
		return 2;
	}
	bs_config_t *cfg;
	bs_store_t *st;
	if (bs_config_load(&cfg, argv[1]) || bs_store_open(&st, cfg) || bs_init(st))
		die("setup");
	bench_t b = { .cfg = cfg, .nshards = cfg->nshards, .n = n };
	b.ids = calloc((size_t)n, sizeof *b.ids);
	b.bags = calloc((size_t)n, sizeof *b.bags);
	b.bodies = calloc((size_t)n, sizeof *b.bodies);
	b.raw = calloc((size_t)cfg->nshards, sizeof *b.raw);
	b.q = malloc(4096);
	for (int i = 0; i < n; i++) {
		bs_id_generate(&b.ids[i]);
		make_bag(&b.bags[i], &b.ids[i], i);
		if (bs_body_encode(&b.bodies[i], &b.bags[i]))
			die("encode");
	}
	cli_setup(&b, argv[0], argv[1]);
	for (int s = 0; s < cfg->nshards; s++) {
		b.raw[s] = raw_connect(&cfg->shards[s]);
		raw_exec(b.raw[s], "DROP TABLE IF EXISTS bench_layout", 33);
		const char *ddl = "CREATE TABLE bench_layout (added_id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,"
				  " id BINARY(16) NOT NULL, updated TIMESTAMP(6) NOT NULL, body MEDIUMBLOB,"
				  " UNIQUE KEY (id), KEY (updated)) ENGINE=InnoDB";
		raw_exec(b.raw[s], ddl, strlen(ddl));
		raw_exec(b.raw[s], "DROP TABLE IF EXISTS bench_ix", 29);
		ddl = "CREATE TABLE bench_ix (grp BIGINT NOT NULL, entity_id BINARY(16) NOT NULL,"
		      " PRIMARY KEY (grp, entity_id), UNIQUE KEY (entity_id)) ENGINE=InnoDB";
		raw_exec(b.raw[s], ddl, strlen(ddl));
	}
	printf("bench_bulk: %d entities, %d shards, %d runs; figures are entities per second\n", n, cfg->nshards, runs);
	printf("  (several MariaDB servers share this machine's cores with the client: figures\n"
	       "   depend on the load; the reference is measured in the same run)\n");
	double fl[9], fli[9], p0[9], p1[9], b0[9], b1[9], cl[9], fr[9], ex[9], exj[9];
	cost_t cost[LOADS][9];
	size_t count = 0;
	bs_index_t def;
	if (bs_index_parse(&def, "index_group", "group:int", "group"))
		die("index parse");
	for (int s = 0; s < cfg->nshards && nservers < 64; s++) {
		long pid = server_pid_of(b.raw[s]);
		bool seen = false;
		for (int k = 0; k < nservers; k++)
			seen |= server_pid[k] == pid;
		if (pid > 0 && !seen)
			server_pid[nservers++] = pid;
	}
	measuring_n = n;
	for (int r = 0; r < runs; r++) {
		/* the loads in one order in even runs, the reverse in odd ones */
		for (int i = 0; i < LOADS; i++) {
			int l = r % 2 ? LOADS - 1 - i : i;
			measuring = &cost[l][r];
			load(&b, st, &def, l);
		}
		measuring = NULL;
		fl[r] = cost[FLOOR][r].secs;
		fli[r] = cost[FLOOR_IX][r].secs;
		p0[r] = cost[PUT][r].secs;
		p1[r] = cost[PUT_IX][r].secs;
		b0[r] = cost[PUTB][r].secs;
		b1[r] = cost[PUTB_IX][r].secs;
		cl[r] = cost[CLI][r].secs;
		fr[r] = floor_read(&b, &count);
		ex[r] = export_all(st, false, &count);
		exj[r] = export_all(st, true, &count);
	}
	printf("\nloading (batches of %d):\n", BATCH);
	show("floor: multi-row INSERT, one conn per shard", fl, runs, n);
	show("floor with index rows: + their INSERTs", fli, runs, n);
	show("bs_put_many, no index", p0, runs, n);
	show("bs_put_many, one index", p1, runs, n);
	show("encoded ahead, no index (bs_encode_many", b0, runs, n);
	show("encoded ahead, one index  while one is written)", b1, runs, n);
	show("bagstore put of JSON Lines, no index", cl, runs, n);
	if (nservers > 0) {
		printf("\nCPU per entity, medians (us; the servers' summed, and this client's threads):\n");
		for (int l = 0; l < LOADS; l++)
			printf("  %-46s servers %6.1f   client %6.1f\n", load_name[l],
			       median_of(cost, l, runs, offsetof(cost_t, srv_us)),
			       median_of(cost, l, runs, offsetof(cost_t, cli_us)));
	}
	printf("\nreading everything:\n");
	show("floor: SELECT body by key pages + decode", fr, runs, n);
	show("bs_export (decoded, newest first)", ex, runs, n);
	show("bs_export + a JSON line each", exj, runs, n);
	double mf = median(fl, runs), mr = median(fr, runs);
	printf("\nratios (throughput, medians of %d runs):\n", runs);
	printf("  put_many, no index   / floor                 : %.2fx (target at least 0.6x)\n",
	       mf / median(p0, runs));
	printf("  put_many, one index  / floor                 : %.2fx (target at least 0.6x)\n",
	       mf / median(p1, runs));
	printf("  put_many, one index  / floor with index rows : %.2fx\n", median(fli, runs) / median(p1, runs));
	printf("  encoded ahead, no index  / floor              : %.2fx (target at least 0.6x)\n",
	       mf / median(b0, runs));
	printf("  encoded ahead, one index / floor              : %.2fx (target at least 0.6x)\n",
	       mf / median(b1, runs));
	printf("  encoded ahead, one index / floor with index rows: %.2fx\n", median(fli, runs) / median(b1, runs));
	printf("  bagstore put, no index   / floor              : %.2fx\n", mf / median(cl, runs));
	if (nservers > 0) {
		double f0 = median_of(cost, FLOOR, runs, offsetof(cost_t, srv_us));
		double f1 = median_of(cost, FLOOR_IX, runs, offsetof(cost_t, srv_us));
		printf("  servers' CPU an entity, no index  / floor    : %.2fx\n",
		       median_of(cost, PUT, runs, offsetof(cost_t, srv_us)) / f0);
		printf("  servers' CPU an entity, one index / floor with index rows: %.2fx\n",
		       median_of(cost, PUT_IX, runs, offsetof(cost_t, srv_us)) / f1);
	}
	printf("  export               / floor                 : %.2fx (target at least 0.5x)\n",
	       mr / median(ex, runs));
	printf("  export as JSON Lines / floor                 : %.2fx (target at least 0.5x)\n",
	       mr / median(exj, runs));
	for (int s = 0; s < cfg->nshards; s++) {
		raw_exec(b.raw[s], "DROP TABLE IF EXISTS bench_layout", 33);
		raw_exec(b.raw[s], "DROP TABLE IF EXISTS bench_ix", 29);
		mysql_close(b.raw[s]);
	}
	for (int i = 0; i < n; i++) {
		bs_value_clear(&b.bags[i]);
		bs_bytes_free(&b.bodies[i]);
	}
	unlink(cli_lines);
	free(b.ids);
	free(b.bags);
	free(b.bodies);
	free(b.raw);
	free(b.q);
	bs_store_free(st);
	bs_config_free(cfg);
	return 0;
}

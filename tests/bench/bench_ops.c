/*
 * bench_ops.c - put, get and query throughput and latency, beside plain SQL
 * on the same servers in the same run: a single-row INSERT into one table
 * (for put) and a primary-key SELECT (for get and query), the issue's
 * references; and the floors of what bagstore does, in plain SQL with no
 * consistency at all: for a put with one index, the entity's INSERT then
 * the index row's INSERT on its shard (two round trips); for a query, the
 * index table's SELECT then the bodies by id on their shards (two round
 * trips and the same rows, not decoded).
 *
 * Usage: bench_ops CONFIG [N]   (the shards must be empty and initialised
 * by this program; tests/bench/run.sh starts throwaway ones).
 */
#include "bagstore.h"
#include "cpu.h"

#include <mysql.h>
#include <pthread.h>
#include <stdbool.h>
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

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

typedef struct {
	const char *name;
	double total_s, p50_us, p99_us, ops_s;
} stat_t;

static stat_t summarize(const char *name, double *lat, int n, double total)
{
	qsort(lat, (size_t)n, sizeof *lat, cmp_d);
	stat_t s = { name, total, lat[n / 2] * 1e6, lat[(int)(n * 0.99)] * 1e6, n / total };
	printf("  %-34s %9.0f ops/s   p50 %7.1f us   p99 %7.1f us\n", name, s.ops_s, s.p50_us, s.p99_us);
	return s;
}

static void die(const char *what)
{
	fprintf(stderr, "bench_ops: %s: %s\n", what, bs_last_error());
	exit(1);
}

static MYSQL *raw_connect(const bs_shard_conf_t *c)
{
	MYSQL *m = mysql_init(NULL);
	if (!mysql_real_connect(m, c->host, c->user, NULL, c->database, c->port, c->socket, 0)) {
		fprintf(stderr, "bench_ops: connect %s: %s\n", c->name, mysql_error(m));
		exit(1);
	}
	return m;
}

static void raw_exec(MYSQL *m, const char *q, size_t len)
{
	if (mysql_real_query(m, q, len)) {
		fprintf(stderr, "bench_ops: %s\n", mysql_error(m));
		exit(1);
	}
	MYSQL_RES *r = mysql_store_result(m);
	if (r)
		mysql_free_result(r);
}

/* The entity ids (BINARY(16), first column) a SELECT returns, appended to
 * ids[*n] (at most max). */
static void raw_ids(MYSQL *m, const char *q, size_t len, bs_id_t *ids, int *n, int max)
{
	if (mysql_real_query(m, q, len)) {
		fprintf(stderr, "bench_ops: %s\n", mysql_error(m));
		exit(1);
	}
	MYSQL_RES *r = mysql_store_result(m);
	MYSQL_ROW row;
	while (r && (row = mysql_fetch_row(r))) {
		unsigned long *l = mysql_fetch_lengths(r);
		if (*n < max && l[0] == 16)
			memcpy(ids[(*n)++].b, row[0], 16);
	}
	if (r)
		mysql_free_result(r);
}

/* 2n lowercase hex digits of p at o; returns 2n. */
static size_t hex(char *o, const uint8_t *p, size_t n)
{
	static const char d[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		o[2 * i] = d[p[i] >> 4];
		o[2 * i + 1] = d[p[i] & 15];
	}
	o[2 * n] = '\0';
	return 2 * n;
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
	bs_value_str(&v, "http://friendfeed.com/e/71f0c4d2-2918-44cc-a2df-6f486e96e37c", 60);
	bs_map_set(bag, "link", 4, &v);
	bs_value_int(&v, 1235697046 + i);
	bs_map_set(bag, "published", 9, &v);
	bs_value_int(&v, 1235697046 + i);
	bs_map_set(bag, "updated", 7, &v);
}

/* What every timed operation may use. */
typedef struct {
	const bs_config_t *cfg;
	bs_store_t *st;
	/* Each reference statement has connections of its own, one per shard,
	 * as the store has its own: a connection that ran the statement just
	 * before (its server thread and caches warm) would flatter a reference
	 * timed beside others. raw: the plain table's statements and set-up;
	 * lay: the entities layout's; prp: its prepared statements. */
	MYSQL **raw, **lay, **prp;
	const bs_id_t *ids, *users;
	int nusers;
	const bs_bytes_t *bodies;
	char *q;                            /* statement buffer, big enough for any body */
	size_t found;                       /* entities returned by the queries */
	size_t found_plain;                 /* rows the plain-SQL query floors returned */
	const bs_index_t *user_ix, *pub_ix; /* for routing an index row's value */
	/* per shard: the layout's INSERT and SELECT by id, prepared (the
	 * floors of a put and a get that bagstore sends prepared) */
	MYSQL_STMT **pins, **psel;
} bench_t;

/* One operation on entity i. */
typedef void (*op_fn)(bench_t *b, int i);

/* Times op on entities [from, to), in order, or on (to - from) entities
 * picked at random from [0, to) when random; prints and returns the figures. */
static stat_t timed(const char *name, bench_t *b, double *lat, int from, int to, bool random, op_fn op)
{
	double t0 = now();
	for (int k = from; k < to; k++) {
		int i = random ? rand() % to : k;
		double a = now();
		op(b, i);
		lat[k - from] = now() - a;
	}
	return summarize(name, lat, to - from, now() - t0);
}

/* Times m ops side by side: round k runs each op once on the same entity
 * (k in order, or one picked at random from [0, to)), starting with op k
 * mod m, so that every op and its references see the same moment of a
 * machine whose speed drifts; prints and returns each op's figures. */
static void timed_mix(stat_t *out, const char *const *names, const op_fn *ops, int m, bench_t *b, int from,
                      int to, bool random)
{
	int n = to - from;
	double *lat = malloc((size_t)m * (size_t)n * sizeof *lat), *total = calloc((size_t)m, sizeof *total);
	if (!lat || !total) {
		fprintf(stderr, "bench_ops: out of memory\n");
		exit(1);
	}
	for (int k = from; k < to; k++) {
		int i = random ? rand() % to : k;
		for (int r = 0; r < m; r++) {
			int j = (k + r) % m;
			double a = now();
			ops[j](b, i);
			double t = now() - a;
			lat[(size_t)j * (size_t)n + (size_t)(k - from)] = t;
			total[j] += t;
		}
	}
	for (int j = 0; j < m; j++)
		out[j] = summarize(names[j], lat + (size_t)j * (size_t)n, n, total[j]);
	free(lat);
	free(total);
}

/* The plain-SQL statements: one row by id, on the id's shard, through its
 * connection of conns. `what` goes before the id's hex, `tail` after it;
 * with body, the body's hex follows in a second X'...' after `mid`. */
static void raw_by_id(MYSQL **conns, bench_t *b, int i, const char *what, const char *mid, const char *tail)
{
	char *q = b->q;
	size_t len = (size_t)sprintf(q, "%sX'", what);
	len += hex(q + len, b->ids[i].b, 16);
	if (mid) {
		len += (size_t)sprintf(q + len, "'%sX'", mid);
		len += hex(q + len, b->bodies[i].ptr, b->bodies[i].len);
	}
	len += (size_t)sprintf(q + len, "'%s", tail);
	raw_exec(conns[bs_route_id(&b->ids[i], b->cfg->nshards)], q, len);
}

static void op_insert_plain(bench_t *b, int i)
{
	raw_by_id(b->raw, b, i, "INSERT INTO bench_plain (id, body) VALUES (", ", ", ")");
}

static void op_insert_layout(bench_t *b, int i)
{
	raw_by_id(b->lay, b, i, "INSERT INTO bench_layout (id, updated, body) VALUES (", ", NOW(6), ", ")");
}

/* Run shard s's prepared statement with entity i's id (and body). */
static void prep_by_id(MYSQL_STMT *ps, bench_t *b, int i, bool body, bool rows)
{
	unsigned long idl = 16, bl = body ? (unsigned long)b->bodies[i].len : 0;
	MYSQL_BIND p[2];
	memset(p, 0, sizeof p);
	p[0].buffer_type = p[1].buffer_type = MYSQL_TYPE_BLOB;
	p[0].buffer = (void *)b->ids[i].b;
	p[0].buffer_length = idl;
	p[0].length = &idl;
	if (body) {
		p[1].buffer = b->bodies[i].ptr;
		p[1].buffer_length = bl;
		p[1].length = &bl;
	}
	if (mysql_stmt_bind_param(ps, p) || mysql_stmt_execute(ps) || (rows && mysql_stmt_store_result(ps))) {
		fprintf(stderr, "bench_ops: prepared statement: %s\n", mysql_stmt_error(ps));
		exit(1);
	}
	if (rows) {
		MYSQL_BIND r[2];
		unsigned long len[2];
		memset(r, 0, sizeof r);
		r[0].buffer_type = r[1].buffer_type = MYSQL_TYPE_BLOB;
		r[0].length = &len[0];
		r[1].length = &len[1];
		/* the body fetched whole into a buffer of its size, as bs_get's */
		if (mysql_stmt_bind_result(ps, r) || mysql_stmt_fetch(ps) == 1)
			die("prepared fetch");
		char *got = malloc(len[0] ? len[0] : 1), upd[32];
		r[0].buffer = got;
		r[0].buffer_length = len[0];
		r[1].buffer = upd;
		r[1].buffer_length = sizeof upd;
		if (mysql_stmt_fetch_column(ps, &r[0], 0, 0) || mysql_stmt_fetch_column(ps, &r[1], 1, 0))
			die("prepared fetch");
		free(got);
		mysql_stmt_free_result(ps);
	}
}

static void op_insert_layout_prep(bench_t *b, int i)
{
	prep_by_id(b->pins[bs_route_id(&b->ids[i], b->cfg->nshards)], b, i, true, false);
}

static void op_select_layout_prep(bench_t *b, int i)
{
	prep_by_id(b->psel[bs_route_id(&b->ids[i], b->cfg->nshards)], b, i, false, true);
}

/* Shard s's statement sql, prepared on its connection for them. */
static MYSQL_STMT *prep(bench_t *b, int s, const char *sql)
{
	MYSQL_STMT *ps = mysql_stmt_init(b->prp[s]);
	if (!ps || mysql_stmt_prepare(ps, sql, strlen(sql))) {
		fprintf(stderr, "bench_ops: preparing %s: %s\n", sql, ps ? mysql_stmt_error(ps) : "out of memory");
		exit(1);
	}
	return ps;
}

static void op_select_plain(bench_t *b, int i)
{
	raw_by_id(b->raw, b, i, "SELECT body FROM bench_plain WHERE id=", NULL, "");
}

static void op_select_layout(bench_t *b, int i)
{
	raw_by_id(b->lay, b, i, "SELECT body, updated FROM bench_layout WHERE id=", NULL, "");
}

/* The row's shard by the index's shard_on value, as bagstore routes it. */
static int route_value(const bs_index_t *ix, const bs_value_t *v, int n)
{
	int s = bs_route_value(v, &ix->props[ix->shard_on], n);
	if (s < 0) {
		fprintf(stderr, "bench_ops: a value that cannot route\n");
		exit(1);
	}
	return s;
}

/* The floor of a put with one index: the entity's INSERT, then its index
 * row's INSERT on the user's shard; no intent, no lock, no transaction. */
static void op_insert_two(bench_t *b, int i)
{
	raw_by_id(b->raw, b, i, "INSERT INTO bench_plain2 (id, body) VALUES (", ", ", ")");
	bs_value_t v;
	bs_value_bin(&v, b->users[i % b->nusers].b, 16);
	int s = route_value(b->user_ix, &v, b->cfg->nshards);
	char *q = b->q;
	size_t len = (size_t)sprintf(q, "INSERT INTO bench_index (user_id, entity_id) VALUES (X'");
	len += hex(q + len, b->users[i % b->nusers].b, 16);
	len += (size_t)sprintf(q + len, "', X'");
	len += hex(q + len, b->ids[i].b, 16);
	len += (size_t)sprintf(q + len, "')");
	raw_exec(b->raw[s], q, len);
}

/* The floor of a query: the index table's SELECT on the value's shard
 * (`where` is its condition, for `value`), then the bodies by id, one
 * SELECT ... IN per shard holding some, one shard after the other. */
static void plain_query(bench_t *b, const bs_index_t *ix, const char *where, const bs_value_t *value)
{
	enum { MAX = 256 };
	bs_id_t ids[MAX];
	int n = 0, s = route_value(ix, value, b->cfg->nshards);
	char *q = b->q;
	size_t len = (size_t)sprintf(q, "SELECT entity_id FROM `%s` WHERE %s", ix->name, where);
	raw_ids(b->raw[s], q, len, ids, &n, MAX);
	for (int sh = 0; sh < b->cfg->nshards; sh++) {
		len = (size_t)sprintf(q, "SELECT id, UNIX_TIMESTAMP(updated), body FROM entities WHERE id IN (");
		int k0 = 0;
		for (int k = 0; k < n; k++) {
			if (bs_route_id(&ids[k], b->cfg->nshards) != sh)
				continue;
			len += (size_t)sprintf(q + len, "%sX'", k0++ ? "," : "");
			len += hex(q + len, ids[k].b, 16);
			q[len++] = '\'';
		}
		if (!k0)
			continue;
		q[len++] = ')';
		q[len] = '\0';
		int got = 0;
		bs_id_t rows[MAX];
		raw_ids(b->raw[sh], q, len, rows, &got, MAX);
		b->found_plain += (size_t)got;
	}
}

static void op_query_plain(bench_t *b, int i)
{
	char where[64] = "user_id=X'";
	bs_value_t v;
	hex(where + 10, b->users[i % b->nusers].b, 16);
	strcat(where, "'");
	bs_value_bin(&v, b->users[i % b->nusers].b, 16);
	plain_query(b, b->user_ix, where, &v);
}

/* One entity per query: its `published`, unique. */
static void op_query_one(bench_t *b, int i)
{
	bs_cond_t c = { "published", { 0 } };
	bs_result_t r;
	bs_value_int(&c.value, 1235697046 + i);
	if (bs_query(&r, b->st, "index_published", &c, 1, 0))
		die("query");
	b->found += r.len;
	bs_result_free(&r);
}

static void op_query_one_plain(bench_t *b, int i)
{
	char where[64];
	bs_value_t v;
	snprintf(where, sizeof where, "published=%d", 1235697046 + i);
	bs_value_int(&v, 1235697046 + i);
	plain_query(b, b->pub_ix, where, &v);
}

static void op_put(bench_t *b, int i)
{
	bs_value_t bag;
	make_bag(&bag, &b->ids[i], &b->users[i % b->nusers], i);
	if (bs_put(b->st, &bag, NULL))
		die("put");
	bs_value_clear(&bag);
}

static void op_get(bench_t *b, int i)
{
	bs_value_t got;
	if (bs_get(&got, b->st, &b->ids[i], NULL, NULL))
		die("get");
	bs_value_clear(&got);
}

/* The entities of entity i's user, through index_user_id. */
static void op_query(bench_t *b, int i)
{
	bs_cond_t c = { "user_id", { 0 } };
	bs_result_t r;
	bs_value_bin(&c.value, b->users[i % b->nusers].b, 16);
	if (bs_query(&r, b->st, "index_user_id", &c, 1, 0))
		die("query");
	b->found += r.len;
	bs_result_free(&r);
	bs_value_clear(&c.value);
}

/* On every shard: drop the reference table, create it anew. */
static void raw_table(bench_t *b, const char *name, const char *ddl)
{
	char drop[128];
	int len = snprintf(drop, sizeof drop, "DROP TABLE IF EXISTS %s", name);
	for (int s = 0; s < b->cfg->nshards; s++) {
		raw_exec(b->raw[s], drop, (size_t)len);
		raw_exec(b->raw[s], ddl, strlen(ddl));
	}
}

static void ratio(const char *what, const stat_t *x, const stat_t *ref)
{
	printf("  %s : p50 %.2fx  p99 %.2fx  throughput %.2fx\n", what, x->p50_us / ref->p50_us,
	       x->p99_us / ref->p99_us, x->ops_s / ref->ops_s);
}

/* ------------------------------------------------------------ concurrent writers */

#define WRITERS 8

/* WRITERS threads of k writes each, at once (writers): their set-up
 * (bodies, connections, the store) first, then all start together at this
 * barrier, so that the time runs from the first write to the last. A store
 * connects at its first write, as an application's does: its connections,
 * map and catalog reads and statements prepared are in the time. */
static pthread_barrier_t writers_go;

/* One of WRITERS threads: k puts of new entities through a store of its
 * own (bagstore), or the same entities' INSERT and index-row INSERT on
 * plain connections of its own (the floor). */
typedef struct {
	const bench_t *b;
	int k; /* its k entities, each of a new user */
	bool plain;
	int err;
} writer_t;

static void *writer_run(void *arg)
{
	writer_t *w = arg;
	const bs_config_t *cfg = w->b->cfg;
	MYSQL *raw[64] = { 0 };
	/* the sequential ops (op_put, op_insert_two) on this thread's own
	 * entities, users, store and connections */
	bench_t t = { .cfg = cfg, .raw = raw, .nusers = w->k, .user_ix = w->b->user_ix };
	bs_id_t *ids = malloc((size_t)w->k * sizeof *ids), *users = malloc((size_t)w->k * sizeof *users);
	bs_bytes_t *bodies = calloc((size_t)w->k, sizeof *bodies);
	size_t max_body = 0;
	if (!ids || !users || !bodies)
		goto fail;
	for (int j = 0; j < w->k; j++) {
		bs_value_t bag;
		bs_id_generate(&ids[j]);
		bs_id_generate(&users[j]); /* users of their own: the queries' are left as they were */
		make_bag(&bag, &ids[j], &users[j], j);
		if (w->plain && bs_body_encode(&bodies[j], &bag))
			w->err = 1;
		if (bodies[j].len > max_body)
			max_body = bodies[j].len;
		bs_value_clear(&bag);
	}
	t.ids = ids;
	t.users = users;
	t.bodies = bodies;
	if (w->err || !(t.q = malloc(2 * max_body + 256)))
		goto fail;
	if (w->plain) {
		for (int s = 0; s < cfg->nshards && s < 64; s++)
			raw[s] = raw_connect(&cfg->shards[s]);
	} else if (bs_store_open(&t.st, cfg)) {
		goto fail;
	}
	pthread_barrier_wait(&writers_go);
	for (int j = 0; j < w->k; j++)
		(w->plain ? op_insert_two : op_put)(&t, j); /* each dies on a failure */
	goto done;
fail:
	w->err = 1;
	pthread_barrier_wait(&writers_go); /* the others wait for every thread's set-up */
done:
	bs_store_free(t.st);
	for (int s = 0; s < 64; s++)
		if (raw[s])
			mysql_close(raw[s]);
	for (int j = 0; bodies && j < w->k; j++)
		bs_bytes_free(&bodies[j]);
	free(bodies);
	free(ids);
	free(users);
	free(t.q);
	return NULL;
}


/* The shards' servers on this host (0: not known), for the writers' CPU. */
static long server_pid[64];

/* CPU seconds the servers used so far (those known). */
static double servers_cpu(int n)
{
	return cpu_of_all(server_pid, n < 64 ? n : 64);
}

/* Their writes per second, from the barrier to the last one's end; the
 * servers' CPU a write over the same time into *srv_us. */
static double writers(double *srv_us, const bench_t *b, int k, bool plain)
{
	pthread_t t[WRITERS];
	writer_t w[WRITERS];
	pthread_barrier_init(&writers_go, NULL, WRITERS + 1);
	for (int i = 0; i < WRITERS; i++) {
		w[i] = (writer_t){ .b = b, .k = k, .plain = plain };
		pthread_create(&t[i], NULL, writer_run, &w[i]);
	}
	pthread_barrier_wait(&writers_go);
	double t0 = now(), c0 = servers_cpu(b->cfg->nshards);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(t[i], NULL);
	double secs = now() - t0;
	*srv_us = (servers_cpu(b->cfg->nshards) - c0) * 1e6 / ((double)WRITERS * k);
	pthread_barrier_destroy(&writers_go);
	for (int i = 0; i < WRITERS; i++)
		if (w[i].err)
			die(plain ? "plain writer" : "writer");
	return (double)WRITERS * k / secs;
}

static double median3(const double *v)
{
	double a = v[0], b = v[1], c = v[2];
	return a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_ops CONFIG [N]\n");
		return 2;
	}
	int n = argc > 2 ? atoi(argv[2]) : 20000;
	if (n < 2) {
		fprintf(stderr, "bench_ops: N wants a number of at least 2, got '%s'\n", argv[2]);
		return 2;
	}
	int nusers = n / 20 > 0 ? n / 20 : 1;
	bs_config_t *cfg;
	bs_store_t *st;
	if (bs_config_load(&cfg, argv[1]) || bs_store_open(&st, cfg) || bs_init(st))
		die("setup");

	bs_id_t *ids = malloc((size_t)n * sizeof *ids), *users = malloc((size_t)nusers * sizeof *users);
	double *lat = malloc((size_t)n * sizeof *lat);
	bs_bytes_t *bodies = calloc((size_t)n, sizeof *bodies);
	MYSQL **raw = calloc((size_t)cfg->nshards, sizeof *raw), **lay = calloc((size_t)cfg->nshards, sizeof *lay),
	      **prp = calloc((size_t)cfg->nshards, sizeof *prp);
	if (!ids || !users || !lat || !bodies || !raw || !lay || !prp) {
		fprintf(stderr, "bench_ops: out of memory\n");
		return 1;
	}
	for (int i = 0; i < n; i++)
		bs_id_generate(&ids[i]);
	for (int u = 0; u < nusers; u++)
		bs_id_generate(&users[u]);

	printf("bench_ops: %d entities, %d users, %d shards\n", n, nusers, cfg->nshards);

	size_t max_body = 0;
	for (int i = 0; i < n; i++) {
		bs_value_t bag;
		make_bag(&bag, &ids[i], &users[i % nusers], i);
		if (bs_body_encode(&bodies[i], &bag))
			die("encode");
		bs_value_clear(&bag);
		if (bodies[i].len > max_body)
			max_body = bodies[i].len;
	}
	for (int s = 0; s < cfg->nshards; s++) {
		raw[s] = raw_connect(&cfg->shards[s]);
		lay[s] = raw_connect(&cfg->shards[s]);
		prp[s] = raw_connect(&cfg->shards[s]);
		if (s < 64)
			server_pid[s] = server_pid_of(raw[s]);
	}
	bench_t b = { .cfg = cfg,
		      .st = st,
		      .raw = raw,
		      .lay = lay,
		      .prp = prp,
		      .ids = ids,
		      .users = users,
		      .nusers = nusers,
		      .bodies = bodies,
		      .q = malloc(2 * max_body + 256) };
	if (!b.q) {
		fprintf(stderr, "bench_ops: out of memory\n");
		return 1;
	}

	printf("\nwrites (sequential, one client; each figure beside its references, interleaved:\n"
	       "each round runs every one once, in turn, each on connections of its own):\n");
	/* plain SQL reference tables, one per shard, same body bytes: a
	 * plain table; one shaped like `entities` (three B-trees: added_id,
	 * unique id, updated), to tell the layout's cost from ours; and the
	 * same written through a prepared statement, as bagstore sends a put
	 * without an index and a get */
	raw_table(&b, "bench_plain",
	          "CREATE TABLE bench_plain (id BINARY(16) NOT NULL PRIMARY KEY,"
	          " body MEDIUMBLOB) ENGINE=InnoDB");
	raw_table(&b, "bench_layout",
	          "CREATE TABLE bench_layout (added_id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,"
	          " id BINARY(16) NOT NULL, updated TIMESTAMP(6) NOT NULL, body MEDIUMBLOB,"
	          " UNIQUE KEY (id), KEY (updated)) ENGINE=InnoDB");
	raw_table(&b, "bench_layout_p",
	          "CREATE TABLE bench_layout_p (added_id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,"
	          " id BINARY(16) NOT NULL, updated TIMESTAMP(6) NOT NULL, body MEDIUMBLOB,"
	          " UNIQUE KEY (id), KEY (updated)) ENGINE=InnoDB");
	b.pins = calloc((size_t)cfg->nshards, sizeof *b.pins);
	b.psel = calloc((size_t)cfg->nshards, sizeof *b.psel);
	if (!b.pins || !b.psel)
		die("out of memory");
	for (int s = 0; s < cfg->nshards; s++) {
		b.pins[s] = prep(&b, s, "INSERT INTO bench_layout_p (id, updated, body) VALUES (?, NOW(6), ?)");
		b.psel[s] = prep(&b, s, "SELECT body, updated FROM bench_layout WHERE id=?");
	}

	/* put with no index: half the entities, beside the INSERTs */
	int half = n / 2;
	stat_t w0[4];
	timed_mix(w0,
	          (const char *const[]){ "plain SQL single-row INSERT", "plain SQL INSERT, entities layout",
	                                 "plain SQL INSERT, entities layout, prepared", "bs_put, no index" },
	          (const op_fn[]){ op_insert_plain, op_insert_layout, op_insert_layout_prep, op_put }, 4, &b, 0, half,
	          false);
	stat_t plain_ins = w0[0], plain_lay = w0[1], prep_lay = w0[2], put0 = w0[3];
	/* the other half of the reference tables, for the reads (not timed) */
	for (int i = half; i < n; i++) {
		op_insert_plain(&b, i);
		op_insert_layout(&b, i);
	}
	/* The store is not empty now, so the index starts building and the
	 * cleaner would backfill it; this bench measures only the write path
	 * with it maintained. */
	bs_index_t def;
	if (bs_index_parse(&def, "index_user_id", "user_id:uuid", "user_id"))
		die("index parse");
	if (bs_index_create(st, &def))
		die("index create");
	b.user_ix = &def;
	raw_table(&b, "bench_plain2",
	          "CREATE TABLE bench_plain2 (id BINARY(16) NOT NULL PRIMARY KEY,"
	          " body MEDIUMBLOB) ENGINE=InnoDB");
	raw_table(&b, "bench_index",
	          "CREATE TABLE bench_index (user_id BINARY(16) NOT NULL,"
	          " entity_id BINARY(16) NOT NULL, PRIMARY KEY (user_id, entity_id)) ENGINE=InnoDB");
	stat_t w1[2];
	timed_mix(w1, (const char *const[]){ "bs_put, one index (index_user_id)", "plain SQL INSERT + index row INSERT" },
	          (const op_fn[]){ op_put, op_insert_two }, 2, &b, half, n, false);
	stat_t put1 = w1[0], two_ins = w1[1];

	printf("\nreads (sequential, one client, random order, interleaved as above):\n");
	srand(42);
	stat_t r0[4];
	timed_mix(r0,
	          (const char *const[]){ "plain SQL primary-key SELECT", "plain SQL SELECT, entities layout",
	                                 "plain SQL SELECT, entities layout, prepared",
	                                 "bs_get (select + inflate + decode)" },
	          (const op_fn[]){ op_select_plain, op_select_layout, op_select_layout_prep, op_get }, 4, &b, 0, n,
	          true);
	stat_t plain_sel = r0[0], plain_lsel = r0[1], prep_lsel = r0[2], get = r0[3];

	/* Queries need a ready index: the one above is building, as the store
	 * was not empty. Mark it ready by hand (this bench measures the read
	 * path, not the lifecycle); with no backfill, each query finds only the
	 * user's entities written after the index was created, about half. */
	bs_index_t cur;
	if (bs_index_get(&cur, st, "index_user_id"))
		die("index get");
	if (cur.state != BS_INDEX_READY) {
		static const char ready[] = "UPDATE bagstore_indexes SET state='ready' WHERE name='index_user_id'";
		for (int s = 0; s < cfg->nshards; s++)
			raw_exec(raw[s], ready, sizeof ready - 1);
		/* the store's cached catalog says building until its TTL passes */
		struct timespec ts = { (time_t)cfg->catalog_ttl + 1, 0 };
		nanosleep(&ts, NULL);
	}
	int nq = n / 10 > 0 ? n / 10 : 1;
	stat_t qs = timed("bs_query user_id=U (one shard)", &b, lat, 0, nq, true, op_query);
	printf("    (%.1f entities per query on average)\n", (double)b.found / nq);
	srand(42);
	stat_t qfloor = timed("plain SQL: index SELECT, bodies by id", &b, lat, 0, nq, true, op_query_plain);
	printf("    (%.1f rows per query on average)\n", (double)b.found_plain / nq);

	/* One entity per query, through an index on `published` (unique),
	 * backfilled first (it is not part of the writes measured above). */
	bs_index_t pub;
	bs_cleaner_opts_t bo;
	memset(&bo, 0, sizeof bo);
	if (bs_index_parse(&pub, "index_published", "published:int", "published") || bs_index_create(st, &pub) ||
	    bs_cleaner_backfill(st, "index_published", &bo) || bs_index_get(&cur, st, "index_published"))
		die("index_published");
	if (cur.state != BS_INDEX_READY) {
		fprintf(stderr, "bench_ops: index_published is %s after its backfill\n",
		        bs_index_state_name(cur.state));
		return 1;
	}
	b.pub_ix = &pub;
	b.found = b.found_plain = 0;
	srand(7);
	stat_t q1 = timed("bs_query published=P (one entity)", &b, lat, 0, nq, true, op_query_one);
	srand(7);
	stat_t q1floor = timed("plain SQL: the same two SELECTs", &b, lat, 0, nq, true, op_query_one_plain);
	if (b.found != (size_t)nq || b.found_plain != (size_t)nq) {
		fprintf(stderr, "bench_ops: the one-entity queries found %zu and %zu, not %d each\n", b.found,
		        b.found_plain, nq);
		return 1;
	}

	/* last, so that the reads above run on the tables the sequential
	 * writes left: index_published dropped, index_user_id maintained alone */
	if (bs_index_drop(st, "index_published"))
		die("index_published drop");
	/* concurrent writers (index_user_id maintained, alone), interleaved: plain, bagstore, three rounds each */
	int k = n / 16 > 0 ? n / 16 : 1;
	double wp[3], wb[3], cp[3], cb[3];
	printf("\n%d concurrent writers, %d puts each, one index (user_id), 3 rounds each, interleaved\n"
	       "  (each a thread with connections of its own; several MariaDB servers share this machine's cores):\n",
	       WRITERS, k);
	for (int r = 0; r < 3; r++) {
		wp[r] = writers(&cp[r], &b, k, true);
		wb[r] = writers(&cb[r], &b, k, false);
	}
	double mp = median3(wp), mb = median3(wb);
	printf("  plain SQL INSERT + index row INSERT   %8.0f/s %8.0f/s %8.0f/s   median %8.0f/s\n", wp[0], wp[1],
	       wp[2], mp);
	printf("  bs_put, one index                     %8.0f/s %8.0f/s %8.0f/s   median %8.0f/s\n", wb[0], wb[1],
	       wb[2], mb);
	printf("  %d writers: bs_put / plain : throughput %.2fx (target at least 0.7x)\n", WRITERS, mb / mp);
	/* the servers are what the writers wait for on a small host: their
	 * CPU a write bounds the throughput ratio when they use every core */
	if (servers_cpu(cfg->nshards) > 0)
		printf("  the servers' CPU a write (medians): plain %.0f us, bs_put %.0f us (%.2fx; their ratio bounds\n"
		       "    the throughput's while the servers use every core)\n",
		       median3(cp), median3(cb), median3(cb) / median3(cp));


	printf("\nratios (bagstore / plain SQL; latency p50, throughput):\n");
	ratio("put, no index   / INSERT", &put0, &plain_ins);
	ratio("put, no index   / INSERT into the entities layout", &put0, &plain_lay);
	ratio("put, one index  / INSERT", &put1, &plain_ins);
	ratio("get             / SELECT", &get, &plain_sel);
	ratio("get             / SELECT on the entities layout  ", &get, &plain_lsel);
	ratio("put, no index   / prepared INSERT, entities layout", &put0, &prep_lay);
	ratio("get             / prepared SELECT, entities layout", &get, &prep_lsel);
	ratio("query           / SELECT", &qs, &plain_sel);
	ratio("query, 1 entity / SELECT", &q1, &plain_sel);
	printf("\nratios to the floors (the same statements' work in plain SQL, no consistency):\n");
	ratio("put, one index  / INSERT + index row INSERT", &put1, &two_ins);
	ratio("query           / index SELECT + bodies by id", &qs, &qfloor);
	ratio("query, 1 entity / index SELECT + body by id  ", &q1, &q1floor);

	for (int s = 0; s < cfg->nshards; s++) {
		mysql_stmt_close(b.pins[s]);
		mysql_stmt_close(b.psel[s]);
		mysql_close(raw[s]);
		mysql_close(lay[s]);
		mysql_close(prp[s]);
	}
	free(b.pins);
	free(b.psel);
	for (int i = 0; i < n; i++)
		bs_bytes_free(&bodies[i]);
	free(raw);
	free(lay);
	free(prp);
	free(bodies);
	free(b.q);
	free(lat);
	free(ids);
	free(users);
	bs_store_free(st);
	bs_config_free(cfg);
	return 0;
}

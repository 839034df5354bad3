/*
 * bench_reshard.c - resharding under load: the tools
 * tests/integration/test_reshard.sh drives, and the benchmark
 * tests/bench/reshard.sh runs.
 *
 *   bench_reshard load CONFIG N SEED STATE
 *       put N entities (ids derived from SEED) through the library; their
 *       state into STATE
 *   bench_reshard writer CONFIG NAME SEED N STOPFILE STATE
 *       until STOPFILE exists: put new entities, overwrite and delete its
 *       own and its share of the N loaded ones (NAME's hash picks which),
 *       through the library; every acknowledged write into STATE; prints
 *       "writer NAME: ops O, errors E, max_ms M, p50_ms A, p99_ms B";
 *       with BENCH_WRITER_BATCH=K (above 1), puts only, K at a time
 *       through bs_put_many (max_ms and the rest per batch)
 *   bench_reshard check CONFIG STATE...
 *       the states applied in order (the last line of an id wins) against
 *       the store: every entity's body, read through the library; every
 *       entity exactly once, on the shard that owns its bucket, and no
 *       other (a deleted one back), read with plain SQL; queries of the
 *       indexes by_user and by_t against the oracle computed from the
 *       bodies (when the store has them). Prints what is wrong; exits 1
 *       on any.
 *   bench_reshard bench CONFIG2 CONFIG4 N
 *       the benchmark (see run_bench)
 *
 * A state line: "ID W SEQ USER T" for a put (ID, USER 32 hex digits), or
 * "ID -" for a delete. Bodies: {"id", "user", "t", "n", "w", "seq"}.
 */
#include "bagstore.h"
#include "cpu.h"

#include <mysql.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define NUSERS 40
#define NTITLES 50

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "bench_reshard: %s: %s\n", what, bs_last_error());
	exit(1);
}

static void hex(char *o, const uint8_t *p, size_t n)
{
	static const char d[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		o[2 * i] = d[p[i] >> 4];
		o[2 * i + 1] = d[p[i] & 15];
	}
	o[2 * n] = '\0';
}

/* A 16-byte id from (a, b): deterministic, spread over the whole range. */
static void derive(bs_id_t *out, uint32_t a, uint32_t b)
{
	uint32_t x = a * 2654435761u ^ b * 40503u;
	for (int k = 0; k < 4; k++) {
		uint32_t h = (uint32_t)crc32(x + (uint32_t)k, (const unsigned char *)&b, 4) ^ (a + (uint32_t)k * 7919u);
		memcpy(out->b + 4 * k, &h, 4);
		x = x * 1103515245u + 12345u;
	}
}

static void user_of(bs_id_t *u, int k)
{
	derive(u, 0xabcdef, (uint32_t)(k % NUSERS));
}

static void make_bag(bs_value_t *bag, const bs_id_t *id, int user, int title, int n, const char *w, long seq)
{
	bs_value_t v;
	bs_id_t u;
	char t[32];
	user_of(&u, user);
	bs_value_map(bag);
	bs_value_bin(&v, id->b, 16);
	bs_map_set(bag, "id", 2, &v);
	bs_value_bin(&v, u.b, 16);
	bs_map_set(bag, "user", 4, &v);
	snprintf(t, sizeof t, "t%d", title % NTITLES);
	bs_value_str(&v, t, strlen(t));
	bs_map_set(bag, "t", 1, &v);
	bs_value_int(&v, n);
	bs_map_set(bag, "n", 1, &v);
	bs_value_str(&v, w, strlen(w));
	bs_map_set(bag, "w", 1, &v);
	bs_value_int(&v, seq);
	bs_map_set(bag, "seq", 3, &v);
}

static void state_put(FILE *f, const bs_id_t *id, const char *w, long seq, int user, int title)
{
	char h[33], uh[33];
	bs_id_t u;
	user_of(&u, user);
	hex(h, id->b, 16);
	hex(uh, u.b, 16);
	fprintf(f, "%s %s %ld %s t%d\n", h, w, seq, uh, title % NTITLES);
}

static bs_store_t *open_store(const char *path, bs_config_t **cfg)
{
	bs_store_t *st = NULL;
	if (bs_config_load(cfg, path) || bs_store_open(&st, *cfg))
		die(path);
	return st;
}

/* ------------------------------------------------------------ load */

static int cmd_load(int argc, char **argv)
{
	bs_config_t *cfg;
	if (argc < 6)
		return 2;
	bs_store_t *st = open_store(argv[2], &cfg);
	long n = atol(argv[3]);
	uint32_t seed = (uint32_t)atol(argv[4]);
	FILE *f = fopen(argv[5], "w");
	if (!f)
		die(argv[5]);
	for (long k = 0; k < n; k++) {
		bs_id_t id;
		bs_value_t bag;
		derive(&id, seed, (uint32_t)k);
		make_bag(&bag, &id, (int)(k % NUSERS), (int)(k % NTITLES), (int)k, "load", 0);
		if (bs_put(st, &bag, NULL))
			die("load: put");
		bs_value_clear(&bag);
		state_put(f, &id, "load", 0, (int)(k % NUSERS), (int)(k % NTITLES));
	}
	fclose(f);
	bs_store_free(st);
	bs_config_free(cfg);
	return 0;
}

/* ------------------------------------------------------------ writer */

typedef struct {
	double *lat;
	size_t n, cap;
	double max;
} lats_t;

static void lat_add(lats_t *l, double s)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 4096;
		l->lat = realloc(l->lat, l->cap * sizeof *l->lat);
	}
	l->lat[l->n++] = s;
	if (s > l->max)
		l->max = s;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double pct(lats_t *l, double p)
{
	if (!l->n)
		return 0;
	qsort(l->lat, l->n, sizeof *l->lat, dcmp);
	return l->lat[(size_t)(p * (double)(l->n - 1))];
}

/* The writer's entities: its own (derived from its name) and every loaded
 * one whose number is congruent to its share. */
typedef struct {
	bs_store_t *st;
	FILE *state;
	const char *name;
	uint32_t wseed, seed;
	long nload, share, nshares;
	long seq, created, ops, errors;
	lats_t put_lat;
	int batch; /* BENCH_WRITER_BATCH: puts go N at a time through bs_put_many (no deletes) */
} writer_t;

static void pick(writer_t *w, bs_id_t *id, unsigned r)
{
	long nmine = w->nload / w->nshares;
	if (w->created && (r % 3 == 0 || !nmine))
		derive(id, w->wseed, (uint32_t)(r % (unsigned)w->created));
	else
		derive(id, w->seed, (uint32_t)((long)(r % (unsigned)(nmine ? nmine : 1)) * w->nshares + w->share));
}

static void writer_op(writer_t *w)
{
	bs_id_t id;
	unsigned r = (unsigned)rand();
	bool del = r % 5 == 0, fresh = r % 4 == 1;
	if (fresh)
		derive(&id, w->wseed, (uint32_t)w->created++);
	else
		pick(w, &id, r / 8);
	double t0 = now();
	int rc;
	long seq = ++w->seq;
	int user = (int)(r / 16 % NUSERS), title = (int)(r / 64 % NTITLES);
	if (del && !fresh) {
		rc = bs_delete(w->st, &id);
		if (rc == BS_ENOTFOUND)
			rc = 0; /* deleted before: still absent */
	} else {
		bs_value_t bag;
		make_bag(&bag, &id, user, title, (int)seq, w->name, seq);
		rc = bs_put(w->st, &bag, NULL);
		bs_value_clear(&bag);
		lat_add(&w->put_lat, now() - t0);
	}
	w->ops++;
	if (rc) {
		w->errors++;
		fprintf(stderr, "bench_reshard: writer %s: %s\n", w->name, bs_last_error());
		return;
	}
	if (del && !fresh) {
		char h[33];
		hex(h, id.b, 16);
		fprintf(w->state, "%s -\n", h);
	} else {
		state_put(w->state, &id, w->name, seq, user, title);
	}
}

/* A batch of w->batch puts through bs_put_many (an id may come twice: the
 * later one wins, as its state line comes later); each entity written is
 * recorded, and one not written is an error. */
static void writer_batch(writer_t *w)
{
	int n = w->batch;
	bs_value_t *bags = calloc((size_t)n, sizeof *bags);
	bs_id_t *ids = calloc((size_t)n, sizeof *ids);
	bool *written = calloc((size_t)n, sizeof *written);
	long *seqs = calloc((size_t)n, sizeof *seqs);
	int *users = calloc((size_t)n, sizeof *users), *titles = calloc((size_t)n, sizeof *titles);
	if (!bags || !ids || !written || !seqs || !users || !titles)
		die("writer: out of memory");
	for (int k = 0; k < n; k++) {
		unsigned r = (unsigned)rand();
		if (r % 4 == 1)
			derive(&ids[k], w->wseed, (uint32_t)w->created++);
		else
			pick(w, &ids[k], r / 8);
		seqs[k] = ++w->seq;
		users[k] = (int)(r / 16 % NUSERS);
		titles[k] = (int)(r / 64 % NTITLES);
		make_bag(&bags[k], &ids[k], users[k], titles[k], (int)seqs[k], w->name, seqs[k]);
	}
	double t0 = now();
	int rc = bs_put_many(w->st, bags, (size_t)n, ids, written);
	lat_add(&w->put_lat, now() - t0);
	w->ops += n;
	for (int k = 0; k < n; k++) {
		if (written[k])
			state_put(w->state, &ids[k], w->name, seqs[k], users[k], titles[k]);
		else
			w->errors++;
		bs_value_clear(&bags[k]);
	}
	if (rc)
		fprintf(stderr, "bench_reshard: writer %s: bs_put_many: %s\n", w->name, bs_last_error());
	free(bags);
	free(ids);
	free(written);
	free(seqs);
	free(users);
	free(titles);
}

static int cmd_writer(int argc, char **argv)
{
	bs_config_t *cfg;
	struct stat sb;
	if (argc < 8)
		return 2;
	writer_t w = { .name = argv[3], .seed = (uint32_t)atol(argv[4]), .nload = atol(argv[5]), .nshares = 8 };
	w.st = open_store(argv[2], &cfg);
	w.wseed = (uint32_t)crc32(0, (const unsigned char *)w.name, (uInt)strlen(w.name));
	w.share = w.wseed % 8;
	const char *bt = getenv("BENCH_WRITER_BATCH");
	w.batch = bt ? atoi(bt) : 0;
	srand(w.wseed);
	if (!(w.state = fopen(argv[7], "w")))
		die(argv[7]);
	setvbuf(w.state, NULL, _IOLBF, 0);
	while (stat(argv[6], &sb) != 0) {
		if (w.batch > 1)
			writer_batch(&w);
		else
			writer_op(&w);
	}
	printf("writer %s: ops %ld, errors %ld, max_ms %.1f, p50_ms %.2f, p99_ms %.2f\n", w.name, w.ops, w.errors,
	       w.put_lat.max * 1000, pct(&w.put_lat, 0.5) * 1000, pct(&w.put_lat, 0.99) * 1000);
	fclose(w.state);
	free(w.put_lat.lat);
	bs_store_free(w.st);
	bs_config_free(cfg);
	return w.errors ? 1 : 0;
}

/* ------------------------------------------------------------ check */

typedef struct {
	uint8_t id[16];
	bool present;
	char w[32];
	long seq;
	uint8_t user[16];
	char t[16];
	int copies;  /* rows found on the shards */
	bool placed; /* on the shard owning its bucket */
} want_t;

typedef struct {
	want_t *v;
	size_t n, cap;
} wants_t;

static int unhex(uint8_t *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned x;
		if (sscanf(s + 2 * i, "%2x", &x) != 1)
			return -1;
		out[i] = (uint8_t)x;
	}
	return 0;
}

static int want_cmp(const void *a, const void *b)
{
	return memcmp(a, b, 16);
}

static want_t *want_find(wants_t *w, const uint8_t *id)
{
	return bsearch(id, w->v, w->n, sizeof *w->v, want_cmp);
}

/* The state files, in order: the last line of an id wins. */
static void read_states(wants_t *w, int nfiles, char **files)
{
	for (int f = 0; f < nfiles; f++) {
		FILE *in = fopen(files[f], "r");
		char line[256];
		if (!in)
			die(files[f]);
		while (fgets(line, sizeof line, in)) {
			want_t x = { 0 };
			char idh[40], wn[40] = "", uh[40] = "", t[20] = "";
			int got = sscanf(line, "%39s %39s %ld %39s %19s", idh, wn, &x.seq, uh, t);
			if (got < 2 || strlen(idh) != 32 || unhex(x.id, idh, 16))
				continue;
			x.present = strcmp(wn, "-") != 0;
			if (x.present && (got < 5 || unhex(x.user, uh, 16)))
				continue;
			snprintf(x.w, sizeof x.w, "%.*s", (int)sizeof x.w - 1, wn);
			snprintf(x.t, sizeof x.t, "%.*s", (int)sizeof x.t - 1, t);
			if (w->n == w->cap) {
				w->cap = w->cap ? w->cap * 2 : 4096;
				w->v = realloc(w->v, w->cap * sizeof *w->v);
			}
			w->v[w->n++] = x;
		}
		fclose(in);
	}
	/* stable sort by id, then keep the last of each */
	for (size_t k = 0; k < w->n; k++)
		w->v[k].copies = (int)k; /* order, for the stable pick */
	qsort(w->v, w->n, sizeof *w->v, want_cmp);
	size_t m = 0;
	for (size_t k = 0; k < w->n; k++) {
		if (m && !memcmp(w->v[m - 1].id, w->v[k].id, 16)) {
			if (w->v[k].copies > w->v[m - 1].copies)
				w->v[m - 1] = w->v[k];
			continue;
		}
		w->v[m++] = w->v[k];
	}
	w->n = m;
	for (size_t k = 0; k < w->n; k++)
		w->v[k].copies = 0;
}

/* Every expected entity's body through the library. */
static long check_bodies(bs_store_t *st, wants_t *w)
{
	long bad = 0;
	for (size_t k = 0; k < w->n; k++) {
		want_t *x = &w->v[k];
		bs_id_t id;
		bs_value_t got;
		char h[33];
		memcpy(id.b, x->id, 16);
		hex(h, x->id, 16);
		int rc = bs_get(&got, st, &id, NULL, NULL);
		if (!x->present) {
			if (rc != BS_ENOTFOUND && bad++ < 10)
				fprintf(stderr, "check: entity %s was deleted but reads back (%d)\n", h, rc);
			bs_value_clear(&got);
			continue;
		}
		const bs_value_t *wv = rc ? NULL : bs_map_get(&got, "w"), *sv = rc ? NULL : bs_map_get(&got, "seq");
		if (rc || !wv || !sv || wv->type != BS_STR || strcmp(wv->v.s.ptr, x->w) || sv->type != BS_INT ||
		    sv->v.i != x->seq) {
			if (bad++ < 10)
				fprintf(stderr, "check: entity %s: wanted %s/%ld, got %s (%s)\n", h, x->w, x->seq,
				        rc ? "an error" : "another body", rc ? bs_last_error() : "");
		}
		bs_value_clear(&got);
	}
	return bad;
}

/* ------------------------------------------------------------ placement, with plain SQL */

static MYSQL *raw_connect(const bs_shard_conf_t *c)
{
	MYSQL *m = mysql_init(NULL);
	if (!mysql_real_connect(m, c->host, c->user, NULL, c->database, c->port, c->socket, 0)) {
		fprintf(stderr, "bench_reshard: connect %s: %s\n", c->name, mysql_error(m));
		exit(1);
	}
	return m;
}

static MYSQL_RES *raw_query(MYSQL *m, const char *q)
{
	if (mysql_query(m, q)) {
		fprintf(stderr, "bench_reshard: %s: %s\n", q, mysql_error(m));
		exit(1);
	}
	return mysql_store_result(m);
}

/* The bucket count, from the newest map row of shard 0. */
static int raw_buckets(MYSQL *m)
{
	MYSQL_RES *r = raw_query(m, "SELECT buckets FROM bagstore_map ORDER BY version DESC LIMIT 1");
	MYSQL_ROW row = mysql_fetch_row(r);
	int b = row && row[0] ? atoi(row[0]) : 0;
	mysql_free_result(r);
	return b;
}

/* Every shard's entity rows against the expected: each present one
 * exactly once, on the shard owning its bucket; nothing else anywhere. */
static long check_placement(const bs_config_t *cfg, wants_t *w)
{
	MYSQL *raw0 = raw_connect(&cfg->shards[0]);
	int nb = raw_buckets(raw0);
	long bad = 0;
	mysql_close(raw0);
	for (int i = 0; i < cfg->nshards; i++) {
		MYSQL *m = raw_connect(&cfg->shards[i]);
		uint8_t *own = calloc((size_t)nb, 1);
		MYSQL_RES *r = raw_query(m, "SELECT bucket FROM bagstore_buckets WHERE state IN ('owned','leaving')");
		MYSQL_ROW row;
		while ((row = mysql_fetch_row(r)))
			if (atoi(row[0]) >= 0 && atoi(row[0]) < nb)
				own[atoi(row[0])] = 1;
		mysql_free_result(r);
		r = raw_query(m, "SELECT id FROM entities");
		while ((row = mysql_fetch_row(r))) {
			bs_id_t id;
			memcpy(id.b, row[0], 16);
			want_t *x = want_find(w, id.b);
			bool owned = own[bs_route_id(&id, nb)];
			char h[33];
			hex(h, id.b, 16);
			if (!x || !x->present) {
				if (bad++ < 10)
					fprintf(stderr, "check: shard %s holds entity %s, which %s\n",
					        cfg->shards[i].name, h, x ? "was deleted" : "nobody wrote");
				continue;
			}
			x->copies++;
			x->placed |= owned;
			if (!owned && bad++ < 10)
				fprintf(stderr, "check: shard %s holds entity %s outside its buckets\n",
				        cfg->shards[i].name, h);
		}
		mysql_free_result(r);
		free(own);
		mysql_close(m);
	}
	for (size_t k = 0; k < w->n; k++)
		if (w->v[k].present && (w->v[k].copies != 1 || !w->v[k].placed)) {
			char h[33];
			hex(h, w->v[k].id, 16);
			if (bad++ < 10)
				fprintf(stderr, "check: entity %s: %d rows, %s\n", h, w->v[k].copies,
				        w->v[k].placed ? "one on its owner" : "none on its owner");
		}
	return bad;
}

/* ------------------------------------------------------------ queries against the oracle */

static int id_cmp(const void *a, const void *b)
{
	return memcmp(a, b, 16);
}

/* One query against what the bodies say. */
static long check_query(bs_store_t *st, wants_t *w, const char *index, const char *prop, const bs_value_t *v,
                        bool is_user, const char *t)
{
	bs_cond_t c;
	bs_result_t r;
	long bad = 0;
	snprintf(c.prop, sizeof c.prop, "%s", prop);
	bs_value_copy(&c.value, v);
	if (bs_query(&r, st, index, &c, 1, 0))
		die("query");
	size_t expect = 0;
	uint8_t(*ids)[16] = calloc(r.len ? r.len : 1, 16);
	for (size_t k = 0; k < r.len; k++)
		memcpy(ids[k], r.items[k].id.b, 16);
	qsort(ids, r.len, 16, id_cmp);
	for (size_t k = 0; k < w->n; k++) {
		const want_t *x = &w->v[k];
		if (!x->present || (is_user ? memcmp(x->user, v->v.s.ptr, 16) : strcmp(x->t, t)))
			continue;
		expect++;
		if (!bsearch(x->id, ids, r.len, 16, id_cmp) && bad++ < 5) {
			char h[33];
			hex(h, x->id, 16);
			fprintf(stderr, "check: query %s: entity %s is missing\n", index, h);
		}
	}
	if (expect != r.len && bad++ < 5)
		fprintf(stderr, "check: query %s returned %zu entities, the bodies say %zu\n", index, r.len, expect);
	free(ids);
	bs_result_free(&r);
	bs_value_clear(&c.value);
	return bad;
}

static long check_queries(bs_store_t *st, wants_t *w)
{
	long bad = 0;
	bs_index_t ix;
	/* a store without the indexes (test_reshard's writers without any):
	 * bodies and placement only */
	if (bs_index_get(&ix, st, "by_user") == BS_ENOTFOUND && bs_index_get(&ix, st, "by_t") == BS_ENOTFOUND) {
		printf("check: no index by_user or by_t: queries not checked\n");
		return 0;
	}
	for (int u = 0; u < NUSERS; u++) {
		bs_id_t id;
		bs_value_t v;
		user_of(&id, u);
		bs_value_bin(&v, id.b, 16);
		bad += check_query(st, w, "by_user", "user", &v, true, NULL);
		bs_value_clear(&v);
	}
	for (int t = 0; t < NTITLES; t++) {
		char s[16];
		bs_value_t v;
		snprintf(s, sizeof s, "t%d", t);
		bs_value_str(&v, s, strlen(s));
		bad += check_query(st, w, "by_t", "t", &v, false, s);
		bs_value_clear(&v);
	}
	return bad;
}

static int cmd_check(int argc, char **argv)
{
	bs_config_t *cfg;
	wants_t w = { 0 };
	if (argc < 4)
		return 2;
	bs_store_t *st = open_store(argv[2], &cfg);
	read_states(&w, argc - 3, argv + 3);
	long present = 0;
	for (size_t k = 0; k < w.n; k++)
		present += w.v[k].present;
	long b1 = check_bodies(st, &w), b2 = check_placement(cfg, &w), b3 = check_queries(st, &w);
	printf("check: %zu entities written, %ld present: %ld wrong bodies, %ld misplaced, %ld wrong queries\n", w.n,
	       present, b1, b2, b3);
	free(w.v);
	bs_store_free(st);
	bs_config_free(cfg);
	return b1 || b2 || b3 ? 1 : 0;
}

/* ------------------------------------------------------------ main */

static int run_bench(int argc, char **argv);

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int rc = !strcmp(mode, "load")     ? cmd_load(argc, argv)
	         : !strcmp(mode, "writer") ? cmd_writer(argc, argv)
	         : !strcmp(mode, "check")  ? cmd_check(argc, argv)
	         : !strcmp(mode, "bench")  ? run_bench(argc, argv)
	                                   : 2;
	if (rc == 2)
		fprintf(stderr,
		        "usage: bench_reshard load CONFIG N SEED STATE | writer CONFIG NAME SEED N STOPFILE STATE |"
		        " check CONFIG STATE... | bench CONFIG2 CONFIG4 N\n");
	return rc;
}

/* ------------------------------------------------------------ the benchmark */

/*
 * bench CONFIG2 CONFIG4 N: a store initialised on CONFIG2's shards, N
 * entities loaded in batches (bs_put_many), CONFIG4's extra shards added
 * (init), then BENCH_WRITERS writers (4; threads of a process of their
 * own, as an application's writers are: see shared_t) putting for
 * BENCH_BASE_S seconds (15) without a move, then the plan that spreads
 * the buckets over the four run by bs_cleaner_reshard while they go on
 * putting. The writers put one after another, or with BENCH_WRITER_RATE
 * each at that many puts a second, a put's latency counted from the
 * time it was due (a put late behind a slow one counts its wait).
 * Afterwards: every entity on the shard owning its bucket, the totals
 * right; the floor (the rows the moves copied, copied again as multi-row
 * INSERTs of 500, each source's at once, into a scratch table); the
 * figures on stdout: put latency without a move and during it (split by
 * whether the put's bucket is one the plan moves, and by whether it began
 * before the last cut-over or in the cleanup after it), and where the
 * machine's CPU went in each window (the servers', from /proc; the
 * writers' threads'; this process's, the cleaner's).
 */

typedef struct {
	int64_t start_us; /* wall clock */
	float ms;
	bool moving;
	bool leaving; /* its bucket is one the plan moves */
} sample_t;

/* What the benchmark's process (the cleaner) and its writers' process
 * share (MAP_SHARED): the writers are another process, as an
 * application's are, so that the cleaner's throttle counts their writes
 * as other writers' (it counts its own process's statements as its own,
 * and a bs_put in a thread of the cleaner's process is one of them). */
typedef struct {
	atomic_int stop, moving;
	/* per bucket: the plan moves it (set before the move starts, read by
	 * the writers after; plan_nb 0 until then) */
	atomic_int plan_nb;
	unsigned char plan_moves[1 << 16];
} shared_t;

static shared_t *shm;

#define SAMPLES_MAX (1 << 20) /* a writer's samples, at most */

typedef struct {
	const char *cfgpath;
	int no, nw; /* this writer's number, of nw */
	uint32_t seed;
	long nload;
	atomic_int *stop, *moving;
	sample_t *s;
	size_t n, cap; /* s is in shared memory, cap samples */
	long errors, created;
	long dropped; /* puts not sampled: cap reached */
	double rate;  /* puts a second (open loop), 0: one after another */
	bool saw_move;
	/* the thread's CPU seconds: when it began putting, when it first saw
	 * the move, when it stopped */
	double cpu_begin, cpu_move, cpu_end;
	pthread_t th;
} bw_t;

static double thread_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The shards' servers on this host (their @@pid_file), 0 when not known. */
static long server_pid[16];
static int nservers;

static void find_servers(const bs_config_t *cfg)
{
	nservers = cfg->nshards < 16 ? cfg->nshards : 16;
	for (int i = 0; i < nservers; i++) {
		MYSQL *m = raw_connect(&cfg->shards[i]);
		server_pid[i] = server_pid_of(m);
		mysql_close(m);
	}
}

static double servers_cpu(void)
{
	return cpu_of_all(server_pid, nservers);
}

/* Where the machine's CPU went over wall seconds: the servers', the
 * writers' threads', this process's (rest: the cleaner's during a move,
 * else the plan's). */
static void cpu_report(const char *what, double wall, double srv, double writers, double other, const char *rest)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	printf("CPU %-18s %5.1f s x %ld cores: servers %5.1f s, writers %5.1f s, %s %5.1f s; %3.0f%% of the"
	       " machine\n",
	       what, wall, cores, srv, writers, rest, other,
	       wall > 0 ? 100.0 * (srv + writers + other) / (wall * (double)cores) : 0);
}

static int64_t wall_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void *bench_writer(void *p)
{
	bw_t *w = p;
	bs_config_t *cfg;
	bs_store_t *st = open_store(w->cfgpath, &cfg);
	unsigned r = 0x9e3779b9u * (unsigned)(w->no + 1);
	w->cpu_begin = w->cpu_move = thread_cpu();
	/* at a rate, each put has its time: its latency counts from then,
	 * so a put late because the last was slow says so (no coordinated
	 * omission); the writers start apart, not in step */
	int64_t due = wall_us() + (w->rate > 0 ? (int64_t)(1e6 / w->rate * w->no / w->nw) : 0);
	for (long seq = 1; !atomic_load(w->stop); seq++) {
		bs_id_t id;
		bs_value_t bag;
		if (w->rate > 0) {
			due += (int64_t)(1e6 / w->rate);
			int64_t ahead = due - wall_us();
			if (ahead > 0)
				usleep((useconds_t)ahead);
			if (atomic_load(w->stop))
				break;
		}
		r = r * 1103515245u + 12345u;
		if (r % 4 == 0)
			derive(&id, 0x5eed0000u + (uint32_t)w->no, (uint32_t)w->created++);
		else
			derive(&id, w->seed, (uint32_t)((r >> 3) % (unsigned)w->nload));
		make_bag(&bag, &id, (int)(r % NUSERS), (int)(r / 7 % NTITLES), (int)seq, "bench", seq);
		bool moving = atomic_load(w->moving) != 0;
		if (moving && !w->saw_move) {
			w->saw_move = true;
			w->cpu_move = thread_cpu();
		}
		int64_t t0 = wall_us();
		if (w->rate > 0)
			t0 = due;
		if (bs_put(st, &bag, NULL)) {
			if (w->errors++ < 5)
				fprintf(stderr, "bench_reshard: writer %d: %s\n", w->no, bs_last_error());
		}
		bs_value_clear(&bag);
		int nb = atomic_load(&shm->plan_nb);
		if (w->n == w->cap) {
			w->dropped++;
			continue;
		}
		w->s[w->n++] = (sample_t){ t0, (float)((double)(wall_us() - t0) / 1000.0), moving,
			                   nb > 0 && shm->plan_moves[bs_route_id(&id, nb)] };
	}
	w->cpu_end = thread_cpu();
	if (!w->saw_move) /* all of it before the move */
		w->cpu_move = w->cpu_end;
	bs_store_free(st);
	bs_config_free(cfg);
	return NULL;
}

/* N entities in batches of 1000 through bs_put_many. */
static double bench_load(bs_store_t *st, long n, uint32_t seed)
{
	enum { BATCH = 1000 };
	static bs_value_t bags[BATCH];
	static bs_id_t ids[BATCH];
	double t0 = now();
	for (long k = 0; k < n; k += BATCH) {
		size_t m = (size_t)(n - k < BATCH ? n - k : BATCH);
		for (size_t j = 0; j < m; j++) {
			bs_id_t id;
			derive(&id, seed, (uint32_t)(k + (long)j));
			make_bag(&bags[j], &id, (int)((k + (long)j) % NUSERS), (int)((k + (long)j) % NTITLES),
			         (int)(k + (long)j), "load", 0);
		}
		if (bs_put_many(st, bags, m, ids, NULL))
			die("load: bs_put_many");
		for (size_t j = 0; j < m; j++)
			bs_value_clear(&bags[j]);
		if ((k / BATCH) % 100 == 99)
			fprintf(stderr, "bench_reshard: loaded %ld\n", k + (long)m);
	}
	return now() - t0;
}

static int fcmp(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

/* The wall clock (us) when the last bucket was cut over: puts begun
 * before it are the copy's and catch-up's, after it the cleanup's. */
static int64_t cut_wall_us;

/* Whether sample x is one of those asked for: taken while moving (or
 * not), into a bucket the plan moves (leaving 1) or not (0) or either
 * (-1), and begun before the last cut-over (phase 1), after it (2) or
 * either (0). */
static bool sample_is(const sample_t *x, bool moving, int leaving, int phase)
{
	return x->moving == moving && (leaving < 0 || x->leaving == (leaving != 0)) &&
	       (!phase || (x->start_us < cut_wall_us) == (phase == 1));
}

/* p50, p99 and max of the samples asked for (sample_is); the p99. */
static double lat_report(bw_t *w, int nw, bool moving, int leaving, int phase, const char *what)
{
	size_t n = 0, k = 0;
	for (int i = 0; i < nw; i++)
		for (size_t j = 0; j < w[i].n; j++)
			n += sample_is(&w[i].s[j], moving, leaving, phase);
	float *v = malloc((n ? n : 1) * sizeof *v);
	for (int i = 0; i < nw; i++)
		for (size_t j = 0; j < w[i].n; j++)
			if (sample_is(&w[i].s[j], moving, leaving, phase))
				v[k++] = w[i].s[j].ms;
	if (n)
		qsort(v, n, sizeof *v, fcmp);
	double p99 = n ? v[(size_t)((double)(n - 1) * 0.99)] : 0.0;
	printf("puts %-30s %8zu puts, p50 %6.2f ms, p99 %7.2f ms, max %8.1f ms\n", what, n, n ? v[n / 2] : 0.0, p99,
	       n ? v[n - 1] : 0.0);
	free(v);
	return p99;
}

/* The longest put that was under way within 2 s of a move's flip. */
static double cutover_wait(bw_t *w, int nw, const bs_move_list_t *l)
{
	double worst = 0;
	for (int i = 0; i < nw; i++)
		for (size_t j = 0; j < w[i].n; j++) {
			const sample_t *s = &w[i].s[j];
			int64_t end = s->start_us + (int64_t)(s->ms * 1000);
			for (int k = 0; k < l->len; k++) {
				int64_t f = l->items[k].flip_us;
				if (f && end >= f - 2000000 && s->start_us <= f + 2000000 && s->ms > worst)
					worst = s->ms;
			}
		}
	return worst;
}

/* A growing string for the floor's statements. */
typedef struct {
	char *p;
	size_t len, cap;
} sbuf_t;

static void sb_add(sbuf_t *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		if (!(b->p = realloc(b->p, b->cap)))
			die("out of memory");
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_hex(sbuf_t *b, const char *s, size_t n)
{
	static const char d[] = "0123456789abcdef";
	sb_add(b, "0x", 2);
	if (b->len + 2 * n + 1 > b->cap) {
		b->cap = (b->len + 2 * n + 1) * 2;
		if (!(b->p = realloc(b->p, b->cap)))
			die("out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		b->p[b->len++] = d[(unsigned char)s[i] >> 4];
		b->p[b->len++] = d[(unsigned char)s[i] & 15];
	}
	b->p[b->len] = '\0';
}

typedef struct {
	const bs_config_t *cfg;
	const bs_reshard_plan_t *plan;
	int source;
	long rows;
	pthread_t th;
} floor_t;

static void floor_flush(MYSQL *m, sbuf_t *b, int *n)
{
	if (*n && mysql_real_query(m, b->p, b->len)) {
		fprintf(stderr, "bench_reshard: floor insert: %s\n", mysql_error(m));
		exit(1);
	}
	b->len = 0;
	*n = 0;
}

/* One move's rows, now on its target, copied to bench_floor on its source. */
static long floor_move(MYSQL *src, MYSQL *dst, const bs_plan_move_t *mv, int nbuckets)
{
	uint8_t *in = calloc((size_t)nbuckets, 1);
	sbuf_t b = { 0 };
	long long cursor = 0;
	long rows = 0;
	int n = 0;
	for (int k = 0; k < mv->nbuckets; k++)
		in[mv->buckets[k]] = 1;
	for (;;) {
		char q[200];
		snprintf(q, sizeof q,
		         "SELECT added_id, id, UNIX_TIMESTAMP(updated), body FROM entities"
		         " WHERE added_id>%lld ORDER BY added_id LIMIT 5000",
		         cursor);
		MYSQL_RES *res = raw_query(dst, q);
		MYSQL_ROW row;
		long got = 0;
		while ((row = mysql_fetch_row(res))) {
			unsigned long *len = mysql_fetch_lengths(res);
			bs_id_t id;
			got++;
			cursor = atoll(row[0]);
			memcpy(id.b, row[1], 16);
			if (!in[bs_route_id(&id, nbuckets)])
				continue;
			sb_add(&b, n ? ",(" : "INSERT INTO bench_floor (id, updated, body) VALUES (", n ? 2 : 52);
			sb_hex(&b, row[1], 16);
			sb_add(&b, ",FROM_UNIXTIME(", 15);
			sb_add(&b, row[2], strlen(row[2]));
			sb_add(&b, "),", 2);
			sb_hex(&b, row[3], len[3]);
			sb_add(&b, ")", 1);
			rows++;
			if (++n == 500)
				floor_flush(src, &b, &n);
		}
		mysql_free_result(res);
		if (!got)
			break;
	}
	floor_flush(src, &b, &n);
	free(b.p);
	free(in);
	return rows;
}

static void *floor_thread(void *p)
{
	floor_t *f = p;
	MYSQL *src = raw_connect(&f->cfg->shards[f->source]);
	for (int k = 0; k < f->plan->len; k++) {
		const bs_plan_move_t *mv = &f->plan->moves[k];
		if (mv->source_shard != f->source)
			continue;
		MYSQL *dst = raw_connect(&f->cfg->shards[mv->target_shard]);
		f->rows += floor_move(src, dst, mv, f->plan->buckets);
		mysql_close(dst);
	}
	mysql_close(src);
	return NULL;
}

/* The floor: each source's moved rows copied again, the sources at once. */
static double bench_floor(const bs_config_t *cfg, const bs_reshard_plan_t *plan, long *rows)
{
	floor_t *f = calloc((size_t)cfg->nshards, sizeof *f);
	for (int i = 0; i < cfg->nshards; i++) {
		MYSQL *m = raw_connect(&cfg->shards[i]);
		mysql_free_result(raw_query(m, "DROP TABLE IF EXISTS bench_floor"));
		mysql_free_result(raw_query(m, "CREATE TABLE bench_floor LIKE entities"));
		mysql_close(m);
	}
	double t0 = now();
	for (int i = 0; i < cfg->nshards; i++) {
		f[i] = (floor_t){ cfg, plan, i, 0, 0 };
		if (pthread_create(&f[i].th, NULL, floor_thread, &f[i]))
			die("pthread_create");
	}
	*rows = 0;
	for (int i = 0; i < cfg->nshards; i++) {
		pthread_join(f[i].th, NULL);
		*rows += f[i].rows;
	}
	double s = now() - t0;
	for (int i = 0; i < cfg->nshards; i++) {
		MYSQL *m = raw_connect(&cfg->shards[i]);
		mysql_free_result(raw_query(m, "DROP TABLE bench_floor"));
		mysql_close(m);
	}
	free(f);
	return s;
}

/* Rows on a shard outside the buckets it owns, and its row count. */
static long misplaced(const bs_shard_conf_t *c, int nb, long *count)
{
	MYSQL *m = raw_connect(c);
	uint8_t *own = calloc((size_t)nb, 1);
	MYSQL_RES *r = raw_query(m, "SELECT bucket FROM bagstore_buckets WHERE state='owned'");
	MYSQL_ROW row;
	long bad = 0;
	while ((row = mysql_fetch_row(r)))
		if (atoi(row[0]) >= 0 && atoi(row[0]) < nb)
			own[atoi(row[0])] = 1;
	mysql_free_result(r);
	*count = 0;
	r = raw_query(m, "SELECT id FROM entities");
	while ((row = mysql_fetch_row(r))) {
		bs_id_t id;
		memcpy(id.b, row[0], 16);
		(*count)++;
		bad += !own[bs_route_id(&id, nb)];
	}
	mysql_free_result(r);
	free(own);
	mysql_close(m);
	return bad;
}

/* Each move's phases as the cleaner reported them (monotonic seconds). */
typedef struct {
	pthread_mutex_t mu;
	struct {
		int64_t id;
		double at[BS_MOVE_UNDO + 1];
	} m[32];
	int n;
} track_t;

static void on_move(void *ctx, const bs_move_t *mv)
{
	track_t *t = ctx;
	int k;
	pthread_mutex_lock(&t->mu);
	for (k = 0; k < t->n && t->m[k].id != mv->id; k++)
		;
	if (k == t->n && t->n < 32)
		t->m[t->n++].id = mv->id;
	if (k < 32 && mv->phase <= BS_MOVE_UNDO && !t->m[k].at[mv->phase])
		t->m[k].at[mv->phase] = now();
	pthread_mutex_unlock(&t->mu);
}

static void report_moves(const bs_move_list_t *l, track_t *t, double t0)
{
	double fence = 0;
	int tries = 0;
	for (int k = 0; k < l->len; k++) {
		const bs_move_t *mv = &l->items[k];
		int x;
		for (x = 0; x < t->n && t->m[x].id != mv->id; x++)
			;
		printf("move %lld %s -> %s: %d buckets, %lld rows copied, %lld index rows, %lld log entries replayed, "
		       "%s;"
		       " fence %.0f ms",
		       (long long)mv->id, mv->source, mv->target, mv->nbuckets, (long long)mv->rows_copied,
		       (long long)mv->index_rows, (long long)mv->log_rows, bs_job_state_name(mv->state), mv->fence_ms);
		if (x < t->n)
			for (int p = BS_MOVE_COPY; p <= BS_MOVE_DONE; p++)
				if (t->m[x].at[p])
					printf(", %s at %.1fs", bs_move_phase_name((bs_move_phase_t)p),
					       t->m[x].at[p] - t0);
		printf("\n");
		fence = mv->fence_ms > fence ? mv->fence_ms : fence;
		tries += mv->fence_tries;
	}
	printf("longest cut-over fence held: %.0f ms (%d fences rolled back over max_fence)\n", fence, tries);
}

/* Every entity once, on its bucket's owner: the misplaced rows; *total the rows. */
static long bench_check(const bs_config_t *cfg, long *total)
{
	MYSQL *m = raw_connect(&cfg->shards[0]);
	int nb = raw_buckets(m);
	long bad = 0;
	mysql_close(m);
	*total = 0;
	for (int i = 0; i < cfg->nshards; i++) {
		long c;
		bad += misplaced(&cfg->shards[i], nb, &c);
		printf("shard %s: %ld entities\n", cfg->shards[i].name, c);
		*total += c;
	}
	return bad;
}

static int run_bench(int argc, char **argv)
{
	if (argc < 5)
		return 2;
	long n = atol(argv[4]), errors = 0, created = 0, total, floor_rows;
	int nw = getenv("BENCH_WRITERS") ? atoi(getenv("BENCH_WRITERS")) : 4;
	double rate = getenv("BENCH_WRITER_RATE") ? atof(getenv("BENCH_WRITER_RATE")) : 0;
	double base_s = getenv("BENCH_BASE_S") ? atof(getenv("BENCH_BASE_S")) : 15;
	bs_config_t *c2, *c4;
	bs_store_t *s2 = open_store(argv[2], &c2);
	if (bs_init(s2))
		die("init on 2 shards");
	double load_s = bench_load(s2, n, 42);
	bs_store_free(s2);
	bs_config_free(c2);
	bs_store_t *s4 = open_store(argv[3], &c4);
	if (bs_init(s4))
		die("init on 4 shards");
	char pace[64] = "";
	if (nw && rate > 0)
		snprintf(pace, sizeof pace, " at %.0f puts/s each (open loop)", rate);
	printf("bench_reshard: %ld entities loaded on 2 shards in %.1f s (bs_put_many, 1000 a batch); %d writers%s\n",
	       n, load_s, nw, pace);
	find_servers(c4);
	/* the writers: a process of their own (see shared_t), their samples
	 * and counts in memory shared with this one */
	if (nw < 0 || nw > 64)
		die("BENCH_WRITERS: 0 to 64");
	shm = mmap(NULL, sizeof *shm, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	bw_t *w = nw ? mmap(NULL, (size_t)nw * sizeof *w, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)
	             : NULL;
	sample_t *samples = nw ? mmap(NULL, (size_t)nw * SAMPLES_MAX * sizeof *samples, PROT_READ | PROT_WRITE,
	                              MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
	                       : NULL;
	if (shm == MAP_FAILED || w == MAP_FAILED || samples == MAP_FAILED)
		die("mmap");
	for (int i = 0; i < nw; i++)
		w[i] = (bw_t){ .cfgpath = argv[3],
			       .no = i,
			       .nw = nw,
			       .seed = 42,
			       .nload = n,
			       .stop = &shm->stop,
			       .moving = &shm->moving,
			       .s = samples + (size_t)i * SAMPLES_MAX,
			       .cap = SAMPLES_MAX,
			       .rate = rate };
	double c_srv0 = servers_cpu(), c_me0 = cpu_of((long)getpid()), t_base = now();
	fflush(stdout);
	fflush(stderr);
	pid_t me = getpid(), wpid = nw ? fork() : 0;
	if (wpid < 0)
		die("fork");
	if (nw && wpid == 0) { /* the writers' process: until told to stop, or this one is gone */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != me) /* gone before the line above */
			_exit(1);
		for (int i = 0; i < nw; i++)
			if (pthread_create(&w[i].th, NULL, bench_writer, &w[i]))
				_exit(1);
		for (int i = 0; i < nw; i++)
			pthread_join(w[i].th, NULL);
		_exit(0);
	}
	usleep((useconds_t)(base_s * 1e6));
	bs_reshard_plan_t plan = { 0 };
	if (bs_reshard_plan(&plan, s4))
		die("plan");
	track_t tr = { .mu = PTHREAD_MUTEX_INITIALIZER };
	bs_cleaner_opts_t o = { .move_progress = on_move, .ctx = &tr };
	if (plan.buckets > 0 && plan.buckets <= (int)sizeof shm->plan_moves) {
		for (int k = 0; k < plan.len; k++)
			for (int j = 0; j < plan.moves[k].nbuckets; j++)
				if (plan.moves[k].buckets[j] >= 0 && plan.moves[k].buckets[j] < plan.buckets)
					shm->plan_moves[plan.moves[k].buckets[j]] = 1;
		atomic_store(&shm->plan_nb, plan.buckets);
	}
	atomic_store(&shm->moving, 1);
	double t0 = now();
	int64_t wall0 = wall_us(); /* t0 on the samples' clock */
	double c_srv1 = servers_cpu(), c_me1 = cpu_of((long)getpid());
	if (bs_reshard_start(s4, &plan) || bs_cleaner_reshard(s4, &o))
		die("reshard");
	double move_s = now() - t0;
	double c_me2 = cpu_of((long)getpid());
	atomic_store(&shm->stop, 1);
	int wstatus = 0;
	if (nw && (waitpid(wpid, &wstatus, 0) != wpid || !WIFEXITED(wstatus) || WEXITSTATUS(wstatus))) {
		fprintf(stderr, "bench_reshard: the writers' process ended %s %d (its stderr above says why)\n",
		        WIFSIGNALED(wstatus) ? "by signal" : "with status",
		        WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : WEXITSTATUS(wstatus));
		exit(1);
	}
	double wr_base = 0, wr_move = 0;
	long dropped = 0;
	for (int i = 0; i < nw; i++) {
		dropped += w[i].dropped;
		errors += w[i].errors;
		created += w[i].created;
		wr_base += w[i].cpu_move - w[i].cpu_begin;
		wr_move += w[i].cpu_end - w[i].cpu_move;
	}
	double c_srv2 = servers_cpu();
	if (dropped)
		printf("bench_reshard: %ld puts not in the latency figures (%d samples a writer at most)\n", dropped,
		       SAMPLES_MAX);
	bs_move_list_t l = { 0 };
	if (bs_move_list(&l, s4, NULL))
		die("move list");
	long moved = 0;
	for (int k = 0; k < l.len; k++)
		moved += (long)l.items[k].rows_copied;
	long bad = bench_check(c4, &total);
	double floor_s = bench_floor(c4, &plan, &floor_rows);
	printf("plan: %d moves from bucket map version %lld (%d buckets)\n", plan.len, (long long)plan.map_version,
	       plan.buckets);
	report_moves(&l, &tr, t0);
	double cut_s = 0;
	for (int k = 0; k < tr.n; k++)
		if (tr.m[k].at[BS_MOVE_CLEANUP] - t0 > cut_s)
			cut_s = tr.m[k].at[BS_MOVE_CLEANUP] - t0;
	printf("resharding 2 -> 4: %.1f s, %ld rows copied (%.0f rows/s); every bucket on its new shard after %.1f s,"
	       " the rest the sources' copies deleted\n",
	       move_s, moved, moved / move_s, cut_s);
	printf("floor (the moved rows copied again as multi-row INSERTs of 500, the sources at once): %.1f s, %ld rows"
	       " (%.0f rows/s); resharding took %.1fx the floor (target <= 3x), %.1fx to the last cut-over\n",
	       floor_s, floor_rows, floor_rows / floor_s, move_s / floor_s, cut_s / floor_s);
	if (nw > 0) {
		cut_wall_us = wall0 + (int64_t)(cut_s * 1e6);
		double base = lat_report(w, nw, false, -1, 0, "without a move:");
		double during = lat_report(w, nw, true, -1, 0, "during the move:");
		lat_report(w, nw, true, 1, 0, "  into moving buckets:");
		lat_report(w, nw, true, 0, 0, "  into the others:");
		lat_report(w, nw, true, -1, 1, "  copy to the last cut-over:");
		lat_report(w, nw, true, -1, 2, "  after it (the cleanup):");
		printf("writers' p99 during the move / without one: %.1fx (target <= 2x)\n",
		       base > 0 ? during / base : 0);
		cpu_report("without a move:", t0 - t_base, c_srv1 - c_srv0, wr_base, c_me1 - c_me0, "the rest");
	}
	cpu_report("during the move:", move_s, c_srv2 - c_srv1, wr_move, c_me2 - c_me1, "cleaner");
	if (nw > 0)
		printf("longest put under way within 2 s of a cut-over: %.1f ms (target under 1000 ms)\n",
		       cutover_wait(w, nw, &l));
	printf("failed writes: %ld (target 0)\n", errors);
	printf("check: %ld entities on the shards, %ld expected (%ld loaded + %ld created by writers); %ld on a shard"
	       " not owning their bucket\n",
	       total, n + created, n, created, bad);
	if (nw) {
		munmap(samples, (size_t)nw * SAMPLES_MAX * sizeof *samples);
		munmap(w, (size_t)nw * sizeof *w);
	}
	munmap(shm, sizeof *shm);
	bs_move_list_free(&l);
	bs_reshard_plan_free(&plan);
	bs_store_free(s4);
	bs_config_free(c4);
	return bad || total != n + created || errors ? 1 : 0;
}

/*
 * bench_backfill.c - the cleaner's figures beside their references, on the
 * same servers and values in one run:
 *
 *  1. backfill time of one index over N entities (default 1,000,000), beside
 *     the floor (the same index rows, precomputed, sent as multi-row INSERTs
 *     into empty tables), MariaDB's ALTER TABLE ... ADD INDEX on a relational
 *     table holding the value in a real column, and pt-online-schema-change
 *     adding that index;
 *  2. put latency p50/p99 without and with a backfill running;
 *  3. repair lag under a steady write load with faults injected (an entity
 *     written without its index rows, as a writer killed between the two
 *     leaves it): p50/p99 from the fault to the repaired row, with the
 *     cleaner daemon running.
 *
 * Usage: bench_backfill CONFIG [N]   (shards empty; tests/bench/backfill.sh
 * starts throwaway ones). Entities are loaded with multi-row INSERTs of
 * bodies built with bs_body_encode.
 */
#include "bagstore.h"

#include <mysql.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>

static bs_config_t *cfg;
static int nshards;
static long nent;
static bs_id_t *ids, *users;

/* BENCH_PARTS: a comma list of floor,backfill,alter,ptosc,latency,lag (default all) */
static int part(const char *name)
{
	const char *p = getenv("BENCH_PARTS");
	return !p || !*p || strstr(p, name) != NULL;
}

static double cpu_self(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *msg)
{
	fprintf(stderr, "bench_backfill: %s: %s\n", what, msg);
	exit(1);
}

static MYSQL *raw_connect(int i)
{
	const bs_shard_conf_t *c = &cfg->shards[i];
	MYSQL *m = mysql_init(NULL);
	if (!mysql_real_connect(m, c->host, c->user, NULL, c->database, c->port, c->socket, CLIENT_MULTI_STATEMENTS))
		die("connect", mysql_error(m));
	return m;
}

static void raw_exec(MYSQL *m, const char *q, size_t len)
{
	if (mysql_real_query(m, q, len))
		die("query", mysql_error(m));
	do {
		MYSQL_RES *r = mysql_store_result(m);
		if (r)
			mysql_free_result(r);
	} while (mysql_next_result(m) == 0);
	if (mysql_errno(m))
		die("query", mysql_error(m));
}

static long long raw_int(MYSQL *m, const char *q)
{
	if (mysql_query(m, q))
		die("query", mysql_error(m));
	MYSQL_RES *r = mysql_store_result(m);
	MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
	long long v = row && row[0] ? atoll(row[0]) : -1;
	if (r)
		mysql_free_result(r);
	return v;
}

/* a growable string */
typedef struct {
	char *p;
	size_t len, cap;
} str_t;

static void sput(str_t *s, const char *t, size_t n)
{
	if (s->len + n + 1 > s->cap) {
		s->cap = (s->len + n + 1) * 2;
		if (!(s->p = realloc(s->p, s->cap)))
			die("memory", "out of memory");
	}
	memcpy(s->p + s->len, t, n);
	s->len += n;
	s->p[s->len] = '\0';
}
static void sputs(str_t *s, const char *t) { sput(s, t, strlen(t)); }
static void shex(str_t *s, const void *p, size_t n)
{
	static const char hx[] = "0123456789abcdef";
	char buf[2];
	const unsigned char *b = p;
	sputs(s, "X'");
	for (size_t i = 0; i < n; i++) {
		buf[0] = hx[b[i] >> 4];
		buf[1] = hx[b[i] & 15];
		sput(s, buf, 2);
	}
	sputs(s, "'");
}

static void make_bag(bs_value_t *bag, long k, const bs_id_t *id, const bs_id_t *user)
{
	bs_value_t v;
	char title[64];
	bs_value_map(bag);
	bs_value_bin(&v, id->b, 16);
	bs_map_set(bag, "id", 2, &v);
	bs_value_bin(&v, user->b, 16);
	bs_map_set(bag, "user_id", 7, &v);
	bs_value_int(&v, k);
	bs_map_set(bag, "n", 1, &v);
	int len = snprintf(title, sizeof title, "entity number %ld of the benchmark", k);
	bs_value_str(&v, title, (size_t)len);
	bs_map_set(bag, "title", 5, &v);
}

/* ------------------------------------------------------------ loading */

typedef struct {
	int shard;
	pthread_t tid;
} load_t;

static void *load_thread(void *p)
{
	load_t *l = p;
	MYSQL *m = raw_connect(l->shard);
	str_t ent = {0}, rel = {0};
	int inrow = 0;
	mysql_thread_init();
	for (long k = 0; k <= nent; k++) {
		if (k < nent && bs_route_id(&ids[k], nshards) != l->shard)
			continue;
		if (inrow && (inrow == 2000 || k == nent)) {
			raw_exec(m, ent.p, ent.len);
			raw_exec(m, rel.p, rel.len);
			ent.len = rel.len = 0;
			inrow = 0;
		}
		if (k == nent)
			break;
		bs_value_t bag;
		bs_bytes_t body = {0};
		make_bag(&bag, k, &ids[k], &users[k]);
		if (bs_body_encode(&body, &bag))
			die("encode", bs_last_error());
		sputs(&ent, inrow ? ",(" : "INSERT INTO entities (id, updated, body) VALUES (");
		shex(&ent, ids[k].b, 16);
		sputs(&ent, ",NOW(6),");
		shex(&ent, body.ptr, body.len);
		sputs(&ent, ")");
		char num[128];
		sputs(&rel, inrow ? ",(" : "INSERT INTO rel (id, user_id, n, title) VALUES (");
		shex(&rel, ids[k].b, 16);
		sputs(&rel, ",");
		shex(&rel, users[k].b, 16);
		snprintf(num, sizeof num, ",%ld,'entity number %ld of the benchmark')", k, k);
		sputs(&rel, num);
		inrow++;
		bs_bytes_free(&body);
		bs_value_clear(&bag);
	}
	free(ent.p);
	free(rel.p);
	mysql_close(m);
	mysql_thread_end();
	return NULL;
}

/* ------------------------------------------------------------ the floor */

typedef struct {
	int target;
	str_t sql; /* statements, NUL-separated lengths kept in lens */
	size_t *lens;
	int nstmt;
	pthread_t tid;
} floor_t;

static void *floor_thread(void *p)
{
	floor_t *f = p;
	mysql_thread_init();
	MYSQL *m = raw_connect(f->target);
	size_t off = 0;
	for (int k = 0; k < f->nstmt; k++) {
		raw_exec(m, f->sql.p + off, f->lens[k]);
		off += f->lens[k];
	}
	mysql_close(m);
	mysql_thread_end();
	return NULL;
}

/* the rows of one source shard for one target, 5000 per INSERT */
static void floor_build(floor_t *f, int source, int target)
{
	bs_prop_t prop = { "user_id", BS_COL_UUID, 0 };
	int inrow = 0;
	size_t start = 0;
	f->target = target;
	f->lens = calloc((size_t)(nent / 5000 + 2), sizeof *f->lens);
	for (long k = 0; k <= nent; k++) {
		if (k < nent) {
			if (bs_route_id(&ids[k], nshards) != source)
				continue;
			bs_value_t v;
			bs_value_bin(&v, users[k].b, 16);
			int t = bs_route_value(&v, &prop, nshards);
			bs_value_clear(&v);
			if (t != target)
				continue;
		}
		if (inrow && (inrow == 5000 || k == nent)) {
			f->lens[f->nstmt++] = f->sql.len - start;
			start = f->sql.len;
			inrow = 0;
		}
		if (k == nent)
			break;
		sputs(&f->sql, inrow ? ",(" : "INSERT INTO floor_user (user_id, entity_id) VALUES (");
		shex(&f->sql, users[k].b, 16);
		sputs(&f->sql, ",");
		shex(&f->sql, ids[k].b, 16);
		sputs(&f->sql, ")");
		inrow++;
	}
}

/* ------------------------------------------------------------ ALTER */

typedef struct {
	int shard;
	const char *sql;
	pthread_t tid;
} alter_t;

static void *alter_thread(void *p)
{
	alter_t *a = p;
	mysql_thread_init();
	MYSQL *m = raw_connect(a->shard);
	raw_exec(m, a->sql, strlen(a->sql));
	mysql_close(m);
	mysql_thread_end();
	return NULL;
}

static double alter_everywhere(const char *sql)
{
	alter_t a[16];
	double t0 = now();
	for (int i = 0; i < nshards; i++) {
		a[i].shard = i;
		a[i].sql = sql;
		pthread_create(&a[i].tid, NULL, alter_thread, &a[i]);
	}
	for (int i = 0; i < nshards; i++)
		pthread_join(a[i].tid, NULL);
	return now() - t0;
}

/* ------------------------------------------------------------ latency */

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	int i = (int)(p * (double)n);
	return v[i >= n ? n - 1 : i];
}

static volatile int backfill_done;

typedef struct {
	bs_config_t *cfg;
	const char *index;
	int rc;
	char msg[1024];
	double secs;
} bf_arg_t;

static void *backfill_thread(void *p)
{
	bf_arg_t *a = p;
	bs_store_t *st;
	mysql_thread_init();
	double t0 = now();
	if ((a->rc = bs_store_open(&st, a->cfg)) == 0) {
		a->rc = bs_cleaner_backfill(st, a->index, NULL);
		if (a->rc)
			snprintf(a->msg, sizeof a->msg, "%s", bs_last_error());
		bs_store_free(st);
	}
	a->secs = now() - t0;
	backfill_done = 1;
	mysql_thread_end();
	return NULL;
}

/* n puts of new entities, one at a time; latencies into lat (seconds) */
static int puts_timed(bs_store_t *st, double *lat, int n, long base, volatile int *until)
{
	int k;
	for (k = 0; k < n && !(until && *until); k++) {
		bs_id_t id, user;
		bs_value_t bag;
		bs_id_generate(&id);
		bs_id_generate(&user);
		make_bag(&bag, base + k, &id, &user);
		double t0 = now();
		if (bs_put(st, &bag, NULL))
			die("put", bs_last_error());
		lat[k] = now() - t0;
		bs_value_clear(&bag);
	}
	return k;
}

/* ------------------------------------------------------------ repair lag */

static atomic_int stop_daemon;

static void *daemon_thread(void *p)
{
	bs_config_t *c = p;
	bs_store_t *st;
	mysql_thread_init();
	if (bs_store_open(&st, c))
		die("open", bs_last_error());
	bs_cleaner_opts_t o = { .stop = &stop_daemon };
	if (bs_cleaner_run(st, &o))
		fprintf(stderr, "bench_backfill: cleaner: %s\n", bs_last_error());
	bs_store_free(st);
	mysql_thread_end();
	return NULL;
}

static volatile int stop_load;

static void *load_puts_thread(void *p)
{
	bs_config_t *c = p;
	bs_store_t *st;
	mysql_thread_init();
	if (bs_store_open(&st, c))
		die("open", bs_last_error());
	long k = 0;
	while (!stop_load) {
		bs_id_t id, user;
		bs_value_t bag;
		bs_id_generate(&id);
		bs_id_generate(&user);
		make_bag(&bag, 5000000 + k++, &id, &user);
		if (bs_put(st, &bag, NULL))
			die("put", bs_last_error());
		bs_value_clear(&bag);
		usleep(5000); /* ~150-200 puts/s */
	}
	bs_store_free(st);
	mysql_thread_end();
	return NULL;
}

int main(int argc, char **argv)
{
	bs_store_t *st;
	if (argc < 2) {
		fprintf(stderr, "usage: bench_backfill CONFIG [N]\n");
		return 2;
	}
	nent = argc > 2 ? atol(argv[2]) : 1000000;
	if (bs_config_load(&cfg, argv[1]))
		die("config", bs_last_error());
	nshards = cfg->nshards;
	if (bs_store_open(&st, cfg) || bs_init(st))
		die("init", bs_last_error());
	ids = calloc((size_t)nent, sizeof *ids);
	users = calloc((size_t)nent, sizeof *users);
	for (long k = 0; k < nent; k++) {
		bs_id_generate(&ids[k]);
		bs_id_generate(&users[k]);
	}

	/* ---------------------------------------------------- load */
	MYSQL *raw[16];
	for (int i = 0; i < nshards; i++) {
		raw[i] = raw_connect(i);
		const char *ddl = "DROP TABLE IF EXISTS rel; CREATE TABLE rel (id BINARY(16) NOT NULL PRIMARY KEY,"
		                  " user_id BINARY(16) NOT NULL, n BIGINT NOT NULL, title VARCHAR(255) NOT NULL) ENGINE=InnoDB";
		raw_exec(raw[i], ddl, strlen(ddl));
	}
	double t0 = now();
	load_t lt[16];
	for (int i = 0; i < nshards; i++) {
		lt[i].shard = i;
		pthread_create(&lt[i].tid, NULL, load_thread, &lt[i]);
	}
	for (int i = 0; i < nshards; i++)
		pthread_join(lt[i].tid, NULL);
	printf("loaded %ld entities (and the relational copy) on %d shards in %.1f s\n", nent, nshards, now() - t0);

	/* ---------------------------------------------------- the floor */
	bs_index_t def;
	char *ddl = NULL;
	if (bs_index_parse(&def, "floor_user", "user_id:uuid", "user_id") || bs_index_ddl(&ddl, &def))
		die("index", bs_last_error());
	for (int i = 0; i < nshards; i++) {
		raw_exec(raw[i], "DROP TABLE IF EXISTS floor_user", 31);
		raw_exec(raw[i], ddl, strlen(ddl));
	}
	free(ddl);
	double t_floor = -1, t_backfill = -1, t_alter = -1, t_ptosc = -1;
	if (part("floor")) {
	int nf = nshards * nshards;
	floor_t *fl = calloc((size_t)nf, sizeof *fl);
	for (int s = 0; s < nshards; s++)
		for (int t = 0; t < nshards; t++)
			floor_build(&fl[s * nshards + t], s, t);
	t0 = now();
	for (int k = 0; k < nf; k++)
		pthread_create(&fl[k].tid, NULL, floor_thread, &fl[k]);
	for (int k = 0; k < nf; k++)
		pthread_join(fl[k].tid, NULL);
	t_floor = now() - t0;
	for (int k = 0; k < nf; k++) {
		free(fl[k].sql.p);
		free(fl[k].lens);
	}
	free(fl);
	for (int i = 0; i < nshards; i++)
		raw_exec(raw[i], "DROP TABLE floor_user", 21);
	}

	/* ---------------------------------------------------- the backfill */
	if (bs_index_parse(&def, "by_user", "user_id:uuid", "user_id") || bs_index_create(st, &def))
		die("index create", bs_last_error());
	if (!part("backfill"))
		goto latency;
	t0 = now();
	double c0 = cpu_self();
	if (bs_cleaner_backfill(st, "by_user", NULL))
		die("backfill", bs_last_error());
	t_backfill = now() - t0;
	double cpu_backfill = cpu_self() - c0;
	bs_job_list_t jobs;
	int64_t written = 0;
	if (!bs_job_list(&jobs, st, NULL)) {
		for (int k = 0; k < jobs.len; k++)
			written += jobs.items[k].rows_written;
		bs_job_list_free(&jobs);
	}
	long long rows = 0;
	for (int i = 0; i < nshards; i++)
		rows += raw_int(raw[i], "SELECT COUNT(*) FROM by_user");
	if (rows != nent)
		die("backfill", "the index does not hold one row per entity");

	/* ---------------------------------------------------- ALTER TABLE */
	if (part("alter")) {
		t_alter = alter_everywhere("ALTER TABLE rel ADD INDEX k_user (user_id)");
		alter_everywhere("ALTER TABLE rel DROP INDEX k_user");
	}

	/* ---------------------------------------------------- pt-online-schema-change */
	if (part("ptosc")) {
		str_t cmd = {0};
		char part[512];
		sputs(&cmd, "set -e; ");
		for (int i = 0; i < nshards; i++) {
			const bs_shard_conf_t *c = &cfg->shards[i];
			snprintf(part, sizeof part,
			         "pt-online-schema-change --alter 'ADD INDEX k_user (user_id)' --execute --quiet"
			         " --recursion-method=none --no-check-replication-filters --chunk-time=0.5"
			         " h=%s,P=%u,u=%s,D=%s,t=rel >/dev/null 2>%s/ptosc.%d.err & p%d=$!; ",
			         c->host, c->port, c->user, c->database, getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", i, i);
			sputs(&cmd, part);
		}
		for (int i = 0; i < nshards; i++) {
			snprintf(part, sizeof part, "wait $p%d; ", i);
			sputs(&cmd, part);
		}
		t0 = now();
		int r = system(cmd.p);
		if (r == 0)
			t_ptosc = now() - t0;
		else
			fprintf(stderr, "bench_backfill: pt-online-schema-change failed (see /tmp/ptosc.*.err)\n");
		free(cmd.p);
	}

	printf("\nindex of one uuid property over %ld entities, %d shards:\n", nent, nshards);
	if (t_floor < 0)
		t_floor = 1;
	printf("  %-44s %7.2f s  %9.0f rows/s\n", "floor (precomputed multi-row INSERTs)", t_floor, nent / t_floor);
	printf("  %-44s %7.2f s  %9.0f rows/s  %.2fx the floor (target <= 1.25x)\n", "bagstore backfill (cleaner --index)",
	       t_backfill, nent / t_backfill, t_backfill / t_floor);
	if (t_alter > 0)
		printf("  %-44s %7.2f s  %9.0f rows/s  %.2fx the floor\n", "ALTER TABLE ... ADD INDEX (relational)",
		       t_alter, nent / t_alter, t_alter / t_floor);
	if (t_ptosc > 0)
		printf("  %-44s %7.2f s  %9.0f rows/s  %.2fx the floor (target: backfill faster)\n",
		       "pt-online-schema-change ADD INDEX", t_ptosc, nent / t_ptosc, t_ptosc / t_floor);
	printf("  (%lld index rows; backfill time includes the promotion to ready; the backfill's own CPU: %.2f s)\n",
	       (long long)written, cpu_backfill);

	/* ---------------------------------------------------- put latency */
latency:
	if (!part("latency"))
		goto lag;
	if (bs_index_parse(&def, "by_n", "n:int", "n") || bs_index_create(st, &def))
		die("index create", bs_last_error());
	int np = 3000;
	double *lat0 = calloc((size_t)np, sizeof *lat0), *lat1 = calloc((size_t)np, sizeof *lat1);
	int n0 = puts_timed(st, lat0, np, 2000000, NULL);
	bf_arg_t bf = { cfg, "by_n", 0, "", 0 };
	pthread_t btid;
	backfill_done = 0;
	pthread_create(&btid, NULL, backfill_thread, &bf);
	usleep(200000);
	long long lw0 = 0, lw1 = 0, wf0 = 0, wf1 = 0, lg0 = 0, lg1 = 0;
	for (int i = 0; i < nshards; i++) {
		lw0 += raw_int(raw[i], "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='INNODB_ROW_LOCK_WAITS'");
		wf0 += raw_int(raw[i], "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='INNODB_BUFFER_POOL_WAIT_FREE'");
		lg0 += raw_int(raw[i], "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='INNODB_LOG_WAITS'");
	}
	int n1 = puts_timed(st, lat1, np, 3000000, &backfill_done);
	for (int i = 0; i < nshards; i++) {
		lw1 += raw_int(raw[i], "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='INNODB_ROW_LOCK_WAITS'");
		wf1 += raw_int(raw[i], "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='INNODB_BUFFER_POOL_WAIT_FREE'");
		lg1 += raw_int(raw[i], "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='INNODB_LOG_WAITS'");
	}
	pthread_join(btid, NULL);
	if (bf.rc)
		die("backfill by_n", bf.msg);
	qsort(lat0, (size_t)n0, sizeof *lat0, cmp_d);
	qsort(lat1, (size_t)n1, sizeof *lat1, cmp_d);
	printf("\nput latency (two maintained indexes), one put at a time:\n");
	printf("  %-30s %6d puts  p50 %7.0f us  p99 %7.0f us\n", "without a backfill", n0, pct(lat0, n0, 0.5) * 1e6,
	       pct(lat0, n0, 0.99) * 1e6);
	printf("  %-30s %6d puts  p50 %7.0f us  p99 %7.0f us  p99 %.2fx (target <= 1.5x)\n", "with a backfill running", n1,
	       pct(lat1, n1, 0.5) * 1e6, pct(lat1, n1, 0.99) * 1e6, pct(lat1, n1, 0.99) / pct(lat0, n0, 0.99));
	printf("  (the concurrent backfill of by_n took %.1f s; meanwhile InnoDB row lock waits %lld,"
	       " buffer pool free-page waits %lld, log waits %lld)\n", bf.secs, lw1 - lw0, wf1 - wf0, lg1 - lg0);

	/* the same, with the backfill paced (cleaner.sleep_coef: 1, a sleep as
	 * long as each chunk took): backfill time traded for the writers' */
	if (bs_index_drop(st, "by_n") || bs_index_create(st, &def))
		die("index recreate", bs_last_error());
	double coef = getenv("BENCH_SLEEP_COEF") ? atof(getenv("BENCH_SLEEP_COEF")) : 1.0;
	cfg->cleaner.sleep_coef = coef;
	bf_arg_t bf2 = { cfg, "by_n", 0, "", 0 };
	double *lat2 = calloc((size_t)np, sizeof *lat2);
	backfill_done = 0;
	pthread_create(&btid, NULL, backfill_thread, &bf2);
	usleep(200000);
	int n2 = puts_timed(st, lat2, np, 4000000, &backfill_done);
	pthread_join(btid, NULL);
	cfg->cleaner.sleep_coef = 0;
	if (bf2.rc)
		die("paced backfill by_n", bf2.msg);
	qsort(lat2, (size_t)n2, sizeof *lat2, cmp_d);
	printf("  %-30s %6d puts  p50 %7.0f us  p99 %7.0f us  p99 %.2fx (target <= 1.5x)\n",
	       "with a paced backfill", n2, pct(lat2, n2, 0.5) * 1e6, pct(lat2, n2, 0.99) * 1e6,
	       pct(lat2, n2, 0.99) / pct(lat0, n0, 0.99));
	printf("  (paced: cleaner.sleep_coef %.1f; that backfill of by_n took %.1f s, %.2fx the unpaced one)\n",
	       coef, bf2.secs, bf2.secs / bf.secs);
	free(lat0);
	free(lat1);
	free(lat2);

	/* ---------------------------------------------------- repair lag */
lag:
	if (!part("lag"))
		goto done;
	pthread_t dtid, ltid;
	pthread_create(&dtid, NULL, daemon_thread, cfg);
	pthread_create(&ltid, NULL, load_puts_thread, cfg);
	usleep(1000000);
	int nfault = 200;
	double *lag = calloc((size_t)nfault, sizeof *lag);
	bs_prop_t prop = { "user_id", BS_COL_UUID, 0 };
	for (int f = 0; f < nfault; f++) {
		bs_id_t id, user;
		bs_value_t bag, v;
		bs_bytes_t body = {0};
		str_t q = {0};
		bs_id_generate(&id);
		bs_id_generate(&user);
		make_bag(&bag, 9000000 + f, &id, &user);
		bs_body_encode(&body, &bag);
		int s = bs_route_id(&id, nshards);
		bs_value_bin(&v, user.b, 16);
		int t = bs_route_value(&v, &prop, nshards);
		bs_value_clear(&v);
		/* the fault: the entity written, its index rows not */
		sputs(&q, "INSERT INTO entities (id, updated, body) VALUES (");
		shex(&q, id.b, 16);
		sputs(&q, ",NOW(6),");
		shex(&q, body.ptr, body.len);
		sputs(&q, ")");
		raw_exec(raw[s], q.p, q.len);
		double tf = now();
		q.len = 0;
		sputs(&q, "SELECT COUNT(*) FROM by_user WHERE entity_id=");
		shex(&q, id.b, 16);
		while (raw_int(raw[t], q.p) == 0 && now() - tf < 30)
			usleep(2000);
		lag[f] = now() - tf;
		free(q.p);
		bs_bytes_free(&body);
		bs_value_clear(&bag);
		usleep(50000);
	}
	stop_load = 1;
	pthread_join(ltid, NULL);
	atomic_store(&stop_daemon, 1);
	pthread_join(dtid, NULL);
	qsort(lag, (size_t)nfault, sizeof *lag, cmp_d);
	printf("\nrepair lag, fault to repaired row, cleaner daemon running (repair_interval %.2f s),\n"
	       "steady put load beside it, %d faults:\n", cfg->cleaner.repair_interval, nfault);
	printf("  p50 %.3f s  p99 %.3f s  max %.3f s (target p99 < 1 s)\n", pct(lag, nfault, 0.5),
	       pct(lag, nfault, 0.99), lag[nfault - 1]);
	free(lag);
	{
		bs_cleaner_opts_t once = { .once = true };
		bs_drift_t d;
		if (bs_cleaner_run(st, &once) || bs_verify(&d, st, NULL, false))
			die("verify", bs_last_error());
		printf("  verify after the run (load stopped, one more pass): %lld missing, %lld stale, %lld orphaned\n",
		       (long long)d.missing, (long long)d.stale, (long long)d.orphaned);
	}
done:
	for (int i = 0; i < nshards; i++)
		mysql_close(raw[i]);
	bs_store_free(st);
	bs_config_free(cfg);
	free(ids);
	free(users);
	return 0;
}

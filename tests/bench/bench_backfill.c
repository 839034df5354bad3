/*
 * bench_backfill.c - the cleaner's figures beside their references, on the
 * same servers and values in one run, each measured BENCH_RUNS times
 * (default 3; medians shown, with the runs):
 *
 *  1. backfill time of one index over N entities (default 1,000,000), beside
 *     the floor (the same index rows, precomputed, sent as multi-row INSERTs
 *     into empty tables, one connection per target shard; and the same rows
 *     as MariaDB bulk executions, the values binary, which is how the
 *     backfill sends them where the server takes it), MariaDB's ALTER
 *     TABLE ... ADD INDEX on a relational table holding the value in a real
 *     column, and pt-online-schema-change
 *     adding that index: the backfill unthrottled (the throttle's latency
 *     probe no signal: the only writer is the backfill) and with the default
 *     settings;
 *  2. put latency p50/p99 without a backfill and during one, unthrottled
 *     and throttled with each setting tried, and the backfill's time: the
 *     trade-off curve (p99 ratio against backfill time ratio). The puts run
 *     in a child process, as another application's would (the throttle
 *     tells other clients' writes from its own process's): BENCH_PUTTERS
 *     writers (default 4) at BENCH_PUT_RATE puts a second each (default
 *     150; 0: as fast as they go);
 *  3. repair lag under a steady write load with faults injected (an entity
 *     written without its index rows, as a writer killed between the two
 *     leaves it): p50/p99 from the fault to the repaired row, with the
 *     cleaner daemon running.
 *
 * Usage: bench_backfill CONFIG [N]   (tests/bench/backfill.sh starts
 * throwaway shards). Entities are loaded with multi-row INSERTs of bodies
 * built with bs_body_encode; with BENCH_REUSE=1, shards that already hold
 * N entities and their relational copy (a kept earlier run) are reused.
 * BENCH_PARTS: a comma list of floor,backfill,alter,ptosc,latency,lag
 * (default all). BENCH_SETTINGS: the latency section's settings (a comma
 * list of names from the table below; default all).
 */
#include "bagstore.h"
#include "cpu.h"

#include <mysql.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static bs_config_t *cfg;
static int nshards;
static MYSQL *raw[64]; /* a connection of our own per shard */
static long nent;
static bs_id_t *ids, *users;

static int runs = 3;

/* BENCH_PARTS: a comma list of floor,backfill,alter,ptosc,latency,lag (default all) */
static int part(const char *name)
{
	const char *p = getenv("BENCH_PARTS");
	return !p || !*p || strstr(p, name) != NULL;
}

static long server_pid[64];
static double job_cpu_srv, job_cpu_mine;

/* CPU seconds used so far by the shards' servers (on this host) and by
 * this program. */
static double cpu_now(double *mine)
{
	*mine = cpu_of((long)getpid());
	return cpu_of_all(server_pid, nshards < 64 ? nshards : 64);
}

/* CPU seconds of this program's children that ended (the putters). */
static double children_cpu(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_CHILDREN, &ru))
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
}

static double loadavg(void)
{
	double l[1] = { -1 };
	getloadavg(l, 1);
	return l[0];
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
static void sputs(str_t *s, const char *t)
{
	sput(s, t, strlen(t));
}
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
	str_t ent = { 0 }, rel = { 0 };
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
		bs_bytes_t body = { 0 };
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
	bool bulk;           /* the same rows as bulk executions (below) */
	const void **u, **e; /* bulk: each row's user_id and entity_id */
	size_t nrows;
	pthread_t tid;
} floor_t;

#define FLOOR_ROWS 5000 /* a statement's */

/* The rows as MariaDB bulk executions of one prepared INSERT, 5,000 a
 * statement, the values binary (what the backfill sends where the server
 * takes it): the floor without SQL text. */
static void floor_bulk(MYSQL *m, floor_t *f)
{
	static const char q[] = "INSERT INTO floor_user (user_id, entity_id) VALUES (?,?)";
	static unsigned long len16[FLOOR_ROWS];
	MYSQL_STMT *s = mysql_stmt_init(m);
	if (!s || mysql_stmt_prepare(s, q, sizeof q - 1))
		die("prepare", s ? mysql_stmt_error(s) : "out of memory");
	for (int k = 0; k < FLOOR_ROWS; k++)
		len16[k] = 16;
	for (size_t at = 0; at < f->nrows; at += FLOOR_ROWS) {
		unsigned int n = (unsigned int)(f->nrows - at < FLOOR_ROWS ? f->nrows - at : FLOOR_ROWS);
		MYSQL_BIND b[2];
		memset(b, 0, sizeof b);
		b[0].buffer_type = b[1].buffer_type = MYSQL_TYPE_BLOB;
		b[0].buffer = (void *)&f->u[at];
		b[1].buffer = (void *)&f->e[at];
		b[0].length = b[1].length = len16;
		if (mysql_stmt_attr_set(s, STMT_ATTR_ARRAY_SIZE, &n) || mysql_stmt_bind_param(s, b) ||
		    mysql_stmt_execute(s))
			die("bulk execution", mysql_stmt_error(s));
	}
	mysql_stmt_close(s);
}

static void *floor_thread(void *p)
{
	floor_t *f = p;
	mysql_thread_init();
	MYSQL *m = raw_connect(f->target);
	size_t off = 0;
	if (f->bulk)
		floor_bulk(m, f);
	for (int k = 0; k < f->nstmt; k++) {
		raw_exec(m, f->sql.p + off, f->lens[k]);
		off += f->lens[k];
	}
	mysql_close(m);
	mysql_thread_end();
	return NULL;
}

/* the rows of every source shard for one target, 5000 per INSERT (bulk:
 * as pointers to their values) */
static void floor_build(floor_t *f, int target, bool bulk)
{
	bs_prop_t prop = { "user_id", BS_COL_UUID, 0 };
	int inrow = 0;
	size_t start = 0;
	f->target = target;
	f->bulk = bulk;
	f->lens = calloc((size_t)(nent / FLOOR_ROWS + 2), sizeof *f->lens);
	if (bulk && (!(f->u = calloc((size_t)nent, sizeof *f->u)) || !(f->e = calloc((size_t)nent, sizeof *f->e))))
		die("floor", "out of memory");
	for (long k = 0; k <= nent; k++) {
		if (k < nent) {
			bs_value_t v;
			bs_value_bin(&v, users[k].b, 16);
			int t = bs_route_value(&v, &prop, nshards);
			bs_value_clear(&v);
			if (t != target)
				continue;
			if (bulk) {
				f->u[f->nrows] = users[k].b;
				f->e[f->nrows++] = ids[k].b;
				continue;
			}
		} else if (bulk) {
			break;
		}
		if (inrow && (inrow == FLOOR_ROWS || k == nent)) {
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

/* ------------------------------------------------------------ statistics */

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	int i = (int)(p * (double)n);
	return n ? v[i >= n ? n - 1 : i] : 0;
}

static double median_of(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : -1;
}

/* ------------------------------------------------------------ settings */

/* The settings a backfill is measured with. */
typedef struct {
	const char *name;
	double factor;      /* cleaner.write_latency_factor (0: the probe is no signal) */
	double max_latency; /* cleaner.max_write_latency */
	double sleep_coef;  /* cleaner.sleep_coef */
	unsigned writers;   /* cleaner.writers (0 auto) */
	bool tail;          /* cleaner.write_latency_signal: tail */
} setting_t;

static const setting_t unthrottled = { "unthrottled (probe no signal)", 0, 0, 0, 0, false };
static const setting_t defaults = { "defaults (write_latency_factor 2)", 2.0, 0, 0, 0, false };

static const setting_t tried[] = {
	{ "write_latency_factor 2 (default)", 2.0, 0, 0, 0, false },
	{ "write_latency_factor 5", 5.0, 0, 0, 0, false },
	{ "write_latency_signal tail", 2.0, 0, 0, 0, true },
	{ "write_latency_signal tail, factor 5", 5.0, 0, 0, 0, true },
	{ "max_write_latency 0.5 ms", 0, 0.0005, 0, 0, false },
	{ "max_write_latency 1 ms", 0, 0.001, 0, 0, false },
	{ "max_write_latency 2 ms", 0, 0.002, 0, 0, false },
	{ "sleep_coef 1, probe no signal", 0, 0, 1.0, 0, false },
	{ "sleep_coef 3, probe no signal", 0, 0, 3.0, 0, false },
};
#define NTRIED (int)(sizeof tried / sizeof *tried)

static bs_cleaner_conf_t saved;

static void apply(const setting_t *s)
{
	saved = cfg->cleaner;
	cfg->cleaner.write_latency_factor = s->factor;
	cfg->cleaner.max_write_latency = s->max_latency;
	cfg->cleaner.sleep_coef = s->sleep_coef;
	cfg->cleaner.write_latency_tail = s->tail;
	if (s->writers)
		cfg->cleaner.writers = s->writers;
}

static void restore(void)
{
	cfg->cleaner = saved;
}

/* BENCH_SETTINGS: which of tried[] the latency section runs (by name
 * prefix; default all). */
static int setting_wanted(const char *name)
{
	const char *p = getenv("BENCH_SETTINGS");
	if (!p || !*p)
		return 1;
	char buf[512];
	snprintf(buf, sizeof buf, "%s", p);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (!strncmp(name, t, strlen(t)))
			return 1;
	return 0;
}

/* ------------------------------------------------------------ one backfill */

/* What a backfill's progress said: when its last job was done, what held
 * it (the signals), how long it was throttled. */
typedef struct {
	pthread_mutex_t lock;
	double t0, done_at;
	int ndone;
	bool *done;
	char signals[256];
	double throttled_s, last_at;
	bool throttled;
	double cpu_srv_done, cpu_mine_done; /* cpu_now() when the last job was done */
	int64_t rows;                       /* rows the jobs scanned */
} watch_t;

static void on_progress(void *p, const bs_job_t *j)
{
	watch_t *w = p;
	pthread_mutex_lock(&w->lock);
	double t = now();
	if (w->throttled)
		w->throttled_s += t - w->last_at;
	w->last_at = t;
	w->throttled = j->state == BS_JOB_THROTTLED;
	if (j->throttle_signal[0] && !strstr(w->signals, j->throttle_signal) &&
	    strlen(w->signals) + strlen(j->throttle_signal) + 2 < sizeof w->signals) {
		if (w->signals[0])
			strcat(w->signals, ",");
		strcat(w->signals, j->throttle_signal);
	}
	if (j->state == BS_JOB_DONE && j->shard >= 0 && j->shard < nshards && !w->done[j->shard]) {
		w->done[j->shard] = true;
		w->rows += j->rows_scanned;
		if (++w->ndone == nshards) {
			w->done_at = t;
			w->cpu_srv_done = cpu_now(&w->cpu_mine_done);
		}
	}
	pthread_mutex_unlock(&w->lock);
}

typedef struct {
	const char *index;
	double jobs_s, total_s; /* every job done; and promoted to ready */
	double cpu_srv_done, cpu_mine_done;
	int64_t rows; /* entities scanned */
	char signals[256];
	int rc;
	char msg[1024];
} bf_result_t;

static volatile int backfill_done;

/* Backfill index (created, building) on a store of its own. */
static void backfill(bf_result_t *res)
{
	bs_store_t *st;
	watch_t w = { .lock = PTHREAD_MUTEX_INITIALIZER, .done = calloc((size_t)nshards, sizeof(bool)) };
	bs_cleaner_opts_t o = { .progress = on_progress, .ctx = &w };
	w.t0 = now();
	if ((res->rc = bs_store_open(&st, cfg)) == 0) {
		res->rc = bs_cleaner_backfill(st, res->index, &o);
		if (res->rc)
			snprintf(res->msg, sizeof res->msg, "%s", bs_last_error());
		bs_store_free(st);
	}
	res->total_s = now() - w.t0;
	res->jobs_s = w.ndone == nshards ? w.done_at - w.t0 : res->total_s;
	res->cpu_srv_done = w.cpu_srv_done;
	res->cpu_mine_done = w.cpu_mine_done;
	res->rows = w.rows;
	snprintf(res->signals, sizeof res->signals, "%s", w.signals);
	free(w.done);
}

static void *backfill_thread(void *p)
{
	mysql_thread_init();
	backfill(p);
	backfill_done = 1;
	mysql_thread_end();
	return NULL;
}

static void index_fresh(bs_store_t *st, const char *name, const char *on, const char *shard_on)
{
	bs_index_t def, cur;
	if (bs_index_get(&cur, st, name) == 0 && bs_index_drop(st, name))
		die("index drop", bs_last_error());
	if (bs_index_parse(&def, name, on, shard_on) || bs_index_create(st, &def))
		die("index create", bs_last_error());
}

static long long index_rows(const char *name)
{
	char q[128];
	long long rows = 0;
	snprintf(q, sizeof q, "SELECT COUNT(*) FROM %s", name);
	for (int i = 0; i < nshards; i++)
		rows += raw_int(raw[i], q);
	return rows;
}

static long long entities(void)
{
	long long n = 0;
	for (int i = 0; i < nshards; i++)
		n += raw_int(raw[i], "SELECT COUNT(*) FROM entities");
	return n;
}

/* Remove the entities an earlier run's puts added (those without a
 * relational copy), once the indexes holding their rows are gone. */
static void forget_puts(bs_store_t *st)
{
	const char *q = "DELETE FROM entities WHERE id NOT IN (SELECT id FROM rel)";
	const char *names[] = { "by_user", "by_n" };
	bs_index_t cur;
	for (int k = 0; k < 2; k++)
		if (bs_index_get(&cur, st, names[k]) == 0 && bs_index_drop(st, names[k]))
			die("index drop", bs_last_error());
	for (int i = 0; i < nshards; i++)
		raw_exec(raw[i], q, strlen(q));
}

/* ------------------------------------------------------------ latency */

/* Puts of new entities by another application: a child process with
 * stores of its own (the throttle counts this process's writes as its
 * own, and protects only other clients' writers), BENCH_PUTTERS threads
 * (default 4) each putting BENCH_PUT_RATE times a second (default 150; 0:
 * one after another), as the writers did. Forked by putter_start
 * before any thread of this process runs, it waits for putter_run; the
 * flags and latencies (seconds, slot by slot) are shared memory. */
#define PINGS_MAX 40000 /* the pinger's latencies kept (200 s at one every 5 ms) */

typedef struct {
	volatile int go, stop, failed;
	int next;  /* the next latency slot, taken atomically by the threads */
	int nping; /* the pinger's latencies */
	double ping[PINGS_MAX];
	double lat[];
} putter_shm_t;

typedef struct {
	pid_t pid;
	size_t size;
	putter_shm_t *sh;
} putter_t;

typedef struct {
	putter_shm_t *sh;
	int max;
	long base;
	double rate;
} putter_arg_t;

static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : dflt;
}

static void *putter_thread(void *arg)
{
	putter_arg_t *a = arg;
	putter_shm_t *sh = a->sh;
	bs_store_t *st;
	if (bs_store_open(&st, cfg)) {
		sh->failed = 1;
		return NULL;
	}
	double next = now();
	while (!sh->stop) {
		if (a->rate > 0) { /* at its rate, without catching up after a slow put */
			double t = now();
			if (next > t)
				usleep((useconds_t)((next - t) * 1e6));
			next = (next > t ? next : t) + 1.0 / a->rate;
		}
		int k = __atomic_fetch_add(&sh->next, 1, __ATOMIC_RELAXED);
		if (k >= a->max)
			break;
		bs_id_t id, user;
		bs_value_t bag;
		bs_id_generate(&id);
		bs_id_generate(&user);
		make_bag(&bag, a->base + k, &id, &user);
		double t0 = now();
		if (bs_put(st, &bag, NULL)) {
			fprintf(stderr, "bench_backfill: put: %s\n", bs_last_error());
			sh->failed = 1;
			bs_value_clear(&bag);
			break;
		}
		sh->lat[k] = now() - t0;
		bs_value_clear(&bag);
	}
	bs_store_free(st);
	return NULL;
}

/* Beside the putters, a `SELECT 1` on the first shard every 5 ms, timed:
 * what a statement that touches no table waits for, the server's threads
 * getting a CPU (the backfill's statements hold no lock it needs). */
static void *pinger_thread(void *arg)
{
	putter_shm_t *sh = arg;
	MYSQL *m = raw_connect(0);
	while (!sh->stop && sh->nping < PINGS_MAX) {
		double t0 = now();
		if (mysql_query(m, "SELECT 1")) {
			fprintf(stderr, "bench_backfill: ping: %s\n", mysql_error(m));
			sh->failed = 1;
			break;
		}
		mysql_free_result(mysql_store_result(m));
		sh->ping[sh->nping++] = now() - t0;
		usleep(5000);
	}
	mysql_close(m);
	return NULL;
}

static int putters(void)
{
	int n = env_int("BENCH_PUTTERS", 4);
	return n < 1 ? 1 : n > 64 ? 64 : n;
}

static int put_rate(void)
{
	int r = env_int("BENCH_PUT_RATE", 150);
	return r < 0 ? 0 : r;
}

static void putter_start(putter_t *p, int max, long base)
{
	p->size = sizeof *p->sh + (size_t)max * sizeof(double);
	p->sh = mmap(NULL, p->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p->sh == MAP_FAILED)
		die("mmap", "no shared memory for the putter");
	fflush(stdout);
	if ((p->pid = fork()) < 0)
		die("fork", "cannot start the putter");
	if (p->pid > 0)
		return;
	putter_shm_t *sh = p->sh;
	int w = putters();
	pthread_t tid[64];
	putter_arg_t arg = { .sh = sh, .max = max, .base = base, .rate = put_rate() };
	pthread_t ping;
	while (!sh->go && !sh->stop)
		usleep(1000);
	bool pinging = pthread_create(&ping, NULL, pinger_thread, sh) == 0;
	for (int i = 0; i < w; i++)
		if (pthread_create(&tid[i], NULL, putter_thread, &arg)) {
			sh->failed = 1;
			w = i;
			break;
		}
	for (int i = 0; i < w; i++)
		pthread_join(tid[i], NULL);
	sh->stop = 1; /* the putters' max reached: the pinger too */
	if (pinging)
		pthread_join(ping, NULL);
	else
		sh->failed = 1;
	_exit(sh->failed);
}

/* Let the putter go until *until (or its max): its latencies into lat,
 * their count returned. */
static int putter_run(putter_t *p, double *lat, int max, volatile int *until, double *ping99)
{
	int status = 0;
	p->sh->go = 1;
	while (!(until && *until) && waitpid(p->pid, &status, WNOHANG) == 0)
		usleep(2000);
	p->sh->stop = 1;
	waitpid(p->pid, &status, 0);
	if (p->sh->failed)
		die("put", "the putter failed (its message above)");
	/* every slot taken was filled: the threads end their put before they stop */
	int n = p->sh->next < max ? p->sh->next : max;
	int np = p->sh->nping;
	qsort(p->sh->ping, (size_t)np, sizeof *p->sh->ping, cmp_d);
	*ping99 = pct(p->sh->ping, np, 0.99);
	memcpy(lat, p->sh->lat, (size_t)n * sizeof *lat);
	munmap(p->sh, p->size);
	return n;
}

/* ------------------------------------------------------------ sections */

static double floor_once(bool bulk)
{
	/* one connection per target shard: a connection per source and target
	 * (64 at 8 shards) spent 5.7-7.7 s there, against 1.1 s so, in the
	 * servers' contention on this machine's 2 CPUs, and 0.8-1.0 s either
	 * way at 2 shards */
	int nf = nshards;
	floor_t *fl = calloc((size_t)nf, sizeof *fl);
	for (int t = 0; t < nshards; t++)
		floor_build(&fl[t], t, bulk);
	double t0 = now();
	for (int k = 0; k < nf; k++)
		pthread_create(&fl[k].tid, NULL, floor_thread, &fl[k]);
	for (int k = 0; k < nf; k++)
		pthread_join(fl[k].tid, NULL);
	double t = now() - t0;
	for (int k = 0; k < nf; k++) {
		free(fl[k].sql.p);
		free(fl[k].lens);
		free(fl[k].u);
		free(fl[k].e);
	}
	free(fl);
	return t;
}

/* CPU seconds of the servers and of this program over measurements. */
typedef struct {
	double srv[16], mine[16];
	double s0, m0;
} cpu_t;

static void cpu_start(cpu_t *c)
{
	c->s0 = cpu_now(&c->m0);
}

static void cpu_stop(cpu_t *c, int r)
{
	double m;
	c->srv[r] = cpu_now(&m) - c->s0;
	c->mine[r] = m - c->m0;
}

static double floor_cpu_srv[2], floor_cpu_mine[2];

/* The floor: the index rows into an empty table of the same definition,
 * as multi-row INSERTs (bulk: as bulk executions). */
static double floor_time(bool bulk)
{
	bs_index_t def;
	char *ddl = NULL;
	double t[16];
	cpu_t cpu;
	if (bs_index_parse(&def, "floor_user", "user_id:uuid", "user_id") || bs_index_ddl(&ddl, &def))
		die("index", bs_last_error());
	for (int r = 0; r < runs; r++) {
		for (int i = 0; i < nshards; i++) {
			raw_exec(raw[i], "DROP TABLE IF EXISTS floor_user", 31);
			raw_exec(raw[i], ddl, strlen(ddl));
		}
		cpu_start(&cpu);
		t[r] = floor_once(bulk);
		cpu_stop(&cpu, r);
	}
	floor_cpu_srv[bulk] = median_of(cpu.srv, runs);
	floor_cpu_mine[bulk] = median_of(cpu.mine, runs);
	for (int i = 0; i < nshards; i++)
		raw_exec(raw[i], "DROP TABLE floor_user", 21);
	free(ddl);
	return median_of(t, runs);
}

/* by_user backfilled with s, runs times: medians of the jobs' time and
 * the time to ready. */
static void backfill_times(double *jobs, double *total, double *cpu_srv, double *cpu_mine, char *signals, size_t size,
                           bs_store_t *st, const setting_t *s)
{
	double j[16], t[16], jcs[16], jcm[16];
	cpu_t cpu;
	signals[0] = '\0';
	for (int r = 0; r < runs; r++) {
		bf_result_t res = { .index = "by_user" };
		index_fresh(st, "by_user", "user_id:uuid", "user_id");
		apply(s);
		cpu_start(&cpu);
		backfill(&res);
		cpu_stop(&cpu, r);
		restore();
		if (res.rc)
			die("backfill", res.msg);
		if (index_rows("by_user") != entities())
			die("backfill", "the index does not hold one row per entity");
		j[r] = res.jobs_s;
		t[r] = res.total_s;
		jcs[r] = res.cpu_srv_done - cpu.s0;
		jcm[r] = res.cpu_mine_done - cpu.m0;
		if (res.signals[0] && !strstr(signals, res.signals))
			snprintf(signals + strlen(signals), size - strlen(signals), "%s%s", signals[0] ? "," : "",
			         res.signals);
	}
	*jobs = median_of(j, runs);
	*total = median_of(t, runs);
	*cpu_srv = median_of(cpu.srv, runs);
	*cpu_mine = median_of(cpu.mine, runs);
	job_cpu_srv = median_of(jcs, runs);
	job_cpu_mine = median_of(jcm, runs);
}

static double ptosc_once(void)
{
	str_t cmd = { 0 };
	char buf[512];
	sputs(&cmd, "set -e; ");
	for (int i = 0; i < nshards; i++) {
		const bs_shard_conf_t *c = &cfg->shards[i];
		snprintf(buf, sizeof buf,
		         "pt-online-schema-change --alter 'ADD INDEX k_user (user_id)' --execute --quiet"
		         " --recursion-method=none --no-check-replication-filters --chunk-time=0.5"
		         " h=%s,P=%u,u=%s,D=%s,t=rel >/dev/null 2>%s/ptosc.%d.err & p%d=$!; ",
		         c->host, c->port, c->user, c->database, getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", i, i);
		sputs(&cmd, buf);
	}
	for (int i = 0; i < nshards; i++) {
		snprintf(buf, sizeof buf, "wait $p%d; ", i);
		sputs(&cmd, buf);
	}
	double t0 = now();
	int rc = system(cmd.p);
	double t = now() - t0;
	free(cmd.p);
	if (rc) {
		fprintf(stderr, "bench_backfill: pt-online-schema-change failed (see /tmp/ptosc.*.err)\n");
		return -1;
	}
	alter_everywhere("ALTER TABLE rel DROP INDEX k_user");
	return t;
}

static void section_backfill(bs_store_t *st)
{
	double t_floor = -1, t_bulk = -1, t_alter = -1, t_ptosc = -1, bf_j = -1, bf_t = -1, df_j = -1, df_t = -1, x[16];
	double bf_cs = 0, bf_cm = 0, df_cs = 0, df_cm = 0;
	char sig_bf[256] = "", sig_df[256] = "";
	double l0 = loadavg();
	if (part("floor")) {
		t_floor = floor_time(false);
		t_bulk = floor_time(true);
	}
	if (part("backfill")) {
		backfill_times(&bf_j, &bf_t, &bf_cs, &bf_cm, sig_bf, sizeof sig_bf, st, &unthrottled);
		if (!getenv("BENCH_NO_DEFAULT"))
			backfill_times(&df_j, &df_t, &df_cs, &df_cm, sig_df, sizeof sig_df, st, &defaults);
	}
	if (part("alter")) {
		for (int r = 0; r < runs; r++) {
			x[r] = alter_everywhere("ALTER TABLE rel ADD INDEX k_user (user_id)");
			alter_everywhere("ALTER TABLE rel DROP INDEX k_user");
		}
		t_alter = median_of(x, runs);
	}
	if (part("ptosc")) {
		int ok = 0;
		for (int r = 0; r < runs; r++)
			if ((x[ok] = ptosc_once()) > 0)
				ok++;
		t_ptosc = ok ? median_of(x, ok) : -1;
	}
	printf("\nindex of one uuid property over %ld entities, %d shards (median of %d runs; load average %.2f"
	       " before, %.2f after; %d MariaDB servers and this program share this machine's %ld CPUs):\n",
	       nent, nshards, runs, l0, loadavg(), nshards, sysconf(_SC_NPROCESSORS_ONLN));
	if (t_floor <= 0)
		t_floor = 1;
	printf("  %-46s %7.2f s  %9.0f rows/s  (CPU: servers %.2f s, client %.2f s)\n",
	       "floor (precomputed multi-row INSERTs)", t_floor, nent / t_floor, floor_cpu_srv[0], floor_cpu_mine[0]);
	if (t_bulk > 0)
		printf("  %-46s %7.2f s  %9.0f rows/s  %.2fx the floor (CPU: servers %.2f s, client %.2f s)\n",
		       "  the same rows as bulk executions (binary)", t_bulk, nent / t_bulk, t_bulk / t_floor,
		       floor_cpu_srv[1], floor_cpu_mine[1]);
	if (bf_j > 0) {
		printf("  %-46s %7.2f s  %9.0f rows/s  %.2fx the floor (target <= 1.0x)",
		       "bagstore backfill, unthrottled: every job done", bf_j, nent / bf_j, bf_j / t_floor);
		if (t_bulk > 0)
			printf(", %.2fx its bulk form", bf_j / t_bulk);
		printf(" (CPU: servers %.2f s, client %.2f s)\n", job_cpu_srv, job_cpu_mine);
		printf("  %-46s %7.2f s  %9s        %.2fx the floor%s%s (CPU to ready: servers %.2f s, client %.2f "
		       "s)\n",
		       "  and promoted to ready", bf_t, "", bf_t / t_floor, sig_bf[0] ? "; held by " : "", sig_bf,
		       bf_cs, bf_cm);
		if (df_j > 0)
			printf("  %-46s %7.2f s  %9.0f rows/s  %.2fx the floor, %.2fx unthrottled; held by %s\n",
			       "bagstore backfill, default settings", df_j, nent / df_j, df_j / t_floor, df_j / bf_j,
			       sig_df[0] ? sig_df : "nothing");
	}
	if (t_alter > 0)
		printf("  %-46s %7.2f s  %9.0f rows/s  %.2fx the floor\n", "ALTER TABLE ... ADD INDEX (relational)",
		       t_alter, nent / t_alter, t_alter / t_floor);
	if (t_ptosc > 0)
		printf("  %-46s %7.2f s  %9.0f rows/s  %.2fx the floor; the unthrottled backfill takes %.2fx"
		       " its time (target < 1)\n",
		       "pt-online-schema-change ADD INDEX", t_ptosc, nent / t_ptosc, t_ptosc / t_floor,
		       bf_j > 0 ? bf_j / t_ptosc : -1);
}

/* Where the CPU went over a span of the latency section: the servers',
 * this program's (its backfill), the putters' (children, once ended). */
typedef struct {
	double t0, srv0, mine0, kids0;
} cpu_span_t;

static void cpu_span_begin(cpu_span_t *c)
{
	c->t0 = now();
	c->srv0 = cpu_now(&c->mine0);
	c->kids0 = children_cpu();
}

/* cores[3]: the servers', this program's and the putters' CPU seconds a
 * second of the span (call once the putter ended). */
static void cpu_span_end(const cpu_span_t *c, double *cores)
{
	double mine, wall = now() - c->t0;
	double srv = cpu_now(&mine);
	if (wall <= 0)
		wall = 1e-9;
	cores[0] = (srv - c->srv0) / wall;
	cores[1] = (mine - c->mine0) / wall;
	cores[2] = (children_cpu() - c->kids0) / wall;
}

/* One backfill of by_n with s while the putters run: its time, in
 * seconds per million entities scanned (the puts grow the store from one
 * backfill to the next), and the puts' p50 and p99 (seconds). */
static void latency_once(double *secs, double *p50, double *p99, double *ping99, double *cores, char *signals,
                         size_t size, bs_store_t *st, const setting_t *s, double *lat, int max)
{
	bf_result_t res = { .index = "by_n" };
	pthread_t tid;
	putter_t put;
	cpu_span_t c;
	index_fresh(st, "by_n", "n:int", "n");
	apply(s);
	backfill_done = 0;
	putter_start(&put, max, 3000000 + (long)(now() * 1000) % 1000000 * 1000);
	cpu_span_begin(&c);
	pthread_create(&tid, NULL, backfill_thread, &res);
	int n = putter_run(&put, lat, max, &backfill_done, ping99);
	cpu_span_end(&c, cores);
	pthread_join(tid, NULL);
	restore();
	if (res.rc)
		die("backfill by_n", res.msg);
	qsort(lat, (size_t)n, sizeof *lat, cmp_d);
	*secs = res.rows > 0 ? res.jobs_s * 1e6 / (double)res.rows : res.jobs_s;
	*p50 = pct(lat, n, 0.5);
	*p99 = pct(lat, n, 0.99);
	snprintf(signals, size, "%s", res.signals);
}

/* The median over runs of cores[k][r][j] for each j (of 3). */
static void cores_median(double *out, double (*cores)[3], int runs_)
{
	double v[16];
	for (int j = 0; j < 3; j++) {
		for (int r = 0; r < runs_; r++)
			v[r] = cores[r][j];
		out[j] = median_of(v, runs_);
	}
}

static void print_latency(const setting_t **set, int ns, double (*secs)[16], double (*p50)[16], double (*p99)[16],
                          double (*ping)[16], double (*cores)[16][3], double (*cores_0)[3], char (*sig)[256],
                          const double *p50_0, const double *p99_0, double *ping_0, double l0)
{
	double cm[3], e[16];
	double a[16], b[16], c[16], d[16], tr[1 + NTRIED], pr[1 + NTRIED];
	for (int r = 0; r < runs; r++) {
		a[r] = p50_0[r];
		b[r] = p99_0[r];
	}
	char how[64];
	if (put_rate())
		snprintf(how, sizeof how, "%d writers at %d puts/s each", putters(), put_rate());
	else
		snprintf(how, sizeof how, "%d writers, each one put after another", putters());
	printf("\nput latency (two maintained indexes), %s, during a backfill of by_n over %ld"
	       " entities\n(median of %d runs; load average %.2f before, %.2f after; %d MariaDB servers, this"
	       " program and its backfill share %ld CPUs):\n",
	       how, nent, runs, l0, loadavg(), nshards, sysconf(_SC_NPROCESSORS_ONLN));
	printf("  (time: seconds per million entities scanned; the puts grow the store as they go)\n");
	printf("  (ping p99: a `SELECT 1` on s0 every 5 ms beside the writers, which touches no table; CPU: the"
	       " cores'\n   worth each used, medians: the servers, the backfill's process, the writers' process)\n");
	printf("  %-36s %9s %7s %9s %9s %8s %9s  %-14s  %s\n", "backfill", "time", "ratio", "put p50", "put p99",
	       "p99 ratio", "ping p99", "CPU srv/bf/wr", "held by");
	cores_median(cm, cores_0, runs);
	printf("  %-36s %9s %7s %7.0f us %7.0f us %8.2fx %6.0f us  %4.2f/%4.2f/%4.2f\n", "none", "-", "-",
	       median_of(a, runs) * 1e6, median_of(b, runs) * 1e6, 1.0, median_of(ping_0, runs) * 1e6, cm[0], cm[1],
	       cm[2]);
	for (int k = 0; k < ns; k++) {
		for (int r = 0; r < runs; r++) {
			a[r] = secs[k][r];
			b[r] = secs[k][r] / secs[0][r];
			c[r] = p50[k][r];
			d[r] = p99[k][r] / p99_0[r];
		}
		double t = median_of(a, runs);
		tr[k] = median_of(b, runs);
		pr[k] = median_of(d, runs);
		for (int r = 0; r < runs; r++)
			a[r] = p99[k][r];
		cores_median(cm, cores[k], runs);
		for (int r = 0; r < runs; r++)
			e[r] = ping[k][r];
		printf("  %-36s %7.2f s %6.2fx %7.0f us %7.0f us %8.2fx %6.0f us  %4.2f/%4.2f/%4.2f  %s%s\n",
		       set[k]->name, t, tr[k], median_of(c, runs) * 1e6, median_of(a, runs) * 1e6, pr[k],
		       median_of(e, runs) * 1e6, cm[0], cm[1], cm[2], sig[k][0] ? sig[k] : "-",
		       k && tr[k] <= 3 && pr[k] <= 1.5 ? "  (meets both targets)" : "");
	}
	printf("  targets: p99 at most 1.5x without a backfill, the backfill at most 3x its unthrottled time\n");
	printf("  trade-off curve, (backfill time ratio, p99 ratio) by time:");
	for (int done = 0; done < ns; done++) {
		int best = -1;
		for (int k = 0; k < ns; k++)
			if (tr[k] >= 0 && (best < 0 || tr[k] < tr[best]))
				best = k;
		printf(" (%.2f, %.2f)", tr[best], pr[best]);
		tr[best] = -1;
	}
	printf("\n");
}

static void section_latency(bs_store_t *st)
{
	int max = 400000, ns = 0;
	double *lat = calloc((size_t)max, sizeof *lat);
	const setting_t *set[1 + NTRIED];
	double p50_0[16], p99_0[16], secs[1 + NTRIED][16], p50[1 + NTRIED][16], p99[1 + NTRIED][16];
	double cores[1 + NTRIED][16][3], cores_0[16][3], ping[1 + NTRIED][16], ping_0[16];
	char sig[1 + NTRIED][256];
	set[ns++] = &unthrottled;
	for (int k = 0; k < NTRIED; k++)
		if (setting_wanted(tried[k].name))
			set[ns++] = &tried[k];
	memset(sig, 0, sizeof sig);
	double l0 = loadavg();
	for (int r = 0; r < runs; r++) {
		putter_t put;
		cpu_span_t c;
		putter_start(&put, 5000, 2000000);
		cpu_span_begin(&c);
		int n = putter_run(&put, lat, 5000, NULL, &ping_0[r]);
		cpu_span_end(&c, cores_0[r]);
		qsort(lat, (size_t)n, sizeof *lat, cmp_d);
		p50_0[r] = pct(lat, n, 0.5);
		p99_0[r] = pct(lat, n, 0.99);
		for (int k = 0; k < ns; k++) {
			char s[256];
			latency_once(&secs[k][r], &p50[k][r], &p99[k][r], &ping[k][r], cores[k][r], s, sizeof s, st,
			             set[k], lat, max);
			if (s[0] && !strstr(sig[k], s))
				snprintf(sig[k] + strlen(sig[k]), sizeof sig[k] - strlen(sig[k]), "%s%s",
				         sig[k][0] ? "," : "", s);
		}
	}
	print_latency(set, ns, secs, p50, p99, ping, cores, cores_0, sig, p50_0, p99_0, ping_0, l0);
	free(lat);
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

/* One fault: an entity written without its index rows; seconds until the
 * repair loop wrote its row. */
static double fault_once(int f)
{
	bs_id_t id, user;
	bs_value_t bag, v;
	bs_bytes_t body = { 0 };
	str_t q = { 0 };
	bs_prop_t prop = { "user_id", BS_COL_UUID, 0 };
	bs_id_generate(&id);
	bs_id_generate(&user);
	make_bag(&bag, 9000000 + f, &id, &user);
	bs_body_encode(&body, &bag);
	int s = bs_route_id(&id, nshards);
	bs_value_bin(&v, user.b, 16);
	int t = bs_route_value(&v, &prop, nshards);
	bs_value_clear(&v);
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
	double lag = now() - tf;
	free(q.p);
	bs_bytes_free(&body);
	bs_value_clear(&bag);
	return lag;
}

static void section_lag(bs_store_t *st)
{
	bs_index_t cur;
	if (bs_index_get(&cur, st, "by_user") || cur.state != BS_INDEX_READY) {
		bf_result_t res = { .index = "by_user" };
		index_fresh(st, "by_user", "user_id:uuid", "user_id");
		backfill(&res);
		if (res.rc)
			die("backfill", res.msg);
	}
	pthread_t dtid, ltid;
	pthread_create(&dtid, NULL, daemon_thread, cfg);
	pthread_create(&ltid, NULL, load_puts_thread, cfg);
	usleep(1000000);
	int nfault = 200;
	double *lag = calloc((size_t)nfault, sizeof *lag);
	for (int f = 0; f < nfault; f++) {
		lag[f] = fault_once(f);
		usleep(50000);
	}
	stop_load = 1;
	pthread_join(ltid, NULL);
	atomic_store(&stop_daemon, 1);
	pthread_join(dtid, NULL);
	qsort(lag, (size_t)nfault, sizeof *lag, cmp_d);
	printf("\nrepair lag, fault to repaired row, cleaner daemon running (repair_interval %.2f s),\n"
	       "steady put load beside it, %d faults:\n",
	       cfg->cleaner.repair_interval, nfault);
	printf("  p50 %.3f s  p99 %.3f s  max %.3f s (target p99 < 1 s)\n", pct(lag, nfault, 0.5),
	       pct(lag, nfault, 0.99), lag[nfault - 1]);
	free(lag);
	bs_cleaner_opts_t once = { .once = true };
	bs_drift_t d;
	if (bs_cleaner_run(st, &once) || bs_verify(&d, st, NULL, false))
		die("verify", bs_last_error());
	printf("  verify after the run (load stopped, one more pass): %lld missing, %lld stale, %lld orphaned\n",
	       (long long)d.missing, (long long)d.stale, (long long)d.orphaned);
}

/* ------------------------------------------------------------ main */

/* The entities and their relational copy: loaded, or (BENCH_REUSE=1) read
 * back from shards that hold them already. */
static void load(bs_store_t *st)
{
	const char *ddl = "CREATE TABLE IF NOT EXISTS rel (id BINARY(16) NOT NULL PRIMARY KEY,"
			  " user_id BINARY(16) NOT NULL, n BIGINT NOT NULL, title VARCHAR(255) NOT NULL) ENGINE=InnoDB";
	long have = 0;
	for (int i = 0; i < nshards; i++) {
		raw_exec(raw[i], ddl, strlen(ddl));
		have += raw_int(raw[i], "SELECT COUNT(*) FROM rel");
	}
	if (getenv("BENCH_REUSE") && atoi(getenv("BENCH_REUSE")) && have == nent) {
		forget_puts(st); /* an earlier run's puts, and the indexes they are in */
		long k = 0;
		for (int i = 0; i < nshards; i++) {
			if (mysql_query(raw[i], "SELECT id, user_id FROM rel"))
				die("reuse", mysql_error(raw[i]));
			MYSQL_RES *res = mysql_store_result(raw[i]);
			MYSQL_ROW row;
			while (res && (row = mysql_fetch_row(res)) && k < nent) {
				memcpy(ids[k].b, row[0], 16);
				memcpy(users[k].b, row[1], 16);
				k++;
			}
			if (res)
				mysql_free_result(res);
		}
		printf("reused %ld entities (and the relational copy) on %d shards\n", k, nshards);
		return;
	}
	for (int i = 0; i < nshards; i++) {
		raw_exec(raw[i], "DROP TABLE rel", 14);
		raw_exec(raw[i], ddl, strlen(ddl));
		raw_exec(raw[i], "DELETE FROM entities", 20);
	}
	for (long k = 0; k < nent; k++) {
		bs_id_generate(&ids[k]);
		bs_id_generate(&users[k]);
	}
	double t0 = now();
	load_t lt[64];
	for (int i = 0; i < nshards; i++) {
		lt[i].shard = i;
		pthread_create(&lt[i].tid, NULL, load_thread, &lt[i]);
	}
	for (int i = 0; i < nshards; i++)
		pthread_join(lt[i].tid, NULL);
	printf("loaded %ld entities (and the relational copy) on %d shards in %.1f s\n", nent, nshards, now() - t0);
}

int main(int argc, char **argv)
{
	bs_store_t *st;
	if (argc < 2) {
		fprintf(stderr, "usage: bench_backfill CONFIG [N]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0); /* figures as they come, into a file too */
	nent = argc > 2 ? atol(argv[2]) : 1000000;
	if (getenv("BENCH_RUNS"))
		runs = atoi(getenv("BENCH_RUNS"));
	runs = runs < 1 ? 1 : runs > 16 ? 16 : runs;
	if (bs_config_load(&cfg, argv[1]))
		die("config", bs_last_error());
	nshards = cfg->nshards;
	if (nshards > 64)
		die("config", "at most 64 shards");
	if (bs_store_open(&st, cfg) || bs_init(st))
		die("init", bs_last_error());
	ids = calloc((size_t)nent, sizeof *ids);
	users = calloc((size_t)nent, sizeof *users);
	for (int i = 0; i < nshards; i++) {
		raw[i] = raw_connect(i);
		server_pid[i] = server_pid_of(raw[i]);
	}
	load(st);
	if (part("floor") || part("backfill") || part("alter") || part("ptosc"))
		section_backfill(st);
	if (part("latency"))
		section_latency(st);
	if (part("lag"))
		section_lag(st);
	for (int i = 0; i < nshards; i++)
		mysql_close(raw[i]);
	bs_store_free(st);
	bs_config_free(cfg);
	free(ids);
	free(users);
	return 0;
}

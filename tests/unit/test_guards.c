/*
 * test_guards.c - the engine's own guards, called as a library (no CLI in
 * front), against the two test shards; what each call left is read back
 * with plain SQL through connections of our own:
 *
 *  - read-only: every call that changes data refuses with BS_EREADONLY and
 *    writes nothing, whatever the program in front checks itself;
 *  - catalog_ttl: a writer store that cached the catalog does not maintain
 *    an index created after it until its TTL has passed, then does;
 *  - index drop waits out writers' caches: a store that cached the catalog
 *    while the index was ready can still put during the drop's wait.
 *
 * Time is only read to decide what the rules promise (a put that ended
 * before the cache could expire, a put that began after it must have);
 * nothing here asserts a speed.
 */
#include "bagstore.h"
#include "rawsql.h"
#include "t.h"

#include <mysql.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TTL 4.0

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nap(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	nanosleep(&ts, NULL);
}

/* The test shards' configuration with another catalog_ttl, read-only or not. */
static bs_config_t *config_with(double ttl, bool read_only)
{
	bs_config_t *out = NULL;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	fprintf(f, "shards:\n");
	for (int i = 0; i < cfg->nshards; i++)
		fprintf(f, "  - {name: %s, host: %s, port: %u, database: %s, user: %s}\n", cfg->shards[i].name,
		        cfg->shards[i].host, cfg->shards[i].port, cfg->shards[i].database, cfg->shards[i].user);
	fprintf(f, "catalog_ttl: %g\nread_only: %s\n", ttl, read_only ? "true" : "false");
	fclose(f);
	if (bs_config_parse(&out, text, len, read_only ? "ro.yaml" : "rw.yaml")) {
		printf("config: %s\n", bs_last_error());
		exit(1);
	}
	free(text);
	return out;
}

/* {id: ID, PROP: k} */
static void bag_of(bs_value_t *bag, const bs_id_t *id, const char *prop, int64_t k)
{
	bs_value_t v;
	bs_value_map(bag);
	bs_value_bin(&v, id->b, 16);
	bs_map_set(bag, "id", 2, &v);
	bs_value_int(&v, k);
	bs_map_set(bag, prop, strlen(prop), &v);
}

static void id_of(bs_id_t *id, unsigned n)
{
	char hex[33];
	snprintf(hex, sizeof hex, "0000000000004000800000%010x", n);
	bs_id_parse(id, hex);
}

/* Rows of `table` for the entity on every shard, summed. */
static long long rows_for(const char *table, const char *col, const bs_id_t *id)
{
	char hex[33], q[256];
	long long n = 0;
	bs_id_hex(hex, id);
	snprintf(q, sizeof q, "SELECT COUNT(*) FROM `%s` WHERE %s=X'%s'", table, col, hex);
	for (int i = 0; i < cfg->nshards; i++)
		n += sql_int(i, q);
	return n;
}

static long long count_all(const char *q)
{
	long long n = 0;
	for (int i = 0; i < cfg->nshards; i++)
		n += sql_int(i, q);
	return n;
}

/* What read-only must leave alone, summed over the shards: entities,
 * catalog rows and their states, jobs and their states, index rows,
 * recorded verifies, audit rows. */
static void fingerprint_state(char *out, size_t size)
{
	snprintf(out, size,
	         "entities %lld, catalog %lld (ready %lld), jobs %lld (queued %lld), ix_ro %lld, verify %lld, audit "
	         "%lld",
	         count_all("SELECT COUNT(*) FROM entities"), count_all("SELECT COUNT(*) FROM bagstore_indexes"),
	         count_all("SELECT COUNT(*) FROM bagstore_indexes WHERE state='ready'"),
	         count_all("SELECT COUNT(*) FROM bagstore_jobs"),
	         count_all("SELECT COUNT(*) FROM bagstore_jobs WHERE state='queued'"),
	         count_all("SELECT COUNT(*) FROM ix_ro"), count_all("SELECT COUNT(*) FROM bagstore_verify"),
	         count_all("SELECT COUNT(*) FROM bagstore_audit"));
}

/* ------------------------------------------------------------ read-only */

static void test_read_only(void)
{
	bs_config_t *rw = config_with(1, false), *ro = config_with(1, true);
	bs_store_t *w = NULL, *r = NULL;
	bs_index_t def;
	bs_value_t bag, got;
	bs_id_t e, n;
	int64_t upd = 0;
	char before[512], after[512];

	CHECK_OK(bs_store_open(&w, rw));
	CHECK_OK(bs_store_open(&r, ro));
	CHECK_OK(bs_init(w));
	/* ix_ro ready (created on the empty store), entity e in it, then
	 * ix_bld building over it with its jobs queued */
	CHECK_OK(bs_index_parse(&def, "ix_ro", "k:int", "k"));
	CHECK_OK(bs_index_create(w, &def));
	id_of(&e, 1);
	bag_of(&bag, &e, "k", 1);
	CHECK_OK(bs_put(w, &bag, NULL));
	bs_value_clear(&bag);
	CHECK_OK(bs_index_parse(&def, "ix_bld", "k:int", "k"));
	CHECK_OK(bs_index_create(w, &def));
	CHECK(rows_for("ix_ro", "entity_id", &e) == 1, "e has its row in ix_ro");
	CHECK_OK(bs_get(&got, w, &e, &upd, NULL));
	bs_value_clear(&got);

	fingerprint_state(before, sizeof before);

	/* every call that changes data */
	id_of(&n, 2);
	bag_of(&bag, &n, "k", 2);
	CHECK_ERR(bs_put(r, &bag, NULL), BS_EREADONLY);
	CHECK(rows_for("entities", "id", &n) == 0, "the refused put of a new entity wrote no body");
	bs_value_clear(&bag);
	bag_of(&bag, &e, "k", 3);
	CHECK_ERR(bs_put(r, &bag, NULL), BS_EREADONLY);
	CHECK_ERR(bs_put_if(r, &bag, upd), BS_EREADONLY);
	bs_value_clear(&bag);
	bs_value_t two[2];
	bs_id_t ids[2];
	bool written[2] = { false, false };
	bag_of(&two[0], &n, "k", 2);
	bag_of(&two[1], &e, "k", 4);
	CHECK_ERR(bs_put_many(r, two, 2, ids, written), BS_EREADONLY);
	CHECK(!written[0] && !written[1], "the refused bulk put says nothing was written");
	CHECK(rows_for("entities", "id", &n) == 0, "the refused bulk put wrote no body");
	bs_encoded_t *enc = NULL;
	written[0] = written[1] = true;
	CHECK_OK(bs_encode_many(&enc, two, 2, ids)); /* encoding touches no store */
	CHECK_ERR(enc ? bs_put_encoded(r, enc, written) : -1, BS_EREADONLY);
	CHECK(!written[0] && !written[1], "the refused encoded put says nothing was written");
	CHECK(rows_for("entities", "id", &n) == 0, "the refused encoded put wrote no body");
	bs_encoded_free(enc);
	bs_value_clear(&two[0]);
	bs_value_clear(&two[1]);
	CHECK_ERR(bs_delete(r, &e), BS_EREADONLY);
	CHECK_ERR(bs_init(r), BS_EREADONLY);
	CHECK_OK(bs_index_parse(&def, "ix_new", "k:int", "k"));
	CHECK_ERR(bs_index_create(r, &def), BS_EREADONLY);
	CHECK_ERR(bs_index_drop(r, "ix_ro"), BS_EREADONLY);
	CHECK_ERR(bs_backfill_queue(r, "ix_bld"), BS_EREADONLY);
	CHECK_ERR(bs_job_control(r, "ix_bld", "pause"), BS_EREADONLY);
	CHECK_ERR(bs_job_control(r, "ix_bld", "cancel"), BS_EREADONLY);
	CHECK_ERR(bs_cleaner_backfill(r, "ix_bld", &(bs_cleaner_opts_t){ 0 }), BS_EREADONLY);
	CHECK_ERR(bs_cleaner_run(r, &(bs_cleaner_opts_t){ .once = true }), BS_EREADONLY);
	bs_drift_t d;
	CHECK_ERR(bs_verify(&d, r, "ix_ro", true), BS_EREADONLY);
	CHECK(strstr(bs_last_error(), "read-only") != NULL, "the message says read-only: %s", bs_last_error());

	/* nothing changed: e's body and row, the catalog, the jobs */
	fingerprint_state(after, sizeof after);
	CHECK_STR(after, before);
	int64_t upd2 = 0;
	CHECK_OK(bs_get(&got, w, &e, &upd2, NULL));
	bag_of(&bag, &e, "k", 1);
	CHECK(bs_value_equal(&got, &bag) && upd2 == upd, "e's body and updated are untouched");
	bs_value_clear(&got);
	bs_value_clear(&bag);
	CHECK(count_all("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA=DATABASE()"
	                " AND TABLE_NAME='ix_new'") == 0,
	      "no table made for the refused create");

	/* reading is allowed, and a read-only verify records nothing */
	CHECK_OK(bs_get(&got, r, &e, NULL, NULL));
	bs_value_clear(&got);
	bs_cond_t c = { "k", { 0 } };
	bs_value_int(&c.value, 1);
	bs_result_t res;
	CHECK_OK(bs_query(&res, r, "ix_ro", &c, 1, 0));
	CHECK(res.len == 1, "a read-only store queries (%zu found)", res.len);
	bs_result_free(&res);
	bs_value_clear(&c.value);
	/* drift planted by hand: verify --repair refuses to fix it, verify
	 * reads it and records nothing */
	char q[256], hex[33];
	bs_id_hex(hex, &e);
	snprintf(q, sizeof q, "DELETE FROM ix_ro WHERE entity_id=X'%s'", hex);
	for (int i = 0; i < cfg->nshards; i++)
		sql(i, q);
	fingerprint_state(before, sizeof before);
	CHECK_ERR(bs_verify(&d, r, "ix_ro", true), BS_EREADONLY);
	CHECK(rows_for("ix_ro", "entity_id", &e) == 0, "the refused repair wrote no row");
	CHECK_OK(bs_verify(&d, r, "ix_ro", false));
	CHECK(d.checked == 1 && d.missing == 1 && d.repaired == 0,
	      "a read-only verify reads: %lld checked, %lld missing", (long long)d.checked, (long long)d.missing);
	fingerprint_state(after, sizeof after);
	CHECK_STR(after, before);

	bs_store_free(r);
	bs_store_free(w);
	bs_config_free(ro);
	bs_config_free(rw);
}

/* ------------------------------------------------------------ catalog_ttl */

static void test_catalog_ttl(void)
{
	bs_config_t *c = config_with(TTL, false);
	bs_store_t *wr = NULL, *admin = NULL;
	bs_index_t def;
	bs_value_t bag;
	bs_id_t id;
	unsigned k = 100;

	CHECK_OK(bs_store_open(&wr, c));
	CHECK_OK(bs_store_open(&admin, c));
	/* the writer caches the catalog with its first put: no ix_ttl there */
	double t0 = mono();
	id_of(&id, k);
	bag_of(&bag, &id, "t", (int64_t)k);
	CHECK_OK(bs_put(wr, &bag, NULL));
	bs_value_clear(&bag);
	double t1 = mono();
	/* another store creates ix_ttl over the (non-empty) store: building,
	 * which writers maintain once they know of it */
	CHECK_OK(bs_index_parse(&def, "ix_ttl", "t:int", "t"));
	CHECK_OK(bs_index_create(admin, &def));
	bs_index_t cur;
	CHECK_OK(bs_index_get(&cur, admin, "ix_ttl"));
	CHECK(cur.state == BS_INDEX_BUILDING, "ix_ttl is building (%s)", bs_index_state_name(cur.state));

	/* puts until one begins after the cache must have expired */
	int early = 0, early_rows = 0, late = 0, late_missing = 0;
	double first_row = -1;
	while (mono() < t1 + TTL + 1.0) {
		k++;
		id_of(&id, k);
		bag_of(&bag, &id, "t", (int64_t)k);
		double start = mono();
		int rc = bs_put(wr, &bag, NULL);
		double end = mono();
		bs_value_clear(&bag);
		CHECK(rc == 0, "put %u: %s", k, bs_last_error());
		long long rows = rows_for("ix_ttl", "entity_id", &id);
		if (end < t0 + TTL) { /* the cache, loaded after t0, was still fresh */
			early++;
			early_rows += rows != 0;
		} else if (start > t1 + TTL) { /* loaded before t1: it had expired */
			late++;
			late_missing += rows != 1;
		}
		if (rows && first_row < 0)
			first_row = end - t0;
		nap(0.1);
	}
	CHECK(early > 0, "some puts ended before the TTL could pass (%d)", early);
	CHECK(early_rows == 0,
	      "a writer whose cache predates ix_ttl does not maintain it: %d of %d early puts have a row", early_rows,
	      early);
	CHECK(late > 0 && late_missing == 0, "once its TTL has passed it does: %d of %d late puts lack their row",
	      late_missing, late);
	CHECK(first_row >= TTL, "the first maintained put ended %.2f s after the cache was loaded (TTL %g)", first_row,
	      TTL);

	bs_store_free(admin);
	bs_store_free(wr);
	bs_config_free(c);
}

/* ------------------------------------------------------------ drop waits */

struct dropper {
	bs_store_t *st;
	int rc;
	char msg[512];
	double took;
	atomic_bool done;
};

static void *drop_thread(void *p)
{
	struct dropper *d = p;
	double t = mono();
	d->rc = bs_index_drop(d->st, "ix_drop");
	snprintf(d->msg, sizeof d->msg, "%s", bs_last_error());
	d->took = mono() - t;
	atomic_store(&d->done, true);
	return NULL;
}

static void test_drop_waits(void)
{
	bs_config_t *c = config_with(TTL, false);
	bs_store_t *admin = NULL, *wr = NULL;
	bs_index_t def;
	bs_value_t bag;
	bs_id_t id;

	CHECK_OK(bs_store_open(&admin, c));
	CHECK_OK(bs_index_parse(&def, "ix_drop", "d:int", "d"));
	CHECK_OK(bs_index_create(admin, &def));
	CHECK_OK(bs_cleaner_backfill(admin, "ix_drop", &(bs_cleaner_opts_t){ 0 }));
	bs_index_t cur;
	CHECK_OK(bs_index_get(&cur, admin, "ix_drop"));
	CHECK(cur.state == BS_INDEX_READY, "ix_drop is ready (%s)", bs_index_state_name(cur.state));

	/* a writer caches the catalog while ix_drop is ready */
	CHECK_OK(bs_store_open(&wr, c));
	double t0 = mono();
	id_of(&id, 500);
	bag_of(&bag, &id, "d", 500);
	CHECK_OK(bs_put(wr, &bag, NULL));
	bs_value_clear(&bag);
	CHECK(rows_for("ix_drop", "entity_id", &id) == 1, "the writer maintains ix_drop");

	struct dropper d = { .st = admin };
	atomic_init(&d.done, false);
	pthread_t tid;
	CHECK(pthread_create(&tid, NULL, drop_thread, &d) == 0, "drop thread started");
	/* wait (bounded) until every shard's catalog says disabled */
	double until = mono() + 10;
	while (count_all("SELECT COUNT(*) FROM bagstore_indexes WHERE name='ix_drop' AND state='disabled'") <
	               cfg->nshards &&
	       !atomic_load(&d.done) && mono() < until)
		nap(0.01);
	CHECK(count_all("SELECT COUNT(*) FROM bagstore_indexes WHERE name='ix_drop' AND state='disabled'") ==
	              cfg->nshards,
	      "ix_drop is disabled on every shard");
	/* while the writer's cache (ready) is fresh, it puts: every put must
	 * succeed, its index rows landing in a table that is still there */
	int puts = 0, failed = 0;
	char first_err[512] = "";
	for (unsigned k = 501; mono() < t0 + TTL - 0.5; k++) {
		id_of(&id, k);
		bag_of(&bag, &id, "d", (int64_t)k);
		double end;
		int rc = bs_put(wr, &bag, NULL);
		end = mono();
		bs_value_clear(&bag);
		if (end >= t0 + TTL) /* the cache may have expired: says nothing */
			break;
		puts++;
		if (rc) {
			if (!failed++)
				snprintf(first_err, sizeof first_err, "%s", bs_last_error());
		}
		nap(0.05);
	}
	CHECK(puts > 0, "the writer put during the drop's wait (%d puts)", puts);
	CHECK(failed == 0, "a writer with a cached catalog puts during the drop: %d of %d failed: %s", failed, puts,
	      first_err);
	pthread_join(tid, NULL);
	CHECK(d.rc == 0, "the drop succeeded: %s", d.msg);
	CHECK(d.took >= TTL, "the drop waited out catalog_ttl (%.2f s)", d.took);
	CHECK(count_all("SELECT COUNT(*) FROM bagstore_indexes WHERE name='ix_drop'") == 0,
	      "its catalog rows are gone");
	CHECK(count_all("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA=DATABASE()"
	                " AND TABLE_NAME='ix_drop'") == 0,
	      "its tables are gone");

	bs_store_free(wr);
	bs_store_free(admin);
	bs_config_free(c);
}

int main(void)
{
	if (test_config("guards"))
		return 1;
	test_read_only();
	test_catalog_ttl();
	test_drop_waits();
	raw_close_all();
	bs_config_free(cfg);
	mysql_library_end();
	return t_done("guards");
}

/*
 * test_locale.c - the engine under a locale whose decimal point is a comma
 * (de_DE.UTF-8, made for the run with localedef), as the console runs it
 * after setlocale(LC_ALL, "") for an operator whose LANG says so: SQL, the
 * servers' answers, JSON and the command line's values all write 0.5.
 * Against two real shards: float index rows written both ways (prepared,
 * and as text through the fan-out when an overwrite moves a row to the
 * other shard), found again by their values, a backfill checkpointing its
 * rate, and verify finding no drift. Before the engine formatted and read
 * numbers in the C locale, a float index row's text form read "0,5" (a
 * column count error) and verify saw every float row as drifted.
 */
#include "bagstore.h"
#include "rawsql.h"
#include "t.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define N 24

/* de_DE.UTF-8 under a directory of the run's own (LOCPATH), made with
 * localedef from the locales package's sources; 0 when in force. */
static int comma_locale(char *dir, size_t size)
{
	char cmd[600];
	const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(dir, size, "%s/bagstore-locale-%d", tmp, (int)getpid());
	if (mkdir(dir, 0700) && access(dir, W_OK))
		return -1;
	/* -c: a warning about the source (there are some) does not stop it */
	snprintf(cmd, sizeof cmd, "localedef -c -i de_DE -f UTF-8 '%s/de_DE.UTF-8' >/dev/null 2>&1", dir);
	if (system(cmd) == -1)
		return -1;
	setenv("LOCPATH", dir, 1);
	return setlocale(LC_ALL, "de_DE.UTF-8") ? 0 : -1;
}

static void bag_of(bs_value_t *bag, const bs_id_t *id, double f, int k)
{
	bs_value_t v;
	char t[24];
	bs_value_map(bag);
	bs_value_bin(&v, id->b, 16);
	bs_map_set(bag, "id", 2, &v);
	bs_value_float(&v, f);
	bs_map_set(bag, "f", 1, &v);
	snprintf(t, sizeof t, "t%d", k);
	bs_value_str(&v, t, strlen(t));
	bs_map_set(bag, "t", 1, &v);
}

/* The entities index `index` finds for f (their count; the first's id). */
static size_t found(bs_store_t *st, const char *index, double f, bs_id_t *first)
{
	bs_cond_t c = { "f", { 0 } };
	bs_result_t r;
	size_t n = (size_t)-1;
	bs_value_float(&c.value, f);
	if (!bs_query(&r, st, index, &c, 1, 0)) {
		n = r.len;
		if (n && first)
			*first = r.items[0].id;
		bs_result_free(&r);
	}
	bs_value_clear(&c.value);
	return n;
}

static void no_drift(bs_store_t *st, const char *index, const char *when)
{
	bs_drift_t d;
	int rc = bs_verify(&d, st, index, false);
	CHECK(rc == 0 && d.checked == N && d.missing == 0 && d.stale == 0 && d.orphaned == 0,
	      "%s: %s verified: %d (%s), %lld read, %lld missing, %lld stale, %lld orphaned", when, index, rc,
	      rc ? bs_last_error() : "", (long long)d.checked, (long long)d.missing, (long long)d.stale,
	      (long long)d.orphaned);
}

int main(void)
{
	char dir[512], buf[64];
	if (test_config("locale"))
		return 1;
	/* the hazard is live: this process prints 0,5 now */
	int made = comma_locale(dir, sizeof dir);
	CHECK(made == 0, "de_DE.UTF-8 made with localedef under %s and set (the locales package)", dir);
	snprintf(buf, sizeof buf, "%.1f", 0.5);
	CHECK(strcmp(buf, "0,5") == 0, "printf writes 0.5 as %s under it", buf);

	bs_store_t *st = NULL;
	bs_index_t ixf, ixt, ixb;
	bs_id_t ids[N];
	CHECK_OK(bs_store_open(&st, cfg));
	CHECK_OK(bs_init(st)); /* tests/run.sh reset the shards: no entity, no index */
	/* rows sharded by the float (an overwrite moves them between shards)
	 * and by the string (they stay where they are) */
	CHECK_OK(bs_index_parse(&ixf, "ix_f", "f:float", "f"));
	CHECK_OK(bs_index_create(st, &ixf));
	CHECK_OK(bs_index_parse(&ixt, "ix_t", "t:string(20),f:float", "t"));
	CHECK_OK(bs_index_create(st, &ixt));
	for (int k = 0; k < N; k++) {
		bs_value_t bag;
		bs_id_generate(&ids[k]);
		bag_of(&bag, &ids[k], k + 0.5, k);
		CHECK_OK(bs_put(st, &bag, NULL));
		bs_value_clear(&bag);
	}
	for (int k = 1; k < N; k += 2) { /* the old row deleted, the new one written, maybe elsewhere */
		bs_value_t bag;
		bag_of(&bag, &ids[k], k + 0.25, k);
		CHECK_OK(bs_put(st, &bag, NULL));
		bs_value_clear(&bag);
	}
	int right = 0, gone = 0;
	for (int k = 0; k < N; k++) {
		bs_id_t got;
		double now = k % 2 ? k + 0.25 : k + 0.5;
		right += found(st, "ix_f", now, &got) == 1 && !memcmp(got.b, ids[k].b, 16) &&
		         found(st, "ix_t", now, NULL) == 1;
		gone += k % 2 && found(st, "ix_f", k + 0.5, NULL) == 0;
	}
	CHECK(right == N, "each entity found by its float through both indexes: %d of %d", right, N);
	CHECK(gone == N / 2, "no entity found by the value it was overwritten from: %d of %d", gone, N / 2);
	CHECK(sql_int(0, "SELECT COUNT(*) FROM ix_f") + sql_int(1, "SELECT COUNT(*) FROM ix_f") == N,
	      "one ix_f row an entity");
	CHECK(sql_int(0, "SELECT COUNT(*) FROM ix_f WHERE f=3.25") + sql_int(1, "SELECT COUNT(*) FROM ix_f WHERE f=3.25") ==
	              1,
	      "the row holds 3.25, not 3 or 325");
	no_drift(st, "ix_f", "written");
	no_drift(st, "ix_t", "written");
	/* and verify sees a float that is wrong: one row moved by 1000 */
	int s = sql_int(0, "SELECT COUNT(*) FROM ix_f") ? 0 : 1;
	sql(s, "UPDATE ix_f SET f=f+1000 LIMIT 1");
	bs_drift_t d;
	CHECK(bs_verify(&d, st, "ix_f", false) == 0 && d.stale + d.missing >= 1, "the row moved by 1000 is drift: %lld stale, %lld missing",
	      (long long)d.stale, (long long)d.missing);
	CHECK_OK(bs_verify(&d, st, "ix_f", true));
	no_drift(st, "ix_f", "repaired");

	/* a backfill over what is there: its chunks' checkpoints write a rate */
	CHECK_OK(bs_index_parse(&ixb, "ix_b", "f:float,t:string(20)", "t"));
	CHECK_OK(bs_index_create(st, &ixb));
	CHECK_OK(bs_cleaner_backfill(st, "ix_b", NULL));
	no_drift(st, "ix_b", "backfilled");
	bs_job_list_t jobs;
	int unreachable = 0;
	if (!bs_job_list(&jobs, st, &unreachable)) {
		int done = 0;
		for (int k = 0; k < jobs.len; k++)
			done += !strcmp(jobs.items[k].index, "ix_b") && jobs.items[k].state == BS_JOB_DONE;
		CHECK(done == 2, "the backfill's job done on both shards: %d", done);
		bs_job_list_free(&jobs);
	} else {
		CHECK(false, "job list: %s", bs_last_error());
	}

	/* the values operators type and JSON carry */
	bs_value_t v;
	bs_prop_t fp = { "f", BS_COL_FLOAT, 0 };
	CHECK(bs_value_from_text(&v, &fp, "2.5") == 0 && v.type == BS_FLOAT && v.v.f == 2.5,
	      "a query value \"2.5\" reads as 2.5: %s", bs_last_error());
	bs_value_clear(&v);
	const char *js = "{\"f\": 2.5}";
	char *out = NULL;
	if (!bs_json_decode(&v, js, strlen(js), "test")) {
		const bs_value_t *f = bs_map_get(&v, "f");
		CHECK(f && f->type == BS_FLOAT && f->v.f == 2.5, "JSON's 2.5 decodes as 2.5");
		CHECK(bs_json_encode(&out, &v, 0) == 0 && out && strstr(out, "2.5"), "and encodes as 2.5: %s",
		      out ? out : bs_last_error());
		free(out);
		bs_value_clear(&v);
	} else {
		CHECK(false, "JSON decode: %s", bs_last_error());
	}
	bs_float_text(buf, 0.5);
	CHECK(strcmp(buf, "0.5") == 0, "bs_float_text writes %s", buf);

	bs_store_free(st);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (made == 0 && system(cmd) == -1)
		printf("locale: could not remove %s\n", dir);
	raw_close_all();
	bs_config_free(cfg);
	mysql_library_end();
	return t_done("locale");
}

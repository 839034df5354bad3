/*
 * plan.c - a query's plan (bs_explain) as text: the index and why, the
 * routing, MariaDB's estimates per shard (~), both steps' statements and,
 * after a run, the counts and times per shard and step. See plan.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "plan.h"

void plan_index_name(char *buf, size_t n, const bs_explain_t *e)
{
	size_t o = (size_t)snprintf(buf, n, "by");
	for (int k = 0; k < e->nconds && o + 1 < n && o < BS_NAME_MAX; k++)
		o += (size_t)snprintf(buf + o, n - o, "_%s", e->props[k]);
	if (n > BS_NAME_MAX)
		buf[BS_NAME_MAX] = '\0';
}

static void props(FILE *f, const bs_explain_t *e)
{
	for (int k = 0; k < e->nconds; k++)
		fprintf(f, "%s%s", k ? ", " : "", e->props[k]);
}

/* The suggestion when no ready index answers. */
static void none(FILE *f, const bs_explain_t *e)
{
	char name[BS_NAME_MAX + 1], c[32], t[32], r[32];

	fprintf(f, "Index: none can answer\n  why: %s\n", e->why);
	if (e->others[0])
		fprintf(f, "  holding them but not ready: %s\n", e->others);
	if (!e->suggest_on[0]) {
		fprintf(f, "Suggestion: %s\n", e->suggest_note[0] ? e->suggest_note : "none");
		return;
	}
	plan_index_name(name, sizeof name, e);
	fprintf(f, "Suggestion (the census, %s):\n  bagstore index create %s --on %s --shard-on %s\n", e->suggest_note,
	        name, e->suggest_on, e->suggest_shard_on);
	if (e->backfill_s >= 0)
		fprintf(f,
		        "  its backfill: ~%s for ~%s entities, at ~%s rows/s per shard (the slowest rate measured by "
		        "the last finished backfills, on %d of %d shards)\n",
		        fmt_secs(t, sizeof t, e->backfill_s), fmt_count(c, sizeof c, e->entities_est),
		        fmt_count(r, sizeof r, (int64_t)(e->backfill_rate + 0.5)), e->rate_shards, e->nshards);
	else
		fprintf(f,
		        "  its backfill: ~%s entities to read; no rate is known (no backfill has finished on these "
		        "shards), so no time is estimated\n",
		        fmt_count(c, sizeof c, e->entities_est));
}

static void estimates(FILE *f, const bs_explain_t *e)
{
	char n[32];

	fprintf(f, "Candidates per shard (MariaDB's EXPLAIN of step 1: estimates, ~):\n");
	fprintf(f, "  %-12s %12s  %-8s %s\n", "SHARD", "INDEX ROWS", "ACCESS", "KEY");
	for (int i = 0; i < e->nshards; i++) {
		const bs_explain_shard_t *s = &e->shards[i];
		if (!s->step1)
			fprintf(f, "  %-12s %12s  %-8s %s\n", s->name, "-", "-", "(not read: routed elsewhere)");
		else if (s->est_rows < 0)
			fprintf(f, "  %-12s %12s  %-8s %s\n", s->name, "?", "-", s->est_error);
		else {
			char v[40];
			snprintf(v, sizeof v, "~%s", fmt_count(n, sizeof n, s->est_rows));
			fprintf(f, "  %-12s %12s  %-8s %s%s\n", s->name, v, s->est_type,
			        s->est_key[0] ? s->est_key : "-",
			        !strcmp(s->est_type, "ALL") || !strcmp(s->est_type, "index")
			                ? " (the conditions do not start the key: every row of the index table is read)"
			                : "");
		}
	}
}

static void ran(FILE *f, const bs_explain_t *e)
{
	char a[32], b[32], c[32], d[32], m[32], t[32];
	int stmts0 = 0;
	double secs0 = 0;

	fprintf(f,
	        "Run (the query itself, no limit): %zu matched, from %zu index rows read (%zu dropped: gone or "
	        "changed; %zu corrupt), in %s\n",
	        e->matched, e->candidates, e->dropped, e->corrupt, fmt_ms(t, sizeof t, e->run_s));
	fprintf(f, "  %-12s %10s %10s %10s %10s %8s\n", "SHARD", "STEP1 ROWS", "STEP1 TIME", "STEP2 ROWS", "STEP2 TIME",
	        "MATCHED");
	for (int i = 0; i < e->nshards; i++) {
		const bs_explain_shard_t *s = &e->shards[i];
		stmts0 += s->stmts[0];
		secs0 += s->seconds[0];
		fprintf(f, "  %-12s %10s %10s %10s %10s %8s\n", s->name,
		        s->stmts[1] ? fmt_count(a, sizeof a, s->index_rows) : "-",
		        s->stmts[1] ? fmt_ms(b, sizeof b, s->seconds[1]) : "-",
		        s->stmts[2] ? fmt_count(c, sizeof c, s->entity_rows) : "-",
		        s->stmts[2] ? fmt_ms(d, sizeof d, s->seconds[2]) : "-", fmt_count(m, sizeof m, s->matched));
	}
	if (stmts0)
		fprintf(f, "  before step 1: %d catalog or map read%s, %s\n", stmts0, stmts0 == 1 ? "" : "s",
		        fmt_ms(t, sizeof t, secs0));
	fprintf(f, "  (times are each shard's own: the shards of a step are asked at once)\n");
}

char *plan_text(const bs_explain_t *e)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	fputs("Conditions on: ", f);
	props(f, e);
	fputc('\n', f);
	if (!e->index[0]) {
		none(f, e);
		fclose(f);
		return out;
	}
	fprintf(f, "Index: %s (%s; its rows sharded by %s)\n  why: %s\n", e->index, e->index_on, e->shard_on, e->why);
	if (e->others[0])
		fprintf(f, "  also holding them: %s\n", e->others);
	if (e->route_shard >= 0)
		fprintf(f, "Routing: one shard, %s: the conditions fix %s, whose value is in bucket %d of %d\n",
		        e->shards[e->route_shard].name, e->shard_on, e->route_bucket, e->buckets);
	else
		fprintf(f, "Routing: every shard: no condition on %s (the index's shard_on) fixes its bucket\n",
		        e->shard_on);
	estimates(f, e);
	fprintf(f, "Step 1, the index rows, on %s:\n  %s\n",
	        e->route_shard >= 0 ? e->shards[e->route_shard].name : "every shard at once", e->step1_sql);
	fprintf(f,
	        "Step 2, the entities, on each shard holding some that step 1 found (at once):\n  %s\n"
	        "  (each body is decoded and kept only if its values still match)\n",
	        e->step2_sql);
	if (e->ran)
		ran(f, e);
	fclose(f);
	return out;
}

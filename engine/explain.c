/*
 * explain.c - how a query would be answered (bs_explain), told from the
 * engine's own planning rather than a copy of it: the index is the one
 * bs_query_parse picks (querytext.c), the routing and both steps'
 * statements are bs_query's (query.c's bs__query_plan), the estimates are
 * MariaDB's own EXPLAIN of step 1 on each shard it reads, and with
 * BS_EXPLAIN_RUN the query itself runs (bs__query_run) with its statements
 * counted and timed per shard and step through the store's trace.
 *
 * When no ready index holds the properties, the census (census.c) samples
 * the bodies for the type each property's values fit, and the last
 * finished backfills' measured rates (jobs.c) give a backfill time.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void bs_explain_free(bs_explain_t *e)
{
	if (!e)
		return;
	free(e->step1_sql);
	free(e->step2_sql);
	free(e->shards);
	memset(e, 0, sizeof *e);
}

/* The property named in a "PROP=VALUE" text. */
static void prop_of_text(char *out, size_t n, const char *text)
{
	snprintf(out, n, "%.*s", (int)strcspn(text, "="), text);
}

static bool holds(const bs_index_t *idx, const bs_explain_t *e)
{
	for (int k = 0; k < e->nconds; k++) {
		bool found = false;
		for (int j = 0; j < idx->nprops && !found; j++)
			found = !strcmp(idx->props[j].name, e->props[k]);
		if (!found)
			return false;
	}
	return true;
}

/* "a, b, c" of the conditions' properties. */
static void props_list(char *out, size_t n, const bs_explain_t *e)
{
	size_t o = 0;
	out[0] = '\0';
	for (int k = 0; k < e->nconds && o < n; k++)
		o += (size_t)snprintf(out + o, n - o, "%s%s", k ? ", " : "", e->props[k]);
}

/* Which indexes hold every property: e->ready, e->others (those but the
 * chosen one, with their state), and why the chosen one (e->why). */
static void candidates(bs_explain_t *e, const bs_index_list_t *l)
{
	char props[400];
	size_t o = 0;
	int ties = 0;
	props_list(props, sizeof props, e);
	for (int i = 0; i < l->len; i++) {
		const bs_index_t *c = &l->items[i];
		if (!holds(c, e))
			continue;
		if (c->state == BS_INDEX_READY)
			e->ready++;
		if (!strcmp(c->name, e->index))
			continue;
		if (c->state == BS_INDEX_READY && e->index[0]) {
			const bs_index_t *mine = NULL;
			for (int j = 0; j < l->len; j++)
				if (!strcmp(l->items[j].name, e->index))
					mine = &l->items[j];
			ties += mine && c->nprops == mine->nprops;
		}
		if (o < sizeof e->others)
			o += (size_t)snprintf(e->others + o, sizeof e->others - o, "%s%s (%s, %d propert%s)",
			                      o ? "; " : "", c->name, bs_index_state_name(c->state), c->nprops,
			                      c->nprops == 1 ? "y" : "ies");
	}
	if (!e->index[0])
		return;
	if (e->named)
		snprintf(e->why, sizeof e->why, "named by the query");
	else if (e->ready == 1)
		snprintf(e->why, sizeof e->why, "the only ready index holding %s", props);
	else
		snprintf(e->why, sizeof e->why,
		         "of the %d ready indexes holding %s, the one with the fewest properties%s", e->ready, props,
		         ties ? " (and of those, the first by name)" : "");
}

/* ------------------------------------------------------------ estimates */

/* The value of column `name` in row, NULL when there is none. */
static const char *column(MYSQL_RES *res, MYSQL_ROW row, const char *name)
{
	unsigned n = mysql_num_fields(res);
	MYSQL_FIELD *f = mysql_fetch_fields(res);
	for (unsigned k = 0; k < n; k++)
		if (!strcasecmp(f[k].name, name))
			return row[k];
	return NULL;
}

/* MariaDB's EXPLAIN of step 1 on every shard it reads, at once: the row
 * of the index table (alias i). A shard that fails keeps its message. */
static int estimate(bs_explain_t *e, bs_store_t *st, const bs__query_plan_t *plan)
{
	bs__shard_stmt_t *q = calloc((size_t)st->n, sizeof *q);
	bs_buf_t sql = { 0 };
	int rc = 0;
	BS_ERR_ALLOC(q);
	bs__buf_puts(&sql, "EXPLAIN ");
	bs__buf_putn(&sql, plan->step1.ptr, plan->step1.len);
	if ((rc = bs__buf_ok(&sql)))
		goto done;
	for (int i = 0; i < st->n; i++)
		if (e->shards[i].step1) {
			q[i].sql = sql.ptr;
			q[i].len = sql.len;
		}
	bs__shard_run(st, q); /* each shard's failure is its own, below */
	bs_error_clear();
	for (int i = 0; i < st->n; i++) {
		bs_explain_shard_t *s = &e->shards[i];
		if (!q[i].sql)
			continue;
		if (q[i].rc || !q[i].nres) {
			snprintf(s->est_error, sizeof s->est_error, "%.*s", (int)sizeof s->est_error - 1,
			         q[i].rc ? q[i].msg : "EXPLAIN returned nothing");
			continue;
		}
		MYSQL_RES *res = q[i].res[0];
		MYSQL_ROW row;
		while ((row = mysql_fetch_row(res))) {
			const char *table = column(res, row, "table"), *rows = column(res, row, "rows");
			const char *type = column(res, row, "type"), *key = column(res, row, "key");
			if (!table || strcmp(table, "i"))
				continue;
			s->est_rows = rows ? strtoll(rows, NULL, 10) : -1;
			snprintf(s->est_type, sizeof s->est_type, "%s", type ? type : "");
			snprintf(s->est_key, sizeof s->est_key, "%s", key ? key : "");
		}
		if (s->est_rows < 0 && !s->est_error[0]) {
			/* MariaDB saw no row to read in the index table at all (an
			 * impossible condition, or an empty table it read already) */
			s->est_rows = 0;
			snprintf(s->est_type, sizeof s->est_type, "none");
		}
	}
done:
	bs__shard_stmts_clear(q, st->n);
	free(q);
	bs__buf_free(&sql);
	return rc;
}

/* ------------------------------------------------------------ no index */

/* The census's suggestion for the conditions' properties, and a backfill
 * time from the last finished backfills' rates. A census or job list that
 * fails leaves a note, not an error: why no index answers is the news. */
static void suggest(bs_explain_t *e, bs_store_t *st)
{
	bs_census_t c;
	bs_job_list_t jl = { 0 };
	double best_distinct = -1;
	size_t o = 0;

	if (bs_census(&c, st, 0, -1)) {
		snprintf(e->suggest_note, sizeof e->suggest_note, "the census could not sample the bodies: %s",
		         bs_last_error());
		bs_error_clear();
		return;
	}
	e->entities_est = c.entities_est;
	for (int k = 0; k < e->nconds; k++) {
		const bs_census_prop_t *p = NULL;
		for (int j = 0; j < c.nprops && !p; j++)
			if (!strcmp(c.props[j].path, e->props[k]))
				p = &c.props[j];
		if (!p || !p->suggest[0]) {
			snprintf(e->suggest_note, sizeof e->suggest_note, "%s: %s", e->props[k],
			         !p           ? "no sampled entity holds it"
			         : p->note[0] ? p->note
			                      : "no index type fits its values");
			e->suggest_on[0] = '\0';
			e->suggest_shard_on[0] = '\0';
			goto rate;
		}
		o += (size_t)snprintf(e->suggest_on + o, sizeof e->suggest_on - o, "%s%s:%s", k ? "," : "", p->path,
		                      p->suggest);
		if (o >= sizeof e->suggest_on)
			o = sizeof e->suggest_on - 1;
		if (p->distinct_est > best_distinct) {
			best_distinct = p->distinct_est;
			snprintf(e->suggest_shard_on, sizeof e->suggest_shard_on, "%.*s", BS_NAME_MAX, p->path);
		}
	}
	snprintf(e->suggest_note, sizeof e->suggest_note, "from a sample of %lld entities%s", (long long)c.sampled,
	         c.complete ? " (every one)" : "");
rate:
	bs_census_free(&c);
	/* the newest finished backfill of each shard: rows scanned over its time */
	e->backfill_s = e->backfill_rate = -1;
	if (bs_job_list(&jl, st, NULL)) {
		bs_error_clear();
		return;
	}
	double *rate = calloc((size_t)st->n, sizeof *rate);
	int64_t *when = calloc((size_t)st->n, sizeof *when);
	for (int k = 0; rate && when && k < jl.len; k++) {
		const bs_job_t *j = &jl.items[k];
		if (j->state != BS_JOB_DONE || j->shard < 0 || j->shard >= st->n || j->rows_scanned <= 0 ||
		    j->started_us <= 0 || j->finished_us <= j->started_us || j->finished_us < when[j->shard])
			continue;
		when[j->shard] = j->finished_us;
		rate[j->shard] = (double)j->rows_scanned / ((double)(j->finished_us - j->started_us) / 1e6);
	}
	for (int i = 0; rate && i < st->n; i++)
		if (rate[i] > 0) {
			e->rate_shards++;
			if (e->backfill_rate < 0 || rate[i] < e->backfill_rate)
				e->backfill_rate = rate[i];
		}
	/* each shard's share of the entities at the slowest measured rate: the
	 * shards backfill at once */
	if (e->backfill_rate > 0 && e->entities_est >= 0)
		e->backfill_s = ((double)e->entities_est / st->n) / e->backfill_rate;
	free(rate);
	free(when);
	bs_job_list_free(&jl);
}

/* ------------------------------------------------------------ the run */

struct run_trace {
	bs_explain_t *e;
	bs__query_stats_t *stats;
	bs_trace_fn prev;
	void *prev_arg;
};

/* Each statement of the run, counted and timed in its shard's step; the
 * caller's own trace told too. The query runs on this thread only. */
static void run_traced(void *arg, const bs_trace_t *t)
{
	struct run_trace *r = arg;
	int step = r->stats->step;
	if (t->shard_index >= 0 && t->shard_index < r->e->nshards && step >= 0 && step < 3) {
		r->e->shards[t->shard_index].stmts[step]++;
		r->e->shards[t->shard_index].seconds[step] += t->seconds;
	}
	if (r->prev)
		r->prev(r->prev_arg, t);
}

static int run(bs_explain_t *e, bs_store_t *st, const bs_query_spec_t *spec)
{
	int64_t *rows = calloc((size_t)st->n * 2, sizeof *rows);
	bs__query_stats_t stats = { 0, rows, rows ? rows + st->n : NULL };
	struct run_trace rt = { e, &stats, NULL, NULL };
	bs_result_t res = { 0 };
	int rc;
	BS_ERR_ALLOC(rows);
	bs_store_trace_get(st, &rt.prev, &rt.prev_arg);
	bs_store_trace(st, run_traced, &rt);
	double t0 = bs_now_mono();
	rc = bs__query_run(&res, st, spec->index, spec->conds, spec->nconds, 0, &stats);
	e->run_s = bs_now_mono() - t0;
	bs_store_trace(st, rt.prev, rt.prev_arg);
	if (!rc) {
		e->ran = true;
		e->candidates = res.candidates;
		e->matched = res.len;
		e->dropped = res.dropped;
		e->corrupt = res.corrupt;
		for (int i = 0; i < st->n; i++) {
			e->shards[i].index_rows = stats.index_rows[i];
			e->shards[i].entity_rows = stats.entity_rows[i];
		}
		for (size_t k = 0; k < res.len; k++)
			if (res.items[k].shard >= 0 && res.items[k].shard < st->n)
				e->shards[res.items[k].shard].matched++;
	}
	bs_result_free(&res);
	free(rows);
	return rc;
}

/* ------------------------------------------------------------ explain */

int bs_explain(bs_explain_t *out, bs_store_t *st, const char *index, const char *const *texts, int ntexts, int flags)
{
	bs_index_list_t l = { 0 };
	bs_query_spec_t spec = { 0 };
	bs__query_plan_t plan = { 0 };
	const bs_config_t *cfg = bs_store_config(st);
	int rc;

	memset(out, 0, sizeof *out);
	out->route_bucket = out->route_shard = -1;
	out->backfill_s = out->backfill_rate = -1;
	out->entities_est = -1;
	if (ntexts < 1)
		return bs_error(BS_EINVAL, "a query needs at least one PROP=VALUE");
	if (ntexts > BS_INDEX_MAX_PROPS)
		return bs_error(BS_EINVAL, "a query has at most %d conditions", BS_INDEX_MAX_PROPS);
	if (!(out->shards = calloc((size_t)st->n, sizeof *out->shards)))
		return bs__oom();
	out->nshards = st->n;
	for (int i = 0; i < st->n; i++) {
		snprintf(out->shards[i].name, sizeof out->shards[i].name, "%s", cfg->shards[i].name);
		out->shards[i].est_rows = -1;
	}
	out->nconds = ntexts;
	out->named = index != NULL;
	for (int k = 0; k < ntexts; k++)
		prop_of_text(out->props[k], sizeof out->props[k], texts[k]);
	if ((rc = bs_index_list(&l, st)))
		goto done;
	/* the index as a query picks it; none ready: why, and a suggestion */
	rc = bs_query_parse(&spec, &l, index, texts, ntexts);
	if (rc == BS_ENOTFOUND && !index) {
		snprintf(out->why, sizeof out->why, "%s", bs_last_error());
		bs_error_clear();
		candidates(out, &l);
		if (out->others[0] && strstr(out->others, "(building"))
			snprintf(out->suggest_note, sizeof out->suggest_note,
			         "none: an index holding them is building "
			         "(`bagstore backfill list` shows its backfill)");
		else
			suggest(out, st);
		rc = 0;
		goto done;
	}
	if (rc)
		goto done;
	snprintf(out->index, sizeof out->index, "%s", spec.index);
	candidates(out, &l);
	/* the plan bs_query follows; an index named but not ready cannot answer */
	if ((rc = bs__query_plan(&plan, st, spec.index, spec.conds, spec.nconds)) == BS_ECONFLICT) {
		snprintf(out->why, sizeof out->why, "%s", bs_last_error());
		snprintf(out->suggest_note, sizeof out->suggest_note,
		         "index %s is not ready: `bagstore backfill list` "
		         "shows its backfill",
		         spec.index);
		bs_error_clear();
		out->index[0] = '\0';
		rc = 0;
		goto done;
	}
	if (rc)
		goto done;
	bs_index_format_on(out->index_on, sizeof out->index_on, &plan.index);
	snprintf(out->shard_on, sizeof out->shard_on, "%s", plan.index.props[plan.index.shard_on].name);
	out->buckets = plan.buckets;
	out->route_bucket = plan.route_bucket;
	out->route_shard = plan.route_shard;
	if (!(out->step1_sql = strdup(plan.step1.ptr)) || !(out->step2_sql = strdup(plan.step2.ptr))) {
		rc = bs__oom();
		goto done;
	}
	for (int i = 0; i < st->n; i++)
		out->shards[i].step1 = plan.route_shard < 0 || plan.route_shard == i;
	if ((rc = estimate(out, st, &plan)))
		goto done;
	if (flags & BS_EXPLAIN_RUN)
		rc = run(out, st, &spec);
done:
	bs__query_plan_free(&plan);
	bs_query_spec_clear(&spec);
	bs_index_list_free(&l);
	if (rc)
		bs_explain_free(out);
	return rc;
}

int bs_explain_text(bs_explain_t *out, bs_store_t *st, const char *text, int flags)
{
	char *buf = strdup(text ? text : ""), *words[BS_INDEX_MAX_PROPS + 1], *index = NULL;
	int n = 0, rc;

	memset(out, 0, sizeof *out);
	BS_ERR_ALLOC(buf);
	if (!(rc = bs__query_split(&index, words, &n, buf)))
		rc = bs_explain(out, st, index, (const char *const *)words, n, flags);
	free(buf);
	return rc;
}

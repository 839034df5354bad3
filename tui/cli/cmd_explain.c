/*
 * cmd_explain.c - `bagstore explain [--index NAME] [--run] [--json]
 * PROP=VALUE...`: how a query would be answered (bs_explain): the index
 * and why (or why none can, with the census's suggestion), the routing,
 * MariaDB's estimates per shard, both steps' statements, and with --run
 * the query's real counts and times per shard and step. The text is
 * tui/common/plan.c's, which the console's :explain shows too.
 */
#include "cli.h"
#include "fmt.h"
#include "plan.h"

#include <stdlib.h>
#include <string.h>

/* A number, or null when unknown (negative). */
static json_t *jnum_or_null(double v)
{
	return v < 0 ? json_null() : json_real(v);
}

static json_t *shard_json(const bs_explain_t *e, const bs_explain_shard_t *s)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "name", json_string(s->name));
	json_object_set_new(o, "step1", json_boolean(s->step1));
	json_object_set_new(o, "est_rows", s->est_rows < 0 ? json_null() : json_integer(s->est_rows));
	json_object_set_new(o, "est_type", cli_jstr(s->est_type));
	json_object_set_new(o, "est_key", cli_jstr(s->est_key));
	json_object_set_new(o, "est_error", cli_jstr(s->est_error));
	if (e->ran) {
		json_t *r = json_object();
		json_object_set_new(r, "step1_statements", json_integer(s->stmts[1]));
		json_object_set_new(r, "step1_rows", json_integer(s->index_rows));
		json_object_set_new(r, "step1_seconds", json_real(s->seconds[1]));
		json_object_set_new(r, "step2_statements", json_integer(s->stmts[2]));
		json_object_set_new(r, "step2_rows", json_integer(s->entity_rows));
		json_object_set_new(r, "step2_seconds", json_real(s->seconds[2]));
		json_object_set_new(r, "other_statements", json_integer(s->stmts[0]));
		json_object_set_new(r, "other_seconds", json_real(s->seconds[0]));
		json_object_set_new(r, "matched", json_integer(s->matched));
		json_object_set_new(o, "run", r);
	}
	return o;
}

static json_t *explain_json(const bs_explain_t *e)
{
	json_t *doc = json_object(), *conds = json_array(), *shards = json_array();
	char name[BS_NAME_MAX + 1];

	if (!doc || !conds || !shards) {
		json_decref(doc);
		json_decref(conds);
		json_decref(shards);
		return NULL;
	}
	for (int k = 0; k < e->nconds; k++)
		json_array_append_new(conds, json_string(e->props[k]));
	json_object_set_new(doc, "conditions", conds);
	json_object_set_new(doc, "index", e->index[0] ? json_string(e->index) : json_null());
	json_object_set_new(doc, "named", json_boolean(e->named));
	json_object_set_new(doc, "why", cli_jstr(e->why));
	json_object_set_new(doc, "ready_indexes", json_integer(e->ready));
	json_object_set_new(doc, "others", cli_jstr(e->others));
	if (!e->index[0]) {
		json_t *s = json_object();
		plan_index_name(name, sizeof name, e);
		json_object_set_new(s, "name", e->suggest_on[0] ? json_string(name) : json_null());
		json_object_set_new(s, "on", cli_jstr(e->suggest_on));
		json_object_set_new(s, "shard_on", cli_jstr(e->suggest_shard_on));
		json_object_set_new(s, "note", cli_jstr(e->suggest_note));
		json_object_set_new(s, "entities_est",
		                    e->entities_est < 0 ? json_null() : json_integer(e->entities_est));
		json_object_set_new(s, "backfill_seconds_est", jnum_or_null(e->backfill_s));
		json_object_set_new(s, "rate_rows_per_s", jnum_or_null(e->backfill_rate));
		json_object_set_new(s, "rate_shards", json_integer(e->rate_shards));
		json_object_set_new(doc, "suggestion", s);
		json_decref(shards);
		return doc;
	}
	json_object_set_new(doc, "index_on", cli_jstr(e->index_on));
	json_object_set_new(doc, "shard_on", cli_jstr(e->shard_on));
	json_object_set_new(doc, "buckets", json_integer(e->buckets));
	json_object_set_new(doc, "route_shard",
	                    e->route_shard >= 0 ? json_string(e->shards[e->route_shard].name) : json_null());
	json_object_set_new(doc, "route_bucket", e->route_bucket >= 0 ? json_integer(e->route_bucket) : json_null());
	json_object_set_new(doc, "step1_sql", cli_jstr(e->step1_sql));
	json_object_set_new(doc, "step2_sql", cli_jstr(e->step2_sql));
	for (int i = 0; i < e->nshards; i++)
		json_array_append_new(shards, shard_json(e, &e->shards[i]));
	json_object_set_new(doc, "shards", shards);
	if (e->ran) {
		json_t *r = json_object();
		json_object_set_new(r, "matched", json_integer((json_int_t)e->matched));
		json_object_set_new(r, "candidates", json_integer((json_int_t)e->candidates));
		json_object_set_new(r, "dropped", json_integer((json_int_t)e->dropped));
		json_object_set_new(r, "corrupt", json_integer((json_int_t)e->corrupt));
		json_object_set_new(r, "seconds", json_real(e->run_s));
		json_object_set_new(doc, "run", r);
	}
	return doc;
}

int cli_cmd_explain(cli_ctx_t *ctx, int argc, char **argv)
{
	const char *index = NULL;
	bool run = false, json = false;
	const cli_opt_t opts[] = {
		{ "index", &index, NULL },
		{ "run", NULL, &run },
		{ "json", NULL, &json },
		{ NULL, NULL, NULL },
	};
	cli_args_t args = { 0 };
	bs_explain_t e = { 0 };
	char quoted[1024], *text = NULL;
	json_t *doc = NULL;
	int i, rc;

	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 1, -1)) != 0)
		goto done;
	for (i = 0; i < args.n; i++)
		if (!strchr(args.v[i], '=') || args.v[i][0] == '=') {
			rc = cli_usage_error(ctx, "expected PROP=VALUE, got %s",
			                     fmt_quote(quoted, sizeof quoted, args.v[i]));
			goto done;
		}
	if ((rc = cli_open(ctx)) < 0)
		goto done;
	if ((rc = bs_explain(&e, ctx->st, index, (const char *const *)args.v, args.n, run ? BS_EXPLAIN_RUN : 0)) < 0)
		goto done;
	if (json) {
		if (!(doc = explain_json(&e))) {
			rc = bs_error(BS_ENOMEM, "out of memory");
			goto done;
		}
		rc = cli_json_print(doc);
	} else if (!(text = plan_text(&e))) {
		rc = bs_error(BS_ENOMEM, "out of memory");
	} else {
		fputs(text, stdout);
	}
done:
	json_decref(doc);
	free(text);
	bs_explain_free(&e);
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

/*
 * cmd_census.c - `properties`: the property census of the bodies
 * (bs_census): every property path of a sample of up to N bodies per shard,
 * with its types and their shares, presence, distinct values, largest
 * value, an example, the indexes holding it and the index type it would
 * fit; as a table or JSON.
 */
#include "cli.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

/* "string 90%, int 10%" into buf: the kinds seen, most first. */
static char *types_text(char *buf, size_t n, const bs_census_prop_t *p)
{
	bool done[BS_CT_COUNT] = { false };
	char pct[16];
	size_t o = 0;

	buf[0] = 0;
	for (;;) {
		int best = -1;
		for (int k = 0; k < BS_CT_COUNT; k++)
			if (!done[k] && p->types[k] && (best < 0 || p->types[k] > p->types[best]))
				best = k;
		if (best < 0 || o + 2 >= n)
			break;
		done[best] = true;
		o += (size_t)snprintf(buf + o, n - o, "%s%s %s", o ? ", " : "",
		                      bs_census_type_name((bs_census_type_t)best),
		                      fmt_share(pct, sizeof pct, p->types[best], p->values));
	}
	return buf;
}

/* The largest value: "80 ch", "16 B", "[12]", "-". */
static char *largest_text(char *buf, size_t n, const bs_census_prop_t *p)
{
	if (p->max_chars)
		snprintf(buf, n, "%" PRId64 " ch", p->max_chars);
	else if (p->max_bytes)
		snprintf(buf, n, "%" PRId64 " B", p->max_bytes);
	else if (p->max_items)
		snprintf(buf, n, "%" PRId64 " items", p->max_items);
	else
		snprintf(buf, n, "-");
	return buf;
}

static json_t *prop_json(const bs_census_prop_t *p, const bs_census_t *c)
{
	json_t *o = json_object(), *types = json_object();

	if (!o || !types) {
		json_decref(o);
		json_decref(types);
		return NULL;
	}
	for (int k = 0; k < BS_CT_COUNT; k++)
		if (p->types[k])
			json_object_set_new(types, bs_census_type_name((bs_census_type_t)k), json_integer(p->types[k]));
	json_object_set_new(o, "path", json_string(p->path));
	json_object_set_new(o, "present", json_integer(p->present));
	json_object_set_new(o, "present_share", json_real(c->sampled ? (double)p->present / (double)c->sampled : 0));
	json_object_set_new(o, "values", json_integer(p->values));
	json_object_set_new(o, "types", types);
	json_object_set_new(o, "distinct", json_integer(p->distinct));
	json_object_set_new(o, "distinct_capped", json_boolean(p->distinct_capped));
	json_object_set_new(o, "distinct_est", json_real(round(p->distinct_est)));
	json_object_set_new(o, "max_bytes", json_integer(p->max_bytes));
	json_object_set_new(o, "max_chars", json_integer(p->max_chars));
	json_object_set_new(o, "max_items", json_integer(p->max_items));
	json_object_set_new(o, "example", cli_jstr(p->example));
	json_object_set_new(o, "indexes", cli_jstr(p->indexes));
	json_object_set_new(o, "suggest", cli_jstr(p->suggest));
	json_object_set_new(o, "fits", json_integer(p->fits));
	json_object_set_new(o, "note", cli_jstr(p->note));
	return o;
}

static int census_json(const bs_census_t *c)
{
	json_t *doc = json_object(), *arr = json_array();
	int rc;

	if (!doc || !arr) {
		json_decref(doc);
		json_decref(arr);
		return bs_error(BS_ENOMEM, "out of memory");
	}
	json_object_set_new(doc, "sampled", json_integer(c->sampled));
	json_object_set_new(doc, "per_shard", json_integer(c->per_shard));
	json_object_set_new(doc, "entities_est", json_integer(c->entities_est));
	json_object_set_new(doc, "complete", json_boolean(c->complete));
	json_object_set_new(doc, "shards_sampled", json_integer(c->shards_sampled));
	json_object_set_new(doc, "shards_unreachable", json_integer(c->shards_unreachable));
	json_object_set_new(doc, "corrupt", json_integer(c->corrupt));
	for (int k = 0; k < c->nprops; k++)
		json_array_append_new(arr, prop_json(&c->props[k], c));
	json_object_set_new(doc, "properties", arr);
	rc = cli_json_print(doc);
	json_decref(doc);
	return rc;
}

static int census_table(const bs_census_t *c)
{
	static const char *const head[] = { "PATH",    "TYPES",   "PRESENT", "DISTINCT",
		                            "LARGEST", "SUGGEST", "INDEXES", "EXAMPLE" };
	cli_table_t t = { .ncols = 8, .right = (1u << 2) | (1u << 3) | (1u << 4) };
	char ent[32];
	int rc;

	printf("%" PRId64 " entities sampled (up to %d per shard) of %s%s%s on %d shard%s%s\n", c->sampled,
	       c->per_shard, c->complete ? "" : "~", fmt_count(ent, sizeof ent, c->entities_est),
	       c->complete ? " (every one)" : "", c->shards_sampled, c->shards_sampled == 1 ? "" : "s",
	       c->corrupt ? "; corrupt bodies left out" : "");
	if ((rc = cli_table_add(&t, head, NULL)) < 0)
		goto done;
	for (int k = 0; k < c->nprops && !rc; k++) {
		const bs_census_prop_t *p = &c->props[k];
		char types[128], present[48], distinct[48], largest[32];
		fmt_share(present, sizeof present, p->present, c->sampled);
		snprintf(distinct, sizeof distinct, "%s%.0f%s", c->complete ? "" : "~", p->distinct_est,
		         p->distinct_capped ? "+" : "");
		const char *cells[8] = { p->path,
			                 types_text(types, sizeof types, p),
			                 present,
			                 distinct,
			                 largest_text(largest, sizeof largest, p),
			                 p->suggest[0] ? p->suggest : "-",
			                 p->indexes[0] ? p->indexes : "-",
			                 p->example[0] ? p->example : "-" };
		rc = cli_table_add(&t, cells, NULL);
	}
	if (!rc)
		cli_table_print(stdout, &t);
done:
	cli_table_free(&t);
	return rc;
}

int cli_cmd_properties(cli_ctx_t *ctx, int argc, char **argv)
{
	const char *sample = NULL, *shard = NULL;
	bool json = false;
	const cli_opt_t opts[] = {
		{ "sample", &sample, NULL }, { "shard", &shard, NULL }, { "json", NULL, &json }, { NULL, NULL, NULL }
	};
	cli_args_t args = { 0 };
	bs_census_t c = { 0 };
	int rc, n = 1000, only = -1;
	char *end = NULL;

	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 0, 0)) != 0)
		goto done;
	long sv = sample ? strtol(sample, &end, 10) : 0; /* range checked before it narrows */
	if (sample && (sv < 1 || sv > 100000 || *end || end == sample)) {
		rc = cli_usage_error(ctx, "--sample takes a number of bodies per shard, 1 to 100000");
		goto done;
	}
	if (sample)
		n = (int)sv;
	if ((rc = cli_open(ctx)) < 0)
		goto done;
	if (shard) {
		for (int i = 0; i < ctx->cfg->nshards; i++)
			if (!strcmp(ctx->cfg->shards[i].name, shard))
				only = i;
		if (only < 0) {
			rc = bs_error(BS_ENOTFOUND, "no shard named %s in %s", shard, ctx->cfg->path);
			goto done;
		}
	}
	if ((rc = bs_census(&c, ctx->st, n, only)) < 0)
		goto done;
	rc = json ? census_json(&c) : census_table(&c);
	if (!rc && c.corrupt)
		fprintf(stderr, "bagstore: %" PRId64 " corrupt bodies left out; the first: %s\n", c.corrupt,
		        c.corrupt_first);
	if (!rc && c.shards_unreachable)
		rc = bs_error(BS_EUNREACHABLE, "%d shard%s not sampled: %s", c.shards_unreachable,
		              c.shards_unreachable == 1 ? "" : "s", c.unreachable_first);
done:
	bs_census_free(&c);
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

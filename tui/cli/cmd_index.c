/*
 * cmd_index.c - the index catalog: `index list` (with InnoDB's row
 * estimates, as a table or JSON), `index create`, and `index drop` (which
 * only says what it would drop unless --yes is given).
 */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

static int index_get(bs_index_t *out, cli_ctx_t *ctx, const char *name)
{
	int rc = bs_index_get(out, ctx->st, name);

	if (rc == BS_ENOTFOUND)
		bs_error(rc, "index %s not found", name);
	return rc;
}

/* Rows of an index per shard and in all, by InnoDB's estimate; false when
 * the count could not be had (the error is cleared: it is shown as "-"). */
static bool index_rows(int64_t *counts, int64_t *total, cli_ctx_t *ctx, const char *name)
{
	int i, n = bs_store_nshards(ctx->st);

	*total = 0;
	if (bs_index_rows(counts, ctx->st, name, false) < 0) {
		bs_error_clear();
		return false;
	}
	for (i = 0; i < n; i++)
		*total += counts[i];
	return true;
}

/* ------------------------------------------------------------ index list */

/* What `index list` shows of one index. */
typedef struct {
	const bs_index_t *x;
	const char *shard_on; /* the routing property's name, "-" when none */
	char on[1024];        /* PROP:TYPE,... */
	bool have_rows;       /* counts and total are known */
	int64_t total;
	const int64_t *counts; /* per shard */
	int nshards;
	bs_store_t *st;
} index_info_t;

static int index_list_json(json_t *arr, const index_info_t *in)
{
	const bs_index_t *x = in->x;
	const bs_config_t *cfg = bs_store_config(in->st);
	json_t *o = json_object(), *per = in->have_rows ? json_object() : json_null();
	char created[32];
	int s;

	if (!o || !per || json_array_append_new(arr, o) < 0) {
		json_decref(per);
		return bs_error(BS_ENOMEM, "out of memory");
	}
	for (s = 0; in->have_rows && s < in->nshards; s++)
		json_object_set_new(per, cfg->shards[s].name, json_integer(in->counts[s]));
	json_object_set_new(o, "name", json_string(x->name));
	json_object_set_new(o, "state", json_string(bs_index_state_name(x->state)));
	json_object_set_new(o, "on", json_string(in->on));
	json_object_set_new(o, "shard_on", json_string(in->shard_on));
	json_object_set_new(o, "rows", in->have_rows ? json_integer(in->total) : json_null());
	json_object_set_new(o, "rows_per_shard", per);
	json_object_set_new(o, "diverged", json_boolean(x->diverged));
	json_object_set_new(o, "divergence", x->diverged ? json_string(x->divergence) : json_null());
	json_object_set_new(o, "created",
	                    x->created_us ? json_string(fmt_iso_utc(created, sizeof created, x->created_us))
	                                  : json_null());
	return 0;
}

static int index_list_row(cli_table_t *t, const index_info_t *in)
{
	char rows[32] = "-", state[32], tail[256];
	const char *cells[5] = { in->x->name, state, in->on, in->shard_on, rows };

	if (in->have_rows)
		snprintf(rows, sizeof rows, "~%" PRId64, in->total); /* InnoDB's estimate */
	/* shards that disagree: marked, and said under the row */
	snprintf(state, sizeof state, "%s%s", bs_index_state_name(in->x->state), in->x->diverged ? "!" : "");
	snprintf(tail, sizeof tail, "(the shards' catalogs differ: %s; the cleaner completes it)", in->x->divergence);
	return cli_table_add(t, cells, in->x->diverged ? tail : NULL);
}

int cli_cmd_index_list(cli_ctx_t *ctx, int argc, char **argv)
{
	static const char *const head[] = { "NAME", "STATE", "ON", "SHARD_ON", "ROWS" };
	bool json = false;
	const cli_opt_t opts[] = { { "json", NULL, &json }, { NULL, NULL, NULL } };
	cli_args_t args = { 0 };
	bs_index_list_t l = { 0 };
	cli_table_t t = { .ncols = 5, .right = 1u << 4 };
	json_t *arr = NULL;
	int64_t *counts = NULL;
	int i, rc;

	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 0, 0)) != 0)
		goto done;
	if ((rc = cli_open(ctx)) < 0)
		goto done;
	if (!(counts = cli_per_shard_alloc(ctx, sizeof *counts))) {
		rc = BS_ENOMEM;
		goto done;
	}
	if (json && !(arr = json_array())) {
		rc = bs_error(BS_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = bs_index_list(&l, ctx->st)) < 0)
		goto done;
	if (!json && (rc = cli_table_add(&t, head, NULL)) < 0)
		goto done;
	for (i = 0; i < l.len; i++) {
		const bs_index_t *x = &l.items[i];
		index_info_t in = { .x = x, .counts = counts, .nshards = bs_store_nshards(ctx->st), .st = ctx->st };

		in.shard_on = x->shard_on >= 0 && x->shard_on < x->nprops ? x->props[x->shard_on].name : "-";
		in.have_rows = index_rows(counts, &in.total, ctx, x->name);
		bs_index_format_on(in.on, sizeof in.on, x);
		if ((rc = json ? index_list_json(arr, &in) : index_list_row(&t, &in)) < 0)
			goto done;
	}
	if (json)
		rc = cli_json_print(arr);
	else
		cli_table_print(stdout, &t);
	/* shown, then said: a shard that did not answer is exit 1 */
	if (rc >= 0 && l.unreachable)
		rc = bs_error(BS_EUNREACHABLE, "%d shard%s did not answer: the indexes are the other shards' catalogs%s (%s)",
		              l.unreachable, l.unreachable == 1 ? "" : "s",
		              l.len ? ", their rows not counted" : "; they list none", l.unreachable_first);
done:
	json_decref(arr);
	cli_table_free(&t);
	bs_index_list_free(&l);
	free(counts);
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------ create, drop */

int cli_cmd_index_create(cli_ctx_t *ctx, int argc, char **argv)
{
	const char *on = NULL, *shard_on = NULL;
	const cli_opt_t opts[] = { { "on", &on, NULL }, { "shard-on", &shard_on, NULL }, { NULL, NULL, NULL } };
	cli_args_t args = { 0 };
	bs_index_t def, got;
	int rc;

	memset(&def, 0, sizeof def);
	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 1, 1)) != 0)
		goto done;
	if (!on || !shard_on) {
		rc = cli_usage_error(ctx, "index create needs --on and --shard-on");
		goto done;
	}
	if ((rc = bs_index_parse(&def, args.v[0], on, shard_on)) < 0)
		goto done;
	if ((rc = cli_open(ctx)) < 0)
		goto done;
	if ((rc = bs_index_create(ctx->st, &def)) < 0)
		goto done;
	if ((rc = bs_index_get(&got, ctx->st, def.name)) < 0)
		goto done;
	printf("created index %s (%s) on %d shards\n", got.name, bs_index_state_name(got.state),
	       bs_store_nshards(ctx->st));
	/* MySQL has no grant on a table-name pattern: the app's account
	 * writes this table's rows only once granted it (doc/DESIGN.md,
	 * Privileges) */
	fprintf(stderr,
	        "bagstore: the app role's account needs grants on the new table %s: "
	        "`bagstore grants --role app --index %s` prints them (before index create, so that no put is "
	        "refused; after it, at once)\n",
	        got.name, got.name);
	char detail[1100];
	snprintf(detail, sizeof detail, "on %s shard_on %s", on, shard_on);
	cli_audit(ctx, "index.create", got.name, detail);
done:
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

/* drop without --yes: the error that says what would be dropped, with the
 * rows per shard when they can be counted. */
static int drop_refusal(cli_ctx_t *ctx, const bs_index_t *idx)
{
	const bs_config_t *cfg = bs_store_config(ctx->st);
	int n = bs_store_nshards(ctx->st), i, rc;
	int64_t *counts, total;
	char per[2048] = "";
	size_t off = 0;

	if (!(counts = cli_per_shard_alloc(ctx, sizeof *counts)))
		return BS_ENOMEM;
	if (index_rows(counts, &total, ctx, idx->name)) {
		for (i = 0; i < n && off < sizeof per; i++)
			off += (size_t)snprintf(per + off, sizeof per - off, "%s%s %" PRId64, i ? ", " : "",
			                        cfg->shards[i].name, counts[i]);
		rc = bs_error(BS_EINVAL,
		              "would drop index %s (%s): about %" PRId64
		              " rows on %d shards (%s); add --yes to drop it",
		              idx->name, bs_index_state_name(idx->state), total, n, per);
	} else {
		rc = bs_error(BS_EINVAL,
		              "would drop index %s (%s) on %d shards "
		              "(rows unknown); add --yes to drop it",
		              idx->name, bs_index_state_name(idx->state), n);
	}
	free(counts);
	return rc;
}

int cli_cmd_index_drop(cli_ctx_t *ctx, int argc, char **argv)
{
	bool yes = false;
	const cli_opt_t opts[] = { { "yes", NULL, &yes }, { NULL, NULL, NULL } };
	cli_args_t args = { 0 };
	bs_index_t idx;
	int rc;

	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 1, 1)) != 0)
		goto done;
	if ((rc = cli_open(ctx)) < 0)
		goto done;
	if ((rc = index_get(&idx, ctx, args.v[0])) < 0)
		goto done;
	if (!yes) {
		rc = drop_refusal(ctx, &idx);
		goto done;
	}
	/* Recorded first: a drop cut short (a shard lost, a kill during its
	 * wait for the writers' caches) has disabled the index already, and the
	 * cleaner completes it; it must be on record all the same. */
	cli_audit(ctx, "index.drop", idx.name, bs_index_state_name(idx.state));
	if ((rc = bs_index_drop(ctx->st, idx.name)) < 0)
		goto done;
	printf("dropped index %s\n", idx.name);
done:
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

/*
 * cmd_export.c - `bagstore export`: every entity (or those of one shard,
 * updated since a moment, or matching through an index) as JSON Lines, in
 * the form `get` prints, newest first or shard by shard in insertion
 * order; what `put` reads back. A progress line on stderr on a terminal.
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fmt.h"

/* TIME: unix seconds ("1700000000.5") or UTC "YYYY-MM-DD[ T]HH:MM:SS[.ffffff][Z]". */
static int parse_since(cli_ctx_t *ctx, int64_t *out, const char *text)
{
	char *end;
	errno = 0;
	double secs = strtod(text, &end);
	if (*text && !*end && !errno && secs >= 0) {
		if (secs > 253402300799.0) /* 9999-12-31T23:59:59Z, and the int64 cast defined */
			return cli_usage_error(ctx, "--since %s: past the year 9999", text);
		*out = (int64_t)(secs * 1e6 + 0.5);
		return 0;
	}
	struct tm tm = { 0 };
	const char *p = strptime(text, "%Y-%m-%d", &tm);
	if (p && (*p == 'T' || *p == ' '))
		p = strptime(p + 1, "%H:%M:%S", &tm);
	long frac = 0;
	int digits = 0;
	if (p && *p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (digits < 6) {
				frac = frac * 10 + (*p - '0');
				digits++;
			}
	for (; digits < 6; digits++)
		frac *= 10;
	if (p && *p == 'Z')
		p++;
	if (!p || *p)
		return cli_usage_error(
			ctx, "--since wants unix seconds or a UTC time like 2026-11-23T03:00:00Z, got '%s'", text);
	*out = (int64_t)timegm(&tm) * 1000000 + frac;
	if (*out < 0) /* before 1970: every entity is newer (and SQL's time literal wants no sign) */
		*out = 0;
	return 0;
}

typedef struct {
	bool tty;
	int64_t count, total; /* total: InnoDB's estimate, 0 when unknown */
	double t0, last;
} progress_t;

static void progress(progress_t *p, bool last)
{
	double now = (double)now_us() / 1e6;
	if (!p->tty || (!last && now - p->last < 0.5))
		return;
	p->last = now;
	double secs = now - p->t0, rate = secs > 0 ? (double)p->count / secs : 0;
	char eta[48] = "", d[32];
	if (p->total > p->count && rate > 0)
		snprintf(eta, sizeof eta, ", ETA ~%s", fmt_secs(d, sizeof d, (double)(p->total - p->count) / rate));
	fprintf(stderr, "\rexport: %" PRId64 " entities%s%" PRId64 ", %.0f/s%s\033[K%s", p->count,
	        p->total ? " of ~" : "", p->total, rate, eta, last ? "\n" : "");
	fflush(stderr);
}

/* One page of entities printed; the first corrupt body named on stderr. */
static int print_page(const bs_result_t *r, const cli_ctx_t *ctx, progress_t *p, int64_t since, int shard,
                      size_t *skipped)
{
	for (size_t k = 0; k < r->len; k++) {
		const bs_entity_t *e = &r->items[k];
		if ((since && e->updated_us < since) || (shard >= 0 && e->shard != shard))
			continue;
		if (cli_print_bag(&e->bag) < 0) {
			char hex[33];
			bs_id_hex(hex, &e->id);
			fprintf(stderr, "bagstore: shard %s: entity %s cannot be printed as JSON: %s\n",
			        bs_store_config(ctx->st)->shards[e->shard].name, hex, bs_last_error());
			(*skipped)++;
			continue;
		}
		p->count++;
	}
	if (r->corrupt) {
		fprintf(stderr, "bagstore: %zu corrupt bodies skipped; the first: %s\n", r->corrupt, r->corrupt_first);
		*skipped += r->corrupt;
	}
	progress(p, false);
	return ferror(stdout) ? bs_error(BS_ERROR, "writing to stdout: %s", strerror(errno)) : 0;
}

/* Through an index: the query's matches (newest first). */
static int export_index(cli_ctx_t *ctx, const char *index, char **conds, int nconds, progress_t *p, int64_t since,
                        int shard, size_t *skipped)
{
	bs_index_list_t l = { 0 };
	bs_query_spec_t q = { 0 };
	bs_result_t res = { 0 };
	int rc;
	if (!(rc = bs_index_list(&l, ctx->st)) &&
	    !(rc = bs_query_parse(&q, &l, index, (const char *const *)conds, nconds)) &&
	    !(rc = bs_query(&res, ctx->st, q.index, q.conds, q.nconds, 0)))
		rc = print_page(&res, ctx, p, since, shard, skipped);
	bs_result_free(&res);
	bs_query_spec_clear(&q);
	bs_index_list_free(&l);
	return rc;
}

static int shard_named(int *out, cli_ctx_t *ctx, const char *name)
{
	const bs_config_t *cfg = bs_store_config(ctx->st);
	for (int i = 0; i < cfg->nshards; i++)
		if (!strcmp(cfg->shards[i].name, name)) {
			*out = i;
			return 0;
		}
	return bs_error(BS_EINVAL, "no shard named %s in the configuration", name);
}

/* InnoDB's estimate of the entities to export, for the ETA (0: unknown). */
static int64_t estimate(cli_ctx_t *ctx, int shard)
{
	int n = bs_store_nshards(ctx->st);
	bs_shard_status_t *ss = calloc((size_t)n, sizeof *ss);
	int64_t total = 0;
	if (ss && !bs_shard_status(ss, ctx->st))
		for (int i = 0; i < n; i++)
			if ((shard < 0 || i == shard) && ss[i].entities_est > 0)
				total += ss[i].entities_est;
	free(ss);
	bs_error_clear();
	return total;
}

int cli_cmd_export(cli_ctx_t *ctx, int argc, char **argv)
{
	const char *shard_name = NULL, *since_text = NULL, *order = NULL, *index = NULL;
	const cli_opt_t opts[] = { { "shard", &shard_name, NULL },
		                   { "since", &since_text, NULL },
		                   { "order", &order, NULL },
		                   { "index", &index, NULL },
		                   { NULL, NULL, NULL } };
	cli_args_t args = { 0 };
	bs_export_opts_t eo = { .shard = -1, .order = BS_EXPORT_NEWEST };
	bs_export_t *ex = NULL;
	progress_t p = { 0 };
	size_t skipped = 0;
	int rc;

	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 0, -1)) != 0)
		goto done;
	if (args.n && !index) {
		rc = cli_usage_error(ctx, "PROP=VALUE conditions go with --index NAME");
		goto done;
	}
	if (index && !args.n) {
		rc = cli_usage_error(ctx, "--index %s wants PROP=VALUE conditions", index);
		goto done;
	}
	if (order && strcmp(order, "newest") && strcmp(order, "added")) {
		rc = cli_usage_error(ctx, "--order wants newest or added, got '%s'", order);
		goto done;
	}
	if (order && !strcmp(order, "added")) {
		if (index) {
			rc = cli_usage_error(ctx, "--order added does not go with --index (a query is newest first)");
			goto done;
		}
		eo.order = BS_EXPORT_ADDED;
	}
	if (since_text && (rc = parse_since(ctx, &eo.since_us, since_text)) < 0)
		goto done;
	if ((rc = cli_open(ctx)) < 0 || (shard_name && (rc = shard_named(&eo.shard, ctx, shard_name)) < 0))
		goto done;
	p.tty = isatty(STDERR_FILENO);
	p.t0 = p.last = (double)now_us() / 1e6;
	if (p.tty && !index)
		p.total = estimate(ctx, eo.shard);
	if (index) {
		rc = export_index(ctx, index, args.v, args.n, &p, eo.since_us, eo.shard, &skipped);
		goto finish;
	}
	if ((rc = bs_export_open(&ex, ctx->st, &eo)) < 0)
		goto done;
	for (;;) {
		bs_result_t page;
		if ((rc = bs_export_next(&page, ctx->st, ex, 0)) < 0)
			goto finish;
		bool end = page.len == 0 && page.corrupt == 0;
		rc = print_page(&page, ctx, &p, 0, -1, &skipped);
		bs_result_free(&page);
		if (rc < 0 || end)
			break;
	}
finish:
	progress(&p, true);
	if (rc == 0 && skipped)
		rc = bs_error(BS_ECORRUPT,
		              "%zu entities skipped (named above): their body is corrupt or cannot be printed",
		              skipped);
done:
	bs_export_free(ex);
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

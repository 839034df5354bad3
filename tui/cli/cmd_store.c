/*
 * cmd_store.c - the store as a whole: `init` (bagstore's tables and the
 * configured indexes on every shard), `shards` (every shard's status, TLS
 * included, as a table or JSON) and `grants` (the MySQL privileges a role
 * needs on every shard, as GRANT statements).
 */
#include "cli.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

/* ------------------------------------------------------------ init */

int cli_cmd_init(cli_ctx_t *ctx, int argc, char **argv)
{
	cli_args_t args = { 0 };
	bs_buckets_t b = { 0 };
	int rc, empty = 0;

	if ((rc = cli_parse(&args, ctx, argc, argv, NULL, 0, 0)) != 0)
		goto done;
	if ((rc = cli_open(ctx)) < 0)
		goto done;
	if ((rc = bs_init(ctx->st)) < 0 || (rc = bs_buckets(&b, ctx->st)) < 0)
		goto done;
	for (int i = 0; i < b.nshards; i++)
		empty += b.shards[i].buckets == 0;
	printf("initialised %d shards (bucket map version %" PRId64 ", %d buckets%s), %d declared indexes\n",
	       bs_store_nshards(ctx->st), b.version, b.buckets,
	       empty ? "; shards owning no bucket yet: `bagstore reshard plan`" : "", ctx->cfg->nindexes);
	char names[256], was[48];
	int from;
	if (bs_init_upgraded(ctx->st, names, sizeof names, &from)) {
		if (from)
			snprintf(was, sizeof was, "from schema version %d", from);
		else
			snprintf(was, sizeof was, "which recorded no schema version");
		printf("upgraded %s (%s): give the application's account the grants of `bagstore "
		       "grants --role app` again (tables were added), then restart the cleaners, then the "
		       "writers\n",
		       names, was);
	}
	if (bs_init_noproc(ctx->st, names, sizeof names))
		printf("write procedures not made on %s: the account lacks CREATE ROUTINE (`bagstore grants --role "
		       "cleaner` prints what it needs now); where they are missing, a single write with an index sends "
		       "two statements in place of one CALL\n",
		       names);
done:
	bs_buckets_free(&b);
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------ shards */

/* A shard's figure, null when it is down or the figure unknown (< 0). */
static json_t *jcount(bool down, int64_t v)
{
	return down || v < 0 ? json_null() : json_integer(v);
}

/* A connection's TLS as JSON: what it achieved (encrypted, version,
 * cipher, verified: none, ca or identity). */
static json_t *tls_json(const bs_tls_state_t *t)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "encrypted", json_boolean(t->level > BS_TLS_NONE));
	json_object_set_new(o, "version", cli_jstr(t->version));
	json_object_set_new(o, "cipher", cli_jstr(t->cipher));
	json_object_set_new(o, "verified",
	                    json_string(t->level > BS_TLS_ENCRYPTED ? bs_tls_level_name(t->level) : "none"));
	return o;
}

/* The shard's TLS (null when down), its configured mode, the mark of a
 * plain connection among encrypted ones, and the weakest replica's TLS
 * (null when no replica connection was made). */
static void shard_tls_json(json_t *o, const bs_shard_status_t *s)
{
	json_t *t = s->state == BS_SHARD_DOWN ? json_null() : tls_json(&s->tls);

	if (t && json_is_object(t)) {
		json_object_set_new(t, "mode", json_string(bs_tls_mode_name(s->tls_mode)));
		json_object_set_new(t, "plaintext_among_encrypted", json_boolean(s->tls_plaintext_mixed));
		json_object_set_new(t, "plaintext_preferred", json_boolean(s->tls_plaintext_preferred));
	}
	json_object_set_new(o, "tls", t ? t : json_null());
	t = s->nreplica_tls > 0 ? tls_json(&s->replica_tls) : json_null();
	json_object_set_new(o, "replica_tls", t ? t : json_null());
}

/* One shard's status as a JSON object. */
static void shard_json(json_t *o, const bs_shard_status_t *s)
{
	bool down = s->state == BS_SHARD_DOWN;

	json_object_set_new(o, "name", cli_jstr(s->name));
	json_object_set_new(o, "address", cli_jstr(s->address));
	json_object_set_new(o, "state", json_string(bs_shard_state_name(s->state)));
	json_object_set_new(o, "error", cli_jstr(s->error));
	json_object_set_new(o, "version", cli_jstr(s->version));
	json_object_set_new(o, "rtt_ms", down ? json_null() : json_real(round(s->rtt_ms * 1000) / 1000));
	json_object_set_new(o, "entities_est", jcount(down, s->entities_est));
	json_object_set_new(o, "data_bytes", jcount(down, s->data_bytes));
	json_object_set_new(o, "threads_running", jcount(down, s->threads_running));
	json_object_set_new(o, "replica_lag", down || s->replica_lag < 0 ? json_null() : json_real(s->replica_lag));
	/* what a null lag means: no replica configured, or one not measured */
	json_object_set_new(o, "replica_lag_state",
	                    down                   ? json_null()
	                    : s->replica_lag == -1 ? json_string("none")
	                    : s->replica_lag < 0   ? json_string("unknown")
	                                           : json_string("measured"));
	json_object_set_new(o, "fingerprint_ok",
	                    down || s->fingerprint_ok < 0 ? json_null() : json_boolean(s->fingerprint_ok > 0));
	/* the table's word: a null fingerprint_ok is an uninitialised shard
	 * or a shard down */
	json_object_set_new(o, "fingerprint",
	                    down                     ? json_null()
	                    : s->fingerprint_ok > 0  ? json_string("ok")
	                    : s->fingerprint_ok == 0 ? json_string("MISMATCH")
	                                             : json_string("uninitialised"));
	shard_tls_json(o, s);
}

static int shards_json(const bs_shard_status_t *ss, int n)
{
	json_t *arr = json_array();
	int i, rc = 0;

	if (!arr)
		return bs_error(BS_ENOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		json_t *o = json_object();

		if (!o || json_array_append_new(arr, o) < 0) {
			rc = bs_error(BS_ENOMEM, "out of memory");
			goto done;
		}
		shard_json(o, &ss[i]);
	}
	rc = cli_json_print(arr);
done:
	json_decref(arr);
	return rc;
}

/* One shard's row of the table; the reason under it (MySQL's message when
 * down, else why a replica's lag or the fingerprint is off) as its tail. */
static int shard_row(cli_table_t *t, const bs_shard_status_t *s)
{
	bool down = s->state == BS_SHARD_DOWN;
	char rtt[32] = "-", ents[32] = "-", data[32] = "-", thr[32] = "-", lag[32] = "-", tls[48] = "-";
	const char *fp = "-", *tail = s->error[0] ? s->error : NULL;
	const char *cells[12];

	if (!down) {
		snprintf(rtt, sizeof rtt, "%.2f", s->rtt_ms);
		if (s->entities_est >= 0)
			snprintf(ents, sizeof ents, "~%" PRId64, s->entities_est); /* InnoDB's estimate */
		fmt_bytes(data, sizeof data, s->data_bytes);
		if (s->threads_running >= 0)
			snprintf(thr, sizeof thr, "%" PRId64, s->threads_running);
		if (s->replica_lag >= 0)
			snprintf(lag, sizeof lag, "%.0fs", s->replica_lag);
		else if (s->replica_lag == -2)
			snprintf(lag, sizeof lag, "unknown");
		fp = s->fingerprint_ok > 0 ? "ok" : s->fingerprint_ok == 0 ? "MISMATCH" : "uninitialised";
		fmt_tls(tls, sizeof tls, &s->tls, s->tls_plaintext_mixed || s->tls_plaintext_preferred);
		if (!tail && s->tls_plaintext_preferred)
			tail = "not encrypted: tls.mode is preferred and the server offers no TLS";
		else if (!tail && s->tls_plaintext_mixed)
			tail = "not encrypted, while other shards are";
	}
	cells[0] = s->name;
	cells[1] = s->address[0] ? s->address : "-";
	cells[2] = bs_shard_state_name(s->state);
	cells[3] = s->version[0] && !down ? s->version : "-";
	cells[4] = tls;
	cells[5] = s->tls.cipher[0] && !down ? s->tls.cipher : "-";
	cells[6] = rtt;
	cells[7] = ents;
	cells[8] = data;
	cells[9] = thr;
	cells[10] = lag;
	cells[11] = fp;
	return cli_table_add(t, cells, tail);
}

static int shards_table(const bs_shard_status_t *ss, int n)
{
	static const char *const head[] = { "NAME",   "ADDRESS",  "STATE", "VERSION", "TLS",      "CIPHER",
		                            "RTT_MS", "ENTITIES", "DATA",  "THREADS", "REPL_LAG", "FINGERPRINT" };
	cli_table_t t = { .ncols = 12, .right = (1u << 6) | (1u << 7) | (1u << 8) | (1u << 9) | (1u << 10) };
	int i, rc;

	if ((rc = cli_table_add(&t, head, NULL)) < 0)
		goto done;
	for (i = 0; i < n; i++)
		if ((rc = shard_row(&t, &ss[i])) < 0)
			goto done;
	cli_table_print(stdout, &t);
done:
	cli_table_free(&t);
	return rc;
}

int cli_cmd_shards(cli_ctx_t *ctx, int argc, char **argv)
{
	bool json = false;
	const cli_opt_t opts[] = { { "json", NULL, &json }, { NULL, NULL, NULL } };
	cli_args_t args = { 0 };
	bs_shard_status_t *ss = NULL;
	bool *lacked = NULL;
	char names[256] = "";
	size_t o;
	int n, i, down = 0, foreign = 0, nlacked = 0, rc;

	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 0, 0)) != 0)
		goto done;
	if ((rc = cli_open(ctx)) < 0)
		goto done;
	n = bs_store_nshards(ctx->st);
	if (!(ss = cli_per_shard_alloc(ctx, sizeof *ss))) {
		rc = BS_ENOMEM;
		goto done;
	}
	if ((rc = bs_shard_status(ss, ctx->st)) < 0)
		goto done;
	if ((rc = json ? shards_json(ss, n) : shards_table(ss, n)) < 0)
		goto done;
	if (!(lacked = calloc((size_t)n, sizeof *lacked))) {
		rc = bs_error(BS_ENOMEM, "out of memory");
		goto done;
	}
	for (i = 0; i < n; i++) {
		if (ss[i].state == BS_SHARD_DOWN)
			down++;
		else if (ss[i].fingerprint_ok == 0 && ss[i].map_lacks >= 0 && ss[i].map_lacks < n)
			lacked[ss[i].map_lacks] = true; /* the list is longer than the map: init's to do */
		else if (ss[i].fingerprint_ok == 0)
			foreign++;
	}
	for (i = 0, o = 0; i < n; i++)
		if (lacked[i] && o < sizeof names) {
			o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", o ? ", " : "", ss[i].name);
			nlacked++;
		}
	/* a shard list the shards disagree with is a configuration error,
	 * whichever command meets it (exit 2), after the table shows which;
	 * a shard appended to the list and not added yet is one too, but the
	 * others are not foreign for it: the next step is init */
	if (foreign)
		rc = bs_error(BS_ECONFIG, "%d of %d shards belong to another shard list (fingerprint mismatch)",
		              foreign, n);
	else if (nlacked)
		rc = bs_error(BS_ECONFIG,
		              "%s %s %s not in the store's bucket map yet: run `bagstore init` to add %s (the "
		              "other shards' MISMATCH is only that)",
		              nlacked == 1 ? "shard" : "shards", names, nlacked == 1 ? "is" : "are",
		              nlacked == 1 ? "it" : "them");
	else if (down)
		rc = bs_error(BS_EUNREACHABLE, "%d of %d shards unreachable", down, n);
done:
	free(lacked);
	free(ss);
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------ grants */

static bool listed(const bs_grant_table_t *ix, int n, const char *name)
{
	for (int k = 0; k < n; k++)
		if (!strcmp(ix[k].name, name))
			return true;
	return false;
}

int cli_cmd_grants(cli_ctx_t *ctx, int argc, char **argv)
{
	const char *role_name = NULL, *user = NULL, *host = "%", *shard = NULL, *index = NULL;
	const cli_opt_t opts[] = { { "role", &role_name, NULL }, { "user", &user, NULL },   { "host", &host, NULL },
		                   { "shard", &shard, NULL },    { "index", &index, NULL }, { NULL, NULL, NULL } };
	cli_args_t args = { 0 };
	char *sql = NULL, dflt[32];
	bs_index_list_t cat = { 0 };
	bs_grant_table_t *ix = NULL;
	int nix = 0;
	bs_role_t role;
	int rc;

	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 0, 0)) != 0)
		goto done;
	if (!role_name) {
		rc = cli_usage_error(ctx, "--role is required (app, cleaner, console or readonly)");
		goto done;
	}
	if ((rc = bs_role_parse(&role, role_name)) < 0) {
		rc = cli_usage_error(ctx, "%s", bs_last_error());
		goto done;
	}
	if (index && !bs_role_per_table(role)) {
		rc = cli_usage_error(ctx, "--index is for --role app (the other roles' grants are the database's)");
		goto done;
	}
	if (!user) {
		snprintf(dflt, sizeof dflt, "bagstore_%s", bs_role_name(role));
		user = dflt;
	}
	/* the configuration, and for the app the catalog: its grants name
	 * every index table */
	if ((rc = cli_load_config(ctx)) < 0)
		goto done;
	if (bs_role_per_table(role)) {
		if ((rc = cli_open(ctx)) < 0 || (rc = bs_index_list(&cat, ctx->st)) < 0) {
			char why[1024];
			snprintf(why, sizeof why, "%s", bs_last_error());
			rc = bs_error(rc,
			              "the app role's grants name each index table, from the catalog: %s "
			              "(run them after `bagstore init`)",
			              why);
			goto done;
		}
		if (!(ix = calloc((size_t)cat.len + 1, sizeof *ix))) {
			rc = bs_error(BS_ENOMEM, "out of memory");
			goto done;
		}
		for (int k = 0; k < cat.len; k++)
			ix[nix++] = (bs_grant_table_t){ cat.items[k].name, true };
		if (index && !listed(ix, nix, index))
			ix[nix++] = (bs_grant_table_t){ index, false };
	}
	if ((rc = bs_grants(&sql, ctx->cfg, role, user, host, shard, ix, nix)) < 0)
		goto done;
	fputs(sql, stdout);
done:
	free(sql);
	free(ix);
	bs_index_list_free(&cat);
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

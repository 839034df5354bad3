/*
 * cmd_audit.c - `audit`: the audit log of operator changes, newest first
 * (bs_audit_list): who (OS user, host, pid), when, what, on which shards,
 * and for an entity change its before and after; as a table or JSON (with
 * the before and after bodies as JSON documents).
 */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

/* A stored body as a JSON document; null when absent, a string saying why
 * when it does not decode. */
static json_t *image_json(bool has, const bs_bytes_t *body)
{
	bs_value_t bag;
	char *text = NULL;
	json_t *j;

	if (!has)
		return json_null();
	if (bs_body_decode(&bag, body->ptr, body->len) < 0) {
		char msg[400];
		snprintf(msg, sizeof msg, "(does not decode: %s)", bs_last_error());
		bs_error_clear();
		return json_string(msg);
	}
	if (bs_json_encode(&text, &bag, 0) < 0 || !(j = json_loads(text, JSON_DECODE_ANY, NULL))) {
		bs_error_clear();
		j = json_string("(cannot be shown as JSON)");
	}
	free(text);
	bs_value_clear(&bag);
	return j;
}

static json_t *entry_json(const bs_audit_entry_t *e, const bs_config_t *cfg)
{
	json_t *o = json_object();
	char at[32], id[33];

	if (!o)
		return NULL;
	json_object_set_new(o, "row", json_integer(e->id));
	json_object_set_new(o, "kept_on", json_string(cfg->shards[e->shard].name));
	json_object_set_new(o, "at", json_string(fmt_iso_utc(at, sizeof at, e->at_us)));
	json_object_set_new(o, "at_us", json_integer(e->at_us));
	json_object_set_new(o, "os_user", cli_jstr(e->os_user));
	json_object_set_new(o, "host", cli_jstr(e->host));
	json_object_set_new(o, "pid", e->pid ? json_integer(e->pid) : json_null());
	json_object_set_new(o, "action", cli_jstr(e->action));
	json_object_set_new(o, "target", cli_jstr(e->target));
	json_object_set_new(o, "shards", cli_jstr(e->shards));
	json_object_set_new(o, "detail", cli_jstr(e->detail));
	if (e->entity) {
		bs_id_hex(id, &e->entity_id);
		json_object_set_new(o, "entity", json_string(id));
		json_object_set_new(o, "before", image_json(e->has_before, &e->before));
		json_object_set_new(o, "before_updated_us", e->has_before ? json_integer(e->before_us) : json_null());
		json_object_set_new(o, "after", image_json(e->has_after, &e->after));
		json_object_set_new(o, "after_updated_us",
		                    e->has_after && e->after_us ? json_integer(e->after_us) : json_null());
	}
	return o;
}

/* "alice@db1:4242" */
static char *who_text(char *buf, size_t n, const bs_audit_entry_t *e)
{
	if (e->pid)
		snprintf(buf, n, "%s@%s:%d", e->os_user, e->host, e->pid);
	else
		snprintf(buf, n, "%s@%s", e->os_user, e->host);
	return buf;
}

static int audit_table(const bs_audit_list_t *l, const bs_config_t *cfg)
{
	static const char *const head[] = { "ROW", "AT (UTC)", "WHO", "ACTION", "TARGET", "SHARDS" };
	cli_table_t t = { .ncols = 6 };
	int rc = cli_table_add(&t, head, "DETAIL");

	for (int k = 0; k < l->len && !rc; k++) {
		const bs_audit_entry_t *e = &l->items[k];
		char row[96], at[32], who[400];
		snprintf(row, sizeof row, "%s#%" PRId64, cfg->shards[e->shard].name, e->id);
		const char *cells[6] = { row,
			                 fmt_iso_utc(at, sizeof at, e->at_us),
			                 who_text(who, sizeof who, e),
			                 e->action,
			                 e->target,
			                 !e->shards[0]            ? "-"
			                 : strcmp(e->shards, "*") ? e->shards
			                                          : "all" };
		rc = cli_table_add(&t, cells, e->detail);
	}
	if (!rc)
		cli_table_print(stdout, &t);
	cli_table_free(&t);
	return rc;
}

int cli_cmd_audit(cli_ctx_t *ctx, int argc, char **argv)
{
	const char *limit = NULL;
	bool json = false;
	const cli_opt_t opts[] = { { "limit", &limit, NULL }, { "json", NULL, &json }, { NULL, NULL, NULL } };
	cli_args_t args = { 0 };
	bs_audit_list_t l = { 0 };
	json_t *arr = NULL;
	int rc, n = 50;
	char *end = NULL;

	if ((rc = cli_parse(&args, ctx, argc, argv, opts, 0, 0)) != 0)
		goto done;
	long lv = limit ? strtol(limit, &end, 10) : 0; /* range checked before it narrows */
	if (limit && (lv < 1 || lv > 100000 || *end || end == limit)) {
		rc = cli_usage_error(ctx, "--limit takes a number of rows, 1 to 100000");
		goto done;
	}
	if (limit)
		n = (int)lv;
	if ((rc = cli_open(ctx)) < 0 || (rc = bs_audit_list(&l, ctx->st, n)) < 0)
		goto done;
	if (json) {
		if (!(arr = json_array())) {
			rc = bs_error(BS_ENOMEM, "out of memory");
			goto done;
		}
		for (int k = 0; k < l.len; k++)
			json_array_append_new(arr, entry_json(&l.items[k], ctx->cfg));
		rc = cli_json_print(arr);
	} else {
		rc = audit_table(&l, ctx->cfg);
	}
	if (!rc && l.unreachable)
		rc = cli_unreachable(l.unreachable, "their rows are not listed", l.unreachable_first);
done:
	json_decref(arr);
	bs_audit_list_free(&l);
	cli_args_free(&args);
	return rc < 0 ? rc : 0;
}

/* ------------------------------------------------------------ recording */

/* The change is made already when it is recorded: a row that cannot be
 * written is said on stderr, and the command's result stands. */
static void audit_warn(const char *action, const char *target)
{
	/* neutral: a row written before the change (cleaner --index, a drop)
	 * may be followed by a refusal, so "was made" is not always true */
	fprintf(stderr, "bagstore: warning: not in the audit log: %s %s: %s\n", action, target, bs_last_error());
	bs_error_clear();
}

void cli_audit(cli_ctx_t *ctx, const char *action, const char *target, const char *detail)
{
	char d[1200];

	snprintf(d, sizeof d, "%s%sfrom the command line", detail ? detail : "", detail && *detail ? "; " : "");
	if (bs_audit(ctx->st, action, target, d) < 0)
		audit_warn(action, target);
}

void cli_audit_entity(cli_ctx_t *ctx, const char *action, const bs_audit_entity_t *e, const char *detail)
{
	char hex[33];

	if (bs_audit_entity(ctx->st, action, e, detail) < 0) {
		bs_id_hex(hex, &e->id);
		audit_warn(action, hex);
	}
}

/*
 * audit.c - the audit log of operator changes (bagstore_audit): who (OS
 * user, host, pid), when, what, on which shards, and for an entity change
 * the stored body before and after with their `updated` times, so that the
 * change can be undone (undo.c). A row is written on the first shard that
 * answers; bs_audit_list reads every shard's rows and merges them.
 *
 * A store initialised before the columns existed gains them at its next
 * `init` (schema.c); until then rows are written and read without them.
 */
#include "internal.h"

#include <mysqld_error.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The fields of one row to write. */
typedef struct {
	const char *action, *target, *detail, *shards;
	const bs_audit_entity_t *e;
} row_t;

static void who(char user[64], char host[256])
{
	snprintf(host, 256, "unknown");
	snprintf(user, 64, "unknown");
	if (gethostname(host, 255) != 0)
		snprintf(host, 256, "unknown");
	host[255] = 0;
	struct passwd *pw = getpwuid(getuid());
	if (pw && pw->pw_name)
		snprintf(user, 64, "%s", pw->pw_name);
}

static void put_text(bs_buf_t *b, const char *s)
{
	if (s)
		bs__buf_hex(b, s, strlen(s));
	else
		bs__buf_puts(b, "NULL");
}

static void put_image(bs_buf_t *b, const bs_bytes_t *body, int64_t us)
{
	if (body) {
		bs__buf_printf(b, ",%lld,", (long long)us);
		bs__buf_hex(b, body->ptr, body->len);
	} else {
		bs__buf_puts(b, ",NULL,NULL");
	}
}

/* The INSERT; full: with the columns added later (pid, shards, images). */
static void insert_sql(bs_buf_t *b, const row_t *r, bool full)
{
	char host[256], user[64];

	who(user, host);
	bs__buf_printf(b, "INSERT INTO bagstore_audit (os_user, host, action, target, detail%s) VALUES (",
	           full ? ", pid, shards, entity_id, before_us, before_body, after_us, after_body" : "");
	put_text(b, user);
	bs__buf_puts(b, ",");
	put_text(b, host);
	bs__buf_puts(b, ",");
	put_text(b, r->action);
	bs__buf_puts(b, ",");
	put_text(b, r->target);
	bs__buf_puts(b, ",");
	put_text(b, r->detail);
	if (full) {
		bs__buf_printf(b, ",%d,", (int)getpid());
		put_text(b, r->shards ? r->shards : "");
		bs__buf_puts(b, ",");
		if (r->e) {
			bs__buf_hex(b, r->e->id.b, 16);
			put_image(b, r->e->before, r->e->before_us);
			put_image(b, r->e->after, r->e->after_us);
		} else {
			bs__buf_puts(b, "NULL,NULL,NULL,NULL,NULL");
		}
	}
	bs__buf_puts(b, ")");
}

/* On the first shard that answers; a table without the later columns gets
 * the row without them. */
static int write_row(bs_store_t *st, const row_t *r)
{
	bs_buf_t b = {0};
	int rc = BS_EUNREACHABLE;

	for (int i = 0; i < st->n; i++) {
		bs__buf_reset(&b);
		insert_sql(&b, r, true);
		if ((rc = bs__buf_ok(&b)))
			break;
		if (!(rc = bs__shard_check(st, i)))
			rc = bs__shard_exec(st, i, b.ptr, b.len);
		if (rc == BS_ESQL && bs__shard_last_errno(st, i) == ER_BAD_FIELD_ERROR) {
			bs__buf_reset(&b);
			insert_sql(&b, r, false);
			if (!(rc = bs__buf_ok(&b)))
				rc = bs__shard_exec(st, i, b.ptr, b.len);
		}
		if (rc != BS_EUNREACHABLE)
			break;
	}
	bs__buf_free(&b);
	return rc;
}

int bs_audit(bs_store_t *st, const char *action, const char *target, const char *detail)
{
	row_t r = { action, target, detail, "*", NULL };
	return write_row(st, &r);
}

int bs_audit_entity(bs_store_t *st, const char *action, const bs_audit_entity_t *e, const char *detail)
{
	char hex[33];
	int shard = -1, bucket;
	bs_id_hex(hex, &e->id);
	/* the entity's shard, as the bucket map names it */
	if (bs__route_entity(&shard, &bucket, st, &e->id))
		bs_error_clear();
	row_t r = { action, hex, detail, shard >= 0 ? st->shards[shard].conf->name : "?", e };
	return write_row(st, &r);
}

/* ------------------------------------------------------------ listing */

#define LIST_COLS "id, UNIX_TIMESTAMP(at), os_user, host, action, target, detail"
#define LIST_COLS_FULL LIST_COLS ", pid, shards, entity_id, before_us, before_body, after_us, after_body"

void bs_audit_list_free(bs_audit_list_t *l)
{
	if (!l)
		return;
	for (int i = 0; i < l->len; i++) {
		free(l->items[i].detail);
		bs_bytes_free(&l->items[i].before);
		bs_bytes_free(&l->items[i].after);
	}
	free(l->items);
	memset(l, 0, sizeof *l);
}

static int copy_bytes(bs_bytes_t *out, const char *p, unsigned long len)
{
	if (!(out->ptr = malloc(len ? len : 1)))
		return bs_error(BS_ENOMEM, "out of memory reading the audit log");
	memcpy(out->ptr, p, len);
	out->len = out->cap = len;
	return 0;
}

static int entry_from_row(bs_audit_entry_t *e, MYSQL_ROW row, const unsigned long *lens, bool full, int shard)
{
	memset(e, 0, sizeof *e);
	e->shard = shard;
	e->id = row[0] ? strtoll(row[0], NULL, 10) : 0;
	e->at_us = bs__parse_unix_us(row[1]);
	snprintf(e->os_user, sizeof e->os_user, "%s", row[2] ? row[2] : "");
	snprintf(e->host, sizeof e->host, "%s", row[3] ? row[3] : "");
	snprintf(e->action, sizeof e->action, "%s", row[4] ? row[4] : "");
	snprintf(e->target, sizeof e->target, "%s", row[5] ? row[5] : "");
	if (row[6] && !(e->detail = strndup(row[6], lens[6])))
		return bs_error(BS_ENOMEM, "out of memory reading the audit log");
	if (!full)
		return 0;
	e->pid = row[7] ? atoi(row[7]) : 0;
	snprintf(e->shards, sizeof e->shards, "%s", row[8] ? row[8] : "");
	if (row[9] && lens[9] == 16) {
		e->entity = true;
		memcpy(e->entity_id.b, row[9], 16);
	}
	int rc = 0;
	if (row[11]) {
		e->has_before = true;
		e->before_us = row[10] ? strtoll(row[10], NULL, 10) : 0;
		rc = copy_bytes(&e->before, row[11], lens[11]);
	}
	if (!rc && row[13]) {
		e->has_after = true;
		e->after_us = row[12] ? strtoll(row[12], NULL, 10) : 0;
		rc = copy_bytes(&e->after, row[13], lens[13]);
	}
	return rc;
}

struct list_arg {
	int limit;
	bs_audit_list_t *per; /* per shard */
	char (*err)[512];
};

static int list_rows(bs_store_t *st, int i, struct list_arg *a)
{
	bs_buf_t b = {0};
	MYSQL_RES *res = NULL;
	bool full = true;
	int rc;

	bs__buf_printf(&b, "SELECT " LIST_COLS_FULL " FROM bagstore_audit ORDER BY id DESC LIMIT %d", a->limit);
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_check(st, i)))
		goto done;
	rc = bs__shard_query(&res, st, i, b.ptr, b.len);
	if (rc == BS_ESQL && bs__shard_last_errno(st, i) == ER_BAD_FIELD_ERROR) {
		full = false; /* not upgraded by init yet */
		bs__buf_reset(&b);
		bs__buf_printf(&b, "SELECT " LIST_COLS " FROM bagstore_audit ORDER BY id DESC LIMIT %d", a->limit);
		if (!(rc = bs__buf_ok(&b)))
			rc = bs__shard_query(&res, st, i, b.ptr, b.len);
	}
	if (rc)
		goto done;
	size_t n = (size_t)mysql_num_rows(res);
	bs_audit_list_t *l = &a->per[i];
	if (n && !(l->items = calloc(n, sizeof *l->items))) {
		rc = bs_error(BS_ENOMEM, "out of memory reading the audit log");
		goto done;
	}
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res)))
		if ((rc = entry_from_row(&l->items[l->len++], row, mysql_fetch_lengths(res), full, i)))
			goto done;
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

static int list_on(bs_store_t *st, int i, void *p)
{
	struct list_arg *a = p;
	int rc = list_rows(st, i, a);
	if (rc)
		snprintf(a->err[i], sizeof a->err[i], "%s", bs_last_error());
	return rc;
}

static int newest_first(const void *x, const void *y)
{
	const bs_audit_entry_t *a = x, *b = y;
	if (a->at_us != b->at_us)
		return a->at_us > b->at_us ? -1 : 1;
	if (a->shard != b->shard)
		return a->shard < b->shard ? -1 : 1;
	return a->id > b->id ? -1 : a->id < b->id;
}

/* The shards' rows into out, newest first, cut at limit. */
static int merge(bs_audit_list_t *out, bs_audit_list_t *per, int n, int limit)
{
	int total = 0;
	for (int i = 0; i < n; i++)
		total += per[i].len;
	if (total && !(out->items = calloc((size_t)total, sizeof *out->items)))
		return bs_error(BS_ENOMEM, "out of memory reading the audit log");
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < per[i].len; k++)
			out->items[out->len++] = per[i].items[k];
		per[i].len = 0; /* moved */
	}
	if (out->len > 1)
		qsort(out->items, (size_t)out->len, sizeof *out->items, newest_first);
	while (out->len > limit) {
		bs_audit_entry_t *e = &out->items[--out->len];
		free(e->detail);
		bs_bytes_free(&e->before);
		bs_bytes_free(&e->after);
	}
	return 0;
}

int bs_audit_list(bs_audit_list_t *out, bs_store_t *st, int limit)
{
	struct list_arg a = { limit > 0 ? limit : 100, NULL, NULL };
	int *rcs = calloc((size_t)st->n, sizeof *rcs);
	int rc = 0, down = 0, first = -1;

	memset(out, 0, sizeof *out);
	a.per = calloc((size_t)st->n, sizeof *a.per);
	a.err = calloc((size_t)st->n, sizeof *a.err);
	if (!rcs || !a.per || !a.err) {
		rc = bs_error(BS_ENOMEM, "out of memory reading the audit log");
		goto done;
	}
	bs__shard_each(st, NULL, list_on, &a, rcs);
	for (int i = 0; i < st->n; i++) {
		if (rcs[i] == BS_EUNREACHABLE) {
			if (!down++)
				snprintf(out->unreachable_first, sizeof out->unreachable_first, "%s", a.err[i]);
		} else if (rcs[i] && first < 0) {
			first = i;
		}
	}
	if (first >= 0) {
		rc = bs_error(rcs[first], "reading the audit log: %s", a.err[first]);
		goto done;
	}
	if (down == st->n) {
		rc = bs_error(BS_EUNREACHABLE, "no shard answered for the audit log: %s", out->unreachable_first);
		goto done;
	}
	out->unreachable = down;
	rc = merge(out, a.per, st->n, a.limit);
done:
	if (a.per)
		for (int i = 0; i < st->n; i++)
			bs_audit_list_free(&a.per[i]);
	free(a.per);
	free(a.err);
	free(rcs);
	if (rc)
		bs_audit_list_free(out);
	return rc;
}

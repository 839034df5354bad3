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
	bs_buf_t b = { 0 };
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

/* A shard's newest rows, at most *limit, into its part of the log
 * (bs__collect). */
static int list_rows(bs__part_t *part, bs_store_t *st, int i, void *arg)
{
	const int *limit = arg;
	bs_buf_t b = { 0 };
	MYSQL_RES *res = NULL;
	bs_audit_entry_t *items;
	bool full = true;
	int rc;

	bs__buf_printf(&b, "SELECT " LIST_COLS_FULL " FROM bagstore_audit ORDER BY id DESC LIMIT %d", *limit);
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_check(st, i)))
		goto done;
	rc = bs__shard_query(&res, st, i, b.ptr, b.len);
	if (rc == BS_ESQL && bs__shard_last_errno(st, i) == ER_BAD_FIELD_ERROR) {
		full = false; /* not upgraded by init yet */
		bs__buf_reset(&b);
		bs__buf_printf(&b, "SELECT " LIST_COLS " FROM bagstore_audit ORDER BY id DESC LIMIT %d", *limit);
		if (!(rc = bs__buf_ok(&b)))
			rc = bs__shard_query(&res, st, i, b.ptr, b.len);
	}
	if (rc)
		goto done;
	size_t n = (size_t)mysql_num_rows(res);
	if (n && !(part->items = calloc(n, sizeof *items))) {
		rc = bs_error(BS_ENOMEM, "out of memory reading the audit log");
		goto done;
	}
	items = part->items;
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res)))
		if ((rc = entry_from_row(&items[part->len++], row, mysql_fetch_lengths(res), full, i)))
			goto done;
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

static void entry_free(void *p)
{
	bs_audit_entry_t *e = p;
	free(e->detail);
	bs_bytes_free(&e->before);
	bs_bytes_free(&e->after);
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

int bs_audit_list(bs_audit_list_t *out, bs_store_t *st, int limit)
{
	const bs__collect_t c = { sizeof(bs_audit_entry_t),
		                  list_rows,
		                  entry_free,
		                  &limit,
		                  { "reading the audit log", "the audit log", true } };
	void *items;
	bs__up_t up;
	int rc;

	memset(out, 0, sizeof *out);
	limit = limit > 0 ? limit : 100;
	if ((rc = bs__collect(&items, &out->len, &up, st, &c)))
		return rc;
	out->items = items;
	out->unreachable = up.down;
	snprintf(out->unreachable_first, sizeof out->unreachable_first, "%s", up.down_first);
	/* the shards' rows newest first, cut at limit */
	if (out->len > 1)
		qsort(out->items, (size_t)out->len, sizeof *out->items, newest_first);
	while (out->len > limit)
		entry_free(&out->items[--out->len]);
	return 0;
}

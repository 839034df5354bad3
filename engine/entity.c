/*
 * entity.c - put, get and delete: the write path of doc/DESIGN.md.
 *
 * put reads the current body FOR UPDATE and writes the new one in one
 * InnoDB transaction on the entity's shard, then fixes the rows of every
 * index writers maintain (building or ready): the old row deleted on the
 * old value's shard, the new row upserted on the new value's shard. There
 * is no cross-shard transaction; a crash between the two leaves drift that
 * readers filter out and the cleaner repairs.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void id_lit(bs_buf_t *b, const bs_id_t *id) { bs__buf_hex(b, id->b, 16); }

static void append_delete(bs_buf_t *b, const bs_index_t *idx, const bs_id_t *id)
{
	bs__buf_puts(b, b->len ? ";DELETE FROM " : "DELETE FROM ");
	bs__buf_ident(b, idx->name);
	bs__buf_puts(b, " WHERE entity_id=");
	id_lit(b, id);
}

/* Statements that make idx's rows for one entity right, appended per shard.
 * old is the bag before, NULL when there was none; old_unknown when there
 * was one but its body does not decode, so its rows could be on any shard.
 * bag is the new bag, NULL on delete. */
static void index_sql(bs_buf_t *per_shard, const bs_index_t *idx, const bs_id_t *id,
                      const bs_value_t *old, bool old_unknown, const bs_value_t *bag, int n)
{
	/* the temporaries only ever hold floats (ints widened): nothing to free */
	const bs_value_t *nv[BS_INDEX_MAX_PROPS], *ov[BS_INDEX_MAX_PROPS];
	bs_value_t nt[BS_INDEX_MAX_PROPS], ot[BS_INDEX_MAX_PROPS];
	int ns = bag ? bs__index_row_for(nv, nt, idx, bag, n, NULL) : -1;
	int os = old ? bs__index_row_for(ov, ot, idx, old, n, NULL) : -1;

	if (os >= 0 && ns == os && idx->state == BS_INDEX_READY) {
		bool same = true;
		for (int k = 0; k < idx->nprops && same; k++)
			same = bs_value_equal(nv[k], ov[k]);
		if (same)
			return; /* the row is already right (or the cleaner's to fix) */
	}
	if (old_unknown) {
		/* the old row could be anywhere: everywhere but where the upsert
		 * below replaces it (entity_id is unique per table) */
		for (int i = 0; i < n; i++)
			if (i != ns)
				append_delete(&per_shard[i], idx, id);
	} else if (os >= 0 && os != ns) {
		append_delete(&per_shard[os], idx, id);
	}
	if (ns >= 0) {
		bs_buf_t *b = &per_shard[ns];
		bs__buf_puts(b, b->len ? ";INSERT INTO " : "INSERT INTO ");
		bs__buf_ident(b, idx->name);
		bs__buf_puts(b, " (");
		for (int k = 0; k < idx->nprops; k++) {
			bs__buf_ident(b, idx->props[k].name);
			bs__buf_puts(b, ",");
		}
		bs__buf_puts(b, "entity_id) VALUES (");
		for (int k = 0; k < idx->nprops; k++) {
			bs__buf_value(b, nv[k], &idx->props[k]);
			bs__buf_puts(b, ",");
		}
		id_lit(b, id);
		bs__buf_puts(b, ") ON DUPLICATE KEY UPDATE ");
		for (int k = 0; k < idx->nprops; k++) {
			if (k)
				bs__buf_puts(b, ",");
			bs__buf_ident(b, idx->props[k].name);
			bs__buf_puts(b, "=VALUES(");
			bs__buf_ident(b, idx->props[k].name);
			bs__buf_puts(b, ")");
		}
	}
}

/* Send the per-shard index statements; the first failure is reported with
 * the note that the entity itself is written. */
static int index_flush(bs_store_t *st, bs_buf_t *per_shard, const bs_id_t *id)
{
	int rc = 0;
	for (int i = 0; i < st->n; i++) {
		bs_buf_t *b = &per_shard[i];
		if (!b->len)
			continue;
		int r = bs__buf_ok(b);
		if (!r)
			r = bs__shard_check_writable(st, i);
		if (!r)
			r = bs__shard_exec(st, i, b->ptr, b->len);
		if (r && !rc) {
			char hex[33], msg[1024];
			bs_id_hex(hex, id);
			snprintf(msg, sizeof msg, "%s", bs_last_error());
			rc = bs_error(r, "entity %s is written, but its index rows are not: %s "
			                 "(readers filter stale rows; the cleaner repairs them)", hex, msg);
		}
	}
	return rc;
}

static int maintained_count(const bs_index_list_t *cat)
{
	int n = 0;
	for (int k = 0; k < cat->len; k++)
		if (cat->items[k].state != BS_INDEX_DISABLED)
			n++;
	return n;
}

static bs_buf_t *per_shard_new(int n)
{
	bs_buf_t *p = calloc((size_t)n, sizeof *p);
	if (!p)
		bs_error(BS_ENOMEM, "out of memory");
	return p;
}

static void per_shard_free(bs_buf_t *p, int n)
{
	if (!p)
		return;
	for (int i = 0; i < n; i++)
		bs__buf_free(&p[i]);
	free(p);
}

/* The old bag from a row whose first column is its body; left NIL when
 * the body does not decode (index_sql then clears its rows everywhere). */
static void old_from_row(bs_value_t *old, MYSQL_ROW row, const unsigned long *lens)
{
	if (!row[0] || bs_body_decode(old, (const uint8_t *)row[0], lens[0]))
		bs_value_nil(old);
}

/* Read the current row FOR UPDATE inside a new transaction. *found tells
 * whether it exists; old is left NIL when its body does not decode. */
static int read_for_update(bs_value_t *old, bool *found, int64_t *updated_us, bs_store_t *st,
                           int s, const bs_id_t *id)
{
	bs_buf_t b = {0};
	MYSQL_RES *res = NULL;
	int rc;
	*found = false;
	bs__buf_puts(&b, "START TRANSACTION;SELECT body, UNIX_TIMESTAMP(updated) FROM entities WHERE id=");
	id_lit(&b, id);
	bs__buf_puts(&b, " FOR UPDATE");
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, s, b.ptr, b.len)))
		goto done;
	MYSQL_ROW row = mysql_fetch_row(res);
	if (row) {
		*found = true;
		if (updated_us)
			*updated_us = bs__parse_unix_us(row[1]);
		old_from_row(old, row, mysql_fetch_lengths(res));
	}
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

static void rollback(bs_store_t *st, int s)
{
	char msg[1024];
	int code = bs_last_error_code();
	snprintf(msg, sizeof msg, "%s", bs_last_error());
	if (st->shards[s].conn)
		bs__shard_exec(st, s, "ROLLBACK", 8);
	bs_error(code, "%s", msg);
}

/* The condition of bs_put_if against what the row holds. */
static int check_expected(const bs_id_t *id, bool found, int64_t old_us, int64_t expect_us)
{
	char hex[33];
	if ((expect_us == 0 && !found) || (expect_us != 0 && found && old_us == expect_us))
		return 0;
	bs_id_hex(hex, id);
	if (found)
		return bs_error(BS_ECONFLICT, "entity %s changed since it was read (updated %lld, expected %lld): not written",
		                hex, (long long)old_us, (long long)expect_us);
	return bs_error(BS_ECONFLICT, "entity %s %s: not written", hex,
	                expect_us ? "was deleted since it was read" : "already exists");
}

/* Make every maintained index's rows right for one entity: old is the
 * stored bag before (NIL when absent or undecodable; found tells which),
 * bag the new one (NULL on delete). */
static int write_rows(bs_store_t *st, const bs_index_list_t *cat, const bs_id_t *id,
                      const bs_value_t *old, bool found, const bs_value_t *bag)
{
	bs_buf_t *per;
	int rc;
	if (!maintained_count(cat))
		return 0;
	if (!(per = per_shard_new(st->n)))
		return BS_ENOMEM;
	for (int k = 0; k < cat->len; k++)
		if (cat->items[k].state != BS_INDEX_DISABLED)
			index_sql(per, &cat->items[k], id, old->type == BS_MAP ? old : NULL,
			          found && old->type != BS_MAP, bag, st->n);
	rc = index_flush(st, per, id);
	per_shard_free(per, st->n);
	return rc;
}

static int put_impl(bs_store_t *st, const bs_value_t *bag, bs_id_t *id_out, bool conditional,
                    int64_t expect_us)
{
	bs_id_t id;
	bs_bytes_t body = {0};
	bs_buf_t b = {0};
	bs_value_t old;
	const bs_index_list_t *cat;
	bool found = false, in_tx = false;
	int64_t old_us = 0;
	int rc, s;

	bs_value_nil(&old);
	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing to write");
	if ((rc = bs_bag_id(&id, bag)) || (rc = bs_body_encode(&body, bag)))
		goto done;
	if ((rc = bs__catalog_cached(&cat, st)))
		goto done;
	s = bs_route_id(&id, st->n);
	if ((rc = bs__shard_check_writable(st, s)))
		goto done;
	int maintained = maintained_count(cat);

	if (conditional) {
		in_tx = true;
		if ((rc = read_for_update(&old, &found, &old_us, st, s, &id)) ||
		    (rc = check_expected(&id, found, old_us, expect_us)))
			goto done;
	}
	/* With indexes to maintain and no condition, the old body is read and
	 * the new one written in one transaction sent as one round trip: the
	 * SELECT's rows are those before the INSERT. */
	bool read_old = maintained && !conditional;
	if (read_old) {
		bs__buf_puts(&b, "START TRANSACTION;SELECT body FROM entities WHERE id=");
		id_lit(&b, &id);
		bs__buf_puts(&b, " FOR UPDATE;");
	}
	bs__buf_puts(&b, "INSERT INTO entities (id, updated, body) VALUES (");
	id_lit(&b, &id);
	bs__buf_puts(&b, ", NOW(6), ");
	bs__buf_hex(&b, body.ptr, body.len);
	bs__buf_puts(&b, ") ON DUPLICATE KEY UPDATE updated=VALUES(updated), body=VALUES(body)");
	if (in_tx || read_old)
		bs__buf_puts(&b, ";COMMIT");
	if ((rc = bs__buf_ok(&b)))
		goto done;
	if (read_old) {
		MYSQL_RES *res = NULL;
		in_tx = true;
		if ((rc = bs__shard_query(&res, st, s, b.ptr, b.len)))
			goto done;
		MYSQL_ROW row = mysql_fetch_row(res);
		if (row) {
			found = true;
			old_from_row(&old, row, mysql_fetch_lengths(res));
		}
		mysql_free_result(res);
	} else if ((rc = bs__shard_exec(st, s, b.ptr, b.len))) {
		goto done;
	}
	in_tx = false;

	if (bs_fault("after_entity_write")) {
		char hex[33];
		bs_id_hex(hex, &id);
		fprintf(stderr, "bagstore: fault after_entity_write: entity %s written, exiting before its index rows\n", hex);
		_exit(75);
	}
	if ((rc = write_rows(st, cat, &id, &old, found, bag)))
		goto done;
	if (id_out)
		*id_out = id;
done:
	if (in_tx && rc)
		rollback(st, s);
	bs_value_clear(&old);
	bs_bytes_free(&body);
	bs__buf_free(&b);
	return rc;
}

int bs_put(bs_store_t *st, const bs_value_t *bag, bs_id_t *id_out)
{
	return put_impl(st, bag, id_out, false, 0);
}

int bs_put_if(bs_store_t *st, const bs_value_t *bag, int64_t expect_updated_us)
{
	return put_impl(st, bag, NULL, true, expect_updated_us);
}

int bs_get_raw(bs_bytes_t *body, bs_store_t *st, const bs_id_t *id, int64_t *updated_us)
{
	bs_buf_t b = {0};
	MYSQL_RES *res = NULL;
	int s = bs_route_id(id, st->n), rc;
	memset(body, 0, sizeof *body);
	bs__buf_puts(&b, "SELECT body, UNIX_TIMESTAMP(updated) FROM entities WHERE id=");
	id_lit(&b, id);
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, s, b.ptr, b.len)))
		goto done;
	MYSQL_ROW row = mysql_fetch_row(res);
	if (!row) {
		char hex[33];
		bs_id_hex(hex, id);
		rc = bs_error(BS_ENOTFOUND, "entity %s not found (looked on shard %s)", hex, st->shards[s].conf->name);
		goto done;
	}
	unsigned long len = mysql_fetch_lengths(res)[0];
	if (!(body->ptr = malloc(len ? len : 1))) {
		rc = bs_error(BS_ENOMEM, "out of memory");
		goto done;
	}
	if (row[0])
		memcpy(body->ptr, row[0], len);
	body->len = body->cap = len;
	if (updated_us)
		*updated_us = bs__parse_unix_us(row[1]);
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

int bs_get(bs_value_t *out, bs_store_t *st, const bs_id_t *id, int64_t *updated_us, int *shard)
{
	bs_bytes_t body;
	int s = bs_route_id(id, st->n);
	bs_value_nil(out);
	int rc = bs_get_raw(&body, st, id, updated_us);
	if (rc)
		return rc;
	if (shard)
		*shard = s;
	if ((rc = bs_body_decode(out, body.ptr, body.len))) {
		char hex[33], msg[1024];
		bs_id_hex(hex, id);
		snprintf(msg, sizeof msg, "%s", bs_last_error());
		rc = bs_error(rc, "entity %s on shard %s: %s", hex, st->shards[s].conf->name, msg);
	}
	bs_bytes_free(&body);
	return rc;
}

int bs_delete(bs_store_t *st, const bs_id_t *id)
{
	bs_buf_t b = {0};
	bs_value_t old;
	const bs_index_list_t *cat;
	bool found = false, in_tx = false;
	int s = bs_route_id(id, st->n), rc;

	bs_value_nil(&old);
	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing to delete");
	if ((rc = bs__catalog_cached(&cat, st)) || (rc = bs__shard_check_writable(st, s)))
		goto done;
	in_tx = true;
	if ((rc = read_for_update(&old, &found, NULL, st, s, id)))
		goto done;
	if (!found) {
		char hex[33];
		bs_id_hex(hex, id);
		rc = bs_error(BS_ENOTFOUND, "entity %s not found (looked on shard %s)", hex, st->shards[s].conf->name);
		goto done;
	}
	bs__buf_puts(&b, "DELETE FROM entities WHERE id=");
	id_lit(&b, id);
	bs__buf_puts(&b, ";COMMIT");
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_exec(st, s, b.ptr, b.len)))
		goto done;
	in_tx = false;
	rc = write_rows(st, cat, id, &old, true, NULL);
done:
	if (in_tx && rc)
		rollback(st, s);
	bs_value_clear(&old);
	bs__buf_free(&b);
	return rc;
}

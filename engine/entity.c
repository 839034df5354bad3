/*
 * entity.c - put, get and delete: the write path of doc/DESIGN.md.
 *
 * 1. One round trip to the entity's shard: in one InnoDB transaction, read
 *    the current body FOR UPDATE, write the new one (its `updated` strictly
 *    later than the one before, so every write of a row is a new version),
 *    and, when indexes are maintained, an intent row naming this write,
 *    whose named lock this connection takes first.
 * 2. The rows of every index writers maintain (building or ready): the old
 *    row deleted on the old value's shard, the new row upserted on the new
 *    value's shard.
 * 3. Sent without waiting: delete the intent if the entity is still the
 *    version this write made, and release the lock. An intent that stays
 *    (another writer changed the entity meanwhile, so these rows may have
 *    landed after newer ones; or the writer died between 1 and 3) is made
 *    right from the current body by the repair loop once its lock is free,
 *    whatever its age (repair.c). So once writers and the cleaner are
 *    quiet, every index row is what the current body implies.
 *
 * A deadlock or lock wait timeout in step 1 rolls back and retries, a few
 * times with backoff. There is no cross-shard transaction; readers never
 * trust index rows (they re-check bodies).
 */
#include "internal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

/* Was the last failure on this shard one a retry may cure? */
static bool retryable(bs_store_t *st, int shard)
{
	unsigned e = bs__shard_last_errno(st, shard);
	return e == 1213 /* ER_LOCK_DEADLOCK */ || e == 1205 /* ER_LOCK_WAIT_TIMEOUT */;
}

#define WRITE_TRIES 10

/* Sleep before try number `tries` (1..): 2, 4, 8... ms up to 128, with
 * jitter: eight writers on the same new rows need a few rounds. */
static void backoff(int tries)
{
	long ms = 1L << (tries < 7 ? tries : 7);
	struct timespec ts = { 0, (ms + (long)(bs_now_us() % ms)) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Send the per-shard index statements, to every target shard at once
 * (fanout.c); the statements are idempotent (a delete and an upsert per
 * index), so a shard that answers with a deadlock or lock wait timeout is
 * sent them again. The first failure is reported with the note that the
 * entity itself is written. */
static int index_flush(bs_store_t *st, bs_buf_t *per_shard, const bs_id_t *id)
{
	bs__shard_stmt_t *q = calloc((size_t)st->n, sizeof *q);
	int rc = 0;
	if (!q)
		return bs_error(BS_ENOMEM, "out of memory");
	for (int i = 0; i < st->n; i++) {
		if ((rc = bs__buf_ok(&per_shard[i])))
			goto done;
		q[i].sql = per_shard[i].len ? per_shard[i].ptr : NULL;
		q[i].len = per_shard[i].len;
	}
	for (int tries = 1;; tries++) {
		rc = bs__shard_run(st, q);
		bs__shard_stmts_clear(q, st->n);
		bool again = false;
		for (int i = 0; i < st->n; i++) {
			if (q[i].sql && q[i].rc == BS_ECONFLICT && retryable(st, i))
				again = true;
			else if (q[i].sql && !q[i].rc)
				q[i].sql = NULL; /* done: not sent again */
		}
		if (!rc || !again || tries == WRITE_TRIES)
			break;
		backoff(tries);
	}
	if (rc) {
		char hex[33], msg[1024];
		bs_id_hex(hex, id);
		snprintf(msg, sizeof msg, "%s", bs_last_error());
		rc = bs_error(rc, "entity %s is written, but its index rows are not: %s "
		                  "(readers filter stale rows; the cleaner repairs them)", hex, msg);
	}
done:
	free(q);
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
 * the body does not decode or is not this entity's (index_sql then clears
 * its rows everywhere). */
static void old_from_row(bs_value_t *old, MYSQL_ROW row, const unsigned long *lens, const bs_id_t *id)
{
	if (!row[0] || bs__body_decode_row(old, row[0], lens[0], id->b, "old body"))
		bs_value_nil(old);
	bs_error_clear();
}

/* Step 2: make every maintained index's rows right for one entity: old
 * is the stored bag before (NIL when absent or undecodable; found tells
 * which), bag the new one (NULL on delete). */
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

/* The write in progress: the entity, its shard, what it held before, and
 * its intent's token (also its named lock; "" when there is none). */
typedef struct {
	bs_id_t id;
	int shard;
	bs_value_t old;
	bool found;
	int64_t old_us;
	int64_t new_us;  /* the version written, 0 when only @bs_v knows it */
	char token[48];
} write_t;

static void rollback(bs_store_t *st, write_t *w)
{
	char msg[1024];
	int code = bs_last_error_code();
	snprintf(msg, sizeof msg, "%s", bs_last_error());
	if (st->shards[w->shard].conn) {
		bs_buf_t b = {0};
		bs__buf_puts(&b, "ROLLBACK");
		if (w->token[0]) {
			bs__buf_puts(&b, ";DO RELEASE_LOCK(");
			bs__buf_hex(&b, w->token, strlen(w->token));
			bs__buf_puts(&b, ")");
		}
		if (!bs__buf_ok(&b))
			bs__shard_exec(st, w->shard, b.ptr, b.len);
		bs__buf_free(&b);
	}
	bs_error(code, "%s", msg);
}

/* The condition of bs_put_if against what the row holds. */
static int check_expected(const write_t *w, int64_t expect_us)
{
	char hex[33];
	if ((expect_us == 0 && !w->found) || (expect_us != 0 && w->found && w->old_us == expect_us))
		return 0;
	bs_id_hex(hex, &w->id);
	if (w->found)
		return bs_error(BS_ECONFLICT, "entity %s changed since it was read (updated %lld, expected %lld): not written",
		                hex, (long long)w->old_us, (long long)expect_us);
	return bs_error(BS_ECONFLICT, "entity %s %s: not written", hex,
	                expect_us ? "was deleted since it was read" : "already exists");
}

/* Step 1's statements after the read: the row written (body) or deleted
 * (body NULL) at a version later than any before, the version kept in
 * @bs_v for step 3, the intent row, COMMIT. */
static void write_sql(bs_buf_t *b, const write_t *w, const bs_bytes_t *body)
{
	if (body) {
		bs__buf_puts(b, "INSERT INTO entities (id, updated, body) VALUES (");
		id_lit(b, &w->id);
		bs__buf_puts(b, ",NOW(6),");
		bs__buf_hex(b, body->ptr, body->len);
		bs__buf_puts(b, ") ON DUPLICATE KEY UPDATE updated=GREATEST(VALUES(updated),"
		                "updated+INTERVAL 1 MICROSECOND),body=VALUES(body)");
	} else {
		bs__buf_puts(b, "DELETE FROM entities WHERE id=");
		id_lit(b, &w->id);
	}
	if (w->token[0]) {
		if (body) {
			bs__buf_puts(b, ";SET @bs_v=(SELECT updated FROM entities WHERE id=");
			id_lit(b, &w->id);
			bs__buf_puts(b, ")");
		}
		bs__buf_puts(b, ";INSERT INTO bagstore_intents (token, entity_id) VALUES (");
		bs__buf_hex(b, w->token, strlen(w->token));
		bs__buf_puts(b, ",");
		id_lit(b, &w->id);
		bs__buf_puts(b, ")");
	}
	bs__buf_puts(b, ";COMMIT");
}

/* Step 1's opening: the intent's lock, the transaction, the current row
 * read FOR UPDATE. */
static void read_sql(bs_buf_t *b, const write_t *w)
{
	if (w->token[0]) {
		bs__buf_puts(b, "DO GET_LOCK(");
		bs__buf_hex(b, w->token, strlen(w->token));
		bs__buf_puts(b, ",0);");
	}
	bs__buf_puts(b, "START TRANSACTION;SELECT body, UNIX_TIMESTAMP(updated) FROM entities WHERE id=");
	id_lit(b, &w->id);
	bs__buf_puts(b, " FOR UPDATE");
}

/* Step 1 with no index to maintain and no condition: no old body to read,
 * no intent; one statement (and the rows it touched, for a delete). */
static int plain_write(bs_store_t *st, write_t *w, const bs_bytes_t *body)
{
	bs_buf_t b = {0};
	MYSQL_RES *res = NULL;
	int rc;
	if (body) {
		bs__buf_puts(&b, "INSERT INTO entities (id, updated, body) VALUES (");
		id_lit(&b, &w->id);
		bs__buf_puts(&b, ",NOW(6),");
		bs__buf_hex(&b, body->ptr, body->len);
		bs__buf_puts(&b, ") ON DUPLICATE KEY UPDATE updated=GREATEST(VALUES(updated),"
		                 "updated+INTERVAL 1 MICROSECOND),body=VALUES(body)");
		if (!(rc = bs__buf_ok(&b)))
			rc = bs__shard_exec(st, w->shard, b.ptr, b.len);
	} else {
		bs__buf_puts(&b, "DELETE FROM entities WHERE id=");
		id_lit(&b, &w->id);
		bs__buf_puts(&b, ";SELECT ROW_COUNT()");
		if (!(rc = bs__buf_ok(&b)) && !(rc = bs__shard_query(&res, st, w->shard, b.ptr, b.len))) {
			MYSQL_ROW row = mysql_fetch_row(res);
			w->found = row && row[0] && strcmp(row[0], "0");
			mysql_free_result(res);
		}
	}
	bs__buf_free(&b);
	return rc;
}

/* Step 1 on MariaDB 10.5 and later, unconditional: two statements and no
 * explicit transaction. The intent goes first (with its lock, and the
 * reset of @bs_old): once it is in, whatever the entity write does is
 * covered. Then the entity is written in one statement that reads the body
 * it replaces into @bs_old as it goes (the row lock makes that exact) and
 * hands back that old body and the new version (RETURNING); a delete
 * returns the body it removed. */
static int returning_write(bs_store_t *st, write_t *w, const bs_bytes_t *body)
{
	bs_buf_t b = {0};
	MYSQL_RES *res = NULL;
	int rc;
	bs__buf_puts(&b, "INSERT IGNORE INTO bagstore_intents (token, entity_id) SELECT ");
	bs__buf_hex(&b, w->token, strlen(w->token));
	bs__buf_puts(&b, ",");
	id_lit(&b, &w->id);
	bs__buf_puts(&b, " FROM DUAL WHERE (@bs_old:=NULL) IS NULL AND IF(IS_USED_LOCK(");
	bs__buf_hex(&b, w->token, strlen(w->token));
	bs__buf_puts(&b, ")=CONNECTION_ID(),1,GET_LOCK(");
	bs__buf_hex(&b, w->token, strlen(w->token));
	bs__buf_puts(&b, ",0))=1;");
	if (body) {
		bs__buf_puts(&b, "INSERT INTO entities (id, updated, body) VALUES (");
		id_lit(&b, &w->id);
		bs__buf_puts(&b, ",NOW(6),");
		bs__buf_hex(&b, body->ptr, body->len);
		bs__buf_puts(&b, ") ON DUPLICATE KEY UPDATE body=IF((@bs_old:=body) IS NULL,VALUES(body),VALUES(body)),"
		                 "updated=GREATEST(VALUES(updated),updated+INTERVAL 1 MICROSECOND)"
		                 " RETURNING @bs_old, UNIX_TIMESTAMP(updated)");
	} else {
		bs__buf_puts(&b, "DELETE FROM entities WHERE id=");
		id_lit(&b, &w->id);
		bs__buf_puts(&b, " RETURNING body, UNIX_TIMESTAMP(updated)");
	}
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, w->shard, b.ptr, b.len)))
		goto done;
	MYSQL_ROW row = mysql_fetch_row(res);
	if (body) {
		/* the old body; the new version, for step 3 */
		w->found = row && row[0];
		w->new_us = row ? bs__parse_unix_us(row[1]) : 0;
		if (w->found)
			old_from_row(&w->old, row, mysql_fetch_lengths(res), &w->id);
	} else if (row) {
		w->found = true;
		old_from_row(&w->old, row, mysql_fetch_lengths(res), &w->id);
	}
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

/* Step 1, once: one round trip, or two for a conditional write (whose
 * condition is checked between the read and the write). */
static int entity_step(bool *retry, bs_store_t *st, write_t *w, const bs_bytes_t *body, bool conditional,
                       int64_t expect_us)
{
	bs_buf_t b = {0};
	MYSQL_RES *res = NULL;
	bool in_tx = true;
	int rc;
	bs_value_clear(&w->old);
	w->found = false;
	if (!conditional && (!w->token[0] || (st->shards[w->shard].conn && st->shards[w->shard].returning))) {
		rc = w->token[0] ? returning_write(st, w, body) : plain_write(st, w, body);
		*retry = rc == BS_ECONFLICT && retryable(st, w->shard);
		return rc;
	}
	read_sql(&b, w);
	if (!conditional) {
		bs__buf_puts(&b, ";");
		write_sql(&b, w, body);
	}
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, w->shard, b.ptr, b.len)))
		goto done;
	MYSQL_ROW row = mysql_fetch_row(res);
	if (row) {
		w->found = true;
		w->old_us = bs__parse_unix_us(row[1]);
		old_from_row(&w->old, row, mysql_fetch_lengths(res), &w->id);
	}
	in_tx = conditional;
	if (conditional) {
		if ((rc = check_expected(w, expect_us)))
			goto done;
		bs__buf_reset(&b);
		write_sql(&b, w, body);
		if (!(rc = bs__buf_ok(&b)) && !(rc = bs__shard_exec(st, w->shard, b.ptr, b.len)))
			in_tx = false;
	}
done:
	/* read before the rollback, whose own statement resets it */
	*retry = rc == BS_ECONFLICT && retryable(st, w->shard);
	if (rc && in_tx)
		rollback(st, w);
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

/* Step 1 with retries of deadlocks and lock wait timeouts. */
static int entity_write(bs_store_t *st, write_t *w, const bs_bytes_t *body, bool conditional,
                        int64_t expect_us)
{
	for (int tries = 1;; tries++) {
		bool retry = false;
		int rc = entity_step(&retry, st, w, body, conditional, expect_us);
		if (!rc || !retry)
			return rc;
		if (tries == WRITE_TRIES) {
			char msg[1024];
			snprintf(msg, sizeof msg, "%s", bs_last_error());
			return bs_error(rc, "%s (gave up after %d tries)", msg, tries);
		}
		backoff(tries);
	}
}

/* Step 3, sent without waiting: the intent goes if the entity is still
 * this write's version (or still gone, for a delete); the lock goes. */
static void settle_send(bs_store_t *st, const write_t *w, bool deleted)
{
	bs_buf_t b = {0};
	if (!w->token[0])
		return;
	bs__buf_puts(&b, "DELETE FROM bagstore_intents WHERE token=");
	bs__buf_hex(&b, w->token, strlen(w->token));
	if (deleted)
		bs__buf_puts(&b, " AND NOT EXISTS (SELECT 1 FROM entities WHERE id=");
	else if (w->new_us)
		bs__buf_printf(&b, " AND EXISTS (SELECT 1 FROM entities WHERE updated=FROM_UNIXTIME(%lld.%06lld) AND id=",
		               (long long)(w->new_us / 1000000), (long long)(w->new_us % 1000000));
	else
		bs__buf_puts(&b, " AND EXISTS (SELECT 1 FROM entities WHERE updated=@bs_v AND id=");
	id_lit(&b, &w->id);
	bs__buf_puts(&b, ");DO RELEASE_LOCK(");
	bs__buf_hex(&b, w->token, strlen(w->token));
	bs__buf_puts(&b, ")");
	/* the error of the index rows, when they failed, is the call's: a send
	 * that fails here (to the same lost shard, likely) keeps it */
	char msg[1024];
	int code = bs_last_error_code();
	snprintf(msg, sizeof msg, "%s", bs_last_error());
	if (!bs__buf_ok(&b) && bs__shard_send(st, w->shard, b.ptr, b.len, w->token)) {
		/* the intent stays: the repair loop makes the rows right */
		if (code)
			bs_error(code, "%s", msg);
		else
			bs_error_clear();
	}
	bs__buf_free(&b);
}

/* A fresh token for a write's intent and named lock. */
static void new_token(char token[48])
{
	bs_id_t r;
	char hex[33];
	bs_id_generate(&r);
	bs_id_hex(hex, &r);
	snprintf(token, 48, "bagstore.w.%s", hex);
}

/* Test fault points between steps 1 and 2 (bulk.c's too). */
void bs__fault_after_entity(const bs_id_t *id)
{
	char hex[33];
	if (bs_fault("after_entity_write")) {
		bs_id_hex(hex, id);
		fprintf(stderr, "bagstore: fault after_entity_write: entity %s written, exiting before its index rows\n", hex);
		_exit(75);
	}
	if (bs_fault("pause_before_index_rows")) {
		bs_id_hex(hex, id);
		fprintf(stderr, "bagstore: fault pause_before_index_rows: entity %s written; stopped before its "
		                "index rows (kill -CONT %d resumes)\n", hex, (int)getpid());
		raise(SIGSTOP);
	}
}

/* The whole write of bag (encoded as body); bag NULL deletes (absent:
 * BS_ENOTFOUND). */
static int write_entity(bs_store_t *st, const bs_id_t *id, const bs_value_t *bag, const bs_bytes_t *body,
                        bool conditional, int64_t expect_us)
{
	const bs_index_list_t *cat;
	write_t w = { .id = *id, .shard = bs_route_id(id, st->n) };
	int rc;

	bs_value_nil(&w.old);
	if ((rc = bs__catalog_cached(&cat, st)) || (rc = bs__shard_check(st, w.shard)))
		goto done;
	if (maintained_count(cat))
		new_token(w.token);
	if ((rc = entity_write(st, &w, body, conditional, expect_us)))
		goto done;
	if (!bag && !w.found) {
		char hex[33];
		settle_send(st, &w, true);
		bs_id_hex(hex, id);
		rc = bs_error(BS_ENOTFOUND, "entity %s not found (looked on shard %s)", hex, st->shards[w.shard].conf->name);
		goto done;
	}
	bs__fault_after_entity(id);
	rc = write_rows(st, cat, id, &w.old, w.found, bag);
	settle_send(st, &w, !bag);
done:
	bs_value_clear(&w.old);
	return rc;
}

int bs_put(bs_store_t *st, const bs_value_t *bag, bs_id_t *id_out)
{
	bs_bytes_t body = {0};
	bs_id_t id;
	int rc;
	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing to write");
	if (!(rc = bs_bag_id(&id, bag)) && !(rc = bs_body_encode(&body, bag)) &&
	    !(rc = write_entity(st, &id, bag, &body, false, 0)) && id_out)
		*id_out = id;
	bs_bytes_free(&body);
	return rc;
}

int bs_put_if(bs_store_t *st, const bs_value_t *bag, int64_t expect_updated_us)
{
	bs_bytes_t body = {0};
	bs_id_t id;
	int rc;
	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing to write");
	if (!(rc = bs_bag_id(&id, bag)) && !(rc = bs_body_encode(&body, bag)))
		rc = write_entity(st, &id, bag, &body, true, expect_updated_us);
	bs_bytes_free(&body);
	return rc;
}

int bs_get_raw(bs_bytes_t *body, bs_store_t *st, const bs_id_t *id, int64_t *updated_us)
{
	bs_buf_t b = {0};
	MYSQL_RES *res = NULL;
	int s = bs_route_id(id, st->n), rc;
	memset(body, 0, sizeof *body);
	bs__buf_puts(&b, "SELECT body, UNIX_TIMESTAMP(updated) FROM entities WHERE id=");
	id_lit(&b, id);
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_check(st, s)) || (rc = bs__shard_query(&res, st, s, b.ptr, b.len)))
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
	char where[96];
	snprintf(where, sizeof where, "shard %s", st->shards[s].conf->name);
	rc = bs__body_decode_row(out, body.ptr, body.len, id->b, where);
	bs_bytes_free(&body);
	return rc;
}

int bs_delete(bs_store_t *st, const bs_id_t *id)
{
	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing to delete");
	return write_entity(st, id, NULL, NULL, false, 0);
}

int bs_delete_if(bs_store_t *st, const bs_id_t *id, int64_t expect_updated_us)
{
	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing to delete");
	if (!expect_updated_us)
		return bs_error(BS_EINVAL, "bs_delete_if: an expected updated time is required");
	return write_entity(st, id, NULL, NULL, true, expect_updated_us);
}

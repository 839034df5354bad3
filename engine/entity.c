/*
 * entity.c - put, get and delete: the write path of doc/DESIGN.md.
 *
 * 1. The entity's shard: when indexes are maintained, an intent row naming
 *    this write, whose named lock this connection takes, committed before
 *    the entity changes; then the new body written (its `updated` strictly
 *    later than the one before, so every write of a row is a new version),
 *    the old one handed back. Nearly always two prepared statements in
 *    autocommit (one without an index); the fence's full form, one
 *    transaction in one round trip, when the bucket is not simply owned.
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
 * Every write is fenced (doc/DESIGN.md, "Buckets and resharding"): step 1
 * share-locks the entity's bucket's ownership row on its shard and writes
 * only when the shard owns it; step 2's statements on a shard, in one
 * transaction, share-lock the buckets they write and apply only when the
 * shard owns them all. A shard that refuses says where the bucket went:
 * the write follows it (or reads the map again) and goes there. While a
 * bucket is leaving, the entity is logged for its move's catch-up.
 *
 * A deadlock or lock wait timeout in step 1 rolls back and retries, a few
 * times with backoff. There is no cross-shard transaction; readers never
 * trust index rows (they re-check bodies).
 */
#include "internal.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void id_lit(bs_buf_t *b, const bs_id_t *id)
{
	bs__buf_hex(b, id->b, 16);
}

/* Seconds a write waits for a bucket's ownership row: a move's cut-over
 * holds it at most cleaner.max_fence (1 s by default). */
#define FENCE_WAIT_S BS__FENCE_WAIT_S
/* a number's macro as a string literal (the prepared statements' texts) */
#define STR(x) BS__STR(x)
/* Shards a read or write follows when a bucket is refused, before it
 * gives up. */
#define WRITE_HOPS 8

/* Before hop number `hop` (0..): nothing at first, then a few ms, as a
 * cut-over finishes its roll-forward. */
static void hop_pause(int hop)
{
	if (hop < 1)
		return;
	struct timespec ts = { 0, (long)(hop < 4 ? hop * 5 : 50) * 1000000L };
	nanosleep(&ts, NULL);
}

/* One shard's index statements: the buckets they write (fenced together,
 * in ascending order, as a move's cut-over locks them) and the SQL. */
typedef struct {
	bs_buf_t sql;
	int *buckets;
	int nb, cap;
	bool anywhere; /* deletes of a row whose bucket is unknown */
	bool refused;  /* the shard did not own them all: nothing applied */
	/* the statements, and where the first one's fence condition is in sql
	 * (fence_fast's one-statement form replaces it) */
	int nstmt;
	bool del;
	size_t cond_at, cond_end;
	/* the first statement's index, entity and values (scalars copied,
	 * bytes borrowed from the bag), to send fence_fast's one-statement
	 * form prepared (one_prepared) */
	const bs_index_t *idx;
	bs_id_t id;
	bs__param_t vals[BS_INDEX_MAX_PROPS];
} shard_rows_t;

static void rows_bucket(shard_rows_t *r, int bucket)
{
	for (int k = 0; k < r->nb; k++)
		if (r->buckets[k] == bucket)
			return;
	if (r->nb == r->cap) {
		int cap = r->cap ? r->cap * 2 : 4;
		int *b = realloc(r->buckets, (size_t)cap * sizeof *b);
		if (!b) {
			r->sql.oom = true;
			return;
		}
		r->buckets = b;
		r->cap = cap;
	}
	r->buckets[r->nb++] = bucket;
}

/* Delete idx's row of id on this shard: only if it owns the row's bucket
 * (bucket < 0: the row's bucket is unknown; deleting it anywhere is right). */
static void append_delete(shard_rows_t *r, const bs_index_t *idx, const bs_id_t *id, int bucket)
{
	bs_buf_t *b = &r->sql;
	bs__buf_puts(b, b->len ? ";DELETE FROM " : "DELETE FROM ");
	bs__buf_ident(b, idx->name);
	bs__buf_puts(b, " WHERE entity_id=");
	id_lit(b, id);
	if (!r->nstmt++) {
		r->del = true;
		r->cond_at = r->cond_end = b->len;
		r->idx = idx;
		r->id = *id;
	}
	if (bucket >= 0) {
		bs__buf_puts(b, " AND @bs_o=@bs_want");
		rows_bucket(r, bucket);
	} else {
		r->anywhere = true;
	}
	if (r->nstmt == 1)
		r->cond_end = b->len;
}

/* Upsert idx's row of id (values vals) on this shard, only if it owns the
 * row's bucket. */
static void append_upsert(shard_rows_t *r, const bs_index_t *idx, const bs_id_t *id, const bs_value_t *const *vals,
                          int bucket)
{
	bs_buf_t *b = &r->sql;
	if (b->len)
		bs__buf_puts(b, ";");
	bs__buf_index_insert(b, idx);
	bs__buf_puts(b, " SELECT ");
	for (int k = 0; k < idx->nprops; k++) {
		bs__buf_value(b, vals[k], &idx->props[k]);
		bs__buf_puts(b, ",");
	}
	id_lit(b, id);
	if (!r->nstmt++) {
		r->cond_at = b->len;
		r->idx = idx;
		r->id = *id;
		for (int k = 0; k < idx->nprops; k++)
			r->vals[k] = bs__param_value(vals[k], &idx->props[k]);
	}
	bs__buf_puts(b, " FROM DUAL WHERE @bs_o=@bs_want");
	if (r->nstmt == 1)
		r->cond_end = b->len;
	bs__buf_index_update(b, idx);
	rows_bucket(r, bucket);
}

/* Statements that make idx's rows for one entity right, appended per shard.
 * old is the bag before, NULL when there was none; old_unknown when there
 * was one but its body does not decode, so its rows could be on any shard.
 * bag is the new bag, NULL on delete. */
static void index_sql(shard_rows_t *per_shard, const bs_index_t *idx, const bs_id_t *id, const bs_value_t *old,
                      bool old_unknown, const bs_value_t *bag, const bs_store_t *st)
{
	/* the temporaries only ever hold floats (ints widened): nothing to free */
	const bs_value_t *nv[BS_INDEX_MAX_PROPS], *ov[BS_INDEX_MAX_PROPS];
	bs_value_t nt[BS_INDEX_MAX_PROPS], ot[BS_INDEX_MAX_PROPS];
	int n = st->n, nb = -1, ob = -1;
	int ns = bag ? bs__index_row_route(nv, nt, &nb, idx, bag, st, NULL) : -1;
	int os = old ? bs__index_row_route(ov, ot, &ob, idx, old, st, NULL) : -1;

	if (os >= 0 && ns == os && nb == ob && idx->state == BS_INDEX_READY) {
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
				append_delete(&per_shard[i], idx, id, -1);
	} else if (os >= 0 && os != ns) {
		append_delete(&per_shard[os], idx, id, ob);
	}
	if (ns >= 0) {
		append_upsert(&per_shard[ns], idx, id, nv, nb);
		/* the upsert replaces the old row on the same shard: its bucket is
		 * written too (fenced, and logged while it is leaving, so that a
		 * move's copy of the old row goes) */
		if (os == ns && ob >= 0 && ob != nb)
			rows_bucket(&per_shard[ns], ob);
	}
}

static int int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* One shard's statements in their fence: a transaction that share-locks
 * the ownership rows of the buckets written (ascending), applies the
 * statements only when the shard owns them all, logs the entity for the
 * moves of its leaving buckets, and answers how many it owns. */
static void fence_wrap(bs_buf_t *out, shard_rows_t *r, const bs_id_t *id)
{
	if (r->nb > 1) /* none: only deletes of rows whose bucket is unknown */
		qsort(r->buckets, (size_t)r->nb, sizeof *r->buckets, int_cmp);
	bs__buf_printf(out,
	               "SET @bs_want=%d;START TRANSACTION;SELECT COUNT(*) INTO @bs_o FROM bagstore_buckets"
	               " WHERE state IN " BS__OWNING_SQL " AND bucket IN (-1",
	               r->nb);
	for (int k = 0; k < r->nb; k++)
		bs__buf_printf(out, ",%d", r->buckets[k]);
	bs__buf_printf(out, ") LOCK IN SHARE MODE WAIT %d;", FENCE_WAIT_S);
	bs__buf_putn(out, r->sql.ptr, r->sql.len);
	bs__buf_puts(out, ";INSERT INTO bagstore_move_log (move_id, kind, id) SELECT move_id, 1, ");
	id_lit(out, id);
	bs__buf_puts(out, " FROM bagstore_buckets WHERE state='leaving' AND @bs_o=@bs_want AND bucket IN (-1");
	for (int k = 0; k < r->nb; k++)
		bs__buf_printf(out, ",%d", r->buckets[k]);
	bs__buf_puts(out, ") ON DUPLICATE KEY UPDATE n=n+1");
	if (r->anywhere) { /* the row could have been in any leaving bucket */
		bs__buf_puts(out, ";INSERT INTO bagstore_move_log (move_id, kind, id) SELECT DISTINCT move_id, 1, ");
		id_lit(out, id);
		bs__buf_puts(out, " FROM bagstore_buckets WHERE state='leaving' ON DUPLICATE KEY UPDATE n=n+1");
	}
	bs__buf_puts(out, ";SELECT @bs_o=@bs_want;COMMIT");
	if (r->sql.oom)
		out->oom = true;
}

/* fence_fast's one-statement form: one statement on one bucket. */
static bool fence_one(const shard_rows_t *r)
{
	return r->nstmt == 1 && r->nb == 1;
}

/* fence_wrap's fast form, while every bucket written is simply owned here
 * (none leaving: nothing to log for a move): one SELECT share-locks the
 * ownership rows (ascending) and answers whether all are 'owned'; the
 * statements apply only then. Three statements around them in place of
 * six, or one for one statement on one bucket (its row count, read by the
 * client, is the answer: fence_one). A
 * refusal here (or a delete that found no row) applied nothing: the full
 * form follows. Not for deletes of a row whose bucket is unknown (r->anywhere: they
 * are logged in every leaving bucket). */
static void fence_fast(bs_buf_t *out, shard_rows_t *r)
{
	if (fence_one(r)) {
		/* one statement on one bucket: the statement reads the ownership
		 * row itself, share-locked (as fast_write's), in autocommit; it
		 * applied when it found its row */
		bs__buf_putn(out, r->sql.ptr, r->cond_at);
		if (r->del)
			bs__buf_printf(out,
			               " AND (SELECT state FROM bagstore_buckets WHERE bucket=%d LOCK IN SHARE MODE"
			               " WAIT %d)='owned'",
			               r->buckets[0], FENCE_WAIT_S);
		else
			bs__buf_printf(out,
			               " FROM bagstore_buckets WHERE bucket=%d AND state='owned' LOCK IN SHARE MODE"
			               " WAIT %d",
			               r->buckets[0], FENCE_WAIT_S);
		bs__buf_putn(out, r->sql.ptr + r->cond_end, r->sql.len - r->cond_end);
		if (r->sql.oom)
			out->oom = true;
		return;
	}
	if (r->nb > 1)
		qsort(r->buckets, (size_t)r->nb, sizeof *r->buckets, int_cmp);
	bs__buf_printf(out,
	               "START TRANSACTION;SELECT (@bs_o:=COUNT(*))=(@bs_want:=%d) FROM bagstore_buckets"
	               " WHERE state='owned' AND bucket IN (-1",
	               r->nb);
	for (int k = 0; k < r->nb; k++)
		bs__buf_printf(out, ",%d", r->buckets[k]);
	bs__buf_printf(out, ") LOCK IN SHARE MODE WAIT %d;", FENCE_WAIT_S);
	bs__buf_putn(out, r->sql.ptr, r->sql.len);
	bs__buf_puts(out, ";COMMIT");
	if (r->sql.oom)
		out->oom = true;
}

/* fence_fast's one-statement form as a prepared statement (the same
 * text with a '?' for each value, the entity's id and the bucket) into
 * sql, and its parameters into p; their count. */
static int one_prepared(bs_buf_t *sql, bs__param_t *p, const shard_rows_t *r)
{
	const bs_index_t *idx = r->idx;
	int n = 0;
	if (r->del) {
		bs__buf_puts(sql, "DELETE FROM ");
		bs__buf_ident(sql, idx->name);
		bs__buf_puts(sql,
		             " WHERE entity_id=? AND (SELECT state FROM bagstore_buckets WHERE bucket=? LOCK IN SHARE"
		             " MODE WAIT " STR(BS__FENCE_WAIT_S) ")='owned'");
	} else {
		bs__buf_index_insert(sql, idx);
		bs__buf_puts(sql, " SELECT ");
		for (int k = 0; k < idx->nprops; k++) {
			bs__buf_puts(sql, "?,");
			p[n++] = r->vals[k];
		}
		bs__buf_puts(sql,
		             "? FROM bagstore_buckets WHERE bucket=? AND state='owned' LOCK IN SHARE MODE WAIT " STR(
				     BS__FENCE_WAIT_S));
		bs__buf_index_update(sql, idx);
	}
	p[n++] = (bs__param_t){ .p = r->id.b, .len = 16 };
	p[n++] = (bs__param_t){ .i = r->buckets[0], .type = BS__P_INT };
	return n;
}

/* The index rows of one shard, alone, in fence_fast's one-statement form,
 * prepared: most puts write one index row on one shard, and the fan-out
 * sends it as text. 1: it applied; 0: it did not (refused, or a delete
 * found nothing: the full form decides), or (*text) the server would not
 * prepare it: the fan-out's text; a failure: BS_E*, as the fan-out
 * reports one. */
static int index_one_prepared(bool *text, bs_store_t *st, int i, const shard_rows_t *r)
{
	bs__param_t p[BS_INDEX_MAX_PROPS + 2];
	bs_buf_t sql = { 0 };
	int64_t affected = 0;
	int n = one_prepared(&sql, p, r), rc;
	*text = false;
	if (!(rc = bs__buf_ok(&sql)))
		rc = bs__shard_prep_sql(NULL, &affected, text, st, i, sql.ptr, p, n);
	bs__buf_free(&sql);
	return rc ? rc : !*text && affected > 0;
}

/* Was the last failure on this shard one a retry may cure? */
static bool retryable(bs_store_t *st, int shard)
{
	unsigned e = bs__shard_last_errno(st, shard);
	return e == 1213 /* ER_LOCK_DEADLOCK */ || e == 1205 /* ER_LOCK_WAIT_TIMEOUT */ ||
	       e == 1467 /* ER_AUTOINC_READ_FAILED: the AUTO_INCREMENT lock, lost to a deadlock */;
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

/* One shard's answer to its fenced statements: the last result set holds
 * whether the shard owned every bucket written. */
static bool shard_refused(const bs__shard_stmt_t *q)
{
	MYSQL_ROW row = q->nres ? mysql_fetch_row(q->res[q->nres - 1]) : NULL;
	return !row || !row[0] || strcmp(row[0], "1") != 0;
}

/* A statement failed inside shard i's transaction: roll it back, keeping
 * MySQL's error number for retryable(). */
static void rollback_shard(bs_store_t *st, int i)
{
	unsigned err = st->shards[i].last_errno;
	if (st->shards[i].conn) {
		bs__shard_exec(st, i, "ROLLBACK", 8);
		bs_error_clear();
	}
	st->shards[i].last_errno = err;
}

/* Send the per-shard index statements, each shard's fenced in its
 * transaction, to every target shard at once (fanout.c); the statements
 * are idempotent, so a shard that answers with a deadlock or lock wait
 * timeout is sent them again. *refused: a shard no longer owned a bucket
 * written (nothing was applied there; the caller reads the map again and
 * sends them all again). The first failure is reported with the note that
 * the entity itself is written. */
/* Shard i's statements in their fence: the fast form first (fast[i]),
 * the full one once the fast one found a bucket not simply owned. */
static int fence_stmt(bs__shard_stmt_t *q, bs_buf_t *sql, shard_rows_t *r, const bs_id_t *id, bool fast)
{
	int rc;
	bs__buf_reset(sql);
	if (fast)
		fence_fast(sql, r);
	else
		fence_wrap(sql, r, id);
	if ((rc = bs__buf_ok(sql)))
		return rc;
	q->sql = sql->ptr;
	q->len = sql->len;
	return 0;
}

/* The intent's named lock: held on shard's connection since it was
 * taken (gen: that shard's conn_gen then); shard -1: no lock. */
typedef struct {
	int shard;
	unsigned long gen;
} lock_at_t;

/* Whether the lock is still held: its connection never closed since. */
static bool lock_kept(const bs_store_t *st, const lock_at_t *l)
{
	return l->shard < 0 || bs__lock_conn_kept(st, l->shard, l->gen);
}

/* What a write says when its lock went: "the connection ... was lost". */
static const char *lock_lost(char *buf, size_t size, const bs_store_t *st, const lock_at_t *l)
{
	return bs__lock_lost(buf, size, st, l->shard, "intent's lock");
}

static int index_flush(bool *refused, bs_store_t *st, shard_rows_t *per_shard, const bs_id_t *id, const char *done,
                       const lock_at_t *lock)
{
	bs__shard_stmt_t *q = calloc((size_t)st->n, sizeof *q);
	bs_buf_t *sql = calloc((size_t)st->n, sizeof *sql);
	bool *fast = calloc((size_t)st->n, sizeof *fast);
	int *err = calloc((size_t)st->n, sizeof *err);
	char(*msg)[512] = calloc((size_t)st->n, sizeof *msg);
	int rc = 0;
	*refused = false;
	if (!q || !sql || !fast || !err || !msg) {
		rc = bs_error(BS_ENOMEM, "out of memory");
		goto done;
	}
	int only = -1, nshards = 0;
	for (int i = 0; i < st->n; i++) {
		if (!per_shard[i].sql.len)
			continue;
		fast[i] = !per_shard[i].anywhere && per_shard[i].nb > 0;
		if ((rc = fence_stmt(&q[i], &sql[i], &per_shard[i], id, fast[i])))
			goto done;
		only = i;
		nshards++;
	}
	if (nshards == 1 && fast[only] && fence_one(&per_shard[only])) {
		/* one statement on one shard: prepared, without the fan-out */
		bool text = false;
		int one = index_one_prepared(&text, st, only, &per_shard[only]);
		if (one == 1)
			goto done; /* applied */
		if (one < 0 && !(one == BS_ECONFLICT && retryable(st, only))) {
			err[only] = one; /* failed for good: as the fan-out says it */
			snprintf(msg[only], sizeof msg[only], "%s", bs_last_error());
			goto report;
		}
		if (!one && !text) { /* nothing applied: the full form decides */
			fast[only] = false;
			if ((rc = fence_stmt(&q[only], &sql[only], &per_shard[only], id, false)))
				goto done;
		}
		/* not prepared, or a deadlock: the fan-out as before (the fast
		 * form again: it tries again) */
		bs_error_clear();
	}
	for (int tries = 1;;) {
		bool retry = false, pending = false;
		bs__shard_run(st, q); /* each shard's result is in q[i] */
		for (int i = 0; i < st->n; i++) {
			if (!q[i].sql)
				continue;
			if (!q[i].rc) {
				/* the one-statement form applied when it touched a row
				 * (CLIENT_FOUND_ROWS: an upsert that changed nothing too) */
				bool no =
					fast[i] && fence_one(&per_shard[i]) ? q[i].affected <= 0 : shard_refused(&q[i]);
				if (no && fast[i]) { /* nothing applied: the full form decides (not a retry) */
					bs__shard_stmts_clear(&q[i], 1);
					fast[i] = false;
					if (!fence_stmt(&q[i], &sql[i], &per_shard[i], id, false)) {
						pending = true;
						continue;
					}
					q[i].sql = NULL;
					err[i] = bs_last_error_code();
					snprintf(msg[i], sizeof msg[i], "%s", bs_last_error());
					continue;
				}
				err[i] = 0;
				per_shard[i].refused = no;
				*refused |= no;
				q[i].sql = NULL; /* done: not sent again */
				continue;
			}
			err[i] = q[i].rc;
			snprintf(msg[i], sizeof msg[i], "%s", q[i].msg);
			rollback_shard(st, i);
			if (q[i].rc == BS_ECONFLICT && retryable(st, i) && tries < WRITE_TRIES)
				retry = true;
			else
				q[i].sql = NULL; /* failed for good */
		}
		bs__shard_stmts_clear(q, st->n);
		if (!retry && !pending)
			break;
		if (!lock_kept(st, lock)) {
			/* the intent's lock went with its connection: the repair
			 * loop may settle the intent now, and rows sent after that
			 * could land stale with nothing to say so. Left to it */
			for (int i = 0; i < st->n; i++)
				if (q[i].sql) { /* to be sent again (a deadlock's): not now */
					char lost[256];
					err[i] = BS_EUNREACHABLE;
					snprintf(msg[i], sizeof msg[i], "%s; the rest left to the repair loop",
					         lock_lost(lost, sizeof lost, st, lock));
				}
			break;
		}
		if (retry)
			backoff(tries++);
	}
report:
	/* the first failed shard's (rollback_shard used the error slot since) */
	for (int i = 0; i < st->n && !rc; i++)
		if (err[i]) {
			char hex[33];
			bs_id_hex(hex, id);
			rc = bs_error(err[i],
			              "entity %s is %s, but its index rows are not: %s "
			              "(readers filter stale rows; the cleaner repairs them)",
			              hex, done, msg[i]);
		}
done:
	for (int i = 0; sql && i < st->n; i++)
		bs__buf_free(&sql[i]);
	free(sql);
	free(q);
	free(fast);
	free(err);
	free(msg);
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

static shard_rows_t *per_shard_new(int n)
{
	shard_rows_t *p = calloc((size_t)n, sizeof *p);
	if (!p)
		bs_error(BS_ENOMEM, "out of memory");
	return p;
}

static void per_shard_free(shard_rows_t *p, int n)
{
	if (!p)
		return;
	for (int i = 0; i < n; i++) {
		bs__buf_free(&p[i].sql);
		free(p[i].buckets);
	}
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
static int write_rows(bs_store_t *st, const bs_index_list_t *cat, const bs_id_t *id, const bs_value_t *old, bool found,
                      const bs_value_t *bag, const lock_at_t *lock)
{
	int rc = 0;
	if (!maintained_count(cat))
		return 0;
	/* a shard that refused (its bucket moved meanwhile): the map again,
	 * every statement again (each is idempotent) */
	for (int round = 0; round < WRITE_HOPS; round++) {
		shard_rows_t *per = per_shard_new(st->n);
		bool refused = false;
		if (!per)
			return BS_ENOMEM;
		for (int k = 0; k < cat->len; k++)
			if (cat->items[k].state != BS_INDEX_DISABLED)
				index_sql(per, &cat->items[k], id, old->type == BS_MAP ? old : NULL,
				          found && old->type != BS_MAP, bag, st);
		rc = index_flush(&refused, st, per, id, bag ? "written" : "deleted", lock);
		/* where the refused buckets went, from the shards that refused */
		for (int i = 0; i < st->n && !rc && refused; i++)
			if (per[i].refused)
				rc = bs__map_learn(st, i, per[i].buckets, per[i].nb);
		per_shard_free(per, st->n);
		if (rc || !refused)
			return rc;
		if (!lock_kept(st, lock)) {
			char hex[33], lost[256];
			bs_id_hex(hex, id);
			return bs_error(BS_EUNREACHABLE,
			                "entity %s is %s, but its index rows are not: %s (the cleaner repairs them)",
			                hex, bag ? "written" : "deleted", lock_lost(lost, sizeof lost, st, lock));
		}
		hop_pause(round);
	}
	char hex[33];
	bs_id_hex(hex, id);
	return bs_error(BS_EUNREACHABLE,
	                "entity %s is %s, but its index rows are not: their buckets kept moving "
	                "(%d tries; the cleaner repairs them)",
	                hex, bag ? "written" : "deleted", WRITE_HOPS);
}

/* The write in progress: the entity, its shard and bucket, what it held
 * before, and its intent's token (also its named lock; "" when there is
 * none). */
typedef struct {
	bs_id_t id;
	int shard, bucket;
	bs_value_t old;
	bool found;
	int64_t old_us;
	int64_t new_us;  /* the version written, 0 when only @bs_v knows it */
	int64_t prev_us; /* the version it replaced or deleted (RETURNING), 0: none or not known */
	char token[48];
	/* the shard did not own the bucket (nothing was written): its answer */
	bool refused;
	char state[16];
	char peer[BS_NAME_MAX + 1];
} write_t;

/* An entity's upsert after its VALUES or SELECT: a later version than any
 * before (`updated` strictly grows), the new body; the RETURNING form reads
 * the body it replaces into @bs_old as it goes and hands it back with the
 * new version. */
#define ENTITY_UPSERT BS__ENTITY_UPSERT                     /* internal.h */
#define ENTITY_UPSERT_RETURNING BS__ENTITY_UPSERT_RETURNING /* internal.h */

/* fast_write's two statements, prepared (bs__shard_prep_run): what
 * fenced_insert_sql and its delete write as text, the bucket, the id and
 * the body as parameters */
#define PREP_PUT_SQL BS__FENCED_INSERT "?,NOW(6),?,?)" BS__FENCED_TAIL
/* fast_returning_prepared's: the intent, taking its lock, as intent_sql
 * and bs__lock_take_sql write it, the token thrice and the id as
 * parameters; the upsert and the delete as fast_returning_write's */
#define PREP_INTENT_SQL \
	"INSERT INTO bagstore_intents (token, entity_id) VALUES (IF(IF(IS_USED_LOCK(?)=CONNECTION_ID(),1," \
	"GET_LOCK(?,0))=1 AND (@bs_old:=NULL) IS NULL AND (@bs_ou:=NULL) IS NULL,?,NULL),?)" \
	" ON DUPLICATE KEY UPDATE token=VALUES(token)"
#define PREP_PUT_RETURNING_SQL BS__FENCED_INSERT "?,NOW(6),?,?)" BS__FENCED_TAIL_RETURNING
#define PREP_DELETE_RETURNING_SQL PREP_DELETE_SQL " RETURNING body, UNIX_TIMESTAMP(updated)"
#define PREP_DELETE_SQL \
	"DELETE FROM entities WHERE id=? AND (SELECT state FROM bagstore_buckets WHERE bucket=?" \
	" LOCK IN SHARE MODE WAIT " STR(BS__FENCE_WAIT_S) ")='owned'"
/* read_once's statement: the bucket's ownership row and the entity's, in
 * one snapshot (two primary-key lookups) */
#define GET_SQL \
	"SELECT o.state, o.peer, e.body, UNIX_TIMESTAMP(e.updated), e.id IS NOT NULL FROM bagstore_buckets o" \
	" LEFT JOIN entities e ON e.id="
#define PREP_GET_SQL GET_SQL "? WHERE o.bucket=?"

/* The fast forms' entity upsert: a plain INSERT ... VALUES that names
 * the entity's bucket and, replacing a row, sets it again and turns its
 * flip, so that InnoDB checks the pair against bagstore_owned, which
 * holds it only while the bucket is 'owned' here: the parent row
 * share-locked until the statement commits (a cut-over's delete of it
 * waits for the write, and the write for the cut-over), or the statement
 * refused (error 1452: nothing written, the fence's "not here"). The
 * check is InnoDB's own lookup inside the write, not a second table
 * opened and read by the statement (a subquery on bagstore_buckets
 * doubled a plain INSERT's server time; the check adds a fifth). An
 * INSERT ... VALUES is a simple insert to InnoDB: it takes the
 * AUTO_INCREMENT counter's mutex for its one row, where INSERT ... SELECT
 * would hold the table's AUTO_INCREMENT lock for the whole statement. */
static void fenced_insert_sql(bs_buf_t *b, const write_t *w, const bs_bytes_t *body, bool returning)
{
	bs__buf_puts(b, BS__FENCED_INSERT);
	id_lit(b, &w->id);
	bs__buf_puts(b, ",NOW(6),");
	bs__buf_hex(b, body->ptr, body->len);
	bs__buf_printf(b, ",%d)", w->bucket);
	bs__buf_puts(b, returning ? BS__FENCED_TAIL_RETURNING : BS__FENCED_TAIL);
}

/* Did the shard's last call fail as fenced_insert_sql's statement does
 * when the bucket is not 'owned' there: error 1452 from its statement
 * number at (0: the first) of the multi-statement? Then the error is
 * cleared: not a failure. */
static bool fence_said_no(bs_store_t *st, int shard, int rc, int at)
{
	if (rc != BS_ESQL || bs__shard_last_errno(st, shard) != BS__FENCE_REFUSED ||
	    bs__shard_last_done(st, shard) != at)
		return false;
	bs_error_clear();
	return true;
}

/* A fast form applied: the shard owned the bucket outright. */
static void fast_applied(write_t *w)
{
	w->refused = false;
	snprintf(w->state, sizeof w->state, "owned");
	w->peer[0] = '\0';
}

/* ROLLBACK, and the intent's lock released unless keep_lock: a write
 * tried again keeps it, so that an intent its earlier try committed (a
 * refused fast form's) is never taken by the repair loop meanwhile. */
static void rollback(bs_store_t *st, write_t *w, bool keep_lock)
{
	char msg[1024];
	int code = bs_last_error_code();
	snprintf(msg, sizeof msg, "%s", bs_last_error());
	if (st->shards[w->shard].conn) {
		bs_buf_t b = { 0 };
		bs__buf_puts(&b, "ROLLBACK");
		if (w->token[0] && !keep_lock) {
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
		return bs_error(BS_ECONFLICT,
		                "entity %s changed since it was read (updated %lld, expected %lld): not written", hex,
		                (long long)w->old_us, (long long)expect_us);
	return bs_error(BS_ECONFLICT, "entity %s %s: not written", hex,
	                expect_us ? "was deleted since it was read" : "already exists");
}

/* The full forms' intent, only when the shard owns the bucket (@bs_own):
 * a single-row VALUES inside a compound statement whose token is NULL
 * unless the intent's lock is this connection's, which the column refuses
 * (error 1048): the write stops there, and no entity is written without
 * its intent (an INSERT ... SELECT would store '' for the NULL on a server
 * not in strict mode). take: the lock is taken here (else read_sql took
 * it), and @bs_old and @bs_ou reset for the RETURNING upsert after. The
 * intent may be in already under this token (a refused fast form
 * committed it). */
static void intent_sql(bs_buf_t *b, const write_t *w, bool take)
{
	bs__buf_puts(b,
	             ";BEGIN NOT ATOMIC IF @bs_own=1 THEN INSERT INTO bagstore_intents (token, entity_id) VALUES (IF(");
	if (take) {
		bs__lock_take_sql(b, w->token);
		bs__buf_puts(b, "=1 AND (@bs_old:=NULL) IS NULL AND (@bs_ou:=NULL) IS NULL");
	} else {
		bs__lock_held_sql(b, w->token);
	}
	bs__buf_puts(b, ",");
	bs__buf_hex(b, w->token, strlen(w->token));
	bs__buf_puts(b, ",NULL),");
	id_lit(b, &w->id);
	bs__buf_puts(b, ") ON DUPLICATE KEY UPDATE token=VALUES(token); END IF; END");
}

/* Step 1's statements after the read, each only if the shard owns the
 * bucket (@bs_own, read under its share lock): the row written (body) or
 * deleted (body NULL) at a version later than any before, the version kept
 * in @bs_v for step 3, the entity logged for its bucket's move while the
 * bucket is leaving, the intent row, COMMIT. */
static void write_sql(bs_buf_t *b, const write_t *w, const bs_bytes_t *body)
{
	if (body) {
		/* a compound statement, not INSERT ... SELECT: that would take the
		 * table's AUTO_INCREMENT lock for the statement */
		bs__buf_puts(b, "BEGIN NOT ATOMIC IF @bs_own=1 THEN INSERT INTO entities (id, updated, body) VALUES (");
		id_lit(b, &w->id);
		bs__buf_puts(b, ",NOW(6),");
		bs__buf_hex(b, body->ptr, body->len);
		bs__buf_puts(b, ")" ENTITY_UPSERT "; END IF; END");
	} else {
		bs__buf_puts(b, "DELETE FROM entities WHERE @bs_own=1 AND id=");
		id_lit(b, &w->id);
	}
	bs__buf_puts(b, ";INSERT INTO bagstore_move_log (move_id, kind, id) SELECT move_id, 0, ");
	id_lit(b, &w->id);
	bs__buf_printf(b, " FROM bagstore_buckets WHERE bucket=%d AND state='leaving' ON DUPLICATE KEY UPDATE n=n+1",
	               w->bucket);
	if (w->token[0]) {
		if (body) {
			bs__buf_puts(b, ";SET @bs_v=(SELECT updated FROM entities WHERE id=");
			id_lit(b, &w->id);
			bs__buf_puts(b, ")");
		}
		intent_sql(b, w, false); /* after the entity: a refusal rolls it back */
	}
	bs__buf_puts(b, ";COMMIT");
}

/* Step 1's opening: the intent's lock, the transaction, the bucket's
 * ownership row under a share lock (a move's cut-over holds it for
 * update: the write waits for it), the current row read FOR UPDATE. */
static void read_sql(bs_buf_t *b, const write_t *w)
{
	if (w->token[0]) {
		bs__buf_puts(b, "DO GET_LOCK(");
		bs__buf_hex(b, w->token, strlen(w->token));
		bs__buf_puts(b, ",0);");
	}
	bs__buf_printf(b,
	               "SET @bs_own=0;START TRANSACTION;SELECT state, peer, @bs_own:=(state IN " BS__OWNING_SQL ")"
	               " FROM bagstore_buckets WHERE bucket=%d LOCK IN SHARE MODE WAIT %d;"
	               "SELECT body, UNIX_TIMESTAMP(updated) FROM entities WHERE id=",
	               w->bucket, FENCE_WAIT_S);
	id_lit(b, &w->id);
	bs__buf_puts(b, " FOR UPDATE");
}

/* The answers of step 1's two reads: the bucket's ownership, the row. */
static void read_answers(write_t *w, MYSQL_RES *own, MYSQL_RES *ent)
{
	MYSQL_ROW row = mysql_fetch_row(own);
	w->refused = !row || !row[2] || strcmp(row[2], "1") != 0;
	snprintf(w->state, sizeof w->state, "%s", row && row[0] ? row[0] : "");
	snprintf(w->peer, sizeof w->peer, "%s", row && row[1] ? row[1] : "");
	if (w->refused)
		return;
	if ((row = mysql_fetch_row(ent))) {
		w->found = true;
		w->old_us = bs__parse_unix_us(row[1]);
		old_from_row(&w->old, row, mysql_fetch_lengths(ent), &w->id);
	}
}

/* The fenced opening of step 1 on MariaDB 10.5 and later, and without an
 * index: the bucket's ownership row under a share lock, into @bs_own. */
static void own_sql(bs_buf_t *b, const write_t *w)
{
	bs__buf_printf(b,
	               "SET @bs_own=0;START TRANSACTION;SELECT state, peer, @bs_own:=(state IN " BS__OWNING_SQL ")"
	               " FROM bagstore_buckets WHERE bucket=%d LOCK IN SHARE MODE WAIT %d",
	               w->bucket, FENCE_WAIT_S);
}

/* The entity upserted only if the shard owns its bucket (a compound
 * statement: INSERT ... SELECT would take the table's AUTO_INCREMENT lock);
 * with returning, the old body is read into @bs_old as it is replaced and
 * handed back with the new version. */
static void upsert_sql(bs_buf_t *b, const write_t *w, const bs_bytes_t *body, bool returning)
{
	bs__buf_puts(b, ";BEGIN NOT ATOMIC IF @bs_own=1 THEN INSERT INTO entities (id, updated, body) VALUES (");
	id_lit(b, &w->id);
	bs__buf_puts(b, ",NOW(6),");
	bs__buf_hex(b, body->ptr, body->len);
	bs__buf_puts(b, returning ? ")" ENTITY_UPSERT_RETURNING "; END IF; END" : ")" ENTITY_UPSERT "; END IF; END");
}

/* The entity logged for its bucket's move while the bucket is leaving,
 * then COMMIT. */
static void log_commit_sql(bs_buf_t *b, const write_t *w)
{
	bs__buf_puts(b, ";INSERT INTO bagstore_move_log (move_id, kind, id) SELECT move_id, 0, ");
	id_lit(b, &w->id);
	bs__buf_printf(b,
	               " FROM bagstore_buckets WHERE bucket=%d AND state='leaving' ON DUPLICATE KEY UPDATE n=n+1;"
	               "COMMIT",
	               w->bucket);
}

/* Whether a write to w's bucket here should skip the fast form: the last
 * full form there found the bucket leaving (a move is copying it), where
 * the fast form is refused and costs a round trip for nothing. Only the
 * form tried first depends on it: the full form also writes to owned
 * buckets, logging nothing for them. */
static bool leaving_hinted(const bs_store_t *st, const write_t *w)
{
	const bs_shard_t *sh = &st->shards[w->shard];
	return w->bucket >= 0 && w->bucket < sh->nleaving && sh->leaving[w->bucket];
}

/* What a full form found (w->state) kept for the next write to the
 * bucket: leaving, or not (the move ended, or was undone). */
static void leaving_note(bs_store_t *st, const write_t *w)
{
	bs_shard_t *sh = &st->shards[w->shard];
	bool leaving = !strcmp(w->state, "leaving");
	int n = st->map.buckets;
	if (w->bucket < 0 || (!leaving && !sh->leaving))
		return;
	if (sh->nleaving != n) { /* first found, or the map's size changed */
		uint8_t *v = calloc((size_t)(n > 0 ? n : 1), 1);
		if (!v)
			return; /* a hint: without it, the fast form first */
		free(sh->leaving);
		sh->leaving = v;
		sh->nleaving = n;
	}
	if (w->bucket < sh->nleaving)
		sh->leaving[w->bucket] = leaving;
}

/* The ownership answer (first result set) into w. */
static void own_answer(write_t *w, MYSQL_RES *own)
{
	MYSQL_ROW row = own ? mysql_fetch_row(own) : NULL;
	w->refused = !row || !row[2] || strcmp(row[2], "1") != 0;
	snprintf(w->state, sizeof w->state, "%s", row && row[0] ? row[0] : "");
	snprintf(w->peer, sizeof w->peer, "%s", row && row[1] ? row[1] : "");
}

/* The fence's fast form, while the bucket is simply owned (not leaving:
 * nothing to log for a move), one statement in autocommit: an upsert
 * checked by its foreign key against the bucket's bagstore_owned row,
 * share-locked (fenced_insert_sql), a delete through a subquery that
 * reads the bucket's ownership row share-locked; so the step that marks
 * the bucket leaving waits for it, and it waits for that step, as the
 * full form's SELECT ... LOCK IN SHARE MODE does.
 * *applied false: nothing was written (the bucket is not 'owned' here, or
 * the entity to delete is not here); the full form decides which. */
static int fast_write(bool *applied, bs_store_t *st, write_t *w, const bs_bytes_t *body)
{
	bs_buf_t b = { 0 };
	int64_t rows = 0;
	bool text;
	int rc;
	/* prepared: the fenced upsert is the whole of a put without an index,
	 * and the server's parse and plan of it were a third of its time */
	if (body)
		rc = bs__shard_prep_run(NULL, &rows, &text, st, w->shard, BS__PREP_PUT, PREP_PUT_SQL,
		                        (bs__param_t[]){ { .p = w->id.b, .len = 16 },
		                                         { .p = body->ptr, .len = body->len },
		                                         { .i = w->bucket, .type = BS__P_INT } },
		                        3);
	else
		rc = bs__shard_prep_run(
			NULL, &rows, &text, st, w->shard, BS__PREP_DELETE, PREP_DELETE_SQL,
			(bs__param_t[]){ { .p = w->id.b, .len = 16 }, { .i = w->bucket, .type = BS__P_INT } }, 2);
	if (!rc && text) { /* the server would not prepare: the same statement as text */
		if (body) {
			fenced_insert_sql(&b, w, body, false);
		} else {
			bs__buf_puts(&b, "DELETE FROM entities WHERE id=");
			id_lit(&b, &w->id);
			bs__buf_printf(&b,
			               " AND (SELECT state FROM bagstore_buckets WHERE bucket=%d LOCK IN SHARE MODE "
			               "WAIT %d)='owned'",
			               w->bucket, FENCE_WAIT_S);
		}
		if (!(rc = bs__buf_ok(&b)))
			rc = bs__shard_exec_rows(&rows, st, w->shard, b.ptr, b.len);
	}
	if (body && fence_said_no(st, w->shard, rc, 0))
		rc = 0; /* not 'owned' here: nothing written, the full form decides */
	*applied = !rc && rows > 0;
	if (*applied) {
		w->found = !body;
		fast_applied(w);
	}
	bs__buf_free(&b);
	return rc;
}

/* Step 1 with no index to maintain and no condition: no old body to read,
 * no intent; the fast form, else the fence, one statement (and the rows it
 * touched, for a delete). */
static int plain_write(bs_store_t *st, write_t *w, const bs_bytes_t *body)
{
	bs_buf_t b = { 0 };
	MYSQL_RES *res[2] = { NULL, NULL };
	bool applied = false;
	int rc;
	if (!leaving_hinted(st, w) && ((rc = fast_write(&applied, st, w, body)) || applied))
		return rc;
	own_sql(&b, w);
	if (body) {
		upsert_sql(&b, w, body, false);
	} else {
		bs__buf_puts(&b, ";DELETE FROM entities WHERE @bs_own=1 AND id=");
		id_lit(&b, &w->id);
		bs__buf_puts(&b, ";SELECT ROW_COUNT()");
	}
	log_commit_sql(&b, w);
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query_sets(res, body ? 1 : 2, st, w->shard, b.ptr, b.len)))
		goto done;
	own_answer(w, res[0]);
	leaving_note(st, w);
	if (!body && res[1] && !w->refused) {
		MYSQL_ROW row = mysql_fetch_row(res[1]);
		w->found = row && row[0] && strcmp(row[0], "0");
	}
done:
	for (int k = 0; k < 2; k++)
		if (res[k])
			mysql_free_result(res[k]);
	bs__buf_free(&b);
	return rc;
}

/* The old body and new version a RETURNING row hands back (NULL: none),
 * into w. */
static void returned_row(write_t *w, char **row, const unsigned long *lens, bool put)
{
	w->prev_us = 0;
	if (put) {
		w->found = row && row[0];
		w->new_us = row ? bs__parse_unix_us(row[1]) : 0;
		if (w->found && row[2])
			w->prev_us = bs__parse_unix_us(row[2]);
	} else {
		w->found = row != NULL;
		if (w->found && row[1])
			w->prev_us = bs__parse_unix_us(row[1]);
	}
	if (w->found)
		old_from_row(&w->old, row, lens, &w->id);
}

/* returned_row from a RETURNING set. */
static void returned(write_t *w, MYSQL_RES *res, bool put)
{
	MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
	returned_row(w, row, row ? mysql_fetch_lengths(res) : NULL, put);
}

/* The write procedures (schema.c's write_procs, made by init on
 * every shard): what fast_returning_prepared's two statements do, in one
 * round trip. */
#define PREP_CALL_PUT_SQL "CALL bagstore_put_v2(?,?,?,?)"
#define PREP_CALL_DELETE_SQL "CALL bagstore_delete_v1(?,?,?)"

/* How long a connection that found no write procedure to call sends the
 * two statements before it tries the CALL again (init may have made them,
 * or EXECUTE been granted, meanwhile). */
#define PROC_RETRY_S 60.0

/* The procedure is not there to call (an older init made this store), or
 * not this account's (no EXECUTE): the two statements on this connection
 * for PROC_RETRY_S. */
static bool proc_missing(bs_store_t *st, int shard, int rc)
{
	unsigned e = bs__shard_last_errno(st, shard);
	if (rc != BS_ESQL || (e != 1305 /* ER_SP_DOES_NOT_EXIST */ && e != 1370 /* ER_PROCACCESS_DENIED_ERROR */))
		return false;
	st->shards[shard].no_proc_until = bs_now_mono() + PROC_RETRY_S;
	bs_error_clear();
	return true;
}

/* fast_returning_prepared's CALL of the write procedure (rc, *s its
 * answer); *called false: there is none to call here, nothing sent that
 * wrote (two_writes next). */
static int call_write(bool *called, MYSQL_STMT **s, bool *text, bs_store_t *st, write_t *w, const bs_bytes_t *body)
{
	size_t tl = strlen(w->token);
	int64_t rows;
	int rc;
	double no_proc = st->shards[w->shard].no_proc_until;
	*called = false;
	if (no_proc != 0 && no_proc > bs_now_mono()) /* the clock read only after a refusal */
		return 0;
	if (body)
		rc = bs__shard_prep_run(s, &rows, text, st, w->shard, BS__PREP_CALL_PUT, PREP_CALL_PUT_SQL,
		                        (bs__param_t[]){ { .p = w->token, .len = tl },
		                                         { .i = w->bucket, .type = BS__P_INT },
		                                         { .p = w->id.b, .len = 16 },
		                                         { .p = body->ptr, .len = body->len } },
		                        4);
	else
		rc = bs__shard_prep_run(s, &rows, text, st, w->shard, BS__PREP_CALL_DELETE, PREP_CALL_DELETE_SQL,
		                        (bs__param_t[]){ { .p = w->token, .len = tl },
		                                         { .i = w->bucket, .type = BS__P_INT },
		                                         { .p = w->id.b, .len = 16 } },
		                        3);
	if (proc_missing(st, w->shard, rc))
		return 0;
	*called = true;
	return rc;
}

/* The same as two prepared statements: the intent, then the entity's
 * write (rc, *s its answer). */
static int two_writes(MYSQL_STMT **s, bool *text, bs_store_t *st, write_t *w, const bs_bytes_t *body)
{
	size_t tl = strlen(w->token);
	int64_t rows;
	int rc;
	if ((rc = bs__shard_prep_run(NULL, &rows, text, st, w->shard, BS__PREP_INTENT, PREP_INTENT_SQL,
	                             (bs__param_t[]){ { .p = w->token, .len = tl },
	                                              { .p = w->token, .len = tl },
	                                              { .p = w->token, .len = tl },
	                                              { .p = w->id.b, .len = 16 } },
	                             4)) ||
	    *text)
		return rc;
	if (body)
		return bs__shard_prep_run(s, &rows, text, st, w->shard, BS__PREP_PUT_RETURNING, PREP_PUT_RETURNING_SQL,
		                          (bs__param_t[]){ { .p = w->id.b, .len = 16 },
		                                           { .p = body->ptr, .len = body->len },
		                                           { .i = w->bucket, .type = BS__P_INT } },
		                          3);
	return bs__shard_prep_run(s, &rows, text, st, w->shard, BS__PREP_DELETE_RETURNING, PREP_DELETE_RETURNING_SQL,
	                          (bs__param_t[]){ { .p = w->id.b, .len = 16 }, { .i = w->bucket, .type = BS__P_INT } },
	                          2);
}

/* returning_write's fast form, prepared: one CALL of a write procedure,
 * or, where there is none, two statements in autocommit, each parsed and
 * planned once per connection, where the text form's transaction of four
 * is parsed every time. The intent first, taking its lock (a NULL token,
 * refused by the column with error 1048, when the lock cannot be taken,
 * or the procedure's SQLSTATE 45000: the write fails there, nothing
 * written); once it is in, committed, whatever the entity write does is
 * covered, as a writer killed between the two leaves an intent for an
 * unchanged entity. Then the entity written and fenced as fast_write's,
 * handing back the old body and the new version. *applied false: the entity was not written (error 1452 from
 * the fence: not 'owned' here; or nothing to delete) and the intent is
 * in: the full form inserts it again under the same token and decides
 * which. *text: the server would not prepare one of them: the text form. */
static int fast_returning_prepared(bool *applied, bool *text, bs_store_t *st, write_t *w, const bs_bytes_t *body)
{
	MYSQL_STMT *s = NULL;
	bs__prep_row_t pr;
	bool called;
	*applied = false;
	*text = false;
	int rc = call_write(&called, &s, text, st, w, body);
	if (!called)
		rc = two_writes(&s, text, st, w, body);
	if (body && fence_said_no(st, w->shard, rc, 0))
		return 0; /* not 'owned' here: the intent is in, the full form decides */
	if (rc || *text)
		return rc;
	/* a DELETE whose WHERE the optimizer proves empty may answer without
	 * a result set (s NULL): nothing deleted here, as an empty one */
	if ((rc = s ? bs__shard_prep_row(&pr, st, w->shard, s) : 0) > 0) {
		*applied = true;
		fast_applied(w);
		returned_row(w, pr.col, pr.len, body != NULL);
		rc = 0;
	}
	if (s)
		bs__prep_row_free(&pr);
	/* a CALL's status after the rows: a failure there (its statement's
	 * commit) is the write's, applied or not is then unknown, as after a
	 * lost connection (the intent is in: the repair loop's) */
	int frc = bs__shard_prep_finish(st, w->shard, s);
	if (frc && !rc) {
		*applied = false;
		rc = frc;
	}
	return rc;
}

/* returning_write's fast form as text, where the server will not prepare
 * (fast_returning_prepared), while the bucket is simply owned (as
 * fast_write's), one transaction: the intent inserted from its values,
 * taking the intent's lock (a NULL token, refused by the column, when the
 * lock cannot be taken: the statement fails and nothing goes on), then the
 * entity written and fenced as fast_write's (fenced_insert_sql; a
 * delete through a locking subquery), handing back the old body and the
 * new version. Four statements.
 * *applied false: the entity was not written (not 'owned' here, or the
 * entity to delete is not here), and the intent is in (*open: in a
 * transaction still open, which the caller commits): the full form,
 * which inserts it again under the same token (intent_sql), decides which
 * (and a refusal there removes it). */
static int fast_returning_write(bool *applied, bool *open, bs_store_t *st, write_t *w, const bs_bytes_t *body)
{
	bs_buf_t b = { 0 };
	MYSQL_RES *res[2] = { NULL, NULL };
	size_t tl = strlen(w->token);
	int rc;
	bs__buf_puts(&b, "START TRANSACTION;INSERT INTO bagstore_intents (token, entity_id) VALUES (IF(");
	bs__lock_take_sql(&b, w->token);
	bs__buf_puts(&b, "=1 AND (@bs_old:=NULL) IS NULL AND (@bs_ou:=NULL) IS NULL,");
	bs__buf_hex(&b, w->token, tl);
	bs__buf_puts(&b, ",NULL),");
	id_lit(&b, &w->id);
	/* a try after one whose fast form was refused (its intent committed)
	 * finds its own intent there */
	bs__buf_puts(&b, ") ON DUPLICATE KEY UPDATE token=VALUES(token);");
	if (body) {
		fenced_insert_sql(&b, w, body, true);
	} else {
		bs__buf_puts(&b, "DELETE FROM entities WHERE id=");
		id_lit(&b, &w->id);
		bs__buf_printf(&b,
		               " AND (SELECT state FROM bagstore_buckets WHERE bucket=%d LOCK IN SHARE MODE WAIT %d)="
		               "'owned' RETURNING body, UNIX_TIMESTAMP(updated)",
		               w->bucket, FENCE_WAIT_S);
	}
	/* a DELETE that finds nothing may answer without a result set (when
	 * the optimizer proves its WHERE empty): a last set of one column marks
	 * the end, so the RETURNING set is the one of two. A put's INSERT ...
	 * RETURNING answers with its row, or fails (error 1452, below). */
	bs__buf_puts(&b, body ? ";COMMIT" : ";COMMIT;SELECT 0");
	*applied = *open = false;
	if (!(rc = bs__buf_ok(&b)))
		rc = bs__shard_query_sets(res, body ? 1 : 2, st, w->shard, b.ptr, b.len);
	if (body && fence_said_no(st, w->shard, rc, 2)) {
		/* the entity refused by the fence (START and the intent answered: the
		 * intent is in, its lock held) and the server ran nothing after
		 * it: the transaction holding the intent is still open (*open);
		 * the full form commits it first, leaving the intent in as a
		 * refused delete does, and decides. A token refused (statement
		 * 1: its lock not taken, nothing written) is the write's failure,
		 * rolled back by the caller */
		*open = true;
		rc = 0;
		goto done;
	}
	if (rc)
		goto done;
	if (mysql_num_fields(res[0]) != (body ? 3u : 2u) || mysql_num_rows(res[0]) == 0)
		goto done; /* not written (the intent is in): the full form */
	*applied = true;
	fast_applied(w);
	returned(w, res[0], body != NULL);
done:
	for (int k = 0; k < 2; k++)
		if (res[k])
			mysql_free_result(res[k]);
	bs__buf_free(&b);
	return rc;
}

/* Step 1 on MariaDB 10.5 and later, unconditional, no read before the
 * write: the fast form (a write procedure's CALL, or two prepared
 * statements, or one transaction as text), else the full form, one
 * transaction. The fence; the intent (with its lock, and the
 * reset of @bs_old): once it is in, whatever the entity write does is
 * covered; the entity written in one statement that reads the body it
 * replaces into @bs_old as it goes (the row lock makes that exact) and
 * hands back that old body and the new version (RETURNING); a delete
 * returns the body it removed. */
static int returning_write(bs_store_t *st, write_t *w, const bs_bytes_t *body)
{
	bs_buf_t b = { 0 };
	MYSQL_RES *res[2] = { NULL, NULL };
	bool applied = false, open = false;
	int rc;
	if (!leaving_hinted(st, w)) {
		bool text;
		if (!(rc = fast_returning_prepared(&applied, &text, st, w, body)) && text)
			rc = fast_returning_write(&applied, &open, st, w, body);
		if (rc || applied)
			return rc;
	}
	if (open)
		bs__buf_puts(&b, "COMMIT;");
	own_sql(&b, w);
	intent_sql(&b, w, true); /* before the entity changes */
	if (body) {
		upsert_sql(&b, w, body, true);
	} else {
		bs__buf_puts(&b, ";DELETE FROM entities WHERE @bs_own=1 AND id=");
		id_lit(&b, &w->id);
		bs__buf_puts(&b, " RETURNING body, UNIX_TIMESTAMP(updated)");
	}
	log_commit_sql(&b, w);
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query_sets(res, 2, st, w->shard, b.ptr, b.len)))
		goto done;
	own_answer(w, res[0]);
	leaving_note(st, w);
	/* the old body; the new version, for step 3 */
	returned(w, w->refused ? NULL : res[1], body != NULL);
done:
	for (int k = 0; k < 2; k++)
		if (res[k])
			mysql_free_result(res[k]);
	bs__buf_free(&b);
	return rc;
}

/* Test fault point: a conditional write stops (SIGSTOP) between its read
 * (the row or its gap locked FOR UPDATE) and its write, once (a retry
 * goes on), so a test can send another writer into those locks. */
static void fault_conditional_write(const bs_id_t *id)
{
	static atomic_bool done;
	char hex[33];
	if (bs_fault(BS_FAULT_PAUSE_CONDITIONAL_WRITE) && !atomic_exchange(&done, true)) {
		bs_id_hex(hex, id);
		fprintf(stderr,
		        "bagstore: fault pause_conditional_write: entity %s read and locked; stopped before "
		        "its write (kill -CONT %d resumes)\n",
		        hex, (int)getpid());
		raise(SIGSTOP);
	}
}

/* A shard refused the write (it does not own the bucket): the intent the
 * fast form put in there covers no write of this one; it goes, with the
 * lock (best effort: left, the repair loop settles it as a no-op). */
static void refused_release(bs_store_t *st, const write_t *w)
{
	bs_buf_t b = { 0 };
	bs__buf_puts(&b, "DELETE FROM bagstore_intents WHERE token=");
	bs__buf_hex(&b, w->token, strlen(w->token));
	if (!bs__buf_ok(&b))
		bs__shard_exec(st, w->shard, b.ptr, b.len);
	bs__lock_release(st, w->shard, w->token); /* clears the error */
	bs__buf_free(&b);
}

/* Step 1, once: one round trip, or two for a conditional write (whose
 * condition is checked between the read and the write). A shard that does
 * not own the bucket writes nothing and says so (w->refused). */
static int entity_step(bool *retry, bs_store_t *st, write_t *w, const bs_bytes_t *body, bool conditional,
                       int64_t expect_us)
{
	bs_buf_t b = { 0 };
	MYSQL_RES *res[2] = { NULL, NULL };
	bool in_tx = true;
	int rc;
	bs_value_clear(&w->old);
	w->found = false;
	w->refused = false;
	if (!conditional && (!w->token[0] || (st->shards[w->shard].conn && st->shards[w->shard].returning))) {
		rc = w->token[0] ? returning_write(st, w, body) : plain_write(st, w, body);
		*retry = rc == BS_ECONFLICT && retryable(st, w->shard);
		if (rc)
			rollback(st, w, *retry);
		else if (w->refused && w->token[0])
			refused_release(st, w);
		return rc;
	}
	read_sql(&b, w);
	if (!conditional) {
		bs__buf_puts(&b, ";");
		write_sql(&b, w, body);
	}
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query_sets(res, 2, st, w->shard, b.ptr, b.len)))
		goto done;
	read_answers(w, res[0], res[1]);
	leaving_note(st, w);
	in_tx = conditional;
	if (conditional) {
		if (w->refused) {
			rollback(st, w, false);
			goto done;
		}
		if ((rc = check_expected(w, expect_us)))
			goto done;
		fault_conditional_write(&w->id);
		bs__buf_reset(&b);
		write_sql(&b, w, body);
		if (!(rc = bs__buf_ok(&b)) && !(rc = bs__shard_exec(st, w->shard, b.ptr, b.len)))
			in_tx = false;
	} else if (w->refused && w->token[0]) {
		bs__lock_release(st, w->shard, w->token);
	}
done:
	/* read before the rollback, whose own statement resets it */
	*retry = rc == BS_ECONFLICT && retryable(st, w->shard);
	if (rc && in_tx)
		rollback(st, w, *retry);
	for (int k = 0; k < 2; k++)
		if (res[k])
			mysql_free_result(res[k]);
	bs__buf_free(&b);
	return rc;
}

/* Step 1 with retries of deadlocks and lock wait timeouts. */
static int entity_write(bs_store_t *st, write_t *w, const bs_bytes_t *body, bool conditional, int64_t expect_us)
{
	for (int tries = 1;; tries++) {
		bool retry = false;
		int rc = entity_step(&retry, st, w, body, conditional, expect_us);
		if (!rc || !retry)
			return rc;
		if (tries == WRITE_TRIES) {
			char msg[1024];
			snprintf(msg, sizeof msg, "%s", bs_last_error());
			if (w->token[0]) /* kept for the tries: the write is over */
				bs__lock_release(st, w->shard, w->token);
			return bs_error(rc, "%s (gave up after %d tries)", msg, tries);
		}
		backoff(tries);
	}
}

/* Step 3, sent without waiting: the lock goes; the intent goes if the
 * index rows were all written and the entity is still this write's version
 * (or still gone, for a delete), else it stays for the repair loop. Its
 * removal waits for a batch (bs__settle_*: one statement for many writes,
 * sent with a later write's lock release) when the version is known; an
 * intent left unremoved (the process killed first) has a free lock, so
 * the repair loop settles it as it does any other. */
static void settle_send(bs_store_t *st, const write_t *w, bool deleted, bool rows_ok)
{
	bs_buf_t b = { 0 };
	if (!w->token[0])
		return;
	if (rows_ok && (deleted || w->new_us)) {
		bs__settle_add(st, w->shard, w->token, &w->id, w->bucket, deleted ? 0 : w->new_us, w->prev_us,
		               w->found);
		if (bs__settle_due(st, w->shard)) {
			bs__settle_sql(&b, st, w->shard);
			bs__buf_puts(&b, ";");
		}
	} else if (rows_ok) {
		/* the version is the transaction's @bs_v, read now */
		bs__buf_puts(&b, "DELETE FROM bagstore_intents WHERE token=");
		bs__buf_hex(&b, w->token, strlen(w->token));
		bs__buf_puts(&b, " AND EXISTS (SELECT 1 FROM entities WHERE updated=@bs_v AND id=");
		id_lit(&b, &w->id);
		bs__buf_printf(
			&b,
			") AND EXISTS (SELECT 1 FROM bagstore_buckets WHERE bucket=%d AND state IN " BS__OWNING_SQL
			");",
			w->bucket);
	}
	bs__buf_puts(&b, "DO RELEASE_LOCK(");
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

/* Test fault points between steps 1 and 2 (bulk.c's too). */
void bs__fault_after_entity(const bs_id_t *id)
{
	char hex[33];
	if (bs_fault(BS_FAULT_AFTER_ENTITY_WRITE)) {
		bs_id_hex(hex, id);
		fprintf(stderr,
		        "bagstore: fault after_entity_write: entity %s written, exiting before its index rows\n", hex);
		bs__fault_exit();
	}
	if (bs_fault(BS_FAULT_PAUSE_BEFORE_INDEX_ROWS)) {
		bs_id_hex(hex, id);
		fprintf(stderr,
		        "bagstore: fault pause_before_index_rows: entity %s written; stopped before its "
		        "index rows (kill -CONT %d resumes)\n",
		        hex, (int)getpid());
		raise(SIGSTOP);
	}
}

/* Step 1 on the bucket's owner: a shard that refuses names where the
 * bucket went (or the map is read again), a few hops at most. */
static int entity_route_write(bs_store_t *st, write_t *w, const bs_bytes_t *body, bool conditional, int64_t expect_us)
{
	int rc;
	for (int hop = 0;; hop++) {
		if ((rc = bs__shard_check(st, w->shard)) || (rc = entity_write(st, w, body, conditional, expect_us)) ||
		    !w->refused)
			return rc;
		if (hop + 1 == WRITE_HOPS)
			break;
		hop_pause(hop);
		if ((rc = bs__map_moved(&w->shard, st, w->bucket, w->shard, w->state, w->peer)))
			return rc;
	}
	char hex[33];
	bs_id_hex(hex, &w->id);
	return bs_error(BS_EUNREACHABLE,
	                "entity %s: its bucket %d kept moving (%d shards tried, the last %s says %s): "
	                "not written",
	                hex, w->bucket, WRITE_HOPS, st->shards[w->shard].conf->name,
	                w->state[0] ? w->state : "it does not own it");
}

/* The whole write of bag (encoded as body); bag NULL deletes (absent:
 * BS_ENOTFOUND). */
static int write_entity(bs_store_t *st, const bs_id_t *id, const bs_value_t *bag, const bs_bytes_t *body,
                        bool conditional, int64_t expect_us)
{
	const bs_index_list_t *cat;
	write_t w = { .id = *id };
	int rc;

	bs_value_nil(&w.old);
	if ((rc = bs__route_entity(&w.shard, &w.bucket, st, id)) || (rc = bs__catalog_cached(&cat, st)))
		goto done;
	if (maintained_count(cat)) {
		bs__token(w.token, "w");
		if (bs_fault(BS_FAULT_FIXED_TOKEN))
			snprintf(w.token, sizeof w.token, "bagstore.w.fault");
	}
	if ((rc = entity_route_write(st, &w, body, conditional, expect_us)))
		goto done;
	if (!bag && !w.found) {
		char hex[33];
		settle_send(st, &w, true, true);
		bs_id_hex(hex, id);
		rc = bs_error(BS_ENOTFOUND, "entity %s not found (looked on shard %s)", hex,
		              st->shards[w.shard].conf->name);
		goto done;
	}
	bs__fault_after_entity(id);
	/* the lock was taken on the entity's connection, which is still the
	 * one the write used (a lost one is closed, and the write failed) */
	lock_at_t lk = { w.token[0] ? w.shard : -1, w.token[0] ? st->shards[w.shard].conn_gen : 0 };
	rc = write_rows(st, cat, id, &w.old, w.found, bag, &lk);
	settle_send(st, &w, !bag, rc == 0);
done:
	bs_value_clear(&w.old);
	return rc;
}

int bs_put(bs_store_t *st, const bs_value_t *bag, bs_id_t *id_out)
{
	bs_bytes_t body = { 0 };
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
	bs_bytes_t body = { 0 };
	bs_id_t id;
	int rc;
	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing to write");
	if (!(rc = bs_bag_id(&id, bag)) && !(rc = bs_body_encode(&body, bag)))
		rc = write_entity(st, &id, bag, &body, true, expect_updated_us);
	bs_bytes_free(&body);
	return rc;
}

/* One read of an entity on shard: its bucket's ownership and the row, in
 * one statement (one snapshot). *refused (with the shard's state and peer)
 * when the shard does not own the bucket; else *found and the row. */
/* read_once's answer, a row of the text protocol's or a prepared
 * statement's: no row, or an ownership row whose state does not hold its
 * entities, is refused (the map's cache is then wrong). */
static int read_answer(bs_bytes_t *body, int64_t *updated_us, bool *found, write_t *w, char **row,
                       const unsigned long *lens, bool take)
{
	snprintf(w->state, sizeof w->state, "%s", row && row[0] ? row[0] : "");
	snprintf(w->peer, sizeof w->peer, "%s", row && row[1] ? row[1] : "");
	w->refused = !row || !(row[0] && (!strcmp(row[0], "owned") || !strcmp(row[0], "leaving")));
	if (w->refused || !row[4] || strcmp(row[4], "1"))
		return 0;
	if (take && row[2]) { /* a prepared row's column, its own allocation */
		body->ptr = (uint8_t *)row[2];
		row[2] = NULL;
	} else if ((body->ptr = malloc(lens[2] ? lens[2] : 1))) {
		if (row[2])
			memcpy(body->ptr, row[2], lens[2]);
	} else {
		return bs_error(BS_ENOMEM, "out of memory");
	}
	body->len = body->cap = lens[2];
	if (updated_us)
		*updated_us = bs__parse_unix_us(row[3]);
	*found = true;
	return 0;
}

/* The bucket's ownership row and the entity's, in one snapshot (two
 * primary-key lookups), prepared: the whole of a get, and the server's
 * parse and plan of it were a fifth of its time; as text where the
 * server will not prepare. */
static int read_once(bs_bytes_t *body, int64_t *updated_us, bool *found, write_t *w, bs_store_t *st)
{
	MYSQL_STMT *s = NULL;
	MYSQL_RES *res = NULL;
	bs__prep_row_t pr;
	bs_buf_t b = { 0 };
	int64_t rows;
	bool text;
	int rc;
	*found = false;
	if ((rc = bs__shard_check(st, w->shard)) ||
	    (rc = bs__shard_prep_run(
		     &s, &rows, &text, st, w->shard, BS__PREP_GET, PREP_GET_SQL,
		     (bs__param_t[]){ { .p = w->id.b, .len = 16 }, { .i = w->bucket, .type = BS__P_INT } }, 2)))
		return rc;
	if (!text) {
		memset(&pr, 0, sizeof pr);
		if ((rc = s ? bs__shard_prep_row(&pr, st, w->shard, s) : 0) >= 0)
			rc = read_answer(body, updated_us, found, w, rc ? pr.col : NULL, pr.len, true);
		bs__prep_row_free(&pr);
		bs__shard_prep_end(s);
		return rc;
	}
	bs__buf_puts(&b, GET_SQL);
	id_lit(&b, &w->id);
	bs__buf_puts(&b, " WHERE o.bucket=");
	bs__buf_uint(&b, (unsigned)w->bucket);
	if (!(rc = bs__buf_ok(&b)) && !(rc = bs__shard_query(&res, st, w->shard, b.ptr, b.len))) {
		MYSQL_ROW row = mysql_fetch_row(res);
		rc = read_answer(body, updated_us, found, w, row, row ? mysql_fetch_lengths(res) : NULL, false);
	}
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

/* Read an entity from its bucket's owner, following a bucket that moved;
 * *shard gets the shard that answered. */
static int entity_read(bs_bytes_t *body, int64_t *updated_us, int *shard, bs_store_t *st, const bs_id_t *id)
{
	write_t w = { .id = *id };
	bool found = false;
	int rc;
	memset(body, 0, sizeof *body);
	if ((rc = bs__route_entity(&w.shard, &w.bucket, st, id)))
		return rc;
	for (int hop = 0;; hop++) {
		if ((rc = read_once(body, updated_us, &found, &w, st)) || !w.refused)
			break;
		if (hop + 1 == WRITE_HOPS) {
			char hex[33];
			bs_id_hex(hex, id);
			return bs_error(BS_EUNREACHABLE,
			                "entity %s: its bucket %d kept moving (%d shards tried): not read", hex,
			                w.bucket, WRITE_HOPS);
		}
		hop_pause(hop);
		if ((rc = bs__map_moved(&w.shard, st, w.bucket, w.shard, w.state, w.peer)))
			return rc;
	}
	*shard = w.shard;
	if (!rc && !found) {
		char hex[33];
		bs_id_hex(hex, id);
		rc = bs_error(BS_ENOTFOUND, "entity %s not found (looked on shard %s)", hex,
		              st->shards[w.shard].conf->name);
	}
	return rc;
}

int bs_get_raw(bs_bytes_t *body, bs_store_t *st, const bs_id_t *id, int64_t *updated_us)
{
	int shard;
	return entity_read(body, updated_us, &shard, st, id);
}

int bs_get(bs_value_t *out, bs_store_t *st, const bs_id_t *id, int64_t *updated_us, int *shard)
{
	bs_bytes_t body;
	int s = -1;
	bs_value_nil(out);
	int rc = entity_read(&body, updated_us, &s, st, id);
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

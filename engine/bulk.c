/*
 * bulk.c - many puts at once (bs_put_many): the write path of entity.c in
 * batches, for loading JSON Lines and the like.
 *
 * The entities of one shard go in one transaction, one round trip: their
 * intent rows (one token, one named lock per shard and batch), their old
 * bodies read FOR UPDATE, one multi-row INSERT ... ON DUPLICATE KEY
 * UPDATE, the versions written copied into the intents; every shard at
 * once (fanout.c). Then the index rows they need, as one multi-row delete
 * and one multi-row upsert per index and target shard, every target shard
 * at once; then, sent without waiting, each shard's intents removed where
 * the entity is still the version written, and the lock released. The
 * guarantees are entity.c's: once writers and the cleaner are quiet, every
 * index row is what the current body implies.
 *
 * An id given twice in one call is written twice, in order: its second
 * occurrence goes in a later round, so each round's old bodies are right.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
	size_t *idx;       /* indexes into the call's bags, in order */
	size_t len, cap;
	bs_buf_t sql;      /* this round's statements */
	char token[48];    /* "" when no index is maintained */
	bool done;         /* committed */
} shard_batch_t;

typedef struct {
	bs_store_t *st;
	const bs_index_list_t *cat;
	const bs_value_t *bags;
	bs_bytes_t *bodies;
	bs_id_t *ids;
	bool *written;
	bs_value_t *old;   /* per bag: the body it replaced (NIL: none or undecodable) */
	bool *found;       /* per bag: there was a row */
	bool maintained;
	shard_batch_t *sb; /* per shard */
	bs__shard_stmt_t *q;
} bulk_t;

static int push_idx(shard_batch_t *b, size_t k)
{
	if (b->len == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		size_t *p = realloc(b->idx, cap * sizeof *p);
		if (!p)
			return bs_error(BS_ENOMEM, "out of memory");
		b->idx = p;
		b->cap = cap;
	}
	b->idx[b->len++] = k;
	return 0;
}

static void id_lits(bs_buf_t *b, const bulk_t *u, const shard_batch_t *sb)
{
	for (size_t j = 0; j < sb->len; j++) {
		bs__buf_puts(b, j ? "," : "");
		bs__buf_hex(b, u->ids[sb->idx[j]].b, 16);
	}
}

/* One shard's transaction for this round. */
static void entity_sql(bulk_t *u, int s)
{
	shard_batch_t *sb = &u->sb[s];
	bs_buf_t *b = &sb->sql;
	bs__buf_reset(b);
	if (!sb->len)
		return;
	if (u->maintained) {
		bs__buf_puts(b, "DO IF(IS_USED_LOCK(");
		bs__buf_hex(b, sb->token, strlen(sb->token));
		bs__buf_puts(b, ")=CONNECTION_ID(),1,GET_LOCK(");
		bs__buf_hex(b, sb->token, strlen(sb->token));
		bs__buf_puts(b, ",0));START TRANSACTION;INSERT IGNORE INTO bagstore_intents (token, entity_id) VALUES ");
		for (size_t j = 0; j < sb->len; j++) {
			bs__buf_puts(b, j ? ",(" : "(");
			bs__buf_hex(b, sb->token, strlen(sb->token));
			bs__buf_puts(b, ",");
			bs__buf_hex(b, u->ids[sb->idx[j]].b, 16);
			bs__buf_puts(b, ")");
		}
		bs__buf_puts(b, ";SELECT id, body FROM entities WHERE id IN (");
		id_lits(b, u, sb);
		bs__buf_puts(b, ") FOR UPDATE;");
	}
	bs__buf_puts(b, "INSERT INTO entities (id, updated, body) VALUES ");
	for (size_t j = 0; j < sb->len; j++) {
		size_t k = sb->idx[j];
		bs__buf_puts(b, j ? ",(" : "(");
		bs__buf_hex(b, u->ids[k].b, 16);
		/* one statement, one NOW(6): a microsecond apart keeps the input's
		 * order newest last on the shard */
		bs__buf_printf(b, ",NOW(6)+INTERVAL %zu MICROSECOND,", j);
		bs__buf_hex(b, u->bodies[k].ptr, u->bodies[k].len);
		bs__buf_puts(b, ")");
	}
	bs__buf_puts(b, " ON DUPLICATE KEY UPDATE updated=GREATEST(VALUES(updated),updated+INTERVAL 1 MICROSECOND),"
	                "body=VALUES(body)");
	if (u->maintained) {
		bs__buf_puts(b, ";UPDATE bagstore_intents i JOIN entities e ON e.id=i.entity_id SET i.ver=e.updated"
		                " WHERE i.token=");
		bs__buf_hex(b, sb->token, strlen(sb->token));
		bs__buf_puts(b, ";COMMIT");
	}
}

/* The old bodies a shard's transaction read. */
static void take_old(bulk_t *u, int s)
{
	shard_batch_t *sb = &u->sb[s];
	char where[96];
	snprintf(where, sizeof where, "shard %s", u->st->shards[s].conf->name);
	for (int r = 0; r < u->q[s].nres; r++) {
		MYSQL_RES *res = u->q[s].res[r];
		MYSQL_ROW row;
		while ((row = mysql_fetch_row(res))) {
			unsigned long *lens = mysql_fetch_lengths(res);
			if (!row[0] || lens[0] != 16)
				continue;
			for (size_t j = 0; j < sb->len; j++) {
				size_t k = sb->idx[j];
				if (memcmp(u->ids[k].b, row[0], 16))
					continue;
				u->found[k] = true;
				if (!row[1] || bs__body_decode_row(&u->old[k], row[1], lens[1], row[0], where))
					bs_value_nil(&u->old[k]); /* its rows could be anywhere */
				bs_error_clear();
			}
		}
	}
}

/* ROLLBACK (and the lock) on a shard whose transaction failed midway. */
static void undo(bulk_t *u, int s)
{
	bs_store_t *st = u->st;
	bs_buf_t b = {0};
	if (!st->shards[s].conn)
		return;
	char msg[1024];
	int code = bs_last_error_code();
	snprintf(msg, sizeof msg, "%s", bs_last_error());
	bs__buf_puts(&b, "ROLLBACK");
	if (u->sb[s].token[0]) {
		bs__buf_puts(&b, ";DO RELEASE_LOCK(");
		bs__buf_hex(&b, u->sb[s].token, strlen(u->sb[s].token));
		bs__buf_puts(&b, ")");
	}
	if (!bs__buf_ok(&b))
		bs__shard_exec(st, s, b.ptr, b.len);
	bs__buf_free(&b);
	bs_error(code, "%s", msg);
}

static bool retryable(bs_store_t *st, int s)
{
	unsigned e = bs__shard_last_errno(st, s);
	return e == 1213 || e == 1205;
}

static void backoff(int tries)
{
	long ms = 1L << (tries < 7 ? tries : 7);
	struct timespec ts = { 0, (ms + (long)(bs_now_us() % ms)) * 1000000L };
	nanosleep(&ts, NULL);
}

#define TRIES 10

/* Step 1 for this round: every shard's transaction at once; a deadlocked
 * one again, a few times. Returns the first failure; sb[s].done tells. */
static int write_entities(bulk_t *u)
{
	bs_store_t *st = u->st;
	int rc = 0;
	for (int s = 0; s < st->n; s++) {
		entity_sql(u, s);
		if ((rc = bs__buf_ok(&u->sb[s].sql)))
			return rc;
		u->q[s].sql = u->sb[s].len ? u->sb[s].sql.ptr : NULL;
		u->q[s].len = u->sb[s].sql.len;
	}
	for (int tries = 1;; tries++) {
		rc = bs__shard_run(st, u->q);
		bool again = false;
		for (int s = 0; s < st->n; s++) {
			if (!u->q[s].sql)
				continue;
			if (!u->q[s].rc) {
				u->sb[s].done = true;
				take_old(u, s);
				u->q[s].sql = NULL;
				continue;
			}
			bs_error(u->q[s].rc, "%s", u->q[s].msg);
			bool retry = u->q[s].rc == BS_ECONFLICT && retryable(st, s);
			if (u->maintained)
				undo(u, s);
			again |= retry;
		}
		bs__shard_stmts_clear(u->q, st->n);
		if (!rc || !again || tries == TRIES)
			break;
		backoff(tries);
	}
	/* the first failed shard's message (take_old and undo on the other
	 * shards have used the error slot since) */
	for (int s = 0; rc && s < st->n; s++)
		if (u->q[s].sql && u->q[s].rc) {
			rc = bs_error(u->q[s].rc, "%s", u->q[s].msg);
			break;
		}
	return rc;
}

/* ------------------------------------------------------------ index rows */

typedef struct {
	bs_buf_t del, ins; /* entity_id list; VALUES list */
	size_t ndel, nins;
} rows_t;

/* What one entity's write means for idx: the old row removed where it was
 * (everywhere when the old body is unknown), the new row upserted. */
static void entity_rows(rows_t *per, const bs_index_t *idx, const bs_id_t *id, const bs_value_t *old,
                        bool old_unknown, const bs_value_t *bag, int n)
{
	const bs_value_t *nv[BS_INDEX_MAX_PROPS], *ov[BS_INDEX_MAX_PROPS];
	bs_value_t nt[BS_INDEX_MAX_PROPS], ot[BS_INDEX_MAX_PROPS];
	int ns = bs__index_row_for(nv, nt, idx, bag, n, NULL);
	int os = old ? bs__index_row_for(ov, ot, idx, old, n, NULL) : -1;
	if (os >= 0 && ns == os && idx->state == BS_INDEX_READY) {
		bool same = true;
		for (int k = 0; k < idx->nprops && same; k++)
			same = bs_value_equal(nv[k], ov[k]);
		if (same)
			return;
	}
	for (int i = 0; i < n; i++)
		if (i != ns && (old_unknown || i == os)) {
			bs__buf_puts(&per[i].del, per[i].ndel++ ? "," : "");
			bs__buf_hex(&per[i].del, id->b, 16);
		}
	if (ns >= 0) {
		bs_buf_t *b = &per[ns].ins;
		bs__buf_puts(b, per[ns].nins++ ? ",(" : "(");
		for (int k = 0; k < idx->nprops; k++) {
			bs__buf_value(b, nv[k], &idx->props[k]);
			bs__buf_puts(b, ",");
		}
		bs__buf_hex(b, id->b, 16);
		bs__buf_puts(b, ")");
	}
}

/* idx's statements per target shard, appended to out[]. */
static void index_stmts(bs_buf_t *out, rows_t *per, const bs_index_t *idx, int n)
{
	for (int i = 0; i < n; i++) {
		bs_buf_t *b = &out[i];
		if (per[i].ndel) {
			bs__buf_puts(b, b->len ? ";DELETE FROM " : "DELETE FROM ");
			bs__buf_ident(b, idx->name);
			bs__buf_puts(b, " WHERE entity_id IN (");
			bs__buf_putn(b, per[i].del.ptr, per[i].del.len);
			bs__buf_puts(b, ")");
		}
		if (per[i].nins) {
			bs__buf_puts(b, b->len ? ";INSERT INTO " : "INSERT INTO ");
			bs__buf_ident(b, idx->name);
			bs__buf_puts(b, " (");
			for (int k = 0; k < idx->nprops; k++) {
				bs__buf_ident(b, idx->props[k].name);
				bs__buf_puts(b, ",");
			}
			bs__buf_puts(b, "entity_id) VALUES ");
			bs__buf_putn(b, per[i].ins.ptr, per[i].ins.len);
			bs__buf_puts(b, " ON DUPLICATE KEY UPDATE ");
			for (int k = 0; k < idx->nprops; k++) {
				bs__buf_puts(b, k ? "," : "");
				bs__buf_ident(b, idx->props[k].name);
				bs__buf_puts(b, "=VALUES(");
				bs__buf_ident(b, idx->props[k].name);
				bs__buf_puts(b, ")");
			}
		}
		bs__buf_reset(&per[i].del);
		bs__buf_reset(&per[i].ins);
		per[i].ndel = per[i].nins = 0;
	}
}

/* Step 2: the index rows of every entity written this round, every target
 * shard at once; deadlocked shards again (the statements are idempotent). */
static int write_rows(bulk_t *u, const size_t *round, size_t nround)
{
	bs_store_t *st = u->st;
	int n = st->n, rc = 0;
	rows_t *per = calloc((size_t)n, sizeof *per);
	bs_buf_t *out = calloc((size_t)n, sizeof *out);
	if (!per || !out) {
		rc = bs_error(BS_ENOMEM, "out of memory");
		goto done;
	}
	for (int x = 0; x < u->cat->len; x++) {
		const bs_index_t *idx = &u->cat->items[x];
		if (idx->state == BS_INDEX_DISABLED)
			continue;
		for (size_t j = 0; j < nround; j++) {
			size_t k = round[j];
			if (!u->written[k])
				continue;
			const bs_value_t *old = u->old[k].type == BS_MAP ? &u->old[k] : NULL;
			entity_rows(per, idx, &u->ids[k], old, u->found[k] && !old, &u->bags[k], n);
		}
		index_stmts(out, per, idx, n);
	}
	for (int i = 0; i < n; i++) {
		if ((rc = bs__buf_ok(&out[i])))
			goto done;
		u->q[i].sql = out[i].len ? out[i].ptr : NULL;
		u->q[i].len = out[i].len;
	}
	for (int tries = 1;; tries++) {
		rc = bs__shard_run(st, u->q);
		bs__shard_stmts_clear(u->q, n);
		bool again = false;
		for (int i = 0; i < n; i++) {
			if (u->q[i].sql && u->q[i].rc == BS_ECONFLICT && retryable(st, i))
				again = true;
			else if (u->q[i].sql && !u->q[i].rc)
				u->q[i].sql = NULL;
		}
		if (!rc || !again || tries == TRIES)
			break;
		backoff(tries);
	}
	if (rc) {
		char msg[1024];
		snprintf(msg, sizeof msg, "%s", bs_last_error());
		rc = bs_error(rc, "entities are written, but some of their index rows are not: %s (readers "
		                  "filter stale rows; the cleaner repairs them)", msg);
	}
done:
	for (int i = 0; per && i < n; i++) {
		bs__buf_free(&per[i].del);
		bs__buf_free(&per[i].ins);
	}
	for (int i = 0; out && i < n; i++)
		bs__buf_free(&out[i]);
	free(per);
	free(out);
	return rc;
}

/* Step 3, sent without waiting: each shard's intents go where the entity
 * is still the version written (all of them, unless the index rows failed:
 * then they stay for the repair loop), and the lock goes. */
static void settle(bulk_t *u, bool rows_ok)
{
	bs_store_t *st = u->st;
	/* the error of the index rows, when they failed, is the call's: a
	 * send that fails here (to the same lost shard, likely) keeps it */
	char msg[1024];
	int code = bs_last_error_code();
	snprintf(msg, sizeof msg, "%s", bs_last_error());
	for (int s = 0; s < st->n; s++) {
		shard_batch_t *sb = &u->sb[s];
		bs_buf_t b = {0};
		if (!sb->done || !sb->token[0])
			continue;
		if (rows_ok) {
			bs__buf_puts(&b, "DELETE i FROM bagstore_intents i JOIN entities e ON e.id=i.entity_id"
			                 " AND e.updated=i.ver WHERE i.token=");
			bs__buf_hex(&b, sb->token, strlen(sb->token));
			bs__buf_puts(&b, ";");
		}
		bs__buf_puts(&b, "DO RELEASE_LOCK(");
		bs__buf_hex(&b, sb->token, strlen(sb->token));
		bs__buf_puts(&b, ")");
		if (!bs__buf_ok(&b) && bs__shard_send(st, s, b.ptr, b.len, sb->token)) {
			/* the intents stay: the repair loop settles them */
			if (code)
				bs_error(code, "%s", msg);
			else
				bs_error_clear();
		}
		bs__buf_free(&b);
	}
}

/* ------------------------------------------------------------ the call */

static void new_token(char token[48])
{
	bs_id_t r;
	char hex[33];
	bs_id_generate(&r);
	bs_id_hex(hex, &r);
	snprintf(token, 48, "bagstore.w.%s", hex);
}

/* Order of bag indexes by id, then position (for finding repeats). */
static int by_id_then_pos(const void *a, const void *b, void *ids)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int c = memcmp(((const bs_id_t *)ids)[x].b, ((const bs_id_t *)ids)[y].b, 16);
	return c ? c : (x > y) - (x < y);
}

/* For each bag, which occurrence of its id it is (0 first, 1 second...),
 * by sorting positions by id: a round takes one occurrence of each id. */
static int occurrences(unsigned *occ, const bs_id_t *ids, size_t n)
{
	size_t *order = malloc((n ? n : 1) * sizeof *order);
	if (!order)
		return bs_error(BS_ENOMEM, "out of memory");
	for (size_t k = 0; k < n; k++)
		order[k] = k;
	qsort_r(order, n, sizeof *order, by_id_then_pos, (void *)ids);
	for (size_t k = 0; k < n; k++)
		occ[order[k]] = k && !memcmp(ids[order[k]].b, ids[order[k - 1]].b, 16) ? occ[order[k - 1]] + 1 : 0;
	free(order);
	return 0;
}

/* Round r: the r-th occurrence of every id, grouped by shard in input
 * order. *nround gets how many. */
static int plan_round(bulk_t *u, size_t n, const unsigned *occ, unsigned r, size_t *round, size_t *nround)
{
	bs_store_t *st = u->st;
	int rc = 0;
	*nround = 0;
	for (int s = 0; s < st->n; s++) {
		u->sb[s].len = 0;
		u->sb[s].done = false;
		u->sb[s].token[0] = '\0';
	}
	for (size_t k = 0; k < n && !rc; k++)
		if (occ[k] == r) {
			round[(*nround)++] = k;
			rc = push_idx(&u->sb[bs_route_id(&u->ids[k], st->n)], k);
		}
	for (int s = 0; s < st->n; s++)
		if (u->maintained && u->sb[s].len)
			new_token(u->sb[s].token);
	return rc;
}

/* Encode the bags; the first one refused stops the call there (*ok is how
 * many go on). */
static int encode_all(bulk_t *u, size_t n, size_t *ok)
{
	int rc = 0;
	for (*ok = 0; *ok < n; (*ok)++)
		if ((rc = bs_bag_id(&u->ids[*ok], &u->bags[*ok])) ||
		    (rc = bs_body_encode(&u->bodies[*ok], &u->bags[*ok]))) {
			char msg[1024];
			snprintf(msg, sizeof msg, "%s", bs_last_error());
			return bs_error(rc, "entity %zu of the batch: %s", *ok + 1, msg);
		}
	return rc;
}

static void bulk_free(bulk_t *u, size_t n)
{
	for (size_t k = 0; u->bodies && k < n; k++)
		bs_bytes_free(&u->bodies[k]);
	for (size_t k = 0; u->old && k < n; k++)
		bs_value_clear(&u->old[k]);
	for (int s = 0; u->sb && s < u->st->n; s++) {
		free(u->sb[s].idx);
		bs__buf_free(&u->sb[s].sql);
	}
	free(u->bodies);
	free(u->old);
	free(u->found);
	free(u->sb);
	free(u->q);
}

int bs_put_many(bs_store_t *st, const bs_value_t *bags, size_t n, bs_id_t *ids, bool *written)
{
	bulk_t u = { .st = st, .bags = bags, .ids = ids, .written = written };
	size_t *round = NULL, nround, ok = 0;
	unsigned *occ = NULL;
	int rc, bad = 0;

	if (written)
		memset(written, 0, n * sizeof *written);
	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing to write");
	if (!n)
		return 0;
	bool *w = written ? written : calloc(n, sizeof *w);
	u.written = w;
	u.bodies = calloc(n, sizeof *u.bodies);
	u.old = calloc(n, sizeof *u.old);
	u.found = calloc(n, sizeof *u.found);
	u.sb = calloc((size_t)st->n, sizeof *u.sb);
	u.q = calloc((size_t)st->n, sizeof *u.q);
	round = calloc(n, sizeof *round);
	occ = calloc(n, sizeof *occ);
	if (!w || !u.bodies || !u.old || !u.found || !u.sb || !u.q || !round || !occ) {
		rc = bs_error(BS_ENOMEM, "out of memory");
		goto done;
	}
	/* what comes before a bag refused on input is written; it and the
	 * rest are not */
	bad = encode_all(&u, n, &ok);
	char bad_msg[1024];
	snprintf(bad_msg, sizeof bad_msg, "%s", bs_last_error());
	const bs_index_list_t *cat;
	if ((rc = bs__catalog_cached(&cat, st)))
		goto done;
	u.cat = cat;
	for (int k = 0; k < cat->len; k++)
		u.maintained |= cat->items[k].state != BS_INDEX_DISABLED;
	if ((rc = occurrences(occ, ids, ok)))
		goto done;
	for (unsigned r = 0;; r++) {
		if ((rc = plan_round(&u, ok, occ, r, round, &nround)) || !nround)
			break;
		/* a shard that failed wrote nothing of this round; the others
		 * committed: their index rows are written all the same */
		int erc = write_entities(&u);
		char emsg[1024];
		snprintf(emsg, sizeof emsg, "%s", bs_last_error());
		for (size_t j = 0; j < nround; j++)
			w[round[j]] = u.sb[bs_route_id(&ids[round[j]], st->n)].done;
		for (size_t j = 0; j < nround; j++)
			if (w[round[j]])
				bs__fault_after_entity(&ids[round[j]]);
		int rrc = u.maintained ? write_rows(&u, round, nround) : 0;
		settle(&u, rrc == 0);
		if (erc) {
			rc = bs_error(erc, "%s", emsg);
			break;
		}
		if ((rc = rrc))
			break;
	}
	if (!rc && bad)
		rc = bs_error(bad, "%s", bad_msg);
done:
	bulk_free(&u, n);
	if (!written)
		free(w);
	free(round);
	free(occ);
	return rc;
}

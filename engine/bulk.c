/*
 * bulk.c - many puts at once (bs_put_many): the write path of entity.c in
 * batches, for loading JSON Lines and the like.
 *
 * The entities of one shard go in one transaction, one round trip: their
 * old bodies and versions read FOR UPDATE, then one compound statement
 * with the multi-row INSERT ... ON DUPLICATE KEY UPDATE and the batch's
 * intent (one token, one named lock per shard and batch; its ids, in
 * bagstore_batch_intents); every shard at once (fanout.c). With no index,
 * first one fenced INSERT in autocommit, checked row by row by the
 * entities' foreign key on bagstore_owned (fk_sql); where it is refused,
 * two round trips (the fence, then the INSERT with each version a
 * literal: entity_sql, second_trip). Then the index
 * rows they need, as one multi-row delete and one multi-row upsert per
 * index and target shard, every target shard at once; then, sent without
 * waiting, each shard's intent removed if every entity is still the
 * version written (which the writer knows), and the lock released. The
 * guarantees are entity.c's: once writers and the cleaner are quiet, every
 * index row is what the current body implies.
 *
 * An id given twice in one call is written twice, in order: its second
 * occurrence goes in a later round, so each round's old bodies are right.
 *
 * Fenced as entity.c's writes are (doc/DESIGN.md, "Buckets and
 * resharding"): a shard's transaction share-locks the ownership rows of its
 * entities' buckets and writes only when it owns them all. The fast form
 * comes first: every bucket simply owned, nothing to log. A shard whose
 * fast form refused applied nothing and gets the full form next (whatever
 * the other shards did), which also writes to leaving buckets, logging
 * their entities for the move; a shard that refuses that wrote nothing,
 * and its entities go again, the map read again. The index rows are
 * fenced per target shard the same way.
 */
#include "internal.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
	size_t *idx; /* indexes into the call's bags, in order */
	size_t len, cap;
	bs_buf_t sql;  /* this round's first trip: the fence (and old bodies) */
	bs_buf_t sql2; /* its second: the writes, stamped, and COMMIT */
	size_t *ts;    /* per entity: where its version's literal is in sql2 */
	size_t tscap;
	char token[48];         /* "" when no index is maintained */
	unsigned long lock_gen; /* the shard's conn_gen when the batch's lock was taken */
	int64_t t_us;           /* the transaction's NOW(6) (@bs_t), from the fence's answer */
	bool done;              /* committed */
	bool refused;           /* the shard did not own every bucket: nothing written */
	bool fk;                /* this try is the fenced INSERT (no index; fk_sql): refused whole unless
	                         * every bucket is simply owned */
	bool fast;              /* this try is the fence's fast form (every bucket owned) */
	bool no;                /* this try's answer: the fence did not pass, nothing written */
	bool one_trip;          /* this round's transaction in one round trip (a two-trip try was late) */
	int err;                /* its last try failed (and msg says how): nothing written */
	char msg[512];
} shard_batch_t;

typedef struct {
	bs_store_t *st;
	const bs_index_list_t *cat;
	const bs_value_t *bags;
	bs_bytes_t *bodies;
	bs_id_t *ids;
	bool *written;
	bs_value_t *old; /* per bag: the body it replaced (NIL: none or undecodable) */
	bool *found;     /* per bag: there was a row */
	int64_t *ver;    /* per bag: the version the round wrote (first the one it replaced) */
	bool maintained;
	shard_batch_t *sb; /* per shard */
	bs__shard_stmt_t *q;
	bs__shard_stmt_t *q2; /* per shard: the second trip of its entities' transaction */
	bool *rows_refused;   /* per shard: its index statements were refused */
} bulk_t;

static int push_idx(shard_batch_t *b, size_t k)
{
	int rc = BS_ARRAY_GROW(b->idx, b->len, b->cap, 64);
	if (rc)
		return rc;
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

static int int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* buckets[n] sorted, each once; returns how many */
static size_t uniq_buckets(int *buckets, size_t n)
{
	size_t m = 0;
	if (n > 1)
		qsort(buckets, n, sizeof *buckets, int_cmp);
	for (size_t k = 0; k < n; k++)
		if (!m || buckets[m - 1] != buckets[k])
			buckets[m++] = buckets[k];
	return m;
}

static void bucket_list(bs_buf_t *b, const int *buckets, size_t m)
{
	bs__buf_puts(b, "(-1");
	for (size_t k = 0; k < m; k++) {
		bs__buf_putn(b, ",", 1);
		bs__buf_uint(b, (unsigned)buckets[k]);
	}
	bs__buf_puts(b, ")");
}

/* The fence of a shard's transaction over buckets[n] (sorted here, kept
 * once): "START TRANSACTION;SELECT (@bs_o:=COUNT(*))=(@bs_want:=n) ...
 * LOCK IN SHARE MODE", ascending as a move's cut-over locks them; its
 * answer, the transaction's first result set, says whether the shard owns
 * them all (the statements after it apply only then). The fast form counts
 * only buckets simply 'owned' (none leaving: nothing to log for a move);
 * the full form also 'leaving' ones, whose writes it logs. A stamped
 * fence (the entities') also sets @bs_t to the transaction's NOW(6) and
 * answers it. */
static void fence_sql(bs_buf_t *b, int *buckets, size_t n, bool fast, bool stamp)
{
	size_t m = uniq_buckets(buckets, n);
	bs__buf_printf(
		b,
		"START TRANSACTION;SELECT (@bs_o:=COUNT(*))=(@bs_want:=%zu)%s FROM bagstore_buckets WHERE state%s"
		" AND bucket IN ",
		m, stamp ? ",@bs_t:=UNIX_TIMESTAMP(NOW(6))" : "", fast ? "='owned'" : " IN " BS__OWNING_SQL);
	bucket_list(b, buckets, m);
	bs__buf_printf(b, " LOCK IN SHARE MODE WAIT %d", BS__FENCE_WAIT_S);
}

/* ";INSERT INTO bagstore_move_log ... " of (bucket, id) pairs (a UNION ALL
 * of "SELECT bucket, id"), for the moves of those buckets that are leaving,
 * when the shard owned them all. */
static void log_pairs_sql(bs_buf_t *b, const bs_buf_t *pairs, int kind)
{
	if (!pairs->len)
		return;
	bs__buf_printf(b,
	               ";INSERT INTO bagstore_move_log (move_id, kind, id) SELECT o.move_id, %d, l.id FROM"
	               " bagstore_buckets o JOIN (",
	               kind);
	bs__buf_putn(b, pairs->ptr, pairs->len);
	bs__buf_puts(b, ") l ON l.bucket=o.bucket WHERE o.state='leaving' AND @bs_o=@bs_want"
	                " ON DUPLICATE KEY UPDATE n=n+1");
}

static void pair_add(bs_buf_t *pairs, int bucket, const void *id)
{
	bool first = pairs->len == 0;
	bs__buf_puts(pairs, first ? "SELECT " : " UNION ALL SELECT ");
	bs__buf_uint(pairs, (unsigned)bucket);
	bs__buf_puts(pairs, first ? " bucket, " : ", ");
	bs__buf_hex(pairs, id, 16);
	if (first)
		bs__buf_puts(pairs, " id");
}

#define TS_HOLDER "'0000-00-00 00:00:00.000000'" /* a version's literal, written in place (stamp) */

/* With no index maintained, a shard's entities first go as one fenced
 * INSERT in autocommit, one round trip, as a single put's fast form goes
 * (doc/DESIGN.md, "The fence"): each row names its bucket and, replacing a
 * row, sets it again and turns its flip, so that InnoDB checks every row
 * against bagstore_owned, share-locking the parent row until the statement
 * commits, and refuses the whole statement (error 1452, nothing written)
 * unless every bucket is simply owned here; then the fence's other forms
 * follow (fk_said_no). No ownership read, no transaction of its own: the
 * check is InnoDB's lookup inside each row's write. Each version is the
 * statement's NOW(6) plus j microseconds for the j-th in input order (the
 * input's order, as the other forms), and the statement may run
 * BS__BULK_FK_MAX_S at most (max_statement_time), so its rows commit within
 * that of their versions. The rows go in ascending bucket order: InnoDB
 * share-locks each row's parent row as it writes the row, and a move's
 * first step deletes the parent rows of its buckets in ascending order
 * (move.c's mark_buckets), so taken in input order they could close a
 * wait cycle with it. Within a bucket they still can (its two parent rows,
 * flip 0 and 1, are checked in whatever order its rows' flips fall):
 * InnoDB breaks that one, a deadlock the put tries again and the move's
 * step takes as transient. */
#define FK_STMT \
	"SET STATEMENT foreign_key_checks=1, innodb_lock_wait_timeout=" BS__STR( \
		BS__BULK_ROW_WAIT_S) ", lock_wait_timeout=" BS__STR(BS__FENCE_WAIT_S) ", max_statement_time=" BS__STR(BS__BULK_FK_MAX_S) " FOR "
typedef struct {
	int bucket;
	size_t j; /* its place in the shard's batch, input order */
} fk_row_t;

static int by_bucket_then_j(const void *a, const void *b)
{
	const fk_row_t *x = a, *y = b;
	if (x->bucket != y->bucket)
		return (x->bucket > y->bucket) - (x->bucket < y->bucket);
	return (x->j > y->j) - (x->j < y->j);
}

static int fk_sql(bulk_t *u, shard_batch_t *sb)
{
	bs_buf_t *b = &sb->sql;
	fk_row_t *rows = malloc(sb->len * sizeof *rows);
	if (!rows)
		return bs__oom();
	for (size_t j = 0; j < sb->len; j++)
		rows[j] = (fk_row_t){ bs_route_id(&u->ids[sb->idx[j]], u->st->map.buckets), j };
	qsort(rows, sb->len, sizeof *rows, by_bucket_then_j);
	bs__buf_puts(b, FK_STMT "INSERT INTO entities (id, updated, body, bucket) VALUES ");
	for (size_t r = 0; r < sb->len; r++) {
		size_t j = rows[r].j, k = sb->idx[j];
		bs__buf_puts(b, r ? ",(" : "(");
		bs__buf_hex(b, u->ids[k].b, 16);
		bs__buf_puts(b, ",NOW(6)");
		if (j) {
			bs__buf_puts(b, "+INTERVAL ");
			bs__buf_uint(b, j);
			bs__buf_puts(b, " MICROSECOND");
		}
		bs__buf_puts(b, ",");
		bs__buf_hex(b, u->bodies[k].ptr, u->bodies[k].len);
		bs__buf_puts(b, ",");
		bs__buf_uint(b, (unsigned)rows[r].bucket);
		bs__buf_puts(b, ")");
	}
	bs__buf_puts(b, BS__FENCED_TAIL);
	free(rows);
	return 0;
}

/* One shard's transaction for this round, fenced: written only when the
 * shard owns every bucket of its entities. With no index maintained, the
 * fenced INSERT (fk_sql) when sb->fk, else two round trips: the first
 * takes the fence (its answer: owned or not, and the transaction's
 * NOW(6)); the second (second_trip), stamped with
 * versions from that NOW(6) (stamp), writes when the fence passed, its
 * first result set saying whether it wrote. A version as a literal costs
 * the server a fraction of what a per-row FROM_UNIXTIME(@bs_t+...) does
 * (doc/DESIGN.md, "Bulk put"), and the first trip takes only share locks
 * on ownership rows, which no other writer waits for. With an index, one
 * round trip and the per-row expression: the old bodies are read FOR
 * UPDATE, and a shard's row locks held while another shard's first trip
 * waits could close a wait cycle across shards that no server sees. The
 * fast form (sb->fast) applies only when every bucket is simply owned and
 * logs nothing; the full form also writes to leaving buckets, logging
 * their entities for the move. With indexes, the batch's intent goes in
 * the same compound statement as the entities: one statement for both, no
 * intent without its entity write, and none left when the fence refused. */
static int entity_sql(bulk_t *u, int s)
{
	shard_batch_t *sb = &u->sb[s];
	bs_buf_t *b = &sb->sql, *b2 = &sb->sql2, pairs = { 0 };
	bs__buf_reset(b);
	bs__buf_reset(b2);
	if (!sb->len || sb->fk) /* nothing, or the fenced INSERT: no fence of its own */
		return sb->len ? fk_sql(u, sb) : 0;
	int *buckets = malloc(sb->len * sizeof *buckets);
	if (!buckets)
		return bs__oom();
	if (sb->tscap < sb->len) {
		size_t *p = realloc(sb->ts, sb->len * sizeof *p);
		if (!p) {
			free(buckets);
			return bs__oom();
		}
		sb->ts = p;
		sb->tscap = sb->len;
	}
	for (size_t j = 0; j < sb->len; j++) {
		buckets[j] = bs_route_id(&u->ids[sb->idx[j]], u->st->map.buckets);
		if (!sb->fast)
			pair_add(&pairs, buckets[j], u->ids[sb->idx[j]].b);
	}
	if (u->maintained) {
		bs__buf_puts(b, "DO ");
		bs__lock_take_sql(b, sb->token);
		bs__buf_puts(b, ";");
	}
	fence_sql(b, buckets, sb->len, sb->fast, true);
	if (u->maintained) {
		bs__buf_puts(b, ";SELECT id, body, UNIX_TIMESTAMP(updated) FROM entities WHERE id IN (");
		id_lits(b, u, sb);
		bs__buf_puts(b, ") FOR UPDATE");
	}
	/* a compound statement, not INSERT ... SELECT: that would take the
	 * table's AUTO_INCREMENT lock for the statement; in a second trip, its
	 * answer first: the fence passed on this very session (a connection
	 * made anew would answer NULL, and write nothing) */
	bool two = !u->maintained && !sb->one_trip;
	if (two) {
		b = b2;
		bs__buf_puts(b, "SELECT @bs_o=@bs_want;");
	} else {
		bs__buf_puts(b, ";");
	}
	bs__buf_puts(b, "BEGIN NOT ATOMIC IF @bs_o=@bs_want THEN ");
	/* in the second trip, a row lock waited for briefly: the rows commit
	 * soon after their versions (BS__BULK_ROW_WAIT_S) */
	if (two) {
		bs__buf_puts(b, "SET STATEMENT innodb_lock_wait_timeout=");
		bs__buf_uint(b, BS__BULK_ROW_WAIT_S);
		bs__buf_puts(b, " FOR ");
	}
	bs__buf_puts(b, "INSERT INTO entities (id, updated, body) VALUES ");
	for (size_t j = 0; j < sb->len; j++) {
		size_t k = sb->idx[j];
		bs__buf_puts(b, j ? ",(" : "(");
		bs__buf_hex(b, u->ids[k].b, 16);
		/* one NOW(6), the fence's: a microsecond apart keeps the input's
		 * order newest last on the shard, and the writer knows every
		 * version it wrote (take_old) */
		if (two) {
			bs__buf_puts(b, ",");
			sb->ts[j] = b->len;
			bs__buf_puts(b, TS_HOLDER ",");
		} else {
			bs__buf_puts(b, ",FROM_UNIXTIME(@bs_t+0.000001*");
			bs__buf_uint(b, j);
			bs__buf_puts(b, "),");
		}
		bs__buf_hex(b, u->bodies[k].ptr, u->bodies[k].len);
		bs__buf_puts(b, ")");
	}
	bs__buf_puts(b, " ON DUPLICATE KEY UPDATE updated=GREATEST(VALUES(updated),updated+INTERVAL 1 MICROSECOND),"
	                "body=VALUES(body);");
	if (u->maintained) {
		/* the batch's intent, naming its entities in parts the repair
		 * loop can take one at a time: its removal checks their versions
		 * (removal_sql) */
		bs__buf_puts(b, "INSERT INTO bagstore_batch_intents (token, part, ids) VALUES ");
		for (size_t j = 0; j < sb->len; j++) {
			if (j % BS__BATCH_PART == 0) {
				bs__buf_puts(b, j ? "'),(" : "(");
				bs__buf_hex(b, sb->token, strlen(sb->token));
				bs__buf_puts(b, ",");
				bs__buf_uint(b, j / BS__BATCH_PART);
				bs__buf_puts(b, ",X'");
			}
			bs__buf_hexu(b, u->ids[sb->idx[j]].b, 16);
		}
		bs__buf_puts(b, "') ON DUPLICATE KEY UPDATE ids=VALUES(ids);");
	}
	bs__buf_puts(b, " END IF; END");
	if (!sb->fast)
		log_pairs_sql(b, &pairs, 0);
	bs__buf_puts(b, ";COMMIT");
	if (pairs.oom)
		b->oom = true;
	bs__buf_free(&pairs);
	free(buckets);
	return 0;
}

/* Shard s's versions written into its second trip: the fence's NOW(6)
 * (t_us, the session's time zone UTC, as every connection's) plus j
 * microseconds for its j-th entity. */
static int stamp(bulk_t *u, int s)
{
	shard_batch_t *sb = &u->sb[s];
	char sec[32] = "";
	int64_t last = -1;
	if (sb->t_us <= 0)
		return bs_error(BS_ESQL, "shard %s: the fence answered no time", u->st->shards[s].conf->name);
	for (size_t j = 0; j < sb->len; j++) {
		int64_t v = sb->t_us + (int64_t)j, whole = v / 1000000;
		long frac = (long)(v % 1000000);
		if (whole != last) {
			struct tm tm;
			time_t t = (time_t)whole;
			if (!gmtime_r(&t, &tm) || strftime(sec, sizeof sec, "%Y-%m-%d %H:%M:%S", &tm) != 19)
				return bs_error(BS_ESQL, "shard %s: the fence's time %lld is out of range",
				                u->st->shards[s].conf->name, (long long)sb->t_us);
			last = whole;
		}
		char *o = sb->sql2.ptr + sb->ts[j] + 1; /* past the quote */
		memcpy(o, sec, 19);
		o[19] = '.';
		for (int d = 25; d > 19; d--, frac /= 10)
			o[d] = (char)('0' + frac % 10);
	}
	return 0;
}

/* The old bodies a shard's transaction read, and the versions it wrote. */
static void take_old(bulk_t *u, int s)
{
	shard_batch_t *sb = &u->sb[s];
	char where[96];
	snprintf(where, sizeof where, "shard %s", u->st->shards[s].conf->name);
	for (int r = 1; r < u->q[s].nres; r++) { /* the first: the fence's answer */
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
				u->ver[k] = bs__parse_unix_us(row[2]);
				if (!row[1] || bs__body_decode_row(&u->old[k], row[1], lens[1], row[0], where))
					bs_value_nil(&u->old[k]); /* its rows could be anywhere */
				bs_error_clear();
			}
		}
	}
	/* what the upsert wrote: the fence's NOW(6) plus j microseconds, or
	 * one above the version it replaced (its GREATEST) */
	for (size_t j = 0; j < sb->len; j++) {
		size_t k = sb->idx[j];
		int64_t v = sb->t_us + (int64_t)j;
		u->ver[k] = u->found[k] && u->ver[k] + 1 > v ? u->ver[k] + 1 : v;
	}
}

/* ROLLBACK (and the lock) on a shard whose transaction failed midway. */
static void undo(bulk_t *u, int s)
{
	bs_store_t *st = u->st;
	bs_buf_t b = { 0 };
	if (!st->shards[s].conn)
		return;
	char msg[1024];
	int code = bs_last_error_code();
	unsigned err = st->shards[s].last_errno;
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
	st->shards[s].last_errno = err; /* for retryable() */
	bs_error(code, "%s", msg);
}

static bool retryable(bs_store_t *st, int s)
{
	unsigned e = bs__shard_last_errno(st, s);
	return e == 1213 || e == 1205 || e == 1467 /* the AUTO_INCREMENT lock, lost to a deadlock */;
}

/* The fence's answer: the first result set of shard s's statements; the
 * entities' (a stamped fence) also gives its NOW(6) into *t_us. */
static bool refused_at(const bs__shard_stmt_t *q, int64_t *t_us)
{
	MYSQL_ROW row = q->nres ? mysql_fetch_row(q->res[0]) : NULL;
	if (row && t_us && mysql_num_fields(q->res[0]) > 1)
		*t_us = bs__parse_unix_us(row[1]);
	return !row || !row[0] || strcmp(row[0], "1") != 0;
}

static bool refused(const bs__shard_stmt_t *q)
{
	return refused_at(q, NULL);
}

static void backoff(int tries)
{
	long ms = 1L << (tries < 7 ? tries : 7);
	struct timespec ts = { 0, (ms + (long)(bs_now_us() % ms)) * 1000000L };
	nanosleep(&ts, NULL);
}

#define TRIES 10

/* Before hop number `hop` (0..) after a refusal: a few ms, as a cut-over
 * finishes its roll-forward. */
static void hop_wait(int hop)
{
	struct timespec ts = { 0, (long)(hop < 4 ? (hop + 1) * 5 : 50) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Shard s's transaction (its fast or full form) into u->q[s]. */
static int entity_stmt(bulk_t *u, int s)
{
	int rc;
	if ((rc = entity_sql(u, s)) || (rc = bs__buf_ok(&u->sb[s].sql)) || (rc = bs__buf_ok(&u->sb[s].sql2)))
		return rc;
	u->q[s].sql = u->sb[s].len ? u->sb[s].sql.ptr : NULL;
	u->q[s].len = u->sb[s].sql.len;
	return 0;
}

/* Test fault points between the two trips: a stop once the first trip
 * answered, and shard s's connection closed before its second. */
static void fault_pause_between_trips(void)
{
	static atomic_bool paused;
	if (bs_fault(BS_FAULT_PAUSE_BETWEEN_BULK_TRIPS) && !atomic_exchange(&paused, true)) {
		fprintf(stderr,
		        "bagstore: fault pause_between_bulk_trips: a batch's fence is taken, nothing written "
		        "(kill -CONT %d resumes)\n",
		        (int)getpid());
		raise(SIGSTOP);
	}
}

static void fault_between_trips(bs_store_t *st, int s)
{
	static atomic_bool closed;
	if (bs_fault(BS_FAULT_BULK_NEW_SESSION) && !atomic_exchange(&closed, true)) {
		fprintf(stderr, "bagstore: fault bulk_new_session: shard %s's connection closed between the trips\n",
		        st->shards[s].conf->name);
		bs__shard_close(st, s); /* its transaction rolled back; the next trip connects anew */
	}
}

/* After the first trip: each shard's answer (sb->no), and the second
 * trip of every shard in the two-trip form whose first one succeeded,
 * every shard at once: stamped when the fence passed and the first trip
 * answered within the budget (BS__BULK_STAMP_BUDGET_US since it was sent
 * at t0; else rolled back, its stamp stale, and marked to go again in one
 * round trip, which needs no budget: sb->one_trip), a rollback when it
 * did not pass. Its outcome joins the first's in u->q[s] (rc and
 * message), and its answer replaces the fence's. */
static void second_trip(bulk_t *u, double t0)
{
	static const char no_write[] = "SELECT 0;ROLLBACK";
	bs_store_t *st = u->st;
	for (int s = 0; s < st->n; s++)
		if (u->q[s].sql && !u->q[s].rc && u->sb[s].sql2.len) {
			fault_pause_between_trips();
			break;
		}
	bool any = false, late = bs_now_mono() - t0 > (double)BS__BULK_STAMP_BUDGET_US / 1e6;
	for (int s = 0; s < st->n; s++) {
		shard_batch_t *sb = &u->sb[s];
		bs__shard_stmt_t *q = &u->q[s], *q2 = &u->q2[s];
		q2->sql = NULL;
		if (!q->sql || q->rc)
			continue;
		if (sb->fk) { /* it committed: no answer but its status */
			sb->no = false;
			continue;
		}
		sb->no = refused_at(q, &sb->t_us);
		if (!sb->sql2.len)
			continue; /* one trip: the fence's answer is the shard's */
		int rc = 0;
		if (!sb->no && late)
			sb->one_trip = true; /* nothing written: write_entities sends it again */
		if (!sb->no && !sb->one_trip && (rc = stamp(u, s))) {
			q->rc = rc;
			snprintf(q->msg, sizeof q->msg, "%s", bs_last_error());
			continue;
		}
		if (sb->no || sb->one_trip)
			*q2 = (bs__shard_stmt_t){ .sql = no_write, .len = sizeof no_write - 1 };
		else
			*q2 = (bs__shard_stmt_t){ .sql = sb->sql2.ptr, .len = sb->sql2.len };
		if (!any)
			fault_between_trips(st, s);
		any = true;
	}
	int rc = any ? bs__shard_run(st, u->q2) : 0;
	for (int s = 0; s < st->n; s++) {
		bs__shard_stmt_t *q = &u->q[s], *q2 = &u->q2[s];
		if (!q2->sql)
			continue;
		if (q2->rc) {
			q->rc = q2->rc;
			snprintf(q->msg, sizeof q->msg, "%s", q2->msg);
		} else if (rc && !q2->nres) { /* never sent (the run itself failed) */
			q->rc = rc;
			snprintf(q->msg, sizeof q->msg, "%s", bs_last_error());
		} else {
			u->sb[s].no = refused(q2);
		}
	}
}

/* Did shard s's fenced INSERT (fk_sql) write nothing, as a whole: a
 * bucket not simply owned there (1452: a move is likely under way, and
 * every batch would be refused; the form is skipped there for FK_OFF_S),
 * or it ran past BS__BULK_FK_MAX_S (1969: the next batches are likely as
 * large, and each would cost the server that long and a rollback; skipped
 * for FK_OFF_LONG_S)? Then the error is cleared: not a failure, the
 * fence's other forms follow. (The shard's last_errno is this run's: the
 * fan-out clears it as it starts a shard.) */
#define FK_OFF_S 1.0
#define FK_OFF_LONG_S 30.0
#define ER_STATEMENT_TIMEOUT_ 1969
static bool fk_said_no(bs_store_t *st, int s)
{
	unsigned e = bs__shard_last_errno(st, s);
	if (e != BS__FENCE_REFUSED && e != ER_STATEMENT_TIMEOUT_)
		return false;
	st->shards[s].bulk_fk_off_until = bs_now_mono() + (e == BS__FENCE_REFUSED ? FK_OFF_S : FK_OFF_LONG_S);
	bs_error_clear();
	return true;
}

/* Shard s, nothing written this pass, built again for the next (the full
 * form, or one round trip): true when it goes; false when it cannot be
 * built, and the shard failed for good (its lock released). */
static bool send_again(bulk_t *u, int s)
{
	shard_batch_t *sb = &u->sb[s];
	bs__shard_stmts_clear(&u->q[s], 1);
	bs__shard_stmts_clear(&u->q2[s], 1);
	if (!entity_stmt(u, s))
		return true;
	u->q[s].sql = NULL;
	sb->err = bs_last_error_code();
	snprintf(sb->msg, sizeof sb->msg, "%s", bs_last_error());
	if (sb->token[0])
		bs__lock_release(u->st, s, sb->token);
	return false;
}

/* Step 1 for this round: every shard's transaction at once, the fence's
 * fast form first; a shard whose fast form refused (a bucket not simply
 * owned: leaving, or not its own) applied nothing and is sent the full
 * form in the next pass (not a retry), which writes to leaving buckets and
 * logs them, or refuses; a deadlocked one again, a few times. Every shard
 * goes on until it is done, refused or failed, whatever the others do: a
 * shard's failure is its own. Returns the first failed shard's error;
 * sb[s].done tells. */
static int write_entities(bulk_t *u)
{
	bs_store_t *st = u->st;
	int rc = 0;
	bool fk = !u->maintained && !bs_fault(BS_FAULT_BULK_NO_FK);
	double now = bs_now_mono();
	for (int s = 0; s < st->n; s++) {
		u->sb[s].fk = fk && now >= st->shards[s].bulk_fk_off_until;
		u->sb[s].fast = true;
		u->sb[s].one_trip = false;
		u->sb[s].err = 0;
		if ((rc = entity_stmt(u, s)))
			return rc;
	}
	for (int tries = 1;;) {
		double t0 = bs_now_mono();
		bs__shard_run(st, u->q); /* each shard's result is in q[s] */
		second_trip(u, t0);
		bool retry = false, pending = false;
		for (int s = 0; s < st->n; s++) {
			shard_batch_t *sb = &u->sb[s];
			if (!u->q[s].sql)
				continue;
			bool no = !u->q[s].rc && sb->no;
			if (sb->fk && u->q[s].rc && fk_said_no(st, s)) {
				/* nothing written: the fence's two-trip form next */
				sb->fk = false;
				pending |= send_again(u, s);
				continue;
			}
			if (!u->q[s].rc && sb->one_trip && sb->sql2.len) {
				/* late, rolled back: the same form again, in one trip */
				pending |= send_again(u, s);
				continue;
			}
			if (no && sb->fast) {
				/* nothing applied: the full form decides */
				sb->fast = false;
				pending |= send_again(u, s);
				continue;
			}
			if (!u->q[s].rc) {
				sb->err = 0;
				sb->refused = no;
				sb->done = !no;
				sb->lock_gen = st->shards[s].conn_gen;
				if (sb->done && !sb->fk)
					take_old(u, s); /* (the foreign-key form: no index, nothing to read) */
				else if (sb->token[0])
					bs__lock_release(st, s, sb->token);
				u->q[s].sql = NULL;
				continue;
			}
			sb->err = u->q[s].rc;
			snprintf(sb->msg, sizeof sb->msg, "%s", u->q[s].msg);
			bs_error(u->q[s].rc, "%s", u->q[s].msg);
			bool again = u->q[s].rc == BS_ECONFLICT && retryable(st, s) && tries < TRIES;
			undo(u, s); /* a statement failed inside the transaction: ROLLBACK, the lock */
			if (again)
				retry = true;
			else
				u->q[s].sql = NULL; /* failed for good */
		}
		bs__shard_stmts_clear(u->q, st->n);
		bs__shard_stmts_clear(u->q2, st->n);
		if (!retry && !pending)
			break;
		if (retry)
			backoff(tries++);
	}
	/* the first failed shard's message (take_old and undo on the other
	 * shards have used the error slot since) */
	for (int s = 0; s < st->n; s++)
		if (u->sb[s].err)
			return bs_error(u->sb[s].err, "%s", u->sb[s].msg);
	return 0;
}

/* ------------------------------------------------------------ index rows */

typedef struct {
	bs_buf_t del, ins; /* entity_id list; VALUES list */
	size_t ndel, nins;
} rows_t;

/* A target shard's fence over every index's statements: the buckets they
 * write, the (bucket, id) pairs to log, deletes of rows whose bucket is
 * unknown (logged for every leaving move). */
typedef struct {
	int *bk;
	size_t nbk, cap;
	bs_buf_t pairs;
	bs_buf_t anywhere; /* ids */
} fence_t;

static void fence_add(fence_t *f, int bucket, const bs_id_t *id)
{
	if (f->nbk == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 64;
		int *p = realloc(f->bk, cap * sizeof *p);
		if (!p) {
			f->pairs.oom = true;
			return;
		}
		f->bk = p;
		f->cap = cap;
	}
	f->bk[f->nbk++] = bucket;
	pair_add(&f->pairs, bucket, id->b);
}

/* What one entity's write means for idx: the old row removed where it was
 * (everywhere when the old body is unknown), the new row upserted; the
 * buckets written go to each shard's fence. */
static void entity_rows(rows_t *per, fence_t *fen, const bs_index_t *idx, const bs_id_t *id, const bs_value_t *old,
                        bool old_unknown, const bs_value_t *bag, const bs_store_t *st)
{
	const bs_value_t *nv[BS_INDEX_MAX_PROPS], *ov[BS_INDEX_MAX_PROPS];
	bs_value_t nt[BS_INDEX_MAX_PROPS], ot[BS_INDEX_MAX_PROPS];
	int n = st->n, nb = -1, ob = -1;
	int ns = bs__index_row_route(nv, nt, &nb, idx, bag, st, NULL);
	int os = old ? bs__index_row_route(ov, ot, &ob, idx, old, st, NULL) : -1;
	if (os >= 0 && ns == os && nb == ob && idx->state == BS_INDEX_READY) {
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
			if (old_unknown) {
				bool first = fen[i].anywhere.len == 0;
				bs__buf_puts(&fen[i].anywhere, first ? "SELECT " : " UNION ALL SELECT ");
				bs__buf_hex(&fen[i].anywhere, id->b, 16);
				if (first)
					bs__buf_puts(&fen[i].anywhere, " id");
			} else {
				fence_add(&fen[i], ob, id);
			}
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
		fence_add(&fen[ns], nb, id);
		/* the upsert replaces the old row on the same shard: its bucket too */
		if (os == ns && ob >= 0 && ob != nb)
			fence_add(&fen[ns], ob, id);
	}
}

/* idx's statements per target shard, appended to out[], each only if the
 * shard owns every bucket its fence names. */
static void index_stmts(bs_buf_t *out, rows_t *per, const bs_index_t *idx, int n)
{
	for (int i = 0; i < n; i++) {
		bs_buf_t *b = &out[i];
		if (per[i].ndel) {
			bs__buf_puts(b, ";DELETE FROM ");
			bs__buf_ident(b, idx->name);
			bs__buf_puts(b, " WHERE @bs_o=@bs_want AND entity_id IN (");
			bs__buf_putn(b, per[i].del.ptr, per[i].del.len);
			bs__buf_puts(b, ")");
		}
		if (per[i].nins) {
			bs__buf_puts(b, ";BEGIN NOT ATOMIC IF @bs_o=@bs_want THEN ");
			bs__buf_index_insert(b, idx);
			bs__buf_puts(b, " VALUES ");
			bs__buf_putn(b, per[i].ins.ptr, per[i].ins.len);
			bs__buf_index_update(b, idx);
			bs__buf_puts(b, "; END IF; END");
		}
		bs__buf_reset(&per[i].del);
		bs__buf_reset(&per[i].ins);
		per[i].ndel = per[i].nins = 0;
	}
}

/* A target shard's statements (in) in their fence, the whole transaction
 * into out, its answer first. The fast form (every bucket simply owned)
 * logs nothing; the full one logs the entities of leaving buckets for
 * their moves, and is the only form for deletes of rows whose bucket is
 * unknown (logged for every leaving move). */
static void fence_wrap(bs_buf_t *out, const bs_buf_t *in, fence_t *f, bool fast)
{
	bs__buf_reset(out);
	fence_sql(out, f->bk, f->nbk, fast, false);
	bs__buf_putn(out, in->ptr, in->len);
	if (!fast) {
		log_pairs_sql(out, &f->pairs, 1);
		if (f->anywhere.len) { /* rows whose bucket is unknown: every leaving move */
			bs__buf_puts(out,
			             ";INSERT INTO bagstore_move_log (move_id, kind, id) SELECT DISTINCT o.move_id, 1,"
			             " l.id FROM bagstore_buckets o JOIN (");
			bs__buf_putn(out, f->anywhere.ptr, f->anywhere.len);
			bs__buf_puts(out,
			             ") l WHERE o.state='leaving' AND @bs_o=@bs_want ON DUPLICATE KEY UPDATE n=n+1");
		}
	}
	bs__buf_puts(out, ";COMMIT");
	if (f->pairs.oom || f->anywhere.oom || in->oom)
		out->oom = true;
}

/* Each target shard's statements for the entities written this round,
 * into in[] (unfenced). */
static void rows_sql(bs_buf_t *out, bulk_t *u, const size_t *round, size_t nround, rows_t *per, fence_t *fen)
{
	int n = u->st->n;
	for (int x = 0; x < u->cat->len; x++) {
		const bs_index_t *idx = &u->cat->items[x];
		if (idx->state == BS_INDEX_DISABLED)
			continue;
		for (size_t j = 0; j < nround; j++) {
			size_t k = round[j];
			if (!u->written[k])
				continue;
			const bs_value_t *old = u->old[k].type == BS_MAP ? &u->old[k] : NULL;
			entity_rows(per, fen, idx, &u->ids[k], old, u->found[k] && !old, &u->bags[k], u->st);
		}
		index_stmts(out, per, idx, n);
	}
}

/* Target shard i's statements in[i] in their fence (fast[i]: its fast
 * form) into out[i] and u->q[i]. */
static int rows_stmt(bulk_t *u, int i, bs_buf_t *out, const bs_buf_t *in, fence_t *fen, bool fast)
{
	int rc;
	fence_wrap(out, in, fen, fast);
	if ((rc = bs__buf_ok(out)))
		return rc;
	u->q[i].sql = out->ptr;
	u->q[i].len = out->len;
	return 0;
}

/* 0 while every batch's named lock is held (its connection never closed
 * since it was taken), else the error naming the shard: the repair loop
 * may settle that batch's intent now, and index rows sent after could
 * land stale with nothing to say so. Before rows are sent again. */
static int locks_kept(const bulk_t *u)
{
	const bs_store_t *st = u->st;
	for (int s = 0; s < st->n; s++)
		if (u->sb[s].done && u->sb[s].token[0] && !bs__lock_conn_kept(st, s, u->sb[s].lock_gen)) {
			char lost[256];
			return bs_error(BS_EUNREACHABLE, "%s; the rest left to the repair loop",
			                bs__lock_lost(lost, sizeof lost, st, s, "batch's lock"));
		}
	return 0;
}

/* Fault point: the first shard holding its batch's lock loses its
 * connection (and the lock with it) before the index rows, once. */
static void fault_lock_lost(bulk_t *u)
{
	static atomic_bool closed;
	for (int s = 0; s < u->st->n; s++)
		if (u->sb[s].done && u->sb[s].token[0]) {
			if (bs_fault(BS_FAULT_BULK_LOCK_LOST) && !atomic_exchange(&closed, true)) {
				fprintf(stderr, "bagstore: fault bulk_lock_lost: shard %s's connection closed\n",
				        u->st->shards[s].conf->name);
				bs__shard_close(u->st, s);
			}
			return;
		}
}

/* Send the round's index statements (in[]), each shard's in its fence,
 * every target shard at once: the fast form first, the full one for a
 * shard whose fast form refused (nothing applied there; not a retry);
 * deadlocked shards again (the statements are idempotent). Every shard
 * goes on until it applied, refused or failed, whatever the others do.
 * *refused: a shard did not own a bucket (the caller reads the map and
 * sends them all again). Returns the first failed shard's error. */
static int send_rows(bool *refused_any, bulk_t *u, bs_buf_t *out, const bs_buf_t *in, fence_t *fen)
{
	bs_store_t *st = u->st;
	int n = st->n, rc = 0;
	bool *fast = calloc((size_t)n, sizeof *fast);
	int *err = calloc((size_t)n, sizeof *err);
	char(*msg)[512] = calloc((size_t)n, sizeof *msg);
	*refused_any = false;
	if (!fast || !err || !msg) {
		rc = bs__oom();
		goto done;
	}
	for (int i = 0; i < n; i++) {
		u->rows_refused[i] = false;
		u->q[i].sql = NULL;
		fast[i] = !fen[i].anywhere.len;
		if (in[i].len && (rc = rows_stmt(u, i, &out[i], &in[i], &fen[i], fast[i])))
			goto done;
	}
	for (int tries = 1;;) {
		bs__shard_run(st, u->q); /* each shard's result is in q[i] */
		bool retry = false, pending = false;
		for (int i = 0; i < n; i++) {
			if (!u->q[i].sql)
				continue;
			bool no = !u->q[i].rc && refused(&u->q[i]); /* reads the answer's row */
			if (no && fast[i]) {
				/* nothing applied: the full form decides */
				bs__shard_stmts_clear(&u->q[i], 1);
				fast[i] = false;
				if (!rows_stmt(u, i, &out[i], &in[i], &fen[i], false)) {
					pending = true;
					continue;
				}
				u->q[i].sql = NULL;
				err[i] = bs_last_error_code();
				snprintf(msg[i], sizeof msg[i], "%s", bs_last_error());
				continue;
			}
			if (!u->q[i].rc) {
				err[i] = 0;
				u->rows_refused[i] = no;
				*refused_any |= no;
				u->q[i].sql = NULL;
				continue;
			}
			err[i] = u->q[i].rc;
			snprintf(msg[i], sizeof msg[i], "%s", u->q[i].msg);
			unsigned e = st->shards[i].last_errno;
			if (st->shards[i].conn)
				bs__shard_exec(st, i, "ROLLBACK", 8);
			st->shards[i].last_errno = e;
			if (u->q[i].rc == BS_ECONFLICT && retryable(st, i) && tries < TRIES)
				retry = true;
			else
				u->q[i].sql = NULL; /* failed for good */
		}
		bs__shard_stmts_clear(u->q, n);
		if (!retry && !pending)
			break;
		if ((rc = locks_kept(u))) { /* what is left: not sent */
			for (int i = 0; i < n; i++)
				u->q[i].sql = NULL;
			goto done;
		}
		if (retry)
			backoff(tries++);
	}
	for (int i = 0; i < n; i++)
		if (err[i]) {
			rc = bs_error(err[i], "%s", msg[i]);
			break;
		}
done:
	free(fast);
	free(err);
	free(msg);
	return rc;
}

/* Step 2: the index rows of every entity written this round, fenced per
 * target shard; a refusal (a bucket moved) reads the map again and sends
 * them all again, a few times. */
static int write_rows(bulk_t *u, const size_t *round, size_t nround)
{
	bs_store_t *st = u->st;
	int n = st->n, rc = 0;
	rows_t *per = calloc((size_t)n, sizeof *per);
	fence_t *fen = calloc((size_t)n, sizeof *fen);
	bs_buf_t *out = calloc((size_t)n, sizeof *out), *in = calloc((size_t)n, sizeof *in);
	if (!per || !out || !in || !fen) {
		rc = bs__oom();
		goto done;
	}
	fault_lock_lost(u);
	for (int hop = 0;; hop++) {
		bool refused_any = false;
		if ((rc = locks_kept(u)))
			break;
		for (int i = 0; i < n; i++) {
			bs__buf_reset(&in[i]);
			fen[i].nbk = 0;
			bs__buf_reset(&fen[i].pairs);
			bs__buf_reset(&fen[i].anywhere);
		}
		rows_sql(in, u, round, nround, per, fen);
		if ((rc = send_rows(&refused_any, u, out, in, fen)) || !refused_any)
			break;
		if (hop == 8) {
			rc = bs_error(BS_EUNREACHABLE, "the index rows' buckets kept moving");
			break;
		}
		/* where the refused buckets went, from the shards that refused */
		for (int i = 0; i < n && !rc; i++)
			if (u->rows_refused[i] && fen[i].nbk)
				rc = bs__map_learn(st, i, fen[i].bk, (int)fen[i].nbk);
		if (rc)
			break;
		hop_wait(hop);
	}
	if (rc) {
		char msg[1024];
		snprintf(msg, sizeof msg, "%s", bs_last_error());
		rc = bs_error(rc,
		              "entities are written, but some of their index rows are not: %s (readers "
		              "filter stale rows; the cleaner repairs them)",
		              msg);
	}
done:
	for (int i = 0; per && i < n; i++) {
		bs__buf_free(&per[i].del);
		bs__buf_free(&per[i].ins);
	}
	for (int i = 0; fen && i < n; i++) {
		free(fen[i].bk);
		bs__buf_free(&fen[i].pairs);
		bs__buf_free(&fen[i].anywhere);
	}
	for (int i = 0; out && i < n; i++)
		bs__buf_free(&out[i]);
	for (int i = 0; in && i < n; i++)
		bs__buf_free(&in[i]);
	free(in);
	free(per);
	free(fen);
	free(out);
	return rc;
}

/* Order of bag indexes by id, then position (for finding repeats). */
static int by_id_then_pos(const void *a, const void *b, void *ids)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int c = memcmp(((const bs_id_t *)ids)[x].b, ((const bs_id_t *)ids)[y].b, 16);
	return c ? c : (x > y) - (x < y);
}

/* "DELETE ...;" of shard sb's batch intent, taking effect only if every
 * entity of the batch is still the version written (BS__BATCH_SQL read
 * again, beside the same text made from the versions this writer knows it
 * wrote: a newer write, or a delete, changes it) and the shard still owns
 * every bucket of them (after a cut-over its copy says nothing of the new
 * owner's writes). Its reads take shared locks; a writer holding one
 * makes it give up after a second, the intent left to the repair loop. */
static void removal_sql(bs_buf_t *b, const bulk_t *u, const shard_batch_t *sb)
{
	int *buckets = malloc(sb->len * sizeof *buckets);
	size_t *order = malloc(sb->len * sizeof *order);
	if (!buckets || !order) {
		free(buckets);
		free(order);
		b->oom = true; /* nothing is sent: the intent stays */
		return;
	}
	for (size_t j = 0; j < sb->len; j++) {
		buckets[j] = bs_route_id(&u->ids[sb->idx[j]], u->st->map.buckets);
		order[j] = sb->idx[j];
	}
	size_t m = uniq_buckets(buckets, sb->len);
	/* the bags in id order, as GROUP_CONCAT's ORDER BY id (once in a round) */
	qsort_r(order, sb->len, sizeof *order, by_id_then_pos, (void *)u->ids);
	/* room for the text of every entity: one cut short would never equal
	 * the writer's, and the intent could not go */
	bs__buf_puts(b, "SET STATEMENT innodb_lock_wait_timeout=1,group_concat_max_len=");
	bs__buf_uint(b, (unsigned long long)sb->len * BS__BATCH_BYTES + 1024);
	bs__buf_puts(b, " FOR DELETE FROM bagstore_batch_intents WHERE token=");
	bs__buf_hex(b, sb->token, strlen(sb->token));
	bs__buf_puts(b, " AND (SELECT " BS__BATCH_SQL " FROM entities WHERE id IN (");
	id_lits(b, u, sb);
	bs__buf_puts(b, "))='");
	for (size_t r = 0; r < sb->len; r++) {
		bs__buf_puts(b, r ? "," : "");
		bs__buf_hexu(b, u->ids[order[r]].b, 16);
		bs__buf_puts(b, " ");
		bs__buf_unix_us(b, u->ver[order[r]]);
	}
	bs__buf_puts(b,
	             "' AND (SELECT COUNT(*) FROM bagstore_buckets WHERE state IN " BS__OWNING_SQL " AND bucket IN ");
	bucket_list(b, buckets, m);
	bs__buf_puts(b, ")=");
	bs__buf_uint(b, (unsigned)m);
	bs__buf_puts(b, ";");
	free(buckets);
	free(order);
}

/* Step 3, sent without waiting: each shard's batch intent goes if its
 * entities are all still the versions written (unless the index rows
 * failed: then it stays for the repair loop), and the lock goes. */
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
		bs_buf_t b = { 0 };
		if (!sb->done || !sb->token[0])
			continue;
		if (rows_ok)
			removal_sql(&b, u, sb);
		bs__buf_puts(&b, "DO RELEASE_LOCK(");
		bs__buf_hex(&b, sb->token, strlen(sb->token));
		bs__buf_puts(&b, ")");
		/* either way a failure leaves the intent to the repair loop */
		if (bs__buf_ok(&b))
			bs__lock_release(st, s, sb->token); /* no memory: no removal, the lock freed */
		else
			(void)bs__shard_send(st, s, b.ptr, b.len, sb->token);
		if (code)
			bs_error(code, "%s", msg);
		else
			bs_error_clear();
		bs__buf_free(&b);
	}
}

/* ------------------------------------------------------------ the call */

/* For each bag, which occurrence of its id it is (0 first, 1 second...),
 * by sorting positions by id: a round takes one occurrence of each id. */
static int occurrences(unsigned *occ, const bs_id_t *ids, size_t n)
{
	size_t *order = malloc((n ? n : 1) * sizeof *order);
	if (!order)
		return bs__oom();
	for (size_t k = 0; k < n; k++)
		order[k] = k;
	qsort_r(order, n, sizeof *order, by_id_then_pos, (void *)ids);
	for (size_t k = 0; k < n; k++)
		occ[order[k]] = k && !memcmp(ids[order[k]].b, ids[order[k - 1]].b, 16) ? occ[order[k - 1]] + 1 : 0;
	free(order);
	return 0;
}

/* The entities list[n] grouped by the shard owning their bucket per the
 * map, in input order, each shard with a new token. */
static int plan_list(bulk_t *u, const size_t *list, size_t n)
{
	bs_store_t *st = u->st;
	int rc = 0;
	for (int s = 0; s < st->n; s++) {
		u->sb[s].len = 0;
		u->sb[s].done = u->sb[s].refused = false;
		u->sb[s].token[0] = '\0';
	}
	for (size_t j = 0; j < n && !rc; j++) {
		int s = bs__map_shard(st, bs_route_id(&u->ids[list[j]], st->map.buckets));
		rc = s < 0 ? bs_error(BS_ECONFIG, "an entity's bucket has no configured shard")
		           : push_idx(&u->sb[s], list[j]);
	}
	for (int s = 0; s < st->n; s++)
		if (u->maintained && u->sb[s].len)
			bs__token(u->sb[s].token, "w");
	return rc;
}

/* Round r: the r-th occurrence of every id, grouped by shard in input
 * order. *nround gets how many. */
static int plan_round(bulk_t *u, size_t n, const unsigned *occ, unsigned r, size_t *round, size_t *nround)
{
	*nround = 0;
	for (size_t k = 0; k < n; k++)
		if (occ[k] == r)
			round[(*nround)++] = k;
	return plan_list(u, round, *nround);
}

/* The shard an entity of this round went to (its batch). */
static int batch_of(const bulk_t *u, size_t k)
{
	for (int s = 0; s < u->st->n; s++)
		for (size_t j = 0; j < u->sb[s].len; j++)
			if (u->sb[s].idx[j] == k)
				return s;
	return -1;
}

/* Hops a round's refused entities get once a shard has failed: each may
 * wait for it again (a map read asks every shard). */
#define HOPS_AFTER_FAILURE 2

/* One round's entities through steps 1 to 3, their shards' refusals sent
 * again (the map read again) a few times, whatever the other shards did:
 * a shard that failed wrote none of its entities (but for a connection
 * lost while its statement ran: that may have committed, and is reported
 * as failed, as a single put's is), index rows that failed
 * leave their intents to the repair loop, and the refused entities still
 * go where their buckets are; the first failure is the round's answer
 * after that. */
static int write_round(bulk_t *u, size_t *round, size_t nround)
{
	bs_store_t *st = u->st;
	int rc = 0, failed = 0;
	char failed_msg[1024] = "";
	for (int hop = 0, left = 8; nround; hop++) {
		/* a shard that failed wrote nothing of this round; the others
		 * committed: their index rows are written all the same */
		int erc = write_entities(u);
		if (erc && !failed) {
			failed = erc;
			snprintf(failed_msg, sizeof failed_msg, "%s", bs_last_error());
		}
		size_t again = 0;
		for (size_t j = 0; j < nround; j++) {
			int s = batch_of(u, round[j]);
			u->written[round[j]] = s >= 0 && u->sb[s].done;
			if (s >= 0 && u->sb[s].refused)
				again++;
		}
		for (size_t j = 0; j < nround; j++)
			if (u->written[round[j]])
				bs__fault_after_entity(&u->ids[round[j]]);
		int rrc = u->maintained ? write_rows(u, round, nround) : 0;
		settle(u, rrc == 0);
		if (rrc && !failed) {
			failed = rrc;
			snprintf(failed_msg, sizeof failed_msg, "%s", bs_last_error());
		}
		if (!again)
			break;
		if (failed && left > HOPS_AFTER_FAILURE)
			left = HOPS_AFTER_FAILURE;
		if (!left--) {
			rc = bs_error(BS_EUNREACHABLE, "%zu entities' buckets kept moving: not written", again);
			break;
		}
		size_t m = 0; /* the refused ones, again */
		for (size_t j = 0; j < nround; j++) {
			int s = batch_of(u, round[j]);
			if (s >= 0 && u->sb[s].refused)
				round[m++] = round[j];
		}
		nround = m;
		/* where the refused entities' buckets went, from their shards */
		for (int s = 0; s < st->n && !rc; s++)
			if (u->sb[s].refused) {
				int *bk = malloc((u->sb[s].len ? u->sb[s].len : 1) * sizeof *bk);
				if (!bk) {
					rc = bs__oom();
					break;
				}
				for (size_t j = 0; j < u->sb[s].len; j++)
					bk[j] = bs_route_id(&u->ids[u->sb[s].idx[j]], st->map.buckets);
				rc = bs__map_learn(st, s, bk, (int)u->sb[s].len);
				free(bk);
			}
		if (rc)
			break;
		hop_wait(hop);
		if ((rc = plan_list(u, round, nround)))
			break;
	}
	if (!failed)
		return rc;
	/* the first failure first, and what came of the refused ones after */
	if (rc) {
		char then[512];
		snprintf(then, sizeof then, "%s", bs_last_error());
		return bs_error(failed, "%.500s; and then: %s", failed_msg, then);
	}
	return bs_error(failed, "%s", failed_msg);
}

/* Encoding (MessagePack, then deflate) is most of a bulk put's own CPU:
 * a batch of at least ENCODE_SPLIT bags is encoded by two threads, each
 * its half (bodies are independent; body.c keeps its deflate state per
 * thread). */
#define ENCODE_SPLIT 64

/* A batch's bags encoded (bagstore.h's bs_encoded_t): each one's id and
 * body, up to the first one refused (ok: how many are; rc and msg: why
 * the next was refused, which is the write's answer). */
struct bs_encoded {
	const bs_value_t *bags;
	bs_id_t *ids;
	bs_bytes_t *bodies;
	size_t n, ok;
	int rc;
	char msg[1100];
};
typedef struct bs_encoded encoded_t;

typedef struct {
	const encoded_t *e;
	size_t from, to;
	size_t bad; /* the first bag refused (to: none) */
	int rc;
	char msg[1024];
} encode_part_t;

static void *encode_part(void *arg)
{
	encode_part_t *p = arg;
	const encoded_t *e = p->e;
	p->bad = p->to;
	p->rc = 0;
	for (size_t k = p->from; k < p->to; k++)
		if ((p->rc = bs_bag_id(&e->ids[k], &e->bags[k])) ||
		    (p->rc = bs_body_encode(&e->bodies[k], &e->bags[k]))) {
			p->bad = k;
			snprintf(p->msg, sizeof p->msg, "%s", bs_last_error());
			break;
		}
	return NULL;
}

/* Encode e's bags into its ids and bodies (allocated: n of each); the
 * first one refused stops it there. */
static void encode_all(encoded_t *e)
{
	encode_part_t part[2] = { { e, 0, e->n, 0, 0, "" }, { e, e->n, e->n, 0, 0, "" } };
	pthread_t t;
	bool two = false;
	e->ok = 0;
	e->rc = 0;
	e->msg[0] = '\0';
	if (!e->bodies && !(e->bodies = calloc(e->n ? e->n : 1, sizeof *e->bodies))) {
		e->rc = BS_ENOMEM;
		snprintf(e->msg, sizeof e->msg, "out of memory");
		return;
	}
	if (e->n >= ENCODE_SPLIT) {
		part[0].to = part[1].from = e->n / 2;
		two = pthread_create(&t, NULL, encode_part, &part[1]) == 0;
		if (!two)
			part[0].to = e->n; /* no thread: all of it here */
	}
	encode_part(&part[0]);
	if (two)
		pthread_join(t, NULL);
	const encode_part_t *p = part[0].rc || !two ? &part[0] : &part[1];
	e->ok = p->rc ? p->bad : e->n;
	if (p->rc) {
		e->rc = p->rc;
		snprintf(e->msg, sizeof e->msg, "entity %zu of the batch: %s", p->bad + 1, p->msg);
	}
}

void bs_encoded_free(bs_encoded_t *e)
{
	if (!e)
		return;
	for (size_t k = 0; e->bodies && k < e->n; k++)
		bs_bytes_free(&e->bodies[k]);
	free(e->bodies);
	free(e);
}

int bs_encode_many(bs_encoded_t **out, const bs_value_t *bags, size_t n, bs_id_t *ids)
{
	encoded_t *e = calloc(1, sizeof *e);
	*out = NULL;
	if (!e)
		return bs__oom();
	*e = (encoded_t){ .bags = bags, .ids = ids, .n = n };
	encode_all(e);
	if (e->rc == BS_ENOMEM && !e->bodies) {
		free(e);
		return bs__oom();
	}
	*out = e;
	return 0;
}

static void bulk_free(bulk_t *u, size_t n)
{
	for (size_t k = 0; u->old && k < n; k++)
		bs_value_clear(&u->old[k]);
	for (int s = 0; u->sb && s < u->st->n; s++) {
		free(u->sb[s].idx);
		free(u->sb[s].ts);
		bs__buf_free(&u->sb[s].sql);
		bs__buf_free(&u->sb[s].sql2);
	}
	free(u->old);
	free(u->found);
	free(u->ver);
	free(u->sb);
	free(u->q);
	free(u->q2);
	free(u->rows_refused);
}

/* One batch, its bags encoded (e): the ones before the first refused
 * are written, their shards at once, in rounds of distinct ids. */
static int put_batch(bs_store_t *st, const encoded_t *e, bool *written)
{
	size_t n = e->n, ok = e->ok;
	bulk_t u = { .st = st, .bags = e->bags, .ids = e->ids, .bodies = e->bodies, .written = written };
	size_t *round = NULL, nround;
	unsigned *occ = NULL;
	int rc;

	u.old = calloc(n, sizeof *u.old);
	u.found = calloc(n, sizeof *u.found);
	u.ver = calloc(n, sizeof *u.ver);
	u.sb = calloc((size_t)st->n, sizeof *u.sb);
	u.q = calloc((size_t)st->n, sizeof *u.q);
	u.q2 = calloc((size_t)st->n, sizeof *u.q2);
	u.rows_refused = calloc((size_t)st->n, sizeof *u.rows_refused);
	round = calloc(n, sizeof *round);
	occ = calloc(n, sizeof *occ);
	if (!u.old || !u.found || !u.ver || !u.sb || !u.q || !u.q2 || !u.rows_refused || !round || !occ) {
		rc = bs__oom();
		goto done;
	}
	const bs_index_list_t *cat;
	if ((rc = bs__catalog_cached(&cat, st)))
		goto done;
	u.cat = cat;
	for (int k = 0; k < cat->len; k++)
		u.maintained |= cat->items[k].state != BS_INDEX_DISABLED;
	if ((rc = occurrences(occ, e->ids, ok)))
		goto done;
	if ((rc = bs__map_need(st)))
		goto done;
	for (unsigned r = 0;; r++) {
		if ((rc = plan_round(&u, ok, occ, r, round, &nround)) || !nround)
			break;
		if ((rc = write_round(&u, round, nround)))
			break;
	}
	/* what comes before a bag refused on input is written; it and the
	 * rest are not */
	if (!rc && e->rc)
		rc = bs_error(e->rc, "%s", e->msg);
done:
	bulk_free(&u, n);
	free(round);
	free(occ);
	return rc;
}

int bs_put_encoded(bs_store_t *st, const bs_encoded_t *e, bool *written)
{
	if (!e)
		return bs_error(BS_EINVAL, "no encoded batch");
	if (written)
		memset(written, 0, e->n * sizeof *written);
	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing to write");
	if (!e->n)
		return 0;
	bool *w = written ? written : calloc(e->n, sizeof *w);
	if (!w)
		return bs__oom();
	int rc = put_batch(st, e, w);
	if (!written)
		free(w);
	return rc;
}

int bs_put_many(bs_store_t *st, const bs_value_t *bags, size_t n, bs_id_t *ids, bool *written)
{
	bs_encoded_t *e;
	if (written)
		memset(written, 0, n * sizeof *written);
	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing to write");
	if (!n)
		return 0;
	int rc = bs_encode_many(&e, bags, n, ids);
	if (!rc)
		rc = bs_put_encoded(st, e, written);
	bs_encoded_free(e);
	return rc;
}

/*
 * repair.c - the repair loop: per shard, entities updated
 * since the watermark (minus cleaner.repair_overlap), newest first, get
 * their index rows made right on every shard (drift.c); index rows whose
 * entity is gone are swept a bounded batch per pass; the watermark and lag
 * are recorded (lag.c). The daemon's loop that runs the passes is
 * daemon.c's.
 */
#include "cleaner.h"

#include <mysqld_error.h>

#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define REPAIR_BATCH 1000
#define SWEEP_BATCH 500

static void ts_lit(bs_buf_t *b, int64_t us)
{
	if (us < 0)
		us = 0;
	bs__buf_from_unixtime(b, us);
}


/* Rounds of bs__drift_settle before it gives an entity that keeps
 * changing to the repair loop (an intent) instead. */
#define SETTLE_ROUNDS 16

/* Keep of ids[n] (versions upd[], -1: gone) those whose current version
 * (cur) is not upd: a writer changed, deleted or recreated them (upd then
 * their new version, -1 when gone). Their number. */
static size_t keep_changed(bs_id_t *ids, int64_t *upd, size_t n, const ebatch_t *cur)
{
	size_t m = 0;
	for (size_t k = 0; k < n; k++) {
		long found = bs__ids_find(cur->ids, cur->len, ids[k].b);
		if (found >= 0 ? cur->updated[found] == upd[k] : upd[k] < 0)
			continue; /* the same version, or still gone */
		ids[m] = ids[k];
		upd[m] = found >= 0 ? cur->updated[found] : -1;
		m++;
	}
	return m;
}

/* Fix idx[nidx]'s rows of ids[n] from their current bodies (taken out of
 * cur; an entity cur lacks should have no row). */
static int fix_current(drift_counts_t *out, bs_store_t *st, const bs_index_t *idx, int nidx, const bs_id_t *ids,
                       size_t n, ebatch_t *cur)
{
	bs_value_t *bags = calloc(n, sizeof *bags);
	int rc = 0;
	BS_ERR_ALLOC(bags);
	for (size_t k = 0; k < n; k++) {
		long j = bs__ids_find(cur->ids, cur->len, ids[k].b);
		bs_value_nil(&bags[k]);
		if (j >= 0) {
			bags[k] = cur->bags[j];
			bs_value_nil(&cur->bags[j]); /* moved */
		}
	}
	for (int x = 0; x < nidx && !rc; x++)
		rc = bs__drift_check(&out[x], st, &idx[x], ids, bags, n, true);
	for (size_t k = 0; k < n; k++)
		bs_value_clear(&bags[k]);
	free(bags);
	return rc;
}

/* Entities whose rows the cleaner could not settle (they kept changing):
 * an intent each on its shard, under a token nobody locks, so that the
 * repair loop makes their rows right later (see entity.c's intents). */
static int leave_intents(bs_store_t *st, const bs_id_t *ids, size_t n)
{
	bs_buf_t *per = calloc((size_t)st->n, sizeof *per);
	char token[48];
	int rc = 0;
	BS_ERR_ALLOC(per);
	bs__token(token, "r");
	for (size_t k = 0; k < n && !rc; k++) {
		int shard, bucket;
		if ((rc = bs__route_entity(&shard, &bucket, st, &ids[k])))
			break;
		bs__buf_puts(&per[shard],
		             per[shard].len ? ",(" : "INSERT IGNORE INTO bagstore_intents (token, entity_id) VALUES (");
		bs__buf_hex(&per[shard], token, strlen(token));
		bs__buf_puts(&per[shard], ",");
		bs__buf_hex(&per[shard], ids[k].b, 16);
		bs__buf_puts(&per[shard], ")");
	}
	for (int i = 0; i < st->n && !rc; i++)
		if (per[i].len && !(rc = bs__buf_ok(&per[i])) && !(rc = bs__shard_check(st, i)))
			rc = bs__shard_exec(st, i, per[i].ptr, per[i].len);
	for (int i = 0; i < st->n; i++)
		bs__buf_free(&per[i]);
	free(per);
	return rc;
}

/* After fixing rows for the entities of eb (read from shard), look at
 * them again: any a writer changed or deleted meanwhile is done again from
 * its new body, and looked at again, until a read finds none changed since
 * the body its last fix was made from. That read is what makes a fix
 * safe: a writer writes its entity first, then its rows, so a change the
 * read does not see has its index rows written after the fix, over it;
 * a change it sees may have had its rows written before the fix, under
 * it (undone: the writer's row deleted, the old body's written), and is
 * fixed again. An entity still changing after SETTLE_ROUNDS fixes gets an
 * intent instead, for the repair loop (issue 11: with three rounds and no
 * read after the last fix, a writer racing the last one lost its row). */
int bs__drift_settle(drift_counts_t *out, bs_store_t *st, int shard, const bs_index_t *idx, int nidx,
                     const ebatch_t *eb)
{
	ebatch_t again = { 0 };
	bs_id_t *ids = NULL;
	int64_t *upd = NULL;
	size_t n = eb->len;
	int rc = 0;
	if (!n)
		return 0;
	ids = malloc(n * sizeof *ids);
	upd = malloc(n * sizeof *upd);
	if (!ids || !upd) {
		rc = bs__oom();
		goto done;
	}
	memcpy(ids, eb->ids, n * sizeof *ids);
	memcpy(upd, eb->updated, n * sizeof *upd);
	for (int round = 0; n; round++) {
		/* from their owners: one may have moved since the batch was read */
		if ((rc = bs__entities_current(&again, st, ids, n, false)))
			goto done;
		if (!(n = keep_changed(ids, upd, n, &again)))
			break;
		if (round == SETTLE_ROUNDS) {
			rc = leave_intents(st, ids, n);
			break;
		}
		if ((rc = fix_current(out, st, idx, nidx, ids, n, &again)))
			goto done;
	}
done:
	bs__ebatch_free(&again);
	free(ids);
	free(upd);
	return rc;
}

int bs__drift_fix_settle(drift_counts_t *d, drift_counts_t *s, bs_store_t *st, int shard, const bs_index_t *idx,
                         int nidx, const ebatch_t *eb)
{
	char msg[1024] = "";
	int rc = 0, src = 0;
	if (!eb->len)
		return 0;
	/* the scope's token: the entities its fixes change get intents under
	 * it first (drift.c's fix_intents), removed once settled */
	bs__token(st->fix_token, "f");
	for (int k = 0; k < nidx && !rc; k++)
		rc = bs__drift_check(&d[k], st, &idx[k], eb->ids, eb->bags, eb->len, true);
	bool fixed = false; /* a fix was sent (its intents first) */
	for (int i = 0; i < st->n; i++)
		fixed |= st->shards[i].fix_held;
	if (rc) {
		snprintf(msg, sizeof msg, "%s", bs_last_error());
		bs_error_clear();
	}
	/* after a failed check, only a fix sent needs its read (a check that
	 * failed before any, a shard down, costs no settle) */
	for (int t = 0; t < 4 && (!rc || fixed); t++) {
		if (t)
			bs__cleaner_sleep(0.05 * (1 << t), NULL);
		if (!(src = bs__drift_settle(s, st, shard, idx, nidx, eb)))
			break;
		if (!rc) {
			rc = src;
			snprintf(msg, sizeof msg, "%s", bs_last_error());
		}
		bs_error_clear();
	}
	/* the fixes' intents go once the check and the settle both succeeded;
	 * otherwise they stay (lock released) for the repair loop, which redoes
	 * exactly the entities fixed: one whose fix was partly applied and
	 * that no writer changed is not the settle's to see */
	char name[64];
	for (int i = 0; i < st->n; i++) {
		if (!st->shards[i].fix_held)
			continue;
		st->shards[i].fix_held = false;
		bs__fix_name(name, st, i);
		if (!rc && !src && st->shards[i].conn) {
			bs_buf_t b = { 0 };
			bs__buf_puts(&b, "DELETE FROM bagstore_intents WHERE token=");
			bs__buf_hex(&b, name, strlen(name));
			if (!bs__buf_ok(&b) && bs__shard_exec(st, i, b.ptr, b.len))
				bs_error_clear(); /* left: the repair loop settles them */
			bs__buf_free(&b);
		}
		bs__lock_release(st, i, name);
	}
	st->fix_token[0] = '\0';
	return rc ? bs_error(rc, "%s", msg) : 0;
}

/* Entities of shard updated in [since, until] (until 0: no bound), newest
 * first, made right in each of idx[nidx]; per[nidx] (may be NULL) gets
 * each index's rows inserted and deleted; only those in the buckets of
 * `only` (per bucket, 1: in; NULL: all). */
static int repair_shard_in(int64_t *rows, int64_t *repaired, drift_counts_t *per, bs_store_t *st, int shard,
                           const bs_index_t *idx, int nidx, int64_t since_us, int64_t until_us, const uint8_t *only);

static int repair_shard(int64_t *rows, int64_t *repaired, drift_counts_t *per, bs_store_t *st, int shard,
                        const bs_index_t *idx, int nidx, int64_t since_us, int64_t until_us)
{
	return repair_shard_in(rows, repaired, per, st, shard, idx, nidx, since_us, until_us, NULL);
}

/* A bucket of bs__repair_moved's only[]. */
static bool marked(uint8_t v)
{
	return v != 0;
}

int bs__repair_moved(int64_t *rows, bs_store_t *st, int shard, int64_t since_us, const uint8_t *only)
{
	bs_index_list_t l = { 0 };
	int64_t r = 0, fixed = 0;
	int rc, m = 0;
	if ((rc = bs_index_list(&l, st)))
		return rc;
	for (int k = 0; k < l.len; k++)
		if (l.items[k].state != BS_INDEX_DISABLED)
			l.items[m++] = l.items[k];
	rc = repair_shard_in(&r, &fixed, NULL, st, shard, l.items, m, since_us, 0, only);
	if (rows)
		*rows = r;
	bs_index_list_free(&l);
	return rc;
}

/* Test fault point: the first pass with more than one batch stops after
 * its first (SIGSTOP, once), so a test can write behind its cursor. */
static void fault_between_batches(int shard)
{
	static atomic_bool done;
	if (bs_fault(BS_FAULT_PAUSE_REPAIR_BATCH) && !atomic_exchange(&done, true)) {
		fprintf(stderr,
		        "bagstore: fault pause_repair_batch: a repair pass on shard %d stopped after its first "
		        "batch (kill -CONT %d resumes)\n",
		        shard, (int)getpid());
		raise(SIGSTOP);
	}
}

static int repair_shard_in(int64_t *rows, int64_t *repaired, drift_counts_t *per, bs_store_t *st, int shard,
                           const bs_index_t *idx, int nidx, int64_t since_us, int64_t until_us, const uint8_t *only)
{
	drift_counts_t *d = calloc((size_t)nidx + 1, sizeof *d);
	ebatch_t eb = { 0 };
	bs_buf_t b = { 0 };
	int64_t cu = 0, ca = 0;
	bool first = true;
	int rc = 0;
	BS_ERR_ALLOC(d);
	if (nidx == 0)
		goto done;
	for (;;) {
		bs__buf_reset(&b);
		bs__buf_puts(&b, "SELECT added_id, id, UNIX_TIMESTAMP(updated), body, " BS__OV_SQL
		                 " FROM entities WHERE updated>=");
		ts_lit(&b, since_us);
		if (until_us) {
			bs__buf_puts(&b, " AND updated<=");
			ts_lit(&b, until_us);
		}
		if (!first) {
			bs__buf_puts(&b, " AND updated<=");
			ts_lit(&b, cu);
			bs__buf_puts(&b, " AND (updated<");
			ts_lit(&b, cu);
			bs__buf_printf(&b, " OR added_id<%lld)", (long long)ca);
		}
		bs__buf_printf(&b, " ORDER BY updated DESC, added_id DESC LIMIT %d", REPAIR_BATCH);
		size_t got;
		/* the shard's own entities: not the copies it holds for a move */
		if ((rc = bs__ebatch_scan(&eb, &got, st, shard, &b)) || got == 0)
			goto done;
		if (only)
			bs__ebatch_keep(&eb, st, only, marked);
		if ((rc = bs__drift_fix_settle(d, d, st, shard, idx, nidx, &eb)))
			goto done;
		*rows += (int64_t)eb.len;
		first = false;
		cu = eb.last_updated;
		ca = eb.last_added;
		if (got < REPAIR_BATCH)
			break;
		fault_between_batches(shard);
	}
done:
	/* what was fixed counts, also when a later batch failed */
	for (int k = 0; k < nidx; k++) {
		*repaired += d[k].repaired;
		if (per) {
			per[k].inserted += d[k].inserted;
			per[k].deleted += d[k].deleted;
		}
	}
	free(d);
	bs__ebatch_free(&eb);
	bs__buf_free(&b);
	return rc;
}

#define INTENT_BATCH 500

/* Fix idx[nidx]'s rows for n entities (ids[], bags[]; eb as read from
 * shard), settle them, and count what was fixed, per index, into per[] and
 * *repaired (failure or not). */
static int fix_counted(int64_t *repaired, drift_counts_t *per, bs_store_t *st, int shard, const bs_index_t *idx,
                       int nidx, const bs_id_t *ids, const bs_value_t *bags, size_t n, const ebatch_t *eb)
{
	drift_counts_t *d = calloc((size_t)nidx + 1, sizeof *d);
	int rc = 0;
	BS_ERR_ALLOC(d);
	for (int k = 0; k < nidx && !rc; k++)
		rc = bs__drift_check(&d[k], st, &idx[k], ids, bags, n, true);
	if (!rc)
		rc = bs__drift_settle(d, st, shard, idx, nidx, eb);
	for (int k = 0; k < nidx; k++) {
		*repaired += d[k].repaired;
		per[k].inserted += d[k].inserted;
		per[k].deleted += d[k].deleted;
	}
	free(d);
	return rc;
}

/* The ids of a part of a bulk put's batch intent (16 bytes each; a tail
 * shorter than an id, which bulk.c never writes, is no id), added to
 * *ids. */
static int batch_ids(bs_id_t **ids, size_t *n, size_t *cap, const char *rec, size_t len)
{
	for (size_t at = 0; at + 16 <= len; at += 16) {
		int rc = BS_ARRAY_GROW(*ids, *n, *cap, 64);
		if (rc)
			return rc;
		memcpy((*ids)[(*n)++].b, rec + at, 16);
	}
	return 0;
}

/* Writes whose intent stayed (entity.c's in bagstore_intents, a row per
 * entity; bulk.c's in bagstore_batch_intents, a part of a batch's ids per
 * row, when batches): the writer is done or gone (its named lock is free)
 * and another writer changed an entity meanwhile, or it died before its
 * last step. Their entities' rows are made right from the current bodies
 * whatever their age, then the intents removed; INTENT_BATCH entities a
 * pass, give or take a part. */
static int settle_intents(int64_t *rows, int64_t *repaired, drift_counts_t *per, bs_store_t *st, int shard,
                          const bs_index_t *idx, int nidx, bool batches)
{
	bs_buf_t b = { 0 }, tokens = { 0 };
	MYSQL_RES *res = NULL;
	ebatch_t eb = { 0 };
	bs_id_t *ids = NULL;
	bs_value_t *bags = NULL;
	size_t n = 0, cap = 0, ntok = 0;
	int rc;
	if (batches) /* the oldest parts up to INTENT_BATCH ids (one at least), and no more fetched */
		bs__buf_printf(&b,
		               "SELECT token, part, ids FROM (SELECT token, part, ids, created, SUM(LENGTH(ids)) OVER"
		               " (ORDER BY created, token, part) upto FROM bagstore_batch_intents WHERE"
		               " created<NOW(6)-INTERVAL 1 SECOND AND IS_FREE_LOCK(token)) p WHERE upto-LENGTH(ids)<%d"
		               " ORDER BY created, token, part",
		               INTENT_BATCH * 16);
	else
		bs__buf_printf(&b,
		               "SELECT token, entity_id FROM bagstore_intents WHERE created<NOW(6)-INTERVAL 1 SECOND"
		               " AND IS_FREE_LOCK(token) ORDER BY created LIMIT %d",
		               INTENT_BATCH);
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, shard, b.ptr, b.len)))
		goto done;
	if (!mysql_num_rows(res))
		goto done;
	MYSQL_ROW row;
	while (!rc && n < INTENT_BATCH && (row = mysql_fetch_row(res))) {
		unsigned long *lens = mysql_fetch_lengths(res);
		if (!row[1] || (batches ? !row[2] : lens[1] != 16))
			continue;
		/* (token, entity) or (token, part) */
		bs__buf_puts(&tokens, ntok++ ? ",(" : "(");
		bs__buf_hex(&tokens, row[0], lens[0]);
		bs__buf_puts(&tokens, ",");
		if (batches) {
			bs__buf_uint(&tokens, strtoull(row[1], NULL, 10));
			rc = batch_ids(&ids, &n, &cap, row[2], lens[2]);
		} else {
			bs__buf_hex(&tokens, row[1], 16);
			if (!(rc = BS_ARRAY_GROW(ids, n, cap, 64)))
				memcpy(ids[n++].b, row[1], 16);
		}
		bs__buf_puts(&tokens, ")");
	}
	if (rc || !ntok)
		goto done;
	if (n && !(bags = calloc(n, sizeof *bags))) {
		rc = bs__oom();
		goto done;
	}
	/* the current bodies (from their owners: the entity may have moved to
	 * another shard since its write), in id order; a missing one should
	 * have no row */
	if (n && (rc = bs__entities_current(&eb, st, ids, n, false)))
		goto done;
	qsort(ids, n, sizeof *ids, bs__id_cmp);
	size_t u = 0;
	for (size_t k = 0; k < n; k++)
		if (!u || memcmp(ids[u - 1].b, ids[k].b, 16))
			ids[u++] = ids[k];
	n = u;
	for (size_t k = 0; k < n; k++) {
		long j = bs__ids_find(eb.ids, eb.len, ids[k].b);
		bs_value_nil(&bags[k]);
		if (j >= 0)
			bags[k] = eb.bags[j]; /* borrowed: eb keeps it */
	}
	if ((rc = fix_counted(repaired, per, st, shard, idx, nidx, ids, bags, n, &eb)))
		goto done;
	*rows += (int64_t)n;
	bs__buf_reset(&b);
	bs__buf_puts(&b, batches ? "DELETE FROM bagstore_batch_intents WHERE (token, part) IN ("
	                         : "DELETE FROM bagstore_intents WHERE (token, entity_id) IN (");
	bs__buf_putn(&b, tokens.ptr, tokens.len);
	/* a writer that took its lock again meanwhile (its write tried again
	 * on a new connection, its intent inserted again) keeps its intent */
	bs__buf_puts(&b, ") AND IS_FREE_LOCK(token)");
	if (!(rc = bs__buf_ok(&b)) && !(rc = bs__buf_ok(&tokens)))
		rc = bs__shard_exec(st, shard, b.ptr, b.len);
done:
	if (res)
		mysql_free_result(res);
	bs__ebatch_free(&eb);
	free(ids);
	free(bags);
	bs__buf_free(&b);
	bs__buf_free(&tokens);
	return rc;
}

int bs__repair_since(int64_t *rows, bs_store_t *st, const bs_index_t *idx, int64_t since_us)
{
	bs_index_list_t l = { 0 };
	int64_t r = 0, fixed = 0;
	int rc = 0;
	if (!idx) {
		if ((rc = bs_index_list(&l, st)))
			return rc;
		/* maintained ones first, in place */
		int m = 0;
		for (int k = 0; k < l.len; k++)
			if (l.items[k].state != BS_INDEX_DISABLED)
				l.items[m++] = l.items[k];
		l.len = m;
	}
	for (int s = 0; s < st->n && !rc; s++)
		rc = repair_shard(&r, &fixed, NULL, st, s, idx ? idx : l.items, idx ? 1 : l.len, since_us, 0);
	if (rows)
		*rows = r;
	bs_index_list_free(&l);
	return rc;
}

/* ------------------------------------------------------------ the repair loop */

typedef struct {
	char name[BS_NAME_MAX + 1];
	int64_t created_us;
	uint8_t (*cursor)[16]; /* per shard */
	bool *loaded;          /* per shard: cursor read from the shard */
} sweep_t;

struct bs__repairer {
	sweep_t sw[64];
	int nsw;
};

int bs__repairer_new(bs__repairer_t **out)
{
	if (!(*out = calloc(1, sizeof **out)))
		return bs__oom();
	return 0;
}

void bs__repairer_free(bs__repairer_t *d)
{
	if (!d)
		return;
	for (int k = 0; k < d->nsw; k++) {
		free(d->sw[k].cursor);
		free(d->sw[k].loaded);
	}
	free(d);
}

/* The repair lock of a shard: GET_LOCK names are per server, so the name
 * comes from the shard's own database (two shards on one server each get
 * their own). */
static void repair_lock_name(char buf[65], const bs_store_t *st, int shard)
{
	const char *db = st->cfg->shards[shard].database ? st->cfg->shards[shard].database : "";
	snprintf(buf, 65, "bagstore.repair.%08lx", (unsigned long)crc32(0, (const Bytef *)db, (uInt)strlen(db)));
}

int bs__repair_forget(bs_store_t *st, const char *index)
{
	bs_buf_t b = { 0 };
	char key[80];
	int rc;
	snprintf(key, sizeof key, "sweep:%s", index);
	bs__buf_puts(&b, "DELETE FROM bagstore_watermarks WHERE name=");
	bs__buf_hex(&b, key, strlen(key));
	if (!(rc = bs__buf_ok(&b)))
		rc = bs__exec_everywhere(st, b.ptr, b.len);
	bs__buf_free(&b);
	return rc;
}

static int sweep_cursor_io(bs_store_t *st, int shard, const char *index, uint8_t cursor[16], bool save)
{
	bs_buf_t b = { 0 };
	MYSQL_RES *res = NULL;
	int rc;
	char key[80];
	snprintf(key, sizeof key, "sweep:%s", index);
	if (save) {
		bs__buf_puts(&b, "INSERT INTO bagstore_watermarks (name, cursor_bin) VALUES (");
		bs__buf_hex(&b, key, strlen(key));
		bs__buf_puts(&b, ",");
		bs__buf_hex(&b, cursor, 16);
		bs__buf_puts(&b, ") ON DUPLICATE KEY UPDATE cursor_bin=VALUES(cursor_bin)");
		if (!(rc = bs__buf_ok(&b)))
			rc = bs__shard_exec(st, shard, b.ptr, b.len);
	} else {
		memset(cursor, 0, 16);
		bs__buf_puts(&b, "SELECT cursor_bin FROM bagstore_watermarks WHERE name=");
		bs__buf_hex(&b, key, strlen(key));
		if (!(rc = bs__buf_ok(&b)) && !(rc = bs__shard_query(&res, st, shard, b.ptr, b.len))) {
			MYSQL_ROW row = mysql_fetch_row(res);
			if (row && row[0] && mysql_fetch_lengths(res)[0] == 16)
				memcpy(cursor, row[0], 16);
		}
	}
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

static bool sweep_is(const sweep_t *s, const bs_index_t *idx)
{
	return !strcmp(s->name, idx->name) && s->created_us == idx->created_us;
}

/* The sweep of idx (one of live[nlive]): found, else a new one in a free
 * slot, or in the slot of an index no longer live. NULL: none (no memory). */
static sweep_t *sweep_for(bs__repairer_t *d, bs_store_t *st, const bs_index_t *idx, const bs_index_t *live, int nlive)
{
	for (int k = 0; k < d->nsw; k++)
		if (sweep_is(&d->sw[k], idx))
			return &d->sw[k];
	sweep_t *s = NULL;
	if (d->nsw < (int)(sizeof d->sw / sizeof *d->sw)) {
		s = &d->sw[d->nsw];
	} else {
		for (int k = 0; k < d->nsw && !s; k++) {
			bool gone = true;
			for (int j = 0; j < nlive && gone; j++)
				gone = !sweep_is(&d->sw[k], &live[j]);
			if (gone)
				s = &d->sw[k];
		}
		if (!s)
			return NULL;
		free(s->cursor);
		free(s->loaded);
		s->name[0] = '\0'; /* matches no index until filled in below */
	}
	bool fresh = s == &d->sw[d->nsw];
	s->cursor = calloc((size_t)st->n, 16);
	s->loaded = calloc((size_t)st->n, sizeof *s->loaded);
	if (!s->cursor || !s->loaded) {
		free(s->cursor);
		free(s->loaded);
		s->cursor = NULL;
		s->loaded = NULL;
		return NULL;
	}
	snprintf(s->name, sizeof s->name, "%s", idx->name);
	s->created_us = idx->created_us;
	d->nsw += fresh;
	return s;
}

/* One bounded orphan sweep batch of each index of live[nlive] on shard;
 * rows deleted are added to *repaired and per[k].deleted. */
static int sweep_batch(int64_t *repaired, drift_counts_t *per, bs__repairer_t *d, bs_store_t *st, int shard,
                       const bs_index_t *live, int nlive)
{
	for (int k = 0; k < nlive; k++) {
		sweep_t *s = sweep_for(d, st, &live[k], live, nlive);
		int64_t orphans = 0, fixed = 0;
		bool wrapped;
		int rc;
		if (!s)
			continue;
		if (!s->loaded[shard] && !sweep_cursor_io(st, shard, live[k].name, s->cursor[shard], false))
			s->loaded[shard] = true;
		bs_error_clear(); /* not loaded: from the first row, and again next pass */
		uint8_t before[16];
		memcpy(before, s->cursor[shard], 16);
		if ((rc = bs__drift_orphans(&orphans, &fixed, st, &live[k], shard, s->cursor[shard], SWEEP_BATCH, true,
		                            &wrapped))) {
			if (rc == BS_ESQL && bs__shard_last_errno(st, shard) == ER_NO_SUCH_TABLE) {
				bs_error_clear(); /* the table went away (dropped meanwhile) */
				continue;
			}
			return rc;
		}
		*repaired += fixed;
		per[k].deleted += fixed;
		if (memcmp(before, s->cursor[shard], 16))
			sweep_cursor_io(st, shard, live[k].name, s->cursor[shard], true);
	}
	return 0;
}

/* The stats of a pass: what it looked at and fixed, per index. */
static void pass_stats(bs__repair_stats_t *out, const bs_index_t *live, const drift_counts_t *per, int nlive)
{
	if (!out)
		return;
	free(out->per);
	out->per = NULL;
	out->nper = 0;
	if (nlive && !(out->per = calloc((size_t)nlive, sizeof *out->per)))
		return; /* the counts only; the pass itself went well */
	for (int k = 0; k < nlive; k++) {
		snprintf(out->per[k].index, sizeof out->per[k].index, "%s", live[k].name);
		out->per[k].inserted = per[k].inserted;
		out->per[k].deleted = per[k].deleted;
	}
	out->nper = nlive;
}

/* One repair pass on one shard: entities since its watermark, then one
 * bounded sweep batch of every maintained index's table on it. */
int bs__repair_pass(bs__repair_stats_t *out, bs__repairer_t *d, bs_store_t *st, int shard, const bs_index_list_t *cat,
                    double overlap_s)
{
	bs_index_t *live = NULL;
	drift_counts_t *per = NULL;
	int nlive = 0, rc;
	int64_t wm = 0, start = 0, rows = 0, repaired = 0;
	double t0 = bs_now_mono();

	if (out)
		*out = (bs__repair_stats_t){ 0 };
	/* one repairer per shard, among any number of cleaners */
	bool mine = false;
	char lock[65];
	repair_lock_name(lock, st, shard);
	if ((rc = bs__lock_try(&mine, st, shard, lock)))
		goto done;
	if (!mine) { /* another cleaner repairs it, or holds the lock and hangs */
		if (bs__lag_sample(st, shard))
			bs_error_clear();
		goto done;
	}
	if (out)
		out->ran = true;
	if (!(live = calloc((size_t)cat->len + 1, sizeof *live)) ||
	    !(per = calloc((size_t)cat->len + 1, sizeof *per))) {
		rc = bs__oom();
		goto done;
	}
	int64_t oldest = 0;
	for (int k = 0; k < cat->len; k++)
		if (cat->items[k].state != BS_INDEX_DISABLED) {
			live[nlive++] = cat->items[k];
			if (!oldest || cat->items[k].created_us < oldest)
				oldest = cat->items[k].created_us;
		}
	if ((rc = bs__shard_now_us(&start, st, shard)) || (rc = bs__lag_watermark(&wm, st, shard)))
		goto done;
	int64_t prev = wm;
	int64_t ttl_us = (int64_t)(st->cfg->catalog_ttl * 1e6);
	if (!wm) /* never ran: what backfills do not cover starts at the oldest index's creation (less
	          * the TTL, or the margin for a write that committed late if longer: lifecycle.c) */
		wm = oldest ? oldest - (ttl_us > BS__LATE_COMMIT_US ? ttl_us : BS__LATE_COMMIT_US) : start;
	int64_t since = wm - (int64_t)(overlap_s * 1e6);
	if ((rc = repair_shard(&rows, &repaired, per, st, shard, live, nlive, since, start)))
		goto done;
	/* writes that may have landed late, whatever their age */
	if (nlive && ((rc = settle_intents(&rows, &repaired, per, st, shard, live, nlive, false)) ||
	              (rc = settle_intents(&rows, &repaired, per, st, shard, live, nlive, true))))
		goto done;
	/* orphans: a bounded batch per index on this shard */
	if ((rc = sweep_batch(&repaired, per, d, st, shard, live, nlive)))
		goto done;
	/* rows inserted into an index still building are its backfill's work
	 * done early (a new daemon's first pass reads every entity), not drift */
	int64_t fills = 0;
	for (int k = 0; k < nlive; k++)
		if (live[k].state == BS_INDEX_BUILDING)
			fills += per[k].inserted;
	if (fills > repaired)
		fills = repaired;
	if (!(rc = bs__lag_record(st, shard, start, prev, rows, repaired - fills, fills, bs_now_mono() - t0)) && out)
		out->watermark_us = start;
done:
	if (rc && mine && st->shards[shard].conn) {
		/* the pass failed (another shard down, an error) on a shard that
		 * answers: its lag still shows */
		char msg[1024];
		snprintf(msg, sizeof msg, "%s", bs_last_error());
		bs__lag_sample(st, shard);
		bs_error(rc, "%s", msg);
	}
	if (out) {
		out->rows = rows;
		out->seconds = bs_now_mono() - t0;
		pass_stats(out, live, per, nlive);
	}
	free(live);
	free(per);
	return rc;
}

/*
 * export.c - every entity of the store (or of one shard, or updated since
 * a moment), in pages, newest first across shards or shard by shard in
 * insertion order (added_id): what `bagstore export` streams.
 *
 * Each shard is read by keyset paging, never OFFSET: newest first by
 * (updated, added_id) descending, merged across shards by (updated, id);
 * in insertion order by added_id. The shards that need their next page
 * are read at once (fanout.c). Bodies are decoded as read; a corrupt one is
 * skipped, counted and the first named (bs_result_t.corrupt).
 *
 * Each shard's pages are read in one snapshot (START TRANSACTION WITH
 * CONSISTENT SNAPSHOT, READ ONLY; COMMIT once it is read to the end, or
 * when the export is freed), as mysqldump
 * --single-transaction reads: an entity written while the export runs
 * moves up the newest-first order, past a cursor that has not reached it
 * yet, and without the snapshot it was in neither page. Every shard's
 * snapshot is opened with the first page read (in insertion order too,
 * where the shards are read one after another), so each is as of the
 * export's start. The store's connections are the export's while it is
 * open: anything else goes through another store (a write through this
 * one would meet a read-only transaction, and its ROLLBACK end the
 * snapshot).
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 1000

typedef struct {
	bs_result_t buf; /* the page read, newest first (or by added_id) */
	int64_t *added;  /* each buffered entity's added_id */
	size_t pos;      /* the next one to hand out */
	bool started, exhausted;
	bool snap;    /* the shard's snapshot transaction is open */
	bool opening; /* this refill opens it */
	int64_t cur_us, cur_added; /* the keyset cursor: the last row read */
} cursor_t;

struct bs_export {
	bs_store_t *st; /* whose connections hold the snapshots */
	bs_export_opts_t o;
	int n;
	int next_shard; /* BS_EXPORT_ADDED: the shard being read */
	bool begun;     /* every shard's snapshot opened (the first refill) */
	cursor_t *c;    /* per shard */
	bs__shard_stmt_t *q;
	bs_buf_t *sql;
};

/* The end of shard i's snapshot. A connection closed since (lost, given
 * up) ended it, and is not opened again only to say COMMIT: on a shard
 * that is down, that would wait out the connect timeout in a free. */
static void snap_end(bs_export_t *ex, int i)
{
	bs_shard_t *sh = &ex->st->shards[i];
	bool open = ex->c[i].snap && sh->conn && sh->in_snapshot;
	ex->c[i].snap = false;
	sh->in_snapshot = false;
	if (open && bs__shard_exec(ex->st, i, "COMMIT", 6))
		bs_error_clear();
}

void bs_export_free(bs_export_t *ex)
{
	if (!ex)
		return;
	for (int i = 0; ex->c && i < ex->n; i++)
		snap_end(ex, i);
	for (int i = 0; ex->c && i < ex->n; i++) {
		bs_result_free(&ex->c[i].buf);
		free(ex->c[i].added);
	}
	for (int i = 0; ex->sql && i < ex->n; i++)
		bs__buf_free(&ex->sql[i]);
	free(ex->c);
	free(ex->q);
	free(ex->sql);
	free(ex);
}

int bs_export_open(bs_export_t **out, bs_store_t *st, const bs_export_opts_t *opts)
{
	bs_export_t *ex;
	int rc;
	*out = NULL;
	if ((rc = bs__map_need(st)))
		return rc;
	if (!(ex = calloc(1, sizeof *ex)))
		return bs__oom();
	ex->st = st;
	ex->o = *opts;
	ex->n = st->n;
	if (opts->shard < -1 || opts->shard >= st->n) {
		bs_export_free(ex);
		return bs_error(BS_EINVAL, "export: no shard %d", opts->shard);
	}
	ex->next_shard = opts->shard >= 0 ? opts->shard : 0;
	ex->c = calloc((size_t)st->n, sizeof *ex->c);
	ex->q = calloc((size_t)st->n, sizeof *ex->q);
	ex->sql = calloc((size_t)st->n, sizeof *ex->sql);
	if (!ex->c || !ex->q || !ex->sql) {
		bs_export_free(ex);
		return bs__oom();
	}
	for (int i = 0; i < st->n; i++)
		ex->c[i].exhausted = opts->shard >= 0 && i != opts->shard;
	*out = ex;
	return 0;
}

#define SNAPSHOT_SQL "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"

/* The SELECT of shard i's next page (its first opens the snapshot). */
static void page_sql(bs_buf_t *b, const bs_export_t *ex, const cursor_t *c)
{
	bool newest = ex->o.order == BS_EXPORT_NEWEST;
	const char *and = " WHERE ";
	if (!c->snap)
		bs__buf_puts(b, SNAPSHOT_SQL ";");
	bs__buf_puts(b, "SELECT added_id, id, UNIX_TIMESTAMP(updated), body, " BS__OV_SQL " FROM entities");
	if (ex->o.since_us) {
		bs__buf_puts(b, and);
		bs__buf_puts(b, "updated>=");
		bs__buf_from_unixtime(b, ex->o.since_us);
		and = " AND ";
	}
	if (c->started && newest) {
		bs__buf_puts(b, and);
		bs__buf_puts(b, "updated<=");
		bs__buf_from_unixtime(b, c->cur_us);
		bs__buf_puts(b, " AND (updated<");
		bs__buf_from_unixtime(b, c->cur_us);
		bs__buf_printf(b, " OR added_id<%lld)", (long long)c->cur_added);
	} else if (c->started) {
		bs__buf_puts(b, and);
		bs__buf_printf(b, "added_id>%lld", (long long)c->cur_added);
	}
	bs__buf_printf(b, newest ? " ORDER BY updated DESC, added_id DESC LIMIT %d" : " ORDER BY added_id LIMIT %d",
	               PAGE);
}

/* Shard i's page, as read, into its cursor's buffer. */
static int take_page(bs_result_t *out, bs_export_t *ex, bs_store_t *st, int i)
{
	cursor_t *c = &ex->c[i];
	char where[96];
	size_t rows = 0;
	const uint8_t *states = NULL;
	snprintf(where, sizeof where, "shard %s", st->shards[i].conf->name);
	bs_result_free(&c->buf);
	c->pos = 0;
	for (int r = 0; r < ex->q[i].nres; r++) {
		MYSQL_RES *res = ex->q[i].res[r];
		MYSQL_ROW first = mysql_fetch_row(res);
		bool exact;
		int rc;
		mysql_data_seek(res, 0);
		/* the shard's own entities: not the copies it holds for a move */
		if (first && (rc = bs__owned_at(&states, &exact, st, i, first[4] ? strtoll(first[4], NULL, 10) : -1)))
			return rc;
		size_t nr = (size_t)mysql_num_rows(res);
		int64_t *added = realloc(c->added, (nr ? nr : 1) * sizeof *added);
		bs_entity_t *items = calloc(nr ? nr : 1, sizeof *items);
		if (!added || !items) {
			free(items);
			if (added)
				c->added = added;
			return bs__oom();
		}
		c->added = added;
		c->buf.items = items;
		c->buf.cap = nr;
		MYSQL_ROW row;
		while ((row = mysql_fetch_row(res))) {
			unsigned long *lens = mysql_fetch_lengths(res);
			rows++;
			if (!row[0] || !row[1] || lens[1] != 16)
				continue;
			c->started = true;
			c->cur_added = strtoll(row[0], NULL, 10);
			c->cur_us = bs__parse_unix_us(row[2]);
			bs_entity_t *e = &c->buf.items[c->buf.len];
			memcpy(e->id.b, row[1], 16);
			if (states && !bs__owns(states[bs_route_id(&e->id, st->map.buckets)]))
				continue;
			e->updated_us = c->cur_us;
			e->shard = i;
			if (!row[3] || bs__body_decode_row(&e->bag, row[3], lens[3], row[1], where)) {
				if (!out->corrupt++)
					snprintf(out->corrupt_first, sizeof out->corrupt_first, "%s", bs_last_error());
				bs_error_clear();
				bs_value_nil(&e->bag);
				continue;
			}
			c->added[c->buf.len++] = c->cur_added;
		}
	}
	if (rows < PAGE)
		c->exhausted = true;
	return 0;
}

/* Read the next page of every shard in `want` at once; the first call
 * opens every shard's snapshot, those read later (in insertion order,
 * shard after shard) included, so that each is as of the export's start. */
static int refill(bs_result_t *out, bs_export_t *ex, bs_store_t *st, const bool *want)
{
	int rc = 0;
	for (int i = 0; i < ex->n; i++) {
		cursor_t *c = &ex->c[i];
		bs__buf_reset(&ex->sql[i]);
		ex->q[i].sql = NULL;
		c->opening = !c->snap && !c->exhausted && (want[i] || !ex->begun);
		if (!want[i]) {
			if (c->opening) {
				ex->q[i].sql = SNAPSHOT_SQL;
				ex->q[i].len = sizeof SNAPSHOT_SQL - 1;
			}
			continue;
		}
		page_sql(&ex->sql[i], ex, c);
		if ((rc = bs__buf_ok(&ex->sql[i])))
			return rc;
		ex->q[i].sql = ex->sql[i].ptr;
		ex->q[i].len = ex->sql[i].len;
	}
	rc = bs__shard_run(st, ex->q);
	ex->begun = true;
	/* a snapshot may be open where the run failed elsewhere: COMMIT ends
	 * it, and is nothing where there is none */
	for (int i = 0; i < ex->n; i++)
		if (ex->c[i].opening)
			ex->c[i].snap = st->shards[i].in_snapshot = true;
	for (int i = 0; i < ex->n && !rc; i++)
		if (want[i])
			rc = take_page(out, ex, st, i);
	bs__shard_stmts_clear(ex->q, ex->n);
	/* a shard read to the end lets its snapshot go at once */
	for (int i = 0; i < ex->n && !rc; i++)
		if (want[i] && ex->c[i].exhausted)
			snap_end(ex, i);
	return rc;
}

static int push(bs_result_t *out, bs_entity_t *e)
{
	int rc = BS_ARRAY_GROW(out->items, out->len, out->cap, 256);
	if (rc)
		return rc;
	out->items[out->len++] = *e;
	bs_value_nil(&e->bag); /* moved */
	return 0;
}

/* Newest first across shards: the newest head of the shards' pages. */
static int next_newest(bs_result_t *out, bs_export_t *ex, bs_store_t *st, size_t limit)
{
	bool *want = calloc((size_t)ex->n, sizeof *want);
	int rc = 0;
	BS_ERR_ALLOC(want);
	while (out->len < limit && !rc) {
		bool any = false;
		for (int i = 0; i < ex->n; i++) {
			cursor_t *c = &ex->c[i];
			want[i] = c->pos == c->buf.len && !c->exhausted;
			any |= want[i];
		}
		/* a shard whose page is used up is read again before merging on */
		if (any && (rc = refill(out, ex, st, want)))
			break;
		int best = -1;
		for (int i = 0; i < ex->n; i++) {
			cursor_t *c = &ex->c[i];
			if (c->pos == c->buf.len)
				continue;
			if (best < 0) {
				best = i;
				continue;
			}
			const bs_entity_t *a = &c->buf.items[c->pos], *b = &ex->c[best].buf.items[ex->c[best].pos];
			if (a->updated_us > b->updated_us ||
			    (a->updated_us == b->updated_us && memcmp(a->id.b, b->id.b, 16) < 0))
				best = i;
		}
		if (best < 0)
			break; /* every shard is done */
		cursor_t *c = &ex->c[best];
		rc = push(out, &c->buf.items[c->pos++]);
	}
	free(want);
	return rc;
}

/* Insertion order: shard after shard, each by added_id. */
static int next_added(bs_result_t *out, bs_export_t *ex, bs_store_t *st, size_t limit)
{
	bool *want = calloc((size_t)ex->n, sizeof *want);
	int rc = 0;
	BS_ERR_ALLOC(want);
	while (out->len < limit && !rc && ex->next_shard < ex->n) {
		cursor_t *c = &ex->c[ex->next_shard];
		if (c->pos < c->buf.len) {
			rc = push(out, &c->buf.items[c->pos++]);
			continue;
		}
		if (c->exhausted) {
			ex->next_shard = ex->o.shard >= 0 ? ex->n : ex->next_shard + 1;
			continue;
		}
		memset(want, 0, (size_t)ex->n * sizeof *want);
		want[ex->next_shard] = true;
		rc = refill(out, ex, st, want);
	}
	free(want);
	return rc;
}

int bs_export_next(bs_result_t *out, bs_store_t *st, bs_export_t *ex, size_t limit)
{
	int rc;
	memset(out, 0, sizeof *out);
	if (st->n != ex->n)
		return bs_error(BS_EINVAL, "export was opened on another store");
	if (!limit)
		limit = PAGE;
	rc = ex->o.order == BS_EXPORT_NEWEST ? next_newest(out, ex, st, limit) : next_added(out, ex, st, limit);
	if (rc)
		bs_result_free(out);
	return rc;
}

/*
 * drift.c - comparing an index's rows with the bodies, and fixing them:
 * the one routine under repair, verify and promotion.
 *
 * For a batch of entities, the rows they should have are computed from
 * their bodies (bs__index_row_for), the rows they do have are read with
 * `entity_id IN (...)` on every shard at once, and values are compared in a
 * canonical text form (hex for bytes and strings, decimal for ints and
 * bools, %.17g for floats), so no comparison depends on a collation.
 * Orphans (rows whose entity is gone) are found by walking an index table
 * by entity_id and asking the entity shards which ids exist.
 *
 * Also here: ebatch_t, a batch of entities read and decoded.
 */
#include "cleaner.h"

#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ batches */

/* qsort_r order of indexes into an array of ids (its argument). */
int bs__cmp_order_ids(const void *a, const void *b, void *ids)
{
	const bs_id_t *v = ids;
	return memcmp(v[*(const size_t *)a].b, v[*(const size_t *)b].b, 16);
}

void bs__ebatch_reset(ebatch_t *b)
{
	for (size_t i = 0; i < b->len; i++)
		bs_value_clear(&b->bags[i]);
	b->len = 0;
	b->corrupt = 0;
	b->ov = -1;
	b->last_added = b->last_updated = 0;
}

void bs__ebatch_free(ebatch_t *b)
{
	bs__ebatch_reset(b);
	free(b->ids);
	free(b->bags);
	free(b->added);
	free(b->updated);
	memset(b, 0, sizeof *b);
}

static int ebatch_grow(ebatch_t *b, size_t need)
{
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	bs_id_t *ids = realloc(b->ids, cap * sizeof *ids);
	if (ids)
		b->ids = ids;
	bs_value_t *bags = realloc(b->bags, cap * sizeof *bags);
	if (bags)
		b->bags = bags;
	int64_t *added = realloc(b->added, cap * sizeof *added);
	if (added)
		b->added = added;
	int64_t *updated = realloc(b->updated, cap * sizeof *updated);
	if (updated)
		b->updated = updated;
	if (!ids || !bags || !added || !updated)
		return bs_error(BS_ENOMEM, "out of memory reading entities");
	b->cap = cap;
	return 0;
}

int bs__ebatch_load(ebatch_t *b, MYSQL_RES *res)
{
	int rc;
	if ((rc = ebatch_grow(b, b->len + (size_t)mysql_num_rows(res))))
		return rc;
	bool with_ov = mysql_num_fields(res) > 4;
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res))) {
		unsigned long *lens = mysql_fetch_lengths(res);
		if (with_ov)
			b->ov = row[4] ? strtoll(row[4], NULL, 10) : -1;
		if (!row[1] || lens[1] != 16)
			continue;
		size_t k = b->len++;
		b->added[k] = row[0] ? strtoll(row[0], NULL, 10) : 0;
		memcpy(b->ids[k].b, row[1], 16);
		b->updated[k] = bs__parse_unix_us(row[2]);
		b->last_added = b->added[k];
		b->last_updated = b->updated[k];
		if (b->no_bodies) {
			bs_value_nil(&b->bags[k]);
			continue;
		}
		if (!row[3] || bs__body_decode_row(&b->bags[k], row[3], row[3] ? lens[3] : 0, row[1], NULL)) {
			bs_value_nil(&b->bags[k]);
			if (!b->corrupt++)
				snprintf(b->corrupt_first, sizeof b->corrupt_first, "%s", bs_last_error());
			bs_error_clear();
		}
	}
	return 0;
}

int bs__ebatch_fetch(ebatch_t *b, size_t *got, bs_store_t *st, int shard, const bs_buf_t *sql)
{
	MYSQL_RES *res = NULL;
	int rc;
	bs__ebatch_reset(b);
	if (got)
		*got = 0;
	if ((rc = bs__buf_ok(sql)) || (rc = bs__shard_query(&res, st, shard, sql->ptr, sql->len)))
		return rc;
	if (got)
		*got = (size_t)mysql_num_rows(res);
	rc = bs__ebatch_load(b, res);
	mysql_free_result(res);
	return rc;
}

/* Move entry k of from to the end of to. */
static int ebatch_take(ebatch_t *to, ebatch_t *from, size_t k)
{
	int rc = ebatch_grow(to, to->len + 1);
	if (rc)
		return rc;
	size_t j = to->len++;
	to->ids[j] = from->ids[k];
	to->added[j] = from->added[k];
	to->updated[j] = from->updated[k];
	to->bags[j] = from->bags[k];
	bs_value_nil(&from->bags[k]);
	return 0;
}

void bs__ebatch_keep(ebatch_t *b, const bs_store_t *st, const uint8_t *by_bucket, bool (*keep)(uint8_t))
{
	size_t m = 0;
	for (size_t k = 0; k < b->len; k++) {
		if (!keep(by_bucket[bs_route_id(&b->ids[k], st->map.buckets)])) {
			bs_value_clear(&b->bags[k]);
			continue;
		}
		b->ids[m] = b->ids[k];
		b->added[m] = b->added[k];
		b->updated[m] = b->updated[k];
		b->bags[m] = b->bags[k];
		if (m != k)
			bs_value_nil(&b->bags[k]);
		m++;
	}
	b->len = m;
}

int bs__ebatch_owned(bool *again, ebatch_t *b, bs_store_t *st, int shard)
{
	const uint8_t *states;
	bool exact;
	int rc;
	*again = false;
	if (!b->len)
		return 0;
	if ((rc = bs__map_need(st)) || (rc = bs__owned_at(&states, &exact, st, shard, b->ov)))
		return rc;
	if (!exact) {
		*again = true;
		return 0;
	}
	bs__ebatch_keep(b, st, states, bs__owns);
	return 0;
}

int bs__ebatch_scan(ebatch_t *b, size_t *got, bs_store_t *st, int shard, const bs_buf_t *sql)
{
	for (int round = 0; round < 8; round++) {
		bool again;
		int rc = bs__ebatch_fetch(b, got, st, shard, sql);
		if (rc || (rc = bs__ebatch_owned(&again, b, st, shard)) || !again)
			return rc;
	}
	return bs_error(BS_EUNREACHABLE, "shard %s: its buckets kept moving under a scan",
	                st->shards[shard].conf->name);
}

/* ------------------------------------------------------------ current rows by id */

struct cur_arg {
	idvec16_t *want; /* per shard: ids to read there */
	ebatch_t *got;   /* per shard */
	bool no_bodies;
};

static int cur_on(bs_store_t *st, int i, void *p)
{
	struct cur_arg *a = p;
	bs_buf_t b = { 0 };
	MYSQL_RES *res = NULL;
	int rc = 0;
	ebatch_t *e = &a->got[i];
	bs__ebatch_reset(e);
	e->no_bodies = a->no_bodies;
	e->ov = -1;
	for (size_t off = 0; off < a->want[i].n && !rc; off += 500) {
		size_t end = off + 500 < a->want[i].n ? off + 500 : a->want[i].n;
		int64_t before = e->ov;
		bs__buf_reset(&b);
		bs__buf_printf(&b,
		               "SELECT e.added_id, e.id, UNIX_TIMESTAMP(e.updated), %s, m.v FROM bagstore_meta m"
		               " LEFT JOIN entities e ON e.id IN (",
		               a->no_bodies ? "NULL" : "e.body");
		for (size_t k = off; k < end; k++) {
			bs__buf_puts(&b, k > off ? "," : "");
			bs__buf_hex(&b, a->want[i].ids[k], 16);
		}
		bs__buf_puts(&b, ") WHERE m.k='owned_version'");
		if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_check(st, i)) ||
		    (rc = bs__shard_query(&res, st, i, b.ptr, b.len)))
			break;
		rc = bs__ebatch_load(e, res);
		mysql_free_result(res);
		if (off && e->ov != before)
			e->ov = -2; /* two snapshots saw two versions: read again */
	}
	bs__buf_free(&b);
	return rc;
}

static int idvec16_push(idvec16_t *v, const void *id)
{
	int rc = BS_ARRAY_GROW(v->ids, v->n, v->cap, 64);
	if (rc)
		return rc;
	memcpy(v->ids[v->n++], id, 16);
	return 0;
}

/* Sort b's entries by id. */
static int ebatch_sort(ebatch_t *b)
{
	ebatch_t s = { 0 };
	size_t *ord = malloc((b->len ? b->len : 1) * sizeof *ord);
	int rc = 0;
	BS_ERR_ALLOC(ord);
	for (size_t k = 0; k < b->len; k++)
		ord[k] = k;
	qsort_r(ord, b->len, sizeof *ord, bs__cmp_order_ids, b->ids);
	for (size_t k = 0; k < b->len && !rc; k++)
		rc = ebatch_take(&s, b, ord[k]);
	free(ord);
	if (rc) {
		bs__ebatch_free(&s);
		return rc;
	}
	s.corrupt = b->corrupt;
	memcpy(s.corrupt_first, b->corrupt_first, sizeof s.corrupt_first);
	b->len = 0;
	bs__ebatch_free(b);
	*b = s;
	return 0;
}

int bs__entities_current(ebatch_t *out, bs_store_t *st, const bs_id_t *ids, size_t n, bool no_bodies)
{
	struct cur_arg a = { .no_bodies = no_bodies };
	idvec16_t todo = { 0 };
	bool *which = calloc((size_t)st->n, sizeof *which);
	int rc = 0;
	bs__ebatch_reset(out);
	out->no_bodies = no_bodies;
	a.want = calloc((size_t)st->n, sizeof *a.want);
	a.got = calloc((size_t)st->n, sizeof *a.got);
	if (!which || !a.want || !a.got) {
		rc = bs__oom();
		goto done;
	}
	if ((rc = bs__map_need(st)))
		goto done;
	for (size_t k = 0; k < n && !rc; k++)
		rc = idvec16_push(&todo, ids[k].b);
	for (int round = 0; !rc && todo.n; round++) {
		if (round == 8) {
			rc = bs_error(BS_EUNREACHABLE, "reading entities: their buckets kept moving");
			break;
		}
		if (round && (rc = bs__map_reload(st)))
			break;
		for (int i = 0; i < st->n; i++)
			a.want[i].n = 0;
		for (size_t k = 0; k < todo.n && !rc; k++) {
			bs_id_t id;
			memcpy(id.b, todo.ids[k], 16);
			int s = bs__map_shard(st, bs_route_id(&id, st->map.buckets));
			rc = s < 0 ? bs_error(BS_ECONFIG, "an entity's bucket has no configured owner")
			           : idvec16_push(&a.want[s], todo.ids[k]);
		}
		for (int i = 0; i < st->n; i++)
			which[i] = a.want[i].n > 0;
		if (rc || (rc = bs__shard_each(st, which, cur_on, &a, NULL)))
			break;
		todo.n = 0;
		/* what each shard owned in its snapshot is current; the rest again */
		for (int i = 0; i < st->n && !rc; i++) {
			const uint8_t *states = NULL;
			bool exact = false;
			if (!which[i])
				continue;
			if (a.got[i].ov >= 0 && (rc = bs__owned_at(&states, &exact, st, i, a.got[i].ov)))
				break;
			for (size_t k = 0; k < a.want[i].n && !rc; k++) {
				bs_id_t id;
				memcpy(id.b, a.want[i].ids[k], 16);
				if (!exact || !bs__owns(states[bs_route_id(&id, st->map.buckets)]))
					rc = idvec16_push(&todo, id.b);
			}
			for (size_t k = 0; k < a.got[i].len && !rc; k++)
				if (exact && bs__owns(states[bs_route_id(&a.got[i].ids[k], st->map.buckets)]))
					rc = ebatch_take(out, &a.got[i], k);
			if (a.got[i].corrupt && !out->corrupt)
				memcpy(out->corrupt_first, a.got[i].corrupt_first, sizeof out->corrupt_first);
			out->corrupt += a.got[i].corrupt;
		}
	}
	if (!rc)
		rc = ebatch_sort(out);
done:
	for (int i = 0; a.want && i < st->n; i++)
		free(a.want[i].ids);
	for (int i = 0; a.got && i < st->n; i++)
		bs__ebatch_free(&a.got[i]);
	free(a.want);
	free(a.got);
	free(todo.ids);
	free(which);
	return rc;
}

_Static_assert(sizeof(bs_id_t) == 16, "bs__ids_find walks bs_id_t arrays as 16-byte ids");

int bs__id_cmp(const void *a, const void *b)
{
	return memcmp(a, b, 16);
}

long bs__ids_find(const void *ids, size_t n, const void *id)
{
	const uint8_t *base = ids;
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int r = memcmp(base + 16 * mid, id, 16);
		if (r == 0)
			return (long)mid;
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* ------------------------------------------------------------ canonical values */

static void canon_float(bs_buf_t *b, double f)
{
	if (f == 0)
		f = 0; /* -0 and 0 are one value */
	bs__buf_printf(b, "%.17g", f);
}

/* The expected value of prop, canonical. */
static void canon_value(bs_buf_t *b, const bs_value_t *v, const bs_prop_t *prop)
{
	static const char hx[] = "0123456789ABCDEF";
	switch (prop->type) {
	case BS_COL_UUID:
	case BS_COL_BINARY:
	case BS_COL_STRING:
		for (size_t i = 0; i < v->v.s.len; i++) {
			char two[2] = { hx[(uint8_t)v->v.s.ptr[i] >> 4], hx[(uint8_t)v->v.s.ptr[i] & 15] };
			bs__buf_putn(b, two, 2);
		}
		break;
	case BS_COL_INT: bs__buf_printf(b, "%lld", (long long)v->v.i); break;
	case BS_COL_BOOL: bs__buf_puts(b, v->v.b ? "1" : "0"); break;
	case BS_COL_FLOAT: canon_float(b, v->type == BS_INT ? (double)v->v.i : v->v.f); break;
	}
}

/* The select expression whose text canon_db turns into the canonical form. */
static void canon_select(bs_buf_t *b, const bs_prop_t *prop)
{
	/* qualified: the read joins bagstore_meta, whose columns k and v an
	 * index's properties may also be called */
	if (prop->type == BS_COL_UUID || prop->type == BS_COL_BINARY || prop->type == BS_COL_STRING) {
		bs__buf_puts(b, "HEX(i.");
		bs__buf_ident(b, prop->name);
		bs__buf_puts(b, ")");
	} else {
		bs__buf_puts(b, "i.");
		bs__buf_ident(b, prop->name);
	}
}

static void canon_db(bs_buf_t *b, const char *text, const bs_prop_t *prop)
{
	if (!text) {
		bs__buf_puts(b, "NULL");
		return;
	}
	if (prop->type == BS_COL_FLOAT)
		canon_float(b, bs__strtod_c(text, NULL));
	else if (prop->type == BS_COL_BOOL)
		bs__buf_puts(b, strcmp(text, "0") ? "1" : "0");
	else
		bs__buf_puts(b, text);
}

/* ------------------------------------------------------------ check */

typedef struct {
	const bs_index_t *idx;
	const bs_id_t *ids;
	size_t n;
	int *expect; /* shard, -1 none */
	int *expect_bucket;
	int *overwritten;     /* bucket of a wrong row the upsert replaces, -1 */
	size_t *expect_off;   /* into expect_text */
	bs_buf_t expect_text; /* canonical rows, NUL-separated */
	size_t *order;        /* ids sorted */
	bool *ok, *upsert;
	bool *touched; /* a row of it is upserted or deleted */
	bs_buf_t *del;  /* per shard: entity_id list */
	bs_buf_t *dlog; /* per shard: (bucket, id) of the rows deleted in buckets it owned, to fence and log */
	bs_buf_t *dbk;  /* per shard: those buckets, ",b,b..." */
	bs_buf_t *nbk;  /* per shard: buckets of rows deleted that it held in no state, ",b,b..." */
	int64_t *ndel;
	bs_buf_t *ins;  /* per shard: VALUES list */
	bs_buf_t *ilog; /* per shard: (bucket, id) of the rows upserted, to log */
	bs_buf_t *ibk;  /* per shard: the buckets upserted, ",b,b..." */
	bs_buf_t *olog; /* per shard: (bucket, id) of leaving rows the upserts replace, to log */
	int64_t *nins;
	MYSQL_RES **res;        /* per shard */
	int64_t *ov;            /* per shard: its ownership version in the read */
	const uint8_t **states; /* per shard: its ownership states at ov */
	bool *refused;          /* per shard: the fix found a bucket moved */
	bool again;             /* two shards' reads both owned a row's bucket */
} check_t;

static int cmp_order(const void *a, const void *b, void *ids)
{
	return bs__cmp_order_ids(a, b, ids);
}

static long find_id(const check_t *c, const void *id)
{
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int r = memcmp(c->ids[c->order[mid]].b, id, 16);
		if (r == 0)
			return (long)c->order[mid];
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* The rows of the batch's entities on shard i: the ownership version of
 * the same snapshot first (one row even when none matches), then entity_id,
 * the canonical values and the raw shard_on value. */
static int read_rows_on(bs_store_t *st, int i, void *p)
{
	check_t *c = p;
	bs_buf_t b = { 0 };
	int rc;
	bs__buf_puts(&b, "SELECT m.v, i.entity_id");
	for (int k = 0; k < c->idx->nprops; k++) {
		bs__buf_puts(&b, ",");
		canon_select(&b, &c->idx->props[k]);
	}
	bs__buf_puts(&b, ",i.");
	bs__buf_ident(&b, c->idx->props[c->idx->shard_on].name);
	bs__buf_puts(&b, " FROM bagstore_meta m LEFT JOIN ");
	bs__buf_ident(&b, c->idx->name);
	bs__buf_puts(&b, " i ON i.entity_id IN (");
	for (size_t k = 0; k < c->n; k++) {
		if (k)
			bs__buf_puts(&b, ",");
		bs__buf_hex(&b, c->ids[k].b, 16);
	}
	bs__buf_puts(&b, ") WHERE m.k='owned_version'");
	if (!(rc = bs__buf_ok(&b)) && !(rc = bs__shard_check(st, i)))
		rc = bs__shard_query(&c->res[i], st, i, b.ptr, b.len);
	if (!rc) {
		MYSQL_ROW row = mysql_fetch_row(c->res[i]);
		c->ov[i] = row && row[0] ? strtoll(row[0], NULL, 10) : -1;
		mysql_data_seek(c->res[i], 0);
	}
	bs__buf_free(&b);
	return rc;
}

/* Log (bucket, id) pairs of list for the moves of the leaving buckets among
 * them, appended to b: their move's catch-up makes the target's rows of
 * those entities what their bodies say. cond: SQL the log depends on. */
static void log_sql(bs_buf_t *b, const bs_buf_t *pairs, const char *cond)
{
	if (!pairs->len)
		return;
	bs__buf_puts(b, b->len ? ";" : "");
	bs__buf_puts(b, "INSERT INTO bagstore_move_log (move_id, kind, id) SELECT o.move_id, 1, l.id FROM"
	                " bagstore_buckets o JOIN (");
	bs__buf_putn(b, pairs->ptr, pairs->len);
	bs__buf_printf(b, ") l ON l.bucket=o.bucket WHERE o.state='leaving' AND %s ON DUPLICATE KEY UPDATE n=n+1",
	               cond);
}

static void pair_add(bs_buf_t *pairs, int bucket, const void *id)
{
	bs__buf_printf(pairs, "%sSELECT %d bucket, ", pairs->len ? " UNION ALL " : "", bucket);
	bs__buf_hex(pairs, id, 16);
	bs__buf_puts(pairs, " id");
}

/* A fix's transaction applies only when this holds (fence_head). */
#define FENCE_OK "@bs_o=@bs_want AND @bs_x=0"

/* Send shard i a fix's transaction b (its one result set, which this
 * appends: whether the shard owned every bucket it fenced): c->refused[i] when it did not
 * (nothing applied); on a failure the transaction is rolled back. */
static int fenced_run(bs_store_t *st, int i, check_t *c, bs_buf_t *b)
{
	MYSQL_RES *res = NULL;
	int rc;
	bs__buf_puts(b, ";SELECT " FENCE_OK ";COMMIT");
	if (!(rc = bs__buf_ok(b)) && !(rc = bs__shard_check(st, i)) && !(rc = bs__shard_query(&res, st, i, b->ptr, b->len))) {
		MYSQL_ROW row = mysql_fetch_row(res);
		c->refused[i] = !row || !row[0] || strcmp(row[0], "1") != 0;
	} else if (rc && st->shards[i].conn) {
		char msg[1024];
		snprintf(msg, sizeof msg, "%s", bs_last_error());
		bs__shard_exec(st, i, "ROLLBACK", 8);
		bs_error(rc, "%s", msg);
	}
	if (res)
		mysql_free_result(res);
	return rc;
}

/* The head of a fix's transaction on a shard: the ownership rows of the
 * buckets (",b,b...") share-locked and counted into @bs_o, and into
 * @bs_want how many there are (pairs: the (bucket, id) lists naming them);
 * and into @bs_x the ownership rows of the buckets none (",b,b...", may be
 * NULL) that the shard held in no state when the rows were read, read
 * under a share lock too (none there locks the gap: a move cannot make one
 * incoming here until the transaction ends). FENCE_OK: all still so. */
static void fence_head(bs_buf_t *b, const bs_buf_t *buckets, const bs_buf_t *none, const bs_buf_t *const *pairs,
                       int npairs)
{
	if (none && none->len) { /* gap locks: REPEATABLE READ (the next transaction only) */
		bs__buf_puts(b, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;START TRANSACTION;SELECT COUNT(*) INTO @bs_x FROM bagstore_buckets WHERE bucket IN (-1");
		bs__buf_putn(b, none->ptr, none->len);
		bs__buf_printf(b, ") LOCK IN SHARE MODE WAIT %d;", BS__FENCE_WAIT_S);
	} else {
		bs__buf_puts(b, "SET @bs_x=0;START TRANSACTION;");
	}
	bs__buf_puts(b, "SELECT COUNT(DISTINCT bucket) INTO @bs_o FROM bagstore_buckets WHERE state "
	                "IN " BS__OWNING_SQL " AND bucket IN (-1");
	bs__buf_putn(b, buckets->ptr, buckets->len);
	bs__buf_printf(b, ") LOCK IN SHARE MODE WAIT %d;SELECT COUNT(DISTINCT bucket) INTO @bs_want FROM (SELECT -1 bucket, NULL id",
	               BS__FENCE_WAIT_S);
	for (int k = 0; k < npairs; k++)
		if (pairs[k]->len) {
			bs__buf_puts(b, " UNION ALL ");
			bs__buf_putn(b, pairs[k]->ptr, pairs[k]->len);
		}
	bs__buf_puts(b, ") w WHERE bucket>=0;");
}

/* Phase 1 of a fix on shard i: the missing and wrong rows upserted, in one
 * transaction that share-locks the ownership rows of their buckets (and of
 * the buckets of the rows they replace) and writes only when the shard
 * owns them all (else *refused, nothing written); their entities logged
 * for leaving buckets. */
static int upsert_on(bs_store_t *st, int i, void *p)
{
	check_t *c = p;
	bs_buf_t b = { 0 };
	int rc;
	if (!c->nins[i])
		return 0;
	const bs_buf_t *pairs[] = { &c->ilog[i], &c->olog[i] };
	fence_head(&b, &c->ibk[i], NULL, pairs, 2);
	/* a compound statement, not INSERT ... SELECT FROM (VALUES ...): a
	 * table value constructor names its columns after its first row, and
	 * two equal values there (0 and 0) are a duplicate column (1060) */
	bs__buf_puts(&b, "BEGIN NOT ATOMIC IF " FENCE_OK " THEN ");
	bs__buf_index_insert(&b, c->idx);
	bs__buf_puts(&b, " VALUES ");
	bs__buf_putn(&b, c->ins[i].ptr, c->ins[i].len);
	bs__buf_index_update(&b, c->idx);
	bs__buf_puts(&b, "; END IF; END");
	log_sql(&b, &c->ilog[i], FENCE_OK);
	log_sql(&b, &c->olog[i], FENCE_OK);
	rc = fenced_run(st, i, c, &b);
	bs__buf_free(&b);
	return rc;
}

/* Phase 2, once every upsert is in: rows on shards that should not hold
 * them deleted (a reader always finds one right row meanwhile), fenced as
 * the upserts are, on the buckets the rows were read in: a cut-over
 * between the read and the delete refuses it (the check runs again), so a
 * row a move has copied is never deleted from its source unlogged. */
static int delete_on(bs_store_t *st, int i, void *p)
{
	check_t *c = p;
	bs_buf_t b = { 0 };
	int rc;
	if (!c->ndel[i])
		return 0;
	const bs_buf_t *pairs[] = { &c->dlog[i] };
	fence_head(&b, &c->dbk[i], &c->nbk[i], pairs, 1);
	bs__buf_puts(&b, "DELETE FROM ");
	bs__buf_ident(&b, c->idx->name);
	bs__buf_puts(&b, " WHERE " FENCE_OK " AND entity_id IN (");
	bs__buf_putn(&b, c->del[i].ptr, c->del[i].len);
	bs__buf_puts(&b, ")");
	log_sql(&b, &c->dlog[i], FENCE_OK);
	rc = fenced_run(st, i, c, &b);
	bs__buf_free(&b);
	return rc;
}

static void check_free(check_t *c, int ns)
{
	for (int j = 0; c->res && j < ns; j++)
		if (c->res[j])
			mysql_free_result(c->res[j]);
	bs_buf_t *bufs[] = { c->del, c->dlog, c->dbk, c->nbk, c->ins, c->ilog, c->ibk, c->olog };
	for (size_t x = 0; x < sizeof bufs / sizeof *bufs; x++) {
		for (int j = 0; bufs[x] && j < ns; j++)
			bs__buf_free(&bufs[x][j]);
		free(bufs[x]);
	}
	bs__buf_free(&c->expect_text);
	free(c->expect);
	free(c->expect_bucket);
	free(c->overwritten);
	free(c->expect_off);
	free(c->order);
	free(c->ok);
	free(c->upsert);
	free(c->touched);
	free(c->ndel);
	free(c->nins);
	free(c->res);
	free(c->ov);
	free(c->states);
	free(c->refused);
	memset(c, 0, sizeof *c);
}

static int check_alloc(check_t *c, size_t n, int ns)
{
	c->expect = calloc(n, sizeof *c->expect);
	c->expect_bucket = calloc(n, sizeof *c->expect_bucket);
	c->overwritten = calloc(n, sizeof *c->overwritten);
	c->expect_off = calloc(n, sizeof *c->expect_off);
	c->order = calloc(n, sizeof *c->order);
	c->ok = calloc(n, sizeof *c->ok);
	c->upsert = calloc(n, sizeof *c->upsert);
	c->touched = calloc(n, sizeof *c->touched);
	c->del = calloc((size_t)ns, sizeof *c->del);
	c->dlog = calloc((size_t)ns, sizeof *c->dlog);
	c->dbk = calloc((size_t)ns, sizeof *c->dbk);
	c->nbk = calloc((size_t)ns, sizeof *c->nbk);
	c->ins = calloc((size_t)ns, sizeof *c->ins);
	c->ilog = calloc((size_t)ns, sizeof *c->ilog);
	c->ibk = calloc((size_t)ns, sizeof *c->ibk);
	c->olog = calloc((size_t)ns, sizeof *c->olog);
	c->ndel = calloc((size_t)ns, sizeof *c->ndel);
	c->nins = calloc((size_t)ns, sizeof *c->nins);
	c->res = calloc((size_t)ns, sizeof *c->res);
	c->ov = calloc((size_t)ns, sizeof *c->ov);
	c->states = calloc((size_t)ns, sizeof *c->states);
	c->refused = calloc((size_t)ns, sizeof *c->refused);
	if (!c->expect || !c->expect_bucket || !c->overwritten || !c->expect_off || !c->order || !c->ok || !c->upsert || !c->touched ||
	    !c->del || !c->dlog || !c->dbk || !c->nbk || !c->ins || !c->ilog || !c->ibk || !c->olog || !c->ndel || !c->nins || !c->res ||
	    !c->ov || !c->states || !c->refused)
		return bs_error(BS_ENOMEM, "out of memory checking index rows");
	return 0;
}

/* What each entity should have: its shard (-1 none) and canonical row. */
static int expect_rows(drift_counts_t *out, check_t *c, const bs_value_t *bags, const bs_store_t *st)
{
	const bs_index_t *idx = c->idx;
	for (size_t k = 0; k < c->n; k++) {
		const bs_value_t *vals[BS_INDEX_MAX_PROPS];
		bs_value_t tmps[BS_INDEX_MAX_PROPS];
		bool misfit = false;
		c->order[k] = k;
		c->expect_bucket[k] = -1;
		c->overwritten[k] = -1;
		c->expect[k] = bags[k].type == BS_MAP ? bs__index_row_route(vals, tmps, &c->expect_bucket[k], idx,
		                                                            &bags[k], st, &misfit)
		                                      : -1;
		if (misfit)
			out->misfit++;
		c->expect_off[k] = c->expect_text.len;
		if (c->expect[k] >= 0) {
			for (int p = 0; p < idx->nprops; p++) {
				if (p)
					bs__buf_puts(&c->expect_text, "\x1f");
				canon_value(&c->expect_text, vals[p], &idx->props[p]);
			}
			for (int p = 0; p < idx->nprops; p++)
				if (vals[p] == &tmps[p])
					bs_value_clear(&tmps[p]);
		}
		bs__buf_putn(&c->expect_text, "", 1); /* the NUL separator */
	}
	qsort_r(c->order, c->n, sizeof *c->order, cmp_order, (void *)c->ids);
	return bs__buf_ok(&c->expect_text);
}

/* Every shard's ownership states as of its read; *again when a shard moved
 * past its read, or when the map gives an expected row to a shard that did
 * not own its bucket then (the map is stale). */
static int check_states(bool *again, check_t *c, bs_store_t *st)
{
	int rc;
	*again = false;
	for (int j = 0; j < st->n; j++) {
		bool exact;
		if ((rc = bs__owned_at(&c->states[j], &exact, st, j, c->ov[j])))
			return rc;
		if (!exact)
			*again = true;
	}
	for (size_t k = 0; k < c->n && !*again; k++)
		if (c->expect[k] >= 0 && !bs__owns(c->states[c->expect[k]][c->expect_bucket[k]]))
			*again = true;
	return 0;
}

/* Does a shard other than j own bucket in its read? The shards are read
 * at slightly different moments: one read before a cut-over (the source,
 * leaving) and one after it (the target, owned) both own the bucket, and
 * a row of it is then on no wrong shard: nothing may be deleted. */
static bool owned_elsewhere(const check_t *c, const bs_store_t *st, int j, int bucket)
{
	for (int x = 0; x < st->n; x++)
		if (x != j && bs__owns(c->states[x][bucket]))
			return true;
	return false;
}

/* The rows every shard has (read by read_rows_on) against the expected:
 * right ones marked ok, wrong ones on the right shard to overwrite, rows
 * on a wrong shard to delete; then what is missing. A row in a bucket its
 * shard holds only for a move (incoming, or gone and not yet cleaned up)
 * is the move's, not drift: it is neither counted nor touched. */
static int compare_rows(drift_counts_t *out, check_t *c, const bs_store_t *st)
{
	const bs_index_t *idx = c->idx;
	const bs_prop_t *on = &idx->props[idx->shard_on];
	bs_buf_t row = { 0 };
	int rc = 0;
	for (int j = 0; j < st->n; j++) {
		MYSQL_ROW r;
		while ((r = mysql_fetch_row(c->res[j]))) {
			unsigned long *lens = mysql_fetch_lengths(c->res[j]);
			if (!r[1] || lens[1] != 16)
				continue;
			long k = find_id(c, r[1]);
			if (k < 0)
				continue;
			int bucket = bs__column_bucket(st, on, r[2 + idx->nprops], lens[2 + idx->nprops]);
			uint8_t state = bucket >= 0 ? c->states[j][bucket] : BS__B_NONE;
			if (state == BS__B_INCOMING || state == BS__B_GONE)
				continue;
			bs__buf_reset(&row);
			for (int p = 0; p < idx->nprops; p++) {
				if (p)
					bs__buf_puts(&row, "\x1f");
				canon_db(&row, r[2 + p], &idx->props[p]);
			}
			if ((rc = bs__buf_ok(&row)))
				goto done;
			const char *want = c->expect_text.ptr + c->expect_off[k];
			if (c->expect[k] == j && !strcmp(row.ptr, want) && !c->ok[k]) {
				c->ok[k] = true;
				continue;
			}
			out->stale++;
			if (c->expect[k] == j) {
				c->upsert[k] = true; /* wrong values on the right shard: overwrite */
				/* the row leaves another bucket it owns: fenced, and logged
				 * while that one is leaving (decided under the fence) */
				if (bucket >= 0 && bucket != c->expect_bucket[k] && bs__owns(state))
					c->overwritten[k] = bucket;
			} else if (bucket >= 0 && bs__owns(state) && owned_elsewhere(c, st, j, bucket)) {
				c->again = true; /* reads on both sides of a cut-over: again */
			} else {
				bs__buf_puts(&c->del[j], c->ndel[j] ? "," : "");
				bs__buf_hex(&c->del[j], r[1], 16);
				c->ndel[j]++;
				c->touched[k] = true;
				if (bucket >= 0 && bs__owns(state)) { /* fenced; logged while leaving */
					bs__buf_printf(&c->dbk[j], ",%d", bucket);
					pair_add(&c->dlog[j], bucket, r[1]);
				} else if (bucket >= 0) { /* fenced on the shard still holding it in no state */
					bs__buf_printf(&c->nbk[j], ",%d", bucket);
				}
			}
		}
	}
	for (size_t k = 0; k < c->n; k++) {
		if (c->expect[k] >= 0 && !c->ok[k]) {
			if (!c->upsert[k])
				out->missing++;
			c->upsert[k] = true;
		}
		c->touched[k] |= c->upsert[k];
	}
done:
	bs__buf_free(&row);
	return rc;
}

/* Before a fix inside bs__drift_fix_settle (st->fix_token set): an intent
 * for each entity whose rows it changes, on the entity's shard, under the
 * scope's token for that shard (bs__fix_name), whose named lock the shard's
 * connection takes in the same statement, which fails (SIGNAL) when it
 * cannot: a server not in strict mode would store a NULL token as ''. A
 * process killed between the fix and the read that settles it
 * leaves the intents with their lock free: the repair loop settles them,
 * and an entity deleted meanwhile has its rows removed (nothing else would
 * look at it again). */
void bs__fix_name(char out[64], const bs_store_t *st, int i)
{
	snprintf(out, 64, "%s.%d", st->fix_token, i);
}

static int fix_intents(check_t *c, bs_store_t *st)
{
	if (!st->fix_token[0])
		return 0;
	bs_buf_t *per = calloc((size_t)st->n, sizeof *per);
	int rc = 0;
	BS_ERR_ALLOC(per);
	char name[64];
	for (size_t k = 0; k < c->n && !rc; k++) {
		int shard, bucket;
		if (!c->touched[k])
			continue;
		if ((rc = bs__route_entity(&shard, &bucket, st, &c->ids[k])))
			break;
		bs_buf_t *b = &per[shard];
		bs__fix_name(name, st, shard);
		if (!b->len) {
			bs__buf_puts(b, "BEGIN NOT ATOMIC IF ");
			bs__lock_take_sql(b, name);
			bs__buf_puts(b, "=1 THEN INSERT INTO bagstore_intents (token, entity_id) VALUES (");
		} else {
			bs__buf_puts(b, ",(");
		}
		bs__buf_hex(b, name, strlen(name));
		bs__buf_puts(b, ",");
		bs__buf_hex(b, c->ids[k].b, 16);
		bs__buf_puts(b, ")");
	}
	for (int i = 0; i < st->n && !rc; i++) {
		if (!per[i].len)
			continue;
		bs__buf_puts(&per[i], " ON DUPLICATE KEY UPDATE created=created; ELSE SIGNAL SQLSTATE '45000' SET"
		                      " MESSAGE_TEXT='the named lock of a fix''s intents is held by another session';"
		                      " END IF; END");
		st->shards[i].fix_held = true; /* released at the scope's end, taken or not */
		if (!(rc = bs__buf_ok(&per[i])) && !(rc = bs__shard_check(st, i)))
			rc = bs__shard_exec(st, i, per[i].ptr, per[i].len);
	}
	for (int i = 0; i < st->n; i++)
		bs__buf_free(&per[i]);
	free(per);
	return rc;
}

/* The upserts of what is missing or wrong, per target shard, then (once
 * they are all in) the deletes, every shard at once each time. *refused: a
 * target no longer owned a bucket (nothing is deleted; the caller reads the
 * map again and checks again). */
static int fix_rows(drift_counts_t *out, bool *refused, check_t *c, bs_store_t *st, const bs_value_t *bags)
{
	const bs_index_t *idx = c->idx;
	int ns = st->n, rc;
	*refused = false;
	for (size_t k = 0; k < c->n; k++) {
		if (!c->upsert[k] || c->ok[k])
			continue;
		const bs_value_t *vals[BS_INDEX_MAX_PROPS];
		bs_value_t tmps[BS_INDEX_MAX_PROPS];
		int bucket, t = bs__index_row_route(vals, tmps, &bucket, idx, &bags[k], st, NULL);
		bs_buf_t *b = &c->ins[t];
		bs__buf_puts(b, c->nins[t] ? ",(" : "(");
		for (int p = 0; p < idx->nprops; p++) {
			bs__buf_value(b, vals[p], &idx->props[p]);
			bs__buf_puts(b, ",");
			if (vals[p] == &tmps[p])
				bs_value_clear(&tmps[p]);
		}
		bs__buf_hex(b, c->ids[k].b, 16);
		bs__buf_puts(b, ")");
		bs__buf_printf(&c->ibk[t], ",%d", bucket);
		pair_add(&c->ilog[t], bucket, c->ids[k].b);
		if (c->overwritten[k] >= 0) { /* fenced too */
			bs__buf_printf(&c->ibk[t], ",%d", c->overwritten[k]);
			pair_add(&c->olog[t], c->overwritten[k], c->ids[k].b);
		}
		c->nins[t]++;
	}
	for (int j = 0; j < ns; j++)
		if ((rc = bs__buf_ok(&c->del[j])) || (rc = bs__buf_ok(&c->ins[j])) || (rc = bs__buf_ok(&c->ilog[j])) ||
		    (rc = bs__buf_ok(&c->ibk[j])) || (rc = bs__buf_ok(&c->dlog[j])) || (rc = bs__buf_ok(&c->olog[j])) ||
		    (rc = bs__buf_ok(&c->dbk[j])) || (rc = bs__buf_ok(&c->nbk[j])))
			return rc;
	if ((rc = fix_intents(c, st)) || (rc = bs__shard_each(st, NULL, upsert_on, c, NULL)))
		return rc;
	for (int j = 0; j < ns; j++) {
		*refused |= c->refused[j];
		if (!c->refused[j]) { /* applied, whatever comes next */
			out->repaired += c->nins[j];
			out->inserted += c->nins[j];
		}
	}
	if (*refused)
		return 0;
	if ((rc = bs__shard_each(st, NULL, delete_on, c, NULL)))
		return rc;
	for (int j = 0; j < ns; j++) {
		*refused |= c->refused[j];
		if (!c->refused[j]) {
			out->repaired += c->ndel[j];
			out->deleted += c->ndel[j];
		}
	}
	return 0;
}

/* One round of a check: CHECK_AGAIN when it must run again (ownership
 * moved under it), else 0 or an error. What it found goes to *out only
 * for a round that ends; the fixes it applied, always. */
#define CHECK_AGAIN 1
/* drift_fail_after_fix fires once a process */
static atomic_bool fail_after_fix;

static int check_round(drift_counts_t *out, bs_store_t *st, const bs_index_t *idx, const bs_id_t *ids,
                       const bs_value_t *bags, size_t n, bool fix)
{
	check_t c = { .idx = idx, .ids = ids, .n = n };
	drift_counts_t d = { 0 };
	bool again = false, refused = false;
	int rc;
	if (!(rc = check_alloc(&c, n, st->n)) && !(rc = expect_rows(&d, &c, bags, st)) &&
	    !(rc = bs__shard_each(st, NULL, read_rows_on, &c, NULL)) && !(rc = check_states(&again, &c, st)) &&
	    !again && !(rc = compare_rows(&d, &c, st)) && !c.again && fix)
		rc = fix_rows(&d, &refused, &c, st, bags);
	if (!rc && d.repaired && bs_fault(BS_FAULT_DRIFT_KILL_AFTER_FIX)) {
		fprintf(stderr, "bagstore: fault drift_kill_after_fix: a fix of index %s exits here\n", idx->name);
		bs__fault_exit();
	}
	if (!rc && d.repaired && bs_fault(BS_FAULT_DRIFT_FAIL_AFTER_FIX) && !atomic_exchange(&fail_after_fix, true))
		rc = bs_error(BS_EUNREACHABLE, "fault drift_fail_after_fix: checking index %s failed after its fix",
		              idx->name);
	again |= c.again;
	check_free(&c, st->n);
	/* fixes applied count whether the round ends, runs again or fails */
	out->repaired += d.repaired;
	out->inserted += d.inserted;
	out->deleted += d.deleted;
	if (!rc && (again || refused))
		return CHECK_AGAIN;
	if (!rc) {
		out->missing += d.missing;
		out->stale += d.stale;
		out->misfit += d.misfit;
	}
	return rc;
}

int bs__drift_check(drift_counts_t *out, bs_store_t *st, const bs_index_t *idx, const bs_id_t *ids,
                    const bs_value_t *bags, size_t n, bool fix)
{
	int rc;
	if (n == 0)
		return 0;
	if ((rc = bs__map_need(st)))
		return rc;
	if (fix && bs_fault(BS_FAULT_PAUSE_DRIFT_FIX)) {
		/* test fault point: a writer may change the entities here, between
		 * the bodies this fix was computed from and the rows it reads */
		fprintf(stderr,
		        "bagstore: fault pause_drift_fix: a fix of %zu entities of index %s stopped before it "
		        "reads their rows (kill -CONT %d resumes)\n",
		        n, idx->name, (int)getpid());
		raise(SIGSTOP);
	}
	for (int round = 0; round < 8; round++) {
		/* a conflict (a deadlock or lock wait: a writer's row, a cut-over's
		 * fence; a duplicate key) is another round, as a writer retries
		 * one: the round reads the rows again, fixes committed on other
		 * shards included */
		if ((rc = check_round(out, st, idx, ids, bags, n, fix)) != CHECK_AGAIN &&
		    (rc != BS_ECONFLICT || round == 7))
			return rc;
		if (rc == BS_ECONFLICT)
			bs_error_clear();
		if ((rc = bs__map_reload(st)))
			return rc;
		if (round)
			bs__cleaner_sleep(0.01 * round, NULL);
	}
	return bs_error(BS_EUNREACHABLE, "checking index %s: buckets kept moving under the check", idx->name);
}

/* ------------------------------------------------------------ orphans */

/* Range reads only up to this many shards: every shard reads the page's
 * whole range (about one entity per row of the page each), against one
 * lookup per row in all, 0.6 us a row in range against 7.2 us a lookup:
 * even at about 12 shards. */
#define RANGE_SHARDS 8

/* The entity ids every shard holds in [lo, hi], the first cap of them by
 * id, each shard's read with its ownership version (one statement: one
 * snapshot). A range of the unique key read in order costs the server a
 * fifth of the lookups of the same ids by an IN list (measured: 1.2 ms for
 * 2,000 ids in range against 7.2 ms for 1,000 looked up). */
struct range_arg {
	const uint8_t *lo, *hi;
	size_t cap;
	idvec16_t *got; /* per shard */
	int64_t *ov;    /* per shard: -1 when no row came back */
};

static int range_on(bs_store_t *st, int i, void *p)
{
	struct range_arg *a = p;
	bs_buf_t b = { 0 };
	MYSQL_RES *res = NULL;
	int rc;
	a->got[i].n = 0;
	bs__buf_puts(&b, "SELECT id, " BS__OV_SQL " FROM entities WHERE id BETWEEN ");
	bs__buf_hex(&b, a->lo, 16);
	bs__buf_puts(&b, " AND ");
	bs__buf_hex(&b, a->hi, 16);
	bs__buf_printf(&b, " ORDER BY id LIMIT %zu", a->cap);
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_check(st, i)) ||
	    (rc = bs__shard_query(&res, st, i, b.ptr, b.len)))
		goto done;
	MYSQL_ROW row;
	while (!rc && (row = mysql_fetch_row(res))) {
		unsigned long *lens = mysql_fetch_lengths(res);
		if (!row[1] || !row[0] || lens[0] != 16)
			continue;
		a->ov[i] = strtoll(row[1], NULL, 10);
		rc = idvec16_push(&a->got[i], row[0]);
	}
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

/* seen[k] for those of ids[n] (ascending) that a shard owning their bucket
 * (owned or leaving there, in the snapshot read) holds, by one range read
 * per shard, every shard at once. What is not seen (absent, past a shard's
 * cap, on a shard that failed or whose ownership has moved on) is for
 * bs__entities_current to look up, which follows moves and reports
 * failures: a range read only ever spares lookups. */
static int present_by_range(bool *seen, bs_store_t *st, const bs_id_t *ids, size_t n)
{
	/* the range holds every entity in it, indexed or not: a sparse index's
	 * page spans many more entities than it has rows. At most 12n/N rows a
	 * shard, so that the range reads cost at most the n lookups (0.6 us a
	 * row against 7.2 us a lookup): what they leave is looked up */
	struct range_arg a = { .lo = ids[0].b, .hi = ids[n - 1].b, .cap = 12 * n / (size_t)st->n + 64 };
	int *rcs = calloc((size_t)st->n, sizeof *rcs);
	int rc = 0;
	a.got = calloc((size_t)st->n, sizeof *a.got);
	a.ov = calloc((size_t)st->n, sizeof *a.ov);
	if (!rcs || !a.got || !a.ov) {
		rc = bs__oom();
		goto done;
	}
	for (int i = 0; i < st->n; i++)
		a.ov[i] = -1; /* until its range read answers with a row */
	if (bs__shard_each(st, NULL, range_on, &a, rcs))
		bs_error_clear(); /* a shard that failed saw nothing: its ids are looked up */
	for (int i = 0; i < st->n; i++) {
		const uint8_t *states;
		bool exact;
		if (rcs[i] || a.ov[i] < 0)
			continue;
		if (bs__owned_at(&states, &exact, st, i, a.ov[i])) {
			bs_error_clear(); /* its ids are looked up, which says why if it fails */
			continue;
		}
		if (!exact)
			continue;
		for (size_t j = 0; j < a.got[i].n; j++) {
			long k = bs__ids_find(ids, n, a.got[i].ids[j]);
			if (k >= 0 && bs__owns(states[bs_route_id(&ids[k], st->map.buckets)]))
				seen[k] = true;
		}
	}
done:
	for (int i = 0; a.got && i < st->n; i++)
		free(a.got[i].ids);
	free(a.got);
	free(a.ov);
	free(rcs);
	return rc;
}

int bs__drift_orphans(int64_t *orphans, int64_t *fixed, bs_store_t *st, const bs_index_t *idx, int shard,
                      uint8_t cursor[16], size_t limit, bool fix, bool *wrapped)
{
	const bs_prop_t *on = &idx->props[idx->shard_on];
	bs_buf_t b = { 0 }, pairs = { 0 };
	MYSQL_RES *res = NULL;
	ebatch_t present = { 0 };
	bs_id_t *ids = NULL, *unseen = NULL;
	bool *seen = NULL;
	int *bk = NULL;
	size_t n = 0;
	int rc;
	*wrapped = false;
	if ((rc = bs__map_need(st)))
		return rc;
	bs__buf_puts(&b, "SELECT i.entity_id, i.");
	bs__buf_ident(&b, on->name);
	bs__buf_puts(&b, ", m.v FROM bagstore_meta m LEFT JOIN (SELECT * FROM ");
	bs__buf_ident(&b, idx->name);
	bs__buf_puts(&b, " WHERE entity_id>");
	bs__buf_hex(&b, cursor, 16);
	bs__buf_printf(&b, " ORDER BY entity_id LIMIT %zu) i ON 1 WHERE m.k='owned_version' ORDER BY i.entity_id",
	               limit);
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, shard, b.ptr, b.len)))
		goto done;
	size_t rows = (size_t)mysql_num_rows(res);
	ids = calloc(rows ? rows : 1, sizeof *ids);
	bk = calloc(rows ? rows : 1, sizeof *bk);
	if (!ids || !bk) {
		rc = bs_error(BS_ENOMEM, "out of memory sweeping orphans");
		goto done;
	}
	int64_t ov = -1;
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res))) {
		unsigned long *lens = mysql_fetch_lengths(res);
		ov = row[2] ? strtoll(row[2], NULL, 10) : -1;
		if (row[0] && lens[0] == 16) {
			memcpy(ids[n].b, row[0], 16);
			bk[n++] = bs__column_bucket(st, on, row[1], lens[1]);
		}
	}
	if (n < limit)
		*wrapped = true;
	if (!n) {
		memset(cursor, 0, 16);
		goto done;
	}
	memcpy(cursor, ids[n - 1].b, 16);
	if (*wrapped)
		memset(cursor, 0, 16);
	/* rows in buckets this shard holds only for a move are the move's */
	const uint8_t *states;
	bool exact;
	if ((rc = bs__owned_at(&states, &exact, st, shard, ov)))
		goto done;
	/* (states is the shard's cached ownership, which the reads below
	 * reload in place when the shard's version moves: what the rows' log
	 * needs is kept now, by bk[k] -1 for a bucket not leaving at ov) */
	size_t m = 0;
	for (size_t k = 0; k < n; k++)
		if (bk[k] < 0 || (states[bk[k]] != BS__B_INCOMING && states[bk[k]] != BS__B_GONE)) {
			ids[m] = ids[k];
			bk[m++] = bk[k] >= 0 && states[bk[k]] == BS__B_LEAVING ? bk[k] : -1;
		}
	n = exact ? m : 0; /* moved meanwhile: the next sweep looks again */
	/* the page's ids ascend: which are present, by a range read per shard;
	 * the others looked up one by one, on their owners */
	if (n && (!(seen = calloc(n, sizeof *seen)) || !(unseen = calloc(n, sizeof *unseen)))) {
		rc = bs__oom();
		goto done;
	}
	if (n && st->n <= RANGE_SHARDS && (rc = present_by_range(seen, st, ids, n)))
		goto done;
	size_t nu = 0;
	for (size_t k = 0; k < n; k++)
		if (!seen[k])
			unseen[nu++] = ids[k];
	if (nu && (rc = bs__entities_current(&present, st, unseen, nu, true)))
		goto done;
	bs__buf_reset(&b);
	size_t gone = 0;
	for (size_t k = 0; k < n; k++) {
		if (seen[k] || bs__ids_find(present.ids, present.len, ids[k].b) >= 0)
			continue;
		bs__buf_puts(&b, gone++ ? "," : "");
		bs__buf_hex(&b, ids[k].b, 16);
		if (bk[k] >= 0) /* leaving at ov */
			pair_add(&pairs, bk[k], ids[k].b);
	}
	*orphans += (int64_t)gone;
	if (!gone || !fix)
		goto done;
	bs_buf_t d = { 0 };
	bs__buf_puts(&d, "DELETE FROM ");
	bs__buf_ident(&d, idx->name);
	bs__buf_puts(&d, " WHERE entity_id IN (");
	bs__buf_putn(&d, b.ptr, b.len);
	bs__buf_puts(&d, ")");
	log_sql(&d, &pairs, "1");
	if (!(rc = bs__buf_ok(&d)) && !(rc = bs__buf_ok(&pairs)) && !(rc = bs__shard_check(st, shard)))
		rc = bs__shard_exec(st, shard, d.ptr, d.len);
	bs__buf_free(&d);
	if (!rc)
		*fixed += (int64_t)gone;
done:
	if (res)
		mysql_free_result(res);
	bs__ebatch_free(&present);
	free(ids);
	free(unseen);
	free(seen);
	free(bk);
	bs__buf_free(&b);
	bs__buf_free(&pairs);
	return rc;
}

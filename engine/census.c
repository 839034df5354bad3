/*
 * census.c - the property census (bs_census): what the bodies of a store
 * hold, from a sample, as MongoDB Compass's schema tab shows documents.
 *
 * Up to N bodies per shard, spread over the whole table by added_id (the
 * range MIN..MAX cut in N equal buckets, the first row of each; a table of
 * at most N ids is read whole), every shard at once. Every property path of
 * every sampled body (a.b inside maps, a[] for an array's elements) gets
 * the types its values had, in how many sampled entities it occurs, its
 * distinct values (exact in the sample, and an estimate for the store by
 * Haas and Stokes' Duj1 jackknife, bounded by the values seen and the
 * values there are: bs__distinct_estimate), its
 * largest value, an example, the indexes that hold it, and the index type
 * its values would fit.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS_PER_QUERY 100
#define DISTINCT_CAP 200000 /* values a path keeps for its distinct count */

static const char *const type_names[BS_CT_COUNT] = {
	"null", "bool", "int", "float", "string", "uuid", "binary", "array", "map",
};

const char *bs_census_type_name(bs_census_type_t t)
{
	return (unsigned)t < BS_CT_COUNT ? type_names[t] : "?";
}

static bs_census_type_t type_of(const bs_value_t *v)
{
	switch (v->type) {
	case BS_NIL: return BS_CT_NULL;
	case BS_BOOL: return BS_CT_BOOL;
	case BS_INT:
	case BS_UINT: return BS_CT_INT;
	case BS_FLOAT: return BS_CT_FLOAT;
	case BS_STR: return BS_CT_STRING;
	case BS_BIN: return v->v.s.len == 16 && !v->v.s.sub ? BS_CT_UUID : BS_CT_BINARY;
	case BS_ARRAY: return BS_CT_ARRAY;
	case BS_MAP: return BS_CT_MAP;
	}
	return BS_CT_NULL;
}

void bs_census_free(bs_census_t *c)
{
	if (!c)
		return;
	free(c->props);
	memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------------ sampling */

typedef struct {
	int64_t added_id;
	bs_value_t bag;
} sample_t;

typedef struct {
	sample_t *v;
	size_t n, cap;
	int64_t est;   /* InnoDB's row estimate of the shard's entities */
	bool complete; /* every row was read */
	bool skip;     /* not sampled: not asked for, or unreachable */
	int64_t corrupt;
	char first_bad[320];
} shard_sample_t;

struct sample_arg {
	int per_shard;
	int only;          /* -1: every shard */
	shard_sample_t *s; /* per shard */
};

static int sample_add(shard_sample_t *s, bs_store_t *st, int i, MYSQL_ROW row, const unsigned long *lens)
{
	char where[96];
	bs_value_t bag;
	int rc;

	if (!row[1] || lens[1] != 16)
		return 0;
	snprintf(where, sizeof where, "shard %s", st->shards[i].conf->name);
	if (bs__body_decode_row(&bag, row[2], lens[2], row[1], where)) {
		if (!s->corrupt++)
			snprintf(s->first_bad, sizeof s->first_bad, "%s", bs_last_error());
		bs_error_clear();
		return 0;
	}
	if ((rc = BS_ARRAY_GROW(s->v, s->n, s->cap, 256))) {
		bs_value_clear(&bag);
		return rc;
	}
	s->v[s->n].added_id = row[0] ? strtoll(row[0], NULL, 10) : 0;
	s->v[s->n++].bag = bag;
	return 0;
}

static int sample_query(shard_sample_t *s, bs_store_t *st, int i, const bs_buf_t *b)
{
	MYSQL_RES *res = NULL;
	MYSQL_ROW row;
	int rc = bs__buf_ok(b);

	if (rc || (rc = bs__shard_query(&res, st, i, b->ptr, b->len)))
		return rc;
	while (!rc && (row = mysql_fetch_row(res)))
		rc = sample_add(s, st, i, row, mysql_fetch_lengths(res));
	mysql_free_result(res);
	return rc;
}

/* The first row of each of n buckets of [lo, hi], batch by batch. */
static int sample_buckets(shard_sample_t *s, bs_store_t *st, int i, int64_t lo, int64_t hi, int n)
{
	bs_buf_t b = { 0 };
	double width = (double)(hi - lo + 1) / n;
	int rc = 0;

	for (int k = 0; k < n && !rc; k += BUCKETS_PER_QUERY) {
		bs__buf_reset(&b);
		for (int j = k; j < n && j < k + BUCKETS_PER_QUERY; j++)
			bs__buf_printf(&b,
			               "%s(SELECT added_id, id, body FROM entities WHERE added_id>=%lld"
			               " ORDER BY added_id LIMIT 1)",
			               j > k ? " UNION ALL " : "", (long long)(lo + (int64_t)(j * width)));
		rc = sample_query(s, st, i, &b);
	}
	bs__buf_free(&b);
	return rc;
}

static int by_added_id(const void *x, const void *y)
{
	const sample_t *a = x, *b = y;
	return a->added_id < b->added_id ? -1 : a->added_id > b->added_id;
}

/* Two buckets may land on one row (gaps in added_id): keep it once. */
static void sample_dedupe(shard_sample_t *s)
{
	size_t o = 0;
	if (s->n < 2)
		return;
	qsort(s->v, s->n, sizeof *s->v, by_added_id);
	for (size_t k = 0; k < s->n; k++) {
		if (o > 0 && s->v[o - 1].added_id == s->v[k].added_id) {
			bs_value_clear(&s->v[k].bag);
			continue;
		}
		s->v[o++] = s->v[k];
	}
	s->n = o;
}

static int sample_shard(bs_store_t *st, int i, void *p)
{
	struct sample_arg *a = p;
	shard_sample_t *s = &a->s[i];
	static const char q[] = "SELECT MIN(added_id), MAX(added_id), (SELECT TABLE_ROWS FROM information_schema.TABLES"
				" WHERE TABLE_SCHEMA=DATABASE() AND TABLE_NAME='entities') FROM entities";
	MYSQL_RES *res = NULL;
	bs_buf_t b = { 0 };
	int rc;

	/* a shard that belongs to another list is not read (BS_ECONFIG) */
	if ((rc = bs__shard_check(st, i)) || (rc = bs__shard_query(&res, st, i, q, sizeof q - 1)))
		return rc;
	MYSQL_ROW row = mysql_fetch_row(res);
	bool empty = !row || !row[0];
	int64_t lo = empty ? 0 : strtoll(row[0], NULL, 10), hi = empty ? -1 : strtoll(row[1], NULL, 10);
	s->est = row && row[2] ? strtoll(row[2], NULL, 10) : 0;
	mysql_free_result(res);
	if (empty) {
		s->complete = true;
		return 0;
	}
	if (hi - lo + 1 <= a->per_shard) {
		s->complete = true;
		bs__buf_printf(&b, "SELECT added_id, id, body FROM entities WHERE added_id BETWEEN %lld AND %lld",
		               (long long)lo, (long long)hi);
		rc = sample_query(s, st, i, &b);
	} else {
		rc = sample_buckets(s, st, i, lo, hi, a->per_shard);
	}
	bs__buf_free(&b);
	if (!rc)
		sample_dedupe(s);
	return rc;
}

/* ------------------------------------------------------------ paths */

typedef struct {
	uint64_t *keys; /* 0 is never a key (hashes are forced odd) */
	uint32_t *counts;
	size_t cap, len;
	bool capped;
} hset_t;

typedef struct {
	bs_census_prop_t p;
	int64_t last_entity;
	bool top;
	int64_t f1_at_end;
	hset_t seen;
} pstat_t;

typedef struct {
	pstat_t *v;
	int n, cap;
	int *slot; /* open addressing over paths: index + 1 */
	int nslot;
	int64_t entity; /* the sampled entity being walked, from 1 */
} census_t;

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t k = 0; k < n; k++) {
		h ^= c[k];
		h *= 1099511628211ull;
	}
	return h;
}

/* A value's identity for the distinct count: its type, then its bytes
 * (containers: their MessagePack). */
static uint64_t value_hash(const bs_value_t *v)
{
	uint64_t h = 14695981039346656037ull;
	bs_census_type_t t = type_of(v);
	h = fnv(h, &t, sizeof t);
	switch (v->type) {
	case BS_NIL: break;
	case BS_BOOL: h = fnv(h, &v->v.b, sizeof v->v.b); break;
	case BS_INT: h = fnv(h, &v->v.i, sizeof v->v.i); break;
	case BS_UINT: h = fnv(h, &v->v.u, sizeof v->v.u); break;
	case BS_FLOAT: h = fnv(h, &v->v.f, sizeof v->v.f); break;
	case BS_STR:
	case BS_BIN: h = fnv(h, v->v.s.ptr, v->v.s.len); break;
	default: {
		bs_bytes_t mp = { 0 };
		if (!bs_msgpack_encode(&mp, v))
			h = fnv(h, mp.ptr, mp.len);
		bs_bytes_free(&mp);
		bs_error_clear();
	}
	}
	return h | 1;
}

static int hset_add(hset_t *s, uint64_t key)
{
	if (s->capped)
		return 0;
	if ((s->len + 1) * 2 > s->cap) {
		if (s->len >= DISTINCT_CAP) {
			s->capped = true;
			return 0;
		}
		size_t cap = s->cap ? s->cap * 2 : 64;
		uint64_t *k = calloc(cap, sizeof *k);
		uint32_t *c = calloc(cap, sizeof *c);
		if (!k || !c) {
			free(k);
			free(c);
			return bs_error(BS_ENOMEM, "out of memory counting distinct values");
		}
		for (size_t j = 0; j < s->cap; j++) {
			if (!s->keys[j])
				continue;
			size_t x = (size_t)(s->keys[j] % cap);
			while (k[x])
				x = (x + 1) % cap;
			k[x] = s->keys[j];
			c[x] = s->counts[j];
		}
		free(s->keys);
		free(s->counts);
		s->keys = k;
		s->counts = c;
		s->cap = cap;
	}
	size_t x = (size_t)(key % s->cap);
	while (s->keys[x] && s->keys[x] != key)
		x = (x + 1) % s->cap;
	if (!s->keys[x]) {
		s->keys[x] = key;
		s->len++;
	}
	s->counts[x]++;
	return 0;
}

static uint64_t path_hash(const char *p)
{
	return fnv(14695981039346656037ull, p, strlen(p));
}

static int slots_grow(census_t *c)
{
	int nslot = c->nslot ? c->nslot * 2 : 256;
	int *slot = calloc((size_t)nslot, sizeof *slot);
	BS_ERR_ALLOC(slot);
	for (int k = 0; k < c->n; k++) {
		size_t x = (size_t)(path_hash(c->v[k].p.path) % (uint64_t)nslot);
		while (slot[x])
			x = (x + 1) % (size_t)nslot;
		slot[x] = k + 1;
	}
	free(c->slot);
	c->slot = slot;
	c->nslot = nslot;
	return 0;
}

/* The path's statistics, made on first sight. */
static pstat_t *path_get(census_t *c, const char *path, bool top)
{
	if ((c->n + 1) * 2 > c->nslot && slots_grow(c))
		return NULL;
	size_t x = (size_t)(path_hash(path) % (uint64_t)c->nslot);
	while (c->slot[x]) {
		pstat_t *ps = &c->v[c->slot[x] - 1];
		if (!strcmp(ps->p.path, path))
			return ps;
		x = (x + 1) % (size_t)c->nslot;
	}
	if (c->n == c->cap) {
		int cap = c->cap ? c->cap * 2 : 64;
		pstat_t *v = realloc(c->v, (size_t)cap * sizeof *v);
		if (!v) {
			bs__oom();
			return NULL;
		}
		c->v = v;
		c->cap = cap;
	}
	pstat_t *ps = &c->v[c->n];
	memset(ps, 0, sizeof *ps);
	snprintf(ps->p.path, sizeof ps->p.path, "%s", path);
	ps->top = top;
	c->slot[x] = ++c->n;
	return ps;
}

/* Characters of valid UTF-8 (continuation bytes not counted). */
static int64_t utf8_chars(const char *s, size_t n)
{
	int64_t k = 0;
	for (size_t j = 0; j < n; j++)
		k += ((unsigned char)s[j] & 0xC0) != 0x80;
	return k;
}

/* The example: the first value seen, as JSON, cut to fit on a character. */
static void example_of(char *buf, size_t size, const bs_value_t *v)
{
	char *js = NULL;
	buf[0] = 0;
	if (bs_json_encode(&js, v, 0)) {
		bs_error_clear();
		return;
	}
	size_t n = strlen(js);
	if (n >= size) {
		n = size - 4;
		while (n > 0 && ((unsigned char)js[n] & 0xC0) == 0x80)
			n--;
		snprintf(buf, size, "%.*s...", (int)n, js);
	} else {
		memcpy(buf, js, n + 1);
	}
	free(js);
}

static int record(census_t *c, const char *path, const bs_value_t *v, bool top)
{
	pstat_t *ps = path_get(c, path, top);
	if (!ps)
		return BS_ENOMEM;
	bs_census_prop_t *p = &ps->p;
	bs_census_type_t t = type_of(v);
	p->values++;
	p->types[t]++;
	if (ps->last_entity != c->entity) {
		ps->last_entity = c->entity;
		p->present++;
	}
	if (v->type == BS_STR) {
		int64_t ch = utf8_chars(v->v.s.ptr, v->v.s.len);
		if ((int64_t)v->v.s.len > p->max_bytes)
			p->max_bytes = (int64_t)v->v.s.len;
		if (ch > p->max_chars)
			p->max_chars = ch;
	} else if (v->type == BS_BIN && (int64_t)v->v.s.len > p->max_bytes) {
		p->max_bytes = (int64_t)v->v.s.len;
	} else if (v->type == BS_ARRAY && (int64_t)v->v.a.len > p->max_items) {
		p->max_items = (int64_t)v->v.a.len;
	} else if (v->type == BS_MAP && (int64_t)v->v.m.len > p->max_items) {
		p->max_items = (int64_t)v->v.m.len;
	}
	if (!p->example[0] && t != BS_CT_NULL)
		example_of(p->example, sizeof p->example, v);
	return hset_add(&ps->seen, value_hash(v));
}

/* Every path under v (at path; "" for the bag itself). */
static int walk(census_t *c, const char *path, const bs_value_t *v)
{
	char sub[BS_CENSUS_PATH_MAX];
	int rc = 0;

	if (v->type == BS_MAP) {
		for (size_t k = 0; k < v->v.m.len && !rc; k++) {
			const bs_pair_t *pr = &v->v.m.items[k];
			snprintf(sub, sizeof sub, "%s%s%.*s", path, path[0] ? "." : "", (int)pr->klen, pr->key);
			if (!(rc = record(c, sub, &pr->val, !path[0])))
				rc = walk(c, sub, &pr->val);
		}
	} else if (v->type == BS_ARRAY) {
		snprintf(sub, sizeof sub, "%s[]", path);
		for (size_t k = 0; k < v->v.a.len && !rc; k++)
			if (!(rc = record(c, sub, &v->v.a.items[k], false)))
				rc = walk(c, sub, &v->v.a.items[k]);
	}
	return rc;
}

/* ------------------------------------------------------------ results */

static bool prop_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > BS_NAME_MAX || !(s[0] == '_' || ((s[0] | 32) >= 'a' && (s[0] | 32) <= 'z')))
		return false;
	for (size_t k = 1; k < n; k++)
		if (!(s[k] == '_' || (s[k] >= '0' && s[k] <= '9') || ((s[k] | 32) >= 'a' && (s[k] | 32) <= 'z')))
			return false;
	return strcmp(s, "entity_id") != 0 && strcmp(s, "id") != 0;
}

static int64_t size_up(int64_t need, const int64_t *steps, int n)
{
	for (int k = 0; k < n; k++)
		if (need <= steps[k])
			return steps[k];
	return -1;
}

/* The index type the path's values would fit (p->suggest), or why none. */
static void suggest(bs_census_prop_t *p, bool top)
{
	static const int64_t str_steps[] = { 16, 32, 64, 128, 255, 512, 1024 };
	static const int64_t bin_steps[] = { 16, 32, 64, 128, 256, 512, 1024, 3072 };
	int64_t nonnull = p->values - p->types[BS_CT_NULL], best = 0;
	bs_census_type_t t = BS_CT_NULL;

	if (!top) {
		snprintf(p->note, sizeof p->note, "nested: indexes hold top-level properties");
		return;
	}
	if (!prop_name_ok(p->path)) {
		snprintf(p->note, sizeof p->note, "%s",
		         !strcmp(p->path, "id") ? "the entity's id" : "not a property name an index takes");
		return;
	}
	for (int k = BS_CT_BOOL; k < BS_CT_COUNT; k++)
		if (p->types[k] > best) {
			best = p->types[k];
			t = (bs_census_type_t)k;
		}
	if (t == BS_CT_INT && p->types[BS_CT_FLOAT]) /* ints widen to float */
		t = BS_CT_FLOAT, best = p->types[BS_CT_INT] + p->types[BS_CT_FLOAT];
	p->fits = best;
	switch (t) {
	case BS_CT_BOOL: snprintf(p->suggest, sizeof p->suggest, "bool"); break;
	case BS_CT_INT: snprintf(p->suggest, sizeof p->suggest, "int"); break;
	case BS_CT_FLOAT: snprintf(p->suggest, sizeof p->suggest, "float"); break;
	case BS_CT_UUID: snprintf(p->suggest, sizeof p->suggest, "uuid"); break;
	case BS_CT_STRING: {
		int64_t n = size_up(p->max_chars, str_steps, 7);
		if (n < 0)
			snprintf(p->note, sizeof p->note, "strings of up to %lld characters: longer than string(1024)",
			         (long long)p->max_chars);
		else
			snprintf(p->suggest, sizeof p->suggest, "string(%lld)", (long long)n);
		break;
	}
	case BS_CT_BINARY: {
		int64_t n = size_up(p->max_bytes, bin_steps, 8);
		if (n < 0)
			snprintf(p->note, sizeof p->note, "values of up to %lld bytes: longer than binary(3072)",
			         (long long)p->max_bytes);
		else
			snprintf(p->suggest, sizeof p->suggest, "binary(%lld)", (long long)n);
		break;
	}
	default:
		snprintf(p->note, sizeof p->note, "%s values: an index holds scalars",
		         nonnull ? bs_census_type_name(t) : "only null");
		p->fits = 0;
		return;
	}
	if (best < nonnull)
		snprintf(p->note, sizeof p->note, "%lld of %lld values would not fit (no index row)",
		         (long long)(nonnull - best), (long long)nonnull);
}

static void covering(bs_census_prop_t *p, const bs_index_list_t *cat)
{
	size_t o = 0;
	for (int k = 0; k < cat->len; k++) {
		const bs_index_t *ix = &cat->items[k];
		if (ix->state == BS_INDEX_DISABLED)
			continue;
		for (int j = 0; j < ix->nprops; j++)
			if (!strcmp(ix->props[j].name, p->path) && o + strlen(ix->name) + 2 < sizeof p->indexes)
				o += (size_t)snprintf(p->indexes + o, sizeof p->indexes - o, "%s%s", o ? "," : "",
				                      ix->name);
	}
}

double bs__distinct_estimate(const uint32_t *counts, size_t ncounts, double N)
{
	double n = 0, d = 0, n2 = 0, d2 = 0, f1 = 0, big = 0, N2, est;

	for (size_t k = 0; k < ncounts; k++) {
		if (!counts[k])
			continue;
		n += counts[k];
		d++;
		if (counts[k] > BS__DISTINCT_STABLE) {
			big++;
			continue;
		}
		n2 += counts[k];
		d2++;
		f1 += counts[k] == 1;
	}
	if (d == 0)
		return 0;
	if (N < n)
		N = n;
	N2 = N * n2 / n; /* the values of the others, by their share */
	/* Duj1 over the others: d2 / (1 - (1 - n2/N2) f1/n2); its denominator
	 * is at least n2/N2 */
	est = big + (n2 > 0 ? n2 * d2 / ((n2 - f1) + f1 * n2 / N2) : 0);
	if (!(est >= d))
		est = d;
	if (est > N)
		est = N;
	return est;
}

/* The store's distinct values at the path (bs__distinct_estimate), N the
 * values the store holds there by the sample's share of the estimated
 * entities. (GEE, sqrt(N/n) f1 + the rest, was 8 times low for a title
 * nearly unique: it is the geometric mean of d and (N/n) f1.) */
static void distinct(bs_census_prop_t *p, const hset_t *s, double scale, bool complete)
{
	p->distinct = (int64_t)s->len;
	p->distinct_capped = s->capped;
	if (complete || scale <= 1)
		p->distinct_est = (double)s->len;
	else
		p->distinct_est = bs__distinct_estimate(s->counts, s->cap, (double)p->values * scale);
}

static int by_path(const void *x, const void *y)
{
	return strcmp(((const bs_census_prop_t *)x)->path, ((const bs_census_prop_t *)y)->path);
}

static int results(bs_census_t *out, census_t *c, const bs_index_list_t *cat)
{
	double scale = out->sampled > 0 && out->entities_est > out->sampled
	                       ? (double)out->entities_est / (double)out->sampled
	                       : 1;
	if (c->n && !(out->props = calloc((size_t)c->n, sizeof *out->props)))
		return bs__oom();
	for (int k = 0; k < c->n; k++) {
		pstat_t *ps = &c->v[k];
		distinct(&ps->p, &ps->seen, scale, out->complete);
		covering(&ps->p, cat);
		suggest(&ps->p, ps->top);
		out->props[out->nprops++] = ps->p;
	}
	if (out->nprops > 1)
		qsort(out->props, (size_t)out->nprops, sizeof *out->props, by_path);
	return 0;
}

static void census_clear(census_t *c)
{
	for (int k = 0; k < c->n; k++) {
		free(c->v[k].seen.keys);
		free(c->v[k].seen.counts);
	}
	free(c->v);
	free(c->slot);
}

/* The shards' samples into the census; the sample's totals into out. */
static int tally(bs_census_t *out, census_t *c, shard_sample_t *s, bs_store_t *st)
{
	int rc = 0;
	out->complete = true;
	for (int i = 0; i < st->n; i++) {
		if (s[i].skip)
			continue;
		out->shards_sampled++;
		out->entities_est += s[i].est > (int64_t)s[i].n ? s[i].est : (int64_t)s[i].n;
		out->complete &= s[i].complete;
		if (s[i].corrupt && !out->corrupt)
			snprintf(out->corrupt_first, sizeof out->corrupt_first, "%s", s[i].first_bad);
		out->corrupt += s[i].corrupt;
		for (size_t k = 0; k < s[i].n && !rc; k++) {
			c->entity++;
			out->sampled++;
			rc = walk(c, "", &s[i].v[k].bag);
		}
	}
	/* a shard left out (unreachable) holds entities nobody read */
	if (out->shards_unreachable)
		out->complete = false;
	if (out->complete)
		out->entities_est = out->sampled;
	return rc;
}

/* Every selected shard's sample; a shard that does not answer is left
 * out and counted, unless none answers. */
static int sample_all(bs_census_t *out, bs_store_t *st, struct sample_arg *a)
{
	/* a failure's message is its shard's, as it is */
	static const bs__up_msgs_t m = { NULL, NULL, false };
	bool *which = calloc((size_t)st->n, sizeof *which);
	int *rcs = calloc((size_t)st->n, sizeof *rcs);
	bs__up_t up = { 0 };
	int rc = 0;

	if (!which || !rcs) {
		rc = bs__oom();
		goto done;
	}
	for (int i = 0; i < st->n; i++)
		which[i] = a->only < 0 || a->only == i;
	rc = bs__shard_each_up(&up, rcs, st, which, sample_shard, a, &m);
	out->shards_unreachable = up.down;
	snprintf(out->unreachable_first, sizeof out->unreachable_first, "%s", up.down_first);
	for (int i = 0; i < st->n; i++)
		if (!which[i] || rcs[i] == BS_EUNREACHABLE)
			a->s[i].skip = true;
done:
	free(which);
	free(rcs);
	return rc;
}

int bs_census(bs_census_t *out, bs_store_t *st, int per_shard, int shard)
{
	struct sample_arg a = { per_shard > 0 ? per_shard : 1000, shard, NULL };
	bs_index_list_t cat = { 0 };
	census_t c = { 0 };
	int rc;

	memset(out, 0, sizeof *out);
	if (shard < -1 || shard >= st->n)
		return bs_error(BS_EINVAL, "no shard number %d (the store has %d)", shard, st->n);
	if (!(a.s = calloc((size_t)st->n, sizeof *a.s)))
		return bs__oom();
	if ((rc = bs_index_list(&cat, st)) || (rc = sample_all(out, st, &a)))
		goto done;
	out->per_shard = a.per_shard;
	if (!(rc = tally(out, &c, a.s, st)))
		rc = results(out, &c, &cat);
done:
	for (int i = 0; i < st->n; i++) {
		for (size_t k = 0; k < a.s[i].n; k++)
			bs_value_clear(&a.s[i].v[k].bag);
		free(a.s[i].v);
	}
	free(a.s);
	census_clear(&c);
	bs_index_list_free(&cat);
	if (rc)
		bs_census_free(out);
	return rc;
}

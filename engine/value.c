/*
 * value.c - bs_value_t: constructors, containers, copy, equality, clear;
 * plus the small private helpers the codecs share (UTF-8 check, message
 * quoting, float text, the duplicate-key index for decoders).
 */
#include "codec_internal.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

char *bs__memdup0(const void *p, size_t n)
{
	char *s;

	if (n == SIZE_MAX)
		return NULL;
	s = malloc(n + 1);
	if (!s)
		return NULL;
	if (n)
		memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

bool bs__utf8_valid(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < n) {
		unsigned c = s[i];
		size_t need;
		uint32_t cp, min;

		if (c < 0x80) {
			/* ASCII runs eight bytes at a time */
			uint64_t w;

			i++;
			while (n - i >= 8 && (memcpy(&w, s + i, 8), (w & 0x8080808080808080ull) == 0))
				i += 8;
			continue;
		}
		if ((c & 0xe0) == 0xc0) {
			need = 1;
			cp = c & 0x1f;
			min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			need = 2;
			cp = c & 0x0f;
			min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			need = 3;
			cp = c & 0x07;
			min = 0x10000;
		} else {
			return false;
		}
		if (n - i - 1 < need)
			return false;
		for (size_t k = 1; k <= need; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += need + 1;
	}
	return true;
}

char *bs__quote(char *buf, size_t size, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	if (size == 0)
		return buf;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char tmp[5];
		size_t tl = 0;

		if (c == '"' || c == '\\') {
			tmp[tl++] = '\\';
			tmp[tl++] = (char)c;
		} else if (c == '\n') {
			tmp[tl++] = '\\';
			tmp[tl++] = 'n';
		} else if (c == '\t') {
			tmp[tl++] = '\\';
			tmp[tl++] = 't';
		} else if (c < 0x20 || c == 0x7f) {
			tmp[tl++] = '\\';
			tmp[tl++] = 'x';
			tmp[tl++] = hex[c >> 4];
			tmp[tl++] = hex[c & 15];
		} else {
			tmp[tl++] = (char)c;
		}
		if (o + tl + 4 > size) { /* keep room for "..." and NUL */
			if (o + 4 <= size) {
				memcpy(buf + o, "...", 3);
				o += 3;
			}
			break;
		}
		memcpy(buf + o, tmp, tl);
		o += tl;
	}
	buf[o < size ? o : size - 1] = '\0';
	return buf;
}

const char *bs__type_name(bs_type_t t)
{
	switch (t) {
	case BS_NIL: return "nil";
	case BS_BOOL: return "bool";
	case BS_INT: return "int";
	case BS_UINT: return "uint";
	case BS_FLOAT: return "float";
	case BS_STR: return "string";
	case BS_BIN: return "bytes";
	case BS_ARRAY: return "array";
	case BS_MAP: return "map";
	}
	return "unknown";
}

/* ------------------------------------------------------------ numbers */

static locale_t c_loc;
static pthread_once_t c_loc_once = PTHREAD_ONCE_INIT;

static void c_loc_make(void)
{
	c_loc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

locale_t bs__c_locale(void)
{
	pthread_once(&c_loc_once, c_loc_make);
	return c_loc;
}

double bs__strtod_c(const char *s, char **end)
{
	locale_t l = bs__c_locale();

	return l ? strtod_l(s, end, l) : strtod(s, end);
}

char *bs__uint_text(char *end, unsigned long long v)
{
	do
		*--end = (char)('0' + v % 10);
	while ((v /= 10));
	return end;
}

int bs__float_short(char buf[40], double d)
{
	static const double pow10[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15 };
	double a = fabs(d), m = 0;
	int k;

#if FLT_EVAL_METHOD != 0
	return 0; /* the reasoning below wants doubles computed as doubles */
#endif
	if (!(a >= 1e-4 && a < 1e15))
		return 0;
	for (k = 0; k < 16; k++) {
		m = a * pow10[k];
		if (m >= 1e15)
			return 0;
		if (m == (double)(int64_t)m && m / pow10[k] == a)
			break;
	}
	if (k == 16)
		return 0;
	/* a is the double nearest m / 10^k, m under 15 digits: "%.15g" rounds
	 * a to m's digits, and reads back as a */
	uint64_t u = (uint64_t)m;
	while (k > 0 && u % 10 == 0)
		u /= 10, k--;
	char digits[20], *e = digits + sizeof digits, *q = bs__uint_text(e, u);
	int nd = (int)(e - q), n = 0;
	if (d < 0)
		buf[n++] = '-';
	if (k == 0) {
		memcpy(buf + n, q, (size_t)nd);
		n += nd;
	} else if (nd > k) {
		memcpy(buf + n, q, (size_t)(nd - k));
		n += nd - k;
		buf[n++] = '.';
		memcpy(buf + n, q + nd - k, (size_t)k);
		n += k;
	} else {
		buf[n++] = '0';
		buf[n++] = '.';
		memset(buf + n, '0', (size_t)(k - nd));
		n += k - nd;
		memcpy(buf + n, q, (size_t)nd);
		n += nd;
	}
	buf[n] = '\0';
	return n;
}

int bs__float_format(char buf[40], double d)
{
	locale_t l, old;
	int p;

	if (bs__float_short(buf, d))
		return 15;
	l = bs__c_locale();
	old = l ? uselocale(l) : (locale_t)0;

	for (p = 15; p < 17; p++) {
		snprintf(buf, 40, "%.*g", p, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	if (p == 17)
		snprintf(buf, 40, "%.17g", d);
	if (old)
		uselocale(old);
	return p;
}

int bs_float_text(char buf[40], double d)
{
	return bs__float_format(buf, d);
}

/* ------------------------------------------------------------ keyset */

#define KEYSET_MIN_ITEMS 8

static uint64_t key_hash(const char *k, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)k[i];
		h *= 0x100000001b3ull;
	}
	return h ^ (h >> 29);
}

void bs__keyset_free(bs__keyset_t *ks)
{
	free(ks->slots);
	ks->slots = NULL;
	ks->mask = 0;
}

static bool pair_key_is(const bs_pair_t *p, const char *key, size_t klen)
{
	return p->klen == klen && memcmp(p->key, key, klen) == 0;
}

/* Put item idx of map into the table (no duplicate check). */
static void keyset_put(bs__keyset_t *ks, const bs_value_t *map, size_t idx)
{
	const bs_pair_t *p = &map->v.m.items[idx];
	size_t s = (size_t)key_hash(p->key, p->klen) & ks->mask;

	while (ks->slots[s])
		s = (s + 1) & ks->mask;
	ks->slots[s] = (uint32_t)(idx + 1);
}

/* Grow the table to hold at least n keys at load <= 1/2, rehashing. */
static int keyset_grow(bs__keyset_t *ks, const bs_value_t *map, size_t n)
{
	size_t size = 16;

	if (n > UINT32_MAX - 1)
		return bs_error(BS_ENOMEM, "map too large");
	while (size < n * 2)
		size *= 2;
	free(ks->slots);
	ks->slots = calloc(size, sizeof *ks->slots);
	if (!ks->slots) {
		ks->mask = 0;
		return bs__oom();
	}
	ks->mask = size - 1;
	for (size_t i = 0; i < map->v.m.len; i++)
		keyset_put(ks, map, i);
	return 0;
}

static bool keyset_has(const bs__keyset_t *ks, const bs_value_t *map, const char *key, size_t klen)
{
	if (!ks->slots) {
		for (size_t i = 0; i < map->v.m.len; i++)
			if (pair_key_is(&map->v.m.items[i], key, klen))
				return true;
		return false;
	}
	for (size_t s = (size_t)key_hash(key, klen) & ks->mask; ks->slots[s]; s = (s + 1) & ks->mask)
		if (pair_key_is(&map->v.m.items[ks->slots[s] - 1], key, klen))
			return true;
	return false;
}

int bs__value_map_reserve(bs_value_t *map, size_t n)
{
	bs_pair_t *items;

	if (n <= map->v.m.cap)
		return 0;
	if (n > SIZE_MAX / sizeof *items)
		return bs_error(BS_ENOMEM, "map too large");
	items = realloc(map->v.m.items, n * sizeof *items);
	BS_ERR_ALLOC(items);
	map->v.m.items = items;
	map->v.m.cap = n;
	return 0;
}

int bs__map_append_unique(bs_value_t *map, bs__keyset_t *ks, char *key, size_t klen, bs_value_t *val)
{
	size_t n = map->v.m.len;
	bs_pair_t *p;
	int rc;

	if (keyset_has(ks, map, key, klen))
		return 1;
	if (n == map->v.m.cap && (rc = bs__value_map_reserve(map, n ? n * 2 : 4)) < 0)
		return rc;
	if (n + 1 > KEYSET_MIN_ITEMS) {
		size_t slots = ks->slots ? ks->mask + 1 : 0;

		if ((n + 1) * 2 > slots && (rc = keyset_grow(ks, map, (n + 1) * 2)) < 0)
			return rc;
	}
	p = &map->v.m.items[n];
	p->key = key;
	p->klen = klen;
	p->val = *val;
	bs_value_nil(val);
	map->v.m.len = n + 1;
	if (ks->slots)
		keyset_put(ks, map, n);
	return 0;
}

/* ------------------------------------------------------------ values */

void bs_value_nil(bs_value_t *out)
{
	memset(out, 0, sizeof *out);
	out->type = BS_NIL;
}

void bs_value_bool(bs_value_t *out, bool b)
{
	bs_value_nil(out);
	out->type = BS_BOOL;
	out->v.b = b;
}

void bs_value_int(bs_value_t *out, int64_t i)
{
	bs_value_nil(out);
	out->type = BS_INT;
	out->v.i = i;
}

void bs_value_float(bs_value_t *out, double f)
{
	bs_value_nil(out);
	out->type = BS_FLOAT;
	out->v.f = f;
}

static int value_bytes(bs_value_t *out, bs_type_t type, const void *p, size_t len)
{
	char *s;

	bs_value_nil(out);
	if (len && !p)
		return bs_error(BS_EINVAL, "NULL pointer with length %zu", len);
	s = bs__memdup0(p, len);
	if (!s)
		return bs_error(BS_ENOMEM, "out of memory (%zu bytes)", len);
	out->type = type;
	out->v.s.ptr = s;
	out->v.s.len = len;
	return 0;
}

int bs_value_str(bs_value_t *out, const char *s, size_t len)
{
	return value_bytes(out, BS_STR, s, len);
}

int bs_value_bin(bs_value_t *out, const void *p, size_t len)
{
	return value_bytes(out, BS_BIN, p, len);
}


void bs_value_array(bs_value_t *out)
{
	bs_value_nil(out);
	out->type = BS_ARRAY;
}

void bs_value_map(bs_value_t *out)
{
	bs_value_nil(out);
	out->type = BS_MAP;
}

int bs_array_push(bs_value_t *arr, bs_value_t *item)
{
	if (!arr || arr->type != BS_ARRAY || !item)
		return bs_error(BS_EINVAL, "bs_array_push: not an array");
	int rc = BS_ARRAY_GROW(arr->v.a.items, arr->v.a.len, arr->v.a.cap, 4);
	if (rc)
		return rc;
	arr->v.a.items[arr->v.a.len++] = *item;
	bs_value_nil(item);
	return 0;
}

int bs_map_set(bs_value_t *map, const char *key, size_t klen, bs_value_t *val)
{
	bs_pair_t *p;
	char *k;
	int rc;

	if (!map || map->type != BS_MAP || !val || (klen && !key))
		return bs_error(BS_EINVAL, "bs_map_set: not a map");
	for (size_t i = 0; i < map->v.m.len; i++) {
		p = &map->v.m.items[i];
		if (pair_key_is(p, key, klen)) {
			bs_value_clear(&p->val);
			p->val = *val;
			bs_value_nil(val);
			return 0;
		}
	}
	if (map->v.m.len == map->v.m.cap && (rc = bs__value_map_reserve(map, map->v.m.cap ? map->v.m.cap * 2 : 4)) < 0)
		return rc;
	if (!(k = bs__memdup0(key, klen)))
		return bs__oom();
	p = &map->v.m.items[map->v.m.len++];
	p->key = k;
	p->klen = klen;
	p->val = *val;
	bs_value_nil(val);
	return 0;
}

const bs_value_t *bs_map_get(const bs_value_t *map, const char *key)
{
	size_t klen;

	if (!map || map->type != BS_MAP || !key)
		return NULL;
	klen = strlen(key);
	for (size_t i = 0; i < map->v.m.len; i++)
		if (pair_key_is(&map->v.m.items[i], key, klen))
			return &map->v.m.items[i].val;
	return NULL;
}

int bs_value_copy(bs_value_t *out, const bs_value_t *src)
{
	int rc = 0;

	bs_value_nil(out);
	switch (src->type) {
	case BS_NIL:
	case BS_BOOL:
	case BS_INT:
	case BS_UINT:
	case BS_FLOAT: *out = *src; break;
	case BS_STR:
	case BS_BIN:
		if (!(rc = value_bytes(out, src->type, src->v.s.ptr, src->v.s.len)))
			out->v.s.sub = src->v.s.sub;
		break;
	case BS_ARRAY:
		out->type = BS_ARRAY;
		if (src->v.a.len == 0)
			break;
		out->v.a.items = calloc(src->v.a.len, sizeof *out->v.a.items);
		if (!out->v.a.items) {
			rc = bs__oom();
			goto done;
		}
		out->v.a.cap = src->v.a.len;
		for (size_t i = 0; i < src->v.a.len; i++) {
			if ((rc = bs_value_copy(&out->v.a.items[i], &src->v.a.items[i])) < 0)
				goto done;
			out->v.a.len++;
		}
		break;
	case BS_MAP:
		out->type = BS_MAP;
		if (src->v.m.len == 0)
			break;
		if ((rc = bs__value_map_reserve(out, src->v.m.len)) < 0)
			goto done;
		for (size_t i = 0; i < src->v.m.len; i++) {
			const bs_pair_t *sp = &src->v.m.items[i];
			bs_pair_t *dp = &out->v.m.items[i];

			if (!(dp->key = bs__memdup0(sp->key, sp->klen))) {
				rc = bs__oom();
				goto done;
			}
			dp->klen = sp->klen;
			if ((rc = bs_value_copy(&dp->val, &sp->val)) < 0) {
				free(dp->key);
				goto done;
			}
			out->v.m.len++;
		}
		break;
	default: rc = bs_error(BS_EINVAL, "bs_value_copy: bad value type %d", (int)src->type);
	}
done:
	if (rc < 0)
		bs_value_clear(out);
	return rc;
}

static bool float_equal(double a, double b)
{
	if (isnan(a) && isnan(b))
		return true;
	return memcmp(&a, &b, sizeof a) == 0;
}

bool bs_value_equal(const bs_value_t *a, const bs_value_t *b)
{
	if (a == b)
		return true;
	if (!a || !b || a->type != b->type)
		return false;
	switch (a->type) {
	case BS_NIL: return true;
	case BS_BOOL: return a->v.b == b->v.b;
	case BS_INT: return a->v.i == b->v.i;
	case BS_UINT: return a->v.u == b->v.u;
	case BS_FLOAT: return float_equal(a->v.f, b->v.f);
	case BS_STR:
	case BS_BIN:
		return a->v.s.len == b->v.s.len && (a->type == BS_STR || a->v.s.sub == b->v.s.sub) &&
		       (a->v.s.len == 0 || memcmp(a->v.s.ptr, b->v.s.ptr, a->v.s.len) == 0);
	case BS_ARRAY:
		if (a->v.a.len != b->v.a.len)
			return false;
		for (size_t i = 0; i < a->v.a.len; i++)
			if (!bs_value_equal(&a->v.a.items[i], &b->v.a.items[i]))
				return false;
		return true;
	case BS_MAP:
		/* Same keys with equal values, in any order; the common case
		 * (same order) stays linear. */
		if (a->v.m.len != b->v.m.len)
			return false;
		for (size_t i = 0; i < a->v.m.len; i++) {
			const bs_pair_t *pa = &a->v.m.items[i], *pb = &b->v.m.items[i];

			if (!pair_key_is(pb, pa->key, pa->klen)) {
				pb = NULL;
				for (size_t j = 0; j < b->v.m.len; j++) {
					if (pair_key_is(&b->v.m.items[j], pa->key, pa->klen)) {
						pb = &b->v.m.items[j];
						break;
					}
				}
				if (!pb)
					return false;
			}
			if (!bs_value_equal(&pa->val, &pb->val))
				return false;
		}
		return true;
	}
	return false;
}

void bs_value_clear(bs_value_t *v)
{
	if (!v)
		return;
	switch (v->type) {
	case BS_STR:
	case BS_BIN: free(v->v.s.ptr); break;
	case BS_ARRAY:
		for (size_t i = 0; i < v->v.a.len; i++)
			bs_value_clear(&v->v.a.items[i]);
		free(v->v.a.items);
		break;
	case BS_MAP:
		for (size_t i = 0; i < v->v.m.len; i++) {
			free(v->v.m.items[i].key);
			bs_value_clear(&v->v.m.items[i].val);
		}
		free(v->v.m.items);
		break;
	default: break;
	}
	bs_value_nil(v);
}

int bs__value_signed(bs_value_t *out, bool neg, uint64_t u)
{
	if (neg) {
		if (u > (uint64_t)INT64_MAX + 1)
			return -1;
		bs_value_int(out, u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u);
	} else if (u > INT64_MAX) {
		bs_value_nil(out);
		out->type = BS_UINT;
		out->v.u = u;
	} else {
		bs_value_int(out, (int64_t)u);
	}
	return 0;
}

/*
 * route.c - which shard holds what, and which values an index can hold.
 *
 * An entity lives on shard id mod N (the 16 id bytes as one big-endian
 * integer). An index row lives on the shard of its shard_on value: 16-byte
 * values and integers by the same modulo, strings and other bytes by
 * zlib's crc32 of their bytes. Floats route by the crc32 of their 8 IEEE
 * bytes, big-endian; bools as the integers 0 and 1. Negative integers
 * route by their mathematical (non-negative) residue.
 */
#include "internal.h"
#include "codec_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* The bytes as one big-endian integer, mod n (n >= 1): 32 bits a step, as
 * r < n < 2^31 leaves room for them in 64 (a division a byte was a fifth
 * of a backfill's client time). */
static int mod_bytes(const uint8_t *p, size_t len, int n)
{
	uint64_t r = 0, m = (uint64_t)n;
	size_t i = 0;
	for (; i < len % 4; i++)
		r = ((r << 8) | p[i]) % m;
	for (; i < len; i += 4)
		r = ((r << 32) |
		     ((uint64_t)p[i] << 24 | (uint64_t)p[i + 1] << 16 | (uint64_t)p[i + 2] << 8 | p[i + 3])) %
		    m;
	return (int)r;
}

int bs_route_id(const bs_id_t *id, int n)
{
	return mod_bytes(id->b, 16, n);
}

static int crc_mod(const void *p, size_t len, int n)
{
	return (int)(crc32(0L, p, (uInt)len) % (uLong)n);
}

int bs_route_value(const bs_value_t *v, const bs_prop_t *prop, int n)
{
	switch (v->type) {
	case BS_BIN:
		if (v->v.s.len == 16)
			return mod_bytes((const uint8_t *)v->v.s.ptr, 16, n);
		return crc_mod(v->v.s.ptr, v->v.s.len, n);
	case BS_STR: return crc_mod(v->v.s.ptr, v->v.s.len, n);
	case BS_INT: {
		int64_t r = v->v.i % n;
		return (int)(r < 0 ? r + n : r);
	}
	case BS_UINT: return (int)(v->v.u % (uint64_t)n);
	case BS_BOOL: return (int)(v->v.b ? 1 % n : 0);
	case BS_FLOAT: {
		uint64_t bits;
		uint8_t be[8];
		memcpy(&bits, &v->v.f, 8);
		for (int i = 0; i < 8; i++)
			be[i] = (uint8_t)(bits >> (56 - 8 * i));
		return crc_mod(be, 8, n);
	}
	default: (void)prop; return -1;
	}
}

/* Code points in valid UTF-8, or -1 when invalid (overlongs, surrogates,
 * beyond U+10FFFF and NUL included, which MySQL would refuse or mangle). */
static long utf8_chars(const unsigned char *s, size_t len)
{
	long count = 0;
	size_t i = 0;
	while (i < len) {
		unsigned c = s[i];
		size_t need;
		unsigned cp;
		if (c == 0)
			return -1;
		if (c < 0x80) {
			i++;
			count++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			need = 1;
			cp = c & 0x1f;
		} else if ((c & 0xf0) == 0xe0) {
			need = 2;
			cp = c & 0x0f;
		} else if ((c & 0xf8) == 0xf0) {
			need = 3;
			cp = c & 0x07;
		} else {
			return -1;
		}
		for (size_t k = 1; k <= need; k++) {
			if (i + k >= len || (s[i + k] & 0xc0) != 0x80)
				return -1;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((need == 1 && cp < 0x80) || (need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return -1;
		i += need + 1;
		count++;
	}
	return count;
}

bool bs_value_fits(const bs_value_t *v, const bs_prop_t *prop)
{
	switch (prop->type) {
	case BS_COL_UUID: return v->type == BS_BIN && v->v.s.len == 16 && !v->v.s.sub;
	case BS_COL_BINARY: return v->type == BS_BIN && v->v.s.len <= prop->len;
	case BS_COL_STRING: {
		if (v->type != BS_STR)
			return false;
		long chars = utf8_chars((const unsigned char *)v->v.s.ptr, v->v.s.len);
		return chars >= 0 && (unsigned long)chars <= (prop->len ? prop->len : 255);
	}
	case BS_COL_INT: return v->type == BS_INT;
	case BS_COL_FLOAT: return (v->type == BS_FLOAT && isfinite(v->v.f)) || v->type == BS_INT;
	case BS_COL_BOOL: return v->type == BS_BOOL;
	}
	return false;
}

int bs__index_prop_value(const bs_value_t **out, bs_value_t *tmp, const bs_value_t *bag, const bs_prop_t *prop)
{
	const bs_value_t *v = bs_map_get(bag, prop->name);
	*out = NULL;
	if (!v)
		return 0;
	if (!bs_value_fits(v, prop))
		return -1;
	if (prop->type == BS_COL_FLOAT && v->type == BS_INT) {
		bs_value_float(tmp, (double)v->v.i);
		*out = tmp;
	} else {
		*out = v;
	}
	return 1;
}

int bs__index_row_for(const bs_value_t **vals, bs_value_t *tmps, const bs_index_t *idx, const bs_value_t *bag,
                      int nshards, bool *misfit)
{
	bool bad = false, absent = false;
	for (int k = 0; k < idx->nprops; k++) {
		int r = bs__index_prop_value(&vals[k], &tmps[k], bag, &idx->props[k]);
		if (r < 0)
			bad = true;
		else if (r == 0)
			absent = true;
	}
	if (misfit)
		*misfit = bad;
	if (bad || absent)
		return -1;
	return bs_route_value(vals[idx->shard_on], &idx->props[idx->shard_on], nshards);
}

int bs_value_from_text(bs_value_t *out, const bs_prop_t *prop, const char *text)
{
	char *end;
	bs_value_nil(out);
	switch (prop->type) {
	case BS_COL_UUID: {
		bs_id_t id;
		if (bs_id_parse(&id, text))
			return bs_error(BS_EINVAL, "%s: \"%s\" is not a uuid (32 hex digits or the dashed form)",
			                prop->name, text);
		return bs_value_bin(out, id.b, 16);
	}
	case BS_COL_STRING: bs_value_str(out, text, strlen(text)); break;
	case BS_COL_INT: {
		errno = 0;
		long long x = strtoll(text, &end, 10);
		if (!*text || *end || errno)
			return bs_error(BS_EINVAL, "%s: \"%s\" is not an integer", prop->name, text);
		bs_value_int(out, x);
		break;
	}
	case BS_COL_FLOAT: {
		errno = 0;
		double x = bs__strtod_c(text, &end);
		if (!*text || *end || errno || !isfinite(x))
			return bs_error(BS_EINVAL, "%s: \"%s\" is not a finite number", prop->name, text);
		bs_value_float(out, x);
		break;
	}
	case BS_COL_BOOL:
		if (!strcmp(text, "true") || !strcmp(text, "1"))
			bs_value_bool(out, true);
		else if (!strcmp(text, "false") || !strcmp(text, "0"))
			bs_value_bool(out, false);
		else
			return bs_error(BS_EINVAL, "%s: \"%s\" is not a bool (true, false, 1, 0)", prop->name, text);
		break;
	case BS_COL_BINARY: {
		/* hex digits, optionally 0x-prefixed */
		const char *h = text;
		if (h[0] == '0' && (h[1] == 'x' || h[1] == 'X'))
			h += 2;
		size_t n = strlen(h);
		if (n % 2)
			return bs_error(BS_EINVAL, "%s: \"%s\" is not hex bytes", prop->name, text);
		uint8_t *bytes = malloc(n / 2 + 1);
		BS_ERR_ALLOC(bytes);
		for (size_t i = 0; i < n / 2; i++) {
			int hi = bs__hexval(h[2 * i]), lo = bs__hexval(h[2 * i + 1]);
			if (hi < 0 || lo < 0) {
				free(bytes);
				return bs_error(BS_EINVAL, "%s: \"%s\" is not hex bytes", prop->name, text);
			}
			bytes[i] = (uint8_t)(hi << 4 | lo);
		}
		int rc = bs_value_bin(out, bytes, n / 2);
		free(bytes);
		if (rc)
			return rc;
		break;
	}
	}
	if (!bs_value_fits(out, prop)) {
		bs_value_clear(out);
		return bs_error(BS_EINVAL, "%s: \"%s\" does not fit the index's type %s", prop->name, text,
		                bs_coltype_name(prop->type));
	}
	return 0;
}

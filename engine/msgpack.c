/*
 * msgpack.c - bs_value_t <-> MessagePack (bs_msgpack_*).
 *
 * Encoding uses msgpack-c's packer. Decoding reads the bytes directly:
 * bodies are untrusted, and msgpack-c's unpacker sizes element arrays from
 * the declared count before reading them. This decoder checks every count
 * against the bytes left (each element takes at least one byte), so what it
 * allocates is bounded by the input's length; it also bounds nesting to
 * BS_BODY_MAX_DEPTH, the values to BS_BODY_MAX_ITEMS and the memory they
 * take to BS_BODY_MAX_DECODED (a 16 KB body can declare 16 million one-byte
 * items, each a bs_value_t), and rejects trailing bytes, ext types but
 * its own, non-string keys, duplicate keys and strings that are not UTF-8.
 *
 * A binary of subtype 0 is MessagePack's bin; one of another subtype (an
 * Extended JSON "subType", 1 to 255) is ext type BS__EXT_BINARY (0): the
 * subtype's byte, then the bytes. An ext 0 without that byte, with subtype
 * 0 (which has bin), or holding 16 bytes of subtype 4 (the uuid, a bin of
 * subtype 0, as the JSON and YAML readers make it) is refused as corrupt:
 * one form per value.
 */
#include "codec_internal.h"

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ encode */

static int write_cb(void *data, const char *buf, size_t len)
{
	return bs__bytes_append(data, buf, len) < 0 ? -1 : 0;
}

static int pack_str(msgpack_packer *pk, const char *s, size_t n, const char *what)
{
	char q[64];

	if (n > UINT32_MAX)
		return bs_error(BS_EINVAL, "%s too long for MessagePack (%zu bytes)", what, n);
	if (!bs__utf8_valid(s, n))
		return bs_error(BS_EINVAL, "%s \"%s\" is not valid UTF-8", what, bs__quote(q, sizeof q, s, n));
	if (msgpack_pack_str(pk, n) < 0 || msgpack_pack_str_body(pk, s, n) < 0)
		return BS_ENOMEM;
	return 0;
}

static int pack_value(msgpack_packer *pk, const bs_value_t *v, int depth)
{
	int rc = 0;

	switch (v->type) {
	case BS_NIL: rc = msgpack_pack_nil(pk); break;
	case BS_BOOL: rc = v->v.b ? msgpack_pack_true(pk) : msgpack_pack_false(pk); break;
	case BS_INT: rc = msgpack_pack_int64(pk, v->v.i); break;
	case BS_UINT: rc = msgpack_pack_uint64(pk, v->v.u); break;
	case BS_FLOAT: rc = msgpack_pack_double(pk, v->v.f); break;
	case BS_STR: return pack_str(pk, v->v.s.ptr, v->v.s.len, "string");
	case BS_BIN:
		if (v->v.s.len > UINT32_MAX)
			return bs_error(BS_EINVAL, "bytes too long for MessagePack (%zu)", v->v.s.len);
		if (v->v.s.sub) {
			if (v->v.s.sub == 4 && v->v.s.len == 16)
				return bs_error(BS_EINVAL, "16 bytes of subtype 04 are a uuid: subtype 0");
			if (v->v.s.len >= UINT32_MAX)
				return bs_error(BS_EINVAL, "bytes too long for MessagePack (%zu)", v->v.s.len);
			rc = msgpack_pack_ext(pk, v->v.s.len + 1, BS__EXT_BINARY);
			if (rc == 0)
				rc = msgpack_pack_ext_body(pk, &v->v.s.sub, 1);
			if (rc == 0)
				rc = msgpack_pack_ext_body(pk, v->v.s.ptr, v->v.s.len);
			break;
		}
		rc = msgpack_pack_bin(pk, v->v.s.len);
		if (rc == 0)
			rc = msgpack_pack_bin_body(pk, v->v.s.ptr, v->v.s.len);
		break;
	case BS_ARRAY:
		if (depth >= BS_BODY_MAX_DEPTH)
			return bs_error(BS_EINVAL, "value nested deeper than %d", BS_BODY_MAX_DEPTH);
		if (v->v.a.len > UINT32_MAX)
			return bs_error(BS_EINVAL, "array too long for MessagePack");
		if (msgpack_pack_array(pk, v->v.a.len) < 0)
			return BS_ENOMEM;
		for (size_t i = 0; i < v->v.a.len; i++)
			if ((rc = pack_value(pk, &v->v.a.items[i], depth + 1)) < 0)
				return rc;
		return 0;
	case BS_MAP:
		if (depth >= BS_BODY_MAX_DEPTH)
			return bs_error(BS_EINVAL, "value nested deeper than %d", BS_BODY_MAX_DEPTH);
		if (v->v.m.len > UINT32_MAX)
			return bs_error(BS_EINVAL, "map too long for MessagePack");
		if (msgpack_pack_map(pk, v->v.m.len) < 0)
			return BS_ENOMEM;
		for (size_t i = 0; i < v->v.m.len; i++) {
			const bs_pair_t *p = &v->v.m.items[i];

			if ((rc = pack_str(pk, p->key, p->klen, "key")) < 0 ||
			    (rc = pack_value(pk, &p->val, depth + 1)) < 0)
				return rc;
		}
		return 0;
	default: return bs_error(BS_EINVAL, "bad value type %d", (int)v->type);
	}
	return rc < 0 ? BS_ENOMEM : 0; /* the writer set the message */
}

int bs__msgpack_append(bs_bytes_t *out, const bs_value_t *v)
{
	msgpack_packer pk;

	msgpack_packer_init(&pk, out, write_cb);
	return pack_value(&pk, v, 0);
}

int bs_msgpack_encode(bs_bytes_t *out, const bs_value_t *v)
{
	int rc;

	memset(out, 0, sizeof *out);
	if ((rc = bs__msgpack_append(out, v)) < 0)
		bs_bytes_free(out);
	return rc;
}

/* ------------------------------------------------------------ decode */

typedef struct {
	const uint8_t *start, *p, *end;
	size_t items;  /* values decoded so far, containers' elements counted */
	size_t memory; /* bytes the decoded value holds so far */
} reader_t;

/* Count n more values holding `bytes` against the limits: a small body can
 * declare millions of one-byte items, and each costs a bs_value_t. */
static int charge(reader_t *r, uint64_t n, uint64_t bytes)
{
	r->items += (size_t)n;
	r->memory += (size_t)bytes;
	if (r->items > BS_BODY_MAX_ITEMS)
		return bs_error(BS_ECORRUPT, "msgpack body holds more than %u values (at byte %zu)", BS_BODY_MAX_ITEMS,
		                (size_t)(r->p - r->start));
	if (r->memory > BS_BODY_MAX_DECODED)
		return bs_error(BS_ECORRUPT, "msgpack body decodes to more than %u MiB (at byte %zu)",
		                BS_BODY_MAX_DECODED >> 20, (size_t)(r->p - r->start));
	return 0;
}

static size_t left(const reader_t *r)
{
	return (size_t)(r->end - r->p);
}

static size_t offset(const reader_t *r)
{
	return (size_t)(r->p - r->start);
}

static int truncated(const reader_t *r)
{
	return bs_error(BS_ECORRUPT, "msgpack truncated at byte %zu", offset(r));
}

/* Big-endian unsigned of n (1, 2, 4, 8) bytes. */
static int read_be(reader_t *r, size_t n, uint64_t *out)
{
	uint64_t x = 0;

	if (left(r) < n)
		return truncated(r);
	for (size_t i = 0; i < n; i++)
		x = x << 8 | r->p[i];
	r->p += n;
	*out = x;
	return 0;
}

/* What a type byte introduces, for messages. */
static const char *byte_kind(uint8_t b)
{
	if (b <= 0x7f || (b >= 0xcc && b <= 0xd3) || b >= 0xe0)
		return "int";
	if (b <= 0x8f || b == 0xde || b == 0xdf)
		return "map";
	if (b <= 0x9f || b == 0xdc || b == 0xdd)
		return "array";
	if (b <= 0xbf || (b >= 0xd9 && b <= 0xdb))
		return "string";
	switch (b) {
	case 0xc0: return "nil";
	case 0xc2:
	case 0xc3: return "bool";
	case 0xc4:
	case 0xc5:
	case 0xc6: return "bytes";
	case 0xca:
	case 0xcb: return "float";
	case 0xc1: return "invalid byte";
	default: return "ext";
	}
}

/* If the next item is a string, its length (after its header). */
static int read_str_header(reader_t *r, size_t *len, bool *is_str)
{
	uint8_t b;
	uint64_t n;
	int rc;

	if (left(r) < 1)
		return truncated(r);
	b = *r->p;
	*is_str = true;
	if (b >= 0xa0 && b <= 0xbf) {
		r->p++;
		n = b & 0x1f;
	} else if (b >= 0xd9 && b <= 0xdb) {
		r->p++;
		if ((rc = read_be(r, (size_t)1 << (b - 0xd9), &n)) < 0)
			return rc;
	} else {
		*is_str = false;
		return 0;
	}
	if (n > left(r))
		return truncated(r);
	*len = (size_t)n;
	return 0;
}

static int read_string(reader_t *r, size_t n, char **out, const char *what)
{
	char q[64];

	int rc;
	if (!bs__utf8_valid((const char *)r->p, n))
		return bs_error(BS_ECORRUPT, "msgpack %s \"%s\" at byte %zu is not valid UTF-8", what,
		                bs__quote(q, sizeof q, (const char *)r->p, n), offset(r));
	if ((rc = charge(r, 0, (uint64_t)n + 1)) < 0)
		return rc;
	if (!(*out = bs__memdup0(r->p, n)))
		return bs__oom();
	r->p += n;
	return 0;
}

static int read_value(reader_t *r, bs_value_t *out, int depth);

static int read_array(reader_t *r, bs_value_t *out, uint64_t n, int depth)
{
	int rc;

	bs_value_array(out);
	if (depth >= BS_BODY_MAX_DEPTH)
		return bs_error(BS_ECORRUPT, "msgpack nested deeper than %d at byte %zu", BS_BODY_MAX_DEPTH, offset(r));
	if (n > left(r))
		return bs_error(BS_ECORRUPT, "msgpack array of %llu items with only %zu bytes left at byte %zu",
		                (unsigned long long)n, left(r), offset(r));
	if (n == 0)
		return 0;
	if ((rc = charge(r, n, n * sizeof *out->v.a.items)) < 0)
		return rc;
	out->v.a.items = malloc((size_t)n * sizeof *out->v.a.items);
	BS_ERR_ALLOC(out->v.a.items);
	out->v.a.cap = (size_t)n;
	for (size_t i = 0; i < n; i++) {
		if ((rc = read_value(r, &out->v.a.items[i], depth + 1)) < 0) {
			bs_value_clear(&out->v.a.items[i]);
			return rc;
		}
		out->v.a.len++;
	}
	return 0;
}

static int read_map(reader_t *r, bs_value_t *out, uint64_t n, int depth)
{
	bs__keyset_t ks = { 0 };
	bs_value_t val;
	char *key = NULL, q[64];
	int rc = 0;

	bs_value_map(out);
	bs_value_nil(&val);
	if (depth >= BS_BODY_MAX_DEPTH) {
		rc = bs_error(BS_ECORRUPT, "msgpack nested deeper than %d at byte %zu", BS_BODY_MAX_DEPTH, offset(r));
		goto done;
	}
	if (n > left(r) / 2) {
		rc = bs_error(BS_ECORRUPT, "msgpack map of %llu pairs with only %zu bytes left at byte %zu",
		              (unsigned long long)n, left(r), offset(r));
		goto done;
	}
	/* a pair, and its key's slot in the duplicate check */
	if ((rc = charge(r, n, n * (sizeof(bs_pair_t) + 2 * sizeof(size_t)))) < 0)
		goto done;
	if (n && (rc = bs__value_map_reserve(out, (size_t)n)) < 0)
		goto done;
	for (size_t i = 0; i < n; i++) {
		size_t klen = 0, at = offset(r);
		bool is_str = false; /* (set on every 0 return; gcc -O1 cannot see it) */

		if ((rc = read_str_header(r, &klen, &is_str)) < 0)
			goto done;
		if (!is_str) {
			rc = bs_error(BS_ECORRUPT, "msgpack map key at byte %zu is %s, not a string", at,
			              byte_kind(*r->p));
			goto done;
		}
		if ((rc = read_string(r, klen, &key, "key")) < 0 || (rc = read_value(r, &val, depth + 1)) < 0)
			goto done;
		rc = bs__map_append_unique(out, &ks, key, klen, &val);
		if (rc == 1) {
			rc = bs_error(BS_ECORRUPT, "msgpack map has duplicate key \"%s\" at byte %zu",
			              bs__quote(q, sizeof q, key, klen), at);
			goto done;
		}
		if (rc < 0)
			goto done;
		key = NULL;
	}
done:
	free(key);
	bs_value_clear(&val);
	bs__keyset_free(&ks);
	return rc;
}

/* An ext of n data bytes (its type byte next): only BS__EXT_BINARY, a
 * binary of a subtype but 0. */
static int read_ext(reader_t *r, bs_value_t *out, uint8_t b, uint64_t n)
{
	size_t at = offset(r) - 1;
	int rc;

	if (left(r) < 1 || n > left(r) - 1)
		return truncated(r);
	if ((int8_t)*r->p != BS__EXT_BINARY)
		return bs_error(BS_ECORRUPT, "unsupported msgpack ext type %d (0x%02x at byte %zu)", (int8_t)*r->p, b,
		                at);
	r->p++;
	if (n < 1 || r->p[0] == 0)
		return bs_error(BS_ECORRUPT, "msgpack ext %d at byte %zu holds no binary subtype but 0", BS__EXT_BINARY,
		                at);
	if (r->p[0] == 4 && n - 1 == 16) /* what $uuid stands for: bagstore's uuid, a bin */
		return bs_error(BS_ECORRUPT,
		                "msgpack ext %d at byte %zu: 16 bytes of subtype 04 are a uuid, "
		                "written as bin",
		                BS__EXT_BINARY, at);
	if ((rc = charge(r, 0, n)) < 0 || (rc = bs_value_bin(out, r->p + 1, (size_t)n - 1)) < 0)
		return rc;
	out->v.s.sub = r->p[0];
	r->p += n;
	return 0;
}

/* One value at r. This is one case per MessagePack format byte, in the
 * order of the specification's format table; it is longer than this
 * project's 80 lines on purpose: split up, the table would no longer read
 * against the specification. */
static int read_value(reader_t *r, bs_value_t *out, int depth)
{
	uint64_t n = 0; /* set by read_be before any use; silences -Wmaybe-uninitialized at -O2 */
	uint8_t b;
	int rc;

	bs_value_nil(out);
	if (left(r) < 1)
		return truncated(r);
	b = *r->p++;
	if (b <= 0x7f) {
		bs_value_int(out, b);
		return 0;
	}
	if (b >= 0xe0) {
		bs_value_int(out, (int8_t)b);
		return 0;
	}
	if (b <= 0x8f)
		return read_map(r, out, b & 0x0f, depth);
	if (b <= 0x9f)
		return read_array(r, out, b & 0x0f, depth);
	if (b <= 0xbf) {
		n = b & 0x1f;
		goto str;
	}
	switch (b) {
	case 0xc0: return 0;
	case 0xc2:
	case 0xc3: bs_value_bool(out, b == 0xc3); return 0;
	case 0xc4:
	case 0xc5:
	case 0xc6:
		if ((rc = read_be(r, (size_t)1 << (b - 0xc4), &n)) < 0)
			return rc;
		if (n > left(r))
			return truncated(r);
		if ((rc = charge(r, 0, n + 1)) < 0 || (rc = bs_value_bin(out, r->p, (size_t)n)) < 0)
			return rc;
		r->p += n;
		return 0;
	case 0xca: {
		uint32_t u32;
		float f;

		if ((rc = read_be(r, 4, &n)) < 0)
			return rc;
		u32 = (uint32_t)n;
		memcpy(&f, &u32, sizeof f);
		bs_value_float(out, f);
		return 0;
	}
	case 0xcb: {
		double d;

		if ((rc = read_be(r, 8, &n)) < 0)
			return rc;
		memcpy(&d, &n, sizeof d);
		bs_value_float(out, d);
		return 0;
	}
	case 0xcc:
	case 0xcd:
	case 0xce:
	case 0xcf:
		if ((rc = read_be(r, (size_t)1 << (b - 0xcc), &n)) < 0)
			return rc;
		return bs__value_signed(out, false, n); /* never fails unsigned */
	case 0xd0:
	case 0xd1:
	case 0xd2:
	case 0xd3: {
		size_t w = (size_t)1 << (b - 0xd0);
		int64_t i;

		if ((rc = read_be(r, w, &n)) < 0)
			return rc;
		if (w < 8 && (n >> (w * 8 - 1)) & 1) /* sign-extend */
			n |= ~(uint64_t)0 << (w * 8);
		memcpy(&i, &n, sizeof i);
		bs_value_int(out, i);
		return 0;
	}
	case 0xd9:
	case 0xda:
	case 0xdb:
		if ((rc = read_be(r, (size_t)1 << (b - 0xd9), &n)) < 0)
			return rc;
		goto str;
	case 0xdc:
	case 0xdd:
		if ((rc = read_be(r, b == 0xdc ? 2 : 4, &n)) < 0)
			return rc;
		return read_array(r, out, n, depth);
	case 0xde:
	case 0xdf:
		if ((rc = read_be(r, b == 0xde ? 2 : 4, &n)) < 0)
			return rc;
		return read_map(r, out, n, depth);
	case 0xc1:
	default: /* (every other byte has its case) */
		return bs_error(BS_ECORRUPT, "msgpack: invalid byte 0xc1 at byte %zu", offset(r) - 1);
	case 0xc7:
	case 0xc8:
	case 0xc9:
		if ((rc = read_be(r, (size_t)1 << (b - 0xc7), &n)) < 0)
			return rc;
		return read_ext(r, out, b, n);
	case 0xd4:
	case 0xd5:
	case 0xd6:
	case 0xd7:
	case 0xd8: return read_ext(r, out, b, (uint64_t)1 << (b - 0xd4));
	}
str:
	if (n > left(r))
		return truncated(r);
	if ((rc = read_string(r, (size_t)n, &out->v.s.ptr, "string")) < 0)
		return rc;
	out->type = BS_STR;
	out->v.s.len = (size_t)n;
	return 0;
}

int bs_msgpack_decode(bs_value_t *out, const uint8_t *p, size_t len)
{
	reader_t r = { .start = p, .p = p, .end = p + len };
	int rc;

	bs_value_nil(out);
	if (!p || len == 0)
		return bs_error(BS_ECORRUPT, "empty msgpack input");
	if ((rc = read_value(&r, out, 0)) < 0)
		goto done;
	if (r.p != r.end)
		rc = bs_error(BS_ECORRUPT, "%zu trailing bytes after the msgpack value at byte %zu", left(&r),
		              offset(&r));
done:
	if (rc < 0)
		bs_value_clear(out);
	return rc;
}

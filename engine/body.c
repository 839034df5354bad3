/*
 * body.c - stored bodies: zlib(MessagePack map with a 16-byte "id")
 * (bs_body_encode, bs_body_decode).
 *
 * Decode is on the hot path of backfills, so each thread keeps one inflate
 * stream and one output buffer and reuses them; the MessagePack decoder
 * reads straight from that buffer. Bodies are untrusted: inflation stops at
 * BS_BODY_MAX_INFLATED, and truncation, trailing bytes and bad headers are
 * BS_ECORRUPT.
 */
#include "codec_internal.h"
#include "internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Deflate level for new bodies: bodies are small and written on the put
 * path; level 1 costs little and inflates as fast as any other level. */
#define BODY_ZLIB_LEVEL Z_BEST_SPEED

/* A body whose MessagePack is shorter than this is stored in a zlib
 * stream of one stored block (RFC 1950 and 1951: no compression, 11 bytes
 * of framing): deflate costs a fixed 5-15 us a call however small the
 * input (most of a bulk put's CPU, perf says), and saves a few bytes at
 * this size. Every zlib reader inflates it as any other body. */
#define BODY_STORE_BELOW 256
_Static_assert(BODY_STORE_BELOW <= 65535, "a stored body is one stored block of at most 65535 bytes");

/* The inflate buffer starts at this size and is kept between calls while it
 * is no larger than BUF_KEEP; a rare big body does not pin 16 MiB. */
#define BUF_START (64u << 10)
#define BUF_KEEP (1u << 20)

/* ------------------------------------------------------------ per thread */

typedef struct {
	z_stream zs;
	bool zinit;
	uint8_t *buf;
	size_t cap;
	/* encode's deflate states, kept too: deflateInit allocates ~256 KiB,
	 * which cost a put more than its compression did. Two of them: each
	 * deflateReset clears the hash table, 64 KiB at the default memLevel,
	 * which is most of the cost of a small body; small bodies use a state
	 * with a small table (the stream is the same zlib format, window 32K).
	 * And encode's MessagePack buffer (kept while no larger than BUF_KEEP). */
	z_stream ds[2];
	bool dinit[2];
	bs_bytes_t mp;
} inflater_t;

#define SMALL_BODY 4096 /* MessagePack bytes: deflated with ds[0] */

static pthread_key_t inflater_key;
static pthread_once_t inflater_once = PTHREAD_ONCE_INIT;
static int inflater_key_err;

static void inflater_free(void *p)
{
	inflater_t *in = p;

	if (!in)
		return;
	if (in->zinit)
		inflateEnd(&in->zs);
	for (int k = 0; k < 2; k++)
		if (in->dinit[k])
			deflateEnd(&in->ds[k]);
	free(in->buf);
	bs_bytes_free(&in->mp);
	free(in);
}

static void inflater_key_make(void)
{
	inflater_key_err = pthread_key_create(&inflater_key, inflater_free);
}

/* This thread's inflater, or a private one (*owned set) if the key failed. */
static int inflater_get(inflater_t **out, bool *owned)
{
	inflater_t *in = NULL;

	*owned = false;
	pthread_once(&inflater_once, inflater_key_make);
	if (!inflater_key_err)
		in = pthread_getspecific(inflater_key);
	if (!in) {
		if (!(in = calloc(1, sizeof *in)))
			return bs__oom();
		if (inflateInit(&in->zs) != Z_OK) {
			free(in);
			return bs_error(BS_ENOMEM, "inflateInit failed");
		}
		in->zinit = true;
		if (inflater_key_err || pthread_setspecific(inflater_key, in) != 0)
			*owned = true;
	}
	*out = in;
	return 0;
}

/* ------------------------------------------------------------ inflate */

static int grow(inflater_t *in)
{
	size_t cap = in->cap ? in->cap * 2 : BUF_START;
	uint8_t *p;

	if (cap > (size_t)BS_BODY_MAX_INFLATED + 1)
		cap = (size_t)BS_BODY_MAX_INFLATED + 1;
	if (!(p = realloc(in->buf, cap)))
		return bs_error(BS_ENOMEM, "out of memory (%zu bytes)", cap);
	in->buf = p;
	in->cap = cap;
	return 0;
}

/* Inflate p[0..len) into in->buf; *outlen gets the size. */
static int inflate_body(inflater_t *in, size_t *outlen, const uint8_t *p, size_t len)
{
	z_stream *zs = &in->zs;
	size_t total = 0, in_left = len;
	int zrc, rc = 0;

	if (inflateReset(zs) != Z_OK)
		return bs_error(BS_ERROR, "inflateReset failed");
	zs->next_in = (Bytef *)p;
	zs->avail_in = 0;
	for (;;) {
		uInt give;

		/* total <= BS_BODY_MAX_INFLATED < the largest cap, checked below */
		if (total == in->cap && (rc = grow(in)) < 0)
			return rc;
		if (zs->avail_in == 0 && in_left) {
			give = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
			zs->avail_in = give;
			in_left -= give;
		}
		zs->next_out = in->buf + total;
		zs->avail_out = (uInt)(in->cap - total);
		zrc = inflate(zs, Z_NO_FLUSH);
		total = in->cap - zs->avail_out;
		if (total > BS_BODY_MAX_INFLATED)
			return bs_error(BS_ECORRUPT, "body inflates past %u MiB", BS_BODY_MAX_INFLATED >> 20);
		switch (zrc) {
		case Z_STREAM_END:
			if (zs->avail_in || in_left)
				return bs_error(BS_ECORRUPT, "%zu trailing bytes after the zlib stream",
				                (size_t)zs->avail_in + in_left);
			*outlen = total;
			return 0;
		case Z_OK: break;
		case Z_BUF_ERROR:
			/* No progress possible: out of space (grow and retry) or
			 * out of input (the stream stops early). */
			if (zs->avail_out == 0)
				break;
			return bs_error(BS_ECORRUPT, "truncated zlib stream");
		case Z_NEED_DICT: return bs_error(BS_ECORRUPT, "bad zlib stream: needs a preset dictionary");
		case Z_MEM_ERROR: return bs_error(BS_ENOMEM, "out of memory inflating a body");
		default: return bs_error(BS_ECORRUPT, "bad zlib stream: %s", zs->msg ? zs->msg : "data error");
		}
		if (zs->avail_in == 0 && in_left == 0 && zs->avail_out != 0)
			return bs_error(BS_ECORRUPT, "truncated zlib stream");
	}
}

/* ------------------------------------------------------------ api */

int bs_body_decode(bs_value_t *out, const uint8_t *p, size_t len)
{
	inflater_t *in = NULL;
	const bs_value_t *id;
	bool owned = false;
	size_t n = 0;
	int rc;

	bs_value_nil(out);
	if (!p || len == 0) {
		rc = bs_error(BS_ECORRUPT, "empty body");
		goto done;
	}
	if ((rc = inflater_get(&in, &owned)) < 0)
		goto done;
	if ((rc = inflate_body(in, &n, p, len)) < 0)
		goto done;
	if ((rc = bs_msgpack_decode(out, in->buf, n)) < 0)
		goto done;
	if (out->type != BS_MAP) {
		rc = bs_error(BS_ECORRUPT, "body is %s, not a map", bs__type_name(out->type));
		goto done;
	}
	id = bs_map_get(out, "id");
	if (!id || id->type != BS_BIN || id->v.s.len != 16 || id->v.s.sub)
		rc = bs_error(BS_ECORRUPT, "body has no 16-byte \"id\"");
done:
	if (in && (owned || in->cap > BUF_KEEP)) {
		free(in->buf);
		in->buf = NULL;
		in->cap = 0;
	}
	if (owned)
		inflater_free(in);
	if (rc < 0)
		bs_value_clear(out);
	return rc;
}

/* mp in a zlib stream of one stored block, into out. */
static int stored_frame(bs_bytes_t *out, const bs_bytes_t *mp)
{
	size_t n = mp->len; /* < BODY_STORE_BELOW <= 65535: one block */
	uint8_t *p = malloc(n + 11);
	if (!p)
		return bs__oom();
	uLong a = adler32(adler32(0L, Z_NULL, 0), mp->ptr, (uInt)n);
	p[0] = 0x78; /* deflate, 32 KiB window */
	p[1] = 0x01; /* the fastest level; 0x7801 is a multiple of 31 */
	p[2] = 0x01; /* the final block, stored */
	p[3] = (uint8_t)(n & 0xff);
	p[4] = (uint8_t)(n >> 8);
	p[5] = (uint8_t)(~n & 0xff);
	p[6] = (uint8_t)((~n >> 8) & 0xff);
	memcpy(p + 7, mp->ptr, n);
	p[n + 7] = (uint8_t)(a >> 24);
	p[n + 8] = (uint8_t)(a >> 16);
	p[n + 9] = (uint8_t)(a >> 8);
	p[n + 10] = (uint8_t)a;
	out->ptr = p;
	out->len = out->cap = n + 11;
	return 0;
}

int bs_body_encode(bs_bytes_t *out, const bs_value_t *bag)
{
	inflater_t *zt = NULL;
	bool owned = false;
	bs_bytes_t *mp;
	bs_id_t id;
	uLongf zlen;
	int rc, zrc;

	memset(out, 0, sizeof *out);
	if ((rc = bs_bag_id(&id, bag)) < 0 || (rc = bs__value_printable(bag)) < 0)
		return rc;
	if ((rc = inflater_get(&zt, &owned)) < 0)
		return rc;
	mp = &zt->mp;
	mp->len = 0;
	if ((rc = bs__msgpack_append(mp, bag)) < 0)
		goto done;
	if (mp->len > BS_BODY_MAX_INFLATED) {
		rc = bs_error(BS_EINVAL, "body is %zu bytes of MessagePack, past the %u MiB limit", mp->len,
		              BS_BODY_MAX_INFLATED >> 20);
		goto done;
	}
	if (mp->len < BODY_STORE_BELOW) {
		rc = stored_frame(out, mp);
		goto done;
	}
	int k = mp->len <= SMALL_BODY ? 0 : 1;
	z_stream *ds = &zt->ds[k];
	if (!zt->dinit[k]) {
		if (deflateInit2(ds, BODY_ZLIB_LEVEL, Z_DEFLATED, 15, k ? 8 : 3, Z_DEFAULT_STRATEGY) != Z_OK) {
			rc = bs_error(BS_ENOMEM, "deflateInit failed");
			goto done;
		}
		zt->dinit[k] = true;
	} else if (deflateReset(ds) != Z_OK) {
		rc = bs_error(BS_ERROR, "deflateReset failed");
		goto done;
	}
	zlen = deflateBound(ds, (uLong)mp->len);
	if (!(out->ptr = malloc(zlen))) {
		rc = bs__oom();
		goto done;
	}
	out->cap = zlen;
	ds->next_in = mp->ptr;
	ds->avail_in = (uInt)mp->len;
	ds->next_out = out->ptr;
	ds->avail_out = (uInt)zlen;
	zrc = deflate(ds, Z_FINISH);
	if (zrc != Z_STREAM_END) {
		rc = bs_error(BS_ERROR, "deflate failed (%d)", zrc);
		goto done;
	}
	out->len = zlen - ds->avail_out;
done:
	if (mp->cap > BUF_KEEP)
		bs_bytes_free(mp);
	if (owned)
		inflater_free(zt);
	if (rc < 0)
		bs_bytes_free(out);
	return rc;
}

int bs__body_decode_row(bs_value_t *out, const void *body, size_t len, const void *rowid, const char *where)
{
	char hex[33], bodyhex[33], msg[1024];
	bs_id_t rid, bid;
	int rc;
	memcpy(rid.b, rowid, 16);
	bs_id_hex(hex, &rid);
	const char *sep = where && *where ? ": " : "";
	where = where ? where : "";
	if ((rc = bs_body_decode(out, body, len)) < 0) {
		snprintf(msg, sizeof msg, "%s", bs_last_error());
		return bs_error(rc, "%s%sentity %s: %s", where, sep, hex, msg);
	}
	if (bs_bag_id(&bid, out) == 0 && memcmp(bid.b, rid.b, 16) != 0) {
		bs_id_hex(bodyhex, &bid);
		bs_value_clear(out);
		return bs_error(BS_ECORRUPT,
		                "%s%sentity %s: its body says id %s: corrupt (a body is stored under its own id)",
		                where, sep, hex, bodyhex);
	}
	return 0;
}

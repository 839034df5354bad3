/*
 * id.c - entity ids: generation (getrandom, libuuid as the fallback), parsing, hex and dashed
 * formatting, and reading a bag's "id".
 */
#include "codec_internal.h"

#include <string.h>
#include <sys/random.h>
#include <uuid/uuid.h>

static const char hexdigits[] = "0123456789abcdef";

/* A hex digit's value + 1, 0 for any other byte: one load for each digit
 * of every id a load reads. */
static const uint8_t hex1[256] = {
	['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,  ['6'] = 7,  ['7'] = 8,
	['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
	['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

int bs__hexval(int c)
{
	return c >= 0 && c < 256 ? hex1[c] - 1 : -1;
}

/* A version 4 (random) UUID from the kernel's generator: one getrandom
 * call. libuuid's uuid_generate_random costs six more system calls and a
 * reseed of random() per id (it mixes its own generator in), a few
 * microseconds on every put; it remains the fallback (and is what runs
 * before the kernel's pool is ready: GRND_NONBLOCK never waits). */
void bs_id_generate(bs_id_t *out)
{
	if (getrandom(out->b, sizeof out->b, GRND_NONBLOCK) == (ssize_t)sizeof out->b) {
		out->b[6] = (uint8_t)((out->b[6] & 0x0f) | 0x40); /* version 4 */
		out->b[8] = (uint8_t)((out->b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
		return;
	}
	uuid_t u;
	uuid_generate_random(u);
	memcpy(out->b, u, sizeof out->b);
}

int bs__id_parse_n(bs_id_t *out, const char *s, size_t n)
{
	bs_id_t id;
	bool dashed;
	size_t i = 0;

	if (n == 32)
		dashed = false;
	else if (n == 36)
		dashed = true;
	else
		return -1;
	for (int k = 0; k < 16; k++) {
		int hi, lo;

		if (dashed && (i == 8 || i == 13 || i == 18 || i == 23)) {
			if (s[i] != '-')
				return -1;
			i++;
		}
		hi = bs__hexval((unsigned char)s[i]);
		lo = bs__hexval((unsigned char)s[i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		id.b[k] = (uint8_t)(hi << 4 | lo);
		i += 2;
	}
	*out = id;
	return 0;
}

int bs_id_parse(bs_id_t *out, const char *text)
{
	char q[80];
	size_t n;

	if (!text)
		return bs_error(BS_EINVAL, "malformed id (null): " BS__ID_FORMS);
	n = strlen(text);
	if (bs__id_parse_n(out, text, n) < 0)
		return bs_error(BS_EINVAL, "malformed id \"%s\": " BS__ID_FORMS, bs__quote(q, sizeof q, text, n));
	return 0;
}

void bs_id_hex(char buf[33], const bs_id_t *id)
{
	for (int k = 0; k < 16; k++) {
		buf[2 * k] = hexdigits[id->b[k] >> 4];
		buf[2 * k + 1] = hexdigits[id->b[k] & 15];
	}
	buf[32] = '\0';
}

void bs__dashed(char buf[37], const void *bytes16)
{
	const uint8_t *b = bytes16;
	size_t o = 0;

	for (int k = 0; k < 16; k++) {
		if (k == 4 || k == 6 || k == 8 || k == 10)
			buf[o++] = '-';
		buf[o++] = hexdigits[b[k] >> 4];
		buf[o++] = hexdigits[b[k] & 15];
	}
	buf[36] = '\0';
}

void bs_id_dashed(char buf[37], const bs_id_t *id)
{
	bs__dashed(buf, id->b);
}

int bs_bag_id(bs_id_t *out, const bs_value_t *bag)
{
	const bs_value_t *v;

	if (!bag || bag->type != BS_MAP)
		return bs_error(BS_EINVAL, "body has no \"id\": the bag is %s, not a map",
		                bag ? bs__type_name(bag->type) : "missing");
	v = bs_map_get(bag, "id");
	if (!v)
		return bs_error(BS_EINVAL, "body has no \"id\": key missing");
	if (v->type != BS_BIN || v->v.s.len != 16) {
		if (v->type == BS_STR || v->type == BS_BIN)
			return bs_error(BS_EINVAL, "body has no \"id\": expected 16 bytes, got %s of length %zu",
			                bs__type_name(v->type), v->v.s.len);
		return bs_error(BS_EINVAL, "body has no \"id\": expected 16 bytes, got %s", bs__type_name(v->type));
	}
	if (v->v.s.sub)
		return bs_error(BS_EINVAL, "body has no \"id\": expected a uuid, got 16 bytes of subtype %02x",
		                v->v.s.sub);
	memcpy(out->b, v->v.s.ptr, 16);
	return 0;
}

uint8_t bs__subtype(const char *hex, size_t n, size_t len)
{
	unsigned sub = 0;

	for (size_t i = 0; i < n; i++)
		sub = sub << 4 | (unsigned)bs__hexval((unsigned char)hex[i]);
	return sub == 4 && len == 16 ? 0 : (uint8_t)sub;
}

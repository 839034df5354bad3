/*
 * base64.c - RFC 4648 base64 (standard alphabet) for the JSON $binary and
 * YAML !!binary faces of byte values.
 */
#include "codec_internal.h"

#include <stdint.h>
#include <stdlib.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t bs__base64_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

void bs__base64_encode(char *dst, const uint8_t *src, size_t n)
{
	size_t i = 0, o = 0;

	for (; i + 3 <= n; i += 3) {
		uint32_t w = (uint32_t)src[i] << 16 | (uint32_t)src[i + 1] << 8 | src[i + 2];

		dst[o++] = alphabet[w >> 18];
		dst[o++] = alphabet[(w >> 12) & 63];
		dst[o++] = alphabet[(w >> 6) & 63];
		dst[o++] = alphabet[w & 63];
	}
	if (n - i == 1) {
		uint32_t w = (uint32_t)src[i] << 16;

		dst[o++] = alphabet[w >> 18];
		dst[o++] = alphabet[(w >> 12) & 63];
		dst[o++] = '=';
		dst[o++] = '=';
	} else if (n - i == 2) {
		uint32_t w = (uint32_t)src[i] << 16 | (uint32_t)src[i + 1] << 8;

		dst[o++] = alphabet[w >> 18];
		dst[o++] = alphabet[(w >> 12) & 63];
		dst[o++] = alphabet[(w >> 6) & 63];
		dst[o++] = '=';
	}
	dst[o] = '\0';
}

static int b64val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

static int is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

int bs__base64_decode(uint8_t **out, size_t *outlen, const char *src, size_t n)
{
	uint8_t *buf;
	uint32_t acc = 0;
	size_t o = 0, nchars = 0, pad = 0;
	int rc = -1;

	*out = NULL;
	*outlen = 0;
	buf = malloc(n / 4 * 3 + 3);
	BS_ERR_ALLOC(buf);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)src[i];
		int v;

		if (is_space(c))
			continue;
		if (c == '=') {
			pad++;
			continue;
		}
		if (pad) /* data after padding */
			goto done;
		if ((v = b64val(c)) < 0)
			goto done;
		acc = acc << 6 | (uint32_t)v;
		nchars++;
		if (nchars % 4 == 0) {
			buf[o++] = (uint8_t)(acc >> 16);
			buf[o++] = (uint8_t)(acc >> 8);
			buf[o++] = (uint8_t)acc;
			acc = 0;
		}
	}
	switch (nchars % 4) {
	case 0:
		if (pad)
			goto done;
		break;
	case 1: goto done;
	case 2:
		if ((pad && pad != 2) || (acc & 0xf))
			goto done;
		buf[o++] = (uint8_t)(acc >> 4);
		break;
	case 3:
		if ((pad && pad != 1) || (acc & 0x3))
			goto done;
		buf[o++] = (uint8_t)(acc >> 10);
		buf[o++] = (uint8_t)(acc >> 2);
		break;
	}
	buf[o] = '\0';
	*out = buf;
	*outlen = o;
	buf = NULL;
	rc = 0;
done:
	free(buf);
	return rc;
}

char *bs__base64_dup(const uint8_t *src, size_t n, size_t *len)
{
	char *dst;

	*len = bs__base64_len(n);
	if (n > (SIZE_MAX - 3) / 4 * 3 || !(dst = malloc(*len + 1)))
		return NULL;
	bs__base64_encode(dst, src, n);
	return dst;
}

int bs__base64_value(bs_value_t *out, const char *src, size_t n)
{
	uint8_t *bytes;
	size_t len;
	int rc;

	if ((rc = bs__base64_decode(&bytes, &len, src, n)) < 0)
		return rc;
	bs_value_nil(out);
	out->type = BS_BIN;
	out->v.s.ptr = (char *)bytes;
	out->v.s.len = len;
	return 0;
}

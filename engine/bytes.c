/*
 * bytes.c - bs_bytes_t, the growable byte buffer the codecs write into:
 * reserve, append, free; and the doubling of every other growing array
 * (bs__array_grow, alloc.h).
 */
#include "codec_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void bs_bytes_free(bs_bytes_t *b)
{
	if (!b)
		return;
	free(b->ptr);
	memset(b, 0, sizeof *b);
}

int bs__bytes_reserve(bs_bytes_t *b, size_t extra)
{
	size_t want, cap;
	uint8_t *p;

	if (extra > SIZE_MAX - b->len)
		return bs_error(BS_ENOMEM, "buffer size overflow");
	want = b->len + extra;
	if (want <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < want)
		cap = cap > SIZE_MAX / 2 ? want : cap * 2;
	p = realloc(b->ptr, cap);
	if (!p)
		return bs_error(BS_ENOMEM, "out of memory (%zu bytes)", cap);
	b->ptr = p;
	b->cap = cap;
	return 0;
}

int bs__bytes_append(bs_bytes_t *b, const void *p, size_t n)
{
	int rc;

	if (n == 0)
		return 0;
	if ((rc = bs__bytes_reserve(b, n)) < 0)
		return rc;
	memcpy(b->ptr + b->len, p, n);
	b->len += n;
	return 0;
}

int bs__array_grow(void **ptr, size_t *cap, size_t size, size_t first)
{
	size_t n = *cap ? *cap : first;
	void *p;

	if (*cap && n > SIZE_MAX / 2 / size)
		return bs_error(BS_ENOMEM, "array too large");
	if (*cap)
		n *= 2;
	if (!(p = realloc(*ptr, n * size)))
		return bs__oom();
	*ptr = p;
	*cap = n;
	return 0;
}

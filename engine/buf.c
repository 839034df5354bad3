/*
 * buf.c - building SQL text: a growable string and literal writers.
 *
 * Values reach SQL as literals that need no escaping and no connection:
 * bytes as X'..', strings as _utf8mb4 X'..' (so an index on a utf8mb4_bin
 * column is still used), numbers in decimal. Names are validated at the
 * catalog's door and quoted with backticks here.
 */
#include "internal.h"
#include "codec_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bs__buf_free(bs_buf_t *b)
{
	free(b->ptr);
	memset(b, 0, sizeof *b);
}

void bs__buf_reset(bs_buf_t *b)
{
	b->len = 0;
	if (b->ptr)
		b->ptr[0] = '\0';
}

int bs__buf_ok(const bs_buf_t *b)
{
	return b->oom ? bs_error(BS_ENOMEM, "out of memory building SQL") : 0;
}

static bool buf_reserve(bs_buf_t *b, size_t extra)
{
	if (b->oom)
		return false;
	if (b->len + extra + 1 <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + extra + 1)
		cap *= 2;
	char *p = realloc(b->ptr, cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	b->ptr = p;
	b->cap = cap;
	return true;
}

void bs__buf_putn(bs_buf_t *b, const char *s, size_t n)
{
	if (!buf_reserve(b, n))
		return;
	if (n) /* s may be an empty buffer's NULL */
		memcpy(b->ptr + b->len, s, n);
	b->len += n;
	b->ptr[b->len] = '\0';
}

void bs__buf_puts(bs_buf_t *b, const char *s)
{
	bs__buf_putn(b, s, strlen(s));
}

/* In the C locale whatever the process's LC_NUMERIC: SQL wants 0.5 where
 * a program that called setlocale(LC_ALL, "") under de_DE would print 0,5
 * (the console does, for its wide characters). */
void bs__buf_printf(bs_buf_t *b, const char *fmt, ...)
{
	locale_t c = bs__c_locale(), old = c ? uselocale(c) : (locale_t)0;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n >= 0 && buf_reserve(b, (size_t)n)) {
		va_start(ap, fmt);
		vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
		va_end(ap);
		b->len += (size_t)n;
	}
	if (old)
		uselocale(old);
}

void bs__buf_hex(bs_buf_t *b, const void *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *s = p;
	if (!buf_reserve(b, 2 * n + 3))
		return;
	char *o = b->ptr + b->len;
	*o++ = 'X';
	*o++ = '\'';
	for (size_t i = 0; i < n; i++) {
		*o++ = digits[s[i] >> 4];
		*o++ = digits[s[i] & 15];
	}
	*o++ = '\'';
	*o = '\0';
	b->len += 2 * n + 3;
}

void bs__buf_hexu(bs_buf_t *b, const void *p, size_t n)
{
	static const char digits[] = "0123456789ABCDEF";
	const unsigned char *s = p;
	if (!buf_reserve(b, 2 * n))
		return;
	char *o = b->ptr + b->len;
	for (size_t i = 0; i < n; i++) {
		*o++ = digits[s[i] >> 4];
		*o++ = digits[s[i] & 15];
	}
	*o = '\0';
	b->len += 2 * n;
}

void bs__buf_unix_us(bs_buf_t *b, int64_t us)
{
	if (us < 0) {
		bs__buf_putn(b, "-", 1);
		us = -us;
	}
	char d[7];
	uint64_t f = (uint64_t)us % 1000000;
	for (int i = 5; i >= 0; i--, f /= 10)
		d[i] = (char)('0' + f % 10);
	d[6] = '\0';
	bs__buf_uint(b, (uint64_t)us / 1000000);
	bs__buf_putn(b, ".", 1);
	bs__buf_putn(b, d, 6);
}

void bs__buf_from_unixtime(bs_buf_t *b, int64_t us)
{
	bs__buf_puts(b, "FROM_UNIXTIME(");
	bs__buf_unix_us(b, us);
	bs__buf_puts(b, ")");
}

void bs__buf_uint(bs_buf_t *b, unsigned long long v)
{
	char d[24], *q = bs__uint_text(d + sizeof d, v);
	bs__buf_putn(b, q, (size_t)(d + sizeof d - q));
}

void bs__buf_ident(bs_buf_t *b, const char *name)
{
	bs__buf_putn(b, "`", 1);
	bs__buf_puts(b, name);
	bs__buf_putn(b, "`", 1);
}

void bs__buf_value(bs_buf_t *b, const bs_value_t *v, const bs_prop_t *prop)
{
	switch (v->type) {
	case BS_STR:
		if (prop->type == BS_COL_STRING)
			bs__buf_puts(b, "_utf8mb4 ");
		bs__buf_hex(b, v->v.s.ptr, v->v.s.len);
		break;
	case BS_BIN: bs__buf_hex(b, v->v.s.ptr, v->v.s.len); break;
	case BS_INT: bs__buf_printf(b, "%lld", (long long)v->v.i); break;
	case BS_UINT: bs__buf_printf(b, "%llu", (unsigned long long)v->v.u); break;
	case BS_FLOAT: bs__buf_printf(b, "%.17g", v->v.f); break;
	case BS_BOOL: bs__buf_puts(b, v->v.b ? "1" : "0"); break;
	default: bs__buf_puts(b, "NULL"); break;
	}
}

bs__param_t bs__param_value(const bs_value_t *v, const bs_prop_t *prop)
{
	bs__param_t p = { .type = BS__P_NULL };
	switch (v->type) {
	case BS_STR:
		p.type = prop->type == BS_COL_STRING ? BS__P_TEXT : BS__P_BYTES;
		p.p = v->v.s.ptr;
		p.len = v->v.s.len;
		break;
	case BS_BIN:
		p.type = BS__P_BYTES;
		p.p = v->v.s.ptr;
		p.len = v->v.s.len;
		break;
	case BS_INT:
		p.type = BS__P_INT;
		p.i = (long long)v->v.i;
		break;
	case BS_UINT:
		p.type = BS__P_UINT;
		p.u = (unsigned long long)v->v.u;
		break;
	case BS_FLOAT:
		p.type = BS__P_DOUBLE;
		p.d = v->v.f;
		break;
	case BS_BOOL:
		p.type = BS__P_INT;
		p.i = v->v.b ? 1 : 0;
		break;
	default: break;
	}
	return p;
}

void bs__buf_index_insert(bs_buf_t *b, const bs_index_t *idx)
{
	bs__buf_puts(b, "INSERT INTO ");
	bs__buf_ident(b, idx->name);
	bs__buf_puts(b, " (");
	for (int k = 0; k < idx->nprops; k++) {
		bs__buf_ident(b, idx->props[k].name);
		bs__buf_puts(b, ",");
	}
	bs__buf_puts(b, "entity_id)");
}

void bs__buf_index_update(bs_buf_t *b, const bs_index_t *idx)
{
	bs__buf_puts(b, " ON DUPLICATE KEY UPDATE ");
	for (int k = 0; k < idx->nprops; k++) {
		if (k)
			bs__buf_puts(b, ",");
		bs__buf_ident(b, idx->props[k].name);
		bs__buf_puts(b, "=VALUES(");
		bs__buf_ident(b, idx->props[k].name);
		bs__buf_puts(b, ")");
	}
}

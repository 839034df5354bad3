/*
 * jtext.c - JSON text for scripts (see jtext.h): a writer of jansson
 * documents whose only difference from json_dumps is how a float is
 * written. Strings are valid UTF-8 (jansson checks them when made).
 */
#include "jtext.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bagstore.h"

typedef struct {
	char *p;
	size_t len, cap;
	bool oom;
} jbuf_t;

static void put(jbuf_t *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t ncap = b->cap ? b->cap * 2 : 256;
		char *np;

		while (ncap < b->len + n + 1)
			ncap *= 2;
		if (!(np = realloc(b->p, ncap))) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = ncap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void puts_(jbuf_t *b, const char *s)
{
	put(b, s, strlen(s));
}

char *jtext_real(char buf[48], double d)
{
	char *e;

	bs_float_text(buf, d);
	/* as jansson writes it: an exponent without '+' or leading zeros */
	if ((e = strchr(buf, 'e'))) {
		char *q = e + 1, *z;

		if (*q == '-')
			q++;
		for (z = q; *z == '+' || (*z == '0' && z[1]); z++)
			;
		memmove(q, z, strlen(z) + 1);
	}
	/* and always a float: 5.0, not 5 */
	if (!strpbrk(buf, ".eEin"))
		strcat(buf, ".0");
	return buf;
}

/* A line break and the indent of depth, or (space) one space between
 * items when not indented and not compact: json_dumps's layout. */
static void indent(jbuf_t *b, size_t flags, int depth, bool space)
{
	int n = (int)(flags & JSON_MAX_INDENT) * depth;

	if (flags & JSON_MAX_INDENT) {
		put(b, "\n", 1);
		while (n-- > 0)
			put(b, " ", 1);
	} else if (space && !(flags & JSON_COMPACT))
		put(b, " ", 1);
}

/* The next code point of valid UTF-8 at s (its length in *len). */
static uint32_t utf8_next(const unsigned char *s, size_t *len)
{
	if (s[0] < 0x80) {
		*len = 1;
		return s[0];
	}
	if ((s[0] & 0xE0) == 0xC0) {
		*len = 2;
		return ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
	}
	if ((s[0] & 0xF0) == 0xE0) {
		*len = 3;
		return ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
	}
	*len = 4;
	return ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) | ((uint32_t)(s[2] & 0x3F) << 6) |
	       (s[3] & 0x3F);
}

static void string(jbuf_t *b, const char *str, size_t n, size_t flags)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, run = 0, cl;
	char esc[16];

	put(b, "\"", 1);
	while (i < n) {
		uint32_t c = utf8_next(s + i, &cl);
		const char *e = NULL;

		if (i + cl > n) /* cut (not from jansson): stop, never read past */
			break;
		switch (c) {
		case '\\': e = "\\\\"; break;
		case '"': e = "\\\""; break;
		case '\b': e = "\\b"; break;
		case '\f': e = "\\f"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		case '/': e = (flags & JSON_ESCAPE_SLASH) ? "\\/" : NULL; break;
		default:
			if (c < 0x20 || ((flags & JSON_ENSURE_ASCII) && c > 0x7F)) {
				if (c < 0x10000)
					snprintf(esc, sizeof esc, "\\u%04X", (unsigned)c);
				else
					snprintf(esc, sizeof esc, "\\u%04X\\u%04X",
					         (unsigned)(0xD800 | ((c - 0x10000) >> 10)),
					         (unsigned)(0xDC00 | ((c - 0x10000) & 0x3FF)));
				e = esc;
			}
		}
		if (e) {
			put(b, str + i - run, run);
			run = 0;
			puts_(b, e);
		} else
			run += cl;
		i += cl;
	}
	put(b, str + i - run, run);
	put(b, "\"", 1);
}

typedef struct {
	const char *key;
	size_t len;
	json_t *val;
} member_t;

static int member_cmp(const void *a, const void *b)
{
	const member_t *x = a, *y = b;
	int c = memcmp(x->key, y->key, x->len < y->len ? x->len : y->len);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

static void value(jbuf_t *b, const json_t *j, size_t flags, int depth)
{
	char num[48];

	switch (json_typeof(j)) {
	case JSON_NULL: puts_(b, "null"); break;
	case JSON_TRUE: puts_(b, "true"); break;
	case JSON_FALSE: puts_(b, "false"); break;
	case JSON_INTEGER:
		snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(j));
		puts_(b, num);
		break;
	case JSON_REAL: puts_(b, jtext_real(num, json_real_value(j))); break;
	case JSON_STRING: string(b, json_string_value(j), json_string_length(j), flags); break;
	case JSON_ARRAY: {
		size_t n = json_array_size(j);

		put(b, "[", 1);
		if (n)
			indent(b, flags, depth + 1, false);
		for (size_t i = 0; i < n; i++) {
			value(b, json_array_get(j, i), flags, depth + 1);
			if (i + 1 < n) {
				put(b, ",", 1);
				indent(b, flags, depth + 1, true);
			} else
				indent(b, flags, depth, false);
		}
		put(b, "]", 1);
		break;
	}
	case JSON_OBJECT: {
		size_t n = json_object_size(j), i = 0;
		member_t *m = n ? calloc(n, sizeof *m) : NULL;
		const char *k;
		json_t *v;

		if (n && !m) {
			b->oom = true;
			return;
		}
		json_object_foreach((json_t *)j, k, v)
		{
			if (i == n)
				break;
			m[i].key = k;
			m[i].len = json_object_iter_key_len(json_object_key_to_iter(k));
			m[i++].val = v;
		}
		if ((flags & JSON_SORT_KEYS) && i > 1) /* an empty object has no array (qsort wants one) */
			qsort(m, i, sizeof *m, member_cmp);
		put(b, "{", 1);
		if (i)
			indent(b, flags, depth + 1, false);
		for (size_t x = 0; x < i; x++) {
			string(b, m[x].key, m[x].len, flags);
			puts_(b, (flags & JSON_COMPACT) ? ":" : ": ");
			value(b, m[x].val, flags, depth + 1);
			if (x + 1 < i) {
				put(b, ",", 1);
				indent(b, flags, depth + 1, true);
			} else
				indent(b, flags, depth, false);
		}
		put(b, "}", 1);
		free(m);
		break;
	}
	}
}

char *jtext_dumps(const json_t *doc, size_t flags)
{
	jbuf_t b = { 0 };

	if (!doc)
		return NULL;
	value(&b, doc, flags, 0);
	if (b.oom || !b.p) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

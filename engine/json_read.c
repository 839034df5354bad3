/*
 * json_read.c - JSON text -> bs_value_t (bs_json_decode), read in one pass.
 *
 * RFC 8259 JSON, any value at the top, as strict as jansson with
 * JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL, which it
 * replaced (jansson's tree, its conversion and a second pass for numbers
 * were half of `bagstore put`'s CPU): strings must be
 * UTF-8 with no control characters, "\u0000" is taken in a string but not
 * in a key, a surrogate escape must come in a pair, integers must fit 64
 * bits signed and reals a double (one too small for a double is refused
 * rather than stored as 0), a key may not repeat in its object, and
 * nothing but whitespace may follow the value. What it takes and the value
 * it makes are jansson's, tested against the reference reader (json.c) by
 * test_codec and fuzz_jsonl; it refuses two things jansson took: a number
 * too small for a double that jansson's path did not check, and a NUL
 * byte right after a number or a literal, which jansson dropped.
 *
 * Extended JSON's one-key objects ({"$uuid": ...} and the others, json.c)
 * are read into the values they stand for as their object closes.
 * Containers nest at most BS_BODY_MAX_DEPTH deep; a one-key object at that
 * depth is still read, since it stands for a scalar, and so is what its
 * key holds.
 *
 * Errors name where: "WHERE:LINE:COLUMN: ..." for the text's own faults
 * (COLUMN counts characters, the one at fault included; at the end of the
 * text, the last one; a string that is not UTF-8, its opening quote),
 * "WHERE: at .key[2]: ..." for a value refused (a malformed id, nesting
 * too deep).
 */
#include "codec_internal.h"
#include "internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Deeper than this the text cannot be taken whatever it holds (see
 * value()); the bound keeps the reader's recursion small. */
#define HARD_DEPTH (BS_BODY_MAX_DEPTH + 3)

typedef struct {
	const char *key; /* NULL: an array's item */
	size_t klen, idx;
} frame_t;

typedef struct {
	const char *start, *p, *end;
	const char *where;
	frame_t fr[HARD_DEPTH + 1]; /* the path to the value being read */
	int nfr;
} rd_t;

/* ------------------------------------------------------------ errors */

/* The line and column of the character at `at` (columns count
 * characters, the one at `at` included); at the end of the text, of the
 * last one. */
static void line_col(const rd_t *r, const char *at, long *line, long *col)
{
	long l = 1, c = 0;

	for (const char *q = r->start; q < at && q < r->end; q++) {
		if (*q == '\n') {
			l++;
			c = 0;
		} else if (((unsigned char)*q & 0xc0) != 0x80) {
			c++;
		}
	}
	*line = l;
	*col = at < r->end ? c + 1 : c;
}

/* "WHERE:LINE:COL: msg" for the text at `at`. */
__attribute__((format(printf, 3, 4))) static int text_fail(const rd_t *r, const char *at, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	long line, col;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	line_col(r, at, &line, &col);
	return bs_error(BS_EINVAL, "%s:%ld:%ld: %s", r->where, line, col, msg);
}

/* "WHERE: at PATH: msg" for the value being read. */
__attribute__((format(printf, 2, 3))) static int value_fail(const rd_t *r, const char *fmt, ...)
{
	char msg[512], path[256];
	size_t pl = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	path[0] = '\0';
	for (int i = 0; i < r->nfr && pl < sizeof path - 1; i++) {
		char q[64];
		int n = r->fr[i].key ? snprintf(path + pl, sizeof path - pl, ".%s",
		                                bs__quote(q, sizeof q, r->fr[i].key, r->fr[i].klen))
		                     : snprintf(path + pl, sizeof path - pl, "[%zu]", r->fr[i].idx);
		if (n > 0)
			pl = pl + (size_t)n >= sizeof path ? sizeof path - 1 : pl + (size_t)n;
	}
	if (pl)
		return bs_error(BS_EINVAL, "%s: at %s: %s", r->where, path, msg);
	return bs_error(BS_EINVAL, "%s: %s", r->where, msg);
}

/* The depth rule's refusal, naming the path's first `len` frames (the
 * container too deep). */
static int too_deep(rd_t *r, int len)
{
	int keep = r->nfr, rc;

	r->nfr = len;
	rc = value_fail(r, "nested deeper than %d", BS_BODY_MAX_DEPTH);
	r->nfr = keep;
	return rc;
}

/* What is at p, for a message: the character, or "the end". */
static const char *what_at(const rd_t *r, const char *p, char buf[16])
{
	unsigned char c;

	if (p >= r->end)
		return "the end of the text";
	c = (unsigned char)*p;
	if (c >= 0x20 && c < 0x7f)
		snprintf(buf, 16, "'%c'", c);
	else
		snprintf(buf, 16, "byte 0x%02x", c);
	return buf;
}

static void skip_ws(rd_t *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\t' || *r->p == '\r'))
		r->p++;
}

/* ------------------------------------------------------------ strings */

static int hex4(const char *p, const char *end, unsigned *out)
{
	unsigned u = 0;

	if (end - p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		int h = bs__hexval((unsigned char)p[i]);

		if (h < 0)
			return -1;
		u = u << 4 | (unsigned)h;
	}
	*out = u;
	return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* The string whose opening quote r->p is on, read into a malloc'd,
 * NUL-terminated *out (*len its bytes); r->p left after its closing quote. */
static int string(rd_t *r, char **out, size_t *len)
{
	const char *open = r->p, *s = r->p + 1, *q = s;
	bool plain = true, high = false;
	char *o, *w;

	/* Find the closing quote; most strings are plain ASCII. */
	for (;;) {
		if (q >= r->end) {
			long line, col;

			line_col(r, open, &line, &col);
			return text_fail(r, r->end, "the text ends inside the string opened at line %ld, column %ld",
			                 line, col);
		}
		unsigned char c = (unsigned char)*q;

		if (c == '"')
			break;
		if (c == '\\') {
			plain = false;
			if (r->end - q < 2) {
				q = r->end;
				continue;
			}
			q += 2;
			continue;
		}
		if (c < 0x20)
			return text_fail(r, q, "control character 0x%02x in a string: write it escaped", c);
		high |= c >= 0x80;
		q++;
	}
	if (!(o = malloc((size_t)(q - s) + 1)))
		return bs__oom();
	if (plain) {
		memcpy(o, s, (size_t)(q - s));
		w = o + (q - s);
	} else {
		w = o;
		for (const char *p = s; p < q;) {
			if (*p != '\\') {
				*w++ = *p++;
				continue;
			}
			unsigned cp, lo;
			const char *esc = p;

			switch (p[1]) {
			case '"': *w++ = '"'; break;
			case '\\': *w++ = '\\'; break;
			case '/': *w++ = '/'; break;
			case 'b': *w++ = '\b'; break;
			case 'f': *w++ = '\f'; break;
			case 'n': *w++ = '\n'; break;
			case 'r': *w++ = '\r'; break;
			case 't': *w++ = '\t'; break;
			case 'u':
				if (hex4(p + 2, q, &cp) < 0) {
					free(o);
					return text_fail(r, esc, "\\u wants 4 hex digits");
				}
				p += 4;
				if (cp >= 0xdc00 && cp <= 0xdfff) {
					free(o);
					return text_fail(r, esc, "a lone low surrogate \\u%04X", cp);
				}
				if (cp >= 0xd800 && cp <= 0xdbff) {
					if (q - (p + 2) < 6 || p[2] != '\\' || p[3] != 'u' || hex4(p + 4, q, &lo) < 0 ||
					    lo < 0xdc00 || lo > 0xdfff) {
						free(o);
						return text_fail(r, esc, "\\u%04X is a high surrogate without its low half", cp);
					}
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
					p += 6;
				}
				w += put_utf8(w, cp);
				break;
			default:
				free(o);
				return text_fail(r, esc, "invalid escape \\%c",
				                 (unsigned char)p[1] >= 0x20 && (unsigned char)p[1] < 0x7f ? p[1] : '?');
			}
			p += 2;
		}
	}
	*w = '\0';
	*len = (size_t)(w - o);
	/* Escapes make whole sequences, so the text's bytes are valid exactly
	 * when the string is. */
	if (high && !bs__utf8_valid(o, *len)) {
		free(o);
		return text_fail(r, open, "the string here is not valid UTF-8");
	}
	r->p = q + 1;
	*out = o;
	return 0;
}

/* ------------------------------------------------------------ numbers */

static int number(rd_t *r, bs_value_t *out)
{
	const char *p = r->p, *s = p, *end = r->end;
	bool neg = false, real = false, nonzero = false;
	uint64_t u = 0;
	bool over = false;

	if (*p == '-') {
		neg = true;
		p++;
	}
	if (p < end && *p == '0') {
		p++;
		if (p < end && *p >= '0' && *p <= '9')
			return text_fail(r, p - 1, "a number may not start with 0");
	} else if (p < end && *p >= '1' && *p <= '9') {
		while (p < end && *p >= '0' && *p <= '9') {
			unsigned d = (unsigned)(*p - '0');

			nonzero |= d != 0;
			if (u > (UINT64_MAX - d) / 10)
				over = true;
			else
				u = u * 10 + d;
			p++;
		}
	} else {
		return text_fail(r, s, "'-' wants a digit after it");
	}
	if (p < end && *p == '.') {
		real = true;
		if (++p >= end || *p < '0' || *p > '9')
			return text_fail(r, p - 1, "'.' in a number wants a digit after it");
		while (p < end && *p >= '0' && *p <= '9')
			nonzero |= *p++ != '0';
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		real = true;
		const char *e = p;

		if (++p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end || *p < '0' || *p > '9')
			return text_fail(r, e, "an exponent wants a digit");
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	r->p = p;
	if (!real) {
		if (over || u > (uint64_t)INT64_MAX + neg)
			return text_fail(r, s, "the integer %.*s does not fit 64 bits (one above 2^63-1 is written "
			                 "{\"$numberDecimal\": \"...\"})",
			                 (int)(p - s > 40 ? 40 : p - s), s);
		bs_value_int(out, neg ? (int64_t)(0 - u) : (int64_t)u);
		return 0;
	}
	/* strtod wants a NUL at the end */
	char buf[64], *num = buf, *stop;
	size_t n = (size_t)(p - s);
	double d;

	if (n >= sizeof buf && !(num = malloc(n + 1)))
		return bs__oom();
	memcpy(num, s, n);
	num[n] = '\0';
	errno = 0;
	d = bs__strtod_c(num, &stop);
	int rc = 0;
	if (errno == ERANGE && (d > 1 || d < -1))
		rc = text_fail(r, s, "the number %.40s is too large for a double", num);
	else if (errno == ERANGE && d == 0 && nonzero)
		rc = text_fail(r, s, "the number %.40s is too small for a double: it would be stored as 0", num);
	if (num != buf)
		free(num);
	if (rc == 0)
		bs_value_float(out, d);
	return rc;
}

/* ------------------------------------------------------------ values */

static int value(rd_t *r, bs_value_t *out, int depth, bool exempt);

static bool word(rd_t *r, const char *w, size_t n)
{
	if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n) != 0)
		return false;
	r->p += n;
	return true;
}

static int array(rd_t *r, bs_value_t *out, int depth)
{
	int rc;

	bs_value_array(out);
	if (depth >= BS_BODY_MAX_DEPTH)
		return too_deep(r, r->nfr);
	r->p++;
	skip_ws(r);
	if (r->p < r->end && *r->p == ']') {
		r->p++;
		return 0;
	}
	r->fr[r->nfr++] = (frame_t){ .key = NULL };
	for (size_t i = 0;; i++) {
		bs_value_t item;
		char b[16];

		r->fr[r->nfr - 1].idx = i;
		rc = value(r, &item, depth + 1, false);
		if (rc == 0)
			rc = bs_array_push(out, &item);
		bs_value_clear(&item);
		if (rc < 0)
			break;
		skip_ws(r);
		if (r->p < r->end && *r->p == ',') {
			r->p++;
			continue;
		}
		if (r->p < r->end && *r->p == ']')
			break;
		rc = text_fail(r, r->p, "expected ',' or ']' in the array, not %s", what_at(r, r->p, b));
		break;
	}
	r->nfr--;
	if (rc < 0)
		return rc;
	r->p++;
	return 0;
}

/* A container inside v, deepest first: how many levels (0: v is a scalar). */
static int nesting(const bs_value_t *v)
{
	int deepest = 0;

	if (v->type == BS_ARRAY)
		for (size_t i = 0; i < v->v.a.len; i++) {
			int d = nesting(&v->v.a.items[i]);
			deepest = d > deepest ? d : deepest;
		}
	else if (v->type == BS_MAP)
		for (size_t i = 0; i < v->v.m.len; i++) {
			int d = nesting(&v->v.m.items[i].val);
			deepest = d > deepest ? d : deepest;
		}
	else
		return 0;
	return deepest + 1;
}

/*
 * An object at depth (the containers around it). A one-key object whose
 * key is a special is the value it stands for; what its key holds is read
 * `exempt` from the depth rule (it holds a string, or $binary's map of
 * strings, or is refused). When the object turns out to have more keys,
 * that first value is held to the rule after all.
 */
static int object(rd_t *r, bs_value_t *out, int depth, bool exempt)
{
	bs__keyset_t ks = { 0 };
	char *key = NULL, b[16];
	size_t klen;
	bs_value_t val;
	int sp = -1, rc = 0, outer = r->nfr; /* the object's path: the frames before its own */

	bs_value_map(out);
	bs_value_nil(&val);
	r->p++;
	skip_ws(r);
	if (r->p < r->end && *r->p == '}') {
		r->p++;
		if (depth >= BS_BODY_MAX_DEPTH && !exempt)
			return too_deep(r, outer);
		return 0;
	}
	r->fr[r->nfr++] = (frame_t){ .key = NULL };
	for (size_t i = 0;; i++) {
		const char *at = r->p;
		bool first_special = sp >= 0;

		if (at >= r->end || *at != '"') {
			rc = text_fail(r, at, "expected a key (a string) in the object, not %s", what_at(r, at, b));
			goto fail;
		}
		if ((rc = string(r, &key, &klen)) < 0)
			goto fail;
		if (memchr(key, '\0', klen)) {
			rc = text_fail(r, at, "a key may not hold \\u0000");
			goto fail;
		}
		sp = i == 0 ? bs__json_special_index(key, klen) : -1;
		/* The depth rule, unless this object is a special's argument: the
		 * object itself, once it is not a special; and the first value,
		 * read exempt as a special's (its frame still the current one),
		 * once a second key shows it was not. */
		if (!exempt && sp < 0 && depth >= BS_BODY_MAX_DEPTH) {
			rc = too_deep(r, outer);
			goto fail;
		}
		if (!exempt && i == 1 && first_special && depth + nesting(&out->v.m.items[0].val) >= BS_BODY_MAX_DEPTH) {
			rc = too_deep(r, r->nfr);
			goto fail;
		}
		r->fr[r->nfr - 1] = (frame_t){ .key = key, .klen = klen };
		skip_ws(r);
		if (r->p >= r->end || *r->p != ':') {
			rc = text_fail(r, r->p, "expected ':' after the key, not %s", what_at(r, r->p, b));
			goto fail;
		}
		r->p++;
		if ((rc = value(r, &val, depth + 1, sp >= 0)) < 0)
			goto fail;
		if (sp >= 0) {
			skip_ws(r);
			if (r->p < r->end && *r->p == '}') {
				/* one key, a special's: the value it stands for, read
				 * straight from the key's (every id is one) */
				char msg[256];

				r->p++;
				r->nfr = outer; /* the message names the object */
				if ((rc = bs__json_special(sp, out, &val, msg, sizeof msg)) == -1)
					rc = value_fail(r, "%s", msg);
				free(key);
				bs_value_clear(&val);
				return rc;
			}
		}
		/* a bag's top map: room for 8 pairs at once (a bag has a handful
		 * of keys); inner maps grow from 4 as they need */
		if (i == 0 && depth == 0 && (rc = bs__value_map_reserve(out, 8)) < 0)
			goto fail;
		if ((rc = bs__map_append_unique(out, &ks, key, klen, &val)) != 0) {
			if (rc == 1) {
				char q[64];
				rc = text_fail(r, at, "duplicate key \"%s\" in the object", bs__quote(q, sizeof q, key, klen));
			}
			goto fail;
		}
		key = NULL; /* the map's now, as is val */
		skip_ws(r);
		if (r->p < r->end && *r->p == ',') {
			r->p++;
			skip_ws(r);
			continue;
		}
		if (r->p < r->end && *r->p == '}')
			break;
		rc = text_fail(r, r->p, "expected ',' or '}' in the object, not %s", what_at(r, r->p, b));
		goto fail;
	}
	r->p++;
	r->nfr = outer;
	bs__keyset_free(&ks);
	return 0;
fail:
	r->nfr = outer;
	free(key);
	bs_value_clear(&val);
	bs__keyset_free(&ks);
	return rc;
}

/* A value at depth (the containers around it; exempt: see object()). */
static int value(rd_t *r, bs_value_t *out, int depth, bool exempt)
{
	char b[16];

	bs_value_nil(out);
	skip_ws(r);
	if (r->p >= r->end)
		return text_fail(r, r->end, "the text ends where a value was expected");
	if (depth > HARD_DEPTH - 1)
		return too_deep(r, r->nfr);
	switch (*r->p) {
	case '{': return object(r, out, depth, exempt);
	case '[': return array(r, out, depth);
	case '"': {
		char *s;
		size_t n;
		int rc = string(r, &s, &n);

		if (rc < 0)
			return rc;
		out->type = BS_STR;
		out->v.s.ptr = s;
		out->v.s.len = n;
		return 0;
	}
	case '-':
	case '0':
	case '1':
	case '2':
	case '3':
	case '4':
	case '5':
	case '6':
	case '7':
	case '8':
	case '9': return number(r, out);
	case 't':
		if (word(r, "true", 4)) {
			bs_value_bool(out, true);
			return 0;
		}
		break;
	case 'f':
		if (word(r, "false", 5)) {
			bs_value_bool(out, false);
			return 0;
		}
		break;
	case 'n':
		if (word(r, "null", 4))
			return 0;
		break;
	}
	return text_fail(r, r->p, "expected a value, not %s", what_at(r, r->p, b));
}

int bs_json_decode(bs_value_t *out, const char *text, size_t len, const char *where)
{
	rd_t r = { .start = text ? text : "", .where = where ? where : "<json>" };
	char b[16];
	int rc;

	r.p = r.start;
	r.end = r.start + (text ? len : 0);
	rc = value(&r, out, 0, false);
	if (rc == 0) {
		skip_ws(&r);
		if (r.p < r.end)
			rc = text_fail(&r, r.p, "%s after the value: one value only", what_at(&r, r.p, b));
	}
	if (rc < 0)
		bs_value_clear(out);
	return rc;
}

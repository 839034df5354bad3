/*
 * yaml.c - bs_value_t <-> YAML with libyaml (bs_yaml_*), the face of a bag
 * that people edit in $EDITOR.
 *
 * Output is one block-style document: a uuid (16 bytes of subtype 0) as
 * `!uuid <dashed>`, other bytes of subtype 0 as `!!binary <base64>`, bytes
 * of another subtype as `!binary/05 <base64>` (a local tag naming the
 * subtype in hex, so that it reads back), strings double-quoted whenever a plain
 * scalar would read back as something else, floats written to read back
 * exactly. Input is one document whose plain scalars resolve like the YAML
 * 1.2 core schema; !uuid, !!binary, !binary/XX, !!str, !!int, !!float,
 * !!bool, !!null are honoured, any other tag, anchors and aliases are refused. Mapping
 * keys are scalars and are always read as strings.
 */
#include "codec_internal.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define TAG_UUID "!uuid"
#define TAG_BINARY_SUB "!binary/" /* then the subtype, hex */
#define TAG_PREFIX "tag:yaml.org,2002:"
#define TAG(name) TAG_PREFIX name

/* Numbers are read and written in the C locale whatever the program's. The
 * shortest "%.*g" that reads back as d (finite), with ".0" added when it
 * would otherwise read as an integer. */
static void format_float(char buf[40], double d)
{
	bs__float_format(buf, d);
	if (!strpbrk(buf, ".eEn"))
		strcat(buf, ".0");
}

/* ------------------------------------------------------------ resolving */

typedef enum { R_NULL, R_BOOL, R_INT, R_FLOAT, R_STR } kind_t;

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool eq(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

bool bs__yaml_null(const char *s, size_t n)
{
	return n == 0 || eq(s, n, "~") || eq(s, n, "null") || eq(s, n, "Null") || eq(s, n, "NULL");
}

int bs__yaml_bool(const char *s, size_t n)
{
	if (eq(s, n, "true") || eq(s, n, "True") || eq(s, n, "TRUE"))
		return 1;
	if (eq(s, n, "false") || eq(s, n, "False") || eq(s, n, "FALSE"))
		return 0;
	return -1;
}

static bool is_int_text(const char *s, size_t n)
{
	size_t i = 0;

	if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
		for (i = 2; i < n; i++)
			if (s[1] == 'x' ? bs__hexval((unsigned char)s[i]) < 0 : !(s[i] >= '0' && s[i] <= '7'))
				return false;
		return true;
	}
	if (i < n && (s[i] == '-' || s[i] == '+'))
		i++;
	if (i == n)
		return false;
	for (; i < n; i++)
		if (!is_digit(s[i]))
			return false;
	return true;
}

static bool is_float_text(const char *s, size_t n)
{
	size_t i = 0, digits = 0;

	if (eq(s, n, ".nan") || eq(s, n, ".NaN") || eq(s, n, ".NAN"))
		return true;
	if (i < n && (s[i] == '-' || s[i] == '+'))
		i++;
	if (eq(s + i, n - i, ".inf") || eq(s + i, n - i, ".Inf") || eq(s + i, n - i, ".INF"))
		return true;
	while (i < n && is_digit(s[i]))
		i++, digits++;
	if (i < n && s[i] == '.') {
		i++;
		while (i < n && is_digit(s[i]))
			i++, digits++;
	}
	if (digits == 0)
		return false;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		size_t e = 0;

		i++;
		if (i < n && (s[i] == '-' || s[i] == '+'))
			i++;
		while (i < n && is_digit(s[i]))
			i++, e++;
		if (e == 0)
			return false;
	}
	return i == n;
}

static kind_t resolve_plain(const char *s, size_t n)
{
	if (bs__yaml_null(s, n))
		return R_NULL;
	if (bs__yaml_bool(s, n) >= 0)
		return R_BOOL;
	if (is_int_text(s, n))
		return R_INT;
	if (is_float_text(s, n))
		return R_FLOAT;
	return R_STR;
}

/* Integer text (is_int_text) to INT or UINT; -1 when out of range. */
static int int_value(bs_value_t *out, const char *s, size_t n)
{
	uint64_t u = 0, base = 10;
	size_t i = 0;
	bool neg = false;

	if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
		base = s[1] == 'x' ? 16 : 8;
		i = 2;
	} else if (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-';
		i = 1;
	}
	for (; i < n; i++) {
		unsigned d = (unsigned)bs__hexval((unsigned char)s[i]);

		if (u > (UINT64_MAX - d) / base)
			return -1;
		u = u * base + d;
	}
	return bs__value_signed(out, neg, u);
}

/* Float text (is_float_text or is_int_text), NUL-terminated, to FLOAT. */
static void float_value(bs_value_t *out, const char *s, size_t n)
{
	size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;

	if (s[i] == '.' && (s[i + 1] == 'i' || s[i + 1] == 'I'))
		bs_value_float(out, s[0] == '-' ? -INFINITY : INFINITY);
	else if (s[0] == '.' && (s[1] == 'n' || s[1] == 'N'))
		bs_value_float(out, NAN);
	else if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
		bs_value_t iv;

		if (int_value(&iv, s, n) == 0)
			bs_value_float(out, iv.type == BS_UINT ? (double)iv.v.u : (double)iv.v.i);
		else
			bs_value_float(out, INFINITY);
	} else
		bs_value_float(out, bs__strtod_c(s, NULL));
}

/* ------------------------------------------------------------ decode */

typedef struct {
	yaml_parser_t parser;
	const char *where;
	const char *text;
	size_t len;
	size_t items; /* elements of sequences and mappings so far */
} dec_t;

__attribute__((format(printf, 4, 5))) static int fail_at(dec_t *d, int code, yaml_mark_t mark, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return bs_error(code, "%s:%zu:%zu: %s", d->where, mark.line + 1, mark.column + 1, msg);
}

static int parser_error(dec_t *d)
{
	yaml_parser_t *p = &d->parser;
	const char *problem = p->problem ? p->problem : "unknown problem";
	yaml_mark_t mark = p->problem_mark;

	switch (p->error) {
	case YAML_MEMORY_ERROR: return bs_error(BS_ENOMEM, "%s: out of memory parsing YAML", d->where);
	case YAML_READER_ERROR:
		/* Only an offset: count lines up to it. */
		memset(&mark, 0, sizeof mark);
		for (size_t i = 0; i < p->problem_offset && i < d->len; i++) {
			if (d->text[i] == '\n') {
				mark.line++;
				mark.column = 0;
			} else {
				mark.column++;
			}
		}
		return fail_at(d, BS_EINVAL, mark, "%s", problem);
	default:
		if (p->context)
			return fail_at(d, BS_EINVAL, mark, "%s %s", problem, p->context);
		return fail_at(d, BS_EINVAL, mark, "%s", problem);
	}
}

static int next_event(dec_t *d, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&d->parser, ev)) {
		memset(ev, 0, sizeof *ev);
		return parser_error(d);
	}
	return 0;
}

/* A tag as the user wrote it, for messages. */
static const char *tag_shown(const char *tag, char *buf, size_t size)
{
	if (strncmp(tag, TAG_PREFIX, strlen(TAG_PREFIX)) == 0)
		snprintf(buf, size, "!!%s", tag + strlen(TAG_PREFIX));
	else
		snprintf(buf, size, "%s", tag);
	return buf;
}

static int scalar_value(dec_t *d, yaml_event_t *ev, bs_value_t *out)
{
	const char *tag = (const char *)ev->data.scalar.tag;
	const char *s = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length;
	char q[80], tb[80];
	kind_t k;
	int rc = 0;

	bs_value_nil(out);
	if (!tag) {
		k = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? resolve_plain(s, n) : R_STR;
	} else if (strcmp(tag, "!") == 0 || strcmp(tag, TAG("str")) == 0) {
		k = R_STR;
	} else if (strcmp(tag, TAG_UUID) == 0) {
		bs_id_t id;

		if (bs__id_parse_n(&id, s, n) < 0)
			return fail_at(d, BS_EINVAL, ev->start_mark, "malformed id \"%s\": " BS__ID_FORMS,
			               bs__quote(q, sizeof q, s, n));
		return bs_value_bin(out, id.b, sizeof id.b);
	} else if (strcmp(tag, TAG("binary")) == 0) {
		rc = bs__base64_value(out, s, n);
		return rc == -1 ? fail_at(d, BS_EINVAL, ev->start_mark, "!!binary: malformed base64") : rc;
	} else if (strncmp(tag, TAG_BINARY_SUB, strlen(TAG_BINARY_SUB)) == 0) {
		const char *h = tag + strlen(TAG_BINARY_SUB);
		size_t hn = strlen(h);

		if (hn < 1 || hn > 2 || bs__hexval((unsigned char)h[0]) < 0 ||
		    (hn == 2 && bs__hexval((unsigned char)h[1]) < 0))
			return fail_at(d, BS_EINVAL, ev->start_mark,
			               "%s: expected the subtype as 1 or 2 hex digits "
			               "after %s",
			               bs__quote(tb, sizeof tb, tag, strlen(tag)), TAG_BINARY_SUB);
		rc = bs__base64_value(out, s, n);
		if (rc == 0)
			out->v.s.sub = bs__subtype(h, hn, out->v.s.len);
		return rc == -1 ? fail_at(d, BS_EINVAL, ev->start_mark, "%s: malformed base64",
		                          bs__quote(tb, sizeof tb, tag, strlen(tag)))
		                : rc;
	} else if (strcmp(tag, TAG("int")) == 0) {
		if (!is_int_text(s, n))
			return fail_at(d, BS_EINVAL, ev->start_mark, "!!int: \"%s\" is not an integer",
			               bs__quote(q, sizeof q, s, n));
		k = R_INT;
	} else if (strcmp(tag, TAG("float")) == 0) {
		if (!is_float_text(s, n) && !is_int_text(s, n))
			return fail_at(d, BS_EINVAL, ev->start_mark, "!!float: \"%s\" is not a number",
			               bs__quote(q, sizeof q, s, n));
		k = R_FLOAT;
	} else if (strcmp(tag, TAG("bool")) == 0) {
		if (bs__yaml_bool(s, n) < 0)
			return fail_at(d, BS_EINVAL, ev->start_mark, "!!bool: \"%s\" is not true or false",
			               bs__quote(q, sizeof q, s, n));
		k = R_BOOL;
	} else if (strcmp(tag, TAG("null")) == 0) {
		if (!bs__yaml_null(s, n))
			return fail_at(d, BS_EINVAL, ev->start_mark, "!!null: \"%s\" is not null",
			               bs__quote(q, sizeof q, s, n));
		k = R_NULL;
	} else {
		return fail_at(d, BS_EINVAL, ev->start_mark, "unsupported tag \"%s\"", tag_shown(tag, tb, sizeof tb));
	}

	switch (k) {
	case R_NULL: return 0;
	case R_BOOL: bs_value_bool(out, bs__yaml_bool(s, n) == 1); return 0;
	case R_INT:
		if (int_value(out, s, n) < 0)
			return fail_at(d, BS_EINVAL, ev->start_mark,
			               "integer %s does not fit 64 bits (quote it to keep it as a string)",
			               bs__quote(q, sizeof q, s, n));
		return 0;
	case R_FLOAT: float_value(out, s, n); return 0;
	case R_STR: return bs_value_str(out, s, n);
	}
	return 0;
}

static int parse_node(dec_t *d, yaml_event_t *ev, bs_value_t *out, int depth);

/* One more element of a sequence or mapping (ev, its first event): a body
 * holds at most BS_BODY_MAX_ITEMS, as bs_json_decode counts them, so a
 * hostile file is refused where it goes past that rather than read whole
 * into memory first. */
static int count_item(dec_t *d, const yaml_event_t *ev)
{
	if (++d->items > BS_BODY_MAX_ITEMS)
		return fail_at(d, BS_EINVAL, ev->start_mark, "body holds more than %u values", BS_BODY_MAX_ITEMS);
	return 0;
}

/* Refuse anchors, aliases and container tags we do not know. */
static int check_node(dec_t *d, yaml_event_t *ev, const yaml_char_t *anchor, const yaml_char_t *tag,
                      const char *plain_tag)
{
	char tb[80];

	if (anchor)
		return fail_at(d, BS_EINVAL, ev->start_mark, "anchors and aliases are not supported");
	if (tag && strcmp((const char *)tag, "!") != 0 && strcmp((const char *)tag, plain_tag) != 0)
		return fail_at(d, BS_EINVAL, ev->start_mark, "unsupported tag \"%s\"",
		               tag_shown((const char *)tag, tb, sizeof tb));
	return 0;
}

static int parse_sequence(dec_t *d, yaml_event_t *start, bs_value_t *out, int depth)
{
	yaml_event_t ev;
	bs_value_t item;
	int rc;

	bs_value_array(out);
	bs_value_nil(&item);
	if ((rc = check_node(d, start, start->data.sequence_start.anchor, start->data.sequence_start.tag, TAG("seq"))) <
	    0)
		return rc;
	if (depth >= BS_BODY_MAX_DEPTH)
		return fail_at(d, BS_EINVAL, start->start_mark, "nested deeper than %d", BS_BODY_MAX_DEPTH);
	for (;;) {
		if ((rc = next_event(d, &ev)) < 0)
			return rc;
		if (ev.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&ev);
			return 0;
		}
		rc = count_item(d, &ev);
		if (rc == 0)
			rc = parse_node(d, &ev, &item, depth + 1);
		yaml_event_delete(&ev);
		if (rc == 0)
			rc = bs_array_push(out, &item);
		if (rc < 0) {
			bs_value_clear(&item);
			return rc;
		}
	}
}

static int parse_mapping(dec_t *d, yaml_event_t *start, bs_value_t *out, int depth)
{
	bs__keyset_t ks = { 0 };
	yaml_event_t ev;
	bs_value_t val;
	char *key = NULL, q[80], tb[80];
	size_t klen = 0;
	int rc;

	bs_value_map(out);
	bs_value_nil(&val);
	memset(&ev, 0, sizeof ev);
	if ((rc = check_node(d, start, start->data.mapping_start.anchor, start->data.mapping_start.tag, TAG("map"))) <
	    0)
		goto done;
	if (depth >= BS_BODY_MAX_DEPTH) {
		rc = fail_at(d, BS_EINVAL, start->start_mark, "nested deeper than %d", BS_BODY_MAX_DEPTH);
		goto done;
	}
	for (;;) {
		yaml_mark_t kmark;
		const char *tag;

		if ((rc = next_event(d, &ev)) < 0)
			goto done;
		if (ev.type == YAML_MAPPING_END_EVENT)
			break;
		kmark = ev.start_mark;
		if ((rc = count_item(d, &ev)) < 0)
			goto done;
		if (ev.type == YAML_ALIAS_EVENT) {
			rc = fail_at(d, BS_EINVAL, kmark, "aliases are not supported");
			goto done;
		}
		if (ev.type != YAML_SCALAR_EVENT) {
			rc = fail_at(d, BS_EINVAL, kmark, "mapping keys must be scalars");
			goto done;
		}
		if (ev.data.scalar.anchor) {
			rc = fail_at(d, BS_EINVAL, kmark, "anchors and aliases are not supported");
			goto done;
		}
		/* Keys are strings: the text as written, whatever it resolves to. */
		tag = (const char *)ev.data.scalar.tag;
		if (tag && strcmp(tag, "!") != 0 && strcmp(tag, TAG("str")) != 0) {
			rc = fail_at(d, BS_EINVAL, kmark, "mapping keys must be strings, not \"%s\"",
			             tag_shown(tag, tb, sizeof tb));
			goto done;
		}
		klen = ev.data.scalar.length;
		if (!(key = bs__memdup0(ev.data.scalar.value, klen))) {
			rc = bs__oom();
			goto done;
		}
		yaml_event_delete(&ev);
		if ((rc = next_event(d, &ev)) < 0)
			goto done;
		rc = parse_node(d, &ev, &val, depth + 1);
		yaml_event_delete(&ev);
		if (rc < 0)
			goto done;
		rc = bs__map_append_unique(out, &ks, key, klen, &val);
		if (rc == 1) {
			rc = fail_at(d, BS_EINVAL, kmark, "duplicate key \"%s\"", bs__quote(q, sizeof q, key, klen));
			goto done;
		}
		if (rc < 0)
			goto done;
		key = NULL;
	}
done:
	yaml_event_delete(&ev);
	free(key);
	bs_value_clear(&val);
	bs__keyset_free(&ks);
	return rc;
}

/* ev is borrowed; the caller deletes it. */
static int parse_node(dec_t *d, yaml_event_t *ev, bs_value_t *out, int depth)
{
	bs_value_nil(out);
	switch (ev->type) {
	case YAML_ALIAS_EVENT: return fail_at(d, BS_EINVAL, ev->start_mark, "aliases are not supported");
	case YAML_SCALAR_EVENT:
		if (ev->data.scalar.anchor)
			return fail_at(d, BS_EINVAL, ev->start_mark, "anchors and aliases are not supported");
		return scalar_value(d, ev, out);
	case YAML_SEQUENCE_START_EVENT: return parse_sequence(d, ev, out, depth);
	case YAML_MAPPING_START_EVENT: return parse_mapping(d, ev, out, depth);
	default: return fail_at(d, BS_EINVAL, ev->start_mark, "unexpected YAML event %d", (int)ev->type);
	}
}

int bs_yaml_decode(bs_value_t *out, const char *text, size_t len, const char *where)
{
	dec_t d = { .where = where ? where : "<yaml>", .text = text ? text : "", .len = text ? len : 0 };
	yaml_event_t ev;
	bool parser_ok = false;
	int rc;

	bs_value_nil(out);
	memset(&ev, 0, sizeof ev);
	if (!yaml_parser_initialize(&d.parser)) {
		rc = bs__oom();
		goto done;
	}
	parser_ok = true;
	yaml_parser_set_input_string(&d.parser, (const unsigned char *)d.text, d.len);
	if ((rc = next_event(&d, &ev)) < 0) /* stream start */
		goto done;
	yaml_event_delete(&ev);
	if ((rc = next_event(&d, &ev)) < 0)
		goto done;
	if (ev.type == YAML_STREAM_END_EVENT) {
		rc = fail_at(&d, BS_EINVAL, ev.start_mark, "no YAML document");
		goto done;
	}
	yaml_event_delete(&ev); /* document start */
	if ((rc = next_event(&d, &ev)) < 0)
		goto done;
	if ((rc = parse_node(&d, &ev, out, 0)) < 0)
		goto done;
	yaml_event_delete(&ev);
	if ((rc = next_event(&d, &ev)) < 0) /* document end */
		goto done;
	yaml_event_delete(&ev);
	if ((rc = next_event(&d, &ev)) < 0)
		goto done;
	if (ev.type != YAML_STREAM_END_EVENT)
		rc = fail_at(&d, BS_EINVAL, ev.start_mark, "expected a single YAML document");
done:
	yaml_event_delete(&ev);
	if (parser_ok)
		yaml_parser_delete(&d.parser);
	if (rc < 0)
		bs_value_clear(out);
	return rc;
}

/* ------------------------------------------------------------ encode */

static int write_cb(void *data, unsigned char *buf, size_t size)
{
	return bs__bytes_append(data, buf, size) == 0;
}

static int emitter_error(yaml_emitter_t *em)
{
	if (em->error == YAML_MEMORY_ERROR)
		return bs_error(BS_ENOMEM, "out of memory writing YAML");
	if (em->error == YAML_WRITER_ERROR)
		return BS_ENOMEM; /* the buffer's message stands */
	return bs_error(BS_ERROR, "YAML emitter: %s", em->problem ? em->problem : "unknown problem");
}

/* ev is consumed whatever happens. */
static int emit(yaml_emitter_t *em, yaml_event_t *ev)
{
	return yaml_emitter_emit(em, ev) ? 0 : emitter_error(em);
}

static int emit_scalar(yaml_emitter_t *em, const char *tag, const char *s, size_t n, yaml_scalar_style_t style)
{
	yaml_event_t ev;
	int implicit = tag == NULL;

	if (n > INT_MAX)
		return bs_error(BS_EINVAL, "string too long for YAML (%zu bytes)", n);
	if (!yaml_scalar_event_initialize(&ev, NULL, (yaml_char_t *)tag, (yaml_char_t *)s, (int)n, implicit, implicit,
	                                  style))
		return bs__oom();
	return emit(em, &ev);
}

/* Would a plain scalar of s read back as this same string? */
static bool plain_ok(const char *s, size_t n)
{
	if (n == 0 || resolve_plain(s, n) != R_STR)
		return false;
	if (strchr("-?:,[]{}#&*!|>'\"%@` ", s[0]) || s[n - 1] == ' ' || s[n - 1] == ':')
		return false;
	if (n >= 3 && memcmp(s, "...", 3) == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f)
			return false;
		if (c == ':' && i + 1 < n && s[i + 1] == ' ')
			return false;
		if (c == '#' && i > 0 && s[i - 1] == ' ')
			return false;
	}
	return true;
}

static int emit_string(yaml_emitter_t *em, const char *s, size_t n)
{
	char q[64];

	if (!bs__utf8_valid(s, n))
		return bs_error(BS_EINVAL, "string \"%s\" is not valid UTF-8", bs__quote(q, sizeof q, s, n));
	return emit_scalar(em, NULL, s, n, plain_ok(s, n) ? YAML_PLAIN_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
}

static int emit_value(yaml_emitter_t *em, const bs_value_t *v, int depth)
{
	yaml_event_t ev;
	char buf[40];
	int rc;

	switch (v->type) {
	case BS_NIL: return emit_scalar(em, NULL, "null", 4, YAML_PLAIN_SCALAR_STYLE);
	case BS_BOOL:
		return v->v.b ? emit_scalar(em, NULL, "true", 4, YAML_PLAIN_SCALAR_STYLE)
		              : emit_scalar(em, NULL, "false", 5, YAML_PLAIN_SCALAR_STYLE);
	case BS_INT:
		snprintf(buf, sizeof buf, "%lld", (long long)v->v.i);
		return emit_scalar(em, NULL, buf, strlen(buf), YAML_PLAIN_SCALAR_STYLE);
	case BS_UINT:
		snprintf(buf, sizeof buf, "%llu", (unsigned long long)v->v.u);
		return emit_scalar(em, NULL, buf, strlen(buf), YAML_PLAIN_SCALAR_STYLE);
	case BS_FLOAT:
		if (isnan(v->v.f))
			strcpy(buf, ".nan");
		else if (isinf(v->v.f))
			strcpy(buf, v->v.f > 0 ? ".inf" : "-.inf");
		else
			format_float(buf, v->v.f);
		return emit_scalar(em, NULL, buf, strlen(buf), YAML_PLAIN_SCALAR_STYLE);
	case BS_STR: return emit_string(em, v->v.s.ptr, v->v.s.len);
	case BS_BIN:
		if (v->v.s.len == 16 && !v->v.s.sub) {
			char dashed[37];

			bs__dashed(dashed, v->v.s.ptr);
			return emit_scalar(em, TAG_UUID, dashed, 36, YAML_PLAIN_SCALAR_STYLE);
		} else {
			size_t n;
			char *b64 = bs__base64_dup((const uint8_t *)v->v.s.ptr, v->v.s.len, &n);

			BS_ERR_ALLOC(b64);
			if (v->v.s.sub)
				snprintf(buf, sizeof buf, TAG_BINARY_SUB "%02x", v->v.s.sub);
			rc = emit_scalar(em, v->v.s.sub ? buf : TAG("binary"), b64, n, YAML_PLAIN_SCALAR_STYLE);
			free(b64);
			return rc;
		}
	case BS_ARRAY:
		if (depth >= BS_BODY_MAX_DEPTH)
			return bs_error(BS_EINVAL, "value nested deeper than %d", BS_BODY_MAX_DEPTH);
		if (!yaml_sequence_start_event_initialize(
			    &ev, NULL, NULL, 1, v->v.a.len ? YAML_BLOCK_SEQUENCE_STYLE : YAML_FLOW_SEQUENCE_STYLE))
			return bs__oom();
		if ((rc = emit(em, &ev)) < 0)
			return rc;
		for (size_t i = 0; i < v->v.a.len; i++)
			if ((rc = emit_value(em, &v->v.a.items[i], depth + 1)) < 0)
				return rc;
		yaml_sequence_end_event_initialize(&ev);
		return emit(em, &ev);
	case BS_MAP:
		if (depth >= BS_BODY_MAX_DEPTH)
			return bs_error(BS_EINVAL, "value nested deeper than %d", BS_BODY_MAX_DEPTH);
		if (!yaml_mapping_start_event_initialize(
			    &ev, NULL, NULL, 1, v->v.m.len ? YAML_BLOCK_MAPPING_STYLE : YAML_FLOW_MAPPING_STYLE))
			return bs__oom();
		if ((rc = emit(em, &ev)) < 0)
			return rc;
		for (size_t i = 0; i < v->v.m.len; i++) {
			const bs_pair_t *p = &v->v.m.items[i];

			if ((rc = emit_string(em, p->key, p->klen)) < 0 ||
			    (rc = emit_value(em, &p->val, depth + 1)) < 0)
				return rc;
		}
		yaml_mapping_end_event_initialize(&ev);
		return emit(em, &ev);
	}
	return bs_error(BS_EINVAL, "bad value type %d", (int)v->type);
}

int bs_yaml_encode(char **out, const bs_value_t *v)
{
	yaml_emitter_t em;
	yaml_event_t ev;
	bs_bytes_t buf = { 0 };
	bool em_ok = false;
	int rc;

	*out = NULL;
	if (!yaml_emitter_initialize(&em)) {
		rc = bs__oom();
		goto done;
	}
	em_ok = true;
	yaml_emitter_set_output(&em, write_cb, &buf);
	yaml_emitter_set_unicode(&em, 1);
	yaml_emitter_set_width(&em, -1);
	yaml_emitter_set_indent(&em, 2);
	yaml_emitter_set_break(&em, YAML_LN_BREAK);

	yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
	if ((rc = emit(&em, &ev)) < 0)
		goto done;
	yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
	if ((rc = emit(&em, &ev)) < 0)
		goto done;
	if ((rc = emit_value(&em, v, 0)) < 0)
		goto done;
	yaml_document_end_event_initialize(&ev, 1);
	if ((rc = emit(&em, &ev)) < 0)
		goto done;
	yaml_stream_end_event_initialize(&ev);
	if ((rc = emit(&em, &ev)) < 0)
		goto done;
	if (!yaml_emitter_flush(&em)) {
		rc = emitter_error(&em);
		goto done;
	}
	if ((rc = bs__bytes_append(&buf, "", 1)) < 0)
		goto done;
	*out = (char *)buf.ptr;
	buf.ptr = NULL;
done:
	if (em_ok)
		yaml_emitter_delete(&em);
	bs_bytes_free(&buf);
	return rc;
}

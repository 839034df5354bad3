/*
 * json.c - bs_value_t -> JSON (bs_json_encode), the Extended JSON specials
 * both readers share, and the reference reader through jansson (the reader
 * itself, bs_json_decode, is json_read.c).
 *
 * Bytes use MongoDB Extended JSON: {"$uuid": "dashed"} for 16 bytes of
 * subtype 0 (bagstore's uuid, ids among them), {"$binary": {"base64":
 * "...", "subType": "05"}} otherwise, the subtype kept (bs_value_t's sub).
 * Reading, a "$binary" of 16 bytes and subType "00" or "04" is a uuid:
 * "04" is the subtype Extended JSON's "$uuid" stands for. Floats JSON
 * cannot hold are {"$numberDouble": "NaN" | "Infinity" | "-Infinity"} and
 * integers above INT64_MAX are {"$numberDecimal": "digits"}. A map whose
 * only key is one of those four names is refused on output, since it would
 * read back as something else.
 */
#include "codec_internal.h"
#include "internal.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	const char *where;
	char path[256];
	size_t plen;
	int precision; /* encode: digits the floats need (15..17) */
} ctx_t;

/* Append ".key" or "[i]" to the path; returns the old length to restore. */
static size_t path_push_key(ctx_t *c, const char *key, size_t klen)
{
	size_t old = c->plen;
	char q[64];
	int n;

	bs__quote(q, sizeof q, key, klen);
	n = snprintf(c->path + c->plen, sizeof c->path - c->plen, ".%s", q);
	if (n > 0)
		c->plen = c->plen + (size_t)n >= sizeof c->path ? sizeof c->path - 1 : c->plen + (size_t)n;
	return old;
}

static size_t path_push_index(ctx_t *c, size_t i)
{
	size_t old = c->plen;
	int n = snprintf(c->path + c->plen, sizeof c->path - c->plen, "[%zu]", i);

	if (n > 0)
		c->plen = c->plen + (size_t)n >= sizeof c->path ? sizeof c->path - 1 : c->plen + (size_t)n;
	return old;
}

static void path_pop(ctx_t *c, size_t old)
{
	c->plen = old;
	c->path[old] = '\0';
}

/* An error naming where and the path. */
__attribute__((format(printf, 3, 4))) static int fail(ctx_t *c, int code, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (c->plen)
		return bs_error(code, "%s: at %s: %s", c->where, c->path, msg);
	return bs_error(code, "%s: %s", c->where, msg);
}

/* ------------------------------------------------------------ specials */

/* The one-key objects that stand for values JSON has no type for, read
 * from the value their key holds (the reader's and the reference's). On
 * -1, msg says why; BS_ENOMEM with the error set. */
static bool is_subtype(const char *s, size_t n)
{
	if (n < 1 || n > 2)
		return false;
	for (size_t i = 0; i < n; i++)
		if (bs__hexval((unsigned char)s[i]) < 0)
			return false;
	return true;
}

static bool str_is(const bs_value_t *v, const char *s)
{
	return v->type == BS_STR && v->v.s.len == strlen(s) && memcmp(v->v.s.ptr, s, v->v.s.len) == 0;
}

static int special_uuid(bs_value_t *out, const bs_value_t *arg, char *msg, size_t size)
{
	char q[80];
	bs_id_t id;

	if (arg->type != BS_STR)
		return snprintf(msg, size, "\"$uuid\" wants a string"), -1;
	if (bs__id_parse_n(&id, arg->v.s.ptr, arg->v.s.len) < 0)
		return snprintf(msg, size, "malformed id \"%s\": " BS__ID_FORMS,
		                bs__quote(q, sizeof q, arg->v.s.ptr, arg->v.s.len)),
		       -1;
	return bs_value_bin(out, id.b, sizeof id.b);
}

static int special_binary(bs_value_t *out, const bs_value_t *arg, char *msg, size_t size)
{
	const bs_value_t *b64 = NULL, *sub = NULL;
	int rc;

	if (arg->type != BS_MAP)
		return snprintf(msg, size, "\"$binary\" wants {\"base64\": \"...\", \"subType\": \"00\"}"), -1;
	for (size_t i = 0; i < arg->v.m.len; i++) {
		const bs_pair_t *p = &arg->v.m.items[i];

		if (p->klen == 6 && memcmp(p->key, "base64", 6) == 0)
			b64 = &p->val;
		else if (p->klen == 7 && memcmp(p->key, "subType", 7) == 0)
			sub = &p->val;
		else
			return snprintf(msg, size, "\"$binary\" has an unknown key (only base64 and subType)"), -1;
	}
	if (!b64 || b64->type != BS_STR)
		return snprintf(msg, size, "\"$binary\" wants a \"base64\" string"), -1;
	if (sub && !(sub->type == BS_STR && is_subtype(sub->v.s.ptr, sub->v.s.len)))
		return snprintf(msg, size, "\"$binary\" wants \"subType\" as 1 or 2 hex digits"), -1;
	rc = bs__base64_value(out, b64->v.s.ptr, b64->v.s.len);
	if (rc == 0 && sub)
		out->v.s.sub = bs__subtype(sub->v.s.ptr, sub->v.s.len, out->v.s.len);
	if (rc == -1)
		snprintf(msg, size, "\"$binary\" has malformed base64");
	return rc == BS_ENOMEM ? bs__oom() : rc;
}

static int special_double(bs_value_t *out, const bs_value_t *arg, char *msg, size_t size)
{
	char *end;
	double d;

	if (arg->type != BS_STR)
		return snprintf(msg, size, "\"$numberDouble\" wants a string"), -1;
	if (str_is(arg, "NaN")) {
		d = NAN;
	} else if (str_is(arg, "Infinity")) {
		d = INFINITY;
	} else if (str_is(arg, "-Infinity")) {
		d = -INFINITY;
	} else {
		/* A plain decimal number, as Extended JSON also allows. */
		const char *s = arg->v.s.ptr;
		size_t n = arg->v.s.len;
		bool ok = n > 0 && strlen(s) == n;

		for (size_t i = 0; ok && i < n; i++)
			ok = strchr("0123456789+-.eE", s[i]) != NULL;
		errno = 0;
		d = ok ? bs__strtod_c(s, &end) : 0;
		if (!ok || *end || errno == ERANGE || isinf(d))
			return snprintf(msg, size, "\"$numberDouble\" wants NaN, Infinity, -Infinity or a number"), -1;
	}
	bs_value_float(out, d);
	return 0;
}

static int special_decimal(bs_value_t *out, const bs_value_t *arg, char *msg, size_t size)
{
	const char *s;
	size_t n, i = 0;
	uint64_t u = 0;
	bool neg = false;

	if (arg->type != BS_STR)
		return snprintf(msg, size, "\"$numberDecimal\" wants a string"), -1;
	s = arg->v.s.ptr;
	n = arg->v.s.len;
	if (n && s[0] == '-') {
		neg = true;
		i = 1;
	}
	if (i == n)
		goto bad;
	for (; i < n; i++) {
		unsigned d = (unsigned char)s[i] - '0';

		if (d > 9 || u > (UINT64_MAX - d) / 10)
			goto bad;
		u = u * 10 + d;
	}
	if (bs__value_signed(out, neg, u) == 0)
		return 0;
bad:
	return snprintf(msg, size, "\"$numberDecimal\" wants an integer that fits 64 bits"), -1;
}

static const struct {
	const char *name;
	size_t len;
	int (*decode)(bs_value_t *out, const bs_value_t *arg, char *msg, size_t size);
} specials[] = {
	{ "$uuid", 5, special_uuid },
	{ "$binary", 7, special_binary },
	{ "$numberDouble", 13, special_double },
	{ "$numberDecimal", 14, special_decimal },
};

int bs__json_special_index(const char *k, size_t n)
{
	if (n < 5 || k[0] != '$')
		return -1;
	for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
		if (specials[i].len == n && memcmp(specials[i].name, k, n) == 0)
			return (int)i;
	return -1;
}

int bs__json_special(int which, bs_value_t *out, const bs_value_t *arg, char *msg, size_t size)
{
	bs_value_nil(out);
	return specials[which].decode(out, arg, msg, size);
}

/* ------------------------------------------------------------ the reference reader */

/*
 * bs_json_decode reads JSON itself (json_read.c); this is the same through
 * jansson's tree, kept as the reference tests/unit/test_codec.c and
 * fuzz_jsonl compare it with: what one takes the other takes, as the same
 * value.
 */

/* A jansson value as a value, no special read (a special's argument). */
static int plain(bs_value_t *out, json_t *j)
{
	const char *key;
	size_t klen;
	json_t *v;
	int rc = 0;

	bs_value_nil(out);
	switch (json_typeof(j)) {
	case JSON_OBJECT:
		bs_value_map(out);
		if ((rc = bs__value_map_reserve(out, json_object_size(j))) < 0)
			return rc;
		json_object_keylen_foreach(j, key, klen, v)
		{
			bs_pair_t *p = &out->v.m.items[out->v.m.len];

			bs_value_nil(&p->val);
			if (!(p->key = bs__memdup0(key, klen)))
				return bs__oom();
			p->klen = klen;
			out->v.m.len++;
			if ((rc = plain(&p->val, v)) < 0)
				return rc;
		}
		return 0;
	case JSON_ARRAY:
		bs_value_array(out);
		for (size_t i = 0; i < json_array_size(j); i++) {
			bs_value_t item;

			rc = plain(&item, json_array_get(j, i));
			if (rc == 0)
				rc = bs_array_push(out, &item);
			bs_value_clear(&item);
			if (rc < 0)
				return rc;
		}
		return 0;
	case JSON_STRING: return bs_value_str(out, json_string_value(j), json_string_length(j));
	case JSON_INTEGER: bs_value_int(out, (int64_t)json_integer_value(j)); return 0;
	case JSON_REAL: bs_value_float(out, json_real_value(j)); return 0;
	case JSON_TRUE:
	case JSON_FALSE: bs_value_bool(out, json_is_true(j)); return 0;
	case JSON_NULL: return 0;
	}
	return bs_error(BS_EINVAL, "unknown JSON type");
}

static int from_json(ctx_t *c, bs_value_t *out, json_t *j, int depth);

static int from_object(ctx_t *c, bs_value_t *out, json_t *j, int depth)
{
	const char *key;
	size_t klen;
	json_t *v;
	int rc = 0;

	if (json_object_size(j) == 1) {
		void *it = json_object_iter(j);
		int sp = bs__json_special_index(json_object_iter_key(it), json_object_iter_key_len(it));

		if (sp >= 0) {
			bs_value_t arg;
			char msg[256];

			if ((rc = plain(&arg, json_object_iter_value(it))) == 0)
				rc = bs__json_special(sp, out, &arg, msg, sizeof msg);
			bs_value_clear(&arg);
			return rc == -1 ? fail(c, BS_EINVAL, "%s", msg) : rc;
		}
	}
	bs_value_map(out);
	if (depth >= BS_BODY_MAX_DEPTH)
		return fail(c, BS_EINVAL, "nested deeper than %d", BS_BODY_MAX_DEPTH);
	if ((rc = bs__value_map_reserve(out, json_object_size(j))) < 0)
		return rc;
	json_object_keylen_foreach(j, key, klen, v)
	{
		bs_pair_t *p = &out->v.m.items[out->v.m.len];
		size_t old = path_push_key(c, key, klen);

		if (!(p->key = bs__memdup0(key, klen)))
			return bs__oom();
		p->klen = klen;
		rc = from_json(c, &p->val, v, depth + 1);
		out->v.m.len++; /* p->val is cleanable either way */
		if (rc < 0)
			return rc;
		path_pop(c, old);
	}
	return 0;
}

static int from_json(ctx_t *c, bs_value_t *out, json_t *j, int depth)
{
	int rc;

	bs_value_nil(out);
	switch (json_typeof(j)) {
	case JSON_OBJECT: return from_object(c, out, j, depth);
	case JSON_ARRAY:
		bs_value_array(out);
		if (depth >= BS_BODY_MAX_DEPTH)
			return fail(c, BS_EINVAL, "nested deeper than %d", BS_BODY_MAX_DEPTH);
		if (json_array_size(j) == 0)
			return 0;
		out->v.a.items = calloc(json_array_size(j), sizeof *out->v.a.items);
		BS_ERR_ALLOC(out->v.a.items);
		out->v.a.cap = json_array_size(j);
		for (size_t i = 0; i < json_array_size(j); i++) {
			size_t old = path_push_index(c, i);

			rc = from_json(c, &out->v.a.items[i], json_array_get(j, i), depth + 1);
			out->v.a.len++;
			if (rc < 0)
				return rc;
			path_pop(c, old);
		}
		return 0;
	default: return plain(out, j);
	}
}

/* jansson reads 1e-400 as 0.0 without a word: find a number token (outside
 * strings) whose value does not survive as a double, and say where. */
static int check_numbers(const ctx_t *c, const char *text, size_t len)
{
	bool in_str = false;
	int line = 1, col = 1;
	for (size_t i = 0; i < len; i++, col++) {
		char ch = text[i];
		if (ch == '\n') {
			line++;
			col = 0;
			continue;
		}
		if (in_str) {
			if (ch == '\\')
				i++, col++;
			else if (ch == '"')
				in_str = false;
			continue;
		}
		if (ch == '"') {
			in_str = true;
			continue;
		}
		if (ch != '-' && (ch < '0' || ch > '9'))
			continue;
		size_t n = 0;
		while (i + n < len && strchr("0123456789+-.eE", text[i + n]) && text[i + n])
			n++;
		char num[64], *end;
		bool real = memchr(text + i, '.', n) || memchr(text + i, 'e', n) || memchr(text + i, 'E', n);
		if (real && n < sizeof num) {
			memcpy(num, text + i, n);
			num[n] = '\0';
			errno = 0;
			double d = bs__strtod_c(num, &end);
			bool nonzero = strpbrk(num, "123456789") &&
			               strpbrk(num, "123456789") < (strpbrk(num, "eE") ? strpbrk(num, "eE") : num + n);
			if (errno == ERANGE && d == 0 && nonzero)
				return bs_error(BS_EINVAL,
				                "%s:%d:%d: the number %s is too small for a double: it would be "
				                "stored as 0",
				                c->where, line, col, num);
		}
		i += n - 1;
		col += (int)n - 1;
	}
	return 0;
}

int bs__json_decode_jansson(bs_value_t *out, const char *text, size_t len, const char *where)
{
	ctx_t c = { .where = where ? where : "<json>" };
	json_error_t err;
	json_t *root = NULL;
	int rc;

	bs_value_nil(out);
	if (text && (rc = check_numbers(&c, text, len)) < 0)
		goto done;
	root = json_loadb(text ? text : "", text ? len : 0, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL,
	                  &err);
	if (!root) {
		if (err.line >= 1)
			rc = bs_error(BS_EINVAL, "%s:%d:%d: %s", c.where, err.line, err.column, err.text);
		else
			rc = bs_error(BS_EINVAL, "%s: %s", c.where, err.text);
		goto done;
	}
	rc = from_json(&c, out, root, 0);
done:
	json_decref(root);
	if (rc < 0)
		bs_value_clear(out);
	return rc;
}

/* A NUL byte right after a digit or a letter of true, false or null. */
static bool nul_after_token(const char *text, size_t len)
{
	for (size_t i = 1; i < len; i++)
		if (!text[i] && ((text[i - 1] >= '0' && text[i - 1] <= '9') || (text[i - 1] >= 'a' && text[i - 1] <= 'z')))
			return true;
	return false;
}

bool bs__json_jansson_misses(const char *text, size_t len, const char *refusal)
{
	return strstr(refusal, "too small for a double") ||
	       (strstr(refusal, "byte 0x00") && nul_after_token(text, len));
}

/* ------------------------------------------------------------ encode */

static json_t *special(const char *key, json_t *v)
{
	json_t *o;

	if (!v || !(o = json_object()))
		goto fail;
	if (json_object_set_new(o, key, v) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
fail:
	json_decref(v);
	return NULL;
}

static int to_json(ctx_t *c, json_t **out, const bs_value_t *v, int depth);

static json_t *float_json(ctx_t *c, double f)
{
	if (isnan(f))
		return special("$numberDouble", json_string("NaN"));
	if (isinf(f))
		return special("$numberDouble", json_string(f > 0 ? "Infinity" : "-Infinity"));
	char buf[40];
	int p = bs__float_format(buf, f);
	if (p > c->precision)
		c->precision = p;
	return json_real(f);
}

/* A uuid (16 bytes, subtype 0) as {"$uuid"}, other bytes as {"$binary"};
 * NULL when out of memory. */
static json_t *bytes_json(const bs_value_t *v)
{
	char sub[3];

	if (v->v.s.len == 16 && !v->v.s.sub) {
		char buf[37];
		bs__dashed(buf, v->v.s.ptr);
		return special("$uuid", json_string(buf));
	}
	size_t n;
	char *b64 = bs__base64_dup((const uint8_t *)v->v.s.ptr, v->v.s.len, &n);
	if (!b64)
		return NULL;
	json_t *inner = json_object();
	if (inner && (json_object_set_new(inner, "base64", json_stringn(b64, n)) < 0 ||
	              (snprintf(sub, sizeof sub, "%02x", v->v.s.sub),
	               json_object_set_new(inner, "subType", json_string(sub))) < 0)) {
		json_decref(inner);
		inner = NULL;
	}
	free(b64);
	return special("$binary", inner);
}

static int array_json(ctx_t *c, json_t *j, const bs_value_t *v, int depth)
{
	for (size_t i = 0; i < v->v.a.len; i++) {
		size_t old = path_push_index(c, i);
		json_t *item;
		int rc;
		if ((rc = to_json(c, &item, &v->v.a.items[i], depth + 1)) < 0)
			return rc;
		if (json_array_append_new(j, item) < 0)
			return bs__oom();
		path_pop(c, old);
	}
	return 0;
}

static int map_json(ctx_t *c, json_t *j, const bs_value_t *v, int depth)
{
	for (size_t i = 0; i < v->v.m.len; i++) {
		const bs_pair_t *p = &v->v.m.items[i];
		size_t old = path_push_key(c, p->key, p->klen);
		json_t *item;
		int rc;
		if (!bs__utf8_valid(p->key, p->klen))
			return fail(c, BS_EINVAL, "key is not valid UTF-8");
		if (memchr(p->key, '\0', p->klen)) /* jansson cannot read it back */
			return fail(c, BS_EINVAL, "key contains a NUL byte");
		if ((rc = to_json(c, &item, &p->val, depth + 1)) < 0)
			return rc;
		if (json_object_setn_new(j, p->key, p->klen, item) < 0)
			return bs__oom();
		path_pop(c, old);
	}
	return 0;
}

static int to_json(ctx_t *c, json_t **out, const bs_value_t *v, int depth)
{
	json_t *j = NULL;
	char q[64], buf[24];
	int rc = 0;

	*out = NULL;
	switch (v->type) {
	case BS_NIL: j = json_null(); break;
	case BS_BOOL: j = json_boolean(v->v.b); break;
	case BS_INT: j = json_integer((json_int_t)v->v.i); break;
	case BS_UINT:
		snprintf(buf, sizeof buf, "%llu", (unsigned long long)v->v.u);
		j = special("$numberDecimal", json_string(buf));
		break;
	case BS_FLOAT: j = float_json(c, v->v.f); break;
	case BS_STR:
		if (!bs__utf8_valid(v->v.s.ptr, v->v.s.len))
			return fail(c, BS_EINVAL, "string \"%s\" is not valid UTF-8",
			            bs__quote(q, sizeof q, v->v.s.ptr, v->v.s.len));
		j = json_stringn(v->v.s.ptr, v->v.s.len);
		break;
	case BS_BIN: j = bytes_json(v); break;
	case BS_ARRAY:
		if (depth >= BS_BODY_MAX_DEPTH)
			return fail(c, BS_EINVAL, "nested deeper than %d", BS_BODY_MAX_DEPTH);
		if ((j = json_array()) && (rc = array_json(c, j, v, depth)) < 0)
			goto fail;
		break;
	case BS_MAP:
		if (depth >= BS_BODY_MAX_DEPTH)
			return fail(c, BS_EINVAL, "nested deeper than %d", BS_BODY_MAX_DEPTH);
		if (v->v.m.len == 1 && bs__json_special_index(v->v.m.items[0].key, v->v.m.items[0].klen) >= 0)
			return fail(c, BS_EINVAL,
			            "a map whose only key is \"%s\" cannot be written as JSON: it would read back as a "
			            "special value",
			            v->v.m.items[0].key);
		if ((j = json_object()) && (rc = map_json(c, j, v, depth)) < 0)
			goto fail;
		break;
	default: return fail(c, BS_EINVAL, "bad value type %d", (int)v->type);
	}
	BS_ERR_ALLOC(j);
	*out = j;
	return 0;
fail:
	json_decref(j);
	return rc;
}

/* ------------------------------------------------------------ compact writer */

/* The compact form without building a jansson tree: what get, query and
 * export print for every entity. It writes exactly what json_dumps writes
 * for the same value (test_codec compares the two on random values):
 * jansson's escapes, its real formatting at the document's precision
 * (the largest any float needs to read back), its separators. */

typedef struct {
	bs_bytes_t out;
	int precision;
	locale_t c_locale;
} writer_t;

static void scan_precision(writer_t *w, const bs_value_t *v)
{
	char buf[40];
	int p;
	switch (v->type) {
	case BS_FLOAT:
		if (isfinite(v->v.f) && (p = bs__float_format(buf, v->v.f)) > w->precision)
			w->precision = p;
		break;
	case BS_ARRAY:
		for (size_t i = 0; i < v->v.a.len; i++)
			scan_precision(w, &v->v.a.items[i]);
		break;
	case BS_MAP:
		for (size_t i = 0; i < v->v.m.len; i++)
			scan_precision(w, &v->v.m.items[i].val);
		break;
	default: break;
	}
}

static int put(writer_t *w, const char *s, size_t n)
{
	return bs__bytes_append(&w->out, s, n);
}
static int puts_(writer_t *w, const char *s)
{
	return put(w, s, strlen(s));
}

/* The bytes a JSON string must escape: control characters, '"', '\'. */
static const bool json_escaped[256] = {
	[0x00] = 1, [0x01] = 1, [0x02] = 1, [0x03] = 1, [0x04] = 1, [0x05] = 1, [0x06] = 1, [0x07] = 1,
	[0x08] = 1, [0x09] = 1, [0x0a] = 1, [0x0b] = 1, [0x0c] = 1, [0x0d] = 1, [0x0e] = 1, [0x0f] = 1,
	[0x10] = 1, [0x11] = 1, [0x12] = 1, [0x13] = 1, [0x14] = 1, [0x15] = 1, [0x16] = 1, [0x17] = 1,
	[0x18] = 1, [0x19] = 1, [0x1a] = 1, [0x1b] = 1, [0x1c] = 1, [0x1d] = 1, [0x1e] = 1, [0x1f] = 1,
	['"'] = 1,  ['\\'] = 1,
};

static int put_string(writer_t *w, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	int rc = put(w, "\"", 1);
	size_t i = 0, start = 0;

	while (!rc) {
		while (i < n && !json_escaped[(unsigned char)s[i]])
			i++;
		if (i > start && (rc = put(w, s + start, i - start)))
			break;
		if (i == n)
			break;
		unsigned char ch = (unsigned char)s[i++];
		char u[7] = { '\\', (char)ch, 0 };
		switch (ch) {
		case '"':
		case '\\': break;
		case '\b': u[1] = 'b'; break;
		case '\f': u[1] = 'f'; break;
		case '\n': u[1] = 'n'; break;
		case '\r': u[1] = 'r'; break;
		case '\t': u[1] = 't'; break;
		default:
			u[1] = 'u', u[2] = '0', u[3] = '0', u[4] = hex[ch >> 4], u[5] = hex[ch & 15], u[6] = 0;
		}
		rc = puts_(w, u);
		start = i;
	}
	return rc ? rc : put(w, "\"", 1);
}

/* A finite double as jansson's jsonp_dtostr writes it. */
static int put_real(writer_t *w, double d)
{
	char buf[48];
	int n = w->precision == 15 ? bs__float_short(buf, d) : 0;
	if (!n) {
		locale_t old = w->c_locale ? uselocale(w->c_locale) : (locale_t)0;
		n = snprintf(buf, sizeof buf - 2, "%.*g", w->precision ? w->precision : 17, d);
		if (old)
			uselocale(old);
	}
	if (!strchr(buf, '.') && !strchr(buf, 'e')) {
		memcpy(buf + n, ".0", 3);
		n += 2;
	}
	char *e = strchr(buf, 'e');
	if (e) { /* no '+' and no leading zeros in the exponent */
		char *start = e + 1, *end;
		if (*start == '-')
			start++;
		end = start;
		while (*end == '+' || *end == '0')
			end++;
		if (!*end)
			end--; /* keep one digit */
		memmove(start, end, strlen(end) + 1);
		n = (int)strlen(buf);
	}
	return put(w, buf, (size_t)n);
}

static int put_special(writer_t *w, const char *key, const char *val)
{
	int rc = puts_(w, "{\"");
	if (!rc)
		rc = puts_(w, key);
	if (!rc)
		rc = puts_(w, "\":\"");
	if (!rc)
		rc = puts_(w, val);
	return rc ? rc : puts_(w, "\"}");
}

static int put_value(writer_t *w, const bs_value_t *v)
{
	char buf[48];
	int rc = 0;
	switch (v->type) {
	case BS_NIL: return puts_(w, "null");
	case BS_BOOL: return puts_(w, v->v.b ? "true" : "false");
	case BS_INT: {
		char *e = buf + sizeof buf, *q = bs__uint_text(e, v->v.i < 0 ? 0 - (uint64_t)v->v.i : (uint64_t)v->v.i);
		if (v->v.i < 0)
			*--q = '-';
		return put(w, q, (size_t)(e - q));
	}
	case BS_UINT:
		snprintf(buf, sizeof buf, "%llu", (unsigned long long)v->v.u);
		return put_special(w, "$numberDecimal", buf);
	case BS_FLOAT:
		if (isnan(v->v.f))
			return put_special(w, "$numberDouble", "NaN");
		if (isinf(v->v.f))
			return put_special(w, "$numberDouble", v->v.f > 0 ? "Infinity" : "-Infinity");
		return put_real(w, v->v.f);
	case BS_STR: return put_string(w, v->v.s.ptr, v->v.s.len);
	case BS_BIN:
		if (v->v.s.len == 16 && !v->v.s.sub) {
			bs__dashed(buf, v->v.s.ptr);
			return put_special(w, "$uuid", buf);
		} else {
			size_t n;
			char *b64 = bs__base64_dup((const uint8_t *)v->v.s.ptr, v->v.s.len, &n);
			BS_ERR_ALLOC(b64);
			rc = puts_(w, "{\"$binary\":{\"base64\":\"");
			if (!rc)
				rc = put(w, b64, n);
			if (!rc)
				rc = puts_(w, "\",\"subType\":\"");
			snprintf(buf, sizeof buf, "%02x\"}}", v->v.s.sub);
			if (!rc)
				rc = puts_(w, buf);
			free(b64);
			return rc;
		}
	case BS_ARRAY:
		rc = put(w, "[", 1);
		for (size_t i = 0; i < v->v.a.len && !rc; i++) {
			if (i)
				rc = put(w, ",", 1);
			if (!rc)
				rc = put_value(w, &v->v.a.items[i]);
		}
		return rc ? rc : put(w, "]", 1);
	case BS_MAP:
		rc = put(w, "{", 1);
		for (size_t i = 0; i < v->v.m.len && !rc; i++) {
			const bs_pair_t *p = &v->v.m.items[i];
			if (i)
				rc = put(w, ",", 1);
			if (!rc)
				rc = put_string(w, p->key, p->klen);
			if (!rc)
				rc = put(w, ":", 1);
			if (!rc)
				rc = put_value(w, &p->val);
		}
		return rc ? rc : put(w, "}", 1);
	}
	return bs_error(BS_EINVAL, "bad value type %d", (int)v->type);
}

/* The compact form of v, NUL-terminated, into *out (caller frees). */
static int write_compact(char **out, const bs_value_t *v)
{
	writer_t w = { .c_locale = bs__c_locale() };
	int rc;
	if ((rc = bs__value_printable(v)) < 0)
		return rc;
	scan_precision(&w, v);
	if (!(rc = put_value(&w, v)) && !(rc = put(&w, "", 1)))
		*out = (char *)w.out.ptr;
	else
		bs_bytes_free(&w.out);
	return rc;
}

int bs__json_encode_jansson(char **out, const bs_value_t *v, int flags);

int bs_json_encode(char **out, const bs_value_t *v, int flags)
{
	*out = NULL;
	if (!(flags & BS_JSON_PRETTY))
		return write_compact(out, v);
	return bs__json_encode_jansson(out, v, flags);
}

/* Through jansson: the pretty form, and the reference the compact writer
 * is tested against. */
int bs__json_encode_jansson(char **out, const bs_value_t *v, int flags)
{
	ctx_t c = { .where = "JSON output" };
	json_t *root = NULL;
	size_t jflags;
	int rc;

	*out = NULL;
	if ((rc = to_json(&c, &root, v, 0)) < 0)
		goto done;
	jflags = JSON_ENCODE_ANY | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(c.precision ? c.precision : 17);
	jflags |= (flags & BS_JSON_PRETTY) ? JSON_INDENT(2) : JSON_COMPACT;
	if (!(*out = json_dumps(root, jflags)))
		rc = bs_error(BS_ENOMEM, "json_dumps failed");
done:
	json_decref(root);
	return rc;
}

/* ------------------------------------------------------------ printable */

/* Values and bytes counted as the decoder counts them (msgpack.c charge). */
typedef struct {
	size_t items, memory;
} tally_t;

/* path[len..] = s[..n], cut to the room there is (snprintf's way, without
 * its cost: this runs for every key of every body written). */
static void path_set(char *path, size_t size, size_t len, const char *s, size_t n)
{
	if (len >= size)
		return;
	if (n > size - 1 - len)
		n = size - 1 - len;
	memcpy(path + len, s, n);
	path[len + n] = '\0';
}

static int printable(const bs_value_t *v, int depth, char *path, size_t size, tally_t *t)
{
	char q[64];
	size_t len = strlen(path);
	if (v->type == BS_ARRAY || v->type == BS_MAP) {
		size_t n = v->type == BS_ARRAY ? v->v.a.len : v->v.m.len;
		t->items += n;
		t->memory += n * (v->type == BS_ARRAY ? sizeof(bs_value_t) : sizeof(bs_pair_t) + 2 * sizeof(size_t));
		if (v->type == BS_MAP)
			for (size_t i = 0; i < n; i++)
				t->memory += v->v.m.items[i].klen + 1;
	} else if (v->type == BS_STR || v->type == BS_BIN) {
		t->memory += v->v.s.len + 1;
	}
	if (t->items > BS_BODY_MAX_ITEMS)
		return bs_error(BS_EINVAL, "body holds more than %u values", BS_BODY_MAX_ITEMS);
	if (t->memory > BS_BODY_MAX_DECODED)
		return bs_error(BS_EINVAL, "body decodes to more than %u MiB", BS_BODY_MAX_DECODED >> 20);
	switch (v->type) {
	case BS_STR:
		if (!bs__utf8_valid(v->v.s.ptr, v->v.s.len))
			return bs_error(BS_EINVAL, "%s: string \"%s\" is not valid UTF-8", path[0] ? path : "value",
			                bs__quote(q, sizeof q, v->v.s.ptr, v->v.s.len));
		return 0;
	case BS_ARRAY:
		for (size_t i = 0; i < v->v.a.len; i++) {
			char ix[24], *e = ix + sizeof ix, *d;
			e[-1] = ']';
			d = bs__uint_text(e - 1, i);
			*--d = '[';
			path_set(path, size, len, d, (size_t)(e - d));
			int rc = printable(&v->v.a.items[i], depth + 1, path, size, t);
			if (rc)
				return rc;
		}
		path[len] = '\0';
		return 0;
	case BS_MAP:
		if (v->v.m.len == 1 && bs__json_special_index(v->v.m.items[0].key, v->v.m.items[0].klen) >= 0)
			return bs_error(BS_EINVAL,
			                "%s: a map whose only key is \"%s\" would read back as a special value, "
			                "not a map",
			                path[0] ? path : "value", v->v.m.items[0].key);
		for (size_t i = 0; i < v->v.m.len; i++) {
			const bs_pair_t *p = &v->v.m.items[i];
			if (!bs__utf8_valid(p->key, p->klen) || memchr(p->key, '\0', p->klen))
				return bs_error(BS_EINVAL, "%s: key \"%s\" %s", path[0] ? path : "value",
				                bs__quote(q, sizeof q, p->key, p->klen),
				                memchr(p->key, '\0', p->klen) ? "holds a NUL byte"
				                                              : "is not valid UTF-8");
			size_t at = len;
			if (len)
				path_set(path, size, at++, ".", 1);
			path_set(path, size, at, p->key, p->klen < 64 ? p->klen : 64);
			int rc = printable(&p->val, depth + 1, path, size, t);
			if (rc)
				return rc;
			path[len] = '\0';
		}
		return 0;
	default: return 0;
	}
}

int bs__value_printable(const bs_value_t *v)
{
	char path[512] = "";
	tally_t t = { 1, 0 };
	return printable(v, 0, path, sizeof path, &t);
}

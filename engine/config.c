/*
 * config.c - the configuration file: reading bagstore.yaml with libyaml,
 * checking every key against what bagstore knows, filling a bs_config_t
 * (shards in their declared order, timeouts, declared indexes, cleaner
 * settings), freeing it, and the fingerprint of the ordered shard list.
 *
 * The YAML is first read into a small tree of nodes that remember their
 * line and column, so that every message can point at the offending spot:
 * "FILE:LINE:COL: what is wrong". Passwords are refused, never echoed.
 */
#include "codec_internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <yaml.h>

#define DEFAULT_PATH "./bagstore.yaml"
#define MAX_FILE_BYTES (16u << 20)
#define MAX_NODES (1u << 20)  /* YAML nodes (scalars, sequences, mappings) */
#define MAX_DEPTH 64          /* nesting of YAML collections */
#define MAX_SECONDS 1000000.0 /* upper bound of every duration */
#define SHARD_NAME_MAX 64
#define ARENA_BLOCK (64u << 10)

/* ------------------------------------------------------------ the tree */

/*
 * The tree is compact, because a configuration's size is the attacker's
 * choice up to MAX_FILE_BYTES: every node, kid array and scalar text lives
 * in one arena freed at once (no allocation per node, kid arrays exactly
 * sized), a node is 40 bytes, and a document of more than MAX_NODES nodes
 * is refused at the node past the cap. A flat list of 16 MiB took ~1 GB as
 * a node per malloc with doubling kid arrays; it now stops at 1,048,576
 * nodes, some 50 MB. A real configuration is kilobytes: 65,536 shards of
 * six keys each are 852,000 nodes.
 */
enum { N_SCALAR, N_SEQ, N_MAP };

typedef struct node node;
struct node {
	char *str;     /* scalar: value, NUL-terminated (in the arena) */
	node **kids;   /* sequence: items; mapping: key, value, key, value... */
	uint32_t len;  /* scalar: bytes of str */
	uint32_t n;    /* kids */
	int line, col; /* 1-based, from libyaml's start mark */
	uint8_t kind;
	bool plain; /* scalar: unquoted (may then be null) */
};

typedef struct block block;
struct block {
	block *next;
	size_t used, cap;
	max_align_t data[];
};

typedef struct {
	const char *file; /* names the input in messages */
	const char *text;
	size_t len;
	yaml_parser_t parser;
	block *arena; /* the tree's nodes, kid arrays and texts */
	node **stack; /* the kids of the collections being read, in order */
	size_t nstack, capstack;
	size_t nodes;
} ctx;

static void arena_free(ctx *c)
{
	while (c->arena) {
		block *b = c->arena;
		c->arena = b->next;
		free(b);
	}
	free(c->stack);
	c->stack = NULL;
	c->nstack = c->capstack = 0;
}

/* size bytes from the arena at a multiple of align (a power of 2: a
 * node's, a pointer's, 1 for texts); NULL when out of memory. A large
 * request gets a block of its own. */
static void *arena_alloc(ctx *c, size_t size, size_t align)
{
	block *b = c->arena;
	size_t at = b ? (b->used + align - 1) & ~(align - 1) : 0;

	if (!b || b->cap < at || b->cap - at < size) {
		size_t cap = size > ARENA_BLOCK ? size : ARENA_BLOCK;
		if ((b = malloc(sizeof *b + cap)) == NULL)
			return NULL;
		b->used = 0;
		b->cap = cap;
		at = 0;
		/* a block of its own goes behind the current one, which stays
		 * the one to bump from */
		if (size > ARENA_BLOCK && c->arena) {
			b->next = c->arena->next;
			c->arena->next = b;
		} else {
			b->next = c->arena;
			c->arena = b;
		}
	}
	b->used = at + size;
	return (char *)b->data + at;
}

static int nomem(void)
{
	return bs_error(BS_ENOMEM, "out of memory reading the configuration");
}

static int errv(const ctx *c, int line, int col, const char *fmt, va_list ap)
{
	char msg[768];

	vsnprintf(msg, sizeof msg, fmt, ap);
	return bs_error(BS_ECONFIG, "%s:%d:%d: %s", c->file, line, col, msg);
}

/* An error at node n. */
static int nerr(const ctx *c, const node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int nerr(const ctx *c, const node *n, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = errv(c, n ? n->line : 1, n ? n->col : 1, fmt, ap);
	va_end(ap);
	return rc;
}

static int perr(const ctx *c, int line, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int perr(const ctx *c, int line, int col, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = errv(c, line, col, fmt, ap);
	va_end(ap);
	return rc;
}

/* libyaml's own complaint, at its own position. */
static int yaml_fail(const ctx *c)
{
	const yaml_parser_t *p = &c->parser;
	int line = (int)p->problem_mark.line + 1, col = (int)p->problem_mark.column + 1;
	const char *problem = p->problem ? p->problem : "unknown problem";

	if (p->error == YAML_MEMORY_ERROR)
		return nomem();
	if (p->error == YAML_READER_ERROR) {
		/* The reader reports a byte offset, not a mark. */
		size_t i, off = p->problem_offset < c->len ? p->problem_offset : c->len;
		line = 1;
		col = 1;
		for (i = 0; i < off; i++) {
			if (c->text[i] == '\n') {
				line++;
				col = 1;
			} else {
				col++;
			}
		}
		if (p->problem_value != -1)
			return perr(c, line, col, "invalid YAML: %s (byte 0x%02x)", problem, p->problem_value & 0xff);
		return perr(c, line, col, "invalid YAML: %s", problem);
	}
	if (p->context)
		return perr(c, line, col, "invalid YAML: %s (%s at line %d, column %d)", problem, p->context,
		            (int)p->context_mark.line + 1, (int)p->context_mark.column + 1);
	return perr(c, line, col, "invalid YAML: %s", problem);
}

static int next_event(ctx *c, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&c->parser, ev))
		return yaml_fail(c);
	return 0;
}

static int stack_push(ctx *c, node *kid)
{
	if (BS_ARRAY_GROW(c->stack, c->nstack, c->capstack, 64))
		return nomem(); /* the configuration's own message */
	c->stack[c->nstack++] = kid;
	return 0;
}

/* Build the node that starts with *ev (consumed here) and its children. */
static int load_node(node **out, ctx *c, yaml_event_t *ev, int depth)
{
	node *n = NULL;
	yaml_event_t kev;
	int error = 0, end;
	size_t base = c->nstack;

	*out = NULL;
	if ((n = arena_alloc(c, sizeof *n, _Alignof(node))) == NULL) {
		error = nomem();
		goto done;
	}
	memset(n, 0, sizeof *n);
	n->line = (int)ev->start_mark.line + 1;
	n->col = (int)ev->start_mark.column + 1;
	if (++c->nodes > MAX_NODES) {
		error = nerr(c, n,
		             "more than %u YAML nodes (keys, values, lists and mappings): a bagstore "
		             "configuration is far smaller; is this the right file?",
		             MAX_NODES);
		goto done;
	}

	switch (ev->type) {
	case YAML_ALIAS_EVENT:
		error = nerr(c, n, "aliases (*%s) are not supported: write the value out in full",
		             (const char *)ev->data.alias.anchor);
		goto done;
	case YAML_SCALAR_EVENT:
		n->kind = N_SCALAR;
		n->len = (uint32_t)ev->data.scalar.length; /* < MAX_FILE_BYTES */
		if ((n->str = arena_alloc(c, (size_t)n->len + 1, 1)) == NULL) {
			error = nomem();
			goto done;
		}
		memcpy(n->str, ev->data.scalar.value, n->len);
		n->str[n->len] = '\0';
		n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
		goto done;
	case YAML_SEQUENCE_START_EVENT:
		n->kind = N_SEQ;
		end = YAML_SEQUENCE_END_EVENT;
		break;
	case YAML_MAPPING_START_EVENT:
		n->kind = N_MAP;
		end = YAML_MAPPING_END_EVENT;
		break;
	default: error = nerr(c, n, "unexpected YAML event"); goto done;
	}

	if (depth >= MAX_DEPTH) {
		error = nerr(c, n, "nested too deeply (more than %d levels)", MAX_DEPTH);
		goto done;
	}
	for (;;) {
		node *kid;

		if ((error = next_event(c, &kev)) < 0)
			goto done;
		if ((int)kev.type == end) {
			yaml_event_delete(&kev);
			break;
		}
		if ((error = load_node(&kid, c, &kev, depth + 1)) < 0 || (error = stack_push(c, kid)) < 0)
			goto done;
	}
	/* the kids, read onto the stack, into an array of the exact size */
	n->n = (uint32_t)(c->nstack - base);
	if (n->n && (n->kids = arena_alloc(c, n->n * sizeof *n->kids, _Alignof(node *))) == NULL) {
		error = nomem();
		goto done;
	}
	if (n->n)
		memcpy(n->kids, c->stack + base, n->n * sizeof *n->kids);

done:
	c->nstack = base;
	yaml_event_delete(ev);
	if (error == 0)
		*out = n;
	return error;
}

/* The document's root node, NULL for an empty document. */
static int load_tree(node **out, ctx *c)
{
	yaml_event_t ev;
	int error = 0;
	node *root = NULL;

	*out = NULL;
	if ((error = next_event(c, &ev)) < 0) /* STREAM-START */
		goto done;
	yaml_event_delete(&ev);
	if ((error = next_event(c, &ev)) < 0)
		goto done;
	if (ev.type == YAML_STREAM_END_EVENT) {
		yaml_event_delete(&ev);
		goto done;
	}
	yaml_event_delete(&ev); /* DOCUMENT-START */
	if ((error = next_event(c, &ev)) < 0)
		goto done;
	if ((error = load_node(&root, c, &ev, 0)) < 0)
		goto done;
	if ((error = next_event(c, &ev)) < 0) /* DOCUMENT-END */
		goto done;
	yaml_event_delete(&ev);
	if ((error = next_event(c, &ev)) < 0)
		goto done;
	if (ev.type != YAML_STREAM_END_EVENT) {
		error = perr(c, (int)ev.start_mark.line + 1, (int)ev.start_mark.column + 1,
		             "expected a single YAML document, got a second one");
		yaml_event_delete(&ev);
		goto done;
	}
	yaml_event_delete(&ev);

done:
	if (error == 0)
		*out = root; /* the nodes are the arena's: freed with it */
	return error;
}

/* ------------------------------------------------------------ checks */

static bool is_null(const node *n)
{
	return n->kind == N_SCALAR && n->plain && bs__yaml_null(n->str, n->len);
}

static const char *kind_name(const node *n)
{
	if (n->kind == N_MAP)
		return "a mapping";
	if (n->kind == N_SEQ)
		return "a sequence";
	return is_null(n) ? "null" : "a scalar";
}

/* A `password` key anywhere is refused before anything else is looked at. */
static int refuse_passwords(const ctx *c, const node *n)
{
	size_t i;
	int error;

	for (i = 0; i < n->n; i++) { /* scalars have no kids */
		const node *k = n->kids[i];
		if (n->kind == N_MAP && i % 2 == 0 && k->kind == N_SCALAR && strcasecmp(k->str, "password") == 0)
			return nerr(c, k,
			            "passwords do not belong in the configuration: use password_env or defaults_file");
		if ((error = refuse_passwords(c, k)) < 0)
			return error;
	}
	return 0;
}

static int cmp_keys(const void *a, const void *b)
{
	const node *x = *(node *const *)a, *y = *(node *const *)b;
	int r;

	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	if ((r = memcmp(x->str, y->str, x->len)) != 0)
		return r;
	/* ties by position, so the later of two equal keys sorts second */
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->col < y->col ? -1 : (x->col > y->col);
}

static bool same_key(const node *a, const node *b)
{
	return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
}

static bool before(const node *a, const node *b)
{
	return a->line < b->line || (a->line == b->line && a->col < b->col);
}

/* Keys are strings and appear once per mapping, everywhere. */
static int check_keys_shape(const ctx *c, const node *n)
{
	node **keys = NULL;
	const node *dup = NULL, *first = NULL;
	size_t i, nk = 0;
	int error = 0;

	if (n->kind == N_SCALAR)
		goto done;
	if (n->kind == N_MAP && n->n > 0) {
		for (i = 0; i < n->n; i += 2) {
			if (n->kids[i]->kind != N_SCALAR || is_null(n->kids[i])) {
				error = nerr(c, n->kids[i], "expected a string key, got %s", kind_name(n->kids[i]));
				goto done;
			}
		}
		if ((keys = malloc(n->n / 2 * sizeof *keys)) == NULL) {
			error = nomem();
			goto done;
		}
		for (i = 0; i < n->n; i += 2)
			keys[nk++] = n->kids[i];
		/* Sorted by text then position, equal keys form runs whose
		 * first is the declaration and second the earliest repeat. */
		qsort(keys, nk, sizeof *keys, cmp_keys);
		for (i = 1; i < nk; i++) {
			if (same_key(keys[i], keys[i - 1]) && (i == 1 || !same_key(keys[i - 1], keys[i - 2])) &&
			    (dup == NULL || before(keys[i], dup))) {
				dup = keys[i];
				first = keys[i - 1];
			}
		}
		if (dup != NULL) {
			char shown[96];
			error = nerr(c, dup, "duplicate key \"%s\" (first at line %d, column %d)",
			             bs__quote(shown, sizeof shown, dup->str, dup->len), first->line, first->col);
			goto done;
		}
	}
	for (i = 0; i < n->n; i++)
		if ((error = check_keys_shape(c, n->kids[i])) < 0)
			goto done;

done:
	free(keys);
	return error;
}

/* Edit distance, for "did you mean". */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j, row[SHARD_NAME_MAX + 1];

	if (la > SHARD_NAME_MAX || lb > SHARD_NAME_MAX)
		return (size_t)-1;
	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

/* Every key of map is one of valid[] (NULL-terminated). */
static int check_known(const ctx *c, const node *map, const char *where, const char *const *valid)
{
	size_t i;
	int v;

	for (i = 0; i < map->n; i += 2) {
		const node *k = map->kids[i];
		char list[512], hint[128], shown[96];
		size_t used = 0, best = (size_t)-1;
		const char *guess = NULL;

		for (v = 0; valid[v]; v++)
			if (strcmp(k->str, valid[v]) == 0)
				break;
		if (valid[v])
			continue;
		list[0] = '\0';
		for (v = 0; valid[v]; v++) {
			size_t d = distance(k->str, valid[v]);
			used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", v ? ", " : "", valid[v]);
			if (d < best) {
				best = d;
				guess = valid[v];
			}
		}
		hint[0] = '\0';
		if (guess && best <= 2 && best < k->len)
			snprintf(hint, sizeof hint, "; did you mean \"%s\"?", guess);
		return nerr(c, k, "unknown key \"%s\" in %s (valid keys: %s)%s",
		            bs__quote(shown, sizeof shown, k->str, k->len), where, list, hint);
	}
	return 0;
}

/* The value of key in map, or NULL. */
static const node *get(const node *map, const char *key)
{
	size_t i;

	for (i = 0; i < map->n; i += 2)
		if (strcmp(map->kids[i]->str, key) == 0)
			return map->kids[i + 1];
	return NULL;
}

static int want(const ctx *c, const node *n, int kind, const char *where)
{
	static const char *const names[] = { "a scalar", "a sequence", "a mapping" };

	if (n->kind == kind && !(kind == N_SCALAR && is_null(n)))
		return 0;
	return nerr(c, n, "%s: expected %s, got %s", where, names[kind], kind_name(n));
}

/* A scalar that is not null; desc says what kind of value is expected. */
static int want_scalar(const ctx *c, const node *n, const char *where, const char *desc)
{
	if (n->kind == N_SCALAR && !is_null(n))
		return 0;
	return nerr(c, n, "%s: expected %s, got %s", where, desc, kind_name(n));
}

/* A non-empty string without NUL bytes, copied into *dst. */
static int get_str(char **dst, const ctx *c, const node *n, const char *where)
{
	int error;

	if ((error = want_scalar(c, n, where, "a string")) < 0)
		return error;
	if (n->len == 0)
		return nerr(c, n, "%s: expected a non-empty string", where);
	if (memchr(n->str, '\0', n->len) != NULL)
		return nerr(c, n, "%s: must not contain NUL bytes", where);
	free(*dst);
	if ((*dst = strdup(n->str)) == NULL)
		return nomem();
	return 0;
}

static int get_uint(unsigned *dst, const ctx *c, const node *n, const char *where, unsigned long min, unsigned long max,
                    const char *what)
{
	char shown[96];
	unsigned long v = 0;
	size_t i;
	int error;

	if ((error = want_scalar(c, n, where, what)) < 0)
		return error;
	for (i = 0; i < n->len; i++) {
		if (n->str[i] < '0' || n->str[i] > '9')
			break;
		if (v <= max)
			v = v * 10 + (unsigned long)(n->str[i] - '0');
	}
	if (n->len == 0 || i != n->len || v < min || v > max)
		return nerr(c, n, "%s: expected %s from %lu to %lu, got \"%s\"", where, what, min, max,
		            bs__quote(shown, sizeof shown, n->str, n->len));
	*dst = (unsigned)v;
	return 0;
}

/* Digits with an optional sign, fraction and exponent; no hex, inf, nan. */
static bool is_decimal(const char *s)
{
	bool digits = false;

	if (*s == '+' || *s == '-')
		s++;
	while (*s >= '0' && *s <= '9')
		s++, digits = true;
	if (*s == '.') {
		s++;
		while (*s >= '0' && *s <= '9')
			s++, digits = true;
	}
	if (!digits)
		return false;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!(*s >= '0' && *s <= '9'))
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == '\0';
}

/* Seconds: > 0, or >= 0 when zero_ok, and at most MAX_SECONDS. */
static int get_seconds(double *dst, const ctx *c, const node *n, const char *where, bool zero_ok)
{
	char shown[96];
	double v;
	int error;

	if ((error = want_scalar(c, n, where, "a number of seconds")) < 0)
		return error;
	if (memchr(n->str, '\0', n->len) != NULL || !is_decimal(n->str))
		return nerr(c, n, "%s: expected a number of seconds, got \"%s\"", where,
		            bs__quote(shown, sizeof shown, n->str, n->len));
	v = bs__strtod_c(n->str, NULL);
	if (!isfinite(v) || v > MAX_SECONDS)
		return nerr(c, n, "%s: expected at most %.0f seconds, got %s", where, MAX_SECONDS,
		            bs__quote(shown, sizeof shown, n->str, n->len));
	if (zero_ok ? v < 0 : v <= 0)
		return nerr(c, n, "%s: expected a number of seconds %s, got %s", where,
		            zero_ok ? "0 or more" : "greater than 0", bs__quote(shown, sizeof shown, n->str, n->len));
	*dst = v;
	return 0;
}

static int get_bool(bool *dst, const ctx *c, const node *n, const char *where)
{
	char shown[96];
	int error, b;

	if ((error = want_scalar(c, n, where, "true or false")) < 0)
		return error;
	if ((b = bs__yaml_bool(n->str, n->len)) < 0)
		return nerr(c, n, "%s: expected true or false, got \"%s\"", where,
		            bs__quote(shown, sizeof shown, n->str, n->len));
	*dst = b == 1;
	return 0;
}

/* The name of an environment variable; the value is never shown, as a
 * password may have been written here by mistake. */
static int get_env_name(char **dst, const ctx *c, const node *n, const char *where)
{
	size_t i;
	int error;

	if ((error = get_str(dst, c, n, where)) < 0)
		return error;
	for (i = 0; i < n->len; i++) {
		char ch = n->str[i];
		bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_' ||
		          (i > 0 && ch >= '0' && ch <= '9');
		if (!ok)
			return nerr(c, n,
			            "%s: expected the name of an environment variable ([A-Za-z_][A-Za-z0-9_]*); "
			            "the value is not shown in case it is a password",
			            where);
	}
	return 0;
}

/* "auto" (0), or a whole number from 1 to max. */
static int get_auto_uint(unsigned *dst, const ctx *c, const node *n, const char *where, unsigned long max,
                         const char *what)
{
	if (n->kind == N_SCALAR && !is_null(n) && n->len == 4 && !strcmp(n->str, "auto")) {
		*dst = 0;
		return 0;
	}
	char desc[96];
	snprintf(desc, sizeof desc, "auto or %s", what);
	return get_uint(dst, c, n, where, 1, max, desc);
}

/* A factor: 0 (off), or from 1 to 1000. */
static int get_factor(double *dst, const ctx *c, const node *n, const char *where)
{
	char shown[96];
	double v;
	int error;

	if ((error = want_scalar(c, n, where, "a factor")) < 0)
		return error;
	if (memchr(n->str, '\0', n->len) != NULL || !is_decimal(n->str) ||
	    ((v = bs__strtod_c(n->str, NULL)) != 0 && !(v >= 1 && v <= 1000)))
		return nerr(c, n, "%s: expected a factor from 1 to 1000 (or 0: off), got \"%s\"", where,
		            bs__quote(shown, sizeof shown, n->str, n->len));
	*dst = v;
	return 0;
}

/* How an optional key's value is read. */
typedef enum { K_STR, K_ENV, K_PORT, K_THREADS, K_SECONDS, K_SECONDS0, K_JOBS, K_WRITERS, K_LENGTH, K_FACTOR } keykind;

/* Read map's optional `key` (named "where.key" in messages) into *dst,
 * whose type follows kind: char * for K_STR and K_ENV, unsigned for K_PORT,
 * K_THREADS, K_JOBS and K_WRITERS ("auto": 0) and K_LENGTH, double for
 * K_SECONDS (> 0), K_SECONDS0 (>= 0) and K_FACTOR (0, or 1 to 1000). An
 * absent key leaves *dst as it is. */
static int opt_key(void *dst, const ctx *c, const node *map, const char *where, const char *key, keykind kind)
{
	const node *v = get(map, key);
	char w[192];

	if (v == NULL)
		return 0;
	if (where)
		snprintf(w, sizeof w, "%s.%s", where, key);
	else
		snprintf(w, sizeof w, "%s", key);
	switch (kind) {
	case K_STR: return get_str(dst, c, v, w);
	case K_ENV: return get_env_name(dst, c, v, w);
	case K_PORT: return get_uint(dst, c, v, w, 1, 65535, "a port number");
	case K_THREADS: return get_uint(dst, c, v, w, 1, 1000000, "a number of running threads");
	case K_SECONDS: return get_seconds(dst, c, v, w, false);
	case K_SECONDS0: return get_seconds(dst, c, v, w, true);
	case K_JOBS: return get_auto_uint(dst, c, v, w, 1024, "a number of jobs");
	case K_WRITERS: return get_auto_uint(dst, c, v, w, 64, "a number of writers");
	case K_LENGTH: return get_uint(dst, c, v, w, 1, 4000000000ul, "a history list length");
	case K_FACTOR: return get_factor(dst, c, v, w);
	}
	return 0;
}

/* ------------------------------------------------------------ sections */

static const char *const top_keys[] = { "shards",  "timeouts", "catalog_ttl", "read_only", "indexes",
	                                "cleaner", "tls",      "buckets",     NULL };
static const char *const shard_keys[] = {
	"name",          "host",         "port",     "socket", "database", "user", "password_env",
	"defaults_file", "option_group", "replicas", "tls",    "drain",    NULL
};
static const char *const replica_keys[] = { "host", "port", "socket", "user", "password_env", "tls", NULL };
static const char *const tls_keys[] = { "mode", "ca", "cert", "key", "cipher", "versions", NULL };
static const char *const timeout_keys[] = { "connect", "read", "write", NULL };
static const char *const index_keys[] = { "name", "on", "shard_on", NULL };
static const char *const cleaner_keys[] = { "chunk_time",
	                                    "max_load",
	                                    "critical_load",
	                                    "max_replica_lag",
	                                    "repair_overlap",
	                                    "repair_interval",
	                                    "sleep_coef",
	                                    "metrics",
	                                    "metrics_web_config",
	                                    "metrics_insecure",
	                                    "log_format",
	                                    "log_every",
	                                    "hooks",
	                                    "max_fence",
	                                    "jobs",
	                                    "writers",
	                                    "max_history_length",
	                                    "max_write_latency",
	                                    "write_latency_factor",
	                                    "write_latency_signal",
	                                    "max_signal_age",
	                                    NULL };
/* cleaner.hooks: on_event, on_<bs_hook_name>, timeout */
static const char *const hook_names[BS_HOOK_COUNT] = {
	[BS_HOOK_BACKFILL_STARTED] = "backfill_started",
	[BS_HOOK_BACKFILL_DONE] = "backfill_done",
	[BS_HOOK_BACKFILL_FAILED] = "backfill_failed",
	[BS_HOOK_THROTTLED] = "throttled",
	[BS_HOOK_INDEX_READY] = "index_ready",
	[BS_HOOK_SHARD_LOST] = "shard_lost",
	[BS_HOOK_SHARD_BACK] = "shard_back",
};
static const char *const hooks_keys[] = { "on_event",         "on_backfill_started",
	                                  "on_backfill_done", "on_backfill_failed",
	                                  "on_throttled",     "on_index_ready",
	                                  "on_shard_lost",    "on_shard_back",
	                                  "timeout",          NULL };

const char *bs_hook_name(bs_hook_t h)
{
	return (unsigned)h < BS_HOOK_COUNT ? hook_names[h] : "unknown";
}

static int missing(const ctx *c, const node *map, const char *where, const char *key)
{
	return nerr(c, map, "%s: missing required key \"%s\"", where, key);
}

static bool valid_shard_name(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > SHARD_NAME_MAX)
		return false;
	for (i = 0; i < len; i++) {
		char ch = s[i];
		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' ||
		      ch == '-'))
			return false;
	}
	return true;
}

/* Database names are quoted with backticks in SQL: keep them plain. */
static bool valid_database(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > 64)
		return false;
	for (i = 0; i < len; i++) {
		char ch = s[i];
		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' ||
		      ch == '$' || ch == '-'))
			return false;
	}
	return true;
}

/* ------------------------------------------------------------ tls */

static const char *const tls_mode_names[] = { "unset",    "disabled",  "preferred",
	                                      "required", "verify_ca", "verify_identity" };

const char *bs_tls_mode_name(bs_tls_mode_t m)
{
	return (unsigned)m < sizeof tls_mode_names / sizeof tls_mode_names[0] ? tls_mode_names[m] : "unknown";
}

static void tls_free(bs_tls_conf_t *t)
{
	free(t->ca);
	free(t->cert);
	free(t->key);
	free(t->cipher);
	free(t->versions);
	memset(t, 0, sizeof *t);
}

static int dup_opt(char **dst, const char *src)
{
	if (src && (*dst = strdup(src)) == NULL)
		return nomem();
	return 0;
}

/* *dst becomes a copy of src (dst is empty). */
static int tls_copy(bs_tls_conf_t *dst, const bs_tls_conf_t *src)
{
	int error;

	dst->mode = src->mode;
	if ((error = dup_opt(&dst->ca, src->ca)) < 0 || (error = dup_opt(&dst->cert, src->cert)) < 0 ||
	    (error = dup_opt(&dst->key, src->key)) < 0 || (error = dup_opt(&dst->cipher, src->cipher)) < 0 ||
	    (error = dup_opt(&dst->versions, src->versions)) < 0)
		return error;
	return 0;
}

static int tls_mode(bs_tls_mode_t *dst, const ctx *c, const node *v, const char *where)
{
	char shown[96];
	int error;

	if ((error = want_scalar(c, v, where, "a TLS mode")) < 0)
		return error;
	for (size_t m = BS_TLS_DISABLED; m < sizeof tls_mode_names / sizeof tls_mode_names[0]; m++)
		if (strcmp(v->str, tls_mode_names[m]) == 0) {
			*dst = (bs_tls_mode_t)m;
			return 0;
		}
	return nerr(c, v, "%s: expected disabled, preferred, required, verify_ca or verify_identity, got \"%s\"", where,
	            bs__quote(shown, sizeof shown, v->str, v->len));
}

/* A file bagstore hands to Connector/C: refused now, at its line, rather
 * than at the first connection. */
static int tls_file(char **dst, const ctx *c, const node *map, const char *where, const char *key)
{
	const node *v = get(map, key);
	char w[192];
	FILE *f;
	int error;

	if (v == NULL)
		return 0;
	snprintf(w, sizeof w, "%s.%s", where, key);
	if ((error = get_str(dst, c, v, w)) < 0)
		return error;
	if ((f = fopen(*dst, "r")) == NULL)
		return nerr(c, v, "%s: cannot read \"%s\": %s", w, *dst, strerror(errno));
	fclose(f);
	return 0;
}

/* "TLSv1.2,TLSv1.3": Connector/C's names, comma-separated. */
static int tls_versions(char **dst, const ctx *c, const node *map, const char *where)
{
	static const char *const known[] = { "TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3", NULL };
	const node *v = get(map, "versions");
	char w[192], shown[96];
	int error;

	if (v == NULL)
		return 0;
	snprintf(w, sizeof w, "%s.versions", where);
	if ((error = get_str(dst, c, v, w)) < 0)
		return error;
	for (const char *p = *dst; *p;) {
		size_t n = strcspn(p, ","), k;
		for (k = 0; known[k]; k++)
			if (strlen(known[k]) == n && strncmp(p, known[k], n) == 0)
				break;
		if (!known[k])
			return nerr(c, v,
			            "%s: expected TLS versions from TLSv1.0, TLSv1.1, TLSv1.2, TLSv1.3, "
			            "separated by commas, got \"%s\"",
			            w, bs__quote(shown, sizeof shown, v->str, v->len));
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

/*
 * dst = parent, then the keys of the `tls:` mapping n (NULL or null:
 * parent alone). A mapping without `mode` under a parent without one means
 * verify_identity: the safe choice is the one you get by giving a CA.
 * ca_elsewhere: a defaults_file may name the CA (verify_ca without ca is
 * then checked at connect time).
 */
static int parse_tls(bs_tls_conf_t *dst, const bs_tls_conf_t *parent, const ctx *c, const node *n, const char *w,
                     bool ca_elsewhere)
{
	char wm[192];
	const node *v;
	int error;

	if ((error = tls_copy(dst, parent)) < 0 || n == NULL || is_null(n))
		return error;
	if ((error = want(c, n, N_MAP, w)) < 0 || (error = check_known(c, n, w, tls_keys)) < 0)
		return error;
	if ((v = get(n, "mode")) != NULL) {
		snprintf(wm, sizeof wm, "%s.mode", w);
		if ((error = tls_mode(&dst->mode, c, v, wm)) < 0)
			return error;
	} else if (dst->mode == BS_TLS_MODE_UNSET) {
		dst->mode = BS_TLS_VERIFY_IDENTITY;
	}
	if ((error = tls_file(&dst->ca, c, n, w, "ca")) < 0 || (error = tls_file(&dst->cert, c, n, w, "cert")) < 0 ||
	    (error = tls_file(&dst->key, c, n, w, "key")) < 0 ||
	    (error = opt_key(&dst->cipher, c, n, w, "cipher", K_STR)) < 0 ||
	    (error = tls_versions(&dst->versions, c, n, w)) < 0)
		return error;
	if (dst->mode == BS_TLS_DISABLED && n->n > 2)
		return nerr(c, n, "%s: mode disabled takes no other key (it makes no TLS connection)", w);
	if ((dst->cert == NULL) != (dst->key == NULL))
		return nerr(c, n, "%s: cert and key go together: %s is missing", w, dst->cert ? "key" : "cert");
	if (dst->mode == BS_TLS_VERIFY_CA && dst->ca == NULL && !ca_elsewhere)
		return nerr(c, n, "%s: mode verify_ca needs ca, the CA certificate to verify the server's against", w);
	return 0;
}

static int parse_replica(bs_replica_conf_t *r, const bs_shard_conf_t *s, const ctx *c, const node *n, const char *where)
{
	char w[192];
	int error;

	snprintf(w, sizeof w, "%s.tls", where);

	if ((error = want(c, n, N_MAP, where)) < 0 || (error = check_known(c, n, where, replica_keys)) < 0 ||
	    (error = opt_key(&r->host, c, n, where, "host", K_STR)) < 0 ||
	    (error = opt_key(&r->port, c, n, where, "port", K_PORT)) < 0 ||
	    (error = opt_key(&r->socket, c, n, where, "socket", K_STR)) < 0 ||
	    (error = opt_key(&r->user, c, n, where, "user", K_STR)) < 0 ||
	    (error = opt_key(&r->password_env, c, n, where, "password_env", K_ENV)) < 0 ||
	    (error = parse_tls(&r->tls, &s->tls, c, get(n, "tls"), w, false)) < 0)
		return error;
	if (r->host == NULL && r->socket == NULL)
		return nerr(c, n, "%s: a replica needs host or socket", where);
	return 0;
}

/* Do two shards name the same server by their address (host and port, or
 * socket)? Shards known only by an option file cannot be compared. */
static bool same_server(const bs_shard_conf_t *a, const bs_shard_conf_t *b)
{
	if (a->host && b->host)
		return !strcmp(a->host, b->host) && (a->port ? a->port : 3306) == (b->port ? b->port : 3306);
	if (a->socket && b->socket && !a->host && !b->host)
		return !strcmp(a->socket, b->socket);
	return false;
}

/*
 * The shards seen so far, by name and by server and database: two open
 * addressing tables of shard indexes (+1, 0 is empty), so that the
 * duplicate checks cost O(1) per shard and a list of tens of thousands
 * stays linear (comparing each shard with every earlier one took minutes
 * on 65,536). Each table keeps the first shard of a key, which is the one
 * the messages name.
 */
typedef struct {
	int *by_name, *by_server;
	size_t mask;
} seen_t;

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/* The hash of what same_server compares, and the database; false when the
 * shard has no address to compare (an option file's). */
static bool server_hash(uint64_t *h, const bs_shard_conf_t *s)
{
	unsigned port = s->port ? s->port : 3306;

	*h = 14695981039346656037ull;
	if (s->host) {
		*h = fnv(*h, "H", 1);
		*h = fnv(*h, s->host, strlen(s->host) + 1);
		*h = fnv(*h, &port, sizeof port);
	} else if (s->socket) {
		*h = fnv(*h, "S", 1);
		*h = fnv(*h, s->socket, strlen(s->socket) + 1);
	} else {
		return false;
	}
	*h = fnv(*h, s->database, strlen(s->database));
	return true;
}

static int seen_init(seen_t *t, size_t n)
{
	size_t cap = 16;

	while (cap < 2 * n)
		cap *= 2;
	t->mask = cap - 1;
	t->by_name = calloc(cap, sizeof *t->by_name);
	t->by_server = calloc(cap, sizeof *t->by_server);
	return t->by_name && t->by_server ? 0 : nomem();
}

static void seen_free(seen_t *t)
{
	free(t->by_name);
	free(t->by_server);
}

/* The earlier shard named name (its index), else -1 after recording idx. */
static int seen_name(seen_t *t, const bs_config_t *cfg, const char *name, int idx)
{
	size_t i = fnv(14695981039346656037ull, name, strlen(name)) & t->mask;

	for (; t->by_name[i]; i = (i + 1) & t->mask)
		if (!strcmp(cfg->shards[t->by_name[i] - 1].name, name))
			return t->by_name[i] - 1;
	t->by_name[i] = idx + 1;
	return -1;
}

/* The earlier shard on the same server and database as shard idx, else -1
 * after recording it. */
static int seen_server(seen_t *t, const bs_config_t *cfg, int idx)
{
	const bs_shard_conf_t *s = &cfg->shards[idx];
	uint64_t h;
	size_t i;

	if (!server_hash(&h, s))
		return -1;
	for (i = h & t->mask; t->by_server[i]; i = (i + 1) & t->mask) {
		const bs_shard_conf_t *o = &cfg->shards[t->by_server[i] - 1];
		if (same_server(o, s) && !strcmp(o->database, s->database))
			return t->by_server[i] - 1;
	}
	t->by_server[i] = idx + 1;
	return -1;
}

/* The shard's tls: the top level's, then its own mapping. A verify_ca
 * without a CA inherited from the top level is reported there, naming the
 * shard. */
static int shard_tls(bs_shard_conf_t *s, const bs_config_t *cfg, const ctx *c, const node *n, const char *where)
{
	const node *own = get(n, "tls");
	char w[192];
	int error;

	snprintf(w, sizeof w, "%s.tls", where);
	if (own && !is_null(own))
		return parse_tls(&s->tls, &cfg->tls, c, own, w, s->defaults_file != NULL);
	if ((error = tls_copy(&s->tls, &cfg->tls)) < 0)
		return error;
	if (s->tls.mode == BS_TLS_VERIFY_CA && s->tls.ca == NULL && s->defaults_file == NULL)
		return nerr(c, n,
		            "%s: tls: mode verify_ca (from the top-level tls) needs ca, or a defaults_file that "
		            "sets ssl-ca",
		            where);
	return 0;
}

static int parse_shard(bs_config_t *cfg, seen_t *seen, const ctx *c, const node *n, int idx)
{
	bs_shard_conf_t *s = &cfg->shards[idx];
	char where[64], w[160];
	const node *v;
	size_t i;
	int error, j;

	snprintf(where, sizeof where, "shards[%d]", idx);
	if ((error = want(c, n, N_MAP, where)) < 0 || (error = check_known(c, n, where, shard_keys)) < 0)
		return error;
	s->line = n->line;

	if ((v = get(n, "name")) == NULL)
		return missing(c, n, where, "name");
	snprintf(w, sizeof w, "%s.name", where);
	if ((error = want_scalar(c, v, w, "a shard name")) < 0)
		return error;
	if (!valid_shard_name(v->str, v->len)) {
		char shown[96];
		return nerr(c, v, "%s: shard name \"%s\" is not valid: expected 1 to %d of A-Z a-z 0-9 _ -", w,
		            bs__quote(shown, sizeof shown, v->str, v->len), SHARD_NAME_MAX);
	}
	if ((error = get_str(&s->name, c, v, w)) < 0)
		return error;
	if ((j = seen_name(seen, cfg, s->name, idx)) >= 0)
		return nerr(c, v, "%s: duplicate shard name \"%s\" (first declared at line %d)", w, v->str,
		            cfg->shards[j].line);

	if ((error = opt_key(&s->host, c, n, where, "host", K_STR)) < 0 ||
	    (error = opt_key(&s->port, c, n, where, "port", K_PORT)) < 0 ||
	    (error = opt_key(&s->socket, c, n, where, "socket", K_STR)) < 0)
		return error;
	if ((v = get(n, "database"))) {
		snprintf(w, sizeof w, "%s.database", where);
		if ((error = want_scalar(c, v, w, "a database name")) < 0)
			return error;
		if (!valid_database(v->str, v->len)) {
			char shown[96];
			return nerr(c, v,
			            "%s: database name \"%s\" is not valid: expected 1 to 64 of A-Z a-z 0-9 _ $ -", w,
			            bs__quote(shown, sizeof shown, v->str, v->len));
		}
		if ((error = get_str(&s->database, c, v, w)) < 0)
			return error;
	} else if ((s->database = strdup("bagstore")) == NULL) {
		return nomem();
	}
	if ((error = opt_key(&s->user, c, n, where, "user", K_STR)) < 0 ||
	    (error = opt_key(&s->password_env, c, n, where, "password_env", K_ENV)) < 0 ||
	    (error = opt_key(&s->defaults_file, c, n, where, "defaults_file", K_STR)) < 0 ||
	    (error = opt_key(&s->option_group, c, n, where, "option_group", K_STR)) < 0)
		return error;
	if ((error = shard_tls(s, cfg, c, n, where)) < 0)
		return error;
	if ((v = get(n, "replicas")) && !is_null(v)) {
		snprintf(w, sizeof w, "%s.replicas", where);
		if ((error = want(c, v, N_SEQ, w)) < 0)
			return error;
		if (v->n > 0 && (s->replicas = calloc(v->n, sizeof *s->replicas)) == NULL)
			return nomem();
		for (i = 0; i < v->n; i++) {
			snprintf(w, sizeof w, "%s.replicas[%zu]", where, i);
			s->nreplicas = (int)i + 1;
			if ((error = parse_replica(&s->replicas[i], s, c, v->kids[i], w)) < 0)
				return error;
		}
	}
	if (s->host == NULL && s->socket == NULL && s->defaults_file == NULL)
		return nerr(c, n, "%s: a shard needs host, socket or defaults_file", where);
	if ((j = seen_server(seen, cfg, idx)) >= 0)
		return nerr(c, n,
		            "%s: shard %s is the same server and database as shard %s (line %d): "
		            "two shards cannot share one set of tables",
		            where, s->name, cfg->shards[j].name, cfg->shards[j].line);
	/* drain: true: `reshard plan` moves every bucket off this shard */
	snprintf(w, sizeof w, "%s.drain", where);
	if ((v = get(n, "drain")) && (error = get_bool(&s->drain, c, v, w)) < 0)
		return error;
	return 0;
}

static int parse_shards(bs_config_t *cfg, const ctx *c, const node *root)
{
	const node *v = get(root, "shards");
	seen_t seen = { 0 };
	size_t i;
	int error;

	if (v == NULL)
		return nerr(c, root, "missing required key \"shards\" (the ordered list of shards)");
	if ((error = want(c, v, N_SEQ, "shards")) < 0)
		return error;
	if (v->n == 0)
		return nerr(c, v, "shards: expected at least one shard, got an empty list");
	if (v->n > 65536)
		return nerr(c, v, "shards: at most 65536 shards");
	if ((cfg->shards = calloc(v->n, sizeof *cfg->shards)) == NULL)
		return nomem();
	if ((error = seen_init(&seen, v->n)) < 0)
		goto done;
	for (i = 0; i < v->n; i++) {
		cfg->nshards = (int)i + 1;
		if ((error = parse_shard(cfg, &seen, c, v->kids[i], (int)i)) < 0)
			goto done;
	}
done:
	seen_free(&seen);
	return error;
}

static int parse_timeouts(bs_config_t *cfg, const ctx *c, const node *root)
{
	const node *n = get(root, "timeouts");
	int error;

	if (n == NULL || is_null(n))
		return 0;
	if ((error = want(c, n, N_MAP, "timeouts")) < 0 || (error = check_known(c, n, "timeouts", timeout_keys)) < 0 ||
	    (error = opt_key(&cfg->connect_timeout, c, n, "timeouts", "connect", K_SECONDS)) < 0 ||
	    (error = opt_key(&cfg->read_timeout, c, n, "timeouts", "read", K_SECONDS)) < 0 ||
	    (error = opt_key(&cfg->write_timeout, c, n, "timeouts", "write", K_SECONDS)) < 0)
		return error;
	return 0;
}

/* `on` as a string, or a sequence of PROP:TYPE strings joined with commas. */
static int index_on(char **dst, const ctx *c, const node *v, const char *where)
{
	size_t i, total = 1;
	char *s;
	int error;

	if (v->kind != N_SEQ)
		return get_str(dst, c, v, where);
	if (v->n == 0)
		return nerr(c, v, "%s: expected at least one PROP:TYPE, got an empty list", where);
	for (i = 0; i < v->n; i++) {
		const node *k = v->kids[i];
		if ((error = want_scalar(c, k, where, "PROP:TYPE")) < 0)
			return error;
		if (k->len == 0 || memchr(k->str, ',', k->len) || memchr(k->str, '\0', k->len))
			return nerr(c, k, "%s: expected one PROP:TYPE per item", where);
		total += k->len + 1;
	}
	if ((s = malloc(total)) == NULL)
		return nomem();
	for (i = 0, total = 0; i < v->n; i++) {
		const node *k = v->kids[i];
		memcpy(s + total, k->str, k->len);
		total += k->len;
		s[total++] = ',';
	}
	s[total - 1] = '\0';
	free(*dst);
	*dst = s;
	return 0;
}

static int parse_index(bs_index_t *def, const bs_config_t *cfg, const ctx *c, const node *n, int idx)
{
	char where[64], w[96], msg[1024];
	char *name = NULL, *on = NULL, *shard_on = NULL;
	const node *v;
	int error = 0, j;

	snprintf(where, sizeof where, "indexes[%d]", idx);
	if ((error = want(c, n, N_MAP, where)) < 0 || (error = check_known(c, n, where, index_keys)) < 0)
		goto done;
	if ((v = get(n, "name")) == NULL) {
		error = missing(c, n, where, "name");
		goto done;
	}
	snprintf(w, sizeof w, "%s.name", where);
	if ((error = get_str(&name, c, v, w)) < 0)
		goto done;
	if ((v = get(n, "on")) == NULL) {
		error = missing(c, n, where, "on");
		goto done;
	}
	snprintf(w, sizeof w, "%s.on", where);
	if ((error = index_on(&on, c, v, w)) < 0)
		goto done;
	if ((v = get(n, "shard_on")) == NULL) {
		error = missing(c, n, where, "shard_on");
		goto done;
	}
	snprintf(w, sizeof w, "%s.shard_on", where);
	if ((error = get_str(&shard_on, c, v, w)) < 0)
		goto done;

	if ((error = bs_index_parse(def, name, on, shard_on)) < 0) {
		/* bs_error writes the slot it would read from: copy first */
		snprintf(msg, sizeof msg, "%s", bs_last_error());
		error = nerr(c, n, "%s: %s", where, msg);
		goto done;
	}
	for (j = 0; j < idx; j++) {
		if (strcmp(cfg->indexes[j].name, def->name) == 0) {
			error = nerr(c, get(n, "name"), "%s.name: duplicate index name \"%s\"", where, def->name);
			goto done;
		}
	}

done:
	free(name);
	free(on);
	free(shard_on);
	return error;
}

static int parse_indexes(bs_config_t *cfg, const ctx *c, const node *root)
{
	const node *v = get(root, "indexes");
	size_t i;
	int error;

	if (v == NULL || is_null(v))
		return 0;
	if ((error = want(c, v, N_SEQ, "indexes")) < 0)
		return error;
	if (v->n == 0)
		return 0;
	if ((cfg->indexes = calloc(v->n, sizeof *cfg->indexes)) == NULL)
		return nomem();
	for (i = 0; i < v->n; i++) {
		if ((error = parse_index(&cfg->indexes[i], cfg, c, v->kids[i], (int)i)) < 0)
			return error;
		cfg->nindexes = (int)i + 1;
	}
	return 0;
}

int bs_listen_addr_check(char *why, size_t size, const char *addr)
{
	char shown[96];
	const char *colon = strrchr(addr, ':');
	unsigned long port = 0;

	if (colon && colon > addr && colon[1]) {
		char *end;
		port = strtoul(colon + 1, &end, 10);
		if (*end || colon[1] < '0' || colon[1] > '9')
			port = 0;
		if (addr[0] == '[' && colon[-1] != ']')
			port = 0;
	}
	if (port >= 1 && port <= 65535)
		return 0;
	snprintf(why, size, "expected HOST:PORT (an IPv6 address in brackets, a port from 1 to 65535), got \"%s\"",
	         bs__quote(shown, sizeof shown, addr, strlen(addr)));
	return BS_EINVAL;
}

/* HOST:PORT (an IPv6 host in brackets), as cleaner.metrics wants it. */
static int get_listen(char **dst, const ctx *c, const node *n, const char *where)
{
	char why[200];
	int error;

	if ((error = get_str(dst, c, n, where)) < 0)
		return error;
	if (bs_listen_addr_check(why, sizeof why, *dst) < 0)
		return nerr(c, n, "%s: %s", where, why);
	return 0;
}

static int parse_hooks(bs_daemon_conf_t *dm, const ctx *c, const node *n)
{
	char key[64];
	int error;

	if (n == NULL || is_null(n))
		return 0;
	if ((error = want(c, n, N_MAP, "cleaner.hooks")) < 0 ||
	    (error = check_known(c, n, "cleaner.hooks", hooks_keys)) < 0 ||
	    (error = opt_key(&dm->hook_on_event, c, n, "cleaner.hooks", "on_event", K_STR)) < 0 ||
	    (error = opt_key(&dm->hook_timeout, c, n, "cleaner.hooks", "timeout", K_SECONDS)) < 0)
		return error;
	for (int h = 0; h < BS_HOOK_COUNT; h++) {
		snprintf(key, sizeof key, "on_%s", hook_names[h]);
		if ((error = opt_key(&dm->hooks[h], c, n, "cleaner.hooks", key, K_STR)) < 0)
			return error;
	}
	return 0;
}

/* The daemon's own keys of cleaner: (metrics, logs, hooks). */
static int parse_daemon(bs_daemon_conf_t *dm, const ctx *c, const node *n)
{
	const node *v;
	int error;

	if ((v = get(n, "metrics"))) {
		if ((error = get_listen(&dm->metrics, c, v, "cleaner.metrics")) < 0)
			return error;
		snprintf(dm->metrics_at, sizeof dm->metrics_at, "%s:%d:%d: cleaner.metrics", c->file, v->line, v->col);
	}
	if ((v = get(n, "metrics_web_config"))) {
		if ((error = get_str(&dm->metrics_web_config, c, v, "cleaner.metrics_web_config")) < 0)
			return error;
		snprintf(dm->metrics_web_config_at, sizeof dm->metrics_web_config_at,
		         "%s:%d:%d: cleaner.metrics_web_config", c->file, v->line, v->col);
	}
	if ((v = get(n, "metrics_insecure")) &&
	    (error = get_bool(&dm->metrics_insecure, c, v, "cleaner.metrics_insecure")) < 0)
		return error;
	if ((v = get(n, "log_format"))) {
		char shown[96];
		if ((error = get_str(&dm->log_format, c, v, "cleaner.log_format")) < 0)
			return error;
		if (strcmp(dm->log_format, "text") != 0 && strcmp(dm->log_format, "json") != 0)
			return nerr(c, v, "cleaner.log_format: expected text or json, got \"%s\"",
			            bs__quote(shown, sizeof shown, v->str, v->len));
	}
	if ((error = opt_key(&dm->log_every, c, n, "cleaner", "log_every", K_SECONDS)) < 0)
		return error;
	return parse_hooks(dm, c, get(n, "hooks"));
}

static int parse_cleaner(bs_config_t *cfg, const ctx *c, const node *root)
{
	bs_cleaner_conf_t *cl = &cfg->cleaner;
	const node *n = get(root, "cleaner"), *crit;
	int error;

	if (n == NULL || is_null(n))
		return 0;
	if ((error = want(c, n, N_MAP, "cleaner")) < 0 || (error = check_known(c, n, "cleaner", cleaner_keys)) < 0 ||
	    (error = opt_key(&cl->chunk_time, c, n, "cleaner", "chunk_time", K_SECONDS)) < 0 ||
	    (error = opt_key(&cl->max_load, c, n, "cleaner", "max_load", K_THREADS)) < 0 ||
	    (error = opt_key(&cl->critical_load, c, n, "cleaner", "critical_load", K_THREADS)) < 0)
		return error;
	if (cl->critical_load < cl->max_load) {
		crit = get(n, "critical_load");
		return nerr(c, crit ? crit : get(n, "max_load"),
		            "cleaner: critical_load (%u) must not be below max_load (%u)", cl->critical_load,
		            cl->max_load);
	}
	if ((error = opt_key(&cl->max_replica_lag, c, n, "cleaner", "max_replica_lag", K_SECONDS)) < 0 ||
	    (error = opt_key(&cl->repair_overlap, c, n, "cleaner", "repair_overlap", K_SECONDS0)) < 0 ||
	    (error = opt_key(&cl->repair_interval, c, n, "cleaner", "repair_interval", K_SECONDS)) < 0 ||
	    (error = opt_key(&cl->sleep_coef, c, n, "cleaner", "sleep_coef", K_SECONDS0)) < 0 ||
	    (error = opt_key(&cl->max_fence, c, n, "cleaner", "max_fence", K_SECONDS)) < 0)
		return error;
	/* the throttle */
	if ((error = opt_key(&cl->jobs, c, n, "cleaner", "jobs", K_JOBS)) < 0 ||
	    (error = opt_key(&cl->writers, c, n, "cleaner", "writers", K_WRITERS)) < 0 ||
	    (error = opt_key(&cl->max_history_length, c, n, "cleaner", "max_history_length", K_LENGTH)) < 0 ||
	    (error = opt_key(&cl->max_write_latency, c, n, "cleaner", "max_write_latency", K_SECONDS0)) < 0 ||
	    (error = opt_key(&cl->write_latency_factor, c, n, "cleaner", "write_latency_factor", K_FACTOR)) < 0 ||
	    (error = opt_key(&cl->max_signal_age, c, n, "cleaner", "max_signal_age", K_SECONDS)) < 0)
		return error;
	const node *sv = get(n, "write_latency_signal");
	if (sv) {
		char *sig = NULL, shown[96];
		if ((error = get_str(&sig, c, sv, "cleaner.write_latency_signal")) < 0)
			return error;
		bool tail = !strcmp(sig, "tail"), median = !strcmp(sig, "median");
		free(sig);
		if (!tail && !median)
			return nerr(c, sv, "cleaner.write_latency_signal: expected median or tail, got \"%s\"",
			            bs__quote(shown, sizeof shown, sv->str, sv->len));
		cl->write_latency_tail = tail;
	}
	return parse_daemon(&cfg->daemon, c, n);
}

static int parse_root(bs_config_t *cfg, const ctx *c, const node *root)
{
	const node *v;
	int error;

	if (root == NULL || is_null(root))
		return perr(c, 1, 1, "expected a mapping with at least \"shards\", got an empty document");
	if ((error = want(c, root, N_MAP, "configuration")) < 0)
		return error;
	if ((error = refuse_passwords(c, root)) < 0 || (error = check_keys_shape(c, root)) < 0 ||
	    (error = check_known(c, root, "the configuration", top_keys)) < 0)
		return error;
	/* the top-level tls first: every shard inherits it */
	static const bs_tls_conf_t none;
	if ((error = parse_tls(&cfg->tls, &none, c, get(root, "tls"), "tls", true)) < 0)
		return error;
	if ((error = parse_shards(cfg, c, root)) < 0 || (error = parse_timeouts(cfg, c, root)) < 0)
		return error;
	if ((error = opt_key(&cfg->catalog_ttl, c, root, NULL, "catalog_ttl", K_SECONDS0)) < 0)
		return error;
	if ((v = get(root, "read_only")) && (error = get_bool(&cfg->read_only, c, v, "read_only")) < 0)
		return error;
	if ((error = parse_indexes(cfg, c, root)) < 0 || (error = parse_cleaner(cfg, c, root)) < 0)
		return error;
	/* buckets: read by the store's first init only (the map keeps B) */
	if ((v = get(root, "buckets")) &&
	    (error = get_uint(&cfg->buckets, c, v, "buckets", 1, 65536, "a number of buckets")) < 0)
		return error;
	return 0;
}

/* ------------------------------------------------------------ public */

int bs_config_parse(bs_config_t **out, const char *text, size_t len, const char *path)
{
	bs_config_t *cfg = NULL;
	node *root = NULL;
	ctx c;
	bool parser_ready = false;
	int error = 0;

	if (out == NULL)
		return bs_error(BS_EINVAL, "bs_config_parse: no output");
	*out = NULL;
	memset(&c, 0, sizeof c);
	c.file = path ? path : "<string>";
	c.text = text ? text : "";
	c.len = text ? len : 0;
	if (c.len > MAX_FILE_BYTES) /* as bs_config_load reads it (a node's text fits 32 bits) */
		return bs_error(BS_ECONFIG, "%s: cannot read: larger than %u bytes", c.file, MAX_FILE_BYTES);

	if ((cfg = calloc(1, sizeof *cfg)) == NULL || (cfg->path = strdup(c.file)) == NULL) {
		error = nomem();
		goto done;
	}
	cfg->connect_timeout = 2;
	cfg->read_timeout = 10;
	cfg->write_timeout = 10;
	cfg->catalog_ttl = 2;
	cfg->cleaner.chunk_time = 0.5;
	cfg->cleaner.max_load = 25;
	cfg->cleaner.critical_load = 50;
	cfg->cleaner.max_replica_lag = 1.0;
	cfg->cleaner.repair_overlap = 1.0;
	cfg->cleaner.repair_interval = 0.2;
	cfg->daemon.log_every = 5;
	cfg->daemon.hook_timeout = 10;
	cfg->cleaner.max_fence = 1.0;
	cfg->cleaner.max_history_length = 1000000;
	cfg->cleaner.write_latency_factor = 2.0;
	cfg->cleaner.max_signal_age = 3.0;

	if (!yaml_parser_initialize(&c.parser)) {
		error = nomem();
		goto done;
	}
	parser_ready = true;
	yaml_parser_set_input_string(&c.parser, (const unsigned char *)c.text, c.len);
	if ((error = load_tree(&root, &c)) < 0 || (error = parse_root(cfg, &c, root)) < 0)
		goto done;
	*out = cfg;
	cfg = NULL;

done:
	if (parser_ready)
		yaml_parser_delete(&c.parser);
	arena_free(&c);
	bs_config_free(cfg);
	return error;
}

int bs_config_load(bs_config_t **out, const char *path)
{
	const char *env = getenv("BAGSTORE_CONFIG");
	char *text = NULL;
	size_t len = 0, cap = 0;
	FILE *f = NULL;
	struct stat st;
	int error = 0;

	if (out == NULL)
		return bs_error(BS_EINVAL, "bs_config_load: no output");
	*out = NULL;
	if (path == NULL)
		path = env && env[0] ? env : DEFAULT_PATH;

	if ((f = fopen(path, "rb")) == NULL) {
		error = bs_error(BS_ECONFIG, "%s: cannot read: %s", path, strerror(errno));
		goto done;
	}
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		error = bs_error(BS_ECONFIG, "%s: cannot read: %s", path, strerror(EISDIR));
		goto done;
	}
	for (;;) {
		size_t got;
		if (len == cap) {
			char *t;
			if (cap > MAX_FILE_BYTES) {
				error = bs_error(BS_ECONFIG, "%s: cannot read: larger than %u bytes", path,
				                 MAX_FILE_BYTES);
				goto done;
			}
			cap = cap ? cap * 2 : 8192;
			if (cap > MAX_FILE_BYTES)
				cap = MAX_FILE_BYTES + 1;
			if ((t = realloc(text, cap)) == NULL) {
				error = nomem();
				goto done;
			}
			text = t;
		}
		got = fread(text + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		error = bs_error(BS_ECONFIG, "%s: cannot read: %s", path, strerror(errno ? errno : EIO));
		goto done;
	}
	error = bs_config_parse(out, text, len, path);

done:
	if (f)
		fclose(f);
	free(text);
	return error;
}

static void replica_free(bs_replica_conf_t *r)
{
	free(r->host);
	free(r->socket);
	free(r->user);
	free(r->password_env);
	tls_free(&r->tls);
}

void bs_config_free(bs_config_t *cfg)
{
	int i, j;

	if (cfg == NULL)
		return;
	for (i = 0; i < cfg->nshards; i++) {
		bs_shard_conf_t *s = &cfg->shards[i];
		free(s->name);
		free(s->host);
		free(s->socket);
		free(s->database);
		free(s->user);
		free(s->password_env);
		free(s->defaults_file);
		free(s->option_group);
		tls_free(&s->tls);
		for (j = 0; j < s->nreplicas; j++)
			replica_free(&s->replicas[j]);
		free(s->replicas);
	}
	free(cfg->shards);
	free(cfg->indexes);
	tls_free(&cfg->tls);
	free(cfg->path);
	free(cfg->daemon.metrics);
	free(cfg->daemon.metrics_web_config);
	free(cfg->daemon.log_format);
	free(cfg->daemon.hook_on_event);
	for (i = 0; i < BS_HOOK_COUNT; i++)
		free(cfg->daemon.hooks[i]);
	free(cfg);
}

void bs_config_fingerprint(char buf[17], const bs_config_t *cfg)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	char head[32];
	const char *p;
	int i, n = cfg ? cfg->nshards : 0;

	snprintf(head, sizeof head, "%d\n", n);
	for (p = head; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	for (i = 0; i < n; i++) {
		for (p = cfg->shards[i].name ? cfg->shards[i].name : ""; *p; p++)
			h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
		h = (h ^ (unsigned char)'\n') * 0x100000001b3ULL;
	}
	snprintf(buf, 17, "%016llx", (unsigned long long)h);
}

static bool streq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

bool bs_config_same_shards(const bs_config_t *a, const bs_config_t *b)
{
	if (a->nshards != b->nshards)
		return false;
	for (int i = 0; i < a->nshards; i++) {
		const bs_shard_conf_t *x = &a->shards[i], *y = &b->shards[i];
		if (!streq(x->name, y->name) || !streq(x->host, y->host) || x->port != y->port ||
		    !streq(x->socket, y->socket) || !streq(x->database, y->database) ||
		    !streq(x->defaults_file, y->defaults_file) || !streq(x->option_group, y->option_group))
			return false;
	}
	return true;
}

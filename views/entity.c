/*
 * entity.c - one entity: its bag decoded as a tree, its shard and update
 * time, its raw stored bytes on request (hex dump of bs_get_raw), and its
 * rows in every index on every shard beside the rows it should have
 * (bs_entity_index_rows). Also the entity changes made from the console:
 *
 *  - edit: the bag as YAML in $EDITOR; on save it is decoded (errors keep
 *    the file and say where it is), the change is shown, and `y` writes it
 *    with bs_put_if against the updated time read when it was opened. A
 *    conflict writes nothing, keeps the edited YAML in its file, and shows
 *    the store's version beside the operator's.
 *  - create: the same with a new id, written only if absent; a template
 *    that comes back unchanged is an abort, as an unchanged edit is.
 * One file kept after a failure at a time (keep_file).
 *  - delete: after the first 8 hex digits of the id are typed.
 * Every change goes to the audit table.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "views.h"

#define KEY_SNAP "entity"

static struct {
	bs_id_t id;
	unsigned got; /* the request generation the snapshot answers */
	int rc;
	char err[256];
	bs_value_t bag;
	int64_t updated_us;
	int shard;
	bs_bytes_t raw;
	char **tree; /* lines */
	int ntree;
	char **rows; /* index rows lines */
	int nrows;
	int rows_rc;
	char rows_err[256];
	int64_t taken_us;
} snap;

static bs_id_t cur_id;
static unsigned cur_gen;
static bs_id_t deleted_id; /* snap_lock: the last entity this console deleted */
static bool deleted_here;
static bool show_raw;
static int top_line;
static int last_h;

typedef struct {
	bs_id_t id;
	unsigned gen;
} dreq_t;

/* ------------------------------------------------------------ lines */

typedef struct {
	char **v;
	int n, cap;
} lines_t;

static void lines_add(lines_t *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void lines_add(lines_t *l, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (!s)
		return;
	if (l->n == l->cap) {
		int cap = l->cap ? l->cap * 2 : 32;
		char **v = realloc(l->v, sizeof(char *) * (size_t)cap);

		if (!v) { /* out of memory: the line is left out */
			free(s);
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = s;
}

static void lines_free(char **v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void scalar_text(char *buf, size_t n, const bs_value_t *v)
{
	char hex[37];
	bs_id_t id;

	switch (v->type) {
	case BS_NIL: snprintf(buf, n, "null"); break;
	case BS_BOOL: snprintf(buf, n, "%s", v->v.b ? "true" : "false"); break;
	case BS_INT: snprintf(buf, n, "%lld", (long long)v->v.i); break;
	case BS_UINT: snprintf(buf, n, "%llu", (unsigned long long)v->v.u); break;
	case BS_FLOAT: snprintf(buf, n, "%.17g", v->v.f); break;
	case BS_STR:
		if (v->v.s.len + 3 > n)
			snprintf(buf, n - 40, "\"%.*s", (int)v->v.s.len, v->v.s.ptr),
				snprintf(buf + strlen(buf), 40, "...\" (%zu bytes)", v->v.s.len);
		else
			snprintf(buf, n, "\"%.*s\"", (int)v->v.s.len, v->v.s.ptr);
		break;
	case BS_BIN:
		if (v->v.s.len == 16) {
			memcpy(id.b, v->v.s.ptr, 16);
			bs_id_dashed(hex, &id);
			snprintf(buf, n, "%s  (uuid)", hex);
		} else {
			size_t i, o = 0;
			for (i = 0; i < v->v.s.len && i < 32 && o + 3 < n; i++)
				o += (size_t)snprintf(buf + o, n - o, "%02x", (unsigned char)v->v.s.ptr[i]);
			snprintf(buf + o, n - o, "%s  (%zu bytes)", v->v.s.len > 32 ? "..." : "", v->v.s.len);
		}
		break;
	default: buf[0] = 0;
	}
}

static void tree(lines_t *l, const bs_value_t *v, int depth, const char *label)
{
	char text[8192];
	size_t i;
	int ind = depth * 2;

	if (v->type == BS_MAP) {
		if (label)
			lines_add(l, "%*s%s: {%zu}", ind, "", label, v->v.m.len);
		for (i = 0; i < v->v.m.len; i++)
			tree(l, &v->v.m.items[i].val, label ? depth + 1 : depth, v->v.m.items[i].key);
	} else if (v->type == BS_ARRAY) {
		lines_add(l, "%*s%s: [%zu]", ind, "", label ? label : "", v->v.a.len);
		for (i = 0; i < v->v.a.len; i++) {
			char idx[32];
			snprintf(idx, sizeof idx, "[%zu]", i);
			tree(l, &v->v.a.items[i], depth + 1, idx);
		}
	} else {
		scalar_text(text, sizeof text, v);
		lines_add(l, "%*s%s: %s", ind, "", label ? label : "", text);
	}
}

/* ------------------------------------------------------------ loading */

/* The lines "index rows" shows: per index, the row the entity should have
 * and the rows found on every shard. 0, or the error (message in err). */
static int index_row_lines(lines_t *rl, char *err, size_t errsize, bs_store_t *st, const bs_value_t *bag)
{
	bs_entity_rows_t *er = NULL;
	int n = 0, i, j, rc;

	if ((rc = bs_entity_index_rows(&er, &n, st, bag)) < 0) {
		snprintf(err, errsize, "%s", bs_last_error());
		goto done;
	}
	for (i = 0; i < n; i++) {
		const bs_entity_rows_t *x = &er[i];
		bool ok = x->expect_shard < 0 ? x->nfound == 0 : (x->nfound == 1 && x->found[0].right);

		if (x->expect_shard >= 0)
			lines_add(rl, "%s %-20s should have: %s on %s", ok ? "ok     " : "DRIFT  ", x->index, x->expect,
			          shard_name(x->expect_shard));
		else
			lines_add(rl, "%s %-20s should have: no row%s", ok ? "ok     " : "DRIFT  ", x->index,
			          x->misfit ? " (a value does not fit the index's type)" : "");
		if (x->nfound == 0 && x->expect_shard >= 0)
			lines_add(rl, "          has: MISSING on every shard");
		for (j = 0; j < x->nfound && j < 16; j++)
			lines_add(rl, "          has: %s on %s%s", x->found[j].values, shard_name(x->found[j].shard),
			          x->found[j].right ? "" : "   <- STALE (wrong value or shard)");
	}
	if (n == 0)
		lines_add(rl, "(no index maintained by writers)");
done:
	free(er);
	return rc;
}

/* What work() read, published into snap (which takes what it owns). */
typedef struct {
	int rc, rows_rc, shard;
	char err[256], rows_err[256];
	bs_value_t bag;
	int64_t updated_us;
	bs_bytes_t raw;
	lines_t tree, rows;
} loaded_t;

/* Publish what was loaded, unless a newer request was made since. */
static void publish(loaded_t *ld, const dreq_t *q)
{
	snap_lock();
	if (q->gen == cur_gen) {
		bs_value_clear(&snap.bag);
		bs_bytes_free(&snap.raw);
		lines_free(snap.tree, snap.ntree);
		lines_free(snap.rows, snap.nrows);
		snap.id = q->id;
		snap.got = q->gen;
		snap.rc = ld->rc;
		snprintf(snap.err, sizeof snap.err, "%s", ld->err);
		snap.bag = ld->bag;
		bs_value_nil(&ld->bag);
		snap.updated_us = ld->updated_us;
		snap.shard = ld->shard;
		snap.raw = ld->raw;
		memset(&ld->raw, 0, sizeof ld->raw);
		snap.tree = ld->tree.v;
		snap.ntree = ld->tree.n;
		memset(&ld->tree, 0, sizeof ld->tree);
		snap.rows = ld->rows.v;
		snap.nrows = ld->rows.n;
		memset(&ld->rows, 0, sizeof ld->rows);
		snap.rows_rc = ld->rows_rc;
		snprintf(snap.rows_err, sizeof snap.rows_err, "%s", ld->rows_err);
		snap.taken_us = now_us();
	}
	snap_unlock();
}

static void work(bs_store_t *st, void *arg)
{
	dreq_t *q = arg;
	loaded_t ld;
	int64_t up2 = 0;

	memset(&ld, 0, sizeof ld);
	ld.shard = -1;
	bs_value_nil(&ld.bag);
	ld.rc = bs_get(&ld.bag, st, &q->id, &ld.updated_us, &ld.shard);
	if (ld.rc < 0)
		snprintf(ld.err, sizeof ld.err, "%s", bs_last_error());
	if (ld.rc == 0 || ld.rc == BS_ECORRUPT)
		bs_get_raw(&ld.raw, st, &q->id, &up2);
	if (ld.rc == 0) {
		tree(&ld.tree, &ld.bag, 0, NULL);
		ld.rows_rc = index_row_lines(&ld.rows, ld.rows_err, sizeof ld.rows_err, st, &ld.bag);
	}
	publish(&ld, q);
	bs_value_clear(&ld.bag);
	bs_bytes_free(&ld.raw);
	lines_free(ld.tree.v, ld.tree.n);
	lines_free(ld.rows.v, ld.rows.n);
	worker_published();
}

static void et_reload(void)
{
	dreq_t *q = calloc(1, sizeof *q);

	if (!q)
		return;
	snap_lock(); /* cur_gen is also bumped by the action lane (do_write) */
	q->id = cur_id;
	q->gen = cur_gen;
	snap_unlock();
	worker_submit(LANE_BROWSE, KEY_SNAP, false, work, q, free);
}

void entity_open(const bs_id_t *id)
{
	char hex[33], crumb[16];

	snap_lock();
	cur_id = *id;
	cur_gen++;
	snap_unlock();
	show_raw = false;
	top_line = 0;
	bs_id_hex(hex, id);
	snprintf(crumb, sizeof crumb, "%.8s", hex);
	ui_push_crumb(&view_entity, crumb);
}

/* ------------------------------------------------------------ drawing */

/* The page's lines cut to the terminal's width: a long value continues on
 * the lines below (indented), so that every part of it can be scrolled to. */
static void wrap_lines(lines_t *out, const lines_t *in, int w)
{
	int i, k;

	for (i = 0; i < in->n; i++) {
		static int starts[4096], lens[4096];
		int n;
		if (ui_width(in->v[i]) <= w) {
			lines_add(out, "%s", in->v[i]);
			continue;
		}
		n = ui_wrap(in->v[i], w > 12 ? w - 4 : 8, starts, lens, 4096);
		for (k = 0; k < n; k++)
			lines_add(out, "%s%.*s", k ? "    " : "", lens[k], in->v[i] + starts[k]);
	}
}

/* The stored bytes as a hex dump, 16 a line. snap_lock held. */
static void raw_lines(lines_t *body)
{
	size_t off;

	lines_add(body, "raw stored bytes (zlib of MessagePack), %zu bytes:", snap.raw.len);
	for (off = 0; off < snap.raw.len; off += 16) {
		char hx[64] = "", as[20] = "";
		size_t k, o = 0;

		for (k = 0; k < 16; k++) {
			if (off + k < snap.raw.len) {
				unsigned char c = snap.raw.ptr[off + k];
				o += (size_t)snprintf(hx + o, sizeof hx - o, "%02x%s", c, k == 7 ? "  " : " ");
				as[k] = c >= 32 && c < 127 ? (char)c : '.';
			} else {
				o += (size_t)snprintf(hx + o, sizeof hx - o, "   %s", k == 7 ? " " : "");
			}
		}
		as[16] = 0;
		lines_add(body, "%08zx  %s |%s|", off, hx, as);
	}
}

/* The scrolling part of the page: the bag (decoded, or its raw bytes) and
 * its index rows. snap_lock held. */
static void body_lines(lines_t *body)
{
	int i;

	if (snap.rc == BS_ECORRUPT)
		lines_add(body, "the body does not decode: %s", snap.err);
	if (show_raw || snap.rc == BS_ECORRUPT) {
		raw_lines(body);
	} else {
		lines_add(body, "decoded:");
		for (i = 0; i < snap.ntree; i++)
			lines_add(body, "  %s", snap.tree[i]);
	}
	if (snap.rc == 0) {
		lines_add(body, "%s", "");
		lines_add(body, "index rows (every shard read):");
		if (snap.rows_rc < 0)
			lines_add(body, "  error: %s", snap.rows_err);
		for (i = 0; i < snap.nrows; i++)
			lines_add(body, "  %s", snap.rows[i]);
	}
}

static void et_draw(int y, int h, int w)
{
	char hex[37], t[64], stale[128], size[32];
	lines_t body = { 0 }, shown = { 0 };
	int i, line = y;

	bs_id_dashed(hex, &cur_id);
	snap_lock();
	if (snap.got != cur_gen) {
		ui_printf(line, 0, w, "Entity %s: loading ...", hex);
		snap_unlock();
		return;
	}
	ui_stale(KEY_SNAP, snap.taken_us, stale, sizeof stale);
	ui_color(C_HEADER, true);
	ui_printf(line++, 0, w, "Entity %s  %s", hex, stale);
	ui_color(C_HEADER, false);
	if (snap.rc == BS_ENOTFOUND) {
		/* gone (deleted here or elsewhere): back to where it was opened from */
		char h32[33];
		bs_id_hex(h32, &cur_id);
		if (deleted_here && memcmp(deleted_id.b, cur_id.b, 16) == 0)
			ui_msg("deleted entity %s; back to the screen before", h32);
		else
			ui_err("entity %s: not found (deleted?); back to the screen before", hex);
		deleted_here = false;
		ui_request_pop(&view_entity);
		snap_unlock();
		return;
	}
	if (snap.rc < 0 && snap.rc != BS_ECORRUPT) {
		ui_color(C_BAD, true);
		ui_printf(line++, 0, w, "%s: %s", bs_strerror(snap.rc), snap.err);
		ui_color(C_BAD, false);
		snap_unlock();
		return;
	}
	fmt_time(t, sizeof t, snap.updated_us);
	ui_printf(line++, 0, w, "shard %s   updated %s.%06lld UTC   stored body %s", shard_name(snap.shard), t,
	          (long long)(snap.updated_us % 1000000), fmt_bytes(size, sizeof size, (int64_t)snap.raw.len));
	line++;
	body_lines(&body);
	snap_unlock();
	wrap_lines(&shown, &body, w);
	last_h = y + h - 1 - line;
	if (top_line > shown.n - last_h)
		top_line = shown.n - last_h;
	if (top_line < 0)
		top_line = 0;
	for (i = top_line; i < shown.n && line < y + h - 1; i++, line++) {
		bool bad = strstr(shown.v[i], "DRIFT") || strstr(shown.v[i], "STALE") || strstr(shown.v[i], "MISSING");
		if (bad)
			ui_color(C_BAD, true);
		ui_put(line, 0, w, shown.v[i]);
		if (bad)
			ui_color(C_BAD, false);
	}
	if (shown.n > last_h) {
		char more[64];
		snprintf(more, sizeof more, " lines %d-%d of %d ", top_line + 1, top_line + last_h, shown.n);
		ui_color(C_DIM, true);
		ui_put(y, w - ui_width(more) > 0 ? w - ui_width(more) : 0, w, more);
		ui_color(C_DIM, false);
	}
	lines_free(body.v, body.n);
	lines_free(shown.v, shown.n);
	ui_color(C_DIM, true);
	ui_put(y + h - 1, 0, w,
	       ui.read_only ? "x raw bytes / tree   q back   ? help"
	                    : "x raw bytes / tree   e edit   d delete   q back   ? help");
	ui_color(C_DIM, false);
}

/* ------------------------------------------------------------ changes */

/* A line diff (longest common subsequence) of two texts, "-"/"+"/" ". */
static char *diff_text(const char *a, const char *b)
{
	lines_t la = { 0 }, lb = { 0 };
	char *out = NULL;
	size_t outlen = 0;
	FILE *f = open_memstream(&out, &outlen);
	const char *p;
	int i, j, *L;

	for (p = a; *p;) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);
		lines_add(&la, "%.*s", len, p);
		p += len + (nl ? 1 : 0);
	}
	for (p = b; *p;) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);
		lines_add(&lb, "%.*s", len, p);
		p += len + (nl ? 1 : 0);
	}
	if ((long)la.n * lb.n > 4000000 || !(L = calloc((size_t)(la.n + 1) * (size_t)(lb.n + 1), sizeof(int)))) {
		for (i = 0; i < la.n; i++)
			fprintf(f, "- %s\n", la.v[i]);
		for (j = 0; j < lb.n; j++)
			fprintf(f, "+ %s\n", lb.v[j]);
	} else {
#define LL(x, y) L[(x) * (lb.n + 1) + (y)]
		for (i = la.n - 1; i >= 0; i--)
			for (j = lb.n - 1; j >= 0; j--)
				LL(i, j) = strcmp(la.v[i], lb.v[j]) == 0
				                   ? LL(i + 1, j + 1) + 1
				                   : (LL(i + 1, j) > LL(i, j + 1) ? LL(i + 1, j) : LL(i, j + 1));
		for (i = 0, j = 0; i < la.n || j < lb.n;) {
			if (i < la.n && j < lb.n && strcmp(la.v[i], lb.v[j]) == 0) {
				fprintf(f, "  %s\n", la.v[i]);
				i++, j++;
			} else if (i < la.n && (j == lb.n || LL(i + 1, j) >= LL(i, j + 1))) {
				fprintf(f, "- %s\n", la.v[i++]);
			} else {
				fprintf(f, "+ %s\n", lb.v[j++]);
			}
		}
#undef LL
		free(L);
	}
	fclose(f);
	lines_free(la.v, la.n);
	lines_free(lb.v, lb.n);
	return out;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL, *nb;
	size_t len = 0, cap = 0, n;

	if (!f)
		return NULL;
	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 8192;
			if (!(nb = realloc(buf, cap + 1))) {
				free(buf);
				buf = NULL;
				errno = ENOMEM;
				goto done;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, f);
		if (n == 0)
			break;
		len += n;
	}
	buf[len] = 0;
done:
	fclose(f);
	return buf;
}

/* What is being edited: one at a time. */
static struct {
	bool active;
	bs_id_t id;
	int64_t expect_us; /* updated time read at open; 0: create */
	char path[256];
	char *orig_yaml; /* as it was opened */
	char *new_yaml;
	bs_value_t bag; /* decoded edit */
} ed;

/* The one edit file kept after a failure, named in its message (a YAML
 * error, a conflict, a write that failed): a later failure's file takes its
 * place and the older is removed; writing or giving up the edit kept in it
 * removes it. Under snap_lock: a lane's write keeps or removes it too. */
static char kept_path[256];

static void keep_file(const char *path)
{
	char old[sizeof kept_path];

	snap_lock();
	snprintf(old, sizeof old, "%s", kept_path);
	snprintf(kept_path, sizeof kept_path, "%s", path);
	snap_unlock();
	if (old[0] && strcmp(old, path) != 0)
		unlink(old);
}

/* The edit in path is written or given up: its file goes. 0: removed. */
static int drop_file(const char *path)
{
	int rc = unlink(path);

	snap_lock();
	if (strcmp(kept_path, path) == 0)
		kept_path[0] = 0;
	snap_unlock();
	return rc;
}

/* The key that edits the kept file again: `e` for an edit, `n` for a create. */
static char again_key(void)
{
	return ed.expect_us ? 'e' : 'n';
}

static void ed_reset(void)
{
	free(ed.orig_yaml);
	free(ed.new_yaml);
	bs_value_clear(&ed.bag);
	memset(&ed, 0, sizeof ed);
	bs_value_nil(&ed.bag);
}

typedef struct {
	bs_id_t id;
	int64_t expect_us;
	bs_value_t bag;
	char path[256];
	char *new_yaml;
	char detail[512];
	int shard;
} wreq_t;

static void wreq_free(void *p)
{
	wreq_t *w = p;

	bs_value_clear(&w->bag);
	free(w->new_yaml);
	free(w);
}

/* After a change from a lane: the entity shown is read again (a newer
 * generation, so that an older answer is not drawn). */
static void reload_current(void)
{
	dreq_t *q = calloc(1, sizeof *q);

	if (!q)
		return;
	snap_lock();
	q->id = cur_id;
	q->gen = ++cur_gen;
	snap_unlock();
	worker_submit(LANE_BROWSE, KEY_SNAP, false, work, q, free);
}

/* The entity as stored now, read back after a write: its body and updated
 * time; *us 0 when it is not `want` (written over meanwhile), which makes
 * an undo of this change refuse. */
static void read_back(bs_bytes_t *body, int64_t *us, bs_store_t *st, const bs_id_t *id, const bs_value_t *want)
{
	bs_value_t got;

	*us = 0;
	memset(body, 0, sizeof *body);
	bs_value_nil(&got);
	if (bs_get_raw(body, st, id, us) == 0 &&
	    (bs_body_decode(&got, body->ptr, body->len) < 0 || !bs_value_equal(&got, want)))
		*us = 0;
	bs_value_clear(&got);
	bs_error_clear();
}

void entity_conflict_page(bs_store_t *st, const bs_id_t *id, const char *why, const char *mine_yaml,
                          const char *kept_in, const char *detail)
{
	bs_value_t cur;
	int64_t up = 0;
	char *cur_yaml = NULL, *page = NULL, *d = NULL, t2[64], hex[33];
	int grc;

	bs_id_hex(hex, id);
	bs_value_nil(&cur);
	grc = bs_get(&cur, st, id, &up, NULL);
	if (grc == 0)
		bs_yaml_encode(&cur_yaml, &cur);
	d = diff_text(cur_yaml ? cur_yaml : "", mine_yaml ? mine_yaml : "");
	fmt_time(t2, sizeof t2, up);
	if (asprintf(&page,
	             "CONFLICT: entity %s %s; nothing was written.\n"
	             "  %s%sthe store now has %s%s.%06lld\n"
	             "%s%s%s\n"
	             "Both versions (- in the store now, + what would have been written):\n\n%s\n"
	             "--- in the store now:\n%s\n+++ would have been written:\n%s",
	             hex, why, detail ? detail : "", detail ? ", " : "", grc == 0 ? "updated " : "",
	             grc == 0 ? t2 : "no such entity (deleted)", grc == 0 ? (long long)(up % 1000000) : 0LL,
	             kept_in ? "Your edited version is kept in " : "", kept_in ? kept_in : "",
	             kept_in ? "\n(edit it from there, or open the entity again and redo the change)." : "", d ? d : "",
	             cur_yaml ? cur_yaml : "(absent)\n", mine_yaml ? mine_yaml : "(absent)\n") < 0)
		page = NULL;
	worker_page("conflict", page ? page : "conflict");
	free(page);
	free(d);
	free(cur_yaml);
	bs_value_clear(&cur);
	bs_error_clear();
}

/* The edit's conflict: the page, and the edit kept. */
static void write_conflict(bs_store_t *st, const wreq_t *w, const char *hex)
{
	char opened[160], t1[64];

	snprintf(opened, sizeof opened, "opened at version updated %s.%06lld", fmt_time(t1, sizeof t1, w->expect_us),
	         (long long)(w->expect_us % 1000000));
	keep_file(w->path);
	entity_conflict_page(st, &w->id,
	                     w->expect_us ? "changed since you opened it"
	                                  : "exists already (a create writes only if absent)",
	                     w->new_yaml, w->path, w->expect_us ? opened : NULL);
	worker_notify(true, "not written: %s changed since it was opened; your edit is in %s", hex, w->path);
}

static void do_write(bs_store_t *st, void *arg)
{
	wreq_t *w = arg;
	bs_bytes_t before = { 0 }, after = { 0 };
	int64_t before_us = 0;
	char hex[33];
	int rc;

	bs_id_hex(hex, &w->id);
	/* the before-image: the version the edit replaces, if it still is */
	if (w->expect_us && (bs_get_raw(&before, st, &w->id, &before_us) < 0 || before_us != w->expect_us))
		bs_error_clear();
	rc = bs_put_if(st, &w->bag, w->expect_us);
	if (rc == BS_ECONFLICT) {
		write_conflict(st, w, hex);
		goto done;
	}
	bs_audit_entity_t ae = {
		.id = w->id, .before = w->expect_us ? &before : NULL, .before_us = w->expect_us, .after = &after
	};
	char msg[1024] = "", detail[1800];
	if (rc < 0)
		snprintf(msg, sizeof msg, "%s", bs_last_error());
	read_back(&after, &ae.after_us, st, &w->id, &w->bag);
	/* a failure after the entity was written (its index rows: a target
	 * shard down) is still a change: audited, its before-image kept */
	if (rc < 0 && (!ae.after_us || ae.after_us == w->expect_us)) {
		keep_file(w->path);
		worker_notify(true, "not written (%s); your edit is in %s", msg, w->path);
		goto done;
	}
	snprintf(detail, sizeof detail, "%s%s%.1000s", w->detail, rc < 0 ? "; cut short: " : "", msg);
	worker_audit_entity(st, w->expect_us ? "entity.edit" : "entity.create", &ae, detail);
	drop_file(w->path);
	worker_notify(rc < 0, "%s entity %s%s%s", w->expect_us ? "saved" : "created", hex, rc < 0 ? ", but: " : "",
	              msg);
	entities_changed();
	reload_current();
done:
	bs_bytes_free(&before);
	bs_bytes_free(&after);
}

/* The audit detail of an edit: its changed lines, short. */
static void change_summary(char *out, size_t n, const char *before, const char *after)
{
	char *d = diff_text(before, after), *p, *nl;
	size_t o = 0;

	out[0] = 0;
	if (!d)
		return;
	for (p = d; *p && o < n - 2; p = nl ? nl + 1 : p + strlen(p)) {
		nl = strchr(p, '\n');
		if (*p == '+' || *p == '-') {
			int len = nl ? (int)(nl - p) : (int)strlen(p);
			o += (size_t)snprintf(out + o, n - o, "%s%.*s", o ? "; " : "", len, p);
		}
		if (!nl)
			break;
	}
	free(d);
}

static reaction_t confirm_write(void *ctx)
{
	wreq_t *w = calloc(1, sizeof *w);

	(void)ctx;
	if (!ed.active || !w) {
		free(w);
		return R_POP;
	}
	w->id = ed.id;
	w->expect_us = ed.expect_us;
	w->bag = ed.bag;
	bs_value_nil(&ed.bag);
	snprintf(w->path, sizeof w->path, "%s", ed.path);
	w->new_yaml = strdup(ed.new_yaml);
	change_summary(w->detail, sizeof w->detail, ed.orig_yaml ? ed.orig_yaml : "", ed.new_yaml);
	ed_reset();
	worker_submit(LANE_ACTION, NULL, false, do_write, w, wreq_free);
	ui_msg("writing ...");
	return R_POP;
}

/* The change page closed without `y`: the edit is given up, its file goes. */
static void edit_given_up(void *ctx)
{
	(void)ctx;
	if (!ed.active)
		return;
	if (ed.path[0] && drop_file(ed.path) == 0)
		ui_msg("edit given up; nothing written (its file %s is removed)", ed.path);
	else
		ui_msg("edit given up; nothing written");
	ed_reset();
}

/* A YAML error, said once: where in the edit, what, and where the edit is
 * kept (the decoder's message starts with the file's name: not twice). */
static void yaml_error(void)
{
	const char *m = bs_last_error();
	size_t pl = strlen(ed.path);

	if (pl && strncmp(m, ed.path, pl) == 0 && m[pl] == ':')
		m += pl + 1;
	keep_file(ed.path);
	ui_err("not saved; your edit is kept in %s (%c edits it again): YAML line:column %s", ed.path, again_key(), m);
}

/* After the editor: decode, check, show the change. */
static reaction_t after_edit(void)
{
	char *text = read_file(ed.path), *d, *page = NULL, hex[33];
	bs_id_t id;

	if (!text) {
		ui_err("cannot read %s: %s", ed.path, strerror(errno));
		return R_REDRAW;
	}
	/* unchanged: an abort, for a create's template as for an edit */
	if (strcmp(text, ed.orig_yaml) == 0) {
		ui_msg(ed.expect_us ? "no change; nothing written"
		                    : "the new entity was left as its template; nothing was created");
		drop_file(ed.path);
		free(text);
		ed_reset();
		return R_REDRAW;
	}
	bs_value_clear(&ed.bag);
	if (bs_yaml_decode(&ed.bag, text, strlen(text), ed.path) < 0) {
		yaml_error();
		free(text);
		return R_REDRAW;
	}
	if (bs_bag_id(&id, &ed.bag) < 0 || memcmp(id.b, ed.id.b, 16) != 0) {
		keep_file(ed.path);
		ui_err("not saved; your edit is kept in %s (%c edits it again): the id must stay %s", ed.path,
		       again_key(), (bs_id_hex(hex, &ed.id), hex));
		free(text);
		return R_REDRAW;
	}
	free(ed.new_yaml);
	ed.new_yaml = text;
	d = diff_text(ed.orig_yaml ? ed.orig_yaml : "", text);
	bs_id_hex(hex, &ed.id);
	if (asprintf(&page,
	             "%s entity %s -- the change (- before, + after):\n\n%s\n"
	             "Written only if the entity has not changed since it was opened%s.\n"
	             "Your edit stays in %s until it is written (q gives it up and removes the file).\n",
	             ed.expect_us ? "Edit" : "Create", hex, d ? d : "", ed.expect_us ? "" : " (only if absent)",
	             ed.path) < 0)
		page = NULL;
	text_open(ed.expect_us ? "edit: the change" : "create: the new entity", page ? page : "", confirm_write, NULL,
	          ed.expect_us ? "write it" : "create it");
	text_set_cancel(edit_given_up);
	free(page);
	free(d);
	return R_REDRAW;
}

static reaction_t start_edit(const bs_id_t *id, int64_t expect_us, const char *yaml)
{
	char hex[33];
	int fd;
	FILE *f;

	/* an edit of the same entity that failed to decode: reopen its file */
	if (ed.active && memcmp(ed.id.b, id->b, 16) == 0 && ed.path[0] && access(ed.path, R_OK) == 0) {
		if (ui_edit_file(ed.path) != 0) {
			keep_file(ed.path);
			ui_err("the editor failed; your edit is kept in %s (%c edits it again)", ed.path, again_key());
			return R_REDRAW;
		}
		return after_edit();
	}
	ed_reset();
	ed.active = true;
	ed.id = *id;
	ed.expect_us = expect_us;
	ed.orig_yaml = strdup(yaml);
	bs_id_hex(hex, id);
	snprintf(ed.path, sizeof ed.path, "%s/bagstore-edit-%.8s-XXXXXX.yaml",
	         getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", hex);
	if ((fd = mkstemps(ed.path, 5)) < 0 || !(f = fdopen(fd, "w"))) {
		ui_err("cannot create a file to edit: %s", strerror(errno));
		ed_reset();
		return R_REDRAW;
	}
	fputs(yaml, f);
	fclose(f);
	if (ui_edit_file(ed.path) != 0) {
		keep_file(ed.path);
		ui_err("the editor failed; nothing written (your text is in %s; %c edits it again)", ed.path,
		       again_key());
		return R_REDRAW;
	}
	return after_edit();
}

reaction_t entity_edit(const bs_value_t *bag, int64_t updated_us)
{
	char *yaml = NULL;
	bs_id_t id;
	reaction_t r;

	if (bs_bag_id(&id, bag) < 0 || bs_yaml_encode(&yaml, bag) < 0) {
		ui_err("cannot edit: %s", bs_last_error());
		return R_REDRAW;
	}
	r = start_edit(&id, updated_us, yaml);
	free(yaml);
	return r;
}

reaction_t entity_create(void)
{
	bs_id_t id;
	char hex[37], *yaml = NULL;
	reaction_t r;

	/* a create that failed to decode: reopen its file, as `e` does an edit's */
	if (ed.active && !ed.expect_us && ed.path[0] && access(ed.path, R_OK) == 0)
		return start_edit(&ed.id, 0, ed.orig_yaml);
	bs_id_generate(&id);
	bs_id_dashed(hex, &id);
	if (asprintf(&yaml, "id: !uuid %s\n", hex) < 0)
		return R_REDRAW;
	r = start_edit(&id, 0, yaml);
	free(yaml);
	return r;
}

/* The entity the delete prompt is about (UI thread only); the request gets
 * its own copy, so a later prompt cannot change what a queued delete does. */
typedef struct {
	bs_id_t id;
	int shard;
} delreq_t;
static delreq_t del;

/* Delete what was read, only if it still is (bs_delete_if): the audit's
 * before-image is then exactly what went. A write in between: read again. */
static void do_delete(bs_store_t *st, void *arg)
{
	const delreq_t *q = arg;
	bs_bytes_t before = { 0 }, now = { 0 };
	int64_t us = 0;
	char hex[33];
	int rc = 0, tries;
	bool unknown = false;

	bs_id_hex(hex, &q->id);
	for (tries = 0; tries < 3; tries++) {
		bs_bytes_free(&before);
		if ((rc = bs_get_raw(&before, st, &q->id, &us)) < 0 ||
		    (rc = bs_delete_if(st, &q->id, us)) != BS_ECONFLICT)
			break;
	}
	char msg[1024] = "", detail[1200];
	if (rc < 0) {
		snprintf(msg, sizeof msg, "%s", bs_last_error());
		/* the entity gone all the same (its index rows are what failed), or
		 * perhaps (its shard does not answer now): a change, audited with
		 * its before-image, or it cannot be undone */
		int now_rc = tries == 3 || !before.ptr ? 0 : bs_get_raw(&now, st, &q->id, NULL);
		bs_bytes_free(&now);
		bs_error_clear();
		if (now_rc == 0) {
			worker_notify(true, "delete %s failed: %s", hex, msg);
			bs_bytes_free(&before);
			return;
		}
		unknown = now_rc != BS_ENOTFOUND;
	}
	bs_audit_entity_t ae = { .id = q->id, .before = &before, .before_us = us };
	snprintf(detail, sizeof detail, "%s%s%.1000s", q->shard >= 0 ? shard_name(q->shard) : "",
	         rc < 0 ? (unknown ? "; the delete may have been made: " : "; cut short: ") : "", msg);
	worker_audit_entity(st, "entity.delete", &ae, detail);
	bs_bytes_free(&before);
	worker_notify(rc < 0, "deleted entity %s%s%s", hex, rc < 0 ? ", but: " : "", msg);
	snap_lock();
	deleted_id = q->id;
	deleted_here = true;
	snap_unlock();
	entities_changed();
	reload_current();
}

static reaction_t delete_typed(const char *text, void *ctx)
{
	char hex[33];
	delreq_t *q;

	(void)ctx;
	if (!text)
		return R_REDRAW;
	bs_id_hex(hex, &del.id);
	if (strlen(text) < 8 || strncasecmp(text, hex, 8) != 0) {
		ui_err("not deleted: %s does not start the id", text);
		return R_REDRAW;
	}
	if (!(q = malloc(sizeof *q))) {
		ui_err("not deleted: out of memory");
		return R_REDRAW;
	}
	*q = del;
	worker_submit(LANE_ACTION, NULL, false, do_delete, q, free);
	ui_msg("deleting %s ...", hex);
	return R_REDRAW;
}

reaction_t entity_delete(const bs_id_t *id, int shard)
{
	char hex[33], label[256];

	del.id = *id;
	del.shard = shard;
	bs_id_hex(hex, id);
	snprintf(label, sizeof label,
	         "delete entity %s (1 entity on %s, with its index rows). Type %.8s to confirm: ", hex,
	         shard_name(shard), hex);
	ui_prompt(label, "", delete_typed, NULL);
	return R_REDRAW;
}

/* ------------------------------------------------------------ keys */

static reaction_t et_key(action_t a, int key)
{
	reaction_t r;

	switch (a) {
	case ACT_DOWN: top_line++; return R_REDRAW;
	case ACT_UP: top_line--; return R_REDRAW;
	case ACT_PGDN: top_line += last_h > 1 ? last_h - 1 : 1; return R_REDRAW;
	case ACT_PGUP: top_line -= last_h > 1 ? last_h - 1 : 1; return R_REDRAW;
	case ACT_HOME: top_line = 0; return R_REDRAW;
	case ACT_END: top_line = 1 << 20; return R_REDRAW;
	case ACT_ENT_RAW:
		show_raw = !show_raw;
		top_line = 0;
		return R_REDRAW;
	case ACT_ENT_EDIT:
	case ACT_ENT_DELETE: {
		bs_value_t bag;
		int64_t up;
		int shard;

		snap_lock();
		if (snap.got != cur_gen || snap.rc < 0) {
			snap_unlock();
			ui_err("the entity is not loaded");
			return R_REDRAW;
		}
		bs_value_copy(&bag, &snap.bag);
		up = snap.updated_us;
		shard = snap.shard;
		snap_unlock();
		if (a == ACT_ENT_DELETE)
			r = entity_delete(&cur_id, shard);
		else
			r = entity_edit(&bag, up);
		bs_value_clear(&bag);
		return r;
	}
	default:
		if (key == KEY_MOUSE) {
			if (ui_mouse.bstate & BUTTON4_PRESSED)
				top_line -= 3;
			else if (ui_mouse.bstate & BUTTON5_PRESSED)
				top_line += 3;
			return R_REDRAW;
		}
		return R_UNHANDLED;
	}
}

reaction_t entity_run(const char *arg)
{
	bs_id_t id;

	if (!arg[0]) {
		ui_err(":entity takes an id (32 hex digits or the dashed form)");
		return R_REDRAW;
	}
	if (bs_id_parse(&id, arg) < 0) {
		ui_err(":entity %s: %s", arg, bs_last_error());
		return R_REDRAW;
	}
	if (ui_top() != &view_entities && ui_top() != &view_entity)
		ui_switch(&view_entities);
	entity_open(&id);
	return R_REDRAW;
}

const struct view_ops view_entity = {
	.name = "entity",
	.scope = 'D',
	.reload = et_reload,
	.draw = et_draw,
	.key = et_key,
	.command = "entity",
	.run = entity_run,
	.command_help = "ID",
	.command_what = "open an entity",
};

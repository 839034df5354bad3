/*
 * audit.c - the audit screen: operators' changes, newest first, from every
 * shard's audit log (bs_audit_list): when, who (OS user, host, pid), what,
 * on which shards, the detail. Enter shows a change in full, an entity
 * change with its before and after and the difference; `u` undoes an
 * entity change, as `y` does on its page (bs_audit_undo): the before-image is written back only if
 * the entity is still what the change wrote, else nothing is written and
 * the conflict page shows both versions. The undo is audited itself.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views.h"

#define KEY_SNAP "audit"
#define LIMIT 200

static struct {
	bs_audit_list_t l;
	int64_t taken_us;
	int rc;
	char err[256];
} snap;

static table_t tbl;

static const col_t cols[] = {
	{ "ROW", 10, false, 0 }, { "AT (UTC)", 19, false, 0 }, { "ACTION", 15, false, 0 }, { "TARGET", 32, false, 0 },
	{ "WHO", 20, false, 2 }, { "SHARDS", 6, false, 2 },    { "DETAIL", 0, false, 1 },
};
#define NCOLS ((int)(sizeof cols / sizeof cols[0]))

static void work(bs_store_t *st, void *arg)
{
	bs_audit_list_t l;
	int rc;

	(void)arg;
	rc = bs_audit_list(&l, st, LIMIT);
	snap_lock();
	if (rc == 0) {
		bs_audit_list_free(&snap.l);
		snap.l = l;
	}
	snap.rc = rc;
	snprintf(snap.err, sizeof snap.err, "%s", rc < 0 ? bs_last_error() : "");
	snap.taken_us = now_us();
	snap_unlock();
	worker_published();
}

static void au_reload(void)
{
	worker_submit(LANE_STATUS, KEY_SNAP, true, work, NULL, NULL);
}

static void au_open(void)
{
	static bool init;

	if (!init) {
		tbl_init(&tbl, cols, NCOLS);
		init = true;
	}
}

static void row_name(char *buf, size_t n, const bs_audit_entry_t *e)
{
	snprintf(buf, n, "%s#%lld", shard_name(e->shard), (long long)e->id);
}

static void build(void)
{
	int k;

	tbl_clear(&tbl);
	for (k = 0; k < snap.l.len; k++) {
		const bs_audit_entry_t *e = &snap.l.items[k];
		char name[96], t[64];
		int r = tbl_add(&tbl, e->entity ? C_NORMAL : C_DIM);

		row_name(name, sizeof name, e);
		tbl_set(&tbl, r, 0, NAN, "%s", name);
		tbl_set(&tbl, r, 1, (double)e->at_us, "%s", fmt_time(t, sizeof t, e->at_us));
		tbl_set(&tbl, r, 2, NAN, "%s", e->action);
		tbl_set(&tbl, r, 3, NAN, "%s", e->target);
		if (e->pid)
			tbl_set(&tbl, r, 4, NAN, "%s@%s:%d", e->os_user, e->host, e->pid);
		else
			tbl_set(&tbl, r, 4, NAN, "%s@%s", e->os_user, e->host);
		tbl_set(&tbl, r, 5, NAN, "%s", !e->shards[0] ? "-" : strcmp(e->shards, "*") ? e->shards : "all");
		tbl_set(&tbl, r, 6, NAN, "%s", e->detail ? e->detail : "");
	}
	tbl_finish(&tbl, ui_filter());
}

static void au_draw(int y, int h, int w)
{
	char stale[128], t[64], cnt[32];
	int rows, line;

	snap_lock();
	build();
	ui_stale(KEY_SNAP, snap.taken_us, stale, sizeof stale);
	ui_printf(y, 0, w, "Audit: %s changes, the newest of every shard (as of %s)  %s",
	          tbl_count(cnt, sizeof cnt, &tbl), snap.taken_us ? fmt_time(t, sizeof t, snap.taken_us) : "-", stale);
	rows = h - 3 > 2 ? h - 3 : 2;
	tbl_draw(&tbl, y + 1, rows, w);
	line = y + 1 + rows;
	ui_color(C_BAD, true);
	if (snap.rc < 0 && line < y + h - 1)
		ui_printf(line++, 0, w, "error: %s", snap.err);
	else if (snap.l.unreachable && line < y + h - 1)
		ui_printf(line++, 0, w, "%d shard%s did not answer: their rows are not listed (%s)", snap.l.unreachable,
		          snap.l.unreachable == 1 ? "" : "s", snap.l.unreachable_first);
	ui_color(C_BAD, false);
	snap_unlock();
	ui_color(C_DIM, true);
	ui_put(y + h - 1, 0, w,
	       ui.read_only ? "Enter the change in full  / filter  ? help"
	                    : "Enter the change in full  u undo an entity change  / filter  ? help");
	ui_color(C_DIM, false);
}

/* ------------------------------------------------------------ one entry */

/* A deep copy of an entry: the request's own. */
static int entry_copy(bs_audit_entry_t *out, const bs_audit_entry_t *e)
{
	*out = *e;
	out->detail = NULL;
	memset(&out->before, 0, sizeof out->before);
	memset(&out->after, 0, sizeof out->after);
	if ((e->detail && !(out->detail = strdup(e->detail))) ||
	    (e->has_before && !(out->before.ptr = malloc(e->before.len ? e->before.len : 1))) ||
	    (e->has_after && !(out->after.ptr = malloc(e->after.len ? e->after.len : 1)))) {
		free(out->detail);
		free(out->before.ptr);
		free(out->after.ptr);
		return -1;
	}
	if (e->has_before)
		memcpy(out->before.ptr, e->before.ptr, out->before.len = out->before.cap = e->before.len);
	if (e->has_after)
		memcpy(out->after.ptr, e->after.ptr, out->after.len = out->after.cap = e->after.len);
	return 0;
}

static void entry_free(void *p)
{
	bs_audit_entry_t *e = p;

	free(e->detail);
	bs_bytes_free(&e->before);
	bs_bytes_free(&e->after);
	free(e);
}

/* An image as YAML (NULL when absent; the reason when it does not decode). */
static char *image_yaml(bool has, const bs_bytes_t *b)
{
	bs_value_t v;
	char *y = NULL;

	if (!has)
		return NULL;
	if (bs_body_decode(&v, b->ptr, b->len) < 0 || bs_yaml_encode(&y, &v) < 0) {
		if (asprintf(&y, "(does not decode: %s)\n", bs_last_error()) < 0)
			y = NULL;
	} else {
		bs_value_clear(&v);
	}
	bs_error_clear();
	return y;
}

static const bs_audit_entry_t *selected_locked(void)
{
	int r = tbl_selected(&tbl), k;
	char name[96];

	if (r < 0)
		return NULL;
	for (k = 0; k < snap.l.len; k++) {
		row_name(name, sizeof name, &snap.l.items[k]);
		if (strcmp(name, tbl_cell(&tbl, r, 0)) == 0)
			return &snap.l.items[k];
	}
	return NULL;
}

/* Enter: the change in full, as a page (*page, *title; snap_lock held). */
static void entry_page(char **out, char *title, size_t tn, const bs_audit_entry_t *e)
{
	char *b = image_yaml(e->has_before, &e->before), *a = image_yaml(e->has_after, &e->after), *page = NULL;
	char name[96], t[64];

	row_name(name, sizeof name, e);
	fmt_time(t, sizeof t, e->at_us);
	if (asprintf(&page, "%s at %s UTC by %s@%s (pid %d)\n%s %s on %s\n%s%s\n%s%s%s%s%s%s", name, t, e->os_user,
	             e->host, e->pid, e->action, e->target,
	             !e->shards[0]            ? "-"
	             : strcmp(e->shards, "*") ? e->shards
	                                      : "every shard",
	             e->detail ? "detail: " : "", e->detail ? e->detail : "", e->entity ? "\n--- before" : "",
	             e->entity ? (e->has_before ? ":\n" : ": (absent)\n") : "", b ? b : "",
	             e->entity ? "\n+++ after" : "", e->entity ? (e->has_after ? ":\n" : ": (absent)\n") : "",
	             a ? a : "") < 0)
		page = NULL;
	snprintf(title, tn, "audit %s", name);
	*out = page;
	free(a);
	free(b);
}

static void do_undo(bs_store_t *st, void *arg)
{
	bs_audit_entry_t *e = arg;
	char hex[33], name[96], why[200];
	int rc;

	bs_id_hex(hex, &e->entity_id);
	row_name(name, sizeof name, e);
	rc = bs_audit_undo(st, e);
	if (rc == BS_ECONFLICT) {
		char *mine = image_yaml(e->has_before, &e->before);
		snprintf(why, sizeof why, "changed since %s (%s): the undo", name, e->action);
		entity_conflict_page(st, &e->entity_id, why, mine ? mine : "(absent: the undo would delete it)\n", NULL,
		                     NULL);
		worker_notify(true, "not undone: entity %s changed since %s; nothing written", hex, name);
		free(mine);
		return;
	}
	if (rc < 0) {
		worker_notify(true, "undo of %s: %s", name, bs_last_error());
		return;
	}
	worker_notify(false, "undid %s (%s of %s); the undo is audited", name, e->action, hex);
	entities_changed();
	work(st, NULL);
}

static void undo_answer(bool yes, void *ctx)
{
	bs_audit_entry_t *e = ctx;

	if (!yes) {
		ui_msg("not undone");
		entry_free(e);
		return;
	}
	ui_msg("undoing ...");
	worker_submit(LANE_ACTION, NULL, false, do_undo, e, entry_free);
}

/* What an undo of e would write, for its question. */
static const char *undo_what(const bs_audit_entry_t *e)
{
	return e->has_before ? (e->has_after ? "write its before-image back" : "re-create it (only if absent)")
	                     : "delete it";
}

/* `y` on a change's page: the undo, asked for there (the page names it). */
static reaction_t undo_from_page(void *ctx)
{
	ui_msg("undoing ...");
	worker_submit(LANE_ACTION, NULL, false, do_undo, ctx, entry_free);
	return R_POP;
}

/* The page closed without `y`: its entry goes. */
static void page_closed(void *ctx)
{
	entry_free(ctx);
}

static reaction_t undo_selected(void)
{
	const bs_audit_entry_t *e;
	bs_audit_entry_t *copy = calloc(1, sizeof *copy);
	char label[400], name[96], hex[33];

	snap_lock();
	e = selected_locked();
	if (!e || !e->entity || !copy || entry_copy(copy, e) < 0) {
		bool none = !e, not_entity = e && !e->entity;
		snap_unlock();
		free(copy);
		ui_err("%s", none         ? "no change selected"
		             : not_entity ? "only an entity change can be undone"
		                          : "out of memory");
		return R_REDRAW;
	}
	snap_unlock();
	row_name(name, sizeof name, copy);
	bs_id_hex(hex, &copy->entity_id);
	snprintf(label, sizeof label,
	         "Undo %s (%s of %s): %s, only if the entity is still what this change "
	         "wrote. y/n ",
	         name, copy->action, hex, undo_what(copy));
	ui_confirm(label, undo_answer, copy);
	return R_REDRAW;
}

static reaction_t au_key(action_t a, int key)
{
	reaction_t r = tbl_key(&tbl, a, key);
	const bs_audit_entry_t *e;

	if (r != R_UNHANDLED)
		return r;
	switch (a) {
	case ACT_OPEN: {
		char *page = NULL, title[160] = "", label[160] = "";
		bs_audit_entry_t *copy = NULL;
		snap_lock();
		if ((e = selected_locked())) {
			entry_page(&page, title, sizeof title, e);
			/* an entity change's page offers its undo */
			if (e->entity && (copy = calloc(1, sizeof *copy)) && entry_copy(copy, e) < 0) {
				free(copy);
				copy = NULL;
			}
			if (copy)
				snprintf(label, sizeof label,
				         "undo this change: %s, only if the entity is still what it wrote",
				         undo_what(copy));
		}
		snap_unlock();
		if (title[0]) {
			text_open(title, page ? page : "", copy ? undo_from_page : NULL, copy, label);
			if (copy)
				text_set_cancel(page_closed);
		}
		free(page);
		return R_REDRAW;
	}
	case ACT_AUDIT_UNDO: return undo_selected();
	default: return R_UNHANDLED;
	}
}

const struct view_ops view_audit = {
	.name = "audit",
	.scope = 'A',
	.open = au_open,
	.reload = au_reload,
	.draw = au_draw,
	.key = au_key,
};

/*
 * entities.c - the entity browser: newest first, one shard or all merged,
 * paged by key with bs_scan_* (a stack of positions pages back; never
 * COUNT(*) or OFFSET); `/PROP=VALUE` queries a ready index (bs_query: the
 * count found is the true one, the newest 1,000 shown; a property no ready
 * index holds is refused, naming the indexes there are); plain `/TEXT`
 * filters the page shown, and says so; `i` opens an id; create, edit and
 * delete go through views/entity.c.
 *
 * The scan positions belong to the browse lane: only requests touch them.
 * The UI draws the published page.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views.h"

#define KEY_SNAP "entities"

enum { OP_FIRST, OP_NEXT, OP_PREV, OP_RELOAD, OP_QUERY };

typedef struct {
	int op;
	int shard;
	size_t limit;
	bool reload;
	char query[256];
} ereq_t;

/* browse lane only */
static struct {
	bs_scan_t *start, *pos;
	bs_scan_t **back;
	size_t nback, capback;
	int shard;
	long page_no;
} lane;

/* published */
static struct {
	bs_result_t page;
	char **summary;
	long page_no;
	bool at_end;
	bool query_mode;
	char query[256];
	int shard;
	int64_t taken_us;
	int rc;
	char err[256];
	unsigned seq;
} snap;

static table_t tbl;
static int shard_sel = -1;       /* UI's choice: -1 all */
static char query[256];          /* UI's current index query, "" when browsing */
static bool select_last;         /* after paging back with Up */
/* the screen's reloads read the first page until one is read: its first
 * open, a shard chosen (UI thread sets, the browse lane clears) */
static atomic_bool first_wanted = true;
static atomic_bool page_changed; /* entities_changed(), from any thread */

static const col_t cols[] = {
	{ "ID", 32, false, 0 },
	{ "SHARD", 5, false, 1 },
	{ "UPDATED (UTC)", 26, false, 2 },
	{ "BODY", 0, false, 0 },
};
#define QUERY_LIMIT 1000

static void lane_reset(void)
{
	size_t i;

	bs_scan_free(lane.start);
	bs_scan_free(lane.pos);
	for (i = 0; i < lane.nback; i++)
		bs_scan_free(lane.back[i]);
	lane.nback = 0;
	lane.start = lane.pos = NULL;
	lane.page_no = 0;
}

/* One line per entity: key=value for the top-level properties but the id,
 * 16-byte values as their first 8 hex digits, containers as their size. */
static char *summarize(bs_value_t *bag)
{
	char *out = NULL;
	size_t len = 0, k;
	FILE *f;

	if (bag->type != BS_MAP)
		return strdup("(body does not decode)");
	if (!(f = open_memstream(&out, &len)))
		return NULL;
	for (k = 0; k < bag->v.m.len && len < 400; k++) {
		const bs_pair_t *p = &bag->v.m.items[k];
		const bs_value_t *v = &p->val;

		if (strcmp(p->key, "id") == 0)
			continue;
		fprintf(f, "%s%s=", ftell(f) ? "  " : "", p->key);
		switch (v->type) {
		case BS_NIL: fputs("null", f); break;
		case BS_BOOL: fputs(v->v.b ? "true" : "false", f); break;
		case BS_INT: fprintf(f, "%lld", (long long)v->v.i); break;
		case BS_UINT: fprintf(f, "%llu", (unsigned long long)v->v.u); break;
		case BS_FLOAT: fprintf(f, "%g", v->v.f); break;
		case BS_STR: fprintf(f, "\"%.*s\"", (int)(v->v.s.len > 60 ? 60 : v->v.s.len), v->v.s.ptr); break;
		case BS_BIN:
			if (v->v.s.len == 16)
				fprintf(f, "%02x%02x%02x%02x..", (unsigned char)v->v.s.ptr[0],
				        (unsigned char)v->v.s.ptr[1], (unsigned char)v->v.s.ptr[2],
				        (unsigned char)v->v.s.ptr[3]);
			else
				fprintf(f, "<%zu bytes>", v->v.s.len);
			break;
		case BS_ARRAY: fprintf(f, "[%zu]", v->v.a.len); break;
		case BS_MAP: fprintf(f, "{%zu}", v->v.m.len); break;
		}
		fflush(f);
	}
	fclose(f);
	return out;
}

/* moved: the page changed position (not a reload): the selection restarts. */
static void publish(bs_result_t *page, int rc, bool moved, bool at_end, bool query_mode, const char *q, int shard)
{
	char **sum = NULL;
	size_t i, oldn;
	char **oldsum;
	bs_result_t old;

	if (rc == 0 && page->len) {
		sum = calloc(page->len, sizeof *sum);
		for (i = 0; sum && i < page->len; i++)
			sum[i] = summarize(&page->items[i].bag);
	}
	snap_lock();
	old = snap.page;
	oldsum = snap.summary;
	oldn = snap.page.len;
	/* a read that failed (a query refused) keeps the page shown, and
	 * draw_header says whose it is */
	if (rc == 0) {
		snap.page = *page;
		snap.summary = sum;
		snap.page_no = lane.page_no;
		snap.at_end = at_end;
		snap.query_mode = query_mode;
		snprintf(snap.query, sizeof snap.query, "%s", q ? q : "");
		snap.shard = shard;
		memset(page, 0, sizeof *page);
	}
	snap.rc = rc;
	snprintf(snap.err, sizeof snap.err, "%s", rc < 0 ? bs_last_error() : "");
	snap.taken_us = now_us();
	if (moved)
		snap.seq++;
	snap_unlock();
	if (rc == 0) {
		for (i = 0; oldsum && i < oldn; i++)
			free(oldsum[i]);
		free(oldsum);
		bs_result_free(&old);
	} else {
		bs_result_free(page);
	}
	worker_published();
}

/* "user_id=f48b..." or "INDEX: a=1 b=x", read by the engine's rules
 * (bs_query_parse_text): the ready index holding every property named, or
 * the one named. */
static int run_query(bs_result_t *out, bs_store_t *st, const char *text, size_t limit)
{
	bs_index_list_t l = { 0 };
	bs_query_spec_t q = { 0 };
	int rc;

	if ((rc = bs_index_list(&l, st)) < 0)
		return rc;
	if ((rc = bs_query_parse_text(&q, &l, text)) == 0)
		rc = bs_query(out, st, q.index, q.conds, q.nconds, limit);
	bs_query_spec_clear(&q);
	bs_index_list_free(&l);
	return rc;
}

/* The browse lane's pages. Each reads one page into *page, moving the
 * lane's positions; *at_end when it is the last. 0 or the error. */

/* The newest page (of q->shard), from new positions. */
static int page_first(bs_result_t *page, bool *at_end, bs_store_t *st, const ereq_t *q)
{
	int rc;

	lane_reset();
	lane.shard = q->shard;
	if ((rc = bs_scan_open(&lane.pos, st, q->shard)) < 0 || (rc = bs_scan_clone(&lane.start, lane.pos)) < 0)
		return rc;
	lane.page_no = 1;
	rc = bs_scan_next(page, st, lane.pos, q->limit);
	*at_end = rc == 0 && page->len < q->limit;
	return rc;
}

/* The next page. 1 when there is none: the lane stays on this page. */
static int page_next(bs_result_t *page, bool *at_end, bs_store_t *st, const ereq_t *q)
{
	bs_scan_t *tmp = NULL;
	int rc;

	if ((rc = bs_scan_clone(&tmp, lane.pos)) < 0)
		return rc;
	if ((rc = bs_scan_next(page, st, tmp, q->limit)) < 0 || page->len == 0)
		goto fail;
	if (lane.nback == lane.capback) {
		size_t cap = lane.capback ? lane.capback * 2 : 64;
		bs_scan_t **back = realloc(lane.back, cap * sizeof *back);

		if (!back) {
			rc = bs_error(BS_ENOMEM, "out of memory");
			goto fail;
		}
		lane.back = back;
		lane.capback = cap;
	}
	lane.back[lane.nback++] = lane.start;
	lane.start = lane.pos;
	lane.pos = tmp;
	lane.page_no++;
	*at_end = page->len < q->limit;
	return 0;
fail:
	bs_scan_free(tmp);
	return rc < 0 ? rc : 1;
}

/* The previous page. 1 when this is the newest. */
static int page_prev(bs_result_t *page, bs_store_t *st, const ereq_t *q)
{
	int rc;

	if (lane.nback == 0)
		return 1;
	bs_scan_free(lane.start);
	bs_scan_free(lane.pos);
	lane.start = lane.back[--lane.nback];
	lane.pos = NULL;
	if ((rc = bs_scan_clone(&lane.pos, lane.start)) < 0)
		return rc;
	lane.page_no--;
	return bs_scan_next(page, st, lane.pos, q->limit);
}

/* This page again. */
static int page_reload(bs_result_t *page, bool *at_end, bs_store_t *st, const ereq_t *q)
{
	int rc;

	bs_scan_free(lane.pos);
	lane.pos = NULL;
	if ((rc = bs_scan_clone(&lane.pos, lane.start)) < 0)
		return rc;
	rc = bs_scan_next(page, st, lane.pos, q->limit);
	*at_end = rc == 0 && page->len < q->limit;
	return rc;
}

static void work(bs_store_t *st, void *arg)
{
	ereq_t *q = arg;
	bs_result_t page;
	int rc = 0;
	bool at_end = false;

	memset(&page, 0, sizeof page);
	if (q->op == OP_QUERY) {
		lane_reset();
		lane.page_no = 1;
		rc = run_query(&page, st, q->query, QUERY_LIMIT);
		if (rc < 0) /* refused: said, and never read as a filter of the page */
			worker_notify(true, "/%s: %s", q->query, bs_last_error());
		else if (!q->reload && page.matched <= page.len && page.len == QUERY_LIMIT &&
		         page.candidates > page.len) /* the read stopped at its limit: more match */
			worker_notify(false, "/%s: the newest %zu shown, more match", q->query, page.len);
		else if (!q->reload) /* in place of "querying ..." */
			worker_notify(false, "/%s: %zu found", q->query,
			              page.matched > page.len ? page.matched : page.len);
		publish(&page, rc, !q->reload, true, true, q->query, q->shard);
		return;
	}
	if (q->op == OP_FIRST) /* read now: the screen's reloads read this page again */
		atomic_store(&first_wanted, false);
	if (q->op == OP_FIRST || !lane.pos || lane.shard != q->shard)
		rc = page_first(&page, &at_end, st, q);
	else if (q->op == OP_NEXT)
		rc = page_next(&page, &at_end, st, q);
	else if (q->op == OP_PREV)
		rc = page_prev(&page, st, q);
	else
		rc = page_reload(&page, &at_end, st, q);
	if (rc == 1 && q->op == OP_NEXT) {
		/* the end: stay on this page */
		bs_result_free(&page);
		worker_notify(false, "the oldest entity is on this page");
		snap_lock();
		snap.at_end = true;
		snap_unlock();
		worker_published();
		return;
	}
	if (rc == 1) {
		worker_notify(false, "this is the newest page");
		return;
	}
	publish(&page, rc, !q->reload, at_end, false, NULL, q->shard);
}

/* keyed: a reload (the screen's, or its first page wanted), which
 * takes the place of one queued and shows as waiting (ui_stale) */
static void submit_as(int op, bool keyed)
{
	ereq_t *q = calloc(1, sizeof *q);

	if (!q)
		return;
	q->op = query[0] ? OP_QUERY : op;
	q->reload = op == OP_RELOAD;
	q->shard = shard_sel;
	q->limit = (size_t)(LINES - 5 > 1 ? LINES - 5 : 1); /* the rows the table shows */
	snprintf(q->query, sizeof q->query, "%s", query);
	/* paging keys queue in order; reloads collapse, and a periodic one is
	 * dropped while one runs (never a first page wanted) */
	worker_submit(LANE_BROWSE, keyed ? KEY_SNAP ".reload" : NULL, op == OP_RELOAD, work, q, free);
}

static void submit(int op)
{
	submit_as(op, false);
}

static void en_reload(void)
{
	/* a query or the current page, read again; the first page when one
	 * is wanted (ui_push_crumb reloads the screen it opens: one read) */
	submit_as(atomic_load(&first_wanted) ? OP_FIRST : OP_RELOAD, true);
}

/* Before the screen is opened (or brought back): its first page will be
 * this shard's, read by the reload that opening it runs. */
void entities_show_shard(int shard)
{
	shard_sel = shard;
	query[0] = 0;
	atomic_store(&first_wanted, true);
}

/* The first page, browsing shard_sel, asked for now: as a reload, so that
 * it shows as waiting and takes the place of one queued. */
static void first_page(void)
{
	entities_show_shard(shard_sel);
	en_reload();
}

void entities_changed(void)
{
	atomic_store(&page_changed, true);
	worker_published();
}

static void en_open(void)
{
	static bool init;

	if (!init) {
		tbl_init(&tbl, cols, 4);
		init = true;
		snap_lock();
		snap.shard = shard_sel; /* until a page comes */
		snap_unlock();
	}
}

static void build(void)
{
	size_t i;
	char t[64];

	tbl_clear(&tbl);
	for (i = 0; i < snap.page.len; i++) {
		const bs_entity_t *e = &snap.page.items[i];
		char hex[33];
		int r = tbl_add(&tbl, C_NORMAL);
		int64_t us = e->updated_us;

		bs_id_hex(hex, &e->id);
		tbl_set(&tbl, r, 0, NAN, "%s", hex);
		tbl_set(&tbl, r, 1, e->shard, "%s", shard_name(e->shard));
		fmt_time(t, sizeof t, us);
		tbl_set(&tbl, r, 2, (double)us, "%s.%06lld", t, (long long)(us % 1000000));
		tbl_set(&tbl, r, 3, NAN, "%s", snap.summary && snap.summary[i] ? snap.summary[i] : "");
	}
	/* the text filter is of this page only; never while a query is asked */
	tbl_finish(&tbl, snap.query_mode || query[0] ? "" : ui_filter());
}

/* The line above the table: what is shown, and of what (snap_lock held). */
static void draw_header(int y, int w, const char *stale)
{
	/* the page's own shard: a page asked for another may not be here yet */
	const char *where = snap.shard < 0 ? "all shards merged" : shard_name(snap.shard);
	char m[32], n[32];

	/* a refused query publishes nothing: what is shown is the last
	 * result, an earlier query's or a page browsed, and says which */
	if (query[0] && snap.rc < 0 && snap.query_mode)
		ui_printf(y, 0, w,
		          "Entities: the result of %s still shown (index query, %s found); the query /%s was "
		          "refused (below)  %s",
		          snap.query,
		          fmt_count(m, sizeof m,
		                    (int64_t)(snap.page.matched > snap.page.len ? snap.page.matched : snap.page.len)),
		          query, stale);
	else if (query[0] && snap.rc < 0)
		ui_printf(y, 0, w,
		          "Entities, %s: page %ld still shown, not filtered; the query /%s was refused (below)  %s",
		          where, snap.page_no, query, stale);
	else if (snap.query_mode && snap.page.matched > snap.page.len)
		ui_printf(y, 0, w, "Entities matching %s (index query, %s found, the newest %s shown)  %s", snap.query,
		          fmt_count(m, sizeof m, (int64_t)snap.page.matched),
		          fmt_count(n, sizeof n, (int64_t)snap.page.len), stale);
	else if (snap.query_mode && snap.page.len == QUERY_LIMIT && snap.page.candidates > snap.page.len)
		ui_printf(y, 0, w, "Entities matching %s (index query: the newest %d of more, from %s index rows)  %s",
		          snap.query, QUERY_LIMIT, fmt_count(m, sizeof m, (int64_t)snap.page.candidates), stale);
	else if (snap.query_mode)
		ui_printf(y, 0, w, "Entities matching %s (index query, %zu found, newest first)  %s", snap.query,
		          snap.page.len, stale);
	else if (ui_filter()[0])
		ui_printf(y, 0, w,
		          "Entities, %s: page %ld%s; '%s' filters this page only: %d of its %zu rows "
		          "(/PROP=VALUE queries an index)  %s",
		          where, snap.page_no, snap.at_end ? " (the end)" : "", ui_filter(), tbl.nshown, snap.page.len,
		          stale);
	else
		ui_printf(y, 0, w, "Entities, newest first, %s: page %ld%s  %s", where, snap.page_no,
		          snap.at_end ? " (the end)" : "", stale);
}

static unsigned drawn_seq;

static void en_draw(int y, int h, int w)
{
	char stale[128];

	if (atomic_exchange(&page_changed, false))
		en_reload();
	snap_lock();
	build();
	if (snap.seq != drawn_seq) {
		drawn_seq = snap.seq;
		if (select_last) {
			tbl.sel = tbl.nshown - 1;
			select_last = false;
		} else {
			tbl.sel = 0;
		}
		tbl.top = 0;
		tbl.selkey[0] = 0;
	}
	ui_stale(KEY_SNAP ".reload", snap.taken_us, stale, sizeof stale);
	draw_header(y, w, stale);
	tbl_draw(&tbl, y + 1, h - 2, w);
	if (snap.rc < 0) {
		ui_color(C_BAD, true);
		ui_printf(y + h - 1, 0, w, "error: %s", snap.err);
		ui_color(C_BAD, false);
	} else {
		ui_color(C_DIM, true);
		ui_put(y + h - 1, 0, w,
		       ui.read_only ? "Enter open  Space/b page  s shard  i id  /PROP=VALUE query  ? help"
		                    : "Enter open  Space/b page  s shard  i id  /PROP=VALUE query  n new  e edit  d "
		                      "delete  ? help");
		ui_color(C_DIM, false);
	}
	snap_unlock();
}

static reaction_t jump_done(const char *text, void *ctx)
{
	bs_id_t id;

	(void)ctx;
	if (!text || !*text)
		return R_REDRAW;
	if (bs_id_parse(&id, text) < 0) {
		ui_err("%s", bs_last_error());
		return R_REDRAW;
	}
	entity_open(&id);
	return R_REDRAW;
}

/* `/` as it is typed: plain text filters the page at once; PROP=VALUE
 * waits for Enter (it asks the shards). */
static void en_filter_live(const char *text)
{
	if (strchr(text, '=')) {
		ui_msg("Enter queries an index with %s", text);
		return;
	}
	if (!query[0])
		ui_set_filter(text);
}

static bool en_filter(const char *text)
{
	bs_id_t id;

	if (strchr(text, '=')) {
		ui_msg("querying /%s ...", text);
		snprintf(query, sizeof query, "%s", text);
		ui_set_filter(text);
		submit(OP_QUERY);
		return true;
	}
	if (bs_id_parse(&id, text) == 0) {
		entity_open(&id);
		return true;
	}
	if (query[0]) {
		/* leaving a query: back to browsing */
		query[0] = 0;
		ui_set_filter(text);
		first_page();
		return true;
	}
	return false;
}

/* The published entity the selected row shows (by its id: the page may have
 * been replaced since the table was drawn); NULL when gone. snap_lock held. */
static const bs_entity_t *selected_locked(void)
{
	int r = tbl_selected(&tbl);
	bs_id_t id;
	size_t i;

	if (r < 0 || bs_id_parse(&id, tbl_cell(&tbl, r, 0)) < 0)
		return NULL;
	for (i = 0; i < snap.page.len; i++)
		if (memcmp(snap.page.items[i].id.b, id.b, sizeof id.b) == 0)
			return &snap.page.items[i];
	return NULL;
}

/* Open, edit or delete the selected entity. */
static reaction_t on_selected(action_t a)
{
	const bs_entity_t *e;
	bs_value_t bag;
	bs_id_t id;
	int64_t up;
	int shard, rc;
	reaction_t r;

	snap_lock();
	if (!(e = selected_locked())) {
		int row = tbl_selected(&tbl);

		snap_unlock();
		/* the row drawn, of a page just replaced: opening needs
		 * only its id; an edit or a delete needs the page's copy */
		if (a == ACT_OPEN && row >= 0 && bs_id_parse(&id, tbl_cell(&tbl, row, 0)) == 0) {
			entity_open(&id);
			return R_REDRAW;
		}
		ui_err(row >= 0 ? "the page changed under the selection: select the entity again"
		                : "no entity selected");
		return R_REDRAW;
	}
	id = e->id;
	shard = e->shard;
	up = e->updated_us;
	rc = a == ACT_ENT_EDIT ? bs_value_copy(&bag, &e->bag) : 0;
	snap_unlock();
	if (a == ACT_OPEN) {
		entity_open(&id);
		return R_REDRAW;
	}
	if (a == ACT_ENT_DELETE)
		return entity_delete(&id, shard);
	if (rc < 0) {
		ui_err("cannot edit: %s", bs_last_error());
		return R_REDRAW;
	}
	r = entity_edit(&bag, up);
	bs_value_clear(&bag);
	return r;
}

/* Paging keys while browsing (a query's results are one page): the
 * reaction, or R_UNHANDLED for the table's own navigation. */
static reaction_t page_key(action_t a)
{
	bool at_end, browsing = !query[0];
	long page_no;

	snap_lock();
	at_end = snap.at_end;
	page_no = snap.page_no;
	snap_unlock();
	switch (a) {
	case ACT_PGDN:
		if (browsing)
			submit(OP_NEXT);
		return R_REDRAW;
	case ACT_PGUP:
		if (browsing)
			submit(OP_PREV);
		return R_REDRAW;
	case ACT_HOME:
		if (browsing)
			submit(OP_FIRST);
		tbl.sel = 0;
		return R_REDRAW;
	case ACT_END:
		/* on the last row already: the next page's last (a page is read
		 * by key: the oldest is as many pages away as there are) */
		if (browsing && tbl.nshown > 0 && tbl.sel >= tbl.nshown - 1 && !at_end) {
			select_last = true;
			submit(OP_NEXT);
			return R_REDRAW;
		}
		return R_UNHANDLED;
	case ACT_DOWN:
		if (browsing && tbl.sel >= tbl.nshown - 1 && !at_end) {
			submit(OP_NEXT);
			return R_REDRAW;
		}
		return R_UNHANDLED;
	case ACT_UP:
		if (browsing && tbl.sel == 0 && page_no > 1) {
			select_last = true;
			submit(OP_PREV);
			return R_REDRAW;
		}
		return R_UNHANDLED;
	default: return R_UNHANDLED;
	}
}

static reaction_t en_key(action_t a, int key)
{
	reaction_t r;

	switch (a) {
	case ACT_PGDN:
	case ACT_PGUP:
	case ACT_HOME:
	case ACT_END:
	case ACT_DOWN:
	case ACT_UP:
		if ((r = page_key(a)) != R_UNHANDLED)
			return r;
		break;
	case ACT_BACK:
		if (query[0] || ui_filter()[0]) {
			query[0] = 0;
			ui_set_filter("");
			first_page();
			return R_REDRAW;
		}
		return R_UNHANDLED;
	case ACT_ENT_SHARD:
		shard_sel = shard_sel + 1 >= ui.nshards ? -1 : shard_sel + 1;
		first_page();
		ui_msg("browsing %s", shard_sel < 0 ? "all shards merged" : shard_name(shard_sel));
		return R_REDRAW;
	case ACT_ENT_JUMP: ui_prompt("open entity id: ", "", jump_done, NULL); return R_REDRAW;
	case ACT_ENT_NEW: return entity_create();
	case ACT_OPEN:
	case ACT_ENT_EDIT:
	case ACT_ENT_DELETE: return on_selected(a);
	default: break;
	}
	return tbl_key(&tbl, a, key);
}

const struct view_ops view_entities = {
	.name = "entities",
	.scope = 'E',
	.open = en_open,
	.reload = en_reload,
	.command = "explain",
	.run = explain_run,
	.command_help = "[QUERY]",
	.command_what = "how QUERY (else the entities screen's /PROP=VALUE) is answered",
	.draw = en_draw,
	.key = en_key,
	.filter = en_filter,
	.filter_live = en_filter_live,
};

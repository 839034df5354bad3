/*
 * table.c - the table every list screen draws: columns, a selected
 * row that survives reloads (by its first cell), sort by any column, the
 * `/` filter, pinned totals rows, scrolling and the mouse.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "console_int.h"

MEVENT ui_mouse;

void tbl_init(table_t *t, const col_t *cols, int ncols)
{
	memset(t, 0, sizeof *t);
	t->cols = cols;
	t->ncols = ncols;
	t->sort_col = -1;
	t->x = calloc((size_t)ncols, sizeof *t->x);
	t->wid = calloc((size_t)ncols, sizeof *t->wid);
	if (!t->x || !t->wid)
		abort();
}

void tbl_clear(table_t *t)
{
	int i;

	for (i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	t->nrows = 0;
	t->npinned = 0;
	t->nshown = 0;
}

int tbl_add(table_t *t, int attr)
{
	int r = t->nrows, i;

	if (t->nrows == t->cap) {
		int cap = t->cap ? t->cap * 2 : 32;
		t->cells = realloc(t->cells, sizeof(char *) * (size_t)cap * (size_t)t->ncols);
		t->keys = realloc(t->keys, sizeof(double) * (size_t)cap * (size_t)t->ncols);
		t->attr = realloc(t->attr, sizeof(int) * (size_t)cap);
		t->order = realloc(t->order, sizeof(int) * (size_t)cap);
		if (!t->cells || !t->keys || !t->attr || !t->order)
			abort();
		t->cap = cap;
	}
	for (i = 0; i < t->ncols; i++) {
		t->cells[r * t->ncols + i] = NULL;
		t->keys[r * t->ncols + i] = NAN;
	}
	t->attr[r] = attr;
	t->nrows++;
	return r;
}

void tbl_set(table_t *t, int row, int col, double key, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	free(t->cells[row * t->ncols + col]);
	t->cells[row * t->ncols + col] = strdup(buf);
	t->keys[row * t->ncols + col] = key;
}

void tbl_pin_last(table_t *t)
{
	t->npinned++;
}

const char *tbl_cell(const table_t *t, int row, int col)
{
	const char *s;

	if (row < 0 || row >= t->nrows || col < 0 || col >= t->ncols)
		return "";
	s = t->cells[row * t->ncols + col];
	return s ? s : "";
}

static const table_t *sort_t;

static int cmp_rows(const void *a, const void *b)
{
	int ra = *(const int *)a, rb = *(const int *)b, c = sort_t->sort_col, r;
	double ka = sort_t->keys[ra * sort_t->ncols + c], kb = sort_t->keys[rb * sort_t->ncols + c];

	if (!isnan(ka) && !isnan(kb))
		r = ka < kb ? -1 : ka > kb;
	else if (isnan(ka) != isnan(kb))
		r = isnan(ka) ? 1 : -1;
	else
		r = strcasecmp(tbl_cell(sort_t, ra, c), tbl_cell(sort_t, rb, c));
	if (r == 0)
		r = ra < rb ? -1 : ra > rb;
	else if (sort_t->sort_desc)
		r = -r;
	return r;
}

bool tbl_matches(const table_t *t, int row, const char *filter)
{
	int c;

	if (!filter || !*filter)
		return true;
	for (c = 0; c < t->ncols; c++)
		if (strcasestr(tbl_cell(t, row, c), filter))
			return true;
	return false;
}

void tbl_finish(table_t *t, const char *filter)
{
	int body = t->nrows - t->npinned, i, n = 0;

	for (i = 0; i < body; i++)
		if (tbl_matches(t, i, filter))
			t->order[n++] = i;
	if (t->sort_col >= 0 && t->sort_col < t->ncols && n > 1) {
		sort_t = t;
		qsort(t->order, (size_t)n, sizeof(int), cmp_rows);
	}
	for (i = body; i < t->nrows; i++)
		t->order[n++] = i;
	t->nshown = n;
	/* keep the selection on the same row (by its first cell) */
	if (t->selkey[0]) {
		for (i = 0; i < n; i++)
			if (strcmp(tbl_cell(t, t->order[i], 0), t->selkey) == 0) {
				t->sel = i;
				break;
			}
	}
	if (t->sel >= n)
		t->sel = n - 1;
	if (t->sel < 0)
		t->sel = 0;
}

char *tbl_count(char *buf, size_t n, const table_t *t)
{
	int body = t->nrows - t->npinned, shown = t->nshown - t->npinned;

	if (shown < body)
		snprintf(buf, n, "%d of %d", shown, body);
	else
		snprintf(buf, n, "%d", body);
	return buf;
}

int tbl_selected(const table_t *t)
{
	if (t->nshown == 0 || t->sel < 0 || t->sel >= t->nshown)
		return -1;
	return t->order[t->sel];
}

static void remember(table_t *t)
{
	int r = tbl_selected(t);

	snprintf(t->selkey, sizeof t->selkey, "%s", r >= 0 ? tbl_cell(t, r, 0) : "");
}

#define FLEX_MIN 12

/* The width column c's title and the cells shown need in full. */
static int content_width(const table_t *t, int c)
{
	int need = ui_width(t->cols[c].title) + (c == t->sort_col), i; /* + its sort mark */

	for (i = 0; i < t->nshown; i++) {
		int cw = ui_width(tbl_cell(t, t->order[i], c));
		if (cw > need)
			need = cw;
	}
	return need;
}

/* Which columns fit in w, and where (t->x, t->wid; -1 not shown): the
 * first always, then the others by priority (then order), skipping the
 * first t->hscroll of them, until one does not fit; shown in their own
 * order. What is left widens the columns whose cells it would cut, then
 * the flexible one (width 0) takes the rest. */
static void layout(table_t *t, int w)
{
	int order[64], n = 0, c, k, used, flex = -1, x;

	for (c = 0; c < t->ncols; c++)
		t->x[c] = -1;
	for (c = 1; c < t->ncols && n < 64; c++)
		order[n++] = c;
	for (k = 1; k < n; k++) { /* stable, by priority */
		int v = order[k], j = k - 1;
		while (j >= 0 && t->cols[order[j]].prio > t->cols[v].prio) {
			order[j + 1] = order[j];
			j--;
		}
		order[j + 1] = v;
	}
	if (t->hscroll > n - 1)
		t->hscroll = n > 0 ? n - 1 : 0;
	if (t->hscroll < 0)
		t->hscroll = 0;
	t->wid[0] = t->cols[0].width > 0 ? t->cols[0].width : FLEX_MIN;
	if (t->wid[0] > w)
		t->wid[0] = w;
	t->x[0] = 0;
	used = t->wid[0] + 1;
	t->hidden = t->hscroll;
	for (k = t->hscroll; k < n; k++) {
		c = order[k];
		int cw = t->cols[c].width > 0 ? t->cols[c].width : FLEX_MIN;
		/* by priority: once one does not fit, the less important give way too */
		if (used + cw > w || (t->cols[c].width == 0 && flex >= 0)) {
			t->hidden += n - k;
			break;
		}
		t->x[c] = 0;
		t->wid[c] = cw;
		used += cw + 1;
		if (t->cols[c].width == 0)
			flex = c;
	}
	/* room left: first to the columns whose cells or title it cuts, the
	 * smallest want first (so that as many as can be are shown whole; by
	 * priority among equals), the flexible one among them; then the
	 * flexible one takes the rest */
	int room = w - (used - 1), need[64];
	for (c = 0; c < t->ncols && c < 64; c++)
		need[c] = t->x[c] < 0 ? 0 : content_width(t, c) - t->wid[c];
	while (room > 0) {
		int best = -1;
		for (k = -1; k < n; k++) {
			c = k < 0 ? 0 : order[k];
			if (c < 64 && need[c] > 0 && (best < 0 || need[c] < need[best]))
				best = c;
		}
		if (best < 0)
			break;
		int give = need[best] < room ? need[best] : room;
		t->wid[best] += give;
		room -= give;
		need[best] = 0;
	}
	if (flex >= 0 && room > 0)
		t->wid[flex] += room;
	for (c = 0, x = 0; c < t->ncols; c++) {
		if (t->x[c] < 0)
			continue;
		t->x[c] = x;
		x += t->wid[c] + 1;
	}
}

static void put_cell(int y, int x, int cw, const char *s, bool right)
{
	int sw = ui_width(s);

	if (right && sw < cw)
		x += cw - sw;
	ui_put(y, x, cw, s);
}

static void draw_header(table_t *t, int y, int w)
{
	int c;

	ui_color(C_HEADER, true);
	move(y, 0);
	clrtoeol();
	for (c = 0; c < t->ncols; c++) {
		char title[64];
		if (t->x[c] < 0)
			continue;
		snprintf(title, sizeof title, "%s%s", t->cols[c].title,
		         c == t->sort_col ? (t->sort_desc ? (ui.ascii ? "v" : "▼") : (ui.ascii ? "^" : "▲")) : "");
		put_cell(y, t->x[c], t->wid[c], title, t->cols[c].right);
	}
	if (t->hidden > 0) {
		/* columns out of sight: say how many, and how to reach them */
		char more[48];
		snprintf(more, sizeof more, " %s%d more %s", t->hscroll ? (ui.ascii ? "<" : "←") : "", t->hidden,
		         ui.ascii ? ">" : "→");
		int mw = ui_width(more);
		if (mw < w) {
			move(y, w - mw);
			clrtoeol();
			ui_put(y, w - mw, mw, more);
		}
	}
	ui_color(C_HEADER, false);
}

static void draw_row(table_t *t, int y, int w, int k)
{
	int row = t->order[k], c;

	if (k == t->sel)
		ui_color(C_SELECT, true);
	if (t->attr[row] != C_NORMAL)
		ui_color(t->attr[row], true);
	if (k == t->sel) {
		/* the whole line shows the selection */
		move(y, 0);
		hline(' ', w);
	}
	for (c = 0; c < t->ncols; c++)
		if (t->x[c] >= 0)
			put_cell(y, t->x[c], t->wid[c], tbl_cell(t, row, c), t->cols[c].right);
	if (t->attr[row] != C_NORMAL)
		ui_color(t->attr[row], false);
	if (k == t->sel)
		ui_color(C_SELECT, false);
}

/* layout() at w, with room for the "N more" note when columns are hidden. */
static void layout_noted(table_t *t, int w)
{
	layout(t, w);
	if (t->hidden > 0 && w > 30) {
		char more[48];
		snprintf(more, sizeof more, " %s%d more %s", t->hscroll ? "<" : "", t->hidden, ">");
		layout(t, w - (int)strlen(more) - 1);
	}
}

void tbl_draw(table_t *t, int y, int h, int w)
{
	int i, rows = h - 1;

	t->last_h = h;
	t->last_y = y;
	if (h < 1)
		return;
	/* scrolled no further than the columns on the right need: a terminal
	 * widened brings back the columns scrolled past, every one once all
	 * fit (hscroll kept would hide them, and say so, with room to spare) */
	while (t->hscroll > 0) {
		t->hscroll--;
		layout_noted(t, w);
		if (t->hidden > t->hscroll) { /* one on the right would give way */
			t->hscroll++;
			break;
		}
	}
	layout_noted(t, w);
	draw_header(t, y, w);
	if (t->sel < t->top)
		t->top = t->sel;
	if (rows > 0 && t->sel >= t->top + rows)
		t->top = t->sel - rows + 1;
	if (t->top < 0)
		t->top = 0;
	for (i = 0; i < rows; i++) {
		move(y + 1 + i, 0);
		clrtoeol();
		if (t->top + i < t->nshown)
			draw_row(t, y + 1 + i, w, t->top + i);
	}
}

static int col_at(const table_t *t, int mx)
{
	int c;

	for (c = 0; c < t->ncols; c++)
		if (t->x[c] >= 0 && mx >= t->x[c] && mx < t->x[c] + t->wid[c] + 1)
			return c;
	return -1;
}

reaction_t tbl_key(table_t *t, action_t a, int key)
{
	int page = t->last_h > 2 ? t->last_h - 2 : 1;
	int header_y = t->last_y;

	switch (a) {
	case ACT_DOWN: t->sel++; break;
	case ACT_UP: t->sel--; break;
	case ACT_PGDN: t->sel += page; break;
	case ACT_PGUP: t->sel -= page; break;
	case ACT_HOME: t->sel = 0; break;
	case ACT_END: t->sel = t->nshown - 1; break;
	case ACT_COL_RIGHT:
		if (t->hidden == 0 || t->hidden == t->hscroll) {
			ui_msg("every column is in sight");
			return R_REDRAW;
		}
		t->hscroll++;
		return R_REDRAW;
	case ACT_COL_LEFT:
		if (t->hscroll == 0) {
			ui_msg("these are the first columns");
			return R_REDRAW;
		}
		t->hscroll--;
		return R_REDRAW;
	case ACT_SORT_NEXT:
		t->sort_col = t->sort_col + 1 >= t->ncols ? -1 : t->sort_col + 1;
		tbl_finish(t, ui_filter());
		remember(t);
		return R_REDRAW;
	case ACT_SORT_PREV:
		t->sort_col = t->sort_col < 0 ? t->ncols - 1 : t->sort_col - 1;
		tbl_finish(t, ui_filter());
		return R_REDRAW;
	case ACT_SORT_REV:
		t->sort_desc = !t->sort_desc;
		tbl_finish(t, ui_filter());
		return R_REDRAW;
	default:
		if (key == KEY_MOUSE) {
			if (ui_mouse.bstate & BUTTON4_PRESSED) {
				t->sel -= 3;
			} else if (ui_mouse.bstate & (BUTTON5_PRESSED)) {
				t->sel += 3;
			} else if (ui_mouse.y == header_y) {
				int c = col_at(t, ui_mouse.x);
				if (c >= 0) {
					if (t->sort_col == c)
						t->sort_desc = !t->sort_desc;
					t->sort_col = c;
					tbl_finish(t, ui_filter());
				}
				return R_REDRAW;
			} else if (ui_mouse.y > header_y && ui_mouse.y <= header_y + t->last_h - 1) {
				t->sel = t->top + ui_mouse.y - header_y - 1;
				if (t->sel >= t->nshown)
					t->sel = t->nshown - 1;
				remember(t);
				if (ui_mouse.bstate & BUTTON1_DOUBLE_CLICKED)
					return R_UNHANDLED; /* the screen opens the row */
				return R_REDRAW;
			}
			break;
		}
		return R_UNHANDLED;
	}
	if (t->sel >= t->nshown)
		t->sel = t->nshown - 1;
	if (t->sel < 0)
		t->sel = 0;
	remember(t);
	return R_REDRAW;
}

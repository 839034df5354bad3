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

static bool row_matches(const table_t *t, int row, const char *filter)
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
		if (row_matches(t, i, filter))
			t->order[n++] = i;
	if (t->sort_col >= 0 && t->sort_col < t->ncols) {
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

static int col_width(const table_t *t, int c, int w)
{
	int used = 0, i;

	if (t->cols[c].width > 0)
		return t->cols[c].width;
	for (i = 0; i < t->ncols; i++)
		if (t->cols[i].width > 0)
			used += t->cols[i].width + 1;
	return w - used > 4 ? w - used : 4;
}

static void put_cell(int y, int x, int cw, const char *s, bool right)
{
	int sw = ui_width(s);

	if (right && sw < cw)
		x += cw - sw;
	ui_put(y, x, cw, s);
}

void tbl_draw(table_t *t, int y, int h, int w)
{
	int c, x, i, rows = h - 1;

	t->last_h = h;
	t->last_y = y;
	/* header */
	ui_color(C_HEADER, true);
	move(y, 0);
	clrtoeol();
	for (c = 0, x = 0; c < t->ncols && x < w; c++) {
		int cw = col_width(t, c, w);
		char title[64];

		if (cw > w - x)
			cw = w - x;
		snprintf(title, sizeof title, "%s%s", t->cols[c].title,
		         c == t->sort_col ? (t->sort_desc ? (ui.ascii ? "v" : "▼") : (ui.ascii ? "^" : "▲")) : "");
		put_cell(y, x, cw, title, t->cols[c].right);
		x += cw + 1;
	}
	ui_color(C_HEADER, false);
	if (t->sel < t->top)
		t->top = t->sel;
	if (rows > 0 && t->sel >= t->top + rows)
		t->top = t->sel - rows + 1;
	if (t->top < 0)
		t->top = 0;
	for (i = 0; i < rows; i++) {
		int k = t->top + i, row;

		move(y + 1 + i, 0);
		clrtoeol();
		if (k >= t->nshown)
			continue;
		row = t->order[k];
		if (k == t->sel)
			ui_color(C_SELECT, true);
		if (t->attr[row] != C_NORMAL)
			ui_color(t->attr[row], true);
		if (k == t->sel) {
			/* the whole line shows the selection */
			move(y + 1 + i, 0);
			hline(' ', w);
		}
		for (c = 0, x = 0; c < t->ncols && x < w; c++) {
			int cw = col_width(t, c, w);

			if (cw > w - x)
				cw = w - x;
			put_cell(y + 1 + i, x, cw, tbl_cell(t, row, c), t->cols[c].right);
			x += cw + 1;
		}
		if (t->attr[row] != C_NORMAL)
			ui_color(t->attr[row], false);
		if (k == t->sel)
			ui_color(C_SELECT, false);
	}
}

static int col_at(const table_t *t, int mx)
{
	int c, x = 0, w = COLS;

	for (c = 0; c < t->ncols; c++) {
		int cw = col_width(t, c, w);
		if (mx >= x && mx < x + cw + 1)
			return c;
		x += cw + 1;
	}
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

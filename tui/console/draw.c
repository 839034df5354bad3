/*
 * draw.c - drawing helpers for the screens: UTF-8 text clipped to terminal
 * columns, colors (off under NO_COLOR), shard names, the "stale" note
 * of a snapshot, sparklines, bars and a job's progress cells (backfills
 * and moves draw them alike). Numbers, sizes and times are
 * tui/common/fmt.c's.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "console_int.h"

const char *shard_name(int shard)
{
	const bs_config_t *c = worker_config(); /* the lanes' (any thread) */

	return c && shard >= 0 && shard < c->nshards ? c->shards[shard].name : "?";
}

void ui_color(int pair, bool on)
{
	attr_t a = 0;

	switch (pair) {
	case C_HEADER: a = A_BOLD; break;
	case C_SELECT: a = A_REVERSE; break;
	case C_TITLE: a = A_REVERSE; break;
	case C_STATUS: a = A_REVERSE; break;
	case C_BAD: a = A_BOLD; break;
	case C_DIM: a = A_DIM; break;
	default: break;
	}
	if (ui.color && pair != C_NORMAL && pair != C_SELECT)
		a |= COLOR_PAIR(pair);
	if (on)
		attron(a);
	else
		attroff(a);
}

/* Columns a UTF-8 string takes, decoding with the locale. */
int ui_width(const char *s)
{
	mbstate_t ps;
	int w = 0;

	memset(&ps, 0, sizeof ps);
	while (*s) {
		wchar_t wc;
		size_t k = mbrtowc(&wc, s, MB_CUR_MAX, &ps);
		int cw;

		if (k == (size_t)-1 || k == (size_t)-2 || k == 0) {
			memset(&ps, 0, sizeof ps);
			s++;
			w++;
			continue;
		}
		cw = wcwidth(wc);
		w += cw < 0 ? 1 : cw;
		s += k;
	}
	return w;
}

int ui_put(int y, int x, int w, const char *s)
{
	wchar_t buf[512];
	mbstate_t ps;
	int used = 0, n = 0;

	if (w <= 0 || y < 0 || y >= LINES)
		return 0;
	memset(&ps, 0, sizeof ps);
	while (*s && n < 511) {
		wchar_t wc;
		size_t k = mbrtowc(&wc, s, MB_CUR_MAX, &ps);
		int cw;

		if (k == (size_t)-1 || k == (size_t)-2 || k == 0) {
			memset(&ps, 0, sizeof ps);
			wc = L'?';
			k = 1;
		}
		if (wc == L'\t' || wc == L'\n' || wc == L'\r' || (wc < 32 && wc >= 0))
			wc = L' ';
		cw = wcwidth(wc);
		if (cw < 0) {
			wc = L'?';
			cw = 1;
		}
		if (used + cw > w)
			break;
		buf[n++] = wc;
		used += cw;
		s += k;
	}
	buf[n] = 0;
	mvaddnwstr(y, x, buf, n);
	return used;
}

/* A line that does not fit in w is cut after its last whole word that
 * does, and says so ("…"); a word longer than half the line is cut where
 * the line ends. */
static void cut_at_word(char *buf, int w)
{
	const char *more = ui.ascii ? "~" : "…";
	int room = w - ui_width(more), cut = -1;
	size_t i;
	char save;

	if (w < 12 || ui_width(buf) <= w)
		return;
	for (i = 1; buf[i]; i++) {
		if (buf[i] != ' ' || buf[i - 1] == ' ')
			continue;
		save = buf[i];
		buf[i] = 0;
		if (ui_width(buf) > room) {
			buf[i] = save;
			break;
		}
		buf[i] = save;
		cut = (int)i;
	}
	if (cut < 0)
		return;
	/* the last whole word: worth it only if it keeps most of the line */
	save = buf[cut];
	buf[cut] = 0;
	if (ui_width(buf) < w / 2) {
		buf[cut] = save;
		return;
	}
	while (cut > 0 && strchr(" ,;:(", buf[cut - 1]))
		buf[--cut] = 0;
	strcat(buf, more);
}

int ui_printf(int y, int x, int w, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf - 8, fmt, ap);
	va_end(ap);
	cut_at_word(buf, w);
	return ui_put(y, x, w, buf);
}

const char *ui_stale(const char *key, int64_t taken_us, char *buf, size_t n)
{
	int64_t since = 0, now = now_us();
	double limit = ui.refresh_s * 2 > 3 ? ui.refresh_s * 2 : 3;
	char t[32];

	buf[0] = 0;
	if (taken_us == 0) {
		snprintf(buf, n, "loading");
		return buf;
	}
	if (worker_pending(key, &since) && (double)(now - since) / 1e6 > 1.0) {
		fmt_secs(t, sizeof t, (double)(now - taken_us) / 1e6);
		snprintf(buf, n, "STALE %s (waiting on shards)", t);
	} else if ((double)(now - taken_us) / 1e6 > limit && !ui.paused) {
		fmt_secs(t, sizeof t, (double)(now - taken_us) / 1e6);
		snprintf(buf, n, "STALE %s", t);
	}
	return buf;
}

int ui_wrap(const char *s, int width, int *starts, int *lens, int max)
{
	mbstate_t ps;
	int n = 0;
	size_t pos = 0, len = strlen(s);

	if (width < 1)
		width = 1;
	while (pos < len && n < max) {
		size_t p = pos, brk = 0;
		int w = 0;

		memset(&ps, 0, sizeof ps);
		while (p < len && s[p] != '\n') {
			wchar_t wc;
			size_t k = mbrtowc(&wc, s + p, len - p, &ps);
			int cw;
			if (k == (size_t)-1 || k == (size_t)-2 || k == 0) {
				memset(&ps, 0, sizeof ps);
				k = 1;
				cw = 1;
			} else {
				cw = wcwidth(wc);
				if (cw < 0)
					cw = 1;
			}
			if (w + cw > width)
				break;
			if (s[p] == ' ')
				brk = p;
			w += cw;
			p += k;
		}
		if (p < len && s[p] != '\n' && brk > pos)
			p = brk; /* at the last blank */
		starts[n] = (int)pos;
		lens[n++] = (int)(p - pos);
		pos = p;
		if (pos < len && (s[pos] == ' ' || s[pos] == '\n'))
			pos++;
	}
	return n;
}

void ui_sparkline(char *buf, size_t size, const double *v, int n, double max)
{
	static const char *blocks[] = { "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█" };
	static const char ascii[] = "_.-~=*#@";
	size_t o = 0;
	int i;

	buf[0] = 0;
	if (max <= 0)
		for (i = 0; i < n; i++)
			if (v[i] > max)
				max = v[i];
	for (i = 0; i < n && o + 4 < size; i++) {
		int k;
		if (v[i] < 0) {
			buf[o++] = ' ';
			continue;
		}
		k = max > 0 ? (int)(v[i] / max * 7.0 + 0.5) : 0;
		if (k < 0)
			k = 0;
		if (k > 7)
			k = 7;
		if (ui.ascii)
			buf[o++] = ascii[k];
		else
			o += (size_t)snprintf(buf + o, size - o, "%s", blocks[k]);
	}
	buf[o] = 0;
}

void ui_bar(char *buf, size_t size, double frac, int width)
{
	int full = (int)(frac * width + 0.5), i;
	size_t o = 0;

	if (full > width)
		full = width;
	if (full < 0)
		full = 0;
	buf[o++] = '[';
	for (i = 0; i < width && o + 4 < size; i++) {
		if (ui.ascii)
			buf[o++] = i < full ? '#' : '.';
		else
			o += (size_t)snprintf(buf + o, size - o, "%s", i < full ? "█" : "·");
	}
	if (o + 2 < size)
		buf[o++] = ']';
	buf[o] = 0;
}

void tbl_set_progress(table_t *t, int row, int col, int rate_col, const progress_t *p)
{
	char pb[256], eta[32];

	ui_bar(pb, sizeof pb, p->frac, p->width);
	tbl_set(t, row, col, p->frac, "%s %s%*.*f%%", pb, p->estimate ? "~" : "", p->decimals ? 4 + p->decimals : 0,
	        p->decimals, p->frac * 100);
	if (p->rate >= 0)
		tbl_set(t, row, rate_col, p->rate, "%.0f", p->rate);
	else
		tbl_set(t, row, rate_col, -1, "-");
	if (p->eta_s >= 0)
		tbl_set(t, row, rate_col + 1, p->eta_key, "~%s", fmt_secs(eta, sizeof eta, p->eta_s));
	else
		tbl_set(t, row, rate_col + 1, p->eta_key, "-");
}

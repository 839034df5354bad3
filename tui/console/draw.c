/*
 * console_draw.c - drawing and formatting helpers for the screens: UTF-8
 * text clipped to terminal columns, colors (off under NO_COLOR), numbers,
 * sizes, ages and times.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wchar.h>

#include "console_int.h"

const char *shard_name(int shard)
{
	return shard >= 0 && shard < ui.nshards ? ui.cfg->shards[shard].name : "?";
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

int ui_printf(int y, int x, int w, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return ui_put(y, x, w, buf);
}

char *fmt_count(char *buf, size_t n, int64_t v)
{
	char tmp[32];
	int len, i, o = 0;
	bool neg = v < 0;

	snprintf(tmp, sizeof tmp, "%lld", (long long)(neg ? -v : v));
	len = (int)strlen(tmp);
	if (neg && o < (int)n - 1)
		buf[o++] = '-';
	for (i = 0; i < len && o < (int)n - 1; i++) {
		if (i > 0 && (len - i) % 3 == 0 && o < (int)n - 1)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = 0;
	return buf;
}

char *fmt_bytes(char *buf, size_t n, int64_t v)
{
	const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double d = (double)v;
	int i = 0;

	if (v < 0) {
		snprintf(buf, n, "-");
		return buf;
	}
	while (d >= 1024 && i < 4) {
		d /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, n, "%lld B", (long long)v);
	else
		snprintf(buf, n, "%.1f %s", d, u[i]);
	return buf;
}

char *fmt_secs(char *buf, size_t n, double s)
{
	if (s < 0 || isnan(s))
		snprintf(buf, n, "-");
	else if (s < 10)
		snprintf(buf, n, "%.1fs", s);
	else if (s < 120)
		snprintf(buf, n, "%.0fs", s);
	else if (s < 7200)
		snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
	else if (s < 172800)
		snprintf(buf, n, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
	else
		snprintf(buf, n, "%dd%02dh", (int)(s / 86400), (int)((long long)s % 86400) / 3600);
	return buf;
}

char *fmt_age(char *buf, size_t n, int64_t then_us)
{
	char t[32];

	if (then_us <= 0) {
		snprintf(buf, n, "never");
		return buf;
	}
	fmt_secs(t, sizeof t, (double)(now_us() - then_us) / 1e6);
	snprintf(buf, n, "%s ago", t);
	return buf;
}

char *fmt_time(char *buf, size_t n, int64_t us)
{
	time_t t = (time_t)(us / 1000000);
	struct tm tm;

	if (us <= 0) {
		snprintf(buf, n, "-");
		return buf;
	}
	localtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
	return buf;
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

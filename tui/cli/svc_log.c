/*
 * svc_log.c - the cleaner daemon's log: one line per event on stderr, as
 * text for people (and journalctl) or as JSON Lines for machines
 * (--log-format, cleaner.log_format).
 *
 * A JSON line is one object: "ts" (ISO 8601 UTC, milliseconds), "level"
 * (debug, info, warning, error), "event", "msg" (the text line's sentence)
 * and the event's own fields (floats at their shortest, jtext.h). A text line is "TS LEVEL EVENT: SENTENCE";
 * when stderr is the journal ($JOURNAL_STREAM names it) the timestamp is
 * left to journald and the line starts with the syslog priority "<N>" that
 * journald reads (sd-daemon(3)), so journalctl shows levels as it should.
 */
#include "service.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jtext.h"

#include "fmt.h"

/* Is stderr the journal? systemd sets JOURNAL_STREAM to "DEVICE:INODE" of
 * the stream it connected. */
static bool stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) != 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void svc_log_init(svc_log_t *l, FILE *f, bool json)
{
	pthread_mutex_init(&l->mu, NULL);
	l->f = f;
	l->json = json;
	l->journal = f == stderr && stderr_is_journal();
}

void svc_log_set_json(svc_log_t *l, bool json)
{
	pthread_mutex_lock(&l->mu);
	l->json = json;
	pthread_mutex_unlock(&l->mu);
}

static const char *const level_names[] = { "debug", "info", "warning", "error" };
static const int level_prio[] = { 7, 6, 4, 3 }; /* syslog's */

/* 2024-05-01T12:00:00.123Z */
static void ts_ms(char *buf, size_t n)
{
	int64_t us = now_us();
	time_t t = (time_t)(us / 1000000);
	struct tm tm;
	char base[32];

	gmtime_r(&t, &tm);
	strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, n, "%s.%03dZ", base, (int)(us / 1000 % 1000));
}

/* Text that stays on one line: control characters as spaces. */
static void one_line(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = ' ';
}

static void write_json(svc_log_t *l, const char *ts, svc_level_t level, const char *event, json_t *fields,
                       const char *msg)
{
	json_t *o = json_object();
	char *text;

	if (!o)
		return;
	json_object_set_new(o, "ts", json_string(ts));
	json_object_set_new(o, "level", json_string(level_names[level]));
	json_object_set_new(o, "event", json_string(event));
	/* a message that is not UTF-8 (a server's) must not lose the line */
	json_t *m = json_string(msg);
	json_object_set_new(o, "msg", m ? m : json_string("(not UTF-8)"));
	if (fields)
		json_object_update_missing(o, fields);
	if ((text = jtext_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII))) {
		fputs(text, l->f);
		fputc('\n', l->f);
		free(text);
	}
	json_decref(o);
}

void svc_log(svc_log_t *l, svc_level_t level, const char *event, json_t *fields, const char *fmt, ...)
{
	char msg[2048], ts[40];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	one_line(msg);
	ts_ms(ts, sizeof ts);
	pthread_mutex_lock(&l->mu);
	if (l->json)
		write_json(l, ts, level, event, fields, msg);
	else if (l->journal)
		fprintf(l->f, "<%d>%s: %s\n", level_prio[level], event, msg);
	else
		fprintf(l->f, "%s %-7s %s: %s\n", ts, level_names[level], event, msg);
	fflush(l->f);
	pthread_mutex_unlock(&l->mu);
	json_decref(fields);
}

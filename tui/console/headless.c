/*
 * headless.c - the console without a terminal, for tests and benchmarks.
 *
 * ncurses runs on a terminal of TERM=xterm-256color whose output goes to
 * /dev/null; its own idea of the screen (curscr) is what a person would see,
 * and `dump` writes that as text. LINES, COLUMNS (default 40x120) and TZ
 * (default UTC) are pinned by bs_console_main. Script lines:
 *
 *   key NAME [N]        one key N times: a character, or Enter Esc Tab S-Tab
 *                       Space Up Down Left Right PgUp PgDn Home End Backspace
 *                       F1..F12 C-x (control), Resize
 *   keys TEXT           each character of TEXT (\n \e \t \\ escapes)
 *   wait-idle [SECS]    until no engine request is queued or running (30)
 *   wait-for TEXT [SECS] until the screen shows TEXT (30); fails otherwise
 *   sleep SECS
 *   dump NAME           the screen into DIR/NAME.txt
 *   resize LINES COLS
 *   mouse X Y [click|double|wheel-up|wheel-down]
 *   measure NAME N KEY  press KEY N times, each followed by wait-idle and a
 *                       redraw; prints "measure NAME: n=N median=..ms
 *                       p95=..ms max=..ms" on stdout
 *   measure-ui NAME N KEY  the same without waiting for the engine: how
 *                       long the UI thread takes to answer a key
 *   rss                 prints "rss KiB" (VmRSS) on stdout
 *   echo [TEXT]         prints TEXT on stdout
 *   # comment
 *
 * Each command is a row of commands[] below (its name, the arguments it
 * takes, its handler); a new one is a handler and a row.
 *
 * Exit status: 0, or 1 when a wait-for timed out or the script is bad.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "console_int.h"

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int key_code(const char *name)
{
	static const struct {
		const char *n;
		int k;
	} names[] = {
		{ "Enter", '\n' },
		{ "Esc", 27 },
		{ "Tab", '\t' },
		{ "Space", ' ' },
		{ "Up", KEY_UP },
		{ "Down", KEY_DOWN },
		{ "Left", KEY_LEFT },
		{ "Right", KEY_RIGHT },
		{ "PgUp", KEY_PPAGE },
		{ "PgDn", KEY_NPAGE },
		{ "Home", KEY_HOME },
		{ "End", KEY_END },
		{ "Backspace", KEY_BACKSPACE },
		{ "Resize", KEY_RESIZE },
		{ "S-Tab", KEY_BTAB },
	};
	size_t i;

	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcasecmp(name, names[i].n) == 0)
			return names[i].k;
	if ((name[0] == 'F' || name[0] == 'f') && name[1] >= '1' && name[1] <= '9')
		return KEY_F(atoi(name + 1));
	if (name[0] == 'C' && name[1] == '-' && name[2] && !name[3])
		return BS_CTRL(name[2]);
	if (name[0] && !name[1])
		return (unsigned char)name[0];
	return -1;
}

static void settle(void)
{
	console_tick();
	console_draw();
}

static bool screen_has(const char *text)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	bool has;

	if (!f)
		return false;
	console_dump(f);
	fclose(f);
	has = buf && strstr(buf, text);
	free(buf);
	return has;
}

static void wait_idle(double secs)
{
	double end = mono() + secs;

	do {
		console_tick();
		if (worker_wait_idle(0.02))
			break;
	} while (mono() < end);
	settle();
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (*s == '\\' && s[1]) {
			s++;
			*o++ = *s == 'n' ? '\n' : *s == 'e' ? 27 : *s == 't' ? '\t' : *s;
		} else {
			*o++ = *s;
		}
	}
	*o = 0;
}

/* ------------------------------------------------------------ commands */

/* The script being run. */
typedef struct {
	const char *script; /* its path, for messages */
	const char *dumpdir;
	int lineno;
	int status; /* 1 once a command failed */
} run_t;

/* "SCRIPT:LINE: message" on stderr; the script's status becomes 1. */
__attribute__((format(printf, 2, 3))) static void fail(run_t *r, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d: ", r->script, r->lineno);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	r->status = 1;
}

/* One key through the console, then a redraw, unless it quit. */
static void press(int key)
{
	console_key(key);
	if (!console_done())
		settle();
}

static void cmd_key(run_t *r, char *arg)
{
	char name[64] = "", quoted[80];
	int count = 1, k, i;

	sscanf(arg, "%63s %d", name, &count);
	if ((k = key_code(name)) < 0) {
		fail(r, "unknown key %s", fmt_quote(quoted, sizeof quoted, name));
		return;
	}
	for (i = 0; i < count && !console_done(); i++)
		press(k);
}

static void cmd_keys(run_t *r, char *arg)
{
	char *p;

	(void)r;
	unescape(arg);
	for (p = arg; *p && !console_done(); p++)
		press((unsigned char)*p);
}

static void cmd_wait_idle(run_t *r, char *arg)
{
	(void)r;
	wait_idle(*arg ? atof(arg) : 30);
}

/* wait-for TEXT [SECS]: a last word that is a positive number is SECS. */
static void cmd_wait_for(run_t *r, char *arg)
{
	double secs = 30, end;
	char *sp = strrchr(arg, ' '), *e = NULL, quoted[2100];

	if (sp) {
		double d = strtod(sp + 1, &e);
		if (e && *e == 0 && d > 0) {
			secs = d;
			*sp = 0;
		}
	}
	end = mono() + secs;
	for (;;) {
		wait_idle(0.2);
		if (screen_has(arg))
			return;
		if (mono() > end) {
			fail(r, "timed out waiting for %s", fmt_quote(quoted, sizeof quoted, arg));
			return;
		}
		usleep(50000);
	}
}

static void cmd_sleep(run_t *r, char *arg)
{
	double end = mono() + atof(arg);

	(void)r;
	while (mono() < end) {
		console_tick();
		usleep(20000);
	}
	settle();
}

static void cmd_dump(run_t *r, char *arg)
{
	char path[4096];
	FILE *f;

	settle();
	snprintf(path, sizeof path, "%s/%s.txt", r->dumpdir, arg);
	if (!(f = fopen(path, "w"))) {
		fprintf(stderr, "bagstore: %s: %s\n", path, strerror(errno));
		r->status = 1;
		return;
	}
	console_dump(f);
	fclose(f);
}

static void cmd_resize(run_t *r, char *arg)
{
	int l = 0, c = 0;

	(void)r;
	if (sscanf(arg, "%d %d", &l, &c) == 2 && l > 3 && c > 10) {
		resizeterm(l, c);
		press(KEY_RESIZE);
	}
}

static void cmd_mouse(run_t *r, char *arg)
{
	MEVENT ev;
	char how[32] = "click";

	(void)r;
	memset(&ev, 0, sizeof ev);
	sscanf(arg, "%d %d %31s", &ev.x, &ev.y, how);
	ev.bstate = strcmp(how, "double") == 0       ? BUTTON1_DOUBLE_CLICKED
	            : strcmp(how, "wheel-up") == 0   ? BUTTON4_PRESSED
	            : strcmp(how, "wheel-down") == 0 ? BUTTON5_PRESSED
	                                             : BUTTON1_CLICKED;
	ui_mouse = ev;
	ungetmouse(&ev);
	press(KEY_MOUSE);
}

/* measure and measure-ui: KEY pressed N times, each answered (and, unless
 * ui_only, the engine's work for it done), then the times' spread. */
static void measure(run_t *r, char *arg, const char *cmd, bool ui_only)
{
	char name[64] = "", kname[64] = "";
	int count = 0, k, i;
	double *t;

	if (sscanf(arg, "%63s %d %63s", name, &count, kname) != 3 || count <= 0 || (k = key_code(kname)) < 0) {
		fail(r, "measure NAME N KEY");
		return;
	}
	if (!(t = calloc((size_t)count, sizeof *t))) {
		fail(r, "out of memory");
		return;
	}
	for (i = 0; i < count; i++) {
		double t0 = mono();
		console_key(k);
		if (!ui_only)
			worker_wait_idle(30);
		console_draw();
		t[i] = (mono() - t0) * 1000;
	}
	qsort(t, (size_t)count, sizeof *t, cmp_d);
	printf("%s %s: n=%d median=%.2fms p95=%.2fms max=%.2fms\n", cmd, name, count, t[count / 2],
	       t[(int)(count * 0.95) < count ? (int)(count * 0.95) : count - 1], t[count - 1]);
	fflush(stdout);
	free(t);
}

static void cmd_measure(run_t *r, char *arg)
{
	measure(r, arg, "measure", false);
}
static void cmd_measure_ui(run_t *r, char *arg)
{
	measure(r, arg, "measure-ui", true);
}

static void cmd_rss(run_t *r, char *arg)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];

	(void)r;
	(void)arg;
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			printf("rss %ld KiB\n", atol(line + 6));
	if (f)
		fclose(f);
	fflush(stdout);
}

static void cmd_echo(run_t *r, char *arg)
{
	(void)r;
	printf("%s\n", arg);
	fflush(stdout);
}

/* The script's commands: name, the arguments it takes (as the reference at
 * the top writes them: a shape that starts with a word, not "[", needs one)
 * and its handler, which gets the rest of the line. */
static const struct {
	const char *name;
	const char *args;
	void (*run)(run_t *r, char *arg);
} commands[] = {
	{ "key", "NAME [N]", cmd_key },
	{ "keys", "TEXT", cmd_keys },
	{ "wait-idle", "[SECS]", cmd_wait_idle },
	{ "wait-for", "TEXT [SECS]", cmd_wait_for },
	{ "sleep", "SECS", cmd_sleep },
	{ "dump", "NAME", cmd_dump },
	{ "resize", "LINES COLS", cmd_resize },
	{ "mouse", "X Y [click|double|wheel-up|wheel-down]", cmd_mouse },
	{ "measure", "NAME N KEY", cmd_measure },
	{ "measure-ui", "NAME N KEY", cmd_measure_ui },
	{ "rss", "", cmd_rss },
	{ "echo", "[TEXT]", cmd_echo },
};

/* One line of the script (its newline removed). */
static void run_line(run_t *r, char *line)
{
	char *arg = line, quoted[64];
	size_t i, len;

	if (line[0] == '#' || line[0] == 0)
		return;
	while (*arg && *arg != ' ')
		arg++;
	len = (size_t)(arg - line);
	while (*arg == ' ')
		arg++;
	for (i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strlen(commands[i].name) == len && strncmp(commands[i].name, line, len) == 0) {
			if (!*arg && commands[i].args[0] && commands[i].args[0] != '[')
				fail(r, "usage: %s %s", commands[i].name, commands[i].args);
			else
				commands[i].run(r, arg);
			return;
		}
	line[len] = 0;
	fail(r, "unknown command %s", fmt_quote(quoted, sizeof quoted, line));
}

/* ------------------------------------------------------------ the run */

/* ncurses on a terminal whose output goes to /dev/null (*out, *in). */
static SCREEN *term_open(FILE **out, FILE **in)
{
	SCREEN *scr = NULL;

	*out = fopen("/dev/null", "w");
	*in = fopen("/dev/null", "r");
	if (*out && *in)
		scr = newterm("xterm-256color", *out, *in);
	if (!scr)
		return NULL;
	set_term(scr);
	raw();
	noecho();
	keypad(stdscr, TRUE);
	mousemask(BUTTON1_CLICKED | BUTTON1_DOUBLE_CLICKED | BUTTON4_PRESSED | BUTTON5_PRESSED, NULL);
	ui.color = false;
	return scr;
}

int headless_run(const char *script, const char *dumpdir)
{
	run_t r = { .script = script, .dumpdir = dumpdir };
	FILE *in = NULL, *out = NULL, *sf = NULL;
	SCREEN *scr = NULL;
	char line[2048];

	if (strcmp(script, "-") == 0) {
		sf = stdin;
	} else if (!(sf = fopen(script, "r"))) {
		fprintf(stderr, "bagstore: %s: %s\n", script, strerror(errno));
		r.status = 2;
		goto done;
	}
	if (!(scr = term_open(&out, &in))) {
		fprintf(stderr, "bagstore: cannot start a headless terminal\n");
		r.status = 2;
		goto done;
	}
	console_start();
	wait_idle(10);
	while (!console_done() && fgets(line, sizeof line, sf)) {
		size_t n = strlen(line);

		r.lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = 0;
		run_line(&r, line);
	}
	endwin();
done:
	if (scr)
		delscreen(scr);
	if (out)
		fclose(out);
	if (in)
		fclose(in);
	if (sf && sf != stdin)
		fclose(sf);
	return r.status;
}

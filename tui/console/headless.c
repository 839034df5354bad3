/*
 * headless.c - the console without a terminal, for tests and benchmarks.
 *
 * ncurses runs on a terminal of TERM=xterm-256color whose output goes to
 * /dev/null; its own idea of the screen (curscr) is what a person would see,
 * and `dump` writes that as text. LINES, COLUMNS (default 40x120) and TZ
 * (default UTC) are pinned by bs_console_main. Script lines:
 *
 *   key NAME [N]        one key N times: a character, or Enter Esc Tab Space
 *                       Up Down Left Right PgUp PgDn Home End Backspace F1..F12
 *                       C-x (control), Resize
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
 *   echo TEXT           prints TEXT on stdout
 *   # comment
 *
 * Exit status: 0, or 1 when a wait-for timed out or the script is bad.
 */
#include <errno.h>
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
	static const struct { const char *n; int k; } names[] = {
		{"Enter", '\n'}, {"Esc", 27}, {"Tab", '\t'}, {"Space", ' '},
		{"Up", KEY_UP}, {"Down", KEY_DOWN}, {"Left", KEY_LEFT}, {"Right", KEY_RIGHT},
		{"PgUp", KEY_PPAGE}, {"PgDn", KEY_NPAGE}, {"Home", KEY_HOME}, {"End", KEY_END},
		{"Backspace", KEY_BACKSPACE}, {"Resize", KEY_RESIZE},
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

int headless_run(const char *script, const char *dumpdir)
{
	FILE *in = NULL, *out = NULL, *sf;
	SCREEN *scr;
	char line[2048];
	int lineno = 0, status = 0;

	if (strcmp(script, "-") == 0)
		sf = stdin;
	else if (!(sf = fopen(script, "r"))) {
		fprintf(stderr, "bagstore: %s: %s\n", script, strerror(errno));
		return 2;
	}
	out = fopen("/dev/null", "w");
	in = fopen("/dev/null", "r");
	if (!out || !in || !(scr = newterm("xterm-256color", out, in))) {
		fprintf(stderr, "bagstore: cannot start a headless terminal\n");
		return 2;
	}
	set_term(scr);
	raw();
	noecho();
	keypad(stdscr, TRUE);
	mousemask(BUTTON1_CLICKED | BUTTON1_DOUBLE_CLICKED | BUTTON4_PRESSED | BUTTON5_PRESSED, NULL);
	ui.color = false;
	console_start();
	wait_idle(10);

	while (!console_done() && fgets(line, sizeof line, sf)) {
		char cmd[32] = "", *arg;
		size_t n = strlen(line);

		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = 0;
		if (line[0] == '#' || line[0] == 0)
			continue;
		arg = line;
		while (*arg && *arg != ' ')
			arg++;
		snprintf(cmd, sizeof cmd, "%.*s", (int)(arg - line), line);
		while (*arg == ' ')
			arg++;

		if (strcmp(cmd, "key") == 0) {
			char name[64] = "";
			int count = 1, k, i;

			sscanf(arg, "%63s %d", name, &count);
			if ((k = key_code(name)) < 0) {
				fprintf(stderr, "%s:%d: unknown key '%s'\n", script, lineno, name);
				status = 1;
				continue;
			}
			for (i = 0; i < count && !console_done(); i++) {
				console_key(k);
				if (!console_done())
					settle();
			}
		} else if (strcmp(cmd, "keys") == 0) {
			char *p;

			unescape(arg);
			for (p = arg; *p && !console_done(); p++) {
				console_key((unsigned char)*p);
				if (!console_done())
					settle();
			}
		} else if (strcmp(cmd, "wait-idle") == 0) {
			wait_idle(*arg ? atof(arg) : 30);
		} else if (strcmp(cmd, "wait-for") == 0) {
			double secs = 30, end;
			char *sp = strrchr(arg, ' ');
			char *e = NULL;

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
					break;
				if (mono() > end) {
					fprintf(stderr, "%s:%d: timed out waiting for '%s'\n", script, lineno, arg);
					status = 1;
					break;
				}
				usleep(50000);
			}
		} else if (strcmp(cmd, "sleep") == 0) {
			double end = mono() + atof(arg);
			while (mono() < end) {
				console_tick();
				usleep(20000);
			}
			settle();
		} else if (strcmp(cmd, "dump") == 0) {
			char path[4096];
			FILE *f;

			settle();
			snprintf(path, sizeof path, "%s/%s.txt", dumpdir, arg);
			if (!(f = fopen(path, "w"))) {
				fprintf(stderr, "bagstore: %s: %s\n", path, strerror(errno));
				status = 1;
				continue;
			}
			console_dump(f);
			fclose(f);
		} else if (strcmp(cmd, "resize") == 0) {
			int l = 0, c = 0;
			if (sscanf(arg, "%d %d", &l, &c) == 2 && l > 3 && c > 10) {
				resizeterm(l, c);
				console_key(KEY_RESIZE);
				settle();
			}
		} else if (strcmp(cmd, "mouse") == 0) {
			MEVENT ev;
			char how[32] = "click";

			memset(&ev, 0, sizeof ev);
			sscanf(arg, "%d %d %31s", &ev.x, &ev.y, how);
			ev.bstate = strcmp(how, "double") == 0 ? BUTTON1_DOUBLE_CLICKED :
			            strcmp(how, "wheel-up") == 0 ? BUTTON4_PRESSED :
			            strcmp(how, "wheel-down") == 0 ? BUTTON5_PRESSED : BUTTON1_CLICKED;
			ui_mouse = ev;
			ungetmouse(&ev);
			console_key(KEY_MOUSE);
			settle();
		} else if (strcmp(cmd, "measure") == 0 || strcmp(cmd, "measure-ui") == 0) {
			bool ui_only = strcmp(cmd, "measure-ui") == 0;
			char name[64] = "", kname[64] = "";
			int count = 0, k, i;
			double *t;

			if (sscanf(arg, "%63s %d %63s", name, &count, kname) != 3 || count <= 0 ||
			    (k = key_code(kname)) < 0) {
				fprintf(stderr, "%s:%d: measure NAME N KEY\n", script, lineno);
				status = 1;
				continue;
			}
			t = calloc((size_t)count, sizeof *t);
			for (i = 0; i < count; i++) {
				double t0 = mono();
				console_key(k);
				if (!ui_only)
					worker_wait_idle(30);
				console_draw();
				t[i] = (mono() - t0) * 1000;
			}
			qsort(t, (size_t)count, sizeof *t, cmp_d);
			printf("%s %s: n=%d median=%.2fms p95=%.2fms max=%.2fms\n", cmd, name, count,
			       t[count / 2], t[(int)(count * 0.95) < count ? (int)(count * 0.95) : count - 1],
			       t[count - 1]);
			fflush(stdout);
			free(t);
		} else if (strcmp(cmd, "rss") == 0) {
			FILE *f = fopen("/proc/self/status", "r");
			char l2[256];
			while (f && fgets(l2, sizeof l2, f))
				if (strncmp(l2, "VmRSS:", 6) == 0)
					printf("rss %ld KiB\n", atol(l2 + 6));
			if (f)
				fclose(f);
			fflush(stdout);
		} else if (strcmp(cmd, "echo") == 0) {
			printf("%s\n", arg);
			fflush(stdout);
		} else {
			fprintf(stderr, "%s:%d: unknown command '%s'\n", script, lineno, cmd);
			status = 1;
		}
	}
	endwin();
	delscreen(scr);
	fclose(out);
	fclose(in);
	if (sf != stdin)
		fclose(sf);
	return status;
}

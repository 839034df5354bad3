/*
 * console.c - the console's loop: keys to named actions (actions.h), the
 * stack of screens (views.h), the `:` command line and other prompts, the
 * title and status lines, the refresh timer, resize and mouse; and
 * bs_console_main, which parses the console's options and starts the
 * worker lanes, then runs the loop on the terminal or headless.
 *
 * Options (anywhere after the program name):
 *   --headless SCRIPT  keys from SCRIPT, screens dumped as text (headless.c)
 *   --dump-dir DIR     where headless dumps go (default .)
 *   --refresh SECS     automatic refresh interval (default 2)
 *   --timeout SECS     cap of the lanes' shard timeouts (default 3)
 *   --read-only        (handled by main.c into cfg->read_only)
 */
#include <errno.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "console.h"
#include "console_int.h"

ui_t ui;

/* ------------------------------------------------------------ the stack */

#define STACK_MAX 8

static struct {
	const struct view_ops *v;
	char filter[256];
} stack[STACK_MAX];
static int depth;
static bool quit;
static bool need_draw = true;
static bool need_clear;
static int64_t next_reload;
static char msg[512];
static bool msg_err;
static int64_t msg_until;

static const struct view_ops *top(void)
{
	return depth > 0 ? stack[depth - 1].v : NULL;
}

static void reload_top(void)
{
	if (top() && top()->reload)
		top()->reload();
	next_reload = now_us() + (int64_t)(ui.refresh_s * 1e6);
}

void ui_push(const struct view_ops *v)
{
	int i;

	/* a screen already on the stack is brought back, not stacked twice */
	for (i = 0; i < depth; i++) {
		if (stack[i].v == v) {
			while (depth > i + 1) {
				depth--;
				if (stack[depth].v->close)
					stack[depth].v->close();
			}
			need_draw = true;
			reload_top();
			return;
		}
	}
	if (depth == STACK_MAX)
		return;
	stack[depth].v = v;
	stack[depth].filter[0] = 0;
	depth++;
	if (v->open)
		v->open();
	need_draw = need_clear = true;
	reload_top();
}

void ui_switch(const struct view_ops *v)
{
	while (depth > 0) {
		depth--;
		if (stack[depth].v->close)
			stack[depth].v->close();
	}
	ui_push(v);
}

static void pop(void)
{
	if (depth <= 1) {
		quit = true;
		return;
	}
	depth--;
	if (stack[depth].v->close)
		stack[depth].v->close();
	need_draw = need_clear = true;
	reload_top();
}

static void vmsg(bool err, const char *fmt, va_list ap)
{
	vsnprintf(msg, sizeof msg, fmt, ap);
	msg_err = err;
	msg_until = now_us() + 6000000;
	need_draw = true;
}

void ui_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(false, fmt, ap);
	va_end(ap);
}

void ui_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(true, fmt, ap);
	va_end(ap);
}

const char *ui_filter(void)
{
	return depth > 0 ? stack[depth - 1].filter : "";
}

void ui_set_filter(const char *text)
{
	if (depth > 0)
		snprintf(stack[depth - 1].filter, sizeof stack[depth - 1].filter, "%s", text ? text : "");
	need_draw = true;
}

bool console_done(void)
{
	return quit;
}

/* ------------------------------------------------------------ prompts */

static struct {
	bool active;
	char label[512];
	char buf[512];
	size_t len;
	ui_prompt_fn done;
	void *ctx;
} prompt;

void ui_prompt(const char *label, const char *initial, ui_prompt_fn done, void *ctx)
{
	prompt.active = true;
	snprintf(prompt.label, sizeof prompt.label, "%s", label);
	snprintf(prompt.buf, sizeof prompt.buf, "%s", initial ? initial : "");
	prompt.len = strlen(prompt.buf);
	prompt.done = done;
	prompt.ctx = ctx;
	need_draw = true;
}

static void apply(reaction_t r);

static void prompt_key(int key)
{
	if (key == '\n' || key == '\r' || key == KEY_ENTER || key == BS_KEY_ESC || key == BS_CTRL('c') ||
	    key == BS_CTRL('g')) {
		bool ok = key != BS_KEY_ESC && key != BS_CTRL('c') && key != BS_CTRL('g');
		ui_prompt_fn fn = prompt.done;
		void *ctx = prompt.ctx;
		char text[512];

		snprintf(text, sizeof text, "%s", prompt.buf);
		prompt.active = false;
		need_draw = true;
		apply(fn(ok ? text : NULL, ctx));
		return;
	}
	if (key == KEY_BACKSPACE || key == 127 || key == 8) {
		/* drop one UTF-8 character */
		while (prompt.len > 0) {
			unsigned char c = (unsigned char)prompt.buf[--prompt.len];
			if ((c & 0xC0) != 0x80)
				break;
		}
		prompt.buf[prompt.len] = 0;
	} else if (key == BS_CTRL('u')) {
		prompt.len = 0;
		prompt.buf[0] = 0;
	} else if (key >= 32 && key < 256 && key != 127 && prompt.len + 1 < sizeof prompt.buf) {
		prompt.buf[prompt.len++] = (char)key;
		prompt.buf[prompt.len] = 0;
	}
	need_draw = true;
}

/* ------------------------------------------------------------ commands */

static const struct view_ops *screens[] = {
	&view_shards, &view_indexes, &view_cleaner, &view_backfills, &view_entities,
};

static reaction_t command_done(const char *text, void *ctx)
{
	char cmd[64] = "", arg[256] = "";
	size_t i, n, len;
	const struct view_ops *found = NULL;

	(void)ctx;
	if (!text)
		return R_REDRAW;
	while (*text == ' ' || *text == ':')
		text++;
	if (sscanf(text, "%63s %255[^\n]", cmd, arg) < 1)
		return R_REDRAW;
	len = strlen(cmd);
	if (strcmp(cmd, "q") == 0 || strcmp(cmd, "quit") == 0 || strcmp(cmd, "q!") == 0)
		return R_QUIT;
	if (strcmp(cmd, "refresh") == 0) {
		double s = atof(arg);
		if (s < 0.2 || s > 3600) {
			ui_err(":refresh takes seconds between 0.2 and 3600");
			return R_REDRAW;
		}
		ui.refresh_s = s;
		ui_msg("refresh every %gs", s);
		return R_RELOAD;
	}
	if (strcmp(cmd, "pause") == 0) {
		ui.paused = !ui.paused;
		return R_REDRAW;
	}
	if (strcmp(cmd, "help") == 0) {
		text_open_help(top());
		return R_REDRAW;
	}
	if (strcmp(cmd, "filter") == 0) {
		ui_set_filter(arg);
		return R_RELOAD;
	}
	n = sizeof screens / sizeof screens[0];
	for (i = 0; i < n; i++) {
		if (strncmp(screens[i]->name, cmd, len) == 0) {
			if (found) {
				ui_err("':%s' is ambiguous", cmd);
				return R_REDRAW;
			}
			found = screens[i];
		}
	}
	if (!found && strcmp(cmd, "entity") == 0 && arg[0]) {
		ui_switch(&view_entities);
		if (view_entities.filter)
			view_entities.filter(arg);
		return R_REDRAW;
	}
	if (!found) {
		ui_err("unknown command ':%s' (:shards :indexes :cleaner :backfills :entities :refresh N :q)", cmd);
		return R_REDRAW;
	}
	ui_switch(found);
	if (arg[0])
		ui_set_filter(arg);
	return R_REDRAW;
}

static reaction_t filter_done(const char *text, void *ctx)
{
	(void)ctx;
	if (!text)
		return R_REDRAW;
	if (top() && top()->filter && top()->filter(text))
		return R_REDRAW;
	ui_set_filter(text);
	if (top() && top()->reload)
		return R_RELOAD;
	return R_REDRAW;
}

static void apply(reaction_t r)
{
	switch (r) {
	case R_NONE: case R_UNHANDLED: break;
	case R_REDRAW: need_draw = true; break;
	case R_RELOAD: reload_top(); need_draw = true; break;
	case R_POP: pop(); break;
	case R_QUIT: quit = true; break;
	}
}

static reaction_t global_action(action_t a)
{
	switch (a) {
	case ACT_HELP: text_open_help(top()); return R_REDRAW;
	case ACT_COMMAND: ui_prompt(":", "", command_done, NULL); return R_REDRAW;
	case ACT_FILTER: ui_prompt("/", ui_filter(), filter_done, NULL); return R_REDRAW;
	case ACT_BACK:
		if (ui_filter()[0] && !(top() && top()->filter)) {
			ui_set_filter("");
			return R_RELOAD;
		}
		return R_POP;
	case ACT_QUIT: return R_QUIT;
	case ACT_SCREEN_SHARDS: ui_switch(&view_shards); return R_REDRAW;
	case ACT_SCREEN_INDEXES: ui_switch(&view_indexes); return R_REDRAW;
	case ACT_SCREEN_CLEANER: ui_switch(&view_cleaner); return R_REDRAW;
	case ACT_SCREEN_BACKFILLS: ui_switch(&view_backfills); return R_REDRAW;
	case ACT_SCREEN_ENTITIES: ui_switch(&view_entities); return R_REDRAW;
	case ACT_RELOAD: ui_msg("reloading"); return R_RELOAD;
	case ACT_PAUSE:
		ui.paused = !ui.paused;
		ui_msg(ui.paused ? "refresh paused (z resumes)" : "refresh resumed");
		return ui.paused ? R_REDRAW : R_RELOAD;
	case ACT_FASTER:
	case ACT_SLOWER: {
		static const double steps[] = {0.5, 1, 2, 5, 10, 30, 60};
		int i, n = (int)(sizeof steps / sizeof steps[0]);
		for (i = 0; i < n - 1 && steps[i] < ui.refresh_s - 1e-9; i++)
			;
		if (a == ACT_FASTER)
			i = i > 0 ? i - 1 : 0;
		else if (steps[i] <= ui.refresh_s + 1e-9)
			i = i < n - 1 ? i + 1 : n - 1;
		ui.refresh_s = steps[i];
		ui_msg("refresh every %gs", ui.refresh_s);
		next_reload = now_us() + (int64_t)(ui.refresh_s * 1e6);
		return R_REDRAW;
	}
	default: return R_NONE;
	}
}

void console_key(int key)
{
	action_t a;
	bool stripped;
	reaction_t r;

	if (key == KEY_RESIZE) {
		need_draw = need_clear = true;
		return;
	}
	if (prompt.active) {
		prompt_key(key);
		return;
	}
	if (!top())
		return;
	if (key == KEY_MOUSE) {
		if (getmouse(&ui_mouse) != OK)
			return;
		r = top()->key(ACT_NONE, KEY_MOUSE);
		if (r == R_UNHANDLED && (ui_mouse.bstate & (BUTTON1_DOUBLE_CLICKED)))
			r = top()->key(ACT_OPEN, '\n');
		apply(r);
		return;
	}
	a = action_for_key(key, top()->scope, &stripped);
	if (stripped) {
		ui_err("read-only: this key changes data and is disabled");
		return;
	}
	r = top()->key(a, key);
	if (r == R_UNHANDLED)
		r = global_action(a);
	apply(r);
}

void console_tick(void)
{
	int64_t now = now_us();
	char note[512];
	bool err;

	if (worker_take_notice(note, sizeof note, &err)) {
		if (err)
			ui_err("%s", note);
		else
			ui_msg("%s", note);
	}
	{
		char *pt, *px;

		if (worker_take_page(&pt, &px))
			text_open(pt, px, NULL, NULL, NULL);
		free(pt);
		free(px);
	}
	if (msg[0] && now > msg_until) {
		msg[0] = 0;
		need_draw = true;
	}
	if (!ui.paused && now >= next_reload)
		reload_top();
}

/* ------------------------------------------------------------ drawing */

static void draw_title(void)
{
	size_t i, n = sizeof screens / sizeof screens[0];
	int x = 0;
	char right[128];

	ui_color(C_TITLE, true);
	move(0, 0);
	hline(' ', COLS);
	x += ui_put(0, x, COLS - x, " bagstore ");
	for (i = 0; i < n; i++) {
		char label[48];
		bool cur = false;
		int d;

		for (d = 0; d < depth; d++)
			if (stack[d].v == screens[i])
				cur = true;
		snprintf(label, sizeof label, cur ? "[%zu %s]" : " %zu %s ", i + 1, screens[i]->name);
		if (cur)
			attron(A_BOLD);
		x += ui_put(0, x, COLS - x, label);
		if (cur)
			attroff(A_BOLD);
	}
	snprintf(right, sizeof right, "%d shards  ? help ", ui.nshards);
	if (COLS - x > (int)strlen(right))
		ui_put(0, COLS - (int)strlen(right), (int)strlen(right), right);
	ui_color(C_TITLE, false);
}

static void draw_status(void)
{
	char right[160];
	int y = LINES - 1, rw;

	move(y, 0);
	clrtoeol();
	if (prompt.active) {
		int x = ui_put(y, 0, COLS, prompt.label);
		x += ui_put(y, x, COLS - x, prompt.buf);
		move(y, x < COLS ? x : COLS - 1);
		return;
	}
	snprintf(right, sizeof right, "%s%s refresh %gs%s ",
	         ui.read_only ? " READ-ONLY |" : "",
	         ui_filter()[0] ? " filtered |" : "",
	         ui.refresh_s, ui.paused ? " PAUSED" : "");
	rw = ui_width(right);
	ui_color(C_STATUS, true);
	hline(' ', COLS);
	if (msg[0]) {
		if (msg_err)
			ui_color(C_BAD, true);
		ui_put(y, 1, COLS - rw - 2, msg);
		if (msg_err)
			ui_color(C_BAD, false);
	} else if (top()) {
		char left[300];
		snprintf(left, sizeof left, "%s%s%s", top()->name,
		         ui_filter()[0] ? "  /" : "", ui_filter());
		ui_put(y, 1, COLS - rw - 2, left);
	}
	if (COLS > rw)
		ui_put(y, COLS - rw, rw, right);
	ui_color(C_STATUS, false);
}

void console_draw(void)
{
	if (need_clear) {
		clear();
		need_clear = false;
	}
	erase();
	draw_title();
	if (top() && LINES > 3)
		top()->draw(1, LINES - 2, COLS);
	draw_status();
	if (!prompt.active)
		move(LINES - 1, COLS - 1);
	curs_set(prompt.active ? 1 : 0);
	refresh();
	need_draw = false;
}

void console_dump(FILE *f)
{
	int y;

	for (y = 0; y < LINES; y++) {
		wchar_t w[1024];
		char out[4096];
		size_t n;
		int len;

		memset(w, 0, sizeof w);
		if (mvwinnwstr(curscr, y, 0, w, COLS < 1023 ? COLS : 1023) == ERR)
			w[0] = 0;
		n = wcstombs(out, w, sizeof out - 1);
		if (n == (size_t)-1)
			n = 0;
		out[n] = 0;
		len = (int)n;
		while (len > 0 && out[len - 1] == ' ')
			out[--len] = 0;
		fprintf(f, "%s\n", out);
	}
}

/* ------------------------------------------------------------ editor */

int ui_edit_file(const char *path)
{
	pid_t pid;
	int status = -1;

	def_prog_mode();
	endwin();
	pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", "exec ${VISUAL:-${EDITOR:-vi}} \"$1\"", "sh", path, (char *)NULL);
		_exit(127);
	}
	if (pid > 0) {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	}
	reset_prog_mode();
	need_draw = need_clear = true;
	if (!ui.headless)
		refresh();
	return status;
}

/* ------------------------------------------------------------ main */

void console_start(void)
{
	ui_switch(&view_shards);
}

static void colors_init(void)
{
	ui.color = !getenv("NO_COLOR") && has_colors();
	if (!ui.color)
		return;
	start_color();
	use_default_colors();
	init_pair(C_HEADER, COLOR_CYAN, -1);
	init_pair(C_TITLE, COLOR_BLUE, -1);
	init_pair(C_GOOD, COLOR_GREEN, -1);
	init_pair(C_WARN, COLOR_YELLOW, -1);
	init_pair(C_BAD, COLOR_RED, -1);
	init_pair(C_DIM, COLOR_WHITE, -1);
	init_pair(C_STATUS, COLOR_BLUE, -1);
}

static int interactive(void)
{
	struct pollfd pfd[2];

	initscr();
	raw();
	noecho();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	mousemask(BUTTON1_CLICKED | BUTTON1_DOUBLE_CLICKED | BUTTON4_PRESSED | BUTTON5_PRESSED, NULL);
	mouseinterval(200);
	colors_init();
	console_start();
	while (!quit) {
		int ch, got = 0;

		console_tick();
		if (need_draw)
			console_draw();
		pfd[0].fd = STDIN_FILENO;
		pfd[0].events = POLLIN;
		pfd[1].fd = worker_wake_fd();
		pfd[1].events = POLLIN;
		if (poll(pfd, 2, 250) > 0 && (pfd[1].revents & POLLIN)) {
			worker_drain_wake();
			need_draw = true;
		}
		while (!quit && (ch = getch()) != ERR) {
			console_key(ch);
			if (++got > 64)
				break;
		}
	}
	endwin();
	return 0;
}

int bs_console_option(const char *arg)
{
	static const char *const with_value[] = {"--headless", "--dump-dir", "--refresh", "--timeout"};
	size_t i;

	for (i = 0; i < sizeof with_value / sizeof with_value[0]; i++)
		if (strcmp(arg, with_value[i]) == 0)
			return 2;
	return 0;
}

static const char *opt_value(int argc, char **argv, const char *name)
{
	int i;

	for (i = 1; i < argc - 1; i++)
		if (strcmp(argv[i], name) == 0)
			return argv[i + 1];
	return NULL;
}

int bs_console_main(const bs_config_t *cfg, int argc, char **argv)
{
	const char *script = opt_value(argc, argv, "--headless");
	const char *dumpdir = opt_value(argc, argv, "--dump-dir");
	const char *v;
	double timeout = 3;
	const char *loc;
	int status;

	memset(&ui, 0, sizeof ui);
	ui.cfg = cfg;
	ui.refresh_s = 2;
	if ((v = opt_value(argc, argv, "--refresh")) && atof(v) >= 0.2)
		ui.refresh_s = atof(v);
	if ((v = opt_value(argc, argv, "--timeout")) && atof(v) > 0)
		timeout = atof(v);
	ui.read_only = cfg->read_only; /* main.c folds --read-only into it */
	ui.headless = script != NULL;
	ui.nshards = cfg->nshards;
	if (ui.read_only)
		actions_strip_dangerous();

	if (ui.headless) {
		/* pinned, so that dumps are the same everywhere */
		setenv("TERM", "xterm-256color", 1);
		if (!getenv("LINES"))
			setenv("LINES", "40", 1);
		if (!getenv("COLUMNS"))
			setenv("COLUMNS", "120", 1);
		if (!getenv("TZ"))
			setenv("TZ", "UTC", 1);
		tzset();
	}
	loc = setlocale(LC_ALL, "");
	if (!loc || !strstr(loc, "UTF-8")) {
		if (ui.headless || !loc || strcmp(loc, "C") == 0 || strcmp(loc, "POSIX") == 0)
			loc = setlocale(LC_CTYPE, "C.UTF-8");
	}
	ui.ascii = !loc || (!strstr(loc, "UTF-8") && !strstr(loc, "utf8"));
	signal(SIGPIPE, SIG_IGN);

	if (worker_start(cfg, timeout) < 0) {
		fprintf(stderr, "bagstore: %s\n", bs_last_error());
		status = 1;
	} else if (ui.headless) {
		status = headless_run(script, dumpdir ? dumpdir : ".");
	} else {
		status = interactive();
	}
	/* the lanes and backfills read cfg until they are joined */
	if (!worker_stop(3.0)) {
		/* a lane is stuck in a hung shard: leave without freeing under it */
		fflush(stdout);
		fflush(stderr);
		_exit(status);
	}
	return status;
}

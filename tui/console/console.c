/*
 * console.c - the console's loop: keys to named actions (actions.h), the
 * stack of screens (views.h) and its breadcrumb, the `:` command line (Tab
 * completes), the `/` filter (applied as it is typed) and the other
 * prompts, the title and status lines, the refresh timer, resize, mouse,
 * the "terminal too small" notice; and bs_console_main, which parses the
 * console's options and starts the worker lanes, then runs the loop on the
 * terminal or headless.
 *
 * Navigation, as k9s does it: a number, Tab or a `:` command replaces the
 * stack by a top-level screen; Enter on a row opens a screen above it; Esc
 * and q go back and never quit; :q, Q, Ctrl-C and F10 quit, asking first
 * while this console runs backfills (their jobs go back to queued).
 *
 * The configuration file is followed (config_follow): polled for a change
 * of its inode, size or mtime once a second, and read on `:reload`; a new
 * file that parses is used by the lanes from their next request (a changed
 * shard list first checked against the shards on the status lane, as the
 * daemon's SIGHUP checks it); one that does not is refused on the status
 * line with its file:line, the configuration in force staying.
 *
 * Options (anywhere after the program name):
 *   --headless SCRIPT  keys from SCRIPT, screens dumped as text (headless.c)
 *   --dump-dir DIR     where headless dumps go (default .)
 *   --refresh SECS     automatic refresh interval (default 2; 0.5 to 3600)
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "console.h"
#include "console_int.h"

ui_t ui;

/* The smallest terminal a screen is drawn on; below it, a notice. */
#define MIN_COLS 40
#define MIN_LINES 10

/* ------------------------------------------------------------ the stack */

#define STACK_MAX 8

static struct {
	const struct view_ops *v;
	char filter[256];
	char crumb[96];  /* its part of the breadcrumb ("" : the screen's name) */
	char origin[64]; /* the action that opened it: a page's `y` is of that action */
} stack[STACK_MAX];
static int depth;
/* The operator's action being handled now, "" none (a refresh): what it
 * queues on the lanes is stamped with it, and the :log screen names it
 * beside the statements it sent (worker_set_origin). */
static char cur_origin[64];

static void set_origin(const char *label)
{
	snprintf(cur_origin, sizeof cur_origin, "%s", label ? label : "");
	worker_set_origin(cur_origin);
}

/* ACT_INDEX_DROP as the log names it: "index drop". */
static void action_origin(action_t a)
{
	char buf[64];
	const char *n = bs_action_info[a].name;
	size_t k;

	for (k = 0; n[k] && k + 1 < sizeof buf; k++)
		buf[k] = n[k] == '_' ? ' ' : (char)(n[k] >= 'A' && n[k] <= 'Z' ? n[k] - 'A' + 'a' : n[k]);
	buf[k] = '\0';
	/* a page's `y` does what the action that opened the page offered */
	set_origin(a == ACT_CONFIRM && depth > 0 && stack[depth - 1].origin[0] ? stack[depth - 1].origin : buf);
}
static bool quit;
static bool need_draw = true;
static bool need_clear;
static int64_t next_reload;
static char msg[1024];
static bool msg_err;
static int64_t msg_until;
static const struct view_ops *pop_wanted; /* ui_request_pop */

static const struct view_ops *top(void)
{
	return depth > 0 ? stack[depth - 1].v : NULL;
}

const struct view_ops *ui_top(void)
{
	return top();
}

static void reload_top(void)
{
	if (top() && top()->reload)
		top()->reload();
	next_reload = now_us() + (int64_t)(ui.refresh_s * 1e6);
}

static void close_above(int keep)
{
	while (depth > keep) {
		depth--;
		if (stack[depth].v->close)
			stack[depth].v->close();
	}
}

void ui_push_crumb(const struct view_ops *v, const char *crumb)
{
	int i;

	/* a screen already on the stack is brought back, not stacked twice */
	for (i = 0; i < depth; i++) {
		if (stack[i].v == v) {
			close_above(i + 1);
			if (crumb)
				snprintf(stack[i].crumb, sizeof stack[i].crumb, "%s", crumb);
			need_draw = true;
			reload_top();
			return;
		}
	}
	if (depth == STACK_MAX)
		close_above(STACK_MAX - 1);
	stack[depth].v = v;
	stack[depth].filter[0] = 0;
	snprintf(stack[depth].crumb, sizeof stack[depth].crumb, "%s", crumb ? crumb : "");
	snprintf(stack[depth].origin, sizeof stack[depth].origin, "%s", cur_origin);
	depth++;
	if (v->open)
		v->open();
	need_draw = need_clear = true;
	reload_top();
}

void ui_lay_over(const struct view_ops *v, const char *crumb)
{
	int i;

	if (top() != v)
		for (i = 0; i < depth; i++)
			if (stack[i].v == v) {
				/* taken out from under the screens above it (it has
				 * no close hook, and holds nothing of theirs), rather
				 * than brought back by closing them */
				memmove(&stack[i], &stack[i + 1], (size_t)(depth - i - 1) * sizeof *stack);
				depth--;
				break;
			}
	if (top() != v && depth == STACK_MAX) {
		ui_err("%d screens open: go back (q) before opening %s", STACK_MAX, v->name);
		return;
	}
	ui_push_crumb(v, crumb);
}

void ui_push(const struct view_ops *v)
{
	ui_push_crumb(v, NULL);
}

void ui_switch(const struct view_ops *v)
{
	/* a message is about the screen it was said on: another starts clean */
	msg[0] = 0;
	close_above(0);
	ui_push(v);
}

void ui_set_crumb(const char *crumb)
{
	if (depth > 0)
		snprintf(stack[depth - 1].crumb, sizeof stack[depth - 1].crumb, "%s", crumb ? crumb : "");
	need_draw = true;
}

void ui_request_pop(const struct view_ops *v)
{
	pop_wanted = v;
}

static void pop(void)
{
	if (depth <= 1) {
		ui_msg("%s is a top screen: :q, Q or Ctrl-C quits", top() ? top()->name : "this");
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

/* ------------------------------------------------------------ quitting */

static void quit_answer(bool yes, void *ctx)
{
	(void)ctx;
	if (yes)
		quit = true;
	else
		ui_msg("not quitting");
}

/* Quit, asking first while this console runs backfills. */
static void ask_quit(void)
{
	local_backfill_t loc[16];
	int n = worker_backfills(loc, 16), running = 0, i;
	char names[256] = "", label[600];
	size_t o = 0;

	for (i = 0; i < n; i++) {
		if (!loc[i].running)
			continue;
		running++;
		if (o + strlen(loc[i].index) + 3 < sizeof names)
			o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", o ? ", " : "", loc[i].index);
	}
	if (!running) {
		quit = true;
		return;
	}
	snprintf(label, sizeof label,
	         "This console runs %d backfill%s (%s): quitting stops %s, and %s jobs go "
	         "back to queued for any cleaner to resume. Quit? y/n ",
	         running, running == 1 ? "" : "s", names, running == 1 ? "it" : "them", running == 1 ? "its" : "their");
	ui_confirm(label, quit_answer, NULL);
}

/* ------------------------------------------------------------ prompts */

static struct {
	bool active;
	bool confirm; /* one key answers: y yes, anything else no */
	char label[768];
	char buf[512];
	size_t len;
	ui_prompt_fn done;
	void (*yes_no)(bool yes, void *ctx);
	void (*live)(const char *text, void *ctx); /* after every edit */
	void (*complete)(char *buf, size_t size);  /* Tab */
	void *ctx;
	char origin[64]; /* the action that asked: its answer is of that action */
} prompt;

void ui_prompt(const char *label, const char *initial, ui_prompt_fn done, void *ctx)
{
	memset(&prompt, 0, sizeof prompt);
	prompt.active = true;
	snprintf(prompt.label, sizeof prompt.label, "%s", label);
	snprintf(prompt.buf, sizeof prompt.buf, "%s", initial ? initial : "");
	prompt.len = strlen(prompt.buf);
	prompt.done = done;
	prompt.ctx = ctx;
	snprintf(prompt.origin, sizeof prompt.origin, "%s", cur_origin);
	need_draw = true;
}

void ui_prompt_live(void (*live)(const char *text, void *ctx))
{
	prompt.live = live;
}

void ui_confirm(const char *label, void (*answer)(bool yes, void *ctx), void *ctx)
{
	memset(&prompt, 0, sizeof prompt);
	prompt.active = prompt.confirm = true;
	snprintf(prompt.label, sizeof prompt.label, "%s", label);
	prompt.yes_no = answer;
	prompt.ctx = ctx;
	snprintf(prompt.origin, sizeof prompt.origin, "%s", cur_origin);
	need_draw = true;
}

static void apply(reaction_t r);

static void prompt_end(bool ok)
{
	ui_prompt_fn fn = prompt.done;
	void *ctx = prompt.ctx;
	char text[512];

	snprintf(text, sizeof text, "%s", prompt.buf);
	prompt.active = false;
	need_draw = true;
	set_origin(prompt.origin);
	apply(fn(ok ? text : NULL, ctx));
	set_origin(NULL);
}

static void prompt_key(int key)
{
	if (prompt.confirm) {
		void (*fn)(bool, void *) = prompt.yes_no;
		prompt.active = false;
		need_draw = true;
		set_origin(prompt.origin);
		fn(key == 'y' || key == 'Y', prompt.ctx);
		set_origin(NULL);
		return;
	}
	if (key == '\n' || key == '\r' || key == KEY_ENTER) {
		prompt_end(true);
		return;
	}
	if (key == BS_KEY_ESC || key == BS_CTRL('c') || key == BS_CTRL('g')) {
		prompt_end(false);
		return;
	}
	if (key == '\t' && prompt.complete) {
		prompt.complete(prompt.buf, sizeof prompt.buf);
		prompt.len = strlen(prompt.buf);
	} else if (key == KEY_BACKSPACE || key == 127 || key == 8) {
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
	} else {
		return;
	}
	if (prompt.live)
		prompt.live(prompt.buf, prompt.ctx);
	need_draw = true;
}

/* ------------------------------------------------------------ the configuration file */

/*
 * The console follows its configuration file. Every configuration it read
 * is kept until the end (loaded[]): the lanes' stores and the backfills
 * borrow them (worker_set_config). Checking a changed shard list against
 * the shards takes a lane (the UI thread never calls a shard): the check's
 * verdict comes back through cf_pending, under snap_lock, and is applied on
 * the next tick.
 */
#define MAX_LOADED 256
#define LIST_CHECK_CAP_S 2.0

static struct {
	bs_config_t *loaded[MAX_LOADED]; /* the UI thread's; [0] is main.c's (not ours to free) */
	int nloaded;
	bool known; /* st below is the file as last read */
	struct stat st;
	int64_t next_poll_us;
	bool checking; /* a shard list check is on the status lane */
} cf;

/* A check's verdict (snap_lock). */
static struct {
	bool ready;
	bs_config_t *nc;
	int rc;
	char err[1024], unchecked[512];
} cf_pending;

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* "+s3 -s1, s2 drain: true": what changed in the shard list and its drains. */
static void config_diff(char *buf, size_t n, const bs_config_t *a, const bs_config_t *b)
{
	size_t o = 0;
	int i, j;

	buf[0] = 0;
	for (i = 0; i < b->nshards; i++) {
		for (j = 0; j < a->nshards && strcmp(a->shards[j].name, b->shards[i].name); j++)
			;
		if (j == a->nshards) {
			if (o < n)
				o += (size_t)snprintf(buf + o, n - o, "%s+%s", o ? ", " : "", b->shards[i].name);
		} else if (a->shards[j].drain != b->shards[i].drain && o < n) {
			o += (size_t)snprintf(buf + o, n - o, "%s%s drain: %s", o ? ", " : "", b->shards[i].name,
			                      b->shards[i].drain ? "true" : "false");
		}
	}
	for (j = 0; j < a->nshards; j++) {
		for (i = 0; i < b->nshards && strcmp(a->shards[j].name, b->shards[i].name); i++)
			;
		if (i == b->nshards && o < n)
			o += (size_t)snprintf(buf + o, n - o, "%s-%s", o ? ", " : "", a->shards[j].name);
	}
	if (!o && !bs_config_same_shards(a, b))
		snprintf(buf, n, "shard addresses");
}

static void config_use(bs_config_t *nc, const char *unchecked)
{
	char diff[512];

	config_diff(diff, sizeof diff, ui.cfg, nc);
	if (worker_set_config(nc) < 0) {
		ui_err("%s not used: %s", nc->path, bs_last_error());
		bs_config_free(nc);
		return;
	}
	cf.loaded[cf.nloaded++] = nc;
	ui.cfg = nc;
	ui.nshards = nc->nshards;
	if (nc->read_only && !ui.read_only) {
		ui.read_only = true;
		actions_strip_dangerous();
	}
	if (unchecked && unchecked[0])
		ui_err("reloaded %s (%s); not checked against every shard: %s", nc->path, diff[0] ? diff : "settings",
		       unchecked);
	else
		ui_msg("reloaded %s%s%s%s", nc->path, diff[0] ? " (" : "", diff, diff[0] ? ")" : ": no shard changed");
	need_draw = need_clear = true;
	reload_top();
}

typedef struct {
	bs_config_t *nc;
} cfcheck_t;

/* On the status lane: the new shard list against the shards. */
static void config_check_work(bs_store_t *st, void *arg)
{
	cfcheck_t *q = arg;
	char unchecked[512];
	int rc;

	(void)st;
	rc = bs_shard_list_check(q->nc, LIST_CHECK_CAP_S, unchecked, sizeof unchecked);
	snap_lock();
	cf_pending.ready = true;
	cf_pending.nc = q->nc;
	cf_pending.rc = rc;
	snprintf(cf_pending.err, sizeof cf_pending.err, "%s", rc < 0 ? bs_last_error() : "");
	snprintf(cf_pending.unchecked, sizeof cf_pending.unchecked, "%s", unchecked);
	snap_unlock();
	q->nc = NULL;
	worker_published();
}

static void config_check_free(void *arg)
{
	cfcheck_t *q = arg;

	if (q)
		bs_config_free(q->nc); /* dropped before it ran (the console is closing) */
	free(q);
}

/* A check's verdict: the new list used, or refused and freed. */
static void config_check_done(void)
{
	bs_config_t *nc;
	int rc;
	char err[1024], unchecked[512];

	snap_lock();
	if (!cf_pending.ready) {
		snap_unlock();
		return;
	}
	nc = cf_pending.nc;
	rc = cf_pending.rc;
	snprintf(err, sizeof err, "%s", cf_pending.err);
	snprintf(unchecked, sizeof unchecked, "%s", cf_pending.unchecked);
	memset(&cf_pending, 0, sizeof cf_pending);
	snap_unlock();
	cf.checking = false;
	if (rc < 0) {
		ui_err("%s not reloaded, its shard list disagrees with the shards (the console keeps its "
		       "configuration): %s",
		       nc->path, err);
		bs_config_free(nc);
		return;
	}
	config_use(nc, unchecked);
}

/* Read the file again (asked: `:reload`; else only when it changed). */
static void config_reload(bool asked)
{
	bs_config_t *nc = NULL;
	const char *path = ui.cfg ? ui.cfg->path : NULL;
	struct stat now;
	cfcheck_t *q;

	if (!path)
		return;
	if (cf.checking) {
		if (asked)
			ui_msg("the shard list of %s is being checked against the shards ...", path);
		return;
	}
	if (stat(path, &now) < 0) {
		if (asked || cf.known)
			ui_err("%s: %s; the console keeps the configuration it has", path, strerror(errno));
		cf.known = false;
		return;
	}
	if (!asked && cf.known && same_file(&now, &cf.st))
		return;
	cf.st = now;
	cf.known = true;
	if (cf.nloaded == MAX_LOADED) {
		ui_err("%s changed: too many reloads in this console; restart it to read the file", path);
		return;
	}
	if (bs_config_load(&nc, path) < 0) {
		ui_err("%s not reloaded (the console keeps its configuration): %s", path, bs_last_error());
		return;
	}
	if (ui.read_only)
		nc->read_only = true; /* --read-only holds */
	if (bs_config_same_shards(ui.cfg, nc)) {
		config_use(nc, NULL);
		return;
	}
	if (!(q = calloc(1, sizeof *q))) {
		bs_config_free(nc);
		ui_err("out of memory");
		return;
	}
	q->nc = nc;
	cf.checking = true;
	ui_msg("%s changed its shard list: checking it against the shards ...", path);
	if (worker_submit(LANE_STATUS, NULL, false, config_check_work, q, config_check_free) != 0)
		cf.checking = false;
}

/* Each tick: a check's verdict, and the file polled once a second. */
static void config_follow(void)
{
	int64_t now = now_us();

	config_check_done();
	if (now < cf.next_poll_us)
		return;
	cf.next_poll_us = now + 1000000;
	config_reload(false);
}

/* ------------------------------------------------------------ commands */

/* The top screens and the pages, from views/screens.h. */
#define SCREEN_PTR_(X, id, name, key, keyname, help) &view_##name,
static const struct view_ops *screens[] = { BS_SCREENS(SCREEN_PTR_, _) };
static const struct view_ops *views_all[] = { BS_SCREENS(SCREEN_PTR_, _) BS_PAGES(SCREEN_PTR_, _) };
#undef SCREEN_PTR_
#define NSCREENS ((int)(sizeof screens / sizeof screens[0]))
#define NVIEWS ((int)(sizeof views_all / sizeof views_all[0]))

const struct view_ops *console_view(int k)
{
	return k >= 0 && k < NVIEWS ? views_all[k] : NULL;
}

/* The top screen a number key opens, NULL for any other action. */
static const struct view_ops *screen_of(action_t a)
{
	switch (a) {
#define SCREEN_CASE_(X, id, name, key, keyname, help) \
	case ACT_SCREEN_##id: return &view_##name;
		BS_SCREENS(SCREEN_CASE_, _)
#undef SCREEN_CASE_
	default: return NULL;
	}
}

/* The view that runs `:cmd ARG` (view_ops.command), else NULL. */
static const struct view_ops *command_view(const char *cmd)
{
	for (int i = 0; i < NVIEWS; i++)
		if (views_all[i]->command && strcmp(views_all[i]->command, cmd) == 0)
			return views_all[i];
	return NULL;
}

/* What `:` takes besides the screens' names and the views' commands. */
static const char *const commands[] = {
	"refresh", "reload", "filter", "pause", "help", "quit", "q", "q!",
};

/* Every command `:` takes, for Tab and for the error that lists them: the
 * screens first (a prefix of one will do), then the views' commands, then
 * the console's own. k-th, NULL past the last; *arg its argument's name
 * (NULL: none). */
static const char *command_at(int k, const char **arg)
{
	*arg = NULL;
	if (k < NSCREENS)
		return screens[k]->name;
	k -= NSCREENS;
	for (int i = NVIEWS - 1; i >= 0; i--) /* the pages' first (:entity before :explain) */
		if (views_all[i]->command && k-- == 0) {
			*arg = views_all[i]->command_help;
			return views_all[i]->command;
		}
	if (k < (int)(sizeof commands / sizeof commands[0])) {
		if (!strcmp(commands[k], "refresh"))
			*arg = "N";
		return commands[k];
	}
	return NULL;
}

/* Tab on the command line: the command completed when one fits, else as
 * far as every candidate agrees, the candidates named on the status line. */
static void command_complete(char *buf, size_t size)
{
	const char *p = buf, *first = NULL;
	char cands[512] = "";
	size_t len, common = 0, o = 0;
	int n = 0, i;
	const char *c, *argname;

	while (*p == ' ' || *p == ':')
		p++;
	len = strlen(p);
	if (strchr(p, ' '))
		return; /* completes the command, not its argument */
	for (i = 0; (c = command_at(i, &argname)); i++) {
		if (strncmp(c, p, len) != 0)
			continue;
		if (!first) {
			first = c;
			common = strlen(c);
		} else {
			size_t k = 0;
			while (k < common && c[k] == first[k])
				k++;
			common = k;
		}
		n++;
		if (o + strlen(c) + 3 < sizeof cands)
			o += (size_t)snprintf(cands + o, sizeof cands - o, "%s:%s", o ? "  " : "", c);
	}
	if (n == 0) {
		ui_err("no command starts with '%s'", p);
		return;
	}
	if (n == 1)
		snprintf(buf, size, "%s ", first);
	else {
		snprintf(buf, size, "%.*s", (int)common, first);
		ui_msg("%s", cands);
	}
}

static const struct view_ops *screen_named(const char *cmd, bool *ambiguous)
{
	const struct view_ops *found = NULL;
	size_t len = strlen(cmd);
	int i;

	*ambiguous = false;
	for (i = 0; i < NSCREENS; i++) {
		if (strcmp(screens[i]->name, cmd) == 0)
			return screens[i];
		if (strncmp(screens[i]->name, cmd, len) == 0) {
			if (found)
				*ambiguous = true;
			found = screens[i];
		}
	}
	return *ambiguous ? NULL : found;
}

static reaction_t command_refresh(const char *arg)
{
	char *end = NULL;
	double s = strtod(arg, &end);

	if (!arg[0] || (end && *end) || !(s >= REFRESH_MIN_S && s <= REFRESH_MAX_S)) {
		ui_err(":refresh takes seconds between %g and %g (as + and - step)", REFRESH_MIN_S, REFRESH_MAX_S);
		return R_REDRAW;
	}
	ui.refresh_s = s;
	ui_msg("refresh every %gs", s);
	return R_RELOAD;
}

static reaction_t command_done(const char *text, void *ctx)
{
	char cmd[64] = "", arg[256] = "";
	const struct view_ops *found;
	bool ambiguous;

	(void)ctx;
	if (!text)
		return R_REDRAW;
	while (*text == ' ' || *text == ':')
		text++;
	if (sscanf(text, "%63s %255[^\n]", cmd, arg) < 1)
		return R_REDRAW;
	{
		char o[64];
		snprintf(o, sizeof o, ":%.40s", cmd);
		set_origin(o);
	}
	if (strcmp(cmd, "q!") == 0) {
		quit = true;
		return R_REDRAW;
	}
	if (strcmp(cmd, "q") == 0 || strcmp(cmd, "quit") == 0)
		return R_QUIT;
	if (strcmp(cmd, "refresh") == 0)
		return command_refresh(arg);
	if (strcmp(cmd, "reload") == 0) {
		config_reload(true);
		return R_REDRAW;
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
	if ((found = command_view(cmd)))
		return found->run(arg);
	found = screen_named(cmd, &ambiguous);
	if (!found) {
		if (ambiguous) {
			ui_err("':%s' is ambiguous (Tab lists what it may be)", cmd);
		} else {
			char list[512] = "";
			size_t o = 0;
			const char *c, *argname;
			for (int i = 0; (c = command_at(i, &argname)) && o + 64 < sizeof list; i++)
				if (strcmp(c, "quit") && strcmp(c, "q!"))
					o += (size_t)snprintf(list + o, sizeof list - o, "%s:%s%s%s", o ? " " : "", c,
					                      argname ? " " : "", argname ? argname : "");
			ui_err("unknown command ':%s' (%s; Tab completes)", cmd, list);
		}
		return R_REDRAW;
	}
	ui_switch(found);
	if (arg[0])
		ui_set_filter(arg);
	return R_REDRAW;
}

/* The `/` filter: applied as it is typed (a screen's own filter, such as
 * the entities' index query, only on Enter); Esc puts the old one back. */
static char filter_before[256];
#define FILTER_HINT "/ edits the filter in force: Ctrl-U clears it, Esc keeps it"

static void filter_live(const char *text, void *ctx)
{
	(void)ctx;
	if (top() && top()->filter_live)
		top()->filter_live(text);
	else if (!(top() && top()->filter))
		ui_set_filter(text);
}

static reaction_t filter_done(const char *text, void *ctx)
{
	(void)ctx;
	if (strcmp(msg, FILTER_HINT) == 0) /* of the prompt, which is gone */
		msg[0] = 0;
	if (!text) {
		if (top() && top()->filter_live)
			top()->filter_live(filter_before);
		else if (!(top() && top()->filter))
			ui_set_filter(filter_before);
		return R_REDRAW;
	}
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
	case R_NONE:
	case R_UNHANDLED: break;
	case R_REDRAW: need_draw = true; break;
	case R_RELOAD:
		reload_top();
		need_draw = true;
		break;
	case R_POP: pop(); break;
	case R_QUIT: ask_quit(); break;
	}
}

static int root_index(void)
{
	int i;

	for (i = 0; depth > 0 && i < NSCREENS; i++)
		if (screens[i] == stack[0].v)
			return i;
	return 0;
}

static reaction_t refresh_step(action_t a)
{
	static const double steps[] = { 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600 };
	int i, n = (int)(sizeof steps / sizeof steps[0]);

	for (i = 0; i < n - 1 && steps[i] < ui.refresh_s - 1e-9; i++)
		;
	if (a == ACT_FASTER)
		i = i > 0 && steps[i] >= ui.refresh_s - 1e-9 ? i - 1 : i;
	else if (steps[i] <= ui.refresh_s + 1e-9)
		i = i < n - 1 ? i + 1 : n - 1;
	ui.refresh_s = steps[i];
	ui_msg("refresh every %gs", ui.refresh_s);
	next_reload = now_us() + (int64_t)(ui.refresh_s * 1e6);
	return R_REDRAW;
}

static reaction_t global_action(action_t a)
{
	const struct view_ops *to = screen_of(a);

	if (to) {
		ui_switch(to);
		return R_REDRAW;
	}
	switch (a) {
	case ACT_HELP: text_open_help(top()); return R_REDRAW;
	case ACT_COMMAND:
		ui_prompt(":", "", command_done, NULL);
		prompt.complete = command_complete;
		return R_REDRAW;
	case ACT_FILTER:
		snprintf(filter_before, sizeof filter_before, "%s", ui_filter());
		/* the filter in force is there to edit (a query's value to
		 * change, a typo to mend): said, so that nothing typed is
		 * taken for a new filter while it lengthens the old one */
		if (ui_filter()[0])
			ui_msg("%s", FILTER_HINT);
		ui_prompt("/", ui_filter(), filter_done, NULL);
		ui_prompt_live(filter_live);
		return R_REDRAW;
	case ACT_BACK:
		if (ui_filter()[0] && !(top() && top()->filter)) {
			ui_set_filter("");
			return R_RELOAD;
		}
		return R_POP;
	case ACT_QUIT: return R_QUIT;
	case ACT_NEXT_SCREEN: ui_switch(screens[(root_index() + 1) % NSCREENS]); return R_REDRAW;
	case ACT_PREV_SCREEN: ui_switch(screens[(root_index() + NSCREENS - 1) % NSCREENS]); return R_REDRAW;
	case ACT_RELOAD: ui_msg("reloading"); return R_RELOAD;
	case ACT_PAUSE:
		ui.paused = !ui.paused;
		ui_msg(ui.paused ? "refresh paused (z resumes)" : "refresh resumed");
		return ui.paused ? R_REDRAW : R_RELOAD;
	case ACT_FASTER:
	case ACT_SLOWER: return refresh_step(a);
	default: return R_UNHANDLED;
	}
}

/* "'x'", "End", "Ctrl-X", "F5": a key as the status line names it, as an
 * operator types it (the help's names), never curses' KEY_END. */
static const char *key_label(char *buf, size_t n, int key)
{
	static const struct {
		int key;
		const char *name;
	} names[] = {
		{ ' ', "Space" },
		{ '\n', "Enter" },
		{ '\r', "Enter" },
		{ KEY_ENTER, "Enter" },
		{ '\t', "Tab" },
		{ KEY_BTAB, "Shift-Tab" },
		{ 27, "Esc" },
		{ 127, "Backspace" },
		{ KEY_BACKSPACE, "Backspace" },
		{ KEY_UP, "Up" },
		{ KEY_DOWN, "Down" },
		{ KEY_LEFT, "Left" },
		{ KEY_RIGHT, "Right" },
		{ KEY_HOME, "Home" },
		{ KEY_END, "End" },
		{ KEY_PPAGE, "PgUp" },
		{ KEY_NPAGE, "PgDn" },
		{ KEY_IC, "Insert" },
		{ KEY_DC, "Delete" },
		{ KEY_SLEFT, "Shift-Left" },
		{ KEY_SRIGHT, "Shift-Right" },
		{ KEY_SR, "Shift-Up" },
		{ KEY_SF, "Shift-Down" },
		{ KEY_SHOME, "Shift-Home" },
		{ KEY_SEND, "Shift-End" },
	};
	const char *k;
	size_t i;

	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		if (names[i].key == key) {
			snprintf(buf, n, "%s", names[i].name);
			return buf;
		}
	if (key > 32 && key < 127)
		snprintf(buf, n, "'%c'", key);
	else if (key >= 0 && key < 32)
		snprintf(buf, n, "Ctrl-%c", key + '@');
	else if (key >= KEY_F(1) && key <= KEY_F(63))
		snprintf(buf, n, "F%d", key - KEY_F0);
	else if ((k = keyname(key)))
		snprintf(buf, n, "%s", strncmp(k, "KEY_", 4) == 0 ? k + 4 : k);
	else
		snprintf(buf, n, "key %d", key);
	return buf;
}

void console_key(int key)
{
	action_t a;
	bool stripped;
	reaction_t r;
	char kl[32];

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
		set_origin("mouse");
		r = top()->key(ACT_NONE, KEY_MOUSE);
		if (r == R_UNHANDLED && (ui_mouse.bstate & (BUTTON1_DOUBLE_CLICKED)))
			r = top()->key(ACT_OPEN, '\n');
		apply(r);
		set_origin(NULL);
		return;
	}
	a = action_for_key(key, top()->scope, &stripped);
	if (stripped) {
		ui_err("read-only: this key changes data and is disabled");
		return;
	}
	action_origin(a);
	r = top()->key(a, key);
	if (r == R_UNHANDLED)
		r = global_action(a);
	if (r == R_UNHANDLED)
		ui_msg("%s does nothing on the %s screen (? lists its keys)", key_label(kl, sizeof kl, key),
		       top()->name);
	apply(r);
	set_origin(NULL);
}

void console_tick(void)
{
	int64_t now = now_us();
	char note[1024];
	bool err;

	if (worker_take_notice(note, sizeof note, &err)) {
		if (err)
			ui_err("%s", note);
		else
			ui_msg("%s", note);
	}
	{
		char *pt, *px;

		/* offered, not opened: a page waiting for the operator's `y`
		 * (an edit's change) is not replaced behind their back */
		if (worker_take_page(&pt, &px)) {
			text_offer(pt, px);
			need_draw = true;
		} else {
			free(pt);
			free(px);
		}
	}
	config_follow();
	if (pop_wanted) {
		if (top() == pop_wanted)
			pop();
		pop_wanted = NULL;
	}
	/* and opened once nothing waits: no such page, no prompt being typed */
	if (!prompt.active && text_held())
		text_release();
	if (msg[0] && now > msg_until) {
		msg[0] = 0;
		need_draw = true;
	}
	if (!ui.paused && now >= next_reload)
		reload_top();
}

/* ------------------------------------------------------------ drawing */

/* The breadcrumb: every screen of the stack, "shards > s1 > entities > 71f0c4d2". */
static void breadcrumb(char *buf, size_t n)
{
	size_t o = 0;
	int d;

	buf[0] = 0;
	for (d = 0; d < depth && o + 4 < n; d++)
		o += (size_t)snprintf(buf + o, n - o, "%s%s", d ? " > " : "",
		                      stack[d].crumb[0] ? stack[d].crumb : stack[d].v->name);
}

/* The tabs: "[1 shards]  2 indexes ..." in full, or with only the current
 * one named when short is set. */
static void tabs_text(char *buf, size_t n, bool brief)
{
	int root = root_index(), i;
	size_t o = 0;

	buf[0] = 0;
	for (i = 0; i < NSCREENS && o + 4 < n; i++) {
		bool cur = depth > 0 && i == root;
		if (cur)
			o += (size_t)snprintf(buf + o, n - o, "[%d %s]", i + 1, screens[i]->name);
		else if (brief)
			o += (size_t)snprintf(buf + o, n - o, " %d ", i + 1);
		else
			o += (size_t)snprintf(buf + o, n - o, " %d %s ", i + 1, screens[i]->name);
	}
}

static void draw_title(void)
{
	char tabs[256], crumb[400], right[64];
	int x = 0, room;

	ui_color(C_TITLE, true);
	move(0, 0);
	hline(' ', COLS);
	x += ui_put(0, x, COLS - x, " bagstore ");
	snprintf(right, sizeof right, "%d shards  ? help ", ui.nshards);
	breadcrumb(crumb, sizeof crumb);
	tabs_text(tabs, sizeof tabs, false);
	room = COLS - x - ui_width(right) - (depth > 1 ? ui_width(crumb) + 3 : 0);
	if (ui_width(tabs) > room)
		tabs_text(tabs, sizeof tabs, true);
	attron(A_BOLD);
	x += ui_put(0, x, COLS - x, tabs);
	attroff(A_BOLD);
	if (depth > 1) {
		const char *c = crumb;
		int w = COLS - x - 3 - (COLS - x - 3 > ui_width(crumb) + ui_width(right) ? ui_width(right) : 0);
		/* cut from the left: the screen shown now stays in sight */
		while (*c && ui_width(c) > w - 1)
			c++;
		x += ui_put(0, x, COLS - x, "  ");
		if (c != crumb) {
			while ((*c & 0xC0) == 0x80)
				c++;
			x += ui_put(0, x, COLS - x, ui.ascii ? "<" : "…");
		}
		x += ui_put(0, x, COLS - x, c);
	}
	if (COLS - x > ui_width(right))
		ui_put(0, COLS - ui_width(right), ui_width(right), right);
	ui_color(C_TITLE, false);
}

/* Lines of text over the bottom rows, ending at row `last`, wrapped to the
 * terminal's width; at most max lines (the last ones kept). Returns the
 * first row used. */
static int draw_wrapped_up(const char *s, int last, int max)
{
	int starts[16], lens[16], n = ui_wrap(s, COLS, starts, lens, 16), i, k = 0, row;

	if (n > max) {
		k = n - max;
		n = max;
	}
	row = last - n + 1;
	for (i = 0; i < n; i++) {
		char line[1024];
		snprintf(line, sizeof line, "%.*s", lens[k + i], s + starts[k + i]);
		move(row + i, 0);
		clrtoeol();
		ui_put(row + i, 0, COLS, line);
	}
	return row;
}

/* The prompt on the bottom row: its label wrapped above when the two do not
 * fit on one line, and the typed text's end always in sight. */
static void draw_prompt(void)
{
	int y = LINES - 1, lw = ui_width(prompt.label), bw = ui_width(prompt.buf), x, top_row = y;
	const char *b = prompt.buf;

	if (lw + bw + 2 <= COLS) {
		move(y, 0);
		clrtoeol();
		x = ui_put(y, 0, COLS, prompt.label);
	} else {
		top_row = draw_wrapped_up(prompt.label, y - 1, LINES / 3 > 1 ? LINES / 3 : 1);
		move(y, 0);
		clrtoeol();
		x = ui_put(y, 0, COLS, "> ");
	}
	while (*b && ui_width(b) > COLS - x - 1)
		b++;
	while ((*b & 0xC0) == 0x80)
		b++;
	x += ui_put(y, x, COLS - x, b);
	if (msg[0] && top_row > 1) {
		if (msg_err)
			ui_color(C_BAD, true);
		draw_wrapped_up(msg, top_row - 1, 3);
		if (msg_err)
			ui_color(C_BAD, false);
	}
	move(y, x < COLS ? x : COLS - 1);
}

static void draw_status(void)
{
	char right[160];
	int y = LINES - 1, rw;

	move(y, 0);
	clrtoeol();
	if (prompt.active) {
		draw_prompt();
		return;
	}
	snprintf(right, sizeof right, "%s%s%s refresh %gs%s ",
	         !text_held()     ? ""
	         /* y and q are the waiting page's keys, not the help's over it */
	         : text_waiting() && ui_top() == &view_text ? " result waiting (y/q) |"
	                          : " result waiting |",
	         ui.read_only ? " READ-ONLY |" : "", ui_filter()[0] ? " filtered |" : "", ui.refresh_s,
	         ui.paused ? " PAUSED" : "");
	rw = ui_width(right);
	ui_color(C_STATUS, true);
	hline(' ', COLS);
	if (msg[0] && ui_width(msg) > COLS - rw - 2) {
		/* a long message: whole, over the rows above */
		ui_color(C_STATUS, false);
		if (msg_err)
			ui_color(C_BAD, true);
		/* up to a third of the screen: the start of a message is what says what happened */
		draw_wrapped_up(msg, y - 1, LINES / 3 > 4 ? LINES / 3 : 4);
		if (msg_err)
			ui_color(C_BAD, false);
		ui_color(C_STATUS, true);
	} else if (msg[0]) {
		if (msg_err)
			ui_color(C_BAD, true);
		ui_put(y, 1, COLS - rw - 2, msg);
		if (msg_err)
			ui_color(C_BAD, false);
	} else if (top()) {
		char left[400];
		snprintf(left, sizeof left, "%s%s%s", stack[depth - 1].crumb[0] ? stack[depth - 1].crumb : top()->name,
		         ui_filter()[0] ? "  /" : "", ui_filter());
		ui_put(y, 1, COLS - rw - 2, left);
	}
	if (COLS > rw)
		ui_put(y, COLS - rw, rw, right);
	ui_color(C_STATUS, false);
}

static void draw_too_small(void)
{
	char line[128];

	snprintf(line, sizeof line, "terminal too small: %dx%d (at least %dx%d); Q quits", COLS, LINES, MIN_COLS,
	         MIN_LINES);
	draw_wrapped_up(line, LINES / 2 < LINES - 1 ? LINES / 2 : LINES - 1, LINES);
}

void console_draw(void)
{
	if (need_clear) {
		clear();
		need_clear = false;
	}
	erase();
	if (COLS < MIN_COLS || LINES < MIN_LINES) {
		draw_too_small();
		if (prompt.active)
			draw_prompt();
	} else {
		draw_title();
		if (top())
			top()->draw(1, LINES - 2, COLS);
		draw_status();
	}
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
	static const char *const with_value[] = { "--headless", "--dump-dir", "--refresh", "--timeout" };
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
	if ((v = opt_value(argc, argv, "--refresh"))) {
		char *end = NULL;
		double r = strtod(v, &end);
		if (!(r >= REFRESH_MIN_S && r <= REFRESH_MAX_S) || (end && *end)) {
			fprintf(stderr, "bagstore: --refresh takes seconds between %g and %g\n", REFRESH_MIN_S,
			        REFRESH_MAX_S);
			return 2;
		}
		ui.refresh_s = r;
	}
	if ((v = opt_value(argc, argv, "--timeout"))) {
		char *end = NULL;
		double t = strtod(v, &end);
		if (!(t > 0 && t <= 3600) || end == v || *end) {
			fprintf(stderr, "bagstore: --timeout takes seconds, more than 0 and at most 3600 (got '%s')\n",
			        v);
			return 2;
		}
		timeout = t;
	}
	ui.read_only = cfg->read_only; /* main.c folds --read-only into it */
	ui.headless = script != NULL;
	ui.nshards = cfg->nshards;
	cf.loaded[cf.nloaded++] = (bs_config_t *)cfg; /* main.c's: not freed here */
	if (cfg->path && stat(cfg->path, &cf.st) == 0)
		cf.known = true;
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
	/* After loc is read (a later setlocale may reuse its string): the
	 * terminal's characters, but numbers as SQL, JSON and the command
	 * line write them: 0.5 where de_DE's LC_NUMERIC says 0,5, in what the
	 * screens show and what they read (an entity's float edited, a pace) */
	setlocale(LC_NUMERIC, "C");
	signal(SIGPIPE, SIG_IGN);

	if (worker_start(cfg, timeout) < 0) {
		fprintf(stderr, "bagstore: %s\n", bs_last_error());
		status = 1;
	} else if (ui.headless) {
		status = headless_run(script, dumpdir ? dumpdir : ".");
	} else {
		status = interactive();
	}
	/* screens given up on the way out clean after themselves (an edit's file) */
	close_above(0);
	/* the lanes and backfills read cfg until they are joined */
	if (!worker_stop(3.0)) {
		/* a lane is stuck in a hung shard: leave without freeing under it */
		fflush(stdout);
		fflush(stderr);
		_exit(status);
	}
	for (int i = 1; i < cf.nloaded; i++)
		bs_config_free(cf.loaded[i]);
	return status;
}

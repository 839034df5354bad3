/*
 * text.c - a page of text: the help screen (generated from the action
 * table), DDL previews, change diffs, edit conflicts, verify results. A page
 * may offer one confirmation, run by `y`, and a cancel hook run when it
 * closes without it. Lines wider than the terminal wrap; the page scrolls
 * by the lines drawn, so every line can be reached at any size.
 *
 * The help is a page of its own (view_help): opened over a page, it is laid
 * over it, and q comes back to the page as it was. Were it the same page,
 * opening it would replace a change waiting for its `y` and run its cancel
 * hook: an edit given up by asking for help.
 *
 * A page no key asked for (a request's result, arriving from a lane) is
 * offered (text_offer), not opened: while a page waits for the operator
 * (its `y`, or a cancel hook), it is held, the status line and the
 * page's `y` line say so, and it opens once that page is left. Opened at once, it would replace the
 * page and run its cancel hook: an edit given up because an :explain (or
 * an earlier edit's conflict) finished, and the `y` meant for the edit
 * pressed on a page the operator did not ask for.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console_int.h"

typedef struct {
	char title[256];
	char **lines;
	int n;
	int top;
	bool at_end; /* End pressed: the last line stays in sight whatever the height */
	reaction_t (*confirm)(void *ctx);
	void (*cancel)(void *ctx);
	void *ctx;
	char confirm_label[256];
	int last_h;
} page_t;

static page_t tv; /* view_text: the page */
static page_t hv; /* view_help: the help, never a confirmation */

static void page_clear(page_t *p)
{
	int i;

	for (i = 0; i < p->n; i++)
		free(p->lines[i]);
	free(p->lines);
	p->lines = NULL;
	p->n = 0;
	p->top = 0;
	p->at_end = false;
}

/* The page's text, cut into its lines, under a title. */
static void page_fill(page_t *p, const char *title, const char *text)
{
	const char *t = text, *nl;

	page_clear(p);
	snprintf(p->title, sizeof p->title, "%s", title);
	for (;;) {
		size_t len;
		char **lines;

		nl = strchr(t, '\n');
		len = nl ? (size_t)(nl - t) : strlen(t);
		if (!nl && len == 0)
			break;
		if (!(lines = realloc(p->lines, sizeof(char *) * (size_t)(p->n + 1))))
			break;
		p->lines = lines;
		if (!(lines[p->n] = strndup(t, len)))
			break;
		p->n++;
		if (!nl)
			break;
		t = nl + 1;
	}
}

void text_open(const char *title, const char *text, reaction_t (*confirm)(void *ctx), void *ctx,
               const char *confirm_label)
{
	if (tv.cancel) { /* the page replaced is given up */
		void (*cancel)(void *) = tv.cancel;
		tv.cancel = NULL;
		cancel(tv.ctx);
	}
	page_fill(&tv, title, text);
	tv.confirm = ui.read_only ? NULL : confirm;
	tv.cancel = NULL;
	tv.ctx = ctx;
	snprintf(tv.confirm_label, sizeof tv.confirm_label, "%s", confirm_label ? confirm_label : "");
	ui_push_crumb(&view_text, tv.title);
}

void text_set_cancel(void (*cancel)(void *ctx))
{
	tv.cancel = cancel;
}

/* The result that arrived while a page waited, NULL none; a newer one
 * replaces it, as it would have replaced it on the screen. */
static char *held_title, *held_text;

/* Does a page wait for the operator: a `y` not pressed yet, or a cancel
 * hook that closing it without `y` would run? Both are cleared when it
 * closes (tv_close) or its `y` runs, so either means it is on the stack. */
bool text_waiting(void)
{
	return tv.confirm || tv.cancel;
}

bool text_held(void)
{
	return held_title != NULL;
}

void text_offer(char *title, char *text)
{
	free(held_title);
	free(held_text);
	held_title = title;
	held_text = text;
}

void text_release(void)
{
	char *title = held_title, *text = held_text;

	if (!title || text_waiting())
		return;
	held_title = held_text = NULL;
	text_open(title, text ? text : "", NULL, NULL, NULL);
	free(title);
	free(text);
}

static void add_action_lines(FILE *f, char scope, bool global)
{
	int i;

	for (i = 1; i < ACT_COUNT; i++) {
		const action_info_t *ai = &bs_action_info[i];
		bool is_global = strcmp(ai->scope, "*") == 0;

		if (global != is_global || (!global && !strchr(ai->scope, scope)))
			continue;
		if (!action_enabled((action_t)i))
			continue;
		fprintf(f, "  %-12s %s%s\n", ai->keyname, ai->help, ai->dangerous ? "  (changes data)" : "");
	}
}

void text_open_help(const struct view_ops *v)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	char title[128];
	/* over a screen its keys are listed, over a page the page's; over
	 * the help itself, only what holds everywhere */
	bool screen = v && v != &view_text && v != &view_help;

	if (!f)
		return;
	if (ui.read_only)
		fprintf(f, "READ-ONLY: the keys that change data are removed.\n\n");
	if (screen || v == &view_text) {
		if (screen)
			fprintf(f, "Keys of the %s screen:\n", v->name);
		else
			fprintf(f, "Keys of the page under this help (q goes back to it):\n");
		add_action_lines(f, v->scope, false);
		fprintf(f, "\n");
	}
#define HELP_SCREEN_(X, id, name, key, keyname, help) " :" #name
	fprintf(f, "Commands after ':' (Tab completes):\n"
	           " " BS_SCREENS(HELP_SCREEN_, _) "\n"
	                                           "                     switch screen (a prefix will do)\n");
#undef HELP_SCREEN_
	for (int k = 0; console_view(k); k++) {
		const struct view_ops *cv = console_view(k);
		char cmd[64];
		if (!cv->command)
			continue;
		snprintf(cmd, sizeof cmd, ":%s %s", cv->command, cv->command_help ? cv->command_help : "");
		fprintf(f, "  %-18s %s\n", cmd, cv->command_what ? cv->command_what : "");
	}
	fprintf(f,
	        "  :refresh SECS      the refresh interval (%g to %g)\n"
	        "  :reload            read the configuration file again (it is also followed)\n"
	        "  :filter TEXT       the same as /\n"
	        "  :pause             pause the refresh\n"
	        "  :q                 quit (asks first while this console runs backfills)\n"
	        "  :q!                quit without asking\n"
	        "\nNumbers: ~ marks an estimate (# counts exactly); STALE marks data\n"
	        "older than its refresh, with its age.\n\n",
	        REFRESH_MIN_S, REFRESH_MAX_S);
	fprintf(f, "Everywhere:\n");
	add_action_lines(f, 0, true);
	fclose(f);
	snprintf(title, sizeof title, "help%s%s", screen ? ": " : "", screen ? v->name : "");
	/* laid over what is shown (brought back when it is the top already):
	 * the page under it keeps its text, its `y` and its cancel hook */
	page_fill(&hv, title, buf);
	ui_lay_over(&view_help, hv.title);
	free(buf);
}

/* The page as drawn at width w: every source line cut to fit. */
typedef struct {
	int line, start, len;
} seg_t;

static int segments(const page_t *p, seg_t **out, int w)
{
	seg_t *v = NULL;
	int n = 0, cap = 0, i;

	for (i = 0; i < p->n; i++) {
		/* 256 pieces at a time, as many times as the line needs: a long
		 * line (a value of 40 KB on a change page to confirm) is all there */
		const char *line = p->lines[i];
		int off = 0;
		for (;;) {
			int starts[256], lens[256], k, m = ui_wrap(line + off, w, starts, lens, 256);
			if (m == 0 && off == 0)
				starts[0] = lens[0] = 0, m = 1;
			for (k = 0; k < m; k++) {
				if (n == cap) {
					seg_t *nv = realloc(v, sizeof *v * (size_t)(cap = cap ? cap * 2 : 64));
					if (!nv)
						goto done;
					v = nv;
				}
				v[n++] = (seg_t){ i, off + starts[k], lens[k] };
			}
			if (m < 256 || starts[m - 1] + lens[m - 1] <= 0)
				break;
			off += starts[m - 1] + lens[m - 1];
			if (!line[off])
				break;
		}
	}
done:
	*out = v;
	return n;
}

static void page_draw(page_t *p, int y, int h, int w)
{
	int i, body = h - 1 - (p->confirm ? 2 : 0), n;
	seg_t *seg = NULL;

	p->last_h = body;
	ui_color(C_HEADER, true);
	ui_put(y, 0, w, p->title);
	ui_color(C_HEADER, false);
	n = segments(p, &seg, w);
	if (p->at_end || p->top > n - body)
		p->top = n - body;
	if (p->top < 0)
		p->top = 0;
	for (i = 0; i < body && p->top + i < n; i++) {
		const seg_t *sg = &seg[p->top + i];
		const char *l = p->lines[sg->line];
		int attr = l[0] == '+' ? C_GOOD : l[0] == '-' ? C_BAD : C_NORMAL;
		char part[1024];

		snprintf(part, sizeof part, "%.*s", sg->len, l + sg->start);
		if (attr != C_NORMAL)
			ui_color(attr, true);
		ui_put(y + 1 + i, 0, w, part);
		if (attr != C_NORMAL)
			ui_color(attr, false);
	}
	free(seg);
	if (n > body) {
		char more[64];
		snprintf(more, sizeof more, " lines %d-%d of %d ", p->top + 1, p->top + i, n);
		ui_color(C_DIM, true);
		ui_put(y, w - ui_width(more) > ui_width(p->title) ? w - ui_width(more) : w, w, more);
		ui_color(C_DIM, false);
	}
	if (p->confirm) {
		ui_color(C_WARN, true);
		/* a result held for this page is named where its keys are */
		ui_printf(y + h - 1, 0, w, "y: %s    q/Esc: cancel%s%s", p->confirm_label,
		          held_title ? "    either opens the result waiting: " : "", held_title ? held_title : "");
		ui_color(C_WARN, false);
	}
}

static reaction_t page_key(page_t *p, action_t a, int key)
{
	if (a == ACT_DOWN || a == ACT_UP || a == ACT_PGDN || a == ACT_PGUP || a == ACT_HOME || key == KEY_MOUSE)
		p->at_end = false;
	switch (a) {
	case ACT_DOWN: p->top++; return R_REDRAW;
	case ACT_UP: p->top--; return R_REDRAW;
	case ACT_PGDN: p->top += p->last_h > 1 ? p->last_h - 1 : 1; return R_REDRAW;
	case ACT_PGUP: p->top -= p->last_h > 1 ? p->last_h - 1 : 1; return R_REDRAW;
	case ACT_HOME: p->top = 0; return R_REDRAW;
	case ACT_END: p->at_end = true; return R_REDRAW;
	case ACT_CONFIRM:
		if (!p->confirm)
			return R_NONE;
		{
			reaction_t (*fn)(void *) = p->confirm;

			p->confirm = NULL; /* runs once */
			p->cancel = NULL;
			return fn(p->ctx);
		}
	default:
		if (key == KEY_MOUSE) {
			if (ui_mouse.bstate & BUTTON4_PRESSED)
				p->top -= 3;
			else if (ui_mouse.bstate & BUTTON5_PRESSED)
				p->top += 3;
			return R_REDRAW;
		}
		return R_UNHANDLED;
	}
}

static void tv_draw(int y, int h, int w)
{
	page_draw(&tv, y, h, w);
}

static reaction_t tv_key(action_t a, int key)
{
	return page_key(&tv, a, key);
}

/* The page closed (q, another screen): given up unless `y` ran. Not when
 * the help is laid over it: it stays on the stack under the help. */
static void tv_close(void)
{
	void (*cancel)(void *) = tv.cancel;

	tv.confirm = NULL;
	tv.cancel = NULL;
	if (cancel)
		cancel(tv.ctx);
}

const struct view_ops view_text = {
	.name = "text",
	.scope = 'T',
	.draw = tv_draw,
	.key = tv_key,
	.close = tv_close,
};

static void hv_draw(int y, int h, int w)
{
	page_draw(&hv, y, h, w);
}

static reaction_t hv_key(action_t a, int key)
{
	return page_key(&hv, a, key);
}

/* The text page's keys (scrolling, End); its `y` confirms nothing here. */
const struct view_ops view_help = {
	.name = "help",
	.scope = 'T',
	.draw = hv_draw,
	.key = hv_key,
};

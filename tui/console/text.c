/*
 * text.c - a page of text: the help screen (generated from the action
 * table), DDL previews, change diffs, edit conflicts, verify results. A page
 * may offer one confirmation, run by `y`, and a cancel hook run when it
 * closes without it. Lines wider than the terminal wrap; the page scrolls
 * by the lines drawn, so every line can be reached at any size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console_int.h"

static struct {
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
} tv;

static void tv_clear(void)
{
	int i;

	for (i = 0; i < tv.n; i++)
		free(tv.lines[i]);
	free(tv.lines);
	tv.lines = NULL;
	tv.n = 0;
	tv.top = 0;
	tv.at_end = false;
}

void text_open(const char *title, const char *text, reaction_t (*confirm)(void *ctx), void *ctx,
               const char *confirm_label)
{
	const char *p = text, *nl;

	if (tv.cancel) { /* the page replaced is given up */
		void (*cancel)(void *) = tv.cancel;
		tv.cancel = NULL;
		cancel(tv.ctx);
	}
	tv_clear();
	snprintf(tv.title, sizeof tv.title, "%s", title);
	for (;;) {
		size_t len;
		char **lines;

		nl = strchr(p, '\n');
		len = nl ? (size_t)(nl - p) : strlen(p);
		if (!nl && len == 0)
			break;
		if (!(lines = realloc(tv.lines, sizeof(char *) * (size_t)(tv.n + 1))))
			break;
		tv.lines = lines;
		if (!(lines[tv.n] = strndup(p, len)))
			break;
		tv.n++;
		if (!nl)
			break;
		p = nl + 1;
	}
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

	if (!f)
		return;
	if (ui.read_only)
		fprintf(f, "READ-ONLY: the keys that change data are removed.\n\n");
	if (v && v != &view_text) {
		fprintf(f, "Keys of the %s screen:\n", v->name);
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
	snprintf(title, sizeof title, "help%s%s", v && v != &view_text ? ": " : "",
	         v && v != &view_text ? v->name : "");
	text_open(title, buf, NULL, NULL, NULL);
	free(buf);
}

/* The page as drawn at width w: every source line cut to fit. */
typedef struct {
	int line, start, len;
} seg_t;

static int segments(seg_t **out, int w)
{
	seg_t *v = NULL;
	int n = 0, cap = 0, i;

	for (i = 0; i < tv.n; i++) {
		/* 256 pieces at a time, as many times as the line needs: a long
		 * line (a value of 40 KB on a change page to confirm) is all there */
		const char *line = tv.lines[i];
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

static void tv_draw(int y, int h, int w)
{
	int i, body = h - 1 - (tv.confirm ? 2 : 0), n;
	seg_t *seg = NULL;

	tv.last_h = body;
	ui_color(C_HEADER, true);
	ui_put(y, 0, w, tv.title);
	ui_color(C_HEADER, false);
	n = segments(&seg, w);
	if (tv.at_end || tv.top > n - body)
		tv.top = n - body;
	if (tv.top < 0)
		tv.top = 0;
	for (i = 0; i < body && tv.top + i < n; i++) {
		const seg_t *sg = &seg[tv.top + i];
		const char *l = tv.lines[sg->line];
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
		snprintf(more, sizeof more, " lines %d-%d of %d ", tv.top + 1, tv.top + i, n);
		ui_color(C_DIM, true);
		ui_put(y, w - ui_width(more) > ui_width(tv.title) ? w - ui_width(more) : w, w, more);
		ui_color(C_DIM, false);
	}
	if (tv.confirm) {
		ui_color(C_WARN, true);
		ui_printf(y + h - 1, 0, w, "y: %s    q/Esc: cancel", tv.confirm_label);
		ui_color(C_WARN, false);
	}
}

static reaction_t tv_key(action_t a, int key)
{
	if (a == ACT_DOWN || a == ACT_UP || a == ACT_PGDN || a == ACT_PGUP || a == ACT_HOME || key == KEY_MOUSE)
		tv.at_end = false;
	switch (a) {
	case ACT_DOWN: tv.top++; return R_REDRAW;
	case ACT_UP: tv.top--; return R_REDRAW;
	case ACT_PGDN: tv.top += tv.last_h > 1 ? tv.last_h - 1 : 1; return R_REDRAW;
	case ACT_PGUP: tv.top -= tv.last_h > 1 ? tv.last_h - 1 : 1; return R_REDRAW;
	case ACT_HOME: tv.top = 0; return R_REDRAW;
	case ACT_END: tv.at_end = true; return R_REDRAW;
	case ACT_CONFIRM:
		if (!tv.confirm)
			return R_NONE;
		{
			reaction_t (*fn)(void *) = tv.confirm;

			tv.confirm = NULL; /* runs once */
			tv.cancel = NULL;
			return fn(tv.ctx);
		}
	default:
		if (key == KEY_MOUSE) {
			if (ui_mouse.bstate & BUTTON4_PRESSED)
				tv.top -= 3;
			else if (ui_mouse.bstate & BUTTON5_PRESSED)
				tv.top += 3;
			return R_REDRAW;
		}
		return R_UNHANDLED;
	}
}

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

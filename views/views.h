/*
 * views.h - what a console screen is, and the console services it may use.
 *
 * A screen is a struct view_ops: hooks with private state kept in its own
 * file (views/NAME.c). It never speaks SQL and never waits on a shard: it asks
 * the worker (tui/console/worker.h) for a snapshot and draws the latest one.
 * Key handlers get a named action (tui/console/actions.h) and return a
 * reaction; the loop in tui/console/console.c acts on it. A new screen is a
 * views/NAME.c with its view_ops and a line in views/screens.h, the one list
 * from which its declaration here, its key, `:NAME`, Tab and the tabs come;
 * a view that owns a `:` command says so in its view_ops (command, run).
 * The console core reaches views only through view_ops (tests/layers.sh).
 *
 * Screens belong to the console's room: they call the console and the
 * engine, and tui/common/, never the command line (tests/layers.sh).
 */
#ifndef BS_VIEWS_H
#define BS_VIEWS_H

#ifndef NCURSES_WIDECHAR
#define NCURSES_WIDECHAR 1
#endif
#include <curses.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "actions.h"
#include "bagstore.h"
#include "fmt.h"
#include "worker.h"

typedef enum {
	R_NONE,     /* nothing changed */
	R_REDRAW,   /* draw again */
	R_RELOAD,   /* ask the worker for fresh data, then draw */
	R_POP,      /* close this screen, back to the one below */
	R_QUIT,     /* leave the console */
	R_UNHANDLED /* not this screen's key: let the console try */
} reaction_t;

struct view_ops {
	const char *name; /* as typed after ':' */
	char scope;       /* its letter in the action table */
	void (*open)(void);
	void (*reload)(void);                   /* ask for fresh data; never blocks */
	void (*draw)(int y, int h, int w);      /* rows y..y+h-1 of stdscr */
	reaction_t (*key)(action_t a, int key); /* a == ACT_NONE: a key of no action */
	void (*close)(void);
	/* Optional: take over `/` (return true when handled). */
	bool (*filter)(const char *text);
	/* Optional: the `/` text as it is typed (else the console sets the
	 * screen's filter itself, unless `filter` takes over). */
	void (*filter_live)(const char *text);
	/* Optional: the view runs the console's `:command ARG` (":entity ID",
	 * ":explain QUERY"); the console finds it here, never by a name of
	 * the view's own (tests/layers.sh). */
	const char *command;
	reaction_t (*run)(const char *arg);
	const char *command_help; /* its argument, "ID", "[QUERY]", for the help */
	const char *command_what; /* what it does, for the help */
};

/* view_<name> of every screen and page (views/screens.h). */
#define BS_VIEW_DECL_(X, id, name, key, keyname, help) extern const struct view_ops view_##name;
BS_SCREENS(BS_VIEW_DECL_, _)
BS_PAGES(BS_VIEW_DECL_, _)
#undef BS_VIEW_DECL_

/* One entity (views/entity.c): open it, edit it in $EDITOR (bag and
 * updated_us as read; updated_us 0 creates), delete it after its first 8
 * hex digits are typed. */
void entity_open(const bs_id_t *id);
reaction_t entity_edit(const bs_value_t *bag, int64_t updated_us);
reaction_t entity_create(void);
reaction_t entity_delete(const bs_id_t *id, int shard);
/* The entities screen reloads its page (after a change). Any thread: the
 * UI sends the reload when it next draws the screen. */
void entities_changed(void);
/* Browse one shard (-1: all merged) on the entities screen: called before
 * the screen is opened or brought back (ui_push_crumb), whose reload then
 * reads that shard's first page. */
void entities_show_shard(int shard);
/* :explain QUERY (views/explain.c): how the query ("[INDEX:] PROP=VALUE
 * ...") would be answered, as a text page once the browse lane has it. */
reaction_t explain_open(const char *query);
/* `:explain [QUERY]`: the query given, else the entities screen's
 * /PROP=VALUE (the entities screen's command). */
reaction_t explain_run(const char *arg);
/* `:entity ID` (the entity page's command). */
reaction_t entity_run(const char *arg);
/* The create-index form (views/indexes.c), its fields prefilled (NULL:
 * empty): the properties screen's `c`. */
reaction_t indexes_create_form(const char *name, const char *on);
/* Show the conflict page of an entity write that was refused: why ("changed
 * since you opened it"), what the store holds now beside what would have
 * been written, where the edit is kept (NULL: nowhere) and a detail (the
 * version it was opened at; may be NULL) (views/entity.c).
 * From a lane: the page is opened by the UI on its next tick. */
void entity_conflict_page(bs_store_t *st, const bs_id_t *id, const char *why, const char *mine_yaml,
                          const char *kept_in, const char *detail);

/* ------------------------------------------------------------ the console */

typedef struct {
	const bs_config_t *cfg;
	bool read_only;
	bool headless;
	bool ascii;       /* no UTF-8 in the locale: draw ASCII */
	bool color;       /* colors allowed (NO_COLOR unset, terminal has them) */
	double refresh_s; /* automatic refresh interval */
	bool paused;
	int nshards;
} ui_t;
extern ui_t ui;

/* The refresh interval's range, for --refresh, :refresh, + and -. */
#define REFRESH_MIN_S 0.5
#define REFRESH_MAX_S 3600.0

/* Open a screen above the current one; crumb (NULL: the screen's name) is
 * its part of the breadcrumb on the title line ("s1 > entities"). */
void ui_push(const struct view_ops *v);
void ui_push_crumb(const struct view_ops *v, const char *crumb);
/* Open v (a view without a close hook: the help) above whatever is shown,
 * giving nothing up: where v is lower in the stack it is taken out there
 * and opened on top, where ui_push_crumb would bring it back by closing
 * the screens above it; refused, saying so, when the stack is full. */
void ui_lay_over(const struct view_ops *v, const char *crumb);
/* The current screen's part of the breadcrumb. */
void ui_set_crumb(const char *crumb);
/* The screen on top (NULL before the first). */
const struct view_ops *ui_top(void);
/* Replace the whole stack by a top-level screen. */
void ui_switch(const struct view_ops *v);
/* Go back from v on the next tick, if it is still the top screen (a
 * screen whose subject went away: a deleted entity). */
void ui_request_pop(const struct view_ops *v);
/* A shard's name from the configuration the lanes use now (it follows the
 * file: see config_follow in console.c), "?" out of range. Any thread. */
const char *shard_name(int shard);
/* A message on the status line (kept a few seconds). */
void ui_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ui_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The `/` filter of the current screen ("" when none). */
const char *ui_filter(void);
void ui_set_filter(const char *text);
/* A line of input on the bottom row; done(text) runs on Enter, with
 * text NULL on Esc. The prompt names the target and the scale itself. */
typedef reaction_t (*ui_prompt_fn)(const char *text, void *ctx);
void ui_prompt(const char *label, const char *initial, ui_prompt_fn done, void *ctx);
/* The prompt just opened calls live(text) after every edit. */
void ui_prompt_live(void (*live)(const char *text, void *ctx));
/* A question one key answers: answer(yes) with yes for `y`. */
void ui_confirm(const char *label, void (*answer)(bool yes, void *ctx), void *ctx);
/* Run $EDITOR (else vi) on a file, leaving and restoring the screen.
 * Returns the editor's exit status, or -1 when it could not run. */
int ui_edit_file(const char *path);

/* A text page (help, DDL previews, diffs, conflicts, results). Lines are
 * copied. With confirm set, `y` runs it (and the page closes). */
void text_open(const char *title, const char *text, reaction_t (*confirm)(void *ctx), void *ctx,
               const char *confirm_label);
void text_open_help(const struct view_ops *for_view);
/* The page just opened runs cancel(ctx) when it closes without its
 * confirmation having run (an edit given up: its file is removed). */
void text_set_cancel(void (*cancel)(void *ctx));

/* ------------------------------------------------------------ drawing */

enum { C_NORMAL, C_HEADER, C_SELECT, C_TITLE, C_GOOD, C_WARN, C_BAD, C_DIM, C_STATUS };
void ui_color(int pair, bool on);
/* Print UTF-8 text at (y, x), clipped to w terminal columns; returns the
 * columns used. */
int ui_put(int y, int x, int w, const char *s);
int ui_printf(int y, int x, int w, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Display width of UTF-8 text. */
int ui_width(const char *s);
/* Cut s into lines of at most width columns, at blanks where it can:
 * starts[i], lens[i] (bytes) of each line, at most max; returns the count. */
int ui_wrap(const char *s, int width, int *starts, int *lens, int max);
/* A sparkline of v[n] scaled to max (<= 0: their largest), one character
 * a value; a negative value is a gap, drawn blank. */
void ui_sparkline(char *buf, size_t size, const double *v, int n, double max);
/* A bar "[####......]" of frac (0..1) filled, width cells inside its
 * brackets ("█" and "·", or '#' and '.' with --ascii). */
void ui_bar(char *buf, size_t size, double frac, int width);

/* Numbers, sizes, times and ages: fmt_* and now_us() (tui/common/fmt.h). */

/* "stale" note for a snapshot taken at taken_us whose reload under `key`
 * may be in flight; "" when fresh. */
const char *ui_stale(const char *key, int64_t taken_us, char *buf, size_t n);

/* ------------------------------------------------------------ tables */

typedef struct {
	const char *title;
	int width;  /* columns; 0: what is left (at least 12) */
	bool right; /* right-aligned (numbers) */
	int prio;   /* 0 first; when the terminal is narrow, higher ones give way
	              * first (Right and Left scroll to them). The first column
	              * always stays. */
} col_t;

typedef struct {
	const col_t *cols;
	int ncols;
	char **cells; /* nrows * ncols, owned */
	double *keys; /* numeric sort keys (NaN: sort as text) */
	int *attr;    /* per row color pair */
	int nrows, cap;
	int npinned; /* rows at the end that never sort or filter (totals) */
	int *order;  /* shown rows */
	int nshown;
	int sel, top;
	int sort_col; /* -1: as given */
	bool sort_desc;
	char selkey[128];
	int last_h;
	int last_y;   /* where the header was drawn (for the mouse) */
	int hscroll;  /* columns scrolled past (Right, Left) */
	int hidden;   /* columns not shown at the last draw */
	int *x, *wid; /* per column: where it was drawn (-1: not shown), its width */
} table_t;

void tbl_init(table_t *t, const col_t *cols, int ncols);
void tbl_clear(table_t *t); /* drop the rows, keep selection and sort */
int tbl_add(table_t *t, int attr);
void tbl_set(table_t *t, int row, int col, double key, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void tbl_pin_last(table_t *t); /* the last row added is a totals row */
/* A job's progress in row's cells (backfills, moves): at col its bar and
 * percent ("~" before it when the total is an estimate), at rate_col its
 * rows a second ("-" when rate < 0), at rate_col + 1 its ETA, marked "~"
 * ("-" when eta_s < 0, sorted by eta_key). */
typedef struct {
	double frac;   /* done, 0..1 */
	int width;     /* the bar's */
	int decimals;  /* of the percent: 1 is "%5.1f", 0 "%.0f" */
	bool estimate; /* the percent is of an estimated total */
	double rate;
	double eta_s, eta_key;
} progress_t;
void tbl_set_progress(table_t *t, int row, int col, int rate_col, const progress_t *p);
void tbl_finish(table_t *t, const char *filter);
/* What a header counts of the rows (totals aside): "12", or "2 of 12"
 * while a filter hides some. Into buf, returned. */
char *tbl_count(char *buf, size_t n, const table_t *t);
/* Does a row match the filter (as tbl_finish shows it)? For totals that
 * add only what is shown. */
bool tbl_matches(const table_t *t, int row, const char *filter);
void tbl_draw(table_t *t, int y, int h, int w);
/* Navigation, sorting and mouse; R_UNHANDLED for other actions. */
reaction_t tbl_key(table_t *t, action_t a, int key);
/* The selected row's index into the rows added, -1 when none. */
int tbl_selected(const table_t *t);
const char *tbl_cell(const table_t *t, int row, int col);

/* The mouse event being handled (valid while handling KEY_MOUSE). */
extern MEVENT ui_mouse;

#endif

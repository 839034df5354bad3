/*
 * actions.h - every key of the console, declared once.
 *
 * X(NAME, KEY, KEY2, KEY3, KEYNAME, HELP, DANGEROUS, SCOPE)
 *   NAME       the action, as ACT_NAME
 *   KEY..KEY3  the keys that trigger it (0: none)
 *   KEYNAME    how the help screen writes the keys
 *   HELP       one line for the help screen, which is generated from this
 *   DANGEROUS  1 when the action changes data: read-only mode strips it
 *              (actions_strip_dangerous, the one place that rule lives)
 *   SCOPE      "*" for every screen, else the scope letters of the screens
 *              it belongs to: S shards, I indexes, C cleaner, B backfills,
 *              E entities, D one entity, P properties, A audit, O topology,
 *              L log, T text pages
 *
 * A key may mean different actions on different screens; a screen's own
 * action wins over a global one. A key that means nothing on a screen says
 * so on the status line.
 */
#ifndef BS_ACTIONS_H
#define BS_ACTIONS_H

#include <stdbool.h>

#include <curses.h>

#include "screens.h"

#define BS_CTRL(c) ((c)&0x1f)
#define BS_KEY_ESC 27
#define BS_KEY_ENTER_ 10

/* A top screen's key (views/screens.h): ACT_SCREEN_ID. */
#define BS_SCREEN_ACTION_(X, id, name, key, keyname, help) X(SCREEN_##id, key, 0, 0, keyname, help, 0, "*")

#define BS_ACTIONS(X) \
	X(HELP, '?', 'h', KEY_F(1), "?  h  F1", "help: the keys of this screen", 0, "*") \
	X(COMMAND, ':', 0, 0, ":", \
	  "command line: :shards :audit :log :entity ID :explain QUERY :refresh N :q ... (Tab completes)", 0, "*") \
	X(FILTER, '/', 0, 0, "/", "filter the rows as you type (on entities: PROP=VALUE queries an index)", 0, "*") \
	X(BACK, 'q', BS_KEY_ESC, 0, "q  Esc", "back to the screen before (never quits)", 0, "*") \
	X(QUIT, 'Q', BS_CTRL('c'), KEY_F(10), "Q  ^C  F10", "quit the console (asks first while it runs backfills)", \
	  0, "*") \
	X(NEXT_SCREEN, '\t', 0, 0, "Tab", "next screen (Shift-Tab: the one before)", 0, "*") \
	X(PREV_SCREEN, KEY_BTAB, 0, 0, "S-Tab", "screen before", 0, "*") \
	BS_SCREENS(BS_SCREEN_ACTION_, X) \
	X(RELOAD, 'R', BS_CTRL('l'), 0, "R  ^L", "reload now", 0, "*") \
	X(PAUSE, 'z', 0, 0, "z", "pause / resume the automatic refresh", 0, "*") \
	X(FASTER, '+', 0, 0, "+", "refresh more often (0.5 s to 1 h)", 0, "*") \
	X(SLOWER, '-', 0, 0, "-", "refresh less often (0.5 s to 1 h)", 0, "*") \
	X(SORT_NEXT, '>', 0, 0, ">", "sort by the next column", 0, "SICBPAOL") \
	X(SORT_PREV, '<', 0, 0, "<", "sort by the previous column", 0, "SICBPAOL") \
	X(SORT_REV, 'I', 0, 0, "I", "invert the sort order", 0, "SICBPAOL") \
	X(DOWN, 'j', KEY_DOWN, 0, "j  Down", "next row", 0, "*") \
	X(UP, 'k', KEY_UP, 0, "k  Up", "previous row", 0, "*") \
	X(PGDN, ' ', KEY_NPAGE, 0, "Space PgDn", "next page", 0, "*") \
	X(PGUP, 'b', KEY_PPAGE, 0, "b  PgUp", "previous page", 0, "*") \
	X(HOME, 'g', KEY_HOME, 0, "g  Home", "first row (entities: newest)", 0, "*") \
	X(END, 'G', KEY_END, 0, "G  End", "last row (entities: of the page; again: the next page's last)", 0, \
	  "SICBEDTPAOL") \
	X(OPEN, '\n', KEY_ENTER, '\r', "Enter", "open the selected row", 0, "SIBEAL") \
	X(COL_RIGHT, KEY_RIGHT, 0, 0, "Right", "show the columns further right (narrow terminals)", 0, "SICBEPAOL") \
	X(COL_LEFT, KEY_LEFT, 0, 0, "Left", "back to the columns on the left", 0, "SICBEPAOL") \
	X(EXACT_COUNT, '#', 0, 0, "#", "count exactly (entities, or the index's rows) on a worker; # again cancels", \
	  0, "SI") \
	X(INDEX_CREATE, 'c', 0, 0, "c", "create an index (form, DDL preview)", 1, "I") \
	X(INDEX_DROP, 'd', 0, 0, "d", "drop the selected index (type its name)", 1, "I") \
	X(INDEX_VERIFY, 'v', 0, 0, "v", "verify the selected index (read-only)", 0, "I") \
	X(INDEX_REPAIR, 'V', 0, 0, "V", "verify and repair the selected index", 1, "I") \
	X(INDEX_BACKFILL, 'B', 0, 0, "B", "backfill the selected (building) index on a console worker", 1, "IB") \
	X(JOB_PAUSE, 'p', 0, 0, "p", "pause the selected backfill", 1, "B") \
	X(JOB_RESUME, 'r', 0, 0, "r", "resume the selected backfill", 1, "B") \
	X(JOB_CANCEL, 'x', 0, 0, "x", "cancel the selected backfill", 1, "B") \
	X(RESHARD_PLAN, 'r', 0, 0, "r", \
	  "preview the plan the configuration asks for; y, then type reshard, starts it", 1, "O") \
	X(MOVE_PAUSE, 'p', 0, 0, "p", "pause every move of the plan (within one chunk)", 1, "O") \
	X(MOVE_RESUME, 'u', 0, 0, "u", "resume every move of the plan", 1, "O") \
	X(MOVE_CANCEL, 'x', 0, 0, "x", "cancel the plan (type cancel): moves before cut-over are undone", 1, "O") \
	X(ENT_SHARD, 's', 0, 0, "s", "browse one shard / all shards merged", 0, "E") \
	X(ENT_JUMP, 'i', 0, 0, "i", "open an entity by id", 0, "E") \
	X(ENT_NEW, 'n', 0, 0, "n", "create an entity in $EDITOR", 1, "E") \
	X(ENT_EDIT, 'e', 0, 0, "e", "edit the entity in $EDITOR (YAML)", 1, "ED") \
	X(ENT_DELETE, 'd', 0, 0, "d", "delete the entity (type its first 8 hex digits)", 1, "ED") \
	X(ENT_RAW, 'x', 0, 0, "x", "raw stored bytes (hex) / decoded tree", 0, "D") \
	X(CENSUS_INDEX, 'c', 0, 0, "c", "create an index on the selected property (the form prefilled)", 1, "P") \
	X(CENSUS_RUN, 'R', BS_CTRL('l'), 0, "R  ^L", "take the census again (a new sample)", 0, "P") \
	X(AUDIT_UNDO, 'u', 0, 0, "u", "undo the selected entity change (only if the entity has not changed since)", 1, \
	  "A") \
	X(CONFIRM, 'y', 0, 0, "y", "confirm what the page offers", 0, "T")

typedef enum {
	ACT_NONE = 0,
#define BS_X_ENUM(n, k, k2, k3, kn, h, d, s) ACT_##n,
	BS_ACTIONS(BS_X_ENUM)
#undef BS_X_ENUM
		ACT_COUNT
} action_t;

typedef struct {
	const char *name;
	int key, key2, key3;
	const char *keyname;
	const char *help;
	bool dangerous;
	const char *scope;
} action_info_t;

/* The table, indexed by action_t. */
extern const action_info_t bs_action_info[ACT_COUNT];

/* The action a key triggers on a screen of the given scope letter.
 * *stripped is set when the key names a dangerous action that read-only
 * mode removed (the key does nothing then). */
action_t action_for_key(int key, char scope, bool *stripped);
/* Read-only: remove every dangerous action. */
void actions_strip_dangerous(void);
bool action_enabled(action_t a);

#endif

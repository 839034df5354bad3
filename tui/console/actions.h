/*
 * actions.h - every key of the console, declared once.
 *
 * X(NAME, KEY, KEY2, KEYNAME, HELP, DANGEROUS, SCOPE)
 *   NAME       the action, as ACT_NAME
 *   KEY, KEY2  the keys that trigger it (0: none)
 *   KEYNAME    how the help screen writes the key
 *   HELP       one line for the help screen, which is generated from this
 *   DANGEROUS  1 when the action changes data: read-only mode strips it
 *              (actions_strip_dangerous, the one place that rule lives)
 *   SCOPE      "*" for every screen, else the scope letters of the screens
 *              it belongs to: S shards, I indexes, C cleaner, B backfills,
 *              E entities, D one entity, T text pages
 *
 * A key may mean different actions on different screens; a screen's own
 * action wins over a global one.
 */
#ifndef BS_ACTIONS_H
#define BS_ACTIONS_H

#include <stdbool.h>

#include <curses.h>

#define BS_CTRL(c) ((c) & 0x1f)
#define BS_KEY_ESC 27
#define BS_KEY_ENTER_ 10

#define BS_ACTIONS(X) \
	X(HELP,        '?', KEY_F(1), "?  F1",   "help: the keys of this screen", 0, "*") \
	X(COMMAND,     ':', 0,        ":",       "command line: :shards :indexes :cleaner :backfills :entities :refresh N :q", 0, "*") \
	X(FILTER,      '/', 0,        "/",       "filter the rows (on entities: PROP=VALUE queries an index)", 0, "*") \
	X(BACK,        'q', BS_KEY_ESC, "q  Esc", "back; quits from the first screen", 0, "*") \
	X(QUIT,        'Q', BS_CTRL('c'), "Q  ^C", "quit the console", 0, "*") \
	X(SCREEN_SHARDS,   '1', 0,    "1",       "shards screen", 0, "*") \
	X(SCREEN_INDEXES,  '2', 0,    "2",       "indexes screen", 0, "*") \
	X(SCREEN_CLEANER,  '3', 0,    "3",       "cleaner screen", 0, "*") \
	X(SCREEN_BACKFILLS,'4', 0,    "4",       "backfills screen", 0, "*") \
	X(SCREEN_ENTITIES, '5', 0,    "5",       "entities screen", 0, "*") \
	X(RELOAD,      'R', BS_CTRL('l'), "R  ^L", "reload now", 0, "*") \
	X(PAUSE,       'z', 0,        "z",       "pause / resume the automatic refresh", 0, "*") \
	X(FASTER,      '+', 0,        "+",       "refresh more often", 0, "*") \
	X(SLOWER,      '-', 0,        "-",       "refresh less often", 0, "*") \
	X(SORT_NEXT,   '>', 0,        ">",       "sort by the next column", 0, "SICB") \
	X(SORT_PREV,   '<', 0,        "<",       "sort by the previous column", 0, "SICB") \
	X(SORT_REV,    'I', 0,        "I",       "invert the sort order", 0, "SICB") \
	X(DOWN,        'j', KEY_DOWN, "j  Down", "next row", 0, "*") \
	X(UP,          'k', KEY_UP,   "k  Up",   "previous row", 0, "*") \
	X(PGDN,        ' ', KEY_NPAGE, "Space PgDn", "next page", 0, "*") \
	X(PGUP,        'b', KEY_PPAGE, "b  PgUp", "previous page", 0, "*") \
	X(HOME,        'g', KEY_HOME, "g  Home", "first row (entities: newest)", 0, "*") \
	X(END,         'G', KEY_END,  "G  End",  "last row", 0, "SICBDT") \
	X(OPEN,        '\n', KEY_ENTER, "Enter", "open the selected row", 0, "SIBE") \
	X(INDEX_CREATE,  'c', 0,      "c",       "create an index (form, DDL preview)", 1, "I") \
	X(INDEX_DROP,    'd', 0,      "d",       "drop the selected index (type its name)", 1, "I") \
	X(INDEX_VERIFY,  'v', 0,      "v",       "verify the selected index (read-only)", 0, "I") \
	X(INDEX_REPAIR,  'V', 0,      "V",       "verify and repair the selected index", 1, "I") \
	X(INDEX_BACKFILL,'B', 0,      "B",       "backfill the selected index on a console worker", 1, "IB") \
	X(JOB_PAUSE,   'p', 0,        "p",       "pause the selected backfill", 1, "B") \
	X(JOB_RESUME,  'r', 0,        "r",       "resume the selected backfill", 1, "B") \
	X(JOB_CANCEL,  'x', 0,        "x",       "cancel the selected backfill", 1, "B") \
	X(ENT_SHARD,   's', 0,        "s",       "browse one shard / all shards merged", 0, "E") \
	X(ENT_JUMP,    'i', 0,        "i",       "open an entity by id", 0, "E") \
	X(ENT_NEW,     'n', 0,        "n",       "create an entity in $EDITOR", 1, "E") \
	X(ENT_EDIT,    'e', 0,        "e",       "edit the entity in $EDITOR (YAML)", 1, "ED") \
	X(ENT_DELETE,  'd', 0,        "d",       "delete the entity (type its first 8 hex digits)", 1, "ED") \
	X(ENT_RAW,     'x', 0,        "x",       "raw stored bytes (hex) / decoded tree", 0, "D") \
	X(CONFIRM,     'y', 0,        "y",       "confirm what the page offers", 0, "T")

typedef enum {
	ACT_NONE = 0,
#define BS_X_ENUM(n, k, k2, kn, h, d, s) ACT_##n,
	BS_ACTIONS(BS_X_ENUM)
#undef BS_X_ENUM
	ACT_COUNT
} action_t;

typedef struct {
	const char *name;
	int key, key2;
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

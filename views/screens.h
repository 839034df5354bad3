/*
 * screens.h - the console's screens, declared once (tig's VIEW_INFO).
 *
 * S(X, ID, name, KEY, KEYNAME, HELP)
 *   ID       the key's action is ACT_SCREEN_ID (actions.h makes its row
 *            from here, with KEY, KEYNAME and HELP)
 *   name     the screen's struct view_ops is view_<name>, in
 *            views/<name>.c; `:name` opens it
 *
 * BS_SCREENS are the top screens, in the order Tab goes through them and
 * the hint line shows them; BS_PAGES are the views opened from them (one
 * entity, a text page, the help), which no number key opens. From these
 * lists come the views' declarations (views.h), the screen table, the
 * number keys' actions and their dispatch, `:` and its Tab completion,
 * and the hint line (tui/console/console.c): a new screen is a
 * views/NAME.c and a line here.
 * X is passed through for lists made inside another X-macro (actions.h).
 */
#ifndef BS_SCREENS_H
#define BS_SCREENS_H

#define BS_SCREENS(S, X) \
	S(X, SHARDS, shards, '1', "1", "shards screen") \
	S(X, INDEXES, indexes, '2', "2", "indexes screen") \
	S(X, CLEANER, cleaner, '3', "3", "cleaner screen") \
	S(X, BACKFILLS, backfills, '4', "4", "backfills screen") \
	S(X, ENTITIES, entities, '5', "5", "entities screen") \
	S(X, PROPERTIES, properties, '6', "6", "properties screen (the census of the bodies)") \
	S(X, AUDIT, audit, '7', "7", "audit screen (operators' changes)") \
	S(X, TOPOLOGY, topology, '8', "8", "topology screen: the bucket map and resharding") \
	S(X, LOG, log, '9', "9", "log screen: the statements the console's actions sent")

#define BS_PAGES(S, X) \
	S(X, ENTITY, entity, 0, "", "one entity") \
	S(X, TEXT, text, 0, "", "a text page") \
	S(X, HELP, help, 0, "", "the help, laid over the screen or page it is of")

#endif

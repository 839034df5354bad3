/*
 * console_int.h - what the console's own files share (console.c, the
 * headless driver headless.c, the table and drawing helpers table.c and
 * draw.c, the text page text.c). Screens use views.h.
 */
#ifndef BS_CONSOLE_INT_H
#define BS_CONSOLE_INT_H

#include <stdio.h>

#include "views.h"

/* One key through the prompt, the screen and the global actions. */
void console_key(int key);
/* Draw everything (the stack's top screen, title, status line). */
void console_draw(void);
/* Timer work: automatic reloads, expiring messages. */
void console_tick(void);
/* Has an action asked to leave? */
bool console_done(void);
/* Write the screen as a person sees it: LINES lines of text, trailing
 * blanks removed. */
void console_dump(FILE *f);
/* The k-th view of views/screens.h (top screens, then pages), NULL past
 * the last: the help lists their commands. */
const struct view_ops *console_view(int k);
/* A page no key asked for (a request's result): takes title and text
 * (malloc'd) and holds them, replacing one held already, until
 * text_release opens it; the status line says one is held. */
void text_offer(char *title, char *text);
/* Open the page held, unless a page waits for the operator: its `y` not
 * pressed, or a cancel hook (an edit's, a create's) that replacing it
 * would run. console_tick calls it while no prompt is open. */
void text_release(void);
/* Is a page waiting for the operator? Is a result held? */
bool text_waiting(void);
bool text_held(void);
/* Open the first screen. */
void console_start(void);
/* The headless driver: keys from a script, dumps into dir. Returns the
 * exit status. */
int headless_run(const char *script, const char *dumpdir);

#endif

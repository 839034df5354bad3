/*
 * plan.h - a query's plan (bs_explain) as text for people, one rendering
 * for both rooms: `bagstore explain` prints it, the console's :explain
 * shows it as a text page. Estimates carry `~`. It calls neither room.
 */
#ifndef BS_PLAN_H
#define BS_PLAN_H

#include "bagstore.h"

/* The plan as lines of text (NUL-terminated, ending in a newline); the
 * caller frees it. NULL when out of memory. */
char *plan_text(const bs_explain_t *e);
/* The name `index create` would be given: by_PROP_PROP, cut to fit. */
void plan_index_name(char *buf, size_t n, const bs_explain_t *e);

#endif

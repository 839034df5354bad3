/*
 * explain.c - the console's :explain: how a query would be answered
 * (bs_explain), on the browse lane where queries run, shown as a text page
 * in the words `bagstore explain` prints (tui/common/plan.c). Not a screen
 * of its own: the page is the text screen's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "views.h"

static void work(bs_store_t *st, void *arg)
{
	const char *query = arg;
	bs_explain_t e;
	char title[300], *text;

	if (bs_explain_text(&e, st, query, 0) < 0) {
		worker_notify(true, ":explain %s: %s", query, bs_last_error());
		return;
	}
	snprintf(title, sizeof title, "explain %s", query);
	if (!(text = plan_text(&e)))
		worker_notify(true, ":explain: out of memory");
	else
		worker_page(title, text);
	free(text);
	bs_explain_free(&e);
}

reaction_t explain_open(const char *query)
{
	char *q;

	while (query && *query == ' ')
		query++;
	if (!query || !*query) {
		ui_err(":explain takes a query ([INDEX:] PROP=VALUE ...), or explains the entities screen's "
		       "/PROP=VALUE");
		return R_REDRAW;
	}
	if (!(q = strdup(query))) {
		ui_err("out of memory");
		return R_REDRAW;
	}
	ui_msg("explaining %s ...", q);
	worker_submit(LANE_BROWSE, NULL, false, work, q, free);
	return R_REDRAW;
}

reaction_t explain_run(const char *arg)
{
	return explain_open(arg[0] ? arg : ui_top() == &view_entities ? ui_filter() : "");
}

/*
 * actions.c - the console's action table (bs_action_info, generated from
 * BS_ACTIONS in actions.h), which key means which action on which screen,
 * and the read-only rule: dangerous actions removed in one place.
 */
#include "actions.h"

#include <string.h>

const action_info_t bs_action_info[ACT_COUNT] = { [ACT_NONE] = { "none", 0, 0, 0, "", "", false, "" },
#define BS_X_INFO(n, k, k2, k3, kn, h, d, s) [ACT_##n] = { #n, k, k2, k3, kn, h, d, s },
	                                          BS_ACTIONS(BS_X_INFO)
#undef BS_X_INFO
};

/* Actions read-only mode removed (UI thread only; all enabled at start). */
static bool stripped_out[ACT_COUNT];

void actions_strip_dangerous(void)
{
	int i;

	for (i = 0; i < ACT_COUNT; i++)
		if (bs_action_info[i].dangerous)
			stripped_out[i] = true;
}

bool action_enabled(action_t a)
{
	return a > ACT_NONE && a < ACT_COUNT && !stripped_out[a];
}

static bool in_scope(const action_info_t *ai, char scope)
{
	return strchr(ai->scope, scope) != NULL;
}

action_t action_for_key(int key, char scope, bool *stripped)
{
	int pass, i;

	if (stripped)
		*stripped = false;
	/* the screen's own actions first, then the global ones */
	for (pass = 0; pass < 2; pass++) {
		for (i = 1; i < ACT_COUNT; i++) {
			const action_info_t *ai = &bs_action_info[i];
			bool global = strcmp(ai->scope, "*") == 0;

			if (key == 0 || (ai->key != key && ai->key2 != key && ai->key3 != key))
				continue;
			if (pass == 0 ? (global || !in_scope(ai, scope)) : !global)
				continue;
			if (!action_enabled((action_t)i)) {
				if (stripped)
					*stripped = true;
				return ACT_NONE;
			}
			return (action_t)i;
		}
	}
	return ACT_NONE;
}

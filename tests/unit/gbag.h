/*
 * gbag.h - one entity's bag of a single int property, g, and g read back
 * through a store: what the single-write tests put again and again
 * (test_fast_kill, test_write_proc). After rawsql.h, whose cfg it opens.
 */
#ifndef BS_GBAG_H
#define BS_GBAG_H
#include "bagstore.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* {"id": {"$uuid": uuid}, "g": g}; a bag that will not decode ends the test */
static inline void gbag(bs_value_t *bag, const char *uuid, int g)
{
	char json[160];
	snprintf(json, sizeof json, "{\"id\":{\"$uuid\":\"%s\"},\"g\":%d}", uuid, g);
	if (bs_json_decode(bag, json, strlen(json), "bag")) {
		fprintf(stderr, "bag: %s\n", bs_last_error());
		exit(1);
	}
}

/* The entity's g as a new store reads it; LLONG_MIN when it is absent or
 * has none */
static inline long long gbag_read(const bs_id_t *id)
{
	bs_store_t *st = NULL;
	bs_value_t got;
	long long g = LLONG_MIN;
	if (!bs_store_open(&st, cfg) && !bs_get(&got, st, id, NULL, NULL)) {
		const bs_value_t *gv = bs_map_get(&got, "g");
		if (gv && gv->type == BS_INT)
			g = gv->v.i;
		bs_value_clear(&got);
	}
	bs_store_free(st);
	return g;
}
#endif

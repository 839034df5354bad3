/*
 * init.c - `bagstore init`: every shard's identity checked before anything
 * is created (map.c), every shard's tables (schema.c), the bucket
 * map and each shard's identity (map.c), the catalog on shards added since
 * (catalog.c), then the configuration's indexes, created through their
 * lifecycle when absent (lifecycle.c).
 * Idempotent: run it again at any time.
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

int bs_init(bs_store_t *st)
{
	int rc;
	st->upgraded[0] = '\0';
	st->nupgraded = st->upgraded_from = 0;
	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing init");
	if ((rc = bs__map_precheck(st)) || (rc = bs__schema_init(st)) || (rc = bs__map_init(st)) ||
	    (rc = bs__catalog_extend(st)))
		return rc;
	for (int k = 0; k < st->cfg->nindexes; k++) {
		bs_index_t cur;
		rc = bs_index_get(&cur, st, st->cfg->indexes[k].name);
		if (rc == BS_ENOTFOUND)
			rc = bs_index_create(st, &st->cfg->indexes[k]);
		if (rc)
			return rc;
	}
	return 0;
}

int bs_init_upgraded(const bs_store_t *st, char *names, size_t size, int *from)
{
	if (size)
		snprintf(names, size, "%s", st->upgraded);
	*from = st->upgraded_from;
	return st->nupgraded;
}

int bs_init_noproc(const bs_store_t *st, char *names, size_t size)
{
	int n = 0;
	if (size)
		names[0] = '\0';
	for (int i = 0; i < st->n; i++) {
		if (!st->shards[i].proc_denied)
			continue;
		size_t used = size ? strlen(names) : 0;
		if (used + 1 < size)
			snprintf(names + used, size - used, "%s%s", n ? ", " : "", st->shards[i].conf->name);
		n++;
	}
	return n;
}

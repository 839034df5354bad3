/*
 * store.c - opening a store over a configuration, and fault points.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static void lib_init(void) { mysql_library_init(0, NULL, NULL); }

static unsigned secs(double s)
{
	return s < 1 ? 1 : (unsigned)(s + 0.5);
}

int bs_store_open(bs_store_t **out, const bs_config_t *cfg)
{
	*out = NULL;
	if (!cfg || cfg->nshards < 1)
		return bs_error(BS_ECONFIG, "configuration lists no shards");
	pthread_once(&lib_once, lib_init);
	bs_store_t *st = calloc(1, sizeof *st);
	if (!st || !(st->shards = calloc((size_t)cfg->nshards, sizeof *st->shards))) {
		free(st);
		return bs_error(BS_ENOMEM, "out of memory opening the store");
	}
	st->cfg = cfg;
	st->n = cfg->nshards;
	pthread_mutex_init(&st->id_lock, NULL);
	for (int i = 0; i < st->n; i++) {
		st->shards[i].conf = &cfg->shards[i];
		st->shards[i].index = i;
	}
	bs_config_fingerprint(st->fingerprint, cfg);
	st->cat_loaded = -1;
	st->connect_timeout = secs(cfg->connect_timeout);
	st->read_timeout = secs(cfg->read_timeout);
	st->write_timeout = secs(cfg->write_timeout);
	bs__trace_default(&st->trace_fn, &st->trace_arg);
	*out = st;
	return 0;
}

void bs_store_free(bs_store_t *st)
{
	if (!st)
		return;
	for (int i = 0; i < st->n; i++) {
		bs__shard_close(st, i);
		free(st->shards[i].bstate);
	}
	free(st->map.owner);
	free(st->map.names);
	free(st->map.name_shard);
	bs_index_list_free(&st->cat);
	free(st->shards);
	pthread_mutex_destroy(&st->id_lock);
	free(st);
}

const bs_config_t *bs_store_config(const bs_store_t *st) { return st->cfg; }
int bs_store_nshards(const bs_store_t *st) { return st->n; }

bool bs_fault(const char *name)
{
	const char *f = getenv("BAGSTORE_FAULT");
	if (!f || !*f)
		return false;
	size_t n = strlen(name);
	for (const char *p = f; (p = strstr(p, name)); p += n)
		if ((p == f || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
			return true;
	return false;
}

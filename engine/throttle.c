/*
 * throttle.c - when a backfill must wait: shard load (Threads_running above
 * cleaner.max_load pauses, above critical_load stops the job) and replica
 * lag (Seconds_Behind_Master above max_replica_lag pauses) on shards that
 * list replicas. Replica connections are kept by the throttle_t.
 */
#include "cleaner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct throttle {
	const bs_config_t *cfg;
	MYSQL **replicas; /* per shard, per replica: conns[shard][r] */
	int *offset;      /* first replica of shard i in replicas[] */
	int total;
};

int bs__throttle_new(throttle_t **out, const bs_config_t *cfg)
{
	throttle_t *t = calloc(1, sizeof *t);
	*out = NULL;
	if (!t || !(t->offset = calloc((size_t)cfg->nshards + 1, sizeof *t->offset))) {
		free(t);
		return bs_error(BS_ENOMEM, "out of memory");
	}
	t->cfg = cfg;
	for (int i = 0; i < cfg->nshards; i++) {
		t->offset[i] = t->total;
		t->total += cfg->shards[i].nreplicas;
	}
	t->offset[cfg->nshards] = t->total;
	if (t->total && !(t->replicas = calloc((size_t)t->total, sizeof *t->replicas))) {
		bs__throttle_free(t);
		return bs_error(BS_ENOMEM, "out of memory");
	}
	*out = t;
	return 0;
}

void bs__throttle_free(throttle_t *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->total; i++)
		if (t->replicas[i])
			mysql_close(t->replicas[i]);
	free(t->replicas);
	free(t->offset);
	free(t);
}

struct load_arg {
	int64_t *running;
};

static int load_on(bs_store_t *st, int i, void *p)
{
	struct load_arg *a = p;
	static const char q[] = "SHOW GLOBAL STATUS LIKE 'Threads_running'";
	MYSQL_RES *res;
	int rc = bs__shard_query(&res, st, i, q, sizeof q - 1);
	if (rc)
		return rc;
	MYSQL_ROW row = mysql_fetch_row(res);
	a->running[i] = row && row[1] ? strtoll(row[1], NULL, 10) : 0;
	mysql_free_result(res);
	return 0;
}

int bs__throttle_check(int *level, char *reason, size_t size, throttle_t *t, bs_store_t *st,
                   const bool *which, const bs_cleaner_conf_t *cl)
{
	int64_t *running = calloc((size_t)st->n, sizeof *running);
	int rc;
	*level = 0;
	reason[0] = '\0';
	if (!running)
		return bs_error(BS_ENOMEM, "out of memory");
	struct load_arg a = { running };
	if ((rc = bs__shard_each(st, which, load_on, &a, NULL)))
		goto done;
	for (int i = 0; i < st->n; i++) {
		if (which && !which[i])
			continue;
		if (running[i] > (int64_t)cl->critical_load) {
			*level = 2;
			snprintf(reason, size, "shard %s: Threads_running %lld above critical_load %u",
			         st->shards[i].conf->name, (long long)running[i], cl->critical_load);
			goto done;
		}
		if (running[i] > (int64_t)cl->max_load && *level < 1) {
			*level = 1;
			snprintf(reason, size, "shard %s: Threads_running %lld above max_load %u",
			         st->shards[i].conf->name, (long long)running[i], cl->max_load);
		}
	}
	if (*level)
		goto done;
	for (int i = 0; t && i < st->n; i++) {
		if (which && !which[i])
			continue;
		const bs_shard_conf_t *sc = &st->cfg->shards[i];
		for (int r = 0; r < sc->nreplicas; r++) {
			char err[256] = "";
			double lag = bs__replica_seconds_behind(&t->replicas[t->offset[i] + r], &sc->replicas[r], sc, 2, err, sizeof err, NULL);
			if (lag < 0) {
				*level = 1;
				snprintf(reason, size, "shard %s: replica %s:%u lag unknown (%s)", sc->name,
				         sc->replicas[r].host ? sc->replicas[r].host : "localhost",
				         sc->replicas[r].port, err);
				goto done;
			}
			if (lag > cl->max_replica_lag) {
				*level = 1;
				snprintf(reason, size, "shard %s: replica %s:%u %.0f s behind, above max_replica_lag %.1f",
				         sc->name, sc->replicas[r].host ? sc->replicas[r].host : "localhost",
				         sc->replicas[r].port, lag, cl->max_replica_lag);
				goto done;
			}
		}
	}
done:
	free(running);
	return rc;
}

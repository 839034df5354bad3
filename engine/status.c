/*
 * status.c - the health of every shard, as the shards screen and
 * `bagstore shards` show it: reachability, round trip, version, size,
 * load (Threads_running, and the counters front ends turn into rates:
 * statements, rows written, connections, InnoDB's history list), and
 * whether the shard agrees with this configuration's list.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOW_MS 250.0

/* The replicas' TLS: the weakest connection made so far. */
static void replica_tls(bs_shard_status_t *s, const bs_tls_state_t *t)
{
	if (s->nreplica_tls++ == 0 || t->level < s->replica_tls.level)
		s->replica_tls = *t;
}

/* The largest Seconds_Behind_Master over the shard's replicas; a replica
 * whose lag is unknown makes the whole unknown (-2), with its reason. */
static void replicas_lag(bs_shard_status_t *s, bs_store_t *st, int i)
{
	const bs_shard_conf_t *sc = &st->cfg->shards[i];
	if (sc->nreplicas == 0)
		return; /* -1: none configured */
	s->replica_lag = 0;
	for (int r = 0; r < sc->nreplicas; r++) {
		MYSQL *m = NULL;
		char err[200];
		bs_tls_state_t tls;
		double lag = bs__replica_seconds_behind(&m, &sc->replicas[r], sc, st->connect_timeout, err, sizeof err,
		                                        &tls);
		if (m) {
			replica_tls(s, &tls);
			mysql_close(m);
		}
		if (lag < 0) {
			s->replica_lag = -2;
			snprintf(s->error, sizeof s->error, "replica %s:%u: %s",
			         sc->replicas[r].host     ? sc->replicas[r].host
			         : sc->replicas[r].socket ? sc->replicas[r].socket
			                                  : "localhost",
			         sc->replicas[r].port, err);
			return;
		}
		if (lag > s->replica_lag)
			s->replica_lag = lag;
	}
}

/* ------------------------------------------------------------ load */

/* The server's load counters (bs_shard_status_t's load fields), read at
 * once with the shard's clock; what the server does not report stays -1. */
static int load_counters(bs_shard_status_t *s, bs_store_t *st, int i)
{
	static const char q[] =
		"SELECT VARIABLE_NAME, VARIABLE_VALUE, CAST(UNIX_TIMESTAMP(NOW(6))*1000000 AS SIGNED)"
		" FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME IN ('QUESTIONS','THREADS_CONNECTED',"
		"'INNODB_HISTORY_LIST_LENGTH','UPTIME','INNODB_ROWS_INSERTED','INNODB_ROWS_UPDATED',"
		"'INNODB_ROWS_DELETED','HANDLER_WRITE','HANDLER_UPDATE','HANDLER_DELETE')";
	int64_t innodb_rows = -1, handler_rows = -1;
	MYSQL_RES *res;
	MYSQL_ROW row;
	int rc = bs__shard_query(&res, st, i, q, sizeof q - 1);

	if (rc)
		return rc;
	while ((row = mysql_fetch_row(res))) {
		int64_t v = row[1] ? strtoll(row[1], NULL, 10) : -1;
		const char *n = row[0] ? row[0] : "";
		if (row[2])
			s->load_at_us = strtoll(row[2], NULL, 10);
		if (!strcmp(n, "QUESTIONS"))
			s->questions = v;
		else if (!strcmp(n, "THREADS_CONNECTED"))
			s->connections = v;
		else if (!strcmp(n, "INNODB_HISTORY_LIST_LENGTH"))
			s->history_length = v;
		else if (!strcmp(n, "UPTIME"))
			s->uptime_s = v;
		else if (!strncmp(n, "INNODB_ROWS_", 12))
			innodb_rows = (innodb_rows < 0 ? 0 : innodb_rows) + v;
		else if (!strncmp(n, "HANDLER_", 8))
			handler_rows = (handler_rows < 0 ? 0 : handler_rows) + v;
	}
	mysql_free_result(res);
	s->rows_written = innodb_rows >= 0 ? innodb_rows : handler_rows;
	return 0;
}

/* ------------------------------------------------------------ status */

static int status_one(bs_store_t *st, int i, void *p)
{
	bs_shard_status_t *s = &((bs_shard_status_t *)p)[i];
	MYSQL_RES *res = NULL;
	MYSQL *m;
	int rc;

	if ((rc = bs__shard_conn(&m, st, i)) == 0) {
		double t0 = bs_now_mono();
		if (mysql_ping(m))
			rc = bs__shard_fail(st, i, "ping failed");
		s->rtt_ms = (bs_now_mono() - t0) * 1000.0;
	}
	if (rc) {
		s->state = BS_SHARD_DOWN;
		snprintf(s->error, sizeof s->error, "%s", bs_last_error());
		return 0; /* reported, not an error */
	}
	s->state = s->rtt_ms > SLOW_MS ? BS_SHARD_SLOW : BS_SHARD_UP;
	snprintf(s->version, sizeof s->version, "%s", mysql_get_server_info(m));
	s->tls = st->shards[i].tls;

	static const char q[] = "SELECT (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
				"        WHERE VARIABLE_NAME='THREADS_RUNNING'),"
				" (SELECT TABLE_ROWS FROM information_schema.TABLES"
				"  WHERE TABLE_SCHEMA=DATABASE() AND TABLE_NAME='entities'),"
				" (SELECT SUM(DATA_LENGTH+INDEX_LENGTH) FROM information_schema.TABLES"
				"  WHERE TABLE_SCHEMA=DATABASE()),"
				" (SELECT COUNT(*) FROM information_schema.TABLES"
				"  WHERE TABLE_SCHEMA=DATABASE() AND TABLE_NAME='bagstore_meta')";
	if ((rc = bs__shard_query(&res, st, i, q, sizeof q - 1)))
		goto fail;
	MYSQL_ROW row = mysql_fetch_row(res);
	if (row) {
		s->threads_running = row[0] ? strtoll(row[0], NULL, 10) : -1;
		s->entities_est = row[1] ? strtoll(row[1], NULL, 10) : -1;
		s->data_bytes = row[2] ? strtoll(row[2], NULL, 10) : 0;
		bool initialised = row[3] && atoi(row[3]) > 0;
		mysql_free_result(res);
		res = NULL;
		if (!initialised) {
			s->fingerprint_ok = -1;
		} else {
			/* checked afresh each time: a long-lived store (the console,
			 * the collector) sees a shard leave the map, or the map gain
			 * a member, as a new one would */
			st->shards[i].fp_state = 0;
			rc = bs__shard_check(st, i);
			s->fingerprint_ok = rc == 0;
			if (rc == BS_ECONFIG) {
				snprintf(s->error, sizeof s->error, "%s", bs_last_error());
				s->map_lacks = st->shards[i].fp_lacks;
			} else if (rc) {
				goto fail;
			}
			rc = 0;
		}
	}
	if (res)
		mysql_free_result(res);
	res = NULL;
	/* counters the server will not show (grants) stay unknown; a lost
	 * connection is the shard down */
	if ((rc = load_counters(s, st, i)) == BS_EUNREACHABLE)
		goto fail;
	bs_error_clear();
	replicas_lag(s, st, i);
	return 0;
fail:
	if (res)
		mysql_free_result(res);
	s->state = BS_SHARD_DOWN;
	snprintf(s->error, sizeof s->error, "%s", bs_last_error());
	return 0;
}

int bs_shard_status(bs_shard_status_t *out, bs_store_t *st)
{
	for (int i = 0; i < st->n; i++) {
		memset(&out[i], 0, sizeof out[i]);
		snprintf(out[i].name, sizeof out[i].name, "%s", st->shards[i].conf->name);
		bs__shard_address(out[i].address, sizeof out[i].address, st->shards[i].conf);
		out[i].replica_lag = -1;
		out[i].entities_est = -1;
		out[i].threads_running = -1;
		out[i].fingerprint_ok = -1;
		out[i].map_lacks = -1;
		out[i].tls_mode = st->shards[i].conf->tls.mode;
		out[i].questions = out[i].rows_written = out[i].connections = -1;
		out[i].history_length = out[i].uptime_s = -1;
	}
	int rc = bs__shard_each(st, NULL, status_one, out, NULL);
	/* a shard in plain text while another is encrypted is marked, and one
	 * whose tls.mode asked for TLS (preferred: required and stricter do not
	 * connect without it) */
	bool any_tls = false;
	for (int i = 0; i < st->n; i++)
		if (out[i].state != BS_SHARD_DOWN && out[i].tls.level > BS_TLS_NONE)
			any_tls = true;
	for (int i = 0; i < st->n; i++) {
		bool plain = out[i].state != BS_SHARD_DOWN && out[i].tls.level == BS_TLS_NONE;
		out[i].tls_plaintext_mixed = any_tls && plain;
		out[i].tls_plaintext_preferred = plain && out[i].tls_mode == BS_TLS_PREFERRED;
	}
	return rc;
}

int bs_shard_list_check(const bs_config_t *cfg, double cap_s, char *unchecked, size_t un)
{
	bs_config_t c = *cfg;
	bs_store_t *st = NULL;
	bs_shard_status_t *ss = NULL;
	size_t o = 0;
	int rc;

	unchecked[0] = '\0';
	if (c.connect_timeout <= 0 || c.connect_timeout > cap_s)
		c.connect_timeout = cap_s;
	if (c.read_timeout <= 0 || c.read_timeout > cap_s)
		c.read_timeout = cap_s;
	if (c.write_timeout <= 0 || c.write_timeout > cap_s)
		c.write_timeout = cap_s;
	if (!(ss = calloc((size_t)c.nshards, sizeof *ss))) {
		rc = bs_error(BS_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = bs_store_open(&st, &c)) < 0 || (rc = bs_shard_status(ss, st)) < 0) {
		if (rc != BS_ECONFIG) { /* not a disagreement: unchecked */
			snprintf(unchecked, un, "%s", bs_last_error());
			rc = 0;
		}
		goto done;
	}
	for (int i = 0; i < c.nshards; i++) {
		if (ss[i].state == BS_SHARD_DOWN) {
			if (o < un)
				o += (size_t)snprintf(unchecked + o, un - o, "%s%s (%s)", o ? ", " : "", ss[i].name,
				                      ss[i].error);
		} else if (ss[i].fingerprint_ok == 0) {
			rc = bs_error(BS_ECONFIG, "%s", ss[i].error);
			goto done;
		} else if (ss[i].fingerprint_ok < 0) {
			rc = bs_error(BS_ECONFIG,
			              "shard %s (%s) is not initialised: run `bagstore init` (or is this "
			              "another shard list?)",
			              ss[i].name, ss[i].address);
			goto done;
		}
	}
done:
	if (st)
		bs_store_free(st);
	free(ss);
	return rc;
}

const char *bs_shard_state_name(bs_shard_state_t s)
{
	switch (s) {
	case BS_SHARD_UP: return "up";
	case BS_SHARD_SLOW: return "slow";
	case BS_SHARD_DOWN: return "unreachable";
	}
	return "unknown";
}

/*
 * replica.c - how far behind a shard's replica is (Seconds_Behind_Master),
 * for the shards' status and the cleaner's throttle.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Seconds behind of one replica, through the connection cached in *conn
 * (opened when NULL, closed and cleared when it fails); -1 with err set
 * when it does not answer or is not replicating (unknown lag). A replica
 * without a login of its own uses its shard's. */
/* Open the replica's connection (its tls, inherited from its shard's, set
 * by tls.c as for shards); NULL with err set when it fails. */
static MYSQL *replica_connect(const bs_replica_conf_t *r, const bs_shard_conf_t *sc, unsigned timeout,
                              char *err, size_t size, bs_tls_state_t *tls)
{
	const char *user = r->user ? r->user : sc->user;
	const char *penv = r->user || r->password_env ? r->password_env : sc->password_env;
	const char *pw = penv ? getenv(penv) : NULL;
	bs_tls_state_t got;
	MYSQL *m;

	if (!(m = mysql_init(NULL))) {
		snprintf(err, size, "out of memory");
		return NULL;
	}
	mysql_optionsv(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	mysql_optionsv(m, MYSQL_OPT_READ_TIMEOUT, &timeout);
	bs__tls_apply(m, &r->tls);
	if (!mysql_real_connect(m, r->host, user, pw, NULL, r->port, r->socket, 0)) {
		bs__tls_connect_error(err, size, m, &r->tls, r->host);
		mysql_close(m);
		return NULL;
	}
	if (bs__tls_check(&got, m, &r->tls, err, size)) {
		mysql_close(m);
		return NULL;
	}
	if (tls)
		*tls = got;
	return m;
}

double bs__replica_seconds_behind(MYSQL **conn, const bs_replica_conf_t *r, const bs_shard_conf_t *sc,
                              unsigned timeout, char *err, size_t size, bs_tls_state_t *tls)
{
	MYSQL *m = *conn;
	double lag = -1;
	if (!m) {
		if (!(m = replica_connect(r, sc, timeout, err, size, tls)))
			return -1;
		*conn = m;
	}
	if (mysql_query(m, "SHOW SLAVE STATUS")) {
		snprintf(err, size, "%s", mysql_error(m));
		mysql_close(m);
		*conn = NULL;
		return -1;
	}
	MYSQL_RES *res = mysql_store_result(m);
	if (!res) {
		snprintf(err, size, "%s", mysql_error(m));
		return -1;
	}
	MYSQL_ROW row = mysql_fetch_row(res);
	unsigned nf = mysql_num_fields(res);
	MYSQL_FIELD *f = mysql_fetch_fields(res);
	snprintf(err, size, "not replicating");
	for (unsigned k = 0; row && k < nf; k++)
		if (!strcmp(f[k].name, "Seconds_Behind_Master") && row[k])
			lag = strtod(row[k], NULL);
	mysql_free_result(res);
	return lag;
}

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
double bs__replica_seconds_behind(MYSQL **conn, const bs_replica_conf_t *r, const bs_shard_conf_t *sc,
                              unsigned timeout, char *err, size_t size)
{
	MYSQL *m = *conn;
	double lag = -1;
	if (!m) {
		const char *user = r->user ? r->user : sc->user;
		const char *penv = r->user || r->password_env ? r->password_env : sc->password_env;
		const char *pw = penv ? getenv(penv) : NULL;
		if (!(m = mysql_init(NULL))) {
			snprintf(err, size, "out of memory");
			return -1;
		}
		mysql_optionsv(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
		mysql_optionsv(m, MYSQL_OPT_READ_TIMEOUT, &timeout);
		if (!mysql_real_connect(m, r->host, user, pw, NULL, r->port, r->socket, 0)) {
			snprintf(err, size, "%s", mysql_error(m));
			mysql_close(m);
			return -1;
		}
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

/*
 * replica.c - how far behind a shard's replica is: Seconds_Behind_Master
 * for the shards' status, and the heartbeat row as the replica has it for
 * the cleaner's throttle (sub-second, pt-heartbeat style).
 */
#include "internal.h"

#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Open the replica's connection (its tls, inherited from its shard's, set
 * by tls.c as for shards); NULL with err set when it fails. A replica
 * without a login of its own uses its shard's. */
static MYSQL *replica_connect(const bs_replica_conf_t *r, const bs_shard_conf_t *sc, unsigned timeout, char *err,
                              size_t size, bs_tls_state_t *tls)
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
	mysql_optionsv(m, MYSQL_OPT_WRITE_TIMEOUT, &timeout);
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

/* SHOW SLAVE STATUS through *conn (closed and cleared when the statement
 * fails): whether the SQL thread runs, and Seconds_Behind_Master (-1 when
 * NULL). -1 with err when it cannot be read or there is none. */
static int slave_status(bool *sql_running, double *sbm, MYSQL **conn, char *err, size_t size)
{
	MYSQL *m = *conn;
	*sql_running = false;
	*sbm = -1;
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
	for (unsigned k = 0; row && k < nf; k++) {
		if (!strcmp(f[k].name, "Seconds_Behind_Master") && row[k])
			*sbm = bs__strtod_c(row[k], NULL);
		if (!strcmp(f[k].name, "Slave_SQL_Running") && row[k])
			*sql_running = !strcmp(row[k], "Yes");
	}
	mysql_free_result(res);
	if (!row) {
		snprintf(err, size, "not replicating");
		return -1;
	}
	return 0;
}

/* Seconds behind of one replica, through the connection cached in *conn
 * (opened when NULL, closed and cleared when it fails); -1 with err set
 * when it does not answer or is not replicating (unknown lag). */
double bs__replica_seconds_behind(MYSQL **conn, const bs_replica_conf_t *r, const bs_shard_conf_t *sc, unsigned timeout,
                                  char *err, size_t size, bs_tls_state_t *tls)
{
	bool running;
	double sbm;
	if (!*conn && !(*conn = replica_connect(r, sc, timeout, err, size, tls)))
		return -1;
	if (slave_status(&running, &sbm, conn, err, size))
		return -1;
	if (sbm < 0)
		snprintf(err, size, "not replicating");
	return sbm;
}

int bs__replica_heartbeat(bs__replica_hb_t *out, MYSQL **conn, const bs_replica_conf_t *r, const bs_shard_conf_t *sc,
                          unsigned timeout, char *err, size_t size)
{
	bs_buf_t b = { 0 };
	MYSQL *m;
	int rc = -1;
	memset(out, 0, sizeof *out);
	out->sbm = -1;
	if (!*conn && !(*conn = replica_connect(r, sc, timeout, err, size, NULL)))
		return -1;
	if (slave_status(&out->sql_running, &out->sbm, conn, err, size))
		return -1;
	if (!out->sql_running) {
		snprintf(err, size, "not replicating (its SQL thread does not run)");
		return -1;
	}
	m = *conn;
	bs__buf_puts(&b, "SELECT CAST(UNIX_TIMESTAMP(NOW(6))*1000000 AS SIGNED),"
	                 " (SELECT CAST(UNIX_TIMESTAMP(ts)*1000000 AS SIGNED) FROM ");
	bs__buf_ident(&b, sc->database);
	bs__buf_puts(&b, ".bagstore_heartbeat WHERE shard=");
	bs__buf_hex(&b, sc->name, strlen(sc->name));
	bs__buf_puts(&b, ")");
	if (bs__buf_ok(&b)) {
		snprintf(err, size, "out of memory");
		goto done;
	}
	if (mysql_real_query(m, b.ptr, (unsigned long)b.len)) {
		unsigned e = mysql_errno(m);
		snprintf(err, size, "%s", mysql_error(m));
		if (e == ER_NO_SUCH_TABLE || e == ER_BAD_DB_ERROR) { /* not replicated yet: no row */
			out->now_us = 0;
			rc = 0;
		} else if (e >= 2000) { /* a client error: the connection is suspect */
			mysql_close(m);
			*conn = NULL;
		}
		goto done;
	}
	MYSQL_RES *res = mysql_store_result(m);
	MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
	if (row && row[0]) {
		out->now_us = strtoll(row[0], NULL, 10);
		out->hb_us = row[1] ? strtoll(row[1], NULL, 10) : 0;
		rc = 0;
	} else {
		snprintf(err, size, "%s", res ? "no answer" : mysql_error(m));
	}
	if (res)
		mysql_free_result(res);
done:
	bs__buf_free(&b);
	return rc;
}

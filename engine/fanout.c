/*
 * fanout.c - statements on many shards at once, from the calling thread:
 * MariaDB Connector/C's non-blocking API (mysql_*_start / _cont) and
 * poll(2), as ProxySQL does it. No thread per call: a query, a write's
 * index rows, a catalog read cost one round trip however many shards they
 * touch, and the time of the slowest shard, not the sum.
 *
 * Each shard's work is a small state machine: connect (when there is no
 * connection; the identity check of bs__shard_check then runs on the new
 * connection, blocking, once per connection), send the statements, store
 * each result set, move to the next one, done. The connect, read and write
 * timeouts of the store apply as they do to blocking calls (the library
 * reports them as MYSQL_WAIT_TIMEOUT).
 *
 * With a statement trace set (bs_store_trace), each shard's statements are
 * told to it when they are done (bs__trace_emit): their time from sending
 * to the last result stored, their rows and MySQL's error.
 */
#include "internal.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum step { S_IDLE, S_CONNECT, S_QUERY, S_STORE, S_NEXT, S_DONE };

typedef struct {
	enum step step;
	int wait;        /* what the library waits for (MYSQL_WAIT_*), 0 when not */
	MYSQL *m;        /* the connection (or the handle being connected) */
	double deadline; /* monotonic seconds, when waiting with a timeout */
	double t0;       /* when the statements were sent, traced only (else 0) */
	int64_t at_us;
	int64_t rows; /* rows of the result sets, else rows affected: the trace's */
} run_t;

/* Shard i's statements are done: told to the trace when it is on. */
static void finish(bs__shard_stmt_t *q, run_t *r, bs_store_t *st, int i)
{
	r->step = S_DONE;
	r->wait = 0;
	if (r->t0 > 0)
		bs__trace_emit(st, i, q->sql, q->len, r->t0, r->at_us, r->rows, false,
		               q->rc ? st->shards[i].last_errno : 0, q->rc ? q->msg : NULL);
}

static void fail(bs__shard_stmt_t *q, run_t *r, bs_store_t *st, int i, int rc)
{
	q->rc = rc;
	snprintf(q->msg, sizeof q->msg, "%s", bs_last_error());
	finish(q, r, st, i);
}

/* Note what the library waits for after a _start or _cont call. */
static void waiting(run_t *r, int status)
{
	r->wait = status;
	r->deadline = 0;
	if (status & MYSQL_WAIT_TIMEOUT)
		r->deadline = bs_now_mono() + (double)mysql_get_timeout_value_ms(r->m) / 1000.0;
}

/* The step after a result set was stored (or there was none). */
static void after_store(bs__shard_stmt_t *q, run_t *r, bs_store_t *st, int i, MYSQL_RES *res)
{
	if (res) {
		r->rows += (int64_t)mysql_num_rows(res);
		if (q->nres < BS__MAX_RESULTS)
			q->res[q->nres++] = res;
		else
			mysql_free_result(res);
	} else if (mysql_field_count(r->m) != 0) {
		fail(q, r, st, i, bs__shard_fail(st, i, "reading rows"));
		return;
	} else {
		r->rows += (int64_t)mysql_affected_rows(r->m);
		q->affected = (int64_t)mysql_affected_rows(r->m);
	}
	if (!mysql_more_results(r->m)) {
		finish(q, r, st, i);
		return;
	}
	r->step = S_NEXT;
	int ret = 0, status = mysql_next_result_start(&ret, r->m);
	if (status) {
		waiting(r, status);
		return;
	}
	if (ret > 0) {
		fail(q, r, st, i, bs__shard_fail(st, i, "statement failed"));
		return;
	}
	r->step = S_STORE;
	MYSQL_RES *next = NULL;
	if ((status = mysql_store_result_start(&next, r->m)))
		waiting(r, status);
	else
		after_store(q, r, st, i, next);
}

/* The statements, once connected and checked. */
static void send_query(bs__shard_stmt_t *q, run_t *r, bs_store_t *st, int i)
{
	int ret = 0, status;
	r->step = S_QUERY;
	st->shards[i].last_errno = 0;
	bs__shard_sent(&st->shards[i], q->sql, q->len);
	if (st->trace_fn) {
		r->t0 = bs_now_mono();
		r->at_us = bs_now_us();
	}
	q->affected = 0;
	if ((status = mysql_real_query_start(&ret, r->m, q->sql, (unsigned long)q->len))) {
		waiting(r, status);
		return;
	}
	if (ret) {
		fail(q, r, st, i, bs__shard_fail(st, i, "query failed"));
		return;
	}
	r->step = S_STORE;
	MYSQL_RES *res = NULL;
	if ((status = mysql_store_result_start(&res, r->m)))
		waiting(r, status);
	else
		after_store(q, r, st, i, res);
}

/* A connection, new or not, and the identity check: then the statements. */
static void connected(bs__shard_stmt_t *q, run_t *r, bs_store_t *st, int i)
{
	int rc;
	if (!q->unchecked && (rc = bs__shard_check(st, i))) {
		fail(q, r, st, i, rc);
		return;
	}
	r->m = st->shards[i].conn;
	send_query(q, r, st, i);
}

static void start(bs__shard_stmt_t *q, run_t *r, bs_store_t *st, int i)
{
	bs_shard_t *sh = &st->shards[i];
	const bs_shard_conf_t *c = sh->conf;
	const char *password;
	MYSQL *m, *got = NULL;
	int rc, status;

	if (sh->conn) {
		MYSQL *unused;
		bs__shard_conn(&unused, st, i); /* reads a pending answer first */
		sh->last_errno = 0;               /* this run's, not that answer's */
		connected(q, r, st, i);
		return;
	}
	sh->last_errno = 0;
	if ((rc = bs__shard_prepare(&m, &password, st, i))) {
		fail(q, r, st, i, rc);
		return;
	}
	r->m = m;
	r->step = S_CONNECT;
	status = mysql_real_connect_start(&got, m, c->host, c->user, password, c->database, c->port, c->socket,
	                                  CLIENT_MULTI_STATEMENTS | CLIENT_FOUND_ROWS);
	if (status) {
		waiting(r, status);
		return;
	}
	if (!got) {
		r->m = NULL;
		fail(q, r, st, i, bs__shard_connect_failed(st, i, m));
		return;
	}
	if ((rc = bs__shard_adopt(st, i, m))) {
		r->m = NULL;
		fail(q, r, st, i, rc);
		return;
	}
	connected(q, r, st, i);
}

/* The library's wait is over (events, or MYSQL_WAIT_TIMEOUT): go on. */
static void resume(bs__shard_stmt_t *q, run_t *r, bs_store_t *st, int i, int events)
{
	const bs_shard_conf_t *c = st->shards[i].conf;
	int ret = 0, status;
	MYSQL *got = NULL;
	MYSQL_RES *res = NULL;
	(void)c;
	r->wait = 0;
	switch (r->step) {
	case S_CONNECT:
		if ((status = mysql_real_connect_cont(&got, r->m, events))) {
			waiting(r, status);
			return;
		}
		if (!got) {
			MYSQL *m = r->m;
			r->m = NULL;
			fail(q, r, st, i, bs__shard_connect_failed(st, i, m));
			return;
		}
		if ((ret = bs__shard_adopt(st, i, r->m))) {
			r->m = NULL;
			fail(q, r, st, i, ret);
			return;
		}
		connected(q, r, st, i);
		return;
	case S_QUERY:
		if ((status = mysql_real_query_cont(&ret, r->m, events))) {
			waiting(r, status);
			return;
		}
		if (ret) {
			fail(q, r, st, i, bs__shard_fail(st, i, "query failed"));
			return;
		}
		r->step = S_STORE;
		if ((status = mysql_store_result_start(&res, r->m)))
			waiting(r, status);
		else
			after_store(q, r, st, i, res);
		return;
	case S_STORE:
		if ((status = mysql_store_result_cont(&res, r->m, events)))
			waiting(r, status);
		else
			after_store(q, r, st, i, res);
		return;
	case S_NEXT:
		if ((status = mysql_next_result_cont(&ret, r->m, events))) {
			waiting(r, status);
			return;
		}
		if (ret > 0) {
			fail(q, r, st, i, bs__shard_fail(st, i, "statement failed"));
			return;
		}
		r->step = S_STORE;
		if ((status = mysql_store_result_start(&res, r->m)))
			waiting(r, status);
		else
			after_store(q, r, st, i, res);
		return;
	default: return;
	}
}

/* Wait for any shard's socket (or the nearest timeout) and resume those
 * that are ready. */
static int wait_round(bs__shard_stmt_t *q, run_t *runs, struct pollfd *fds, int *who, bs_store_t *st)
{
	int nfds = 0;
	double now = bs_now_mono(), first_deadline = 0;
	for (int i = 0; i < st->n; i++) {
		run_t *r = &runs[i];
		if (r->step == S_DONE || r->step == S_IDLE || !r->wait)
			continue;
		short ev = 0;
		if (r->wait & MYSQL_WAIT_READ)
			ev |= POLLIN;
		if (r->wait & MYSQL_WAIT_WRITE)
			ev |= POLLOUT;
		if (r->wait & MYSQL_WAIT_EXCEPT)
			ev |= POLLPRI;
		fds[nfds] = (struct pollfd){ .fd = (int)mysql_get_socket(r->m), .events = ev };
		who[nfds++] = i;
		if (r->deadline > 0 && (first_deadline == 0 || r->deadline < first_deadline))
			first_deadline = r->deadline;
	}
	if (!nfds)
		return 0;
	int ms = first_deadline > 0 ? (int)((first_deadline - now) * 1000.0) + 1 : -1;
	if (first_deadline > 0 && ms < 0)
		ms = 0;
	int n = poll(fds, (nfds_t)nfds, ms);
	if (n < 0)
		return 0; /* EINTR: look again */
	now = bs_now_mono();
	for (int k = 0; k < nfds; k++) {
		int i = who[k], events = 0;
		run_t *r = &runs[i];
		if (fds[k].revents & (POLLIN | POLLHUP | POLLERR))
			events |= MYSQL_WAIT_READ;
		if (fds[k].revents & POLLOUT)
			events |= MYSQL_WAIT_WRITE;
		if (fds[k].revents & POLLPRI)
			events |= MYSQL_WAIT_EXCEPT;
		if (!events && r->deadline > 0 && now >= r->deadline)
			events = MYSQL_WAIT_TIMEOUT;
		if (events)
			resume(&q[i], r, st, i, events);
	}
	return 0;
}

void bs__shard_stmts_clear(bs__shard_stmt_t *q, int n)
{
	for (int i = 0; q && i < n; i++) {
		for (int k = 0; k < q[i].nres; k++)
			mysql_free_result(q[i].res[k]);
		q[i].nres = 0;
	}
}

int bs__shard_run(bs_store_t *st, bs__shard_stmt_t *q)
{
	int n = st->n, rc = 0;
	run_t *runs = calloc((size_t)n, sizeof *runs);
	struct pollfd *fds = calloc((size_t)n, sizeof *fds);
	int *who = calloc((size_t)n, sizeof *who);
	if (!runs || !fds || !who) {
		rc = bs__oom();
		goto done;
	}
	for (int i = 0; i < n; i++) {
		q[i].rc = 0;
		q[i].nres = 0;
		q[i].msg[0] = '\0';
		if (q[i].sql)
			start(&q[i], &runs[i], st, i);
		else
			runs[i].step = S_DONE;
	}
	for (;;) {
		bool busy = false;
		for (int i = 0; i < n; i++)
			busy |= runs[i].step != S_DONE;
		if (!busy)
			break;
		wait_round(q, runs, fds, who, st);
	}
	/* the first failure in shard order, with its own message */
	for (int i = 0; i < n; i++)
		if (q[i].sql && q[i].rc) {
			rc = bs_error(q[i].rc, "%s", q[i].msg);
			break;
		}
done:
	free(runs);
	free(fds);
	free(who);
	return rc;
}

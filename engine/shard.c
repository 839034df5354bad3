/*
 * shard.c - connections to shards, statements on them, and running work on
 * every shard at once.
 *
 * Each shard has at most one MYSQL handle per store, opened on first use
 * with the configuration's timeouts and closed when the server is lost, so
 * the next call reconnects. Errors always name the shard and carry MySQL's
 * own message and number.
 *
 * Every blocking statement is sent and its answer read in one place,
 * stmt(), which is also where the statement trace (bs_store_trace) hooks
 * in: a test of one pointer when it is off. fanout.c tells the trace of the
 * statements it sends without blocking the same way (bs__trace_emit).
 */
#include "internal.h"

#include <ctype.h>
#include <limits.h>
#include <errmsg.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>
#include <mysqld_error.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

double bs_now_mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int64_t bs_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t bs__parse_unix_us(const char *s)
{
	if (!s)
		return 0;
	bool neg = (*s == '-');
	if (neg)
		s++;
	int64_t whole = 0, frac = 0;
	int digits = 0;
	for (; *s >= '0' && *s <= '9'; s++)
		whole = whole * 10 + (*s - '0');
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9' && digits < 6; s++, digits++)
			frac = frac * 10 + (*s - '0');
	for (; digits < 6; digits++)
		frac *= 10;
	int64_t us = whole * 1000000 + frac;
	return neg ? -us : us;
}

void bs__shard_address(char *buf, size_t size, const bs_shard_conf_t *c)
{
	if (c->host)
		snprintf(buf, size, "%s:%u", c->host, c->port ? c->port : 3306);
	else if (c->socket)
		snprintf(buf, size, "%s", c->socket);
	else if (c->defaults_file)
		snprintf(buf, size, "%s", c->defaults_file);
	else
		snprintf(buf, size, "localhost");
}

const char *bs__shard_label(char *buf, size_t size, const bs_shard_t *sh)
{
	char addr[128];
	bs__shard_address(addr, sizeof addr, sh->conf);
	snprintf(buf, size, "shard %s (%s)", sh->conf->name, addr);
	return buf;
}

static bool lost_connection(unsigned err)
{
	return err == CR_SERVER_GONE_ERROR || err == CR_SERVER_LOST || err == CR_CONNECTION_ERROR ||
	       err == CR_CONN_HOST_ERROR || err == CR_UNKNOWN_HOST || err == CR_SERVER_LOST_EXTENDED ||
	       err == ER_CONNECTION_KILLED || err == CR_COMMANDS_OUT_OF_SYNC ||
	       err == 4031 /* ER_CLIENT_INTERACTION_TIMEOUT */;
}

bool bs__denied(unsigned err)
{
	return err == ER_TABLEACCESS_DENIED_ERROR || err == ER_COLUMNACCESS_DENIED_ERROR ||
	       err == ER_DBACCESS_DENIED_ERROR || err == ER_SPECIFIC_ACCESS_DENIED_ERROR;
}

/* A failure on shard i: err and msg are MySQL's (the connection's, or a
 * prepared statement's). */
static int fail_with(bs_store_t *st, int i, const char *what, unsigned err, const char *msg)
{
	bs_shard_t *sh = &st->shards[i];
	char label[192];
	int code = BS_ESQL;
	sh->last_errno = err;
	if (lost_connection(err) || err == 0)
		code = BS_EUNREACHABLE;
	else if (err == ER_LOCK_DEADLOCK || err == ER_LOCK_WAIT_TIMEOUT || err == ER_DUP_ENTRY ||
	         err == ER_AUTOINC_READ_FAILED) /* InnoDB's answer to the victim of a deadlock over the
	                                         * AUTO_INCREMENT lock (an INSERT ... SELECT holds it) */
		code = BS_ECONFLICT;
	/* MySQL's message names the privilege ("INSERT command denied to user
	 * ..."); say where the list of what each role needs is */
	bs_error(code, "%s: %s: %s (MySQL error %u)%s", bs__shard_label(label, sizeof label, sh), what, msg, err,
	         bs__denied(err) ? "; the account lacks that privilege: `bagstore grants "
	                           "--role ROLE` prints what each role needs"
	                         : "");
	if (code == BS_EUNREACHABLE)
		bs__shard_close(st, i);
	return code;
}

int bs__shard_fail(bs_store_t *st, int i, const char *what)
{
	MYSQL *m = st->shards[i].conn;
	return fail_with(st, i, what, m ? mysql_errno(m) : 0, m ? mysql_error(m) : "not connected");
}

unsigned bs__shard_last_errno(const bs_store_t *st, int i)
{
	return st->shards[i].last_errno;
}

int bs__shard_last_done(const bs_store_t *st, int i)
{
	return st->shards[i].last_done;
}

/* ------------------------------------------------------------ our own writes */

/* One counter per server address for the whole process, made on first use
 * and kept for its life (a process talks to few servers). */
struct bs__writes {
	struct bs__writes *next;
	char address[256];
	atomic_uint_least64_t n;
};

static pthread_mutex_t writes_mu = PTHREAD_MUTEX_INITIALIZER;
static struct bs__writes *writes_list;

static struct bs__writes *writes_of(bs_shard_t *sh)
{
	char address[256];
	struct bs__writes *w;
	if (sh->writes)
		return sh->writes;
	bs__shard_address(address, sizeof address, sh->conf);
	pthread_mutex_lock(&writes_mu);
	for (w = writes_list; w && strcmp(w->address, address); w = w->next)
		;
	if (!w && (w = calloc(1, sizeof *w))) {
		snprintf(w->address, sizeof w->address, "%s", address);
		atomic_init(&w->n, 0);
		w->next = writes_list;
		writes_list = w;
	}
	pthread_mutex_unlock(&writes_mu);
	return sh->writes = w;
}

/* Past white space and comments. */
static const char *sql_skip(const char *p, const char *end)
{
	for (;;) {
		while (p < end && isspace((unsigned char)*p))
			p++;
		if (end - p >= 2 && p[0] == '/' && p[1] == '*') {
			const char *q = p + 2;
			while (end - q >= 2 && !(q[0] == '*' && q[1] == '/'))
				q++;
			p = end - q >= 2 ? q + 2 : end;
		} else if (p < end && (*p == '#' ||
		                       (end - p >= 3 && p[0] == '-' && p[1] == '-' && isspace((unsigned char)p[2])))) {
			while (p < end && *p != '\n')
				p++;
		} else {
			return p;
		}
	}
}

static bool sql_word(const char *p, const char *end, const char *w)
{
	size_t n = strlen(w);
	return (size_t)(end - p) >= n && !strncasecmp(p, w, n) &&
	       ((size_t)(end - p) == n || !(isalnum((unsigned char)p[n]) || p[n] == '_'));
}

static bool sql_ident(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$';
}

static bool sql_is_write(const char *p, const char *end)
{
	return sql_word(p, end, "INSERT") || sql_word(p, end, "REPLACE") || sql_word(p, end, "UPDATE") ||
	       sql_word(p, end, "DELETE");
}

/* Where a statement may start: the text's start, after ';', and inside a
 * compound statement (BEGIN NOT ATOMIC ... END, IF ... THEN ... ELSE,
 * loops) after BEGIN [NOT ATOMIC], THEN, ELSE, DO, LOOP and REPEAT. A write
 * there is counted as the server counts it once it runs (a block's branch
 * not taken is counted all the same: ours too many, never theirs too few,
 * and only when a fence refuses). */
static bool sql_opens(const char *w, const char *e)
{
	static const char *const kw[] = { "BEGIN", "NOT", "ATOMIC", "THEN", "ELSE", "DO", "LOOP", "REPEAT" };
	for (size_t k = 0; k < sizeof kw / sizeof kw[0]; k++)
		if (sql_word(w, e, kw[k]))
			return true;
	return false;
}

uint64_t bs__sql_writes(const char *sql, size_t len)
{
	const char *p = sql_skip(sql, sql + len), *end = sql + len;
	uint64_t n = 0;
	bool start = true;
	/* SET STATEMENT var=value[, ...] FOR stmt: the statement after FOR is
	 * the one the server counts. set: 1 after a statement's SET, 2 after
	 * SET STATEMENT (until its FOR) */
	int set = 0;
	if (p < end && !memchr(p, ';', (size_t)(end - p)) && !sql_word(p, end, "SET"))
		return sql_is_write(p, end); /* one statement (the common case): its first word */
	while (p < end) {
		char c = *p;
		if (isalpha((unsigned char)c) || c == '_') {
			const char *w = p;
			while (p < end && sql_ident(*p))
				p++;
			if (start && sql_is_write(w, end))
				n++;
			bool opens = sql_opens(w, p);
			if (set == 2 && sql_word(w, p, "FOR")) {
				opens = true;
				set = 0;
			} else if (set == 1) {
				set = sql_word(w, p, "STATEMENT") ? 2 : 0;
			} else if (start && sql_word(w, p, "SET")) {
				set = 1;
			}
			start = opens;
		} else if (c == '\'' || c == '"' || c == '`') {
			for (p++; p < end && *p != c; p++)
				if (*p == '\\' && c != '`' && p + 1 < end)
					p++;
			p += p < end;
			start = false;
		} else if (isspace((unsigned char)c) || c == '/' || c == '#' || c == '-') {
			const char *q = sql_skip(p, end);
			if (q == p) {
				p++;
				start = false;
			} else {
				p = q;
			}
		} else {
			start = c == ';';
			if (start)
				set = 0;
			p++;
		}
	}
	return n;
}

/* throttles open in the process (bs__shard_count_writes) */
static atomic_int counting;

void bs__shard_count_writes(bool on)
{
	atomic_fetch_add(&counting, on ? 1 : -1);
}

void bs__shard_sent(bs_shard_t *sh, const char *sql, size_t len)
{
	if (!atomic_load_explicit(&counting, memory_order_relaxed))
		return; /* nobody reads the count: no scan of the text (perf: 15% of a put's client CPU) */
	uint64_t n = bs__sql_writes(sql, len);
	struct bs__writes *w;
	if (n && (w = writes_of(sh)))
		atomic_fetch_add(&w->n, n);
}

uint64_t bs__shard_writes_sent(bs_store_t *st, int i)
{
	struct bs__writes *w = writes_of(&st->shards[i]);
	return w ? atomic_load(&w->n) : 0;
}

/* ------------------------------------------------------------ the trace */

/* The process's trace, which stores opened afterwards start with. */
static pthread_mutex_t trace_mu = PTHREAD_MUTEX_INITIALIZER;
static bs_trace_fn trace_fn_default;
static void *trace_arg_default;

void bs_trace_set(bs_trace_fn fn, void *arg)
{
	pthread_mutex_lock(&trace_mu);
	trace_fn_default = fn;
	trace_arg_default = arg;
	pthread_mutex_unlock(&trace_mu);
}

void bs__trace_default(bs_trace_fn *fn, void **arg)
{
	pthread_mutex_lock(&trace_mu);
	*fn = trace_fn_default;
	*arg = trace_arg_default;
	pthread_mutex_unlock(&trace_mu);
}

void bs_store_trace(bs_store_t *st, bs_trace_fn fn, void *arg)
{
	st->trace_fn = fn;
	st->trace_arg = arg;
}

void bs_store_trace_get(const bs_store_t *st, bs_trace_fn *fn, void **arg)
{
	*fn = st->trace_fn;
	*arg = st->trace_arg;
}

#define TRACE_VALUE_MAX 64  /* bytes of a value shown whole */
#define TRACE_TEXT_MAX 4000 /* bytes of a statement shown */

/* Could the statement carry a password? Its first words, or IDENTIFIED or
 * PASSWORD anywhere (values reach SQL as hex, whose digits spell neither). */
static bool may_carry_password(const char *sql, size_t len)
{
	static const char *const starts[] = { "CREATE USER", "ALTER USER",    "SET PASSWORD",
		                              "GRANT",       "CHANGE MASTER", "CHANGE REPLICATION" };
	static const char *const words[] = { "IDENTIFIED", "PASSWORD" };
	size_t i = 0;
	while (i < len && (sql[i] == ' ' || sql[i] == '\t' || sql[i] == '\n' || sql[i] == '\r'))
		i++;
	for (size_t k = 0; k < sizeof starts / sizeof *starts; k++)
		if (len - i >= strlen(starts[k]) && !strncasecmp(sql + i, starts[k], strlen(starts[k])))
			return true;
	for (size_t k = 0; k < sizeof words / sizeof *words; k++) {
		size_t n = strlen(words[k]);
		for (size_t j = i; j + n <= len; j++)
			if (!strncasecmp(sql + j, words[k], n))
				return true;
	}
	return false;
}

char *bs__trace_text(const char *sql, size_t len)
{
	bs_buf_t b = { 0 };
	size_t i = 0;
	if (may_carry_password(sql, len)) {
		/* its first two words, no more */
		int words = 0;
		while (i < len && (sql[i] == ' ' || sql[i] == '\t' || sql[i] == '\n'))
			i++;
		size_t from = i;
		while (i < len && words < 2) {
			while (i < len && sql[i] != ' ' && sql[i] != '\t' && sql[i] != '\n')
				i++;
			words++;
			if (words < 2)
				while (i < len && (sql[i] == ' ' || sql[i] == '\t' || sql[i] == '\n'))
					i++;
		}
		bs__buf_putn(&b, sql + from, i - from < 32 ? i - from : 32);
		bs__buf_puts(&b, " <masked: the statement may carry a password>");
		return b.oom ? (bs__buf_free(&b), NULL) : b.ptr;
	}
	while (i < len && b.len < TRACE_TEXT_MAX) {
		char c = sql[i];
		bool hex = (c == 'X' || c == 'x') && i + 1 < len && sql[i + 1] == '\'' &&
		           (i == 0 || !(isalnum((unsigned char)sql[i - 1]) || sql[i - 1] == '_'));
		if (hex) {
			size_t j = i + 2;
			while (j < len && sql[j] != '\'')
				j++;
			size_t digits = j - (i + 2);
			if (digits > 2 * TRACE_VALUE_MAX) {
				bs__buf_putn(&b, sql + i, 2 + TRACE_VALUE_MAX);
				bs__buf_printf(&b, "...'[%zu bytes]", digits / 2);
			} else {
				bs__buf_putn(&b, sql + i, j + 1 <= len ? j + 1 - i : len - i);
			}
			i = j + 1;
			continue;
		}
		if (c == '\'' || c == '"') {
			size_t j = i + 1;
			while (j < len) {
				if (sql[j] == '\\') {
					j += 2;
					continue;
				}
				if (sql[j] == c) {
					if (j + 1 < len && sql[j + 1] == c) {
						j += 2;
						continue;
					}
					break;
				}
				j++;
			}
			if (j > len)
				j = len;
			size_t n = j - (i + 1);
			if (n > TRACE_VALUE_MAX) {
				size_t keep = TRACE_VALUE_MAX / 2;
				while (keep > 0 && ((unsigned char)sql[i + 1 + keep] & 0xC0) == 0x80)
					keep--; /* not inside a UTF-8 character */
				bs__buf_putn(&b, sql + i, 1 + keep);
				bs__buf_printf(&b, "...%c[%zu bytes]", c, n);
			} else {
				bs__buf_putn(&b, sql + i, j < len ? j + 1 - i : len - i);
			}
			i = j + 1;
			continue;
		}
		bs__buf_putn(&b, &c, 1);
		i++;
	}
	if (i < len)
		bs__buf_printf(&b, " ... [%zu bytes in all]", len);
	if (!b.ptr)
		bs__buf_puts(&b, "");
	return b.oom ? (bs__buf_free(&b), NULL) : b.ptr;
}

/* Tell the trace about a statement whose text is shown already. */
static void trace_tell(bs_store_t *st, int i, const char *text, double t0, int64_t at_us, int64_t rows, bool async,
                       unsigned err, const char *msg)
{
	bs_trace_t t = {
		.shard = st->shards[i].conf->name,
		.shard_index = i,
		.sql = text,
		.at_us = at_us,
		.seconds = bs_now_mono() - t0,
		.rows = rows,
		.async = async,
		.err = err,
		.error = msg ? msg : "",
	};
	if (st->trace_fn)
		st->trace_fn(st->trace_arg, &t);
}

void bs__trace_emit(bs_store_t *st, int i, const char *sql, size_t len, double t0, int64_t at_us, int64_t rows,
                    bool async, unsigned err, const char *msg)
{
	char *text = bs__trace_text(sql, len);
	trace_tell(st, i, text ? text : "(out of memory showing the statement)", t0, at_us, rows, async, err, msg);
	free(text);
}

/* Close every statement prepared on sh's connection (on a closed one
 * they only free their memory). */
static void prep_close_all(bs_shard_t *sh)
{
	for (int k = 0; k < BS__PREP_N; k++)
		if (sh->prep[k]) {
			mysql_stmt_close(sh->prep[k]);
			sh->prep[k] = NULL;
		}
	for (int k = 0; k < BS__PREP_DYN; k++) {
		if (sh->dyn[k].s)
			mysql_stmt_close(sh->dyn[k].s);
		free(sh->dyn[k].sql);
		sh->dyn[k].s = NULL;
		sh->dyn[k].sql = NULL;
		sh->dyn[k].used = 0;
	}
	sh->dyn_clock = 0;
}

/* Close shard i's connection and the statements prepared on it (after
 * the connection: closed with it, they only free their memory). */
static void conn_close(bs_shard_t *sh)
{
	mysql_close(sh->conn);
	sh->conn = NULL;
	sh->conn_gen++;
	prep_close_all(sh);
	sh->prep_off_until = 0;
	sh->no_proc_until = 0;
	sh->in_snapshot = false; /* an export's snapshot went with it */
}

/* Read the answer of a statement bs__shard_send sent; on failure release
 * its lock again (best effort: the server releases it anyway when the
 * connection closes). A traced one is told now, with its rows and error. */
static void drain_pending(bs_store_t *st, int i)
{
	bs_shard_t *sh = &st->shards[i];
	MYSQL *m = sh->conn;
	bool failed = false;
	int64_t rows = 0;
	unsigned err = 0;
	char msg[512] = "";
	sh->pending = false;
	if (mysql_read_query_result(m))
		failed = true;
	for (; !failed;) {
		MYSQL_RES *res = mysql_store_result(m);
		if (res) {
			rows += (int64_t)mysql_num_rows(res);
			mysql_free_result(res);
		} else {
			rows += (int64_t)mysql_affected_rows(m);
		}
		int r = mysql_next_result(m);
		if (r < 0)
			break;
		if (r > 0)
			failed = true;
	}
	if (failed) {
		err = mysql_errno(m);
		snprintf(msg, sizeof msg, "%s", mysql_error(m));
	}
	if (sh->pending_trace) {
		trace_tell(st, i, sh->pending_trace, sh->pending_t0, sh->pending_at, rows, true, err,
		           failed ? msg : NULL);
		free(sh->pending_trace);
		sh->pending_trace = NULL;
	}
	if (failed && sh->pending_lock[0]) {
		bs_buf_t b = { 0 };
		bs__buf_puts(&b, "DO RELEASE_LOCK(");
		bs__buf_hex(&b, sh->pending_lock, strlen(sh->pending_lock));
		bs__buf_puts(&b, ")");
		if (!bs__buf_ok(&b)) {
			double t0 = st->trace_fn ? bs_now_mono() : 0;
			int64_t at = st->trace_fn ? bs_now_us() : 0;
			int bad = mysql_real_query(m, b.ptr, (unsigned long)b.len) != 0;
			if (!bad)
				while (mysql_next_result(m) == 0)
					;
			if (st->trace_fn)
				bs__trace_emit(st, i, b.ptr, b.len, t0, at, 0, false, bad ? mysql_errno(m) : 0,
				               bad ? mysql_error(m) : NULL);
		}
		bs__buf_free(&b);
	}
	sh->pending_lock[0] = '\0';
}

int bs__shard_send(bs_store_t *st, int i, const char *sql, size_t len, const char *lock)
{
	bs_shard_t *sh = &st->shards[i];
	MYSQL *m;
	int rc;
	if ((rc = bs__shard_conn(&m, st, i)))
		return rc;
	double t0 = 0;
	int64_t at = 0;
	if (st->trace_fn) {
		t0 = bs_now_mono();
		at = bs_now_us();
	}
	bs__shard_sent(sh, sql, len);
	if (mysql_send_query(m, sql, (unsigned long)len)) {
		int code = bs__shard_fail(st, i, "sending a statement");
		if (st->trace_fn)
			bs__trace_emit(st, i, sql, len, t0, at, 0, true, sh->last_errno, bs_last_error());
		return code;
	}
	sh->pending = true;
	free(sh->pending_trace);
	sh->pending_trace = st->trace_fn ? bs__trace_text(sql, len) : NULL;
	sh->pending_t0 = t0;
	sh->pending_at = at;
	snprintf(sh->pending_lock, sizeof sh->pending_lock, "%s", lock ? lock : "");
	return 0;
}

/* bs__settle_flush's and bs__shard_close's wait for an answer, at most */
#define SETTLE_WAIT_MS 1000

/* A statement's answer sent without waiting (bs__shard_send), read if it
 * comes within ms, else the connection given up: closed, the server
 * releases its locks when it sees that, and a settle batch's intents are
 * the repair loop's. So a hung or paused shard holds a store's free (and
 * a close) for ms, not for the read timeout. */
static void pending_within(bs_store_t *st, int i, int ms)
{
	bs_shard_t *sh = &st->shards[i];
	if (!sh->conn || !sh->pending)
		return;
	struct pollfd pf = { .fd = (int)mysql_get_socket(sh->conn), .events = POLLIN };
	if (poll(&pf, 1, ms) == 1) {
		drain_pending(st, i);
		return;
	}
	if (sh->pending_trace)
		trace_tell(st, i, sh->pending_trace, sh->pending_t0, sh->pending_at, 0, true, 0,
		           "not answered: left to the repair loop");
	free(sh->pending_trace);
	sh->pending_trace = NULL;
	sh->pending = false;
	sh->pending_lock[0] = '\0';
	conn_close(sh);
}

void bs__token(char token[48], const char *kind)
{
	bs_id_t r;
	char hex[33];
	bs_id_generate(&r);
	bs_id_hex(hex, &r);
	snprintf(token, 48, "bagstore.%.1s.%s", kind, hex);
}

void bs__settle_add(bs_store_t *st, int i, const char *token, const bs_id_t *id, int bucket, int64_t ver_us,
                    int64_t prev_us, bool found)
{
	bs_shard_t *sh = &st->shards[i];
	if (!sh->settle && !(sh->settle = calloc(BS__SETTLE_BATCH, sizeof *sh->settle)))
		return; /* out of memory: the intent stays, the repair loop settles it */
	if (sh->nsettle == BS__SETTLE_BATCH)
		return; /* not flushed (bs__settle_due was not heeded): the same */
	for (int k = 0; k < sh->nsettle; k++) {
		const struct bs__settle *e = &sh->settle[k];
		if (memcmp(e->id.b, id->b, 16))
			continue;
		/* an earlier delete of the entity only removed rows (any of the
		 * entity's on a shard, another writer's too), all before this
		 * write began: when this write found no entity, it wrote its rows
		 * whole. Not when it found one: it skips a ready index's row the
		 * body it replaced has too, which the delete may have taken. An
		 * earlier put, when this write replaced its very version (nobody
		 * wrote between) */
		if ((!e->ver_us && !found) || (prev_us && e->ver_us == prev_us))
			sh->settle[k].any = true;
	}
	struct bs__settle *e = &sh->settle[sh->nsettle];
	snprintf(e->token, sizeof e->token, "%s", token);
	e->id = *id;
	e->bucket = bucket;
	e->ver_us = ver_us;
	e->any = false;
	if (!sh->nsettle++)
		sh->settle_since = bs_now_mono();
}

bool bs__settle_due(const bs_store_t *st, int i)
{
	const bs_shard_t *sh = &st->shards[i];
	return sh->nsettle >= BS__SETTLE_BATCH || (sh->nsettle && bs_now_mono() - sh->settle_since >= BS__SETTLE_AGE_S);
}

void bs__settle_sql(bs_buf_t *out, bs_store_t *st, int i)
{
	bs_shard_t *sh = &st->shards[i];
	if (!sh->nsettle)
		return;
	/* each intent by its key, each entity by its id, each bucket by its
	 * number: nsettle lookups of each. Kept for the repair loop: an intent
	 * whose entity was written since by another writer (another version)
	 * or is back after a delete, or whose bucket this shard no longer owns
	 * (a cut-over since: the copy here says nothing of the new owner's).
	 * The rows of entities it reads are locked for the statement (shared):
	 * a writer holding one makes it give up after a second, its intents
	 * left to the repair loop, rather than hold this connection. */
	bs__buf_puts(out, "SET STATEMENT innodb_lock_wait_timeout=1 FOR DELETE i FROM bagstore_intents i JOIN (");
	for (int k = 0; k < sh->nsettle; k++) {
		const struct bs__settle *e = &sh->settle[k];
		bs__buf_puts(out, k ? " UNION ALL SELECT " : "SELECT ");
		bs__buf_hex(out, e->token, strlen(e->token));
		bs__buf_puts(out, k ? "," : " t,");
		bs__buf_hex(out, e->id.b, 16);
		bs__buf_printf(out, k ? ",%d," : " e,%d b,", e->bucket);
		if (e->ver_us)
			bs__buf_from_unixtime(out, e->ver_us);
		else
			bs__buf_puts(out, "NULL");
		bs__buf_puts(out, k ? "," : " v,");
		bs__buf_puts(out, e->any ? "1" : "0");
		if (!k)
			bs__buf_puts(out, " a");
	}
	bs__buf_puts(out, ") w ON i.token=w.t AND i.entity_id=w.e JOIN bagstore_buckets o ON o.bucket=w.b AND o.state "
	                  "IN " BS__OWNING_SQL " LEFT JOIN entities n ON n.id=w.e WHERE w.a=1 OR n.updated <=> w.v");
	sh->nsettle = 0;
}

void bs__settle_flush(bs_store_t *st, int i)
{
	bs_shard_t *sh = &st->shards[i];
	bs_buf_t b = { 0 };
	if (!sh->nsettle)
		return;
	if (!sh->conn) { /* lost: the repair loop settles them */
		sh->nsettle = 0;
		return;
	}
	/* the answer still owed (the last write's lock release, sent without
	 * waiting), then the batch, sent as the write path's last step is:
	 * each waited for at most SETTLE_WAIT_MS, so a shard that does not
	 * answer (hung, paused) does not hold the store's free up; its intents
	 * are then the repair loop's */
	pending_within(st, i, SETTLE_WAIT_MS);
	if (!sh->conn) {
		sh->nsettle = 0;
		bs_error_clear();
		return;
	}
	bs__settle_sql(&b, st, i);
	if (!bs__buf_ok(&b) && !bs__shard_send(st, i, b.ptr, b.len, NULL))
		pending_within(st, i, SETTLE_WAIT_MS);
	bs_error_clear();
	bs__buf_free(&b);
}

bool bs__lock_conn_kept(const bs_store_t *st, int i, unsigned long gen)
{
	return st->shards[i].conn_gen == gen;
}

const char *bs__lock_lost(char *buf, size_t size, const bs_store_t *st, int i, const char *what)
{
	snprintf(buf, size, "the connection to shard %s that held the %s was lost", st->shards[i].conf->name, what);
	return buf;
}

void bs__shard_close(bs_store_t *st, int i)
{
	bs_shard_t *sh = &st->shards[i];
	pending_within(st, i, SETTLE_WAIT_MS);
	sh->pending = false;
	free(sh->pending_trace);
	sh->pending_trace = NULL;
	if (sh->conn)
		conn_close(sh);
	sh->fp_state = 0;
	memset(&sh->tls, 0, sizeof sh->tls);
}

/* A handle for shard i with every option set (timeouts, charset, time
 * zone, option file, non-blocking use allowed), and the password to give
 * it, ready to connect. */
int bs__shard_prepare(MYSQL **out, const char **password, bs_store_t *st, int i)
{
	bs_shard_t *sh = &st->shards[i];
	const bs_shard_conf_t *c = sh->conf;
	char label[192];

	*out = NULL;
	*password = NULL;
	if (c->password_env) {
		*password = getenv(c->password_env);
		if (!*password)
			return bs_error(BS_ECONFIG, "%s: environment variable %s (password_env) is not set",
			                bs__shard_label(label, sizeof label, sh), c->password_env);
	}
	/* a FIFO or /dev/zero as the option file would hang the connect forever */
	if (c->defaults_file) {
		struct stat sb;
		const char *why = NULL;
		if (stat(c->defaults_file, &sb) != 0)
			why = strerror(errno);
		else if (!S_ISREG(sb.st_mode))
			why = "not a regular file (a MySQL option file is)";
		else if (access(c->defaults_file, R_OK) != 0)
			why = strerror(errno);
		if (why)
			return bs_error(BS_ECONFIG, "%s: defaults_file %s (line %d of %s): %s",
			                bs__shard_label(label, sizeof label, sh), c->defaults_file, c->line,
			                st->cfg->path ? st->cfg->path : "the configuration", why);
	}
	MYSQL *m = mysql_init(NULL);
	if (!m)
		return bs_error(BS_ENOMEM, "out of memory opening a MySQL handle");
	unsigned ct = st->connect_timeout, rt = st->read_timeout, wt = st->write_timeout;
	mysql_optionsv(m, MYSQL_OPT_CONNECT_TIMEOUT, &ct);
	mysql_optionsv(m, MYSQL_OPT_READ_TIMEOUT, &rt);
	mysql_optionsv(m, MYSQL_OPT_WRITE_TIMEOUT, &wt);
	/* utf8mb4 asked in the handshake, and set again once connected: an
	 * option file's default-character-set or the server's init_connect
	 * can make it latin1, and the server reads a prepared statement's
	 * string parameters (an index row's) and writes its answers in the
	 * connection's character set (the text form's _utf8mb4 X'..' says its
	 * own, but a query's answer does not) */
	mysql_optionsv(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	mysql_optionsv(m, MYSQL_INIT_COMMAND, "SET NAMES utf8mb4, time_zone='+00:00'");
	/* fanout.c runs statements on many shards at once from one thread */
	mysql_optionsv(m, MYSQL_OPT_NONBLOCK, 0);
	if (c->defaults_file)
		mysql_optionsv(m, MYSQL_READ_DEFAULT_FILE, c->defaults_file);
	if (c->option_group || c->defaults_file)
		mysql_optionsv(m, MYSQL_READ_DEFAULT_GROUP, c->option_group ? c->option_group : "client");
	bs__tls_apply(m, &c->tls);
	*out = m;
	return 0;
}

int bs__shard_connect_failed(bs_store_t *st, int i, MYSQL *m)
{
	bs_shard_t *sh = &st->shards[i];
	char label[192], why[768];
	int code = BS_EUNREACHABLE;
	unsigned err = mysql_errno(m);
	sh->last_errno = err;
	if (err == ER_ACCESS_DENIED_ERROR || err == ER_BAD_DB_ERROR || err == ER_DBACCESS_DENIED_ERROR)
		code = BS_ECONFIG;
	/* MySQL's message and number, saying what failed when TLS is why */
	if (bs__tls_connect_error(why, sizeof why, m, &sh->conf->tls, sh->conf->host) == BS_ECONFIG)
		code = BS_ECONFIG;
	bs_error(code, "%s: cannot connect: %s", bs__shard_label(label, sizeof label, sh), why);
	mysql_close(m);
	return code;
}

int bs__shard_adopt(bs_store_t *st, int i, MYSQL *m)
{
	bs_shard_t *sh = &st->shards[i];
	char label[192], why[512];
	/* what the connection's TLS achieved; short of the mode, it is closed
	 * before any statement */
	if (bs__tls_check(&sh->tls, m, &sh->conf->tls, why, sizeof why)) {
		mysql_close(m);
		return bs_error(BS_ECONFIG, "%s: cannot connect: %s", bs__shard_label(label, sizeof label, sh), why);
	}
	sh->conn = m;
	sh->fp_state = 0;
	sh->returning = mariadb_connection(m) && mysql_get_server_version(m) >= 100500;
	return 0;
}

int bs__shard_conn(MYSQL **out, bs_store_t *st, int i)
{
	bs_shard_t *sh = &st->shards[i];
	const bs_shard_conf_t *c = sh->conf;
	const char *password;
	MYSQL *m;
	int rc;

	if (sh->conn) {
		if (sh->pending)
			drain_pending(st, i);
		*out = sh->conn;
		return 0;
	}
	if ((rc = bs__shard_prepare(&m, &password, st, i)))
		return rc;
	if (!mysql_real_connect(m, c->host, c->user, password, c->database, c->port, c->socket,
	                        CLIENT_MULTI_STATEMENTS | CLIENT_FOUND_ROWS))
		return bs__shard_connect_failed(st, i, m);
	if ((rc = bs__shard_adopt(st, i, m)))
		return rc;
	*out = m;
	return 0;
}

/* What a blocking statement keeps of its answer: result sets, up to nres
 * (the rest freed); the first statement's affected rows; rows of every
 * result set, else rows affected, summed (the trace's count); the
 * statements answered before a failure. */
typedef struct {
	MYSQL_RES **res;
	int nres, got, done;
	int64_t affected, rows;
} answer_t;

/* Send sql on m and read every result; what names a failure. */
static int stmt_plain(answer_t *a, bs_store_t *st, int i, MYSQL *m, const char *sql, size_t len, const char *what)
{
	int rc = 0;
	bs__shard_sent(&st->shards[i], sql, len);
	if (mysql_real_query(m, sql, (unsigned long)len))
		return bs__shard_fail(st, i, what);
	a->affected = (int64_t)mysql_affected_rows(m);
	for (;;) {
		MYSQL_RES *res = mysql_store_result(m);
		if (res) {
			a->rows += (int64_t)mysql_num_rows(res);
			if (a->got < a->nres)
				a->res[a->got++] = res;
			else
				mysql_free_result(res);
		} else if (mysql_field_count(m) != 0) {
			rc = bs__shard_fail(st, i, "reading rows");
			break;
		} else {
			a->rows += (int64_t)mysql_affected_rows(m);
		}
		a->done++;
		int r = mysql_next_result(m);
		if (r > 0) {
			rc = bs__shard_fail(st, i, what);
			break;
		}
		if (r < 0)
			break;
	}
	st->shards[i].last_done = a->done;
	if (rc)
		for (; a->got > 0; a->got--) {
			mysql_free_result(a->res[a->got - 1]);
			a->res[a->got - 1] = NULL;
		}
	return rc;
}

/* The one place a blocking statement is sent on shard i (connecting first
 * when needed) and its answer read into a; the trace, when one is set, is
 * told (the only cost when it is not: this test). */
static int stmt(answer_t *a, bs_store_t *st, int i, const char *sql, size_t len, const char *what)
{
	MYSQL *m;
	int rc;
	st->shards[i].last_errno = 0;
	st->shards[i].last_done = 0;
	if ((rc = bs__shard_conn(&m, st, i)))
		return rc;
	if (!st->trace_fn)
		return stmt_plain(a, st, i, m, sql, len, what);
	double t0 = bs_now_mono();
	int64_t at = bs_now_us();
	rc = stmt_plain(a, st, i, m, sql, len, what);
	bs__trace_emit(st, i, sql, len, t0, at, a->rows, false, rc ? st->shards[i].last_errno : 0,
	               rc ? bs_last_error() : NULL);
	return rc;
}

int bs__shard_exec(bs_store_t *st, int i, const char *sql, size_t len)
{
	int64_t affected;
	return bs__shard_exec_rows(&affected, st, i, sql, len);
}

int bs__shard_exec_rows(int64_t *affected, bs_store_t *st, int i, const char *sql, size_t len)
{
	answer_t a = { 0 };
	int rc = stmt(&a, st, i, sql, len, "statement failed");
	*affected = rc ? 0 : a.affected;
	return rc;
}

/* No result set came: an error naming the shard. */
static int no_rows(bs_store_t *st, int i)
{
	char label[192];
	return bs_error(BS_ERROR, "%s: statement returned no rows",
	                bs__shard_label(label, sizeof label, &st->shards[i]));
}

int bs__shard_query(MYSQL_RES **out, bs_store_t *st, int i, const char *sql, size_t len)
{
	answer_t a = { .res = out, .nres = 1 };
	int rc;
	*out = NULL;
	/* leading row-less statements (START TRANSACTION; SELECT ...) give none */
	if ((rc = stmt(&a, st, i, sql, len, "query failed")))
		return rc;
	return a.got ? 0 : no_rows(st, i);
}

/* ------------------------------------------------------------ prepared statements */

/* A parameter as the text forms write it as a literal. */
static void param_text(bs_buf_t *b, const bs__param_t *v)
{
	switch (v->type) {
	case BS__P_TEXT:
		bs__buf_puts(b, "_utf8mb4 ");
		bs__buf_hex(b, v->p, v->len);
		break;
	case BS__P_INT: bs__buf_printf(b, "%lld", v->i); break;
	case BS__P_UINT: bs__buf_uint(b, v->u); break;
	case BS__P_DOUBLE: bs__buf_printf(b, "%.17g", v->d); break;
	case BS__P_NULL: bs__buf_puts(b, "NULL"); break;
	default: bs__buf_hex(b, v->p, v->len); break;
	}
}

/* The text a prepared statement stands for, the values in place of its
 * '?'s as the text forms write them: what the trace shows. */
static void prep_text(bs_buf_t *b, const char *sql, const bs__param_t *params, int n)
{
	int k = 0;
	for (const char *p = sql, *q; *p; p = q + 1) {
		if (!(q = strchr(p, '?')) || k == n) {
			bs__buf_puts(b, p);
			return;
		}
		bs__buf_putn(b, p, (size_t)(q - p));
		param_text(b, &params[k++]);
	}
}

#define PREP_MAX_PARAMS (BS_INDEX_MAX_PROPS + 2)
/* how long a connection whose server would not prepare sends text */
#define PREP_OFF_S 60.0

/* Bind params into bind (lens their lengths). */
static void prep_bind(MYSQL_BIND *bind, unsigned long *lens, const bs__param_t *params, int n)
{
	memset(bind, 0, (size_t)n * sizeof *bind);
	for (int k = 0; k < n; k++) {
		const bs__param_t *v = &params[k];
		switch (v->type) {
		case BS__P_INT:
			bind[k].buffer_type = MYSQL_TYPE_LONGLONG;
			bind[k].buffer = (void *)&v->i;
			break;
		case BS__P_UINT:
			bind[k].buffer_type = MYSQL_TYPE_LONGLONG;
			bind[k].buffer = (void *)&v->u;
			bind[k].is_unsigned = 1;
			break;
		case BS__P_DOUBLE:
			bind[k].buffer_type = MYSQL_TYPE_DOUBLE;
			bind[k].buffer = (void *)&v->d;
			break;
		case BS__P_NULL: bind[k].buffer_type = MYSQL_TYPE_NULL; break;
		default:
			/* a NULL buffer is SQL's NULL to the client library */
			lens[k] = (unsigned long)v->len;
			bind[k].buffer_type = v->type == BS__P_TEXT ? MYSQL_TYPE_STRING : MYSQL_TYPE_BLOB;
			bind[k].buffer = v->p ? (void *)v->p : (void *)"";
			bind[k].buffer_length = lens[k];
			bind[k].length = &lens[k];
			break;
		}
	}
}

/* *out: the statement of sql on shard i's connection m, kept in *slot
 * (prepared there at first use). NULL with *text: the server would not
 * prepare it, send the text form (nothing was sent). */
static int prep_make(MYSQL_STMT **out, bool *text, bs_store_t *st, int i, MYSQL *m, MYSQL_STMT **slot, const char *sql)
{
	bs_shard_t *sh = &st->shards[i];
	char msg[512], label[192];
	MYSQL_STMT *s = *slot;
	*out = NULL;
	if (s) {
		*out = s;
		return 0;
	}
	if (!(s = mysql_stmt_init(m)))
		return bs_error(BS_ENOMEM, "%s: out of memory preparing a statement",
		                bs__shard_label(label, sizeof label, sh));
	if (mysql_stmt_prepare(s, sql, (unsigned long)strlen(sql))) {
		unsigned err = mysql_stmt_errno(s);
		snprintf(msg, sizeof msg, "%s", mysql_stmt_error(s));
		mysql_stmt_close(s);
		if (lost_connection(err))
			return fail_with(st, i, "preparing a statement", err, msg);
		/* the server would not prepare it: no more room
		 * (max_prepared_stmt_count, the server's for every client), or
		 * no prepared statements at all (a proxy): the text form on
		 * this connection for PREP_OFF_S, its statements closed (they
		 * hold room in the server's count). Any other refusal (a table
		 * missing, a privilege) the text form meets again, and says */
		if (err == 1461 /* ER_MAX_PREPARED_STMT_COUNT_REACHED */ || err == 1295 /* ER_UNSUPPORTED_PS */ ||
		    err == 1047 /* ER_UNKNOWN_COM_ERROR */) {
			prep_close_all(sh);
			sh->prep_off_until = bs_now_mono() + PREP_OFF_S;
		}
		*text = true;
		return 0;
	}
	*slot = *out = s;
	return 0;
}

/* A prepared statement's run on shard i failed (its error on *slot's
 * statement): the error naming the shard. After a failure the statement is
 * closed and prepared again at its next use: an error in a statement that
 * answers rows (INSERT ... RETURNING refused by the fence) comes after its
 * columns, and the client library loses its place in the statement (the
 * next run said "Server has gone away"). A lost connection closes it with
 * the connection, without a word to the server. */
static int prep_failed(bs_store_t *st, int i, MYSQL_STMT **slot, const char *what)
{
	char msg[512];
	unsigned err = mysql_stmt_errno(*slot);
	snprintf(msg, sizeof msg, "%s", mysql_stmt_error(*slot));
	if (!lost_connection(err)) {
		mysql_stmt_close(*slot);
		*slot = NULL;
	}
	return fail_with(st, i, what, err, msg);
}

/* Tell the trace of a prepared run (b: its text form, freed here), begun
 * at t0 (monotonic) and at (wall clock), that ended with rc. A text that
 * could not be built is not told: the error stays the statement's. */
static void prep_trace(bs_store_t *st, int i, bs_buf_t *b, double t0, int64_t at, int64_t rows, int rc)
{
	if (!b->oom)
		bs__trace_emit(st, i, b->ptr, b->len, t0, at, rows, false, rc ? st->shards[i].last_errno : 0,
		               rc ? bs_last_error() : NULL);
	bs__buf_free(b);
}

/* Run sql prepared on shard i's connection m, the statement kept in
 * *slot (prepared there at first use, closed there after a failure). */
static int prep_exec(MYSQL_STMT **res, int64_t *affected, bool *text, bs_store_t *st, int i, MYSQL *m,
                     MYSQL_STMT **slot, const char *sql, const bs__param_t *params, int n)
{
	bs_shard_t *sh = &st->shards[i];
	MYSQL_BIND bind[PREP_MAX_PARAMS];
	unsigned long lens[PREP_MAX_PARAMS];
	int rc;
	MYSQL_STMT *s;
	if ((rc = prep_make(&s, text, st, i, m, slot, sql)) || !s)
		return rc;
	prep_bind(bind, lens, params, n);
	double t0 = 0;
	int64_t at = 0, rows = 0;
	if (st->trace_fn) {
		t0 = bs_now_mono();
		at = bs_now_us();
	}
	bs__shard_sent(sh, sql, strlen(sql));
	/* a statement that may answer rows answers none when the server sent
	 * only an OK (a DELETE ... RETURNING whose WHERE the optimizer proved
	 * empty): the statement's column count stays the last answer's, the
	 * connection's says */
	if (mysql_stmt_bind_param(s, bind) || mysql_stmt_execute(s) ||
	    (res && mysql_field_count(m) && mysql_stmt_store_result(s))) {
		rc = prep_failed(st, i, slot, res ? "query failed" : "statement failed");
	} else {
		sh->last_done = 1;
		*affected = (int64_t)mysql_stmt_affected_rows(s);
		if (res && mysql_field_count(m)) {
			rows = (int64_t)mysql_stmt_num_rows(s);
			*res = s;
		} else {
			rows = *affected;
		}
	}
	if (st->trace_fn) {
		bs_buf_t b = { 0 };
		prep_text(&b, sql, params, n);
		prep_trace(st, i, &b, t0, at, rows, rc);
	}
	return rc;
}

/* What every prepared run does first: the answers cleared, the
 * connection (made when there is none). *m NULL: use the text form. */
static int prep_open(MYSQL **m, MYSQL_STMT **res, int64_t *affected, bool *text, bs_store_t *st, int i, int n)
{
	bs_shard_t *sh = &st->shards[i];
	int rc;
	*m = NULL;
	if (res)
		*res = NULL;
	*affected = 0;
	*text = false;
	sh->last_errno = 0;
	sh->last_done = 0;
	if (n < 0 || n > PREP_MAX_PARAMS)
		return bs_error(BS_ERROR, "internal: a prepared statement with %d parameters", n);
	/* a new connection's shard checked as every statement's is (the
	 * fan-out's, the identity check: once per connection) */
	if ((rc = bs__shard_conn(m, st, i)) || (rc = bs__shard_check(st, i)))
		return rc;
	if (sh->prep_off_until > 0) {
		if (bs_now_mono() < sh->prep_off_until) {
			*m = NULL;
			*text = true;
		} else {
			sh->prep_off_until = 0; /* try again */
		}
	}
	return 0;
}

int bs__shard_prep_run(MYSQL_STMT **res, int64_t *affected, bool *text, bs_store_t *st, int i, int kind,
                       const char *sql, const bs__param_t *params, int n)
{
	MYSQL *m;
	int rc;
	if (kind < 0 || kind >= BS__PREP_N)
		return bs_error(BS_ERROR, "internal: prepared statement %d", kind);
	if ((rc = prep_open(&m, res, affected, text, st, i, n)) || !m)
		return rc;
	return prep_exec(res, affected, text, st, i, m, &st->shards[i].prep[kind], sql, params, n);
}

/* Where shard sh's connection keeps the statement of text sql (prepared
 * or not yet): one of the BS__PREP_DYN it keeps, found by its text, else
 * the least recently used one's place. NULL: out of memory. */
static MYSQL_STMT **dyn_slot(bs_shard_t *sh, const char *sql)
{
	int lru = 0, k;
	for (k = 0; k < BS__PREP_DYN; k++) {
		if (sh->dyn[k].sql && !strcmp(sh->dyn[k].sql, sql))
			break;
		if (sh->dyn[k].used < sh->dyn[lru].used)
			lru = k;
	}
	if (k == BS__PREP_DYN) { /* the least recently used replaced */
		char *copy = strdup(sql);
		if (!copy)
			return NULL;
		k = lru;
		if (sh->dyn[k].s)
			mysql_stmt_close(sh->dyn[k].s);
		free(sh->dyn[k].sql);
		sh->dyn[k].sql = copy;
		sh->dyn[k].s = NULL;
	}
	sh->dyn[k].used = ++sh->dyn_clock;
	return &sh->dyn[k].s;
}

int bs__shard_prep_sql(MYSQL_STMT **res, int64_t *affected, bool *text, bs_store_t *st, int i, const char *sql,
                       const bs__param_t *params, int n)
{
	MYSQL *m;
	int rc;
	if ((rc = prep_open(&m, res, affected, text, st, i, n)) || !m)
		return rc;
	MYSQL_STMT **slot = dyn_slot(&st->shards[i], sql);
	if (!slot) {
		*text = true; /* the text form, without a statement to keep */
		return 0;
	}
	return prep_exec(res, affected, text, st, i, m, slot, sql, params, n);
}

/* ------------------------------------------------------------ many rows */

/* The server takes an array of parameter sets in one execution of a
 * prepared statement (MariaDB's COM_STMT_BULK_EXECUTE, 10.2 and later). */
static bool bulk_ok(MYSQL *m)
{
	unsigned long caps = 0, ext = 0;
	if (mariadb_get_infov(m, MARIADB_CONNECTION_SERVER_CAPABILITIES, &caps) || (caps & CLIENT_MYSQL))
		return false;
	if (mariadb_get_infov(m, MARIADB_CONNECTION_EXTENDED_SERVER_CAPABILITIES, &ext))
		return false;
	return (ext & (MARIADB_CLIENT_STMT_BULK_OPERATIONS >> 32)) != 0;
}

/* The rows as one multi-row statement: head, "(v,...)" a row, tail. */
static void rows_text(bs_buf_t *b, const char *head, const char *tail, const bs__param_t *const *rows, int ncols,
                      size_t nrows)
{
	bs__buf_puts(b, head);
	for (size_t r = 0; r < nrows; r++) {
		bs__buf_puts(b, r ? ",(" : "(");
		for (int c = 0; c < ncols; c++) {
			if (c)
				bs__buf_putn(b, ",", 1);
			param_text(b, &rows[r][c]);
		}
		bs__buf_putn(b, ")", 1);
	}
	bs__buf_puts(b, tail);
}

/* What column c's values are (BS__P_*, BS__P_NULL when all are), or -1
 * when they are of different kinds: one type binds a column. */
static int rows_kind(const bs__param_t *const *rows, size_t nrows, int c)
{
	int kind = BS__P_NULL;
	for (size_t r = 0; r < nrows; r++) {
		int t = rows[r][c].type;
		if (t == BS__P_NULL || t == kind)
			continue;
		if (kind != BS__P_NULL)
			return -1;
		kind = t;
	}
	return kind;
}

/* The rows as one bulk execution of head "(?,...)" tail, the statement
 * prepared on the connection at first use. *text (nothing sent): the
 * rows cannot go so (a column of mixed kinds; the server would not
 * prepare it). */
static int rows_bulk(int64_t *affected, bool *text, bs_store_t *st, int i, MYSQL *m, const char *head, const char *tail,
                     const bs__param_t *const *rows, int ncols, size_t nrows)
{
	bs_shard_t *sh = &st->shards[i];
	int kind[PREP_MAX_PARAMS];
	for (int c = 0; c < ncols; c++)
		if ((kind[c] = rows_kind(rows, nrows, c)) < 0) {
			*text = true;
			return 0;
		}
	bs_buf_t q = { 0 };
	bs__buf_puts(&q, head);
	for (int c = 0; c < ncols; c++)
		bs__buf_puts(&q, c ? ",?" : "(?");
	bs__buf_puts(&q, ")");
	bs__buf_puts(&q, tail);
	int rc;
	MYSQL_STMT **slot, *s = NULL;
	if ((rc = bs__buf_ok(&q)) || !(slot = dyn_slot(sh, q.ptr))) {
		bs__buf_free(&q);
		*text = !rc; /* no statement to keep: the text form, which needs none */
		return rc;
	}
	if ((rc = prep_make(&s, text, st, i, m, slot, q.ptr)) || !s) {
		bs__buf_free(&q);
		return rc;
	}
	/* column-wise arrays: bytes as pointers with lengths, numbers as
	 * themselves, NULL by its indicator */
	size_t cells = nrows * (size_t)ncols;
	const void **ptrs = malloc(cells * sizeof *ptrs);
	long long *nums = malloc(cells * sizeof *nums);
	double *dbls = malloc(cells * sizeof *dbls);
	unsigned long *lens = malloc(cells * sizeof *lens);
	char *ind = malloc(cells);
	MYSQL_BIND bind[PREP_MAX_PARAMS];
	if (!ptrs || !nums || !dbls || !lens || !ind) {
		rc = bs__oom();
		goto done;
	}
	memset(bind, 0, sizeof bind);
	for (int c = 0; c < ncols; c++) {
		size_t at = (size_t)c * nrows;
		for (size_t r = 0; r < nrows; r++) {
			const bs__param_t *v = &rows[r][c];
			ind[at + r] = v->type == BS__P_NULL ? STMT_INDICATOR_NULL : STMT_INDICATOR_NONE;
			ptrs[at + r] = v->p ? v->p : "";
			lens[at + r] = (unsigned long)v->len;
			nums[at + r] = v->type == BS__P_UINT ? (long long)v->u : v->i;
			dbls[at + r] = v->d;
		}
		MYSQL_BIND *b = &bind[c];
		b->u.indicator = &ind[at];
		switch (kind[c]) {
		case BS__P_INT:
		case BS__P_UINT:
			b->buffer_type = MYSQL_TYPE_LONGLONG;
			b->buffer = &nums[at];
			b->is_unsigned = kind[c] == BS__P_UINT;
			break;
		case BS__P_DOUBLE:
			b->buffer_type = MYSQL_TYPE_DOUBLE;
			b->buffer = &dbls[at];
			break;
		default:
			b->buffer_type = kind[c] == BS__P_TEXT ? MYSQL_TYPE_STRING : MYSQL_TYPE_BLOB;
			b->buffer = (void *)&ptrs[at];
			b->length = &lens[at];
			break;
		}
	}
	double t0 = 0;
	int64_t at = 0;
	if (st->trace_fn) {
		t0 = bs_now_mono();
		at = bs_now_us();
	}
	unsigned int n = (unsigned int)nrows;
	bs__shard_sent(sh, q.ptr, q.len);
	if (mysql_stmt_attr_set(s, STMT_ATTR_ARRAY_SIZE, &n) || mysql_stmt_bind_param(s, bind) ||
	    mysql_stmt_execute(s)) {
		unsigned err = mysql_stmt_errno(s);
		/* the server takes no bulk execution of it, and ran nothing: a
		 * binary log in STATEMENT format (4033), or a statement it will
		 * not run with arrays (1295). The statement stays prepared, of one
		 * row again; text to this shard for a while */
		if (err == ER_BINLOG_NON_SUPPORTED_BULK || err == ER_UNSUPPORTED_PS) {
			n = 0;
			mysql_stmt_attr_set(s, STMT_ATTR_ARRAY_SIZE, &n);
			sh->bulk_off_until = bs_now_mono() + PREP_OFF_S;
			*text = true;
			goto done;
		}
		rc = prep_failed(st, i, slot, "statement failed");
	} else {
		sh->last_done = 1;
		*affected = (int64_t)mysql_stmt_affected_rows(s);
		n = 0; /* the statement's next use may be of one row */
		mysql_stmt_attr_set(s, STMT_ATTR_ARRAY_SIZE, &n);
	}
	if (st->trace_fn) {
		bs_buf_t b = { 0 };
		rows_text(&b, head, tail, rows, ncols, nrows);
		prep_trace(st, i, &b, t0, at, rc ? 0 : *affected, rc);
	}
done:
	free(ptrs);
	free(nums);
	free(dbls);
	free(lens);
	free(ind);
	bs__buf_free(&q);
	return rc;
}

int bs__shard_rows(int64_t *affected, bs_store_t *st, int i, const char *head, const char *tail,
                   const bs__param_t *const *rows, int ncols, size_t nrows)
{
	MYSQL *m;
	bool text;
	int rc;
	*affected = 0;
	if (!nrows) /* no rows: no statement (an array of none is not one) */
		return 0;
	if ((rc = prep_open(&m, NULL, affected, &text, st, i, ncols)))
		return rc;
	if (m && nrows <= UINT_MAX && !st->rows_as_text && bs_now_mono() >= st->shards[i].bulk_off_until &&
	    bulk_ok(m) && ((rc = rows_bulk(affected, &text, st, i, m, head, tail, rows, ncols, nrows)) || !text))
		return rc;
	bs_buf_t b = { 0 };
	rows_text(&b, head, tail, rows, ncols, nrows);
	if (!(rc = bs__buf_ok(&b)))
		rc = bs__shard_exec_rows(affected, st, i, b.ptr, b.len);
	bs__buf_free(&b);
	return rc;
}

/* s's answers read to the end: its result freed, then, for a CALL, each
 * later answer up to the CALL's own status. 0, or > 0: one failed (its
 * error on s). */
static int prep_drain(MYSQL_STMT *s)
{
	int r = 0;
	mysql_stmt_free_result(s);
	while (mysql_stmt_more_results(s) && (r = mysql_stmt_next_result(s)) == 0)
		mysql_stmt_free_result(s);
	return r > 0 ? r : 0;
}

void bs__shard_prep_end(MYSQL_STMT *s)
{
	if (s)
		(void)prep_drain(s);
}

int bs__shard_prep_finish(bs_store_t *st, int i, MYSQL_STMT *s)
{
	bs_shard_t *sh = &st->shards[i];
	char msg[512];
	if (!s || !prep_drain(s))
		return 0;
	unsigned err = mysql_stmt_errno(s);
	snprintf(msg, sizeof msg, "%s", mysql_stmt_error(s));
	int rc = fail_with(st, i, "statement failed after its rows", err, msg);
	conn_close(sh); /* its statements with it */
	return rc;
}

void bs__prep_row_free(bs__prep_row_t *row)
{
	for (int k = 0; k < BS__PREP_COLS; k++)
		free(row->col[k]);
	memset(row, 0, sizeof *row);
}

int bs__shard_prep_row(bs__prep_row_t *row, bs_store_t *st, int i, MYSQL_STMT *s)
{
	MYSQL_BIND r[BS__PREP_COLS];
	my_bool null[BS__PREP_COLS];
	char label[192];
	unsigned n = mysql_stmt_field_count(s);
	int f;
	memset(row, 0, sizeof *row);
	if (n > BS__PREP_COLS)
		return bs_error(BS_ERROR, "internal: a prepared statement's row of %u columns", n);
	memset(r, 0, sizeof r);
	memset(null, 0, sizeof null);
	for (unsigned k = 0; k < n; k++) {
		/* no room: each column's length, then the column fetched whole */
		r[k].buffer_type = MYSQL_TYPE_STRING;
		r[k].length = &row->len[k];
		r[k].is_null = &null[k];
	}
	if (n == 0 || mysql_stmt_bind_result(s, r))
		f = n == 0 ? MYSQL_NO_DATA : 1;
	else
		f = mysql_stmt_fetch(s);
	if (f == MYSQL_NO_DATA)
		return 0;
	if (f == 1)
		goto fail;
	for (unsigned k = 0; k < n; k++) {
		if (null[k])
			continue;
		if (!(row->col[k] = malloc(row->len[k] + 1))) {
			bs__prep_row_free(row);
			return bs_error(BS_ENOMEM, "out of memory");
		}
		r[k].buffer = row->col[k];
		r[k].buffer_length = row->len[k] + 1; /* the string's NUL too */
		if (row->len[k] && mysql_stmt_fetch_column(s, &r[k], k, 0))
			goto fail;
		row->col[k][row->len[k]] = '\0';
	}
	return 1;
fail:
	bs__prep_row_free(row);
	return bs_error(BS_ESQL, "%s: reading a row: %s (MySQL error %u)",
	                bs__shard_label(label, sizeof label, &st->shards[i]), mysql_stmt_error(s), mysql_stmt_errno(s));
}

int bs__shard_now_us(int64_t *out, bs_store_t *st, int shard)
{
	static const char q[] = "SELECT CAST(UNIX_TIMESTAMP(NOW(6))*1000000 AS SIGNED)";
	MYSQL_RES *res;
	int rc = bs__shard_query(&res, st, shard, q, sizeof q - 1);
	if (rc)
		return rc;
	MYSQL_ROW row = mysql_fetch_row(res);
	*out = row && row[0] ? strtoll(row[0], NULL, 10) : 0;
	mysql_free_result(res);
	return 0;
}

int bs__shard_meta(shard_meta_t *out, bs_store_t *st, int i)
{
	static const char q[] = "SELECT k, v FROM bagstore_meta WHERE k IN ('fingerprint','shard_index','shard_count',"
				"'store_id','shard_name','schema_version') UNION ALL SELECT 'session time_zone',"
				" @@session.time_zone";
	MYSQL_RES *res = NULL;
	answer_t a = { .res = &res, .nres = 1 };
	char label[192];
	int rc;

	memset(out, 0, sizeof *out);
	if ((rc = stmt(&a, st, i, q, sizeof q - 1, "reading bagstore_meta"))) {
		if (rc == BS_ESQL && st->shards[i].last_errno == ER_NO_SUCH_TABLE)
			return bs_error(BS_ECONFIG,
			                "%s is not initialised: run `bagstore init`"
			                " (or is this another shard list?)",
			                bs__shard_label(label, sizeof label, &st->shards[i]));
		return rc;
	}
	if (!res)
		return no_rows(st, i);
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res))) {
		if (!row[0] || !row[1])
			continue;
		if (!strcmp(row[0], "fingerprint"))
			snprintf(out->fingerprint, sizeof out->fingerprint, "%s", row[1]);
		else if (!strcmp(row[0], "shard_index"))
			out->index = atoi(row[1]);
		else if (!strcmp(row[0], "shard_count"))
			out->count = atoi(row[1]);
		else if (!strcmp(row[0], "store_id"))
			snprintf(out->store_id, sizeof out->store_id, "%s", row[1]);
		else if (!strcmp(row[0], "schema_version"))
			out->schema = atoi(row[1]);
		else if (!strcmp(row[0], "session time_zone"))
			snprintf(out->time_zone, sizeof out->time_zone, "%s", row[1]);
		else
			snprintf(out->name, sizeof out->name, "%s", row[1]);
	}
	mysql_free_result(res);
	return 0;
}

/* The configuration against the newest bucket map version shard i holds
 * (its members, in bagstore_map): every configured shard a member, every
 * member that owns buckets configured. A list missing a shard, or naming
 * one `init` has not added, reads and writes nothing (not even the
 * catalog, jobs or logs, which no route goes through). No map yet: 0
 * (the store's map load says so). */
static int members_agree(bs_store_t *st, int i)
{
	static const char q[] = "SELECT version, shards, owners FROM bagstore_map ORDER BY version DESC LIMIT 1";
	MYSQL_RES *res = NULL;
	char label[192];
	int rc = bs__shard_query(&res, st, i, q, sizeof q - 1);
	if (rc) {
		if (rc == BS_ESQL && bs__shard_last_errno(st, i) == ER_NO_SUCH_TABLE) {
			bs_error_clear();
			return 0;
		}
		return rc;
	}
	MYSQL_ROW row = mysql_fetch_row(res);
	unsigned long *lens = row ? mysql_fetch_lengths(res) : NULL;
	if (!row || !row[0] || !row[1] || !row[2])
		goto done;
	const char *names = row[1];
	const uint8_t *o = (const uint8_t *)row[2];
	size_t nb = lens[2] / 2;
	/* each configured shard among the members (the first that is not,
	 * kept: said below unless the list is foreign anyway) */
	int lacks = -1;
	for (int c = 0; c < st->n && lacks < 0; c++) {
		const char *want = st->shards[c].conf->name, *p = names;
		size_t wl = strlen(want);
		bool found = false;
		while (*p && !found) {
			size_t len = strcspn(p, ",");
			found = len == wl && !strncmp(p, want, len);
			p += len + (p[len] == ',');
		}
		if (!found)
			lacks = c;
	}
	/* each member owning buckets configured: a list without one is
	 * another list, whatever else it names (init would refuse it too) */
	int k = 0;
	for (const char *p = names; *p && !rc; k++) {
		size_t len = strcspn(p, ",");
		bool configured = false, owns = false;
		for (int c = 0; c < st->n && !configured; c++)
			configured =
				strlen(st->shards[c].conf->name) == len && !strncmp(st->shards[c].conf->name, p, len);
		for (size_t b = 0; b < nb && !configured && !owns; b++)
			owns = (o[2 * b] << 8 | o[2 * b + 1]) == k;
		if (owns)
			rc = bs_error(BS_ECONFIG,
			              "the bucket map (version %s, as %s holds it) gives buckets to shard %.*s but "
			              "the configuration does not list it: add it back (another shard list? to remove "
			              "a shard, "
			              "mark it `drain: true` and reshard first)",
			              row[0], bs__shard_label(label, sizeof label, &st->shards[i]), (int)len, p);
		p += len + (p[len] == ',');
	}
	if (!rc && lacks >= 0) {
		/* only that: the list is the map's and more, which init adds */
		st->shards[i].fp_lacks = lacks;
		rc = bs_error(BS_ECONFIG,
		              "shard %s is in the configuration (line %d) but not a member of the store's "
		              "bucket map (version %s, as %s holds it): run `bagstore init` to add it (or is this "
		              "another shard list?)",
		              st->shards[lacks].conf->name, st->shards[lacks].conf->line, row[0],
		              bs__shard_label(label, sizeof label, &st->shards[i]));
	}
done:
	mysql_free_result(res);
	return rc;
}

/* The shard's identity (doc/DESIGN.md, "Buckets and resharding"): the
 * store it belongs to and its own name, against the configuration's name
 * for this address and the store id the other shards (and the map) gave. */
int bs__shard_check(bs_store_t *st, int i)
{
	bs_shard_t *sh = &st->shards[i];
	shard_meta_t meta;
	char label[192];
	int rc;

	if (sh->conn && sh->fp_state == 1)
		return 0;
	sh->fp_lacks = -1;
	if ((rc = bs__shard_meta(&meta, st, i)))
		return rc;
	if (!meta.store_id[0] && meta.fingerprint[0])
		return bs_error(BS_ECONFIG,
		                "%s was initialised by an older bagstore (no bucket map): run `bagstore init` "
		                "to give the store its map (no row moves)",
		                bs__shard_label(label, sizeof label, sh));
	if (!meta.store_id[0])
		return bs_error(BS_ECONFIG,
		                "%s is not initialised: run `bagstore init`"
		                " (or is this another shard list?)",
		                bs__shard_label(label, sizeof label, sh));
	if (meta.schema < BS__SCHEMA_VERSION)
		return bs_error(BS_ECONFIG,
		                "%s was initialised by an older bagstore (schema version %d; this one writes %d): "
		                "run `bagstore init` to bring its tables up to date (no row moves)",
		                bs__shard_label(label, sizeof label, sh), meta.schema, BS__SCHEMA_VERSION);
	if (strcmp(meta.name, sh->conf->name) != 0)
		return bs_error(BS_ECONFIG,
		                "%s records that it is shard %s of its store, but the configuration calls it %s: "
		                "refusing to use it (another shard list? a shard's name goes with its address)",
		                bs__shard_label(label, sizeof label, sh), meta.name, sh->conf->name);
	char held[33];
	if (bs__store_id_agree(held, st, meta.store_id))
		return bs_error(BS_ECONFIG,
		                "%s belongs to another store (id %s) than the rest of this configuration (id %s): "
		                "refusing to use it (another shard list?)",
		                bs__shard_label(label, sizeof label, sh), meta.store_id, held);
	if ((rc = members_agree(st, i)))
		return rc;
	/* versions go to the shards as UTC text (bulk.c, move.c): a session
	 * in another zone (an option file's init-command after ours) would
	 * shift them */
	if (strcmp(meta.time_zone, "+00:00") != 0)
		return bs_error(BS_ECONFIG,
		                "%s: the session's time zone is '%s', not UTC ('+00:00'), after bagstore set it "
		                "(an init-command in the option file?): refusing to use it",
		                bs__shard_label(label, sizeof label, sh), meta.time_zone);
	sh->fp_state = 1;
	return 0;
}

int bs__store_id_agree(char held[33], bs_store_t *st, const char *id)
{
	int differs = 0;
	pthread_mutex_lock(&st->id_lock);
	if (!id || !id[0])
		st->store_id[0] = '\0';
	else if (!st->store_id[0])
		snprintf(st->store_id, sizeof st->store_id, "%s", id);
	else if (strcmp(st->store_id, id) != 0) {
		memcpy(held, st->store_id, sizeof st->store_id);
		differs = 1;
	}
	pthread_mutex_unlock(&st->id_lock);
	return differs;
}

int bs__shard_query_sets(MYSQL_RES **res, int nsets, bs_store_t *st, int i, const char *sql, size_t len)
{
	answer_t a = { .res = res, .nres = nsets };
	int rc;
	for (int k = 0; k < nsets; k++)
		res[k] = NULL;
	if ((rc = stmt(&a, st, i, sql, len, "query failed")))
		return rc;
	return a.got ? 0 : no_rows(st, i);
}

/* ------------------------------------------------------------ fan-out */

struct each_job {
	bs_store_t *st;
	int shard;
	shard_fn fn;
	void *arg;
	int rc;
	char msg[1024];
};

static void *each_thread(void *p)
{
	struct each_job *j = p;
	mysql_thread_init();
	bs_error_clear();
	j->rc = j->fn(j->st, j->shard, j->arg);
	if (j->rc)
		snprintf(j->msg, sizeof j->msg, "%s", bs_last_error());
	mysql_thread_end();
	return NULL;
}

int bs__shard_each(bs_store_t *st, const bool *which, shard_fn fn, void *arg, int *rcs)
{
	int n = st->n, count = 0, rc = 0;
	struct each_job *jobs = calloc((size_t)n, sizeof *jobs);
	pthread_t *tids = calloc((size_t)n, sizeof *tids);
	bool *started = calloc((size_t)n, sizeof *started);
	if (!jobs || !tids || !started) {
		rc = bs_error(BS_ENOMEM, "out of memory starting shard threads");
		goto done;
	}
	for (int i = 0; i < n; i++)
		if (!which || which[i])
			count++;
	/* the last selected shard runs on this thread: no thread for one shard */
	int last = -1;
	for (int i = 0; i < n; i++) {
		if (which && !which[i])
			continue;
		jobs[i] = (struct each_job){ .st = st, .shard = i, .fn = fn, .arg = arg };
		if (--count == 0) {
			last = i;
			break;
		}
		if (pthread_create(&tids[i], NULL, each_thread, &jobs[i]) == 0)
			started[i] = true;
		else
			each_thread(&jobs[i]);
	}
	if (last >= 0) {
		bs_error_clear();
		jobs[last].rc = fn(st, last, arg);
		if (jobs[last].rc)
			snprintf(jobs[last].msg, sizeof jobs[last].msg, "%s", bs_last_error());
	}
	for (int i = 0; i < n; i++)
		if (started[i])
			pthread_join(tids[i], NULL);
	for (int i = 0; i < n; i++) {
		if (which && !which[i])
			continue;
		if (rcs)
			rcs[i] = jobs[i].rc;
		if (jobs[i].rc && !rc) {
			rc = jobs[i].rc;
			bs_error(rc, "%s", jobs[i].msg);
		}
	}
done:
	free(jobs);
	free(tids);
	free(started);
	return rc;
}

struct sql_arg {
	const char *sql;
	size_t len;
	bool writable; /* check the shard's identity first */
};

static int exec_on(bs_store_t *st, int i, void *p)
{
	struct sql_arg *a = p;
	int rc;
	if (a->writable && (rc = bs__shard_check(st, i)))
		return rc;
	return bs__shard_exec(st, i, a->sql, a->len);
}

int bs__exec_everywhere(bs_store_t *st, const char *sql, size_t len)
{
	struct sql_arg a = { sql, len, true };
	return bs__shard_each(st, NULL, exec_on, &a, NULL);
}

/* ------------------------------------------------------------ named locks */

/* The lock name as a hex literal: names never reach SQL as text. */
static void lock_lit(bs_buf_t *b, const char *name)
{
	bs__buf_hex(b, name, strlen(name));
}

int bs__lock_try(bool *mine, bs_store_t *st, int shard, const char *name)
{
	bs_buf_t b = { 0 };
	MYSQL_RES *res = NULL;
	int rc;
	*mine = false;
	bs__buf_puts(&b, "SELECT ");
	bs__lock_take_sql(&b, name);
	if (!(rc = bs__buf_ok(&b)) && !(rc = bs__shard_query(&res, st, shard, b.ptr, b.len))) {
		MYSQL_ROW row = mysql_fetch_row(res);
		*mine = row && row[0] && !strcmp(row[0], "1");
		mysql_free_result(res);
	}
	bs__buf_free(&b);
	return rc;
}

void bs__lock_held_sql(bs_buf_t *b, const char *name)
{
	bs__buf_puts(b, "IS_USED_LOCK(");
	lock_lit(b, name);
	bs__buf_puts(b, ")=CONNECTION_ID()");
}

void bs__lock_take_sql(bs_buf_t *b, const char *name)
{
	bs__buf_puts(b, "IF(");
	bs__lock_held_sql(b, name);
	bs__buf_puts(b, ",1,GET_LOCK(");
	lock_lit(b, name);
	bs__buf_puts(b, ",0))");
}

void bs__lock_release(bs_store_t *st, int shard, const char *name)
{
	bs_buf_t b = { 0 };
	if (st->shards[shard].conn) {
		bs__buf_puts(&b, "DO RELEASE_LOCK(");
		lock_lit(&b, name);
		bs__buf_puts(&b, ")");
		if (!bs__buf_ok(&b))
			bs__shard_exec(st, shard, b.ptr, b.len);
	}
	bs__buf_free(&b);
	bs_error_clear();
}

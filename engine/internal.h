/*
 * internal.h - what the engine's files share and nobody else sees:
 * the store and shard structs, the SQL text builder, shard connections,
 * the parallel fan-out over shards, the catalog and its cache. Names
 * shared between engine files start with bs__ (bs_ is the public API).
 *
 * The engine's layers. A file calls files of its own layer or lower ones,
 * never a higher one, and no two files call each other round a cycle;
 * tests/layers.sh checks both from the objects' symbols (make check):
 *
 *   L0  base      error buf bytes value id base64
 *   L1  text      msgpack body json json_read yaml config indexdef route querytext
 *   L2  shards    tls shard fanout collect store replica schema catalog audit grants map
 *   L3  data      entity bulk query browse export status census count undo
 *   L4  cleaner   events jobs throttle writers lag drift repair reshard backfill verify lifecycle workers move explain
 *   L5  top       init daemon
 *
 * L0 knows bytes and values; L1 turns them into text and back and reads
 * definitions, with no shard in sight; L2 talks to shards and keeps each
 * shard's tables, identity and catalog rows; L3 reads and writes entities;
 * L4 is the cleaner and the index lifecycle (lifecycle.c alone decides
 * when an index changes state); L5 composes them into `init` and the
 * daemon. codec_internal.h is the L0/L1 codecs' own; cleaner.h is L4's.
 */
#ifndef BS_INTERNAL_H
#define BS_INTERNAL_H

#include "alloc.h"
#include "bagstore.h"

#include <mysql.h>
#include <pthread.h>
#include <stdarg.h>

/* ------------------------------------------------------------ SQL text */

/* A growable NUL-terminated string for building SQL. On allocation failure
 * it latches `oom` and later appends are no-ops; check with bs__buf_ok(). */
typedef struct {
	char *ptr;
	size_t len, cap;
	bool oom;
} bs_buf_t;

void bs__buf_free(bs_buf_t *b);
void bs__buf_reset(bs_buf_t *b);
int bs__buf_ok(const bs_buf_t *b); /* 0 or BS_ENOMEM (with message) */
void bs__buf_putn(bs_buf_t *b, const char *s, size_t n);
void bs__buf_puts(bs_buf_t *b, const char *s);
/* printf in the C locale (a '.' before the decimals whatever LC_NUMERIC) */
void bs__buf_printf(bs_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* strtod in the C locale: what the servers and SQL write (value.c) */
double bs__strtod_c(const char *s, char **end);
/* an unsigned number in decimal, without printf (per row of bulk SQL) */
void bs__buf_uint(bs_buf_t *b, unsigned long long v);
/* X'hex' (binary literal); empty input gives X'' */
void bs__buf_hex(bs_buf_t *b, const void *p, size_t n);
/* hex digits, upper case, as MariaDB's HEX() gives them */
void bs__buf_hexu(bs_buf_t *b, const void *p, size_t n);
/* microseconds since the epoch as UNIX_TIMESTAMP() of a TIMESTAMP(6)
 * gives them: seconds, '.', six digits */
void bs__buf_unix_us(bs_buf_t *b, int64_t us);
/* FROM_UNIXTIME(<us as seconds>): a time as a TIMESTAMP(6) literal */
void bs__buf_from_unixtime(bs_buf_t *b, int64_t us);
/* `name` quoted as an identifier (names are validated elsewhere) */
void bs__buf_ident(bs_buf_t *b, const char *name);
/* An index row's insert, up to its values: INSERT INTO `idx`
 * (`p1`,...,entity_id) */
void bs__buf_index_insert(bs_buf_t *b, const bs_index_t *idx);
/* An index row's upsert clause: ON DUPLICATE KEY UPDATE `p1`=VALUES(`p1`),... */
void bs__buf_index_update(bs_buf_t *b, const bs_index_t *idx);
/* A bag value as an SQL literal for prop's column; the value must fit. */
void bs__buf_value(bs_buf_t *b, const bs_value_t *v, const bs_prop_t *prop);

/* ------------------------------------------------------------ bodies */

/* bs_body_decode of a body read from a row whose id column is rowid (16
 * bytes), body.c: a body whose "id" differs is BS_ECORRUPT too, naming both
 * ids. Messages start with `where` (the shard; may be NULL), then the row's id. Every
 * read of a stored body goes through it. */
int bs__body_decode_row(bs_value_t *out, const void *body, size_t len, const void *rowid, const char *where);

/* Can v be printed as JSON and read back as the same value (json.c)?
 * Strings and keys valid UTF-8, keys without NUL, no map whose only key is
 * one of Extended JSON's ($uuid, $binary...), and within the decoder's
 * limits (BS_BODY_MAX_ITEMS, BS_BODY_MAX_DECODED). BS_EINVAL naming the
 * path otherwise. Every body written passes it (bs_body_encode), so that
 * what is stored can always be read back and shown. */
int bs__value_printable(const bs_value_t *v);

/* The write path's test fault points between an entity and its index rows
 * (after_entity_write, pause_before_index_rows; entity.c), for id. */
void bs__fault_after_entity(const bs_id_t *id);
/* A fault point's exit (75): the process ends at once, as if killed. */
void bs__fault_exit(void) __attribute__((noreturn));

/* ------------------------------------------------------------ shards */

/* The statements sent prepared (bs__shard_prep_run): the hottest ones
 * that are a single statement, so the server parses and plans them once
 * per connection rather than once per call. */
enum {
	BS__PREP_GET,
	BS__PREP_PUT,
	BS__PREP_DELETE,
	BS__PREP_INTENT,
	BS__PREP_PUT_RETURNING,
	BS__PREP_DELETE_RETURNING,
	BS__PREP_CALL_PUT,
	BS__PREP_CALL_DELETE,
	BS__PREP_N
};
#define BS__PREP_DYN 8

typedef struct {
	const bs_shard_conf_t *conf;
	int index;
	MYSQL *conn;            /* NULL until first use, or after a lost connection */
	unsigned long conn_gen; /* connections closed so far: a named lock taken on one is gone once it moves */
	int fp_state;           /* 1 checked and agrees, 0 not checked yet */
	int fp_lacks;           /* the last check's refusal was only that the bucket
	                         * map does not name configured shard fp_lacks yet
	                         * (`init` adds it); -1 else */
	unsigned last_errno;    /* MySQL's number for the last failure (bs__shard_fail) */
	int last_done;          /* statements of the last blocking call answered without error */
	/* a statement sent by bs__shard_send whose answer is not read yet, and
	 * the named lock it releases (released again if it failed) */
	bool pending;
	char pending_lock[65];
	/* the server takes INSERT ... RETURNING and DELETE ... RETURNING
	 * (MariaDB 10.5 and later): the write path's one-statement form */
	bool returning;
	/* the trace of the statement bs__shard_send sent (its text shortened,
	 * owned; NULL when not traced), told when its answer is read */
	char *pending_trace;
	double pending_t0;
	int64_t pending_at;
	bs_tls_state_t tls; /* what the open connection's TLS achieved (tls.c) */
	/* its ownership states per bucket (map.c), as of owned_version; NULL
	 * until read */
	uint8_t *bstate;
	int64_t owned_version;
	/* the connection is inside an export's snapshot (export.c): its
	 * ownership is read in that snapshot, not a new one of its own */
	bool in_snapshot;
	/* per bucket (nleaving of them): a single write's full form last found
	 * it leaving here, so the next write to it skips the fast form, which
	 * would be refused (entity.c); a hint, never a decision: NULL until
	 * one is found */
	uint8_t *leaving;
	int nleaving;
	/* a bulk put's fenced INSERT (the foreign-key form, bulk.c) was
	 * refused here: until then (mono s) its batches take the fence's
	 * other forms, which a move under way would send them to anyway */
	double bulk_fk_off_until;
	/* this process's data-changing statements sent to the shard's server
	 * (bs__shard_sent); NULL until the first is counted */
	struct bs__writes *writes;
	/* single writes done (rows written, lock released) whose intents are
	 * removed together later (bs__settle_*), and since when (mono s) */
	struct bs__settle *settle;
	int nsettle;
	double settle_since;
	/* this connection holds the store's fix_token lock (repair.c) */
	bool fix_held;
	/* the BS__PREP_* statements prepared on this connection (NULL until
	 * first used), closed with it; prep_off_until (mono s, 0: none): the
	 * server would not prepare (too many prepared statements, or none at
	 * all): the text form on this connection until then */
	MYSQL_STMT *prep[BS__PREP_N];
	double prep_off_until;
	/* the server refused a bulk execution (a binary log in STATEMENT
	 * format): bs__shard_rows sends text to this shard until then (mono
	 * s, 0: none), a new connection included (the format is the server's) */
	double bulk_off_until;
	/* the write procedures (schema.c's bagstore_put_v2 and
	 * bagstore_delete_v1) were missing here or not ours to call: the
	 * intent and the entity as two statements on this connection until
	 * then (mono s, 0: call them), when the CALL is tried again */
	double no_proc_until;
	/* init could not make the write procedures here: the account lacks
	 * CREATE ROUTINE (bs_init_noproc) */
	bool proc_denied;
	/* statements built at run time (bs__shard_prep_sql), by their text:
	 * the BS__PREP_DYN used last (used: dyn_clock at the last use) */
	struct {
		char *sql;
		MYSQL_STMT *s;
		unsigned long used;
	} dyn[BS__PREP_DYN];
	unsigned long dyn_clock;
} bs_shard_t;

/* The bucket map as a store caches it (map.c). */
typedef struct {
	bool loaded;
	int64_t version;
	int buckets; /* B */
	char store_id[33];
	int *owner; /* per bucket: the configured shard that owns it, -1 unknown */
	int nnames; /* members, in the map's order */
	char (*names)[BS_NAME_MAX + 1];
	int *name_shard; /* per member: its configured shard, -1 when not configured */
} bs__map_t;

struct bs_store {
	const bs_config_t *cfg;
	int n;
	bs_shard_t *shards;
	char fingerprint[17];
	/* the last bs_init's shards that an older bagstore had initialised:
	 * how many, their names (comma-separated), the oldest schema version
	 * among them, 0 for none recorded (bs__map_precheck; bs_init_upgraded) */
	int nupgraded;
	char upgraded[256];
	int upgraded_from;
	/* the writers' catalog cache */
	bs_index_list_t cat;
	double cat_loaded; /* monotonic seconds; <0 when never loaded */
	/* connect/read/write timeouts, whole seconds, from the configuration (the
	 * console caps them by opening its stores over a copy of it) */
	unsigned connect_timeout, read_timeout, write_timeout;
	/* the bucket map (map.c) and the store's id (set by the first shard
	 * whose identity is checked, or by the map) */
	bs__map_t map;
	char store_id[33]; /* under id_lock: the fan-out checks shards at once */
	pthread_mutex_t id_lock;
	/* the statement trace (bs_store_trace): fn NULL when off; set while no
	 * call runs on the store, read by its fan-out's threads */
	bs_trace_fn trace_fn;
	void *trace_arg;
	/* BAGSTORE_FAULT=rows_as_text when opened: bs__shard_rows sends text */
	bool rows_as_text;
	/* while bs__drift_fix_settle runs: the token under which the entities
	 * its fixes change get an intent before the fix (drift.c), its named
	 * lock held on each shard written; "" otherwise */
	char fix_token[48];
};

double bs_now_mono(void); /* monotonic seconds */
int64_t bs_now_us(void);  /* wall clock, unix microseconds */

/* "s0 (127.0.0.1:3307)" into buf */
const char *bs__shard_label(char *buf, size_t size, const bs_shard_t *sh);
void bs__shard_address(char *buf, size_t size, const bs_shard_conf_t *c);

/* This process's own writes (throttle.c tells other clients' writes from
 * them): bs__shard_sent counts the INSERT, REPLACE, UPDATE and DELETE
 * statements in sql, as the server's Com_insert... counters will, for the
 * shard's server (its address), every store of the process together; every
 * statement sent to a shard goes through it. bs__shard_writes_sent is the
 * count so far. Counted only while the process has a throttle
 * (bs__shard_count_writes, by throttle.c's open and close: the throttle
 * reads differences from its own readings on): an application that only
 * reads and writes does not scan its statements' text. */
void bs__shard_sent(bs_shard_t *sh, const char *sql, size_t len);
uint64_t bs__shard_writes_sent(bs_store_t *st, int i);
void bs__shard_count_writes(bool on);
/* The data-changing statements in sql (a multi-statement counted each). */
uint64_t bs__sql_writes(const char *sql, size_t len);

/* Now on the shard's clock, unix microseconds. */
int bs__shard_now_us(int64_t *out, bs_store_t *st, int shard);

/* Named locks (GET_LOCK) on a shard's connection, the name sent as a hex
 * literal. try: *mine when this connection holds it now (taken, or held
 * already); never waits. held_sql appends the SQL condition "this
 * connection holds it" (for UPDATEs that only match while it does);
 * take_sql the SQL expression that takes it without waiting, 1 when this
 * connection holds it after (held already, or taken now).
 * release is best effort and clears the error. */
int bs__lock_try(bool *mine, bs_store_t *st, int shard, const char *name);
void bs__lock_held_sql(bs_buf_t *b, const char *name);
void bs__lock_take_sql(bs_buf_t *b, const char *name);
void bs__lock_release(bs_store_t *st, int shard, const char *name);

/* Intents removed in batches (the single write's step 3, entity.c): a
 * write whose index rows are all written adds its intent (token, the
 * entity and its bucket, the version it wrote, 0 for a delete, and the
 * version it replaced or deleted, 0 for none); bs__settle_due says a batch
 * is due (BS__SETTLE_BATCH of them, or the first older than
 * BS__SETTLE_AGE_S); bs__settle_sql appends the one statement that removes
 * each where the shard still owns the bucket (owned or leaving) and the
 * entity is still that version (still absent, for a delete), and empties
 * the list; bs__settle_flush runs it now, waiting at most a second for
 * its answer (bs_store_free calls it: a hung shard does not hold the free
 * up longer). A later write of the same entity on the same connection
 * (its rows all written) makes an earlier entry go whatever the version
 * when that entry is a delete and this write found no entity (found
 * false), or a put whose very version this write replaced or deleted:
 * the earlier write's rows were all written before this one began; a
 * delete only removed rows (any of the entity's on a shard, another
 * writer's too), and this write, finding nothing, wrote its rows whole
 * (one that found a body skips a ready index's unchanged row, which the
 * delete may have taken); for a put, nothing wrote between the two.
 * Otherwise (another writer between, whose rows the earlier write's may
 * have landed after) the entry keeps its version check.
 * An intent left (never flushed, the process killed) has a free lock: the
 * repair loop settles it. */
struct bs__settle {
	char token[48];
	bs_id_t id;
	int bucket;
	int64_t ver_us; /* 0: a delete */
	bool any;       /* superseded: removed whatever the version */
};
#define BS__SETTLE_BATCH 32
#define BS__SETTLE_AGE_S 0.2
void bs__settle_add(bs_store_t *st, int i, const char *token, const bs_id_t *id, int bucket, int64_t ver_us,
                    int64_t prev_us, bool found);
/* A fresh token for intents and their named lock: "bagstore.", kind (one
 * letter: "w" a write's, entity.c and bulk.c; "r" the cleaner's left for
 * the repair loop; "f" a fix's, repair.c), "." and 32 random hex digits. */
void bs__token(char token[48], const char *kind);
bool bs__settle_due(const bs_store_t *st, int i);
void bs__settle_sql(bs_buf_t *out, bs_store_t *st, int i);
void bs__settle_flush(bs_store_t *st, int i);

/* Send statements on the shard's connection without waiting for their
 * answer: the write path's last step, off the caller's latency. The answer
 * is read (and dropped) before the connection's next use, or when the store
 * closes. lock (may be NULL) is a named lock the statements release; when
 * they failed it is released again then. Returns 0 when sent; a failure to
 * send is an error like any other. */
int bs__shard_send(bs_store_t *st, int i, const char *sql, size_t len, const char *lock);

/* Connecting, in pieces (fanout.c connects without blocking): a handle with
 * every option set (TLS included: bs__tls_apply) and the password to give
 * it; the error of a failed connect (closes the handle; says what failed
 * when TLS is why); a connected handle made the shard's, once its TLS is
 * checked against the mode (bs__tls_check: BS_ECONFIG, the handle closed,
 * when short of it). */
int bs__shard_prepare(MYSQL **out, const char **password, bs_store_t *st, int i);
int bs__shard_connect_failed(bs_store_t *st, int i, MYSQL *m);
int bs__shard_adopt(bs_store_t *st, int i, MYSQL *m);

/* Statements on many shards at once, from this thread (fanout.c): q[i] for
 * shard i, sql NULL where there is nothing to run. Each shard's statements
 * (several, separated by ';', are fine) run on its connection, connecting
 * first if needed, after the identity check of bs__shard_check (unless
 * unchecked); every result set with rows is kept in res[], in order (at
 * most BS__MAX_RESULTS). Returns 0 when every shard succeeded, else the
 * first failing shard's code with its message (shard order); each shard's
 * rc and msg are kept. Free the results with bs__shard_stmts_clear. */
#define BS__MAX_RESULTS 8
typedef struct {
	const char *sql;
	size_t len;
	bool unchecked;
	MYSQL_RES *res[BS__MAX_RESULTS];
	int nres;
	int64_t affected; /* the last statement's rows (found rows), when it returned no set */
	int rc;
	char msg[512];
} bs__shard_stmt_t;
int bs__shard_run(bs_store_t *st, bs__shard_stmt_t *q);
void bs__shard_stmts_clear(bs__shard_stmt_t *q, int n);

/* The console's query form "[INDEX:] PROP=VALUE ..." split in place in buf
 * (querytext.c): *index (NULL: none named) and the condition texts
 * words[BS_INDEX_MAX_PROPS + 1], unquoted. */
int bs__query_split(char **index, char **words, int *nwords, char *buf);
/* A query's plan, as bs_query would run it (query.c, for explain.c): the
 * ready index (a copy), the shard_on value's bucket (-1: no condition
 * fixes it) and the shard step 1 reads (-1: every shard), and the text of
 * step 1's statement as sent and of step 2's with its ids elided. */
typedef struct {
	bs_index_t index;
	int buckets;
	int route_bucket, route_shard;
	bs_buf_t step1, step2;
} bs__query_plan_t;
int bs__query_plan(bs__query_plan_t *out, bs_store_t *st, const char *index, const bs_cond_t *conds, int nconds);
void bs__query_plan_free(bs__query_plan_t *p);
/* bs_query counting what it reads (stats may be NULL): the step it is in
 * (0 before step 1: the catalog and the map; 1; 2), and per shard the
 * index rows step 1 read (index_rows[n]) and the entity rows step 2 read
 * (entity_rows[n]), arrays the caller zeroes. */
typedef struct {
	int step;
	int64_t *index_rows, *entity_rows;
} bs__query_stats_t;
int bs__query_run(bs_result_t *out, bs_store_t *st, const char *index, const bs_cond_t *conds, int nconds, size_t limit,
                  bs__query_stats_t *stats);

/* The statement trace (shard.c): tell st's trace about one statement sent
 * on shard i at at_us (monotonic t0), answered with rows (err, msg: MySQL's
 * error, 0 and NULL when none). Call only when st->trace_fn is set: the
 * callers test it (one branch) and take the times. bs__trace_text writes
 * the text the trace shows (values shortened, passwords masked); caller
 * frees (NULL when out of memory). */
void bs__trace_emit(bs_store_t *st, int i, const char *sql, size_t len, double t0, int64_t at_us, int64_t rows,
                    bool async, unsigned err, const char *msg);
char *bs__trace_text(const char *sql, size_t len);
/* The process's trace, for a store being opened (store.c). */
void bs__trace_default(bs_trace_fn *fn, void **arg);

/* The shard's connection, connecting if needed. */
int bs__shard_conn(MYSQL **out, bs_store_t *st, int i);
void bs__shard_close(bs_store_t *st, int i);
/* The connection that took a named lock on shard i (its conn_gen then:
 * gen) never closed since, so the lock can still be held (the server's
 * own word is bs__lock_held_sql's). */
bool bs__lock_conn_kept(const bs_store_t *st, int i, unsigned long gen);
/* What a write says when the lock went with its connection ("the
 * connection to shard S that held the <what> was lost"), in buf. */
const char *bs__lock_lost(char *buf, size_t size, const bs_store_t *st, int i, const char *what);
/* Run one statement (or several, separated by ';'); results are discarded.
 * Errors name the shard and carry MySQL's message. */
int bs__shard_exec(bs_store_t *st, int i, const char *sql, size_t len);
/* One statement; *affected its rows (found rows: the connection's
 * CLIENT_FOUND_ROWS counts a matched row an upsert left as it was). */
int bs__shard_exec_rows(int64_t *affected, bs_store_t *st, int i, const char *sql, size_t len);
/* Run a statement that returns rows; *res is stored (mysql_store_result).
 * For multi-statements, the first result set is returned and the rest
 * (which must be row-less) are drained. */
int bs__shard_query(MYSQL_RES **res, bs_store_t *st, int i, const char *sql, size_t len);
/* One parameter of a prepared statement: bytes (the default), text in
 * the connection's utf8mb4, an integer, an unsigned one, a double, or
 * NULL. */
enum { BS__P_BYTES, BS__P_TEXT, BS__P_INT, BS__P_UINT, BS__P_DOUBLE, BS__P_NULL };
typedef struct {
	const void *p; /* bytes and text */
	size_t len;
	long long i;
	unsigned long long u;
	double d;
	int type;
} bs__param_t;
/* A bag value as the parameter bs__buf_value would write as a literal
 * for prop's column (bytes and text borrowed from v; buf.c). */
bs__param_t bs__param_value(const bs_value_t *v, const bs_prop_t *prop);
/* Run statement kind (BS__PREP_*; sql its text, the same every call, a '?'
 * for each of the n params) on shard i, prepared on the connection at
 * first use. *affected: the rows it changed; *res (NULL: none wanted): the
 * statement, its result set stored, to bind and fetch (mysql_stmt_fetch)
 * and then hand to bs__shard_prep_end before anything else is sent on the
 * shard. Errors as bs__shard_query's (the shard, MySQL's message; last
 * errno and last done kept alike). *text: the server would not prepare it
 * (nothing was run): send the text form. Traced as the text form would be,
 * the values in place of the '?'s. */
int bs__shard_prep_run(MYSQL_STMT **res, int64_t *affected, bool *text, bs_store_t *st, int i, int kind,
                       const char *sql, const bs__param_t *params, int n);
/* bs__shard_prep_run for a statement whose text is built at run time
 * (an index's rows): the connection keeps the last BS__PREP_DYN of them,
 * found by their text. */
/* After a prepared run's rows are read (its result freed): a CALL's
 * later answers read too, up to its status; an error there (a commit that
 * failed after the rows) fails the statement, whose connection is closed:
 * its place in the answers is not known. 0 or the error. */
int bs__shard_prep_finish(bs_store_t *st, int i, MYSQL_STMT *s);
int bs__shard_prep_sql(MYSQL_STMT **res, int64_t *affected, bool *text, bs_store_t *st, int i, const char *sql,
                       const bs__param_t *params, int n);
void bs__shard_prep_end(MYSQL_STMT *s);
/* Many rows of one INSERT on shard i: head (up to " VALUES "), nrows
 * rows of ncols params each (rows[r]: row r's), tail. Where the
 * server takes an array of parameters (MariaDB's bulk execution) they go
 * so, the statement head "(?,...)" tail prepared once per connection and
 * the values in binary: the server parses nothing a row, a third less of
 * its CPU than the text form's literals; else (a column of values of mixed
 * kinds, a server that does not) as the multi-row text statement. Errors,
 * the count for the throttle and the trace (the text form) as
 * bs__shard_exec's. *affected: the rows it changed. */
int bs__shard_rows(int64_t *affected, bs_store_t *st, int i, const char *head, const char *tail,
                   const bs__param_t *const *rows, int ncols, size_t nrows);
/* The next row of a prepared statement's stored result as the text
 * protocol gives one (a MYSQL_ROW): each column's bytes, NUL-terminated
 * (a number as its decimal text), NULL for SQL's NULL, and their lengths.
 * Returns 1 with a row, 0 when there is none, BS_E* naming shard i on a
 * failure. bs__prep_row_free frees it (also after 0 or a failure). */
#define BS__PREP_COLS 8
typedef struct {
	char *col[BS__PREP_COLS];
	unsigned long len[BS__PREP_COLS];
} bs__prep_row_t;
int bs__shard_prep_row(bs__prep_row_t *row, bs_store_t *st, int i, MYSQL_STMT *s);
void bs__prep_row_free(bs__prep_row_t *row);
/* Set the error from the shard's connection after a failed call; closes the
 * connection when it was lost. Returns the code. */
int bs__shard_fail(bs_store_t *st, int i, const char *what);
/* MySQL's error number of the shard's last statement (0 when it succeeded),
 * for callers that act on one (ER_NO_SUCH_TABLE: not initialised, or an
 * index table gone). */
unsigned bs__shard_last_errno(const bs_store_t *st, int i);
/* How many statements of the shard's last blocking call (a multi-statement
 * counts each) were answered before it failed: with last_errno, which of
 * them failed (0: the first). */
int bs__shard_last_done(const bs_store_t *st, int i);
/* Is err MySQL's refusal for want of a privilege (table, column, database
 * or global: 1142, 1143, 1044, 1227)? */
bool bs__denied(unsigned err);
/* Refuse reads and writes through a shard whose identity disagrees
 * (BS_ECONFIG): not initialised, initialised by an older bagstore (no map:
 * run init), another name than the configuration gives its address, or
 * another store's id than the other shards' (doc/DESIGN.md, "Buckets and
 * resharding"). Checked once per connection; sets st->store_id. Every
 * statement on entities or index tables is preceded by it: a wrong
 * configuration reads nothing and writes nothing, instead of answering
 * "not found". */
int bs__shard_check(bs_store_t *st, int i);
/* The store's id against id (a shard's, or the map's), under its lock: 0
 * when it agrees, or when the store had none yet (it takes id); 1 when it
 * holds another, copied into held. id NULL or "": the store forgets its id. */
int bs__store_id_agree(char held[33], bs_store_t *st, const char *id);
/* The identity a shard records in bagstore_meta (all zero when it records
 * none; BS_ECONFIG when bagstore_meta does not exist): the store's id and
 * the shard's name (map members), and the fingerprint, position and count
 * of the list it was first initialised with (older bagstores). */
typedef struct {
	char fingerprint[64];
	int index, count;
	char store_id[33];
	char name[BS_NAME_MAX + 1];
	int schema;         /* schema_version: what its tables hold (0: none recorded) */
	char time_zone[72]; /* the session's @@time_zone, which must be UTC ("+00:00") */
} shard_meta_t;
/* The schema_version init records: the tables as this bagstore writes
 * them (3: bagstore_batch_intents, the bulk put's intent per batch; 4:
 * bagstore_owned, its triggers and entities' fence columns). A
 * shard that records less is refused until `bagstore init` brings its
 * tables up to date. */
#define BS__SCHEMA_VERSION 4
int bs__shard_meta(shard_meta_t *out, bs_store_t *st, int i);
/* Run a multi-statement and keep its first nsets result sets (row-less
 * statements skipped; fewer leave NULLs, none is an error); the rest are
 * drained. */
int bs__shard_query_sets(MYSQL_RES **res, int nsets, bs_store_t *st, int i, const char *sql, size_t len);

/* Run fn(st, shard, arg) for each shard in `which` (NULL: all shards) at
 * once, each on its own thread using only its own shard's connection.
 * Returns 0 when all succeeded; otherwise the first failing shard's code
 * with its message (by shard order). rcs[] (optional, nshards long) gets
 * every shard's result. */
typedef int (*shard_fn)(bs_store_t *st, int shard, void *arg);
int bs__shard_each(bs_store_t *st, const bool *which, shard_fn fn, void *arg, int *rcs);

/* Reads of every shard that a shard down does not stop (collect.c). The
 * messages of a failure: another than a shard down is "<failing>: <the
 * shard's message>" (failing NULL: the message alone); none answering is
 * "no shard answered for <none>", then ": <the first one's message>" when
 * none_first (none NULL: that message alone). */
typedef struct {
	const char *failing, *none;
	bool none_first;
} bs__up_msgs_t;
/* The shards asked that did not answer: how many, the first one's message. */
typedef struct {
	int down;
	char down_first[256]; /* as long as the public structs' unreachable_first */
} bs__up_t;
/* As bs__shard_each, but a shard that does not answer (BS_EUNREACHABLE) is
 * counted in *up and is no failure unless none of those asked answered;
 * another failure fails it (m's messages). rcs as bs__shard_each's. */
int bs__shard_each_up(bs__up_t *up, int *rcs, bs_store_t *st, const bool *which, shard_fn fn, void *arg,
                      const bs__up_msgs_t *m);
/* One shard's part of a list: len items (calloc'ed by the reader). */
typedef struct {
	void *items;
	int len;
} bs__part_t;
typedef struct {
	size_t size;                                                         /* an item's */
	int (*read)(bs__part_t *part, bs_store_t *st, int shard, void *arg); /* on its thread */
	void (*item_free)(void *item);                                       /* what an item holds (NULL: nothing) */
	void *arg;
	bs__up_msgs_t msgs;
} bs__collect_t;
/* One list from every shard at once (bs__shard_each_up): *items (caller
 * frees; NULL when empty), *len of them, the shards' parts in shard order;
 * those of shards that did not answer left out and counted in *up. */
int bs__collect(void **items, int *len, bs__up_t *up, bs_store_t *st, const bs__collect_t *c);
/* Run sql on every shard at once, after checking each is writable. */
int bs__exec_everywhere(bs_store_t *st, const char *sql, size_t len);

/* Parse a MySQL UNIX_TIMESTAMP(x) text ("1700000000.123456") to microseconds. */
int64_t bs__parse_unix_us(const char *s);

/* ------------------------------------------------------------ the map (map.c) */

/* Ownership states of a bucket on a shard (bagstore_buckets.state). */
enum { BS__B_NONE = 0, BS__B_OWNED, BS__B_LEAVING, BS__B_INCOMING, BS__B_GONE };
static inline bool bs__owns(uint8_t state)
{
	return state == BS__B_OWNED || state == BS__B_LEAVING;
}
/* The SQL list of the states in which a shard owns a bucket. */
#define BS__OWNING_SQL "('owned','leaving')"
/* A bulk put's intent (bulk.c) is one token per shard and batch in
 * bagstore_batch_intents, its ids in parts of at most BS__BATCH_PART (the
 * repair loop, repair.c, settles a part at a time). It goes only while
 * every one of those entities is the version the batch wrote: this
 * expression read again, beside the same text the writer makes from the
 * versions it knows it wrote ("HEX ts" in id order, joined by ','). */
#define BS__BATCH_PART 500
#define BS__BATCH_SQL "GROUP_CONCAT(HEX(id),' ',UNIX_TIMESTAMP(updated) ORDER BY id SEPARATOR ',')"
/* Its text's bytes per entity, at most: 32 + 1 + 17 (until 2286) + 1, with
 * room; the removal's group_concat_max_len is set to fit (a text cut
 * short would never equal the writer's, and the intent could not go). */
#define BS__BATCH_BYTES 64
/* Seconds a write waits for a bucket's ownership row (LOCK IN SHARE MODE
 * WAIT): a move's cut-over holds it at most cleaner.max_fence (1 s by
 * default). Writers (entity.c, bulk.c), the move log's batches (drift.c)
 * and the promotion's margin (lifecycle.c) share it. */
#define BS__FENCE_WAIT_S 3
/* Microseconds, from a bulk put's first round trip to its second, beyond
 * which a shard's stamped write is not sent (rolled back, and sent again in
 * one round trip); the second trip's INSERT waits at most
 * BS__BULK_ROW_WAIT_S for a row lock. Its rows commit within the two (and
 * the statement's own time) of their version, which the promotion's margin
 * (lifecycle.c) must outlast. */
#define BS__BULK_STAMP_BUDGET_US 3500000LL
#define BS__BULK_ROW_WAIT_S 1
/* Seconds a bulk put's fenced INSERT (its foreign-key form, one statement
 * in autocommit, every version NOW(6) plus j microseconds) may run
 * (max_statement_time): its rows commit within them of their versions;
 * one that runs longer is stopped, nothing written, and its batch takes
 * the two-trip form. */
#define BS__BULK_FK_MAX_S 3
/* How long after its version (`updated`, its NOW(6), taken before its
 * fence wait) a write can commit, with room: the promotion's repair
 * rounds and the repair loop's first watermark reach back this far
 * beyond what they cover (lifecycle.c, repair.c). */
#define BS__LATE_COMMIT_US 5000000LL
_Static_assert(BS__LATE_COMMIT_US > BS__FENCE_WAIT_S * 1000000LL, "the margin must outlast a write's fence wait");
_Static_assert(BS__LATE_COMMIT_US > BS__BULK_STAMP_BUDGET_US + BS__BULK_ROW_WAIT_S * 1000000LL,
               "the margin must outlast a bulk put's stamp budget and its row lock wait");
_Static_assert(BS__LATE_COMMIT_US > BS__BULK_FK_MAX_S * 1000000LL,
               "the margin must outlast a bulk put's fenced INSERT");
/* An entity's upsert after its VALUES: a later version than any before
 * (`updated` strictly grows), the new body (entity.c). */
#define BS__ENTITY_UPSERT \
	" ON DUPLICATE KEY UPDATE updated=GREATEST(VALUES(updated),updated+INTERVAL 1 MICROSECOND)," \
	"body=VALUES(body)"
/* The same, the single write's RETURNING form (entity.c and the write
 * procedures, schema.c): it reads the body it replaces into @bs_old and
 * that body's version into @bs_ou as it goes, and hands them back with
 * the new version. */
#define BS__ENTITY_UPSERT_SET_OLD \
	" ON DUPLICATE KEY UPDATE body=IF((@bs_old:=body) IS NULL,VALUES(body),VALUES(body))," \
	"updated=GREATEST(VALUES(updated),IF((@bs_ou:=UNIX_TIMESTAMP(updated)) IS NULL,updated,updated)+INTERVAL 1 " \
	"MICROSECOND)"
#define BS__ENTITY_RETURNING " RETURNING @bs_old, UNIX_TIMESTAMP(updated), @bs_ou"
#define BS__ENTITY_UPSERT_RETURNING BS__ENTITY_UPSERT_SET_OLD BS__ENTITY_RETURNING
/* The fence's lock waits, as WAIT 3 bounds the full form's ownership
 * read (a stored procedure, where WAIT is not allowed, says it so). */
#define BS__FENCE_WAITS \
	"SET STATEMENT innodb_lock_wait_timeout=" BS__STR(BS__FENCE_WAIT_S) ", lock_wait_timeout=" BS__STR( \
		BS__FENCE_WAIT_S) " FOR "
/* The fast form's fence (doc/DESIGN.md, "The fence"): an entity upsert
 * that names its bucket, and on a replaced row sets it again and turns
 * its flip, so that InnoDB checks (bucket, flip) against bagstore_owned
 * on every write, under a share lock on the row it finds, and refuses
 * the statement (error 1452) when the bucket is not simply owned here;
 * the check on whatever the session says (a server's init_connect or a
 * global setting could have turned it off), its lock waits bounded. */
#define BS__FENCE_STMT \
	"SET STATEMENT foreign_key_checks=1, innodb_lock_wait_timeout=" BS__STR( \
		BS__FENCE_WAIT_S) ", lock_wait_timeout=" BS__STR(BS__FENCE_WAIT_S) " FOR "
#define BS__FENCE_SET ",bucket=VALUES(bucket),flip=1-flip"
/* The fast form's entity upsert and its two tails (entity.c, schema.c's
 * bagstore_put_v2): the id, NOW(6), the body and the bucket follow. */
#define BS__FENCED_INSERT BS__FENCE_STMT "INSERT INTO entities (id, updated, body, bucket) VALUES ("
#define BS__FENCED_TAIL BS__ENTITY_UPSERT BS__FENCE_SET
#define BS__FENCED_TAIL_RETURNING BS__ENTITY_UPSERT_SET_OLD BS__FENCE_SET BS__ENTITY_RETURNING
/* A statement that may take a bucket out of 'owned' (move.c): the
 * trigger that deletes its bagstore_owned rows turns the foreign-key
 * check off for that delete, but a replica applying a ROW-format binary
 * log takes the check's setting from the statement's first event (the
 * bucket's row), so the statement turns it off too. bagstore_buckets has
 * no foreign key of its own to check. */
#define BS__OWNERSHIP_DML "SET STATEMENT foreign_key_checks=0 FOR "
#define BS__FENCE_REFUSED 1452 /* ER_NO_REFERENCED_ROW_2 */
#define BS__STR_(x) #x
#define BS__STR(x) BS__STR_(x)
/* A shard's ownership version as a column: read with the rows it goes with,
 * in the same statement, so rows and ownership are of one snapshot. */
#define BS__OV_SQL "(SELECT CAST(v AS SIGNED) FROM bagstore_meta WHERE k='owned_version')"

/* The map: loaded on first need (the highest version any shard answering
 * holds), checked against the configuration (every member owning buckets
 * configured, every configured shard a member). */
int bs__map_need(bs_store_t *st);
/* Read it again (told that it is stale). */
int bs__map_reload(bs_store_t *st);
/* An entity's bucket and its shard per the cached map (loaded). */
int bs__route_entity(int *shard, int *bucket, bs_store_t *st, const bs_id_t *id);
/* The shard of a bucket per the cached map (-1: none configured). */
static inline int bs__map_shard(const bs_store_t *st, int bucket)
{
	return st->map.owner[bucket];
}
/* The configured shard of a member's name, -1 when none. */
int bs__shard_by_name(const bs_store_t *st, const char *name);
/* shard refused bucket (it answered state, peer): where to go next. The
 * cached owner is updated from the answer, or the map read again; an
 * `incoming` bucket whose source says `gone` to it is rolled forward
 * (unless read_only). BS_EUNREACHABLE when no owner can be found. */
int bs__map_moved(int *next, bs_store_t *st, int bucket, int from, const char *state, const char *peer);
/* shard refused a write to some of buckets[n]: the cached owner of each it
 * does not own is set from its answer (followed as bs__map_moved does), or
 * the map read again when it never had one. */
int bs__map_learn(bs_store_t *st, int shard, const int *buckets, int n);
/* The ownership states of shard (per bucket, BS__B_*), as of version (-1:
 * its current one). *exact is false when the shard has moved past version
 * meanwhile (the caller reads its rows again). */
int bs__owned_at(const uint8_t **states, bool *exact, bs_store_t *st, int shard, int64_t version);
/* The bucket of an index row from its shard_on column as MySQL returns it
 * (raw bytes for strings and bytes, text for numbers); -1 when NULL. */
int bs__column_bucket(const bs_store_t *st, const bs_prop_t *prop, const char *raw, unsigned long len);
/* A float column's zero read back as text may have been either zero, whose
 * buckets differ: the other zero's bucket (b, the first guess, otherwise). */
int bs__column_bucket_zero(const bs_store_t *st, const bs_prop_t *prop, const char *raw, unsigned long len, int b);
/* Does some shard own every bucket, in states[shard] (NULL: that shard's
 * states unknown)? A read over every shard that finds a bucket nobody owned
 * (a cut-over between two shards' snapshots) reads again. */
bool bs__map_covered(const bs_store_t *st, const uint8_t *const *states);
/* Create or complete the map at init: a new store's first map, an older
 * store's migration, new members, members the configuration dropped that
 * own nothing; ownership rows and identities. */
int bs__map_init(bs_store_t *st);
/* Before init creates anything: every shard's recorded identity agrees
 * with the configuration and the others' (its name, one store, an older
 * bagstore's list), so a wrong list touches no shard (a new one included). */
int bs__map_precheck(bs_store_t *st);
/* Publish the map's next version in which buckets[n] belong to target (a
 * member's name); under the map lock, on every shard that answers. */
int bs__map_publish_move(bs_store_t *st, const int *buckets, int n, const char *target);

/* ------------------------------------------------------------ catalog */

/* The tables of every shard and each shard's identity row (init). */
int bs__schema_init(bs_store_t *st);
/* The fence's parent rows on shard i against its ownership rows (one
 * snapshot): stray, rows of buckets not owned there (a fast form could
 * write there unlogged); lacking, owned buckets without both rows (its
 * fast forms refused, the full form used); triggers, how many of the
 * three that keep them do their work (tried in a transaction rolled
 * back). Rows out of step are brought in line
 * (dropped, added: how many). Their cause (a TRUNCATE, a dump restored
 * without its triggers, a hand-made change) is the operator's to find. */
typedef struct {
	int64_t stray, lacking, dropped, added; /* stray, lacking: -1 until read */
	int triggers;                           /* -1: they could not be tried; tried says why */
	int tried_code;                         /* the try's error code (BS_E...) */
	char tried[1024];                       /* the try's error (its message names the shard) */
	char stray_buckets[128];                /* the stray rows' buckets, "b1,b2,..." (cut at 120) */
} bs__fence_t;
int bs__fence_check(bs__fence_t *out, bs_store_t *st, int i);
/* What init and the daemon say of a failed check of the triggers: the
 * try's error (its message), or how many of the 3 work, with the advice
 * (%s) that fits who says it. */
#define BS__FENCE_TRY_FMT "trying the fence's triggers on bagstore_buckets: %s"
#define BS__FENCE_TRIGGERS_FMT "%d of the fence's 3 triggers on bagstore_buckets do their work: %s"
/* The heartbeat table on shard i (for a store made before it existed). */
int bs__schema_heartbeat(bs_store_t *st, int i);

/* The catalog as writers see it: cached for cfg->catalog_ttl seconds.
 * The pointer is borrowed from the store until the next call. */
int bs__catalog_cached(const bs_index_list_t **out, bs_store_t *st);
void bs__catalog_invalidate(bs_store_t *st);
/* The comment every index table bagstore creates carries (its DDL ends
 * with COMMENT='...'): a table without it is not bagstore's to replace. */
#define BS__INDEX_TABLE_MARK "bagstore index table"

/* An index name's check: [A-Za-z_][A-Za-z0-9_]*, at most BS_NAME_MAX, not
 * entities nor bagstore_* (indexdef.c). 0 or BS_EINVAL. */
int bs__index_name_check(const char *name);
/* Borrowed lookup in a list (indexdef.c). */
const bs_index_t *bs__index_find(const bs_index_list_t *l, const char *name);

/* The catalog as each shard has it: per[nshards] lists (free with
 * bs__catalog_per_shard_free), rcs[nshards] (caller's) each shard's result;
 * unreachable shards are skipped (their per[i].unreachable set, with the
 * message), any other failure is returned. */
int bs__catalog_per_shard(bs_index_list_t **per, int *rcs, bs_store_t *st);
void bs__catalog_per_shard_free(bs_index_list_t *per, int n);

/* The catalog's DDL and rows, on every shard (lifecycle.c decides when):
 * create_tables makes the index's tables (replacing a table left by an
 * interrupted create); insert writes the catalog row, building, with one
 * creation time for every shard; set_state moves name from state `from`
 * (-1: any) to `to`; remove drops the tables and the row. Each invalidates
 * the store's cache. */
int bs__catalog_create_tables(bs_store_t *st, const bs_index_t *def);
int bs__catalog_insert(bs_store_t *st, const bs_index_t *def);
int bs__catalog_set_state(bs_store_t *st, const char *name, int from, bs_index_state_t to);
int bs__catalog_remove(bs_store_t *st, const char *name);
/* On shard i only: the index's table (made when missing) and its catalog
 * row in def's state and creation time (healing a divergence). */
int bs__catalog_put_row(bs_store_t *st, int i, const bs_index_t *def);
/* ANALYZE TABLE name on every shard: InnoDB's row estimates made fresh
 * (lifecycle.c, when a backfill has filled the table). */
int bs__catalog_analyze(bs_store_t *st, const char *name);
/* Give every shard the catalog's rows and index tables it lacks (shards
 * added to the store since the indexes were created; init). */
int bs__catalog_extend(bs_store_t *st);

/* The value an entity gives an index's property, normalised to what the
 * column stores (ints widened to float for float columns). Returns 1 and
 * fills *out (borrowing, or widening into tmp, which then holds a float and
 * owns nothing) when the property is present and fits, 0 when absent, -1
 * when present but not fitting. */
int bs__index_prop_value(const bs_value_t **out, bs_value_t *tmp, const bs_value_t *bag, const bs_prop_t *prop);
/* The index row a bag should have: fills vals[nprops] (borrowed or in
 * tmps[]) and returns the owning shard, or -1 when the entity has no row
 * (a property absent or not fitting; *misfit set when not fitting). */
int bs__index_row_for(const bs_value_t **vals, bs_value_t *tmps, const bs_index_t *idx, const bs_value_t *bag,
                      int nshards, bool *misfit);
/* The same with the store's map: the row's bucket into *bucket and its
 * shard returned (-1: no row). The map must be loaded. */
int bs__index_row_route(const bs_value_t **vals, bs_value_t *tmps, int *bucket, const bs_index_t *idx,
                        const bs_value_t *bag, const bs_store_t *st, bool *misfit);

/* An index row as read back by SELECT cols..., in the index's column
 * order, into vals[nprops] (owned: clear each). */
int bs__index_row_decode(bs_value_t *vals, const bs_index_t *idx, MYSQL_ROW row, const unsigned long *lens);
/* A value as an operator reads it: uuids dashed, bytes in hex. */
void bs__index_value_text(char *buf, size_t size, const bs_value_t *v);

/* Seconds behind of one of a shard's replicas (replica.c): through the
 * connection cached in *conn, opened when NULL; -1 with err set when the
 * lag is unknown (unreachable, or not replicating). tls (may be NULL) gets
 * what the connection's TLS achieved when it is opened. */
double bs__replica_seconds_behind(MYSQL **conn, const bs_replica_conf_t *r, const bs_shard_conf_t *sc, unsigned timeout,
                                  char *err, size_t size, bs_tls_state_t *tls);
/* The heartbeat row of the replica's shard as the replica has it
 * (replica.c; the throttle's sub-second lag): the replica's NOW(6) and the
 * row's time in unix microseconds (hb_us 0: no row yet; now_us 0 too when
 * the table has not reached it), Seconds_Behind_Master (-1: NULL). 0, or
 * -1 with err set when it does not answer or its SQL thread does not run. */
typedef struct {
	int64_t now_us, hb_us;
	double sbm;
	bool sql_running;
} bs__replica_hb_t;
int bs__replica_heartbeat(bs__replica_hb_t *out, MYSQL **conn, const bs_replica_conf_t *r, const bs_shard_conf_t *sc,
                          unsigned timeout, char *err, size_t size);

/* ------------------------------------------------------------ census (census.c) */

/* The distinct values a store holds, from a sample of its N values
 * (estimated): counts[k] is how often the sample holds its k-th distinct
 * value (0: skipped; n is their sum). Haas and Stokes' first-order
 * jackknife Duj1 (as PostgreSQL's ANALYZE uses it), n d / (n - f1 + f1 n
 * / N) over d values seen, f1 of them once, stabilised as theirs is: the
 * values seen more than BS__DISTINCT_STABLE times are set aside (counted
 * once each, their share of N taken out) so that one common value does
 * not hide the rest. Bounded by [values seen, N]. */
#define BS__DISTINCT_STABLE 10
double bs__distinct_estimate(const uint32_t *counts, size_t ncounts, double N);

/* ------------------------------------------------------------ tls (tls.c) */

/* Before mysql_real_connect: the connection's tls settings as Connector/C
 * options (nothing for BS_TLS_MODE_UNSET). The one place that sets them,
 * for shards and replicas alike. */
void bs__tls_apply(MYSQL *m, const bs_tls_conf_t *t);
/* Once connected: what the connection's TLS achieved into *out (read back
 * from the handle, option file included). When the mode asks for more (a
 * server without TLS under required or verify_ca), BS_ECONFIG with why in
 * err: the caller closes the connection before any statement. */
int bs__tls_check(bs_tls_state_t *out, MYSQL *m, const bs_tls_conf_t *t, char *err, size_t size);
/* After mysql_real_connect failed: MySQL's message and number into buf,
 * saying what failed when TLS is why (untrusted certificate, name mismatch,
 * server without TLS, a plain connection refused). BS_ECONFIG for those
 * (no retry cures them), else 0. host: the host connected to. */
int bs__tls_connect_error(char *buf, size_t size, MYSQL *m, const bs_tls_conf_t *t, const char *host);

#endif

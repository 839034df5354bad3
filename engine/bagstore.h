/*
 * bagstore.h - the one public header of libbagstore.
 *
 * libbagstore stores schemaless entities (property bags) on sharded
 * MySQL/MariaDB, in the manner of FriendFeed's 2009 design: a body is a
 * zlib-compressed MessagePack map keyed by a 16-byte id, and each secondary
 * index is a table of its own, sharded by one of its properties.
 *
 * Conventions (after libgit2):
 *  - Every public name starts with bs_ / BS_.
 *  - A function that can fail returns int: 0 on success, a negative BS_E*
 *    code otherwise. The message is in a per-thread slot: bs_last_error().
 *  - Results come back through out-parameters placed first. A `T **out`
 *    gives the caller ownership: free it with the type's own _free function.
 *    A returned pointer (`const T *`) is borrowed from its owner.
 *  - A bs_store_t is used by one thread at a time. It fans out to shards on
 *    threads of its own, internally.
 */
#ifndef BAGSTORE_H
#define BAGSTORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ errors */

enum {
	BS_OK = 0,
	BS_ERROR = -1,        /* anything not listed below */
	BS_ENOTFOUND = -2,    /* entity, index, job or shard not found */
	BS_EUNREACHABLE = -3, /* a shard could not be reached or timed out */
	BS_ECONFLICT = -4,    /* changed since read, already exists, wrong state */
	BS_EINVAL = -5,       /* bad input from the caller: ids, JSON, arguments */
	BS_ECONFIG = -6,      /* configuration file, or a shard list the shards disagree with */
	BS_ESQL = -7,         /* the server answered with an error */
	BS_ENOMEM = -8,
	BS_ECORRUPT = -9,   /* a stored body does not decode */
	BS_EREADONLY = -10, /* refused: read-only mode */
};

/* The last error's message on this thread, never NULL ("" when none). */
const char *bs_last_error(void);
/* The last error's code on this thread (BS_OK when none). */
int bs_last_error_code(void);
/* Set the calling thread's error; returns code, for `return bs_error(...)`. */
int bs_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bs_error_clear(void);
/* A short name for a code: "not found", "unreachable", ... */
const char *bs_strerror(int code);

/* ------------------------------------------------------------------ values */

typedef enum { BS_NIL, BS_BOOL, BS_INT, BS_UINT, BS_FLOAT, BS_STR, BS_BIN, BS_ARRAY, BS_MAP } bs_type_t;

typedef struct bs_value bs_value_t;
typedef struct bs_pair bs_pair_t;

/*
 * A decoded bag or any value inside one. BS_UINT only holds integers above
 * INT64_MAX; every other integer is BS_INT. Strings and binaries are owned,
 * NUL-terminated for convenience (len excludes the NUL). A binary carries
 * its BSON subtype (`sub`: 0 generic, as bs_value_bin makes it; Extended
 * JSON's "subType"), kept by every codec; a string's is 0. Map keys are
 * strings; key order is kept as written.
 */
struct bs_value {
	bs_type_t type;
	union {
		bool b;
		int64_t i;
		uint64_t u;
		double f;
		struct {
			char *ptr;
			size_t len;
			uint8_t sub;
		} s; /* STR, BIN (sub: BIN's subtype) */
		struct {
			bs_value_t *items;
			size_t len, cap;
		} a; /* ARRAY */
		struct {
			bs_pair_t *items;
			size_t len, cap;
		} m; /* MAP */
	} v;
};

struct bs_pair {
	char *key;
	size_t klen;
	bs_value_t val;
};

/* Constructors fill *out; the value owns copies of the bytes given. */
void bs_value_nil(bs_value_t *out);
void bs_value_bool(bs_value_t *out, bool b);
void bs_value_int(bs_value_t *out, int64_t i);
void bs_value_float(bs_value_t *out, double f);
int bs_value_str(bs_value_t *out, const char *s, size_t len);
int bs_value_bin(bs_value_t *out, const void *p, size_t len);
void bs_value_array(bs_value_t *out);
void bs_value_map(bs_value_t *out);
/* Append to an array / map; the container takes ownership of *item (which
 * is left as NIL). map_set replaces an existing key in place. */
int bs_array_push(bs_value_t *arr, bs_value_t *item);
int bs_map_set(bs_value_t *map, const char *key, size_t klen, bs_value_t *val);
/* Borrowed lookup of a top-level key; NULL when absent. */
const bs_value_t *bs_map_get(const bs_value_t *map, const char *key);
/* Deep copy and deep equality (floats compare bitwise, NaN equals NaN). */
int bs_value_copy(bs_value_t *out, const bs_value_t *src);
bool bs_value_equal(const bs_value_t *a, const bs_value_t *b);
/* Frees what the value owns and leaves it NIL. Accepts NULL. */
void bs_value_clear(bs_value_t *v);
/* A finite double as the shortest text that reads back as the same double
 * ("%.*g" with 15, 16 or 17 digits, the first that does; C locale): what
 * every JSON the program prints uses. Returns the digits used. */
int bs_float_text(char buf[40], double d);

/* ------------------------------------------------------------------ ids */

typedef struct {
	uint8_t b[16];
} bs_id_t;

/* A new random (version 4) id from libuuid. */
void bs_id_generate(bs_id_t *out);
/* Parse 32 hex digits or the dashed 8-4-4-4-12 form, either case. */
int bs_id_parse(bs_id_t *out, const char *text);
/* 32 lowercase hex digits + NUL into buf[33]. */
void bs_id_hex(char buf[33], const bs_id_t *id);
/* Dashed form + NUL into buf[37]. */
void bs_id_dashed(char buf[37], const bs_id_t *id);
/* The entity's id from a bag: key "id" holding 16 bytes (BS_BIN). */
int bs_bag_id(bs_id_t *out, const bs_value_t *bag);

/* ------------------------------------------------------------------ codec */

/* Limits for untrusted bodies. */
#define BS_BODY_MAX_INFLATED (16u << 20) /* bytes of MessagePack after inflate */
#define BS_BODY_MAX_DEPTH 32             /* nesting of arrays and maps */
#define BS_BODY_MAX_ITEMS \
	(1u << 20)                      /* values in one body, elements of
                                          * arrays and maps counted */
#define BS_BODY_MAX_DECODED (64u << 20) /* bytes a decoded body may hold */

typedef struct {
	uint8_t *ptr;
	size_t len, cap;
} bs_bytes_t;
void bs_bytes_free(bs_bytes_t *b); /* frees ptr, zeroes the struct */

/* MessagePack only (no zlib). */
int bs_msgpack_encode(bs_bytes_t *out, const bs_value_t *v);
int bs_msgpack_decode(bs_value_t *out, const uint8_t *p, size_t len);

/* A stored body: zlib(MessagePack map with a 16-byte "id"). encode checks
 * that bag is a map with a valid id; decode checks the same, plus the
 * limits above, and reports truncation/garbage as BS_ECORRUPT. */
int bs_body_encode(bs_bytes_t *out, const bs_value_t *bag);
int bs_body_decode(bs_value_t *out, const uint8_t *p, size_t len);

/* JSON (MongoDB Extended JSON for bytes: {"$uuid": "..."} for 16 bytes of
 * subtype 0, {"$binary": {"base64": "...", "subType": "05"}} otherwise).
 * flags: BS_JSON_PRETTY for indented output. Output is NUL-terminated. */
#define BS_JSON_PRETTY 1
int bs_json_encode(char **out, const bs_value_t *v, int flags);
/* Parse one JSON document. `where` names the input in messages. */
int bs_json_decode(bs_value_t *out, const char *text, size_t len, const char *where);

/* YAML: !uuid for 16 bytes, !!binary (base64) for other bytes, !binary/05
 * (a local tag naming the subtype in hex) for bytes of a subtype but 0. */
int bs_yaml_encode(char **out, const bs_value_t *v);
int bs_yaml_decode(bs_value_t *out, const char *text, size_t len, const char *where);

/* ------------------------------------------------------------------ indexes */

typedef enum { BS_COL_UUID, BS_COL_STRING, BS_COL_INT, BS_COL_FLOAT, BS_COL_BOOL, BS_COL_BINARY } bs_coltype_t;

#define BS_NAME_MAX 64 /* index and property names: [A-Za-z_][A-Za-z0-9_]* */
#define BS_INDEX_MAX_PROPS 8

typedef struct {
	char name[BS_NAME_MAX + 1];
	bs_coltype_t type;
	unsigned len; /* string(N): characters (default 255); binary(N): bytes */
} bs_prop_t;

typedef enum { BS_INDEX_BUILDING, BS_INDEX_READY, BS_INDEX_DISABLED } bs_index_state_t;

typedef struct {
	char name[BS_NAME_MAX + 1]; /* also the table's name */
	bs_prop_t props[BS_INDEX_MAX_PROPS];
	int nprops;
	int shard_on; /* which of props routes the row */
	bs_index_state_t state;
	int64_t created_us; /* unix microseconds, 0 when unknown */
	int64_t changed_us; /* last state change */
	/* The shards' catalogs disagree on this index (a create, promotion or
	 * drop was cut short); state is then the furthest transition's and
	 * divergence says each shard's ("s0 ready, s1 disabled"). The cleaner
	 * heals it; so does retrying the operation. */
	bool diverged;
	char divergence[160];
} bs_index_t;

/* Parse "user_id:uuid,title:string(80)" into def->props, and the shard_on
 * property name into def->shard_on. Names the offending part on error. */
int bs_index_parse(bs_index_t *def, const char *name, const char *on, const char *shard_on);
/* "user_id:uuid,title:string(80)" into buf; returns buf. */
char *bs_index_format_on(char *buf, size_t size, const bs_index_t *def);
const char *bs_coltype_name(bs_coltype_t t);
const char *bs_index_state_name(bs_index_state_t s);
/* The CREATE TABLE statement for def; caller frees. */
int bs_index_ddl(char **out, const bs_index_t *def);

/* ------------------------------------------------------------------ config */

/* TLS to a shard or replica, with the mysql client's --ssl-mode meanings:
 * disabled (no TLS), preferred (TLS when the server offers it, nothing
 * verified), required (TLS or no connection; nothing verified), verify_ca
 * (and the server's certificate chains to `ca`), verify_identity (and it
 * names the host connected to). UNSET: no `tls:` anywhere for it, so
 * Connector/C's defaults and the shard's option file (defaults_file: ssl-ca,
 * ssl-verify-server-cert=1...) decide, as before TLS settings existed. */
typedef enum {
	BS_TLS_MODE_UNSET,
	BS_TLS_DISABLED,
	BS_TLS_PREFERRED,
	BS_TLS_REQUIRED,
	BS_TLS_VERIFY_CA,
	BS_TLS_VERIFY_IDENTITY
} bs_tls_mode_t;
/* "disabled", ... "verify_identity"; "unset" for BS_TLS_MODE_UNSET. */
const char *bs_tls_mode_name(bs_tls_mode_t m);

/* A connection's `tls:` after inheritance (top level, then the shard's,
 * then the replica's mapping, key by key). Paths as written (relative ones
 * to the working directory, like defaults_file); checked readable when the
 * configuration is loaded. */
typedef struct {
	bs_tls_mode_t mode;
	char *ca;         /* PEM CA bundle: verify_ca and verify_identity only */
	char *cert, *key; /* client certificate and its key (both or neither) */
	char *cipher;     /* OpenSSL cipher list (TLS 1.2 and below) */
	char *versions;   /* "TLSv1.2,TLSv1.3": the protocol versions allowed */
} bs_tls_conf_t;

typedef struct {
	char *host;
	unsigned port;
	char *socket;
	char *user;
	char *password_env; /* name of the variable; the password is never stored here */
	bs_tls_conf_t tls;  /* inherited from its shard's, key by key */
} bs_replica_conf_t;

typedef struct {
	char *name;
	char *host;    /* NULL when socket or defaults_file is used */
	unsigned port; /* 0: library default */
	char *socket;
	char *database;
	char *user;
	char *password_env;
	char *defaults_file;
	char *option_group;
	bs_replica_conf_t *replicas;
	int nreplicas;
	int line;          /* where the shard was declared, for messages */
	bs_tls_conf_t tls; /* the top level's `tls:`, then the shard's, key by key */
	bool drain;        /* drain: true: `reshard plan` moves all its buckets off */
} bs_shard_conf_t;

typedef struct {
	double chunk_time;      /* target seconds per backfill chunk (0.5) */
	unsigned max_load;      /* Threads_running: pause above (25) */
	unsigned critical_load; /* Threads_running: stop the job above (50) */
	double max_replica_lag; /* seconds (1.0) */
	double repair_overlap;  /* seconds subtracted from the watermark (1.0) */
	double repair_interval; /* seconds between repair passes (0.2) */
	double sleep_coef;      /* after each backfill chunk, sleep this many times
	                         * its duration (0: full speed), as pt-archiver's
	                         * --sleep-coef: trades backfill time for writers' latency */
	double max_fence;       /* seconds a move's cut-over may hold writers of its
	                         * buckets (1.0); longer, it rolls back and tries again */
	/* the throttle (engine/throttle.c, doc/DESIGN.md "The throttle") */
	unsigned jobs;               /* backfill jobs working at once per process; 0: auto
	                         * (one per shard) */
	unsigned writers;            /* statements at once per target shard per process, the
	                         * throttle's most; 0: auto (the shard server's CPUs,
	                         * @@thread_pool_size, else 2) */
	unsigned max_history_length; /* InnoDB history list length: wait above (1000000) */
	double max_write_latency;    /* seconds: the heartbeat write (the probe) slower
	                              * than this makes jobs wait; 0: write_latency_factor
	                              * times its idle baseline (0) */
	double write_latency_factor; /* (2.0); 0: the probe is no signal */
	bool write_latency_tail;     /* the probe's signal: false (median), its last 5
	                              * latencies' median; true (tail), the second
	                              * highest of its last 20 (2 s): what writers'
	                              * slowest puts feel, at the cost of slower jobs */
	double max_signal_age;       /* seconds a signal may go unread before jobs wait (3) */
} bs_cleaner_conf_t;

/* What a cleaner hook runs on (cleaner.hooks.on_<name>), bs_hook_name(). */
typedef enum {
	BS_HOOK_BACKFILL_STARTED,
	BS_HOOK_BACKFILL_DONE,
	BS_HOOK_BACKFILL_FAILED,
	BS_HOOK_THROTTLED,
	BS_HOOK_INDEX_READY,
	BS_HOOK_SHARD_LOST,
	BS_HOOK_SHARD_BACK,
	BS_HOOK_COUNT
} bs_hook_t;
/* "backfill_started", "backfill_done", ...: the name after "on_". */
const char *bs_hook_name(bs_hook_t h);

/* Whether addr is an address to listen on as cleaner.metrics and the
 * cleaner's --metrics take it: HOST:PORT, an IPv6 host in brackets, a port
 * from 1 to 65535 (getaddrinfo would take 92036 as 26500). 0, or BS_EINVAL
 * with why in why[size] ("expected HOST:PORT (...), got \"ADDR\""), the
 * error slot left alone: the caller says where addr was given. */
int bs_listen_addr_check(char *why, size_t size, const char *addr);

/* The cleaner daemon's own settings (the program's, not the engine's):
 * keys of the cleaner: section too. */
typedef struct {
	char *metrics;            /* cleaner.metrics: HOST:PORT to serve /metrics on; NULL none */
	char *metrics_web_config; /* cleaner.metrics_web_config: the exporter web
	                         * configuration (TLS, basic auth) of /metrics; NULL none */
	bool metrics_insecure;    /* cleaner.metrics_insecure: serve /metrics on an address
	                         * that is not loopback without one (false) */
	char metrics_at[320], metrics_web_config_at[320]; /* "FILE:LINE:COL: KEY" of
	                         * those keys, for messages ("" when absent) */
	char *log_format;                                 /* cleaner.log_format: "text" or "json"; NULL: text */
	double log_every;                                 /* cleaner.log_every: seconds between a job's progress lines
	                         * and between repair summaries (5) */
	char *hook_on_event;                              /* cleaner.hooks.on_event: a command for every hook event */
	char *hooks[BS_HOOK_COUNT];                       /* cleaner.hooks.on_<name>: one event's command */
	double hook_timeout;                              /* cleaner.hooks.timeout: seconds a hook may run (10) */
} bs_daemon_conf_t;

typedef struct {
	char *path;
	bs_shard_conf_t *shards;
	int nshards;
	double connect_timeout, read_timeout, write_timeout; /* seconds: 2, 10, 10 */
	double catalog_ttl;                                  /* seconds writers cache the index catalog (2) */
	bs_index_t *indexes;                                 /* declared indexes, created by init */
	int nindexes;
	bs_cleaner_conf_t cleaner;
	bool read_only;
	bs_tls_conf_t tls; /* the top-level `tls:` every shard inherits */
	bs_daemon_conf_t daemon;
	unsigned buckets; /* buckets: B for the store's first init (0: the
	                         * smallest N*2^k >= 4096); the map keeps it after */
} bs_config_t;

/* Load a configuration. path NULL: $BAGSTORE_CONFIG, else ./bagstore.yaml.
 * Errors read "FILE:LINE:COL: expected ..., got ...". */
int bs_config_load(bs_config_t **out, const char *path);
/* Parse YAML text (for tests); `path` only names it in messages. */
int bs_config_parse(bs_config_t **out, const char *text, size_t len, const char *path);
void bs_config_free(bs_config_t *cfg);
/* Hex fingerprint of the ordered shard list (names and count), buf[17]. */
void bs_config_fingerprint(char buf[17], const bs_config_t *cfg);
/* The same shards, in the same order, at the same addresses (names, hosts,
 * ports, sockets, databases, option files)? What a reload must check
 * against the shards before it uses a new list (bs_shard_list_check). */
bool bs_config_same_shards(const bs_config_t *a, const bs_config_t *b);

/* ------------------------------------------------------------------ routing */

/* Bucket of an entity: id as a big-endian 128-bit integer, mod n. The
 * engine passes the bucket count (the bucket map's `buckets`), and the map
 * gives the bucket's shard. */
int bs_route_id(const bs_id_t *id, int n);
/* Bucket of an index row by its shard_on value (already checked against
 * its type): 16-byte values and ints mod n, strings and other bytes crc32
 * mod n (n as for bs_route_id). Returns -1 when the value cannot route (wrong
 * type). */
int bs_route_value(const bs_value_t *v, const bs_prop_t *prop, int n);
/* Does v fit prop's column (type, length, NaN, range)? */
bool bs_value_fits(const bs_value_t *v, const bs_prop_t *prop);
/* Read a command-line value per the prop's type ("f48b...", "42", "true"). */
int bs_value_from_text(bs_value_t *out, const bs_prop_t *prop, const char *text);

/* ------------------------------------------------------------------ store */

typedef struct bs_store bs_store_t;

/* Open a store over cfg (borrowed; must outlive the store). No shard is
 * contacted until needed. */
int bs_store_open(bs_store_t **out, const bs_config_t *cfg);
void bs_store_free(bs_store_t *st);
const bs_config_t *bs_store_config(const bs_store_t *st);
int bs_store_nshards(const bs_store_t *st);

/* The statement trace: every statement a store sends to a shard, told to a
 * callback once its answer is read (or it failed). One hook, in
 * engine/shard.c and engine/fanout.c where statements are sent: when no
 * trace is set it costs a test of one pointer per statement. Statements to
 * a shard's replicas (the lag read) and the connection's own setup are not
 * traced. */
typedef struct {
	const char *shard; /* the shard's name */
	int shard_index;   /* its place in the configuration */
	/* the statement as sent, with every value (a quoted string or an X'..'
	 * literal) longer than 64 bytes shortened to its first 32 and its size,
	 * the whole cut after 4,000 bytes; a statement that could carry a
	 * password (CREATE USER, ALTER USER, SET PASSWORD, GRANT, CHANGE
	 * MASTER, anything with IDENTIFIED or PASSWORD) is masked after its
	 * first words */
	const char *sql;
	int64_t at_us;     /* when it was sent, unix microseconds */
	double seconds;    /* from sending to its last result read */
	int64_t rows;      /* rows of its result sets, else rows affected
	                         * (summed over the statements of a multi-statement) */
	bool async;        /* sent without waiting (the write path's last
	                         * step): seconds runs until its answer was read,
	                         * at the connection's next use */
	unsigned err;      /* MySQL's error number, 0 when it succeeded */
	const char *error; /* MySQL's message, "" when it succeeded */
} bs_trace_t;
/* Called from the thread that sent the statement: a store's fan-out runs
 * several at once (a thread per shard), so fn must be thread-safe. t and
 * everything it points to are borrowed for the call. fn must not use the
 * store. */
typedef void (*bs_trace_fn)(void *arg, const bs_trace_t *t);
/* The process's trace: every store opened after this call (those the
 * engine opens for itself too: backfill runners, the throttle's samplers)
 * starts with it. fn NULL: none. Call it before opening stores. */
void bs_trace_set(bs_trace_fn fn, void *arg);
/* This store's trace (fn NULL: none), in place of the process's. Set it
 * while no call runs on the store. */
void bs_store_trace(bs_store_t *st, bs_trace_fn fn, void *arg);
/* The trace st has now (*fn NULL: none): to put it back after a change. */
void bs_store_trace_get(const bs_store_t *st, bs_trace_fn *fn, void **arg);

/* Create the per-shard tables on every shard, idempotently, record the
 * shard list's fingerprint, and create the configuration's indexes. */
int bs_init(bs_store_t *st);
/* After bs_init: how many shards it found initialised by an older
 * bagstore (a schema version below this one's), their names,
 * comma-separated, into names, and in *from the oldest version among
 * them (0: one recorded none).
 * Their tables are brought up to date, but the accounts' grants are the
 * operator's: an older bagstore's app role lacks the tables added since
 * (`bagstore grants --role app` prints what it needs now). */
int bs_init_upgraded(const bs_store_t *st, char *names, size_t size, int *from);
/* After bs_init: on how many shards it could not make the write
 * procedures (the account lacks CREATE ROUTINE: an older bagstore's
 * grants), their names, comma-separated, into names. init succeeds all
 * the same; where the procedures are missing, a single write with an
 * index sends its intent and its entity as two statements. */
int bs_init_noproc(const bs_store_t *st, char *names, size_t size);

/* Entities. put: insert or replace; writes the id to *id_out if non-NULL. */
int bs_put(bs_store_t *st, const bs_value_t *bag, bs_id_t *id_out);
/* get: BS_ENOTFOUND when absent. updated_us and shard may be NULL; shard
 * gets the shard that holds the entity (its bucket's owner), also when its
 * body does not decode (BS_ECORRUPT). */
int bs_get(bs_value_t *out, bs_store_t *st, const bs_id_t *id, int64_t *updated_us, int *shard);
/* get, returning the raw stored body too (for the console). */
int bs_get_raw(bs_bytes_t *body, bs_store_t *st, const bs_id_t *id, int64_t *updated_us);
int bs_delete(bs_store_t *st, const bs_id_t *id);
/* delete only if the entity's `updated` still equals expect_updated_us
 * (not 0). BS_ECONFLICT otherwise (changed, or already gone). */
int bs_delete_if(bs_store_t *st, const bs_id_t *id, int64_t expect_updated_us);
/* put only if the entity's `updated` still equals expect_updated_us
 * (0: only if absent). BS_ECONFLICT otherwise. */
int bs_put_if(bs_store_t *st, const bs_value_t *bag, int64_t expect_updated_us);
/* Many puts at once (bulk.c): bags[n]; ids[n] (caller's) gets each one's id.
 * The entities of one shard are written in one transaction, every shard at
 * once, their index rows batched per target shard. written[n] (may be
 * NULL) tells which are stored. A bag refused on input (no id, cannot be
 * encoded) stops the call there: the bags before it are written, it and
 * the rest are not (BS_EINVAL, "entity K of the batch: ..."). A shard that
 * fails writes none of its entities; the other shards' are written. */
int bs_put_many(bs_store_t *st, const bs_value_t *bags, size_t n, bs_id_t *ids, bool *written);
/* bs_put_many in two steps, so that a loader can encode its next batch
 * while one is written (the client's CPU and the servers' work overlap):
 * bs_encode_many encodes bags[n] (MessagePack, deflate) and fills ids[n]
 * (the caller's); it touches no store, and may run on any thread. It
 * fails (BS_ENOMEM, *out NULL) only when the batch itself cannot be
 * held: a bag refused on input (no id, cannot be encoded, memory for its
 * body) is bs_put_encoded's answer, as bs_put_many's, after it has
 * written the bags before it. bags and ids must stay until the batch is
 * written; bs_put_encoded refuses a NULL batch (BS_EINVAL). */
typedef struct bs_encoded bs_encoded_t;
int bs_encode_many(bs_encoded_t **out, const bs_value_t *bags, size_t n, bs_id_t *ids);
int bs_put_encoded(bs_store_t *st, const bs_encoded_t *enc, bool *written);
void bs_encoded_free(bs_encoded_t *enc);

/* Index catalog. */
typedef struct {
	bs_index_t *items;
	int len;
	int unreachable;             /* shards that did not answer: the catalog is the others' */
	char unreachable_first[256]; /* the first of those shards' messages */
} bs_index_list_t;
void bs_index_list_free(bs_index_list_t *l);
/* Fresh read of the catalog (not the writers' cache), from every shard
 * that answers at once, merged (see bs_index_t.diverged); the shards that
 * do not answer are counted in unreachable, unless none does
 * (BS_EUNREACHABLE). */
int bs_index_list(bs_index_list_t *out, bs_store_t *st);
int bs_index_get(bs_index_t *out, bs_store_t *st, const char *name);
/* Create tables on every shard and the catalog row. The new index starts
 * building, or ready when the store holds no entity yet. */
int bs_index_create(bs_store_t *st, const bs_index_t *def);
/* Disable the index, wait for writers' caches to expire, drop the tables
 * and the catalog row. */
int bs_index_drop(bs_store_t *st, const char *name);
/* Rows of an index table, per shard (counts[nshards], caller allocates);
 * exact when exact, else InnoDB's estimate. */
int bs_index_rows(int64_t *counts, bs_store_t *st, const char *name, bool exact);
/* Exact rows per shard (counts[nshards], caller allocates) of the entities
 * table (index NULL) or of an index's table, counted by key in chunks of
 * 100,000 rows, every shard at once (engine/count.c). stop (may be NULL),
 * once set, ends it within a chunk with BS_ERROR "count cancelled". A shard
 * that fails keeps -1; the first failure is returned, the others' counts
 * stand. */
int bs_count_exact(int64_t *counts, bs_store_t *st, const char *index, atomic_int *stop);

/* Queries: equality on some of the index's properties. */
typedef struct {
	char prop[BS_NAME_MAX + 1];
	bs_value_t value;
} bs_cond_t;

typedef struct {
	bs_id_t id;
	int64_t updated_us;
	int shard;
	bs_value_t bag;
} bs_entity_t;

typedef struct {
	bs_entity_t *items;
	size_t len, cap;
	size_t candidates;       /* index rows read */
	size_t dropped;          /* rows whose entity no longer matched or was gone */
	size_t corrupt;          /* entities skipped because their body is corrupt
	                    * (does not decode, or holds another entity's id) */
	char corrupt_first[320]; /* the first of those: shard, id and why */
	size_t matched;          /* bs_query: entities that matched, before the limit cut
	                    * (len < matched: the newest len of them are here);
	                    * 0 when not known: a limited read stopped once it had
	                    * enough (candidates, the index rows read, bounds it) */
} bs_result_t;
void bs_result_free(bs_result_t *r);

/* Entities matching every condition through a ready index, newest first,
 * at most limit (0: no limit). */
int bs_query(bs_result_t *out, bs_store_t *st, const char *index, const bs_cond_t *conds, int nconds, size_t limit);

/* Query text, read by one set of rules for every front end (the command
 * line's `query INDEX PROP=VALUE...`, the console's `/PROP=VALUE`). */
typedef struct {
	char index[BS_NAME_MAX + 1]; /* the index the conditions go through */
	bs_cond_t conds[BS_INDEX_MAX_PROPS];
	int nconds;
} bs_query_spec_t;
/* Frees the conditions' values; the spec is empty afterwards. */
void bs_query_spec_clear(bs_query_spec_t *q);
/* Conditions "PROP=VALUE" (texts[ntexts], one condition each) against the
 * catalog l. index names the index; NULL picks the ready index that holds
 * every property named (the one with the fewest properties, then the first
 * by name). A property the index does not hold, a property given twice, a
 * value that does not read as its type, an unknown index and (with index
 * NULL) a property no ready index holds are BS_EINVAL or BS_ENOTFOUND, the
 * message naming the indexes that exist. VALUE is read as
 * bs_value_from_text does. */
int bs_query_parse(bs_query_spec_t *out, const bs_index_list_t *l, const char *index, const char *const *texts,
                   int ntexts);
/* The console's form in one line: "[INDEX:] PROP=VALUE [PROP=VALUE...]",
 * conditions separated by blanks or commas; a VALUE may be quoted, "a b"
 * or 'a b' (with \" or \' and \\ inside), to hold blanks, commas or
 * quotes (a single quote opens only where a word or a value starts). A
 * word without '=' after the first is refused saying how to quote. */
int bs_query_parse_text(bs_query_spec_t *out, const bs_index_list_t *l, const char *text);

/* ------------------------------------------------------------------ explain */

/* What a query does on one shard (bs_explain). */
typedef struct {
	char name[BS_NAME_MAX + 1]; /* the shard */
	bool step1;                 /* step 1 reads this shard */
	/* MariaDB's own EXPLAIN of step 1 here, for the index table: an
	 * estimate (~) */
	int64_t est_rows;              /* its rows column; -1 unknown (see est_error) */
	char est_type[16];             /* its type: ref, range, index, ALL ... */
	char est_key[BS_NAME_MAX + 1]; /* the key it would use, "" none */
	char est_error[256];           /* why unknown: the shard's message */
	/* with BS_EXPLAIN_RUN: what the query really did here, per step (0: its
	 * catalog and map reads, 1: the index rows, 2: the entities) */
	int stmts[3];
	double seconds[3];   /* summed over the step's statements here */
	int64_t index_rows;  /* step 1: index rows read */
	int64_t entity_rows; /* step 2: entity rows read */
	int64_t matched;     /* results whose entity is on this shard */
} bs_explain_shard_t;

typedef struct {
	int nconds;
	char props[BS_INDEX_MAX_PROPS][BS_NAME_MAX + 1]; /* the conditions' properties, as given */
	/* the index: the ready one that answers, or none */
	char index[BS_NAME_MAX + 1]; /* "" when none can */
	char index_on[256];          /* its properties, "user_id:uuid,n:int" */
	char shard_on[BS_NAME_MAX + 1];
	bool named;       /* named by the caller, not picked */
	int ready;        /* ready indexes holding every property named */
	char why[512];    /* why this index (the rule that picked it), or
	                              * why none can answer */
	char others[512]; /* the other indexes holding every property, with
	                              * their state ("" when none) */
	/* none can: the census's suggestion of one, from a sample */
	char suggest_on[256];                   /* "title:string(64),n:int"; "" when the sample
	                              * suggests no type (suggest_note says why) */
	char suggest_shard_on[BS_NAME_MAX + 1]; /* the property with the most distinct values */
	char suggest_note[256];
	int64_t entities_est; /* ~ entities a backfill would read */
	double backfill_s;    /* ~ its time from the last backfills' measured rate
	                              * on these shards; -1 when no rate is known */
	double backfill_rate; /* rows/s per shard assumed (the slowest shard's
	                              * measured rate); -1 none */
	int rate_shards;      /* shards with a measured rate */
	/* routing (an index answers) */
	int buckets;                /* B */
	int route_bucket;           /* the shard_on value's bucket; -1: not fixed */
	int route_shard;            /* the one shard step 1 reads; -1: every shard */
	char *step1_sql;            /* step 1's statement, as sent (owned) */
	char *step2_sql;            /* step 2's, its ids elided (owned) */
	bs_explain_shard_t *shards; /* every configured shard (owned) */
	int nshards;
	/* with BS_EXPLAIN_RUN: the query run (bs_query, no limit) */
	bool ran;
	double run_s;
	size_t candidates, matched, dropped, corrupt; /* as bs_result_t has them */
} bs_explain_t;

#define BS_EXPLAIN_RUN 1 /* run the query too, counting and timing each step */
/* How a query by conditions "PROP=VALUE" (texts[ntexts]) would be answered
 * (engine/explain.c), with bs_query_parse's rules and bs_query's plan:
 * the ready index (index names it; NULL picks it as the query does) or
 * why none can, with the census's suggestion (a sample of every shard),
 * the routing, MariaDB's EXPLAIN of step 1 on each shard it reads (a shard
 * that does not answer keeps its message in est_error), both steps'
 * statements; with BS_EXPLAIN_RUN the query itself, counted and timed per
 * shard and step through the store's trace (the caller's trace, if any,
 * is still told). No ready index is not an error: out->index is "".
 * Free with bs_explain_free. */
int bs_explain(bs_explain_t *out, bs_store_t *st, const char *index, const char *const *texts, int ntexts, int flags);
/* The same for the console's one-line form "[INDEX:] PROP=VALUE ...". */
int bs_explain_text(bs_explain_t *out, bs_store_t *st, const char *text, int flags);
void bs_explain_free(bs_explain_t *e);

/* Fault points (SQLite's sqlite3FaultSim), for tests: BAGSTORE_FAULT=NAME
 * in the environment, or several NAMEs separated by commas, makes
 * bs_fault(BS_FAULT_X) true at the spot each names. This is the one list of
 * points: X(ID, NAME, what happens there). A name that is not in it is
 * refused: bs_store_open fails with BS_EINVAL naming it, so a test with a
 * typo fails instead of testing nothing. */
#define BS_FAULTS(X) \
	X(AFTER_ENTITY_WRITE, "after_entity_write", \
	  "a put exits the process (75) after the entity is written, before any index row") \
	X(PAUSE_BEFORE_INDEX_ROWS, "pause_before_index_rows", \
	  "a put stops the process (SIGSTOP) after the entity is written, before its index rows") \
	X(SLOW_CHUNK, "slow_chunk", \
	  "backfills take the smallest chunks and sleep 50 ms each, so a test can interrupt one midway") \
	X(MOVE_KILL_MARKED, "move_kill_marked", \
	  "a move's runner exits (75) right after its buckets are marked (leaving, incoming), before the copy") \
	X(MOVE_KILL_COPY, "move_kill_copy", "a move's runner exits (75) after its first copy chunk") \
	X(MOVE_KILL_CATCHUP, "move_kill_catchup", "... after its first catch-up round") \
	X(MOVE_KILL_CUTOVER, "move_kill_cutover", "... inside the cut-over fence, before the flip commits") \
	X(MOVE_KILL_FLIPPED, "move_kill_flipped", "... right after the flip commits, before the roll-forward") \
	X(MOVE_KILL_UNDO, "move_kill_undo", \
	  "... undoing a cancelled move, its source's buckets owned again, the target's copies not yet deleted") \
	X(SLOW_MOVE, "slow_move", "moves take the smallest chunks and sleep 50 ms each") \
	X(SLOW_PROMOTE, "slow_promote", \
	  "a promotion sleeps 6 s once its jobs are done (as long as a big index's repair rounds take)") \
	X(PAUSE_REPAIR_BATCH, "pause_repair_batch", \
	  "the first repair pass of more than one batch stops (SIGSTOP) after its first batch, once") \
	X(PAUSE_DRIFT_FIX, "pause_drift_fix", \
	  "every fix of index rows (repair, verify --repair, a move's repair) stops (SIGSTOP) before " \
	  "it reads the rows, its bodies already read") \
	X(DRIFT_KILL_AFTER_FIX, "drift_kill_after_fix", \
	  "the process exits (75) right after the first check of index rows that fixed some commits its " \
	  "fix, before the read that settles it") \
	X(DRIFT_FAIL_AFTER_FIX, "drift_fail_after_fix", \
	  "the first check of index rows that fixed some fails right after its fix commits (as a " \
	  "deadlock on another shard, or buckets that kept moving, would), once") \
	X(PAUSE_CONDITIONAL_WRITE, "pause_conditional_write", \
	  "a conditional write (bs_put_if, bs_delete_if) stops (SIGSTOP) between its locking read and " \
	  "its write, once") \
	X(FIXED_TOKEN, "fixed_token", \
	  "a single put or delete takes the token bagstore.w.fault, not a random one, so a test can hold " \
	  "its named lock") \
	X(BULK_NO_FK, "bulk_no_fk", \
	  "a bulk put with no index skips its fenced INSERT (the foreign-key form): the fence's " \
	  "two-trip form comes first, as after a refusal") \
	X(PAUSE_BETWEEN_BULK_TRIPS, "pause_between_bulk_trips", \
	  "a bulk put with no index stops (SIGSTOP) between its entities' two round trips (the fence " \
	  "taken, nothing written), once") \
	X(BULK_NEW_SESSION, "bulk_new_session", \
	  "a bulk put with no index: its first shard loses its connection between its entities' two " \
	  "round trips, once; the second goes on a new session") \
	X(BULK_LOCK_LOST, "bulk_lock_lost", \
	  "a bulk put with an index: the first shard holding its batch's lock loses its connection after " \
	  "its entities commit, before their index rows are sent, once") \
	X(ROWS_AS_TEXT, "rows_as_text", \
	  "many-row INSERTs (a backfill's index rows, a move's copies) go as multi-row text statements, " \
	  "as to a server without bulk execution (MySQL); read when a store is opened")

typedef enum {
#define BS_FAULT_ENUM_(id, name, doc) BS_FAULT_##id,
	BS_FAULTS(BS_FAULT_ENUM_)
#undef BS_FAULT_ENUM_
		BS_FAULT_COUNT
} bs_fault_t;

/* Is the point named in BAGSTORE_FAULT (read at each call)? */
bool bs_fault(bs_fault_t point);
/* The point's NAME ("slow_chunk"). */
const char *bs_fault_name(bs_fault_t point);
/* 0, or BS_EINVAL naming the first name in BAGSTORE_FAULT that is no point
 * of BS_FAULTS (bs_store_open calls it). */
int bs_fault_check(void);

/* ------------------------------------------------------------------ shards */

typedef enum { BS_SHARD_UP, BS_SHARD_SLOW, BS_SHARD_DOWN } bs_shard_state_t;

/* What a connection's TLS achieved, weakest first: none (not encrypted),
 * encrypted (nothing verified), ca (the certificate chains to a trusted
 * CA; its names not checked), identity (and it names the host). */
typedef enum { BS_TLS_NONE, BS_TLS_ENCRYPTED, BS_TLS_CA, BS_TLS_IDENTITY } bs_tls_level_t;
/* "none", "encrypted", "ca", "identity". */
const char *bs_tls_level_name(bs_tls_level_t l);
typedef struct {
	bs_tls_level_t level;
	char version[16]; /* "TLSv1.3"; "" when not encrypted */
	char cipher[64];  /* "TLS_AES_256_GCM_SHA384"; "" when not encrypted */
} bs_tls_state_t;
/* "up", "slow", "unreachable": the one spelling every front end shows. */
const char *bs_shard_state_name(bs_shard_state_t s);

typedef struct {
	char name[BS_NAME_MAX + 1];
	char address[128]; /* host:port or socket path */
	bs_shard_state_t state;
	char error[256]; /* MySQL's message when down */
	char version[64];
	double rtt_ms;
	int64_t entities_est; /* InnoDB's estimate */
	int64_t data_bytes;   /* data + index length of bagstore's tables */
	int64_t threads_running;
	double replica_lag; /* seconds behind, the largest over the shard's replicas;
	                             * -1 none configured, -2 unknown (see error) */
	int fingerprint_ok; /* 1 agrees, 0 disagrees, -1 uninitialised */
	int map_lacks;      /* when it disagrees only because the store's bucket map
	                             * does not name configured shard map_lacks yet (a
	                             * shard appended to the list: `init` adds it), that
	                             * shard's index; -1 else (another shard list) */
	/* TLS (issue 14): the store's connection to the shard, and the weakest
	 * of its replicas' (level BS_TLS_NONE with nreplica_tls 0: none) */
	bs_tls_state_t tls;
	bs_tls_state_t replica_tls;
	int nreplica_tls;             /* replicas whose connection was made */
	bool tls_plaintext_mixed;     /* up without TLS while another shard is encrypted */
	bool tls_plaintext_preferred; /* up without TLS though tls.mode is preferred: the
	                             * server offered none (both marked PLAINTEXT) */
	bs_tls_mode_t tls_mode;       /* the configured mode */
	/* load (the server's own counters, cumulative since it started: a rate
	 * is the difference between two reads over load_at_us's difference;
	 * -1 when the server does not say) */
	int64_t questions;      /* Questions: statements clients sent */
	int64_t rows_written;   /* rows inserted, updated and deleted: Innodb_rows_*
	                             * where the server has them, else Handler_write,
	                             * Handler_update, Handler_delete */
	int64_t connections;    /* Threads_connected (now, not cumulative) */
	int64_t history_length; /* InnoDB history list length (now) */
	int64_t uptime_s;       /* Uptime: a smaller value than last time is a restart */
	int64_t load_at_us;     /* the shard's clock when the counters were read */
} bs_shard_status_t;

/* Status of every shard (out[nshards], caller allocates). Contacts shards in
 * parallel; an unreachable shard is reported, not an error. */
int bs_shard_status(bs_shard_status_t *out, bs_store_t *st);
/* A shard list about to be used in place of another (a reload: the
 * daemon's SIGHUP, the console's), checked against the shards as a start
 * would check it (each shard's identity: its store, its name, the map's
 * members), through a store of its own with timeouts capped at cap_s.
 * BS_ECONFIG with the first disagreement, or a shard not initialised, in
 * the error slot: the list must not be used. 0 otherwise; the shards that
 * did not answer (not checked) are named in unchecked ("" when none). */
int bs_shard_list_check(const bs_config_t *cfg, double cap_s, char *unchecked, size_t un);

/* ------------------------------------------------------------------ browsing */

/* Newest-first paging over entities, one shard or all merged, by key
 * (updated, added_id) per shard: never COUNT(*) or OFFSET. */
typedef struct bs_scan bs_scan_t;
/* shard: -1 for all shards merged. */
int bs_scan_open(bs_scan_t **out, bs_store_t *st, int shard);
/* The next page of at most limit entities, newest first. An empty page
 * means the end. */
int bs_scan_next(bs_result_t *out, bs_store_t *st, bs_scan_t *sc, size_t limit);
/* A copy of the position (to page back, keep a stack of clones). */
int bs_scan_clone(bs_scan_t **out, const bs_scan_t *sc);
void bs_scan_free(bs_scan_t *sc);

/* Every entity of the store, in pages (export.c): what `bagstore export`
 * streams. Each shard is read by keyset paging (never OFFSET), the shards
 * that need a page at once. */
typedef enum {
	BS_EXPORT_NEWEST, /* newest first across shards, by (updated, id) */
	BS_EXPORT_ADDED   /* shard after shard, each in insertion order (added_id) */
} bs_export_order_t;
typedef struct {
	int shard;        /* -1: every shard */
	int64_t since_us; /* only entities updated at or after (0: all) */
	bs_export_order_t order;
} bs_export_opts_t;
typedef struct bs_export bs_export_t;
/* Each shard is read in one snapshot (a read-only transaction on the
 * store's connection to it, opened for every shard with the first page
 * read, until the shard is read to the end or the export is freed): an
 * entity written meanwhile is exported once, as it was when the export
 * began. While the export is open its store is the export's: use another
 * for anything else. Free the export before its store. */
int bs_export_open(bs_export_t **out, bs_store_t *st, const bs_export_opts_t *opts);
/* The next entities, at most limit (0: a page), in the promised order; an
 * empty result means the end. A corrupt body is skipped, counted in
 * out->corrupt and the first named. */
int bs_export_next(bs_result_t *out, bs_store_t *st, bs_export_t *ex, size_t limit);
void bs_export_free(bs_export_t *ex);

/* An entity's rows in every maintained index, as they are on every shard
 * beside the row it should have. */
typedef struct {
	char index[BS_NAME_MAX + 1];
	int expect_shard; /* -1: it should have no row */
	bool misfit;      /* a value does not fit the index's type */
	char expect[256]; /* the expected values, as text ("user_id=f48b..."), "" when none */
	int nfound;
	struct {
		int shard;
		char values[256];
		bool right; /* on the right shard with the right values */
	} found[16];
} bs_entity_rows_t;
/* *out is an array of *n items, one per index; free() it. */
int bs_entity_index_rows(bs_entity_rows_t **out, int *n, bs_store_t *st, const bs_value_t *bag);

/* ------------------------------------------------------------------ grants */

/* The MySQL accounts bagstore's parts run as, each with what it needs:
 * app (reads; writes entities, index rows, intents, move-log and audit
 * rows, per table), cleaner (and its bookkeeping tables, index
 * tables made and dropped, init, replicas' lag), console (an operator: the
 * cleaner's and entity edits), readonly (reads; every change refused by the
 * server). */
typedef enum { BS_ROLE_APP, BS_ROLE_CLEANER, BS_ROLE_CONSOLE, BS_ROLE_READONLY } bs_role_t;
const char *bs_role_name(bs_role_t r);
/* "app", "cleaner", "console", "readonly"; BS_EINVAL naming them otherwise. */
int bs_role_parse(bs_role_t *out, const char *name);
/* An index table the app role is granted (bs_grants): exists false for one
 * not made yet, whose grant then carries CREATE (MySQL grants on a missing
 * table only so). */
typedef struct {
	const char *name;
	bool exists;
} bs_grant_table_t;
/* Whether role's grants are per table (app): they then name every index
 * table, which bs_grants takes from the caller (the catalog's, and any
 * about to be made). */
bool bs_role_per_table(bs_role_t role);
/* The SQL that gives user@host what role needs on every shard of cfg (or
 * the one named shard; BS_ENOTFOUND when none is): per shard a comment
 * naming it, GRANT on its database, for a per-table role GRANTs on
 * bagstore's tables it writes and on each of indexes[nindexes] (names
 * checked as index names, BS_EINVAL), SLAVE MONITOR for its replicas where
 * the role reads their lag, REQUIRE SSL where its tls.mode is required or
 * stricter. Contacts no shard. user and host are checked (BS_EINVAL) and
 * printed as identifiers. *out is NUL-terminated; free() it. */
int bs_grants(char **out, const bs_config_t *cfg, bs_role_t role, const char *user, const char *host, const char *shard,
              const bs_grant_table_t *indexes, int nindexes);
/* ------------------------------------------------------------------ census */

/* The kinds of value the census tells apart (a 16-byte binary is a uuid). */
typedef enum {
	BS_CT_NULL,
	BS_CT_BOOL,
	BS_CT_INT,
	BS_CT_FLOAT,
	BS_CT_STRING,
	BS_CT_UUID,
	BS_CT_BINARY,
	BS_CT_ARRAY,
	BS_CT_MAP,
	BS_CT_COUNT
} bs_census_type_t;
/* "null", "bool", "int", "float", "string", "uuid", "binary", "array", "map" */
const char *bs_census_type_name(bs_census_type_t t);

#define BS_CENSUS_PATH_MAX 256

/* One property path of the sampled bodies: "title", "a.b" inside a map,
 * "tags[]" for an array's elements ("a[].b" below them). */
typedef struct {
	char path[BS_CENSUS_PATH_MAX];
	int64_t present;            /* sampled entities holding the path at least once */
	int64_t values;             /* values seen at the path (every array element counts) */
	int64_t types[BS_CT_COUNT]; /* of those, per kind */
	int64_t distinct;           /* distinct values in the sample (exact, up to 200,000) */
	bool distinct_capped;       /* more distinct values than that: distinct is a floor */
	double distinct_est;        /* estimated distinct values in the store (Haas and
	                           * Stokes' Duj1; equals distinct when the sample
	                           * read every entity) */
	int64_t max_bytes;          /* the largest string (UTF-8 bytes) or binary */
	int64_t max_chars;          /* the longest string, in characters */
	int64_t max_items;          /* the largest array or map, in elements */
	char example[96];           /* one value, as JSON (cut with "...") */
	char indexes[256];          /* indexes (not disabled) holding it, comma-separated */
	char suggest[32];           /* the index type its values fit ("string(64)", "uuid"),
	                           * "" when none (see note) */
	int64_t fits;               /* values that fit the suggested type */
	char note[128];             /* why no type is suggested, or how many values do not fit */
} bs_census_prop_t;

typedef struct {
	bs_census_prop_t *props; /* sorted by path */
	int nprops;
	int per_shard;        /* the sample size asked for, per shard */
	int64_t sampled;      /* entities sampled (bodies that decode) */
	int64_t entities_est; /* entities of the shards sampled: InnoDB's estimate, or
	                           * exact (= sampled) when complete */
	bool complete;        /* every entity of the shards asked for was read
	                           * (false when one of them did not answer) */
	int shards_sampled;
	int shards_unreachable;      /* left out: they did not answer */
	char unreachable_first[256]; /* the first one's message */
	int64_t corrupt;             /* bodies that do not decode, left out */
	char corrupt_first[320];
} bs_census_t;

/* Sample up to per_shard bodies (0: 1,000) of every shard (shard -1) or of
 * one, spread over each table by added_id (MIN..MAX in equal buckets, the
 * first row of each; a table of at most per_shard ids is read whole), every
 * shard at once, and list every property path (engine/census.c). A shard
 * that does not answer is left out and counted, unless none answers. */
int bs_census(bs_census_t *out, bs_store_t *st, int per_shard, int shard);
void bs_census_free(bs_census_t *c);

/* ------------------------------------------------------------------ audit */

/* Record an operator's change (OS user, host and pid taken here) on the
 * first shard that answers; it touched every shard ("*"). Actions are
 * dotted: index.create, index.drop, backfill.pause, entity.edit ... */
int bs_audit(bs_store_t *st, const char *action, const char *target, const char *detail);

/* An entity change, as the audit log keeps it: the entity and its stored
 * bodies (zlib of MessagePack, as bs_get_raw returns them) before and
 * after, each with its `updated` time; NULL: absent then (a create has no
 * before, a delete no after). after_us 0: not known (the entity changed
 * again before it could be read back), which makes an undo refuse. */
typedef struct {
	bs_id_t id;
	const bs_bytes_t *before, *after;
	int64_t before_us, after_us;
} bs_audit_entity_t;
/* bs_audit for an entity change: target is the id, shards its shard, and
 * both images are kept (bs_audit_undo reverses it). */
int bs_audit_entity(bs_store_t *st, const char *action, const bs_audit_entity_t *e, const char *detail);

/* One row of the audit log. */
typedef struct {
	int shard;     /* the shard the row is kept on */
	int64_t id;    /* the row's id on that shard */
	int64_t at_us; /* when (that shard's clock) */
	char os_user[64], host[256];
	int pid; /* 0 when not recorded (rows older than the column) */
	char action[64], target[256];
	char shards[256]; /* the shards the change touched: names, or "*" for every
	                            * shard, "" when not recorded */
	char *detail;     /* owned; NULL when none */
	bool entity;      /* an entity change: entity_id and the images are set */
	bs_id_t entity_id;
	bool has_before, has_after; /* false: absent then (create, delete) */
	bs_bytes_t before, after;   /* stored bodies, owned */
	int64_t before_us, after_us;
} bs_audit_entry_t;

typedef struct {
	bs_audit_entry_t *items;
	int len;
	int unreachable;             /* shards that did not answer: their rows are missing */
	char unreachable_first[256]; /* the first of those shards' messages */
} bs_audit_list_t;
/* The newest limit rows (0: 100) of every shard's audit log, newest first;
 * shards that do not answer are counted in unreachable, unless none does
 * (BS_EUNREACHABLE). */
int bs_audit_list(bs_audit_list_t *out, bs_store_t *st, int limit);
void bs_audit_list_free(bs_audit_list_t *l);
/* Undo an entity change of the audit log (engine/undo.c): write its
 * before-image back only if the entity is still its after-image (bs_put_if
 * against after_us; a create is undone by bs_delete_if, a delete by
 * re-creating the entity only if it is absent). BS_ECONFLICT, with nothing
 * written, when the entity changed since; BS_EINVAL for a row that is not
 * an entity change. The undo is audited itself ("entity.undo", with its own
 * images, so that it can be undone in turn). */
int bs_audit_undo(bs_store_t *st, const bs_audit_entry_t *e);

/* ------------------------------------------------------------------ cleaner */

typedef enum {
	BS_JOB_QUEUED,
	BS_JOB_RUNNING,
	BS_JOB_THROTTLED,
	BS_JOB_PAUSED,
	BS_JOB_DONE,
	BS_JOB_FAILED,
	BS_JOB_CANCELLED
} bs_job_state_t;
const char *bs_job_state_name(bs_job_state_t s);

/* One backfill job: one index on one source shard. */
typedef struct {
	char index[BS_NAME_MAX + 1];
	int shard; /* source shard */
	bs_job_state_t state;
	char reason[256]; /* why throttled, or the error when failed */
	int64_t cursor;   /* last added_id done */
	int64_t max_id;   /* the added_id high-water mark at start */
	int64_t rows_scanned;
	int64_t rows_total;   /* estimate of rows to scan */
	int64_t rows_written; /* index rows written */
	double rate;          /* rows scanned per second, last 10 s */
	double eta_s;         /* -1 when unknown */
	int64_t chunk;        /* current chunk size, rows */
	char worker_host[64];
	int worker_pid;
	int64_t heartbeat_us, created_us, started_us, finished_us;
	/* the throttle, as this worker saw it (progress callbacks only; a
	 * listed job has "" and zeros): the signal holding the job back or
	 * that last cut its pace, its value and threshold, and the pace:
	 * statements at once allowed on its slowest shard (below 1: that
	 * share of the time) */
	char throttle_signal[24];
	double throttle_value, throttle_limit;
	double pace;
} bs_job_t;

typedef struct {
	bs_job_t *items;
	int len;
	char unreachable_first[256]; /* the first shard that did not answer: its
	                              * message (it names the shard, with MySQL's
	                              * words), "" when every shard answered */
} bs_job_list_t;
void bs_job_list_free(bs_job_list_t *l);
/* Every job on every reachable shard (unreachable shards are skipped and
 * their count returned through *unreachable when non-NULL). */
int bs_job_list(bs_job_list_t *out, bs_store_t *st, int *unreachable);
/* Queue a backfill of index on every shard (idempotent; done jobs stay). */
int bs_backfill_queue(bs_store_t *st, const char *index);
/* action: "pause", "resume" or "cancel", for every job of the index;
 * honoured by whichever worker holds the job within one chunk. */
int bs_job_control(bs_store_t *st, const char *index, const char *action);

/*
 * Events: what the cleaner does, as it does it, for logs, metrics and
 * hooks (bs_cleaner_opts_t.event). Every pointer is borrowed for the call.
 */
typedef enum {
	BS_EV_JOB_CLAIMED,  /* this worker took a job and starts or resumes it (job) */
	BS_EV_JOB_PROGRESS, /* a chunk checkpointed (job) */
	BS_EV_JOB_DONE,     /* every row scanned (job) */
	BS_EV_JOB_FAILED,   /* the job failed (job; message: why, MySQL's message
	                      * included; code) */
	BS_EV_JOB_RELEASED, /* this worker let a job go: stopped (it waits, queued,
	                      * for any worker), paused, cancelled, taken by another
	                      * worker, or a shard to wait for (job; message) */
	BS_EV_THROTTLE_ON,  /* a job waits (job; message: the reason) */
	BS_EV_THROTTLE_OFF, /* it goes on (job; message: the reason it had) */
	BS_EV_INDEX_READY,  /* an index this cleaner promoted is ready (index) */
	BS_EV_REPAIR_PASS,  /* a repair pass on a shard this cleaner repairs (shard,
	                      * rows, seconds, watermark_us, lag_s, indexes[]) */
	BS_EV_SHARD_LOST,   /* a shard stopped answering (shard; message; code) */
	BS_EV_SHARD_BACK,   /* it answers again (shard) */
	BS_EV_ERROR,        /* an error the daemon survives (message; code), as
	                      * given to opts->error */
	BS_EV_LOOP,         /* the daemon's loop ended a pass (liveness; no fields) */
	BS_EV_COUNT
} bs_event_type_t;
/* "job_claimed", "job_progress", ...: the names logs and metrics use. */
const char *bs_event_name(bs_event_type_t t);

/* Index rows one repair pass inserted (or overwrote) and deleted, per index. */
typedef struct {
	char index[BS_NAME_MAX + 1];
	int64_t inserted, deleted;
} bs_event_index_t;

typedef struct {
	bs_event_type_t type;
	int64_t at_us;       /* when, unix microseconds */
	int shard;           /* -1 when not about one shard */
	const char *index;   /* "" when none */
	const char *message; /* "" when none */
	int code;            /* BS_E* of failures and errors, else 0 */
	const bs_job_t *job; /* the job's state now; NULL for other events */
	/* BS_EV_REPAIR_PASS */
	int64_t rows;                    /* entities looked at */
	double seconds;                  /* the pass's duration */
	int64_t watermark_us;            /* the shard's repair watermark after it */
	const bs_event_index_t *indexes; /* per maintained index */
	int nindexes;
} bs_event_t;

/*
 * Cleaner settings that may change while it runs (SIGHUP): chunk_time,
 * max_load, critical_load, max_replica_lag, repair_overlap,
 * repair_interval, sleep_coef. A thread-safe box: set from any thread,
 * read by the cleaner's threads as one consistent copy each time they
 * use it (see doc/DESIGN.md for when each setting takes effect).
 */
typedef struct bs_cleaner_live bs_cleaner_live_t;
int bs_cleaner_live_new(bs_cleaner_live_t **out, const bs_cleaner_conf_t *initial);
void bs_cleaner_live_set(bs_cleaner_live_t *l, const bs_cleaner_conf_t *c);
void bs_cleaner_live_get(bs_cleaner_conf_t *out, bs_cleaner_live_t *l);
void bs_cleaner_live_free(bs_cleaner_live_t *l);

/*
 * How a caller runs the cleaner. The callbacks are called from the
 * cleaner's own threads, possibly from several at once (the callee locks
 * what it shares), and must not use the store they were given.
 *
 * stop may be set from any thread, or from a signal handler: atomic_int is
 * lock-free on every platform bagstore builds on (a static assertion in
 * engine/daemon.c checks it), which is what C11 requires of an object a
 * handler writes.
 */
/* ------------------------------------------------------------------ buckets */

/* Each shard's part of the bucket map (doc/DESIGN.md, "Buckets and
 * resharding"). */
typedef struct {
	char name[BS_NAME_MAX + 1];
	int shard;     /* configured shard, -1 when not configured */
	int buckets;   /* buckets it owns per the map */
	int share;     /* buckets it would own after `reshard plan` */
	bool draining; /* drain: true */
	bool reachable;
	int64_t entities_est;    /* InnoDB's estimate, -1 unknown */
	int64_t data_bytes;      /* data + index length of bagstore's tables */
	int moves_out, moves_in; /* moves of the latest plan not done */
	bool in_map;             /* the map names it (else `init` has not added it) */
} bs_bucket_shard_t;

typedef struct {
	int64_t version; /* the map's */
	int buckets;     /* B */
	char store_id[33];
	bs_bucket_shard_t *shards; /* the configured shards, in configured order */
	int nshards;
	int *owner;           /* per bucket (buckets of them): the index in shards[]
	                             * of its owner, -1 a member the configuration lacks */
	int unlisted_buckets; /* buckets owned by members the configuration lacks */
	char unlisted[256];   /* those members' names, comma-separated ("" none) */
} bs_buckets_t;
void bs_buckets_free(bs_buckets_t *b);
/* The map, read fresh, with each member's size. */
int bs_buckets(bs_buckets_t *out, bs_store_t *st);

/* One move of a plan: buckets from a source shard to a target. */
typedef struct {
	char source[BS_NAME_MAX + 1], target[BS_NAME_MAX + 1];
	int source_shard, target_shard;
	int nbuckets;
	int *buckets;           /* ascending */
	int64_t entities_est;   /* the source's estimate times the share that moves */
	int64_t index_rows_est; /* the same, summed over its index tables */
	double seconds_est;
} bs_plan_move_t;

typedef struct {
	int64_t map_version; /* the map the plan was computed from */
	int buckets;
	bs_plan_move_t *moves;
	int len;
	double seconds_est; /* the moves of each source one after another,
	                             * the sources at once */
	double rate;        /* rows/s the estimate assumes (the measured
	                             * one over every source that has one) */
	bool rate_measured; /* measured on the last plan's moves (else a default) */
	char basis[200];    /* what the time rests on, in words: "the last
	                             * reshard's 8,000 rows/s" or "no basis: ..." */
} bs_reshard_plan_t;
void bs_reshard_plan_free(bs_reshard_plan_t *p);
/* The moves that spread the buckets evenly over the configured shards not
 * marked drain: true (a draining shard's buckets all move off). */
int bs_reshard_plan(bs_reshard_plan_t *out, bs_store_t *st);
/* Record the plan's moves as jobs (refused while an earlier plan's move
 * has not ended, or when the map moved since the plan was read). */
int bs_reshard_start(bs_store_t *st, const bs_reshard_plan_t *plan);

typedef enum {
	BS_MOVE_COPY,
	BS_MOVE_INDEX,
	BS_MOVE_CATCHUP,
	BS_MOVE_CUTOVER,
	BS_MOVE_CLEANUP,
	BS_MOVE_DONE,
	BS_MOVE_UNDO
} bs_move_phase_t;
/* "copy", "index rows", "catch-up", "cut-over", "cleanup", "done", "undo" */
const char *bs_move_phase_name(bs_move_phase_t p);

typedef struct {
	int64_t id, plan_id, map_version;
	char source[BS_NAME_MAX + 1], target[BS_NAME_MAX + 1];
	int source_shard, target_shard; /* configured shards, -1 when not */
	int nbuckets;
	char buckets[256]; /* as ranges ("0-9,12"), cut with "..." */
	int (*ranges)[2];  /* every bucket, as [first, last] ranges,
	                             * ascending: nranges of them; set by
	                             * bs_move_list (its own: freed with the list),
	                             * NULL in a mover's progress */
	int nranges;
	bs_job_state_t state;
	bs_move_phase_t phase;
	char reason[256];   /* why throttled or waiting, or the error; while
	                     * running, how it is paced when it says ("catch-up
	                     * not paced by the writers' latency: ...") */
	int64_t rows_total; /* the source's entities to scan */
	int64_t rows_scanned, rows_copied;
	int64_t index_total; /* the source's index rows to scan (estimate) */
	int64_t index_rows;  /* index rows copied */
	int64_t log_rows;    /* change-log entries replayed */
	double rate;         /* rows per second, last 10 s, of the current phase */
	double eta_s;        /* -1 unknown */
	double progress;     /* 0..1 of the whole move */
	double fence_ms;     /* the longest cut-over fence held */
	int fence_tries;     /* cut-overs rolled back (over max_fence) */
	int64_t flip_us;
	char worker_host[64];
	int worker_pid;
	int64_t heartbeat_us, created_us, started_us, finished_us;
	double worker_beat_s; /* a quiet running move's worker: its registry
	                             * beat's age, -1 unknown or not looked at */
} bs_move_t;

typedef struct {
	bs_move_t *items;
	int len;
	char unreachable_first[256]; /* the first shard that did not answer: its
	                              * message (it names the shard, with MySQL's
	                              * words), "" when every shard answered */
} bs_move_list_t;
void bs_move_list_free(bs_move_list_t *l);
/* The latest plan's moves, from every shard answering (unreachable ones
 * skipped and counted, the first one's message in unreachable_first); an
 * error when no shard answered. */
int bs_move_list(bs_move_list_t *out, bs_store_t *st, int *unreachable);
/* The move's log backlog: entries of bagstore_move_log on its source that
 * catch-up has not replayed yet (writes to its buckets since), into *out.
 * Read-only; for status (/metrics). */
int bs_move_backlog(int64_t *out, bs_store_t *st, const bs_move_t *m);

typedef enum {
	BS_RESHARD_IDLE,
	BS_RESHARD_RUNNING,
	BS_RESHARD_PAUSED,
	BS_RESHARD_DONE,
	BS_RESHARD_FAILED,
	BS_RESHARD_CANCELLED
} bs_reshard_state_t;
/* "idle", "running", "paused", "done", "failed", "cancelled" */
const char *bs_reshard_state_name(bs_reshard_state_t s);
/* The overall state of a plan's moves: idle without any; failed when one
 * failed; running while one is queued, running or throttled; paused when
 * one is; done when all are; else cancelled. */
bs_reshard_state_t bs_reshard_state(const bs_move_list_t *l);
/* action: "pause", "resume" or "cancel", for every move of the latest
 * plan; cancel leaves the buckets of a move before its cut-over where they
 * were (a move past it finishes). Audited. */
int bs_reshard_control(bs_store_t *st, const char *action);

typedef struct {
	atomic_int *stop; /* when non-NULL and set, return soon */
	bool once;        /* one pass (cleaner --once) */
	/* after every chunk or pass; may be NULL */
	void (*progress)(void *ctx, const bs_job_t *job);
	/* an error the daemon survives (it retries later): its code and its
	 * message, which names the shard and carries MySQL's own; may be NULL */
	void (*error)(void *ctx, int code, const char *msg);
	void *ctx;
	/* every event (bs_event_t); may be NULL. Called from the cleaner's
	 * threads, possibly several at once; it should return quickly (a slow
	 * callee slows a backfill: queue what takes time) */
	void (*event)(void *ctx, const bs_event_t *ev);
	/* settings that may change while it runs; NULL: the store's
	 * configuration's cleaner section */
	bs_cleaner_live_t *live;
	/* after every chunk or phase of a move (may be NULL); as progress */
	void (*move_progress)(void *ctx, const bs_move_t *move);
} bs_cleaner_opts_t;

/* Backfill one index on every shard until every job is done (or stop);
 * then, when every job is done, try to mark the index ready. */
int bs_cleaner_backfill(bs_store_t *st, const char *index, const bs_cleaner_opts_t *opts);
/* The daemon: pending backfills, moves and the repair loop until stop (or
 * one pass when opts->once). */
int bs_cleaner_run(bs_store_t *st, const bs_cleaner_opts_t *opts);
/* Run the recorded moves until every one has ended (or stop): done,
 * cancelled (undone) or failed; a paused one is waited for. */
int bs_cleaner_reshard(bs_store_t *st, const bs_cleaner_opts_t *opts);

/* Drift between an index and the bodies. */
typedef struct {
	int64_t checked;     /* entities read */
	int64_t missing;     /* rows an entity should have and lacks */
	int64_t stale;       /* rows with wrong values or on the wrong shard */
	int64_t orphaned;    /* rows whose entity is gone */
	int64_t misfit;      /* values that do not fit the index's type (not indexed) */
	int64_t corrupt;     /* entities whose body is corrupt: does not decode, or
	                    * holds another entity's id (not indexed) */
	int64_t unprintable; /* bodies that decode but cannot be shown as JSON
	                      * (written before bagstore refused them) */
	char first_bad[320]; /* the first corrupt or unprintable body: shard,
	                       * id and why ("" when none; not kept by verify_last) */
	int64_t repaired;    /* rows inserted or deleted by --repair */
	int64_t at_us;       /* when it was measured */
	bool not_recorded;   /* the account may not write bagstore_verify (role
	                    * readonly): not kept for bs_verify_last */
	char cut_short[800]; /* failed after --repair changed rows: the audit's
	                      * detail (how many, and the error); "" else */
} bs_drift_t;
/* Full read-only comparison of one index (or every index when NULL, summed
 * into *out); with repair, fixes what it finds. Recorded for the console. */
int bs_verify(bs_drift_t *out, bs_store_t *st, const char *index, bool repair);
/* The last recorded verify of an index; BS_ENOTFOUND when never run. */
int bs_verify_last(bs_drift_t *out, bs_store_t *st, const char *index);

#define BS_LAG_HISTORY 120
typedef struct {
	char shard[BS_NAME_MAX + 1];
	bool reachable;
	int64_t watermark_us;                  /* 0 when the repair loop never ran */
	double lag_s;                          /* now minus watermark */
	double history[BS_LAG_HISTORY];        /* lag samples, oldest first: each the lag the
	                          * shard had when it was taken (a repair pass records
	                          * the lag it found before moving the watermark; a pass
	                          * that could not run records the lag as it stands) */
	int64_t history_at_us[BS_LAG_HISTORY]; /* when each was taken (the shard's clock):
	                          * no sample for a while is a gap (no repair ran) */
	int nhistory;
	double history_step_s; /* seconds between samples, at least */
	int64_t now_us;        /* the shard's clock when read */
	int64_t repairs_total; /* index rows repaired since the watermark row was made
	                          * (a rate is the difference between two reads):
	                          * drift of ready indexes, and orphans swept */
	int64_t fills_total;   /* rows the repair passes inserted into indexes still
	                          * building: backfill's work (a new daemon's first
	                          * pass), not drift; counted apart */
	char error[256];       /* why the shard could not be read ("" when it was) */
	double repairs_per_s;
	int64_t last_pass_us;
	int64_t last_pass_rows; /* entities looked at in the last pass */
} bs_lag_t;
/* Per shard (out[nshards], caller allocates). */
int bs_lag(bs_lag_t *out, bs_store_t *st);

/* ------------------------------------------------------------------ workers */

/*
 * The worker registry: a row per worker in bagstore_workers on every shard
 * (so that one shard down hides none), kept by a heartbeat. Every cleaner
 * registers itself, and every console while it runs backfills.
 */
#define BS_VERSION "0.1.0"
#define BS_WORKER_HEARTBEAT_S 1.0 /* between two heartbeats */
#define BS_WORKER_DEAD_S 5.0      /* a worker whose newest heartbeat is older is dead */
#define BS_WORKER_CLEAR_S 3600.0  /* a dead worker's rows are deleted after this */

typedef struct bs_worker bs_worker_t;
/* Register this process as a worker of kind ("cleaner": the daemon,
 * "backfill": `cleaner --index`, "console") and keep its heartbeat, on a
 * thread per shard with stores of its own over cfg (borrowed until
 * bs_worker_stop; their timeouts capped at 2 s). metrics: "HOST:PORT" of
 * its /metrics, or NULL. A shard that does not answer is retried at every
 * heartbeat; bs_worker_shards_ok says how many took the last one. */
int bs_worker_start(bs_worker_t **out, const bs_config_t *cfg, const char *kind, const char *metrics);
/* What it does now, shown by `bagstore workers`: jobs held ("INDEX@SHARD"
 * separated by commas) and the shards it runs repair passes on (names
 * separated by commas); either may be NULL or "". Any thread. */
void bs_worker_doing(bs_worker_t *w, const char *jobs, const char *repair);
/* Its id (32 hex digits), for logs. */
const char *bs_worker_id(const bs_worker_t *w);
/* Shards whose last heartbeat succeeded; *first_error (may be NULL) gets
 * the first failing shard's message ("" when none). Any thread. */
int bs_worker_shards_ok(bs_worker_t *w, char *first_error, size_t size);
/* Deregister (delete its rows, each shard bounded by the capped timeouts),
 * stop the heartbeat and free. Accepts NULL. */
void bs_worker_stop(bs_worker_t *w);

typedef struct {
	char id[33];
	char kind[16];
	char host[256];
	int pid;
	char version[64];
	char jobs[1024];      /* "INDEX@SHARD,..." held */
	char repair[1024];    /* shard names it repairs */
	char metrics[256];    /* HOST:PORT, "" when none */
	int64_t started_us;   /* its own clock */
	int64_t heartbeat_us; /* the newest heartbeat, on its shard's clock */
	double age_s;         /* seconds since then, on that shard's clock */
	bool alive;           /* age_s < BS_WORKER_DEAD_S */
	int shards;           /* how many shards hold its row */
} bs_worker_info_t;

typedef struct {
	bs_worker_info_t *items;
	int len;
	char unreachable_first[256]; /* the first shard that did not answer: its
	                              * message (it names the shard, with MySQL's
	                              * words), "" when every shard answered */
} bs_worker_list_t;
void bs_worker_list_free(bs_worker_list_t *l);
/* Every registered worker, its rows merged over the reachable shards (the
 * freshest heartbeat wins), live ones first, then by start time.
 * Unreachable shards are skipped and counted in *unreachable (may be NULL);
 * an error only when no shard answered. */
int bs_workers_list(bs_worker_list_t *out, bs_store_t *st, int *unreachable);
/* Live workers of a kind in l (kind NULL: any). */
int bs_workers_alive(const bs_worker_list_t *l, const char *kind);

/* The throttle's verdict on a shard. */
typedef enum {
	BS_THR_STARTING,   /* a signal not read yet */
	BS_THR_GO,         /* every signal under its threshold */
	BS_THR_OVER,       /* a signal over its threshold: the pace is cut and jobs
	                    * wait (on the probe's latency alone, they wait only
	                    * once the pace is at its lowest) */
	BS_THR_UNREADABLE, /* a signal unread for cleaner.max_signal_age: jobs wait */
	BS_THR_CRITICAL    /* Threads_running above critical_load: jobs stop (failed) */
} bs_throttle_state_t;
const char *bs_throttle_state_name(bs_throttle_state_t s);

#define BS_THROTTLE_REPLICAS 8
/* What the cleaner's throttle reads on one shard (bs_throttle_sample). */
typedef struct {
	char shard[BS_NAME_MAX + 1];
	bs_throttle_state_t state;
	char signal[24];         /* what holds it: write_latency, threads_running,
	                           * history_length, replica_lag, unreadable,
	                           * critical_load; "" when none */
	double value, limit;     /* that signal's value and threshold */
	char reason[256];        /* in words, as a job says it */
	double write_latency_s;  /* the heartbeat write (the probe): the median of
	                           * its last 5, or with write_latency_signal tail
	                           * the second highest of its last 20; -1 unknown */
	bool write_latency_tail; /* which of the two it is (the setting in force) */
	double write_baseline_s; /* its median while no job of this process wrote
	                           * to the shard; -1 unknown */
	double write_limit_s;    /* the threshold in force; 0 when no signal */
	double other_writes_s;   /* other clients' INSERT, REPLACE, UPDATE and DELETE
	                           * statements a second (the server's Com_ counters
	                           * less this process's), over the last 2 s; -1
	                           * unknown */
	bool others_write;       /* more than noise, or unknown: the write latency
	                           * is a signal; else nobody is there to protect */
	int64_t threads_running; /* -1 unknown */
	int64_t history_length;  /* InnoDB's history list length; -1 unknown */
	int nreplicas;           /* at most BS_THROTTLE_REPLICAS shown */
	struct {
		char address[128];
		double lag_s;    /* by the heartbeat row; -1 unknown */
		char error[200]; /* why unknown */
	} replicas[BS_THROTTLE_REPLICAS];
	double pace;        /* statements at once it allows now (below 1:
	                           * that share of the time) */
	int most;           /* its most: cleaner.writers, plus one read */
	int64_t heartbeats; /* heartbeats this process wrote on it */
} bs_throttle_shard_t;
/* Run the cleaner's throttle for `seconds` (it writes the heartbeat on
 * every shard every 100 ms) and say what it reads, per shard (out[nshards],
 * caller allocates). Refused in read-only mode. */
int bs_throttle_sample(bs_throttle_shard_t *out, bs_store_t *st, double seconds);

#ifdef __cplusplus
}
#endif
#endif

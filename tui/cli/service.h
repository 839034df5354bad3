/*
 * service.h - the cleaner as a service (`bagstore cleaner`): what its parts
 * share. The parts, one file each, all in the command line's room:
 *
 *   svc.c          the daemon's life: signals (a thread of its own waits
 *                  for SIGTERM, SIGINT and SIGHUP), the worker registry,
 *                  events turned into logs, metrics and hooks, the systemd
 *                  notifications (READY, STATUS, WATCHDOG, STOPPING), reload
 *   svc_log.c      one line per event on stderr, as text or JSON Lines
 *   svc_watch.c    the collector: a thread that reads the shards' status,
 *                  lag, jobs, moves, verifies and workers in the background, so
 *                  that nothing that answers a scrape waits on a shard
 *   svc_metrics.c  /metrics in Prometheus's text format (libmicrohttpd)
 *   svc_web.c      its web configuration (TLS, basic auth), the file
 *                  Prometheus's exporters take as --web.config.file
 *   svc_hooks.c    hooks: commands run off the cleaner's threads, bounded
 *                  by a timeout, their details in environment variables
 *   svc_notify.c   the systemd notify protocol over $NOTIFY_SOCKET
 *
 * Threads: the engine's (the daemon's loop on the main thread, backfill
 * runners, heartbeats) call svc's event callback; svc's own thread waits
 * for signals and does the periodic work (log summaries, STATUS, the
 * watchdog, the registry's "doing"); the collector; libmicrohttpd's thread;
 * the hook runner. Only the collector and the engine's threads touch
 * shards.
 */
#ifndef BS_SERVICE_H
#define BS_SERVICE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "bagstore.h"
#include "cli.h"

/* ------------------------------------------------------------ svc_log.c */

typedef struct {
	pthread_mutex_t mu;
	FILE *f;
	bool json;    /* JSON Lines, else text */
	bool journal; /* stderr is the journal: text lines carry <N> levels,
	                 * no timestamp (journald stamps them) */
} svc_log_t;

typedef enum { LOG_DEBUG_, LOG_INFO_, LOG_WARN_, LOG_ERROR_ } svc_level_t;

void svc_log_init(svc_log_t *l, FILE *f, bool json);
/* One line: event (a short snake_case name), fields (a JSON object, taken
 * over; may be NULL) and a sentence for people (printf format). JSON lines
 * carry ts, level, event, msg and the fields; text lines the level, the
 * event and the sentence. Any thread. */
void svc_log(svc_log_t *l, svc_level_t level, const char *event, json_t *fields, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* The format may change (SIGHUP). */
void svc_log_set_json(svc_log_t *l, bool json);

/* ------------------------------------------------------------ svc_notify.c */

typedef struct {
	int fd; /* -1: not under systemd's notify protocol */
	char path[108];
	size_t pathlen;       /* bytes of path that make the address */
	uint64_t watchdog_us; /* $WATCHDOG_USEC for this process, 0: none */
} svc_notify_t;

/* Read $NOTIFY_SOCKET, $WATCHDOG_USEC and $WATCHDOG_PID and unset them (so
 * that hooks do not inherit them): call before any thread starts. 0, or
 * -1 with why in err. */
int svc_notify_open(svc_notify_t *n, char *err, size_t size);
/* Send one datagram ("READY=1", "STATUS=...", ...); nothing when fd < 0.
 * Any thread. */
void svc_notify_send(svc_notify_t *n, const char *msg);
void svc_notify_close(svc_notify_t *n);

/* ------------------------------------------------------------ svc_watch.c */

/* The collector's last values, each group stamped with its last success. */
typedef struct {
	pthread_mutex_t mu;
	int n;                     /* shards */
	bs_shard_status_t *status; /* per shard */
	int64_t status_at_us;
	bs_lag_t *lag; /* per shard */
	int64_t lag_at_us;
	bs_job_list_t jobs;
	int64_t jobs_at_us;
	bs_index_list_t indexes; /* with verify[] below */
	bs_drift_t *verify;      /* per index of `indexes` */
	bool *have_verify;
	int64_t verify_at_us;
	bs_worker_list_t workers;
	int64_t workers_at_us;
	bs_move_list_t moves;  /* the latest reshard's moves */
	int64_t *backlog;      /* per move: its log backlog, -1 unknown */
	int moves_unreachable; /* shards whose moves were not read */
	int64_t moves_at_us;
	/* the last attempt of each group failed: why ("" when it went well) */
	char status_err[256], lag_err[256], jobs_err[256], verify_err[256], workers_err[256], moves_err[256];
	int64_t errors_total; /* refreshes that failed, any group */
	bool *answered;       /* per shard: answered once since start */
	bool all_answered;
} svc_snap_t;

typedef struct svc_watch svc_watch_t;
/* Start the collector over cfg (borrowed; its stores' timeouts capped at
 * 2 s), refreshing every interval_s into snap (allocated here). on_dead
 * (may be NULL) is called from the collector for every worker it sees dead
 * for the first time (the worker registry's view of a SIGKILL). */
int svc_watch_start(svc_watch_t **out, svc_snap_t **snap, const bs_config_t *cfg, double interval_s,
                    void (*on_dead)(void *ctx, const bs_worker_info_t *w), void *ctx);
/* Stop and join (the collector may be in a shard: bounded by the capped
 * timeouts), free the snapshot. */
void svc_watch_stop(svc_watch_t *w, svc_snap_t *snap);

/* ------------------------------------------------------------ counters */

/* What the service counts from events, for /metrics. Under mu. */
typedef struct {
	char index[BS_NAME_MAX + 1];
	int shard;
	int64_t inserted, deleted;
} svc_repair_ctr_t;

typedef struct {
	pthread_mutex_t mu;
	int n; /* shards */
	int64_t events[BS_EV_COUNT];
	int64_t *repair_passes;   /* per shard */
	int64_t *repair_rows;     /* per shard: entities looked at */
	svc_repair_ctr_t *repair; /* per index and shard */
	int nrepair, caprepair;
	int64_t hooks_ok, hooks_failed, hooks_timeout, hooks_dropped;
	int64_t reloads_ok, reloads_failed;
	int64_t workers_dead_seen;
	int64_t start_us;
} svc_counters_t;

int svc_counters_init(svc_counters_t *c, int nshards);
void svc_counters_free(svc_counters_t *c);
/* Add a repair pass's counts (under c->mu inside). */
void svc_counters_repair(svc_counters_t *c, const bs_event_t *ev);

/* ------------------------------------------------------------ svc_web.c */

typedef enum { SVC_WEB_NO_CLIENT_CERT, SVC_WEB_VERIFY_IF_GIVEN, SVC_WEB_REQUIRE_AND_VERIFY } svc_client_auth_t;
typedef struct svc_web_user svc_web_user_t;

/* A web configuration, read whole: immutable after svc_web_load but for
 * the password cache (under mu). */
typedef struct {
	char *path;
	char *cert_pem, *key_pem; /* NULL: no TLS */
	char *ca_pem;             /* NULL: no client certificates */
	svc_client_auth_t client_auth;
	svc_web_user_t *users; /* basic auth; none: no basic auth */
	int nusers;
	unsigned char hmac_key[32]; /* the password cache's */
	pthread_mutex_t mu;
} svc_web_t;

/* Read and check the file at path (certificates and keys read, the pair
 * checked, every hash checked to be bcrypt). 0, or -1 with why in err
 * ("FILE:LINE:COL: ..."). */
int svc_web_load(svc_web_t **out, const char *path, char *err, size_t size);
void svc_web_free(svc_web_t *w);
/* Whether user and pass (either NULL: none given) pass basic auth (true
 * when the file names no users). Any thread. */
bool svc_web_check(svc_web_t *w, const char *user, const char *pass);

/* ------------------------------------------------------------ svc_metrics.c */

typedef struct {
	const char *addr;       /* "HOST:PORT", IPv6 in brackets */
	const char *addr_from;  /* where addr was set, for messages ("FILE:L:C:
	                         * cleaner.metrics", "--metrics") */
	const char *web_config; /* the web configuration's file, NULL none */
	const char *web_from;   /* where that was set, for messages */
	bool insecure;          /* a non-loopback addr without web_config is allowed */
} svc_metrics_conf_t;

typedef struct svc_metrics svc_metrics_t;
/* Serve /metrics as mc says from snap and ctr (borrowed until
 * svc_metrics_stop). 0; -2 with why in err for what the configuration
 * says (a web configuration that does not read, an address that is not
 * loopback with neither web_config nor insecure); -1 for the rest (an
 * address that does not resolve or bind). */
int svc_metrics_start(svc_metrics_t **out, const svc_metrics_conf_t *mc, const bs_config_t *cfg, svc_snap_t *snap,
                      svc_counters_t *ctr, char *err, size_t size);
/* Read the web configuration again (SIGHUP) and serve with it on the same
 * socket; a file that does not read keeps the one in use. 0, 1 when
 * /metrics has none (or is no longer served), or -1 with why in err.
 * svc's thread. */
int svc_metrics_reload_web(svc_metrics_t *m, char *err, size_t size);
void svc_metrics_stop(svc_metrics_t *m);
/* "TLS and basic auth", "TLS, client certificates and basic auth", ...,
 * "open", or NULL when /metrics is no longer served (a failed reload). */
const char *svc_metrics_protection(const svc_metrics_t *m);
/* The exposition text (for tests and the handler); caller frees. */
char *svc_metrics_render(size_t *len, const bs_config_t *cfg, svc_snap_t *snap, svc_counters_t *ctr);

/* ------------------------------------------------------------ svc_hooks.c */

typedef struct svc_hooks svc_hooks_t;
/* Start the hook runner for the commands of cfg->daemon (copied); a hook's
 * environment leaves out every password_env of cfg. */
int svc_hooks_start(svc_hooks_t **out, const bs_config_t *cfg, svc_log_t *log, svc_counters_t *ctr);
/* New commands (SIGHUP). */
void svc_hooks_set(svc_hooks_t *h, const bs_config_t *cfg);
/* Queue the commands for hook event h with env ("NAME=VALUE", nenv of
 * them, copied); never waits. A full queue drops it, logged and counted. */
void svc_hooks_fire(svc_hooks_t *h, bs_hook_t ev, const char *const *env, int nenv);
/* Stop: the running hook gets until wait_s, then it is killed; hooks not
 * started are dropped (logged). */
void svc_hooks_stop(svc_hooks_t *h, double wait_s);

/* ------------------------------------------------------------ svc.c */

typedef struct {
	const char *metrics;    /* --metrics, else cleaner.metrics */
	const char *web_config; /* --web.config.file, else cleaner.metrics_web_config */
	const char *log_format; /* --log-format, else cleaner.log_format */
	double log_every;       /* --log-every, else cleaner.log_every (0: not given) */
} svc_opts_t;

/* The daemon (`bagstore cleaner` with neither --index nor --once) until
 * SIGTERM or SIGINT. ctx's store and configuration are open. */
int svc_run(cli_ctx_t *ctx, const svc_opts_t *o);

#endif

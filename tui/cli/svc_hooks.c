/*
 * svc_hooks.c - hooks, as gh-ost has them: on an event (a backfill
 * started, done or failed, a throttle, an index ready, a shard lost or
 * back) the commands of cleaner.hooks.on_event and cleaner.hooks.on_<name>
 * run through /bin/sh -c, with the event's details in BAGSTORE_*
 * environment variables.
 *
 * They run on a thread of their own, one at a time, from a bounded queue:
 * firing one never waits, so a hook never stops or slows a job. Each is
 * bounded by cleaner.hooks.timeout (its process group is sent SIGTERM,
 * then SIGKILL a second later); its output (the first 2 KiB) and its exit
 * status are logged; a failure is logged and counted, nothing more.
 *
 * A hook's environment is not the daemon's: it gets the event's BAGSTORE_*
 * variables and, from ours, PATH, HOME, LANG, LC_ALL and TZ when set (PATH
 * a default when not), nothing else. The daemon's environment holds the
 * shards' passwords (password_env, MYSQL_PWD), which are no hook's
 * business; a name some shard or replica uses as its password_env is left
 * out even from that short list.
 */
#include "service.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fmt.h"

#define QUEUE_MAX 64
#define ENV_MAX 24
#define OUT_MAX 2048
#define BASE_MAX 8

typedef struct {
	bs_hook_t ev;
	char *env[ENV_MAX];
	int nenv;
} job_t;

struct svc_hooks {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t tid;
	bool started, stop;
	double stop_deadline; /* monotonic; while stopping */
	char *on_event, *on[BS_HOOK_COUNT];
	double timeout;
	char *base[BASE_MAX]; /* what a hook gets of our environment */
	int nbase;
	job_t q[QUEUE_MAX];
	int head, len;
	svc_log_t *log;
	svc_counters_t *ctr;
};

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void job_free(job_t *j)
{
	for (int k = 0; k < j->nenv; k++)
		free(j->env[k]);
	j->nenv = 0;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* Whether name is some shard's or replica's password_env. */
static bool is_password_env(const bs_config_t *cfg, const char *name, size_t len)
{
	for (int i = 0; i < cfg->nshards; i++) {
		const bs_shard_conf_t *s = &cfg->shards[i];
		if (s->password_env && strlen(s->password_env) == len && !strncmp(s->password_env, name, len))
			return true;
		for (int r = 0; r < s->nreplicas; r++) {
			const char *p = s->replicas[r].password_env;
			if (p && strlen(p) == len && !strncmp(p, name, len))
				return true;
		}
	}
	return false;
}

/* Under mu: the part of our environment a hook gets. */
static void set_base(svc_hooks_t *h, const bs_config_t *cfg)
{
	static const char *const keep[] = { "PATH", "HOME", "LANG", "LC_ALL", "TZ" };
	bool path = false;

	for (int k = 0; k < h->nbase; k++)
		free(h->base[k]);
	h->nbase = 0;
	for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++) {
		const char *v = getenv(keep[k]);
		char *e;
		if (!v || is_password_env(cfg, keep[k], strlen(keep[k])))
			continue;
		if (!(e = malloc(strlen(keep[k]) + strlen(v) + 2)))
			continue;
		sprintf(e, "%s=%s", keep[k], v);
		h->base[h->nbase++] = e;
		path |= !strcmp(keep[k], "PATH");
	}
	if (!path && !is_password_env(cfg, "PATH", 4) &&
	    (h->base[h->nbase] = strdup("PATH=/usr/local/bin:/usr/bin:/bin")))
		h->nbase++;
}

/* Under mu. */
static void set_commands(svc_hooks_t *h, const bs_config_t *cfg)
{
	const bs_daemon_conf_t *dm = &cfg->daemon;

	set_base(h, cfg);
	free(h->on_event);
	h->on_event = dup_or_null(dm->hook_on_event);
	for (int k = 0; k < BS_HOOK_COUNT; k++) {
		free(h->on[k]);
		h->on[k] = dup_or_null(dm->hooks[k]);
	}
	h->timeout = dm->hook_timeout > 0 ? dm->hook_timeout : 10;
}

/* The environment of a hook: the base (h->base, copied under mu), then
 * the event's variables. Free the array and its first *nbase strings. */
static char **hook_env(int *nbase, svc_hooks_t *h, const job_t *j)
{
	char **e;
	int o = 0;

	*nbase = 0;
	if (!(e = calloc(BASE_MAX + (size_t)j->nenv + 1, sizeof *e)))
		return NULL;
	pthread_mutex_lock(&h->mu);
	for (int k = 0; k < h->nbase; k++)
		if ((e[o] = strdup(h->base[k])))
			o++;
	pthread_mutex_unlock(&h->mu);
	*nbase = o;
	for (int k = 0; k < j->nenv; k++)
		e[o++] = j->env[k];
	e[o] = NULL;
	return e;
}

static void env_free(char **e, int nbase)
{
	for (int k = 0; e && k < nbase; k++)
		free(e[k]);
	free(e);
}

/* Start `sh -c cmd`: its own process group, default signals, stdin from
 * /dev/null, stdout and stderr into *out_fd. */
static int spawn(pid_t *pid, int *out_fd, const char *cmd, char **env)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, dfl;
	int p[2], rc;
	char *argv[] = { "sh", "-c", (char *)cmd, NULL };

	if (pipe2(p, O_CLOEXEC) != 0)
		return errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_adddup2(&fa, p[1], 2);
	/* nothing else of ours: Connector/C's sockets are not close-on-exec, and
	 * a hook's background child holding them would keep this process's
	 * connections, and the named locks they hold (jobs, repair), alive
	 * after it dies, so no other cleaner could take them over */
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	posix_spawnattr_init(&at);
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGTERM);
	sigaddset(&dfl, SIGINT);
	sigaddset(&dfl, SIGHUP);
	sigaddset(&dfl, SIGPIPE);
	posix_spawnattr_setsigmask(&at, &none); /* the daemon blocks these; the hook must not */
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
	rc = posix_spawn(pid, "/bin/sh", &fa, &at, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(p[1]);
	if (rc) {
		close(p[0]);
		return rc;
	}
	*out_fd = p[0];
	return 0;
}

typedef struct {
	int status; /* waitpid's */
	bool timed_out;
	double seconds;
	char out[OUT_MAX + 1];
	size_t outlen;
} result_t;

/* The hook's deadline now: its timeout, or the stop's when sooner. */
static double deadline_now(svc_hooks_t *h, double deadline)
{
	pthread_mutex_lock(&h->mu);
	if (h->stop && h->stop_deadline < deadline)
		deadline = h->stop_deadline;
	pthread_mutex_unlock(&h->mu);
	return deadline;
}

/* Read what the hook wrote, keeping the first OUT_MAX bytes; wait up to
 * ms for it. false at the end of its output. */
static bool take_output(result_t *r, int fd, int ms)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	char buf[512];
	ssize_t n;

	if (poll(&pf, 1, ms) <= 0)
		return true;
	if ((n = read(fd, buf, sizeof buf)) <= 0)
		return false;
	if (r->outlen < OUT_MAX) {
		size_t take = (size_t)n < OUT_MAX - r->outlen ? (size_t)n : OUT_MAX - r->outlen;
		memcpy(r->out + r->outlen, buf, take);
		r->outlen += take;
	}
	return true;
}

/* A timed-out hook's process group, its leader reaped: what is left of it
 * (a child that ignores SIGTERM) gets until a second after the SIGTERM,
 * then SIGKILL. */
static void group_kill(pid_t pgid, double termed_at)
{
	while (kill(-pgid, 0) == 0) { /* (an ID in use by a group is not reused) */
		if (mono() - termed_at >= 1.0) {
			kill(-pgid, SIGKILL);
			return;
		}
		struct timespec ts = { 0, 20000000L };
		nanosleep(&ts, NULL);
	}
}

/* Wait for the hook until deadline (monotonic), reading its output; then
 * SIGTERM to its group, SIGKILL a second later. */
static void await(result_t *r, svc_hooks_t *h, pid_t pid, int fd, double deadline)
{
	double t0 = mono(), killed_at = 0;
	bool open_fd = true;

	for (;;) {
		pid_t w = waitpid(pid, &r->status, WNOHANG);
		if (w == pid) {
			/* what it wrote before it ended (not waiting for a child it left behind) */
			for (int k = 0; open_fd && k < 64; k++) {
				size_t before = r->outlen;
				open_fd = take_output(r, fd, 0);
				if (open_fd && r->outlen == before)
					break;
			}
			/* timed out: the rest of its group goes too, whether or not it
			 * heeded the SIGTERM that ended the shell */
			if (killed_at)
				group_kill(pid, killed_at);
			break;
		}
		double now = mono();
		if (now >= deadline_now(h, deadline) && !killed_at) {
			r->timed_out = true;
			kill(-pid, SIGTERM);
			killed_at = now;
		} else if (killed_at && now - killed_at > 1.0) {
			kill(-pid, SIGKILL);
		}
		if (open_fd) {
			open_fd = take_output(r, fd, 20);
		} else {
			struct timespec ts = { 0, 20000000L };
			nanosleep(&ts, NULL);
		}
	}
	r->out[r->outlen] = '\0';
	r->seconds = mono() - t0;
	close(fd);
}

static void report(svc_hooks_t *h, const char *key, const char *cmd, bs_hook_t ev, const result_t *r)
{
	json_t *f = json_object();
	bool ok = !r->timed_out && WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0;
	int code = WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1;
	int sig = WIFSIGNALED(r->status) ? WTERMSIG(r->status) : 0;

	json_object_set_new(f, "hook", json_string(key));
	json_object_set_new(f, "hook_event", json_string(bs_hook_name(ev)));
	json_object_set_new(f, "command", cli_jstr(cmd));
	json_object_set_new(f, "exit_status", code >= 0 ? json_integer(code) : json_null());
	if (sig)
		json_object_set_new(f, "signal", json_integer(sig));
	json_object_set_new(f, "seconds", json_real(r->seconds));
	json_object_set_new(f, "output", cli_jstr(r->out));
	pthread_mutex_lock(&h->ctr->mu);
	if (r->timed_out)
		h->ctr->hooks_timeout++;
	else if (ok)
		h->ctr->hooks_ok++;
	else
		h->ctr->hooks_failed++;
	pthread_mutex_unlock(&h->ctr->mu);
	if (r->timed_out)
		svc_log(h->log, LOG_WARN_, "hook_timeout", f, "hook %s for %s killed after %.1f s: %s", key,
		        bs_hook_name(ev), r->seconds, cmd);
	else if (ok)
		svc_log(h->log, LOG_INFO_, "hook_ran", f, "hook %s for %s ran (exit 0, %.2f s)", key, bs_hook_name(ev),
		        r->seconds);
	else
		svc_log(h->log, LOG_WARN_, "hook_failed", f, "hook %s for %s failed (%s %d, %.2f s): %.200s", key,
		        bs_hook_name(ev), sig ? "signal" : "exit", sig ? sig : code, r->seconds, r->out);
}

static void run_one(svc_hooks_t *h, const job_t *j, const char *key, const char *cmd, double timeout)
{
	result_t r = { 0 };
	pid_t pid = 0;
	int fd = -1, rc = 0, nbase;
	char **env = hook_env(&nbase, h, j);

	if (!env || (rc = spawn(&pid, &fd, cmd, env)) != 0) {
		pthread_mutex_lock(&h->ctr->mu);
		h->ctr->hooks_failed++;
		pthread_mutex_unlock(&h->ctr->mu);
		svc_log(h->log, LOG_WARN_, "hook_failed", NULL, "hook %s for %s did not start: %s", key,
		        bs_hook_name(j->ev), env ? strerror(rc) : "out of memory");
		env_free(env, nbase);
		return;
	}
	env_free(env, nbase);
	await(&r, h, pid, fd, mono() + timeout);
	report(h, key, cmd, j->ev, &r);
}

static void *hooks_thread(void *p)
{
	svc_hooks_t *h = p;

	pthread_mutex_lock(&h->mu);
	for (;;) {
		while (!h->len && !h->stop)
			pthread_cond_wait(&h->cv, &h->mu);
		if (h->stop)
			break;
		job_t j = h->q[h->head];
		h->head = (h->head + 1) % QUEUE_MAX;
		h->len--;
		char *cmds[2] = { dup_or_null(h->on_event), dup_or_null(h->on[j.ev]) };
		double timeout = h->timeout;
		pthread_mutex_unlock(&h->mu);
		if (cmds[0])
			run_one(h, &j, "on_event", cmds[0], timeout);
		if (cmds[1]) {
			char key[64];
			snprintf(key, sizeof key, "on_%s", bs_hook_name(j.ev));
			run_one(h, &j, key, cmds[1], timeout);
		}
		free(cmds[0]);
		free(cmds[1]);
		job_free(&j);
		pthread_mutex_lock(&h->mu);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

int svc_hooks_start(svc_hooks_t **out, const bs_config_t *cfg, svc_log_t *log, svc_counters_t *ctr)
{
	svc_hooks_t *h = calloc(1, sizeof *h);

	*out = NULL;
	if (!h)
		return bs_error(BS_ENOMEM, "out of memory");
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	h->log = log;
	h->ctr = ctr;
	set_commands(h, cfg);
	if (pthread_create(&h->tid, NULL, hooks_thread, h) != 0) {
		free(h);
		return bs_error(BS_ERROR, "cannot start the hook thread");
	}
	h->started = true;
	*out = h;
	return 0;
}

void svc_hooks_set(svc_hooks_t *h, const bs_config_t *cfg)
{
	pthread_mutex_lock(&h->mu);
	set_commands(h, cfg);
	pthread_mutex_unlock(&h->mu);
}

void svc_hooks_fire(svc_hooks_t *h, bs_hook_t ev, const char *const *env, int nenv)
{
	bool dropped = false;

	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	if (!h->on_event && !h->on[ev]) {
		pthread_mutex_unlock(&h->mu);
		return;
	}
	if (h->len == QUEUE_MAX || h->stop) {
		dropped = true;
	} else {
		job_t *j = &h->q[(h->head + h->len) % QUEUE_MAX];
		j->ev = ev;
		j->nenv = 0;
		for (int k = 0; k < nenv && k < ENV_MAX; k++)
			if ((j->env[j->nenv] = strdup(env[k])))
				j->nenv++;
		h->len++;
		pthread_cond_signal(&h->cv);
	}
	pthread_mutex_unlock(&h->mu);
	if (dropped) {
		pthread_mutex_lock(&h->ctr->mu);
		h->ctr->hooks_dropped++;
		pthread_mutex_unlock(&h->ctr->mu);
		svc_log(h->log, LOG_WARN_, "hook_dropped", NULL, "hook for %s not run: %d hooks already wait",
		        bs_hook_name(ev), QUEUE_MAX);
	}
}

void svc_hooks_stop(svc_hooks_t *h, double wait_s)
{
	int left;

	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	h->stop = true;
	h->stop_deadline = mono() + wait_s;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	if (h->started)
		pthread_join(h->tid, NULL);
	left = h->len;
	while (h->len) {
		job_free(&h->q[h->head]);
		h->head = (h->head + 1) % QUEUE_MAX;
		h->len--;
	}
	if (left)
		svc_log(h->log, LOG_WARN_, "hook_dropped", NULL, "%d queued hooks not run: the cleaner stops", left);
	free(h->on_event);
	for (int k = 0; k < BS_HOOK_COUNT; k++)
		free(h->on[k]);
	for (int k = 0; k < h->nbase; k++)
		free(h->base[k]);
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	free(h);
}

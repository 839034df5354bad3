/*
 * store.c - opening a store over a configuration, and fault points.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static void lib_init(void)
{
	mysql_library_init(0, NULL, NULL);
}

static unsigned secs(double s)
{
	return s < 1 ? 1 : (unsigned)(s + 0.5);
}

int bs_store_open(bs_store_t **out, const bs_config_t *cfg)
{
	*out = NULL;
	if (!cfg || cfg->nshards < 1)
		return bs_error(BS_ECONFIG, "configuration lists no shards");
	int rc = bs_fault_check();
	if (rc < 0)
		return rc;
	pthread_once(&lib_once, lib_init);
	bs_store_t *st = calloc(1, sizeof *st);
	if (!st || !(st->shards = calloc((size_t)cfg->nshards, sizeof *st->shards))) {
		free(st);
		return bs_error(BS_ENOMEM, "out of memory opening the store");
	}
	st->cfg = cfg;
	st->n = cfg->nshards;
	pthread_mutex_init(&st->id_lock, NULL);
	for (int i = 0; i < st->n; i++) {
		st->shards[i].conf = &cfg->shards[i];
		st->shards[i].index = i;
	}
	bs_config_fingerprint(st->fingerprint, cfg);
	st->cat_loaded = -1;
	st->connect_timeout = secs(cfg->connect_timeout);
	st->read_timeout = secs(cfg->read_timeout);
	st->write_timeout = secs(cfg->write_timeout);
	bs__trace_default(&st->trace_fn, &st->trace_arg);
	st->rows_as_text = bs_fault(BS_FAULT_ROWS_AS_TEXT);
	*out = st;
	return 0;
}

void bs_store_free(bs_store_t *st)
{
	if (!st)
		return;
	for (int i = 0; i < st->n; i++) {
		bs__settle_flush(st, i);
		bs__shard_close(st, i);
		free(st->shards[i].settle);
		free(st->shards[i].bstate);
		free(st->shards[i].leaving);
	}
	free(st->map.owner);
	free(st->map.names);
	free(st->map.name_shard);
	bs_index_list_free(&st->cat);
	free(st->shards);
	pthread_mutex_destroy(&st->id_lock);
	free(st);
}

const bs_config_t *bs_store_config(const bs_store_t *st)
{
	return st->cfg;
}
int bs_store_nshards(const bs_store_t *st)
{
	return st->n;
}

static const char *const fault_names[] = {
#define BS_FAULT_NAME_(id, name, doc) name,
	BS_FAULTS(BS_FAULT_NAME_)
#undef BS_FAULT_NAME_
};
_Static_assert(sizeof fault_names / sizeof fault_names[0] == BS_FAULT_COUNT, "one name per fault point");

const char *bs_fault_name(bs_fault_t point)
{
	return point >= 0 && point < BS_FAULT_COUNT ? fault_names[point] : "?";
}

/* The point named by the n bytes at p, or -1. */
static int fault_lookup(const char *p, size_t n)
{
	for (int k = 0; k < BS_FAULT_COUNT; k++)
		if (strlen(fault_names[k]) == n && !memcmp(fault_names[k], p, n))
			return k;
	return -1;
}

/* Calls fn(point, p, n, arg) for each comma-separated name of
 * BAGSTORE_FAULT (point -1 when unknown) until it returns true. */
static bool fault_each(bool (*fn)(int, const char *, size_t, void *), void *arg)
{
	const char *f = getenv("BAGSTORE_FAULT");

	for (const char *p = f; p && *p;) {
		size_t n = strcspn(p, ",");
		if (n && fn(fault_lookup(p, n), p, n, arg))
			return true;
		p += n + (p[n] == ',');
	}
	return false;
}

static bool is_point(int k, const char *p, size_t n, void *arg)
{
	return k == *(const int *)arg;
}

/* A fault point's crash: the process ends at once with status 75, as a
 * kill would end it mid-step: no exit handlers, no buffers flushed, no
 * thread joined. The system call itself, not _exit: ThreadSanitizer's
 * _exit runs its end-of-process checks, which report the threads a crash
 * leaves unjoined (one between a shard thread's end and its join) as
 * leaks. */
void bs__fault_exit(void)
{
	syscall(SYS_exit_group, 75);
	_exit(75); /* not reached */
}

bool bs_fault(bs_fault_t point)
{
	int k = (int)point;
	return fault_each(is_point, &k);
}

static bool is_unknown(int k, const char *p, size_t n, void *arg)
{
	if (k >= 0)
		return false;
	snprintf(arg, 64, "%.*s", (int)(n < 60 ? n : 60), p);
	return true;
}

int bs_fault_check(void)
{
	char bad[64];
	bs_buf_t b = { 0 };

	if (!fault_each(is_unknown, bad))
		return 0;
	for (int k = 0; k < BS_FAULT_COUNT; k++)
		bs__buf_printf(&b, "%s%s", k ? ", " : "", fault_names[k]);
	int rc = bs_error(BS_EINVAL, "BAGSTORE_FAULT: no fault point is named '%s' (the points: %s)", bad,
	                  b.ptr ? b.ptr : "");
	bs__buf_free(&b);
	return rc;
}

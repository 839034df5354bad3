/*
 * events.c - what the cleaner tells its caller as it works: the event names,
 * the one way an event is sent (bs__event_emit), and the box of settings
 * that may change while it runs (bs_cleaner_live_t, SIGHUP's reload), with
 * bs__cleaner_conf, how every cleaner thread reads them.
 */
#include "cleaner.h"

#include <stdlib.h>
#include <string.h>

static const char *const event_names[BS_EV_COUNT] = {
	[BS_EV_JOB_CLAIMED] = "job_claimed",
	[BS_EV_JOB_PROGRESS] = "job_progress",
	[BS_EV_JOB_DONE] = "job_done",
	[BS_EV_JOB_FAILED] = "job_failed",
	[BS_EV_JOB_RELEASED] = "job_released",
	[BS_EV_THROTTLE_ON] = "throttle_on",
	[BS_EV_THROTTLE_OFF] = "throttle_off",
	[BS_EV_INDEX_READY] = "index_ready",
	[BS_EV_REPAIR_PASS] = "repair_pass",
	[BS_EV_SHARD_LOST] = "shard_lost",
	[BS_EV_SHARD_BACK] = "shard_back",
	[BS_EV_ERROR] = "error",
	[BS_EV_LOOP] = "loop",
};

const char *bs_event_name(bs_event_type_t t)
{
	if ((unsigned)t < BS_EV_COUNT && event_names[t])
		return event_names[t];
	return "unknown";
}

void bs__event_emit(const bs_cleaner_opts_t *opts, bs_event_t *ev)
{
	if (!opts || !opts->event)
		return;
	if (!ev->at_us)
		ev->at_us = bs_now_us();
	if (!ev->index)
		ev->index = ev->job ? ev->job->index : "";
	if (!ev->message)
		ev->message = "";
	opts->event(opts->ctx, ev);
}

/* ------------------------------------------------------------ live settings */

struct bs_cleaner_live {
	pthread_mutex_t mu;
	bs_cleaner_conf_t conf;
};

int bs_cleaner_live_new(bs_cleaner_live_t **out, const bs_cleaner_conf_t *initial)
{
	bs_cleaner_live_t *l = calloc(1, sizeof *l);

	*out = NULL;
	BS_ERR_ALLOC(l);
	if (pthread_mutex_init(&l->mu, NULL) != 0) {
		free(l);
		return bs_error(BS_ERROR, "cannot create a mutex");
	}
	l->conf = *initial;
	*out = l;
	return 0;
}

void bs_cleaner_live_set(bs_cleaner_live_t *l, const bs_cleaner_conf_t *c)
{
	pthread_mutex_lock(&l->mu);
	l->conf = *c;
	pthread_mutex_unlock(&l->mu);
}

void bs_cleaner_live_get(bs_cleaner_conf_t *out, bs_cleaner_live_t *l)
{
	pthread_mutex_lock(&l->mu);
	*out = l->conf;
	pthread_mutex_unlock(&l->mu);
}

void bs_cleaner_live_free(bs_cleaner_live_t *l)
{
	if (!l)
		return;
	pthread_mutex_destroy(&l->mu);
	free(l);
}

void bs__cleaner_conf(bs_cleaner_conf_t *out, const bs_cleaner_opts_t *opts, const bs_config_t *cfg)
{
	if (opts && opts->live)
		bs_cleaner_live_get(out, opts->live);
	else
		*out = cfg->cleaner;
}

/*
 * collect.c - reads of every shard that a shard down does not stop: each
 * shard's failure kept with its own message, the shards that did not
 * answer counted and left out (the caller says its answer is incomplete),
 * any other failure failing the whole read with its shard's message, and
 * none answering failing it too. bs__collect joins what each shard read
 * into one list, in shard order: the jobs list, the workers list and the
 * audit log are read through it, the census's samples through
 * bs__shard_each_up.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef char msg_t[512];

struct up_arg {
	shard_fn fn;
	void *arg;
	msg_t *err; /* per shard */
};

static int up_on(bs_store_t *st, int i, void *p)
{
	struct up_arg *a = p;
	int rc = a->fn(st, i, a->arg);
	if (rc) /* bs__shard_each keeps only the first shard's message */
		snprintf(a->err[i], sizeof a->err[i], "%s", bs_last_error());
	return rc;
}

/* The read's outcome from each shard's: 0, or its error (with message). */
static int outcome(bs__up_t *up, const int *rcs, const msg_t *err, bs_store_t *st, const bool *which,
                   const bs__up_msgs_t *m)
{
	int asked = 0, first = -1, first_down = -1;
	for (int i = 0; i < st->n; i++) {
		if (which && !which[i])
			continue;
		asked++;
		if (rcs[i] == BS_EUNREACHABLE) {
			if (!up->down++) {
				first_down = i;
				snprintf(up->down_first, sizeof up->down_first, "%s", err[i]);
			}
		} else if (rcs[i] && first < 0) {
			first = i;
		}
	}
	if (first >= 0) /* its message names the shard and carries MySQL's */
		return m->failing ? bs_error(rcs[first], "%s: %s", m->failing, err[first])
		                  : bs_error(rcs[first], "%s", err[first]);
	if (asked && up->down == asked) {
		if (!m->none)
			return bs_error(BS_EUNREACHABLE, "%s", err[first_down]);
		return bs_error(BS_EUNREACHABLE, "no shard answered for %s%s%s", m->none, m->none_first ? ": " : "",
		                m->none_first ? up->down_first : "");
	}
	bs_error_clear();
	return 0;
}

int bs__shard_each_up(bs__up_t *up, int *rcs, bs_store_t *st, const bool *which, shard_fn fn, void *arg,
                      const bs__up_msgs_t *m)
{
	struct up_arg a = { fn, arg, calloc((size_t)st->n, sizeof *a.err) };
	int *own = rcs ? NULL : calloc((size_t)st->n, sizeof *own);
	int rc;
	memset(up, 0, sizeof *up);
	if (!rcs)
		rcs = own;
	if (!a.err || !rcs) {
		rc = bs__oom();
	} else {
		bs__shard_each(st, which, up_on, &a, rcs);
		rc = outcome(up, rcs, (const msg_t *)a.err, st, which, m);
	}
	free(a.err);
	free(own);
	return rc;
}

static void part_free(bs__part_t *part, const bs__collect_t *c)
{
	for (int k = 0; c->item_free && k < part->len; k++)
		c->item_free((char *)part->items + (size_t)k * c->size);
	free(part->items);
	part->items = NULL;
	part->len = 0;
}

struct collect_arg {
	const bs__collect_t *c;
	bs__part_t *parts; /* per shard */
};

static int part_on(bs_store_t *st, int i, void *p)
{
	struct collect_arg *a = p;
	return a->c->read(&a->parts[i], st, i, a->c->arg);
}

/* The parts of the shards that answered into one array, in shard order
 * (their items moved); the others' freed. */
static int join(void **items, int *len, bs__part_t *parts, const int *rcs, bs_store_t *st, const bs__collect_t *c)
{
	size_t total = 0;
	for (int i = 0; i < st->n; i++)
		total += rcs[i] ? 0 : (size_t)parts[i].len;
	if (total && !(*items = calloc(total, c->size)))
		return bs_error(BS_ENOMEM, "out of memory%s%s", c->msgs.failing ? " " : "",
		                c->msgs.failing ? c->msgs.failing : "");
	for (int i = 0; i < st->n; i++) {
		if (!rcs[i] && parts[i].len) {
			memcpy((char *)*items + (size_t)*len * c->size, parts[i].items, (size_t)parts[i].len * c->size);
			*len += parts[i].len;
			parts[i].len = 0; /* moved */
		}
		part_free(&parts[i], c);
	}
	return 0;
}

int bs__collect(void **items, int *len, bs__up_t *up, bs_store_t *st, const bs__collect_t *c)
{
	int *rcs = calloc((size_t)st->n, sizeof *rcs);
	struct collect_arg a = { c, calloc((size_t)st->n, sizeof *a.parts) };
	int rc;
	*items = NULL;
	*len = 0;
	memset(up, 0, sizeof *up);
	if (!rcs || !a.parts) {
		rc = bs__oom();
		goto done;
	}
	if (!(rc = bs__shard_each_up(up, rcs, st, NULL, part_on, &a, &c->msgs)))
		rc = join(items, len, a.parts, rcs, st, c);
done:
	for (int i = 0; a.parts && i < st->n; i++)
		part_free(&a.parts[i], c);
	free(a.parts);
	free(rcs);
	return rc;
}

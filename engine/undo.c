/*
 * undo.c - undoing an entity change the audit log recorded (audit.c): the
 * before-image is written back only if the entity is still exactly the
 * after-image, by the entities' own conditional writes (entity.c):
 *
 *   edit    bs_put_if(before, after_us)
 *   create  bs_delete_if(id, after_us)
 *   delete  bs_put_if(before, 0): re-created only if absent
 *
 * Anything else (the entity changed since, or its after_us is not known)
 * is BS_ECONFLICT and writes nothing. The undo is audited as entity.undo,
 * with its own images, so it can be undone in turn.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The entity as it is now, read back after a write: its body and updated
 * time, when it is what `want` says (a body, or absent for NULL); *us 0
 * otherwise (written over meanwhile: an undo of this undo then refuses). */
static void read_back(bs_bytes_t *body, int64_t *us, bs_store_t *st, const bs_id_t *id, const bs_value_t *want)
{
	bs_value_t got;
	*us = 0;
	memset(body, 0, sizeof *body);
	if (!want || bs_get_raw(body, st, id, us))
		goto clear;
	bs_value_nil(&got);
	if (bs__body_decode_row(&got, body->ptr, body->len, id->b, NULL) || !bs_value_equal(&got, want))
		*us = 0;
	bs_value_clear(&got);
clear:
	bs_error_clear();
}

/* The change itself; *restored gets the before-image decoded (NIL for a
 * create's undo). */
static int reverse(bs_value_t *restored, bs_store_t *st, const bs_audit_entry_t *e)
{
	char hex[33];
	int rc;

	bs_id_hex(hex, &e->entity_id);
	if (e->has_after && e->after_us == 0)
		return bs_error(BS_ECONFLICT,
		                "entity %s: the audit row does not know which version it wrote "
		                "(it changed again at once): not undone",
		                hex);
	if (e->has_before && (rc = bs__body_decode_row(restored, e->before.ptr, e->before.len, e->entity_id.b,
	                                               "the audit row's before-image")))
		return rc;
	if (e->has_before)
		return bs_put_if(st, restored, e->has_after ? e->after_us : 0);
	if (e->has_after)
		return bs_delete_if(st, &e->entity_id, e->after_us);
	return bs_error(BS_EINVAL, "audit row %s#%lld has neither a before nor an after image",
	                st->shards[e->shard].conf->name, (long long)e->id);
}

/* After the reversal failed with something other than a refusal: was it
 * made all the same (its entity written, its index rows not: a target
 * shard down)? Then it is audited like any undo. */
static bool reversed_anyway(bs_store_t *st, const bs_audit_entry_t *e, const bs_value_t *restored)
{
	bs_bytes_t now = { 0 };
	int64_t us = 0;
	int rc = 0;

	if (e->has_before)
		read_back(&now, &us, st, &e->entity_id, restored);
	else
		rc = bs_get_raw(&now, st, &e->entity_id, NULL);
	bs_bytes_free(&now);
	bs_error_clear();
	return e->has_before ? us != 0 && us != (e->has_after ? e->after_us : 0) : rc == BS_ENOTFOUND;
}

int bs_audit_undo(bs_store_t *st, const bs_audit_entry_t *e)
{
	bs_value_t restored;
	bs_bytes_t now = { 0 };
	char detail[1600], cut[1024] = "";
	int rc, wrc;

	bs_value_nil(&restored);
	if (!e->entity)
		return bs_error(BS_EINVAL, "audit row %s#%lld (%s) is not an entity change: nothing to undo",
		                st->shards[e->shard].conf->name, (long long)e->id, e->action);
	if (st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing to undo");
	if ((wrc = rc = reverse(&restored, st, e))) {
		if (rc == BS_ECONFLICT || rc == BS_EINVAL || rc == BS_ECORRUPT)
			goto done;
		snprintf(cut, sizeof cut, "%s", bs_last_error());
		if (!reversed_anyway(st, e, &restored)) {
			rc = bs_error(rc, "%s", cut);
			goto done;
		}
	}
	bs_audit_entity_t a = { .id = e->entity_id };
	if (e->has_after) {
		a.before = &e->after;
		a.before_us = e->after_us;
	}
	read_back(&now, &a.after_us, st, &e->entity_id, e->has_before ? &restored : NULL);
	if (e->has_before)
		a.after = &now;
	snprintf(detail, sizeof detail, "undo of %s#%lld (%s by %s@%s)%s%s", st->shards[e->shard].conf->name,
	         (long long)e->id, e->action, e->os_user, e->host, wrc ? "; cut short: " : "", cut);
	rc = bs_audit_entity(st, "entity.undo", &a, detail);
	if (rc) {
		char msg[1024];
		snprintf(msg, sizeof msg, "%s", bs_last_error());
		rc = bs_error(rc, "undone, but not audited: %s%s%s", msg, wrc ? "; and: " : "", cut);
	} else if (wrc) {
		rc = bs_error(wrc, "undone (and audited), but: %s", cut);
	}
done:
	bs_bytes_free(&now);
	bs_value_clear(&restored);
	return rc;
}

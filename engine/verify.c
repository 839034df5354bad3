/*
 * verify.c - a full comparison of an index with the bodies: every entity
 * on every shard (by added_id, keyset paging) against the rows it should
 * have, then every index row against the entities that exist (orphans).
 * Read-only unless asked to repair; the result is recorded in
 * bagstore_verify on every shard for the console (bs_verify_last).
 */
#include "cleaner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VERIFY_BATCH 2000

/* Did the last statement fail on some shard for want of a privilege, and
 * on none for another reason? */
static bool refused_only(const bs_store_t *st)
{
	bool denied = false;
	for (int j = 0; j < st->n; j++) {
		unsigned err = bs__shard_last_errno(st, j);
		if (err && !bs__denied(err))
			return false;
		denied |= bs__denied(err);
	}
	return denied;
}

/* A run that failed after it repaired rows: the audit's detail, with the
 * error that stopped it (the last one set). */
static void say_cut_short(bs_drift_t *out)
{
	snprintf(out->cut_short, sizeof out->cut_short,
	         "verify --repair cut short after %lld index rows repaired: %.700s", (long long)out->repaired,
	         bs_last_error());
}

static int verify_one(bs_drift_t *out, bs_store_t *st, const bs_index_t *idx, bool repair)
{
	ebatch_t eb = { 0 };
	bs_buf_t b = { 0 };
	drift_counts_t d = { 0 };
	int64_t orphans = 0, fixed = 0;
	int rc = 0;

	memset(out, 0, sizeof *out);
	for (int s = 0; s < st->n; s++) {
		int64_t after = 0;
		for (;;) {
			bs__buf_reset(&b);
			bs__buf_printf(&b,
			               "SELECT added_id, id, UNIX_TIMESTAMP(updated), body, " BS__OV_SQL
			               " FROM entities"
			               " WHERE added_id>%lld ORDER BY added_id LIMIT %d",
			               (long long)after, VERIFY_BATCH);
			size_t got;
			/* the shard's own entities: not the copies it holds for a move */
			if ((rc = bs__ebatch_scan(&eb, &got, st, s, &b)))
				goto done;
			if (got == 0)
				break;
			out->checked += (int64_t)eb.len;
			if (eb.corrupt && !out->first_bad[0])
				snprintf(out->first_bad, sizeof out->first_bad, "shard %.64s: %.240s",
				         st->shards[s].conf->name, eb.corrupt_first);
			out->corrupt += (int64_t)eb.corrupt;
			for (size_t k = 0; k < eb.len; k++)
				if (eb.bags[k].type == BS_MAP && bs__value_printable(&eb.bags[k])) {
					if (!out->unprintable++ && !out->first_bad[0]) {
						char hex[33];
						bs_id_hex(hex, &eb.ids[k]);
						snprintf(out->first_bad, sizeof out->first_bad,
						         "shard %.64s: entity %s: %.200s", st->shards[s].conf->name,
						         hex, bs_last_error());
					}
					bs_error_clear();
				}
			if (repair) { /* writers may have moved on meanwhile: not counted again */
				drift_counts_t again = { 0 };
				rc = bs__drift_fix_settle(&d, &again, st, s, idx, 1, &eb);
				d.repaired += again.repaired;
			} else {
				rc = bs__drift_check(&d, st, idx, eb.ids, eb.bags, eb.len, false);
			}
			if (rc)
				goto done;
			after = eb.last_added;
			if (got < VERIFY_BATCH)
				break;
		}
	}
	for (int j = 0; j < st->n; j++) {
		uint8_t cursor[16] = { 0 };
		bool wrapped = false;
		while (!wrapped)
			if ((rc = bs__drift_orphans(&orphans, &fixed, st, idx, j, cursor, VERIFY_BATCH, repair,
			                            &wrapped)))
				goto done;
	}
	out->missing = d.missing;
	out->stale = d.stale;
	out->misfit = d.misfit;
	out->orphaned = orphans;
	out->repaired = d.repaired + fixed;
	out->at_us = bs_now_us();
	if (!st->cfg->read_only) {
		bs__buf_reset(&b);
		bs__buf_puts(&b, "INSERT INTO bagstore_verify (index_name, checked, missing, stale, orphaned, misfit,"
		                 " repaired, corrupt, unprintable, at_us) VALUES (");
		bs__buf_hex(&b, idx->name, strlen(idx->name));
		bs__buf_printf(&b,
		               ",%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld) ON DUPLICATE KEY UPDATE"
		               " checked=VALUES(checked), missing=VALUES(missing), stale=VALUES(stale),"
		               " orphaned=VALUES(orphaned), misfit=VALUES(misfit), repaired=VALUES(repaired),"
		               " corrupt=VALUES(corrupt), unprintable=VALUES(unprintable), at_us=VALUES(at_us)",
		               (long long)out->checked, (long long)out->missing, (long long)out->stale,
		               (long long)out->orphaned, (long long)out->misfit, (long long)out->repaired,
		               (long long)out->corrupt, (long long)out->unprintable, (long long)out->at_us);
		if (!(rc = bs__buf_ok(&b)))
			rc = bs__exec_everywhere(st, b.ptr, b.len);
		/* an account that may only read (role readonly) verifies all the
		 * same: its result is not kept for the console, and says so */
		if (rc == BS_ESQL && refused_only(st)) {
			out->not_recorded = true;
			bs_error_clear();
			rc = 0;
		}
	}
done:
	if (rc) { /* cut short: what it repaired so far, for the audit */
		out->repaired = d.repaired + fixed;
		if (out->repaired)
			say_cut_short(out);
	}
	bs__ebatch_free(&eb);
	bs__buf_free(&b);
	return rc;
}

static void add(bs_drift_t *sum, const bs_drift_t *d)
{
	sum->checked += d->checked;
	sum->missing += d->missing;
	sum->stale += d->stale;
	sum->orphaned += d->orphaned;
	sum->misfit += d->misfit;
	sum->repaired += d->repaired;
	if (!sum->first_bad[0])
		memcpy(sum->first_bad, d->first_bad, sizeof sum->first_bad);
	sum->corrupt += d->corrupt;
	sum->unprintable += d->unprintable;
	if (d->at_us > sum->at_us)
		sum->at_us = d->at_us;
	sum->not_recorded |= d->not_recorded;
}

int bs_verify(bs_drift_t *out, bs_store_t *st, const char *index, bool repair)
{
	bs_index_list_t l = { 0 };
	int rc;
	memset(out, 0, sizeof *out);
	if (repair && st->cfg->read_only)
		return bs_error(BS_EREADONLY, "read-only: refusing verify --repair");
	if (index) {
		bs_index_t ix;
		if (!(rc = bs_index_get(&ix, st, index)))
			rc = verify_one(out, st, &ix, repair);
	} else {
		if ((rc = bs_index_list(&l, st)))
			return rc;
		for (int k = 0; k < l.len && !rc; k++) {
			bs_drift_t d;
			if (l.items[k].state == BS_INDEX_DISABLED)
				continue;
			rc = verify_one(&d, st, &l.items[k], repair);
			add(out, &d); /* cut short too: its rows repaired count */
		}
		if (rc && out->repaired) /* the whole run's count, earlier indexes' too */
			say_cut_short(out);
	}
	bs_index_list_free(&l);
	return rc;
}

static int last_from(bs_drift_t *out, bs_store_t *st, int i, const char *index)
{
	bs_buf_t b = { 0 };
	MYSQL_RES *res = NULL;
	int rc;
	memset(out, 0, sizeof *out);
	bs__buf_puts(&b, "SELECT SUM(checked), SUM(missing), SUM(stale), SUM(orphaned), SUM(misfit), SUM(repaired),"
	                 " MAX(at_us), COUNT(*), SUM(corrupt), SUM(unprintable) FROM bagstore_verify");
	if (index) {
		bs__buf_puts(&b, " WHERE index_name=");
		bs__buf_hex(&b, index, strlen(index));
	}
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, i, b.ptr, b.len)))
		goto done;
	MYSQL_ROW row = mysql_fetch_row(res);
	if (!row || !row[7] || !strcmp(row[7], "0")) {
		rc = bs_error(BS_ENOTFOUND, "no verify recorded%s%s", index ? " for index " : "", index ? index : "");
		goto done;
	}
	int64_t *f[] = { &out->checked, &out->missing,  &out->stale, &out->orphaned,
		         &out->misfit,  &out->repaired, &out->at_us };
	for (int k = 0; k < 7; k++)
		*f[k] = row[k] ? strtoll(row[k], NULL, 10) : 0;
	out->corrupt = row[8] ? strtoll(row[8], NULL, 10) : 0;
	out->unprintable = row[9] ? strtoll(row[9], NULL, 10) : 0;
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

int bs_verify_last(bs_drift_t *out, bs_store_t *st, const char *index)
{
	int rc = BS_EUNREACHABLE;
	for (int i = 0; i < st->n; i++) {
		rc = last_from(out, st, i, index);
		if (rc != BS_EUNREACHABLE)
			return rc;
	}
	return rc;
}

int bs__verify_forget(bs_store_t *st, const char *index)
{
	bs_buf_t b = { 0 };
	int rc;
	bs__buf_puts(&b, "DELETE FROM bagstore_verify WHERE index_name=");
	bs__buf_hex(&b, index, strlen(index));
	if (!(rc = bs__buf_ok(&b)))
		rc = bs__exec_everywhere(st, b.ptr, b.len);
	bs__buf_free(&b);
	return rc;
}

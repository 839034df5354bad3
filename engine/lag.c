/*
 * lag.c - the repair loop's watermarks and lag: bagstore_watermarks row
 * 'repair' and bagstore_lag_history on each shard, and bs_lag().
 *
 * Lag is now (the shard's clock) minus the watermark: every entity updated
 * before the watermark has had its index rows made right. A history
 * sample is the lag the shard had when it was taken: a pass records the
 * lag it found (before moving the watermark), and a pass that could not
 * run (its shard's repair lock held elsewhere, or a failure after it was
 * taken) records the lag as it stands (bs__lag_sample). A shard no pass
 * reached has no sample for that time: a gap, which readers draw as one.
 */
#include "cleaner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAG_STEP_S 1.0 /* one history sample per second at most */

int bs__lag_sample(bs_store_t *st, int shard)
{
	bs_buf_t b = { 0 };
	int rc;
	int64_t step = (int64_t)(LAG_STEP_S * 1e6);
	bs__buf_printf(&b,
	               "SET @bs_now=CAST(UNIX_TIMESTAMP(NOW(6))*1000000 AS SIGNED);"
	               "INSERT INTO bagstore_lag_history (at_us, lag_s) SELECT @bs_now, (@bs_now-watermark_us)/1e6"
	               " FROM bagstore_watermarks WHERE name='repair' AND watermark_us>0 AND NOT EXISTS"
	               " (SELECT 1 FROM bagstore_lag_history WHERE at_us>@bs_now-%lld)",
	               (long long)step);
	if (!(rc = bs__buf_ok(&b)) && !(rc = bs__shard_check(st, shard)))
		rc = bs__shard_exec(st, shard, b.ptr, b.len);
	bs__buf_free(&b);
	return rc;
}

int bs__lag_watermark(int64_t *out, bs_store_t *st, int shard)
{
	static const char q[] = "SELECT watermark_us FROM bagstore_watermarks WHERE name='repair'";
	MYSQL_RES *res;
	int rc = bs__shard_query(&res, st, shard, q, sizeof q - 1);
	*out = 0;
	if (rc)
		return rc;
	MYSQL_ROW row = mysql_fetch_row(res);
	if (row && row[0])
		*out = strtoll(row[0], NULL, 10);
	mysql_free_result(res);
	return 0;
}

/* The lag sample: the lag the shard had just before the watermark moved
 * (now minus the watermark the pass started from), at most one per step,
 * the oldest beyond twice the history dropped. */
static void sample_sql(bs_buf_t *b, int64_t from_us)
{
	int64_t step = (int64_t)(LAG_STEP_S * 1e6);
	bs__buf_printf(b,
	               "INSERT INTO bagstore_lag_history (at_us, lag_s) SELECT @bs_now, (@bs_now-%lld)/1e6 FROM DUAL"
	               " WHERE NOT EXISTS (SELECT 1 FROM bagstore_lag_history WHERE at_us>@bs_now-%lld);"
	               "DELETE FROM bagstore_lag_history WHERE at_us<@bs_now-%lld",
	               (long long)from_us, (long long)step, (long long)(step * BS_LAG_HISTORY * 2));
}

int bs__lag_record(bs_store_t *st, int shard, int64_t watermark_us, int64_t prev_us, int64_t pass_rows, int64_t repairs,
                   int64_t fills, double pass_seconds)
{
	bs_buf_t b = { 0 };
	int rc;
	double rps = pass_seconds > 0 ? (double)repairs / pass_seconds : 0;
	bs__buf_printf(&b,
	               "SET @bs_now=CAST(UNIX_TIMESTAMP(NOW(6))*1000000 AS SIGNED);"
	               "INSERT INTO bagstore_watermarks (name, watermark_us, last_pass_us, last_pass_rows, repairs, "
	               "repairs_per_s)"
	               " VALUES ('repair',%lld,@bs_now,%lld,%lld,%.3f) ON DUPLICATE KEY UPDATE"
	               " watermark_us=GREATEST(watermark_us,VALUES(watermark_us)), last_pass_us=VALUES(last_pass_us),"
	               " last_pass_rows=VALUES(last_pass_rows), repairs=repairs+VALUES(repairs),"
	               " repairs_per_s=VALUES(repairs_per_s);",
	               (long long)watermark_us, (long long)pass_rows, (long long)repairs, rps);
	/* fills of indexes still building: a row of their own ('fills', its
	 * total in repairs), apart from the drift repaired */
	if (fills > 0)
		bs__buf_printf(&b,
		               "INSERT INTO bagstore_watermarks (name, repairs) VALUES ('fills',%lld)"
		               " ON DUPLICATE KEY UPDATE repairs=repairs+VALUES(repairs);",
		               (long long)fills);
	sample_sql(&b, prev_us > 0 && prev_us < watermark_us ? prev_us : watermark_us);
	if (!(rc = bs__buf_ok(&b)) && !(rc = bs__shard_check(st, shard)))
		rc = bs__shard_exec(st, shard, b.ptr, b.len);
	bs__buf_free(&b);
	return rc;
}

static int lag_on(bs_store_t *st, int i, void *p)
{
	bs_lag_t *out = &((bs_lag_t *)p)[i];
	static const char q[] = "SELECT CAST(UNIX_TIMESTAMP(NOW(6))*1000000 AS SIGNED), w.watermark_us, w.last_pass_us,"
				" w.last_pass_rows, w.repairs_per_s, w.repairs, f.repairs FROM (SELECT 1) d"
				" LEFT JOIN bagstore_watermarks w ON w.name='repair'"
				" LEFT JOIN bagstore_watermarks f ON f.name='fills'";
	MYSQL_RES *res = NULL;
	bs_buf_t b = { 0 };
	int rc;
	if ((rc = bs__shard_check(st, i)) || (rc = bs__shard_query(&res, st, i, q, sizeof q - 1)))
		goto done;
	MYSQL_ROW row = mysql_fetch_row(res);
	int64_t now = row && row[0] ? strtoll(row[0], NULL, 10) : 0;
	out->watermark_us = row && row[1] ? strtoll(row[1], NULL, 10) : 0;
	out->last_pass_us = row && row[2] ? strtoll(row[2], NULL, 10) : 0;
	out->last_pass_rows = row && row[3] ? strtoll(row[3], NULL, 10) : 0;
	out->repairs_per_s = row && row[4] ? bs__strtod_c(row[4], NULL) : 0;
	out->repairs_total = row && row[5] ? strtoll(row[5], NULL, 10) : 0;
	out->fills_total = row && row[6] ? strtoll(row[6], NULL, 10) : 0;
	out->now_us = now;
	out->lag_s = out->watermark_us ? (double)(now - out->watermark_us) / 1e6 : -1;
	out->reachable = true;
	mysql_free_result(res);
	res = NULL;
	bs__buf_printf(&b,
	               "SELECT lag_s, at_us FROM (SELECT at_us, lag_s FROM bagstore_lag_history"
	               " ORDER BY at_us DESC LIMIT %d) h ORDER BY at_us",
	               BS_LAG_HISTORY);
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, i, b.ptr, b.len)))
		goto done;
	while ((row = mysql_fetch_row(res)) && out->nhistory < BS_LAG_HISTORY) {
		out->history_at_us[out->nhistory] = row[1] ? strtoll(row[1], NULL, 10) : 0;
		out->history[out->nhistory++] = row[0] ? bs__strtod_c(row[0], NULL) : 0;
	}
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	if (rc) /* bs__shard_each keeps only the first shard's message */
		snprintf(out->error, sizeof out->error, "%s", bs_last_error());
	return rc;
}

int bs_lag(bs_lag_t *out, bs_store_t *st)
{
	int *rcs = calloc((size_t)st->n, sizeof *rcs);
	int rc = 0, down = 0;
	BS_ERR_ALLOC(rcs);
	memset(out, 0, (size_t)st->n * sizeof *out);
	for (int i = 0; i < st->n; i++) {
		snprintf(out[i].shard, sizeof out[i].shard, "%s", st->shards[i].conf->name);
		out[i].history_step_s = LAG_STEP_S;
		out[i].lag_s = -1;
	}
	rc = bs__shard_each(st, NULL, lag_on, out, rcs);
	for (int i = 0; i < st->n; i++)
		if (rcs[i] == BS_EUNREACHABLE)
			down++;
	/* unreachable shards are reported, not an error, unless all are */
	if (rc == BS_EUNREACHABLE && down < st->n) {
		rc = 0;
		for (int i = 0; i < st->n && !rc; i++)
			if (rcs[i] && rcs[i] != BS_EUNREACHABLE) /* the first, with its own message */
				rc = bs_error(rcs[i], "%s", out[i].error);
		if (!rc)
			bs_error_clear();
	}
	free(rcs);
	return rc;
}

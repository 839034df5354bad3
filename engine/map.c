/*
 * map.c - the bucket map and bucket ownership (doc/DESIGN.md, "Buckets and
 * resharding"): the map's versions in bagstore_map (loading the highest
 * into the store's cache, checking it against the configuration, writing
 * the next version under the map lock), its creation by init (a new
 * store's first map, an older store's migration, new members), and each
 * shard's ownership states (bagstore_buckets), cached per shard by their
 * version, which every read and write of an entity or index row checks.
 *
 * The map is a cache of where buckets are; the ownership rows are the
 * truth. A store that finds a bucket refused follows the answer (the new
 * owner's name), or reads the map again.
 */
#include "internal.h"

#include <math.h>
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define MAP_KEEP 32    /* versions kept on every shard */
#define LOCK_WAIT_S 30 /* how long a map writer waits for the map lock */

/* ------------------------------------------------------------ a map version */

typedef struct {
	int64_t version; /* 0: none */
	int buckets;
	char store_id[33];
	int nnames;
	char (*names)[BS_NAME_MAX + 1];
	uint16_t *owners; /* per bucket: index into names */
} blob_t;

static void blob_free(blob_t *m)
{
	free(m->names);
	free(m->owners);
	memset(m, 0, sizeof *m);
}

static int blob_alloc(blob_t *m, int buckets, int nnames)
{
	m->buckets = buckets;
	m->nnames = nnames;
	m->names = calloc((size_t)(nnames ? nnames : 1), sizeof *m->names);
	m->owners = calloc((size_t)(buckets ? buckets : 1), sizeof *m->owners);
	if (!m->names || !m->owners) {
		blob_free(m);
		return bs_error(BS_ENOMEM, "out of memory for the bucket map");
	}
	return 0;
}

static int blob_find(const blob_t *m, const char *name)
{
	for (int k = 0; k < m->nnames; k++)
		if (!strcmp(m->names[k], name))
			return k;
	return -1;
}

/* Add a member owning nothing; its index. */
static int blob_add_name(blob_t *m, const char *name)
{
	char(*n)[BS_NAME_MAX + 1] = realloc(m->names, (size_t)(m->nnames + 1) * sizeof *n);
	if (!n)
		return bs_error(BS_ENOMEM, "out of memory for the bucket map");
	m->names = n;
	snprintf(m->names[m->nnames], sizeof m->names[0], "%s", name);
	return m->nnames++;
}

/* Forget member k (it owns no bucket). */
static void blob_drop_name(blob_t *m, int k)
{
	memmove(&m->names[k], &m->names[k + 1], (size_t)(m->nnames - k - 1) * sizeof *m->names);
	m->nnames--;
	for (int b = 0; b < m->buckets; b++)
		if (m->owners[b] > k)
			m->owners[b]--;
}

static int blob_owned(const blob_t *m, int k)
{
	int n = 0;
	for (int b = 0; b < m->buckets; b++)
		n += m->owners[b] == k;
	return n;
}

/* A row of `SELECT version, buckets, store_id, shards, owners`. */
static int blob_from_row(blob_t *m, MYSQL_ROW row, const unsigned long *lens, const char *where)
{
	int buckets = row[1] ? atoi(row[1]) : 0, nnames = 1, rc;
	const char *names = row[3] ? row[3] : "";
	memset(m, 0, sizeof *m);
	for (const char *p = names; *p; p++)
		nnames += *p == ',';
	if (buckets < 1 || buckets > 65536 || !row[2] || lens[2] != 32 || !*names || !row[4] ||
	    lens[4] != 2 * (unsigned long)buckets)
		return bs_error(BS_ECORRUPT, "%s: bagstore_map version %s does not parse", where,
		                row[0] ? row[0] : "?");
	if ((rc = blob_alloc(m, buckets, nnames)))
		return rc;
	m->version = strtoll(row[0], NULL, 10);
	memcpy(m->store_id, row[2], 32);
	int k = 0;
	for (const char *p = names; k < nnames; k++) {
		size_t len = strcspn(p, ",");
		snprintf(m->names[k], sizeof m->names[k], "%.*s", (int)(len < BS_NAME_MAX ? len : BS_NAME_MAX), p);
		p += len + (p[len] == ',');
	}
	const uint8_t *o = (const uint8_t *)row[4];
	for (int b = 0; b < buckets; b++) {
		m->owners[b] = (uint16_t)(o[2 * b] << 8 | o[2 * b + 1]);
		if (m->owners[b] >= nnames) {
			blob_free(m);
			return bs_error(BS_ECORRUPT, "%s: bagstore_map version %s gives bucket %d to no member", where,
			                row[0], b);
		}
	}
	return 0;
}

/* INSERT IGNORE of the version (an existing one is kept). */
static void blob_insert_sql(bs_buf_t *b, const blob_t *m)
{
	bs_buf_t names = { 0 };
	uint8_t *o = malloc((size_t)m->buckets * 2);
	for (int k = 0; k < m->nnames; k++) {
		bs__buf_puts(&names, k ? "," : "");
		bs__buf_puts(&names, m->names[k]);
	}
	if (!o) {
		b->oom = true;
		bs__buf_free(&names);
		return;
	}
	for (int x = 0; x < m->buckets; x++) {
		o[2 * x] = (uint8_t)(m->owners[x] >> 8);
		o[2 * x + 1] = (uint8_t)m->owners[x];
	}
	bs__buf_printf(b,
	               "INSERT IGNORE INTO bagstore_map (version, buckets, store_id, shards, owners) VALUES (%lld,%d,",
	               (long long)m->version, m->buckets);
	bs__buf_hex(b, m->store_id, strlen(m->store_id));
	bs__buf_puts(b, ",");
	bs__buf_hex(b, names.ptr ? names.ptr : "", names.len);
	bs__buf_puts(b, ",");
	bs__buf_hex(b, o, (size_t)m->buckets * 2);
	bs__buf_printf(b, ");DELETE FROM bagstore_map WHERE version<%lld", (long long)(m->version - MAP_KEEP));
	if (names.oom)
		b->oom = true;
	bs__buf_free(&names);
	free(o);
}

/* ------------------------------------------------------------ reading versions */

static const char latest_q[] =
	"SELECT version, buckets, store_id, shards, owners FROM bagstore_map ORDER BY version DESC LIMIT 1";

struct latest_arg {
	blob_t *per;    /* per shard; version 0 when it has none */
	bool *no_table; /* per shard: bagstore_map does not exist */
};

static int latest_on(bs_store_t *st, int i, void *p)
{
	struct latest_arg *a = p;
	MYSQL_RES *res = NULL;
	char label[192];
	int rc = bs__shard_query(&res, st, i, latest_q, sizeof latest_q - 1);
	if (rc) {
		if (rc == BS_ESQL && bs__shard_last_errno(st, i) == ER_NO_SUCH_TABLE) {
			a->no_table[i] = true;
			bs_error_clear();
			return 0;
		}
		return rc;
	}
	MYSQL_ROW row = mysql_fetch_row(res);
	if (row)
		rc = blob_from_row(&a->per[i], row, mysql_fetch_lengths(res),
		                   bs__shard_label(label, sizeof label, &st->shards[i]));
	mysql_free_result(res);
	return rc;
}

/* The highest version held by the shards in `which` (NULL: all) that
 * answer; *out version 0 when none holds one. With all_required, a shard
 * that does not answer is an error. */
static int latest(blob_t *out, bs_store_t *st, const bool *which, bool all_required)
{
	struct latest_arg a = { 0 };
	int *rcs = calloc((size_t)st->n, sizeof *rcs);
	int rc = 0, best = -1, answered = 0;
	a.per = calloc((size_t)st->n, sizeof *a.per);
	a.no_table = calloc((size_t)st->n, sizeof *a.no_table);
	memset(out, 0, sizeof *out);
	if (!rcs || !a.per || !a.no_table) {
		rc = bs__oom();
		goto done;
	}
	rc = bs__shard_each(st, which, latest_on, &a, rcs);
	if (rc && (all_required || rc != BS_EUNREACHABLE))
		goto done;
	for (int i = 0; i < st->n; i++) {
		if ((which && !which[i]) || rcs[i])
			continue;
		answered++;
		if (a.per[i].version && (best < 0 || a.per[i].version > a.per[best].version))
			best = i;
	}
	if (!answered)
		goto done; /* rc: the first shard's error */
	rc = 0;
	bs_error_clear();
	if (best >= 0) {
		*out = a.per[best];
		memset(&a.per[best], 0, sizeof a.per[best]);
	}
done:
	for (int i = 0; a.per && i < st->n; i++)
		blob_free(&a.per[i]);
	free(a.per);
	free(a.no_table);
	free(rcs);
	return rc;
}

/* ------------------------------------------------------------ the store's cache */

static void cache_free(bs__map_t *c)
{
	free(c->owner);
	free(c->names);
	free(c->name_shard);
	memset(c, 0, sizeof *c);
}

int bs__shard_by_name(const bs_store_t *st, const char *name)
{
	for (int i = 0; i < st->n; i++)
		if (!strcmp(st->shards[i].conf->name, name))
			return i;
	return -1;
}

/* The map m into the store's cache, checked against the configuration. */
static int install(bs_store_t *st, const blob_t *m)
{
	bs__map_t c = { 0 };
	int rc = 0;
	char held[33];
	if (bs__store_id_agree(held, st, m->store_id))
		return bs_error(BS_ECONFIG,
		                "the bucket map (version %lld) belongs to store %s, but a shard of this "
		                "configuration belongs to store %s: another shard list?",
		                (long long)m->version, m->store_id, held);
	c.owner = calloc((size_t)m->buckets, sizeof *c.owner);
	c.names = calloc((size_t)m->nnames, sizeof *c.names);
	c.name_shard = calloc((size_t)m->nnames, sizeof *c.name_shard);
	if (!c.owner || !c.names || !c.name_shard) {
		cache_free(&c);
		return bs_error(BS_ENOMEM, "out of memory for the bucket map");
	}
	for (int k = 0; k < m->nnames; k++) {
		memcpy(c.names[k], m->names[k], sizeof c.names[k]);
		c.name_shard[k] = bs__shard_by_name(st, m->names[k]);
		if (c.name_shard[k] < 0 && blob_owned(m, k)) {
			rc = bs_error(
				BS_ECONFIG,
				"the bucket map (version %lld) gives %d buckets to shard %s but the "
				"configuration (%s) does not list it: add it back (another shard list? to remove a "
				"shard, mark it `drain: true` and reshard first)",
				(long long)m->version, blob_owned(m, k), m->names[k],
				st->cfg->path ? st->cfg->path : "?");
			goto fail;
		}
	}
	for (int i = 0; i < st->n; i++)
		if (blob_find(m, st->shards[i].conf->name) < 0) {
			rc = bs_error(
				BS_ECONFIG,
				"shard %s is in the configuration (line %d) but not a member of the store's "
				"bucket map (version %lld): run `bagstore init` to add it (or is this another shard "
				"list?)",
				st->shards[i].conf->name, st->shards[i].conf->line, (long long)m->version);
			goto fail;
		}
	for (int b = 0; b < m->buckets; b++)
		c.owner[b] = c.name_shard[m->owners[b]];
	c.loaded = true;
	c.version = m->version;
	c.buckets = m->buckets;
	c.nnames = m->nnames;
	memcpy(c.store_id, m->store_id, sizeof c.store_id);
	cache_free(&st->map);
	st->map = c;
	return 0;
fail:
	cache_free(&c);
	return rc;
}

int bs__map_reload(bs_store_t *st)
{
	blob_t m;
	int rc = latest(&m, st, NULL, false);
	if (rc)
		return rc;
	if (!m.version)
		return bs_error(BS_ECONFIG, "no shard of this configuration holds a bucket map: run `bagstore init` "
		                            "(a store made by an older bagstore gets its map without moving a row)");
	rc = install(st, &m);
	blob_free(&m);
	return rc;
}

int bs__map_need(bs_store_t *st)
{
	return st->map.loaded ? 0 : bs__map_reload(st);
}

int bs__route_entity(int *shard, int *bucket, bs_store_t *st, const bs_id_t *id)
{
	int rc;
	if ((rc = bs__map_need(st)))
		return rc;
	*bucket = bs_route_id(id, st->map.buckets);
	*shard = st->map.owner[*bucket];
	if (*shard < 0)
		return bs_error(BS_ECONFIG, "bucket %d has no configured owner in the bucket map (version %lld)",
		                *bucket, (long long)st->map.version);
	return 0;
}

int bs__index_row_route(const bs_value_t **vals, bs_value_t *tmps, int *bucket, const bs_index_t *idx,
                        const bs_value_t *bag, const bs_store_t *st, bool *misfit)
{
	*bucket = bs__index_row_for(vals, tmps, idx, bag, st->map.buckets, misfit);
	return *bucket < 0 ? -1 : st->map.owner[*bucket];
}

/* ------------------------------------------------------------ ownership */

static int state_code(const char *s)
{
	if (!s)
		return BS__B_NONE;
	if (!strcmp(s, "owned"))
		return BS__B_OWNED;
	if (!strcmp(s, "leaving"))
		return BS__B_LEAVING;
	if (!strcmp(s, "incoming"))
		return BS__B_INCOMING;
	if (!strcmp(s, "gone"))
		return BS__B_GONE;
	return BS__B_NONE;
}

/* Read shard's states and their version, in one snapshot: its own, or
 * the export's the connection is in (a START TRANSACTION would end that
 * one). */
static int owned_load(bs_store_t *st, int shard)
{
	/* a bucket gone whose move has cleaned up is simply not this shard's */
#define OWNED_SQL "SELECT " BS__OV_SQL ";SELECT bucket, IF(state='gone' AND move_id=0,'',state) FROM bagstore_buckets"
	static const char q[] = "START TRANSACTION WITH CONSISTENT SNAPSHOT;" OWNED_SQL ";COMMIT";
	static const char in_snapshot[] = OWNED_SQL;
#undef OWNED_SQL
	bs_shard_t *sh = &st->shards[shard];
	MYSQL_RES *res[2];
	int rc;
	if ((rc = sh->in_snapshot ? bs__shard_query_sets(res, 2, st, shard, in_snapshot, sizeof in_snapshot - 1)
	                          : bs__shard_query_sets(res, 2, st, shard, q, sizeof q - 1)))
		return rc;
	if (!res[1]) {
		rc = bs_error(BS_ERROR, "shard %s: its ownership did not read back", st->shards[shard].conf->name);
		goto done;
	}
	if (!sh->bstate && !(sh->bstate = malloc((size_t)st->map.buckets))) {
		rc = bs__oom();
		goto done;
	}
	memset(sh->bstate, BS__B_NONE, (size_t)st->map.buckets);
	MYSQL_ROW row = mysql_fetch_row(res[0]);
	sh->owned_version = row && row[0] ? strtoll(row[0], NULL, 10) : 0;
	while ((row = mysql_fetch_row(res[1]))) {
		int b = row[0] ? atoi(row[0]) : -1;
		if (b >= 0 && b < st->map.buckets)
			sh->bstate[b] = (uint8_t)state_code(row[1]);
	}
done:
	mysql_free_result(res[0]);
	if (res[1])
		mysql_free_result(res[1]);
	return rc;
}

int bs__owned_at(const uint8_t **states, bool *exact, bs_store_t *st, int shard, int64_t version)
{
	bs_shard_t *sh = &st->shards[shard];
	int rc;
	*states = NULL;
	*exact = false;
	if ((rc = bs__map_need(st)) || (rc = bs__shard_check(st, shard)))
		return rc;
	if (!sh->bstate || version < 0 || sh->owned_version != version)
		if ((rc = owned_load(st, shard)))
			return rc;
	*states = sh->bstate;
	*exact = version < 0 || sh->owned_version == version;
	return 0;
}

/* A bucket's state and peer on shard, read now. */
static int bucket_row(int *state, char peer[BS_NAME_MAX + 1], bs_store_t *st, int shard, int bucket)
{
	bs_buf_t b = { 0 };
	MYSQL_RES *res = NULL;
	int rc;
	*state = BS__B_NONE;
	peer[0] = '\0';
	bs__buf_printf(&b, "SELECT state, peer FROM bagstore_buckets WHERE bucket=%d", bucket);
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, shard, b.ptr, b.len)))
		goto done;
	MYSQL_ROW row = mysql_fetch_row(res);
	if (row) {
		*state = state_code(row[0]);
		snprintf(peer, BS_NAME_MAX + 1, "%s", row[1] ? row[1] : "");
	}
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

/* shard holds bucket `incoming` from source, which says `gone` to shard:
 * the cut-over committed; make shard the owner (any reader or writer may). */
static int roll_forward(bool *denied, bs_store_t *st, int shard, int bucket)
{
	bs_buf_t b = { 0 };
	int rc;
	*denied = false;
	bs__buf_printf(&b,
	               "START TRANSACTION;UPDATE bagstore_buckets SET state='owned', peer='', move_id=0"
	               " WHERE bucket=%d AND state='incoming';UPDATE bagstore_meta SET v=v+ROW_COUNT()"
	               " WHERE k='owned_version';COMMIT",
	               bucket);
	if (!(rc = bs__buf_ok(&b)) && !(rc = bs__shard_check(st, shard)))
		rc = bs__shard_exec(st, shard, b.ptr, b.len);
	if (rc == BS_ESQL) {
		/* refused inside the transaction (an account without UPDATE there,
		 * the app's or the readonly one): end it, or the connection's next
		 * statements would run in it, their writes never committed */
		unsigned err = bs__shard_last_errno(st, shard);
		(void)bs__shard_exec(st, shard, "ROLLBACK", 8);
		*denied = bs__denied(err);
	}
	bs__buf_free(&b);
	return rc;
}

/* Where a refused bucket went, from the refusing shard's answer. */
static int follow(int *next, bs_store_t *st, int bucket, int from, int state, const char *peer)
{
	int p = peer[0] ? bs__shard_by_name(st, peer) : -1, rc;
	*next = -1;
	if (state == BS__B_GONE && p >= 0) {
		*next = p;
	} else if (state == BS__B_INCOMING && p >= 0) {
		/* the source still owns it, unless its cut-over committed */
		int ps;
		char pp[BS_NAME_MAX + 1];
		if ((rc = bucket_row(&ps, pp, st, p, bucket)))
			return rc;
		if (ps == BS__B_GONE && !strcmp(pp, st->shards[from].conf->name)) {
			bool denied;
			if (!st->cfg->read_only && (rc = roll_forward(&denied, st, from, bucket))) {
				if (!denied)
					return rc;
				bs_error_clear(); /* an account that may not write there
				                   * (the app's, the readonly one): the
				                   * mover does it */
			}
			*next = from;
		} else {
			*next = p;
		}
	}
	return 0;
}

int bs__map_moved(int *next, bs_store_t *st, int bucket, int from, const char *state, const char *peer)
{
	int rc, s = state_code(state);
	if (bs__owns((uint8_t)s)) {
		*next = from;
		return 0;
	}
	if ((rc = follow(next, st, bucket, from, s, peer ? peer : "")))
		return rc;
	if (*next < 0) {
		/* nothing to follow: the map, read again */
		if ((rc = bs__map_reload(st)))
			return rc;
		*next = st->map.owner[bucket];
	}
	if (*next >= 0)
		st->map.owner[bucket] = *next;
	if (*next < 0)
		return bs_error(BS_EUNREACHABLE, "bucket %d: no configured shard owns it (shard %s says %s%s%s)",
		                bucket, st->shards[from].conf->name, state ? state : "nothing",
		                peer && *peer ? ", peer " : "", peer ? peer : "");
	return 0;
}

/* ------------------------------------------------------------ the map lock */

/* The map lock lives on one server: the first member's, else the first
 * configured shard's (a new store). Locks are per server; the name carries
 * the database. */
static int map_lock_shard(const bs_store_t *st, const blob_t *m)
{
	int s = m && m->nnames ? bs__shard_by_name(st, m->names[0]) : -1;
	return s >= 0 ? s : 0;
}

static void map_lock_name(char buf[65], const bs_store_t *st, int shard)
{
	const char *db = st->shards[shard].conf->database ? st->shards[shard].conf->database : "";
	snprintf(buf, 65, "bagstore.map.%08lx", (unsigned long)crc32(0, (const Bytef *)db, (uInt)strlen(db)));
}

/* Release the map lock, keeping the error of rc (release clears it). */
static int map_unlock(int rc, bs_store_t *st, int shard, const char *name)
{
	char msg[1024];
	snprintf(msg, sizeof msg, "%s", bs_last_error());
	bs__lock_release(st, shard, name);
	if (rc)
		bs_error(rc, "%s", msg);
	return rc;
}

static int map_lock(bs_store_t *st, int shard, const char *name)
{
	bs_buf_t b = { 0 };
	MYSQL_RES *res = NULL;
	char label[192];
	int rc;
	bs__buf_puts(&b, "SELECT GET_LOCK(");
	bs__buf_hex(&b, name, strlen(name));
	bs__buf_printf(&b, ",%d)", LOCK_WAIT_S);
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, shard, b.ptr, b.len)))
		goto done;
	MYSQL_ROW row = mysql_fetch_row(res);
	if (!row || !row[0] || strcmp(row[0], "1"))
		rc = bs_error(BS_ECONFLICT, "%s: the bucket map's lock is held elsewhere (waited %d s)",
		              bs__shard_label(label, sizeof label, &st->shards[shard]), LOCK_WAIT_S);
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

/* Write m (a new version) to every shard in which (NULL: all). */
struct write_arg {
	const blob_t *m;
	bool all_required;
};

static int write_on(bs_store_t *st, int i, void *p)
{
	struct write_arg *a = p;
	bs_buf_t b = { 0 };
	int rc;
	blob_insert_sql(&b, a->m);
	if (!(rc = bs__buf_ok(&b)))
		rc = bs__shard_exec(st, i, b.ptr, b.len);
	bs__buf_free(&b);
	return rc;
}

static int map_write(bs_store_t *st, const blob_t *m, bool all_required)
{
	struct write_arg a = { m, all_required };
	int rc = bs__shard_each(st, NULL, write_on, &a, NULL);
	if (rc == BS_EUNREACHABLE && !all_required) {
		bs_error_clear(); /* that shard is given the version by the next writer or init */
		rc = 0;
	}
	return rc;
}

int bs__map_publish_move(bs_store_t *st, const int *buckets, int n, const char *target)
{
	blob_t m = { 0 };
	char lock[65];
	int rc, ls, t;
	if ((rc = bs__map_need(st)))
		return rc;
	ls = map_lock_shard(st, NULL);
	for (int k = 0; k < st->map.nnames; k++)
		if (st->map.name_shard[k] >= 0) {
			ls = st->map.name_shard[k];
			break;
		}
	map_lock_name(lock, st, ls);
	if ((rc = map_lock(st, ls, lock)))
		return rc;
	/* every shard: the newest version may be on one that does not
	 * answer, and the next number written over an older one would be
	 * two different maps of one version */
	if ((rc = latest(&m, st, NULL, true))) {
		rc = bs_error(rc, "publishing the bucket map needs every shard to answer: %s", bs_last_error());
		goto done;
	}
	if (!m.version) {
		rc = bs_error(BS_ECONFIG, "no shard holds a bucket map: run `bagstore init`");
		goto done;
	}
	if ((t = blob_find(&m, target)) < 0) {
		rc = bs_error(BS_ECONFIG, "shard %s is not a member of the bucket map (version %lld)", target,
		              (long long)m.version);
		goto done;
	}
	for (int k = 0; k < n; k++)
		if (buckets[k] >= 0 && buckets[k] < m.buckets)
			m.owners[buckets[k]] = (uint16_t)t;
	m.version++;
	if (!(rc = map_write(st, &m, false)))
		rc = install(st, &m);
done:
	rc = map_unlock(rc, st, ls, lock);
	blob_free(&m);
	return rc;
}

/* ------------------------------------------------------------ init */

/* What init finds on a shard. */
typedef struct {
	shard_meta_t meta;
	int64_t owned_rows; /* rows of bagstore_buckets */
} found_t;

static int found_on(bs_store_t *st, int i, void *p)
{
	found_t *f = &((found_t *)p)[i];
	static const char q[] = "SELECT COUNT(*) FROM bagstore_buckets";
	MYSQL_RES *res = NULL;
	int rc;
	if ((rc = bs__shard_meta(&f->meta, st, i)) || (rc = bs__shard_query(&res, st, i, q, sizeof q - 1)))
		return rc;
	MYSQL_ROW row = mysql_fetch_row(res);
	f->owned_rows = row && row[0] ? strtoll(row[0], NULL, 10) : 0;
	mysql_free_result(res);
	return 0;
}

static int default_buckets(int n)
{
	int b = n;
	while (b < 4096)
		b *= 2;
	return b;
}

/* The shards of an older bagstore (no map): they must be the first of the
 * configured list, in their recorded positions, with one fingerprint; the
 * count they record. 0 when none is. */
static int legacy_count(int *count, bs_store_t *st, const found_t *f)
{
	char label[192], fp[17];
	int first = -1;
	*count = 0;
	for (int i = 0; i < st->n; i++)
		if (f[i].meta.fingerprint[0] && !f[i].meta.store_id[0] && first < 0)
			first = i;
	if (first < 0)
		return 0;
	int n = f[first].meta.count;
	if (n < 1 || n > st->n)
		return bs_error(BS_ECONFIG,
		                "%s records a list of %d shards from an older bagstore, but the "
		                "configuration lists %d: every shard of the old list must be configured, first and in "
		                "its order",
		                bs__shard_label(label, sizeof label, &st->shards[first]), n, st->n);
	bs_config_t prefix = *st->cfg;
	prefix.nshards = n;
	bs_config_fingerprint(fp, &prefix);
	for (int i = 0; i < st->n; i++) {
		const shard_meta_t *m = &f[i].meta;
		bool old = i < n;
		if (old && (strcmp(m->fingerprint, fp) || m->index != i || m->count != n))
			return bs_error(BS_ECONFIG,
			                "%s: the older bagstore's list does not match the first %d configured shards "
			                "(it records fingerprint %s, position %d of %d; the configuration gives %s, "
			                "position %d "
			                "of %d): refusing to migrate it",
			                bs__shard_label(label, sizeof label, &st->shards[i]), n,
			                m->fingerprint[0] ? m->fingerprint : "none", m->index, m->count, fp, i, n);
		if (!old && m->fingerprint[0] && !m->store_id[0])
			return bs_error(BS_ECONFIG,
			                "%s belongs to another list of an older bagstore (fingerprint %s): "
			                "refusing to add it",
			                bs__shard_label(label, sizeof label, &st->shards[i]), m->fingerprint);
	}
	*count = n;
	return 0;
}

/* A new store's first map: the first n configured shards (all of them, or
 * an older bagstore's list) own b mod n; the others are members owning
 * nothing. */
static int first_map(blob_t *m, bs_store_t *st, int n)
{
	int buckets = st->cfg->buckets ? (int)st->cfg->buckets : default_buckets(n), rc;
	if (buckets % n)
		return bs_error(BS_ECONFIG,
		                "%s: buckets: %d is not a multiple of the %d shards of the store's first "
		                "map",
		                st->cfg->path ? st->cfg->path : "configuration", buckets, n);
	if ((rc = blob_alloc(m, buckets, st->n)))
		return rc;
	m->version = 1;
	bs_id_t r;
	bs_id_generate(&r);
	bs_id_hex(m->store_id, &r);
	for (int i = 0; i < st->n; i++)
		snprintf(m->names[i], sizeof m->names[i], "%s", st->shards[i].conf->name);
	for (int b = 0; b < buckets; b++)
		m->owners[b] = (uint16_t)(b % n);
	return 0;
}

/* Members the configuration added (they join owning nothing) or dropped
 * (they must own nothing; then the map forgets them). *changed tells. */
static int members(blob_t *m, bool *changed, bs_store_t *st)
{
	int rc;
	*changed = false;
	for (int i = 0; i < st->n; i++)
		if (blob_find(m, st->shards[i].conf->name) < 0) {
			if ((rc = blob_add_name(m, st->shards[i].conf->name)) < 0)
				return rc;
			*changed = true;
		}
	for (int k = m->nnames - 1; k >= 0; k--) {
		if (bs__shard_by_name(st, m->names[k]) >= 0)
			continue;
		int owned = blob_owned(m, k);
		if (owned)
			return bs_error(
				BS_ECONFIG,
				"the bucket map (version %lld) gives %d buckets to shard %s but the "
				"configuration does not list it: add it back (another shard list? to remove a shard, "
				"mark it `drain: true`, reshard, then remove it)",
				(long long)m->version, owned, m->names[k]);
		blob_drop_name(m, k);
		*changed = true;
	}
	return 0;
}

struct join_arg {
	const blob_t *m;
	const found_t *f;
	int legacy;   /* the older list's count, or 0 */
	bool created; /* m is the store's first map, made by this init */
};

/* One shard joins (or re-joins, after an interrupted init) the map: the
 * map's version, its ownership rows when it never had any, then its
 * identity, last (the identity says the rest is done). */
static int join_on(bs_store_t *st, int i, void *p)
{
	struct join_arg *a = p;
	const shard_meta_t *meta = &a->f[i].meta;
	const char *name = st->shards[i].conf->name;
	char label[192];
	bs_buf_t b = { 0 };
	int rc, k = blob_find(a->m, name);
	if (meta->store_id[0] && strcmp(meta->store_id, a->m->store_id))
		return bs_error(BS_ECONFIG, "%s belongs to another store (id %s; this one is %s): refusing to add it",
		                bs__shard_label(label, sizeof label, &st->shards[i]), meta->store_id, a->m->store_id);
	if (meta->name[0] && strcmp(meta->name, name))
		return bs_error(BS_ECONFIG,
		                "%s records that it is shard %s, but the configuration calls it %s: refusing "
		                "to initialise it (another shard list? a shard's name goes with its address)",
		                bs__shard_label(label, sizeof label, &st->shards[i]), meta->name, name);
	bs__buf_puts(&b, "INSERT IGNORE INTO bagstore_meta (k, v) VALUES ('owned_version','1')");
	if (!meta->store_id[0] && a->f[i].owned_rows == 0 && k >= 0) {
		int count = 0;
		for (int x = 0; x < a->m->buckets; x++) {
			if (a->m->owners[x] != k)
				continue;
			bs__buf_puts(&b,
			             count++ ? "," : ";INSERT IGNORE INTO bagstore_buckets (bucket, state) VALUES ");
			bs__buf_printf(&b, "(%d,'owned')", x);
		}
	}
	if (a->created && !a->legacy) { /* the first list, as older bagstores recorded it */
		char fp[17];
		bs_config_fingerprint(fp, st->cfg);
		bs__buf_puts(&b, ";INSERT IGNORE INTO bagstore_meta (k, v) VALUES ('fingerprint',");
		bs__buf_hex(&b, fp, strlen(fp));
		bs__buf_printf(&b, "),('shard_index',%d),('shard_count',%d)", i, st->n);
	}
	bs__buf_puts(&b, ";INSERT INTO bagstore_meta (k, v) VALUES ('store_id',");
	bs__buf_hex(&b, a->m->store_id, strlen(a->m->store_id));
	bs__buf_puts(&b, "),('shard_name',");
	bs__buf_hex(&b, name, strlen(name));
	bs__buf_puts(&b, "),('schema_version',");
	bs__buf_uint(&b, BS__SCHEMA_VERSION);
	bs__buf_puts(&b, ") ON DUPLICATE KEY UPDATE v=VALUES(v)");
	if (!(rc = bs__buf_ok(&b)))
		rc = bs__shard_exec(st, i, b.ptr, b.len);
	bs__buf_free(&b);
	return rc;
}

/* ------------------------------------------------------------ before init creates anything */

/* What a shard records before init touches it: its identity (when it has
 * bagstore_meta) and the store of its newest map version (when it has
 * bagstore_map). */
typedef struct {
	bool made;
	found_t f;
	char map_store[33];
} pre_t;

static int pre_on(bs_store_t *st, int i, void *p)
{
	pre_t *a = &((pre_t *)p)[i];
	static const char q[] =
		"SELECT COALESCE(SUM(TABLE_NAME='bagstore_meta'),0), COALESCE(SUM(TABLE_NAME='bagstore_map'),0)"
		" FROM information_schema.TABLES WHERE TABLE_SCHEMA=DATABASE()"
		" AND TABLE_NAME IN ('bagstore_meta','bagstore_map')";
	static const char mq[] = "SELECT store_id FROM bagstore_map ORDER BY version DESC LIMIT 1";
	MYSQL_RES *res = NULL;
	bool has_map;
	int rc = bs__shard_query(&res, st, i, q, sizeof q - 1);
	if (rc)
		return rc;
	MYSQL_ROW row = mysql_fetch_row(res);
	a->made = row && row[0] && strcmp(row[0], "0") != 0;
	has_map = row && row[1] && strcmp(row[1], "0") != 0;
	mysql_free_result(res);
	res = NULL;
	if (a->made && (rc = bs__shard_meta(&a->f.meta, st, i)))
		return rc;
	if (has_map && !(rc = bs__shard_query(&res, st, i, mq, sizeof mq - 1))) {
		row = mysql_fetch_row(res);
		if (row && row[0])
			snprintf(a->map_store, sizeof a->map_store, "%s", row[0]);
		mysql_free_result(res);
	}
	return rc;
}

/* Every shard's identity against the configuration and the others': a
 * name that is not the configuration's for that address, two stores, an
 * older bagstore's shard of another list. */
static int pre_agree(bs_store_t *st, const pre_t *p)
{
	char label[192], other[192];
	int first = -1; /* a shard recording a store, and which */
	const char *store = NULL;
	for (int i = 0; i < st->n; i++) {
		const shard_meta_t *m = &p[i].f.meta;
		const char *ids[2] = { m->store_id, p[i].map_store };
		if (m->name[0] && strcmp(m->name, st->shards[i].conf->name))
			return bs_error(
				BS_ECONFIG,
				"%s records that it is shard %s, but the configuration calls it %s: "
				"refusing to initialise anything (another shard list? a shard's name goes with its "
				"address)",
				bs__shard_label(label, sizeof label, &st->shards[i]), m->name,
				st->shards[i].conf->name);
		for (int k = 0; k < 2; k++) {
			if (!ids[k][0])
				continue;
			if (!store) {
				store = ids[k];
				first = i;
			} else if (strcmp(store, ids[k])) {
				return bs_error(BS_ECONFIG,
				                "%s belongs to store %s, but %s belongs to store %s: refusing to "
				                "initialise anything (another shard list?)",
				                bs__shard_label(label, sizeof label, &st->shards[first]), store,
				                bs__shard_label(other, sizeof other, &st->shards[i]), ids[k]);
			}
		}
	}
	for (int i = 0; i < st->n && store; i++) {
		const shard_meta_t *m = &p[i].f.meta;
		/* an older bagstore's shard: one of this store's, half migrated (it
		 * holds the store's map), or another list's */
		if (m->fingerprint[0] && !m->store_id[0] && !p[i].map_store[0])
			return bs_error(BS_ECONFIG,
			                "%s belongs to a list of an older bagstore (fingerprint %s), not to "
			                "store %s: refusing to initialise anything",
			                bs__shard_label(label, sizeof label, &st->shards[i]), m->fingerprint, store);
	}
	return 0;
}

int bs__map_precheck(bs_store_t *st)
{
	pre_t *p = calloc((size_t)st->n, sizeof *p);
	found_t *f = calloc((size_t)st->n, sizeof *f);
	blob_t m = { 0 };
	int rc, legacy = 0;
	bool any_store = false;
	if (!p || !f) {
		rc = bs__oom();
		goto done;
	}
	if ((rc = bs__shard_each(st, NULL, pre_on, p, NULL)) || (rc = pre_agree(st, p)))
		goto done;
	for (int i = 0; i < st->n; i++) {
		const shard_meta_t *meta = &p[i].f.meta;
		f[i] = p[i].f;
		any_store |= meta->store_id[0] || p[i].map_store[0];
		/* a shard an older bagstore initialised (its store recorded, or
		 * only the fingerprint of its list, or a map half migrated): init
		 * brings its tables up to date, and its roles' grants may lack
		 * the new ones */
		if (p[i].made && (meta->store_id[0] || meta->fingerprint[0] || p[i].map_store[0]) &&
		    meta->schema < BS__SCHEMA_VERSION) {
			size_t len = strlen(st->upgraded);
			snprintf(st->upgraded + len, sizeof st->upgraded - len, "%s%s", len ? ", " : "",
			         st->shards[i].conf->name);
			if (!st->nupgraded++ || meta->schema < st->upgraded_from)
				st->upgraded_from = meta->schema;
		}
	}
	if (!any_store) { /* an older store's shards: the list they record, checked */
		rc = legacy_count(&legacy, st, f);
		goto done;
	}
	/* the map's members owning buckets are all configured */
	bool changed;
	if (!(rc = latest(&m, st, NULL, false)) && m.version)
		rc = members(&m, &changed, st);
done:
	blob_free(&m);
	free(p);
	free(f);
	return rc;
}

/* The map init leaves: the highest version found, or a new store's first
 * (an older store's migration included); then members added or dropped. */
static int init_map(blob_t *m, bool *created, int *legacy, bs_store_t *st, const found_t *f)
{
	bool changed = false;
	int rc;
	*created = false;
	*legacy = 0;
	if ((rc = latest(m, st, NULL, true)))
		return rc;
	if (!m->version) {
		for (int i = 0; i < st->n; i++)
			if (f[i].meta.store_id[0])
				return bs_error(BS_ECONFIG,
				                "shard %s records store %s but no shard holds its bucket map",
				                st->shards[i].conf->name, f[i].meta.store_id);
		if ((rc = legacy_count(legacy, st, f)) || (rc = first_map(m, st, *legacy ? *legacy : st->n)))
			return rc;
		*created = true;
		return 0;
	}
	if ((rc = members(m, &changed, st)))
		return rc;
	if (changed)
		m->version++;
	return 0;
}

int bs__map_init(bs_store_t *st)
{
	found_t *f = calloc((size_t)st->n, sizeof *f);
	blob_t m = { 0 };
	char lock[65];
	int rc, ls = 0;
	bool locked = false;
	BS_ERR_ALLOC(f);
	for (int i = 0; i < st->n; i++)
		st->shards[i].fp_state = 0;
	bs__store_id_agree(NULL, st, NULL);
	/* under the map lock: of the existing map's first member, else shard 0 */
	if ((rc = latest(&m, st, NULL, true)))
		goto done;
	ls = map_lock_shard(st, &m);
	blob_free(&m);
	map_lock_name(lock, st, ls);
	if ((rc = map_lock(st, ls, lock)))
		goto done;
	locked = true;
	if ((rc = bs__shard_each(st, NULL, found_on, f, NULL)))
		goto done;
	struct join_arg a = { &m, f, 0, false };
	if ((rc = init_map(&m, &a.created, &a.legacy, st, f)))
		goto done;
	/* the version first, everywhere; then each shard's rows and identity */
	if ((rc = map_write(st, &m, true)) || (rc = bs__shard_each(st, NULL, join_on, &a, NULL)))
		goto done;
	for (int i = 0; i < st->n; i++)
		st->shards[i].fp_state = 0;
	rc = install(st, &m);
done:
	if (locked)
		rc = map_unlock(rc, st, ls, lock);
	blob_free(&m);
	free(f);
	return rc;
}

/* ------------------------------------------------------------ rows read back */

int bs__column_bucket(const bs_store_t *st, const bs_prop_t *prop, const char *raw, unsigned long len)
{
	bs_value_t v;
	int b;
	if (!raw)
		return -1;
	bs_value_nil(&v);
	switch (prop->type) {
	case BS_COL_UUID:
	case BS_COL_BINARY:
		if (bs_value_bin(&v, raw, len))
			return -1;
		break;
	case BS_COL_STRING:
		if (bs_value_str(&v, raw, len))
			return -1;
		break;
	case BS_COL_INT: bs_value_int(&v, strtoll(raw, NULL, 10)); break;
	case BS_COL_FLOAT: bs_value_float(&v, bs__strtod_c(raw, NULL)); break;
	case BS_COL_BOOL: bs_value_bool(&v, atoi(raw) != 0); break;
	}
	b = bs_route_value(&v, prop, st->map.buckets);
	bs_value_clear(&v);
	return b;
}

int bs__column_bucket_zero(const bs_store_t *st, const bs_prop_t *prop, const char *raw, unsigned long len, int b)
{
	bs_value_t v;
	if (!raw || prop->type != BS_COL_FLOAT || bs__strtod_c(raw, NULL) != 0.0)
		return b;
	(void)len;
	bs_value_float(&v, signbit(bs__strtod_c(raw, NULL)) ? 0.0 : -0.0);
	b = bs_route_value(&v, prop, st->map.buckets);
	bs_value_clear(&v);
	return b;
}

bool bs__map_covered(const bs_store_t *st, const uint8_t *const *states)
{
	for (int b = 0; b < st->map.buckets; b++) {
		bool owned = false;
		for (int i = 0; i < st->n && !owned; i++)
			owned = states[i] && bs__owns(states[i][b]);
		if (!owned)
			return false;
	}
	return true;
}

/* ------------------------------------------------------------ learning from a refusal */

int bs__map_learn(bs_store_t *st, int shard, const int *buckets, int n)
{
	bs_buf_t b = { 0 };
	MYSQL_RES *res = NULL;
	bool reload = false;
	int rc;
	if (!n)
		return 0;
	bs__buf_puts(&b, "SELECT bucket, state, peer FROM bagstore_buckets WHERE bucket IN (-1");
	for (int k = 0; k < n; k++)
		bs__buf_printf(&b, ",%d", buckets[k]);
	bs__buf_puts(&b, ")");
	if ((rc = bs__buf_ok(&b)) || (rc = bs__shard_query(&res, st, shard, b.ptr, b.len)))
		goto done;
	int seen = 0;
	MYSQL_ROW row;
	while ((row = mysql_fetch_row(res)) && !rc) {
		int bucket = row[0] ? atoi(row[0]) : -1, next = -1, s = state_code(row[1]);
		seen++;
		if (bucket < 0 || bucket >= st->map.buckets || bs__owns((uint8_t)s))
			continue;
		if ((rc = follow(&next, st, bucket, shard, s, row[2] ? row[2] : "")))
			break;
		if (next >= 0)
			st->map.owner[bucket] = next;
		else
			reload = true;
	}
	if (!rc && (reload || seen < n)) /* a bucket it never had: the map again */
		rc = bs__map_reload(st);
done:
	if (res)
		mysql_free_result(res);
	bs__buf_free(&b);
	return rc;
}

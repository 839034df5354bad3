#!/bin/sh
# test_collect.sh - the lists read from every shard at once through one
# collector (engine/collect.c): the backfill jobs list, the workers list
# (one worker's rows on two shards merged), the audit log and the census.
# Each answers from the shards that answer and says how many did not; a
# failure other than a shard down fails the list naming its shard and
# carrying MySQL's message, even while another shard is down; none
# answering fails it too, each list with its own words.
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
T=$(t_tmp)

t_exit 0 "init" -- "$B" -c "$C" init
i=0
while [ $i -lt 40 ]; do
	printf '{"k": %d, "n": %d}\n' $((i % 7)) $i
	i=$((i + 1))
done >"$T/docs.jsonl"
t_exit 0 "put 40 entities" -- "$B" -c "$C" put "$T/docs.jsonl"
t_exit 0 "create by_k (its backfill queued on both shards)" -- "$B" -c "$C" index create by_k --on k:int --shard-on k
# one worker registered on both shards (fresher on s1), another on s0 only
for s in 0 1; do
	t_sql "$s" "INSERT INTO bagstore_workers (worker_id, kind, host, pid, version, started_us, heartbeat, jobs)
		VALUES ('w1aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'cleaner', 'hostw1', 11, 't', 1, NOW(6) - INTERVAL $((1 - s)) SECOND, 'from-s$s')" >/dev/null
done
t_sql 0 "INSERT INTO bagstore_workers (worker_id, kind, host, pid, version, started_us, heartbeat)
	VALUES ('w2bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', 'cleaner', 'hostw2', 22, 't', 2, NOW(6))" >/dev/null

# ------------------------------------------------------------ every shard up
t_exit 0 "backfill list" -- "$B" -c "$C" backfill list --json
t_contains "$T_OUT" '"shard": "s0"' "a job from s0"
t_contains "$T_OUT" '"shard": "s1"' "a job from s1"
t_exit 0 "workers" -- "$B" -c "$C" workers --json
t_eq "$(printf '%s' "$T_OUT" | grep -c '"id": "w1a')" 1 "w1, on both shards, listed once"
t_contains "$T_OUT" '"shards": 2' "w1 counted on 2 shards"
t_contains "$T_OUT" 'from-s1' "w1's fields from its freshest row (s1's)"
t_contains "$T_OUT" 'hostw2' "w2, on s0 only, listed"
t_exit 0 "audit" -- "$B" -c "$C" audit
t_contains "$T_OUT" "entity.put" "the audit log lists the put"

# ------------------------------------------------------------ s1 down
sh "$SHARDS_SH" stop-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
t_exit 1 "backfill list with s1 down exits 1" -- "$B" -c "$C" backfill list --json
t_contains "$T_OUT" '"shard": "s0"' "s0's job still listed"
case $T_OUT in *'"shard": "s1"'*) t_fail "no job of s1" "$T_OUT" ;; *) t_ok "no job of s1" ;; esac
t_contains "$T_ERR" "1 shard did not answer: their jobs are not listed (shard s1" "it says the list is incomplete, and which shard"
t_exit 1 "workers with s1 down exits 1" -- "$B" -c "$C" workers --json
t_contains "$T_OUT" '"shards": 1' "w1 now counted on 1 shard"
t_contains "$T_OUT" 'from-s0' "w1's fields from s0's row"
t_contains "$T_ERR" "1 shard did not answer: a worker only they list is not shown (shard s1" "it says the list is incomplete, and which shard"
t_exit 1 "audit with s1 down exits 1" -- "$B" -c "$C" audit
t_contains "$T_OUT" "entity.put" "s0's rows still listed"
t_match "$T_ERR" "1 shard did not answer: their rows are not listed \(.*s1" "naming the shard left out"

# a failure other than a shard down, while another shard is down (s0, the
# first: its message must not stand for s1's failure): it fails the list,
# naming its shard and carrying MySQL's message
sh "$SHARDS_SH" start-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
sh "$SHARDS_SH" stop-one s0 --dir "$SHARDS_DIR" >/dev/null 2>&1
t_sql 1 "RENAME TABLE bagstore_jobs TO bagstore_jobs_away" >/dev/null
t_exit 1 "backfill list, s1's table gone, s0 down" -- "$B" -c "$C" backfill list
t_contains "$T_ERR" "listing backfill jobs: shard s1" "the list's own words, naming the failing shard"
t_contains "$T_ERR" "bagstore_jobs" "with MySQL's message"
case $T_ERR in *"no shard answered"*|*"did not answer"*) t_fail "not taken for a shard down" "$T_ERR" ;; *) t_ok "not taken for a shard down" ;; esac
t_sql 1 "RENAME TABLE bagstore_jobs_away TO bagstore_jobs" >/dev/null
t_sql 1 "RENAME TABLE bagstore_workers TO bagstore_workers_away" >/dev/null
t_exit 2 "workers, s1's registry gone, s0 down" -- "$B" -c "$C" workers
t_contains "$T_ERR" "listing workers: shard s1" "the list's own words, naming the failing shard"
t_contains "$T_ERR" "no worker registry (bagstore_workers)" "the registry's own message"
t_sql 1 "RENAME TABLE bagstore_workers_away TO bagstore_workers" >/dev/null
t_sql 1 "RENAME TABLE entities TO entities_away" >/dev/null
t_exit 1 "census, s1's entities gone, s0 down" -- "$B" -c "$C" properties --sample 100
t_contains "$T_ERR" "s1" "the census names the failing shard"
t_contains "$T_ERR" "entities" "with MySQL's message"
case $T_ERR in *"s0"*) t_fail "not the down shard's message" "$T_ERR" ;; *) t_ok "not the down shard's message" ;; esac
t_sql 1 "RENAME TABLE entities_away TO entities" >/dev/null
sh "$SHARDS_SH" stop-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1

# ------------------------------------------------------------ every shard down
t_exit 1 "backfill list with every shard down" -- "$B" -c "$C" backfill list
t_contains "$T_ERR" "no shard answered for the jobs list" "the jobs list's words"
t_exit 1 "workers with every shard down" -- "$B" -c "$C" workers
t_contains "$T_ERR" "no shard answered for the workers list" "the workers list's words"
t_exit 1 "audit with every shard down" -- "$B" -c "$C" audit
t_match "$T_ERR" "no shard answered for the audit log: .*s0" "the audit log's words, with the first shard's message"
sh "$SHARDS_SH" start-one s0 --dir "$SHARDS_DIR" >/dev/null 2>&1
sh "$SHARDS_SH" start-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1

t_exit 0 "backfill list once both are back" -- "$B" -c "$C" backfill list --json
t_contains "$T_OUT" '"shard": "s1"' "s1's job listed again"

t_done

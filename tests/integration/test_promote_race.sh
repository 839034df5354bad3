#!/bin/sh
# test_promote_race.sh - the repair that makes a backfilled index ready
# leaves no stale row behind, even for an entity a writer changes behind
# the pass's cursor.
#
# Found by CI (test_backfill_writers: one stale row after ready): a
# backfill chunk read an entity, a writer changed it and wrote its own
# index rows, then the chunk wrote a row from the old body. The promotion's
# repair pass, reading newest first, would fix that row, but the writer
# changed the entity again after the pass had gone by; the writer's own
# index writes remove the rows of the body it replaced, not the chunk's
# row, so the stale row stayed. Here the chunk's row is written by hand,
# the pass is stopped after its first batch (fault pause_repair_batch) and
# the entity changed behind it: the promotion must still leave no drift.
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
T=$(t_tmp)
T_TIMEOUT=120

uuid() { printf '%08x-0000-4000-8000-%012x' "$1" "$2"; }
hex() { printf '%s' "$1" | tr -d -; }

t_exit 0 "init" -- "$B" -c "$C" init
for k in 1 2 3 4 5; do printf '{"id":{"$uuid":"%s"},"v":%d}\n' "$(uuid 1 "$k")" "$k"; done >"$T/first.jsonl"
t_exit 0 "a few entities" -- "$B" -c "$C" put "$T/first.jsonl"
t_exit 0 "index ix_p on v (shard_on v), building" -- "$B" -c "$C" index create ix_p --on v:int --shard-on v
t_eq "$(t_sql 0 "SELECT state FROM bagstore_indexes WHERE name='ix_p'")" building "ix_p is building (no cleaner yet)"

# E: on s0 (its id's last byte is even), v=2 (its row on s0 too), written
# before 3,000 others, so that on s0 it is past the pass's first batch
E=$(uuid 2 2)
printf '{"id":{"$uuid":"%s"},"v":2}\n' "$E" >"$T/e.json"
t_exit 0 "E, v=2" -- "$B" -c "$C" put "$T/e.json"
sleep 0.05
i=0
while [ $i -lt 3000 ]; do
	printf '{"id":{"$uuid":"%s"},"v":%d}\n' "$(uuid 3 "$i")" "$((i % 50))"
	i=$((i + 1))
done >"$T/many.jsonl"
t_exit 0 "3,000 more entities" -- "$B" -c "$C" put "$T/many.jsonl"
t_eq "$([ "$(t_sql 0 "SELECT COUNT(*) FROM entities")" -gt 1000 ] && echo yes)" yes "s0 holds more than one repair batch"
t_eq "$(t_sql 0 "SELECT v FROM ix_p WHERE entity_id=X'$(hex "$E")'")" 2 "E's row on s0: v=2"
# the row a backfill chunk would have written from an older body (v=5,
# on s1: a shard holds one row per entity)
t_sql 1 "INSERT INTO ix_p (v, entity_id) VALUES (5, X'$(hex "$E")')" >/dev/null

BAGSTORE_FAULT=pause_repair_batch "$B" -c "$C" cleaner --index ix_p >"$T/bf.out" 2>"$T/bf.err" &
bf=$!
t_eq "$(t_stopped $bf 30)" 1 "the promotion's repair pass stopped after its first batch"
t_contains "$(cat "$T/bf.err")" "pause_repair_batch: a repair pass on shard 0" "on s0"
# the writer changes E behind the pass's cursor: its index writes remove
# v=2's row, not v=5's
printf '{"id":{"$uuid":"%s"},"v":6}\n' "$E" >"$T/e6.json"
t_exit 0 "E changed to v=6 while the pass is stopped" -- "$B" -c "$C" put "$T/e6.json"
t_eq "$(t_sql 0 "SELECT v FROM ix_p WHERE entity_id=X'$(hex "$E")'") $(t_sql 1 "SELECT v FROM ix_p WHERE entity_id=X'$(hex "$E")'")" "6 5" \
	"E's rows: the writer's v=6 on s0 and the stale v=5 on s1"
kill -CONT $bf
wait $bf
t_eq "$?" 0 "the backfill and promotion end"
t_contains "$(cat "$T/bf.out")" "index ix_p is ready" "ix_p is ready"
t_eq "$(t_sql 0 "SELECT GROUP_CONCAT(v ORDER BY v) FROM ix_p WHERE entity_id=X'$(hex "$E")'")" 6 \
	"E's rows on s0: only v=6"
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM ix_p WHERE entity_id=X'$(hex "$E")'")" 0 "and none on s1"
t_exit 0 "verify ix_p: no drift" -- "$B" -c "$C" verify --index ix_p
t_contains "$T_OUT" "3006 entities checked, 0 missing, 0 stale, 0 orphaned" "verify: 3006 checked, none stale"

t_done test_promote_race

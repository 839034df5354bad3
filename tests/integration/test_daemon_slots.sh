#!/bin/sh
# test_daemon_slots.sh - a daemon outlives the indexes it backfills: one that
# runs while more indexes than it has backfill slots (32) come and go, each
# created, backfilled and dropped in turn, backfills every one of them. (It
# kept a slot per index name for its whole life: the 33rd index waited
# forever.)
. tests/lib.sh

B=$BAGSTORE
T=$(t_tmp)
# No writer puts beside the indexes: the catalog's TTL (which each index's
# promotion and drop wait out, 68 times) is only waiting here
C=$T/c.yaml
sed 's/^catalog_ttl:.*/catalog_ttl: 0.1/' "$BAGSTORE_TEST_CONFIG" >"$C"
T_TIMEOUT=60
sum() { awk '{ s += $1 } END { print s + 0 }'; }

t_exit 0 "init" -- "$B" -c "$C" init
for i in $(seq 1 20); do printf '{"a": %d}\n' "$i"; done >"$T/e.jsonl"
t_exit 0 "20 entities" -- "$B" -c "$C" put "$T/e.jsonl"
{ cat "$C"; printf 'cleaner:\n  repair_interval: 0.2\n'; } >"$T/d.yaml"
"$B" -c "$T/d.yaml" cleaner >"$T/d.out" 2>"$T/d.err" &
dpid=$!

state() { t_sql 0 "SELECT state FROM bagstore_indexes WHERE name='$1'"; }
ready() { [ "$(state "$1")" = ready ]; }
n=0
for i in $(seq 1 34); do
	"$B" -c "$C" index create "ix_$i" --on a:int --shard-on a >/dev/null 2>"$T/create.err" || break
	t_wait 30 ready "ix_$i" || break
	"$B" -c "$C" index drop "ix_$i" --yes >/dev/null 2>&1 || break
	n=$i
done
t_eq "$n" 34 "34 indexes in turn, each backfilled by the one daemon (the last: $(state "ix_$((n + 1))"); $(cat "$T/create.err"))"
if kill -0 "$dpid" 2>/dev/null; then t_ok "the daemon still runs"; else t_fail "the daemon still runs" "$(tail -3 "$T/d.err")"; fi
kill -TERM "$dpid"
wait "$dpid"
t_eq "$?" 0 "and stops cleanly"
t_done test_daemon_slots

#!/bin/sh
# test_bulk_kill.sh - a bulk put SIGKILLed between its entities and their
# index rows. Its entities went in through the fence's fast form, where
# each shard's intents are written in the same statement as its entities
# (from the rows just written, with their versions): every entity written
# has its intent, at the version written, and nothing else does; once the
# process is gone (its named lock with it) `cleaner --once` makes the
# index rows what the bodies say and removes the intents.
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
T=$(t_tmp)

t_exit 0 "init" -- "$B" -c "$C" init
t_exit 0 "an index on g" -- "$B" -c "$C" index create ix_g --on g:int --shard-on g

# 300 entities on both shards, g = i, then again with g = i + 1001: every
# index row changes value and shard (the parity of g flips)
python3 -c 'import json
for i in range(300):
    print(json.dumps({"id": {"$uuid": "%08x-0000-4000-8000-0000000e%04x" % (i, i)}, "g": i}))' >"$T/v1.jsonl"
python3 -c 'import json
for i in range(300):
    print(json.dumps({"id": {"$uuid": "%08x-0000-4000-8000-0000000e%04x" % (i, i)}, "g": i + 1001, "v": 2}))' >"$T/v2.jsonl"
t_exit 0 "put 300" -- "$B" -c "$C" put --batch 300 "$T/v1.jsonl"
t_exit 0 "their index is right" -- "$B" -c "$C" verify --index ix_g

BAGSTORE_FAULT=pause_before_index_rows "$B" -c "$C" put --batch 300 "$T/v2.jsonl" >"$T/p.out" 2>"$T/p.err" &
p=$!
stopped=""
for _ in $(seq 1 200); do
	if [ "$(awk '{print $3}' /proc/$p/stat 2>/dev/null)" = T ]; then stopped=1; break; fi
	sleep 0.1
done
t_eq "$stopped" 1 "the put stopped between its entities and their index rows"
kill -9 $p
wait $p 2>/dev/null
sum() { (t_sql 0 "$1"; t_sql 1 "$1") | awk '{ n += $1 } END { print n + 0 }'; }
t_eq "$(sum "SELECT COUNT(*) FROM entities")" 300 "300 entities"
t_eq "$(sum "SELECT COUNT(*) FROM ix_g WHERE g>1000")" 0 "none of the new index rows is written"
t_eq "$(sum "SELECT COUNT(*) FROM ix_g WHERE g<1000")" 300 "the old ones stand: real drift"
t_eq "$(sum "SELECT COUNT(*) FROM bagstore_intents")" 300 "one intent per entity written"
t_eq "$(sum "SELECT COUNT(*) FROM bagstore_intents i JOIN entities e ON e.id=i.entity_id AND e.updated=i.ver")" 300 \
	"each at the version written, on the entity's shard"
t_eq "$(sum "SELECT COUNT(DISTINCT token) FROM bagstore_intents")" 2 "one token per shard"
sleep 1.2 # the repair loop takes intents older than a second
t_eq "$(sum "SELECT COUNT(*) FROM bagstore_intents WHERE IS_USED_LOCK(token) IS NOT NULL")" 0 \
	"their locks went with the process"
t_exit 0 "cleaner --once" -- "$B" -c "$C" cleaner --once
t_eq "$(sum "SELECT COUNT(*) FROM bagstore_intents")" 0 "the repair loop settled every intent"
t_eq "$(sum "SELECT COUNT(*) FROM ix_g WHERE g>1000") $(sum "SELECT COUNT(*) FROM ix_g WHERE g<1000")" "300 0" \
	"the index rows are what the bodies say"
t_exit 0 "verify: no drift" -- "$B" -c "$C" verify --index ix_g
t_exit 0 "an entity reads back as the killed put wrote it" -- "$B" -c "$C" get 0000012b0000400080000000000e012b
t_contains "$T_OUT" '"v":2' "its new body"

t_done test_bulk_kill

#!/bin/sh
# test_bulk_lock.sh - a bulk put with an index whose batch's named lock
# goes with its connection before the index rows are sent (fault
# bulk_lock_lost): the repair loop may settle that batch's intent from then
# on, so rows sent after could land stale with nothing left to say so. The
# put sends none: it fails, naming the shard, its entities written and its
# intents left; the repair loop writes the rows. Planting a bug that sends
# them anyway makes the put succeed here.
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
T=$(t_tmp)

t_exit 0 "init" -- "$B" -c "$C" init
t_exit 0 "index ix_g on g (shard_on g)" -- "$B" -c "$C" index create ix_g --on g:int --shard-on g
t_exit 0 "ix_g ready (no entity yet)" -- "$B" -c "$C" cleaner --index ix_g
python3 -c 'import json
for i in range(200):
    print(json.dumps({"id": {"$uuid": "%08x-0000-4000-8000-00000000b%03x" % (i, i)}, "g": i}))' >"$T/b.jsonl"
on_both() { echo $(($(t_sql 0 "$1") + $(t_sql 1 "$1"))); }

BAGSTORE_FAULT=bulk_lock_lost t_exit 1 "a put whose batch's lock is lost before its index rows fails" -- \
	"$B" -c "$C" put --batch 200 "$T/b.jsonl"
t_contains "$T_ERR" "fault bulk_lock_lost: shard s" "the connection was closed there"
t_match "$T_ERR" "the connection to shard s[01] that held the batch's lock was lost; the rest left to the repair loop" \
	"it says why it sent no index rows"
t_eq "$(on_both "SELECT COUNT(*) FROM entities")" 200 "every entity is written"
t_eq "$(on_both "SELECT COUNT(*) FROM ix_g")" 0 "no index row was sent after the lock went"
t_match "$(on_both "SELECT COUNT(*) FROM bagstore_batch_intents")" "^[1-9]" "the batches' intents are left"
sleep 1.2 # the repair loop takes intents older than a second
t_exit 0 "a repair pass" -- "$B" -c "$C" cleaner --once
t_eq "$(on_both "SELECT COUNT(*) FROM bagstore_batch_intents")" 0 "which settles them"
t_eq "$(on_both "SELECT COUNT(*) FROM ix_g")" 200 "and writes every index row"
t_exit 0 "verify: no drift" -- "$B" -c "$C" verify --index ix_g
t_contains "$T_OUT" "200 entities checked, 0 missing, 0 stale, 0 orphaned" "verify says so"

t_done test_bulk_lock

#!/bin/sh
# test_bulk_kill.sh - a bulk put SIGKILLed between its entities and their
# index rows. Its entities went in through the fence's fast form, where
# each shard's batch intent is written in the same statement as its
# entities, naming them: every entity written is named by the intent on
# its shard, and nothing else is; once the
# process is gone (its named lock with it) `cleaner --once` makes the
# index rows what the bodies say and removes the intents.
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
T=$(t_tmp)

t_exit 0 "init" -- "$B" -c "$C" init
t_exit 0 "an index on g" -- "$B" -c "$C" index create ix_g --on g:int --shard-on g

# bags N F G [V]: N bags, the i-th with id %08x-0000-4000-8000-0000000F%04x
# (i, i), g = i + G, and v = V when given
bags() {
	python3 -c 'import json, sys
n, f, g = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
for i in range(n):
    b = {"id": {"$uuid": "%08x-0000-4000-8000-0000000%s%04x" % (i, f, i)}, "g": i + g}
    if len(sys.argv) > 4:
        b["v"] = int(sys.argv[4])
    print(json.dumps(b))' "$@"
}
# paused_put N FILE: put FILE in batches of N, stopped (SIGSTOP, once per
# entity) between its entities and their index rows; its pid in $p
paused_put() {
	BAGSTORE_FAULT=pause_before_index_rows "$B" -c "$C" put --batch "$1" "$2" >"$T/p.out" 2>"$T/p.err" &
	p=$!
}
# resume: let $p go on, past every entity's stop, until it exits
resume() {
	while [ "$(awk '{print $3}' /proc/$p/stat 2>/dev/null)" ]; do kill -CONT $p 2>/dev/null; sleep 0.01; done
	wait $p
}

# 300 entities on both shards, g = i, then again with g = i + 1001: every
# index row changes value and shard (the parity of g flips)
bags 300 e 0 >"$T/v1.jsonl"
bags 300 e 1001 2 >"$T/v2.jsonl"
t_exit 0 "put 300" -- "$B" -c "$C" put --batch 300 "$T/v1.jsonl"
t_exit 0 "their index is right" -- "$B" -c "$C" verify --index ix_g

paused_put 300 "$T/v2.jsonl"
t_eq "$(t_stopped $p)" 1 "the put stopped between its entities and their index rows"
kill -9 $p
wait $p 2>/dev/null
sum() { (t_sql 0 "$1"; t_sql 1 "$1") | awk '{ n += $1 } END { print n + 0 }'; }
t_eq "$(sum "SELECT COUNT(*) FROM entities")" 300 "300 entities"
t_eq "$(sum "SELECT COUNT(*) FROM ix_g WHERE g>1000")" 0 "none of the new index rows is written"
t_eq "$(sum "SELECT COUNT(*) FROM ix_g WHERE g<1000")" 300 "the old ones stand: real drift"
t_eq "$(sum "SELECT COUNT(*) FROM bagstore_intents")" 0 "no intent a row per entity"
t_eq "$(sum "SELECT COUNT(*) FROM bagstore_batch_intents")" 2 "one batch intent per shard (a part: under 500 ids)"
t_eq "$(sum "SELECT SUM(LENGTH(ids)) DIV 16 FROM bagstore_batch_intents")" 300 "naming one entity per entity written"
t_eq "$(sum "SELECT COUNT(*) FROM entities e JOIN bagstore_batch_intents i ON LOCATE(e.id, i.ids) % 16 = 1")" 300 \
	"each entity named by the intent on its own shard"
t_eq "$(sum "SELECT COUNT(DISTINCT token) FROM bagstore_batch_intents")" 2 "one token per shard"
sleep 1.2 # the repair loop takes intents older than a second
t_eq "$(sum "SELECT COUNT(*) FROM bagstore_batch_intents WHERE IS_USED_LOCK(token) IS NOT NULL")" 0 \
	"their locks went with the process"
t_exit 0 "cleaner --once" -- "$B" -c "$C" cleaner --once
t_eq "$(sum "SELECT COUNT(*) FROM bagstore_batch_intents")" 0 "the repair loop settled every intent"
t_eq "$(sum "SELECT COUNT(*) FROM ix_g WHERE g>1000") $(sum "SELECT COUNT(*) FROM ix_g WHERE g<1000")" "300 0" \
	"the index rows are what the bodies say"
t_exit 0 "verify: no drift" -- "$B" -c "$C" verify --index ix_g
t_exit 0 "an entity reads back as the killed put wrote it" -- "$B" -c "$C" get 0000012b0000400080000000000e012b
t_contains "$T_OUT" '"v":2' "its new body"

# A batch one of whose entities another writer overwrites between the
# batch's entity write and its index rows: the batch's rows for it land
# after the other writer's, so they are stale, and its intent's removal
# (which finds that entity no longer at the version the batch wrote) must
# leave the intent on that entity's shard for the repair loop; the other
# shard's intent goes.
bags 300 e 2002 3 >"$T/v3.jsonl"
E=000000050000400080000000000e0005
paused_put 300 "$T/v3.jsonl"
t_eq "$(t_stopped $p)" 1 "the second put stopped between its entities and their index rows"
t_exit 0 "another writer puts one of its entities meanwhile" -- sh -c \
	"echo '{\"id\": {\"\$uuid\": \"$E\"}, \"g\": 9999}' | \"$B\" -c \"$C\" put"
resume
t_eq "$?" 0 "the batch finished"
t_eq "$(sum "SELECT COUNT(*) FROM ix_g WHERE entity_id=X'$E' AND g=2007")" 1 \
	"that entity has the batch's late row, from a body that is no longer its: real drift"
t_eq "$(sum "SELECT COUNT(*) FROM bagstore_batch_intents")" 1 \
	"the batch's intent stays on that entity's shard, the other shard's is removed"
t_eq "$(sum "SELECT COUNT(*) FROM entities e JOIN bagstore_batch_intents i ON e.id=X'$E' AND LOCATE(e.id, i.ids) % 16 = 1")" 1 \
	"and it names that entity"
sleep 1.2
t_exit 0 "cleaner --once" -- "$B" -c "$C" cleaner --once
t_eq "$(sum "SELECT COUNT(*) FROM bagstore_batch_intents")" 0 "the repair loop settled it"
t_eq "$(sum "SELECT GROUP_CONCAT(g) FROM ix_g WHERE entity_id=X'$E'")" 9999 "that entity's one row is its body's"
t_eq "$(sum "SELECT COUNT(*) FROM ix_g WHERE g>2000 AND g<3000")" 299 "the batch's other rows stand"
t_exit 0 "verify: no drift" -- "$B" -c "$C" verify --index ix_g

# A batch whose entity's shard loses that entity's bucket (a cut-over, as
# far as this shard can tell: its bucket row says gone) between the
# batch's entity write and its removal: the copy left there says nothing
# of the new owner's writes, so the intent stays on that shard. E's bucket
# is 5 (s1 owns the odd ones); its index row's bucket is g's.
bags 300 e 3003 4 >"$T/v4.jsonl"
paused_put 300 "$T/v4.jsonl"
t_eq "$(t_stopped $p)" 1 "the third put stopped between its entities and their index rows"
t_sql 1 "UPDATE bagstore_buckets SET state='gone' WHERE bucket=5"
resume
t_eq "$?" 0 "the batch finished"
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM bagstore_batch_intents") $(t_sql 0 "SELECT COUNT(*) FROM bagstore_batch_intents")" "1 0" \
	"the intent stays on the shard that lost a bucket of the batch; the other shard's goes"
t_sql 1 "UPDATE bagstore_buckets SET state='owned' WHERE bucket=5"
sleep 1.2
t_exit 0 "cleaner --once" -- "$B" -c "$C" cleaner --once
t_eq "$(sum "SELECT COUNT(*) FROM bagstore_batch_intents")" 0 "the repair loop settled it"
t_exit 0 "verify: no drift" -- "$B" -c "$C" verify --index ix_g

# A batch of 1,200 killed like the first: each shard's intent is in parts
# of at most 500 ids, and a repair pass takes about 500 ids a shard (a
# part at a time), so that a batch of any size is settled in bounded
# steps rather than in one check too big for the shard.
bags 1200 f 0 >"$T/big.jsonl"
paused_put 1200 "$T/big.jsonl"
t_eq "$(t_stopped $p)" 1 "the big put stopped between its entities and their index rows"
kill -9 $p
wait $p 2>/dev/null
t_eq "$(sum "SELECT SUM(LENGTH(ids)) DIV 16 FROM bagstore_batch_intents")" 1200 "its intents name the 1,200"
t_eq "$(sum "SELECT COUNT(*) FROM bagstore_batch_intents WHERE LENGTH(ids)>500*16")" 0 "in parts of 500 at most"
t_eq "$(sum "SELECT COUNT(*) FROM bagstore_batch_intents")" 4 "two parts a shard"
sleep 1.2
t_exit 0 "cleaner --once" -- "$B" -c "$C" cleaner --once
t_eq "$(sum "SELECT COUNT(*) FROM bagstore_batch_intents")" 2 "a pass settled one part a shard"
t_exit 0 "cleaner --once again" -- "$B" -c "$C" cleaner --once
t_eq "$(sum "SELECT COUNT(*) FROM bagstore_batch_intents")" 0 "and the next the rest"
t_eq "$(sum "SELECT COUNT(*) FROM ix_g WHERE HEX(entity_id) LIKE '%0000000F____'")" 1200 \
	"every entity of the big batch has its index row"
t_exit 0 "verify: no drift" -- "$B" -c "$C" verify --index ix_g

# A shard whose tables are an older bagstore's (schema version 2, no
# bagstore_batch_intents) is refused until init brings them up to date.
t_sql 1 "DROP TABLE bagstore_batch_intents"
t_sql 1 "UPDATE bagstore_meta SET v='2' WHERE k='schema_version'"
t_exit 2 "a bulk put on a store with an older shard is refused" -- "$B" -c "$C" put --batch 300 "$T/v1.jsonl"
t_contains "$T_ERR" "shard s1" "naming the shard"
t_contains "$T_ERR" "schema version 2; this one writes 4" "and the versions"
t_contains "$T_ERR" "bagstore init" "saying what to run"
t_exit 0 "init" -- "$B" -c "$C" init
t_contains "$T_OUT" "upgraded s1 (from schema version 2)" "init says which shard it upgraded, from what"
t_contains "$T_OUT" "bagstore grants --role app" "and that the app's grants are needed again"
t_eq "$(t_sql 1 "SELECT v FROM bagstore_meta WHERE k='schema_version'")" 4 "init records schema version 4"
t_exit 0 "init again" -- "$B" -c "$C" init
case $T_OUT in
*upgraded*) t_fail "init again has nothing to upgrade" "actual: $T_OUT" ;;
*) t_ok "init again has nothing to upgrade" ;;
esac
t_exit 0 "the bulk put goes through" -- "$B" -c "$C" put --batch 300 "$T/v1.jsonl"
t_eq "$(sum "SELECT COUNT(*) FROM bagstore_batch_intents")" 0 "its intents removed"

t_done test_bulk_kill

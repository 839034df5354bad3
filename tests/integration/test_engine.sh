#!/bin/sh
# test_engine.sh - issue 2 end to end, through the real `bagstore` binary on
# two real shards: the seed entity put and got back byte for byte, found
# through index_user_id, its rows where routing says; a stale index row
# filtered out; corrupt body, bad config, unknown index, malformed id,
# stopped shard and an interrupted put each give a clear error and change
# nothing else.
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
T=$(t_tmp)
SEED='{"id":{"$uuid":"71f0c4d2-2918-44cc-a2df-6f486e96e37c"},"user_id":{"$uuid":"f48b0440-ca0c-4f66-991c-4d5f6a078eaf"},"title":"We just launched a new backend system for FriendFeed!","link":"http://friendfeed.com/e/71f0c4d2-2918-44cc-a2df-6f486e96e37c","published":1235697046,"updated":1235697046}'
EID=71f0c4d2291844cca2df6f486e96e37c
UID_=f48b0440ca0c4f66991c4d5f6a078eaf

t_exit 0 "init" -- "$B" -c "$C" init
t_exit 0 "init again is a no-op" -- "$B" -c "$C" init
t_exit 0 "create index_user_id" -- "$B" -c "$C" index create index_user_id --on user_id:uuid --shard-on user_id
t_exit 0 "index list" -- "$B" -c "$C" index list
t_contains "$T_OUT" "index_user_id" "index listed"

printf '%s\n' "$SEED" > "$T/seed.json"
t_exit 0 "put the seed entity" -- "$B" -c "$C" put "$T/seed.json"
t_eq "$T_OUT" "$EID" "put prints the id as 32 hex digits"
t_exit 0 "get it back" -- "$B" -c "$C" get $EID
t_eq "$T_OUT" "$SEED" "get returns the seed byte for byte"
t_exit 0 "get by dashed id" -- "$B" -c "$C" get 71f0c4d2-2918-44cc-a2df-6f486e96e37c
t_eq "$T_OUT" "$SEED" "dashed id works too"

# routing by hand: the id mod 2 is the low bit of its last byte (0x7c: 0);
# user_id's last byte is 0xaf: shard 1
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM entities WHERE id=X'$EID'")" 1 "entity on shard 0 (id mod 2 = 0)"
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM entities WHERE id=X'$EID'")" 0 "entity not on shard 1"
t_eq "$(t_sql 1 "SELECT HEX(entity_id) FROM index_user_id WHERE user_id=X'$UID_'")" \
	"$(echo $EID | tr a-f A-F)" "index row on shard 1 (user_id mod 2 = 1)"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM index_user_id")" 0 "no index row on shard 0"
# the body is zlib: 0x78 first
t_eq "$(t_sql 0 "SELECT HEX(LEFT(body,1)) FROM entities WHERE id=X'$EID'")" 78 "body is a zlib stream"

t_exit 0 "query through the index" -- "$B" -c "$C" query index_user_id user_id=$UID_
t_eq "$T_OUT" "$SEED" "query finds the seed entity"

# a stale row planted by hand: this entity under user ...0002 (shard 0)
t_sql 0 "INSERT INTO index_user_id VALUES (X'00000000000000000000000000000002', X'$EID')" >/dev/null
t_exit 0 "query the planted user" -- "$B" -c "$C" query index_user_id user_id=00000000000000000000000000000002
t_eq "$T_OUT" "" "stale index row filtered out"
t_exit 0 "real query still right" -- "$B" -c "$C" query index_user_id user_id=$UID_
t_eq "$T_OUT" "$SEED" "real query returns it once"
t_sql 0 "DELETE FROM index_user_id WHERE user_id=X'00000000000000000000000000000002'" >/dev/null

# newest first and --limit
for i in 1 2 3; do
	printf '{"user_id":{"$uuid":"%s"},"n":%d}\n' "$UID_" "$i"
done > "$T/three.jsonl"
# one write per line (a batch's entities share one moment across shards)
t_exit 0 "put three more, JSON Lines" -- "$B" -c "$C" put --batch 1 "$T/three.jsonl"
t_eq "$(printf '%s\n' "$T_OUT" | wc -l | tr -d ' ')" 3 "three ids printed"
t_exit 0 "query with limit" -- "$B" -c "$C" query index_user_id user_id=$UID_ --limit 2
t_eq "$(printf '%s\n' "$T_OUT" | sed 's/.*"n":\([0-9]\).*/\1/' | tr '\n' ' ')" "3 2 " "newest first, cut at the limit"

# a corrupt body: clear error naming the shard; nothing changed
t_sql 0 "INSERT INTO entities (id, updated, body) VALUES (X'0123456789abcdef0123456789abcdee', NOW(6), X'789c0102')" >/dev/null
t_exit 1 "get a corrupt body" -- "$B" -c "$C" get 0123456789abcdef0123456789abcdee
t_contains "$T_ERR" "bagstore: " "error is prefixed"
t_contains "$T_ERR" "shard s0" "error names the shard"
t_eq "$(t_sql 0 "SELECT HEX(body) FROM entities WHERE id=X'0123456789abcdef0123456789abcdee'")" 789C0102 "corrupt row untouched"

# bad config: file:line:col, exit 2
printf 'shards:\n  - {name: s0, host: 127.0.0.1, prot: 3307}\n' > "$T/bad.yaml"
t_exit 2 "bad config" -- "$B" -c "$T/bad.yaml" get $EID
t_contains "$T_ERR" "$T/bad.yaml:2:" "config error names file:line"

# unknown index, malformed id
t_exit 1 "unknown index" -- "$B" -c "$C" query index_nope user_id=$UID_
t_contains "$T_ERR" "index_nope" "names the unknown index"
t_exit 2 "malformed id" -- "$B" -c "$C" get 71f0c4d2-nope
t_contains "$T_ERR" "71f0c4d2-nope" "quotes the malformed id"

# an interrupted put: the entity is written, its index row is not
printf '{"id":{"$uuid":"11111111-1111-1111-1111-111111111111"},"user_id":{"$uuid":"%s"}}\n' "$UID_" > "$T/fault.json"
BAGSTORE_FAULT=after_entity_write t_exit 75 "put killed after the entity write" -- "$B" -c "$C" put "$T/fault.json"
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM entities WHERE id=X'11111111111111111111111111111111'")" 1 "entity written (shard 1)"
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM index_user_id WHERE entity_id=X'11111111111111111111111111111111'")" 0 "no index row: real drift left behind"

# identity: two shards' addresses swapped refuse writes (the bucket map
# names shards, so the list's order alone no longer matters)
p0=$(t_port 0) p1=$(t_port 1)
sed -e "s/port: $p0,/port: PORT1,/" -e "s/port: $p1,/port: $p0,/" -e "s/port: PORT1,/port: $p1,/" "$C" > "$T/swapped.yaml"
t_exit 2 "swapped shard addresses refuse to write" -- "$B" -c "$T/swapped.yaml" put "$T/seed.json"
t_contains "$T_ERR" "another shard list" "says why"
awk '/^shards:/{print; getline a; getline b; print b; print a; next} {print}' "$C" > "$T/reordered.yaml"
t_exit 0 "the same shards listed in another order read the same entity" -- "$B" -c "$T/reordered.yaml" get $EID

# a stopped shard: clear error naming it; the other shard unaffected
before=$(t_sql 0 "SELECT COUNT(*) FROM entities")
sh "$SHARDS_SH" stop-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
t_exit 1 "get from a stopped shard" -- "$B" -c "$C" get 11111111111111111111111111111111
t_contains "$T_ERR" "shard s1" "names the stopped shard"
t_exit 1 "shards reports it unreachable" -- "$B" -c "$C" shards
t_contains "$T_OUT$T_ERR" "unreachable" "state unreachable"
t_exit 0 "the other shard still answers" -- "$B" -c "$C" get $EID
t_exit 1 "put routed to the stopped shard fails" -- "$B" -c "$C" put "$T/fault.json"
t_contains "$T_ERR" "shard s1" "put error names the shard"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM entities")" "$before" "nothing changed on shard 0"
sh "$SHARDS_SH" start-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
t_exit 0 "back after restart" -- "$B" -c "$C" get 11111111111111111111111111111111

# delete takes the index row with it
t_exit 0 "delete the seed" -- "$B" -c "$C" delete $EID
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM index_user_id WHERE entity_id=X'$EID'")" 0 "index row gone"
t_exit 1 "get after delete" -- "$B" -c "$C" get $EID
t_contains "$T_ERR" "not found" "not found"

t_exit 0 "drop the index" -- "$B" -c "$C" index drop index_user_id --yes
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA='bagstore' AND TABLE_NAME='index_user_id'")" 0 "table dropped"

t_done test_engine

#!/bin/sh
# test_hostile.sh - issue 13: what a hostile tester found, one section per
# item, each failing on the code before its fix. Through the real binary on
# the two test shards (and SQL by hand to plant what an attacker or a
# crash leaves).
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
T=$(t_tmp)

t_exit 0 "init" -- "$B" -c "$C" init

# ------------------------------------------------------------ 1. a foreign table
for s in 0 1; do
	t_sql $s "CREATE TABLE canary (a INT PRIMARY KEY) ENGINE=InnoDB; INSERT INTO canary VALUES (1),(2),(3)"
done
t_exit 1 "index create over a table bagstore did not make is refused" -- \
	"$B" -c "$C" index create canary --on a:int --shard-on a
t_contains "$T_ERR" "table canary exists and bagstore did not create it" "says why"
t_match "$T_ERR" "shard s[01] " "names the shard"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM canary")" 3 "canary's rows kept on s0"
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM canary")" 3 "canary's rows kept on s1"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_indexes WHERE name='canary'")" 0 "no catalog row on s0"
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM bagstore_indexes WHERE name='canary'")" 0 "no catalog row on s1"
# only on one shard: still refused, and nothing made on the other
t_sql 0 "DROP TABLE canary"
t_exit 1 "a foreign table on one shard only is refused too" -- \
	"$B" -c "$C" index create canary --on a:int --shard-on a
t_contains "$T_ERR" "shard s1" "names the shard holding it"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA='bagstore' AND TABLE_NAME='canary'")" 0 \
	"nothing created on s0"
t_sql 1 "DROP TABLE canary"
# a table bagstore made whose create was interrupted (no catalog row): replaced
t_exit 0 "create ix_left" -- "$B" -c "$C" index create ix_left --on a:int --shard-on a
t_sql 0 "DELETE FROM bagstore_indexes WHERE name='ix_left'"
t_sql 1 "DELETE FROM bagstore_indexes WHERE name='ix_left'"
t_exit 0 "an interrupted create's table is replaced" -- "$B" -c "$C" index create ix_left --on a:int --shard-on a

# ------------------------------------------------------------ 2. a late index write
# E has val 100; a put of val 201 stops between its entity and its index
# rows; a put of val 300 completes; long after (past repair_overlap), the
# first put goes on. With the cleaner running, the index ends right.
t_exit 0 "create ix_val" -- "$B" -c "$C" index create ix_val --on val:int --shard-on val
E=0123456789abcdef0123456789abcde0
printf '{"id":{"$uuid":"%s"},"val":100}\n' "$E" >"$T/e100.json"
printf '{"id":{"$uuid":"%s"},"val":201}\n' "$E" >"$T/e201.json"
printf '{"id":{"$uuid":"%s"},"val":300}\n' "$E" >"$T/e300.json"
t_exit 0 "put E val 100" -- "$B" -c "$C" put "$T/e100.json"
"$B" -c "$C" cleaner >"$T/cleaner.log" 2>&1 &
cleaner=$!
BAGSTORE_FAULT=pause_before_index_rows "$B" -c "$C" put "$T/e201.json" >"$T/late.out" 2>"$T/late.err" &
late=$!
t_eq "$(t_stopped $late 10)" 1 "the put of 201 stopped between its entity and its index rows"
t_exit 0 "put E val 300 meanwhile" -- "$B" -c "$C" put "$T/e300.json"
sleep 3 # past repair_overlap: the repair loop's watermark has moved on
kill -CONT $late
wait $late
t_eq "$?" 0 "the late put finished"
# the cleaner settles it: wait for the observable end state
ok=""
for _ in $(seq 1 100); do
	if [ "$("$B" -c "$C" query ix_val val=300 2>/dev/null | grep -c "01234567-89ab-cdef-0123-456789abcde0")" = 1 ] &&
		[ "$( (t_sql 0 "SELECT val FROM ix_val WHERE entity_id=X'$E'"; t_sql 1 "SELECT val FROM ix_val WHERE entity_id=X'$E'") | tr '\n' ' ')" = "300 " ]; then
		ok=1; break
	fi
	sleep 0.2
done
t_eq "$ok" 1 "query ix_val val=300 finds E, and its only index row says 300"
kill -TERM $cleaner; wait $cleaner
t_exit 0 "verify ix_val: no drift" -- "$B" -c "$C" verify --index ix_val
pending="SELECT (SELECT COUNT(*) FROM bagstore_intents)+(SELECT COUNT(*) FROM bagstore_batch_intents)"
t_eq "$( (t_sql 0 "$pending"; t_sql 1 "$pending") | tr '\n' ' ')" "0 0 " \
	"no intent left"

# ------------------------------------------------------------ 3. a backfill racing deletes
# 3,000 entities; a slow backfill of ix_del while 600 of them are deleted:
# the index must end ready with no orphan row, without any daemon sweeping.
awk 'BEGIN { for (i = 0; i < 3000; i++) printf "{\"id\":{\"$uuid\":\"%08x-0000-4000-8000-%012x\"},\"k\":%d}\n", i + 1, i, i % 37 }' \
	>"$T/many.jsonl"
t_exit 0 "load 3,000 entities" -- "$B" -c "$C" put "$T/many.jsonl"
t_exit 0 "create ix_del (building)" -- "$B" -c "$C" index create ix_del --on k:int --shard-on k
BAGSTORE_FAULT=slow_chunk "$B" -c "$C" cleaner --index ix_del >"$T/bf.out" 2>"$T/bf.err" &
bf=$!
i=0
while [ $i -lt 600 ]; do
	"$B" -c "$C" delete "$(printf '%08x-0000-4000-8000-%012x' $((i * 5 + 1)) $((i * 5)))" >/dev/null 2>&1
	i=$((i + 1))
done
wait $bf
t_eq "$?" 0 "the backfill finished"
t_contains "$(cat "$T/bf.out")" "index ix_del is ready" "and the index is ready"
t_exit 0 "verify ix_del at once: no orphan" -- "$B" -c "$C" verify --index ix_del
t_contains "$T_OUT" "0 orphaned" "0 orphaned"
t_eq "$( (t_sql 0 "SELECT COUNT(*) FROM ix_del"; t_sql 1 "SELECT COUNT(*) FROM ix_del") | awk '{ n += $1 } END { print n }')" 2400 \
	"one row per entity left"

# ------------------------------------------------------------ 4. a body under another id
# body_hex ID_HEX [EXTRA_MSGPACK_PAIRS_HEX N]: zlib(MessagePack {id: ID, ...}) as hex
body_hex() {
	python3 -c 'import sys, zlib
idb = bytes.fromhex(sys.argv[1]); extra = bytes.fromhex(sys.argv[2]); n = int(sys.argv[3])
mp = bytes([0x80 | (1 + n)]) + b"\xa2id\xc4\x10" + idb + extra
print(zlib.compress(mp).hex())' "$1" "${2:-}" "${3:-0}"
}
t_exit 0 "create ix_k" -- "$B" -c "$C" index create ix_k --on k:int --shard-on k
t_exit 0 "build ix_k" -- "$B" -c "$C" cleaner --index ix_k
# c0ffee...11 routes to s1 (odd); its body says dead...; an index row points at it
CID=c0ffee00000000000000000000000011
DID=deadd000000000000000000000000011
t_sql 1 "INSERT INTO entities (id, updated, body) VALUES (X'$CID', NOW(6), X'$(body_hex $DID a16b07 1)')"
t_sql 1 "INSERT INTO ix_k (k, entity_id) VALUES (7, X'$CID')"
t_exit 1 "get of a row whose body holds another id fails" -- "$B" -c "$C" get $CID
t_contains "$T_ERR" "shard s1" "names the shard"
t_contains "$T_ERR" "entity $CID: its body says id $DID: corrupt" "names both ids and says corrupt"
t_exit 1 "query over it: the others print, the corrupt one is named" -- "$B" -c "$C" query ix_k k=7
t_eq "$(printf '%s\n' "$T_OUT" | grep -c '"k":7')" "$(awk 'BEGIN { n = 0; for (i = 0; i < 3000; i++) if (i % 37 == 7 && i % 5 != 0) n++; print n }')" \
	"every sound entity with k=7 printed"
t_contains "$T_OUT$T_ERR" "skipped" "the corrupt one is reported"
t_contains "$T_ERR" "$DID" "with both ids"
t_exit 1 "verify counts it as corrupt" -- "$B" -c "$C" verify --index ix_k
t_contains "$T_OUT" "1 corrupt" "1 corrupt"
t_contains "$T_ERR" "entity $CID" "and names it"
t_sql 1 "DELETE FROM entities WHERE id=X'$CID'; DELETE FROM ix_k WHERE entity_id=X'$CID'"

# ------------------------------------------------------------ 5. bodies that cannot be printed
# a key holding a NUL, and a map whose only key is "$uuid": planted by hand
# (bagstore refuses to write them); get names the problem, query goes on,
# verify counts them
NID=0000000000000000000000000000aa01
UID2=0000000000000000000000000000aa03
t_sql 1 "INSERT INTO entities (id, updated, body) VALUES (X'$NID', NOW(6), X'$(body_hex $NID a3610062''01a16b07 2)')"
t_sql 1 "INSERT INTO entities (id, updated, body) VALUES (X'$UID2', NOW(6), X'$(body_hex $UID2 a178$(printf '81a5%s' 2475756964)a3616263a16b07 2)')"
t_sql 1 "INSERT INTO ix_k (k, entity_id) VALUES (7, X'$NID'), (7, X'$UID2')"
t_exit 1 "get of a body with a NUL in a key" -- "$B" -c "$C" get $NID
t_contains "$T_ERR" "NUL" "says why"
t_exit 1 "get of a body with a lone \$uuid key" -- "$B" -c "$C" get $UID2
t_contains "$T_ERR" '$uuid' "says why"
t_exit 1 "query goes on past them" -- "$B" -c "$C" query ix_k k=7
t_eq "$(printf '%s\n' "$T_OUT" | grep -c '"k":7')" "$(awk 'BEGIN { n = 0; for (i = 0; i < 3000; i++) if (i % 37 == 7 && i % 5 != 0) n++; print n }')" \
	"every printable entity printed"
t_contains "$T_ERR" "$NID cannot be printed as JSON" "names the first"
t_exit 1 "verify counts them" -- "$B" -c "$C" verify --index ix_k
t_contains "$T_OUT" "2 unprintable" "2 unprintable"
t_sql 1 "DELETE FROM entities WHERE id IN (X'$NID', X'$UID2'); DELETE FROM ix_k WHERE entity_id IN (X'$NID', X'$UID2')"
t_exit 0 "and verify is clean again" -- "$B" -c "$C" verify --index ix_k

# ------------------------------------------------------------ 6. reads through a wrong shard list
# the two shards' addresses swapped (the bucket map names shards: their
# order alone no longer matters, a name on another shard's address does),
# and a third shard added: writes were refused already; reads must be too,
# not answer "not found" or "0 rows"
p0=$(t_port 0) p1=$(t_port 1)
sed -e "s/port: $p0,/port: PORT1,/" -e "s/port: $p1,/port: $p0,/" -e "s/port: PORT1,/port: $p1,/" "$C" >"$T/swapped.yaml"
sed -n '/^shards:/,/^[a-z]/p' "$C" | grep -- '- {name: s0' | sed 's/name: s0/name: s2/; s/database: bagstore/database: bagstore_extra/' >"$T/s2.line"
awk -v extra="$(cat "$T/s2.line")" '{print} /- \{name: s1/{print extra}' "$C" >"$T/three.yaml"
t_sql 0 "CREATE DATABASE IF NOT EXISTS bagstore_extra"
t_exit 0 "get E through the right list" -- "$B" -c "$C" get $E
for cf in swapped three; do
	t_exit 2 "$cf: get of an existing id is refused" -- "$B" -c "$T/$cf.yaml" get $E
	t_contains "$T_ERR" "another shard list" "$cf: get says why"
	t_exit 2 "$cf: query is refused" -- "$B" -c "$T/$cf.yaml" query ix_k k=7
	t_contains "$T_ERR" "another shard list" "$cf: query says why"
	t_eq "$T_OUT" "" "$cf: query printed nothing"
done
t_sql 0 "DROP DATABASE bagstore_extra"

# ------------------------------------------------------------ 8. a drop cut short
sh "$SHARDS_SH" stop-one s0 --dir "$SHARDS_DIR" >/dev/null 2>&1
t_exit 1 "index drop with s0 stopped fails" -- "$B" -c "$C" index drop ix_k --yes
t_contains "$T_ERR" "shard s0" "names the shard"
t_contains "$T_ERR" "retry" "says how it completes"
sh "$SHARDS_SH" start-one s0 --dir "$SHARDS_DIR" >/dev/null 2>&1
t_exit 0 "index list" -- "$B" -c "$C" index list
t_match "$T_OUT" "^ix_k +disabled! .*the shards' catalogs differ: s0 ready, s1 disabled" "shows the divergence"
t_exit 0 "index list --json" -- "$B" -c "$C" index list --json
t_contains "$T_OUT" '"diverged": true' "json: diverged"
t_exit 0 "one cleaner pass heals it" -- "$B" -c "$C" cleaner --once
t_eq "$( (t_sql 0 "SELECT COUNT(*) FROM bagstore_indexes WHERE name='ix_k'"; t_sql 1 "SELECT COUNT(*) FROM bagstore_indexes WHERE name='ix_k'") | tr '\n' ' ')" "0 0 " \
	"the drop is complete on both shards"
t_eq "$( (t_sql 0 "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA='bagstore' AND TABLE_NAME='ix_k'"; t_sql 1 "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA='bagstore' AND TABLE_NAME='ix_k'") | tr '\n' ' ')" "0 0 " \
	"its tables are gone"
# a create cut short (the row on s1 only): retrying the create completes it
t_exit 0 "create ix_c" -- "$B" -c "$C" index create ix_c --on k:int --shard-on k
t_sql 0 "DELETE FROM bagstore_indexes WHERE name='ix_c'"
t_exit 0 "index list shows ix_c diverged" -- "$B" -c "$C" index list
t_contains "$T_OUT" "s0 (no row), s1 building" "s0 has no row"
t_exit 0 "creating it again completes it" -- "$B" -c "$C" index create ix_c --on k:int --shard-on k
t_eq "$(t_sql 0 "SELECT state FROM bagstore_indexes WHERE name='ix_c'")" building "s0 has its row again"
# a create healed halfway: its row reaches s1 while s0's insert is held
# back (a trigger sleeps before it), and another create of the same index
# (or a cleaner pass: the same healing) copies the row to s0 meanwhile. The
# first create then finds its own row on s0: done, not a duplicate.
t_sql 0 "CREATE TRIGGER t_slow_catalog BEFORE INSERT ON bagstore_indexes FOR EACH ROW
	DO IF(NEW.name IN ('ix_h','ix_h2') AND NEW.changed=NEW.created, SLEEP(4), 0)"
"$B" -c "$C" index create ix_h --on k:int --shard-on k >"$T/h.out" 2>"$T/h.err" &
hpid=$!
on_s1() { [ "$(t_sql 1 "SELECT COUNT(*) FROM bagstore_indexes WHERE name='$1'")" = 1 ]; }
t_wait 10 on_s1 ix_h || t_fail "the held-back create reached s1" "$(cat "$T/h.err")"
t_exit 0 "a second create heals the first one's halfway row" -- "$B" -c "$C" index create ix_h --on k:int --shard-on k
t_eq "$(t_sql 0 "SELECT state FROM bagstore_indexes WHERE name='ix_h'")" building "s0 has the row before the first create's insert"
if kill -0 "$hpid" 2>/dev/null; then t_ok "the first create is still held back"; else t_fail "the first create is still held back" "$(cat "$T/h.err")"; fi
wait "$hpid"
t_eq "$?" 0 "the first create succeeds: the row on s0 is its own"
t_contains "$(cat "$T/h.out")" "created index ix_h (building) on 2 shards" "and says so"
# a row of that name with the same definition but another creation time
# (an earlier create's) is still refused
"$B" -c "$C" index create ix_h2 --on k:int --shard-on k >"$T/h2.out" 2>"$T/h2.err" &
hpid=$!
t_wait 10 on_s1 ix_h2 || t_fail "the held-back create reached s1" "$(cat "$T/h2.err")"
t_sql 0 "INSERT INTO bagstore_indexes (name, on_spec, shard_on, state, created, changed)
	VALUES ('ix_h2', 'k:int', 'k', 'building', NOW(6) - INTERVAL 1 DAY, NOW(6))"
wait "$hpid"
t_eq "$?" 1 "a create that meets another index's row on s0 fails"
t_contains "$(cat "$T/h2.err")" "shard s0" "naming the shard"
t_contains "$(cat "$T/h2.err")" "Duplicate entry 'ix_h2'" "and MySQL's message"
t_sql 0 "DROP TRIGGER t_slow_catalog"
t_exit 0 "the diverged ix_h2 dropped" -- "$B" -c "$C" index drop ix_h2 --yes

# ------------------------------------------------------------ 7. two shards on one server
P0=$(t_port 0)
t_sql 0 "CREATE DATABASE IF NOT EXISTS bs_a; CREATE DATABASE IF NOT EXISTS bs_b"
cat >"$T/oneserver.yaml" <<EOC
shards:
  - {name: s0, host: 127.0.0.1, port: $P0, database: bs_a, user: root}
  - {name: s1, host: 127.0.0.1, port: $P0, database: bs_b, user: root}
catalog_ttl: 1
EOC
t_exit 0 "init two shards on one server" -- "$B" -c "$T/oneserver.yaml" init
t_exit 0 "an index" -- "$B" -c "$T/oneserver.yaml" index create ix_one --on k:int --shard-on k
# one entity per shard, each interrupted before its index rows: drift on both
for id in 00000000000000000000000000000b00 00000000000000000000000000000b01; do
	printf '{"id":{"$uuid":"%s"},"k":%d}\n' $id 5 >"$T/one.json"
	BAGSTORE_FAULT=after_entity_write t_exit 75 "put $id, stopped before its rows" -- "$B" -c "$T/oneserver.yaml" put "$T/one.json"
done
t_exit 1 "verify sees the drift" -- "$B" -c "$T/oneserver.yaml" verify --index ix_one
t_exit 0 "one cleaner pass" -- "$B" -c "$T/oneserver.yaml" cleaner --once
t_exit 0 "both shards repaired" -- "$B" -c "$T/oneserver.yaml" verify --index ix_one
t_exit 0 "lag --json" -- "$B" -c "$T/oneserver.yaml" lag --json
t_eq "$(printf '%s' "$T_OUT" | grep -c '"watermark_us": [1-9]')" 2 "both shards' repair ran (a watermark each)"
t_sql 0 "DROP DATABASE bs_a; DROP DATABASE bs_b"

# ------------------------------------------------------------ 10. query --limit reads what it returns
# 40 entities with the same indexed value, each body 4 MB of text (a few KB
# stored): --limit 1 must not fetch every candidate's body. The servers'
# Bytes_sent, before and after, says how much was read.
t_exit 0 "create ix_big" -- "$B" -c "$C" index create ix_big --on big:int --shard-on big
t_exit 0 "build ix_big" -- "$B" -c "$C" cleaner --index ix_big
python3 -c 'import json
for i in range(40):
    print(json.dumps({"id": {"$uuid": "%08x-0000-4000-8000-00000000b16b" % i}, "big": 1, "text": "x" * (4 << 20)}))' >"$T/big.jsonl"
t_exit 0 "put 40 big bodies" -- "$B" -c "$C" put "$T/big.jsonl"
sent() { (t_sql 0 "SHOW GLOBAL STATUS LIKE 'Bytes_sent'"; t_sql 1 "SHOW GLOBAL STATUS LIKE 'Bytes_sent'") | awk '{ n += $2 } END { print n }'; }
before=$(sent)
t_exit 0 "query --limit 1 over 40 candidates" -- "$B" -c "$C" query ix_big big=1 --limit 1
after=$(sent)
t_eq "$(printf '%s\n' "$T_OUT" | wc -l)" 1 "one entity printed"
limited=$((after - before))
before=$(sent)
t_exit 0 "query without a limit still returns all 40" -- "$B" -c "$C" query ix_big big=1
after=$(sent)
t_eq "$(printf '%s\n' "$T_OUT" | wc -l)" 40 "40 entities printed"
all=$((after - before))
t_eq "$([ $((limited * 4)) -lt "$all" ] && echo less || echo more)" less \
	"--limit 1 read under a quarter of what all 40 take ($limited bytes against $all)"

# ------------------------------------------------------------ 11. put of a wide object without id
# 200,000 keys and no id: the old code set keys one at a time through a
# linear search (over 60 s, past the test timeout); now it is linear
python3 -c 'import json; print(json.dumps({"k%d" % i: i for i in range(200000)}))' >"$T/wide.json"
T_TIMEOUT=60 t_exit 0 "put of 200,000 keys without an id completes" -- "$B" -c "$C" put "$T/wide.json"
wid=$T_OUT
t_exit 0 "and reads back" -- "$B" -c "$C" get "$wid"
t_contains "$T_OUT" '"k199999":199999' "with its last key"
t_match "$T_OUT" '^\{"id":' "the new id first"

# ------------------------------------------------------------ 12. errors keep their message
# the first shard's bookkeeping table gone: the error must name it and
# carry MySQL's message, though later shards' passes run after it
t_sql 0 "RENAME TABLE bagstore_watermarks TO bagstore_watermarks_away"
t_exit 1 "cleaner --once with a table missing on s0" -- "$B" -c "$C" cleaner --once
t_contains "$T_ERR" "shard s0" "names the shard"
t_contains "$T_ERR" "bagstore_watermarks' doesn't exist (MySQL error 1146)" "carries MySQL's message"
"$B" -c "$C" cleaner >"$T/daemon.out" 2>"$T/daemon.err" &
dpid=$!
for _ in $(seq 1 50); do grep -q "repair:" "$T/daemon.err" && break; sleep 0.1; done
kill -TERM $dpid; wait $dpid
t_match "$(cat "$T/daemon.err")" "repair: shard s0 .*bagstore_watermarks' doesn't exist" "the daemon logs the whole message"
t_sql 0 "RENAME TABLE bagstore_watermarks_away TO bagstore_watermarks"

# ------------------------------------------------------------ 13. deadlocks are retried
# 8 writers put the same 300 new entities at once, each in its own order:
# concurrent inserts of a missing row deadlock in InnoDB (gap locks); every
# put must still succeed, and the index end right
t_exit 0 "create ix_dl" -- "$B" -c "$C" index create ix_dl --on w:int --shard-on w
t_exit 0 "build ix_dl" -- "$B" -c "$C" cleaner --index ix_dl
for wr in 1 2 3 4 5 6 7 8; do
	python3 -c 'import json, random, sys
w = int(sys.argv[1]); ids = list(range(300)); random.Random(w).shuffle(ids)
for i in ids:
    print(json.dumps({"id": {"$uuid": "%08x-0000-4000-8000-0000000dead1" % i}, "w": w}))' $wr >"$T/dl$wr.jsonl"
done
pids=""
for wr in 1 2 3 4 5 6 7 8; do
	"$B" -c "$C" put "$T/dl$wr.jsonl" >"$T/dl$wr.out" 2>"$T/dl$wr.err" &
	pids="$pids $!"
done
failed=0
for p in $pids; do wait $p || failed=$((failed + 1)); done
t_eq "$failed" 0 "all 8 concurrent writers succeeded"
t_eq "$(cat "$T"/dl*.out | wc -l)" 2400 "2,400 ids printed"
t_eq "$(cat "$T"/dl*.err)" "" "no error printed"
t_exit 0 "cleaner --once settles what is left" -- "$B" -c "$C" cleaner --once
t_exit 0 "verify ix_dl: no drift" -- "$B" -c "$C" verify --index ix_dl

# ------------------------------------------------------------ 14. configurations
P1=$(t_port 1)
mkfifo "$T/fifo.cnf"
for f in /dev/zero "$T/fifo.cnf"; do
	cat >"$T/dz.yaml" <<EOC
shards:
  - {name: s0, host: 127.0.0.1, port: $P0, database: bagstore, user: root, defaults_file: $f}
EOC
	T_TIMEOUT=10 t_exit 2 "defaults_file $f is refused, not a hang" -- "$B" -c "$T/dz.yaml" index list
	t_contains "$T_ERR" "not a regular file" "says why ($f)"
	T_TIMEOUT=10 t_exit 1 "shards reports it on the shard ($f)" -- "$B" -c "$T/dz.yaml" shards --json
	t_contains "$T_OUT" "not a regular file" "in the shard's error ($f)"
done
# an option file whose init-command puts the session in another time zone
# after bagstore's: versions go to the shards as UTC text, so it is refused
printf '[client]\ninit-command="SET time_zone='"'"'+01:00'"'"'"\n' >"$T/tz.cnf"
cat >"$T/tz.yaml" <<EOC
shards:
  - {name: s0, host: 127.0.0.1, port: $P0, database: bagstore, user: root, defaults_file: $T/tz.cnf}
  - {name: s1, host: 127.0.0.1, port: $P1, database: bagstore, user: root}
EOC
t_exit 2 "a session an option file puts in another time zone is refused" -- "$B" -c "$T/tz.yaml" index list
t_contains "$T_ERR" "time zone is '+01:00', not UTC ('+00:00')" "saying why"
t_contains "$T_ERR" "shard s0" "naming the shard"
cat >"$T/dup.yaml" <<EOC
shards:
  - {name: s0, host: 127.0.0.1, port: $P0, database: bagstore, user: root}
  - {name: s1, host: 127.0.0.1, port: $P1, database: bagstore, user: root}
  - {name: s2, host: 127.0.0.1, port: $P0, database: bagstore, user: root}
EOC
t_exit 2 "two shards on the same server and database are refused" -- "$B" -c "$T/dup.yaml" shards
t_contains "$T_ERR" "dup.yaml:4:" "names the file and line"
t_contains "$T_ERR" "shard s2 is the same server and database as shard s0" "says which"
printf '{"tiny":1e-400}\n' >"$T/tiny.json"
t_exit 2 "1e-400 in JSON is refused" -- "$B" -c "$C" put "$T/tiny.json"
t_contains "$T_ERR" "too small for a double" "says why"

t_done test_hostile

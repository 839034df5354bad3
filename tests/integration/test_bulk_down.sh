#!/bin/sh
# test_bulk_down.sh - a put whose entity is written and whose shard is
# lost before its index rows: the put fails saying so, with the shard and
# MySQL's message. Found in review: bulk.c's settle step (sent after the
# index rows, to the same lost shard) cleared the error slot when its send
# failed, so the put exited non-zero with the message of its index-row
# failure gone. And a batch whose write fails on one shard while another
# shard's commits over a body that does not decode (take_old cleared the
# error slot there, losing the failed shard's message the same way).
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
T=$(t_tmp)

t_exit 0 "init" -- "$B" -c "$C" init
t_exit 0 "an index on g" -- "$B" -c "$C" index create ix_g --on g:int --shard-on g

# an entity whose body and index row both live on s1
E=""
for g in $(seq 1 40); do
	id=$(printf '%08x-0000-4000-8000-0000000a0001' "$g")
	hex=$(printf '%s' "$id" | tr -d -)
	printf '{"id":{"$uuid":"%s"},"g":%d}\n' "$id" "$g" >"$T/e.json"
	"$B" -c "$C" put "$T/e.json" >/dev/null 2>&1 || continue
	if [ "$(t_sql 1 "SELECT COUNT(*) FROM entities WHERE id=X'$hex'")" = 1 ] &&
		[ "$(t_sql 1 "SELECT COUNT(*) FROM ix_g WHERE entity_id=X'$hex'")" = 1 ]; then
		E=$id
		break
	fi
done
if [ -n "$E" ]; then t_ok "an entity with its body and index row on s1"; else t_fail "an entity on s1"; fi
# a new g: its old index row on s1 must go
printf '{"id":{"$uuid":"%s"},"g":%d,"v":2}\n' "$E" "$((g + 1000))" >"$T/e2.json"

BAGSTORE_FAULT=pause_before_index_rows "$B" -c "$C" put "$T/e2.json" >"$T/p.out" 2>"$T/p.err" &
p=$!
t_eq "$(t_stopped $p 10)" 1 "the put stopped between its entity and its index rows"
sh "$SHARDS_SH" stop-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
kill -CONT $p
wait $p
rc=$?
t_eq "$rc" 1 "the put fails (exit 1: a shard unreachable)"
t_contains "$(cat "$T/p.err")" "index rows are not" "it says the index rows are not written"
t_contains "$(cat "$T/p.err")" "shard s1" "it names the shard"
t_contains "$(cat "$T/p.err")" "MySQL error" "with MySQL's message"
sh "$SHARDS_SH" start-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
t_exit 0 "s1 is back" -- "$B" -c "$C" get "$(printf '%s' "$E" | tr -d -)"
t_contains "$T_OUT" '"v":2' "the entity holds what the put wrote"

# ------------------------------------------------------------ a corrupt old body
# one entity per shard; the one on s1 gets a body that does not decode
A=""; Z=""
for n in $(seq 1 60); do
	id=$(printf '0000000a-0002-4000-8000-%012x' "$n")
	hex=$(printf '%s' "$id" | tr -d -)
	printf '{"id":{"$uuid":"%s"},"g":%d}\n' "$id" "$n" >"$T/p.json"
	"$B" -c "$C" put "$T/p.json" >/dev/null 2>&1 || continue
	if [ "$(t_sql 1 "SELECT COUNT(*) FROM entities WHERE id=X'$hex'")" = 1 ]; then
		[ -n "$A" ] || A=$id
	else
		[ -n "$Z" ] || Z=$id
	fi
	[ -n "$A" ] && [ -n "$Z" ] && break
done
if [ -n "$A" ] && [ -n "$Z" ]; then t_ok "an entity on each shard"; else t_fail "an entity on each shard" "$A / $Z"; fi
t_sql 1 "UPDATE entities SET body=X'C1C1C1' WHERE id=X'$(printf '%s' "$A" | tr -d -)'"
# s0 refuses the batch's statement (too big for its max_allowed_packet)
old0=$(t_sql 0 "SELECT @@global.max_allowed_packet")
t_sql 0 "SET GLOBAL max_allowed_packet=16384"
python3 -c 'import base64, json, os, sys
print(json.dumps({"id": {"$uuid": sys.argv[1]}, "g": 1}))
print(json.dumps({"id": {"$uuid": sys.argv[2]}, "g": 2, "pad": base64.b64encode(os.urandom(30000)).decode()}))' "$A" "$Z" >"$T/two.jsonl"
t_exit 1 "a batch that fails on s0 while s1 commits over a corrupt old body" -- "$B" -c "$C" put "$T/two.jsonl"
t_contains "$T_ERR" "shard s0" "the error names the failed shard"
t_contains "$T_ERR" "MySQL error" "with MySQL's message"
t_sql 0 "SET GLOBAL max_allowed_packet=$old0"

# ------------------------------------------------------------ one entity's delete
# the single-entity write path (delete, and the console's edits) had the
# same fault in entity.c's settle step
F=""
for g in $(seq 1 40); do
	id=$(printf '%08x-0000-4000-8000-0000000a0003' "$g")
	hex=$(printf '%s' "$id" | tr -d -)
	printf '{"id":{"$uuid":"%s"},"g":%d}\n' "$id" "$g" >"$T/f.json"
	"$B" -c "$C" put "$T/f.json" >/dev/null 2>&1 || continue
	if [ "$(t_sql 1 "SELECT COUNT(*) FROM entities WHERE id=X'$hex'")" = 1 ] &&
		[ "$(t_sql 1 "SELECT COUNT(*) FROM ix_g WHERE entity_id=X'$hex'")" = 1 ]; then
		F=$hex
		break
	fi
done
if [ -n "$F" ]; then t_ok "another entity with its body and index row on s1"; else t_fail "another entity on s1"; fi
BAGSTORE_FAULT=pause_before_index_rows "$B" -c "$C" delete "$F" >"$T/d.out" 2>"$T/d.err" &
p=$!
t_eq "$(t_stopped $p 10)" 1 "the delete stopped between its entity and its index rows"
sh "$SHARDS_SH" stop-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
kill -CONT $p
wait $p
t_eq "$?" 1 "the delete fails (exit 1: a shard unreachable)"
t_contains "$(cat "$T/d.err")" "shard s1" "it names the shard"
t_contains "$(cat "$T/d.err")" "MySQL error" "with MySQL's message"
sh "$SHARDS_SH" start-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1

t_done

#!/bin/sh
# test_bulk_down.sh - a put whose entity is written and whose shard is
# lost before its index rows: the put fails saying so, with the shard and
# MySQL's message. Found in review: bulk.c's settle step (sent after the
# index rows, to the same lost shard) cleared the error slot when its send
# failed, so the put exited non-zero with the message of its index-row
# failure gone.
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
stopped=""
for _ in $(seq 1 100); do
	if [ "$(awk '{print $3}' /proc/$p/stat 2>/dev/null)" = T ]; then stopped=1; break; fi
	sleep 0.1
done
t_eq "$stopped" 1 "the put stopped between its entity and its index rows"
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

t_done

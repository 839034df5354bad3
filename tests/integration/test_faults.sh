#!/bin/sh
# test_faults.sh - fault points are declared once (BS_FAULTS in
# engine/bagstore.h) and a name that is not one of them is refused: a run
# with BAGSTORE_FAULT=nosuch (alone, or beside a real point) exits 2 naming
# it and listing the points, before it touches a shard, so a test with a
# typo fails instead of testing nothing. Every point of the list is
# accepted, one at a time and all together; and one still fires
# (after_entity_write: the put exits 75 with its entity written and no
# index row).
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
ROOT=${TEST_ROOT:-.}

t_exit 0 "init" -- "$B" -c "$C" init
t_exit 0 "index create" -- "$B" -c "$C" index create ix_k --on k:int --shard-on k

t_exit 2 "BAGSTORE_FAULT=nosuch: refused" -- env BAGSTORE_FAULT=nosuch "$B" -c "$C" index list
t_contains "$T_ERR" "no fault point is named 'nosuch'" "the message names it"
t_contains "$T_ERR" "after_entity_write" "and lists the points"
t_exit 2 "a typo beside a real point: refused" -- env BAGSTORE_FAULT=slow_chunk,slow_chnk "$B" -c "$C" cleaner --once
t_contains "$T_ERR" "'slow_chnk'" "the typo is named"
T_IN=$(t_tmp)/one.json
printf '{"k": 1}\n' >"$T_IN"
t_exit 2 "put with a misspelt point is refused" -- env BAGSTORE_FAULT=after_entity_writ "$B" -c "$C" put
t_eq "$(t_sql 0 'SELECT COUNT(*) FROM entities')$(t_sql 1 'SELECT COUNT(*) FROM entities')" "00" \
	"and writes nothing"

# the points, read from the one list
points=$(sed -n 's/^.*X([A-Z_]*, "\([a-z_]*\)",.*$/\1/p' "$ROOT/engine/bagstore.h")
rows=$(grep -c '^[[:space:]]*X([A-Z_]*, "' "$ROOT/engine/bagstore.h")
t_eq "$(printf '%s\n' "$points" | wc -l | tr -d ' ')" "$rows" "every row of BS_FAULTS read ($rows points)"
ids=$(sed -n 's/^[[:space:]]*X(\([A-Z_]*\), ".*$/\1/p' "$ROOT/engine/bagstore.h")
unused=""
for id in $ids; do
	grep -q "BS_FAULT_$id\b" "$ROOT"/engine/*.c "$ROOT"/tui/*/*.c "$ROOT"/views/*.c || unused="$unused $id"
done
t_eq "$unused" "" "every point of BS_FAULTS is checked somewhere"
all=""
for p in $points; do
	t_exit 0 "BAGSTORE_FAULT=$p is accepted" -- env BAGSTORE_FAULT=$p "$B" -c "$C" index list
	all="$all${all:+,}$p"
done
t_exit 0 "all of them at once" -- env BAGSTORE_FAULT="$all" "$B" -c "$C" index list

t_exit 75 "after_entity_write still fires" -- env BAGSTORE_FAULT=after_entity_write "$B" -c "$C" put
t_contains "$T_ERR" "fault after_entity_write" "and says so"
t_eq "$(($(t_sql 0 'SELECT COUNT(*) FROM entities') + $(t_sql 1 'SELECT COUNT(*) FROM entities')))" 1 \
	"its entity is written"
t_eq "$(($(t_sql 0 'SELECT COUNT(*) FROM ix_k') + $(t_sql 1 'SELECT COUNT(*) FROM ix_k')))" 0 \
	"and its index row is not"
t_done test_faults

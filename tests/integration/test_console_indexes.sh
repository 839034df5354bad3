#!/bin/sh
# test_console_indexes.sh - the indexes screen's actions, headless against
# real shards: create from the form with the DDL preview, backfill on a
# console worker, verify, drop only after the name is typed (the prompt
# naming rows and shards), each in the audit table; headers count what a
# filter shows ("1 of 3").
. tests/console/lib.sh

c_init
titled() { printf '{"title": "t%d", "n": %d}\n' $(($1 % 7)) "$1"; }
c_put 200 titled
t_exit 0 "an index to keep" -- "$BAGSTORE" -c "$CFG" index create index_n --on n:int --shard-on n

c_headless "headless index actions" tests/console/indexes.keys

t_contains "$(d create_form)" "create index: shard_on property" "create: the form asks shard_on"
t_contains "$(d ddl)" "CREATE TABLE" "create: the DDL is previewed"
t_contains "$(d ddl)" "index_title" "create: the DDL names the table"
t_contains "$(d ddl)" "y: create this index" "create: asks before creating"
t_contains "$(d created)" "index_title" "create: the new index is listed"
t_contains "$(d backfilled)" "ready" "backfill: the index became ready"
t_contains "$(d verified)" "verify index_title: checked 200, missing 0, stale 0, orphaned 0" "verify: counts shown"
t_contains "$(d drop_prompt)" "drop index_title: ~200 rows (InnoDB's estimate) on 2 shards. Type index_title to confirm:" \
	"drop: the confirmation names target and scale, the estimate marked"
t_contains "$(d drop_refused)" "not dropped: the name typed was not index_title" "drop: a wrong name refuses"
t_contains "$(d dropped)" "dropped index index_title" "drop: done after the name is typed"
t_eq "$(d dropped | grep -c '^index_title ')" 0 "drop: gone from the list"
t_exit 0 "index list" -- "$BAGSTORE" -c "$CFG" index list
case $T_OUT in
*index_title*) t_fail "the engine no longer has index_title" "$T_OUT" ;;
*) t_ok "the engine no longer has index_title" ;;
esac
t_contains "$T_OUT" "index_n" "the other index stays"

# headers count what the filter shows: "1 of 3", not 3
t_exit 0 "index_a" -- "$BAGSTORE" -c "$CFG" index create index_a --on title:string\(16\) --shard-on title
t_exit 0 "index_b" -- "$BAGSTORE" -c "$CFG" index create index_b --on title:string\(16\) --shard-on title
t_exit 0 "index_a's backfill cancelled" -- "$BAGSTORE" -c "$CFG" backfill cancel index_a
cat >"$T/filtered.keys" <<KEYS
keys 2
wait-idle
keys /index_a\n
wait-idle
dump ix_filtered
keys 4
wait-idle
keys /index_a\n
wait-idle
dump bf_filtered
keys :q\n
KEYS
c_headless "filtered headers" "$T/filtered.keys"
t_contains "$(d ix_filtered)" "Indexes: 1 of 3 " "indexes: the header counts the rows the filter shows"
t_match "$(d ix_filtered)" "^index_a .* 0\.0% cancelled " "a cell wider than its column gets the room left, not cut short"
t_match "$(d bf_filtered)" "Backfills: 2 of [0-9]+ jobs" "backfills: the header counts the rows the filter shows"

# V: one index row gone, repaired; the status line counts it and DRIFT no
# longer says it is missing
t_exit 0 "backfill index_n" -- "$BAGSTORE" -c "$CFG" cleaner --index index_n
t_sql 0 "DELETE FROM index_n LIMIT 1"
cat >"$T/repair.keys" <<KEYS
keys 2
wait-idle
keys /index_n\n
wait-idle
keys V
wait-for repaired
wait-idle
dump repaired
keys :q\n
KEYS
c_headless "V repairs a missing row" "$T/repair.keys"
t_contains "$(d repaired | tr -s '\n ' '  ')" "verify index_n: checked 200, missing 1, stale 0, orphaned 0, misfit 0; 1 index row repaired" \
	"V: the status line says how many rows it repaired"
t_match "$(d repaired)" "^index_n .* ok: 1 repaired, " "V: DRIFT says the missing row was repaired"
c_lacks repaired "miss 1" "V: DRIFT no longer says a row is missing"

# an exact count is of the index counted: dropped, its note goes; made
# again under the same name, the new index's rows are estimates again and
# no note claims they were counted
t_exit 0 "index_gone" -- "$BAGSTORE" -c "$CFG" index create index_gone --on n:int --shard-on n
t_exit 0 "index_gone backfilled" -- "$BAGSTORE" -c "$CFG" cleaner --index index_gone
cat >"$T/gone.keys" <<KEYS
keys 2
wait-idle
keys /index_gone\n
wait-idle
key #
wait-for rows counted exactly
wait-idle
dump gone_counted
keys d
keys index_gone\n
wait-for dropped index index_gone
wait-idle
dump gone_dropped
keys c
keys index_gone\n
keys n:int\n
keys \n
keys y
wait-for created index index_gone
wait-idle
dump gone_recreated
keys :q\n
KEYS
c_headless "an exact count outlived by its index" "$T/gone.keys"
t_contains "$(d gone_counted)" "index_gone: rows counted exactly" "# counts the index"
t_match "$(d gone_counted)" "^index_gone .* 200 " "its rows counted exactly"
c_lacks gone_dropped "index_gone: rows counted exactly" "dropped: the note of its count goes"
t_match "$(d gone_recreated)" "^index_gone +building " "made again under the same name"
c_lacks gone_recreated "index_gone: rows counted exactly" "the new index is not said to be counted"

audit=$(t_sql 0 "SELECT action, target FROM bagstore_audit ORDER BY 1"; t_sql 1 "SELECT action, target FROM bagstore_audit ORDER BY 1")
t_contains "$audit" "index.create	index_title" "audit: create"
t_contains "$audit" "index.backfill	index_title" "audit: backfill"
t_contains "$audit" "index.drop	index_title" "audit: drop"
t_done test_console_indexes

#!/bin/sh
# test_cleaner_fills.sh - a repair pass that fills the rows of an index still
# building (a new daemon's first pass reads every entity written since the
# oldest index was made) counts them as fills, apart from drift repaired:
# `lag --json` fills_total, and the cleaner screen's FILLED beside REPAIRED.
. tests/console/lib.sh

c_init
t_exit 0 "an older index (empty store: ready)" -- "$BAGSTORE" -c "$CFG" index create ix_old --on k:int --shard-on k
i=0
while [ $i -lt 300 ]; do printf '{"k": %d, "m": %d}\n' $i $i; i=$((i + 1)); done >"$T/e.jsonl"
t_exit 0 "put 300" -- "$BAGSTORE" -c "$CFG" put "$T/e.jsonl"
t_exit 0 "a new index (building)" -- "$BAGSTORE" -c "$CFG" index create ix_new --on m:int --shard-on m
# one drifted row of the ready index, the only drift there is
t_sql 0 "DELETE FROM ix_old LIMIT 1"
# its backfill paused: the pass meets it still building
t_exit 0 "ix_new's backfill paused" -- "$BAGSTORE" -c "$CFG" backfill pause ix_new
t_exit 0 "the first repair pass" -- "$BAGSTORE" -c "$CFG" cleaner --once
t_exit 0 "lag --json" -- "$BAGSTORE" -c "$CFG" lag --json
rep=$(printf '%s' "$T_OUT" | jq '[.[].repairs_total] | add')
fil=$(printf '%s' "$T_OUT" | jq '[.[].fills_total] | add')
new=$(( $(t_sql 0 "SELECT COUNT(*) FROM ix_new") + $(t_sql 1 "SELECT COUNT(*) FROM ix_new") ))
t_eq "$rep" 1 "REPAIRED counts the one drifted row, not the building index's rows"
t_eq "$(( fil > 0 ))" 1 "the building index's rows are counted as fills ($fil)"
t_eq "$(( fil <= new ))" 1 "fills are rows of the new index (at most its $new)"
cat >"$T/cleaner.keys" <<KEYS
keys 3
wait-idle
dump cleaner
keys :q\\n
KEYS
c_headless "the cleaner screen" "$T/cleaner.keys"
t_contains "$(d cleaner)" "REPAIRED   FILLED" "the cleaner screen: FILLED beside REPAIRED"
t_done test_cleaner_fills

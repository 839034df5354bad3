#!/bin/sh
# test_console_readonly.sh - with --read-only (and with read_only: true in
# the configuration) the keys that change data do nothing (on every screen
# that has one, the census's `c` and the audit's `u` included), help does
# not offer them, the status line says READ-ONLY, and the shards are
# unchanged. Every "does not show" is checked on a dump that shows the
# console, beside something it must show.
. tests/console/lib.sh
EDITOR=false
export EDITOR

c_init
t_exit 0 "an index" -- "$BAGSTORE" -c "$CFG" index create index_n --on n:int --shard-on n
printf '{"n": %d}\n' 1 2 3 4 5 6 7 8 >"$T/e.jsonl"
t_exit 0 "put 8 entities" -- "$BAGSTORE" -c "$CFG" put "$T/e.jsonl"
before=$(t_sql 0 "SELECT COUNT(*) FROM entities"; t_sql 1 "SELECT COUNT(*) FROM entities";
	t_sql 0 "SELECT COUNT(*), MAX(updated) FROM entities"; t_sql 0 "SELECT state FROM bagstore_jobs ORDER BY 1")
# the set-up above is audited (index create, put); the console must add nothing
audited=$(t_sql 0 'SELECT COUNT(*) FROM bagstore_audit'; t_sql 1 'SELECT COUNT(*) FROM bagstore_audit')
t_eq "$(printf '%s\n' "$audited" | awk '{ s += $1 } END { print s }')" 2 "the set-up's two command-line changes are audited"

c_headless "read-only headless run" tests/console/readonly.keys --read-only
t_contains "$(d shards)" "READ-ONLY" "the status line says read-only"
t_contains "$(d create)" "read-only: this key changes data and is disabled" "c does nothing"
# each negative check is paired with a positive one on the same dump, and
# c_lacks fails when the dump is missing or does not show the console
c_lacks create "create index: name" "no create form"
t_contains "$(d drop)" "read-only: this key changes data and is disabled" "d does nothing"
t_contains "$(d drop)" "index_n" "drop: the indexes screen is shown"
c_lacks drop "Type index_n" "no drop prompt"
t_contains "$(d indexes)" "index_n" "the index is still there"
t_contains "$(d help)" "verify the selected index" "help keeps read-only actions"
c_lacks help "drop the selected index" "help has no drop"
c_lacks help "(changes data)" "help has no dangerous action"
t_contains "$(d help)" "READ-ONLY: the keys that change data are removed." "help says read-only"
t_contains "$(d entities)" "read-only: this key changes data and is disabled" "entities: e, d, n do nothing"
t_contains "$(d entities)" "Entities, newest first" "entities: the browser is shown"
c_lacks entities "delete entity" "no delete prompt on entities"
c_lacks entities "create index: name" "no create form on entities"
t_contains "$(d entity)" "decoded:" "entity: the entity is shown"
c_lacks entity "delete entity" "no delete prompt on an entity"
t_contains "$(d entity)" "x raw bytes / tree   q back" "entity: the hints leave out edit and delete"
t_contains "$(d backfills)" "index_n@s0" "backfills: the jobs are shown"
t_contains "$(d backfills)" "read-only: this key changes data and is disabled" "backfills: x does nothing"
c_lacks backfills "cancel backfill" "no cancel prompt"
t_contains "$(d audit)" "changes, the newest of every shard" "audit: the screen is shown"
t_contains "$(d audit)" "read-only: this key changes data and is disabled" "audit: u does nothing"
c_lacks audit "Undo " "no undo question"
t_contains "$(d properties)" "Properties of 8 sampled entities" "properties: the census is shown"
t_contains "$(d properties)" "read-only: this key changes data and is disabled" "properties: c does nothing"
c_lacks properties "create index: name" "no create form from the census"
after=$(t_sql 0 "SELECT COUNT(*) FROM entities"; t_sql 1 "SELECT COUNT(*) FROM entities";
	t_sql 0 "SELECT COUNT(*), MAX(updated) FROM entities"; t_sql 0 "SELECT state FROM bagstore_jobs ORDER BY 1")
t_eq "$after" "$before" "nothing changed on the shards"
t_eq "$(t_sql 0 'SELECT COUNT(*) FROM bagstore_audit'; t_sql 1 'SELECT COUNT(*) FROM bagstore_audit')" "$audited" "the read-only console audited nothing"

# read_only: true in the configuration does the same
{ cat "$CFG"; echo "read_only: true"; } >"$T/ro.yaml"
printf 'keys 2\nwait-idle\nkeys c\ndump create\nkeys :q\\n\n' >"$T/ro.keys"
t_exit 0 "read_only in the configuration" -- "$BAGSTORE" -c "$T/ro.yaml" --headless "$T/ro.keys" --dump-dir "$D"
t_contains "$(d create)" "READ-ONLY" "config read_only: the status line"
t_contains "$(d create)" "read-only: this key changes data" "config read_only: c does nothing"
c_lacks create "create index: name" "config read_only: no create form"
t_done test_console_readonly

#!/bin/sh
# test_console_readonly.sh - with --read-only (and with read_only: true in
# the configuration) the keys that change data do nothing, help does not
# offer them, the status line says READ-ONLY, and the shards are unchanged.
. tests/console/lib.sh
EDITOR=false
export EDITOR

c_init
t_exit 0 "an index" -- "$BAGSTORE" -c "$CFG" index create index_n --on n:int --shard-on n
printf '{"n": %d}\n' 1 2 3 4 5 6 7 8 >"$T/e.jsonl"
t_exit 0 "put 8 entities" -- "$BAGSTORE" -c "$CFG" put "$T/e.jsonl"
before=$(t_sql 0 "SELECT COUNT(*) FROM entities"; t_sql 1 "SELECT COUNT(*) FROM entities";
	t_sql 0 "SELECT COUNT(*), MAX(updated) FROM entities"; t_sql 0 "SELECT state FROM bagstore_jobs ORDER BY 1")

c_headless "read-only headless run" tests/console/readonly.keys --read-only
t_contains "$(d shards)" "READ-ONLY" "the status line says read-only"
t_contains "$(d create)" "read-only: this key changes data and is disabled" "c does nothing"
case $(d create) in *"create index: name"*) t_fail "no create form" ;; *) t_ok "no create form" ;; esac
case $(d drop) in *"Type index_n"*) t_fail "no drop prompt" ;; *) t_ok "no drop prompt" ;; esac
t_contains "$(d indexes)" "index_n" "the index is still there"
t_contains "$(d help)" "verify the selected index" "help keeps read-only actions"
case $(d help) in *"drop the selected index"*|*"(changes data)"*) t_fail "help has no dangerous action" "$(d help)" ;;
*) t_ok "help has no dangerous action" ;; esac
t_contains "$(d help)" "READ-ONLY: the keys that change data are removed." "help says read-only"
case $(d entities) in *"delete entity"*) t_fail "no delete prompt on entities" ;; *) t_ok "no delete prompt on entities" ;; esac
case $(d entity) in *"delete entity"*) t_fail "no delete prompt on an entity" ;; *) t_ok "no delete prompt on an entity" ;; esac
t_contains "$(d entity)" "x raw bytes / tree   q back" "entity: the hints leave out edit and delete"
case $(d backfills) in *"cancel backfill"*) t_fail "no cancel prompt" ;; *) t_ok "no cancel prompt" ;; esac
after=$(t_sql 0 "SELECT COUNT(*) FROM entities"; t_sql 1 "SELECT COUNT(*) FROM entities";
	t_sql 0 "SELECT COUNT(*), MAX(updated) FROM entities"; t_sql 0 "SELECT state FROM bagstore_jobs ORDER BY 1")
t_eq "$after" "$before" "nothing changed on the shards"
t_eq "$(t_sql 0 'SELECT COUNT(*) FROM bagstore_audit')" 0 "nothing audited"

# read_only: true in the configuration does the same
{ cat "$CFG"; echo "read_only: true"; } >"$T/ro.yaml"
printf 'keys 2\nwait-idle\nkeys c\ndump create\nkeys :q\\n\n' >"$T/ro.keys"
t_exit 0 "read_only in the configuration" -- "$BAGSTORE" -c "$T/ro.yaml" --headless "$T/ro.keys" --dump-dir "$D"
t_contains "$(d create)" "READ-ONLY" "config read_only: the status line"
t_contains "$(d create)" "read-only: this key changes data" "config read_only: c does nothing"
t_done test_console_readonly

#!/bin/sh
# test_audit.sh - the audit log and undo, against real shards: who (OS user,
# host, pid), when, what and on which shards, with an entity change's
# before and after (bagstore audit, --json); undo from the console's audit
# screen (u on a row, y on a change's page) writes the before-image back
# byte for byte; an entity changed
# since (from the CLI) makes the undo refuse with the conflict page and
# write nothing; a delete's undo re-creates the entity, a create's deletes
# it; every undo is audited; a backfill's pause, resume and cancel write one
# row each, whichever front end made them.
. tests/console/lib.sh
export BAGSTORE BAGSTORE_TEST_CONFIG
TMPDIR=$T
export TMPDIR

c_init
t_exit 0 "an index (ready: the store is empty)" -- "$BAGSTORE" -c "$CFG" index create index_user --on "user:string(32)" --shard-on user
post() { printf '{"user": "u%d", "title": "post %d", "n": %d, "tags": ["a", "b"]}\n' $(($1 % 2)) "$1" "$1"; }
c_put 4 post
A=$(printf '%s\n' "$T_OUT" | sed -n 1p)
B=$(printf '%s\n' "$T_OUT" | sed -n 2p)
C=$(printf '%s\n' "$T_OUT" | sed -n 3p)
body() { t_sql 0 "SELECT HEX(body) FROM entities WHERE id=X'$1'"; t_sql 1 "SELECT HEX(body) FROM entities WHERE id=X'$1'"; }
rows_of() { t_sql 0 "SELECT COUNT(*) FROM bagstore_audit WHERE action='$1'"; t_sql 1 "SELECT COUNT(*) FROM bagstore_audit WHERE action='$1'"; }
sum() { awk '{ s += $1 } END { print s + 0 }'; }
a_before=$(body "$A")

# --- edit A in the console, then undo it from the audit screen
cat >"$T/edit.keys" <<KEYS
keys :entity $A\n
wait-idle
keys e
keys y
wait-for saved entity
wait-idle
keys 7
wait-idle
dump audit_after_edit
key Enter
dump audit_entry
key q
keys u
dump undo_ask
keys y
wait-for undid
wait-idle
dump undone
keys :q\n
KEYS
EDITOR="sh $TEST_ROOT/tests/console/edit_title.sh" c_headless "edit, then undo" "$T/edit.keys"
t_contains "$(d audit_after_edit)" "entity.edit" "the audit screen lists the edit"
t_contains "$(d audit_after_edit)" "$A" "with the entity as its target"
t_contains "$(d audit_entry)" "--- before:" "Enter: the change in full, its before"
t_contains "$(d audit_entry)" "title: post 0" "the before-image"
t_contains "$(d audit_entry)" "title: edited in the console" "the after-image"
t_contains "$(d undo_ask | tr -s '\n ' '  ')" "only if the entity is still what this change wrote. y/n" "u asks, saying the condition"
t_contains "$(d undone)" "undid" "the undo is done"
t_eq "$(body "$A")" "$a_before" "undo: the stored body equals the original byte for byte"
t_exit 0 "get A" -- "$BAGSTORE" -c "$CFG" get "$A"
t_contains "$T_OUT" '"title":"post 0"' "get reads the original again"
t_exit 0 "query through the index" -- "$BAGSTORE" -c "$CFG" query index_user user=u0
t_contains "$T_OUT" '"title":"post 0"' "A is found through its index after the undo"

# --- the audit from the command line: who, when, what, where, before and after
t_exit 0 "bagstore audit" -- "$BAGSTORE" -c "$CFG" audit
t_contains "$T_OUT" "entity.undo" "audit lists the undo"
t_contains "$T_OUT" "entity.edit" "audit lists the edit"
t_contains "$T_OUT" "$(id -un)@$(hostname)" "who: the OS user and host"
t_exit 0 "bagstore audit --json" -- "$BAGSTORE" -c "$CFG" audit --json
printf '%s\n' "$T_OUT" >"$T/audit.json"
py=$(python3 - "$T/audit.json" "$A" "$(id -un)" "$(hostname)" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
a, user, host = sys.argv[2], sys.argv[3], sys.argv[4]
edit = [r for r in rows if r["action"] == "entity.edit" and r["entity"] == a][0]
undo = [r for r in rows if r["action"] == "entity.undo" and r["entity"] == a][0]
shard = edit["shards"]
print("who", edit["os_user"] == user and edit["host"] == host and isinstance(edit["pid"], int) and edit["pid"] > 0)
print("where", shard in ("s0", "s1"))
print("before", edit["before"]["title"] == "post 0" and edit["before_updated_us"] > 0)
print("after", edit["after"]["title"] == "edited in the console" and edit["after_updated_us"] > edit["before_updated_us"])
print("undo", undo["before"]["title"] == "edited in the console" and undo["after"]["title"] == "post 0")
print("undo-detail", undo["detail"].startswith("undo of ") and "entity.edit" in undo["detail"])
print("order", rows.index(undo) < rows.index(edit))
PY
)
for k in who where before after undo undo-detail order; do
	t_contains "$py" "$k True" "audit --json: $k"
done

# --- edit B, change it from the CLI, then undo: refused, nothing written
cat >"$T/edit_b.keys" <<KEYS
keys :entity $B\n
wait-idle
keys e
keys y
wait-for saved entity
keys :q\n
KEYS
EDITOR="sh $TEST_ROOT/tests/console/edit_title.sh" c_headless "edit B" "$T/edit_b.keys"
t_exit 0 "B changed from the CLI" -- sh -c "printf '{\"id\": {\"\$uuid\": \"%s\"}, \"title\": \"changed elsewhere\"}\n' \
	\$(echo $B | sed 's/\(........\)\(....\)\(....\)\(....\)\(............\)/\1-\2-\3-\4-\5/') | \"$BAGSTORE\" -c \"$CFG\" put -"
b_now=$(body "$B")
undo_before=$(rows_of entity.undo | sum)
cat >"$T/undo_b.keys" <<KEYS
keys 7
wait-idle
keys /$B
key Enter
keys u
keys y
wait-for CONFLICT
dump conflict
keys :q\n
KEYS
c_headless "undo B after it changed" "$T/undo_b.keys"
t_contains "$(d conflict)" "CONFLICT: entity $B changed since" "undo refused: the conflict page"
t_contains "$(d conflict)" "the undo; nothing was written." "it says nothing was written"
t_contains "$(d conflict)" "- title: changed elsewhere" "the store's version"
t_contains "$(d conflict)" "+ title: post 1" "what the undo would have written"
t_eq "$(body "$B")" "$b_now" "undo refused: B's body is unchanged"
t_eq "$(rows_of entity.undo | sum)" "$undo_before" "a refused undo audits nothing"

# --- delete C, undo: C is back, byte for byte
c_before=$(body "$C")
cat >"$T/del.keys" <<KEYS
keys :entity $C\n
wait-idle
keys d
keys $(printf %.8s "$C")\n
wait-for deleted entity
keys 7
wait-idle
keys u
keys y
wait-for undid
keys :q\n
KEYS
c_headless "delete C, then undo" "$T/del.keys"
t_eq "$(body "$C")" "$c_before" "a delete's undo re-creates the entity, byte for byte"
t_eq "$(rows_of entity.delete | sum)" 1 "the delete is audited once"

# --- create D in the console, undo it from its page on the audit screen
# (Enter, then y): D is gone
cat >"$T/create.keys" <<KEYS
keys 5
wait-idle
keys n
keys y
wait-for created entity
keys 7
wait-idle
dump created_audit
key Enter
dump created_page
keys y
wait-for undid
keys :q\n
KEYS
EDITOR="sh $TEST_ROOT/tests/console/edit_add.sh" c_headless "create D, then undo" "$T/create.keys"
# (not D: c_headless dumps into $D)
DID=$(d created_audit | sed -n 's/.*entity\.create *\([0-9a-f]\{32\}\).*/\1/p' | head -n 1)
t_match "$DID" '^[0-9a-f]{32}$' "the create is on the audit screen"
t_contains "$(d created_page)" "y: undo this change: delete it, only if the entity is still what it wrote" \
	"an entity change's page offers its undo"
t_exit 1 "a create's undo deletes it" -- "$BAGSTORE" -c "$CFG" get "$DID"

# --- backfill controls: one row each, from the command line and the console
numbered() { printf '{"m": %d}\n' "$1"; }
c_put 50 numbered
t_exit 0 "a building index" -- "$BAGSTORE" -c "$CFG" index create index_m --on m:int --shard-on m
for a in pause resume cancel; do
	t_exit 0 "backfill $a from the command line" -- "$BAGSTORE" -c "$CFG" backfill $a index_m
	t_eq "$(rows_of "backfill.$a" | sum)" 1 "backfill $a: one audit row"
done
t_eq "$(rows_of "backfill pause" | sum)" 0 "no undotted second row"

# --- every change from the command line is audited too: index create and
# drop, verify --repair, a backfill run, a put (one row per run), a delete
# (with its before-image, so the console can undo it)
detail_of() { t_sql 0 "SELECT detail FROM bagstore_audit WHERE action='$1' ORDER BY id DESC LIMIT 1"; t_sql 1 "SELECT detail FROM bagstore_audit WHERE action='$1' ORDER BY id DESC LIMIT 1"; }
target_of() { t_sql 0 "SELECT target FROM bagstore_audit WHERE action='$1' ORDER BY id DESC LIMIT 1"; t_sql 1 "SELECT target FROM bagstore_audit WHERE action='$1' ORDER BY id DESC LIMIT 1"; }
t_eq "$(rows_of index.create | sum)" 2 "index create from the command line: one row per index"
t_contains "$(detail_of index.create)" "on m:int shard_on m; from the command line" "its detail: the definition, and where it came from"
t_eq "$(target_of entity.put)" "50 entities" "a put: one row naming how many it stored"
t_contains "$(detail_of entity.put)" "put from $T/e.jsonl; from the command line" "with its input"
t_exit 0 "an index to backfill" -- "$BAGSTORE" -c "$CFG" index create index_n --on m:int --shard-on m
t_exit 0 "a backfill run from the command line" -- "$BAGSTORE" -c "$CFG" cleaner --index index_n
t_eq "$(rows_of index.backfill | sum)" 1 "cleaner --index: one row"
t_eq "$( (t_sql 0 "SELECT COUNT(*) FROM index_n"; t_sql 1 "SELECT COUNT(*) FROM index_n") | sum)" 50 "the backfill wrote its rows"
t_sql 0 "DELETE FROM index_n LIMIT 1" >/dev/null
t_sql 1 "DELETE FROM index_n LIMIT 2" >/dev/null
t_exit 0 "verify --repair from the command line" -- "$BAGSTORE" -c "$CFG" verify --index index_n --repair
t_eq "$(rows_of index.repair | sum)" 1 "verify --repair: one row"
t_contains "$(detail_of index.repair)" "3 index rows repaired" "saying how many rows it repaired"
t_exit 0 "verify without --repair" -- "$BAGSTORE" -c "$CFG" verify --index index_n
t_eq "$(rows_of index.repair | sum)" 1 "a verify that repairs nothing adds no row"
t_exit 0 "index drop from the command line" -- "$BAGSTORE" -c "$CFG" index drop index_m --yes
t_eq "$(rows_of index.drop | sum)" 1 "index drop: one row"

b_before=$(body "$B")
t_exit 0 "delete B from the command line" -- "$BAGSTORE" -c "$CFG" delete "$B"
t_eq "$(rows_of entity.delete | sum)" 2 "the delete is audited"
t_exit 1 "delete of an absent entity" -- "$BAGSTORE" -c "$CFG" delete "$B"
t_eq "$(rows_of entity.delete | sum)" 2 "a delete that deletes nothing is not audited"
cat >"$T/undo_cli.keys" <<KEYS
keys 7
wait-idle
keys /$B
key Enter
key Enter
dump cli_delete_entry
key q
keys u
keys y
wait-for undid
keys :q\n
KEYS
c_headless "undo the command line's delete in the console" "$T/undo_cli.keys"
t_contains "$(d cli_delete_entry)" "from the command line" "the console shows where the delete came from"
t_eq "$(body "$B")" "$b_before" "the command line's delete undone: B is back, byte for byte"

# --- a put stopped by a signal still leaves its row: SIGTERM while it
# waits for input (batches of 10, 30 lines stored), ten more lines after the
# signal; it stores none of those, records the 30 and dies of the signal
ents() { (t_sql 0 "SELECT COUNT(*) FROM entities"; t_sql 1 "SELECT COUNT(*) FROM entities") | sum; }
n0=$(ents)
puts0=$(rows_of entity.put | sum)
rm -f "$T/fifo"
mkfifo "$T/fifo"
"$BAGSTORE" -c "$CFG" put --batch 10 - <"$T/fifo" >"$T/sig.out" 2>"$T/sig.err" &
sig_pid=$!
exec 7>"$T/fifo"
for i in $(seq 1 30); do printf '{"sig": %d}\n' "$i" >&7; done
i=0
while [ "$(wc -l <"$T/sig.out")" -lt 30 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
kill -TERM "$sig_pid"
sleep 0.3
# in a subshell: once the put has died, a write to its fifo is SIGPIPE,
# which must end these writes and not this script
(for i in $(seq 31 40); do printf '{"sig": %d}\n' "$i" >&7; done) 2>/dev/null
exec 7>&-
wait "$sig_pid"
t_eq "$?" 143 "a put sent SIGTERM dies of it (128+15)"
t_eq "$(wc -l <"$T/sig.out" | tr -d ' ')" 30 "the ids it stored were printed"
t_eq "$(ents)" $((n0 + 30)) "it stored those 30 and none of the lines after the signal"
t_eq "$(rows_of entity.put | sum)" $((puts0 + 1)) "its row is in the audit log"
t_eq "$(target_of entity.put)" "30 entities" "naming the 30 it stored"
t_contains "$(detail_of entity.put)" "interrupted by signal 15" "and why it stopped"
t_contains "$(cat "$T/sig.err")" "interrupted by signal 15 after line" "it says so on stderr"

# --- a delete cut short (its entity gone, its index row's shard down) is a
# change all the same: audited with its before-image, saying what failed
E=$(t_sql 0 "SELECT LOWER(HEX(id)) FROM entities" | sort >"$T/s0.ids"; t_sql 1 "SELECT LOWER(HEX(entity_id)) FROM index_n" | sort >"$T/s1.ix"; comm -12 "$T/s0.ids" "$T/s1.ix" | head -1)
t_match "$E" '^[0-9a-f]{32}$' "an entity on s0 whose index_n row is on s1"
e_before=$(body "$E")
sh "$SHARDS_SH" stop-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
"$BAGSTORE" -c "$CFG" delete "$E" >"$T/cut.out" 2>"$T/cut.err"
cut_rc=$?
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM entities WHERE id=X'$E'")" 0 "with s1 down, the delete removed the entity from s0"
t_match "$cut_rc" '^[1-9]' "and failed, its index row unreachable"
t_contains "$(cat "$T/cut.err")" "s1" "naming the shard"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_audit WHERE action='entity.delete' AND LOWER(HEX(entity_id))='$E'")" 1 "it is audited all the same"
t_contains "$(t_sql 0 "SELECT detail FROM bagstore_audit WHERE action='entity.delete' AND LOWER(HEX(entity_id))='$E'")" "cut short" "saying it was cut short"
t_eq "$(t_sql 0 "SELECT HEX(before_body) FROM bagstore_audit WHERE action='entity.delete' AND LOWER(HEX(entity_id))='$E'")" "$e_before" "with its before-image, byte for byte"
sh "$SHARDS_SH" start-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1

# the change is made even when its row cannot be written, and says so
t_sql 0 "RENAME TABLE bagstore_audit TO bagstore_audit_away" >/dev/null
t_sql 1 "RENAME TABLE bagstore_audit TO bagstore_audit_away" >/dev/null
t_exit 0 "a change with no audit table" -- "$BAGSTORE" -c "$CFG" index create index_x --on x:int --shard-on x
t_contains "$T_ERR" "warning: not in the audit log: index.create index_x" "warns that the row is missing"
t_sql 0 "RENAME TABLE bagstore_audit_away TO bagstore_audit" >/dev/null
t_sql 1 "RENAME TABLE bagstore_audit_away TO bagstore_audit" >/dev/null
t_done test_audit

#!/bin/sh
# test_settle_race.sh - a fix of index rows made from a body a writer has
# replaced meanwhile never stands: the cleaner reads the entity again after
# every fix, until a read finds it unchanged.
#
# Found by test_reshard under ThreadSanitizer (issue 11's lost index rows):
# the move's repair of the entities it moved (as every repair pass, and
# verify --repair) fixes a batch's rows, then re-reads the entities and
# fixes again those a writer changed: three rounds at most, the last fix
# never checked. A writer whose entity write lands after a round's read and
# whose index rows land before that round's fix has them undone: the fix
# deletes the writer's row (on the wrong shard for the old body) and writes
# the old body's. With no later read, the entity kept a stale row and lost
# its right one; in a reshard the stale one was in a moving bucket, which
# the cleanup then deleted: a row simply missing.
#
# Here verify --repair is stopped before each of its fixes reads the rows
# (fault pause_drift_fix), and while it is stopped a writer moves E's row
# from one shard to the other (v odd on s1, even on s0): four times, one
# more than the old three rounds. It must end with E's one right row.
# Then: E deleted before a fix; F deleted before a fix whose check then
# fails (the read after the fix still runs); G deleted before a fix whose
# process is killed right after it (its intent, written first, stays for
# the repair loop).
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
T=$(t_tmp)
T_TIMEOUT=120

uuid() { printf '%08x-0000-4000-8000-%012x' "$1" "$2"; }
hex() { printf '%s' "$1" | tr -d -; }
E=$(uuid 2 2)
EH=$(hex "$E")
# put_v V [ID]: ID (E) put with v=V
put_v() {
	printf '{"id":{"$uuid":"%s"},"v":%d}\n' "${2:-$E}" "$1" >"$T/e.json"
	"$B" -c "$C" put "$T/e.json" >/dev/null
}
state() { awk '{print $3}' "/proc/$1/stat" 2>/dev/null; }
# wait until process $1 stops (T: prints "stopped") or ends ("gone")
wait_stop() {
	for _ in $(seq 1 600); do
		case $(state "$1") in
		T) echo stopped; return ;;
		'' | Z) echo gone; return ;;
		esac
		sleep 0.05
	done
	echo running
}

# repair_deleting ID OUT [FAULT]: verify --repair of ix_v stopped before
# each fix reads the rows (pause_drift_fix, and FAULT), entity ID deleted
# while the first fix is stopped, every later stop let run; $stops counts
# the stops, $vrc is its exit status, OUT.out and OUT.err its output
repair_deleting() {
	BAGSTORE_FAULT=pause_drift_fix${3:+,$3} "$B" -c "$C" verify --repair --index ix_v >"$2.out" 2>"$2.err" &
	vp=$!
	stops=0
	while [ "$(wait_stop $vp)" = stopped ] && [ $stops -lt 40 ]; do
		stops=$((stops + 1))
		[ $stops = 1 ] && { "$B" -c "$C" delete "$1" >/dev/null || t_fail "delete $1 while the fix is stopped"; }
		kill -CONT $vp
	done
	wait $vp
	vrc=$?
}
# both SQL: its count on s0 plus its count on s1
both() { echo $(($(t_sql 0 "$1") + $(t_sql 1 "$1"))); }

t_exit 0 "init" -- "$B" -c "$C" init
t_exit 0 "index ix_v on v (shard_on v)" -- "$B" -c "$C" index create ix_v --on v:int --shard-on v
t_exit 0 "ix_v ready (no entity yet)" -- "$B" -c "$C" cleaner --index ix_v
t_exit 0 "E, v=2 (its row on s0)" -- put_v 2
t_eq "$(t_sql 0 "SELECT v FROM ix_v WHERE entity_id=X'$EH'")" 2 "E's row: v=2 on s0"

BAGSTORE_FAULT=pause_drift_fix "$B" -c "$C" verify --repair --index ix_v >"$T/v.out" 2>"$T/v.err" &
vp=$!
stops=0
for v in 3 4 5 6; do
	[ "$(wait_stop $vp)" = stopped ] || break
	stops=$((stops + 1))
	put_v $v || t_fail "put v=$v while the fix is stopped"
	kill -CONT $vp
done
# no more writes: let every further round run
while [ "$(wait_stop $vp)" = stopped ] && [ $stops -lt 40 ]; do
	stops=$((stops + 1))
	kill -CONT $vp
done
wait $vp
t_match "$stops" '^([5-9]|[1-3][0-9])$' "the repair fixed E again after each of the 4 writes, and checked it after the last fix"
t_contains "$(cat "$T/v.err")" "fault pause_drift_fix" "it stopped at the fault point"
t_eq "$(t_sql 0 "SELECT GROUP_CONCAT(v) FROM ix_v WHERE entity_id=X'$EH'")" 6 "E's row on s0: v=6, the last write's"
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM ix_v WHERE entity_id=X'$EH'")" 0 "and none left on s1"
t_exit 0 "verify ix_v: no drift" -- "$B" -c "$C" verify --index ix_v
t_contains "$T_OUT" "1 entities checked, 0 missing, 0 stale, 0 orphaned" "verify: 0 missing, 0 stale"
t_exit 0 "query v=6" -- "$B" -c "$C" query ix_v v=6
t_contains "$T_OUT" "$E" "the query finds E"

# An entity that changes before every fix, however many: the rounds stop
# (16 fixes), and E is left an intent that the repair loop settles.
BAGSTORE_FAULT=pause_drift_fix "$B" -c "$C" verify --repair --index ix_v >"$T/v2.out" 2>"$T/v2.err" &
vp=$!
stops=0 v=7
while [ "$(wait_stop $vp)" = stopped ] && [ $stops -lt 40 ]; do
	stops=$((stops + 1))
	put_v $v || t_fail "put v=$v while the fix is stopped"
	v=$((v + 1))
	kill -CONT $vp
done
wait $vp
t_eq "$stops" 17 "a write before each of 17 fixes (the batch's, then 16 rounds)"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_intents WHERE entity_id=X'$EH' AND token LIKE 'bagstore.r.%'")" 1 \
	"E is left an intent on its shard"
last=$((v - 1))
sleep 1.2 # the repair loop takes intents older than a second
t_exit 0 "a repair pass" -- "$B" -c "$C" cleaner --once
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_intents WHERE entity_id=X'$EH'")" 0 "the repair loop settled the intent"
t_exit 0 "verify ix_v after it: no drift" -- "$B" -c "$C" verify --index ix_v
t_contains "$T_OUT" "1 entities checked, 0 missing, 0 stale, 0 orphaned" "verify: 0 missing, 0 stale"
t_exit 0 "query v=$last" -- "$B" -c "$C" query ix_v v=$last
t_contains "$T_OUT" "$E" "the query finds E at its last value"

# E deleted before the fix: the fix (from the body it read) writes E's row
# back, the next round finds E gone and deletes it, and the one after finds
# it still gone: settled, no intent.
repair_deleting "$E" "$T/v3"
t_eq "$stops" 2 "two fixes: the batch's (from E's body), then the one that finds E gone"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM ix_v WHERE entity_id=X'$EH'") $(t_sql 1 "SELECT COUNT(*) FROM ix_v WHERE entity_id=X'$EH'")" \
	"0 0" "E has no row left"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_intents WHERE entity_id=X'$EH'")" 0 "and no intent: a gone entity that stays gone is settled"
t_eq "$(both "SELECT COUNT(*) FROM bagstore_intents WHERE token LIKE 'bagstore.f.%'")" \
	0 "and the intents its fixes wrote first are gone: checked and settled"

# The same with the check failing right after its fix commits (fault
# drift_fail_after_fix, as another shard's deadlock or buckets that kept
# moving would): the pass fails, but the read that follows a fix still
# runs, so the row written back from F's old body does not outlive F.
# (A failed check used to skip it: F's row stayed, an orphan no later batch
# looks at, F being in none; test_reshard met it once in a move's repair.)
F=$(uuid 3 3)
FH=$(hex "$F")
t_exit 0 "F, v=8 (its row on s0)" -- put_v 8 "$F"
repair_deleting "$F" "$T/v4" drift_fail_after_fix
t_match "$vrc" '^[1-9][0-9]*$' "verify --repair fails: its check failed"
t_contains "$(cat "$T/v4.err")" "fault drift_fail_after_fix" "at the fault point, after its fix"
# it changed rows before it failed: audited all the same, saying so
cut="SELECT detail FROM bagstore_audit WHERE action='index.repair' AND target='ix_v' ORDER BY id DESC LIMIT 1"
t_match "$(t_sql 0 "$cut")$(t_sql 1 "$cut")" "^verify --repair cut short after [1-9][0-9]* index rows repaired: .*fault drift_fail_after_fix" \
	"the cut-short repair is audited: how many rows, and why it stopped"
t_eq "$stops" 2 "two fixes: the batch's (from F's body, then failing), then the one that finds F gone"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM ix_v WHERE entity_id=X'$FH'") $(t_sql 1 "SELECT COUNT(*) FROM ix_v WHERE entity_id=X'$FH'")" \
	"0 0" "F has no row left"
t_exit 0 "verify ix_v: no orphan" -- "$B" -c "$C" verify --index ix_v
t_contains "$T_OUT" "0 stale, 0 orphaned" "verify: 0 orphaned"
fi="SELECT COUNT(*) FROM bagstore_intents WHERE entity_id=X'$FH' AND token LIKE 'bagstore.f.%'"
t_eq "$(both "$fi")" 1 "F's fix left its intent: its check failed (the repair loop redoes what it fixed)"
sleep 1.2 # the repair loop takes intents older than a second
t_exit 0 "a repair pass" -- "$B" -c "$C" cleaner --once
t_eq "$(both "$fi")" 0 "which settles it"

# And killed there (fault drift_kill_after_fix: the process exits right
# after the fix commits, before the read that settles it): G's row, written
# back from the body it read, is left, but so is an intent for G, written
# before the fix under a lock that died with the process; the repair loop
# settles it and G's row goes.
G=$(uuid 4 4)
GH=$(hex "$G")
t_exit 0 "G, v=10 (its row on s0)" -- put_v 10 "$G"
repair_deleting "$G" "$T/v5" drift_kill_after_fix
t_eq "$vrc" 75 "verify --repair exits at the fault point"
t_contains "$(cat "$T/v5.err")" "fault drift_kill_after_fix" "right after its fix"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM ix_v WHERE entity_id=X'$GH'")" 1 "G's row is back, from the body the fix read"
gi="SELECT COUNT(*) FROM bagstore_intents WHERE entity_id=X'$GH' AND token LIKE 'bagstore.f.%'"
t_eq "$(both "$gi")" 1 "and G has an intent, written before the fix"
sleep 1.2 # the repair loop takes intents older than a second
t_exit 0 "a repair pass" -- "$B" -c "$C" cleaner --once
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM ix_v WHERE entity_id=X'$GH'")" 0 "G's row is gone"
t_eq "$(both "$gi")" 0 "and its intent settled"

# A writer that takes its intent's lock again while the repair loop fixes
# its entity (a write tried again on a new connection inserts its intent
# again and goes on): the repair loop's delete wants the lock free, so the
# intent, the writer's again, stays.
H=$(uuid 5 5)
HH=$(hex "$H")
t_exit 0 "H, v=12" -- put_v 12 "$H"
sleep 1.2 # out of the next pass's window: its only fix is the intent's
t_exit 0 "a repair pass" -- "$B" -c "$C" cleaner --once
t_sql 0 "INSERT INTO bagstore_intents (token, entity_id, created) VALUES ('bagstore.w.relock', X'$HH', NOW(6) - INTERVAL 5 SECOND)"
BAGSTORE_FAULT=pause_drift_fix "$B" -c "$C" cleaner --once >"$T/v6.out" 2>"$T/v6.err" &
vp=$!
if [ "$(wait_stop $vp)" = stopped ]; then t_ok "the repair loop stopped at its fix of H's intent"; else
	t_fail "the repair loop stopped at its fix" "$(cat "$T/v6.err")"
fi
timeout 60 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$(t_port 0)" -u root -N -B bagstore \
	-e "SELECT GET_LOCK('bagstore.w.relock', 0), SLEEP(50)" >/dev/null 2>&1 &
lp=$!
relocked() { [ "$(t_sql 0 "SELECT IS_USED_LOCK('bagstore.w.relock') IS NOT NULL")" = 1 ]; }
if t_wait 10 relocked; then t_ok "another session takes the intent's lock meanwhile"; else t_fail "the lock taken"; fi
stops=0
while [ "$(wait_stop $vp)" = stopped ] && [ $stops -lt 40 ]; do
	stops=$((stops + 1))
	kill -CONT $vp
done
kill -CONT $vp 2>/dev/null
wait $vp
hi="SELECT COUNT(*) FROM bagstore_intents WHERE token='bagstore.w.relock'"
t_eq "$(t_sql 0 "$hi")" 1 "the repair loop kept the intent whose lock was taken during its fix"
t_sql 0 "KILL $(t_sql 0 "SELECT IS_USED_LOCK('bagstore.w.relock')")" >/dev/null 2>&1
wait $lp 2>/dev/null
t_exit 0 "a repair pass once the lock is free" -- "$B" -c "$C" cleaner --once
t_eq "$(t_sql 0 "$hi")" 0 "settles it"

t_done test_settle_race

#!/bin/sh
# test_reshard_cancel.sh - issue 20's cancelled move, undone by the cleaner
# that sees the cancel (the two test shards: s0 owns every bucket, s1 joins
# owning none and the plan moves half of them to it).
#
# With writers on and the moves slowed (fault slow_move), a reshard is
# cancelled while `cleaner --reshard` runs its move, in the copy phase,
# then (started again) in the index-rows phase. That cleaner must exit 1
# having undone the move already: s0 owns all its buckets again, s1 has no
# incoming bucket and none of the copies, the change log is empty and stays
# so, and a new reshard can start. Then a cleaner killed inside the undo
# (fault move_kill_undo): start and cancel both refuse saying a cleaner
# undoes it, the next cleaner does; and one killed right after it marked
# its buckets, before the copy began (fault move_kill_marked): the cancel
# undoes that too. Every acknowledged write is there at the end and
# verify finds nothing wrong.
. tests/lib.sh
T=$(t_tmp)
B=$BAGSTORE
BR=${BUILD:-build}/bench/bench_reshard
P0=$(t_port 0)
P1=$(t_port 1)
T_TIMEOUT=240

cfg() {
	{
		echo "shards:"
		echo "  - {name: s0, host: 127.0.0.1, port: $P0, database: bagstore, user: root}"
		[ "$2" -ge 2 ] && echo "  - {name: s1, host: 127.0.0.1, port: $P1, database: bagstore, user: root}"
		echo "timeouts: {connect: 2, read: 10, write: 10}"
		echo "catalog_ttl: 1"
	} >"$1"
}
C1=$T/c1.yaml C2=$T/c2.yaml
cfg "$C1" 1
cfg "$C2" 2
q() { t_sql "$1" "$2"; }
stop_writers() {
	touch "$T/stop"
	for w in w1 w2; do
		eval "wait \$pid_$w"
	done
}
trap 'touch "$T/stop" 2>/dev/null' EXIT

t_exit 0 "reset" -- sh "$SHARDS_SH" reset --count 2 --dir "$SHARDS_DIR"
t_exit 0 "init s0 alone" -- "$B" -c "$C1" init
t_exit 0 "index by_user" -- "$B" -c "$C1" index create by_user --on user:uuid,n:int --shard-on user
t_exit 0 "index by_t" -- "$B" -c "$C1" index create by_t --on 't:string(20)' --shard-on t
t_exit 0 "load 3000 entities" -- "$BR" load "$C1" 3000 7 "$T/load.state"
t_exit 0 "init adds s1, owning nothing" -- "$B" -c "$C2" init
t_exit 0 "the cleaner makes the indexes ready" -- "$B" -c "$C2" cleaner --once
rm -f "$T/stop"
for w in w1 w2; do
	"$BR" writer "$C2" $w 7 3000 "$T/stop" "$T/$w.state" >"$T/$w.out" 2>"$T/$w.err" &
	eval "pid_$w=\$!"
done

# phase_is PHASE COUNTER: the move (one) runs in PHASE, its COUNTER above 0
# (some rows copied already)
phase_is() {
	"$B" -c "$C2" reshard status --json >"$T/st.json" 2>/dev/null &&
		grep -q '"state": "running"' "$T/st.json" && grep -q "\"phase\": \"$1\"" "$T/st.json" &&
		grep -q "\"$2\": [1-9]" "$T/st.json"
}
wait_phase() {
	i=0
	while [ $i -lt 300 ] && ! phase_is "$1" "$2"; do
		sleep 0.1
		i=$((i + 1))
	done
	phase_is "$1" "$2"
}
# undone DESC: no trace of the move on either shard, now and a moment later
undone() {
	t_eq "$(q 0 "SELECT COUNT(*) FROM bagstore_buckets WHERE state='owned'")" 4096 "$1: s0 owns its 4096 buckets again"
	t_eq "$(q 0 "SELECT COUNT(*) FROM bagstore_buckets WHERE state<>'owned'")" 0 "$1: none leaving on s0"
	t_eq "$(q 1 "SELECT COUNT(*) FROM bagstore_buckets")" 0 "$1: no incoming bucket on s1"
	t_eq "$(q 1 "SELECT COUNT(*) FROM entities")" 0 "$1: no copied entity on s1"
	t_eq "$(q 1 "SELECT (SELECT COUNT(*) FROM by_user) + (SELECT COUNT(*) FROM by_t)")" 0 "$1: no copied index row on s1"
	sleep 1
	t_eq "$(q 0 "SELECT COUNT(*) FROM bagstore_move_log")" 0 "$1: the change log is gone and stays empty (writers on)"
	t_exit 0 "$1: status" -- "$B" -c "$C2" reshard status --json
	t_contains "$T_OUT" '"state": "cancelled"' "$1: the reshard says cancelled"
	t_contains "$T_OUT" '"phase": "copy"' "$1: the move stands at its start again"
}

# cancel_in NAME PHASE COUNTER: a reshard started, cancelled in that phase
cancel_in() {
	t_exit 0 "$1: reshard start" -- "$B" -c "$C2" reshard start --yes
	BAGSTORE_FAULT=slow_move "$B" -c "$C2" cleaner --reshard >"$T/$1.out" 2>"$T/$1.err" &
	pid_cl=$!
	if wait_phase "$2" "$3"; then t_ok "$1: the move reaches its phase"; else t_fail "$1: the move reaches its phase" "$("$B" -c "$C2" reshard status 2>&1)"; fi
	t_exit 0 "$1: reshard cancel" -- "$B" -c "$C2" reshard cancel
	wait $pid_cl
	t_eq "$?" 1 "$1: the cleaner that saw the cancel exits 1"
	t_contains "$(cat "$T/$1.err")" "were undone" "$1: it says the move was undone"
	undone "$1"
}
cancel_in copy copy rows_copied
cancel_in index "index rows" index_rows

# killed inside the undo: the next cleaner finishes it; meanwhile start
# and cancel both say what will
t_exit 0 "kill: reshard start" -- "$B" -c "$C2" reshard start --yes
BAGSTORE_FAULT=slow_move,move_kill_undo "$B" -c "$C2" cleaner --reshard >"$T/kill.out" 2>"$T/kill.err" &
pid_cl=$!
if wait_phase copy rows_copied; then t_ok "kill: the move copies"; else t_fail "kill: the move copies" "$("$B" -c "$C2" reshard status 2>&1)"; fi
t_exit 0 "kill: reshard cancel" -- "$B" -c "$C2" reshard cancel
wait $pid_cl
t_eq "$?" 75 "kill: the cleaner dies inside the undo"
t_contains "$(cat "$T/kill.err")" "fault move_kill_undo" "kill: at the fault point"
t_eq "$(q 1 "SELECT COUNT(*) FROM bagstore_buckets WHERE state='incoming'")" 2048 "kill: s1 still holds its incoming buckets"
t_exit 1 "kill: reshard start is refused" -- "$B" -c "$C2" reshard start --yes
t_contains "$T_ERR" "cancelled and not undone yet: \`bagstore cleaner --reshard\`" "kill: start says a cleaner undoes it"
t_exit 1 "kill: reshard cancel has nothing to cancel" -- "$B" -c "$C2" reshard cancel
t_contains "$T_ERR" "cancelled and not undone yet: \`bagstore cleaner --reshard\`" "kill: cancel says the same"
t_exit 1 "kill: the next cleaner undoes it" -- "$B" -c "$C2" cleaner --reshard
t_contains "$T_ERR" "were undone" "kill: it says so"
undone kill

# killed right after marking its buckets, before the copy's totals: the
# row said started_copy before the marks, so the cancel owes an undo
t_exit 0 "marked: reshard start" -- "$B" -c "$C2" reshard start --yes
BAGSTORE_FAULT=move_kill_marked t_exit 75 "marked: the cleaner dies right after marking its buckets" -- "$B" -c "$C2" cleaner --reshard
t_contains "$T_ERR" "fault move_kill_marked" "marked: at the fault point"
t_eq "$(q 0 "SELECT COUNT(*) FROM bagstore_buckets WHERE state='leaving'")" 2048 "marked: s0's buckets are leaving"
t_exit 0 "marked: reshard cancel" -- "$B" -c "$C2" reshard cancel
t_exit 1 "marked: the next cleaner undoes it" -- "$B" -c "$C2" cleaner --reshard
t_contains "$T_ERR" "were undone" "marked: it says so"
undone marked

stop_writers
for w in w1 w2; do
	t_contains "$(cat "$T/$w.out")" "errors 0," "writer $w saw no error"
	t_match "$(cat "$T/$w.out")" 'ops [1-9][0-9]+' "writer $w wrote"
done
t_exit 0 "every acknowledged write is there, once, on its owner; queries equal the oracle" -- \
	"$BR" check "$C2" "$T/load.state" "$T/w1.state" "$T/w2.state"
t_exit 0 "verify: no drift" -- "$B" -c "$C2" verify
# a reshard starts only when every shard answers (a move of an earlier
# one on a shard away would go unseen), and never deletes an unfinished
# move of an earlier plan, even one that listing did not see
moves0=$(q 0 "SELECT COUNT(*) FROM bagstore_moves")
t_exit 0 "s1 stopped" -- sh "$SHARDS_SH" stop-one s1 --dir "$SHARDS_DIR"
t_exit 1 "reshard start with s1 down is refused" -- "$B" -c "$C2" reshard start --yes
t_contains "$T_ERR" "s1" "naming the shard"
t_eq "$(q 0 "SELECT COUNT(*) FROM bagstore_moves")" "$moves0" "and changing nothing on s0"
t_exit 0 "s1 back" -- sh "$SHARDS_SH" start-one s1 --dir "$SHARDS_DIR"
q 0 "INSERT INTO bagstore_moves (move_id, plan_id, map_version, source, target, buckets, nbuckets, state, started_copy) VALUES (7, 1, 1, 's0', 's1', '0', 1, 'running', 1)"
before="$(q 0 "SELECT GROUP_CONCAT(move_id ORDER BY move_id) FROM bagstore_moves")/$(q 1 "SELECT GROUP_CONCAT(move_id ORDER BY move_id) FROM bagstore_moves")"
t_exit 1 "reshard start over an unfinished move of an older plan is refused" -- "$B" -c "$C2" reshard start --yes
t_contains "$T_ERR" "move 7 (s0 to s1) of an earlier reshard is running" "naming it"
t_eq "$(q 0 "SELECT GROUP_CONCAT(move_id ORDER BY move_id) FROM bagstore_moves")/$(q 1 "SELECT GROUP_CONCAT(move_id ORDER BY move_id) FROM bagstore_moves")" \
	"$before" "and no shard's moves changed"
q 0 "DELETE FROM bagstore_moves WHERE move_id=7"
# and the reshard can run to its end, even killed right after marking its
# buckets with an index made before it goes on: the move gives its buckets
# back and waits for the index, whose backfill does not wait for a move
# that has not begun (each would wait for the other); cleaner --once
# passes build the index, then run the move
t_exit 0 "a new reshard starts" -- "$B" -c "$C2" reshard start --yes
BAGSTORE_FAULT=move_kill_marked t_exit 75 "the cleaner dies right after marking its buckets" -- "$B" -c "$C2" cleaner --reshard
t_eq "$(q 0 "SELECT COUNT(*) FROM bagstore_buckets WHERE state='leaving'")" 2048 "s0's buckets are leaving"
t_exit 0 "index by_z, the move's buckets marked" -- "$B" -c "$C2" index create by_z --on z:int --shard-on z
rstate() { "$B" -c "$C2" reshard status --json 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["state"])'; }
for _ in 1 2 3 4 5 6 7 8 9 10; do
	"$B" -c "$C2" cleaner --once >/dev/null 2>&1
	[ "$(q 0 "SELECT state FROM bagstore_indexes WHERE name='by_z'")" = ready ] && [ "$(rstate)" = done ] && break
	sleep 0.5
done
t_eq "$(q 0 "SELECT state FROM bagstore_indexes WHERE name='by_z'")" ready "cleaner --once passes build the index"
t_eq "$(rstate)" done "and run the move to its end: neither waits for the other for good"
t_exit 0 "and nothing is left for cleaner --reshard" -- "$B" -c "$C2" cleaner --reshard
t_exit 0 "verify after it" -- "$B" -c "$C2" verify

t_done test_reshard_cancel

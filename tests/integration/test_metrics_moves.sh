#!/bin/sh
# test_metrics_moves.sh - a reshard's moves on the daemon's /metrics, read
# through the reference Prometheus parser during a real reshard (2 -> 3
# shards; the third is the test's own, shard 0's port + 60, or
# BAGSTORE_MOVES_PORT, under t_servers moves, stopped at the end) with
# three library writers on and the moves slowed (BAGSTORE_FAULT=slow_move):
#
#  - before: bagstore_reshard_state{state="idle"}, no move series;
#  - during: bagstore_reshard_state{state="running"}; per move (labels move,
#    source, target) its state, phase, rows copied and to copy, the log
#    backlog (writes to its buckets catch-up still owes: seen above 0 while
#    the writers run), the fence, the heartbeat; the values those of
#    `reshard status --json` (the fixed ones equal);
#  - after: done, every move done with phase done, its backlog 0 and the
#    fence it held, as `reshard status --json` says.
. tests/lib.sh
T=$(t_tmp)
B=$BAGSTORE
BR=${BUILD:-build}/bench/bench_reshard
P0=$(t_port 0)
XP=${BAGSTORE_MOVES_PORT:-$((P0 + 60))}
MP=$((P0 + 61))
T_TIMEOUT=240

stop_all() {
	[ -f "$T/stop" ] || touch "$T/stop" 2>/dev/null
	[ -n "${dpid:-}" ] && kill -TERM "$dpid" 2>/dev/null
	t_extra_stop moves
}
trap stop_all EXIT
trap 'stop_all; exit 130' INT TERM
t_need_prom
PY=$T_PY

t_exit 0 "a third shard" -- t_extra_shard moves "$XP"
[ "$T_FAILED" = 0 ] || t_done test_metrics_moves
cfg() { # FILE N
	t_shards_cfg "$1" "$2" "$XP"
	echo "cleaner: {repair_interval: 0.2, log_every: 1}" >>"$1"
}
C2=$T/c2.yaml C3=$T/c3.yaml
cfg "$C2" 2
cfg "$C3" 3

# prom: every sample of a scrape, one a line: NAME LABEL=VALUE,... VALUE
prom() { t_prom "http://127.0.0.1:$MP/metrics"; }
# metric FILE NAME LABELS: its value in a saved scrape ("" when absent)
metric() { awk -v n="$2" -v l="$3" '$1 == n && $2 == l { print $3 }' "$1"; }

t_exit 0 "init 2 shards" -- "$B" -c "$C2" init
t_exit 0 "index by_user" -- "$B" -c "$C2" index create by_user --on user:uuid,n:int --shard-on user
t_exit 0 "backfill it" -- "$B" -c "$C2" cleaner --index by_user
t_exit 0 "load 6000 entities" -- "$BR" load "$C2" 6000 7 "$T/load.state"
t_exit 0 "init 3 shards" -- "$B" -c "$C3" init

# the daemon, before any reshard
BAGSTORE_FAULT=slow_move "$B" -c "$C3" cleaner --metrics "127.0.0.1:$MP" --log-format json >"$T/d.out" 2>"$T/d.err" &
dpid=$!
idle() { prom >"$T/m0" 2>/dev/null && [ "$(metric "$T/m0" bagstore_reshard_state state=idle)" = 1.0 ]; }
if t_wait 20 idle; then t_ok "no reshard: bagstore_reshard_state{state=idle} 1"; else t_fail "reshard state idle" "$(tail -5 "$T/d.err")"; fi
t_eq "$(grep -c '^bagstore_move_' "$T/m0")" 0 "and no move series"
t_eq "$(metric "$T/m0" bagstore_collector_up source=moves)" 1.0 "the moves source is up"

rm -f "$T/stop"
wpids=""
for w in w1 w2 w3; do
	"$BR" writer "$C3" $w 7 6000 "$T/stop" "$T/$w.state" >"$T/$w.out" 2>"$T/$w.err" &
	wpids="$wpids $!"
done
sleep 1
t_exit 0 "reshard start --yes, writers running" -- "$B" -c "$C3" reshard start --yes

# during: scrape until a move copies, keeping every scrape
k=0
: >"$T/backlog.seen"
copying() {
	k=$((k + 1))
	prom >"$T/m.$k" 2>/dev/null || return 1
	awk '$1 == "bagstore_move_log_backlog_rows" && $3 > 0 { print }' "$T/m.$k" >>"$T/backlog.seen"
	awk '$1 == "bagstore_move_rows_copied" && $3 > 0 { f = 1 } END { exit !f }' "$T/m.$k"
}
if t_wait 60 copying; then t_ok "a move's rows_copied moves"; else t_fail "a move copies" "$(tail -5 "$T/d.err")"; fi
M=$T/m.$k
t_eq "$(metric "$M" bagstore_reshard_state state=running)" 1.0 "the reshard is running"
nm=$(awk '$1 == "bagstore_move_state"' "$M" | wc -l)
t_eq "$nm" 2 "two moves (s0 -> s2, s1 -> s2), one state each"
t_match "$(cat "$M")" '^bagstore_move_state move=[0-9]+,reason=[^,]*,source=s[01],state=(running|throttled|queued),target=s2 1.0' "a move's state, with its source and target"
t_match "$(cat "$M")" '^bagstore_move_phase move=[0-9]+,phase=(copy|index|catchup),source=s[01],target=s2 1.0' "its phase"
for f in bagstore_move_rows_expected bagstore_move_rows_copied bagstore_move_buckets bagstore_move_fence_seconds \
	bagstore_move_progress_ratio bagstore_move_rate_rows_per_second bagstore_move_log_rows_replayed; do
	t_eq "$(awk -v n=$f '$1 == n' "$M" | wc -l)" 2 "$f for each move"
done
t_eq "$(awk '$1 == "bagstore_move_log_backlog_rows"' "$M" | wc -l)" 2 "the log backlog for each move"
t_match "$(cat "$M")" '^bagstore_move_heartbeat_timestamp_seconds move=' "a running move's heartbeat"
curl -s --max-time 5 "http://127.0.0.1:$MP/metrics" >"$T/raw"
t_match "$(cat "$T/raw")" '^# TYPE bagstore_move_state gauge' "a TYPE line"
t_match "$(cat "$T/raw")" '^# HELP bagstore_move_log_backlog_rows ' "and a HELP line per family"
# the fixed values equal reshard status --json's: a move's totals are
# fixed once its buckets are leaving, which a queued move's are not yet, so
# the status and a scrape after it are read again until both moves' agree
# (one may start between the two reads)
fixed_same() {
	"$B" -c "$C3" reshard status --json >"$T/status.json" 2>/dev/null || return 1
	prom >"$T/m.fixed" 2>/dev/null || return 1
	"$PY" -c '
import json, sys
for m in json.load(open(sys.argv[1]))["moves"]:
    print("%d %s %s %d %d" % (m["id"], m["source"], m["target"], m["nbuckets"], m["rows_total"]))' "$T/status.json" >"$T/status.txt" || return 1
	same=0
	while read -r id src dst nb rt; do
		l="move=$id,source=$src,target=$dst"
		[ "$(metric "$T/m.fixed" bagstore_move_buckets "$l")" = "$nb.0" ] &&
			[ "$(metric "$T/m.fixed" bagstore_move_rows_expected "$l")" = "$rt.0" ] && same=$((same + 1))
	done <"$T/status.txt"
	[ "$same" = 2 ]
}
if t_wait 60 fixed_same; then
	t_ok "buckets and rows to copy equal reshard status's, per move"
else
	t_fail "buckets and rows to copy equal reshard status's, per move" "$(cat "$T/status.txt")" \
		"$(grep -E '^bagstore_move_(buckets|rows_expected) ' "$T/m.fixed")"
fi
# the writers' writes to moving buckets wait in the log until catch-up
more() {
	k=$((k + 1))
	prom >"$T/m.$k" 2>/dev/null || return 1
	awk '$1 == "bagstore_move_log_backlog_rows" && $3 > 0 { print }' "$T/m.$k" >>"$T/backlog.seen"
	[ -s "$T/backlog.seen" ]
}
if t_wait 60 more; then t_ok "a log backlog above 0 while the writers run ($(head -1 "$T/backlog.seen"))"; else t_fail "the log backlog shows writes"; fi

# after: the writers stop (they create entities faster than a slowed
# move's catch-up replays them), the moves finish
touch "$T/stop"
# (by their pids: a pgrep -f for their command line also matched the shell
# running it, so this waited its whole 30 s every time)
writers_gone() { # (an exited writer not yet waited for is a zombie)
	for p in $wpids; do
		! kill -0 "$p" 2>/dev/null || grep -q '^[0-9]* (.*) Z' "/proc/$p/stat" 2>/dev/null || return 1
	done
}
if t_wait 30 writers_gone; then t_ok "the writers stop"; else t_fail "the writers stop" "still running: $wpids"; fi
done_() {
	k=$((k + 1))
	prom >"$T/m.$k" 2>/dev/null && [ "$(metric "$T/m.$k" bagstore_reshard_state state=done)" = 1.0 ]
}
if t_wait 200 done_; then t_ok "the reshard ends: bagstore_reshard_state{state=done}"; else
	t_fail "the reshard is done on /metrics" "$(grep '"event":"move' "$T/d.err" | tail -8)"
	"$B" -c "$C3" reshard status
fi
M=$T/m.$k
t_eq "$(awk '$1 == "bagstore_move_state" && $2 ~ /state=done/' "$M" | wc -l)" 2 "both moves done"
t_eq "$(awk '$1 == "bagstore_move_phase" && $2 ~ /phase=done/' "$M" | wc -l)" 2 "in phase done"
t_eq "$(awk '$1 == "bagstore_move_log_backlog_rows" && $3 == 0' "$M" | wc -l)" 2 "with no backlog"
t_exit 0 "reshard status --json after" -- "$B" -c "$C3" reshard status --json
"$PY" -c '
import json, sys
for m in json.load(open(sys.argv[1]))["moves"]:
    print("%d %s %s %r %d %d" % (m["id"], m["source"], m["target"], m["fence_ms"] / 1e3, m["rows_copied"], m["log_rows"]))' "$T_OUT_FILE" >"$T/status2.txt"
same=0
while read -r id src dst fence copied logrows; do
	l="move=$id,source=$src,target=$dst"
	f=$(metric "$M" bagstore_move_fence_seconds "$l")
	"$PY" -c 'import sys; sys.exit(0 if abs(float(sys.argv[1]) - float(sys.argv[2])) < 1e-9 and float(sys.argv[1]) > 0 else 1)' "$f" "$fence" &&
		[ "$(metric "$M" bagstore_move_rows_copied "$l")" = "$copied.0" ] &&
		[ "$(metric "$M" bagstore_move_log_rows_replayed "$l")" = "$logrows.0" ] && same=$((same + 1))
done <"$T/status2.txt"
t_eq "$same" 2 "the fence held, rows copied and log entries replayed equal reshard status's"
kill -TERM "$dpid"
wait "$dpid"
t_eq "$?" 0 "the daemon stops cleanly"
dpid=""
for w in w1 w2 w3; do
	t_eq "$(cat "$T/$w.err")" "" "writer $w saw no error"
done

t_done test_metrics_moves

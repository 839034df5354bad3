#!/bin/sh
# test_lag_history.sh - the repair lag's history shows what happened, with a
# cleaner daemon running against real shards: while another connection
# holds a shard's repair lock (a blocked pass), samples are still recorded
# and grow; while a shard is stopped it has no sample (a gap), and the
# sample after the gap is the lag the shard had come back with; the
# console's cleaner screen draws the gap blank, gives its axis its real
# span, and its max is the largest value drawn.
. tests/console/lib.sh

c_init
t_exit 0 "an index" -- "$BAGSTORE" -c "$CFG" index create index_n --on n:int --shard-on n
post() { printf '{"n": %d}\n' "$1"; }
c_put 20 post

lagjson() { "$BAGSTORE" -c "$CFG" lag --json 2>/dev/null; }
# py EXPR-over-lag: python3 over `lag --json` (list of shards as l)
py() { lagjson | python3 -c "import json,sys
try: l = json.load(sys.stdin)
except Exception: l = []
$1"; }
wait_py() { # SECS EXPR: until the python expression prints True
	n=0
	while [ $n -lt $(($1 * 10)) ]; do
		[ "$(py "print($2)")" = True ] && return 0
		sleep 0.1
		n=$((n + 1))
	done
	return 1
}
daemon() {
	"$BAGSTORE" -c "$CFG" cleaner >"$T/daemon.log" 2>&1 &
	dpid=$!
}

# 1. the daemon makes watermarks on both shards, then stops (its locks go)
daemon
wait_py 30 "all(s['watermark_us'] for s in l) and len(l) == 2" && t_ok "both shards repaired" || t_fail "both shards repaired" "$(lagjson)"
kill -TERM $dpid; wait $dpid

# 2. s0's repair lock held elsewhere: the daemon is blocked on s0, until
# it has sampled the blocked shard five times, its lag 5 s or more (however
# slow the daemon's start); then the holder's connection is killed
lock=$(python3 -c "import zlib; print('bagstore.repair.%08x' % zlib.crc32(b'bagstore'))")
port=$(t_port 0)
timeout 120 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$port" -u root \
	-e "SELECT GET_LOCK('$lock', 0), SLEEP(100)" >/dev/null 2>&1 &
blocker=$!
c_wait_sql 0 "SELECT IS_USED_LOCK('$lock') IS NOT NULL" 1 || t_fail "the blocker holds s0's repair lock"
t0=$(python3 -c "import time; print(int(time.time() * 1e6))")
daemon
since_t0="[v for a, v in zip(l[0]['history_at_us'], l[0]['history']) if a >= $t0]"
wait_py 60 "len($since_t0) >= 5 and max($since_t0) >= 5" || t_fail "the daemon samples the blocked shard" "$(lagjson)"
holder=$(t_sql 0 "SELECT IS_USED_LOCK('$lock')")
[ -n "$holder" ] && [ "$holder" != NULL ] && t_sql 0 "KILL $holder" >/dev/null 2>&1
wait $blocker
t1=$(python3 -c "import time; print(int(time.time() * 1e6))")
wait_py 30 "l[0]['lag_s'] is not None and l[0]['lag_s'] < 2" && t_ok "s0 repaired again once the lock is free" || t_fail "s0 repaired again once the lock is free" "$(lagjson)"
out=$(py "s = l[0]; w = [(a, v) for a, v in zip(s['history_at_us'], s['history']) if $t0 <= a <= $t1]
print('blocked-samples', len(w) >= 4)
print('blocked-grow', max(v for a, v in w) >= 5 if w else False)
gaps = [b[0] - a[0] for a, b in zip(w, w[1:])]
print('blocked-no-gap', bool(gaps) and max(gaps) < 2500000)")
t_contains "$out" "blocked-samples True" "a blocked shard still gets a sample a second"
t_contains "$out" "blocked-grow True" "its samples grow while it is blocked (5 s and more)"
t_contains "$out" "blocked-no-gap True" "no gap while it is blocked"

# 3. s1 stopped for 6 s: a gap, then the lag it came back with
# the outage begins with the stop: on a loaded machine the server's
# shutdown can take seconds, and the daemon's last sample of s1 comes
# before it, not after
t2=$(python3 -c "import time; print(int(time.time() * 1e6))")
t_exit 0 "stop s1" -- sh "$SHARDS_SH" stop-one s1 --dir "$SHARDS_DIR"
sleep 6 # the outage itself
t_exit 0 "start s1" -- sh "$SHARDS_SH" start-one s1 --dir "$SHARDS_DIR"
wait_py 60 "len(l) == 2 and l[1]['reachable'] and l[1]['history_at_us'] and l[1]['history_at_us'][-1] > $t2 + 5000000" &&
	t_ok "s1 repaired again after its restart" || t_fail "s1 repaired again after its restart" "$(lagjson)"
out=$(py "s = l[1]; h = list(zip(s['history_at_us'], s['history']))
gaps = [(b[0] - a[0], b[1]) for a, b in zip(h, h[1:]) if a[0] >= $t2 - 3000000]
big = [g for g in gaps if g[0] >= 4000000]
print('gap', bool(big))
print('after-gap', big[0][1] >= 4 if big else False)")
t_contains "$out" "gap True" "no sample while s1 was stopped: a gap of 4 s and more"
t_contains "$out" "after-gap True" "the sample after the gap is the lag s1 came back with (4 s and more)"

# 4. the console draws it: the gap blank, the real span, max as drawn
printf 'keys 3\nwait-idle\ndump cleaner\nkeys :q\\n\n' >"$T/cl.keys"
c_headless "cleaner screen" "$T/cl.keys"
kill -TERM $dpid; wait $dpid
t_match "$(d cleaner)" "LAG, LAST [0-9]+(s|m[0-9]+s)" "the axis says its real span"
# (fmt_secs: one decimal under 10 s, whole seconds to 2 min, then m and s;
# a slow build, tsan's, reaches 10 s and more)
t_match "$(d cleaner)" "^s1 .*[▁▂▃▄▅▆▇█] +[▁▂▃▄▅▆▇█].* max ([4-9]\.[0-9]|[1-9][0-9]+|[0-9]+m[0-9]+)s" "s1: the gap drawn blank, max the largest drawn"
t_match "$(d cleaner)" "^s0 .* max ([5-9]\.[0-9]|[1-9][0-9]+|[0-9]+m[0-9]+)s" "s0: the blocked time's lag drawn"
t_match "$(d cleaner)" "^s0 .* [0-9,]+ +[0-9]+(\.[0-9]+)?(ms|s) ago" "repaired rows in all, and the last pass"
t_done test_lag_history

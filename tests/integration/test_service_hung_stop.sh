#!/bin/sh
# test_service_hung_stop.sh - the cleaner daemon stops within seconds of
# SIGTERM while a shard hangs (SIGSTOP), however many indexes there are.
# Found in review: the collector (svc_watch.c) read the last verify of
# every index one after the other, each call waiting its capped timeout
# on the hung shard, and looked at the stop flag only between rounds, so
# a stop waited for all of them (40 indexes: a minute and more, past
# systemd's TimeoutStopSec=30s, which then SIGKILLs it). The bound this
# checks is the one service.h and svc.c promise (each part bounded by
# the capped timeouts), not a speed: the wait is generous.
# Also: a scrape while the collector's first round is still waiting on the
# hung shard says bagstore_collector_up 1 only for the sources it has read
# (it said 1 for every source not read yet, "the last read succeeded").
. tests/lib.sh

B=$BAGSTORE
T=$(t_tmp)
K=40
CFG=$T/hung.yaml
grep -v '^timeouts:' "$BAGSTORE_TEST_CONFIG" >"$CFG"
{
	echo "timeouts: {connect: 1, read: 1, write: 1}"
	echo "indexes:"
	for i in $(seq 1 $K); do echo "  - {name: ix_$i, on: 'k$i:int', shard_on: k$i}"; done
} >>"$CFG"
# init makes each index on the empty store and waits catalog_ttl after each
# (no writer runs here to cache the catalog): 40 s of nothing at the
# daemon's 1 s, so init gets 0.1
sed 's/^catalog_ttl:.*/catalog_ttl: 0.1/' "$CFG" >"$T/init.yaml"
t_exit 0 "init with $K indexes" -- "$B" -c "$T/init.yaml" init

exited() { ! kill -0 "$1" 2>/dev/null || grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null; }
started() { grep -q "cleaner started" "$T/d.err"; }

MP=$(($(t_port 0) + 47))
sh "$SHARDS_SH" pause s0 --dir "$SHARDS_DIR" >/dev/null 2>&1
"$B" -c "$CFG" cleaner --metrics "127.0.0.1:$MP" >"$T/d.out" 2>"$T/d.err" &
d=$!
if t_wait 30 started; then t_ok "the daemon starts with s0 hung"; else t_fail "the daemon starts with s0 hung" "$(cat "$T/d.err")"; fi
t_exit 0 "a scrape during the collector's first round" -- curl -sf --max-time 5 "http://127.0.0.1:$MP/metrics"
printf '%s\n' "$T_OUT" >"$T/m.txt"
for src in status lag jobs verify workers; do
	if grep -q "^bagstore_collector_up{source=\"$src\"} 1\$" "$T/m.txt" &&
		! grep -q "^bagstore_collector_age_seconds{source=\"$src\"} " "$T/m.txt"; then
		t_fail "collector_up{source=$src} is 1 only once it was read" "$(grep "source=\"$src\"" "$T/m.txt")"
	else
		t_ok "collector_up{source=$src} is 1 only once it was read"
	fi
done
t_contains "$(cat "$T/m.txt")" 'bagstore_collector_up{source="verify"} 0' "verify, not read yet, is not up"
# the collector's first round: status, lag, jobs and workers wait on s0,
# then the last verify of each index (on s0 first) does
sleep 12
kill -TERM $d
if t_wait 15 exited $d; then
	t_ok "the daemon ends within seconds of SIGTERM with s0 hung"
else
	t_fail "the daemon ends within seconds of SIGTERM with s0 hung" "$(tail -5 "$T/d.err")"
fi
wait $d
t_eq "$?" 0 "it exits 0"
t_contains "$(cat "$T/d.err")" "cleaner stopped (SIGTERM)" "its log says it stopped on SIGTERM"
sh "$SHARDS_SH" resume s0 --dir "$SHARDS_DIR" >/dev/null 2>&1
kill -KILL $d 2>/dev/null

t_done

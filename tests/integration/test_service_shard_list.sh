#!/bin/sh
# test_service_shard_list.sh - a running cleaner daemon and a wrong shard
# list (issue 11's identity check refuses one at start):
#
#  1. reloaded (SIGHUP) from a file whose list swaps s0's and s1's
#     addresses: the reload is refused as a whole (its changed max_load is
#     not applied), the log says which shard disagrees and why,
#     bagstore_reloads_total{result="failed"} counts it, and the daemon
#     goes on repairing with the list it started with (found in review: it
#     applied the file's settings and only noted "restart to use the list");
#  2. a list with a shard appended but never initialised is refused too;
#     a list reordered (which works) while s1 hangs cannot be checked on
#     s1: the reload applies, and the log says the list is unchecked;
#  3. the right file again: the reload applies (max_load 25 -> 7);
#  4. the servers swapped underneath it (s0's and s1's ports exchanged by
#     restarting both): it notices on its next pass (the connections broke;
#     each new one checks the shard's identity), logs the disagreement, and
#     writes nothing more there (its worker heartbeat on both servers stands
#     still) until they are swapped back, when it carries on.
. tests/lib.sh

B=$BAGSTORE
T=$(t_tmp)
CFG=$T/list.yaml
P0=$(t_port 0)
P1=$(t_port 1)
MP=$((P0 + 51))
grep -v '^cleaner:' "$BAGSTORE_TEST_CONFIG" >"$T/good.yaml"
echo "cleaner: {repair_interval: 0.1, log_every: 1}" >>"$T/good.yaml"
cp "$T/good.yaml" "$CFG"

exited() { ! kill -0 "$1" 2>/dev/null || grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null; }
metric() { # NAME{LABELS}: its value on the daemon's /metrics
	curl -sf --max-time 5 "http://127.0.0.1:$MP/metrics" | awk -v k="$1" '$1 == k { print $2 }'
}
passes() { metric 'bagstore_repair_passes_total{shard="s0"}'; }
more_passes() { [ "$(passes)" -gt "$1" ] 2>/dev/null; }

# the servers' ports, exchanged (stop both, swap their port files, start
# both); run again to swap them back
swapped=0
swap_servers() {
	sh "$SHARDS_SH" stop-one s0 --dir "$SHARDS_DIR" >/dev/null 2>&1
	sh "$SHARDS_SH" stop-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
	p0=$(cat "$SHARDS_DIR/s0/port") p1=$(cat "$SHARDS_DIR/s1/port")
	echo "$p1" >"$SHARDS_DIR/s0/port"
	echo "$p0" >"$SHARDS_DIR/s1/port"
	sh "$SHARDS_SH" start-one s0 --dir "$SHARDS_DIR" >/dev/null 2>&1
	sh "$SHARDS_SH" start-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
	swapped=$((1 - swapped))
}
# whatever happens, the next test gets the servers where they were
trap '[ "$swapped" = 1 ] && swap_servers; kill -KILL $d 2>/dev/null' EXIT

t_exit 0 "init" -- "$B" -c "$CFG" init
t_exit 0 "index create by_n" -- "$B" -c "$CFG" index create by_n --on n:int --shard-on n
awk 'BEGIN { for (k = 1; k <= 200; k++) printf("{\"n\":%d}\n", k) }' >"$T/ents.jsonl"
t_exit 0 "put 200 entities" -- "$B" -c "$CFG" put "$T/ents.jsonl"

"$B" -c "$CFG" cleaner --metrics "127.0.0.1:$MP" >"$T/d.out" 2>"$T/d.err" &
d=$!
ready() { grep -q "every shard answered" "$T/d.err"; }
if t_wait 30 ready; then t_ok "the daemon starts"; else t_fail "the daemon starts" "$(cat "$T/d.err")"; fi
wid=$(sed -n 's/.*cleaner started: pid [0-9]*, worker \([0-9a-f]*\),.*/\1/p' "$T/d.err" | head -1)
t_match "$wid" '^[0-9a-f]{32}$' "its worker id is in the log"
t_wait 10 more_passes 0 || true

# ------------------------------------------------------------ 1. swapped list

sed -e "s/port: $P0\\b/port: PORT_A/; s/port: $P1\\b/port: $P0/; s/port: PORT_A/port: $P1/" \
	-e 's/^cleaner: {/cleaner: {max_load: 7, /' "$T/good.yaml" >"$CFG"
t_exit 2 "the swapped list is one the CLI refuses" -- "$B" -c "$CFG" shards
kill -HUP $d
failed() { grep -q "reload_failed" "$T/d.err"; }
if t_wait 20 failed; then t_ok "SIGHUP with a swapped list: reload_failed"; else t_fail "SIGHUP with a swapped list: reload_failed" "$(tail -5 "$T/d.err")"; fi
line=$(grep "reload_failed" "$T/d.err" | head -1)
t_contains "$line" "SIGHUP: the shard list in $CFG disagrees with the shards: shard s" "it says the list disagrees"
t_match "$line" "records that it is shard s[01] of its store, but the configuration calls it s[01]" "and why, naming the shard"
t_contains "$line" "the cleaner keeps the list it started with: the settings in force stay" "and that nothing changed"
t_eq "$(grep -c 'SIGHUP: reloaded' "$T/d.err")" 0 "no setting of the refused file was applied"
t_eq "$(metric 'bagstore_reloads_total{result="failed"}')" 1 'bagstore_reloads_total{result="failed"} 1'
t_eq "$(metric 'bagstore_reloads_total{result="ok"}')" 0 'bagstore_reloads_total{result="ok"} 0'
n=$(passes)
if t_wait 10 more_passes "$n"; then t_ok "it goes on repairing s0 with its own list"; else t_fail "it goes on repairing s0" "$(tail -3 "$T/d.err")"; fi
if exited $d; then t_fail "it keeps running"; else t_ok "it keeps running"; fi

# ------------------------------------------------------------ 2. a shard added, unchecked

# a shard appended but never initialised: the map does not name it, so the
# shards disagree with the list (a restart would refuse it too)
echo "  - {name: s9, host: 127.0.0.1, port: $((P0 + 52)), database: bagstore, user: root}" >"$T/s9"
awk -v add="$(cat "$T/s9")" '{ print } /^  - .*name: s1[,}]/ { print add }' "$T/good.yaml" >"$CFG"
t_contains "$(cat "$CFG")" "name: s9" "a list with a shard appended"
kill -HUP $d
failed2() { [ "$(grep -c "reload_failed" "$T/d.err")" -ge 2 ]; }
if t_wait 20 failed2; then t_ok "SIGHUP with s9 never initialised: reload_failed"; else t_fail "s9: reload_failed" "$(tail -5 "$T/d.err")"; fi
t_contains "$(grep "reload_failed" "$T/d.err" | sed -n 2p)" "s9" "naming s9"
t_eq "$(metric 'bagstore_reloads_total{result="failed"}')" 2 'reloads failed 2'

# the list reordered (which works: names go with addresses) while s1 hangs:
# s1 cannot be checked, so the reload applies and says so
awk '/^  - .*name: s0[,}]/ { s0 = $0; next } { print } /^  - .*name: s1[,}]/ { print s0 }' "$T/good.yaml" >"$CFG"
t_match "$(grep -n 'name: s[01]' "$CFG" | tr '\n' ' ')" "name: s1.*name: s0" "a list reordered"
sh "$SHARDS_SH" pause s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
kill -HUP $d
partial() { grep -q "could not be checked" "$T/d.err"; }
if t_wait 30 partial; then t_ok "SIGHUP with s1 hung: the list could not be checked, said"; else t_fail "the list could not be checked, said" "$(tail -5 "$T/d.err")"; fi
sh "$SHARDS_SH" resume s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
t_match "$(grep 'could not be checked' "$T/d.err")" "every shard: s1 \(.+\): a restart will check it" "naming the shard that did not answer"
t_eq "$(metric 'bagstore_reloads_total{result="ok"}')" 1 "that reload applied (ok 1)"

# ------------------------------------------------------------ 3. the right file

sed -e 's/^cleaner: {/cleaner: {max_load: 7, /' "$T/good.yaml" >"$CFG"
kill -HUP $d
applied() { grep -q "max_load 25 -> 7" "$T/d.err"; }
if t_wait 20 applied; then t_ok "the right file reloads: max_load 25 -> 7"; else t_fail "the right file reloads" "$(tail -5 "$T/d.err")"; fi
t_eq "$(metric 'bagstore_reloads_total{result="ok"}')" 2 "reloads ok 2"
t_eq "$(metric 'bagstore_reloads_total{result="failed"}')" 2 "failed still 2"

# ------------------------------------------------------------ 4. swapped underneath

beat() { t_sql "$1" "SELECT UNIX_TIMESTAMP(heartbeat) FROM bagstore_workers WHERE worker_id='$wid'"; }
swap_servers
t_exit 2 "the servers are swapped (the CLI refuses the right file now)" -- "$B" -c "$CFG" shards
noticed() { grep -q "records that it is shard s[01] of its store, but the configuration calls it s[01]" "$T/d.err"; }
if t_wait 60 noticed; then t_ok "the daemon notices the swap on its next pass"; else t_fail "the daemon notices the swap" "$(tail -5 "$T/d.err")"; fi
sleep 3
b0=$(beat 0) b1=$(beat 1)
sleep 4
t_eq "$(beat 0) $(beat 1)" "$b0 $b1" "it writes nothing to the swapped servers (its heartbeats stand still)"
if exited $d; then t_fail "it is still running" "$(tail -5 "$T/d.err")"; else t_ok "it is still running"; fi
swap_servers
t_exit 0 "swapped back: the CLI agrees again" -- "$B" -c "$CFG" shards
moved() { [ "$(beat 0)" != "$b0" ] && [ "$(beat 1)" != "$b1" ]; }
if t_wait 30 moved; then t_ok "swapped back, its heartbeats go on"; else t_fail "swapped back, its heartbeats go on" "$(tail -5 "$T/d.err")"; fi
n=$(passes)
if t_wait 20 more_passes "$n"; then t_ok "and it repairs again"; else t_fail "and it repairs again" "$(tail -3 "$T/d.err")"; fi
t_exit 0 "verify: the index is whole" -- "$B" -c "$CFG" verify

kill -TERM $d
if t_wait 20 exited $d; then t_ok "SIGTERM stops it"; else t_fail "SIGTERM stops it"; fi
wait $d
t_eq "$?" 0 "it exits 0"
t_done

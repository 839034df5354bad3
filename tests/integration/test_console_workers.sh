#!/bin/sh
# test_console_workers.sh - the worker registry in the console, headless
# against real shards: with jobs queued and no cleaner running, the indexes,
# backfills and cleaner screens say so and how to start one; a console that
# runs a backfill is in `bagstore workers` (kind console) while it does and
# leaves it when it is done; a running cleaner daemon is listed on the
# cleaner screen (host:pid, kind, what it repairs), and the hint goes.
. tests/console/lib.sh

c_init
numbered() { printf '{"n": %d}\n' "$1"; }
# enough rows that s1's job lasts seconds too (slow_chunk: chunks of 100,
# 50 ms apart); s0's is held by the test below while it looks
c_put 12000 numbered
t_exit 0 "a building index, its jobs queued" -- "$BAGSTORE" -c "$CFG" index create idx_n --on n:int --shard-on n
PY=python3
command -v python3 >/dev/null 2>&1 || PY=/usr/bin/python3
alive() { # KIND: a live worker of that kind is registered
	"$BAGSTORE" -c "$CFG" workers --json 2>/dev/null | "$PY" -c '
import json, sys
sys.exit(0 if any(w["alive"] and w["kind"] == sys.argv[1] for w in json.load(sys.stdin)) else 1)' "$1"
}

# ------------------------------------------------------------ nothing runs the queued jobs

cat >"$T/hint.keys" <<'KEYS'
keys 2
wait-idle
wait-for no cleaner is running 10
dump indexes
keys 4
wait-idle
wait-for no cleaner is running 10
dump backfills
keys 3
wait-idle
wait-for REGISTERED WORKER 10
dump cleaner
keys :q\n
KEYS
c_headless "the screens with jobs queued and no cleaner" "$T/hint.keys"
t_contains "$(d indexes)" "2 backfill jobs queued and no cleaner is running: start \`bagstore cleaner\`" "indexes: the hint says so and how"
t_contains "$(d indexes)" "press B" "indexes: or B in the console"
t_contains "$(d backfills)" "2 jobs queued and no cleaner is running" "backfills: the hint"
t_contains "$(d cleaner)" "no cleaner is running" "cleaner: the hint"
t_contains "$(d cleaner)" "(no worker registered" "cleaner: the registry is empty"
t_contains "$(d cleaner)" "never ran" "cleaner: no repair pass ran yet"
c_lacks cleaner "0 entities" "cleaner: a shard no pass ran shows no count of a pass's entities"

# ------------------------------------------------------------ a console running a backfill registers

# The console holds s0's job for as long as the test wants: max_load 1 and a
# sleeping statement on s0 throttle it there (a second running thread),
# until the test kills the statement once the cleaner screen is dumped.
{ cat "$CFG"; echo "cleaner: {max_load: 1, critical_load: 1000}"; } >"$T/load.yaml"
trap t_sleeper_kill EXIT
t_sleeper 0 || t_fail "the sleeping statement runs on s0"
cat >"$T/run.keys" <<'KEYS'
keys 2
wait-idle
key B
wait-for backfilling idx_n 10
keys 3
wait-idle
wait-for idx_n@s0 30
dump cleaner_console
keys 2
wait-idle
wait-for ready 90
keys :q\n
KEYS
BAGSTORE_FAULT=slow_chunk "$BAGSTORE" -c "$T/load.yaml" --headless "$T/run.keys" --dump-dir "$D" >"$T/run.out" 2>"$T/run.err" &
hpid=$!
if t_wait 20 alive console; then t_ok "workers --json lists the console while it backfills"; else t_fail "the console is registered"; fi
# the table while it holds a job (kept: the backfill may end soon after)
holds() { "$BAGSTORE" -c "$CFG" workers >"$T/workers.txt" 2>&1 && grep -q 'idx_n@s' "$T/workers.txt"; }
if t_wait 20 holds; then t_ok "workers shows the job the console holds"; else t_fail "the console's job in workers" "$(cat "$T/workers.txt")"; fi
t_contains "$(cat "$T/workers.txt")" "console" "the table says console"
t_match "$(cat "$T/workers.txt")" "console .*idx_n@s[01]" "with the job it holds"
dumped() { [ -s "$D/cleaner_console.txt" ]; }
t_wait 60 dumped || t_fail "the console dumped its cleaner screen while it held s0's job"
t_sleeper_kill
wait $hpid
t_eq "$?" 0 "the headless console ends"
t_contains "$(d cleaner_console)" ":$hpid" "the cleaner screen lists this console (host:pid) as a worker"
t_match "$(d cleaner_console)" "console +[0-9]+\.[0-9]+\.[0-9]+" "its kind and version"
t_eq "$(t_sql 0 "SELECT state FROM bagstore_indexes WHERE name='idx_n'")" ready "the console's backfill made idx_n ready"
t_exit 0 "workers after the console's backfill" -- "$BAGSTORE" -c "$CFG" workers --json
t_eq "$T_OUT" "[]" "the console left the registry when its backfill ended"

# ------------------------------------------------------------ a daemon runs

t_exit 0 "another building index" -- "$BAGSTORE" -c "$CFG" index create idx_m --on n:int --shard-on n
"$BAGSTORE" -c "$CFG" cleaner --metrics 127.0.0.1:$(($(t_port 0) + 44)) >"$T/d.out" 2>"$T/d.err" &
dpid=$!
t_wait 20 alive cleaner
cat >"$T/daemon.keys" <<'KEYS'
keys 3
wait-idle
wait-for cleaner 10
sleep 1.5
keys 3
wait-idle
dump cleaner_daemon
keys :q\n
KEYS
c_headless "the cleaner screen with a daemon running" "$T/daemon.keys"
t_contains "$(d cleaner_daemon)" ":$dpid" "the daemon's host:pid"
t_contains "$(d cleaner_daemon)" "127.0.0.1:$(($(t_port 0) + 44))" "its metrics address"
t_match "$(d cleaner_daemon)" "cleaner +[0-9]+\.[0-9]+\.[0-9]+" "its kind and version"
case $(d cleaner_daemon) in
*"no cleaner is running"*) t_fail "no hint while a cleaner runs" ;;
*) t_ok "no hint while a cleaner runs" ;;
esac
kill -TERM $dpid
wait $dpid
t_eq "$?" 0 "the daemon exits 0"

t_done test_console_workers

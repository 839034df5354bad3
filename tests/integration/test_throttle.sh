#!/bin/sh
# test_throttle.sh - the cleaner's throttle, against the shared test shards:
# the heartbeat row every shard gets while it runs (`bagstore throttle`);
# the throttle engaging on a loaded shard and naming the signal with its
# value and threshold: Threads_running driven up by sleeping queries, the
# heartbeat write's latency driven up by a transaction holding its row
# (against its idle baseline, and against max_write_latency), and short
# holds that slow a probe now and then, which only write_latency_signal:
# tail sees; a backfill
# held meanwhile (not moving, its job saying why) that finishes once the
# load is gone; critical_load stopping a job; failing closed when a signal
# cannot be read for max_signal_age (the heartbeat table broken on a shard,
# a replica that does not answer); read-only mode. The write latency is a
# signal only while another application writes to the shard (its writes
# counted by the server, less ours): without one, a backfill goes at full
# pace and says so; with one (t_other_writer), the latency holds it.
#
# Backfills are slowed with BAGSTORE_FAULT=slow_chunk; nothing here asserts
# a duration.
. tests/lib.sh

TMP=$(t_tmp)
BASE=$TMP/base.yaml
cp "$BAGSTORE_TEST_CONFIG" "$BASE"
N=3000
PORT1=$(t_port 1)
# a port of this run's block where nothing listens: a replica that does not answer
DEAD=$((${BAGSTORE_TEST_PORT:-23407} + 499))
cfg() { # NAME CLEANER-SETTINGS: a configuration with them, its path printed
	{ cat "$BASE"; echo "cleaner: {chunk_time: 0.05, $2}"; } >"$TMP/$1.yaml"
	echo "$TMP/$1.yaml"
}
bs() { # WANT DESC CONFIG ARGS...
	want=$1 desc=$2 c=$3
	shift 3
	t_exit "$want" "$desc" -- "$BAGSTORE" -c "$c" "$@"
}
bg() { # NAME CONFIG ARGS...: the CLI in the background, slowed; pid in $TMP/NAME.pid
	name=$1 c=$2
	shift 2
	BAGSTORE_FAULT=slow_chunk "$BAGSTORE" -c "$c" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
	echo $! >"$TMP/$name.pid"
}
bg_wait() { wait "$(cat "$TMP/$1.pid")"; }
scanned() { # INDEX: rows scanned, over both shards' jobs
	a=$(t_sql 0 "SELECT COALESCE(SUM(rows_scanned),0) FROM bagstore_jobs WHERE index_name='$1'")
	b=$(t_sql 1 "SELECT COALESCE(SUM(rows_scanned),0) FROM bagstore_jobs WHERE index_name='$1'")
	echo $((a + b))
}
rows() { # INDEX: index rows over both shards
	a=$(t_sql 0 "SELECT COUNT(*) FROM \`$1\`")
	b=$(t_sql 1 "SELECT COUNT(*) FROM \`$1\`")
	echo $((a + b))
}
state() { t_sql 0 "SELECT state FROM bagstore_indexes WHERE name='$1'"; }
reasons() { # INDEX: every job's state and reason, one a line
	t_sql 0 "SELECT CONCAT(state,': ',reason) FROM bagstore_jobs WHERE index_name='$1'"
	t_sql 1 "SELECT CONCAT(state,': ',reason) FROM bagstore_jobs WHERE index_name='$1'"
}
said() { # INDEX TEXT: a job of INDEX says TEXT
	reasons "$1" >"$TMP/reasons.txt" 2>&1
	grep -q -- "$2" "$TMP/reasons.txt"
}
# sleepers N: N clients running SELECT SLEEP(60) on s1 (Threads_running N+1)
sleepers() {
	k=0
	while [ $k -lt "$1" ]; do
		timeout 90 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$PORT1" -u root \
			-e "SELECT SLEEP(60)" >/dev/null 2>&1 &
		k=$((k + 1))
	done
}
sleepers_kill() { # the server side too: a killed client's SLEEP runs on
	ids=$(t_sql 1 "SELECT GROUP_CONCAT(ID) FROM information_schema.PROCESSLIST WHERE INFO='SELECT SLEEP(60)'")
	for id in $(echo "$ids" | tr ',' ' '); do
		[ "$id" = NULL ] || t_sql 1 "KILL $id" >/dev/null 2>&1
	done
}
running1() { # Threads_running on s1 above $1
	[ "$(t_sql 1 "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='THREADS_RUNNING'")" -gt "$1" ]
}
json_field() { # SHARD FIELD: the field of that shard's object in $T_OUT (throttle --json)
	printf '%s\n' "$T_OUT" | awk -v s="\"$1\"" -v f="\"$2\":" '
		$0 ~ "\"shard\": " s { on = 1 }
		on && index($0, f) { sub(/.*": */, ""); sub(/,$/, ""); print; exit }'
}
trap 'sleepers_kill; t_other_stop' EXIT
num_ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }

DEF=$(cfg def "repair_interval: 0.1")
bs 0 "init" "$DEF" init
awk -v n=$N 'BEGIN { for (k = 1; k <= n; k++) printf("{\"k\":%d}\n", k) }' >"$TMP/ents.jsonl"
bs 0 "put $N entities" "$DEF" put "$TMP/ents.jsonl"

# ------------------------------------------------------------ heartbeat and readings

bs 0 "throttle --help" "$DEF" throttle --help
t_contains "$T_OUT" "--seconds" "throttle --help names --seconds"
bs 2 "throttle --seconds with a bad value" "$DEF" throttle --seconds soon
bs 0 "throttle: every shard's signals, read" "$DEF" throttle --seconds 1.5 --json
t_eq "$(json_field s0 state)" '"go"' "s0 lets backfills go"
t_eq "$(json_field s1 state)" '"go"' "s1 lets backfills go"
t_match "$(json_field s0 write_latency_ms)" '^[0-9.e-]+$' "the heartbeat write's latency is measured"
t_match "$(json_field s0 write_baseline_ms)" '^[0-9.e-]+$' "and its idle baseline"
t_match "$(json_field s1 threads_running)" '^[1-9][0-9]*$' "Threads_running is read"
t_match "$(json_field s1 history_length)" '^[0-9]+$' "InnoDB's history list length is read"
hb=$(json_field s1 heartbeats)
if [ "${hb:-0}" -ge 5 ]; then t_ok "heartbeats written every 100 ms ($hb in 1.5 s)"; else t_fail "heartbeats written every 100 ms" "got ${hb:-none}"; fi
t_eq "$(t_sql 0 "SELECT shard FROM bagstore_heartbeat")" s0 "s0's heartbeat row names s0"
t_eq "$(t_sql 1 "SELECT shard FROM bagstore_heartbeat")" s1 "s1's heartbeat row names s1"
t_match "$(t_sql 1 "SELECT writer FROM bagstore_heartbeat")" '^.+:[0-9]+$' "it names its writer (host:pid)"
t_eq "$(t_sql 1 "SELECT TIMESTAMPDIFF(MICROSECOND, ts, NOW(6)) < 60000000 FROM bagstore_heartbeat")" 1 "its time is the shard's NOW(6)"
bs 0 "throttle as a table" "$DEF" throttle --seconds 0.8
t_match "$T_OUT" '^SHARD +STATE +WRITE_MS +BASELINE_MS +LIMIT_MS +OTHER_W/S +THREADS +HISTORY +REPLICA_LAG +PACE' "the table's columns"
t_match "$T_OUT" '^s1 +go ' "one row per shard"

# ------------------------------------------------------------ other applications' writes

bs 0 "throttle with nobody else writing" "$DEF" throttle --seconds 1.5 --json
t_eq "$(json_field s1 others_write)" false "nobody else writes to s1 (its own heartbeats and the test's reads do not count)"
t_match "$(json_field s1 other_writes_per_s)" '^[0-9.e-]+$' "other clients' writes a second are counted"
t_eq "$(json_field s1 reason)" '"full pace: no other writers on shard s1"' "the reason says full pace, and why"
t_other_writer "$PORT1" 20
bs 0 "throttle while another application writes to s1" "$DEF" throttle --seconds 2.5 --json
t_eq "$(json_field s1 others_write)" true "another application writes to s1"
w=$(json_field s1 other_writes_per_s)
if num_ge "$w" 20; then t_ok "its writes are counted ($w a second)"; else t_fail "its writes are counted" "other_writes_per_s: $w"; fi
t_eq "$(json_field s0 others_write)" false "and not to s0"
t_other_stop

# ------------------------------------------------------------ Threads_running

# (the probe is no signal here: this machine's other work must not muddle it)
LOAD=$(cfg load "max_load: 4, critical_load: 1000, write_latency_factor: 0")
sleepers 8
if t_wait 20 running1 8; then t_ok "eight sleeping queries on s1"; else t_fail "eight sleeping queries on s1"; fi
bs 0 "throttle on a loaded shard" "$LOAD" throttle --seconds 0.5 --json
t_eq "$(json_field s1 state)" '"over"' "s1 is over a threshold"
t_eq "$(json_field s1 signal)" '"threads_running"' "the signal is Threads_running"
t_eq "$(json_field s1 limit)" '4.0' "its threshold is max_load"
t_match "$(json_field s1 reason)" 'shard s1: Threads_running (9|[1-9][0-9]+) above max_load 4' "the reason gives value and threshold"
t_eq "$(json_field s0 state)" '"go"' "s0, not loaded, goes"
bs 0 "create by_k" "$DEF" index create by_k --on k:int --shard-on k
bg held "$LOAD" cleaner --index by_k
if t_wait 30 said by_k "throttled: shard s1: Threads_running [0-9]* above max_load 4"; then
	t_ok "the backfill is throttled, saying which shard, signal, value and threshold"
else
	t_fail "the backfill is throttled, saying which shard, signal, value and threshold" "$(cat "$TMP/reasons.txt")"
fi
a=$(scanned by_k)
sleep 1
t_eq "$(scanned by_k)" "$a" "a held backfill does not move"
if kill -0 "$(cat "$TMP/held.pid")" 2>/dev/null; then t_ok "the worker waits"; else t_fail "the worker waits" "$(cat "$TMP/held.err")"; fi
sleepers_kill
bg_wait held
t_eq "$?" 0 "the backfill finishes once the load is gone"
t_eq "$(state by_k)" ready "by_k ready"
t_eq "$(rows by_k)" "$N" "by_k complete"

# critical_load: the job stops, failed, saying how to resume
CRIT=$(cfg crit "max_load: 2, critical_load: 5, write_latency_factor: 0")
sleepers 8
t_wait 20 running1 8
bs 0 "create by_c" "$DEF" index create by_c --on k:int --shard-on k
bs 1 "a backfill above critical_load stops" "$CRIT" cleaner --index by_c
t_contains "$T_ERR" "above critical_load 5" "it says which threshold"
t_contains "$(reasons by_c)" "resume with \`bagstore backfill resume by_c\`" "the job says how to resume"
sleepers_kill
bs 0 "resume by_c" "$DEF" backfill resume by_c
bs 0 "and finish it" "$DEF" cleaner --index by_c
t_eq "$(rows by_c)" "$N" "by_c complete"

# ------------------------------------------------------------ the heartbeat write's latency

# a transaction holds s1's heartbeat row (from a second on, unless told): the probe
# waits, as a writer would, while the throttle runs
hold_row() { # SECONDS [DELAY]: s1's heartbeat row held, from DELAY (1) seconds on
	(sleep "${2:-1}"; timeout 60 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$PORT1" -u root bagstore \
		-e "START TRANSACTION; SELECT ts FROM bagstore_heartbeat WHERE shard='s1' FOR UPDATE; SELECT SLEEP($1); COMMIT" \
		>/dev/null 2>&1) &
	echo $! >"$TMP/hold.pid"
}
# s1's heartbeat row held for SECONDS from 1.2 s after a new process's
# probe first wrote it (its writer, host:pid, changed), however slowly that
# process starts: the throttle run next has had idle probes for its
# baseline, and a second of the server's write counters (other clients'
# writes are known from half a second of them; its probe and its counters'
# reading take turns, so a held probe holds the counters too)
hold_row_probed() { # SECONDS
	hb0=$(t_sql 1 "SELECT writer FROM bagstore_heartbeat WHERE shard='s1'")
	(newprobe() { hbw=$(t_sql 1 "SELECT writer FROM bagstore_heartbeat WHERE shard='s1'"); [ -n "$hbw" ] && [ "$hbw" != "$hb0" ]; }
	t_wait 60 newprobe && sleep 1.2 &&
		timeout 60 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$PORT1" -u root bagstore \
			-e "START TRANSACTION; SELECT ts FROM bagstore_heartbeat WHERE shard='s1' FOR UPDATE; SELECT SLEEP($1); COMMIT" \
			>/dev/null 2>&1) &
	echo $! >"$TMP/hold.pid"
}
# (sleep_coef: a slow backfill, still under way when its pace reaches the lowest)
LAT=$(cfg lat "max_signal_age: 30, sleep_coef: 10")
# with nobody else writing, nobody is hurt: the latency does not count
hold_row_probed 4
bs 0 "throttle while s1's heartbeat row is held, nobody else writing" "$LAT" throttle --seconds 2.5 --json
t_eq "$(json_field s1 state)" '"go"' "s1 goes: nobody else writes there"
t_eq "$(json_field s1 reason)" '"full pace: no other writers on shard s1"' "and the reason says why"
wait "$(cat "$TMP/hold.pid")"
t_other_writer "$PORT1" 60
hold_row_probed 4
bs 0 "throttle while s1's heartbeat row is held" "$LAT" throttle --seconds 2.5 --json
t_eq "$(json_field s1 state)" '"over"' "s1 is over a threshold"
t_eq "$(json_field s1 signal)" '"write_latency"' "the signal is the heartbeat write's latency"
t_match "$(json_field s1 reason)" 'shard s1: write latency [0-9.]+ ms above [0-9.]+ ms \(([0-9.]+x its idle baseline [0-9.]+ ms|its idle baseline [0-9.]+ ms \+ 0\.50 ms)\)' \
	"the reason gives value, threshold and idle baseline"
t_eq "$(json_field s0 state)" '"go"' "s0 goes"
wait "$(cat "$TMP/hold.pid")"
ABS=$(cfg abs "max_signal_age: 30, max_write_latency: 0.05")
hold_row_probed 4
bs 0 "throttle with max_write_latency" "$ABS" throttle --seconds 2.5 --json
t_match "$(json_field s1 reason)" 'shard s1: write latency [0-9.]+ ms above 50.00 ms \(max_write_latency\)' \
	"max_write_latency is the threshold when set"
wait "$(cat "$TMP/hold.pid")"
# the tail: short holds of the row in one session, each slowing one
# probe; they stop a second before the throttle's last reading, so no
# probe is held then. The median of the last five (half a second) has
# passed them by; the second highest of the last twenty (two seconds,
# write_latency_signal: tail) still holds three or four of them
pulses() { # N: N holds of 0.12 s on s1's heartbeat row, 0.3 s apart
	awk -v n="$1" 'BEGIN { for (k = 1; k <= n; k++)
		print "START TRANSACTION; SELECT ts FROM bagstore_heartbeat WHERE shard=\047s1\047 FOR UPDATE; DO SLEEP(0.12); COMMIT; DO SLEEP(0.18);" }' |
		timeout 30 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$PORT1" -u root bagstore >/dev/null 2>&1 &
	echo $! >"$TMP/pulses.pid"
}
TAIL=$(cfg tail "max_signal_age: 30, write_latency_signal: tail")
pulses 8
bs 0 "throttle, write_latency_signal tail, a second after short holds slowed a probe now and then" "$TAIL" throttle --seconds 3.4 --json
wait "$(cat "$TMP/pulses.pid")"
t_eq "$(json_field s1 state)" '"over"' "s1 is over its threshold"
t_match "$(json_field s1 reason)" 'shard s1: write latency \(tail\) [0-9.]+ ms above [0-9.]+ ms' "the reason names the tail"
t_eq "$(json_field s1 write_latency_signal)" '"tail"' "throttle --json says which signal"
t_eq "$(awk -v v="$(json_field s1 write_latency_ms)" 'BEGIN { print (v + 0 >= 20) }')" 1 \
	"the signal is a held probe's latency, tens of ms ($(json_field s1 write_latency_ms) ms)"
pulses 8
bs 0 "throttle, the median, the same holds" "$LAT" throttle --seconds 3.4 --json
wait "$(cat "$TMP/pulses.pid")"
t_eq "$(json_field s1 state)" '"go"' "the median has passed them by: s1 goes"
t_eq "$(json_field s1 write_latency_signal)" '"median"' "and says it is the median"
t_other_stop
# a backfill with nobody else writing says it goes at full pace, and why
bs 0 "create by_f" "$DEF" index create by_f --on k:int --shard-on k
bg full "$LAT" cleaner --index by_f
if t_wait 30 said by_f "running: full pace: no other writers on shard s[01]"; then
	t_ok "a backfill with nobody else writing goes at full pace, saying why"
else
	t_fail "a backfill with nobody else writing goes at full pace, saying why" "$(cat "$TMP/reasons.txt")"
fi
# seen: the rest needs neither LAT's slow pace nor slow_chunk
kill -TERM "$(cat "$TMP/full.pid")"
bg_wait full
bs 0 "by_f finished by another worker" "$DEF" cleaner --index by_f
t_eq "$(rows by_f)" "$N" "by_f complete"
t_other_writer "$PORT1" 90
bs 0 "create by_l" "$DEF" index create by_l --on k:int --shard-on k
bg lat "$LAT" cleaner --index by_l
started() { [ "$(scanned by_l)" -gt 0 ]; }
t_wait 30 started
# held at once: the slowed backfill has under a second of chunks left
hold_row 8 0
if t_wait 30 said by_l "throttled: shard s1: write latency"; then
	t_ok "a backfill is held by the heartbeat write's latency, and says so"
else
	t_fail "a backfill is held by the heartbeat write's latency, and says so" "$(cat "$TMP/reasons.txt")"
fi
t_other_stop
bg_wait lat
t_eq "$?" 0 "it finishes once the row is released"
t_eq "$(rows by_l)" "$N" "by_l complete"
wait "$(cat "$TMP/hold.pid")"

# ------------------------------------------------------------ failing closed

# the heartbeat table broken on s1: its probe cannot be read
t_sql 1 "RENAME TABLE bagstore_heartbeat TO hb_saved; CREATE TABLE bagstore_heartbeat (x INT)"
FAST=$(cfg fast "max_signal_age: 1")
bs 1 "throttle with s1's heartbeat unwritable" "$FAST" throttle --seconds 1.5 --json
t_eq "$(json_field s1 state)" '"unreadable"' "s1's signals are unreadable"
t_match "$(json_field s1 reason)" "waiting: shard s1: its heartbeat write unreadable for [0-9.]+ s \\(max_signal_age 1.0 s\\): .*Unknown column" \
	"the reason says which signal, for how long, and MySQL's message"
t_contains "$T_ERR" "could not be read" "and the command says so"
bs 0 "create by_u" "$DEF" index create by_u --on k:int --shard-on k
bg unr "$FAST" cleaner --index by_u
if t_wait 30 said by_u "throttled: waiting: shard s1: its heartbeat write unreadable"; then
	t_ok "a backfill pauses when a signal cannot be read"
else
	t_fail "a backfill pauses when a signal cannot be read" "$(cat "$TMP/reasons.txt")"
fi
a=$(scanned by_u)
sleep 1
t_eq "$(scanned by_u)" "$a" "and does not move"
t_sql 1 "DROP TABLE bagstore_heartbeat; RENAME TABLE hb_saved TO bagstore_heartbeat"
bg_wait unr
t_eq "$?" 0 "it finishes once the heartbeat can be written again"
t_eq "$(rows by_u)" "$N" "by_u complete"

# a replica that does not answer
sed "s/^\(  - {name: s0,.*\)}$/\1, replicas: [{host: 127.0.0.1, port: $DEAD}]}/" "$FAST" >"$TMP/dead.yaml"
t_contains "$(cat "$TMP/dead.yaml")" "port: $DEAD}]" "a configuration with a replica that does not answer"
bs 1 "throttle with a replica that does not answer" "$TMP/dead.yaml" throttle --seconds 1.5 --json
t_eq "$(json_field s0 state)" '"unreadable"' "s0's replica lag is unreadable"
t_contains "$(json_field s0 reason)" "replica 127.0.0.1:$DEAD lag unreadable" "the reason names the replica"
bs 0 "create by_r" "$DEF" index create by_r --on k:int --shard-on k
bg rep "$TMP/dead.yaml" cleaner --index by_r
if t_wait 30 said by_r "throttled: waiting: shard s0: replica 127.0.0.1:$DEAD lag unreadable"; then
	t_ok "a backfill pauses while a replica's lag cannot be read"
else
	t_fail "a backfill pauses while a replica's lag cannot be read" "$(cat "$TMP/reasons.txt")"
fi
kill -TERM "$(cat "$TMP/rep.pid")"
bg_wait rep
bs 0 "without the dead replica, it finishes" "$DEF" cleaner --index by_r
t_eq "$(rows by_r)" "$N" "by_r complete"

# ------------------------------------------------------------ read-only

bs 1 "throttle refused in read-only mode" "$DEF" --read-only throttle
t_contains "$T_ERR" "read-only" "it says why"

bs 0 "verify: no drift" "$DEF" verify
t_done test_throttle

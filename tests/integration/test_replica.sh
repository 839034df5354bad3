#!/bin/sh
# test_replica.sh - replica lag, for real: a primary shard with a binary log
# and a replica of it delayed by MASTER_DELAY. `bagstore shards` reports the
# replica's Seconds_Behind_Master (the console's shards screen draws the
# same status), a replica that does not replicate reads "unknown" with its
# reason, and a backfill waits, throttled, saying which replica lags. The
# cleaner's heartbeat gives the replica's lag below a second, delayed or not.
# Its own shards (the test port + 394 and + 395, or BAGSTORE_REPLICA_PORT), stopped at
# the end.
. tests/lib.sh
T=$(t_tmp)
B=$BAGSTORE
P=${BAGSTORE_REPLICA_PORT:-$((${BAGSTORE_TEST_PORT:-23407} + 394))}
R=$((P + 1))
# not under $T: t_done removes $T before the EXIT trap could stop them
DP=$(t_servers replica)/primary
DR=$(t_servers replica)/replica
stop_all() {
	sh "$SHARDS_SH" stop --dir "$DP" >/dev/null 2>&1
	sh "$SHARDS_SH" stop --dir "$DR" >/dev/null 2>&1
}
trap stop_all EXIT
stop_all
rm -rf "$DP" "$DR"

SHARDS_LOG_BIN=1 t_exit 0 "start a primary with a binary log" -- sh "$SHARDS_SH" start --count 1 --port $P --dir "$DP"
SHARDS_LOG_BIN=1 t_exit 0 "start its replica" -- sh "$SHARDS_SH" start --count 1 --port $R --dir "$DR"
# nothing below means anything without both servers
[ "$T_FAILED" = 0 ] || t_done test_replica
rsql() { mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$1" -uroot -N -B -e "$2"; }
# the replica starts from the primary's current binlog position (both were
# set up alike), then applies every event 60 s late
pos=$(rsql $P "SHOW MASTER STATUS" | awk '{print $1 " " $2}')
t_exit 0 "point the replica at the primary, delayed 60 s" -- rsql $R \
	"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$P, MASTER_USER='root',
	 MASTER_LOG_FILE='${pos% *}', MASTER_LOG_POS=${pos#* }, MASTER_DELAY=60; START SLAVE"

cat >"$T/cfg.yaml" <<CFG
shards:
  - {name: s0, host: 127.0.0.1, port: $P, database: bagstore, user: root,
     replicas: [{host: 127.0.0.1, port: $R}]}
timeouts: {connect: 2, read: 10, write: 10}
catalog_ttl: 1
cleaner: {max_replica_lag: 2}
CFG
# the same primary, but its "replica" is the primary itself: not replicating
sed "s/port: $R}/port: $P}/" "$T/cfg.yaml" >"$T/notrep.yaml"

t_exit 0 "init the primary" -- "$B" -c "$T/cfg.yaml" init
printf '{"user_id":{"$uuid":"f48b0440-ca0c-4f66-991c-4d5f6a078eaf"},"n":%d}\n' 1 2 3 4 5 6 7 8 9 10 >"$T/e.jsonl"
t_exit 0 "put entities" -- "$B" -c "$T/cfg.yaml" put "$T/e.jsonl"

# Seconds_Behind_Master grows while the replica holds the events back
lag=0
n=0
while [ $n -lt 40 ]; do
	"$B" -c "$T/cfg.yaml" shards --json >"$T/s.json" 2>/dev/null
	lag=$(sed -n 's/.*"replica_lag": *\([0-9.]*\).*/\1/p' "$T/s.json" | cut -d. -f1)
	[ -n "$lag" ] && [ "$lag" -ge 3 ] && break
	sleep 0.5
	n=$((n + 1))
done
if [ -n "$lag" ] && [ "$lag" -ge 3 ]; then
	t_ok "shards --json reports the replica 3 s or more behind"
	t_contains "$(cat "$T/s.json")" '"replica_lag_state": "measured"' "its lag measured"
else
	t_fail "shards --json reports the replica 3 s or more behind" "got: ${lag:-none}" "$(cat "$T/s.json")"
fi
t_exit 0 "shards table" -- "$B" -c "$T/cfg.yaml" shards
t_match "$T_OUT" 's0 .* [0-9]+s +ok$' "the table's REPL_LAG column shows seconds"

# the console's shards screen draws the same status
mkdir -p "$T/dumps"
t_exit 0 "console, headless, shards screen" -- \
	"$B" -c "$T/cfg.yaml" --headless tests/console/replica.keys --dump-dir "$T/dumps"
t_match "$(cat "$T/dumps/shards"* 2>/dev/null)" 's0 .* [0-9]+\.[0-9]s +ok' "the console shows the replica's lag in seconds"

t_exit 0 "shards with a replica that does not replicate" -- "$B" -c "$T/notrep.yaml" shards
t_contains "$T_OUT" "unknown" "its lag reads unknown"
t_contains "$T_OUT" "not replicating" "with the reason"
t_exit 0 "shards --json, not replicating" -- "$B" -c "$T/notrep.yaml" shards --json
t_contains "$T_OUT" '"replica_lag": null' "lag is null in JSON"
t_contains "$T_OUT" '"replica_lag_state": "unknown"' "and says it is not known, not that there is no replica"
# the console says why too, not a bare "unknown"
rm -f "$T/dumps/shards"*
t_exit 0 "console, headless, a replica that does not replicate" -- \
	"$B" -c "$T/notrep.yaml" --headless tests/console/replica.keys --dump-dir "$T/dumps"
t_match "$(cat "$T/dumps/shards"* 2>/dev/null)" "^s0 .* unknown +ok" "the console's REPL LAG reads unknown"
t_contains "$(cat "$T/dumps/shards"* 2>/dev/null)" "s0 replica lag unknown: replica 127.0.0.1:" "the console names the replica"
t_contains "$(cat "$T/dumps/shards"* 2>/dev/null)" "not replicating" "and says why, as the CLI does"

# a backfill waits for the lagging replica and says so
t_exit 0 "create an index over existing entities" -- "$B" -c "$T/cfg.yaml" index create index_n --on n:int --shard-on n
"$B" -c "$T/cfg.yaml" cleaner --index index_n >"$T/cleaner.out" 2>&1 &
cpid=$!
seen=""
n=0
while [ $n -lt 60 ]; do
	"$B" -c "$T/cfg.yaml" backfill list >"$T/jobs.txt" 2>&1
	grep -q "throttled.*replica 127.0.0.1:$R" "$T/jobs.txt" && { seen=1; break; }
	sleep 0.25
	n=$((n + 1))
done
t_eq "$seen" 1 "the running backfill is throttled, naming the lagging replica"
t_contains "$(cat "$T/jobs.txt")" "behind, above max_replica_lag" "and by how much"
kill -0 $cpid 2>/dev/null
t_eq $? 0 "the backfill waits rather than finishing or failing"
kill -TERM $cpid 2>/dev/null
wait $cpid
t_exit 0 "index still building" -- "$B" -c "$T/cfg.yaml" index list
t_contains "$T_OUT" "building" "not ready while throttled"

# ------------------------------------------------------------ the heartbeat's lag
# The cleaner's throttle writes a heartbeat row on the primary every 100 ms
# and reads it on the replica: the replica's NOW(6) minus the row's time is
# its lag, to the sub-second, where Seconds_Behind_Master has whole seconds.
# (The probe is no signal here: only the replica's lag is looked at.)
hb_cfg() { # NAME MAX_REPLICA_LAG
	sed "s/^cleaner: .*/cleaner: {max_replica_lag: $2, write_latency_factor: 0}/" "$T/cfg.yaml" >"$T/$1.yaml"
}
hb_lag() { # the replica's lag in the last `throttle --json` ($T_OUT)
	printf '%s\n' "$T_OUT" | sed -n 's/.*"lag_s": *\([0-9.e-]*\).*/\1/p' | head -1
}
delay() { # SECONDS: the replica applies events that late from now on
	rsql $R "STOP SLAVE; CHANGE MASTER TO MASTER_DELAY=$1; START SLAVE"
}
hb_cfg hb_fine 5
hb_cfg hb_tight 0.5
t_exit 0 "the replica applies events at once" -- delay 0
# the events held back for 60 s apply now; then the heartbeat tells how far behind
n=0
lag=""
while [ $n -lt 20 ]; do
	t_exit 0 "throttle reads the replica's lag from the heartbeat" -- "$B" -c "$T/hb_fine.yaml" throttle --seconds 1.5 --json
	lag=$(hb_lag)
	[ -n "$lag" ] && awk -v l="$lag" 'BEGIN { exit !(l < 1) }' && break
	n=$((n + 1))
done
if [ -n "$lag" ] && awk -v l="$lag" 'BEGIN { exit !(l >= 0 && l < 1) }'; then
	t_ok "an undelayed replica's lag reads below one second ($lag s)"
else
	t_fail "an undelayed replica's lag reads below one second" "got: ${lag:-none}" "$T_OUT"
fi
t_exit 0 "throttle with max_replica_lag 0.5 s" -- "$B" -c "$T/hb_tight.yaml" throttle --seconds 1.5 --json
t_contains "$T_OUT" '"state": "go"' "a sub-second threshold lets it go"

# delayed 3 s: events carry whole-second times, and the replica measures
# its clock's difference with the primary's in whole seconds too (a second
# either way, as the two clocks' seconds fall), so the heartbeat row a
# replica shows is 1 to 4 s old (plus what applying takes); a delay of
# 2 s could show a row 0.4 s old
t_exit 0 "the replica applies events 3 s late" -- delay 3
sleep 4
fractions=0
k=0
while [ $k -lt 3 ]; do
	# (longer than the delay: its first heartbeat must have reached the replica)
	t_exit 0 "throttle on the delayed replica" -- "$B" -c "$T/hb_fine.yaml" throttle --seconds 5 --json
	lag=$(hb_lag)
	if [ -n "$lag" ] && awk -v l="$lag" 'BEGIN { exit !(l >= 0.5 && l < 4.5) }'; then
		t_ok "a replica delayed 3 s reads between 0.5 and 4.5 s behind ($lag s)"
	else
		t_fail "a replica delayed 3 s reads between 0.5 and 4.5 s behind" "got: ${lag:-none}" "$T_OUT"
	fi
	awk -v l="$lag" 'BEGIN { exit !(l != int(l)) }' && fractions=$((fractions + 1))
	k=$((k + 1))
done
t_eq "$fractions" 3 "the heartbeat's lag has fractions of a second"
t_exit 0 "throttle with max_replica_lag 0.5 s" -- "$B" -c "$T/hb_tight.yaml" throttle --seconds 1.5 --json
t_contains "$T_OUT" '"signal": "replica_lag"' "the replica's lag holds backfills"
t_match "$T_OUT" "replica 127.0.0.1:$R [0-9]+\.[0-9][0-9] s behind, above max_replica_lag 0.50 s" \
	"the reason gives the lag to the hundredth and the threshold"

t_done test_replica

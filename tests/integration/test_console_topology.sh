#!/bin/sh
# test_console_topology.sh - the :topology screen, headless against real
# shards: the test's two shards and a third of its own (shard 0's port + 4,
# or BAGSTORE_TOPOLOGY_PORT; under t_servers topology, stopped at the
# end). The bucket map shows the new shard owning nothing; r previews the
# plan, y then `reshard` typed records it; the moves show live, pause and
# resume through the keys; a second start while the plan is in flight is
# refused with the engine's reason; a cleaner runs the moves and the screen
# shows them done and the buckets spread; a drain is started and then
# cancelled after `cancel` is typed, its buckets where they were. Read-only
# strips the keys. Every change is audited.
. tests/console/lib.sh

P0=$(t_port 0)
XP=${BAGSTORE_TOPOLOGY_PORT:-$((P0 + 4))}
T_TIMEOUT=120

stop_extra() { t_extra_stop topology; }
trap stop_extra EXIT
trap 'stop_extra; exit 130' INT TERM
t_exit 0 "a third shard" -- t_extra_shard topology "$XP"
[ "$T_FAILED" = 0 ] || t_done test_console_topology

# cfg FILE [drain]: the test's shards and s2 (drain: true with "drain")
cfg() { t_shards_cfg "$1" 3 "$XP" "${2:-}"; }
C3=$T/c3.yaml CD=$T/drain.yaml
cfg "$C3"
cfg "$CD" drain
q2() { timeout 30 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$XP" -u root -N -B bagstore -e "$1"; }

c_init
numbered() { printf '{"n": %d}\n' "$1"; }
c_put 200 numbered
t_exit 0 "init with s2" -- "$BAGSTORE" -c "$C3" init
t_contains "$T_OUT" "owning no bucket yet" "init: s2 owns nothing yet"

# ------------------------------------------------------------ grow 2 -> 3
cat >"$T/grow.keys" <<'KEYS'
keys 8
wait-for new: owns nothing yet
wait-idle
dump map
keys r
wait-for plan from bucket map version
dump preview
keys y
dump prompt
keys reshard\n
wait-for recorded
wait-idle
key R
wait-for s0 -> s2
wait-idle
dump moves
keys p
wait-for reshard paused
wait-idle
key R
wait-for reshard: paused
dump paused
keys u
wait-for reshard resumed
wait-idle
keys r
wait-for still has moves in flight
dump again
keys y
keys reshard\n
wait-for not started
dump refused
keys :q\n
KEYS
c_headless "headless: preview, start, pause, resume" "$T/grow.keys" -c "$C3"
t_contains "$(d map)" "Topology: bucket map version" "the map's version"
t_match "$(d map)" "^s2 .* 0/[0-9]+ .*new: owns nothing yet" "s2: a bar of 0 buckets, marked new"
t_match "$(d map)" "^s0 .*-> [0-9]+" "s0: its share after a plan"
t_contains "$(d map)" "the configuration asks for 2 moves" "the moves the configuration asks for"
t_match "$(d map)" "~[0-9]+ entities" "entities are marked as estimates"
t_contains "$(d preview)" "SOURCE" "the preview is the plan's table"
t_match "$(d preview)" "s0 +s2 " "a move s0 -> s2 in the preview"
t_match "$(d preview)" "s1 +s2 " "a move s1 -> s2 in the preview"
t_contains "$(d preview)" "y: start these moves" "y starts it"
t_contains "$(d prompt)" "Type reshard to confirm" "starting asks for the word"
t_contains "$(d prompt)" "2 moves" "the prompt names the scale"
t_match "$(d moves)" "s0 -> s2 .*(queued|running)" "the move is listed"
t_contains "$(d moves)" "PROGRESS" "moves: a progress column"
t_contains "$(d paused)" "reshard: paused" "p pauses"
t_contains "$(d paused)" "paused: paused by an operator" "why a move waits, in full"
t_contains "$(d again)" "An earlier plan still has moves in flight" "a second preview says a plan is in flight"
t_contains "$(d refused)" "not started" "a second start is refused"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_moves WHERE state='paused'")" 0 "u resumed s0's move"

# a mover killed right after a cut-over: the source's rows of those buckets
# and the target's copies both stand; `#` on the shards screen counts every
# entity once all the same
BAGSTORE_FAULT=move_kill_flipped t_exit 75 "a mover killed right after its flip" -- "$BAGSTORE" -c "$C3" cleaner --reshard
raw=$(( $(t_sql 0 "SELECT COUNT(*) FROM entities") + $(t_sql 1 "SELECT COUNT(*) FROM entities") + $(q2 "SELECT COUNT(*) FROM entities") ))
t_match "$raw" "^(2[0-9][1-9]|2[1-9][0-9]|[3-9][0-9][0-9])$" "the shards hold copies: more rows than the 200 entities"
cat >"$T/count.keys" <<'KEYS'
keys 1
wait-idle
key #
wait-for counted exactly
wait-idle
dump count
keys :q\n
KEYS
c_headless "headless: # while a move's copies stand" "$T/count.keys" -c "$C3"
t_match "$(d count)" "^TOTAL .* 200 " "#: every entity counted once while copies stand"
t_exit 0 "a cleaner runs the moves" -- "$BAGSTORE" -c "$C3" cleaner --reshard
printf 'keys 8\nwait-for reshard: done\nwait-idle\ndump done\nkeys :q\n' >"$T/done.keys"
c_headless "headless: the moves done" "$T/done.keys" -c "$C3"
t_contains "$(d done)" "2 moves, 2 done" "both moves done"
t_match "$(d done)" "^s2 .* 136[56]/4096 " "s2 owns its share: a third of 4096 buckets"
t_contains "$(d done)" "the buckets are spread as the configuration asks" "nothing left to move"
t_match "$(q2 "SELECT COUNT(*) FROM bagstore_buckets WHERE state='owned'")" "^136[56]$" "s2's own rows agree"
n0=$(t_sql 0 "SELECT COUNT(*) FROM entities") n1=$(t_sql 1 "SELECT COUNT(*) FROM entities")
n2=$(q2 "SELECT COUNT(*) FROM entities")
t_eq "$((n0 + n1 + n2))" 200 "every entity once over the three shards"
t_match "$n2" "^[1-9][0-9]*$" "s2 holds entities"

# ------------------------------------------------------------ a drain, cancelled
owned_before=$(q2 "SELECT COUNT(*) FROM bagstore_buckets WHERE state='owned'")
cat >"$T/drain.keys" <<'KEYS'
keys 8
wait-for draining
wait-idle
dump drain
keys r
wait-for plan from bucket map version
keys y
keys reshard\n
wait-for recorded
wait-idle
key R
wait-for s2 -> s0
wait-idle
keys x
dump cancel_prompt
keys nope\n
dump not_cancelled
keys x
keys cancel\n
wait-for reshard cancelled
wait-idle
dump cancelled
keys :q\n
KEYS
c_headless "headless: a drain started, then cancelled" "$T/drain.keys" -c "$CD"
t_match "$(d drain)" "^s2 .*-> 0 .*draining" "s2 marked draining, its share 0"
t_contains "$(d cancel_prompt)" "cancel resharding: 2 moves before cut-over undone" "cancel names the scale"
t_contains "$(d cancel_prompt)" "Type cancel to confirm" "cancel asks for the word"
t_contains "$(d not_cancelled)" "not cancelled" "a wrong word cancels nothing"
t_contains "$(d cancelled)" "reshard cancelled" "x then cancel cancels"
t_exit 1 "a cleaner ends the cancelled moves, and says so" -- "$BAGSTORE" -c "$CD" cleaner --reshard
t_contains "$T_ERR" "the reshard was cancelled" "cleaner --reshard: cancelled"
t_eq "$(q2 "SELECT COUNT(*) FROM bagstore_buckets WHERE state='owned'")" "$owned_before" \
	"the cancelled drain left s2's buckets where they were"
t_exit 0 "reshard status" -- "$BAGSTORE" -c "$CD" reshard status --json
t_contains "$T_OUT" '"state": "cancelled"' "the plan ended cancelled"

# ------------------------------------------------------------ a preview gone stale
# The drain previewed, then run to its end from the command line while the
# preview is open: confirming it starts nothing (the map moved since).
# The console reads its script from a pipe, line by line: the keys that
# confirm are written once the drain has run to its end.
mkfifo "$T/stale.keys"
"$BAGSTORE" -c "$CD" --headless "$T/stale.keys" --dump-dir "$D" >"$T/stale.out" 2>&1 &
console=$!
exec 4>"$T/stale.keys"
cat >&4 <<'KEYS'
keys 8
wait-for draining
wait-idle
keys r
wait-for plan from bucket map version
dump preview2
KEYS
i=0
while [ $i -lt 300 ] && [ ! -s "$D/preview2.txt" ]; do sleep 0.1; i=$((i + 1)); done
t_exit 0 "the drain started from the command line" -- "$BAGSTORE" -c "$CD" reshard start --yes
t_exit 0 "and run to its end" -- "$BAGSTORE" -c "$CD" cleaner --reshard
cat >&4 <<'KEYS'
sleep 1
keys y
keys reshard\n
wait-for plan changed since the preview 20
dump changed
keys :q\n
KEYS
exec 4>&-
wait "$console"
t_eq "$?" 0 "headless: the stale preview (exit status)"
t_contains "$(d changed)" "not started: the plan changed since the preview" "a stale preview starts nothing"
t_eq "$(q2 "SELECT COUNT(*) FROM bagstore_buckets WHERE state='owned'")" 0 "the drain emptied s2"
t_eq "$(q2 "SELECT COUNT(*) FROM entities")" 0 "no entity left on s2"

# ------------------------------------------------------------ read-only, audit
printf 'keys 8\nwait-idle\nkeys r\ndump ro\nkeys :q\n' >"$T/ro.keys"
c_headless "headless read-only" "$T/ro.keys" -c "$CD" --read-only
t_contains "$(d ro)" "read-only: this key changes data" "read-only strips r"
audit=$(t_sql 0 "SELECT action, detail FROM bagstore_audit")
t_contains "$audit" "reshard.start" "audit: start"
t_contains "$audit" "reshard.pause" "audit: pause"
t_contains "$audit" "reshard.resume" "audit: resume"
t_contains "$audit" "reshard.cancel" "audit: cancel"
t_contains "$audit" "reshard.run	cleaner --reshard; from the command line" "audit: cleaner --reshard, from the command line"
t_exit 0 "verify after all that" -- "$BAGSTORE" -c "$C3" verify
t_done test_console_topology

#!/bin/sh
# test_console_config.sh - the console follows its configuration file,
# headless against real shards: the test's two and a third of its own
# (shard 0's port + 4, or BAGSTORE_TOPOLOGY_PORT; under t_servers config,
# stopped at the end). The file is rewritten under an open console:
#  - a third shard listed before `init` added it: the new list disagrees
#    with the shards and is refused, the console keeps its two shards;
#  - after `init`, the same file is taken: s2 shows on the topology screen,
#    owning nothing, and the plan moves buckets to it;
#  - a plan previewed, then the file marks s2 `drain: true`: confirming the
#    preview records nothing (it was computed from another configuration),
#    and the topology shows s2 draining with nothing to move;
#  - a file that does not parse is refused with its file:line, the
#    configuration in force stays; `:reload` reads the file when asked;
#  - a shard that left the map while the console lists it shows its
#    disagreement, as `bagstore shards` does (a long-lived connection is
#    checked again).
. tests/console/lib.sh

P0=$(t_port 0)
XP=${BAGSTORE_TOPOLOGY_PORT:-$((P0 + 4))}
T_TIMEOUT=120

stop_extra() { t_extra_stop config; }
trap stop_extra EXIT
trap 'stop_extra; exit 130' INT TERM
t_exit 0 "a third shard" -- t_extra_shard config "$XP"
[ "$T_FAILED" = 0 ] || t_done test_console_config

# cfg FILE N [drain]: the first N of s0, s1, s2 (s2 drain: true with "drain")
cfg() { t_shards_cfg "$1" "$2" "$XP" "${3:-}"; }
F=$T/live.yaml C2=$T/c2.yaml C3=$T/c3.yaml
cfg "$F" 2
cfg "$C2" 2
cfg "$C3" 3

c_init
numbered() { printf '{"n": %d}\n' "$1"; }
c_put 100 numbered

# wait_dump NAME: until the headless console wrote dump NAME
wait_dump() {
	i=0
	while [ $i -lt 600 ] && [ ! -s "$D/$1.txt" ]; do sleep 0.1; i=$((i + 1)); done
}

cat >"$T/live.keys" <<'KEYS'
keys 8
wait-for the buckets are spread
wait-idle
dump two
wait-for disagrees with the shards 40
dump refused
wait-for reloaded 60
wait-idle
key R
wait-for new: owns nothing yet
wait-for the configuration asks for 2 moves
dump three
keys r
wait-for plan from bucket map version
dump preview
wait-for s2 drain: true 40
keys y
keys reshard\n
wait-for not started 20
dump stale
key Esc
wait-idle
key R
wait-for draining
wait-idle
dump drained
wait-for not reloaded 40
dump bad
sleep 7
keys :reload\n
wait-for not reloaded
dump bad_again
keys 1
wait-for in the configuration (line 60
dump mismatch
keys 8
wait-for not a member of the store's bucket map 30
dump notmap
keys :q\n
KEYS
"$BAGSTORE" -c "$F" --headless "$T/live.keys" --dump-dir "$D" >"$T/live.out" 2>&1 &
console=$!

wait_dump two
cfg "$F" 3 # s2 is not a member of the map yet
wait_dump refused
t_exit 0 "init adds s2" -- "$BAGSTORE" -c "$C3" init
cfg "$F" 3
touch "$F"
wait_dump preview
cfg "$F" 3 drain
wait_dump drained
printf 'shards:\n  - {name: s0, host: 127.0.0.1, port: %s\n  - [\n' "$P0" >"$F"
wait_dump bad_again
# s2 owns nothing: an init without it forgets it, while the console still lists it
t_exit 0 "init without s2 forgets it" -- "$BAGSTORE" -c "$C2" init
t_exit "!0" "bagstore shards: s2 disagrees" -- "$BAGSTORE" -c "$C3" shards
t_match "$T_OUT" "^s0 .*MISMATCH" "the CLI says MISMATCH for s0 (it is s2's map that holds s2)"
wait "$console"
t_eq "$?" 0 "headless: the file changed under the console (exit status)"
cat "$T/live.out"

t_contains "$(d two)" "2 shards" "two shards at first"
t_contains "$(d refused)" "not reloaded, its shard list disagrees with the shards" "a list the map does not know is refused"
t_contains "$(d refused)" "2 shards" "the console keeps its two shards"
t_match "$(d three)" "^s2 .* 0/[0-9]+ .*new: owns nothing yet" "after init the file's s2 is on the topology"
t_contains "$(d three)" "3 shards" "the title counts three shards"
t_contains "$(d stale)" "not started: the configuration changed since the preview" \
	"a preview from another configuration records nothing"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_moves")" 0 "no move recorded"
t_match "$(d drained)" "^s2 .*draining" "s2 shown draining"
c_lacks drained "new: owns nothing yet" "a draining shard is not called new"
t_contains "$(d drained)" "the buckets are spread as the configuration asks" "nothing to move to a draining shard"
t_match "$(d bad)" "live.yaml:[0-9]+" "a bad file is refused with its file:line"
t_contains "$(d bad)" "the console keeps its configuration" "and the configuration in force stays"
t_contains "$(d bad_again)" "not reloaded" ":reload reads the file again"
t_match "$(d mismatch)" "^ *s0 .*(DISAGREES|MISMATCH)" "a shard listed and gone from the map: the console disagrees as the CLI does"
t_contains "$(d notmap)" "shard s2 is in the configuration (line 4) but not a member of the store's bucket map" \
	"the topology says which shard the file lists and the map does not"
t_contains "$(d notmap)" "shard s2 is in the configuration (line 4) but not a member of the store's bucket map" \
	"the topology says which shard the file lists and the map does not"
t_done test_console_config

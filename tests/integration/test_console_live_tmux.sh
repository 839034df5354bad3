#!/bin/sh
# test_console_live_tmux.sh - the real program in a tmux session at 80x24,
# its configuration file changed under it (issue 19: a console that is
# never behind the truth): the topology screen open on two shards; a third
# added to the file and by `init` shows, owning nothing, on the bucket map;
# a reshard recorded from the command line shows its moves as bars over the
# map, and that no cleaner runs them; run to their end, the map shows the
# third shard's buckets; then the file drains it and the screen shows the
# drain and the moves it asks for. The third shard is shard 0's port + 4
# (or BAGSTORE_TOPOLOGY_PORT), under t_servers live, stopped at the end.
. tests/console/lib.sh

if ! command -v tmux >/dev/null 2>&1; then
	t_fail "tmux is installed (scripts/deps.sh)"
	t_done test_console_live_tmux
fi
P0=$(t_port 0)
XP=${BAGSTORE_TOPOLOGY_PORT:-$((P0 + 4))}
BIN=$(cd "$(dirname "$BAGSTORE")" && pwd)/$(basename "$BAGSTORE")
T_TIMEOUT=120
S="bagstore-live-$$"
TM="tmux -L $S"

cleanup() {
	$TM kill-server >/dev/null 2>&1
	t_extra_stop live
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM
t_exit 0 "a third shard" -- t_extra_shard live "$XP"
[ "$T_FAILED" = 0 ] || t_done test_console_live_tmux

# cfg FILE N [drain]
cfg() { t_shards_cfg "$1" "$2" "$XP" "${3:-}"; }
F=$T/live.yaml C3=$T/c3.yaml
cfg "$F" 2
cfg "$C3" 3
c_init
numbered() { printf '{"n": %d}\n' "$1"; }
c_put 100 numbered

wait_for() {
	n=0
	while [ $n -lt $((${2:-15} * 10)) ]; do
		PANE=$($TM capture-pane -p -t "$S" 2>/dev/null)
		# a long message wraps over the rows above: read it as one line
		flat=$(printf '%s\n' "$PANE" | tr '\n' ' ' | tr -s ' ')
		case $flat in *"$1"*) return 0 ;; esac
		sleep 0.1
		n=$((n + 1))
	done
	return 1
}
check() { # TEXT DESC [SECS]
	if wait_for "$1" "${3:-15}"; then t_ok "$2"; else t_fail "$2" "expected on screen: $1" "$PANE"; fi
}
check_re() { # ERE DESC
	n=0
	while [ $n -lt 150 ]; do
		PANE=$($TM capture-pane -p -t "$S" 2>/dev/null)
		printf '%s\n' "$PANE" | grep -Eq "$1" && { t_ok "$2"; return 0; }
		sleep 0.1
		n=$((n + 1))
	done
	t_fail "$2" "expected a line matching: $1" "$PANE"
}

$TM new-session -d -x 80 -y 24 -s "$S" \
	"env LANG=C.UTF-8 TZ=UTC '$BIN' -c '$F' --refresh 1; sleep 30" || t_fail "tmux session started"
check "2 shards" "tmux: the console on two shards"
$TM send-keys -t "$S" 8
check "buckets are spread" "tmux: the topology screen"
check_re "^map +\[[01]+\] 0=s0 1=s1" "tmux: the bucket map drawn, shard by shard"

# a shard added the README's way: the file, then init
cfg "$F" 3
check "not reloaded" "tmux: s2 before init: the file is refused" 20
t_exit 0 "init adds s2" -- "$BAGSTORE" -c "$C3" init
touch "$F"
check "3 shards" "tmux: after init the console takes the file" 20
check_re "^s2 .* 0/[0-9]+ .*new: owns nothing yet" "tmux: s2 on the topology, owning nothing"
check_re "^map +\[[01]+\] 0=s0 1=s1 2=s2" "tmux: the map's legend names s2"
check "the configuration asks for 2 moves" "tmux: the plan moves buckets to s2"

# recorded from the command line, with no cleaner running
t_exit 0 "reshard start from the command line" -- "$BAGSTORE" -c "$C3" reshard start --yes
check_re "^s0>s2 +\[ *#+ *\] [0-9]+ buckets" "tmux: a bar of the buckets s0 -> s2 moves"
check_re "^s1>s2 +\[ *#+ *\] [0-9]+ buckets" "tmux: a bar of the buckets s1 -> s2 moves"
check "no cleaner runs them" "tmux: the moves wait for a cleaner, and it says so"
t_exit 0 "a cleaner runs the moves" -- "$BAGSTORE" -c "$C3" cleaner --reshard
check "reshard: done" "tmux: the moves done" 20
check_re "^map +\[[012]*2[012]*\]" "tmux: the map shows s2's buckets"
check_re "^s2 .* 136[56]/4096" "tmux: s2 owns its share"

# the file drains s2
cfg "$F" 3 drain
check "s2 drain: true" "tmux: the drain read from the file" 20
check_re "^s2 .*-> 0 .*draining" "tmux: s2 draining, its share 0"
check "the configuration asks for 2 moves" "tmux: the drain's moves"
$TM send-keys -t "$S" Q
# the session's command goes on to `sleep` once the console has left
n=0
cmd=""
while [ $n -lt 100 ]; do
	cmd=$($TM list-panes -t "$S" -F '#{pane_current_command}' 2>/dev/null | head -1)
	[ "$cmd" = sleep ] && break
	sleep 0.1
	n=$((n + 1))
done
t_eq "$cmd" "sleep" "tmux: Q quits"
t_done test_console_live_tmux

#!/bin/sh
# test_console_tmux.sh - the real program on a real terminal: the console in
# a tmux session 120x40, driven with send-keys and read with capture-pane:
# the first screen, switching screens, 2 then Esc keeping the console open,
# the breadcrumb after drilling in, help, the command line, a window
# resize, UTF-8, and quitting with Q and with :q.
. tests/lib.sh
T=$(t_tmp)
CFG=$BAGSTORE_TEST_CONFIG

if ! command -v tmux >/dev/null 2>&1; then
	# scripts/deps.sh installs tmux: its absence is a broken setup, not a pass
	t_fail "tmux is installed (scripts/deps.sh)"
	t_done test_console_tmux
fi
t_exit 0 "init" -- "$BAGSTORE" -c "$CFG" init
printf '{"title": "café ☕ %d"}\n' 1 2 3 >"$T/e.jsonl"
t_exit 0 "put 3 entities" -- "$BAGSTORE" -c "$CFG" put "$T/e.jsonl"
# the screens below drill into s0: random ids may all land on s1 (one run
# in eight with three), so put more until s0 holds one
n=4
while [ "$(t_sql 0 'SELECT COUNT(*) FROM entities')" = 0 ] && [ $n -lt 40 ]; do
	printf '{"title": "café ☕ %d"}\n' $n | "$BAGSTORE" -c "$CFG" put - >/dev/null
	n=$((n + 1))
done
t_match "$(t_sql 0 "SELECT COUNT(*) FROM entities")" "^[1-9]" "s0 holds an entity"

S="bagstore-console-$$"
TM="tmux -L $S"
cleanup() { $TM kill-server >/dev/null 2>&1; }
trap cleanup EXIT

# wait_for TEXT [SECS]: until the pane shows TEXT; the pane in $PANE
wait_for() {
	n=0
	while [ $n -lt $((${2:-10} * 10)) ]; do
		PANE=$($TM capture-pane -p -t "$S" 2>/dev/null)
		case $PANE in *"$1"*) return 0 ;; esac
		sleep 0.1
		n=$((n + 1))
	done
	return 1
}
check() { # TEXT DESC
	if wait_for "$1" 10; then t_ok "$2"; else t_fail "$2" "expected on screen: $1" "$PANE"; fi
}

$TM new-session -d -x 120 -y 40 -s "$S" \
	"env LANG=C.UTF-8 TZ=UTC '$BAGSTORE' -c '$CFG' --refresh 1; sleep 30" ||
	t_fail "tmux session started"
check "TOTAL  2 shards" "tmux: the shards screen with its totals"
check "[1 shards]" "tmux: the title bar"
$TM send-keys -t "$S" 2
check "[2 indexes]" "tmux: 2 switches to indexes"
$TM send-keys -t "$S" Escape
check "indexes is a top screen: :q, Q or Ctrl-C quits" "tmux: 2 then Esc says how to quit"
check "[2 indexes]" "tmux: 2 then Esc keeps the console open"
$TM send-keys -t "$S" 1
check "[1 shards]" "tmux: back to the shards"
$TM send-keys -t "$S" Enter
check "shards > s0 > entities" "tmux: a breadcrumb after drilling into a shard"
# Enter on the list before its rows arrive opens nothing: wait for one
check "café ☕" "tmux: s0's entities listed"
$TM send-keys -t "$S" Enter
if wait_for "decoded:" 10 && printf '%s\n' "$PANE" | grep -Eq "shards > s0 > entities > [0-9a-f]{8}"; then
	t_ok "tmux: the breadcrumb goes on to the entity"
else
	t_fail "tmux: the breadcrumb goes on to the entity" "$PANE"
fi
$TM send-keys -t "$S" Escape Escape
check "Shards  (as of" "tmux: Esc twice: back to the shards"
$TM send-keys -t "$S" 5
check "café ☕" "tmux: entities, UTF-8 drawn"
$TM send-keys -t "$S" '?'
check "Keys of the entities screen:" "tmux: help for the screen"
$TM send-keys -t "$S" q
$TM send-keys -t "$S" : c l e Enter
check "[3 cleaner]" "tmux: :cl switches to the cleaner"
$TM resize-window -t "$S" -x 100 -y 30 2>/dev/null
check "WATERMARK" "tmux: redrawn after a resize"
lines=$($TM capture-pane -p -t "$S" | wc -l | tr -d ' ')
t_eq "$lines" 30 "tmux: the pane is 30 lines after resize"
$TM send-keys -t "$S" Q
# the session's command goes on to `sleep` once the console has left
n=0
cmd=""
while [ $n -lt 50 ]; do
	cmd=$($TM list-panes -t "$S" -F '#{pane_current_command}' 2>/dev/null)
	[ "$cmd" = sleep ] && break
	sleep 0.1
	n=$((n + 1))
done
t_eq "$cmd" sleep "tmux: Q quits the console"

# :q quits too (no backfill runs: without asking). The new session starts
# before the old one is killed: killing a server's last session makes it
# exit, and a session started meanwhile met the exiting server ("server
# exited unexpectedly", one CI run)
S2="$S-again"
$TM new-session -d -x 120 -y 40 -s "$S2" \
	"env LANG=C.UTF-8 TZ=UTC '$BAGSTORE' -c '$CFG' --refresh 1; sleep 30" ||
	t_fail "tmux session started again"
$TM kill-session -t "$S" 2>/dev/null
S=$S2
check "TOTAL  2 shards" "tmux: the console again"
$TM send-keys -t "$S" : q Enter
n=0
cmd=""
while [ $n -lt 50 ]; do
	cmd=$($TM list-panes -t "$S" -F '#{pane_current_command}' 2>/dev/null)
	[ "$cmd" = sleep ] && break
	sleep 0.1
	n=$((n + 1))
done
t_eq "$cmd" sleep "tmux: :q quits the console"
t_done test_console_tmux

#!/bin/sh
# test_console_hung.sh - with one shard's mariadbd stopped (SIGSTOP), the
# console keeps answering keys (measured), marks the shard unreachable with
# MySQL's message, marks stale data, and the other shard stays browsable.
. tests/console/lib.sh

c_init
post() { printf '{"title": "post %d"}\n' "$1"; }
c_put 40 post

t_exit 0 "pause s1" -- sh "$SHARDS_SH" pause s1 --dir "$SHARDS_DIR"
T_TIMEOUT=120 c_headless "headless run with s1 hung" tests/console/hung.keys --timeout 2
sh "$SHARDS_SH" resume s1 --dir "$SHARDS_DIR" >/dev/null 2>&1

t_contains "$(d start)" "[1 shards]" "the first screen draws at once"
t_contains "$(d help)" "help: shards" "keys are answered while a shard hangs"
ms=$(printf '%s\n' "$T_OUT" | sed -n 's/^measure-ui keys_while_hung: .* max=\([0-9.]*\)ms$/\1/p')
case $ms in
'') t_fail "a key's redraw was measured" "$T_OUT" ;;
*)
	if awk -v m="$ms" 'BEGIN { exit !(m < 100) }'; then
		t_ok "every key redrawn within 100 ms while s1 hangs (max ${ms} ms)"
	else
		t_fail "every key redrawn within 100 ms while s1 hangs" "max ${ms} ms"
	fi ;;
esac
t_contains "$(d shards)" "s1     127.0.0.1:" "s1 listed"
t_contains "$(d shards)" "unreachable" "s1 marked unreachable"
t_contains "$(d shards)" "s1 unreachable: " "MySQL's message shown"
t_contains "$(d shards)" "1/2 up" "totals count one shard up"
t_contains "$(d stale)" "(waiting on shards)" "data waiting on a hung shard is marked stale"
s0line=$(d shards | grep '^s0 ')
t_contains "$s0line" "up" "s0 still up"
t_contains "$(d entities_s0)" "newest first, s0: page 1" "s0 browsable while s1 hangs"
t_contains "$(d entities_s0)" 'title="post' "s0's entities shown"
t_contains "$(d entity_s0)" 'title: "post' "an entity of s0 opens"
t_done test_console_hung

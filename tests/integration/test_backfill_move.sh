#!/bin/sh
# test_backfill_move.sh - an index created while a reshard's move copies
# (2 -> 3 shards; the third is the test's own, shard 0's port + 2, under
# t_servers bfmove, stopped at the end), with the daemon running and the
# moves slowed (BAGSTORE_FAULT=slow_move). Backfills and moves take turns:
# each shard's job waits for the move before it starts, so that the last
# entity it reads (fixed when it starts) counts the rows the move copies
# to its shard, and its rows go where the map the move leaves says. Once
# the move is done and the index ready, verify finds every entity's row
# (no index existed before, so the repair loop does not reach back over
# the copied entities, whose versions are older than the index).
. tests/lib.sh
T=$(t_tmp)
B=$BAGSTORE
BR=${BUILD:-build}/bench/bench_reshard
P0=$(t_port 0)
XP=${BAGSTORE_BFMOVE_PORT:-$((P0 + 2))}
T_TIMEOUT=240
N=30000

stop_all() {
	[ -n "${dpid:-}" ] && kill -TERM "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null
	t_extra_stop bfmove
}
trap stop_all EXIT
trap 'stop_all; exit 130' INT TERM

t_exit 0 "a third shard" -- t_extra_shard bfmove "$XP"
[ "$T_FAILED" = 0 ] || t_done test_backfill_move
C2=$T/c2.yaml C3=$T/c3.yaml
for n in 2 3; do
	t_shards_cfg "$T/c$n.yaml" "$n" "$XP"
	echo "cleaner: {repair_interval: 0.2}" >>"$T/c$n.yaml"
done

t_exit 0 "init 2 shards" -- "$B" -c "$C2" init
t_exit 0 "load $N entities, no index" -- "$BR" load "$C2" "$N" 11 "$T/load.state"
t_exit 0 "init 3 shards" -- "$B" -c "$C3" init

BAGSTORE_FAULT=slow_move "$B" -c "$C3" cleaner >"$T/d.out" 2>"$T/d.err" &
dpid=$!
t_exit 0 "reshard start --yes" -- "$B" -c "$C3" reshard start --yes

# moves: "PHASE ROWS_COPIED" a line, from reshard status --json
moves() {
	"$B" -c "$C3" reshard status --json 2>/dev/null | python3 -c '
import json, sys
for m in json.load(sys.stdin).get("moves", []):
    print(m["phase"], m["rows_copied"])'
}
copying() { moves | awk '$1 == "copy" && $2 > 0 { f = 1 } END { exit !f }'; }
if t_wait 60 copying; then t_ok "a move copies"; else t_fail "a move copies" "$(moves; tail -5 "$T/d.err")"; fi
t_exit 0 "index create by_user while it copies" -- "$B" -c "$C3" index create by_user --on user:uuid --shard-on user
moves >"$T/moves.after-create"
t_match "$(cat "$T/moves.after-create")" '^copy ' "a move was still copying when the index was made"

# the jobs wait for the move, saying so
waiting() { "$B" -c "$C3" backfill list 2>/dev/null | grep -q 'a reshard is moving buckets'; }
if t_wait 30 waiting; then t_ok "the backfill waits: a reshard is moving buckets"; else
	t_fail "the backfill says it waits for the move" "$("$B" -c "$C3" backfill list 2>&1 | tail -5)"
fi

reshard_done() { "$B" -c "$C3" reshard status --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if d["moves"] and all(m["phase"] == "done" for m in d["moves"]) else 1)'; }
if t_wait 200 reshard_done; then t_ok "the reshard is done"; else t_fail "the reshard is done" "$(moves)"; fi
ready() { "$B" -c "$C3" index list --json 2>/dev/null | python3 -c '
import json, sys
sys.exit(0 if any(i["name"] == "by_user" and i["state"] == "ready" for i in json.load(sys.stdin)) else 1)'; }
if t_wait 120 ready; then t_ok "by_user is ready"; else
	t_fail "by_user is ready" "$("$B" -c "$C3" backfill list 2>&1 | tail -5; tail -5 "$T/d.err")"
fi
kill -TERM "$dpid"
wait "$dpid"
t_eq "$?" 0 "the daemon stops cleanly"
dpid=""
# the daemon's log: each job said it waited, once, and that it went on
# (each pass's attempt ended as a wait and said so again before)
on=$(grep -c 'throttle_on: backfill of by_user' "$T/d.err")
off=$(grep -c 'throttle_off: backfill of by_user' "$T/d.err")
if [ "$on" -ge 3 ] && [ "$on" -le 6 ] && [ "$on" = "$off" ]; then t_ok "the log says each wait once, and its end ($on and $off)"; else
	t_fail "the log says each wait once, and its end" "throttle_on $on, throttle_off $off"
fi

t_exit 0 "verify: every entity's row, none stale or orphaned" -- "$B" -c "$C3" verify --index by_user
rows=0 ents=0
for p in $(t_port 0) $(t_port 1) "$XP"; do
	r=$(mariadb -N -h 127.0.0.1 -P "$p" -u root bagstore -e "SELECT COUNT(*) FROM by_user" 2>/dev/null)
	e=$(mariadb -N -h 127.0.0.1 -P "$p" -u root bagstore -e "SELECT COUNT(*) FROM entities" 2>/dev/null)
	rows=$((rows + ${r:-0}))
	ents=$((ents + ${e:-0}))
done
t_eq "$ents" "$N" "the $N entities, each on one shard"
t_eq "$rows" "$N" "one index row an entity, over the three shards"

t_done test_backfill_move

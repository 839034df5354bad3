#!/bin/sh
# test_reshard_liveness.sh - a move or a job whose row has not been
# checkpointed for a while is judged by its worker's beat in the registry
# (bagstore_workers), which a live worker's heartbeat threads write every
# second whatever its job waits for: "gone?" only when that beat is old or
# missing (issue 19, item 2). And a reshard recorded while no cleaner runs
# says so, as queued backfills do (item 4): `reshard start`, `reshard
# status` and the console's topology screen.
#
# The worker here is a registry row and a move row written by SQL (a
# worker on host testvm, pid 4242): what a mover held up between two
# checkpoints leaves behind, without waiting a minute for it.
. tests/console/lib.sh

P0=$(t_port 0)
P1=$(t_port 1)
DR=$T/drain.yaml
{
	echo "shards:"
	echo "  - {name: s0, host: 127.0.0.1, port: $P0, database: bagstore, user: root}"
	echo "  - {name: s1, host: 127.0.0.1, port: $P1, database: bagstore, user: root, drain: true}"
	echo "catalog_ttl: 1"
} >"$DR"

c_init
numbered() { printf '{"n": %d}\n' "$1"; }
c_put 50 numbered

# ------------------------------------------------------------ item 4: nothing runs the moves
t_exit 0 "reshard start with no cleaner running" -- "$BAGSTORE" -c "$DR" reshard start --yes
t_contains "$T_OUT" "recorded 1 moves" "the drain's move is recorded"
t_contains "$T_OUT" "1 move queued and no cleaner daemon is running" "start: says nothing runs it"
t_contains "$T_OUT" "bagstore cleaner --reshard" "start: says how to run it"
t_exit 0 "reshard status" -- "$BAGSTORE" -c "$DR" reshard status
t_contains "$T_OUT" "reshard: running" "the plan says running"
t_contains "$T_OUT" "1 move queued and no cleaner daemon is running" "status: says nothing runs it"
t_exit 0 "reshard status --json" -- "$BAGSTORE" -c "$DR" reshard status --json
t_contains "$T_ERR" "no cleaner daemon is running" "status --json: the note on stderr"
printf 'keys 8\nwait-for reshard: running\nwait-idle\nkey R\nwait-for no cleaner runs them\ndump noclean\nkeys :q\n' >"$T/noclean.keys"
c_headless "headless: the topology with nothing to run the moves" "$T/noclean.keys" -c "$DR"
t_contains "$(d noclean)" "1 move queued; no cleaner runs them" "console: says nothing runs the move"

# a live cleaner in the registry (its beat ahead of now: alive for the test)
for s in 0 1; do
	t_sql $s "INSERT INTO bagstore_workers (worker_id, kind, host, pid, version, started_us, heartbeat)
	          VALUES ('testvm:4242', 'cleaner', 'testvm', 4242, 'test', 0, NOW(6) + INTERVAL 10 MINUTE)" >/dev/null
done
t_exit 0 "reshard status with a cleaner alive" -- "$BAGSTORE" -c "$DR" reshard status
case $T_OUT in
*"no cleaner daemon"*) t_fail "no note while a cleaner is alive" "$T_OUT" ;;
*) t_ok "no note while a cleaner is alive" ;;
esac

# ------------------------------------------------------------ item 2: quiet, not gone
# the move runs in that worker and its last checkpoint is 52 s old
t_sql 1 "UPDATE bagstore_moves SET state='running', reason='', worker_host='testvm', worker_pid=4242,
         heartbeat=NOW(6) - INTERVAL 52 SECOND" >/dev/null
t_exit 0 "reshard status: a quiet move, its worker beating" -- "$BAGSTORE" -c "$DR" reshard status
t_contains "$T_OUT" "worker testvm:4242 is alive" "a quiet move of a live worker says it is alive"
case $T_OUT in
*"gone?"*) t_fail "a live worker never looks gone" "$T_OUT" ;;
*) t_ok "a live worker never looks gone" ;;
esac
printf 'keys 8\nwait-for s1 -> s0\nwait-idle\nkey R\nwait-for is alive\ndump alive\nkeys :q\n' >"$T/alive.keys"
c_headless "headless: the topology with a quiet move" "$T/alive.keys" -c "$DR"
t_contains "$(d alive)" "worker testvm:4242 is alive" "console: the quiet move's worker is alive"
c_lacks alive "gone?" "console: a live worker never looks gone"

# the same for a backfill job
t_exit 0 "an index to backfill" -- "$BAGSTORE" -c "$DR" index create by_n --on n:int --shard-on n
t_sql 0 "UPDATE bagstore_jobs SET state='running', reason='', worker_host='testvm', worker_pid=4242,
         heartbeat=NOW(6) - INTERVAL 52 SECOND" >/dev/null
t_exit 0 "backfill list: a quiet job, its worker beating" -- "$BAGSTORE" -c "$DR" backfill list
t_contains "$T_OUT" "worker testvm:4242 is alive" "a quiet job of a live worker says it is alive"

# the worker stops beating: now it may be gone (the move's checkpoint
# stamped 52 s old again: the steps above took their own time)
for s in 0 1; do
	t_sql $s "UPDATE bagstore_workers SET heartbeat=NOW(6) - INTERVAL 1 MINUTE WHERE worker_id='testvm:4242'" >/dev/null
done
t_sql 1 "UPDATE bagstore_moves SET heartbeat=NOW(6) - INTERVAL 52 SECOND WHERE worker_pid=4242" >/dev/null
t_exit 0 "reshard status: the worker's beat is old" -- "$BAGSTORE" -c "$DR" reshard status
t_match "$T_OUT" "no heartbeat for 5[0-9] s: worker testvm:4242 gone\\?" "a worker silent in the registry too: gone?"
t_exit 0 "backfill list: the worker's beat is old" -- "$BAGSTORE" -c "$DR" backfill list
t_contains "$T_OUT" "worker testvm:4242 gone?" "a job's worker silent in the registry: gone?"
t_done test_reshard_liveness

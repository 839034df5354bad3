#!/bin/sh
# test_service_stop_twice.sh - a second SIGTERM (or SIGINT) while the
# cleaner is stopping makes it exit at once, status 1, with a log line that
# says so (systemd's and most daemons' convention: the first is graceful,
# the second immediate), and the job it held is taken over by the next
# cleaner from its checkpoint, never left claimed:
#
#  1. the daemon mid-backfill with s0 hung (SIGSTOP) and a 30 s read
#     timeout: the first SIGTERM's stop waits for the chunk in hand, the
#     second ends it; after s0 resumes, `cleaner --index` finishes the job
#     and verify finds the index whole;
#  2. the daemon after its engine loop ended, while it leaves the worker
#     registry with s0 hung: svc's thread used to be joined first, so a
#     second SIGTERM there was never read (found in review);
#  3. `cleaner --index` (the one-shot command, its own signal handler)
#     mid-backfill with s0 hung: SIGINT twice.
# The bounds are generous (seconds against a 30 s read timeout); nothing is
# timed beyond "it ended, and the first one alone did not end it".
. tests/lib.sh

B=$BAGSTORE
T=$(t_tmp)
N=20000
CFG=$T/twice.yaml
grep -v '^timeouts:' "$BAGSTORE_TEST_CONFIG" >"$CFG"
echo "timeouts: {connect: 2, read: 30, write: 30}" >>"$CFG"
echo "cleaner: {chunk_time: 0.05, repair_interval: 0.1}" >>"$CFG"

exited() { ! kill -0 "$1" 2>/dev/null || grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null; }
pause_s0() { sh "$SHARDS_SH" pause s0 --dir "$SHARDS_DIR" >/dev/null 2>&1; }
resume_s0() { sh "$SHARDS_SH" resume s0 --dir "$SHARDS_DIR" >/dev/null 2>&1; }
# rows_scanned of the index's job on both shards, summed
scanned() { echo $(($(t_sql 0 "SELECT COALESCE(SUM(rows_scanned),0) FROM bagstore_jobs WHERE index_name='$1'") + \
	$(t_sql 1 "SELECT COALESCE(SUM(rows_scanned),0) FROM bagstore_jobs WHERE index_name='$1'"))); }
under_way() { [ "$(scanned "$1")" -gt 0 ]; }
ready() { [ "$(t_sql 0 "SELECT state FROM bagstore_indexes WHERE name='$1'")" = ready ]; }

t_exit 0 "init" -- "$B" -c "$CFG" init
awk -v n=$N 'BEGIN { for (k = 1; k <= n; k++) printf("{\"n\":%d}\n", k) }' >"$T/ents.jsonl"
t_exit 0 "put $N entities" -- "$B" -c "$CFG" put "$T/ents.jsonl"

# ------------------------------------------------------------ 1. mid-backfill

t_exit 0 "index create by_n" -- "$B" -c "$CFG" index create by_n --on n:int --shard-on n
BAGSTORE_FAULT=slow_chunk "$B" -c "$CFG" cleaner >"$T/a.out" 2>"$T/a.err" &
a=$!
# s0's own job claimed too before s0 hangs (under a loaded machine s1's
# could be under way while s0's was still queued, and nothing held it)
s0_claimed() { [ "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_jobs WHERE index_name='by_n' AND state IN ('running','throttled')")" = 1 ]; }
both_under_way() { under_way by_n && s0_claimed; }
if t_wait 30 both_under_way; then t_ok "the daemon backfills by_n"; else t_fail "the daemon backfills by_n" "$(tail -5 "$T/a.err")"; fi
pause_s0
sleep 1
kill -TERM $a
sleep 4
if exited $a; then
	t_fail "the first SIGTERM waits for the chunk on the hung shard" "$(tail -5 "$T/a.err")"
else
	t_ok "the first SIGTERM waits for the chunk on the hung shard"
fi
t_contains "$(cat "$T/a.err")" "SIGTERM: stopping" "the first SIGTERM is logged"
kill -TERM $a
if t_wait 5 exited $a; then
	t_ok "a second SIGTERM ends it at once"
else
	t_fail "a second SIGTERM ends it at once" "$(tail -5 "$T/a.err")"
	kill -KILL $a 2>/dev/null
fi
wait $a
t_eq "$?" 1 "it exits 1"
t_contains "$(cat "$T/a.err")" "SIGTERM again: exiting at once, status 1 (the jobs in hand go back to any cleaner" \
	"its log says so, with the status"
resume_s0
# the job rows it held still say running, under its pid: taken over below
held=$(($(t_sql 0 "SELECT COUNT(*) FROM bagstore_jobs WHERE index_name='by_n' AND state IN ('running','throttled')") + \
	$(t_sql 1 "SELECT COUNT(*) FROM bagstore_jobs WHERE index_name='by_n' AND state IN ('running','throttled')")))
t_match "$held" '^[12]$' "the killed stop left its job rows claimed (running)"
before=$(scanned by_n)
T_TIMEOUT=120 t_exit 0 "cleaner --index by_n takes the jobs over and finishes" -- "$B" -c "$CFG" cleaner --index by_n
t_contains "$T_OUT" "index by_n is ready" "by_n is ready"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_jobs WHERE index_name='by_n' AND state<>'done'")$(t_sql 1 "SELECT COUNT(*) FROM bagstore_jobs WHERE index_name='by_n' AND state<>'done'")" 00 \
	"no job row is left claimed: both are done"
t_exit 0 "verify --index by_n: the index is whole" -- "$B" -c "$CFG" verify --index by_n
[ "$before" -gt 0 ] && t_ok "the jobs had a checkpoint to resume from ($before rows scanned)"

# ------------------------------------------------------------ 2. after the loop

# This daemon's reads and writes time out in 10 s, not 30: its loop, stuck
# on hung s0, ends within that (the wait below), and the registry's leave
# that follows would take as long again without the second SIGTERM, twice
# the 5 s that one is given
CFG10=$T/twice10.yaml
sed 's/^timeouts:.*/timeouts: {connect: 2, read: 10, write: 10}/' "$CFG" >"$CFG10"
"$B" -c "$CFG10" cleaner >"$T/b.out" 2>"$T/b.err" &
b=$!
started() { grep -q "cleaner started" "$T/b.err"; }
if t_wait 30 started; then t_ok "a second daemon starts"; else t_fail "a second daemon starts" "$(cat "$T/b.err")"; fi
sleep 2
pause_s0
sleep 1
kill -TERM $b
loop_ended() { grep -q "the engine's loop ended" "$T/b.err"; }
if t_wait 120 loop_ended; then
	t_ok "its loop ends (s0 hung), then it leaves the registry"
else
	t_fail "its loop ends (s0 hung), then it leaves the registry" "$(tail -5 "$T/b.err")"
fi
kill -TERM $b
if t_wait 5 exited $b; then
	t_ok "a second SIGTERM while it leaves the registry ends it at once"
else
	t_fail "a second SIGTERM while it leaves the registry ends it at once" "$(tail -5 "$T/b.err")"
	kill -KILL $b 2>/dev/null
fi
wait $b
t_eq "$?" 1 "it exits 1"
t_contains "$(cat "$T/b.err")" "SIGTERM again: exiting at once, status 1" "its log says so"
resume_s0

# ------------------------------------------------------------ 3. cleaner --index

t_exit 0 "index create by_m" -- "$B" -c "$CFG" index create by_m --on n:int --shard-on n
BAGSTORE_FAULT=slow_chunk "$B" -c "$CFG" cleaner --index by_m >"$T/c.out" 2>"$T/c.err" &
c=$!
if t_wait 30 under_way by_m; then t_ok "cleaner --index backfills by_m"; else t_fail "cleaner --index backfills by_m" "$(tail -5 "$T/c.err")"; fi
pause_s0
sleep 1
kill -INT $c
sleep 4
if exited $c; then t_fail "the first SIGINT waits for the chunk on the hung shard"; else t_ok "the first SIGINT waits for the chunk on the hung shard"; fi
kill -INT $c
if t_wait 5 exited $c; then
	t_ok "a second SIGINT ends cleaner --index at once"
else
	t_fail "a second SIGINT ends cleaner --index at once" "$(tail -5 "$T/c.err")"
	kill -KILL $c 2>/dev/null
fi
wait $c
t_eq "$?" 1 "it exits 1"
t_contains "$(cat "$T/c.err")" "stop signal again: exiting at once, status 1" "it says so"
resume_s0
T_TIMEOUT=120 t_exit 0 "cleaner --index by_m takes it over and finishes" -- "$B" -c "$CFG" cleaner --index by_m
t_exit 0 "verify --index by_m" -- "$B" -c "$CFG" verify --index by_m

resume_s0
kill -KILL $a $b $c 2>/dev/null
t_done

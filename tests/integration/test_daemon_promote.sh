#!/bin/sh
# test_daemon_promote.sh - the daemon's loop goes on while an index is
# promoted (issue 19, item 2: a daemon went silent for ~30 s right after its
# last backfill job finished): the promotion (repair rounds since the
# index's creation and a sweep of the whole index, as long as the index is
# big) runs on the backfill's own thread, with a store of its own, so the
# loop's passes (`loop` events on /metrics) go on meanwhile. The fault
# point slow_promote makes the promotion take 6 s.
#
# And SIGTERM during a promotion stops it (the daemon joins its background
# threads before it exits, and a big index's promotion outlasts systemd's
# stop timeout): the index stays building with its jobs done, and the next
# run of the cleaner promotes it.
. tests/lib.sh
T=$(t_tmp)
CFG=$BAGSTORE_TEST_CONFIG
MP=$(( $(t_port 0) + 20 ))

cp "$CFG" "$T/d.yaml"
t_exit 0 "init" -- "$BAGSTORE" -c "$T/d.yaml" init
i=0
while [ $i -lt 200 ]; do printf '{"n": %d}\n' $i; i=$((i + 1)); done >"$T/e.jsonl"
t_exit 0 "put 200 entities" -- "$BAGSTORE" -c "$T/d.yaml" put "$T/e.jsonl"

BAGSTORE_FAULT=slow_promote "$BAGSTORE" -c "$T/d.yaml" cleaner --metrics "127.0.0.1:$MP" >"$T/d.out" 2>"$T/d.err" &
daemon=$!
stop_daemon() { kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null; }
trap stop_daemon EXIT
loops() {
	curl -s --max-time 2 "http://127.0.0.1:$MP/metrics" |
		sed -n 's/^bagstore_events_total{event="loop"} \([0-9.]*\).*/\1/p' | cut -d. -f1
}
n=0
until [ -n "$(loops)" ] || [ $n -ge 100 ]; do sleep 0.1; n=$((n + 1)); done
t_match "$(loops)" "^[0-9]+$" "the daemon serves /metrics"

t_exit 0 "an index to build" -- "$BAGSTORE" -c "$T/d.yaml" index create by_n --on n:int --shard-on n
done_jobs() { echo $(( $(t_sql 0 "SELECT COUNT(*) FROM bagstore_jobs WHERE index_name='by_n' AND state='done'") +
                        $(t_sql 1 "SELECT COUNT(*) FROM bagstore_jobs WHERE index_name='by_n' AND state='done'") )); }
n=0
until [ "$(done_jobs)" = 2 ] || [ $n -ge 300 ]; do sleep 0.1; n=$((n + 1)); done
t_eq "$(done_jobs)" 2 "the backfill's jobs are done"
l1=$(loops)
sleep 2.5
l2=$(loops)
t_eq "$(t_sql 0 "SELECT state FROM bagstore_indexes WHERE name='by_n'")" building \
	"the index is being promoted (slow_promote: 6 s)"
if [ -n "$l1" ] && [ -n "$l2" ] && [ "$l2" -gt "$l1" ]; then
	t_ok "the loop goes on during the promotion ($l1 -> $l2 passes)"
else
	t_fail "the loop goes on during the promotion" "loop events $l1 -> $l2 over 2.5 s" "$(tail -5 "$T/d.err")"
fi
n=0
until [ "$(t_sql 0 "SELECT state FROM bagstore_indexes WHERE name='by_n'")" = ready ] || [ $n -ge 200 ]; do
	sleep 0.1
	n=$((n + 1))
done
t_eq "$(t_sql 0 "SELECT state FROM bagstore_indexes WHERE name='by_n'")" ready "then the index is ready"
stop_daemon
t_contains "$(cat "$T/d.err")" "index by_n is ready" "the daemon says so"
t_exit 0 "verify" -- "$BAGSTORE" -c "$T/d.yaml" verify

# ------------------------------------------------------------ SIGTERM while promoting
t_exit 0 "a second index, built by the next daemon" -- "$BAGSTORE" -c "$T/d.yaml" index create by_n2 --on n:int --shard-on n
BAGSTORE_FAULT=slow_promote "$BAGSTORE" -c "$T/d.yaml" cleaner >"$T/d2.out" 2>"$T/d2.err" &
daemon=$!
done_jobs2() { echo $(( $(t_sql 0 "SELECT COUNT(*) FROM bagstore_jobs WHERE index_name='by_n2' AND state='done'") +
                         $(t_sql 1 "SELECT COUNT(*) FROM bagstore_jobs WHERE index_name='by_n2' AND state='done'") )); }
n=0
until [ "$(done_jobs2)" = 2 ] || [ $n -ge 300 ]; do sleep 0.1; n=$((n + 1)); done
t_eq "$(done_jobs2)" 2 "by_n2: the backfill's jobs are done"
sleep 1 # into slow_promote's 6 s
t0=$(date +%s%N)
kill -TERM "$daemon"
wait "$daemon"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
echo "measured: SIGTERM during a promotion: the daemon exited in $ms ms"
t_eq "$rc" 0 "SIGTERM during a promotion: the daemon exits 0"
if [ "$ms" -lt 2500 ]; then t_ok "within 2.5 s ($ms ms): the promotion stops with it"; else t_fail "SIGTERM stops a promotion" "$ms ms"; fi
t_eq "$(t_sql 0 "SELECT state FROM bagstore_indexes WHERE name='by_n2'")" building "the index is not ready yet"
t_eq "$(t_sql 1 "SELECT state FROM bagstore_indexes WHERE name='by_n2'")" building "on either shard"
t_eq "$(done_jobs2)" 2 "its jobs stay done"
case $(cat "$T/d2.err") in *"by_n2 is ready"*) t_fail "the daemon did not say by_n2 is ready" ;; *) t_ok "and the daemon did not say it was" ;; esac
t_exit 0 "the next cleaner run" -- "$BAGSTORE" -c "$T/d.yaml" cleaner --once
t_eq "$(t_sql 0 "SELECT state FROM bagstore_indexes WHERE name='by_n2'")" ready "promotes it"
t_eq "$(t_sql 1 "SELECT state FROM bagstore_indexes WHERE name='by_n2'")" ready "on both shards"
t_exit 0 "verify" -- "$BAGSTORE" -c "$T/d.yaml" verify
t_exit 0 "a query through it" -- "$BAGSTORE" -c "$T/d.yaml" query by_n2 "n=7"
t_match "$T_OUT" '"n": ?7[,}]' "finds the entity"
t_done test_daemon_promote

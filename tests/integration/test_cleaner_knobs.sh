#!/bin/sh
# test_cleaner_knobs.sh - each cleaner setting has the effect it promises,
# seen in what the shards hold (job rows, index rows, watermarks):
#
#   sleep_coef      a backfill under sleep_coef 4 has scanned under half of
#                   what the same backfill without it scanned, both run at
#                   once, when the one without it is done;
#   critical_load   with the shards busier than it (SELECT SLEEP on every
#                   shard), a backfill stops: its job failed, saying why;
#   max_load        busier than it, the job is throttled, naming the
#                   signal; once the load is gone it finishes;
#   repair_overlap  the daemon repairs an entity whose `updated` lies inside
#                   the overlap behind its watermark, not one outside it
#                   (verify finds that one, verify --repair fixes it);
#   chunk_time      the job's chunk shrinks to its minimum (100) under a
#                   tiny chunk_time and grows under a large one.
#
# Every wait polls an observable state, with a bound; nothing asserts a
# duration.
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
T=$(t_tmp)
T_TIMEOUT=120
P0=$(t_port 0)
P1=$(t_port 1)

# conf NAME YAML: the test configuration plus YAML, as $T/NAME.yaml
conf() { { cat "$C"; printf '%s\n' "$2"; } >"$T/$1.yaml"; }
job() { # INDEX COLUMN-EXPR: the expression over both shards' job rows, one line
	echo "$(t_sql 0 "SELECT $2 FROM bagstore_jobs WHERE index_name='$1'") $(t_sql 1 "SELECT $2 FROM bagstore_jobs WHERE index_name='$1'")"
}
scanned() { job "$1" rows_scanned | awk '{ print $1 + $2 }'; }
state() { t_sql 0 "SELECT state FROM bagstore_indexes WHERE name='$1'"; }
load() { # FIRST COUNT: entities k=FIRST.., each with k, m=k%13
	awk -v a="$1" -v n="$2" 'BEGIN { for (k = a; k < a + n; k++)
		printf "{\"id\":{\"$uuid\":\"%08x-0000-4000-8000-%012x\"},\"k\":%d,\"m\":%d}\n", k, k, k, k % 13 }' >"$T/load.jsonl"
	t_exit 0 "put $2 entities" -- "$B" -c "$C" put "$T/load.jsonl"
}

# busy N: N sessions running SELECT SLEEP on each shard (Threads_running
# counts them), waited for until the servers show them; idle ends them.
busy() {
	: >"$T/busy.pids"
	for p in $P0 $P1; do
		i=0
		while [ $i -lt "$1" ]; do
			mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$p" -u root -e "SELECT SLEEP(300) AS busy" >/dev/null 2>&1 &
			echo $! >>"$T/busy.pids"
			i=$((i + 1))
		done
	done
	sleeping() {
		[ "$(t_sql 0 "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(300)%'")" -ge "$1" ] &&
			[ "$(t_sql 1 "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(300)%'")" -ge "$1" ]
	}
	t_wait 20 sleeping "$1"
}
idle() {
	for s in 0 1; do
		for id in $(t_sql $s "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(300)%'"); do
			t_sql $s "KILL QUERY $id" >/dev/null 2>&1
		done
	done
	for p in $(cat "$T/busy.pids"); do wait "$p" 2>/dev/null; done
}
trap 'idle 2>/dev/null' EXIT

t_exit 0 "init" -- "$B" -c "$C" init
load 0 4000

# ------------------------------------------------------------ sleep_coef
# two backfills of the same 4,000 entities, at once, in small slow chunks
# (slow_chunk: 100 rows, 50 ms each): one paced by sleep_coef 4 (after each
# chunk, four times its duration asleep), one not
conf fast "cleaner: {sleep_coef: 0}"
conf paced "cleaner: {sleep_coef: 4}"
t_exit 0 "create ix_fast" -- "$B" -c "$C" index create ix_fast --on k:int --shard-on k
t_exit 0 "create ix_paced" -- "$B" -c "$C" index create ix_paced --on k:int --shard-on k
BAGSTORE_FAULT=slow_chunk "$B" -c "$T/paced.yaml" cleaner --index ix_paced >"$T/paced.out" 2>&1 &
paced=$!
BAGSTORE_FAULT=slow_chunk "$B" -c "$T/fast.yaml" cleaner --index ix_fast >"$T/fast.out" 2>&1 &
fast=$!
wait $fast
t_eq "$?" 0 "the backfill without sleep_coef finished"
fast_n=$(scanned ix_fast)
paced_n=$(scanned ix_paced)
t_eq "$fast_n" 4000 "it scanned all 4,000"
t_eq "$([ $((paced_n * 2)) -lt "$fast_n" ] && echo slower)" slower \
	"the one under sleep_coef 4 had scanned under half as many meanwhile ($paced_n against $fast_n)"
t_eq "$([ "$paced_n" -gt 0 ] && echo moving)" moving "but it was moving"
kill -TERM $paced
wait $paced
t_exit 0 "drop ix_paced" -- "$B" -c "$C" index drop ix_paced --yes

# ------------------------------------------------------------ critical_load
# 4 sleeping sessions a shard: Threads_running at least 5, above 3
conf crit "cleaner: {max_load: 2, critical_load: 3}"
t_exit 0 "create ix_crit" -- "$B" -c "$C" index create ix_crit --on k:int --shard-on k
busy 4
t_exit 1 "a backfill above critical_load stops" -- "$B" -c "$T/crit.yaml" cleaner --index ix_crit
t_match "$T_ERR" "backfill of ix_crit on shard s[01] stopped: shard s[01]: Threads_running [0-9]+ above critical_load 3" \
	"it says so, naming the shard and the signal"
t_contains "$T_ERR" "bagstore backfill resume ix_crit" "and how to resume"
t_match "$(job ix_crit state)" "failed" "a job is failed"
t_match "$(t_sql 0 "SELECT reason FROM bagstore_jobs WHERE index_name='ix_crit'")$(t_sql 1 "SELECT reason FROM bagstore_jobs WHERE index_name='ix_crit'")" \
	"Threads_running [0-9]+ above critical_load 3" "its reason names the signal"
t_exit 0 "backfill list" -- "$B" -c "$C" backfill list
t_match "$T_OUT" "ix_crit .*failed" "backfill list shows it failed"
t_eq "$(state ix_crit)" building "the index stays building"
idle
t_exit 0 "backfill resume ix_crit" -- "$B" -c "$C" backfill resume ix_crit
t_exit 0 "the load gone, it finishes" -- "$B" -c "$T/crit.yaml" cleaner --index ix_crit
t_eq "$(state ix_crit)" ready "ix_crit ready"

# ------------------------------------------------------------ max_load
conf maxl "cleaner: {max_load: 2, critical_load: 1000}"
t_exit 0 "create ix_maxl" -- "$B" -c "$C" index create ix_maxl --on k:int --shard-on k
busy 4
"$B" -c "$T/maxl.yaml" cleaner --index ix_maxl >"$T/maxl.out" 2>"$T/maxl.err" &
maxl=$!
throttled() { job ix_maxl "CONCAT(state,':',reason)" | grep -Eq "throttled:shard s[01]: Threads_running [0-9]+ above max_load 2"; }
if t_wait 30 throttled; then t_ok "above max_load the job is throttled, naming the signal"; else
	t_fail "above max_load the job is throttled, naming the signal" "jobs: $(job ix_maxl "CONCAT(state,':',reason)")"; fi
t_eq "$(scanned ix_maxl)" 0 "and has scanned nothing"
t_exit 0 "backfill list" -- "$B" -c "$C" backfill list
t_match "$T_OUT" "ix_maxl .*throttled" "backfill list shows it throttled"
t_contains "$T_OUT" "above max_load 2" "with the reason"
if kill -0 $maxl 2>/dev/null; then t_ok "its worker waits"; else t_fail "its worker waits" "$(cat "$T/maxl.err")"; fi
idle
wait $maxl
t_eq "$?" 0 "the load gone, the backfill finishes"
t_eq "$(state ix_maxl)" ready "ix_maxl ready"
t_eq "$(scanned ix_maxl)" 4000 "every entity scanned"

# ------------------------------------------------------------ repair_overlap
# the daemon with a 20 s overlap; x's `updated` set 10 s back (inside),
# y's 60 s back (outside), both on s0 (even ids), their rows removed by hand
conf ov "cleaner: {repair_overlap: 20, repair_interval: 0.1}"
X=00000000000000000000000000000f00
Y=00000000000000000000000000000f02
printf '{"id":{"$uuid":"%s"},"k":7,"m":1}\n{"id":{"$uuid":"%s"},"k":9,"m":1}\n' $X $Y >"$T/xy.jsonl"
t_exit 0 "put x and y" -- "$B" -c "$C" put "$T/xy.jsonl"
"$B" -c "$T/ov.yaml" cleaner >"$T/ov.out" 2>"$T/ov.err" &
ov=$!
watermark() { t_sql 0 "SELECT COALESCE(MAX(watermark_us), 0) FROM bagstore_watermarks WHERE name='repair'"; }
now_us() { t_sql 0 "SELECT CAST(UNIX_TIMESTAMP(NOW(6))*1000000 AS SIGNED)"; }
running() { [ "$(watermark)" -gt "$(($(now_us) - 3000000))" ]; }
if t_wait 30 running; then t_ok "the daemon's repair loop runs (s0's watermark is recent)"; else t_fail "the repair loop runs"; fi
plant=$(t_sql 0 "UPDATE entities SET updated=NOW(6) - INTERVAL 10 SECOND WHERE id=X'$X';
	UPDATE entities SET updated=NOW(6) - INTERVAL 60 SECOND WHERE id=X'$Y';
	SELECT CAST(UNIX_TIMESTAMP(NOW(6))*1000000 AS SIGNED)")
for s in 0 1; do t_sql $s "DELETE FROM ix_fast WHERE entity_id IN (X'$X', X'$Y')"; done
rows_of() { echo $(($(t_sql 0 "SELECT COUNT(*) FROM ix_fast WHERE entity_id=X'$1'") + $(t_sql 1 "SELECT COUNT(*) FROM ix_fast WHERE entity_id=X'$1'"))); }
# a pass that began after the planting has gone over [its previous
# watermark - 20 s, now]: x's updated is inside, y's is not
passed() { [ "$(watermark)" -gt "$((plant + 500000))" ]; }
if t_wait 30 passed; then t_ok "a repair pass began after the planting and ended"; else t_fail "a repair pass after the planting"; fi
t_eq "$(rows_of $X)" 1 "x (updated inside the overlap) is repaired by the daemon"
t_eq "$(rows_of $Y)" 0 "y (updated outside it) is not"
kill -TERM $ov
wait $ov
t_eq "$?" 0 "the daemon exits 0"
t_exit 1 "verify ix_fast finds y" -- "$B" -c "$C" verify --index ix_fast
t_contains "$T_OUT" "1 missing, 0 stale" "1 missing"
t_exit 0 "verify --repair" -- "$B" -c "$C" verify --index ix_fast --repair
t_eq "$(rows_of $Y)" 1 "y repaired by verify"

# ------------------------------------------------------------ chunk_time
# 20,000 entities (10,000 a shard): from 2,000 rows a chunk, halving per
# chunk under a tiny chunk_time (100 at least), doubling under a large one
load 4000 16000
conf tiny "cleaner: {chunk_time: 0.000001}"
conf large "cleaner: {chunk_time: 1000}"
t_exit 0 "create ix_tiny" -- "$B" -c "$C" index create ix_tiny --on k:int --shard-on k
t_exit 0 "build ix_tiny under a tiny chunk_time" -- "$B" -c "$T/tiny.yaml" cleaner --index ix_tiny
t_eq "$(job ix_tiny chunk)" "100 100" "each job's chunk shrank to the minimum, 100"
t_exit 0 "create ix_large" -- "$B" -c "$C" index create ix_large --on k:int --shard-on k
t_exit 0 "build ix_large under a large chunk_time" -- "$B" -c "$T/large.yaml" cleaner --index ix_large
t_eq "$(job ix_large chunk)" "8000 8000" "each job's chunk grew: 2,000, 4,000, then 8,000"
t_exit 0 "verify both" -- "$B" -c "$C" verify --index ix_tiny
t_exit 0 "verify both" -- "$B" -c "$C" verify --index ix_large

t_done test_cleaner_knobs

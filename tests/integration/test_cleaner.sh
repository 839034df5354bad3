#!/bin/sh
# test_cleaner.sh - the cleaner from the command line, against the shared
# test shards: a backfill killed with SIGKILL and resumed, two workers on one
# index, pause and resume, a shard stopped mid-backfill, a put killed between
# its entity and its index rows repaired by `cleaner --once`, drift planted
# by hand found by `verify` and fixed by `verify --repair`, the daemon's
# SIGTERM, `lag`, `backfill list`, usage errors.
#
# Backfills are made slow with BAGSTORE_FAULT=slow_chunk (chunks of 100
# rows, 50 ms each), so that they can be interrupted; nothing here asserts a
# duration.
. tests/lib.sh

TMP=$(t_tmp)
CFG=$TMP/cleaner.yaml
cp "$BAGSTORE_TEST_CONFIG" "$CFG"
printf 'cleaner: {chunk_time: 0.05, repair_interval: 0.1}\n' >>"$CFG"
N=10000
bs() {
	want=$1 desc=$2
	shift 2
	t_exit "$want" "$desc" -- "$BAGSTORE" -c "$CFG" "$@"
}
scanned() { # INDEX: rows scanned, over both shards' jobs
	a=$(t_sql 0 "SELECT COALESCE(SUM(rows_scanned),0) FROM bagstore_jobs WHERE index_name='$1'")
	b=$(t_sql 1 "SELECT COALESCE(SUM(rows_scanned),0) FROM bagstore_jobs WHERE index_name='$1'")
	echo $((a + b))
}
started() { [ "$(scanned "$1")" -gt 0 ]; }
rows() { # INDEX: index rows over both shards
	a=$(t_sql 0 "SELECT COUNT(*) FROM \`$1\`")
	b=$(t_sql 1 "SELECT COUNT(*) FROM \`$1\`")
	echo $((a + b))
}
state() { t_sql 0 "SELECT state FROM bagstore_indexes WHERE name='$1'"; }
# bg NAME ARGS...: the CLI in the background, slowed; pid in $TMP/NAME.pid
bg() {
	name=$1
	shift
	BAGSTORE_FAULT=slow_chunk "$BAGSTORE" -c "$CFG" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
	echo $! >"$TMP/$name.pid"
}
bg_wait() { # NAME: its exit status
	wait "$(cat "$TMP/$1.pid")"
}

# ------------------------------------------------------------ load

bs 0 "init" init
awk -v n=$N 'BEGIN {
	for (k = 1; k <= n; k++)
		printf("{\"id\":{\"$uuid\":\"%08x-0000-4000-8000-%012x\"},\"user_id\":{\"$uuid\":\"%08x-1111-4000-8000-%012x\"},\"n\":%d,\"m\":%d,\"k\":%d}\n",
		       k, k * k + int(k / 3), k % 977, k % 977, k, k % 13, k)
}' >"$TMP/ents.jsonl"
bs 0 "put $N entities" put "$TMP/ents.jsonl"

# ------------------------------------------------------------ usage

bs 2 "backfill pause without NAME is a usage error" backfill pause
t_contains "$T_ERR" "bagstore: " "errors start with bagstore:"
bs 2 "cleaner with an unknown option" cleaner --bogus
bs 2 "--index and --once together" cleaner --index x --once
bs 0 "cleaner --help" cleaner --help
t_contains "$T_OUT" "--once" "cleaner --help names --once"
bs 0 "verify --help" verify --help
bs 0 "lag --help" lag --help
bs 0 "backfill list --help" backfill list --help
bs 1 "cleaner --index of an unknown index" cleaner --index nosuch
t_contains "$T_ERR" "nosuch" "the message names the index"
bs 1 "pause of an unknown backfill" backfill pause nosuch

# ------------------------------------------------------------ SIGKILL and resume

bs 0 "create by_user over $N entities" index create by_user --on user_id:uuid --shard-on user_id
t_eq "$(state by_user)" building "by_user starts building"
bs 0 "backfill list" backfill list
t_contains "$T_OUT" "queued" "its jobs are queued"
bg kill cleaner --index by_user
if t_wait 30 started by_user; then t_ok "the backfill is under way"; else t_fail "the backfill started"; fi
kill -KILL "$(cat "$TMP/kill.pid")"
bg_wait kill
before=$(scanned by_user)
if [ "$before" -lt $N ]; then t_ok "killed mid-way ($before of $N scanned)"; else t_fail "killed mid-way" "scanned $before"; fi
t_eq "$(state by_user)" building "still building after the kill"
bs 0 "a new worker resumes the killed backfill" cleaner --index by_user
t_contains "$T_OUT" "ready" "it says the index is ready"
t_eq "$(state by_user)" ready "by_user ready"
t_eq "$(scanned by_user)" "$N" "every entity counted once in the checkpoints"
t_eq "$(rows by_user)" "$N" "one index row per entity"
bs 0 "verify by_user: no drift" verify --index by_user
t_contains "$T_OUT" "0 missing, 0 stale, 0 orphaned" "verify reports no drift"
bs 0 "backfill list --json" backfill list --json
t_contains "$T_OUT" '"state": "done"' "jobs done in JSON"
t_contains "$T_OUT" '"worker_pid"' "jobs name their worker"
# a job whose worker went quiet (its row running, its heartbeat a minute
# old) has no rate and no ETA: nobody runs it
was=$(t_sql 0 "SELECT CONCAT(rate, ',', rows_total) FROM bagstore_jobs WHERE index_name='by_user'")
t_sql 0 "UPDATE bagstore_jobs SET state='running', rate=500, rows_total=rows_scanned+1000, heartbeat=NOW(6) - INTERVAL 60 SECOND WHERE index_name='by_user'"
bs 0 "backfill list --json, s0's job gone quiet" backfill list --json
t_eq "$(printf '%s' "$T_OUT" | python3 -c '
import json, sys
d = json.load(sys.stdin)
jobs = d["jobs"] if isinstance(d, dict) else d
j = [j for j in jobs if j["index"] == "by_user" and j["shard"] == "s0"][0]
print(j["rate"], j["eta_s"])')" "0.0 None" "its rate is 0 and its ETA unknown"
t_sql 0 "UPDATE bagstore_jobs SET state='done', rate=${was%,*}, rows_total=${was#*,}, heartbeat=NOW(6) WHERE index_name='by_user'"

# ------------------------------------------------------------ two workers

bs 0 "create by_n" index create by_n --on n:int --shard-on n
bg w1 cleaner --index by_n
bg w2 cleaner --index by_n
bg_wait w1
t_eq "$?" 0 "worker 1 ends 0"
bg_wait w2
t_eq "$?" 0 "worker 2 ends 0"
t_eq "$(state by_n)" ready "by_n ready"
t_eq "$(rows by_n)" "$N" "by_n: one row per entity, none twice"
t_eq "$(scanned by_n)" "$N" "by_n: every entity scanned once"
bs 0 "verify by_n: no drift" verify --index by_n

# ------------------------------------------------------------ pause and resume

bs 0 "create by_m" index create by_m --on m:int,k:int --shard-on m
bg p cleaner --index by_m
t_wait 30 started by_m
bs 0 "backfill pause by_m" backfill pause by_m
paused() { [ "$(t_sql 0 "SELECT state FROM bagstore_jobs WHERE index_name='by_m'")" = paused ]; }
if t_wait 10 paused; then t_ok "the job is paused"; else t_fail "the job is paused"; fi
a=$(scanned by_m)
sleep 1
b=$(scanned by_m)
t_eq "$b" "$a" "a paused backfill does not move"
bs 0 "backfill list shows paused" backfill list
t_contains "$T_OUT" "paused" "listed as paused"
if kill -0 "$(cat "$TMP/p.pid")" 2>/dev/null; then t_ok "the worker waits while paused"; else t_fail "the worker waits while paused"; fi
bs 1 "pausing again: nothing to pause" backfill pause by_m
bs 0 "backfill resume by_m" backfill resume by_m
bg_wait p
t_eq "$?" 0 "the paused worker finishes after resume"
t_eq "$(state by_m)" ready "by_m ready"
t_eq "$(rows by_m)" "$N" "by_m complete"
bs 0 "verify by_m" verify --index by_m

# ------------------------------------------------------------ a shard stopped mid-backfill

bs 0 "create by_k" index create by_k --on k:int --shard-on k
bg s cleaner --index by_k
t_wait 30 started by_k
sh "$SHARDS_SH" stop-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
# The job notices at its next chunk or connection attempt: under ASan on a
# loaded machine that can take more than a couple of seconds.
by_k_state() { t_sql 0 "SELECT CONCAT(state,': ',reason) FROM bagstore_jobs WHERE index_name='by_k'"; }
by_k_waits() { by_k_seen=$(by_k_state); case "$by_k_seen" in *waiting*) return 0 ;; esac; return 1; }
t_wait 30 by_k_waits
if kill -0 "$(cat "$TMP/s.pid")" 2>/dev/null; then t_ok "the job waits for the stopped shard"; else t_fail "the job waits for the stopped shard" "$(cat "$TMP/s.err")"; fi
# What the job said (a second read may fall on a retry's claim: until s1's
# signals have gone unread for cleaner.max_signal_age, the throttle lets a
# chunk go, its write to s1 fails, the job says it waits for a shard and
# tries again a second later, its row "running" while it claims the job).
t_contains "$by_k_seen" "waiting" "the job says it waits for a shard"
# Then the throttle fails closed: it holds the job, which stays throttled
# saying why (a re-read now finds the same).
by_k_held() { case "$(by_k_state)" in *unreadable*) return 0 ;; esac; return 1; }
if t_wait 30 by_k_held; then t_ok "then the throttle holds it: s1's signals unreadable"; else
	t_fail "then the throttle holds it: s1's signals unreadable" "$(by_k_state)"; fi
t_contains "$(by_k_state)" "waiting: shard s1: " "and it keeps saying it waits, naming s1"
sh "$SHARDS_SH" start-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
bg_wait s
t_eq "$?" 0 "the backfill finishes once the shard is back"
t_eq "$(state by_k)" ready "by_k ready"
t_eq "$(rows by_k)" "$N" "by_k complete"
bs 0 "verify by_k" verify --index by_k

# the first shard (where the catalog is read first) stopped, then back
bs 0 "create by_k2" index create by_k2 --on k:int --shard-on k
bg s0 cleaner --index by_k2
t_wait 30 started by_k2
sh "$SHARDS_SH" stop-one s0 --dir "$SHARDS_DIR" >/dev/null 2>&1
sleep 2
if kill -0 "$(cat "$TMP/s0.pid")" 2>/dev/null; then t_ok "the job waits for the stopped first shard"; else t_fail "the job waits for the stopped first shard" "$(cat "$TMP/s0.err")"; fi
bs 1 "backfill list with a shard down exits 1" backfill list
t_contains "$T_OUT" "by_k2" "it still lists the other shard's job"
sh "$SHARDS_SH" start-one s0 --dir "$SHARDS_DIR" >/dev/null 2>&1
bg_wait s0
t_eq "$?" 0 "the backfill finishes once the first shard is back"
t_eq "$(state by_k2)" ready "by_k2 ready"
t_eq "$(rows by_k2)" "$N" "by_k2 complete"
bs 0 "drop by_k2" index drop by_k2 --yes

# ------------------------------------------------------------ repair

printf '{"id":{"$uuid":"0000000a-0000-4000-8000-00000000aaaa"},"user_id":{"$uuid":"0000000a-1111-4000-8000-00000000aaaa"},"n":-1,"m":1,"k":-1}\n' >"$TMP/one.json"
t_exit 75 "a put killed after its entity" -- env BAGSTORE_FAULT=after_entity_write "$BAGSTORE" -c "$CFG" put "$TMP/one.json"
bs 1 "verify finds the put's missing rows" verify
t_contains "$T_OUT" "by_user: $((N + 1)) entities checked, 1 missing" "verify counts it in by_user"
bs 0 "cleaner --once" cleaner --once
bs 0 "verify after cleaner --once: no drift" verify
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM by_n WHERE n=-1") $(t_sql 0 "SELECT COUNT(*) FROM by_n WHERE n=-1")" \
	"$(if [ "$(t_sql 0 "SELECT COUNT(*) FROM by_n WHERE n=-1")" = 1 ]; then echo "0 1"; else echo "1 0"; fi)" "the repaired row is on one shard"
bs 0 "lag" lag
# a watermark but no cleaner alive to move it: not ok, and said
t_match "$T_OUT" '^s0 +no cleaner ' "lag: with no cleaner running, not ok"
t_contains "$T_OUT" "no cleaner is running: nothing repairs the shards and the lag grows" "lag: says no cleaner runs"
bs 0 "lag --json" lag --json
t_contains "$T_OUT" '"lag_s"' "lag --json has lag_s"
t_contains "$T_OUT" '"state": "no cleaner"' "lag --json: the state"
"$BAGSTORE" -c "$CFG" cleaner >"$TMP/daemon.log" 2>&1 &
dpid=$!
alive=no
for _ in $(seq 1 100); do
	"$BAGSTORE" -c "$CFG" workers --json 2>/dev/null | grep -q "\"alive\": true" && { alive=yes; break; }
	sleep 0.2
done
t_eq "$alive" yes "a cleaner daemon registered"
bs 0 "lag with a cleaner" lag
t_match "$T_OUT" '^s0 +ok ' "lag: ok while a cleaner runs"
case $T_OUT in *"no cleaner"*) t_fail "lag: no 'no cleaner' while one runs" "$T_OUT" ;; *) t_ok "lag: no 'no cleaner' while one runs" ;; esac
kill -TERM "$dpid" 2>/dev/null
wait "$dpid" 2>/dev/null

# drift planted by hand
t_sql 0 "DELETE FROM by_user ORDER BY entity_id LIMIT 3"
t_sql 1 "DELETE FROM by_user ORDER BY entity_id LIMIT 4"
t_sql 0 "UPDATE by_n SET n=n+100000 ORDER BY entity_id LIMIT 2"
t_sql 1 "INSERT INTO by_n VALUES (5, X'ffffffffffffffffffffffffffffff00')"
bs 1 "verify finds planted drift" verify
t_contains "$T_OUT" "by_user: $((N + 1)) entities checked, 7 missing, 0 stale, 0 orphaned" "by_user: 7 missing"
t_contains "$T_OUT" "by_n: $((N + 1)) entities checked, 0 missing, 2 stale, 1 orphaned" "by_n: 2 stale, 1 orphaned"
t_contains "$T_ERR" "drift" "the message says drift remains"
bs 1 "verify --json exits 1 with drift" verify --json --index by_user
bs 0 "verify --repair" verify --repair
t_contains "$T_OUT" "repaired" "verify --repair says what it repaired"
bs 0 "verify after --repair: no drift" verify
bs 0 "verify --json" verify --json --index by_user
t_contains "$T_OUT" '"missing": 0' "JSON counts"
# the man page's verify entry says what verify prints: every key of its
# JSON objects, and its line with every count in order
man_verify=$(sed -n '/^\\fBverify\\fR/,/^\.TP/p' "${TEST_ROOT:-.}/doc/bagstore.1")
for k in $(printf '%s' "$T_OUT" | python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin)[0]))'); do
	t_match "$man_verify" "^\.BR? $k( |\$)" "bagstore(1), verify --json: names the key $k"
done
bs 0 "verify by_user (text)" verify --index by_user
line=$(printf '%s\n' "$T_OUT" | sed -n 's/^by_user: /INDEX: /p' | sed 's/[0-9][0-9]*/N/g')
t_contains "$(printf '%s' "$man_verify" | tr '\n' ' ' | sed 's/\\f[IPBR]//g')" "$line" \
	"bagstore(1), verify: the line as verify prints it ($line)"

# ------------------------------------------------------------ a job that fails says why

bs 0 "create broken" index create broken --on n:int --shard-on n
t_sql 1 "DROP TABLE broken"
bs 1 "a backfill whose table is gone fails" cleaner --index broken
t_contains "$T_ERR" "broken" "the error names the table"
t_contains "$T_ERR" "backfill of broken on shard" "the error names the job (index and source shard)"
bs 0 "backfill list" backfill list
t_contains "$T_OUT" "failed" "the job is listed as failed"
t_contains "$T_OUT" "doesn't exist" "with MySQL's message"
bs 0 "drop the broken index" index drop broken --yes
# an index whose table is gone, verified after those that are fine: the
# JSON still holds the ones verified before it
bs 0 "create zz_gone" index create zz_gone --on n:int --shard-on n
t_sql 1 "DROP TABLE zz_gone"
bs 1 "verify --json with a table gone fails" verify --json
t_contains "$T_OUT" '"index": "by_user"' "verify --json prints the indexes verified before the failure"
case $T_OUT in *zz_gone*) t_fail "the index that failed is not in the array" "$T_OUT" ;; *) t_ok "the index that failed is not in the array" ;; esac
t_contains "$T_ERR" "bagstore: verify zz_gone: " "the error names the index that failed"
t_contains "$T_ERR" "zz_gone' doesn't exist" "and MySQL's message"
bs 1 "verify --json --index of the one that fails" verify --json --index zz_gone
t_eq "$(printf '%s' "$T_OUT" | tr -d ' \n')" "[]" "none verified: an empty array"
bs 0 "drop zz_gone" index drop zz_gone --yes

# ------------------------------------------------------------ the daemon

"$BAGSTORE" -c "$CFG" cleaner >"$TMP/d.out" 2>"$TMP/d.err" &
dpid=$!
t_exit 75 "another killed put" -- env BAGSTORE_FAULT=after_entity_write "$BAGSTORE" -c "$CFG" put "$TMP/one.json"
t_sql 0 "DELETE FROM by_k WHERE k=-1"; t_sql 1 "DELETE FROM by_k WHERE k=-1"
fixed() { [ "$(( $(t_sql 0 "SELECT COUNT(*) FROM by_k WHERE k=-1") + $(t_sql 1 "SELECT COUNT(*) FROM by_k WHERE k=-1") ))" = 1 ]; }
if t_wait 20 fixed; then t_ok "the daemon repairs a row deleted by hand"; else t_fail "the daemon repairs a row deleted by hand"; fi
kill -TERM $dpid
wait $dpid
t_eq "$?" 0 "the daemon exits 0 on SIGTERM"
bs 0 "verify after the daemon" verify

t_done test_cleaner

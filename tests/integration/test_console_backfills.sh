#!/bin/sh
# test_console_backfills.sh - backfills live, headless against real shards:
# a backfill launched from the console runs on its worker, throttled while
# a shard is loaded (the reason shown), paused, resumed, cancelled after the
# index name is typed; the jobs stay in the shards' jobs table; the cleaner
# screen shows which worker holds which job. Each control is audited, once.
# While throttled or paused a job shows no rate and no ETA; the selected
# job's state is shown in full, labelled.
. tests/console/lib.sh

c_init
numbered() { printf '{"n": %d}\n' "$1"; }
c_put 300 numbered
t_exit 0 "a building index" -- "$BAGSTORE" -c "$CFG" index create index_n --on n:int --shard-on n

# max_load 1: a second running thread on s0 throttles the backfill
{ cat "$CFG"; echo "cleaner: {max_load: 1, critical_load: 1000}"; } >"$T/load.yaml"
# a statement sleeping on s0, held until the console is done however slow
# the build (t_sleeper)
trap t_sleeper_kill EXIT
t_sleeper 0 || t_fail "the sleeping statement runs on s0"

cat >"$T/bf.keys" <<KEYS
keys 2
wait-idle
key B
wait-for backfilling index_n
keys 4
wait-for Threads_running 20
dump throttled
keys 3
wait-idle
dump cleaner
keys 4
wait-idle
keys p
wait-for paused: paused by an operator 20
dump paused
keys r
wait-for resume: every job 20
wait-idle
dump resumed
keys x
dump cancel_prompt
keys index_n\n
wait-for cancelled 20
wait-idle
dump cancelled
keys :q\n
KEYS
T_TIMEOUT=120 t_exit 0 "headless backfill controls" -- \
	"$BAGSTORE" -c "$T/load.yaml" --headless "$T/bf.keys" --dump-dir "$D"
t_sleeper_kill
t_contains "$(d throttled)" "index_n@s0" "a job per source shard"
t_contains "$(d throttled)" "Threads_running" "the throttle reason is shown"
t_contains "$(d throttled)" "(here)" "the job runs on this console's worker"
t_contains "$(d throttled)" "/ 1" "rows scanned of the total"
t_match "$(d throttled)" "^index_n@s[01] +throttled: .* - +- " "throttled: no rate and no ETA (-), not a frozen one"
t_match "$(d throttled)" "^selected index_n@s0: [a-z]+" "the selected job's state, labelled"
t_match "$(d throttled)" "index_n@s[01]: throttled: shard s0: Threads_running [0-9]+ above max_load 1" "a throttled job's reason in full, named"
t_match "$(d paused)" "^index_n@s[01] +paused: .* - +- " "paused: no rate and no ETA (-)"
t_contains "$(d cleaner)" "index_n" "cleaner: the worker's jobs"
t_contains "$(d paused)" "paused" "p pauses"
t_contains "$(d resumed)" "resume: every job of index_n" "r resumes"
t_contains "$(d cancel_prompt)" "cancel backfill index_n: 2 jobs on 2 shards" "cancel names target and scale"
t_contains "$(d cancel_prompt)" "Type index_n to confirm" "cancel asks for the name"
t_contains "$(d cancelled)" "cancelled" "x cancels"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_jobs WHERE index_name='index_n'")" 1 "s0's job stays in the jobs table"
audit=$(t_sql 0 "SELECT action, target FROM bagstore_audit"; t_sql 1 "SELECT action, target FROM bagstore_audit")
t_contains "$audit" "backfill.pause	index_n" "audit: pause"
t_contains "$audit" "backfill.resume	index_n" "audit: resume"
t_contains "$audit" "backfill.cancel	index_n" "audit: cancel"
t_contains "$audit" "index.backfill	index_n" "audit: launch"
# one row per change, whichever front end made it (the engine audits them)
for a in pause resume cancel; do
	n=$(printf '%s\n' "$audit" | grep -c "^backfill\.$a	index_n$")
	t_eq "$n" 1 "audit: backfill.$a written once"
done
t_eq "$(printf '%s\n' "$audit" | grep -c "^backfill $a")" 0 "audit: no second, undotted row"

# Quitting while the action lane starts a backfill (B, then :q at once):
# the console stops and joins its lanes, then its backfills, so no
# backfill thread outlives the configuration it reads (make tsan and make
# asan watch these runs).
t_exit 0 "an index to backfill while quitting" -- \
	"$BAGSTORE" -c "$CFG" index create index_q --on n:int --shard-on n
printf 'keys 2\nwait-idle\nkey B\nkeys :q\\n\n' >"$T/quit.keys"
for i in 1 2 3 4 5; do
	T_TIMEOUT=60 t_exit 0 "B, then :q at once ($i)" -- \
		"$BAGSTORE" -c "$CFG" --headless "$T/quit.keys" --dump-dir "$D"
done
t_done test_console_backfills

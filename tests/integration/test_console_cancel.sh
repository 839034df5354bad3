#!/bin/sh
# test_console_cancel.sh - B and a cancelled backfill, headless against real
# shards (issue 19, item 5): a backfill this console runs, cancelled by the
# operator, is shown as cancelled, not as an error; B on the cancelled index
# resumes its jobs and says so, and the backfill runs to its end (the index
# ready); B on an index that is not building is refused with its state.
. tests/console/lib.sh

c_init
numbered() { printf '{"n": %d}\n' "$1"; }
c_put 300 numbered
t_exit 0 "a building index" -- "$BAGSTORE" -c "$CFG" index create index_n --on n:int --shard-on n

# max_load 1 and a statement sleeping on s0: the backfill is held there
# (throttled) until the test ends the sleep, once the cancel is on screen
# (dump cancelled), so the cancel lands while it runs and the resumed
# backfill can finish, however slow the build
{ cat "$CFG"; echo "cleaner: {max_load: 1, critical_load: 1000}"; } >"$T/load.yaml"
trap t_sleeper_kill EXIT
t_sleeper 0 || t_fail "the sleeping statement runs on s0"
cat >"$T/cancel.keys" <<'KEYS'
keys 2
wait-idle
key B
wait-for backfilling index_n
keys 4
wait-for Threads_running 20
keys x
keys index_n\n
wait-for (B resumes it) 45
wait-idle
dump cancelled
keys 2
wait-idle
key B
wait-for backfilling index_n 20
dump resumed
wait-for ready 60
wait-idle
key B
wait-for nothing to backfill 20
dump refused
keys :q\n
KEYS
cancelled() { [ -s "$D/cancelled.txt" ]; }
(t_wait 150 cancelled; t_sleeper_kill) &
gate=$!
T_TIMEOUT=150 t_exit 0 "headless: cancel, then B again" -- \
	"$BAGSTORE" -c "$T/load.yaml" --headless "$T/cancel.keys" --dump-dir "$D"
kill $gate 2>/dev/null
wait $gate 2>/dev/null
t_sleeper_kill
t_contains "$(d cancelled)" "index_n: cancelled by an operator (B resumes it)" "a cancel is called a cancel"
c_lacks cancelled "last error" "a cancel is not an error"
t_match "$(d resumed)" "backfilling index_n on a console worker \(resumed [0-9]+ cancelled jobs?\)" \
	"B resumes the cancelled jobs and says so"
t_eq "$(t_sql 0 "SELECT state FROM bagstore_indexes WHERE name='index_n'")" "ready" \
	"the resumed backfill ran to its end"
t_contains "$(d refused)" "index_n is ready: nothing to backfill" "B on a ready index is refused, with its state"
t_exit 0 "verify" -- "$BAGSTORE" -c "$CFG" verify
t_done test_console_cancel

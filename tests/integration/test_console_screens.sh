#!/bin/sh
# test_console_screens.sh - every console screen in headless mode against
# the real shards: shards (totals row), indexes (rows per shard), cleaner,
# backfills, entities, help generated from the key table, the : command
# line (:q really quits), / filter (the totals follow it), sort, refresh
# interval, pause, resize, mouse; the load panel while entities are written.
. tests/console/lib.sh

c_init
post() {
	printf '{"user_id": {"$uuid": "f48b0000-0000-4000-8000-00000000000%d"}, "title": "post %d — ünïcode"}\n' \
		$(($1 % 3)) "$1"
}
c_put 60 post
t_exit 0 "create an index" -- "$BAGSTORE" -c "$CFG" index create index_user_id --on user_id:uuid --shard-on user_id

c_headless "headless run of every screen" tests/console/screens.keys
t_contains "$T_OUT" "BEFORE-QUIT" "the script ran to its :q"
case $T_OUT in
*STILL-RUNNING-AFTER-QUIT*) t_fail ":q quits: the script's next line never ran" "$T_OUT" ;;
*) t_ok ":q quits: the script's next line never ran" ;;
esac

t_eq "$(d shards | wc -l | tr -d ' ')" 40 "a dump is LINES lines"
t_contains "$(d shards)" "[1 shards]" "the title names the screen"
t_contains "$(d shards)" "SHARD  ADDRESS" "shards: header"
t_contains "$(d shards)" "s0     127.0.0.1:" "shards: s0 with its address"
t_contains "$(d shards)" "MariaDB" "shards: server version"
t_match "$(d shards)" "^ *s0 .* ok *$" "shards: fingerprint ok, the CLI's word"
t_contains "$(d shards)" "TOTAL  2 shards" "shards: totals row"
t_contains "$(d shards)" "2/2 up" "shards: totals count the shards up"
t_contains "$(d help_shards)" "help: shards" "help: for the screen"
t_contains "$(d help_shards)" "q  Esc       back" "help: generated from the key table"
t_contains "$(d help_shards)" ":refresh SECS" "help: the commands"
t_contains "$(d indexes)" "index_user_id" "indexes: the index"
t_contains "$(d indexes)" "building" "indexes: its state"
t_contains "$(d indexes)" "user_id:uuid" "indexes: properties and types"
t_contains "$(d indexes)" "never verified" "indexes: drift column"
t_contains "$(d indexes)" "s0" "indexes: a column per shard"
t_contains "$(d cleaner)" "WATERMARK" "cleaner: watermark column"
t_match "$(d cleaner)" "LAG, LAST [0-9]+(s|m[0-9]+s)" "cleaner: sparkline column, its real span in its title"
t_contains "$(d cleaner)" "WORKER" "cleaner: workers and their jobs"
t_contains "$(d backfills)" "index_user_id@s0" "backfills: a job per source shard"
t_contains "$(d backfills)" "queued" "backfills: the job state"
t_contains "$(d entities)" "Entities, newest first, all shards merged: page 1" "entities: merged, newest first"
t_contains "$(d entities)" "post 59 — ünïcode" "entities: the newest first, UTF-8 intact"
t_contains "$(d sorted)" "SHARD▲" "sort: > sorts by the next column"
t_contains "$(d filtered)" "s1     127.0.0.1" "filter: the matching shard"
case $(d filtered) in
*"s0     127.0.0.1"*) t_fail "filter: s0 hidden" ;;
*) t_ok "filter: s0 hidden" ;;
esac
t_contains "$(d filtered)" "TOTAL" "filter: totals row stays"
t_contains "$(d filtered)" "TOTAL  1 of 2 shards" "filter: the totals add only the rows shown, and say so"
t_contains "$(d faster)" "refresh 1s" "+ refreshes more often"
t_contains "$(d paused)" "PAUSED" "z pauses the refresh"
t_contains "$(d refresh7)" "refresh 7s" ":refresh 7"
t_contains "$(d badcommand)" "unknown command ':nosuch'" "a bad command says so"
t_eq "$(d resized | wc -l | tr -d ' ')" 30 "resize: 30 lines"
t_contains "$(d resized)" "TOTAL" "resize: redrawn"
t_contains "$(d mouse_sort)" "SHARD▼" "mouse: a click on a header sorts (again: the other way)"
t_eq "$(d mouse_select | grep -c '^s0 ')" 1 "mouse: s0 still shown after a click on its row"
t_contains "$(d shard_enter)" "Entities, newest first, s0: page 1" "Enter on a shard browses its entities"
c_headless "quit from the command line" /dev/null

# load at a glance: statements and rows written per second between
# refreshes, connections and the history list, with their sparklines
printf 'wait-idle\nsleep 4\ndump load\nkeys :q\n\n' >"$T/load.keys"
"$BAGSTORE" -c "$CFG" --refresh 0.5 --headless "$T/load.keys" --dump-dir "$D" >"$T/load.out" 2>&1 &
cpid=$!
# one put process, a line every 0.1 s, each written as it comes (--batch
# 1): every refresh's interval holds writes, however slow a process start
# is (a put process per line left gaps of a second under asan); until the
# console is gone, however slow its start (a minute at most)
i=0
while kill -0 $cpid 2>/dev/null && [ $i -lt 600 ]; do
	post $((1000 + i))
	i=$((i + 1))
	sleep 0.1
done | "$BAGSTORE" -c "$CFG" put --batch 1 - >/dev/null 2>&1
wait $cpid
t_eq "$?" 0 "the console ran while entities were written"
t_contains "$(d load)" "LOAD   STATEMENTS/S" "shards: the load panel"
t_contains "$(d load)" "ROWS WRITTEN/S" "with rows written per second"
t_match "$(d load)" "^ s[01] +[0-9,.]+/s +[▁▂▃▄▅▆▇█]{4,} +[0-9,.]*[1-9][0-9,.]*/s +[▁▂▃▄▅▆▇█]{4,} +[0-9,]+ +[▁▂▃▄▅▆▇█]{4,} +[0-9,]+ +[▁▂▃▄▅▆▇█]{4,}" \
	"a shard written to: its rates, connections and history list, each with a sparkline"

# the rates are over the last refresh only: back on the shards screen after
# another screen, the first snapshot is a new baseline (a gap, "-"), not the
# average over the time away (which would count the other screen's own
# statements); one refresh later, a rate again
cat >"$T/back.keys" <<KEYS
wait-idle
sleep 3.5
wait-idle
dump load_before
keys 2
wait-idle
sleep 5
keys 1
wait-idle
dump load_back
sleep 3.5
wait-idle
dump load_again
keys :q\n
KEYS
c_headless "back on the shards screen" "$T/back.keys" --refresh 3
t_match "$(d load_before)" "^ s0 +[0-9,.]+/s " "before: s0's statements per second"
t_match "$(d load_back)" "^ s0 +-/s " "back after another screen: no rate over the time away"
t_match "$(d load_again)" "^ s0 +[0-9,.]+/s " "one refresh later: a rate again"
t_done test_console_screens

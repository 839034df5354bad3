#!/bin/sh
# test_console_log.sh - the console's statement log (:log, 9) and
# :explain, headless against real shards: after an index drop the log lists
# the drop's statements (the DROP TABLE on each shard, the catalog's
# changes), each with its shard, time, rows and the action that sent it;
# the periodic refresh's statements are counted, not listed; `/` filters;
# :explain on the entities screen's query shows the plan as a page.
. tests/console/lib.sh

c_init
titled() { printf '{"title": "t%d", "n": %d}\n' $(($1 % 7)) "$1"; }
c_put 40 titled
t_exit 0 "an index to drop" -- "$BAGSTORE" -c "$CFG" index create index_n --on n:int --shard-on n
t_exit 0 "an index to query" -- "$BAGSTORE" -c "$CFG" index create by_title --on 'title:string(16)' --shard-on title

t_exit 0 "backfill it" -- "$BAGSTORE" -c "$CFG" cleaner --index by_title

c_headless "headless drop, log and explain" tests/console/log.keys

log=$(d log)
t_contains "$log" "Statements: the last" "log: the screen is there"
t_match "$log" 'index drop .*DROP TABLE' "log: the drop's DROP TABLE is listed, named by its action"
t_match "$log" ' s0 .*index drop .*DROP TABLE' "log: the DROP TABLE on s0"
t_match "$log" ' s1 .*index drop .*DROP TABLE' "log: the DROP TABLE on s1"
t_match "$log" 'index drop .*bagstore_indexes' "log: the drop's catalog statements are listed"
t_match "$log" 'refresh statements not listed' "log: the refresh is counted, not listed"
c_lacks log " status " "log: no refresh (the status lane's reloads, the drop's own after it too) is listed"
filtered=$(d log_filtered)
t_match "$filtered" "'DROP TABLE' shows 2 of" "log: / filters the rows (a DROP TABLE per shard)"
case $filtered in
*"bagstore_indexes"*) t_fail "log: the filter hides the other statements" "$filtered" ;;
*) t_ok "log: the filter hides the other statements" ;;
esac
ex=$(d explain)
t_contains "$ex" "Index: by_title" "explain: the page names the index"
t_contains "$ex" "Routing: one shard" "explain: routed to one shard"
t_contains "$ex" "Step 1" "explain: the statements are shown"
t_done test_console_log

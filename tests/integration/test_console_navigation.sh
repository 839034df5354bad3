#!/bin/sh
# test_console_navigation.sh - the console's navigation, headless against
# real shards, as k9s does it: Esc and q go back from every screen and
# after drilling in, and never quit; :q, Q, Ctrl-C and F10 quit, asking
# first while this console runs backfills (whose jobs then go back to
# queued); the breadcrumb on the title line; Tab cycles the screens; `:`
# completes with Tab; `/` filters as it is typed (Esc puts the old filter
# back); h is help; a key that means nothing says so, named as typed; G and
# End on the entities screen; a message stays on its screen; :refresh and +
# and - share one range; :entity with a bad id says why.
. tests/console/lib.sh

c_init
post() { printf '{"title": "post %d", "n": %d}\n' "$1" "$1"; }
c_put 30 post

c_headless "headless navigation" tests/console/nav.keys
t_contains "$(d esc2)" "[2 indexes]" "2 then Esc: still on the indexes screen"
t_contains "$(d esc2)" "indexes is a top screen: :q, Q or Ctrl-C quits" "Esc on a top screen says how to quit"
t_contains "$T_OUT" "AFTER-ESC-2" "2 then Esc: the console goes on"
t_contains "$(d q3)" "[3 cleaner]" "3 then q: still on the cleaner screen"
t_contains "$(d esc7)" "[7 audit]" "7 then Esc, q: still on the audit screen"
t_contains "$T_OUT" "AFTER-ESC-7" "Esc and q on screens 3 to 7: the console goes on"
t_contains "$(d drill_entities)" "shards > s0 > entities" "Enter on a shard: the breadcrumb names it"
t_contains "$(d drill_entities)" "Entities, newest first, s0: page 1" "Enter on a shard: its entities"
t_match "$(d drill_entity)" "shards > s0 > entities > [0-9a-f]{8}" "Enter on an entity: the breadcrumb goes on"
t_contains "$(d drill_entity)" "decoded:" "the entity is shown"
t_contains "$(d back1)" "Entities, newest first, s0: page 1" "Esc: back to the shard's entities"
t_contains "$(d back2)" "Shards  (as of" "Esc again: back to the shards"
t_contains "$(d back2)" "[1 shards]" "back on the first screen"
t_contains "$(d back3)" "shards is a top screen" "Esc on the first screen does not quit"
t_contains "$T_OUT" "AFTER-DRILL" "after drilling in and out, the console goes on"
t_contains "$(d tab1)" "[2 indexes]" "Tab: the next screen"
t_contains "$(d tab2)" "[3 cleaner]" "Tab again: the one after"
t_contains "$(d stab)" "[2 indexes]" "Shift-Tab: the one before"
t_contains "$(d complete_prompt)" ":properties" "Tab completes :prop"
t_contains "$(d completed)" "[6 properties]" "the completed command runs"
t_contains "$(d complete_two)" ":entities  :entity" "Tab on :e names what it may be"
t_contains "$(d filter_typing)" "s1     127.0.0.1" "/ filters as it is typed: s1 stays"
c_lacks filter_typing "s0     127.0.0.1" "/ filters as it is typed: s0 goes before Enter"
t_contains "$(d filter_esc)" "s0     127.0.0.1" "Esc in / puts the old filter back"
t_contains "$(d h_help)" "help: shards" "h is help"
t_contains "$(d unbound)" "'w' does nothing on the shards screen (? lists its keys)" "a key that means nothing says so"
t_contains "$(d refresh_low)" ":refresh takes seconds between 0.5 and 3600" ":refresh 0.2 is refused"
t_contains "$(d refresh_high)" ":refresh takes seconds between 0.5 and 3600" ":refresh 4000 is refused"
t_contains "$(d slower_max)" "refresh 3600s" "- stops at 3600 s, the :refresh limit"
t_contains "$(d faster_min)" "refresh 0.5s" "+ stops at 0.5 s, the :refresh limit"
t_contains "$(d entity_bad)" ':entity xyz: malformed id' ":entity with a bad id says why"
t_contains "$T_OUT" "BEFORE-F10" "the script ran to F10"
case $T_OUT in
*STILL-RUNNING-AFTER-QUIT*) t_fail "F10 quits at once when no backfill runs" "$T_OUT" ;;
*) t_ok "F10 quits at once when no backfill runs" ;;
esac

# Keys are named as an operator types them (End, F5, Ctrl-X), never curses'
# KEY_END; G and End on the entities screen go to the page's last row, and
# from there to the next page's; a message does not follow to another screen.
cat >"$T/keys.keys" <<KEYS
keys 5
wait-idle
key End
dump ent_end
key Enter
wait-idle
dump ent_end_open
key Esc
wait-idle
keys G
wait-idle
dump ent_end2
key F5
dump f5
key C-x
dump ctrl_x
keys 2
wait-idle
dump switched
keys :q\n
KEYS
LINES=12 c_headless "End, unbound keys, a message and a new screen" "$T/keys.keys"
c_lacks ent_end "does nothing" "End means something on the entities screen"
t_contains "$(d ent_end_open)" 'title: "post 23"' "End selects the page's last row (12 lines: 7 rows, post 29 to 23)"
t_contains "$(d ent_end2)" "page 2" "G on the last row: the next page"
t_contains "$(d ent_end2)" "post 16" "which holds the next 7"
t_contains "$(d f5)" "F5 does nothing on the entities screen" "F5 named as typed"
t_contains "$(d ctrl_x)" "Ctrl-X does nothing on the entities screen" "Ctrl-X named as typed"
c_lacks switched "does nothing" "a message does not follow to another screen"

# Quitting while this console runs a backfill: asked first; n stays, y quits
# and the job goes back to queued for any cleaner.
slow() { printf '{"k": %d}\n' "$1"; }
c_put 6000 slow
t_exit 0 "a building index" -- "$BAGSTORE" -c "$CFG" index create index_slow --on k:int --shard-on k
cat >"$T/quit.keys" <<KEYS
keys 2
wait-idle
key B
wait-for backfilling index_slow
key Q
dump quit_ask
keys n
dump quit_no
echo STILL-HERE
key C-c
dump quit_ask2
keys y
echo STILL-RUNNING-AFTER-QUIT
KEYS
BAGSTORE_FAULT=slow_chunk c_headless "Q while a backfill runs" "$T/quit.keys"
t_contains "$(d quit_ask)" "This console runs 1 backfill (index_slow): quitting stops it" "Q asks first, naming the backfill"
t_contains "$(d quit_ask)" "Quit? y/n" "and waits for y"
t_contains "$(d quit_no)" "not quitting" "n: not quitting"
t_contains "$T_OUT" "STILL-HERE" "n: the console goes on"
t_contains "$(d quit_ask2)" "Quit? y/n" "Ctrl-C asks too"
case $T_OUT in
*STILL-RUNNING-AFTER-QUIT*) t_fail "y quits" "$T_OUT" ;;
*) t_ok "y quits" ;;
esac
states=$(t_sql 0 "SELECT state FROM bagstore_jobs WHERE index_name='index_slow'"; t_sql 1 "SELECT state FROM bagstore_jobs WHERE index_name='index_slow'")
case $states in
*running*|*throttled*) t_fail "the jobs go back to queued when the console quits" "$states" ;;
*queued*) t_ok "the jobs go back to queued when the console quits" ;;
*) t_fail "the jobs go back to queued when the console quits" "$states" ;;
esac
t_done test_console_navigation

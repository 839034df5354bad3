#!/bin/sh
# test_console_narrow.sh - every screen usable at 60x15 and at 80x24,
# headless against real shards: nothing drawn past the width, the columns
# that give way named ("N more") and reached with Right; prompts and
# confirmations wrap their question and keep the typed text in sight; help
# and a long entity scroll to their last line; below 40x10 a notice.
. tests/console/lib.sh

c_init
t_exit 0 "an index" -- "$BAGSTORE" -c "$CFG" index create index_n --on n:int --shard-on n
long=$(printf 'word%.0s ' $(seq 1 200))
post() { printf '{"n": %d, "title": "post %d", "long": "%s end-of-long"}\n' "$1" "$1" "$long"; }
c_put 40 post
first=$(printf '%s\n' "$T_OUT" | head -n 1)

cat >"$T/narrow.keys" <<KEYS
wait-idle
dump shards
key Right
key Right
key Right
key Right
key Right
dump shards_right
key Left 5
keys 2
wait-idle
dump indexes
keys d
keys index_n
dump drop_typing
key Esc
keys c
keys index_with_a_rather_long_name_to_type_in_here
dump create_typing
key Esc
keys 3
wait-idle
dump cleaner
keys 4
wait-idle
dump backfills
keys x
keys index
dump cancel_typing
key Esc
keys 5
wait-idle
dump entities
keys 6
wait-for sampled
dump properties
keys 7
wait-idle
dump audit
keys :entity $first\n
wait-idle
dump entity_top
key End
dump entity_end
keys ?
key End
dump help_end
key q
resize 8 30
dump too_small
resize 15 60
dump back_to_size
keys :q\n
KEYS
LINES=15 COLUMNS=60 c_headless "60x15" "$T/narrow.keys"
for s in shards indexes cleaner backfills entities properties audit entity_top help_end; do
	t_eq "$(d $s | wc -l | tr -d ' ')" 15 "60x15 $s: 15 lines"
	wide=$(d $s | awk '{ if (length($0) > 60) n++ } END { print n + 0 }')
	t_eq "$wide" 0 "60x15 $s: no line wider than 60"
done
t_match "$(d shards)" "[0-9]+ more →" "shards: the columns that gave way are named"
t_contains "$(d shards)" "~" "shards: the estimate stays in sight"
t_contains "$(d shards_right)" "FINGERPRINT" "Right reaches the columns that gave way"
t_match "$(d shards_right)" " ok *$" "with their values"
t_contains "$(d indexes)" "TOTAL" "indexes: the total stays in sight"
t_match "$(d indexes | sed -n 2p)" "^Indexes: [0-9]  \\(rows: ~ InnoDB's estimates, # counts exactly…$" \
	"a header too long is cut after a whole word, and says so"
t_match "$(d cleaner | sed -n 2p)" "^Cleaner: repair lag per shard \\(as of [0-9: -]+; a…$" \
	"the cleaner's header too"
t_contains "$(d drop_typing)" "drop index_n: ~40 rows" "the drop question, wrapped"
t_contains "$(d drop_typing | tail -n 1)" "> index_n" "what is typed stays in sight on the last line"
t_contains "$(d create_typing | tail -n 1)" "to_type_in_here" "a long name being typed: its end in sight"
t_contains "$(d cancel_typing | tr -s '\n ' '  ')" "Type index_n to confirm:" "the cancel question, wrapped whole"
t_contains "$(d cancel_typing | tail -n 1)" "> index" "the cancel prompt keeps the typed text"
t_contains "$(d entities)" "n=39  title=" "entities: the bodies in sight"
t_contains "$(d entity_top)" "decoded:" "entity: from the top"
t_contains "$(d entity_end)" "index rows (every shard read):" "End: the index rows, below a long body"
t_contains "$(d entity_end)" "ok      index_n" "the index row's line"
t_contains "$(d help_end)" "lines " "help says where it is"
t_match "$(d help_end)" "lines [0-9]+-([0-9]+) of \\1\$" "End: help's last line"
t_contains "$(d too_small | tr -s '\n ' '  ')" "terminal too small: 30x8 (at least 40x10)" "below 40x10: a notice"
t_contains "$(d back_to_size)" "[5 entities]" "back to 60x15: the screen again"

# every line of the long value can be reached
cat >"$T/long.keys" <<KEYS
keys :entity $first\n
wait-idle
key Down 16
dump long_mid
keys :q\n
KEYS
LINES=15 COLUMNS=60 c_headless "60x15, a long value" "$T/long.keys"
t_contains "$(d long_mid)" "end-of-long" "the long value wraps: its end can be scrolled to"

# columns scrolled past at 40x10 come back when the terminal is widened:
# once every column fits, all are shown and none is said to be hidden
cat >"$T/widen.keys" <<'KEYS'
wait-idle
key Right 4
dump scrolled_40
resize 50 200
dump widened_200
keys 3
wait-idle
resize 10 40
key Right 3
dump cleaner_scrolled_40
resize 50 200
dump cleaner_widened_200
keys :q\n
KEYS
LINES=10 COLUMNS=40 c_headless "40x10 scrolled right, then 200x50" "$T/widen.keys"
t_match "$(d scrolled_40)" "←[0-9]+ more" "40x10: Right scrolled past columns"
c_lacks widened_200 "more →" "200x50: no column said to be hidden"
t_match "$(d widened_200)" "^SHARD +ADDRESS +STATE +VERSION +RTT +ENTITIES +SIZE +THREADS +REPL LAG +FINGERPRINT" \
	"200x50: every column of the shards is shown again"
t_match "$(d cleaner_scrolled_40)" "←[0-9]+ more" "40x10: Right scrolled past the cleaner's columns"
c_lacks cleaner_widened_200 "more →" "200x50: the cleaner shows every column again"

# 80x24: the same screens, the key columns in sight
cat >"$T/wide.keys" <<'KEYS'
wait-idle
dump shards
keys 2
wait-idle
dump indexes
keys 4
wait-idle
dump backfills
keys 6
wait-for sampled
dump properties
keys 7
wait-idle
dump audit
keys :q\n
KEYS
LINES=24 COLUMNS=80 c_headless "80x24" "$T/wide.keys"
for s in shards indexes backfills properties audit; do
	t_eq "$(d $s | wc -l | tr -d ' ')" 24 "80x24 $s: 24 lines"
	wide=$(d $s | awk '{ if (length($0) > 80) n++ } END { print n + 0 }')
	t_eq "$wide" 0 "80x24 $s: no line wider than 80"
done
t_match "$(d shards)" "^s0 +127\.0\.0\.1:[0-9]+ +up +~[0-9]+" "80x24 shards: name, address, state, entities"
t_match "$(d indexes)" "^index_n +ready +n:int .* ~40 " "80x24 indexes: name, state, properties, total"
t_match "$(d backfills)" "^index_n@s0 +done" "80x24 backfills: job and state"
t_match "$(d properties)" "^long +string 100%" "80x24 properties: path and types"
t_done test_console_narrow

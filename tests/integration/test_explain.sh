#!/bin/sh
# test_explain.sh - `bagstore explain`: which ready index answers (none,
# the only one, the first of two by the query's rule), why none can with
# the census's suggestion (and a backfill time once a backfill has finished
# and measured a rate), one shard (the one holding the rows) or every
# shard, MariaDB's estimates (~), both statements; --run's counts equal the
# query's results, in total and per shard; --json parses.
. tests/lib.sh
T=$(t_tmp)
CFG=$BAGSTORE_TEST_CONFIG

t_exit 0 "init" -- "$BAGSTORE" -c "$CFG" init
# made on an empty store: ready at once
t_exit 0 "index by_user" -- "$BAGSTORE" -c "$CFG" index create by_user --on 'user:string(16),n:int' --shard-on user
t_exit 0 "index by_user_title" -- "$BAGSTORE" -c "$CFG" index create by_user_title \
	--on 'user:string(16),title:string(16)' --shard-on title
i=0
: >"$T/e.jsonl"
while [ $i -lt 60 ]; do
	printf '{"user": "u%d", "n": %d, "title": "t%d", "color": "c%d", "size": %d}\n' \
		$((i % 4)) $((i % 10)) $((i % 5)) $((i % 3)) $((i % 7)) >>"$T/e.jsonl"
	i=$((i + 1))
done
t_exit 0 "put 60 entities" -- "$BAGSTORE" -c "$CFG" put "$T/e.jsonl"

json() { # EXPR on the last command's JSON
	printf '%s' "$T_OUT" | python3 -c "import json, sys; d = json.load(sys.stdin); print($1)"
}

# --- two indexes hold user: the query's rule picks by_user (fewest
# properties, then the first by name)
t_exit 0 "explain user=u1" -- "$BAGSTORE" -c "$CFG" explain --json user=u1
t_eq "$(json 'd["index"]')" by_user "two indexes: by_user is chosen"
t_eq "$(json 'd["ready_indexes"]')" 2 "two indexes: both counted"
t_contains "$(json 'd["why"]')" "first by name" "two indexes: why names the rule"
t_contains "$(json 'd["others"]')" "by_user_title (ready" "two indexes: the other is named"
route=$(json 'd["route_shard"]')
t_match "$route" '^s[01]$' "routed to one shard: user is by_user's shard_on"
t_match "$(json 'd["route_bucket"]')" '^[0-9]+$' "routed: the bucket is named"
holder=""
for s in 0 1; do
	[ "$(t_sql $s "SELECT COUNT(*) > 0 FROM by_user WHERE user='u1'")" = 1 ] && holder="$holder s$s"
done
t_eq "$holder" " $route" "the routed shard is the one holding the rows"
t_eq "$(json '[s["step1"] for s in d["shards"]].count(True)')" 1 "one shard: step 1 reads only it"
t_eq "$(json '[s["est_rows"] for s in d["shards"] if s["step1"]][0] is not None')" True "MariaDB's estimate is there"
t_contains "$(json 'd["step1_sql"]')" "LEFT JOIN \`by_user\` i ON i.\`user\`=" "step 1's statement as sent"
t_contains "$(json 'd["step2_sql"]')" "FROM bagstore_meta m LEFT JOIN entities e ON e.id IN (" "step 2's statement"

# --- one index holds title
t_exit 0 "explain title=t2" -- "$BAGSTORE" -c "$CFG" explain --json title=t2
t_eq "$(json 'd["index"]')" by_user_title "one index: by_user_title"
t_eq "$(json 'd["ready_indexes"]')" 1 "one index: the only one"
t_contains "$(json 'd["why"]')" "the only ready index" "one index: why says so"

# --- n is by_user's but not its shard_on: every shard
t_exit 0 "explain n=3 (text)" -- "$BAGSTORE" -c "$CFG" explain n=3
t_contains "$T_OUT" "Index: by_user" "text: the index"
t_contains "$T_OUT" "Routing: every shard" "every shard: no condition fixes user"
t_match "$T_OUT" '^  s0 +~[0-9]' "text: s0's estimate marked ~"
t_match "$T_OUT" '^  s1 +~[0-9]' "text: s1's estimate marked ~"
t_contains "$T_OUT" "Step 1, the index rows, on every shard at once:" "text: step 1 on every shard"
t_exit 0 "explain n=3 --json" -- "$BAGSTORE" -c "$CFG" explain --json n=3
t_eq "$(json 'd["route_shard"]')" None "every shard: no route"
t_eq "$(json '[s["step1"] for s in d["shards"]].count(True)')" 2 "every shard: step 1 reads both"

# --- --run: the counts are the query's
for q in "user=u1" "n=3" "title=t2" "user=u2 n=2"; do
	# shellcheck disable=SC2086
	t_exit 0 "query $q" -- "$BAGSTORE" -c "$CFG" query "$(case $q in title*) echo by_user_title ;; *) echo by_user ;; esac)" $q
	want=$(printf '%s' "$T_OUT" | grep -c '^{')
	# shellcheck disable=SC2086
	t_exit 0 "explain --run $q" -- "$BAGSTORE" -c "$CFG" explain --run --json $q
	t_eq "$(json 'd["run"]["matched"]')" "$want" "--run $q: matched equals the query's $want results"
	t_eq "$(json 'sum(s["run"]["matched"] for s in d["shards"])')" "$want" "--run $q: the shards' matches add up"
	t_eq "$(json 'sum(s["run"]["step1_rows"] for s in d["shards"])')" "$(json 'd["run"]["candidates"]')" \
		"--run $q: step 1's rows per shard add up to the candidates"
done
# per shard: the matches are the query's results whose entity is there
t_exit 0 "query user=u1" -- "$BAGSTORE" -c "$CFG" query by_user user=u1
ids=$(printf '%s\n' "$T_OUT" | python3 -c "import json, sys; print(','.join(\"X'\" + json.loads(l)['id']['\$uuid'].replace('-', '') + \"'\" for l in sys.stdin if l.strip()))")
t_exit 0 "explain --run --json user=u1" -- "$BAGSTORE" -c "$CFG" explain --run --json user=u1
for s in 0 1; do
	t_eq "$(json "d['shards'][$s]['run']['matched']")" "$(t_sql $s "SELECT COUNT(*) FROM entities WHERE id IN ($ids)")" \
		"--run user=u1: s$s's matches are the results held on s$s"
done
t_exit 0 "explain --run (text)" -- "$BAGSTORE" -c "$CFG" explain --run user=u1
t_contains "$T_OUT" "Run (the query itself, no limit): 15 matched" "text: the run's count (60 entities, user u1 is 1 in 4)"
t_match "$T_OUT" '^  s[01] +[0-9]+ +[0-9.]+m?s ' "text: a shard's step 1 rows and time"

# --- no ready index holds color: why, and the census's suggestion
t_exit 0 "explain color=c1" -- "$BAGSTORE" -c "$CFG" explain --json color=c1
t_eq "$(json 'd["index"]')" None "no index: none"
t_contains "$(json 'd["why"]')" "no ready index holds color" "no index: why"
t_eq "$(json 'd["suggestion"]["on"]')" "color:string(16)" "no index: the census's type"
t_eq "$(json 'd["suggestion"]["shard_on"]')" color "no index: its shard_on"
t_eq "$(json 'd["suggestion"]["backfill_seconds_est"]')" None "no backfill finished yet: no time"
t_exit 0 "explain color=c1 (text)" -- "$BAGSTORE" -c "$CFG" explain color=c1
t_contains "$T_OUT" "bagstore index create by_color --on color:string(16) --shard-on color" "text: the command to make it"
t_contains "$T_OUT" "no rate is known" "text: says no rate is known"
# a finished backfill measures a rate: then a time is estimated
t_exit 0 "create by_color" -- "$BAGSTORE" -c "$CFG" index create by_color --on 'color:string(16)' --shard-on color
t_exit 0 "backfill it" -- "$BAGSTORE" -c "$CFG" cleaner --index by_color
t_exit 0 "explain size=3" -- "$BAGSTORE" -c "$CFG" explain --json size=3
t_eq "$(json 'd["suggestion"]["on"]')" "size:int" "no index for size: an int"
t_eq "$(json 'd["suggestion"]["backfill_seconds_est"] is not None and d["suggestion"]["rate_shards"] > 0')" True \
	"a finished backfill: a time estimated from its rate"
t_exit 0 "explain size=3 (text)" -- "$BAGSTORE" -c "$CFG" explain size=3
t_match "$T_OUT" "its backfill: ~.* for ~60 entities, at ~[0-9,]+ rows/s per shard" "text: the estimate, marked ~"

# --- a named index, and what is refused
t_exit 0 "explain --index by_user_title user=u1" -- "$BAGSTORE" -c "$CFG" explain --json --index by_user_title user=u1
t_eq "$(json 'd["index"]')" by_user_title "--index: the named one"
t_eq "$(json 'd["route_shard"]')" None "--index by_user_title: user is not its shard_on: every shard"
t_exit 2 "a condition without =" -- "$BAGSTORE" -c "$CFG" explain user
t_exit 2 "a value that is not its type" -- "$BAGSTORE" -c "$CFG" explain n=abc
t_exit 1 "an index that does not exist" -- "$BAGSTORE" -c "$CFG" explain --index nosuch user=u1
t_done test_explain

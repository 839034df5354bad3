#!/bin/sh
# test_cli_down.sh - what the listing commands say of a shard that does not
# answer, and of one where nothing has run yet. Found by a tester:
#
#  - `lag` showed PASS_ROWS 0 and REPAIRS/S 0.0 for a shard unreachable or
#    never repaired, and `lag --json` "repairs_per_s": 0.0, "last_pass_rows":
#    0, "repairs_total": 0, "fills_total": 0 for an unreachable one (while
#    lag_s and watermark_us were null): made-up zeros. What is not known is
#    `-` in the table and null in JSON;
#  - `buckets` and `index list` exited 0 with a shard down (a row marked
#    "unreachable", ROWS `-`), where workers, lag, backfill list, reshard
#    status, audit and properties exit 1 (the man page's EXIT STATUS: "a
#    shard unreachable"). They exit 1 and name the shard on stderr;
#  - backfill list, workers and reshard status said only "N shards did not
#    answer": which, and MySQL's words, were left out.
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
T=$(t_tmp)

# FIELD of shard NAME's object in the JSON array of $T_OUT, as JSON
jfield() {
	printf '%s' "$T_OUT" | python3 -c 'import json,sys
print(json.dumps([o for o in json.load(sys.stdin) if o["shard"] == sys.argv[1]][0][sys.argv[2]]))' "$1" "$2"
}

t_exit 0 "init" -- "$B" -c "$C" init
t_exit 0 "index create" -- "$B" -c "$C" index create ix --on k:int --shard-on k
python3 -c 'import json
for i in range(20):
    print(json.dumps({"k": i}))' >"$T/docs.jsonl"
t_exit 0 "put 20 entities" -- "$B" -c "$C" put "$T/docs.jsonl"

# ------------------------------------------------------------ lag, never ran

t_exit 0 "lag before any pass" -- "$B" -c "$C" lag
t_match "$T_OUT" '^s0 +never ran +- +- +- +- +-$' "never ran: no PASS_ROWS nor REPAIRS/S, -"
t_exit 0 "lag --json before any pass" -- "$B" -c "$C" lag --json
t_eq "$(jfield s0 repairs_per_s) $(jfield s0 last_pass_rows) $(jfield s0 last_pass_us)" "null null null" \
	"never ran: repairs_per_s, last_pass_rows null"
# the shard answered: nothing repaired on it is a count
t_eq "$(jfield s0 repairs_total) $(jfield s0 fills_total)" "0 0" "never ran: the totals the shard holds are 0"

t_exit 0 "cleaner --once" -- "$B" -c "$C" cleaner --once
on0=$(t_sql 0 "SELECT COUNT(*) FROM entities")
t_exit 0 "lag after a pass" -- "$B" -c "$C" lag
t_match "$T_OUT" "^s0 +no cleaner +[0-9.]+ +[0-9TZ:-]+ +[0-9TZ:-]+ +$on0 +[0-9]+\\.[0-9]\$" \
	"after a pass: PASS_ROWS is what it looked at, REPAIRS/S a rate"

# ------------------------------------------------------------ s1 down

sh "$SHARDS_SH" stop-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
t_exit 1 "lag with s1 down" -- "$B" -c "$C" lag
t_match "$T_OUT" '^s1 +unreachable +- +- +- +- +-$' "unreachable: every column -"
t_match "$T_OUT" "^s0 +no cleaner .* $on0 +[0-9]+\\.[0-9]\$" "the shard that answered keeps its numbers"
t_contains "$T_ERR" "1 shard did not answer: s1 (" "stderr names the shard, and why"
t_exit 1 "lag --json with s1 down" -- "$B" -c "$C" lag --json
for f in watermark_us lag_s repairs_per_s last_pass_us last_pass_rows repairs_total fills_total; do
	t_eq "$(jfield s1 $f)" null "unreachable: $f is null"
done
t_eq "$(jfield s0 last_pass_rows)" "$on0" "s0's last_pass_rows stays a number"
t_eq "$(jfield s0 repairs_total)" 0 "s0's repairs_total stays a number"

t_exit 1 "buckets with s1 down exits 1" -- "$B" -c "$C" buckets
t_match "$T_OUT" '^s1 .* unreachable' "buckets marks s1 unreachable"
t_match "$T_ERR" 'did not answer.*s1' "buckets names s1 on stderr"
t_exit 1 "buckets --json with s1 down exits 1" -- "$B" -c "$C" buckets --json
t_contains "$T_OUT" '"reachable": false' "buckets --json says so"

t_exit 1 "index list with s1 down exits 1" -- "$B" -c "$C" index list
t_match "$T_OUT" '^ix +ready +k:int +k +-$' "index list still lists ix, its ROWS unknown"
t_match "$T_ERR" 'did not answer.*s1' "index list names s1 on stderr"
t_contains "$T_ERR" "their rows not counted" "and that ix's rows are not counted"
t_exit 1 "index list --json with s1 down exits 1" -- "$B" -c "$C" index list --json
t_contains "$T_OUT" '"rows": null' "index list --json: rows null"
# the lists of jobs, workers and moves name the shard and carry MySQL's words
for c in "backfill list:their jobs are not listed" "workers:a worker only they list is not shown" \
	"reshard status:their moves are not listed"; do
	cmd=${c%%:*}
	# shellcheck disable=SC2086
	t_exit 1 "$cmd with s1 down exits 1" -- "$B" -c "$C" $cmd
	t_contains "$T_ERR" "1 shard did not answer: ${c#*:} (shard s1 (" "$cmd names s1 on stderr"
	t_match "$T_ERR" "\\(shard s1.*(Can't connect|Lost connection|server has gone away)" "$cmd quotes MySQL's words"
done
sh "$SHARDS_SH" start-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1

# ------------------------------------------------------------ s1 back

t_exit 0 "buckets with every shard up" -- "$B" -c "$C" buckets
t_exit 0 "index list with every shard up" -- "$B" -c "$C" index list
t_exit 0 "lag with every shard up" -- "$B" -c "$C" lag
t_match "$T_OUT" "^s1 +no cleaner +[0-9.]+ +[0-9TZ:-]+ +[0-9TZ:-]+ +[0-9]+ +[0-9]+\\.[0-9]\$" "s1's numbers back"

# ------------------------------------------------------------ no index, s1 down

t_exit 0 "index drop ix" -- "$B" -c "$C" index drop ix --yes
sh "$SHARDS_SH" stop-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
# no index to count rows of: the catalog read itself missed s1
t_exit 1 "index list with no index and s1 down exits 1" -- "$B" -c "$C" index list
t_match "$T_ERR" 'did not answer.*s1' "and names s1"
t_contains "$T_ERR" "catalogs; they list none" "and says the others list no index"
t_lacks "$T_ERR" "rows not counted" "not that rows went uncounted"
sh "$SHARDS_SH" start-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
t_exit 0 "index list with no index, every shard up" -- "$B" -c "$C" index list

t_done

#!/bin/sh
# test_census_down.sh - the property census with a shard down: the shard
# that answered is read whole, but the store's entities are not, so the
# census must not say it read every one (complete false, "~" before its
# counts, no "(every one)"), and it says which shard was left out. Found
# in review: tally() left `complete` true when a shard was skipped as
# unreachable, so the console and the CLI showed exact-looking counts for
# half a store. Shares are of the entities sampled (a property on every
# entity is on 100% of them with a shard down, not on the answering shard's
# part of the store).
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
T=$(t_tmp)

t_exit 0 "init" -- "$B" -c "$C" init
python3 -c 'import json
for i in range(40):
    print(json.dumps({"k": i % 7, "n": i}))' >"$T/docs.jsonl"
t_exit 0 "put 40 entities" -- "$B" -c "$C" put "$T/docs.jsonl"
on0=$(t_sql 0 "SELECT COUNT(*) FROM entities")
on1=$(t_sql 1 "SELECT COUNT(*) FROM entities")
t_eq "$((on0 + on1))" 40 "40 entities over the two shards"
if [ "$on0" -gt 0 ] && [ "$on1" -gt 0 ]; then t_ok "both shards hold some"; else t_fail "both shards hold some" "$on0 / $on1"; fi

t_exit 0 "census with every shard up" -- "$B" -c "$C" properties --json --sample 1000
t_contains "$T_OUT" '"complete": true' "every entity read: complete"

sh "$SHARDS_SH" stop-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
t_exit 1 "census with s1 down exits 1" -- "$B" -c "$C" properties --json --sample 1000
t_contains "$T_OUT" '"complete": false' "with a shard left out it is not complete"
t_contains "$T_OUT" '"shards_unreachable": 1' "one shard left out"
t_contains "$T_OUT" "\"sampled\": $on0" "the answering shard's entities sampled"
t_contains "$T_ERR" "s1" "the error names the shard left out"
# shares are of what was sampled: k is on every entity read, so on 100%
# of them (not the share of the whole store's entities, ~50% here)
share() { # PROP: its present_share in $T_OUT
	printf '%s' "$T_OUT" | python3 -c 'import json,sys
print([p["present_share"] for p in json.load(sys.stdin)["properties"] if p["path"] == sys.argv[1]][0])' "$1"
}
t_eq "$(share k)" "1.0" "a property on every entity sampled is present on all of them (shard down)"
t_eq "$(share n)" "1.0" "and so is n"
t_exit 1 "census table with s1 down" -- "$B" -c "$C" properties --sample 1000
case $T_OUT in
*"(every one)"*) t_fail "the table does not claim every entity" "$(printf '%s' "$T_OUT" | head -1)" ;;
*) t_ok "the table does not claim every entity" ;;
esac
t_match "$(printf '%s' "$T_OUT" | head -1)" "of ~" "the entity count is marked as an estimate"
t_match "$T_OUT" "^k +int +[0-9]+% +100% " "the table gives k on 100% of the entities sampled (PRESENT)"
sh "$SHARDS_SH" start-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
t_exit 0 "census again once s1 is back" -- "$B" -c "$C" properties --json --sample 1000
t_contains "$T_OUT" '"complete": true' "complete again"

t_done

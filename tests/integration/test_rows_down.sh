#!/bin/sh
# test_rows_down.sh - issue 20's orphan without an intent: a single delete
# (and a put) whose entity's shard answers and whose index rows'
# shard does not (s1 paused, SIGSTOP). The write fails saying what it did
# (a delete says deleted), and its intent stays on the entity's shard, so
# that once s1 is back one `cleaner --once` makes the rows right and verify
# finds nothing. (write_entity removed the intent after a failed
# write_rows: the delete left s1's rows orphaned, no intent anywhere, and
# only the daemon's orphan sweep, much later, removed them.)
. tests/lib.sh

B=$BAGSTORE
T=$(t_tmp)
C=$T/c.yaml
# short timeouts: a paused shard is given up on quickly
sed 's/^timeouts:.*/timeouts: {connect: 1, read: 2, write: 2}/' "$BAGSTORE_TEST_CONFIG" >"$C"
trap 'sh "$SHARDS_SH" resume s1 --dir "$SHARDS_DIR" >/dev/null 2>&1' EXIT

t_exit 0 "reset" -- sh "$SHARDS_SH" reset --count 2 --dir "$SHARDS_DIR"
t_exit 0 "init" -- "$B" -c "$C" init
t_exit 0 "an index on u" -- "$B" -c "$C" index create by_u --on u:uuid --shard-on u
t_exit 0 "the cleaner makes it ready" -- "$B" -c "$C" cleaner --once

# ids: bucket = the id mod 4096; s0 owns the even buckets, s1 the odd ones.
# D and P live on s0 (bucket 2, 4), their users' rows on s1 (buckets 1, 3).
# D's id sorts after 600 others with rows on s1: a cleaner pass's orphan
# sweep (one batch of 500 rows per index) does not reach its row, only
# the intent can (as in a store of any size)
D=ffffffff000040008000000000000002
P=00000002000040008000000000000004
U1=00000003-0000-4000-8000-000000000001
U3=00000004-0000-4000-8000-000000000003
U5=00000005-0000-4000-8000-000000000005
uuid() { printf '%s' "$1" | sed 's/^\(........\)\(....\)\(....\)\(....\)/\1-\2-\3-\4-/'; }
printf '{"id":{"$uuid":"%s"},"u":{"$uuid":"%s"}}\n{"id":{"$uuid":"%s"},"u":{"$uuid":"%s"}}\n' \
	"$(uuid $D)" "$U1" "$(uuid $P)" "$U3" >"$T/two.jsonl"
t_exit 0 "put D and P" -- "$B" -c "$C" put "$T/two.jsonl"
awk -v u="$U1" 'BEGIN { for (n = 1; n <= 600; n++)
	printf "{\"id\":{\"$uuid\":\"%08x-0000-4000-8000-%012x\"},\"u\":{\"$uuid\":\"%s\"}}\n", n, n, u }' >"$T/many.jsonl"
t_exit 0 "put 600 more whose rows are on s1" -- "$B" -c "$C" put "$T/many.jsonl"
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM by_u WHERE entity_id<X'$D'")" 601 "601 rows on s1 sort before D's"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM entities WHERE id IN (X'$D',X'$P')")" 2 "D and P are on s0"
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM by_u WHERE entity_id IN (X'$D',X'$P')")" 2 "their index rows on s1"

# a delete's intent is a row per entity, a bulk put's (the CLI's put) a
# batch's; both tables counted
pending='SELECT (SELECT COUNT(*) FROM bagstore_intents)+(SELECT COUNT(*) FROM bagstore_batch_intents)'
intents() { echo "$(t_sql 0 "$pending") $(t_sql 1 "$pending")"; }
t_eq "$(intents)" "0 0" "no intent before"

# ------------------------------------------------------------ a delete
t_exit 0 "pause s1" -- sh "$SHARDS_SH" pause s1 --dir "$SHARDS_DIR"
t_exit 1 "delete D, s1 paused" -- "$B" -c "$C" delete "$D"
t_contains "$T_ERR" "entity $D is deleted, but its index rows are not" "it says the entity is deleted and its rows are not"
t_contains "$T_ERR" "s1" "it names the shard"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM entities WHERE id=X'$D'")" 0 "D is gone from s0"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_intents WHERE entity_id=X'$D'")" 1 "its intent stays on s0"
t_exit 0 "resume s1" -- sh "$SHARDS_SH" resume s1 --dir "$SHARDS_DIR"
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM by_u WHERE entity_id=X'$D'")" 1 "D's row is still on s1"
sleep 1.2 # the repair loop takes intents older than a second
t_exit 0 "one cleaner --once" -- "$B" -c "$C" cleaner --once
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM by_u WHERE entity_id=X'$D'")" 0 "it removed D's orphan row"
t_eq "$(intents)" "0 0" "and the intent"
t_exit 0 "verify: clean" -- "$B" -c "$C" verify

# ------------------------------------------------------------ a put
# (the CLI's put goes through bulk.c; tests/unit/test_rows_down.c does
# entity.c's single put and the console's conditional one)
printf '{"id":{"$uuid":"%s"},"u":{"$uuid":"%s"},"v":2}\n' "$(uuid $P)" "$U5" >"$T/p2.json"
t_exit 0 "pause s1" -- sh "$SHARDS_SH" pause s1 --dir "$SHARDS_DIR"
t_exit 1 "put P with a new user, s1 paused" -- "$B" -c "$C" put "$T/p2.json"
t_contains "$T_ERR" "are written, but some of their index rows are not" "it says the entity is written and its rows are not"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_batch_intents WHERE LOCATE(X'$P', ids) % 16 = 1")" 1 "its intent stays on s0"
t_exit 0 "resume s1" -- sh "$SHARDS_SH" resume s1 --dir "$SHARDS_DIR"
sleep 1.2
t_exit 0 "one cleaner --once" -- "$B" -c "$C" cleaner --once
t_eq "$(t_sql 1 "SELECT HEX(u) FROM by_u WHERE entity_id=X'$P'")" "$(printf '%s' "$U5" | tr -d - | tr a-f A-F)" "P's row is its new user's"
t_eq "$(intents)" "0 0" "no intent left"
t_exit 0 "verify: clean" -- "$B" -c "$C" verify
t_exit 0 "a query finds P by its new user" -- "$B" -c "$C" query by_u "u=$U5"
t_contains "$T_OUT" '"v":2' "P, as written"

# three lines (a blank one between) on s0 whose rows are on s1, paused:
# every entity is written and no line is to blame alone, so the error names
# the batch's lines, first to last
E6=00000006-0000-4000-8000-000000000006
E8=00000008-0000-4000-8000-000000000008
EA=0000000a-0000-4000-8000-00000000000a
printf '{"id":{"$uuid":"%s"},"u":{"$uuid":"%s"}}\n\n{"id":{"$uuid":"%s"},"u":{"$uuid":"%s"}}\n{"id":{"$uuid":"%s"},"u":{"$uuid":"%s"}}\n' \
	"$E6" "$U1" "$E8" "$U3" "$EA" "$U5" >"$T/p3.jsonl"
t_exit 0 "pause s1 again" -- sh "$SHARDS_SH" pause s1 --dir "$SHARDS_DIR"
t_exit 1 "put three, s1 paused" -- "$B" -c "$C" put "$T/p3.jsonl"
t_contains "$T_ERR" "p3.jsonl:1-4: " "the error names the batch's lines, 1 to 4"
t_eq "$(printf '%s\n' "$T_OUT" | grep -c .)" 3 "the three ids printed: written"
t_exit 0 "resume s1 again" -- sh "$SHARDS_SH" resume s1 --dir "$SHARDS_DIR"
sleep 1.2
t_exit 0 "cleaner --once" -- "$B" -c "$C" cleaner --once
t_eq "$(intents)" "0 0" "no intent left"
t_exit 0 "verify: clean" -- "$B" -c "$C" verify

t_done test_rows_down

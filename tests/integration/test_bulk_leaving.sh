#!/bin/sh
# test_bulk_leaving.sh - a bulk put during a reshard with another shard
# down: one entity on s0 whose bucket is `leaving` (its fast form refuses,
# its full form must write and log it) and one on s1, paused. s0's entity
# is written and logged for the move, s1's is reported failed, naming s1.
# Found in review: write_entities' loop stopped as soon as a shard failed
# without retry, before sending the full form it had just built for the
# leaving shard, so s0's entity was not written (and the error was s1's).
# Without an index and with one (the token's named lock, the index rows).
# The index rows' loop in bulk.c (send_rows) had the same shape: a target
# shard whose fast form was refused (its bucket leaving) did not get its
# full form when another target shard failed. entity.c's (index_flush, a
# single delete here) went on by accident (and sent the failed shard its
# statement again); its case here guards the rewritten loop.
. tests/lib.sh

B=$BAGSTORE
T=$(t_tmp)
C=$T/c.yaml
# short timeouts: a paused shard is given up on quickly
sed 's/^timeouts:.*/timeouts: {connect: 1, read: 2, write: 2}/' "$BAGSTORE_TEST_CONFIG" >"$C"
trap 'sh "$SHARDS_SH" resume s1 --dir "$SHARDS_DIR" >/dev/null 2>&1' EXIT

uuid() { printf '%s' "$1" | sed 's/^\(........\)\(....\)\(....\)\(....\)/\1-\2-\3-\4-/'; }

# ids: bucket = the id mod 4096; s0 owns the even buckets, s1 the odd ones.
# $1: a label; $2, $3: the ids on s0 (its bucket made leaving) and on s1;
# $4: the g of both (an int's index row lives in the bucket of its residue)
leaving_put() {
	what=$1 A=$2 Z=$3 g=$4
	bucket=$(printf '%d' "0x$(printf '%s' "$A" | cut -c30-32)")
	t_sql 0 "UPDATE bagstore_buckets SET state='leaving', move_id=7001 WHERE bucket=$bucket"
	printf '{"id":{"$uuid":"%s"},"g":%d}\n{"id":{"$uuid":"%s"},"g":%d}\n' \
		"$(uuid "$A")" "$g" "$(uuid "$Z")" "$g" >"$T/two.jsonl"
	t_exit 0 "$what: pause s1" -- sh "$SHARDS_SH" pause s1 --dir "$SHARDS_DIR"
	t_exit 1 "$what: a batch with an entity on each shard fails (s1 paused)" -- \
		"$B" -c "$C" put --batch 10 "$T/two.jsonl"
	t_contains "$T_ERR" "s1" "$what: the error names s1"
	t_contains "$T_OUT" "$A" "$what: s0's entity is reported written"
	case $T_OUT in *"$Z"*) t_fail "$what: s1's entity is not reported written" ;; *) t_ok "s1's not reported" ;; esac
	t_eq "$(t_sql 0 "SELECT COUNT(*) FROM entities WHERE id=X'$A'")" 1 "$what: s0's entity is written"
	t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_move_log WHERE move_id=7001 AND kind=0 AND id=X'$A'")" 1 \
		"$what: and logged for the move"
	t_exit 0 "$what: resume s1" -- sh "$SHARDS_SH" resume s1 --dir "$SHARDS_DIR"
	t_eq "$(t_sql 1 "SELECT COUNT(*) FROM entities WHERE id=X'$Z'")" 0 "$what: s1's entity is not written"
	t_sql 0 "UPDATE bagstore_buckets SET state='owned', move_id=0 WHERE bucket=$bucket"
	t_sql 0 "DELETE FROM bagstore_move_log"
}

t_exit 0 "reset" -- sh "$SHARDS_SH" reset --count 2 --dir "$SHARDS_DIR"
t_exit 0 "init" -- "$B" -c "$C" init

leaving_put "no index" 1eaf0001000040008000000000000002 1eaf0001000040008000000000000003 2

t_exit 0 "an index on g" -- "$B" -c "$C" index create ix_g --on g:int --shard-on g
t_exit 0 "the cleaner makes it ready" -- "$B" -c "$C" cleaner --once
# g=4: both entities' index rows on s0 (bucket 4, owned)
leaving_put "one index" 1eaf0002000040008000000000000002 1eaf0002000040008000000000000003 4
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM ix_g WHERE entity_id=X'1eaf0002000040008000000000000002'")" 1 \
	"one index: s0's entity's index row is written"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM ix_g WHERE entity_id=X'1eaf0002000040008000000000000003'")" 0 \
	"one index: s1's entity has none"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_batch_intents")" 0 "one index: s0's intent is settled"
t_exit 0 "verify: clean" -- "$B" -c "$C" verify

# ------------------------------------------------------------ index rows
# X and Y on s0 (buckets 8, 10, owned); X's row in bucket 6 (s0, made
# leaving), Y's in bucket 5 (s1, paused)
X=1eaf0005000040008000000000000008
Y=1eaf000500004000800000000000000a
t_sql 0 "UPDATE bagstore_buckets SET state='leaving', move_id=7001 WHERE bucket=6"
printf '{"id":{"$uuid":"%s"},"g":6}\n{"id":{"$uuid":"%s"},"g":5}\n' "$(uuid $X)" "$(uuid $Y)" >"$T/rows.jsonl"
t_exit 0 "rows: pause s1" -- sh "$SHARDS_SH" pause s1 --dir "$SHARDS_DIR"
t_exit 1 "rows: a batch whose index rows go to s0 (leaving) and s1 (paused) fails" -- \
	"$B" -c "$C" put --batch 10 "$T/rows.jsonl"
t_contains "$T_ERR" "index rows are not" "rows: it says the index rows are not written"
t_contains "$T_ERR" "s1" "rows: naming s1"
t_exit 0 "rows: resume s1" -- sh "$SHARDS_SH" resume s1 --dir "$SHARDS_DIR"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM ix_g WHERE entity_id=X'$X'")" 1 "rows: X's row on s0 is written all the same"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_move_log WHERE move_id=7001 AND kind=1 AND id=X'$X'")" 1 \
	"rows: and logged for the move (kind 1)"
t_sql 0 "UPDATE bagstore_buckets SET state='owned', move_id=0 WHERE bucket=6"
t_sql 0 "DELETE FROM bagstore_move_log"
sleep 1.2 # the repair loop takes intents older than a second
t_exit 0 "rows: the cleaner repairs Y's" -- "$B" -c "$C" cleaner --once
t_exit 0 "rows: verify: clean" -- "$B" -c "$C" verify

# one entity's delete (entity.c): D on s0 (bucket 12), its ix_g row in
# bucket 6 (s0, made leaving), its ix_h row in bucket 7 (s1, paused)
t_exit 0 "an index on h" -- "$B" -c "$C" index create ix_h --on h:int --shard-on h
t_exit 0 "the cleaner makes it ready" -- "$B" -c "$C" cleaner --once
D=1eaf000600004000800000000000000c
printf '{"id":{"$uuid":"%s"},"g":6,"h":7}\n' "$(uuid $D)" >"$T/d.json"
t_exit 0 "delete: put D" -- "$B" -c "$C" put "$T/d.json"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM ix_g WHERE entity_id=X'$D'") $(t_sql 1 "SELECT COUNT(*) FROM ix_h WHERE entity_id=X'$D'")" \
	"1 1" "delete: D's rows on s0 and s1"
t_sql 0 "UPDATE bagstore_buckets SET state='leaving', move_id=7001 WHERE bucket=6"
t_exit 0 "delete: pause s1" -- sh "$SHARDS_SH" pause s1 --dir "$SHARDS_DIR"
t_exit 1 "delete D, its rows on s0 (leaving) and s1 (paused)" -- "$B" -c "$C" delete "$D"
t_contains "$T_ERR" "is deleted, but its index rows are not" "delete: it says so"
t_contains "$T_ERR" "s1" "delete: naming s1"
t_exit 0 "delete: resume s1" -- sh "$SHARDS_SH" resume s1 --dir "$SHARDS_DIR"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM ix_g WHERE entity_id=X'$D'")" 0 "delete: D's row on s0 is removed all the same"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_move_log WHERE move_id=7001 AND kind=1 AND id=X'$D'")" 1 \
	"delete: and logged for the move (kind 1)"
t_sql 0 "UPDATE bagstore_buckets SET state='owned', move_id=0 WHERE bucket=6"
sleep 1.2
t_exit 0 "delete: the cleaner repairs D's row on s1" -- "$B" -c "$C" cleaner --once
t_exit 0 "delete: verify: clean" -- "$B" -c "$C" verify

t_done test_bulk_leaving

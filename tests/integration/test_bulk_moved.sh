#!/bin/sh
# test_bulk_moved.sh - a bulk put whose batch meets a shard that refuses
# (the bucket of one of its entities moved away: `gone` there, owned by a
# third shard, while the writer's map still names the first) and another
# shard that fails (paused). The refused entity must follow its bucket to
# the shard that owns it now and be written there; the failed shard's is
# reported not written, naming that shard. (Before, the round stopped at
# the failed shard's error, and the refused entity, which could have been
# written, was reported not written.) Without an index, and with one whose
# rows fail on the paused shard too; the repair loop then settles what the
# failure left. Three shards: the two test shards and one of its own
# (shard 0's port + 2, under t_servers bulk-moved).
. tests/lib.sh
T=$(t_tmp)
B=$BAGSTORE
P0=$(t_port 0)
P1=$(t_port 1)
XP=$((P0 + 2))
XD=$(t_servers bulk-moved)
T_TIMEOUT=180

stop_all() {
	sh "$SHARDS_SH" resume s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
	sh "$SHARDS_SH" stop --dir "$XD" >/dev/null 2>&1
}
trap stop_all EXIT
trap 'stop_all; exit 130' INT TERM
t_exit 0 "a third shard" -- t_start_servers 1 "$XP" "$XD"
[ "$T_FAILED" = 0 ] || t_done test_bulk_moved
t_exit 0 "reset it" -- sh "$SHARDS_SH" reset --count 1 --dir "$XD"
C=$T/c3.yaml
{
	echo "shards:"
	echo "  - {name: s0, host: 127.0.0.1, port: $P0, database: bagstore, user: root}"
	echo "  - {name: s1, host: 127.0.0.1, port: $P1, database: bagstore, user: root}"
	echo "  - {name: s2, host: 127.0.0.1, port: $XP, database: bagstore, user: root}"
	# short timeouts: the paused shard is given up on quickly
	echo "timeouts: {connect: 1, read: 2, write: 2}"
	echo "catalog_ttl: 1"
} >"$C"
q() {
	case $1 in 0) p=$P0 ;; 1) p=$P1 ;; 2) p=$XP ;; esac
	timeout 30 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$p" -u root -N -B bagstore -e "$2"
}
t_exit 0 "init, three shards" -- "$B" -c "$C" init
nb=$(q 0 "SELECT buckets FROM bagstore_map ORDER BY version DESC LIMIT 1")
t_eq "$nb" 6144 "a new map of three shards has 6144 buckets, s(b mod 3) owning b"
uuid() { printf '%s' "$1" | sed 's/^\(........\)\(....\)\(....\)\(....\)/\1-\2-\3-\4-/'; }
bucket() { python3 -c "print(int('$1', 16) % $nb)"; }
pick() { # $1: an id prefix, $2: the residue mod 3 wanted (its shard), $3: the first n tried; the bucket not $4
	for n in $(seq "$3" $(($3 + 30))); do
		id=$(printf '%s%06x' "$1" "$n")
		bk=$(bucket "$id")
		[ "$((bk % 3))" = "$2" ] && [ "$bk" != "$4" ] && { echo "$id"; return; }
	done
}
# The bucket $1 moved from s0 to s2 (gone on s0, owned on s2, the map not
# yet published, as a cut-over leaves it for a moment), and back: no move
# published its new owner, so readers would find it moving for ever; the
# entity $2 written there goes with it.
move_bucket() {
	q 0 "UPDATE bagstore_buckets SET state='gone', peer='s2' WHERE bucket=$1"
	q 2 "INSERT INTO bagstore_buckets (bucket, state) VALUES ($1, 'owned') ON DUPLICATE KEY UPDATE state='owned', peer=''"
}
undo_move() {
	q 2 "DELETE FROM entities WHERE id=X'$2'"
	q 2 "DELETE FROM bagstore_buckets WHERE bucket=$1"
	q 0 "UPDATE bagstore_buckets SET state='owned', peer='' WHERE bucket=$1"
}
# paused_put LABEL FILE: with s1 paused, the put of FILE fails, naming s1
paused_put() {
	t_exit 0 "pause s1$1" -- sh "$SHARDS_SH" pause s1 --dir "$SHARDS_DIR"
	t_exit 1 "$2" -- "$B" -c "$C" put --batch 10 "$3"
	t_contains "$T_ERR" "s1" "$4the error names s1"
}
# A: on s0 by the map, its bucket moved to s2; Z: on s1
A=$(pick 1eaf0006000040008000000000 0 1 -1)
Z=$(pick 1eaf0006000040008000000000 1 11 -1)
t_eq "$([ -n "$A" ] && [ -n "$Z" ] && echo found)" found "ids on s0 and on s1"
b=$(bucket "$A")
move_bucket "$b"
printf '{"id":{"$uuid":"%s"},"g":1}\n{"id":{"$uuid":"%s"},"g":2}\n' "$(uuid "$A")" "$(uuid "$Z")" >"$T/two.jsonl"

paused_put "" "a batch with an entity on s1 (paused) fails" "$T/two.jsonl" ""
t_contains "$T_OUT" "$A" "the refused entity, sent where its bucket went, is reported written"
t_eq "$(printf '%s\n' "$T_OUT" | grep -c "$Z")" 0 "s1's entity is not reported written"
t_eq "$(q 2 "SELECT COUNT(*) FROM entities WHERE id=X'$A'")" 1 "the refused entity is on s2, its bucket's owner"
t_eq "$(q 0 "SELECT COUNT(*) FROM entities WHERE id=X'$A'")" 0 "and not on s0, which refused it"
t_exit 0 "resume s1" -- sh "$SHARDS_SH" resume s1 --dir "$SHARDS_DIR"
t_eq "$(q 1 "SELECT COUNT(*) FROM entities WHERE id=X'$Z'")" 0 "s1's entity is not written"
undo_move "$b" "$A"

# With an index on g (an int's row lives in the bucket of its residue: g=0
# on s0, g=1 on s1): W, on s2 and written there at once, has its index row
# on s1, paused, so the first round's index rows fail too; A2 (on s0 by
# the map, its bucket moved to s2: s0 refuses) must still follow its
# bucket, its row (g=0) on s0; Z2 on s1 fails. Once s1 is back the repair
# loop makes W's row, and verify is clean.
t_exit 0 "an index on g" -- "$B" -c "$C" index create ix_g --on g:int --shard-on g
t_exit 0 "the cleaner makes it ready" -- "$B" -c "$C" cleaner --once
P7=1eaf0007000040008000000000
A2=$(pick $P7 0 1 "$b")
b2=$(bucket "$A2")
W=$(pick $P7 2 40 -1)
Z2=$(pick $P7 1 80 -1)
t_eq "$([ -n "$A2" ] && [ -n "$W" ] && [ -n "$Z2" ] && echo found)" found "ids for the index case"
move_bucket "$b2"
printf '{"id":{"$uuid":"%s"},"g":1}\n{"id":{"$uuid":"%s"},"g":0}\n{"id":{"$uuid":"%s"},"g":0}\n' \
	"$(uuid "$W")" "$(uuid "$A2")" "$(uuid "$Z2")" >"$T/three.jsonl"
paused_put " again" "one index: the batch fails (s1 paused: an entity, an index row)" "$T/three.jsonl" "one index: "
t_contains "$T_OUT" "$W" "one index: W, written on s2, is reported written"
t_contains "$T_OUT" "$A2" "one index: the refused entity, sent where its bucket went, is reported written"
t_eq "$(printf '%s\n' "$T_OUT" | grep -c "$Z2")" 0 "one index: s1's entity is not reported written"
t_eq "$(q 2 "SELECT COUNT(*) FROM entities WHERE id=X'$A2'")" 1 "one index: the refused entity is on s2"
t_eq "$(q 0 "SELECT COUNT(*) FROM ix_g WHERE entity_id=X'$A2'")" 1 "one index: and its row on s0"
t_exit 0 "resume s1 again" -- sh "$SHARDS_SH" resume s1 --dir "$SHARDS_DIR"
t_eq "$(q 1 "SELECT COUNT(*) FROM entities WHERE id=X'$Z2'")" 0 "one index: s1's entity is not written"
undo_move "$b2" "$A2"
q 0 "DELETE FROM ix_g WHERE entity_id=X'$A2'"
t_exit 0 "the repair loop settles what the failure left" -- "$B" -c "$C" cleaner --once
t_eq "$(q 1 "SELECT COUNT(*) FROM ix_g WHERE entity_id=X'$W'")" 1 "one index: W's row is on s1 now"
t_exit 0 "verify: clean" -- "$B" -c "$C" verify
t_done test_bulk_moved

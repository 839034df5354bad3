#!/bin/sh
# test_move_log_race.sh - a move's catch-up deletes a change-log row only
# if no write counted it up (`n`) since the round read it, driven through
# that interleaving on every run, not by chance:
#
#   1. a drain of s1 into s0 (2 shards), its mover killed after its first
#      copy chunk (fault move_kill_copy): s1's buckets stay `leaving`;
#   2. entity E, in one of them, put with v=1: the write logs it (n);
#   3. a writer's transaction of our own, as a put's full form runs it (the
#      bucket's ownership row under a share lock, E's row rewritten with
#      v=2, its log row counted up: n=n+1), left open;
#   4. the mover restarted: its catch-up reads E's log row (the old n) and
#      E (v=1: the writer has not committed), copies it to s0, then its
#      DELETE of that log row waits for our writer's lock;
#   5. once the DELETE waits (seen in s1's processlist), our writer commits:
#      the DELETE must leave the row (its n moved on), so a later round
#      copies v=2. Without the n check it deletes it, the move cuts over
#      with v=1 on s0, and the acknowledged v=2 is lost.
#
# Afterwards E reads back v=2 from s0, the log is empty, and verify finds
# no drift.
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
T=$(t_tmp)
T_TIMEOUT=120
P1=$(t_port 1)
CD=$T/drain.yaml
sed '/name: s1,/s/}[[:space:]]*$/, drain: true}/' "$C" >"$CD"
TXPID="" MVPID=""
stop_all() {
	[ -n "$MVPID" ] && kill "$MVPID" 2>/dev/null
	[ -n "$TXPID" ] && kill "$TXPID" 2>/dev/null
	exec 3>&- 2>/dev/null
}
trap stop_all EXIT

uuid() { printf '%s' "$1" | sed 's/^\(........\)\(....\)\(....\)\(....\)/\1-\2-\3-\4-/'; }

t_contains "$(cat "$CD")" "drain: true" "a configuration draining s1"
t_exit 0 "init" -- "$B" -c "$C" init
awk 'BEGIN { for (i = 1; i <= 400; i++) printf "{\"id\":{\"$uuid\":\"9c000000-0000-4000-8000-%012d\"},\"v\":0}\n", i }' >"$T/e.jsonl"
t_exit 0 "put 400 entities" -- "$B" -c "$C" put --batch 100 "$T/e.jsonl"

# 1. the drain, its mover killed in copy
t_exit 0 "plan a drain of s1" -- "$B" -c "$CD" reshard plan
t_match "$T_OUT" '^s1 +s0 ' "s1 gives its buckets to s0"
t_exit 0 "start it" -- "$B" -c "$CD" reshard start --yes
BAGSTORE_FAULT=move_kill_copy t_exit 75 "the mover killed after its first copy chunk" -- "$B" -c "$CD" cleaner --reshard
bucket=$(t_sql 1 "SELECT MIN(bucket) FROM bagstore_buckets WHERE state='leaving'")
t_match "$bucket" '^[0-9]+$' "s1's buckets are leaving"
move=$(t_sql 1 "SELECT move_id FROM bagstore_buckets WHERE bucket=$bucket")

# 2. E in that bucket (the id mod 4096), put with v=1: logged
E=$(printf '9c00000000004000800000000001%04x' "$bucket")
printf '{"id":{"$uuid":"%s"},"v":1}\n' "$(uuid "$E")" >"$T/v1.jsonl"
t_exit 0 "put E (v=1) in a leaving bucket" -- "$B" -c "$CD" put "$T/v1.jsonl"
n0=$(t_sql 1 "SELECT n FROM bagstore_move_log WHERE move_id=$move AND kind=0 AND id=X'$E'")
t_match "$n0" '^[0-9]+$' "E's write is in s1's change log"

# v=2's body: E's own with 1 made 2 (the body holds the properties, not the id)
body1=$(t_sql 1 "SELECT HEX(body) FROM entities WHERE id=X'$E'")
printf '{"id":{"$uuid":"%s"},"v":2}\n' "$(uuid "$E")" >"$T/v2.jsonl"
t_exit 0 "encode v=2 (put into a scratch store)" -- sh -c "
	timeout 30 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P $P1 -u root \
		-e 'DROP DATABASE IF EXISTS bs_race_scratch; CREATE DATABASE bs_race_scratch' &&
	sed 's/database: bagstore/database: bs_race_scratch/' '$C' | sed '/name: s0,/d' >'$T/scratch.yaml' &&
	'$B' -c '$T/scratch.yaml' init >/dev/null && '$B' -c '$T/scratch.yaml' put '$T/v2.jsonl' >/dev/null &&
	timeout 30 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P $P1 -u root -N -B bs_race_scratch \
		-e \"SELECT HEX(body) FROM entities WHERE id=X'$E'\""
body2=$T_OUT
timeout 30 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$P1" -u root -e 'DROP DATABASE IF EXISTS bs_race_scratch'
if [ -n "$body2" ] && [ "$body2" != "$body1" ]; then t_ok "v=2's body differs from v=1's"; else t_fail "v=2's body differs from v=1's" "v1 $body1" "v2 $body2"; fi

# 3. our writer's transaction on s1, left open
mkfifo "$T/tx.in"
timeout 100 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$P1" -u root -n -N -B bagstore \
	<"$T/tx.in" >"$T/tx.out" 2>"$T/tx.err" &
TXPID=$!
exec 3>"$T/tx.in"
cat >&3 <<EOF
START TRANSACTION;
SELECT state FROM bagstore_buckets WHERE bucket=$bucket LOCK IN SHARE MODE;
UPDATE entities SET body=X'$body2', updated=NOW(6) WHERE id=X'$E';
INSERT INTO bagstore_move_log (move_id, kind, id) SELECT move_id, 0, X'$E' FROM bagstore_buckets
  WHERE bucket=$bucket AND state='leaving' ON DUPLICATE KEY UPDATE n=n+1;
SELECT 'held';
EOF
k=0
while [ $k -lt 200 ] && ! grep -q '^held$' "$T/tx.out"; do sleep 0.1; k=$((k + 1)); done
t_eq "$(head -n 1 "$T/tx.out")" "leaving" "our writer holds the leaving bucket's ownership row"
t_contains "$(cat "$T/tx.out")" "held" "our writer's E (v=2) and counted-up log row, uncommitted"

# 4. the mover again, until its DELETE of the log waits for our writer
"$B" -c "$CD" cleaner --reshard >"$T/mover.out" 2>"$T/mover.err" &
MVPID=$!
waiting=""
k=0
while [ $k -lt 600 ]; do
	waiting=$(t_sql 1 "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'DELETE FROM bagstore_move_log%'")
	[ "$waiting" = 1 ] && break
	kill -0 "$MVPID" 2>/dev/null || break
	sleep 0.1
	k=$((k + 1))
done
t_eq "$waiting" 1 "the catch-up's DELETE of the log waits for our writer"
t_eq "$(t_sql 0 "SELECT HEX(body) FROM entities WHERE id=X'$E'")" "$body1" "the round copied E as it read it (v=1) to s0"

# 5. our writer commits; the mover goes on
printf 'COMMIT;\n' >&3
exec 3>&-
wait "$TXPID"
t_eq "$?" 0 "our writer committed"
TXPID=""
wait "$MVPID"
t_eq "$?" 0 "the mover finishes"
MVPID=""
t_contains "$(cat "$T/mover.out")" "reshard done" "the drain is done"
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM bagstore_buckets WHERE state IN ('owned','leaving')")" 0 "s1 owns no bucket"
t_eq "$(t_sql 0 "SELECT HEX(body) FROM entities WHERE id=X'$E'")" "$body2" "E on s0 is v=2, the write committed after the round read it"
t_exit 0 "get E" -- "$B" -c "$CD" get "$E"
t_contains "$T_OUT" '"v":2' "E reads back v=2"
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM bagstore_move_log")" 0 "no change log left"
t_exit 0 "verify" -- "$B" -c "$CD" verify

t_done test_move_log_race

#!/bin/sh
# test_bulk_trips.sh - a bulk put with no index writes each shard's
# entities first as one fenced INSERT in autocommit (each row naming its
# bucket, checked by InnoDB against bagstore_owned, the whole statement
# refused unless every bucket is simply owned there):
#  - its rows carry their buckets, in ascending bucket order (a move's
#    first step deletes the buckets' parent rows in that order), their
#    versions a microsecond apart in input order; a move's first step
#    (its buckets marked leaving) waits for it and it for that step; once
#    the bucket is leaving it is refused and the full form writes the batch
#    and logs the leaving bucket's entity for the move;
#  - a bucket owned in bagstore_buckets but missing from bagstore_owned
#    (drift the cleaner's check mends) refuses it too: the two-trip form
#    then writes the batch, nothing lost.
# The two-trip form (after a refusal; fault bulk_no_fk takes it first): the
# first takes the fence (the buckets' ownership rows share-locked, the
# transaction's NOW(6) answered); the second writes, each version a literal
# from that NOW(6), and commits. The window between the two:
#  - the process stopped there holds the fence (a cut-over's write of an
#    ownership row waits), and SIGKILLed there it leaves nothing written
#    and the fence released;
#  - stopped there longer than the stamp's budget (BS__BULK_STAMP_BUDGET_S,
#    3.5 s), its stamp is not used: the batch is rolled back and sent again,
#    every version from the new fence's time;
#  - the connection lost there: the second trip, on a new session, writes
#    nothing and says so (its fence is not that session's), and the batch
#    goes again: every entity written, each printed.
# Planting a bug that trusts the first trip's answer instead of asking the
# second's loses the first shard's entities here while printing their ids.
# (With an index the put is one round trip: see bulk.c's entity_sql.)
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
T=$(t_tmp)

t_exit 0 "init" -- "$B" -c "$C" init
# bags N F: N bags, the i-th with id %08x-0000-4000-8000-00000000F%03x
# (i, i) and g = i
bags() {
	python3 -c 'import json, sys
n, f = int(sys.argv[1]), sys.argv[2]
for i in range(n):
    print(json.dumps({"id": {"$uuid": "%08x-0000-4000-8000-00000000%s%03x" % (i, f, i)}, "g": i}))' "$@"
}
# on_both SQL: the sum of a count on both shards
on_both() {
	echo $(($(t_sql 0 "$1") + $(t_sql 1 "$1")))
}
# count F: the entities of bags N F on both shards
count() {
	on_both "SELECT COUNT(*) FROM entities WHERE HEX(id) LIKE '%00000000$1___'"
}

# bucket_of F I: the bucket of bags N F's I-th bag; shard_of BUCKET: the
# shard that owns it (0 or 1)
bucket_of() {
	python3 -c "import sys; i = int(sys.argv[2]); print(int('%08x' % i + '0000' '4000' '8000' '00000000' + sys.argv[1] + '%03x' % i, 16) % int(sys.argv[3]))" \
		"$1" "$2" "$(t_sql 0 "SELECT buckets FROM bagstore_map ORDER BY version DESC LIMIT 1")"
}
shard_of() {
	if [ "$(t_sql 0 "SELECT state FROM bagstore_buckets WHERE bucket=$1")" = owned ]; then echo 0; else echo 1; fi
}

# ------------------------------------------------------------ the fenced INSERT
bags 200 e >"$T/e.jsonl"
t_exit 0 "a put of 200 bags, no index" -- "$B" -c "$C" put --batch 200 "$T/e.jsonl"
t_eq "$(printf '%s\n' "$T_OUT" | grep -c .)" 200 "prints every id"
t_eq "$(count e)" 200 "writes every entity"
t_eq "$(on_both "SELECT COUNT(*) FROM entities WHERE HEX(id) LIKE '%00000000e___' AND bucket IS NULL")" 0 \
	"each row names its bucket: the fenced INSERT wrote them (the other forms leave it NULL)"
ordered="SELECT COUNT(*) FROM (SELECT id, updated, LAG(updated) OVER (ORDER BY RIGHT(HEX(id), 3)) p FROM entities
	WHERE HEX(id) LIKE '%00000000e___') x WHERE p IS NOT NULL AND updated <= p"
t_eq "$(($(t_sql 0 "$ordered") + $(t_sql 1 "$ordered")))" 0 "each shard's versions grow in input order"
# the statements as sent (--trace): each shard's rows in ascending bucket
# order, the last value of each row
bags 12 9 >"$T/o.jsonl"
t_exit 0 "a traced put of 12 bags" -- "$B" -c "$C" --trace put --batch 12 "$T/o.jsonl"
t_eq "$(printf '%s\n' "$T_ERR" | grep 'INSERT INTO entities (id, updated, body, bucket) VALUES' | python3 -c '
import re, sys
rows = bad = 0
for line in sys.stdin:
    b = [int(x) for x in re.findall(r",([0-9]+)\)", line.split(" ON DUPLICATE KEY")[0])]
    rows += len(b)
    bad += b != sorted(b)
print(rows, bad)')" "12 0" "each shard's fenced INSERT sends its rows in ascending bucket order"

# a move's first step on a bucket (marked leaving, its parent rows
# deleted), in flight: the put's check of that bucket waits for it, and
# once it commits the put is refused there and the full form writes and
# logs it
bk=$(bucket_of f 0)
s=$(shard_of "$bk")
bags 200 f >"$T/f.jsonl"
# the change held open by a client reading its statements from a fifo,
# committed once the put is seen waiting on it
mkfifo "$T/hold.fifo"
timeout 120 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$(t_port $s)" -u root bagstore <"$T/hold.fifo" >/dev/null 2>&1 &
holder=$!
exec 3>"$T/hold.fifo"
echo "START TRANSACTION; SET STATEMENT foreign_key_checks=0 FOR UPDATE bagstore_buckets SET state='leaving', peer='s9', move_id=9101 WHERE bucket=$bk;" >&3
holding() { [ "$(t_sql $s "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_rows_modified > 0")" = 1 ]; }
t_wait 20 holding || t_fail "a move's first step on bucket $bk is in flight"
"$B" -c "$C" put --batch 200 "$T/f.jsonl" >"$T/f.out" 2>"$T/f.err" &
p=$!
waiting() { [ "$(t_sql $s "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state='LOCK WAIT'")" -ge 1 ]; }
if t_wait 30 waiting; then t_ok "the put waits on the change"; else t_fail "the put waits on the change"; fi
t_eq "$(t_sql $s "SELECT COUNT(*) FROM entities WHERE HEX(id) LIKE '%00000000f___'")" 0 \
	"while it is in flight, nothing of the batch on s$s is written"
echo "COMMIT;" >&3
exec 3>&-
wait $holder
wait $p
t_eq "$?" 0 "the put succeeds once that step committed"
t_eq "$(count f)" 200 "every entity written"
t_eq "$(t_sql $s "SELECT COUNT(*) FROM bagstore_move_log WHERE move_id=9101 AND id=X'0000000000004000800000000000f000'")" 1 \
	"the leaving bucket's entity is logged for its move"
t_sql $s "SET STATEMENT foreign_key_checks=0 FOR UPDATE bagstore_buckets SET state='owned', peer='', move_id=0 WHERE bucket=$bk;
	DELETE FROM bagstore_move_log WHERE move_id=9101"
t_eq "$(t_sql $s "SELECT COUNT(*) FROM bagstore_owned WHERE bucket=$bk")" 2 "bucket $bk owned again"

# drift: bucket owned, its bagstore_owned rows missing
bk=$(bucket_of b 0)
s=$(shard_of "$bk")
t_sql $s "SET STATEMENT foreign_key_checks=0 FOR DELETE FROM bagstore_owned WHERE bucket=$bk"
bags 200 b >"$T/b.jsonl"
t_exit 0 "a put whose fenced INSERT is refused by drift in bagstore_owned" -- "$B" -c "$C" put --batch 200 "$T/b.jsonl"
t_eq "$(count b)" 200 "the two-trip form writes every entity"
t_eq "$(t_sql $s "SELECT COUNT(*) FROM entities WHERE HEX(id) LIKE '%00000000b___' AND bucket IS NOT NULL")" 0 \
	"none of s$s's by the fenced INSERT (refused as a whole)"
t_sql $s "INSERT INTO bagstore_owned (bucket, flip) VALUES ($bk, 0), ($bk, 1)"

# past its time limit (max_statement_time, BS__BULK_FK_MAX_S = 3 s): a
# trigger on s0 makes each fenced row of these bags (the only form that
# names its bucket) sleep 2 s. The statement is stopped, writes nothing,
# and the two-trip form writes the batch; the next batch, sent 6 s later
# by the same process, skips the fenced INSERT on s0 (a second batch
# likely as large would cost the server as long again), not on s1.
t_sql 0 "CREATE TRIGGER test_slow_fk BEFORE INSERT ON entities FOR EACH ROW
	SET @test_slept = IF(NEW.bucket IS NOT NULL AND HEX(NEW.id) LIKE '%000000007___', SLEEP(2), 0)"
# 2 bags owned by s0 and 1 by s1 in each of two batches of 3
owned0=$(t_sql 0 "SELECT GROUP_CONCAT(bucket) FROM bagstore_buckets WHERE state='owned'")
python3 -c 'import json, sys
nb, own = int(sys.argv[1]), set(int(x) for x in sys.argv[2].split(","))
uid = lambda i: "%08x-0000-4000-8000-000000007%03x" % (i, i)
on0 = [i for i in range(400) if int(uid(i).replace("-", ""), 16) % nb in own][:4]
on1 = [i for i in range(400) if int(uid(i).replace("-", ""), 16) % nb not in own][:2]
for i in on0[:2] + on1[:1] + on0[2:] + on1[1:]:
    print(json.dumps({"id": {"$uuid": uid(i)}, "g": i}))' \
	"$(t_sql 0 "SELECT buckets FROM bagstore_map ORDER BY version DESC LIMIT 1")" "$owned0" >"$T/t7.jsonl"
mkfifo "$T/t7.fifo"
{ head -3 "$T/t7.jsonl"; sleep 6; tail -3 "$T/t7.jsonl"; } >"$T/t7.fifo" &
T_IN="$T/t7.fifo" t_exit 0 "a put whose fenced INSERT on s0 runs past its time limit" -- "$B" -c "$C" --trace put --batch 3 -
wait $!
t_eq "$(count 7)" 6 "the two-trip form writes every entity"
t_eq "$(on_both "SELECT COUNT(*) FROM entities WHERE HEX(id) LIKE '%000000007___' AND bucket IS NOT NULL")" 2 \
	"s0's stopped statement wrote nothing (s1's two went fenced)"
fenced() { printf '%s\n' "$T_ERR" | grep "^trace: $1 .*INSERT INTO entities (id, updated, body, bucket) VALUES" | grep -c .; }
t_eq "$(fenced s0)" 1 "the next batch skips the fenced INSERT on s0"
t_eq "$(fenced s1)" 2 "but not on s1"
t_contains "$T_ERR" "1969" "the trace shows the statement stopped by its time limit"
t_sql 0 "DROP TRIGGER test_slow_fk"

# ------------------------------------------------------------ a new session between the trips
bags 200 a >"$T/a.jsonl"
BAGSTORE_FAULT=bulk_no_fk,bulk_new_session t_exit 0 "a put whose first shard's connection is lost between the trips" -- \
	"$B" -c "$C" put --batch 200 "$T/a.jsonl"
t_contains "$T_ERR" "fault bulk_new_session: shard s" "the connection was closed there"
t_eq "$(printf '%s\n' "$T_OUT" | grep -c .)" 200 "prints every id"
t_eq "$(count a)" 200 "and every entity is written"

# ------------------------------------------------------------ stopped, then SIGKILLed, between the trips
bags 200 c >"$T/c.jsonl"
BAGSTORE_FAULT=bulk_no_fk,pause_between_bulk_trips "$B" -c "$C" put --batch 200 "$T/c.jsonl" >"$T/c.out" 2>"$T/c.err" &
p=$!
t_eq "$(t_stopped $p)" 1 "the put stopped between its trips"
t_eq "$(count c)" 0 "nothing of its batch is written"
# the first bag's bucket, on the shard that owns it: its ownership row is
# share-locked by the stopped put's fence
nb=$(t_sql 0 "SELECT buckets FROM bagstore_map ORDER BY version DESC LIMIT 1")
bk=$(python3 -c "print(int('00000000' '0000' '4000' '8000' '00000000c000', 16) % $nb)")
s=0
[ "$(t_sql 0 "SELECT state FROM bagstore_buckets WHERE bucket=$bk")" = owned ] || s=1
t_eq "$(t_sql $s "SELECT state FROM bagstore_buckets WHERE bucket=$bk")" owned "bucket $bk is s$s's"
touch_row="SET SESSION innodb_lock_wait_timeout=1; UPDATE bagstore_buckets SET state=state WHERE bucket=$bk"
t_exit 1 "a write of its ownership row waits on the fence" -- t_sql $s "$touch_row"
t_contains "$T_ERR" "Lock wait timeout" "and times out"
kill -9 $p
wait $p 2>/dev/null
t_eq "$(count c)" 0 "SIGKILLed there, nothing of its batch is written"
t_exit 0 "the fence went with its connection" -- t_sql $s "$touch_row"
t_exit 0 "the same put again" -- "$B" -c "$C" put --batch 200 "$T/c.jsonl"
t_eq "$(count c)" 200 "writes every entity"

# ------------------------------------------------------------ stopped past the stamp's budget
bags 200 d >"$T/d.jsonl"
BAGSTORE_FAULT=bulk_no_fk,pause_between_bulk_trips "$B" -c "$C" put --batch 200 "$T/d.jsonl" >"$T/d.out" 2>"$T/d.err" &
p=$!
t_eq "$(t_stopped $p)" 1 "a put stopped between its trips"
sleep 4.5
resumed=$(t_sql 0 "SELECT UNIX_TIMESTAMP(NOW(6))")
kill -CONT $p
wait $p
t_eq "$?" 0 "resumed past the budget, it succeeds"
t_eq "$(grep -c . "$T/d.out")" 200 "prints every id"
t_eq "$(count d)" 200 "and writes every entity"
t_eq "$(on_both "SELECT COUNT(*) FROM entities WHERE HEX(id) LIKE '%00000000d___' AND UNIX_TIMESTAMP(updated) < $resumed")" 0 \
	"each version from a fence taken after it resumed, not the stale one"

t_done test_bulk_trips

#!/bin/sh
# test_fence.sh - the fast form's fence, on real servers: a single write
# names its entity's bucket, and InnoDB checks (bucket, flip) against
# bagstore_owned, whose rows the triggers on bagstore_buckets keep to the
# buckets that are 'owned' there, whoever changes them. The fenced
# statement is sent here by hand, as entity.c writes it;
# tests/unit/test_leaving_log.c sends it through the library.
#  - init leaves two parent rows for each owned bucket and none for any other;
#  - a fenced write stores its bucket, and each overwrite turns its flip
#    (checked again); one into a bucket not owned there is refused (1452);
#  - a plain UPDATE, INSERT or DELETE of bagstore_buckets (an operator's,
#    an older bagstore's) takes a bucket's parent rows away or gives them
#    back, leaving the session's foreign-key checks on;
#  - a cut-over's UPDATE waits for a fenced write that holds the parent
#    row, and sees its row once it goes on; a write that comes while a
#    cut-over holds the bucket waits for it, then is refused;
#  - a cleaner's pass finds parent rows out of step (stray, lacking),
#    says so and brings them in line, and says when a trigger is missing;
#    it mends them before it tries the triggers, whose try gives up after
#    a second's lock wait, and whether or not the catalog can be read;
#  - a shard with an older layout (schema version 3: no parent table, no
#    triggers, no fence columns) is refused until init, which adds them and
#    keeps every row; a fenced write then sets an old row's bucket;
#  - a replica of a primary whose binary log is in ROW format keeps
#    applying it through a reshard that moves buckets with fenced rows off
#    the primary (the mover's statement turns the check off, so the
#    replica deletes their parent rows too), the trigger that would take
#    the leaving buckets' parent rows away missing on the primary (the
#    move's step takes them itself), then through a drain of the primary
#    with the trigger there (the replica applies the trigger's delete
#    with the mover's check-off); a plain UPDATE without the check off
#    stops such a replica, which is why.
. tests/lib.sh

T=$(t_tmp)
CFG=$BAGSTORE_TEST_CONFIG
B=$BAGSTORE
t_exit 0 "init" -- "$B" -c "$CFG" init

in_line() { # shard s: bagstore_owned is exactly rows (b, 0) and (b, 1) for each owned bucket b
	t_eq "$(t_sql "$1" "SELECT COUNT(*) FROM bagstore_buckets b WHERE b.state='owned' AND (SELECT GROUP_CONCAT(flip ORDER BY flip) FROM bagstore_owned o WHERE o.bucket=b.bucket) <=> '0,1' = 0")" \
		0 "s$1 $2: two parent rows an owned bucket"
	t_eq "$(t_sql "$1" "SELECT COUNT(*) FROM bagstore_owned o LEFT JOIN bagstore_buckets b ON b.bucket=o.bucket AND b.state='owned' WHERE b.bucket IS NULL")" 0 \
		"s$1 $2: none for a bucket not owned"
}
in_line 0 "after init"
in_line 1 "after init"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA=DATABASE() AND CONSTRAINT_NAME='bagstore_fence' AND TABLE_NAME='entities' AND REFERENCED_TABLE_NAME='bagstore_owned'")" 1 \
	"entities' fence: a foreign key to bagstore_owned"

# The fast form's fence, as entity.c sends it (its SET STATEMENT, its
# columns, its key's update; not the version's), by hand: entity ID
# into bucket BK on shard S; SQL after it in the same session (a
# transaction held open, say).
BS__FENCED="SET STATEMENT foreign_key_checks=1, innodb_lock_wait_timeout=3, lock_wait_timeout=3 FOR"
fenced() { # S ID BK [SQL-AFTER]
	t_sql "$1" "${4:+START TRANSACTION;} $BS__FENCED INSERT INTO entities (id, updated, body, bucket) VALUES (X'$2', NOW(6), X'00', $3) ON DUPLICATE KEY UPDATE body=VALUES(body), bucket=VALUES(bucket), flip=1-flip${4:+; $4}"
}
S=0
BK=$(t_sql 0 "SELECT MIN(bucket) FROM bagstore_buckets WHERE state='owned'")
E1=f0000000000040008000000000000001
fenced 0 "$E1" "$BK"
t_eq "$(t_sql 0 "SELECT CONCAT(bucket, '/', flip) FROM entities WHERE id=X'$E1'")" "$BK/0" "a fenced write where the bucket is owned: written, flip 0"
fenced 0 "$E1" "$BK"
t_eq "$(t_sql 0 "SELECT flip FROM entities WHERE id=X'$E1'")" 1 "an overwrite turns the flip: the check runs again"
NOTOWNED=$(t_sql 0 "SELECT MIN(bucket) FROM bagstore_buckets WHERE state<>'owned'")
[ -z "$NOTOWNED" ] || [ "$NOTOWNED" = NULL ] && NOTOWNED=$(t_sql 1 "SELECT MIN(bucket) FROM bagstore_buckets WHERE state='owned'")
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_buckets WHERE bucket=$NOTOWNED AND state='owned'")" 0 "bucket $NOTOWNED is not s0's"
t_eq "$(fenced 0 f0000000000040008000000000000009 "$NOTOWNED" 2>&1 | grep -c 'ERROR 1452')" 1 "a fenced write into a bucket s0 does not own: refused, 1452"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM entities WHERE id=X'f0000000000040008000000000000009'")" 0 "nothing written"

# ------------------------------------------------------------ a plain UPDATE of ownership
t_eq "$(t_sql 0 "UPDATE bagstore_buckets SET state='leaving', peer='s9', move_id=9001 WHERE bucket=$BK; SELECT @@foreign_key_checks")" 1 \
	"a bucket set leaving by plain SQL; the session's foreign-key checks stay on"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_owned WHERE bucket=$BK")" 0 "its parent rows are gone"
in_line 0 "with a bucket leaving"
t_eq "$(fenced 0 "$E1" "$BK" 2>&1 | grep -c 'ERROR 1452')" 1 "an overwrite into the leaving bucket: refused"
t_eq "$(t_sql 0 "SELECT flip FROM entities WHERE id=X'$E1'")" 1 "the row as it was"
t_sql 0 "UPDATE bagstore_buckets SET state='owned', peer='', move_id=0 WHERE bucket=$BK"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_owned WHERE bucket=$BK")" 2 "owned again: its parent rows are back"
t_sql 0 "INSERT INTO bagstore_buckets (bucket, state) VALUES (999001, 'owned'), (999002, 'incoming')"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_owned WHERE bucket IN (999001, 999002)")" 2 "a new owned row gets its parent rows, an incoming one none"
t_sql 0 "UPDATE bagstore_buckets SET state='owned' WHERE bucket=999002"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_owned WHERE bucket=999002")" 2 "incoming to owned: its rows come"
t_sql 0 "DELETE FROM bagstore_buckets WHERE bucket IN (999001, 999002)"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_owned WHERE bucket IN (999001, 999002)")" 0 "a deleted row takes them away"
in_line 0 "after the plain changes"

# ------------------------------------------------------------ a cut-over and a write in flight
held() { [ "$(t_sql 0 "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'DO SLEEP(2)%'")" = 1 ]; }
E2=f0000000000040008000000000000002
fenced 0 "$E2" "$BK"
# the write held open in a transaction: its check holds the parent row's
# share lock until the commit, two seconds on
fenced 0 "$E2" "$BK" "UPDATE entities SET body=X'02' WHERE id=X'$E2'; DO SLEEP(2); COMMIT" &
HOLD=$!
t_wait 10 held || t_fail "the write holds its parent row" "its session never slept"
t_eq "$(t_sql 0 "UPDATE bagstore_buckets SET state='leaving', peer='s9', move_id=9002 WHERE bucket=$BK; SELECT HEX(body) FROM entities WHERE id=X'$E2'")" 02 \
	"the cut-over's UPDATE waited for the fenced write, and reads its row"
wait $HOLD
t_sql 0 "UPDATE bagstore_buckets SET state='owned', peer='', move_id=0 WHERE bucket=$BK"
# the other way: a cut-over holds the bucket's row, a write comes
t_sql 0 "START TRANSACTION; UPDATE bagstore_buckets SET state='leaving', peer='s9', move_id=9003 WHERE bucket=$BK; DO SLEEP(2); COMMIT" &
HOLD=$!
t_wait 10 held || t_fail "the cut-over holds the bucket" "its session never slept"
t_eq "$(fenced 0 "$E2" "$BK" 2>&1 | grep -c 'ERROR 1452')" 1 "a write that came during the cut-over was refused"
held && t_fail "only once the cut-over committed" "the cut-over still sleeps" || t_ok "only once the cut-over committed: it waited for it"
wait $HOLD
t_eq "$(t_sql 0 "SELECT HEX(body) FROM entities WHERE id=X'$E2'")" 02 "the row as the first write left it"
t_sql 0 "UPDATE bagstore_buckets SET state='owned', peer='', move_id=0 WHERE bucket=$BK"
t_sql 0 "DELETE FROM entities WHERE id IN (X'$E1', X'$E2')"

# ------------------------------------------------------------ the cleaner checks the parent rows
# rows out of step, as a TRUNCATE or a hand-made change leaves them: a
# bucket of s1's with parent rows on s0 (a fast write there would land
# unlogged), an owned bucket of s0's without its own
STRAY=$(t_sql 1 "SELECT MIN(bucket) FROM bagstore_buckets WHERE state='owned'")
t_sql 0 "SET foreign_key_checks=0; DELETE FROM bagstore_owned WHERE bucket=$BK; INSERT INTO bagstore_owned VALUES ($STRAY, 0), ($STRAY, 1)"
wm0=$(t_sql 0 "SELECT COALESCE(MAX(last_pass_us), 0) FROM bagstore_watermarks WHERE name='repair'")
wm1=$(t_sql 1 "SELECT COALESCE(MAX(last_pass_us), 0) FROM bagstore_watermarks WHERE name='repair'")
t_exit 2 "a cleaner's pass: fails, for scripts to see" -- "$B" -c "$CFG" cleaner --once
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_watermarks WHERE name='repair' AND last_pass_us>$wm0")$(t_sql 1 "SELECT COUNT(*) FROM bagstore_watermarks WHERE name='repair' AND last_pass_us>$wm1")" 11 \
	"and the pass's other work goes on: a repair pass on each shard"
t_contains "$T_ERR" "shard s0: the fence's parent rows (bagstore_owned) were out of step with bagstore_buckets: 2 rows for buckets not owned there (buckets $STRAY)" \
	"says the stray rows, naming their bucket"
t_contains "$T_ERR" "1 owned buckets without both of theirs; brought in line (2 rows removed, 2 added)" "and the lacking, and that it mended them"
in_line 0 "after the cleaner's pass"
t_sql 1 "DROP TRIGGER bagstore_owned_del"
t_exit 2 "a cleaner's pass with a trigger missing on s1: fails" -- "$B" -c "$CFG" cleaner --once
t_contains "$T_ERR" "shard s1: 2 of the fence's 3 triggers on bagstore_buckets do their work: run \`bagstore init\`" "says so"
t_exit 0 "init" -- "$B" -c "$CFG" init
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA=DATABASE() AND EVENT_OBJECT_TABLE='bagstore_buckets'")" 3 \
	"which makes it again"
# a trigger of the fence's name that does nothing: init makes none in
# its place, and says so rather than leave the fence unkept
t_sql 1 "DROP TRIGGER bagstore_owned_del; CREATE TRIGGER bagstore_owned_del AFTER DELETE ON bagstore_buckets FOR EACH ROW DO 0"
t_exit 2 "init with a trigger of the fence's name that does nothing" -- "$B" -c "$CFG" init
t_contains "$T_ERR" "2 of the fence's 3 triggers on bagstore_buckets do their work: drop the bagstore_owned_* trigger" "says so"
t_sql 1 "DROP TRIGGER bagstore_owned_del"
t_exit 0 "init once it is dropped" -- "$B" -c "$CFG" init
t_exit 0 "a cleaner's pass, all in line" -- "$B" -c "$CFG" cleaner --once
t_eq "$(printf '%s' "$T_ERR" | grep -c "fence")" 0 "says nothing of the fence"
# the triggers' try waits a second at most for a lock, and the rows out
# of step are mended before it, whatever it says: another session holds
# the bucket the try would insert
sleeping() { [ "$(t_sql 0 "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'DO SLEEP($1)%'")" = 1 ]; }
t_sql 0 "SET foreign_key_checks=0; INSERT INTO bagstore_owned VALUES ($STRAY, 0), ($STRAY, 1)"
t_sql 0 "START TRANSACTION; INSERT INTO bagstore_buckets (bucket, state) VALUES (2147483647, 'gone'); DO SLEEP(120); ROLLBACK" >/dev/null 2>&1 &
HOLD=$!
t_wait 10 sleeping 120 || t_fail "the try's bucket held" "its session never slept"
T0=$(date +%s)
t_exit 2 "a cleaner's pass whose try of the triggers cannot take its lock: fails" -- "$B" -c "$CFG" cleaner --once
T1=$(date +%s)
t_contains "$T_ERR" "shard s0: trying the fence's triggers on bagstore_buckets: " "says the triggers could not be tried"
t_contains "$T_ERR" "Lock wait timeout exceeded" "with MySQL's message"
t_contains "$T_ERR" "2 rows for buckets not owned there (buckets $STRAY)" "says the stray rows"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_owned WHERE bucket=$STRAY")" 0 "and took them away all the same"
t_eq "$((T1 - T0 < 40))" 1 "in seconds: the try gave up, it did not wait out the session's lock wait ($((T1 - T0)) s)"
t_exit 1 "init while the try cannot take its lock: fails (a lock wait, exit 1)" -- "$B" -c "$CFG" init
t_contains "$T_ERR" "trying the fence's triggers on bagstore_buckets: " "and says why"
sleeping 120 && t_ok "the hold lasted through both" || t_fail "the hold lasted through both" "it ended early"
t_sql 0 "KILL $(t_sql 0 "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE 'DO SLEEP(120)%'")"
wait $HOLD
# a catalog that cannot be read (a shard's table gone) stops the repair
# pass, not the fence's check
t_sql 0 "SET foreign_key_checks=0; INSERT INTO bagstore_owned VALUES ($STRAY, 0), ($STRAY, 1)"
t_sql 1 "RENAME TABLE bagstore_indexes TO bagstore_indexes_away"
t_exit 2 "a cleaner's pass with s1's catalog table away: fails" -- "$B" -c "$CFG" cleaner --once
t_contains "$T_ERR" "2 rows for buckets not owned there (buckets $STRAY)" "still checks s0's fence"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_owned WHERE bucket=$STRAY")" 0 "and mends it"
t_sql 1 "RENAME TABLE bagstore_indexes_away TO bagstore_indexes"
in_line 0 "after the mends"
t_exit 0 "a cleaner's pass, all in line again" -- "$B" -c "$CFG" cleaner --once

# ------------------------------------------------------------ a shard an older bagstore made
for i in $(seq 10 29); do
	printf '{"id": {"$uuid": "f0000000-0000-4000-8000-0000000000%02d"}, "v": %d}\n' "$i" "$i"
done >"$T/many.jsonl"
t_exit 0 "put 20 more" -- "$B" -c "$CFG" put "$T/many.jsonl"
t_sql 0 "SET foreign_key_checks=0; ALTER TABLE entities DROP FOREIGN KEY bagstore_fence, DROP INDEX bagstore_fence, DROP COLUMN bucket, DROP COLUMN flip;
	DROP TRIGGER bagstore_owned_ins; DROP TRIGGER bagstore_owned_upd; DROP TRIGGER bagstore_owned_del; DROP TABLE bagstore_owned;
	UPDATE bagstore_meta SET v='3' WHERE k='schema_version'"
ROWS0=$(t_sql 0 "SELECT COUNT(*) FROM entities")
t_exit 2 "a put with s0 at schema version 3 is refused" -- "$B" -c "$CFG" put "$T/many.jsonl"
t_contains "$T_ERR" "schema version 3; this one writes 4" "naming the versions"
t_exit 0 "init upgrades it" -- "$B" -c "$CFG" init
t_contains "$T_OUT" "upgraded s0 (from schema version 3)" "and says so"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM entities")" "$ROWS0" "every row kept"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM entities WHERE bucket IS NOT NULL")" 0 "with no bucket yet"
in_line 0 "after the upgrade"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA=DATABASE() AND EVENT_OBJECT_TABLE='bagstore_buckets'")" 3 \
	"the three triggers are back"
t_exit 0 "init again changes nothing" -- "$B" -c "$CFG" init
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA=DATABASE() AND EVENT_OBJECT_TABLE='bagstore_buckets'")" 3 \
	"still three"
fenced 0 "$(t_sql 0 "SELECT LOWER(HEX(id)) FROM entities ORDER BY id LIMIT 1")" "$BK"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM entities WHERE bucket=$BK")" 1 "a fenced write to a row from before the upgrade sets its bucket"
in_line 0 "at the end"
in_line 1 "at the end"

# ------------------------------------------------------------ a ROW-format replica through a reshard
# A primary whose binary log is in ROW format, a replica of it, and a
# second shard to move buckets to: the move's step that marks buckets
# leaving deletes their parent rows through the trigger, and the replica
# applies that delete with the check off, as the step's statement says,
# and keeps replicating. Their own servers: the test port + 420, + 421
# and + 422.
P=$((${BAGSTORE_TEST_PORT:-23407} + 420))
R=$((P + 1))
Q=$((P + 2))
DP=$(t_servers fence-row)/primary
DR=$(t_servers fence-row)/replica
DQ=$(t_servers fence-row)/second
stop_row() {
	for d in "$DP" "$DR" "$DQ"; do sh "$SHARDS_SH" stop --dir "$d" >/dev/null 2>&1; done
}
trap stop_row EXIT
stop_row
rm -rf "$DP" "$DR" "$DQ"
SHARDS_LOG_BIN=1 t_exit 0 "start a primary with a binary log" -- sh "$SHARDS_SH" start --count 1 --port $P --dir "$DP"
SHARDS_LOG_BIN=1 t_exit 0 "start its replica" -- sh "$SHARDS_SH" start --count 1 --port $R --dir "$DR"
t_exit 0 "start a second shard" -- sh "$SHARDS_SH" start --count 1 --port $Q --dir "$DQ"
[ "$T_FAILED" = 0 ] || t_done test_fence
rsql() { mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$1" -uroot -N -B -e "$2"; }
rstat() { # the replica's SHOW SLAVE STATUS field $1
	mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$R" -uroot -e "SHOW SLAVE STATUS\G" | sed -n "s/^ *$1: //p"
}
rsql $P "SET GLOBAL binlog_format=ROW"
pos=$(rsql $P "SHOW MASTER STATUS" | awk '{print $1 " " $2}')
t_exit 0 "point the replica at the primary" -- rsql $R \
	"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$P, MASTER_USER='root',
	 MASTER_LOG_FILE='${pos% *}', MASTER_LOG_POS=${pos#* }; START SLAVE"
cat >"$T/one.yaml" <<CFG
shards:
  - {name: s0, host: 127.0.0.1, port: $P, database: bagstore, user: root}
timeouts: {connect: 2, read: 10, write: 10}
catalog_ttl: 1
CFG
sed "s/^timeouts/  - {name: s1, host: 127.0.0.1, port: $Q, database: bagstore, user: root}\ntimeouts/" "$T/one.yaml" >"$T/two.yaml"
t_exit 0 "init the primary alone" -- "$B" -c "$T/one.yaml" init
# rows that reference their buckets' parent rows, in buckets spread over
# the map (a move takes some of them away)
for k in $(seq 0 63); do
	rsql $P "USE bagstore; $BS__FENCED INSERT INTO entities (id, updated, body, bucket) VALUES
		(X'$(printf 'f1000000000040008000%012x' "$k")', NOW(6), X'00', $((k * 64))) ON DUPLICATE KEY UPDATE body=VALUES(body), bucket=VALUES(bucket), flip=1-flip"
done
t_eq "$(rsql $P "SELECT COUNT(*) FROM bagstore.entities WHERE bucket IS NOT NULL")" 64 "64 fenced rows on the primary"
t_exit 0 "plan a reshard onto the second shard" -- "$B" -c "$T/two.yaml" init
# the trigger that takes a leaving bucket's parent rows away, missing (a
# dump restored without it): the move's step takes them itself
rsql $P "DROP TRIGGER bagstore.bagstore_owned_upd"
t_exit 0 "reshard start" -- "$B" -c "$T/two.yaml" reshard start --yes
T_TIMEOUT=180 t_exit 0 "a cleaner runs the moves" -- "$B" -c "$T/two.yaml" cleaner --reshard
t_match "$(rsql $P "SELECT COUNT(*) FROM bagstore.bagstore_buckets WHERE state='gone' AND bucket % 64 = 0")" '^[1-9][0-9]*$' \
	"buckets holding fenced rows left the primary"
t_eq "$(rsql $P "SELECT COUNT(*) FROM bagstore.bagstore_owned o JOIN bagstore.bagstore_buckets b USING (bucket) WHERE b.state<>'owned'")" 0 \
	"with its update trigger missing, no parent row stays for a bucket that left"
pos=$(rsql $P "SHOW MASTER STATUS" | awk '{print $1 " " $2}')
t_match "$(rsql $R "SELECT MASTER_POS_WAIT('${pos% *}', ${pos#* }, 60)")" '^[0-9][0-9]*$' "the replica reached the primary's position"
t_eq "$(rstat Slave_SQL_Running)" Yes "the replica still applies the log"
t_eq "$(rstat Last_SQL_Errno)" 0 "with no error"
t_eq "$(rsql $R "SELECT COUNT(*) FROM bagstore.bagstore_owned")" "$(rsql $P "SELECT COUNT(*) FROM bagstore.bagstore_owned")" \
	"its parent rows are the primary's"
t_eq "$(rsql $R "SELECT COUNT(*) FROM bagstore.bagstore_owned o JOIN bagstore.bagstore_buckets b USING (bucket) WHERE b.state<>'owned'")" 0 \
	"none for a bucket that left"
# the trigger made again, the primary drained: the trigger deletes the
# leaving buckets' parent rows inside the mover's statement, whose
# check-off the replica applies it with
t_exit 0 "init makes the missing trigger again" -- "$B" -c "$T/two.yaml" init
t_match "$(rsql $P "SELECT COUNT(*) FROM bagstore.entities e JOIN bagstore.bagstore_buckets b USING (bucket) WHERE b.state='owned'")" \
	'^[1-9][0-9]*$' "fenced rows on the primary in buckets it still owns"
sed "s/port: $P, database: bagstore, user: root}/port: $P, database: bagstore, user: root, drain: true}/" "$T/two.yaml" >"$T/drain.yaml"
t_exit 0 "reshard start: the primary drained" -- "$B" -c "$T/drain.yaml" reshard start --yes
T_TIMEOUT=180 t_exit 0 "a cleaner runs the moves" -- "$B" -c "$T/drain.yaml" cleaner --reshard
t_eq "$(rsql $P "SELECT COUNT(*) FROM bagstore.bagstore_buckets WHERE state='owned'")" 0 "the primary owns no bucket"
pos=$(rsql $P "SHOW MASTER STATUS" | awk '{print $1 " " $2}')
t_match "$(rsql $R "SELECT MASTER_POS_WAIT('${pos% *}', ${pos#* }, 60)")" '^[0-9][0-9]*$' "the replica reached the primary's position again"
t_eq "$(rstat Slave_SQL_Running)" Yes "the replica still applies the log, the trigger there"
t_eq "$(rstat Last_SQL_Errno)" 0 "with no error"
t_eq "$(rsql $R "SELECT COUNT(*) FROM bagstore.bagstore_owned")" 0 "and no parent row left, as on the primary"
# why the step's statement turns the check off: the same change without
# it stops such a replica (a bucket owned by hand, a fenced row in it)
BK=999001
rsql $P "INSERT INTO bagstore.bagstore_buckets (bucket, state) VALUES ($BK, 'owned')"
rsql $P "USE bagstore; $BS__FENCED INSERT INTO entities (id, updated, body, bucket) VALUES (X'f1000000000040008000ffffffffffff', NOW(6), X'00', $BK)"
rsql $P "UPDATE bagstore.bagstore_buckets SET state='leaving', peer='s9', move_id=9101 WHERE bucket=$BK"
pos=$(rsql $P "SHOW MASTER STATUS" | awk '{print $1 " " $2}')
rsql $R "SELECT MASTER_POS_WAIT('${pos% *}', ${pos#* }, 10)" >/dev/null
t_eq "$(rstat Last_SQL_Errno)" 1451 \
	"a plain UPDATE of a bucket with fenced rows stops a ROW replica (1451): the mover's turns the check off"

t_done

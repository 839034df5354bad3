#!/bin/sh
# test_many_rows.sh - how the cleaner's many-row INSERTs reach the servers:
# a backfill's index rows, a move's copied entities and index rows.
# MariaDB takes a statement's rows as one bulk execution (an array of
# parameter sets, the values binary, the statement prepared once); a server
# without it (MySQL), or BAGSTORE_FAULT=rows_as_text here, gets the
# multi-row text statements. Either way every column type's values must be
# exactly what writers write: an index over a property of each type, with
# the edge values of each, is backfilled both ways (`verify` finds nothing
# wrong after each, the two tables hold the same rows); then s1 is drained
# into s0 one way (the target already holding an older and a newer copy
# of two entities: the newer wins) and filled again the other, each entity
# keeping its version to the microsecond and its body, each index row
# kept. The servers' own counters show which way the rows went each time.
# Last, a server whose binary log is in STATEMENT format, which refuses
# bulk executions: the backfill's rows go as text there. Its own server:
# the first shard's port + 70.
. tests/lib.sh

T=$(t_tmp)
CFG=$BAGSTORE_TEST_CONFIG
N=3000
t_exit 0 "init" -- "$BAGSTORE" -c "$CFG" init

# entity I: a uuid, a string (quotes, backslashes, non-ASCII, empty, 20
# characters), an int (both ends of 64 bits), a float (negative zero, the
# smallest and largest doubles, 0.1), a bool and bytes (NUL, 0xff, none)
awk -v n=$N 'BEGIN {
	split("\"\\\"\",\"a\\\\b\",\"\",\"Ünïcödé 日本\",\"12345678901234567890\",\"x\"", s, ",")
	split("-9223372036854775808,9223372036854775807,0,-1,42,123456789012", ints, ",")
	split("-0.0,5e-324,1.7976931348623157e308,0.1,-2.5,3", fl, ",")
	split("AA==,AAEC,,/////w==,J1xcIg==,AAAAAAAAAAA=", bin, ",")
	for (i = 0; i < n; i++)
		printf "{\"u\": {\"$uuid\": \"%08x%024x\"}, \"s\": %s, \"n\": %s, \"f\": %s, \"b\": %s, " \
		       "\"x\": {\"$binary\": {\"base64\": \"%s\", \"subType\": \"00\"}}, \"i\": %d}\n",
		       i * 7 % 65536, i, s[i % 6 + 1], ints[i % 6 + 1], fl[int(i / 6) % 6 + 1],
		       i % 2 ? "true" : "false", bin[i % 6 + 1], i
}' >"$T/e.jsonl"
t_exit 0 "put $N entities" -- "$BAGSTORE" -c "$CFG" put "$T/e.jsonl"

stmts() { # prepared executions on both servers so far
	a=$(t_sql 0 "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='COM_STMT_EXECUTE'")
	b=$(t_sql 1 "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='COM_STMT_EXECUTE'")
	echo $((a + b))
}
dump() { # the index's rows on both shards, in one order
	for s in 0 1; do
		t_sql $s "SELECT HEX(u), HEX(s), n, f, b, HEX(x), HEX(entity_id) FROM ix_all"
	done | sort
}
# build ix_all; WAY: bulk or text
build() {
	t_exit 0 "create ix_all ($1)" -- "$BAGSTORE" -c "$CFG" index create ix_all \
		--on 'u:uuid,s:string(20),n:int,f:float,b:bool,x:binary(8)' --shard-on u
	before=$(stmts)
	if [ "$1" = text ]; then
		BAGSTORE_FAULT=rows_as_text t_exit 0 "backfill ix_all ($1)" -- "$BAGSTORE" -c "$CFG" cleaner --index ix_all
	else
		t_exit 0 "backfill ix_all ($1)" -- "$BAGSTORE" -c "$CFG" cleaner --index ix_all
	fi
	ran=$(($(stmts) - before))
	t_exit 0 "verify ix_all ($1)" -- "$BAGSTORE" -c "$CFG" verify --index ix_all
	t_contains "$T_OUT" "0 missing, 0 stale, 0 orphaned" "the $1 rows are what the bodies imply"
	rows=$(dump)
	t_eq "$(printf '%s\n' "$rows" | wc -l)" $N "an index row for each of the $N entities ($1)"
}

build bulk
t_eq "$((ran > 0))" 1 "the rows went as bulk executions of a prepared statement ($ran)"
bulk_rows=$rows
t_exit 0 "drop ix_all" -- "$BAGSTORE" -c "$CFG" index drop --yes ix_all
build text
t_eq "$ran" 0 "with rows_as_text, no prepared statement ran: text statements"
t_eq "$rows" "$bulk_rows" "both ways wrote the same rows"
# the edge values made it through whole
t_contains "$rows" "-9223372036854775808" "the smallest int"
t_contains "$rows" "9223372036854775807" "the largest int"
t_contains "$rows" "1.7976931348623157e308" "the largest double"
t_contains "$rows" "$(printf '%s' 'Ünïcödé 日本' | od -An -tx1 | tr -d ' \n' | tr a-f A-F)" "a non-ASCII string"

# writers agree with the backfill: new entities of the same values, then verify
head -600 "$T/e.jsonl" >"$T/more.jsonl"
t_exit 0 "put 600 more" -- "$BAGSTORE" -c "$CFG" put "$T/more.jsonl"
t_exit 0 "verify after writers" -- "$BAGSTORE" -c "$CFG" verify --index ix_all
t_contains "$T_OUT" "0 missing, 0 stale, 0 orphaned" "writers' rows and the backfill's agree"

# moves, both ways: s1 drained into s0 in bulk, then filled again as text
t_shards_cfg "$T/drain.yaml" 2 "" drain
t_shards_cfg "$T/back.yaml" 2
versions() { for s in 0 1; do t_sql $s "SELECT HEX(id), UNIX_TIMESTAMP(updated), MD5(body) FROM entities"; done | sort; }
# the copy's newer-wins upsert, in the bulk move: the target will hold an
# older copy of X with another body (it must lose) and a newer copy of Y
# with another body of the same index values (it must win, body and
# version). That body is Y's with one more property, written to Y and
# then Y written back as it was.
X=$(t_sql 1 "SELECT HEX(id) FROM entities ORDER BY id LIMIT 1")
Y=$(t_sql 1 "SELECT HEX(id) FROM entities ORDER BY id LIMIT 1 OFFSET 1")
t_exit 0 "get Y" -- "$BAGSTORE" -c "$CFG" get "$Y"
printf '%s\n' "$T_OUT" >"$T/y.jsonl"
sed 's/}$/, "extra": 1}/' "$T/y.jsonl" >"$T/y2.jsonl"
t_exit 0 "Y with one more property" -- "$BAGSTORE" -c "$CFG" put "$T/y2.jsonl"
ybody2=$(t_sql 1 "SELECT HEX(body) FROM entities WHERE id=UNHEX('$Y')")
t_exit 0 "Y as it was" -- "$BAGSTORE" -c "$CFG" put "$T/y.jsonl"
t_eq "$(t_sql 1 "SELECT HEX(body)<>'$ybody2' FROM entities WHERE id=UNHEX('$Y')")" 1 "Y's two bodies differ"
before=$(versions)
index_before=$(dump)
seed() {
	zbody=$(t_sql 1 "SELECT HEX(body) FROM entities ORDER BY id LIMIT 1 OFFSET 2")
	t_sql 0 "INSERT INTO entities (id, updated, body) VALUES (UNHEX('$X'), '2001-02-03 04:05:06', UNHEX('$zbody')),
	         (UNHEX('$Y'), '2037-06-05 04:03:02.123456', UNHEX('$ybody2'))"
	yline=$(t_sql 0 "SELECT HEX(id), UNIX_TIMESTAMP(updated), MD5(body) FROM entities WHERE id=UNHEX('$Y')")
	before=$(printf '%s\n' "$before" | grep -v "^$Y	"; printf '%s\n' "$yline")
	before=$(printf '%s\n' "$before" | sort)
}
move() { # WAY CONFIG
	t_exit 0 "reshard start ($1)" -- "$BAGSTORE" -c "$2" reshard start --yes
	[ "$1" = bulk ] && seed
	before_stmts=$(stmts)
	if [ "$1" = text ]; then
		BAGSTORE_FAULT=rows_as_text t_exit 0 "the moves ($1)" -- "$BAGSTORE" -c "$2" cleaner --reshard
	else
		t_exit 0 "the moves ($1)" -- "$BAGSTORE" -c "$2" cleaner --reshard
	fi
	ran=$(($(stmts) - before_stmts))
	t_eq "$(versions)" "$before" "every entity with its version (to the microsecond) and body ($1)"
	t_eq "$(dump)" "$index_before" "every index row, once ($1)"
	t_exit 0 "verify after the moves ($1)" -- "$BAGSTORE" -c "$2" verify --index ix_all
	t_contains "$T_OUT" "0 missing, 0 stale, 0 orphaned" "the moved index is what the bodies imply ($1)"
}
move bulk "$T/drain.yaml"
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM entities")" 0 "s1 drained"
t_eq "$((ran > 0))" 1 "drained with bulk executions ($ran)"
t_eq "$(t_sql 0 "SELECT UNIX_TIMESTAMP(updated) < 1e9 FROM entities WHERE id=UNHEX('$X')")" 0 \
	"the target's older copy lost to the source's"
t_eq "$(t_sql 0 "SELECT updated, HEX(body)='$ybody2' FROM entities WHERE id=UNHEX('$Y')")" \
	"2037-06-05 04:03:02.123456	1" "the target's newer copy won, its body and its version"
move text "$T/back.yaml"
t_eq "$(( $(t_sql 1 "SELECT COUNT(*) FROM entities") > 0 ))" 1 "s1 filled again"
t_eq "$ran" 0 "filled with text statements"

# a server whose binary log is in STATEMENT format takes no bulk execution
# (MariaDB answers error 4033 and runs nothing): the rows go as text there,
# and the backfill neither fails nor loses a row
BP=$(($(t_port 0) + 70))
trap 't_extra_stop manyrows' EXIT
trap 't_extra_stop manyrows; exit 130' INT TERM
export SHARDS_LOG_BIN=1
t_exit 0 "a server with a binary log" -- t_extra_shard manyrows "$BP"
unset SHARDS_LOG_BIN
[ "$T_FAILED" = 0 ] || t_done test_many_rows
bsql() { mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$BP" -uroot -N -B bagstore -e "$1"; }
t_exit 0 "its binary log in STATEMENT format, from its start" -- bsql "SET GLOBAL binlog_format='STATEMENT'; RESET MASTER"
bstmts() { bsql "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME='COM_STMT_EXECUTE'"; }
printf 'shards:\n  - {name: b0, host: 127.0.0.1, port: %s, database: bagstore, user: root}\ncatalog_ttl: 1\n' \
	$BP >"$T/binlog.yaml"
t_exit 0 "init there" -- "$BAGSTORE" -c "$T/binlog.yaml" init
t_exit 0 "put $N entities there" -- "$BAGSTORE" -c "$T/binlog.yaml" put "$T/e.jsonl"
t_exit 0 "create ix_all there" -- "$BAGSTORE" -c "$T/binlog.yaml" index create ix_all \
	--on 'u:uuid,s:string(20),n:int,f:float,b:bool,x:binary(8)' --shard-on u
b0=$(bstmts)
t_exit 0 "backfill ix_all there" -- "$BAGSTORE" -c "$T/binlog.yaml" cleaner --index ix_all
t_eq "$(($(bstmts) - b0 > 0))" 1 "a bulk execution was tried there (and refused)"
t_eq "$(bsql "SELECT COUNT(*) FROM ix_all")" $N "every index row written"
t_exit 0 "verify there" -- "$BAGSTORE" -c "$T/binlog.yaml" verify --index ix_all
t_contains "$T_OUT" "0 missing, 0 stale, 0 orphaned" "the rows are what the bodies imply"
t_eq "$(( $(bsql "SHOW BINLOG EVENTS" | grep -c 'INSERT INTO `ix_all`') > 0 ))" 1 \
	"the binary log has the rows' statements as text"
t_done test_many_rows

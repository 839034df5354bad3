#!/bin/sh
# test_hostile.sh - issue 13: what a hostile tester found, one section per
# item, each failing on the code before its fix. Through the real binary on
# the two test shards (and SQL by hand to plant what an attacker or a
# crash leaves).
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
T=$(t_tmp)

t_exit 0 "init" -- "$B" -c "$C" init

# ------------------------------------------------------------ 1. a foreign table
for s in 0 1; do
	t_sql $s "CREATE TABLE canary (a INT PRIMARY KEY) ENGINE=InnoDB; INSERT INTO canary VALUES (1),(2),(3)"
done
t_exit 1 "index create over a table bagstore did not make is refused" -- \
	"$B" -c "$C" index create canary --on a:int --shard-on a
t_contains "$T_ERR" "table canary exists and bagstore did not create it" "says why"
t_match "$T_ERR" "shard s[01] " "names the shard"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM canary")" 3 "canary's rows kept on s0"
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM canary")" 3 "canary's rows kept on s1"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_indexes WHERE name='canary'")" 0 "no catalog row on s0"
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM bagstore_indexes WHERE name='canary'")" 0 "no catalog row on s1"
# only on one shard: still refused, and nothing made on the other
t_sql 0 "DROP TABLE canary"
t_exit 1 "a foreign table on one shard only is refused too" -- \
	"$B" -c "$C" index create canary --on a:int --shard-on a
t_contains "$T_ERR" "shard s1" "names the shard holding it"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA='bagstore' AND TABLE_NAME='canary'")" 0 \
	"nothing created on s0"
t_sql 1 "DROP TABLE canary"
# a table bagstore made whose create was interrupted (no catalog row): replaced
t_exit 0 "create ix_left" -- "$B" -c "$C" index create ix_left --on a:int --shard-on a
t_sql 0 "DELETE FROM bagstore_indexes WHERE name='ix_left'"
t_sql 1 "DELETE FROM bagstore_indexes WHERE name='ix_left'"
t_exit 0 "an interrupted create's table is replaced" -- "$B" -c "$C" index create ix_left --on a:int --shard-on a

t_done test_hostile

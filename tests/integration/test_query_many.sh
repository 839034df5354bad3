#!/bin/sh
# test_query_many.sh - a limited query over many candidates: its statements
# stay within the server's max_allowed_packet as the unlimited one's do
# (bodies are fetched in batches of 1,000 ids per shard). Found in review:
# with a limit under the candidate count, query.c read every candidate's
# update time with one `WHERE id IN (...)` of all the shard's candidates,
# and fetched each window of bodies in one statement too, so a query for 5
# entities of a popular value failed ("Got a packet bigger than
# 'max_allowed_packet'") where the same query without a limit worked. The
# packet limit is lowered to 64 KiB here (2,000 candidates per shard make
# a 72 KB list); it is put back at the end.
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
T=$(t_tmp)
N=4000

t_exit 0 "init" -- "$B" -c "$C" init
t_exit 0 "an index on g" -- "$B" -c "$C" index create ix_g --on g:int --shard-on g
python3 -c 'import json, sys
for i in range(int(sys.argv[1])):
    print(json.dumps({"g": 1, "n": i}))' "$N" >"$T/load.jsonl"
t_exit 0 "put $N entities with g=1" -- "$B" -c "$C" put --batch 500 "$T/load.jsonl"

old0=$(t_sql 0 "SELECT @@global.max_allowed_packet")
old1=$(t_sql 1 "SELECT @@global.max_allowed_packet")
t_sql 0 "SET GLOBAL max_allowed_packet=65536"
t_sql 1 "SET GLOBAL max_allowed_packet=65536"
t_eq "$(t_sql 1 "SELECT @@global.max_allowed_packet")" 65536 "max_allowed_packet is 64 KiB"

t_exit 0 "query without a limit (batched)" -- "$B" -c "$C" query ix_g g=1
t_eq "$(printf '%s\n' "$T_OUT" | grep -c '"g":1')" "$N" "every entity"
printf '%s\n' "$T_OUT" | head -3000 >"$T/all3000"
t_exit 0 "query --limit 5 over $N candidates" -- "$B" -c "$C" query ix_g g=1 --limit 5
t_eq "$(printf '%s\n' "$T_OUT" | grep -c '"g":1')" 5 "5 entities"
t_exit 0 "query --limit 3000 over $N candidates" -- "$B" -c "$C" query ix_g g=1 --limit 3000
t_eq "$(printf '%s\n' "$T_OUT" | grep -c '"g":1')" 3000 "3,000 entities"
printf '%s\n' "$T_OUT" >"$T/lim3000"
t_eq "$(cmp "$T/all3000" "$T/lim3000" && echo same)" same "the same 3,000 as the unlimited query's first (newest first)"

t_sql 0 "SET GLOBAL max_allowed_packet=$old0"
t_sql 1 "SET GLOBAL max_allowed_packet=$old1"
t_done

#!/bin/sh
# test_bulk.sh - issue 12's bulk put and export, through the real binary:
# ids printed in input order, a bad line stops the load with the lines
# before it stored and the rest not, index rows right at once (verify with
# no cleaner), an id given twice in a batch; export | put round trip.
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
T=$(t_tmp)

t_exit 0 "init" -- "$B" -c "$C" init
t_exit 0 "an index on g" -- "$B" -c "$C" index create ix_g --on g:int --shard-on g

# 2,000 entities with known ids, some a second time later in the file
python3 -c 'import json
for i in range(2000):
    print(json.dumps({"id": {"$uuid": "%08x-0000-4000-8000-0000000b0001" % i}, "g": i % 13, "n": i}))
for i in range(0, 2000, 100):
    print(json.dumps({"id": {"$uuid": "%08x-0000-4000-8000-0000000b0001" % i}, "g": 99, "n": -i}))' >"$T/load.jsonl"
t_exit 0 "put 2,020 lines in batches of 300" -- "$B" -c "$C" put --batch 300 "$T/load.jsonl"
python3 -c 'import json, sys
for line in open(sys.argv[1]):
    print(json.loads(line)["id"]["$uuid"].replace("-", ""))' "$T/load.jsonl" >"$T/want.ids"
printf '%s\n' "$T_OUT" >"$T/got.ids"
t_eq "$(cmp "$T/want.ids" "$T/got.ids" && echo same)" same "every id printed, in input order"
t_eq "$( (t_sql 0 "SELECT COUNT(*) FROM entities"; t_sql 1 "SELECT COUNT(*) FROM entities") | awk '{ n += $1 } END { print n }')" 2000 \
	"2,000 entities stored"
t_exit 0 "the index is right at once (no cleaner ran)" -- "$B" -c "$C" verify --index ix_g
t_exit 0 "an id given twice keeps its last value" -- "$B" -c "$C" get 000000c80000400080000000000b0001
t_contains "$T_OUT" '"g":99' "its later line won"
t_exit 0 "and the index says so" -- "$B" -c "$C" query ix_g g=99
t_eq "$(printf '%s\n' "$T_OUT" | grep -c '"g":99')" 20 "20 entities with g=99"

# a bad line: the lines before it stored, it and the rest not
python3 -c 'import json
for i in range(700):
    if i == 523:
        print("{\"id\": oops}")
    else:
        print(json.dumps({"id": {"$uuid": "%08x-0000-4000-8000-0000000c0001" % i}, "g": 1}))' >"$T/bad.jsonl"
t_exit 2 "a bad line stops the load" -- "$B" -c "$C" put --batch 200 "$T/bad.jsonl"
t_contains "$T_ERR" "bad.jsonl:524" "names FILE:LINE"
t_eq "$(printf '%s\n' "$T_OUT" | grep -c .)" 523 "523 ids printed"
t_eq "$( (t_sql 0 "SELECT COUNT(*) FROM entities WHERE HEX(id) LIKE '%0000000C0001'"; t_sql 1 "SELECT COUNT(*) FROM entities WHERE HEX(id) LIKE '%0000000C0001'") | awk '{ n += $1 } END { print n }')" 523 \
	"the 523 lines before it stored, none after"
# a line the store refuses on input (too many values): the same contract
python3 -c 'import json
for i in range(50):
    if i == 37:
        print(json.dumps({"id": {"$uuid": "%08x-0000-4000-8000-0000000d0001" % i}, "big": [0] * 1100000}))
    else:
        print(json.dumps({"id": {"$uuid": "%08x-0000-4000-8000-0000000d0001" % i}, "g": 2}))' >"$T/huge.jsonl"
t_exit 2 "a line the store refuses stops the load" -- "$B" -c "$C" put "$T/huge.jsonl"
t_contains "$T_ERR" "huge.jsonl:38" "names FILE:LINE"
t_contains "$T_ERR" "more than 1048576 values" "says why"
t_eq "$(printf '%s\n' "$T_OUT" | grep -c .)" 37 "37 ids printed"
t_eq "$( (t_sql 0 "SELECT COUNT(*) FROM entities WHERE HEX(id) LIKE '%0000000D0001'"; t_sql 1 "SELECT COUNT(*) FROM entities WHERE HEX(id) LIKE '%0000000D0001'") | awk '{ n += $1 } END { print n }')" 37 \
	"the 37 lines before it stored, none after"
t_exit 0 "the index is still right" -- "$B" -c "$C" verify --index ix_g

t_done test_bulk

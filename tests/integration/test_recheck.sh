#!/bin/sh
# test_recheck.sh - index rows are never trusted, by readers or by the
# cleaner:
#
#   - a query re-checks every condition against the body, whichever
#     condition the stale row lies about and in whatever order the
#     conditions are given, with and without --limit;
#   - verify, verify --repair and the repair loop judge a row by its shard
#     as well as its values: a row with the right values on the wrong
#     shard is stale (and the entity's row missing), and is moved.
#
# Stale rows are planted with SQL by hand, as a crash, an old bug or an
# operator would leave them.
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
T=$(t_tmp)

t_exit 0 "init" -- "$B" -c "$C" init

# ------------------------------------------------------------ queries
# ix_q on (a:int, b:string, c:int), shard_on a. Entities eN (hex ids
# 0...0N): e1 a=1 b=x c=10; e2 a=1 b=y c=10; e3 a=1 b=z c=10;
# e4 a=1 b=w c=10; e5 a=3 b=w c=10.
t_exit 0 "create ix_q" -- "$B" -c "$C" index create ix_q --on a:int,b:string,c:int --shard-on a
id() { printf '000000000000400080000000000000%02x' "$1"; }
dashed() { printf '00000000-0000-4000-8000-0000000000%02x' "$1"; }
{
	printf '{"id":{"$uuid":"%s"},"a":1,"b":"x","c":10}\n' "$(dashed 1)"
	printf '{"id":{"$uuid":"%s"},"a":1,"b":"y","c":10}\n' "$(dashed 2)"
	printf '{"id":{"$uuid":"%s"},"a":1,"b":"z","c":10}\n' "$(dashed 3)"
	printf '{"id":{"$uuid":"%s"},"a":1,"b":"w","c":10}\n' "$(dashed 4)"
	printf '{"id":{"$uuid":"%s"},"a":3,"b":"w","c":10}\n' "$(dashed 5)"
} >"$T/q.jsonl"
t_exit 0 "put e1..e5" -- "$B" -c "$C" put "$T/q.jsonl"
# a=1 and a=3 both route to s1 (odd)
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM ix_q")" 5 "their rows on s1"
# the lies: e1's row says b=y (the second condition), e3's says c=11 (the
# third), e4's says a=3 (the first: the shard_on value, on a=3's shard)
t_sql 1 "UPDATE ix_q SET b='y' WHERE entity_id=X'$(id 1)'"
t_sql 1 "UPDATE ix_q SET c=11 WHERE entity_id=X'$(id 3)'"
t_sql 1 "UPDATE ix_q SET a=3 WHERE entity_id=X'$(id 4)'"

# found QUERY-ARGS...: the query's exit status, then the ids it prints,
# sorted, on one line ("0: ID ID ")
found() {
	"$B" -c "$C" query ix_q "$@" >"$T/found.out" 2>"$T/found.err"
	printf '%s: ' "$?"
	sed -n 's/^{"id":{"$uuid":"\([^"]*\)"}.*/\1/p' "$T/found.out" | sort | tr '\n' ' '
}
# every order of three conditions, with no limit, --limit 1 and --limit 5
perms() { # A B C: the six orders, one per line
	printf '%s %s %s\n%s %s %s\n%s %s %s\n%s %s %s\n%s %s %s\n%s %s %s\n' \
		"$1" "$2" "$3" "$1" "$3" "$2" "$2" "$1" "$3" "$2" "$3" "$1" "$3" "$1" "$2" "$3" "$2" "$1"
}
check_q() { # WANT DESC A B C
	want=$1 desc=$2
	shift 2
	perms "$@" >"$T/perms.txt"
	while read -r x y z; do
		for lim in "" "--limit 1" "--limit 5"; do
			# shellcheck disable=SC2086
			t_eq "$(found $x $y $z $lim)" "0: $want" "$desc: $x $y $z $lim"
		done
	done <"$T/perms.txt"
}
check_q "$(dashed 2) " "e1's row lies about b: only e2 has b=y" a=1 b=y c=10
check_q "" "e3's row lies about c: nothing has c=11" a=1 b=z c=11
check_q "$(dashed 5) " "e4's row lies about a: only e5 has a=3" a=3 b=w c=10
check_q "" "e3's only row says c=11: the truth is not found through it" a=1 b=z c=10
t_exit 1 "verify ix_q sees the three lies" -- "$B" -c "$C" verify --index ix_q
t_contains "$T_OUT" "5 entities checked, 0 missing, 3 stale" "3 stale"
t_exit 0 "verify --repair ix_q" -- "$B" -c "$C" verify --index ix_q --repair
check_q "$(dashed 3) " "repaired: e3 found by its real values" a=1 b=z c=10
check_q "$(dashed 1) " "repaired: e1 found by its real values" a=1 b=x c=10
check_q "$(dashed 4) " "repaired: e4 found by its real values" a=1 b=w c=10
check_q "$(dashed 2) " "repaired: still only e2 has b=y" a=1 b=y c=10

# ------------------------------------------------------------ the wrong shard
# ix_w on k:int, shard_on k (over the 5 entities above too); w1 has k=5 (its row belongs on s1), w2 has
# k=6 (s0), w3 has k=7 (s1).
t_exit 0 "create ix_w" -- "$B" -c "$C" index create ix_w --on k:int --shard-on k
t_exit 0 "build ix_w" -- "$B" -c "$C" cleaner --index ix_w
{
	printf '{"id":{"$uuid":"%s"},"k":5}\n' "$(dashed 33)"
	printf '{"id":{"$uuid":"%s"},"k":6}\n' "$(dashed 34)"
	printf '{"id":{"$uuid":"%s"},"k":7}\n' "$(dashed 35)"
} >"$T/w.jsonl"
t_exit 0 "put w1..w3" -- "$B" -c "$C" put "$T/w.jsonl"
where_is() { # HEX_ID: "s0 s1" row counts of ix_w for the entity
	echo "$(t_sql 0 "SELECT COUNT(*) FROM ix_w WHERE entity_id=X'$1'") $(t_sql 1 "SELECT COUNT(*) FROM ix_w WHERE entity_id=X'$1'")"
}
t_eq "$(where_is "$(id 33)") $(where_is "$(id 34)")" "0 1 1 0" "w1's row on s1, w2's on s0"
t_exit 0 "verify ix_w: clean to start with" -- "$B" -c "$C" verify --index ix_w

# w1's row moved to s0, values unchanged: the only row on the wrong shard
t_sql 1 "DELETE FROM ix_w WHERE entity_id=X'$(id 33)'"
t_sql 0 "INSERT INTO ix_w (k, entity_id) VALUES (5, X'$(id 33)')"
t_exit 1 "verify: a row on the wrong shard is drift" -- "$B" -c "$C" verify --index ix_w
t_contains "$T_OUT" "ix_w: 8 entities checked, 1 missing, 1 stale, 0 orphaned" "1 missing (on s1), 1 stale (on s0)"
t_exit 0 "verify --repair moves it" -- "$B" -c "$C" verify --index ix_w --repair
t_eq "$(where_is "$(id 33)")" "0 1" "w1's row back on s1 only"
t_exit 0 "verify: clean" -- "$B" -c "$C" verify --index ix_w

# w2's row copied to s1 beside its right one on s0
t_sql 1 "INSERT INTO ix_w (k, entity_id) VALUES (6, X'$(id 34)')"
t_exit 1 "verify: a right row plus a copy on the wrong shard" -- "$B" -c "$C" verify --index ix_w
t_contains "$T_OUT" "ix_w: 8 entities checked, 0 missing, 1 stale, 0 orphaned" "the copy is stale"
t_exit 0 "verify --repair removes the copy" -- "$B" -c "$C" verify --index ix_w --repair
t_eq "$(where_is "$(id 34)")" "1 0" "w2's row on s0 only"

# the repair loop: w3's row moved to s0, w3 touched (its updated now) so
# the loop looks at it; one cleaner pass moves the row back
t_sql 1 "DELETE FROM ix_w WHERE entity_id=X'$(id 35)'"
t_sql 0 "INSERT INTO ix_w (k, entity_id) VALUES (7, X'$(id 35)')"
t_sql 1 "UPDATE entities SET updated=NOW(6) WHERE id=X'$(id 35)'"
t_exit 0 "cleaner --once" -- "$B" -c "$C" cleaner --once
t_eq "$(where_is "$(id 35)")" "0 1" "the repair loop put w3's row back on s1, and only there"
t_exit 0 "verify: clean" -- "$B" -c "$C" verify --index ix_w

t_done test_recheck

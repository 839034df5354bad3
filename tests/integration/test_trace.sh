#!/bin/sh
# test_trace.sh - `bagstore --trace CMD`: every statement the command sends,
# on stderr, with its shard, time and rows. A put through a store with one
# index: the entity's write on the entity's shard and the index row's on
# the index row's shard, each named; through an account whose password is
# given by password_env, which shows nowhere; a value over 64 bytes
# shortened; a failing statement with MySQL's error; --trace with no
# command refused.
. tests/lib.sh
T=$(t_tmp)
CFG=$BAGSTORE_TEST_CONFIG
PW='Trace-Secret-4711'

# an account with a password on both shards
for s in 0 1; do
	t_sql $s "CREATE USER IF NOT EXISTS 'bs_trace'@'%' IDENTIFIED BY '$PW';
		CREATE USER IF NOT EXISTS 'bs_trace'@'localhost' IDENTIFIED BY '$PW';
		GRANT ALL ON bagstore.* TO 'bs_trace'@'%'; GRANT ALL ON bagstore.* TO 'bs_trace'@'localhost'" >/dev/null
done
sed 's/user: root/user: bs_trace, password_env: BS_TRACE_PW/' "$CFG" >"$T/pw.yaml"
BS_TRACE_PW=$PW
export BS_TRACE_PW

t_exit 0 "init" -- "$BAGSTORE" -c "$T/pw.yaml" init
t_exit 0 "an index" -- "$BAGSTORE" -c "$T/pw.yaml" index create by_user --on 'user:string(255)' --shard-on user

printf '{"user": "ann", "n": 1}\n' >"$T/one.json"
t_exit 0 "put with --trace" -- "$BAGSTORE" -c "$T/pw.yaml" --trace put "$T/one.json"
id=$T_OUT
trace=$T_ERR
t_match "$id" '^[0-9a-f]{32}$' "put prints the id"
# where the rows went, read back with plain SQL
ent_shard=""
idx_shard=""
for s in 0 1; do
	[ "$(t_sql $s "SELECT COUNT(*) FROM entities WHERE id=X'$id'")" = 1 ] && ent_shard=s$s
	[ "$(t_sql $s "SELECT COUNT(*) FROM by_user WHERE entity_id=X'$id'")" = 1 ] && idx_shard=s$s
done
t_match "$trace" "^trace: $ent_shard [0-9.]+m?s [0-9]+ rows?: .*INSERT INTO entities " \
	"the entity's write is traced on its shard ($ent_shard)"
t_match "$trace" "^trace: $idx_shard [0-9.]+m?s [0-9]+ rows?: .*INSERT INTO \`by_user\` " \
	"the index row's write is traced on its shard ($idx_shard)"
t_match "$trace" "^trace: s[01] .*SELECT name, on_spec, shard_on, state" "the catalog read is traced"
t_match "$trace" "^trace: s[01] .*FROM bagstore_meta" "the identity check is traced"
case "$trace$id" in
*"$PW"*) t_fail "the password shows nowhere" "$trace" ;;
*) t_ok "the password shows nowhere" ;;
esac
n=$(printf '%s\n' "$trace" | grep -c '^trace: ')
t_eq "$(printf '%s\n' "$trace" | grep -vc '^trace: ')" 0 "every line on stderr is a trace line ($n)"

# a value over 64 bytes: its first 32 bytes and its size
long=$(printf 'u%.0s' $(seq 1 100))
printf '{"user": "%s"}\n' "$long" >"$T/long.json"
t_exit 0 "put a long value with --trace" -- "$BAGSTORE" -c "$T/pw.yaml" --trace put "$T/long.json"
t_match "$T_ERR" "INSERT INTO \`by_user\` .*X'(75){32}\\.\\.\\.'\\[100 bytes\\]" "the long value is shortened, its size said"
case $T_ERR in
*"$(printf '75%.0s' $(seq 1 100))"*) t_fail "the long value is not shown whole" "$T_ERR" ;;
*) t_ok "the long value is not shown whole" ;;
esac

# a statement that fails: MySQL's error in its line
t_sql 0 "DROP TABLE by_user" >/dev/null
t_sql 1 "DROP TABLE by_user" >/dev/null
t_exit '!0' "a query whose index table is gone" -- "$BAGSTORE" -c "$T/pw.yaml" --trace query by_user user=ann
t_match "$T_ERR" "^trace: s[01] .* error 1146 \\(.*by_user.*\\): SELECT" "the failing statement's line carries MySQL's error"

# without --trace nothing is traced
t_exit 0 "get without --trace" -- "$BAGSTORE" -c "$T/pw.yaml" get "$id"
t_eq "$T_ERR" "" "no trace without --trace"
t_exit 2 "--trace with no command (the console) is refused" -- "$BAGSTORE" -c "$T/pw.yaml" --trace
t_contains "$T_ERR" ":log" "the refusal points to the console's :log"
for s in 0 1; do
	t_sql $s "DROP USER IF EXISTS 'bs_trace'@'%'; DROP USER IF EXISTS 'bs_trace'@'localhost'" >/dev/null
done
t_done test_trace

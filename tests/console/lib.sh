# tests/console/lib.sh - what the console's integration tests share
# (tests/integration/test_console_*.sh). Source it instead of tests/lib.sh:
#
#   . tests/console/lib.sh
#
# It sources tests/lib.sh and sets T (the test's scratch folder), CFG (the
# shards' configuration) and D (where headless dumps go, created). Then:
#
# c_init                  `bagstore init` on CFG, as a test step
# c_put N FN              FN I prints entity I's JSON line (I = 0..N-1); the
#                         N entities go into $T/e.jsonl and are put on CFG
# c_headless DESC KEYS [OPTION...]   the console headless on the key script
#                         KEYS with OPTIONs (--timeout 2, ...), dumping into D,
#                         as a test step that must exit 0
# d NAME                  the text of dump NAME ("" when absent)
# c_lacks NAME TEXT DESC  a negative check on a dump that must exist
# c_wait_sql SHARD SQL EXPECTED [SECS]   wait on an observable state
# c_still FILE            append `echo STILL-RUNNING-AFTER-QUIT` to a script
# shellcheck shell=sh

. tests/lib.sh
T=$(t_tmp)
CFG=$BAGSTORE_TEST_CONFIG
D=$T/dumps
mkdir -p "$D"

c_init() {
	t_exit 0 "init" -- "$BAGSTORE" -c "$CFG" init
}

c_put() {
	c_n=$1
	c_i=0
	: >"$T/e.jsonl"
	while [ $c_i -lt "$c_n" ]; do
		"$2" $c_i >>"$T/e.jsonl"
		c_i=$((c_i + 1))
	done
	# one write per line: the tests read the last line as the newest
	t_exit 0 "put $c_n entities" -- "$BAGSTORE" -c "$CFG" put --batch 1 "$T/e.jsonl"
}

c_headless() {
	c_desc=$1
	c_keys=$2
	shift 2
	t_exit 0 "$c_desc" -- "$BAGSTORE" -c "$CFG" "$@" --headless "$c_keys" --dump-dir "$D"
}

d() { cat "$D/$1.txt" 2>/dev/null; }

# c_lacks NAME TEXT DESC  pass when dump NAME is there and shows the console
#                         (its title bar), and TEXT is not on it: a negative
#                         check that fails when the dump is missing or empty
c_lacks() {
	c_dump=$(d "$1")
	case $c_dump in
	*" bagstore "*) ;;
	*) t_fail "$3" "dump $1 is missing or does not show the console" "$c_dump"; return 1 ;;
	esac
	t_lacks "$c_dump" "$2" "$3"
}

# c_wait_sql SHARD SQL EXPECTED [SECS]  wait until SQL on the shard prints
#                         EXPECTED (an observable state, not a sleep);
#                         1 when it did not within SECS (default 20)
c_wait_sql() {
	c_n=0
	while [ $c_n -lt $((${4:-20} * 10)) ]; do
		[ "$(t_sql "$1" "$2" 2>/dev/null)" = "$3" ] && return 0
		sleep 0.1
		c_n=$((c_n + 1))
	done
	return 1
}

# c_quit_script FILE  append a line after which the console must have left:
#                     `echo` prints it only if the script goes on
c_still() { echo "echo STILL-RUNNING-AFTER-QUIT" >>"$1"; }

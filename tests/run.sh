#!/bin/sh
# tests/run.sh - the test runner behind `make check`, `make asan`, `make valgrind`.
#
#   BUILD=build sh tests/run.sh [unit|integration|all] [NAME...]
#
# Starts two throwaway MariaDB shards (conf/shards.sh; ports 23407-23408, or
# 23507-23508 for build-asan, 23607-23608 for build-tsan: below Linux's
# ephemeral range, 32768-60999, so no client socket can hold one when a
# server binds it; data under $BUILD/check-shards), writes
# $BUILD/check.yaml for them, then runs each unit test binary
# $BUILD/tests/test_* and each tests/integration/test_*.sh (with sh, from the
# project folder). NAMEs, when given, pick tests by name (test_shards, ...).
# Between test files the shards are brought back up and database `bagstore`
# is dropped and recreated on each, so every test starts from nothing.
#
# Each test ends with a line "NAME: N passed, N failed"; the runner sums them
# and ends with one line "N passed, N failed". It exits 0 only when every test
# exited 0 and nothing failed. A test without its summary line, or that exits
# non-zero, counts as one failure.
#
# Environment given to tests: BAGSTORE_TEST_CONFIG (the shards' config),
# BAGSTORE (the CLI), SHARDS_DIR and SHARDS_SH (for conf/shards.sh
# stop-one/start-one/pause/resume NAME --dir "$SHARDS_DIR"), BUILD, TEST_ROOT.
#
# Knobs: BAGSTORE_VALGRIND=1 runs the unit binaries under valgrind;
# BAGSTORE_TSAN=1 (make tsan) writes ThreadSanitizer's reports under
# $BUILD/test-logs/tsan and counts each test that left one as a failure;
# BAGSTORE_TEST_TIMEOUT (seconds per test, default 300, 900 under valgrind);
# BAGSTORE_TEST_PORT (first shard port); BAGSTORE_KEEP_SHARDS=1 leaves the
# shards running afterwards (stop them with conf/shards.sh stop --dir ...).
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1

MODE=all
case ${1:-} in
unit|integration|all) MODE=$1; shift ;;
-h|--help) sed -n '2,25s/^# \{0,1\}//p' "$0"; exit 0 ;;
esac
FILTER="$*"

BUILD=${BUILD:-build}
case $BUILD in /*) B=$BUILD ;; *) B=$ROOT/$BUILD ;; esac
B=${B%/}
case $B in
*/build-asan) PORT=23507 ;;
*/build-tsan) PORT=23607 ;;
*) PORT=23407 ;;
esac
PORT=${BAGSTORE_TEST_PORT:-$PORT}
# tests that start servers of their own derive their ports from it
BAGSTORE_TEST_PORT=$PORT
export BAGSTORE_TEST_PORT
NSHARDS=2

SHARDS_SH=$ROOT/conf/shards.sh
SHARDS_DIR=$B/check-shards
BAGSTORE_TEST_CONFIG=$B/check.yaml
BAGSTORE=$B/bagstore
TEST_ROOT=$ROOT
export SHARDS_SH SHARDS_DIR BAGSTORE_TEST_CONFIG BAGSTORE BUILD TEST_ROOT
: "${UBSAN_OPTIONS:=print_stacktrace=1}"
export UBSAN_OPTIONS

VALGRIND=${BAGSTORE_VALGRIND:-0}
if [ "$VALGRIND" = 1 ]; then
	TMO=${BAGSTORE_TEST_TIMEOUT:-900}
else
	TMO=${BAGSTORE_TEST_TIMEOUT:-300}
fi

LOGDIR=$B/test-logs
mkdir -p "$LOGDIR" || exit 1
TSAN=${BAGSTORE_TSAN:-0}
if [ "$TSAN" = 1 ]; then
	rm -rf "$LOGDIR/tsan"
	mkdir -p "$LOGDIR/tsan" || exit 1
	TSAN_OPTIONS="log_path=$LOGDIR/tsan/report second_deadlock_stack=1 suppressions=$ROOT/tests/tsan.supp ${TSAN_OPTIONS:-}"
	export TSAN_OPTIONS
fi

PASSED=0
FAILED=0
CUR=""
T0=$(date +%s)

summary() {
	echo "$PASSED passed, $FAILED failed"
}

cleanup() {
	trap - EXIT INT TERM HUP
	[ -n "$CUR" ] && kill -TERM "$CUR" 2>/dev/null
	if [ "${BAGSTORE_KEEP_SHARDS:-0}" = 1 ]; then
		echo "run.sh: shards left running: sh conf/shards.sh stop --dir $SHARDS_DIR" >&2
	else
		sh "$SHARDS_SH" stop --dir "$SHARDS_DIR" >/dev/null 2>&1
	fi
}
on_signal() {
	echo
	echo "run.sh: interrupted"
	FAILED=$((FAILED + 1))
	cleanup
	summary
	exit 130
}
trap cleanup EXIT
trap on_signal INT TERM HUP

shards_up() {
	sh "$SHARDS_SH" start --count "$NSHARDS" --port "$PORT" --dir "$SHARDS_DIR"
}

# Bring the shards back (a test may have stopped, killed or paused one), cut
# off connections left by the last test, and empty database bagstore.
reset_shards() {
	if ! out=$(shards_up 2>&1 &&
		sh "$SHARDS_SH" reset --count "$NSHARDS" --dir "$SHARDS_DIR" 2>&1); then
		echo "$out"
		return 1
	fi
}

picked() { # name [unit]
	[ -z "$FILTER" ] && return 0
	for f in $FILTER; do
		[ "$f" = "$1" ] && return 0
		[ "$f" = unit ] && [ "${2:-}" = unit ] && return 0
	done
	return 1
}

# run_test NAME CMD...: runs one test file, shows its output, adds its counts.
run_test() {
	name=$1
	shift
	log=$LOGDIR/$name.log
	echo "== $name"
	if ! reset_shards; then
		echo "-- $name: FAILED: the shards could not be reset before it ran"
		FAILED=$((FAILED + 1))
		return
	fi
	start=$(date +%s)
	# In the background, so that Ctrl-C reaches our trap at once.
	timeout -k 10 "$TMO" "$@" </dev/null >"$log" 2>&1 &
	CUR=$!
	wait "$CUR"
	rc=$?
	CUR=""
	secs=$(($(date +%s) - start))
	cat "$log"
	line=$(grep -E ': [0-9]+ passed, [0-9]+ failed[[:space:]]*$' "$log" | tail -n 1)
	if [ -n "$line" ]; then
		np=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed[[:space:]]*$/\1/')
		nf=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed[[:space:]]*$/\2/')
		PASSED=$((PASSED + np))
		FAILED=$((FAILED + nf))
	fi
	why=""
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		why="timed out after ${TMO}s"
	elif [ "$rc" -gt 128 ]; then
		why="killed by signal $((rc - 128))"
	elif [ "$rc" != 0 ]; then
		why="exited $rc"
	fi
	if [ -z "$line" ]; then
		why="${why:+$why, }no summary line"
	elif [ -n "$why" ] && [ "$nf" = 0 ]; then
		why="$why with no failed checks"
	fi
	if [ "$TSAN" = 1 ] && ls "$LOGDIR/tsan"/report.* >/dev/null 2>&1; then
		mkdir -p "$LOGDIR/tsan/$name"
		mv "$LOGDIR/tsan"/report.* "$LOGDIR/tsan/$name/"
		cat "$LOGDIR/tsan/$name"/report.*
		why="${why:+$why, }ThreadSanitizer reports in $LOGDIR/tsan/$name"
		FAILED=$((FAILED + 1))
	elif [ -n "$why" ] && { [ -z "$line" ] || [ "$nf" = 0 ]; }; then
		FAILED=$((FAILED + 1))
	fi
	if [ -n "$why" ]; then
		echo "-- $name: FAILED ($why; ${secs}s; log $log)"
	else
		echo "-- $name: ok (${secs}s)"
	fi
}

echo "run.sh: $MODE tests, build $B, shards on 127.0.0.1:$PORT-$((PORT + NSHARDS - 1))"
if ! shards_up; then
	echo "run.sh: the test shards did not start"
	FAILED=$((FAILED + 1))
	summary
	exit 1
fi
sh "$SHARDS_SH" config --count "$NSHARDS" --port "$PORT" --catalog-ttl 1 \
	--out "$BAGSTORE_TEST_CONFIG" || { FAILED=$((FAILED + 1)); summary; exit 1; }

ran=0
if [ "$MODE" != integration ]; then
	for t in "$B"/tests/test_*; do
		if [ ! -f "$t" ] || [ ! -x "$t" ]; then continue; fi
		case $t in *.o|*.d) continue ;; esac
		n=${t##*/}
		picked "$n" unit || continue
		ran=$((ran + 1))
		if [ "$VALGRIND" = 1 ]; then
			# --max-stackframe: Connector/C's non-blocking calls run on a
			# small stack of its own (a coroutine). In a thread, that stack
			# and the thread's lie within valgrind's default 2 MB of each
			# other, so it took each switch for a frame and reported every
			# access on the other side as invalid (test_workers' backfill
			# thread). No frame of ours comes near 128 KiB.
			run_test "$n" valgrind -q --max-stackframe=131072 --leak-check=full --show-leak-kinds=definite,indirect \
				--errors-for-leak-kinds=definite,indirect --error-exitcode=9 \
				--suppressions="$ROOT/tests/valgrind.supp" "$t"
		else
			run_test "$n" "$t"
		fi
	done
fi
if [ "$MODE" != unit ]; then
	for t in tests/integration/test_*.sh; do
		[ -f "$t" ] || continue
		n=${t##*/}
		n=${n%.sh}
		picked "$n" || continue
		ran=$((ran + 1))
		run_test "$n" sh "$t"
	done
fi

[ "$ran" -gt 0 ] || echo "run.sh: no tests found"
echo "run.sh: $ran test files in $(($(date +%s) - T0))s"
summary
[ "$FAILED" = 0 ]

#!/bin/sh
# tests/quick.sh - make quick: the tests that need no server, in seconds.
#
#   BUILD=build sh tests/quick.sh TEST...
#
# Runs each unit test binary named ($BUILD/tests/TEST: the Makefile's
# QUICK_TESTS, the ones that start no shard and read no configuration of
# shards), then replays every fuzz target's seed corpus through it, built
# without libFuzzer ($BUILD/fuzz-replay/TARGET tests/fuzz/corpus/TARGET,
# plus the fixtures the fuzzer is seeded with). Ends with "N passed, N
# failed" as tests/run.sh does, and exits 1 on any failure.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
B=${BUILD:-build}
LOG=$B/test-logs
mkdir -p "$LOG" || exit 1
start=$(date +%s)
passed=0 failed=0

sum() { # NAME LOGFILE STATUS: add the "NAME: N passed, N failed" line up
	line=$(grep -E '^[a-z_]+: [0-9]+ passed, [0-9]+ failed$' "$2" | tail -n 1)
	if [ -z "$line" ] || [ "$3" != 0 ]; then
		echo "-- $1: FAILED (exit $3)"
		tail -n 20 "$2"
		failed=$((failed + 1))
		[ -n "$line" ] && { set -- $line; passed=$((passed + $2)); failed=$((failed + $4)); }
		return
	fi
	set -- $line
	passed=$((passed + $2)) failed=$((failed + $4))
	echo "-- $line"
}

for t in "$@"; do
	"$B/tests/$t" >"$LOG/quick-$t.log" 2>&1
	sum "$t" "$LOG/quick-$t.log" $?
done

for src in tests/fuzz/fuzz_*.c; do
	t=$(basename "$src" .c)
	seeds="tests/fuzz/corpus/$t"
	case $t in
	fuzz_body) seeds="$seeds tests/fixtures/bodies" ;;
	fuzz_config) seeds="$seeds tests/fixtures/config" ;;
	esac
	# shellcheck disable=SC2086
	"$B/fuzz-replay/$t" $seeds >"$LOG/quick-$t.log" 2>&1
	rc=$?
	n=$(sed -n "s/^$t: \([0-9]*\) inputs replayed, 0 unreadable$/\1/p" "$LOG/quick-$t.log")
	if [ "$rc" = 0 ] && [ -n "$n" ]; then
		echo "$t: $n passed, 0 failed" >>"$LOG/quick-$t.log"
	fi
	sum "$t" "$LOG/quick-$t.log" "$rc"
done

echo "quick: $((passed + failed)) checks in $(($(date +%s) - start))s"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]

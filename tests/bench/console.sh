#!/bin/sh
# tests/bench/console.sh - the console's benchmark (bench_console) on two
# throwaway local shards of its own (ports 37717-37718), runnable alone:
#
#   BUILD=build sh tests/bench/console.sh [N]     (N entities, default 1000000)
#
# Prints the time from a key to the redrawn screen when paging the entity
# browser (target under 50 ms) and the console's resident memory after
# paging through 100,000 entities (target under 64 MiB). The shards are
# stopped at the end; BENCH_CONSOLE_KEEP=1 keeps them (and their data, so a
# second run skips loading); stop them with
# sh conf/shards.sh stop --dir $BUILD/bench-console-shards
set -e
BUILD=${BUILD:-build}
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
dir=$BUILD/bench-console-shards
port=${BENCH_CONSOLE_PORT:-37717}
[ -x "$BUILD/bench/bench_console" ] || make --no-print-directory BAGSTORE_NO_DEPS=1 "$BUILD/bench/bench_console"
[ -x "$BUILD/bagstore" ] || make --no-print-directory BAGSTORE_NO_DEPS=1 "$BUILD/bagstore"
if [ "${BENCH_CONSOLE_KEEP:-0}" != 1 ]; then
	trap 'sh conf/shards.sh stop --dir "$dir" >/dev/null 2>&1 || true' EXIT INT TERM
fi
sh conf/shards.sh start --count 2 --port "$port" --dir "$dir" >/dev/null
sh conf/shards.sh config --count 2 --port "$port" --dir "$dir" --out "$BUILD/bench-console.yaml" >/dev/null
"$BUILD/bench/bench_console" "$BUILD/bench-console.yaml" "$BUILD/bagstore" "${1:-${BENCH_CONSOLE_N:-1000000}}"

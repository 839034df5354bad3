#!/bin/sh
# tests/bench/console.sh - the console's benchmark (bench_console) on
# throwaway local shards of its own (2 by default, ports 37717 and up),
# runnable alone:
#
#   BUILD=build sh tests/bench/console.sh [N]     (N entities, default 1000000)
#   BENCH_CONSOLE_SHARDS=16 BENCH_CONSOLE_PORT=37420 sh tests/bench/console.sh
#
# Prints the time from a key to the redrawn screen when paging the entity
# browser (target under 50 ms) and when reloading the shards and indexes
# screens, the console's resident memory after paging through 100,000
# entities (target under 64 MiB), and the census's time for 1,000 samples
# per shard beside a plain read of as many bodies. The shards are stopped
# at the end; BENCH_CONSOLE_KEEP=1 keeps them (and their data, so a second
# run skips loading); stop them with
# sh conf/shards.sh stop --dir $BUILD/bench-console-shards-N (N shards)
set -e
BUILD=${BUILD:-build}
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
count=${BENCH_CONSOLE_SHARDS:-2}
dir=$BUILD/bench-console-shards-$count
port=${BENCH_CONSOLE_PORT:-37717}
[ -x "$BUILD/bench/bench_console" ] || make --no-print-directory BAGSTORE_NO_DEPS=1 "$BUILD/bench/bench_console"
[ -x "$BUILD/bagstore" ] || make --no-print-directory BAGSTORE_NO_DEPS=1 "$BUILD/bagstore"
if [ "${BENCH_CONSOLE_KEEP:-0}" != 1 ]; then
	trap 'sh conf/shards.sh stop --dir "$dir" >/dev/null 2>&1 || true' EXIT INT TERM
fi
sh conf/shards.sh start --count "$count" --port "$port" --dir "$dir" >/dev/null
sh conf/shards.sh config --count "$count" --port "$port" --dir "$dir" --out "$BUILD/bench-console-$count.yaml" >/dev/null
"$BUILD/bench/bench_console" "$BUILD/bench-console-$count.yaml" "$BUILD/bagstore" "${1:-${BENCH_CONSOLE_N:-1000000}}"

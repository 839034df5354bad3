#!/bin/sh
# tests/bench/backfill.sh - the cleaner's benchmark (bench_backfill) on two
# throwaway local shards of its own (ports 36707-36708), runnable alone:
#
#   BUILD=build sh tests/bench/backfill.sh [N]     (N entities, default 1000000)
#
# Prints backfill time beside the floor, ALTER TABLE ... ADD INDEX and
# pt-online-schema-change; put latency with and without a backfill; repair
# lag under load with faults. The shards are stopped at the end.
set -e
BUILD=${BUILD:-build}
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
dir=$BUILD/bench-backfill-shards
port=${BENCH_BACKFILL_PORT:-36707}
[ -x "$BUILD/bench/bench_backfill" ] || make --no-print-directory BAGSTORE_NO_DEPS=1 "$BUILD/bench/bench_backfill"
trap 'sh conf/shards.sh stop --dir "$dir" >/dev/null 2>&1 || true' EXIT
trap 'exit 130' INT TERM
sh conf/shards.sh start --count 2 --port "$port" --dir "$dir" >/dev/null
sh conf/shards.sh config --count 2 --port "$port" --dir "$dir" --out "$BUILD/bench-backfill.yaml" >/dev/null
sh conf/shards.sh reset --count 2 --dir "$dir"
"$BUILD/bench/bench_backfill" "$BUILD/bench-backfill.yaml" "${1:-${BENCH_BACKFILL_N:-1000000}}"

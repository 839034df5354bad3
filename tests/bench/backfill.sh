#!/bin/sh
# tests/bench/backfill.sh - the cleaner's benchmark (bench_backfill) on
# throwaway local shards of its own, runnable alone:
#
#   BUILD=build sh tests/bench/backfill.sh [N]     (N entities, default 1000000)
#
# First on two shards (ports 28740-28741, or BENCH_BACKFILL_PORT: below
# Linux's ephemeral port range, like every test and bench port): backfill
# time beside the floor, ALTER TABLE ... ADD INDEX and
# pt-online-schema-change; put latency without a backfill and during one,
# unthrottled and throttled with each setting tried (the trade-off curve);
# repair lag under load with faults. Then on eight shards (ports 28750-
# 28757, or BENCH_BACKFILL_PORT8; BENCH_BACKFILL_8=0 skips it): backfill
# time beside the floor and pt-online-schema-change. BENCH_RUNS runs of
# each figure (default 3). The shards are stopped at the end;
# BENCH_BACKFILL_KEEP=1 keeps them and their data, so that a second run
# (BENCH_REUSE=1 is then set) skips loading.
set -e
BUILD=${BUILD:-build}
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
dir=$BUILD/bench-backfill-shards
dir8=$BUILD/bench-backfill-shards8
port=${BENCH_BACKFILL_PORT:-28740}
port8=${BENCH_BACKFILL_PORT8:-28750}
n=${1:-${BENCH_BACKFILL_N:-1000000}}
[ -x "$BUILD/bench/bench_backfill" ] || make --no-print-directory BAGSTORE_NO_DEPS=1 "$BUILD/bench/bench_backfill"
if [ "${BENCH_BACKFILL_KEEP:-0}" != 1 ]; then
	trap 'sh conf/shards.sh stop --dir "$dir" >/dev/null 2>&1 || true; sh conf/shards.sh stop --dir "$dir8" >/dev/null 2>&1 || true' EXIT
	reuse=0
else
	reuse=1
fi
trap 'exit 130' INT TERM
# shards and a configuration for them: COUNT PORT DIR YAML
shards() {
	sh conf/shards.sh start --count "$1" --port "$2" --dir "$3" >/dev/null
	sh conf/shards.sh config --count "$1" --port "$2" --dir "$3" --out "$4" >/dev/null
	[ "$reuse" = 1 ] || sh conf/shards.sh reset --count "$1" --dir "$3"
}
echo "-- two shards"
shards 2 "$port" "$dir" "$BUILD/bench-backfill.yaml"
BENCH_REUSE=$reuse "$BUILD/bench/bench_backfill" "$BUILD/bench-backfill.yaml" "$n"
[ "${BENCH_BACKFILL_KEEP:-0}" = 1 ] || sh conf/shards.sh stop --dir "$dir" >/dev/null 2>&1 || true
if [ "${BENCH_BACKFILL_8:-1}" != 0 ]; then
	echo
	echo "-- eight shards"
	shards 8 "$port8" "$dir8" "$BUILD/bench-backfill8.yaml"
	BENCH_REUSE=$reuse BENCH_PARTS=${BENCH_PARTS8:-floor,backfill,ptosc} \
		"$BUILD/bench/bench_backfill" "$BUILD/bench-backfill8.yaml" "$n"
fi

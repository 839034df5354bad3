#!/bin/sh
# tests/bench/reshard.sh - resharding's benchmark (bench_reshard bench) on
# four throwaway local shards of its own (ports 28800-28803, or
# BENCH_RESHARD_PORT), runnable alone:
#
#   BUILD=build sh tests/bench/reshard.sh [N]     (N entities, default 1000000)
#
# A store on two of them, N entities loaded, the other two added; four
# writers put for 15 s (BENCH_BASE_S), then the plan spreading the buckets
# over the four runs in a cleaner while they go on. Prints the time beside
# the floor (the same rows copied as multi-row INSERTs), put latency with
# and without a move (and during it, into moving buckets and the others),
# the CPU the servers, the writers and the cleaner used in each window, the
# longest put around a cut-over, failed writes, and a check that every
# entity is once on its bucket's owner. The writers put one after another
# as fast as they can, which keeps a small host's CPUs busy before any
# move. Then the same with four writers at a rate, 150 puts/s each
# (BENCH_RESHARD_RATE; 0 skips it), each put's latency counted from its
# due time: writers that leave the host room, as an application's do.
# Then the same with no writer (BENCH_RESHARD_ALONE=0 skips it): the
# cleaner's own pace beside the floor.
# catalog_ttl is 1 s, the grace before a move's cleanup. The shards are
# stopped at the end.
set -e
BUILD=${BUILD:-build}
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
dir=$BUILD/bench-reshard-shards
port=${BENCH_RESHARD_PORT:-28800}
[ -x "$BUILD/bench/bench_reshard" ] || make --no-print-directory BAGSTORE_NO_DEPS=1 "$BUILD/bench/bench_reshard"
trap 'sh conf/shards.sh stop --dir "$dir" >/dev/null 2>&1 || true' EXIT
trap 'exit 130' INT TERM
sh conf/shards.sh start --count 4 --port "$port" --dir "$dir" >/dev/null
sh conf/shards.sh config --count 2 --port "$port" --dir "$dir" --catalog-ttl 1 --out "$BUILD/bench-reshard-2.yaml" >/dev/null
sh conf/shards.sh config --count 4 --port "$port" --dir "$dir" --catalog-ttl 1 --out "$BUILD/bench-reshard-4.yaml" >/dev/null
n=${1:-${BENCH_RESHARD_N:-1000000}}
sh conf/shards.sh reset --count 4 --dir "$dir"
"$BUILD/bench/bench_reshard" bench "$BUILD/bench-reshard-2.yaml" "$BUILD/bench-reshard-4.yaml" "$n"
rate=${BENCH_RESHARD_RATE:-150}
if [ "$rate" != 0 ]; then
	echo
	echo "-- the same reshard with four writers at $rate puts/s each"
	sh conf/shards.sh reset --count 4 --dir "$dir"
	BENCH_WRITER_RATE=$rate "$BUILD/bench/bench_reshard" bench "$BUILD/bench-reshard-2.yaml" "$BUILD/bench-reshard-4.yaml" "$n"
fi
if [ "${BENCH_RESHARD_ALONE:-1}" != 0 ]; then
	echo
	echo "-- the same reshard with no writer"
	sh conf/shards.sh reset --count 4 --dir "$dir"
	BENCH_WRITERS=0 BENCH_BASE_S=0 "$BUILD/bench/bench_reshard" bench "$BUILD/bench-reshard-2.yaml" "$BUILD/bench-reshard-4.yaml" "$n"
fi

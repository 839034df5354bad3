#!/bin/sh
# make bench: every benchmark under tests/bench, each on throwaway shards of
# its own, printing its figures beside their references. Not part of check.
set -e
BUILD=${BUILD:-build}
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
# pt-online-schema-change is one of the backfill's references
[ -n "$BAGSTORE_NO_DEPS" ] || sh scripts/deps.sh percona-toolkit
dir=$BUILD/bench-shards
port=28707
trap 'sh conf/shards.sh stop --dir "$dir" >/dev/null 2>&1 || true' EXIT
trap 'exit 130' INT TERM
sh conf/shards.sh start --count 2 --port $port --dir "$dir"
sh conf/shards.sh config --count 2 --port $port --dir "$dir" --out "$BUILD/bench.yaml" >/dev/null
echo "== put / get / query against plain SQL"
sh conf/shards.sh reset --count 2 --dir "$dir"
"$BUILD/bench/bench_ops" "$BUILD/bench.yaml" "${BENCH_OPS_N:-20000}"
echo
echo "== bulk put and export against their floors"
sh conf/shards.sh reset --count 2 --dir "$dir"
"$BUILD/bench/bench_bulk" "$BUILD/bench.yaml" "${BENCH_BULK_N:-100000}" "${BENCH_BULK_RUNS:-3}"
echo
echo "== a query on every shard beside one on one shard, at 16 shards"
dir16=$BUILD/bench-shards16
port16=28720
trap 'sh conf/shards.sh stop --dir "$dir" >/dev/null 2>&1 || true; sh conf/shards.sh stop --dir "$dir16" >/dev/null 2>&1 || true' EXIT
sh conf/shards.sh start --count 16 --port $port16 --dir "$dir16" >/dev/null
sh conf/shards.sh config --count 16 --port $port16 --dir "$dir16" --out "$BUILD/bench16.yaml" >/dev/null
sh conf/shards.sh reset --count 16 --dir "$dir16"
"$BUILD/bench/bench_fanout" "$BUILD/bench16.yaml" "${BENCH_FANOUT_N:-16000}" "${BENCH_FANOUT_Q:-400}"
sh conf/shards.sh stop --dir "$dir16" >/dev/null 2>&1 || true
for extra in tests/bench/backfill.sh tests/bench/console.sh tests/bench/reshard.sh; do
	if [ -f "$extra" ]; then
		echo
		echo "== $extra"
		BUILD=$BUILD sh "$extra"
	fi
done

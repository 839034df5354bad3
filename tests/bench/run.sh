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
for extra in tests/bench/backfill.sh tests/bench/console.sh; do
	if [ -f "$extra" ]; then
		echo
		echo "== $extra"
		BUILD=$BUILD sh "$extra"
	fi
done

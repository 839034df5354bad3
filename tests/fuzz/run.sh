#!/bin/sh
# run.sh - build tests/fuzz/fuzz_body.c with libFuzzer, ASan and UBSan
# against the engine's codec sources, and run it for a bounded time with
# tests/fixtures/bodies as the seed corpus.
#
#   tests/fuzz/run.sh [SECONDS]     default 60 (or $FUZZ_SECONDS)
#
# Env: FUZZ_CC (clang), FUZZ_BUILD (build/fuzz), FUZZ_CORPUS
# (tests/fuzz/corpus, where new inputs are kept), FUZZ_JOBS (1), FUZZ_ARGS
# (extra libFuzzer flags). A crash leaves $FUZZ_BUILD/crash-*; replay it
# with $FUZZ_BUILD/fuzz_body FILE.
set -eu

cd "$(dirname "$0")/../.."
root=$(pwd)
secs=${1:-${FUZZ_SECONDS:-60}}
cc=${FUZZ_CC:-clang}
out=${FUZZ_BUILD:-build/fuzz}
corpus=${FUZZ_CORPUS:-tests/fuzz/corpus}
jobs=${FUZZ_JOBS:-1}
pkgs="msgpack jansson yaml-0.1 zlib uuid mysqlclient"

case $out in /*) ;; *) out=$root/$out ;; esac
case $corpus in /*) ;; *) corpus=$root/$corpus ;; esac
mkdir -p "$out" "$corpus"

echo "  FUZZ    building $out/fuzz_body"
# shellcheck disable=SC2046
$cc -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-Wall -Wextra -Wshadow -Iengine $(pkg-config --cflags $pkgs) \
	tests/fuzz/fuzz_body.c \
	engine/error.c engine/bytes.c engine/buf.c engine/value.c engine/id.c engine/base64.c engine/msgpack.c \
	engine/body.c engine/json.c engine/yaml.c \
	$(pkg-config --libs $pkgs) -pthread -lm -o "$out/fuzz_body"

echo "  FUZZ    running for ${secs}s"
par=
if [ "$jobs" -gt 1 ]; then
	par="-jobs=$jobs -workers=$jobs"
fi
cd "$out" # libFuzzer writes fuzz-N.log here when jobs > 1
# shellcheck disable=SC2086
exec "$out/fuzz_body" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2560 \
	-max_len=65536 $par -print_final_stats=1 -artifact_prefix="$out/" \
	${FUZZ_ARGS:-} "$corpus" "$root/tests/fixtures/bodies"

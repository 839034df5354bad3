#!/bin/sh
# run.sh - make fuzz: build every fuzz target (tests/fuzz/fuzz_*.c) with
# clang's libFuzzer, ASan and UBSan over the engine's sources, and run each
# for a bounded time from its seed corpus, tests/fuzz/corpus/TARGET/ (plus
# tests/fixtures/bodies for fuzz_body and tests/fixtures/config for
# fuzz_config).
#
#   tests/fuzz/run.sh [SECONDS] [TARGET...]   SECONDS per target: 60 (or
#                                             $FUZZ_SECONDS); every target
#
# Env: FUZZ_CC (clang), FUZZ_BUILD (build/fuzz), FUZZ_JOBS (1), FUZZ_ARGS
# (extra libFuzzer flags). What the fuzzer finds is kept in
# $FUZZ_BUILD/corpus/TARGET, outside the tree: copy an input worth keeping
# into tests/fuzz/corpus/TARGET/, where make quick replays it with every
# build (tests/fuzz/replay.c, no clang needed). A crash leaves
# $FUZZ_BUILD/TARGET-crash-*; replay it with $FUZZ_BUILD/TARGET FILE.
set -eu

cd "$(dirname "$0")/../.."
root=$(pwd)
secs=${1:-${FUZZ_SECONDS:-60}}
[ $# -gt 0 ] && shift
cc=${FUZZ_CC:-clang}
out=${FUZZ_BUILD:-build/fuzz}
jobs=${FUZZ_JOBS:-1}
pkgs="mysqlclient zlib yaml-0.1 uuid msgpack jansson"
case $out in /*) ;; *) out=$root/$out ;; esac
mkdir -p "$out/obj"

targets="$*"
[ -n "$targets" ] || targets=$(cd tests/fuzz && ls fuzz_*.c | sed 's/\.c$//')

# shellcheck disable=SC2046
cflags="-std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined
	-fno-sanitize-recover=undefined -Wall -Wextra -Wshadow -Wno-unused-parameter -Iengine
	$(pkg-config --cflags $pkgs)"
# The engine, instrumented for the fuzzer (each object rebuilt when its
# source or a header is newer).
echo "  FUZZ    building the engine in $out/obj"
newest_h=$(ls -t engine/*.h | head -n 1)
for src in engine/*.c; do
	o=$out/obj/$(basename "$src" .c).o
	if [ ! -f "$o" ] || [ "$src" -nt "$o" ] || [ "$newest_h" -nt "$o" ]; then
		echo "$src $o"
	fi
done | xargs -r -P 2 -n 2 sh -c "$cc $(echo $cflags) -fsanitize=fuzzer-no-link -c -o \"\$1\" \"\$0\""
rm -f "$out/libbagstore-fuzz.a"
ar rcs "$out/libbagstore-fuzz.a" "$out"/obj/*.o

status=0
for t in $targets; do
	echo "  FUZZ    $t: building"
	# shellcheck disable=SC2086
	$cc $cflags -fsanitize=fuzzer "tests/fuzz/$t.c" "$out/libbagstore-fuzz.a" \
		$(pkg-config --libs $pkgs) -pthread -lm -o "$out/$t"
	seeds="$root/tests/fuzz/corpus/$t"
	case $t in
	fuzz_body) seeds="$seeds $root/tests/fixtures/bodies" ;;
	fuzz_config) seeds="$seeds $root/tests/fixtures/config" ;;
	esac
	mkdir -p "$out/corpus/$t"
	par=
	[ "$jobs" -gt 1 ] && par="-jobs=$jobs -workers=$jobs"
	echo "  FUZZ    $t: running for ${secs}s"
	# libFuzzer writes fuzz-N.log in the working folder when jobs > 1
	# shellcheck disable=SC2086
	(cd "$out" && "$out/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2560 \
		-max_len=65536 $par -print_final_stats=1 -artifact_prefix="$out/$t-" \
		${FUZZ_ARGS:-} "$out/corpus/$t" $seeds) || { echo "  FUZZ    $t: FAILED"; status=1; }
done
exit $status

#!/bin/sh
# tests/run.sh - the test runner behind `make check`, `make asan`, `make tsan`
# and `make valgrind`.
#
#   BUILD=build sh tests/run.sh [unit|integration|all] [NAME...]
#
# Runs each unit test binary $BUILD/tests/test_* and each
# tests/integration/test_*.sh (with sh, from the project folder) against
# throwaway MariaDB shards. NAMEs, when given, pick tests by name
# (test_shards, ...; `unit` picks every unit test).
#
# Workers: the tests run on BAGSTORE_JOBS workers at once (1 runs them one
# after another). The default is one more than the cores: a test spends
# about half its time waiting (for a timeout, a cleaner's round, a server
# stopping), so with as many workers as cores the CPU sat idle half of a
# `make check` (vmstat), and one worker more cut its wall time by a third
# on 2 cores. Sanitized and valgrind runs are CPU-bound: as many as the
# cores there. Worker k has a pair of
# shards of its own (conf/shards.sh) on ports P+k*500 and P+k*500+1, where P
# is BAGSTORE_TEST_PORT or 23407 (23507 for build-asan, 23607 for
# build-tsan: below Linux's ephemeral range, 32768-60999, so no client
# socket can hold one when a server binds it), data under
# $BUILD/check-shards-k and their configuration in $BUILD/check-k.yaml
# (worker 0: $BUILD/check-shards and $BUILD/check.yaml). A test is given
# its worker's port as BAGSTORE_TEST_PORT and may use the ports from there
# to +499 for servers of its own, under t_servers (tests/lib.sh), so no two
# workers meet. Each worker takes the next test nobody has taken from one
# list, longest first: by the seconds each took last time
# ($BUILD/test-logs/durations), else by the estimates in LONG below.
# Before each test its worker's shards are brought back up and database
# `bagstore` is dropped and recreated on each, so every test starts from
# nothing.
#
# Output: a test's output goes to $BUILD/test-logs/NAME.log (a unit test's
# to test-logs/unit/NAME.log: test_cleaner is both); when it ends
# it is printed whole (never mixed with another's), in the order tests end:
# "== NAME", the log, then "-- NAME: ok (Ns)" or "-- NAME: FAILED (why...)".
# Each test ends its output with "NAME: N passed, N failed"; the runner sums
# them and ends with one line "N passed, N failed". It exits 0 only when
# every test exited 0 and nothing failed. A test without its summary line,
# that exits non-zero, or whose log shows the shell's own error in a test
# script ("x.sh: 12: t_foo: not found": a check that never ran), counts as
# one failure.
#
# Environment given to tests: BAGSTORE_TEST_CONFIG (the worker's shards'
# config), BAGSTORE_TEST_PORT, BAGSTORE (the CLI), SHARDS_DIR and SHARDS_SH
# (for conf/shards.sh stop-one/start-one/pause/resume NAME --dir
# "$SHARDS_DIR"), BUILD, TEST_ROOT.
#
# Knobs: BAGSTORE_JOBS (workers); BAGSTORE_VALGRIND=1 runs the unit binaries
# under valgrind; BAGSTORE_TSAN=1 (make tsan) writes ThreadSanitizer's
# reports under $BUILD/test-logs/tsan/NAME (tsan/unit/NAME) and counts each
# test that left one as a failure; BAGSTORE_TEST_TIMEOUT (seconds per test; default 300,
# 900 under valgrind, times (workers + 1) / 2 when workers share the
# cores); BAGSTORE_TEST_PORT (P above); BAGSTORE_KEEP_SHARDS=1 leaves the
# shards running afterwards (stop them with conf/shards.sh stop --dir ...).
#
# Disk: every shard gets a 16M redo log (SHARDS_REDO_LOG, unless set). When
# a test passes, the servers it started itself are purged (conf/shards.sh
# purge: stopped, data deleted, logs kept); a failed test's are kept (.keep)
# until the next run begins. When a run ends with nothing failed, the
# workers' own shards are purged too; else they are only stopped.
# BAGSTORE_KEEP_SHARDS=1 purges nothing.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1

MODE=all
case ${1:-} in
unit|integration|all) MODE=$1; shift ;;
-h|--help) sed -n '2,/^set -u$/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
esac
FILTER="$*"

# Tests known to be long, with their seconds on 2 workers on 2 cores: the
# order of a first run, before $BUILD/test-logs/durations exists. Other
# tests count as 10 s.
LONG="test_throttle:55 test_service:50 test_reshard:45 test_hostile:45 \
	test_cleaner:37 test_routing:36 test_service_stop_twice:32 test_metrics_moves:21 \
	test_replica:27 test_service_hung_stop:22 test_lag_history:22 test_console_screens:18 \
	test_console_config:17 test_bulk_leaving:17 test_service_shard_list:17 \
	test_daemon_slots:14 test_cleaner_knobs:14"

BUILD=${BUILD:-build}
case $BUILD in /*) B=$BUILD ;; *) B=$ROOT/$BUILD ;; esac
B=${B%/}
case $B in
*/build-asan) PORT=23507 ;;
*/build-tsan) PORT=23607 ;;
*) PORT=23407 ;;
esac
PORT=${BAGSTORE_TEST_PORT:-$PORT}
STRIDE=500
NSHARDS=2

is_uint() { case $1 in ''|*[!0-9]*) return 1 ;; *) return 0 ;; esac; }
CORES=$(nproc 2>/dev/null || echo 1)
case $B in
*/build-asan|*/build-tsan) JOBS=$CORES ;;
*) JOBS=$((CORES + 1)) ;;
esac
[ "${BAGSTORE_VALGRIND:-0}" = 1 ] && JOBS=$CORES
JOBS=${BAGSTORE_JOBS:-$JOBS}
if ! is_uint "$JOBS" || [ "$JOBS" -lt 1 ]; then
	echo "run.sh: BAGSTORE_JOBS wants a positive number, got '$JOBS'" >&2
	exit 2
fi

SHARDS_SH=$ROOT/conf/shards.sh
# a 16M redo log: a third of a shard's disk (MariaDB's default is 96M)
: "${SHARDS_REDO_LOG:=16M}"
export SHARDS_REDO_LOG
BAGSTORE=$B/bagstore
TEST_ROOT=$ROOT
export SHARDS_SH BAGSTORE BUILD TEST_ROOT
: "${UBSAN_OPTIONS:=print_stacktrace=1}"
export UBSAN_OPTIONS

LOGDIR=$B/test-logs
mkdir -p "$LOGDIR" || exit 1
VALGRIND=${BAGSTORE_VALGRIND:-0}
DURATIONS=$LOGDIR/durations
if [ "$VALGRIND" = 1 ]; then
	TMO=900
	DURATIONS=$LOGDIR/durations-valgrind
else
	TMO=300
fi
TSAN=${BAGSTORE_TSAN:-0}
if [ "$TSAN" = 1 ]; then
	rm -rf "$LOGDIR/tsan"
	mkdir -p "$LOGDIR/tsan" || exit 1
	TSAN_REST="second_deadlock_stack=1 suppressions=$ROOT/tests/tsan.supp ${TSAN_OPTIONS:-}"
fi

# The run's own scratch: who took which test, results, the output lock.
RUN=$B/test-run
rm -rf "$RUN"
# a failed test's servers were kept for the run that failed, not for ever
rm -f "$B"/check-shards*.*/.keep "$B"/check-shards*.*/*/.keep
mkdir -p "$RUN/taken/unit" "$RUN/unit" "$LOGDIR/unit" || exit 1
: >"$RUN/tally"
: >"$RUN/durations"

T0=$(date +%s)

# ------------------------------------------------------------ the test list

picked() { # name [unit]
	[ -z "$FILTER" ] && return 0
	for f in $FILTER; do
		[ "$f" = "$1" ] && return 0
		[ "$f" = unit ] && [ "${2:-}" = unit ] && return 0
	done
	return 1
}

# the tests' ids, in the order found: unit/NAME for a unit test (a unit
# test and an integration test may share a name: test_cleaner), NAME for
# an integration test
list_tests() {
	if [ "$MODE" != integration ]; then
		for t in "$B"/tests/test_*; do
			if [ ! -f "$t" ] || [ ! -x "$t" ]; then continue; fi
			case $t in *.o|*.d) continue ;; esac
			n=${t##*/}
			picked "$n" unit && echo "unit/$n"
		done
	fi
	if [ "$MODE" != unit ]; then
		for t in tests/integration/test_*.sh; do
			[ -f "$t" ] || continue
			n=${t##*/}
			n=${n%.sh}
			picked "$n" && echo "$n"
		done
	fi
}

# longest first: the seconds of the last run, else LONG's, else 10
list_tests | awk -v long="$LONG" -v dfile="$DURATIONS" '
	BEGIN {
		n = split(long, l, " ")
		for (i = 1; i <= n; i++) { split(l[i], kv, ":"); est[kv[1]] = kv[2] }
		while ((getline line < dfile) > 0) {
			split(line, f, " ")
			if (f[2] ~ /^[0-9]+$/) est[f[1]] = f[2]
		}
	}
	{ print (($1 in est) ? est[$1] : 10), NR, $0 }' |
	sort -k1,1nr -k2,2n | cut -d' ' -f3 >"$RUN/queue"
NTESTS=$(wc -l <"$RUN/queue")
NTESTS=$((NTESTS + 0))
[ "$JOBS" -gt "$NTESTS" ] && [ "$NTESTS" -gt 0 ] && JOBS=$NTESTS

# Workers sharing the cores make each test slower: more time each.
if [ -n "${BAGSTORE_TEST_TIMEOUT:-}" ]; then
	TMO=$BAGSTORE_TEST_TIMEOUT
elif [ "$JOBS" -gt 1 ]; then
	TMO=$((TMO * (JOBS + 1) / 2))
fi

# ------------------------------------------------------------ a worker

# worker_env K: the worker's port, shards and configuration
worker_env() {
	WPORT=$((PORT + $1 * STRIDE))
	if [ "$1" = 0 ]; then
		SHARDS_DIR=$B/check-shards
		BAGSTORE_TEST_CONFIG=$B/check.yaml
	else
		SHARDS_DIR=$B/check-shards-$1
		BAGSTORE_TEST_CONFIG=$B/check-$1.yaml
	fi
	BAGSTORE_TEST_PORT=$WPORT
	export SHARDS_DIR BAGSTORE_TEST_CONFIG BAGSTORE_TEST_PORT
}

shards_up() {
	sh "$SHARDS_SH" start --count "$NSHARDS" --port "$WPORT" --dir "$SHARDS_DIR" </dev/null
}

# Bring the shards back (a test may have stopped, killed or paused one), cut
# off connections left by the last test, and empty database bagstore.
reset_shards() {
	if ! out=$(shards_up 2>&1 &&
		sh "$SHARDS_SH" reset --count "$NSHARDS" --dir "$SHARDS_DIR" 2>&1 </dev/null); then
		echo "$out"
		return 1
	fi
}

# out_block FILE: print a finished test's output whole, one at a time
out_block() {
	while ! mkdir "$RUN/lock" 2>/dev/null; do sleep 0.05; done
	cat "$1"
	rmdir "$RUN/lock"
}

# run_test ID CMD...: runs one test file, prints its output when it ends,
# and adds "ID PASSED FAILED" to the tally.
run_test() {
	id=$1 name=${1#unit/}
	shift
	log=$LOGDIR/$id.log
	blk=$RUN/$id.out
	if [ "$JOBS" = 1 ]; then
		echo "== $name"
		: >"$blk"
	else
		echo "== $name" >"$blk"
	fi
	if ! reset_shards >>"$blk"; then
		echo "-- $name: FAILED: the shards could not be reset before it ran" >>"$blk"
		echo "$id 0 1" >>"$RUN/tally"
		out_block "$blk"
		return
	fi
	if [ "$TSAN" = 1 ]; then
		mkdir -p "$LOGDIR/tsan/$id"
		TSAN_OPTIONS="log_path=$LOGDIR/tsan/$id/report $TSAN_REST"
		export TSAN_OPTIONS
	fi
	start=$(date +%s)
	# In the background, so that a signal reaches our trap at once.
	timeout -k 10 "$TMO" "$@" </dev/null >"$log" 2>&1 &
	CUR=$!
	wait "$CUR"
	rc=$?
	CUR=""
	secs=$(($(date +%s) - start))
	echo "$id $secs" >>"$RUN/durations"
	cat "$log" >>"$blk"
	np=0 nf=0 failed=0
	line=$(grep -E ': [0-9]+ passed, [0-9]+ failed[[:space:]]*$' "$log" | tail -n 1)
	if [ -n "$line" ]; then
		np=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed[[:space:]]*$/\1/')
		nf=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed[[:space:]]*$/\2/')
	fi
	why=""
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		why="timed out after ${TMO}s"
	elif [ "$rc" -gt 128 ]; then
		why="killed by signal $((rc - 128))"
	elif [ "$rc" != 0 ]; then
		why="exited $rc"
	fi
	if [ -z "$line" ]; then
		why="${why:+$why, }no summary line"
	elif [ -n "$why" ] && [ "$nf" = 0 ]; then
		why="$why with no failed checks"
	fi
	# the shell's own error in a test script ("x.sh: 12: t_foo: not
	# found"): a check that did not run, which no summary counts
	shell_err=$(grep -E '^[^ ]*\.sh: [0-9]+: ' "$log" | head -n 1)
	if [ -n "$shell_err" ]; then
		why="${why:+$why, }a shell error: $shell_err"
		failed=1
	fi
	if [ "$TSAN" = 1 ] && ls "$LOGDIR/tsan/$id"/report.* >/dev/null 2>&1; then
		cat "$LOGDIR/tsan/$id"/report.* >>"$blk"
		why="${why:+$why, }ThreadSanitizer reports in $LOGDIR/tsan/$id"
		failed=1
	elif [ -n "$why" ] && { [ -z "$line" ] || [ "$nf" = 0 ]; }; then
		failed=1
	fi
	[ "$TSAN" = 1 ] && rmdir "$LOGDIR/tsan/$id" 2>/dev/null
	if [ -n "$why" ]; then
		echo "-- $name: FAILED ($why; ${secs}s; log $log)" >>"$blk"
	else
		echo "-- $name: ok (${secs}s)" >>"$blk"
	fi
	echo "$id $np $((nf + failed))" >>"$RUN/tally"
	# The servers it started itself (t_servers) take no disk once it has
	# passed; a failed test's stay, to be read.
	if [ -z "$why" ] && [ "$nf" = 0 ] && [ "$failed" = 0 ]; then
		purge_own
	else
		keep_own
	fi
	out_block "$blk"
}

# own_each CMD...: CMD... DIR for each folder of servers this worker's
# tests started themselves ($SHARDS_DIR.NAME, and one level below), in
# this shell (a CMD that backgrounds a job leaves it to our wait)
own_each() {
	for d in "$SHARDS_DIR".*/ "$SHARDS_DIR".*/*/; do
		ls "${d%/}"/*/port >/dev/null 2>&1 && "$@" "${d%/}"
	done
	return 0
}
has_data() { ls -d "$1"/*/data >/dev/null 2>&1; }
# after a test that passed: what holds data and is no failed test's
purge_dir() {
	has_data "$1" && [ ! -e "$1/.keep" ] && sh "$SHARDS_SH" purge --dir "$1" >/dev/null 2>&1
	return 0
}
# after a test that failed: its servers' data stays, to be read, until the
# next run begins (the last test's are the only ones left with data but
# for earlier failed ones, already marked)
keep_dir() {
	has_data "$1" && : >"$1/.keep"
	return 0
}
stop_dir_bg() { sh "$SHARDS_SH" stop --dir "$1" >/dev/null 2>&1 & }

# purge_own: the servers the test that passed started, stopped and their
# data deleted (their logs stay); a failed test's are left alone
purge_own() {
	[ "${BAGSTORE_KEEP_SHARDS:-0}" = 1 ] && return 0
	own_each purge_dir
}
keep_own() { own_each keep_dir; }

run_id() { # ID
	bin=$B/tests/${1#unit/}
	case $1 in
	unit/*) ;;
	*) run_test "$1" sh "tests/integration/$1.sh"; return ;;
	esac
	if [ "$VALGRIND" = 1 ]; then
		# --max-stackframe: Connector/C's non-blocking calls run on a
		# small stack of its own (a coroutine). In a thread, that stack
		# and the thread's lie within valgrind's default 2 MB of each
		# other, so it took each switch for a frame and reported every
		# access on the other side as invalid (test_workers' backfill
		# thread). No frame of ours comes near 128 KiB.
		run_test "$1" valgrind -q --max-stackframe=131072 --leak-check=full --show-leak-kinds=definite,indirect \
			--errors-for-leak-kinds=definite,indirect --error-exitcode=9 \
			--suppressions="$ROOT/tests/valgrind.supp" "$bin"
	else
		run_test "$1" "$bin"
	fi
}

# worker K: start its shards, then take tests from the queue until none is left
worker() {
	CUR=""
	# stopped: stop the test (timeout passes the signal on) and wait for
	# it, so that the shards are stopped after it, not under it
	trap 'if [ -n "$CUR" ]; then kill -TERM "$CUR" 2>/dev/null; wait "$CUR"; fi; exit 130' TERM
	worker_env "$1"
	blk=$RUN/worker-$1.out
	if ! shards_up >"$blk" 2>&1 ||
		! sh "$SHARDS_SH" config --count "$NSHARDS" --port "$WPORT" --catalog-ttl 1 \
			--out "$BAGSTORE_TEST_CONFIG" >>"$blk" 2>&1; then
		echo "run.sh: the test shards of worker $1 did not start (ports $WPORT-$((WPORT + NSHARDS - 1)), $SHARDS_DIR)" >>"$blk"
		echo "worker-$1 0 1" >>"$RUN/tally"
		out_block "$blk"
		return 1
	fi
	while read -r t; do
		mkdir "$RUN/taken/$t" 2>/dev/null || continue
		run_id "$t" </dev/null
	done <"$RUN/queue"
}

# ------------------------------------------------------------ the run

WPIDS=""
# summary [EXTRA]: the tally's "N passed, N failed", EXTRA more failures
summary() {
	awk -v extra="${1:-0}" '{ p += $2; f += $3 }
		END { printf "%d passed, %d failed\n", p, f + extra }' "$RUN/tally"
}

# stop_all: every worker's shards, and what tests started of their own
stop_all() {
	k=0
	nfail=$(awk '{ f += $3 } END { print f + 0 }' "$RUN/tally" 2>/dev/null)
	while [ "$k" -lt "$JOBS" ]; do
		worker_env "$k"
		if [ "${BAGSTORE_KEEP_SHARDS:-0}" = 1 ]; then
			echo "run.sh: shards left running: sh conf/shards.sh stop --dir $SHARDS_DIR" >&2
		else
			# the worker's own shards, emptied before each test, are
			# purged when nothing failed; what a failed test started
			# itself stays, stopped
			if [ "${nfail:-1}" = 0 ]; then
				sh "$SHARDS_SH" purge --dir "$SHARDS_DIR" >/dev/null 2>&1 &
			else
				sh "$SHARDS_SH" stop --dir "$SHARDS_DIR" >/dev/null 2>&1 &
			fi
			own_each stop_dir_bg
		fi
		k=$((k + 1))
	done
	wait
}

cleanup() {
	trap - EXIT INT TERM HUP
	for p in $WPIDS; do kill -TERM "$p" 2>/dev/null; done
	for p in $WPIDS; do wait "$p"; done
	stop_all
}
on_signal() {
	echo
	echo "run.sh: interrupted"
	cleanup
	summary 1
	exit 130
}
trap cleanup EXIT
trap on_signal INT TERM HUP

if [ "$JOBS" = 1 ]; then
	echo "run.sh: $MODE tests, build $B, shards on 127.0.0.1:$PORT-$((PORT + NSHARDS - 1))"
else
	ports="" k=0
	while [ "$k" -lt "$JOBS" ]; do
		p=$((PORT + k * STRIDE))
		ports="$ports${ports:+, }$p-$((p + NSHARDS - 1))"
		k=$((k + 1))
	done
	echo "run.sh: $MODE tests, build $B, $JOBS workers, shards on 127.0.0.1:$ports"
fi

k=0
while [ "$k" -lt "$JOBS" ]; do
	worker "$k" &
	WPIDS="$WPIDS $!"
	k=$((k + 1))
done
for p in $WPIDS; do wait "$p"; done
WPIDS=""

[ "$TSAN" = 1 ] && rmdir "$LOGDIR/tsan/unit" 2>/dev/null

# A test no worker took (every worker's shards failed) is a failure.
missed=0
while read -r t; do
	[ -d "$RUN/taken/$t" ] && continue
	echo "-- ${t#unit/}: FAILED: not run (no worker's shards came up)"
	missed=$((missed + 1))
done <"$RUN/queue"

# Keep each test's seconds for the next run's order.
if [ -s "$RUN/durations" ]; then
	cat "$DURATIONS" "$RUN/durations" 2>/dev/null |
		awk '{ d[$1] = $2 } END { for (n in d) print n, d[n] }' | sort >"$DURATIONS.tmp" &&
		mv -f "$DURATIONS.tmp" "$DURATIONS"
fi

[ "$NTESTS" -gt 0 ] || echo "run.sh: no tests found"
echo "run.sh: $NTESTS test files in $(($(date +%s) - T0))s"
summary "$missed" | tee "$RUN/summary"
grep -q ' 0 failed$' "$RUN/summary"

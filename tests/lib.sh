# tests/lib.sh - helpers for tests/integration/test_*.sh (POSIX sh).
#
#   . tests/lib.sh
#   t_exit 0 "put one entity" -- "$BAGSTORE" -c "$BAGSTORE_TEST_CONFIG" put x.jsonl
#   t_contains "$T_OUT" "1 put" "put reports its count"
#   t_eq "$(t_sql 0 'SELECT COUNT(*) FROM entities')" 1 "one row on s0"
#   t_done test_put
#
# t_ok DESC / t_fail DESC      record a pass / a failure
# t_eq ACTUAL EXPECTED DESC    pass when the strings are equal
# t_contains HAYSTACK NEEDLE DESC   pass when NEEDLE occurs in HAYSTACK
# t_match TEXT ERE DESC        pass when a line of TEXT matches the regex
# t_exit CODE DESC -- CMD...   run CMD (stdin from $T_IN, else /dev/null;
#                              at most $T_TIMEOUT s, default 60); its stdout goes
#                              to $T_OUT and stderr to $T_ERR (the text, trailing
#                              newlines dropped; the files are $T_OUT_FILE and
#                              $T_ERR_FILE); pass when it exits CODE ("any"
#                              accepts anything, "!0" any non-zero code)
# t_sql SHARD_INDEX "SQL"      run SQL in database bagstore on that shard of
#                              $BAGSTORE_TEST_CONFIG; prints rows tab-separated
# t_port SHARD_INDEX           the shard's port, from the config
# t_tmp                        a scratch folder for this test, removed by t_done
# t_other_writer PORT SECONDS  another application's writer on the server at
#                              PORT (autocommit INSERTs into database other_app,
#                              ~100 a second) for at most SECONDS, in the
#                              background: the throttle protects only real writers
# t_other_stop                 stop every such writer
# t_sleeper SHARD_INDEX        a client running `SELECT SLEEP(600)` on that
#                              shard, in the background, returned once the
#                              server runs it (1 if not within 20 s): a
#                              running thread the test holds for as long as it
#                              wants (with cleaner.max_load 1 a job there is
#                              throttled), however slow the build
# t_sleeper_kill               end it, on the server too (a killed client's
#                              statement runs on); call it from an EXIT trap
#                              as well, so no later test finds it running
# t_servers NAME               the folder for servers the test starts itself:
#                              $SHARDS_DIR.NAME, beside the shards of its
#                              runner worker (tests/run.sh), so that workers
#                              running side by side never share one; purged
#                              by tests/run.sh when the test passes (data
#                              deleted, logs kept), kept when it fails (t_tmp's
#                              is removed by t_done, before an EXIT trap could
#                              stop the servers)
# t_wait SECONDS CMD...        run CMD every 0.1 s until it succeeds (0) or
#                              SECONDS have passed (1)
# t_stopped PID [SECONDS]      print 1 once process PID is stopped (a pause_*
#                              fault point's SIGSTOP), waiting up to SECONDS
#                              (20); nothing when it never is: use as
#                              t_eq "$(t_stopped $p)" 1 "it stopped at ..."
# t_extra_shard NAME PORT [N]  N (default 1) MariaDB servers of the test's own
#                              from PORT on, under t_servers NAME, started
#                              (tried again for a minute: a port may be a
#                              client's for a while, TIME_WAIT) with database
#                              bagstore empty; 1 and their log when they do not
#                              start. Use as t_exit 0 "a third shard" --
#                              t_extra_shard NAME PORT; stop them with
#                              t_extra_stop NAME (from an EXIT trap)
# t_shards_cfg FILE N PORT [drain]  a configuration of the test's s0 and s1,
#                              and s2 at PORT when N is 3 (`drain: true` on
#                              the last one with "drain"), written whole at
#                              once (as an editor saves: a console may be
#                              watching FILE)
# t_need_prom                  sets T_PY to a python3 with prometheus_client
#                              (the reference Prometheus parser), else records
#                              a failure; call it once before t_prom
# t_prom URL [CA USER PASSWORD]  every sample of a /metrics scrape, parsed by
#                              that parser, one a line: NAME LABEL=VALUE,...
#                              VALUE; through TLS trusting CA with basic auth
#                              when given
# t_done NAME                  print "NAME: N passed, N failed"; exit 1 on any
#                              failure, else 0
#
# A failure prints its description, what was expected and what came, and the
# stderr captured by the last t_exit. Set T_VERBOSE=1 to print passes too.
# shellcheck shell=sh

T_PASSED=0
T_FAILED=0
T_OUT=""
T_ERR=""
T_RC=""
T_TMPDIR=""
T_OUT_FILE=""
T_ERR_FILE=""
: "${T_TIMEOUT:=60}"
: "${BAGSTORE_TEST_CONFIG:=${BUILD:-build}/check.yaml}"
: "${BAGSTORE:=${BUILD:-build}/bagstore}"

t_tmp() {
	if [ -z "$T_TMPDIR" ] || [ ! -d "$T_TMPDIR" ]; then
		T_TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/bagstore-test.XXXXXX") || exit 1
		T_OUT_FILE=$T_TMPDIR/.stdout
		T_ERR_FILE=$T_TMPDIR/.stderr
	fi
	echo "$T_TMPDIR"
}
# Create it now, in this shell (t_tmp in $(...) would set it in a subshell).
t_tmp >/dev/null

t_servers() {
	_t_d=${SHARDS_DIR:-${BUILD:-build}/check-shards}
	case $_t_d in /*) ;; *) _t_d=$(pwd)/$_t_d ;; esac
	echo "$_t_d.$1"
}

# t_start_servers COUNT PORT DIR: COUNT servers of a test's own on PORT...
# under DIR (t_servers), tried six times 10 s apart (a port a stopping
# server of another test still holds); its output shown when it fails.
t_start_servers() {
	for _t_try in 1 2 3 4 5 6; do
		sh "$SHARDS_SH" start --count "$1" --port "$2" --dir "$3" >"$T_TMPDIR/servers.log" 2>&1 && return 0
		sleep 10
	done
	cat "$T_TMPDIR/servers.log"
	return 1
}

t_ok() {
	T_PASSED=$((T_PASSED + 1))
	[ "${T_VERBOSE:-0}" = 1 ] && echo "ok: $1"
	return 0
}

t_fail() {
	T_FAILED=$((T_FAILED + 1))
	echo "FAIL: $1"
	shift
	for _t_l in "$@"; do
		printf '%s\n' "$_t_l" | sed 's/^/    /'
	done
	if [ -n "$T_ERR" ]; then
		echo "    stderr of the last command:"
		printf '%s\n' "$T_ERR" | sed 's/^/      | /'
	fi
	return 1
}

t_eq() {
	if [ "$1" = "$2" ]; then
		t_ok "$3"
	else
		t_fail "$3" "expected: $2" "actual:   $1"
	fi
}

t_contains() {
	case $1 in
	*"$2"*) t_ok "$3" ;;
	*) t_fail "$3" "expected to contain: $2" "actual: $1" ;;
	esac
}

# t_lacks TEXT NEEDLE DESC: pass when TEXT does not contain NEEDLE
t_lacks() {
	case $1 in
	*"$2"*) t_fail "$3" "not expected: $2" "actual: $1" ;;
	*) t_ok "$3" ;;
	esac
}

# t_match TEXT ERE DESC: pass when a line of TEXT matches the extended regex
t_match() {
	if printf '%s\n' "$1" | grep -Eq -- "$2"; then
		t_ok "$3"
	else
		t_fail "$3" "expected to match: $2" "actual: $1"
	fi
}

t_exit() {
	_t_want=$1 _t_desc=$2
	shift 2
	[ "${1:-}" = "--" ] && shift
	if [ $# -eq 0 ]; then
		t_fail "$_t_desc" "t_exit: no command given"
		return 1
	fi
	t_tmp >/dev/null
	case $(type "$1" 2>/dev/null) in
	*function*)
		"$@" <"${T_IN:-/dev/null}" >"$T_OUT_FILE" 2>"$T_ERR_FILE" ;;
	*)
		timeout -k 5 "$T_TIMEOUT" "$@" <"${T_IN:-/dev/null}" >"$T_OUT_FILE" 2>"$T_ERR_FILE" ;;
	esac
	T_RC=$?
	T_OUT=$(cat "$T_OUT_FILE")
	T_ERR=$(cat "$T_ERR_FILE")
	_t_ok=""
	case $_t_want in
	any) _t_ok=1 ;;
	!0) [ "$T_RC" != 0 ] && _t_ok=1 ;;
	*) [ "$T_RC" = "$_t_want" ] && _t_ok=1 ;;
	esac
	if [ -n "$_t_ok" ]; then
		t_ok "$_t_desc"
	else
		_t_extra=""
		[ "$T_RC" = 124 ] && _t_extra=" (timed out after ${T_TIMEOUT}s)"
		t_fail "$_t_desc" "command: $*" "expected exit: $_t_want" "actual exit:   $T_RC$_t_extra" \
			"stdout: $(printf '%s' "$T_OUT" | head -c 2000)"
	fi
}

t_port() {
	awk -v want="$1" '
		/^[ \t]*-[ \t]*\{?[ \t]*name:/ && /port:/ {
			if (n++ == want) {
				sub(/.*port:[ \t]*/, ""); sub(/[^0-9].*/, ""); print; exit
			}
		}' "$BAGSTORE_TEST_CONFIG"
}

t_sql() {
	_t_port=$(t_port "$1")
	if [ -z "$_t_port" ]; then
		echo "t_sql: no shard $1 in $BAGSTORE_TEST_CONFIG" >&2
		return 1
	fi
	timeout 30 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$_t_port" -u root \
		--connect-timeout=5 -N -B bagstore -e "$2"
}

t_done() {
	echo "${1:-$(basename "$0" .sh)}: $T_PASSED passed, $T_FAILED failed"
	[ -n "$T_TMPDIR" ] && rm -rf "$T_TMPDIR"
	[ "$T_FAILED" = 0 ] || exit 1
	exit 0
}

T_OTHER_PIDS=""
t_other_writer() {
	timeout 30 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$1" -u root \
		-e "CREATE DATABASE IF NOT EXISTS other_app; CREATE TABLE IF NOT EXISTS other_app.w (id INT AUTO_INCREMENT PRIMARY KEY, v INT)" ||
		{ t_fail "another application's writer on port $1" "could not create its table"; return 1; }
	awk -v n=$(($2 * 100)) 'BEGIN { for (k = 1; k <= n; k++) printf("INSERT INTO w (v) VALUES (%d); DO SLEEP(0.01);\n", k) }' |
		timeout "$2" mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$1" -u root other_app >/dev/null 2>&1 &
	T_OTHER_PIDS="$T_OTHER_PIDS $!"
}
t_other_stop() {
	for _p in $T_OTHER_PIDS; do
		kill "$_p" 2>/dev/null
		wait "$_p" 2>/dev/null
	done
	T_OTHER_PIDS=""
}

t_stopped() {
	_t_n=$((${2:-20} * 10))
	while [ "$_t_n" -gt 0 ]; do
		[ "$(awk '{print $3}' /proc/"$1"/stat 2>/dev/null)" = T ] && { echo 1; return 0; }
		_t_n=$((_t_n - 1))
		sleep 0.1
	done
	return 1
}

t_sleeper() {
	_t_sleeper_shard=$1
	timeout 700 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$(t_port "$1")" -u root \
		-e "SELECT SLEEP(600)" >/dev/null 2>&1 &
	_t_sleeper_pid=$!
	_t_sl_n=0
	while [ "$(t_sql "$1" "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO='SELECT SLEEP(600)'" 2>/dev/null)" != 1 ]; do
		[ $_t_sl_n -ge 200 ] && return 1
		sleep 0.1
		_t_sl_n=$((_t_sl_n + 1))
	done
	return 0
}

t_sleeper_kill() {
	[ -n "${_t_sleeper_pid:-}" ] || return 0
	for _t_sl_id in $(t_sql "$_t_sleeper_shard" "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO='SELECT SLEEP(600)'" 2>/dev/null); do
		t_sql "$_t_sleeper_shard" "KILL QUERY $_t_sl_id" >/dev/null 2>&1
	done
	kill "$_t_sleeper_pid" 2>/dev/null
	wait "$_t_sleeper_pid" 2>/dev/null
	_t_sleeper_pid=""
	return 0
}

t_wait() {
	_t_wend=$(($(date +%s) + $1))
	shift
	while ! "$@"; do
		[ "$(date +%s)" -ge "$_t_wend" ] && return 1
		sleep 0.1
	done
	return 0
}

t_extra_shard() {
	_t_xd=$(t_servers "$1")
	_t_xlog=$(t_tmp)/extra-$1.log
	for _t_try in 1 2 3 4 5 6; do
		sh "$SHARDS_SH" start --count "${3:-1}" --port "$2" --dir "$_t_xd" >"$_t_xlog" 2>&1 &&
			sh "$SHARDS_SH" reset --count "${3:-1}" --dir "$_t_xd" >>"$_t_xlog" 2>&1 && return 0
		sleep 10
	done
	cat "$_t_xlog"
	return 1
}
t_extra_stop() {
	sh "$SHARDS_SH" stop --dir "$(t_servers "$1")" >/dev/null 2>&1
}

t_shards_cfg() {
	{
		echo "shards:"
		echo "  - {name: s0, host: 127.0.0.1, port: $(t_port 0), database: bagstore, user: root}"
		echo "  - {name: s1, host: 127.0.0.1, port: $(t_port 1), database: bagstore, user: root$([ "$2" = 2 ] && [ "${4:-}" = drain ] && echo ', drain: true')}"
		[ "$2" -ge 3 ] &&
			echo "  - {name: s2, host: 127.0.0.1, port: $3, database: bagstore, user: root$([ "${4:-}" = drain ] && echo ', drain: true')}"
		echo "timeouts: {connect: 2, read: 10, write: 10}"
		echo "catalog_ttl: 1"
	} >"$1.new"
	mv "$1.new" "$1"
}

T_PY=""
t_need_prom() {
	for _t_p in python3 /usr/bin/python3; do
		if "$_t_p" -c 'import prometheus_client' 2>/dev/null; then T_PY=$_t_p; return 0; fi
	done
	t_fail "python3 with prometheus_client (apt-get install python3-prometheus-client)"
}
t_prom() {
	[ -n "$T_PY" ] || return 1
	"$T_PY" -c 'import sys, ssl, base64, urllib.request
from prometheus_client.parser import text_string_to_metric_families
url = sys.argv[1]
if len(sys.argv) > 2:
    ca, user, pw = sys.argv[2:5]
    req = urllib.request.Request(url, headers={"Authorization": "Basic " + base64.b64encode((user + ":" + pw).encode()).decode()})
    text = urllib.request.urlopen(req, timeout=5, context=ssl.create_default_context(cafile=ca)).read().decode()
else:
    text = urllib.request.urlopen(url, timeout=5).read().decode()
for fam in text_string_to_metric_families(text):
    for s in fam.samples:
        labels = ",".join("%s=%s" % kv for kv in sorted(s.labels.items()))
        print(s.name, labels or "-", repr(float(s.value)))' "$@"
}

#!/bin/sh
# shards.sh - start and stop local MariaDB shards for the demo and the tests.
#
#   sh conf/shards.sh start  [--count N] [--port P | --config FILE] [--dir DIR] [--tls CERTS [--require-tls]]
#   sh conf/shards.sh list   --config FILE
#   sh conf/shards.sh stop   [--dir DIR]
#   sh conf/shards.sh status [--dir DIR]
#   sh conf/shards.sh config [--count N] [--port P] [--dir DIR] [--out FILE]
#                            [--catalog-ttl S]
#   sh conf/shards.sh start-one|stop-one|pause|resume|kill NAME [--dir DIR]
#   sh conf/shards.sh reset  [--count N] [--dir DIR]
#   sh conf/shards.sh purge  [--dir DIR]
#
# Shard sI listens on 127.0.0.1:P+I and keeps everything (datadir, socket,
# pid file, error log, port) under DIR/sI. Defaults: N=2, P=3307,
# DIR=var/shards in the project folder. Root has no password and the servers
# listen on loopback only: for local use, never for anything else.
#
# start is idempotent: a shard that answers ping is left alone, a paused one
# is resumed, a stale pid file is removed. config prints (or writes) a
# bagstore configuration for the shards: from DIR's shards when they exist
# and neither --count nor --port is given, else from N and P. reset cuts off
# every client and empties database bagstore on DIR's shards (s0..sN-1 with
# --count): each test and benchmark starts from nothing.
#
# start --config FILE starts every shard a bagstore configuration names, by
# its name and port (each must be on 127.0.0.1 or localhost), so that a
# shard added to the file is started too; list --config FILE prints them,
# "NAME PORT" a line.
#
# purge stops DIR's shards and deletes their data (each shard's error log
# stays), so the next start makes new ones: a test run's shards take no
# disk once it is over.
#
# SHARDS_REDO_LOG=SIZE at start sets innodb_log_file_size (MariaDB's
# default is 96M, which benchmarks keep; the tests use 16M, a third of the
# disk per shard).
#
# SHARDS_LOG_BIN=1 at start gives each server a binary log and a server id
# (its port), so tests can make one a replication primary or a replica.
#
# --tls CERTS at start serves TLS with CERTS/ca.pem, server-cert.pem and
# server-key.pem (conf/tls-certs.sh makes them); --require-tls adds
# require_secure_transport=ON, so TCP clients without TLS are refused (the
# unix socket, which this script uses, stays allowed). Both are recorded
# with each shard launched, so start-one brings it back the same way, and
# config then gives the shards `tls: {mode: verify_identity, ca: ...}`.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PROG=shards.sh

COUNT=2
PORT=3307
DIR="$ROOT/var/shards"
OUT=""
TTL=2
COUNT_SET=""
PORT_SET=""
NAME=""
CONFIG=""
TLS_DIR=""
REQUIRE_TLS=""
WAIT_UP=${SHARDS_WAIT:-60}

die() { echo "$PROG: $*" >&2; exit 1; }
usage() {
	sed -n '2,12s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

is_uint() { case $1 in ''|*[!0-9]*) return 1 ;; *) return 0 ;; esac; }

parse_opts() {
	while [ $# -gt 0 ]; do
		case $1 in
		--count) [ $# -ge 2 ] || usage; COUNT=$2; COUNT_SET=1; shift 2 ;;
		--count=*) COUNT=${1#*=}; COUNT_SET=1; shift ;;
		--port) [ $# -ge 2 ] || usage; PORT=$2; PORT_SET=1; shift 2 ;;
		--port=*) PORT=${1#*=}; PORT_SET=1; shift ;;
		--dir) [ $# -ge 2 ] || usage; DIR=$2; shift 2 ;;
		--dir=*) DIR=${1#*=}; shift ;;
		--config) [ $# -ge 2 ] || usage; CONFIG=$2; shift 2 ;;
		--config=*) CONFIG=${1#*=}; shift ;;
		--out) [ $# -ge 2 ] || usage; OUT=$2; shift 2 ;;
		--out=*) OUT=${1#*=}; shift ;;
		--catalog-ttl) [ $# -ge 2 ] || usage; TTL=$2; shift 2 ;;
		--catalog-ttl=*) TTL=${1#*=}; shift ;;
		--tls) [ $# -ge 2 ] || usage; TLS_DIR=$2; shift 2 ;;
		--tls=*) TLS_DIR=${1#*=}; shift ;;
		--require-tls) REQUIRE_TLS=1; shift ;;
		-h|--help) usage ;;
		-*) die "unknown option: $1" ;;
		*) [ -z "$NAME" ] || die "unexpected argument: $1"; NAME=$1; shift ;;
		esac
	done
	if ! is_uint "$COUNT" || [ "$COUNT" -lt 1 ]; then
		die "--count wants a positive number, got '$COUNT'"
	fi
	if ! is_uint "$PORT" || [ "$PORT" -lt 1 ] || [ "$((PORT + COUNT - 1))" -gt 65535 ]; then
		die "--port wants a port number, got '$PORT'"
	fi
	[ -n "$DIR" ] || die "--dir is empty"
	case $DIR in /*) ;; *) DIR="$(pwd)/$DIR" ;; esac
	DIR=${DIR%/}
	if [ -n "$TLS_DIR" ]; then
		TLS_DIR=$(cd "$TLS_DIR" 2>/dev/null && pwd) || die "--tls: no folder $TLS_DIR"
		for f in ca.pem server-cert.pem server-key.pem; do
			[ -r "$TLS_DIR/$f" ] || die "--tls: $TLS_DIR/$f is missing (sh conf/tls-certs.sh $TLS_DIR)"
		done
	fi
	[ -z "$REQUIRE_TLS" ] || [ -n "$TLS_DIR" ] || die "--require-tls wants --tls CERTS"
}

# ------------------------------------------------------------------ helpers

sdir() { echo "$DIR/$1"; }

# The socket lives in the shard's folder unless that path is too long for a
# unix socket; then it goes to a short path under /tmp named after the folder.
sock_path() {
	s="$DIR/$1/mysqld.sock"
	if [ "${#s}" -gt 100 ]; then
		sum=$(printf '%s' "$DIR/$1" | cksum | cut -d' ' -f1)
		s="${TMPDIR:-/tmp}/bagstore-$sum.sock"
	fi
	echo "$s"
}

shard_port() { cat "$DIR/$1/port" 2>/dev/null; }

# Names of the shards under DIR, in index order (s0 s1 ... s10).
shard_names() {
	[ -d "$DIR" ] || return 0
	for d in "$DIR"/*/; do
		[ -f "${d}port" ] || continue
		n=${d%/}; n=${n##*/}
		echo "$n"
	done | sort -t s -k 2n
}

# Pid of a live mariadbd for shard $1, from its pid file; removes a stale one.
live_pid() {
	pf="$DIR/$1/mariadbd.pid"
	p=""
	[ -f "$pf" ] && p=$(cat "$pf" 2>/dev/null)
	if is_uint "$p" && is_mariadbd "$p" && ! is_zombie "$p"; then
		echo "$p"
		return 0
	fi
	rm -f "$pf"
	# Lost or overwritten pid file: look for our server by its command line.
	for c in /proc/[0-9]*/cmdline; do
		p=${c#/proc/}; p=${p%/cmdline}
		is_mariadbd "$p" || continue
		is_zombie "$p" && continue
		if tr '\0' '\n' <"$c" 2>/dev/null | grep -qxF -- "--pid-file=$pf"; then
			echo "$p" >"$pf"
			echo "$p"
			return 0
		fi
	done
	return 1
}

is_mariadbd() {
	comm=""
	read -r comm 2>/dev/null <"/proc/$1/comm"
	[ "$comm" = mariadbd ]
}

# The state letter of process $1 (R, S, T, Z, ...), empty when it is gone.
proc_state() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1; }

is_paused() { case $(proc_state "$1") in T|t) return 0 ;; *) return 1 ;; esac; }
is_zombie() { [ "$(proc_state "$1")" = Z ]; }

ping_shard() {
	timeout 5 mariadb-admin --no-defaults --protocol=socket -S "$(sock_path "$1")" \
		-uroot --connect-timeout=2 ping >/dev/null 2>&1
}

sql_shard() {
	timeout 20 mariadb --no-defaults --protocol=socket -S "$(sock_path "$1")" \
		-uroot --connect-timeout=5 -N -B -e "$2"
}

log_tail() {
	echo "$PROG: $1 did not come up; last lines of $DIR/$1/error.log:" >&2
	tail -n 25 "$DIR/$1/error.log" 2>/dev/null | sed 's/^/    /' >&2
	disk_full "$DIR/$1/error.log" "$DIR/$1"
}

# disk_full LOG DIR: when the server's LOG says a write found no space
# (errno 28, ENOSPC), say so plainly, with what the disk has left.
disk_full() {
	grep -qE 'error 28([^0-9]|$)|[Ee]rrno: ?28([^0-9]|$)|No space left' "$1" 2>/dev/null || return 0
	free=$(df -Ph "$2" 2>/dev/null | awk 'NR == 2 { print $4 }')
	echo "$PROG: the disk holding $2 is full (${free:-?} free): the server could not write its files" >&2
}

# Create the datadir with mariadb-install-db, once.
init_shard() {
	d=$(sdir "$1")
	[ -d "$d/data/mysql" ] && return 0
	rm -rf "$d/data"
	mkdir -p "$d/data"
	set -- --no-defaults --datadir="$d/data" --auth-root-authentication-method=normal \
		--skip-test-db --skip-name-resolve
	[ "$(id -u)" = 0 ] && set -- "$@" --user=root
	[ -n "${SHARDS_REDO_LOG:-}" ] && set -- "$@" --innodb-log-file-size="$SHARDS_REDO_LOG"
	# SHARDS_MARIADBD_OPTS: more server options, as words (a benchmark's
	# variant: --innodb-autoinc-lock-mode=2 and the like)
	# shellcheck disable=SC2086
	[ -n "${SHARDS_MARIADBD_OPTS:-}" ] && set -- "$@" $SHARDS_MARIADBD_OPTS
	mkdir -p "$d/tmp"
	# Each shard's own TMPDIR: bootstraps running side by side in a shared
	# /tmp have been seen to trip over each other's temporary tables.
	for try in 1 2; do
		if TMPDIR="$d/tmp" mariadb-install-db "$@" >"$d/install.log" 2>&1; then
			return 0
		fi
		rm -rf "$d/data"
		mkdir -p "$d/data"
		[ "$try" = 1 ] && sleep 1
	done
	rm -rf "$d/data"
	return 1
}

# Launch mariadbd for shard $1 on port $2 in its own session, detached.
launch_shard() {
	d=$(sdir "$1") lport=$2
	set -- --no-defaults \
		--datadir="$d/data" --tmpdir="$d/tmp" --port="$2" --socket="$(sock_path "$1")" \
		--pid-file="$d/mariadbd.pid" --log-error="$d/error.log" \
		--bind-address=127.0.0.1 --skip-name-resolve \
		--innodb-buffer-pool-size=256M --innodb-flush-log-at-trx-commit=2 \
		--max-connections=500 --performance-schema=OFF \
		--max-allowed-packet=64M \
		--character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci
	# SHARDS_LOG_BIN=1: a binary log and a server id (the port, unique here),
	# so the shard can be a replication primary or replica in tests.
	if [ "${SHARDS_LOG_BIN:-0}" = 1 ]; then
		set -- "$@" --log-bin="$d/binlog" --server-id="$lport" --relay-log="$d/relay"
	else
		set -- "$@" --skip-log-bin
	fi
	# TLS as recorded when the shard was started (start --tls)
	if [ -f "$d/tls" ]; then
		t=$(cat "$d/tls")
		set -- "$@" --ssl-ca="$t/ca.pem" --ssl-cert="$t/server-cert.pem" --ssl-key="$t/server-key.pem"
		[ -f "$d/require-tls" ] && set -- "$@" --require-secure-transport=ON
	fi
	[ "$(id -u)" = 0 ] && set -- "$@" --user=root
	[ -n "${SHARDS_REDO_LOG:-}" ] && set -- "$@" --innodb-log-file-size="$SHARDS_REDO_LOG"
	# SHARDS_MARIADBD_OPTS: more server options, as words (a benchmark's
	# variant: --innodb-autoinc-lock-mode=2 and the like)
	# shellcheck disable=SC2086
	[ -n "${SHARDS_MARIADBD_OPTS:-}" ] && set -- "$@" $SHARDS_MARIADBD_OPTS
	mkdir -p "$d/tmp"
	TMPDIR="$d/tmp" setsid mariadbd "$@" </dev/null >>"$d/error.log" 2>&1 &
	echo "$!" >"$d/launch.pid"
}

# After a start: the database and the loopback root account, idempotently.
setup_shard() {
	[ -f "$DIR/$1/initialised" ] && return 0
	sql_shard "$1" "CREATE DATABASE IF NOT EXISTS bagstore;
		CREATE USER IF NOT EXISTS 'root'@'127.0.0.1';
		GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
		DROP USER IF EXISTS ''@'localhost';
		DELETE FROM mysql.global_priv
		  WHERE Host NOT IN ('localhost', '127.0.0.1', '::1');
		DELETE FROM mysql.proxies_priv
		  WHERE Host NOT IN ('localhost', '127.0.0.1', '::1');
		FLUSH PRIVILEGES;" >>"$DIR/$1/install.log" 2>&1 || return 1
	touch "$DIR/$1/initialised"
}

# Start shard $1 on port $2 unless it runs: init, launch. Runs in background.
start_shard() {
	name=$1 port=$2
	d=$(sdir "$name")
	mkdir -p "$d" || return 1
	rm -f "$d/start.failed"
	if p=$(live_pid "$name"); then
		is_paused "$p" && kill -CONT "$p" 2>/dev/null
		return 0
	fi
	old=$(shard_port "$name")
	if [ -n "$old" ] && [ "$old" != "$port" ] && [ -d "$d/data/mysql" ]; then
		echo "$PROG: note: $name moves from port $old to $port" >&2
	fi
	echo "$port" >"$d/port"
	# start records TLS as asked (start-one keeps what was recorded)
	if [ "$CMD" = start ]; then
		rm -f "$d/tls" "$d/require-tls"
		[ -n "$TLS_DIR" ] && echo "$TLS_DIR" >"$d/tls"
		[ -n "$REQUIRE_TLS" ] && : >"$d/require-tls"
	fi
	rm -f "$(sock_path "$name")"
	if ! init_shard "$name"; then
		echo "$PROG: mariadb-install-db failed for $name; $d/install.log says:" >&2
		grep -i 'error' "$d/install.log" | head -n 5 | sed 's/^/    /' >&2
		disk_full "$d/install.log" "$d"
		touch "$d/start.failed"
		return 1
	fi
	: >"$d/error.log"
	launch_shard "$name" "$port"
}

# Wait until shard $1 answers ping (bounded), then set it up.
wait_shard() {
	name=$1
	t=0
	[ -f "$DIR/$name/start.failed" ] && return 1
	while [ "$t" -lt "$((WAIT_UP * 4))" ]; do
		if [ -f "$DIR/$name/mariadbd.pid" ] && ping_shard "$name"; then
			if ! setup_shard "$name"; then
				echo "$PROG: $name is up but creating database bagstore failed:" >&2
				tail -n 5 "$DIR/$name/install.log" | sed 's/^/    /' >&2
				return 1
			fi
			return 0
		fi
		# Gave up already? (the server we launched has exited)
		lp=$(cat "$DIR/$name/launch.pid" 2>/dev/null)
		if is_uint "$lp" && { [ ! -d "/proc/$lp" ] || is_zombie "$lp"; } &&
			! live_pid "$name" >/dev/null; then
			break
		fi
		sleep 0.25
		t=$((t + 1))
	done
	log_tail "$name"
	return 1
}

status_line() {
	name=$1
	port=$(shard_port "$name")
	if p=$(live_pid "$name"); then
		if is_paused "$p"; then
			echo "$name 127.0.0.1:$port paused (pid $p)"
		elif ping_shard "$name"; then
			echo "$name 127.0.0.1:$port up (pid $p)"
		else
			echo "$name 127.0.0.1:$port not answering (pid $p)"
		fi
	else
		echo "$name 127.0.0.1:$port down"
	fi
}

wait_gone() { # pid, quarter-seconds
	i=0
	while [ "$i" -lt "$2" ]; do
		[ -d "/proc/$1" ] || return 0
		# A zombie child of ours counts as gone.
		is_zombie "$1" && return 0
		sleep 0.25
		i=$((i + 1))
	done
	[ -d "/proc/$1" ] && ! is_zombie "$1" && return 1
	return 0
}

stop_shard() {
	name=$1
	p=$(live_pid "$name") || { rm -f "$(sock_path "$name")"; return 0; }
	kill -CONT "$p" 2>/dev/null
	timeout 20 mariadb-admin --no-defaults --protocol=socket -S "$(sock_path "$name")" \
		-uroot --connect-timeout=2 shutdown >/dev/null 2>&1
	if ! wait_gone "$p" 80; then
		kill -TERM "$p" 2>/dev/null
		if ! wait_gone "$p" 60; then
			echo "$PROG: $name (pid $p) ignored SIGTERM; sending SIGKILL" >&2
			kill -KILL "$p" 2>/dev/null
			wait_gone "$p" 20
		fi
	fi
	rm -f "$DIR/$name/mariadbd.pid" "$(sock_path "$name")"
}

# Cut off every client but ourselves (replication threads excepted), then
# drop and create database bagstore, and put back the globals a test may
# have changed and not restored (it failed half way).
reset_shard() {
	ids=$(sql_shard "$1" "SELECT id FROM information_schema.processlist
		WHERE id <> CONNECTION_ID() AND command NOT IN ('Daemon', 'Binlog Dump')
		AND user NOT IN ('system user', 'event_scheduler')") ||
		{ echo "$PROG: $1 does not answer" >&2; return 1; }
	for id in $ids; do
		sql_shard "$1" "KILL $id" >/dev/null 2>&1
	done
	sql_shard "$1" "DROP DATABASE IF EXISTS bagstore; CREATE DATABASE bagstore;
		SET GLOBAL foreign_key_checks=DEFAULT, max_prepared_stmt_count=DEFAULT" ||
		{ echo "$PROG: cannot reset database bagstore on $1" >&2; return 1; }
}

need_name() {
	[ -n "$NAME" ] || die "$1 wants a shard NAME (e.g. s0)"
	[ -f "$DIR/$NAME/port" ] || die "no shard $NAME under $DIR"
}

# ------------------------------------------------------------------ commands

# The shards of a bagstore configuration, "NAME PORT HOST" a line: each
# item of its top-level shards: list, flow ({name: s0, port: 3307, ...}) or
# block style (name: and port: on lines of their own).
config_shards() {
	awk '
	function flush() { if (name != "") print name, (port == "" ? "-" : port), (host == "" ? "127.0.0.1" : host); name = port = host = "" }
	function val(line, key,   m) {
		if (match(line, "(^|[{ ,-])" key ":[ ]*[^,} ]+")) {
			m = substr(line, RSTART, RLENGTH); sub(".*" key ":[ ]*", "", m); gsub(/["\047]/, "", m); return m
		}
		return ""
	}
	/^[^ #-]/ { if (in_shards) flush(); in_shards = ($0 ~ /^shards:/); next }
	!in_shards || /^[ ]*#/ { next }
	/^[ ]*-/ { flush() }
	{ v = val($0, "name"); if (v != "") name = v
	  v = val($0, "port"); if (v != "") port = v
	  v = val($0, "host"); if (v != "") host = v }
	END { if (in_shards) flush() }
	' "$1"
}

# "NAME PORT" per shard to start: from --config, else s0..sN-1 at P+I.
start_list() {
	if [ -z "$CONFIG" ]; then
		i=0
		while [ "$i" -lt "$COUNT" ]; do echo "s$i $((PORT + i))"; i=$((i + 1)); done
		return 0
	fi
	[ -r "$CONFIG" ] || die "--config: cannot read $CONFIG"
	found=$(config_shards "$CONFIG") || die "cannot read $CONFIG"
	[ -n "$found" ] || die "$CONFIG lists no shard"
	while read -r n p h; do
		is_uint "$p" || die "$CONFIG: shard $n has no port: this script starts shards by port"
		case $h in
		127.0.0.1|localhost|::1) ;;
		*) die "$CONFIG: shard $n is on $h: this script starts local shards only" ;;
		esac
		echo "$n $p"
	done <<EOF_FOUND
$found
EOF_FOUND
}

cmd_list() {
	[ -n "$CONFIG" ] || die "list wants --config FILE"
	start_list
}

cmd_start() {
	fail=0 pids="" wpids=""
	mkdir -p "$DIR" || die "cannot create $DIR"
	list=$(start_list) || exit 1
	names=$(printf '%s\n' "$list" | awk '{print $1}')
	while read -r n p; do
		start_shard "$n" "$p" &
		pids="$pids $!"
	done <<EOF_LIST
$list
EOF_LIST
	for p in $pids; do wait "$p" || fail=1; done
	for n in $names; do
		wait_shard "$n" &
		wpids="$wpids $!"
	done
	for p in $wpids; do wait "$p" || fail=1; done
	for n in $names; do status_line "$n"; done
	[ "$fail" = 0 ] || exit 1
}

cmd_stop() {
	pids=""
	for n in $(shard_names); do
		stop_shard "$n" &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p"; done
	for n in $(shard_names); do status_line "$n"; done
}

cmd_status() {
	names=$(shard_names)
	[ -n "$names" ] || { echo "no shards under $DIR"; return 0; }
	for n in $names; do status_line "$n"; done
}

gen_config() {
	names=$(shard_names)
	echo "# bagstore configuration for local shards (conf/shards.sh config)."
	echo "# Which shard holds which entities is the bucket map's, kept on the shards."
	echo "shards:"
	if [ -n "$names" ] && [ -z "$COUNT_SET" ] && [ -z "$PORT_SET" ]; then
		for n in $names; do
			echo "  - {name: $n, host: 127.0.0.1, port: $(shard_port "$n"), database: bagstore, user: root}"
		done
	else
		i=0
		while [ "$i" -lt "$COUNT" ]; do
			echo "  - {name: s$i, host: 127.0.0.1, port: $((PORT + i)), database: bagstore, user: root}"
			i=$((i + 1))
		done
	fi
	echo "timeouts: {connect: 2, read: 10, write: 10}"
	echo "catalog_ttl: $TTL"
	first=$(shard_names | head -n 1)
	if [ -n "$first" ] && [ -f "$DIR/$first/tls" ]; then
		echo "tls: {mode: verify_identity, ca: $(cat "$DIR/$first/tls")/ca.pem}"
	fi
}

cmd_config() {
	if [ -z "$OUT" ]; then
		gen_config
		return
	fi
	if ! { mkdir -p "$(dirname "$OUT")" && gen_config >"$OUT.tmp.$$" &&
		mv -f "$OUT.tmp.$$" "$OUT"; }; then
		rm -f "$OUT.tmp.$$"
		die "cannot write $OUT"
	fi
}

cmd_reset() {
	if [ -n "$COUNT_SET" ]; then
		names="" i=0
		while [ "$i" -lt "$COUNT" ]; do names="$names s$i"; i=$((i + 1)); done
	else
		names=$(shard_names)
	fi
	[ -n "$names" ] || die "no shards under $DIR"
	fail=0
	for n in $names; do reset_shard "$n" || fail=1; done
	[ "$fail" = 0 ] || exit 1
}

cmd_purge() {
	fail=0
	for n in $(shard_names); do
		stop_shard "$n" >/dev/null || fail=1
		if live_pid "$n" >/dev/null; then
			echo "$PROG: $n is still running; its data stays" >&2
			fail=1
			continue
		fi
		rm -rf "$DIR/$n/data" "$DIR/$n/tmp" "$DIR/$n/binlog".* "$DIR/$n/relay".* \
			"$DIR/$n/start.failed" "$DIR/$n/initialised"
		echo "$n purged"
	done
	[ "$fail" = 0 ] || exit 1
}

cmd_start_one() {
	need_name start-one
	COUNT=1
	start_shard "$NAME" "$(shard_port "$NAME")" || exit 1
	wait_shard "$NAME" || exit 1
	status_line "$NAME"
}

cmd_signal() { # SIGNAME
	need_name "$CMD"
	p=$(live_pid "$NAME") || die "$NAME is not running"
	kill "-$1" "$p" || exit 1
	if [ "$1" = KILL ]; then
		wait_gone "$p" 20
		rm -f "$DIR/$NAME/mariadbd.pid"
	fi
	status_line "$NAME"
}

[ $# -ge 1 ] || usage
CMD=$1
shift
parse_opts "$@"
case $CMD in
start|stop|status|config|list|reset|purge|start-one|stop-one|pause|resume|kill) ;;
*) usage ;;
esac
case $CMD in
start|start-one)
	for t in mariadbd mariadb-install-db mariadb-admin mariadb setsid timeout; do
		command -v "$t" >/dev/null 2>&1 || [ -x "/usr/sbin/$t" ] ||
			die "$t not found (install mariadb-server: sh scripts/deps.sh)"
	done
	case :$PATH: in *:/usr/sbin:*) ;; *) PATH="$PATH:/usr/sbin" ;; esac
	;;
esac
case $CMD in
start) [ -z "$NAME" ] || usage; cmd_start ;;
stop) [ -z "$NAME" ] || die "stop takes no NAME; use stop-one $NAME"; cmd_stop ;;
status) cmd_status ;;
list) cmd_list ;;
config) cmd_config ;;
reset) [ -z "$NAME" ] || usage; cmd_reset ;;
purge) [ -z "$NAME" ] || usage; cmd_purge ;;
start-one) cmd_start_one ;;
stop-one) need_name stop-one; stop_shard "$NAME"; status_line "$NAME" ;;
pause) cmd_signal STOP ;;
resume) cmd_signal CONT ;;
kill) cmd_signal KILL ;;
esac

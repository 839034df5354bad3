#!/bin/sh
# test_shards.sh - conf/shards.sh itself: start is idempotent, status,
# stop-one/start-one, pause/resume, kill, config, stop, purge, the redo log's
# size, and what start says when the disk is full. Uses shards of its own
# (the test port + 250 to + 252, under t_servers launcher and, for the full
# disk, a small tmpfs in a mount namespace of the test's own), never the
# shared test shards.
. tests/lib.sh

SH=${SHARDS_SH:-conf/shards.sh}
SHARDS_REDO_LOG=16M # as tests/run.sh has it, when run alone too
export SHARDS_REDO_LOG
P=${BAGSTORE_LAUNCHER_TEST_PORT:-$((${BAGSTORE_TEST_PORT:-23407} + 250))}
D=$(t_servers launcher)
T_TIMEOUT=120

FULL=$(t_tmp)/full
cleanup() { sh "$SH" stop --dir "$D" >/dev/null 2>&1; }
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

pid_of() { cat "$D/$1/mariadbd.pid" 2>/dev/null; }
# Alive and not a zombie waiting for init to reap it.
alive() {
	[ -n "$1" ] && [ -r "/proc/$1/stat" ] || return 1
	case $(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1) in
	Z|X|'') return 1 ;;
	esac
	return 0
}
ping_port() {
	timeout 10 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$1" -u root \
		--connect-timeout=3 -N -B -e "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME='bagstore'"
}

# Start twice: same servers.
t_exit 0 "start" -- sh "$SH" start --count 2 --port "$P" --dir "$D"
t_contains "$T_OUT" "s0 127.0.0.1:$P up (pid" "start reports s0 up"
t_contains "$T_OUT" "s1 127.0.0.1:$((P + 1)) up (pid" "start reports s1 up"
a0=$(pid_of s0) a1=$(pid_of s1)
t_exit 0 "start again" -- sh "$SH" start --count 2 --port "$P" --dir "$D"
t_eq "$(pid_of s0) $(pid_of s1)" "$a0 $a1" "second start leaves both servers alone"
t_eq "$(ping_port "$P")" bagstore "s0 has database bagstore over 127.0.0.1"
t_eq "$(ping_port $((P + 1)))" bagstore "s1 has database bagstore over 127.0.0.1"
# the redo log is as SHARDS_REDO_LOG asks (tests/run.sh's 16M), not 96M
t_eq "$(stat -c %s "$D/s0/data/ib_logfile0")" "$((16 * 1024 * 1024))" "s0's redo log is SHARDS_REDO_LOG's 16M"

t_exit 0 "status" -- sh "$SH" status --dir "$D"
t_eq "$(printf '%s\n' "$T_OUT" | grep -c ' up (pid ')" 2 "status reports two shards up"

# config: from the running shards, and from --count/--port.
t_exit 0 "config" -- sh "$SH" config --dir "$D"
t_contains "$T_OUT" "port: $P," "config has s0's port"
t_contains "$T_OUT" "port: $((P + 1))," "config has s1's port"
t_contains "$T_OUT" "catalog_ttl: 2" "config has the default catalog_ttl"
t_contains "$T_OUT" "timeouts: {connect: 2, read: 10, write: 10}" "config has timeouts"
cfg=$(t_tmp)/c.yaml
t_exit 0 "config --out" -- sh "$SH" config --count 3 --port 4000 --catalog-ttl 1 --out "$cfg"
t_eq "$(grep -c '^  - {name: s[0-9], host: 127.0.0.1, port: 400[0-2], database: bagstore, user: root}$' "$cfg")" 3 \
	"config --count 3 lists three shards"
t_eq "$(grep '^catalog_ttl:' "$cfg")" "catalog_ttl: 1" "config --catalog-ttl"
if command -v python3 >/dev/null 2>&1 && python3 -c 'import yaml' 2>/dev/null; then
	t_exit 0 "config parses as YAML" -- python3 -c '
import sys, yaml
c = yaml.safe_load(open(sys.argv[1]))
assert [s["port"] for s in c["shards"]] == [4000, 4001, 4002], c
assert c["timeouts"]["read"] == 10 and c["catalog_ttl"] == 1, c' "$cfg"
fi

# stop-one / start-one: same port, a new server.
t_exit 0 "stop-one s1" -- sh "$SH" stop-one s1 --dir "$D"
t_contains "$T_OUT" "s1 127.0.0.1:$((P + 1)) down" "stop-one reports s1 down"
if alive "$a1"; then t_fail "s1's server is gone"; else t_ok "s1's server is gone"; fi
t_eq "$(pid_of s0)" "$a0" "stop-one leaves s0 alone"
t_exit 0 "stop-one s1 again" -- sh "$SH" stop-one s1 --dir "$D"
t_exit 0 "start-one s1" -- sh "$SH" start-one s1 --dir "$D"
t_contains "$T_OUT" "s1 127.0.0.1:$((P + 1)) up" "start-one brings s1 back on its port"
t_eq "$(ping_port $((P + 1)))" bagstore "s1 keeps its data"
t_exit 1 "start-one of an unknown shard fails" -- sh "$SH" start-one s7 --dir "$D"

# pause / resume; start resumes a paused shard.
t_exit 0 "pause s0" -- sh "$SH" pause s0 --dir "$D"
t_exit 0 "status while paused" -- sh "$SH" status --dir "$D"
t_contains "$T_OUT" "s0 127.0.0.1:$P paused" "status shows s0 paused"
t_exit 0 "resume s0" -- sh "$SH" resume s0 --dir "$D"
t_eq "$(ping_port "$P")" bagstore "s0 answers after resume"
sh "$SH" pause s0 --dir "$D" >/dev/null
t_exit 0 "start with s0 paused" -- sh "$SH" start --count 2 --port "$P" --dir "$D"
t_eq "$(pid_of s0)" "$a0" "start resumes a paused shard instead of replacing it"

# kill, then start: stale pid file cleaned, server replaced.
t_exit 0 "kill s0" -- sh "$SH" kill s0 --dir "$D"
t_contains "$T_OUT" "s0 127.0.0.1:$P down" "kill leaves s0 down"
echo 999999 >"$D/s0/mariadbd.pid"
t_exit 0 "start after kill with a stale pid file" -- sh "$SH" start --count 2 --port "$P" --dir "$D"
t_eq "$(printf '%s\n' "$T_OUT" | grep -c ' up (pid ')" 2 "both up again"
n0=$(pid_of s0)
if [ -n "$n0" ] && [ "$n0" != "$a0" ] && alive "$n0"; then t_ok "s0 has a new server"; else t_fail "s0 has a new server" "pid $n0, was $a0"; fi

# stop, twice; nothing left.
b0=$(pid_of s0) b1=$(pid_of s1)
t_exit 0 "stop" -- sh "$SH" stop --dir "$D"
t_eq "$(printf '%s\n' "$T_OUT" | grep -c ' down$')" 2 "stop reports both down"
if alive "$b0" || alive "$b1"; then t_fail "no server left after stop"; else t_ok "no server left after stop"; fi
t_exit 0 "stop again" -- sh "$SH" stop --dir "$D"
t_exit 0 "status after stop" -- sh "$SH" status --dir "$D"
t_eq "$(printf '%s\n' "$T_OUT" | grep -c ' down$')" 2 "status reports both down"

# purge: the data goes, the logs stay, and start makes a new server
t_exit 0 "start for purge" -- sh "$SH" start --count 2 --port "$P" --dir "$D"
t_exit 0 "a table in s0" -- mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$P" -u root \
	-e "CREATE TABLE bagstore.before_purge (a INT)"
t_exit 0 "purge" -- sh "$SH" purge --dir "$D"
t_eq "$T_OUT" "s0 purged
s1 purged" "purge names each shard"
if [ -e "$D/s0/data" ] || [ -e "$D/s1/data" ]; then t_fail "purge deletes the data"; else t_ok "purge deletes the data"; fi
t_eq "$(test -s "$D/s0/error.log" && echo kept)" kept "purge keeps s0's error log"
if alive "$(pid_of s0)"; then t_fail "purge stopped s0"; else t_ok "purge stopped s0"; fi
t_exit 0 "start after purge" -- sh "$SH" start --count 2 --port "$P" --dir "$D"
t_eq "$(printf '%s\n' "$T_OUT" | grep -c ' up (pid ')" 2 "both up after purge"
t_eq "$(ping_port "$P")" bagstore "s0 has database bagstore after purge"
t_eq "$(mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$P" -u root -N -B \
	-e "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA='bagstore'")" 0 \
	"s0 after purge is a new server: the table is gone"
t_exit 0 "purge again" -- sh "$SH" purge --dir "$D"

# A full disk: start says so, with what is left, beside the server's words.
# A 40M tmpfs and MariaDB's default redo log of 96M, in a mount namespace
# of its own (unshare: the mount goes with the command, however it ends;
# as root, else in a user namespace too), where a server that started
# anyway is stopped before the namespace goes.
mkdir -p "$FULL"
if [ "$(id -u)" = 0 ]; then ns="unshare -m"; else ns="unshare -rm"; fi
# shellcheck disable=SC2016,SC2086
t_exit 1 "start on a full disk fails" -- env SHARDS_REDO_LOG=96M $ns sh -c '
	mount -t tmpfs -o size=40M tmpfs "$1" || { echo "test_shards: no tmpfs in a mount namespace ($0)" >&2; exit 3; }
	sh "$2" start --count 1 --port "$3" --dir "$1"
	rc=$?
	sh "$2" stop --dir "$1" >/dev/null 2>&1
	exit $rc' "$ns" "$FULL" "$SH" $((P + 2))
t_contains "$T_ERR" "mariadb-install-db failed for s0" "it names the shard"
t_contains "$T_ERR" "error 28" "it quotes the server's error"
t_contains "$T_ERR" "shards.sh: the disk holding $FULL/s0 is full (" "it says the disk is full"

t_exit 2 "an unknown command is a usage error" -- sh "$SH" frobnicate
t_exit 1 "a bad --count is refused" -- sh "$SH" start --count x --dir "$D"

cleanup
t_done test_shards

#!/bin/sh
# test_hook_env.sh - a hook's environment holds the event's BAGSTORE_*
# variables and PATH, HOME, LANG (LC_ALL, TZ when set), never the shards'
# passwords: the cleaner runs with its shards' accounts behind password_env
# (an account made here, with a password) and MYSQL_PWD and another
# variable in its environment; its hooks dump their environment to a file
# and, failing, to their output, which the daemon logs. Neither the file
# nor the log may hold the password's name or value, or anything of the
# daemon's environment beyond that short list.
. tests/lib.sh

B=$BAGSTORE
T=$(t_tmp)
PW=hook-pw-Zq81x
PW2=mysql-pwd-Vb42k
USR=bs_hook_env

root() { # SHARD SQL
	timeout 30 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$(t_port "$1")" -u root \
		--connect-timeout=5 -N -B -e "$2"
}
drop_users() {
	root 0 "DROP USER IF EXISTS $USR@'127.0.0.1'" 2>/dev/null
	root 1 "DROP USER IF EXISTS $USR@'127.0.0.1'" 2>/dev/null
}
trap drop_users EXIT

t_exit 0 "init" -- "$B" -c "$BAGSTORE_TEST_CONFIG" init
awk 'BEGIN { for (k = 1; k <= 50; k++) printf("{\"n\":%d}\n", k) }' >"$T/e.jsonl"
t_exit 0 "put 50 entities" -- "$B" -c "$BAGSTORE_TEST_CONFIG" put "$T/e.jsonl"
drop_users
for i in 0 1; do
	root "$i" "CREATE USER $USR@'127.0.0.1' IDENTIFIED BY '$PW'; GRANT ALL ON bagstore.* TO $USR@'127.0.0.1'"
done
{
	sed "s/user: root}/user: $USR, password_env: BS_HOOK_PW}/" "$BAGSTORE_TEST_CONFIG"
	cat <<EOF
cleaner:
  repair_interval: 0.1
  hooks:
    on_event: 'env >"$T/env.\$BAGSTORE_EVENT"'
    on_backfill_done: 'env; exit 1'
    timeout: 5
EOF
} >"$T/hook.yaml"
t_contains "$(cat "$T/hook.yaml")" "password_env: BS_HOOK_PW" "the shards' accounts are behind password_env"

BS_HOOK_PW=$PW MYSQL_PWD=$PW2 BS_HOOK_OTHER=other-value LANG=C.UTF-8 TZ=UTC \
	"$B" -c "$T/hook.yaml" cleaner --log-format json >"$T/d.out" 2>"$T/d.err" &
d=$!
t_exit 0 "index create by_n" -- "$B" -c "$BAGSTORE_TEST_CONFIG" index create by_n --on n:int --shard-on n
ready() { [ -s "$T/env.index_ready" ] && grep -q '"hook_failed"' "$T/d.err"; }
if t_wait 60 ready; then t_ok "the hooks ran (index_ready, backfill_done)"; else t_fail "the hooks ran" "$(tail -5 "$T/d.err")"; fi
kill -TERM $d
wait $d
env_all=$(cat "$T"/env.* 2>/dev/null)
t_contains "$env_all" "BAGSTORE_EVENT=index_ready" "the hook has BAGSTORE_EVENT"
t_contains "$env_all" "BAGSTORE_INDEX=by_n" "and BAGSTORE_INDEX"
t_match "$env_all" "^BAGSTORE_SHARD=s[01]$" "and BAGSTORE_SHARD"
t_match "$env_all" "^PATH=." "and PATH"
t_contains "$env_all" "LANG=C.UTF-8" "and LANG"
t_contains "$env_all" "TZ=UTC" "and TZ"
for w in BS_HOOK_PW "$PW" MYSQL_PWD "$PW2" BS_HOOK_OTHER other-value; do
	case $env_all in
	*"$w"*) t_fail "no hook's environment holds $w" "$(grep -- "$w" "$T"/env.*)" ;;
	*) t_ok "no hook's environment holds $w" ;;
	esac
done
names=$(cat "$T"/env.* | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p' | sort -u |
	grep -Ev '^(BAGSTORE_[A-Z_]+|PATH|HOME|LANG|LC_ALL|TZ|PWD|SHLVL|_)$')
t_eq "$names" "" "nothing else of the daemon's environment (but what sh sets: PWD, SHLVL, _)"
t_contains "$(cat "$T/d.err")" "BAGSTORE_EVENT=backfill_done" "the failing hook's output is logged"
case $(cat "$T/d.err" "$T/d.out") in
*"$PW"* | *"$PW2"*) t_fail "the daemon's log holds no password" "$(grep -e "$PW" -e "$PW2" "$T/d.err")" ;;
*) t_ok "the daemon's log holds no password" ;;
esac

drop_users
t_done test_hook_env

#!/bin/sh
# test_auth.sh - the ways a shard's password reaches the server, against
# the real test servers with a real password: a user bs_auth whose password
# holds both quotes and dollars is made on both shards, then real commands
# (init, index create, put, get, query, shards, verify, cleaner --once) run
# through each form of configuration:
#
#   env     host/port, user, password_env
#   file    defaults_file with option_group, one group per shard ([client]
#           holds a wrong password: the group named must be the one read)
#   socket  socket, user, password_env
#
# and each form with a wrong password (or its variable unset) fails with a
# clear error naming the shard (exit 2), printing no password. Root on the
# test servers has no password, so a command that works through a form
# whose wrong password fails proves the password was sent and checked.
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
T=$(t_tmp)
P0=$(t_port 0)
P1=$(t_port 1)
# the password, and its SQL literal (the single quote doubled)
PW='q"u'"'"'o$te$${HOME}x'
PW_SQL=$(printf '%s' "$PW" | sed "s/'/''/g")

users() { # the SQL making (or, with "drop", removing) bs_auth on a shard
	printf "DROP USER IF EXISTS 'bs_auth'@'127.0.0.1'; DROP USER IF EXISTS 'bs_auth'@'localhost';"
	[ "${1:-}" = drop ] && return
	for h in 127.0.0.1 localhost; do
		printf "CREATE USER 'bs_auth'@'%s' IDENTIFIED BY '%s'; GRANT ALL ON bagstore.* TO 'bs_auth'@'%s';" \
			"$h" "$PW_SQL" "$h"
	done
}
sqlroot() { timeout 30 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$1" -u root -N -B -e "$2"; }
cleanup() { for p in $P0 $P1; do sqlroot "$p" "$(users drop)" >/dev/null 2>&1; done; }
trap cleanup EXIT
for p in $P0 $P1; do sqlroot "$p" "$(users)"; done
t_exit 0 "the password works with the mariadb client" -- \
	mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$P0" -u bs_auth "-p$PW" -N -B -e "SELECT CURRENT_USER()"
t_eq "$T_OUT" "bs_auth@127.0.0.1" "as bs_auth"
S0=$(sqlroot "$P0" "SELECT @@socket")
S1=$(sqlroot "$P1" "SELECT @@socket")

# ------------------------------------------------------------ the forms
cat >"$T/env.yaml" <<EOC
shards:
  - {name: s0, host: 127.0.0.1, port: $P0, database: bagstore, user: bs_auth, password_env: BS_AUTH_PW}
  - {name: s1, host: 127.0.0.1, port: $P1, database: bagstore, user: bs_auth, password_env: BS_AUTH_PW}
catalog_ttl: 1
EOC
cat >"$T/socket.yaml" <<EOC
shards:
  - {name: s0, socket: "$S0", database: bagstore, user: bs_auth, password_env: BS_AUTH_PW}
  - {name: s1, socket: "$S1", database: bagstore, user: bs_auth, password_env: BS_AUTH_PW}
catalog_ttl: 1
EOC
# option files: s0's password double-quoted with \" inside, s1's bare;
# [client] is wrong on purpose
mycnf() { # FILE PASSWORD
	{
		printf '[client]\nhost=127.0.0.1\nport=%s\nuser=bs_auth\npassword=not-this-one\n\n' "$P0"
		printf '[bs_s0]\nhost=127.0.0.1\nport=%s\nuser=bs_auth\npassword="%s"\n\n' "$P0" "$(printf '%s' "$2" | sed 's/"/\\"/g')"
		printf '[bs_s1]\nhost=127.0.0.1\nport=%s\nuser=bs_auth\npassword=%s\n' "$P1" "$2"
	} >"$1"
	chmod 600 "$1"
}
mycnf "$T/my.cnf" "$PW"
mycnf "$T/wrong.cnf" "${PW}x"
for f in my wrong; do
	cat >"$T/file-$f.yaml" <<EOC
shards:
  - {name: s0, defaults_file: $T/$f.cnf, option_group: bs_s0, database: bagstore}
  - {name: s1, defaults_file: $T/$f.cnf, option_group: bs_s1, database: bagstore}
catalog_ttl: 1
EOC
done
cp "$T/file-my.yaml" "$T/file.yaml"

BS_AUTH_PW=$PW
export BS_AUTH_PW
t_exit 0 "init through password_env" -- "$B" -c "$T/env.yaml" init
n=0
for form in env file socket; do
	n=$((n + 1))
	cf=$T/$form.yaml
	t_exit 0 "$form: init (again: idempotent)" -- "$B" -c "$cf" init
	t_exit 0 "$form: shards" -- "$B" -c "$cf" shards --json
	t_eq "$(printf '%s' "$T_OUT" | grep -c '"state": "up"')" 2 "$form: both shards up"
	t_eq "$(printf '%s' "$T_OUT" | grep -c '"fingerprint_ok": true')" 2 "$form: both fingerprints agree"
	t_exit 0 "$form: index create ix_$form" -- "$B" -c "$cf" index create "ix_$form" --on n:int --shard-on n
	t_exit 0 "$form: build ix_$form" -- "$B" -c "$cf" cleaner --index "ix_$form"
	even=0000000${n}0000400080000000000000${n}0 odd=0000000${n}0000400080000000000000${n}1
	printf '{"id":{"$uuid":"%s"},"n":%d,"form":"%s"}\n{"id":{"$uuid":"%s"},"n":%d,"form":"%s"}\n' \
		$even $n "$form" $odd $((n + 1)) "$form" >"$T/$form.jsonl"
	t_exit 0 "$form: put two entities (one a shard)" -- "$B" -c "$cf" put "$T/$form.jsonl"
	t_exit 0 "$form: get" -- "$B" -c "$cf" get $odd
	t_contains "$T_OUT" "\"n\":$((n + 1)),\"form\":\"$form\"" "$form: get returns it"
	t_exit 0 "$form: query" -- "$B" -c "$cf" query "ix_$form" "n=$n"
	t_contains "$T_OUT" "\"n\":$n,\"form\":\"$form\"" "$form: query finds it"
	t_exit 0 "$form: verify" -- "$B" -c "$cf" verify
	t_exit 0 "$form: cleaner --once" -- "$B" -c "$cf" cleaner --once
	# what the shards hold, read as root
	t_eq "$(sqlroot "$P0" "SELECT COUNT(*) FROM bagstore.entities WHERE id=X'$even'") $(sqlroot "$P1" "SELECT COUNT(*) FROM bagstore.entities WHERE id=X'$odd'")" \
		"1 1" "$form: the entities are on their shards' servers"
done

# ------------------------------------------------------------ wrong passwords
for form in env socket; do
	BS_AUTH_PW="${PW}x" t_exit 2 "$form: a wrong password is a configuration error" -- "$B" -c "$T/$form.yaml" index list
	t_match "$T_ERR" "shard s[01] " "$form: the error names the shard"
	t_contains "$T_ERR" "Access denied for user 'bs_auth'" "$form: and carries MySQL's message"
	case $T_OUT$T_ERR in *"$PW"*) t_fail "$form: no password printed" ;; *) t_ok "$form: no password printed" ;; esac
	BS_AUTH_PW="${PW}x" t_exit 2 "$form: put with a wrong password" -- "$B" -c "$T/$form.yaml" put "$T/env.jsonl"
	t_contains "$T_ERR" "Access denied" "$form: put says why"
	env -u BS_AUTH_PW "$B" -c "$T/$form.yaml" get 00000001000040008000000000000011 >"$T/unset.out" 2>"$T/unset.err"
	t_eq "$?" 2 "$form: password_env unset: exit 2"
	t_contains "$(cat "$T/unset.err")" "environment variable BS_AUTH_PW (password_env) is not set" "$form: says which variable"
	t_match "$(cat "$T/unset.err")" "shard s[01] " "$form: names the shard"
done
t_exit 2 "file: a wrong password in the option file" -- "$B" -c "$T/file-wrong.yaml" index list
t_match "$T_ERR" "shard s[01] " "file: the error names the shard"
t_contains "$T_ERR" "Access denied for user 'bs_auth'" "file: and carries MySQL's message"
case $T_OUT$T_ERR in *"$PW"*) t_fail "file: no password printed" ;; *) t_ok "file: no password printed" ;; esac
t_exit 1 "file: shards reports both shards down" -- "$B" -c "$T/file-wrong.yaml" shards
t_eq "$(printf '%s\n' "$T_OUT" | grep -c 'Access denied')" 2 "file: each shard's row says access denied"
# the option group, not [client]: without option_group the wrong [client] is read
sed 's/, option_group: bs_s[01]//' "$T/file.yaml" >"$T/file-client.yaml"
t_exit 2 "file: without option_group, [client] (a wrong password) is what is read" -- "$B" -c "$T/file-client.yaml" index list
t_contains "$T_ERR" "Access denied" "file: so access is denied"

t_done test_auth

#!/bin/sh
# test_tls.sh - shards over TLS, for real. Certificates made for the run
# (conf/tls-certs.sh: a CA and a server certificate for 127.0.0.1/localhost;
# a second CA; a certificate from the first CA for another host name) and
# two MariaDB servers of the test's own with require_secure_transport=ON:
# "good" (the right certificate) and "other" (the other host name's).
#
# verify_identity with the right CA connects, and `shards` (table, --json,
# the console's screen) reports the protocol and the cipher the mariadb
# client also gets; the wrong CA, the wrong host name, `disabled` against a
# server that requires TLS, and required/verify_ca/verify_identity against
# a server without TLS (the shared test shard) each fail with a message
# saying what failed, and change nothing. verify_ca is a check of its own
# (the other host's certificate passes it); an option file's ssl-ca and
# ssl-verify-server-cert=1 keep working; a client certificate reaches the
# server (an account REQUIRE X509); a replica's connection gets its TLS the
# same way; `grants` gives a TLS shard's account REQUIRE SSL; and bad tls
# settings are refused at FILE:LINE:COL.
#
# Its own servers: the test port + 13 and + 14 (or BAGSTORE_TLS_PORT and the
# next), stopped at the end.
. tests/lib.sh
T=$(t_tmp)
B=$BAGSTORE
CFG=$BAGSTORE_TEST_CONFIG
P0=$(t_port 0)
P=${BAGSTORE_TLS_PORT:-$((${BAGSTORE_TEST_PORT:-23407} + 13))}
Q=$((P + 1))
T_TIMEOUT=120
# not under $T: t_done removes $T before the EXIT trap could stop them
D=$(t_servers tls)
stop_all() {
	sh "$SHARDS_SH" stop --dir "$D/good" >/dev/null 2>&1
	sh "$SHARDS_SH" stop --dir "$D/other" >/dev/null 2>&1
}
trap stop_all EXIT
stop_all
rm -rf "$D"
C=$D/certs

t_exit 0 "a CA and a server certificate for localhost/127.0.0.1" -- sh conf/tls-certs.sh "$C/ca1"
t_exit 0 "a second CA" -- sh conf/tls-certs.sh "$C/ca2" --ca-name "another CA"
t_exit 0 "a certificate from the first CA for another host" -- \
	sh conf/tls-certs.sh "$C/wrong" --ca-from "$C/ca1" --no-local --name db.example.com
t_exit 0 "start the good server: TLS required" -- \
	sh "$SHARDS_SH" start --count 1 --port "$P" --dir "$D/good" --tls "$C/ca1" --require-tls
t_exit 0 "start the other server: TLS required, another host's certificate" -- \
	sh "$SHARDS_SH" start --count 1 --port "$Q" --dir "$D/other" --tls "$C/wrong" --require-tls
[ "$T_FAILED" = 0 ] || t_done test_tls

# SQL on a server of ours through its socket (TCP wants TLS there)
sock() { s="$D/$1/s0/mysqld.sock"; [ "${#s}" -gt 100 ] && s="${TMPDIR:-/tmp}/bagstore-$(printf '%s' "$D/$1/s0" | cksum | cut -d' ' -f1).sock"; echo "$s"; }
ssql() { timeout 30 mariadb --no-defaults --protocol=socket -S "$(sock "$1")" -uroot -N -B bagstore -e "$2"; }
# a configuration: NAME, the shard's port, then its tls mapping (may be empty)
cfg() {
	{
		echo "shards:"
		if [ -n "$3" ]; then
			echo "  - {name: s0, host: 127.0.0.1, port: $2, database: bagstore, user: root, tls: $3}"
		else
			echo "  - {name: s0, host: 127.0.0.1, port: $2, database: bagstore, user: root}"
		fi
		echo "timeouts: {connect: 3, read: 10, write: 10}"
	} >"$T/$1.yaml"
}
nothing_on() { # SERVER DESC: no table was made there
	t_eq "$(ssql "$1" 'SHOW TABLES')" "" "$2"
}

# ------------------------------------------------------------ verify_identity
cfg good "$P" "{mode: verify_identity, ca: $C/ca1/ca.pem}"
t_exit 0 "init over verify_identity" -- "$B" -c "$T/good.yaml" init
printf '{"id":{"$uuid":"5e1f0000-0000-4000-8000-000000000001"},"n":1}\n' >"$T/e.jsonl"
t_exit 0 "put over verify_identity" -- "$B" -c "$T/good.yaml" put "$T/e.jsonl"
t_exit 0 "get it back" -- "$B" -c "$T/good.yaml" get 5e1f0000-0000-4000-8000-000000000001
t_contains "$T_OUT" '"n":1' "the entity went over TLS and back"
t_eq "$(ssql good 'SELECT COUNT(*) FROM entities')" 1 "the server holds it"
t_exit 0 "shards --json" -- "$B" -c "$T/good.yaml" shards --json
J=$T_OUT
t_contains "$J" '"encrypted": true' "the connection is encrypted"
t_match "$J" '"version": "TLSv1\.[23]"' "the protocol version"
t_contains "$J" '"verified": "identity"' "the certificate was verified, host name included"
t_contains "$J" '"mode": "verify_identity"' "the configured mode"
cipher=$(printf '%s\n' "$J" | sed -n 's/.*"cipher": "\([^"]*\)".*/\1/p' | head -n 1)
t_match "$cipher" '^[A-Z0-9_-]+$' "shards --json reports the cipher ($cipher)"
# the mariadb client, verifying alike, negotiates the same cipher
real=$(timeout 30 mariadb --no-defaults -h 127.0.0.1 -P "$P" -uroot --ssl-ca="$C/ca1/ca.pem" \
	--ssl-verify-server-cert -N -B -e "SHOW SESSION STATUS LIKE 'Ssl_cipher'" | cut -f2)
t_eq "$cipher" "$real" "the cipher is the one the mariadb client gets"
t_exit 0 "shards table" -- "$B" -c "$T/good.yaml" shards
t_match "$T_OUT" "^s0 .* TLSv1\.[23] verified +$cipher " "the table: protocol, verified, cipher"
mkdir -p "$T/dumps"
printf 'wait-for s0 30\nwait-idle 30\ndump shards\nkeys :q\\n\n' >"$T/shards.keys"
t_exit 0 "the console's shards screen" -- "$B" -c "$T/good.yaml" --headless "$T/shards.keys" --dump-dir "$T/dumps"
t_match "$(cat "$T/dumps/shards.txt")" "s0 +TLSv1\.[23] verified +$cipher +\(mode verify_identity\)" \
	"the console shows the protocol, verified, the cipher and the mode"

# ------------------------------------------------------------ refusals
before=$(ssql good 'SELECT COUNT(*), MAX(updated) FROM entities')
printf '{"id":{"$uuid":"5e1f0000-0000-4000-8000-000000000002"},"n":2}\n' >"$T/e2.jsonl"

cfg wrongca "$P" "{mode: verify_identity, ca: $C/ca2/ca.pem}"
t_exit 2 "put with the wrong CA" -- "$B" -c "$T/wrongca.yaml" put "$T/e2.jsonl"
t_contains "$T_ERR" "shard s0 (127.0.0.1:$P): cannot connect: TLS: untrusted certificate" "wrong CA: untrusted certificate, naming the shard"
t_contains "$T_ERR" "$C/ca2/ca.pem" "wrong CA: names the CA it was checked against"
cfg wrongcaca "$P" "{mode: verify_ca, ca: $C/ca2/ca.pem}"
t_exit 2 "put with the wrong CA, verify_ca" -- "$B" -c "$T/wrongcaca.yaml" put "$T/e2.jsonl"
t_contains "$T_ERR" "untrusted certificate" "verify_ca checks the chain too"

cfg wronghost "$Q" "{mode: verify_identity, ca: $C/ca1/ca.pem}"
t_exit 2 "init against a certificate for another host" -- "$B" -c "$T/wronghost.yaml" init
t_contains "$T_ERR" "shard s0 (127.0.0.1:$Q): cannot connect: TLS: name mismatch" "wrong host: name mismatch, naming the shard"
t_contains "$T_ERR" "does not name 127.0.0.1" "wrong host: the name it checked"
nothing_on other "wrong host: nothing made on that server"
# verify_ca checks the chain, not the name: the same certificate passes it
cfg caonly "$Q" "{mode: verify_ca, ca: $C/ca1/ca.pem}"
t_exit 0 "verify_ca against the other host's certificate" -- "$B" -c "$T/caonly.yaml" shards --json
t_contains "$T_OUT" '"verified": "ca"' "verify_ca: the chain verified, the name not"
t_exit 0 "its table" -- "$B" -c "$T/caonly.yaml" shards
t_match "$T_OUT" '^s0 .* TLSv1\.[23] ca-verified ' "the table says ca-verified"

cfg disabled "$P" "{mode: disabled}"
t_exit 2 "put with TLS disabled against a server that requires it" -- "$B" -c "$T/disabled.yaml" put "$T/e2.jsonl"
t_contains "$T_ERR" "shard s0 (127.0.0.1:$P): cannot connect: Access denied" "disabled: the server's refusal, naming the shard"
t_contains "$T_ERR" "did not ask for TLS (tls.mode disabled)" "disabled: says the connection was plain"
t_contains "$T_ERR" "require_secure_transport=ON" "disabled: and why a server refuses that"
t_exit 1 "shards with TLS disabled" -- "$B" -c "$T/disabled.yaml" shards
t_contains "$T_OUT" "unreachable" "shards: that shard is unreachable"

t_eq "$(ssql good 'SELECT COUNT(*), MAX(updated) FROM entities')" "$before" "none of the refusals changed anything"

# a server without TLS: the shared test shard s0
for mode in required verify_ca verify_identity; do
	cfg "plain_$mode" "$P0" "{mode: $mode, ca: $C/ca1/ca.pem}"
	t_exit 2 "init with $mode against a server without TLS" -- "$B" -c "$T/plain_$mode.yaml" init
	t_contains "$T_ERR" "shard s0 (127.0.0.1:$P0): cannot connect: TLS: the server does not offer TLS, and tls.mode is $mode" \
		"$mode: says the server offers no TLS"
	# the catalog is read by the fan-out, which connects without blocking
	t_exit 2 "index list with $mode against a server without TLS" -- "$B" -c "$T/plain_$mode.yaml" index list
	t_contains "$T_ERR" "cannot connect: TLS: the server does not offer TLS" "$mode: the fan-out's connections are checked too"
done
t_eq "$(t_sql 0 'SHOW TABLES')" "" "nothing made on the server without TLS"
cfg plain_preferred "$P0" "{mode: preferred}"
t_exit 0 "preferred against a server without TLS" -- "$B" -c "$T/plain_preferred.yaml" shards --json
t_contains "$T_OUT" '"encrypted": false' "preferred: plain text, and it says so"
t_contains "$T_OUT" '"plaintext_preferred": true' "preferred: JSON marks the plain text"
t_exit 0 "shards, preferred against a server without TLS" -- "$B" -c "$T/plain_preferred.yaml" shards
t_match "$T_OUT" '^s0 .* PLAINTEXT .*not encrypted: tls.mode is preferred and the server offers no TLS$' \
	"preferred: the table marks it PLAINTEXT, saying why"
mkdir -p "$T/dumps_pref"
t_exit 0 "the console, preferred against a server without TLS" -- \
	"$B" -c "$T/plain_preferred.yaml" --headless "$T/shards.keys" --dump-dir "$T/dumps_pref"
t_match "$(cat "$T/dumps_pref/shards.txt")" 's0 +PLAINTEXT .*\(mode preferred\) +the server offers no TLS' \
	"the console marks it PLAINTEXT"
# the daemon says it once, however many times its collector reads the status
"$B" -c "$T/plain_preferred.yaml" cleaner --log-format json >"$T/pref.out" 2>"$T/pref.err" &
dpid=$!
said() { grep -q '"event":"tls_plaintext"' "$T/pref.err" 2>/dev/null; }
_end=$(($(date +%s) + 20))
while ! said && [ "$(date +%s)" -lt "$_end" ]; do sleep 0.2; done
sleep 3 # three more reads of the collector
kill -TERM $dpid
wait $dpid
t_eq "$(grep -c '"event":"tls_plaintext"' "$T/pref.err")" 1 "the daemon logs the plain-text shard once"
t_contains "$(grep '"event":"tls_plaintext"' "$T/pref.err")" "shard s0 (127.0.0.1:$P0): connected in plain text: tls.mode is preferred" \
	"naming the shard and the mode"
cfg preferred "$P" "{mode: preferred}"
t_exit 0 "preferred against a TLS server" -- "$B" -c "$T/preferred.yaml" shards --json
t_contains "$T_OUT" '"encrypted": true' "preferred: encrypted"
t_contains "$T_OUT" '"verified": "none"' "preferred: nothing verified"

# ------------------------------------------------------------ mixed
cat >"$T/mixed.yaml" <<CFG
shards:
  - {name: s0, host: 127.0.0.1, port: $P, database: bagstore, user: root}
  - {name: s1, host: 127.0.0.1, port: $P0, database: bagstore, user: root, tls: {mode: disabled}}
tls: {ca: $C/ca1/ca.pem}
CFG
# s0 was initialised above as a one-shard list, s1 not at all: shards
# prints the table all the same, then exits 2 (a shard list the shards
# disagree with: s0's map does not name s1 yet, which init would add)
t_exit 2 "shards, one encrypted and one not" -- "$B" -c "$T/mixed.yaml" shards
t_contains "$T_ERR" "shard s1 is not in the store's bucket map yet: run \`bagstore init\`" \
	"mixed: the exit status says why"
t_match "$T_OUT" '^s0 .* TLSv1\.[23] verified ' "a tls: with only ca means verify_identity"
t_match "$T_OUT" '^s1 .* PLAINTEXT .*not encrypted, while other shards are$' "the plain shard is marked"
t_exit 2 "shards --json, mixed" -- "$B" -c "$T/mixed.yaml" shards --json
t_contains "$T_OUT" '"plaintext_among_encrypted": true' "JSON marks it"
t_exit 0 "the console, mixed" -- "$B" -c "$T/mixed.yaml" --headless "$T/shards.keys" --dump-dir "$T/dumps"
t_match "$(cat "$T/dumps/shards.txt")" 's1 +PLAINTEXT .*not encrypted, while other shards are' "the console marks it"
t_contains "$(cat "$T/dumps/shards.txt")" "TLS: 1 of 2 shards up encrypted" "the console counts the encrypted shards"

# ------------------------------------------------------------ option file
printf '[client]\nhost=127.0.0.1\nport=%s\nuser=root\nssl-ca=%s\nssl-verify-server-cert=1\n' "$P" "$C/ca1/ca.pem" >"$T/good.cnf"
printf '[client]\nhost=127.0.0.1\nport=%s\nuser=root\nssl-ca=%s\nssl-verify-server-cert=1\n' "$Q" "$C/ca1/ca.pem" >"$T/other.cnf"
printf 'shards:\n  - {name: s0, defaults_file: %s}\n' "$T/good.cnf" >"$T/optfile.yaml"
printf 'shards:\n  - {name: s0, defaults_file: %s}\n' "$T/other.cnf" >"$T/optfile_other.yaml"
t_exit 0 "an option file's ssl-ca and ssl-verify-server-cert" -- "$B" -c "$T/optfile.yaml" shards --json
t_contains "$T_OUT" '"verified": "identity"' "option file: TLS verified, as the file says"
t_contains "$T_OUT" '"mode": "unset"' "option file: no tls: in the configuration"
t_exit 2 "the option file against the other host" -- "$B" -c "$T/optfile_other.yaml" get 5e1f0000-0000-4000-8000-000000000001
t_contains "$T_ERR" "name mismatch" "option file: its verification refuses the other host"
# verify_identity in the configuration on top of the file
printf 'shards:\n  - {name: s0, defaults_file: %s, tls: {mode: verify_ca}}\n' "$T/good.cnf" >"$T/optfile_ca.yaml"
t_exit 0 "verify_ca with the CA from the option file" -- "$B" -c "$T/optfile_ca.yaml" shards --json
t_contains "$T_OUT" '"encrypted": true' "verify_ca, CA from the file: encrypted"

# ------------------------------------------------------------ client certificate
ssql good "CREATE USER IF NOT EXISTS x509user@'127.0.0.1' REQUIRE X509; GRANT SELECT ON bagstore.* TO x509user@'127.0.0.1'"
cat >"$T/x509.yaml" <<CFG
shards:
  - {name: s0, host: 127.0.0.1, port: $P, database: bagstore, user: x509user,
     tls: {ca: $C/ca1/ca.pem, cert: $C/ca1/client-cert.pem, key: $C/ca1/client-key.pem}}
CFG
t_exit 0 "an account REQUIRE X509, with a client certificate" -- "$B" -c "$T/x509.yaml" get 5e1f0000-0000-4000-8000-000000000001
t_contains "$T_OUT" '"n":1' "the client certificate reached the server"
cfg nox509 "$P" "{ca: $C/ca1/ca.pem}"
sed -i 's/user: root/user: x509user/' "$T/nox509.yaml"
t_exit 2 "the same account without one" -- "$B" -c "$T/nox509.yaml" get 5e1f0000-0000-4000-8000-000000000001
t_contains "$T_ERR" "Access denied for user 'x509user'" "refused by the server"

# ------------------------------------------------------------ replicas
# the replica's connection gets its TLS from the same place (its "replica"
# is the other server: not replicating, but the connection is made)
cat >"$T/replica.yaml" <<CFG
shards:
  - {name: s0, host: 127.0.0.1, port: $P, database: bagstore, user: root,
     replicas: [{host: 127.0.0.1, port: $Q, tls: {mode: verify_ca}}]}
tls: {ca: $C/ca1/ca.pem}
CFG
t_exit 0 "a replica over verify_ca" -- "$B" -c "$T/replica.yaml" shards --json
t_match "$(printf '%s\n' "$T_OUT" | tr -d '\n ')" '"replica_tls":\{"encrypted":true,"version":"TLSv1\.[23]","cipher":"[A-Z0-9_-]+","verified":"ca"\}' \
	"the replica's TLS: encrypted, its chain verified"
sed 's/, tls: {mode: verify_ca}//' "$T/replica.yaml" >"$T/replica_id.yaml"
t_exit 0 "a replica over verify_identity, another host's certificate" -- "$B" -c "$T/replica_id.yaml" shards
t_contains "$T_OUT" "replica 127.0.0.1:$Q: TLS: name mismatch" "the replica's name mismatch is reported"

# ------------------------------------------------------------ grants and REQUIRE SSL
t_exit 0 "grants for a TLS shard" -- "$B" -c "$T/good.yaml" grants --role readonly --user tlsro --host 127.0.0.1
t_contains "$T_OUT" 'ALTER USER `tlsro`@`127.0.0.1` REQUIRE SSL;' "the account is made to require TLS"
ssql good "DROP USER IF EXISTS tlsro@'127.0.0.1'; CREATE USER tlsro@'127.0.0.1'"
printf '%s\n' "$T_OUT" >"$T/grants.sql"
t_exit 0 "run them on the server" -- sh -c "mariadb --no-defaults --protocol=socket -S '$(sock good)' -uroot <'$T/grants.sql'"
t_contains "$(ssql good "SHOW GRANTS FOR tlsro@'127.0.0.1'")" "REQUIRE SSL" "the server holds REQUIRE SSL"
sed 's/user: root/user: tlsro/' "$T/good.yaml" >"$T/tlsro.yaml"
t_exit 0 "that account over verify_identity" -- "$B" -c "$T/tlsro.yaml" get 5e1f0000-0000-4000-8000-000000000001

# ------------------------------------------------------------ configuration errors
cat >"$T/badmode.yaml" <<CFG
shards:
  - {name: s0, host: 127.0.0.1, port: $P}
tls: {mode: verify-full}
CFG
t_exit 2 "a mode that does not exist" -- "$B" -c "$T/badmode.yaml" shards
t_contains "$T_ERR" "badmode.yaml:3:13: tls.mode: expected disabled, preferred, required, verify_ca or verify_identity" \
	"the mode refused at FILE:LINE:COL"
cat >"$T/badca.yaml" <<CFG
shards:
  - name: s0
    host: 127.0.0.1
    tls: {ca: $T/no-such-ca.pem}
CFG
t_exit 2 "a CA file that cannot be read" -- "$B" -c "$T/badca.yaml" shards
t_contains "$T_ERR" "badca.yaml:4:15: shards[0].tls.ca: cannot read \"$T/no-such-ca.pem\": No such file or directory" \
	"the file refused at FILE:LINE:COL"

stop_all
t_done test_tls

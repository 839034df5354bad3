#!/bin/sh
# test_metrics_auth.sh - /metrics protected as Prometheus's exporters are:
# a web configuration file (--web.config.file, cleaner.metrics_web_config)
# with TLS and bcrypt basic auth, against the shared test shards:
#
#  - TLS with certificates from conf/tls-certs.sh: curl trusting the CA
#    gets 200, plain HTTP and a client that does not trust the CA get
#    nothing; basic auth: no credentials 401 (with a Basic challenge), a
#    wrong password or user 401, the right ones 200; a scrape through TLS and
#    basic auth parsed by the reference Prometheus parser;
#  - client certificates: RequireAndVerifyClientCert refuses none and one
#    from another CA (403), takes the CA's; VerifyClientCertIfGiven takes
#    none and the CA's, refuses another CA's;
#  - SIGHUP reads the file again: a new password works and the old one no
#    longer does; a broken file is logged with FILE:LINE:COL and the one in
#    force stays;
#  - an address that is not loopback without a web configuration is refused
#    (naming --metrics, or the configuration's FILE:LINE:COL), unless
#    cleaner.metrics_insecure: true; with one it starts;
#  - broken web configurations: each refused with FILE:LINE:COL and what
#    is wrong, exit 2.
. tests/lib.sh

TMP=$(t_tmp)
SP=$(t_port 0)
MP=$((SP + 51)) # metrics ports MP .. MP+3
BASE=$BAGSTORE_TEST_CONFIG
CFG=$TMP/c.yaml
{ cat "$BASE"; printf 'cleaner: {repair_interval: 0.2, log_every: 1}\n'; } >"$CFG"
t_need_prom
PY=$T_PY
command -v curl >/dev/null || t_fail "curl is installed"
# bcrypt PASSWORD: a $2b$ hash (libxcrypt through python's crypt module)
bcrypt() { "$PY" -W ignore -c 'import crypt,sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1024)))' "$1"; }
# code CURL-ARGS...: the HTTP status curl got ("000" when none)
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" 2>/dev/null; }
stop() { kill -TERM "$1" 2>/dev/null; wait "$1" 2>/dev/null; }
bs() {
	want=$1 desc=$2
	shift 2
	t_exit "$want" "$desc" -- "$BAGSTORE" -c "$CFG" "$@"
}

sh conf/tls-certs.sh "$TMP/certs" >/dev/null 2>&1 || t_fail "conf/tls-certs.sh makes certificates"
sh conf/tls-certs.sh "$TMP/other" --ca-name "another CA" >/dev/null 2>&1 || t_fail "a second CA"
C=$TMP/certs
H1=$(bcrypt 'right horse')
case $H1 in '$2b$10$'*) t_ok "a bcrypt hash to test with" ;; *) t_fail "python's crypt makes bcrypt hashes" "$H1" ;; esac
# relative paths: the web configuration's folder's
cat >"$C/web.yaml" <<EOF
tls_server_config:
  cert_file: server-cert.pem
  key_file: server-key.pem
basic_auth_users:
  prom: '$H1'
EOF
bs 0 "init" init

# ------------------------------------------------------------ TLS and basic auth

first_line() { [ -n "$(head -1 "$1")" ]; }

"$BAGSTORE" -c "$CFG" cleaner --metrics "127.0.0.1:$MP" --web.config.file "$C/web.yaml" --log-format json \
	>"$TMP/a.out" 2>"$TMP/a.err" &
apid=$!
U=https://127.0.0.1:$MP/metrics
up() { [ "$(code --cacert "$C/ca.pem" -u 'prom:right horse' "$U")" = 200 ]; }
if t_wait 20 up; then t_ok "TLS and the right password: 200"; else t_fail "the daemon serves /metrics over TLS" "$(tail -5 "$TMP/a.err")"; fi
# /metrics is up before the start line is written (the line says how it is protected)
t_wait 10 first_line "$TMP/a.err"
t_contains "$(head -1 "$TMP/a.err")" "TLS and basic auth" "the start line says how /metrics is protected"
t_eq "$(code "http://127.0.0.1:$MP/metrics")" 000 "plain HTTP gets no answer"
t_eq "$(code -u 'prom:right horse' "http://127.0.0.1:$MP/metrics")" 000 "plain HTTP with the password gets none either"
t_eq "$(code -u 'prom:right horse' "$U")" 000 "a client that does not trust the CA gets nothing"
t_eq "$(code --cacert "$C/ca.pem" "$U")" 401 "TLS without credentials: 401"
t_match "$(curl -s -D - -o /dev/null --cacert "$C/ca.pem" "$U" | tr -d '\r')" '^WWW-Authenticate: Basic realm="bagstore cleaner"' "with a Basic challenge"
t_eq "$(code --cacert "$C/ca.pem" -u 'prom:wrong horse' "$U")" 401 "a wrong password: 401"
t_eq "$(code --cacert "$C/ca.pem" -u 'prum:right horse' "$U")" 401 "a wrong user: 401"
t_eq "$(code --cacert "$C/ca.pem" -u 'prom:right horse' "https://127.0.0.1:$MP/")" 200 "/ with the password: 200"
t_eq "$(code --cacert "$C/ca.pem" "https://127.0.0.1:$MP/")" 401 "/ without: 401 (nothing answers unauthenticated)"
# the reference parser, through TLS and basic auth
t_exit 0 "a scrape through TLS and basic auth parses" -- t_prom "$U" "$C/ca.pem" prom 'right horse'
t_match "$T_OUT" "^bagstore_build_info version=" "with bagstore_build_info"
t_match "$T_OUT" "^bagstore_shard_up shard=s0 1.0" "and the shards' series"
# the password cache: a scrape with a password that matched once costs no bcrypt
t0=$(date +%s%N)
for k in 1 2 3 4 5 6 7 8 9 10; do code --cacert "$C/ca.pem" -u 'prom:right horse' "$U" >/dev/null; done
t1=$(date +%s%N)
for k in 1 2 3 4 5; do code --cacert "$C/ca.pem" -u 'prom:wrong horse' "$U" >/dev/null; done
t2=$(date +%s%N)
echo "measured: 10 scrapes with the right password $(((t1 - t0) / 10000000)) ms each, 5 wrong ones $(((t2 - t1) / 5000000)) ms each"

# SIGHUP: the file read again
H2=$(bcrypt 'new horse')
sed "s|prom: .*|prom: '$H2'|" "$C/web.yaml" >"$C/web2.yaml" && mv "$C/web2.yaml" "$C/web.yaml"
kill -HUP $apid
new_pw() { [ "$(code --cacert "$C/ca.pem" -u 'prom:new horse' "$U")" = 200 ]; }
if t_wait 10 new_pw; then t_ok "SIGHUP: the new password works"; else t_fail "SIGHUP reads the web configuration again" "$(tail -3 "$TMP/a.err")"; fi
t_eq "$(code --cacert "$C/ca.pem" -u 'prom:right horse' "$U")" 401 "and the old one no longer does"
cp "$C/web.yaml" "$C/web.good"
printf 'basic_auth_users:\n  prom: notahash\n' >"$C/web.yaml"
kill -HUP $apid
bad_logged() { grep -q 'web.yaml:2:9: basic_auth_users.prom: expected a bcrypt hash' "$TMP/a.err"; }
if t_wait 10 bad_logged; then t_ok "SIGHUP with a broken file: logged with FILE:LINE:COL"; else t_fail "a broken web configuration is logged" "$(tail -3 "$TMP/a.err")"; fi
t_eq "$(code --cacert "$C/ca.pem" -u 'prom:new horse' "$U")" 200 "and the one in force stays"
# basic_auth_users twice (libyaml keeps both pairs): refused at the repeat,
# not read into a second user array under the first one's count
{ cat "$C/web.good"; printf 'basic_auth_users:\n  prom: %s\n  other: %s\n' "'$H1'" "'$H1'"; } >"$C/web.yaml"
kill -HUP $apid
dup_logged() { grep -Eq 'web\.yaml:6:1: duplicate key \\?"basic_auth_users\\?" \(first at line 4, column 1\)' "$TMP/a.err"; }
if t_wait 10 dup_logged; then t_ok "SIGHUP with basic_auth_users twice: logged with FILE:LINE:COL"; else t_fail "a repeated basic_auth_users is refused" "$(tail -3 "$TMP/a.err")"; fi
t_eq "$(grep -c '"reload_failed"' "$TMP/a.err")" 2 "as reload_failed (both broken files)"
t_eq "$(code --cacert "$C/ca.pem" -u 'prom:new horse' "$U")" 200 "the daemon still serves the one in force"
t_eq "$(code --cacert "$C/ca.pem" -u 'other:right horse' "$U")" 401 "and the refused file's users are not let in"
cp "$C/web.good" "$C/web.yaml"
stop $apid
t_eq "$(code --cacert "$C/ca.pem" -u 'prom:new horse' "$U")" 000 "stopped: nothing listens"

# ------------------------------------------------------------ client certificates

cat >"$C/webc.yaml" <<EOF
tls_server_config:
  cert_file: $C/server-cert.pem
  key_file: $C/server-key.pem
  client_ca_file: ca.pem
  client_auth_type: RequireAndVerifyClientCert
EOF
"$BAGSTORE" -c "$CFG" cleaner --metrics "127.0.0.1:$((MP + 1))" --web.config.file "$C/webc.yaml" \
	>"$TMP/c.out" 2>"$TMP/c.err" &
cpid=$!
U2=https://127.0.0.1:$((MP + 1))/metrics
upc() { [ "$(code --cacert "$C/ca.pem" --cert "$C/client-cert.pem" --key "$C/client-key.pem" "$U2")" = 200 ]; }
if t_wait 20 upc; then t_ok "a client certificate of the CA: 200"; else t_fail "client certificates" "$(tail -5 "$TMP/c.err")"; fi
t_eq "$(code --cacert "$C/ca.pem" "$U2")" 403 "no client certificate: 403"
t_eq "$(code --cacert "$C/ca.pem" --cert "$TMP/other/client-cert.pem" --key "$TMP/other/client-key.pem" "$U2")" 403 \
	"a client certificate of another CA: 403"
stop $cpid
sed 's/RequireAndVerifyClientCert/VerifyClientCertIfGiven/' "$C/webc.yaml" >"$C/webv.yaml"
"$BAGSTORE" -c "$CFG" cleaner --metrics "127.0.0.1:$((MP + 1))" --web.config.file "$C/webv.yaml" \
	>"$TMP/v.out" 2>"$TMP/v.err" &
vpid=$!
if t_wait 20 upc; then t_ok "VerifyClientCertIfGiven: the CA's certificate: 200"; else t_fail "VerifyClientCertIfGiven" "$(tail -5 "$TMP/v.err")"; fi
t_eq "$(code --cacert "$C/ca.pem" "$U2")" 200 "no certificate: 200"
t_eq "$(code --cacert "$C/ca.pem" --cert "$TMP/other/client-cert.pem" --key "$TMP/other/client-key.pem" "$U2")" 403 \
	"another CA's: 403"
stop $vpid

# ------------------------------------------------------------ addresses that are not loopback

bs 2 "0.0.0.0 without a web configuration is refused" cleaner --metrics "0.0.0.0:$((MP + 2))"
t_contains "$T_ERR" "--metrics: 0.0.0.0:$((MP + 2)) is not a loopback address" "the message names --metrics and the address"
t_contains "$T_ERR" "cleaner.metrics_insecure: true" "and says how to allow it"
{ cat "$BASE"; printf 'cleaner:\n  repair_interval: 0.2\n  metrics: "0.0.0.0:%s"\n' $((MP + 2)); } >"$TMP/open.yaml"
t_exit 2 "cleaner.metrics on 0.0.0.0 is refused" -- "$BAGSTORE" -c "$TMP/open.yaml" cleaner
line=$(grep -n 'metrics:' "$TMP/open.yaml" | cut -d: -f1)
t_contains "$T_ERR" "open.yaml:$line:12: cleaner.metrics: 0.0.0.0:$((MP + 2)) is not a loopback address" "naming FILE:LINE:COL"
printf '  metrics_insecure: true\n' >>"$TMP/open.yaml"
"$BAGSTORE" -c "$TMP/open.yaml" cleaner >"$TMP/o.out" 2>"$TMP/o.err" &
opid=$!
upo() { [ "$(code "http://127.0.0.1:$((MP + 2))/metrics")" = 200 ]; }
if t_wait 20 upo; then t_ok "with metrics_insecure: true it serves, open"; else t_fail "metrics_insecure: true" "$(tail -5 "$TMP/o.err")"; fi
t_wait 10 first_line "$TMP/o.err"
t_contains "$(head -1 "$TMP/o.err")" "(open)" "and its start line says so"
stop $opid
"$BAGSTORE" -c "$CFG" cleaner --metrics "0.0.0.0:$((MP + 3))" --web.config.file "$C/web.yaml" >"$TMP/w.out" 2>"$TMP/w.err" &
wpid=$!
upw() { [ "$(code --cacert "$C/ca.pem" -u 'prom:new horse' "https://127.0.0.1:$((MP + 3))/metrics")" = 200 ]; }
if t_wait 20 upw; then t_ok "0.0.0.0 with a web configuration serves"; else t_fail "0.0.0.0 with a web configuration" "$(tail -5 "$TMP/w.err")"; fi
stop $wpid

# ------------------------------------------------------------ broken web configurations

# badweb NAME TEXT EXPECTED DESC: the daemon refuses the file, exit 2, saying EXPECTED
badweb() {
	printf '%s\n' "$2" >"$C/$1.yaml"
	t_exit 2 "$4" -- "$BAGSTORE" -c "$CFG" cleaner --metrics "127.0.0.1:$((MP + 3))" --web.config.file "$C/$1.yaml"
	t_contains "$T_ERR" "$3" "$4: says $3"
}
badweb b1 "$(printf 'tls_server_config:\n  cert_file: server-cert.pem\n  key_file: server-key.pem\n  min_version: TLS13')" \
	"b1.yaml:4:3: tls_server_config.min_version: not supported" "a setting it does not do is refused, not ignored"
badweb b2 "$(printf 'tls_server_config:\n  cert_file: server-cert.pem')" \
	"b2.yaml:2:3: tls_server_config: cert_file and key_file are both needed" "a certificate without its key"
badweb b3 "$(printf 'tls_server_config:\n  cert_file: server-cert.pem\n  key_file: client-key.pem')" \
	"b3.yaml:2:14: tls_server_config: cert_file and key_file:" "a key that is not the certificate's"
badweb b4 "$(printf 'tls_server_config:\n  cert_file: nothere.pem\n  key_file: server-key.pem')" \
	"b4.yaml:2:14: tls_server_config.cert_file: $C/nothere.pem: No such file" "a file that is not there"
badweb b5 "$(printf 'basic_auth_users:\n  prom: secret')" \
	"b5.yaml:2:9: basic_auth_users.prom: expected a bcrypt hash" "a password in clear instead of a hash"
badweb b6 "$(printf 'basic_auth_user:\n  prom: x')" "b6.yaml:1:1: unknown key \"basic_auth_user\"" "a misspelt key"
badweb b7 "$(printf 'tls_server_config: [\n')" "b7.yaml:" "not YAML"
badweb b8 "" "sets neither tls_server_config nor basic_auth_users" "an empty file"
badweb b9 "$(printf 'tls_server_config:\n  cert_file: server-cert.pem\n  key_file: server-key.pem\n  client_ca_file: ca.pem')" \
	"b9.yaml:4:19: tls_server_config.client_ca_file without client_auth_type" "a client CA without a policy"
badweb b10 "$(printf "basic_auth_users:\n  prom: '%s'\nbasic_auth_users:\n  prom: '%s'\n  other: '%s'" "$H1" "$H1" "$H1")" \
	"b10.yaml:3:1: duplicate key \"basic_auth_users\" (first at line 1, column 1)" "basic_auth_users twice"
badweb b11 "$(printf "basic_auth_users:\n  prom: '%s'\n  prom: '%s'" "$H1" "$H1")" \
	"b11.yaml:3:3: basic_auth_users: duplicate key \"prom\" (first at line 2, column 3)" "a user twice"
badweb b12 "$(printf 'tls_server_config:\n  cert_file: server-cert.pem\n  key_file: server-key.pem\n  cert_file: ca.pem')" \
	"b12.yaml:4:3: tls_server_config: duplicate key \"cert_file\" (first at line 2, column 3)" "a tls_server_config key twice"
badweb b13 "$(printf 'tls_server_config:\n  cert_file: server-cert.pem\n  key_file: server-key.pem\ntls_server_config:\n  cert_file: server-cert.pem\n  key_file: server-key.pem')" \
	"b13.yaml:4:1: duplicate key \"tls_server_config\" (first at line 1, column 1)" "tls_server_config twice"
t_exit 2 "a web configuration that is not there" -- "$BAGSTORE" -c "$CFG" cleaner --metrics "127.0.0.1:$((MP + 3))" --web.config.file "$C/none.yaml"
t_contains "$T_ERR" "--web.config.file: $C/none.yaml: No such file" "names the flag and the file"
{ cat "$BASE"; printf 'cleaner:\n  metrics: "127.0.0.1:%s"\n  metrics_web_config: %s\n' $((MP + 3)) "$C/b5.yaml"; } >"$TMP/wc.yaml"
t_exit 2 "cleaner.metrics_web_config broken" -- "$BAGSTORE" -c "$TMP/wc.yaml" cleaner
t_match "$T_ERR" "wc.yaml:[0-9]+:23: cleaner.metrics_web_config: .*b5.yaml:2:9: basic_auth_users.prom: expected a bcrypt hash" "names both files' lines"
"$BAGSTORE" -c "$CFG" cleaner --web.config.file "$C/web.yaml" >"$TMP/n.out" 2>"$TMP/n.err" &
npid=$!
said() { grep -q "started" "$TMP/n.err"; }
t_wait 20 said
stop $npid
t_contains "$(cat "$TMP/n.err")" "--web.config.file is not used: /metrics is not served" "a web configuration without an address is said to be unused"
t_exit 2 "--web.config.file goes with the daemon only" -- "$BAGSTORE" -c "$CFG" cleaner --once --web.config.file "$C/web.yaml"

t_done test_metrics_auth

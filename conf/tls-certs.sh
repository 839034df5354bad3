#!/bin/sh
# tls-certs.sh - a throwaway certificate authority and certificates signed by
# it, for TLS between bagstore and local shards (the tests, the demo).
#
#   sh conf/tls-certs.sh DIR [--days N] [--name NAME]... [--no-local]
#                            [--ca-name CN | --ca-from DIR2]
#
# Writes into DIR (created; existing files are replaced):
#   ca.pem, ca-key.pem           the CA (CN "bagstore test CA" or --ca-name),
#                                or DIR2's copied (--ca-from: certificates
#                                signed by an existing CA)
#   server-cert.pem, server-key.pem
#                                a server certificate whose subjectAltName
#                                holds DNS:localhost, IP:127.0.0.1, IP:::1
#                                (unless --no-local) and every --name (an IP
#                                for an IPv4 or IPv6 address, else a DNS name)
#   client-cert.pem, client-key.pem
#                                a client certificate (CN bagstore), for
#                                accounts created REQUIRE X509
# Keys are RSA 2048, unencrypted, readable by the owner only; certificates
# last N days (default 30). For tests and local use: a production CA is
# kept offline and its key never sits beside the certificates.
set -eu

PROG=tls-certs.sh
die() { echo "$PROG: $*" >&2; exit 1; }
[ $# -ge 1 ] || { sed -n '2,22s/^# \{0,1\}//p' "$0" >&2; exit 2; }
DIR=$1
shift
DAYS=30
CA_NAME="bagstore test CA"
CA_FROM=""
LOCAL="DNS:localhost,IP:127.0.0.1,IP:::1"
NAMES=""
while [ $# -gt 0 ]; do
	case $1 in
	--days) [ $# -ge 2 ] || die "--days wants a number"; DAYS=$2; shift 2 ;;
	--ca-name) [ $# -ge 2 ] || die "--ca-name wants a name"; CA_NAME=$2; shift 2 ;;
	--ca-from) [ $# -ge 2 ] || die "--ca-from wants a folder"; CA_FROM=$2; shift 2 ;;
	--no-local) LOCAL=""; shift ;;
	--name)
		[ $# -ge 2 ] || die "--name wants a host name or address"
		case $2 in
		*:*) n="IP:$2" ;;                       # IPv6
		*[!0-9.]*) n="DNS:$2" ;;                # a name
		*) n="IP:$2" ;;                         # IPv4
		esac
		NAMES="${NAMES:+$NAMES,}$n"
		shift 2 ;;
	*) die "unknown argument: $1" ;;
	esac
done
SAN="$LOCAL${LOCAL:+${NAMES:+,}}$NAMES"
[ -n "$SAN" ] || die "--no-local wants at least one --name"
if [ -n "$CA_FROM" ]; then
	CA_FROM=$(cd "$CA_FROM" && pwd) || die "no folder $CA_FROM"
	[ -f "$CA_FROM/ca.pem" ] && [ -f "$CA_FROM/ca-key.pem" ] || die "$CA_FROM has no ca.pem and ca-key.pem"
fi
case $DAYS in ''|*[!0-9]*) die "--days wants a number, got '$DAYS'" ;; esac
command -v openssl >/dev/null 2>&1 || die "openssl not found (apt-get install openssl)"

mkdir -p "$DIR"
umask 077
cd "$DIR"
ossl() { openssl "$@" 2>openssl.log || { cat openssl.log >&2; die "openssl $1 failed"; }; }

if [ -n "$CA_FROM" ]; then
	cp "$CA_FROM/ca.pem" "$CA_FROM/ca-key.pem" .
else
	ossl req -x509 -newkey rsa:2048 -nodes -days "$DAYS" -subj "/CN=$CA_NAME" \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
		-keyout ca-key.pem -out ca.pem
fi
# one certificate signed by the CA: NAME CN EXTENSIONS
sign() {
	ossl req -newkey rsa:2048 -nodes -subj "/CN=$2" -keyout "$1-key.pem" -out "$1.csr"
	printf '%s\n' "$3" >"$1.ext"
	ossl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days "$DAYS" \
		-extfile "$1.ext" -out "$1-cert.pem"
	rm -f "$1.csr" "$1.ext"
}
sign server "${SAN#*:}" "subjectAltName=$SAN
extendedKeyUsage=serverAuth"
sign client bagstore "extendedKeyUsage=clientAuth"
rm -f openssl.log ca.srl
# the server reads its files as whoever runs it; certificates are public
chmod 644 ca.pem server-cert.pem client-cert.pem
echo "$PROG: CA and certificates in $DIR (server names: $SAN)"

#!/bin/sh
# Install the Debian packages bagstore needs, when any is missing.
# Building needs the -dev packages; the tests and the demo need mariadb-server,
# and the TLS tests openssl (conf/tls-certs.sh makes their certificates); the
# cleaner's service tests need curl, python3-prometheus-client (the reference
# parser of /metrics) and systemd (systemd-analyze verify); the completion
# test zsh; test_locale the locales package's sources (localedef de_DE).
set -e
# Extra packages may be named as arguments (make bench adds percona-toolkit,
# make fuzz clang and libclang-rt-dev, the fuzzer's runtime).
pkgs="build-essential pkg-config libmariadb-dev libmariadb-dev-compat libncurses-dev
      zlib1g-dev libyaml-dev uuid-dev libmsgpack-dev libjansson-dev libmicrohttpd-dev
      libgnutls28-dev libcrypt-dev
      mariadb-server mariadb-client tmux valgrind openssl curl python3 python3-prometheus-client systemd
      zsh locales $*"
[ -n "$BAGSTORE_NO_DEPS" ] && exit 0
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing"
if ! command -v apt-get >/dev/null 2>&1; then
	echo "deps: apt-get not found; install these packages by hand:$missing" >&2
	exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
		echo "deps: not root and no sudo; install these packages by hand:$missing" >&2
		exit 1
	fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq || { echo "deps: apt-get update failed" >&2; exit 1; }
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null ||
	{ echo "deps: apt-get install failed for:$missing" >&2; exit 1; }
echo "deps: done"

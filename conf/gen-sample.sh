#!/bin/sh
# gen-sample.sh - write N sample entities as JSON Lines, for the demo.
#
#   sh conf/gen-sample.sh [N] [OUT]     (N: 5000; OUT: standard output)
#
# Each line: {"id":{"$uuid":...},"user_id":{"$uuid":...},"title":...,
# "link":...,"published":...,"updated":...}, with 50 users. Random each run
# (seeded from the kernel), so two runs never write the same ids.
set -eu
N=${1:-5000}
OUT=${2:-}
case $N in ''|*[!0-9]*) echo "gen-sample.sh: N must be a number, got '$N'" >&2; exit 2 ;; esac

seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')

gen() {
	awk -v n="$N" -v seed="$seed" '
	function hex(k,   s, i) {
		s = ""
		for (i = 0; i < k; i++) s = s substr("0123456789abcdef", int(rand() * 16) + 1, 1)
		return s
	}
	function uuid() { # version 4, variant 10xx
		return hex(8) "-" hex(4) "-4" hex(3) "-" \
		       substr("89ab", int(rand() * 4) + 1, 1) hex(3) "-" hex(12)
	}
	function pick(a, k) { return a[int(rand() * k) + 1] }
	BEGIN {
		srand(seed)
		nw = split("shard index bag cleaner backfill mysql replica lag entity " \
		           "schema table query console cache write read repair uuid " \
		           "friendfeed storage python tornado feed comment like photo " \
		           "link video music review notes ideas weekend launch",
		           words, " ")
		for (u = 1; u <= 50; u++) users[u] = uuid()
		t0 = 1230768000   # 2009-01-01
		for (i = 1; i <= n; i++) {
			k = int(rand() * 5) + 2
			title = pick(words, nw)
			title = toupper(substr(title, 1, 1)) substr(title, 2)
			for (j = 2; j <= k; j++) title = title " " pick(words, nw)
			pub = t0 + int(rand() * 31536000)
			upd = pub + (rand() < 0.3 ? int(rand() * 864000) : 0)
			printf "{\"id\":{\"$uuid\":\"%s\"},\"user_id\":{\"$uuid\":\"%s\"},", uuid(), users[int(rand() * 50) + 1]
			printf "\"title\":\"%s\",\"link\":\"http://example.com/%s/%d\",", title, hex(6), i
			printf "\"published\":%d,\"updated\":%d}\n", pub, upd
		}
	}'
}

if [ -n "$OUT" ]; then
	mkdir -p "$(dirname "$OUT")"
	gen >"$OUT.tmp.$$" && mv -f "$OUT.tmp.$$" "$OUT" || { rm -f "$OUT.tmp.$$"; exit 1; }
else
	gen
fi

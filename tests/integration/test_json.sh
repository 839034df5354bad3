#!/bin/sh
# test_json.sh - JSON for scripts: floats are the shortest text that reads
# back as the same double (lag --json after a repair pass, throttle,
# properties, the daemon's JSON log lines), `reshard status
# --json` gives each move's buckets as [first, last] ranges covering all of
# them, and `index list --json` gives rows per shard keyed by shard name
# (its text form marks the estimate with ~).
. tests/lib.sh
T=$(t_tmp)
CFG=$BAGSTORE_TEST_CONFIG
B=$BAGSTORE

# floats: each number with a fraction or an exponent is the shortest text
# that reads back as its double (Python's repr is that shortest text)
not_shortest() {
	python3 -c '
import json, re, sys
bad = []
def check(tok):
    # the significant digits written, against those of the shortest
    digits = lambda t: len(re.sub(r"[^0-9]", "", re.split(r"[eE]", t)[0]).lstrip("0") or "0")
    if digits(tok) > digits(repr(float(tok))):
        bad.append(tok + " (shortest: " + repr(float(tok)) + ")")
    return float(tok)
text = sys.stdin.read()
try:
    json.loads(text, parse_float=check)
except ValueError:  # JSON Lines
    for line in text.splitlines():
        json.loads(line, parse_float=check)
print("\n".join(bad))
'
}

t_exit 0 "init" -- "$B" -c "$CFG" init
t_exit 0 "an index" -- "$B" -c "$CFG" index create by_user --on user_id:uuid --shard-on user_id
i=0
while [ $i -lt 40 ]; do
	printf '{"user_id": {"$uuid": "f48b0000-0000-4000-8000-0000000000%02d"}, "n": %d, "x": %d.%03d}\n' \
		$((i % 7)) $i $i $((i * 37 % 1000))
	i=$((i + 1))
done >"$T/e.jsonl"
t_exit 0 "put 40" -- "$B" -c "$CFG" put "$T/e.jsonl"

# --- floats
t_exit 0 "a repair pass" -- "$B" -c "$CFG" cleaner --once
sleep 1.1
t_exit 0 "lag --json" -- "$B" -c "$CFG" lag --json
t_match "$T_OUT" '"lag_s": [0-9]+\.[0-9]+' "lag_s is a float"
t_eq "$(printf '%s' "$T_OUT" | not_shortest)" "" "lag --json: every float at its shortest"
t_exit 0 "throttle --json" -- "$B" -c "$CFG" throttle --json
t_eq "$(printf '%s' "$T_OUT" | not_shortest)" "" "throttle --json: every float at its shortest"
t_exit 0 "properties --json" -- "$B" -c "$CFG" properties --json
t_eq "$(printf '%s' "$T_OUT" | not_shortest)" "" "properties --json: every float at its shortest"

# JSON logs: the daemon's lines (its stop line's uptime_s a float)
# (one SIGINT, to the daemon alone: timeout(1) signals its process group
# too, and a second SIGINT makes the daemon exit at once, without its stop line)
"$B" -c "$CFG" cleaner --log-format json 2>"$T/log.jsonl" >/dev/null &
dpid=$!
sleep 3
kill -INT "$dpid"
wait "$dpid"
t_match "$(cat "$T/log.jsonl")" '"uptime_s":[0-9]+\.[0-9]+' "the JSON log has a float"
t_eq "$(not_shortest <"$T/log.jsonl")" "" "JSON logs: every float at its shortest"

# --- index list: rows per shard by name; the text's estimate marked
t_exit 0 "index list" -- "$B" -c "$CFG" index list
t_match "$T_OUT" '^by_user +ready +user_id:uuid +user_id +~[0-9]+$' "index list: ROWS is an estimate, marked ~"
t_exit 0 "index list --json" -- "$B" -c "$CFG" index list --json
t_eq "$(printf '%s' "$T_OUT" | jq -c '.[0].rows_per_shard | keys')" '["s0","s1"]' "rows_per_shard is keyed by shard name"
t_eq "$(printf '%s' "$T_OUT" | jq '.[0].rows_per_shard | add == (.s0 + .s1)')" true "rows_per_shard: a count per name"
t_eq "$(printf '%s' "$T_OUT" | jq '.[0].rows == (.[0].rows_per_shard | add)')" true "rows is their sum"

# --- reshard status: every bucket of a move as ranges
sed 's/\(name: s1,.*user: root\)}/\1, drain: true}/' "$CFG" >"$T/drain.yaml"
t_contains "$(cat "$T/drain.yaml")" "drain: true" "a configuration draining s1"
t_exit 0 "reshard start --yes (drain s1)" -- "$B" -c "$T/drain.yaml" reshard start --yes
t_exit 0 "reshard status --json" -- "$B" -c "$T/drain.yaml" reshard status --json
st=$T_OUT
t_eq "$(printf '%s' "$st" | jq '.moves | length > 0')" true "the drain has moves"
t_eq "$(printf '%s' "$st" | jq '[.moves[] | (.buckets | type)] | unique')" '[
  "array"
]' "buckets are data, not text"
t_eq "$(printf '%s' "$st" | jq '[.moves[] | .buckets[] | (length == 2 and .[0] <= .[1])] | all')" true "each range is [first, last]"
t_eq "$(printf '%s' "$st" | jq '[.moves[] | ([.buckets[] | .[1] - .[0] + 1] | add) == .nbuckets] | all')" true "the ranges cover every bucket of the move"
t_eq "$(printf '%s' "$st" | jq '[.moves[].nbuckets] | add')" "$(t_sql 1 "SELECT COUNT(*) FROM bagstore_buckets WHERE state='owned'")" "as many buckets as s1 owns"
t_eq "$(printf '%s' "$st" | not_shortest)" "" "reshard status --json: every float at its shortest"
t_exit 0 "reshard cancel" -- "$B" -c "$T/drain.yaml" reshard cancel
t_done test_json

#!/bin/sh
# test_census_estimate.sh - the census's numbers an operator must be able to
# trust, on real shards: 20,000 entities, 2,000 sampled (1,000 a shard).
# The distinct values estimated for the store (Haas and Stokes' Duj1, see
# tests/unit/test_census.c for why these factors) are within 1.5x of the
# truth for a near-unique title and within 1.1x for 150 users drawn from a
# Zipf distribution (GEE said 0.44x and 1.15x); a property on a few of the
# sampled bodies is PRESENT "<1%", never "0%", in the command line and on
# the console's properties screen.
. tests/console/lib.sh

c_init
python3 >"$T/docs.jsonl" <<'PY'
import json, random
random.seed(19)
n = 20000
# titles: 7,000 once and 6,500 twice (13,500 distinct), in random order
titles = ["t%d" % i for i in range(7000)] + ["t%d" % i for i in range(7000, 13500) for _ in (0, 1)]
random.shuffle(titles)
w = [1.0 / (k + 1) for k in range(150)]
users = random.choices(range(150), weights=w, k=n)
for i in range(n):
    d = {"title": titles[i], "user": "u%d" % users[i]}
    if random.random() < 0.003:
        d["rare"] = 1
    print(json.dumps(d))
PY
truth() { python3 -c 'import json, sys; print(len({json.loads(l)[sys.argv[1]] for l in open(sys.argv[2])}))' "$1" "$T/docs.jsonl"; }
t_exit 0 "put 20,000" -- "$BAGSTORE" -c "$CFG" put --batch 1000 "$T/docs.jsonl"
t_exit 0 "properties --json (1,000 a shard)" -- "$BAGSTORE" -c "$CFG" properties --json --sample 1000
printf '%s\n' "$T_OUT" >"$T/census.json"
est() { jq -r --arg p "$1" '.properties[] | select(.path == $p) | .distinct_est' "$T/census.json"; }
within() { # EST TRUTH FACTOR
	python3 -c 'import sys; e, t, f = map(float, sys.argv[1:]); print("yes" if t / f <= e <= t * f else "no: %g of %g" % (e, t))' "$@"
}
t_eq "$(jq .sampled "$T/census.json")" 2000 "2,000 sampled"
t_eq "$(within "$(est title)" "$(truth title)" 1.5)" yes "a near-unique title: within 1.5x of its $(truth title) distinct values"
t_eq "$(within "$(est user)" "$(truth user)" 1.1)" yes "150 users (Zipf): within 1.1x"
t_exit 0 "properties (text)" -- "$BAGSTORE" -c "$CFG" properties --sample 1000
t_match "$T_OUT" '^rare +int 100% +<1% ' "a property on a few sampled bodies: PRESENT <1%, not 0%"
t_match "$T_OUT" '^title +string 100% +100% +~[0-9,]+ ' "a property on every body: 100%"
cat >"$T/census.keys" <<KEYS
keys 6
wait-for sampled entities
wait-idle
dump census
keys :q\\n
KEYS
c_headless "the properties screen" "$T/census.keys"
t_match "$(d census)" '^rare +int 100% +<1% ' "the console: PRESENT <1%"
t_done test_census_estimate

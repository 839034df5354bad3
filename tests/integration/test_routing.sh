#!/bin/sh
# test_routing.sh - where rows land, checked against arithmetic of our own
# (python3 over the rows as SQL reads them back), never against the
# engine's routing functions:
#
#   - entities: the 16 id bytes as one big-endian integer, mod N;
#   - index rows by their shard_on value: uuids and 16-byte binaries the same
#     way, ints mod N (negatives by their non-negative residue), strings and
#     other bytes zlib crc32 mod N, floats crc32 of their 8 IEEE bytes
#     big-endian (an int in a float column widened first), bools 0/1 mod N;
#
# with 2 shards (the test shards) and 3 (a third database on the first
# server: databases bs_route_a, _b, _c). With 2 shards only the id's last
# bit decides, so dropping its high bytes shows only with 3. Rows reach the
# index by every path that places them: a writer's put and a bulk put
# (`put --batch`; indexes created before the load), a backfill (created
# after) and a repair (`verify --repair` after the rows are deleted). Queries then find each value's
# entities through each index.
#
# Last, a query whose conditions fix the index's shard_on value reads one
# shard: with s1 stopped, it still answers for data that lives on s0, and
# one that does not fix it fails naming s1.
. tests/lib.sh

B=$BAGSTORE
T=$(t_tmp)
# One command at a time and no writer beside it: the catalog's TTL (how
# long a writer may cache it, which an index's create on an empty store,
# its promotion and its drop wait out) is only waiting here, 28 times
C=$T/c.yaml
sed 's/^catalog_ttl:.*/catalog_ttl: 0.1/' "$BAGSTORE_TEST_CONFIG" >"$C"
T_TIMEOUT=120
P0=$(t_port 0)
P1=$(t_port 1)

sqlp() { # PORT DB SQL
	timeout 30 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$1" -u root \
		--connect-timeout=5 -N -B "$2" -e "$3"
}

cat >"$T/route.py" <<'EOF'
# gen SEED COUNT: entities as JSON Lines on stdout.
# check N ENTS DUMP SPEC...: every row of the dump ("TABLE SHARD HEXID"
#   lines) against where the rules put it; one line per table:
#   "TABLE rows=R misplaced=M missing=K extra=E spread=all|some" (spread:
#   whether the expected rows reach every shard they can: 2 for bools).
#   A SPEC is NAME:PROP=TYPE,PROP=TYPE...:SHARD_ON.
# expect ENTS SPEC PROP VALUE_TEXT: the ids (hex, sorted) of the entities
#   with a row in SPEC's index whose PROP equals VALUE_TEXT.
# samples ENTS SPEC PROP COUNT: values of PROP to query (0.0 and -0.0 first
#   for floats). ids JSONL: the ids of the entities printed (hex, sorted).
import base64, json, math, random, struct, sys, zlib

I64 = (-(1 << 63), (1 << 63) - 1)

def b64(b):
    return {"$binary": {"base64": base64.b64encode(b).decode(), "subType": "00"}}

def uuid_json(b):
    h = b.hex()
    return {"$uuid": "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])}

def gen(seed, count):
    r = random.Random(seed)
    strs = ["", "a", "é", "漢字", "🙂x", "tab\there", "quote\"'`", "back\\slash"]
    specials_i = [0, 1, -1, 2, -2, 3, -3, I64[0], I64[1], I64[0] + 1, 1 << 40, -(1 << 40)]
    specials_f = [0.0, -0.0, 1.5, -1.5, 1e300, -1e300, 5e-324, 2.0 ** 70, 0.1]
    for k in range(count):
        e = {}
        idb = bytes(r.getrandbits(8) for _ in range(16))
        if k % 7 == 0:  # only the high bytes set: the low ones are all zero
            idb = idb[:8] + bytes(8)
        e["id"] = uuid_json(idb)
        if k % 19 != 1:
            u = bytes(r.getrandbits(8) for _ in range(16))
            if k % 5 == 0:
                u = u[:6] + bytes(10)
            e["u"] = uuid_json(u)
        if k % 23 == 2:
            e["i"] = "not an int"  # a misfit: no row
        elif k % 17 != 2:
            e["i"] = specials_i[k % len(specials_i)] if k % 3 == 0 else r.randint(-10 ** 12, 10 ** 12)
        if k % 13 != 3:
            if k % 4 == 0:
                e["s"] = strs[k % len(strs)] + str(r.randint(0, 99))
            else:
                e["s"] = "".join(r.choice("abcdefghijklmnopqrstuvwxyzäöü€") for _ in range(r.randint(0, 20)))
        if k % 11 != 4:
            m = k % 4
            if m == 0:
                e["f"] = specials_f[k % len(specials_f)]
            elif m == 1:
                e["f"] = r.randint(-1000, 1000)  # an int in a float column
            else:
                e["f"] = r.uniform(-1e6, 1e6)
        if k % 9 != 5:
            e["b"] = r.random() < 0.5
        if k % 8 != 6:
            n = 16 if k % 3 == 0 else r.randint(0, 40)
            e["bin"] = b64(bytes(r.getrandbits(8) for _ in range(n)))
        print(json.dumps(e, ensure_ascii=False))

def decode(v):
    if isinstance(v, dict) and "$uuid" in v:
        return bytes.fromhex(v["$uuid"].replace("-", ""))
    if isinstance(v, dict) and "$binary" in v:
        return base64.b64decode(v["$binary"]["base64"])
    return v

def fits(v, typ):
    name, _, arg = typ.partition("(")
    arg = int(arg[:-1]) if arg else None
    if name == "uuid":
        return isinstance(v, bytes) and len(v) == 16
    if name == "int":
        return isinstance(v, int) and not isinstance(v, bool) and I64[0] <= v <= I64[1]
    if name == "string":
        return isinstance(v, str) and "\0" not in v and len(v) <= (arg or 255)
    if name == "float":
        if isinstance(v, bool):
            return False
        if isinstance(v, int):
            return I64[0] <= v <= I64[1]
        return isinstance(v, float) and math.isfinite(v)
    if name == "bool":
        return isinstance(v, bool)
    if name == "binary":
        return isinstance(v, bytes) and len(v) <= arg
    raise SystemExit("unknown type " + typ)

def big_mod(b, n):
    return int.from_bytes(b, "big") % n

def crc_mod(b, n):
    return zlib.crc32(b) % n

def route(v, typ, n):
    name = typ.partition("(")[0]
    if name == "float":
        return crc_mod(struct.pack(">d", float(v)), n)
    if isinstance(v, bool):
        return int(v) % n
    if isinstance(v, int):
        return v % n  # python's % is the non-negative residue
    if isinstance(v, bytes):
        return big_mod(v, n) if len(v) == 16 else crc_mod(v, n)
    if isinstance(v, str):
        return crc_mod(v.encode("utf-8"), n)
    raise SystemExit("cannot route %r" % (v,))

def load(path):
    ents = []
    for line in open(path, encoding="utf-8"):
        e = {k: decode(v) for k, v in json.loads(line).items()}
        ents.append(e)
    return ents

def parse_index(spec):
    # NAME:PROP=TYPE,PROP=TYPE...:SHARD_ON
    name, props, shard_on = spec.split(":")
    return name, [tuple(p.split("=")) for p in props.split(",")], shard_on

def row_of(e, props):
    for p, t in props:
        if p not in e or not fits(e[p], t):
            return False
    return True

def check(n, ents_path, dump_path, specs):
    ents = load(ents_path)
    want = {"entities": {e["id"].hex(): big_mod(e["id"], n) for e in ents}}
    reach = {"entities": n}  # how many shards the values can reach
    for spec in specs:
        name, props, shard_on = parse_index(spec)
        typ = dict(props)[shard_on]
        want[name] = {e["id"].hex(): route(e[shard_on], typ, n) for e in ents if row_of(e, props)}
        reach[name] = min(n, 2) if typ == "bool" else n
    got = {t: {} for t in want}
    extra = {t: 0 for t in want}
    for line in open(dump_path):
        t, shard, hexid = line.split()
        if t not in got:
            continue
        hexid = hexid.lower()
        if hexid in got[t]:
            extra[t] += 1  # a second row of one entity
        got[t][hexid] = int(shard)
    for t in want:
        mis = sum(1 for i, s in got[t].items() if i in want[t] and want[t][i] != s)
        missing = sum(1 for i in want[t] if i not in got[t])
        ext = extra[t] + sum(1 for i in got[t] if i not in want[t])
        spread = "all" if len(set(want[t].values())) == reach[t] else "some"
        print("%s rows=%d misplaced=%d missing=%d extra=%d spread=%s" % (t, len(got[t]), mis, missing, ext, spread))

def value_from_text(text, typ):
    name = typ.partition("(")[0]
    if name == "uuid":
        return bytes.fromhex(text.replace("-", ""))
    if name == "int":
        return int(text)
    if name == "float":
        return float(text)
    if name == "bool":
        return text == "true"
    if name == "binary":
        return bytes.fromhex(text)
    return text

def same(a, b, typ):
    # the engine's equality: floats by their bits (so -0.0 is not 0.0,
    # and each routes by its own bytes); an int in a float column widened
    if typ.startswith("float"):
        return struct.pack(">d", float(a)) == struct.pack(">d", float(b))
    return type(a) == type(b) and a == b

def expect(ents_path, spec, prop, text):
    name, props, shard_on = parse_index(spec)
    typ = dict(props)[prop]
    v = value_from_text(text, typ)
    ids = sorted(e["id"].hex() for e in load(ents_path) if row_of(e, props) and same(e[prop], v, typ))
    print(" ".join(ids))

def samples(ents_path, spec, prop, count):
    # COUNT values of PROP among entities with a row, as query text
    name, props, shard_on = parse_index(spec)
    typ = dict(props)[prop]
    out = ["0.0", "-0.0"] if typ.startswith("float") else []
    for e in load(ents_path):
        if not row_of(e, props):
            continue
        v = e[prop]
        if typ.startswith("float"):
            t = repr(float(v))
        elif isinstance(v, bool):
            t = "true" if v else "false"
        elif isinstance(v, bytes):
            t = v.hex()
        else:
            t = str(v)
        if t and "\t" not in t and t not in out:
            out.append(t)
        if len(out) >= count:
            break
    for t in out:
        print(t)

def ids_of(jsonl_path):
    ids = []
    for line in open(jsonl_path, encoding="utf-8"):
        if line.strip():
            ids.append(decode(json.loads(line)["id"]).hex())
    print(" ".join(sorted(ids)))

cmd = sys.argv[1]
if cmd == "gen":
    gen(int(sys.argv[2]), int(sys.argv[3]))
elif cmd == "check":
    check(int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:])
elif cmd == "expect":
    expect(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
elif cmd == "samples":
    samples(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
elif cmd == "ids":
    ids_of(sys.argv[2])
EOF
R() { python3 "$T/route.py" "$@"; }

# The indexes, as NAME:PROP=TYPE,...:SHARD_ON. Each type routes by its own
# rule; ix_m's shard_on is its last property (not the first).
IXS="ix_u:u=uuid:u ix_i:i=int:i ix_s:s=string(64):s ix_f:f=float:f ix_b:b=bool:b
ix_bin:bin=binary(40):bin ix_m:s=string(64),i=int,f=float:f"
on_of() { echo "$1" | cut -d: -f2 | sed 's/=/:/g'; }
shard_on_of() { echo "$1" | cut -d: -f3; }
name_of() { echo "$1" | cut -d: -f1; }

# addrs CONF: each shard's PORT/DATABASE, in order
addrs() {
	awk '/^[ \t]*-[ \t]*\{?[ \t]*name:/ { p = $0; sub(/.*port:[ \t]*/, "", p); sub(/[^0-9].*/, "", p);
		d = $0; sub(/.*database:[ \t]*/, "", d); sub(/[ ,}].*/, "", d); print p "/" d }' "$1"
}

# dump CONF: every entity's and every index row's shard, "TABLE SHARD HEXID"
dump() {
	_i=0
	for _sh in $(addrs "$1"); do
		_port=${_sh%/*} _db=${_sh#*/}
		sqlp "$_port" "$_db" "SELECT 'entities', $_i, HEX(id) FROM entities" | tr '\t' ' '
		for _x in $IXS; do
			for _n in "$(name_of "$_x")" "$(name_of "$_x")_bf"; do
				sqlp "$_port" "$_db" "SELECT '$_n', $_i, HEX(entity_id) FROM \`$_n\`" | tr '\t' ' '
			done
		done
		_i=$((_i + 1))
	done
}

# check_rows N CONF WHAT SUFFIX: every table's rows where the rules say
check_rows() {
	cr_n=$1 cr_conf=$2 cr_what=$3 cr_sfx=$4
	dump "$cr_conf" >"$T/dump.txt"
	specs=""
	for x in $IXS; do specs="$specs $(name_of "$x")$cr_sfx:$(echo "$x" | cut -d: -f2-)"; done
	# shellcheck disable=SC2086
	R check "$cr_n" "$T/ents$cr_n.jsonl" "$T/dump.txt" $specs >"$T/check.txt"
	while read -r tab rows mis miss ext spread; do
		case $tab in entities) [ -n "$cr_sfx" ] && continue ;; esac
		t_eq "$mis $miss $ext" "misplaced=0 missing=0 extra=0" "$cr_n shards, $cr_what: $tab's rows ($rows) are where the rules put them"
		t_eq "$spread" "spread=all" "$cr_n shards, $cr_what: $tab's rows spread over every shard its values can reach"
	done <"$T/check.txt"
	t_eq "$(wc -l <"$T/check.txt" | tr -d ' ')" "$(($(echo $IXS | wc -w) + 1))" "$cr_n shards, $cr_what: every table checked"
}

# run_config N CONF: load, then check each path that places rows
run_config() {
	n=$1 conf=$2
	R gen $((40 + n)) 420 >"$T/ents$n.jsonl"
	t_exit 0 "$n shards: init" -- "$B" -c "$conf" init
	for x in $IXS; do
		t_exit 0 "$n shards: create $(name_of "$x") on the empty store" -- \
			"$B" -c "$conf" index create "$(name_of "$x")" --on "$(on_of "$x")" --shard-on "$(shard_on_of "$x")"
	done
	# half one put at a time, half in bulk (put --batch): two write paths
	head -n 210 "$T/ents$n.jsonl" >"$T/half1.jsonl"
	tail -n +211 "$T/ents$n.jsonl" >"$T/half2.jsonl"
	t_exit 0 "$n shards: put 210 entities (the writers place the rows)" -- "$B" -c "$conf" put "$T/half1.jsonl"
	t_exit 0 "$n shards: put 210 more with --batch 64" -- "$B" -c "$conf" put "$T/half2.jsonl" --batch 64
	for x in $IXS; do
		t_exit 0 "$n shards: create $(name_of "$x")_bf over the loaded store" -- \
			"$B" -c "$conf" index create "$(name_of "$x")_bf" --on "$(on_of "$x")" --shard-on "$(shard_on_of "$x")"
		t_exit 0 "$n shards: backfill $(name_of "$x")_bf" -- "$B" -c "$conf" cleaner --index "$(name_of "$x")_bf"
		t_contains "$T_OUT" "ready" "$n shards: $(name_of "$x")_bf is ready"
	done
	check_rows "$n" "$conf" "entities and the writers' rows" ""
	check_rows "$n" "$conf" "the backfill's rows" "_bf"
	# the repair path: every row of the writers' indexes gone, then repaired
	i=0
	for sh in $(addrs "$conf"); do
		for x in $IXS; do sqlp "${sh%/*}" "${sh#*/}" "DELETE FROM \`$(name_of "$x")\`"; done
		i=$((i + 1))
	done
	t_exit 1 "$n shards: verify sees every row missing" -- "$B" -c "$conf" verify --index ix_u
	t_exit 0 "$n shards: verify --repair" -- "$B" -c "$conf" verify --repair
	check_rows "$n" "$conf" "the repair's rows" ""
	# reads route as the rows were placed: each value's entities, by query
	for x in $IXS; do
		for p in $(echo "$x" | cut -d: -f2 | tr ',' ' ' | sed 's/=[^ ]*//g'); do
			R samples "$T/ents$n.jsonl" "$x" "$p" 3 >"$T/samples.txt"
			while IFS= read -r v; do
				want=$(R expect "$T/ents$n.jsonl" "$x" "$p" "$v")
				t_exit 0 "$n shards: query $(name_of "$x") $p=$v" -- "$B" -c "$conf" query "$(name_of "$x")" "$p=$v"
				printf '%s\n' "$T_OUT" >"$T/q.jsonl"
				t_eq "$(R ids "$T/q.jsonl")" "$want" "$n shards: query $(name_of "$x") $p=$v finds exactly its entities"
			done <"$T/samples.txt"
		done
	done
}

# ------------------------------------------------------------ 2 shards
run_config 2 "$C"

# ------------------------------------------------------------ 3 shards
# a third database on s0's server beside two others: three shards, two servers
for d in bs_route_a bs_route_b bs_route_c; do
	for p in $P0 $P1; do sqlp "$p" mysql "DROP DATABASE IF EXISTS $d"; done
done
sqlp "$P0" mysql "CREATE DATABASE bs_route_a; CREATE DATABASE bs_route_c"
sqlp "$P1" mysql "CREATE DATABASE bs_route_b"
cat >"$T/three.yaml" <<EOC
shards:
  - {name: r0, host: 127.0.0.1, port: $P0, database: bs_route_a, user: root}
  - {name: r1, host: 127.0.0.1, port: $P1, database: bs_route_b, user: root}
  - {name: r2, host: 127.0.0.1, port: $P0, database: bs_route_c, user: root}
catalog_ttl: 0.1
EOC
run_config 3 "$T/three.yaml"
sqlp "$P0" mysql "DROP DATABASE bs_route_a; DROP DATABASE bs_route_c"
sqlp "$P1" mysql "DROP DATABASE bs_route_b"

# ------------------------------------------------------------ one shard read
# ix_one on (k:int, tag:string), shard_on k. k=4 routes to s0 (4 mod 2);
# the entities with k=4 have even ids (the last byte's low bit: s0 too), so
# everything a k=4 query needs lives on s0. Entities with k=5 live on s1.
t_exit 0 "create ix_one" -- "$B" -c "$C" index create ix_one --on k:int,tag:string --shard-on k
t_exit 0 "build ix_one" -- "$B" -c "$C" cleaner --index ix_one
: >"$T/one.jsonl"
ids4="" ids5=""
for j in 0 1 2 3 4 5; do
	i4=$(printf '0000000%d00004000800000000000%04x' $j $((j * 2)))
	i5=$(printf '0000000%d00004000800000000000%04x' $j $((j * 2 + 1)))
	ids4="$ids4${ids4:+,}X'$i4'" ids5="$ids5${ids5:+,}X'$i5'"
	printf '{"id":{"$uuid":"%s"},"k":4,"tag":"t%d"}\n' "$i4" $((j % 2)) >>"$T/one.jsonl"
	printf '{"id":{"$uuid":"%s"},"k":5,"tag":"t%d"}\n' "$i5" $((j % 2)) >>"$T/one.jsonl"
done
t_exit 0 "put 12 entities" -- "$B" -c "$C" put "$T/one.jsonl"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM entities WHERE id IN ($ids4)") $(t_sql 0 "SELECT COUNT(*) FROM ix_one WHERE k=4")" "6 6" \
	"the k=4 entities and their index rows are all on s0"
t_eq "$(t_sql 1 "SELECT COUNT(*) FROM entities WHERE id IN ($ids5)") $(t_sql 1 "SELECT COUNT(*) FROM ix_one WHERE k=5")" "6 6" \
	"the k=5 entities and their index rows are all on s1"
sh "$SHARDS_SH" stop-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
t_exit 0 "with s1 stopped, query ix_one k=4 answers" -- "$B" -c "$C" query ix_one k=4
t_eq "$(printf '%s\n' "$T_OUT" | grep -c '"k":4')" 6 "all six k=4 entities"
t_exit 0 "with s1 stopped, query ix_one k=4 tag=t1" -- "$B" -c "$C" query ix_one k=4 tag=t1
t_eq "$(printf '%s\n' "$T_OUT" | grep -c '"k":4,"tag":"t1"')" 3 "the three k=4 t1 entities"
t_exit 0 "with s1 stopped, query ix_one tag=t0 k=4 --limit 2" -- "$B" -c "$C" query ix_one tag=t0 k=4 --limit 2
t_eq "$(printf '%s\n' "$T_OUT" | grep -c '"k":4,"tag":"t0"')" 2 "two of them, with a limit"
t_exit 1 "a query that does not fix k reads every shard: fails with s1 stopped" -- "$B" -c "$C" query ix_one tag=t0
t_contains "$T_ERR" "shard s1" "and names s1"
t_exit 1 "a query for k=5 (on s1) fails with s1 stopped" -- "$B" -c "$C" query ix_one k=5
t_contains "$T_ERR" "shard s1" "and names s1"
sh "$SHARDS_SH" start-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
t_exit 0 "s1 back: query ix_one k=5" -- "$B" -c "$C" query ix_one k=5
t_eq "$(printf '%s\n' "$T_OUT" | grep -c '"k":5')" 6 "all six k=5 entities"

# ------------------------------------------------------------ a negative int's bucket
# With 2 shards x and -x always share a shard: x = -x mod 2, and the first
# map gives bucket b to shard b mod 2 (B even). So an int routed by its
# absolute value would place every row of the 2-shard run where the rules
# put them (only the 3-shard run shows it there). The bucket tells at once:
# -x's is B - (x mod B), not x's, and the bucket is what decides the shard
# once a reshard moves it. `explain` reports the bucket a query's fixed
# shard_on value routes to; B is the map's own.
NB=$(t_sql 0 "SELECT buckets FROM bagstore_map ORDER BY version DESC LIMIT 1")
t_match "$NB" '^[0-9]+$' "the map's bucket count"
for x in 1 -1 5 -5 4099 -4099 1099511627776 -1099511627776 9223372036854775807 -9223372036854775807 \
	-9223372036854775808; do
	t_exit 0 "explain ix_one k=$x" -- "$B" -c "$C" explain --json --index ix_one "k=$x"
	got=$(printf '%s' "$T_OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["route_bucket"])')
	t_eq "$got" "$(python3 -c "print($x % $NB)")" "k=$x routes to bucket $x mod $NB (its non-negative residue)"
done

t_done test_routing

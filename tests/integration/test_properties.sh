#!/bin/sh
# test_properties.sh - the property census against real shards: mixed JSON
# documents are written, and `bagstore properties --json` must give every
# path the counts python3 computes independently from the same documents
# (presence, values, types, distinct values, largest value); a small
# sample is spread over each table (old documents' properties are found);
# the console's :properties screen lists the paths and `c` opens the
# create-index form with the property and its suggested type, which
# creates a working index.
. tests/console/lib.sh

c_init
N=300
python3 - "$N" >"$T/docs.jsonl" <<'PY'
import json, random, sys, base64
random.seed(9)
n = int(sys.argv[1])
for i in range(n):
    d = {}
    if i % 7:
        d["nickname"] = "n%d-%s" % (i, "é" * (i % 5))
    r = i % 10
    d["age"] = i if r < 6 else (i + 0.5 if r < 8 else (None if r == 8 else "old"))
    if i % 4:
        d["tags"] = ["t%d" % (i % 3)] * (i % 3) + ([i] if i % 5 == 0 else [])
    if i % 3:
        d["addr"] = {"city": "c%d" % (i % 11), "zip": (i % 13) if i % 2 else "z%d" % (i % 13)}
    if i % 5 == 1:
        d["items"] = [{"sku": "s%d" % (i % 4), "qty": k} for k in range(i % 4)]
    d["flag"] = bool(i % 2)
    d["u"] = {"$uuid": "f48b0000-0000-4000-8000-%012d" % (i % 9)}
    if i % 6 == 0:
        d["blob"] = {"$binary": {"base64": base64.b64encode(bytes([i % 256]) * (i % 40 + 1)).decode(), "subType": "00"}}
    if i % 50 == 0:
        d["big"] = "x" * (300 + i)
    d["half"] = "old" if i < n // 2 else None
    if i >= n // 2:
        del d["half"]
        d["later"] = i
    print(json.dumps(d))
PY
t_exit 0 "put $N mixed documents" -- "$BAGSTORE" -c "$CFG" put "$T/docs.jsonl"
printf '%s\n' "$T_OUT" >"$T/ids"
t_exit 0 "index on age (int)" -- "$BAGSTORE" -c "$CFG" index create index_age --on age:int --shard-on age

t_exit 0 "properties --json, every entity sampled" -- "$BAGSTORE" -c "$CFG" properties --json --sample 1000
printf '%s\n' "$T_OUT" >"$T/census.json"
cmp=$(python3 - "$T/docs.jsonl" "$T/ids" "$T/census.json" <<'PY'
import json, sys, base64
docs = [json.loads(l) for l in open(sys.argv[1])]
ids = [l.strip() for l in open(sys.argv[2]) if l.strip()]
census = json.load(open(sys.argv[3]))
def kind(v):
    if v is None: return "null"
    if isinstance(v, bool): return "bool"
    if isinstance(v, int): return "int"
    if isinstance(v, float): return "float"
    if isinstance(v, str): return "string"
    if isinstance(v, list): return "array"
    if isinstance(v, dict):
        if list(v) == ["$uuid"]: return "uuid"
        if list(v) == ["$binary"]:
            return "uuid" if len(base64.b64decode(v["$binary"]["base64"])) == 16 else "binary"
        return "map"
def scalar(v): return kind(v) not in ("array", "map")
stats = {}
def rec(path, v, doc):
    s = stats.setdefault(path, {"present": set(), "values": 0, "types": {}, "distinct": set(),
                                "max_bytes": 0, "max_chars": 0, "max_items": 0})
    k = kind(v)
    s["present"].add(doc); s["values"] += 1
    s["types"][k] = s["types"].get(k, 0) + 1
    s["distinct"].add((k, json.dumps(v)))
    if k == "string":
        s["max_bytes"] = max(s["max_bytes"], len(v.encode())); s["max_chars"] = max(s["max_chars"], len(v))
    elif k in ("binary", "uuid"):
        n = 16 if list(v) == ["$uuid"] else len(base64.b64decode(v["$binary"]["base64"]))
        s["max_bytes"] = max(s["max_bytes"], n)
    elif k in ("array", "map"):
        s["max_items"] = max(s["max_items"], len(v))
def walk(path, v, doc):
    if kind(v) == "map":
        for key, x in v.items():
            p = key if not path else path + "." + key
            rec(p, x, doc); walk(p, x, doc)
    elif kind(v) == "array":
        for x in v:
            rec(path + "[]", x, doc); walk(path + "[]", x, doc)
for i, d in enumerate(docs):
    rec("id", {"$uuid": ids[i]}, i)
    walk("", d, i)
got = {p["path"]: p for p in census["properties"]}
bad = []
for path, s in sorted(stats.items()):
    g = got.get(path)
    if not g:
        bad.append("missing path " + path); continue
    want = {"present": len(s["present"]), "values": s["values"], "types": s["types"],
            "distinct": len(s["distinct"]), "max_bytes": s["max_bytes"], "max_chars": s["max_chars"],
            "max_items": s["max_items"]}
    for k, w in want.items():
        if k == "distinct" and path == "id":
            w = len(docs)
        if g[k] != w:
            bad.append("%s %s: census %r, python %r" % (path, k, g[k], w))
for path in got:
    if path not in stats:
        bad.append("extra path " + path)
print("paths", len(stats))
print("complete", census["complete"], census["sampled"] == len(docs), census["entities_est"] == len(docs))
print("bad", len(bad))
for b in bad[:20]: print("  " + b)
PY
)
t_contains "$cmp" "bad 0" "every path's counts equal python's over the same documents"
t_contains "$cmp" "complete True True True" "every entity was sampled, and the census says so"
t_match "$cmp" "^paths (1[5-9]|2[0-9])$" "the documents' paths are all there (python counts them)"
t_exit 0 "properties --json, the age path" -- python3 -c "
import json; c = json.load(open('$T/census.json'))
p = {x['path']: x for x in c['properties']}
print('indexes', p['age']['indexes'])
print('suggest-age', p['age']['suggest'], p['age']['fits'])
print('suggest-nick', p['nickname']['suggest'])
print('suggest-tags', p['tags']['suggest'], p['tags']['note'])
print('suggest-nested', p['addr.city']['suggest'], p['addr.city']['note'])
print('suggest-big', p['big']['suggest'])
print('suggest-blob', p['blob']['suggest'])
"
t_contains "$T_OUT" "indexes index_age" "a path's covering index is named"
t_contains "$T_OUT" "suggest-age float 240" "ints and floats suggest float, the values that fit counted"
t_contains "$T_OUT" "suggest-nick string(16)" "strings suggest string(N) sized from the longest seen"
t_contains "$T_OUT" "suggest-tags None array values" "arrays suggest no type, and say why"
t_contains "$T_OUT" "suggest-nested None nested" "nested paths suggest no type, and say why"
t_contains "$T_OUT" "suggest-big string(1024)" "long strings suggest a longer string(N)"
t_contains "$T_OUT" "suggest-blob binary(64)" "binary values suggest binary(N)"

# a small sample is spread over each table, not taken from the newest
t_exit 0 "properties, 10 per shard" -- "$BAGSTORE" -c "$CFG" properties --json --sample 10
printf '%s\n' "$T_OUT" >"$T/sample.json"
T_IN=$T/sample.json t_exit 0 "the sample's paths" -- python3 -c "
import json, sys; c = json.loads(sys.stdin.read()); p = {x['path']: x for x in c['properties']}
print('sampled', c['sampled'], 'complete', c['complete'])
print('half', 'half' in p, 'later', 'later' in p)
print('est', c['entities_est'] > c['sampled'])
"
t_contains "$T_OUT" "sampled 20 complete False" "10 per shard: 20 sampled, not the whole store"
t_contains "$T_OUT" "half True later True" "the sample holds old and new documents' properties"
t_exit 0 "properties --shard s1" -- "$BAGSTORE" -c "$CFG" properties --shard s1 --sample 5
t_contains "$T_OUT" "on 1 shard" "--shard samples one shard"
t_exit 1 "properties --shard nosuch" -- "$BAGSTORE" -c "$CFG" properties --shard nosuch
t_contains "$T_ERR" "no shard named nosuch" "an unknown shard is named"
t_exit 2 "properties --sample 0" -- "$BAGSTORE" -c "$CFG" properties --sample 0
t_exit 2 "properties --sample 4294967297 (1 once narrowed to an int)" -- "$BAGSTORE" -c "$CFG" properties --sample 4294967297
t_exit 2 "audit --limit 4294967297" -- "$BAGSTORE" -c "$CFG" audit --limit 4294967297
t_contains "$T_ERR" "--limit takes a number of rows, 1 to 100000" "refused, saying why"
t_exit 2 "the console with --timeout abc" -- "$BAGSTORE" -c "$CFG" --timeout abc --headless /dev/null
t_contains "$T_ERR" "--timeout takes seconds" "refused, saying why"
t_exit 0 "properties, the table" -- "$BAGSTORE" -c "$CFG" properties
t_contains "$T_OUT" "PATH" "a table"
t_match "$T_OUT" "^nickname +string 100%" "the table: a path with its types and shares"

# the console: the census screen, and c creating an index from a row
cat >"$T/props.keys" <<KEYS
keys 6
wait-for nickname
wait-idle
dump census
keys /nickname\n
dump selected
keys c
dump form_name
key Enter
dump form_on
key Enter
dump form_shard_on
key Enter
dump ddl
keys y
wait-for created index
wait-idle
dump created
keys :q\n
KEYS
c_headless "census screen and c" "$T/props.keys"
t_contains "$(d census)" "Properties of $N sampled entities" "the screen names the sample"
t_match "$(d census)" "^age +int 60% float 20% " "types with their shares, most first"
t_match "$(d census)" "^addr\.city " "nested paths"
t_match "$(d census)" "^tags\[\] " "array elements"
t_contains "$(d selected)" "nickname: 257 of $N sampled entities" "the selected path's detail"
t_contains "$(d form_name)" "create index: name (index_...):" "c opens the create form"
t_contains "$(d form_name)" "index_nickname" "prefilled with a name from the property"
t_contains "$(d form_on)" "nickname:string(16)" "prefilled with the property and the suggested type"
t_contains "$(d ddl)" "VARCHAR(16)" "the DDL has the suggested size"
t_exit 0 "index list" -- "$BAGSTORE" -c "$CFG" index list
t_contains "$T_OUT" "index_nickname" "the index was created"
t_done test_properties

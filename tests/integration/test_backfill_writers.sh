#!/bin/sh
# test_backfill_writers.sh - the README's headline: the cleaner builds a new
# index while writers keep running, and the index it leaves is the one the
# bodies imply.
#
# 8,000 entities are loaded; index ix_bw (v:int, g:string, shard_on g: a
# changed g moves the row to another shard) is created, building, and
# backfilled slowly (BAGSTORE_FAULT=slow_chunk, s0's job held until the
# writers are under way) while four writers put and
# delete through the real CLI. Each writer owns the ids k with k mod 4 = w
# (among 9,000: 1,000 of them new), so the last acknowledged write of each
# id is known; each logs every write the CLI acknowledged (a put's printed
# id, a delete's exit 0). When the backfill has ended (ready) the writers
# stop; the index rows read back with SQL from both shards must then be
# exactly those computed here (python3, own routing) from the initial load
# and the writers' logs, with no cleaner pass in between; verify agrees.
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
T=$(t_tmp)
T_TIMEOUT=200
NW=4

cat >"$T/bw.py" <<'EOF'
# load N: the initial entities as JSON Lines.
# writer W NW LOG STOP BAGSTORE CONF: writes until STOP exists (and at least
#   40 acknowledged writes), logging "put HEX V G", "del HEX" or "fail ...".
# expect N NW LOGDIR DUMP: compares the rows in DUMP ("SHARD HEXID V HEXG")
#   with the rows the last acknowledged writes imply; prints a summary.
import json, os, random, subprocess, sys, zlib

def hexid(k):
    return "%08x00004000800000000000%04x" % (k, k % 65536)

def dashed(h):
    return "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])

def body(k, v, g):
    return json.dumps({"id": {"$uuid": dashed(hexid(k))}, "v": v, "g": g})

def initial(k):
    return (k % 100, "g%d" % (k % 7))

def load(n):
    for k in range(n):
        v, g = initial(k)
        print(body(k, v, g))

def writer(w, nw, log, stop, bs, conf, n, total):
    r = random.Random(1000 + w)
    mine = [k for k in range(total) if k % nw == w]
    live = {k: initial(k) for k in mine if k < n}
    out = open(log, "a")
    acked = 0
    tmp = "%s.batch" % log
    while acked < 40 or not os.path.exists(stop):
        batch = r.sample(mine, 4)
        puts = []
        for k in batch:
            if k in live and r.random() < 0.3:
                p = subprocess.run([bs, "-c", conf, "delete", hexid(k)], capture_output=True, text=True)
                if p.returncode == 0:
                    del live[k]
                    out.write("del %s\n" % hexid(k))
                    acked += 1
                else:
                    out.write("fail delete %s: %s\n" % (hexid(k), p.stderr.strip()))
            else:
                puts.append((k, r.randint(-20, 20), "g%d" % r.randint(0, 9)))
        if puts:
            with open(tmp, "w") as f:
                for k, v, g in puts:
                    f.write(body(k, v, g) + "\n")
            p = subprocess.run([bs, "-c", conf, "put", tmp], capture_output=True, text=True)
            printed = p.stdout.split()
            for i, (k, v, g) in enumerate(puts):
                if i < len(printed) and printed[i] == hexid(k):
                    live[k] = (v, g)
                    out.write("put %s %d %s\n" % (hexid(k), v, g))
                    acked += 1
                else:
                    out.write("fail put %s: exit %d: %s\n" % (hexid(k), p.returncode, p.stderr.strip()))
        out.flush()
    out.close()

def expect(n, nw, logdir, dump):
    state = {hexid(k): initial(k) for k in range(n)}
    fails = 0
    for w in range(nw):
        for line in open(os.path.join(logdir, "w%d.log" % w)):
            f = line.split()
            if f[0] == "put":
                state[f[1]] = (int(f[2]), f[3])
            elif f[0] == "del":
                state.pop(f[1], None)
            else:
                fails += 1
    want = {}
    for h, (v, g) in state.items():
        want[h] = (zlib.crc32(g.encode()) % 2, v, g)
    got, dup = {}, 0
    for line in open(dump):
        s, h, v, hg = line.split()
        h = h.lower()
        if h in got:
            dup += 1
        got[h] = (int(s), int(v), bytes.fromhex(hg).decode())
    missing = sum(1 for h in want if h not in got)
    extra = sum(1 for h in got if h not in want)
    wrong = sum(1 for h in want if h in got and got[h] != want[h])
    print("live=%d rows=%d missing=%d extra=%d wrong=%d duplicate=%d failed_writes=%d" %
          (len(want), len(got), missing, extra, wrong, dup, fails))

cmd = sys.argv[1]
if cmd == "load":
    load(int(sys.argv[2]))
elif cmd == "writer":
    writer(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7],
           int(sys.argv[8]), int(sys.argv[9]))
elif cmd == "expect":
    expect(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5])
EOF

N=8000
TOTAL=9000
t_exit 0 "init" -- "$B" -c "$C" init
python3 "$T/bw.py" load $N >"$T/load.jsonl"
t_exit 0 "load $N entities" -- "$B" -c "$C" put "$T/load.jsonl"
t_exit 0 "create ix_bw over them" -- "$B" -c "$C" index create ix_bw --on v:int,g:string --shard-on g
t_eq "$(t_sql 0 "SELECT state FROM bagstore_indexes WHERE name='ix_bw'")" building "ix_bw is building"

# s0's job is held (throttled: max_load 1 and a statement sleeping there)
# until the writers have 40 writes acknowledged, however slow the build;
# then it runs on while they go on writing
{ cat "$C"; echo "cleaner: {max_load: 1, critical_load: 1000}"; } >"$T/held.yaml"
trap t_sleeper_kill EXIT
t_sleeper 0 || t_fail "the sleeping statement runs on s0"
BAGSTORE_FAULT=slow_chunk "$B" -c "$T/held.yaml" cleaner --index ix_bw >"$T/bf.out" 2>"$T/bf.err" &
bf=$!
pids=""
w=0
while [ $w -lt $NW ]; do
	python3 "$T/bw.py" writer $w $NW "$T/w$w.log" "$T/stop" "$B" "$C" $N $TOTAL &
	pids="$pids $!"
	w=$((w + 1))
done
acked() { cat "$T"/w*.log 2>/dev/null | grep -c '^put\|^del'; }
# the writers are under way while the backfill still runs: observed, not assumed
end=$(($(date +%s) + 60))
while [ "$(acked)" -lt 40 ] && [ "$(date +%s)" -lt "$end" ]; do sleep 0.1; done
during=$(acked)
if kill -0 $bf 2>/dev/null; then
	t_ok "the writers acknowledged $during writes while the backfill ran"
else
	t_fail "the writers wrote while the backfill ran" "the backfill ended before 40 writes ($during)"
fi
t_sleeper_kill
wait $bf
t_eq "$?" 0 "the backfill ended"
t_contains "$(cat "$T/bf.out")" "index ix_bw is ready" "ix_bw is ready"
touch "$T/stop"
failed=0
for p in $pids; do wait "$p" || failed=$((failed + 1)); done
t_eq "$failed" 0 "every writer exited 0"
t_eq "$(grep -h '^fail' "$T"/w*.log | head -n 3)" "" "no write failed"
total=$(acked)
t_eq "$([ "$total" -gt "$during" ] && echo more)" more "writes went on to the end of the backfill ($during, then $total)"
t_eq "$(grep -h '^del' "$T"/w*.log | wc -l | awk '{ print ($1 > 20) ? "yes" : "no" }')" yes "deletes among them"

# the rows as the shards hold them, against what the writes imply
: >"$T/dump.txt"
for s in 0 1; do
	t_sql $s "SELECT $s, HEX(entity_id), v, HEX(g) FROM ix_bw" >>"$T/dump.txt"
done
python3 "$T/bw.py" expect $N $NW "$T" "$T/dump.txt" >"$T/expect.txt"
t_match "$(cat "$T/expect.txt")" "rows=[1-9][0-9]* missing=0 extra=0 wrong=0 duplicate=0 failed_writes=0$" \
	"ix_bw holds exactly the rows the last acknowledged writes imply: $(cat "$T/expect.txt")"
live=$(sed 's/^live=\([0-9]*\).*/\1/' "$T/expect.txt")
t_eq "$(($(t_sql 0 "SELECT COUNT(*) FROM entities") + $(t_sql 1 "SELECT COUNT(*) FROM entities")))" "$live" \
	"the shards hold as many entities as the writes leave live"
t_exit 0 "verify ix_bw agrees: no drift" -- "$B" -c "$C" verify --index ix_bw
t_contains "$T_OUT" "$live entities checked, 0 missing, 0 stale, 0 orphaned" "verify: $live checked, no drift"

t_done test_backfill_writers

#!/bin/sh
# tests/console/capture.sh - the text captures in README.md (The console): loads a
# small demo data set into the (empty, initialised here) shards of CONFIG and
# dumps every screen headless at 100x24, into OUTDIR.
#
#   sh tests/console/capture.sh CONFIG OUTDIR
set -e
CFG=$1
OUT=$2
B=${BAGSTORE:-build/bagstore}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
"$B" -c "$CFG" init >/dev/null
"$B" -c "$CFG" index create index_user_id --on user_id:uuid --shard-on user_id >/dev/null
i=0
: >"$OUT/e.jsonl"
while [ $i -lt 500 ]; do
	printf '{"user_id": {"$uuid": "f48b0000-0000-4000-8000-00000000000%d"}, "title": "Trip report %d: Zürich → Tōkyō", "likes": %d, "tags": ["travel", "day %d"]}\n' \
		$((i % 7)) $i $((i * 7 % 50)) $((i % 30)) >>"$OUT/e.jsonl"
	i=$((i + 1))
done
"$B" -c "$CFG" put "$OUT/e.jsonl" >"$OUT/ids"
"$B" -c "$CFG" index create index_likes --on likes:int --shard-on likes >/dev/null
id=$(sed -n 100p "$OUT/ids")
cat >"$OUT/capture.keys" <<KEYS
wait-idle
dump shards
keys 2
wait-idle
key j
key v
wait-for verify index_user_id
wait-idle
dump indexes
keys c
keys index_title\n
keys title:string(80)\n
keys \n
dump index_create
key q
keys d
dump index_drop
key Esc
key k
keys B
keys 4
wait-for throttled 20
dump backfills
keys 3
wait-idle
dump cleaner
keys 4
keys x
keys index_likes\n
wait-for cancelled 20
keys 5
wait-idle
dump entities
keys /user_id=f48b0000-0000-4000-8000-000000000003\n
wait-idle
dump entities_query
key Esc
keys :entity $id\n
wait-idle
dump entity
keys x
dump entity_raw
keys x
keys e
dump entity_edit
key q
key q
key ?
dump help
keys :q\n
KEYS
# max_load 1 and a sleeping query on s0: the backfill shows its throttle
{ cat "$CFG"; echo "cleaner: {max_load: 1, critical_load: 1000}"; } >"$OUT/load.yaml"
port=$(sed -n 's/.*name: s0.*port: \([0-9]*\).*/\1/p' "$CFG")
timeout 60 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$port" -u root -e "SELECT SLEEP(30)" >/dev/null 2>&1 &
sleeper=$!
sleep 0.5
EDITOR="sh $here/edit_title.sh" LINES=24 COLUMNS=100 TZ=UTC "$B" -c "$OUT/load.yaml" --headless "$OUT/capture.keys" --dump-dir "$OUT"
kill $sleeper 2>/dev/null || true
printf 'wait-idle\nkeys 2\nwait-idle\ndump readonly\nkeys :q\\n\n' >"$OUT/ro.keys"
LINES=12 COLUMNS=100 TZ=UTC "$B" -c "$CFG" --read-only --headless "$OUT/ro.keys" --dump-dir "$OUT"

#!/bin/sh
# tests/console/capture.sh - the text captures in doc/operations.md (The console): loads a
# small demo data set into the (empty, initialised here) shards of CONFIG and
# dumps every screen headless at 100x24 (the load panel at 100x16 while
# entities are written, two at 60x15), into OUTDIR.
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
keys y
wait-for saved entity
wait-idle
key q
key ?
dump help
key q
keys 6
wait-for sampled
wait-idle
dump properties
key Esc
keys 7
wait-idle
dump audit
key Enter
dump audit_entry
key q
keys u
dump audit_undo
key n
keys 1
wait-idle
key Enter
wait-idle
key Enter
wait-idle
dump breadcrumb
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
# the load at a glance: a few refreshes while entities are written
printf 'wait-idle\nsleep 5\ndump shards_load\nkeys :q\\n\n' >"$OUT/load.keys"
LINES=16 COLUMNS=100 TZ=UTC "$B" -c "$CFG" --refresh 1 --headless "$OUT/load.keys" --dump-dir "$OUT" &
loadpid=$!
i=0
while kill -0 $loadpid 2>/dev/null && [ $i -lt 60 ]; do
	printf '{"user_id": {"$uuid": "f48b0000-0000-4000-8000-000000000001"}, "title": "more %d", "likes": %d}\n' $i $i |
		"$B" -c "$CFG" put - >/dev/null
	i=$((i + 1))
	sleep 0.05
done
wait $loadpid
# narrow: 60x15, a prompt that wraps and keeps what is typed in sight
printf 'wait-idle\ndump narrow_shards\nkeys 2\nwait-idle\nkeys d\nkeys index_us\ndump narrow_drop\nkey Esc\nkeys :q\\n\n' >"$OUT/narrow.keys"
LINES=15 COLUMNS=60 TZ=UTC "$B" -c "$CFG" --headless "$OUT/narrow.keys" --dump-dir "$OUT"

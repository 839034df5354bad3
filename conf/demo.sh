#!/bin/sh
# demo.sh - what `make demo` runs: local shards, sample entities, the
# console.
#
#   BUILD=build sh conf/demo.sh
#
# Starts every shard conf/demo.yaml names (data under var/shards; the file
# is written for s0 and s1 on 127.0.0.1:3307-3308 when missing, and a shard
# added to it is started too), creates the tables and its indexes (bagstore
# init), loads about 5,000 sample entities from var/sample.jsonl when the
# store is empty (every shard's entities counted), then opens the console
# when standard input is a terminal. The shards keep running afterwards:
# `make shards-stop` stops them.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
BIN=$BUILD/bagstore
# DEMO_CONFIG and DEMO_SHARDS_DIR (tests): another configuration, and where
# its shards keep their data
CONF=${DEMO_CONFIG:-conf/demo.yaml}
SDIR=${DEMO_SHARDS_DIR:-var/shards}
SAMPLE=var/sample.jsonl
SAMPLE_N=${DEMO_ENTITIES:-5000}

die() { echo "demo: $*" >&2; exit 1; }

[ -x "$BIN" ] || die "$BIN is missing; run make first"
mkdir -p var || die "cannot create var/"

if [ ! -f "$CONF" ]; then
	echo "demo: starting shards s0, s1 ($SDIR)"
	sh conf/shards.sh start --count 2 --port 3307 --dir "$SDIR" ||
		die "the shards did not start (is another server on 3307/3308?)"
	echo "demo: writing $CONF"
	sh conf/shards.sh config --count 2 --port 3307 --dir "$SDIR" --out "$CONF" || exit 1
	cat >>"$CONF" <<'YAML'
indexes:
  - {name: index_user_id, on: "user_id:uuid", shard_on: user_id}
  - {name: index_title, on: "title:string(200)", shard_on: title}
YAML
fi
# every shard the configuration names, a shard added to it included
SHARDS=$(sh conf/shards.sh list --config "$CONF") || die "cannot read the shards of $CONF"
PORTS=$(printf '%s\n' "$SHARDS" | awk '{print $2}')
echo "demo: starting shards $(printf '%s\n' "$SHARDS" | awk '{printf "%s%s", (NR > 1 ? ", " : ""), $1}') ($SDIR)"
sh conf/shards.sh start --config "$CONF" --dir "$SDIR" ||
	die "the shards did not start (is another server on port $(echo $PORTS | tr ' ' '/')?)"

echo "demo: $BIN -c $CONF init"
timeout 120 "$BIN" -c "$CONF" init || die "bagstore init failed"

# Entities on every shard, straight from the tables: the store is empty when
# all say 0. (A move's copies stand on two shards until its cleanup: this
# counts rows, which is what "empty" needs.)
count() {
	timeout 20 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$1" -u root \
		--connect-timeout=5 -N -B bagstore -e "SELECT COUNT(*) FROM entities" 2>/dev/null
}
total=0
for p in $PORTS; do
	n=$(count "$p")
	total=$((total + ${n:-0}))
done
if [ "$total" = 0 ]; then
	echo "demo: generating $SAMPLE_N sample entities in $SAMPLE"
	sh conf/gen-sample.sh "$SAMPLE_N" "$SAMPLE" || die "could not write $SAMPLE"
	echo "demo: $BIN -c $CONF put $SAMPLE"
	# put prints each new id: keep them in var/put.log, not on the screen.
	timeout 600 "$BIN" -c "$CONF" put "$SAMPLE" >var/put.log ||
		die "loading the sample entities failed"
	echo "demo: loaded $(wc -l <var/put.log | tr -d ' ') entities"
	# InnoDB's row estimates (the console's entity counts) were taken while
	# the tables were empty; its background refresh may not have run yet.
	for p in $PORTS; do
		timeout 60 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$p" -u root -N -B bagstore \
			-e "ANALYZE TABLE entities, index_user_id, index_title" >/dev/null 2>&1 || true
	done
else
	echo "demo: the store already holds $total entity rows on its $(echo $PORTS | wc -w | tr -d ' ') shards; not loading samples"
fi

if [ -t 0 ] && [ -t 1 ]; then
	echo "demo: opening the console ($BIN -c $CONF); the shards keep running: make shards-stop"
	exec "$BIN" -c "$CONF"
fi
echo "demo: ready. Open the console with:  $BIN -c $CONF"
echo "demo: stop the shards with:          make shards-stop"

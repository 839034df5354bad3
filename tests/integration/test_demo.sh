#!/bin/sh
# test_demo.sh - `make demo`'s script after a shard was added to its
# configuration the README's way (issue 19, item 6): conf/demo.sh starts
# every shard the file names (here three, on ports of the test's range,
# under $BUILD/demo-shards, purged at the end when it passed), initialises them, loads the
# samples once, and a second run counts the entities of all three shards.
# conf/shards.sh list --config reads flow and block style lists.
. tests/lib.sh
T=$(t_tmp)

P0=$(t_port 0)
BASE=${BAGSTORE_DEMO_PORT:-$((P0 + 10))}
SD=$(cd "${BUILD:-build}" && pwd)/demo-shards
BIN=$(cd "$(dirname "$BAGSTORE")" && pwd)/$(basename "$BAGSTORE")
T_TIMEOUT=300

stop_demo() { sh "$SHARDS_SH" stop --dir "$SD" >/dev/null 2>&1; }
# at the end: purged when every check passed, else kept (stopped) to be read
end_demo() {
	if [ "$T_FAILED" = 0 ]; then sh "$SHARDS_SH" purge --dir "$SD" >/dev/null 2>&1; else stop_demo; fi
}
trap end_demo EXIT
trap 'stop_demo; exit 130' INT TERM
# a run before this one (stopped short, or on another port) leaves its
# shards' data: the samples must load on fresh ones
stop_demo
rm -rf "$SD"

cat >"$T/block.yaml" <<YAML
shards:
  # a comment: name: not-a-shard
  - name: a
    host: localhost
    port: 4000
  - {name: "b", host: 127.0.0.1, port: 4001, database: bagstore}
timeouts: {connect: 2}
YAML
t_exit 0 "shards.sh list --config" -- sh "$SHARDS_SH" list --config "$T/block.yaml"
t_eq "$T_OUT" "a 4000
b 4001" "both styles read, comments skipped"

# the demo's file with a third shard added, as the README adds s2 and s3
cat >"$T/demo.yaml" <<YAML
shards:
  - {name: s0, host: 127.0.0.1, port: $BASE, database: bagstore, user: root}
  - {name: s1, host: 127.0.0.1, port: $((BASE + 1)), database: bagstore, user: root}
  - {name: s2, host: 127.0.0.1, port: $((BASE + 2)), database: bagstore, user: root}
timeouts: {connect: 2, read: 10, write: 10}
catalog_ttl: 2
indexes:
  - {name: index_user_id, on: "user_id:uuid", shard_on: user_id}
YAML
demo() {
	env BUILD="$(dirname "$BIN")" DEMO_CONFIG="$T/demo.yaml" DEMO_SHARDS_DIR="$SD" DEMO_ENTITIES=300 \
		sh conf/demo.sh </dev/null
}
t_exit 0 "the demo on three shards" -- demo
t_contains "$T_OUT" "starting shards s0, s1, s2" "it starts the three shards the file names"
t_contains "$T_OUT" "loaded 300 entities" "the samples are loaded"
for i in 0 1 2; do
	n=$(timeout 20 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P $((BASE + i)) -u root -N -B bagstore \
		-e "SELECT COUNT(*) FROM bagstore_meta" 2>/dev/null)
	t_match "$n" "^[1-9]" "s$i is up and initialised"
done
t_exit 0 "the demo again" -- demo
t_contains "$T_OUT" "already holds 300 entity rows on its 3 shards" "a second run counts every shard's entities"
t_done test_demo

#!/bin/sh
# test_fingerprint.sh - a configuration whose shard list the shards
# disagree with (two addresses swapped under their names, a shard renamed,
# a third shard added and not initialised, a shard missing) has one exit
# status, 2 (BS_ECONFIG), for every command that touches a shard, reads and
# status included, and changes nothing on any shard; `shards` still prints
# its table (MISMATCH, and why) before it exits 2.
#
# Since the bucket map (issue 11) the shards are known by their names and
# the store's id, not by their order: a list reordered with each name beside
# its own address works, and `init` through a longer list adds the new
# shard as a member owning nothing (the design's way to add shards), which
# changes no entity; every other command through it is still refused.
#
# And the documents agree: the man page's exit-status section (the one list
# of exit statuses) and doc/DESIGN.md's error table put the fingerprint
# mismatch under 2, and neither under 1; no other document keeps a list of
# exit statuses to drift.
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
T=$(t_tmp)
ROOT=${TEST_ROOT:-.}

t_exit 0 "init" -- "$B" -c "$C" init
t_exit 0 "create ix_a (ready)" -- "$B" -c "$C" index create ix_a --on k:int --shard-on k
printf '{"id":{"$uuid":"00000000-0000-4000-8000-000000000001"},"k":1}\n{"id":{"$uuid":"00000000-0000-4000-8000-000000000002"},"k":2}\n' >"$T/e.jsonl"
t_exit 0 "put two entities" -- "$B" -c "$C" put "$T/e.jsonl"
t_exit 0 "create ix_b (building)" -- "$B" -c "$C" index create ix_b --on k:int --shard-on k
t_exit 0 "a cleaner pass (watermarks, lag history)" -- "$B" -c "$C" cleaner --once

# the same two lines in the other order: each name still beside its address
awk '/^shards:/{print; getline a; getline b; print b; print a; next} {print}' "$C" >"$T/reordered.yaml"
# the names in their order, the addresses (all but the name) swapped
awk '/^shards:/{print; getline a; getline b; na = a; sub(/name: s0,.*/, "", na); ra = a; sub(/.*name: s0,/, "", ra)
	rb = b; sub(/.*name: s1,/, "", rb); print na "name: s0," rb; print na "name: s1," ra; next} {print}' "$C" >"$T/swapped.yaml"
grep -v -- '- {name: s1,' "$C" >"$T/missing.yaml"
sed 's/name: s1,/name: s9,/' "$C" >"$T/renamed.yaml"
sed -n '/- {name: s0/p' "$C" | sed 's/name: s0/name: s2/; s/database: bagstore/database: bagstore_fp3/' >"$T/s2.line"
awk -v extra="$(cat "$T/s2.line")" '{print} /- \{name: s1/{print extra}' "$C" >"$T/three.yaml"
# s1 replaced by a new s2: longer than the map by s2, but without s1, which
# owns buckets: another list, which init refuses too, not init's to do
awk -v extra="$(cat "$T/s2.line")" '/- \{name: s1/{print extra; next} {print}' "$C" >"$T/replaced.yaml"
t_sql 0 "DROP DATABASE IF EXISTS bagstore_fp3; CREATE DATABASE bagstore_fp3"

# state: what no refused command may change, over both shards
state() {
	for s in 0 1; do
		t_sql $s "SELECT (SELECT COUNT(*) FROM entities), (SELECT GROUP_CONCAT(HEX(id), HEX(body), updated ORDER BY id) FROM entities),
			(SELECT GROUP_CONCAT(name, state ORDER BY name) FROM bagstore_indexes),
			(SELECT GROUP_CONCAT(index_name, state, rows_scanned ORDER BY index_name) FROM bagstore_jobs),
			(SELECT COUNT(*) FROM ix_a), (SELECT COUNT(*) FROM ix_b), (SELECT COUNT(*) FROM bagstore_audit),
			(SELECT GROUP_CONCAT(name, watermark_us ORDER BY name) FROM bagstore_watermarks),
			(SELECT COUNT(*) FROM bagstore_verify), (SELECT COUNT(*) FROM bagstore_meta)"
	done
}
before=$(state)

t_eq "$(grep -c 'name: s0' "$T/swapped.yaml") $(grep -c 'name: s1' "$T/swapped.yaml")" "1 1" "swapped.yaml keeps both names"
t_eq "$(grep 'name: s0' "$T/swapped.yaml" | sed 's/.*name: s0,//')" "$(grep 'name: s1' "$C" | sed 's/.*name: s1,//')" \
	"swapped.yaml gives s0 the address of s1"

for cf in swapped renamed three missing replaced; do
	while IFS='|' read -r what args; do
		# init through a longer list adds its new shard (below)
		[ "$cf $what" = "three init" ] && continue
		# shellcheck disable=SC2086
		t_exit 2 "$cf: $what exits 2" -- "$B" -c "$T/$cf.yaml" $args
		t_match "$T_ERR" "another shard list|is not initialised" "$cf: $what says the shard list disagrees"
		t_match "$T_ERR" "shard s[0-9] " "$cf: $what names the shard"
	done <<EOL
init|init
put|put $T/e.jsonl
put --batch|put $T/e.jsonl --batch 2
get|get 00000000000040008000000000000001
delete|delete 00000000000040008000000000000002
query|query ix_a k=1
index list|index list
index create|index create ix_c --on k:int --shard-on k
index drop|index drop ix_a --yes
verify|verify
verify --repair|verify --repair
cleaner --once|cleaner --once
cleaner --index|cleaner --index ix_b
backfill list|backfill list
backfill pause|backfill pause ix_b
backfill resume|backfill resume ix_b
backfill cancel|backfill cancel ix_b
lag|lag
export|export
export --shard|export --shard s0
export --order added|export --order added
export --index|export --index ix_a k=1
properties|properties
audit|audit
workers|workers
EOL
	t_exit 2 "$cf: shards exits 2" -- "$B" -c "$T/$cf.yaml" shards
	t_match "$T_OUT" "MISMATCH" "$cf: shards shows the mismatch"
	t_contains "$T_OUT" "another shard list" "$cf: and why"
	# the summary: a third shard not added yet is init's to do, and the
	# two that do not name it in their map are not another list's
	if [ "$cf" = three ]; then
		t_contains "$T_ERR" "shard s2 is not in the store's bucket map yet: run \`bagstore init\` to add it" \
			"three: shards names the shard init adds, and the next step"
		case $T_ERR in
		*"another shard list"*) t_fail "three: the other shards are not called another list's" ;;
		*) t_ok "three: the other shards are not called another list's" ;;
		esac
	else
		t_contains "$T_ERR" "belong to another shard list" "$cf: shards says they belong to another list"
	fi
	t_exit 2 "$cf: shards --json exits 2" -- "$B" -c "$T/$cf.yaml" shards --json
	t_contains "$T_OUT" '"fingerprint_ok": false' "$cf: shards --json says fingerprint_ok false"
done
t_eq "$(state)" "$before" "no refused command changed anything on either shard"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA='bagstore_fp3'")" 0 \
	"nothing was made in the third shard's database"
t_exit 0 "the right list still works: shards" -- "$B" -c "$C" shards
t_exit 0 "the right list still works: get" -- "$B" -c "$C" get 00000000000040008000000000000001

# ------------------------------------------------------------ what the map allows
# a list reordered with each name beside its own address is the same store
t_exit 0 "reordered: shards" -- "$B" -c "$T/reordered.yaml" shards
t_contains "$T_OUT" "ok" "reordered: shards agree"
t_exit 0 "reordered: get" -- "$B" -c "$T/reordered.yaml" get 00000000000040008000000000000001
t_contains "$T_OUT" '"k":1' "reordered: get finds the entity"
t_exit 0 "reordered: query" -- "$B" -c "$T/reordered.yaml" query ix_a k=2
t_contains "$T_OUT" "00000000-0000-4000-8000-000000000002" "reordered: query finds the other one"
t_eq "$(state)" "$before" "reading through the reordered list changed nothing"
printf '{"id":{"$uuid":"00000000-0000-4000-8000-000000000003"},"k":3}\n' >"$T/e3.jsonl"
t_exit 0 "reordered: put" -- "$B" -c "$T/reordered.yaml" put "$T/e3.jsonl"
t_exit 0 "the written entity reads back through the configured list" -- "$B" -c "$C" get 00000000000040008000000000000003
t_contains "$T_OUT" '"k":3' "and it is the one written"
t_exit 0 "reordered: delete" -- "$B" -c "$T/reordered.yaml" delete 00000000000040008000000000000003
t_exit 1 "the deleted entity is gone through the configured list" -- "$B" -c "$C" get 00000000000040008000000000000003
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM entities")$(t_sql 1 "SELECT COUNT(*) FROM entities")" "11" \
	"each shard still holds its one entity"

# init through the longer list: the third shard joins owning nothing
t_exit 0 "three: init adds the third shard" -- "$B" -c "$T/three.yaml" init
t_contains "$T_OUT" "owning no bucket yet" "three: init says it owns no bucket yet"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_fp3.entities")" 0 "three: the third shard holds no entity"
t_exit 0 "three: shards agrees now" -- "$B" -c "$T/three.yaml" shards
t_exit 0 "three: get through it" -- "$B" -c "$T/three.yaml" get 00000000000040008000000000000001
t_exit 0 "the two-shard list still works beside it" -- "$B" -c "$C" get 00000000000040008000000000000002
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM entities")$(t_sql 1 "SELECT COUNT(*) FROM entities")" "11" \
	"no entity moved"
t_sql 0 "DROP DATABASE bagstore_fp3"

# ------------------------------------------------------------ the documents
# an exit-status table row ("| 2 | ...") outside the man page would be a
# second list
for f in README.md doc/operations.md; do
	t_eq "$(grep -c '^| [012] |' "$ROOT/$f")" 0 "$f keeps no exit-status table (the man page does)"
done
# man page: the paragraph under .B 2 (up to the next .TP) in EXIT STATUS
man_status() { sed -n '/^\.SH EXIT STATUS/,/^\.SH /p' "$ROOT/doc/bagstore.1" | awk -v want="$1" '
	/^\.TP/ { getline; cur = $0; next } cur == ".B " want { print }'; }
t_contains "$(man_status 2 | tr '\n' ' ' | sed 's/\\-/-/g')" "fingerprint mismatch" "man page: exit status 2 names the fingerprint mismatch"
case $(man_status 1) in *fingerprint*) t_fail "man page: exit status 1 does not name it" ;; *) t_ok "man page: exit status 1 does not name it" ;; esac
t_match "$(grep '^| `BS_ECONFIG`' "$ROOT/doc/DESIGN.md")" "fingerprint mismatch.*\| 2 \|$" "DESIGN.md: BS_ECONFIG, the fingerprint mismatch, exit 2"
# and none of them still says reads go unchecked
for f in README.md doc/operations.md doc/DESIGN.md doc/bagstore.1; do
	t_eq "$(grep -ci 'reads are not checked\|reads do not check' "$ROOT/$f")" 0 "$f does not say reads skip the check"
done

t_done test_fingerprint

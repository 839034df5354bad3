#!/bin/sh
# test_console_honest.sh - every number the console shows is true or says
# what it is, headless against real shards: InnoDB's estimates marked ~,
# `#` counting exactly (equal to COUNT(*) on the shards), an index query
# matching more than the 1,000 shown says how many it found, a text filter
# says it filters the page shown only, a property no ready index holds is
# refused naming the indexes there are (and is not silently taken as a page
# filter), :entity with a bad id; the create form checks each field as it
# is entered and keeps what was typed; B works on the index just created,
# and refuses a ready one. With a shard stopped: the indexes keep its old
# numbers marked stale, with its error; every screen says which shard did
# not answer and why.
. tests/console/lib.sh

c_init
t_exit 0 "a ready index (empty store)" -- "$BAGSTORE" -c "$CFG" index create index_user --on user:uuid --shard-on user
post() { printf '{"user": {"$uuid": "f48b0000-0000-4000-8000-000000000001"}, "title": "post %d", "n": %d}\n' "$1" "$1"; }
c_put 1200 post
s0=$(t_sql 0 "SELECT COUNT(*) FROM entities")
s1=$(t_sql 1 "SELECT COUNT(*) FROM entities")
i0=$(t_sql 0 "SELECT COUNT(*) FROM index_user")
i1=$(t_sql 1 "SELECT COUNT(*) FROM index_user")
count() { printf "%'d" "$1" 2>/dev/null || echo "$1"; }
commas() { echo "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/;ta'; }

cat >"$T/honest.keys" <<'KEYS'
wait-idle
dump shards
key #
wait-for counted exactly
wait-idle
dump shards_exact
keys 2
wait-idle
dump indexes
key #
wait-for rows counted exactly
wait-idle
dump indexes_exact
keys 5
wait-idle
keys /user=f48b0000-0000-4000-8000-000000000001\n
wait-for found
dump query_cap
key Esc
wait-idle
keys /post 1\n
dump page_filter
key Esc
wait-idle
keys /updated=2024\n
wait-idle
dump query_refused
key Esc
wait-idle
keys :entity xyz\n
dump entity_xyz
keys :q\n
KEYS
c_headless "honest numbers" "$T/honest.keys"
t_match "$(d shards)" "^s0 .* ~[0-9,]+ " "shards: the entity count is marked an estimate"
t_contains "$(d shards)" "ENTITIES: ~ InnoDB's estimate (# counts exactly)" "shards: the header says what ~ means"
t_match "$(d shards_exact)" "^s0 .* $(commas "$s0") " "#: s0's exact count equals COUNT(*)"
t_match "$(d shards_exact)" "^s1 .* $(commas "$s1") " "#: s1's exact count equals COUNT(*)"
t_match "$(d shards_exact)" "^TOTAL .* 1,200 " "#: the total is exact, unmarked"
c_lacks shards_exact "~$(commas "$s0") " "#: the exact count has no ~"
t_contains "$(d shards_exact)" "ENTITIES: exact, counted" "the header says the count is exact, and when"
t_match "$(d indexes)" "^index_user .* ~[0-9,]+ " "indexes: rows marked estimates"
t_match "$(d indexes_exact)" "^index_user .* $(commas "$i0") +$(commas "$i1") +1,200 " "#: the index's rows counted exactly per shard and in all"
t_contains "$(d indexes_exact)" "index_user: rows counted exactly" "the note says which index was counted"
t_contains "$(d query_cap)" "(index query, 1,200 found, the newest 1,000 shown)" "a capped query says the true count"
t_contains "$(d page_filter)" "filters this page only" "a text filter says it is of the page only"
t_contains "$(d page_filter)" "(/PROP=VALUE queries an index)" "and how to query the store"
t_contains "$(d query_refused)" "no ready index holds updated (ready indexes: index_user" "a property no ready index holds is refused, naming the indexes"
t_contains "$(d query_refused)" "the query /updated=2024 was refused" "the header says the query was refused"
t_contains "$(d query_refused)" 'title="post' "the page is not filtered by the refused text"
t_contains "$(d entity_xyz)" ':entity xyz: malformed id' ":entity with a bad id says why"

# the create form, field by field; B on the new index; B refused on a ready one
cat >"$T/form.keys" <<'KEYS'
keys 2
wait-idle
keys c
keys index_user\n
dump name_exists
key C-u
keys index_new\n
keys n:nosuchtype\n
dump bad_type
key C-u
keys n:int\n
dump shard_on
keys n\n
dump ddl
keys y
wait-for created index index_new
wait-idle
keys B
wait-for backfilling index_new
dump b_new
keys /index_user\n
keys B
dump b_ready
keys :q\n
KEYS
c_headless "the create form and B" "$T/form.keys"
t_contains "$(d name_exists)" "name: index index_user exists already" "an existing name is refused at once"
t_contains "$(d name_exists)" "create index: name (index_...): index_user" "asked again, with what was typed"
t_contains "$(d bad_type)" "properties: " "a bad type is refused at its field"
t_contains "$(d bad_type)" "nosuchtype" "the error names it"
t_contains "$(d bad_type)" "): n:nosuchtype" "asked again, with what was typed"
t_contains "$(d shard_on)" "shard_on property (Enter: n, the first):" "one property: the prompt says Enter takes it"
t_match "$(d shard_on | tail -n 1)" "\(Enter: n, the first\): *$" "and nothing is typed for the operator"
c_lacks ddl "is not one of the index's properties" "typing the property, as the prompt asks, is not refused"
t_contains "$(d ddl)" "rows sharded by n," "the DDL preview shards by the property typed"
t_contains "$(d ddl)" "CREATE TABLE" "then the DDL preview"
t_contains "$(d b_new)" "backfilling index_new" "B after create backfills the new index"
t_contains "$(d b_ready)" "index_user is ready: nothing to backfill" "B on a ready index is refused"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_jobs WHERE index_name='index_user' AND state<>'done'")" 0 "nothing queued again for the ready index"

# with s1 stopped: stale numbers, and every screen says which shard and why
cat >"$T/down.keys" <<'KEYS'
keys 2
wait-idle
dump idx_before
wait-for * stale 60
dump idx_stale
keys 1
wait-for unreachable 30
dump shards_down
keys 3
wait-idle
dump cleaner_down
keys 6
wait-for not sampled 30
dump census_down
keys 7
wait-for did not answer 30
dump audit_down
keys :q\n
KEYS
"$BAGSTORE" -c "$CFG" --timeout 2 --refresh 1 --headless "$T/down.keys" --dump-dir "$D" >"$T/down.out" 2>&1 &
cpid=$!
n=0
while [ ! -s "$D/idx_before.txt" ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
t_exit 0 "stop s1" -- sh "$SHARDS_SH" stop-one s1 --dir "$SHARDS_DIR"
wait $cpid
t_eq "$?" 0 "the console ran its script with s1 stopped"
sh "$SHARDS_SH" start-one s1 --dir "$SHARDS_DIR" >/dev/null 2>&1
t_match "$(d idx_stale)" "^index_user .*~[0-9,]+\*" "indexes: s1's old numbers kept, marked *"
t_contains "$(d idx_stale)" "* stale: the shard did not answer; its numbers are from" "indexes: the stale mark explained, with its age"
t_contains "$(d idx_stale)" "s1 (127.0.0.1:" "indexes: the shard's error named"
t_contains "$(d shards_down)" "s1 unreachable: " "shards: the stopped shard with its error"
t_match "$(d shards_down)" "^TOTAL .* >=[0-9,]+\? +>=[0-9.]+ (B|KiB|MiB|GiB|TiB)\? +>=[0-9]+\?" \
	"shards: the total entities, size and threads are all marked partial (s1 did not answer)"
t_contains "$(d cleaner_down)" "unreachable" "cleaner: the stopped shard"
t_contains "$(d cleaner_down)" "s1 unreachable: " "cleaner: with its error"
t_contains "$(d census_down)" "1 shard not sampled: " "properties: the shard left out, with its error"
t_contains "$(d census_down)" "Properties of" "properties: the other shard's census"
t_contains "$(d audit_down)" "1 shard did not answer: their rows are not listed" "audit: the shard left out, with its error"
t_done test_console_honest

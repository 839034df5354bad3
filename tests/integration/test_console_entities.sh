#!/bin/sh
# test_console_entities.sh - the entity browser, headless against real
# shards: newest first across shards, paging by key and back, one shard,
# jump to an id, a query through an index, an entity as a tree with its
# index rows and raw bytes; edit in $EDITOR (saved with bs_put_if), a YAML
# error that keeps the file (its path named once, the error whole), an edit
# given up (its file removed), an edit conflict that writes nothing and
# shows both versions, create and delete (the deleted entity's page goes
# back); `i` opens an id; an unchanged create template writes nothing; a
# broken create reopened by `n`; one kept edit file at a time; every change
# in the audit table.
. tests/console/lib.sh
export BAGSTORE BAGSTORE_TEST_CONFIG
TMPDIR=$T
export TMPDIR

c_init
t_exit 0 "a ready index (empty store)" -- "$BAGSTORE" -c "$CFG" index create index_user_id --on user_id:uuid --shard-on user_id
t_exit 0 "an index on the title (empty store)" -- "$BAGSTORE" -c "$CFG" index create index_title --on "title:string(32)" --shard-on title
post() {
	printf '{"user_id": {"$uuid": "f48b0000-0000-4000-8000-00000000000%d"}, "title": "post %d", "n": %d}\n' \
		$(($1 % 3)) "$1" "$1"
}
c_put 60 post
first=$(printf '%s\n' "$T_OUT" | head -n 1)
last=$(printf '%s\n' "$T_OUT" | tail -n 1)

cat >"$T/browse.keys" <<KEYS
keys 5
wait-idle
dump page1
key PgDn
wait-idle
dump page2
keys b
wait-idle
dump back1
keys s
wait-idle
dump shard0
keys s
wait-idle
keys s
wait-idle
dump merged
keys :entity $first\n
wait-idle
dump jump
keys x
dump raw
key q
keys /user_id=f48b0000-0000-4000-8000-000000000001\n
wait-idle
dump query
key Esc
wait-idle
dump unquery
key Enter
wait-idle
dump opened
keys :q\n
KEYS
c_headless "browse headless" "$T/browse.keys"
t_contains "$(d page1)" "all shards merged: page 1" "page 1, merged"
t_contains "$(d page1)" "$last" "the newest entity first"
t_contains "$(d page1)" 'title="post 59"' "a summary of the body"
t_contains "$(d page2)" "page 2 (the end)" "page 2 is the end"
t_contains "$(d page2)" "$first" "the oldest entity on the last page"
t_contains "$(d back1)" "page 1" "b pages back"
t_contains "$(d back1)" "$last" "back on the newest"
t_contains "$(d shard0)" "newest first, s0: page 1" "s: one shard"
t_eq "$(d shard0 | grep -c ' s1  ')" 0 "one shard: no s1 rows"
t_contains "$(d merged)" "all shards merged" "s cycles back to merged"
t_contains "$(d jump)" "Entity " "i opens an id"
t_contains "$(d jump)" 'title: "post 0"' "decoded as a tree"
t_contains "$(d jump)" "index rows (every shard read):" "index rows listed"
t_contains "$(d jump)" "ok      index_user_id" "the index row is right"
t_contains "$(d jump)" "has: user_id=f48b0000" "the row found, with its value"
t_contains "$(d raw)" "raw stored bytes" "x shows raw bytes"
t_contains "$(d raw)" "00000000  78" "a hex dump of the zlib body"
t_contains "$(d query)" "matching user_id=f48b0000-0000-4000-8000-000000000001 (index query, 20 found" "a query through the index"
t_contains "$(d unquery)" "all shards merged: page 1" "Esc leaves the query"
t_contains "$(d opened)" 'title: "post 59"' "Enter opens the newest"

# --- a query of a value with blanks: quoted either way; unquoted, the
# refusal says how to quote; the status line gives the count, not
# "querying ..."
cat >"$T/quoted.keys" <<KEYS
keys 5
wait-idle
keys /title="post 7"\n
wait-idle
dump q_double
key Esc
wait-idle
keys /title='post 8'\n
wait-idle
dump q_single
key Esc
wait-idle
keys /title=post 9\n
wait-idle
dump q_bare
keys :q\n
KEYS
c_headless "queries of values with blanks" "$T/quoted.keys"
t_contains "$(d q_double)" 'title="post 7"' "a double-quoted value: the entity found"
t_contains "$(d q_double)" "index query, 1 found" "a double-quoted value: one found"
t_match "$(d q_double | tail -n 1)" '/title="post 7": 1 found' "the status line gives the count"
c_lacks q_double "querying" "no 'querying ...' left once the results are in"
t_contains "$(d q_single)" 'title="post 8"' "a single-quoted value: the entity found"
t_contains "$(d q_single)" "index query, 1 found" "a single-quoted value: one found"
t_contains "$(d q_bare | tr -s '\n ' '  ')" "expected PROP=VALUE, got '9'; a value with blanks or commas is quoted: title=\"a b\" or title='a b'" \
	"unquoted: the refusal says how to quote"

# --- edit: saved only through bs_put_if, audited
cat >"$T/edit.keys" <<KEYS
keys :entity $first\n
wait-idle
keys e
dump edit_diff
keys y
wait-for saved entity
wait-idle
dump edit_saved
keys :q\n
KEYS
EDITOR="sh $TEST_ROOT/tests/console/edit_title.sh" c_headless "edit headless" "$T/edit.keys"
t_contains "$(d edit_diff)" '- title: post 0' "the change shown: before"
t_contains "$(d edit_diff)" "+ title: edited in the console" "the change shown: after"
t_contains "$(d edit_diff)" "y: write it" "asks before writing"
t_contains "$(d edit_saved)" "title: \"edited in the console\"" "saved and shown"
t_exit 0 "get after edit" -- "$BAGSTORE" -c "$CFG" get "$first"
t_contains "$T_OUT" "edited in the console" "the store has the edit"

# --- a YAML error keeps the file
cat >"$T/broken.keys" <<KEYS
keys :entity $first\n
wait-idle
keys e
dump broken
keys :q\n
KEYS
EDITOR="sh $TEST_ROOT/tests/console/edit_broken.sh" c_headless "broken edit headless" "$T/broken.keys"
t_contains "$(d broken)" "not saved;" "a YAML error is shown"
t_contains "$(d broken)" "your edit is kept in $T/bagstore-edit-" "the file is kept, its path shown"

# --- conflict: someone writes while the operator edits
cat >"$T/race.keys" <<KEYS
keys :entity $last\n
wait-idle
keys e
keys y
wait-for CONFLICT
dump conflict
keys :q\n
KEYS
EDITOR="sh $TEST_ROOT/tests/console/edit_race.sh" c_headless "conflict headless" "$T/race.keys"
t_contains "$(d conflict)" "CONFLICT: entity $last changed since you opened it; nothing was written." "conflict: nothing written"
t_contains "$(d conflict)" "Your edited version is kept in $T/bagstore-edit-" "conflict: the edit kept in a file"
t_contains "$(d conflict)" '- title: changed elsewhere' "conflict: the store's version"
t_contains "$(d conflict)" "+ title: my edit" "conflict: the operator's version"
t_exit 0 "get after conflict" -- "$BAGSTORE" -c "$CFG" get "$last"
t_contains "$T_OUT" "changed elsewhere" "conflict: the other write stands"
kept=$(ls "$T"/bagstore-edit-* 2>/dev/null | xargs grep -l "my edit" 2>/dev/null | head -n 1)
t_contains "$(cat "$kept" 2>/dev/null)" "title: my edit" "conflict: the kept file has the edit"

# --- create and delete
cat >"$T/create.keys" <<KEYS
keys 5
wait-idle
keys n
dump create_diff
keys y
wait-for created entity
dump created
keys /user_id=f48b0000-0000-4000-8000-000000000009\n
wait-for 1 found
dump created_query
key Enter
wait-idle
keys d
dump delete_prompt
keys 0000\n
dump delete_refused
keys d
KEYS
EDITOR="sh $TEST_ROOT/tests/console/edit_add.sh" c_headless "create headless" "$T/create.keys"
t_contains "$(d create_diff)" "+ title: created in the console" "create: the new entity shown"
t_contains "$(d create_diff)" "y: create it" "create: asks"
t_contains "$(d created_query)" 'title="created in the console"' "create: written and indexed"
t_contains "$(d delete_prompt)" "(1 entity on s" "delete: the prompt names target and scale"
t_contains "$(d delete_refused)" "not deleted" "delete: wrong digits refuse"
newid=$(d created_query | sed -n 's/^\([0-9a-f]\{32\}\) .*/\1/p' | head -n 1)
cat >"$T/delete.keys" <<KEYS
keys :entity $newid\n
wait-idle
keys d
keys $(printf %.8s "$newid")\n
wait-for deleted entity
dump deleted
keys :q\n
KEYS
c_headless "delete headless" "$T/delete.keys"
t_contains "$(d deleted)" "deleted entity $newid" "delete: done after the digits"
t_exit 1 "the entity is gone" -- "$BAGSTORE" -c "$CFG" get "$newid"

# --- i opens an id (the key itself, not :entity); the status line names
# the page by its title; an edit given up removes its file; a deleted
# entity's page goes back
cat >"$T/more.keys" <<KEYS
keys 5
wait-idle
keys i
keys $first\n
wait-idle
dump i_key
keys e
dump edit_page
key q
dump given_up
keys :entity $last\n
wait-idle
keys d
keys $(printf %.8s "$last")\n
wait-for deleted entity
wait-idle
dump after_delete
keys :q\n
KEYS
rm -f "$T"/bagstore-edit-*
EDITOR="sh $TEST_ROOT/tests/console/edit_n.sh" c_headless "i, a given-up edit, a deleted entity" "$T/more.keys"
t_contains "$(d i_key)" "decoded:" "i then the id opens the entity"
t_contains "$(d i_key)" "entities > $(printf %.8s "$first")" "the breadcrumb ends with the entity"
t_contains "$(d edit_page)" "edit: the change" "the change page"
t_match "$(d edit_page | tail -n 1)" "^ edit: the change " "the status line names the page by its title, not 'text'"
t_contains "$(d given_up)" "edit given up; nothing written (its file $T/bagstore-edit-" "q on the change page gives the edit up, and says so"
t_eq "$(ls "$T"/bagstore-edit-* 2>/dev/null | wc -l | tr -d ' ')" 0 "the given-up edit's file is removed"
t_contains "$(d after_delete)" "Entities, newest first" "a deleted entity's page goes back to the entities"
c_lacks after_delete "not found: entity" "no 'not found' page left behind"
t_contains "$(d after_delete)" "deleted entity $last" "and says it was deleted"
t_exit 1 "the entity is gone" -- "$BAGSTORE" -c "$CFG" get "$last"

# --- a YAML error names the path once, whole
cat >"$T/broken2.keys" <<KEYS
keys :entity $first\n
wait-idle
keys e
dump broken2
keys :q\n
KEYS
rm -f "$T"/bagstore-edit-*
EDITOR="sh $TEST_ROOT/tests/console/edit_broken.sh" c_headless "broken edit, the message" "$T/broken2.keys"
kept=$(ls "$T"/bagstore-edit-* 2>/dev/null | head -n 1)
msg=$(d broken2 | tr -s '\n ' '  ')
t_contains "$msg" "not saved; your edit is kept in $kept (e edits it again): YAML line:column " "the YAML error: the path, what to do, where"
t_eq "$(printf '%s' "$msg" | grep -o "bagstore-edit-" | wc -l | tr -d ' ')" 1 "the path is named once"
t_match "$msg" "YAML line:column [0-9]+:[0-9]+: " "the line and column of the error, whole"

# --- a create whose template comes back unchanged is an abort (EDITOR=true,
# as vi's :q): nothing written, nothing audited (a `y` after it confirms
# nothing), no file left
ents() { echo $(($(t_sql 0 "SELECT COUNT(*) FROM entities") + $(t_sql 1 "SELECT COUNT(*) FROM entities"))); }
creates() { echo $(($(t_sql 0 "SELECT COUNT(*) FROM bagstore_audit WHERE action='entity.create'") + $(t_sql 1 "SELECT COUNT(*) FROM bagstore_audit WHERE action='entity.create'"))); }
n0=$(ents)
c0=$(creates)
cat >"$T/untouched.keys" <<KEYS
keys 5
wait-idle
keys n
wait-idle
dump untouched
keys y
wait-idle
keys :q\n
KEYS
rm -f "$T"/bagstore-edit-*
EDITOR=true c_headless "n with an editor that changes nothing" "$T/untouched.keys"
t_contains "$(d untouched)" "nothing was created" "an unchanged template: the status line says nothing was created"
c_lacks untouched "create: the new entity" "an unchanged template: no change page"
t_eq "$(ents)" "$n0" "an unchanged template writes no entity"
t_eq "$(creates)" "$c0" "an unchanged template writes no audit row"
t_eq "$(ls "$T"/bagstore-edit-* 2>/dev/null | wc -l | tr -d ' ')" 0 "an unchanged template's file is removed"

# --- a create that fails to decode: n (not e, which edits the selected
# entity) opens its kept file again; written, the file goes
cat >"$T/create_again.keys" <<KEYS
keys 5
wait-idle
keys n
dump create_broken
keys n
dump create_mended
keys y
wait-for created entity
dump create_written
keys :q\n
KEYS
rm -f "$T"/bagstore-edit-*
EDITOR="sh $TEST_ROOT/tests/console/edit_twice.sh" c_headless "a broken create, mended with n" "$T/create_again.keys"
t_contains "$(d create_broken | tr -s '\n ' '  ')" "(n edits it again)" "a broken create offers n, not e"
t_contains "$(d create_mended)" "+ title: mended in the console" "n reopens the kept file"
t_contains "$(d create_written)" "created entity" "the mended create is written"
t_eq "$(ls "$T"/bagstore-edit-* 2>/dev/null | wc -l | tr -d ' ')" 0 "the kept file is removed once written"
t_eq "$(ents)" "$((n0 + 1))" "one entity created"

# --- two failed edits keep one file, the one the last message names
cat >"$T/two_broken.keys" <<KEYS
keys :entity $first\n
wait-idle
keys e
keys :entity $(d page1 | sed -n 's/^\([0-9a-f]\{32\}\) .*/\1/p' | sed -n 2p)\n
wait-idle
keys e
dump two_broken
keys :q\n
KEYS
rm -f "$T"/bagstore-edit-*
EDITOR="sh $TEST_ROOT/tests/console/edit_broken.sh" c_headless "two broken edits" "$T/two_broken.keys"
kept=$(ls "$T"/bagstore-edit-* 2>/dev/null)
t_eq "$(printf '%s\n' "$kept" | grep -c bagstore-edit-)" 1 "two failed edits leave one file"
t_contains "$(d two_broken | tr -s '\n ' '  ')" "kept in $kept " "the file left is the one the message names"

audit=$(t_sql 0 "SELECT action, target FROM bagstore_audit"; t_sql 1 "SELECT action, target FROM bagstore_audit")
t_contains "$audit" "entity.edit	$first" "audit: edit"
t_contains "$audit" "entity.create	$newid" "audit: create"
t_contains "$audit" "entity.delete	$newid" "audit: delete"

# --- a value of 40 KB on one line, edited: the change page to confirm
# holds it before and after, at 80 columns more than 256 rows each, every
# one of them reachable (End shows the edit at its very end)
LONG=f48b0000-0000-4000-8000-0000000000aa
python3 -c 'import json; print(json.dumps({"id": {"$uuid": "'"$LONG"'"}, "text": "x" * 40000 + "TAILMARK"}))' >"$T/long.json"
t_exit 0 "an entity with a 40 KB value" -- "$BAGSTORE" -c "$CFG" put "$T/long.json"
cat >"$T/long.keys" <<KEYS
resize 24 80
keys 5
wait-idle
keys :entity $LONG\n
wait-idle
keys e
key End
dump long_end
key q
keys :q\n
KEYS
EDITOR="sh $TEST_ROOT/tests/console/edit_tail.sh" c_headless "a long value edited headless" "$T/long.keys"
t_contains "$(d long_end)" "TAILEDIT" "End reaches the end of a 40 KB line on the change page"
t_contains "$(d long_end)" "y: write it" "which asks before writing"

# --- help over a change page is laid over it: q comes back to the page,
# whose edit (its file) is kept, and y still writes it; the same for a
# create's page
cat >"$T/help_edit.sh" <<'SH'
#!/bin/sh
# an $EDITOR: an entity's n changed; a create's template given a title
if grep -q '^n: ' "$1"; then
	sed -i 's/^n: .*/n: 4242/' "$1"
else
	printf 'title: created under the help\n' >>"$1"
fi
SH
cat >"$T/help_over.keys" <<KEYS
keys :entity $first\n
wait-idle
keys e
wait-for y: write it
keys ?
dump help_over_edit
key q
dump edit_after_help
keys y
wait-for saved entity
wait-idle
keys 5
wait-idle
keys n
wait-for y: create it
keys ?
dump help_over_create
key q
dump create_after_help
keys y
wait-for created entity
wait-idle
keys :q\n
KEYS
rm -f "$T"/bagstore-edit-*
n1=$(ents)
EDITOR="sh $T/help_edit.sh" c_headless "help over the edit and create pages" "$T/help_over.keys"
t_contains "$(d help_over_edit)" "Everywhere:" "? on the edit's change page shows the help"
t_contains "$(d edit_after_help)" "y: write it" "q on that help comes back to the change page"
t_contains "$(d edit_after_help)" "+ n: 4242" "the change page still holds the edit"
t_exit 0 "get after the edit under the help" -- "$BAGSTORE" -c "$CFG" get "$first"
t_match "$T_OUT" '"n": ?4242' "y after the help writes the edit"
t_contains "$(d help_over_create)" "Everywhere:" "? on the create's page shows the help"
t_contains "$(d create_after_help)" "y: create it" "q on that help comes back to the create's page"
t_eq "$(ents)" "$((n1 + 1))" "y after the help creates the entity"
t_eq "$(ls "$T"/bagstore-edit-* 2>/dev/null | wc -l | tr -d ' ')" 0 "both files gone once written"

# --- a help already open lower down: ? on a screen, an :explain whose
# result opens over that help, then ? on the result: a new help is laid
# over the result (the one below taken out of the stack), and q comes back
# to the result, not to the screen under the first help
cat >"$T/help_again.keys" <<KEYS
keys 5
wait-idle
keys ?
wait-for Everywhere:
keys :explain title=again\n
wait-for explain title=again 10
wait-idle
keys ?
wait-for Everywhere:
dump help_again_over
key q
wait-idle
dump help_again_back
keys :q\n
KEYS
c_headless "a help over a page over a help" "$T/help_again.keys"
t_contains "$(d help_again_over)" "Everywhere:" "? on the result shows the help"
t_contains "$(d help_again_back)" "explain title=again" "q on it comes back to the result page"
c_lacks help_again_back "Everywhere:" "not to the help below it"

# --- a query refused after one that matched: the screen says what it
# still shows (the earlier query's result), not that the page is
# unfiltered; `/` opens on the query in force, to edit, and says so
cat >"$T/requery.keys" <<KEYS
keys 5
wait-idle
keys /user_id=f48b0000-0000-4000-8000-000000000001\n
wait-for found
wait-idle
keys /
dump requery_prompt
keys x\n
wait-idle
dump requery_refused
key Esc
wait-idle
keys /updated=2024\n
wait-idle
dump browse_refused
keys :q\n
KEYS
LINES=40 COLUMNS=200 c_headless "a query refused after one that matched" "$T/requery.keys"
t_contains "$(d requery_prompt)" "/user_id=f48b0000-0000-4000-8000-000000000001" "/ opens on the query in force"
t_contains "$(d requery_prompt | tr -s '\n ' '  ')" "Ctrl-U clears it" "and says how to start afresh"
t_contains "$(d requery_refused)" "/user_id=f48b0000-0000-4000-8000-000000000001x was refused" "the edited query is refused"
t_contains "$(d requery_refused)" "Entities: the result of user_id=f48b0000-0000-4000-8000-000000000001 still shown (index query, 20 found)" \
	"the header names the query whose result is still shown"
c_lacks requery_refused "the page is not filtered" "and does not call that result unfiltered"
t_contains "$(d browse_refused)" "Entities, all shards merged: page 1 still shown, not filtered; the query /updated=2024 was refused" \
	"a query refused while browsing: the page shown is the unfiltered one, and says so"
# --- a result that arrives while a change page waits for its `y` (here
# :explain's, asked for from the page: the page waits before the request
# is sent, whatever the lane's speed) does not replace
# the page: the page keeps its edit, the status line and the page's y line
# say a result is waiting, and it opens once the page is left; y writes
# the edit.
# The same for a create's page, with the help laid over it meanwhile.
cat >"$T/late_edit.sh" <<'SH'
#!/bin/sh
# an $EDITOR that takes its time (the explain is answered meanwhile):
# an entity's n changed; a create's template given a title
sleep 1
if grep -q '^n: ' "$1"; then
	sed -i 's/^n: .*/n: 5151/' "$1"
else
	printf 'title: created while a result waited\n' >>"$1"
fi
SH
cat >"$T/late.keys" <<KEYS
keys :entity $first\n
wait-idle
keys e
wait-for y: write it
keys :explain title=late\n
wait-for result waiting 10
dump late_edit_page
keys y
wait-for saved entity 10
wait-for explain title=late 10
dump late_edit_result
key q
wait-idle
keys 5
wait-idle
keys n
wait-for y: create it
keys :explain title=later\n
wait-for result waiting 10
keys ?
dump late_create_help
key q
wait-idle
dump late_create_page
keys y
wait-for created entity 10
wait-for explain title=later 10
dump late_create_result
keys :q\n
KEYS
rm -f "$T"/bagstore-edit-*
n1=$(ents)
EDITOR="sh $T/late_edit.sh" c_headless "a result arriving on the edit and create pages" "$T/late.keys"
t_contains "$(d late_edit_page)" "y: write it" "the edit's page stays when a result arrives"
t_contains "$(d late_edit_page)" "+ n: 5151" "and still holds the edit"
t_contains "$(d late_edit_page | tail -n 1)" "result waiting (y/q)" "the status line says a result is waiting"
t_contains "$(d late_edit_page)" "either opens the result waiting: explain title=late" "the y line names it"
t_contains "$(d late_edit_result)" "explain title=late" "the result opens once the page is left"
t_exit 0 "get after the edit a result arrived on" -- "$BAGSTORE" -c "$CFG" get "$first"
t_match "$T_OUT" '"n": ?5151' "y on the page the result arrived on writes the edit"
t_contains "$(d late_create_help)" "Everywhere:" "the help over the create's page"
t_contains "$(d late_create_page)" "y: create it" "the create's page stays when a result arrives"
t_contains "$(d late_create_page | tail -n 1)" "result waiting (y/q)" "the status line says a result is waiting (create)"
t_contains "$(d late_create_help | tail -n 1)" "result waiting |" "and says so over the help too"
t_lacks "$(d late_create_help | tail -n 1)" "(y/q)" "without offering y there: the help does not take it"
t_contains "$(d late_create_result)" "explain title=later" "the result opens once the create's page is left"
t_eq "$(ents)" "$((n1 + 1))" "y on the create's page creates the entity"
t_eq "$(ls "$T"/bagstore-edit-* 2>/dev/null | wc -l | tr -d ' ')" 0 "both files gone once written"
t_done test_console_entities

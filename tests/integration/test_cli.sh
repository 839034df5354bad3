#!/bin/sh
# test_cli.sh - the command line: usage and --help, exit codes, messages,
# configuration errors, ids, read-only refusals, put (JSON Lines with a bad
# line, a pretty document, ids generated), get (JSON, YAML), delete, query,
# index list/create/drop, shards. Runs against the shared test shards; with
# BAGSTORE_VALGRIND=1 every CLI run is under valgrind (leaks are errors).
. tests/lib.sh

CFG=$BAGSTORE_TEST_CONFIG
TMP=$(t_tmp)
UID1=f48b0a7c-8e4b-4a53-9d2e-0c1c2f0b8a11
ID1=71f0c4d2-2918-44cc-a2df-6f486e96e37c
ID1HEX=71f0c4d2291844cca2df6f486e96e37c
ID5HEX=0a5e0000000000000000000000000005
VG=""
if [ "${BAGSTORE_VALGRIND:-0}" = 1 ]; then
	VG="valgrind -q --leak-check=full --show-leak-kinds=definite,indirect
	    --errors-for-leak-kinds=definite,indirect --error-exitcode=99
	    --suppressions=tests/valgrind.supp"
	T_TIMEOUT=300
fi
# bs EXIT DESC ARGS...: run the CLI with the test configuration.
bs() {
	want=$1 desc=$2
	shift 2
	# shellcheck disable=SC2086
	t_exit "$want" "$desc" -- $VG "$BAGSTORE" -c "$CFG" "$@"
}
lines() { if [ -z "$1" ]; then echo 0; else printf '%s\n' "$1" | wc -l | tr -d ' '; fi; }

# ------------------------------------------------------------ usage

bs 0 "--help" --help
t_contains "$T_OUT" "index create NAME --on PROP:TYPE" "--help lists the commands"
t_contains "$T_OUT" "exit status" "--help names the exit statuses"
t_exit 0 "--version" -- $VG "$BAGSTORE" --version
t_match "$T_OUT" '^bagstore [0-9]' "--version prints the version"
for c in init shards put get delete query "index list" "index create" "index drop" grants; do
	# shellcheck disable=SC2086
	bs 0 "$c --help exits 0" $c --help
	t_contains "$T_OUT" "usage: bagstore [-c FILE] $c" "$c --help prints its usage on stdout"
done
bs 0 "index --help" index --help
t_contains "$T_OUT" "index drop NAME --yes" "index --help lists its subcommands"

# Each command's summary stands two spaces or more right of its name, in
# `--help` and in a group's --help (they once ran together: "backfill
# pausepause the backfill ...").
bs 0 "--help, for the summaries" --help
for c in init shards put get delete query "index list" "index create" "index drop" \
	cleaner verify "backfill list" "backfill pause" "backfill resume" "backfill cancel" lag grants; do
	t_match "$T_OUT" "^  $c  +[a-z]" "--help: '$c', two spaces, then its summary"
done
t_match "$T_OUT" '^  backfill pause  +pause the backfill of index NAME' "--help: backfill pause's summary apart"
bs 0 "backfill --help" backfill --help
for c in list pause resume cancel; do
	t_match "$T_OUT" "^  backfill $c  +[a-z]" "backfill --help: '$c', two spaces, then its summary"
done

bs 2 "unknown command" frobnicate
t_contains "$T_ERR" "bagstore: unknown command 'frobnicate'" "unknown command is named"
t_contains "$T_ERR" "usage:" "unknown command prints the usage on stderr"
t_eq "$T_OUT" "" "unknown command prints nothing on stdout"
bs 2 "unknown global option" --frob shards
bs 2 "global option after the command is unknown" shards --read-only
# the console's options before a command would do nothing: said, not ignored
bs 2 "a console option before a command" --refresh 1 index list
t_contains "$T_ERR" "--refresh is the console's option: \`index list\` runs no console" "naming the option and the command"
t_eq "$T_OUT" "" "and running nothing"
bs 2 "unknown option" get $ID1HEX --frob
t_contains "$T_ERR" "unknown option '--frob'" "unknown option is named"
bs 2 "index without subcommand" index
bs 2 "unknown index subcommand" index frob
t_contains "$T_ERR" "unknown subcommand 'frob'" "unknown subcommand is named"
bs 2 "get without ID" get
t_contains "$T_ERR" "missing ID" "get without ID says what is missing"
# the missing positional is named from the usage, skipping bracketed
# options whole ("[--index NAME]" once gave "missing NAME]") and options'
# values ("--on PROP:TYPE")
while IFS='|' read -r miss args; do
	# shellcheck disable=SC2086
	bs 2 "$args without its positional" $args
	t_eq "$(printf '%s\n' "$T_ERR" | sed -n 's/^bagstore: missing //p')" "$miss" "$args: says missing $miss"
done <<EOL
ID|delete
INDEX|query
PROP=VALUE...|query idx
PROP=VALUE...|explain
PROP=VALUE...|explain --index idx
PROP=VALUE...|explain --run --json
NAME|index create
NAME|index create --on a:int --shard-on a
NAME|index drop --yes
NAME|backfill pause
NAME|backfill resume
NAME|backfill cancel
EOL
bs 2 "get with two IDs" get $ID1HEX $ID1HEX
bs 2 "delete without ID" delete
bs 2 "put with two files" put a b
bs 2 "query without conditions" query idx
bs 2 "query condition without =" query idx user_id
bs 2 "query --limit 0" query idx a=1 --limit 0
bs 2 "query --limit abc" query idx a=1 --limit abc
bs 2 "query --limit without value" query idx a=1 --limit
bs 2 "index create without --on" index create idx --shard-on a
bs 2 "index create with a bad spec" index create idx --on a:nosuchtype --shard-on a
bs 2 "index create shard-on not a property" index create idx --on a:int --shard-on b
bs 2 "shards takes no argument" shards extra
bs 2 "--yaml takes no value" get $ID1HEX --yaml=1
t_exit 2 "no command, not a terminal" -- $VG "$BAGSTORE" -c "$CFG"
t_contains "$T_ERR" "usage:" "no command off a terminal prints the usage"

# ------------------------------------------------------------ configuration

printf 'shards:\n  - {name: s0, host: 127.0.0.1, port: nope}\n' >"$TMP/bad.yaml"
t_exit 2 "bad configuration" -- $VG "$BAGSTORE" -c "$TMP/bad.yaml" shards
t_match "$T_ERR" "^bagstore: $TMP/bad.yaml:2:[0-9]+: " "config error names FILE:LINE:COL"
t_exit 2 "bad configuration through BAGSTORE_CONFIG" -- \
	env BAGSTORE_CONFIG="$TMP/bad.yaml" $VG "$BAGSTORE" shards
t_match "$T_ERR" "bad.yaml:2:[0-9]+: " "BAGSTORE_CONFIG is read"
t_exit 2 "missing configuration" -- $VG "$BAGSTORE" -c "$TMP/nonexistent.yaml" shards
t_contains "$T_ERR" "nonexistent.yaml" "missing configuration is named"
printf 'shards: [\n' >"$TMP/broken.yaml"
t_exit 2 "configuration that is not YAML" -- $VG "$BAGSTORE" -c "$TMP/broken.yaml" index list
t_match "$T_ERR" "broken.yaml:[0-9]+:[0-9]+: " "YAML syntax error names FILE:LINE:COL"
mkdir -p "$TMP/empty"
t_exit 2 "no configuration anywhere" -- sh -c 'cd "$1" && exec env -u BAGSTORE_CONFIG "$2" shards' sh "$TMP/empty" "$(cd "$(dirname "$BAGSTORE")" && pwd)/$(basename "$BAGSTORE")"
t_contains "$T_ERR" "./bagstore.yaml: cannot read" "no configuration: the file looked for"
t_contains "$T_ERR" "name the configuration with -c FILE or \$BAGSTORE_CONFIG" "no configuration: how to name one"
t_exit 0 "help needs no configuration" -- $VG "$BAGSTORE" -c "$TMP/bad.yaml" get --help

# ------------------------------------------------------------ init, shards

bs 0 "init" init
t_contains "$T_OUT" "initialised 2 shards" "init reports the shards"
bs 0 "init again (idempotent)" init
bs 0 "shards" shards
t_match "$T_OUT" '^NAME +ADDRESS +STATE +VERSION +TLS +CIPHER +RTT_MS +ENTITIES +DATA +THREADS +REPL_LAG +FINGERPRINT$' "shards header"
t_match "$T_OUT" '^s0 +127\.0\.0\.1:[0-9]+ +up ' "s0 is up"
t_match "$T_OUT" '^s1 .* ok$' "s1 fingerprint ok"
t_match "$T_OUT" '^s0 +127\.0\.0\.1:[0-9]+ +up +[^ ]+ +off +- ' "s0 without TLS reads off, no cipher"
t_match "$T_OUT" '^s0 +127\.0\.0\.1:[0-9]+ +up +[^ ]+ +off +- +[0-9.]+ +~[0-9]+ ' "ENTITIES is InnoDB's estimate, marked ~"
bs 0 "shards --json" shards --json
t_contains "$T_OUT" '"fingerprint_ok": true' "shards --json has fingerprint_ok"
t_contains "$T_OUT" '"fingerprint": "ok"' "and the table's word for it"
t_contains "$T_OUT" '"replica_lag_state": "none"' "no replica configured: said, beside the null lag"
t_contains "$T_OUT" '"name": "s1"' "shards --json names s1"
t_contains "$T_OUT" '"threads_running":' "shards --json has threads_running"
t_contains "$T_OUT" '"encrypted": false' "shards --json: no TLS configured, none used"
t_contains "$T_OUT" '"mode": "unset"' "shards --json: the TLS mode"

# An index created on an empty store is ready at once.
bs 0 "index create" index create idx_cli_user --on user_id:uuid,n:int --shard-on user_id
t_eq "$T_OUT" "created index idx_cli_user (ready) on 2 shards" "index create reports state and shards"
bs 1 "index create twice" index create idx_cli_user --on user_id:uuid --shard-on user_id
bs 0 "index list" index list
t_match "$T_OUT" '^NAME +STATE +ON +SHARD_ON +ROWS$' "index list header"
t_match "$T_OUT" '^idx_cli_user +ready +user_id:uuid,n:int +user_id +~[0-9]+$' "index list row (ROWS an estimate, marked ~)"
bs 0 "index list --json" index list --json
t_contains "$T_OUT" '"name": "idx_cli_user"' "index list --json names the index"
t_contains "$T_OUT" '"rows_per_shard": {' "index list --json has rows per shard (keyed by name)"
t_match "$T_OUT" '"created": "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z"' "created is ISO-8601 UTC"

# ------------------------------------------------------------ ids

bs 2 "get a malformed id" get 71f0c4d2-zz
t_contains "$T_ERR" "bagstore: " "malformed id message"
bs 2 "get a short id" get 71f0c4d2291844cca2df6f486e96e37
bs 2 "delete a malformed id" delete not-an-id
bs 1 "get an absent entity" get $ID1HEX
t_eq "$T_ERR" "bagstore: entity $ID1HEX not found" "not found message"
bs 1 "delete an absent entity" delete $ID1

# ------------------------------------------------------------ put

# JSON Lines: two good lines, a blank one, a bad one, a good one after it.
{
	printf '{"id": {"$uuid": "%s"}, "user_id": {"$uuid": "%s"}, "n": 1, "bin": {"$binary": {"base64": "AAEC", "subType": "00"}}}\n' "$ID1" "$UID1"
	printf '{"user_id": {"$uuid": "%s"}, "n": 2, "title": "second"}\n' "$UID1"
	printf '\n'
	printf '{"n": 3,, }\n'
	printf '{"id": {"$uuid": "0a5e0000-0000-0000-0000-000000000005"}, "n": 5}\n'
} >"$TMP/lines.jsonl"
bs 2 "put JSON Lines with a bad line 4" put "$TMP/lines.jsonl"
t_eq "$(lines "$T_OUT")" 2 "two ids printed before the bad line"
t_match "$T_OUT" '^[0-9a-f]{32}$' "ids are 32 hex digits"
t_eq "$(printf '%s\n' "$T_OUT" | head -n 1)" "$ID1HEX" "the given id is kept"
t_match "$T_ERR" "^bagstore: $TMP/lines.jsonl:4(:[0-9]+)?: " "the error names FILE:LINE"
ID2=$(printf '%s\n' "$T_OUT" | sed -n 2p)
bs 0 "entity from line 1 was written" get $ID1HEX
bs 0 "entity from line 2 was written" get "$ID2"
t_contains "$T_OUT" '"title":"second"' "line 2's entity read back"
t_match "$T_OUT" '^\{"id":\{"\$uuid":"' "a generated id is the first key"
bs 1 "entity after the bad line was not written" get $ID5HEX
n=$(($(t_sql 0 'SELECT COUNT(*) FROM entities') + $(t_sql 1 'SELECT COUNT(*) FROM entities')))
t_eq "$n" 2 "two entities on the shards"

# Without an id, from stdin.
printf '{"user_id": {"$uuid": "%s"}, "n": 7}\n' "$UID1" >"$TMP/noid.json"
T_IN=$TMP/noid.json bs 0 "put from stdin, no id" put
t_match "$T_OUT" '^[0-9a-f]{32}$' "put without id prints a generated id"
ID3=$T_OUT
T_IN=$TMP/noid.json bs 0 "put - reads stdin" put -
t_match "$T_OUT" '^[0-9a-f]{32}$' "put - prints an id"
[ "$T_OUT" != "$ID3" ] && t_ok "each put generates a new id" || t_fail "each put generates a new id"
bs 0 "get the generated id" get "$ID3"
t_contains "$T_OUT" "\"n\":7" "generated entity read back"

# A pretty document over several lines is one entity.
cat >"$TMP/pretty.json" <<EOF
{
  "id": {"\$uuid": "0a5e0000-0000-0000-0000-000000000006"},
  "user_id": {"\$uuid": "$UID1"},
  "n": 6,
  "tags": ["a", "b"]
}
EOF
bs 0 "put a pretty document" put "$TMP/pretty.json"
t_eq "$T_OUT" "0a5e0000000000000000000000000006" "pretty document's id"
# And one with a syntax error is refused whole.
sed 's/"n": 6,/"n": 6,,/' "$TMP/pretty.json" | sed 's/000000000006/000000000007/' >"$TMP/pretty-bad.json"
bs 2 "put a broken pretty document" put "$TMP/pretty-bad.json"
t_eq "$T_OUT" "" "nothing stored from a broken document"
t_contains "$T_ERR" "pretty-bad.json:" "broken document is named"
bs 1 "broken document's entity absent" get 0a5e0000000000000000000000000007
T_IN=/dev/null bs 0 "put of empty input" put
t_eq "$T_OUT" "" "empty input stores nothing"
printf '[1, 2]\n' >"$TMP/array.json"
bs 2 "put of a JSON array" put "$TMP/array.json"
t_contains "$T_ERR" "array.json:1: expected a JSON object" "non-object is refused with its line"
bs 2 "put of a missing file" put "$TMP/nonexistent.jsonl"
t_contains "$T_ERR" "nonexistent.jsonl" "missing input file is named"

# ------------------------------------------------------------ get

bs 0 "get by dashed id" get $ID1
t_contains "$T_OUT" "{\"id\":{\"\$uuid\":\"$ID1\"}" "get prints compact JSON with the id first"
t_eq "$(lines "$T_OUT")" 1 "get prints one line"
bs 0 "get by upper-case id" get "$(echo $ID1HEX | tr a-f A-F)"
bs 0 "get --yaml" get $ID1HEX --yaml
t_contains "$T_OUT" "!uuid" "YAML tags 16 bytes !uuid"
t_contains "$T_OUT" "$ID1" "YAML shows the dashed id"
t_contains "$T_OUT" "!!binary" "YAML tags other bytes !!binary"
t_match "$T_OUT" '^n: 1$' "YAML shows plain values"

# a binary's subType is kept, stored and read back (16 bytes of subtype 03
# are no uuid; of 04, the uuid "$uuid" stands for); an id of subtype 03 is
# refused, not taken as a uuid
SUBID=0a5e0000-0000-0000-0000-0000000000b5
printf '{"id": {"$uuid": "%s"}, "s5": {"$binary": {"base64": "AAAA", "subType": "05"}}, "s80": {"$binary": {"base64": "AQI=", "subType": "80"}}, "s3": {"$binary": {"base64": "cfDE0ikYRMyi329IbpbjfA==", "subType": "03"}}, "s4": {"$binary": {"base64": "cfDE0ikYRMyi329IbpbjfA==", "subType": "04"}}}\n' "$SUBID" >"$TMP/sub.jsonl"
bs 0 "put binaries of subtypes 05, 80, 03 and 04" put "$TMP/sub.jsonl"
bs 0 "get them" get $SUBID
t_eq "$T_OUT" "{\"id\":{\"\$uuid\":\"$SUBID\"},\"s5\":{\"\$binary\":{\"base64\":\"AAAA\",\"subType\":\"05\"}},\"s80\":{\"\$binary\":{\"base64\":\"AQI=\",\"subType\":\"80\"}},\"s3\":{\"\$binary\":{\"base64\":\"cfDE0ikYRMyi329IbpbjfA==\",\"subType\":\"03\"}},\"s4\":{\"\$uuid\":\"71f0c4d2-2918-44cc-a2df-6f486e96e37c\"}}" \
	"every subType read back as put"
bs 0 "put what get printed" put "$T_OUT_FILE"
bs 0 "get it again" get $SUBID
t_contains "$T_OUT" '"s5":{"$binary":{"base64":"AAAA","subType":"05"}}' "the subtype survives a second round trip"
bs 0 "get --yaml" get $SUBID --yaml
t_match "$T_OUT" '^s5: !binary/05 AAAA$' "YAML names the subtype (!binary/05)"
t_match "$T_OUT" '^s3: !binary/03 cfDE0ikYRMyi329IbpbjfA==$' "16 bytes of subtype 03 are no uuid in YAML"
printf '{"id": {"$binary": {"base64": "cfDE0ikYRMyi329IbpbjfA==", "subType": "03"}}, "n": 1}\n' >"$TMP/subid.jsonl"
bs 2 "put with an id of subtype 03" put "$TMP/subid.jsonl"
t_contains "$T_ERR" "subtype 03" "refused, naming the subtype"

# ------------------------------------------------------------ query

bs 0 "query by user_id" query idx_cli_user user_id=$UID1
t_eq "$(lines "$T_OUT")" 5 "query finds the five entities of the user"
t_match "$(printf '%s\n' "$T_OUT" | head -n 1)" '^\{"id":' "query prints JSON Lines"
bs 0 "query with --limit" query idx_cli_user user_id=$UID1 --limit 2
t_eq "$(lines "$T_OUT")" 2 "--limit 2 prints two"
bs 0 "query on two properties" query idx_cli_user user_id=$UID1 n=6
t_contains "$T_OUT" '"n":6' "query on n=6 finds it"
t_eq "$(lines "$T_OUT")" 1 "query on n=6 finds one"
bs 0 "query with no match" query idx_cli_user n=12345
t_eq "$T_OUT" "" "no match prints nothing"
bs 2 "query on a property not in the index" query idx_cli_user title=x
t_contains "$T_ERR" "user_id, n" "the error names the index's properties"
bs 2 "query with a value of the wrong type" query idx_cli_user n=abc
bs 2 "query with a malformed uuid" query idx_cli_user user_id=xyz
# An unknown index is a lookup that failed, not a usage error: exit 1.
bs 1 "query an unknown index" query idx_nope a=1
t_contains "$T_ERR" "index idx_nope not found" "unknown index is named"

# ------------------------------------------------------------ read-only

printf 'read_only: true\n' | cat "$CFG" - >"$TMP/ro.yaml"
# ro_refused NAME ARGS...: refused under --read-only and read_only: true.
ro_refused() {
	name=$1
	shift
	t_exit 1 "--read-only refuses $name" -- $VG "$BAGSTORE" -c "$CFG" --read-only "$@"
	t_eq "$T_ERR" "bagstore: read-only: refusing $name" "--read-only message for $name"
	t_exit 1 "read_only: true refuses $name" -- $VG "$BAGSTORE" -c "$TMP/ro.yaml" "$@"
	t_eq "$T_ERR" "bagstore: read-only: refusing $name" "read_only message for $name"
}
ro_refused init init
ro_refused put put "$TMP/noid.json"
ro_refused delete delete $ID1HEX
ro_refused "index create" index create idx_ro --on a:int --shard-on a
ro_refused "index drop" index drop idx_cli_user --yes
bs 0 "entity survived the refused delete" get $ID1HEX
t_exit 0 "--read-only allows get" -- $VG "$BAGSTORE" -c "$CFG" --read-only get $ID1HEX
t_exit 0 "--read-only allows query" -- $VG "$BAGSTORE" -c "$CFG" --read-only query idx_cli_user n=1
t_exit 0 "--read-only allows index list" -- $VG "$BAGSTORE" -c "$CFG" --read-only index list
t_exit 0 "--read-only allows shards" -- $VG "$BAGSTORE" -c "$TMP/ro.yaml" shards

# ------------------------------------------------------------ delete

bs 0 "delete" delete $ID1
t_eq "$T_OUT" "deleted $ID1HEX" "delete reports the id"
bs 1 "get after delete" get $ID1HEX
bs 1 "delete twice" delete $ID1HEX

# ------------------------------------------------------------ index drop

bs 2 "index drop without --yes" index drop idx_cli_user
t_contains "$T_ERR" "would drop index idx_cli_user" "drop refusal names the index"
t_contains "$T_ERR" "s0 " "drop refusal names the shards"
t_contains "$T_ERR" "--yes" "drop refusal says how to confirm"
bs 0 "index still there" index list
t_contains "$T_OUT" "idx_cli_user" "index survived the refusal"
bs 1 "index drop of an unknown index" index drop idx_nope --yes
bs 0 "index drop --yes" index drop idx_cli_user --yes
t_eq "$T_OUT" "dropped index idx_cli_user" "drop reports the index"
bs 0 "index list after drop" index list
case $T_OUT in *idx_cli_user*) t_fail "index gone after drop" "$T_OUT" ;; *) t_ok "index gone after drop" ;; esac
bs 1 "query on the dropped index" query idx_cli_user n=1

t_done test_cli

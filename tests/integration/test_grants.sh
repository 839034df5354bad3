#!/bin/sh
# test_grants.sh - least privilege, for real: for each role, an account is
# created on the shared test shards and given exactly what
# `bagstore grants --role ROLE --shard sN` prints (run on shard sN), then
# used for the commands that role runs. The cleaner's account initialises
# the shards, makes, backfills, repairs and drops indexes; the app's puts,
# gets, queries and deletes, and may not make or drop tables; the console's
# does an operator's work; the readonly account runs every reading command
# and the console's screens, and every change it tries is refused by the
# server itself (no --read-only anywhere), the message naming the
# privilege, with nothing changed on either shard.
#
# The app's and the readonly grants are applied after init, when every
# table exists (a grant on a missing table fails, which would hide one too
# many), and each account then tries, in SQL of its own, every statement its
# role must not run: the app erasing or rewriting the audit log, changing
# bucket ownership, the map, the catalog, jobs, moves or the registry, DDL;
# the readonly account adding an audit row or any other change; the cleaner
# and console anything outside their database. Each must be refused by the
# server ("command denied"), and the statement forms the app's write path
# runs on each table must pass.
. tests/lib.sh
T=$(t_tmp)
B=$BAGSTORE
CFG=$BAGSTORE_TEST_CONFIG
T_TIMEOUT=120
ROLES="app cleaner console readonly"
BS_GRANTS_PW=grants-test-pw
export BS_GRANTS_PW

root() { # SHARD SQL: as root, no database
	timeout 30 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$(t_port "$1")" -u root \
		--connect-timeout=5 -N -B -e "$2"
}
drop_users() {
	for r in $ROLES; do
		root 0 "DROP USER IF EXISTS bs_t_$r@'127.0.0.1'" 2>/dev/null
		root 1 "DROP USER IF EXISTS bs_t_$r@'127.0.0.1'" 2>/dev/null
	done
}
trap drop_users EXIT
drop_users

# grants_for ROLE [ARGS...]: the role's statements from `grants`, shard by
# shard, run on that shard as root
grants_for() {
	_r=$1
	shift
	for i in 0 1; do
		t_exit 0 "grants --role $_r for s$i $*" -- "$B" -c "$CFG" grants --role "$_r" --user "bs_t_$_r" --host 127.0.0.1 --shard "s$i" "$@"
		printf '%s\n' "$T_OUT" >"$T/$_r.s$i.sql"
		t_exit 0 "run them on s$i" -- sh -c "timeout 30 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 \
			-P $(t_port "$i") -u root <'$T/$_r.s$i.sql'"
	done
}
for r in $ROLES; do
	for i in 0 1; do
		root "$i" "CREATE USER bs_t_$r@'127.0.0.1' IDENTIFIED BY '$BS_GRANTS_PW'"
	done
	sed "s/user: root}/user: bs_t_$r, password_env: BS_GRANTS_PW}/" "$CFG" >"$T/$r.yaml"
done
# the cleaner's and console's grants are the database's: before init
grants_for cleaner
grants_for console
as() { # EXIT ROLE DESC ARGS...
	_want=$1 _role=$2 _desc=$3
	shift 3
	t_exit "$_want" "$_role: $_desc" -- "$B" -c "$T/$_role.yaml" "$@"
}
# asql ROLE SHARD SQL: one statement as the role's account; its output and
# error in $T_OUT / $T_ERR
asql() {
	t_exit any "$1 on s$2: $3" -- timeout 30 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$(t_port "$2")" \
		-u "bs_t_$1" -p"$BS_GRANTS_PW" -D bagstore --connect-timeout=5 -N -B -e "$3"
}
# denied ROLE SQL...: each statement refused by the server on both shards
denied() {
	_r=$1
	shift
	for _q in "$@"; do
		for i in 0 1; do
			asql "$_r" "$i" "$_q"
			case $T_RC:$T_ERR in
			0:*) t_fail "$_r may not run on s$i: $_q" "it ran" ;;
			*"command denied to user 'bs_t_$_r'"* | *"Access denied for user 'bs_t_$_r'"*)
				t_ok "$_r may not run on s$i: $_q" ;;
			*) t_fail "$_r may not run on s$i: $_q" "refused, but not for a privilege: $T_ERR" ;;
			esac
		done
	done
}
# allowed ROLE SQL...: each statement runs on s0
allowed() {
	_r=$1
	shift
	for _q in "$@"; do
		asql "$_r" 0 "$_q"
		if [ "$T_RC" = 0 ]; then t_ok "$_r runs: $_q"; else t_fail "$_r runs: $_q" "$T_ERR"; fi
	done
}

# ------------------------------------------------------------ cleaner
as 0 cleaner "init" init
as 0 cleaner "index create on an empty store" index create idx_n --on n:int --shard-on n
t_contains "$T_ERR" "bagstore grants --role app --index idx_n" "index create says the app's grants need the new table"
as 0 cleaner "shards" shards
t_match "$T_OUT" '^s1 .* ok$' "cleaner: the fingerprint agrees"

# the app's and the readonly grants, now that the tables exist
grants_for app
grants_for readonly
t_contains "$(cat "$T/readonly.s0.sql")" 'GRANT SELECT ON `bagstore`.* TO `bs_t_readonly`@`127.0.0.1`;' "readonly: SELECT only"
t_eq "$(grep -c '^GRANT' "$T/readonly.s0.sql")" 1 "readonly: one GRANT"
t_contains "$(cat "$T/app.s0.sql")" 'GRANT INSERT, UPDATE, DELETE ON `bagstore`.`idx_n` TO `bs_t_app`@`127.0.0.1`;' "app: the catalog's index table, by name"
t_eq "$(root 0 "SHOW GRANTS FOR bs_t_app@'127.0.0.1'" | grep 'ON `bagstore`\.\*')" \
	'GRANT SELECT ON `bagstore`.* TO `bs_t_app`@`127.0.0.1`' "the app's one grant on the database is SELECT"
t_eq "$(root 0 "SHOW GRANTS FOR bs_t_app@'127.0.0.1'" | grep -c 'GRANT EXECUTE ON PROCEDURE `bagstore`\.`bagstore_\(put_v1\|put_v2\|delete_v1\)`')" 3 \
	"and EXECUTE on the three write procedures, by name"
t_eq "$(root 0 "SHOW GRANTS FOR bs_t_app@'127.0.0.1'" | grep -c 'bagstore_buckets\|bagstore_map\|bagstore_meta\|bagstore_indexes\|bagstore_moves\|bagstore_jobs')" 0 \
	"the app holds nothing on ownership, the map, the catalog, jobs or moves"

# ------------------------------------------------------------ what each account may not do
denied app "CREATE PROCEDURE bs_t_p() SELECT 1" "DROP PROCEDURE bagstore_put_v1" "DELETE FROM bagstore_audit" "UPDATE bagstore_audit SET detail='x'" "TRUNCATE TABLE bagstore_audit" \
	"UPDATE bagstore_buckets SET state='gone' WHERE bucket=0" "INSERT INTO bagstore_buckets (bucket, state) VALUES (999999, 'owned')" \
	"DELETE FROM bagstore_buckets WHERE bucket=0" \
	"INSERT INTO bagstore_map (version, buckets, store_id, shards, owners) VALUES (999999, 1, 'x', 'x', 'x')" \
	"DELETE FROM bagstore_map" "UPDATE bagstore_meta SET v='x' WHERE k='store_id'" "DELETE FROM bagstore_meta" \
	"UPDATE bagstore_indexes SET state='ready'" "DELETE FROM bagstore_indexes" "DELETE FROM bagstore_moves" \
	"UPDATE bagstore_jobs SET state='cancelled'" "DELETE FROM bagstore_workers" "DELETE FROM bagstore_move_log" \
	"DELETE FROM bagstore_heartbeat" "UPDATE bagstore_verify SET checked=0" "DELETE FROM bagstore_watermarks" \
	"DROP TABLE entities" "DROP TABLE idx_n" "CREATE TABLE t_app (a INT)" "ALTER TABLE entities ADD COLUMN x INT" \
	"CREATE DATABASE bs_t_other" "SELECT User FROM mysql.user" "GRANT SELECT ON bagstore.* TO bs_t_readonly@'127.0.0.1'"
# the statement forms the app's write path runs where it holds per-table grants
allowed app "INSERT INTO bagstore_move_log (move_id, kind, id) VALUES (999999, 0, X'00000000000000000000000000000001') ON DUPLICATE KEY UPDATE n=n+1" \
	"INSERT INTO bagstore_move_log (move_id, kind, id) VALUES (999999, 0, X'00000000000000000000000000000001') ON DUPLICATE KEY UPDATE n=n+1" \
	"INSERT INTO bagstore_audit (os_user, host, action, target, detail) VALUES ('t', 't', 'grants.test', 't', 't')" \
	"SELECT state FROM bagstore_buckets WHERE bucket=0 LOCK IN SHARE MODE" \
	"SELECT state FROM bagstore_buckets WHERE bucket=0 FOR UPDATE"
root 0 "DELETE FROM bagstore.bagstore_move_log WHERE move_id=999999; DELETE FROM bagstore.bagstore_audit WHERE action='grants.test'"
# issue 21, item 8: the readonly account adds no audit row, whatever the order
denied readonly "INSERT INTO bagstore_audit (os_user, host, action, target, detail) VALUES ('t', 't', 't', 't', 't')" \
	"DELETE FROM bagstore_audit" "UPDATE entities SET body=body" "DELETE FROM entities" \
	"INSERT INTO idx_n (n, entity_id) VALUES (1, X'00000000000000000000000000000001')" \
	"INSERT INTO bagstore_intents (token, entity_id) VALUES ('t', X'00000000000000000000000000000001')" \
	"INSERT INTO bagstore_batch_intents (token, part, ids) VALUES ('t', 0, X'00000000000000000000000000000001')" \
	"UPDATE bagstore_buckets SET state='gone' WHERE bucket=0" "DROP TABLE idx_n" "CREATE TABLE t_ro (a INT)"
for r in cleaner console; do
	denied "$r" "CREATE DATABASE bs_t_other" "SELECT User FROM mysql.user" "GRANT SELECT ON bagstore.* TO bs_t_readonly@'127.0.0.1'"
done

# ------------------------------------------------------------ app
awk 'BEGIN { for (i = 1; i <= 40; i++) printf "{\"id\":{\"$uuid\":\"9a700000-0000-4000-8000-%012d\"},\"n\":%d,\"m\":%d}\n", i, i % 4, i }' >"$T/e.jsonl"
as 0 app "put 40 entities" put "$T/e.jsonl"
as 0 app "get one" get 9a700000-0000-4000-8000-000000000007
t_contains "$T_OUT" '"m":7' "app: got it"
as 0 app "query through the index" query idx_n n=3
t_eq "$(printf '%s\n' "$T_OUT" | grep -c '"n":3')" 10 "app: ten entities with n=3"
as 0 app "delete one" delete 9a700000-0000-4000-8000-000000000040
awk 'BEGIN { for (i = 41; i <= 44; i++) printf "{\"id\":{\"$uuid\":\"9a700000-0000-4000-8000-%012d\"},\"n\":%d,\"m\":%d}\n", i, i % 4, i }' >"$T/bulk.jsonl"
as 0 app "bulk put (put --batch)" put --batch 4 "$T/bulk.jsonl"
# the intent's removal is sent without waiting for its answer: a DELETE
# the app may not run would leave the intent behind, silently
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_batch_intents") $(t_sql 1 "SELECT COUNT(*) FROM bagstore_batch_intents")" \
	"0 0" "app: its puts' batch intents are removed (DELETE on bagstore_batch_intents)"
as 0 app "delete them again" delete 9a700000-0000-4000-8000-000000000041
for k in 42 43 44; do "$B" -c "$T/app.yaml" delete "9a700000-0000-4000-8000-0000000000$k" >/dev/null; done
as 0 app "the puts left audit rows (INSERT on bagstore_audit)" audit
t_contains "$T_OUT" "entity.put" "app: its puts are in the audit log"
as 1 app "index create (no CREATE)" index create idx_app --on m:int --shard-on m
t_match "$T_ERR" "(CREATE|DROP|INSERT) command denied to user 'bs_t_app'" "app: the server refuses the DDL, naming the privilege"
t_contains "$T_ERR" "bagstore grants --role ROLE" "app: and says where the roles' privileges are listed"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM bagstore_indexes"; t_sql 0 "SHOW TABLES LIKE 'idx_app'")" 1 "app: no index made"

# ------------------------------------------------------------ cleaner, on data
# the app's grants on idx_m first (a table not made yet: the grant carries
# CREATE), so that no put is refused once the index exists
grants_for app --index idx_m
t_contains "$(cat "$T/app.s0.sql")" 'GRANT INSERT, UPDATE, DELETE, CREATE ON `bagstore`.`idx_m` TO `bs_t_app`@`127.0.0.1`;' "app: a table not made yet"
as 0 cleaner "index create over entities (building, its jobs queued)" index create idx_m --on m:int --shard-on m
printf '{"id":{"$uuid":"9a700000-0000-4000-8000-000000000045"},"n":1,"m":45}\n' >"$T/e45.jsonl"
as 0 app "put while idx_m builds (its rows written by the app)" put "$T/e45.jsonl"
t_eq "$(($(t_sql 0 "SELECT COUNT(*) FROM idx_m WHERE m=45") + $(t_sql 1 "SELECT COUNT(*) FROM idx_m WHERE m=45")))" 1 "app: the entity's idx_m row is written"
as 0 app "delete it" delete 9a700000-0000-4000-8000-000000000045
t_exit 0 "grants --role app, after the create" -- "$B" -c "$CFG" grants --role app --shard s0
t_contains "$T_OUT" 'GRANT INSERT, UPDATE, DELETE ON `bagstore`.`idx_m` TO `bagstore_app`@`%`;' "app: the catalog's idx_m, now without CREATE"
t_exit 2 "grants --index for another role" -- "$B" -c "$CFG" grants --role readonly --index idx_m
t_exit 2 "grants --index naming a table of bagstore's" -- "$B" -c "$CFG" grants --role app --index bagstore_audit
t_contains "$T_ERR" "reserved" "the app is never granted bagstore's own tables by --index"
as 0 cleaner "backfill pause" backfill pause idx_m
as 0 cleaner "backfill resume" backfill resume idx_m
as 0 cleaner "backfill it" cleaner --index idx_m
t_eq "$(t_sql 0 "SELECT state FROM bagstore_indexes WHERE name='idx_m'")" ready "cleaner: the index is ready"
as 0 cleaner "a daemon pass (repair, watermarks, lag)" cleaner --once
t_sql 0 "DELETE FROM idx_m LIMIT 1"
as 1 cleaner "verify finds the row planted missing" verify --index idx_m
as 0 cleaner "verify --repair" verify --repair
as 0 cleaner "lag" lag
t_contains "$T_OUT" "s0" "cleaner: lag lists the shards"

# ------------------------------------------------------------ console
as 0 console "index create" index create idx_c --on n:int,m:int --shard-on m
as 0 console "backfill it" cleaner --index idx_c
printf '{"id":{"$uuid":"9a700000-0000-4000-8000-000000000001"},"n":1,"m":101}\n' >"$T/edit.jsonl"
as 0 console "an edit" put "$T/edit.jsonl"
as 0 console "verify" verify
as 0 console "index drop" index drop idx_c --yes
as 0 console "backfill list" backfill list

# ------------------------------------------------------------ readonly
snapshot() { # every table of both shards, checksummed, and the catalog
	for i in 0 1; do
		for tb in $(t_sql "$i" "SHOW TABLES"); do
			t_sql "$i" "CHECKSUM TABLE \`$tb\`"
		done
	done
}
before=$(snapshot)
as 0 readonly "shards" shards
t_match "$T_OUT" '^s0 .* ok$' "readonly: s0 up, fingerprint agrees"
as 0 readonly "shards --json" shards --json
as 0 readonly "get" get 9a700000-0000-4000-8000-000000000007
t_contains "$T_OUT" '"m":7' "readonly: get reads"
as 0 readonly "query" query idx_m m=7
t_contains "$T_OUT" '"m":7' "readonly: query reads"
as 0 readonly "index list" index list
t_contains "$T_OUT" "idx_m" "readonly: the catalog"
as 0 readonly "backfill list" backfill list
as 0 readonly "lag" lag
as 0 readonly "export" export
t_eq "$(printf '%s\n' "$T_OUT" | grep -c '"m":')" 39 "readonly: export reads every entity"
as 0 readonly "verify" verify
t_contains "$T_OUT" "idx_m: 39 entities checked, 0 missing" "readonly: verify reads every entity"
t_contains "$T_ERR" "not recorded for the console: the account may not write bagstore_verify" "readonly: and says it kept no record"
printf '{"id":{"$uuid":"9a700000-0000-4000-8000-000000000099"},"n":1,"m":1}\n' >"$T/new.jsonl"
refused() { # DESC PRIVILEGE ARGS...: the server refuses, naming the privilege
	_d=$1 _p=$2
	shift 2
	as 1 readonly "$_d is refused" "$@"
	t_match "$T_ERR" "$_p command denied to user 'bs_t_readonly'@'127.0.0.1'" "readonly: $_d: the server names $_p"
}
# drift for --repair to try to fix (the readonly verify above found none)
t_sql 1 "DELETE FROM idx_m LIMIT 1"
before=$(snapshot)
refused "put" 'INSERT(, UPDATE)?' put "$T/new.jsonl"
refused "put (an edit)" 'INSERT(, UPDATE)?' put "$T/edit.jsonl"
refused "bulk put" 'INSERT(, UPDATE)?' put --batch 2 "$T/new.jsonl"
refused "delete" '(DELETE|INSERT)' delete 9a700000-0000-4000-8000-000000000007
refused "index create" '(CREATE|DROP)' index create idx_ro --on m:int --shard-on m
refused "index drop" UPDATE index drop idx_m --yes
refused "backfill pause" UPDATE backfill pause idx_m
refused "verify --repair" '(INSERT|DELETE)(, UPDATE)?' verify --repair
refused "init" CREATE init
as '!0' readonly "a cleaner pass is refused" cleaner --once
t_contains "$T_ERR" "command denied to user 'bs_t_readonly'" "readonly: the cleaner's writes refused by the server"
# the console, on the readonly account: every screen reads
mkdir -p "$T/dumps"
cat >"$T/ro.keys" <<'KEYS'
wait-for s1 30
wait-idle 30
dump shards
keys 2
wait-for idx_m 30
dump indexes
keys 5
wait-idle 30
dump entities
keys 3
wait-idle 30
dump cleaner
keys 4
wait-idle 30
dump backfills
keys :q\n
KEYS
as 0 readonly "the console" --headless "$T/ro.keys" --dump-dir "$T/dumps"
dd() { cat "$T/dumps/$1.txt" 2>/dev/null; }
t_contains "$(dd shards)" "2/2 up" "readonly console: both shards up"
t_contains "$(dd indexes)" "idx_m" "readonly console: the indexes"
t_contains "$(dd entities)" "9a70000000004000800000000000000" "readonly console: entities"
case "$(dd shards)$(dd indexes)$(dd entities)$(dd cleaner)$(dd backfills)" in
*denied*) t_fail "readonly console: no screen is refused" ;;
*) t_ok "readonly console: no screen is refused" ;;
esac
t_eq "$(snapshot)" "$before" "readonly: nothing changed on either shard"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM entities WHERE id=X'9a700000000040008000000000000099'")" 0 "readonly: the refused put left no entity"

# the app may not change the catalog: an index drop with its account is
# refused at its first step, the index stays as it was; the cleaner's
# account drops it (doc/DESIGN.md, Privileges)
as 1 app "index drop (no UPDATE on the catalog, no DROP)" index drop idx_m --yes
t_match "$T_ERR" "(UPDATE|DROP) command denied to user 'bs_t_app'" "app: the server refuses the drop"
t_eq "$(t_sql 0 "SELECT state FROM bagstore_indexes WHERE name='idx_m'")" ready "app: the index is left ready"
as 0 cleaner "index drop, again, with the cleaner's account" index drop idx_m --yes
t_eq "$(t_sql 0 "SHOW TABLES LIKE 'idx_m'"; t_sql 1 "SHOW TABLES LIKE 'idx_m'")" "" "cleaner: the tables are gone"

# a console account granted by an older bagstore (no CREATE ROUTINE):
# init does the rest and names the shards it could not make the write
# procedures on; they stay where they are
for i in 0 1; do root "$i" "REVOKE CREATE ROUTINE ON bagstore.* FROM bs_t_console@'127.0.0.1'"; done
as 0 console "init without CREATE ROUTINE" init
t_contains "$T_OUT" "write procedures not made on s0, s1: the account lacks CREATE ROUTINE" \
	"console: init says where it could not make the write procedures"
t_eq "$(t_sql 0 "SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA='bagstore'")" 3 \
	"and they are still there"
as 0 cleaner "init, with CREATE ROUTINE" init
t_eq "$(printf '%s\n' "$T_OUT" | grep -c 'write procedures not made')" 0 "cleaner: init makes them, and says nothing of them"

# configuration text lands in comments only, one line each: a replica host
# holding a newline cannot splice a statement into the script
cat >"$T/nl.yaml" <<'EOF'
shards:
  - name: s0
    host: 127.0.0.1
    port: 3306
    database: bagstore
    user: root
    replicas:
      - host: "evil\nGRANT ALL ON *.* TO x"
        port: 3308
EOF
t_exit 0 "grants for a replica whose host holds a newline" -- "$B" -c "$T/nl.yaml" grants --role cleaner
t_eq "$(printf '%s\n' "$T_OUT" | grep -c '^GRANT ALL')" 0 "no statement spliced from the configuration"
t_eq "$(printf '%s\n' "$T_OUT" | grep -v '^--' | grep -v '^GRANT [A-Z, ]* ON [^;]* TO [^;]*;$' | grep -vc '^$')" 0 \
	"every line a comment or one whole GRANT"

drop_users
t_done test_grants

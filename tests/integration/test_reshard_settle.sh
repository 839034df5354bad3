#!/bin/sh
# test_reshard_settle.sh - issue 11's lost index row, made to happen: a
# writer races the repair a move runs over the entities it moved, right
# after its cut-over (the two test shards and two more of its own, shard
# 0's port + 2 and + 3, under t_servers reshard-settle).
#
# The move's repair (as every repair) fixed rows from bodies it had read,
# then read the changed entities again and fixed them again, three rounds
# at most, with no read after the last fix: a writer whose entity write
# came after a round's read and whose index rows came before that round's
# fix had them undone, and its entity lost its row (test_reshard under
# ThreadSanitizer, one run in three). Here the mover is stopped before each
# fix reads the rows (fault pause_drift_fix) and the writer moves E's row
# between s0 and s1 four times meanwhile. E must end with its one right
# row, and the reshard must finish.
. tests/lib.sh
T=$(t_tmp)
B=$BAGSTORE
P0=$(t_port 0)
P1=$(t_port 1)
XP=${BAGSTORE_RESHARD_PORT:-$((P0 + 2))}
XD=$(t_servers reshard-settle)
T_TIMEOUT=240

stop_all() { sh "$SHARDS_SH" stop --dir "$XD" >/dev/null 2>&1; }
trap stop_all EXIT
trap 'stop_all; exit 130' INT TERM
t_exit 0 "two more shards" -- t_start_servers 2 "$XP" "$XD"
[ "$T_FAILED" = 0 ] || t_done test_reshard_settle
t_exit 0 "reset them" -- sh "$SHARDS_SH" reset --count 2 --dir "$XD"
cfg() {
	{
		echo "shards:"
		echo "  - {name: s0, host: 127.0.0.1, port: $P0, database: bagstore, user: root}"
		echo "  - {name: s1, host: 127.0.0.1, port: $P1, database: bagstore, user: root}"
		[ "$2" -ge 4 ] && echo "  - {name: s2, host: 127.0.0.1, port: $XP, database: bagstore, user: root}"
		[ "$2" -ge 4 ] && echo "  - {name: s3, host: 127.0.0.1, port: $((XP + 1)), database: bagstore, user: root}"
		echo "catalog_ttl: 1"
	} >"$1"
}
C2=$T/c2.yaml C4=$T/c4.yaml
cfg "$C2" 2
cfg "$C4" 4
q() {
	case $1 in 0) p=$P0 ;; 1) p=$P1 ;; 2) p=$XP ;; 3) p=$((XP + 1)) ;; esac
	timeout 30 mariadb --no-defaults --protocol=tcp -h 127.0.0.1 -P "$p" -u root -N -B bagstore -e "$2"
}
uuid() { printf '%08x-0000-4000-8000-%012x' "$1" "$2"; }
# E's bucket is 2050 (its id mod 4096): s0's, one of those s0 gives to s2;
# its row's bucket is v's own: 2 and 4 and 6 on s0, 3 and 5 on s1, none
# of them moving
E=$(uuid 7 2050)
EH=$(printf '%s' "$E" | tr -d -)
put_v() {
	printf '{"id":{"$uuid":"%s"},"v":%d}\n' "$E" "$1" >"$T/e.json"
	"$B" -c "$C4" put "$T/e.json" >/dev/null
}
state() { awk '{print $3}' "/proc/$1/stat" 2>/dev/null; }
wait_stop() {
	for _ in $(seq 1 1200); do
		case $(state "$1") in
		T) echo stopped; return ;;
		'' | Z) echo gone; return ;;
		esac
		sleep 0.05
	done
	echo running
}

t_exit 0 "init 2 shards" -- "$B" -c "$C2" init
t_exit 0 "index ix_v on v (shard_on v)" -- "$B" -c "$C2" index create ix_v --on v:int --shard-on v
t_exit 0 "ix_v ready" -- "$B" -c "$C2" cleaner --index ix_v
printf '{"id":{"$uuid":"%s"},"v":2}\n' "$E" >"$T/e.json"
t_exit 0 "E, v=2" -- "$B" -c "$C2" put "$T/e.json"
t_exit 0 "init 4 shards" -- "$B" -c "$C4" init
t_exit 0 "reshard start --yes" -- "$B" -c "$C4" reshard start --yes

BAGSTORE_FAULT=pause_drift_fix "$B" -c "$C4" cleaner --reshard >"$T/r.out" 2>"$T/r.err" &
rp=$!
stops=0
for v in 3 4 5 6; do
	[ "$(wait_stop $rp)" = stopped ] || break
	stops=$((stops + 1))
	put_v $v || t_fail "put v=$v while the move's repair is stopped"
	kill -CONT $rp
done
while [ "$(wait_stop $rp)" = stopped ] && [ $stops -lt 40 ]; do
	stops=$((stops + 1))
	kill -CONT $rp
done
wait $rp
t_eq "$?" 0 "cleaner --reshard ends"
t_contains "$(cat "$T/r.out")" "reshard done: 2 moves" "both moves done"
t_contains "$(cat "$T/r.err")" "fault pause_drift_fix" "the move's repair stopped at the fault point"
t_match "$stops" '^([5-9]|[1-3][0-9])$' "it fixed E again after each of the 4 writes, and checked it after the last fix"
t_eq "$(q 2 "SELECT COUNT(*) FROM entities WHERE id=X'$EH'")" 1 "E lives on s2 now"
t_eq "$(q 0 "SELECT GROUP_CONCAT(v) FROM ix_v WHERE entity_id=X'$EH'")" 6 "E's row on s0: v=6, the last write's"
t_eq "$(q 1 "SELECT COUNT(*) FROM ix_v WHERE entity_id=X'$EH'") $(q 2 "SELECT COUNT(*) FROM ix_v WHERE entity_id=X'$EH'") $(q 3 "SELECT COUNT(*) FROM ix_v WHERE entity_id=X'$EH'")" \
	"0 0 0" "and none on s1, s2, s3"
t_exit 0 "verify: no drift" -- "$B" -c "$C4" verify
t_contains "$T_OUT" "1 entities checked, 0 missing, 0 stale, 0 orphaned" "verify: 0 missing, 0 stale"
t_exit 0 "query v=6" -- "$B" -c "$C4" query ix_v v=6
t_contains "$T_OUT" "$E" "the query finds E"

t_done test_reshard_settle

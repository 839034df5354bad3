#!/bin/sh
# test_reshard_estimate.sh - a reshard's time estimate says what it rests
# on (issue 19, item 3): with no move run since the last plan, "no basis"
# and the rate it assumes; after a reshard ran, the rate its moves
# measured on these shards (rows over each move's start to end), which the
# plan's time is computed from; a running move's ETA is its own: the work
# left at the rate of its run so far, marked ~, also while it is held
# (its last 10 s rate 0).
. tests/console/lib.sh

DR=$T/drain.yaml BACK=$T/back.yaml
t_shards_cfg "$DR" 2 "" drain
t_shards_cfg "$BACK" 2
c_init
numbered() { printf '{"n": %d}\n' "$1"; }
c_put 400 numbered

t_exit 0 "reshard plan before any move" -- "$BAGSTORE" -c "$DR" reshard plan
t_contains "$T_OUT" "no basis: no move has run on this store since its last plan; 20000 rows/s assumed" \
	"no move run: the estimate says it has no basis"
versions() { t_sql "$1" "SELECT HEX(id), UNIX_TIMESTAMP(updated), MD5(body) FROM entities"; }
{ versions 0; versions 1; } | sort >"$T/before"
t_exit 0 "drain s1" -- "$BAGSTORE" -c "$DR" reshard start --yes
t_exit 0 "run it" -- "$BAGSTORE" -c "$DR" cleaner --reshard
versions 0 | sort >"$T/after"
t_eq "$(wc -l <"$T/after")" 400 "every entity is on s0"
t_eq "$(cmp "$T/before" "$T/after" && echo same)" same "each with the version and body it had on s1 (to the microsecond)"
measured=$(t_sql 1 "SELECT ROUND((rows_total + index_rows + rows_copied) /
                    (TIMESTAMPDIFF(MICROSECOND, started, finished) / 1e6)) FROM bagstore_moves WHERE state='done'")
t_match "$measured" "^[1-9][0-9]*$" "the move measured a rate ($measured rows/s)"
# back to two shards (s0 the source, at the rate s1's move measured)
t_exit 0 "reshard plan after a reshard" -- "$BAGSTORE" -c "$BACK" reshard plan
t_contains "$T_OUT" "from the last reshard's $measured rows/s (1 move)" "the estimate is the measured rate, and says so"
secs=$(printf '%s\n' "$T_OUT" | sed -n 's/.* ~\([0-9.]*\)s, from the last.*/\1/p')
ents=$(printf '%s\n' "$T_OUT" | sed -n 's/.*moves, ~\([0-9,]*\) entities.*/\1/p' | tr -d ,)
t_match "$secs" "^[0-9]" "the plan's time is given ($secs s for ~$ents entities)"
t_exit 0 "reshard plan --json" -- "$BAGSTORE" -c "$BACK" reshard plan --json
t_contains "$T_OUT" '"rate_measured": true' "json: measured"
t_contains "$T_OUT" '"basis": "from the last reshard' "json: its basis"
printf 'keys 8\nwait-for r previews them\nwait-idle\nkeys r\nwait-for rows/s\ndump preview\nkeys q\nkeys :q\n' >"$T/p.keys"
c_headless "headless: the preview" "$T/p.keys" -c "$BACK"
t_contains "$(d preview)" "from the last reshard's $measured rows/s" "the console's preview says its basis"

# a running move's ETA from its own run: 100 of 1,000 rows in 10 s, held now
t_exit 0 "the move back recorded" -- "$BAGSTORE" -c "$BACK" reshard start --yes
t_sql 0 "UPDATE bagstore_moves SET state='throttled', phase='copy', rows_total=1000, rows_scanned=100,
         index_total=0, rate=0, started=NOW(6) - INTERVAL 10 SECOND, heartbeat=NOW(6),
         worker_host='testvm', worker_pid=4242" >/dev/null
# the seconds the move has run, on s0's clock: its ETA is 19 times them
# (1,900 rows left, 100 done), read between two of these
ran() { t_sql 0 "SELECT TIMESTAMPDIFF(MICROSECOND, started, NOW(6)) / 1e6 FROM bagstore_moves WHERE state='throttled' ORDER BY move_id LIMIT 1"; }
before=$(ran)
t_exit 0 "reshard status --json" -- "$BAGSTORE" -c "$BACK" reshard status --json
after=$(ran)
eta=$(printf '%s\n' "$T_OUT" | sed -n 's/.*"eta_s": \([0-9.]*\).*/\1/p' | head -1)
t_eq "$(awk -v e="$eta" -v b="$before" -v a="$after" 'BEGIN { print (e != "" && e + 0 >= 19 * b - 0.5 && e + 0 <= 19 * a + 0.5) }')" 1 \
	"the ETA is the work left at the move's own rate, while held: $eta s, 19 times the $before to $after s it ran (~190 s)"
t_exit 0 "reshard status" -- "$BAGSTORE" -c "$BACK" reshard status
# (the ETA grows ~9 s for each second between the UPDATE and this read:
# a loaded machine reads it past 3m20s)
t_match "$T_OUT" "~3m[0-5][0-9]s" "the ETA is marked ~"
t_done test_reshard_estimate

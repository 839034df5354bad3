#!/bin/sh
# tests/layers.sh - the house rules, checked on the built objects (make check,
# make layers):
#
#   sh tests/layers.sh [BUILD]
#
# 1. Engine layers: the table at the top of engine/internal.h gives every
#    engine file a layer. From the objects' symbols (nm), a file may call
#    files of its own layer or lower ones, never a higher one, and no two
#    engine files may call each other, directly or round a longer cycle.
# 2. The engine never calls into the program (tui/, views/).
# 3. The program's two rooms: the command line (tui/cli/) and the console
#    (tui/console/, views/) never call each other; only tui/main.c sees
#    both, and both may use tui/common/.
# 3b. The console's core (tui/console/) reaches a view only through its
#    struct view_ops (views/screens.h lists them): of the views' symbols
#    it may use only the view_* tables, never call a view's function.
# 4. Every global symbol of libbagstore.a starts with bs_ (public) or bs__
#    (the engine's own).
# 5. No '%s' (or '%.Ns') spliced into SQL text: values reach SQL as hex
#    literals (bs__buf_hex) and names as identifiers (bs__buf_ident).
#
# Prints each violation and exits 1 when there is any. LAYERS_VERBOSE=1
# prints the engine's file graph too.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
B=${1:-${BUILD:-build}}
case $B in /*) ;; *) B=$ROOT/$B ;; esac
NM=${NM:-nm}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bagstore-layers.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
fail=0
bad() { echo "layers: $*"; fail=1; }

[ -f "$B/libbagstore.a" ] || { echo "layers: $B/libbagstore.a not built"; exit 1; }

# ------------------------------------------------------------ symbol tables
# defs: "SYMBOL FILE" for every global an object defines; uses: "FILE SYMBOL".
syms() { # DIR... -> appends to $TMP/defs and $TMP/uses
	for o in "$@"; do
		[ -f "$o" ] || continue
		f=${o#"$B"/}
		f=${f%.o}
		$NM -g --defined-only "$o" | awk -v f="$f" 'NF == 3 { print $3, f }' >>"$TMP/defs"
		$NM -u "$o" | awk -v f="$f" '{ print f, $NF }' >>"$TMP/uses"
	done
}
: >"$TMP/defs"
: >"$TMP/uses"
# The objects of today's sources (a stale object of a removed file is not).
objs=""
for c in engine/*.c tui/*.c tui/*/*.c views/*.c; do
	[ -f "$c" ] && objs="$objs $B/${c%.c}.o"
done
# shellcheck disable=SC2086
syms $objs

# "CALLER CALLEE" file edges, one per pair.
awk 'NR == FNR { def[$1] = $2; next }
     ($2 in def) && def[$2] != $1 { print $1, def[$2] }' "$TMP/defs" "$TMP/uses" |
	sort -u >"$TMP/edges"
[ "${LAYERS_VERBOSE:-0}" = 1 ] && cat "$TMP/edges"

# ------------------------------------------------------------ 1. engine layers
# The table: lines " *   L<n>  <name>  <file> <file>..." in internal.h.
sed -n 's/^ \*   L\([0-9]\)  *[a-z]*  *\(.*\)$/\1 \2/p' engine/internal.h |
	awk '{ for (i = 2; i <= NF; i++) print "engine/" $i, $1 }' >"$TMP/layer"
[ -s "$TMP/layer" ] || bad "no layer table found at the top of engine/internal.h"
for c in engine/*.c; do
	f=${c%.c}
	grep -q "^$f " "$TMP/layer" || bad "$c has no layer: add it to the table in engine/internal.h"
done
awk 'NR == FNR { L[$1] = $2; next }
     $1 ~ /^engine\// && $2 ~ /^engine\// && ($1 in L) && ($2 in L) && L[$2] > L[$1] {
	printf "layers: %s.c (L%d) calls up into %s.c (L%d)\n", $1, L[$1], $2, L[$2]; bad = 1 }
     END { exit bad }' "$TMP/layer" "$TMP/edges" || fail=1

# Cycles between engine files: depth-first search over the call graph.
awk '$1 ~ /^engine\// && $2 ~ /^engine\// { n[$1]++; adj[$1, n[$1]] = $2; node[$1]; node[$2] }
     function visit(v,    i, w) {
	color[v] = 1; stack[++depth] = v
	for (i = 1; i <= n[v]; i++) {
		w = adj[v, i]
		if (color[w] == 1) { report(w); continue }
		if (!color[w]) visit(w)
	}
	color[v] = 2; depth--
     }
     function report(w,    i, s) {
	s = w
	for (i = depth; i >= 1 && stack[i] != w; i--) s = stack[i] " -> " s
	print "layers: a cycle between engine files: " w " -> " s; bad = 1
     }
     END { for (v in node) if (!color[v]) visit(v); exit bad }' "$TMP/edges" || fail=1

# ------------------------------------------------------------ 2, 3. the program
awk '$1 ~ /^engine\// && $2 !~ /^engine\// {
	print "layers: the engine calls the program: " $1 ".c -> " $2 ".c"; bad = 1 }
     function room(f) {
	if (f ~ /^tui\/cli\//) return "cli"
	if (f ~ /^tui\/console\// || f ~ /^views\//) return "console"
	return ""
     }
     room($1) != "" && room($2) != "" && room($1) != room($2) {
	print "layers: the " room($1) " calls the " room($2) ": " $1 ".c -> " $2 ".c (only tui/main.c sees both)"; bad = 1 }
     END { exit bad }' "$TMP/edges" || fail=1

# ------------------------------------------------------------ 3b. the console's core and its views
# The console's core (tui/console/) reaches a view only through its struct
# view_ops, from the one list of screens (views/screens.h): the view_*
# tables are the only views' symbols it may use. Views call the core.
awk 'NR == FNR { def[$1] = $2; next }
     $1 ~ /^tui\/console\// && ($2 in def) && def[$2] ~ /^views\// && $2 !~ /^view_/ {
	print "layers: the console core calls a view by name: " $1 ".c -> " $2 " (" def[$2] ".c); reach it through its view_ops (views/screens.h)"; bad = 1 }
     END { exit bad }' "$TMP/defs" "$TMP/uses" || fail=1

# ------------------------------------------------------------ 4. prefixes
$NM -g --defined-only "$B/libbagstore.a" | awk 'NF == 3 && $3 !~ /^bs_/ {
	print "layers: libbagstore.a exports " $3 " without the bs_ / bs__ prefix"; bad = 1 }
	END { exit bad }' || fail=1

# ------------------------------------------------------------ 5. SQL literals
# Only the engine speaks SQL. A quoted '%s' is SQL text on a line that is
# not a message (bs_error, snprintf, fprintf and their continuation lines),
# and on any line that holds an SQL keyword.
awk -v q="'" '
	/bs_error\(|snprintf\(|fprintf\(|cli_usage_error\(/ { msg = 1 }
	$0 ~ q "%[-0-9.*]*s" q && (!msg || $0 ~ /(SELECT|INSERT|UPDATE|DELETE|WHERE|VALUES|FROM|INTO|LOCK|CREATE|DROP|TABLE|LIKE|DO|SET) /) {
		printf "%s:%d: %s\n", FILENAME, FNR, $0; found = 1 }
	/;[ \t]*$/ { msg = 0 }
	END { exit !found }' engine/*.c engine/*.h &&
	bad "'%s' spliced into SQL text (above): use bs__buf_hex for values, bs__buf_ident for names"

if [ "$fail" = 0 ]; then
	echo "layers: ok ($(wc -l <"$TMP/layer") engine files in layers, $(wc -l <"$TMP/edges") calls between files)"
fi
exit "$fail"

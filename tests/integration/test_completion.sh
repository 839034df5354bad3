#!/bin/sh
# test_completion.sh - `bagstore completion bash|zsh`: the scripts parse
# (bash -n, zsh -n), and the bash one, loaded into bash and called as bash
# calls it on TAB (and the zsh one under zsh, for a few), completes commands, a group's
# subcommands, options, an option's choices, the engine's role names, and
# index and shard names read through the configuration typed after -c (not
# $BAGSTORE_CONFIG, which names nothing here); an index created a moment
# ago is among them. `completion --list` prints the names one a line;
# another shell is a usage error.
. tests/lib.sh

B=$BAGSTORE
C=$BAGSTORE_TEST_CONFIG
T=$(t_tmp)

t_exit 0 "init" -- "$B" -c "$C" init
t_exit 0 "create ix_alpha" -- "$B" -c "$C" index create ix_alpha --on k:int --shard-on k
t_exit 0 "create ix_beta" -- "$B" -c "$C" index create ix_beta --on t:string --shard-on t

t_exit 0 "completion bash" -- "$B" completion bash
cp "$T_OUT_FILE" "$T/bagstore.bash"
t_exit 0 "bash -n parses it" -- bash -n "$T/bagstore.bash"
t_exit 0 "completion zsh" -- "$B" completion zsh
cp "$T_OUT_FILE" "$T/_bagstore"
t_contains "$(head -n 1 "$T/_bagstore")" "#compdef bagstore" "the zsh script is a completion function file"
if command -v zsh >/dev/null 2>&1; then
	t_exit 0 "zsh -n parses it" -- zsh -n "$T/_bagstore"
	# zsh's bashcompinit runs the same function; zsh itself then filters the
	# candidates by what is typed, so only empty words are asked here.
	# compdef is compinit's: a stub stands for it.
	cat >"$T/complete.zsh" <<'ZSH'
compdef() { :; }
source "$1"
shift
COMP_WORDS=("$@")
COMP_CWORD=$(($# - 1))
unset BAGSTORE_CONFIG
_bagstore
print -r -- ${(o)COMPREPLY}
ZSH
	zcomplete() { zsh -f "$T/complete.zsh" "$T/_bagstore" "$@" 2>&1; }
	t_eq "$(zcomplete "$B" index "")" "create drop list" "zsh: bagstore index <TAB>"
	t_eq "$(zcomplete "$B" export --order "")" "added newest" "zsh: an option's choices"
	t_eq "$(zcomplete "$B" -c "$C" index drop "")" "ix_alpha ix_beta" "zsh: index names, through -c FILE"
	t_eq "$(zcomplete "$B" -c "$C" export --shard "")" "s0 s1" "zsh: shard names"
else
	t_fail "zsh is not installed (scripts/deps.sh installs it)"
fi
t_exit 2 "another shell is a usage error" -- "$B" completion fish
t_contains "$T_ERR" "bash or zsh" "and says which shells"

t_exit 0 "--list shards" -- "$B" -c "$C" completion --list shards
t_eq "$(printf '%s' "$T_OUT" | tr '\n' ' ')" "s0 s1" "the configuration's shard names"
t_exit 0 "--list indexes" -- "$B" -c "$C" completion --list indexes
t_eq "$(printf '%s' "$T_OUT" | tr '\n' ' ')" "ix_alpha ix_beta" "the store's index names"

# complete WORDS...: COMPREPLY, sorted, for the last word, as bash asks on TAB
cat >"$T/complete.bash" <<'SH'
. "$1"
shift
COMP_WORDS=("$@")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
unset BAGSTORE_CONFIG
_bagstore
((${#COMPREPLY[@]})) && printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' '
SH
complete() { bash "$T/complete.bash" "$T/bagstore.bash" "$@" 2>&1; }

t_eq "$(complete "$B" ind)" "index " "bagstore ind<TAB>: index"
t_eq "$(complete "$B" "")" \
	"audit backfill buckets cleaner completion delete explain export get grants index init lag properties put query reshard shards throttle verify workers " \
	"bagstore <TAB>: every command and group of the table"
t_eq "$(complete "$B" index "")" "create drop list " "bagstore index <TAB>: its subcommands"
t_eq "$(complete "$B" --read-only reshard s)" "start status " "after a global option too"
t_eq "$(complete "$B" query --l)" "--limit " "an option"
t_eq "$(complete "$B" get --)" "--help --yaml " "options from the usage, and --help"
t_eq "$(complete "$B" shards --)" "--help --json " "each command its own options"
t_eq "$(complete "$B" export --order "")" "added newest " "an option's choices"
t_eq "$(complete "$B" grants --role "")" "app cleaner console readonly " "the engine's role names"
t_eq "$(complete "$B" completion "")" "bash zsh " "a positional's choices"
t_eq "$(complete "$B" -c "$C" index drop "")" "ix_alpha ix_beta " "index names, through -c FILE"
t_eq "$(complete "$B" -c "$C" query ix_)" "ix_alpha ix_beta " "a query's INDEX"
t_eq "$(complete "$B" -c "$C" query ix_alpha "")" "" "nothing for PROP=VALUE"
t_eq "$(complete "$B" -c "$C" backfill pause --help ix_b)" "ix_beta " "past an option"
t_eq "$(complete "$B" -c "$C" export --shard "")" "s0 s1 " "shard names, through -c FILE"
t_eq "$(complete "$B" -c "$C" export --limit 3 --index "")" "ix_alpha ix_beta " "an option's index names"
t_eq "$(complete "$B" index create "")" "" "a new index's NAME completes nothing"
t_eq "$(complete "$B" index drop "")" "" "without -c, ./bagstore.yaml: no names, no error"
t_eq "$(complete "$B" -c "$T" index drop "")" "" "a configuration that does not load: no names, no error"

t_done test_completion

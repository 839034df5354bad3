#!/bin/sh
# An $EDITOR for tests: leaves YAML that does not parse; given that file
# again, mends it (the broken line becomes a title).
if grep -q '^title: \[unclosed' "$1"; then
	sed -i 's/^title: \[unclosed$/title: mended in the console/' "$1"
else
	printf 'title: [unclosed\n' >>"$1"
fi

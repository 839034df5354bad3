#!/bin/sh
# An $EDITOR for tests: while the operator edits, someone else writes the
# same entity (through the CLI); then the operator's edit is made.
id=$(sed -n 's/^id: !uuid //p' "$1")
printf '{"id": {"$uuid": "%s"}, "title": "changed elsewhere"}\n' "$id" |
	"$BAGSTORE" -c "$BAGSTORE_TEST_CONFIG" put - >/dev/null
sed -i 's/^title: .*/title: my edit/' "$1"

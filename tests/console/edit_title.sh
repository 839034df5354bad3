#!/bin/sh
# An $EDITOR for tests: changes the title line of the YAML it is given.
sed -i 's/^title: .*/title: edited in the console/' "$1"

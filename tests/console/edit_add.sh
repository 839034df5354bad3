#!/bin/sh
# An $EDITOR for tests: adds properties to a new entity.
printf 'title: created in the console\nuser_id: !uuid f48b0000-0000-4000-8000-000000000009\n' >>"$1"

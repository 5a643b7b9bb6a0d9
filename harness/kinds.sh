#!/bin/sh
# kinds.sh: the routine kinds, one name a line in enum order: the names of the CF_KINDS
# rows in records.h beside this script, for the shell scripts that check a routine's
# kind= line (link-executor.sh, .clusterfuzzlite/build.sh). A row begins
# `X(ENUM, "name", ...`; tests/test_records.py holds this list to the tool's, which reads
# the same rows (tool/copyfuzz/cheader.py).
set -eu
here=${0%/*}
[ "$here" != "$0" ] || here=.
sed -n '/^#define CF_KINDS(X)/,/^$/s/^[[:space:]]*X([A-Z_][A-Z_0-9]*, "\([a-z_][a-z_0-9]*\)".*/\1/p' \
	"$here/records.h"

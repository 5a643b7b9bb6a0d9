#!/bin/sh
# extable-format.sh READELF OBJECT
# Tells the exception-table format of a routine's object file from the
# relocations against __ex_table: absolute pointer pairs are relocated with
# R_RISCV_64/R_RISCV_32, relative entries with ADD32/SUB32 pairs or 32_PCREL.
# Prints the C macro for harness/target.c: CF_EXTABLE_ABS, _REL or _NONE.
set -eu
readelf=$1 obj=$2
types=$("$readelf" -rW "$obj" | awk '
	/^Relocation section/ { in_table = ($3 ~ /__ex_table/) ; next }
	in_table && /R_RISCV_/ { print $3 }')
if [ -z "$types" ]; then
	if "$readelf" -SW "$obj" | grep -q '__ex_table'; then
		echo "$obj: __ex_table has no relocations; cannot tell its format" >&2
		exit 2
	fi
	echo CF_EXTABLE_NONE
elif echo "$types" | grep -Eq '^R_RISCV_(64|32)$'; then
	echo CF_EXTABLE_ABS
elif echo "$types" | grep -Eq '^R_RISCV_(ADD32|SUB32|32_PCREL)$'; then
	echo CF_EXTABLE_REL
else
	echo "$obj: unknown relocations against __ex_table: $types" >&2
	exit 2
fi

#!/bin/sh
# extable-format.sh READELF OBJECT
# Tells the exception-table format of a routine's object file from the relocations
# against __ex_table, named per architecture in harness/arch/<arch>/target.mk (the
# environment's CF_LINK_EXTABLE_ABS_RELOCS and _REL_RELOCS, extended regexes):
#   absolute pointer pairs                      CF_EXTABLE_ABS
#   relative { int insn, fixup; short type, data; }   CF_EXTABLE_REL   (12 bytes)
#   relative { int insn, fixup; }               CF_EXTABLE_REL8  (8 bytes: arm64 4.6-5.15)
# The two relative layouts use the same relocations; they differ in where the entries
# start: a relocation at an offset of 8 modulo 12 (the second entry's insn, 8 bytes in),
# or a table whose size is not a multiple of 12, is the 8-byte layout.
# Prints the C macro for harness/target.c, or CF_EXTABLE_NONE without a table.
set -eu
readelf=$1 obj=$2
abs=${CF_LINK_EXTABLE_ABS_RELOCS:?set by the Makefile (target.mk)}
rel=${CF_LINK_EXTABLE_REL_RELOCS:?set by the Makefile (target.mk)}
relocs=$("$readelf" -rW "$obj" | awk '
	/^Relocation section/ { in_table = ($3 ~ /__ex_table/) ; next }
	in_table && $1 ~ /^[0-9a-f]+$/ && NF >= 3 { print $1, $3 }')
types=$(printf '%s\n' "$relocs" | awk 'NF { print $2 }' | sort -u)
if [ -z "$types" ]; then
	if "$readelf" -SW "$obj" | grep -q '__ex_table'; then
		echo "$obj: __ex_table has no relocations; cannot tell its format" >&2
		exit 2
	fi
	echo CF_EXTABLE_NONE
elif ! printf '%s\n' "$types" | grep -Evq "^($abs)\$"; then
	echo CF_EXTABLE_ABS
elif ! printf '%s\n' "$types" | grep -Evq "^($rel)\$"; then
	size=$("$readelf" -SW "$obj" | awk '{ sub(/^ *\[ *[0-9]+\] +/, "") } $1 == "__ex_table" { print $5; exit }')
	layout=CF_EXTABLE_REL
	[ $((0x${size:-0} % 12)) -eq 0 ] || layout=CF_EXTABLE_REL8
	for off in $(printf '%s\n' "$relocs" | awk '{ print $1 }'); do
		[ $((0x$off % 12)) -ne 8 ] || layout=CF_EXTABLE_REL8
	done
	echo "$layout"
else
	echo "$obj: unknown relocations against __ex_table: $(echo "$types" | paste -sd" " -)" >&2
	exit 2
fi

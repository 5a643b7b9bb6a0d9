#!/bin/sh
# shellcheck disable=SC2086 # CF_LINK_* are word lists, split on purpose (globbing is off)
# link-executor.sh HARNESS_O SRC OUT NAME SYMBOL KIND [ASFLAG...]
#
# Links one executor: the routine SRC, assembled with the ASFLAGs, its .text and .fixup
# renamed to the sections the harness bounds it by; harness/target.c compiled with the
# routine's name, symbol, kind and exception-table format; and HARNESS_O.
#
# The one link recipe: the Makefile runs it for bundled routines, the tool (build.py) for
# files from outside the tree. Every file name is an argument and only ever expanded
# quoted: nothing in a name reaches make, a shell or the preprocessor as code. The
# toolchain comes from the environment as word lists, like make's variables:
# CF_LINK_CC, _OBJCOPY, _NM, _READELF, _ARCH_FLAGS, _TFLAGS, _LIBGCC (the Makefile exports
# them; `make link-env` prints them for the tool). Run from the repository root.
#
# OUT appears whole or not at all: everything is built in a directory of its own beside
# OUT and renamed into place, so concurrent links of one executor all succeed and a
# reader never sees half a file.
set -eu
[ "${V-}" != 1 ] || set -x
if [ $# -lt 6 ]; then
	echo "usage: harness/link-executor.sh HARNESS_O SRC OUT NAME SYMBOL KIND [ASFLAG...]" >&2
	exit 2
fi
harness=$1 src=$2 out=$3 name=$4 symbol=$5 kind=$6
shift 6
set -f # the toolchain variables are split into words, never globbed

case $kind in
copy | clear | memcpy | memset | memmove) ;;
*) echo "$src: kind '$kind' is not copy, clear, memcpy, memset or memmove" >&2; exit 2 ;;
esac
# The symbol is C code in harness/target.c (its declaration): an identifier only.
case $symbol in
'' | [0-9]* | *[!A-Za-z0-9_\$]*)
	echo "$src: '$symbol' is not a symbol the harness can call (a C identifier)" >&2
	exit 2
	;;
esac
KIND=$(printf '%s' "$kind" | tr '[:lower:]' '[:upper:]')
# The name becomes a C string literal: every character that would need escaping is '_'.
cname=$(printf '%s' "$name" | tr -c 'A-Za-z0-9_./:+@,=-' '_')

dir=${out%/*}
[ "$dir" != "$out" ] || dir=.
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.link.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' HUP INT TERM
obj=$tmp/routine.o

$CF_LINK_CC $CF_LINK_ARCH_FLAGS -g "$@" -c "$src" -o "$obj"
$CF_LINK_OBJCOPY --rename-section .text=cf_target_text --rename-section .fixup=cf_target_fixup "$obj"
if ! $CF_LINK_NM "$obj" | sed -n 's/^[0-9A-Fa-f]* [TtW] //p' | grep -Fqx -e "$symbol"; then
	echo "$src: symbol '$symbol' is not defined there" >&2
	exit 2
fi
fmt=$(sh harness/extable-format.sh "$CF_LINK_READELF" "$obj")
$CF_LINK_CC $CF_LINK_TFLAGS "-DCF_TARGET_NAME=\"$cname\"" "-DCF_TARGET_SYMBOL=$symbol" \
	"-DCF_TARGET_KIND=CF_KIND_$KIND" "-DCF_TARGET_EXTABLE=$fmt" -c harness/target.c -o "$tmp/target.o"
$CF_LINK_CC $CF_LINK_ARCH_FLAGS -nostdlib -static -no-pie -Wl,--no-relax -o "$tmp/executor" \
	"$harness" "$tmp/target.o" "$obj" $CF_LINK_LIBGCC
mv -f "$tmp/executor" "$out"

#!/usr/bin/env bash
# shellcheck disable=SC2086 # CF_LINK_* are word lists, split on purpose (globbing is off)
# link-executor.sh [--with FILE]... [--defsym NAME=VALUE]... [--deps FILE] [--] HARNESS_O SRC OUT NAME SYMBOL KIND [ASFLAG...]
# link-executor.sh --object [--with FILE]... [--] - SRC OUT.o - - - [ASFLAG...]
#
# Links one executor: the routine SRC (and every --with FILE, .S or .c), built with the
# ASFLAGs as the kernel and bare-metal libraries build them (no PIC/PIE, medany: `la` is
# auipc+addi, never a GOT load); every executable section of the result renamed to the
# section the harness bounds the routine by (cf_target_text; .fixup to cf_target_fixup),
# so code in .text.memcpy, .noinstr.text or any "ax" section is the routine's like .text;
# harness/target.c compiled with the routine's name, symbol, kind and exception-table
# format; and HARNESS_O. Each --defsym is passed to the linker as it is.
#
# The one link recipe: the Makefile runs it for bundled routines, the tool (build.py) for
# files from outside the tree. Every file name is an argument and only ever expanded
# quoted: nothing in a name reaches make, a shell or the preprocessor as code. The
# toolchain comes from the environment as word lists, like make's variables:
# CF_LINK_CC, _OBJCOPY, _READELF, _ARCH_FLAGS, _ROUTINE_FLAGS, _TFLAGS, _LIBGCC (the
# Makefile exports them; `make link-env` prints them for the tool). Run from the
# repository root.
#
# --deps FILE: also write there, once OUT is in place, what the compiler read (its -MD
# rules: SRC, the --with files, harness/target.c and every header they include), for the
# tool's up-to-date check (build.py).
#
# --object: only build SRC (and the --with files) into the one relocatable object the
# link would use, at OUT.o: the tool reads its symbols (which names share an address).
#
# Exit 2: a build step failed (its own messages shown). Exit 3: the file built but cannot
# be linked as this routine (a missing or data symbol, undefined references); the one
# line on stderr says why (without the file name, which may hold anything), for the tool
# to show after the file name.
#
# OUT appears whole or not at all: everything is built in a directory of its own beside
# OUT and renamed into place, so concurrent links of one executor all succeed and a
# reader never sees half a file.
set -eu
[ "${V-}" != 1 ] || set -x
usage() {
	echo "usage: harness/link-executor.sh [--with FILE]... [--defsym NAME=VALUE]... [--] HARNESS_O SRC OUT NAME SYMBOL KIND [ASFLAG...]" >&2
	exit 2
}
withs=()
defsyms=()
object_only=
deps=
while [ $# -gt 0 ]; do
	case $1 in
	--object)
		object_only=1
		shift
		;;
	--with)
		[ $# -ge 2 ] || usage
		withs+=("$2")
		shift 2
		;;
	--defsym)
		[ $# -ge 2 ] || usage
		defsyms+=("$2")
		shift 2
		;;
	--deps)
		[ $# -ge 2 ] || usage
		deps=$2
		shift 2
		;;
	--)
		shift
		break
		;;
	*) break ;;
	esac
done
[ $# -ge 6 ] || usage
harness=$1 src=$2 out=$3 name=$4 symbol=$5 kind=$6
shift 6
set -f # the toolchain variables are split into words, never globbed

if [ -z "$object_only" ]; then
	here=${0%/*}
	[ "$here" != "$0" ] || here=.
	kinds=$("$here/kinds.sh") # the names of CF_KINDS in records.h
	known=
	while read -r k; do
		[ "$k" != "$kind" ] || known=1
	done <<<"$kinds"
	if [ -z "$known" ]; then
		echo "$src: kind '$kind' is not one of:" $kinds >&2
		exit 2
	fi
	# The symbol is C code in harness/target.c (its declaration): an identifier only.
	case $symbol in
	'' | [0-9]* | *[!A-Za-z0-9_\$]*)
		echo "$src: '$symbol' is not a symbol the harness can call (a C identifier)" >&2
		exit 2
		;;
	esac
fi
# The name becomes a C string literal: every character that would need escaping is '_'
# (each byte of one: C's collation, where [A-Z] is those 26 letters and nothing else; in a
# subshell, which leaves the caller's locale, even one not installed, as it was).
KIND=$(LC_ALL=C && printf '%s' "${kind^^}")
cname=$(LC_ALL=C && printf '%s' "${name//[!A-Za-z0-9_.\/:+@,=-]/_}")

dir=${out%/*}
[ "$dir" != "$out" ] || dir=.
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.link.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' HUP INT TERM
obj=$tmp/routine.o
dfiles=() # the compiler's -MD rules, for --deps

# build SRC OBJ ASFLAG...: one source of the routine. Assembly as the kernel assembles
# it; C (a --with helper) as the harness's own C is compiled (TFLAGS: freestanding,
# no PIC, medany), with the same -I/-D.
build() {
	local in=$1 o=$2
	shift 2
	dfiles+=("$o.d")
	case $in in
	*.c) $CF_LINK_CC $CF_LINK_TFLAGS "$@" -MD -MF "$o.d" -c "$in" -o "$o" ;;
	*) $CF_LINK_CC $CF_LINK_ARCH_FLAGS $CF_LINK_ROUTINE_FLAGS -g "$@" -MD -MF "$o.d" -c "$in" -o "$o" ;;
	esac
}

if [ ${#withs[@]} -eq 0 ]; then
	build "$src" "$obj" "$@"
else
	# The routine and its companions are one relocatable object: everything below
	# (sections, symbols, the table's format) is about all of them together.
	parts=("$tmp/main.o")
	build "$src" "$tmp/main.o" "$@"
	i=0
	for w in "${withs[@]}"; do
		i=$((i + 1))
		build "$w" "$tmp/with$i.o" "$@"
		parts+=("$tmp/with$i.o")
	done
	$CF_LINK_CC $CF_LINK_ARCH_FLAGS -nostdlib -r -Wl,--no-relax -o "$obj" "${parts[@]}"
fi

if [ -n "$object_only" ]; then
	mv "$obj" "$out"
	exit 0
fi

# symbols FILE: "BIND TYPE SECTION CODE WHERE NAME" for each named symbol of FILE but the
# assembler's local labels (.L) and mapping symbols ($x, $a, $d, $t...). SECTION: its
# index, UND, ABS or COM. CODE: 1 when the harness may call it, a function or a plain
# label (FUNC, NOTYPE) in an executable section (not an object there, nor an indirect
# function's resolver, IFUNC). WHERE: "in" its section's name, absolute, common or
# undefined. From readelf, not nm: nm loads every linker plugin it finds, LLVM's among
# them, 40 ms a call where readelf takes 3 ms.
symbols() {
	$CF_LINK_READELF -SW -sW "$1" | awk '
		/^ *\[ *[0-9]+\]/ {
			i = $0; sub(/^ *\[ */, "", i); sub(/\].*/, "", i)
			f = $0; sub(/^[^]]*\] +/, "", f); split(f, w)
			name[i] = w[1]
			if (w[7] ~ /X/) exec[i] = 1
			next
		}
		$1 ~ /^[0-9]+:$/ && NF >= 8 && $4 != "SECTION" && $4 != "FILE" && $NF !~ /^(\.L|\$[adtx]([.0-9a-z_]|$))/ {
			ndx = $(NF - 1)
			where = ndx == "UND" ? "undefined" : ndx == "ABS" ? "absolute" : ndx == "COM" ? "common" : \
				(ndx in name) ? "in " name[ndx] : "in section " ndx
			code = (ndx in exec) && ($4 == "FUNC" || $4 == "NOTYPE")
			print $5, $4, ndx, code ? 1 : 0, where, $NF
		}'
}
# Read before the sections are renamed below, so that WHERE is the file's own name.
syms=$(symbols "$obj")

# Every executable section is the routine's code: .fixup (and ARM's .text.fixup) into
# cf_target_fixup, the rest into cf_target_text (the linker puts sections of one name
# together). Its other
# allocated sections but the table are its own data, cf_target_data: the plugin's memory
# audit lets the routine load from there (a threshold it reads by symbol).
renames=()
while read -r sec flags; do
	case $sec:$flags in
	cf_target_text:* | cf_target_fixup:* | cf_target_data:* | __ex_table:*) ;;
	.fixup:*X* | .text.fixup:*X*) renames+=(--rename-section "$sec=cf_target_fixup") ;;
	*:*X*) renames+=(--rename-section "$sec=cf_target_text") ;;
	.note*:* | .comment:*) ;;
	*:*A*) renames+=(--rename-section "$sec=cf_target_data") ;;
	esac
done < <($CF_LINK_READELF -SW "$obj" | awk '
	/^ *\[ *[0-9]+\]/ {
		sub(/^[^]]*\] +/, "")
		if (NF == 10) print $1, $7
	}')
if [ ${#renames[@]} -gt 0 ]; then
	$CF_LINK_OBJCOPY "${renames[@]}" "$obj"
fi

# The symbol must be code of the file. Otherwise say what it is, or what the file does
# define (exit 3: one line for the user).
found=$(printf '%s\n' "$syms" | awk -v s="$symbol" '$NF == s && $3 != "UND" { $NF = ""; print; exit }')
read -r _ type _ code where <<<"$found" || true
case $code:$type in
1:*) ;;
:*)
	defined=$(printf '%s\n' "$syms" | awk '$4 == 1 { print $NF }' |
		sort -u | head -n 40 | paste -sd, - | sed 's/,/, /g')
	echo "symbol '$symbol' is not defined there; the functions it defines: ${defined:-none}" >&2
	exit 3
	;;
*:IFUNC)
	echo "symbol '$symbol' is an indirect function (IFUNC, $where): its resolver picks the code when the" \
		"program loads, so it is not the routine; give the symbol of the code itself" >&2
	exit 3
	;;
*)
	echo "symbol '$symbol' is data (type $type, ${where% }), not a function the harness can call" >&2
	exit 3
	;;
esac

# Undefined references: named before the link, with the flags that supply them. What the
# harness itself defines (globally) is not missing; neither is a --defsym.
# The harness's names are read once per harness object (45 ms: thousands of symbols) and
# kept beside it under the object's identity: device, inode, size, modification and
# change times, taken before the read, so an object replaced meanwhile (or copied with
# its times) never matches what was kept. The first line is that identity.
kept=$harness.globals
identity=$(stat -L -c '%d %i %s %.9Y %.9Z' -- "$harness" 2>/dev/null) || identity=
provided=
if [ -n "$identity" ] && [ -f "$kept" ]; then
	{ IFS= read -r line && [ "$line" = "$identity" ] && IFS= read -r -d '' provided; } <"$kept" 2>/dev/null || true
fi
if [ -z "$provided" ]; then # none kept (or none read): the harness always defines some
	provided=$(symbols "$harness" | awk '$1 != "LOCAL" && $3 != "UND" { print $NF }')
	if [ -n "$identity" ] && [ -n "$provided" ]; then # kept if the directory takes it
		{ new=$(mktemp "$kept.XXXXXX") && printf '%s\n%s' "$identity" "$provided" >"$new" &&
			mv -f "$new" "$kept"; } 2>/dev/null || rm -f "${new:-}" 2>/dev/null || true
	fi
fi
for d in ${defsyms[@]+"${defsyms[@]}"}; do
	provided=$provided$'\n'${d%%=*}
done
missing=$(PROVIDED=$provided awk '
	BEGIN { n = split(ENVIRON["PROVIDED"], p, "\n"); for (i = 1; i <= n; i++) have[p[i]] = 1 }
	$1 == "GLOBAL" && $3 == "UND" && !($NF in have) { print $NF }' <<<"$syms")
if [ -n "$missing" ]; then
	missing=$(printf '%s\n' "$missing" | sort -u | paste -sd, - | sed 's/,/, /g')
	echo "undefined symbols: $missing: nothing in the file defines them; add the file that does" \
		"with --with FILE.S (or FILE.c), or give each a value with --defsym NAME=VALUE" >&2
	exit 3
fi

fmt=$(sh harness/extable-format.sh "$CF_LINK_READELF" "$obj")
$CF_LINK_CC $CF_LINK_TFLAGS "-DCF_TARGET_NAME=\"$cname\"" "-DCF_TARGET_SYMBOL=$symbol" \
	"-DCF_TARGET_KIND=CF_KIND_$KIND" "-DCF_TARGET_EXTABLE=$fmt" -MD -MF "$tmp/target.o.d" -c harness/target.c \
	-o "$tmp/target.o"
dfiles+=("$tmp/target.o.d")
ldflags=()
for d in ${defsyms[@]+"${defsyms[@]}"}; do
	ldflags+=(-Xlinker --defsym -Xlinker "$d")
done
$CF_LINK_CC $CF_LINK_ARCH_FLAGS -nostdlib -static -no-pie -Wl,--no-relax -o "$tmp/executor" \
	"$harness" "$tmp/target.o" "$obj" ${ldflags[@]+"${ldflags[@]}"} $CF_LINK_LIBGCC
mv -f "$tmp/executor" "$out"
if [ -n "$deps" ]; then
	cat "${dfiles[@]}" >"$deps"
fi

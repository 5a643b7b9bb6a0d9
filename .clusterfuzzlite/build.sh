#!/bin/bash
# SPDX-License-Identifier: MIT
#
# build.sh - copyfuzz's fuzz targets for ClusterFuzzLite; also an OSS-Fuzz build.sh
# (same contract: $SRC, $OUT, $WORK, $CC/$CXX/$CFLAGS/$CXXFLAGS, $LIB_FUZZING_ENGINE).
#
# One libFuzzer target per bundled routine (arch/<arch>/*.S of every architecture, not
# the mutants), named <routine with / and - as _>_fuzzer, e.g. riscv_copy_user_fuzzer,
# arm64_copy_from_user_fuzzer. Only $OUT reaches the machine that runs them, so
# everything a target needs goes to $OUT/copyfuzz/ (a subdirectory: nothing there may
# look like a fuzz target):
#   <routine>.elf      the routine's executor (static)
#   cfplugin.so        the QEMU coverage plugin (plain $CC: it is loaded into qemu)
#   qemu/qemu-riscv64  a dynamic, plugin-capable qemu per architecture (qemu-aarch64,
#                      qemu-arm: each architecture's QEMU, harness/arch/<arch>/target.mk),
#   qemu/lib/, and     their shared libraries, and
#                      qemu/ld.so, their loader: run as ld.so --library-path lib ...
# plus <target>.options and, from corpora/<routine stem>/, <target>_seed_corpus.zip.
# fuzz/driver.c's header comment says how a target finds these files (fuzz/driver_config.c).
#
# Variables of our own (none is needed on ClusterFuzzLite):
#   COPYFUZZ_EXTRA_TARGETS  more routines, e.g. "riscv/mutants/wrong-shift" (space or
#                           comma separated): for verifying the set-up only, never by default
#   COPYFUZZ_BUNDLE_QEMU    the qemu-riscv64 to bundle [the one on PATH]; the other
#                           architectures' come from PATH
#   COPYFUZZ_SMOKE=0        skip the short run of one target per architecture from $OUT
#   CROSS_COMPILE           the riscv64 toolchain prefix [riscv64-linux-gnu-];
#   CROSS_COMPILE_ARM64, CROSS_COMPILE_ARM  arm64's and ARM's [target.mk's defaults]
set -euo pipefail

: "${SRC:?SRC must be set (the fuzzing service sets it)}"
: "${OUT:?OUT must be set}"
: "${WORK:?WORK must be set}"
CC=${CC:-clang}
CXX=${CXX:-clang++}
CFLAGS=${CFLAGS:-}
CXXFLAGS=${CXXFLAGS:-}
LIB_FUZZING_ENGINE=${LIB_FUZZING_ENGINE:--fsanitize=fuzzer}

REPO=$SRC/copyfuzz
BUNDLE=$OUT/copyfuzz
B=$WORK/copyfuzz # intermediate files: never in $OUT
WARN=(-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes)

die() {
	echo "build.sh: $*" >&2
	exit 1
}

# A routine's " * copyfuzz: KEY=value" header line, as the Makefile reads it.
meta() {
	sed -n "1,40s/^[ /*]*copyfuzz: $2=\([^ ]*\).*/\1/p" "$1" | head -n 1
}

target_name() {
	printf '%s_fuzzer' "$(printf '%s' "$1" | tr -c 'A-Za-z0-9\n' '_')"
}

# The per-routine corpus directory name `copyfuzz fuzz` uses (Routine.file_stem).
corpus_stem() {
	printf '%s' "$1" | sed 's/[^A-Za-z0-9_.-]\{1,\}/__/g; s/^[_.]*//; s/[_.]*$//'
}

[[ -f $REPO/fuzz/driver.c ]] || die "no copyfuzz source in $REPO"
# The flag variables as words (read -a splits without globbing).
read -ra cflags <<<"$CFLAGS"
read -ra cxxflags <<<"$CXXFLAGS"
read -ra engine <<<"$LIB_FUZZING_ENGINE"
extra_list=${COPYFUZZ_EXTRA_TARGETS:-}
read -ra extra <<<"${extra_list//,/ }"

# ---- which routines ----
# A routine that needs an ISA extension (an isa= line, e.g. the vector copy) is left out:
# the bundled qemu runs the default CPU, and a target has no way to ask for another.
routines=()
for src in "$REPO"/arch/*/*.S; do
	r=${src#"$REPO"/arch/}
	if [[ -n $(meta "$src" isa) ]]; then
		echo "build.sh: ${r%.S} left out: it needs ISA $(meta "$src" isa), and the targets run qemu's default CPU" >&2
		continue
	fi
	routines+=("${r%.S}")
done
for r in "${extra[@]}"; do
	r=${r%.S}
	r=${r#arch/}
	[[ -f $REPO/arch/$r.S ]] || die "COPYFUZZ_EXTRA_TARGETS: no routine $r (arch/$r.S)"
	[[ " ${routines[*]} " == *" $r "* ]] || routines+=("$r")
done

# ---- the executors of every architecture and the plugin, through the Makefile ----
# CC on the command line: the environment's CC is the host clang. The Makefile reads
# no CFLAGS, so the engine's flags cannot leak into the executor or plugin builds. Each
# architecture's build directory, QEMU and cross compiler come from its target.mk
# (`make target-env`); the environment's CROSS_COMPILE is RISC-V's, as for the tool.
declare -A arch_build arch_qemu arch_cross
archs=()
for r in "${routines[@]}"; do
	a=${r%%/*}
	[[ -n ${arch_build[$a]:-} ]] && continue
	case $a in
	riscv) cross=${CROSS_COMPILE:-} ;;
	arm64) cross=${CROSS_COMPILE_ARM64:-} ;;
	arm) cross=${CROSS_COMPILE_ARM:-} ;;
	*) cross= ;;
	esac
	env_out=$(env -u CROSS_COMPILE -u QEMU make -C "$REPO" -s --no-print-directory O="$B" ARCH="$a" \
		${cross:+CROSS_COMPILE="$cross"} target-env) || die "make ARCH=$a target-env failed"
	eval "$env_out" # CF_TARGET_NAME='value' lines, quoted for sh
	# shellcheck disable=SC2154 # set by the eval
	arch_build[$a]=$CF_TARGET_BUILD arch_qemu[$a]=${CF_TARGET_QEMU%% *} arch_cross[$a]=$CF_TARGET_CROSS_COMPILE
	archs+=("$a")
done
for a in "${archs[@]}"; do
	elfs=()
	for r in "${routines[@]}"; do
		[[ ${r%%/*} == "$a" ]] && elfs+=("${arch_build[$a]}/$r.elf")
	done
	command -v "${arch_cross[$a]}gcc" >/dev/null ||
		die "no ${arch_cross[$a]}gcc for the $a routines (install its cross gcc: .clusterfuzzlite/Dockerfile)"
	env -u CROSS_COMPILE -u QEMU make -C "$REPO" -s -j"$(nproc)" O="$B" ARCH="$a" \
		CROSS_COMPILE="${arch_cross[$a]}" CC="${arch_cross[$a]}gcc" HOSTCC="$CC" "${elfs[@]}"
done
make -C "$REPO" -s O="$B" HOSTCC="$CC" "$B/host/cfplugin.so"
if grep -Eq '__(asan|msan|ubsan|sanitizer|llvm_profile)' <<<"$(nm -D --undefined-only "$B/host/cfplugin.so")"; then
	die "cfplugin.so was built with sanitizer or coverage runtime calls; qemu cannot load it"
fi

# ---- the oracle, and the placement and fill it judges from (harness/place.c): the
# engine's sanitizer, but no SanitizerCoverage ----
# The oracle's per-byte comparison loop, traced, was half of every execution
# (docs/perf.md); the coverage worth having is the routine's, from the plugin.
ref_flags=()
for f in "${cflags[@]}"; do
	case $f in
	-fsanitize-coverage=*) ;; # engine-specific coverage (trace-pc-guard, ...)
	-fsanitize=*)
		keep=
		IFS=, read -ra kinds <<<"${f#-fsanitize=}"
		for k in "${kinds[@]}"; do
			[[ $k == fuzzer || $k == fuzzer-no-link ]] || keep+=${keep:+,}$k
		done
		[[ -z $keep ]] || ref_flags+=("-fsanitize=$keep")
		;;
	*) ref_flags+=("$f") ;;
	esac
done
mkdir -p "$B"
for o in ref:ref/ref place:harness/place; do # OBJECT:SOURCE (no .c)
	"$CC" "${ref_flags[@]}" -std=c11 "${WARN[@]}" -I"$REPO/harness" -I"$REPO/ref" \
		-c "$REPO/${o#*:}.c" -o "$B/${o%%:*}.o"
	if grep -Eq '__sanitizer_cov|__sancov' <<<"$(nm "$B/${o%%:*}.o")"; then
		die "${o%%:*}.o still has SanitizerCoverage: CFLAGS='$CFLAGS' needs another exception here"
	fi
done

# ---- one target per routine: the same driver, the routine compiled in ----
# Only driver_config.c knows the routine (CF_BUNDLE_*): the rest is compiled once.
driver_cc() { # driver_cc SOURCE OBJECT [FLAGS...]
	"$CC" "${cflags[@]}" -std=c11 "${WARN[@]}" -I"$REPO/harness" -I"$REPO/ref" "${@:3}" -c "$1" -o "$2"
}
driver_cc "$REPO/fuzz/driver.c" "$B/driver.o"
driver_cc "$REPO/fuzz/input.c" "$B/input.o"
driver_cc "$REPO/fuzz/executor_channel.c" "$B/executor_channel.o"
routine_kinds=$("$REPO/harness/kinds.sh") # the names of CF_KINDS in records.h
rm -rf "$BUNDLE"
mkdir -p "$BUNDLE"
targets=()
declare -A first_target # per architecture: the target the smoke run starts
for r in "${routines[@]}"; do
	src=$REPO/arch/$r.S
	kind=$(meta "$src" kind)
	profile=$(meta "$src" profile)
	grep -qxF -- "$kind" <<<"$routine_kinds" || die "$src: kind '$kind' is not one of: ${routine_kinds//$'\n'/ }"
	a=${r%%/*}
	name=$(target_name "$r")
	driver_cc "$REPO/fuzz/driver_config.c" "$B/$name.config.o" -DCF_BUNDLE_ROUTINE="\"$r\"" \
		-DCF_BUNDLE_KIND="\"$kind\"" -DCF_BUNDLE_PROFILE="\"${profile:-linux}\"" \
		-DCF_BUNDLE_QEMU="\"${arch_qemu[$a]}\""
	"$CXX" "${cxxflags[@]}" "$B/driver.o" "$B/input.o" "$B/executor_channel.o" "$B/$name.config.o" "$B/ref.o" "$B/place.o" \
		"${engine[@]}" -o "$OUT/$name"
	mkdir -p "$(dirname "$BUNDLE/$r")"
	cp "${arch_build[$a]}/$r.elf" "$BUNDLE/$r.elf"

	# Inputs use 15 bytes (the layout in fuzz/input.h); longer ones only waste mutations.
	printf '[libfuzzer]\nmax_len = 16\n' >"$OUT/$name.options"
	rm -f "$OUT/${name}_seed_corpus.zip"
	corpus=$REPO/corpora/$(corpus_stem "$r")
	if [[ -d $corpus ]] && [[ -n $(find "$corpus" -maxdepth 1 -type f ! -name '.*' -print -quit) ]]; then
		(cd "$corpus" && find . -maxdepth 1 -type f ! -name '.*' -printf '%P\n' |
			zip -q -X "$OUT/${name}_seed_corpus.zip" -@)
	fi
	targets+=("$name")
	[[ -n ${first_target[$a]:-} ]] || first_target[$a]=$name
done
cp "$B/host/cfplugin.so" "$BUNDLE/cfplugin.so"

# ---- a qemu that runs where none is installed ----
# The runner has no qemu, glib, gnutls...: bundle the binary, every library it and the
# plugin load (under the names they ask for: no symlinks, archives may drop them), and
# the loader, which the driver runs with --inhibit-cache --library-path qemu/lib.
mkdir -p "$BUNDLE/qemu/lib"
libs=$(ldd "$BUNDLE/cfplugin.so")
interp=
for a in "${archs[@]}"; do
	name=${arch_qemu[$a]}
	if [[ $a == riscv && -n ${COPYFUZZ_BUNDLE_QEMU:-} ]]; then
		qemu=$COPYFUZZ_BUNDLE_QEMU
	else
		qemu=$(command -v "$name" || true)
	fi
	[[ -n $qemu && -x $qemu ]] || die "no $name: install qemu-user (dynamic, with plugin support)"
	qemu=$(readlink -f "$qemu")
	this=$(readelf -lW "$qemu" | sed -n 's/.*Requesting program interpreter: \(.*\)\]/\1/p')
	[[ -n $this ]] || die "$qemu is static: a static qemu cannot load TCG plugins (qemu-user, not -static)"
	[[ -z $interp || $this == "$interp" ]] || die "$qemu asks for loader $this, another qemu for $interp"
	interp=$this
	# (read whole first: grep -q stopping early would fail the pipe under pipefail)
	syms=$(readelf --dyn-syms -W "$qemu")
	grep -qw qemu_plugin_register_vcpu_tb_trans_cb <<<"$syms" ||
		die "$qemu has no TCG plugin API (built without --enable-plugins)"
	cp "$qemu" "$BUNDLE/qemu/$name"
	chmod 0755 "$BUNDLE/qemu/$name"
	libs+=$'\n'$(ldd "$qemu")
done
cp -L "$interp" "$BUNDLE/qemu/ld.so"
chmod 0755 "$BUNDLE/qemu/ld.so"
libs=$(sort -u <<<"$libs")
if grep -q 'not found' <<<"$libs"; then
	die "qemu or the plugin misses libraries: $(grep 'not found' <<<"$libs" | tr -s ' \t\n' ' ')"
fi
while read -r soname path; do
	cp -L "$path" "$BUNDLE/qemu/lib/$soname"
done < <(awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' <<<"$libs")
version=$(env -i "$BUNDLE/qemu/ld.so" --inhibit-cache --library-path "$BUNDLE/qemu/lib" \
	"$BUNDLE/qemu/${arch_qemu[${archs[0]}]}" --version | head -n 1) || die "the bundled qemu does not start"

# ---- a short run of one target per architecture from $OUT, as the runner starts it ----
# No COPYFUZZ_* variable, another working directory, an empty PATH: the target must find
# its executor, plugin and qemu by itself. A broken bundle fails the build here, not on
# the runner.
if [[ ${COPYFUZZ_SMOKE:-1} != 0 ]]; then
	unset_args=()
	for v in $(compgen -e); do
		[[ $v != COPYFUZZ_* ]] || unset_args+=(-u "$v")
	done
	for a in "${archs[@]}"; do
		t=${first_target[$a]}
		smoke=$(mktemp -d "${TMPDIR:-/tmp}/copyfuzz-smoke.XXXXXX")
		if ! (cd "$smoke" && env "${unset_args[@]}" PATH="$smoke" LLVM_PROFILE_FILE="$smoke/%p.profraw" \
			"$OUT/$t" -runs=64 -seed=1 >"$smoke/log" 2>&1) ||
			! grep -q 'Done 64 runs' "$smoke/log"; then
			tail -n 30 "$smoke/log" >&2
			rm -rf "$smoke"
			die "$t does not run from \$OUT (log above)"
		fi
		rm -rf "$smoke"
	done
fi

echo "build.sh: ${#targets[@]} targets in $OUT: ${targets[*]}"
echo "build.sh: bundled the qemu of ${archs[*]}: $version ($(find "$BUNDLE/qemu/lib" -type f | wc -l) libraries)"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# cflite-local.sh - ClusterFuzzLite's build step simulated here, without Docker
# (docs/clusterfuzzlite.md). Copies the tree (tracked files and new ones git does not
# ignore) to a scratch $SRC/copyfuzz, sets the variables the address (or undefined)
# build sets, and runs .clusterfuzzlite/build.sh as the builder would. The system's
# clang, riscv64 gcc and qemu-user stand in for the image's.
#
#   ci/cflite-local.sh [--root DIR] [--sanitizer address|undefined] [--check] [ROUTINE...]
#
#   --root DIR   scratch directory [/tmp/copyfuzz-cflite]: DIR/src, DIR/work, DIR/out
#                ($OUT) are made anew each run; runs on one DIR take turns
#   ROUTINE...   extra targets, e.g. riscv/mutants/wrong-shift (COPYFUZZ_EXTRA_TARGETS)
#   --check      then run the targets from $OUT as a runner would (another directory,
#                no COPYFUZZ_* variable, empty PATH): every bundled routine's target
#                runs 2000 inputs clean and every extra one finds its bug within 120 s
#
# Exit status: 0 built (and, with --check, as expected), 1 otherwise, 2 bad usage.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
root=/tmp/copyfuzz-cflite
sanitizer=address
check=0
extra=()

usage() {
	sed -n '10,19s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
	exit 2
}

while (($#)); do
	case $1 in
	--root) root=${2:?--root needs a directory}; shift 2 ;;
	--sanitizer) sanitizer=${2:?--sanitizer needs a name}; shift 2 ;;
	--check) check=1; shift ;;
	-h | --help) usage ;;
	-*) echo "cflite-local.sh: unknown option $1" >&2; usage ;;
	*) extra+=("$1"); shift ;;
	esac
done

# OSS-Fuzz's base flags, then the sanitizer's, then libFuzzer's coverage.
base="-O1 -fno-omit-frame-pointer -gline-tables-only -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION"
case $sanitizer in
address) san="-fsanitize=address -fsanitize-address-use-after-scope" ;;
undefined)
	# unsigned-integer-overflow is checked but recoverable (only reported), as there.
	fatal=array-bounds,bool,builtin,enum,float-divide-by-zero,function,integer-divide-by-zero,null,object-size,return,returns-nonnull-attribute,shift,signed-integer-overflow,unreachable,vla-bound,vptr
	san="-fsanitize=$fatal,unsigned-integer-overflow -fno-sanitize-recover=$fatal"
	;;
*) echo "cflite-local.sh: --sanitizer address|undefined" >&2; exit 2 ;;
esac

# Only a directory this script made is wiped. One run at a time per directory: a second
# run (another shell, another test worker) waits for the first, whose $OUT it would wipe
# (the lock is DIR.lock, beside it).
mkdir -p "$root"
exec {lock}>>"$root.lock"
if ! flock -n "$lock"; then
	echo "cflite-local.sh: $root is in use by another run: waiting for it" >&2
	flock "$lock"
fi
if [[ -n $(ls -A "$root") && ! -e $root/.copyfuzz-cflite ]]; then
	echo "cflite-local.sh: $root is not empty and not ours; choose another --root" >&2
	exit 2
fi
touch "$root/.copyfuzz-cflite"
rm -rf "$root/src" "$root/work" "$root/out"
mkdir -p "$root/src/copyfuzz" "$root/work" "$root/out"

# The tree as a clean checkout would have it (plus files not yet committed).
git -C "$ROOT" ls-files -z --cached --others --exclude-standard |
	while IFS= read -r -d '' f; do [[ -e $ROOT/$f ]] && printf '%s\0' "$f"; done |
	tar -C "$ROOT" --null -T - -cf - | tar -C "$root/src/copyfuzz" -xf -
cp "$root/src/copyfuzz/.clusterfuzzlite/build.sh" "$root/src/build.sh"

unset_args=()
for v in $(compgen -e); do
	[[ $v != COPYFUZZ_* ]] || unset_args+=(-u "$v")
done
(
	cd "$root/src/copyfuzz"
	env "${unset_args[@]}" SRC="$root/src" OUT="$root/out" WORK="$root/work" \
		CC=clang CXX=clang++ CFLAGS="$base $san -fsanitize=fuzzer-no-link" \
		CXXFLAGS="$base $san -fsanitize=fuzzer-no-link" LIB_FUZZING_ENGINE=-fsanitize=fuzzer \
		SANITIZER="$sanitizer" FUZZING_ENGINE=libfuzzer FUZZING_LANGUAGE=c ARCHITECTURE=x86_64 \
		COPYFUZZ_EXTRA_TARGETS="${extra[*]}" bash "$root/src/build.sh"
)
((check)) || exit 0

# ---- run the targets as a runner would ----
status=0
run_dir=$root/run
for target in "$root"/out/*_fuzzer; do
	name=$(basename "$target")
	mutant=0
	for r in "${extra[@]}"; do
		[[ $name != "$(printf '%s' "$r" | tr -c 'A-Za-z0-9\n' '_')_fuzzer" ]] || mutant=1
	done
	rm -rf "$run_dir"
	mkdir -p "$run_dir"
	if ((mutant)); then
		args=(-max_total_time=120 -seed=1 "-artifact_prefix=$run_dir/")
	else
		args=(-runs=2000 -seed=1 "-artifact_prefix=$run_dir/")
	fi
	rc=0
	(cd "$run_dir" && env "${unset_args[@]}" PATH="$run_dir" "$target" "${args[@]}" >"$run_dir/log" 2>&1) || rc=$?
	finding=$(grep -m1 '==copyfuzz== FINDING' "$run_dir/log" || true)
	if ((mutant)) && [[ $rc -ne 0 && -n $finding ]]; then
		echo "$name: found ($finding)"
	elif ((!mutant)) && [[ $rc -eq 0 ]] && grep -q 'Done 2000 runs' "$run_dir/log"; then
		echo "$name: 2000 inputs, clean"
	else
		echo "$name: UNEXPECTED (exit $rc):" >&2
		tail -n 20 "$run_dir/log" >&2
		status=1
	fi
done
exit $status

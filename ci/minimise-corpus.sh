#!/usr/bin/env bash
# ci/minimise-corpus.sh - shrink cached corpora to the inputs that add coverage.
#
# For each CACHE/<routine stem>/ (as ci/campaign.sh --corpus-cache leaves them), libFuzzer's
# -merge=1 through the native driver keeps the inputs that add a feature (RISC-V edges
# from the QEMU plugin, the driver's own), and the result replaces the corpus. Run it
# before saving the cache, so the cache does not grow with every nightly run.
#
# Exit status: 0 done, 2 bad input or a tool error (a corpus whose merge fails is kept).
set -euo pipefail
# shellcheck source=ci/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	cat <<EOF
usage: $PROG --corpus-cache DIR [--routines R[,R] | --file F.S --symbol SYM[:KIND]...]
  --corpus-cache DIR      corpora, one DIR/<routine stem> each
  --routines R[,R]        only these routines (default: every corpus of a known routine)
  --file F.S --symbol SYM[:KIND]
                          a kernel-style file's routines (-D, --alternative, --arch passed through)
exit status: 0 done, 2 bad input or a tool error
EOF
}

cache=""
routines=""
file=""
symbols=()
build_opts=()

while [ $# -gt 0 ]; do
	case $1 in
	--*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
	esac
	case $1 in
	--corpus-cache) need_value "$@"; cache=$2; shift 2 ;;
	--routines) need_value "$@"; routines=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*)
		file_option "$@"
		[ "$SHIFT" -gt 0 ] || die "unknown option '$1' (see '$PROG --help')"
		shift "$SHIFT"
		;;
	esac
done
[ -n "$cache" ] || die "say which corpora with --corpus-cache DIR"
[ -d "$cache" ] || die "--corpus-cache $cache: no such directory"
check_file_options

ensure_deps
if [ -n "$file" ]; then
	listing=$(routines_of file "$file" "${symbols[@]}" "${build_opts[@]}" --build) || exit 2
else
	if [ -n "$routines" ]; then
		IFS=, read -r -a wanted <<<"$routines"
	else # the known routines that have a corpus here
		wanted=()
		all=$(routines_of routines --all) || exit 2
		while IFS=$'\t' read -r name stem _; do
			[ ! -d "$cache/$stem" ] || wanted+=("$name")
		done <<<"$all"
	fi
	if [ ${#wanted[@]} -eq 0 ]; then
		note "no corpus of a known routine under $cache: nothing to do"
		exit 0
	fi
	listing=$(routines_of routines --build "${wanted[@]}") || exit 2
fi

IFS=$'\t' read -r plugin fuzzer _ <<<"$(routines_of paths)" # under $O, as the tool builds

rc=0
mapfile -t lines <<<"$listing"
for line in "${lines[@]}"; do
	IFS=$'\t' read -r name stem _ kind profile elf <<<"$line"
	corpus=$cache/$stem
	before=$(find "$corpus" -maxdepth 1 -type f 2>/dev/null | wc -l)
	if [ "$before" -lt 2 ]; then
		echo "$name: $before inputs, nothing to merge"
		continue
	fi
	work=$(mktemp -d "${TMPDIR:-/tmp}/copyfuzz-merge.XXXXXX")
	merged=$cache/.$stem.merged # beside the corpus: the swap is two renames
	rm -rf "$merged"
	mkdir "$merged"
	# The driver's environment as `copyfuzz fuzz` sets it (fuzz/envs.def); its findings
	# (an input that fails now) are thrown away: the campaign and replay report those.
	into=$(realpath "$merged") from=$(realpath "$corpus")
	if (cd "$work" && with_driver_env COPYFUZZ_EXECUTOR="$elf" COPYFUZZ_KIND="$kind" \
		COPYFUZZ_PROFILE="$profile" COPYFUZZ_PLUGIN="$plugin" COPYFUZZ_FINDINGS="$work" \
		COPYFUZZ_MAX_LEN=65536 -- \
		"$fuzzer" -merge=1 -merge_control_file="$work/control" "$into" "$from") \
		</dev/null >"$work/merge.log" 2>&1 &&
		[ -n "$(find "$merged" -type f -print -quit)" ]; then
		mv "$corpus" "$corpus.old" && mv "$merged" "$corpus" && rm -rf "$corpus.old"
		echo "$name: $before -> $(find "$corpus" -maxdepth 1 -type f | wc -l) inputs"
	else
		rm -rf "$merged"
		note "$name: the merge failed, $corpus is kept as it was; libFuzzer said:"
		tail -n 20 "$work/merge.log" >&2
		rc=2
	fi
	rm -rf "$work"
done
exit "$rc"

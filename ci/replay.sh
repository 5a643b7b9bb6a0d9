#!/usr/bin/env bash
# ci/replay.sh - replay the saved corpora and regression specs, for CI.
#
# Every CORPORA/<routine stem>/ is replayed on its routine (`copyfuzz replay DIR
# --routine NAME`), then the regression specs (`copyfuzz replay REGRESSIONS`, each spec
# names its routine). Verdict (copyfuzz junit --expect-mutants):
#   - a real routine's case that reproduces fails: a corpus input or a regression is back;
#   - a bundled mutant's regressions are the mutant catalogue: they must reproduce, and
#     one that no longer does fails (the harness stopped catching that bug);
#   - a mutant's corpus is not replayed (a mutant is broken by design) and a directory
#     naming no known routine is reported as skipped.
#
# Exit status: 0 clean, 1 a failure, 2 bad input or a build/tool error.
set -euo pipefail
# shellcheck source=ci/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	cat <<EOF
usage: $PROG [options]
  --corpora DIR           corpora, one DIR/<routine stem> each (default corpora)
  --regressions DIR       regression specs (default CORPORA/regressions)
  --file F.S --symbol SYM[:KIND]
                          also map the corpora of a kernel-style file's routines
                          (--symbol repeatable)
  --artifacts DIR         results of each replay (default ci-artifacts/replay)
  --junit FILE            JUnit XML (default ARTIFACTS/junit.xml)
  --known FILE            accepted findings (CLASS SYMBOL+0xOFF a line): reported as
                          known (skipped in the JUnit), they do not fail the replay
  --write-known FILE      write the replays' unique findings to FILE in that format
exit status: 0 clean, 1 a failure, 2 bad input or a build/tool error
EOF
}

corpora=corpora
regressions=""
file=""
symbols=()
artifacts=ci-artifacts/replay
junit=""
known=""
write_known=""

while [ $# -gt 0 ]; do
	case $1 in
	--*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
	esac
	case $1 in
	--corpora) need_value "$@"; corpora=$2; shift 2 ;;
	--regressions) need_value "$@"; regressions=$2; shift 2 ;;
	--file) need_value "$@"; file=$2; shift 2 ;;
	--symbol) need_value "$@"; symbols+=(--symbol "$2"); shift 2 ;;
	--artifacts) need_value "$@"; artifacts=$2; shift 2 ;;
	--junit) need_value "$@"; junit=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*)
		known_options "$@"
		[ "$SHIFT" -gt 0 ] || die "unknown option '$1' (see '$PROG --help')"
		shift "$SHIFT"
		;;
	esac
done
if [ -n "$file" ]; then
	[ ${#symbols[@]} -gt 0 ] || die "--file $file: say which routines with --symbol SYM[:KIND]"
else
	[ ${#symbols[@]} -eq 0 ] || die "--symbol names a routine in --file F.S: give the file too"
fi
[ -z "$regressions" ] || [ -d "$regressions" ] || die "--regressions $regressions: no such directory"
regressions=${regressions:-$corpora/regressions}
junit=${junit:-$artifacts/junit.xml}

ensure_deps
check_known
mkdir -p "$artifacts" || die "cannot create $artifacts"
# Every routine the tool knows, mutants too: stem -> name and whether it is a mutant.
resolve_routines "$artifacts/setup" "$junit" "copyfuzz replay" routines --all
listing=$ROUTINES
if [ -n "$file" ]; then
	resolve_routines "$artifacts/setup" "$junit" "copyfuzz replay" file "$file" "${symbols[@]}"
	listing+=$'\n'$ROUTINES
fi
declare -A name_of=() mutant_of=()
mapfile -t lines <<<"$listing"
for line in "${lines[@]}"; do
	IFS=$'\t' read -r name stem mutant _ <<<"$line"
	name_of[$stem]=$name
	mutant_of[$stem]=$mutant
done

results=()
finish() {
	write_junit "$junit" "copyfuzz replay" --expect-mutants "${results[@]}"
}

# The corpora, each on its routine.
if [ -d "$corpora" ]; then
	for dir in "$corpora"/*/; do
		[ -d "$dir" ] || continue # no match: the pattern itself
		dir=${dir%/}
		stem=${dir##*/}
		[ "$(cd "$dir" && pwd)" != "$(cd "$regressions" 2>/dev/null && pwd)" ] || continue
		base=$artifacts/corpus--$stem
		name=${name_of[$stem]:-}
		results+=("$base.json")
		if [ -z "$name" ]; then
			skip_recorded "$base" "$stem" "replay corpus" \
				"$dir names no known routine (a kernel routine? give --file F.S --symbol SYM)"
			echo "skipped   $dir (no routine named so)"
			continue
		fi
		if [ "${mutant_of[$stem]}" = 1 ]; then
			skip_recorded "$base" "$name" "replay corpus" "a mutant's corpus: mutants are broken by design"
			echo "skipped   $dir (a mutant)"
			continue
		fi
		if [ -z "$(find "$dir" -type f ! -name '.*' -print -quit)" ]; then
			skip_recorded "$base" "$name" "replay corpus" "$dir is empty"
			echo "skipped   $dir (empty)"
			continue
		fi
		run_recorded "$base" "$name" "replay corpus" 3600 \
			"$COPYFUZZ" replay "$dir" --routine "$name" --json "${KNOWN_ARGS[@]}"
		case $RUN_RC in
		0) echo "clean     $name  corpus $dir" ;;
		1) echo "FINDINGS  $name  corpus $dir reproduces ($base.json)" ;;
		*) echo "ERROR     $name  corpus $dir (exit $RUN_RC: $base.stderr)" ;;
		esac
		if interrupted "$RUN_RC"; then
			finish
			exit 130
		fi
	done
fi

# The regression specs: each names its routine, mutants included.
if [ -d "$regressions" ] && [ -n "$(find "$regressions" -name '*.spec' -print -quit)" ]; then
	base=$artifacts/regressions
	run_recorded "$base" "" "replay regressions" 3600 "$COPYFUZZ" replay "$regressions" --json "${KNOWN_ARGS[@]}"
	printf 'dir=%s\n' "$regressions" >>"$base.status"
	results+=("$base.json")
	echo "replayed  $regressions (exit $RUN_RC; mutants are expected to reproduce)"
	if interrupted "$RUN_RC"; then
		finish
		exit 130
	fi
fi

[ ${#results[@]} -gt 0 ] || note "nothing to replay under $corpora (no corpora, no regression specs)"
finish
write_known_from "${results[@]}"
echo "junit: $junit  artifacts: $artifacts"
exit "$JUNIT_RC"

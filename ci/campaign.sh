#!/usr/bin/env bash
# ci/campaign.sh - a time-boxed fuzz campaign over routines and engines, for CI.
#
# Runs `copyfuzz fuzz ROUTINE --engine E --time T --json` once per (routine, engine),
# keeps going after a finding, and writes per run its result, findings and regression
# specs under --artifacts, then a JUnit report (rewritten after every run, so a
# cancelled job still has one). docs/ci.md has the details.
#
# Exit status: 0 clean, 1 a finding, 2 bad input or a build/tool error (also when
# some other run found something: the campaign is incomplete).
set -euo pipefail
# shellcheck source=ci/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	cat <<EOF
usage: $PROG [options]
  --time SECONDS          per routine and engine (default 60)
  --triage-time SECONDS   triage after each run's time at most (copyfuzz fuzz
                          --triage-time; default 10% of --time, at least 5)
  --engines E[,E]         libfuzzer, afl, hypothesis (default libfuzzer,afl)
  --routines R[,R]        bundled routines or patterns (default: every non-mutant)
  --file F.S --symbol SYM[:KIND]
                          a kernel-style file instead; --symbol repeatable,
                          -D NAME[=VALUE], --alternative and --arch ARCH passed
                          through
  --corpus-cache DIR      corpora, one DIR/<routine stem> each, resumed if present
                          (default ARTIFACTS/corpus); an absent one starts from
                          CORPORA/<stem> when there is one
  --corpora DIR           committed corpora that seed the cache (default corpora)
  --artifacts DIR         results, findings, regression specs (default ci-artifacts)
  --junit FILE            JUnit XML (default ARTIFACTS/junit.xml)
  --jobs N                parallel fuzzing processes per run (libfuzzer, afl)
  --seed S                seed of every run (default: a fresh one per run)
  --until CLASS[,CLASS]   end each run at its first finding of one of these classes
                          (copyfuzz fuzz --until): the next run starts at once
  --afl-host NAME         name AFL++ instances main-NAME/secN-NAME (ci/afl-sync.sh)
  --known FILE            accepted findings (CLASS SYMBOL+0xOFF a line): reported as
                          known (skipped in the JUnit), they do not fail the campaign
  --write-known FILE      write the runs' unique findings to FILE in that format
exit status: 0 clean, 1 a finding, 2 bad input or a build/tool error
EOF
}

time_s=60
triage_s=""
engines=libfuzzer,afl
routines=""
file=""
symbols=()
build_opts=()
cache=""
corpora=corpora
artifacts=ci-artifacts
junit=""
jobs=""
seed=""
afl_host=""
until=""
known=""
write_known=""

while [ $# -gt 0 ]; do
	case $1 in
	--*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}"; continue ;;
	esac
	case $1 in
	--time) need_value "$@"; time_s=$2; shift 2 ;;
	--triage-time) need_value "$@"; triage_s=$2; shift 2 ;;
	--engines) need_value "$@"; engines=$2; shift 2 ;;
	--routines) need_value "$@"; routines=$2; shift 2 ;;
	--corpus-cache) need_value "$@"; cache=$2; shift 2 ;;
	--corpora) need_value "$@"; corpora=$2; shift 2 ;;
	--artifacts) need_value "$@"; artifacts=$2; shift 2 ;;
	--junit) need_value "$@"; junit=$2; shift 2 ;;
	--jobs) need_value "$@"; jobs=$2; shift 2 ;;
	--seed) need_value "$@"; seed=$2; shift 2 ;;
	--afl-host) need_value "$@"; afl_host=$2; shift 2 ;;
	--until) need_value "$@"; until=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*)
		file_option "$@"
		[ "$SHIFT" -gt 0 ] || known_options "$@"
		[ "$SHIFT" -gt 0 ] || die "unknown option '$1' (see '$PROG --help')"
		shift "$SHIFT"
		;;
	esac
done

positive_int --time "$time_s"
[[ -z $triage_s || $triage_s =~ ^(0|[1-9][0-9]{0,8})$ ]] ||
	die "--triage-time: expected a whole number of seconds (0 to 999999999), not '$triage_s'"
[ -z "$jobs" ] || positive_int --jobs "$jobs"
[[ -z $seed || $seed =~ ^[0-9]+$ ]] || die "--seed: expected a number, not '$seed'"
IFS=, read -r -a engine_list <<<"$engines"
[ ${#engine_list[@]} -gt 0 ] || die "--engines: name at least one engine"
for e in "${engine_list[@]}"; do
	case $e in
	libfuzzer | afl | hypothesis) ;;
	*) die "--engines: unknown engine '$e' (libfuzzer, afl, hypothesis)" ;;
	esac
done
check_file_options
cache=${cache:-$artifacts/corpus}
junit=${junit:-$artifacts/junit.xml}

ensure_deps
check_known
mkdir -p "$artifacts" "$cache" || die "cannot create $artifacts or $cache"
# name<TAB>stem<TAB>...: resolved (and so checked) before anything runs; an unknown
# routine or a missing file is reported in the JUnit too, as a "setup" error.
if [ -n "$file" ]; then
	resolve_routines "$artifacts/setup" "$junit" "copyfuzz campaign" file "$file" "${symbols[@]}" "${build_opts[@]}"
else
	IFS=, read -r -a patterns <<<"$routines"
	resolve_routines "$artifacts/setup" "$junit" "copyfuzz campaign" routines "${patterns[@]}"
fi
listing=$ROUTINES
[ -n "$listing" ] || die "no routines to fuzz"

results=()
finish() {
	write_junit "$junit" "copyfuzz campaign" "${results[@]}"
}
# shellcheck disable=SC2317  # run by the trap
on_signal() {
	trap - INT TERM
	note "interrupted: the report covers the runs so far"
	finish
	exit 130
}
trap on_signal INT TERM

limit=$((2 * time_s + ${triage_s:-0} + 600)) # the tool's own stop (time, then triage) comes well within
mapfile -t lines <<<"$listing"
for line in "${lines[@]}"; do
	IFS=$'\t' read -r name stem _ <<<"$line"
	corpus=$cache/$stem
	if [ ! -e "$corpus" ] && [ -d "$corpora/$stem" ]; then
		cp -R "$corpora/$stem" "$corpus" # the committed corpus stays as it is
	fi
	if [ -n "$file" ]; then
		target=(--file "$file" "--symbol" "${name##*:}" "${build_opts[@]}")
		# The kind given with the symbol (SYM:KIND) goes with it.
		for ((i = 1; i < ${#symbols[@]}; i += 2)); do
			[ "${symbols[i]%%:*}" != "${name##*:}" ] || target[3]=${symbols[i]}
		done
	else
		target=("$name")
	fi
	for engine in "${engine_list[@]}"; do
		run=$artifacts/$stem/$engine
		mkdir -p "$run"
		cmd=("$COPYFUZZ" fuzz "${target[@]}" --engine "$engine" --time "$time_s" --json
			--corpus "$corpus" --findings "$run/findings" --regressions "$run/regressions")
		[ -z "$seed" ] || cmd+=(--seed "$seed")
		[ -z "$triage_s" ] || cmd+=(--triage-time "$triage_s")
		[ -z "$until" ] || cmd+=(--until "$until")
		[ -z "$jobs" ] || [ "$engine" = hypothesis ] || cmd+=(--jobs "$jobs")
		[ -z "$afl_host" ] || [ "$engine" != afl ] || cmd+=(--afl-host "$afl_host")
		cmd+=("${KNOWN_ARGS[@]}")
		note "$name with $engine for $time_s s"
		run_recorded "$run/result" "$name" "$engine" "$limit" "${cmd[@]}"
		results+=("$run/result.json")
		case $RUN_RC in
		0) echo "clean     $name  $engine" ;;
		1) echo "FINDINGS  $name  $engine  (regressions in $run/regressions)" ;;
		*) echo "ERROR     $name  $engine  (exit $RUN_RC: $run/result.stderr)" ;;
		esac
		finish # after every run: a cancelled job keeps what is done
		if interrupted "$RUN_RC"; then
			note "interrupted: the report covers the runs so far"
			exit 130
		fi
	done
done

write_known_from "${results[@]}"
echo "junit: $junit  artifacts: $artifacts  corpus: $cache"
exit "$JUNIT_RC"

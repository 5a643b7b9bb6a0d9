# shellcheck shell=bash disable=SC2034
# ci/lib.sh - shared by the ci/*.sh scripts (sourced, not run); RUN_RC and
# JUNIT_RC are results for them.
#
# Conventions: exit 0 clean, 1 a finding, 2 bad input or a build/tool error. Each
# copyfuzz run leaves X.json (its --json stdout), X.stderr and X.status (key=value:
# routine, name, command, exit, seconds) so that `copyfuzz junit` can report a run
# that died before printing anything.

CI_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$CI_DIR/.." && pwd)
COPYFUZZ=$ROOT/copyfuzz
PROG=ci/$(basename "$0")
INVOKED="$PROG $(printf '%q ' "$@")" # sourced without arguments: these are the script's

die() { # die MESSAGE: bad input or a tool problem
	echo "$PROG: $*" >&2
	exit 2
}

note() { echo "$PROG: $*" >&2; }

need_value() { # need_value OPTION "$@": the option's argument must be there
	if [ $# -lt 2 ] || [ -z "$2" ]; then
		die "$1 needs a value (see '$PROG --help')"
	fi
}

# file_option "$@": one of the options naming a kernel-style file's routines and its
# build (--file F.S, --symbol SYM[:KIND], -D NAME[=VALUE], --alternative, --arch ARCH),
# taken into file, symbols and build_opts. SHIFT: how many words it used (0: not one of these).
file_option() {
	SHIFT=0
	case $1 in
	--file) need_value "$@"; file=$2; SHIFT=2 ;;
	--symbol) need_value "$@"; symbols+=(--symbol "$2"); SHIFT=2 ;;
	-D) need_value "$@"; build_opts+=(-D "$2"); SHIFT=2 ;;
	-D?*) build_opts+=(-D "${1#-D}"); SHIFT=1 ;;
	--alternative) build_opts+=(--alternative); SHIFT=1 ;;
	--arch) need_value "$@"; build_opts+=(--arch "$2"); SHIFT=2 ;;
	esac
}

# check_file_options: --file, --symbol, -D, --alternative and --arch make sense together and
# with --routines (die otherwise).
check_file_options() {
	if [ -n "$file" ]; then
		[ -z "${routines:-}" ] || die "give --routines or --file F.S, not both"
		[ ${#symbols[@]} -gt 0 ] || die "--file $file: say which routines with --symbol SYM[:KIND]"
	else
		[ ${#symbols[@]} -eq 0 ] || die "--symbol names a routine in --file F.S: give the file too"
		[ ${#build_opts[@]} -eq 0 ] || die "-D, --alternative and --arch are for --file F.S"
	fi
}

positive_int() { # positive_int OPTION VALUE
	[[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1: expected a positive integer, not '$2'"
}

# Python helpers run in the project venv, which scripts/deps.sh installs (as ./copyfuzz does).
ensure_deps() {
	"$ROOT/scripts/deps.sh" || die "scripts/deps.sh could not install what copyfuzz needs"
}

routines_of() { # routines_of ARGS...: ci/routines.py, one tab-separated line per routine
	PYTHONPATH="$ROOT/tool${PYTHONPATH:+:$PYTHONPATH}" "$ROOT/.venv/bin/python" "$CI_DIR/routines.py" "$@"
}

# with_driver_env COPYFUZZ_<NAME>=VALUE... -- CMD...: CMD with the fuzz driver's variables
# set, each name checked against their registry (fuzz/envs.def, tool/copyfuzz/envs.py).
with_driver_env() {
	PYTHONPATH="$ROOT/tool${PYTHONPATH:+:$PYTHONPATH}" "$ROOT/.venv/bin/python" -m copyfuzz.envs "$@"
}

# resolve_routines BASE JUNIT SUITE ARGS...: ROUTINES=the lines of `routines_of ARGS`. When
# they cannot be resolved (an unknown routine, a missing file), the complaint goes to
# stderr and, as BASE.* and one <error>, into the JUnit report; then exit 2.
resolve_routines() {
	local base=$1 out=$2 suite=$3 err
	shift 3
	err=$(mktemp)
	if ROUTINES=$(routines_of "$@" 2>"$err"); then
		cat "$err" >&2
		rm -f "$err"
		return 0
	fi
	cat "$err" >&2
	mv "$err" "$base.stderr"
	printf 'routine=copyfuzz\nname=setup\nexit=2\ncommand=%s\n' "$INVOKED" >"$base.status"
	: >"$base.json"
	write_junit "$out" "$suite" "$base.json"
	exit 2
}

# run_recorded BASE ROUTINE NAME TIMEOUT_S CMD...: run CMD with stdout in BASE.json and
# stderr in BASE.stderr; BASE.status is written before (a killed run is still reported)
# and completed after. Sets RUN_RC. Never fails itself: the run's status is data.
run_recorded() {
	local base=$1 routine=$2 name=$3 limit=$4
	shift 4
	local t0=${EPOCHREALTIME/[.,]/} us # microseconds
	{
		printf 'routine=%s\nname=%s\n' "$routine" "$name"
		printf 'command=%s\n' "$(printf '%q ' "$@")"
	} >"$base.status"
	RUN_RC=0
	# --foreground: Ctrl-C still reaches the tool, which stops its engines cleanly.
	timeout --foreground -k 30 "$limit" "$@" </dev/null >"$base.json" 2>"$base.stderr" || RUN_RC=$?
	{
		us=$((${EPOCHREALTIME/[.,]/} - t0))
		printf 'exit=%s\nseconds=%d.%03d\n' "$RUN_RC" $((us / 1000000)) $((us / 1000 % 1000))
		[ "$RUN_RC" -ne 124 ] || printf 'note=stopped by the watchdog after %s s\n' "$limit"
	} >>"$base.status"
	if [ "$RUN_RC" -eq 124 ]; then
		echo "copyfuzz: the run did not end within $limit s: stopped by $PROG's watchdog" >>"$base.stderr"
	fi
}

# skip_recorded BASE ROUTINE NAME REASON: a testcase reported as skipped.
skip_recorded() {
	printf 'routine=%s\nname=%s\nskipped=%s\n' "$2" "$3" "$4" >"$1.status"
	: >"$1.json"
	: >"$1.stderr"
}

# write_junit OUT SUITE [--expect-mutants] RESULT...: sets JUNIT_RC to the verdict
# (0/1/2); no results still give a valid, empty report.
write_junit() {
	local out=$1 suite=$2
	shift 2
	JUNIT_RC=0
	"$COPYFUZZ" junit --out "$out" --suite "$suite" "$@" || JUNIT_RC=$?
}

# known_options "$@": --known FILE and --write-known FILE (baselines of known findings,
# docs/ci.md), taken into known and write_known. SHIFT: how many words it used.
known_options() {
	SHIFT=0
	case $1 in
	--known) need_value "$@"; known=$2; SHIFT=2 ;;
	--write-known) need_value "$@"; write_known=$2; SHIFT=2 ;;
	esac
}

# check_known: the --known file read and checked before any run (a bad line: exit 2,
# one line naming it), --write-known's directory made. KNOWN_ARGS: for copyfuzz.
check_known() {
	KNOWN_ARGS=()
	if [ -n "$known" ]; then
		routines_of known "$known" || exit 2
		KNOWN_ARGS=(--known "$known")
	fi
	if [ -n "$write_known" ]; then
		[ ! -d "$write_known" ] || die "--write-known $write_known: is a directory"
		mkdir -p "$(dirname "$write_known")" || die "--write-known $write_known: cannot create its directory"
	fi
}

# write_known_from RESULT...: --write-known's baseline, the unique findings of the runs'
# results (exit 2 if it cannot be written).
write_known_from() {
	[ -n "$write_known" ] || return 0
	routines_of write-known --command "$INVOKED" "$write_known" "$@" || exit 2
	echo "known findings written to $write_known"
}

interrupted() { # interrupted RC: the tool was stopped by Ctrl-C, SIGTERM or a CI cancel
	[ "$1" -eq 130 ] || [ "$1" -eq 143 ]
}

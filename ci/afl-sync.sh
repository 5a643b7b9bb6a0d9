#!/usr/bin/env bash
# ci/afl-sync.sh - bring other hosts' AFL++ queues into this host's output directory.
#
# Layout (copyfuzz fuzz --engine afl --afl-host NAME): every host fuzzes in its own
# AFL++ output dir (-o, <findings>/afl) with instances named after it, main-HOST (-M)
# and secN-HOST (-S). AFL++ instances import what they find in OUT/<other>/queue/, so
# syncing is copying each other host's OUT/main-OTHER/queue/ into OUT/main-OTHER/queue/
# here: the main instance of a host has already imported its own secondaries' finds.
#
# PEER_OUT is another host's output dir as a local path: fetch it first (rsync, an NFS
# mount, a CI artifact); docs/ci.md shows a loop. Files are only added, never changed,
# and moved into place in id order, so a running afl-fuzz never reads half a file and
# never skips one (it remembers the highest id it took from each instance).
#
# Exit status: 0 done, 2 bad input or a copy error.
set -euo pipefail
PROG=ci/$(basename "$0")

usage() {
	cat <<EOF
usage: $PROG [--host NAME] [--all-instances] OUT PEER_OUT...
  OUT               this host's AFL++ output dir (the -o dir: <findings>/afl)
  PEER_OUT          another host's output dir (a local copy or mount)
  --host NAME       this host's name as given to --afl-host (default: hostname -s)
  --all-instances   also copy the peers' secondaries (secN-HOST), not only main-HOST
exit status: 0 done, 2 bad input or a copy error
EOF
}

die() {
	echo "$PROG: $*" >&2
	exit 2
}

host=""
all=0
dirs=()
while [ $# -gt 0 ]; do
	case $1 in
	--host=*) host=${1#*=}; shift ;;
	--host) [ $# -ge 2 ] || die "--host needs a value"; host=$2; shift 2 ;;
	--all-instances) all=1; shift ;;
	-h | --help) usage; exit 0 ;;
	-*) die "unknown option '$1' (see '$PROG --help')" ;;
	*) dirs+=("$1"); shift ;;
	esac
done
[ ${#dirs[@]} -ge 2 ] || die "give this host's output dir and at least one peer's (see '$PROG --help')"
host=${host:-$(hostname -s)}
[[ $host =~ ^[A-Za-z0-9][A-Za-z0-9_.-]*$ ]] || die "--host '$host': not an instance name part"
out=${dirs[0]}
[ -d "$out" ] || die "$out: no such directory (this host's AFL++ output dir)"

copied=0
for peer in "${dirs[@]:1}"; do
	[ -d "$peer" ] || die "$peer: no such directory"
	[ "$(cd "$peer" && pwd -P)" != "$(cd "$out" && pwd -P)" ] || die "$peer is $out itself"
	for queue in "$peer"/*/queue; do
		[ -d "$queue" ] || continue
		inst=$(basename "$(dirname "$queue")")
		role=${inst%%-*}
		owner=${inst#*-}
		# default, main, secN: one host's names, which every host has: never synced.
		[ "$role" != "$inst" ] || { echo "skipped   $peer/$inst (not named after a host: --afl-host)"; continue; }
		[ "$owner" != "$host" ] || continue # our own, as the peer last saw it
		[[ $role = main || ($all = 1 && $role =~ ^sec[0-9]+$) ]] || continue
		dest=$out/$inst/queue
		if [ -e "$out/$inst/fuzzer_stats" ]; then
			die "$out/$inst is a running or finished local instance: is $peer a copy of this host's dir?"
		fi
		mkdir -p "$dest"
		stage=$out/.sync-incoming/$inst # AFL++ skips dot dirs
		rm -rf "$stage"
		mkdir -p "$stage"
		new=()
		for f in "$queue"/id:*; do
			[ -f "$f" ] || continue
			name=${f##*/}
			if [ -e "$dest/$name" ]; then continue; fi
			cp -p "$f" "$stage/$name" || die "cannot copy $f"
			new+=("$name")
		done
		# Ids are zero-padded: the sorted order is the id order.
		while IFS= read -r name; do
			[ -n "$name" ] || continue
			mv "$stage/$name" "$dest/$name" || die "cannot move $stage/$name into $dest"
		done < <(printf '%s\n' "${new[@]+"${new[@]}"}" | sort)
		rmdir "$stage" 2>/dev/null || true
		echo "synced    $peer/$inst: ${#new[@]} new inputs into $dest"
		copied=$((copied + ${#new[@]}))
	done
done
rmdir "$out/.sync-incoming" 2>/dev/null || true
echo "afl-sync: $copied new inputs into $out"

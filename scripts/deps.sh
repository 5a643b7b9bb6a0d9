#!/bin/sh
# deps.sh - install what copyfuzz needs, idempotently; silent when all is there.
#   Debian packages (apt-get, as root) and the project venv (.venv) from the
#   pinned requirements.txt. A stamp per step makes the no-op case fast.
#   `deps.sh kernel` adds what building and booting kernels needs (copyfuzz kernel,
#   confirm, make check-kernel); the kernel sources themselves are installed on first use.
#   `deps.sh packages` and `deps.sh venv` take one step only: `make check` sets up the
#   venv beside the builds, which need only the packages.
set -eu
cd "$(dirname "$0")/.."

kernel="" steps=""
for word in "$@"; do
	case $word in
	kernel) kernel=1 ;;
	packages | venv) steps="$steps $word" ;;
	*)
		echo "deps.sh: unknown word '$word' (expected kernel, packages or venv)" >&2
		exit 2
		;;
	esac
done
[ -n "$steps" ] || steps="packages venv" # no step named: both
wants() { case " $steps " in *" $1 "*) return 0 ;; esac; return 1; }

PACKAGES="make qemu-user gcc-riscv64-linux-gnu binutils-riscv64-linux-gnu libc6-dev-riscv64-cross
gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu gcc-arm-linux-gnueabihf binutils-arm-linux-gnueabihf
libc6-dev-arm64-cross libc6-dev-armhf-cross
clang lld libclang-rt-14-dev llvm python3-venv afl++ clang-format shellcheck"
if [ "$kernel" ]; then
	PACKAGES="$PACKAGES
qemu-system-misc qemu-system-arm opensbi flex bison bc"
fi

# Asked of dpkg only when its database changed since all were there (the stamp holds the
# list they were checked against): the tool runs this before every command.
pkg_stamp=.venv/.packages${kernel:+-kernel}.stamp
dpkg_db=/var/lib/dpkg/status
missing=""
if wants packages && { [ ! -f "$pkg_stamp" ] || [ -n "$(find "$dpkg_db" -newer "$pkg_stamp" 2>/dev/null)" ] ||
	[ "$(cat "$pkg_stamp")" != "$PACKAGES" ]; }; then
	checked=1
	for p in $PACKAGES; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing="$missing $p"
	done
fi
if [ -n "$missing" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "copyfuzz: missing Debian packages:$missing" >&2
		echo "copyfuzz: install them as root: apt-get install -y$missing (or run 'make deps' as root)" >&2
		exit 2
	fi
	echo "copyfuzz: installing Debian packages:$missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >&2
fi

# pip in the venv: its own if it has one; else pip run from the wheel Python keeps for
# ensurepip, never installed (a venv's own pip is 7 s of a new venv's 11); else, where
# that wheel cannot be found or does not do it, the pip ensurepip installs.
BUNDLED_PIP='import ensurepip, os
p = ensurepip._get_packages()["pip"]
w = p.wheel_path or os.path.join(os.path.dirname(ensurepip.__file__), "_bundled", p.wheel_name)
print(w if os.path.isfile(w) else "")'
venv_pip() {
	if ! .venv/bin/python -c 'import pip' 2>/dev/null; then
		wheel=$(.venv/bin/python -c "$BUNDLED_PIP" 2>/dev/null || true)
		if [ -n "$wheel" ] && .venv/bin/python "$wheel/pip" "$@"; then
			return
		fi
		.venv/bin/python -m ensurepip >&2 || return
	fi
	.venv/bin/python -m pip "$@"
}

stamp=.venv/.requirements.stamp
if wants venv && { [ ! -x .venv/bin/python ] || [ ! -f "$stamp" ] || ! cmp -s requirements.txt "$stamp"; }; then
	echo "copyfuzz: setting up the Python venv (.venv)" >&2
	[ -x .venv/bin/python ] || python3 -m venv --without-pip .venv >&2
	# uv (its pin in requirements.txt) installs the pins in 4 s where pip takes 35 s, most
	# of it pip's own work (docs/perf.md); pip does it when uv cannot, and says so. uv
	# trusts the system's certificates, as pip does (not only those it carries).
	uv_pin=$(grep -x 'uv==[0-9.]*' requirements.txt || true)
	if [ -n "$uv_pin" ] && venv_pip install -q --no-compile --disable-pip-version-check "$uv_pin" >&2 &&
		.venv/bin/uv pip install -q --system-certs --python .venv/bin/python -r requirements.txt >&2; then
		:
	else
		echo "copyfuzz: uv could not install the pins; installing them with pip" >&2
		venv_pip install -q --disable-pip-version-check -r requirements.txt >&2
	fi
	cp requirements.txt "$stamp"
fi
# Nothing is missing: record that if we may (a user who cannot write .venv asks again).
if [ "${checked:-}" ]; then
	{ printf '%s\n' "$PACKAGES" >"$pkg_stamp.$$" && mv -f "$pkg_stamp.$$" "$pkg_stamp"; } 2>/dev/null ||
		rm -f "$pkg_stamp.$$" 2>/dev/null || true
fi

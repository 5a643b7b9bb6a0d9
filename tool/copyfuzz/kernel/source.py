"""Where a kernel's source comes from, and what identifies it for the build cache.

- Debian's packaged source (`--source 6.12`, the default, or `6.1`): the package
  `linux-source-<v>` is installed on first use (apt, as scripts/deps.sh does), its tarball
  extracted once into the build directory ($(O)/kernel/sources/), atomically.
- The user's tree (`--tree DIR`): read, never written. Builds use a *farm*, a directory of
  symbolic links to the tree's files (`--replace` puts our own copies in it), and kbuild's
  `O=` for every output.

A source's `identity` is what its content is: the package version, or the tree's git
revision plus a digest of its uncommitted changes (`git diff HEAD` and untracked files),
or, outside git, a digest of every file's path, size and modification time.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .. import atomic, procs
from ..errors import CopyfuzzError

DEBIAN_VERSIONS = ("6.12", "6.1")  # the default first
# In a tree, but never kbuild's input with O= (a tree built in place has them; kbuild then
# refuses O= builds), nor worth linking.
_SKIP_TOP = {".git", ".config", ".config.old", "include/config", "include/generated"}


@dataclass(frozen=True)
class Source:
    root: Path  # the tree kbuild reads (through a farm)
    label: str  # for people: "Debian linux-source-6.12 (6.12.57-1)", "tree ../linux (v6.13-rc1-dirty)"
    identity: str  # for the cache key
    owned: bool  # extracted by us (a Debian package), not the user's


def _package_version(package: str) -> str | None:
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}\t${Version}", package],
                       capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.startswith("install ok installed"):
        return None
    return r.stdout.split("\t", 1)[1]


def _install(package: str) -> None:
    if os.geteuid() != 0:
        raise CopyfuzzError(f"the kernel source needs the Debian package {package}: "
                            f"install it as root (apt-get install {package})")
    print(f"copyfuzz: installing the Debian package {package}", file=sys.stderr, flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for argv in (["apt-get", "update", "-qq"],
                 ["apt-get", "install", "-y", "-qq", "--no-install-recommends", package]):
        r = procs.run(argv, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise CopyfuzzError(f"cannot install {package}: {' '.join(argv)} failed",
                                details=(r.stdout + r.stderr)[-2000:])


def debian(version: str, sources_dir: Path) -> Source:
    """Debian's linux-source-<version>, installed and extracted when first used."""
    if version not in DEBIAN_VERSIONS:
        raise CopyfuzzError(f"--source {version}: Debian 12 packages {' and '.join(DEBIAN_VERSIONS)}")
    package = f"linux-source-{version}"
    pkg_version = _package_version(package)
    if pkg_version is None:
        _install(package)
        pkg_version = _package_version(package)
        if pkg_version is None:
            raise CopyfuzzError(f"{package} is still not installed after apt-get install")
    tarball = Path(f"/usr/src/{package}.tar.xz")
    if not tarball.is_file():
        raise CopyfuzzError(f"{tarball}: missing although {package} {pkg_version} is installed")
    target = sources_dir / f"{package}-{pkg_version}"
    if not (target / "Makefile").is_file():
        with atomic.locked(sources_dir / f".{package}.lock"):
            if not (target / "Makefile").is_file():
                _extract(tarball, package, target)
    return Source(target, f"Debian {package} ({pkg_version})", f"debian:{package}:{pkg_version}", True)


def _extract(tarball: Path, top: str, target: Path) -> None:
    """The tarball's top directory `top` into target, atomically (a killed extraction
    leaves only a temporary directory, removed by the next one)."""
    print(f"copyfuzz: extracting {tarball} (about a minute, once)", file=sys.stderr, flush=True)
    tmp = target.with_name(f".{target.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    r = procs.run(["tar", "-xJf", str(tarball), "-C", str(tmp)], capture_output=True, text=True)
    if r.returncode != 0 or not (tmp / top / "Makefile").is_file():
        shutil.rmtree(tmp, ignore_errors=True)
        raise CopyfuzzError(f"cannot extract {tarball}", details=r.stderr[-2000:])
    os.replace(tmp / top, target)
    shutil.rmtree(tmp, ignore_errors=True)


def _git(tree: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(tree), *args], capture_output=True)


def check_tree(path: Path) -> Path:
    """The tree's resolved root; CopyfuzzError when it is no kernel source tree."""
    root = path.resolve()
    if not (root / "Makefile").is_file() or not (root / "Kconfig").is_file() or not (root / "arch").is_dir():
        raise CopyfuzzError(f"--tree {path}: not a kernel source tree (no Makefile, Kconfig and arch/ there)")
    return root


def tree(path: Path) -> Source:
    """The user's kernel tree, as it is now (uncommitted changes included)."""
    root = check_tree(path)
    h = hashlib.sha256()
    head = _git(root, "rev-parse", "--show-toplevel", "HEAD")
    lines = head.stdout.decode(errors="replace").split()
    if head.returncode == 0 and len(lines) == 2 and Path(lines[0]).resolve() == root:
        rev = lines[1]
        h.update(_git(root, "diff", "HEAD", "--binary", "--no-ext-diff").stdout)
        untracked = _git(root, "ls-files", "-z", "--others", "--exclude-standard").stdout.split(b"\0")
        for raw in sorted(u for u in untracked if u):
            h.update(raw + b"\0")
            f = root / os.fsdecode(raw)
            if f.is_file():
                h.update(hashlib.sha256(f.read_bytes()).digest())
        dirty = h.hexdigest()[:12]
        return Source(root, f"tree {path} (git {rev[:12]}, changes {dirty})", f"git:{rev}:{dirty}", False)
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        dirnames[:] = sorted(d for d in dirnames if _wanted(rel, d))
        for name in sorted(filenames):
            if not _wanted(rel, name):
                continue
            st = os.lstat(os.path.join(dirpath, name))
            h.update(f"{rel}/{name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    stamp = h.hexdigest()[:16]
    return Source(root, f"tree {path} (files {stamp})", f"files:{root}:{stamp}", False)


def _wanted(rel: str, name: str) -> bool:
    path = name if rel == "." else f"{rel}/{name}"
    return path not in _SKIP_TOP


def make_farm(src: Path, farm: Path) -> None:
    """farm mirrors src: directories made, files symbolic links (kbuild reads through them;
    the tree is never opened for writing). Made anew each time (a tree's files may have come
    and gone), under a temporary name, then renamed into place."""
    tmp = farm.with_name(f".{farm.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for dirpath, dirnames, filenames in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        dirnames[:] = [d for d in dirnames if _wanted(rel, d) and not os.path.islink(os.path.join(dirpath, d))]
        out = tmp if rel == "." else tmp / rel
        out.mkdir(parents=True, exist_ok=True)
        for name in filenames:
            if _wanted(rel, name):
                os.symlink(os.path.join(dirpath, name), out / name)
        for d in os.listdir(dirpath):
            full = os.path.join(dirpath, d)
            if os.path.islink(full) and os.path.isdir(full) and _wanted(rel, d):
                os.symlink(os.readlink(full), out / d)  # a tree's own directory link, as it is
    shutil.rmtree(farm, ignore_errors=True)
    os.replace(tmp, farm)

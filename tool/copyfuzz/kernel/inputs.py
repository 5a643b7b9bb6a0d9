"""What the kernel commands take from their command line, checked at the edge: the
architecture, the source (Debian's package or a tree), replacements and a config
fragment, turned into a build.Request. One line and exit 2 for anything wrong."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Sequence

from .. import paths, targets
from ..errors import CopyfuzzError
from ..options import KernelBuildOptions
from . import build, source

MAX_REPLACEMENT = 16 << 20  # bytes: a source file, not a disk image




def read_limited(path: Path, what: str) -> bytes:
    try:
        st = os.stat(path)
        if not os.path.isfile(path):
            raise CopyfuzzError(f"{what} {path}: not a regular file")
        if st.st_size > MAX_REPLACEMENT:
            raise CopyfuzzError(f"{what} {path}: {st.st_size} bytes, more than {MAX_REPLACEMENT} allowed")
        return path.read_bytes()
    except OSError as e:
        raise CopyfuzzError(f"{what} {path}: {e.strerror or e}") from e


def tree_path(rel: str, what: str) -> str:
    """A path inside a kernel tree as the user gave it (--replace's PATH, confirm's --as):
    relative, no '..', nothing but plain components; CopyfuzzError otherwise."""
    pure = PurePosixPath(rel)
    if not rel or pure.is_absolute() or ".." in pure.parts or rel != str(pure):
        raise CopyfuzzError(f"{what} {rel!r}: the path must be a plain path inside the tree "
                            "(relative, no '..'), e.g. arch/riscv/lib/uaccess.S")
    return rel


def file_of_tree(root: Path, rel: str) -> bool:
    """Is rel a regular file of the tree at root, reached through no symbolic link (a link
    could lead a replacement's write out of the build's farm into the tree)?"""
    here = root
    for part in PurePosixPath(rel).parts:
        here = here / part
        if here.is_symlink():
            return False
    return here.is_file()


def _replacement_specs(specs: Sequence[str]) -> list[tuple[str, Path]]:
    """--replace's PATH=FILE words, checked without the tree: (path, file)."""
    out: list[tuple[str, Path]] = []
    for spec in specs:
        rel, eq, file = spec.partition("=")
        if not eq or not rel or not file:
            raise CopyfuzzError(f"--replace {spec!r}: expected PATH=FILE, e.g. arch/riscv/lib/uaccess.S=fix.S")
        tree_path(rel, "--replace")
        if rel in (r for r, _ in out):
            raise CopyfuzzError(f"--replace: {rel} is given twice")
        out.append((rel, Path(file)))
    return out


def replacements(specs: Sequence[str], src: source.Source) -> tuple[tuple[str, bytes], ...]:
    out: dict[str, bytes] = {}
    for rel, file in _replacement_specs(specs):
        if not file_of_tree(src.root, rel):
            raise CopyfuzzError(f"--replace {rel}={file}: {rel} is not a file of {src.label} (a regular file, "
                                "reached through no symbolic link)")
        out[rel] = read_limited(file, "--replace")
    return tuple(sorted(out.items()))


def check(root: Path, opts: KernelBuildOptions) -> None:
    """Everything that can be refused before packages are installed or a source is
    extracted: the build directory (make must be able to take it), the replacements'
    words and files, the fragment, a tree's shape."""
    paths.make_vars(root)
    for _, file in _replacement_specs(opts.replace):
        read_limited(file, "--replace")
    if opts.config is not None:
        user = build.parse_fragment(read_limited(opts.config, "--config").decode(errors="replace"), str(opts.config))
        ours = {o.name: o for name in ("common.config", f"{opts.arch}.config")
                for o in build.parse_fragment((build.CONFIG_DIR / name).read_text(), f"kernel/config/{name}")}
        for o in user:
            mine = ours.get(o.name)
            if mine is not None and not mine.optional and mine.value != o.value:
                raise CopyfuzzError(f"--config {opts.config}: {o.name}={o.value} contradicts {mine.origin}, which "
                                    f"needs {o.name}={mine.value} (the prober's VM depends on it)")
    if opts.tree is not None:
        source.check_tree(opts.tree)


def request(root: Path, opts: KernelBuildOptions, jobs: int | None = None,
            extra: tuple[tuple[str, bytes], ...] = ()) -> build.Request:
    """extra: replacements the command adds itself (confirm's FILE), after --replace's."""
    arch = targets.get(opts.arch)
    if opts.tree is not None:
        src = source.tree(opts.tree)
    else:
        src = source.debian(opts.source, build.kernel_dir(root) / "sources")
    fragment = ""
    if opts.config is not None:
        fragment = read_limited(opts.config, "--config").decode(errors="replace")
        build.parse_fragment(fragment, str(opts.config))  # bad lines: one error now, not after the build
    repl = dict(replacements(opts.replace, src))
    for rel, content in extra:
        if rel in repl:
            raise CopyfuzzError(f"--replace {rel}: that is the file being confirmed")
        repl[rel] = content
    return build.Request(arch, src, tuple(sorted(repl.items())), fragment,
                         str(opts.config) if opts.config else "", jobs or os.cpu_count() or 1)

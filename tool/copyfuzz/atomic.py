"""Files that are whole or absent, and locks between concurrent runs.

Every file the tool keeps (regressions, corpus inputs, failures, artifacts) is written
aside under a name no other process uses, synced, then renamed into place: a reader, a
killed run or a full disk never leaves half of one. Runs that share a directory
(two campaigns on one corpus, findings or regressions directory) serialise their
read-modify-write steps with `locked`.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import secrets
import shutil
import tempfile
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Iterator

from .errors import CopyfuzzError


def _tmp_name(path: Path) -> Path:
    # Hidden (replay and the engines skip dot files) and unique to this process and call.
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")


BATCH = 256  # files write_many holds open at once


def write(path: Path, data: bytes | str, *, exclusive: bool = False) -> bool:
    """Write path atomically. exclusive: never replace an existing file (False if one is
    there); otherwise an existing file is replaced. An OSError is a CopyfuzzError naming
    the path (exit 2), and nothing is left behind."""
    return write_many([(path, data)], exclusive=exclusive)[0]


def write_many(files: list[tuple[Path, bytes | str]], *, exclusive: bool = False) -> list[bool]:
    """write() of each file, in order, its result each; all of a batch written aside
    before any is synced, and synced before any is renamed: the first fsync commits the
    journal for the batch, so a hundred files cost about one (a campaign's last corpus
    inputs, on a loaded machine, had taken seconds at one journal commit each). An
    OSError is a CopyfuzzError naming the path; no temporary is left behind, and the
    files placed before it stay."""
    out: list[bool] = []
    for start in range(0, len(files), BATCH):
        out += _write_batch(files[start:start + BATCH], exclusive)
    return out


def _write_batch(files: list[tuple[Path, bytes | str]], exclusive: bool) -> list[bool]:
    tmps: list[Path] = []
    fds: list[int] = []  # the temporaries still open
    out: list[bool] = []  # one a file placed (or found there, exclusive)
    path = files[0][0] if files else Path()  # the file at hand, for the error
    try:
        for path, data in files:
            raw = data.encode() if isinstance(data, str) else data
            tmps.append(_tmp_name(path))
            fds.append(os.open(tmps[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644))
            view = memoryview(raw)
            while view:
                view = view[os.write(fds[-1], view):]
        for k, fd in enumerate(fds):
            path = files[k][0]
            os.fsync(fd)
        while fds:
            os.close(fds.pop())
        for (path, _), tmp in zip(files, tmps, strict=True):
            if not exclusive:
                os.replace(tmp, path)
                out.append(True)
                continue
            try:
                os.link(tmp, path)  # fails if path exists: no replacing a concurrent writer's file
                out.append(True)
            except FileExistsError:
                out.append(False)
            os.unlink(tmp)
        return out
    except OSError as e:
        for fd in fds:
            with suppress(OSError):
                os.close(fd)
        for tmp in tmps[len(out):]:  # those not placed yet
            with suppress(OSError):
                os.unlink(tmp)
        raise CopyfuzzError(f"cannot write {path}: {e.strerror or e}") from e


def write_unique(directory: Path, stem: str, suffix: str, data: bytes | str) -> Path:
    """Write directory/stem{suffix}, or stem-2, stem-3 ... if taken; atomic and race-free."""
    k = 1
    while True:
        path = directory / (f"{stem}{suffix}" if k == 1 else f"{stem}-{k}{suffix}")
        if write(path, data, exclusive=True):
            return path
        k += 1


_TMP = re.compile(r"^\..+\.(?P<pid>\d+)-[0-9a-f]{8}\.tmp$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temporaries(directory: Path) -> None:
    """What write() of a killed process left: temporaries whose writer is gone (a live
    writer's, e.g. a concurrent campaign's, stay)."""
    for path in directory.glob(".*.tmp") if directory.is_dir() else []:
        m = _TMP.match(path.name)
        if m and not _alive(int(m.group("pid"))):
            path.unlink(missing_ok=True)


def private_tmpdir(prefix: str) -> Path:
    """A fresh directory under the temporary directory, named prefix + this pid; first
    removes those a killed run of ours left (same prefix, our user, writer gone)."""
    base = Path(tempfile.gettempdir())
    owner = re.compile(rf"^{re.escape(prefix)}(?P<pid>\d+)-")
    for old in base.glob(f"{prefix}*"):
        m = owner.match(old.name)
        try:
            mine = old.is_dir() and not old.is_symlink() and old.stat().st_uid == os.getuid()
        except OSError:
            continue
        if m and mine and not _alive(int(m.group("pid"))):
            shutil.rmtree(old, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-"))


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive flock on `path` (created if missing) for the duration: released by the
    kernel if the holder dies, so a killed run never leaves it held."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise CopyfuzzError(f"cannot lock {path}: {e.strerror or e}") from e
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                break
            except OSError as e:
                if e.errno != errno.EINTR:
                    raise
        yield
    finally:
        os.close(fd)


def try_lock(path: Path) -> int | None:
    """A non-blocking exclusive flock held until the returned fd is closed (by the process
    ending, at the latest); None if another live process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd

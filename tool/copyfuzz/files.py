"""Files the tool reads and writes, and what goes wrong with them, as one line.

A run that is going to fail writing its results should fail before it spends minutes
computing them: each option naming an output is checked up front, and a problem is
one line naming the option, the path and what is wrong. What cannot be known in
advance (a full disk) still fails when it happens; the commands print the results
they have before writing files, so those are never lost to a failed write. A read or
write error carries no file name of its own: these helpers add it.
"""

from __future__ import annotations

import hashlib
import os
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .errors import CopyfuzzError


def _nearest_existing(path: Path) -> Path:
    p = path.absolute()
    while not p.exists() and p.parent != p:
        p = p.parent
    return p


def _writable(d: Path) -> bool:
    # access(2) answers for root too where it matters: a read-only file system (EROFS).
    return os.access(d, os.W_OK | os.X_OK)


def check_dir(path: Path, option: str) -> None:
    """A directory the run writes into, created when first needed: the nearest part of
    it that exists must be a directory the run can write in."""
    there = _nearest_existing(path)
    if not there.is_dir():
        raise CopyfuzzError(f"{option} {path}: {there} is not a directory")
    if not _writable(there):
        raise CopyfuzzError(f"{option} {path}: cannot write in {there}")


def check_file(path: Path, option: str) -> None:
    """A file written when the run ends: not a directory, in a directory that exists and
    that the run can write in."""
    if path.is_dir():
        raise CopyfuzzError(f"{option} {path}: is a directory")
    parent = path.absolute().parent
    if not parent.is_dir():
        there = _nearest_existing(parent)
        why = f"{there} is not a directory" if not there.is_dir() else f"{parent} does not exist"
        raise CopyfuzzError(f"{option} {path}: {why}")
    if not _writable(parent) or (path.exists() and not os.access(path, os.W_OK)):
        raise CopyfuzzError(f"{option} {path}: cannot write it")


@contextmanager
def writing(path: Path, option: str) -> Iterator[None]:
    """A failed write of the file, as one line naming the option and the path (a write
    error such as a full disk carries no file name of its own)."""
    try:
        yield
    except OSError as e:
        raise CopyfuzzError(f"{option} {path}: cannot write it: {e.strerror or e}") from e


def read_input_bytes(path: Path, limit: int, option: str = "") -> bytes:
    """An input file's bytes: a regular file of at most limit bytes. A device, a FIFO or a
    file that grows past the limit while it is read (/dev/zero, a log being written) is
    refused in one line naming the option (if any) and the path, before it fills memory."""
    where = f"{option} {path}" if option else str(path)
    try:  # O_NONBLOCK: a FIFO with no writer is refused, not waited on
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise CopyfuzzError(f"{where}: not a regular file")
            data = f.read(limit + 1) if st.st_size <= limit else b""
    except OSError as e:
        raise CopyfuzzError(f"{where}: cannot read it: {e.strerror or e}") from None
    if st.st_size > limit or len(data) > limit:
        raise CopyfuzzError(f"{where}: larger than {limit >> 20} MiB")
    return data


def read_input_text(path: Path, option: str, limit: int) -> str:
    """A text input an option names (a baseline, ...): read_input_bytes, UTF-8."""
    data = read_input_bytes(path, limit, option)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CopyfuzzError(f"{option} {path}: not a text file (UTF-8)") from None


def file_digest(path: Path) -> str:
    """sha256 of a file's contents ('' if it cannot be read: never equal to a readable one's)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""

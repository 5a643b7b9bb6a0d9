"""The VM's initramfs: a newc cpio archive (what the kernel unpacks into its rootfs),
written by us so that no host tool or root privilege is needed.

    write(path, {"init": prober_bytes_exec, "cf-args": args_text})

Every entry is a regular file in / (directories and device nodes are made by the prober
itself: devtmpfs, proc, tmpfs); executables get mode 0755. The archive is published
atomically (atomic.py), so concurrent runs never read a half-written one.
"""

from __future__ import annotations

from pathlib import Path

from .. import atomic

_MAGIC = "070701"  # newc
_TRAILER = "TRAILER!!!"


def _pad4(n: int) -> int:
    return (4 - n % 4) % 4


def _entry(ino: int, name: str, mode: int, data: bytes) -> bytes:
    encoded = name.encode() + b"\0"
    fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(encoded), 0]
    header = (_MAGIC + "".join(f"{f:08x}" for f in fields)).encode()
    out = header + encoded + b"\0" * _pad4(len(header) + len(encoded))
    return out + data + b"\0" * _pad4(len(data))


def archive(files: dict[str, tuple[bytes, bool]]) -> bytes:
    """A newc archive of regular files: name -> (content, executable)."""
    parts = []
    for ino, (name, (data, executable)) in enumerate(sorted(files.items()), start=1):
        if "/" in name or not name or name in (".", ".."):
            raise ValueError(f"initramfs entry {name!r}: a plain name in / only")
        parts.append(_entry(ino, name, 0o100755 if executable else 0o100644, data))
    parts.append(_entry(0, _TRAILER, 0, b""))
    return b"".join(parts)


def write(path: Path, files: dict[str, tuple[bytes, bool]]) -> None:
    atomic.write(path, archive(files))

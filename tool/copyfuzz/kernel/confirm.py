"""From a routine-level case to the syscall cases that drive the kernel's routine the
same way (`copyfuzz confirm`, `check FILE --confirm`).

A user copy's case says n, where each side starts in its page and where the user side
stops being accessible. In the kernel the user side is the syscall's buffer and the
kernel side a page-cache page (files), a pipe page or a socket buffer:

- copy_from_user (the source faults): the syscalls that copy *to the kernel* (write,
  pwrite64, writev, pipe_write, sendto), with acc = src_fault and the kernel-side offset
  koff = the destination's page offset (dst_off mod 4096);
- copy_to_user (the destination faults): the syscalls that copy *to the user* (read,
  pread64, readv, pipe_read, recvfrom), acc = dst_fault, koff = src_off mod 4096;
- copy (one body for both directions, as RISC-V's __asm_copy_to_user): the side that
  faults decides; a case where both sides fault has no syscall (the kernel side of a
  user copy never faults) and is refused.

The kernel copies files a page at a time: with koff + n past the page's end the routine
is called with 4096 - koff bytes first; such a case is said to be split.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import records
from ..errors import CopyfuzzError
from . import casedef
from .options import KERNEL_ARCHES

PAGE = 4096


@dataclass(frozen=True)
class Mapping:
    direction: str  # casedef's to_kernel or to_user
    n: int
    acc: int
    koff: int
    note: str  # how the kernel will call the routine, when it differs from the case


def map_case(kind: str, n: int, src_off: int, src_fault: int | None, dst_off: int, dst_fault: int | None) -> Mapping:
    if kind not in records.USER_COPIES:
        raise CopyfuzzError(f"confirm: a {kind} routine is not a user copy: only {', '.join(records.USER_COPIES)} "
                            "cases have syscalls that drive them")
    if src_fault is not None and dst_fault is not None:
        raise CopyfuzzError("confirm: both sides fault in this case; the kernel side of a user copy never "
                            "faults, so no syscall drives it")
    if kind == "copy_from_user" or (kind == "copy" and src_fault is not None):
        if dst_fault is not None:
            raise CopyfuzzError("confirm: a copy_from_user case whose kernel side (dst) faults has no syscall")
        direction, acc, koff = "to_kernel", n if src_fault is None else min(src_fault, n), dst_off % PAGE
    elif kind == "copy_to_user" or (kind == "copy" and dst_fault is not None):
        if src_fault is not None:
            raise CopyfuzzError("confirm: a copy_to_user case whose kernel side (src) faults has no syscall")
        direction, acc, koff = "to_user", n if dst_fault is None else min(dst_fault, n), src_off % PAGE
    else:
        raise CopyfuzzError("confirm: neither side faults in this case: say which direction with a "
                            "copy_from_user or copy_to_user routine, or give a case with a fault")
    note = ""
    if koff + n > PAGE:
        note = (f"the kernel copies a file page by page: the routine is called with {PAGE - koff} bytes "
                f"first, not {n}")
    return Mapping(direction, n, acc, koff, note)


def syscall_cases(m: Mapping) -> list[str]:
    """The prober's case specs for a mapping: every syscall of its direction."""
    out = []
    for s in casedef.definition().syscalls:
        if s.direction != m.direction:
            continue
        case = casedef.Case(s.name, n=m.n, acc=m.acc, koff=m.koff if s.koff else 0)
        if case.problem() is None:  # e.g. a UDP datagram cannot be that long
            out.append(case.spec())
    return out


def tree_path(file: str) -> tuple[str, str] | None:
    """(arch, path in the tree) from a file's own path: the part from its last `arch/<arch>/`
    on, e.g. ../linux/arch/riscv/lib/uaccess.S -> ("riscv", "arch/riscv/lib/uaccess.S")."""
    parts = file.replace("\\", "/").split("/")
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == "arch" and i + 2 < len(parts) and parts[i + 1] in KERNEL_ARCHES:
            return parts[i + 1], "/".join(parts[i:])
    return None


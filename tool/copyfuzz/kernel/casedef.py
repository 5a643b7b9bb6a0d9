"""The prober's cases, from their one definition, kernel/prober/case.def.

The prober includes case.def as X-macros; this module parses the same file, so the tool
knows the same system calls, case fields, prots and finding classes in the same order,
and reads and writes the same case specs (tests/test_kernel_prober.py holds the two to
each other, message for message):

    case = casedef.Case.parse("read:n=5,acc=3")
    case.spec()   # 'read:n=5,acc=3,koff=0,segs=1,prot=none,gap=0'

It also reads the prober's output lines ("CF <type> key=value... #crc32"): parse_line()
keeps only lines whose checksum holds (kernel messages may interleave on a console).
"""

from __future__ import annotations

import functools
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from .. import xmacro
from ..errors import CopyfuzzError

DEF_FILE = Path(__file__).resolve().parents[3] / "kernel" / "prober" / "case.def"
UDP_MAX = 65507  # the largest IPv4 UDP payload (prober.h CF_UDP_MAX)
PIPE_CHUNK = 4096  # pipes must make progress once this many bytes are accessible (CF_PIPE_CHUNK)


@dataclass(frozen=True)
class Syscall:
    name: str
    direction: str  # to_kernel | to_user
    object: str  # file | pipe | udp
    iov: bool
    koff: bool


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # num | prot
    default: int  # prot: an index into prots
    lo: int
    hi: int
    meaning: str


@dataclass(frozen=True)
class Prot:
    name: str
    meaning: str


@dataclass(frozen=True)
class FindingClass:
    ident: str
    name: str
    meaning: str


@dataclass(frozen=True)
class Axis:
    name: str  # the prober's --NAME LIST
    default: str
    meaning: str


@dataclass(frozen=True)
class CaseDef:
    syscalls: tuple[Syscall, ...]
    fields: tuple[Field, ...]
    prots: tuple[Prot, ...]
    classes: tuple[FindingClass, ...]
    axes: tuple[Axis, ...]

    def axis(self, name: str) -> Axis:
        return next(a for a in self.axes if a.name == name)

    def syscall(self, name: str) -> Syscall:
        for s in self.syscalls:
            if s.name == name:
                return s
        raise KeyError(name)


_ARITY = {"CF_SYSCALL": 5, "CF_FIELD": 6, "CF_PROT": 2, "CF_CLASS": 3, "CF_AXIS": 3}


def parse(text: str, where: str = "case.def") -> CaseDef:
    """The definitions of a case.def text (comments and preprocessor lines skipped)."""
    entries: dict[str, list[list[str]]] = {k: [] for k in _ARITY}
    for macro, args in xmacro.calls(text, _ARITY, where):
        entries[macro].append([a.value for a in args])
    return CaseDef(
        syscalls=tuple(Syscall(a[0], a[1], a[2], a[3] == "1", a[4] == "1") for a in entries["CF_SYSCALL"]),
        fields=tuple(Field(a[0], a[1], int(a[2]), int(a[3]), int(a[4]), a[5]) for a in entries["CF_FIELD"]),
        prots=tuple(Prot(a[0], a[1]) for a in entries["CF_PROT"]),
        classes=tuple(FindingClass(a[0], a[1], a[2]) for a in entries["CF_CLASS"]),
        axes=tuple(Axis(a[0], a[1], a[2]) for a in entries["CF_AXIS"]),
    )


@functools.cache
def definition() -> CaseDef:
    """kernel/prober/case.def, parsed."""
    try:
        text = DEF_FILE.read_text()
    except OSError as e:
        raise CopyfuzzError(f"{DEF_FILE}: {e.strerror}") from e
    return parse(text, str(DEF_FILE))


def _u32(text: str) -> int | None:
    """A number as the prober reads one: 1 to 10 decimal digits, at most 2^32 - 1."""
    if not text or len(text) > 10 or not text.isascii() or not text.isdigit():
        return None
    v = int(text)
    return v if v <= 0xFFFFFFFF else None


@dataclass(frozen=True)
class Case:
    """One case: a syscall and the fields of case.def (prot by name)."""
    syscall: str
    n: int = 0
    acc: int = 0
    koff: int = 0
    segs: int = 1
    prot: str = "none"
    gap: int = 0

    @property
    def info(self) -> Syscall:
        return definition().syscall(self.syscall)

    def value(self, field: str) -> int | str:
        value: int | str = getattr(self, field)
        return value

    def spec(self) -> str:
        """The canonical spec: every field, in case.def's order."""
        return self.syscall + ":" + ",".join(f"{f.name}={self.value(f.name)}" for f in definition().fields)

    def problem(self) -> str | None:
        """What makes the case invalid (the prober's cf_case_check, word for word), or None."""
        d = definition()
        s = self.info
        for f in d.fields:
            v = self.value(f.name)
            num = [p.name for p in d.prots].index(str(v)) if f.type == "prot" else int(v)
            if not f.lo <= num <= f.hi:
                return f"{f.name}={num} is out of range {f.lo}..{f.hi}"
        if self.acc > self.n:
            return f"acc={self.acc} is more than n={self.n}"
        if self.gap and self.acc != self.n:
            return f"gap={self.gap} needs acc == n"
        if not s.koff and self.koff:
            return f"koff must be 0 for {s.name}"
        if s.object == "udp" and self.n > UDP_MAX:
            return f"n={self.n} is more than a UDP datagram holds ({UDP_MAX})"
        if not s.iov and self.segs != 1:
            return f"segs must be 1 for {s.name} (it takes no iovecs)"
        if s.direction == "to_kernel" and self.prot != d.prots[0].name:
            return f"prot={self.prot} needs a call that writes user memory, not {s.name}"
        return None

    @classmethod
    def parse(cls, text: str) -> Case:
        """A spec as the prober reads it (any order, missing fields take their defaults);
        CopyfuzzError with the prober's own message otherwise."""
        d = definition()

        def bad(why: str) -> CopyfuzzError:
            return CopyfuzzError(f"bad case spec '{text}': {why}")
        name, colon, rest = text.partition(":")
        if name not in [s.name for s in d.syscalls]:
            raise bad(f"unknown syscall '{name}'")
        values: dict[str, int | str] = {}
        items = rest.split(",") if rest else []
        for idx, item in enumerate(items):
            if not item and idx == len(items) - 1:
                raise bad("it ends in ','")
            key, eq, val = item.partition("=")
            if not eq:
                raise bad(f"'{item}' is not key=value")
            field = next((f for f in d.fields if f.name == key), None)
            if field is None:
                raise bad(f"unknown key '{key}' (keys: {', '.join(f.name for f in d.fields)})")
            if key in values:
                raise bad(f"{key} given twice")
            if field.type == "prot":
                if val not in [p.name for p in d.prots]:
                    raise bad(f"prot={val} is not a prot")
                values[key] = val
            else:
                num = _u32(val)
                if num is None:
                    raise bad(f"{key}={val} is not a number")
                values[key] = num
        for f in d.fields:
            values.setdefault(f.name, d.prots[f.default].name if f.type == "prot" else f.default)
        case = cls(name, **values)  # type: ignore[arg-type]
        why = case.problem()
        if why:
            raise bad(why)
        return case


# ---- the prober's output lines ----
@dataclass(frozen=True)
class Line:
    type: str
    fields: dict[str, str]  # values percent-decoded


_LINE = re.compile(r"CF (\w+)((?: \S+=\S*)*) #([0-9a-f]{8})")


def parse_line(text: str) -> Line | None:
    """One prober line, or None for anything else (a kernel message, a line whose
    checksum does not hold). The checksum is zlib's crc32 of everything before ' #'."""
    text = text.rstrip("\r\n")
    start = text.find("CF ")
    if start < 0:
        return None
    text = text[start:]
    m = _LINE.fullmatch(text)
    if not m:
        return None
    body = text[:m.start(3) - 2]
    if f"{zlib.crc32(body.encode()):08x}" != m.group(3):
        return None
    fields = {}
    for item in m.group(2).split():
        key, _, val = item.partition("=")
        fields[key] = unquote(val)
    return Line(m.group(1), fields)

"""Routines from outside the tree: a kernel-style .S file checked as it is.

`copyfuzz check path/uaccess.S --symbol SYM[:KIND]` builds the file against the
compat include tree of its architecture (harness/compat/<arch>/include), which stands
in for the kernel's headers, with CONFIG_* switches off unless given with -D (those a
kernel of the architecture and width always has are on: generated/autoconf.h there).
The architecture is --arch, else what infer.arch_of works out (the file's path, its
instructions) and says; the kind is :KIND, else what its name says (infer.py). `-I DIR`, `--with FILE`
and `--defsym NAME=VALUE` (FileBuild) build files that need more than themselves.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from . import infer, paths, records, targets
from . import isa as isas
from .errors import CopyfuzzError
from .routines import Routine


def compat_include(arch: str) -> str:
    """The kernel's headers as copyfuzz gives them meaning in userspace."""
    return f"harness/compat/{arch}/include"


# What every kernel build of an architecture and width defines (RISC-V's Kconfig: RISCV,
# ARCH_RV64I/RV32I selecting 64BIT/32BIT, keyed on __riscv_xlen), included before the
# file, as the kernel's `-include linux/kconfig.h` includes generated/autoconf.h.
AUTOCONF_H = "generated/autoconf.h"
# Linked with every file built with -D CONFIG_RISCV_ISA_V: enter_vector_usercopy and
# riscv_v_usercopy_threshold (-D CONFIG_RISCV_ISA_V_UCOPY_THRESHOLD=N; 768 otherwise).
VECTOR_GLUE = "harness/compat/riscv/lib/riscv_v_helpers.c"
# Linked with every 32-bit ARM file: __memzero, which copy_from_user fixups up to 4.11
# call (weak; -D CF_ARM_MEMZERO_SKIP makes it do nothing).
ARM_MEMZERO = "harness/compat/arm/lib/memzero.S"
ALWAYS_DEFINED = {64: ("CONFIG_RISCV", "CONFIG_64BIT", "CONFIG_ARCH_RV64I"),
                  32: ("CONFIG_RISCV", "CONFIG_32BIT", "CONFIG_ARCH_RV32I")}
# NAME, NAME=VALUE, or a function-like NAME(ARGS)=VALUE (U-Boot's CONFIG_IS_ENABLED(x)=0)
_DEFINE = re.compile(r"[A-Za-z_]\w*(\(\s*(?:[A-Za-z_]\w*\s*(?:,\s*[A-Za-z_]\w*\s*)*)?\))?(=.*)?")
_NUMBER = r"(?:0[xX][0-9a-fA-F]+|\d+)"
_SYMBOL = r"[A-Za-z_.$][\w.$]*"
_DEFSYM = re.compile(rf"{_SYMBOL}=(?:{_SYMBOL}|{_NUMBER})(?:[+-]{_NUMBER})?")
WITH_SUFFIXES = (".S", ".s", ".c")


# BSD kernels (FreeBSD, OpenBSD) handle a fault in copyin/copyout with no exception table:
# the routine stores a handler's address in the thread's pcb_onfault (SET_FAULT_HANDLER,
# SWAP_FAULT_HANDLER), the trap handler resumes there, and the routine returns 0 or EFAULT.
BSD_COPY_NAMES = ("copyin", "copyout", "copyinstr", "copyoutstr", "copyin32", "kcopy")
_ONFAULT = re.compile(r"\b(?:\w*onfault\w*|(?:SET|SWAP)_FAULT_HANDLER)\b", re.IGNORECASE)
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
BSD_UNSUPPORTED = ("the BSD onfault convention (int copyin/copyout(...) returning 0 or EFAULT, a fault "
                   "resuming at a handler stored in the thread's pcb_onfault, no __ex_table) is not "
                   "supported: copyfuzz runs exception-table fixups (kinds copy, clear) and routines "
                   "without fixups (memcpy, memset, memmove)")


def onfault_reference(text: str) -> str | None:
    """The first onfault-style name in assembly source outside comments, or None."""
    m = _ONFAULT.search(_COMMENT.sub(" ", text))
    return m.group(0) if m else None


def no_extable_message(path: Path, symbol: str, kind: str) -> str | None:
    """Why `check` refuses a routine in a file without an exception table, or None when its
    kind needs none: a BSD-named routine never, whatever its kind (its contract is none of
    ours); a copy or clear routine with a hint at the kinds that fit."""
    if symbol in BSD_COPY_NAMES:
        return f"{path}: {symbol} has no exception table (__ex_table) and is named as a BSD routine: {BSD_UNSUPPORTED}"
    if kind in records.RETURNS_DST:
        return None
    return (f"{path}: {symbol} is a {kind} routine but the file has no exception table "
            f"(__ex_table): every fault would be unhandled. {no_extable_hint(symbol, kind)}")


def no_extable_hint(symbol: str, kind: str) -> str:
    """What to try when a copy or clear routine has no exception table: the kinds without
    fixups whose arguments are the same as this kind's (never memcpy for a memset)."""
    try:
        guessed = infer.kind_from_name(symbol).value
    except CopyfuzzError:
        guessed = ""
    if guessed in records.RETURNS_DST:
        return f"Wrong kind? By its name it is a {guessed}: --symbol {symbol}:{guessed}"
    fits = [k for k in records.RETURNS_DST if records.KIND_ARGS[k] == records.KIND_ARGS[kind]]
    if not fits:
        return f"Wrong symbol? No kind without fixups takes ({', '.join(records.KIND_ARGS[kind])})"
    return (f"Wrong symbol, or a routine without fixups that takes ({', '.join(records.KIND_ARGS[kind])}) "
            f"and returns dst: " + " or ".join(f"--symbol {symbol}:{k}" for k in fits))


def parse_symbol(text: str, default_kind: str | None) -> tuple[str, str]:
    """'SYM' or 'SYM:KIND' -> (symbol, kind): the kind given, or '' for one to work out
    (selection.file_routine)."""
    symbol, _, kind = text.partition(":")
    if not re.fullmatch(r"[A-Za-z_.$][\w.$]*", symbol):
        raise CopyfuzzError(f"--symbol {text!r}: not a symbol name")
    kind = kind or default_kind or ""
    if kind and kind not in records.KINDS:
        raise CopyfuzzError(f"--symbol {text!r}: kind must be one of {', '.join(records.KINDS)}")
    return symbol, kind


def check_defines(defines: list[str]) -> list[str]:
    for d in defines:
        if not _DEFINE.fullmatch(d):
            raise CopyfuzzError(f"-D {d!r}: expected NAME, NAME=VALUE or NAME(ARGS)=VALUE")
    return defines


@dataclass(frozen=True)
class FileBuild:
    """How a file from outside the tree is built, each option as given on the command line
    (paths relative to where copyfuzz runs): what `# options:` records for repro and replay."""

    defines: tuple[str, ...] = ()
    alternative: bool = False
    includes: tuple[str, ...] = ()
    withs: tuple[str, ...] = ()
    defsyms: tuple[str, ...] = ()
    arch: str = ""  # --arch as given ("": worked out, infer.py)
    cpu: str = ""  # --cpu: QEMU's CPU model ("": its default, or the --isa's)

    def check(self, xlen: int, arch: str) -> None:
        check_defines(list(self.defines))
        other = ALWAYS_DEFINED[32 if xlen == 64 else 64] if arch == "riscv" else ()
        for d in self.defines:
            name = d.partition("=")[0]
            if name in other and name not in ALWAYS_DEFINED[xlen]:
                raise CopyfuzzError(f"-D {d}: a kernel of --xlen {xlen} never defines {name} "
                                    f"(it defines {', '.join(ALWAYS_DEFINED[xlen])} itself)")
        for i in self.includes:
            if not Path(i).is_dir():
                raise CopyfuzzError(f"-I {i}: {'not a directory' if Path(i).exists() else 'no such directory'}")
        for w in self.withs:
            if not w.endswith(WITH_SUFFIXES):
                raise CopyfuzzError(f"--with {w}: expected an assembly (.S) or C (.c) source")
            if not Path(w).is_file():
                raise CopyfuzzError(f"--with {w}: {'a directory, not a file' if Path(w).is_dir() else 'no such file'}")
        for d in self.defsyms:
            if not _DEFSYM.fullmatch(d):
                raise CopyfuzzError(f"--defsym {d!r}: expected NAME=VALUE, VALUE a number or a symbol "
                                    "(optionally +/- a number)")

    @property
    def words(self) -> tuple[str, ...]:
        """The options, as `copyfuzz repro` takes them (Routine.build_flags)."""
        out = [f"-D{d}" for d in self.defines] + (["--alternative"] if self.alternative else [])
        out += ["--arch", self.arch] if self.arch else []
        out += ["--cpu", self.cpu] if self.cpu else []
        for flag, values in (("-I", self.includes), ("--with", self.withs), ("--defsym", self.defsyms)):
            for v in values:
                out += [flag, v]
        return tuple(out)


def external_routine(root: Path, path: Path, symbol: str, kind: str, *, xlen: int | None,
                     build: FileBuild, profile: str, isa: isas.Isa | None = None, kind_reason: str = "",
                     arch_of_file: infer.Inferred | None = None) -> Routine:
    """The routine SYMBOL of a file from outside the tree. kind_reason says why it is of
    its kind when the command line did not; the architecture is --arch, else arch_of_file
    (a caller that worked it out already), else infer.arch_of's."""
    if path.suffix not in (".S", ".s"):
        raise CopyfuzzError(f"{path}: expected an assembly source (.S)")
    if not path.is_file():
        raise CopyfuzzError(f"{path}: {'a directory, not a file' if path.is_dir() else 'no such file'}")
    src = path.resolve()
    try:
        text = src.read_text(errors="replace")
    except OSError as e:
        raise CopyfuzzError(f"{path}: cannot read ({e.strerror})") from None
    onfault = onfault_reference(text)
    if onfault:
        raise CopyfuzzError(f"{path}: {symbol}: the file uses {onfault}: {BSD_UNSUPPORTED}")
    if build.arch:
        arch, arch_reason = build.arch, ""
    elif isa is not None and infer.arch_from_path(path) is None:
        arch, arch_reason = "riscv", "arch riscv: --isa names RISC-V extensions"
    else:
        inferred = arch_of_file or infer.arch_of(path, infer.with_local_includes(path, text))
        arch, arch_reason = inferred.value, inferred.reason
    if isa is not None and arch != "riscv":  # before the width, which --isa set
        raise CopyfuzzError(f"--isa/--vlen name RISC-V extensions; {path} is built for {arch}")
    xlen = targets.get(arch).width(xlen)
    if isa is not None and build.cpu:
        raise CopyfuzzError("--cpu and --isa both choose QEMU's CPU: give one")
    build.check(xlen, arch)
    flags = [f"-D{d}" for d in build.defines] + (["-DCF_ALTERNATIVE"] if build.alternative else [])
    if isa is not None and isa.is_default:
        isa = None
    if isa is not None:
        flags.append(f"-march={isa.march}")  # after the harness's own: the routine's (and --with files')
    includes = [str(Path(i).resolve()) for i in build.includes]
    withs = [str(Path(w).resolve()) for w in build.withs]
    key = "\0".join([str(src), symbol, kind, arch, str(xlen), *flags, "-I", *includes, "--with", *withs,
                     "--defsym", *build.defsyms]).encode()
    digest = hashlib.sha1(key).hexdigest()[:10]
    # One executor per file, symbol and build (the digest); the name is only a label.
    label = re.sub(r"[^\w.-]+", "_", f"{src.stem}-{symbol}")
    where = paths.isa_dir(paths.REL, xlen, isa.march, arch) if isa else paths.check_dir(paths.REL, xlen, arch)
    elf = str(where / f"{label}-{digest}.elf")
    # The compat tree stands in for the kernel's headers; -I directories serve what it does
    # not have, then the file's own directory its local includes. Each flag is one
    # argument: no value is ever parsed.
    compat = compat_include(arch)
    asflags = ("-include", f"{compat}/{AUTOCONF_H}", f"-I{compat}", *(f"-I{i}" for i in includes), f"-I{src.parent}",
               *flags)
    link_args: list[str] = []
    if any(d.partition("=")[0] == "CONFIG_RISCV_ISA_V" for d in build.defines):
        # The kernel's C glue of its vector user copy, modelled (every name weak).
        link_args += ["--with", str((root / VECTOR_GLUE).resolve())]
    if arch == "arm":
        link_args += ["--with", str((root / ARM_MEMZERO).resolve())]
    for w in withs:
        link_args += ["--with", w]
    for d in build.defsyms:
        link_args += ["--defsym", d]
    return Routine(name=f"{path}:{symbol}", path=src, symbol=symbol, kind=kind, profile=profile,
                   about=f"{path} ({' '.join(build.words) or 'no -D'})", xlen=xlen,
                   external_elf=elf, asflags=asflags, link_args=tuple(link_args), build_flags=build.words,
                   isa=isa, arch=arch, kind_reason=kind_reason, arch_reason=arch_reason, cpu=build.cpu)


def conditional_hint(symbol: str, sources: list[Path]) -> str:
    """Where a symbol that was not built appears in the sources as a definition would (its
    label, a .globl/.type/.weak line, a macro's first argument such as ENTRY(name)): inside
    which #if, the hint that the definition sits behind a switch that is off. A name only
    used there (`jal name`) is said to be defined elsewhere ('' if it does not appear)."""
    name = re.escape(symbol)
    word = re.compile(rf"(?<![\w.$]){name}(?![\w.$])")
    defines = re.compile(rf"^\s*{name}\s*:|^\s*\.(?:globl|global|weak|type|size|set|equ)\s+{name}(?![\w.$])"
                         rf"|\(\s*{name}\s*[,)]")
    used_in: str | None = None
    for src in sources:
        try:
            lines = src.read_text(errors="replace").splitlines()
        except OSError:
            continue
        stack: list[str] = []
        defined_at: int | None = None
        for lineno, line in enumerate(lines, 1):
            directive = line.strip()
            if re.match(r"#\s*if", directive):
                stack.append(directive)
            elif re.match(r"#\s*endif", directive) and stack:
                stack.pop()
            elif defines.search(line):
                if stack:
                    m = re.match(r"#\s*if(?:n?def)?\s+(?:defined\s*\(?\s*)?([A-Za-z_]\w*)", stack[-1])
                    switch = f"-D {m.group(1)}" if m and m.group(1) != "defined" else "-D NAME"
                    return (f"; '{symbol}' appears at {src.name}:{lineno} inside `{stack[-1]}`: its definition "
                            f"may be switched off there (try {switch})")
                defined_at = defined_at or lineno
            elif used_in is None and word.search(line):
                used_in = src.name
        if defined_at is not None:
            return (f"; '{symbol}' appears at {src.name}:{defined_at} as a definition but is not built (behind a "
                    "macro or a switch? -D NAME)")
    if used_in is not None:
        return (f"; '{symbol}' is only used in {used_in}, not defined: its definition is in another file "
                "(check that file, or add it with --with FILE)")
    return ""


def explain_link_failure(message: str, routine: Routine) -> CopyfuzzError:
    """harness/link-executor.sh's exit 3 (the file built but is not this routine), as one line."""
    text = " ".join(message.split())
    if "is not defined there" in text:
        text += conditional_hint(routine.symbol, [routine.path, *routine.with_files])
    return CopyfuzzError(f"{routine.name.rpartition(':')[0]}: {text}")


_C_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+\.c)[>"]', re.MULTILINE)
_FIRST_SWITCH = re.compile(r"^\s*#\s*if(?:n?def)?\s+(?:!?\s*defined\s*\(?\s*)?([A-Za-z_]\w*)", re.MULTILINE)


def c_reached_assembler(details: str, path: Path) -> str:
    """When C reached the assembler through a C file the source includes (picolibc's
    memcpy-asm.S includes memcpy.c: its C part, or its assembly, is chosen by a switch):
    which file, and the switch that file tests first ('' when that is not the failure)."""
    if "unrecognized opcode" not in details:
        return ""
    try:
        m = _C_INCLUDE.search(path.read_text(errors="replace"))
    except OSError:
        return ""
    if not m:
        return ""
    switch = ""
    try:
        first = _FIRST_SWITCH.search((path.parent / m.group(1)).read_text(errors="replace"))
        switch = f" (its first switch: try -D {first.group(1)})" if first else ""
    except OSError:
        pass
    return (f"; C code reached the assembler: {path.name} includes {m.group(1)}, whose assembly "
            f"is chosen by a switch{switch}")


def compat_headers(root: Path, arch: str) -> list[str]:
    """The kernel headers the compat tree of arch has, as a file includes them."""
    tree = root / compat_include(arch)
    return sorted(f"<{h.relative_to(tree)}>" for d in ("linux", "asm") for h in (tree / d).glob("*.h"))


# What copyfuzz links in itself when a switch asks for it: a --with of a file of the
# same name is the kernel's own glue, which copyfuzz models (VECTOR_GLUE, ARM_MEMZERO).
MODELLED = {Path(VECTOR_GLUE).name: "-D CONFIG_RISCV_ISA_V", Path(ARM_MEMZERO).name: "every 32-bit ARM file"}
_FAILED_AT = re.compile(r"^(.+?):\d+(?::\d+)?: (?:fatal )?(?:error|Error):", re.MULTILINE)


def explain_build_failure(e: CopyfuzzError, path: Path, arch: str, root: Path,
                          withs: "list[Path] | None" = None) -> CopyfuzzError:
    """A build error: which file failed (the routine's, or a --with file's), with where
    the kernel's includes come from (the headers of the architecture it was built for)."""
    details = e.details or ""
    failed = {Path(m).name for m in _FAILED_AT.findall(details)}
    culprit = next((w for w in withs or [] if w.name in failed and path.name not in failed), None)
    if culprit is not None:
        modelled = (f"; copyfuzz models {culprit.name} itself ({'linked with ' + MODELLED[culprit.name]}): "
                    f"drop --with {culprit}" if culprit.name in MODELLED else "")
        return CopyfuzzError(f"--with {culprit} does not build for {arch} (the compiler's messages follow); "
                             f"{path.name} is not the file that failed{modelled}", details=e.details)
    headers = compat_headers(root, arch)
    shown = ", ".join(headers[:4] + (["..."] if len(headers) > 4 else []))
    return CopyfuzzError(
        f"{path} does not build for {arch} (the assembler's messages follow). Kernel includes "
        f"({shown}) resolve to copyfuzz's "
        f"compat tree {compat_include(arch)}; CONFIG_* switches are off unless given with -D; headers of "
        f"your own: -I DIR; symbols from other files: --with FILE.S{c_reached_assembler(details, path)}"
        + isa_hint(details) + config_value_hint(details),
        details=e.details)


def config_value_hint(messages: str) -> str:
    """A CONFIG_* the file uses as a number (a size, a shift) that nothing defined: name it,
    with the -D that gives it a value (the gas message is last, after any warnings)."""
    names = sorted(set(re.findall(r"undefined symbol `?(CONFIG_\w+)'? used as an immediate value", messages)))
    if not names:
        return ""
    return ("; " + ", ".join(names) + (" is" if len(names) == 1 else " are")
            + " used as a number but not defined: give " + " ".join(f"-D {n}=VALUE" for n in names)
            + " (the value your kernel's config has)")


def isa_hint(messages: str) -> str:
    """An instruction the assembler refuses for want of an extension: point at --isa."""
    m = re.search(r"extension `(\w+)'[^\n]* required", messages)
    if not m:
        return ""
    ext = m.group(1)
    example = "rv64gcv" if ext in ("v", "zve64x", "zve32x") else f"rv64gc_{ext}"
    return f"; instructions of an ISA extension ({ext}): give it with --isa, e.g. --isa {example}"

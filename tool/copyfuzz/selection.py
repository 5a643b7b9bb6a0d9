"""What a command runs on: bundled routines by name or pattern, or a .S file's symbols."""

from __future__ import annotations

import argparse
import dataclasses
import shlex
from pathlib import Path
from typing import Any

from . import build as buildstep
from . import infer, paths, targets
from . import isa as isas
from .checkfile import FileBuild, check_defines, external_routine, parse_symbol
from .errors import CopyfuzzError
from .routines import Routine, discover, select


def is_file_target(text: str) -> bool:
    return text.endswith((".S", ".s")) or Path(text).is_file()


def take_file_target(args: argparse.Namespace, attr: str = "routine") -> None:
    """One CLI shape: `bench|cov|fuzz FILE.S --symbol S` like `check FILE.S --symbol S`.
    A positional that is a file moves to args.file (where --file, its alias, puts it)."""
    value = getattr(args, attr, None)
    if value is not None and is_file_target(value):
        if getattr(args, "file", None):
            raise CopyfuzzError(f"give the file once: {value} or --file {args.file}, not both")
        args.file = value
        setattr(args, attr, None)
    elif value is not None and getattr(args, "file", None):
        raise CopyfuzzError(f"give a routine ({value}) or a file (--file {args.file}), not both")
    if not getattr(args, "file", None) and file_options_given(args):
        raise CopyfuzzError(f"{', '.join(file_options_given(args))}: for a FILE.S target only")


def is_file_spec(name: str) -> bool:
    """Does a spec's routine name a .S file's symbol ('path/file.S:symbol')?"""
    return ".S:" in name or ".s:" in name


FILE_OPTIONS = ("symbol", "define", "alternative", "include", "with_files", "defsym", "arch", "cpu")


def file_build(args: argparse.Namespace) -> FileBuild:
    """The build options of a file target, from the command line (or a saved `# options:`)."""
    return FileBuild(defines=tuple(getattr(args, "define", None) or ()),
                     alternative=bool(getattr(args, "alternative", False)),
                     includes=tuple(getattr(args, "include", None) or ()),
                     withs=tuple(getattr(args, "with_files", None) or ()),
                     defsyms=tuple(getattr(args, "defsym", None) or ()),
                     arch=getattr(args, "arch", None) or "", cpu=getattr(args, "cpu", None) or "")


def file_options_given(args: argparse.Namespace) -> list[str]:
    """The file-only options given, as flags (for the error when the target is not a file)."""
    flags = {"symbol": "--symbol", "define": "-D", "alternative": "--alternative", "include": "-I",
             "with_files": "--with", "defsym": "--defsym", "arch": "--arch", "cpu": "--cpu"}
    return [flags[o] for o in FILE_OPTIONS if getattr(args, o, None)]


def check_vlen_has_isa(args: argparse.Namespace) -> None:
    """A file's --vlen is the VLEN of its --isa: alone, it would be ignored."""
    vlen = getattr(args, "vlen", None)
    if vlen and not getattr(args, "isa", None):
        raise CopyfuzzError(f"--vlen {vlen} is the vector length of an --isa with V: give the ISA too "
                            "(e.g. --isa rv64gcv); --isa/--vlen are for RISC-V files")


def file_routines(root: Path, path: str, args: argparse.Namespace, profile: str) -> list[Routine]:
    if not args.symbol:
        raise CopyfuzzError(f"{path}: say which routine to check with --symbol SYM[:KIND]")
    check_vlen_has_isa(args)
    build = file_build(args)
    out = []
    for text in args.symbol:
        symbol, kind = parse_symbol(text, args.kind)
        out.append(file_routine(root, Path(path), symbol, kind, xlen=args.xlen, build=build, profile=profile,
                                isa=parsed_isa(args)))
    return out


def file_routine(root: Path, path: Path, symbol: str, kind: str, **how: Any) -> Routine:
    """A file's routine (checkfile.external_routine, how: its keywords), its kind given or
    worked out (infer.py): what its name says, or copy when its other direction labels
    the same code (the object's symbols). A name that says none is refused, after the
    errors a link would give first (no such symbol, a file that does not build)."""
    if kind:
        return buildstep.check_not_glue(root, buildstep.check_cpu(external_routine(root, path, symbol, kind, **how)))
    try:
        inferred = infer.kind_from_name(symbol)
    except CopyfuzzError:
        trial = external_routine(root, path, symbol, "copy", **how)
        buildstep.link_external(root, trial, buildstep.link_env(root, trial.xlen, trial.arch))
        raise
    r = buildstep.check_not_glue(root, buildstep.check_cpu(
        external_routine(root, path, symbol, inferred.value, kind_reason=inferred.reason, **how)))
    other = infer.other_direction(symbol, inferred.value)
    if other and buildstep.share_code(root, r, (symbol, other)):
        return external_routine(root, path, symbol, "copy", kind_reason=infer.both_directions(symbol, other).reason,
                                **how)
    return r


def parsed_isa(args: argparse.Namespace) -> isas.Isa | None:
    """--isa [--vlen] as given (None without --isa)."""
    text = getattr(args, "isa", None)
    return isas.parse(text, getattr(args, "vlen", None)) if text else None


def settle_isa(args: argparse.Namespace) -> None:
    """--isa names the register width too: --isa rv32gcv is --xlen 32 (a contradicting
    --xlen is an error). Checked before the command runs: a bad value is one line."""
    isa = parsed_isa(args)
    if isa is None:
        return
    if hasattr(args, "xlen"):
        if args.xlen is not None and args.xlen != isa.xlen:
            raise CopyfuzzError(f"--isa {args.isa} is RV{isa.xlen}, --xlen {args.xlen} is not")
        args.xlen = isa.xlen


def with_isa(r: Routine, xlen: int, args: argparse.Namespace | None = None) -> Routine:
    """A bundled routine at a width, with the ISA it runs with: its own (an isa= line, the
    same extensions at --xlen 32) unless --isa gives another; --vlen picks the VLEN. Built
    for another ISA, its executor is a build product of its own (paths.isa_dir), linked by
    the one link recipe like a file from outside the tree."""
    vlen = getattr(args, "vlen", None) if args is not None else None
    isa = parsed_isa(args) if args is not None else None
    if r.arch != "riscv" and (isa is not None or vlen):  # before the width, which --isa set
        raise CopyfuzzError(f"--isa/--vlen name RISC-V extensions; {r.name} is an {r.arch} routine")
    xlen = targets.get(r.arch).width(xlen)
    declared = isas.with_xlen(r.declared_isa, xlen) if r.declared_isa else None
    if isa is None and declared is not None:
        isa = isas.parse(declared.march, vlen) if vlen else declared
    elif isa is None and vlen:
        raise CopyfuzzError(f"--vlen {vlen}: {r.name} is not a vector routine (give --isa rv{xlen}gcv)")
    if isa is not None and isa.is_default and declared is None:
        isa = None
    r = dataclasses.replace(r, xlen=xlen, isa=isa, declared_isa=declared)
    if isa is not None and (declared is None or isa.march != declared.march):
        elf = paths.isa_dir(paths.REL, xlen, isa.march, r.arch) / f"{r.name}.elf"
        r = dataclasses.replace(r, external_elf=str(elf),
                                asflags=(f"-Iarch/{r.arch}/include", f"-march={isa.march}"))
    return r


def bundled_routines(root: Path, patterns: list[str], xlen: int,
                     default_all: bool = True, args: argparse.Namespace | None = None) -> list[Routine]:
    """The routines the patterns name (each must match one), or without patterns every
    routine that is not a mutant and can run as asked (runnable())."""
    if not patterns:
        return [r for r in runnable(root, xlen, args) if not r.is_mutant] if default_all else []
    return [with_isa(r, xlen, args) for r in select(discover(root), patterns)]


def runnable(root: Path, xlen: int, args: argparse.Namespace | None = None) -> list[Routine]:
    """Every bundled routine, mutants too, that can run at this width: --xlen 32 and --isa
    are RISC-V's, so they leave out architectures without that width or those extensions
    (named by a pattern instead, such a routine is an error)."""
    isa = getattr(args, "isa", None)
    return [with_isa(r, xlen, args) for r in discover(root)
            if targets.get(r.arch).runs_at(xlen) and (r.arch == "riscv" or not isa)]


def apply_saved_options(args: argparse.Namespace, text: str, where: str) -> None:
    """Fill what the command line left unset from a regression's `# options:` line: the
    flags `repro` needs to rebuild a file routine as the campaign built it
    (Routine.repro_options: -DNAME[=VALUE], --alternative, -I DIR, --with FILE,
    --defsym NAME=VALUE, --kind K, --xlen N, --isa ISA, --vlen N, --arch A, --cpu M). Flags given on the
    command line win."""
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise CopyfuzzError(f"{where}: `# options: {text}`: {e}") from None
    defines: list[str] = []
    lists: dict[str, list[str]] = {"-I": [], "--with": [], "--defsym": []}
    alternative, kind, xlen, isa, vlen, arch, cpu = False, None, None, None, None, None, None
    i = 0
    while i < len(words):
        w = words[i]
        value = words[i + 1] if i + 1 < len(words) else None
        if w.startswith("-D") and len(w) > 2:
            defines.append(w[2:])
        elif w in ("-D", "--kind", "--xlen", "--isa", "--vlen", "--arch", "--cpu", *lists) and value is not None:
            if w == "-D":
                defines.append(value)
            elif w in lists:
                lists[w].append(value)
            elif w == "--kind":
                kind = value
            elif w == "--isa":
                isa = value
            elif w == "--cpu":
                cpu = value
            elif w == "--arch":
                if value not in targets.ARCHES:
                    raise CopyfuzzError(f"{where}: `# options: {text}`: --arch {value!r} is not one of "
                                        f"{', '.join(targets.ARCHES)}")
                arch = value
            elif w == "--vlen":
                vlen = int(value) if value.isdigit() else 0
            elif value in ("32", "64"):
                xlen = int(value)
            else:
                raise CopyfuzzError(f"{where}: `# options: {text}`: --xlen {value!r} is not 32 or 64")
            i += 1
        elif w == "--alternative":
            alternative = True
        else:
            raise CopyfuzzError(f"{where}: `# options: {text}`: {w!r} is not one of -DNAME[=VALUE], "
                                "--alternative, -I DIR, --with FILE, --defsym NAME=VALUE, --kind KIND, --xlen N, "
                                "--isa ISA, --vlen N, --arch ARCH, --cpu MODEL")
        i += 1
    if not getattr(args, "define", None):
        args.define = check_defines(defines) or None
    for attr, flag in (("include", "-I"), ("with_files", "--with"), ("defsym", "--defsym")):
        if not getattr(args, attr, None):
            setattr(args, attr, lists[flag] or None)
    if not getattr(args, "alternative", False):
        args.alternative = alternative
    if getattr(args, "kind", None) is None:
        args.kind = kind
    if not getattr(args, "arch", None) and arch:
        args.arch = arch
    if not getattr(args, "cpu", None) and cpu:
        args.cpu = cpu
    if getattr(args, "xlen", None) is None and xlen:
        args.xlen = xlen
    if not getattr(args, "isa", None) and isa:
        args.isa = isa
        if not getattr(args, "vlen", None) and vlen is not None:
            args.vlen = vlen or -1  # -1: refused by isa.parse, never taken for the default
        settle_isa(args)
    elif not getattr(args, "vlen", None) and vlen is not None:
        args.vlen = vlen or -1

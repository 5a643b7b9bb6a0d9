"""What a command runs on: bundled routines by name or pattern, or a .S file's symbols."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from . import build as buildstep
from . import infer, paths, targets
from . import isa as isas
from .checkfile import external_routine, parse_symbol
from .errors import CopyfuzzError
from .options import IsaOptions, RoutineOptions
from .options import is_file_target as is_file_target
from .routines import Routine, discover, select


def is_file_spec(name: str) -> bool:
    """Does a spec's routine name a .S file's symbol ('path/file.S:symbol')?"""
    return ".S:" in name or ".s:" in name


def check_vlen_has_isa(isa: IsaOptions) -> None:
    """A file's --vlen is the VLEN of its --isa: alone, it would be ignored."""
    if isa.vlen and not isa.isa:
        raise CopyfuzzError(f"--vlen {isa.vlen} is the vector length of an --isa with V: give the ISA too "
                            "(e.g. --isa rv64gcv); --isa/--vlen are for RISC-V files")


def file_routines(root: Path, path: str, target: RoutineOptions, profile: str) -> list[Routine]:
    if not target.file.symbol:
        raise CopyfuzzError(f"{path}: say which routine to check with --symbol SYM[:KIND]")
    check_vlen_has_isa(target.isa)
    build = target.file.build()
    out = []
    for text in target.file.symbol:
        symbol, kind = parse_symbol(text, target.file.kind)
        out.append(file_routine(root, Path(path), symbol, kind, xlen=target.xlen, build=build, profile=profile,
                                isa=target.isa.parsed()))
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


def with_isa(r: Routine, xlen: int | None, given: IsaOptions | None = None) -> Routine:
    """A bundled routine at a width, with the ISA it runs with: its own (an isa= line, the
    same extensions at --xlen 32) unless --isa gives another; --vlen picks the VLEN. Built
    for another ISA, its executor is a build product of its own (paths.isa_dir), linked by
    the one link recipe like a file from outside the tree."""
    vlen = given.vlen if given is not None else None
    isa = given.parsed() if given is not None else None
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


def bundled_routines(root: Path, patterns: list[str] | tuple[str, ...], xlen: int | None,
                     default_all: bool = True, isa: IsaOptions | None = None) -> list[Routine]:
    """The routines the patterns name (each must match one), or without patterns every
    routine that is not a mutant and can run as asked (runnable())."""
    if not patterns:
        return [r for r in runnable(root, xlen, isa) if not r.is_mutant] if default_all else []
    return [with_isa(r, xlen, isa) for r in select(discover(root), list(patterns))]


def runnable(root: Path, xlen: int | None, isa: IsaOptions | None = None) -> list[Routine]:
    """Every bundled routine, mutants too, that can run at this width: --xlen 32 and --isa
    are RISC-V's, so they leave out architectures without that width or those extensions
    (named by a pattern instead, such a routine is an error)."""
    return [with_isa(r, xlen, isa) for r in discover(root)
            if targets.get(r.arch).runs_at(xlen) and (r.arch == "riscv" or not (isa and isa.isa))]

"""`copyfuzz fuzz ROUTINE`: a coverage-guided campaign with the native driver (fuzz/driver.c).

Engines (tool/copyfuzz/engines/): libfuzzer (default), afl (AFL++), hypothesis. Every
engine hands its failures to the one triage path (triage.py), which re-runs them alone,
saves regression specs (regressions.py) and never saves what does not reproduce. The
campaign's directories and report are campaign.py's; the corpus is only ever added to,
so running the same command again resumes.

--time T ends the engines at T and the command by T plus the triage time (--triage-time,
default 10 % of T, at least 5 s), whatever the number of findings: a failure left when it
is used up is saved, unshrunk and not re-run, under <findings>/untriaged/ for `replay`,
and counts as a finding (it could not be matched against --known).

Exit 0 no finding, 1 findings (or failures not triaged in time), 2 bad input or build error.
"""

from __future__ import annotations

import argparse
import secrets
import shutil
import sys
import time
from pathlib import Path

from . import build, files, infer, known, records, targets
from .audit import audit_routine
from .campaign import Campaign, default_triage_s, regression_specs, report, seed_corpus
from .errors import CopyfuzzError
from .routines import Routine, discover, find
from .selection import file_routines, take_file_target, with_isa


def fuzzed_routine(root: Path, args: argparse.Namespace) -> Routine:
    """The routine: a bundled name, or FILE.S --symbol S [--kind K] (--file FILE.S alike)."""
    args.xlen = None  # no --xlen: RISC-V at 64 bits, ARM at its own width
    take_file_target(args)
    if args.file:
        if args.symbol and len(args.symbol) > 1:
            raise CopyfuzzError("fuzz one symbol at a time")
        return file_routines(root, args.file, args, args.profile or "linux")[0]
    if not args.routine:
        raise CopyfuzzError("say which routine to fuzz: ROUTINE, or FILE.S --symbol S")
    return with_isa(find(discover(root), args.routine), args.xlen, args)


def parse_until(text: str | None) -> frozenset[str]:
    if not text:
        return frozenset()
    classes = frozenset(records.canonical_class(c.strip()) for c in text.split(",") if c.strip())
    unknown = sorted(classes - set(records.CLASS_NAMES))
    if unknown:
        raise CopyfuzzError(f"--until {text!r}: unknown class {', '.join(unknown)} "
                            f"(classes: {', '.join(records.CLASS_NAMES)})")
    return classes


def run_fuzz(root: Path, args: argparse.Namespace) -> int:
    routine = fuzzed_routine(root, args)
    until = parse_until(getattr(args, "until", None))
    baseline = known.from_args(args)
    known.check_output(args)
    if build.routine_native(routine):
        raise CopyfuzzError("copyfuzz fuzz needs QEMU: the driver's coverage comes from a QEMU plugin")
    if getattr(args, "afl_host", None) and args.engine != "afl":
        raise CopyfuzzError("--afl-host names AFL++ instances: it is for --engine afl")
    if args.engine == "afl" and not shutil.which("afl-fuzz"):
        raise CopyfuzzError("--engine afl needs afl-fuzz (AFL++): run 'make deps'")
    granule = args.granule or 0
    if granule and args.engine == "hypothesis":
        raise CopyfuzzError("--granule 16 is for libFuzzer and AFL++ (the driver's inputs ask for granule "
                            "faults); Hypothesis draws page cases only: sweep --granule 16 covers the rest")
    targets.require_mte([(routine.name, routine.arch)], granule)
    profile = args.profile or routine.profile
    stem = routine.file_stem
    corpus_dir = args.corpus or Path("corpora") / stem
    findings_dir = args.findings or Path("findings") / "fuzz" / stem
    for d, option in ((corpus_dir, "--corpus"), (findings_dir, "--findings"), (args.regressions, "--regressions")):
        files.check_dir(d, option)  # before the build and the campaign: fail now, not at the first finding
    for d in (corpus_dir, findings_dir):
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise CopyfuzzError(f"cannot create {d}: {e.strerror}") from e
    build.build_host(root, ["plugin", "fuzz-targets"])  # the routine's executor: build_routines
    build.build_routines(root, [routine])
    build.check_runner(routine.xlen, routine.arch)
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31 - 1)
    c = Campaign(root, routine, profile, seed, corpus_dir, findings_dir, args.regressions, args.engine,
                 args.max_len, until=until, as_json=args.json, granule=granule)
    c.audit = audit_routine(root, routine)
    c.baseline = baseline
    c.start()
    try:
        specs = regression_specs(c)
        if args.engine != "hypothesis":  # Hypothesis draws its own cases: no corpus
            c.seeded = seed_corpus(c, specs)
        show = not args.json and sys.stderr.isatty()
        if not args.json:
            where = "" if args.engine == "hypothesis" else f", corpus {corpus_dir} ({c.corpus_size} inputs)"
            print(f"fuzzing {routine.name} (profile {profile}) with {args.engine} for {args.time} s, seed {seed}"
                  f"{where}", file=sys.stderr)
        infer.flush()
        c.triage_s = args.triage_time if args.triage_time is not None else default_triage_s(args.time)
        c.start_clock(args.time)
        started = c.started
        deadline = started + args.time
        try:
            if c.until_met:
                pass  # a regression of the class still reproduces: found already
            elif args.engine == "libfuzzer":
                from .engines import libfuzzer

                libfuzzer.run(c, args.jobs, show, started, deadline, args.time)
            elif args.engine == "afl":
                from .engines import afl

                afl.run(c, args.jobs, getattr(args, "afl_host", None), show, deadline, args.time)
            else:
                from .engines import hypothesis

                hypothesis.run(c, show, deadline, args.time)
        finally:
            c.elapsed_s = time.monotonic() - started
            c.engine_s = min(c.elapsed_s, float(args.time))
        c.read_coverage()
    finally:
        c.close()
    c.require_a_run(args.time)
    report(c)
    if getattr(args, "write_known", None) is not None:
        c.write_known(args.write_known)
    return 1 if c.new_found or c.out_of_time else 0

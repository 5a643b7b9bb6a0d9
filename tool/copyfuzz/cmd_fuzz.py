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
from .options import FuzzOptions
from .routines import Routine, discover, find
from .selection import file_routines, with_isa


def fuzzed_routine(root: Path, opts: FuzzOptions) -> Routine:
    """The routine: a bundled name, or FILE.S --symbol S [--kind K] (--file FILE.S alike)."""
    if opts.file:
        if len(opts.target.file.symbol) > 1:
            raise CopyfuzzError("fuzz one symbol at a time")
        return file_routines(root, opts.file, opts.target, opts.profile or "linux")[0]
    if not opts.routine:
        raise CopyfuzzError("say which routine to fuzz: ROUTINE, or FILE.S --symbol S")
    return with_isa(find(discover(root), opts.routine), opts.target.xlen, opts.target.isa)


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
    opts = FuzzOptions.from_args(args)
    routine = fuzzed_routine(root, opts)
    until = parse_until(opts.until)
    baseline = known.from_options(opts.known)
    known.check_output(opts.known)
    if build.routine_native(routine):
        raise CopyfuzzError("copyfuzz fuzz needs QEMU: the driver's coverage comes from a QEMU plugin")
    if opts.afl_host and opts.engine != "afl":
        raise CopyfuzzError("--afl-host names AFL++ instances: it is for --engine afl")
    if opts.engine == "afl" and not shutil.which("afl-fuzz"):
        raise CopyfuzzError("--engine afl needs afl-fuzz (AFL++): run 'make deps'")
    granule = opts.granule
    if granule and opts.engine == "hypothesis":
        raise CopyfuzzError("--granule 16 is for libFuzzer and AFL++ (the driver's inputs ask for granule "
                            "faults); Hypothesis draws page cases only: sweep --granule 16 covers the rest")
    targets.require_mte([(routine.name, routine.arch)], granule)
    profile = opts.profile or routine.profile
    stem = routine.file_stem
    corpus_dir = opts.corpus or Path("corpora") / stem
    findings_dir = opts.findings or Path("findings") / "fuzz" / stem
    for d, option in ((corpus_dir, "--corpus"), (findings_dir, "--findings"), (opts.regressions, "--regressions")):
        files.check_dir(d, option)  # before the build and the campaign: fail now, not at the first finding
    for d in (corpus_dir, findings_dir):
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise CopyfuzzError(f"cannot create {d}: {e.strerror}") from e
    build.build_host(root, ["plugin", "fuzz-targets"])  # the routine's executor: build_routines
    build.build_routines(root, [routine])
    build.check_runner(routine.xlen, routine.arch)
    seed = opts.seed if opts.seed is not None else secrets.randbelow(2**31 - 1)
    c = Campaign(root, routine, profile, seed, corpus_dir, findings_dir, opts.regressions, opts.engine,
                 opts.max_len, until=until, as_json=opts.json, granule=granule)
    c.audit = audit_routine(root, routine)
    c.baseline = baseline
    c.start()
    try:
        specs = regression_specs(c)
        if opts.engine != "hypothesis":  # Hypothesis draws its own cases: no corpus
            c.seeded = seed_corpus(c, specs)
        show = not opts.json and sys.stderr.isatty()
        if not opts.json:
            where = "" if opts.engine == "hypothesis" else f", corpus {corpus_dir} ({c.corpus_size} inputs)"
            print(f"fuzzing {routine.name} (profile {profile}) with {opts.engine} for {opts.time} s, seed {seed}"
                  f"{where}", file=sys.stderr)
        infer.flush()
        c.triage_s = opts.triage_time if opts.triage_time is not None else default_triage_s(opts.time)
        c.start_clock(opts.time)
        started = c.started
        deadline = started + opts.time
        try:
            if c.until_met:
                pass  # a regression of the class still reproduces: found already
            elif opts.engine == "libfuzzer":
                from .engines import libfuzzer

                libfuzzer.run(c, opts.jobs, show, started, deadline, opts.time)
            elif opts.engine == "afl":
                from .engines import afl

                afl.run(c, opts.jobs, opts.afl_host, show, deadline, opts.time)
            else:
                from .engines import hypothesis

                hypothesis.run(c, show, deadline, opts.time)
        finally:
            c.elapsed_s = time.monotonic() - started
            c.engine_s = min(c.elapsed_s, float(opts.time))
        c.read_coverage()
    finally:
        c.close()
    c.require_a_run(opts.time)
    report(c)
    if opts.known.write_known is not None:
        c.write_known(opts.known.write_known)
    return 1 if c.new_found or c.out_of_time else 0

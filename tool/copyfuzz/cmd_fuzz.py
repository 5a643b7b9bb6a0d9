"""`copyfuzz fuzz ROUTINE`: a coverage-guided campaign with the native driver (fuzz/driver.c).

Engines: libfuzzer (default, described below); afl (afl-fuzz -V on the AFL++ build of
the driver, -M/-S with --jobs, output in <findings>/afl/ and resumed with -i -, each crash
minimised with afl-tmin, the queue copied back into the corpus); hypothesis (the
strategies of strategies.py over one serve, a failing case shrunk and saved, then the
search goes on for other classes until the time is up).

libFuzzer stops at its first crash, so a campaign is a series of rounds on the same
corpus until --time is used up: after each finding the input is minimised, decoded
(fuzzinput), re-run through `serve` for its classes and fault pc, and saved as a
regression spec (deduplicated by routine, class and fault pc). The corpus is only ever
added to, so running the same command again resumes: libFuzzer writes new inputs into a
staging directory (it deletes inputs it reduces, and SIGKILL can cut a write short), and
the tool moves each whole input into the corpus with an atomic rename.

Exit 0 no finding, 1 findings, 2 bad input or build error.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import build, coverage, executor, fuzzinput, records
from .audit import Audit, audit_routine
from .errors import CopyfuzzError
from .plugin import PluginMemory
from .routines import Routine, discover, find
from .spec import Spec, format_spec, parse_fields
from .targets import file_routines
from .ui import emit, stdout_console

LIBFUZZER = "build/host/fuzz/copyfuzz_fuzzer"
AFL_TARGET = "build/host/fuzz/copyfuzz_afl_fuzzer"
TMIN_MAX_S = 30  # afl-tmin per crash
AFL_GRACE_S = 30  # past -V: calibration, then a clean stop
HYPOTHESIS_SHRINK_S = 20  # shrinking may run this far past --time
PLUGIN_SO = "build/host/cfplugin.so"
MINIMIZE_RUNS = 2000
MINIMIZE_MAX_S = 20
INPUT_MAX_LEN = 16  # bytes of an input: the layout uses 10

_STATUS = re.compile(r"^#(\d+)\s+\w+.*exec/s: (\d+)")
_FT = re.compile(r"\bft: (\d+)")
_CORP = re.compile(r"\bcorp: (\d+)/")
_STAT = re.compile(r"^stat::(\w+):\s*(\d+)")


@dataclass
class Finding:
    cls: str
    classes: list[str]
    spec: str
    fault_pc: str
    artifact: str
    regression: str
    new: bool


@dataclass
class Campaign:
    routine: Routine
    profile: str
    seed: int
    corpus: Path
    findings_dir: Path
    regressions: Path
    executions: int = 0
    elapsed_s: float = 0.0
    rounds: int = 0
    seeded: int = 0
    engine: str = "libfuzzer"
    found: list[Finding] = field(default_factory=list)
    audit: Audit | None = None
    coverage: coverage.Coverage | None = None

    @property
    def staging_dir(self) -> Path:
        """Where libFuzzer writes new inputs, until the tool moves them into the corpus."""
        return self.findings_dir / ".libfuzzer-new"

    @property
    def coverage_dir(self) -> Path:
        """Where the drivers write their coverage snapshots (struct cf_cov_snapshot)."""
        return self.findings_dir / ".coverage"

    def read_coverage(self) -> coverage.Coverage | None:
        if self.audit is not None:
            self.coverage = coverage.from_snapshots(self.audit, self.coverage_dir) or self.coverage
        return self.coverage

    @property
    def corpus_size(self) -> int:
        return sum(1 for p in self.corpus.iterdir()
                   if p.is_file() and not p.name.startswith(".")) if self.corpus.is_dir() else 0


def target(root: Path, args: argparse.Namespace) -> Routine:
    """The routine: a bundled name, or --file F.S --symbol S [--kind K]."""
    args.xlen = 64
    if args.file:
        if args.routine:
            raise CopyfuzzError("give a ROUTINE or --file F.S, not both")
        if args.symbol and len(args.symbol) > 1:
            raise CopyfuzzError("fuzz one symbol at a time")
        return file_routines(root, args.file, args, args.profile or "linux")[0]
    if not args.routine:
        raise CopyfuzzError("say which routine to fuzz: ROUTINE or --file F.S --symbol S")
    if args.symbol or args.define or args.alternative:
        raise CopyfuzzError("--symbol, -D and --alternative are for --file F.S")
    return find(discover(root), args.routine)


def driver_env(root: Path, routine: Routine, profile: str, findings: Path | str, max_len: int,
               coverage_dir: Path | None = None) -> dict[str, str]:
    env = {**os.environ, "COPYFUZZ_EXECUTOR": str(root / routine.elf), "COPYFUZZ_KIND": routine.kind,
           "COPYFUZZ_PROFILE": profile, "COPYFUZZ_PLUGIN": str(root / PLUGIN_SO),
           "COPYFUZZ_FINDINGS": str(findings), "COPYFUZZ_MAX_LEN": str(max_len)}
    env.pop("COPYFUZZ_COVERAGE", None)
    if coverage_dir is not None:
        env["COPYFUZZ_COVERAGE"] = str(coverage_dir)
    return env


# ---- regressions ----


def read_regressions(directory: Path) -> list[tuple[Path, str, dict[str, str]]]:
    """(file, spec line, header) of every regression spec in the directory."""
    out = []
    if not directory.is_dir():
        return out
    for path in sorted(directory.glob("*.spec")):
        kind, lines = fuzzinput.read_case_file(path)
        if kind != "spec" or not lines:
            continue
        routine, fields = lines[0]  # type: ignore[index]
        if routine:
            out.append((path, f"{routine}:{fields}", fuzzinput.regression_header(path)))
    return out


def same_build(header: dict[str, str], routine: Routine) -> bool:
    """Was the regression saved from this build of the routine (same -D, --alternative)?"""
    try:
        return shlex.split(header.get("options", "")) == routine.repro_options
    except ValueError:
        return False


def seed_corpus(root: Path, campaign: Campaign) -> int:
    """Encodings of this routine's regressions, into an empty corpus. A regression that
    still reproduces is counted as a known finding instead: in the corpus, it would stop
    every libFuzzer round as soon as the corpus is loaded."""
    if any(campaign.corpus.iterdir()):
        return 0
    r = campaign.routine
    seeds: list[tuple[Path, Spec, bytes]] = []
    for path, line, header in read_regressions(campaign.regressions):
        name, _, fields = line.rpartition(":")
        if name != r.name or not same_build(header, r):
            continue
        try:
            spec = parse_fields(r.name, r.kind, fields)
            seeds.append((path, spec, fuzzinput.encode(spec)))
        except (ValueError, CopyfuzzError):
            continue
    if not seeds:
        return 0
    count = 0
    for (path, spec, data), result in zip(seeds, run_specs(root, r, campaign.profile, [s for _, s, _ in seeds])):
        if result.errors:
            classes = result.error_list
            header = fuzzinput.regression_header(path)
            campaign.found.append(Finding(header.get("class", classes[0]), classes, format_spec(spec),
                                          header.get("fault-pc", ""), "", str(path), False))
            continue
        (campaign.corpus / f"seed-{hashlib.sha1(data).hexdigest()}").write_bytes(data)
        count += 1
    return count


def _unique_path(directory: Path, stem: str) -> Path:
    path = directory / f"{stem}.spec"
    k = 2
    while path.exists():
        path = directory / f"{stem}-{k}.spec"
        k += 1
    return path


def save_regression(campaign: Campaign, spec: Spec, cls: str, classes: list[str],
                    fault_pc: str) -> tuple[Path, bool]:
    """Write the regression unless one with the same routine, class and fault pc exists."""
    name = campaign.routine.name
    pc_key = fault_pc.split()[0] if fault_pc else "none"
    for path, line, header in read_regressions(campaign.regressions):
        if (line.rpartition(":")[0] == name and same_build(header, campaign.routine)
                and header.get("class") == cls and (header.get("fault-pc") or "none").split()[0] == pc_key):
            return path, False
    campaign.regressions.mkdir(parents=True, exist_ok=True)
    path = _unique_path(campaign.regressions, f"{campaign.routine.file_stem}--{cls}")
    options = campaign.routine.repro_options
    text = (f"# class: {cls}\n# classes: {','.join(classes)}\n# found-by: {campaign.engine}\n"
            f"# fault-pc: {fault_pc or 'none'}\n# profile: {campaign.profile}\n"
            + (f"# options: {shlex.join(options)}\n" if options else "")
            + f"{format_spec(spec)}\n")
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path, True


# ---- running a case through serve ----


def run_specs(root: Path, routine: Routine, profile: str, specs: list[Spec]) -> list[records.Result]:
    """Each case through one `serve` (with the coverage plugin, as the driver runs it)."""
    argv = executor.executor_argv(root, routine.elf, build.run_prefix(routine.xlen))
    plugin = None if build.native(routine.xlen) else PluginMemory(root, routine.xlen)
    out = []
    try:
        with executor.Server(argv, plugin=plugin) as server:
            for i, spec in enumerate(specs):
                result = server.run(spec.to_case(profile, i + 1))
                if result.type == records.RESULT_ERROR:
                    raise CopyfuzzError(f"{format_spec(spec)}: the executor rejected the case: "
                                        f"{records.case_error_message(result.aux)}")
                out.append(result)
    finally:
        if plugin:
            plugin.close()
    return out


def _fault_pc(root: Path, routine: Routine, result: records.Result) -> str:
    if not result.faults:
        return ""
    from .cmd_repro import _symbolizer, _where  # the same names repro shows

    try:
        info = executor.info(executor.executor_argv(root, routine.elf, build.run_prefix(routine.xlen)))
    except CopyfuzzError:
        info = {}
    where = _where(_symbolizer(root, routine, info), result.fault_pc)
    hexpc = f"{result.fault_pc:#x}"
    return hexpc if where == hexpc else f"{hexpc} ({where})"


def _driver_classes(finding_files: list[Path]) -> list[str]:
    for path in finding_files:
        for line in path.read_text(errors="replace").splitlines():
            if line.startswith("classes="):
                return [c for c in line[len("classes="):].split(",") if c]
    return []


# ---- libFuzzer ----


def status_line(campaign: Campaign, started: float, total_s: int, execs: int, rate: float, extra: str) -> None:
    """One live status line on stderr: executions, rate, the routine's coverage, findings."""
    cov = campaign.read_coverage()
    where = ""
    if cov is not None:
        where = (f"  insns {cov.executed}/{cov.instructions}  edges {cov.edges_covered}/{cov.edges}")
    sys.stderr.write(f"\r\x1b[K{campaign.routine.name}: {execs:,} execs  {rate:,.0f}/s{where}  {extra}"
                     f"  findings {len(campaign.found)}  {time.monotonic() - started:.0f}/{total_s} s")
    sys.stderr.flush()


class Status:
    """The live status line (stderr, when it is a terminal) and the counters."""

    def __init__(self, show: bool, campaign: Campaign, started: float, total_s: int) -> None:
        self.show, self.campaign, self.started, self.total_s = show, campaign, started, total_s
        self.base = campaign.executions
        self.shown_at = 0.0
        self.execs = 0
        self.exec_s = 0
        self.ft = 0
        self.corp = 0
        self.stats: dict[str, int] = {}
        self.tail: list[str] = []

    def line(self, text: str) -> None:
        self.tail = (self.tail + [text])[-40:]
        m = _STATUS.match(text)
        if m:
            self.execs = int(m.group(1))
            ft, corp = _FT.search(text), _CORP.search(text)
            self.ft = int(ft.group(1)) if ft else self.ft
            self.corp = int(corp.group(1)) if corp else self.corp
            self.exec_s = int(m.group(2))
            if self.show and time.monotonic() - self.shown_at >= 0.5:
                self.shown_at = time.monotonic()
                status_line(self.campaign, self.started, self.total_s, self.base + self.execs, self.exec_s,
                            f"ft {self.ft}  corpus {self.corp}")
        s = _STAT.match(text)
        if s:
            self.stats[s.group(1)] = int(s.group(2))

    def done(self) -> None:
        if self.show:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()  # libFuzzer exits cleanly on SIGTERM; the executor dies with the driver
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


STAGING_COPY_S = 2.0  # how often a running round's new inputs are copied into the corpus


def fuzz_round(root: Path, campaign: Campaign, env: dict[str, str], seconds: int, jobs: int,
               status: Status) -> tuple[int, list[str]]:
    """One libFuzzer run on the corpus; its exit status and output tail."""
    logs = campaign.findings_dir / ".logs"
    logs.mkdir(exist_ok=True)
    argv = [str(root / LIBFUZZER), f"-max_total_time={seconds}", f"-seed={campaign.seed + campaign.rounds}",
            f"-artifact_prefix={campaign.findings_dir.resolve()}/", "-print_final_stats=1",
            f"-max_len={INPUT_MAX_LEN}"]
    if jobs > 1:
        argv += [f"-jobs={jobs}", f"-workers={jobs}"]
    campaign.staging_dir.mkdir(exist_ok=True)
    # Two corpus directories: libFuzzer writes to the first, and reads both.
    argv += [str(campaign.staging_dir.resolve()), str(campaign.corpus.resolve())]
    proc = subprocess.Popen(argv, cwd=logs, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, errors="replace")
    try:
        assert proc.stderr is not None
        copied_at = time.monotonic()
        for text in proc.stderr:
            status.line(text.rstrip("\n"))
            if time.monotonic() - copied_at >= STAGING_COPY_S:
                _staged_to_corpus(campaign, running=True)  # the corpus grows as the round goes
                copied_at = time.monotonic()
        proc.wait()
    finally:
        _stop(proc)
    if jobs > 1:  # each job logged to fuzz-J.log: add up their last counts
        total = 0
        for log in logs.glob("fuzz-*.log"):
            last = 0
            for text in log.read_text(errors="replace").splitlines():
                m = _STATUS.match(text)
                if m:
                    last = int(m.group(1))
                if text.startswith("==copyfuzz==") or text.startswith("copyfuzz driver:"):
                    status.tail.append(text)
            total += last
            log.unlink()
        status.execs = total
    elif "number_of_executed_units" in status.stats:
        status.execs = status.stats["number_of_executed_units"]
    return proc.returncode, status.tail


def minimise(root: Path, routine: Routine, profile: str, artifact: Path, max_len: int, seconds: int) -> Path:
    """libFuzzer's -minimize_crash on the artifact; the artifact itself if that fails."""
    out = artifact.with_name(f"minimized-{artifact.name}")
    with tempfile.TemporaryDirectory(prefix="copyfuzz-min-") as scratch:
        env = driver_env(root, routine, profile, scratch, max_len)  # its findings are thrown away
        try:
            subprocess.run([str(root / LIBFUZZER), "-minimize_crash=1", f"-runs={MINIMIZE_RUNS}",
                            f"-max_total_time={max(1, seconds)}", f"-exact_artifact_path={out}", str(artifact)],
                           cwd=scratch, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=seconds + 60)
        except subprocess.TimeoutExpired:
            pass
    return out if out.is_file() and out.stat().st_size <= artifact.stat().st_size else artifact


def handle_artifact(root: Path, campaign: Campaign, artifact: Path, driver_findings: list[Path],
                    max_len: int, deadline: float) -> Finding:
    r = campaign.routine
    budget = int(min(MINIMIZE_MAX_S, max(1.0, deadline - time.monotonic())))
    small = minimise(root, r, campaign.profile, artifact, max_len, budget)
    candidates = [small] if small == artifact else [small, artifact]
    specs = [dataclasses.replace(fuzzinput.decode(p.read_bytes(), r.kind, max_len), routine=r.name)
             for p in candidates]
    results = run_specs(root, r, campaign.profile, specs)
    for spec, result in zip(specs, results):
        if result.errors:
            classes = result.error_list
            fault_pc = _fault_pc(root, r, result)
            break
    else:  # serve alone does not show it (e.g. the executor died under the driver): the driver's word
        spec = specs[-1]
        classes = _driver_classes(driver_findings) or ["crash"]
        fault_pc = ""
    cls = classes[0]
    path, new = save_regression(campaign, spec, cls, classes, fault_pc)
    return Finding(cls, classes, format_spec(spec), fault_pc, str(artifact), str(path), new)


def run_fuzz(root: Path, args: argparse.Namespace) -> int:
    routine = target(root, args)
    if build.native(routine.xlen):
        raise CopyfuzzError("copyfuzz fuzz needs QEMU: the driver's coverage comes from a QEMU plugin")
    if getattr(args, "afl_host", None) and args.engine != "afl":
        raise CopyfuzzError("--afl-host names AFL++ instances: it is for --engine afl")
    if args.engine == "afl":
        missing = [t for t in ("afl-fuzz", "afl-tmin") if not shutil.which(t)]
        if missing:
            raise CopyfuzzError(f"--engine afl needs {' and '.join(missing)} (AFL++): run 'make deps'")
    profile = args.profile or routine.profile
    build.build(root, ["all", "fuzz-targets"])
    build.build_routines(root, [routine])
    build.check_runner(routine.xlen)
    stem = routine.file_stem
    corpus = args.corpus or Path("corpora") / stem
    findings_dir = args.findings or Path("findings") / "fuzz" / stem
    for d in (corpus, findings_dir):
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise CopyfuzzError(f"cannot create {d}: {e.strerror}") from e
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31 - 1)
    campaign = Campaign(routine, profile, seed, corpus, findings_dir, args.regressions, engine=args.engine)
    campaign.audit = audit_routine(root, routine)
    # Coverage is this campaign's: snapshots of an earlier run (maybe of other code) go.
    shutil.rmtree(campaign.coverage_dir, ignore_errors=True)
    campaign.coverage_dir.mkdir()
    if args.engine != "hypothesis":  # Hypothesis draws its own cases: no corpus
        campaign.seeded = seed_corpus(root, campaign)
    env = driver_env(root, routine, profile, findings_dir.resolve(), args.max_len, campaign.coverage_dir.resolve())
    show = not args.json and sys.stderr.isatty()
    if not args.json:
        where = "" if args.engine == "hypothesis" else f", corpus {corpus} ({campaign.corpus_size} inputs)"
        print(f"fuzzing {routine.name} (profile {profile}) with {args.engine} for {args.time} s, seed {seed}"
              f"{where}", file=sys.stderr)
    started = time.monotonic()
    deadline = started + args.time
    if args.engine == "libfuzzer":
        libfuzzer_campaign(root, campaign, env, args, show, started, deadline)
    else:
        try:
            if args.engine == "afl":
                afl_campaign(root, campaign, env, args, deadline)
            else:
                hypothesis_campaign(root, campaign, args, deadline)
        finally:
            campaign.elapsed_s = time.monotonic() - started
    campaign.read_coverage()
    report(campaign, args.json)
    return 1 if campaign.found else 0


def _print_finding(found: Finding, as_json: bool) -> None:
    if not as_json:
        what = "new regression" if found.new else "known, as"
        print(f"finding: {','.join(found.classes)} {found.spec} ({what} {found.regression})", file=sys.stderr)


def libfuzzer_campaign(root: Path, campaign: Campaign, env: dict[str, str], args: argparse.Namespace,
                       show: bool, started: float, deadline: float) -> None:
    routine, corpus, findings_dir = campaign.routine, campaign.corpus, campaign.findings_dir
    handled_file = findings_dir / "libfuzzer-handled"
    prefixes = ("crash-", "timeout-", "oom-", "leak-")

    def handle(artifact: Path, driver_findings: list[Path]) -> None:
        found = handle_artifact(root, campaign, artifact, driver_findings, args.max_len, deadline)
        campaign.found.append(found)
        _print_finding(found, args.json)
        with open(handled_file, "a") as f:  # a resumed campaign knows it is saved
            f.write(f"{artifact.name}\n")

    # A campaign killed after libFuzzer saved an input but before it was saved as a
    # regression left the artifact here: handle it first.
    for tmp in corpus.glob(".*.tmp"):  # a killed run's half-written copy (add_to_corpus)
        tmp.unlink()
    _staged_to_corpus(campaign)  # a killed run's new inputs
    handled = set(handled_file.read_text().split()) if handled_file.is_file() else set()
    for artifact in sorted(p for p in findings_dir.iterdir() if p.name.startswith(prefixes)
                           and p.name not in handled and p.is_file()):
        handle(artifact, sorted(findings_dir.glob("driver-*.finding")))
    try:
        while True:
            left = int(deadline - time.monotonic())
            if left < 1:
                break
            before = {p.name: p.stat().st_mtime_ns for p in findings_dir.iterdir()}
            status = Status(show, campaign, started, args.time)
            try:
                rc, tail = fuzz_round(root, campaign, env, left, args.jobs, status)
            finally:
                status.done()
                _staged_to_corpus(campaign)
            campaign.rounds += 1
            campaign.executions += status.execs
            # New files, or an input found again (libFuzzer names artifacts by their hash).
            new = sorted((p for p in findings_dir.iterdir()
                          if p.is_file() and before.get(p.name) != p.stat().st_mtime_ns),
                         key=lambda p: p.stat().st_mtime_ns)
            artifacts = [p for p in new if p.name.startswith(prefixes)]
            driver_findings = [p for p in new if p.name.startswith("driver-")]
            if not artifacts:
                if rc != 0:
                    raise CopyfuzzError(f"libFuzzer exited with status {rc} without a finding",
                                        details="\n".join(tail[-20:]))
                break  # the time is used up
            stuck = False
            for artifact in artifacts:
                digest = hashlib.sha1(artifact.read_bytes()).hexdigest()
                # An input of the corpus itself that fails (the routine changed since it was
                # added) would stop every round at once: report it and end the campaign.
                stuck |= any((corpus / name).is_file() for name in (digest, f"seed-{digest}"))
                handle(artifact, driver_findings)
            if stuck:
                print(f"copyfuzz: an input of the corpus {corpus} fails: libFuzzer cannot get past it, "
                      f"so the campaign ends here (fix the routine, or fuzz with another --corpus)",
                      file=sys.stderr)
                break
    finally:
        campaign.elapsed_s = time.monotonic() - started


# ---- AFL++ ----


def afl_env(env: dict[str, str]) -> dict[str, str]:
    return {**env, "AFL_SKIP_CPUFREQ": "1", "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1", "AFL_NO_UI": "1",
            "AFL_SKIP_CRASHES": "1", "AFL_IGNORE_SEED_PROBLEMS": "1"}


AFL_NO_FREE_CORE = b"No more free CPU cores"
# The driver tells a hang itself (its executor's watchdog, then at most 3 x 1 s + 5 s of
# waiting): afl-fuzz's own timeout, calibrated in milliseconds, would kill the driver for a
# case that is merely slow on a loaded machine.
AFL_TIMEOUT_MS = 10000
AFL_BOUND = b"try binding to #"


def _afl_bound(proc: subprocess.Popen[bytes], log: Path, wait_s: float = 5.0) -> bool:
    """False if afl-fuzz gave up for want of a free core; True once it bound (or went on)."""
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        text = log.read_bytes()
        if AFL_NO_FREE_CORE in text:
            proc.wait()
            return False
        if AFL_BOUND in text or proc.poll() is not None:
            return True
        time.sleep(0.05)
    return True


def _afl_seeds(campaign: Campaign, scratch: Path) -> Path:
    """The corpus if it has inputs, else one small seed file."""
    if campaign.corpus_size:
        return campaign.corpus.resolve()
    seeds = scratch / "seeds"
    seeds.mkdir()
    (seeds / "seed").write_bytes(b"\x00" * 10)
    return seeds


def add_to_corpus(corpus: Path, data: bytes) -> bool:
    """One input into the corpus under its SHA-1, as libFuzzer names them; never a file
    that exists, never half a file (written aside, then renamed)."""
    digest = hashlib.sha1(data).hexdigest()
    if (corpus / digest).exists() or (corpus / f"seed-{digest}").exists():
        return False
    tmp = corpus / f".{digest}.tmp"  # hidden: replay and the engines skip dot files
    tmp.write_bytes(data)
    os.replace(tmp, corpus / digest)
    return True


def _queue_to_corpus(campaign: Campaign, out: Path) -> None:
    """AFL's new queue entries into the corpus."""
    for path in out.glob("*/queue/id:*"):
        if path.is_file():
            add_to_corpus(campaign.corpus, path.read_bytes())


def _staged_to_corpus(campaign: Campaign, running: bool = False) -> None:
    """libFuzzer's new inputs from the staging directory into the corpus. While libFuzzer
    runs, whole inputs are copied and the staging directory is left alone (a file may be
    half written); afterwards the rest is copied and staging emptied. A file whose bytes
    are not its name's hash was cut short by a kill: dropped."""
    staging = campaign.staging_dir
    for path in sorted(staging.iterdir()) if staging.is_dir() else []:
        if not path.is_file():
            continue
        if not (campaign.corpus / path.name).exists():
            data = path.read_bytes()
            if hashlib.sha1(data).hexdigest() == path.name:
                add_to_corpus(campaign.corpus, data)
        if not running:
            path.unlink()


def afl_tmin(root: Path, campaign: Campaign, crash: Path, env: dict[str, str], seconds: int) -> Path:
    """afl-tmin on an AFL crash, time-limited; the crash itself if that fails."""
    out = campaign.findings_dir / "afl-min" / f"min-{hashlib.sha1(crash.read_bytes()).hexdigest()}"
    out.parent.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="copyfuzz-tmin-") as scratch:
        tenv = afl_env({**env, "COPYFUZZ_FINDINGS": scratch})  # its findings are thrown away
        try:
            subprocess.run(["timeout", str(max(1, seconds)), "afl-tmin", "-i", str(crash), "-o", str(out),
                            "--", str(root / AFL_TARGET)], cwd=scratch, env=tenv, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=seconds + 30)
        except subprocess.TimeoutExpired:
            pass
    return out if out.is_file() and 0 < out.stat().st_size <= crash.stat().st_size else crash


def _afl_stats(stats: Path) -> dict[str, str]:
    """An instance's fuzzer_stats (`key : value` lines; AFL++ rewrites it every few seconds)."""
    try:
        text = stats.read_text(errors="replace")
    except OSError:
        return {}
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in text.splitlines())}


def _afl_execs(stats: Path) -> int:
    value = _afl_stats(stats).get("execs_done", "")
    return int(value) if value.isdigit() else 0


def afl_instances(jobs: int, host: str | None) -> list[str]:
    """`default`, or main and secN with --jobs. With --afl-host H they are main-H and secN-H,
    main-H a -M even alone: hosts syncing their queues into one another's output dir
    (ci/afl-sync.sh) need names unique across hosts, and only -M/-S instances sync."""
    if host:
        return [f"main-{host}", *(f"sec{i}-{host}" for i in range(1, jobs))]
    return ["default"] if jobs == 1 else ["main", *(f"sec{i}" for i in range(1, jobs))]


def afl_campaign(root: Path, campaign: Campaign, env: dict[str, str], args: argparse.Namespace,
                 deadline: float) -> None:
    """afl-fuzz -V for the time (-M main and -S secN with --jobs), in findings/afl/ (resumed
    with -i - where an instance has a queue); then every new crash minimised and saved."""
    out = (campaign.findings_dir / "afl").resolve()
    out.mkdir(exist_ok=True)
    logs = campaign.findings_dir / ".logs"
    logs.mkdir(exist_ok=True)
    names = afl_instances(args.jobs, getattr(args, "afl_host", None))
    seconds = max(1, int(deadline - time.monotonic()))
    fenv = afl_env(env)
    if getattr(args, "afl_host", None):  # first take in what other hosts found (ci/afl-sync.sh)
        fenv["AFL_IMPORT_FIRST"] = "1"
    procs: list[tuple[str, subprocess.Popen[bytes], Path]] = []
    before = {name: _afl_execs(out / name / "fuzzer_stats") for name in names}  # a resume counts on
    with tempfile.TemporaryDirectory(prefix="copyfuzz-afl-") as scratch:
        seeds = _afl_seeds(campaign, Path(scratch))
        try:
            resume = {name: (out / name / "queue").is_dir() for name in names}

            def launch(i: int, name: str, bind: bool) -> tuple[str, subprocess.Popen[bytes], Path]:
                argv = ["afl-fuzz", "-i", "-" if resume[name] else str(seeds), "-o", str(out), "-V",
                        str(max(1, int(deadline - time.monotonic()))), "-s", str((campaign.seed + i) % 2**31),
                        "-t", str(AFL_TIMEOUT_MS)]
                if name != "default":
                    argv += ["-M" if name.split("-")[0] == "main" else "-S", name]
                argv += ["--", str(root / AFL_TARGET)]
                log = logs / f"afl-{name}.log"
                # afl-fuzz binds itself (and so the driver and its executor) to a free core:
                # twice the exec/s of floating (docs/perf.md). Without a free core it aborts.
                penv = fenv if bind else {**fenv, "AFL_NO_AFFINITY": "1"}
                with open(log, "wb") as f:
                    return name, subprocess.Popen(argv, cwd=logs, env=penv, stdin=subprocess.DEVNULL, stdout=f,
                                                  stderr=subprocess.STDOUT), log

            for i, name in enumerate(names):  # one at a time: each sees the cores the others took
                entry = launch(i, name, bind=True)
                if not _afl_bound(*entry[1:]):
                    print(f"copyfuzz: no free CPU core for afl-fuzz ({name}): it runs unbound (slower)",
                          file=sys.stderr)
                    if not resume[name]:  # what the aborted start made is not a session to resume
                        shutil.rmtree(out / name, ignore_errors=True)
                    entry = launch(i, name, bind=False)
                procs.append(entry)
            started = time.monotonic()
            show = not args.json and sys.stderr.isatty()
            last = (started, 0)  # the drivers' snapshots count cases live; fuzzer_stats lags
            while any(p.poll() is None for _, p, _ in procs) and time.monotonic() < deadline + AFL_GRACE_S:
                time.sleep(1)
                if show:
                    stats = [_afl_stats(out / name / "fuzzer_stats") for name in names]
                    queue = sum(int(st.get("corpus_count", 0)) for st in stats)
                    crashes = sum(int(st.get("saved_crashes", 0)) for st in stats)
                    cov = campaign.read_coverage()
                    execs, now = (cov.cases if cov else 0), time.monotonic()
                    rate = (execs - last[1]) / max(1e-9, now - last[0])
                    last = (now, execs)
                    status_line(campaign, started, seconds, execs, rate, f"queue {queue}  crashes {crashes}")
            if show:
                sys.stderr.write("\r\x1b[K")
        finally:
            for _, proc, _ in procs:
                if proc.poll() is None:
                    proc.send_signal(2)  # SIGINT: afl-fuzz saves its state and exits
            for _, proc, _ in procs:
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    campaign.rounds = 1
    for name, proc, log in procs:
        stats = out / name / "fuzzer_stats"
        if stats.is_file():
            campaign.executions += max(0, _afl_execs(stats) - before.get(name, 0))
        elif proc.returncode not in (0, None):
            tail = log.read_text(errors="replace").splitlines()[-20:]
            raise CopyfuzzError(f"afl-fuzz ({name}) exited with status {proc.returncode} without starting",
                                details="\n".join(tail))
    _queue_to_corpus(campaign, out)
    handle_afl_crashes(root, campaign, env, out, args)


def handle_afl_crashes(root: Path, campaign: Campaign, env: dict[str, str], out: Path,
                       args: argparse.Namespace) -> None:
    """Each crash not handled before, through serve for its class: per class the shortest is
    minimised with afl-tmin, re-run and saved as a regression (as the libFuzzer path does)."""
    r = campaign.routine
    handled_file = campaign.findings_dir / "afl-handled"
    handled = set(handled_file.read_text().split()) if handled_file.is_file() else set()
    crashes: dict[str, Path] = {}
    for path in sorted(out.glob("*/crashes/id:*")):
        if path.is_file():
            digest = hashlib.sha1(path.read_bytes()).hexdigest()
            if digest not in handled:
                crashes.setdefault(digest, path)
    if not crashes:
        return
    paths = list(crashes.values())
    specs = [dataclasses.replace(fuzzinput.decode(p.read_bytes(), r.kind, args.max_len), routine=r.name)
             for p in paths]
    results = run_specs(root, r, campaign.profile, specs)
    # One per class, the shortest copy: AFL keeps many crashes of one bug (new paths), and
    # afl-tmin costs seconds each under QEMU.
    groups: dict[str, tuple[int, Path]] = {}
    for path, spec, result in zip(paths, specs, results):
        cls = result.error_list[0] if result.errors else "crash"
        if cls not in groups or spec.n < groups[cls][0]:
            groups[cls] = (spec.n, path)
    cls_of = {path: cls for cls, (_, path) in groups.items()}
    for _, crash in groups.values():
        small = afl_tmin(root, campaign, crash, env, TMIN_MAX_S)
        candidates = [small] if small == crash else [small, crash]
        # afl-tmin leaves the bytes it does not need as '0' (so n=0x3030): lower each byte
        # further while the class still shows.
        lowered = small.with_name(small.name + "-lowered")
        lowered.write_bytes(lower_bytes(root, campaign, small.read_bytes(), cls_of[crash], args.max_len))
        candidates.insert(0, lowered)
        cspecs = [dataclasses.replace(fuzzinput.decode(p.read_bytes(), r.kind, args.max_len), routine=r.name)
                  for p in candidates]
        for spec, result in zip(cspecs, run_specs(root, r, campaign.profile, cspecs)):
            if result.errors:
                classes, fault_pc = result.error_list, _fault_pc(root, r, result)
                break
        else:  # serve alone does not show it: the driver's word
            spec, classes, fault_pc = cspecs[-1], _driver_classes(
                sorted(campaign.findings_dir.glob("driver-*.finding"))) or ["crash"], ""
        path, new = save_regression(campaign, spec, classes[0], classes, fault_pc)
        found = Finding(classes[0], classes, format_spec(spec), fault_pc, str(crash), str(path), new)
        campaign.found.append(found)
        _print_finding(found, args.json)
    with open(handled_file, "a") as f:
        f.write("".join(f"{d}\n" for d in crashes))


def lower_bytes(root: Path, campaign: Campaign, data: bytes, cls: str, max_len: int,
                max_runs: int = 600) -> bytes:
    """Greedy: each byte to 0, half, minus one, kept while serve still shows the class."""
    r = campaign.routine
    argv = executor.executor_argv(root, r.elf, build.run_prefix(r.xlen))
    plugin = PluginMemory(root, r.xlen)
    best = bytearray(data)
    runs = 0
    try:
        with executor.Server(argv, plugin=plugin) as server:
            progress = True
            while progress and runs < max_runs:
                progress = False
                for i in range(len(best)):
                    for value in (0, best[i] // 2, best[i] - 1):
                        if not 0 <= value < best[i] or runs >= max_runs:
                            continue
                        trial = bytearray(best)
                        trial[i] = value
                        spec = fuzzinput.decode(bytes(trial), r.kind, max_len)
                        runs += 1
                        result = server.run(spec.to_case(campaign.profile, runs))
                        if result.type == records.RESULT_CASE and cls in result.error_list:
                            best, progress = trial, True
                            break
    except executor.ExecutorError:
        pass
    finally:
        plugin.close()
    return bytes(best)


# ---- Hypothesis ----


class _TimeUp(BaseException):
    """Raised inside the Hypothesis test to end the search (not a failure to shrink)."""


def hypothesis_campaign(root: Path, campaign: Campaign, args: argparse.Namespace, deadline: float) -> None:
    """Searches with the strategies of strategies.py over one persistent serve (with the memory
    plugin, as the driver runs): a case whose errors include a class not found yet fails, is
    shrunk and saved; the search goes on, without that class, until the time is up."""
    from hypothesis import HealthCheck, Phase, given, seed, settings

    from . import strategies

    r = campaign.routine
    argv = executor.executor_argv(root, r.elf, build.run_prefix(r.xlen))
    plugin = PluginMemory(root, r.xlen)
    found_mask = 0
    hard_stop = deadline + HYPOTHESIS_SHRINK_S
    started = time.monotonic()
    show = not args.json and sys.stderr.isatty()
    shown_at = [0.0]
    server: list[executor.Server] = [executor.Server(argv, plugin=plugin)]

    class State:
        calls = 0
        failing: records.Case | None = None
        crashed = False

    try:
        while time.monotonic() < deadline:
            state = State()
            mask = found_mask

            def run_case(case: records.Case) -> tuple[int, bool]:
                try:
                    result = server[0].run(case)
                except executor.ExecutorError:  # the executor died: a crash; start a new one
                    server[0].close()
                    server[0] = executor.Server(argv, plugin=plugin)
                    return 0, True
                if result.type == records.RESULT_ERROR:
                    raise CopyfuzzError(f"the executor rejected a drawn case: "
                                        f"{records.case_error_message(result.aux)}")
                return result.errors, False

            @seed(campaign.seed + campaign.rounds)
            @settings(max_examples=10**8, database=None, deadline=None, derandomize=False,
                      phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck),
                      report_multiple_bugs=False, print_blob=False)
            @given(strategies.cases(r.kind, campaign.profile, max_len=args.max_len))
            def search(case: records.Case) -> None:
                now = time.monotonic()
                if now >= hard_stop or (state.failing is None and now >= deadline):
                    raise _TimeUp()
                state.calls += 1
                errors, crashed = run_case(case)
                crash_bit = 1 << records.CLASS_BY_NAME["crash"].bit
                if crashed:
                    errors = crash_bit
                if show and now - shown_at[0] >= 1:
                    shown_at[0] = now
                    campaign.coverage = coverage.from_plugin(campaign.audit, plugin) if campaign.audit else None
                    status_line(campaign, started, args.time, campaign.executions + state.calls,
                                (campaign.executions + state.calls) / max(1e-9, now - started),
                                f"round {campaign.rounds}")
                if errors & ~mask:
                    state.failing = case
                    # On disk before Hypothesis shrinks it, rewritten as it shrinks: a campaign
                    # killed meanwhile still leaves the failure (copyfuzz repro FILE takes it).
                    write_failure(campaign, case, errors & ~mask)
                    raise AssertionError("a new class")

            campaign.rounds += 1
            try:
                search()
            except _TimeUp:
                pass
            except AssertionError:
                pass
            finally:
                if show:
                    sys.stderr.write("\r\x1b[K")
            campaign.executions += state.calls
            if state.failing is None:
                break
            spec = fuzzinput_spec(r, state.failing)
            try:
                (result,) = run_specs(root, r, campaign.profile, [spec])
                classes = result.error_list or ["crash"]
                fault_pc = _fault_pc(root, r, result)
            except executor.ExecutorError:  # the executor dies on it
                classes, fault_pc = ["crash"], ""
            new_classes = [c for c in classes if not (mask >> records.CLASS_BY_NAME[c].bit) & 1] or classes
            for c in classes:  # crash too when serve alone does not show it: never loop on it
                found_mask |= 1 << records.CLASS_BY_NAME[c].bit
            cls = new_classes[0]
            path, new = save_regression(campaign, spec, cls, classes, fault_pc)
            found = Finding(cls, classes, format_spec(spec), fault_pc, "", str(path), new)
            campaign.found.append(found)
            _print_finding(found, args.json)
    finally:
        if campaign.audit is not None:
            campaign.coverage = coverage.from_plugin(campaign.audit, plugin)
        server[0].close()
        plugin.close()


def write_failure(campaign: Campaign, case: records.Case, new_errors: int) -> Path:
    """findings/hypothesis-<class>.failure: the failing case as Hypothesis shows it and as a spec
    (written aside, then renamed: a reader never sees half of it)."""
    cls = records.class_names(new_errors)[0]
    path = campaign.findings_dir / f"hypothesis-{cls}.failure"
    spec = format_spec(fuzzinput_spec(campaign.routine, case))
    text = (f"# Hypothesis failure: copyfuzz fuzz {campaign.routine.name} --engine hypothesis "
            f"--seed {campaign.seed}\n# classes: {','.join(records.class_names(new_errors))}\n"
            f"# Falsifying example: search(case={case!r})\n{spec}\n")
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path


def fuzzinput_spec(routine: Routine, case: records.Case) -> Spec:
    from .spec import from_case

    return from_case(routine.name, case)


def report(c: Campaign, as_json: bool) -> None:
    rate = c.executions / c.elapsed_s if c.elapsed_s > 0 else 0.0
    by_class: dict[str, int] = {}
    for f in c.found:
        by_class[f.cls] = by_class.get(f.cls, 0) + 1
    if as_json:
        print(json.dumps({
            "routine": c.routine.name, "engine": c.engine, "profile": c.profile, "seed": c.seed,
            "elapsed_s": round(c.elapsed_s, 2), "rounds": c.rounds, "executions": c.executions,
            "exec_per_s": round(rate, 1), "corpus": str(c.corpus), "corpus_size": c.corpus_size,
            "seeded": c.seeded, "findings_dir": str(c.findings_dir), "findings": by_class,
            "coverage": c.coverage.to_json() if c.coverage else None,
            "finds": [dataclasses.asdict(f) for f in c.found],
        }, indent=2))
        return
    console = stdout_console()
    emit(console, f"[bold]{c.routine.name}[/]: {c.executions:,} executions in {c.elapsed_s:.0f} s "
                  f"({rate:,.0f}/s), {c.rounds} round{'s' * (c.rounds != 1)}, corpus {c.corpus_size} inputs "
                  f"in {c.corpus}")
    if c.coverage is not None:
        emit(console, f"  coverage: {c.coverage.line()}")
    if not c.found:
        emit(console, "  findings: none")
        return
    for cls, count in by_class.items():
        emit(console, f"  [red]{cls}[/]: {count} finding{'s' * (count != 1)}")
    by_file: dict[str, list[Finding]] = {}
    for f in c.found:
        by_file.setdefault(f.regression, []).append(f)
    for path, fs in by_file.items():
        first = next((f for f in fs if f.new), fs[0])
        mark = "new" if any(f.new for f in fs) else "known"
        emit(console, f"    {path} ({mark}, found {len(fs)}x): {first.spec}  fault pc {first.fault_pc or 'none'}")
    emit(console, f"  artifacts in {c.findings_dir}; replay with: copyfuzz replay {c.regressions}")

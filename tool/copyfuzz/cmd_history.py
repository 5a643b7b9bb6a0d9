"""`copyfuzz history REPO --file PATH --symbol S`: check a file at every commit that changed it.

For every commit that changed PATH (renames followed), the file as it was there, with
the files it includes with quotes from the same commit (history.py), is written into a
private temporary directory and checked as `copyfuzz check` checks a file (build,
exception-table audit, sweep). One row per commit: which classes it shows, how many
cases, the smallest reproducer, and where each class appears or disappears. Results are
cached by the texts' blob ids and the options (history.Cache).

`--bisect CLASS --good REV --bad REV [--fixed]`: a binary search over the commits that
changed the file between the two revisions, like `git bisect run`: the first commit
whose version shows CLASS (with --fixed, the first that no longer does).

Exit status: history 0 when the newest version is clean, 1 when it has findings (older
ones do not count: they are history), 2 on bad input or when the newest version does
not build; bisect 0 when the commit is found, 2 when it cannot be (the endpoints
disagree with the search, or only unbuildable versions are left).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import posixpath
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from . import __version__, atomic, build, checkfile, files, history, infer, paths, plan, records, targets
from .checkfile import parse_symbol
from .cmd_check import build_file_routines
from .cmd_sweep import RoutineSweep, check_sweep_args, sweep_routines
from .errors import CopyfuzzError
from .files import file_digest
from .findings import FindingsLog
from .history import Change, Repo
from .options import HistoryOptions
from .routines import Routine
from .selection import check_vlen_has_isa, file_routine
from .ui import emit, escape, new_table, plural, progress_bar, stdout_console

AUDIT = "audit"  # the static audit's problems, counted like a class

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


@dataclass
class Row:
    """One version of the file: the commit that made it and what checking it gave."""

    change: Change
    builds: bool = True
    error: str = ""  # why it does not build (the first assembler line), or "deleted"
    findings: dict[str, int] = field(default_factory=dict)
    notes: dict[str, int] = field(default_factory=dict)
    reproducers: dict[str, str] = field(default_factory=dict)
    cases: int = 0
    cached: bool = False
    kinds: dict[str, str] = field(default_factory=dict)  # symbol -> the kind it ran as
    appeared: list[str] = field(default_factory=list)
    disappeared: list[str] = field(default_factory=list)

    def shows(self, cls: str) -> bool:
        return cls in self.findings or cls in self.notes

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "commit": self.change.commit, "date": self.change.date, "subject": self.change.subject,
            "path": self.change.path, "status": self.change.status, "builds": self.builds,
            "findings": self.findings, "reproducers": self.reproducers, "notes": self.notes,
            "cases": self.cases, "cached": self.cached, "kinds": self.kinds, "appeared": self.appeared,
            "disappeared": self.disappeared,
        }
        if not self.builds:
            out["error"] = self.error
        return out


def _first_error_line(e: CopyfuzzError, tmp: Path) -> str:
    """The first assembler error of a build failure (else the message), with the private
    directory's prefix taken off the paths in it."""
    lines = (e.details or "").splitlines()
    line = next((x for x in lines if re.search(r"\b(Error|error|fatal error):", x)), "") or str(e)
    return line.replace(f"{tmp}/", "").strip()


class Checker:
    """Checks versions of one file with one set of options, through the cache."""

    def __init__(self, root: Path, opts: HistoryOptions, repo: Repo, path: str,
                 progress: Progress | None) -> None:
        self.root, self.opts, self.repo, self.path, self.progress = root, opts, repo, path, progress
        self.symbols = [parse_symbol(s, opts.sweep.target.file.kind) for s in opts.sweep.target.file.symbol]
        target = opts.sweep.target
        check_vlen_has_isa(target.isa)
        self.build = target.file.build()
        self.isa = target.isa.parsed()
        self.cache = history.Cache(Path(opts.cache) if opts.cache else history.default_cache_dir())
        self.checked = 0
        self.from_cache = 0
        self.said: set[tuple[str, str]] = set()  # (symbol, why) said on stderr
        self.options: dict[str, object] = {}
        # The versions are built from copies elsewhere: the architecture comes from --arch,
        # the file's path in the repository, else the newest version's instructions (the
        # first version checked, when the newest has no such file), once.
        by_path = self.build.arch or infer.arch_from_path(Path(path), resolve=False)
        text = "" if by_path else newest_text(opts, repo, path)
        if self.build.arch:
            self._settle(self.build.arch, "")
        elif by_path or text:
            inferred = infer.arch_of(Path(path), text, resolve=False)
            self._settle(inferred.value, inferred.reason)

    def _settle(self, arch: str, why: str) -> None:
        """The architecture is known: the build options, the toolchain and QEMU checked."""
        self.build = dataclasses.replace(self.build, arch=arch)
        if self.isa is not None and arch != "riscv":  # as check refuses it, not a row per version
            raise CopyfuzzError(f"--isa/--vlen name RISC-V extensions; {self.path} is built for {arch}")
        xlen = targets.get(arch).width(self.opts.sweep.target.xlen)
        self.build.check(xlen, arch)
        build.link_env(self.root, xlen, arch)  # the toolchain is there, and harness.o built
        build.check_runner(xlen, arch)  # and QEMU: a build row never fails for want of a tool
        infer.say(self.path, why)
        plan.load(self.root)  # libcfref.so built
        self.options = self._options()

    def _options(self) -> dict[str, object]:
        """Everything besides the texts that a result depends on, the tool's build included."""
        a = self.opts.sweep
        arch = self.build.arch
        tool = [file_digest(self.root / p) for p in (
            paths.harness_object(paths.REL, targets.get(arch).width(a.target.xlen), arch), paths.libcfref(paths.REL),
            Path("harness/target.c"), Path("harness/link-executor.sh"), Path("harness/extable-format.sh"))]
        # the kernel headers and glue the version is built against (checkfile.compat_include)
        tool.append(history.tree_digest(self.root / Path(checkfile.compat_include(arch)).parent))
        if a.memcheck:
            tool.append(file_digest(paths.plugin(self.root)))
        return {
            "version": __version__, "tool": tool, "symbols": self.symbols, "arch": self.build.arch,
            "xlen": targets.get(arch).width(a.target.xlen),
            "profile": a.profile, "defines": list(self.build.defines), "alternative": self.build.alternative,
            "includes": [[str(Path(i).resolve()), history.tree_digest(Path(i))] for i in self.build.includes],
            "withs": [[str(Path(w).resolve()), file_digest(Path(w))] for w in self.build.withs],
            "defsyms": list(self.build.defsyms), "isa": self.isa.march if self.isa else None,
            "vlen": a.target.isa.vlen, "max_len": a.max_len, "min_len": a.min_len,
            "memcheck": a.memcheck, "audit": not a.no_audit, "timeout_ms": a.timeout_ms,
        }

    def check(self, change: Change) -> Row:
        row = Row(change)
        if change.deleted:
            row.builds, row.error = False, "deleted"
            return row
        what = self.repo.entry(change.commit, change.path)
        if what not in (None, "file"):  # a symlink's blob is its target's name: no source to build
            row.builds, row.error = False, f"a {what} at this commit, not a regular file: not checked"
            return row
        sources = self.repo.sources(change.commit, change.path)
        if change.path not in sources:
            raise CopyfuzzError(f"{self.repo.path}: {change.path} is not a file at {change.short}")
        if not self.options:  # the newest version had no such file: this version's instructions say
            text = "\n".join(self.repo.read(b).decode(errors="replace") for b in sources.values())
            inferred = infer.arch_of(Path(change.path), text, resolve=False)
            self._settle(inferred.value, inferred.reason)
        key = history.version_key(sources, change.path, self.options)
        cached = self.cache.get(key)
        if cached is not None and _is_result(cached):  # another shape (edited, an old tool's): a miss
            self.from_cache += 1
            row.cached = True
            self._fill(row, cached)
            return row
        result = self._run(change, sources)
        self.checked += 1
        self.cache.put(key, result)
        self._fill(row, result)
        return row

    def _fill(self, row: Row, result: dict[str, object]) -> None:
        row.builds = bool(result["builds"])
        row.error = str(result.get("error", ""))
        row.findings = dict(result.get("findings", {}))  # type: ignore[call-overload]
        row.notes = dict(result.get("notes", {}))  # type: ignore[call-overload]
        row.cases = int(result.get("cases", 0))  # type: ignore[call-overload]
        row.kinds = dict(result.get("kinds", {}))  # type: ignore[call-overload]
        # Specs are cached without the file's path (a rename keeps the key): named here.
        tails: dict[str, list[str]] = dict(result.get("reproducers", {}))  # type: ignore[call-overload]
        # The audit's is no case but the first problem: where it is in the routine, and what.
        row.reproducers = {c: tail if c == AUDIT else f"{row.change.path}:{sym}:{tail}"
                           for c, (sym, tail) in tails.items()}

    def _run(self, change: Change, sources: dict[str, str]) -> dict[str, object]:
        """Write the version's sources into a private directory and check it there."""
        tmp = atomic.private_tmpdir("copyfuzz-history-")  # a killed run's are removed first
        try:
            src = tmp / "src"
            for name, blob in sources.items():
                dest = src / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(self.repo.read(blob))
            try:  # what fails here is this version's (the tools were checked first): a row, cached
                routines = [self._routine(tmp, change.path, symbol, kind) for symbol, kind in self.symbols]
                build_file_routines(self.root, Path(change.path), routines)
            except CopyfuzzError as e:
                return {"builds": False, "error": _first_error_line(e, src)}
            log = FindingsLog(tmp / "findings")  # the rows carry the reproducers
            try:
                results = sweep_routines(self.root, self.opts.sweep, routines, 0, log, self.progress)
            finally:
                log.close()
                self._drop_sweep_tasks()
            return {**_summarise(results), "kinds": {r.symbol: r.kind for r in routines}}
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _routine(self, tmp: Path, path: str, symbol: str, kind: str) -> Routine:
        """The symbol of this version; a kind worked out is worked out for this version
        (both directions in one body: copy), and said once per reason."""
        sweep = self.opts.sweep
        r = file_routine(self.root, tmp / "src" / path, symbol, kind, xlen=sweep.target.xlen, build=self.build,
                         profile=sweep.profile, isa=self.isa)
        if r.kind_reason and (symbol, r.kind_reason) not in self.said:
            self.said.add((symbol, r.kind_reason))
            infer.say(symbol, r.kind_reason)
        # Named by the file's path in the repository (messages, specs); built in the private
        # directory, removed with it.
        return dataclasses.replace(r, name=f"{path}:{symbol}", external_elf=str(tmp / "exe" / f"{symbol}.elf"))

    def _drop_sweep_tasks(self) -> None:
        if self.progress is not None:
            for task in list(self.progress.task_ids)[1:]:
                self.progress.remove_task(task)


def _summarise(results: list[RoutineSweep]) -> dict[str, object]:
    """Per class over the symbols: the total count and the smallest reproducer (fewest
    bytes, then the first symbol), as (symbol, spec without the file) for the cache."""
    findings: dict[str, int] = {}
    notes: dict[str, int] = {}
    best: dict[str, tuple[int, str, str]] = {}
    cases = 0
    for r in results:
        cases += r.cases
        for into, counts in ((findings, r.findings), (notes, r.notes)):
            for cls, n in counts.items():
                into[cls] = into.get(cls, 0) + n
        for cls, found in r.reproducers.items():
            spec = r.spec(cls)
            if spec is None:
                continue
            tail = spec.removeprefix(f"{r.routine.name}:")
            if cls not in best or found.case.n < best[cls][0]:
                best[cls] = (found.case.n, r.routine.symbol, tail)
        if r.audit is not None and r.audit.problems:
            findings[AUDIT] = findings.get(AUDIT, 0) + len(r.audit.problems)
            if AUDIT not in best:
                p = r.audit.problems[0]
                where = r.audit.sym.describe(p.addr) if r.audit.sym is not None else f"{p.addr:#x}"
                best[AUDIT] = (0, r.routine.symbol, f"{where}: {p.what}")
    return {"builds": True, "findings": findings, "notes": notes, "cases": cases,
            "reproducers": {c: [sym, tail] for c, (_, sym, tail) in best.items()}}


def _mark(rows: list[Row], known_before: bool) -> None:
    """Where each class appears and disappears, from one built version to the next (a
    version that does not build changes nothing)."""
    before: set[str] | None = set() if known_before else None
    for row in rows:
        if not row.builds:
            if row.change.deleted:
                before = set()
            continue
        now = set(row.findings)
        if before is not None:
            row.appeared = [c for c in row.findings if c not in before]
            row.disappeared = sorted(before - now)
        before = now


def check_history_args(opts: HistoryOptions) -> str:
    """Check the sweep options history shares with check (HistoryOptions settled them:
    no random phase, a private findings directory); the file's path as git names it."""
    check_sweep_args(opts.sweep)
    files.check_dir(Path(opts.cache) if opts.cache else history.default_cache_dir(), "--cache")
    path = opts.file.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    norm = posixpath.normpath(path) if path else ""
    if not norm or norm.startswith(("/", "../")) or norm in (".", ".."):
        raise CopyfuzzError(f"--file {opts.file!r}: give the file's path inside the repository")
    if not norm.endswith((".S", ".s")):
        raise CopyfuzzError(f"--file {opts.file}: expected an assembly source (.S)")
    bisect_flags = [f for f, v in (("--good", opts.good), ("--bad", opts.bad), ("--fixed", opts.fixed)) if v]
    if opts.bisect is None and bisect_flags:
        raise CopyfuzzError(f"{', '.join(bisect_flags)}: only with --bisect CLASS")
    if opts.bisect is not None:
        if opts.bisect not in (*records.CLASS_NAMES, AUDIT):
            raise CopyfuzzError(f"--bisect {opts.bisect!r}: not a finding class (one of "
                                f"{', '.join(records.CLASS_NAMES)}, {AUDIT})")
        if not opts.good or not opts.bad:
            raise CopyfuzzError("--bisect needs --good REV and --bad REV")
        if opts.since or opts.until:
            raise CopyfuzzError("--bisect searches between --good and --bad: no --since or --until")
    return norm


def _is_result(result: dict[str, object]) -> bool:
    """Has a cached entry the shape _run gives a result (what the rows print)? An edited
    or foreign one is a miss, never a traceback later on."""
    def str_map(v: object, values: tuple[type, ...]) -> bool:
        return isinstance(v, dict) and all(isinstance(k, str) and isinstance(x, values) for k, x in v.items())

    ok = (isinstance(result.get("builds"), bool) and isinstance(result.get("error", ""), str)
          and str_map(result.get("findings", {}), (int,)) and str_map(result.get("notes", {}), (int,))
          and isinstance(result.get("cases", 0), int) and str_map(result.get("kinds", {}), (str,))
          and str_map(result.get("reproducers", {}), (list,))
          and all(len(t) == 2 and all(isinstance(x, str) for x in t)
                  for t in dict(result.get("reproducers", {})).values()))  # type: ignore[call-overload]
    return ok


def check_is_a_file(opts: HistoryOptions, repo: Repo, path: str) -> None:
    """--file names a regular file at the newest revision looked at, or nothing there (a
    file since deleted); a directory, a symbolic link or a submodule is refused."""
    flag, rev = _newest(opts)
    commit = repo.commit(rev, flag)
    what = repo.entry(commit, repo.path_at(commit, path))
    if what not in (None, "file"):
        raise CopyfuzzError(f"--file {path}: a {what} at {rev} ({commit[:12]}), not a regular file")


def _newest(opts: HistoryOptions) -> tuple[str, str]:
    """The newest revision history looks at, with the flag that names it."""
    if opts.bisect is not None:
        assert opts.good is not None and opts.bad is not None  # check_history_args
        return ("--good", opts.good) if opts.fixed else ("--bad", opts.bad)
    return "--until", opts.until or "HEAD"


def newest_text(opts: HistoryOptions, repo: Repo, path: str) -> str:
    """The newest version looked at (--until, --bad, or --good with --fixed) of the file
    and what it includes with quotes (a template holds the body): its instructions say
    the architecture when its path does not. "" when the file is not there."""
    flag, rev = _newest(opts)
    commit = repo.commit(rev, flag)
    at = repo.path_at(commit, path)
    if repo.blob(commit, at) is None:
        return ""
    return "\n".join(repo.read(b).decode(errors="replace") for b in repo.sources(commit, at).values())


def run_history(root: Path, args: argparse.Namespace) -> int:
    opts = HistoryOptions.from_args(args)
    path = check_history_args(opts)
    file = opts.sweep.target.file
    symbols = [parse_symbol(s, file.kind) for s in file.symbol]  # a bad symbol before any git or build work
    repo = Repo(opts.repo)
    path = repo.in_repo(path)
    check_is_a_file(opts, repo, path)
    for symbol, kind in symbols:
        if not kind:
            infer.kind_from_name(symbol)  # one whose name says no kind (each version works it out)
    show = not opts.sweep.json and sys.stderr.isatty()
    with _maybe_progress(show) as progress:
        checker = Checker(root, opts, repo, path, progress)
        if opts.bisect is not None:
            return _bisect(opts, repo, path, checker)
        return _history(opts, repo, path, checker)


class _maybe_progress:
    """A progress bar on stderr when it is a terminal, else nothing."""

    def __init__(self, show: bool) -> None:
        self.bar = progress_bar() if show else None

    def __enter__(self) -> Progress | None:
        return self.bar.__enter__() if self.bar else None

    def __exit__(self, *exc: object) -> None:
        if self.bar:
            self.bar.__exit__(None, None, None)


def _walk(checker: Checker, changes: list[Change]) -> Iterator[Row]:
    """Check each version in turn, the progress bar showing commits done / total and the current one."""
    progress = checker.progress
    task: TaskID | None = progress.add_task("commits", total=len(changes)) if progress else None
    for i, change in enumerate(changes):
        if progress is not None and task is not None:
            progress.update(task, completed=i, description=f"{i}/{len(changes)} {change.short} "
                                                          f"{escape(change.subject[:40])}")
        yield checker.check(change)
    if progress is not None and task is not None:
        progress.remove_task(task)


def _history(opts: HistoryOptions, repo: Repo, path: str, checker: Checker) -> int:
    until = repo.commit(opts.until or "HEAD", "--until")
    since = repo.commit(opts.since, "--since") if opts.since else None
    path = repo.path_at(until, path)
    changes = repo.changes(path, until, since)
    baseline = repo.last_change(since, repo.path_before(changes, path)) if since else None
    if baseline is not None:
        changes.insert(0, baseline)
    if not changes:
        where = f"{since[:12]}..{until[:12]}" if since else f"the history of {until[:12]}"
        raise CopyfuzzError(f"{repo.path}: no commit in {where} changed {path}")
    rows = list(_walk(checker, changes))
    _mark(rows, known_before=baseline is None and changes[0].status.startswith("A"))
    # The newest version is the file at --until: with branches and merges, the rows (by
    # date) need not end with it.
    at_until = repo.last_change(until, path)
    newest = next((r for r in reversed(rows) if at_until is not None and r.change.commit == at_until.commit),
                  next((r for r in reversed(rows) if not r.change.deleted), None))
    broken = (f"the newest version of {path} ({newest.change.short}) does not build: {newest.error}"
              if newest is not None and not newest.builds else "")
    if opts.sweep.json:
        out: dict[str, object] = {
            "file": path, "repo": opts.repo, "symbols": _symbols(checker, rows, "{s}:{k}", "|"),
            "since": since, "until": until, "max_len": opts.sweep.max_len, "xlen": opts.sweep.target.xlen,
            "profile": opts.sweep.profile, "commits": [r.to_json() for r in rows],
            "checked": checker.checked, "cached": checker.from_cache}
        if broken:  # one object, as every exit 2 under --json: the rows and the error
            out["error"] = broken
        print(json.dumps(out, indent=2))
    else:
        _print_history(opts, path, checker, rows, baseline is not None)
    if broken:  # the line on stderr; under --json no second object (cli._report_error)
        raise CopyfuzzError(broken)
    return 1 if newest is not None and newest.findings else 0


def _classes_rows(row: Row) -> list[tuple[str, str, str]]:
    """(class cell, cases, reproducer) lines of one commit's row."""
    if not row.builds:
        if row.change.deleted:
            return [("[dim]deleted[/]", "", "")]
        return [("[red]does not build[/]", "", escape(row.error))]
    out = [] if row.findings else [("[green]clean[/]", f"{row.cases:,}", "")]
    for cls, n in row.findings.items():
        mark = "[red]+[/] " if cls in row.appeared else "  "
        out.append((f"{mark}[red]{cls}[/]", f"{n:,}", escape(row.reproducers.get(cls, "-"))))
    for cls in row.disappeared:
        out.append((f"[green]-[/] {cls} [green](gone)[/]", "", ""))
    return out


def _symbols(checker: Checker, rows: list[Row], shape: str, sep: str) -> list[str]:
    """Each symbol with the kinds it ran as over the versions (a kind from the name can be
    copy in a version whose two directions are one body)."""
    out = []
    for s, k in checker.symbols:
        ran = sorted({r.kinds[s] for r in rows if s in r.kinds}) or [k or infer.kind_from_name(s).value]
        out.append(shape.format(s=s, k=sep.join(ran)))
    return out


def _print_history(opts: HistoryOptions, path: str, checker: Checker, rows: list[Row], baseline: bool) -> None:
    console = stdout_console()
    symbols = ", ".join(_symbols(checker, rows, "{s} ({k})", " or "))
    title = (f"history: {path} in {opts.repo}, {symbols}, max-len {opts.sweep.max_len}, profile {opts.sweep.profile}"
             f"{', RV32' if opts.sweep.target.xlen == 32 and checker.build.arch == 'riscv' else ''}")
    table = new_table(title=escape(title), title_justify="left", show_edge=False, pad_edge=False, box=None)
    # A reproducer stays on one line, to be pasted into repro; on a narrow terminal the
    # subject gives way (piped, lines are 240 wide).
    for column in ("commit", "date", "subject", "class", "cases", "smallest reproducer"):
        table.add_column(column, justify="right" if column == "cases" else "left",
                         no_wrap=column != "subject", min_width=12 if column == "commit" else None,
                         max_width=40 if column == "subject" else None)
    for i, row in enumerate(rows):
        subject = escape(row.change.subject)
        if i == 0 and baseline:
            subject = f"[dim](at --since)[/] {subject}"
        elif row.change.old_path:
            subject += escape(f" (renamed from {row.change.old_path})")
        for j, (cls, cases, repro) in enumerate(_classes_rows(row)):
            first = j == 0
            table.add_row(row.change.short if first else "", row.change.date[:10] if first else "",
                          subject if first else "", cls, cases, repro)
    emit(console, table)
    emit(console, f"{plural(len(rows), 'commit')}: {checker.checked} checked, {checker.from_cache} from the cache "
                  f"({checker.cache.directory}); + a class appears, - it disappears")


def _bisect(opts: HistoryOptions, repo: Repo, path: str, checker: Checker) -> int:
    cls, fixed = opts.bisect, opts.fixed
    assert cls is not None and opts.good is not None and opts.bad is not None  # check_history_args
    good, bad = repo.commit(opts.good, "--good"), repo.commit(opts.bad, "--bad")
    older, newer = (bad, good) if fixed else (good, bad)
    if older == newer:
        raise CopyfuzzError(f"--good and --bad are the same commit ({good[:12]})")
    if not repo.is_ancestor(older, newer):
        first, second = ("--bad", "--good") if fixed else ("--good", "--bad")
        raise CopyfuzzError(f"{first} {older[:12]} is not an ancestor of {second} {newer[:12]}"
                            + ("" if fixed else " (to find where a class disappears: --fixed, with --bad the older)"))
    path = repo.path_at(newer, path)
    candidates = repo.changes(path, newer, older)
    start = repo.last_change(older, repo.path_before(candidates, path))
    end = repo.last_change(newer, path)
    if end is None:
        raise CopyfuzzError(f"{repo.path}: {path} does not exist at {newer[:12]}")
    if not candidates:
        raise CopyfuzzError(f"{repo.path}: no commit between {older[:12]} and {newer[:12]} changed {path}")
    word = "fixed" if fixed else "bad"
    # What a version is called: `new` is the state the search looks for the start of.
    def is_new(row: Row) -> bool:
        return not row.shows(cls) if fixed else row.shows(cls)

    examined: dict[str, Row] = {}
    steps: list[dict[str, object]] = []

    def examine(change: Change, label: str) -> Row:
        row = examined.get(change.commit) or checker.check(change)
        examined[change.commit] = row
        verdict = ("skip" if not row.builds else word if is_new(row) else ("bad" if fixed else "good"))
        steps.append({"commit": change.commit, "step": label, "verdict": verdict})
        if not opts.sweep.json:
            state = (f"does not build ({row.error})" if not row.builds
                     else f"{cls} {'present' if row.shows(cls) else 'absent'}")
            emit(stdout_console(), f"{label}: {change.short} {escape(change.subject)}: {escape(state)} -> {verdict}")
        return row

    old_row = examine(start, f"--{'bad' if fixed else 'good'}") if start is not None else None
    if old_row is not None and (not old_row.builds or is_new(old_row)):
        raise CopyfuzzError(f"{path} at {older[:12]} is not a {'bad' if fixed else 'good'} version: "
                            + (old_row.error if not old_row.builds else
                               f"{cls} {'absent' if fixed else 'present'} already"))
    if old_row is None and fixed:
        raise CopyfuzzError(f"{path} does not exist at --bad {older[:12]}")
    new_row = examine(end, f"--{'good' if fixed else 'bad'}")
    if not new_row.builds or not is_new(new_row):
        raise CopyfuzzError(f"{path} at {newer[:12]} is not a {word} version: "
                            + (new_row.error if not new_row.builds else
                               f"{cls} {'present' if fixed else 'absent'} there"))
    # The commit graph decides what lies between an old and a new version, as in `git
    # bisect`: the versions (merges too) in the newest new one's history and in no old
    # one's, best split first. Only a tested version is ever named.
    by_commit = {c.commit: c for c in candidates}
    paths = sorted({p for c in candidates for p in (c.path, c.old_path) if p})
    found, olds, last_old = end, [older], old_row
    skipped: set[str] = set()
    step = 0

    def between_now() -> list[str]:
        return [c for c in repo.bisect_order(found.commit, olds, paths) if c != found.commit and c in by_commit]

    while True:
        untested = [c for c in between_now() if c not in skipped]
        if not untested:
            break
        step += 1
        left = len(untested)
        label = f"step {step} ({plural(left, 'commit')} left to test, roughly {plural(left.bit_length(), 'step')})"
        change = by_commit[untested[0]]
        row = examine(change, label)
        if not row.builds:
            skipped.add(change.commit)
        elif is_new(row):
            found = change
        else:
            olds.append(change.commit)
            last_old = row
    between = [by_commit[c] for c in between_now()]  # all of them skipped
    key = "first_fixed" if fixed else "first_bad"
    rows = sorted(examined.values(), key=lambda r: _order(r.change, candidates, start))
    if opts.sweep.json:
        out: dict[str, object] = {"file": path, "repo": opts.repo, "bisect": cls, "good": good, "bad": bad,
                                  "steps": steps, "commits": [r.to_json() for r in rows],
                                  "checked": checker.checked, "cached": checker.from_cache}
    unresolved = (f"only versions that do not build are left: the first {word} commit is one of "
                  + ", ".join(c.short for c in [*between, found])) if between else ""
    if opts.sweep.json:
        out[key] = None if between else found.commit
        if between:  # one object, as every exit 2 under --json: the steps and the error
            out["candidates"] = [c.commit for c in [*between, found]]
            out["error"] = unresolved
        print(json.dumps(out, indent=2))
    if between:  # the line on stderr; under --json no second object (cli._report_error)
        raise CopyfuzzError(unresolved)
    if not opts.sweep.json:
        console = stdout_console()
        emit(console, f"{key}: {found.commit}")
        emit(console, f"{found.commit} is the first {word} commit ({found.date[:10]}, {escape(found.subject)}): "
                      f"{cls} {'disappears' if fixed else 'appears'} there "
                      f"({checker.checked} checked, {checker.from_cache} from the cache)")
        shown = last_old if fixed else examined[found.commit]  # fixed: the last bad version tested
        repro = shown.reproducers.get(cls) if shown is not None else None
        if repro:
            emit(console, f"  reproducer: {escape(repro)}")
    return 0


def _order(change: Change, candidates: list[Change], start: Change | None) -> int:
    if start is not None and change.commit == start.commit:
        return -1
    return next((i for i, c in enumerate(candidates) if c.commit == change.commit), len(candidates))

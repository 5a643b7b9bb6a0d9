"""`copyfuzz junit --out FILE RESULT.json...`: JUnit XML from the --json output of `fuzz` and `replay`.

One testcase per result: a `fuzz --json` object is one (routine, engine) testcase; a
`replay --json` list gives one testcase per routine in it. Each finding class becomes a
`<failure type=CLASS>` whose text names the spec, the fault pc and the saved regression;
a run that did not finish (exit 2, no result) becomes an `<error>`.

A result may have two sidecar files written by whoever ran the command (ci/campaign.sh,
ci/replay.sh), next to it with the same stem:
  X.status   `key=value` lines: exit (the command's exit status), routine, name (the
             testcase name), seconds, command, note (shown with an error), dir (a
             replayed directory), skipped (a reason: the testcase is reported as
             skipped, no result is read)
  X.stderr   the command's stderr; its tail goes into <error> and <system-err>
so a run that died before printing anything still has a testcase with its identity.

Known findings (--known, known.py): a finding the run's baseline accepts ("known": true
in its --json) is no failure. A testcase whose findings are all known is reported as
skipped, the reason naming each one and the baseline line accepting it; one with new
findings fails on those alone and names the known ones in its text.

Replay of mutants: with --expect-mutants a bundled mutant's cases must reproduce (its
regressions are the mutant catalogue) and fail when they no longer do; any other routine
must not reproduce. Without it, the verdict is `replay`'s own: anything reproducing fails.

Exit status (the verdict, so CI scripts need no second opinion): 0 every testcase passed
or was skipped, 1 a failure, 2 an error (a failed run, an unreadable result) or bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import known, regressions
from .errors import CopyfuzzError
from .routines import discover
from .ui import plural

STDERR_TAIL_LINES = 40
# Characters XML 1.0 cannot carry at all, and terminal escapes (status lines) in stderr.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass
class Outcome:
    """One <failure> or <error>: kind is 'failure' or 'error'."""
    kind: str
    type: str
    message: str
    text: str


@dataclass
class Testcase:
    classname: str
    name: str
    time_s: float = 0.0
    outcomes: list[Outcome] = field(default_factory=list)
    skipped: str | None = None
    stdout: str = ""
    stderr: str = ""

    @property
    def failed(self) -> bool:
        return any(o.kind == "failure" for o in self.outcomes)

    @property
    def errored(self) -> bool:
        return any(o.kind == "error" for o in self.outcomes)


def clean(text: str) -> str:
    """Text XML can hold: no terminal escapes, no carriage-return redraws, no control bytes."""
    text = _ANSI.sub("", text)
    lines = [line.rsplit("\r", 1)[-1] for line in text.split("\n")]  # a redrawn line: its last state
    return _XML_INVALID.sub("", "\n".join(lines))


def read_status(path: Path) -> dict[str, str]:
    """The `key=value` lines of a .status sidecar (missing: empty)."""
    out: dict[str, str] = {}
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip():
            out[key.strip()] = value.strip()
    return out


def read_stderr(path: Path) -> str:
    try:
        return clean(path.read_text(errors="replace"))
    except OSError:
        return ""


def tail(text: str, lines: int = STDERR_TAIL_LINES) -> str:
    kept = [line for line in text.splitlines() if line.strip()]
    return "\n".join(kept[-lines:])


def complaint(stderr: str) -> str:
    """The tool's one-line error: the last `copyfuzz: ` line (warnings come before it,
    details such as compiler output after it)."""
    return next((line for line in reversed(stderr.splitlines()) if line.startswith("copyfuzz: ")), "")


def _seconds(value: object) -> float:
    try:
        return max(0.0, float(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0


# ---- fuzz results ----


def fuzz_testcase(data: dict[str, Any], status: dict[str, str]) -> Testcase:
    engine = str(data.get("engine", "fuzz"))
    tc = Testcase(str(data.get("routine", status.get("routine", "?"))), status.get("name") or engine,
                  _seconds(data.get("elapsed_s", status.get("seconds"))))
    every: list[dict[str, Any]] = [f for f in data.get("finds") or [] if isinstance(f, dict)]
    finds = [f for f in every if not f.get("known")]
    accepted = [text for f in every if f.get("known") for text in _known_texts(f)]
    accepted = list(dict.fromkeys(accepted))  # each (class, pc) once
    if accepted and not finds:
        tc.skipped = "known findings only: " + "; ".join(accepted)
    by_class: dict[str, list[dict[str, Any]]] = {}
    for f in finds:
        by_class.setdefault(str(f.get("cls", "finding")), []).append(f)
    for cls, fs in by_class.items():
        # One paragraph per saved regression: the tool saves one per class and fault pc,
        # and an engine may find the same bug many times over.
        by_regression: dict[str, list[dict[str, Any]]] = {}
        for f in fs:
            by_regression.setdefault(str(f.get("regression") or f.get("spec", "")), []).append(f)
        parts = []
        for reg, group in by_regression.items():
            shown = next((f for f in group if f.get("new")), group[0])
            saved = reg if shown.get("regression") else ""
            parts.append("\n".join(filter(None, [
                f"class: {cls} (classes {','.join(shown.get('classes') or [cls])})",
                f"spec: {shown.get('spec', '?')}",
                f"fault pc: {shown.get('fault_pc') or 'none'}",
                f"regression: {saved} ({'new' if shown.get('new') else 'saved before'}, found {len(group)}x)" if saved
                else f"found {len(group)}x",
                f"artifact: {shown['artifact']}" if shown.get("artifact") else "",
                f"reproduce: ./copyfuzz repro {saved or shown.get('spec', '')}",
            ])))
        first = next((f for f in fs if f.get("new")), fs[0])
        message = f"{cls}: {first.get('spec', '?')} (fault pc {first.get('fault_pc') or 'none'})"
        tc.outcomes.append(Outcome("failure", cls, message,
                                   f"{plural(len(fs), 'finding')} of class {cls} by {engine}, "
                                   f"{plural(len(parts), 'regression')}\n\n" + "\n\n".join(parts)))
    late = [str(p) for p in data.get("not_triaged_in_time") or []]
    if late:
        where = str(Path(late[0]).parent)
        tc.outcomes.append(Outcome(
            "failure", "untriaged", f"{plural(len(late), 'failure')} not triaged in time",
            f"the triage time ({data.get('triage_time_s')} s) was used up: saved unshrunk and not re-run\n"
            + "\n".join(late) + f"\nreplay: ./copyfuzz replay {where}"))
    cov = data.get("coverage")
    cov_line = ""
    if isinstance(cov, dict) and cov.get("instructions"):
        cov_line = (f"\ncoverage: instructions {cov.get('executed', 0)}/{cov['instructions']}, "
                    f"edges {cov.get('edges_covered', 0)}/{cov.get('edges', 0)}")
    tc.stdout = (f"{data.get('routine')} with {engine} (profile {data.get('profile')}, seed {data.get('seed')}): "
                 f"{data.get('executions', 0)} executions in {data.get('elapsed_s', 0)} s "
                 f"({data.get('exec_per_s', 0)}/s), {data.get('rounds', 0)} rounds, corpus "
                 f"{data.get('corpus_size', 0)} inputs in {data.get('corpus')}, findings in "
                 f"{data.get('findings_dir')}{cov_line}")
    if accepted:
        tc.stdout += "\nknown findings (not failures): " + "; ".join(accepted)
    return tc


def _known_texts(f: dict[str, Any]) -> list[str]:
    """`CLASS PC (baseline FILE:LINE)` for each class of a known campaign finding."""
    pc = known.pc_of_described(str(f.get("fault_pc") or ""))
    classes = [str(c) for c in f.get("classes") or [f.get("cls", "finding")]]
    by = [str(b) for b in f.get("known_by") or []]
    return [known.key_text(cls, pc) + (f" (baseline {by[i]})" if i < len(by) else "")
            for i, cls in enumerate(classes)]


# ---- replay results ----


def _regression_files(directory: str | None) -> dict[str, Path]:
    """Spec line -> the regression file holding it, to show its saved header."""
    return regressions.files_by_spec(Path(directory)) if directory else {}


def _build_flags(options: list[str]) -> str:
    """A file routine's build as replay names it: its saved options without `--kind K`
    (two builds of one file with other -D switches are two testcases)."""
    words = [str(w) for w in options]
    kept = [w for i, w in enumerate(words) if w != "--kind" and (i == 0 or words[i - 1] != "--kind")]
    return " ".join(kept)


def replay_testcases(data: list[Any], status: dict[str, str], mutants: set[str],
                     expect_mutants: bool) -> list[Testcase]:
    name = status.get("name") or "replay"
    seconds = _seconds(status.get("seconds"))
    files = _regression_files(status.get("dir"))
    entries = [e for e in data if isinstance(e, dict)]
    out = []
    for entry in entries:
        routine = str(entry.get("routine", "?"))
        built = _build_flags(entry.get("options") or [])
        cases = int(entry.get("cases") or 0)
        failing = int(entry.get("failing_cases") or 0)
        findings: dict[str, int] = entry.get("findings") or {}
        reproducers: dict[str, str] = entry.get("reproducers") or {}
        tc = Testcase(f"{routine} {built}".strip(), name, seconds / max(1, len(entries)))
        summary = (f"{routine}{' ' * bool(built)}{built} (profile {entry.get('profile')}): {plural(cases, 'case')}, "
                   f"{failing} reproducing")
        if expect_mutants and routine in mutants:
            if failing < cases:
                tc.outcomes.append(Outcome(
                    "failure", "mutant-escaped",
                    f"{cases - failing} of {plural(cases, 'case')} no longer reproduce{'s' * (cases - failing == 1)} "
                    f"on the mutant {routine}",
                    f"{summary}\nA mutant's regressions must reproduce: one that does not means the harness "
                    f"or the oracle stopped catching this bug class.\nreproducing classes: "
                    f"{', '.join(findings) or 'none'}"))
            tc.stdout = summary + ("\nreproduces as expected (a mutant): " + ", ".join(findings) if findings else "")
            out.append(tc)
            continue
        unique = [u for u in entry.get("unique_findings") or [] if isinstance(u, dict)]
        accepted = [f"{known.key_text(str(u.get('class')), u.get('pc'))} (baseline {u.get('known_by')})"
                    for u in unique if u.get("known")]
        if accepted:
            # Only classes with a new (class, fault pc) fail; the counts are of those.
            new_classes = {str(u.get("class")) for u in unique if not u.get("known")}
            findings = {cls: sum(int(u.get("cases") or 0) for u in unique
                                 if u.get("class") == cls and not u.get("known")) for cls in findings
                        if cls in new_classes}
            reproducers = {str(u.get("class")): str(u.get("reproducer")) for u in reversed(unique)
                           if not u.get("known")}
            if not findings:
                tc.skipped = "known findings only: " + "; ".join(accepted)
            summary += "\nknown findings (not failures): " + "; ".join(accepted)
        for cls, count in findings.items():
            spec = reproducers.get(cls, "?")
            text = [f"{plural(count, 'case')} of class {cls}", f"spec: {spec}"]
            reg = files.get(spec)
            pc = ""
            if reg is not None:  # replay does not say the fault pc: the saved regression does
                head = regressions.header(reg)
                pc = f" (fault pc {head.get('fault-pc', 'none')})"
                text += [f"regression: {reg}", f"fault pc (when saved): {head.get('fault-pc', 'none')}",
                         f"found by: {head.get('found-by', '?')}"]
            text.append(f"reproduce: ./copyfuzz repro {reg or spec}")
            tc.outcomes.append(Outcome("failure", cls, f"{cls}: {spec}{pc}", "\n".join(text)))
        tc.stdout = summary
        out.append(tc)
    return out


# ---- reading results ----


def testcases_of(path: Path, mutants: set[str], expect_mutants: bool) -> list[Testcase]:
    """The testcases one result file (and its sidecars) stands for."""
    status = read_status(path.with_suffix(".status"))
    full_stderr = read_stderr(path.with_suffix(".stderr"))
    stderr = tail(full_stderr)
    classname = status.get("routine") or "copyfuzz"
    name = status.get("name") or path.stem
    if "skipped" in status:
        return [Testcase(classname, name, skipped=status["skipped"] or "skipped")]
    exit_text = status.get("exit", "")
    exit_code = int(exit_text) if exit_text.lstrip("-").isdigit() else None
    data: Any = None
    problem = ""
    try:
        text = path.read_text(errors="replace")
        data = json.loads(text) if text.strip() else None
        if data is None:
            problem = "no result (empty output)"
    except OSError as e:
        problem = f"no result ({e.strerror})"
    except json.JSONDecodeError as e:
        problem = f"unreadable result ({e.msg} at line {e.lineno})"
    tcs: list[Testcase] = []
    if isinstance(data, dict) and "finds" in data:
        tcs = [fuzz_testcase(data, status)]
    elif isinstance(data, list):
        tcs = replay_testcases(data, status, mutants, expect_mutants)
    elif data is not None:
        problem = "not the --json output of copyfuzz fuzz or replay"
    ran_ok = exit_code in (0, 1) or (exit_code is None and not problem)
    if problem or not ran_ok or (exit_code == 1 and not tcs):
        what = f"exit {exit_code}" if exit_code is not None else "no exit status"
        message = complaint(full_stderr) or problem or f"the run ended with {what}"
        detail = "\n".join(filter(None, [f"command: {status['command']}" if status.get("command") else "",
                                         f"{what}; {problem}" if problem else what,
                                         f"note: {status['note']}" if status.get("note") else ""]))
        detail += f"\n\n{stderr}" if stderr else ""
        err = Testcase(classname, name, _seconds(status.get("seconds")),
                       [Outcome("error", what.replace(" ", "-"), message, detail)])
        # What the run did report is kept (a finding stays a finding), the error added.
        tcs = tcs if tcs else [err]
        if tcs[0] is not err:
            tcs[0].outcomes.append(err.outcomes[0])
    for tc in tcs:
        tc.stderr = stderr
    return tcs


# ---- writing ----


def _attrs(tcs: list[Testcase]) -> dict[str, str]:
    return {"tests": str(len(tcs)), "failures": str(sum(tc.failed and not tc.errored for tc in tcs)),
            "errors": str(sum(tc.errored for tc in tcs)), "skipped": str(sum(tc.skipped is not None for tc in tcs)),
            "time": f"{sum(tc.time_s for tc in tcs):.3f}"}


def to_xml(tcs: list[Testcase], suite: str) -> ET.Element:
    """testsuites > testsuite > testcase, with counts and times on both levels: readers
    differ in which one they take. A testcase with an error is counted once, as an error."""
    root = ET.Element("testsuites", {"name": suite, **_attrs(tcs)})
    ts = ET.SubElement(root, "testsuite", {
        "name": suite, **_attrs(tcs), "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "hostname": clean(socket.gethostname()) or "localhost"})
    for tc in tcs:
        el = ET.SubElement(ts, "testcase", {"classname": clean(tc.classname), "name": clean(tc.name),
                                            "time": f"{tc.time_s:.3f}"})
        if tc.skipped is not None:
            ET.SubElement(el, "skipped", {"message": clean(tc.skipped)})
        for o in tc.outcomes:
            child = ET.SubElement(el, o.kind, {"type": clean(o.type), "message": clean(o.message)})
            child.text = clean(o.text)
        if tc.stdout:
            ET.SubElement(el, "system-out").text = clean(tc.stdout)
        if tc.stderr:
            ET.SubElement(el, "system-err").text = clean(tc.stderr)
    ET.indent(root)
    return root


def write(tcs: list[Testcase], out: Path, suite: str) -> None:
    """Written aside and renamed: a CI step reading it never sees half a file."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    body = ET.tostring(to_xml(tcs, suite), encoding="unicode")
    tmp.write_text(f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n', encoding="utf-8")
    os.replace(tmp, out)


def verdict(tcs: list[Testcase]) -> int:
    if any(tc.errored for tc in tcs):
        return 2
    return 1 if any(tc.failed for tc in tcs) else 0


def run_junit(root: Path, args: argparse.Namespace) -> int:
    try:
        mutants = {r.name for r in discover(root) if r.is_mutant}
    except CopyfuzzError:
        mutants = set()  # a broken routine header must not cost the report
    tcs: list[Testcase] = []
    for path in args.results:
        if not path.exists() and not path.with_suffix(".status").exists():
            raise CopyfuzzError(f"{path}: no such result (nor {path.with_suffix('.status').name} beside it)")
        tcs += testcases_of(path, mutants, args.expect_mutants)
    try:
        write(tcs, args.out, args.suite)
    except OSError as e:
        raise CopyfuzzError(f"cannot write {args.out}: {e.strerror}") from e
    return verdict(tcs)

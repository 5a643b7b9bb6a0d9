"""Every command shown in the documentation runs, and exits as the page says.

The convention (docs/README.md, "Writing docs" has the details for writers):
  - Commands live in ```sh fenced blocks. Each non-empty line that does not start
    with '#' is one command; a line ending in a backslash continues on the next.
  - ' #' starts a comment (outside quotes). A comment that starts with `exit N`
    says the command must exit with N; otherwise it must exit 0. A comment that
    starts with `not run by the docs test: <why>` skips the command; at most
    MAX_NOT_RUN different commands may say so (`make check` runs this test). A comment
    that starts with `kernel tier` (`# kernel tier, exit 1`) marks a command that boots
    kernels, and one that starts with `long tier` a command that runs for minutes (the
    README's main job): `make check-kernel` and `make check-long` run them
    (tests/test_docs_tiers_e2e.py; CI runs both after `make check`), not this test.
  - Output goes in ```text blocks. A line there that starts with '$ ' quotes a
    command: it must be one of the ```sh commands (so transcripts cannot show
    commands nobody runs). Shell-ish languages other than sh (bash, console,
    shell, ...) are refused: a command must be either run or plainly not one.

Pages: README.md, docs/*.md, and the other Markdown files docs/README.md links to.

Each command runs in a fresh `bash -o pipefail -c` at the root of a scratch copy of
the working tree: tracked files and untracked ones that are not ignored, as they are
on disk (uncommitted changes are what gets tested), committed to a repository of its
own, built there for RV64 and RV32, with .venv linked. Each page gets its own copy, so what a page's commands write
(findings/, corpora/, files of their own) never reaches the checkout or another page.
Commands of one page run in page order; selecting one with -k runs the page's earlier
commands first. When two pages run the same command after the same commands (both
start with it, say), it runs once. Each command
has a time limit (COMMAND_TIMEOUT_S).

COPYFUZZ_DOCS_KEEP=1 keeps the scratch copies and prints where they are.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT

pytestmark = pytest.mark.e2e

COMMAND_TIMEOUT_S = 600
BUILD_TIMEOUT_S = 1200
MAX_NOT_RUN = 2
NOT_RUN = "not run by the docs test:"
# The tags of commands another make target runs (tests/test_docs_tiers_e2e.py), not this
# test: why, and which target.
TIERS = {"kernel tier": ("boots kernels", "make check-kernel"), "long tier": ("runs for minutes", "make check-long")}
SHELL_LANGUAGES = {"bash", "shell", "console", "sh-session", "shell-session", "shellsession",
                   "zsh", "terminal", "bash-session"}
OUTPUT_TAIL_LINES = 60
# Pages run whole by the long tier (pytest's `long` mark: `make check-long`, in CI after
# `make check`), in scratch copies and page order as here: pages whose commands run fuzz
# campaigns (each for its --time), fuzz-target builds, or sweeps and checks of what the e2e
# tests named sweep and check in `make check`. They took 200 of the suite's 1,100
# test-seconds (docs/perf.md, "What the test suite costs"); the quick pages stay.
LONG_PAGES = {
    "README.md": "sweeps of every architecture's routines, a campaign (tests/test_sweep_e2e.py, "
                 "test_fuzz_cli_e2e.py)",
    "docs/ci.md": "campaigns, replays and AFL++ syncs (tests/test_ci_e2e.py, test_known_e2e.py)",
    "docs/clusterfuzzlite.md": "fuzz-target builds and runs (tests/test_clusterfuzzlite_e2e.py, long too)",
    "docs/quickstart.md": "a campaign on a mutant (tests/test_fuzz_engines_e2e.py)",
    "docs/triage.md": "a campaign on a fixture, its repro and checks (tests/test_check_e2e.py, "
                      "test_fuzz_e2e.py)",
    "docs/outside-code.md": "checks of the outside fixtures (tests/test_outside_code_e2e.py, test_outside_e2e.py)",
    "docs/kernel.md": "checks of the kernel-style fixtures (tests/test_check_e2e.py)",
    "docs/history.md": "the fixture repository's history and its three bisects, each as "
                       "tests/test_history_e2e.py runs it (first_run, test_text_rows, "
                       "test_since_and_until, test_bisect_first_bad, test_bisect_first_fixed)",
    "docs/semantics.md": "repros of the mutants and fixtures each class comes from, a granule sweep "
                         "(tests/test_sweep_e2e.py, test_hostile_e2e.py, test_mte_e2e.py, test_isa_e2e.py)",
    "docs/adding.md": "an audit and a sweep of a bundled routine's copy, a new mutant's sweep "
                      "(tests/test_sweep_e2e.py, test_cli.py)",
    "docs/executor.md": "the executor run by hand under QEMU (tests/test_executor.py, test_sweep_e2e.py)",
}


@dataclass(frozen=True)
class Command:
    page: str      # path relative to ROOT
    line: int      # 1-based line of its first physical line
    text: str      # the command, comment removed, continuations joined
    expect: int    # the exit status it must have
    not_run: str   # why it is not run ("" when it is)
    tier: str = ""  # a TIERS tag: its make target runs it instead (not_run says so)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


# ---------------------------------------------------------------- parsing


def split_comment(line: str) -> tuple[str, str]:
    """(command, comment): a '#' outside quotes, at the start or after a blank, starts a comment."""
    quote = ""
    i = 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c == "\\":
            i += 2
            continue
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
        i += 1
    return line.rstrip(), ""


def normalise(text: str) -> str:
    return " ".join(text.split())


_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([^`\s]*)")


def fenced_blocks(text: str) -> list[tuple[str, int, list[str]]]:
    """(language, line of the first content line, content lines) of each fenced block."""
    blocks = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(1), m.group(2).lower()
        start = i + 1
        j = start
        while j < len(lines):
            s = lines[j].strip()
            if s.startswith(fence[0] * len(fence)) and not s.lstrip(fence[0]).strip():
                break
            j += 1
        blocks.append((lang, start + 1, lines[start:j]))
        i = j + 1
    return blocks


def prose(text: str) -> str:
    """The page without its fenced blocks."""
    out, fence = [], ""
    for line in text.splitlines():
        m = _FENCE.match(line)
        if fence:
            s = line.strip()
            if s.startswith(fence) and not s.lstrip(fence[0]).strip():
                fence = ""
        elif m:
            fence = m.group(1)
        else:
            out.append(line)
    return "\n".join(out)


def logical_lines(content: list[str], first_line: int) -> list[tuple[int, str]]:
    """Join backslash continuations; (line number of the first physical line, text)."""
    out = []
    buf, at = "", 0
    for k, raw in enumerate(content):
        s = raw.rstrip()
        if not buf:
            at = first_line + k
        if s.endswith("\\"):
            buf += s[:-1].strip() + " "
            continue
        out.append((at, (buf + s.strip()).strip()))
        buf = ""
    if buf:
        out.append((at, buf.strip()))
    return out


def parse_page(page: str, text: str) -> tuple[list[Command], list[tuple[int, str]], list[str]]:
    """The page's commands, its quoted transcript commands (line, text), and its problems."""
    commands: list[Command] = []
    quoted: list[tuple[int, str]] = []
    problems: list[str] = []
    for lang, first, content in fenced_blocks(text):
        if lang in SHELL_LANGUAGES:
            problems.append(f"{page}:{first - 1}: ```{lang} block: use ```sh for commands "
                            "(they are run) and ```text for output")
            continue
        if lang == "sh":
            for line, logical in logical_lines(content, first):
                if not logical or logical.startswith("#"):
                    continue
                if logical.startswith("$ "):
                    problems.append(f"{page}:{line}: a prompt in a ```sh block: write the bare "
                                    "command, and its output in a ```text block")
                    continue
                cmd, comment = split_comment(logical)
                expect, not_run = 0, ""
                tier = next((t for t in TIERS if comment.startswith(t)), "")
                if tier:
                    comment = comment[len(tier):].lstrip(" ,:")
                    why, target = TIERS[tier]
                    not_run = f"{why}: `{target}` runs it (tests/test_docs_tiers_e2e.py)"
                m = re.match(r"exit (\d+)\b", comment)
                if m:
                    expect = int(m.group(1))
                elif comment.startswith(NOT_RUN):
                    not_run = comment[len(NOT_RUN):].strip()
                    if not not_run:
                        problems.append(f"{page}:{line}: '{NOT_RUN}' needs a reason")
                commands.append(Command(page, line, cmd, expect, not_run, tier))
        elif lang == "text":
            for line, logical in logical_lines(content, first):
                if logical.startswith("$ "):
                    quoted.append((line, split_comment(logical[2:])[0]))
    return commands, quoted, problems


def doc_pages() -> list[str]:
    """README.md, docs/README.md, the other docs/*.md, then Markdown files the index links to."""
    pages = ["README.md"]
    docs = ROOT / "docs"
    index = docs / "README.md"
    if index.exists():
        pages.append("docs/README.md")
    pages += [f"docs/{p.name}" for p in sorted(docs.glob("*.md")) if p.name != "README.md"]
    if index.exists():
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", index.read_text()):
            path = (docs / target).resolve()
            try:
                rel = path.relative_to(ROOT).as_posix()
            except ValueError:
                continue
            if path.is_file() and rel not in pages:
                pages.append(rel)
    return pages


def collect() -> tuple[list[Command], list[str]]:
    commands: list[Command] = []
    problems: list[str] = []
    quoted: list[tuple[str, int, str]] = []
    for page in doc_pages():
        cmds, q, probs = parse_page(page, (ROOT / page).read_text())
        commands += cmds
        problems += probs
        quoted += [(page, line, text) for line, text in q]
    known = {normalise(c.text) for c in commands}
    for page, line, text in quoted:
        if normalise(text) not in known:
            problems.append(f"{page}:{line}: the transcript shows `{text}`, which no ```sh "
                            "block runs: add it to one (or drop the '$ ')")
    return commands, problems


COMMANDS, PROBLEMS = collect()


def state_keys(commands: list[Command]) -> dict[Command, tuple[str, ...]]:
    """A command's key: itself and every command its page runs before it. Two commands
    with the same key run on identical trees, so one run answers for both."""
    keys: dict[Command, tuple[str, ...]] = {}
    prefix: dict[str, tuple[str, ...]] = {}
    for c in commands:
        if c.not_run:
            continue
        prefix[c.page] = prefix.get(c.page, ()) + (normalise(c.text),)
        keys[c] = prefix[c.page]
    return keys


STATE_KEYS = state_keys(COMMANDS)


# ---------------------------------------------------------------- running


@dataclass
class Outcome:
    status: int | None  # None: timed out
    output: str
    seconds: float
    ran_as: str         # where the command was really run (itself, or its first copy)


def command_env() -> dict[str, str]:
    """The user's environment without what would steer the commands elsewhere."""
    drop = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "PYTHONPATH", "O"}
    return {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("COPYFUZZ_")}


def tree_files() -> list[str]:
    """Tracked files and untracked, not ignored ones, as in the working tree."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", "build", ".venv", "findings", "corpora"}
        return [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*")
                if not (p.is_dir() and not p.is_symlink())
                and p.relative_to(ROOT).parts[0] not in skip
                and "__pycache__" not in p.parts]
    return sorted({f for f in out.decode().split("\0") if f})


def make_scratch(into: Path) -> None:
    for rel in tree_files():
        src, dst = ROOT / rel, into / rel
        if not src.is_symlink() and not src.is_file():
            continue  # deleted in the working tree, or a submodule
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copy2(src, dst)
    # A repository of its own, one commit of the copied files: scripts that ask git for
    # the tracked files (ci/cflite-local.sh) see what they would see in the checkout.
    git = ["git", "-C", str(into), "-c", "user.name=copyfuzz docs test",
           "-c", "user.email=docs-test@localhost", "-c", "commit.gpgsign=false"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "--no-verify", "-m", "scratch copy"]):
        if subprocess.run(git + args, capture_output=True).returncode != 0:
            break
    if (ROOT / ".venv").is_dir():
        os.symlink(ROOT / ".venv", into / ".venv")
        exclude = into / ".git" / "info" / "exclude"
        if exclude.parent.is_dir():
            with exclude.open("a") as f:
                f.write("/.venv\n")


def run_shell(cmd: str, cwd: Path, timeout: float) -> tuple[int | None, str, float]:
    started = time.monotonic()
    proc = subprocess.Popen(["bash", "-o", "pipefail", "-c", cmd], cwd=cwd, env=command_env(),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        status: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the command and everything it started
        out, _ = proc.communicate()
        status = None
    return status, out.decode(errors="replace"), time.monotonic() - started


class Runner:
    """Runs commands, each page in its own copy of the built scratch tree."""

    def __init__(self, root: Path, base: Path) -> None:
        self.root, self.base = root, base
        self.pages: dict[str, Path] = {}
        self.done: dict[Command, Outcome] = {}
        self.by_key: dict[tuple[str, ...], tuple[Command, Outcome]] = {}

    def page_dir(self, page: str) -> Path:
        if page not in self.pages:
            where = self.root / re.sub(r"[^A-Za-z0-9_.-]", "_", page)
            shutil.copytree(self.base, where, symlinks=True)  # copy2: mtimes kept, make stays quiet
            self.pages[page] = where
        return self.pages[page]

    def run(self, cmd: Command) -> Outcome:
        for earlier in COMMANDS:
            if earlier == cmd:
                break
            if earlier.page == cmd.page and not earlier.not_run:
                self._run_one(earlier)
        return self._run_one(cmd)

    def _run_one(self, cmd: Command) -> Outcome:
        if cmd in self.done:
            return self.done[cmd]
        key = STATE_KEYS[cmd]
        first = self.by_key.get(key)
        if first:
            outcome = first[1]
        else:
            status, output, seconds = run_shell(cmd.text, self.page_dir(cmd.page), COMMAND_TIMEOUT_S)
            outcome = Outcome(status, output, seconds, cmd.where)
            self.by_key[key] = (cmd, outcome)
        self.done[cmd] = outcome
        return outcome


# The scratch tree is built for both XLENs once; each page then gets a copy of it.
BUILD = "make -s all && make -s XLEN=32 all"
# Left out of the build the scratch tree starts from: booted kernels (gigabytes, the
# kernel tier's), and what the tool builds on demand (a file's check builds, an --isa's
# routines), which the pages' commands then build as a user's first run would.
NOT_COPIED = ("kernel", "check", "isa-*")


def copy_build(into: Path) -> None:
    """The checkout's build of `make all` (`make check` has made it), times kept: BUILD in
    the scratch tree then checks it is up to date rather than compiling it again (about
    20 s of CPU on each worker). Files carry no absolute path make would follow."""
    src = ROOT / "build"
    if src.is_dir():
        shutil.copytree(src, into / "build", symlinks=True, ignore=shutil.ignore_patterns(*NOT_COPIED))


@pytest.fixture(scope="session")
def runner() -> Iterator[Runner]:
    root = Path(tempfile.mkdtemp(prefix="copyfuzz-docs-"))
    keep = os.environ.get("COPYFUZZ_DOCS_KEEP") == "1"
    try:
        base = root / "base"
        base.mkdir()
        make_scratch(base)
        copy_build(base)
        status, output, seconds = run_shell(BUILD, base, BUILD_TIMEOUT_S)
        if status != 0:
            pytest.fail(f"`{BUILD}` in the scratch copy {base} exited {status}:\n"
                        + tail(output), pytrace=False)
        r = Runner(root, base)
        yield r
        ran = sum(o.seconds for c, o in r.done.items() if o.ran_as == c.where)
        print(f"\ndocs commands: {len(r.done)} checked, {ran:.0f} s running them "
              f"(+ {seconds:.0f} s build) in {root}")
    finally:
        if keep:
            print(f"\ndocs scratch copies kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def tail(output: str, lines: int = OUTPUT_TAIL_LINES) -> str:
    out = output.rstrip("\n").splitlines()
    cut = len(out) - lines
    return ("\n".join(([f"[... {cut} lines ...]"] if cut > 0 else []) + out[-lines:])) + "\n"


# ---------------------------------------------------------------- tests


def test_docs_follow_the_convention() -> None:
    assert not PROBLEMS, "\n".join(PROBLEMS)


def test_the_long_pages_are_pages() -> None:
    pages = {c.page for c in COMMANDS}
    assert set(LONG_PAGES) <= pages, f"LONG_PAGES names pages with no commands: {set(LONG_PAGES) - pages}"


def test_docs_have_commands() -> None:
    assert len([c for c in COMMANDS if not c.not_run]) >= 20, "the docs test found almost no commands"


def test_at_most_a_couple_of_commands_are_not_run() -> None:
    not_run = [c for c in COMMANDS if c.not_run and not c.tier]
    distinct = {normalise(c.text) for c in not_run}
    assert len(distinct) <= MAX_NOT_RUN, "\n".join(f"{c.where}: {c.text}  ({c.not_run})" for c in not_run)


def test_a_command_run_once_for_two_pages_expects_one_status() -> None:
    first: dict[tuple[str, ...], Command] = {}
    clashes = []
    for c, key in STATE_KEYS.items():
        seen = first.setdefault(key, c)
        if seen.expect != c.expect:
            clashes.append(f"{c.where} expects {c.expect}, {seen.where} {seen.expect}: `{c.text}`")
    assert not clashes, ("the same command after the same commands, with different exit "
                         "statuses (it runs once):\n" + "\n".join(clashes))


def test_every_docs_page_is_in_the_index() -> None:
    index = (ROOT / "docs" / "README.md").read_text()
    missing = [p.name for p in sorted((ROOT / "docs").glob("*.md"))
               if p.name != "README.md" and f"]({p.name})" not in index]
    assert not missing, f"docs/README.md does not list: {', '.join(missing)}"


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings."""
    seen: dict[str, int] = {}
    out = set()
    for line in prose(text).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def test_relative_links_resolve() -> None:
    broken = []
    for page in doc_pages():
        for target in re.findall(r"\]\(([^)\s]+)\)", prose((ROOT / page).read_text())):
            path, _, frag = target.partition("#")
            if re.match(r"^[a-z]+:", path):
                continue
            resolved = ((ROOT / page).parent / path).resolve() if path else ROOT / page
            try:
                rel = resolved.relative_to(ROOT).as_posix()
            except ValueError:
                rel = str(resolved)
            if not resolved.exists():
                broken.append(f"{page}: ({target}): no such file")
            elif frag and resolved.suffix == ".md" and frag not in anchors(resolved.read_text()):
                broken.append(f"{page}: ({target}): no heading with that anchor in {rel}")
    assert not broken, "links to nothing:\n" + "\n".join(broken)


def run_command(cmd: Command, runner: Runner) -> None:
    if cmd.not_run:
        pytest.skip(f"{cmd.where}: {cmd.not_run}")
    outcome = runner.run(cmd)
    again = "" if outcome.ran_as == cmd.where else f" (run once, at {outcome.ran_as})"
    if outcome.status is None:
        pytest.fail(f"{cmd.where}: `{cmd.text}` did not finish within {COMMAND_TIMEOUT_S} s{again}\n"
                    + tail(outcome.output), pytrace=False)
    if outcome.status != cmd.expect:
        pytest.fail(f"{cmd.where}: `{cmd.text}` exited {outcome.status}, the page expects "
                    f"{cmd.expect}{again} ({outcome.seconds:.1f} s)\n" + tail(outcome.output),
                    pytrace=False)


def page_chains(commands: list[Command]) -> list[list[str]]:
    """Pages grouped so that pages whose first run commands are the same (and so share
    the runs of their common prefix) are in one group; in the order of the pages."""
    pages = list(dict.fromkeys(c.page for c in commands))
    first = {p: next((normalise(c.text) for c in commands if c.page == p and not c.not_run), p) for p in pages}
    chains: dict[str, list[str]] = {}
    for p in pages:
        chains.setdefault(first[p], []).append(p)
    return list(chains.values())


def _chain_class(pages: list[str]) -> type:
    cmds = [c for c in COMMANDS if c.page in pages]

    @pytest.mark.parametrize("cmd", cmds, ids=[c.where for c in cmds])
    def test_command(self: object, cmd: Command, runner: Runner) -> None:
        run_command(cmd, runner)
    marks = [pytest.mark.long] if any(p in LONG_PAGES for p in pages) else []
    return type("TestPages_" + re.sub(r"\W", "_", pages[0]), (), {"test_command": test_command,
                                                                    "__doc__": ", ".join(pages),
                                                                    "pytestmark": marks})


for _pages in page_chains(COMMANDS):
    _cls = _chain_class(_pages)
    globals()[_cls.__name__] = _cls

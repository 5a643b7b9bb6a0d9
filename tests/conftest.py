"""Puts tool/ on sys.path so tests import the copyfuzz package as the launcher runs it."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import zygote

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tool"
sys.path.insert(0, str(TOOL))

if TYPE_CHECKING:
    from copyfuzz import plan

# The Python processes tests start (hundreds of `python -m copyfuzz`) keep their bytecode
# in one cache outside the tree, rather than compiling the tool anew each time where
# PYTHONDONTWRITEBYTECODE is set (0.25 s a start against 0.16 s: docs/perf.md).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ.setdefault("PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / f"copyfuzz-pycache-{os.getuid()}"))

# Campaigns in tests leave their drivers unpinned (COPYFUZZ_PIN=0; the tests of the CPU
# claims set it themselves). A pinned driver and its executor hand every input over on
# one CPU; with both CPUs so taken (a --jobs 2 campaign, or one campaign on each pytest
# worker) every other process here got a few percent of a CPU: a 0.1 s import took 5 to
# 9 s, and the other worker's test stalled for the campaign's whole time (docs/perf.md).
os.environ.setdefault("COPYFUZZ_PIN", "0")

# One executor per sweep (COPYFUZZ_JOBS, the default --jobs): the suite's workers already
# keep both CPUs busy, and a second shard per sweep only added its own start-up and
# translation; a quarter less CPU for the e2e modules (docs/perf.md). Tests of shards pass
# --jobs themselves; the docs' commands run with the user's default.
os.environ.setdefault("COPYFUZZ_JOBS", "1")


def budget(seconds: float, least: int = 1) -> str:
    """A test campaign's --time, scaled by the suite's one budget (COPYFUZZ_TEST_BUDGET)."""
    from copyfuzz import envs

    return str(envs.test_budget(seconds, least))


def fuzz_args(tmp: Path, routine: str, engine: str, seconds: float, *extra: str) -> list[str]:
    """`copyfuzz fuzz` with its corpus, findings and regressions under tmp and its --time
    scaled by the budget."""
    return ["fuzz", routine, "--engine", engine, "--time", budget(seconds), "--corpus", str(tmp / "corpus"),
            "--findings", str(tmp / "findings"), "--regressions", str(tmp / "regressions"), *extra]


_ZYGOTE = zygote.Zygote(TOOL)


def _zygote_wanted() -> bool:
    from copyfuzz import envs

    return envs.value("COPYFUZZ_TEST_ZYGOTE") != "0"


_USE_ZYGOTE = _zygote_wanted()


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 600, fresh: bool = False) -> subprocess.CompletedProcess[str]:
    """`python -m copyfuzz ARGS` in a child process, as a user would run it: forked from
    the worker's zygote (tests/zygote.py), which has imported the tool already, unless
    the run's environment changes what Python reads at its start, or fresh=True (a test
    of the start itself)."""
    full_env = {**os.environ, "PYTHONPATH": str(TOOL), **(env or {})}
    if not fresh and _USE_ZYGOTE and not _changes_the_start(env or {}):
        return _ZYGOTE.run(list(args), full_env, cwd or ROOT, timeout)
    return subprocess.run(
        [sys.executable, "-m", "copyfuzz", *args],
        capture_output=True, text=True, env=full_env, cwd=cwd or ROOT, timeout=timeout,
    )


def _changes_the_start(env: dict[str, str]) -> bool:
    return any((k.startswith("PYTHON") and k != "PYTHONPATH") or k in zygote.START_VARIABLES
               for k, v in env.items() if os.environ.get(k) != v)


def cli_in_process(*args: str) -> tuple[int, str]:
    """`copyfuzz ARGS` through the CLI's own main() in this process: the command's whole
    path (parsing, build check, executor, report) without the Python start, most of a
    short command's 0.3 s; its exit status and standard output. For a test that runs one
    command many times, after one run through run_cli as a user runs it."""
    from copyfuzz import cli

    out = io.StringIO()
    sigterm = signal.getsignal(signal.SIGTERM)  # main() installs its own handler
    try:
        with contextlib.redirect_stdout(out):
            status = cli.main(list(args))
    finally:
        signal.signal(signal.SIGTERM, sigterm)
    return status, out.getvalue()


def source_copy(dest: Path) -> Path:
    """A copy of the checkout's sources (what git tracks or would add; no build/, no .venv)
    at dest: for a test that must see what a command writes into the tree, which the
    other pytest worker writes into too."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, names):
        src = ROOT / name
        if src.is_file():  # a file deleted in the work tree is still listed
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


@pytest.fixture(scope="session")
def plugin_decode(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin's decoders (plugin/cfplugin.c) with a command line: tests/c/plugin_decode.c."""
    exe = tmp_path_factory.mktemp("decode") / "plugin_decode"
    subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-D_DEFAULT_SOURCE", "-o", str(exe),
                    str(ROOT / "tests/c/plugin_decode.c")], check=True)
    return exe


@pytest.fixture(scope="module")
def fake_plan(tmp_path_factory: pytest.TempPathFactory) -> "plan.SweepPlan":
    """The fake executor's plan (ids 0..99), from tests/c/fake_cfref.c (tests/fake_executor.py)."""
    from copyfuzz import plan

    lib = tmp_path_factory.mktemp("cfref") / "libcfref.so"
    subprocess.run(["cc", "-std=c11", "-shared", "-fPIC", "-o", str(lib),
                    str(Path(__file__).parent / "c" / "fake_cfref.c")], check=True)
    return plan.SweepPlan(plan.CfRef(lib), "copy", "linux", 64, max_len=1)


# ---- two workers (pytest-xdist, `make check`): the longest scopes start first ----
# --dist loadscope hands out whole modules (and docs page chains, classes) in collection
# order; one long scope started last leaves the other worker idle at the end. The order
# only changes when things finish, never what runs: modules stay contiguous, so their
# fixtures are set up once per worker. Longest first, as measured (docs/perf.md).
LONG_SCOPES = (  # test time per scope, 2026-11-29, session 6 (junit, two workers)
    "fuzz/test_hypothesis.py",  # 38 s: collected last, it had left the other worker 14 s idle
    "tests/test_fuzz_hygiene_e2e.py",  # with test_hostile_e2e one unit (APART_FROM_EACH_OTHER): 35 s
    "tests/test_hostile_e2e.py",
    "tests/test_check_e2e.py",  # 35 s
    "tests/test_history_e2e.py",  # 35 s
    "tests/test_ci_e2e.py",  # 31 s
    "tests/test_outside_e2e.py",  # 29 s
    "tests/test_sweep_e2e.py",  # 27 s
    "tests/test_fuzz_kill_e2e.py",  # 22 s
    "tests/test_isa_e2e.py",  # 22 s
    "tests/test_fuzz_engines_e2e.py",  # 21 s
    "tests/test_build_concurrency_e2e.py",  # 18 s
    "tests/test_plugin_e2e.py",  # 18 s
    "tests/test_docs_commands.py",  # page chains, the longest 14 s
    "tests/test_fuzz_keepgoing_e2e.py",  # 16 s
    "tests/test_kernel_prober.py",  # 16 s
    "tests/test_fuzz_campaigns_e2e.py",  # 16 s
)


# Modules that must not run beside each other on two workers: one worker runs them in
# turn, as one unit. Beside the hostile routines (executors that stop themselves with
# SIGSTOP, and the tool's fresh executors after them), the libFuzzer -jobs workers of the
# hygiene test missed the end of the process they watch and ran to -max_total_time, and
# the hostile check waited 60 s for a fresh executor: both failed (docs/perf.md).
APART_FROM_EACH_OTHER = ("tests/test_fuzz_hygiene_e2e.py", "tests/test_hostile_e2e.py")


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """--dist loadscope, with APART_FROM_EACH_OTHER as one scope."""
    if config.getoption("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):  # type: ignore[misc]  # xdist has no types
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith(APART_FROM_EACH_OTHER):
                return " + ".join(APART_FROM_EACH_OTHER)
            return str(super()._split_scope(nodeid))

    return Scheduling(config, log)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects any: the list of alone files needs them all
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        return next((i for i, scope in enumerate(LONG_SCOPES) if item.nodeid.startswith(scope)), len(LONG_SCOPES))
    items.sort(key=rank)  # stable: the order within a scope is kept
    note_alone_files(config, items)


# `make check` runs the tests marked `alone` after the others. The first run lists the
# test files that hold them (--alone-files-out=FILE, at collection, before `-m` deselects
# them); the second (--alone-files-in=FILE) collects only those, not the whole suite again
# (5 s). Options, not variables: no session a test starts inherits them.
def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--alone-files-out", metavar="FILE", help="write the test files holding `alone` tests to FILE")
    parser.addoption("--alone-files-in", metavar="FILE",
                     help="collect only the test files FILE lists (all of them when it lists none)")


def note_alone_files(config: pytest.Config, items: list[pytest.Item]) -> None:
    path = config.getoption("alone_files_out")
    if not path:
        return
    files = sorted({item.nodeid.split("::")[0] for item in items if item.get_closest_marker("alone")})
    tmp = f"{path}.{os.getpid()}"
    try:  # written whole or not at all; without it the second run collects everything
        Path(tmp).write_text("".join(f"{f}\n" for f in files))
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


_ALONE_IN = pytest.StashKey[frozenset[str] | None]()


def _alone_files(config: pytest.Config) -> frozenset[str] | None:
    """What --alone-files-in lists, read once; None: collect as usual."""
    if _ALONE_IN not in config.stash:
        path, files = config.getoption("alone_files_in"), frozenset[str]()
        if path:
            with contextlib.suppress(OSError):
                files = frozenset(line for line in Path(path).read_text().split("\n") if line)
        config.stash[_ALONE_IN] = files or None
    return config.stash[_ALONE_IN]


class _AloneFilesOnly:
    """A plugin, not a hook of this conftest: a conftest's collection hooks see only the
    paths under its own directory, and the suite is tests/ and fuzz/."""

    @staticmethod
    def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
        """Under --alone-files-in, a test file it does not list is not collected (None:
        pytest's own rules decide, as for every directory and every other file)."""
        files = _alone_files(config)
        if files is None or not collection_path.name.startswith("test_") or collection_path.suffix != ".py":
            return None
        return True if str(collection_path.relative_to(config.rootpath)) not in files else None


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_AloneFilesOnly(), "copyfuzz-alone-files")


# ---- the session leaves no process behind (tests/leftovers.py, tests/test_leftovers.py) ----
import uuid  # noqa: E402

import leftovers  # noqa: E402

# In the environment of every process a test starts. Under pytest-xdist (`make check` runs
# two workers) the workers take their controller's marker, and only the controller checks,
# once all workers are done: a worker that finished early would see the other's processes.
# A session a test starts (tests/test_leftovers.py, the docs tests' copies) is a session of
# its own: it is no xdist worker of the process that made the marker.
_OWNER = leftovers.OWNER
if (os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get(leftovers.MARKER)
        and os.environ.get(_OWNER) == str(os.getppid())):
    SESSION = os.environ[leftovers.MARKER]
else:
    SESSION = uuid.uuid4().hex
    os.environ[leftovers.MARKER] = SESSION
    os.environ[_OWNER] = str(os.getpid())


# ---- the suite's time is a limit (issue 27): `make check` gives it ----
_STARTED = time.monotonic()
SUITE_LIMIT = "COPYFUZZ_TEST_SUITE_LIMIT_S"


def check_suite_time(session: pytest.Session) -> None:
    """Fail the session when it took longer than COPYFUZZ_TEST_SUITE_LIMIT_S (unset: no
    limit), saying so in one line."""
    text = os.environ.get(SUITE_LIMIT, "")
    if not text:
        return
    try:
        limit = float(text)
    except ValueError:
        raise pytest.UsageError(f"{SUITE_LIMIT}={text!r}: expected seconds, such as 330") from None
    took = time.monotonic() - _STARTED
    if took > limit:
        session.config.get_terminal_writer().line(
            f"the test suite took {took:.0f} s, over its limit of {limit:g} s ({SUITE_LIMIT}; `make check` "
            "must stay within 6 minutes: docs/perf.md, \"What the test suite costs\")", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# ---- the suite writes nothing into the checkout's findings/ (a command's default) ----
CHECKOUT_FINDINGS = ROOT / "findings"


def findings_state(directory: Path = CHECKOUT_FINDINGS) -> dict[str, tuple[int, int]]:
    """Each file under directory: its modification time and size."""
    out = {}
    for p in directory.rglob("*") if directory.is_dir() else ():
        with contextlib.suppress(OSError):
            st = p.stat()
            out[str(p.relative_to(directory))] = (st.st_mtime_ns, st.st_size)
    return out


def changed_since(before: dict[str, tuple[int, int]]) -> list[str]:
    """The files of findings/ written since `before` (findings_state()), by name."""
    return sorted(k for k, v in findings_state().items() if before.get(k) != v)


_FINDINGS_BEFORE = findings_state()
# The files a test wrote there on purpose (the docs' tier commands, which run as written at
# the checkout's root: tests/test_docs_tiers_e2e.py), one name a line, from any worker.
_FINDINGS_ACCEPTED = Path(tempfile.gettempdir()) / f"copyfuzz-findings-accepted-{SESSION}"


def accept_findings_written(before: dict[str, tuple[int, int]]) -> None:
    """The files of findings/ changed since `before` (findings_state()) are this test's
    purpose, not a slip: check_findings_untouched lets them be."""
    with open(_FINDINGS_ACCEPTED, "a", encoding="utf-8") as f:
        f.writelines(f"{k}\n" for k in changed_since(before))


def check_findings_untouched(session: pytest.Session) -> None:
    """Fail the session when a test left the checkout's findings/ changed: a command run
    without --findings, whose results then mix with the user's own."""
    try:
        accepted = set(_FINDINGS_ACCEPTED.read_text(encoding="utf-8").splitlines())
        _FINDINGS_ACCEPTED.unlink()
    except FileNotFoundError:
        accepted = set()
    changed = [k for k in changed_since(_FINDINGS_BEFORE) if k not in accepted]
    if changed:
        session.config.get_terminal_writer().line(
            f"tests wrote into {CHECKOUT_FINDINGS} (a command without --findings): {', '.join(changed)}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _ZYGOTE.stop()  # before the check: it is a process of the session's too
    if not hasattr(session.config, "workerinput"):  # not an xdist worker
        leftovers.finish_session(session, SESSION, ROOT)
        check_suite_time(session)
        check_findings_untouched(session)

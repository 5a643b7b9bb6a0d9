"""Puts tool/ on sys.path so tests import the copyfuzz package as the launcher runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tool"
sys.path.insert(0, str(TOOL))

if TYPE_CHECKING:
    from copyfuzz import plan


def budget(seconds: float, least: int = 1) -> str:
    """A test campaign's --time, scaled by the suite's one budget (COPYFUZZ_TEST_BUDGET)."""
    from copyfuzz import envs

    return str(envs.test_budget(seconds, least))


def fuzz_args(tmp: Path, routine: str, engine: str, seconds: float, *extra: str) -> list[str]:
    """`copyfuzz fuzz` with its corpus, findings and regressions under tmp and its --time
    scaled by the budget."""
    return ["fuzz", routine, "--engine", engine, "--time", budget(seconds), "--corpus", str(tmp / "corpus"),
            "--findings", str(tmp / "findings"), "--regressions", str(tmp / "regressions"), *extra]


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """`python -m copyfuzz ARGS` in a child process, as a user would run it."""
    full_env = {**os.environ, "PYTHONPATH": str(TOOL), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "copyfuzz", *args],
        capture_output=True, text=True, env=full_env, cwd=cwd or ROOT, timeout=timeout,
    )


@pytest.fixture(scope="module")
def fake_plan(tmp_path_factory: pytest.TempPathFactory) -> "plan.SweepPlan":
    """The fake executor's plan (ids 0..99), from tests/c/fake_cfref.c (tests/fake_executor.py)."""
    from copyfuzz import plan

    lib = tmp_path_factory.mktemp("cfref") / "libcfref.so"
    subprocess.run(["cc", "-std=c11", "-shared", "-fPIC", "-o", str(lib),
                    str(Path(__file__).parent / "c" / "fake_cfref.c")], check=True)
    return plan.SweepPlan(plan.CfRef(lib), "copy", "linux", 64, max_len=1)


# ---- the session leaves no process behind (tests/leftovers.py, tests/test_leftovers.py) ----
import uuid  # noqa: E402

import leftovers  # noqa: E402

SESSION = uuid.uuid4().hex  # in the environment of every process a test starts
os.environ[leftovers.MARKER] = SESSION


def pytest_sessionfinish(session: object, exitstatus: int) -> None:
    leftovers.finish_session(session, SESSION, ROOT)

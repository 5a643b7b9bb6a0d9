"""Puts tool/ on sys.path so tests import the copyfuzz package as the launcher runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tool"
sys.path.insert(0, str(TOOL))


def budget(seconds: float, least: int = 1) -> str:
    """A test campaign's --time, scaled by the suite's one budget (COPYFUZZ_TEST_BUDGET)."""
    from copyfuzz import envs

    return str(envs.test_budget(seconds, least))


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """`python -m copyfuzz ARGS` in a child process, as a user would run it."""
    full_env = {**os.environ, "PYTHONPATH": str(TOOL), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "copyfuzz", *args],
        capture_output=True, text=True, env=full_env, cwd=cwd or ROOT, timeout=timeout,
    )


# ---- the session leaves no process behind (tests/leftovers.py, tests/test_leftovers.py) ----
import uuid  # noqa: E402

import leftovers  # noqa: E402

SESSION = uuid.uuid4().hex  # in the environment of every process a test starts
os.environ[leftovers.MARKER] = SESSION


def pytest_sessionfinish(session: object, exitstatus: int) -> None:
    leftovers.finish_session(session, SESSION, ROOT)

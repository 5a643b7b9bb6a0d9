"""build.check_tools: a missing tool says where its name came from. One the user named
(QEMU, CROSS_COMPILE_ARM64, ...) is theirs to fix; only the defaults are packages to install."""

from __future__ import annotations

import pytest
from conftest import ROOT
from copyfuzz import build
from copyfuzz.errors import CopyfuzzError


@pytest.mark.parametrize("variable, value, tool", [("QEMU", "/nonexistent/qemu -cpu rv64", "/nonexistent/qemu"),
                                                   ("CROSS_COMPILE_ARM64", "nope-", "nope-gcc")])
def test_a_tool_the_environment_named_is_blamed_on_it(monkeypatch: pytest.MonkeyPatch, variable: str, value: str,
                                                      tool: str) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(CopyfuzzError) as e:
        build.check_tools([tool])
    assert str(e.value) == (f"'{tool}' not found (from {variable}={value!r}): set {variable} to one that exists, "
                            "or unset it for the default")


def test_a_default_tool_missing_is_a_package_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QEMU", " ")  # blank: no name of the user's
    with pytest.raises(CopyfuzzError, match="not found: run 'make deps' to install it"):
        build.check_tools(["qemu-nonexistent-arch"])


def test_the_callers_make_state_does_not_reach_the_tools_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    """MAKEFLAGS=n (or q, t) would build nothing, and a stale executor would run as if it
    were the source."""
    for name in build.MAKE_STATE:
        monkeypatch.setenv(name, "n")
    monkeypatch.setenv("KEPT_BY_THE_BUILD", "kept")
    shown = build._run(ROOT, ["sh", "-c", "env"], "env")
    assert "KEPT_BY_THE_BUILD=kept" in shown
    assert not [line for line in shown.splitlines() if line.partition("=")[0] in build.MAKE_STATE]

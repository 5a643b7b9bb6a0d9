"""build.check_tools: a missing tool says where its name came from. One the user named
(QEMU, CROSS_COMPILE_ARM64, ...) is theirs to fix; only the defaults are packages to install."""

from __future__ import annotations

import pytest
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

"""The registry of environment variables (fuzz/envs.def) and its Python reader, envs.py.

Every COPYFUZZ_ variable the sources and docs name is in the registry, each one there is
read somewhere, C and Python see the same entries, the readers that spell out a default
agree with it, and fuzz/README.md's table is the registry's.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, TOOL, run_cli
from copyfuzz import envs
from copyfuzz.errors import CopyfuzzError

NAME = re.compile(r"\bCOPYFUZZ_[A-Z0-9_]*[A-Z0-9]\b")
SCANNED = ("tool/", "bench/", "tests/", "ci/", "docs/", "fuzz/", "harness/", "scripts/", ".clusterfuzzlite/",
           "README.md", "Makefile")


def checkout_files() -> list[Path]:
    """The text files of this checkout (tracked, or new and not ignored) under SCANNED."""
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    files = []
    for rel in out:
        path = ROOT / rel
        if rel.startswith(SCANNED) and path.is_file() and rel != "fuzz/envs.def":
            try:
                path.read_text()
            except UnicodeDecodeError:
                continue
            files.append(path)
    assert files
    return files


def test_every_variable_named_anywhere_is_registered() -> None:
    known = {v.name for v in envs.registry()}
    unknown = sorted({f"{name} ({path.relative_to(ROOT)})" for path in checkout_files()
                      for name in NAME.findall(path.read_text()) if name not in known})
    assert not unknown, f"not in fuzz/envs.def: {unknown}"


def test_every_registered_variable_is_read() -> None:
    driver_c = "".join(p.read_text() for p in (ROOT / "fuzz").glob("*.c"))
    unused = [v.name for v in envs.registry()
              if (v.reader == envs.DRIVER and f"CF_ENV_{v.name.removeprefix(envs.PREFIX)}" not in driver_c)
              or (v.reader != envs.DRIVER and v.name not in (ROOT / v.reader).read_text())]
    assert not unused, f"registered but read by nobody: {unused}"


def test_the_driver_reads_its_variables_only_through_the_registry() -> None:
    for path in (ROOT / "fuzz").glob("*.[ch]"):
        assert 'getenv("COPYFUZZ_' not in path.read_text(), path


def test_readers_that_spell_out_a_default_agree_with_the_registry() -> None:
    patterns = (re.compile(r"\$\{(COPYFUZZ_\w+):-([^}]*)\}"),  # shell: ${NAME:-default}
                re.compile(r"environ\.get\(\s*\"(COPYFUZZ_\w+)\",\s*\"([^\"]*)\"\)"))  # os.environ.get(NAME, "d")
    seen = []
    for path in checkout_files():
        for pattern in patterns:
            for name, default in pattern.findall(path.read_text()):
                if "$" in default:  # computed (the registry's help says how)
                    continue
                seen.append(name)
                want = envs.lookup(name).default
                assert default == (want or ""), f"{path.relative_to(ROOT)}: {name} defaults to {default!r}, " \
                                                f"fuzz/envs.def says {want!r}"
    assert "COPYFUZZ_SMOKE" in seen  # .clusterfuzzlite/build.sh: the check reads what it should


def test_c_and_python_read_the_same_entries(tmp_path: Path) -> None:
    cc = shutil.which("cc")
    assert cc, "a native C compiler ('cc') is needed"
    src = tmp_path / "dump.c"
    src.write_text(r'''
#include <stdio.h>
#define CF_UNSET NULL
static void show(const char *name, const char *dflt, const char *help, const char *reader)
{
	printf("%s\x1f%s\x1f%s\x1f%s\x1e", name, dflt ? dflt : "\x18", help, reader);
}
int main(void)
{
#define CF_ENV(name, dflt, help) show("COPYFUZZ_" #name, dflt, help, "driver");
#define CF_ENV_OTHER(name, dflt, help, reader) show("COPYFUZZ_" #name, dflt, help, reader);
#include "envs.def"
	return 0;
}
''')
    exe = tmp_path / "dump"
    subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", str(ROOT / "fuzz"), str(src), "-o", str(exe)],
                   check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    c_side = [tuple(None if f == "\x18" else f for f in rec.split("\x1f")) for rec in out.split("\x1e")[:-1]]
    assert c_side == [(v.name, v.default, v.help, v.reader) for v in envs.registry()]
    assert len(envs.driver_vars()) >= 11


def test_the_readme_table_is_the_registry() -> None:
    assert envs.markdown_table() in (ROOT / "fuzz" / "README.md").read_text()


# ---- the reader ----


def test_driver_env_sets_unsets_and_inherits() -> None:
    base = {"PATH": "/bin", "COPYFUZZ_COVERAGE": "/stale", "COPYFUZZ_PIN": "0"}
    env = envs.driver_env(base, executor=Path("/x/y.elf"), max_len=300, coverage=None, kind="clear")
    assert env == {"PATH": "/bin", "COPYFUZZ_PIN": "0", "COPYFUZZ_EXECUTOR": "/x/y.elf",
                   "COPYFUZZ_MAX_LEN": "300", "COPYFUZZ_KIND": "clear"}
    assert base["COPYFUZZ_COVERAGE"] == "/stale"  # the base is not changed
    assert envs.driver_env(base) == base


def test_driver_env_takes_only_the_drivers_variables() -> None:
    with pytest.raises(TypeError, match="timeout"):
        envs.driver_env({}, timeout=5)
    with pytest.raises(TypeError, match="root"):  # read by the tool, not the driver
        envs.driver_env({}, root="/")


def test_value_falls_back_to_the_default() -> None:
    assert envs.value("COPYFUZZ_TIMEOUT_MS", {}) == "1000"
    assert envs.value("COPYFUZZ_TIMEOUT_MS", {"COPYFUZZ_TIMEOUT_MS": "7"}) == "7"
    assert envs.value("COPYFUZZ_EXECUTOR", {}) is None
    with pytest.raises(CopyfuzzError, match="not a copyfuzz environment variable"):
        envs.value("COPYFUZZ_" + "NO_SUCH", {})


@pytest.mark.parametrize("text, complaint", [
    ('CF_ENV(A, "1", "a")\nCF_ENV(A, "2", "b")', "listed twice: " + envs.PREFIX + "A"),
    ('CF_ENV(A, 1, "a")', "a value is a string literal or CF_UNSET"),
    ('CF_ENV(A, OTHER, "a")', "a value is a string literal or CF_UNSET"),
    ('CF_ENV(A, "1")', "takes 3 arguments"),
    ('CF_ENV_OTHER(A, "1", "a")', "takes 4 arguments"),
    ('CF_ENV(A, "\\x41", "a")', "escape"),
    ('CF_ENVS(A, "1", "a")', "expected CF_ENV"),
])
def test_parse_refuses_what_it_cannot_read(text: str, complaint: str) -> None:
    with pytest.raises(CopyfuzzError, match=re.escape(complaint)):
        envs.parse(text)


def test_parse_joins_literals_and_skips_comments() -> None:
    (var,) = envs.parse('/* CF_ENV(X, "no", "no") */\nCF_ENV(A, CF_UNSET, "one \\"two\\" "\n  "three")')
    assert var == envs.EnvVar(envs.PREFIX + "A", None, 'one "two" three', "driver") and var.key == "a"


def run_envs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "copyfuzz.envs", *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(TOOL), "COPYFUZZ_KIND": "memcpy"}, timeout=60)


def test_the_command_line_runs_a_command_in_a_driver_environment() -> None:
    proc = run_envs("COPYFUZZ_PROFILE=exact", "COPYFUZZ_PLUGIN=", "--", "env")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "COPYFUZZ_PROFILE=exact" in lines and "COPYFUZZ_PLUGIN=" in lines
    assert "COPYFUZZ_KIND=memcpy" in lines  # inherited


@pytest.mark.parametrize("args, complaint", [
    (("COPYFUZZ_" + "TYPO=1", "--", "true"), "not a copyfuzz environment variable"),
    (("COPYFUZZ_SMOKE=0", "--", "true"), "not one the fuzz driver reads"),
    (("COPYFUZZ_KIND", "--", "true"), "expected NAME=VALUE"),
    (("COPYFUZZ_KIND=copy",), "say what to run"),
    (("COPYFUZZ_KIND=copy", "--", "/nonexistent/cmd"), "cannot run /nonexistent/cmd"),
])
def test_the_command_line_refuses_bad_input_in_one_line(args: tuple[str, ...], complaint: str) -> None:
    proc = run_envs(*args)
    assert proc.returncode == 2 and complaint in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr


def test_the_command_line_prints_the_table() -> None:
    proc = run_envs("--table")
    assert proc.returncode == 0 and proc.stdout == envs.markdown_table()


# Unregistered names on purpose: spelt so that the scan above does not take them for uses.
PROFLE, MAXLEN, ZZZ, TIMEOUT = (envs.PREFIX + n for n in ("PROFLE", "MAXLEN", "ZZZZZZ", "TIMEOUT_M"))


def test_unknown_variables_are_named_with_the_nearest_registered_one() -> None:
    """At most two edits away, case aside: the fuzz driver's rule (driver_config.c)."""
    lower, pim = envs.PREFIX + "kind", envs.PREFIX + "PIM"
    environ = {PROFLE: "exact", MAXLEN: "3", ZZZ: "1", lower: "copy", pim: "0", "COPYFUZZ_KIND": "copy",
               "PATH": "/bin"}
    assert envs.unknown(environ) == [(MAXLEN, "COPYFUZZ_MAX_LEN"), (pim, "COPYFUZZ_PIN"),
                                     (PROFLE, "COPYFUZZ_PROFILE"), (ZZZ, None), (lower, "COPYFUZZ_KIND")]
    assert envs.shown_name(envs.PREFIX + "A\x1b[2J\nB" + "C" * 300) == envs.PREFIX + "A?[2J?B" + "C" * 184


def test_the_tool_warns_of_an_unknown_variable_and_goes_on() -> None:
    proc = run_cli("list", env={TIMEOUT: "5"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == (f"copyfuzz: warning: {TIMEOUT} is not a copyfuzz variable: ignored "
                           "(did you mean COPYFUZZ_TIMEOUT_MS?)\n"), proc.stderr

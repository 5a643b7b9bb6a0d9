"""Code written elsewhere builds as its project builds it (issue 12, points 2, 3, 4, 11, 14).

Our own fixtures (tests/fixtures/outside/README.md), each with the verdict it must get:
the width's CONFIG_64BIT/CONFIG_32BIT, code outside .text, `la` without a GOT, files that
need -I, --with or --defsym, and the messages when they are missing. Each fix here has a
fixture switch or a command line that shows what went wrong before it.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from conftest import fuzz_args, run_cli

pytestmark = pytest.mark.e2e

OUT = "tests/fixtures/outside"


def _check(tmp_path: Path, *args: str, max_len: str = "24") -> tuple[int, dict[str, Any] | None, str]:  # JSON
    proc = run_cli("check", *args, "--max-len", max_len, "--jobs", "2", "--json",
                   "--findings", str(tmp_path / "findings"))
    data = json.loads(proc.stdout) if proc.stdout.strip() else None
    return proc.returncode, data, proc.stderr


def _routine(data: dict[str, Any] | None) -> dict[str, Any]:
    assert data is not None
    routines = data["routines"]
    assert isinstance(routines, list) and len(routines) == 1
    r = routines[0]
    assert isinstance(r, dict) and r["cases"] > 0
    return r


# ---- point 2: --xlen defines what a kernel of that width defines ----

@pytest.mark.parametrize("xlen", ["64", "32"])
def test_width_config_is_defined_and_the_fixture_is_clean(tmp_path: Path, xlen: str) -> None:
    rc, data, err = _check(tmp_path, f"{OUT}/width_words.S", "--symbol", "cf_width_memcpy", "--xlen", xlen)
    assert rc == 0, err
    assert _routine(data)["findings"] == {}


def test_without_the_width_config_the_fixture_copies_wrong(tmp_path: Path) -> None:
    """What a build without CONFIG_64BIT did (the fixture's switch takes it away): the
    test above can fail."""
    rc, data, err = _check(tmp_path, f"{OUT}/width_words.S", "--symbol", "cf_width_memcpy",
                           "-D", "CF_FIXTURE_NO_WIDTH")
    assert rc == 1, err
    assert "store-out-of-bounds" in _routine(data)["findings"]


def test_the_other_widths_config_is_refused(tmp_path: Path) -> None:
    rc, data, err = _check(tmp_path, f"{OUT}/width_words.S", "--symbol", "cf_width_memcpy", "-D", "CONFIG_32BIT")
    assert rc == 2 and data is not None
    assert "never defines CONFIG_32BIT" in str(data["error"]) and len(err.strip().splitlines()) == 1


# ---- point 3: code outside .text ----

def test_a_routine_in_text_memcpy_builds_and_runs(tmp_path: Path) -> None:
    rc, data, err = _check(tmp_path, f"{OUT}/section_memcpy.S", "--symbol", "memcpy")
    assert rc == 0, err
    assert _routine(data)["findings"] == {}


def test_code_and_fixups_in_other_sections_are_the_routines(tmp_path: Path) -> None:
    """Entry in .noinstr.text, body in .text.cf_body, fixup in .text.unlikely: the table's
    entries point across them, every fault resumes at the fixup (a clean sweep with
    faults), and the audit and the coverage see all of the code."""
    src = f"{OUT}/noinstr_copy.S"
    rc, data, err = _check(tmp_path, src, "--symbol", "cf_noinstr_copy_to_user:copy")
    assert rc == 0, err
    r = _routine(data)
    assert r["findings"] == {}
    audit = r["audit"]
    assert isinstance(audit, dict) and audit["summary"]["covered"] == 2 and audit["summary"]["uncovered"] == 0
    cov = run_cli("cov", src, "--symbol", "cf_noinstr_copy_to_user:copy", "--max-len", "8", "--json")
    assert cov.returncode == 0, cov.stderr
    rep = json.loads(cov.stdout)
    where = {row["where"].split("+")[0] for row in rep["listing"]}
    assert {"cf_noinstr_copy_to_user", "cf_noinstr_body", "cf_noinstr_fixup"} <= where
    c = rep["coverage"]
    assert c["executed"] == c["instructions"] and c["fault_covered"] == c["fault_edges"] == 2


# ---- point 4: no PIC, medany ----

def test_la_is_pc_relative_not_a_got_load(tmp_path: Path) -> None:
    """The compiler's default here is PIE, which made `la` an auipc+ld from the GOT."""
    proc = run_cli("audit", f"{OUT}/la_threshold.S", "--symbol", "cf_la_memcpy:memcpy", "--json")
    assert proc.returncode in (0, 1), proc.stderr
    listing = json.loads(proc.stdout)["routines"][0]["listing"]
    insns = [row["insn"] for row in listing]
    at = next(i for i, text in enumerate(insns) if text.startswith("auipc t0"))
    assert insns[at + 1].startswith("addi t0, t0, "), insns[at:at + 3]
    assert insns[at + 2].startswith("ld t0, 0(t0)"), insns[at:at + 3]  # the file's own load, once
    rc, data, err = _check(tmp_path, f"{OUT}/la_threshold.S", "--symbol", "cf_la_memcpy:memcpy")
    assert rc == 0, err
    assert _routine(data)["findings"] == {}


# ---- point 11: -I, --with, --defsym, and what is said when they are missing ----

def test_a_file_calling_another_files_function_needs_with(tmp_path: Path) -> None:
    src, body = f"{OUT}/memmove_tail.S", f"{OUT}/memcpy_body.S"
    rc, data, err = _check(tmp_path, src, "--symbol", "cf_memmove")
    assert rc == 2 and data is not None
    assert "undefined symbols: __cf_memcpy" in str(data["error"]) and "--with" in str(data["error"])
    assert len(err.strip().splitlines()) == 1
    rc, data, err = _check(tmp_path, src, "--symbol", "cf_memmove", "--with", body)
    assert rc == 0, err
    assert _routine(data)["findings"] == {}


def test_a_header_of_the_project_needs_I(tmp_path: Path) -> None:
    src = f"{OUT}/needs_include.S"
    rc, data, _ = _check(tmp_path, src, "--symbol", "cf_chunk_memcpy")
    assert rc == 2 and data is not None
    assert "-I DIR" in str(data["error"]) and "cf_outside/chunk.h" in str(data["details"])
    rc, data, err = _check(tmp_path, src, "--symbol", "cf_chunk_memcpy", "-I", f"{OUT}/inc")
    assert rc == 0, err
    assert _routine(data)["findings"] == {}


def test_a_symbol_the_link_defines_needs_defsym(tmp_path: Path) -> None:
    src = f"{OUT}/needs_defsym.S"
    rc, data, _ = _check(tmp_path, src, "--symbol", "cf_defsym_memcpy")
    assert rc == 2 and data is not None
    assert "undefined symbols: cf_word_min" in str(data["error"]) and "--defsym" in str(data["error"])
    rc, data, err = _check(tmp_path, src, "--symbol", "cf_defsym_memcpy", "--defsym", "cf_word_min=16")
    assert rc == 0, err
    assert _routine(data)["findings"] == {}
    rc, data, _ = _check(tmp_path, src, "--symbol", "cf_defsym_memcpy", "--defsym", "cf_word_min")
    assert rc == 2 and data is not None and "expected NAME=VALUE" in str(data["error"])


def test_a_symbol_behind_an_if_names_its_switch_and_what_is_defined(tmp_path: Path) -> None:
    rc, data, _ = _check(tmp_path, f"{OUT}/section_memcpy.S", "--symbol", "cf_memcpy_extra")
    assert rc == 2 and data is not None
    error = str(data["error"])
    assert "the functions it defines: memcpy" in error and "-D CONFIG_CF_EXTRA" in error
    rc, data, err = _check(tmp_path, f"{OUT}/section_memcpy.S", "--symbol", "cf_memcpy_extra", "-D", "CONFIG_CF_EXTRA")
    assert rc == 0, err


def test_a_symbol_only_used_in_the_file_is_said_to_be_defined_elsewhere(tmp_path: Path) -> None:
    """memmove_tail.S tail-calls __cf_memcpy, which memcpy_body.S defines: asked for it, the
    hint says where to look, not that a switch hides it."""
    rc, data, _ = _check(tmp_path, f"{OUT}/memmove_tail.S", "--symbol", "__cf_memcpy:memcpy")
    assert rc == 2 and data is not None
    error = str(data["error"])
    assert "'__cf_memcpy' is only used in memmove_tail.S, not defined" in error and "-D" not in error, error


def test_a_data_symbol_is_called_data(tmp_path: Path) -> None:
    rc, data, _ = _check(tmp_path, f"{OUT}/la_threshold.S", "--symbol", "cf_threshold:memcpy")
    assert rc == 2 and data is not None and "'cf_threshold' is data" in str(data["error"])


@pytest.mark.parametrize("symbol, says", [
    ("cf_kinds_table", "'cf_kinds_table' is data (type OBJECT, in .text)"),
    ("cf_kinds_ifunc", "'cf_kinds_ifunc' is an indirect function (IFUNC, in .text)"),
    ("cf_kinds_weak_data", "'cf_kinds_weak_data' is data (type NOTYPE, in .data)"),
    ("cf_kinds_none", "'cf_kinds_none' is not defined there; the functions it defines: __cf_memcpy"),
])
def test_only_code_is_called(tmp_path: Path, symbol: str, says: str) -> None:
    """An object in .text, an IFUNC resolver and weak untyped data are refused, each said
    for what it is (nm called the last one code); the function beside them is called."""
    rc, data, _ = _check(tmp_path, f"{OUT}/symbol_kinds.S", "--symbol", f"{symbol}:memcpy")
    assert rc == 2 and data is not None and says in str(data["error"]), data


def test_the_function_beside_them_is_clean(tmp_path: Path) -> None:
    rc, data, err = _check(tmp_path, f"{OUT}/symbol_kinds.S", "--symbol", "__cf_memcpy:memcpy")
    assert rc == 0, err
    assert _routine(data)["findings"] == {}


def test_saved_options_rebuild_the_file_for_repro_and_replay(tmp_path: Path) -> None:
    """A regression of a file that needs --with, -I and --defsym: its `# options:` line is
    all repro and replay need (without them the file does not link)."""
    src = f"{OUT}/memmove_tail.S"
    spec = tmp_path / "regs" / "memmove.spec"
    spec.parent.mkdir()
    spec.write_text(f"# class: wrong-data\n# options: --with {OUT}/memcpy_body.S -I {OUT}/inc "
                    f"--defsym cf_unused=1 --kind memcpy\n{src}:cf_memmove:n=5,src_off=1\n")
    proc = run_cli("repro", str(spec), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["errors"] == []
    proc = run_cli("replay", str(spec.parent), "--json")
    assert proc.returncode == 0, proc.stderr
    [entry] = json.loads(proc.stdout)
    assert entry["options"] == ["-I", f"{OUT}/inc", "--with", f"{OUT}/memcpy_body.S",
                                "--defsym", "cf_unused=1", "--kind", "memcpy"]
    bare = tmp_path / "bare.spec"
    bare.write_text(f"# class: wrong-data\n# options: --kind memcpy\n{src}:cf_memmove:n=5\n")
    proc = run_cli("repro", str(bare), "--json")
    assert proc.returncode == 2 and "__cf_memcpy" in json.loads(proc.stdout)["error"]


# ---- point 14: one CLI shape ----

def test_cov_takes_the_file_positionally_or_with_file(tmp_path: Path) -> None:
    src = f"{OUT}/section_memcpy.S"
    for args in ([src], ["--file", src]):
        proc = run_cli("cov", *args, "--symbol", "memcpy", "--max-len", "4", "--json")
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["coverage"]["executed"] > 0
    proc = run_cli("cov", src, "--file", src, "--symbol", "memcpy", "--json")
    assert proc.returncode == 2 and "not both" in json.loads(proc.stdout)["error"]


# ---- point 13: BSD copyin/copyout (an onfault handler, no exception table) ----

BSD_LINE = "the BSD onfault convention"


@pytest.mark.parametrize("command, symbol", [("check", "copyin"), ("check", "copyout"), ("audit", "copyin"),
                                             ("check", "copyout:memcpy")])
def test_a_file_using_an_onfault_handler_is_refused_with_the_convention_named(
        tmp_path: Path, command: str, symbol: str) -> None:
    extra = ["--max-len", "8", "--findings", str(tmp_path)] if command == "check" else []
    proc = run_cli(command, f"{OUT}/bsd_onfault.S", "--symbol", symbol, "--json", *extra)
    assert proc.returncode == 2, proc.stdout
    error = str(json.loads(proc.stdout)["error"])
    assert "uses set_onfault" in error and BSD_LINE in error and "not supported" in error
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("symbol", ["copyout", "copyout:memcpy"])
def test_a_bsd_named_routine_without_a_table_is_the_bsd_convention_not_a_memcpy(
        tmp_path: Path, symbol: str) -> None:
    """No onfault name in the file: the symbol's name says what it is. Before, the hint
    offered `--symbol copyout:memcpy` (its arguments are not memcpy's, nor its return)."""
    rc, data, err = _check(tmp_path, f"{OUT}/bsd_handler.S", "--symbol", symbol, max_len="8")
    assert rc == 2 and data is not None, err
    error = str(data["error"])
    assert "no exception table" in error and BSD_LINE in error, error
    assert ":memcpy" not in error and ":memmove" not in error
    assert len(err.strip().splitlines()) == 1


def test_fuzz_of_a_file_saves_a_regression_whose_options_rebuild_it(tmp_path: Path) -> None:
    """`fuzz FILE.S --symbol S -D ...`, the file positional: the campaign ends at its finding
    (--until), the regression's `# options:` line carries the -D, and replay rebuilds the
    file with it and reproduces (without the line the file is clean: the options matter)."""
    src = f"{OUT}/traps.S"
    proc = run_cli(*fuzz_args(tmp_path, src, "libfuzzer", 300, "--symbol", "__asm_copy_to_user",
                              "-D", "CONFIG_FIXTURE_EBREAK_IN_FIXUP", "--until", "crash", "--seed", "1"),
                   timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    [spec] = sorted((tmp_path / "regressions").glob("*--crash.spec"))
    text = spec.read_text()
    assert "# options: -DCONFIG_FIXTURE_EBREAK_IN_FIXUP --kind copy" in text and "# found-by: libfuzzer" in text
    [line] = [x for x in text.splitlines() if x and not x.startswith("#")]
    assert line.startswith(f"{src}:__asm_copy_to_user:n="), line
    replay = run_cli("replay", str(tmp_path / "regressions"), "--json")
    assert replay.returncode == 1, replay.stderr
    [entry] = json.loads(replay.stdout)
    assert entry["options"] == ["-DCONFIG_FIXTURE_EBREAK_IN_FIXUP", "--kind", "copy"], entry
    bare = tmp_path / "bare" / "bare.spec"
    bare.parent.mkdir()
    bare.write_text(f"# class: crash\n# options: --kind copy\n{line}\n")
    assert run_cli("replay", str(bare.parent)).returncode == 0


def test_c_reaching_the_assembler_names_the_included_c_file_and_its_switch(tmp_path: Path) -> None:
    rc, data, err = _check(tmp_path, f"{OUT}/c_guarded.S", "--symbol", "cf_guarded_memcpy")
    assert rc == 2 and data is not None, err
    assert ("C code reached the assembler: c_guarded.S includes c_guarded.c, whose assembly is chosen by a "
            "switch (its first switch: try -D CF_FIXTURE_SMALL)") in str(data["error"])
    rc, data, err = _check(tmp_path, f"{OUT}/c_guarded.S", "--symbol", "cf_guarded_memcpy", "-D", "CF_FIXTURE_SMALL")
    assert rc == 0, err
    assert _routine(data)["findings"] == {}


# ---- issue 25, points 8 and 9: function-like -D; the file that failed is named ----

def test_a_function_like_define_builds_and_the_printed_repro_pastes(tmp_path: Path) -> None:
    """U-Boot's `#if CONFIG_IS_ENABLED(X)` needs -D 'CONFIG_IS_ENABLED(x)=0'; the repro line
    check prints quotes it, and pasted as it is (shlex, as a shell would) it reproduces."""
    src = f"{OUT}/func_define.S"
    rc, data, err = _check(tmp_path, src, "--symbol", "cf_func_memcpy", "-D", "CONFIG_IS_ENABLED(x)=0")
    assert rc == 0, err
    proc = run_cli("check", src, "--symbol", "cf_func_memcpy", "-D", "CONFIG_IS_ENABLED(x)=0", "-D",
                   "CF_FIXTURE_ONE_MORE", "--max-len", "4", "--findings", str(tmp_path / "f2"))
    assert proc.returncode == 1, proc.stderr
    [line] = [x for x in proc.stdout.splitlines() if x.strip().startswith("repro: ./copyfuzz repro SPEC ")]
    assert "'-DCONFIG_IS_ENABLED(x)=0'" in line
    words = shlex.split(line.strip().removeprefix("repro: ./copyfuzz repro SPEC "))
    spec = next(x for x in proc.stdout.split() if x.startswith(f"{src}:cf_func_memcpy:n="))
    repro = run_cli("repro", spec, *words)
    assert repro.returncode == 1, repro.stderr
    rc, data, _ = _check(tmp_path, src, "--symbol", "cf_func_memcpy", "-D", "CONFIG_IS_ENABLED(x=0")
    assert rc == 2 and data is not None and "expected NAME, NAME=VALUE or NAME(ARGS)=VALUE" in str(data["error"])


def test_a_with_file_that_fails_is_named_and_modelled_glue_is_said(tmp_path: Path) -> None:
    helper = tmp_path / "riscv_v_helpers.c"
    helper.write_text("int cf_helper(void) { return cf_undeclared; }\n")
    rc, data, _ = _check(tmp_path, f"{OUT}/section_memcpy.S", "--symbol", "memcpy", "--with", str(helper))
    assert data is not None
    error = str(data["error"])
    assert rc == 2 and error.startswith(f"--with {helper} does not build for riscv"), error
    assert "section_memcpy.S is not the file that failed" in error
    assert "copyfuzz models riscv_v_helpers.c itself (linked with -D CONFIG_RISCV_ISA_V)" in error

"""A file's executor is linked again exactly when something it was built from changed
(build.link_external's stamp): the same check run twice links once; an edited header
the file includes, or an executor changed on disk, is linked again and judged anew.
Needs the riscv64 cross toolchain and QEMU."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from conftest import ROOT, run_cli
from copyfuzz import build, paths

pytestmark = pytest.mark.e2e

FIXTURE = ROOT / "tests/fixtures/outside"


def executor_of(src: Path) -> Path:
    """The executor whose stamp names src among the files it was built from."""
    stamps = paths.check_dir(ROOT, 64, "riscv").glob("needs_include-*.elf.stamp")
    found = [Path(str(s)[: -len(".stamp")]) for s in stamps
             if str(src) in json.loads(s.read_text())["deps"]]
    assert len(found) == 1, found
    return found[0]


def test_a_file_is_linked_again_only_when_what_it_read_changed(tmp_path: Path) -> None:
    src = tmp_path / "needs_include.S"
    shutil.copy(FIXTURE / "needs_include.S", src)
    shutil.copytree(FIXTURE / "inc", tmp_path / "inc")
    header = tmp_path / "inc/cf_outside/chunk.h"
    for f in (src, header):  # a file changed in the last seconds may change during the link: no stamp
        os.utime(f, (time.time() - 60, time.time() - 60))

    def check() -> int:
        proc = run_cli("check", str(src), "--symbol", "cf_chunk_memcpy", "-I", str(tmp_path / "inc"),
                       "--max-len", "12", "--json", "--findings", str(tmp_path / "findings"))
        assert proc.returncode in (0, 1), proc.stderr
        return proc.returncode

    assert check() == 0
    elf = executor_of(src)
    linked = elf.stat()
    assert check() == 0
    again = elf.stat()
    assert (again.st_ino, again.st_mtime_ns) == (linked.st_ino, linked.st_mtime_ns), "linked again for nothing"

    # The header says 5 bytes a round where the code copies 4: a byte of each round is lost.
    header.write_text(header.read_text().replace("#define CF_CHUNK 4", "#define CF_CHUNK 5"))
    assert check() == 1, "the edited header was not read: the old executor was judged"
    assert elf.stat().st_ino != linked.st_ino

    header.write_text(header.read_text().replace("#define CF_CHUNK 5", "#define CF_CHUNK 4"))
    assert check() == 0
    # An executor changed since its stamp (here cut short) is no match: linked again.
    size = elf.stat().st_size
    elf.write_bytes(elf.read_bytes()[:100])
    assert check() == 0 and elf.stat().st_size == size


@pytest.mark.parametrize(("text", "files"), [
    ("o.o: a.S \\\n /x/b.h c\\ d.h\n", ["a.S", "/x/b.h", "c d.h"]),
    ("o.o: $$dollar.h\n\n", ["$dollar.h"]),
    ("o.o: a.S\nt.o: t.c t.h\n", ["a.S", "t.c", "t.h"]),
])
def test_make_prerequisites_reads_gccs_rules(text: str, files: list[str]) -> None:
    assert build.make_prerequisites(text) == files


def test_a_rule_it_cannot_read_is_no_stamp() -> None:
    assert build.make_prerequisites("not a rule\n") is None

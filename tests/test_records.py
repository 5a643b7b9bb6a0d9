"""Case and result records: the mirror of harness/records.h and pack/unpack round trips.

The layout tests compile tests/c/layout_dump.c against records.h with the native C
compiler and compare every size, offset, class and enumerator with records.py.
"""

from __future__ import annotations

import ctypes
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT
from copyfuzz import executor, records, targets
from hypothesis import given
from hypothesis import strategies as st

SOURCE = ROOT / "tests" / "c" / "layout_dump.c"


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> list[list[str]]:
    cc = shutil.which("cc")
    assert cc, "a native C compiler ('cc') is needed to check the records.h mirror"
    exe = tmp_path_factory.mktemp("layout") / "layout_dump"
    subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", str(SOURCE), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return [line.split() for line in out.splitlines()]


def _facts(layout: list[list[str]], tag: str) -> list[list[str]]:
    return [line[1:] for line in layout if line[0] == tag]


def test_struct_sizes(layout: list[list[str]]) -> None:
    sizes = {name: int(size) for name, size in _facts(layout, "size")}
    assert sizes == {name: struct.calcsize("<" + "".join(code for _, code in fields))
                     for name, fields in records.LAYOUTS.items()}
    assert (sizes["case"], sizes["result"]) == (records.CASE_SIZE, records.RESULT_SIZE)


# The C type each struct code stands for (the X-macros name the C type).
C_TYPES = {"B": "uint8_t", "H": "uint16_t", "I": "uint32_t", "i": "int32_t", "Q": "uint64_t", "q": "int64_t"}


@pytest.mark.parametrize("struct_name", list(records.LAYOUTS))
def test_field_offsets_and_sizes(layout: list[list[str]], struct_name: str) -> None:
    """Every field of every X-macro layout, in order, with its offset, size and C type."""
    struct_layout = records.LAYOUTS[struct_name]
    c_fields = [(f, int(off), int(size), ctype) for s, f, off, size, ctype in _facts(layout, "field")
                if s == struct_name]
    offsets = records.field_offsets(struct_layout)
    assert [(name, *offsets[name], C_TYPES[code[-1]]) for name, code in struct_layout] == c_fields
    # The listed fields fill the struct: none is missing from the dump or the mirror.
    sizes = {name: int(size) for name, size in _facts(layout, "size")}
    assert sum(size for _, _, size, _ in c_fields) == sizes[struct_name]


def test_seal_matches_c(layout: list[list[str]]) -> None:
    ((key0, key1, seq, want),) = _facts(layout, "seal")
    r = records.Result(type=records.RESULT_DONE, id=12345, diff_off=-7, aux=2, src=0xFEDCBA9876543210)
    key = (int(key0), int(key1))
    assert records.seal(key, int(seq), r.pack()) == int(want)
    sealed = records.Result(**{**r.__dict__, "seal": int(want)}).pack()
    assert records.sealed(key, int(seq), sealed)
    assert not records.sealed(key, int(seq) + 1, sealed)
    assert not records.sealed((key[0], key[1] ^ 1), int(seq), sealed)


def test_classes_in_order(layout: list[list[str]]) -> None:
    c_classes = [(name, int(bit), c_name, int(value)) for name, bit, c_name, value in _facts(layout, "class")]
    py = [(c.name, c.bit, c.c_name, 1 << c.bit) for c in records.CLASSES]
    assert py == c_classes


def test_constants(layout: list[list[str]]) -> None:
    consts = {name: int(value) for name, value in _facts(layout, "const")}
    assert consts == {
        "CF_PAGE_SIZE": records.PAGE_SIZE,
        "CF_MAX_LEN": records.MAX_LEN,
        "CF_CANARY_LEN": records.CANARY_LEN,
        "CF_NO_FAULT": records.NO_FAULT,
        "CF_MAX_FAULT": records.MAX_FAULT,
        "CF_CONTROL_MAGIC": records.CONTROL_MAGIC,
        "CF_CONTROL_VERSION": records.CONTROL_VERSION,
        "CF_CONTROL_COUNTS": records.CONTROL_COUNTS,
        "CF_CASE_MAGIC": records.CASE_MAGIC,
        "CF_RESULT_MAGIC": records.RESULT_MAGIC,
        "CF_NUM_CLASSES": records.NUM_CLASSES,
        "CF_ERRORS_EXACT": records.ERROR_MASK["exact"],
        "CF_ERRORS_LINUX": records.ERROR_MASK["linux"],
        "CF_NUM_KINDS": len(records.KINDS),
        "CF_MEMMOVE_SLACK": records.MEMMOVE_SLACK,
        "CF_GRANULE_MTE": records.GRANULE_MTE,
    }


def test_kind_rules(layout: list[list[str]]) -> None:
    """cf_kind_has_src, cf_kind_returns_dst and cf_memmove_max_disp, as records.py has them."""
    c_kinds = [(int(i), name, *map(int, flags)) for i, name, *flags in _facts(layout, "kindinfo")]
    assert c_kinds == [(i, k, int(k in records.USER_COPIES), int(k in records.HAS_SRC), int(k in records.RETURNS_DST),
                        int(records.side_faults(k, "src")), int(records.side_faults(k, "dst")))
                       for i, k in enumerate(records.KINDS)]
    assert _facts(layout, "kindinfo-past") == [["0"] * 5]  # a value past the table has no facts
    assert records.KERNEL_SIDE == {"copy_from_user": "dst", "copy_to_user": "src"}
    c_disp = [(int(n), int(d)) for n, d in _facts(layout, "maxdisp")]
    assert len(c_disp) > 40 and c_disp[-1][1] == 0
    assert c_disp == [(n, records.memmove_max_disp(n)) for n, _ in c_disp]
    assert set(records.SIGNATURES) == set(records.KINDS)


def test_enumerators(layout: list[list[str]]) -> None:
    enums = {name: int(value) for name, value in _facts(layout, "enum")}

    def c_name(prefix: str, name: str) -> str:
        return prefix + name.upper().replace("-", "_")

    expected: dict[str, int] = {}
    expected.update({c_name("CF_KIND_", k): i for i, k in enumerate(records.KINDS)})
    expected.update({c_name("CF_PROFILE_", p): i for i, p in enumerate(records.PROFILES)})
    expected.update({c_name("CF_RESULT_", t): i for i, t in enumerate(records.RESULT_TYPES)})
    expected.update({c_name("CF_CASE_", e): i for i, (e, _) in enumerate(records.CASE_ERRORS)})
    expected.update({c_name("CF_SWEEP_", r): i for i, r in enumerate(records.SWEEP_STOPS)})
    expected.update({"CF_EXEC_TIMEOUT_MS_DEFAULT": records.EXEC_TIMEOUT_MS_DEFAULT,
                     "CF_EXEC_TIMEOUT_MS_MAX": records.EXEC_TIMEOUT_MS_MAX,
                     "CF_EXEC_MAX_HANGS_DEFAULT": records.EXEC_MAX_HANGS_DEFAULT})
    regs = {name: bit for bit, name in enumerate(targets.RISCV.regs)}
    expected.update({"CF_REG_S0": regs["s0"], "CF_REG_SP": regs["sp"], "CF_REG_GP": regs["gp"],
                     "CF_REG_TP": regs["tp"], "CF_REG_RA": regs["ra"]})
    assert enums == expected
    assert {i: r for i, r in enumerate(records.SWEEP_STOPS) if i} == executor.STOP_REASONS
    assert records.RESULT_TYPES.index("progress") == records.RESULT_PROGRESS
    assert [records.RESULT_CASE, records.RESULT_PROGRESS, records.RESULT_DONE,
            records.RESULT_ERROR, records.RESULT_COUNT] == [0, 1, 2, 3, 4]


def test_source_is_the_header_we_mirror() -> None:
    assert (ROOT / "harness" / "records.h").is_file()
    assert '#include "../../harness/records.h"' in SOURCE.read_text()


# ---- round trips ----

u16 = st.integers(0, 2**16 - 1)
u32 = st.integers(0, 2**32 - 1)
u64 = st.integers(0, 2**64 - 1)


@given(kind=u16, profile=st.integers(0, 255), id_=u64, n=u64, src_off=u32, dst_off=u32, src_fault=u64,
       dst_fault=u64, fill=u32, disp=st.integers(-(2**31), 2**31 - 1), r1=u64, granule=st.integers(0, 255))
def test_case_round_trip(kind: int, profile: int, id_: int, n: int, src_off: int, dst_off: int,
                         src_fault: int, dst_fault: int, fill: int, disp: int, r1: int, granule: int) -> None:
    case = records.Case(kind, profile, id_, n, src_off, dst_off, src_fault, dst_fault, fill, disp, r1,
                        granule=granule)
    data = case.pack()
    assert len(data) == 64
    assert records.Case.unpack(data) == case


_SCALARS = {"I": u32, "H": u16, "B": st.integers(0, 255), "Q": u64, "q": st.integers(-(2**63), 2**63 - 1)}
result_fields = {  # an array ("5Q", the fault trail) is a tuple of its length
    name: _SCALARS[code] if len(code) == 1 else st.tuples(*[_SCALARS[code[-1]]] * int(code[:-1]))
    for name, code in records.RESULT_LAYOUT
}


@given(st.fixed_dictionaries(result_fields))
def test_result_round_trip(values: dict[str, object]) -> None:
    result = records.Result(**values)  # type: ignore[arg-type]
    data = result.pack()
    assert len(data) == 256
    assert records.Result.unpack(data) == result


def test_the_fault_trail_reads_in_order() -> None:
    """A short trail is padded on the wire and comes back as the faults it holds."""
    assert records.FAULT_TRAIL == 5
    r = records.Result(faults=2, trail_pc=(0x10, 0x20), trail_addr=(0x1000, 0x2000), trail_fixup=(0x14, 0x24),
                       trail_len=2, returned_via=2)
    back = records.Result.unpack(r.pack())
    assert back.trail == [(0x10, 0x1000, 0x14), (0x20, 0x2000, 0x24)]
    assert back.trail_pc == (0x10, 0x20, 0, 0, 0) and back.returned_via == 2
    with pytest.raises(ValueError, match="trail_pc holds 6 values"):
        records.Result(trail_pc=(1,) * 6).pack()
    assert back.returned_through == 2 and records.Result(faults=1).returned_through is None
    looped = records.Result(faults=257, trail_len=5)  # the last slot follows the latest fault
    assert [looped.fault_number(i) for i in range(5)] == [1, 2, 3, 4, 257]
    assert [records.Result(faults=5).fault_number(i) for i in range(5)] == [1, 2, 3, 4, 5]


def test_known_bytes() -> None:
    """Little-endian, magic first: what a hex dump of the stream shows."""
    case = records.Case(kind=1, profile=1, id=0x0102, n=37, src_off=4064, dst_off=3,
                        src_fault=32, dst_fault=records.NO_FAULT)
    data = case.pack()
    assert data[:4] == b"CFC1"
    assert data[4:8] == b"\x01\x00\x01\x00"
    assert struct.unpack_from("<Q", data, 8)[0] == 0x0102
    assert struct.unpack_from("<II", data, 24) == (4064, 3)
    assert data[40:48] == b"\xff" * 8
    moved = records.Case(kind=4, profile=0, id=0, n=9, src_off=0, dst_off=0, fill=0xA5, disp=-3).pack()
    assert struct.unpack_from("<Ii", moved, 48) == (0xA5, -3)
    assert moved[52:56] == b"\xfd\xff\xff\xff"
    result = records.Result(id=7, diff_off=-1)
    raw = result.pack()
    assert raw[:4] == b"CFR1"
    assert struct.unpack_from("<q", raw, 48)[0] == -1


def test_classes_and_profiles() -> None:
    # exact: every class an error but aligned-overread (it cannot fault: a note everywhere)
    assert records.class_names(records.ERROR_MASK["exact"]) == [
        c for c in records.CLASS_NAMES if c != "aligned-overread"]
    assert "aligned-overread" not in records.class_names(records.ERROR_MASK["linux"])
    assert "imprecise" not in records.class_names(records.ERROR_MASK["linux"])
    assert records.class_mask(["wrong-data", "hang"]) == (1 << 3) | (1 << 9)
    assert records.class_of_bit(6) == "no-progress"
    assert records.reg_names((1 << 0) | (1 << 12) | (1 << 15), "riscv") == ["s0", "sp", "ra"]
    for code in range(len(records.CASE_ERRORS)):
        assert records.case_error_message(code)


def test_class_descriptions_fit_every_kind() -> None:
    """wrong-data is about the byte each kind must store, not only a copy's source byte."""
    about = records.CLASS_BY_NAME["wrong-data"].about
    assert "source" in about and "zero for clear" in about and "fill byte for memset" in about


def test_the_kind_names_are_one_list() -> None:
    """The shell scripts, which cannot include records.h, take CF_KINDS's names from
    harness/kinds.sh; it lists records.KINDS (read from the same rows), in enum order, and
    no script or help text spells the list again."""
    listed = subprocess.run([str(ROOT / "harness" / "kinds.sh")], capture_output=True, text=True, check=True)
    assert tuple(listed.stdout.split("\n")[:-1]) == records.KINDS
    refused = subprocess.run(["bash", str(ROOT / "harness" / "link-executor.sh"), "h.o", "f.S", "out.elf", "f",
                              "f", "memcopy"], capture_output=True, text=True, cwd=ROOT)
    assert refused.returncode == 2
    assert refused.stderr == f"f.S: kind 'memcopy' is not one of: {' '.join(records.KINDS)}\n"
    spelled = "|".join(records.KINDS[:3])
    for path in ("harness/link-executor.sh", ".clusterfuzzlite/build.sh", "fuzz/envs.def"):
        text = (ROOT / path).read_text()
        assert spelled not in text.replace(" | ", "|").replace(", ", "|"), path
    assert '"$REPO/harness/kinds.sh"' in (ROOT / ".clusterfuzzlite" / "build.sh").read_text()


def test_the_profile_names_are_one_list() -> None:
    """records.h's CF_PROFILE_NAMES (the driver refuses any other COPYFUZZ_PROFILE) are
    records.PROFILES, in enum order, as many as CF_NUM_PROFILES."""
    header = (ROOT / "harness" / "records.h").read_text()
    (line,) = re.findall(r"^#define CF_PROFILE_NAMES(.*)$", header, re.M)
    assert tuple(re.findall(r'"([^"]+)"', line)) == records.PROFILES
    (count,) = re.findall(r"^#define CF_NUM_PROFILES (\d+)$", header, re.M)
    assert int(count) == len(records.PROFILES)
    for i, name in enumerate(records.PROFILES):
        assert re.search(rf"CF_PROFILE_{name.upper()} = {i},", header), name


def test_layouts_are_read_from_the_c_x_macros(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """records.py and plugin.py spell no layout: cheader reads each from its X-macro (the C
    compiler's view is checked above and in test_plugin_e2e). An array bound is a #define;
    a type or a bound it cannot read, or a missing macro, is one error naming the file."""
    from copyfuzz import cheader
    from copyfuzz.errors import CopyfuzzError

    assert dict(records.CONTROL_LAYOUT)["counts"] == f"{records.CONTROL_COUNTS}Q"
    (tmp_path / "t.h").write_text(
        "#define N_SLOTS 3u\n#define CF_T_FIELDS(X) \\\n\tX(uint16_t, a, , \"x, y\") \\\n"
        "\tX(int64_t, b, [N_SLOTS], \"z\") \\\n\tX(uint8_t, c, [2], \"w\")\n"
        "#define CF_BAD_FIELDS(X) X(float, f, , \"\")\n#define CF_BOUND_FIELDS(X) X(uint8_t, g, [M], \"\")\n"
        "#define CF_SPLIT_FIELDS(X) X(uint8_t, h, [2], \\\n\t\"split\") X(uint8_t, i, , \"j\")\n"
        "#define CF_ODD_FIELDS(X) X(uint8_t, k, , 7) X(uint8_t, l, , \"m\")\n")
    monkeypatch.setattr(cheader, "HARNESS", tmp_path)
    cheader._text.cache_clear()
    cheader.defines.cache_clear()
    try:
        assert cheader.struct_layout("t.h", "CF_T_FIELDS") == (("a", "H"), ("b", "3q"), ("c", "2B"))
        assert [(n, t._type_ if hasattr(t, "_length_") else t) for n, t in cheader.ctypes_fields(
            "t.h", "CF_T_FIELDS")] == [("a", ctypes.c_uint16), ("b", ctypes.c_int64), ("c", ctypes.c_uint8)]
        assert cheader.struct_layout("t.h", "CF_SPLIT_FIELDS") == (("h", "2B"), ("i", "B"))  # clang-format's split
        for macro, needle in (("CF_BAD_FIELDS", "type float"), ("CF_BOUND_FIELDS", "bound M"),
                              ("CF_ODD_FIELDS", "cannot read every X"),
                              ("CF_NONE_FIELDS", r"no #define CF_NONE_FIELDS\(X\)")):
            with pytest.raises(CopyfuzzError, match=needle):
                cheader.struct_layout("t.h", macro)
    finally:
        cheader._text.cache_clear()
        cheader.defines.cache_clear()

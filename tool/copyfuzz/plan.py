"""A sweep's plan, computed by the tool itself: how many cases each shard must run and
which case an id names.

libcfref.so is the host build of harness/cases.c (with ref/ref.c, and fuzz/input.c for
fuzzinput.decode), loaded with ctypes:
the executor's own enumeration, run in this process, where the routine under test cannot
touch it. A shard's DONE count is compared with a number the routine did not write, and
the case a dying executor was running is rebuilt from its id here, not read from it.
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass
from pathlib import Path

from . import build, paths, records
from .errors import CopyfuzzError
from .execopts import opt

NO_END = (1 << 64) - 1


class CfRef:
    """The entry points of libcfref.so the tool uses."""

    def __init__(self, path: Path) -> None:
        try:
            lib = ctypes.CDLL(str(path))
        except OSError as e:
            raise CopyfuzzError(f"cannot load {path}: {e} (make {path.name} builds it)") from e
        cfg = ctypes.POINTER(records.SweepCfgStruct)
        u64 = ctypes.c_uint64
        lib.cf_sweep_count.argtypes = [cfg, u64, u64, u64, u64]
        lib.cf_sweep_count.restype = u64
        lib.cf_sweep_case_at.argtypes = [cfg, u64, ctypes.POINTER(records.CaseStruct)]
        lib.cf_sweep_case_at.restype = ctypes.c_bool
        lib.cf_case_check_for.argtypes = [ctypes.POINTER(records.CaseStruct), ctypes.c_uint16]
        lib.cf_case_check_for.restype = ctypes.c_int
        self.lib = lib

    def src_byte(self, case: records.Case, i: int) -> int | None:
        """Byte i of the case's source as the executor holds it (harness/place.c), or None
        where the source has no readable byte (past its fault, or no source of its own)."""
        fn = self.lib.cf_case_src_byte  # looked up here: a test's fake plan library has none
        fn.argtypes = [ctypes.POINTER(records.CaseStruct), ctypes.c_int64]
        fn.restype = ctypes.c_int
        c = records.CaseStruct.from_buffer_copy(case.pack())
        value = int(fn(ctypes.byref(c), i))
        return None if value < 0 else value

    def decode_input(self, data: bytes, kind: int, max_len: int, granule: int) -> records.Case:
        """The case the fuzz driver runs for these input bytes (fuzz/input.c, the driver's
        own decoder), with profile and id 0."""
        fn = self.lib.cf_input_decode
        fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint16, ctypes.c_uint64, ctypes.c_uint32,
                       ctypes.POINTER(records.CaseStruct)]
        fn.restype = None
        c = records.CaseStruct()
        fn(data, len(data), kind, max_len, granule, ctypes.byref(c))
        return records.Case.unpack(bytes(c))


@functools.cache
def _load(path: str) -> CfRef:
    return CfRef(Path(path))


def load(root: Path) -> CfRef:
    """libcfref.so, built first if it is missing or stale (make knows)."""
    build.build_host(root, [str(paths.libcfref(paths.REL))])  # as make names it (build.build adds O=)
    return _load(str(paths.libcfref(root)))


@dataclass(frozen=True)
class SweepPlan:
    """The cases `executor sweep` generates for these options (docs/executor.md)."""

    cfref: CfRef
    kind: str
    profile: str
    xlen: int
    max_len: int
    min_len: int = 0
    random: int = 0
    seed: int = 0
    random_max_len: int | None = None
    granule: int = 0  # records.GRANULE_MTE: faults at MTE tag granules (--granule 16)

    def options(self) -> list[str]:
        """The executor options that make it generate exactly this plan."""
        opts = [*opt("max-len", self.max_len), *opt("profile", self.profile)]
        if self.granule:
            opts += opt("granule", self.granule)
        if self.min_len:
            opts += opt("min-len", self.min_len)
        if self.random:
            opts += [*opt("random", self.random), *opt("seed", self.seed)]
            if self.random_max_len is not None:
                opts += opt("random-max-len", self.random_max_len)
        return opts

    def _cfg(self) -> ctypes.Structure:
        return records.SweepCfgStruct(
            kind=records.KINDS.index(self.kind), profile=records.PROFILES.index(self.profile),
            szreg=self.xlen // 8, min_len=self.min_len, max_len=self.max_len,
            random_count=self.random, random_seed=self.seed, random_max_len=self.random_max_len or 0,
            granule=self.granule)

    def count(self, shard: int = 0, shards: int = 1, start: int = 0, end: int = NO_END) -> int:
        """Cases of shard `shard` of `shards` with ids in [start, end)."""
        cfg = self._cfg()
        return int(self.cfref.lib.cf_sweep_count(ctypes.byref(cfg), shard, shards, start, end))

    def case_at(self, case_id: int) -> records.Case | None:
        """The case with this id, or None past the end."""
        cfg = self._cfg()
        out = records.CaseStruct()
        if not self.cfref.lib.cf_sweep_case_at(ctypes.byref(cfg), case_id, ctypes.byref(out)):
            return None
        return records.Case.unpack(bytes(out))

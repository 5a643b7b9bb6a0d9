"""Findings on disk: one JSON line per new reproducer, written the moment it arrives.

A sweep that is killed half-way still leaves every reproducer it found. The file is
DIR/<routine name with / replaced by __>.jsonl; a class may appear more than once when a
later shard reports a smaller case: the last line of a class is its smallest reproducer.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TextIO

from . import records
from .errors import CopyfuzzError
from .routines import Routine
from .spec import format_spec, from_case


class FindingsLog:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._files: dict[str, TextIO] = {}

    def path_for(self, routine: Routine) -> Path:
        return self.directory / f"{routine.file_stem}.jsonl"

    def _file(self, routine: Routine) -> TextIO:
        f = self._files.get(routine.name)
        if f is None:
            path = self.path_for(routine)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                f = path.open("a", encoding="utf-8")
            except OSError as e:
                raise CopyfuzzError(f"cannot write findings to {path}: {e.strerror}") from e
            self._files[routine.name] = f
        return f

    def write(self, routine: Routine, profile: str, cls: str, case: records.Case, result: records.Result) -> None:
        line = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "routine": routine.name,
            "profile": profile,
            "class": cls,
            "error": cls in result.error_list,
            "spec": format_spec(from_case(routine.name, case)),
            "case_id": case.id,
            "classes": result.class_list,
            "errors": result.error_list,
            "n": case.n,
            "ret": result.ret,
            "accessible": result.accessible,
            "claimed": result.claimed,
        }
        f = self._file(routine)
        f.write(json.dumps(line, sort_keys=False) + "\n")
        f.flush()

    def close(self) -> None:
        for f in self._files.values():
            f.close()
        self._files.clear()

"""Findings on disk: one JSON line per new reproducer, written the moment it arrives.

A sweep that is killed half-way still leaves every reproducer it found. The file is
DIR/<routine name with / replaced by __>.jsonl; a class may appear more than once when a
later shard reports a smaller case: the last line of a class is its smallest reproducer.
A write that fails (a full disk) does not stop the sweep: the log stops writing and keeps
the error, which the command reports after its results.
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
        self.error: str | None = None  # the first failed write: nothing is written after it

    def path_for(self, routine: Routine) -> Path:
        return self.directory / f"{routine.file_stem}.jsonl"

    def _file(self, routine: Routine) -> TextIO:
        f = self._files.get(routine.name)
        if f is None:
            path = self.path_for(routine)
            path.parent.mkdir(parents=True, exist_ok=True)
            f = self._files[routine.name] = path.open("a", encoding="utf-8")
        return f

    def write(self, routine: Routine, profile: str, cls: str, case: records.Case, result: records.Result) -> None:
        if self.error is not None:
            return
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
        try:
            f = self._file(routine)
            f.write(json.dumps(line, sort_keys=False) + "\n")
            f.flush()
        except OSError as e:
            self.error = f"cannot write findings to {self.path_for(routine)}: {e.strerror or e}"

    def close(self) -> None:
        for f in self._files.values():
            try:
                f.close()
            except OSError as e:  # what a failed write left in its buffer
                self.error = self.error or f"cannot write findings to {f.name}: {e.strerror or e}"
        self._files.clear()

    def check(self) -> None:
        """Raise the write that failed, if one did: after the results are out."""
        if self.error is not None:
            raise CopyfuzzError(self.error)

"""A campaign's corpus: a directory of raw inputs, each named by its SHA-1, only ever added to.

Every engine's new inputs reach it through `add_many`: written aside and renamed, so a killed
campaign never leaves half an input, and two campaigns on one corpus never collide (the
same bytes have the same name, and a rename over an identical file changes nothing).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from . import atomic

SEED_PREFIX = "seed-"  # inputs encoded from regressions (campaign.seed_corpus)


# libFuzzer's files of a failing input (-artifact_prefix): crash-<SHA-1 of the input>, ...
ARTIFACT_PREFIXES = ("crash-", "timeout-", "oom-", "leak-")
SLOW_PREFIX = "slow-unit-"  # libFuzzer's slow input: not a failure


def name_of(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def engine_named(name: str, data: bytes) -> bool:
    """Is a file an engine's input by its name? Its name is its content's SHA-1 (a corpus
    file, a seed of ours, a libFuzzer artifact), or AFL++'s id:NNNNNN,...: a raw input then,
    even one whose bytes happen to read as a spec line (fuzzers write text too)."""
    if name.startswith("id:"):
        return True
    stem = next((name[len(p):] for p in (*ARTIFACT_PREFIXES, SLOW_PREFIX, SEED_PREFIX) if name.startswith(p)), name)
    return stem == name_of(data)


def has(corpus: Path, digest: str) -> bool:
    return (corpus / digest).exists() or (corpus / f"{SEED_PREFIX}{digest}").exists()


def add(corpus: Path, data: bytes, prefix: str = "") -> bool:
    """One input under its SHA-1 (as libFuzzer names them); False if it is there already."""
    return add_many(corpus, [data], prefix) == 1


def add_many(corpus: Path, inputs: list[bytes], prefix: str = "") -> int:
    """add() of each input, written as one batch (atomic.write_many: one journal commit,
    not one an input); how many were new."""
    fresh = {name_of(data): data for data in inputs}
    files: list[tuple[Path, bytes | str]] = [(corpus / f"{prefix}{digest}", data) for digest, data in fresh.items()
                                             if not has(corpus, digest)]
    return sum(atomic.write_many(files, exclusive=True))


def size(corpus: Path) -> int:
    if not corpus.is_dir():
        return 0
    return sum(1 for p in corpus.iterdir() if p.is_file() and not p.name.startswith("."))


def take_whole(corpus: Path, directory: Path, *, remove: bool) -> int:
    """Inputs libFuzzer wrote into a staging directory, into the corpus. A file whose bytes
    are not its name's hash is still being written, or was cut short by a kill: it is
    skipped (and dropped when remove is set, i.e. once libFuzzer is gone); one libFuzzer
    deletes while this reads the directory is skipped too. The staging files go only once
    the corpus holds them."""
    taken: list[bytes] = []
    listed = [p for p in sorted(directory.iterdir()) if p.is_file()] if directory.is_dir() else []
    for path in listed:
        if not has(corpus, path.name):
            try:
                data = path.read_bytes()
            except FileNotFoundError:  # libFuzzer deleted it (it reduced the input) after the listing
                continue
            if name_of(data) == path.name:
                taken.append(data)
    added = add_many(corpus, taken)
    if remove:
        for path in listed:
            path.unlink(missing_ok=True)
    return added


def take_files(corpus: Path, paths: list[Path]) -> int:
    """Whole files written by an engine that renames its own (AFL++'s queue entries)."""
    return add_many(corpus, [p.read_bytes() for p in paths if p.is_file()])

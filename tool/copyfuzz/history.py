"""A file's history in a git repository, read without touching its work tree or index.

`copyfuzz history` (cmd_history.py) checks a .S file as it was at every commit that
changed it. This module is its git side and its cache:

- Repo runs read-only git plumbing (rev-parse, log, cat-file, merge-base) with
  `git -C REPO`: no checkout, no index, no hook, no configured program is run
  (core.fsmonitor is switched off; log runs with no external diff or textconv).
- changes() lists the commits that changed a path, renames followed (`git log --follow`),
  oldest first, each with the path the file had after it.
- sources() is what the assembler will read of a version: the file's blob and, followed
  recursively, every `#include "..."` / `.include "..."` that exists in the same commit
  (relative to the including file's directory, as the preprocessor looks first). Angle
  includes (<asm/asm.h>) are the compat tree's, never the repository's.
- Cache stores one JSON result per version key (the sources' blob ids and every option
  that changes a result, and the tool's own build), written atomically: identical texts
  at different commits, and reruns, are checked once.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import atomic
from .errors import CopyfuzzError
from .files import file_digest

# Bump when what a cached result holds, or how it is computed, changes.
CACHE_FORMAT = 1
_INCLUDE = re.compile(rb'^[ \t]*(?:#[ \t]*include|\.include)[ \t]*"([^"\n]+)"', re.MULTILINE)
_HASH = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_MODES = {"100644": "file", "100755": "file", "120000": "symlink", "040000": "directory", "160000": "submodule"}


@dataclass(frozen=True)
class Change:
    """A commit that changed the file: `status` is git's (A, M, R100, D, ...), `path` the
    file's path after it (for a deletion, the path deleted)."""

    commit: str
    date: str  # author date, ISO 8601
    subject: str
    status: str
    path: str
    old_path: str = ""  # a rename's or copy's source path ('' otherwise)

    @property
    def deleted(self) -> bool:
        return self.status.startswith("D")

    @property
    def short(self) -> str:
        return self.commit[:12]


class Repo:
    def __init__(self, path: str) -> None:
        self.path = path
        if not Path(path).is_dir():
            raise CopyfuzzError(f"{path}: {'not a directory' if Path(path).exists() else 'no such directory'}")
        inside = self._run(["rev-parse", "--is-inside-work-tree", "--is-bare-repository"], check=False)
        if inside is None:
            raise CopyfuzzError(f"{path}: not a git repository")
        # REPO may be a directory inside the work tree: git then reads some paths from
        # there and prints others from the top. Everything here works from the top, and
        # --file, given from REPO, is taken from there (in_repo).
        top = self._run(["rev-parse", "--show-toplevel"], check=False)
        prefix = self._run(["rev-parse", "--show-prefix"], check=False)
        self.prefix = ""
        if inside.split()[0] == "true" and top and top.strip():
            self.path, self.prefix = top.strip(), (prefix or "").strip()

    def in_repo(self, path: str) -> str:
        """--file (a path from REPO) as a path from the top of the work tree."""
        return posixpath.normpath(posixpath.join(self.prefix, path)) if self.prefix else path

    def _run(self, argv: list[str], *, check: bool = True, what: str = "") -> str | None:
        """git's stdout; on failure None (check=False) or a CopyfuzzError with git's first line."""
        # --literal-pathspecs: --file is a path, never a pattern (`lib/*.S`, `:(glob)...`)
        # diff.relative=false: paths in name-status output from the top, whatever the config
        full = ["git", "-c", "core.fsmonitor=false", "-c", "core.quotepath=false", "-c", "log.showSignature=false",
                "-c", "diff.relative=false",
                "-C", self.path,
                "--no-optional-locks", "--literal-pathspecs", *argv]
        env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
        for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):  # REPO, not an inherited one
            env.pop(name, None)
        try:
            proc = subprocess.run(full, stdin=subprocess.DEVNULL, capture_output=True, env=env)
        except OSError as e:
            raise CopyfuzzError(f"cannot run git: {e.strerror}") from e
        if proc.returncode != 0:
            if not check:
                return None
            first = next((line for line in proc.stderr.decode(errors="replace").splitlines() if line.strip()),
                         f"git exit {proc.returncode}")
            raise CopyfuzzError(f"{self.path}: {what or 'git ' + argv[0]}: {first.removeprefix('fatal: ')}")
        return proc.stdout.decode(errors="replace")

    def commit(self, rev: str, flag: str) -> str:
        """The full hash of a revision given as flag (--since, --good ...); exit 2 if none."""
        if not rev or rev.startswith("-"):
            raise CopyfuzzError(f"{flag} {rev!r}: not a revision")
        out = self._run(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"], check=False)
        if not out or not _HASH.fullmatch(out.strip()):
            raise CopyfuzzError(f"{self.path}: {flag} {rev}: no such commit")
        return out.strip()

    def path_before(self, changes: list[Change], path: str) -> str:
        """The file's path before the first of changes (its source if that was a rename)."""
        return changes[0].old_path or changes[0].path if changes else path

    def path_at(self, rev: str, path: str) -> str:
        """The file's path at rev, given its path at HEAD (or at rev): renames after rev
        followed back. The path itself when the file is not found either way."""
        if self.blob(rev, path) is not None:
            return path
        head = self._run(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], check=False)
        if not head or not self.is_ancestor(rev, head.strip()):
            return path
        before = self.path_before(self.changes(path, head.strip(), rev), path)
        return before if self.blob(rev, before) is not None else path

    def bisect_order(self, tip: str, olds: list[str], paths: list[str]) -> list[str]:
        """The commits that changed one of paths in tip's history but in no old's (tip
        itself too), best bisection point first, as `git bisect` picks them
        (`git rev-list --bisect-all`): the graph, not a list, decides what lies between."""
        out = self._run(["rev-list", "--bisect-all", tip, *[f"^{o}" for o in olds], "--", *paths],
                        what="git rev-list --bisect-all")
        assert out is not None
        return [line.split()[0] for line in out.splitlines() if line.strip()]

    def is_ancestor(self, older: str, newer: str) -> bool:
        return self._run(["merge-base", "--is-ancestor", older, newer], check=False) is not None

    def changes(self, path: str, until: str, since: str | None = None) -> list[Change]:
        """The commits that changed path in since..until (all of until's history without
        since), renames followed, oldest first. A merge whose file differs from every
        parent's is a change like any other (the merge made that version); one whose file
        is a parent's is not listed, nor is the other side's history where it did not
        reach the result (git's history simplification), nor commits touching other files."""
        rng = f"{since}..{until}" if since else until
        # Each commit's record starts with a marker no subject can hold by chance or by
        # design: a subject may hold \x01 or any fixed string, never a fresh random one.
        mark = f"\x01copyfuzz-{secrets.token_hex(16)}\x01"
        # -m: a merge's changes against each parent (one record per parent), so that a
        # merge the simplification keeps shows its change; it is listed once.
        out = self._run(["log", "--follow", "-m", "-z", "--name-status", "--no-ext-diff", "--no-textconv",
                         f"--format={mark.replace(chr(1), '%x01')}%H%x00%aI%x00%s", rng, "--", path],
                        what=f"git log --follow {path}")
        assert out is not None
        found: list[Change] = []
        listed: set[str] = set()
        for record in out.split(mark)[1:]:
            fields = record.split("\0")
            if len(fields) < 5:
                continue  # no change of its own is listed
            commit, date, subject, status = fields[0], fields[1], fields[2], fields[3].lstrip("\n")
            if not status or commit in listed:
                continue
            renamed = status[0] in "RC" and len(fields) > 5
            if fields[4].startswith(path.rstrip("/") + "/"):
                continue  # a file under a directory of that name: not the file asked for
            listed.add(commit)
            found.append(Change(commit, date, subject, status, fields[5] if renamed else fields[4],
                                fields[4] if renamed else ""))
        found.reverse()
        return found

    def last_change(self, rev: str, path: str) -> Change | None:
        """The newest commit at or before rev that changed path, with the file as it is at
        rev (None when path does not exist there)."""
        if self.blob(rev, path) is None:
            return None
        out = self._run(["log", "-1", "--format=%H%x00%aI%x00%s", rev, "--", path])
        if not out:
            return None
        commit, date, subject = out.rstrip("\n").split("\0", 2)
        return Change(commit, date, subject, "M", path)

    def _tree_entry(self, rev: str, path: str) -> tuple[str, str, str] | None:
        """(mode, type, object id) of path at rev, as git ls-tree gives it; None when
        nothing is there. One git process: a file with hundreds of includes asks often."""
        out = self._run(["ls-tree", "-z", "--end-of-options", rev, "--", path], check=False)
        for item in (out or "").split("\0"):
            meta, _, name = item.partition("\t")
            fields = meta.split(" ")
            if name == path and len(fields) == 3:
                return fields[0], fields[1], fields[2]
        return None

    def entry(self, rev: str, path: str) -> str | None:
        """What path is at rev: "file" (a regular file), "symlink", "directory",
        "submodule", "other" (a mode git may add), or None when nothing is there."""
        found = self._tree_entry(rev, path)
        return _MODES.get(found[0], "other") if found else None

    def blob(self, rev: str, path: str) -> str | None:
        """The blob id of path at rev (a file's, or a symlink's), or None if there is no
        such blob there."""
        found = self._tree_entry(rev, path)
        return found[2] if found and found[1] == "blob" and _HASH.fullmatch(found[2]) else None

    def read(self, blob: str) -> bytes:
        full = ["git", "-c", "core.fsmonitor=false", "-C", self.path, "cat-file", "blob", blob]
        try:
            proc = subprocess.run(full, stdin=subprocess.DEVNULL, capture_output=True)
        except OSError as e:
            raise CopyfuzzError(f"cannot run git: {e.strerror}") from e
        if proc.returncode != 0:
            raise CopyfuzzError(f"{self.path}: cannot read blob {blob}")
        return proc.stdout

    def sources(self, rev: str, path: str) -> dict[str, str]:
        """The file at rev and every file it includes with quotes that exists at rev,
        followed recursively and with no limit but the repository's files: repository
        path -> blob id (the file first). An include is looked for where `check` finds it
        (checkfile's -I of the file's directory): beside the including file, then beside
        the file itself."""
        found: dict[str, str] = {}
        missing: set[str] = set()
        todo = [path]
        top = posixpath.dirname(path)
        while todo:
            name = todo.pop(0)
            if name in found or name in missing:
                continue
            blob = self.blob(rev, name)
            if blob is None:
                missing.add(name)  # not in the repository: the compat tree's, an -I directory's, or missing
                continue
            found[name] = blob
            here = posixpath.dirname(name)
            for m in _INCLUDE.finditer(self.read(blob)):
                target = m.group(1).decode(errors="replace")
                if target.startswith("/"):
                    continue
                for base in dict.fromkeys((here, top)):
                    joined = posixpath.normpath(posixpath.join(base, target))
                    if not joined.startswith("../") and joined != "..":
                        todo.append(joined)
        return found


def version_key(sources: dict[str, str], main: str, options: dict[str, object]) -> str:
    """What a result depends on: the texts (as blob ids; the file's own by no name, the
    files it includes by their place relative to it: a rename keeps the key) and the options."""
    base = posixpath.dirname(main) or "."
    rel = sorted(("" if p == main else posixpath.relpath(p, base), b) for p, b in sources.items())
    text = json.dumps({"format": CACHE_FORMAT, "sources": rel, "options": options}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def tree_digest(directory: Path) -> str:
    """sha256 over every file under a directory (names and contents): an -I directory."""
    h = hashlib.sha256()
    for p in sorted(directory.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(directory)).encode() + b"\0" + file_digest(p).encode() + b"\0")
    return h.hexdigest()


def default_cache_dir() -> Path:
    """$XDG_CACHE_HOME/copyfuzz/history, else ~/.cache/copyfuzz/history."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "copyfuzz" / "history"


class Cache:
    """One JSON file per version key: DIR/<key[:2]>/<key>.json."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        if directory.exists() and not directory.is_dir():
            raise CopyfuzzError(f"--cache {directory}: not a directory")

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, object] | None:
        try:
            data = json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return None  # missing, or unreadable: checked again and rewritten
        return data if isinstance(data, dict) and data.get("key") == key else None

    def put(self, key: str, result: dict[str, object]) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise CopyfuzzError(f"cannot create {path.parent}: {e.strerror or e}") from e
        atomic.remove_stale_temporaries(path.parent)
        atomic.write(path, json.dumps({**result, "key": key}, sort_keys=True) + "\n")

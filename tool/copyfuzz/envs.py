"""copyfuzz's environment variables, from their one registry, fuzz/envs.def.

The fuzz driver includes envs.def as an X-macro; this module parses the same file, so
the tool, bench/, tests/ and ci/ build a driver's environment from the names and
defaults the driver itself uses:

    env = envs.driver_env(executor=elf, kind="copy", profile="exact", plugin=so,
                          findings=directory, max_len=65536, coverage=None)

Each keyword is a driver variable's name without COPYFUZZ_, in lower case; a value of
None unsets the variable (the driver then uses its default), a variable not named is
inherited from `base` (os.environ by default). Shell scripts get the same checks from
`python -m copyfuzz.envs COPYFUZZ_<NAME>=VALUE... -- COMMAND [ARG...]`.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from . import xmacro
from .errors import CopyfuzzError

REGISTRY_FILE = Path(__file__).resolve().parents[2] / "fuzz" / "envs.def"
PREFIX = "COPYFUZZ_"
DRIVER = "driver"  # EnvVar.reader of the CF_ENV entries


@dataclass(frozen=True)
class EnvVar:
    name: str  # the full name, COPYFUZZ_...
    default: str | None  # what an unset variable means; None: CF_UNSET, no default
    help: str
    reader: str  # "driver" (CF_ENV), else the file that reads it (CF_ENV_OTHER)

    @property
    def key(self) -> str:
        """The keyword driver_env() takes for it: timeout_ms for COPYFUZZ_TIMEOUT_MS."""
        return self.name.removeprefix(PREFIX).lower()


_FIELDS = {"CF_ENV": ("name", "default", "help"), "CF_ENV_OTHER": ("name", "default", "help", "reader")}


def parse(text: str, where: str = "envs.def") -> tuple[EnvVar, ...]:
    """The entries of an envs.def text, in order (comments are skipped)."""
    out = []
    for macro, args in xmacro.calls(text, {m: len(f) for m, f in _FIELDS.items()}, where):
        name, default, help_text = args[0], args[1], args[2]
        if name.kind != "id":
            raise CopyfuzzError(f"{where}: {macro}: the name is an identifier, not {name.value!r}")
        if default.kind == "id" and default.value != "CF_UNSET" or default.kind == "num":
            raise CopyfuzzError(f"{where}: {default.value}: a value is a string literal or CF_UNSET")
        for a in args[2:]:
            if a.kind != "str":
                raise CopyfuzzError(f"{where}: {name.value}: {a.value}: a string literal, please")
        reader = args[3].value if macro == "CF_ENV_OTHER" else DRIVER
        out.append(EnvVar(PREFIX + name.value, None if default.kind == "id" else default.value, help_text.value,
                          reader))
    names = [v.name for v in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise CopyfuzzError(f"{where}: listed twice: {', '.join(dup)}")
    return tuple(out)


@functools.cache
def registry() -> tuple[EnvVar, ...]:
    """Every registered variable, in the order of fuzz/envs.def."""
    try:
        text = REGISTRY_FILE.read_text()
    except OSError as e:
        raise CopyfuzzError(f"{REGISTRY_FILE}: {e.strerror}") from e
    return parse(text, str(REGISTRY_FILE))


def driver_vars() -> tuple[EnvVar, ...]:
    return tuple(v for v in registry() if v.reader == DRIVER)


def lookup(name: str) -> EnvVar:
    """A registered variable by its full name (CopyfuzzError for any other)."""
    for v in registry():
        if v.name == name:
            return v
    raise CopyfuzzError(f"{name}: not a copyfuzz environment variable (fuzz/envs.def lists them)")


NEAR_EDITS = 2  # a name this many edits from a registered one is taken for it (fuzz/driver_config.c too)


def _edits(a: str, b: str) -> int:
    """Edit distance (insert, delete, substitute) of two names, ignoring case."""
    a, b = a.upper(), b.upper()
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        diag, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            diag, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diag + (ca != cb))
    return row[-1]


def unknown(environ: Mapping[str, str] | None = None) -> list[tuple[str, str | None]]:
    """(name, the nearest registered name or None) of each COPYFUZZ_ variable in the
    environment that nothing reads: most likely a misspelt one, meant to change something.
    Nearest: at most NEAR_EDITS edits away, case aside, as the fuzz driver says it."""
    names = [v.name for v in registry()]
    out = []
    for name in sorted(os.environ if environ is None else environ):
        if name.startswith(PREFIX) and name not in names:
            best = min(names, key=lambda n: _edits(name, n))
            out.append((name, best if _edits(name, best) <= NEAR_EDITS else None))
    return out


def shown_name(name: str) -> str:
    """A variable's name as a warning prints it: at most 200 characters, control characters
    as '?' (the name is the environment's, not ours)."""
    return "".join(ch if ch.isprintable() else "?" for ch in name[:200])


def warn_unknown(environ: Mapping[str, str] | None = None) -> None:
    """One line on stderr for each unknown() variable."""
    for name, near in unknown(environ):
        hint = f" (did you mean {near}?)" if near else " (fuzz/envs.def lists them)"
        print(f"copyfuzz: warning: {shown_name(name)} is not a copyfuzz variable: ignored{hint}", file=sys.stderr)


def value(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """A registered variable's value, else its default (None: unset and no default)."""
    var = lookup(name)
    return (os.environ if environ is None else environ).get(name, var.default)


def test_budget(n: float, least: int = 1, environ: Mapping[str, str] | None = None) -> int:
    """n (seconds of a test campaign, examples of a property test) scaled by the test
    suite's one budget, COPYFUZZ_TEST_BUDGET; at least `least`."""
    text = value("COPYFUZZ_TEST_BUDGET", environ) or "1"
    try:
        scale = float(text)
    except ValueError:
        raise ValueError(f"COPYFUZZ_TEST_BUDGET={text!r}: expected a number such as 0.5 or 10") from None
    return max(least, round(n * scale))


def driver_env(base: Mapping[str, str] | None = None,
               **values: str | os.PathLike[str] | int | None) -> dict[str, str]:
    """base (default os.environ) with the driver variables given as keywords set, or
    unset where the value is None. An unknown keyword is a TypeError, as in any call."""
    by_key = {v.key: v for v in driver_vars()}
    env = dict(os.environ if base is None else base)
    for key, val in values.items():
        if key not in by_key:
            raise TypeError(f"driver_env() got an unexpected keyword argument '{key}' "
                            f"(the driver reads {', '.join(sorted(by_key))})")
        name = by_key[key].name
        if val is None:
            env.pop(name, None)
        else:
            env[name] = str(val) if isinstance(val, int) else os.fspath(val)
    return env


def markdown_table(reader: str = DRIVER) -> str:
    """The registry as the Markdown table fuzz/README.md shows (tests keep them equal)."""
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for v in registry():
        if v.reader != reader:
            continue
        default = "(unset)" if v.default is None else f'`"{v.default}"`' if v.default == "" else f"`{v.default}`"
        text = v.help.replace("|", "&#124;").replace("<", "&lt;")
        rows.append(f"| `{v.name}` | {default} | {text} |")
    return "\n".join(rows) + "\n"


USAGE = """usage: python -m copyfuzz.envs --table
       python -m copyfuzz.envs COPYFUZZ_<NAME>=VALUE... -- COMMAND [ARG...]
  --table   the driver's variables as a Markdown table (fuzz/README.md)
  NAME=...  run COMMAND with these driver variables set (each checked against
            fuzz/envs.def; an empty VALUE sets it empty)"""


def main(argv: list[str]) -> int:
    try:
        if argv == ["--table"]:
            sys.stdout.write(markdown_table())
            return 0
        if "--" not in argv or argv[-1] == "--":
            raise CopyfuzzError("say what to run: NAME=VALUE... -- COMMAND [ARG...]" if argv else USAGE)
        cut = argv.index("--")
        values: dict[str, str] = {}
        for item in argv[:cut]:
            name, eq, val = item.partition("=")
            if not eq:
                raise CopyfuzzError(f"{item}: expected NAME=VALUE")
            var = lookup(name)
            if var.reader != DRIVER:
                raise CopyfuzzError(f"{name}: not one the fuzz driver reads")
            values[var.key] = val
        env = driver_env(None, **values)
        command = argv[cut + 1:]
        try:
            os.execvpe(command[0], command, env)
        except OSError as e:
            raise CopyfuzzError(f"cannot run {command[0]}: {e.strerror}") from e
    except CopyfuzzError as e:
        print(f"copyfuzz.envs: {e}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

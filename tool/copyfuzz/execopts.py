"""The executor's command-line options, read from their table in harness/exec_options.h
(CF_EXEC_OPTIONS), which the executor parses by: the tool spells an option through its
row, as the fuzz driver does, never by hand, so a renamed or removed option is an error
here, not an executor's usage message at run time."""

from __future__ import annotations

from . import cheader

# name -> what it takes: NUM, WORD or FLAG
ARGS = {name: arg for _, name, arg, _ in cheader.rows("exec_options.h", "CF_EXEC_OPTIONS", 4)}


def opt(name: str, value: int | str | None = None) -> list[str]:
    """The option as executor arguments: ["--name", "value"], or ["--name"] for a flag."""
    arg = ARGS.get(name)
    if arg is None:
        raise KeyError(f"no executor option {name!r} in harness/exec_options.h")
    if (arg == "FLAG") != (value is None):
        raise ValueError(f"executor option --{name} takes {'no value' if arg == 'FLAG' else 'a value'}")
    return [f"--{name}"] if value is None else [f"--{name}", str(value)]

"""X-macro definition files, read as the C preprocessor sees their entries: the one
reader of fuzz/envs.def (envs.py) and kernel/prober/case.def (kernel/casedef.py).

    for macro, args in xmacro.calls(text, {"CF_ENV": 3, "CF_ENV_OTHER": 4}, "envs.def"):
        ...   # args: one Arg per argument, in order

An argument is adjacent string literals (concatenated, as C does), an identifier or a
number; comments and preprocessor lines (#ifndef ... #endif) are skipped; anything else,
or a call with the wrong number of arguments, is a CopyfuzzError naming the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import CopyfuzzError

_TOKEN = re.compile(r'\s*(?:(?P<str>"(?:[^"\\\n]|\\.)*")|(?P<id>[A-Za-z_]\w*)|(?P<num>\d+)|(?P<punct>[(),]))')
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}


@dataclass(frozen=True)
class Arg:
    kind: str  # "str" (its literals unquoted and joined), "id" or "num"
    value: str


def _unquote(literal: str, where: str) -> str:
    def escape(m: re.Match[str]) -> str:
        if m.group(1) not in _ESCAPES:
            raise CopyfuzzError(f"{where}: escape \\{m.group(1)} is not one copyfuzz reads")
        return _ESCAPES[m.group(1)]
    return re.sub(r"\\(.)", escape, literal[1:-1])


def calls(text: str, arity: dict[str, int], where: str) -> list[tuple[str, list[Arg]]]:
    """The macro calls of a definition file, in order."""
    text = re.sub(r"/\*.*?\*/", lambda m: " " * len(m.group(0)), text, flags=re.S)
    text = re.sub(r"^\s*#.*$", "", text, flags=re.M)
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            if text[pos:].strip():
                raise CopyfuzzError(f"{where}: cannot read {text[pos:pos + 30].strip()!r}")
            break
        pos = m.end()
        kind = m.lastgroup
        assert kind is not None
        tokens.append((kind, m.group(kind)))
    out: list[tuple[str, list[Arg]]] = []
    i = 0
    while i < len(tokens):
        macro = tokens[i][1]
        if tokens[i][0] != "id" or macro not in arity or tokens[i + 1:i + 2] != [("punct", "(")]:
            raise CopyfuzzError(f"{where}: expected {' or '.join(m + '(' for m in arity)}, not {macro!r}")
        i += 2
        args: list[Arg] = []
        while True:
            literals = []
            while i < len(tokens) and tokens[i][0] == "str":
                literals.append(_unquote(tokens[i][1], where))
                i += 1
            if literals:
                args.append(Arg("str", "".join(literals)))
            elif i < len(tokens) and tokens[i][0] in ("id", "num"):
                args.append(Arg(*tokens[i]))
                i += 1
            else:
                raise CopyfuzzError(f"{where}: {macro}: an argument is missing")
            if i < len(tokens) and tokens[i] == ("punct", ","):
                i += 1
                continue
            if i < len(tokens) and tokens[i] == ("punct", ")"):
                i += 1
                break
            raise CopyfuzzError(f"{where}: {macro}: expected , or )")
        if len(args) != arity[macro]:
            raise CopyfuzzError(f"{where}: {macro}({args[0].value}, ...) takes {arity[macro]} arguments")
        out.append((macro, args))
    return out

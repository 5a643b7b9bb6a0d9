"""What copyfuzz works out about a file from outside the tree when the command line does
not say: a routine's kind from its name, a file's architecture from its path or its
instructions. Each answer carries its reason, which the commands print; where nothing
decides, the answer is an error naming the option that would (never a silent default).
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from . import records, targets
from .errors import CopyfuzzError


@dataclass(frozen=True)
class Inferred:
    value: str
    reason: str  # why, for the user; "" when the command line said so


# Name patterns, most specific first: (pattern on the lower-cased symbol, kind, why).
# A user-direction name is that kind unless the file defines its other direction at the
# same code (RISC-V's __asm_copy_to_user is __asm_copy_from_user): build.share_code checks.
_KIND_RULES: tuple[tuple[str, str, str], ...] = (
    (r"copy_to_user", "copy_to_user", "the destination is user memory"),
    (r"copy_from_user", "copy_from_user", "the source is user memory"),
    (r"clear_user|clear", "clear", "it zeroes user memory"),
    (r"memset", "memset", "no side faults in the kernel's contract"),
    (r"memmove", "memmove", "no side faults in the kernel's contract"),
    (r"memcpy", "memcpy", "no side faults in the kernel's contract"),
    (r"usercopy|copy_user|copy_in_user|copy", "copy",
     "its name does not say which side is the user's, so either may fault"),
)
DIRECTIONS = {"copy_to_user": "copy_from_user", "copy_from_user": "copy_to_user"}


_said: list[str] = []  # what say() holds until the command starts its work


def say(symbol: str, *reasons: str) -> None:
    """What the command line did not say and copyfuzz worked out, for stderr: held until
    the command starts its work (flush), dropped if it ends in an error first, which
    stays one line. check's JSON carries it too."""
    _said.extend(f"copyfuzz: {symbol}: {why}" for why in reasons if why and f"{symbol}: {why}" not in _said)


def flush() -> None:
    """Say what say() holds (the command's work starts, or it has ended well)."""
    for line in _said:
        print(line, file=sys.stderr)
    _said.clear()


def drop() -> None:
    _said.clear()


def kind_from_name(symbol: str) -> Inferred:
    """The kind a symbol's name says, with why; an error with the hint when it says none."""
    low = symbol.lower()
    for pattern, kind, why in _KIND_RULES:
        m = re.search(pattern, low)
        if m:
            return Inferred(kind, f"kind {kind} from the name {symbol} ('{m.group(0)}': {why})")
    example = next((k for word, k in (("cpy", "memcpy"), ("set", "memset"), ("mov", "memmove"), ("zero", "clear"))
                    if word in low), "copy_from_user")
    raise CopyfuzzError(f"{symbol}: its name does not say what kind of routine it is: add :KIND, e.g. "
                        f"--symbol {symbol}:{example} (kinds: {', '.join(records.KINDS)})")


def other_direction(symbol: str, kind: str) -> str | None:
    """The name of a user-direction routine's other direction (__asm_copy_to_user ->
    __asm_copy_from_user), None for other kinds."""
    if kind not in DIRECTIONS:
        return None
    at = symbol.lower().find(kind)
    return symbol[:at] + DIRECTIONS[kind] + symbol[at + len(kind):] if at >= 0 else None


def both_directions(symbol: str, other: str) -> Inferred:
    return Inferred("copy", f"kind copy: {symbol} and {other} are one routine (their code is one body in the "
                            "file), so either side may fault")


# Register names and mnemonics that only one architecture's assembly uses. A file's
# architecture is the one whose words it uses most, when that is clear. Words two of
# them share are left out: x0-x31 (arm64's registers, RISC-V's numeric names), s0-s11
# (RISC-V's saved registers, arm64's single-precision ones), beq/bne/blt/bge/bgt/ble
# (ARM's conditional branches, RISC-V's branches and pseudo-branches).
_WORDS: dict[str, re.Pattern[str]] = {
    "riscv": re.compile(r"\b(?:a[0-7]|t[0-6]|zero|ra|addi|addiw|sd|sw|sb|sh|lbu|lhu|lwu|"
                        r"beqz|bnez|bltu|bgeu|bgtu|bleu|slli|srli|srai|andi|ori|xori|auipc|jalr|csrs|csrc|"
                        r"csrr|csrw|fence)\b"),
    "arm64": re.compile(r"\b(?:w(?:[12]?[0-9]|30)|xzr|wzr|ldp|stp|ldtr\w*|sttr\w*|cbz|cbnz|tbz|tbnz|"
                        r"adrp|csel|b\.(?:eq|ne|lt|le|gt|ge|lo|hs|hi|ls|mi|pl|cc|cs))\b"),
    "arm": re.compile(r"\b(?:r(?:[0-9]|1[0-5])|ip|ldm\w*|stm\w*|push|pop|pld|teq|movs|"
                      r"b(?:lo|hs|hi|ls|mi|pl|cc|cs)|ldr(?:eq|ne|lt|gt|hs|lo|hi|ls|cc|cs)\w*|"
                      r"str(?:eq|ne|lt|gt|hs|lo|hi|ls|cc|cs)\w*)\b"),
}
_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*|(?m:^\s*@[^\n]*)|\s@\s[^\n]*", re.DOTALL)
_LEAD = 4  # the winner must use at least this many times the words of the next one


def arch_from_path(path: Path, resolve: bool = True) -> str | None:
    """The name after the last `arch` component of a path that names an architecture
    copyfuzz builds for (linux/arch/arm64/lib/copy_to_user.S); a path in a repository is
    taken as it is (resolve=False), a file's from the root."""
    parts = (path.resolve() if resolve else path).parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == "arch" and parts[i + 1] in targets.ARCHES:
            return parts[i + 1]
    return None


_QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


def with_local_includes(path: Path, text: str, limit: int = 32) -> str:
    """text and the files it includes with quotes beside it (their includes too, up to
    limit files): a file whose body is a template it includes is decided by the template."""
    seen, todo, out = {path.resolve()}, [(path, text)], [text]
    while todo and len(seen) < limit:
        at, body = todo.pop()
        for name in _QUOTED_INCLUDE.findall(body):
            inc = (at.parent / name).resolve()
            if inc in seen or not inc.is_file():
                continue
            seen.add(inc)
            try:
                more = inc.read_text(errors="replace")
            except OSError:
                continue
            out.append(more)
            todo.append((inc, more))
    return "\n".join(out)


def arch_of(path: Path, text: str | None = None, resolve: bool = True) -> Inferred:
    """The architecture of a file from outside the tree: from its path, else from the
    words its instructions use (text, else the file read), else an error naming --arch."""
    by_path = arch_from_path(path, resolve)
    if text is None:
        try:
            text = path.read_text(errors="replace")
        except OSError as e:
            raise CopyfuzzError(f"{path}: cannot read ({e.strerror})") from None
        text = with_local_includes(path, text)
    code = _COMMENTS.sub(" ", text)
    counts = Counter({arch: len(words.findall(code)) for arch, words in _WORDS.items()})
    (best, n), *rest = counts.most_common() + [("", 0)]
    second = rest[0][1] if rest else 0
    seen = ", ".join(f"{a} {c}" for a, c in counts.most_common())
    decided = best if n >= 3 and n >= _LEAD * second else None
    if by_path and decided and decided != by_path:
        # U-Boot keeps arm64 code under arch/arm/lib/: the path and the instructions disagree
        raise CopyfuzzError(f"{path}: its path says {by_path} (arch/{by_path}/) but its instructions are "
                            f"{decided}'s ({seen}): add --arch {decided} or --arch {by_path}")
    if by_path:
        return Inferred(by_path, f"arch {by_path} from the path ({'arch/' + by_path + '/'})")
    if decided:
        return Inferred(decided, f"arch {decided} from its instructions (the words only one architecture uses: "
                                 f"{seen}), as its path has no arch/<name>/")
    raise CopyfuzzError(f"{path}: cannot tell its architecture (no arch/<name>/ in its path; its instructions "
                        f"do not decide: {seen}): add --arch {'|'.join(targets.ARCHES)}")

"""Rich consoles for people: tables on stdout, progress on stderr."""

from __future__ import annotations

import sys

from rich.console import Console, RenderableType

# Piped or logged output is not wrapped at 80 columns: a reproducer spec must stay on
# one line to be pasted back into `copyfuzz repro`.
PIPE_WIDTH = 240


def stdout_console() -> Console:
    tty = sys.stdout.isatty()
    return Console(width=None if tty else PIPE_WIDTH, highlight=False, soft_wrap=False)


def stderr_console() -> Console:
    return Console(stderr=True, highlight=False)


def emit(console: Console, renderable: RenderableType = "") -> None:
    """Print; into a pipe without the padding tables leave at line ends (no colours
    there either, so stripping is safe)."""
    if console.is_terminal:
        console.print(renderable, crop=False)
        return
    with console.capture() as captured:
        console.print(renderable, crop=False)
    text = "\n".join(line.rstrip() for line in captured.get().splitlines())
    console.file.write(text + "\n")
    console.file.flush()


def plural(count: int, word: str) -> str:
    """'1 problem', '2 problems': a count and its noun, agreed."""
    return f"{count} {word}{'' if count == 1 else 's'}"

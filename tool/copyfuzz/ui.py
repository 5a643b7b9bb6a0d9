"""Rich consoles for people: tables on stdout, progress on stderr.

The one module that imports rich, and only on use: a run that prints JSON (most runs
of CI and of the test suite) does not pay for loading it (about 20 ms a start).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.progress import Progress
    from rich.table import Table

# Piped or logged output is not wrapped at 80 columns: a reproducer spec must stay on
# one line to be pasted back into `copyfuzz repro`.
PIPE_WIDTH = 240


def stdout_console() -> Console:
    from rich.console import Console

    tty = sys.stdout.isatty()
    return Console(width=None if tty else PIPE_WIDTH, highlight=False, soft_wrap=False)


def stderr_console() -> Console:
    from rich.console import Console

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


def escape(text: str) -> str:
    """text with rich's markup characters escaped, to print as it is."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def new_table(*columns: str, **options: Any) -> Table:
    from rich.table import Table

    return Table(*columns, **options)


def progress_bar() -> Progress:
    """A run's progress on stderr (shown while it runs, gone after)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=stderr_console(), transient=True)

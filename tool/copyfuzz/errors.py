"""The one exception type the command line turns into a message and an exit code."""

from __future__ import annotations


class CopyfuzzError(Exception):
    """A problem worth one line on stderr, never a traceback.

    exit_code 2 means bad input or a build/tool problem (the usual case).
    """

    def __init__(self, message: str, *, exit_code: int = 2, details: str = "") -> None:
        super().__init__(message)
        self.exit_code = exit_code
        # Extra text printed after the message, e.g. a compiler's output.
        self.details = details

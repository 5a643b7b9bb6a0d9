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


def os_error_message(e: OSError) -> str:
    """An OSError as one line naming what failed: 'PATH: reason'. With no path, the
    failure was writing standard output (a full disk, a closed pipe) or is named by
    its reason alone."""
    reason = e.strerror or str(e)
    if e.filename is not None:
        where = f"{e.filename} -> {e.filename2}" if e.filename2 is not None else str(e.filename)
        return f"{where}: {reason}"
    return reason


def interrupted(e: BaseException | None) -> bool:
    """Is e a Ctrl-C, or an error raised while handling one? (A KeyboardInterrupt in a
    class body's __set_name__ reaches the import as a RuntimeError.)"""
    while e is not None:
        if isinstance(e, KeyboardInterrupt):
            return True
        e = e.__cause__ or e.__context__
    return False

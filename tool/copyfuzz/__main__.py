"""`python -m copyfuzz`: see cli.py."""

import contextlib
import os
import signal
import sys

# The launcher started Python with Ctrl-C ignored (COPYFUZZ_SIGINT_HELD, fuzz/envs.def):
# from here on it is a KeyboardInterrupt, which the tool turns into exit 130.
if os.environ.pop("COPYFUZZ_SIGINT_HELD", None) == "1":
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _end_interrupted() -> None:
    """Exit 130 now, the tool having cleaned up. A Ctrl-C that ended the last code run by
    exec() of a string (dataclasses and attrs make their methods so, at import) marks the
    interpreter as ended by it even once caught (CPython's _Py_UnhandledKeyboardInterrupt),
    and `python -m` would then end by SIGINT instead (1 run in 15 of a Ctrl-C early in a
    Hypothesis campaign)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(130)


try:
    from .cli import main
except BaseException as e:  # Ctrl-C while the tool is still starting: no traceback
    from .errors import interrupted

    if not interrupted(e):
        raise
    print("copyfuzz: interrupted", file=sys.stderr)
    _end_interrupted()

status = main()
if status == 130:
    _end_interrupted()
sys.exit(status)

"""`python -m copyfuzz`: see cli.py."""

import contextlib
import os
import signal
import sys

# A Ctrl-C that lands in code whose exceptions Python prints and drops (an import lock's
# weakref callback, a __del__) would be lost, with "Exception ignored" and a traceback
# (1 run in 300 of a Ctrl-C while the tool starts). It is raised again 1 ms later, back in
# ordinary code, from SIGALRM, which the tool uses for nothing else; after main() returns
# the tool's status stands.
_swallowed_ctrl_c = False
_main_returned = False


def _keep_swallowed_ctrl_c(args: "sys.UnraisableHookArgs") -> None:
    global _swallowed_ctrl_c
    if args.exc_type is not None and issubclass(args.exc_type, KeyboardInterrupt):
        if not _main_returned and not sys.is_finalizing():
            _swallowed_ctrl_c = True
            signal.setitimer(signal.ITIMER_REAL, 0.001)
        return
    sys.__unraisablehook__(args)


def _raise_swallowed_ctrl_c(signum: int, frame: object) -> None:
    global _swallowed_ctrl_c
    if _swallowed_ctrl_c and not _main_returned:
        _swallowed_ctrl_c = False
        raise KeyboardInterrupt


sys.unraisablehook = _keep_swallowed_ctrl_c
signal.signal(signal.SIGALRM, _raise_swallowed_ctrl_c)

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

try:
    status = main()
finally:  # however main() ends (a SystemExit too), no Ctrl-C is raised again after it
    _main_returned = True
    signal.setitimer(signal.ITIMER_REAL, 0)
if status == 130:
    _end_interrupted()
sys.exit(status)

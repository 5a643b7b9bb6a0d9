"""`python -m copyfuzz`: see cli.py."""

import os
import signal
import sys

# The launcher started Python with Ctrl-C ignored (COPYFUZZ_SIGINT_HELD, fuzz/envs.def):
# from here on it is a KeyboardInterrupt, which the tool turns into exit 130.
if os.environ.pop("COPYFUZZ_SIGINT_HELD", None) == "1":
    signal.signal(signal.SIGINT, signal.default_int_handler)

try:
    from .cli import main
except BaseException as e:  # Ctrl-C while the tool is still starting: no traceback
    from .errors import interrupted

    if not interrupted(e):
        raise
    print("copyfuzz: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())

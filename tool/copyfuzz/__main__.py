"""`python -m copyfuzz`: see cli.py."""

import sys

try:
    from .cli import main
except BaseException as e:  # Ctrl-C while the tool is still starting: no traceback
    from .errors import interrupted

    if not interrupted(e):
        raise
    print("copyfuzz: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())

"""`python -m copyfuzz`: see cli.py."""

import sys

try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C while the tool is still starting: no traceback
    print("copyfuzz: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())

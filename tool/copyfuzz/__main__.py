"""`python -m copyfuzz`: see cli.py."""

import sys

from .cli import main

sys.exit(main())

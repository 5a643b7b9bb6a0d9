"""copyfuzz: fuzz and differential-test kernel user-copy routines (the command-line tool)."""

__version__ = "0.1.0"

"""``python -m bench <command> ...``: the benchmark commands (see :mod:`bench.cli`), from the repository root."""

from __future__ import annotations

import sys

from bench.cli import main

if __name__ == "__main__":
    sys.exit(main())

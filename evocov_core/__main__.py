"""``python -m evocov_core``: see :mod:`evocov_core.cli`."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())

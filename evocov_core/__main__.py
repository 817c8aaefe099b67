"""``python -m evocov_core``: see :mod:`evocov_core.present.cli`."""

import sys

from evocov_core.present.cli import main

if __name__ == "__main__":
    sys.exit(main())

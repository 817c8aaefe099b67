"""Entry point of ``python -m evocov_core bench``: see :mod:`evocov_core.benchmarks`."""

from .benchmarks import add_parser, main

__all__ = ["add_parser", "main"]

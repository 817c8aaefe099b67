"""A kernel file's scores (:attr:`~evocov_core.runs.kernel_file.KernelFile.scores`): the known ones typed."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["Scores"]


class Scores(Mapping[str, Any]):
    """A kernel file's scores: the ones the package reads, typed, and every other one as stored.

    A read-only mapping of the stored values (numbers, text or None; what :func:`parse_kernel_file` kept),
    so that a report can list them all; the properties give the known ones with their types, and a value
    that is absent or of the wrong type reads as absent.
    """

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = dict(values or {})

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Scores({self._values!r})"

    def number(self, key: str) -> float | None:
        """The score ``key`` as a finite number, else None (absent, text, a flag or not finite)."""
        v = self._values.get(key)
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        return float(v) if ok else None

    def text(self, key: str) -> str | None:
        v = self._values.get(key)
        return v if isinstance(v, str) else None

    @property
    def bic(self) -> float:
        """BIC on the training part; NaN when none is recorded."""
        v = self.number("bic")
        return math.nan if v is None else v

    @property
    def lml(self) -> float:
        """Log marginal likelihood of the training part (model units); NaN when none is recorded."""
        v = self.number("lml")
        return math.nan if v is None else v

    @property
    def test_rmse(self) -> float | None:
        return self.number("test_rmse")

    @property
    def forecast_test_rmse(self) -> float | None:
        return self.number("forecast_test_rmse")

    @property
    def seconds(self) -> float | None:
        """The search's seconds (the command's, from its start, when a command wrote the file)."""
        return self.number("seconds")

    @property
    def test_fraction(self) -> float | None:
        """The test fraction the kernel was scored with, when it is one a split can take ([0, 0.5))."""
        v = self.number("test_fraction")
        return v if v is not None and 0.0 <= v < 0.5 else None

    @property
    def algorithm(self) -> str | None:
        return self.text("algorithm")

    @property
    def dataset(self) -> str | None:
        return self.text("dataset")

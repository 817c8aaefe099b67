"""The fit cache of a run (``config.cache_fits``): a kernel fitted before keeps that fit.

A kernel whose canonical form was fitted before in the run, in an earlier batch or earlier in the
same one, gets that fit instead of being fitted again; a seed started at given values is keyed by
those values too (:func:`fit_key`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evocov_core.fitting.optimize import FitResult, Start
from evocov_core.language.kernel import Kernel
from evocov_core.searches.rules import SEEDED

__all__ = ["CachePlan", "FitCache", "fit_key"]



def fit_key(kernel: Kernel, start: Start | None, origin: str) -> str:
    """The fit cache's key: the kernel's canonical form, and for a spectral seed the periods it
    starts at too. A periodic structure has an optimum per period: started at a daily and at a
    weekly period it is two candidates, not one fit and a copy."""
    if origin in SEEDED and start is not None:
        return kernel.canonical + "@" + ",".join(f"{v:.9g}" for v in start.theta if math.isfinite(v))
    return kernel.canonical


@dataclass(frozen=True)
class CachePlan:
    """What a batch of kernels needs fitted, the cache's hits aside.

    Attributes
    ----------
    hits : dict of int to FitResult
        Index in the batch -> the fit of the same key made in an earlier batch.
    copies : tuple of (int, int)
        ``(i, j)``: kernel ``i`` takes the fit of kernel ``j``, an earlier one of this batch with
        the same key.
    todo : tuple of int
        The indices to fit, in batch order.
    """

    hits: dict[int, FitResult]
    copies: tuple[tuple[int, int], ...]
    todo: tuple[int, ...]

    def fits(self, new: Mapping[int, FitResult | None], n: int) -> list[FitResult | None]:
        """Every fit of the ``n`` kernels: the hits, the ``new`` fits of :attr:`todo` (None where
        the run stopped first) and the copies of those."""
        out = [self.hits.get(i, new.get(i)) for i in range(n)]
        for i, j in self.copies:
            out[i] = out[j]
        return out


class FitCache:
    """Fits of a run by :func:`fit_key`; disabled, it plans every kernel for a fit.

    Parameters
    ----------
    enabled : bool
        ``config.cache_fits``.
    """

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.n_hits = 0  # kernels met again and not refitted
        self._fits: dict[str, FitResult] = {}

    def plan(self, keys: Sequence[str]) -> CachePlan:
        """Which kernels of a batch with cache ``keys`` to fit (counting the hits)."""
        hits: dict[int, FitResult] = {}
        copies: list[tuple[int, int]] = []
        todo: list[int] = []
        first: dict[str, int] = {}  # cache key -> index fitted in this batch
        for i, key in enumerate(keys):
            if self.enabled:
                hit = self._fits.get(key)
                if hit is not None:
                    hits[i] = hit
                    self.n_hits += 1
                    continue
                if key in first:
                    copies.append((i, first[key]))
                    self.n_hits += 1
                    continue
                first[key] = i
            todo.append(i)
        return CachePlan(hits, tuple(copies), tuple(todo))

    def store(self, key: str, fit: FitResult) -> None:
        """Keep ``fit`` for its key (a screened-out fit too: that kernel is not screened again)."""
        if self.enabled:
            self._fits[key] = fit

"""The model choice's candidates: the best full fit of each distinct kernel a search fitted.

A kernel is distinct by its cache key (:func:`~evocov_core.searches.cache.fit_key`: its canonical
form, and for a seed started at given values those values too). The seeds' fits
(:data:`~evocov_core.searches.cache.SEEDED`: the spectral and naive seeds of long series, the
exponential-smoothing forms) are offered to the choice whatever their BIC (:meth:`Candidates.top`).
"""

from __future__ import annotations

import math

from evocov_core.fitting.optimize import FitResult
from evocov_core.searches.rules import SEEDED

__all__ = ["MIN_SEARCHED", "Candidates", "better_fit", "seed_places"]

#: Candidates of the model choice kept for the search's own kernels beside the spectral seeds.
MIN_SEARCHED = 2


def better_fit(a: FitResult | None, b: FitResult | None) -> FitResult | None:
    """The lower-BIC of two fits (ties keep ``a``; failures never win)."""
    if b is None or not b.ok:
        return a
    if a is None or not a.ok or b.bic < a.bic:
        return b
    return a


def seed_places(k: int, n_seeds: int, n_others: int) -> int:
    """How many of ``k`` model-choice places the seeds take (:meth:`Candidates.top`): at most
    ``k`` less :data:`MIN_SEARCHED` (less ``k // 2`` for a small ``k``), more where the search's own
    ``n_others`` kernels cannot fill the rest."""
    return min(n_seeds, max(k - min(MIN_SEARCHED, k // 2), k - n_others))


class Candidates:
    """The best full fit of each cache key so far, and which keys are the seeds'.

    Attributes
    ----------
    best_by_key : dict of str to FitResult
        Only successful fits with a finite BIC.
    seeded_keys : set of str
        The keys of fits made from the seeds of :data:`~evocov_core.searches.cache.SEEDED`.
    """

    def __init__(self) -> None:
        self.best_by_key: dict[str, FitResult] = {}
        self.seeded_keys: set[str] = set()

    def __len__(self) -> int:
        """Distinct kernels fitted so far: what the model choice would refit and check."""
        return len(self.best_by_key)

    def note(self, key: str, fit: FitResult, origin: str) -> None:
        """Keep a full fit among the candidates when it is the best of its cache ``key``."""
        if fit.ok and math.isfinite(fit.bic):
            self.best_by_key[key] = better_fit(self.best_by_key.get(key), fit)  # type: ignore[assignment]
            if origin in SEEDED:
                self.seeded_keys.add(key)

    def top(self, k: int) -> tuple[FitResult, ...]:
        """The ``k`` lowest-BIC distinct kernels fitted so far, lowest first.

        The seeds' fits (the spectral seeds of :mod:`~evocov_core.searches.spectral_seeds` on long
        series, the exponential-smoothing forms) are among them whatever their BIC: BIC ranks by
        short-range fit, which the forecast days ahead does not need, and the model choice judges
        them by the forecast of the tail instead. They take at most ``k`` less :data:`MIN_SEARCHED`
        places (less ``k // 2`` when ``k`` is smaller than twice that; the lowest-BIC seeds first),
        so that the kernels the search found itself are offered too; places the search cannot fill
        go to more seeds."""
        fits = self.best_by_key.items()
        seeds = sorted((f for key, f in fits if key in self.seeded_keys), key=lambda f: f.bic)
        others = sorted((f for key, f in fits if key not in self.seeded_keys), key=lambda f: f.bic)
        n_seeds = seed_places(k, len(seeds), len(others))
        return tuple(sorted(seeds[:n_seeds] + others[:k - n_seeds], key=lambda f: f.bic))

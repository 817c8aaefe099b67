"""The model choice's candidates: the best full fit of each distinct kernel a search fitted.

A kernel is distinct by its cache key (:func:`~evocov_core.search.cache.fit_key`: its canonical
form, and for a seed started at given values those values too), and the choice's places go to distinct
models: of two fits with the same training likelihood (:data:`LML_TIE`) only the lower BIC is offered.
The seeds' fits
(:data:`~evocov_core.search.cache.SEEDED`: the spectral and naive seeds of long series, the
exponential-smoothing forms) are offered to the choice whatever their BIC (:meth:`Candidates.top`).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

from evocov_core.fitting.optimize import FitResult
from evocov_core.search.rules import SEEDED

__all__ = ["LML_TIE", "MIN_SEARCHED", "Candidates", "better_fit", "choice_places", "seed_places"]

#: Candidates of the model choice kept for the search's own kernels beside the spectral seeds.
MIN_SEARCHED = 2
#: Two fits whose training LMLs differ by less (nats) are one model to the choice: two ways of writing a
#: kernel (``multiply(1, K)`` and ``K``), or a kernel with a part fitted to nothing (a damped trend of
#: zero variance beside a level). In the 15 s corpus runs of issue 55, 2,282 pairs of distinct kernels
#: were this close, and their forecasts of the test part differ by 1.2 % at most (RMSE; median 6e-5 %);
#: pairs 1e-3 to 1e-2 apart differ by up to 98 %. A quarter of the choices held such a duplicate.
LML_TIE = 1e-4


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


def choice_places(fits: Sequence[tuple[float, float, bool]], k: int) -> list[int]:
    """The model choice's ``k`` places among fits given as ``(bic, lml, seeded)``.

    In BIC order, a fit whose LML is within :data:`LML_TIE` of a kept fit's is dropped (the kept one
    has the lower BIC, so no more hyperparameters); when the dropped fit is a seed's, the kept one takes
    its standing, so that a seed's model never loses its place to its own double. Of the rest, the seeds
    take the places :func:`seed_places` gives them, lowest BIC first, and the search's own kernels the
    others.

    Returns
    -------
    list of int
        Indices into ``fits``, lowest BIC first; fewer than ``k`` when there are not enough.
    """
    kept: list[tuple[float, int]] = []  # the kept fits' (LML, index), sorted
    seeded: set[int] = set()
    for i in sorted(range(len(fits)), key=lambda j: fits[j][0]):
        if len(seeded) >= k and len(kept) - len(seeded) >= k:
            break
        lml = fits[i][1]
        at = bisect.bisect_left(kept, (lml - LML_TIE, -1))
        if at < len(kept) and kept[at][0] <= lml + LML_TIE:
            if fits[i][2]:
                seeded.add(kept[at][1])
            continue
        bisect.insort(kept, (lml, i))
        if fits[i][2]:
            seeded.add(i)
    order = sorted((i for _, i in kept), key=lambda j: fits[j][0])
    seeds = [i for i in order if i in seeded]
    others = [i for i in order if i not in seeded]
    n_seeds = seed_places(k, len(seeds), len(others))
    return sorted(seeds[:n_seeds] + others[:k - n_seeds], key=lambda j: fits[j][0])


class Candidates:
    """The best full fit of each cache key so far, and which keys are the seeds'.

    Attributes
    ----------
    best_by_key : dict of str to FitResult
        Only successful fits with a finite BIC.
    seeded_keys : set of str
        The keys of fits made from the seeds of :data:`~evocov_core.search.cache.SEEDED`.
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
        """The ``k`` lowest-BIC distinct models fitted so far, lowest first (:func:`choice_places`).

        The seeds' fits (the spectral seeds of :mod:`~evocov_core.search.spectral_seeds` on long
        series, the exponential-smoothing forms) are among them whatever their BIC: BIC ranks by
        short-range fit, which the forecast days ahead does not need, and the model choice judges
        them by the forecast of the tail instead. They take at most ``k`` less :data:`MIN_SEARCHED`
        places (less ``k // 2`` when ``k`` is smaller than twice that; the lowest-BIC seeds first),
        so that the kernels the search found itself are offered too; places the search cannot fill
        go to more seeds."""
        items = list(self.best_by_key.items())
        places = choice_places([(f.bic, f.lml, key in self.seeded_keys) for key, f in items], k)
        return tuple(items[i][1] for i in places)

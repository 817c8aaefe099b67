"""The benchmark's algorithms and their ``paper`` and ``quick`` budgets.

Algorithms
----------
=============  =================================================================
``evocov-lml``  EvoCov, hyperparameters by LML (``method="auto"``: L-BFGS-B)
``evocov-sopl`` EvoCov, hyperparameters by SoPL (``auto``: Powell, as the paper)
``random``      Random Search (LML)
``gwtf``        Go With The First (LML)
``gpss``        our GPSS baseline (LML)
=============  =================================================================

Budgets
-------
``paper``: ``preset("paper", algorithm)``, the paper's section 6.2 settings, unchanged.

``quick``: ``preset("quick", algorithm)`` (read at run time) is sized for Airline
(``n_train = 129``, :data:`REF_N`). A kernel fit costs about ``evaluations × n²``
(the LML build and Cholesky grow as n^2.1 between n = 130 and 900, PERF_NOTES.md), so
the quick budget keeps ``fits × evaluations-per-fit × (n/129)²`` constant:

* the number of kernel fits is multiplied by ``s(n) = f · min(1, (129/n)²)``
  (``f = --quick-scale``, default 1): EvoCov ``N`` and ``G`` by ``√s`` each (so N·G by s;
  ``μ`` keeps its ratio to N), Random Search ``N`` by ``s``, Go With The First ``G``
  (initial individuals) by ``√s`` and ``N`` (steps) so its fit count
  ``G + N·(G(G+1)/2 − 1)`` is ``s`` times the preset's, GPSS the most levels whose
  candidate count (upper bound ``Σ_l 8(2l−3) + 3(l−1)``, 4 at level 1) stays within ``s``
  times the preset's;
* floors keep every search meaningful: EvoCov N ≥ 8, G ≥ 2, μ ≥ 2; Random Search N ≥ 10;
  GWTF G ≥ 2, N ≥ 2; GPSS ≥ 2 levels. Large series with a floor cost more than the rule;
* Powell (``evocov-sopl``): the paper's Powell budget ``ref_fun_call·350²/n²`` shrinks as
  1/n², which would make SoPL fits cost the same at every n and the fit count rule wrong.
  The quick budget instead gives every Powell fit the nominal evaluation count of the
  preset's L-BFGS-B fit, ``E = n_screen + n_restarts·max_evals``, by setting
  ``ref_fun_call = ⌈E·n²/350²⌉`` per series; the fit count then follows the same rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..optimize import powell_budget
from ..search import SearchConfig, preset

__all__ = [
    "ALGORITHMS",
    "REF_N",
    "Algorithm",
    "budget_config",
    "estimated_fits",
    "quick_scale",
    "settings_summary",
]

#: n_train of 01-airline, the series ``preset("quick")`` is sized for.
REF_N = 129


@dataclass(frozen=True)
class Algorithm:
    """A benchmark algorithm: a search algorithm and its hyperparameter metric."""

    key: str
    algorithm: str
    metric: str
    label: str


#: The benchmark's algorithms, in report order.
ALGORITHMS: dict[str, Algorithm] = {a.key: a for a in (
    Algorithm("evocov-lml", "evocov", "lml", "EvoCov LML"),
    Algorithm("evocov-sopl", "evocov", "sopl", "EvoCov SoPL"),
    Algorithm("random", "random", "lml", "Random Search"),
    Algorithm("gwtf", "gwtf", "lml", "Go With The First"),
    Algorithm("gpss", "gpss", "lml", "GPSS baseline"),
)}


def quick_scale(n_train: int, factor: float = 1.0) -> float:
    """``s(n) = factor · min(1, (REF_N/n)²)``: the fraction of the quick preset's fits."""
    return factor * min(1.0, (REF_N / n_train) ** 2)


def _gpss_candidates(levels: int, bases: int = 4) -> int:
    """Upper bound on GPSS's kernel fits over ``levels`` levels (structures grow one leaf a level)."""
    total = 0
    for lev in range(1, levels + 1):
        total += bases if lev == 1 else 2 * bases * (2 * lev - 3) + (bases - 1) * (lev - 1)
    return total


def _gwtf_fits(G: int, N: int) -> int:
    return G + N * max(G * (G + 1) // 2 - 1, 1)


def estimated_fits(config: SearchConfig) -> int:
    """Kernel fits a search with ``config`` makes (GPSS: an upper bound; EvoCov: exact)."""
    a = config.algorithm
    if a == "evocov":
        return config.population * config.generations
    if a == "random":
        return config.population
    if a == "gwtf":
        return _gwtf_fits(config.generations, config.population)
    return _gpss_candidates(config.generations, len(config.base_kernels))


def budget_config(key: str, budget: str, n_train: int, *, factor: float = 1.0) -> SearchConfig:
    """The settings of benchmark algorithm ``key`` under ``budget`` on a series of ``n_train`` points.

    Parameters
    ----------
    key : str
        One of :data:`ALGORITHMS`.
    budget : {"paper", "quick"}
    n_train : int
    factor : float
        ``f`` of the quick rule (``--quick-scale``); ignored by ``paper``.
    """
    if key not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {key!r}; choose from {', '.join(ALGORITHMS)}")
    alg = ALGORITHMS[key]
    if budget == "paper":
        return preset("paper", alg.algorithm, metric=alg.metric)
    if budget != "quick":
        raise ValueError(f"budget must be 'paper' or 'quick', got {budget!r}")
    if not factor > 0:
        raise ValueError(f"quick scale must be positive, got {factor}")
    base = preset("quick", alg.algorithm, metric=alg.metric)
    s = quick_scale(n_train, factor)
    r = math.sqrt(s)
    changes: dict[str, object] = {}
    if alg.algorithm == "evocov":
        N = max(8, round(base.population * r))
        G = max(2, round(base.generations * r))
        mu = max(2, min(N - 1, round(base.mu * N / base.population)))
        changes.update(population=N, generations=G, mu=mu)
    elif alg.algorithm == "random":
        changes.update(population=max(10, round(base.population * s)))
    elif alg.algorithm == "gwtf":
        G = max(2, round(base.generations * r))
        target = _gwtf_fits(base.generations, base.population) * s
        N = max(2, round((target - G) / max(G * (G + 1) // 2 - 1, 1)))
        changes.update(generations=G, population=N)
    elif alg.algorithm == "gpss":
        nb = len(base.base_kernels)
        target = _gpss_candidates(base.generations, nb) * s
        levels = max([lev for lev in range(1, base.generations + 1) if _gpss_candidates(lev, nb) <= target],
                     default=1)
        changes.update(generations=max(2, min(levels, base.generations)) if base.generations >= 2 else 1)
    cfg = base.with_(**changes)
    if cfg.optim.resolved_method == "powell":
        evals = cfg.n_screen + cfg.n_restarts * cfg.max_evals
        cfg = cfg.with_(ref_fun_call=max(1, math.ceil(evals * n_train**2 / 350**2)))
    return cfg


def settings_summary(config: SearchConfig, n_train: int) -> dict[str, object]:
    """The settings that vary between series and budgets, for tables."""
    a = config.algorithm
    if a == "evocov":
        out: dict[str, object] = {"N": config.population, "G": config.generations, "mu": config.mu}
    elif a == "random":
        out = {"N": config.population}
    elif a == "gwtf":
        out = {"G": config.generations, "N": config.population}
    else:
        out = {"levels": config.generations}
    out["fits"] = estimated_fits(config)
    if config.optim.resolved_method == "powell":
        out["ref_fun_call"] = config.ref_fun_call
        out["powell_evals"] = powell_budget(config.ref_fun_call, n_train)
    return out

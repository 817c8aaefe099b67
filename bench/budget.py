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

``quick``: designed so that one trial of each of the 5 algorithms on each of the 13 series
(65 trials) takes about 20 minutes of 2-core time: every trial gets about
``T = 30`` core-seconds (:data:`QUICK_TRIAL_CORE_SECONDS`). It starts from
``preset("quick-fixed", algorithm)`` (read at run time: depths, μ/N, restarts, PSD check, ...)
and only lowers its number of kernel fits. A fit costs about
``c_a · (e/e_a) · (n/129)^2.2`` core-seconds: the package's cost model
(:mod:`evocov_core.searches.wall_time`, which the dashboard's wall-time estimate uses too), with
``c_a`` the mean CPU seconds per fit of algorithm ``a`` in a whole quick trial on Airline
(n_train = 129), ``e`` the fit effort of the settings and ``e_a`` the effort ``c_a`` was
measured at, so the model follows changes of the preset's restarts. So:

* the fit count of a trial on a series of ``n`` training points is
  ``F(n) = min(F_preset, f·T / (c_a·(e/e_a)·(n/129)^2.2))`` (``f = --quick-scale``,
  default 1), i.e. ``F × (n/129)^2.2`` constant until the preset's own count caps it, and
  ``s = F/F_preset``;
* EvoCov: ``N`` and ``G`` times ``√s`` each (so N·G times s; ``μ`` keeps its ratio to N);
  Random Search: ``N`` times s; Go With The First: ``G`` (initial individuals) times ``√s``
  and ``N`` (steps) such that ``G + N·(G(G+1)/2 − 1)`` is s times the preset's; GPSS: the
  most levels whose candidate count (upper bound: 4 at level 1, then
  ``8(2l−3) + 3(l−1)`` at level l) fits in F;
* floors keep each search a search: EvoCov N ≥ 6, G ≥ 2, μ ≥ 2; Random Search N ≥ 6;
  GWTF G ≥ 2, N ≥ 2; GPSS ≥ 2 levels (the floors make the largest series cost more than T);
* Powell (``evocov-sopl``): the paper's Powell budget ``ref_fun_call·350²/n²`` shrinks as
  1/n², which would make a SoPL fit cost the same at every n. The quick budget instead
  gives every Powell fit the nominal evaluation count of the preset's L-BFGS-B fit,
  ``E = n_screen + n_restarts·max_evals``, by setting ``ref_fun_call = ⌈E·n²/350²⌉`` per
  series, so SoPL fits scale like LML fits and the same rule applies.

:func:`predicted_core_seconds` applies the same cost model to any settings; the report
prints it per trial beside the measured times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from evocov_core.fitting.optimize import powell_budget
from evocov_core.searches.config import SearchConfig
from evocov_core.searches.presets import preset
from evocov_core.searches.wall_time import estimated_fits, fit_core_seconds, gpss_candidates, gwtf_fits

__all__ = [
    "ALGORITHMS",
    "QUICK_TRIAL_CORE_SECONDS",
    "Algorithm",
    "budget_config",
    "predicted_core_seconds",
    "quick_fits",
    "quick_scale",
    "settings_summary",
]

#: Target core-seconds of one quick trial (65 trials ≈ 1950 core-s ≈ 16 min on 2 idle cores
#: before the floors; about 20 min with them).
QUICK_TRIAL_CORE_SECONDS = 30.0


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


def _quick_base(key: str, n_train: int) -> SearchConfig:
    """``preset("quick-fixed")`` (the former ``quick``) for ``key``, with the quick budget's Powell evaluations."""
    alg = ALGORITHMS[key]
    base = preset("quick-fixed", alg.algorithm, metric=alg.metric)
    if base.optim.resolved_method == "powell":
        evals = base.n_screen + base.n_restarts * base.max_evals
        base = base.with_(ref_fun_call=max(1, math.ceil(evals * n_train**2 / 350**2)))
    return base


def quick_fits(key: str, n_train: int, factor: float = 1.0) -> float:
    """``F(n) = min(F_preset, f·T / fit_core_seconds)``: kernel fits of a quick trial (before floors)."""
    base = _quick_base(key, n_train)
    return min(float(estimated_fits(base)),
               factor * QUICK_TRIAL_CORE_SECONDS / fit_core_seconds(key, base, n_train))


def quick_scale(key: str, n_train: int, factor: float = 1.0) -> float:
    """``s = F(n)/F_preset``: the fraction of the quick preset's fits a trial gets."""
    alg = ALGORITHMS[key]
    return quick_fits(key, n_train, factor) / estimated_fits(preset("quick-fixed", alg.algorithm, metric=alg.metric))


def predicted_core_seconds(key: str, config: SearchConfig, n_train: int) -> float:
    """The cost model's core-seconds for one trial: ``fits × fit_core_seconds``."""
    return estimated_fits(config) * fit_core_seconds(key, config, n_train)


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
    base = _quick_base(key, n_train)
    s = quick_scale(key, n_train, factor)
    r = math.sqrt(s)
    changes: dict[str, object] = {}
    if alg.algorithm == "evocov":
        N = max(6, round(base.population * r))
        G = max(2, round(base.generations * r))
        mu = max(2, min(N - 1, round(base.mu * N / base.population)))
        changes.update(population=N, generations=G, mu=mu)
    elif alg.algorithm == "random":
        changes.update(population=max(6, round(base.population * s)))
    elif alg.algorithm == "gwtf":
        G = max(2, round(base.generations * r))
        target = gwtf_fits(base.generations, base.population) * s
        N = max(2, round((target - G) / max(G * (G + 1) // 2 - 1, 1)))
        changes.update(generations=G, population=N)
    elif alg.algorithm == "gpss":
        nb = len(base.base_kernels)
        target = gpss_candidates(base.generations, nb) * s
        levels = max([lev for lev in range(1, base.generations + 1) if gpss_candidates(lev, nb) <= target],
                     default=1)
        changes.update(generations=max(2, min(levels, base.generations)) if base.generations >= 2 else 1)
    return base.with_(**changes)


def settings_summary(config: SearchConfig, n_train: int, key: str | None = None) -> dict[str, object]:
    """The settings that vary between series and budgets, for tables (and the predicted cost)."""
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
    if key is not None:
        out["predicted_core_s"] = round(predicted_core_seconds(key, config, n_train), 1)
    return out

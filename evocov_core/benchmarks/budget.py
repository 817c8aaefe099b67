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
``c_a · (e/e_a) · (n/129)^2.2`` core-seconds (``bench scaling`` measured seconds per fit
∝ n^2.18 over the 13 series; PERF_NOTES.md n^2.1 for one LML), with ``c_a``
(:data:`FIT_CORE_SECONDS_AT_REF`) the mean CPU seconds per fit of algorithm ``a`` in a
whole quick trial on Airline (n_train = 129), measured on this 2-core machine, ``e`` the
fit effort of the settings (:func:`fit_effort`: ``n_screen + 3·n_restarts·max_evals``
evaluations for L-BFGS-B, the evaluation budget for Powell) and ``e_a`` the effort
``c_a`` was measured at (:data:`EFFORT_AT_REF`), so the model follows changes of the
preset's restarts. So:

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
import os
from dataclasses import dataclass

from evocov_core.fitting.optimize import powell_budget
from evocov_core.search import SearchConfig, preset

__all__ = [
    "ALGORITHMS",
    "COST_EXPONENT",
    "EFFORT_AT_REF",
    "FIT_CORE_SECONDS_AT_REF",
    "FIT_OVERHEAD_CORE_SECONDS",
    "QUICK_TRIAL_CORE_SECONDS",
    "REF_N",
    "Algorithm",
    "WallEstimate",
    "budget_config",
    "cost_key",
    "estimate_wall_time",
    "estimated_fits",
    "fit_core_seconds",
    "fit_effort",
    "format_duration",
    "predicted_core_seconds",
    "quick_fits",
    "quick_scale",
    "settings_summary",
]

#: n_train of 01-airline, the reference series of the cost model.
REF_N = 129

#: Target core-seconds of one quick trial (65 trials ≈ 1950 core-s ≈ 16 min on 2 idle cores
#: before the floors; about 20 min with them).
QUICK_TRIAL_CORE_SECONDS = 30.0

#: Mean CPU seconds per kernel fit over a whole quick trial on 01-airline (seed 0, the quick
#: budget's own settings), measured on the 2-core Xeon of this project on 2026-11-26 with the
#: code and preset("quick") of commit 832946f (1 L-BFGS-B run after 20 screened starts; SoPL
#: with 80 Powell evaluations per fit; GPSS with 3 runs), at the fit effort of
#: :data:`EFFORT_AT_REF`. Used only to size the quick budget. To recalibrate: run
#: ``bench reproduce --series 01-airline`` and take ``cpu_seconds / n_evaluations`` of
#: ``trials.csv``.
FIT_CORE_SECONDS_AT_REF: dict[str, float] = {
    "evocov-lml": 0.024,
    "evocov-sopl": 0.019,
    "random": 0.022,
    "gwtf": 0.018,
    "gpss": 0.119,
}

#: The fit effort (:func:`fit_effort`) ``FIT_CORE_SECONDS_AT_REF`` was measured at:
#: L-BFGS-B ``20 + 3·1·60``, GPSS ``20 + 3·3·60``, Powell 80 evaluations.
EFFORT_AT_REF: dict[str, float] = {
    "evocov-lml": 200.0,
    "evocov-sopl": 80.0,
    "random": 200.0,
    "gwtf": 200.0,
    "gpss": 560.0,
}

#: Exponent of the fit cost in n_train (``bench scaling`` measured seconds per fit ∝ n^2.18
#: over the 13 series, 129 … 909; PERF_NOTES.md n^2.1 for one LML).
COST_EXPONENT = 2.2


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


def fit_effort(config: SearchConfig, n_train: int) -> float:
    """Nominal work of one kernel fit, in metric evaluations.

    L-BFGS-B: ``n_screen + 3·n_restarts·max_evals`` (a gradient evaluation costs about 3
    plain ones, PERF_NOTES.md); Powell: its evaluation budget at ``n_train``.
    """
    if config.optim.resolved_method == "powell":
        return float(powell_budget(config.ref_fun_call, n_train))
    return float(config.n_screen + 3 * config.n_restarts * config.max_evals)


def fit_core_seconds(key: str, config: SearchConfig, n_train: int) -> float:
    """The cost model's core-seconds of one fit: ``c_a · effort/effort_ref · (n/129)^2.2``."""
    return (FIT_CORE_SECONDS_AT_REF[key] * fit_effort(config, n_train) / EFFORT_AT_REF[key]
            * (n_train / REF_N) ** COST_EXPONENT)


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
        target = _gwtf_fits(base.generations, base.population) * s
        N = max(2, round((target - G) / max(G * (G + 1) // 2 - 1, 1)))
        changes.update(generations=G, population=N)
    elif alg.algorithm == "gpss":
        nb = len(base.base_kernels)
        target = _gpss_candidates(base.generations, nb) * s
        levels = max([lev for lev in range(1, base.generations + 1) if _gpss_candidates(lev, nb) <= target],
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


# --- wall time of a fixed-count search ---------------------------------------------------------

#: Core-seconds every kernel fit costs beyond the cost model (Python, task hand-over, PSD
#: check), whatever n. With it the model meets the measured wall times of ``quick-fixed``
#: EvoCov searches (1500 fits, 2 workers, idle 2-core machine): Airline n = 129, 34 s
#: (``bench/results/search_quick/``, model 33 s); Mauna Loa n = 490, 358 s (354 s);
#: Temperature n = 899, about 1415 s (``bench/results/bench_fits.md``: 1.06 fits/s; 1302 s).
#: Without it the model said 18 s on Airline.
FIT_OVERHEAD_CORE_SECONDS = 0.02

#: The range shown around the central estimate. Measured / model: 1.0-1.2 for the
#: ``quick-fixed`` runs above (Airline seeds 1-6: 28-48 s, ``search_quick/n_screen.md``);
#: 0.43-0.84 for the first two generations of the ``paper`` settings, LML and SoPL, on
#: Airline and Mauna Loa (``bench/results/quick/estimate.json``: their kernels are shallower
#: than later ones'). A cache of fits lowers the low end further (kernels met again are free).
ESTIMATE_RANGE = (0.5, 1.5)

#: Seconds to start the worker processes of a run (each imports numpy, scipy and the package).
POOL_START_SECONDS = 3.0


def cost_key(config: SearchConfig) -> str:
    """The :data:`ALGORITHMS` key whose measured cost per fit applies to ``config``.

    Powell fits (the SoPL metric, or ``method="powell"``) cost what EvoCov SoPL's do;
    L-BFGS-B fits what the algorithm's own LML runs do.
    """
    if config.optim.resolved_method == "powell":
        return "evocov-sopl"
    return "evocov-lml" if config.algorithm == "evocov" else config.algorithm


@dataclass(frozen=True)
class WallEstimate:
    """How long a fixed-count search should take here, in wall seconds.

    Attributes
    ----------
    low, central, high : float
        The range and its middle.
    fits : int
        Kernel fits of the settings (an upper bound for GPSS, and when a cache of fits
        skips kernels met again).
    n_train : int
    workers : int
        Worker processes asked for.
    cores : int
        Cores they share (fits run in parallel on ``min(workers, cores)``).
    """

    low: float
    central: float
    high: float
    fits: int
    n_train: int
    workers: int
    cores: int

    @property
    def text(self) -> str:
        """E.g. "about 5–12 min on these 393 training points with 2 workers"."""
        lo, hi = format_duration(self.low), format_duration(self.high)
        if lo.split()[-1] == hi.split()[-1]:
            a, b = lo.split()[0], hi.split()[0]
            span = hi if a == b else f"{a}–{hi}"
        else:
            span = f"{lo} – {hi}"
        who = f"{self.workers} worker{'s' if self.workers != 1 else ''}"
        if self.workers > self.cores:
            who += f" on {self.cores} core{'s' if self.cores != 1 else ''}"
        return f"about {span} on these {self.n_train} training points with {who}"


def format_duration(seconds: float) -> str:
    """``"40 s"``, ``"12 min"``, ``"2.5 h"``, ``"3 days"``: two significant digits at most."""
    def short(v: float) -> str:
        return f"{v:.1f}".rstrip("0").rstrip(".") if v < 10 else f"{round(v):d}"

    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{short(seconds / 60)} min"
    if seconds < 48 * 3600:
        return f"{short(seconds / 3600)} h"
    return f"{short(seconds / 86400)} days"


def estimate_wall_time(config: SearchConfig, n_train: int, workers: int, cores: int | None = None) -> WallEstimate:
    """Wall time of a search with ``config`` on ``n_train`` points, from the cost model.

    Each fit costs :func:`fit_core_seconds` plus :data:`FIT_OVERHEAD_CORE_SECONDS`; with
    screening (``screen_points < n_train``) a candidate costs a fit on ``screen_points``
    points plus, for the promoted share, a refinement on all of them (one L-BFGS-B run of
    half the evaluations); the model choice (``select_top > 1``) refits that many kernels
    once. Fits run on ``min(workers, cores)`` processes, after :data:`POOL_START_SECONDS`.
    Meant for fixed counts (``time_budget = 0``); with a budget the run takes at most that.

    Parameters
    ----------
    config : SearchConfig
    n_train : int
        Training points of the data set.
    workers : int
        Worker processes (1 = serial in the calling process).
    cores : int, optional
        Cores available (default: this process's CPU affinity).
    """
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    workers, cores, n_train = max(1, int(workers)), max(1, int(cores)), max(1, int(n_train))
    key = cost_key(config)

    def fit_s(cfg: SearchConfig, n: int) -> float:
        return fit_core_seconds(key, cfg, n) + FIT_OVERHEAD_CORE_SECONDS

    fits = estimated_fits(config)
    if 0 < config.screen_points < n_train:
        promote = config.with_(n_screen=0, n_restarts=1, max_evals=max(10, round(config.max_evals * 0.5)))
        per_candidate = fit_s(config, config.screen_points) + config.promote_fraction * fit_s(promote, n_train)
    else:
        per_candidate = fit_s(config, n_train)
    core = fits * per_candidate
    if config.select_top > 1:
        core += config.select_top * fit_s(config.with_(n_screen=0, n_restarts=1), n_train)
    parallel = min(workers, cores)
    central = core / parallel + (POOL_START_SECONDS if workers > 1 else 0.0)
    low_factor = ESTIMATE_RANGE[0] * (0.7 if config.cache_fits else 1.0)  # a cache skips kernels met again
    return WallEstimate(low=central * low_factor, central=central, high=central * ESTIMATE_RANGE[1], fits=fits,
                        n_train=n_train, workers=workers, cores=cores)

"""How long a search should take here: the cost model of a kernel fit, and a fixed-count search's wall time.

The dashboard shows :func:`estimate_wall_time` beside a fixed count of fits (a search with no
time budget); the benchmarks (``bench/budget.py`` of a clone) size their ``quick`` budget
with the same model.

The cost model
--------------
A fit costs about ``c_a · (e/e_a) · (n/129)^2.2`` core-seconds (:func:`fit_core_seconds`;
``bench scaling`` measured seconds per fit ∝ n^2.18 over the 13 TSDL series; PERF_NOTES.md
n^2.1 for one LML), with

* ``c_a`` (:data:`FIT_CORE_SECONDS_AT_REF`) the mean CPU seconds per fit of cost key ``a`` (an
  algorithm and its fit method, :func:`cost_key`) in a whole search on Airline
  (n_train = 129), measured on the project's 2-core machine;
* ``e`` the fit effort of the settings (:func:`fit_effort`: ``n_screen + 3·n_restarts·max_evals``
  evaluations for L-BFGS-B, the evaluation budget for Powell) and ``e_a`` the effort ``c_a``
  was measured at (:data:`EFFORT_AT_REF`), so the model follows changes of restarts and
  evaluations.

A search makes :func:`estimated_fits` fits (exact for EvoCov, Random Search and Go With The
First; an upper bound for GPSS).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from evocov_core.fitting.optimize import powell_budget
from evocov_core.searches.config import SearchConfig

__all__ = [
    "COST_EXPONENT",
    "EFFORT_AT_REF",
    "ESTIMATE_RANGE",
    "FIT_CORE_SECONDS_AT_REF",
    "FIT_OVERHEAD_CORE_SECONDS",
    "POOL_START_SECONDS",
    "REF_N",
    "WallEstimate",
    "cost_key",
    "estimate_wall_time",
    "estimated_fits",
    "fit_core_seconds",
    "fit_effort",
    "format_duration",
    "gpss_candidates",
    "gwtf_fits",
]

#: n_train of 01-airline, the reference series of the cost model.
REF_N = 129

#: Mean CPU seconds per kernel fit over a whole quick trial on 01-airline (seed 0, the quick
#: budget's own settings), measured on the 2-core Xeon of this project on 2026-11-26 with the
#: code and preset("quick") of commit 832946f (1 L-BFGS-B run after 20 screened starts; SoPL
#: with 80 Powell evaluations per fit; GPSS with 3 runs), at the fit effort of
#: :data:`EFFORT_AT_REF`. Keyed by :func:`cost_key` (the benchmark's algorithm keys). To
#: recalibrate, from a clone: run ``python -m bench reproduce --series 01-airline`` and take
#: ``cpu_seconds / n_evaluations`` of ``trials.csv``.
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


def fit_effort(config: SearchConfig, n_train: int) -> float:
    """Nominal work of one kernel fit, in metric evaluations.

    Parameters
    ----------
    config : SearchConfig
    n_train : int
        Training points the fit uses.

    Returns
    -------
    float
        L-BFGS-B: ``n_screen + 3·n_restarts·max_evals`` (a gradient evaluation costs about 3
        plain ones, PERF_NOTES.md); Powell: its evaluation budget at ``n_train``.
    """
    if config.optim.resolved_method == "powell":
        return float(powell_budget(config.ref_fun_call, n_train))
    return float(config.n_screen + 3 * config.n_restarts * config.max_evals)


def fit_core_seconds(key: str, config: SearchConfig, n_train: int) -> float:
    """The cost model's core-seconds of one fit: ``c_a · effort/effort_ref · (n/129)^2.2``.

    Parameters
    ----------
    key : str
        A key of :data:`FIT_CORE_SECONDS_AT_REF` (see :func:`cost_key`).
    config : SearchConfig
    n_train : int
        Training points the fit uses.

    Returns
    -------
    float
    """
    return (FIT_CORE_SECONDS_AT_REF[key] * fit_effort(config, n_train) / EFFORT_AT_REF[key]
            * (n_train / REF_N) ** COST_EXPONENT)


def gpss_candidates(levels: int, bases: int = 4) -> int:
    """Upper bound on GPSS's kernel fits over ``levels`` levels (structures grow one leaf a level).

    Parameters
    ----------
    levels : int
    bases : int
        Base kernels (4 at level 1, then ``2·bases·(2l−3) + (bases−1)·(l−1)`` at level l).

    Returns
    -------
    int
    """
    total = 0
    for lev in range(1, levels + 1):
        total += bases if lev == 1 else 2 * bases * (2 * lev - 3) + (bases - 1) * (lev - 1)
    return total


def gwtf_fits(G: int, N: int) -> int:
    """Kernel fits of Go With The First with ``G`` initial individuals and ``N`` steps."""
    return G + N * max(G * (G + 1) // 2 - 1, 1)


def estimated_fits(config: SearchConfig) -> int:
    """Kernel fits a search with ``config`` makes (GPSS: an upper bound; EvoCov: exact).

    Parameters
    ----------
    config : SearchConfig

    Returns
    -------
    int
    """
    a = config.algorithm
    if a == "evocov":
        return config.population * config.generations
    if a == "random":
        return config.population
    if a == "gwtf":
        return gwtf_fits(config.generations, config.population)
    return gpss_candidates(config.generations, len(config.base_kernels))


def cost_key(config: SearchConfig) -> str:
    """The :data:`FIT_CORE_SECONDS_AT_REF` key whose measured cost per fit applies to ``config``.

    Powell fits (the SoPL metric, or ``method="powell"``) cost what EvoCov SoPL's do;
    L-BFGS-B fits what the algorithm's own LML runs do.

    Parameters
    ----------
    config : SearchConfig

    Returns
    -------
    str
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
    """A duration for people: two significant digits at most.

    Parameters
    ----------
    seconds : float

    Returns
    -------
    str
        ``"40 s"``, ``"12 min"``, ``"2.5 h"``, ``"3 days"``.
    """
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

    Returns
    -------
    WallEstimate
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

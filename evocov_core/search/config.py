"""Search settings, their validation, and the presets.

Presets
-------
``quick``        a time budget of 60 s wall (the dashboard's default), every part of the
                 budgeted search on: canonical fit cache, screening on a window, seeded
                 GPSS structures and expansions, data-tied bounds, the returned model
                 chosen on a held-out tail of the training range, and the grammar with
                 ABCD's change-point operator.
``standard``     the same with 5 minutes.
``paper``        the paper's section 6.2 settings, no time limit, none of the above.
``quick-fixed``  the former ``quick``: a fixed count of fits (N, G exact), no time limit;
                 what ``bench reproduce --budget quick`` sizes (same seed, same result).

One flat, frozen :class:`SearchConfig` serves every algorithm (it is what the CLI
parses, the dashboard edits and the run store saves). What ``population`` and
``generations`` mean depends on the algorithm, as in the paper's section 6.2:

=============  =========================================  =====================================
algorithm      ``population`` (N)                         ``generations`` (G)
=============  =========================================  =====================================
``evocov``     population size                            generations
``random``     kernels drawn (paper: 20000)               (unused)
``gwtf``       hill-climbing mutations per individual     initial individuals (paper: 13)
               (paper: 200)
``gpss``       (unused)                                   search depth (levels; GPSS: 10)
=============  =========================================  =====================================
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

from ..metrics import METRICS
from ..optimize import HyperSpace, OptimConfig
from ..psd import PSDConfig
from ..variation import VariationConfig

__all__ = ["ALGORITHMS", "PRESETS", "SearchConfig", "preset"]

ALGORITHMS = ("evocov", "random", "gwtf", "gpss")
ALGORITHM_LABELS = {
    "evocov": "EvoCov",
    "random": "Random Search",
    "gwtf": "Go With The First",
    "gpss": "GPSS baseline",
}
GPSS_BASE_KERNELS = ("SE", "PER", "LIN", "RQ")


class ConfigError(ValueError):
    """An invalid setting; the message names it and the accepted range."""


@dataclass(frozen=True)
class SearchConfig:
    """Settings of a kernel search (paper defaults; see the module docstring).

    Attributes
    ----------
    algorithm : str
        ``evocov``, ``random``, ``gwtf`` or ``gpss``.
    population, generations : int
        N and G (meaning per algorithm in the module docstring).
    mu : int
        Individuals kept by truncation selection (EvoCov), ``1 ≤ μ < N``.
    p_mutation, p_crossover : float
        Variation probabilities, summing to 1.
    beta : float
        Restart threshold on the relative improvement of the best BIC.
    patience : int
        Consecutive generations with relative improvement ≤ β before a restart. The paper
        restarts after one (``patience = 1``); short runs waste less with more.
    d_min, d_max : int
        Depth limits of random generation (Algorithm 2).
    o_max : int
        Bloat limit on the depth of variation children.
    rho_max : int
        Attempts of a variation operator before a parent is returned unchanged.
    psd_w : int
        Random data sets of the PSD check.
    n_hyper : int
        Pool of hyperparameter slots.
    metric : str
        Hyperparameter metric: ``lml``, ``loocv``, ``posterior_lml``, ``sopl``, ``rmse``.
    method : str
        Optimiser: ``auto``, ``lbfgs`` or ``powell``.
    n_restarts, max_evals : int
        L-BFGS-B starts and evaluations per start.
    n_screen : int
        Random starts scored before L-BFGS-B runs from the best ``n_restarts``. Searches
        screen 20 (single fits screen 50): on Airline, 50 made quick searches 1.3× slower
        with a worse median test RMSE (``bench/results/search_quick/n_screen.md``).
    ref_fun_call : int
        Powell budget reference (``max_fun_call = ref · 350²/n²``).
    sigma_theta : float
        Spread of inherited starts (log space).
    init : str
        ``roles`` or ``paper`` starting points for new kernels.
    metric_split : float
        Fraction of the training x-range used as train-test by the split metrics.
    base_kernels : tuple of str
        GPSS base kernels.
    require_input : bool
        Discard kernels that do not depend on x (constants) when generating and varying
        (see :class:`~evocov_core.variation.VariationConfig`; the paper keeps them).
    time_budget : float
        Wall-clock seconds for the whole search, model choice included; 0 = no limit
        (fixed counts: N, G exact). With a budget, ``generations`` is only a cap: the
        search stops itself when the time is spent and returns the best kernel so far.
    cache_fits : bool
        Never fit the same canonical kernel twice in a run: a kernel met again (a
        selected parent, a child equal to a kernel seen before) keeps its first fit.
    screen_points : int
        When the training data have more points than this, new candidates are first
        fitted on this many of them (half spread over the whole range, half the most
        recent, contiguous) and only the best ``promote_fraction`` of each batch, by that
        BIC, are fitted on all the data, from the values found. 0 = off.
    promote_fraction : float
        Share of a screened batch promoted to full fits (at least one).
    seed_fraction : float
        Share of the first population made of GPSS structures (base kernels SE, PER,
        LIN, RQ, their pairwise sums and products); the rest are random trees.
    p_expand : float
        Probability that a mutation is a GPSS-style expansion (``S + B``, ``S × B`` of a
        subtree ``S`` with a base kernel ``B``, or ``B`` replacing a base-kernel subtree).
    select_top : int
        The returned kernel is chosen among the ``select_top`` lowest-BIC distinct
        kernels by how well, refitted on the first part of the training range, they
        predict its last ``metric_split`` part (posterior LML). 1 = the lowest BIC.
    data_bounds : bool
        Tie lengthscale and period bounds to the data
        (:func:`~evocov_core.optimize.slot_bounds`).
    changepoints : bool
        Grammar option: random trees, mutations and GPSS-style expansions also use
        ABCD's change-point operator (:mod:`evocov_core.grammar`). Off in the paper's
        settings, whose Table 2 grammar has none.
    changewindows : bool
        Grammar option: random trees, mutations and GPSS-style expansions also use ABCD's
        change-window operator. Off in every preset, so that their runs draw the trees they
        drew before the operator existed (same seed, same result).
    """

    algorithm: str = "evocov"
    population: int = 141
    generations: int = 141
    mu: int = 14
    p_mutation: float = 0.4
    p_crossover: float = 0.6
    beta: float = 1e-5
    patience: int = 1
    d_min: int = 5
    d_max: int = 15
    o_max: int = 40
    rho_max: int = 250
    psd_w: int = 20
    n_hyper: int = 20
    metric: str = "lml"
    method: str = "auto"
    n_restarts: int = 3
    max_evals: int = 60
    n_screen: int = 20
    ref_fun_call: int = 300
    sigma_theta: float = 0.1
    init: str = "roles"
    metric_split: float = 0.1
    base_kernels: tuple[str, ...] = GPSS_BASE_KERNELS
    require_input: bool = False
    time_budget: float = 0.0
    cache_fits: bool = False
    screen_points: int = 0
    promote_fraction: float = 0.3
    seed_fraction: float = 0.0
    p_expand: float = 0.0
    select_top: int = 1
    data_bounds: bool = False
    changepoints: bool = False
    changewindows: bool = False

    def __post_init__(self) -> None:
        def need(cond: bool, msg: str) -> None:
            if not cond:
                raise ConfigError(msg)

        need(self.algorithm in ALGORITHMS, f"algorithm must be one of {', '.join(ALGORITHMS)}, got {self.algorithm!r}")
        for name in ("population", "generations", "mu", "d_max", "o_max", "rho_max", "psd_w", "n_hyper",
                     "n_restarts", "max_evals", "n_screen", "ref_fun_call", "screen_points", "select_top"):
            v = getattr(self, name)
            need(isinstance(v, int) and not isinstance(v, bool), f"{name} must be a whole number, got {v!r}")
        need(self.population >= 2 or self.algorithm == "gpss",
             f"population (N) must be at least 2, got {self.population}")
        need(self.generations >= 1, f"generations (G) must be at least 1, got {self.generations}")
        if self.algorithm == "evocov":
            need(1 <= self.mu < self.population,
                 f"mu must satisfy 1 <= mu < population (N = {self.population}), got mu = {self.mu}")
        need(0.0 <= self.p_mutation <= 1.0, f"p_mutation must be in [0, 1], got {self.p_mutation}")
        need(0.0 <= self.p_crossover <= 1.0, f"p_crossover must be in [0, 1], got {self.p_crossover}")
        need(abs(self.p_mutation + self.p_crossover - 1.0) < 1e-9,
             f"p_mutation + p_crossover must equal 1, got {self.p_mutation} + {self.p_crossover}")
        need(self.beta >= 0.0, f"beta must be non-negative, got {self.beta}")
        need(isinstance(self.patience, int) and self.patience >= 1, f"patience must be at least 1, got {self.patience}")
        need(isinstance(self.d_min, int) and 0 <= self.d_min <= self.d_max,
             f"need 0 <= d_min <= d_max, got d_min = {self.d_min}, d_max = {self.d_max}")
        need(self.d_max <= 30, f"d_max must be at most 30, got {self.d_max}")
        need(self.o_max >= 1 and self.o_max <= 200, f"o_max must be in [1, 200], got {self.o_max}")
        need(self.rho_max >= 1, f"rho_max must be at least 1, got {self.rho_max}")
        need(1 <= self.psd_w <= 1000, f"psd_w (w) must be in [1, 1000], got {self.psd_w}")
        need(1 <= self.n_hyper <= 1000, f"n_hyper must be in [1, 1000], got {self.n_hyper}")
        need(self.metric in METRICS, f"metric must be one of {', '.join(METRICS)}, got {self.metric!r}")
        need(0.0 < self.metric_split < 0.9, f"metric_split must be in (0, 0.9), got {self.metric_split}")
        need(bool(self.base_kernels) and all(b in ("SE", "PER", "LIN", "RQ", "C") for b in self.base_kernels),
             f"base_kernels must be a non-empty subset of SE, PER, LIN, RQ, C, got {self.base_kernels}")
        need(isinstance(self.time_budget, (int, float)) and 0.0 <= self.time_budget <= 7 * 86400,
             f"time_budget must be between 0 (no limit) and a week in seconds, got {self.time_budget}")
        need(self.screen_points == 0 or self.screen_points >= 20,
             f"screen_points must be 0 (off) or at least 20, got {self.screen_points}")
        need(0.0 < self.promote_fraction <= 1.0, f"promote_fraction must be in (0, 1], got {self.promote_fraction}")
        need(0.0 <= self.seed_fraction <= 1.0, f"seed_fraction must be in [0, 1], got {self.seed_fraction}")
        need(0.0 <= self.p_expand <= 1.0, f"p_expand must be in [0, 1], got {self.p_expand}")
        need(1 <= self.select_top <= 100, f"select_top must be in [1, 100], got {self.select_top}")
        try:
            self.optim  # noqa: B018 - validates the optimiser settings
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    @property
    def optim(self) -> OptimConfig:
        return OptimConfig(metric=self.metric, method=self.method, n_restarts=self.n_restarts,
                           max_evals=self.max_evals, n_screen=self.n_screen, ref_fun_call=self.ref_fun_call,
                           sigma_theta=self.sigma_theta,
                           init=self.init, space=HyperSpace(), data_bounds=self.data_bounds)

    @property
    def variation(self) -> VariationConfig:
        return VariationConfig(o_max=self.o_max, rho_max=self.rho_max, require_input=self.require_input,
                               psd=PSDConfig(w=self.psd_w))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["base_kernels"] = list(self.base_kernels)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> SearchConfig:
        """Build from a dict (unknown keys refused with a clear message)."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ConfigError(f"unknown setting(s): {', '.join(unknown)}")
        d = dict(d)
        if "base_kernels" in d:
            d["base_kernels"] = tuple(d["base_kernels"])
        return cls(**d)

    def with_(self, **changes: object) -> SearchConfig:
        return replace(self, **changes)  # type: ignore[arg-type]


# The paper's section 6.2 settings, per algorithm.
_PAPER: dict[str, dict] = {
    "evocov": dict(population=141, generations=141, mu=14),
    "random": dict(population=20000, generations=1),
    "gwtf": dict(population=200, generations=13),
    "gpss": dict(generations=10),
}
# About a minute on 2 cores for Airline (n_train = 129); see bench/ for the evidence.
_QUICK: dict[str, dict] = {
    "evocov": dict(population=50, generations=30, mu=8, patience=3, d_min=3, d_max=8, psd_w=12, n_restarts=1,
                   require_input=True),
    "random": dict(population=1500, generations=1, d_min=3, d_max=8, psd_w=12, n_restarts=1, require_input=True),
    "gwtf": dict(population=40, generations=8, d_min=3, d_max=8, psd_w=12, n_restarts=1, require_input=True),
    "gpss": dict(generations=3, n_restarts=3),
}
# Budgeted presets: what a dashboard user gets. The parts and their measured contribution:
# bench/results/accuracy/ (``bench accuracy --variants ...``).
_BUDGETED_PARTS = dict(cache_fits=True, data_bounds=True, select_top=5, changepoints=True)
_EVOLVE = dict(population=40, generations=100_000, mu=8, patience=3, d_min=3, d_max=8, psd_w=12, n_restarts=1,
               require_input=True, screen_points=240, promote_fraction=0.3, seed_fraction=0.5, p_expand=0.3,
               **_BUDGETED_PARTS)


def _budgeted(seconds: float) -> dict[str, dict]:
    return {
        "evocov": dict(_EVOLVE, time_budget=seconds),
        "random": dict(_QUICK["random"], population=100_000, screen_points=240, time_budget=seconds,
                       **_BUDGETED_PARTS),
        "gwtf": dict(_QUICK["gwtf"], screen_points=240, time_budget=seconds, **_BUDGETED_PARTS),
        "gpss": dict(generations=10, n_restarts=3, time_budget=seconds, **_BUDGETED_PARTS),
    }


PRESETS = {"quick": _budgeted(60.0), "standard": _budgeted(300.0), "paper": _PAPER, "quick-fixed": _QUICK}


def preset(name: str, algorithm: str = "evocov", **overrides: object) -> SearchConfig:
    """The settings of preset ``name`` (see the module docstring) for an algorithm, with overrides."""
    if name not in PRESETS:
        raise ConfigError(f"preset must be one of {', '.join(PRESETS)}, got {name!r}")
    if algorithm not in ALGORITHMS:
        raise ConfigError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    return SearchConfig(algorithm=algorithm, **{**PRESETS[name][algorithm], **overrides})  # type: ignore[arg-type]

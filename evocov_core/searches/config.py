"""Search settings, their validation, and the presets.

Presets
-------
``quick``        a time budget of 60 s wall (the dashboard's default), every part of the
                 budgeted search on: canonical fit cache, screening on a window, seeded
                 GPSS structures and expansions, data-tied bounds, the returned model
                 chosen on a held-out tail of the training range, and ABCD's change-point
                 operator, made only by the GPSS expansions ``S -> CP(S, B)``, ``CP(B, S)``
                 (``changepoints_by_expansion``): drawn anywhere in the tree, a search uses
                 it to fit the training range piecewise (``bench/results/accuracy/standard/``,
                 ``bench/results/corpus/quick-35-cpexp/``, variants ``cp-everywhere`` and
                 ``no-changepoints``).
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

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, NamedTuple

from evocov_core.fitting.optimize import HyperSpace, OptimConfig
from evocov_core.fitting.priors import PRIORS
from evocov_core.fitting.subset import DEFAULT_MAX_POINTS
from evocov_core.language.grammar import Grammar, get_grammar
from evocov_core.language.psd import PSDConfig
from evocov_core.searches.rules import (
    Algorithm,
    CalibrationRule,
    ChoiceRule,
    LongChoiceRule,
    Metric,
    Optimiser,
    PriorRule,
    Rule,
    StartRule,
)
from evocov_core.searches.structures import SEED_BASES
from evocov_core.searches.variation import VariationConfig

__all__ = [
    "ALGORITHMS",
    "GROUPS",
    "PRESETS",
    "BudgetSettings",
    "ChoiceSettings",
    "EvolutionSettings",
    "FittingSettings",
    "ForecastSettings",
    "GrammarSettings",
    "SearchConfig",
    "Setting",
    "SettingField",
    "preset",
    "settings",
    "with_derived",
]

ALGORITHMS = Algorithm.values()
ALGORITHM_LABELS = {
    "evocov": "EvoCov",
    "random": "Random Search",
    "gwtf": "Go With The First",
    "gpss": "GPSS baseline",
}
GPSS_BASE_KERNELS = ("SE", "PER", "LIN", "RQ")


class ConfigError(ValueError):
    """An invalid setting; the message names it and the accepted range."""


_EVOCOV = frozenset({"evocov"})
#: The algorithms that grow random trees (and so read the tree-generation settings).
_GROWS = frozenset({"evocov", "random", "gwtf"})
_ALL = frozenset(ALGORITHMS)

#: Setting groups, in the order the dashboard shows them, with their titles.
GROUPS = {
    "algorithm": "Algorithm",
    "budget": "Time budget",
    "evolution": "Population and evolution",
    "trees": "Tree generation and variation",
    "fitting": "Hyperparameter fitting",
    "budgeted": "Budgeted search: screening, seeds, model choice",
}


@dataclass(frozen=True)
class Setting:
    """What one :class:`SearchConfig` field means to a person: the single source of the CLI
    options, the dashboard's widgets and the per-field validation.

    Attributes
    ----------
    label, help : str
        Widget label and help text (the CLI's help too).
    group : str
        A key of :data:`GROUPS`.
    used_by : frozenset of str
        The algorithms that read the setting (the dashboard disables it for the others).
    lo, hi : float, optional
        Inclusive bounds (validation, widget limits, CLI help).
    step : float, optional
        Widget step.
    fmt : str, optional
        Widget number format.
    choices : tuple of str, optional
        Allowed values (a subset of them for a tuple setting).
    labels : dict, optional
        Per-algorithm labels (``population`` means N kernels drawn for Random Search).
    derived_from : str, optional
        Set by the dashboard from another setting (``p_crossover = 1 − p_mutation``).
    """

    label: str
    help: str
    group: str
    used_by: frozenset[str] = _ALL
    lo: float | None = None
    hi: float | None = None
    step: float | None = None
    fmt: str | None = None
    choices: tuple[str, ...] | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    derived_from: str | None = None

    def label_for(self, algorithm: str) -> str:
        return self.labels.get(algorithm, self.label)

    @property
    def range_text(self) -> str:
        """The bounds in words: ``in [1, 100000]``, ``at least 0``."""
        def num(v: float) -> str:
            return str(int(v)) if float(v).is_integer() else f"{v:g}"

        if self.lo is not None and self.hi is not None:
            return f"in [{num(self.lo)}, {num(self.hi)}]"
        return f"at least {num(self.lo)}" if self.lo is not None else f"at most {num(self.hi)}"


def _s(default: Any, label: str, help: str, group: str, used_by: frozenset[str] = _ALL, **kw: Any) -> Any:
    """A dataclass field carrying its :class:`Setting`."""
    return field(default=default, metadata={"setting": Setting(label, help, group, used_by, **kw)})


# SearchConfig's settings, group by group, in their declaration order (the order of the CLI's options,
# the dashboard's widgets and the stored settings). Each group is a frozen dataclass of its own;
# SearchConfig inherits them all, so its fields are theirs, in that order.
@dataclass(frozen=True)
class EvolutionSettings:
    """The algorithm and its population and evolution settings."""

    algorithm: Algorithm = _s(Algorithm.EVOCOV, "Algorithm", "The search algorithm (module docstring).", "algorithm",
                        choices=ALGORITHMS)
    population: int = _s(141, "Population size N", "EvoCov: individuals per generation. Random Search: kernels "
                         "drawn. Go With The First: hill-climbing mutations per individual.", "evolution",
                         _GROWS, lo=2, hi=1_000_000,
                         labels={"random": "Kernels drawn N", "gwtf": "Mutations per individual N"})
    generations: int = _s(141, "Generations G", "EvoCov: generations. Go With The First: initial individuals. "
                          "GPSS: levels of the greedy search. With a time budget, only a cap (the budgeted "
                          "presets: 100000).", "evolution", frozenset({"evocov", "gwtf", "gpss"}), lo=1,
                          hi=1_000_000, labels={"gwtf": "Initial individuals G", "gpss": "Search depth G (levels)"})
    mu: int = _s(14, "Survivors μ", "Individuals kept by truncation selection each generation (1 ≤ μ < N).",
                 "evolution", _EVOCOV, lo=1, hi=1_000_000)
    p_mutation: float = _s(0.4, "Mutation probability p_m", "Each child comes from a mutation with probability "
                           "p_m, else from a crossover.", "evolution", _EVOCOV, lo=0.0, hi=1.0, step=0.05,
                           fmt="%.2f")
    p_crossover: float = _s(0.6, "Crossover probability p_cx", "1 − p_m (the page derives it from p_m).",
                            "evolution", _EVOCOV, lo=0.0, hi=1.0, step=0.05, fmt="%.2f", derived_from="p_mutation")
    beta: float = _s(1e-5, "Restart threshold β", "Restart when the best BIC improves by less than this relative "
                     "amount in a generation.", "evolution", _EVOCOV, lo=0.0, step=1e-6, fmt="%.1e")
    patience: int = _s(1, "Restart patience", "Consecutive generations with a relative improvement ≤ β before a "
                       "restart (the paper: 1).", "evolution", _EVOCOV, lo=1, hi=10_000)


@dataclass(frozen=True)
class FittingSettings:
    """How trees are generated and varied, and how each kernel is fitted.

    Notes
    -----
    The evidence behind defaults (each field's ``help`` says what it is):

    n_screen : int
        Random starts scored before L-BFGS-B runs from the best ``n_restarts``. Searches
        screen 20 (single fits screen 50): on Airline, 50 made quick searches 1.3× slower
        with a worse median test RMSE (``bench/results/search_quick/n_screen.md``).
    """

    d_min: int = _s(5, "Minimum depth d_min", "Depth limits of randomly generated trees.", "trees", _GROWS,
                    lo=0, hi=30)
    d_max: int = _s(15, "Maximum depth d_max", "Depth limits of randomly generated trees (≤ 30).", "trees",
                    _GROWS, lo=0, hi=30)
    o_max: int = _s(40, "Bloat limit o_max", "Children of variation deeper than this are refused.", "trees",
                    _GROWS, lo=2, hi=200)
    rho_max: int = _s(250, "Attempts ρ_max", "Tries of a variation operator before the parent is kept unchanged.",
                      "trees", _GROWS, lo=1, hi=100_000)
    psd_w: int = _s(20, "PSD check data sets w", "Random data sets each new kernel must be positive "
                    "semi-definite on.", "trees", _GROWS, lo=1, hi=1000)
    n_hyper: int = _s(20, "Hyperparameter slots n_hyper", "Size of the pool of hyperparameter slots.", "trees",
                      _GROWS, lo=1, hi=1000)
    metric: Metric = _s(
        Metric.LML, "Metric", "What the optimiser maximises for each kernel's hyperparameters. The search "
                     "itself always ranks kernels by BIC.", "fitting", choices=Metric.values())
    method: Optimiser = _s(
        Optimiser.AUTO, "Optimiser", "auto: L-BFGS-B for LML and LOOCV (they have gradients), Powell "
                     "otherwise.", "fitting", choices=Optimiser.values())
    n_restarts: int = _s(3, "Restarts", "L-BFGS-B starting points per kernel.", "fitting", lo=1, hi=100)
    max_evals: int = _s(60, "Max evaluations", "Metric evaluations per L-BFGS-B start.", "fitting", lo=2,
                        hi=100_000)
    n_screen: int = _s(20, "Screened starts", "Random starting points scored (metric only) before L-BFGS-B runs "
                       "from the best of them; 0 turns screening off.", "fitting", lo=0, hi=100_000)
    ref_fun_call: int = _s(300, "Powell ref_fun_call", "Powell budget: ref · 350² / n² evaluations.", "fitting",
                           lo=1, hi=100_000)
    sigma_theta: float = _s(0.1, "σ_θ of inherited starts", "Spread (log space) of starts inherited from "
                            "parents.", "fitting", lo=0.0, hi=10.0, step=0.05, fmt="%.2f")
    init: StartRule = _s(
        StartRule.ROLES, "Starting values", "roles: data-aware ranges per slot role. paper: uniform in the "
                   "search box.", "fitting", choices=StartRule.values())
    priors: PriorRule = _s(
        PriorRule.NONE, "Hyperparameter priors", "none: each kernel's hyperparameters maximise the likelihood. "
        "corpus: they maximise the posterior, under priors by slot role learned on the development corpus "
        "(BIC is then taken at that mode); panel: under those a panel learned from its own series (a panel run "
        "with panel priors). Only with the LML metric.", "fitting", choices=PriorRule.values())
    metric_split: float = _s(0.1, "Held-out share of the training range", "The last share of the training "
                             "x-range that the split metrics (posterior LML, SoPL) and the choice of the returned "
                             "kernel hold out.", "fitting", lo=0.05, hi=0.85, step=0.05, fmt="%.2f")
    base_kernels: tuple[str, ...] = _s(GPSS_BASE_KERNELS, "GPSS base kernels", "Base kernels the greedy search "
                                       f"combines (GPSS: {', '.join(GPSS_BASE_KERNELS)}).", "evolution",
                                       frozenset({"gpss"}), choices=("SE", "PER", "LIN", "RQ", "C"))
    require_input: bool = _s(False, "Only kernels that depend on x", "Discard constant kernels when generating "
                             "and varying trees (the paper keeps them).", "trees", _GROWS)


@dataclass(frozen=True)
class BudgetSettings:
    """The time budget, the fit cache, screening and the seeds of a budgeted search.

    Notes
    -----
    The evidence behind defaults (each field's ``help`` says what it is):

    promote_fraction : float
        Share of a screened batch promoted to full fits (at least one). 0.15 instead of
        the presets' 0.3 was not better at ``standard`` (20 trials: lower test RMSE in 7,
        higher in 13; ``bench/results/accuracy/standard/``, variant ``promote-15``).
    naive_seeds : bool
        Every search, not only those on long series, begins with the GP forms of the naive
        forecasts (:func:`~evocov_core.searches.spectral_seeds.naive_seeds`: ``PER × M12`` at the
        longest clear period, ``M12 + LIN``), offered to the model choice whatever their BIC.
        Off in every preset: on the development corpus it was worse (paired 1.23 on 20 series,
        ``bench/results/corpus/quick-36-naive/``). Long series (fitted on a subset) always get them.
    reseed_restarts : bool
        A restart draws ``seed_fraction`` of its new population from the GPSS structures too
        (a fresh draw), not only the first population: the paper's restart is all random
        trees, so a long budgeted search spent its later epochs away from the seeded
        structures that make the first epoch good. Off in every preset: at ``quick`` it
        made no measurable difference (``bench/results/accuracy/quick-reseed/``, 65 pairs:
        test RMSE ratio 0.99, standard error of the mean log 0.067). At ``standard``, which
        restarts often, it made 2.1x the generations and a lower BIC in 20 of 26 trials, but
        not better forecasts (``bench/results/accuracy/standard-lags/``, 26 pairs: 1.006,
        standard error 0.12).
    seed_evals : int
        Cap on the evaluations of the one L-BFGS-B run that fits each seed of a long series
        (the ``seed`` stage, :mod:`~evocov_core.searches.stages`); 0 = ``max_evals``. At 60
        evaluations taylor's seeds stop short of their optimum (``docs/long-series.md``, (g)),
        but 300 at ``quick`` was worse on the long-series development set (paired 1.076, SE of
        the log 0.034; ``bench/results/long-dev/quick-seed-evals-300/``): every preset keeps 0.
    """

    time_budget: float = _s(0.0, "Time budget (seconds)", "Wall-clock time for the whole search on this machine, "
                            "the choice of the returned kernel included; the search sizes and stops itself and "
                            "returns the best kernel found. 0 = no limit: exactly N × G fits (reproducible: same "
                            "seed, same result).", "budget", lo=0.0, hi=7 * 86400.0, step=30.0)
    cache_fits: bool = _s(False, "Never refit a kernel", "A kernel met again (same canonical form) keeps its "
                          "first fit.", "budgeted")
    screen_points: int = _s(0, "Screening points", "Above this many training points, new kernels are first "
                            "fitted on this many (half spread over the range, half the most recent) and only the "
                            "best share is fitted on all the data. 0 = off, else at least 20.", "budgeted", lo=0,
                            hi=100_000)
    fit_points: int = _s(DEFAULT_MAX_POINTS, "Points an exact fit uses", "Long series: above this many training "
                         "points, every fit and forecast is an exact GP on a subset of them, the most recent 3/4 "
                         "contiguous and 1/4 spread over the earlier history (evocov_core/fitting/subset.py; the "
                         "result says so). 0 = every point (an exact GP costs O(n³) time and O(n²) memory).",
                         "budgeted", lo=0, hi=1_000_000)
    promote_fraction: float = _s(0.3, "Share promoted", "Share of a screened batch fitted on all the data.",
                                 "budgeted", lo=0.0, hi=1.0, step=0.05, fmt="%.2f")
    seed_bases: tuple[str, ...] = _s(SEED_BASES, "Base kernels of the seeds and expansions", "The base kernels "
                                     "the seeded structures (each base, their pairwise sums and products) and the "
                                     "GPSS expansions of a budgeted search are made of. M12 is the Matérn-1/2 "
                                     "(Ornstein-Uhlenbeck) kernel: a level that wanders, whose forecast stays near "
                                     "the last values with a spread that grows.", "budgeted", _EVOCOV,
                                     choices=("SE", "PER", "LIN", "RQ", "C", "M12"))
    seed_fraction: float = _s(0.0, "Seeded share of the first population", "GPSS structures (SE, PER, LIN, RQ, "
                              "their pairwise sums and products) in the first population.", "budgeted", _EVOCOV,
                              lo=0.0, hi=1.0, step=0.05, fmt="%.2f")
    reseed_restarts: bool = _s(False, "Seed restarts too", "Each restart's new population gets the seeded "
                               "share of GPSS structures as well, not only the first one.", "budgeted", _EVOCOV)
    naive_seeds: bool = _s(False, "Naive-forecast seeds on every series", "Begin every search, not only those on "
                           "long series, with the GP forms of seasonal naive (a periodic kernel whose cycle "
                           "drifts, PER x M12, at the longest clear period) and of the random walk with drift "
                           "(M12 + LIN), offered to the model choice whatever their BIC.", "budgeted", _EVOCOV)
    seed_evals: int = _s(0, "Evaluations of a spectral seed's fit", "Long series: the cap on the metric "
                         "evaluations of the one L-BFGS-B run that fits each spectral or naive seed from its "
                         "given values. 0 = as Max evaluations.", "budgeted", _EVOCOV, lo=0, hi=100_000)
    p_expand: float = _s(0.0, "GPSS expansions among mutations", "Probability that a mutation adds or multiplies "
                         "a base kernel, or swaps one.", "budgeted", _EVOCOV, lo=0.0, hi=1.0, step=0.05,
                         fmt="%.2f")


@dataclass(frozen=True)
class ChoiceSettings:
    """How the returned kernel is chosen and its intervals calibrated."""

    select_top: int = _s(1, "Choose among the K lowest-BIC kernels", "The returned kernel is the one of the K "
                         "lowest-BIC kernels that best forecasts data the search held out (see How the returned "
                         "kernel is chosen); they also make the model average. 1 = lowest BIC.", "budgeted",
                         lo=1, hi=100)
    choice: ChoiceRule = _s(
        ChoiceRule.TAIL, "How the returned kernel is chosen", "tail: each of the K lowest-BIC kernels is refitted "
                     "on the first part of the training range and scored on the rest. origins: each forecasts from "
                     "four earlier points in time (60-90 % of the training range, the next 10 % each) with its "
                     "fitted values, and the lowest mean CRPS wins (no refits). refit-origins: the same, each "
                     "kernel refitted at each point in time first (four refits per kernel; long series: tail).",
                     "budgeted", choices=ChoiceRule.values())
    form_margin: float = _s(1.0, "Keep an evolved kernel over the ETS forms by", "With choice origins or "
                            "refit-origins: the chosen kernel, when it has no level, trend or damped trend of "
                            "the exponential-smoothing forms, is returned only when its forecasts' mean CRPS is "
                            "below this share of the best such candidate's; else that candidate is. 1 = no "
                            "preference.", "budgeted", lo=0.05, hi=1.0, step=0.05, fmt="%.2f")
    long_choice: LongChoiceRule = _s(
        LongChoiceRule.TAIL, "How it is chosen on long series", "On a series longer than the fit points "
                          "(fitted on a subset): tail, as above; origins: each kernel forecasts from four earlier "
                          "points in time with its fitted values, the lowest mean CRPS wins; origins-density: "
                          "the same, the most likely forecasts win; bic: the lowest BIC. None refits, so the "
                          "search keeps the time the refits would take.", "budgeted",
                          choices=LongChoiceRule.values())
    calibration: CalibrationRule = _s(
        CalibrationRule.NONE, "Interval calibration", "Widen the returned kernel's forecast intervals by what "
                          "its out-of-sample errors show. origins: refitted at four earlier points in time "
                          "(60-90 % of the training range), it forecasts the next 10 % each; tail: the model "
                          "choice's refit on the first 90 % forecasts the rest (no extra fit); none: the GP's "
                          "own intervals. The forecast's mean is unchanged.", "budgeted",
                          choices=CalibrationRule.values())


@dataclass(frozen=True)
class ForecastSettings:
    """How the forecast weighs the kernel's with classical forecasters (:mod:`evocov_core.forecast`)."""

    combine: tuple[str, ...] = _s((), "Average the forecast with", "Classical forecasters the kernel's forecast "
                                  "is averaged with. Each forecast is weighted by its squared error from four "
                                  "earlier points in time (60-90 % of the training range, the kernel refitted at "
                                  "each) to the power −(weight power); the kernel stays the explanation. Needs "
                                  "interval calibration from the origins (their refits are reused). Long series: "
                                  "the next setting. Empty: the kernel's own forecast.",
                                  "budgeted", choices=("AutoETS", "AutoTheta", "AutoARIMA", "SeasonalNaive"))
    long_combine: tuple[str, ...] = _s((), "On long series, average with", "On a series longer than the fit "
                                       "points (fitted on a subset): classical forecasters the kernel's forecast is "
                                       "averaged with, weighted as above; from each earlier point in time the kernel "
                                       "forecasts with its fitted values (no refit: a refit there costs seconds). "
                                       "Empty: the kernel's own forecast.", "budgeted",
                                       choices=("MSTL", "AutoETS", "AutoTheta", "SeasonalNaive"))
    combine_power: float = _s(2.0, "Weight power", "Each forecast's weight in the average is proportional to its "
                              "summed squared error from the earlier origins to the power −p: 0 gives equal "
                              "weights, a large p all the weight to the best.", "budgeted", lo=0.0, hi=64.0,
                              step=0.5, fmt="%.1f")
    combine_guard: bool = _s(True, "Guard the forecast", "Leave the kernel's forecast out of the average when it "
                             "lies outside every classical forecaster's 95 % interval by more than the interval's "
                             "half-width at some step of the horizon: no classical model finds it plausible.",
                             "budgeted")
    horizon: int = _s(0, "Forecast horizon (steps)", "The steps the forecast is for. The returned kernel is chosen, "
                      "and the forecast's members weighed, by their forecasts of as many steps from four earlier "
                      "points in time, the last ending at the end of the training range (at most half of it); the "
                      "guard checks as many steps. 0: the next tenth of the training range from 60-90 % of it.",
                      "budgeted", lo=0, hi=10_000)
    combine_short: int = _s(0, "Short series: hold the kernel at half", "On a series of at most this many "
                            "training points the kernel's weight in the average is at most one half (the others "
                            "share the rest as their errors say): each earlier point in time then forecasts a "
                            "handful of points, too few to trust the kernel more. 0: never.", "budgeted",
                            lo=0, hi=100_000)


@dataclass(frozen=True)
class GrammarSettings:
    """Data-tied bounds and the grammar's options."""

    data_bounds: bool = _s(False, "Data-tied bounds", "No lengthscale below half the sampling step; periods "
                           "between two steps and the training span.", "budgeted")
    changepoints: bool = _s(False, "Change points", "Let random trees, mutations and expansions use ABCD's "
                            "change-point operator CP(before, after), which switches from one kernel to another "
                            "around a fitted location. Not in the paper's grammar.", "budgeted")
    changepoints_by_expansion: bool = _s(False, "Change points by expansion only", "With change points on, "
                                         "only the GPSS expansions S -> CP(S, B) and CP(B, S) make one, as in "
                                         "ABCD: random trees and mutations do not draw the operator, so a change "
                                         "point always switches between two whole kernels. (GPSS only ever "
                                         "expands.)", "budgeted", _GROWS)
    changewindows: bool = _s(False, "Change windows", "Let random trees, mutations and expansions use ABCD's "
                             "change-window operator CW(outside, inside), which switches to another kernel "
                             "inside a fitted window. Not in the paper's grammar; off in every preset.",
                             "budgeted")
    statespace: bool = _s(False, "State-space operations", "Let random trees and mutations use a local level "
                          "(a random walk from the first training point), a local trend (its slope a random walk) "
                          "and a damped trend (its slope reverts within a fitted time): the forms exponential "
                          "smoothing fits. Not in the paper's grammar.", "budgeted")
    ets_seeds: bool = _s(False, "Exponential-smoothing seeds", "Begin the search with the Gaussian-process forms "
                         "of simple exponential smoothing, Holt, damped Holt and Holt-Winters at the series' "
                         "season, offered to the model choice whatever their BIC.", "budgeted", _EVOCOV)


@dataclass(frozen=True)
class SearchConfig(GrammarSettings, ForecastSettings, ChoiceSettings, BudgetSettings, FittingSettings,
                   EvolutionSettings):
    """Settings of a kernel search (paper defaults; see the module docstring).

    Its fields are those of its bases, each group documented there: dataclasses collect the fields
    of the bases from the last to the first, so the bases are listed from the last group to the first.
    """

    def __post_init__(self) -> None:
        def need(cond: bool, msg: str) -> None:
            if not cond:
                raise ConfigError(msg)

        # Rules given as strings become their members; an unknown one is refused below by its choices.
        for name, rule in _RULES.items():
            v = getattr(self, name)
            if isinstance(v, str) and not isinstance(v, rule) and v in rule.values():
                object.__setattr__(self, name, rule(v))
        # Per setting, from its metadata: type, bounds, choices.
        for name, typ, meta in settings():
            v = getattr(self, name)
            if typ is bool:
                need(isinstance(v, bool), f"{name} must be true or false, got {v!r}")
            elif typ is int:
                need(isinstance(v, int) and not isinstance(v, bool), f"{name} must be a whole number, got {v!r}")
            elif typ is float:
                need(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
                     f"{name} must be a number, got {v!r}")
            if meta.choices is not None:
                values = v if isinstance(v, tuple) else (v,)
                need(all(x in meta.choices for x in values),
                     f"{name} must be {'a subset' if isinstance(v, tuple) else 'one'} of {', '.join(meta.choices)},"
                     f" got {v!r}")
            if meta.lo is not None or meta.hi is not None:
                need((meta.lo is None or v >= meta.lo) and (meta.hi is None or v <= meta.hi),
                     f"{name} must be {meta.range_text}, got {v}")
        # Across settings, and bounds the metadata cannot say (open intervals, "0 or at least").
        need(self.population >= 2 or self.algorithm == "gpss",
             f"population (N) must be at least 2, got {self.population}")
        if self.algorithm == "evocov":
            need(self.mu < self.population,
                 f"mu must satisfy 1 <= mu < population (N = {self.population}), got mu = {self.mu}")
        need(abs(self.p_mutation + self.p_crossover - 1.0) < 1e-9,
             f"p_mutation + p_crossover must equal 1, got {self.p_mutation} + {self.p_crossover}")
        need(self.d_min <= self.d_max, f"need 0 <= d_min <= d_max, got d_min = {self.d_min}, d_max = {self.d_max}")
        need(0.0 < self.metric_split < 0.9, f"metric_split must be in (0, 0.9), got {self.metric_split}")
        need(bool(self.base_kernels), "base_kernels must not be empty")
        need(bool(self.seed_bases), "seed_bases must not be empty")
        need(self.screen_points == 0 or self.screen_points >= 20,
             f"screen_points must be 0 (off) or at least 20, got {self.screen_points}")
        need(self.fit_points == 0 or self.fit_points >= 100,
             f"fit_points must be 0 (every point) or at least 100, got {self.fit_points}")
        need(self.promote_fraction > 0.0, f"promote_fraction must be in (0, 1], got {self.promote_fraction}")
        need(self.priors != PriorRule.PANEL or PRIORS["panel"] is not None,
             "priors=panel takes the prior a panel learns from its own series: run the panel with panel priors "
             "(forecast_panel(..., panel_priors=True), evocov panel --panel-priors)")
        # The forecast's weights come from the kernel's refits at the origins that calibrate it.
        need(not self.combine or self.calibration == CalibrationRule.ORIGINS,
             f"combine ({', '.join(self.combine)}) reuses the refits of the interval calibration from the origins: "
             f"set calibration to origins (it is {self.calibration}) or combine to none")
        try:
            self.optim  # noqa: B018 - validates the optimiser settings
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    @property
    def optim(self) -> OptimConfig:
        return OptimConfig(metric=self.metric, method=self.method, n_restarts=self.n_restarts,
                           max_evals=self.max_evals, n_screen=self.n_screen, ref_fun_call=self.ref_fun_call,
                           sigma_theta=self.sigma_theta,
                           init=self.init, space=HyperSpace(), data_bounds=self.data_bounds,
                           prior=PRIORS[self.priors])

    @property
    def grammar(self) -> Grammar:
        """The grammar random trees and mutations draw from (expansions read the options themselves)."""
        return get_grammar(self.n_hyper, self.changepoints and not self.changepoints_by_expansion,
                           self.changewindows, self.statespace)

    @property
    def variation(self) -> VariationConfig:
        return VariationConfig(o_max=self.o_max, rho_max=self.rho_max, require_input=self.require_input,
                               psd=PSDConfig(w=self.psd_w))

    def to_dict(self) -> dict:
        """Plain values, as files and the run store keep them: rules as strings, tuples as lists."""
        d = asdict(self)
        for name, typ, _ in settings():
            if typ is tuple:
                d[name] = list(getattr(self, name))
            elif name in _RULES:
                d[name] = getattr(self, name).value
        return d

    @classmethod
    def from_dict(cls, d: dict) -> SearchConfig:
        """Build from a dict (unknown keys refused with a clear message)."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ConfigError(f"unknown setting(s): {', '.join(unknown)}")
        d = dict(d)
        for name, typ, _ in settings():
            if typ is tuple and name in d:
                if not isinstance(d[name], (list, tuple)):
                    raise ConfigError(f"{name} must be a list, got {d[name]!r}")
                d[name] = tuple(d[name])
        return cls(**d)

    def with_(self, **changes: object) -> SearchConfig:
        return replace(self, **changes)  # type: ignore[arg-type]


class SettingField(NamedTuple):
    """One :class:`SearchConfig` field and what it means (a tuple: ``for name, typ, meta in settings()``).

    Attributes
    ----------
    name : str
        The field's name.
    kind : type
        ``int``, ``float``, ``bool``, ``str`` or ``tuple`` (of str).
    setting : Setting
        Its label, help, group, bounds and choices.
    """

    name: str
    kind: type
    setting: Setting


def settings() -> tuple[SettingField, ...]:
    """Every :class:`SearchConfig` field as ``(name, type, Setting)``, in declaration order."""
    return _SETTINGS


def with_derived(overrides: Mapping[str, object]) -> dict[str, object]:
    """``overrides`` with the settings derived from another filled in.

    A setting whose metadata names ``derived_from`` is one minus that setting
    (``p_crossover = 1 − p_mutation``): given one of the two, the other follows. The one place
    this rule lives; the command line and the dashboard both pass their overrides through it.
    """
    out = dict(overrides)
    for name, _, meta in _SETTINGS:
        src = meta.derived_from
        if src is not None and src in out and name not in out:
            out[name] = 1.0 - float(out[src])  # type: ignore[arg-type]
        elif src is not None and name in out and src not in out:
            out[src] = 1.0 - float(out[name])  # type: ignore[arg-type]
    return out


#: The settings that name a rule, and their enums.
_RULES: dict[str, type[Rule]] = {"algorithm": Algorithm, "metric": Metric, "method": Optimiser, "init": StartRule,
                                 "priors": PriorRule,
                                 "choice": ChoiceRule, "long_choice": LongChoiceRule,
                                 "calibration": CalibrationRule}


def _field_type(annotation: str) -> type:
    """The kind of value a setting takes (a rule is a string, one of its choices)."""
    if annotation.startswith("tuple"):
        return tuple
    if annotation in {rule.__name__ for rule in _RULES.values()}:
        return str
    return {"int": int, "float": float, "bool": bool, "str": str}[annotation]


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
# bench/results/accuracy/ (``bench accuracy --variants ...``). Interval calibration from the
# origins: pooled 95 % coverage 0.873 -> 0.942 on the development corpus (CRPS x1.02), 0.825 ->
# 0.882 on TSDL (CRPS x1.06); bench/results/bench_calibration__*.md. On long series the kernel is
# chosen by its forecasts from four origins (long_choice="origins_density"): on the long-series
# development set (bench/results/long-dev/quick-origins-density against long-dev/quick, seeds 0-2)
# 1.049 -> 0.923 x the better of seasonal naive and MSTL, paired 0.943 (SE of the log 0.038), worst
# single run 1.38 -> 2.14; on the long benchmark (long/quick-origins-density against
# long/quick-naive-seeds) 0.880 -> 0.775, paired 0.875 (0.074). Short series are unchanged.
# The forecast is the kernel's, AutoETS's and AutoTheta's, weighted by the inverse square of their
# errors from four earlier origins, without the kernel's when it leaves their 95 % intervals
# (evocov_core/forecast/combination.py; combine_power and combine_guard keep their defaults, 2 and on).
# On series of at most 100 training points the kernel's weight is at most one half (combine_short):
# post hoc on the development corpus (bench/results/bench_classical_members__corpus.md, seeds 0-1)
# paired 0.981 (SE of the log 0.013), worst single run 5.32 -> 2.86 x AutoETS; flat for 60-150 points;
# TSDL has no series that short.
# On long series, the kernel's, MSTL's and AutoETS's (long_combine): on the long-series development
# set (bench/results/long-dev/quick-42-combine, seeds 0-2) paired 0.954 (SE of the log 0.032) against
# the kernel's own, 0.903 -> 0.871 x the better of seasonal naive and MSTL, worst single run 2.03 -> 1.29.
_BUDGETED_PARTS = dict(cache_fits=True, data_bounds=True, select_top=5, changepoints=True, calibration="origins",
                       long_choice="origins_density", combine=("AutoETS", "AutoTheta"), combine_short=100,
                       long_combine=("MSTL", "AutoETS"))
# The evolutionary search returns the candidate whose forecasts from four earlier origins (fitted values) have
# the lowest CRPS, and an evolved kernel over the best candidate with a level, trend or damped trend of the
# exponential-smoothing seeds only when its CRPS is below 0.8 times that one's (issue 55): post hoc on the
# records of corpus seeds 0-1 (bench/results/bench_forms__corpus.md) the kernel paired 0.892 (SE of the log
# 0.043) against the tail choice, 1.069 -> 0.953 x AutoETS, worst single run 5.80 -> 3.78; TSDL seeds 0-4
# (bench_forms__tsdl.md) 0.853 (0.092), worst 12.74 -> 9.09. The choice of origins alone: 0.917 and 0.897.
# Timed at 60 s (corpus/quick-59-oc-s0, -s1 against quick-58-ets-s0-w1, quick-56-ets-s1-w1): the kernel paired
# 0.988 (0.038), p90 1.77 -> 1.39, worst 5.74 -> 3.78; the forecast 0.985 -> 0.970 x AutoETS. Refitting each
# candidate at each origin (choice="refit_origins", timed at 60 s: corpus/quick-60-ro-s*, accuracy/quick-60-ro-*)
# gains on the corpus (kernel paired 0.968, SE 0.019) and loses on TSDL (1.050, SE 0.043; forecast 1.035, 0.024):
# not adopted, the fitted values cost no refit.
_EVOLVE = dict(population=40, generations=100_000, mu=8, patience=3, d_min=3, d_max=8, psd_w=12, n_restarts=1,
               require_input=True, screen_points=240, promote_fraction=0.3, seed_fraction=0.5, p_expand=0.3,
               ets_seeds=True, **_BUDGETED_PARTS, choice="origins", form_margin=0.8)


def _budgeted(seconds: float) -> dict[str, dict]:
    return {
        "evocov": dict(_EVOLVE, time_budget=seconds, changepoints_by_expansion=True),
        "random": dict(_QUICK["random"], population=100_000, screen_points=240, time_budget=seconds,
                       **_BUDGETED_PARTS),
        "gwtf": dict(_QUICK["gwtf"], screen_points=240, time_budget=seconds, **_BUDGETED_PARTS),
        "gpss": dict(generations=10, n_restarts=3, time_budget=seconds, **_BUDGETED_PARTS),
    }


_SETTINGS = tuple(SettingField(f.name, _field_type(str(f.type)), f.metadata["setting"]) for f in fields(SearchConfig))

# Change points are made only by the GPSS expansions in both presets. In a 5 min search
# (bench/results/accuracy/standard/report.md, seeds 0-2, RMSE ratio to the best published, geometric
# mean of the per-series medians): none 1.42 (Call centre 5.1x); anywhere in the tree 1.84 (seed 0;
# the search fits the training range piecewise); made only by expansion 1.34. In 60 s, on the
# development corpus (bench/results/corpus/quick-35-cpexp against quick-27 and quick-34, seed 0, 61
# series, ratio to AutoETS): single runs 1.024 against 1.084 and 1.165, worst 4.69 against 5.88
# and 10.85, paired 0.91 (SE of the log 0.07); on TSDL (accuracy/quick-35-cpexp against quick-27 and
# quick-33, seeds 0-1) paired 1.01 (0.10), Call centre's late level shift found less often.
# At one commit (corpus/quick-38-cp-everywhere against quick-35-cpexp): anywhere / by expansion paired
# 1.099 (0.068); no threshold on the series' length gives change points anywhere a gain beyond noise.
#: ``panel``: many series at once (:mod:`evocov_core.panel`), a few seconds of one core a series.
PRESETS = {"quick": _budgeted(60.0), "standard": _budgeted(300.0), "panel": _budgeted(5.0), "paper": _PAPER,
           "quick-fixed": _QUICK}


def preset(name: str, algorithm: str = "evocov", **overrides: object) -> SearchConfig:
    """The settings of preset ``name`` (see the module docstring) for an algorithm, with overrides."""
    if name not in PRESETS:
        raise ConfigError(f"preset must be one of {', '.join(PRESETS)}, got {name!r}")
    if algorithm not in ALGORITHMS:
        raise ConfigError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    return SearchConfig(algorithm=algorithm, **{**PRESETS[name][algorithm], **overrides})  # type: ignore[arg-type]

"""The search's own groups of settings: the algorithm, its time budget, the population and its evolution, the
budgeted search's screening and seeds, the model choice, and the forecast's members (each a section of the
dashboard and of ``evocov search --help``; :mod:`evocov_core.compute.settings` says what a setting is).
:class:`~evocov_core.searches.config.SearchConfig` composes them with the fitting's and the language's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from evocov_core.compute.settings import GROWS_TREES, setting
from evocov_core.fitting.subset import DEFAULT_MAX_POINTS
from evocov_core.searches.rules import Algorithm, CalibrationRule, ChoiceRule, LongChoiceRule
from evocov_core.searches.structures import SEED_BASES

__all__ = ["ALGORITHMS", "ALGORITHM_LABELS", "AlgorithmSettings", "BudgetSettings", "ChoiceSettings",
           "EvolutionSettings", "ForecastSettings", "ScreeningSettings"]

ALGORITHMS = Algorithm.values()
ALGORITHM_LABELS = {
    "evocov": "EvoCov",
    "random": "Random Search",
    "gwtf": "Go With The First",
    "gpss": "GPSS baseline",
}
GPSS_BASE_KERNELS = ("SE", "PER", "LIN", "RQ")
#: The base kernels the seeded structures and the GPSS expansions may use.
SEED_BASE_CHOICES = ("SE", "PER", "LIN", "RQ", "C", "M12")
#: The classical forecasters the forecast may average with (``evocov_core.forecast.classical``'s models).
COMBINE_CHOICES = ("AutoETS", "AutoTheta", "AutoARIMA", "SeasonalNaive")
LONG_COMBINE_CHOICES = ("MSTL", "AutoETS", "AutoTheta", "SeasonalNaive")

_EVOCOV = frozenset({"evocov"})


@dataclass(frozen=True)
class AlgorithmSettings:
    KEY: ClassVar[str] = "algorithm"
    TITLE: ClassVar[str] = "Algorithm"

    algorithm: Algorithm = setting(Algorithm.EVOCOV, "Algorithm", "The search algorithm (module docstring).")


@dataclass(frozen=True)
class BudgetSettings:
    KEY: ClassVar[str] = "budget"
    TITLE: ClassVar[str] = "Time budget"

    time_budget: float = setting(0.0, "Time budget (seconds)", "Wall-clock time for the whole search on this "
                                 "machine, the choice of the returned kernel included; the search sizes and stops "
                                 "itself and returns the best kernel found. 0 = no limit: exactly N × G fits "
                                 "(reproducible: same seed, same result).", lo=0.0, hi=7 * 86400.0, step=30.0)


@dataclass(frozen=True)
class EvolutionSettings:
    """The population and its evolution (GPSS: its base kernels and depth)."""

    KEY: ClassVar[str] = "evolution"
    TITLE: ClassVar[str] = "Population and evolution"

    population: int = setting(141, "Population size N", "EvoCov: individuals per generation. Random Search: "
                              "kernels drawn. Go With The First: hill-climbing mutations per individual.",
                              GROWS_TREES, lo=2, hi=1_000_000,
                              labels={"random": "Kernels drawn N", "gwtf": "Mutations per individual N"})
    generations: int = setting(141, "Generations G", "EvoCov: generations. Go With The First: initial "
                               "individuals. GPSS: levels of the greedy search. With a time budget, only a cap (the "
                               "budgeted presets: 100000).", frozenset({"evocov", "gwtf", "gpss"}), lo=1,
                               hi=1_000_000,
                               labels={"gwtf": "Initial individuals G", "gpss": "Search depth G (levels)"})
    mu: int = setting(14, "Survivors μ", "Individuals kept by truncation selection each generation (1 ≤ μ < N).",
                      _EVOCOV, lo=1, hi=1_000_000)
    p_mutation: float = setting(0.4, "Mutation probability p_m", "Each child comes from a mutation with "
                                "probability p_m, else from a crossover.", _EVOCOV, lo=0.0, hi=1.0, step=0.05,
                                fmt="%.2f")
    p_crossover: float = setting(0.6, "Crossover probability p_cx", "1 − p_m (the page derives it from p_m).",
                                 _EVOCOV, lo=0.0, hi=1.0, step=0.05, fmt="%.2f", derived_from="p_mutation")
    beta: float = setting(1e-5, "Restart threshold β", "Restart when the best BIC improves by less than this "
                          "relative amount in a generation.", _EVOCOV, lo=0.0, step=1e-6, fmt="%.1e")
    patience: int = setting(1, "Restart patience", "Consecutive generations with a relative improvement ≤ β before "
                            "a restart (the paper: 1).", _EVOCOV, lo=1, hi=10_000)
    base_kernels: tuple[str, ...] = setting(GPSS_BASE_KERNELS, "GPSS base kernels", "Base kernels the greedy "
                                            f"search combines (GPSS: {', '.join(GPSS_BASE_KERNELS)}).",
                                            frozenset({"gpss"}), choices=("SE", "PER", "LIN", "RQ", "C"))


@dataclass(frozen=True)
class ScreeningSettings:
    """What makes a search fit a time budget: the fit cache, screening, subsets of long series, seeds."""

    KEY: ClassVar[str] = "budgeted"
    TITLE: ClassVar[str] = "Budgeted search: screening and seeds"

    cache_fits: bool = setting(False, "Never refit a kernel", "A kernel met again (same canonical form) keeps its "
                               "first fit.")
    screen_points: int = setting(0, "Screening points", "Above this many training points, new kernels are first "
                                 "fitted on this many (half spread over the range, half the most recent) and only "
                                 "the best share is fitted on all the data. 0 = off, else at least 20.", lo=0,
                                 hi=100_000)
    fit_points: int = setting(DEFAULT_MAX_POINTS, "Points an exact fit uses", "Long series: above this many "
                              "training points, every fit and forecast is an exact GP on a subset of them, the most "
                              "recent 3/4 contiguous and 1/4 spread over the earlier history "
                              "(evocov_core/fitting/subset.py; the result says so). 0 = every point (an exact GP "
                              "costs O(n³) time and O(n²) memory).", lo=0, hi=1_000_000)
    promote_fraction: float = setting(0.3, "Share promoted", "Share of a screened batch fitted on all the data.",
                                      lo=0.0, hi=1.0, step=0.05, fmt="%.2f")
    seed_bases: tuple[str, ...] = setting(SEED_BASES, "Base kernels of the seeds and expansions", "The base "
                                          "kernels the seeded structures (each base, their pairwise sums and "
                                          "products) and the GPSS expansions of a budgeted search are made of. M12 "
                                          "is the Matérn-1/2 (Ornstein-Uhlenbeck) kernel: a level that wanders, "
                                          "whose forecast stays near the last values with a spread that grows.",
                                          _EVOCOV, choices=SEED_BASE_CHOICES)
    seed_fraction: float = setting(0.0, "Seeded share of the first population", "GPSS structures (SE, PER, LIN, "
                                   "RQ, their pairwise sums and products) in the first population.", _EVOCOV,
                                   lo=0.0, hi=1.0, step=0.05, fmt="%.2f")
    reseed_restarts: bool = setting(False, "Seed restarts too", "Each restart's new population gets the seeded "
                                    "share of GPSS structures as well, not only the first one.", _EVOCOV)
    naive_seeds: bool = setting(False, "Naive-forecast seeds on every series", "Begin every search, not only those "
                                "on long series, with the GP forms of seasonal naive (a periodic kernel whose cycle "
                                "drifts, PER x M12, at the longest clear period) and of the random walk with drift "
                                "(M12 + LIN), offered to the model choice whatever their BIC.", _EVOCOV)
    seed_evals: int = setting(0, "Evaluations of a spectral seed's fit", "Long series: the cap on the metric "
                              "evaluations of the one L-BFGS-B run that fits each spectral or naive seed from its "
                              "given values. 0 = as Max evaluations.", _EVOCOV, lo=0, hi=100_000)
    p_expand: float = setting(0.0, "GPSS expansions among mutations", "Probability that a mutation adds or "
                              "multiplies a base kernel, or swaps one.", _EVOCOV, lo=0.0, hi=1.0, step=0.05,
                              fmt="%.2f")
    ets_seeds: bool = setting(False, "Exponential-smoothing seeds", "Begin the search with the Gaussian-process "
                              "forms of simple exponential smoothing, Holt, damped Holt and Holt-Winters at the "
                              "series' season, offered to the model choice whatever their BIC.", _EVOCOV)


@dataclass(frozen=True)
class ChoiceSettings:
    """How the returned kernel is chosen and its intervals calibrated (:mod:`evocov_core.searches.select`)."""

    KEY: ClassVar[str] = "choice"
    TITLE: ClassVar[str] = "How the returned kernel is chosen"

    select_top: int = setting(1, "Choose among the K lowest-BIC kernels", "The returned kernel is the one of the K "
                              "lowest-BIC kernels that best forecasts data the search held out (see How the "
                              "returned kernel is chosen); they also make the model average. 1 = lowest BIC.",
                              lo=1, hi=100)
    choice: ChoiceRule = setting(
        ChoiceRule.TAIL, "How the returned kernel is chosen", "tail: each of the K lowest-BIC kernels is refitted "
        "on the first part of the training range and scored on the rest. origins: each forecasts from four "
        "earlier points in time (60-90 % of the training range, the next 10 % each) with its fitted values, and "
        "the lowest mean CRPS wins (no refits). refit-origins: the same, each kernel refitted at each point in "
        "time first (four refits per kernel; long series: tail).")
    form_margin: float = setting(1.0, "Keep an evolved kernel over the ETS forms by", "With choice origins or "
                                 "refit-origins: the chosen kernel, when it has no level, trend or damped trend of "
                                 "the exponential-smoothing forms, is returned only when its forecasts' mean CRPS "
                                 "is below this share of the best such candidate's; else that candidate is. 1 = "
                                 "no preference.", lo=0.05, hi=1.0, step=0.05, fmt="%.2f")
    long_choice: LongChoiceRule = setting(
        LongChoiceRule.TAIL, "How it is chosen on long series", "On a series longer than the fit points (fitted on "
        "a subset): tail, as above; origins: each kernel forecasts from four earlier points in time with its "
        "fitted values, the lowest mean CRPS wins; origins-density: the same, the most likely forecasts win; bic: "
        "the lowest BIC. None refits, so the search keeps the time the refits would take.")
    calibration: CalibrationRule = setting(
        CalibrationRule.NONE, "Interval calibration", "Widen the returned kernel's forecast intervals by what its "
        "out-of-sample errors show. origins: refitted at four earlier points in time (60-90 % of the training "
        "range), it forecasts the next 10 % each; tail: the model choice's refit on the first 90 % forecasts the "
        "rest (no extra fit); none: the GP's own intervals. The forecast's mean is unchanged.")


@dataclass(frozen=True)
class ForecastSettings:
    """How the forecast weighs the kernel's with classical forecasters (:mod:`evocov_core.forecast`). Here, below
    the forecast layer, because the search's model choice reads the horizon."""

    KEY: ClassVar[str] = "forecast"
    TITLE: ClassVar[str] = "Forecast"

    combine: tuple[str, ...] = setting((), "Average the forecast with", "Classical forecasters the kernel's "
                                       "forecast is averaged with. Each forecast is weighted by its squared error "
                                       "from four earlier points in time (60-90 % of the training range, the kernel "
                                       "refitted at each) to the power −(weight power); the kernel stays the "
                                       "explanation. Needs interval calibration from the origins (their refits are "
                                       "reused). Long series: the next setting. Empty: the kernel's own forecast.",
                                       choices=COMBINE_CHOICES)
    long_combine: tuple[str, ...] = setting((), "On long series, average with", "On a series longer than the fit "
                                            "points (fitted on a subset): classical forecasters the kernel's "
                                            "forecast is averaged with, weighted as above; from each earlier point "
                                            "in time the kernel forecasts with its fitted values (no refit: a refit "
                                            "there costs seconds). Empty: the kernel's own forecast.",
                                            choices=LONG_COMBINE_CHOICES)
    combine_power: float = setting(2.0, "Weight power", "Each forecast's weight in the average is proportional to "
                                   "its summed squared error from the earlier origins to the power −p: 0 gives "
                                   "equal weights (and fits the classical models once, not at the origins), a "
                                   "large p all the weight to the best.", lo=0.0, hi=64.0,
                                   step=0.5, fmt="%.1f")
    combine_guard: bool = setting(True, "Guard the forecast", "Leave the kernel's forecast out of the average when "
                                  "it lies outside every classical forecaster's 95 % interval by more than the "
                                  "interval's half-width at some step of the horizon: no classical model finds it "
                                  "plausible.")
    horizon: int = setting(0, "Forecast horizon (steps)", "The steps the forecast is for. The returned kernel is "
                           "chosen, and the forecast's members weighed, by their forecasts of as many steps from "
                           "four earlier points in time, the last ending at the end of the training range (at most "
                           "half of it); the guard checks as many steps. 0: the next tenth of the training range "
                           "from 60-90 % of it.", lo=0, hi=10_000)
    combine_short: int = setting(0, "Short series: hold the kernel at half", "On a series of at most this many "
                                 "training points the kernel's weight in the average is at most one half (the "
                                 "others share the rest as their errors say): each earlier point in time then "
                                 "forecasts a handful of points, too few to trust the kernel more. 0: never.",
                                 lo=0, hi=100_000)

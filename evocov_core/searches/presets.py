"""The presets: named settings of a search.

``quick``        a time budget of 60 s wall (the dashboard's default), every part of the budgeted search on:
                 the canonical fit cache, screening on a window, seeded GPSS structures and expansions, the
                 exponential-smoothing seeds, data-tied bounds, ABCD's change points made only by the GPSS
                 expansions ``S -> CP(S, B)``, ``CP(B, S)``, the returned kernel chosen by its forecasts from
                 four earlier origins, intervals calibrated there, and the forecast averaged with AutoETS and
                 AutoTheta (MSTL and AutoETS on long series).
``standard``     the same with 5 minutes.
``panel``        the same with 5 seconds: many series at once (:mod:`evocov_core.panel`).
``paper``        the paper's section 6.2 settings, no time limit, none of the above.
``quick-fixed``  a fixed count of fits (N, G exact), no time limit: the same seed gives the same kernel.

``docs/studies.md`` ("Why the presets are what they are") gives the measurements that chose each part.
"""

from __future__ import annotations

from evocov_core.searches.config import ALGORITHMS, ConfigError, SearchConfig

__all__ = ["PRESETS", "preset"]

#: The paper's section 6.2 settings, per algorithm.
_PAPER: dict[str, dict] = {
    "evocov": dict(population=141, generations=141, mu=14),
    "random": dict(population=20000, generations=1),
    "gwtf": dict(population=200, generations=13),
    "gpss": dict(generations=10),
}
#: Fixed counts that take about a minute on 2 cores for Airline (n_train = 129).
_QUICK: dict[str, dict] = {
    "evocov": dict(population=50, generations=30, mu=8, patience=3, d_min=3, d_max=8, psd_w=12, n_restarts=1,
                   require_input=True),
    "random": dict(population=1500, generations=1, d_min=3, d_max=8, psd_w=12, n_restarts=1, require_input=True),
    "gwtf": dict(population=40, generations=8, d_min=3, d_max=8, psd_w=12, n_restarts=1, require_input=True),
    "gpss": dict(generations=3, n_restarts=3),
}
#: What every budgeted search adds: the fit cache, data-tied bounds, the choice among five, change points, the
#: calibration from the origins, and the forecast's classical members.
_BUDGETED_PARTS = dict(cache_fits=True, data_bounds=True, select_top=5, families=("changepoint",),
                       calibration="origins", long_choice="origins_density", combine=("AutoETS", "AutoTheta"),
                       combine_short=100, long_combine=("MSTL", "AutoETS"))
#: The evolutionary search of the budgeted presets: screening, seeds, expansions, and the choice by the forecasts
#: from the origins that keeps an evolved kernel over an exponential-smoothing form only at 0.8 of its CRPS.
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


PRESETS = {"quick": _budgeted(60.0), "standard": _budgeted(300.0), "panel": _budgeted(5.0), "paper": _PAPER,
           "quick-fixed": _QUICK}


def preset(name: str, algorithm: str = "evocov", **overrides: object) -> SearchConfig:
    """The settings of preset ``name`` (see the module docstring) for an algorithm, with overrides.

    Raises
    ------
    ConfigError
        An unknown preset or algorithm, or an invalid setting.
    """
    if name not in PRESETS:
        raise ConfigError(f"preset must be one of {', '.join(PRESETS)}, got {name!r}")
    if algorithm not in ALGORITHMS:
        raise ConfigError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    return SearchConfig(algorithm=algorithm, **{**PRESETS[name][algorithm], **overrides})  # type: ignore[arg-type]

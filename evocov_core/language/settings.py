"""The settings of the kernel language: how random trees grow and vary, and which optional operations the
grammar offers. Groups of :class:`~evocov_core.searches.config.SearchConfig` (see
:mod:`evocov_core.compute.settings`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from evocov_core.compute.settings import GROWS_TREES, setting
from evocov_core.language.grammar import FAMILIES, OPERATORS

__all__ = ["GrammarSettings", "TreeSettings"]


@dataclass(frozen=True)
class TreeSettings:
    """Depth limits, variation and the positive-semidefinite check of random trees."""

    KEY: ClassVar[str] = "trees"
    TITLE: ClassVar[str] = "Tree generation and variation"

    d_min: int = setting(5, "Minimum depth d_min", "Depth limits of randomly generated trees.", GROWS_TREES,
                         lo=0, hi=30)
    d_max: int = setting(15, "Maximum depth d_max", "Depth limits of randomly generated trees (≤ 30).",
                         GROWS_TREES, lo=0, hi=30)
    o_max: int = setting(40, "Bloat limit o_max", "Children of variation deeper than this are refused.",
                         GROWS_TREES, lo=2, hi=200)
    rho_max: int = setting(250, "Attempts ρ_max", "Tries of a variation operator before the parent is kept "
                           "unchanged.", GROWS_TREES, lo=1, hi=100_000)
    psd_w: int = setting(20, "PSD check data sets w", "Random data sets each new kernel must be positive "
                         "semi-definite on.", GROWS_TREES, lo=1, hi=1000)
    n_hyper: int = setting(20, "Hyperparameter slots n_hyper", "Size of the pool of hyperparameter slots.",
                           GROWS_TREES, lo=1, hi=1000)
    require_input: bool = setting(False, "Only kernels that depend on x", "Discard constant kernels when "
                                  "generating and varying trees (the paper keeps them).", GROWS_TREES)


@dataclass(frozen=True)
class GrammarSettings:
    """Operations beyond the paper's grammar (:func:`~evocov_core.language.grammar.get_grammar`), by family."""

    KEY: ClassVar[str] = "grammar"
    TITLE: ClassVar[str] = "Grammar: optional families of operations"

    families: tuple[str, ...] = setting(
        (), "Operation families",
        "Families of operations beyond the paper's grammar that random trees and mutations may draw ("
        + "; ".join(f"{f}: {', '.join(s.name for s in OPERATORS if s.family == f)}" for f in FAMILIES)
        + "). changepoint and changewindow also let the GPSS expansions make ABCD's change point CP(before, after) "
        "and change window CW(outside, inside), which switch to another kernel around a fitted location or inside a "
        "fitted window; statespace is a local level, a local trend and a damped trend, the forms exponential "
        "smoothing fits. Kernel files load whatever the families. The budgeted presets name changepoint.",
        choices=FAMILIES)
    changepoints_by_expansion: bool = setting(False, "Change points by expansion only", "With the changepoint "
                                              "family named, only the GPSS expansions S -> CP(S, B) and CP(B, S) "
                                              "make one, as in ABCD: random trees and mutations do not draw the "
                                              "operator, so a change point always switches between two whole "
                                              "kernels. (GPSS only ever expands.)", GROWS_TREES)

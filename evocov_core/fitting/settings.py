"""The settings of a kernel's fit: the metric, the optimiser, its starts and the priors. A group of
:class:`~evocov_core.searches.config.SearchConfig` (see :mod:`evocov_core.compute.settings`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from evocov_core.compute.settings import Rule, setting

__all__ = ["FittingSettings", "Metric", "Optimiser", "PriorRule", "StartRule"]


class Metric(Rule):
    """What the optimiser maximises for a kernel's hyperparameters (:data:`~evocov_core.fitting.metrics.METRICS`)."""

    LML = "lml"
    LOOCV = "loocv"
    POSTERIOR_LML = "posterior_lml"
    SOPL = "sopl"
    RMSE = "rmse"


class Optimiser(Rule):
    """L-BFGS-B, the paper's budgeted Powell, or L-BFGS-B where the metric has a gradient."""

    AUTO = "auto"
    LBFGS = "lbfgs"
    POWELL = "powell"


class StartRule(Rule):
    """Where a new kernel's fit starts: data-aware ranges per slot role, or the paper's uniform draw."""

    ROLES = "roles"
    PAPER = "paper"


class PriorRule(Rule):
    """The hyperparameter priors of every fit (:data:`~evocov_core.fitting.priors.PRIORS`): none (maximum
    likelihood), those learned on the development corpus, or those a panel learned from its own series
    (:mod:`evocov_core.panel.priors`; each fit a posterior mode)."""

    NONE = "none"
    CORPUS = "corpus"
    PANEL = "panel"


@dataclass(frozen=True)
class FittingSettings:
    """How each kernel's hyperparameters are fitted (:class:`~evocov_core.fitting.optimize.OptimConfig`)."""

    KEY: ClassVar[str] = "fitting"
    TITLE: ClassVar[str] = "Hyperparameter fitting"

    metric: Metric = setting(Metric.LML, "Metric", "What the optimiser maximises for each kernel's "
                             "hyperparameters. The search itself always ranks kernels by BIC.")
    method: Optimiser = setting(Optimiser.AUTO, "Optimiser", "auto: L-BFGS-B for LML and LOOCV (they have "
                                "gradients), Powell otherwise.")
    n_restarts: int = setting(3, "Restarts", "L-BFGS-B starting points per kernel.", lo=1, hi=100)
    max_evals: int = setting(60, "Max evaluations", "Metric evaluations per L-BFGS-B start.", lo=2, hi=100_000)
    n_screen: int = setting(20, "Screened starts", "Random starting points scored (metric only) before L-BFGS-B "
                            "runs from the best of them; 0 turns screening off.", lo=0, hi=100_000)
    ref_fun_call: int = setting(300, "Powell ref_fun_call", "Powell budget: ref · 350² / n² evaluations.", lo=1,
                                hi=100_000)
    sigma_theta: float = setting(0.1, "σ_θ of inherited starts", "Spread (log space) of starts inherited from "
                                 "parents.", lo=0.0, hi=10.0, step=0.05, fmt="%.2f")
    init: StartRule = setting(StartRule.ROLES, "Starting values", "roles: data-aware ranges per slot role. paper: "
                              "uniform in the search box.")
    priors: PriorRule = setting(
        PriorRule.NONE, "Hyperparameter priors", "none: each kernel's hyperparameters maximise the likelihood. "
        "corpus: they maximise the posterior, under priors by slot role learned on the development corpus "
        "(BIC is then taken at that mode); panel: under those a panel learned from its own series (a panel run "
        "with panel priors). Only with the LML metric.")
    metric_split: float = setting(0.1, "Held-out share of the training range", "The last share of the training "
                                  "x-range that the split metrics (posterior LML, SoPL) and the choice of the "
                                  "returned kernel hold out.", lo=0.05, hi=0.85, step=0.05, fmt="%.2f")
    data_bounds: bool = setting(False, "Data-tied bounds", "No lengthscale below half the sampling step; periods "
                                "between two steps and the training span.")

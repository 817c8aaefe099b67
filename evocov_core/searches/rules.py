"""The rules among the search settings, as enums (:class:`~evocov_core.searches.config.SearchConfig`).

A member equals, hashes and prints as its value, so files, the command line, the dashboard's widgets
and the run store keep plain strings; a setting given as a string becomes its member when the settings
are made, and an unknown one is refused there.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["ETS_SEED", "SEEDED", "SPECTRAL_SEED", "Algorithm", "CalibrationRule", "ChoiceRule", "LongChoiceRule",
           "Metric", "Optimiser", "PriorRule", "Rule", "StartRule"]


class Rule(str, Enum):
    """A setting that names a rule. A member equals, hashes and prints as its value (``"origins"``), so that
    files, the command line and the run store keep plain strings; a setting given as a string is turned
    into its member when the :class:`SearchConfig` is made, and an unknown one is refused."""

    __hash__ = str.__hash__

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, spec: str) -> str:
        return str.__format__(self.value, spec)

    @classmethod
    def values(cls) -> tuple[str, ...]:
        return tuple(m.value for m in cls)


class Algorithm(Rule):
    """The search algorithm (the module docstring says what N and G mean for each)."""

    EVOCOV = "evocov"
    RANDOM = "random"
    GWTF = "gwtf"
    GPSS = "gpss"


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


class ChoiceRule(Rule):
    """How the returned kernel is chosen among the best by BIC (:func:`~evocov_core.searches.select.choose_model`)."""

    TAIL = "tail"
    ORIGINS = "origins"
    REFIT_ORIGINS = "refit_origins"


class LongChoiceRule(Rule):
    """How it is chosen on a long series (fitted on a subset)."""

    TAIL = "tail"
    ORIGINS = "origins"
    ORIGINS_DENSITY = "origins_density"
    BIC = "bic"


class PriorRule(Rule):
    """The hyperparameter priors of every fit (:data:`~evocov_core.fitting.priors.PRIORS`): none (maximum
    likelihood), those learned on the development corpus, or those a panel learned from its own series
    (:mod:`evocov_core.panel.priors`; each fit a posterior mode)."""

    NONE = "none"
    CORPUS = "corpus"
    PANEL = "panel"


class CalibrationRule(Rule):
    """What the returned kernel's predictive spread is scaled by (:func:`~evocov_core.searches.validate.calibrate`)."""

    NONE = "none"
    TAIL = "tail"
    ORIGINS = "origins"


# --- where a candidate came from ---------------------------------------------------------------

#: The origin a search records for the exponential-smoothing seeds
#: (:mod:`~evocov_core.searches.ets_seeds`).
ETS_SEED = "ets seed"
#: The origin a search records for the spectral and naive seeds of long series
#: (:mod:`~evocov_core.searches.spectral_seeds`).
SPECTRAL_SEED = "spectral seed"
#: Origins of the seeds a search starts from with given values: fitted unscreened from those
#: values, cached with them, and offered to the model choice whatever their BIC
#: (:meth:`~evocov_core.searches.candidates.Candidates.top`).
SEEDED = frozenset({SPECTRAL_SEED, ETS_SEED})

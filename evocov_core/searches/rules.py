"""The search's rules among the settings, as enums (the fitting's are in :mod:`evocov_core.fitting.settings`).

A member equals, hashes and prints as its value, so files, the command line, the dashboard's widgets
and the run store keep plain strings; a setting given as a string becomes its member when the settings
are made, and an unknown one is refused there.
"""

from __future__ import annotations

from evocov_core.compute.settings import Rule

__all__ = ["ETS_SEED", "SEEDED", "SPECTRAL_SEED", "Algorithm", "CalibrationRule", "ChoiceRule", "LongChoiceRule"]


class Algorithm(Rule):
    """The search algorithm (the module docstring says what N and G mean for each)."""

    EVOCOV = "evocov"
    RANDOM = "random"
    GWTF = "gwtf"
    GPSS = "gpss"


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


class CalibrationRule(Rule):
    """What the returned kernel's predictive spread is scaled by (:func:`~evocov_core.searches.select.calibrate`)."""

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

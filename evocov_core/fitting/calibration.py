"""How much wider than the GP says a forecast's intervals are made: the factor and where it came from.

A kernel's predictive spread comes from hyperparameters fitted to the whole training range, the
points its likelihood has already explained; beyond them it is too confident. The search learns a
factor on the spread from the returned kernel's out-of-sample forecast errors
(:func:`evocov_core.searches.select.calibrate`); the kernel file stores it (``calibration``) and
every forecast made from the file applies it (:class:`evocov_core.fitting.model.FittedModel`).

Scaling every predictive standard deviation by ``s`` is the GP with kernel ``s² · k`` and noise
``s² · σ²``: the same mean, every variance times ``s²``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["CALIBRATIONS", "MAX_SPREAD", "RECORDED", "Calibration", "rms_scale"]

#: What a factor can be learned from: nothing, the model choice's tail, several rolling origins.
CALIBRATIONS = ("none", "tail", "origins")
#: What a kernel file may record: also ``origins_fitted``, the forecasts from the origins with the
#: kernel's fitted values, no refit (the model choice on a long series, where a refit costs seconds).
RECORDED = (*CALIBRATIONS, "origins_fitted")
#: The largest factor a kernel file may carry.
MAX_SPREAD = 1e3


def rms_scale(z: NDArray[np.float64], *, min_points: int = 5) -> float:
    """The factor on a predictive standard deviation that makes the validation errors' mean square
    one: ``sqrt(mean z²)``, never below 1 (a forecast is not made more confident than the GP
    says) nor above :data:`MAX_SPREAD`, and 1 with fewer than ``min_points`` finite errors.

    Less noisy than a quantile
    (:func:`evocov_core.searches.validate.spread_scale`) on the few errors a short series offers.

    Parameters
    ----------
    z : ndarray of shape (m,)
        Standardised forecast errors (:attr:`evocov_core.searches.validate.OriginScores.z`).
    """
    a = np.asarray(z, dtype=np.float64)
    a = a[np.isfinite(a)]
    if a.size < min_points:
        return 1.0
    # A kernel whose forecast misses by thousands of its spreads keeps a factor a file can hold.
    return min(MAX_SPREAD, max(1.0, float(np.sqrt(np.mean(a * a)))))


@dataclass(frozen=True)
class Calibration:
    """How much wider than the GP says a kernel's forecast intervals are made.

    Scaling the predictive standard deviation by ``spread`` is the GP with kernel
    ``spread² · k`` and noise ``spread² · σ²``: the same mean, every variance times ``spread²``.

    Attributes
    ----------
    spread : float
        Factor on every predictive standard deviation (≥ 1; 1: as the GP says).
    rule : str
        ``none``, ``tail`` or ``origins`` (:func:`evocov_core.searches.select.calibrate`), or
        ``origins_fitted`` (:data:`RECORDED`): what ``spread`` was learned from.
    errors : int
        Out-of-sample forecast errors it was learned from.
    """

    spread: float = 1.0
    rule: str = "none"
    errors: int = 0

    def describe(self) -> str | None:
        """One sentence for a page or a report; None when the intervals are the GP's own."""
        if self.rule == "none":
            return None
        if self.errors < 5:
            return (f"Forecast intervals are the GP's own: {self.errors} out-of-sample errors are too few to "
                    "calibrate them.")
        where = {"origins": "its refits at four earlier points in time",
                 "origins_fitted": "its forecasts from four earlier points in time with its fitted values (partly "
                                   "in sample)"}.get(self.rule, "its refit on the first 90 % of the training range")
        if self.spread <= 1.0:
            return (f"Forecast intervals are the GP's own: the {self.errors} out-of-sample errors of {where} "
                    "were no wider than it predicts.")
        return (f"Forecast intervals are {self.spread:.2f}× as wide as the GP's own, from the {self.errors} "
                f"out-of-sample errors of {where}; the mean is unchanged.")

    def to_dict(self) -> dict:
        return {"spread": self.spread, "rule": self.rule, "errors": self.errors}

    @classmethod
    def from_dict(cls, d: object) -> Calibration:
        """From :meth:`to_dict`'s output (untrusted: a kernel file); ValueError when malformed."""
        if not isinstance(d, dict):
            raise ValueError("'calibration' must be an object")
        spread, rule, errors = d.get("spread"), d.get("rule"), d.get("errors", 0)
        if isinstance(spread, bool) or not isinstance(spread, (int, float)) or not (
                math.isfinite(spread) and 1.0 <= spread <= MAX_SPREAD):
            raise ValueError("calibration 'spread' must be a number from 1 to 1000")
        if rule not in RECORDED:
            raise ValueError(f"calibration 'rule' must be one of {', '.join(RECORDED)}")
        if isinstance(errors, bool) or not isinstance(errors, int) or errors < 0:
            raise ValueError("calibration 'errors' must be a non-negative integer")
        return cls(float(spread), str(rule), errors)

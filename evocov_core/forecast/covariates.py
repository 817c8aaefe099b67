"""Covariates with known futures: temperature, a price, a holiday flag, whose values are known for the
times a forecast is asked at.

**How they enter the model.** The covariates ``c`` (x's columns 2 to d, :attr:`Dataset.covariates`)
enter as a linear term beside the evolved kernel of time:

    y(t) = βᵀc(t) + f(t) + ε,    f ~ GP(0, k(t, t'))

which is the Gaussian process with covariance ``k(t, t') + c(t)ᵀ Σ c(t')`` in the limit of a vague prior
on β (a linear kernel on the covariates' dimensions, one weight each), with β at its estimate. β is
estimated by least squares on the training part together with a smooth trend (1, t, t²) and two
harmonics of each season the series has (:func:`~evocov_core.fitting.seasons.infer_seasons`), so that a
covariate that itself follows the season or the trend is credited only with what it adds to them. The
search may use them or not: they are kept when they lower the regression's BIC
(``n log(RSS/n) + p log n``) against the same regression without them, and otherwise left out
(:attr:`CovariateEffect.used`, with the reason). The kernel search then runs on ``y − βᵀc`` along
time, exactly as on a series without covariates (the classical members of its forecast too), and every
prediction adds ``βᵀc`` back at its own times: the test part's from the data, the future's from the
values given (:func:`future_covariates`). The interval is the kernel's (β is taken as known).

Why a linear term rather than free input dimensions of the evolved tree: the grammar's distances
(``sq_dist``, ``dot_prod``, ``spectral``) are isotropic over all input columns, so a covariate column
would share time's lengthscales and periods; a term of its own keeps the time kernel as the search
finds it on any series.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from evocov_core.data.dataset import Dataset
from evocov_core.data.limits import DataError
from evocov_core.fitting.seasons import calendar_periods, infer_seasons
from evocov_core.forecast.classical import DEFAULT_TIME_LIMIT
from evocov_core.forecast.future import FutureForecast, KernelFile, forecast_future
from evocov_core.forecast.steps import MAX_HORIZON, future_labels, times_of

__all__ = ["CovariateEffect", "add_effect", "fit_covariates", "forecast_with_covariates", "future_covariates",
           "on_time", "searched_on", "time_only"]

Array = NDArray[np.float64]

#: Harmonics of each season in the regression that estimates β.
HARMONICS = 2


@dataclass(frozen=True)
class CovariateEffect:
    """The linear effect of the covariates on y (module docstring).

    Attributes
    ----------
    names : tuple of str
        The covariate columns, in x's order (columns 2 to d).
    coef : tuple of float
        β: y's units per unit of each covariate (all 0 when not used).
    used : bool
        Whether the covariates lowered the regression's BIC.
    reason : str
        One sentence: what was estimated and why they are used or not.
    """

    names: tuple[str, ...]
    coef: tuple[float, ...]
    used: bool
    reason: str

    def effect(self, C: ArrayLike) -> Array:
        """``βᵀc`` for covariate values ``C`` of shape (m, k): shape (m,)."""
        A = np.asarray(C, dtype=np.float64).reshape(-1, len(self.names))
        return A @ np.asarray(self.coef, dtype=np.float64)

    def to_dict(self) -> dict:
        """As JSON values (a kernel file's ``covariates``)."""
        return {"names": list(self.names), "coef": list(self.coef), "used": self.used, "reason": self.reason,
                "model": "y = sum(coef * covariate) + the kernel's GP of time"}

    @classmethod
    def from_dict(cls, d: object) -> CovariateEffect:
        """Inverse of :meth:`to_dict`; ValueError when malformed."""
        if not isinstance(d, dict):
            raise ValueError("'covariates' must be an object")
        names, coef = d.get("names"), d.get("coef")
        if (not isinstance(names, list) or not isinstance(coef, list) or len(names) != len(coef) or not names
                or not all(isinstance(n, str) for n in names)):
            raise ValueError("'covariates' needs as many 'names' (text) as 'coef' (numbers), at least one")
        values = tuple(float(c) for c in coef)
        if not all(math.isfinite(c) for c in values):
            raise ValueError("'covariates' coef must be finite numbers")
        return cls(tuple(names), values, bool(d.get("used", True)), str(d.get("reason", "")))


def _design(ds: Dataset) -> Array:
    """The regression's columns besides the covariates, shape (n_train, p): 1, t, t² (t on [-1, 1]) and
    :data:`HARMONICS` harmonics of each season of the training part."""
    t = ds.X_train[:, 0]
    span = float(np.ptp(t)) or 1.0
    u = 2 * (t - t.min()) / span - 1
    cols = [np.ones_like(u), u, u**2]
    along = time_only(ds)
    periods = calendar_periods(along)
    if not periods:
        seasons = infer_seasons(along)
        periods = tuple(m * seasons.step for m in seasons.lengths) if math.isfinite(seasons.step) else ()
    for p in periods:
        if p < span / 2:  # at least two cycles in the training range
            for h in range(1, HARMONICS + 1):
                cols += [np.sin(2 * np.pi * h * t / p), np.cos(2 * np.pi * h * t / p)]
    return np.column_stack(cols)


def _bic(Z: Array, y: Array) -> tuple[float, Array]:
    """BIC of least squares of ``y`` (n,) on ``Z`` (n, p) and the coefficients (p,)."""
    beta, *_ = np.linalg.lstsq(Z, y, rcond=None)
    rss = float(np.sum((y - Z @ beta) ** 2))
    n = y.size
    return n * math.log(max(rss, 1e-300) / n) + Z.shape[1] * math.log(n), beta


def fit_covariates(ds: Dataset) -> CovariateEffect:
    """Estimate β on the training part of ``ds`` and decide whether the covariates are used (module docstring).

    Parameters
    ----------
    ds : Dataset
        x of shape (n, 1 + k): time, then the ``k`` covariates named by ``ds.covariates``.

    Returns
    -------
    CovariateEffect

    Raises
    ------
    DataError
        ``ds`` has no covariates.
    """
    k = len(ds.covariates)
    if k == 0 or ds.x.shape[1] != 1 + k:
        raise DataError("these data have no covariates (columns named as covariates after the time column)")
    base = _design(ds)
    C = ds.X_train[:, 1:]
    y = ds.y_train
    names = ", ".join(ds.covariates)
    if ds.n_train <= base.shape[1] + k + 2:
        return CovariateEffect(ds.covariates, (0.0,) * k, False,
                               f"{names}: left out ({ds.n_train} training points are too few to estimate their effect)")
    with np.errstate(all="ignore"):
        without, _ = _bic(base, y)
        with_, beta = _bic(np.column_stack([base, C]), y)
    coef = tuple(float(b) for b in beta[-k:])
    said = ", ".join(f"{n} {b:+.4g}" for n, b in zip(ds.covariates, coef, strict=True))
    if not (math.isfinite(with_) and math.isfinite(without) and all(map(math.isfinite, coef))) or with_ >= without:
        return CovariateEffect(ds.covariates, (0.0,) * k, False,
                               f"{names}: left out (a regression with them, {said} per unit, does not lower the BIC "
                               f"of trend and season alone: {with_:.1f} against {without:.1f})")
    return CovariateEffect(ds.covariates, coef, True,
                           f"{names}: used, {said} per unit of each (a regression with trend and season: BIC "
                           f"{with_:.1f} against {without:.1f} without them); the kernel is searched on what they "
                           "leave")


def time_only(ds: Dataset) -> Dataset:
    """``ds`` along time alone: x's first column, y as it is, no covariates (what a kernel searched without
    covariates is applied to when the data have some)."""
    return dataclasses.replace(ds, x=ds.x[:, :1], covariates=(), notes=())


def searched_on(ds: Dataset) -> tuple[Dataset, CovariateEffect | None]:
    """What a search runs on, and the covariates' effect it keeps: for data with covariates, their effect
    (:func:`fit_covariates`) and ``ds`` along time with it taken out (:func:`on_time`); else ``ds`` itself
    and None. The one step of every search that takes covariates: the command line's, the front door's,
    a panel series' and the dashboard's background job's.

    A search's kernel file then records the effect (``doc["covariates"] = effect.to_dict()``), so that
    predictions and forecasts add it back.
    """
    if not ds.covariates:
        return ds, None
    effect = fit_covariates(ds)
    return on_time(ds, effect), effect


def on_time(ds: Dataset, effect: CovariateEffect) -> Dataset:
    """``ds`` along time alone, with the covariates' effect taken out of y: x of shape (n, 1), ``y − βᵀc``.

    Raises
    ------
    DataError
        ``ds`` lacks a covariate of ``effect``.
    """
    missing = [n for n in effect.names if n not in ds.covariates]
    if missing:
        raise DataError(f"the kernel uses the covariate{'s' * (len(missing) > 1)} {', '.join(map(repr, missing))}, "
                        "which these data do not have (command line: --covariates NAME ...)")
    cols = [1 + ds.covariates.index(n) for n in effect.names]
    y = ds.y - effect.effect(ds.x[:, cols])
    return dataclasses.replace(ds, x=ds.x[:, :1], y=y, covariates=(), notes=())


def future_covariates(table: pd.DataFrame, ds: Dataset, effect: CovariateEffect) -> tuple[Array, Array]:
    """The times and covariate values a forecast is asked at, from a table of future values.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per time: a time column (``ds.x_label``'s name, else the first column) and a column per
        covariate of ``effect``, named as in the data.
    ds : Dataset
        The observed series (its time column's units).
    effect : CovariateEffect

    Returns
    -------
    x : ndarray of shape (h,)
        The times, sorted, in the data's units.
    C : ndarray of shape (h, k)
        The covariates' values at them, in ``effect.names`` order.

    Raises
    ------
    DataError
        A covariate column absent, a value missing or not a number (naming the column and the line), a
        time that cannot be read or is not after the last observation, or no rows.
    """
    if table.shape[0] == 0 or table.shape[0] > MAX_HORIZON:
        raise DataError(f"the future values need 1 to {MAX_HORIZON:,} rows; got {table.shape[0]:,}")
    absent = [n for n in effect.names if n not in table.columns]
    if absent:
        raise DataError(f"the future values have no column {absent[0]!r} (columns: "
                        f"{', '.join(map(str, table.columns))}); every covariate the kernel uses needs its future")
    time_col = ds.x_label if ds.x_label in table.columns else table.columns[0]
    if time_col in effect.names:
        raise DataError("the future values need a time column besides the covariates (first column, or named "
                        f"{ds.x_label!r})")
    x = times_of(ds, table[time_col].to_numpy(dtype=object))
    C = np.empty((table.shape[0], len(effect.names)))
    for j, n in enumerate(effect.names):
        v = pd.to_numeric(table[n], errors="coerce").to_numpy(dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(v))
        if bad.size:
            at = future_labels(ds, x[bad[:1]])[0]
            raise DataError(f"the future value of covariate {n!r} is missing or not a number at {at} (line "
                            f"{bad[0] + 2}); a forecast needs every covariate at every time it is asked at")
        C[:, j] = v
    order = np.argsort(x, kind="stable")
    return x[order], C[order]


def forecast_with_covariates(kf: KernelFile, ds: Dataset, table: pd.DataFrame, *,
                             time_limit: float | Mapping[str, float] = DEFAULT_TIME_LIMIT) -> FutureForecast:
    """The forecast at the times of ``table`` with the covariates' values there: the kernel's (and the search's
    average's) forecast of ``y − βᵀc`` at those times (:func:`~evocov_core.forecast.future.forecast_future`),
    plus ``βᵀc`` from ``table``.

    Parameters
    ----------
    kf : KernelFile
        A kernel file with ``covariates`` (:class:`CovariateEffect`).
    ds : Dataset
        The observed series along time, the covariates' effect taken out (:func:`on_time`).
    table : pandas.DataFrame
        The future values (:func:`future_covariates`).
    time_limit : float or mapping of str to float
        Seconds per classical member.

    Returns
    -------
    FutureForecast
        Every mean and bound shifted by ``βᵀc``; the note says so.
    """
    effect = getattr(kf, "covariates", None)
    if effect is None:
        raise DataError("this kernel uses no covariates: forecast without future covariate values")
    x, C = future_covariates(table, ds, effect)
    return add_effect(forecast_future(kf, ds, time_limit=time_limit, at=x), effect, C)


def add_effect(fc: FutureForecast, effect: CovariateEffect, C: ArrayLike) -> FutureForecast:
    """``fc`` (a forecast of ``y − βᵀc``) with ``βᵀc`` added to every mean and bound, ``C`` of shape (h, k) the
    covariates at ``fc.x``; the note says so."""
    e = effect.effect(C)

    def up(v: Array | None) -> Array | None:
        return None if v is None else v + e

    note = fc.note + (f" The covariates' effect ({', '.join(effect.names)}, at their given future values) is "
                      "added to every mean and bound." if effect.used else " The covariates were left out.")
    return dataclasses.replace(fc, mean=up(fc.mean), lower=up(fc.lower), upper=up(fc.upper),
                               kernel_mean=up(fc.kernel_mean), kernel_lower=up(fc.kernel_lower),
                               kernel_upper=up(fc.kernel_upper), member_means=up(fc.member_means), note=note)

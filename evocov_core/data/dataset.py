"""The data set: :class:`Dataset` (inputs, values, the train/test split), its :class:`Normalisation`
to model units, and the split rule.

Conventions
-----------
* ``x`` is stored as floats in the data's own units (dates as decimal years,
  :mod:`evocov_core.data.dates`).
* The split is the one of the published TSDL benchmark: **test = every point whose x
  lies in the last ``test_fraction`` of the x-range**
  (``cutoff = min + (1 − f)(max − min)``, train ``x ≤ cutoff``). With f = 0.1 it
  reproduces ``../shared/data/tsdl/splits.csv`` exactly.
* Normalisation (fitted on the training part only): ``x̃ = 1 + (x − x_min)/(x_max − x_min)``
  per input dimension, so training inputs span [1, 2]. Unit range keeps lengthscales and
  periods on one scale across data sets; the origin one range before the data lets a
  positive ``dot_prod`` shift put a linear trend's zero anywhere from one range before
  the first point (GPSS's own prior for its location). ``ỹ = (y − mean)/std``. Every
  prediction and score leaves the engine in original units.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evocov_core.data.limits import MAX_TEST_FRACTION, MIN_POINTS, MIN_TRAIN_POINTS, DataError

__all__ = ["Dataset", "Normalisation", "split_mask", "spread", "units_mismatch", "validate_split"]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class Normalisation:
    """Affine maps between original and model units (fitted on training data).

    ``x̃ = 1 + (x − x_offset)/x_scale`` per dimension, ``ỹ = (y − y_mean)/y_std``.
    """

    x_offset: tuple[float, ...]
    x_scale: tuple[float, ...]
    y_mean: float
    y_std: float

    @classmethod
    def fit(cls, X: Array, y: Array) -> Normalisation:
        """The maps that put training inputs ``X`` (n, d) on [1, 2] and values ``y`` (n,) at mean 0, spread 1."""
        lo = X.min(axis=0)
        span = X.max(axis=0) - lo
        span = np.where(span > 0, span, 1.0)
        mean = float(np.mean(y))
        std = spread(y)
        return cls(tuple(map(float, lo)), tuple(map(float, span)), mean, std if std > 0 else 1.0)

    def x_to_model(self, X: ArrayLike) -> Array:
        """Inputs (n, d) in original units -> model units."""
        A = np.asarray(X, dtype=np.float64)
        if A.ndim == 1:
            A = A[:, None]
        if A.shape[1] != len(self.x_offset):
            # Broadcasting would turn one input column into as many as the normalisation has.
            raise DataError(f"the inputs have {A.shape[1]} column(s) but the normalisation (of the kernel "
                            f"file, or of the data it was fitted on) has {len(self.x_offset)}")
        return 1.0 + (A - np.asarray(self.x_offset)) / np.asarray(self.x_scale)

    def y_to_model(self, y: ArrayLike) -> Array:
        """Values (n,) in original units -> model units."""
        return (np.asarray(y, dtype=np.float64) - self.y_mean) / self.y_std

    def y_from_model(self, y: ArrayLike) -> Array:
        """Values (n,) in model units -> original units."""
        return np.asarray(y, dtype=np.float64) * self.y_std + self.y_mean

    def std_from_model(self, s: ArrayLike) -> Array:
        """Standard deviations (n,) in model units -> original units (scaled, not shifted)."""
        return np.asarray(s, dtype=np.float64) * self.y_std

    def to_dict(self) -> dict:
        """The maps as JSON values, with the formulas spelt out (a kernel file's ``normalisation``)."""
        return {
            "x_offset": list(self.x_offset),
            "x_scale": list(self.x_scale),
            "y_mean": self.y_mean,
            "y_std": self.y_std,
            "x_model": "x_model = 1 + (x - x_offset) / x_scale",
            "y_model": "y_model = (y - y_mean) / y_std",
        }

    @classmethod
    def from_dict(cls, d: dict) -> Normalisation:
        """Inverse of :meth:`to_dict`."""
        return cls(tuple(map(float, d["x_offset"])), tuple(map(float, d["x_scale"])),
                   float(d["y_mean"]), float(d["y_std"]))


def validate_split(test_fraction: float, n_train: int | None = None) -> None:
    """Refuse a split no search should learn from, with a :class:`DataError` of one line.

    The one check of the command line and the dashboard's Data page: a test fraction must
    lie in ``[0, MAX_TEST_FRACTION)`` (the training part is the larger), and the training
    part must hold at least :data:`MIN_TRAIN_POINTS` points. Call it with the fraction alone
    before splitting, and with ``n_train`` once the split is made.

    Parameters
    ----------
    test_fraction : float
        Fraction of the x-range held out as test (see :func:`split_mask`).
    n_train : int, optional
        Training points the split leaves.

    Raises
    ------
    DataError
        Saying what is wrong and what to change.
    """
    f = float(test_fraction)
    if not (0.0 <= f < MAX_TEST_FRACTION):
        raise DataError(f"test fraction {f:g} refused: it must be at least 0 and below {MAX_TEST_FRACTION:g}, "
                        "so that the training part is the larger")
    if n_train is not None and n_train < MIN_TRAIN_POINTS:
        raise DataError(f"test fraction {f:g} leaves {n_train} training point{'s' if n_train != 1 else ''}; "
                        f"at least {MIN_TRAIN_POINTS} are needed: lower the test fraction")


def split_mask(x: Array, test_fraction: float) -> NDArray[np.bool_]:
    """Training mask by the x-range rule (first input column)."""
    if not (0.0 <= test_fraction < 1.0):
        raise DataError(f"test fraction must be in [0, 1), got {test_fraction}")
    t = x[:, 0]
    lo, hi = float(t.min()), float(t.max())
    cutoff = lo + (1.0 - test_fraction) * (hi - lo)
    return t <= cutoff


def units_mismatch(fitted: Normalisation, data: Normalisation) -> str | None:
    """How far data normalised by ``data`` lie from those ``fitted`` was made on, or None when near.

    A kernel's hyperparameters live in the model units of the data it was fitted on: there its
    training values have mean 0 and spread 1, and its inputs run from 1 to 2. Other data in those
    units with a mean beyond ±5, a spread or an input span off by more than 10×, or inputs
    starting more than 10 spans away, are data the kernel has never seen.
    """
    if len(fitted.x_offset) != len(data.x_offset):
        return f"it has {len(fitted.x_offset)} input column(s), these data {len(data.x_offset)}"
    mean = (data.y_mean - fitted.y_mean) / fitted.y_std
    ratio = data.y_std / fitted.y_std
    if abs(mean) > 5 or not 0.1 <= ratio <= 10:
        return (f"in its units these data's values have mean {mean:.3g} and spread {ratio:.3g} "
                "(0 and 1 on its own data)")
    columns = zip(fitted.x_offset, fitted.x_scale, data.x_offset, data.x_scale, strict=True)
    for j, (o1, s1, o2, s2) in enumerate(columns):
        start, span = 1.0 + (o2 - o1) / s1, s2 / s1
        if abs(start - 1.0) > 10 or not 0.1 <= span <= 10:
            col = f"input {j + 1}" if len(fitted.x_offset) > 1 else "the input"
            return f"in its units {col} runs from {start:.3g} to {start + span:.3g} (1 to 2 on its own data)"
    return None


@dataclass(frozen=True)
class Dataset:
    """A regression data set with its train/test split and normalisation.

    Attributes
    ----------
    name : str
    x : ndarray of shape (n, d)
        Inputs in original units (decimal years for dates), sorted by the first column.
    y : ndarray of shape (n,)
    train : ndarray of bool, shape (n,)
        Training mask; the rest is the test part.
    x_label, y_label : str
    x_kind : str
        ``"number"`` or ``"date"`` (x holds decimal years).
    notes : tuple of str
        What loading changed (sorted, duplicates averaged, rows dropped, subsampled).
    test_fraction : float
    covariates : tuple of str
        The names of input columns 2 to d when they are covariates with known futures (temperature, a
        price, a holiday flag: :mod:`evocov_core.forecast.covariates`); empty when x is time alone or
        its columns are plain inputs.
    """

    name: str
    x: Array
    y: Array
    train: NDArray[np.bool_]
    x_label: str = "x"
    y_label: str = "y"
    x_kind: str = "number"
    notes: tuple[str, ...] = ()
    test_fraction: float = 0.1
    covariates: tuple[str, ...] = ()
    norm: Normalisation = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if int(self.train.sum()) < 2:
            raise DataError("the training part has fewer than 2 points; lower the test fraction")
        object.__setattr__(self, "norm", Normalisation.fit(self.x[self.train], self.y[self.train]))

    @classmethod
    def from_arrays(
        cls,
        x: ArrayLike,
        y: ArrayLike,
        *,
        name: str = "data",
        test_fraction: float = 0.1,
        duplicates: str = "average",
        x_label: str = "x",
        y_label: str = "y",
        x_kind: str = "number",
        notes: tuple[str, ...] = (),
        min_points: int = MIN_POINTS,
        covariates: tuple[str, ...] = (),
    ) -> Dataset:
        """Validate, sort and split.

        Parameters
        ----------
        x : array_like of shape (n,) or (n, d)
        y : array_like of shape (n,)
        duplicates : {"average", "keep"}
            Repeated x values: average their y (and say so), or keep every point.
        covariates : tuple of str
            Names of x's columns 2 to d, when they are covariates (:attr:`covariates`).
        """
        X = np.asarray(x, dtype=np.float64)
        if X.ndim == 1:
            X = X[:, None]
        Y = np.asarray(y, dtype=np.float64).reshape(-1)
        if X.shape[0] != Y.shape[0]:
            raise DataError(f"x has {X.shape[0]} rows but y has {Y.shape[0]}")
        bad = ~np.isfinite(Y) | ~np.all(np.isfinite(X), axis=1)
        if bad.any():
            rows = ", ".join(str(i + 1) for i in np.flatnonzero(bad)[:5])
            more = "…" if bad.sum() > 5 else ""
            raise DataError(f"{int(bad.sum())} rows have missing or infinite values (rows {rows}{more})")
        extra: list[str] = list(notes)
        order = np.argsort(X[:, 0], kind="stable")
        if np.any(order != np.arange(len(order))):
            extra.append("rows were not sorted by x; sorted them")
            X, Y = X[order], Y[order]
        rows = X.shape[0]
        # One input column sorted strictly upwards repeats no x: skip np.unique's sort of rows (1 s at 10⁶).
        if duplicates not in ("average", "keep"):
            raise ValueError("duplicates must be 'average' or 'keep'")
        distinct = X.shape[1] == 1 and bool(np.all(np.diff(X[:, 0]) > 0))
        if duplicates == "average" and not distinct:
            keys, inverse, counts = np.unique(X, axis=0, return_inverse=True, return_counts=True)
            if keys.shape[0] < X.shape[0]:
                inverse = inverse.reshape(-1)
                Y = np.bincount(inverse, weights=Y) / counts
                extra.append(f"{X.shape[0] - keys.shape[0]} repeated x values: averaged their y")
                X = keys
        if X.shape[0] < min_points:
            why = (f" ({rows} rows, whose repeated x values were averaged: is the x column the right one?)"
                   if X.shape[0] < rows else "")
            raise DataError(f"only {X.shape[0]} usable point{'s' * (X.shape[0] != 1)}{why}; at least "
                            f"{min_points} are needed")
        if float(np.ptp(X[:, 0])) <= 0:
            raise DataError("all x values are equal")
        if covariates and len(covariates) != X.shape[1] - 1:
            raise DataError(f"{len(covariates)} covariate names for {X.shape[1] - 1} covariate columns")
        return cls(name, X, Y, split_mask(X, test_fraction), x_label, y_label, x_kind,
                   tuple(extra), test_fraction, tuple(covariates))

    # --- views ---------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of points."""
        return int(self.y.shape[0])

    @property
    def n_train(self) -> int:
        """Number of training points."""
        return int(self.train.sum())

    @property
    def n_test(self) -> int:
        """Number of test points."""
        return self.n - self.n_train

    @property
    def X_train(self) -> Array:
        """Training inputs, shape (n_train, d)."""
        return self.x[self.train]

    @property
    def y_train(self) -> Array:
        """Training values, shape (n_train,)."""
        return self.y[self.train]

    @property
    def X_test(self) -> Array:
        """Test inputs, shape (n_test, d)."""
        return self.x[~self.train]

    @property
    def y_test(self) -> Array:
        """Test values, shape (n_test,)."""
        return self.y[~self.train]

    def with_test_fraction(self, test_fraction: float) -> Dataset:
        """Same data, new split (and normalisation)."""
        return replace(self, train=split_mask(self.x, test_fraction), test_fraction=test_fraction)

    def subsample(self, max_points: int) -> Dataset:
        """Keep ``max_points`` evenly spaced points (by position), both parts thinned alike.

        GP cost grows as n³: halving n makes each fit about 8x faster, at the price of
        the detail between kept points.
        """
        if self.n <= max_points:
            return self
        idx = np.unique(np.round(np.linspace(0, self.n - 1, max_points)).astype(int))
        note = f"subsampled from {self.n} to {idx.size} evenly spaced points"
        return Dataset.from_arrays(self.x[idx], self.y[idx], name=self.name, test_fraction=self.test_fraction,
                                   duplicates="keep", x_label=self.x_label, y_label=self.y_label,
                                   x_kind=self.x_kind, notes=(*self.notes, note), covariates=self.covariates)


def spread(y: ArrayLike) -> float:
    """The standard deviation of ``y``; below 1e-140, where squares lose their digits, computed on
    ``y`` scaled to at most 1 about its mean, so that values of 1e-200 keep their spread."""
    a = np.asarray(y, dtype=np.float64)
    if a.size == 0:
        return 0.0
    plain = float(np.std(a))
    if plain >= 1e-140:
        return plain
    dev = a - np.mean(a)
    scale = float(np.max(np.abs(dev)))
    return scale * float(np.std(dev / scale)) if scale > 0 else 0.0

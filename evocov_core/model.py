"""A fitted model in original units: kernel + values + normalisation -> predictions.

:class:`FittedModel` is what a kernel file describes and what the dashboard draws:
given the training data (original units) it predicts mean and standard deviation at
any inputs, in original units, with exactly the matrix that was scored (same noise,
same jitter, same normalisation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .data import Dataset, Normalisation
from .evaluate import Inputs
from .gp import posterior
from .kernel import Kernel
from .kernel_file import KernelFile
from .metrics import rmse
from .optimize import FitResult

__all__ = ["FittedModel", "Prediction"]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class Prediction:
    """Predictive distribution in original units.

    Attributes
    ----------
    x : ndarray of shape (m, d)
    mean : ndarray of shape (m,)
    std : ndarray of shape (m,)
        Standard deviation of a new observation (latent variance + noise).
    std_f : ndarray of shape (m,)
        Standard deviation of the latent function.
    """

    x: Array
    mean: Array
    std: Array
    std_f: Array


@dataclass(frozen=True)
class FittedModel:
    """Kernel, log slot values, log noise, jitter and the normalisation they live in."""

    kernel: Kernel
    theta: tuple[float, ...]
    log_noise: float
    jitter: float
    norm: Normalisation

    @classmethod
    def from_fit(cls, fit: FitResult, norm: Normalisation) -> FittedModel:
        if not fit.ok:
            raise ValueError(f"this kernel has no fitted values ({fit.reason})")
        return cls(fit.kernel, tuple(fit.theta), fit.log_noise, fit.jitter, norm)

    @classmethod
    def from_file(cls, kf: KernelFile, fallback_norm: Normalisation | None = None) -> FittedModel:
        norm = kf.normalisation or fallback_norm
        if norm is None:
            raise ValueError("the kernel file has no normalisation and none was given")
        return cls(kf.kernel, tuple(kf.theta), kf.log_noise, kf.jitter, norm)

    def predict(self, X_train: ArrayLike, y_train: ArrayLike, X_new: ArrayLike) -> Prediction:
        """Posterior at ``X_new`` given training data, all in original units.

        Parameters
        ----------
        X_train : array_like of shape (n, d) or (n,)
        y_train : array_like of shape (n,)
        X_new : array_like of shape (m, d) or (m,)
        """
        Xt = self.norm.x_to_model(X_train)
        yt = self.norm.y_to_model(y_train)
        Xn = self.norm.x_to_model(X_new)
        post = posterior(self.kernel, Inputs(Xt), yt, np.asarray(self.theta), self.log_noise, Xn,
                         jitter=self.jitter)
        noise = math.exp(self.log_noise) + self.jitter
        mean = self.norm.y_from_model(post.mean)
        std_f = self.norm.std_from_model(np.sqrt(post.var))
        std = self.norm.std_from_model(np.sqrt(post.var + noise))
        X_out = np.asarray(X_new, dtype=np.float64)
        return Prediction(X_out if X_out.ndim == 2 else X_out[:, None], mean, std, std_f)

    def predict_dataset(self, ds: Dataset, X_new: ArrayLike | None = None) -> Prediction:
        """Predict at ``X_new`` (default: the test part) from the data set's training part."""
        X = ds.X_test if X_new is None else X_new
        return self.predict(ds.X_train, ds.y_train, X)

    def test_rmse(self, ds: Dataset) -> float | None:
        """RMSE of the predictive mean on the data set's test part (original units)."""
        if ds.n_test == 0:
            return None
        return rmse(ds.y_test, self.predict_dataset(ds).mean)

"""scikit-learn: :class:`EvoCovRegressor`, and a found kernel as a scikit-learn ``Kernel``.

Needs scikit-learn (in ``requirements.txt``); the package's front door exports
``ec.EvoCovRegressor`` and ``ec.to_sklearn_kernel``.

A kernel in scikit-learn
------------------------
:func:`to_sklearn_kernel` turns a found kernel (a :class:`~evocov_core.api.KernelResult`, a kernel
file, a fit, or a :class:`~evocov_core.language.kernel.Kernel` with its log slot values) into an
:class:`EvoCovKernel`, a ``sklearn.gaussian_process.kernels.Kernel`` that evaluates the tree with
:mod:`evocov_core.language.evaluate`. Its ``theta`` is what scikit-learn's always is, the natural
logarithms of the hyperparameters, which is also how EvoCov stores them (``KernelResult.theta``), so
the values carry over unchanged and ``K_gradient`` is ``∂K/∂ log θ``, the evaluator's reverse mode.

The values are in **model units**: inputs mapped by the data's normalisation
(``x̃ = 1 + (x − x_offset)/x_scale``), outputs standardised (``ỹ = (y − y_mean)/y_std``). To reproduce
EvoCov's likelihood and posterior mean, give ``GaussianProcessRegressor`` the same transformed data,
the kernel's noise variance plus jitter as ``alpha`` (or ``noise=True``: a ``WhiteKernel`` in the
kernel and ``alpha=0``), ``normalize_y=False`` and ``optimizer=None``::

    from sklearn.gaussian_process import GaussianProcessRegressor
    from evocov_core.sklearn import noise_of

    k, alpha = ec.to_sklearn_kernel(res), noise_of(res)
    norm = res.dataset.norm
    gpr = GaussianProcessRegressor(k, alpha=alpha, optimizer=None, normalize_y=False)
    gpr.fit(norm.x_to_model(ds.X_train), norm.y_to_model(ds.y_train))
    gpr.log_marginal_likelihood_value_            # == LML in evocov_core.fitting.gp.lml
    norm.y_from_model(gpr.predict(norm.x_to_model(ds.X_test)))   # == res.predict(ds.X_test).mean

``tests/front/test_sklearn.py`` checks both on Airline to 1e-8.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.gaussian_process.kernels import Hyperparameter, Kernel, WhiteKernel
from sklearn.utils.validation import check_is_fitted, validate_data

from evocov_core.fitting.optimize import FitResult, HyperSpace
from evocov_core.language.evaluate import Inputs, covariance, covariance_diag, covariance_vjp
from evocov_core.language.kernel import Kernel as TreeKernel
from evocov_core.runs.kernel_file import KernelFile, parse_expression

if TYPE_CHECKING:  # pragma: no cover - types only
    from evocov_core.api import KernelResult

__all__ = ["EvoCovKernel", "EvoCovRegressor", "kernel_jacobian", "noise_of", "to_sklearn_kernel"]

Array = NDArray[np.float64]

#: Bytes of one batch of adjoints in :func:`kernel_jacobian`.
_BATCH_BYTES = 64 * 2**20


def kernel_jacobian(kernel: TreeKernel, X: ArrayLike, theta: ArrayLike) -> tuple[Array, Array]:
    """``K(X, X)`` and its exact Jacobian with respect to the log slot values.

    By the evaluator's reverse mode (:func:`evocov_core.language.evaluate.covariance_vjp`), one adjoint per
    distinct entry, in batches of bounded memory. For a stationary tree on 1-D inputs whose lags
    repeat (a regular grid, monthly dates) K is a function of the lag: one adjoint per distinct lag,
    ``O(n_lags · n²)``. Otherwise one per entry of the upper triangle, ``O(n⁴)``: seconds at a
    hundred points, meant for checks and small data, not for scikit-learn's optimiser on long series.

    Parameters
    ----------
    kernel : Kernel
        The tree (:class:`evocov_core.language.kernel.Kernel`).
    X : array_like of shape (n, d) or (n,)
    theta : array_like of shape (p,)
        Log slot values, ordered as ``kernel.slots``.

    Returns
    -------
    K : ndarray of shape (n, n)
    dK : ndarray of shape (n, n, p)
        ``dK[i, j, k] = ∂K_ij / ∂ log θ_k``.
    """
    inputs = Inputs(X)
    K, vjp = covariance_vjp(kernel, inputs, theta)
    n, p = K.shape[0], kernel.n_params
    if p == 0:
        return K, np.zeros((n, n, 0))
    per = max(1, _BATCH_BYTES // (8 * n * n))
    if inputs.row is not None and kernel.is_stationary:
        lag = inputs.lag_matrix
        present = np.unique(lag)
        counts = np.bincount(lag.ravel(), minlength=int(present[-1]) + 1)
        row = np.zeros((int(present[-1]) + 1, p))
        for s in range(0, present.size, per):
            ls = present[s:s + per]
            G = (lag[None, :, :] == ls[:, None, None]).astype(np.float64)
            row[ls] = vjp(G) / counts[ls][:, None]
        return K, row[lag]
    iu, ju = np.triu_indices(n)
    dK = np.empty((n, n, p))
    for s in range(0, iu.size, per):
        i, j = iu[s:s + per], ju[s:s + per]
        G = np.zeros((i.size, n, n))
        G[np.arange(i.size), i, j] = 1.0
        g = vjp(G)
        dK[i, j] = g
        dK[j, i] = g
    return K, dK


class EvoCovKernel(Kernel):
    """A kernel tree of EvoCov as a scikit-learn kernel.

    Parameters
    ----------
    expression : str
        The tree in prefix form (``KernelResult.kernel.prefix``), parsed by
        :func:`evocov_core.language.parse.parse_expression` (validated, never evaluated).
    log_values : tuple of float
        Natural logarithms of the slot values, ordered as the kernel's slots (sorted by slot
        number): scikit-learn's ``theta``.
    log_bounds : "search", "fixed" or (float, float)
        Box of every ``log θ`` for scikit-learn's optimiser: ``"search"`` is the box EvoCov's fits use
        (:class:`evocov_core.fitting.optimize.HyperSpace`, −10 to 10), ``"fixed"`` leaves no free
        hyperparameter.

    Notes
    -----
    ``K_gradient`` is ``∂K/∂θ`` with ``θ = log values`` (:func:`kernel_jacobian`): exact, cheap for
    a stationary tree on a regular 1-D grid, ``O(n⁴)`` otherwise.
    """

    def __init__(self, expression: str, log_values: tuple[float, ...], log_bounds: Any = "search") -> None:
        self.expression = expression
        self.log_values = log_values
        self.log_bounds = log_bounds

    # --- the tree ---------------------------------------------------------------------------
    @property
    def tree(self) -> TreeKernel:
        """The parsed :class:`evocov_core.language.kernel.Kernel`."""
        cached = self.__dict__.get("_tree")
        if cached is None or cached[0] != self.expression:
            cached = (self.expression, parse_expression(self.expression))
            self.__dict__["_tree"] = cached
        return cached[1]

    def _theta_all(self) -> Array:
        t = np.asarray(self.log_values, dtype=np.float64).reshape(-1)
        if t.shape[0] != self.tree.n_params:
            raise ValueError(f"log_values has {t.shape[0]} values but the kernel has {self.tree.n_params} slots")
        return t

    @property
    def _fixed(self) -> bool:
        return isinstance(self.log_bounds, str) and self.log_bounds == "fixed"

    def _box(self) -> tuple[float, float]:
        if isinstance(self.log_bounds, str):
            if self.log_bounds not in ("search", "fixed"):
                raise ValueError(f"log_bounds must be 'search', 'fixed' or (low, high), got {self.log_bounds!r}")
            return HyperSpace().bounds
        lo, hi = (float(v) for v in self.log_bounds)
        return lo, hi

    # --- scikit-learn's kernel interface ------------------------------------------------------
    @property
    def hyperparameters(self) -> list[Hyperparameter]:
        """One numeric hyperparameter per slot (``hp0``...), bounds in natural units."""
        lo, hi = self._box()
        return [Hyperparameter(s, "numeric", np.array([math.exp(lo), math.exp(hi)]), fixed=self._fixed)
                for s in self.tree.slots]

    @property
    def theta(self) -> Array:
        """Log slot values of the free hyperparameters, shape (n_dims,) (empty when fixed)."""
        return np.empty(0) if self._fixed else self._theta_all().copy()

    @theta.setter
    def theta(self, theta: ArrayLike) -> None:
        t = np.asarray(theta, dtype=np.float64).reshape(-1)
        if self._fixed:
            if t.size:
                raise ValueError("this kernel's hyperparameters are fixed: theta must be empty")
            return
        if t.shape[0] != self.tree.n_params:
            raise ValueError(f"theta has {t.shape[0]} values but the kernel has {self.tree.n_params} slots")
        self.log_values = tuple(float(v) for v in t)

    @property
    def bounds(self) -> Array:
        """Log bounds of the free hyperparameters, shape (n_dims, 2)."""
        if self._fixed:
            return np.empty((0, 2))
        lo, hi = self._box()
        return np.tile([lo, hi], (self.tree.n_params, 1)).astype(np.float64)

    def __call__(self, X: ArrayLike, Y: ArrayLike | None = None, eval_gradient: bool = False
                 ) -> Array | tuple[Array, Array]:
        """``K(X, Y)``, and with ``eval_gradient`` its gradient with respect to ``theta``.

        Parameters
        ----------
        X : array_like of shape (n, d)
        Y : array_like of shape (m, d), optional
            Omit for ``K(X, X)``.
        eval_gradient : bool
            Only when ``Y`` is omitted.

        Returns
        -------
        K : ndarray of shape (n, m)
        K_gradient : ndarray of shape (n, n, n_dims)
            With ``eval_gradient``: ``∂K/∂θ`` (log values; empty last axis when fixed).
        """
        theta = self._theta_all()
        if Y is not None:
            if eval_gradient:
                raise ValueError("Gradient can only be evaluated when Y is None.")
            return covariance(self.tree, np.asarray(X, dtype=np.float64), theta, np.asarray(Y, dtype=np.float64))
        if not eval_gradient:
            return covariance(self.tree, Inputs(X), theta)
        K, dK = kernel_jacobian(self.tree, X, theta)
        return (K, dK[:, :, :0]) if self._fixed else (K, dK)

    def diag(self, X: ArrayLike) -> Array:
        """``k(x_i, x_i)``, shape (n,), without forming K."""
        return covariance_diag(self.tree, X, self._theta_all())

    def is_stationary(self) -> bool:
        """Whether K depends on ``x − x'`` only (no dot product, change point or state-space operator)."""
        return self.tree.is_stationary

    def __repr__(self) -> str:
        values = ", ".join(f"{s}={math.exp(t):.4g}" for s, t in zip(self.tree.slots, self._theta_all(), strict=True))
        return f"EvoCovKernel({self.tree.infix}; {values})"


class _SourceValues(NamedTuple):
    """A found kernel's tree and values, from anything :func:`to_sklearn_kernel` takes.

    Attributes
    ----------
    tree : Kernel
    theta : ndarray of shape (p,)
        Log slot values, ordered as ``tree.slots``.
    noise : float
        Noise variance plus jitter (0 for a bare kernel).
    """

    tree: TreeKernel
    theta: Array
    noise: float


def _source_values(source: object, theta: ArrayLike | None) -> _SourceValues:
    """The tree, log slot values and noise variance + jitter of anything :func:`to_sklearn_kernel` takes."""
    from evocov_core.api import KernelResult

    if isinstance(source, KernelResult):
        source = source.kernel_file
    if isinstance(source, (KernelFile, FitResult)):
        if theta is not None:
            raise ValueError("theta is read from the kernel file or fit; pass it only with a bare Kernel")
        return _SourceValues(source.kernel, np.asarray(source.theta, dtype=np.float64),
                             math.exp(source.log_noise) + source.jitter)
    if isinstance(source, TreeKernel):
        if theta is None:
            raise ValueError("a bare Kernel needs its log slot values: to_sklearn_kernel(kernel, theta)")
        return _SourceValues(source, np.asarray(theta, dtype=np.float64).reshape(-1), 0.0)
    raise TypeError(f"cannot export a {type(source).__name__}: pass a KernelResult, KernelFile, FitResult or Kernel")


def to_sklearn_kernel(source: KernelResult | KernelFile | FitResult | TreeKernel, theta: ArrayLike | None = None,
                      *, noise: bool = False, log_bounds: Any = "search") -> Kernel:
    """A found kernel as a scikit-learn ``Kernel`` for ``GaussianProcessRegressor``.

    Parameters
    ----------
    source : KernelResult, KernelFile, FitResult or Kernel
        The kernel and its fitted values (a bare :class:`~evocov_core.language.kernel.Kernel` needs ``theta``).
    theta : array_like of shape (p,), optional
        Log slot values, ordered as ``kernel.slots`` (only with a bare Kernel).
    noise : bool
        Add the fitted noise variance plus jitter as a ``WhiteKernel`` (then use ``alpha=0``); by
        default the kernel alone, and ``alpha`` is ``noise_variance + jitter``
        (:func:`noise_of`).
    log_bounds : "search", "fixed" or (float, float)
        See :class:`EvoCovKernel`.

    Returns
    -------
    sklearn.gaussian_process.kernels.Kernel
        An :class:`EvoCovKernel` (plus a ``WhiteKernel`` with ``noise``), in model units (module
        docstring).
    """
    tree, values, noise_var = _source_values(source, theta)
    if values.shape[0] != tree.n_params:
        raise ValueError(f"theta has {values.shape[0]} values but the kernel has {tree.n_params} slots")
    k: Kernel = EvoCovKernel(tree.prefix, tuple(float(v) for v in values), log_bounds)
    if noise:
        if noise_var <= 0:
            raise ValueError("no fitted noise to add: pass a KernelResult, KernelFile or FitResult")
        k = k + WhiteKernel(noise_var, "fixed" if log_bounds == "fixed" else (1e-12, 1e3))
    return k


def noise_of(source: KernelResult | KernelFile | FitResult) -> float:
    """The diagonal EvoCov adds to K on the training points: noise variance plus jitter (model units).

    ``GaussianProcessRegressor(alpha=noise_of(res))`` with :func:`to_sklearn_kernel` reproduces EvoCov's
    likelihood and posterior mean (module docstring).
    """
    return _source_values(source, None).noise


class EvoCovRegressor(RegressorMixin, BaseEstimator):
    """A kernel search as a scikit-learn regressor: ``fit`` searches, ``predict`` is the GP posterior.

    ``fit(X, y)`` runs :func:`evocov_core.api.search` on all of ``(X, y)`` (no test part held out)
    and keeps the returned kernel with its fitted values; ``predict(X)`` is its posterior mean given
    the training data, with ``return_std`` the standard deviation of a new observation (latent
    variance plus noise, times the search's calibration).

    Parameters
    ----------
    preset : str
        ``quick`` (60 s), ``standard`` (5 min), ``paper`` or ``quick-fixed``
        (:data:`evocov_core.searches.PRESETS`).
    time_budget : float, optional
        Seconds for the whole search (overrides the preset's; 0 = none, fixed counts).
    seed : int
    algorithm : str
        ``evocov``, ``random``, ``gwtf`` or ``gpss``.
    workers : int, optional
        Processes fitting kernels (1: in this process; None: every core).
    settings : dict, optional
        Any other :class:`~evocov_core.searches.SearchConfig` setting (``{"population": 20}``).

    Attributes
    ----------
    result_ : KernelResult
        The kernel, its values and the training data (:class:`evocov_core.api.KernelResult`).
    kernel_ : sklearn.gaussian_process.kernels.Kernel
        The kernel as scikit-learn's (:func:`to_sklearn_kernel`), in model units.
    n_features_in_ : int

    Notes
    -----
    ``sklearn.utils.estimator_checks.check_estimator`` passes on it with a fixed-count preset
    (``tests/front/test_sklearn.py``, scikit-learn 1.9: 52 checks). One check is skipped, and the
    sample-weight checks are not generated:

    ``check_array_api_input``
        skipped by scikit-learn itself unless ``SCIPY_ARRAY_API=1`` is set; the estimator does not
        declare array-API support (the search runs on NumPy arrays), so it is not run.
    ``check_sample_weight_equivalence_*``, ``check_sample_weights_*``
        not generated: ``fit`` takes no ``sample_weight`` (a GP kernel search has no weighted form).
    """

    def __init__(self, preset: str = "quick", time_budget: float | None = None, seed: int = 0,
                 algorithm: str = "evocov", workers: int | None = None, settings: dict | None = None) -> None:
        self.preset = preset
        self.time_budget = time_budget
        self.seed = seed
        self.algorithm = algorithm
        self.workers = workers
        self.settings = settings

    def fit(self, X: ArrayLike, y: ArrayLike) -> EvoCovRegressor:
        """Search for a kernel of ``y`` given ``X``.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)
            At least 10 samples (:data:`evocov_core.data.MIN_POINTS`), the first column spread.
        y : array_like of shape (n_samples,)

        Returns
        -------
        self
        """
        from evocov_core.api import search
        from evocov_core.data.dataset import Dataset
        from evocov_core.data.limits import MIN_POINTS

        X, y = validate_data(self, X, y, y_numeric=True, ensure_min_samples=MIN_POINTS, dtype=np.float64)
        ds = Dataset.from_arrays(X, y, name="fit", test_fraction=0.0, duplicates="keep")
        overrides = dict(self.settings or {})
        if self.time_budget is not None:
            overrides["time_budget"] = float(self.time_budget)
        self.result_ = search(ds, self.preset, self.seed, algorithm=self.algorithm, workers=self.workers,
                              **overrides)
        self.kernel_ = to_sklearn_kernel(self.result_)
        return self

    def predict(self, X: ArrayLike, return_std: bool = False) -> Array | tuple[Array, Array]:
        """Posterior mean at ``X``, and with ``return_std`` the standard deviation of a new observation.

        Parameters
        ----------
        X : array_like of shape (n_samples, n_features)
        return_std : bool

        Returns
        -------
        y_mean : ndarray of shape (n_samples,)
        y_std : ndarray of shape (n_samples,)
            Only with ``return_std``.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        pred = self.result_.predict(X)
        return (pred.mean, pred.std) if return_std else pred.mean

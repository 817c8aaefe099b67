"""Hyperparameter fitting: multi-start L-BFGS-B or budgeted Powell, with inheritance.

One call of :func:`fit_kernel` optimises a kernel's hyperparameters under a metric
and returns a frozen :class:`FitResult` (θ, metric, LML, BIC, test RMSE, status,
evaluations, seconds). It never raises for numerical reasons: a kernel that cannot be
evaluated gets a :class:`FitStatus` other than ``OK``, a reason, and BIC = +inf.
Numerical reasons are :data:`NUMERIC_ERRORS` only (a failed Cholesky, NaN/inf, an
overflow, a LAPACK error); anything else, e.g. a ``ValueError`` or ``TypeError`` from
a bug, propagates so that it shows in the tests instead of failing every kernel.

The optimiser sees ``z = [log θ_1 … log θ_p, log σ²_noise]`` (natural logs), inside the
box :class:`HyperSpace` documents.

Methods
-------
``lbfgs``  (default for LML and LOOCV) scipy's L-BFGS-B with the analytic gradient,
           ``n_restarts`` starts, at most ``max_evals`` evaluations each.
``powell`` the paper's method: Powell's method restarted every time it stops, until the
           budget ``max_fun_call = ref_fun_call · 350² / n²`` evaluations is spent; points
           outside the box get a penalty (Powell is unbounded in the paper).
``auto``   ``lbfgs`` for metrics with gradients, ``powell`` for the others.

Starting points (section 4.3.2)
-------------------------------
* New kernels: every start drawn at random, slot by slot, from the range of the role the
  slot plays in the tree (:func:`init_ranges`); frequency slots mostly near a peak of the
  data's periodogram (:mod:`evocov_core.fitting.spectrum`). ``init="paper"`` draws uniformly in
  the whole box instead, as the paper does.
* Kernels made by variation, and selected kernels evaluated again: the first start is
  the inherited (or current) values themselves, the others are drawn from
  ``N(θ_parent, σθ²)`` in log space. Slots with nothing to inherit are drawn as for new
  kernels. Keeping the exact parent values as one start means a re-evaluation can only
  improve the metric.

The best point seen over all evaluations is returned, never only the optimiser's
final point (scipy's bounded Powell can end on a worse point than one it evaluated).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize

from evocov_core.fitting.gp import FitStatus, NumericalFailure, posterior
from evocov_core.fitting.gp import lml as gp_lml
from evocov_core.fitting.lbfgs import minimize_lbfgsb
from evocov_core.fitting.metrics import GRADIENT_METRICS, METRICS, FitData, loss, loss_and_grad, median_step, rmse
from evocov_core.fitting.priors import HyperPrior, penalty
from evocov_core.fitting.scoring import PENALTY, bic
from evocov_core.language.kernel import Kernel, slot_roles

__all__ = [
    "NUMERIC_ERRORS",
    "FitResult",
    "FitStatus",
    "HyperSpace",
    "OptimConfig",
    "Start",
    "fit_kernel",
    "init_ranges",
    "powell_budget",
    "slot_bounds",
    "slot_roles",
]

Array = NDArray[np.float64]

_BIG = 1e10  # loss returned for points that cannot be evaluated
#: Probability that a new start of a frequency slot is drawn near a periodogram peak.
PEAK_PROBABILITY = 0.8
#: What a fit records as a failed evaluation instead of raising: NaN/inf and failed Cholesky
#: (NumericalFailure, from evocov_core.fitting.gp), overflow and 0/0 (ArithmeticError), LAPACK errors.
#: Not ValueError: no numerical failure raises one (none over the tests and ~1000 random kernels
#: under every metric), so a ValueError is a bug or a misuse, and it must surface.
NUMERIC_ERRORS = (NumericalFailure, ArithmeticError, np.linalg.LinAlgError)


@dataclass(frozen=True)
class HyperSpace:
    """The box the optimiser searches, in natural-log space.

    Model units: training inputs span [1, 2], outputs are standardised (see
    :mod:`evocov_core.data`). A slot may play several roles (lengthscale, frequency,
    amplitude, exponent, ...) so all slots share one box.

    Attributes
    ----------
    bounds : (float, float)
        Box of every ``log θ``. Default (−10, 10): θ from 4.5e-5 to 2.2e4, enough for a
        frequency of a period of two samples at n = 7000 and for lengthscales far
        beyond the data.
    noise_bounds : (float, float)
        Box of ``log σ²_noise``. Default (log 1e-6, log 10) in units of var(y).
    """

    bounds: tuple[float, float] = (-10.0, 10.0)
    noise_bounds: tuple[float, float] = (math.log(1e-6), math.log(10.0))

    def lower_upper(self, p: int) -> tuple[Array, Array]:
        lo = np.full(p + 1, self.bounds[0])
        hi = np.full(p + 1, self.bounds[1])
        lo[-1], hi[-1] = self.noise_bounds
        return lo, hi


@dataclass(frozen=True)
class OptimConfig:
    """Settings of one hyperparameter optimisation.

    Attributes
    ----------
    metric : str
        One of ``lml``, ``loocv``, ``posterior_lml``, ``sopl``, ``rmse``.
    method : str
        ``auto``, ``lbfgs`` or ``powell``.
    n_restarts : int
        Starts for L-BFGS-B.
    max_evals : int
        Evaluations per L-BFGS-B start.
    n_screen : int
        Candidate starts scored (metric only, no gradient) before L-BFGS-B runs from the
        ``n_restarts`` best of them; 0 or ≤ ``n_restarts`` disables screening. An
        inherited start is always kept.
    ref_fun_call : int
        Powell budget reference: ``max_fun_call = ref_fun_call · 350² / n²`` (paper: 300).
    sigma_theta : float
        Standard deviation of inherited starts in log space (paper: 0.1).
    init : str
        ``roles`` (data-aware ranges per slot role) or ``paper`` (uniform in the box).
    space : HyperSpace
    data_bounds : bool
        Tie the box of lengthscale and frequency slots to the data (:func:`slot_bounds`):
        no lengthscale below half the sampling step, no period shorter than two steps or
        longer than the training span.
    prior : HyperPrior or None
        Priors on the hyperparameters (:mod:`~evocov_core.fitting.priors`): the fit is then the
        posterior mode (MAP), and its LML and BIC are the data's at that mode. Only with ``lml``.
    """

    metric: str = "lml"
    method: str = "auto"
    n_restarts: int = 3
    max_evals: int = 60
    n_screen: int = 50
    ref_fun_call: int = 300
    sigma_theta: float = 0.1
    init: str = "roles"
    space: HyperSpace = field(default_factory=HyperSpace)
    data_bounds: bool = False
    prior: HyperPrior | None = None

    def __post_init__(self) -> None:
        if self.prior is not None and self.metric != "lml":
            raise ValueError(f"hyperparameter priors make the fit a posterior mode of the LML; metric '{self.metric}' "
                             "has none (use lml, or no priors)")
        if self.metric not in METRICS:
            raise ValueError(f"unknown metric {self.metric!r}; choose one of {', '.join(METRICS)}")
        if self.method not in ("auto", "lbfgs", "powell"):
            raise ValueError(f"unknown method {self.method!r}; choose auto, lbfgs or powell")
        if self.method == "lbfgs" and self.metric not in GRADIENT_METRICS:
            raise ValueError(f"L-BFGS-B needs a gradient; metric {self.metric!r} has none (use powell)")
        if self.n_restarts < 1:
            raise ValueError("n_restarts must be at least 1")
        if self.max_evals < 2:
            raise ValueError("max_evals must be at least 2")
        if self.n_screen < 0:
            raise ValueError("n_screen must be non-negative")
        if self.ref_fun_call < 1:
            raise ValueError("ref_fun_call must be at least 1")
        if self.sigma_theta < 0:
            raise ValueError("sigma_theta must be non-negative")
        if self.init not in ("roles", "paper"):
            raise ValueError("init must be 'roles' or 'paper'")

    @property
    def resolved_method(self) -> str:
        if self.method == "auto":
            return "lbfgs" if self.metric in GRADIENT_METRICS else "powell"
        return self.method


@dataclass(frozen=True)
class Start:
    """Known starting values: log θ per slot of the kernel (NaN = unknown) and log noise."""

    theta: tuple[float, ...]
    log_noise: float = math.nan


@dataclass(frozen=True)
class FitResult:
    """Outcome of fitting one kernel.

    Attributes
    ----------
    kernel : Kernel
    theta : tuple of float
        Log slot values at the best point (ordered as ``kernel.slots``).
    log_noise : float
        Log noise variance (model units).
    jitter : float
        Extra diagonal the Cholesky needed at the best point (0 when none).
    status : FitStatus
        ``OK``, ``CHOLESKY_FAILED``, ``NON_FINITE`` or ``OPTIMISER_FAILED`` (a search
        adds ``SCREENED_OUT``). A string is converted on construction.
    reason : str
        Why it failed (empty when ok).
    metric : str
    metric_value : float
        The metric at ``theta`` (natural orientation).
    lml : float
        Training LML at ``theta``.
    bic : float
        ``−2·lml + q·log n``; +inf when the fit failed.
    q : int
        Hyperparameters, noise included.
    n : int
        Training points.
    n_evals : int
        Metric evaluations spent.
    seconds : float
    test_rmse : float or None
        RMSE of the predictive mean on the test part, original units.
    """

    kernel: Kernel
    theta: tuple[float, ...]
    log_noise: float
    jitter: float
    status: FitStatus
    reason: str
    metric: str
    metric_value: float
    lml: float
    bic: float
    q: int
    n: int
    n_evals: int
    seconds: float
    test_rmse: float | None = None

    def __post_init__(self) -> None:
        # A status given as its string (an old row, a test) becomes the member; unknown ones raise.
        if type(self.status) is not FitStatus:
            object.__setattr__(self, "status", FitStatus(self.status))

    @classmethod
    def failed(cls, kernel: Kernel, *, status: FitStatus, reason: str, metric: str, n: int, n_evals: int,
               seconds: float) -> FitResult:
        """A fit that found no usable point: NaN values, BIC = +inf (:data:`~evocov_core.fitting.scoring.PENALTY`)."""
        nan = math.nan
        return cls(kernel=kernel, theta=tuple([nan] * kernel.n_params), log_noise=nan, jitter=0.0, status=status,
                   reason=reason, metric=metric, metric_value=nan, lml=nan, bic=PENALTY, q=kernel.q, n=n,
                   n_evals=n_evals, seconds=seconds, test_rmse=None)

    @property
    def ok(self) -> bool:
        return self.status == FitStatus.OK

    @property
    def z(self) -> Array:
        """``[theta, log_noise]`` as an array."""
        return np.array((*self.theta, self.log_noise), dtype=np.float64)

    @property
    def noise_variance(self) -> float:
        return math.exp(self.log_noise)

    def start(self) -> Start:
        """This fit's values as a :class:`Start` (to continue optimising)."""
        return Start(self.theta, self.log_noise)


def finite_or(v: object, default: float = math.nan) -> float:
    """``v`` as a finite float, else ``default`` (missing, text or non-finite)."""
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default
    return f if math.isfinite(f) else default


def finite_or_none(v: object) -> float | None:
    """``v`` as a finite float, else None: what files and tables record for a missing number."""
    f = finite_or(v)
    return None if math.isnan(f) else f


def powell_budget(ref_fun_call: int, n: int) -> int:
    """The paper's ``max_fun_call = ref_fun_call · 350² / n²`` (at least 1)."""
    return max(1, int(ref_fun_call * 350**2 / n**2))


# --- starting points --------------------------------------------------------------


def init_ranges(data: FitData) -> dict[str, tuple[float, float]]:
    """Log-space ranges new starts are drawn from, by slot role, for these data.

    With training inputs spanning [1, 2] and median spacing h (model units):
    frequencies for periods from two ranges down to two samples, ``[log π, log(π/h)]``;
    lengthscales from one sample to ten ranges, ``[log h, log 10]``; periodic
    lengthscales, dot-product scales and values ``[−3, 3]`` around unit variance;
    shifts ``[log 0.1, log 3]`` (a trend's zero from one range before the data to one
    after); exponents ``[log 0.1, log 5]``; change-point locations inside the data
    ``[log 1.05, log 1.95]`` and widths from one sample to a fifth of the range
    ``[log h, log 0.2]`` (the steepness of a change window's edges too); change-window centres
    as change-point locations and window widths from two samples to half the range
    ``[log 2h, log 0.5]``; a damped trend's time constant as a lengthscale; noise variance
    ``[log 1e-4, log 0.5]``.
    """
    h = data.step if math.isfinite(data.step) else median_step(data.X[:, 0])
    return {
        "frequency": (math.log(math.pi), max(math.log(math.pi) + 0.5, math.log(math.pi / h))),
        # The max: inputs in another data set's units (a kernel file on other data) can space
        # their points more than 10 apart, and the range must not turn over.
        "lengthscale": (math.log(h), max(math.log(h) + 0.5, math.log(10.0))),
        "periodic_lengthscale": (-3.0, 3.0),
        "shift": (math.log(0.1), math.log(3.0)),
        "scale": (-3.0, 3.0),
        "value": (-3.0, 3.0),
        "exponent": (math.log(0.1), math.log(5.0)),
        "location": (math.log(1.05), math.log(1.95)),
        "steepness": (math.log(h), max(math.log(h) + 0.5, math.log(0.2))),
        "window_centre": (math.log(1.05), math.log(1.95)),
        "window_width": (math.log(2 * h), max(math.log(2 * h) + 0.5, math.log(0.5))),
        "damping": (math.log(h), max(math.log(h) + 0.5, math.log(10.0))),
        "": (-3.0, 3.0),
        "noise": (math.log(1e-4), math.log(0.5)),
    }


def slot_bounds(kernel: Kernel, data: FitData, config: OptimConfig,
                roles: dict[str, set[str]] | None = None) -> tuple[Array, Array]:
    """Lower and upper bounds of ``z = [log θ, log σ²]`` for this kernel on these data.

    The box of :class:`HyperSpace`; with ``config.data_bounds``, a slot whose only role is
    ``lengthscale`` gets ``log θ ≥ log(h/2)`` and one whose only role is ``frequency``
    gets ``ω = 2π/p`` with ``2h ≤ p ≤ span`` (h: sampling step, span: training range,
    model units); a damped trend's time constant is bounded as a lengthscale. A slot
    with several roles keeps the plain box. Shorter lengthscales turn a kernel into
    white noise, shorter periods alias, and a period longer than the data is a trend
    that the kernel wraps around when it extrapolates. A change-point
    ``location`` stays inside the training inputs (beyond them it changes nothing the
    data can show, only the forecast) and its ``steepness`` between h/4 (a step) and the
    span.
    """
    lo, hi = config.space.lower_upper(kernel.n_params)
    if not config.data_bounds:
        return lo, hi
    roles = slot_roles(kernel) if roles is None else roles
    h = data.step if math.isfinite(data.step) else median_step(data.X[:, 0])
    span = data.span if math.isfinite(data.span) and data.span > 0 else 1.0
    for k, s in enumerate(kernel.slots):
        r = roles[s]
        if r == {"lengthscale"} or r == {"damping"}:
            lo[k] = max(lo[k], math.log(h / 2))
        elif r == {"frequency"}:
            lo[k] = max(lo[k], math.log(2 * math.pi / span))
            hi[k] = min(hi[k], math.log(math.pi / h))
        elif r == {"location"} or r == {"window_centre"}:
            x = data.X[:, 0]
            lo[k] = max(lo[k], math.log(max(float(x.min()), 1e-300)))
            hi[k] = min(hi[k], math.log(max(float(x.max()), 1e-300)))
        elif r == {"steepness"}:
            lo[k] = max(lo[k], math.log(h / 4))
            hi[k] = min(hi[k], math.log(span))
        elif r == {"window_width"}:
            lo[k] = max(lo[k], math.log(h))
            hi[k] = min(hi[k], math.log(span))
        if lo[k] > hi[k]:  # too few points for the rule: keep the plain box
            lo[k], hi[k] = config.space.bounds
    return lo, hi


@lru_cache(maxsize=256)
def _peak_cdf(weights: tuple[float, ...]) -> Array:
    cdf = np.asarray(weights, dtype=np.float64).cumsum()
    cdf /= cdf[-1]
    return cdf


def _draw_new(kernel: Kernel, data: FitData, config: OptimConfig, rng: np.random.Generator,
              ranges: dict[str, tuple[float, float]], roles: dict[str, set[str]],
              bounds: tuple[Array, Array] | None = None) -> Array:
    p = kernel.n_params
    lo, hi = slot_bounds(kernel, data, config, roles) if bounds is None else bounds
    if config.init == "paper":
        return rng.uniform(lo, hi)
    omegas, weights = data.frequency_peaks
    z = np.empty(p + 1)
    for k, s in enumerate(kernel.slots):
        r = sorted(roles[s]) or [""]
        # integers(1) draws nothing from the stream: skipping it leaves the draws as they were.
        role = r[int(rng.integers(len(r)))] if len(r) > 1 else r[0]
        if role == "frequency" and omegas and rng.random() < PEAK_PROBABILITY:
            # Near a periodogram peak (see evocov_core.fitting.spectrum), drawn as rng.choice(p=weights)
            # draws (one uniform, the same stream) without its checks of p, which cost 25 µs a call.
            w = omegas[int(_peak_cdf(weights).searchsorted(rng.random(), side="right"))]
            z[k] = math.log(w) + 0.01 * rng.standard_normal()
        else:
            a, b = ranges[role]
            z[k] = rng.uniform(a, b)
    z[-1] = rng.uniform(*ranges["noise"])
    return np.clip(z, lo, hi)


def _starts(kernel: Kernel, data: FitData, config: OptimConfig, rng: np.random.Generator,
            start: Start | None, count: int) -> list[Array]:
    ranges, roles = init_ranges(data), slot_roles(kernel)
    lo, hi = slot_bounds(kernel, data, config, roles)
    known = None if start is None else np.array((*start.theta, start.log_noise), dtype=np.float64)
    out = []
    for k in range(count):
        z = _draw_new(kernel, data, config, rng, ranges, roles, (lo, hi))
        if known is not None:
            if known.shape != z.shape:
                raise ValueError(f"start has {known.size - 1} slot values, kernel has {kernel.n_params}")
            mask = np.isfinite(known)
            jitter = 0.0 if k == 0 else config.sigma_theta
            z[mask] = known[mask] + jitter * rng.standard_normal(int(mask.sum()))
        out.append(np.clip(z, lo, hi))
    return out


# --- the fitter --------------------------------------------------------------------


class _Tracker:
    """Counts evaluations and keeps the best point seen."""

    def __init__(self, deadline: float | None = None, eval_cap: int | None = None) -> None:
        self.deadline = deadline
        self.eval_cap = eval_cap
        self.n_evals = 0
        self.best_loss = math.inf
        self.best_z: Array | None = None
        self.last_error = ""
        self.last_status = FitStatus.OPTIMISER_FAILED

    def past_deadline(self) -> bool:
        # Only once something was evaluated (a fit returns a point when it can), or after a few
        # failed tries (a kernel that cannot be evaluated does not hold the run past its deadline).
        # A cap on the evaluations is a deadline that falls after exactly that many: a replay
        # (search --replay) stops each fit where the deadline stopped it in the timed run.
        return ((self.deadline is not None or self.eval_cap is not None)
                and (self.best_z is not None or self.n_evals >= 3)
                and ((self.eval_cap is not None and self.n_evals >= self.eval_cap)
                     or (self.deadline is not None and time.time() >= self.deadline)))

    def fail(self, exc: BaseException | None, reason: str = "") -> None:
        self.n_evals += 1
        self.last_error = str(exc) if exc is not None else reason
        self.last_status = getattr(exc, "status", FitStatus.NON_FINITE if exc is None else FitStatus.OPTIMISER_FAILED)

    def record(self, z: Array, f: float) -> None:
        self.n_evals += 1
        if f < self.best_loss:
            self.best_loss = f
            self.best_z = np.array(z, dtype=np.float64)


class _Objective:
    """The loss a fit minimises: the metric's (:func:`~evocov_core.fitting.metrics.loss`), plus
    ``−log p(θ)`` when the settings hold a prior."""

    def __init__(self, kernel: Kernel, data: FitData, config: OptimConfig) -> None:
        self.kernel, self.data, self.metric = kernel, data, config.metric
        self.terms = config.prior.terms(kernel) if config.prior is not None else None

    def value(self, z: Array) -> float:
        f = loss(self.metric, self.kernel, self.data, z)
        return f if self.terms is None else f + penalty(*self.terms, z)[0]

    def value_and_grad(self, z: Array) -> tuple[float, Array]:
        f, g = loss_and_grad(self.metric, self.kernel, self.data, z)
        if self.terms is None:
            return f, g
        p, pg = penalty(*self.terms, z)
        return f + p, g + pg


def _screen(kernel: Kernel, data: FitData, config: OptimConfig, rng: np.random.Generator, start: Start | None,
            tr: _Tracker, obj: _Objective) -> list[Array]:
    """Starting points for L-BFGS-B, screened by their metric value when ``n_screen`` asks."""
    if config.n_screen <= config.n_restarts:
        return _starts(kernel, data, config, rng, start, config.n_restarts)
    cands = _starts(kernel, data, config, rng, start, config.n_screen)
    scores = []
    for z in cands:
        if tr.past_deadline():
            break
        try:
            f = obj.value(z)
        except NUMERIC_ERRORS as exc:
            tr.fail(exc)
            f = math.inf
        else:
            if math.isfinite(f):
                tr.record(z, f)
            else:
                tr.fail(None, "metric is not finite")
        scores.append(f if math.isfinite(f) else math.inf)
    cands = cands[: len(scores)]
    order = sorted(range(len(cands)), key=lambda i: scores[i])
    if start is not None:  # the inherited values themselves always get a run
        order = [0] + [i for i in order if i != 0]
    return [cands[i] for i in order[: config.n_restarts]]


def _run_lbfgs(kernel: Kernel, data: FitData, config: OptimConfig, starts: list[Array], tr: _Tracker,
               obj: _Objective) -> None:
    lo, hi = slot_bounds(kernel, data, config)
    zero = np.zeros(kernel.n_params + 1)
    used = [0]  # evaluations of the current start

    def fun(z: Array) -> tuple[float, Array]:
        # scipy checks maxfun only between iterations; enforce the cap exactly.
        if used[0] >= config.max_evals or tr.past_deadline():
            raise _BudgetSpent
        used[0] += 1
        try:
            f, g = obj.value_and_grad(z)
        except NUMERIC_ERRORS as exc:
            tr.fail(exc)
            return _BIG, zero
        if not (math.isfinite(f) and np.isfinite(g).all()):
            tr.fail(None, "metric or gradient is not finite")
            return _BIG, zero
        tr.record(z, f)
        return f, g

    for z0 in starts:
        used[0] = 0
        with contextlib.suppress(_BudgetSpent):
            minimize_lbfgsb(fun, z0, lo, hi, maxiter=config.max_evals, maxfun=config.max_evals)


def _run_powell(kernel: Kernel, data: FitData, config: OptimConfig, starts: list[Array], tr: _Tracker,
                more_starts: Callable[[], Array], obj: _Objective) -> None:
    lo, hi = slot_bounds(kernel, data, config)
    budget = powell_budget(config.ref_fun_call, data.n)

    def fun(z: Array) -> float:
        if tr.n_evals >= budget or tr.past_deadline():
            raise _BudgetSpent
        outside = np.maximum(lo - z, 0.0) + np.maximum(z - hi, 0.0)
        if outside.any():
            tr.n_evals += 1
            return _BIG * (1.0 + float(outside @ outside))
        try:
            f = obj.value(z)
        except NUMERIC_ERRORS as exc:
            tr.fail(exc)
            return _BIG
        if not math.isfinite(f):
            tr.fail(None, "metric is not finite")
            return _BIG
        tr.record(z, f)
        return f

    queue = list(starts)
    while tr.n_evals < budget and not tr.past_deadline():
        z0 = queue.pop(0) if queue else more_starts()
        before = tr.n_evals
        try:
            minimize(fun, z0, method="Powell", options={"maxfev": budget - tr.n_evals, "xtol": 1e-4, "ftol": 1e-6})
        except _BudgetSpent:
            break
        if tr.n_evals == before:  # pragma: no cover - defensive: no progress possible
            break


class _BudgetSpent(Exception):
    pass


def fit_kernel(kernel: Kernel, data: FitData, config: OptimConfig, rng: np.random.Generator,
               start: Start | None = None, *, deadline: float | None = None,
               eval_cap: int | None = None) -> FitResult:
    """Optimise ``kernel``'s hyperparameters under ``config.metric``.

    Parameters
    ----------
    kernel : Kernel
    data : FitData
        Training data and caches (model units).
    config : OptimConfig
    rng : numpy.random.Generator
        Source of every random start.
    start : Start, optional
        Inherited or current values (see the module docstring).
    deadline : float, optional
        Wall-clock time (``time.time()``) after which the fit stops and returns the best
        point it has evaluated (a time-budgeted search sets it).
    eval_cap : int, optional
        Stop, as at a deadline, once this many metric evaluations are made: with the number
        a timed fit made, the same fit on any machine (``search --replay``).

    Returns
    -------
    FitResult
        Never raises for numerical reasons.
    """
    if start is not None and len(start.theta) != kernel.n_params:
        raise ValueError(f"start has {len(start.theta)} slot values but the kernel has {kernel.n_params} slots")
    t0 = time.perf_counter()
    tr = _Tracker(deadline, eval_cap)
    method = config.resolved_method
    obj = _Objective(kernel, data, config)
    try:
        if method == "lbfgs":
            _run_lbfgs(kernel, data, config, _screen(kernel, data, config, rng, start, tr, obj), tr, obj)
        else:
            _run_powell(kernel, data, config, _starts(kernel, data, config, rng, start, 1), tr,
                        lambda: _starts(kernel, data, config, rng, None, 1)[0], obj)
    except NUMERIC_ERRORS as exc:  # pragma: no cover - the objectives catch these
        tr.fail(exc)
    return _finish(kernel, data, config, tr, time.perf_counter() - t0)


def _finish(kernel: Kernel, data: FitData, config: OptimConfig, tr: _Tracker, seconds: float) -> FitResult:
    if tr.best_z is None:
        reason = tr.last_error or "no hyperparameter value could be evaluated"
        return FitResult.failed(kernel, status=tr.last_status, reason=reason, metric=config.metric, n=data.n,
                                n_evals=tr.n_evals, seconds=seconds)
    z = tr.best_z
    try:
        lml_value, jitter = gp_lml(kernel, data.inputs, data.y, z[:-1], float(z[-1]))
        mval = -tr.best_loss if config.metric != "rmse" else tr.best_loss
        if config.metric == "lml":
            mval = lml_value
        test = None
        if data.X_test is not None and data.y_test is not None and len(data.y_test):
            post = posterior(kernel, data.inputs, data.y, z[:-1], float(z[-1]), data.X_test, jitter=jitter,
                             mean_only=True)
            test = rmse(data.y_test, post.mean * data.y_std + data.y_mean)
            if not math.isfinite(test):
                test = None
    except NUMERIC_ERRORS as exc:
        return FitResult.failed(kernel, status=getattr(exc, "status", FitStatus.NON_FINITE), reason=str(exc),
                                metric=config.metric, n=data.n, n_evals=tr.n_evals, seconds=seconds)
    return FitResult(
        kernel=kernel,
        theta=tuple(float(v) for v in z[:-1]),
        log_noise=float(z[-1]),
        jitter=float(jitter),
        status=FitStatus.OK,
        reason="",
        metric=config.metric,
        metric_value=float(mval),
        lml=float(lml_value),
        bic=bic(lml_value, kernel.q, data.n),
        q=kernel.q,
        n=data.n,
        n_evals=tr.n_evals,
        seconds=seconds,
        test_rmse=test,
    )

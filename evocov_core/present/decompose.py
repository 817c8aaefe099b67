"""What a fitted kernel says about the series: additive components, their posteriors, a sentence each.

A kernel ``k = k₁ + … + k_m`` (after distributing products over sums as far as the algebra
allows, :func:`additive_terms`) makes ``f = f₁ + … + f_m`` with independent GP components.
Given the data, component ``i`` has the posterior (the standard GP decomposition, e.g.
Duvenaud et al. 2013, ABCD)::

    mean_i(x*) = K_i(x*, X) α,        α = (K + σ²I)⁻¹ y
    var_i(x*)  = k_i(x*, x*) − K_i(x*, X)(K + σ²I)⁻¹K_i(X, x*)

and the means add up to the full posterior mean exactly. Each component is then described
from its kernel *function*, not from a name (:func:`describe`): whether it is stationary, its
correlation as a function of lag ``k(x, x+τ)/√(k(x, x)k(x+τ, x+τ))``, a period when the
correlation has a clear peak again after a dip, the lag over which it decorrelates, whether
its variance grows along x. Whether it rises or falls is read from its posterior mean: its
*level* (the mean averaged over one period for a cycle, the mean itself otherwise) must move
by more than its own spread and a quarter of the data's standard deviation, so that a cycle
whose level rises (a periodic kernel times a growing one, a change point, a linear term)
is said to sit on a rising trend whatever the expression; a cycle's amplitude growth is
reported apart from its level. A term that cannot be split (``exp`` of a sum, a change point
or window, a power of a sum) stays whole; change points and windows are located in x.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import solve_triangular
from scipy.signal import find_peaks

from evocov_core.fitting.gp import factorize
from evocov_core.language.evaluate import Inputs, covariance, covariance_diag
from evocov_core.language.grammar import subtree_end
from evocov_core.language.kernel import Kernel, Node, flatten

__all__ = ["Behaviour", "Component", "additive_terms", "decompose", "describe", "gates", "kernel_summary"]

Array = NDArray[np.float64]

#: A peak of the correlation must stand this far above the dip before it to be a period:
#: a cycle times a slowly varying kernel dips little (``3 + PER`` or ``PER × SE`` with a
#: long lengthscale), and a cycle inside a growing kernel dips very little: the standard
#: benchmark's Airline kernel ``exp(LIN + PER/98)·RQ`` has a yearly peak of prominence 0.005,
#: missed at the former 0.05. Numerical ripples of a smooth kernel stay orders below it.
PERIOD_PROMINENCE = 0.002
#: Where in the data (shares of its range, besides the middle) a term that is not stationary
#: is also read for a period.
PERIOD_ANCHORS = (0.1, 0.3, 0.7, 0.9)
#: A component's level must move by at least this many standard deviations of the data
#: (and by more than its own spread) to be named a rising or falling trend.
TREND_MIN_SD = 0.25
#: Amplitude ratios (last tenth of the data to the first) reported as growth / shrinkage.
AMPLITUDE_RATIO = 1.5


def _terms(node: Node) -> list[Node]:
    tok, ch = node
    if tok == "add":
        return _terms(ch[0]) + _terms(ch[1])
    if tok == "multiply":
        return [("multiply", (a, b)) for a in _terms(ch[0]) for b in _terms(ch[1])]
    return [node]


def _depends_on_x(node: Node) -> bool:
    return "x" in flatten(node)


def additive_terms(kernel: Kernel, values: dict[str, float] | None = None) -> list[Kernel]:
    """The kernel as a sum of terms: sums split, products distributed over sums.

    Terms without the input (constants such as ``θ²`` or ``2``) are gathered into one: the
    offset of the linear trend when there is exactly one linear (``dot_prod``) term, as GPSS's
    LIN = ``θ² + (x − s)(x' − s)/l`` has it, else a constant component of its own, last. The
    terms share the kernel's slot names, so a fit's values apply to each term by name.

    ``values`` (log slot values by slot name), when given, keeps a negative constant out of
    the linear term: added to it, it would make that term's kernel indefinite and its
    description meaningless.
    """
    terms = _terms(kernel._nested)
    with_x = [t for t in terms if _depends_on_x(t)]
    const = [t for t in terms if not _depends_on_x(t)]
    if const:
        acc = const[0]
        for c in const[1:]:
            acc = ("add", (acc, c))
        linear = [i for i, t in enumerate(with_x)
                  if "dot_prod" in flatten(t) and not {"changepoint", "changewindow"} & set(flatten(t))]
        if values is not None and linear:
            ck = Kernel(flatten(acc))
            with np.errstate(all="ignore"):
                offset = covariance(ck, np.ones((1, 1)), np.array([values[s] for s in ck.slots]))[0, 0]
            if not offset >= 0:
                linear = []
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
        Lag of the first peak of the correlation that stands :data:`PERIOD_PROMINENCE` above
        the dip before it, if at most half the data's range (at least two cycles are seen).
    decorrelation : float or None
        Lag where the correlation (or, for a periodic component, its envelope at multiples
        of the period) first falls below e^(−1/2): the lengthscale of an SE; None when it never
        does within 10 spans.
    growth : float
        ``sd(x_end)/sd(x_start)`` of the component: above 1.5 it grows along x.
    lags, correlation : ndarray of shape (L,)
        The correlation curve ``k(x₀, x₀ + τ)/√(k(x₀, x₀)k(x₀ + τ, x₀ + τ))`` from the middle
        x₀ of the data: a factor that only scales the variance along x (a linear kernel,
        a growing amplitude) drops out, leaving the shape of the dependence on the lag.
        For a term that is not stationary, x₀ is where the period was read: the middle or
        one of :data:`PERIOD_ANCHORS`, whichever shows the clearest peak.
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

    def row(x0: float, lags: Array) -> Array:
        return covariance(term, np.array([[x0]]), theta, (x0 + lags)[:, None])[0]

    def correlation(x0: float, lags: Array) -> Array:
        r = row(x0, lags)
        sd = np.sqrt(np.abs(covariance_diag(term, (x0 + lags)[:, None], theta)))
        sd0 = math.sqrt(abs(float(covariance_diag(term, np.array([[x0]]), theta)[0])))
        ok = (sd > 0) & (sd0 > 0)
        return np.where(ok, r / np.where(ok, sd * sd0, 1.0), 0.0)

    with np.errstate(all="ignore"):
        r_mid, r_lo = row(mid, tau), row(x_lo, tau)
        corr = correlation(mid, tau)
        sd_lo, sd_hi = np.sqrt(np.abs(covariance_diag(term, np.array([[x_lo], [x_hi]]), theta)))
    k0 = r_mid[0] if r_mid[0] != 0 else 1.0
    constant = bool(np.allclose(r_mid, r_mid[0], rtol=1e-9, atol=1e-12) and np.isclose(sd_lo, sd_hi))
    stationary = bool(np.allclose(r_mid, r_lo, rtol=1e-2, atol=1e-6 * max(1.0, abs(k0))))
    period = None
    if not constant:
        # A term that is not stationary may cycle in one part of the data only (a change point
        # to a periodic kernel): read it from the middle and from PERIOD_ANCHORS across the data,
        # and keep the anchor whose first peak stands highest. A stationary term reads the same
        # everywhere, so the middle (tried first) keeps it.
        best = (0.0, None, corr, mid)
        for x0 in [mid] if stationary else [mid, *(x_lo + a * span for a in PERIOD_ANCHORS)]:
            with np.errstate(all="ignore"):
                c = corr if x0 == mid else correlation(x0, tau)
            if not np.all(np.isfinite(c)):
                continue
            peaks, props = find_peaks(c, prominence=PERIOD_PROMINENCE)
            if peaks.size and props["prominences"][0] > best[0]:
                best = (float(props["prominences"][0]), int(peaks[0]), c, x0)
        _, peak, corr, x0 = best
        if peak is not None:
            # Refine between the neighbouring grid points: the grid step is a 400th of 10 spans.
            fine = np.linspace(tau[peak - 1], tau[min(peak + 1, tau.size - 1)], 801)
            with np.errstate(all="ignore"):
                found = float(fine[int(np.argmax(correlation(x0, fine)))])
            period = found if found <= 0.5 * span else None  # longer: a trend, not a cycle seen twice
    decor = None
    if not constant:
        env = corr if period is None else np.interp(np.arange(period, tau[-1], period), tau, corr)
        lag = tau if period is None else np.arange(period, tau[-1], period)
        hit = np.flatnonzero(np.abs(env) < math.exp(-0.5))
        decor = float(lag[hit[0]]) if hit.size else None
    growth = float(sd_hi / sd_lo) if sd_lo > 0 else math.inf
    return Behaviour(stationary, constant, None if period is None else period * scale,
                     None if decor is None else decor * scale, growth, tau * scale, corr)


def gates(term: Kernel, theta_by_slot: dict[str, float]) -> tuple[list[float], list[tuple[float, float]]]:
    """Where a term switches, in model units: change-point locations and change-window edges ``(a, b)``.

    Read from the tree (each operator's own slots), sorted, without repeats.
    """
    toks = term.tokens
    points: set[float] = set()
    windows: set[tuple[float, float]] = set()
    for i, t in enumerate(toks):
        if t in ("changepoint", "changewindow"):
            j = subtree_end(toks, subtree_end(toks, i + 2))  # past x and both operands
            if t == "changepoint":
                points.add(math.exp(theta_by_slot[toks[j]]))
            else:
                c, w = math.exp(theta_by_slot[toks[j]]), math.exp(theta_by_slot[toks[j + 1]])
                windows.add((c - 0.5 * w, c + 0.5 * w))
    return sorted(points), sorted(windows)


@dataclass(frozen=True)
class Trend:
    """A component's level and amplitude along the training range, read from its posterior mean.

    Attributes
    ----------
    change : float
        Level over the last tenth of the training range minus over the first tenth (y units).
        The level is the mean averaged over one period for a cycle, the mean itself otherwise.
    direction : str
        ``"rising"``, ``"falling"`` or ``""`` (the level moves by less than its own spread or
        :data:`TREND_MIN_SD` of the data's standard deviation).
    amplitude_growth : float or None
        For a cycle: its RMS about the level over the last tenth over the first tenth.
    """

    change: float
    direction: str
    amplitude_growth: float | None


def _trend(mean: Array, step: float, period: float | None, sd_y: float) -> Trend:
    """Level and amplitude of a component's mean on a regular grid of ``step`` (model units)."""
    level, amp = mean, None
    if period is not None:
        k = max(2, round(period / step))
        if k < mean.size // 2:
            box = np.ones(k) / k
            level = np.convolve(mean, box, mode="valid")  # the mean over one period around each point
            resid = mean[k // 2: k // 2 + level.size] - level
            rms = np.sqrt(np.convolve(resid**2, box, mode="valid"))
            t = max(1, rms.size // 10)
            first = float(np.mean(rms[:t]))
            amp = float(np.mean(rms[-t:])) / first if first > 0 else None
    t = max(1, level.size // 10)
    change = float(np.mean(level[-t:]) - np.mean(level[:t]))
    spread = float(np.std(level))
    moves = abs(change) > spread and abs(change) >= TREND_MIN_SD * sd_y
    return Trend(change, ("rising" if change > 0 else "falling") if moves else "", amp)


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
    trend : Trend
        Level change (y units) and amplitude growth over the training range.
    changes : tuple of float
        Change-point locations (x units).
    windows : tuple of (float, float)
        Change-window edges (x units): the second kernel is on between them.
    """

    kernel: Kernel
    mean: Array
    sd: Array
    explained: float
    behaviour: Behaviour
    sentence: str
    trend: Trend = Trend(0.0, "", None)
    changes: tuple[float, ...] = ()
    windows: tuple[tuple[float, float], ...] = ()


def _length(v: float, x_unit: str) -> str:
    if x_unit in ("years", "year"):
        if v < 1.0 / 24:
            return f"{v * 365.25:.1f} days"
        if v < 2.0:
            return f"{v * 12:.1f} months"
        return f"{v:.1f} years"
    return f"{v:.3g} {x_unit}".rstrip()


#: The damped trend's slope keeps e^(−3) ≈ 5 % of itself after this many time constants: the
#: report's "damps out within about" that many θτ.
DAMPING_SPANS = 3.0


def _statespace_phrase(term: Kernel, theta_by_slot: dict[str, float], x_scale: float, x_unit: str
                       ) -> str | None:
    """The plain words for a term holding a state-space operation (local level, local trend,
    damped trend: :mod:`evocov_core.language.grammar`), read from the tree; None for any other term.

    A term is one product (:func:`additive_terms`), so it holds at most one of them unless a
    product of two was drawn; each is named."""
    toks = term.tokens
    said = []
    for i, t in enumerate(toks):
        if t == "wiener":
            said.append("a level that wanders as a random walk")
        elif t == "iwiener":
            said.append("a trend whose slope wanders as a random walk")
        elif t == "damped":
            tau = math.exp(theta_by_slot[toks[i + 2]]) * x_scale  # damped(x, θτ): the slot follows x
            said.append(f"a trend that damps out within about {_length(DAMPING_SPANS * tau, x_unit)}")
    return " times ".join(said) if said else None


def _sentence(b: Behaviour, sd: float, x_unit: str, y_unit: str, trend: Trend | None = None,
              statespace: str | None = None) -> str:
    trend = trend or Trend(0.0, "", None)
    direction = f"{trend.direction} " if trend.direction else ""
    if statespace is not None:
        # Named from the tree: read numerically it is only "a trend whose variance grows".
        out = statespace
        if trend.direction:
            out += f", {trend.direction} over the training data ({trend.change:+.3g} {y_unit})"
        if b.period is not None:
            out += f", times a cycle with a period of {_length(b.period, x_unit)}"
        return out.replace("  ", " ").replace(" )", ")")
    if b.constant:
        return f"a constant offset (standard deviation {sd:.3g} {y_unit})".replace("  ", " ").rstrip()
    parts = []
    if b.period is not None:
        parts.append(f"a cycle with a period of {_length(b.period, x_unit)}")
        if b.decorrelation is not None:
            parts.append(f"whose shape changes over about {_length(b.decorrelation, x_unit)}")
        else:
            parts.append("that repeats without changing")
        said = False
        if trend.direction:
            parts[-1] += f", on a {trend.direction} trend ({trend.change:+.3g} {y_unit} over the training data)"
            said = True
        g = trend.amplitude_growth
        if g is not None and (g > AMPLITUDE_RATIO or g < 1 / AMPLITUDE_RATIO):
            parts[-1] += f", its amplitude {'growing' if g > 1 else 'shrinking'} ×{g:.2g} along the data"
            said = True
        if not b.stationary and not said:
            parts.append("and changes along x")
    elif not b.stationary and b.growth > 1.5:
        parts.append(f"a {direction}trend whose variance grows along x (×{b.growth:.2g} over the data)")
    elif not b.stationary:
        parts.append(f"a {direction}trend whose behaviour changes along x" if direction
                     else "a component whose behaviour changes along x")
    elif direction:
        parts.append(f"a {direction}smooth trend" + (f" that decorrelates over about {_length(b.decorrelation, x_unit)}"
                                                      if b.decorrelation is not None else ""))
    elif b.decorrelation is not None:
        parts.append(f"a smooth variation that decorrelates over about {_length(b.decorrelation, x_unit)}")
    else:
        parts.append("a smooth variation that stays correlated over the whole data")
    return " ".join(parts).replace("  ", " ")


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
    # A regular grid over the training range to read levels from: 12 points per data step
    # (so a period of two steps spans 24), between 200 and 4000 points.
    n_grid = int(np.clip(12 * X.shape[0], 200, 4000))
    grid = np.linspace(lo, hi, n_grid)[:, None]
    step = (hi - lo) / (n_grid - 1) if n_grid > 1 else 1.0

    def to_x(v: float) -> float:
        return x_offset + (v - 1.0) * x_scale

    for term in additive_terms(kernel, by_slot):
        th = np.array([by_slot[s] for s in term.slots])
        Ks = covariance(term, Inputs(X_new, X), th)
        mean = Ks @ alpha
        V = solve_triangular(f.L, Ks.T, lower=True, check_finite=False)
        var = np.clip(covariance_diag(term, X_new, th) - np.einsum("ij,ij->j", V, V), 0.0, None)
        mean_train = covariance(term, inputs, th) @ alpha
        explained = float(np.var(mean_train) / var_y)
        beh = describe(term, by_slot, lo, hi, x_scale)
        with np.errstate(all="ignore"):
            mean_grid = covariance(term, Inputs(grid, X), th) @ alpha
        trend = _trend(mean_grid, step, None if beh.period is None else beh.period / x_scale, math.sqrt(var_y))
        trend = Trend(trend.change * y_scale, trend.direction, trend.amplitude_growth)
        sd_comp = float(np.sqrt(np.abs(covariance_diag(term, np.array([[0.5 * (lo + hi)]]), th)[0]))) * y_scale
        sentence = _sentence(beh, sd_comp, x_unit, y_unit, trend,
                             _statespace_phrase(term, by_slot, x_scale, x_unit))
        points, windows = gates(term, by_slot)
        where = [to_x(v) for v in points]
        spans = [(to_x(a), to_x(b)) for a, b in windows]
        if where:
            # A change point the fit put outside the training range is no change seen in the data.
            sentence += ", with a change " + " and ".join(
                f"around {to_x(v):.6g}" if lo <= v <= hi
                else f"{'after' if v > hi else 'before'} the training data, around {to_x(v):.6g}" for v in points)
        if spans:
            sentence += ", with a window switched on between " + " and between ".join(
                f"{a:.6g} and {b:.6g}" for a, b in spans)
        out.append(Component(term, mean * y_scale, np.sqrt(var) * y_scale, explained, beh, sentence, trend,
                             tuple(where), tuple(spans)))
    out.sort(key=lambda c: -c.explained)
    return out, math.sqrt(math.exp(log_noise)) * y_scale


#: Named cycles: period (years) -> adjective, read within 5 % (``"a yearly cycle"``).
_NAMED_PERIODS = ((1.0, "yearly"), (0.5, "half-yearly"), (0.25, "quarterly"), (7 / 365.25, "weekly"),
                  (1 / 365.25, "daily"))


def _cycle_name(period: float, x_unit: str) -> str:
    if x_unit in ("years", "year"):
        for p, name in _NAMED_PERIODS:
            if abs(period - p) <= 0.05 * p:
                return f"a {name} cycle"
    return f"a cycle of {_length(period, x_unit)}"


def _when(v: float, x_unit: str) -> str:
    return f"{v:.0f}" if x_unit in ("years", "year") else f"{v:.4g}"


def kernel_summary(components: list[Component], x_unit: str = "", *, max_terms: int = 3,
                   min_share: float = 0.01) -> str:
    """The kernel in one phrase, from its components (:func:`decompose`): cycles first, then what
    they sit on, e.g. ``"a yearly cycle that grows along the data, on a rising trend that bends
    around 1988"``.

    Parameters
    ----------
    components : list of Component
        Largest share first (as :func:`decompose` returns them).
    x_unit : str
        As given to :func:`decompose` (``"years"`` names yearly, quarterly, weekly cycles).
    max_terms : int
        Components named at most (the largest ones).
    min_share : float
        Components explaining less of the variance are left out (but the largest is always named).

    Returns
    -------
    str
        Lower case, no final stop; ``"noise only"`` without components.
    """
    shown = [c for i, c in enumerate(components) if i == 0 or c.explained >= min_share][:max_terms]
    shown = [c for c in shown if not c.behaviour.constant] or shown[:1]
    if not shown:
        return "noise only"
    cycles, bases = [], []
    rising = ""
    for c in shown:
        b, t = c.behaviour, c.trend
        where = " and ".join(_when(v, x_unit) for v in c.changes)
        bend = f" that bends around {where}" if where else ""
        if b.constant:
            bases.append("a constant level")
        elif b.period is not None:
            phrase = _cycle_name(b.period, x_unit)
            g = t.amplitude_growth
            if g is not None and g > AMPLITUDE_RATIO:
                phrase += " that grows along the data"
            elif g is not None and g < 1 / AMPLITUDE_RATIO:
                phrase += " that shrinks along the data"
            elif b.decorrelation is None:
                phrase += " that repeats unchanged"
            if where:
                phrase += f"{' and' if ' that ' in phrase else ' that'} changes around {where}"
            cycles.append(phrase)
            rising = rising or t.direction
        elif t.direction:
            bases.append(f"a {t.direction} trend{bend}")
        elif not b.stationary and b.growth > 1.5:
            bases.append(f"a trend whose spread grows along the data{bend}")
        elif b.decorrelation is not None:
            bases.append(f"a smooth variation over about {_length(b.decorrelation, x_unit)}{bend}")
        else:
            bases.append(f"a slow smooth variation{bend}")
    if cycles and not bases and rising:
        bases.append(f"a {rising} trend")  # the cycle's own level moves (a cycle times a growing term)
    if cycles and bases:
        return f"{' and '.join(cycles)}, on {' and '.join(bases)}"
    return " and ".join(cycles or bases)

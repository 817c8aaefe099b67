"""The forecast a search returns: the kernel's own, or a weighted average with classical forecasts, and why.

A search returns a kernel: the explanation of the series and, by default, its forecast. The
forecasting literature's answer to a single model that cannot be trusted on its own is
combination (the M competitions: an average of unlike methods is rarely the worst and often the
best). Here the members are the kernel and classical models (:mod:`evocov_core.forecast.classical`;
AutoETS and AutoTheta in the presets), and the training range alone weighs them: at each of four
earlier origins (60, 70, 80 and 90 % of the training x-range, each forecasting the next tenth, as
the interval calibration does: :func:`evocov_core.searches.select.calibrate_scored`) the kernel
refitted on the points before the origin and the classical models fitted on the same points
forecast, and each member's weight is proportional to the inverse square of its squared error
summed over the origins (Bates & Granger's inverse-error weights, with power 2 instead of 1;
:func:`inverse_error_weights`). A member that did far better takes nearly all the weight, members
that did about as well share it. Members below 1 % are dropped. Fixed origins, one power for every
series: nothing is tuned per series.

**The guard.** A kernel can fit the training range and the four origins and still extrapolate
wildly (an exponential of a linear term, a quartic trend). When the kernel's forecast of the
horizon leaves the union of the classical members' 95 % intervals by more than
:data:`GUARD_HALF_WIDTHS` of their half-width at some step, which no classical model finds
plausible, the kernel's weight is 0: the forecast is the classical members', weighted as above
(:func:`interval_excess`). The kernel stays the explanation of the series.

**Short series.** On a series of few training points each origin forecasts a handful of points from
a refit on a few dozen, and the summed errors cannot tell a kernel that extrapolates well from one
that fits the recent past and leaves it (a quartic trend on 42 points took 0.95 of the weight and
forecast 5 × worse than AutoETS). There the kernel's weight is held at :data:`SHORT_KERNEL_WEIGHT`
(the others share the rest in the same proportions; the search's ``combine_short`` sets how short).

**Equal weights.** With the weight power 0 (the search's ``combine_power``) every member with a forecast of
the horizon weighs the same (:func:`equal_members`; the guard still applies), and the classical models are
fitted once, on the whole training part: no origin is needed. The forecasting literature's "combination puzzle"
(Smith & Wallis 2009; Claeskens et al. 2016) is that estimated weights often lose to equal ones where there
are few errors to estimate them from, as on the short series of a panel.

The measurements that chose these rules are in ``docs/studies.md`` ("Why the presets are what they are").

:class:`Combination` records the choice (the kernel file's ``combination``); it is a pure value.
The forecasts are made by :mod:`evocov_core.forecast.beside`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy.special import ndtr

from evocov_core.fitting.metrics import Z95
from evocov_core.forecast.classical import MODELS, ClassicalForecast

__all__ = [
    "GUARD_HALF_WIDTHS",
    "KERNEL",
    "MIN_WEIGHT",
    "POWER",
    "SHORT_KERNEL_WEIGHT",
    "Combination",
    "Pooled",
    "equal_members",
    "guard_reason",
    "interval_excess",
    "inverse_error_weights",
    "linear_pool_interval",
    "weigh_members",
]

Array = NDArray[np.float64]

#: The member name of the kernel's own forecast.
KERNEL = "kernel"
#: Weights are proportional to (summed squared error over the origins) ** -POWER: 2 weighs a member's
#: errors as a variance does.
POWER = 2.0
#: Half-widths of the classical members' 95 % intervals the kernel's forecast may lie beyond them.
#: The development corpus has no returned kernel beyond 0.56 (the one that far was right: US
#: incarceration, 0.09 × AutoETS's error), so 1 leaves every corpus forecast alone; on TSDL it
#: catches the kernels that explode past the training range (Wages: 56 × the best published).
GUARD_HALF_WIDTHS = 1.0
#: Members whose weight falls below this are dropped (the rest renormalised): a forecast that is the
#: kernel's to 99.6 % is reported as the kernel's own.
MIN_WEIGHT = 0.01
#: The kernel's largest weight on a short series (the search's ``combine_short``): there the origins'
#: few errors cannot tell a kernel that extrapolates well from one that only fits the recent past.
SHORT_KERNEL_WEIGHT = 0.5
_MAX_ORIGINS = 100
_MAX_REASON = 500
_MAX_MEMBERS = 8


def _name(members: Sequence[str]) -> str:
    return " + ".join(members)


def _fmt(v: float) -> str:
    return f"{v:.4g}" if math.isfinite(v) else "none"


def _possessive(names: Sequence[str]) -> str:
    names = [f"{n}'s" for n in names]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


@dataclass(frozen=True)
class Combination:
    """Which forecasts a search's forecast averages, with which weights, and why.

    Attributes
    ----------
    members : tuple of str
        ``"kernel"`` first, then classical model names (:data:`evocov_core.forecast.classical.MODELS`).
        ``("kernel",)``: the kernel's own forecast.
    weights : tuple of float
        One per member, non-negative, summing to 1; the kernel's is 0 when the guard left it out.
        Empty: equal weights (kernel files written before weights, whose rule chose an equal-weight
        average).
    origin_sse : tuple of (str, float)
        What the choice was made on: each member's squared forecast error summed over the origins, in
        the data's units squared (+inf where it had no forecast). Older files: each candidate average
        (its members joined by `` + ``).
    origins : int
        Earlier origins the choice was made on (0: no choice was made).
    reason : str
        Why no choice was made (a long series, no out-of-sample forecasts within the budget…);
        empty otherwise or when combination was not asked for.
    guard : str
        Why the kernel's forecast was left out (it leaves the classical forecasts' intervals); empty
        when it was not.
    refitted : bool
        The kernel's forecasts from the origins were made by refits there (short series); False: with
        its fitted values (long series, where a refit costs seconds).
    held : str
        Why the kernel's weight was held below what its errors gave it (a short series); empty when
        it was not.
    unavailable : str
        Why classical models asked for had weight 0 whatever their errors: they had no forecast of the
        horizon (one line each, joined by ``"; "``); empty when every one had.
    equal : bool
        The weights are equal by rule (a weight power of 0: :func:`equal_members`), not estimated from
        forecasts at earlier origins; ``origins`` is then 0.
    """

    members: tuple[str, ...] = (KERNEL,)
    origin_sse: tuple[tuple[str, float], ...] = ()
    origins: int = 0
    reason: str = ""
    weights: tuple[float, ...] = ()
    guard: str = ""
    refitted: bool = True
    held: str = ""
    unavailable: str = ""
    equal: bool = False

    @property
    def combined(self) -> bool:
        """The forecast is not the kernel's own (an average, or the classical members' alone)."""
        return len(self.members) > 1

    @property
    def models(self) -> tuple[str, ...]:
        """The classical members."""
        return self.members[1:]

    @property
    def member_weights(self) -> tuple[float, ...]:
        """One weight per member (equal when none were recorded)."""
        return self.weights or (1.0 / len(self.members),) * len(self.members)

    @property
    def label(self) -> str:
        """Short name for a table row: ``"kernel 0.62 + AutoTheta 0.38"`` (``"kernel + AutoTheta"`` for
        an equal-weight average of an older file; members of weight 0 are not named)."""
        if not self.weights or not self.combined:
            return _name(self.members)
        return _name([f"{m} {w:.2f}" for m, w in zip(self.members, self.weights, strict=True) if w > 0])

    def mean(self, kernel_mean: Array | None, classical: Mapping[str, Array | None]) -> Array | None:
        """The combined point forecast: the weighted average of ``kernel_mean`` (shape (h,)) and the
        members' forecasts in ``classical`` (name -> shape (h,)); None when a member's is missing or of
        another shape. A kernel of weight 0 (the guard) does not enter it: its forecast may be None."""
        w = np.asarray(self.member_weights)
        parts = [None if kernel_mean is None else np.asarray(kernel_mean, dtype=np.float64)]
        for m in self.models:
            f = classical.get(m)
            parts.append(None if f is None else np.asarray(f, dtype=np.float64))
        used = [p for p, wi in zip(parts, w, strict=True) if wi > 0]
        if any(p is None or p.shape != used[0].shape for p in used):
            return None
        return np.einsum("i,ij->j", w[w > 0], np.array(used))

    def pool(self, kernel_mean: Array, kernel_sd: Array, members: Sequence[ClassicalForecast]) -> Pooled:
        """The search's forecast at steps past its test part (the future): the kernel's predictive normal
        (``kernel_mean``, ``kernel_sd`` of shape (h,)) and the members' forecasts of the same steps, pooled
        with this combination's weights as a mixture of normals (a member's sd read off its 95 % interval).

        The weights are the search's; at these steps the kernel is left out where the search's guard left
        it out, or where its forecast leaves the members' intervals (the same guard, on these steps); a
        member without a forecast here gives its weight to the others; if no member is left, the forecast
        is the kernel's alone.
        """
        mean = np.asarray(kernel_mean, dtype=np.float64)
        sd = np.asarray(kernel_sd, dtype=np.float64)
        k_lo, k_hi = mean - Z95 * sd, mean + Z95 * sd
        parts = {f.name: f for f in members if f.ok and f.lower is not None and f.upper is not None}
        weights = dict(zip(self.members, self.member_weights, strict=True))
        missing = tuple(m for m in self.models if weights[m] > 0 and m not in parts)
        left_out = self.guard or guard_reason(mean, [parts[m] for m in self.models if m in parts])
        if left_out:
            weights[KERNEL] = 0.0
        for m in missing:
            weights[m] = 0.0
        total = sum(weights.values())
        if total <= 0 or all(w == 0 for m, w in weights.items() if m != KERNEL):
            why = "; ".join(f.reason or f"{f.name}: {f.status}" for f in members if not f.ok)
            return Pooled(mean, k_lo, k_hi, ((KERNEL, 1.0),), failed=why or "no member has a forecast",
                          means=mean[None, :], sds=sd[None, :])
        used = tuple((m, w / total) for m, w in weights.items() if w > 0)
        means = np.array([mean if m == KERNEL else parts[m].mean for m, _ in used])
        sds = np.array([sd if m == KERNEL else (parts[m].upper - parts[m].lower) / (2 * Z95) for m, _ in used])
        w = np.array([wi for _, wi in used])
        lo, hi = linear_pool_interval(w, means, sds)
        return Pooled(w @ means, lo, hi, used, left_out=left_out, missing=missing, means=means, sds=sds)

    def describe(self) -> str | None:
        """One sentence for a page or a report; None when no combination was asked for."""
        if self.reason and not self.combined:
            return f"The forecast is the kernel's own: {self.reason}."
        if self.equal:
            return self._describe_equal()
        if self.origins == 0:
            return None
        sse = dict(self.origin_sse)
        how = "the kernel refitted at each" if self.refitted else "the kernel with its fitted values"
        where = f"from {self.origins} earlier points in time ({how})"
        if not self.weights:  # an older file: the equal-weight average with the lowest summed error
            own = sse.get(KERNEL, math.inf)
            if not self.combined:
                others = [f"{k} {_fmt(v)}" for k, v in self.origin_sse if k != KERNEL]
                return (f"The forecast is the kernel's own: {where} its forecasts had the lowest summed squared "
                        f"error ({_fmt(own)}; {', '.join(others)}).")
            return (f"The forecast is the kernel's averaged with equal weights with {' and '.join(self.models)}'s: "
                    f"{where} the average's forecasts had summed squared error "
                    f"{_fmt(sse.get(self.label, math.inf))}, the kernel's alone {_fmt(own)}. The kernel remains "
                    "the explanation of the series.")
        errors = "; ".join(f"{k} {_fmt(v)}" for k, v in self.origin_sse)
        if self.guard:
            shown = [(m, w) for m, w in zip(self.members, self.weights, strict=True) if w > 0]
            return (f"The forecast is {_possessive([m for m, _ in shown])}, not the kernel's: {self.guard}. "
                    + (f"They are weighted {' / '.join(f'{w:.2f}' for _, w in shown)} by their summed squared "
                       f"errors {where}: {errors}. " if len(shown) > 1 else "")
                    + "The kernel remains the explanation of the series.")
        missing = f" {self.unavailable}: no forecast of the horizon, so weight 0." if self.unavailable else ""
        if not self.combined:
            own = sse.get(KERNEL, math.inf)
            if self.unavailable and not own <= min((v for k, v in self.origin_sse if k != KERNEL), default=math.inf):
                return (f"The forecast is the kernel's own: no other forecast could take part.{missing} Its summed "
                        f"squared error {where} was {_fmt(own)} ({errors}).")
            among = " among those that could take part" if self.unavailable else ""
            return (f"The forecast is the kernel's own: {where} its forecasts had by far the lowest summed squared "
                    f"error{among} ({errors}), which leaves the others under {MIN_WEIGHT:.0%} of the weight.{missing}")
        weights = ", ".join(f"{w:.2f}" for w in self.weights)
        names = ["the kernel" if m == KERNEL else m for m in self.members]
        held = f" The kernel's weight is held at {self.weights[0]:.2f}: {self.held}." if self.held else ""
        return (f"The forecast weighs {_possessive(names)} forecasts {weights}, by the inverse square of their "
                f"summed squared errors {where}: {errors}.{held}{missing} The kernel remains the explanation of the "
                "series.")

    def _describe_equal(self) -> str:
        missing = f" {self.unavailable}: no forecast of the horizon, so no weight." if self.unavailable else ""
        shown = [m for m, w in zip(self.members, self.member_weights, strict=True) if w > 0]
        names = ["the kernel" if m == KERNEL else m for m in shown]
        if self.guard:
            return (f"The forecast is {_possessive(names)}, not the kernel's: {self.guard}."
                    + (" They are averaged with equal weights." if len(shown) > 1 else "")
                    + f"{missing} The kernel remains the explanation of the series.")
        if not self.combined:
            return f"The forecast is the kernel's own: no other forecast could take part.{missing}"
        return (f"The forecast averages {_possessive(names)} forecasts with equal weights (fixed, not estimated "
                f"from earlier points in time).{missing} The kernel remains the explanation of the series.")

    def to_dict(self) -> dict:
        return {"members": list(self.members), "origins": self.origins,
                "origin_sse": {k: (v if math.isfinite(v) else None) for k, v in self.origin_sse},
                **({"weights": list(self.weights)} if self.weights else {}),
                **({"reason": self.reason} if self.reason else {}),
                **({"guard": self.guard} if self.guard else {}),
                **({"held": self.held} if self.held else {}),
                **({"unavailable": self.unavailable} if self.unavailable else {}),
                **({} if self.refitted else {"refitted": False}),
                **({"equal": True} if self.equal else {})}

    @classmethod
    def from_dict(cls, d: object) -> Combination:
        """From :meth:`to_dict`'s output (untrusted: a kernel file); ValueError when malformed."""
        if not isinstance(d, dict):
            raise ValueError("'combination' must be an object")
        members, origins, sse = d.get("members"), d.get("origins", 0), d.get("origin_sse", {})
        reason, guard, weights = d.get("reason", ""), d.get("guard", ""), d.get("weights", [])
        held = d.get("held", "")
        unavailable = d.get("unavailable", "")
        refitted, equal = d.get("refitted", True), d.get("equal", False)
        if not isinstance(refitted, bool) or not isinstance(equal, bool):
            raise ValueError("combination 'refitted' and 'equal' must be true or false")
        if (not isinstance(members, list) or not members or members[0] != KERNEL
                or not all(isinstance(m, str) and m in MODELS for m in members[1:])
                or len(set(members)) != len(members)):
            raise ValueError(f"combination 'members' must be \"{KERNEL}\" followed by distinct classical models "
                             f"({', '.join(MODELS)})")
        if isinstance(origins, bool) or not isinstance(origins, int) or not 0 <= origins <= _MAX_ORIGINS:
            raise ValueError(f"combination 'origins' must be an integer from 0 to {_MAX_ORIGINS}")
        if not isinstance(sse, dict) or len(sse) > 20:
            raise ValueError("combination 'origin_sse' must be an object of at most 20 averages")
        pairs = []
        for k, v in sse.items():
            if not isinstance(k, str) or len(k) > 200:
                raise ValueError("combination 'origin_sse' keys must be short strings")
            if v is None:
                v = math.inf
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
                raise ValueError("combination 'origin_sse' values must be non-negative numbers or null")
            pairs.append((k, float(v)))
        if (not isinstance(weights, list) or (weights and len(weights) != len(members))
                or not all(isinstance(w, (int, float)) and not isinstance(w, bool) and 0 <= w <= 1 for w in weights)
                or (weights and not math.isclose(sum(weights), 1.0, abs_tol=1e-6))):
            raise ValueError("combination 'weights' must be one number in [0, 1] per member, summing to 1")
        for name, text in (("reason", reason), ("guard", guard), ("held", held), ("unavailable", unavailable)):
            if not isinstance(text, str) or len(text) > _MAX_REASON:
                raise ValueError(f"combination '{name}' must be a string of at most {_MAX_REASON} characters")
        return cls(tuple(members), tuple(pairs), origins, reason, tuple(float(w) for w in weights), guard, refitted,
                   held, unavailable, equal)


def linear_pool_interval(weights: Array, means: Array, sds: Array, level: float = 0.95) -> tuple[Array, Array]:
    """The central ``level`` interval of a weighted mixture of normals, step by step.

    Parameters
    ----------
    weights : ndarray of shape (k,)
        Non-negative, summing to 1.
    means, sds : ndarray of shape (k, h)
        Each member's predictive normal; an sd of 0 is a point mass.

    Returns
    -------
    lower, upper : ndarray of shape (h,)
    """
    w = np.asarray(weights, dtype=np.float64)[:, None]
    mu, sd = np.asarray(means, dtype=np.float64), np.maximum(np.asarray(sds, dtype=np.float64), 1e-300)

    def quantile(p: float) -> Array:
        lo = (mu - 10 * sd).min(axis=0)
        hi = (mu + 10 * sd).max(axis=0)
        for _ in range(200):  # bisection on the mixture's CDF, which is monotone; 200 halvings reach 1 ulp
            mid = 0.5 * (lo + hi)
            below = (w * ndtr((mid - mu) / sd)).sum(axis=0) < p
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        return 0.5 * (lo + hi)

    tail = 0.5 * (1 - level)
    return quantile(tail), quantile(1 - tail)


@dataclass(frozen=True)
class Pooled:
    """The search's forecast at some steps: its members' predictive normals pooled with the search's
    weights (:meth:`Combination.pool`).

    Attributes
    ----------
    mean, lower, upper : ndarray of shape (h,)
        The mixture's mean and central 95 % interval, original units.
    weights : tuple of (str, float)
        The members used and their weights (summing to 1): the kernel alone when nothing else is left.
    left_out : str
        Why the kernel is left out at these steps (the search's guard, or the guard on these steps); empty
        when it is not.
    missing : tuple of str
        Members the search weighed that have no forecast of these steps (their weight is shared out).
    failed : str
        Why the classical members all failed (the forecast is then the kernel's alone); empty otherwise.
    means, sds : ndarray of shape (k, h)
        The predictive normal of each member of ``weights``, in its order: what :meth:`interval` pools.
    """

    mean: Array
    lower: Array
    upper: Array
    weights: tuple[tuple[str, float], ...]
    left_out: str = ""
    missing: tuple[str, ...] = ()
    failed: str = ""
    means: Array = field(default_factory=lambda: np.empty((0, 0)))
    sds: Array = field(default_factory=lambda: np.empty((0, 0)))

    def interval(self, level: float) -> tuple[Array, Array]:
        """The central ``level`` interval of the pooled forecast (each of shape (h,)): the weighted mixture of
        the members' normals (:func:`linear_pool_interval`)."""
        w = np.array([wi for _, wi in self.weights])
        return linear_pool_interval(w, self.means, self.sds, level)


def inverse_error_weights(sse: Sequence[float], power: float = POWER) -> Array:
    """Weights proportional to ``sse ** -power`` (shape (k,), summing to 1).

    Members with a non-finite error get 0; members with an error of 0 share the whole weight (the
    limit); ``power = 0`` gives equal weights to every finite one. ValueError when none is finite.
    """
    s = np.asarray(sse, dtype=np.float64)
    ok = np.isfinite(s) & (s >= 0)
    if not ok.any():
        raise ValueError("no member has a finite error")
    w = np.zeros(s.shape)
    if (s[ok] == 0).any():
        w[ok & (s == 0)] = 1.0
    else:  # in logs: errors of 1e-300 and 1e300 side by side must not overflow
        log = np.log(s[ok])
        w[ok] = np.exp(-power * (log - log.min()))
    return w / w.sum()


def interval_excess(mean: Array, lower: Sequence[Array], upper: Sequence[Array]) -> tuple[float, int]:
    """How far ``mean`` (shape (h,)) leaves the union of the intervals ``[lower_i, upper_i]`` (each shape
    (h,)): the largest distance outside it over the steps, in units of the union's half-width there, and
    the step (0-based) where it is largest. ``(0.0, -1)`` when it stays inside (or there is no interval);
    ``(inf, step)`` where the mean is not finite."""
    mean = np.asarray(mean, dtype=np.float64)
    if not lower or mean.size == 0:
        return 0.0, -1
    lo, hi = np.min(np.asarray(lower, dtype=np.float64), axis=0), np.max(np.asarray(upper, dtype=np.float64), axis=0)
    with np.errstate(invalid="ignore"):
        half = np.maximum((hi - lo) / 2, np.finfo(float).tiny)
        out = np.where(np.isfinite(mean), np.maximum(0.0, np.maximum(lo - mean, mean - hi)) / half, np.inf)
    out = np.where(np.isfinite(lo) & np.isfinite(hi), out, 0.0)  # no interval at that step: nothing to say
    step = int(np.argmax(out))
    return (float(out[step]), step) if out[step] > 0 else (0.0, -1)


def guard_reason(kernel_mean: np.ndarray | None, classical: Sequence[ClassicalForecast]) -> str:
    """Why the kernel's forecast ``kernel_mean`` (shape (h,), original units) is left out of the
    combination: it lies more than :data:`~evocov_core.forecast.combination.GUARD_HALF_WIDTHS` half-widths
    outside the union of the ``classical`` forecasts' 95 % intervals at some step. Empty when it does
    not, or when there is nothing to check it against."""
    bands = [f for f in classical if f.lower is not None and f.upper is not None
             and np.shape(f.lower) == np.shape(f.upper) == np.shape(kernel_mean)]
    if kernel_mean is None or not bands:
        return ""
    excess, step = interval_excess(kernel_mean, [f.lower for f in bands], [f.upper for f in bands])
    if not excess > GUARD_HALF_WIDTHS:
        return ""
    by = "with no finite value" if not np.isfinite(excess) else f"by {excess:.3g} half-widths"
    names = " and ".join(f"{f.name}'s" for f in bands)
    return (f"the kernel's forecast leaves {names} 95 % intervals {by} at step {step + 1} of "
            f"{np.size(kernel_mean)}")


def weigh_members(kernel: Sequence[Array | None], classical: Sequence[Mapping[str, Array | None]],
                  targets: Sequence[Array], models: Sequence[str], *, power: float = POWER,
                  exclude: Sequence[str] = (), guard: str = "", max_kernel_weight: float = 1.0,
                  held: str = "", unavailable: str = "") -> Combination:
    """Weigh the kernel and the classical models by their forecasts from earlier origins.

    Parameters
    ----------
    kernel : sequence of (ndarray of shape (h_j,) or None)
        The kernel's forecast from each origin ``j`` (None where it failed).
    classical : sequence of mapping
        Each origin's classical forecasts, model name -> shape (h_j,) (None or absent: none).
    targets : sequence of ndarray of shape (h_j,)
        What each origin's forecasts are scored against.
    models : sequence of str
        The classical models that may join the kernel.
    power : float
        Weights are proportional to each member's summed squared error to the power ``-power``
        (:func:`inverse_error_weights`).
    exclude : sequence of str
        Members given weight 0 whatever their error (``"kernel"`` when the guard leaves it out, a model
        whose forecast of the horizon failed). Their errors are still recorded.
    guard : str
        Why the kernel is excluded, recorded as :attr:`Combination.guard`.
    max_kernel_weight : float
        The kernel's weight is at most this (before members under :data:`MIN_WEIGHT` are dropped);
        the other members share the rest in the proportions their errors give them (equally when the
        kernel's error is 0). Below 1 on short series (:data:`SHORT_KERNEL_WEIGHT`).
    held : str
        Why the kernel's weight is held, recorded as :attr:`Combination.held` when it was.

    Returns
    -------
    Combination
        Every member's summed error; the members of weight at least :data:`MIN_WEIGHT` (renormalised),
        the kernel always listed first. The kernel alone, with a reason, when no origin or no member
        error is finite; with no other member left, the kernel alone.
    """
    if not (len(kernel) == len(classical) == len(targets)):
        raise ValueError(f"{len(kernel)} kernel forecasts, {len(classical)} classical ones, {len(targets)} targets")
    if len(models) >= _MAX_MEMBERS:
        raise ValueError(f"at most {_MAX_MEMBERS - 1} classical models")
    if not 0 < max_kernel_weight <= 1:
        raise ValueError(f"max_kernel_weight must be in (0, 1]; got {max_kernel_weight:g}")
    if not targets:
        return Combination(reason="no earlier origin had points on both sides")
    names = (KERNEL, *models)
    sse = []
    for name in names:
        total = 0.0
        for k, c, y in zip(kernel, classical, targets, strict=True):
            f = k if name == KERNEL else c.get(name)
            ok = f is not None and np.shape(f) == np.shape(y) and bool(np.all(np.isfinite(f)))
            total += float(np.sum((np.asarray(f, dtype=np.float64) - y) ** 2)) if ok else math.inf
        sse.append(total)
    pairs = tuple(zip(names, sse, strict=True))
    usable = [s if n not in exclude else math.inf for n, s in zip(names, sse, strict=True)]
    if not np.isfinite(usable).any():
        why = ("no member had finite errors from the earlier origins" if KERNEL not in exclude or not guard
               else f"{guard}, but no classical forecast is there to replace it")
        return Combination(origin_sse=pairs, origins=len(targets), reason=why, unavailable=unavailable)
    w = inverse_error_weights(usable, power)
    # The others share what the kernel gives up as their errors say (equally when a kernel with no error
    # at all had taken everything).
    others = w[1:] if w[1:].sum() > 0 else np.isfinite(usable[1:]).astype(np.float64)
    capped = bool(w[0] > max_kernel_weight and others.sum() > 0)
    if capped:
        w = np.concatenate([[max_kernel_weight], others * ((1.0 - max_kernel_weight) / others.sum())])
    keep = [i for i in range(len(names)) if i == 0 or w[i] >= MIN_WEIGHT]
    if w[0] < MIN_WEIGHT and KERNEL not in exclude:
        w[0] = 0.0  # the kernel did far worse: listed (first, as every file lists it) with weight 0
    kept = w[keep] / w[keep].sum()
    if len(keep) == 1:  # the kernel alone
        return Combination(origin_sse=pairs, origins=len(targets), weights=(1.0,), unavailable=unavailable)
    return Combination(tuple(names[i] for i in keep), pairs, len(targets), weights=tuple(float(v) for v in kept),
                       guard=guard if KERNEL in exclude else "", held=held if capped else "", unavailable=unavailable)


def equal_members(models: Sequence[str], *, exclude: Sequence[str] = (), guard: str = "",
                  unavailable: str = "") -> Combination:
    """The kernel and the classical ``models`` averaged with equal weights: the weight power 0, for which no
    forecast from an earlier origin is needed.

    Parameters
    ----------
    models : sequence of str
        The classical models that join the kernel.
    exclude : sequence of str
        Members given weight 0 (``"kernel"`` when the guard leaves it out, a model whose forecast of the
        horizon failed); an excluded model is not listed.
    guard : str
        Why the kernel is excluded (:attr:`Combination.guard`).
    unavailable : str
        Why models had no forecast of the horizon (:attr:`Combination.unavailable`).

    Returns
    -------
    Combination
        ``equal`` True, the kernel listed first (weight 0 when excluded); the kernel alone when no model is
        left.
    """
    if len(models) >= _MAX_MEMBERS:
        raise ValueError(f"at most {_MAX_MEMBERS - 1} classical models")
    kept = [m for m in models if m not in exclude]
    if not kept:
        return Combination(weights=(1.0,), unavailable=unavailable, equal=True)
    kernel_in = KERNEL not in exclude
    k = len(kept) + kernel_in
    return Combination((KERNEL, *kept), weights=(1.0 / k if kernel_in else 0.0, *(1.0 / k,) * len(kept)),
                       guard=guard if not kernel_in else "", unavailable=unavailable, equal=True)

"""The forecast a search returns: the kernel's own, or its average with classical forecasts, and why.

A search returns a kernel: the explanation of the series and, by default, its forecast. The
forecasting literature's answer to a single model that cannot be trusted on its own is
combination (the M competitions: an average of unlike methods is rarely the worst and often the
best). Here the candidates are the kernel alone and its equal-weight averages with the point
forecasts of classical models (:mod:`evocov_core.classical`; AutoETS and AutoTheta in the
presets), and the training range alone chooses among them: at each of four earlier origins
(60, 70, 80 and 90 % of the training x-range, each forecasting the next tenth, as the interval
calibration does: :func:`evocov_core.search.validate.calibrate_scored`) the kernel refitted on the
points before the origin and the classical models fitted on the same points forecast; the
average with the lowest squared error summed over the origins is the forecast. Equal weights and
fixed origins: nothing is tuned per series.

Evidence, post hoc on the kernels of committed runs (``bench/bench_combine.py``, rule
``val-best-gp``): test RMSE paired against the kernel's own 0.931 (SE of the log 0.039) on the
development corpus (61 series), 0.979 (0.029) on TSDL (13 series × 5 seeds). On long series
(fitted on a subset) the long-series development set did not confirm it (1.011, SE 0.025), so
they keep the kernel's forecast.

:class:`Combination` records the choice (the kernel file's ``combination``); it is a pure value.
The forecasts are made by :mod:`evocov_core.search.combine`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .classical import MODELS

__all__ = ["KERNEL", "Combination", "candidate_members", "choose_members"]

Array = NDArray[np.float64]

#: The member name of the kernel's own forecast.
KERNEL = "kernel"
_MAX_ORIGINS = 100
_MAX_REASON = 500


def candidate_members(models: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    """The averages a choice is made among, kernel alone first: the kernel, the kernel with each
    model, the kernel with all of them (with two or more)."""
    out: list[tuple[str, ...]] = [(KERNEL,), *((KERNEL, m) for m in models)]
    if len(models) > 1:
        out.append((KERNEL, *models))
    return tuple(out)


def _name(members: Sequence[str]) -> str:
    return " + ".join(members)


@dataclass(frozen=True)
class Combination:
    """Which forecasts a search's forecast averages, with equal weights, and why.

    Attributes
    ----------
    members : tuple of str
        ``"kernel"`` first, then classical model names (:data:`evocov_core.classical.MODELS`).
        ``("kernel",)``: the kernel's own forecast.
    origin_sse : tuple of (str, float)
        Each candidate average (its members joined by `` + ``) with its squared forecast error summed
        over the origins, in the data's units squared (+inf where a member had no forecast).
    origins : int
        Earlier origins the choice was made on (0: no choice was made).
    reason : str
        Why no choice was made (a long series, no out-of-sample forecasts within the budget…);
        empty otherwise or when combination was not asked for.
    """

    members: tuple[str, ...] = (KERNEL,)
    origin_sse: tuple[tuple[str, float], ...] = ()
    origins: int = 0
    reason: str = ""

    @property
    def combined(self) -> bool:
        """The forecast is an average, not the kernel's own."""
        return len(self.members) > 1

    @property
    def models(self) -> tuple[str, ...]:
        """The classical members."""
        return self.members[1:]

    @property
    def label(self) -> str:
        """Short name for a table row: ``"kernel + AutoTheta"``."""
        return _name(self.members)

    def mean(self, kernel_mean: Array, classical: Mapping[str, Array | None]) -> Array | None:
        """The combined point forecast: the equal-weight average of ``kernel_mean`` (shape (h,)) and
        the members' forecasts in ``classical`` (name -> shape (h,)); None when a member's is missing
        or of another shape."""
        parts = [np.asarray(kernel_mean, dtype=np.float64)]
        for m in self.models:
            f = classical.get(m)
            if f is None or np.shape(f) != parts[0].shape:
                return None
            parts.append(np.asarray(f, dtype=np.float64))
        return np.mean(parts, axis=0)

    def describe(self) -> str | None:
        """One sentence for a page or a report; None when no combination was asked for."""
        if self.reason and not self.combined:
            return f"The forecast is the kernel's own: {self.reason}."
        if self.origins == 0:
            return None
        sse = dict(self.origin_sse)
        own = sse.get(KERNEL, math.inf)
        where = f"from {self.origins} earlier points in time (the kernel refitted at each)"
        if not self.combined:
            others = [f"{k} {_fmt(v)}" for k, v in self.origin_sse if k != KERNEL]
            return (f"The forecast is the kernel's own: {where} its forecasts had the lowest summed squared error "
                    f"({_fmt(own)}; {', '.join(others)}).")
        return (f"The forecast is the kernel's averaged with equal weights with {' and '.join(self.models)}'s: "
                f"{where} the average's forecasts had summed squared error {_fmt(sse.get(self.label, math.inf))}, "
                f"the kernel's alone {_fmt(own)}. The kernel remains the explanation of the series.")

    def to_dict(self) -> dict:
        return {"members": list(self.members), "origins": self.origins,
                "origin_sse": {k: (v if math.isfinite(v) else None) for k, v in self.origin_sse},
                **({"reason": self.reason} if self.reason else {})}

    @classmethod
    def from_dict(cls, d: object) -> Combination:
        """From :meth:`to_dict`'s output (untrusted: a kernel file); ValueError when malformed."""
        if not isinstance(d, dict):
            raise ValueError("'combination' must be an object")
        members, origins, sse, reason = d.get("members"), d.get("origins", 0), d.get("origin_sse", {}), d.get(
            "reason", "")
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
        if not isinstance(reason, str) or len(reason) > _MAX_REASON:
            raise ValueError(f"combination 'reason' must be a string of at most {_MAX_REASON} characters")
        return cls(tuple(members), tuple(pairs), origins, reason)


def _fmt(v: float) -> str:
    return f"{v:.4g}" if math.isfinite(v) else "none"


def choose_members(kernel: Sequence[Array | None], classical: Sequence[Mapping[str, Array | None]],
                   targets: Sequence[Array], models: Sequence[str]) -> Combination:
    """Choose the average whose forecasts from earlier origins had the lowest summed squared error.

    Parameters
    ----------
    kernel : sequence of (ndarray of shape (h_j,) or None)
        The kernel's forecast from each origin ``j`` (None where it failed).
    classical : sequence of mapping
        Each origin's classical forecasts, model name -> shape (h_j,) (None or absent: none).
    targets : sequence of ndarray of shape (h_j,)
        What each origin's forecasts are scored against.
    models : sequence of str
        The classical models that may join the kernel (:func:`candidate_members`).

    Returns
    -------
    Combination
        Lowest summed squared error among :func:`candidate_members`; ties, and no finite error at all,
        go to the fewer members listed first (the kernel alone).
    """
    if not (len(kernel) == len(classical) == len(targets)):
        raise ValueError(f"{len(kernel)} kernel forecasts, {len(classical)} classical ones, {len(targets)} targets")
    if not targets:
        return Combination(reason="no earlier origin had points on both sides")
    cands = candidate_members(models)
    sse = []
    for members in cands:
        total = 0.0
        for k, c, y in zip(kernel, classical, targets, strict=True):
            m = None if k is None else Combination(members).mean(k, c)
            total += math.inf if m is None or m.shape != np.shape(y) else float(np.sum((m - y) ** 2))
        sse.append(total if math.isfinite(total) else math.inf)
    best = min(range(len(cands)), key=lambda i: (sse[i], i))
    return Combination(cands[best], tuple((_name(c), v) for c, v in zip(cands, sse, strict=True)), len(targets))

"""Priors learned from the panel itself: empirical Bayes across the user's series, as Corani et al. learn theirs.

Corani, Benavoli and Zaffalon (2021, "Time series forecasting with Gaussian processes needs priors") fit one
kernel to many series and set each hyperparameter's prior to the distribution of its estimates over them. A
kernel search has no single kernel, so the prior is by the role a slot plays
(:func:`~evocov_core.language.kernel.slot_roles`), in model units (inputs on [1, 2], outputs standardised),
as :data:`~evocov_core.fitting.priors.CORPUS_PRIOR` is learned on the development corpus:

1. up to ``sample`` series of the panel (a seeded draw among those a search can serve) are each fitted, by
   maximum likelihood, with a fixed set of structures (:func:`role_estimates`): the exponential-smoothing forms
   the search starts from (:func:`~evocov_core.searches.ets_seeds.ets_seeds`) and the textbook structures of
   :data:`STRUCTURES`;
2. each role's prior is a normal on ``log θ`` whose mean is the median of the role's estimates and whose
   standard deviation is 1.4826 times their median absolute deviation, at least :data:`MIN_SD`, each series
   weighing one in total (:func:`prior_from_estimates`); likewise the noise variance's.

Only the series' observed points are read, never a test part. Every series' search then maximises the
posterior under that prior (the setting ``priors="panel"``): a process makes the learned prior the one that
setting names with :func:`use_panel_prior` (a panel's worker does so before each series).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

import numpy as np

from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import OptimConfig, fit_kernel
from evocov_core.fitting.priors import PRIORS, HyperPrior
from evocov_core.language.kernel import slot_roles
from evocov_core.language.library import compose
from evocov_core.searches.ets_seeds import ets_seeds

__all__ = ["MIN_SD", "MIN_SERIES", "STRUCTURES", "prior_from_estimates", "role_estimates", "use_panel_prior"]

#: Textbook structures fitted beside the exponential-smoothing forms (GPSS notation).
STRUCTURES: tuple[str | list, ...] = ("SE", "RQ", "LIN", "PER", ["+", "SE", "LIN"], ["*", "PER", "SE"],
                                     ["+", ["*", "PER", "SE"], "LIN"], ["+", "SE", ["*", "PER", "SE"]],
                                     ["*", "LIN", "SE"])
#: The smallest standard deviation of a learned prior (log units): a prior never pins a value.
MIN_SD = 0.5
#: Fewer series than this with estimates of a role: no prior for it.
MIN_SERIES = 10
#: Roles that get no prior: their boxes already hold them inside the data.
_UNPRIORED = frozenset({"location", "steepness", "window_centre", "window_width"})


def role_estimates(data: FitData, optim: OptimConfig, seed: int = 0) -> list[tuple[str, float]]:
    """Every single-role slot's ``log θ`` (and ``("noise", log σ²)``) of each structure fitted on ``data`` by
    maximum likelihood (``optim`` without its prior), as ``(role, value)`` pairs."""
    plain = dataclasses.replace(optim, prior=None)
    kernels = [(k, s) for k, s in ets_seeds(data)] + [(compose(e), None) for e in STRUCTURES]
    out: list[tuple[str, float]] = []
    for kernel, start in kernels:
        fit = fit_kernel(kernel, data, plain, np.random.default_rng(seed), start)
        if not fit.ok:
            continue
        roles = slot_roles(kernel)
        out += [(next(iter(roles[s])), float(v)) for s, v in zip(kernel.slots, fit.theta, strict=True)
                if len(roles[s]) == 1]
        out.append(("noise", float(fit.log_noise)))
    return out


def _weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    order = np.argsort(values, kind="stable")
    v, w = values[order], weights[order]
    return float(v[np.searchsorted(np.cumsum(w), 0.5 * w.sum())])


def prior_from_estimates(per_series: Iterable[Sequence[tuple[str, float]]], name: str = "panel") -> HyperPrior:
    """The prior by role (module docstring, step 2) from each series' :func:`role_estimates`.

    Raises
    ------
    ValueError
        No role has estimates on :data:`MIN_SERIES` series.
    """
    by_role: dict[str, list[tuple[int, float]]] = {}
    for i, rows in enumerate(per_series):
        for role, z in rows:
            if role not in _UNPRIORED and np.isfinite(z):
                by_role.setdefault(role, []).append((i, z))
    roles, noise = [], None
    for role in sorted(by_role):
        idx = np.array([i for i, _ in by_role[role]])
        z = np.array([v for _, v in by_role[role]])
        if len(set(idx.tolist())) < MIN_SERIES:
            continue
        counts = np.bincount(idx)[idx].astype(np.float64)
        w = 1.0 / counts  # each series weighs one in total, however many slots of it play the role
        med = _weighted_median(z, w)
        sd = max(MIN_SD, 1.4826 * _weighted_median(np.abs(z - med), w))
        if role == "noise":
            noise = (round(med, 3), round(sd, 3))
        else:
            roles.append((role, round(med, 3), round(sd, 3)))
    if not roles:
        raise ValueError(f"no role has estimates on {MIN_SERIES} series: too few series to learn a prior")
    return HyperPrior(tuple(roles), noise, name)


def use_panel_prior(prior: HyperPrior | None) -> None:
    """Make ``prior`` the one the setting ``priors="panel"`` names in this process (None: none)."""
    PRIORS["panel"] = prior

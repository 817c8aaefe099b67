"""Hyperparameter priors: a fit that maximises the posterior (MAP), not the likelihood alone.

Independent normal priors on ``log θ`` by the role a slot plays in the tree
(:func:`~evocov_core.language.kernel.slot_roles`) and on ``log σ²_noise``, in model units
(training inputs span [1, 2], outputs standardised), so that one table serves every series. A
slot with several roles takes the mean of their means and of their standard deviations; a slot
with no role in the table (a change point's location and steepness, which their box already holds
inside the data) has no prior.

With a prior, :func:`~evocov_core.fitting.optimize.fit_kernel` minimises
``−log p(y | θ) − log p(θ)`` (up to a constant), and the fit's LML and BIC are those of the data
at that mode: BIC on the MAP value.

:data:`CORPUS_PRIOR` is learned by empirical Bayes on the development corpus, as Corani,
Benavoli and Zaffalon (2021, "Time series forecasting with Gaussian processes needs priors") learn
theirs: every corpus series' training part is fitted by maximum likelihood with a fixed set of
structures, and each role's prior is the normal fitted, robustly, to the estimates of its slots
over the series (``python -m bench.learn_priors``; the table and its provenance are in
``bench/results/priors/``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from evocov_core.language.kernel import Kernel, slot_roles

__all__ = ["CORPUS_PRIOR", "PRIORS", "HyperPrior", "penalty"]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class HyperPrior:
    """Normal priors on ``log θ`` by slot role and on ``log σ²_noise``.

    Parameters
    ----------
    roles : tuple of (str, float, float)
        ``(role, mean, sd)`` of ``log θ`` for the slots that play ``role``.
    noise : (float, float) or None
        ``(mean, sd)`` of ``log σ²_noise``; None: no prior on the noise.
    name : str
        What the settings call it.
    """

    roles: tuple[tuple[str, float, float], ...]
    noise: tuple[float, float] | None = None
    name: str = ""

    def __post_init__(self) -> None:
        for role, _mean, sd in self.roles:
            if not sd > 0:
                raise ValueError(f"the prior of role {role!r} needs a positive standard deviation, got {sd}")
        if self.noise is not None and not self.noise[1] > 0:
            raise ValueError(f"the noise prior needs a positive standard deviation, got {self.noise[1]}")

    @property
    def table(self) -> Mapping[str, tuple[float, float]]:
        return {role: (mean, sd) for role, mean, sd in self.roles}

    def terms(self, kernel: Kernel) -> tuple[Array, Array]:
        """The prior's mean and precision of each entry of ``z = (log θ, log σ²_noise)``.

        Returns
        -------
        mean, precision : ndarray, shape (n_params + 1,)
            Precision 0 where a slot has no prior.
        """
        table = self.table
        mean = np.zeros(kernel.n_params + 1)
        prec = np.zeros(kernel.n_params + 1)
        roles = slot_roles(kernel)
        for i, slot in enumerate(kernel.slots):
            known = [table[r] for r in sorted(roles.get(slot, ())) if r in table]
            if known:
                mean[i] = float(np.mean([m for m, _ in known]))
                prec[i] = 1.0 / float(np.mean([s for _, s in known])) ** 2
        if self.noise is not None:
            mean[-1], prec[-1] = self.noise[0], 1.0 / self.noise[1] ** 2
        return mean, prec


def penalty(mean: Array, prec: Array, z: Array) -> tuple[float, Array]:
    """``−log p(z)`` up to a constant, and its gradient, shape (n_params + 1,)."""
    r = np.asarray(z, dtype=np.float64) - mean
    return 0.5 * float(r @ (prec * r)), prec * r


#: Learned on the development corpus (``bench/results/priors/README.md`` says how and when; a test
#: checks this against its ``table.csv``). Each role's (mean, sd) of ``log θ``: a damped trend's time
#: constant about a seventh of the training span; a period about a fifteenth; lengthscales about a
#: fifth, with wide spreads; the noise variance about 4 % of the series' variance.
CORPUS_PRIOR = HyperPrior(
    roles=(("damping", -1.961, 1.689), ("frequency", 4.514, 1.685), ("lengthscale", -1.589, 2.426),
           ("periodic_lengthscale", -1.964, 1.576), ("scale", -0.924, 1.927), ("shift", 0.405, 0.5),
           ("value", -0.367, 1.771)),
    noise=(-3.318, 2.918), name="corpus")

#: The priors a search may name (``SearchConfig.priors``). ``"panel"``: the prior a panel learned from its own
#: series, set in each process that runs its series (:func:`evocov_core.panel.priors.use_panel_prior`).
PRIORS: dict[str, HyperPrior | None] = {"none": None, "corpus": CORPUS_PRIOR, "panel": None}

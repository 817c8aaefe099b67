"""Model selection score: the Bayesian information criterion (the paper's eq. 7).

``BIC = −2 · LML(θ_best) + q · log n``

* ``LML(θ_best)`` is the log marginal likelihood of the training data at the
  hyperparameters chosen by the hyperparameter metric (whatever that metric is);
* ``q`` counts every hyperparameter of the model: the kernel's distinct slots **plus
  one for the white-noise variance**;
* ``n`` is the number of training points.

Lower is better; the searches minimise it. A candidate that could not be fitted gets
``+inf`` (see :data:`PENALTY`), so it sorts last and never becomes the best.
"""

from __future__ import annotations

import math

__all__ = ["PENALTY", "bic"]

#: BIC given to a candidate whose fit failed.
PENALTY = math.inf


def bic(lml: float, q: int, n: int) -> float:
    """Bayesian information criterion.

    Parameters
    ----------
    lml : float
        Log marginal likelihood at the selected hyperparameters.
    q : int
        Number of hyperparameters, noise variance included.
    n : int
        Number of training points.

    Returns
    -------
    float
        ``−2·lml + q·log n``, or :data:`PENALTY` when ``lml`` is not finite.

    Examples
    --------
    >>> round(bic(-10.0, 3, 100), 4)
    33.8155
    """
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    if q < 0:
        raise ValueError(f"q must be non-negative, got {q}")
    if not math.isfinite(lml):
        return PENALTY
    return -2.0 * lml + q * math.log(n)

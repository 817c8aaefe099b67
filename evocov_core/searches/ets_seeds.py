"""Seeds that hold what exponential smoothing knows: the GP forms of the models ETS chooses among.

A stationary kernel's forecast goes back to the training mean; the worst single runs of the
development corpus missed the level (the squared mean error was 0.74 of their MSE), and the
classical members of the forecast had to carry it. The grammar's state-space operations
(:mod:`evocov_core.language.grammar`: ``wiener``, ``iwiener``, ``damped``) write a local level, a local
trend and a damped trend, whose forecasts are simple exponential smoothing's, Holt's and damped
Holt's. :data:`~evocov_core.language.library.ETS_FORMS` writes the models ETS chooses among with them, and
:func:`ets_seeds` starts every search from them, at the series' season:

* no season: ``C + W`` (SES), ``LIN + W + IW`` (Holt), ``C + W + DT`` (damped Holt);
* with a season of period p: the same plus a periodic term (additive Holt-Winters, ``ANA``,
  ``AAA``, ``AAdA``), and the level times a seasonal factor about one (``ANM``, ``AAdM``).

The season is the calendar's (monthly data: a year; daily: a week), as ETS's own season length is,
when it repeats at least :data:`MIN_SEASONS` times in the training data; else the strongest clear
period of the periodogram (:func:`~evocov_core.searches.spectral_seeds.clear_frequencies`).

They are fitted from the values :func:`ets_seeds` gives them and, like the spectral seeds, are
never screened out and always offered to the model choice
(:meth:`~evocov_core.searches.candidates.Candidates.top`): evolution and the choice may keep them or beat
them, but they are never missing from the pool. Their children (mutation, crossover) may hold the
state-space operations too, so a search with these seeds uses the operations of the family ``statespace``.
"""

from __future__ import annotations

import math

from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import Start
from evocov_core.language.kernel import Kernel
from evocov_core.language.library import ETS_FORMS, compose
from evocov_core.searches.spectral_seeds import clear_frequencies, seed_start

__all__ = ["DAMPING", "MIN_SEASONS", "NON_SEASONAL", "SEASONAL", "ets_seeds", "season"]

#: The forms without a season, and those with one (keys of :data:`~evocov_core.language.library.ETS_FORMS`).
NON_SEASONAL = ("ANN", "AAN", "AAdN")
SEASONAL = ("ANA", "AAA", "AAdA", "ANM", "AAdM")
#: A calendar season is used when the training data hold at least this many of its cycles.
MIN_SEASONS = 3
#: The damped trend's starting time constant (model units, the training span is 1): a tenth of
#: the span, the test horizon's length, so that the trend has damped by about e⁻¹ at its end.
DAMPING = 0.1
#: Starting amplitude of the random-walk terms (a level that wanders by about a fifth of the data's
#: standard deviation over the span; the data are standardised): a level that moves little, as
#: ETS's smoothing parameters start small.
WANDER = 0.2


def season(data: FitData) -> float | None:
    """Angular frequency (model units) of the season the seasonal forms use, or None.

    The shortest calendar season (``data.calendar``) with at least :data:`MIN_SEASONS` cycles in
    the training range, else the strongest clear period of the periodogram.
    """
    span = data.span if math.isfinite(data.span) and data.span > 0 else 1.0
    for omega in sorted(data.calendar, reverse=True):  # highest frequency: the shortest season
        if span * omega / (2.0 * math.pi) >= MIN_SEASONS:
            return float(omega)
    clear = clear_frequencies(data)
    return float(clear[0]) if clear else None


def _start(kernel: Kernel, omega: float | None) -> Start:
    """The seeds' common start (:func:`~evocov_core.searches.spectral_seeds.seed_start`), the season's
    frequency, lengthscales at 1, a damping time of :data:`DAMPING` and each random walk's amplitude
    at :data:`WANDER`."""
    roles = {"frequency": math.log(omega) if omega is not None else 0.0, "damping": math.log(DAMPING),
             "lengthscale": 0.0}
    return seed_start(kernel, roles, dict.fromkeys(_wandering_amplitudes(kernel), math.log(WANDER)))


def _wandering_amplitudes(kernel: Kernel) -> set[str]:
    """The amplitude slots of the random-walk terms: ``square(hp(θ))`` multiplying a state-space
    operation (as :mod:`evocov_core.language.library` writes them)."""
    toks = kernel.tokens
    out = set()
    for i in range(len(toks) - 4):
        if (toks[i] == "multiply" and toks[i + 1] == "square" and toks[i + 2] == "hp"
                and toks[i + 4] in ("wiener", "iwiener", "damped")):
            out.add(toks[i + 3])
    return out


def ets_seeds(data: FitData) -> list[tuple[Kernel, Start]]:
    """The GP forms of SES, Holt, damped Holt and, at the season (:func:`season`), Holt-Winters.

    Returns
    -------
    list of (Kernel, Start)
        Three seeds without a season, eight with one; in the order of :data:`NON_SEASONAL` then
        :data:`SEASONAL`.
    """
    omega = season(data)
    names = NON_SEASONAL + (SEASONAL if omega is not None else ())
    out = []
    for name in names:
        kernel = compose(ETS_FORMS[name])
        out.append((kernel, _start(kernel, omega)))
    return out

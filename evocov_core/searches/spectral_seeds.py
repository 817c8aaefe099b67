"""Periodic seeds started at the data's clear periods, for long series.

On a long, high-frequency series (fitted on a subset, :mod:`evocov_core.fitting.subset`) a 60 s
search fits a few dozen kernels on the screening subset and two or three on the fit
points. Random periodic starts are drawn near a periodogram peak with probability
proportional to its power (:func:`evocov_core.fitting.optimize._draw_new`), so on half-hourly demand
nearly every periodic slot starts at the daily cycle, and the weekly one, which the forecast
needs, is rarely tried: on ``forecast::taylor`` the search returned a daily PER + RQ with BIC
−3,498 and test RMSE 3,071 (seasonal naive: 518), where PER(weekly) + SE started at the weekly
peak has BIC −4,290 and test RMSE 763, and PER(weekly) + PER(daily) + SE BIC −5,238 (RMSE 762).
A periodic kernel decays nowhere: it keeps the cycles where the data keep them.

So the first population of such a search begins with a few GPSS structures whose periodic
slots start *at* the clear periods, one period per slot (:func:`spectral_seeds`):
``PER_i + SE`` for each clear period ``i`` (strongest first), and ``PER_1 + PER_2 + SE`` when
there are two. Every value is given: the frequencies, amplitudes at
the data's variance, sharp periodic lengthscales (:data:`PERIODIC_LENGTHSCALE`), the SE's
lengthscale at the longest clear period, the noise at :data:`NOISE` of the variance. (With
random values for all but the frequencies, the weekly term of ``PER_1 + PER_2 + SE`` on taylor
started smooth and slid to the half-week harmonic.) A clear period (:func:`clear_frequencies`)
holds at least :data:`PEAK_WEIGHT` of the periodogram peaks' power and repeats at least :data:`MIN_REPEATS`
times in the training series: a seasonal cycle, not the bend of a trend. A peak at a half or a
third of a cycle's period is that cycle's harmonic, not a period of its own, and on dated data a
calendar season (a daily series' week and year) is clear from :data:`CALENDAR_WEIGHT` of the power:
daily US births' clear periods were a week and its half; a week and a year now, and
``PER(week) + PER(year) + SE`` fitted on its fit points forecasts with test RMSE 542 where
``PER(week) + SE`` gives 2,161 and MSTL 575.

The search fits them on the fit points first, from their given values and unscreened (stage
``seed``; screening ranks kernels by how well they follow the data a few steps apart, which a
forecast days ahead does not need, and a seed's values fitted on the screening subset start its
full fit worse than its own), in the order :func:`spectral_seeds` returns them, and offers them
to the model choice whatever their BIC (:meth:`~evocov_core.searches.candidates.Candidates.top`); the
choice, on a long series, scores their forecasts from four earlier origins
(``long_choice``).

Two more seeds are the Gaussian-process forms of the naive forecasts that are hard to beat on
long series (:func:`naive_seeds`): a *local periodic* kernel, ``PER × M12`` at the longest clear
period (a cycle whose shape drifts as a random walk over weeks: its forecast repeats the recent
cycles, as seasonal naive does), and ``M12 + LIN`` on every long series (a level that wanders
about a linear trend: random walk with drift). Fitted on the 2,000 fit points of
``forecast::taylor`` (one L-BFGS-B run, test RMSE; ``bench/bench_long_kernels.py``): PER(week)
× M12 518 where PER(week) + SE gives 705 and seasonal naive 518; on the Dow Jones, M12 + LIN
1,024 where M12 alone gives 2,728, the naive forecast 2,372 and AutoETS 1,949. On the
30,000-point synthetic series PER(week) × M12 gives 1.043, PER(week) + SE 1.039 and the true
mean 1.002. In the search (``bench/results/long/quick-naive-seeds``, 8 long series, 3 seeds)
they take the geometric mean over the better of seasonal naive and MSTL from 0.925 to 0.880.

Series short enough for an exact GP get none: there the search fits hundreds of kernels and
its settings were chosen without these seeds. The setting ``naive_seeds`` gives them the naive
seeds, which on the development corpus was worse (``docs/studies.md``): on a short series the tail
choice takes a small kernel that predicts the last 10 % and not what follows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from itertools import combinations

from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import Start
from evocov_core.language.kernel import Kernel, slot_roles
from evocov_core.language.library import compose, linear, matern12, periodic

__all__ = ["CALENDAR_WEIGHT", "HARMONICS", "LOCAL_LENGTHSCALE", "MAX_PERIODS", "MIN_REPEATS", "PEAK_WEIGHT",
           "WANDER_LENGTHSCALE", "clear_frequencies", "local_periodic", "may_seed",
           "naive_seeds", "spectral_seeds", "wandering_trend"]

#: A periodogram peak counts as a clear period above this share of the peaks' power.
PEAK_WEIGHT = 0.1
#: ... and when the period repeats at least this many times in the training series.
MIN_REPEATS = 6
#: A peak at one of the calendar's seasons of dated data counts above this share: a weekly or yearly
#: cycle of daily data is expected, and a weak one still shapes a forecast a year long (the yearly
#: cycle of daily Chicago L-train ridership holds 2 % of the power beside the weekly one).
CALENDAR_WEIGHT = 0.01
#: Peaks at these fractions of another's period are its harmonics (a week's half and third).
HARMONICS = (2, 3)
#: Relative tolerance of a harmonic ratio, and of a peak's period to a calendar season's.
HARMONIC_TOLERANCE = 0.03
#: Seeds use at most this many clear periods (strongest first).
MAX_PERIODS = 2
#: Starting periodic lengthscale: sharp, so that the likelihood pins the period it starts at
#: (a smooth start is a sinusoid, whose optimiser slid to a harmonic on taylor).
PERIODIC_LENGTHSCALE = 0.1
#: Starting noise variance (outputs are standardised).
NOISE = 0.05
#: Starting lengthscale of the local periodic seed's M12 envelope (model units: the training span is 1):
#: the cycle's shape drifts over the whole record, not from one cycle to the next.
LOCAL_LENGTHSCALE = 1.0
#: Starting lengthscale of the M12 + LIN seed's wandering level: a tenth of the span, the forecast horizon.
WANDER_LENGTHSCALE = 0.1


def clear_frequencies(data: FitData) -> tuple[float, ...]:
    """Angular frequencies (model units) of the data's clear periods, strongest first.

    From the whole training series' periodogram (``data.frequency_peaks``, which a subset of
    the data keeps); empty when the sampling step is unknown. Peaks at a half or a third of
    another's period are that cycle's harmonics (a periodic kernel at the longer period has
    them): their power counts for it and they are no period of their own. A cycle is clear when
    it repeats at least :data:`MIN_REPEATS` times in the training series and holds at least
    :data:`PEAK_WEIGHT` of the peaks' power, or :data:`CALENDAR_WEIGHT` at one of the calendar's
    seasons of dated data (``data.calendar``: daily data's week and year), whose exact period
    it then takes.

    Parameters
    ----------
    data : FitData
        Training data; ``data.approximation.n_total`` points when fitted on a subset, else ``data.n``.
    """
    step = data.step
    if not (math.isfinite(step) and step > 0):
        return ()
    n_total = data.approximation.n_total if data.approximation is not None else data.n
    families: list[list[float]] = []  # [fundamental ω, summed weight], strongest peak first
    for omega, weight in zip(*data.frequency_peaks, strict=True):
        for fam in families:
            ratio = max(omega, fam[0]) / min(omega, fam[0])
            if any(abs(ratio - k) <= HARMONIC_TOLERANCE * k for k in HARMONICS):
                fam[0] = min(fam[0], omega)  # the fundamental: the longer period
                fam[1] += weight
                break
        else:
            families.append([float(omega), float(weight)])
    out = []
    for omega, weight in sorted(families, key=lambda f: -f[1]):
        if MIN_REPEATS * 2.0 * math.pi / omega / step > n_total:
            continue
        season = [c for c in data.calendar if abs(omega / c - 1.0) <= HARMONIC_TOLERANCE]
        if season and weight >= CALENDAR_WEIGHT:
            out.append(season[0])
        elif weight >= PEAK_WEIGHT:
            out.append(omega)
    return tuple(dict.fromkeys(out))


def _seed(structure: list | str | Kernel, omegas: tuple[float, ...], level: float) -> tuple[Kernel, Start]:
    """``structure`` with its frequency slots, in order, starting at ``omegas``; amplitudes at the
    data's variance, periodic lengthscales sharp, lengthscales at ``level`` (model units), a linear
    term's shift at the first input and its scale at 1 (a unit slope over the span)."""
    kernel = structure if isinstance(structure, Kernel) else compose(structure)
    roles = slot_roles(kernel)
    freq = [s for s in kernel.slots if roles[s] == {"frequency"}]
    if len(freq) != len(omegas):  # the structures below are written with one PER per period
        raise ValueError(f"{kernel.infix} has {len(freq)} frequency slots, {len(omegas)} frequencies given")
    given = dict(zip(freq, (math.log(w) for w in omegas), strict=True))
    return kernel, seed_start(kernel, {"lengthscale": math.log(level)}, given)


def seed_start(kernel: Kernel, roles: Mapping[str, float], given: Mapping[str, float] | None = None) -> Start:
    """Where a seed's one fit starts: each slot at its ``given`` log value, else at the log value of its role.

    The roles' values default to the seeds' common ones: amplitudes at the data's variance (0, model
    units), periodic lengthscales sharp, a linear term's shift at the first input and its scale at 1;
    ``roles`` adds or overrides them (a slot of several roles takes its first, alphabetically). The
    noise starts at :data:`NOISE`.
    """
    by_role = {"value": 0.0, "periodic_lengthscale": math.log(PERIODIC_LENGTHSCALE), "shift": 0.0, "scale": 0.0,
               **roles}
    of = slot_roles(kernel)
    given = given or {}
    return Start(tuple(given[s] if s in given else by_role[min(of[s])] for s in kernel.slots), math.log(NOISE))


def may_seed(data: FitData, naive_everywhere: bool = False) -> bool:
    """Whether :func:`spectral_seeds` can give ``data`` any seed: data fitted on a subset of a long
    series, or any data with ``naive_everywhere`` (the search's ``seed`` stage exists only then)."""
    return data.on_subset or naive_everywhere


def spectral_seeds(data: FitData, *, naive_everywhere: bool = False) -> list[tuple[Kernel, Start]]:
    """Periodic GPSS structures with their frequencies started at the clear periods, and the naive
    forecasts' GP forms (module docstring).

    Returns
    -------
    list of (Kernel, Start)
        Empty unless the data are a subset of a long series (``data.approximation`` not
        exact). In the order they are fitted, which is the order the budget reaches them in: the
        structure with every clear period (``PER_1 + PER_2 + SE``, with two), :func:`naive_seeds`
        (``M12 + LIN`` alone when there is no clear period), then ``PER_i + SE`` for each clear
        period (nested in the first: when the budget runs out, these go without). On taylor, the
        local periodic seed fitted fifth got 16 evaluations and forecast with test RMSE 1,043
        where 30 gave 519. With ``naive_everywhere`` (the setting ``naive_seeds``), data fitted
        exactly get the naive seeds.
    """
    if not data.on_subset:
        return naive_seeds(data, always=True) if naive_everywhere else []
    omegas = clear_frequencies(data)[:MAX_PERIODS]
    if not omegas:
        return naive_seeds(data, omegas)
    level = 2.0 * math.pi / min(omegas)  # the SE term drifts over about the longest period
    both = [_seed(["+", ["+", "PER", "PER"], "SE"], (a, b), level) for a, b in combinations(omegas, 2)]
    each = [_seed(["+", "PER", "SE"], (w,), level) for w in omegas]
    return both + naive_seeds(data, omegas) + each


def naive_seeds(data: FitData, omegas: tuple[float, ...] | None = None, *,
                always: bool = False) -> list[tuple[Kernel, Start]]:
    """The GP forms of seasonal naive and of the random walk with drift (module docstring).

    ``PER × M12`` at the longest of ``omegas`` (the clear periods; none, no such seed), with
    its envelope's lengthscale at :data:`LOCAL_LENGTHSCALE`, and ``M12 + LIN`` with the M12's
    at :data:`WANDER_LENGTHSCALE`; the other values as :func:`spectral_seeds` gives them.

    Parameters
    ----------
    data : FitData
        Training data; empty unless fitted on a subset of a long series, or ``always``.
    omegas : tuple of float, optional
        Angular frequencies of the clear periods (default: :func:`clear_frequencies`, at most
        :data:`MAX_PERIODS`).
    always : bool
        Seeds for data fitted exactly too.

    Returns
    -------
    list of (Kernel, Start)
    """
    if not may_seed(data, always):
        return []
    omegas = clear_frequencies(data)[:MAX_PERIODS] if omegas is None else omegas
    seeds = []
    if omegas:
        seeds.append(_seed(local_periodic(), (min(omegas),), LOCAL_LENGTHSCALE))
    seeds.append(_seed(wandering_trend(), (), WANDER_LENGTHSCALE))
    return seeds


def local_periodic() -> Kernel:
    """``θ0² exp(−2 sin²(θω (x − x')/2)/θ1²) · exp(−|x − x'|/θ3)``: PER × M12, one amplitude (PER's
    scales the product; the envelope has none of its own, one slot less than ``compose``'s)."""
    envelope = ("exp", "multiply", "-1", "sqrt", "sq_dist", "euc", "x", "hp3")
    return Kernel(("multiply", *periodic("hp0", "hp1", "hp2").tokens, *envelope))


def wandering_trend() -> Kernel:
    """``θ0² exp(−|x − x'|/θ1) + (x − θs)(x' − θs)/θl``: M12 + LIN (no offset term, unlike GPSS's LIN)."""
    return Kernel(("add", *matern12("hp0", "hp1").tokens, *linear("hp2", "hp3").tokens))

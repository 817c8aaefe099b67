"""Periodic seeds at a long series' clear periods (evocov_core.searches.spectral_seeds)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evocov_core.data import Dataset
from evocov_core.fitting.metrics import FitData
from evocov_core.language.kernel import Kernel, slot_roles
from evocov_core.searches import preset, run_evocov
from evocov_core.searches.spectral_seeds import (
    CALENDAR_WEIGHT,
    LOCAL_LENGTHSCALE,
    MAX_PERIODS,
    NOISE,
    PEAK_WEIGHT,
    PERIODIC_LENGTHSCALE,
    WANDER_LENGTHSCALE,
    clear_frequencies,
    naive_seeds,
    spectral_seeds,
)


def _two_cycles(n: int, noise: float = 0.3) -> Dataset:
    """Half-hourly: a daily cycle of 48 steps and a weaker weekly one of 336, plus noise."""
    t = np.arange(n, dtype=np.float64)
    rng = np.random.default_rng(5)
    y = 3 * np.sin(2 * np.pi * t / 48) + 1.5 * np.cos(2 * np.pi * t / 336) + noise * rng.standard_normal(n)
    return Dataset.from_arrays(t, y, name=f"cycles{n}", test_fraction=0.1)


def _periods(data: FitData) -> list[float]:
    return [2 * math.pi / w / data.step for w in clear_frequencies(data)]


def test_clear_periods_are_both_cycles_strongest_first():
    long = FitData.from_dataset(_two_cycles(6000), max_points=1500)
    periods = _periods(long)
    assert len(periods) == 2
    assert periods[0] == pytest.approx(48, rel=0.01) and periods[1] == pytest.approx(336, rel=0.01)


def _daily(yearly: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """6,000 days from 2000: a weekly cycle with a strong half-week harmonic, a yearly cycle of
    amplitude ``yearly``, noise; x as decimal years (a CSV's dates) and as plain day numbers."""
    t = np.arange(6000.0)
    rng = np.random.default_rng(5)
    y = (3 * np.sin(2 * np.pi * t / 7) + 2 * np.sin(4 * np.pi * t / 7) + yearly * np.sin(2 * np.pi * t / 365.2425)
         + 0.5 * rng.standard_normal(t.size))
    return 2000.0 + t / 365.2425, t, y


def test_a_harmonic_is_no_period_and_the_calendar_year_is_one_when_weak():
    """The half-week peak (30 % of the power) belongs to the weekly cycle; the yearly cycle (2 % of
    the power, under PEAK_WEIGHT) is clear on dates, at exactly 365.2425 days, and not on plain numbers."""
    years, days, y = _daily(0.5)
    dated = FitData.from_dataset(Dataset.from_arrays(years, y, name="d", x_kind="date"), max_points=1500)
    peaks = [2 * math.pi / w / dated.step for w in dated.frequency_peaks[0]]
    assert peaks[1] == pytest.approx(3.5, rel=0.01) and dated.frequency_peaks[1][1] > PEAK_WEIGHT  # a strong harmonic
    i_year = next(i for i, p in enumerate(peaks) if abs(p / 365.25 - 1) < 0.03)
    assert CALENDAR_WEIGHT <= dated.frequency_peaks[1][i_year] < PEAK_WEIGHT
    assert _periods(dated) == pytest.approx([7.0, 365.2425], rel=1e-6)  # the calendar's exact season
    assert clear_frequencies(dated) == dated.calendar  # ... its frequencies, weekly first (the stronger)
    plain = FitData.from_dataset(Dataset.from_arrays(days, y, name="n"), max_points=1500)
    assert plain.calendar == () and [round(p, 2) for p in _periods(plain)] == [7.0]
    seeds = spectral_seeds(dated)
    per_per = [k for k, _ in seeds if k.infix.count("sin^2") == 2]
    assert len(per_per) == 1  # PER(week) + PER(year) + SE
    weak = FitData.from_dataset(Dataset.from_arrays(years, _daily(0.3)[2], name="w", x_kind="date"), max_points=1500)
    assert [round(p, 2) for p in _periods(weak)] == [7.0]  # under CALENDAR_WEIGHT: no yearly cycle


def test_a_cycle_that_repeats_too_few_times_is_not_a_clear_period():
    """2,000 half-hours hold six weeks: the weekly cycle repeats fewer than MIN_REPEATS = 6 times
    in the 1,800 training points, the daily one 37 times."""
    data = FitData.from_dataset(_two_cycles(2000), max_points=500)
    assert [round(p) for p in _periods(data)] == [48]


def test_each_periodic_slot_starts_at_one_clear_period():
    long = FitData.from_dataset(_two_cycles(6000), max_points=1500)
    omegas = clear_frequencies(long)
    seeds = spectral_seeds(long)
    assert len(seeds) == MAX_PERIODS + 1 + len(naive_seeds(long))
    assert [k.canonical for k, _ in seeds] == [k.canonical for k, _ in spectral_seeds(long)]  # deterministic
    # Every clear period together first, then the naive seeds (test below), then each period alone:
    # the order the budget reaches them in.
    n_naive = len(naive_seeds(long))
    seeds = seeds[:1] + seeds[1 + n_naive:]
    seen = []
    for kernel, start in seeds:
        roles = slot_roles(kernel)
        theta = dict(zip(kernel.slots, start.theta, strict=True))
        freq = [theta[s] for s in kernel.slots if roles[s] == {"frequency"}]
        assert all(math.isfinite(v) for v in start.theta) and start.log_noise == pytest.approx(math.log(NOISE))
        assert all(theta[s] == pytest.approx(math.log(PERIODIC_LENGTHSCALE))
                   for s in kernel.slots if roles[s] == {"periodic_lengthscale"})
        # The SE drifts over about the longest clear period (model units).
        assert all(theta[s] == pytest.approx(math.log(2 * math.pi / min(omegas)))
                   for s in kernel.slots if roles[s] == {"lengthscale"})
        assert len(set(freq)) == len(freq)  # two periodic terms: two different periods
        assert set(freq) <= {math.log(w) for w in omegas}
        seen.append(len(freq))
    assert seen == [2, 1, 1]
    assert all("exp(-0.5*|x-x'|^2" in k.infix for k, _ in seeds)  # each + SE


def test_the_naive_seeds_are_local_periodic_at_the_longest_period_and_a_wandering_trend():
    """PER × M12 at the weekly period (the longer of the two) and M12 + LIN, every value given;
    a long series without a clear period gets M12 + LIN alone."""
    long = FitData.from_dataset(_two_cycles(6000), max_points=1500)
    omegas = clear_frequencies(long)
    seeds = naive_seeds(long)
    assert spectral_seeds(long)[1:1 + len(seeds)] == seeds  # after PER + PER + SE, before each PER + SE
    assert [sorted(map(sorted, slot_roles(k).values())) for k, _ in seeds] == [
        [["frequency"], ["lengthscale"], ["periodic_lengthscale"], ["value"]],
        [["lengthscale"], ["scale"], ["shift"], ["value"]]]
    local, wander = (dict(zip(k.slots, s.theta, strict=True)) for k, s in seeds)
    (k_local, _), (k_wander, _) = seeds
    roles = [slot_roles(k) for k, _ in seeds]
    by_role = [{min(r[s]): v for s, v in t.items()} for r, t in zip(roles, (local, wander), strict=True)]
    assert by_role[0]["frequency"] == pytest.approx(math.log(min(omegas)))  # the weekly cycle
    assert by_role[0]["lengthscale"] == pytest.approx(math.log(LOCAL_LENGTHSCALE))
    assert by_role[0]["periodic_lengthscale"] == pytest.approx(math.log(PERIODIC_LENGTHSCALE))
    assert by_role[1]["lengthscale"] == pytest.approx(math.log(WANDER_LENGTHSCALE))
    assert "sin^2" in k_local.infix and "sqrt(|x-x'|^2" in k_local.infix  # a product: the cycle drifts
    assert "(x-hp2)*(x'-hp2)" in k_wander.infix and "sqrt(|x-x'|^2" in k_wander.infix
    # The kernels are PSD: a Cholesky of K + small noise on the fit points succeeds.
    from evocov_core.language.evaluate import covariance

    for k, s in seeds:
        K = covariance(k, long.X[:300], np.asarray(s.theta))
        np.linalg.cholesky(K + 1e-8 * np.eye(len(K)))
    walk = np.cumsum(np.random.default_rng(1).standard_normal(6000))
    no_cycle = FitData.from_dataset(Dataset.from_arrays(np.arange(6000.0), walk, name="walk", test_fraction=0.1),
                                    max_points=1500)
    assert clear_frequencies(no_cycle) == ()
    assert [k.canonical for k, _ in spectral_seeds(no_cycle)] == [k_wander.canonical]


def test_exact_data_get_no_spectral_seeds():
    """Short series keep the seeds they had: the change is measured on long ones only."""
    short = FitData.from_dataset(_two_cycles(1200), max_points=2000)
    assert short.approximation.exact and not short.on_subset
    assert FitData.from_dataset(_two_cycles(6000), max_points=1500).on_subset
    assert clear_frequencies(short)  # it has clear periods ...
    assert spectral_seeds(short) == []  # ... but gets no seeds from them
    from evocov_core.searches.stages import search_stages

    cfg = preset("quick", ets_seeds=False)
    assert "seed" not in search_stages(short, cfg)  # its executor holds what it always held
    assert "seed" in search_stages(FitData.from_dataset(_two_cycles(6000), max_points=1500), cfg)
    assert "seed" in search_stages(short, preset("quick"))  # the exponential-smoothing seeds' stage


def test_seed_evals_caps_the_seed_stage_alone():
    """``seed_evals`` sets the evaluations of the seeds' one L-BFGS-B run (0: ``max_evals``), and
    no other stage's."""
    from evocov_core.searches.stages import search_stages

    long = FitData.from_dataset(_two_cycles(6000), max_points=1500)
    default = search_stages(long, preset("quick"))
    capped = search_stages(long, preset("quick", seed_evals=250))
    assert default["seed"][1].max_evals == preset("quick").max_evals
    assert capped["seed"][1].max_evals == 250 and capped["seed"][1].n_restarts == 1
    assert all(capped[k][1] == default[k][1] for k in default if k != "seed")


def test_the_naive_seeds_setting_gives_short_series_the_naive_seeds_first():
    """``naive_seeds`` (the accuracy variant ``naive-seeds``): a series fitted exactly begins with the
    naive seeds too, in place of GPSS seeds; without it, as before."""
    short = FitData.from_dataset(_two_cycles(1200), max_points=2000)
    seeds = spectral_seeds(short, naive_everywhere=True)
    assert [k.canonical for k, _ in seeds] == [k.canonical for k, _ in naive_seeds(short, always=True)]
    assert len(seeds) == 2 and naive_seeds(short) == []
    cfg = preset("quick", generations=1, time_budget=0.0, select_top=1, calibration="none", combine=(),
                 naive_seeds=True, ets_seeds=False)
    ex = _Recorder()
    run_evocov(short, cfg, ex, seed=0)  # type: ignore[arg-type]
    first = ex.batches[0]
    assert [Kernel(t.tokens).canonical for t in first[:2]] == [k.canonical for k, _ in seeds]
    assert [t.start for t in first[:2]] == [s for _, s in seeds]
    assert all(t.start is None for t in first[2:])


def test_ets_seeds_begin_the_first_population():
    """With ``ets_seeds`` (the budgeted presets) the first batch begins with the exponential-smoothing
    forms at their given values, then the naive seeds, then GPSS seeds from random values."""
    from evocov_core.searches.ets_seeds import ets_seeds
    from evocov_core.searches.rules import ETS_SEED

    short = FitData.from_dataset(_two_cycles(1200), max_points=2000)
    ets = ets_seeds(short)
    assert len(ets) == 8  # a clear season: the seasonal forms too
    cfg = preset("quick", generations=1, time_budget=0.0, select_top=1, calibration="none", combine=(),
                 naive_seeds=True)
    assert cfg.ets_seeds and "statespace" not in cfg.families and "statespace" not in cfg.grammar.families  # none drawn
    ex = _Recorder()
    run_evocov(short, cfg, ex, seed=0)  # type: ignore[arg-type]
    first = ex.batches[0]  # 1,200 points: screened, so the seeds are the first batch (stage "seed")
    assert all(t.stage == "seed" for t in first) and len(first) == 10
    assert [Kernel(t.tokens).canonical for t in first[:8]] == [k.canonical for k, _ in ets]
    assert [t.start for t in first[:8]] == [s for _, s in ets]
    naive = spectral_seeds(short, naive_everywhere=True)
    assert [Kernel(t.tokens).canonical for t in first[8:10]] == [k.canonical for k, _ in naive]
    # On a long series the spectral seeds keep going first, the forms after them.
    long = FitData.from_dataset(_two_cycles(6000), max_points=1500)
    ex = _Recorder()
    run_evocov(long, cfg, ex, seed=0)  # type: ignore[arg-type]
    spectral = spectral_seeds(long)
    got = [Kernel(t.tokens).canonical for t in ex.batches[0]]
    assert got == [k.canonical for k, _ in spectral] + [k.canonical for k, _ in ets_seeds(long)]
    assert ETS_SEED != "seed"


class _Recorder:
    """An executor that fits nothing and records the tasks it is given, batch by batch."""

    stages = frozenset({"screen", "promote", "seed"})
    workers = 1
    replay = None

    def __init__(self) -> None:
        self.batches: list[list] = []

    def map(self, tasks, should_stop=None, on_result=None):
        self.batches.append(list(tasks))
        return [None] * len(tasks)


def test_a_long_search_puts_the_spectral_seeds_first_in_place_of_gpss_seeds():
    long = FitData.from_dataset(_two_cycles(6000), max_points=1500)
    cfg = preset("quick", generations=1, time_budget=0.0, select_top=1, calibration="none", combine=(), ets_seeds=False)
    ex = _Recorder()
    run_evocov(long, cfg, ex, seed=0)  # type: ignore[arg-type]
    # The seeds are fitted on all the data from their values, unscreened, before the rest is screened.
    seeds = spectral_seeds(long)
    first = ex.batches[0] + ex.batches[1]
    assert len(ex.batches[0]) == len(seeds) and all(t.stage == "seed" for t in ex.batches[0])
    assert all(t.stage == "screen" for t in ex.batches[1])
    assert [Kernel(t.tokens).canonical for t in first[:len(seeds)]] == [k.canonical for k, _ in seeds]
    assert [t.start for t in first[:len(seeds)]] == [s for _, s in seeds]
    n_seeds = round(cfg.seed_fraction * cfg.population)
    assert all(t.start is None for t in first[len(seeds):])  # GPSS seeds and random trees
    # The GPSS seeds that remain are the first ones the same seed drew before: the base kernels first.
    short = FitData.from_dataset(_two_cycles(1200), max_points=2000)
    ex_short = _Recorder()
    run_evocov(short, cfg, ex_short, seed=0)  # type: ignore[arg-type]
    gpss = [Kernel(t.tokens).canonical for t in ex_short.batches[0][:n_seeds]]
    assert [Kernel(t.tokens).canonical for t in first[len(seeds):n_seeds]] == gpss[:n_seeds - len(seeds)]


def test_spectral_seeds_are_promoted_and_offered_to_the_choice_whatever_their_rank():
    """Screening promotes a share of the kernels by BIC, the spectral seeds first and whatever their rank;
    ``top`` keeps them among the candidates even when other kernels have lower BIC, and keeps
    places for the search's own kernels."""
    from evocov_core.fitting.fits import SerialExecutor
    from evocov_core.searches.rules import SPECTRAL_SEED
    from evocov_core.searches.stages import search_stages
    from evocov_core.searches.structures import seed_kernels
    from evocov_core.searches.tracker import Tracker

    data = FitData.from_dataset(_two_cycles(3000), max_points=400)
    cfg = preset("quick", time_budget=0.0, screen_points=150, promote_fraction=0.75, max_evals=10, n_screen=0,
                 select_top=2)
    seeds = spectral_seeds(data)
    others = seed_kernels(6, np.random.default_rng(0))
    kernels = [k for k, _ in seeds] + others
    starts = [s for _, s in seeds] + [None] * len(others)
    origins = [SPECTRAL_SEED] * len(seeds) + ["seed"] * len(others)
    tr = Tracker("evocov", 1, None, None, 0, config=cfg, n_train=data.n, data=data)
    with SerialExecutor(data, cfg.optim, stages=search_stages(data, cfg)) as ex:
        batches: list[list[tuple[str, int]]] = []
        serial_map = ex.map

        def map_and_record(tasks, *args, **kwargs):
            batches.append([(t.stage, t.seed[2]) for t in tasks])
            return serial_map(tasks, *args, **kwargs)

        ex.map = map_and_record  # type: ignore[method-assign]
        fits = tr.evaluate(ex, kernels, starts, origins)
    # The seeds are fitted on all the data from their own values, unscreened, before the other
    # kernels are screened, so that the budget reaches them first; then the best others are promoted.
    n = len(seeds)
    assert [sorted(b) for b in batches[:2]] == [[("seed", i) for i in range(n)],
                                                [("screen", i) for i in range(n, n + len(others))]]
    assert len(batches) == 3 and {st for st, _ in batches[2]} == {"promote"} and min(i for _, i in batches[2]) >= n
    assert tr.screening.n_fits == len(others)
    assert all(f.ok and f.n == data.n for f in fits[:len(seeds)])  # fitted on every fit point
    full = [f for f in fits[len(seeds):] if f.ok and f.n == data.n]
    ranked = len(seeds) + len(others)
    assert len(full) == math.ceil(0.75 * ranked) - len(seeds)  # 3/4 of those ranked, rounded up, seeds included
    seed_fits = sorted((f for f in fits[:len(seeds)]), key=lambda f: f.bic)
    searched = sorted(full, key=lambda f: f.bic)
    assert all(f.bic > searched[0].bic for f in seed_fits[2:])  # some seeds rank below the search's kernels
    # top(k) keeps the lowest-BIC seeds whatever their rank, and MIN_SEARCHED (2) places for the
    # search's own kernels (k // 2 of a small k); places the search cannot fill go to seeds.
    top = tr.candidates.top(5)
    assert [f.bic for f in top] == sorted(f.bic for f in [*seed_fits[:3], *searched[:2]])
    assert tr.candidates.top(2) == tuple(sorted([seed_fits[0], searched[0]], key=lambda f: f.bic))
    assert set(map(id, tr.candidates.top(len(seeds) + 2))) == set(map(id, [*seed_fits, *searched[:2]]))
    assert len(tr.candidates.top(50)) == len(seeds) + len(full)  # all there is
    # The two PER + SE seeds share a canonical form but are two candidates (two periods).
    assert len({f.kernel.canonical for f in fits[:len(seeds)]}) == len(seeds) - 1

"""EvoCov, the paper's Algorithm 1.

::

    best = ∅;  pop = GenRandPop(N, d_min, d_max);  f_prev = ∞
    for i = 1 … G−1:
        Evaluate(pop)                        # selected kernels continue from their values
        f_i = BestFitness(pop)
        if β < (f_prev − f_i) / |f_i|:       # enough relative improvement of the best BIC
                                             # (``patience`` > 1: restart only after that many
                                             # generations in a row without it)
            sel = Select(pop, μ)             # truncation selection
            pop = Variate(sel, N − μ, p_m, p_cx) ∪ sel
            f_prev = f_i
        else:                                # restart
            best = Select(pop ∪ {best}, 1);  pop = GenRandPop(N, d_min, d_max);  f_prev = ∞
    Evaluate(pop);  return Select(pop ∪ {best}, 1)

The best kernel is tracked over every evaluation of the run (a superset of the
paper's bookkeeping, so never worse). Budgeted presets add, with settings that are off
in the paper's: a share ``seed_fraction`` of the first population made of GPSS
structures (with ``reseed_restarts``, of every restart's population too), a share
``p_expand`` of mutations that are GPSS expansions
(:mod:`evocov_core.searches.structures`), on long series periodic seeds started at the data's
clear periods (:mod:`evocov_core.searches.spectral_seeds`), and the time budget, fit cache and screening of
the :class:`~evocov_core.searches.tracker.Tracker`. Offspring inherit their parents' values
(section 4.3.2) and selected kernels are evaluated again from their current values.
All randomness of the loop (random kernels, selection ties, variation, PSD checks)
comes from one generator seeded by the run seed; each fit has its own seed
``(run seed, generation, index)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from evocov_core.fitting.fits import Executor
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import FitResult, Start
from evocov_core.language.kernel import Kernel
from evocov_core.searches.common import ProgressCallback, SearchResult, StopCheck, start_of, sub_rng
from evocov_core.searches.config import SearchConfig
from evocov_core.searches.ets_seeds import ets_seeds
from evocov_core.searches.rules import ETS_SEED, SPECTRAL_SEED
from evocov_core.searches.spectral_seeds import spectral_seeds
from evocov_core.searches.structures import expand, seed_kernels
from evocov_core.searches.tracker import Tracker
from evocov_core.searches.variation import crossover, mutate, random_kernel

__all__ = ["run_evocov"]


@dataclass(frozen=True)
class _Ind:
    kernel: Kernel
    start: Start | None
    origin: str


def _key(fit: FitResult | None) -> float:
    return fit.bic if fit is not None and fit.ok and math.isfinite(fit.bic) else math.inf


def run_evocov(data: FitData, config: SearchConfig, executor: Executor, *, seed: int = 0,
               progress: ProgressCallback | None = None, should_stop: StopCheck | None = None,
               started: float | None = None) -> SearchResult:
    """Run EvoCov (Algorithm 1) on ``data``.

    Parameters
    ----------
    data : FitData
    config : SearchConfig
        ``population`` = N, ``generations`` = G, ``mu``, ``p_mutation``, ``p_crossover``, ``beta``, ``d_min``,
        ``d_max`` and the variation and optimiser settings.
    executor : Executor
        Where fits run (serial, process pool, Dask).
    seed : int
    progress : callable, optional
        Called with a :class:`~evocov_core.searches.common.Progress` after each generation.
    should_stop : callable, optional
        Polled between fits: True stops the run, which returns the best so far.
    started : float, optional
        When ``config.time_budget`` began (:func:`time.perf_counter`; default now).
    """
    grammar, vcfg, rng = config.grammar, config.variation, sub_rng(seed, 0)
    tr = Tracker("evocov", config.generations, progress, should_stop, seed, config=config, n_train=data.n,
                 data=data, executor=executor, started=started)
    N, mu = config.population, config.mu
    spectral = spectral_seeds(data, naive_everywhere=config.naive_seeds)
    ets = ets_seeds(data) if config.ets_seeds else []

    def random_population(epoch: int = 0) -> list[_Ind]:
        # The exponential-smoothing forms are in the first population, beyond the seeded share:
        # never missing from the pool (ets_seeds); restarts draw afresh. They are fitted first,
        # except on a long series, where the budget reaches the spectral seeds first as before.
        forms = [_Ind(k, s, ETS_SEED) for k, s in ets] if epoch == 0 else []
        given: list[_Ind] = []
        gpss: list[_Ind] = []
        if config.seed_fraction > 0 and (epoch == 0 or config.reseed_restarts):
            # The first epoch keeps the generator it always had (same seed, same run); each
            # restart draws its own order of the non-base structures. On a long series the
            # periodic seeds at its clear periods come first and take the place of GPSS seeds.
            srng = sub_rng(seed, 1) if epoch == 0 else sub_rng(seed, 1, epoch)
            n_seeds = round(config.seed_fraction * N)
            given = [_Ind(k, s, SPECTRAL_SEED) for k, s in spectral[:n_seeds]]
            gpss = [_Ind(k, None, "seed") for k in seed_kernels(n_seeds - len(given), srng, tuple(config.seed_bases))]
        out = (given + forms if data.on_subset else forms + given) + gpss
        for _ in range(N - len(out)):
            if tr.stop_requested():
                break
            out.append(_Ind(random_kernel(grammar, rng, config.d_min, config.d_max, vcfg)[0], None, "random"))
        return out

    def variate(sel: list[FitResult]) -> list[_Ind]:
        out = []
        for _ in range(N - mu):
            if rng.random() < config.p_mutation or len(sel) < 2:
                p = sel[int(rng.integers(len(sel)))]
                if config.p_expand > 0 and rng.random() < config.p_expand:
                    c = expand(p.kernel, rng, vcfg, config.n_hyper, theta=p.theta, log_noise=p.log_noise,
                               bases=tuple(config.seed_bases), families=config.families)
                else:
                    c = mutate(p.kernel, rng, vcfg, grammar, theta=p.theta, log_noise=p.log_noise)
            else:
                i, j = rng.choice(len(sel), size=2, replace=False)
                a, b = sel[int(i)], sel[int(j)]
                c = crossover(a.kernel, b.kernel, rng, vcfg, config.n_hyper, theta_a=a.theta, theta_b=b.theta,
                              noise_a=a.log_noise, noise_b=b.log_noise)
            out.append(_Ind(c.kernel, Start(c.theta, c.log_noise), c.origin))
        return out

    pop = random_population()
    epoch = 0  # restarts so far
    f_prev = math.inf
    stalled = 0  # consecutive generations without enough improvement
    for _ in range(1, config.generations):
        if tr.stop_requested():
            break
        fits = tr.evaluate(executor, [p.kernel for p in pop], [p.start for p in pop], [p.origin for p in pop])
        if tr.stopped:
            tr.end_generation(restarted=False)  # report what the last, partial generation fitted
            break
        f_i = min((_key(f) for f in fits), default=math.inf)
        with_fit = [f for f in fits if f is not None and f.ok]
        rel = (f_prev - f_i) / abs(f_i) if math.isfinite(f_i) and f_i != 0 else -math.inf
        stalled = stalled + 1 if (config.beta >= rel or not with_fit) else 0
        if with_fit and stalled < config.patience:
            sel = sorted(with_fit, key=_key)[:mu]
            pop = variate(sel) + [_Ind(f.kernel, start_of(f), "selected") for f in sel]
            f_prev = min(f_prev, f_i)
            tr.end_generation(restarted=False)
        else:
            tr.end_generation(restarted=True)
            epoch += 1
            pop = random_population(epoch)
            f_prev = math.inf
            stalled = 0
    if not tr.stop_requested() and pop:
        tr.evaluate(executor, [p.kernel for p in pop], [p.start for p in pop], [p.origin for p in pop])
        tr.end_generation(restarted=False)
    return tr.result(config.to_dict())

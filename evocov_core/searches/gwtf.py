"""Go With The First (the paper's section 4.5.2).

G random kernels; each round, every survivor hill-climbs for N steps (a random
mutation, kept when its BIC is lower), then the worst survivor is dropped; rounds
repeat until one kernel is left. Paper budget: G = 13, N = 200 (about 18000 fits).

Parallelism: at each step the mutants of all survivors are fitted together. One
progress report per step.
"""

from __future__ import annotations

import math

from evocov_core.fitting.fits import Executor
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import FitResult, Start
from evocov_core.searches.common import ProgressCallback, SearchResult, StopCheck, sub_rng
from evocov_core.searches.config import SearchConfig
from evocov_core.searches.tracker import Tracker
from evocov_core.searches.variation import mutate, random_kernel

__all__ = ["run_gwtf"]


def _bic(f: FitResult | None) -> float:
    return f.bic if f is not None and f.ok else math.inf


def run_gwtf(data: FitData, config: SearchConfig, executor: Executor, *, seed: int = 0,
             progress: ProgressCallback | None = None, should_stop: StopCheck | None = None,
             started: float | None = None) -> SearchResult:
    """Run Go With The First: ``generations`` individuals, ``population`` steps per round."""
    grammar = config.grammar
    vcfg = config.variation
    rng = sub_rng(seed, 0)
    G, N = config.generations, config.population
    total = 1 + N * max(G - 1, 1)
    tr = Tracker("gwtf", total, progress, should_stop, seed, config=config, n_train=data.n, data=data,
                 executor=executor, started=started)
    kernels = [random_kernel(grammar, rng, config.d_min, config.d_max, vcfg)[0] for _ in range(G)]
    fits = tr.evaluate(executor, kernels, [None] * G, ["random"] * G)
    tr.end_generation()
    current: list[FitResult | None] = list(fits)
    survivors = [i for i in range(G) if not tr.stopped]
    rounds = max(G - 1, 1)
    for _ in range(rounds):
        for _step in range(N):
            if tr.stop_requested():
                break
            children = []
            for i in survivors:
                f = current[i]
                k = f.kernel if f is not None else kernels[i]
                theta = f.theta if f is not None and f.ok else None
                noise = f.log_noise if f is not None and f.ok else math.nan
                children.append(mutate(k, rng, vcfg, grammar, theta=theta, log_noise=noise))
            new = tr.evaluate(executor, [c.kernel for c in children], [Start(c.theta, c.log_noise) for c in children],
                              [c.origin for c in children])
            for i, nf in zip(survivors, new, strict=True):
                if _bic(nf) < _bic(current[i]):
                    current[i] = nf
            tr.end_generation()
        if tr.stopped or len(survivors) <= 1:
            break
        worst = max(survivors, key=lambda i: _bic(current[i]))
        survivors.remove(worst)
    return tr.result(config.to_dict())

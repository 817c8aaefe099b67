"""Random Search (the paper's section 4.5.1): N random PSD kernels, keep the best BIC.

Kernels are drawn with Algorithm 2 and the PSD check, fitted in batches (one progress
report per batch), and the lowest BIC wins. Paper budget: N = 20000.
"""

from __future__ import annotations

from evocov_core.fitting.fits import Executor
from evocov_core.fitting.metrics import FitData
from evocov_core.searches.common import ProgressCallback, SearchResult, StopCheck, sub_rng
from evocov_core.searches.config import SearchConfig
from evocov_core.searches.tracker import Tracker
from evocov_core.searches.variation import random_kernel

__all__ = ["run_random_search"]


def run_random_search(data: FitData, config: SearchConfig, executor: Executor, *, seed: int = 0,
                      progress: ProgressCallback | None = None, should_stop: StopCheck | None = None,
                      started: float | None = None,
                      batch: int = 100) -> SearchResult:
    """Run Random Search with ``config.population`` kernels, ``batch`` per progress report."""
    grammar = config.grammar
    vcfg = config.variation
    rng = sub_rng(seed, 0)
    n_batches = -(-config.population // batch)
    tr = Tracker("random", n_batches, progress, should_stop, seed, config=config, n_train=data.n, data=data,
                 executor=executor, started=started)
    done = 0
    while done < config.population and not tr.stop_requested():
        size = min(batch, config.population - done)
        kernels = [random_kernel(grammar, rng, config.d_min, config.d_max, vcfg)[0] for _ in range(size)]
        tr.evaluate(executor, kernels, [None] * size, ["random"] * size)
        tr.end_generation()
        done += size
    return tr.result(config.to_dict())

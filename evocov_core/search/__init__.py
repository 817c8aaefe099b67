"""Kernel searches: EvoCov, Random Search, Go With The First, a GPSS baseline, the mutation explorer.

Each is a plain function ``run_*(data, config, executor, seed=, progress=, should_stop=)``
returning a :class:`~evocov_core.search.common.SearchResult`. :func:`run_search`
dispatches on ``config.algorithm`` and, when no executor is given, makes one.
"""

from __future__ import annotations

from ..metrics import FitData
from ..parallel import Executor, make_executor
from .common import EvalRecord, GenerationStats, Progress, ProgressCallback, SearchResult, StopCheck
from .config import ALGORITHM_LABELS, ALGORITHMS, PRESETS, ConfigError, SearchConfig, preset
from .evocov import run_evocov
from .explore import ExploreResult, explore_mutations, neighbour_ratios
from .gpss import run_gpss
from .gwtf import run_gwtf
from .random_search import run_random_search

__all__ = [
    "ALGORITHMS",
    "ALGORITHM_LABELS",
    "PRESETS",
    "ConfigError",
    "EvalRecord",
    "ExploreResult",
    "GenerationStats",
    "Progress",
    "SearchConfig",
    "SearchResult",
    "explore_mutations",
    "neighbour_ratios",
    "preset",
    "run_evocov",
    "run_gpss",
    "run_gwtf",
    "run_random_search",
    "run_search",
]

_RUNNERS = {"evocov": run_evocov, "random": run_random_search, "gwtf": run_gwtf, "gpss": run_gpss}


def run_search(data: FitData, config: SearchConfig, *, seed: int = 0, executor: Executor | None = None,
               workers: int | None = None, scheduler: str | None = None,
               progress: ProgressCallback | None = None, should_stop: StopCheck | None = None) -> SearchResult:
    """Run ``config.algorithm`` on ``data``.

    Without ``executor``, one is made for the run (``scheduler`` -> Dask, ``workers=1`` ->
    serial, else a process pool of ``workers`` or every core) and closed afterwards.
    """
    runner = _RUNNERS[config.algorithm]
    if executor is not None:
        return runner(data, config, executor, seed=seed, progress=progress, should_stop=should_stop)
    with make_executor(data, config.optim, workers=workers, scheduler=scheduler) as ex:
        return runner(data, config, ex, seed=seed, progress=progress, should_stop=should_stop)

"""What every search shares: evaluation records, progress reports, results, the run loop helpers.

A search is a plain function ``run(data, config, executor, seed, progress, should_stop)``.
After every generation it calls ``progress(Progress)``; it polls ``should_stop()``
between kernel fits and returns the best result so far when asked to stop.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from ..kernel import Kernel
from ..optimize import FitResult, Start
from ..parallel import Executor, Task

__all__ = [
    "EvalRecord",
    "GenerationStats",
    "Progress",
    "ProgressCallback",
    "SearchResult",
    "StopCheck",
    "Tracker",
]

ProgressCallback = Callable[["Progress"], None]
StopCheck = Callable[[], bool]


@dataclass(frozen=True)
class EvalRecord:
    """One kernel fit as a table row (JSON-friendly, enough to reopen the kernel).

    ``theta`` are log slot values (model units) ordered as the expression's slots.
    """

    generation: int
    index: int
    expression: str
    canonical: str
    infix: str
    q: int
    bic: float
    lml: float
    metric_value: float
    test_rmse: float | None
    status: str
    reason: str
    origin: str
    n_evals: int
    seconds: float
    theta: tuple[float, ...]
    log_noise: float
    jitter: float

    @classmethod
    def from_fit(cls, fit: FitResult, generation: int, index: int, origin: str) -> EvalRecord:
        k = fit.kernel
        return cls(generation, index, k.prefix, k.canonical, k.infix, fit.q, fit.bic, fit.lml, fit.metric_value,
                   fit.test_rmse, fit.status, fit.reason, origin, fit.n_evals, fit.seconds, tuple(fit.theta),
                   fit.log_noise, fit.jitter)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class GenerationStats:
    """Per-generation statistics (one row of the fitness curve)."""

    generation: int
    best_bic: float  # best in this generation
    mean_bic: float  # mean over the finite BICs of this generation
    best_so_far_bic: float
    n_evaluated: int  # kernels fitted in this generation
    n_failed: int
    restarted: bool  # a restart was triggered after this generation
    elapsed: float


@dataclass(frozen=True)
class Progress:
    """What a search reports after each generation.

    Attributes
    ----------
    algorithm : str
    generation : int
        1-based index of the generation just evaluated.
    total_generations : int
    stats : GenerationStats
    best : FitResult or None
        Best kernel over the whole run so far (lowest BIC).
    n_evaluations : int
        Kernel fits done so far in the run.
    restarts : int
    elapsed : float
        Seconds since the run started.
    evaluated : tuple of EvalRecord
        The kernels fitted in this generation.
    """

    algorithm: str
    generation: int
    total_generations: int
    stats: GenerationStats
    best: FitResult | None
    n_evaluations: int
    restarts: int
    elapsed: float
    evaluated: tuple[EvalRecord, ...]


@dataclass(frozen=True)
class SearchResult:
    """The outcome of a search.

    Attributes
    ----------
    best : FitResult or None
        Lowest-BIC kernel of the run (None only if nothing could be fitted).
    status : str
        ``finished`` or ``cancelled``.
    history : tuple of GenerationStats
    records : tuple of EvalRecord
        Every kernel fitted.
    n_evaluations : int
    restarts : int
    elapsed : float
    """

    algorithm: str
    best: FitResult | None
    status: str
    history: tuple[GenerationStats, ...]
    records: tuple[EvalRecord, ...]
    n_evaluations: int
    restarts: int
    elapsed: float
    settings: dict = field(default_factory=dict)


def _better(a: FitResult | None, b: FitResult | None) -> FitResult | None:
    """The lower-BIC of two fits (ties keep ``a``; failures never win)."""
    if b is None or not b.ok:
        return a
    if a is None or not a.ok or b.bic < a.bic:
        return b
    return a


class Tracker:
    """Bookkeeping shared by the searches: best so far, records, history, progress calls."""

    def __init__(self, algorithm: str, total_generations: int, progress: ProgressCallback | None,
                 should_stop: StopCheck | None, seed: int) -> None:
        self.algorithm = algorithm
        self.total = total_generations
        self.progress = progress
        self._should_stop = should_stop
        self.seed = seed
        self.best: FitResult | None = None
        self.records: list[EvalRecord] = []
        self.history: list[GenerationStats] = []
        self.n_evaluations = 0
        self.restarts = 0
        self.t0 = time.perf_counter()
        self.cancelled = False
        self.generation = 0

    def stop_requested(self) -> bool:
        if self.cancelled:
            return True
        if self._should_stop is not None and self._should_stop():
            self.cancelled = True
        return self.cancelled

    def evaluate(self, executor: Executor, kernels: Sequence[Kernel], starts: Sequence[Start | None],
                 origins: Sequence[str]) -> list[FitResult | None]:
        """Fit a generation's kernels; each gets the seed (run seed, generation, index)."""
        self.generation += 1
        g = self.generation
        tasks = [Task(k.tokens, (self.seed, g, i), s) for i, (k, s) in enumerate(zip(kernels, starts, strict=True))]
        fits = executor.map(tasks, self.stop_requested)
        recs: list[EvalRecord] = []
        for i, f in enumerate(fits):
            if f is None:
                continue
            self.n_evaluations += 1
            self.best = _better(self.best, f)
            recs.append(EvalRecord.from_fit(f, g, i, origins[i]))
        self.records.extend(recs)
        self._gen_recs = recs
        return fits

    def end_generation(self, restarted: bool = False) -> None:
        recs = self._gen_recs
        finite = [r.bic for r in recs if math.isfinite(r.bic)]
        stats = GenerationStats(
            generation=self.generation,
            best_bic=min(finite) if finite else math.inf,
            mean_bic=float(np.mean(finite)) if finite else math.inf,
            best_so_far_bic=self.best.bic if self.best is not None else math.inf,
            n_evaluated=len(recs),
            n_failed=sum(1 for r in recs if r.status != "ok"),
            restarted=restarted,
            elapsed=time.perf_counter() - self.t0,
        )
        if restarted:
            self.restarts += 1
        self.history.append(stats)
        if self.progress is not None:
            self.progress(Progress(self.algorithm, self.generation, self.total, stats, self.best,
                                   self.n_evaluations, self.restarts, stats.elapsed, tuple(recs)))

    def result(self, settings: dict | None = None) -> SearchResult:
        return SearchResult(self.algorithm, self.best, "cancelled" if self.cancelled else "finished",
                            tuple(self.history), tuple(self.records), self.n_evaluations, self.restarts,
                            time.perf_counter() - self.t0, settings or {})


def start_of(fit: FitResult | None) -> Start | None:
    """Continue from a fit's values (None when it failed)."""
    if fit is None or not fit.ok:
        return None
    return fit.start()


def sub_rng(seed: int, *keys: int) -> np.random.Generator:
    """A generator for one purpose of a run, independent of every other."""
    return np.random.default_rng(np.random.SeedSequence([seed, *keys]))

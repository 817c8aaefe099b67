"""What every search shares: evaluation records, progress reports, results, the run loop helpers.

A search is a plain function ``run(data, config, executor, seed, progress, should_stop)``.
After every generation it calls ``progress(Progress)``; it polls ``should_stop()``
between kernel fits and returns the best result so far when asked to stop.

The :class:`Tracker` also owns the parts of a budgeted search that do not depend on the
algorithm:

* **time budget**: with ``config.time_budget`` the run stops itself (status
  ``FINISHED``, ``budget_spent``) when its share of the budget is spent; fits in flight
  stop at the same instant with the best point they reached (``Task.deadline``);
* **canonical cache** (``config.cache_fits``): a kernel whose canonical form was fitted
  before in the run keeps that fit instead of being fitted again (a spectral seed is keyed
  by its periods too, :func:`fit_key`);
* **screening** (``config.screen_points``): a batch of new kernels is first fitted on a
  subset of the training points (executor stage ``screen``, see
  :func:`~evocov_core.search.stages.search_stages`); the best ``promote_fraction`` of
  them by that BIC are fitted on all the data from the values found (stage ``promote``);
  the others are recorded with status ``SCREENED_OUT`` and never selected. A long series'
  spectral seeds are not screened: they are fitted on all the data from their given values
  (stage ``seed``) before the rest of their batch is screened.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum

import numpy as np

from evocov_core.fitting.fits import Executor, Task
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import NUMERIC_ERRORS, FitResult, FitStatus, Start, finite_or
from evocov_core.fitting.scoring import PENALTY
from evocov_core.fitting.subset import DEFAULT_MAX_POINTS, plan_subset
from evocov_core.language.kernel import Kernel
from evocov_core.language.parse import parse_expression
from evocov_core.search.ets_seeds import ETS_SEED
from evocov_core.search.replay import RunLog
from evocov_core.search.spectral_seeds import SPECTRAL_SEED
from evocov_core.search.validate import DEFAULT_ORIGINS, Calibration, OriginScores

__all__ = [
    "EVAL_COLUMNS",
    "EvalRecord",
    "GenerationStats",
    "Progress",
    "ProgressCallback",
    "RunStatus",
    "SearchResult",
    "StopCheck",
    "Tracker",
    "search_share",
]

ProgressCallback = Callable[["Progress"], None]
StopCheck = Callable[[], bool]


class RunStatus(StrEnum):
    """Status of a run: a search ends ``FINISHED`` or ``CANCELLED`` (:class:`SearchResult`);
    the dashboard's jobs and the run store add the others.

    Defined with the search result, which the store and the jobs import (not the
    reverse). A ``StrEnum``: members equal their values, so the run store holds the same
    strings as before the enum and a status read back compares equal to a member.
    """

    QUEUED = "queued"
    RUNNING = "running"
    FINISHED = "finished"
    CANCELLED = "cancelled"
    FAILED = "failed"
    #: The process running it stopped (server shut down or died) before it ended.
    INTERRUPTED = "interrupted"

    @property
    def active(self) -> bool:
        """Queued or running: the run may still change."""
        return self in (RunStatus.QUEUED, RunStatus.RUNNING)


#: Columns of the run store's ``evaluations`` table that :meth:`EvalRecord.to_row` fills, in order.
EVAL_COLUMNS = ("generation", "idx", "expression", "canonical", "infix", "q", "bic", "lml", "metric_value",
                "test_rmse", "status", "reason", "origin", "n_evals", "seconds", "theta_json", "log_noise", "jitter")


def sql_number(v: float | None) -> float | None:
    """SQLite has no inf/NaN: store them as NULL."""
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


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
    status: FitStatus
    reason: str
    origin: str
    n_evals: int
    seconds: float
    theta: tuple[float, ...]
    log_noise: float
    jitter: float

    def __post_init__(self) -> None:
        # As in FitResult: a status given as its string becomes the member; unknown ones raise.
        if type(self.status) is not FitStatus:
            object.__setattr__(self, "status", FitStatus(self.status))

    @classmethod
    def from_fit(cls, fit: FitResult, generation: int, index: int, origin: str) -> EvalRecord:
        """The record of ``fit``, the ``index``-th kernel of ``generation``, made by ``origin``."""
        k = fit.kernel
        return cls(generation=generation, index=index, expression=k.prefix, canonical=k.canonical, infix=k.infix,
                   q=fit.q, bic=fit.bic, lml=fit.lml, metric_value=fit.metric_value, test_rmse=fit.test_rmse,
                   status=fit.status, reason=fit.reason, origin=origin, n_evals=fit.n_evals, seconds=fit.seconds,
                   theta=tuple(fit.theta), log_noise=fit.log_noise, jitter=fit.jitter)

    def to_dict(self) -> dict:
        """Every field by name (the CLI's records CSV)."""
        return asdict(self)

    def to_row(self) -> dict[str, object]:
        """The record as a row of the run store's ``evaluations`` table (:data:`EVAL_COLUMNS`).

        SQLite has no inf/NaN: non-finite numbers become None (NULL); ``theta`` is a JSON
        list under ``theta_json``, ``index`` is ``idx``.
        """
        return {
            "generation": self.generation, "idx": self.index, "expression": self.expression,
            "canonical": self.canonical, "infix": self.infix, "q": self.q, "bic": sql_number(self.bic),
            "lml": sql_number(self.lml), "metric_value": sql_number(self.metric_value),
            "test_rmse": sql_number(self.test_rmse),
            "status": self.status, "reason": self.reason, "origin": self.origin, "n_evals": self.n_evals,
            "seconds": self.seconds, "theta_json": json.dumps([sql_number(t) for t in self.theta]),
            "log_noise": sql_number(self.log_noise), "jitter": sql_number(self.jitter),
        }

    @classmethod
    def from_row(cls, row: Mapping[str, object]) -> EvalRecord:
        """A record from a row of the ``evaluations`` table (a dict, or a pandas row with NaN for NULL).

        NULL numbers come back as NaN, except a BIC (+inf, a failed fit's penalty), a test
        RMSE (None), a jitter (0) and the counters (0). Raises ValueError for an unknown
        status.
        """
        r = dict(row)
        rm = finite_or(r.get("test_rmse"))
        return cls(
            generation=int(finite_or(r.get("generation"), 0)),
            index=int(finite_or(r.get("idx"), 0)),
            expression=str(r["expression"]),
            canonical=str(r.get("canonical") or ""),
            infix=str(r.get("infix") or ""),
            q=int(finite_or(r.get("q"), 0)),
            bic=finite_or(r.get("bic"), PENALTY),
            lml=finite_or(r.get("lml")),
            metric_value=finite_or(r.get("metric_value")),
            test_rmse=rm if math.isfinite(rm) else None,
            status=FitStatus(r.get("status")),
            reason=str(r.get("reason") or ""),
            origin=str(r.get("origin") or ""),
            n_evals=int(finite_or(r.get("n_evals"), 0)),
            seconds=finite_or(r.get("seconds"), 0.0),
            theta=tuple(finite_or(t) for t in json.loads(str(r.get("theta_json") or "[]"))),
            log_noise=finite_or(r.get("log_noise")),
            jitter=finite_or(r.get("jitter"), 0.0),
        )

    def to_fit(self, n: int = 0, fit_points: int | None = None) -> FitResult:
        """The fit this record describes, to reopen the kernel (its expression parsed safely).

        Parameters
        ----------
        n : int
            Training points of the data set (not stored with the record).
        fit_points : int, optional
            The search's ``fit_points`` (its run settings): on a long series the fit used a
            subset of the ``n`` points (:func:`~evocov_core.fitting.subset.plan_subset`), and its
            ``n`` says so, so that :meth:`FittedModel.from_fit` conditions on the same points
            and never builds an exact GP on all of them. None: the default limit
            (:data:`~evocov_core.fitting.subset.DEFAULT_MAX_POINTS`).

        Raises
        ------
        ValueError
            The fit failed, or its values are missing or not finite (a
            :class:`~evocov_core.runs.kernel_file.KernelFileError`, also a ValueError, for a bad
            expression).
        """
        kernel = parse_expression(self.expression)
        if len(self.theta) != len(kernel.slots) or not all(math.isfinite(t) for t in self.theta):
            raise ValueError("this kernel has no usable fitted values")
        if self.status != FitStatus.OK:
            raise ValueError(f"this kernel's fit failed ({self.reason or self.status})")
        return FitResult(
            kernel=kernel, theta=self.theta, log_noise=self.log_noise, jitter=self.jitter, status=FitStatus.OK,
            reason="", metric="lml",  # the store keeps the metric's value, not its name
            metric_value=self.metric_value, lml=self.lml, bic=self.bic, q=self.q or kernel.q,
            n=plan_subset(n, DEFAULT_MAX_POINTS if fit_points is None else fit_points).n_used if n > 0 else n,
            n_evals=self.n_evals, seconds=self.seconds, test_rmse=self.test_rmse,
        )


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
    time_budget : float
        The run's time budget in seconds (0: none).
    n_screen_fits : int
        Screening fits so far (not counted in ``n_evaluations``).
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
    time_budget: float = 0.0
    n_screen_fits: int = 0

    @property
    def time_left(self) -> float | None:
        """Seconds left of the budget (None without one)."""
        return max(0.0, self.time_budget - self.elapsed) if self.time_budget > 0 else None


@dataclass(frozen=True)
class SearchResult:
    """The outcome of a search.

    Attributes
    ----------
    best : FitResult or None
        The kernel the search returns (None only if nothing could be fitted): the
        lowest BIC, or with ``select_top > 1`` the choice of
        :func:`~evocov_core.search.select.choose_model`.
    status : RunStatus
        ``FINISHED`` or ``CANCELLED``.
    history : tuple of GenerationStats
    records : tuple of EvalRecord
        Every kernel fitted.
    n_evaluations : int
        Full fits (screening fits are counted in ``n_screen_fits``).
    restarts : int
    elapsed : float
    settings : dict
    best_bic : FitResult or None
        Lowest-BIC kernel of the run.
    budget_spent : bool
        The run stopped because its time budget was spent.
    n_screen_fits : int
    n_cache_hits : int
        Kernels met again and not refitted.
    candidates : tuple of FitResult
        The ``select_top`` lowest-BIC distinct kernels, lowest first.
    selection : tuple of dict
        The candidates of the model choice, best BIC first (empty without one).
    ensemble : tuple of (FitResult, float)
        Kernels and weights of the model average (empty without one).
    run_log : RunLog
        Where the clock stopped the run and the evaluations of every fit it used
        (:mod:`evocov_core.search.replay`): what ``search --replay`` follows.
    eval_seconds : float
        Median seconds per metric evaluation of the run's full-data fits (NaN without a
        time budget or a fit): what the model choice's checks are timed by.
    calibration : Calibration
        How much wider than the GP says the returned kernel's forecast intervals are
        (:func:`~evocov_core.search.validate.calibrate`).
    origins : OriginScores or None
        The returned kernel's out-of-sample forecasts from the four origins (its refits there) that
        calibrated it; None when none were made.
    """

    algorithm: str
    best: FitResult | None
    status: RunStatus
    history: tuple[GenerationStats, ...]
    records: tuple[EvalRecord, ...]
    n_evaluations: int
    restarts: int
    elapsed: float
    settings: dict = field(default_factory=dict)
    best_bic: FitResult | None = None
    budget_spent: bool = False
    n_screen_fits: int = 0
    n_cache_hits: int = 0
    candidates: tuple[FitResult, ...] = ()
    selection: tuple[dict, ...] = ()
    ensemble: tuple[tuple[FitResult, float], ...] = ()
    eval_seconds: float = math.nan
    run_log: RunLog = field(default_factory=RunLog)
    calibration: Calibration = field(default_factory=Calibration)
    origins: OriginScores | None = None


def fit_key(kernel: Kernel, start: Start | None, origin: str) -> str:
    """The fit cache's key: the kernel's canonical form, and for a spectral seed the periods it
    starts at too. A periodic structure has an optimum per period: started at a daily and at a
    weekly period it is two candidates, not one fit and a copy."""
    if origin in SEEDED and start is not None:
        return kernel.canonical + "@" + ",".join(f"{v:.9g}" for v in start.theta if math.isfinite(v))
    return kernel.canonical


def _better(a: FitResult | None, b: FitResult | None) -> FitResult | None:
    """The lower-BIC of two fits (ties keep ``a``; failures never win)."""
    if b is None or not b.ok:
        return a
    if a is None or not a.ok or b.bic < a.bic:
        return b
    return a


def _mean(values: list[float]) -> float:
    """Mean of finite values; +inf when empty or when it overflows (BICs of wild kernels can be ~1e308)."""
    if not values:
        return math.inf
    with np.errstate(over="ignore", invalid="ignore"):
        m = float(np.mean(values))
    return m if math.isfinite(m) else math.inf


def search_share(config: object) -> float:
    """Share of a time budget the search itself may use at least; the rest is for the model choice.

    On long series the choice can need more (:meth:`Tracker.choice_reserve`).
    """
    if getattr(config, "time_budget", 0.0) <= 0:
        return 1.0
    return 0.88 if getattr(config, "select_top", 1) > 1 else END_SHARE


#: Share of a time budget by which the model choice and the calibration end; the rest is for the
#: model average's posterior and the result.
END_SHARE = 0.97


#: Evaluations the model choice costs per candidate beyond its head refit, in units of one
#: full-data likelihood-with-gradient evaluation: the tail score (a posterior on the split),
#: the validity check (a Cholesky or an eigenvalue of K over the data and a forecast grid) and
#: the forecast spread. Measured on taylor (1,000 points): 8-12.
CHOICE_EXTRA_EVALS = 12
#: On a long series (fitted on a subset of data) the same per candidate: the validity check is a
#: Cholesky there (:func:`~evocov_core.search.select.indefiniteness`), and the origins' forecasts
#: keep the fitted values. Measured on 2,000 fit points of a 20,000-point half-hourly series: 1.3-1.8
#: evaluations (0.35-0.5 s at 0.28 s an evaluation).
LONG_CHECK_EVALS = 3
#: ... and once per run: the returned kernel's forecasts of the test part and from the origins for
#: the forecast combination, the model average's and the result's scores. Measured there: 7-9.
LONG_FINISH_EVALS = 12
#: The search keeps at least this share of a budget, however slow the choice looks.
MIN_SEARCH_SHARE = 0.5
#: Candidates of the model choice kept for the search's own kernels beside the spectral seeds.
MIN_SEARCHED = 2
#: Origins of the seeds a search starts from with given values (the spectral and naive seeds of
#: long series, the exponential-smoothing forms): fitted unscreened from those values, cached with
#: them, and offered to the model choice whatever their BIC (:meth:`Tracker.top`).
SEEDED = frozenset({SPECTRAL_SEED, ETS_SEED})
#: Above this many training points the Tracker times one evaluation before the search.
CALIBRATE_ABOVE = 1000


def _calibrate(data: FitData) -> float:
    """Seconds of one LML-with-gradient evaluation of SE + PER × SE on ``data`` (the fastest of
    two; a failed evaluation costs what it cost)."""
    from evocov_core.fitting.metrics import loss_and_grad
    from evocov_core.language.library import compose

    kernel = compose(["+", "SE", ["*", "PER", "SE"]])
    z = np.zeros(kernel.n_params + 1)
    z[-1] = math.log(0.1)
    best = math.inf
    for _ in range(2):
        t = time.perf_counter()
        with contextlib.suppress(NUMERIC_ERRORS):
            loss_and_grad("lml", kernel, data, z)
        best = min(best, time.perf_counter() - t)
    return best


class Tracker:
    """Bookkeeping shared by the searches: best so far, records, history, progress calls,
    and the time budget, fit cache and screening of a budgeted search (module docstring).

    Parameters
    ----------
    algorithm : str
    total_generations : int
    progress, should_stop : callable or None
    seed : int
    config : SearchConfig, optional
        Read for ``time_budget``, ``cache_fits``, ``screen_points`` and
        ``promote_fraction`` (without it: no budget, no cache, no screening).
    n_train : int
        Training points (screening applies only above ``screen_points``).
    data : FitData, optional
        On data of more than :data:`CALIBRATE_ABOVE` points, a budgeted search with a model
        choice times one likelihood evaluation on them first, so that the choice's share of
        the budget is right from the first generation (:meth:`choice_reserve`).
    executor : Executor, optional
        Its ``workers`` size the choice's reserve; a
        :class:`~evocov_core.search.replay.ReplayExecutor` makes this a replay: the search
        stops where the log says the timed run stopped, not by the clock.
    """

    def __init__(self, algorithm: str, total_generations: int, progress: ProgressCallback | None,
                 should_stop: StopCheck | None, seed: int, *, config: object | None = None, n_train: int = 0,
                 data: FitData | None = None, executor: object | None = None) -> None:
        self.algorithm = algorithm
        self.total = total_generations
        self.progress = progress
        self._should_stop = should_stop
        self.seed = seed
        self.best: FitResult | None = None
        self.records: list[EvalRecord] = []
        self.history: list[GenerationStats] = []
        self.n_evaluations = 0
        self.n_screen_fits = 0
        self.n_cache_hits = 0
        self.restarts = 0
        self.t0 = time.perf_counter()
        self.cancelled = False
        self.budget_spent = False
        self.generation = 0
        self.time_budget = float(getattr(config, "time_budget", 0.0) or 0.0)
        self._share = search_share(config)
        self._stop_at = self.t0 + self.time_budget * self._share if self.time_budget > 0 else math.inf
        self._on_subset = data is not None and data.on_subset
        self._head_evals = int(getattr(config, "max_evals", 0) or 0)
        # Refits per candidate in the model choice: one head, one per origin (choice="refit_origins"),
        # or on a long series none unless long_choice="tail".
        if data is not None and data.on_subset:
            self._refits = int(getattr(config, "long_choice", "tail") == "tail")
        else:
            self._refits = len(DEFAULT_ORIGINS) if getattr(config, "choice", "tail") == "refit_origins" else 1
        # The returned kernel's refits at the origins for its calibration (none on a long series,
        # and none beyond the choice's own with choice="refit_origins").
        self._calib_refits = len(DEFAULT_ORIGINS) if (
            getattr(config, "calibration", "none") == "origins" and self._refits == 1
            and not (data is not None and data.on_subset)) else 0
        self._eval_costs: list[float] = []  # seconds per evaluation of full-data fits
        self._workers = int(getattr(executor, "workers", 1) or 1)
        # Where the clock stopped the run (search.replay): logical checks and batches so far.
        self._replay = getattr(executor, "replay", None)
        self._checks = 0
        self._batches = 0
        self.stop_mark: tuple[str, int] | None = None
        self._cache: dict[str, FitResult] | None = {} if getattr(config, "cache_fits", False) else None
        m = int(getattr(config, "screen_points", 0) or 0)
        self._screen = 0 < m < n_train
        self._promote = float(getattr(config, "promote_fraction", 1.0))
        self._top_k = int(getattr(config, "select_top", 1) or 1)
        self._best_by_canonical: dict[str, FitResult] = {}  # by fit_key
        self._spectral_keys: set[str] = set()
        if (data is not None and data.n > CALIBRATE_ABOVE and self.time_budget > 0 and self._top_k > 1
                and self._replay is None):
            self._eval_costs.append(_calibrate(data))
            self._stop_at = self.t0 + self.time_budget - self.choice_reserve()

    def choice_reserve(self) -> float:
        """Seconds to keep for the model choice: its share of the budget, or on long series,
        where one evaluation is slow, what its refits and checks are estimated to cost (the
        median seconds per evaluation of this run's full fits × the evaluations the choice
        makes: one head refit per candidate, or four with ``choice="refit_origins"``, and four of the
        returned kernel for ``calibration="origins"``, each round of refits spread over the
        workers, plus the checks of :meth:`_check_seconds`), at most half the budget. The choice
        refits the distinct kernels fitted so far, at most ``select_top``: a long series whose
        search has fitted two kernels keeps time for two. With fewer than two there is nothing to
        choose and nothing to refit, so the search goes on fitting (on taylor it used to stop at
        60 % of a 60 s budget, keeping the rest for the choice of one kernel, fitted with a single
        evaluation on the fit points)."""
        base = self.time_budget * (1.0 - self._share)
        k = min(self._top_k, len(self._best_by_canonical))
        if self._top_k <= 1 or not self._eval_costs or k < 2:
            return base
        workers = max(1, self._workers)
        rounds = math.ceil(k * self._refits / workers) + math.ceil(self._calib_refits / workers)
        # The choice must end by END_SHARE of the budget, not at its end.
        estimate = (float(np.median(self._eval_costs)) * rounds * self._head_evals + self._check_seconds(k)
                    + self.time_budget * (1.0 - END_SHARE))
        return min(max(base, estimate), self.time_budget * (1.0 - MIN_SEARCH_SHARE))

    def _check_seconds(self, k: int) -> float:
        """Seconds the model choice's checks of ``k`` candidates take beyond their refits (and on
        a long series what the run does once after them), at this run's median cost of an evaluation."""
        evals = k * LONG_CHECK_EVALS + LONG_FINISH_EVALS if self._on_subset else k * CHOICE_EXTRA_EVALS
        return float(np.median(self._eval_costs)) * evals

    def _update_stop(self, fits: Sequence[FitResult | None]) -> None:
        """Fold new full fits' cost per evaluation into the stop time (budgeted runs only)."""
        if self.time_budget <= 0:
            return
        self._eval_costs.extend(f.seconds / f.n_evals for f in fits if f is not None and f.n_evals > 0)
        self._stop_at = self.t0 + self.time_budget - self.choice_reserve()

    def _promote_deadline(self, n_up: int, deadline: float | None) -> float | None:
        """The deadline of ``n_up`` promotions: early enough for the model choice's checks of the
        candidates they will make (:meth:`_check_seconds`), not only of those fitted so far. Fits
        in flight run to their deadline, so on a long series, where a check takes a fraction of a
        second, the promotions of the first generation used to end where the choice had to begin
        (taylor: 1.05-1.10 of the budget)."""
        if deadline is None or self._top_k <= 1 or not self._eval_costs or self._replay is not None:
            return deadline
        k = min(self._top_k, len(self._best_by_canonical) + n_up)
        reserve = min(max(self.time_budget * (1.0 - self._share), self._check_seconds(k)),
                      self.time_budget * (1.0 - MIN_SEARCH_SHARE))
        stop = self.t0 + self.time_budget - reserve
        return min(deadline, time.time() + (stop - time.perf_counter()))

    @property
    def stopped(self) -> bool:
        """Cancelled by the caller or out of time."""
        return self.cancelled or self.budget_spent

    def fit_deadline(self) -> float | None:
        """The search's deadline as wall-clock time (``time.time()``) for :class:`Task`, or None."""
        if not math.isfinite(self._stop_at):
            return None
        return time.time() + (self._stop_at - time.perf_counter())

    def _cancel_requested(self) -> bool:
        if not self.cancelled and self._should_stop is not None and self._should_stop():
            self.cancelled = True
        return self.cancelled

    def stop_requested(self) -> bool:
        """The search's own check of the clock (and of a cancel): True once it should stop."""
        if self._cancel_requested():
            return True
        self._checks += 1
        if self._replay is not None:
            if self._replay.stop == ("check", self._checks):
                self.budget_spent = True
        elif not self.budget_spent and time.perf_counter() >= self._stop_at:
            self.budget_spent = True
            self.stop_mark = ("check", self._checks)
        return self.budget_spent

    def _map(self, executor: Executor, tasks: list[Task]) -> list[FitResult | None]:
        """One batch of fits; the executor polls the clock between them (replay: the log says)."""
        self._batches += 1
        if not tasks:
            return []
        if self._replay is not None:
            out = executor.map(tasks, self._cancel_requested)
            if self._replay.stop == ("batch", self._batches):
                self.budget_spent = True
            return out

        def poll() -> bool:
            if self._cancel_requested():
                return True
            if not self.budget_spent and time.perf_counter() >= self._stop_at:
                self.budget_spent = True
                self.stop_mark = ("batch", self._batches)
            return self.budget_spent

        return executor.map(tasks, poll)

    def evaluate(self, executor: Executor, kernels: Sequence[Kernel], starts: Sequence[Start | None],
                 origins: Sequence[str]) -> list[FitResult | None]:
        """Fit a generation's kernels; each gets the seed (run seed, generation, index).

        Returns one fit per kernel (None where the run stopped first). With the cache, a
        kernel fitted before (or twice in this batch) gets that fit; with screening, the
        kernels not promoted get a fit with status ``screened_out`` and BIC +inf.
        """
        self.generation += 1
        g = self.generation
        n = len(kernels)
        fits: list[FitResult | None] = [None] * n
        first: dict[str, int] = {}  # cache key -> index fitted in this batch
        copies: list[tuple[int, int]] = []
        todo: list[int] = []
        keys = [fit_key(k, s, o) for k, s, o in zip(kernels, starts, origins, strict=True)]
        for i, key in enumerate(keys):
            if self._cache is not None:
                hit = self._cache.get(key)
                if hit is not None:
                    fits[i] = hit
                    self.n_cache_hits += 1
                    continue
                if key in first:
                    copies.append((i, first[key]))
                    self.n_cache_hits += 1
                    continue
                first[key] = i
            todo.append(i)
        self._workers = int(getattr(executor, "workers", 1) or 1)
        deadline = self.fit_deadline()
        screen_only: set[int] = set()
        folded: set[int] = set()  # full fits whose cost the stop time already holds
        if self._screen:
            new, screen_only, folded = self._screened(executor, g, todo, kernels, starts, origins, keys, deadline)
        else:
            tasks = [Task(kernels[i].tokens, (self.seed, g, i), starts[i], deadline=deadline) for i in todo]
            new = dict(zip(todo, self._map(executor, tasks), strict=True))
        recs: list[EvalRecord] = []
        for i in todo:
            f = new.get(i)
            if f is None:
                continue
            fits[i] = f
            if self._cache is not None:
                self._cache[keys[i]] = f
            if i not in screen_only:  # (screening fits are counted where they are made)
                self.n_evaluations += 1
                self.best = _better(self.best, f)
                self._note_candidate(keys[i], f, origins[i])
            recs.append(EvalRecord.from_fit(f, g, i, origins[i]))
        for i, j in copies:
            fits[i] = fits[j]
        self._update_stop([new.get(i) for i in todo if i not in screen_only and i not in folded])
        self.records.extend(recs)
        self._gen_recs = recs
        return fits

    def _note_candidate(self, key: str, fit: FitResult, origin: str) -> None:
        """Keep a full fit among the model choice's candidates: the best of its cache key (the
        canonical form; a spectral seed's with its periods)."""
        if fit.ok and math.isfinite(fit.bic):
            self._best_by_canonical[key] = _better(self._best_by_canonical.get(key), fit)  # type: ignore[assignment]
            if origin in SEEDED:
                self._spectral_keys.add(key)

    def _screened(self, executor: Executor, g: int, todo: list[int], kernels: Sequence[Kernel],
                  starts: Sequence[Start | None], origins: Sequence[str], keys: Sequence[str],
                  deadline: float | None) -> tuple[dict[int, FitResult | None], set[int], set[int]]:
        """Screen ``todo`` on the subset, promote the best to full fits (see the module docstring).

        The spectral seeds (long series) are not screened: they are fitted on all the data from
        their given values first (stage ``seed``), then the other kernels are screened, and the
        best of them promoted. Screened together, a first generation of 31 kernels on a
        5,000-point daily series spent 42 of 60 s screening and the seeds' promotions got one
        evaluation each; and a seed's values fitted on the screening subset (the recent block
        and a few points spread over the years) start its full fit worse than its own: on daily
        Chicago ridership ``PER(week) + PER(year) + SE`` reached BIC 1,970 (test RMSE 2.98) from
        them in 30 evaluations, 1,847 (2.31) from its own.

        The seeds' fits then count among the choice's candidates, and their cost in the stop time
        (the choice's checks of them), before the others are screened: otherwise, on a short budget,
        the screening ran on to the search's first deadline, kept for a choice with nothing to
        check, and the choice of the seeds came after it (a 15 s search on 20,000 points took 20 s).

        Returns the fit of each kernel, the indices that were only fitted on the subset, and those
        whose cost the stop time already holds.
        """
        seeds = [i for i in todo if origins[i] in SEEDED]
        rest = [i for i in todo if origins[i] not in SEEDED]
        out: dict[int, FitResult | None] = {}
        up: list[int] = []
        if seeds:
            dl = self._promote_deadline(len(seeds), deadline)
            tasks = [Task(kernels[i].tokens, (self.seed, g, i, 2), starts[i], stage="seed", deadline=dl) for i in seeds]
            for i, f in zip(seeds, self._map(executor, tasks), strict=True):
                if f is not None:
                    out[i] = f
                    up.append(i)
                    self._note_candidate(keys[i], f, origins[i])
            self._update_stop([out[i] for i in up])
            fresh = self.fit_deadline()
            deadline = fresh if deadline is None or fresh is None else min(deadline, fresh)
        screened: dict[int, FitResult | None] = {}
        if rest and not (seeds and self.stopped):
            tasks = [Task(kernels[i].tokens, (self.seed, g, i, 1), starts[i], stage="screen", deadline=deadline)
                     for i in rest]
            screened = dict(zip(rest, self._map(executor, tasks), strict=True))
        self.n_screen_fits += sum(1 for f in screened.values() if f is not None)
        ranked = sorted((i for i in screened if screened[i] is not None and screened[i].ok),  # type: ignore[union-attr]
                        key=lambda i: screened[i].bic)  # type: ignore[union-attr]
        # The seeds count among the kernels a share of which is fitted on all the data.
        n_up = max(1, math.ceil(self._promote * (len(ranked) + len(up)))) if ranked else 0
        promote = ranked[:max(0, n_up - len(up))]
        for i, sf in screened.items():
            if sf is not None and not sf.ok:
                out[i] = sf  # failed on the subset: a numerical failure, recorded as such
        if promote and not self.stopped:
            dl = self._promote_deadline(len(promote), deadline)
            tasks = [Task(kernels[i].tokens, (self.seed, g, i, 2), screened[i].start(),  # type: ignore[union-attr]
                          stage="promote", deadline=dl) for i in promote]
            for i, f in zip(promote, self._map(executor, tasks), strict=True):
                if f is not None:
                    out[i] = f
        up += promote
        for r, i in enumerate(ranked, start=1):
            if i in out or i in up:
                continue
            sf = screened[i]
            assert sf is not None
            out[i] = replace(sf, status=FitStatus.SCREENED_OUT, bic=PENALTY, lml=math.nan, test_rmse=None, n=sf.n,
                             reason=f"screened out: BIC {sf.bic:.2f} on {sf.n} points, rank {r} of {len(ranked)}")
        promoted_ok = any(out[i].ok for i in up if out.get(i) is not None)  # type: ignore[union-attr]
        if self.stopped and self.best is None and not promoted_ok and not self.cancelled:
            # Out of time (before the promotions or during them) with no full fit in the whole
            # run: still give it one, one evaluation at the screened values of each candidate in
            # turn until one can be evaluated. (Its own seed key: a replay must not take it for
            # the promotion the clock stopped.)
            last = [(i, starts[i], "seed") for i in seeds] + [(i, screened[i].start(), "promote")  # type: ignore[union-attr]
                                                                for i in ranked]
            for i, start, stage in last:
                f = executor.map([Task(kernels[i].tokens, (self.seed, g, i, 3), start, stage=stage,
                                       deadline=time.time())])[0]
                out[i] = f
                if i not in up:
                    up.append(i)
                if f is not None and f.ok:
                    break
        return out, set(out) - set(up), {i for i in seeds if i in out}

    def end_generation(self, restarted: bool = False) -> None:
        recs = self._gen_recs
        finite = [r.bic for r in recs if math.isfinite(r.bic)]
        stats = GenerationStats(
            generation=self.generation,
            best_bic=min(finite) if finite else math.inf,
            mean_bic=_mean(finite),
            best_so_far_bic=self.best.bic if self.best is not None else math.inf,
            n_evaluated=len(recs),
            n_failed=sum(1 for r in recs if r.status not in (FitStatus.OK, FitStatus.SCREENED_OUT)),
            restarted=restarted,
            elapsed=time.perf_counter() - self.t0,
        )
        if restarted:
            self.restarts += 1
        self.history.append(stats)
        if self.progress is not None:
            self.progress(Progress(self.algorithm, self.generation, self.total, stats, self.best,
                                   self.n_evaluations, self.restarts, stats.elapsed, tuple(recs),
                                   self.time_budget, self.n_screen_fits))

    def result(self, settings: dict | None = None) -> SearchResult:
        return SearchResult(algorithm=self.algorithm, best=self.best,
                            status=RunStatus.CANCELLED if self.cancelled else RunStatus.FINISHED,
                            history=tuple(self.history), records=tuple(self.records),
                            n_evaluations=self.n_evaluations, restarts=self.restarts,
                            elapsed=time.perf_counter() - self.t0, settings=settings or {}, best_bic=self.best,
                            budget_spent=self.budget_spent, n_screen_fits=self.n_screen_fits,
                            n_cache_hits=self.n_cache_hits, candidates=self.top(self._top_k),
                            eval_seconds=float(np.median(self._eval_costs)) if self._eval_costs else math.nan,
                            run_log=RunLog({}, self.stop_mark))

    def top(self, k: int) -> tuple[FitResult, ...]:
        """The ``k`` lowest-BIC distinct (canonical) kernels fitted so far, lowest first.

        The spectral seeds' fits (:mod:`~evocov_core.search.spectral_seeds`, long series) are
        among them whatever their BIC: BIC ranks by short-range fit, which the forecast days ahead
        does not need, and the model choice judges them by the forecast of the tail instead. They
        take at most ``k`` less :data:`MIN_SEARCHED` places (less ``k // 2`` when ``k`` is
        smaller than twice that; the lowest-BIC seeds first), so that the kernels the search
        found itself are offered too; places the search cannot fill go to more seeds."""
        fits = self._best_by_canonical.items()
        seeds = sorted((f for key, f in fits if key in self._spectral_keys), key=lambda f: f.bic)
        others = sorted((f for key, f in fits if key not in self._spectral_keys), key=lambda f: f.bic)
        n_seeds = seed_places(k, len(seeds), len(others))
        return tuple(sorted(seeds[:n_seeds] + others[:k - n_seeds], key=lambda f: f.bic))


def seed_places(k: int, n_seeds: int, n_others: int) -> int:
    """How many of ``k`` model-choice places the spectral seeds take (:meth:`Tracker.top`): at most
    ``k`` less :data:`MIN_SEARCHED` (less ``k // 2`` for a small ``k``), more where the search's own
    ``n_others`` kernels cannot fill the rest."""
    return min(n_seeds, max(k - min(MIN_SEARCHED, k // 2), k - n_others))


def start_of(fit: FitResult | None) -> Start | None:
    """Continue from a fit's values (None when it failed)."""
    if fit is None or not fit.ok:
        return None
    return fit.start()


def sub_rng(seed: int, *keys: int) -> np.random.Generator:
    """A generator for one purpose of a run, independent of every other."""
    return np.random.default_rng(np.random.SeedSequence([seed, *keys]))

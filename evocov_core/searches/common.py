"""What every search shares: evaluation records, progress reports, results, the run loop helpers.

A search is a plain function ``run(data, config, executor, seed, progress, should_stop)``.
After every generation it calls ``progress(Progress)``; it polls ``should_stop()``
between kernel fits and returns the best result so far when asked to stop. Its bookkeeping
(best so far, records, the time budget, the fit cache, screening) is the
:class:`~evocov_core.searches.tracker.Tracker`'s.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum

import numpy as np

from evocov_core.fitting.optimize import FitResult, FitStatus, Start, finite_or
from evocov_core.fitting.scoring import PENALTY
from evocov_core.fitting.subset import DEFAULT_MAX_POINTS, plan_subset
from evocov_core.language.parse import parse_expression
from evocov_core.searches.replay import RunLog
from evocov_core.searches.validate import Calibration, OriginScores

__all__ = [
    "EVAL_COLUMNS",
    "EvalRecord",
    "GenerationStats",
    "Progress",
    "ProgressCallback",
    "RunStatus",
    "SearchResult",
    "StopCheck",
    "start_of",
    "sub_rng",
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
    """One kernel fit as a table row (JSON-friendly, enough to reopen the kernel); ``theta`` are log slot
    values (model units) ordered as the expression's slots."""

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
            "test_rmse": sql_number(self.test_rmse), "status": self.status, "reason": self.reason,
            "origin": self.origin, "n_evals": self.n_evals, "seconds": self.seconds,
            "theta_json": json.dumps([sql_number(t) for t in self.theta]), "log_noise": sql_number(self.log_noise),
            "jitter": sql_number(self.jitter)}

    @classmethod
    def from_row(cls, row: Mapping[str, object]) -> EvalRecord:
        """A record from a row of the ``evaluations`` table (a dict, or a pandas row with NaN for NULL).

        NULL numbers come back as NaN, except a BIC (+inf, a failed fit's penalty), a test RMSE (None),
        a jitter (0) and the counters (0). Raises ValueError for an unknown status."""
        return cls(**_row_fields(dict(row)))

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


def _row_fields(r: dict[str, object]) -> dict[str, object]:
    """:class:`EvalRecord`'s fields from a row of the ``evaluations`` table (:meth:`EvalRecord.from_row`)."""
    rm = finite_or(r.get("test_rmse"))
    return dict(
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
        :func:`~evocov_core.searches.select.choose_model`.
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
        (:mod:`evocov_core.searches.replay`): what ``search --replay`` follows.
    eval_seconds : float
        Median seconds per metric evaluation of the run's full-data fits (NaN without a
        time budget or a fit): what the model choice's checks are timed by.
    calibration : Calibration
        How much wider than the GP says the returned kernel's forecast intervals are
        (:func:`~evocov_core.searches.select.calibrate`).
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


def start_of(fit: FitResult | None) -> Start | None:
    """Continue from a fit's values (None when it failed)."""
    if fit is None or not fit.ok:
        return None
    return fit.start()


def sub_rng(seed: int, *keys: int) -> np.random.Generator:
    """A generator for one purpose of a run, independent of every other."""
    return np.random.default_rng(np.random.SeedSequence([seed, *keys]))

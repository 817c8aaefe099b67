"""Background jobs for the dashboard: a thread per run, progress snapshots, cancel, a queue.

The dashboard never runs a search in its own script thread. It submits a
:class:`JobSpec` to the process-wide :class:`JobManager`, which runs it in a background
thread over the core package (the thread never touches Streamlit), writes every
generation to the :class:`~evocov_core.runs.store.RunStore`, and keeps a live
:class:`JobSnapshot` that pages poll. Kernel fits run in worker processes (see
:mod:`evocov_core.fitting.fits`), each run with its own seeds, so concurrent runs in one
server do not change each other's results.

At most ``max_concurrent`` jobs run at once (default: one per core); the rest wait in
FIFO order with status :attr:`~evocov_core.searches.common.RunStatus.QUEUED` and a queue
position.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum

from evocov_core.data.dataset import Dataset
from evocov_core.fitting.fits import make_executor
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.model import FittedModel
from evocov_core.fitting.optimize import FitResult, finite_or_none
from evocov_core.forecast.covariates import CovariateEffect, searched_on
from evocov_core.forecast.stage import search_and_forecast
from evocov_core.runs.counts import FitCounts, fit_counts
from evocov_core.runs.kernel_file import kernel_file_dict, search_kernel_file
from evocov_core.runs.store import RunStore
from evocov_core.searches import SearchConfig, explore_mutations, search_executor
from evocov_core.searches.common import EvalRecord, GenerationStats, Progress, RunStatus

__all__ = ["Job", "JobKind", "JobManager", "JobSnapshot", "JobSpec"]


class JobKind(StrEnum):
    """What a job runs. A ``StrEnum``: members equal their values, so the run store holds the same
    strings as before the enum, and a kind given as its string becomes the member."""

    #: A kernel search, any algorithm of the job's ``config``.
    SEARCH = "search"
    #: The mutations of a fitted base kernel (:func:`~evocov_core.searches.explore_mutations`).
    EXPLORE = "explore"


@dataclass(frozen=True)
class JobSpec:
    """What to run.

    Attributes
    ----------
    kind : JobKind
        ``search`` (any algorithm of ``config``) or ``explore`` (mutations of ``base``); the string
        is converted to the member on construction (an unknown one raises ``ValueError``).
    dataset : Dataset
        A search's data may have covariates with known futures (:attr:`Dataset.covariates`): the job then
        searches on what their effect leaves, along time, as the command line does
        (:func:`~evocov_core.forecast.covariates.searched_on`), and every kernel file it stores records the
        effect. An exploration's data have none (explore the data along time).
    config : SearchConfig
    seed : int
    workers : int or None
        Worker processes (None: every core; 1: serial, in the job thread).
    label : str
    base : FitResult or None
        Kernel to explore (``explore`` only).
    n_mutations : int
    """

    kind: JobKind
    dataset: Dataset
    config: SearchConfig
    seed: int = 0
    workers: int | None = None
    label: str = ""
    base: FitResult | None = None
    n_mutations: int = 200

    def __post_init__(self) -> None:
        if type(self.kind) is not JobKind:
            try:
                object.__setattr__(self, "kind", JobKind(self.kind))
            except ValueError:
                raise ValueError(f"unknown job kind {self.kind!r}") from None


@dataclass(frozen=True)
class JobSnapshot:
    """A consistent copy of a job's state for drawing."""

    id: str
    kind: JobKind
    status: RunStatus
    label: str
    algorithm: str
    generation: int
    total_generations: int
    elapsed: float
    n_evaluations: int
    evals_per_second: float
    restarts: int
    best: FitResult | None
    history: tuple[GenerationStats, ...]
    n_records: int
    queue_position: int
    error: str
    extra: dict = field(default_factory=dict)
    n_screen_fits: int = 0

    def __post_init__(self) -> None:
        if type(self.kind) is not JobKind:  # a kind given as its string becomes the member
            object.__setattr__(self, "kind", JobKind(self.kind))

    @property
    def done(self) -> bool:
        return not self.status.active


class Job:
    """One run's live state (thread-safe)."""

    def __init__(self, spec: JobSpec, job_id: str) -> None:
        self.id = job_id
        self.spec = spec
        self.status = RunStatus.QUEUED
        self.lock = threading.Lock()
        self.cancel_event = threading.Event()
        self.history: list[GenerationStats] = []
        self.records: list[EvalRecord] = []
        self.best: FitResult | None = None
        self.progress: Progress | None = None
        self.error = ""
        self.extra: dict = {}
        #: What the kernels are fitted on: the spec's data, or for a search with covariates those data along
        #: time with the covariates' effect (:attr:`covariates`) taken out (set when the job starts).
        self.data: Dataset = spec.dataset
        self.covariates: CovariateEffect | None = None
        self.created = time.time()
        self.started: float | None = None
        self.finished: float | None = None
        self.queue_position = 0
        self.done_event = threading.Event()

    def snapshot(self) -> JobSnapshot:
        with self.lock:
            p = self.progress
            elapsed = (self.finished or time.time()) - self.started if self.started else 0.0
            n_eval = p.n_evaluations if p else 0
            return JobSnapshot(
                id=self.id, kind=self.spec.kind, status=self.status, label=self.spec.label,
                algorithm=self.spec.config.algorithm if self.spec.kind is JobKind.SEARCH else "explore",
                generation=p.generation if p else 0, total_generations=p.total_generations if p else 0,
                elapsed=elapsed, n_evaluations=n_eval,
                evals_per_second=n_eval / elapsed if elapsed > 0 else 0.0,
                restarts=p.restarts if p else 0, best=self.best, history=tuple(self.history),
                n_records=len(self.records), queue_position=self.queue_position, error=self.error,
                extra=dict(self.extra), n_screen_fits=p.n_screen_fits if p else 0,
            )

    def records_copy(self) -> list[EvalRecord]:
        with self.lock:
            return list(self.records)

    def wait(self, timeout: float | None = None) -> bool:
        return self.done_event.wait(timeout)


def _best_doc(fit: FitResult | None, ds: Dataset, extra: dict | None = None,
              covariates: CovariateEffect | None = None) -> dict | None:
    """The kernel file of a kernel met during a run (the best so far, a base, a model average's member);
    ``ds`` the data it was fitted on, ``covariates`` the effect taken out of them."""
    if fit is None or not fit.ok:
        return None
    doc = kernel_file_dict(fit, ds.norm, dataset=ds.name, n_test=ds.n_test, n_train=ds.n_train,
                           test_fraction=ds.test_fraction, extra_scores=extra)
    if covariates is not None:
        doc["covariates"] = covariates.to_dict()
    return doc


class JobManager:
    """Runs :class:`JobSpec`\\ s in background threads, at most ``max_concurrent`` at once.

    Parameters
    ----------
    store : RunStore or None
        Where runs are recorded (None: memory only, for tests).
    max_concurrent : int or None
        Default: ``$EVOCOV_MAX_CONCURRENT`` or one per core.
    """

    def __init__(self, store: RunStore | None = None, max_concurrent: int | None = None) -> None:
        self.store = store
        env = os.environ.get("EVOCOV_MAX_CONCURRENT")
        self.max_concurrent = max_concurrent or (int(env) if env else (os.cpu_count() or 1))
        self._jobs: dict[str, Job] = {}
        self._queue: list[str] = []
        self._running: set[str] = set()
        self._lock = threading.Lock()
        self._closing = False
        if store is not None:
            store.recover()
        atexit.register(self._on_exit)

    def _on_exit(self) -> None:
        self._closing = True
        with self._lock:
            jobs = [self._jobs[j] for j in (*self._running, *self._queue)]
        for job in jobs:
            job.cancel_event.set()

    # --- public API ------------------------------------------------------------------
    def submit(self, spec: JobSpec) -> str:
        """Queue a job; returns its id (also the run id in the store)."""
        if not isinstance(spec.kind, JobKind):
            raise ValueError(f"unknown job kind {spec.kind!r}")
        if spec.kind is JobKind.EXPLORE and (spec.base is None or not spec.base.ok):
            raise ValueError("an exploration needs a fitted base kernel")
        if spec.kind is JobKind.EXPLORE and spec.dataset.covariates:
            raise ValueError("an exploration runs along time: give it the data with the covariates' effect taken "
                             "out (evocov_core.forecast.covariates.on_time)")
        job_id = uuid.uuid4().hex[:12]
        job = Job(spec, job_id)
        if self.store is not None:
            settings = spec.config.to_dict()
            extra = {}
            if spec.kind is JobKind.EXPLORE:
                settings["n_mutations"] = spec.n_mutations
                extra["base"] = _best_doc(spec.base, spec.dataset)
            self.store.create_run(job_id, kind=spec.kind,
                                  algorithm=spec.config.algorithm if spec.kind is JobKind.SEARCH else "explore",
                                  dataset=spec.dataset, settings=settings, seed=spec.seed, label=spec.label,
                                  extra=extra)
        with self._lock:
            self._jobs[job_id] = job
            self._queue.append(job_id)
            self._update_positions()
        self._dispatch()
        return job_id

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def cancel(self, job_id: str) -> bool:
        """Ask a job to stop; a queued job is dropped at once. Returns False if unknown."""
        job = self.get(job_id)
        if job is None:
            return False
        job.cancel_event.set()
        with self._lock:
            if job_id in self._queue:
                self._queue.remove(job_id)
                self._update_positions()
                queued = True
            else:
                queued = False
        if queued:
            self._finish(job, RunStatus.CANCELLED, None, 0.0, 0)
        return True

    def active(self) -> list[JobSnapshot]:
        with self._lock:
            jobs = [self._jobs[j] for j in (*self._running, *self._queue)]
        return [j.snapshot() for j in jobs]

    @property
    def running_count(self) -> int:
        with self._lock:
            return len(self._running)

    # --- internals -------------------------------------------------------------------
    def _update_positions(self) -> None:
        for pos, jid in enumerate(self._queue, start=1):
            self._jobs[jid].queue_position = pos

    def _dispatch(self) -> None:
        with self._lock:
            while self._queue and len(self._running) < self.max_concurrent:
                jid = self._queue.pop(0)
                self._running.add(jid)
                job = self._jobs[jid]
                job.queue_position = 0
                threading.Thread(target=self._run, args=(job,), name=f"evocov-job-{jid}", daemon=True).start()
            self._update_positions()

    def _on_progress(self, job: Job, p: Progress) -> None:
        with job.lock:
            job.progress = p
            job.history.append(p.stats)
            job.records.extend(p.evaluated)
            job.best = p.best
        if self.store is not None:
            doc = _best_doc(p.best, job.data, covariates=job.covariates) if job.spec.kind is JobKind.SEARCH else None
            self.store.add_generation(job.id, p.stats, p.evaluated, p.n_evaluations, doc)

    def _finish(self, job: Job, status: RunStatus, best: FitResult | None, elapsed: float | None, n_eval: int | None,
                error: str = "", counts: FitCounts | None = None, doc: dict | None = None) -> None:
        """Store how the run ended. ``doc``: the search's kernel file (:func:`search_kernel_file`); without it,
        the best kernel so far is stored (a failed or interrupted run)."""
        # The store first: a page that sees the job ended must find its best kernel stored
        # (it offers "Open in Results" only then, and does not poll an ended job again).
        try:
            if self.store is not None:
                run_extra = dict(job.extra)
                extra = {}
                if counts is not None and job.spec.kind is JobKind.SEARCH:
                    # One count everywhere (evocov_core.runs.counts): the kernel file and the run say the same.
                    extra.update(counts.to_scores())
                    run_extra["n_screen_fits"] = counts.screening_fits
                if doc is None and job.spec.kind is JobKind.SEARCH:
                    doc = _best_doc(best, job.data, extra or None, job.covariates)
                self.store.finish_run(job.id, status, best_doc=doc, elapsed=elapsed, n_evaluations=n_eval,
                                      error=error or None, extra=run_extra or None)
        finally:
            with job.lock:
                job.status = status
                job.error = error
                job.finished = time.time()
            job.done_event.set()

    def _run(self, job: Job) -> None:
        spec = job.spec
        with job.lock:
            job.status = RunStatus.RUNNING
            job.started = time.time()
        if self.store is not None:
            self.store.set_status(job.id, RunStatus.RUNNING)
        try:
            if job.cancel_event.is_set():
                # Stopped before it started: by the user, or by a server shutting down.
                self._finish(job, RunStatus.INTERRUPTED if self._closing else RunStatus.CANCELLED, None, 0.0, 0)
                return
            if spec.kind is JobKind.SEARCH:  # with covariates: on what they leave, along time
                on, effect = searched_on(spec.dataset)
                with job.lock:
                    job.data, job.covariates = on, effect
            ds = job.data
            data = FitData.from_dataset(ds, split_fraction=spec.config.metric_split,
                                        max_points=spec.config.fit_points)
            stop: Callable[[], bool] = job.cancel_event.is_set
            make = search_executor if spec.kind is JobKind.SEARCH else (
                lambda d, c, workers: make_executor(d, c.optim, workers=workers))
            forecast = None  # a search's result with its forecast (a mutation explorer's job makes none)
            with make(data, spec.config, workers=spec.workers) as ex:
                if spec.kind is JobKind.SEARCH:
                    forecast = search_and_forecast(data, spec.config, seed=spec.seed, executor=ex,
                                                   progress=lambda p: self._on_progress(job, p), should_stop=stop,
                                                   dataset=ds)
                    res = forecast.search
                    if res.selection or res.budget_spent:
                        with job.lock:
                            job.extra = _search_extra(res, ds, job.covariates)
                else:
                    assert spec.base is not None
                    base = spec.base
                    if base.test_rmse is None and spec.dataset.n_test:
                        # Score the base on these data with its own values.
                        rm = FittedModel.from_fit(base, spec.dataset.norm, spec.dataset.n_train).test_rmse(spec.dataset)
                        base = replace(base, test_rmse=rm)
                    ex_res = explore_mutations(base, data, spec.config, ex, n_mutations=spec.n_mutations,
                                               seed=spec.seed, progress=lambda p: self._on_progress(job, p),
                                               should_stop=stop)
                    res = ex_res.search
                    with job.lock:
                        job.extra = {"better_fitted": finite_or_none(ex_res.better_fitted),
                                     "simpler": finite_or_none(ex_res.simpler), "both": finite_or_none(ex_res.both),
                                     "base_q": base.q,
                                     "base_test_rmse": base.test_rmse, "base_bic": finite_or_none(base.bic)}
            with job.lock:
                job.best = res.best if spec.kind is JobKind.SEARCH else job.best
            status = RunStatus.INTERRUPTED if (res.status == RunStatus.CANCELLED and self._closing) else res.status
            doc = None
            if forecast is not None and res.best is not None and res.best.ok:
                doc = search_kernel_file(forecast, ds, seed=spec.seed, config=spec.config)
                if job.covariates is not None:
                    doc["covariates"] = job.covariates.to_dict()
            self._finish(job, status, res.best, res.elapsed, res.n_evaluations, counts=fit_counts(res), doc=doc)
        except Exception as exc:  # a job must never take the server down
            p = job.progress
            elapsed = p.elapsed if p else None
            n_eval = p.n_evaluations if p else None
            counts = fit_counts(p) if p else None
            if self._closing or sys.is_finalizing():
                # The server is stopping under the run: it was interrupted, not broken.
                self._finish(job, RunStatus.INTERRUPTED, job.best, elapsed, n_eval,
                             error="the server stopped during the run", counts=counts)
            else:
                tb = traceback.format_exc(limit=3)
                self._finish(job, RunStatus.FAILED, job.best, elapsed, n_eval,
                             error=f"{type(exc).__name__}: {exc}\n{tb}", counts=counts)
        finally:
            with self._lock:
                self._running.discard(job.id)
            self._dispatch()


def _search_extra(res, ds: Dataset, covariates: CovariateEffect | None = None) -> dict:
    """What the Results page shows of a budgeted search: the model choice and the model average."""
    return {
        "budget_spent": bool(res.budget_spent),
        "n_screen_fits": int(res.n_screen_fits),
        "n_cache_hits": int(res.n_cache_hits),
        "selection": [{k: (finite_or_none(v) if isinstance(v, float) else v) for k, v in row.items()}
                      for row in res.selection],
        "lowest_bic": _best_doc(res.best_bic, ds, covariates=covariates),
        "ensemble": [{"weight": float(w), "kernel": _best_doc(f, ds, covariates=covariates)} for f, w in res.ensemble],
    }



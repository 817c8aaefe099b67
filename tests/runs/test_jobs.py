"""Background jobs (evocov_core.runs.jobs): running a search or an exploration, the FIFO queue, the
concurrency cap, cancelling (queued and running), failures, shutdown, and what reaches the store.

Queue and cap tests replace the search with a stand-in that blocks until the test releases it, so
the order of events is under the test's control; the others run real, tiny, serial searches.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from evocov_core.data import Dataset
from evocov_core.fitting.fits import SerialExecutor
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import OptimConfig, fit_kernel
from evocov_core.forecast.stage import ForecastResult
from evocov_core.language.library import squared_exponential
from evocov_core.runs import jobs as jobs_module
from evocov_core.runs.jobs import JobKind, JobManager, JobSpec
from evocov_core.runs.store import RunStore
from evocov_core.searches import SearchResult, preset, run_search

#: Safety net for every wait (never an assertion about speed).
TIMEOUT = 120.0


@pytest.fixture(scope="module")
def ds() -> Dataset:
    rng = np.random.default_rng(5)
    x = np.linspace(0.0, 3.0, 30)
    y = 1.0 + 0.5 * x + np.sin(2 * np.pi * x) + 0.1 * rng.standard_normal(x.size)
    return Dataset.from_arrays(x, y, name="toy", test_fraction=0.2)


def tiny(**kw):
    base = dict(population=4, generations=2, mu=2, d_min=2, d_max=4, psd_w=4, n_restarts=1, max_evals=10,
                n_screen=2, rho_max=20)
    base.update(kw)
    return preset("quick-fixed", "evocov", **base)


def wait_until(cond: Callable[[], bool], what: str) -> None:
    end = time.monotonic() + TIMEOUT
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


class BlockingSearch:
    """Stands in for ``search_and_forecast``: the call for seed s blocks until ``release(s)`` (or a stop request).

    Records the order of calls and the largest number of calls in progress at once.
    """

    def __init__(self, fail: frozenset[int] = frozenset()) -> None:
        self.fail = fail
        self.lock = threading.Lock()
        self.entered: dict[int, threading.Event] = {}
        self.released: dict[int, threading.Event] = {}
        self.calls: list[int] = []
        self.in_progress = 0
        self.max_in_progress = 0

    def _event(self, table: dict[int, threading.Event], seed: int) -> threading.Event:
        with self.lock:
            return table.setdefault(seed, threading.Event())

    def release(self, seed: int) -> None:
        self._event(self.released, seed).set()

    def release_all(self) -> None:
        for s in range(1000):
            self.release(s)

    def wait_entered(self, seed: int) -> None:
        assert self._event(self.entered, seed).wait(TIMEOUT), f"search {seed} never started"

    def __call__(self, data, config, *, seed, executor, progress=None, should_stop=None,
                 dataset=None) -> ForecastResult:
        with self.lock:
            self.calls.append(seed)
            self.in_progress += 1
            self.max_in_progress = max(self.max_in_progress, self.in_progress)
        try:
            self._event(self.entered, seed).set()
            if seed in self.fail:
                raise RuntimeError(f"boom {seed}")
            status = "finished"
            end = time.monotonic() + TIMEOUT
            while not self._event(self.released, seed).wait(0.01):
                if should_stop is not None and should_stop():
                    status = "cancelled"
                    break
                if time.monotonic() > end:
                    raise AssertionError("the test never released this search")
            return ForecastResult(SearchResult(config.algorithm, None, status, (), (), 0, 0, 0.0))
        finally:
            with self.lock:
                self.in_progress -= 1


@pytest.fixture
def blocking(monkeypatch):
    fake = BlockingSearch()
    monkeypatch.setattr(jobs_module, "search_and_forecast", fake)
    yield fake
    fake.release_all()  # never leave a job thread waiting


def _spec(ds: Dataset, seed: int, **kw) -> JobSpec:
    return JobSpec("search", ds, kw.pop("config", tiny()), seed=seed, workers=1, label=f"job {seed}", **kw)


# --- validation and configuration ------------------------------------------------------------------


def test_submit_refuses_bad_specs(ds, tmp_path):
    store = RunStore(tmp_path)
    jm = JobManager(store, max_concurrent=1)
    with pytest.raises(ValueError, match="unknown job kind 'train'"):
        jm.submit(JobSpec("train", ds, tiny()))
    with pytest.raises(ValueError, match="needs a fitted base kernel"):
        jm.submit(JobSpec("explore", ds, tiny()))
    failed = fit_kernel(squared_exponential(), FitData.from_dataset(ds), OptimConfig(n_restarts=1, max_evals=5),
                        np.random.default_rng(0))
    with pytest.raises(ValueError, match="needs a fitted base kernel"):
        jm.submit(JobSpec("explore", ds, tiny(), base=replace(failed, status="cholesky_failed")))
    assert store.list_runs().empty  # nothing recorded for a refused job
    assert jm.get("nope") is None
    assert jm.cancel("nope") is False


def test_job_kind_is_an_enum_stored_as_its_string(ds, tmp_path):
    """A kind given as its string becomes the member; the store keeps the plain string it kept before."""
    spec = JobSpec("search", ds, tiny())
    assert spec.kind is JobKind.SEARCH and spec.kind == "search"
    assert JobSpec(JobKind.EXPLORE, ds, tiny()).kind is JobKind.EXPLORE
    assert [k.value for k in JobKind] == ["search", "explore"]
    store = RunStore(tmp_path)
    jm = JobManager(store, max_concurrent=1)
    jid = jm.submit(_spec(ds, 1))
    assert jm.get(jid).wait(TIMEOUT), "the job did not finish"
    stored = store.list_runs().set_index("id").loc[jid, "kind"]
    assert type(stored) is str and stored == "search"
    assert store.get_run(jid).kind == "search"


def test_max_concurrent_default_and_environment(monkeypatch):
    monkeypatch.delenv("EVOCOV_MAX_CONCURRENT", raising=False)
    assert JobManager().max_concurrent == (os.cpu_count() or 1)
    monkeypatch.setenv("EVOCOV_MAX_CONCURRENT", "3")
    assert JobManager().max_concurrent == 3
    assert JobManager(max_concurrent=1).max_concurrent == 1


def test_a_new_manager_recovers_stale_runs(ds, tmp_path):
    """A run left 'running' by this process but unknown to the new manager is marked interrupted."""
    store = RunStore(tmp_path)
    store.create_run("old", kind="search", algorithm="evocov", dataset=ds, settings={}, seed=0)
    store.set_status("old", "running")
    JobManager(store, max_concurrent=1)
    assert store.get_run("old").status == "interrupted"


# --- real searches ----------------------------------------------------------------------------------


def test_search_job_runs_to_the_end_and_is_stored(ds, tmp_path):
    store = RunStore(tmp_path)
    cfg = tiny()
    jm = JobManager(store, max_concurrent=1)
    jid = jm.submit(_spec(ds, 3, config=cfg))
    job = jm.get(jid)
    assert job.wait(TIMEOUT), "the job did not finish"
    snap = job.snapshot()
    assert snap.status == "finished" and snap.done and snap.error == ""
    assert (snap.kind, snap.algorithm, snap.label) == ("search", "evocov", "job 3")
    assert snap.generation == snap.total_generations == cfg.generations
    assert snap.n_evaluations == snap.n_records == cfg.population * cfg.generations
    assert len(snap.history) == cfg.generations
    assert snap.best is not None and snap.best.ok
    assert snap.elapsed > 0 and snap.evals_per_second == pytest.approx(snap.n_evaluations / snap.elapsed)
    wait_until(lambda: jm.running_count == 0 and jm.active() == [], "the slot to be freed")
    run = store.get_run(jid)
    assert run.status == "finished"
    assert run.settings == cfg.to_dict() and run.seed == 3 and run.label == "job 3"
    assert run.n_evaluations == snap.n_evaluations and run.generations_done == cfg.generations
    assert list(store.history(jid).generation) == list(range(1, cfg.generations + 1))
    assert len(store.evaluations(jid)) == snap.n_records
    assert run.best.expression == snap.best.kernel.prefix
    assert run.best.bic == pytest.approx(snap.best.bic)
    # Every stored evaluation belongs to the run and the best BIC is the smallest stored one.
    ev = store.evaluations(jid)
    assert run.best.bic == pytest.approx(ev.bic.min())


def test_concurrent_jobs_give_the_result_of_a_direct_run(ds):
    """Two runs at once (memory-only manager), same seed: the same kernels and scores as run_search alone."""
    cfg = tiny(generations=2)
    with SerialExecutor(FitData.from_dataset(ds, split_fraction=cfg.metric_split), cfg.optim) as ex:
        direct = run_search(FitData.from_dataset(ds, split_fraction=cfg.metric_split), cfg, seed=9, executor=ex)
    jm = JobManager(None, max_concurrent=2)
    jids = [jm.submit(_spec(ds, 9, config=cfg)) for _ in range(2)]
    for jid in jids:
        assert jm.get(jid).wait(TIMEOUT)
    want = [(r.generation, r.index, r.expression, r.bic) for r in direct.records]
    for jid in jids:
        job = jm.get(jid)
        assert job.snapshot().status == "finished"
        assert [(r.generation, r.index, r.expression, r.bic) for r in job.records_copy()] == want
        assert job.snapshot().best.bic == direct.best.bic


def test_cancel_a_running_search(ds, tmp_path):
    store = RunStore(tmp_path)
    jm = JobManager(store, max_concurrent=1)
    jid = jm.submit(_spec(ds, 1, config=tiny(generations=10_000)))
    job = jm.get(jid)
    wait_until(lambda: job.snapshot().generation >= 1, "the first generation")
    assert store.get_run(jid).status == "running"
    assert jm.cancel(jid) is True
    assert job.wait(TIMEOUT), "the cancelled job did not stop"
    snap = job.snapshot()
    assert snap.status == "cancelled"
    assert 1 <= snap.generation < 10_000
    assert snap.best is not None and snap.best.ok  # the best so far is kept
    run = store.get_run(jid)
    assert run.status == "cancelled"
    assert run.best is not None
    assert len(store.history(jid)) == snap.generation


def test_explore_job(ds, tmp_path):
    data = FitData.from_dataset(ds)
    base = fit_kernel(squared_exponential(), data, OptimConfig(n_restarts=1, max_evals=20), np.random.default_rng(2))
    assert base.ok and base.test_rmse is not None
    store = RunStore(tmp_path)
    jm = JobManager(store, max_concurrent=1)
    jid = jm.submit(JobSpec("explore", ds, tiny(), seed=4, workers=1, base=base, n_mutations=3, label="mutants"))
    job = jm.get(jid)
    assert job.wait(TIMEOUT)
    snap = job.snapshot()
    assert snap.status == "finished", snap.error
    assert snap.kind == "explore" and snap.algorithm == "explore"
    assert snap.n_records == 3
    assert snap.extra["base_q"] == base.q == 3
    assert snap.extra["base_test_rmse"] == base.test_rmse
    assert {"better_fitted", "simpler", "both", "base_bic"} <= set(snap.extra)
    run = store.get_run(jid)
    assert (run.kind, run.algorithm, run.status) == ("explore", "explore", "finished")
    assert run.settings["n_mutations"] == 3
    assert run.base.expression == base.kernel.prefix  # kept from submit ...
    assert run.neighbours.base_q == 3  # ... merged with the result
    assert run.best is None  # an exploration has no best kernel of its own
    assert len(store.evaluations(jid)) == 3


# --- the queue, the cap and cancelling (stand-in search) ------------------------------------------------


def test_queue_is_fifo_with_positions_and_a_queued_job_cancels_at_once(ds, tmp_path, blocking):
    store = RunStore(tmp_path)
    jm = JobManager(store, max_concurrent=1)
    a, b, c = (jm.submit(_spec(ds, s)) for s in (1, 2, 3))
    blocking.wait_entered(1)
    snaps = {s.id: s for s in jm.active()}
    assert [s.id for s in jm.active()] == [a, b, c]
    assert (snaps[a].status, snaps[a].queue_position) == ("running", 0)
    assert (snaps[b].status, snaps[b].queue_position) == ("queued", 1)
    assert (snaps[c].status, snaps[c].queue_position) == ("queued", 2)
    assert jm.running_count == 1
    assert [store.get_run(j).status for j in (a, b, c)] == ["running", "queued", "queued"]

    assert jm.cancel(c) is True  # queued: dropped at once, never started
    job_c = jm.get(c)
    assert job_c.wait(0) and job_c.snapshot().status == "cancelled"
    assert job_c.started is None
    assert store.get_run(c).status == "cancelled"
    assert [s.id for s in jm.active()] == [a, b]

    blocking.release(1)
    blocking.wait_entered(2)
    assert jm.get(a).wait(TIMEOUT)
    assert jm.get(b).snapshot().queue_position == 0
    blocking.release(2)
    assert jm.get(b).wait(TIMEOUT)
    assert blocking.calls == [1, 2]  # FIFO, and the cancelled job never ran
    assert blocking.max_in_progress == 1
    assert [store.get_run(j).status for j in (a, b, c)] == ["finished", "finished", "cancelled"]


def test_concurrency_cap(ds, blocking):
    jm = JobManager(None, max_concurrent=2)
    ids = [jm.submit(_spec(ds, s)) for s in range(4)]
    blocking.wait_entered(0)
    blocking.wait_entered(1)
    assert jm.running_count == 2
    assert [jm.get(j).snapshot().queue_position for j in ids] == [0, 0, 1, 2]
    assert [jm.get(j).snapshot().status for j in ids] == ["running", "running", "queued", "queued"]
    blocking.release(1)
    blocking.wait_entered(2)  # a freed slot goes to the head of the queue
    wait_until(lambda: jm.get(ids[3]).snapshot().queue_position == 1, "the queue to move up")
    assert jm.running_count == 2
    for s in (0, 2, 3):
        blocking.release(s)
    for j in ids:
        assert jm.get(j).wait(TIMEOUT)
    assert sorted(blocking.calls[:2]) == [0, 1] and blocking.calls[2:] == [2, 3]
    assert blocking.max_in_progress == 2
    assert all(jm.get(j).snapshot().status == "finished" for j in ids)
    # done_event is set just before the slot is freed: wait for the slot, not for a time.
    wait_until(lambda: jm.running_count == 0, "the slots to be freed")


def test_cancel_a_running_job_stops_it(ds, tmp_path, blocking):
    store = RunStore(tmp_path)
    jm = JobManager(store, max_concurrent=1)
    a, b = jm.submit(_spec(ds, 1)), jm.submit(_spec(ds, 2))
    blocking.wait_entered(1)
    assert jm.cancel(a) is True
    assert jm.get(a).wait(TIMEOUT)
    assert jm.get(a).snapshot().status == "cancelled"
    assert store.get_run(a).status == "cancelled"
    blocking.wait_entered(2)  # the queue moves on
    blocking.release(2)
    assert jm.get(b).wait(TIMEOUT)
    assert store.get_run(b).status == "finished"


def test_a_failing_job_is_recorded_and_the_queue_goes_on(ds, tmp_path, monkeypatch):
    fake = BlockingSearch(fail=frozenset({1}))
    monkeypatch.setattr(jobs_module, "search_and_forecast", fake)
    store = RunStore(tmp_path)
    jm = JobManager(store, max_concurrent=1)
    try:
        a, b = jm.submit(_spec(ds, 1)), jm.submit(_spec(ds, 2))
        assert jm.get(a).wait(TIMEOUT)
        snap = jm.get(a).snapshot()
        assert snap.status == "failed"
        assert snap.error.startswith("RuntimeError: boom 1")
        run = store.get_run(a)
        assert run.status == "failed" and "RuntimeError: boom 1" in run.error
        fake.wait_entered(2)
        fake.release(2)
        assert jm.get(b).wait(TIMEOUT)
        assert jm.get(b).snapshot().status == "finished"
    finally:
        fake.release_all()


def test_shutdown_marks_running_jobs_interrupted(ds, tmp_path, blocking):
    """At interpreter exit the manager stops its jobs; a run stopped that way is 'interrupted'."""
    store = RunStore(tmp_path)
    jm = JobManager(store, max_concurrent=1)
    a, b = jm.submit(_spec(ds, 1)), jm.submit(_spec(ds, 2))
    blocking.wait_entered(1)
    jm._on_exit()  # what atexit calls
    assert jm.get(a).wait(TIMEOUT)
    assert jm.get(a).snapshot().status == "interrupted"
    assert store.get_run(a).status == "interrupted"
    # The queued job was asked to stop too: it ends without running the search.
    assert jm.get(b).wait(TIMEOUT)
    assert jm.get(b).snapshot().done
    assert blocking.calls == [1]


def test_shutdown_marks_queued_jobs_interrupted(ds, tmp_path, blocking):
    store = RunStore(tmp_path)
    jm = JobManager(store, max_concurrent=1)
    jm.submit(_spec(ds, 1))
    b = jm.submit(_spec(ds, 2))
    blocking.wait_entered(1)
    jm._on_exit()
    assert jm.get(b).wait(TIMEOUT)
    assert jm.get(b).snapshot().status == "interrupted"
    assert store.get_run(b).status == "interrupted"


def test_snapshot_of_a_queued_job(ds, blocking):
    jm = JobManager(None, max_concurrent=1)
    a = jm.submit(_spec(ds, 1))
    b = jm.submit(_spec(ds, 2))
    blocking.wait_entered(1)
    snap = jm.get(b).snapshot()
    assert snap.status == "queued" and not snap.done
    assert (snap.generation, snap.n_evaluations, snap.elapsed, snap.evals_per_second) == (0, 0, 0.0, 0.0)
    assert snap.best is None and snap.history == () and snap.error == ""
    blocking.release_all()  # let both end while the stand-in is still in place
    assert jm.get(a).wait(TIMEOUT) and jm.get(b).wait(TIMEOUT)


def test_the_best_kernel_is_stored_before_the_job_reads_ended(ds, tmp_path):
    """A page that sees the job ended looks its best kernel up in the store at once: it must be there."""
    store = RunStore(tmp_path)
    seen: list[tuple[str, bool]] = []
    finish = store.finish_run

    def finish_run(run_id, status, **kw):
        seen.append((jm.get(run_id).snapshot().status, jm.get(run_id).snapshot().done))
        return finish(run_id, status, **kw)

    store.finish_run = finish_run  # type: ignore[method-assign]
    jm = JobManager(store, max_concurrent=1)
    job = jm.get(jm.submit(_spec(ds, 4, config=tiny())))
    assert job.wait(TIMEOUT), "the job did not finish"
    assert seen == [("running", False)]  # still running while its result is written
    assert job.snapshot().done and store.get_run(job.id).best is not None

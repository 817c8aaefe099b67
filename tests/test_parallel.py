"""Executors (evocov_core.parallel): per-task seeds make serial, process-pool and Dask runs give
identical fits in task order; stages; stopping; errors raised in workers; make_executor."""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future

import numpy as np
import pytest

from evocov_core.data import Dataset
from evocov_core.library import compose
from evocov_core.metrics import FitData
from evocov_core.optimize import OptimConfig, Start, fit_kernel
from evocov_core.parallel import ProcessExecutor, SerialExecutor, Task, _collect, make_executor, run_task

CONFIG = OptimConfig(n_restarts=2, max_evals=20, n_screen=4)
REFINE = OptimConfig(n_restarts=1, max_evals=10, n_screen=0)
N_WINDOW = 16


@pytest.fixture(scope="module")
def data() -> FitData:
    rng = np.random.default_rng(21)
    x = np.linspace(0.0, 4.0, 32)
    y = 0.3 * x + np.sin(2 * np.pi * x) + 0.1 * rng.standard_normal(x.size)
    return FitData.from_dataset(Dataset.from_arrays(x, y, test_fraction=0.2))


@pytest.fixture(scope="module")
def stages(data):
    window = np.zeros(data.n, dtype=bool)
    window[-N_WINDOW:] = True
    return {"window": (data.subset(window), CONFIG), "refine": (data, REFINE)}


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    kernels = [compose("SE"), compose("PER"), compose("LIN"), compose(["+", "SE", "PER"]), compose("RQ"),
               compose(["*", "SE", "LIN"])]
    out = [Task(k.tokens, (7, i)) for i, k in enumerate(kernels)]
    out.append(Task(kernels[0].tokens, (7, 100), stage="window"))
    out.append(Task(kernels[1].tokens, (7, 101), start=Start((0.0, 0.0, 1.5), -2.0), stage="refine"))
    return out


@pytest.fixture(scope="module")
def serial(data, stages, tasks):
    with SerialExecutor(data, CONFIG, stages) as ex:
        return ex.map(tasks)


@pytest.fixture(scope="module")
def pool(data, stages):
    with ProcessExecutor(data, CONFIG, workers=2, stages=stages) as ex:
        yield ex


def key(fit) -> str:
    """Everything a fit computes but its wall time (repr: NaN compares equal to NaN)."""
    return repr((fit.kernel.prefix, fit.theta, fit.log_noise, fit.jitter, fit.status, fit.reason, fit.metric,
                 fit.metric_value, fit.lml, fit.bic, fit.q, fit.n, fit.n_evals, fit.test_rmse))


# --- run_task and the serial executor ------------------------------------------------------------------


def test_run_task_is_fit_kernel_with_the_task_seed(data, tasks):
    t = tasks[3]
    a = run_task(data, CONFIG, t)
    b = run_task(data, CONFIG, t)
    ref = fit_kernel(compose(["+", "SE", "PER"]), data, CONFIG, np.random.default_rng(np.random.SeedSequence([7, 3])))
    assert key(a) == key(b) == key(ref)
    assert a.ok


def test_serial_results_in_task_order(data, stages, tasks, serial):
    seen: list[int] = []
    with SerialExecutor(data, CONFIG, stages) as ex:
        assert ex.workers == 1
        out = ex.map(tasks, on_result=lambda i, r: seen.append(i))
    assert seen == list(range(len(tasks)))
    assert [r.kernel.tokens for r in out] == [t.tokens for t in tasks]
    assert [key(r) for r in out] == [key(r) for r in serial]


def test_stages_pick_the_data_and_settings(data, stages, tasks, serial):
    with SerialExecutor(data, CONFIG, stages) as ex:
        assert ex.stages == frozenset({"window", "refine"})
    assert serial[0].n == data.n
    assert serial[6].n == N_WINDOW  # fitted on the window only
    assert key(serial[6]) == key(run_task(stages["window"][0], CONFIG, tasks[6]))
    assert key(serial[7]) == key(run_task(data, REFINE, tasks[7]))
    assert key(serial[7]) != key(run_task(data, CONFIG, tasks[7]))  # not the main settings
    assert key(serial[6]) != key(run_task(data, CONFIG, tasks[6]))  # not the main data
    with SerialExecutor(data, CONFIG) as ex:
        assert ex.stages == frozenset()


def test_unknown_and_unnamed_stages_are_refused(data, stages, tasks):
    with SerialExecutor(data, CONFIG, stages) as ex, pytest.raises(ValueError, match="has no stage 'nope'"):
        ex.map([Task(tasks[0].tokens, (1,), stage="nope")])
    with pytest.raises(ValueError, match="non-empty name"):
        SerialExecutor(data, CONFIG, {"": (data, CONFIG)})
    with pytest.raises(ValueError, match="non-empty name"):
        ProcessExecutor(data, CONFIG, workers=1, stages={"": (data, CONFIG)})


def test_serial_stop_between_tasks(data, tasks, serial):
    seen: list[int] = []
    with SerialExecutor(data, CONFIG) as ex:
        out = ex.map(tasks[:5], should_stop=lambda: len(seen) >= 2, on_result=lambda i, r: seen.append(i))
        assert ex.map(tasks[:5], should_stop=lambda: True) == [None] * 5
    assert seen == [0, 1]
    assert out[2:] == [None, None, None]
    assert [key(r) for r in out[:2]] == [key(r) for r in serial[:2]]


# --- collecting futures ------------------------------------------------------------------------------


def test_collect_returns_task_order_whatever_the_finishing_order():
    futures = [Future() for _ in range(4)]
    for i in (3, 1):
        futures[i].set_result(f"r{i}")
    late = [threading.Timer(0.05, futures[i].set_result, args=(f"r{i}",)) for i in (2, 0)]
    for t in late:
        t.start()
    seen: list[tuple[int, str]] = []
    out = _collect(futures, None, lambda i, r: seen.append((i, r)), poll=0.01)
    for t in late:
        t.join()
    assert out == ["r0", "r1", "r2", "r3"]
    assert sorted(seen) == [(0, "r0"), (1, "r1"), (2, "r2"), (3, "r3")]


def test_collect_stops_and_cancels_the_rest():
    futures = [Future() for _ in range(4)]
    futures[2].set_result("r2")
    futures[0].set_result("r0")
    out = _collect(futures, lambda: True, None, poll=0.01)
    assert out == ["r0", None, "r2", None]
    assert futures[1].cancelled() and futures[3].cancelled()


def test_collect_raises_a_task_error():
    futures = [Future(), Future()]
    futures[0].set_result("ok")
    futures[1].set_exception(ValueError("this executor has no stage 'x'"))
    with pytest.raises(ValueError, match="no stage 'x'"):
        _collect(futures, None, None, poll=0.01)


# --- the process pool --------------------------------------------------------------------------------


def test_process_pool_equals_serial(pool, tasks, serial):
    seen: list[int] = []
    out = pool.map(tasks, on_result=lambda i, r: seen.append(i))
    assert pool.workers == 2
    assert pool.stages == frozenset({"window", "refine"})
    assert sorted(seen) == list(range(len(tasks)))
    assert [key(r) for r in out] == [key(r) for r in serial]


def test_process_pool_reraises_worker_errors_and_stays_usable(pool, tasks, serial):
    with pytest.raises(ValueError, match="has no stage 'nope'"):
        pool.map([Task(tasks[0].tokens, (1,), stage="nope")])
    assert key(pool.map(tasks[:1])[0]) == key(serial[0])


def test_process_pool_stop_keeps_what_was_collected(pool, tasks, serial):
    seen: list[int] = []
    out = pool.map(tasks, should_stop=lambda: True, on_result=lambda i, r: seen.append(i))
    assert len(out) == len(tasks)
    assert sorted(seen) == [i for i, r in enumerate(out) if r is not None]
    for i, r in enumerate(out):
        if r is not None:
            assert key(r) == key(serial[i])


# --- make_executor and Dask --------------------------------------------------------------------------


def test_make_executor_chooses_by_workers(data, stages):
    with make_executor(data, CONFIG, workers=1, stages=stages) as ex:
        assert isinstance(ex, SerialExecutor) and ex.stages == frozenset(stages)
    with make_executor(data, CONFIG, workers=2) as ex:
        assert isinstance(ex, ProcessExecutor) and ex.workers == 2
    with make_executor(data, CONFIG) as ex:
        assert isinstance(ex, ProcessExecutor) and ex.workers == (os.cpu_count() or 1)


def test_dask_equals_serial(data, stages, tasks, serial):
    pytest.importorskip("distributed")
    from evocov_core.parallel import DaskExecutor

    with DaskExecutor(data, CONFIG, workers=2, stages=stages) as ex:
        assert ex.stages == frozenset({"window", "refine"})
        seen: list[int] = []
        out = ex.map(tasks, on_result=lambda i, r: seen.append(i))
        assert [key(r) for r in out] == [key(r) for r in serial]
        assert sorted(seen) == list(range(len(tasks)))
        with pytest.raises(ValueError, match="has no stage 'nope'"):
            ex.map([Task(tasks[0].tokens, (1,), stage="nope")])

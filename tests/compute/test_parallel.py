"""evocov_core.compute (and the kernel-fit executors of evocov_core.fitting.fits): the one place that starts and sets
up processes.

Executors: per-task seeds make serial, process-pool and Dask runs give identical fits in task
order; stages; stopping; errors raised in workers; make_executor. Runners: any module-level
function, shared values; every worker has one BLAS thread; one call in a daemon process; calls
with time limits in a child that is killed at the limit; and no other module of the package or
the dashboard starts processes.
"""

from __future__ import annotations

import functools
import io
import math
import multiprocessing as mp
import operator
import os
import re
import threading
import time
import tokenize
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from evocov_core.compute.measure import run_measured
from evocov_core.compute.runners import PoolRunner, SerialRunner, _collect, make_runner, run_in_daemon_process
from evocov_core.compute.timed import run_with_time_limits
from evocov_core.data import Dataset
from evocov_core.fitting.fits import ProcessExecutor, SerialExecutor, Task, make_executor, run_task
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import OptimConfig, Start, fit_kernel
from evocov_core.language.library import compose

ROOT = Path(__file__).resolve().parents[2]

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
    from evocov_core.fitting.fits import DaskExecutor

    with DaskExecutor(data, CONFIG, workers=2, stages=stages) as ex:
        assert ex.stages == frozenset({"window", "refine"})
        seen: list[int] = []
        out = ex.map(tasks, on_result=lambda i, r: seen.append(i))
        assert [key(r) for r in out] == [key(r) for r in serial]
        assert sorted(seen) == list(range(len(tasks)))
        with pytest.raises(ValueError, match="has no stage 'nope'"):
            ex.map([Task(tasks[0].tokens, (1,), stage="nope")])


# --- runners: any module-level function, the standard worker setup ------------------------------------

BLAS_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def blas_threads(_: object = None) -> list[int]:
    """Threads of every BLAS library in this process (scipy's own OpenBLAS loaded first)."""
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_info

    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


def scaled(shared: int, item: int) -> int:
    return shared * item


def pid(*_: object) -> int:
    return os.getpid()


def test_runners_call_the_function_in_item_order():
    with make_runner(workers=1) as serial:
        assert isinstance(serial, SerialRunner) and serial.workers == 1
        assert serial.map(abs, [-1, 2, -3]) == [1, 2, 3]
    with SerialRunner(shared=10) as serial:
        assert serial.map(scaled, [1, 2], should_stop=lambda: True) == [None, None]
        assert serial.map(scaled, [1, 2]) == [10, 20]
    seen: list[int] = []
    with make_runner(workers=2, shared=10) as pool:
        assert isinstance(pool, PoolRunner) and pool.workers == 2
        assert pool.map(scaled, [1, 2, 3], on_result=lambda i, r: seen.append(i)) == [10, 20, 30]
        assert os.getpid() not in pool.map(pid, range(4))
    assert sorted(seen) == [0, 1, 2]


def sleep_then_pid(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def _gone(pid_: int) -> bool:
    """The process has ended (reaped, or a zombie waiting for its parent)."""
    import psutil

    try:
        return psutil.Process(pid_).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_closing_a_pool_ends_the_workers_still_running_a_call():
    """A stopped map leaves a call running; close ends its worker instead of letting it (and the exit) wait."""
    pool = PoolRunner(1)
    (worker,) = pool.map(pid, [0])
    t0 = time.monotonic()
    assert pool.map(sleep_then_pid, [300.0], should_stop=lambda: time.monotonic() - t0 > 1.0) == [None]
    assert not _gone(worker)  # still sleeping in its call
    pool.close()
    deadline = time.monotonic() + 60
    while not _gone(worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(worker)


def test_closing_an_idle_pool_leaves_nothing_to_end():
    with PoolRunner(1) as pool:
        assert pool.map(sleep_then_pid, [0.0]) == pool.map(pid, [0])


def test_run_measured_counts_the_memory_of_the_children_too():
    """A child that holds 200 MB of its own while the command waits: the tree's peak holds it."""
    import sys

    child = "import time; b = bytearray(200_000_000); b[::4096] = b'x' * len(b[::4096]); time.sleep(1.5)"
    parent = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}]); print('done')"
    run = run_measured([sys.executable, "-c", parent], every=0.05)
    assert run.returncode == 0 and run.stdout.strip() == "done"
    assert run.peak_rss_bytes > 200_000_000 and run.wall_s > 1.5
    late = run_measured([sys.executable, "-c", "import time; time.sleep(30)"], timeout=1.0)
    assert late.returncode < 0


def test_every_worker_process_has_one_blas_thread(monkeypatch):
    """The workers' own setup limits BLAS, not variables inherited from this process (removed here)."""
    for var in BLAS_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    if len(os.sched_getaffinity(0)) > 1:
        # The control: a process started without the setup has more than one BLAS thread here.
        with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as plain:
            assert max(plain.submit(blas_threads).result(timeout=120)) > 1
    with PoolRunner(2) as pool:
        per_worker = pool.map(blas_threads, [0, 1, 2, 3])
    with make_runner(workers=1) as serial:
        per_worker += serial.map(blas_threads, [0])
    per_worker.append(run_in_daemon_process(blas_threads).result(timeout=120))
    assert all(threads and set(threads) == {1} for threads in per_worker), per_worker


def test_run_jobs_uses_the_runners():
    from bench.common import run_jobs

    got: dict[int, list[int]] = {}
    assert run_jobs(blas_threads, [0, 1, 2], workers=2, on_result=got.__setitem__) == 3
    assert sorted(got) == [0, 1, 2] and all(set(t) == {1} for t in got.values())
    assert run_jobs(abs, [-4], workers=1, on_result=got.__setitem__) == 1 and got[-4] == 4
    assert run_jobs(abs, []) == 0


def test_run_in_daemon_process_returns_a_future():
    assert run_in_daemon_process(math.factorial, (5,)).result(timeout=120) == 120
    assert isinstance(run_in_daemon_process(math.factorial, (-1,)).exception(timeout=120), ValueError)
    assert run_in_daemon_process(int, ("ff",), {"base": 16}).result(timeout=120) == 255
    with pytest.raises(RuntimeError, match=r"process running _exit died \(exit code 3\)"):
        run_in_daemon_process(os._exit, (3,)).result(timeout=120)
    gate = threading.Semaphore(1)
    with gate:  # the slot is taken: the call waits, and can be cancelled meanwhile
        waiting = run_in_daemon_process(math.factorial, (3,), gate=gate)
        assert not waiting.running()
        assert waiting.cancel()
    assert run_in_daemon_process(math.factorial, (4,), gate=gate).result(timeout=120) == 24


def test_run_with_time_limits_records_every_outcome():
    """ok, a timeout (the child is killed, a new one serves the rest), an exception, a death; in order."""
    call = getattr(operator, "call", None)  # operator.call(f) == f(): Python 3.11+
    if call is None:
        pytest.skip("operator.call needs Python 3.11")
    seen: list[int] = []
    items = [functools.partial(math.factorial, 5), functools.partial(time.sleep, 120),
             functools.partial(math.sqrt, -1.0), functools.partial(os._exit, 3), functools.partial(math.factorial, 4)]
    run = run_with_time_limits(call, items, [120, 0.5, 120, 120, 120], on_result=lambda i, _: seen.append(i))
    assert [r.status for r in run.results] == ["ok", "timeout", "failed", "failed", "ok"]
    assert run.results[0].value == 120 and run.results[4].value == 24
    assert run.results[1].reason == "no result within 0.5 s"
    assert run.results[2].reason == "ValueError: math domain error"
    assert run.results[3].reason == "the process died (exit code 3)"
    assert seen == [0, 1, 2, 3, 4] and len(run.startup) == len(run.setup) == 3  # restarted twice


def test_run_with_time_limits_stops_and_runs_inside_a_daemon_process():
    """should_stop cancels what is left; a daemonic process (a dashboard fit) can use it too."""
    call = getattr(operator, "call", None)
    if call is None:
        pytest.skip("operator.call needs Python 3.11")
    seen: list[int] = []
    items = [functools.partial(math.factorial, 3), functools.partial(time.sleep, 120),
             functools.partial(math.factorial, 4)]
    run = run_with_time_limits(call, items, 120, should_stop=lambda: bool(seen),
                               on_result=lambda i, _: seen.append(i))
    assert [r.status for r in run.results] == ["ok", "cancelled", "cancelled"]
    nested = run_in_daemon_process(run_with_time_limits, (math.factorial, [6], 120)).result(timeout=300)
    assert nested.results[0].status == "ok" and nested.results[0].value == 720


# --- the one place ---------------------------------------------------------------------------------------

#: What starts processes or sets their BLAS threads: only the compute layer (evocov_core/compute: set-up,
#: runners, calls with time limits, measured commands, the Dask cluster that ships the package).
STARTS_PROCESSES = re.compile(r"\b(multiprocessing|ProcessPoolExecutor|LocalCluster|subprocess|Popen|fork|"
                              r"threadpool_limits|set_start_method|get_context)\b|\bClient \(")
COMPUTE = tuple(f"evocov_core/compute/{part}.py" for part in ("setup", "runners", "timed", "measure", "cluster"))
ONE_PLACE = COMPUTE


def code_of(path: Path) -> str:
    """The names and operators of a source file, space-separated: no comments, strings or docstrings."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return " ".join(t.string for t in tokens if t.type in (tokenize.NAME, tokenize.OP))


def sources() -> list[Path]:
    files = [*(ROOT / "evocov_core").rglob("*.py"), *(ROOT / "dashboard").glob("*.py"),
             *(ROOT / "pages").glob("*.py"), ROOT / "app.py"]
    return sorted(p for p in files if "__pycache__" not in p.parts)


def test_only_parallel_starts_processes():
    found = {p.relative_to(ROOT).as_posix(): sorted({m.group(0) for m in STARTS_PROCESSES.finditer(code_of(p))})
             for p in sources()}
    elsewhere = {f: hits for f, hits in found.items() if hits and f not in ONE_PLACE}
    assert not elsewhere, f"start processes through evocov_core.compute: {elsewhere}"
    # The check can fail: it sees what parallel itself does.
    assert {"multiprocessing", "ProcessPoolExecutor", "LocalCluster", "Client (", "threadpool_limits",
            "get_context", "Popen"} <= {hit for f in COMPUTE for hit in found[f]}
    assert found["evocov_core/fitting/fits.py"] == []  # executors start processes through the runners


def test_the_process_setup_is_defined_once():
    from evocov_core.language import evaluate

    defined = [p.relative_to(ROOT).as_posix() for p in sources()
               if re.search(r"\bdef (prepare_process|limit_blas_threads)\b", code_of(p))]
    assert defined == ["evocov_core/compute/setup.py"]
    assert not hasattr(evaluate, "prepare_process")
    for p in sources():
        assert "evaluate import prepare_process" not in code_of(p), p


def test_closing_a_pool_with_a_running_call_leaves_its_manager_thread_clean(monkeypatch) -> None:
    """A stopped map cancels the calls not started; closing the pool then ends the worker running one,
    which breaks the pool, and its manager thread fails every call still pending. That must raise
    nothing there (no traceback after a stopped search): the cancelled calls keep their entries, each
    with a stand-in that takes the exception."""
    seen: list[type] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: seen.append(args.exc_type))
    runner = PoolRunner(workers=1)
    runner.map(time.sleep, [30.0] * 6, should_stop=lambda: True)
    futures, manager = list(runner._futures), runner._pool._executor_manager_thread
    assert any(f.running() for f in futures) and any(f.cancelled() for f in futures)
    runner.close()
    manager.join(timeout=30)
    assert not manager.is_alive() and seen == []


def square(x: int) -> int:
    return x * x


def test_pool_jobs_are_sized_to_the_measured_work():
    """Calls go in jobs of several once their seconds are measured: ceil(job_seconds / a call's mean), at most
    a 2·workers-th of the map; results and on_result keep the items' order and indices."""
    with PoolRunner(2, job_seconds=0.025) as pool:
        assert pool.job_size(100) == 1  # nothing measured yet
        seen: list[tuple[int, int]] = []
        assert pool.map(square, list(range(7)), on_result=lambda i, r: seen.append((i, r))) == [i * i for i in range(7)]
        assert sorted(seen) == [(i, i * i) for i in range(7)]
        pool._call_seconds = 0.005
        assert pool.job_size(100) == 5 and pool.job_size(12) == 3 and pool.job_size(3) == 1
        pool._call_seconds = 0.5
        assert pool.job_size(100) == 1
        pool._call_seconds = 0.004
        seen.clear()
        items = list(range(40))
        assert pool.map(square, items, on_result=lambda i, r: seen.append((i, r))) == [i * i for i in items]
        assert sorted(seen) == [(i, i * i) for i in items]
    with PoolRunner(1, job_seconds=0) as single:
        single._call_seconds = 1e-6
        assert single.job_size(100) == 1

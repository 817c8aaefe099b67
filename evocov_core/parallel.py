"""Where work runs in parallel, and how a process that runs it is set up: the one place.

Every process this package starts is started here, in this module's parts (a test checks the
sources), and every one is set up the same way, by :func:`prepare_process`: one BLAS thread (parallelism is over
candidate kernels, and on these 2-core machines a 2-thread OpenBLAS was measured up to 2000x
slower than one thread when the other core is busy) and glibc malloc thresholds.

Two layers:

**Runners** run ``fn(item)`` for many items, or ``fn(shared, item)`` where ``shared`` is sent
to each worker once: :class:`SerialRunner` (this process), :class:`PoolRunner` (a local
``spawn`` process pool), :class:`DaskRunner` (Dask distributed; ``fn`` is named by module
and name, so it must be a module-level function of this package or of a module the workers
can import). :func:`make_runner` picks one; ``map`` returns the results **in item order**,
calls ``on_result(i, result)`` as each arrives, and polls ``should_stop`` each time a result
arrives (serial: between items), then returns at once: unfinished items are cancelled and
their slots hold ``None``. :func:`run_in_daemon_process` runs one call in a daemon process,
as a Future, for a server that must never wait for it. :func:`run_with_time_limits` runs calls
one after another in a child process, each within its own time limit, killing the child when
a call outlives it (the classical forecasters of :mod:`evocov_core.classical`).
:func:`run_measured` runs a command to its end and samples the memory of its process tree
(the long-series benchmark's trials).

**Kernel-fit executors** fit :class:`Task`\\ s on top of a runner: :class:`SerialExecutor`,
:class:`ProcessExecutor`, :class:`DaskExecutor`, :func:`make_executor`. Each task carries its
own seed, so a given run gives identical results on every executor. The training data
(:class:`~evocov_core.metrics.FitData`) is the runner's ``shared`` value, sent once per worker
(process-pool initializer, or a Dask ``scatter(broadcast=True)``), not per task. Besides the
main data and optimiser settings, an executor can hold named **stages** (``{"screen": (window
data, settings), ...}``): a task names the stage it runs in, so a search can fit candidates
cheaply on a window first and fully later on the same workers. A stop takes at most one
kernel fit's time.

The code lives in one module per responsibility; this module re-exports every name (private ones
that tests and Dask tasks name too), so ``from evocov_core.parallel import ...`` works as before:

``parallel_setup``    :func:`prepare_process`, :func:`limit_blas_threads`
``parallel_runners``  the runners, :func:`make_runner`, :func:`run_in_daemon_process`
``parallel_timed``    :func:`run_with_time_limits` and its child process
``parallel_fits``     :class:`Task`, the kernel-fit executors, :func:`make_executor`
``parallel_measure``  :func:`command_output`, :func:`run_measured` (peak memory of a process tree)

A Dask cluster needs nothing of ours installed: :class:`DaskRunner` ships this package to the
workers first and exchanges calls and results as bytes (:mod:`evocov_core.dask_setup`).
"""

from __future__ import annotations

from .dask_setup import DaskSetupError
from .parallel_fits import (
    DaskExecutor,
    Executor,
    ProcessExecutor,
    SerialExecutor,
    Stages,
    Task,
    _contexts,
    _FitExecutor,
    _run_in,
    make_executor,
    run_task,
)
from .parallel_measure import MeasuredRun, _tree_rss, command_output, run_measured
from .parallel_runners import (
    DaskRunner,
    OnResult,
    PoolRunner,
    Runner,
    SerialRunner,
    StopCheck,
    _collect,
    _dask_call,
    _init_pool_worker,
    _pool_call,
    make_runner,
    run_in_daemon_process,
)
from .parallel_setup import _tune_malloc, limit_blas_threads, prepare_process
from .parallel_timed import TimedResult, TimedRun, _Child, _timed_child, one_line, run_with_time_limits

__all__ = [
    "DaskExecutor",
    "DaskRunner",
    "DaskSetupError",
    "Executor",
    "MeasuredRun",
    "PoolRunner",
    "ProcessExecutor",
    "Runner",
    "SerialExecutor",
    "SerialRunner",
    "Stages",
    "Task",
    "TimedResult",
    "TimedRun",
    "command_output",
    "limit_blas_threads",
    "make_executor",
    "make_runner",
    "one_line",
    "prepare_process",
    "run_in_daemon_process",
    "run_measured",
    "run_task",
    "run_with_time_limits",
]

# Private names re-exported for the code that names them here (tests; Dask tasks of older pickles).
_PRIVATE = (_Child, _FitExecutor, _collect, _contexts, _dask_call, _init_pool_worker, _pool_call, _run_in,
            _timed_child, _tree_rss, _tune_malloc, OnResult, StopCheck)

"""A Dask cluster that has only the dependencies installed (evocov_core.compute.cluster).

The cluster tests start ``dask scheduler`` and ``dask worker`` as subprocesses in a temporary
folder with no ``PYTHONPATH``, so neither can import ``evocov_core`` (the fixture checks it);
the package must be shipped to the workers, and the scheduler must never need it.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from evocov_core.compute.cluster import (
    DaskSetupError,
    _forget_other_versions,
    package_zip,
    remote,
    version_problems,
)

ROOT = Path(__file__).resolve().parents[2]


# --- pure parts ---------------------------------------------------------------------------------------


def _versions(**worker: str | None) -> dict:
    here = {"python": "3.11.7.final.0", "numpy": "2.4.6", "scipy": "1.17.1", "pandas": "3.1.1", "deap": "1.4.4",
            "threadpoolctl": "3.6.0", "numba": "0.68.1"}
    return {"client": {"packages": here}, "workers": {"tcp://b:1": {"packages": {**here, **worker}}}}


def test_version_problems_none_when_the_same():
    assert version_problems(_versions()) == []
    assert version_problems(_versions(numpy="2.4.1", pandas="2.2.0")) == []  # patch of numpy, any pandas


def test_version_problems_say_what_to_install_where():
    (missing,) = version_problems(_versions(deap=None))
    assert "tcp://b:1 has no deap" in missing and "pip install -r requirements.txt" in missing
    (no_numba,) = version_problems(_versions(numba=None))  # short series are fitted with it
    assert "tcp://b:1 has no numba" in no_numba
    (numpy,) = version_problems(_versions(numpy="1.26.4"))
    assert "numpy 1.26.4, this machine 2.4.6" in numpy and "numpy==2.4.6" in numpy
    (python,) = version_problems(_versions(python="3.10.12.final.0", numpy=None))
    assert "Python 3.10, this machine Python 3.11" in python
    assert all("\n" not in p for p in version_problems(_versions(deap=None, scipy="1.9.0")))


def test_package_zip_holds_the_sources_and_names_their_version(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = package_zip(tmp_path / "a"), package_zip(tmp_path / "b")
    assert a.name == b.name and a.name.startswith("evocov_core-") and a.suffix == ".zip"
    names = zipfile.ZipFile(a).namelist()
    assert "evocov_core/fitting/fits.py" in names and "evocov_core/searches/__init__.py" in names
    assert not any("__pycache__" in n or not n.endswith(".py") for n in names)


def test_remote_task_unpickles_where_evocov_core_is_missing(tmp_path):
    """What the scheduler gets: the task function and its bytes load without the package."""
    from distributed.protocol.pickle import dumps

    from evocov_core.fitting.fits import Task

    blob = dumps((remote("evocov_core.fitting.fits", "_dask_call"),
                  pickle.dumps(("evocov_core.fitting.fits", "_run_in", Task(("SE",), (1,))))))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = ("import sys, pickle, importlib.util; assert importlib.util.find_spec('evocov_core') is None; "
            "f, b = pickle.loads(sys.stdin.buffer.read()); print(f.__name__, type(b).__name__)")
    out = subprocess.run([sys.executable, "-c", code], input=blob, cwd=tmp_path, env=env, capture_output=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout.decode().split() == ["evocov_dask_call", "bytes"]


# --- a real cluster -------------------------------------------------------------------------------------


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    env["OPENBLAS_NUM_THREADS"] = "1"
    return env


def _start_cluster(folder: Path, workers: int, env: dict[str, str]) -> tuple[str, list[subprocess.Popen]]:
    """``dask scheduler`` and ``dask worker`` in ``folder``; the scheduler's address and the processes."""
    folder.mkdir(parents=True, exist_ok=True)
    sfile = folder / "scheduler.json"
    log = open(folder / "cluster.log", "w")  # noqa: SIM115 - the processes write to it until the teardown
    common = dict(cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                               "--port", "0", "--no-dashboard", "--scheduler-file", str(sfile)], **common)]
    t0 = time.time()
    while not sfile.is_file() or not sfile.read_text().strip():
        if time.time() - t0 > 60 or procs[0].poll() is not None:
            _stop(procs)
            pytest.fail(f"dask scheduler did not start: {(folder / 'cluster.log').read_text()[-2000:]}")
        time.sleep(0.2)
    address = json.loads(sfile.read_text())["address"]
    procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nworkers",
                                   str(workers), "--nthreads", "1", "--no-dashboard", "--local-directory",
                                   str(folder / "work")], **common))
    return address, procs


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in reversed(procs):
        p.terminate()
    for p in reversed(procs):
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A scheduler and 2 single-threaded workers that cannot import evocov_core."""
    from distributed import Client

    address, procs = _start_cluster(tmp_path_factory.mktemp("dask-cluster"), 2, _clean_env())
    try:
        client = Client(address, timeout=60)
        client.wait_for_workers(2, timeout=60)
        # Without this the tests would prove nothing.
        seen = client.run(_cannot_import_probe())
        assert all(seen.values()), f"the test workers can import evocov_core: {seen}"
        assert client.run_on_scheduler(_cannot_import_probe()), "the test scheduler can import evocov_core"
        yield address, client
        client.close()
    finally:
        _stop(procs)


def _cannot_import_probe():
    # A nested function: cloudpickle sends it by value (this test module is not on the cluster).
    def probe() -> bool:
        import importlib.util

        return importlib.util.find_spec("evocov_core") is None

    return probe


def _tiny_search_inputs():
    from evocov_core.data import load_bundled
    from evocov_core.fitting.metrics import FitData
    from evocov_core.searches import preset

    ds = load_bundled("airline")
    cfg = preset("quick-fixed", "evocov", generations=2, population=6, mu=2)
    return FitData.from_dataset(ds, split_fraction=cfg.metric_split), cfg


@pytest.mark.slow
def test_search_on_a_bare_cluster_equals_serial(cluster):
    from evocov_core.searches import run_search

    address, client = cluster
    data, cfg = _tiny_search_inputs()
    serial = run_search(data, cfg, seed=3, workers=1)
    dask = run_search(data, cfg, seed=3, scheduler=address)
    assert dask.n_evaluations == serial.n_evaluations == 12
    assert dask.best.kernel.canonical == serial.best.kernel.canonical
    assert dask.best.bic == serial.best.bic
    where = client.run(lambda: __import__("evocov_core").__file__)
    assert all("evocov_core-" in f and ".zip" in f for f in where.values()), where


@pytest.mark.slow
def test_long_series_search_on_a_cluster_equals_serial(cluster):
    """A 20,000-point series (a subset of data of 400 points, screening and promotions) spreads its
    fits over the cluster and returns what a serial run returns, fixed-count."""
    import numpy as np

    from evocov_core.data import Dataset
    from evocov_core.searches import preset, run_search, search_data

    address, _ = cluster
    rng = np.random.default_rng(0)
    t = np.arange(20_000, dtype=np.float64)
    y = np.sin(2 * np.pi * t / 48) + 0.5 * np.sin(2 * np.pi * t / 336) + 0.3 * rng.standard_normal(t.size)
    ds = Dataset.from_arrays(t, y, test_fraction=0.1)
    cfg = preset("quick", "evocov", time_budget=0.0, generations=2, population=6, mu=2, fit_points=400,
                 screen_points=120)
    data = search_data(ds, cfg)
    assert data.n == 400 and not data.approximation.exact
    serial = run_search(data, cfg, seed=4, workers=1)
    dask = run_search(data, cfg, seed=4, scheduler=address)
    assert dask.n_evaluations == serial.n_evaluations and dask.n_screen_fits == serial.n_screen_fits > 0
    assert dask.best.kernel.canonical == serial.best.kernel.canonical and dask.best.bic == serial.best.bic


@pytest.mark.slow
def test_a_worker_with_another_version_loaded_takes_the_shipped_one(cluster):
    """A long-lived worker that imported another version forgets it before the next run."""
    from evocov_core.compute.cluster import ship_package
    from evocov_core.fitting.fits import DaskExecutor, SerialExecutor, Task
    from evocov_core.language.library import compose

    address, client = cluster
    data, cfg = _tiny_search_inputs()
    ship_package(client)
    assert all(client.run(lambda: bool(__import__("evocov_core.fitting.fits"))).values())  # an earlier run's
    # Seen from a newer version, every module the workers hold is stale.
    forgotten = client.run(_forget_other_versions("evocov_core-000000000000.zip", ("client", -1)))
    assert all(n >= 2 for n in forgotten.values()), forgotten
    tasks = [Task(compose("SE").tokens, (4, 0)), Task(compose("PER").tokens, (4, 1))]
    with SerialExecutor(data, cfg.optim) as ex:
        want = [(r.kernel.canonical, r.bic) for r in ex.map(tasks)]
    with DaskExecutor(data, cfg.optim, address) as ex:
        got = [(r.kernel.canonical, r.bic) for r in ex.map(tasks)]
    assert got == want


@pytest.mark.slow
def test_run_jobs_on_a_bare_cluster(cluster):
    """The benchmarks' job runner ships the package too, and results come back as our objects; the
    benchmarks' own functions (in the clone's ``bench/``, not in the package) are shipped as well."""
    from bench.common import fmt, run_jobs
    from evocov_core.language.kernel import Kernel
    from evocov_core.language.library import compose

    address, _ = cluster
    got: dict[str, object] = {}
    assert run_jobs(compose, ["SE", "PER"], scheduler=address, on_result=got.__setitem__) == 2
    assert isinstance(got["SE"], Kernel) and got["PER"] == compose("PER")
    formatted: dict[float, object] = {}
    assert run_jobs(fmt, [1.23456, 2.5], scheduler=address, on_result=formatted.__setitem__) == 2
    assert formatted == {1.23456: "1.235", 2.5: "2.5"}


@pytest.mark.slow
def test_cli_on_a_cluster_missing_a_dependency_fails_in_one_line(tmp_path):
    """A worker whose deap is broken: the CLI says so in one line, no traceback."""
    shadow = tmp_path / "shadow" / "deap"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('this deap is broken')\n")
    env = {**_clean_env(), "PYTHONPATH": str(shadow.parent)}
    address, procs = _start_cluster(tmp_path / "cluster", 1, env)
    try:
        out = subprocess.run(
            [sys.executable, "-m", "evocov_core", "search", "--data", "data/airline.csv", "--preset", "quick-fixed",
             "--generations", "2", "--population", "6", "--mu", "2", "--scheduler", address, "--quiet",
             "--out", str(tmp_path / "best.json")],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )
    finally:
        _stop(procs)
    assert out.returncode == 2, out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in out.stderr, out.stderr
    assert "cannot import the shipped evocov_core.fitting.fits (ImportError: this deap is broken)" in errors[0]
    assert "pip install -r requirements.txt" in errors[0]
    assert not (tmp_path / "best.json").exists()


def test_a_scheduler_without_workers_is_one_line(monkeypatch):
    from evocov_core.compute.cluster import ship_package

    class NoWorkers:
        scheduler = type("S", (), {"address": "tcp://a:8786"})()

        def wait_for_workers(self, n, timeout):
            raise TimeoutError(f"Only 0/{n} workers arrived after {timeout}")

    with pytest.raises(DaskSetupError, match=r"^the Dask scheduler at tcp://a:8786 has no workers after 2 s: "
                                             r"start some with `dask worker tcp://a:8786 --nthreads 1`$"):
        ship_package(NoWorkers(), wait_for_workers=2)


@pytest.mark.slow
def test_a_panel_on_a_bare_cluster_equals_local_processes(cluster):
    """One task per series on workers that have only the dependencies: the same forecasts as local processes
    (fixed counts, same seed), the bad series' fallbacks included."""
    import pandas as pd
    from panel_cases import FIXED
    from panel_cases import long_panel as _long

    from evocov_core.panel import forecast_panel

    address, _ = cluster
    df = _long(3)
    local = forecast_panel(df, 6, season_length=12, workers=2, **FIXED)
    dask = forecast_panel(df, 6, season_length=12, scheduler=address, **FIXED)
    pd.testing.assert_frame_equal(dask.forecasts, local.forecasts)
    pd.testing.assert_frame_equal(dask.series.drop(columns=["cpu_s", "seconds"]),
                                  local.series.drop(columns=["cpu_s", "seconds"]))
    assert set(dask.series.status) == {"ok", "fallback"} and dask.errors == 0

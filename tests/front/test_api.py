"""The front door (``import evocov_core as ec``): docs/api.md's example runs; read, search, predict,
forecast, save and load agree with the modules they wrap."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pytest

import evocov_core as ec
from evocov_core.data import DataError, Dataset, load_bundled
from evocov_core.fitting.model import FittedModel
from evocov_core.forecast.future import forecast_future
from evocov_core.forecast.stage import ForecastResult
from evocov_core.runs.kernel_file import KernelFileError, load_kernel_file
from evocov_core.searches import ConfigError, SearchResult

ROOT = Path(__file__).resolve().parents[2]
SMALL = dict(workers=1, population=10, generations=3, mu=3)


def example_code() -> str:
    """The one ``python`` block under "A complete example" in docs/api.md."""
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    section = text.split("## A complete example", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1
    return blocks[0]


def test_the_documented_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(example_code(), "docs/api.md", "exec"), {"__name__": "__example__"})  # our own docs
    printed = out.getvalue()
    assert "kernel:" in printed and "test RMSE" in printed and "estimator:" in printed
    assert (tmp_path / "airline.kernel.json").is_file()
    differs = float(re.search(r"differs by (\S+)", printed).group(1))
    assert differs < 1e-6


@pytest.fixture(scope="module")
def airline() -> Dataset:
    return load_bundled("airline")


@pytest.fixture(scope="module")
def result(airline: Dataset) -> ec.KernelResult:
    return ec.search(airline, "quick-fixed", 0, **SMALL)


def test_read_series_reads_files_and_bundled_names(tmp_path):
    ds = ec.read_series("airline")
    assert ds.name == "airline" and ds.n == 144 and ds.n_test == 15
    path = tmp_path / "s.csv"
    path.write_text("t,v\n" + "\n".join(f"{i},{(i * 7) % 5 + i}" for i in range(30)) + "\n")
    own = ec.read_series(path, test_fraction=0.2)
    assert own.n == 30 and own.x_label == "t" and own.y_label == "v" and own.n_test == 6
    with pytest.raises(DataError, match="no such file"):
        ec.read_series(tmp_path / "missing.csv")
    with pytest.raises(DataError, match="test fraction"):
        ec.read_series("airline", test_fraction=0.7)


def test_search_returns_the_run_s_kernel_and_values(airline: Dataset, result: ec.KernelResult):
    """The result is the search's returned fit, typed and frozen; the same seed gives the same kernel."""
    assert isinstance(result.search_result, ForecastResult)
    sr = result.search_result.search
    assert isinstance(sr, SearchResult) and sr.best is not None
    assert result.kernel.prefix == sr.best.kernel.prefix
    assert result.bic == sr.best.bic and result.lml == sr.best.lml
    assert np.array_equal(result.theta, np.asarray(sr.best.theta)) and result.log_noise == sr.best.log_noise
    assert set(result.hyperparameters) == {*result.kernel.slots, "noise_variance"}
    assert result.hyperparameters["noise_variance"] == pytest.approx(np.exp(sr.best.log_noise), rel=1e-15)
    assert result.forecast_members == (("kernel", 1.0),)  # quick-fixed combines nothing
    assert result.config is not None and result.config.population == 10 and result.seed == 0
    with pytest.raises(AttributeError):
        result.seed = 1  # type: ignore[misc]
    again = ec.search(airline, "quick-fixed", 0, **SMALL)
    assert again.kernel.prefix == result.kernel.prefix and again.bic == result.bic
    arrays = ec.search((airline.x[:, 0], airline.y), "quick-fixed", 0, **SMALL)
    assert arrays.kernel.prefix == result.kernel.prefix and arrays.bic == result.bic


def test_search_refuses_unknown_settings(airline: Dataset):
    with pytest.raises(ConfigError, match="unknown setting"):
        ec.search(airline, "quick-fixed", populaton=3)
    with pytest.raises(ConfigError, match="preset"):
        ec.search(airline, "slow")


def test_predict_is_the_fitted_model_s_posterior(airline: Dataset, result: ec.KernelResult):
    pred = result.predict(airline.X_test)
    model = FittedModel.from_fit(result.search_result.search.best, airline.norm)
    want = model.predict(airline.X_train, airline.y_train, airline.X_test)
    assert np.array_equal(pred.mean, want.mean) and np.array_equal(pred.std, want.std)
    assert pred.mean.shape == (airline.n_test,) and pred.x.shape == (airline.n_test, 1)
    assert np.allclose(pred.upper - pred.mean, 1.959963984540054 * pred.std)
    assert np.allclose(pred.mean - pred.lower, pred.upper - pred.mean)
    assert pred.level == 0.95
    one_d = result.predict(airline.X_test[:, 0])
    assert np.array_equal(one_d.mean, pred.mean)


def test_forecast_is_forecast_future(airline: Dataset, result: ec.KernelResult):
    fc = result.forecast(12)
    want = forecast_future(result.kernel_file, airline, 12)
    assert np.array_equal(fc.mean, want.mean) and np.array_equal(fc.lower, want.lower)
    assert np.array_equal(fc.x[:, 0], want.x) and fc.x[0, 0] > airline.x[-1, 0]
    assert np.allclose(fc.std * 1.959963984540054, fc.upper - fc.mean, rtol=1e-12)


def test_save_and_load_round_trip(tmp_path, airline: Dataset, result: ec.KernelResult):
    path = result.save(tmp_path / "k.json")
    kf = load_kernel_file(path)
    assert kf.kernel.prefix == result.kernel.prefix and kf.theta == result.kernel_file.theta
    loaded = ec.load_kernel(path, airline)
    assert loaded.bic == result.bic and loaded.search_result is None
    assert np.array_equal(loaded.predict(airline.X_test).mean, result.predict(airline.X_test).mean)
    bare = ec.load_kernel(path)
    with pytest.raises(ValueError, match="no data to predict from"):
        bare.predict(airline.X_test)
    assert np.array_equal(bare.with_data(airline).forecast(3).mean, result.forecast(3).mean)
    # A path or bundled name is split as the kernel was scored (the file records the test fraction).
    other = ec.search(load_bundled("airline", test_fraction=0.2), "quick-fixed", 0, **SMALL)
    by_name = ec.load_kernel(other.save(tmp_path / "k20.json"), "airline")
    assert by_name.dataset.test_fraction == 0.2 and by_name.dataset.n_test == other.dataset.n_test
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "evocov-kernel", "version": 1, "expression": "__import__(os)"}')
    with pytest.raises(KernelFileError):
        ec.load_kernel(bad)


#: A user's script with no ``if __name__ == "__main__":`` guard: a search on two worker processes.
UNGUARDED = """\
import evocov_core as ec
print("the script runs", flush=True)
res = ec.search(ec.read_series("airline"), preset="quick-fixed", seed=0, workers=2,
                population=6, generations=2, mu=3)
print("found", res.kernel.infix, flush=True)
"""


@pytest.mark.parametrize("how", ["script", "stdin"])
def test_a_search_runs_from_an_unguarded_script_and_from_stdin(how, tmp_path):
    """The search's worker processes never import the caller's main module again: an unguarded script runs
    once (not once more in every worker), and a script read from standard input (``python -``) works."""
    import os
    import subprocess
    import sys

    script = tmp_path / "user_script.py"
    script.write_text(UNGUARDED, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, str(script)] if how == "script" else [sys.executable, "-"]
    run = subprocess.run(args, input=None if how == "script" else UNGUARDED, capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.count("the script runs") == 1, run.stdout
    assert "found " in run.stdout and "Traceback" not in run.stderr

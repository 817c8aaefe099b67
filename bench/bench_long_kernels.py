"""Which structures forecast long series, fitted well on the search's fit points? The evidence for the naive seeds.

Conclusion first: see ``bench/results/bench_long_kernels.md`` and ``docs/long-series.md``, section (e).

The long-series search fits a few kernels on 2,000 of a long series' points and returns one
(``evocov_core/search/spectral_seeds.py``). This script fits hand-picked structures on the same
2,000 points (``FitData.from_dataset``'s subset), one L-BFGS-B run of at most 150 evaluations
from set values (periods at the weekly and daily cycles, periodic lengthscales sharp), and
reports the BIC and the test RMSE of each, beside seasonal naive (one week) and the naive
forecast. It shows the GP forms of the naive forecasts, ``PER × M12`` (local periodic) and
``M12 + LIN`` (random walk with drift), against the structures the search returned before them.

Run from the repository root (about 4 min on 2 cores)::

    python -m bench.bench_long_kernels
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path

import numpy as np

from bench._common import limit_threads, write_report
from bench.common import md_table
from bench.long import load_long, write_series
from evocov_core.fitting.gp import posterior
from evocov_core.fitting.metrics import FitData, rmse
from evocov_core.fitting.optimize import OptimConfig, Start, fit_kernel
from evocov_core.language.kernel import Kernel
from evocov_core.language.library import compose
from evocov_core.search.spectral_seeds import local_periodic, wandering_trend

MAX_EVALS = 150
DAY, WEEK = 48, 336  # half-hours


def _structures(step: float) -> dict[str, list[tuple[str, Kernel, list[float]]]]:
    """Per series: (name, kernel, starting slot values in model units)."""
    wd, ww, week = 2 * math.pi / (DAY * step), 2 * math.pi / (WEEK * step), WEEK * step
    per_se = compose(["+", "PER", "SE"])  # slots: amplitude, periodic lengthscale, frequency, amplitude, lengthscale
    periodic_pairs = [
        ("PER(week) + SE", per_se, [1, 0.1, ww, 1, week]),
        ("PER(week) + M12", compose(["+", "PER", "M12"]), [1, 0.1, ww, 1, week]),
        ("PER(week) + PER(day) + SE", compose(["+", ["+", "PER", "PER"], "SE"]), [1, 0.1, ww, 1, 0.1, wd, 1, week]),
        ("PER(week) × M12", local_periodic(), [1, 0.1, ww, 4 * week]),
    ]
    walks = [
        ("M12", compose("M12"), [1, 0.2]),
        ("M12 + SE", compose(["+", "M12", "SE"]), [1, 0.05, 1, 0.3]),
        ("M12 + LIN", wandering_trend(), [1, 0.66, 1, 1]),
    ]
    return {"taylor": periodic_pairs, "synthetic-30k": periodic_pairs, "djia": walks}


def _check_slots(kernel: Kernel, values: list[float]) -> None:
    if len(values) != kernel.n_params:
        raise ValueError(f"{kernel.infix}: {kernel.n_params} slots, {len(values)} values")


def main() -> None:
    threads = limit_threads()
    config = OptimConfig(n_restarts=1, max_evals=MAX_EVALS, n_screen=0, data_bounds=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        names = ["taylor", "synthetic-30k", "djia"]
        write_series(Path(tmp), names)
        for name in names:
            ds = load_long(Path(tmp) / f"{name}.csv")
            data = FitData.from_dataset(ds)  # the search's subset of 2,000 points
            step = 1.0 / (ds.n_train - 1)  # model units: the training span is 1
            naive = rmse(ds.y_test, np.full(ds.n_test, ds.y_train[-1]))
            snaive = rmse(ds.y_test, np.resize(ds.y_train[-WEEK:], ds.n_test))
            for label, kernel, values in _structures(step)[name]:
                _check_slots(kernel, values)
                t0 = time.perf_counter()
                start = Start(tuple(math.log(v) for v in values), math.log(0.05))
                fit = fit_kernel(kernel, data, config, np.random.default_rng(0), start)
                with np.errstate(all="ignore"):
                    mean = posterior(fit.kernel, data.inputs, data.y, np.asarray(fit.theta), fit.log_noise,
                                     data.X_test, jitter=fit.jitter, mean_only=True).mean
                test = rmse(data.y_test, mean * data.y_std + data.y_mean)
                rows.append([name, label, f"{fit.bic:.1f}", f"{test:.4g}", f"{snaive:.4g}", f"{naive:.4g}",
                             str(fit.n_evals), f"{time.perf_counter() - t0:.1f}"])
                print(" | ".join(rows[-1]), flush=True)
    table = md_table(["series", "kernel", "BIC (fit points)", "test RMSE", "seasonal naive (week)", "naive",
                      "evaluations", "seconds"], rows)
    doc = __doc__.split("\n\n", 2)[2].split("Run from")[0].strip()
    path = write_report("bench_long_kernels", "Structures on long series, fitted on the search's fit points",
                        [doc, "## Results", table], threads)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""Benchmark: LML + gradient with stationary (sub)trees evaluated once per distinct lag, against every pair.

The evaluator's lag row used to serve only inputs on an exact lattice ``x_0 + k·h`` and whole
trees without ``dot_prod`` or a change operator. Eight of the 13 TSDL series give their dates as
decimal years of months or days (steps of 28-31 days, 365 or 366 days a year), so they missed it
and every node of every kernel was an n×n array. Now (:class:`evocov_core.language.evaluate.Inputs`):

* inputs whose n² lags take few distinct values once rounded to 1e-7 of the smallest gap
  (monthly or daily dates, with or without gaps, sorted or not) get a lag row and a gather;
* inside a non-stationary tree, each maximal stationary subtree of three or more operators is
  evaluated on the lag row and expanded where its parent reads it (``LIN × (SE + PER)``:
  the ``SE + PER`` part costs O(distinct lags), not O(n²)).

Series (training part at the published split, in model units as a search sees them): Sulphuric (monthly, n = 415),
Internet (hourly, n = 909, one date out of order), Births (daily with gaps, n = 893). Kernels: SE,
RQ, PER, ``SE × (RQ + PER)`` (stationary), ``LIN × (SE + PER)`` and ``LIN + RQ × PER`` (mixed).
Contenders, timed in interleaved blocks in one run (median over repetitions):

``pairs``  :func:`evocov_core.fitting.gp.lml_and_grad` with ``Inputs(X, toeplitz=False)``: every node
           on all n² pairs (what these series got before);
``lags``   the same with ``Inputs(X)``.

Before timing, the two must agree: LML to 1e-8 relative and gradient to 1e-6 of its largest
entry (the lags are rounded to 1e-7 of a step). Ratio = lags / pairs (below 1: faster). Results
also go to ``bench/results/bench_lags.md``.

Run from the repository root: ``python -m bench.bench_lags --data-dir ../shared/data/tsdl``
(about two minutes).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from bench._common import interleaved, limit_threads, report_ratio_table
from bench.common import geomean, load_series, md_table
from evocov_core.fitting.gp import lml_and_grad
from evocov_core.fitting.metrics import FitData
from evocov_core.language.evaluate import Inputs
from evocov_core.language.kernel import Kernel
from evocov_core.language.library import WELL_KNOWN, compose

SERIES = ("10-sulphuric", "06-internet", "12-births")
KERNELS: dict[str, Kernel] = {
    "SE": WELL_KNOWN["SE"](),
    "RQ": WELL_KNOWN["RQ"](),
    "PER": WELL_KNOWN["PER"](),
    "SE × (RQ + PER)": compose(["*", "SE", ["+", "RQ", "PER"]]),
    "LIN × (SE + PER)": compose(["*", "LIN", ["+", "SE", "PER"]]),
    "LIN + RQ × PER": compose(["+", "LIN", ["*", "RQ", "PER"]]),
}
LOG_NOISE = -2.0


def _training_inputs(data_dir: Path, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Training inputs and targets of one TSDL series at the published split, in model units."""
    data = FitData.from_dataset(load_series(data_dir, name))
    return data.X, data.y


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, default=Path("../shared/data/tsdl"))
    ap.add_argument("--reps", type=int, default=5, help="interleaved repetitions (default 5)")
    ap.add_argument("--block", type=float, default=0.3, help="seconds per timed block (default 0.3)")
    args = ap.parse_args(argv)
    threads = limit_threads()

    rows, summary = [], []
    for name in SERIES:
        X, y = _training_inputs(args.data_dir, name)
        pairs, lags = Inputs(X, toeplitz=False), Inputs(X)
        if lags.row is None:
            raise SystemExit(f"{name}: no lag row was found for these inputs")
        n_lags = lags.row.X2.shape[0]
        ratios = []
        for kname, kernel in KERNELS.items():
            theta = np.random.default_rng(len(kname)).uniform(-1.0, 0.5, kernel.n_params)

            def run_pairs(k: Kernel = kernel, th: np.ndarray = theta, inp: Inputs = pairs,
                          yy: np.ndarray = y) -> tuple:
                return lml_and_grad(k, inp, yy, th, LOG_NOISE)

            def run_lags(k: Kernel = kernel, th: np.ndarray = theta, inp: Inputs = lags,
                         yy: np.ndarray = y) -> tuple:
                return lml_and_grad(k, inp, yy, th, LOG_NOISE)

            (v_p, g_p, _), (v_l, g_l, _) = run_pairs(), run_lags()
            if not (abs(v_l - v_p) <= 1e-8 * abs(v_p) and np.max(np.abs(g_l - g_p)) <= 1e-6 * np.max(np.abs(g_p))):
                raise SystemExit(f"{name}, {kname}: the two paths disagree (LML {v_l} vs {v_p})")
            t = interleaved({"pairs": run_pairs, "lags": run_lags}, args.reps, args.block)
            ratio = t["lags"][1] / t["pairs"][1]
            ratios.append(ratio)
            rows.append([name, str(X.shape[0]), str(n_lags), kname, f"{1e3 * t['pairs'][1]:.2f}",
                         f"{1e3 * t['lags'][1]:.2f}", f"{ratio:.2f}"])
        gmean = geomean(ratios)
        summary.append(f"{name.split('-', 1)[1]}_geomean_ratio={gmean:.2f}")

    table = md_table(["series", "n", "distinct lags", "kernel", "pairs, ms (CPU)", "lags, ms (CPU)",
                      "lags / pairs"], rows, "lrrlrrr")
    line = "lag_row " + " ".join(summary)
    report_ratio_table("bench_lags", "LML + gradient: every pair against once per distinct lag",
                       __doc__, table, line, threads)


if __name__ == "__main__":
    main()

"""Would searching on log(y) forecast better? A Box-Cox-style output transform, measured.

Many of the TSDL series are positive and grow (Airline, Wages, Gas production, Internet), and
their variation grows with their level. A GP on ``log y`` turns exponential growth into a line
and a multiplicative season into an additive one, which the grammar's LIN and PER express
directly. This script runs the dashboard's search (the budget's preset, same seeds, 2 worker
processes) on ``log y`` for every series whose values are all positive, and scores the
back-transformed forecast on the test range in original units:

``mean``
    the log-normal predictive mean ``exp(m + v/2)``, with ``m``, ``v`` the GP's predictive mean
    and variance (noise included) of ``log y``; what an RMSE should be scored on;
``median``
    ``exp(m)``.

It compares each trial with the same series and seed of a ``bench accuracy`` folder (variant
``full``: the search on ``y`` itself), and with the transform a likelihood would choose: the
search's best log-space LML turned into a density of ``y`` (``− n log σ_z − Σ log y``, the
Jacobian of standardising and of the log) against the ``y`` search's, each with its BIC
penalty. The test part is never used to choose.

Usage (from the repository root; a quiet machine, as the searches are timed)::

    python -m bench.bench_log_transform --against bench/results/accuracy/quick-reseed --seeds 0

Appends one JSON line per trial to ``bench/results/log_transform/trials.jsonl`` (resumable: a
series and seed already there is not run again) and writes
``bench/results/bench_log_transform.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import limit_threads, write_report
from bench.accuracy import read_trials, reference_rmse
from bench.common import TrialStatus, geomean, md_table
from evocov_core.data import Dataset, load_tsdl
from evocov_core.fitting.gp import posterior
from evocov_core.fitting.metrics import FitData
from evocov_core.search import run_search
from evocov_core.search.config import preset

OUT = Path("bench/results/log_transform/trials.jsonl")


def log_dataset(ds: Dataset) -> Dataset:
    """The same series and split with ``log y`` as outputs (every value must be positive)."""
    return Dataset(name=ds.name, x=ds.x, y=np.log(ds.y), train=ds.train, x_label=ds.x_label,
                   x_kind=ds.x_kind, test_fraction=ds.test_fraction)


def lml_of_y(lml_model: float, z_std: float, y: np.ndarray) -> float:
    """The log density of positive outputs ``y`` (n,) from the LML of ``z = (log y − mean)/z_std``.

    Change of variables: ``log p(y) = log p(z) − n log z_std − Σ log y``.
    """
    y = np.asarray(y, dtype=float)
    return float(lml_model - y.size * math.log(z_std) - np.sum(np.log(y)))


def run_trial(ds: Dataset, budget: str, seed: int, workers: int = 2) -> dict:
    """One search on ``log y``; its forecast scored in original units (see the module's doc)."""
    lds = log_dataset(ds)
    config = preset(budget)
    data = FitData.from_dataset(lds, split_fraction=config.metric_split)
    t0 = time.perf_counter()
    result = run_search(data, config, seed=seed, workers=workers)
    wall = time.perf_counter() - t0
    best, nm = result.best, lds.norm
    post = posterior(best.kernel, data.inputs, data.y, np.array(best.theta), best.log_noise,
                     nm.x_to_model(ds.X_test), jitter=best.jitter)
    m = post.mean * nm.y_std + nm.y_mean
    v = (post.var + math.exp(best.log_noise)) * nm.y_std ** 2
    lml_y = lml_of_y(best.lml, nm.y_std, ds.y_train)
    return {"series": ds.name, "seed": seed, "budget": budget, "wall": wall,
            "rmse_median": float(np.sqrt(np.mean((np.exp(m) - ds.y_test) ** 2))),
            "rmse_mean": float(np.sqrt(np.mean((np.exp(m + v / 2) - ds.y_test) ** 2))),
            "lml_std": best.lml, "bic_std": best.bic, "q": best.q, "lml_y": lml_y,
            "bic_y": -2 * lml_y + best.q * math.log(data.n), "infix": best.kernel.infix, "n": data.n}


def compare(rows: pd.DataFrame, against: Path, data_dir: Path) -> pd.DataFrame:
    """Per trial: ratio to the best published on ``y`` and on ``log y``, and the BIC difference."""
    trials = read_trials(against)
    trials = trials[(trials.variant == "full") & (trials.status == TrialStatus.OK)].set_index(["series", "seed"])
    refs = reference_rmse(data_dir).best_published
    out = []
    for r in rows.itertuples():
        if (r.series, r.seed) not in trials.index:
            continue
        raw = trials.loc[(r.series, r.seed)]
        ds = load_tsdl(data_dir / f"{r.series}.csv")
        bic_y_raw = float(raw.bic) + 2 * ds.n_train * math.log(ds.norm.y_std)
        out.append({"series": r.series, "seed": r.seed, "y": raw.test_rmse / refs[r.series],
                    "log_mean": r.rmse_mean / refs[r.series], "log_median": r.rmse_median / refs[r.series],
                    "bic_log_minus_y": r.bic_y - bic_y_raw, "q_y": int(raw.q), "q_log": r.q})
    d = pd.DataFrame(out)
    d["by_bic"] = np.where(d.bic_log_minus_y < 0, d.log_mean, d.y)
    return d


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", type=Path, required=True, help="a bench accuracy folder (variant full)")
    ap.add_argument("--data-dir", type=Path, default=Path("../shared/data/tsdl"))
    ap.add_argument("--budget", default="quick")
    ap.add_argument("--seeds", default="0", help="comma-separated seeds")
    ap.add_argument("--report-only", action="store_true", help="no new trials: the report from the file")
    args = ap.parse_args()
    threads = limit_threads()
    done = set()
    if OUT.exists():
        done = {(r["series"], r["seed"]) for r in map(json.loads, OUT.read_text().splitlines())}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    for seed in ([] if args.report_only else [int(s) for s in args.seeds.split(",")]):
        for path in sorted(args.data_dir.glob("[01][0-9]-*.csv")):
            ds = load_tsdl(path)
            if (ds.name, seed) in done or not (ds.y > 0).all():
                continue
            row = run_trial(ds, args.budget, seed)
            with OUT.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(f"{ds.name} seed {seed}: RMSE {row['rmse_mean']:.4g} in {row['wall']:.0f} s", flush=True)
    rows = pd.DataFrame(list(map(json.loads, OUT.read_text().splitlines())))
    d = compare(rows, args.against, args.data_dir)
    lines = [f"{col}: geomean_ratio={geomean(d[col]):.3f} vs_y={geomean(d[col] / d.y):.3f} "
             f"lower={int((d[col] < d.y).sum())} higher={int((d[col] > d.y).sum())} trials={len(d)}"
             for col in ("log_mean", "log_median", "by_bic")]
    table = md_table(["series", "seed", "on y", "on log y (mean)", "on log y (median)", "BIC log − y", "chosen by BIC"],
                     [[r.series, r.seed, f"{r.y:.2f}", f"{r.log_mean:.2f}", f"{r.log_median:.2f}",
                       f"{r.bic_log_minus_y:.1f}", f"{r.by_bic:.2f}"] for r in d.itertuples()])
    method = __doc__.split("\n\n", 1)[1].split("Usage")[0].strip()
    sections = [
        f"{method}\n\nAgainst `{args.against}`; {len(d)} trials ({args.budget} budget). Ratios are test RMSE / "
        "the best published RMSE of the series. The trials come from `python -m bench.bench_log_transform "
        f"--against {args.against} --seeds …` (about 1 min per series and seed at `quick`); `--report-only` "
        "rewrites this report from them.",
        "## Per trial\n\n" + table,
        "## Summary lines\n\n`vs_y`: geometric mean over the trials of the RMSE ratio to the search on y; "
        "lower / higher: trials where it beats / loses to it.\n\n```\n" + "\n".join(lines) + "\n```",
    ]
    path = write_report("bench_log_transform", "Searching on log(y)", sections, threads)
    print("\n".join(lines))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

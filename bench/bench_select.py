"""Which kernel should a search return: the lowest BIC, or the best on a held-out tail?

Post-hoc experiment on the records a search writes (``search --records R.csv``: every
fitted kernel with its hyperparameters and, for reporting only, its test RMSE). For each
run, the K distinct kernels with the lowest BIC are re-fitted by LML on the train-train
part of the training data (the first 90 % of its x-range, starting from their full-data
values: one L-BFGS-B run, no random starts) and scored by the posterior LML of the held-out
tail (the last 10 %, which the re-fit did not see). The run's "tail choice" is the kernel
with the best tail score; its test RMSE (full-data hyperparameters, as the search reported
it) is compared with that of the BIC choice. The test part is never used to choose.

Usage (from the repository root)::

    python -m bench.bench_select --records 'runs/*.csv' --data-dir ../shared/data/tsdl --k 5,20

Each records file must be named ``<series>_s<seed>.csv`` with ``<series>.csv`` in
``--data-dir`` (make them with ``python -m evocov_core search --data <dir>/<series>.csv
--seed <seed> --records runs/<series>_s<seed>.csv ...``). Writes
``bench/results/bench_select.md`` and ends with one ``key=value`` summary line per K.
"""

from __future__ import annotations

import argparse
import glob
import math
import re
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import limit_threads, parse_tuple, write_report
from bench.common import md_table
from evocov_core.data import load_csv
from evocov_core.fitting.metrics import FitData, metric_value
from evocov_core.fitting.optimize import FitStatus, OptimConfig, Start, fit_kernel
from evocov_core.runs.kernel_file import parse_expression


def tail_scores(records: pd.DataFrame, data: FitData, k: int, seed: int = 0) -> pd.DataFrame:
    """The ``k`` lowest-BIC distinct kernels of ``records`` (best first) with their tail score."""
    split = data.split
    assert split is not None
    head = FitData.from_arrays(split.X_t, split.y_t, split_fraction=0.0)
    ok = records[(records.status == FitStatus.OK) & np.isfinite(records.bic)]
    best = ok.sort_values("bic", kind="stable").drop_duplicates("canonical").head(k)
    cfg = OptimConfig(metric="lml", n_restarts=1, n_screen=0)
    rng = np.random.default_rng(seed)
    rows = []
    for _, r in best.iterrows():
        kernel = parse_expression(r.expression)
        fit = fit_kernel(kernel, head, cfg, rng, Start(parse_tuple(r.theta), float(r.log_noise)))
        with np.errstate(all="ignore"):  # a wild candidate scores -inf or NaN, it does not warn
            score = metric_value("posterior_lml", kernel, data, fit.z) if fit.ok else -math.inf
        rows.append({"q": int(r.q), "bic": float(r.bic), "test_rmse": float(r.test_rmse),
                     "tail_score": score if math.isfinite(score) else -math.inf})
    return pd.DataFrame(rows)


def choose(cand: pd.DataFrame, k: int) -> dict:
    """BIC choice vs tail choice among the first ``k`` candidates."""
    c = cand.head(k)
    t = int(c.tail_score.to_numpy().argmax())
    return {"k": len(c), "bic_rmse": c.test_rmse.iloc[0], "bic_q": c.q.iloc[0], "tail_rmse": c.test_rmse.iloc[t],
            "tail_q": c.q.iloc[t], "tail_rank": t + 1, "best_of_k_rmse": c.test_rmse.min()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", required=True, help="glob of search records CSVs named <series>_s<seed>.csv")
    ap.add_argument("--data-dir", default="../shared/data/tsdl")
    ap.add_argument("--k", default="5,20", help="comma-separated numbers of lowest-BIC kernels to choose among")
    args = ap.parse_args()
    ks = sorted({int(v) for v in args.k.split(",")})
    threads = limit_threads()
    t0 = time.perf_counter()
    runs = []
    for path in sorted(glob.glob(args.records)):
        m = re.match(r"(.+)_s(\d+)\.csv$", Path(path).name)
        if not m:
            continue
        series, seed = m.group(1), int(m.group(2))
        data = FitData.from_dataset(load_csv(Path(args.data_dir) / f"{series}.csv"))
        cand = tail_scores(pd.read_csv(path), data, max(ks))
        runs += [{"series": series, "seed": seed, "k_req": k, **choose(cand, k)} for k in ks]
    if not runs:
        raise SystemExit(f"no records matched {args.records!r}")
    df = pd.DataFrame(runs)
    seconds = time.perf_counter() - t0
    method = " ".join(__doc__.split("\n\n")[1].split())
    sections, lines = [f"{method}\n\nRecords: {df[['series', 'seed']].drop_duplicates().shape[0]} runs "
                       f"(`{args.records}`), made by the search loop in `bench/README.md` (bench_select.py)."], []
    for k in ks:
        d = df[df.k_req == k]
        better, worse = int((d.tail_rmse < d.bic_rmse).sum()), int((d.tail_rmse > d.bic_rmse).sum())
        ratio = statistics.median((d.tail_rmse / d.bic_rmse).tolist())
        gmean = math.exp(float(np.mean(np.log(d.tail_rmse / d.bic_rmse))))
        means = d.groupby("series")[["bic_rmse", "tail_rmse", "best_of_k_rmse"]].mean()
        series_better = int((means.tail_rmse < means.bic_rmse).sum())
        lines.append(f"k={k} runs={len(d)} tail_better={better} tail_worse={worse} "
                     f"same={len(d) - better - worse} median_tail_over_bic_rmse={ratio:.3g} "
                     f"gmean_tail_over_bic_rmse={gmean:.3g} "
                     f"series_mean_better={series_better}/{len(means)}")
        sections.append("\n".join([
            f"## Choosing among the {k} lowest-BIC distinct kernels", "",
            md_table(["series", "seed", "BIC choice RMSE", "q", "tail choice RMSE", "q", "its BIC rank",
                      f"best of the {k} (oracle)"],
                     [[r.series, r.seed, f"{r.bic_rmse:.4g}", r.bic_q, f"{r.tail_rmse:.4g}", r.tail_q, r.tail_rank,
                       f"{r.best_of_k_rmse:.4g}"] for r in d.itertuples()]), "",
            "Mean test RMSE per series:", "",
            md_table(["series", "BIC choice", "tail choice", "oracle"],
                     [[s, f"{r.bic_rmse:.4g}", f"{r.tail_rmse:.4g}", f"{r.best_of_k_rmse:.4g}"]
                      for s, r in means.iterrows()]), "",
            f"`{lines[-1]}`"]))
    summary = "\n".join(lines)
    sections.append(f"Scoring time {seconds:.0f} s (one process).\n\n## Summary lines\n\n```\n{summary}\n```")
    path = write_report("bench_select", "Kernel choice: lowest BIC vs best held-out tail", sections, threads)
    print(summary)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

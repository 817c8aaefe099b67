"""Other rules for choosing the forecast's average, replayed on ``bench_combine --validate``'s records.

The search's forecast is the average (the kernel alone, or with AutoETS, AutoTheta or both) whose
forecasts from four earlier origins had the lowest squared error summed over the origins
(:mod:`evocov_core.forecast.combination`, ``val-best-gp`` in ``bench/bench_combine.py``). The sum is ruled
by the origin with the largest errors, and an average is taken on any margin. This script asks
whether a rule that reads the origins one by one chooses better. It fits nothing: it reads the
per-origin squared errors and each average's test RMSE that ``bench_combine --validate`` wrote
(``bench/results/bench_combine__<name>.csv``, columns ``sse<i> <rule>``).

Rules (each returns one of the four averages; ties and no finite error go to the kernel alone):

- ``sum``: the lowest summed error (the product's rule);
- ``margin<f>``: the lowest sum, if it is below ``f`` × the kernel's own, else the kernel;
- ``beat<k>``: the lowest sum, if it beats the kernel at ``k`` or more origins, else the kernel;
- ``majority``: the average that is best at the most origins (ties: the lower sum);
- ``geo``: the lowest sum of the log errors (every origin weighs the same, whatever its scale);
- ``recent``: the lowest sum weighted 1, 2, 3, 4 from the earliest origin to the latest;
- ``last2``: the lowest sum over the two latest origins;
- ``avg3unless<k>``: the kernel with both models, unless the kernel alone beats it at ``k`` origins;
- ``always3``: the kernel with both models.

Usage (from the repository root)::

    python -m bench.bench_combine_rules --csv bench/results/bench_combine__corpus-quick-39-combine.csv \\
        --folder bench/results/corpus/quick-39-combine --data-dir bench/corpus/series

Writes ``bench/results/bench_combine_rules__<csv name after bench_combine__>.md``.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import limit_threads, write_report
from bench.bench_choice import reference
from bench.common import md_table

#: The averages the product chooses among, in bench_combine's names, the kernel alone first.
CANDIDATES = ("gp", "gp+ETS", "gp+Theta", "gp+ETS+Theta")
RULES = ("gp", "sum", "margin0.9", "margin0.8", "margin0.7", "beat3", "beat4", "majority", "geo", "recent",
         "last2", "avg3unless3", "avg3unless4", "always3")


def read_records(csv: Path) -> tuple[pd.DataFrame, np.ndarray]:
    """Each trial's test RMSE per candidate (rows: (series, seed); columns: :data:`CANDIDATES`) and
    its per-origin squared errors, shape (trials, candidates, origins), +inf where one failed."""
    d = pd.read_csv(csv)
    rmse = d[d.rule.isin(CANDIDATES)].pivot_table(index=["series", "seed"], columns="rule", values="rmse")
    val = d[d.rule == "val-best"].set_index(["series", "seed"])
    cols = [c for c in val.columns if c.startswith("sse") and c[3:4].isdigit()]
    if not cols:
        raise SystemExit(f"{csv} has no per-origin errors: rerun bench_combine --validate")
    m = 1 + max(int(c.split()[0][3:]) for c in cols)
    errors = np.stack([val[[f"sse{i} {r}" for i in range(m)]].to_numpy(dtype=float) for r in CANDIDATES], axis=1)
    return rmse.loc[val.index, list(CANDIDATES)], np.where(np.isfinite(errors), errors, np.inf)


def choose(e: np.ndarray, rule: str) -> int:
    """The candidate ``rule`` takes given one trial's errors ``e`` (shape (candidates, origins))."""
    total = e.sum(axis=1)
    best = int(np.argmin(total))
    if rule == "gp":
        return 0
    if rule == "sum":
        return best
    if rule.startswith("margin"):
        return best if total[best] < float(rule[6:]) * total[0] else 0
    if rule.startswith("beat"):
        return best if best == 0 or int((e[best] < e[0]).sum()) >= int(rule[4:]) else 0
    if rule == "majority":
        wins = np.bincount(np.argmin(e, axis=0), minlength=e.shape[0])
        top = np.flatnonzero(wins == wins.max())
        return int(top[np.argmin(total[top])])
    if rule == "geo":
        return int(np.argmin(np.log(np.maximum(e, 1e-300)).sum(axis=1)))
    if rule == "recent":
        return int(np.argmin((e * np.arange(1, e.shape[1] + 1)).sum(axis=1)))
    if rule == "last2":
        return int(np.argmin(e[:, -2:].sum(axis=1)))
    if rule.startswith("avg3unless"):
        return 0 if int((e[0] < e[3]).sum()) >= int(rule[10:]) else 3
    if rule == "always3":
        return 3
    raise ValueError(f"unknown rule {rule!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", type=Path, required=True, help="a bench_combine --validate CSV")
    ap.add_argument("--folder", type=Path, required=True, help="the accuracy folder it was made from")
    ap.add_argument("--data-dir", type=Path, required=True, help="its series")
    args = ap.parse_args()
    threads = limit_threads()
    rmse, errors = read_records(args.csv)
    names = sorted(rmse.index.get_level_values(0).unique())
    ref = reference(args.folder, args.data_dir, names).reindex(rmse.index.get_level_values(0)).to_numpy(dtype=float)
    r = rmse.to_numpy(dtype=float)
    table, lines = [], []
    for rule in RULES:
        pick = np.array([choose(e, rule) for e in errors])
        got = r[np.arange(len(pick)), pick]
        lr = np.log(got / r[:, 0])
        ratio = got / ref
        se = float(lr.std(ddof=1) / math.sqrt(len(lr)))
        g, p90, worst = math.exp(float(np.mean(np.log(ratio)))), float(np.percentile(ratio, 90)), float(ratio.max())
        table.append([rule, f"{np.mean(pick > 0):.2f}", f"{g:.3f}", f"{p90:.2f}", f"{worst:.2f}",
                      f"{math.exp(lr.mean()):.3f}", f"{se:.3f}", f"{int((lr < -0.01).sum())}/{int((lr > 0.01).sum())}"])
        lines.append(f"rule={rule} single_run_geomean={g:.4f} single_run_p90={p90:.3f} worst_single={worst:.3f} "
                     f"paired={math.exp(lr.mean()):.4f} se_log={se:.4f}")
    name = args.csv.stem.removeprefix("bench_combine__")
    summary = md_table(["rule", "share averaged", "single runs: geomean", "p90", "worst", "paired / kernel",
                        "SE of the log", "lower / higher (> 1 %)"], table, "lrrrrrrr")
    write_report(f"bench_combine_rules__{name}", "Rules for choosing the forecast's average, origin by origin", [
        __doc__.split("\n\n", 1)[1].split("Usage")[0].strip(),
        f"Records `{args.csv}`, {len(r)} trials. Ratios are test RMSE over the series' reference RMSE (AutoETS "
        "on the development corpus, the best published on TSDL); `paired / kernel` is the geometric mean, "
        "trial by trial, of the rule's test RMSE over the kernel's own, with the standard error of the mean log.",
        summary, "```\n" + "\n".join(lines) + "\n```"], threads)


if __name__ == "__main__":
    main()

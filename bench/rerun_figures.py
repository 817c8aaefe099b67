"""Figures of a whole set when a change was rerun on part of it: the rerun trials replace the old ones.

A change that can only move some trials (the origin refits' reserve, which differs from the old
one only on series long enough for one evaluation to cost more than the base share of the
budget) is rerun on those; this script gives the whole set's figures with the other trials kept
from the old folder, and the rerun trials paired against the old ones. It fits nothing: it reads
both folders' ``trials.csv`` and kernel files.

Usage (from the repository root)::

    python -m bench.rerun_figures --old bench/results/corpus/quick-39-combine \\
        --new bench/results/corpus/quick-40-origins --data-dir bench/corpus/series
    python -m bench.rerun_figures --old bench/results/accuracy/quick-39-combine \\
        --new bench/results/accuracy/quick-40-origins --data-dir ../shared/data/tsdl

Prints ``key=value`` lines; ratios are to the series' reference RMSE (AutoETS on the development
corpus, the best published on TSDL), as ``bench accuracy-report`` computes them.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from bench.bench_choice import reference


def _trials(folder: Path) -> pd.DataFrame:
    t = pd.read_csv(folder / "trials.csv")
    return t[(t.variant == "full") & (t.status == "ok")].set_index(["series", "seed"]).sort_index()


def _origins_made(folder: Path, index: pd.Index) -> int:
    made = 0
    for series, seed in index:
        doc = json.loads((folder / "kernels" / f"{series}__full__seed{seed}.json").read_text(encoding="utf-8"))
        made += int((doc.get("combination") or {}).get("origins", 0)) > 0
    return made


def _paired(a: pd.Series, b: pd.Series) -> str:
    lr = np.log(a / b).to_numpy(dtype=float)
    se = lr.std(ddof=1) / math.sqrt(len(lr))
    return (f"paired={math.exp(lr.mean()):.4f} se_log={se:.4f} lower={int((lr < -0.01).sum())} "
            f"higher={int((lr > 0.01).sum())}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", type=Path, required=True, help="the whole set's bench accuracy folder")
    ap.add_argument("--new", type=Path, required=True, help="the rerun's folder (a subset of its trials)")
    ap.add_argument("--data-dir", type=Path, required=True, help="the series")
    args = ap.parse_args()
    old, new = _trials(args.old), _trials(args.new)
    missing = new.index.difference(old.index)
    if len(missing):
        raise SystemExit(f"{len(missing)} rerun trials are not in {args.old}: {list(missing)[:3]}")
    merged = pd.concat([old.drop(new.index), new]).sort_index()
    names = sorted(merged.index.get_level_values(0).unique())
    ref = reference(args.old, args.data_dir, names).reindex(merged.index.get_level_values(0)).to_numpy(dtype=float)
    for col, label in (("test_rmse", "kernel"), ("forecast_test_rmse", "forecast")):
        ratio = pd.Series(merged[col].to_numpy(dtype=float) / ref, index=merged.index)
        median = ratio.groupby(level=0).median()
        print(f"{label}_all trials={len(ratio)} single_run_geomean={math.exp(np.log(ratio).mean()):.4f} "
              f"single_run_p90={np.percentile(ratio, 90):.3f} worst_single={ratio.max():.3f} "
              f"median_of_seeds_geomean={math.exp(np.log(median).mean()):.4f}")
        print(f"{label}_rerun_vs_old trials={len(new)} {_paired(new[col], old.loc[new.index, col])}")
    for name, t in (("rerun", new), ("all", merged)):
        print(f"forecast_vs_kernel_{name} {_paired(t.forecast_test_rmse, t.test_rmse)} "
              f"averaged={int((t.forecast != 'kernel').sum())}/{len(t)}")
    print(f"origins_made_rerun old={_origins_made(args.old, new.index)}/{len(new)} "
          f"new={_origins_made(args.new, new.index)}/{len(new)} max_wall_ratio_new={new.wall_ratio.max():.3f} "
          f"max_wall_ratio_old={old.loc[new.index].wall_ratio.max():.3f} "
          f"fits_new_over_old={math.exp(np.log(new.n_evaluations / old.loc[new.index].n_evaluations).mean()):.3f}")


if __name__ == "__main__":
    main()

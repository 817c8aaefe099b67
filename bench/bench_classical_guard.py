"""Should the forecast leave out a classical member that the kernel finds implausible?

The search's forecast weighs its kernel with AutoETS and AutoTheta by their errors at four earlier
origins (:mod:`evocov_core.forecast.combination`). A guard leaves the *kernel* out when its forecast of
the horizon leaves the union of the classical members' 95 % intervals by more than one half-width. The
other way round nothing guards: on TSDL's Internet series AutoETS and AutoTheta forecast 9 × and 8.5 ×
worse than the best published, the kernel 2-3.4 ×, and the weights the origins gave them (up to 0.26 and
0.20) pull the forecast from the kernel's 3.43 to 4.58, the guard's worst single run (issue 55: ≤ 3.5).

This script measures, post hoc on ``bench accuracy`` folders (the kernels and their combinations as
recorded; the classical forecasts of the test part refitted as beside the search, which is
deterministic), trial by trial, the product against rules that leave out a classical member whose
forecast leaves the kernel's calibrated 95 % interval (its predictive normal, spread as the search
calibrated it) by more than ``g`` half-widths at some step, the remaining weights renormalised:

* ``member out beyond g`` for several ``g`` (the kernel's guard, mirrored);
* ``... if the kernel is inside its interval``: only when the member's own 95 % interval holds the
  kernel's forecast at every step (the member, wide, does not rule the kernel out; the kernel rules the
  member out).

The kernel's own guard is applied first, as the search does: a trial whose kernel was left out keeps
the product's forecast. Nothing here sees the test part but the scores.

Usage (from the repository root)::

    python -m bench.bench_classical_guard --folder bench/results/corpus/<run> --data-dir bench/corpus/series \\
        --name corpus
    python -m bench.bench_classical_guard --folder bench/results/accuracy/<run> --variant map-corpus --name tsdl

Writes ``bench/results/bench_classical_guard__<name>.md`` and ``…csv`` (one row per trial and rule).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from bench._common import limit_threads, paired_rules_table, write_report
from bench.bench_choice import add_folder_study_args, run_folder_study
from bench.common import load_series
from evocov_core.fitting.metrics import Z95, FitData, rmse
from evocov_core.fitting.seasons import infer_seasons
from evocov_core.forecast.beside import ORIGIN_TIME_LIMIT, origin_datasets
from evocov_core.forecast.classical import classical_forecasts_many
from evocov_core.forecast.combination import KERNEL, interval_excess
from evocov_core.runs.kernel_file import load_kernel_file
from evocov_core.search.validate import origin_windows

PRODUCT = "product"
#: Half-widths of the kernel's interval a classical member's forecast may lie beyond it.
LIMITS = (0.5, 1.0, 2.0, 4.0)
MODELS = ("AutoETS", "AutoTheta")


def rule_names() -> list[str]:
    return [PRODUCT, *(f"member out beyond {g:g}" for g in LIMITS),
            *(f"member out beyond {g:g} if the kernel is inside its interval" for g in LIMITS)]


def pooled_mean(members: list[str], weights: list[float], means: dict[str, np.ndarray],
                out: set[str]) -> np.ndarray:
    """The weighted mean of ``members`` but those ``out`` (weights renormalised; the first member, the
    kernel, alone when nothing else is left)."""
    keep = [(m, w) for m, w in zip(members, weights, strict=True) if m not in out and w > 0]
    if not keep:
        keep = [(KERNEL, 1.0)]
    total = sum(w for _, w in keep)
    return sum((w / total) * means[m] for m, w in keep)


def series_rows(job: tuple) -> list[dict]:
    data_dir, config, series, trials, ref = job
    ds = load_series(data_dir, series)
    data = FitData.from_dataset(ds, split_fraction=config.metric_split, max_points=config.fit_points)
    full, _ = origin_datasets(ds, data, origin_windows(data))
    # A generous time limit: the forecasts do not depend on it, and a busy machine must not drop one.
    forecasts = classical_forecasts_many([full], season_lengths=infer_seasons(ds).lengths or (1,),
                                         time_limit=10 * ORIGIN_TIME_LIMIT, models=MODELS)[0]
    cl = {m: f for m in MODELS if (f := forecasts.get(m)) is not None and f.ok}
    y = np.asarray(ds.y_test, dtype=np.float64)
    rows = []
    for t in trials:
        kf = load_kernel_file(Path(t["folder"]) / str(t["kernel_file"]))
        c = kf.combination
        pred = kf.model(fallback_norm=ds.norm).predict(ds.X_train, ds.y_train, ds.X_test)
        means = {KERNEL: np.asarray(pred.mean, dtype=np.float64)} | {m: f.mean for m, f in cl.items()}
        lo, hi = pred.mean - Z95 * pred.std, pred.mean + Z95 * pred.std
        members = list(c.members) if c.combined else [KERNEL]
        if missing := [m for m in members if m != KERNEL and m not in cl]:
            raise SystemExit(f"{series}: no forecast of {', '.join(missing)} to recompute the product with")
        weights = list(c.member_weights) if c.combined else [1.0]
        values = {PRODUCT: rmse(y, pooled_mean(members, weights, means, set()))}
        out_of = {m: interval_excess(cl[m].mean, [lo], [hi])[0] for m in members if m in cl}
        inside = {m: (cl[m].lower is not None and interval_excess(pred.mean, [cl[m].lower], [cl[m].upper])[0] == 0)
                  for m in members if m in cl}
        for g in LIMITS:
            # The kernel's guard first: where it left the kernel out, the members stay.
            far = set() if c.guard else {m for m, e in out_of.items() if e > g}
            values[f"member out beyond {g:g}"] = rmse(y, pooled_mean(members, weights, means, far))
            values[f"member out beyond {g:g} if the kernel is inside its interval"] = rmse(
                y, pooled_mean(members, weights, means, {m for m in far if inside[m]}))
        check = values[PRODUCT] / float(t["forecast_test_rmse"]) - 1.0
        rows += [{"series": series, "seed": int(t["seed"]), "rule": r, "rmse": v, "ratio": v / ref, "check": check,
                  "kernel_weight": float(weights[0]), "ets_excess": out_of.get("AutoETS", math.nan),
                  "theta_excess": out_of.get("AutoTheta", math.nan)}
                 for r, v in values.items()]
    print(series, flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_folder_study_args(ap, "bench_classical_guard")
    args = ap.parse_args()
    threads = limit_threads()
    folders, trials, df, name = run_folder_study(args, "bench_classical_guard", series_rows)
    table, lines = paired_rules_table(df, PRODUCT, rule_names(), "product")
    write_report(f"bench_classical_guard__{name}", "A classical member the kernel finds implausible", [
        __doc__.split("\n\n", 1)[1].split("Usage")[0].strip(),
        f"Folder{'s' * (len(folders) > 1)} {', '.join(f'`{f}`' for f in folders)}, "
        f"variant `{args.variant}`, {trials.series.nunique()} series, {len(trials)} trials. The product's "
        "forecast recomputed against the recorded `forecast_test_rmse`: largest relative difference "
        f"{float(df.check.abs().max()):.2g}. "
        "Ratios: test RMSE over the folder's reference; paired against the product, the geometric mean over "
        "series of each series' mean log ratio over its seeds.",
        table,
        "```\n" + "\n".join(lines) + "\n```"], threads)
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""Would K independent `quick` searches, their kernels weighed together with the classical forecasts, beat one?

Issue 27 asks the `standard` budget (five minutes) to buy better forecasts than `quick` (one). A
longer search improves BIC, not forecasts, and an equal-weight mixture of independent searches'
kernels gained nothing (``bench_run_average.py``). Since 1bf900b each search's forecast weighs its
kernel, AutoETS and AutoTheta by the inverse square of their squared errors summed over four
earlier origins (the kernel refitted at each), and its kernel file records those errors
(``combination.origin_sse``) and the guard. K searches with other seeds cost K minutes, and their
kernels are K forecasts with known out-of-sample errors: this script weighs them post hoc, on a
``bench accuracy`` folder run with that code, for every combination of K of its seeds:

* ``one search``: each member seed's own forecast (the recorded weights; checked against the
  recorded ``forecast_test_rmse``);
* ``pooled``: the K kernels (those the guard kept) and the classical members in one weighting,
  each ``sse ** -2`` (members under 1 % dropped), as a search weighs its one kernel;
* ``pooled, kernels share one weight``: the kernels first weighed among themselves (``sse ** -2``),
  and that average given the weight its best kernel would have had beside the classical members;
  so K alike kernels do not crowd the classical forecasts out;
* ``lowest origin error``: the forecast of the one search whose kernel had the lowest summed
  error over the origins;
* ``mean of the K forecasts``: the equal-weight average of the K searches' forecasts.

Nothing here sees the test part but the scores. Ratios are test RMSE over the folder's reference
(TSDL: the best published; the corpus: AutoETS on the same split). A combination counts as one
run of a K-search design; per series, each rule's log ratio is averaged over the combinations
before the geometric mean over series, and the paired ratio is against the mean of the K member
searches' own forecasts in log (1: no better than any one of them).

Usage (from the repository root)::

    python -m bench.bench_pooled_searches --folder bench/results/accuracy/quick-41-weights \\
        --data-dir ../shared/data/tsdl --k 1,2,3,5 --name tsdl-quick-41
    python -m bench.bench_pooled_searches --folder bench/results/corpus/quick-41-weights \\
        --folder bench/results/corpus/quick-43-seed1 --data-dir bench/corpus/series --k 1,2 \\
        --name corpus-quick-41-43

Writes ``bench/results/bench_pooled_searches__<name>.md`` and ``…csv``.
"""

from __future__ import annotations

import argparse
import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import RESULTS_DIR, folders_trials, limit_threads, write_report
from bench.bench_choice import folder_setup, reference
from bench.common import load_series, md_table
from evocov_core.fitting.metrics import rmse
from evocov_core.fitting.seasons import infer_seasons
from evocov_core.forecast.beside import ORIGIN_TIME_LIMIT
from evocov_core.forecast.classical import classical_forecasts
from evocov_core.forecast.combination import KERNEL, MIN_WEIGHT, POWER, inverse_error_weights
from evocov_core.runs.kernel_file import load_kernel_file

RULES = ("one search", "pooled", "pooled, kernels share one weight", "lowest origin error",
         "mean of the K forecasts")


def _weights(sse: list[float], power: float = POWER) -> np.ndarray:
    """The product's weights of members with these summed errors (under MIN_WEIGHT dropped), at the
    product's power unless ``power`` says otherwise."""
    w = inverse_error_weights(sse, power)
    w = np.where(w < MIN_WEIGHT, 0.0, w)
    return w / w.sum()


def pooled(kernels: list[tuple[float, np.ndarray]], classical: dict[str, tuple[float, np.ndarray]],
           share: bool) -> np.ndarray:
    """The K kernels' (``(sse, mean)``, the guard's left out already) and the classical members' forecast."""
    names = list(classical)
    if not kernels:
        w = _weights([classical[n][0] for n in names])
        return np.einsum("i,ij->j", w, np.array([classical[n][1] for n in names]))
    if share:
        wk = _weights([s for s, _ in kernels])
        group = np.einsum("i,ij->j", wk, np.array([m for _, m in kernels]))
        members = [(min(s for s, _ in kernels), group), *(classical[n] for n in names)]
    else:
        members = [*kernels, *(classical[n] for n in names)]
    w = _weights([s for s, _ in members])
    return np.einsum("i,ij->j", w, np.array([m for _, m in members]))


def series_rows(data_dir: Path, series: str, group: pd.DataFrame, ks: list[int], ref: float) -> list:
    ds = load_series(data_dir, series)
    y = np.asarray(ds.y_test, dtype=np.float64)
    seeds: dict[int, dict] = {}
    models: tuple[str, ...] = ()
    for t in group.itertuples():
        kf = load_kernel_file(Path(t.folder) / str(t.kernel_file))
        c = kf.combination
        # A search that made no origins (out of time) forecast with its kernel alone: it joins a pool only
        # through its own forecast (no error to weigh its kernel by).
        models = tuple(m for m in c.members if m != KERNEL) or models
        mean = kf.model(fallback_norm=ds.norm).predict_mean(ds.X_train, ds.y_train, ds.X_test)
        seeds[int(t.seed)] = {"kernel": np.asarray(mean, dtype=np.float64), "combination": c,
                              "sse": dict(c.origin_sse), "recorded": float(t.forecast_test_rmse)}
    fc = classical_forecasts(ds, season_lengths=infer_seasons(ds).lengths or (1,), models=models,
                             time_limit=ORIGIN_TIME_LIMIT)
    cmeans = {f.name: np.asarray(f.mean, dtype=np.float64) for f in fc.forecasts if f.ok}
    for s in seeds.values():
        c = s["combination"]
        s["forecast"] = c.mean(s["kernel"], cmeans) if c.combined else s["kernel"]
        s["check"] = rmse(y, s["forecast"]) / s["recorded"] - 1.0
    classical = {}
    for m in models:  # the classical models' errors at the origins: the same in every seed's file
        errs = {float(s["sse"][m]) for s in seeds.values() if m in s["sse"] and math.isfinite(s["sse"][m])}
        if m in cmeans and errs:
            assert max(errs) - min(errs) <= 1e-6 * max(errs), (series, m, errs)
            classical[m] = (min(errs), cmeans[m])
    rows = []
    for k in ks:
        for combo in itertools.combinations(sorted(seeds), k):
            members = [seeds[s] for s in combo]
            kept = [(float(m["sse"][KERNEL]), m["kernel"]) for m in members
                    if not m["combination"].guard and math.isfinite(m["sse"].get(KERNEL, math.nan))]
            own = [rmse(y, m["forecast"]) for m in members]
            best = min(members, key=lambda m: m["sse"].get(KERNEL, math.inf))
            values = {
                "one search": float(np.exp(np.mean(np.log(own)))),
                "pooled": rmse(y, pooled(kept, classical, share=False)),
                "pooled, kernels share one weight": rmse(y, pooled(kept, classical, share=True)),
                "lowest origin error": rmse(y, best["forecast"]),
                "mean of the K forecasts": rmse(y, np.mean([m["forecast"] for m in members], axis=0)),
            }
            rows += [{"series": series, "k": k, "seeds": " ".join(map(str, combo)), "rule": r, "rmse": v,
                      "ratio": v / ref, "log_vs_one": math.log(v) - float(np.mean(np.log(own))),
                      "check": max(abs(m["check"]) for m in members)} for r, v in values.items()]
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", type=Path, required=True, action="append",
                    help="a bench accuracy folder with several seeds; repeated: the seeds of several folders "
                         "(more seeds run with --first-seed), the first one's data and reference")
    ap.add_argument("--data-dir", type=Path, default=None, help="default: the one its run.json records")
    ap.add_argument("--k", default="2,3,5", help="comma-separated numbers of searches")
    ap.add_argument("--name", default=None, help="the report's name after bench_pooled_searches__")
    args = ap.parse_args()
    threads = limit_threads()
    folders = list(args.folder)
    data_dir, _ = folder_setup(folders[0], args.data_dir)
    trials = folders_trials(folders)
    names = list(trials.series.unique())
    refs = reference(folders[0], data_dir, names)
    ks = sorted({int(v) for v in args.k.split(",")})
    rows = []
    for series, group in trials.groupby("series", sort=True):
        rows += series_rows(data_dir, series, group, [k for k in ks if k <= len(group)], float(refs[series]))
        print(series, flush=True)
    df = pd.DataFrame(rows)
    name = args.name or folders[0].name
    df.to_csv(RESULTS_DIR / f"bench_pooled_searches__{name}.csv", index=False)
    table, lines = [], []
    for k in ks:
        for rule in RULES:
            d = df[(df.k == k) & (df.rule == rule)]
            if d.empty:
                continue
            per_series = d.groupby("series").agg(lr=("ratio", lambda r: float(np.mean(np.log(r)))),
                                                 pair=("log_vs_one", "mean"))
            se = float(per_series.pair.std(ddof=1) / math.sqrt(len(per_series)))
            single = math.exp(per_series.lr.mean())
            p90, worst = float(d.ratio.quantile(0.9)), float(d.ratio.max())
            paired = math.exp(per_series.pair.mean())
            table.append([k, rule, f"{single:.3f}", f"{p90:.2f}", f"{worst:.2f}", f"{paired:.3f} ({se:.3f})",
                          f"{int((per_series.pair < -1e-12).sum())} / {len(per_series)}"])
            lines.append(f"k={k} rule={rule.replace(' ', '_').replace(',', '')} single_run_geomean={single:.4f} "
                         f"p90={p90:.3f} worst={worst:.3f} paired_vs_one_search={paired:.4f} se_log={se:.4f}")
    check = float(df.check.abs().max())
    write_report(f"bench_pooled_searches__{name}", "K independent searches weighed together", [
        __doc__.split("\n\n", 1)[1].split("Usage")[0].strip(),
        f"Folder{'s' * (len(folders) > 1)} {', '.join(f'`{f}`' for f in folders)}, {len(names)} series, "
        f"{len(trials)} trials. Each seed's own forecast recomputed "
        f"against its recorded `forecast_test_rmse`: largest relative difference {check:.2g}.",
        md_table(["K", "rule", "single runs: geomean", "p90", "worst", "paired / one search (SE over series)",
                  "series lower"], table, "rlrrrrr"),
        "```\n" + "\n".join(lines) + "\n```"], threads)
    print("\n".join(lines))


if __name__ == "__main__":
    main()

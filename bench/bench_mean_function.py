"""Would a mean function give the kernel's forecast the right level?

The search fits zero-mean GPs to standardised outputs, so far from the data a stationary kernel's
forecast goes back to the training mean, and a kernel without a linear term forgets the trend. The
worst runs miss the level (``docs/studies.md``, the shape of a candidate's forecast). This script
asks, post hoc on ``bench accuracy`` folders, what the returned kernels forecast when a mean
``h(x)ᵀβ`` with a flat prior on β is integrated out (Rasmussen & Williams 2006, §2.7: β̂ the
generalised least-squares fit through the kernel's covariance, the posterior mean
``h*ᵀβ̂ + K*ᵀK⁻¹(y − Hβ̂)``), with ``h = (1)`` (a level) and ``h = (1, x)`` (a line). The kernel
keeps its fitted values: the study measures the mean, not a refit under it.

The forecast the search returned weighs the kernel, AutoETS and AutoTheta by their squared errors
at four earlier origins. Here each kernel variant forecasts those origins from the points before
them with the same fitted values (no refit at each origin, unlike the search: the ``zero`` row is
that forecast's control), the classical members keep the errors their kernel file records, the
guard and the hold on short series apply as in the search, and the test part is forecast by the
weighted members. Nothing here sees the test part but the scores.

Usage (from the repository root; a minute or two on two cores)::

    python -m bench.bench_mean_function --folder bench/results/corpus/quick-45-epyc \\
        --data-dir bench/corpus/series --name corpus
    python -m bench.bench_mean_function --folder bench/results/accuracy/quick-45-epyc \\
        --data-dir ../shared/data/tsdl --name tsdl

Writes ``bench/results/bench_mean_function__<name>.md`` and ``…csv`` (one row per trial and rule).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from bench._common import limit_threads, paired_rules_table, write_report
from bench.bench_choice import add_folder_study_args, run_folder_study
from bench.bench_classical_members import capped, sse, weighed
from bench.common import load_series
from evocov_core.fitting.metrics import FitData, rmse
from evocov_core.fitting.model import FittedModel
from evocov_core.fitting.seasons import infer_seasons
from evocov_core.forecast.beside import ORIGIN_TIME_LIMIT, origin_datasets
from evocov_core.forecast.classical import classical_forecasts_many
from evocov_core.forecast.combination import KERNEL, SHORT_KERNEL_WEIGHT, guard_reason
from evocov_core.language.evaluate import Inputs, covariance
from evocov_core.runs.kernel_file import load_kernel_file
from evocov_core.search.validate import DEFAULT_ORIGINS, origin_windows

MEMBERS = ("AutoETS", "AutoTheta")
#: The mean's basis functions of x (model units: 1 to 2 over the training range).
BASES = {"zero": 0, "level": 1, "line": 2}
#: Series of at most this many training points hold the kernel at one half (the presets' ``combine_short``).
SHORT = 100


def _basis(x: np.ndarray, p: int) -> np.ndarray:
    """Shape (n, p): 1, x, … of the first input."""
    return np.vander(x[:, 0], p, increasing=True) if p else np.zeros((x.shape[0], 0))


def mean_forecast(model: FittedModel, X: np.ndarray, y: np.ndarray, Xs: np.ndarray, p: int) -> np.ndarray | None:
    """The posterior mean at ``Xs`` (m, d) from ``X`` (n, d), ``y`` (n,) (model units) with ``p``
    basis functions integrated out under a flat prior; None where the factorisation fails."""
    theta = np.asarray(model.theta)
    K = covariance(model.kernel, Inputs(X), theta)
    K[np.diag_indices_from(K)] += math.exp(model.log_noise) + model.jitter
    Ks = covariance(model.kernel, Inputs(Xs, X), theta)  # (m, n)
    try:
        c = cho_factor(K, lower=True, check_finite=True)
    except (np.linalg.LinAlgError, ValueError):
        return None
    r = y
    beta = np.zeros(p)
    if p:
        H = _basis(X, p)
        KiH = cho_solve(c, H)
        beta = np.linalg.lstsq(H.T @ KiH, KiH.T @ y, rcond=None)[0]
        r = y - H @ beta
    with np.errstate(over="ignore", invalid="ignore"):
        m = Ks @ cho_solve(c, r) + _basis(Xs, p) @ beta
    return m if np.all(np.isfinite(m)) else None


def series_rows(job: tuple) -> list[dict]:
    data_dir, config, series, trials, ref = job
    ds = load_series(data_dir, series)
    data = FitData.from_dataset(ds, split_fraction=config.metric_split, max_points=config.fit_points)
    windows = origin_windows(data, DEFAULT_ORIGINS)
    full, _ = origin_datasets(ds, data, windows)
    out = classical_forecasts_many([full], season_lengths=infer_seasons(ds).lengths or (1,),
                                   time_limit=ORIGIN_TIME_LIMIT, models=MEMBERS)[0]
    bands = {m: f for m in MEMBERS if (f := out.get(m)) is not None and f.ok}
    y = np.asarray(ds.y_test, dtype=np.float64)
    rows = []
    for t in trials:
        kf = load_kernel_file(Path(t["folder"]) / str(t["kernel_file"]))
        model = kf.model(fallback_norm=ds.norm)
        norm = model.norm
        keep = model.conditioning(ds.X_train)
        if not keep.all():
            raise SystemExit(f"{series}: fitted on a subset; this study takes series the exact GP fits whole")
        X, yt = norm.x_to_model(ds.X_train), norm.y_to_model(ds.y_train)
        Xs = norm.x_to_model(ds.X_test)
        c = kf.combination
        recorded = dict(c.origin_sse)
        n = ds.n_train
        values: dict[str, float] = {}
        kernels = {}
        for name, p in BASES.items():
            m = mean_forecast(model, X, yt, Xs, p)
            kmean = None if m is None else norm.y_from_model(m)
            values[f"kernel, {name}"] = math.inf if kmean is None else rmse(y, kmean)
            heads = [mean_forecast(model, X[h], yt[h], X[tg], p) for _, h, tg in windows]
            ksse = sse([None if f is None else norm.y_from_model(f) for f in heads],
                       [ds.y_train[tg] for _, _, tg in windows])
            if kmean is None or not c.origins or guard_reason(kmean, list(bands.values())):
                ksse = math.inf  # no forecast, no origins made, or left out by the guard
            kernels[name] = (ksse, kmean)
            members = [(ksse, kmean), *((recorded.get(mm, math.inf) if mm in bands else math.inf,
                                         bands[mm].mean if mm in bands else None) for mm in MEMBERS)]
            if not math.isfinite(ksse) and all(not math.isfinite(s) for s, _ in members[1:]):
                values[f"forecast, {name}"] = values[f"kernel, {name}"]
                continue
            f = capped(members, SHORT_KERNEL_WEIGHT) if n <= SHORT else weighed(members)
            values[f"forecast, {name}"] = rmse(y, f)
        both = [kernels["zero"], kernels["line"], *members[1:]]
        cap = SHORT_KERNEL_WEIGHT if n <= SHORT else 1.0
        values["forecast, zero and line"] = (values["forecast, zero"] if not any(math.isfinite(m[0]) for m in both)
                                             else rmse(y, capped(both, cap, kernels=2)))
        values["forecast, recorded"] = float(t["forecast_test_rmse"])
        rows += [{"series": series, "seed": int(t["seed"]), "n_train": n, "rule": r, "rmse": v, "ratio": v / ref,
                  "kernel_weight": dict(zip(c.members, c.weights, strict=True)).get(KERNEL, 0.0) if c.weights
                  else 1.0}
                 for r, v in values.items()]
    print(series, flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_folder_study_args(ap, "bench_mean_function")
    args = ap.parse_args()
    threads = limit_threads()
    folders, trials, df, name = run_folder_study(args, "bench_mean_function", series_rows)
    names = sorted(trials.series.unique())
    sections = [__doc__.split("\n\n", 1)[1].split("Usage")[0].strip(),
                f"Folder{'s' * (len(folders) > 1)} {', '.join(f'`{f}`' for f in folders)}: {len(names)} series, "
                f"{len(trials)} trials. Ratios: test RMSE over the reference (the best published on TSDL, AutoETS "
                "on the same split on the corpus); paired: the geometric mean over series of each series' mean "
                "log ratio over its seeds against the row named, with the standard error of that mean."]
    lines: list[str] = []
    for base, rules, title in [
            ("kernel, zero", [f"kernel, {b}" for b in BASES], "The kernel alone, paired against its zero mean"),
            ("forecast, zero", ["forecast, recorded", *(f"forecast, {b}" for b in BASES), "forecast, zero and line"],
             "The weighted forecast, paired against the zero mean's (kernel origin errors from the fitted values)"),
            ("forecast, recorded", [*(f"forecast, {b}" for b in BASES), "forecast, zero and line"],
             "The weighted forecast, paired against what the search returned")]:
        table, more = paired_rules_table(df, base, rules, base, key="paired")
        sections += [f"**{title}**", table]
        lines += more
    short = df[df.n_train <= SHORT]
    if short.series.nunique() > 1:
        lines += [f"short(<= {SHORT}) {s}" for s in paired_rules_table(
            short, "forecast, zero", [f"forecast, {b}" for b in ("level", "line", "zero and line")], "zero",
            key="paired")[1]]
    sections.append("```\n" + "\n".join(lines) + "\n```")
    write_report(f"bench_mean_function__{name}", "A mean function under the returned kernels", sections, threads)
    print("\n".join(lines))


if __name__ == "__main__":
    main()

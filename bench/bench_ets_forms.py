"""How well do the Gaussian-process forms of exponential smoothing forecast on their own?

Issue 55 adds a local level, a local trend and a damped trend to the grammar
(:mod:`evocov_core.language.grammar`) and starts every budgeted search from the GP forms of the models ETS
chooses among (:mod:`evocov_core.search.ets_seeds`). Before they enter a search: fitted alone, from
the values the search gives them, what does each form forecast? For every series of a folder, each
form of :func:`~evocov_core.search.ets_seeds.ets_seeds` is fitted once (the ``quick`` preset's
optimiser settings, seed 0) on the training part; the script reports, against AutoETS's test RMSE on
the same split (``classical.csv`` of an accuracy folder):

``bic``
    the form of lowest BIC (a choice the search could make: it sees only the training part);
``origins``
    the form of lowest squared error of its forecasts at the training range's origins
    (:func:`~evocov_core.search.validate.origin_windows`, the fitted values: the product's kind of choice);
``oracle``
    the form of lowest test RMSE (hindsight: an upper bound on what choosing among the forms gives);
``search``
    the kernel of a ``bench accuracy`` folder's trials, for comparison.

With ``--log`` every form is also fitted on ``log y`` where the series is positive (a noise that grows
with the level, as ETS's multiplicative errors), its forecast the log-normal mean in original units, and
the three choices are made among the forms on ``y``, on ``log y`` and among both, the BIC of ``y`` with
the log's Jacobian (:func:`~bench.bench_log_transform.lml_of_y`). ``--types``, a
:mod:`bench.bench_ets_types` table, groups the summary by the model AutoETS chooses.

Usage (from the repository root)::

    python -m bench.bench_ets_forms --data-dir bench/corpus/series \\
        --folder bench/results/corpus/quick-45-epyc --workers 2 --max-points 600
    python -m bench.bench_ets_forms --data-dir bench/corpus/series --folder bench/results/corpus/quick-59-oc-s0 \\
        --log --types bench/results/bench_ets_types__corpus.csv --name log-corpus

Writes ``bench/results/bench_ets_forms[__<name>].md`` and ``…csv`` (one row per series, scale and form).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import RESULTS_DIR, limit_threads, map_jobs, write_report
from bench.bench_log_transform import lml_of_y, log_dataset
from bench.common import geomean, load_series, md_table
from evocov_core.data import Dataset
from evocov_core.fitting.gp import NumericalFailure, posterior
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import fit_kernel
from evocov_core.search.config import preset
from evocov_core.search.ets_seeds import NON_SEASONAL, SEASONAL, ets_seeds, season
from evocov_core.search.validate import origin_windows


def form_rows(ds: Dataset, log: bool = False) -> list[dict]:
    """Fit every seed form on one series' ``y`` (or, with ``log``, on ``log y``); one row per form.

    ``bic_y`` is the BIC of the training ``y`` in original units, so that a form on ``y`` and one on
    ``log y`` compare: the model units' BIC plus ``2 n log σ_y`` (the standardisation's Jacobian) and,
    on ``log y``, ``2 Σ log y``. The test RMSE is in original units; on ``log y`` of the log-normal
    predictive mean ``exp(m + v/2)`` (``v`` with the noise).
    """
    fitted = log_dataset(ds) if log else ds
    data = FitData.from_dataset(fitted)
    nm = fitted.norm
    omega = season(data)
    names = NON_SEASONAL + (SEASONAL if omega is not None else ())
    rows = []
    for form, (kernel, start) in zip(names, ets_seeds(data), strict=True):
        t0 = time.perf_counter()
        fit = fit_kernel(kernel, data, preset("quick").optim, np.random.default_rng(0), start)
        rmse, bic_y, sse = math.inf, math.inf, math.inf
        if fit.ok:
            pred = _forecast(fit, data.X, data.y, data.X_test, nm, log)
            rmse = float(np.sqrt(np.mean((pred - ds.y_test) ** 2)))
            bic_y = (fit.bic - 2.0 * (lml_of_y(fit.lml, nm.y_std, ds.y_train) - fit.lml) if log
                     else fit.bic + 2.0 * data.n * math.log(nm.y_std))
            # The training range's own forecasts, as the product's choice of origins makes them.
            try:
                sse = sum(float(np.sum((_forecast(fit, data.X[head], data.y[head], data.X[target], nm, log)
                                        - ds.y_train[target]) ** 2)) for _, head, target in origin_windows(data))
            except NumericalFailure:
                sse = math.inf
        rows.append({"series": ds.name, "n_train": data.n, "scale": "log" if log else "y", "form": form,
                     "bic": fit.bic if fit.ok else math.inf, "bic_y": bic_y, "origins_sse": sse,
                     "test_rmse": rmse, "q": kernel.q,
                     "season_steps": None if omega is None else 2 * math.pi / omega / data.step,
                     "seconds": time.perf_counter() - t0})
    return rows


def _forecast(fit, X, y, X_new, nm, log: bool) -> np.ndarray:
    """A fitted form's predictive mean at ``X_new`` from ``(X, y)`` (model units), in original units."""
    post = posterior(fit.kernel, X, y, np.array(fit.theta), fit.log_noise, X_new, jitter=fit.jitter,
                     mean_only=not log)
    m = post.mean * nm.y_std + nm.y_mean
    return np.exp(m + (post.var + math.exp(fit.log_noise)) * nm.y_std ** 2 / 2) if log else m


def fit_forms(job: tuple[Path, str, bool]) -> list[dict]:
    """:func:`form_rows` of one series of a data folder, on ``y`` and, with the job's flag and when every
    value is positive, on ``log y``."""
    data_dir, name, with_log = job
    ds = load_series(data_dir, name)
    rows = form_rows(ds)
    if with_log and np.all(ds.y > 0):
        rows += form_rows(ds, log=True)
    return rows


def choices(g: pd.DataFrame, ref: float) -> dict[str, float]:
    """One series' forms (rows of :func:`form_rows`): test RMSE over ``ref`` of the form of lowest BIC, of
    the lowest squared error at the training range's origins and of the oracle, among the forms on ``y``,
    on ``log y`` (NaN without them) and among both (BIC of ``y``, errors in original units)."""
    out = {}
    for scale, rows in (("y", g[g["scale"] == "y"]), ("log", g[g["scale"] == "log"]), ("both", g)):
        ok = rows[np.isfinite(rows["bic_y"])]
        pick = ok.loc[ok["bic_y"].idxmin()] if len(ok) else None
        out[f"bic_{scale}"] = float(pick["test_rmse"]) / ref if pick is not None else math.nan
        out[f"form_{scale}"] = ("-" if pick is None else
                                pick["form"] + ("ᴸ" if scale == "both" and pick["scale"] == "log" else ""))
        out[f"oracle_{scale}"] = float(rows["test_rmse"].min()) / ref if len(rows) else math.nan
        val = rows[np.isfinite(rows["origins_sse"])]
        out[f"origins_{scale}"] = (float(val.loc[val["origins_sse"].idxmin(), "test_rmse"]) / ref if len(val)
                                   else math.nan)
    return out


def group_table(per: pd.DataFrame, columns: list[str]) -> str:
    """Geometric means of ``columns`` by AutoETS's error and trend (``per``'s ``group``), and the paired
    ratio of the lowest BIC over both scales to that on ``y`` with the standard error of its mean log."""
    rows = []
    for name, g in [*per.groupby("group"), ("all", per)]:
        lr = np.log(g["bic_both"] / g["bic_y"])
        se = float(lr.std(ddof=1) / math.sqrt(len(lr))) if len(lr) > 1 else math.nan
        rows.append([name, len(g), *(f"{geomean(g[c]):.3f}" for c in columns),
                     f"{math.exp(lr.mean()):.3f} ({se:.3f})", int((g["form_both"].str.endswith("ᴸ")).sum())])
    return md_table(["AutoETS's error, trend", "series", *columns, "paired bic_both / bic_y (SE of the log)",
                     "on log y"], rows, "lr" + "r" * (len(columns) + 2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=Path("bench/corpus/series"))
    ap.add_argument("--folder", type=Path, required=True, help="a bench accuracy folder (classical.csv, trials.csv)")
    ap.add_argument("--variant", default="full")
    ap.add_argument("--max-points", type=int, default=600, help="skip series with more training points")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--log", action="store_true", help="fit the forms on log y too (series whose values are positive)")
    ap.add_argument("--types", type=Path, default=None,
                    help="a bench_ets_types CSV: the summary by the model AutoETS chooses")
    ap.add_argument("--name", default=None, help="the report's name after bench_ets_forms__")
    a = ap.parse_args()
    threads = limit_threads()
    classical = pd.read_csv(a.folder / "classical.csv")
    ets = classical[(classical["model"] == "AutoETS") & (classical["status"] == "ok")].set_index("series")
    trials = pd.read_csv(a.folder / "trials.csv")
    trials = trials[(trials["variant"] == a.variant) & (trials["status"] == "ok")]
    search = trials.groupby("series")["test_rmse"].median()
    names = [n for n in sorted(ets.index) if int(ets.loc[n, "n_train"]) <= a.max_points]
    rows = [r for chunk in map_jobs(fit_forms, [(a.data_dir, n, a.log) for n in names], a.workers) for r in chunk]
    df = pd.DataFrame(rows)
    script = "bench_ets_forms" + (f"__{a.name}" if a.name else "")
    df.to_csv(RESULTS_DIR / f"{script}.csv", index=False)
    per = pd.DataFrame([{"series": name, "n": int(g["n_train"].iloc[0]),
                         **choices(g, float(ets.loc[name, "test_rmse"])),
                         "search": float(search.get(name, math.nan)) / float(ets.loc[name, "test_rmse"])}
                        for name, g in df.groupby("series")])
    scales = ["y", "log", "both"] if a.log else ["y"]
    columns = [f"{k}_{s}" for s in scales for k in ("bic", "origins", "oracle")] + ["search"]
    line = " ".join(f"{c}_geomean={geomean(per[c].dropna()):.4f} {c}_p90={per[c].quantile(0.9):.3f} "
                    f"{c}_worst={per[c].max():.3f}" for c in columns) + f" series={len(per)}"
    table = [[r["series"], r["n"], *(x for s in scales for x in (r[f"form_{s}"], f"{r[f'bic_{s}']:.3f}")),
              *(f"{r[f'oracle_{s}']:.3f}" for s in scales), f"{r['search']:.3f}"] for _, r in per.iterrows()]
    header = ["series", "n", *(x for s in scales for x in (f"lowest BIC ({s})", "× AutoETS")),
              *(f"lowest test RMSE ({s}) ×" for s in scales), "search's kernel ×"]
    sections = [__doc__.split("\n\n")[1], md_table(header, table, "lr" + "lr" * len(scales) + "r" * (len(scales) + 1))]
    if a.types is not None:
        types = pd.read_csv(a.types).set_index("series")
        per["group"] = [f"{types.loc[s, 'error']}, {types.loc[s, 'trend']}" if s in types.index else "?"
                        for s in per["series"]]
        grouped = group_table(per, columns)
        sections.append(grouped)
        print(grouped)
    sections.append("```\n" + line + "\n```")
    path = write_report(script, "The exponential-smoothing forms alone, against AutoETS", sections, threads)
    print(line)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

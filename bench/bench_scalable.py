"""Study (issue 28): which scalable GP for long series, measured; see ``docs/long-series.md``.

On R ``forecast::taylor`` (3,628 training points, half-hourly) and the 30,000-point synthetic
series of ``bench long`` (27,000 training points; its true mean is known), for three fixed
kernels written in the grammar (``PER×SE``, ``SE + PER×SE``, ``PER×SE + PER×SE``, and
``PER + PER + LIN``: two cycles without an envelope on a linear trend, the synthetic series'
own structure):

**fits** (untimed, seeded: the same numbers on any machine)

* the **subset of data** (:mod:`evocov_core.fitting.subset`, what the package does) at 500, 1,000 and
  2,000 points, and the **exact GP** on every training point where it is affordable (taylor):
  each kernel fitted with the quick preset's optimiser (``fit_kernel``, one L-BFGS-B start
  after 20 screened starts, 60 evaluations), its test RMSE, LML and evaluations;
* the **VFE / SGPR** prototype (``bench/vfe.py``) with m = 256, 512 and 1,024 inducing inputs
  on a regular grid over the training range, conditioning on **every** training point: its
  bound F at the 1,000-point subset's fitted values (against the exact LML where affordable),
  then L-BFGS-B on F from those values (at most 40 evaluations on taylor, 15 on the long
  series, for every kernel but ``PER×SE + PER×SE``) and the test RMSE of its predictive mean.

**cost** (timed: run on a quiet machine) — seconds per LML + gradient evaluation of each
method at the fitted values, medians of interleaved blocks, one BLAS thread; a fit's time is
about its evaluations times this.

``--part fits`` writes ``bench/results/scalable/fits.csv``, ``--part cost`` writes ``cost.csv``;
each run rewrites ``bench/results/bench_scalable.md`` from whatever of the two exists.

Run from the repository root: ``python -m bench.bench_scalable --part fits`` (about 15 minutes)
and ``python -m bench.bench_scalable --part cost`` (about 3 minutes).
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import RESULTS_DIR, interleaved, limit_threads, write_report
from bench.common import fmt, md_table
from bench.long import SERIES, load_long, write_series
from bench.vfe import fit_vfe, grid_inducing, vfe_lml, vfe_lml_and_grad, vfe_predict_mean
from evocov_core.data import Dataset
from evocov_core.fitting.gp import lml_and_grad
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.model import FittedModel
from evocov_core.fitting.optimize import fit_kernel, slot_bounds
from evocov_core.language.library import compose
from evocov_core.search import preset

OUT = RESULTS_DIR / "scalable"
STUDY_SERIES = ("taylor", "synthetic-30k")
KERNELS = {"PER×SE": ["*", "PER", "SE"], "SE + PER×SE": ["+", "SE", ["*", "PER", "SE"]],
           "PER×SE + PER×SE": ["+", ["*", "PER", "SE"], ["*", "PER", "SE"]],
           "PER + PER + LIN": ["+", ["+", "PER", "PER"], "LIN"]}
VFE_KERNELS = ("PER×SE", "SE + PER×SE", "PER + PER + LIN")
SUBSETS = (500, 1000, 2000)
INDUCING = (256, 512, 1024)
#: The exact GP on every training point, up to this many (a 4,000² matrix is 128 MB).
EXACT_UP_TO = 4000
VFE_EVALS = {"taylor": 40, "synthetic-30k": 15}


def datasets(names: tuple[str, ...] = STUDY_SERIES) -> dict[str, Dataset]:
    """The series as ``bench long`` writes and reads them."""
    with tempfile.TemporaryDirectory() as tmp:
        write_series(Path(tmp), names)
        return {s: load_long(Path(tmp) / f"{s}.csv") for s in names}


def _rmse(ds: Dataset, mean: np.ndarray) -> float:
    return float(np.sqrt(np.mean((ds.y_test - mean) ** 2)))


def fits(kernels: tuple[str, ...] = tuple(KERNELS), log=print) -> pd.DataFrame:
    """The untimed part: one row per (series, kernel, method)."""
    optim = preset("quick").optim
    rows = []
    for s, ds in datasets().items():
        nm = ds.norm
        X, y = nm.x_to_model(ds.X_train), nm.y_to_model(ds.y_train)
        Xt = nm.x_to_model(ds.X_test)
        truth = SERIES[s].true_mean()
        floor = _rmse(ds, truth[~ds.train]) if truth is not None else math.nan
        for kname in kernels:
            kernel = compose(KERNELS[kname])
            starts = {}
            sizes = [*SUBSETS, 0] if ds.n_train <= EXACT_UP_TO else list(SUBSETS)
            for m in sizes:
                data = FitData.from_dataset(ds, max_points=m)
                t0 = time.perf_counter()
                fit = fit_kernel(kernel, data, optim, np.random.default_rng([28, m]))
                rm = FittedModel.from_fit(fit, nm, ds.n_train).test_rmse(ds) if fit.ok else math.nan
                method = f"subset {m}" if m else f"exact {ds.n_train}"
                rows.append({"series": s, "kernel": kname, "method": method, "points": data.n, "ok": fit.ok,
                             "lml": fit.lml, "evals": fit.n_evals, "test_rmse": rm, "true_mean_rmse": floor,
                             "fit_s_loaded": round(time.perf_counter() - t0, 2),
                             "theta": list(map(float, fit.theta)), "log_noise": float(fit.log_noise)})
                starts[m] = (fit, data)
                log(f"{s} {kname} {method}: rmse {rm:.4g} lml {fit.lml:.1f} evals {fit.n_evals}")
            if kname not in VFE_KERNELS:
                continue
            fit0, data0 = starts[1000]
            z0 = np.append(np.asarray(fit0.theta), fit0.log_noise)
            lo, hi = slot_bounds(kernel, data0, optim)
            bounds = list(zip(lo, hi, strict=True))
            for m in INDUCING:
                Z = grid_inducing(X, m)
                f0 = vfe_lml(kernel, X, y, Z, z0[:-1], z0[-1])
                z, f, evals = fit_vfe(kernel, X, y, Z, z0, bounds, VFE_EVALS[s])
                mean = nm.y_from_model(vfe_predict_mean(kernel, X, y, Z, z[:-1], z[-1], Xt))
                rm = _rmse(ds, mean)
                rows.append({"series": s, "kernel": kname, "method": f"VFE {m}", "points": ds.n_train, "ok": True,
                             "lml": f, "bound_at_start": f0, "evals": evals, "test_rmse": rm,
                             "true_mean_rmse": floor, "theta": list(map(float, z[:-1])), "log_noise": float(z[-1])})
                log(f"{s} {kname} VFE {m}: F {f0:.1f} -> {f:.1f} in {evals} evals, rmse {rm:.4g}")
    return pd.DataFrame(rows)


def cost(table: pd.DataFrame, reps: int = 3, block: float = 1.0, log=print) -> pd.DataFrame:
    """Seconds per LML + gradient at each method's fitted values (median of interleaved blocks)."""
    rows = []
    for s, ds in datasets().items():
        nm = ds.norm
        X, y = nm.x_to_model(ds.X_train), nm.y_to_model(ds.y_train)
        for kname in VFE_KERNELS:
            kernel = compose(KERNELS[kname])
            fitted = table[(table.series == s) & (table.kernel == kname)].set_index("method")
            calls = {}
            for method, r in fitted.iterrows():
                th, ln = np.asarray(r["theta"], dtype=float), float(r["log_noise"])
                if method.startswith("VFE"):
                    Z = grid_inducing(X, int(method.split()[1]))
                    calls[method] = (lambda k=kernel, X=X, y=y, Z=Z, th=th, ln=ln: vfe_lml_and_grad(k, X, y, Z, th, ln))
                else:
                    m = 0 if method.startswith("exact") else int(method.split()[1])
                    data = FitData.from_dataset(ds, max_points=m)
                    calls[method] = (lambda k=kernel, d=data, th=th, ln=ln: lml_and_grad(k, d.inputs, d.y, th, ln))
            times = interleaved(calls, reps, block)
            for method, (wall, cpu) in times.items():
                rows.append({"series": s, "kernel": kname, "method": method, "wall_s": wall, "cpu_s": cpu})
                log(f"{s} {kname} {method}: {wall * 1e3:.1f} ms per LML + gradient")
    return pd.DataFrame(rows)


def pivots(table: pd.DataFrame, costs: pd.DataFrame | None) -> str:
    """Compact tables: test RMSE by kernel and method, and ms per LML + gradient by method, per series."""
    out = []
    order = [*(f"subset {k}" for k in SUBSETS), *(f"VFE {k}" for k in INDUCING)]
    for s in table.series.unique():
        t = table[table.series == s]
        methods = [m for m in t.method.unique() if m.startswith("exact")] + [m for m in order if m in set(t.method)]
        piv = t.pivot_table(index="kernel", columns="method", values="test_rmse", aggfunc="first")
        rows = [[k, *(fmt(piv.loc[k].get(m)) for m in methods)] for k in KERNELS if k in piv.index]
        floor = t.true_mean_rmse.dropna()
        out.append(f"**{s}**, test RMSE" + (f" (true mean: {floor.iloc[0]:.3g})" if len(floor) else "") + "\n\n"
                   + md_table(["kernel", *methods], rows))
        if costs is not None and len(costs[costs.series == s]):
            c = costs[costs.series == s].groupby("method").wall_s.median()
            out.append(f"**{s}**, ms per LML + gradient (median over the kernels)\n\n"
                       + md_table(methods, [[fmt(c.get(m, math.nan) * 1e3, 3) for m in methods]], "r" * len(methods)))
    return "\n\n".join(out)


def report(table: pd.DataFrame | None, costs: pd.DataFrame | None, threads: dict[str, str]) -> Path:
    sections = [__doc__.split("\n\n", 1)[1].split("Run from")[0].strip()]
    if table is not None:
        sections.append("## In short\n\n" + pivots(table, costs))
        for s in table.series.unique():
            t = table[table.series == s]
            floor = t.true_mean_rmse.dropna()
            head = f"## {s}" + (f" (true mean's RMSE: {floor.iloc[0]:.4g})" if len(floor) else "")
            rows = []
            for _, r in t.iterrows():
                c = None
                if costs is not None:
                    hit = costs[(costs.series == s) & (costs.kernel == r.kernel) & (costs.method == r.method)]
                    c = float(hit.wall_s.iloc[0]) if len(hit) else None
                rows.append([r.kernel, r.method, f"{int(r.points):,}", fmt(r.test_rmse), fmt(r.lml, 6),
                             fmt(r.get("bound_at_start"), 6), int(r.evals),
                             fmt(c * 1e3 if c else None), fmt(c * r.evals if c else None, 3)])
            sections.append(head + "\n\n" + md_table(
                ["kernel", "method", "points", "test RMSE", "LML / bound F", "F at the 1,000-subset's values",
                 "evaluations", "ms per LML + gradient", "fit s (evals × cost)"], rows, "llrrrrrrr"))
    return write_report("bench_scalable", "Scalable GP options for long series (issue 28)", sections, threads)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=["fits", "cost", "report"], default="fits")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--kernels", default=",".join(KERNELS),
                    help="comma-separated names of KERNELS for --part fits; rows of other kernels already in "
                         "fits.csv are kept")
    args = ap.parse_args()
    threads = limit_threads()
    OUT.mkdir(parents=True, exist_ok=True)
    fits_csv, cost_csv = OUT / "fits.csv", OUT / "cost.csv"
    if args.part == "fits":
        names = tuple(k.strip() for k in args.kernels.split(",") if k.strip())
        new = fits(names)
        if fits_csv.is_file():
            old = pd.read_csv(fits_csv)
            new = pd.concat([old[~old.kernel.isin(names)], new], ignore_index=True)
        new.to_csv(fits_csv, index=False)
    table = pd.read_csv(fits_csv, converters={"theta": lambda v: [float(t) for t in v.strip("[]").split(",") if t]}) \
        if fits_csv.is_file() else None
    if args.part == "cost":
        if table is None:
            raise SystemExit(f"run --part fits first: {fits_csv} is missing")
        cost(table, reps=args.reps).to_csv(cost_csv, index=False)
    costs = pd.read_csv(cost_csv) if cost_csv.is_file() else None
    print(f"wrote {report(table, costs, threads)}")


if __name__ == "__main__":
    main()

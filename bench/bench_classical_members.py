"""Which classical forecasts should the kernel's forecast be weighed with?

Since 1bf900b a search's forecast weighs its kernel, AutoETS and AutoTheta by the inverse square of
their squared errors summed over four earlier origins (:mod:`evocov_core.forecast.combination`), and its
kernel file records those errors. On the development corpus that forecast is 0.95 × AutoETS, where
issue 27 asks for 0.85; the classical side holds about half of the weight, so a better classical
side moves the forecast directly. The M4 competition's lesson is that combinations of classical
methods beat each of them (SCUM, Petropoulos & Svetunkov 2020: the median of ETS, CES, ARIMA and
dynamic optimised Theta). This script measures, post hoc on a ``bench accuracy`` folder run with that
code (the kernels and their origin errors as recorded, no refit), trial by trial:

* ``kernel + E + T`` (the product, reproduced: checked against the recorded forecast), and the same
  with more members, each weighed by its own origin errors (``A``: AutoARIMA, ``C``: AutoCES,
  ``D``: DynamicOptimizedTheta);
* ``kernel vs <group>``: the classical models first combined into one forecast, at each origin and
  over the test part (``mean``, or ``median`` as SCUM does), and that forecast weighed against the
  kernel as one member, by the same rule;
* the classical forecasts and groups alone, for reference.

The kernel keeps its recorded guard (left out where its forecast leaves AutoETS's and AutoTheta's
intervals). Every classical model is fitted on the same points as beside the search
(:func:`evocov_core.forecast.beside.origin_datasets`). Nothing here sees the test part but the scores.

Usage (from the repository root)::

    python -m bench.bench_classical_members --folder bench/results/corpus/quick-41-weights \\
        --folder bench/results/corpus/quick-43-seed1 --data-dir bench/corpus/series --workers 2 --name corpus
    python -m bench.bench_classical_members --folder bench/results/accuracy/quick-41-weights \\
        --data-dir ../shared/data/tsdl --workers 2 --name tsdl

Writes ``bench/results/bench_classical_members__<name>.md`` and ``…csv`` (one row per trial and rule).
"""

from __future__ import annotations

import argparse
import math
import pickle
from pathlib import Path

import numpy as np

from bench._common import limit_threads, paired_rules_table, write_report
from bench.bench_choice import add_folder_study_args, run_folder_study
from bench.bench_pooled_searches import _weights
from bench.common import load_series
from evocov_core.fitting.metrics import FitData, rmse
from evocov_core.fitting.seasons import infer_seasons
from evocov_core.forecast.beside import ORIGIN_TIME_LIMIT, origin_datasets
from evocov_core.forecast.classical import classical_forecasts_many
from evocov_core.forecast.combination import KERNEL, MIN_WEIGHT, POWER, SHORT_KERNEL_WEIGHT, inverse_error_weights
from evocov_core.runs.kernel_file import load_kernel_file
from evocov_core.search.validate import origin_windows

MODELS = ("AutoETS", "AutoTheta", "AutoARIMA", "AutoCES", "DynamicOptimizedTheta")
SHORT = {"AutoETS": "E", "AutoTheta": "T", "AutoARIMA": "A", "AutoCES": "C", "DynamicOptimizedTheta": "D"}
#: Rules weighing the kernel with each of these models (by their own origin errors).
MEMBER_SETS = (("AutoETS", "AutoTheta"), ("AutoETS", "AutoTheta", "AutoARIMA"), ("AutoETS", "AutoTheta", "AutoCES"),
               ("AutoETS", "AutoTheta", "DynamicOptimizedTheta"),
               ("AutoETS", "AutoTheta", "AutoCES", "DynamicOptimizedTheta"), MODELS)
#: Groups of classical models combined into one forecast first: (how, models).
GROUPS = (("mean", ("AutoETS", "AutoTheta")), ("median", ("AutoETS", "AutoARIMA", "AutoCES", "DynamicOptimizedTheta")),
          ("mean", ("AutoETS", "AutoARIMA", "AutoCES", "DynamicOptimizedTheta")), ("mean", MODELS))
PRODUCT = "kernel + E + T"
#: Powers other than the product's tried with every model as a member and with the mean of them.
POWERS = (0.0, 1.0)
#: The kernel's weight at most this, beside the product's members (the rest share the remainder).
CAPS = (0.5, 0.67)  # 0.5: SHORT_KERNEL_WEIGHT
#: The same at SHORT_KERNEL_WEIGHT on series of at most this many training points only (the presets'
#: ``combine_short`` is 100 since this study).
SHORT_CUTS = (60, 80, 100, 150)


def _label(models: tuple[str, ...]) -> str:
    return "".join(SHORT[m] for m in models)


def group_label(how: str, models: tuple[str, ...]) -> str:
    return f"{how}({_label(models)})"


def group_forecast(how: str, forecasts: list[np.ndarray | None]) -> np.ndarray | None:
    """The group's forecast (shape (h,)) from the members' that exist; None when none does."""
    have = [f for f in forecasts if f is not None]
    if not have:
        return None
    return (np.median if how == "median" else np.mean)(np.array(have), axis=0)


def sse(forecasts: list[np.ndarray | None], targets: list[np.ndarray]) -> float:
    """Squared error summed over the origins (+inf where one forecast is missing)."""
    if any(f is None for f in forecasts):
        return math.inf
    return float(sum(np.sum((f - y) ** 2) for f, y in zip(forecasts, targets, strict=True)))


def weighed(members: list[tuple[float, np.ndarray | None]], power: float = POWER) -> np.ndarray:
    """The forecast of members ``(origin error, test forecast)``, weighed as the product weighs them
    (at another ``power``: members with a finite error share by ``sse ** -power``)."""
    usable = [(s if f is not None else math.inf) for s, f in members]
    w = _weights(usable, power)
    return np.einsum("i,ij->j", w[w > 0], np.array([f for (_, f), wi in zip(members, w, strict=True) if wi > 0]))


def capped(members: list[tuple[float, np.ndarray | None]], cap: float, kernels: int = 1) -> np.ndarray:
    """As :func:`weighed`, with the first member's (the kernel's) weight at most ``cap``; with
    ``kernels``, the first ``kernels`` members' summed weight (the others share the rest in their
    proportions)."""
    usable = [(s if f is not None else math.inf) for s, f in members]
    w = inverse_error_weights(usable, POWER)
    k, rest = w[:kernels].sum(), w[kernels:].sum()
    if k > cap and rest > 0:
        w = np.concatenate([w[:kernels] / k * cap, w[kernels:] / rest * (1 - cap)])
    w = np.where(w < MIN_WEIGHT, 0.0, w)
    w = w / w.sum()
    return np.einsum("i,ij->j", w[w > 0], np.array([f for (_, f), wi in zip(members, w, strict=True) if wi > 0]))


def _classical(ds, full, cuts, cache: Path | None, series: str):
    """Every model's forecasts of the test part and of each origin's targets (cached across runs)."""
    path = None if cache is None else cache / f"{series}.pkl"
    if path is not None and path.is_file():
        return pickle.loads(path.read_bytes())  # written by this script, below: not user input
    out = classical_forecasts_many([full, *cuts], season_lengths=infer_seasons(ds).lengths or (1,),
                                   time_limit=ORIGIN_TIME_LIMIT, models=MODELS)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pickle.dumps(out))
    return out


def series_rows(job: tuple) -> list[dict]:
    data_dir, config, series, trials, ref, cache = job
    ds = load_series(data_dir, series)
    data = FitData.from_dataset(ds, split_fraction=config.metric_split, max_points=config.fit_points)
    windows = origin_windows(data)
    full, cuts = origin_datasets(ds, data, windows)
    targets = [ds.y_train[t] for _, _, t in windows]
    out = _classical(ds, full, cuts, cache, series)
    test = {m: (f.mean if (f := out[0].get(m)) is not None and f.ok else None) for m in MODELS}
    at = {m: [f.mean if (f := c.get(m)) is not None and f.ok else None for c in out[1:]] for m in MODELS}
    errors = {m: sse(at[m], targets) for m in MODELS}
    for how, ms in GROUPS:
        g = group_label(how, ms)
        at[g] = [group_forecast(how, [at[m][j] for m in ms]) for j in range(len(cuts))]
        test[g] = group_forecast(how, [test[m] for m in ms])
        errors[g] = sse(at[g], targets)
    y = np.asarray(ds.y_test, dtype=np.float64)
    rows = []
    for t in trials:
        kf = load_kernel_file(Path(t["folder"]) / str(t["kernel_file"]))
        c = kf.combination
        recorded = dict(c.origin_sse)
        check_sse = max((abs(errors[m] / recorded[m] - 1) for m in ("AutoETS", "AutoTheta")
                         if m in recorded and math.isfinite(recorded[m]) and recorded[m] > 0), default=0.0)
        kmean = np.asarray(kf.model(fallback_norm=ds.norm)
                           .predict_mean(ds.X_train, ds.y_train, ds.X_test), dtype=np.float64)
        ksse = recorded.get(KERNEL, math.inf)
        if c.guard or not c.origins:
            ksse = math.inf  # left out by the guard, or no origins made: as the search did
        values = {"kernel": rmse(y, kmean)}
        if not c.origins:  # the search forecast with its kernel alone: every rule does
            values |= {r: values["kernel"] for r in rule_names()}
        else:
            for ms in MEMBER_SETS:
                values[f"kernel + {' + '.join(_label((m,)) for m in ms)}"] = rmse(
                    y, weighed([(ksse, kmean), *((errors[m], test[m]) for m in ms)]))
            for how, ms in GROUPS:
                g = group_label(how, ms)
                values[f"kernel vs {g}"] = rmse(y, weighed([(ksse, kmean), (errors[g], test[g])]))
            for cap in CAPS:
                values[f"{PRODUCT}, kernel at most {cap:g}"] = rmse(
                    y, capped([(ksse, kmean), *((errors[m], test[m]) for m in ("AutoETS", "AutoTheta"))], cap))
            held = values[f"{PRODUCT}, kernel at most {SHORT_KERNEL_WEIGHT:g}"]
            for cut in SHORT_CUTS:
                values[f"{PRODUCT}, kernel at most {SHORT_KERNEL_WEIGHT:g} up to {cut} points"] = (
                    held if ds.n_train <= cut else values[PRODUCT])
            g = group_label(*GROUPS[-1])
            for power in POWERS:
                values[f"kernel + {' + '.join(SHORT[m] for m in MODELS)}, power {power:g}"] = rmse(
                    y, weighed([(ksse, kmean), *((errors[m], test[m]) for m in MODELS)], power))
                values[f"kernel vs {g}, power {power:g}"] = rmse(
                    y, weighed([(ksse, kmean), (errors[g], test[g])], power))
        for name in (*MODELS, *(group_label(h, ms) for h, ms in GROUPS)):
            values[name] = rmse(y, test[name]) if test[name] is not None else math.nan
        check = values[PRODUCT] / float(t["forecast_test_rmse"]) - 1.0
        rows += [{"series": series, "seed": int(t["seed"]), "rule": r, "rmse": v, "ratio": v / ref,
                  "check": check, "check_sse": check_sse, "kernel_weight": _kernel_weight(c)}
                 for r, v in values.items()]
    print(series, flush=True)
    return rows


def _kernel_weight(c) -> float:
    return float(c.member_weights[0]) if c.origins else 1.0


def rule_names() -> list[str]:
    g = group_label(*GROUPS[-1])
    return ([f"kernel + {' + '.join(_label((m,)) for m in ms)}" for ms in MEMBER_SETS]
            + [f"kernel vs {group_label(h, ms)}" for h, ms in GROUPS]
            + [r for p in POWERS for r in (f"kernel + {' + '.join(SHORT[m] for m in MODELS)}, power {p:g}",
                                           f"kernel vs {g}, power {p:g}")]
            + [f"{PRODUCT}, kernel at most {c:g}" for c in CAPS]
            + [f"{PRODUCT}, kernel at most {SHORT_KERNEL_WEIGHT:g} up to {c} points" for c in SHORT_CUTS])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_folder_study_args(ap, "bench_classical_members")
    ap.add_argument("--cache", type=Path, default=None,
                    help="a folder keeping each series' classical forecasts between runs (a scratch folder)")
    args = ap.parse_args()
    threads = limit_threads()
    folders, trials, df, name = run_folder_study(args, "bench_classical_members", series_rows, args.cache)
    names = sorted(trials.series.unique())
    table, lines = paired_rules_table(df, PRODUCT, list(df.rule.unique()), "product")
    check, check_sse = float(df.check.abs().max()), float(df.check_sse.abs().max())
    write_report(f"bench_classical_members__{name}", "Which classical forecasts the kernel is weighed with", [
        __doc__.split("\n\n", 1)[1].split("Usage")[0].strip(),
        f"Folder{'s' * (len(folders) > 1)} {', '.join(f'`{f}`' for f in folders)}, {len(names)} series, "
        f"{len(trials)} trials. The product's forecast recomputed against the recorded `forecast_test_rmse`: "
        f"largest relative difference {check:.2g}; AutoETS's and AutoTheta's origin errors against the "
        f"recorded ones: {check_sse:.2g}. Ratios: test RMSE over the folder's reference; paired against the "
        "product, the geometric mean over series of each series' mean log ratio over its seeds.",
        table,
        "```\n" + "\n".join(lines) + "\n```"], threads)
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""Which kernels should the model choice consider? Post hoc, on the records of budgeted searches.

A budgeted search returns, of its candidate kernels, the one whose refit on the first 90 % of
the training range best predicts the last 10 % (posterior LML; ``evocov_core/search/select.py``).
Its candidates are the 5 lowest-BIC distinct kernels. When the search runs long, those five
are often close variants of one flexible kernel. Would the tail score find a kernel that
extrapolates better if it were offered simpler ones too? This script replays the choice on
the full fits each trial recorded (``bench accuracy --records``), with other candidate sets:

``bic``
    the lowest BIC (no choice);
``top5``
    the 5 lowest BIC (what the search does; its test RMSE is checked against ``trials.csv``);
``top10``
    the 10 lowest BIC;
``front``
    the BIC-vs-hyperparameter-count front: each kernel with a lower BIC than every kernel with
    fewer hyperparameters (the lowest BIC is on it);
``top5+front``
    both;
``top5-calm``, ``top5+front-calm``
    the same sets less the kernels whose forecast spreads out (``horizon_spread`` above
    ``EXPLODING_SPREAD``: the search flags them, it does not drop them), unless all do;
``top5-no-late-cp``, ``bic-no-late-cp``
    the 5 lowest BIC, and the lowest BIC, among the kernels without a change point (or
    change-window centre) in the held-out last 10 % of the training range, which the tail
    score cannot check: the head refit never sees the regime after it.

Each candidate is refitted on the head exactly as the search does it (the ``head`` stage, the
same seeds) and scored by the same tail score; the test part is never used to choose. The
test RMSE of a choice is the recorded one (full-data hyperparameters, as the search returns
them).

Usage (from the repository root)::

    python -m bench.bench_candidates --folder bench/results/accuracy/standard-lags

Writes ``bench/results/bench_candidates__<folder name>.md`` and ends with one ``key=value`` line per rule.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from bench._common import limit_threads, parse_tuple, write_report
from bench.accuracy import read_trials, reference_rmse, variant_config
from bench.common import geomean, load_series, md_table
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import FitStatus, Start, fit_kernel, slot_roles
from evocov_core.language.kernel import Kernel
from evocov_core.runs.kernel_file import parse_expression
from evocov_core.search.select import EXPLODING_SPREAD, horizon_spread, tail_score
from evocov_core.search.stages import head_stage

RULES = ("bic", "top5", "top10", "front", "top5+front", "top5-calm", "top5+front-calm", "top5-no-late-cp",
         "bic-no-late-cp")


def distinct_fits(records: pd.DataFrame) -> pd.DataFrame:
    """The lowest-BIC full fit of each canonical kernel, lowest BIC first."""
    ok = records[(records.status == FitStatus.OK) & np.isfinite(records.bic)]
    return ok.sort_values("bic", kind="stable").drop_duplicates("canonical").reset_index(drop=True)


def front(fits: pd.DataFrame) -> list[int]:
    """Rows of ``fits`` (lowest BIC first) with a lower BIC than every row with fewer
    hyperparameters: the BIC-vs-q front, fewest hyperparameters first."""
    out, best = [], math.inf
    for i in fits.sort_values(["q", "bic"], kind="stable").index:
        if fits.bic[i] < best:
            out.append(int(i))
            best = fits.bic[i]
    return out


def candidate_sets(fits: pd.DataFrame) -> dict[str, list[int]]:
    """Row indices of ``fits`` each rule offers to the choice, in the order the search would."""
    fr = front(fits)
    top5 = list(range(min(5, len(fits))))
    return {"bic": top5[:1], "top5": top5, "top10": list(range(min(10, len(fits)))),
            "front": sorted(fr), "top5+front": sorted(set(top5) | set(fr))}


def late_change(fit: pd.Series, kernel, data: FitData) -> bool:
    """Whether a change-point location or change-window centre of the fit lies in the tail
    (after the last head input, model units)."""
    assert data.split is not None
    edge = float(data.split.X_t[:, 0].max())
    roles = slot_roles(kernel)
    theta = parse_tuple(fit.theta)
    return any(roles[s] & {"location", "window_centre"} and math.exp(t) > edge
               for s, t in zip(kernel.slots, theta, strict=True))


def spread(fit: pd.Series, kernel, data: FitData) -> float:
    """:func:`horizon_spread` of a recorded fit."""
    rec = SimpleNamespace(kernel=kernel, theta=parse_tuple(fit.theta), log_noise=float(fit.log_noise),
                          jitter=float(fit.jitter), noise_variance=math.exp(float(fit.log_noise)))
    return horizon_spread(data, rec)


def replay(records: pd.DataFrame, data: FitData, config, seed: int) -> dict[str, dict]:
    """Each rule's choice: test RMSE, q and BIC rank of the kernel the tail score picks."""
    fits = distinct_fits(records)
    sets = candidate_sets(fits)
    kernels: dict[int, Kernel] = {}

    def kernel(i: int) -> Kernel:  # each candidate parsed once, for every rule
        if i not in kernels:
            kernels[i] = parse_expression(fits.expression[i])
        return kernels[i]

    calm = {i: spread(fits.loc[i], kernel(i), data) <= EXPLODING_SPREAD for i in sets["top5+front"]}
    for name in ("top5", "top5+front"):
        kept = [i for i in sets[name] if calm[i]]
        sets[f"{name}-calm"] = kept or sets[name]
    early: list[int] = []
    for i in fits.index:  # lowest BIC first, until five
        if not late_change(fits.loc[i], kernel(i), data):
            early.append(int(i))
            if len(early) == 5:
                break
    sets["top5-no-late-cp"] = early or sets["top5"]
    sets["bic-no-late-cp"] = early[:1] or sets["bic"]
    head, optim = head_stage(data, config.optim)
    scores: dict[int, float] = {}  # by BIC rank: a kernel is refitted once for all the rules
    out = {}
    for rule, rows in sets.items():
        for i in rows if len(rows) > 1 else ():
            if i in scores:
                continue
            r = fits.loc[i]
            # The search seeds the refit of its i-th candidate (BIC rank i + 1) with (seed, 7919, i).
            rng = np.random.default_rng(np.random.SeedSequence([seed, 7919, i]))
            fit = fit_kernel(kernel(i), head, optim, rng,
                             Start(parse_tuple(r.theta), float(r.log_noise)))
            scores[i] = tail_score(data, fit)  # the head fit's values, on the full data's split
        s = np.array([scores.get(i, 0.0) for i in rows])
        pick = rows[int(np.argmax(np.where(np.isfinite(s), s, -np.inf)))] if np.isfinite(s).any() else rows[0]
        out[rule] = {"rmse": float(fits.test_rmse[pick]), "q": int(fits.q[pick]), "rank": pick + 1,
                     "n": len(rows), "oracle": float(fits.test_rmse[rows].min())}
    return out


def replay_folder(folder: Path, data_dir: Path | None, replay_trial, seeds: set[int] | None = None
                  ) -> tuple[pd.DataFrame, pd.Series, str]:
    """Replay every recorded ``full`` trial of a ``bench accuracy --records`` folder.

    ``replay_trial(records, data, config, seed)`` returns ``{rule: {"rmse": …, …}}`` for one
    trial. Returns one row per trial and rule (with the searched kernel's test RMSE and the
    ratio to the best published), the best published RMSE per series, and the budget name.
    """
    runs = json.loads((folder / "run.json").read_text(encoding="utf-8"))["runs"]
    data_dir = data_dir or Path(runs[-1]["data_dir"])
    budget = runs[-1]["budget"]
    refs = reference_rmse(data_dir)["best_published"]
    trials = read_trials(folder).set_index(["series", "variant", "seed"])
    config = variant_config("full", budget)
    rows = []
    for path in sorted((folder / "records").glob("*__full__seed*.csv.gz")):
        series, _, seed = path.name[:-len(".csv.gz")].split("__")
        seed = int(seed.removeprefix("seed"))
        if seeds is not None and seed not in seeds:
            continue
        data = FitData.from_dataset(load_series(data_dir, series), split_fraction=config.metric_split)
        searched = float(trials.loc[(series, "full", seed), "test_rmse"])
        for rule, r in replay_trial(pd.read_csv(path), data, config, seed).items():
            rows.append({"series": series, "seed": seed, "rule": rule, "searched_rmse": searched, **r,
                         "ratio": r["rmse"] / refs[series]})
    if not rows:
        raise SystemExit(f"no records in {folder / 'records'}: run bench accuracy with --records")
    return pd.DataFrame(rows), refs, budget


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", type=Path, required=True, help="a bench accuracy folder made with --records")
    ap.add_argument("--data-dir", type=Path, default=None, help="default: the one its run.json records")
    args = ap.parse_args()
    threads = limit_threads()
    t0 = time.perf_counter()
    df, refs, budget = replay_folder(args.folder, args.data_dir, replay)
    seconds = time.perf_counter() - t0
    base = df[df.rule == "top5"].set_index(["series", "seed"]).rmse
    same = int(np.isclose(df[df.rule == "top5"].rmse, df[df.rule == "top5"].searched_rmse, rtol=1e-6).sum())
    n_runs = len(base)
    lines = []
    for rule in RULES:
        d = df[df.rule == rule].set_index(["series", "seed"])
        paired = d.rmse / base.reindex(d.index)
        med = d.ratio.groupby(level="series").median()
        omed = (d.oracle / refs.reindex(d.index.get_level_values(0)).values).groupby(level="series").median()
        lines.append(f"rule={rule} runs={len(d)} geomean_of_series_medians={geomean(med):.3f} "
                     f"worst={med.max():.2f} over_3x={int((med > 3).sum())} paired_vs_top5={geomean(paired):.3f} "
                     f"lower={int((paired < 1 - 1e-9).sum())} higher={int((paired > 1 + 1e-9).sum())} "
                     f"median_q={d.q.median():g} median_candidates={d.n.median():g} "
                     f"oracle_geomean={geomean(omed):.3f}")
    wide = df.pivot_table(index=["series", "seed"], columns="rule", values="ratio")[list(RULES)]
    qs = df.pivot_table(index=["series", "seed"], columns="rule", values="q")[list(RULES)]
    table = md_table(["series", "seed", *RULES],
                     [[s, k, *(f"{wide.loc[(s, k), r]:.2f} (q {int(qs.loc[(s, k), r])})" for r in RULES)]
                      for s, k in wide.index])
    method = __doc__.split("\n\n", 1)[1].split("Usage")[0].strip()
    sections = [
        f"{method}\n\nFolder `{args.folder}` ({budget} budget), {n_runs} trials with records. The replayed "
        f"`top5` choice equals the searched kernel's test RMSE in {same} of {n_runs} (a difference means a "
        "refit the search cut at its deadline).",
        "## Test RMSE / best published, per trial (q of the chosen kernel)\n\n" + table,
        f"Scoring time {seconds:.0f} s (one process).\n\n## Summary lines\n\n```\n" + "\n".join(lines) + "\n```",
    ]
    path = write_report(f"bench_candidates__{args.folder.name}", "Model choice: which candidates the tail score sees",
                        sections, threads)
    print("\n".join(lines))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""Which score should choose the returned kernel? Post hoc, on the records of budgeted searches.

A budgeted search refits each of its 5 lowest-BIC distinct kernels on the first 90 % of the
training range (the *head*) and returns the one whose refit best predicts the last 10 % (the
*tail*), scored by the joint posterior log-likelihood of the tail given the head
(``posterior_lml``; ``evocov_core/search/select.py``). By the chain rule that joint density
is a product of one-step-ahead predictions *within* the tail: once the first tail points are
conditioned on, a kernel with a short-lengthscale component predicts the next ones from its
neighbours. Only the first few tail points are an extrapolation, so the score mostly rewards
local fit, which BIC already ranks. The test asks something else: forecast every test point
from the training data alone. Two scores ask that of the tail:

``sopl``
    the sum of the tail points' *marginal* log predictive densities given the head (each point
    forecast from the head alone, with its own predictive variance);
``rmse``
    the root mean squared error of the head's forecast mean over the tail (lower is better),
    the test's own measure.

This script replays the choice on the full fits each trial recorded (``bench accuracy
--records``): the K lowest-BIC distinct kernels (K = 5, 10, 20) are refitted on the head
exactly as the search does it (the ``head`` stage, the same seeds), each refit is scored by
the three scores, and each rule's choice is looked up in the records (its test RMSE at the
full-data values, as the search returns them). The test part is never used to choose.

Usage (from the repository root)::

    python -m bench.bench_tail_metric --folder bench/results/accuracy/quick-reseed --seeds 0,1,2

Writes ``bench/results/bench_tail_metric__<folder name>.md`` and ends with one ``key=value`` line per rule.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import limit_threads, parse_tuple, write_report
from bench.bench_candidates import distinct_fits, replay_folder
from bench.common import geomean, md_table
from evocov_core.fitting.gp import NumericalFailure
from evocov_core.fitting.metrics import FitData, metric_value
from evocov_core.fitting.optimize import Start, fit_kernel
from evocov_core.runs.kernel_file import parse_expression
from evocov_core.search.stages import head_stage

SCORES = ("posterior_lml", "sopl", "rmse")
KS = (5, 10, 20)
RULES = ("bic", *(f"top{k}-{s}" for k in KS for s in SCORES))
BASE = "top5-posterior_lml"  # what the search does
_NUMERIC = (NumericalFailure, FloatingPointError, ArithmeticError, np.linalg.LinAlgError)


def tail_scores(kernel, data: FitData, z) -> dict[str, float]:
    """Each score of a head refit, oriented so that higher is better (−RMSE); −inf on failure."""
    out = {}
    for name in SCORES:
        try:
            with np.errstate(all="ignore"):
                v = metric_value(name, kernel, data, z)
        except _NUMERIC:
            v = math.nan
        v = -v if name == "rmse" else v
        out[name] = v if math.isfinite(v) else -math.inf
    return out


def replay(records: pd.DataFrame, data: FitData, config, seed: int) -> dict[str, dict]:
    """Each rule's choice: test RMSE, q, BIC rank, and the oracle (best test RMSE) of its candidates."""
    fits = distinct_fits(records)
    head, optim = head_stage(data, config.optim)
    scored: list[dict[str, float]] = []
    for i in range(min(max(KS), len(fits))):
        r = fits.loc[i]
        # The search seeds the refit of its i-th candidate (BIC rank i + 1) with (seed, 7919, i).
        rng = np.random.default_rng(np.random.SeedSequence([seed, 7919, i]))
        kernel = parse_expression(r.expression)
        fit = fit_kernel(kernel, head, optim, rng, Start(parse_tuple(r.theta), float(r.log_noise)))
        ok = fit is not None and fit.ok
        scored.append(tail_scores(kernel, data, fit.z) if ok else dict.fromkeys(SCORES, -math.inf))

    def pick(rows: list[int], score: str | None) -> int:
        if score is None or len(rows) == 1:
            return rows[0]
        s = np.array([scored[i][score] for i in rows])
        return rows[int(np.argmax(s))] if np.isfinite(s).any() else rows[0]

    out = {}
    for rule in RULES:
        if rule == "bic":
            rows, score = [0], None
        else:
            k, score = rule.removeprefix("top").split("-", 1)
            rows = list(range(min(int(k), len(fits))))
        i = pick(rows, score)
        out[rule] = {"rmse": float(fits.test_rmse[i]), "q": int(fits.q[i]), "rank": i + 1, "n": len(rows),
                     "oracle": float(fits.test_rmse[rows].min())}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", type=Path, required=True, help="a bench accuracy folder made with --records")
    ap.add_argument("--data-dir", type=Path, default=None, help="default: the one its run.json records")
    ap.add_argument("--seeds", default=None, help="comma-separated seeds to replay (default: every recorded seed)")
    args = ap.parse_args()
    keep = None if args.seeds is None else {int(k) for k in parse_tuple(args.seeds)}
    threads = limit_threads()
    t0 = time.perf_counter()
    df, refs, budget = replay_folder(args.folder, args.data_dir, replay, keep)
    seconds = time.perf_counter() - t0
    base = df[df.rule == BASE].set_index(["series", "seed"]).rmse
    same = int(np.isclose(df[df.rule == BASE].rmse, df[df.rule == BASE].searched_rmse, rtol=1e-6).sum())
    lines = []
    for rule in RULES:
        d = df[df.rule == rule].set_index(["series", "seed"])
        paired = np.log(d.rmse / base.reindex(d.index))
        med = d.ratio.groupby(level="series").median()
        omed = (d.oracle / refs.reindex(d.index.get_level_values(0)).values).groupby(level="series").median()
        se = paired.std(ddof=1) / math.sqrt(len(paired)) if len(paired) > 1 else math.nan
        lines.append(f"rule={rule} runs={len(d)} geomean_of_series_medians={geomean(med):.3f} "
                     f"geomean_of_runs={geomean(d.ratio):.3f} worst={med.max():.2f} over_3x={int((med > 3).sum())} "
                     f"paired_vs_search={math.exp(paired.mean()):.3f} se_log={se:.3f} "
                     f"lower={int((paired < -1e-9).sum())} higher={int((paired > 1e-9).sum())} "
                     f"median_q={d.q.median():g} oracle_geomean={geomean(omed):.3f}")
    wide = df.pivot_table(index=["series", "seed"], columns="rule", values="ratio")[list(RULES)]
    table = md_table(["series", "seed", *RULES],
                     [[s, k, *(f"{wide.loc[(s, k), r]:.2f}" for r in RULES)] for s, k in wide.index])
    method = __doc__.split("\n\n", 1)[1].split("Usage")[0].strip()
    sections = [
        f"{method}\n\nFolder `{args.folder}` ({budget} budget), {len(base)} trials with records. The replayed "
        f"`{BASE}` choice equals the searched kernel's test RMSE in {same} of {len(base)} (a difference means "
        "a refit the search cut at its deadline).",
        "## Test RMSE / best published, per trial\n\n" + table,
        f"Scoring time {seconds:.0f} s (one process). `paired_vs_search`: geometric mean over the trials of "
        f"the rule's test RMSE / `{BASE}`'s, `se_log` the standard error of its log; `oracle_geomean`: the "
        "best test RMSE among the rule's candidates (not a rule: it looks at the test).\n\n"
        "## Summary lines\n\n```\n" + "\n".join(lines) + "\n```",
    ]
    path = write_report(f"bench_tail_metric__{args.folder.name}", "Model choice: which tail score", sections,
                        threads)
    print("\n".join(lines))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""Learn the hyperparameter priors of :data:`~evocov_core.fitting.priors.CORPUS_PRIOR` on the development corpus.

Empirical Bayes as Corani, Benavoli and Zaffalon (2021) do it for their kernel: every series' training
part is fitted by maximum likelihood, and each hyperparameter's prior is the distribution fitted to its
estimates over the series. Here the hyperparameters are slots of expression trees, so the prior is by
the role a slot plays (:func:`~evocov_core.language.kernel.slot_roles`), in model units (training
inputs span [1, 2], outputs standardised), and the estimates come from a fixed set of structures
fitted on each series: the exponential-smoothing forms the search is seeded with
(:func:`~evocov_core.search.ets_seeds.ets_seeds`, at the series' season) and the textbook structures
of :data:`STRUCTURES`, each with the ``quick`` preset's optimiser settings and seed 0.

For each role, the prior is a normal on ``log θ`` whose mean is the median of the role's estimates
and whose standard deviation is 1.4826 times their median absolute deviation (robust to estimates run
to the box's edge), at least :data:`MIN_SD`; each series weighs one in total, however many of its
slots play the role (so that a series fitted with more periodic structures does not weigh more). Slots with more than
one role, and change-point slots, are left out. Only the training parts are read: no test point
helps learn a prior.

Usage (from the repository root)::

    python -m bench.learn_priors --data-dir bench/corpus/series --workers 2

Writes ``bench/results/priors/estimates.csv`` (every estimate), ``table.csv`` (the prior by role) and
``README.md``, and prints the table as :data:`~evocov_core.fitting.priors.CORPUS_PRIOR` holds it.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import RESULTS_DIR, command_line, limit_threads, map_jobs
from bench.common import load_series, md_table
from evocov_core.compute.provenance import git_state
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import fit_kernel
from evocov_core.language.kernel import slot_roles
from evocov_core.language.library import compose
from evocov_core.search.config import preset
from evocov_core.search.ets_seeds import ets_seeds

#: Textbook structures fitted beside the exponential-smoothing forms (GPSS notation).
STRUCTURES: tuple[str | list, ...] = ("SE", "RQ", "LIN", "PER", ["+", "SE", "LIN"], ["*", "PER", "SE"],
                                     ["+", ["*", "PER", "SE"], "LIN"], ["+", "SE", ["*", "PER", "SE"]],
                                     ["*", "LIN", "SE"])
#: The smallest standard deviation of a learned prior (log units): a prior never pins a value.
MIN_SD = 0.5
#: Fewer series than this with estimates of a role: no prior for it.
MIN_SERIES = 10
#: Series of more training points are fitted on a subset of this many (as the search fits long ones).
MAX_POINTS = 600


def estimates(job: tuple[Path, str]) -> list[dict]:
    """Every single-role slot's ``log θ`` and the ``log σ²_noise`` of each structure fitted on one series."""
    data_dir, name = job
    data = FitData.from_dataset(load_series(data_dir, name), max_points=MAX_POINTS)
    optim = preset("quick").optim
    kernels = [(k, s, f"ets{i}") for i, (k, s) in enumerate(ets_seeds(data))]
    kernels += [(compose(e), None, str(e)) for e in STRUCTURES]
    rows = []
    for kernel, start, label in kernels:
        fit = fit_kernel(kernel, data, optim, np.random.default_rng(0), start)
        if not fit.ok:
            continue
        roles = slot_roles(kernel)
        for slot, value in zip(kernel.slots, fit.theta, strict=True):
            if len(roles[slot]) == 1:
                rows.append({"series": name, "structure": label, "role": next(iter(roles[slot])), "z": value})
        rows.append({"series": name, "structure": label, "role": "noise", "z": fit.log_noise})
    return rows


def _weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    order = np.argsort(values, kind="stable")
    v, w = values[order], weights[order]
    return float(v[np.searchsorted(np.cumsum(w), 0.5 * w.sum())])


def prior_table(est: pd.DataFrame) -> pd.DataFrame:
    """The prior by role (``role, mean, sd, series``) from the estimates (the module docstring says how)."""
    out = []
    for role, g in est.groupby("role"):
        n_series = g["series"].nunique()
        if n_series < MIN_SERIES or role in ("location", "steepness", "window_centre", "window_width"):
            continue
        z = g["z"].to_numpy(dtype=float)
        w = 1.0 / g.groupby("series")["z"].transform("size").to_numpy(dtype=float)  # each series weighs 1
        med = _weighted_median(z, w)
        sd = max(MIN_SD, 1.4826 * _weighted_median(np.abs(z - med), w))
        out.append({"role": role, "mean": round(med, 3), "sd": round(sd, 3), "series": n_series})
    return pd.DataFrame(out, columns=["role", "mean", "sd", "series"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=Path("bench/corpus/series"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--series", default="", help="comma-separated names (default: every series of the folder)")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "priors")
    a = ap.parse_args()
    limit_threads()
    names = a.series.split(",") if a.series else sorted(p.stem for p in a.data_dir.glob("*.csv")
                                                       if p.stem not in ("splits", "manifest"))
    est = pd.DataFrame([r for rows in map_jobs(estimates, [(a.data_dir, n) for n in names], a.workers) for r in rows])
    table = prior_table(est)
    a.out.mkdir(parents=True, exist_ok=True)
    est.to_csv(a.out / "estimates.csv", index=False, float_format="%.6g")
    table.to_csv(a.out / "table.csv", index=False)
    noise = table[table.role == "noise"]
    roles = table[table.role != "noise"]
    git = git_state()
    (a.out / "README.md").write_text(
        "# Hyperparameter priors learned on the development corpus\n\n"
        f"`{command_line()}` at {git.get('commit', '?')[:7]}{' (dirty)' if git.get('dirty') else ''}: "
        f"{len(names)} series, {len(est):,} estimates. How they are learned: `bench/learn_priors.py`'s docstring. "
        "`evocov_core.fitting.priors.CORPUS_PRIOR` holds this table (a test checks it).\n\n"
        "Normal priors on log θ by slot role, in model units (inputs span [1, 2], outputs standardised):\n\n"
        + md_table(["role", "mean of log θ", "sd", "series"],
                   [[r.role, f"{r.mean:.3f}", f"{r.sd:.3f}", str(r.series)] for r in table.itertuples()]) + "\n",
        encoding="utf-8")
    print("roles=(" + ", ".join(f'("{r.role}", {r.mean}, {r.sd})' for r in roles.itertuples()) + ")")
    if not noise.empty:
        print(f"noise=({noise['mean'].iloc[0]}, {noise['sd'].iloc[0]})")
    print(f"wrote {a.out}; {len(est):,} estimates; {math.fsum(table.series):.0f} role-series")


if __name__ == "__main__":
    main()

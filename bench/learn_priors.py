"""Learn the hyperparameter priors of :data:`~evocov_core.fitting.priors.CORPUS_PRIOR` on the development corpus.

Empirical Bayes as Corani, Benavoli and Zaffalon (2021) do it for their kernel, and as a panel learns its own
priors (:mod:`evocov_core.panel.priors`, whose functions this script runs on the corpus): every series' training
part is fitted by maximum likelihood, and each hyperparameter's prior is the distribution fitted to its
estimates over the series. Here the hyperparameters are slots of expression trees, so the prior is by
the role a slot plays (:func:`~evocov_core.language.kernel.slot_roles`), in model units (training
inputs span [1, 2], outputs standardised), and the estimates come from a fixed set of structures
fitted on each series: the exponential-smoothing forms the search is seeded with
(:func:`~evocov_core.searches.ets_seeds.ets_seeds`, at the series' season) and the textbook structures
of :data:`~evocov_core.panel.priors.STRUCTURES`, each with the ``quick`` preset's optimiser settings and seed 0.

For each role, the prior is a normal on ``log θ`` whose mean is the median of the role's estimates
and whose standard deviation is 1.4826 times their median absolute deviation (robust to estimates run
to the box's edge), at least :data:`~evocov_core.panel.priors.MIN_SD`; each series weighs one in total,
however many of its slots play the role (so that a series fitted with more periodic structures does not
weigh more). Slots with more than one role, and change-point slots, are left out. Only the training parts
are read: no test point helps learn a prior.

Usage (from the repository root)::

    python -m bench.learn_priors --data-dir bench/corpus/series --workers 2

Writes ``bench/results/priors/estimates.csv`` (every estimate), ``table.csv`` (the prior by role) and
``README.md``, and prints the table as :data:`~evocov_core.fitting.priors.CORPUS_PRIOR` holds it.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pandas as pd

from bench.common import RESULTS_DIR, command_line, limit_threads, load_series, map_jobs, md_table
from evocov_core.compute.provenance import git_state
from evocov_core.fitting.metrics import FitData
from evocov_core.panel.priors import prior_from_estimates, role_estimates
from evocov_core.searches.presets import preset

#: Series of more training points are fitted on a subset of this many (as the search fits long ones).
MAX_POINTS = 600


def estimates(job: tuple[Path, str]) -> list[tuple[str, float]]:
    """One series' role estimates (:func:`evocov_core.panel.priors.role_estimates`, with the ``quick`` preset's
    optimiser and seed 0), as a panel learns its priors."""
    data_dir, name = job
    data = FitData.from_dataset(load_series(data_dir, name), max_points=MAX_POINTS)
    return role_estimates(data, preset("quick").optim, seed=0)


def prior_table(per_series: list[list[tuple[str, float]]], names: list[str]) -> pd.DataFrame:
    """The prior by role (``role, mean, sd, series``): :func:`evocov_core.panel.priors.prior_from_estimates`."""
    prior = prior_from_estimates(per_series, name="corpus")
    counts = {role: len({n for n, rows in zip(names, per_series, strict=True) if any(r == role for r, _ in rows)})
              for role in [*prior.table, "noise"]}
    rows = [{"role": r, "mean": m, "sd": sd, "series": counts[r]} for r, m, sd in prior.roles]
    if prior.noise is not None:
        rows.append({"role": "noise", "mean": prior.noise[0], "sd": prior.noise[1], "series": counts["noise"]})
    return pd.DataFrame(sorted(rows, key=lambda r: r["role"]), columns=["role", "mean", "sd", "series"])


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
    per_series = map_jobs(estimates, [(a.data_dir, n) for n in names], a.workers)
    est = pd.DataFrame([{"series": n, "role": r, "z": z} for n, rows in zip(names, per_series, strict=True)
                        for r, z in rows])
    table = prior_table(per_series, names)
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

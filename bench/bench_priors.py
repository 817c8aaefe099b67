"""Would hyperparameter priors (MAP instead of maximum likelihood) make the searched kernels forecast better?

Post hoc, on the records of budgeted searches (``bench accuracy --records``). Issue 27 lists
priors first among the candidate causes of wild forecasts: AutoGP and GPSS put priors on their
hyperparameters, so that a wild period or lengthscale costs something. Here each trial's
returned kernel and its 5 lowest-BIC distinct kernels keep their structure and are refitted to
the posterior mode, one L-BFGS-B run from their maximum-likelihood values, inside the same box
(``slot_bounds``); their test RMSE is compared with the recorded one, trial by trial. The
search is not rerun: this measures what priors do to the kernels a search finds, not to which
kernels it finds.

The prior is log-normal on every slot, by the role the slot plays in the tree
(:func:`~evocov_core.language.kernel.slot_roles`), in model units (training inputs span [1, 2],
outputs standardised), as AutoGP's (``log θ ~ N(−1.5, 1)`` on a unit time span) where the
parametrisations agree:

=========================  =====================================================================
role                       prior on ``log θ`` (mean, sd)
=========================  =====================================================================
lengthscale                (−1.5, 1): a lengthscale of a fifth of the span
periodic lengthscale       (−1.5, 1)
frequency ``ω = 2π/p``     (log 2π + 1.5, 1): a period of a fifth of the span
value, dot-product scale   (0, 1.5): about unit variance
dot-product shift          (0, 1): the trend's zero near the start of the data
exponent                   (0, 1): an exponent near 1
noise variance             (−3, 2): 5 % of the variance
change-point slots         none (their box already keeps them inside the data)
=========================  =====================================================================

A slot with several roles takes the mean of their means and sds. ``--scale`` multiplies every
sd (0.5: a prior four times as strong in precision).

Usage (from the repository root)::

    python -m bench.bench_priors --folder bench/results/corpus/quick-35-cpexp --variant cp-by-expansion \\
        --data-dir bench/corpus/series --scales 1,0.5 --workers 2 --name corpus-quick-35-cpexp

Writes ``bench/results/bench_priors__<name>.md`` and ``…csv`` (one row per trial, kernel and scale).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize

from bench._common import RESULTS_DIR, limit_threads, map_jobs, recorded_trials, write_report
from bench.bench_choice import as_fit, distinct_fits, folder_setup, reference, trial_data
from bench.common import geomean, md_table
from evocov_core.fitting.gp import lml_and_grad, posterior
from evocov_core.fitting.metrics import FitData, rmse
from evocov_core.fitting.optimize import NUMERIC_ERRORS, FitResult, OptimConfig, slot_bounds
from evocov_core.fitting.priors import HyperPrior, penalty
from evocov_core.language.kernel import Kernel
from evocov_core.runs.kernel_file import load_kernel_file

#: (mean, sd) of ``log θ`` by slot role; model units (see the module docstring).
PRIORS: dict[str, tuple[float, float]] = {
    "lengthscale": (-1.5, 1.0),
    "periodic_lengthscale": (-1.5, 1.0),
    "frequency": (math.log(2 * math.pi) + 1.5, 1.0),
    "value": (0.0, 1.5),
    "scale": (0.0, 1.5),
    "shift": (0.0, 1.0),
    "exponent": (0.0, 1.0),
}
#: (mean, sd) of the log noise variance (in units of the outputs' variance).
NOISE_PRIOR = (-3.0, 2.0)
#: Evaluations of the MAP refit (one L-BFGS-B run from the maximum-likelihood values).
MAP_EVALS = 200


def prior(kernel: Kernel, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Means and precisions of the Gaussian prior on ``z = [log θ, log σ²]``, shape (p + 1,) each;
    precision 0 where a slot has no prior (its change-point roles only). Every sd times ``scale``."""
    return HyperPrior(roles=tuple((r, m, sd * scale) for r, (m, sd) in PRIORS.items()),
                      noise=(NOISE_PRIOR[0], NOISE_PRIOR[1] * scale)).terms(kernel)


def map_refit(fit: FitResult, data: FitData, optim: OptimConfig, scale: float) -> tuple[float, float]:
    """Test RMSE (original units) of ``fit``'s kernel at its posterior mode, and the log-space
    distance the mode moved from the maximum-likelihood values (NaN, NaN if it fails)."""
    mean, precision = prior(fit.kernel, scale)
    lo, hi = slot_bounds(fit.kernel, data, optim)

    def fun(z: np.ndarray) -> tuple[float, np.ndarray]:
        try:
            v, g, _ = lml_and_grad(fit.kernel, data.inputs, data.y, z[:-1], float(z[-1]))
        except NUMERIC_ERRORS:
            return 1e10, np.zeros_like(z)
        if not (math.isfinite(v) and np.all(np.isfinite(g))):
            return 1e10, np.zeros_like(z)
        p, dp = penalty(mean, precision, z)
        return -v + p, -g + dp

    z = minimize(fun, np.clip(fit.z, lo, hi), jac=True, method="L-BFGS-B", bounds=list(zip(lo, hi, strict=True)),
                 options={"maxfun": MAP_EVALS}).x
    try:
        with np.errstate(all="ignore"):
            post = posterior(fit.kernel, data.inputs, data.y, z[:-1], float(z[-1]), data.X_test, mean_only=True)
    except NUMERIC_ERRORS:
        return math.nan, math.nan
    return rmse(data.y_test, post.mean * data.y_std + data.y_mean), float(np.linalg.norm(z - fit.z))


def trial_rows(job: tuple) -> list[dict]:
    """Rows (series, seed, kernel, scale, ml, map, moved) of one trial."""
    records, series, seed, kernel_file, data_dir, config, scales = job
    data = trial_data(data_dir, config, series)
    fits = distinct_fits(pd.read_csv(records))
    kernels = [("returned", load_kernel_file(kernel_file).to_fit(data.n))]
    kernels += [(f"bic{i}", as_fit(fits.loc[i], data.n)) for i in range(min(5, len(fits)))]
    rows = []
    for which, fit in kernels:
        for scale in scales:
            value, moved = map_refit(fit, data, config.optim, scale)
            rows.append({"series": series, "seed": seed, "kernel": which, "scale": scale, "ml": fit.test_rmse,
                         "map": value, "moved": moved})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folder", type=Path, required=True, help="a bench accuracy folder made with --records")
    ap.add_argument("--data-dir", type=Path, default=None, help="default: the one its run.json records")
    ap.add_argument("--variant", default="full", help="the variant whose trials are refitted (default: full)")
    ap.add_argument("--scales", default="1,0.5", help="comma-separated factors on every prior sd")
    ap.add_argument("--name", default=None, help="the report's name after bench_priors__ (default: the folder's)")
    ap.add_argument("--workers", type=int, default=1, help="trials refitted in parallel processes")
    args = ap.parse_args()
    threads = limit_threads()
    scales = tuple(float(s) for s in args.scales.split(","))
    data_dir, config = folder_setup(args.folder, args.data_dir, args.variant)
    jobs = [(records, t.series, int(t.seed), args.folder / str(t.kernel_file), data_dir, config, scales)
            for records, t in recorded_trials(args.folder, args.variant)]
    df = pd.DataFrame([row for res in map_jobs(trial_rows, jobs, args.workers) for row in res])
    name = args.name or args.folder.name
    df.to_csv(RESULTS_DIR / f"bench_priors__{name}.csv", index=False)
    refs = reference(args.folder, data_dir, sorted(df.series.unique()))
    table, lines = [], []
    for (which, scale), d in df.groupby(["kernel", "scale"], sort=False):
        lr = np.log(d["map"] / d["ml"]).replace([np.inf, -np.inf], np.nan).dropna()
        ratio = (d["map"] / refs.reindex(d.series).to_numpy()).replace([np.inf, -np.inf], np.nan).dropna()
        base = (d["ml"] / refs.reindex(d.series).to_numpy()).replace([np.inf, -np.inf], np.nan).dropna()
        se = lr.std(ddof=1) / math.sqrt(len(lr))
        table.append([which, f"{scale:g}", str(len(lr)), f"{geomean(base):.3f}", f"{geomean(ratio):.3f}",
                      f"{np.percentile(ratio, 90):.2f}", f"{ratio.max():.2f}", f"{math.exp(lr.mean()):.3f}",
                      f"{se:.3f}", f"{int((lr < -0.01).sum())}/{int((lr > 0.01).sum())}",
                      f"{d.moved.median():.2f}"])
        lines.append(f"kernel={which} scale={scale:g} paired={math.exp(lr.mean()):.4f} se_log={se:.4f} "
                     f"single_run_geomean={geomean(ratio):.4f} ml_geomean={geomean(base):.4f}")
    summary = md_table(["kernel", "prior sd ×", "trials", "ML: geomean", "MAP: geomean", "MAP: p90", "MAP: worst",
                        "paired MAP / ML", "SE of the log", "lower / higher (> 1 %)", "median move of z"],
                       table, "llrrrrrrrrr")
    write_report(f"bench_priors__{name}", "Hyperparameter priors: the searched kernels refitted by MAP", [
        __doc__.split("\n\n", 1)[1].split("Usage")[0].strip(),
        f"Folder `{args.folder}`, variant `{args.variant}`, {len(jobs)} trials. Ratios are test RMSE over the "
        "reference RMSE of the series (the best published on TSDL, AutoETS on the same split on the development "
        "corpus); `paired` is the geometric mean, trial by trial, of the MAP refit's test RMSE over the maximum-"
        "likelihood fit's, with the standard error of the mean log ratio.",
        summary, "```\n" + "\n".join(lines) + "\n```"], threads)


if __name__ == "__main__":
    main()

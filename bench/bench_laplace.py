"""A Laplace evidence in place of BIC for the model choice's places (issue 55, item 3).

A budgeted search offers its model choice the five lowest-BIC distinct kernels (the seeds' forms
among them whatever their BIC: :func:`bench.bench_forms.candidate_set`), and the choice keeps the one
whose forecasts from four earlier origins have the lowest CRPS, an evolved kernel over the best
state-space form only below 0.8 × its CRPS (``choice = "origins"``, ``form_margin = 0.8``). BIC
charges every hyperparameter ``log n``; a Laplace evidence charges each by how well the data pin it
down, against a prior: a kernel whose extra hyperparameters the data leave loose costs less than BIC
says, one whose hyperparameters are tightly fixed more. This script replays, post hoc on the full fits
that ``bench accuracy --records`` kept, the same choice with its places given by each score:

``bic``
    the search's places (the choice rebuilt, with the fitted values' CRPS);
``laplace``
    the places by ``−2 log Z``, the Laplace approximation at the recorded (maximum-likelihood) values
    with :data:`~evocov_core.fitting.priors.CORPUS_PRIOR` on ``z = (log θ, log σ²_noise)``:
    ``log Z ≈ LML + log p(z) + (p/2) log 2π − ½ log det A``, ``A`` the Hessian of
    ``−LML − log p(z)`` (central differences of the analytic gradient, eigenvalues clipped at the
    prior's precision). A slot without a prior (a change point's location and steepness) gets a
    normal of standard deviation :data:`LOOSE_SD` around its value. Only the :data:`M` lowest-BIC
    distinct kernels of each side (seeds' fits, the search's own) are scored: the others keep no place.
``…  oracle``
    the lowest test RMSE among that score's places (a bound, not a rule).

The test part is never used but in the columns that report it.

Usage (from the repository root; folders made with ``--records``)::

    python -m bench.bench_laplace --folder <seed 0 folder> --folder <seed 1 folder> \\
        --data-dir bench/corpus/series --name corpus-60

Writes ``bench/results/bench_laplace__<name>.md`` and ``….csv`` (one row per trial and score).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import RESULTS_DIR, limit_threads, map_jobs, paired_rules_table, write_report
from bench.accuracy import records_path
from bench.bench_choice import add_folder_study_args, as_fit, folder_study_jobs, trial_data
from bench.bench_forms import ahead_by, best_scored, candidate_set
from evocov_core.fitting.gp import NumericalFailure
from evocov_core.fitting.metrics import FitData, loss_and_grad
from evocov_core.fitting.optimize import FitResult
from evocov_core.fitting.priors import CORPUS_PRIOR, HyperPrior, penalty
from evocov_core.language.grammar import has_statespace
from evocov_core.search.rules import SEEDED
from evocov_core.search.select import INDEFINITE, indefiniteness
from evocov_core.search.validate import origin_scores

#: Distinct kernels of each side (the seeds' fits, the search's own) scored by the Laplace evidence.
M = 25
#: Standard deviation of the stand-in prior of a slot the prior table has no role for.
LOOSE_SD = 2.0
#: Central-difference step on ``z`` for the Hessian.
STEP = 1e-4
#: What a kernel's evaluation raises when the numbers fail (the search's own list of them).
NUMERIC = (NumericalFailure, np.linalg.LinAlgError, ArithmeticError, ValueError)


def laplace_score(fit: FitResult, data: FitData, prior: HyperPrior = CORPUS_PRIOR) -> tuple[float, int]:
    """``−2 log Z`` by the Laplace approximation at ``fit``'s values (module docstring), on BIC's scale,
    and how many eigenvalues of the Hessian were clipped; ``(inf, 0)`` when the gradient fails."""
    z = np.asarray(fit.z, dtype=np.float64)
    mean, prec = prior.terms(fit.kernel)
    loose = prec == 0
    mean, prec = np.where(loose, z, mean), np.where(loose, 1.0 / LOOSE_SD ** 2, prec)
    p = z.size
    H = np.empty((p, p))
    try:
        with np.errstate(all="ignore"):
            for i in range(p):
                e = np.zeros(p)
                e[i] = STEP
                H[:, i] = (loss_and_grad("lml", fit.kernel, data, z + e)[1]
                           - loss_and_grad("lml", fit.kernel, data, z - e)[1]) / (2 * STEP)
    except NUMERIC:
        return math.inf, 0
    if not np.all(np.isfinite(H)):
        return math.inf, 0
    A = 0.5 * (H + H.T) + np.diag(prec)
    eig = np.linalg.eigvalsh(A)
    floor = float(prec.min())
    clipped = int((eig < floor).sum())
    log_det = float(np.sum(np.log(np.maximum(eig, floor))))
    log_prior = 0.5 * float(np.sum(np.log(prec / (2 * math.pi)))) - penalty(mean, prec, z)[0]
    log_z = fit.lml + log_prior + 0.5 * p * math.log(2 * math.pi) - 0.5 * log_det
    return -2.0 * log_z, clipped


def laplace_places(records: pd.DataFrame, data: FitData) -> tuple[pd.DataFrame, int]:
    """The choice's places by the Laplace evidence: :func:`candidate_set` over the :data:`M` lowest-BIC
    distinct kernels of each side, their ``bic`` column replaced by ``−2 log Z``; and the clipped
    eigenvalues summed."""
    ok = records[(records.status == "ok") & np.isfinite(records.bic)].sort_values("bic", kind="stable")
    seeded = ok.origin.isin(SEEDED)
    top = pd.concat([ok[seeded].drop_duplicates("canonical").head(M),
                     ok[~seeded].drop_duplicates("canonical").head(M)])
    scores = [laplace_score(as_fit(r, data.n), data) for _, r in top.iterrows()]
    top = top.assign(bic=[s for s, _ in scores])
    return candidate_set(top[np.isfinite(top.bic)]), sum(c for _, c in scores)


def choose(places: pd.DataFrame, data: FitData, cache: dict, margin: float) -> tuple[float, float, int]:
    """The preset's choice among ``places``, an evolved kernel kept over the best form only below ``margin``
    times its CRPS (the folder's ``form_margin``): (its test RMSE, the places' lowest, how many hold a form)."""
    rows = []
    for _, r in places.iterrows():
        key = (r.canonical, float(r.lml))
        if key not in cache:
            fit = as_fit(r, data.n)
            try:
                crps, valid = origin_scores(data, fit).mean_crps, not indefiniteness(data, fit) > INDEFINITE
            except NUMERIC:  # as the search's choice: no score, never chosen while another is valid
                crps, valid = math.inf, False
            cache[key] = (crps, valid, has_statespace(fit.kernel.tokens))
        crps, valid, form = cache[key]
        rows.append({"crps": crps, "valid": valid, "form": form, "test_rmse": float(r.test_rmse)})
    c = pd.DataFrame(rows)
    pick = best_scored(c, "crps")
    if pick is None:
        return float(c.test_rmse.iloc[0]), float(c.test_rmse.min()), int(c.form.sum())
    best_form = best_scored(c[c.form], "crps") if c.form.any() else None
    if not pick.form and best_form is not None and not ahead_by(pick, best_form, "crps", margin):
        pick = best_form
    return float(pick.test_rmse), float(c.test_rmse.min()), int(c.form.sum())


def series_rows(job: tuple) -> list[dict]:
    """Every trial of one series: the choice with BIC's places and with the Laplace evidence's."""
    data_dir, config, series, trials, _ref = job
    data = trial_data(data_dir, config, series)
    rows = []
    for t in trials:
        records = pd.read_csv(Path(t["folder"]) / records_path(series, t["variant"], int(t["seed"])))
        cache: dict = {}
        by_bic = candidate_set(records)
        by_laplace, clipped = laplace_places(records, data)
        same = len(set(by_bic.canonical) & set(by_laplace.canonical))
        for score, places in (("bic", by_bic), ("laplace", by_laplace)):
            pick, oracle, forms = choose(places, data, cache, config.form_margin)
            base = {"series": series, "seed": int(t["seed"]), "recorded": float(t["test_rmse"]),
                    "shared_places": same, "clipped": clipped, "forms": forms,
                    "median_q": float(places.q.median())}
            rows.append({**base, "rule": score, "rmse": pick})
            rows.append({**base, "rule": f"{score} oracle", "rmse": oracle})
    print(series, flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_folder_study_args(ap, "bench_laplace", "a bench accuracy folder made with --records")
    args = ap.parse_args()
    threads = limit_threads()
    folders, trials, jobs = folder_study_jobs(args)
    name = args.name or folders[0].name
    refs = {j[2]: j[4] for j in jobs}
    df = pd.DataFrame([r for rows in map_jobs(series_rows, jobs, args.workers) for r in rows])
    df["ratio"] = df.rmse / df.series.map(refs)
    df.to_csv(RESULTS_DIR / f"bench_laplace__{name}.csv", index=False)
    bic = df[df.rule == "bic"].set_index(["series", "seed"])
    same = float(np.mean(np.isclose(bic.rmse, bic.recorded, rtol=1e-6)))
    table, lines = paired_rules_table(df, "bic", ["bic", "laplace", "bic oracle", "laplace oracle"], "BIC's places",
                                      key="paired_vs_bic")
    shared = bic.shared_places.value_counts().sort_index()
    write_report(f"bench_laplace__{name}", "A Laplace evidence in place of BIC for the choice's places", [
        __doc__.split("\n\n", 1)[1].split("Usage")[0].strip(),
        f"Folder{'s' * (len(folders) > 1)} {', '.join(f'`{f}`' for f in folders)}, variant `{args.variant}`, "
        f"{trials.series.nunique()} series, {len(bic)} trials; the rebuilt choice with BIC's places returns the "
        f"recorded kernel (test RMSE within 1e-6) in {same:.0%} of them. Places the two scores share, of 5: "
        + ", ".join(f"{k}: {v} trials" for k, v in shared.items())
        + f". Median q of the places: BIC {bic.median_q.median():g}, Laplace "
        f"{df[df.rule == 'laplace'].median_q.median():g}. Ratios: test RMSE over the folder's reference; paired "
        "against BIC's places, the geometric mean over series of each series' mean log ratio over its seeds.",
        table, "```\n" + "\n".join(lines) + "\n```"], threads)


if __name__ == "__main__":
    main()

"""The seeds' state-space forms or the evolved kernels: which should the search return?

Every search is seeded with the GP forms of the models ETS chooses among (``wiener``, ``iwiener``,
``damped``: :mod:`evocov_core.search.ets_seeds`), offered to the model choice whatever their BIC. Over
the corpus runs of issue 55 two thirds of the returned kernels hold such a form and forecast at about
AutoETS's level; the evolved ones are sometimes much better and carry the heavy tail. This script
replays, post hoc on the full fits that ``bench accuracy --records`` kept, choices between the two:

``preset``
    the search's choice rebuilt: of the five lowest-BIC distinct kernels (the seeds' forms among them
    whatever their BIC, :meth:`~evocov_core.search.candidates.Candidates.top`), the valid one whose refit
    on the first 90 % of the training range gives the last 10 % the highest density
    (:func:`~evocov_core.search.select.tail_score`, ``choice = "tail"``);
``origins`` / ``refit``
    the lowest mean CRPS of the forecasts from four earlier origins, with the full-data values
    (``choice = "origins"``) or each candidate refitted at each origin first (``"refit_origins"``);
``forms by …``
    only the kernels that hold a state-space form (the choice's candidates and every seed form, offered
    or not), by the same scores or the lowest BIC; ``seed forms …``: the same where "a form" is one of
    the seeds' forms exactly, not a kernel evolved from one;
``forms unless evolved m (score)``
    the choice by that score when it holds a form, or when it is ahead of the best form by ``m`` (tail:
    ``m`` nats per tail point; CRPS: below ``m`` times the form's); else the best form;
``prior λ (score)``
    a structure prior learned leave-one-series-out (issue 55, item 4): each subtree's share of the
    trials, *of the other series*, whose best kernel holds it among the trials whose candidates hold it
    (the best by the test RMSE: what forecast best); a candidate's log prior is the mean log share of
    its subtrees, added ``λ`` times to the tail score per point, or subtracted from the log CRPS
    (:func:`structure_prior`);
``oracle`` / ``oracle forms``
    the lowest test RMSE among the candidates, among their forms (a bound, not a rule).

The test part is never used by a rule but through the prior, and there only other series'. Stage one
scores the candidates (``bench/results/bench_forms__<name>__candidates.csv.gz``); the rules are applied
to that table (``--candidates``), so a new rule costs no fit.

Usage (from the repository root; folders made with ``--records``)::

    python -m bench.bench_forms --folder bench/results/corpus/<seed 0> --folder …/<seed 1> \\
        --data-dir bench/corpus/series --name corpus

Writes ``bench/results/bench_forms__<name>.md`` and ``….csv.gz`` (one row per trial and rule).
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from bench._common import RESULTS_DIR, limit_threads, map_jobs, paired_rules_table, write_report
from bench.accuracy import records_path
from bench.bench_choice import add_folder_study_args, as_fit, folder_study_jobs, trial_data
from evocov_core.fitting.optimize import fit_kernel
from evocov_core.language.grammar import has_statespace
from evocov_core.runs.kernel_file import parse_expression
from evocov_core.search.candidates import seed_places
from evocov_core.search.rules import ETS_SEED, SEEDED
from evocov_core.search.select import INDEFINITE, indefiniteness, tail_score
from evocov_core.search.stages import head_stage
from evocov_core.search.validate import origin_scores

PRESET = "preset"
#: Places of the model choice (``select_top`` of the budgeted presets).
K = 5
#: The candidates' scores (stage one's columns) and the rules' names for them.
SCORES = {"tail": PRESET, "crps": "origins", "crps_refit": "refit"}
#: Scores where higher is better (the tail's log density per point).
HIGHER = frozenset({"tail"})
#: How far an evolved kernel must be ahead of the best form to be kept: nats per tail point, CRPS factors.
MARGINS = {"tail": (0.0, 0.1, 0.3, 1.0), "crps": (0.9, 0.8, 0.7), "crps_refit": (0.9, 0.8, 0.7)}
LAMBDAS = (0.1, 0.3, 1.0)
#: Subtrees shorter than this many tokens (a leaf, a hyperparameter) say nothing of a structure.
MIN_SUBTREE = 3


def subtrees(expression: str) -> list[str]:
    """The distinct subtrees of a kernel of at least :data:`MIN_SUBTREE` tokens, hyperparameter names
    anonymised (``hp``), as prefix strings."""
    k = parse_expression(expression)
    out = set()
    for i in range(len(k.tokens)):
        sub = k.subtree(i)
        if len(sub) >= MIN_SUBTREE:
            out.add(" ".join(re.sub(r"^hp\d+$", "hp", t) for t in sub))
    return sorted(out)


def candidate_set(records: pd.DataFrame) -> pd.DataFrame:
    """The model choice's candidates rebuilt from a trial's records, lowest BIC first.

    As :class:`~evocov_core.search.candidates.Candidates` keys them: a seed's fit
    (:data:`~evocov_core.search.rules.SEEDED`) apart from the search's own fits of the same kernel, the
    lowest-BIC fit of each canonical kernel on either side; the seeds on the places
    :func:`~evocov_core.search.candidates.seed_places` gives them whatever their BIC."""
    ok = records[(records.status == "ok") & np.isfinite(records.bic)].sort_values("bic", kind="stable")
    seeded = ok.origin.isin(SEEDED)
    seeds = ok[seeded].drop_duplicates("canonical").assign(seeded=True)
    others = ok[~seeded].drop_duplicates("canonical").assign(seeded=False)
    n = seed_places(K, len(seeds), len(others))
    return pd.concat([seeds.head(n), others.head(K - n)]).sort_values("bic", kind="stable")


def series_rows(job: tuple) -> list[dict]:
    """Stage one: every candidate of every trial of one series, scored."""
    data_dir, config, series, trials, _ref, reuse = job
    data = trial_data(data_dir, config, series)
    head_data, refit = head_stage(data, config.optim)
    n_tail = int(data.split.y_v.size) if data.split is not None else 0
    rows = []
    for t in trials:
        records = pd.read_csv(Path(t["folder"]) / records_path(series, t["variant"], int(t["seed"])))
        seed_forms = set(records.loc[records.origin.eq(ETS_SEED), "canonical"])
        cands = candidate_set(records)
        # The seeds' forms the choice did not offer (more than its places allow).
        extra = records[records.status.eq("ok") & records.origin.eq(ETS_SEED)]
        extra = extra.sort_values("bic", kind="stable").drop_duplicates("canonical")
        extra = extra[~extra.canonical.isin(cands[cands.seeded].canonical)]
        for pool, frame in (("choice", cands), ("other form", extra)):
            for rank, r in enumerate(frame.itertuples(index=False)):
                fit = as_fit(pd.Series(r._asdict()), data.n)
                key = (series, int(t["seed"]), r.canonical, float(r.bic))
                if key in reuse:  # scored by an earlier run of stage one (the refits are deterministic)
                    rows.append({**reuse[key], "pool": pool, "rank": rank, "recorded": float(t["test_rmse"])})
                    continue
                head = fit_kernel(fit.kernel, head_data, refit, np.random.default_rng([int(t["seed"]), 7919]),
                                  fit.start())
                full = origin_scores(data, fit)
                refitted = origin_scores(data, fit, refit=refit, seed=(int(t["seed"]), 2))
                rows.append({"series": series, "seed": int(t["seed"]), "pool": pool, "rank": rank,
                             "canonical": r.canonical, "expression": r.expression, "q": int(r.q), "bic": float(r.bic),
                             "form": has_statespace(fit.kernel.tokens), "ets": r.canonical in seed_forms,
                             "tail": tail_score(data, head) / max(n_tail, 1), "crps": full.mean_crps,
                             "crps_refit": refitted.mean_crps,
                             "valid": not indefiniteness(data, fit) > INDEFINITE, "test_rmse": float(r.test_rmse),
                             "recorded": float(t["test_rmse"]), "subtrees": "|".join(subtrees(r.expression))})
    print(series, flush=True)
    return rows


def best_scored(frame: pd.DataFrame, col: str) -> pd.Series | None:
    """The valid row of ``frame`` (any when none is) with the best finite ``col``: the highest tail score,
    the lowest CRPS."""
    pool = frame[frame.valid] if frame.valid.any() else frame
    v = pool[col].replace([np.inf, -np.inf], np.nan)
    if v.isna().all():
        return None
    return pool.loc[v.idxmax() if col in HIGHER else v.idxmin()]


def structure_prior(cands: pd.DataFrame, series: str) -> dict[str, float]:
    """Log share, per subtree, of the trials of series other than ``series`` whose best candidate
    (lowest test RMSE) holds it, among those whose candidates hold it (add-one smoothed)."""
    other = cands[(cands.series != series) & (cands.pool == "choice")]
    held, won = {}, {}
    for _, trial in other.groupby(["series", "seed"]):
        best = trial.loc[trial.test_rmse.idxmin()]
        for s in set().union(*(set(x.split("|")) for x in trial.subtrees if x)):
            held[s] = held.get(s, 0) + 1
        for s in best.subtrees.split("|") if best.subtrees else ():
            won[s] = won.get(s, 0) + 1
    return {s: math.log((won.get(s, 0) + 1) / (n + 2)) for s, n in held.items()}


def log_prior(subs: str, prior: dict[str, float]) -> float:
    """A candidate's log prior: the mean of its subtrees' (unseen ones at log ½, no evidence)."""
    vals = [prior.get(s, math.log(0.5)) for s in subs.split("|") if s] if subs else []
    return float(np.mean(vals)) if vals else math.log(0.5)


def ahead_by(pick: pd.Series, form: pd.Series, col: str, margin: float) -> bool:
    """Whether ``pick`` beats ``form`` by ``margin``: tail scores (per point) by that many nats,
    CRPS by that factor."""
    return pick[col] > form[col] + margin if col in HIGHER else pick[col] < margin * form[col]


def trial_rules(trial: pd.DataFrame, prior: dict[str, float]) -> dict[str, float]:
    """Each rule's test RMSE on one trial's scored candidates (module docstring)."""
    cands = trial[trial.pool == "choice"]
    out: dict[str, float] = {}
    for col, name in SCORES.items():
        pick = best_scored(cands, col)
        out[name] = pick.test_rmse if pick is not None else cands.test_rmse.iloc[0]
    # Two readings of "the forms": any kernel with a state-space term, or exactly the seeds' forms.
    for kind, label in (("form", "forms"), ("ets", "seed forms")):
        forms = cands[cands[kind]]
        every = trial[trial[kind]]
        for col, name in SCORES.items():
            pick = best_scored(cands, col)
            best_form = best_scored(forms, col) if len(forms) else None
            for m in MARGINS[col]:
                keep = pick is None or best_form is None or pick[kind] or ahead_by(pick, best_form, col, m)
                out[f"{label} unless evolved {m:g} ({name})"] = (
                    (pick.test_rmse if pick is not None else math.nan) if keep else best_form.test_rmse)
            if len(every) and (b := best_scored(every, col)) is not None:
                out[f"{label} by {name}"] = b.test_rmse
        if len(every):
            out[f"{label} by BIC"] = every.loc[every.bic.idxmin()].test_rmse
            out[f"oracle {label}"] = every.test_rmse.min()
    lp = np.array([log_prior(s, prior) for s in cands.subtrees])
    for lam in LAMBDAS:
        for col, name in SCORES.items():
            v = cands[col].to_numpy(dtype=float)
            score = v + lam * lp if col in HIGHER else np.log(v) - lam * lp
            c = cands.assign(score=-score if col in HIGHER else score)
            b = best_scored(c, "score")
            out[f"prior {lam:g} ({name})"] = b.test_rmse if b is not None else math.nan
    out["oracle"] = cands.test_rmse.min()
    return out


def rule_names(df: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(df.rule))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_folder_study_args(ap, "bench_forms", "a bench accuracy folder made with --records")
    ap.add_argument("--candidates", type=Path, default=None,
                    help="a candidates table of an earlier run of this script: apply the rules only")
    ap.add_argument("--reuse", type=Path, default=None,
                    help="a candidates table of an earlier run: its scored kernels are not scored again")
    args = ap.parse_args()
    threads = limit_threads()
    folders, trials, jobs = folder_study_jobs(args)
    name = args.name or folders[0].name
    refs = {j[2]: j[4] for j in jobs}
    cand_csv = RESULTS_DIR / f"bench_forms__{name}__candidates.csv.gz"
    if args.candidates is not None:
        cands = pd.read_csv(args.candidates, keep_default_na=False, na_values=[""])
    else:
        reuse: dict[tuple, dict] = {}
        if args.reuse is not None:
            old = pd.read_csv(args.reuse, keep_default_na=False, na_values=[""])
            reuse = {(r["series"], int(r["seed"]), r["canonical"], float(r["bic"])): r for r in old.to_dict("records")}
        jobs = [(*j, {k: v for k, v in reuse.items() if k[0] == j[2]}) for j in jobs]
        cands = pd.DataFrame([r for rows in map_jobs(series_rows, jobs, args.workers) for r in rows])
        cands.to_csv(cand_csv, index=False)
    cands["subtrees"] = cands.subtrees.fillna("").astype(str)
    priors = {s: structure_prior(cands, s) for s in cands.series.unique()}
    rows = []
    for (series, seed), trial in cands.groupby(["series", "seed"]):
        for rule, v in trial_rules(trial, priors[series]).items():
            rows.append({"series": series, "seed": seed, "rule": rule, "rmse": v, "ratio": v / refs[series]})
    df = pd.DataFrame(rows)
    df.to_csv(RESULTS_DIR / f"bench_forms__{name}.csv.gz", index=False)
    pre = df[df.rule == PRESET].set_index(["series", "seed"]).rmse
    rec = cands.groupby(["series", "seed"]).recorded.first()
    same = float(np.mean(np.isclose(pre, rec.reindex(pre.index), rtol=1e-6)))
    table, lines = paired_rules_table(df, PRESET, rule_names(df), "preset", key="paired_vs_preset")
    write_report(f"bench_forms__{name}", "The seeds' state-space forms or the evolved kernels", [
        __doc__.split("\n\n", 1)[1].split("Usage")[0].strip(),
        f"Folder{'s' * (len(folders) > 1)} {', '.join(f'`{f}`' for f in folders)}, variant `{args.variant}`, "
        f"{trials.series.nunique()} series, {len(pre)} trials; the rebuilt preset returns the recorded kernel "
        f"(test RMSE within 1e-6) in {same:.0%} of them. Ratios: test RMSE over the folder's reference; "
        "paired against the preset, the geometric mean over series of each series' mean log ratio over its seeds.",
        table, "```\n" + "\n".join(lines) + "\n```"], threads)
    print("\n".join(lines))
    print(f"rebuilt preset = recorded in {same:.0%} of trials")


if __name__ == "__main__":
    main()

"""Would a noise that grows with the level, as ETS's multiplicative error, make the forms forecast better?

A diagnosis for issue 55 before any change to the GP. ``bench_ets_types`` found that on the corpus
series where AutoETS chooses a multiplicative error and a trend, ETS with additive errors is 1.16 ×
AutoETS's own model and the kernel 1.08 × that additive twin: what the kernel lacks there is ETS's
error, whose variance scales with the level and weighs the quiet early years more than the noisy late
ones. Every kernel of the grammar has one constant noise variance, so this study writes the
single-source-of-error idea outside it, on the structural forms of local level and local trend, and
fits each form twice on the same ``y``:

``ρ = 0``
    the homoscedastic form: ``K = Σ_k a_k M_k + σ² I``;
``ρ = 1``
    the same with a noise ``σ² s_i²`` and random walks whose steps have variance ``∝ s(u)²``: the
    Wiener process ``min(G(u), G(u'))`` in the clock ``G(u) = ∫₀ᵘ s²`` (a time warp) and the local
    trend its integral. ``s`` is the level's scale, a centred moving average of ``y`` over a season
    (at least 5 points) divided by its mean; after the data it stays at its last value (the mean
    forecast does not depend on it).

The forms, on a grid of the training and test times (``u = i/n``): ``ANN`` an initial level and a
random-walk level; ``AAN`` with an initial slope and a random-walk slope (the integrated walk, by a
left sum); with a season of ``p`` steps (the one AutoETS gets, ``classical.csv``), ``ANA`` and
``AAA`` add a periodic term of period ``p`` (lengthscale 1, the grammar's PER), and for a positive series
``ANM`` and ``AAM`` the same term times ``s(u) s(u')``, a season that grows with the level (with either
``ρ``: the season's form and the noise's are separate questions). Every term is an
amplitude times a fixed matrix, so the log marginal likelihood's gradient in the log amplitudes is
exact; three starts of L-BFGS-B. Both ``ρ`` are fitted on the same data, so their likelihoods compare
directly (``s`` is read off the data, as AutoETS's choice between errors reads the same ``y``).

Per series, against AutoETS's test RMSE (``classical.csv``): the form of lowest BIC with ``ρ = 0``,
with ``ρ = 1``, over both, and each in hindsight; grouped by the model AutoETS chooses
(``--types``, a ``bench_ets_types`` table). Series with a non-positive value get ``ρ = 0`` only.
Nothing here is used by a search.

Usage (from the repository root; ten minutes on one worker)::

    python -m bench.bench_level_noise --data-dir bench/corpus/series --folder bench/results/corpus/quick-59-oc-s0 \\
        --types bench/results/bench_ets_types__corpus.csv --name corpus

Writes ``bench/results/bench_level_noise__<name>.md`` and ``….csv`` (one row per series, form and ρ).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.linalg import cho_factor, cho_solve
from scipy.optimize import minimize

from bench._common import RESULTS_DIR, limit_threads, map_jobs, write_report
from bench.bench_ets_types import primary_season
from bench.common import geomean, load_series, md_table

#: Bounds of the log amplitudes (standardised data).
BOUNDS = (-14.0, 6.0)
#: Starting log amplitudes of the terms after the initial level, tried in turn (the level's at 0, the noise's
#: at −2).
STARTS = (-6.0, -3.0, 0.0)


@dataclass(frozen=True)
class Grid:
    """Times of the training and test points (``u = i/n``, shape (N,)), how many train, the season."""

    u: np.ndarray
    n: int
    period: int  # steps; 1 when none


def level_scale(y: np.ndarray, period: int) -> np.ndarray:
    """The level's scale at each training point (shape (n,), mean 1): a centred moving average of
    ``y`` over ``max(period, 5)`` points (shorter at the ends), divided by its mean."""
    w = max(period, 5)
    lo = np.maximum(np.arange(len(y)) - w // 2, 0)
    hi = np.minimum(np.arange(len(y)) + (w - w // 2), len(y))
    c = np.concatenate([[0.0], np.cumsum(y)])
    m = (c[hi] - c[lo]) / (hi - lo)
    m = np.maximum(m, 1e-3 * float(np.mean(np.abs(y))))
    return m / float(np.mean(m))


def walk_matrices(grid: Grid, s: np.ndarray, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """The random-walk level's and the integrated walk's covariances on the grid (shape (N, N)), with
    steps of variance ``∝ s^(2ρ)`` (the last training value after the data)."""
    n_all = len(grid.u)
    du = 1.0 / grid.n
    w = np.ones(n_all) if rho == 0 else np.concatenate([s, np.full(n_all - grid.n, s[-1])]) ** (2 * rho)
    clock = np.cumsum(w) * du  # G(u_i): the walk's variance at u_i
    idx = np.arange(n_all)
    k_w = clock[np.minimum.outer(idx, idx)]
    c = np.tril(np.ones((n_all, n_all))) * du
    return k_w, c @ k_w @ c.T


def form_terms(form: str, grid: Grid, s: np.ndarray, rho: float) -> list[np.ndarray]:
    """The fixed matrices (shape (N, N)) whose amplitudes a form fits (the noise apart)."""
    k_w, k_iw = walk_matrices(grid, s, rho)
    terms = [np.ones((len(grid.u), len(grid.u))), k_w]
    if form[1] == "A":
        terms += [np.outer(grid.u, grid.u), k_iw]
    if form[2] in "AM":
        d = np.subtract.outer(grid.u, grid.u) * grid.n / grid.period
        per = np.exp(-2.0 * np.sin(np.pi * d) ** 2)
        if form[2] == "M":  # a season that grows with the level (the last training value's after the data)
            scale = np.concatenate([s, np.full(len(grid.u) - grid.n, s[-1])])
            per = per * np.outer(scale, scale)
        terms.append(per)
    return terms


def neg_lml(p: np.ndarray, mats: list[np.ndarray], z: np.ndarray) -> tuple[float, np.ndarray]:
    """Minus the log marginal likelihood of ``z`` (shape (n,)) under ``Σ exp(p_k) mats_k`` and its gradient
    in ``p`` (GPML eq. 5.9: ``½ a_k tr((αα' − Σ⁻¹) M_k)``); a failed Cholesky gives a large value."""
    n = len(z)
    a = np.exp(p)
    cov = sum(ai * m for ai, m in zip(a, mats, strict=True)) + 1e-8 * np.eye(n)
    try:
        f = cho_factor(cov, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        return 1e10, np.zeros_like(p)
    alpha = cho_solve(f, z, check_finite=False)
    w = np.outer(alpha, alpha) - cho_solve(f, np.eye(n), check_finite=False)
    lml = -0.5 * z @ alpha - np.sum(np.log(np.diag(f[0]))) - 0.5 * n * math.log(2 * math.pi)
    return -lml, -np.array([0.5 * ai * np.sum(w * m) for ai, m in zip(a, mats, strict=True)])


def fit_form(terms: list[np.ndarray], noise: np.ndarray, z: np.ndarray) -> tuple[float, np.ndarray]:
    """Maximise the log marginal likelihood of ``z`` (shape (n,)) under ``Σ a_k M_k + σ² diag(noise)``
    over the log amplitudes (:data:`STARTS`); returns the LML and the log amplitudes (noise last)."""
    n = len(z)
    mats = [t[:n, :n] for t in terms] + [np.diag(noise)]
    best = (math.inf, np.zeros(len(mats)))
    for start in STARTS:
        p0 = np.zeros(len(mats))
        p0[1:-1] = start
        p0[-1] = -2.0
        r = minimize(neg_lml, p0, args=(mats, z), jac=True, method="L-BFGS-B", bounds=[BOUNDS] * len(mats))
        if np.isfinite(r.fun) and r.fun < best[0]:
            best = (float(r.fun), r.x)
    return -best[0], best[1]


def forecast(terms: list[np.ndarray], noise: np.ndarray, z: np.ndarray, p: np.ndarray) -> np.ndarray:
    """The mean of the grid's test points (shape (N − n,)) given the training ``z``."""
    n = len(z)
    a = np.exp(p)
    full = sum(ai * t for ai, t in zip(a[:-1], terms, strict=True))
    cov = full[:n, :n] + a[-1] * np.diag(noise) + 1e-8 * np.eye(n)
    return full[n:, :n] @ cho_solve(cho_factor(cov, lower=True), z)


def series_rows(job: tuple[Path, str, int]) -> list[dict]:
    """Every form with ``ρ = 0`` and, for a positive series, ``ρ = 1``: BIC and test RMSE (original units)."""
    data_dir, name, period = job
    ds = load_series(data_dir, name)
    y, y_test = ds.y[ds.train], ds.y[~ds.train]
    n, m = len(y), len(y_test)
    grid = Grid(np.arange(n + m) / n, n, period)
    mean, sd = float(np.mean(y)), float(np.std(y)) or 1.0
    z = (y - mean) / sd
    positive = bool(np.all(y > 0))
    s = level_scale(y, period) if positive else np.ones(n)
    seasonal = period > 1 and n >= 3 * period
    forms = ["ANN", "AAN"] + (["ANA", "AAA"] if seasonal else []) + (["ANM", "AAM"] if seasonal and positive else [])
    rows = []
    for rho in (0.0, 1.0) if positive else (0.0,):
        noise = s ** (2 * rho)
        for form in forms:
            terms = form_terms(form, grid, s, rho)
            lml, p = fit_form(terms, noise, z)
            pred = forecast(terms, noise, z, p) * sd + mean
            q = len(p)
            rows.append({"series": name, "n_train": n, "form": form, "rho": rho, "q": q,
                         "bic": -2 * (lml - n * math.log(sd)) + q * math.log(n),
                         "test_rmse": float(np.sqrt(np.mean((pred - y_test) ** 2))),
                         "log_amplitudes": " ".join(f"{v:.2f}" for v in p)})
    return rows


def choose(g: pd.DataFrame, ref: float) -> dict[str, float | str]:
    """One series' rows: test RMSE over ``ref`` of the lowest BIC and of the oracle among ``ρ = 0``, ``ρ = 1``
    (NaN without it) and both."""
    out: dict[str, float | str] = {}
    for key, rows in (("homo", g[g.rho == 0]), ("level", g[g.rho == 1]), ("both", g)):
        if rows.empty:
            out[f"bic_{key}"] = out[f"oracle_{key}"] = math.nan
            continue
        pick = rows.loc[rows.bic.idxmin()]
        out[f"bic_{key}"] = float(pick.test_rmse) / ref
        out[f"oracle_{key}"] = float(rows.test_rmse.min()) / ref
        if key == "both":
            out["chosen"] = f"{pick.form} ρ={pick.rho:g}"
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=Path("bench/corpus/series"))
    ap.add_argument("--folder", type=Path, required=True, help="a bench accuracy folder (classical.csv)")
    ap.add_argument("--types", type=Path, required=True, help="a bench_ets_types CSV (the model AutoETS chooses)")
    ap.add_argument("--max-points", type=int, default=600, help="skip series with more training points")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--name", required=True, help="the report's name after bench_level_noise__")
    a = ap.parse_args()
    threads = limit_threads()
    classical = pd.read_csv(a.folder / "classical.csv")
    ets = classical[(classical.model == "AutoETS") & (classical.status == "ok")].set_index("series")
    names = [s for s in sorted(ets.index) if int(ets.loc[s, "n_train"]) <= a.max_points]
    jobs = [(a.data_dir, s, primary_season(ets.loc[s, "seasons"])) for s in names]
    df = pd.DataFrame([r for chunk in map_jobs(series_rows, jobs, a.workers) for r in chunk])
    script = f"bench_level_noise__{a.name}"
    df.to_csv(RESULTS_DIR / f"{script}.csv", index=False)
    types = pd.read_csv(a.types).set_index("series")
    per = pd.DataFrame([{"series": s, "group": f"{types.loc[s, 'error']}, {types.loc[s, 'trend']}",
                         **choose(g, float(ets.loc[s, "test_rmse"]))} for s, g in df.groupby("series")])
    cols = ["bic_homo", "bic_level", "bic_both", "oracle_homo", "oracle_both"]
    rows = []
    for key, g in [*per.groupby("group"), ("all", per)]:
        lr = np.log(g.bic_both / g.bic_homo)
        se = float(lr.std(ddof=1) / math.sqrt(len(lr))) if len(lr) > 1 else math.nan
        rows.append([key, len(g), *(f"{geomean(g[c].dropna()):.3f}" if g[c].notna().any() else "-" for c in cols),
                     f"{math.exp(lr.mean()):.3f} ({se:.3f})", int(g.chosen.str.endswith("ρ=1").sum())])
    grouped = md_table(["AutoETS's error, trend", "series", *cols, "paired both / homo (SE of the log)",
                        "ρ = 1 chosen"], rows, "lr" + "r" * (len(cols) + 2))
    table = md_table(["series", "AutoETS", "chosen", *cols],
                     [[r.series, r.group, r.chosen, *(f"{r[c]:.3f}" for c in cols)] for _, r in per.iterrows()],
                     "lll" + "r" * len(cols))
    line = " ".join(f"{c}_geomean={geomean(per[c].dropna()):.4f}" for c in cols) + f" series={len(per)}"
    write_report(script, "A noise that grows with the level, in the forms, against AutoETS",
                 [__doc__.split("\n\n")[1], grouped, table, "```\n" + line + "\n```"], threads)
    print(grouped)
    print(line)


if __name__ == "__main__":
    main()

"""Benchmark (issue 2): one LML, and one LML + gradient, against the floor and scikit-learn.

Kernel ``SE + PER×SE`` written in the grammar (``compose(["+", "SE", ["*", "PER", "SE"]])``),
at n = 129, 315, 490, 900, on two input grids in model units:

* ``regular``: ``np.linspace(1, 2, n)``; the Toeplitz fast path of
  :mod:`evocov_core.language.evaluate` applies;
* ``irregular``: sorted uniform draws on [1, 2] (seeded); the general path.

Contenders, timed in interleaved blocks (median over repetitions):

``floor``         ``cho_factor`` + ``cho_solve`` + log-det (sum of log diag) on a READY
                  ``K + σ²I`` (Fortran order). ``cho_factor(overwrite_a=False)`` copies the
                  n×n matrix once per call (it must, or the next call would read a factor).
                  Our ``lml`` pays no such copy: it factorises the K it has just built in
                  place. So the floor includes one n×n copy that our code does not pay;
``floor_nocopy``  the same on a fresh copy made outside the timer (the pure LAPACK work);
``build``         ``covariance`` only (our K build, no factorisation), to show the split;
``ours_lml``      :func:`evocov_core.fitting.gp.lml` (build + Cholesky + solve + log-det);
``ours_grad``     :func:`evocov_core.fitting.gp.lml_and_grad`;
``sk_lml``        ``GaussianProcessRegressor(kernel, optimizer=None).fit(X, y)`` then
                  ``log_marginal_likelihood(theta, eval_gradient=False)``;
``sk_grad``       the same with ``eval_gradient=True``.

scikit-learn kernel: ``C·RBF + C·ExpSineSquared·RBF + WhiteKernel``, with our amplitude slot
s -> ``ConstantKernel(s²)`` (the product's two amplitude slots -> one constant s₂²s₅²),
lengthscale l -> ``RBF(l)``, periodic ``ExpSineSquared(l, periodicity=2π/ω)``, noise
variance -> ``WhiteKernel``; ``alpha=0`` (no extra diagonal), ``normalize_y=False``, zero mean,
the same standardised y. Before timing, the LML must agree to 1e-8 (relative) and the
gradient, converted to our log-parameters, to 1e-7 (relative to its largest entry).

Ratios are our time / other time: the floor ratio is >= 1, a scikit-learn ratio < 1 means
we are faster. The last line printed is the summary (key=value pairs), among them
``lmlgrad_vs_floor_nN`` (LML + gradient ÷ floor, one hyperparameter vector a call, regular grid), the
measure of issue 71 at the sizes of M3's series (``--sizes 19 44 115``: median yearly, quarterly,
monthly; targets 4, 2, 2). Results also go to ``bench/results/bench_lml.md``, or
``bench/results/bench_lml_short.md`` when every size is below 129.

Run from the repository root: ``python -m bench.bench_lml`` (about 1-2 minutes).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ExpSineSquared, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C

from bench.common import interleaved, limit_threads, machine_info, md_table, write_report
from evocov_core.fitting.gp import lml, lml_and_grad
from evocov_core.language.evaluate import Inputs, covariance
from evocov_core.language.library import compose

SIZES = (129, 315, 490, 900)
EXPR = ["+", "SE", ["*", "PER", "SE"]]
#: Log slot values, ordered as the kernel's slots hp0..hp6:
#: SE amplitude 1, SE lengthscale e^-1 = 0.37; PER amplitude 1, PER lengthscale 1,
#: frequency 2π·10 (10 periods over the unit range); product-SE amplitude 1, lengthscale
#: e^-1.5 = 0.22. Log noise variance -3.
THETA = np.array([0.0, -1.0, 0.0, 0.0, math.log(2 * math.pi * 10), 0.0, -1.5])
LOG_NOISE = -3.0
LML_RTOL = 1e-8
GRAD_RTOL = 1e-7
TARGET_FLOOR = {315: 2.5, 900: 1.5}
#: Issue 71 (short series): LML + gradient per hyperparameter vector against the floor of the same n,
#: one vector a call (the search's L-BFGS-B asks for one point at a time).
TARGET_GRAD_FLOOR = {19: 4.0, 44: 2.0, 115: 2.0}
TARGET_SKLEARN = 0.5


def sklearn_kernel(theta: np.ndarray, log_noise: float):
    s = np.exp(theta)
    return (C(s[0] ** 2) * RBF(s[1])
            + C(s[2] ** 2 * s[5] ** 2) * ExpSineSquared(length_scale=s[3], periodicity=2 * math.pi / s[4])
            * RBF(s[6])
            + WhiteKernel(math.exp(log_noise)))


#: scikit-learn's theta order for :func:`sklearn_kernel` (checked at run time).
SK_NAMES = ["k1__k1__k1__constant_value", "k1__k1__k2__length_scale", "k1__k2__k1__k1__constant_value",
            "k1__k2__k1__k2__length_scale", "k1__k2__k1__k2__periodicity", "k1__k2__k2__length_scale",
            "k2__noise_level"]


def to_sklearn_grad(g: np.ndarray) -> np.ndarray:
    """Our gradient (d/d log slot hp0..hp6, then d/d log noise variance) in scikit-learn's theta.

    ConstantKernel c = s² so d/dlog c = ½ d/dlog s (the product's c = s₂²s₅²: ½ d/dlog s₂);
    periodicity p = 2π/ω so d/dlog p = −d/dlog ω; lengthscales and noise variance map as they are.
    """
    return np.array([0.5 * g[0], g[1], 0.5 * g[2], g[3], -g[4], g[6], g[7]])


def make_problem(n: int, grid: str, seed: int = 0):
    rng = np.random.default_rng(seed + n)
    x = np.linspace(1.0, 2.0, n) if grid == "regular" else np.sort(rng.uniform(1.0, 2.0, n))
    X = x[:, None]
    kern = compose(EXPR)
    # y: a draw from the GP itself (realistic), then standardised like the engine's data.
    Ky = covariance(kern, Inputs(X, toeplitz=False), THETA) + math.exp(LOG_NOISE) * np.eye(n)
    y = np.linalg.cholesky(Ky) @ rng.standard_normal(n)
    y = (y - y.mean()) / y.std()
    return X, y, kern


def run_size(n: int, grid: str, reps: int, block: float) -> dict:
    X, y, kern = make_problem(n, grid)
    inputs = Inputs(X)
    toeplitz = inputs.row is not None
    noise = math.exp(LOG_NOISE)

    gpr = GaussianProcessRegressor(kernel=sklearn_kernel(THETA, LOG_NOISE), optimizer=None, alpha=0.0,
                                   normalize_y=False).fit(X, y)
    sk_theta = gpr.kernel_.theta.copy()
    names = [h.name for h in gpr.kernel_.hyperparameters]
    if names != SK_NAMES:
        raise SystemExit(f"unexpected scikit-learn hyperparameter order {names}")

    # --- correctness first ----------------------------------------------------------
    v1, _ = lml(kern, inputs, y, THETA, LOG_NOISE)
    v2, g, _ = lml_and_grad(kern, inputs, y, THETA, LOG_NOISE)
    s1 = float(gpr.log_marginal_likelihood(sk_theta, eval_gradient=False))
    s2, sg = gpr.log_marginal_likelihood(sk_theta, eval_gradient=True)
    lml_err = max(abs(v1 - s1), abs(v2 - s2)) / abs(s1)
    mine = to_sklearn_grad(g)
    grad_err = float(np.max(np.abs(mine - sg)) / np.max(np.abs(sg)))
    amp_err = abs(g[2] - g[5]) / max(abs(g[2]), 1e-300)  # the product's two amplitudes are one parameter
    if lml_err > LML_RTOL or grad_err > GRAD_RTOL or amp_err > GRAD_RTOL:
        raise SystemExit(f"n={n} {grid}: results differ (LML rel {lml_err:.2e}, gradient rel {grad_err:.2e}, "
                         f"amplitudes {amp_err:.2e}); not timing")

    # --- timing ------------------------------------------------------------------------
    Ky = covariance(kern, inputs, THETA)
    Ky[np.diag_indices(n)] += noise
    KyF = np.asfortranarray(Ky)
    log2pi = math.log(2 * math.pi)

    def floor() -> float:
        c = cho_factor(KyF, lower=True, overwrite_a=False, check_finite=False)
        a = cho_solve(c, y, check_finite=False)
        return -0.5 * y @ a - float(np.log(np.diagonal(c[0])).sum()) - 0.5 * n * log2pi

    fresh: list[np.ndarray] = []

    def prepare_copies(calls: int) -> None:  # untimed: one fresh copy per call of floor_nocopy
        fresh[:] = [KyF.copy(order="F") for _ in range(calls)]

    def floor_nocopy() -> float:
        c = cho_factor(fresh.pop(), lower=True, overwrite_a=True, check_finite=False)
        a = cho_solve(c, y, check_finite=False)
        return -0.5 * y @ a - float(np.log(np.diagonal(c[0])).sum()) - 0.5 * n * log2pi

    contenders = {
        "floor": floor,
        "floor_nocopy": floor_nocopy,
        "build": lambda: covariance(kern, inputs, THETA),
        "ours_lml": lambda: lml(kern, inputs, y, THETA, LOG_NOISE),
        "ours_grad": lambda: lml_and_grad(kern, inputs, y, THETA, LOG_NOISE),
        "sk_lml": lambda: gpr.log_marginal_likelihood(sk_theta, eval_gradient=False),
        "sk_grad": lambda: gpr.log_marginal_likelihood(sk_theta, eval_gradient=True),
    }
    both = interleaved(contenders, reps, block, setup={"floor_nocopy": prepare_copies})
    return {"n": n, "grid": grid, "toeplitz": toeplitz, "lml_err": lml_err, "grad_err": grad_err,
            "t": {k: v[0] for k, v in both.items()}, "cpu": {k: v[1] for k, v in both.items()}}


def ms(s: float) -> str:
    return f"{s * 1e3:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15, help="interleaved repetitions (median taken)")
    ap.add_argument("--block-ms", type=float, default=25.0, help="length of one timed block of calls")
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    args = ap.parse_args()
    threads = limit_threads()
    for k, v in machine_info().items():
        print(f"{k}: {v}")
    print(f"threads after prepare_process(): {threads['after_prepare_process']}")
    print(f"threads during the benchmark:   {threads['after_threadpool_limits']}\n")

    t_start, c_start = time.perf_counter(), time.process_time()
    results = {g: [run_size(n, g, args.reps, args.block_ms / 1e3) for n in args.sizes]
               for g in ("regular", "irregular")}

    h_times = ["grid", "n", "path", "floor", "floor (no copy)", "build K", "ours LML", "ours LML+grad",
               "sklearn LML", "sklearn LML+grad"]
    h_ratios = ["grid", "n", "LML / floor", "LML+grad / floor", "LML / floor (no copy)", "LML / sklearn",
                "LML+grad / sklearn",
                "grad / LML (ours)", "grad / LML (sklearn)", "CPU: LML / floor", "CPU: LML / sklearn",
                "CPU: LML+grad / sklearn", "LML rel err", "grad rel err"]
    rows_t, rows_r = [], []
    summary: list[str] = []
    verdicts: list[str] = []
    for g, prefix in (("regular", ""), ("irregular", "irr_")):
        floor_r, sk_r, skg_r, gfloor_r = {}, {}, {}, {}
        for r in results[g]:
            t, c, n = r["t"], r["cpu"], r["n"]
            floor_r[n] = t["ours_lml"] / t["floor"]
            gfloor_r[n] = t["ours_grad"] / t["floor"]
            sk_r[n] = t["ours_lml"] / t["sk_lml"]
            skg_r[n] = t["ours_grad"] / t["sk_grad"]
            rows_t.append([g, n, "Toeplitz" if r["toeplitz"] else "general",
                           *(ms(t[k]) for k in ("floor", "floor_nocopy", "build", "ours_lml", "ours_grad",
                                                "sk_lml", "sk_grad"))])
            rows_r.append([g, n, f"{floor_r[n]:.2f}", f"{gfloor_r[n]:.2f}", f"{t['ours_lml'] / t['floor_nocopy']:.2f}",
                           f"{sk_r[n]:.3f}",
                           f"{skg_r[n]:.3f}", f"{t['ours_grad'] / t['ours_lml']:.2f}",
                           f"{t['sk_grad'] / t['sk_lml']:.2f}", f"{c['ours_lml'] / c['floor']:.2f}",
                           f"{c['ours_lml'] / c['sk_lml']:.3f}", f"{c['ours_grad'] / c['sk_grad']:.3f}",
                           f"{r['lml_err']:.1e}", f"{r['grad_err']:.1e}"])
            for tn, lim in TARGET_FLOOR.items():
                if tn == n:
                    ok = floor_r[n] <= lim
                    verdicts.append(f"{g} n={n}: LML / floor = {floor_r[n]:.2f} (target <= {lim}): "
                                    f"{'met' if ok else 'NOT met'}")
            if g == "regular" and n in TARGET_GRAD_FLOOR:
                lim = TARGET_GRAD_FLOOR[n]
                verdicts.append(f"{g} n={n}: LML+grad / floor = {gfloor_r[n]:.2f} (issue 71 target <= {lim:g}): "
                                f"{'met' if gfloor_r[n] <= lim else 'NOT met'}")
            for label, val in (("LML", sk_r[n]), ("LML+grad", skg_r[n])):
                ok = val <= TARGET_SKLEARN
                verdicts.append(f"{g} n={n}: {label} / sklearn = {val:.3f} (target <= {TARGET_SKLEARN}): "
                                f"{'met' if ok else 'NOT met'}")
        summary += [f"{prefix}lml_vs_floor_n{n}={v:.3g}" for n, v in floor_r.items()]
        summary += [f"{prefix}lmlgrad_vs_floor_n{n}={v:.3g}" for n, v in gfloor_r.items()]
        summary += [f"{prefix}lml_vs_sklearn_n{n}={v:.3g}" for n, v in sk_r.items()]
        summary += [f"{prefix}lmlgrad_vs_sklearn_n{n}={v:.3g}" for n, v in skg_r.items()]

    table = ("Milliseconds per call:\n\n" + md_table(h_times, rows_t, "lll" + "r" * (len(h_times) - 3))
             + "\n\nRatios (our time / other time) and agreement with scikit-learn before timing:\n\n"
             + md_table(h_ratios, rows_r, "ll" + "r" * (len(h_ratios) - 2)))
    elapsed = time.perf_counter() - t_start
    share = (time.process_time() - c_start) / elapsed
    notes = (f"Median of {args.reps} interleaved repetitions, each a block of about {args.block_ms:g} ms of "
             "back-to-back calls (at least one call). Wall-clock times per call; the summary and targets use "
             "them. The `CPU:` columns repeat the key ratios with this process's CPU time (BLAS is "
             "single-threaded, so CPU time is compute time without the time other processes held the core). "
             "`floor` includes one n×n copy (`cho_factor(overwrite_a=False)`), which our `lml` does not pay; "
             "`floor (no copy)` is the LAPACK work alone. `path`: which K build our code took. "
             f"Benchmark time {elapsed:.0f} s, during which this "
             f"process got {share:.0%} of a core (the rest went to other processes on the shared machine).")
    summary_line = " ".join(summary)
    path = write_report(
        "bench_lml_short" if max(args.sizes) < min(SIZES) else "bench_lml",
        "LML and LML + gradient: ours vs the floor and scikit-learn (issues 2, 71)",
        ["Kernel `SE + PER×SE` (`compose([\"+\", \"SE\", [\"*\", \"PER\", \"SE\"]])`), log slot values "
         f"`{np.round(THETA, 4).tolist()}`, log noise variance {LOG_NOISE}; y a seeded draw from the GP, "
         "standardised. scikit-learn: `C·RBF + C·ExpSineSquared·RBF + WhiteKernel`, `alpha=0`, same values. "
         "Regular grid: `np.linspace(1, 2, n)`; irregular: sorted uniform draws on [1, 2].",
         "## Results\n\n" + table + "\n\n" + notes,
         "## Targets (issue 2)\n\n" + "\n".join(f"- {v}" for v in verdicts),
         "## Summary line\n\n```\n" + summary_line + "\n```"],
        threads)
    print(table)
    print()
    print(notes)
    print()
    print("Targets (issue 2):")
    for v in verdicts:
        print("  " + v)
    print(f"\n(written to {path.relative_to(path.parents[2])})\n")
    print(summary_line)


if __name__ == "__main__":
    main()

"""Benchmark (issue 3): hyperparameter optimisers on Airline and Mauna Loa, kernel SE + PER×SE.

Series: ``../shared/data/tsdl/01-airline.csv`` (n_train = 129) and ``03-mauna.csv``
(n_train = 490), loaded with :func:`evocov_core.data.load_tsdl` (the published split) and
normalised with :meth:`evocov_core.fitting.metrics.FitData.from_dataset`; every method fits the same
model-unit X and y. Kernel ``compose(["+", "SE", ["*", "PER", "SE"]])`` plus white noise.

Methods, each run once per seed (the order rotates from seed to seed):

``powell``          ``OptimConfig(method="powell", ref_fun_call=300, init="paper")``: the paper's
                    method: Powell with its budget ``300·350²/n²`` evaluations, restarting from
                    starts drawn uniformly in the box until the budget is spent (no fixed number
                    of restarts);
``powell ours``     the same Powell and budget from our starts (role-aware ranges, periodogram
                    frequencies): separates the optimiser from the starting points;
``default``         ``OptimConfig()``: the defaults (metric LML -> L-BFGS-B; 50 random starts
                    scored by LML alone, then L-BFGS-B from the best 3, at most 60 evaluations
                    each);
``lbfgs R``         ``OptimConfig(method="lbfgs", n_restarts=R, max_evals=100, n_screen=0)``:
                    R unscreened starts;
``sklearn R``       ``GaussianProcessRegressor(kernel, n_restarts_optimizer=R-1, normalize_y=False,
                    alpha=0)``: scikit-learn's own L-BFGS-B call (``scipy.optimize.minimize(obj,
                    x0, method="L-BFGS-B", jac=True, bounds=bounds)``, scipy's default limits),
                    but through an ``optimizer`` callable that starts start k from **our** k-th
                    draw of our start distribution (role-aware ranges, periodogram frequencies)
                    instead of scikit-learn's uniform draw in the box. So ``sklearn R`` and
                    ``lbfgs R`` start from the same R points;
``sklearn 3``       scikit-learn restricted to the first 3 of those starts (as many L-BFGS-B
                    restarts as the defaults, without their screening): read off the same run
                    (per-start wall time and evaluations are recorded, the fit's fixed cost is
                    added); the optimisation from a start is deterministic, so this is what an
                    ``n_restarts_optimizer=2`` run does.

scikit-learn kernel: ``C·RBF + C·ExpSineSquared·C·RBF + WhiteKernel``: one scikit-learn
hyperparameter per slot of ours, so starts and bounds map one to one: amplitude s ->
``C(s²)`` with bounds ``(e⁻²⁰, e²⁰)`` (our log s in (−10, 10)), lengthscales -> ``RBF`` /
``ExpSineSquared`` lengthscales in ``(e⁻¹⁰, e¹⁰)``, frequency ω -> periodicity 2π/ω in
``(2π e⁻¹⁰, 2π e¹⁰)``, noise variance -> ``WhiteKernel`` in ``(1e-6, 10)`` (standardised
units). The maps are affine in log space (log c = 2 log s, log p = log 2π − log ω), so the
same start is the same point, but L-BFGS-B is not invariant to the factor 2 of the
amplitudes: the paths can differ.

Columns: wall time (fit + test prediction) and the CPU time of this process over the same span
(the machine is shared: when CPU < wall, other processes held the core), metric evaluations (each an LML + gradient for
L-BFGS-B, an LML for Powell), LML at the returned point (model units; computed by our
``gp.lml`` for every method, so all are comparable; scikit-learn's own value is checked to
agree), test RMSE in original units (mean·y_std + y_mean vs ``ds.y_test``). Medians over seeds.

Time to Powell's LML: every fit of ours records its best-so-far LML against time; the report
gives, per seed, the seconds the defaults took to first reach the LML that the paper's Powell
ended with under its whole budget, as a fraction of Powell's time (the "as good per second"
reading of issue 3's target). ``inf`` when the defaults never reached it.

Summary (last two lines), medians over seeds of per-seed ratios/differences, default vs
Powell and vs ``sklearn 3`` (same number of restarts):
``airline: default_vs_powell_time=… default_minus_powell_lml=… default_vs_sklearn_time=…
default_minus_sklearn_lml=…`` and the same for ``mauna``. Results also go to
``bench/results/bench_optimizers.md``.

Run from the repository root: ``python -m bench.bench_optimizers`` (about 3-5 minutes, mostly
scikit-learn on Mauna Loa); ``--profile`` adds a cProfile of one default fit on Mauna Loa;
``--n-screen N`` adds a row for the defaults with ``OptimConfig(n_screen=N)`` (start screening,
when :mod:`evocov_core.fitting.optimize` has that option).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import math
import pstats
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.optimize
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ExpSineSquared, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C

from bench._common import ROOT, limit_threads, machine_info, write_report
from bench.common import md_table
from evocov_core.data import load_tsdl
from evocov_core.fitting import optimize
from evocov_core.fitting.gp import lml
from evocov_core.fitting.metrics import FitData, rmse
from evocov_core.fitting.optimize import OptimConfig, _starts, fit_kernel
from evocov_core.language.library import compose

EXPR = ["+", "SE", ["*", "PER", "SE"]]
SERIES = {"airline": "01-airline.csv", "mauna": "03-mauna.csv"}
TWO_PI = 2.0 * math.pi
#: scikit-learn's theta order for :func:`sklearn_kernel`: one entry per slot hp0..hp6, then noise.
SK_NAMES = ["k1__k1__k1__constant_value", "k1__k1__k2__length_scale", "k1__k2__k1__k1__k1__constant_value",
            "k1__k2__k1__k1__k2__length_scale", "k1__k2__k1__k1__k2__periodicity",
            "k1__k2__k1__k2__constant_value", "k1__k2__k2__length_scale", "k2__noise_level"]
#: log(sklearn value) = SCALE · z + SHIFT, z = [log slots, log noise variance].
SCALE = np.array([2.0, 1.0, 2.0, 1.0, -1.0, 2.0, 1.0, 1.0])
SHIFT = np.array([0.0, 0.0, 0.0, 0.0, math.log(TWO_PI), 0.0, 0.0, 0.0])


def to_sk(z: np.ndarray) -> np.ndarray:
    return SCALE * z + SHIFT


def from_sk(t: np.ndarray) -> np.ndarray:
    return (t - SHIFT) / SCALE


def sklearn_kernel(z: np.ndarray, cfg: OptimConfig):
    """The equivalent kernel at our point z, with bounds matching our box."""
    v = np.exp(to_sk(z))
    lo, hi = cfg.space.bounds
    amp = (math.exp(2 * lo), math.exp(2 * hi))
    ls = (math.exp(lo), math.exp(hi))
    per = (TWO_PI * math.exp(-hi), TWO_PI * math.exp(-lo))
    noise = tuple(math.exp(b) for b in cfg.space.noise_bounds)
    k = (C(v[0], amp) * RBF(v[1], ls)
         + C(v[2], amp) * ExpSineSquared(v[3], v[4], length_scale_bounds=ls, periodicity_bounds=per)
         * C(v[5], amp) * RBF(v[6], ls)
         + WhiteKernel(v[7], noise))
    names = [h.name for h in k.hyperparameters]
    if names != SK_NAMES:
        raise SystemExit(f"unexpected scikit-learn hyperparameter order {names}")
    return k


class SameStarts:
    """scikit-learn ``optimizer`` callable: its L-BFGS-B call, from our k-th start; logs each start."""

    def __init__(self, starts: list[np.ndarray]) -> None:
        self.starts = [to_sk(z) for z in starts]
        self.log: list[dict] = []

    def __call__(self, obj_func, initial_theta, bounds):
        x0 = self.starts[len(self.log)]
        t0, c0 = time.perf_counter(), time.process_time()
        res = scipy.optimize.minimize(obj_func, x0, method="L-BFGS-B", jac=True, bounds=bounds)
        self.log.append({"seconds": time.perf_counter() - t0, "cpu": time.process_time() - c0,
                         "nfev": int(res.nfev), "x": res.x.copy(), "fun": float(res.fun)})
        return res.x, res.fun


def run_ours(kern, fd: FitData, cfg: OptimConfig, seed: int) -> dict:
    """One fit; also records the best-so-far LML against time (``trace``: list of (seconds, LML)).

    The trace wraps the two loss functions the fitter calls (``optimize.loss`` and
    ``optimize.loss_and_grad``) for the duration of the fit; the wrappers cost a clock read.
    """
    trace: list[tuple[float, float]] = []
    best = [math.inf]
    orig_loss, orig_lg = optimize.loss, optimize.loss_and_grad

    def note(f: float) -> None:
        if math.isfinite(f) and f < best[0]:
            best[0] = f
            trace.append((time.perf_counter() - t0, -f))

    def loss(*a):
        f = orig_loss(*a)
        note(f)
        return f

    def loss_and_grad(*a):
        f, g = orig_lg(*a)
        note(f)
        return f, g

    optimize.loss, optimize.loss_and_grad = loss, loss_and_grad
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        r = fit_kernel(kern, fd, cfg, np.random.default_rng(seed))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        optimize.loss, optimize.loss_and_grad = orig_loss, orig_lg
    if not r.ok:
        return {"wall": wall, "cpu": cpu, "evals": r.n_evals, "lml": math.nan, "rmse": math.nan, "z": None,
                "trace": trace}
    return {"wall": wall, "cpu": cpu, "evals": r.n_evals, "lml": r.lml, "rmse": r.test_rmse, "z": r.z,
            "trace": trace}


def time_to_reach(trace: list[tuple[float, float]], target: float) -> float:
    """Seconds until the best-so-far LML first reached ``target`` (inf if it never did)."""
    return next((t for t, v in trace if v >= target - 1e-9), math.inf)


def sk_predict_rmse(kern, z: np.ndarray, fd: FitData, cfg: OptimConfig) -> float:
    gpr = GaussianProcessRegressor(sklearn_kernel(z, cfg), optimizer=None, alpha=0.0, normalize_y=False)
    gpr.fit(fd.X, fd.y)
    return rmse(fd.y_test, gpr.predict(fd.X_test) * fd.y_std + fd.y_mean)


def run_sklearn(kern, fd: FitData, cfg: OptimConfig, starts: list[np.ndarray], first: int) -> tuple[dict, dict]:
    """scikit-learn with our starts: the full run, and the run restricted to the first ``first`` starts."""
    opt = SameStarts(starts)
    gpr = GaussianProcessRegressor(sklearn_kernel(starts[0], cfg), optimizer=opt, alpha=0.0, normalize_y=False,
                                   n_restarts_optimizer=len(starts) - 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0, c0 = time.perf_counter(), time.process_time()
        gpr.fit(fd.X, fd.y)
        pred = gpr.predict(fd.X_test)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    fixed = wall - sum(s["seconds"] for s in opt.log)  # fit set-up, final Cholesky, prediction
    fixed_cpu = cpu - sum(s["cpu"] for s in opt.log)
    z = from_sk(gpr.kernel_.theta)
    ours_value = lml(kern, fd.inputs, fd.y, z[:-1], float(z[-1]))[0]
    full = {"wall": wall, "cpu": cpu, "evals": sum(s["nfev"] for s in opt.log), "lml": ours_value,
            "rmse": rmse(fd.y_test, pred * fd.y_std + fd.y_mean), "z": z,
            "lml_check": abs(ours_value - gpr.log_marginal_likelihood_value_) / abs(ours_value)}
    part = opt.log[:first]
    best = min(part, key=lambda s: s["fun"])  # scikit-learn keeps the start with the lowest final loss
    zb = from_sk(best["x"])
    sub = {"wall": fixed + sum(s["seconds"] for s in part), "cpu": fixed_cpu + sum(s["cpu"] for s in part),
           "evals": sum(s["nfev"] for s in part),
           "lml": lml(kern, fd.inputs, fd.y, zb[:-1], float(zb[-1]))[0], "rmse": sk_predict_rmse(kern, zb, fd, cfg),
           "z": zb}
    return full, sub


def med(vals: list[float]) -> float:
    vals = [v for v in vals if v is not None and math.isfinite(v)]
    return statistics.median(vals) if vals else math.nan


def profile_default(kern, fd: FitData, seed: int) -> str:
    pr = cProfile.Profile()
    pr.enable()
    fit_kernel(kern, fd, OptimConfig(), np.random.default_rng(seed))
    pr.disable()
    out = io.StringIO()
    pstats.Stats(pr, stream=out).strip_dirs().sort_stats("tottime").print_stats(18)
    return out.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--restarts", type=int, default=5, help="R: starts for 'lbfgs R' and 'sklearn R'")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--max-evals", type=int, default=100, help="max_evals per start of 'lbfgs R'")
    ap.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data" / "tsdl")
    ap.add_argument("--series", nargs="+", default=list(SERIES), choices=list(SERIES))
    ap.add_argument("--profile", action="store_true", help="also cProfile one default fit on the last series")
    ap.add_argument("--n-screen", type=int, default=0,
                    help="add a row: the defaults with OptimConfig(n_screen=N) (needs an optimize.py that has it)")
    args = ap.parse_args()
    threads = limit_threads()
    for k, v in machine_info():
        print(f"{k}: {v}")
    print(f"threads during the benchmark: {threads['after_threadpool_limits']}\n")

    R = args.restarts
    kern = compose(EXPR)
    default = OptimConfig()
    if default.n_restarts > R:
        raise SystemExit(f"--restarts must be at least the defaults' {default.n_restarts} starts")
    configs = {
        "powell": OptimConfig(method="powell", ref_fun_call=300, init="paper", n_screen=0),
        "powell ours": OptimConfig(method="powell", ref_fun_call=300, n_screen=0),
        "default": default,
        f"lbfgs {R}": OptimConfig(method="lbfgs", n_restarts=R, max_evals=args.max_evals, n_screen=0),
    }
    if args.n_screen:
        configs["screen"] = OptimConfig(n_screen=args.n_screen)  # type: ignore[call-arg]
    sk_full, sk_sub = f"sklearn {R}", f"sklearn {default.n_restarts}"
    methods = [*configs, sk_full, sk_sub]
    labels = {
        "powell": "the paper's method: Powell, budget ref_fun_call=300, starts uniform in the box",
        "powell ours": "Powell, same budget, our starts (role ranges, periodogram frequencies)",
        "default": f"ours, OptimConfig() defaults (L-BFGS-B from the best {default.n_restarts} of "
                   f"{default.n_screen} screened starts, max_evals={default.max_evals})",
        f"lbfgs {R}": f"ours, L-BFGS-B, {R} unscreened starts, max_evals={args.max_evals}",
        "screen": f"ours, defaults + n_screen={args.n_screen} (starts screened by LML)",
        sk_full: f"scikit-learn, {R} starts (the same points as 'lbfgs {R}')",
        sk_sub: f"scikit-learn, the first {default.n_restarts} of those starts (as many restarts as the defaults)",
    }

    t_start, c_start = time.perf_counter(), time.process_time()
    data: dict[str, tuple] = {}
    for name in args.series:
        ds = load_tsdl(args.data_dir / SERIES[name])
        fd = FitData.from_dataset(ds)
        data[name] = (ds, fd)
        print(f"{name}: n_train={ds.n_train}, n_test={ds.n_test}, "
              f"{'regular grid (Toeplitz path)' if fd.inputs.row is not None else 'irregular grid (general path)'}")

    res: dict[str, dict[str, list[dict]]] = {s: {m: [] for m in methods} for s in args.series}
    lml_checks: list[float] = []
    for seed in range(args.seeds):
        for name in args.series:
            _, fd = data[name]
            # scikit-learn starts from draws of our start distribution (unscreened); "lbfgs R"
            # (no screening) starts from exactly these points.
            starts = _starts(kern, fd, configs[f"lbfgs {R}"], np.random.default_rng(seed), None, R)
            order = [*configs, "sklearn"]
            shift = seed % len(order)
            for m in order[shift:] + order[:shift]:
                if m == "sklearn":
                    full, sub = run_sklearn(kern, fd, default, starts, default.n_restarts)
                    lml_checks.append(full.pop("lml_check"))
                    res[name][sk_full].append(full)
                    res[name][sk_sub].append(sub)
                else:
                    res[name][m].append(run_ours(kern, fd, configs[m], seed))
            line = ", ".join(f"{m} {res[name][m][-1]['lml']:.1f} ({res[name][m][-1]['wall']:.2f} s)" for m in methods)
            print(f"seed {seed} {name}: {line}", flush=True)
    elapsed = time.perf_counter() - t_start
    share = (time.process_time() - c_start) / elapsed

    header = ["series", "method", "wall s", "CPU s", "evals", "LML (model units)", "test RMSE", "LML per seed",
              "RMSE per seed", "wall per seed"]
    rows = []
    summary_lines = []
    verdicts = []
    for name in args.series:
        r = res[name]
        for m in methods:
            runs = r[m]
            rows.append([name, labels[m], f"{med([x['wall'] for x in runs]):.2f}",
                         f"{med([x['cpu'] for x in runs]):.2f}",
                         f"{med([x['evals'] for x in runs]):.0f}", f"{med([x['lml'] for x in runs]):.2f}",
                         f"{med([x['rmse'] for x in runs]):.2f}",
                         " / ".join(f"{x['lml']:.1f}" for x in runs), " / ".join(f"{x['rmse']:.1f}" for x in runs),
                         " / ".join(f"{x['wall']:.2f}" for x in runs)])
        d, p, s5, s3 = r["default"], r["powell"], r[sk_full], r[sk_sub]
        vp_t = med([a["wall"] / b["wall"] for a, b in zip(d, p, strict=True)])
        vp_l = med([a["lml"] - b["lml"] for a, b in zip(d, p, strict=True)])
        vs_t = med([a["wall"] / b["wall"] for a, b in zip(d, s3, strict=True)])
        vs_l = med([a["lml"] - b["lml"] for a, b in zip(d, s3, strict=True)])
        v5_t = med([a["wall"] / b["wall"] for a, b in zip(d, s5, strict=True)])
        v5_l = med([a["lml"] - b["lml"] for a, b in zip(d, s5, strict=True)])
        summary_lines.append(f"{name}: default_vs_powell_time={vp_t:.3g} default_minus_powell_lml={vp_l:.3g} "
                             f"default_vs_sklearn_time={vs_t:.3g} default_minus_sklearn_lml={vs_l:.3g}")

        def ok(c: bool) -> str:
            return "met" if c else "NOT met"

        reach = [time_to_reach(a["trace"], b["lml"]) / b["wall"] for a, b in zip(d, p, strict=True)]
        verdicts += [
            f"{name}: time for the defaults to reach Powell's final LML / Powell's time, per seed: "
            + " / ".join(f"{x:.3f}" for x in reach) + f" (median {med(reach):.3f}; target <= 0.2): "
            + ok(statistics.median(reach) <= 0.2),
        ]
        verdicts += [
            f"{name}: default LML − Powell LML = {vp_l:+.2f} (target >= 0): {ok(vp_l >= 0)}; "
            f"default time / Powell time = {vp_t:.3f} (target <= 0.2): {ok(vp_t <= 0.2)}",
            f"{name}: default LML − sklearn ({default.n_restarts} restarts) = {vs_l:+.2f} (target >= −1): "
            f"{ok(vs_l >= -1)}; time ratio = {vs_t:.3f} (target <= 1): {ok(vs_t <= 1)}",
            f"{name}: (for reference) default vs sklearn with {R} starts: LML {v5_l:+.2f}, time ratio {v5_t:.3f}",
        ]

    table = md_table(header, rows, "llrrrrrlll")
    notes = (f"Medians over {args.seeds} seeds (per-seed values in the last columns, seed 0 first). "
             f"Wall = fit + test prediction. Evals: LML+gradient evaluations for L-BFGS-B, LML evaluations for "
             f"Powell (budget {OptimConfig().ref_fun_call}·350²/n²). "
             f"scikit-learn's own LML at its optimum agreed with ours to {max(lml_checks):.1e} (relative). "
             f"Benchmark time {elapsed:.0f} s, during which this process got {share:.0%} of a core (the machine "
             "is shared; compare CPU s with wall s).")
    prof = ""
    if args.profile:
        name = args.series[-1]
        prof = profile_default(kern, data[name][1], 0)
    path = write_report(
        "bench_optimizers", "Hyperparameter optimisers: Powell, our L-BFGS-B, scikit-learn (issue 3)",
        ["Kernel `SE + PER×SE` plus white noise, TSDL published split, model units from "
         "`FitData.from_dataset`. Methods: see the docstring of `bench/bench_optimizers.py`.",
         "## Results\n\n" + table + "\n\n" + notes,
         "## Targets (issue 3)\n\n" + "\n".join(f"- {v}" for v in verdicts),
         *([f"## cProfile of one default fit ({args.series[-1]}, seed 0)\n\n```\n{prof.strip()}\n```"]
           if prof else []),
         "## Summary lines\n\n```\n" + "\n".join(summary_lines) + "\n```"],
        threads)
    print()
    print(table)
    print()
    print(notes)
    print()
    print("Targets (issue 3):")
    for v in verdicts:
        print("  " + v)
    if prof:
        print(f"\ncProfile of one default fit ({args.series[-1]}, seed 0):\n{prof}")
    print(f"\n(written to {path.relative_to(path.parents[2])})\n")
    for s in summary_lines:
        print(s)


if __name__ == "__main__":
    main()

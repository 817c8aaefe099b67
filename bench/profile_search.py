"""Where a budgeted search's time goes: a cProfile of one serial run of a preset on a TSDL series.

The search runs in this process (``workers=1``) so that the profile sees every fit. Reported:
generations, fits by kind (screening fits on ``screen_points`` points, full fits, cache hits),
the mean seconds of a screening fit (from the kernels screened out) and of a full fit, LML
evaluations per second, and the functions with the most time of their own. Results also go to
``bench/results/profile_search.md``.

Run from the repository root, e.g. ``python -m bench.profile_search --series 06-internet
--seconds 120`` (``--data-dir``, default ``../shared/data/tsdl``).

**Short series** (issue 71): ``python -m bench.profile_search --m3 N0560 N1083 N2188 --seconds 15 --preset
quick --seed 1 [--trees ../wt-e7a .]`` profiles, instead of a TSDL series, the training parts of M3 series
(``x = 1 + i / period``, no test part) and, without cProfile (which inflates calls of a few µs several
times), times the parts of a search with CPU-time wrappers (:data:`PARTS`): the kernel fits, their
screened starts, L-BFGS-B and the evaluations inside it, the K build with its gradient, the Cholesky
factorisation, the gradient's adjoint, the PSD checks of new trees, and the model choice with its origins'
refits. Each tree given runs the same search in a child process (its own ``evocov_core``), side by side.
Results go to ``bench/results/profile_short.md``.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from pathlib import Path

from bench.common import limit_threads, load_series, md_table, write_report
from evocov_core.fitting.gp import FitStatus
from evocov_core.fitting.metrics import FitData
from evocov_core.searches import preset, run_search


def _fn(key: tuple[str, int, str]) -> str:
    path, line, name = key
    return f"{Path(path).name}:{line}({name})" if path != "~" else name


#: The timed parts of a search on a short series: label -> (module, attribute) of the function wrapped.
#: Missing attributes are skipped (an older tree has no compiled trees).
PARTS = {
    "kernel fits": ("evocov_core.fitting.fits", "fit_kernel"),
    "  screened starts (LML only)": ("evocov_core.fitting.optimize", "_screen"),
    "  L-BFGS-B runs": ("evocov_core.fitting.optimize", "_run_lbfgs"),
    "    evaluations (LML + gradient)": ("evocov_core.fitting.optimize", "_Objective.value_and_grad"),
    "      fused LML (+ gradient), one call": ("evocov_core.fitting.gp", "_fused_lml"),
    "      K and its tape (compiled)": ("evocov_core.language.compiled", "covariance_vjp"),
    "      K and its tape (walk)": ("evocov_core.fitting.gp", "covariance_vjp"),
    "      Cholesky (factorize)": ("evocov_core.fitting.gp", "factorize"),
    "      adjoint K⁻¹, ααᵀ (dpotri)": ("evocov_core.fitting.gp", "folded_lml_adjoint"),
    "PSD checks of new trees": ("evocov_core.searches.variation", "check_psd"),
    "model choice, origins' refits": ("evocov_core.searches", "choose_model"),
    "calibration refits": ("evocov_core.searches", "calibrate_returned"),
}

_CHILD = r"""
import json, sys, time, importlib, functools
import numpy as np
from evocov_core.compute.setup import prepare_process
prepare_process()
from evocov_core.data import Dataset
try:
    from evocov_core.searches import preset, run_search, search_data
except ImportError:  # trees before the search package's rename
    from evocov_core.search import preset, run_search, search_data
parts, x, y, seconds, name, seed = json.loads(sys.argv[1])
acc = {}
def wrap(label, modname, attr):
    try:
        mod = importlib.import_module(modname)
    except ImportError:
        return
    owner, _, leaf = attr.rpartition(".")
    holder = getattr(mod, owner) if owner else mod
    f = getattr(holder, leaf, None)
    if f is None:
        return
    def timed(*a, **k):
        t = time.process_time()
        try:
            out = f(*a, **k)
        finally:
            d = acc.setdefault(label, [0.0, 0]); d[0] += time.process_time() - t; d[1] += 1
        if leaf == "covariance_vjp" and out is not None:  # the reverse pass is evaluation too
            K, vjp = out
            def timed_vjp(G):
                t = time.process_time()
                try:
                    return vjp(G)
                finally:
                    d = acc.setdefault(label, [0.0, 0]); d[0] += time.process_time() - t
            return K, timed_vjp
        return out
    setattr(holder, leaf, functools.wraps(f)(timed))
for label, (modname, attr) in parts.items():
    wrap(label, modname, attr)
ds = Dataset.from_arrays(np.array(x), np.array(y), test_fraction=0.0)
cfg = preset(name, time_budget=seconds)
data = search_data(ds, cfg)
c0, w0 = time.process_time(), time.perf_counter()
r = run_search(data, cfg, seed=seed, workers=1)
print(json.dumps({"cpu": time.process_time() - c0, "wall": time.perf_counter() - w0, "fits": r.n_evaluations,
                  "parts": acc}))
"""


def profile_short(names: list[str], trees: list[Path], seconds: float, preset_name: str, seed: int) -> None:
    """Time the parts of a search on M3 series in each tree (a child process each, interleaved)."""
    import json
    import os
    import subprocess
    import sys

    from bench.mcomp import load_set

    threads = limit_threads()
    every = {s.unique_id: s for s in load_set("M3")}
    sections = []
    for name in names:
        s = every[name]
        x = [1.0 + i / s.period for i in range(len(s.x))]
        arg = json.dumps([PARTS, x, [float(v) for v in s.x], seconds, preset_name, seed])
        runs = {}
        for tree in trees:
            env = dict(os.environ, PYTHONPATH=str(tree.resolve()))
            done = subprocess.run([sys.executable, "-c", _CHILD, arg], cwd=tree, env=env, capture_output=True,
                                  text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"{tree}: {done.stderr[-3000:]}")
            runs[tree] = json.loads(done.stdout.strip().splitlines()[-1])
        head = ["part"] + [f"{t.resolve().name}: µs a kernel (calls a kernel, share)" for t in trees]
        rows = []
        for label in PARTS:
            cells = []
            for tree in trees:
                r = runs[tree]
                sec, calls = r["parts"].get(label, [0.0, 0])
                cells.append("-" if not calls else f"{1e6 * sec / r['fits']:.0f} ({calls / r['fits']:.1f}, "
                             f"{100 * sec / r['cpu']:.0f} %)")
            rows.append([label, *cells])
        rows.append(["search, CPU", *(f"{1e6 * runs[t]['cpu'] / runs[t]['fits']:.0f} (100 %)" for t in trees)])
        rows.append(["kernels fitted, CPU s, wall s",
                     *(f"{runs[t]['fits']}, {runs[t]['cpu']:.1f}, {runs[t]['wall']:.1f}" for t in trees)])
        table = md_table(head, rows, "l" + "r" * len(trees))
        sections.append(f"### {name} ({len(s.x)} training points, period {s.period})\n\n{table}")
        print(sections[-1], flush=True)
    write_report("profile_short", "Where a search's time goes on short M3 series (issue 71)",
                 [f"Preset `{preset_name}`, `--time-budget {seconds:g}`, seed {seed}, one worker (this process); "
                  "CPU seconds of each part (nested parts are inside the part above them), per kernel fitted.",
                  *sections], threads)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--series", default="06-internet")
    ap.add_argument("--seconds", type=float, default=120.0, help="time budget (default 120)")
    ap.add_argument("--preset", default="standard", help="preset whose settings run (default standard)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--top", type=int, default=15, help="functions listed (default 15)")
    ap.add_argument("--data-dir", type=Path, default=Path("../shared/data/tsdl"))
    ap.add_argument("--m3", nargs="+", metavar="SERIES", help="M3 series to profile by parts instead (issue 71)")
    ap.add_argument("--trees", type=Path, nargs="+", default=[Path(".")],
                    help="with --m3: source trees profiled side by side (default: this one)")
    args = ap.parse_args(argv)
    if args.m3:
        profile_short(args.m3, args.trees, args.seconds, args.preset, args.seed)
        return
    threads = limit_threads()

    ds = load_series(args.data_dir, args.series)
    cfg = preset(args.preset, time_budget=args.seconds)
    data = FitData.from_dataset(ds, split_fraction=cfg.metric_split)
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    r = run_search(data, cfg, seed=args.seed, workers=1)
    prof.disable()
    wall = time.perf_counter() - t0

    screened = [x.seconds for x in r.records if x.status == FitStatus.SCREENED_OUT]
    full = [x.seconds for x in r.records if x.status != FitStatus.SCREENED_OUT]
    stats = pstats.Stats(prof)
    raw = stats.stats  # type: ignore[attr-defined]
    n_lml = sum(v[1] for k, v in raw.items() if k[2] in ("lml", "lml_and_grad") and k[0].endswith("gp.py"))
    facts = [("series, n_train", f"{args.series}, {ds.n_train}"),
             ("preset, budget", f"{args.preset}, {args.seconds:g} s"),
             ("wall", f"{wall:.1f} s"), ("generations", str(len(r.history))), ("restarts", str(r.restarts)),
             ("full fits (promoted or unscreened)", str(r.n_evaluations)), ("screening fits", str(r.n_screen_fits)),
             ("cache hits", str(r.n_cache_hits)),
             ("mean s of a screening fit (kernels screened out)",
              f"{sum(screened) / len(screened):.3f}" if screened else "-"),
             ("mean s of a full fit", f"{sum(full) / len(full):.3f}" if full else "-"),
             ("LML (+ gradient) evaluations per second", f"{n_lml / wall:.1f}")]
    top = sorted(raw.items(), key=lambda kv: kv[1][2], reverse=True)[:args.top]
    rows = [[_fn(k), str(v[1]), f"{v[2]:.1f}", f"{100 * v[2] / wall:.0f} %"] for k, v in top]
    tables = [md_table(["", ""], facts, "ll"),
              "Functions with the most time of their own:",
              md_table(["function", "calls", "own s", "share of wall"], rows, "lrrr")]
    path = write_report("profile_search", "Where a budgeted search's time goes", ["## Run", *tables], threads)
    print("\n\n".join(tables))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

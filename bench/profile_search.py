"""Where a budgeted search's time goes: a cProfile of one serial run of a preset on a TSDL series.

The search runs in this process (``workers=1``) so that the profile sees every fit. Reported:
generations, fits by kind (screening fits on ``screen_points`` points, full fits, cache hits),
the mean seconds of a screening fit (from the kernels screened out) and of a full fit, LML
evaluations per second, and the functions with the most time of their own. Results also go to
``bench/results/profile_search.md``.

Run from the repository root, e.g. ``python -m bench.profile_search --series 06-internet
--seconds 120`` (``--data-dir``, default ``../shared/data/tsdl``).
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


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--series", default="06-internet")
    ap.add_argument("--seconds", type=float, default=120.0, help="time budget (default 120)")
    ap.add_argument("--preset", default="standard", help="preset whose settings run (default standard)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--top", type=int, default=15, help="functions listed (default 15)")
    ap.add_argument("--data-dir", type=Path, default=Path("../shared/data/tsdl"))
    args = ap.parse_args(argv)
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

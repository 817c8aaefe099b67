"""``python -m evocov_core panel``: many series of a long table, each with its own kernel (:mod:`evocov_core.panel`)."""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

from evocov_core.present.cli_args import CliError, add_exec_args, add_setting_args, int_in, setting_overrides

__all__ = ["add_panel_parser", "cmd_panel"]


def _panel_progress(quiet: bool):
    """A progress bar with an ETA on stderr: redrawn in place on a terminal, a line every 5 % elsewhere."""
    tty = sys.stderr.isatty()
    shown = {"pct": -1}

    def fmt(seconds: float) -> str:
        if not math.isfinite(seconds):
            return "--:--"
        m, sec = divmod(round(seconds), 60)
        h, m = divmod(m, 60)
        return f"{h}:{m:02d}:{sec:02d}" if h else f"{m:02d}:{sec:02d}"

    def report(p) -> None:
        if quiet:
            return
        pct = 100 * p.done / p.total if p.total else 100.0
        width = 30
        bar = "#" * int(width * p.done / max(1, p.total))
        text = (f"[{bar:<{width}}] {p.done}/{p.total} ({pct:.0f} %) elapsed {fmt(p.elapsed)} ETA {fmt(p.eta)}"
                + (f" (resumed {p.resumed})" if p.resumed else "") + (f" | {p.uid}: {p.status}" if p.uid else ""))
        if tty:
            print("\r" + text[:150].ljust(150), end="\n" if p.done == p.total else "", file=sys.stderr, flush=True)
        elif int(pct // 5) != shown["pct"] or p.done == p.total:
            shown["pct"] = int(pct // 5)
            print(text, file=sys.stderr, flush=True)

    return report


def cmd_panel(args: argparse.Namespace) -> int:
    from evocov_core.data.table import read_table
    from evocov_core.panel.run import forecast_panel
    from evocov_core.present.glance import kernel_phrase

    if args.budget is not None and args.time_budget is not None:
        raise CliError("give --budget (seconds per series) or --time-budget, not both")
    df = read_table(args.data)
    if args.covariates and not args.future:
        raise CliError("--covariates need their future values: --future FILE (unique_id, ds and each covariate for "
                       "the --horizon steps after each series)")
    future = read_table(args.future) if args.future else None
    overrides = setting_overrides(args)
    t0 = time.perf_counter()
    result = forecast_panel(df, args.horizon, preset=args.preset, seed=args.seed, budget=args.budget,
                            season_length=args.season_length, id_col=args.id_col, ds_col=args.ds_col,
                            y_col=args.y_col, workers=args.workers, scheduler=args.scheduler, out=args.out,
                            progress=_panel_progress(args.quiet), describe=kernel_phrase,
                            panel_priors=args.panel_priors, algorithm=args.algorithm,
                            covariates=tuple(args.covariates or ()), X_df=future, **overrides)
    counts = result.series["status"].value_counts()
    said = ", ".join(f"{int(counts[k])} {k}" for k in ("ok", "fallback", "no_data", "error") if k in counts)
    print(f"{len(result.series)} series ({said}) in {time.perf_counter() - t0:.1f} s"
          + (f", {result.resumed} read from an earlier run" if result.resumed else "")
          + f"; wrote {Path(args.out) / 'forecasts.csv'}, {Path(args.out) / 'series.csv'} and the kernel files")
    for row in result.series[result.series.status == "fallback"].itertuples():
        print(f"  {row.unique_id}: {row.reason} (forecast: {row.forecast})")
    if result.errors:
        bad = result.series[result.series.status == "error"]
        print(f"error: {result.errors} series failed with an error of the program (not of their data), e.g. "
              f"{bad.unique_id.iloc[0]}: {bad.reason.iloc[0]}; please report it", file=sys.stderr)
        return 1
    return 0


def add_panel_parser(sub: Any) -> None:
    """Add the ``panel`` command to ``sub``, the command line's ``add_subparsers()``."""
    from evocov_core.searches.config import ALGORITHMS
    from evocov_core.searches.presets import PRESETS

    p = sub.add_parser("panel", help="forecast many series of a long table (unique_id, ds, y), each with its own "
                                     "kernel, resumably")
    p.add_argument("--data", required=True, help="CSV file in long format: one row per series and time stamp")
    p.add_argument("--horizon", type=int_in(1, 10_000, "--horizon"), required=True, metavar="STEPS",
                   help="steps to forecast after each series' last observation")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="folder of the run: forecasts.csv, series.csv, kernels/; run the same command again to "
                        "resume it")
    p.add_argument("--id-col", help="column of the series' names (default: unique_id, or guessed)")
    p.add_argument("--ds-col", help="column of the time stamps, dates or numbers (default: ds, or guessed)")
    p.add_argument("--y-col", help="column of the values; empty cells are points not observed (default: y, or "
                                   "guessed)")
    p.add_argument("--covariates", nargs="+", metavar="COLUMN",
                   help="columns with known futures (a price, a holiday flag): each series' search estimates their "
                        "effect and searches its kernel on what they leave; needs --future")
    p.add_argument("--future", metavar="FILE",
                   help="CSV of the covariates' future values: unique_id, ds and each covariate, the --horizon steps "
                        "after each series (statsforecast's X_df); the forecast is at those times")
    p.add_argument("--season-length", type=int_in(1, 100_000, "--season-length"), metavar="STEPS",
                   help="steps in a season when ds holds numbers (12 monthly, 4 quarterly, 1 yearly)")
    p.add_argument("--algorithm", choices=ALGORITHMS, default="evocov")
    p.add_argument("--preset", choices=list(PRESETS), default="panel",
                   help="panel: 5 s of one core a series (default); any search preset")
    p.add_argument("--budget", type=float, metavar="SECONDS", help="seconds of one core per series")
    p.add_argument("--panel-priors", action="store_true",
                   help="learn hyperparameter priors from the panel's own series first (up to 100 of them) and fit "
                        "every series' kernels under them")
    add_setting_args(p, skip=("horizon",))  # --horizon is the panel's own, and sets it
    add_exec_args(p)
    p.set_defaults(func=cmd_panel)

"""Command line: ``python -m evocov_core {search,predict,forecast,compare,report,explore,check-kernel} ...``.

Every user error (bad path, malformed CSV, invalid setting, refused kernel file) prints
one line ``error: …`` on stderr and exits with status 2; no traceback.

The benchmarks are not part of the installed package: they run from a clone of the
repository as ``python -m bench ...`` (``bench/README.md``).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from evocov_core.present.cli_args import CliError, add_exec_args, add_setting_args, int_in, setting_overrides
from evocov_core.present.cli_panel import add_panel_parser

__all__ = ["main"]


def process_seconds() -> float:
    """Seconds since this process started: the interpreter's start and the imports (0 where unknown).

    Read from ``/proc`` (Linux): the process's start time in clock ticks since boot
    (``/proc/self/stat``, field 22) against the time since boot (``/proc/uptime``), both to
    about 10 ms. A search command's time budget counts from there, so that the budget is the
    whole command's wall time, not only the search's.
    """
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()  # the name may hold spaces: split after it
        with open("/proc/uptime", encoding="ascii") as fh:
            uptime = float(fh.read().split()[0])
        return max(0.0, uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))  # fields[0] is field 3
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


def _dataset(args: argparse.Namespace, test_fraction: float | None = None):
    from evocov_core.data.dataset import validate_split
    from evocov_core.data.frame import load_csv

    tf = args.test_fraction if test_fraction is None else test_fraction
    if tf is not None:
        validate_split(tf)  # before reading: a fraction of 0.95 is refused as such
    ds = load_csv(args.data, x=args.x, y=args.y, test_fraction=tf, max_points=None,
                  duplicates="keep" if getattr(args, "keep_duplicates", False) else "average",
                  missing=getattr(args, "missing", "refuse"), covariates=getattr(args, "covariates", None) or ())
    validate_split(ds.test_fraction, ds.n_train)
    for note in ds.notes:  # what reading changed (rows sorted, repeated x averaged, rows dropped)
        print(f"note: {args.data}: {note}", file=sys.stderr)
    return ds


def _check_out(path: str | None, flag: str = "--out") -> None:
    """Refuse an output path that cannot be written, before any work (a search can take hours)."""
    if path is None:
        return
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise CliError(f"{flag} {path} is a folder; give a file name")
    if not parent.is_dir():
        raise CliError(f"{flag} {path}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise CliError(f"{flag} {path}: no permission to write there")


def _write_text(path: str, text: str) -> None:
    _check_out(path)
    Path(path).write_text(text, encoding="utf-8")


def _progress_printer(quiet: bool):
    def report(p) -> None:
        if quiet:
            return
        best = p.best
        desc = f"q={best.q} BIC={best.bic:.2f} {best.kernel.infix[:70]}" if best is not None else "no kernel yet"
        mean = f"{p.stats.mean_bic:.1f}" if math.isfinite(p.stats.mean_bic) else "-"
        flag = " (restart)" if p.stats.restarted else ""
        left = p.time_left
        head = f"[{p.generation}]" if left is not None else f"[{p.generation}/{p.total_generations}]"
        clock = f"{p.elapsed:6.1f}s ({left:.0f}s left)" if left is not None else f"{p.elapsed:6.1f}s"
        print(f"{head} {clock} evals={p.n_evaluations} "
              f"gen best={p.stats.best_bic:.2f} mean={mean}{flag} | best {desc}", file=sys.stderr, flush=True)

    return report


# --- commands ---------------------------------------------------------------------


def cmd_check_kernel(args: argparse.Namespace) -> int:
    from evocov_core.language.psd import PSDConfig, check_psd
    from evocov_core.runs.kernel_file import load_kernel_file

    kf = load_kernel_file(args.kernel)
    report = check_psd(kf.kernel, np.random.default_rng(0), PSDConfig(w=args.w))
    print(f"expression: {kf.kernel.prefix}")
    print(f"formula:    {kf.kernel.infix}")
    print(f"q:          {kf.q}  ({kf.kernel.n_params} kernel hyperparameters + noise)")
    print(f"depth:      {kf.kernel.depth}   nodes: {kf.kernel.size}")
    print(f"PSD check:  {report}")
    for k, v in kf.scores.items():
        if v is not None:
            print(f"{k + ':':<13} {v}")
    return 0 if report.ok else 1


def _kernel_and_data(args: argparse.Namespace):
    """``--kernel`` and the data, split as the kernel file was scored unless ``--test-fraction`` says otherwise."""
    from evocov_core.data.dataset import units_mismatch, validate_split
    from evocov_core.data.limits import DataError
    from evocov_core.runs.kernel_file import load_kernel_file

    _check_out(getattr(args, "out", None))
    kf = load_kernel_file(args.kernel)
    if kf.covariates is not None and not getattr(args, "covariates", None):
        args.covariates = list(kf.covariates.names)  # the kernel's own covariates, read from the data
    if args.test_fraction is None:
        tf = kf.scores.number("test_fraction")  # as recorded: one a split cannot take is refused below
        if tf is not None:
            try:
                validate_split(tf)
            except DataError as exc:
                raise CliError(f"{args.kernel} was scored with test fraction {tf}, which these data cannot take "
                               f"({exc}); pass --test-fraction") from None
            args.test_fraction = tf
        else:  # not recorded (a file written by hand): the search's default
            args.test_fraction = 0.1
    ds = _dataset(args)
    args.covariate_effect = None
    if kf.covariates is not None:  # the kernel is of y − βᵀc along time: these data too, with βᵀc kept to add back
        from evocov_core.forecast.covariates import on_time

        cols = [1 + ds.covariates.index(n) for n in kf.covariates.names if n in ds.covariates]
        timed = on_time(ds, kf.covariates)
        args.covariate_effect = kf.covariates.effect(ds.x[:, cols])
        ds = timed
        print(f"note: {args.kernel} holds the effect of {', '.join(kf.covariates.names)}: it is taken out of "
              f"{ds.y_label} and the kernel (and any other forecaster here) forecasts what it leaves; errors are "
              "the same as with it added back", file=sys.stderr)
    # Another number of input columns is refused where the inputs are mapped (Normalisation.x_to_model).
    if kf.normalisation is not None and (far := units_mismatch(kf.normalisation, ds.norm)) is not None:
        print(f"warning: {args.kernel} was fitted on other data: {far}; its hyperparameters may not suit "
              "these data (search again on them)", file=sys.stderr)
    return kf, ds


def cmd_predict(args: argparse.Namespace) -> int:

    kf, ds = _kernel_and_data(args)
    model = kf.model(fallback_norm=ds.norm)
    X = ds.x if args.all else ds.X_test
    if X.shape[0] == 0:
        raise CliError("no test points to predict (raise --test-fraction or pass --all)")
    pred = model.predict(ds.X_train, ds.y_train, X)
    mean = pred.mean
    if args.covariate_effect is not None:  # the covariates' effect at these points, added back
        mean = mean + (args.covariate_effect if args.all else args.covariate_effect[~ds.train])
    out = pd.DataFrame({"x": pred.x[:, 0], "mean": mean, "std": pred.std, "std_latent": pred.std_f})
    if pred.x.shape[1] > 1:
        for j in range(pred.x.shape[1]):
            out.insert(j, f"x{j}", pred.x[:, j])
        out = out.drop(columns="x")
    _write_text(args.out, out.to_csv(index=False))
    rmse = model.test_rmse(ds)
    print(f"wrote {len(out)} predictions to {args.out}")
    if rmse is not None:
        print(f"test RMSE: {rmse:.6g} on {ds.n_test} test points ({ds.y_label})")
    return 0


def cmd_forecast(args: argparse.Namespace) -> int:
    from evocov_core.forecast.future import forecast_future

    _check_out(args.out)
    if not 0.0 < args.time_limit <= 86400:
        raise CliError(f"--time-limit must be above 0 and at most 86400 seconds, got {args.time_limit}")
    kf, ds = _kernel_and_data(args)
    if sum(v is not None for v in (args.at, args.horizon, args.future)) > 1:
        raise CliError("give one of --horizon (the next steps), --at (times) and --future (times and covariates)")
    if kf.covariates is not None:
        if args.future is None:
            raise CliError(f"{args.kernel} uses the covariates {', '.join(kf.covariates.names)}: give their future "
                           "values with --future FILE (a time column and one column each)")
        from evocov_core.data.table import read_table
        from evocov_core.forecast.covariates import forecast_with_covariates

        fc = forecast_with_covariates(kf, ds, read_table(args.future), time_limit=args.time_limit)
    else:
        if args.future is not None:
            args.at = args.future  # times alone: the kernel uses no covariates
        fc = forecast_future(kf, ds, args.horizon, time_limit=args.time_limit, at=_times(args.at))
    _write_text(args.out, fc.frame(ds.x_label).to_csv(index=False))
    print(fc.note, file=sys.stderr)
    print(f"wrote {len(fc.x)} steps after the last observation to {args.out}")
    return 0


def _times(text: str | None) -> list[str] | None:
    """``--at``: times separated by commas, or a CSV file whose first column holds them (a header line
    allowed)."""
    if text is None:
        return None
    if Path(text).is_file():
        from evocov_core.data.table import read_table

        return [str(v) for v in read_table(text).iloc[:, 0].dropna()]
    return [t.strip() for t in text.split(",") if t.strip()]


def _check_comparison_args(args: argparse.Namespace) -> None:
    if not (0.0 <= args.baseline_budget <= 86400):
        raise CliError(f"--baseline-budget must be between 0 and 86400 seconds, got {args.baseline_budget}")
    if not (0.0 < args.time_limit <= 86400):
        raise CliError(f"--time-limit must be above 0 and at most 86400 seconds, got {args.time_limit}")
    bad = [m for m in args.season_length or () if m < 1]
    if bad:
        raise CliError(f"--season-length takes whole numbers of steps of at least 1, got {bad[0]}")


def _gpss_done(args: argparse.Namespace, kf, ds):
    """``--gpss-kernel``: a GPSS search's kernel file on these data, as the GPSS baseline (None without it).

    Refused with a message when it was not found by GPSS or was fitted on other points or in other
    units than ``kf`` is compared on."""
    from evocov_core.present.gp_comparison import FittedBaseline, comparison_units
    from evocov_core.runs.kernel_file import load_kernel_file

    if not args.gpss_kernel:
        return None
    g = load_kernel_file(args.gpss_kernel)
    found_by = g.scores.algorithm
    if found_by != "gpss":
        raise CliError(f"--gpss-kernel takes the kernel file of a GPSS search (search --algorithm gpss --out FILE); "
                       f"{args.gpss_kernel} was written by {found_by or 'no recorded search'}")
    done = FittedBaseline(g.to_fit(ds.n_train), g.normalisation or ds.norm,
                          note=f"the GPSS search in {args.gpss_kernel}", seconds=g.scores.seconds)
    if not done.fits(kf, ds):
        n = comparison_units(kf, ds)[1]
        raise CliError(f"--gpss-kernel: {args.gpss_kernel} was fitted on {done.fit.n:,} points or in other units, not "
                       f"on the {n:,} training points of these data the kernel is compared on (same data file, same "
                       "--test-fraction)")
    return done


def cmd_report(args: argparse.Namespace) -> int:
    from evocov_core.present.report_html import report_html

    _check_comparison_args(args)
    kf, ds = _kernel_and_data(args)
    gpss = _gpss_done(args, kf, ds)
    _write_text(args.out, report_html(kf, ds, baseline_budget=args.baseline_budget, seed=args.seed,
                                      classical=args.classical, season_lengths=args.season_length,
                                      time_limit=args.time_limit, gpss_done=gpss))
    print(f"wrote {args.out}: forecast against the SE"
          + (" and GPSS" if args.baseline_budget > 0 or gpss is not None else "")
          + " baselines" + (" and the classical forecasters" if args.classical else "")
          + f", components, residual checks and the kernel of {kf.kernel.infix}")
    return 0


def _table_text(table: pd.DataFrame) -> str:
    """The comparison table as aligned text: numbers to 4 significant digits, ``*`` on the best."""
    def fmt(v: object) -> str:
        return "-" if not isinstance(v, (int, float)) or not math.isfinite(v) else f"{v:.4g}"

    shown = pd.DataFrame({
        "method": table["method"], "kind": table["kind"], "test RMSE": table["test_rmse"].map(fmt),
        "coverage 95%": table["coverage_95"].map(fmt), "CRPS": table["crps"].map(fmt),
        "interval score": table["interval_score"].map(fmt), "seconds": table["seconds"].map(fmt),
        "status": table["status"], "best": table["best"].map(lambda b: "*" if b else ""),
    })
    return shown.to_string(index=False)


def cmd_compare(args: argparse.Namespace) -> int:
    from evocov_core.present.compare import compare

    _check_comparison_args(args)
    kf, ds = _kernel_and_data(args)
    if ds.x.shape[1] != 1:
        raise CliError("compare forecasts a time series: the data need one input column")
    result = compare(kf, ds, baseline_budget=args.baseline_budget, seed=args.seed, season_lengths=args.season_length,
                     time_limit=args.time_limit, gpss_done=_gpss_done(args, kf, ds))
    table = result.table
    if args.out:
        _write_text(args.out, table.to_csv(index=False))
    print(_table_text(table))
    cf = result.classical
    if cf is not None:
        print(f"{ds.n_test} test points forecast from {ds.n_train} training points; seasons (steps): "
              f"{cf.seasons.describe()}" + "".join(f"; {n}" for n in cf.seasons.notes))
    for reason in table.loc[table["reason"] != "", "reason"]:
        print(reason)
    if args.out:
        print(f"wrote {args.out}")
    return 0


def _config_from_args(args: argparse.Namespace):
    from evocov_core.searches import preset
    from evocov_core.searches.config import with_derived

    return preset(args.preset, args.algorithm, **with_derived(setting_overrides(args)))


def _replay_setup(args: argparse.Namespace):
    """``search --replay FILE``: the file, its settings, seed and log, and the data split as it was."""
    from evocov_core.runs.kernel_file import load_kernel_file
    from evocov_core.searches.run_file import replay_inputs

    kf = load_kernel_file(args.replay)
    try:
        config, seed, log = replay_inputs(kf.run)
    except ValueError as exc:
        raise CliError(f"{args.replay}: {exc}") from None
    if args.test_fraction is None:
        args.test_fraction = kf.scores.test_fraction if kf.scores.test_fraction is not None else 0.1
    ds = _dataset(args)
    print(f"replaying {args.replay}: its settings ({config.algorithm}, time budget {config.time_budget:g} s) and "
          f"seed {seed}, without a clock; options other than the data's are ignored", file=sys.stderr)
    return kf, config, seed, log, ds


def cmd_search(args: argparse.Namespace) -> int:
    from evocov_core.runs.counts import fit_counts
    from evocov_core.runs.kernel_file import dump_kernel_file, search_kernel_file
    from evocov_core.searches import search_data
    from evocov_core.searches.budget import SPLIT

    t0 = time.perf_counter() - process_seconds()  # the budget counts from the process start
    kf = log = None
    _check_out(args.records, "--records")
    if args.replay:
        kf, config, seed, log, ds = _replay_setup(args)
    else:
        if args.out is None:
            raise CliError("--out FILE is required (the kernel file to write)")
        _check_out(args.out)
        if args.test_fraction is None:
            args.test_fraction = 0.1
        config, seed = _config_from_args(args), args.seed
        ds = _dataset(args)
    effect = None
    if ds.covariates:
        from evocov_core.forecast.covariates import searched_on

        ds, effect = searched_on(ds)
        print(f"covariates: {effect.reason}", file=sys.stderr)
    data = search_data(ds, config)
    print(f"{config.algorithm} on {ds.name}: {ds.n_train} training and {ds.n_test} test points, "
          f"{'replayed' if log is not None else 'preset ' + args.preset}, seed {seed}"
          + (f"; {data.approximation.describe()}" if data.on_subset else ""), file=sys.stderr)
    run_config = config
    if config.time_budget > 0 and log is None:
        # The budget is the command's: starting Python and importing, reading the data (seconds
        # at 100,000 rows) and writing the result come out of it too.
        spent = time.perf_counter() - t0 + SPLIT.write_reserve
        if config.time_budget - spent < 1.0:
            print(f"note: of the {config.time_budget:g} s time budget, starting, reading the data and the "
                  f"writing reserve take {spent:.1f} s; the search gets its floor of 1 s, so the command will "
                  "run over its budget", file=sys.stderr)
        run_config = config.with_(time_budget=max(1.0, config.time_budget - spent))
    ready = time.perf_counter() - t0
    from evocov_core.forecast.stage import search_and_forecast
    forecast = search_and_forecast(data, run_config, seed=seed, workers=args.workers, scheduler=args.scheduler,
                                   progress=_progress_printer(args.quiet), replay=log, dataset=ds)
    result = forecast.search
    best = result.best
    if best is None:
        if config.time_budget > 0 and log is None and result.n_evaluations == 0:
            raise CliError(f"no kernel was fitted within the {config.time_budget:g} s time budget, of which starting "
                           f"and reading the data took {ready:.1f} s: raise --time-budget")
        raise CliError("no kernel could be fitted on these data")
    # The command's seconds run from its start (reading the data and starting up included).
    doc = search_kernel_file(forecast, ds, seed=seed, config=run_config,
                             extra_scores={"seconds": round(time.perf_counter() - t0, 3)})
    if effect is not None:
        doc["covariates"] = effect.to_dict()
    if args.out is not None:
        _write_text(args.out, dump_kernel_file(doc))
    if args.records:
        pd.DataFrame([r.to_dict() for r in result.records]).to_csv(args.records, index=False)
    print(f"best kernel: {best.kernel.infix}")
    print(f"q={best.q}  BIC={best.bic:.4f}  LML={best.lml:.4f}  {best.metric}={best.metric_value:.4f}")
    if best.test_rmse is not None:
        print(f"test RMSE: {best.test_rmse:.6g}")
    if result.selection:
        low = result.best_bic
        from evocov_core.searches.select import choice_description, choice_rule

        rule = choice_rule(config, data.on_subset)
        print(choice_description(rule, len(result.selection), config.metric_split,
                                 1.0 if data.on_subset else config.form_margin)
              + f" Lowest BIC {low.bic:.4f} (q={low.q})"
              + (f", test RMSE {low.test_rmse:.6g}." if low is not None and low.test_rmse is not None else "."))
    if result.ensemble:
        from evocov_core.fitting.averaging import ensemble_test_rmse

        bma = ensemble_test_rmse(data, result.ensemble)
        if bma is not None:
            print(f"model average of {len(result.ensemble)} kernels: test RMSE {bma:.6g}")
    calibrated = result.calibration.describe()
    if calibrated:
        print(calibrated)
    combined = forecast.combination.describe()
    if combined:
        rmse = doc["scores"].get("forecast_test_rmse")
        print(combined + (f" Its test RMSE: {rmse:.6g}." if rmse is not None else ""))
    wrote = f"; wrote {args.out}" if args.out is not None else ""
    print(f"{fit_counts(result).describe()} in {time.perf_counter() - t0:.1f} s{wrote}")
    if kf is not None:
        stored = kf.scores.number("bic")
        same = (best.kernel.canonical == kf.kernel.canonical and stored is not None
                and math.isclose(best.bic, stored, rel_tol=1e-9, abs_tol=1e-9))
        if not same:
            print(f"replay differs from {args.replay}: it returned {kf.kernel.infix} with BIC {stored}")
            return 1
        print(f"replay reproduces {args.replay}: same kernel, BIC {best.bic:.10g}")
    return 0


def cmd_explore(args: argparse.Namespace) -> int:
    from evocov_core.fitting.fits import make_executor
    from evocov_core.fitting.optimize import Start, fit_kernel
    from evocov_core.runs.kernel_file import load_kernel_file
    from evocov_core.searches import explore_mutations, preset, search_data

    _check_out(args.out)
    kf = load_kernel_file(args.kernel)
    ds = _dataset(args)
    config = preset("quick", "evocov", metric=args.metric.replace("-", "_"))
    data = search_data(ds, config)
    # Refit the base on these data from its stored values, so the comparison is like for like.
    base = fit_kernel(kf.kernel, data, config.optim, np.random.default_rng(args.seed), Start(kf.theta, kf.log_noise))
    if not base.ok:
        raise CliError(f"the kernel cannot be fitted on these data: {base.reason}")
    with make_executor(data, config.optim, workers=args.workers, scheduler=args.scheduler) as ex:
        res = explore_mutations(base, data, config, ex, n_mutations=args.mutations, seed=args.seed,
                                progress=_progress_printer(args.quiet))
    rows = pd.DataFrame([r.to_dict() for r in res.search.records])
    _write_text(args.out, rows.to_csv(index=False))
    print(f"base: q={base.q} test RMSE={base.test_rmse} {base.kernel.infix}")
    print(f"{len(rows)} mutants: better fitted {res.better_fitted:.2f}, simpler {res.simpler:.2f}, "
          f"both {res.both:.2f}; wrote {args.out}")
    return 0


# --- parser -----------------------------------------------------------------------


def _add_data_args(p: argparse.ArgumentParser, *, test_default: float | None = 0.1) -> None:
    p.add_argument("--data", required=True, help="CSV file")
    p.add_argument("--x", help="input column (default: a date column, else the first numeric one)")
    p.add_argument("--y", help="output column (default: the last numeric column)")
    p.add_argument("--test-fraction", type=float, default=test_default,
                   help="last fraction of the x-range held out as test (default 0.1)")
    p.add_argument("--keep-duplicates", action="store_true", help="keep repeated x values instead of averaging")
    p.add_argument("--covariates", nargs="+", metavar="COLUMN",
                   help="columns known in advance (temperature, a price, a holiday flag): a search estimates their "
                        "linear effect and searches the kernel on what they leave; a forecast needs their future "
                        "values (forecast --future FILE). Commands that read a kernel file take its covariates")
    p.add_argument("--missing", choices=("refuse", "keep"), default="refuse",
                   help="rows whose value is empty or not a number: refuse the file (default), or keep them as "
                        "points not observed (the model conditions on the others at their own x)")


def _add_gpss_kernel_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpss-kernel", metavar="FILE",
                   help="the kernel file of a GPSS search on these data (search --algorithm gpss --out FILE): the "
                        "GPSS baseline, scored as it is instead of searching again (--baseline-budget is then unused)")


def _add_classical_args(p: argparse.ArgumentParser) -> None:
    from evocov_core.forecast.classical import DEFAULT_TIME_LIMIT

    p.add_argument("--season-length", type=int, nargs="+", metavar="STEPS",
                   help="season lengths of the classical forecasters, in steps, main one first (default: read "
                        "from the x spacing, e.g. 12 for monthly dates, 7 and 365 for daily)")
    p.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT, metavar="SECONDS",
                   help=f"seconds each classical forecaster may take (default {DEFAULT_TIME_LIMIT:g})")


def build_parser() -> argparse.ArgumentParser:
    from evocov_core.fitting.metrics import METRICS
    from evocov_core.searches.config import ALGORITHMS
    from evocov_core.searches.presets import PRESETS

    # both spellings are accepted (posterior-lml, posterior_lml); help shows each once
    metric_choices = list(dict.fromkeys([m.replace("_", "-") for m in METRICS] + list(METRICS)))
    metric_meta = "{" + ",".join(m.replace("_", "-") for m in METRICS) + "}"
    parser = argparse.ArgumentParser(prog="python -m evocov_core",
                                     description="Evolve Gaussian-process kernels from elementary expressions.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check-kernel", help="validate a kernel file")
    p.add_argument("kernel")
    p.add_argument("--w", type=int_in(1, 1000, "--w"), default=20,
                   help="random data sets of the PSD check, 1 to 1000 (default 20)")
    p.set_defaults(func=cmd_check_kernel)

    p = sub.add_parser("predict", help="predict with a kernel file")
    p.add_argument("--kernel", required=True)
    _add_data_args(p, test_default=None)
    p.add_argument("--all", action="store_true", help="predict at every x, not only the test part")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("forecast", help="forecast the steps after the last observation with a kernel file, as CSV")
    p.add_argument("--kernel", required=True)
    _add_data_args(p, test_default=None)
    p.add_argument("--horizon", type=int_in(1, 10_000, "--horizon"), default=None, metavar="STEPS",
                   help="steps after the last observation, at the data's step, at most the number of points "
                        "(default: as many as the test part)")
    p.add_argument("--future", metavar="FILE",
                   help="a CSV of the times to forecast at and the covariates' values at them (a time column, first "
                        "or named as the data's, and one column per covariate the kernel uses)")
    p.add_argument("--at", metavar="TIMES",
                   help="forecast at these times instead of the next steps: any times after the last observation, "
                        "separated by commas (dates for date data: 2024-03-15,2024-04-02), or a CSV file whose "
                        "first column holds them")
    p.add_argument("--time-limit", type=float, default=30.0, metavar="SECONDS",
                   help="seconds each classical member of the search's forecast may take (default 30)")
    p.add_argument("--out", required=True, help="CSV file to write: one row per step")
    p.set_defaults(func=cmd_forecast)

    p = sub.add_parser("report", help="a self-contained HTML report of a kernel file on a data set")
    p.add_argument("--kernel", required=True)
    _add_data_args(p, test_default=None)
    p.add_argument("--out", required=True, help="HTML file to write (opens offline)")
    p.add_argument("--baseline-budget", type=float, default=20.0, metavar="SECONDS",
                   help="seconds for the GPSS baseline the kernel is compared with (default 20; 0 = no GPSS, "
                        "the SE baseline only)")
    p.add_argument("--seed", type=int, default=0, help="seed of the baselines (same inputs, same report)")
    _add_gpss_kernel_arg(p)
    _add_classical_args(p)
    p.add_argument("--no-classical", dest="classical", action="store_false",
                   help="leave the classical forecasters (statsforecast) out")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("compare", help="a kernel file's forecast against GP and classical baselines, as a table")
    p.add_argument("--kernel", required=True)
    _add_data_args(p, test_default=None)
    p.add_argument("--out", help="also write the table to this CSV file")
    p.add_argument("--baseline-budget", type=float, default=20.0, metavar="SECONDS",
                   help="seconds for the GPSS baseline (default 20; 0 = no GPSS, the SE baseline only)")
    p.add_argument("--seed", type=int, default=0, help="seed of the GP baselines (same inputs, same table)")
    _add_gpss_kernel_arg(p)
    _add_classical_args(p)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("search", help="search for a kernel")
    _add_data_args(p, test_default=None)
    p.add_argument("--algorithm", choices=ALGORITHMS, default="evocov")
    p.add_argument("--preset", choices=list(PRESETS), default="quick",
                   help="quick: 60 s budget (default); standard: 5 min; paper: the paper's settings, no limit; "
                        "quick-fixed: the former quick, a fixed number of fits")
    add_setting_args(p)
    add_exec_args(p)
    p.add_argument("--out", help="kernel file (JSON) to write (required unless --replay)")
    p.add_argument("--records", help="also write every fitted kernel to this CSV")
    p.add_argument("--replay", metavar="KERNEL_FILE",
                   help="rerun the search that wrote this kernel file, with its settings and seed, stopping where "
                        "its clock stopped it (no time budget): the same kernel and BIC on a machine of the same "
                        "arithmetic (docs/design.md)")
    p.set_defaults(func=cmd_search)

    add_panel_parser(sub)

    p = sub.add_parser("explore", help="fit random mutations of a kernel")
    p.add_argument("--kernel", required=True)
    _add_data_args(p)
    p.add_argument("--mutations", type=int, default=200)
    p.add_argument("--metric", choices=metric_choices, metavar=metric_meta, default="lml")
    add_exec_args(p)
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_explore)

    return parser


#: Errors of modules the CLI imports only for some commands, which are the user's to fix:
#: module -> class name. Looked up among the loaded modules (an import only to name an error
#: would cost every command, a search's budget included), so a command that never loaded a
#: module cannot have raised its error.
_LAZY_USER_ERRORS = {"evocov_core.runs.store": "StoreVersionError"}

#: What ``evocov bench ...`` says: the benchmarks left the package for the clone's ``bench/``.
_BENCH_MOVED = ("error: the benchmarks are not part of the installed package; run `python -m bench ...` "
               "from the root of a clone of the repository (see bench/README.md)")


def _loaded_user_errors() -> tuple[type[BaseException], ...]:
    return tuple(getattr(sys.modules[m], name) for m, name in _LAZY_USER_ERRORS.items() if m in sys.modules)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    from evocov_core.compute.cluster import DaskSetupError
    from evocov_core.data.limits import DataError
    from evocov_core.fitting.gp import NumericalFailure
    from evocov_core.runs.kernel_file import KernelFileError
    from evocov_core.searches.config import ConfigError

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:  # a former subcommand: say where it went, not argparse's "invalid choice"
        print(_BENCH_MOVED, file=sys.stderr)
        return 2
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # a reader that went away shows up here, not at interpreter exit
        return status
    except (CliError, DataError, KernelFileError, ConfigError, DaskSetupError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except NumericalFailure as exc:
        # A search scores such kernels as failed fits; a kernel file given to predict, report or
        # compare has only its own values, which do not work on these data.
        print(f"error: the kernel's covariance cannot be used on these data ({exc}); check that the kernel file "
              "was fitted on them, or search again on them", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # ``... | head``: the reader closed the pipe; not an error of ours. Point stdout at
        # /dev/null so that the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:  # a file that cannot be read or written; other errors are ours: a traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if not isinstance(exc, _loaded_user_errors()):
            raise  # a programming error: its traceback, not a misleading one-liner
        print(f"error: {exc}", file=sys.stderr)
        return 2

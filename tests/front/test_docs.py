"""Every ``evocov_core`` module, name and path that the docs, the package's docstrings and comments, the dashboard
and the benchmarks name exists: a reference left behind by a move fails here, not in a reader's hands.

History (``CHANGELOG.md``) and the reports of finished studies (``bench/results``) keep the names of their day.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: What is read: the user's and developer's docs, and every source file but the tests.
SOURCES = sorted([ROOT / "README.md", ROOT / "bench" / "README.md", *ROOT.glob("docs/*.md"),
                  *ROOT.glob("evocov_core/**/*.py"), *ROOT.glob("bench/*.py"), *ROOT.glob("dashboard/*.py"),
                  *ROOT.glob("pages/*.py"), ROOT / "app.py"])
DOTTED = re.compile(r"\bevocov_core(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
PATH = re.compile(r"\bevocov_core(?:/[A-Za-z_][A-Za-z0-9_]*)+(?:\.py)?")


def resolves(ref: str) -> bool:
    """Whether ``evocov_core.a.b.c`` is a module, or a module and attributes of it (a dataclass's fields too)."""
    parts = ref.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for name in parts[i:]:
            fields = {f.name for f in dataclasses.fields(obj)} if dataclasses.is_dataclass(obj) else set()
            if name in fields:
                return True  # a field of a dataclass: nothing further to follow
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


def stale(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    bad = [ref for ref in sorted(set(DOTTED.findall(text))) if not resolves(ref)]
    bad += [ref for ref in sorted(set(PATH.findall(text)))
            if not ((ROOT / ref).exists() or (ROOT / ref).with_suffix(".py").exists())]
    return bad


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_evocov_core_reference_resolves(path: Path):
    assert stale(path) == []


def test_the_check_can_fail(tmp_path: Path):
    doc = tmp_path / "doc.md"
    doc.write_text("See `evocov_core/gp.py`, :func:`evocov_core.parallel.run_measured` and "
                   "`evocov_core.searches.validate.OriginScores.z`, `evocov_core/fitting/gp.py`.", encoding="utf-8")
    assert stale(doc) == ["evocov_core.parallel.run_measured", "evocov_core/gp.py"]

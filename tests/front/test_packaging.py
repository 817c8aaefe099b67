"""``pip install .``: an importable package, the ``evocov`` command, the bundled data found without the clone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[2]


def test_dependencies_match_requirements():
    """pyproject's dependencies and requirements.txt name the same packages with the same bounds."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    listed = [line.split("#")[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    assert sorted(declared) == sorted(x for x in listed if x)


def test_readme_pictures_exist_and_are_small():
    """The pictures the README and docs/ show are committed, under 300 KB each; the README shows the
    dashboard's Results page, and the page showing the report pictures names the command that remakes them."""
    import re

    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    shown = {}
    for page in pages:
        for rel in re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", page.read_text(encoding="utf-8")):
            path = (page.parent / rel).resolve()
            assert 0 < path.stat().st_size < 300_000, (page.name, rel)
            shown.setdefault(path.name, []).append(page)
    assert (ROOT / "README.md") in shown.get("results.png", [])
    report_pages = shown.get("report-airline.png", [])
    assert report_pages and all("python -m bench report-pictures" in p.read_text(encoding="utf-8")
                                for p in report_pages)
    from bench.report import report_pictures  # noqa: F401 - the command that remakes them exists


def test_every_subpackage_is_packaged():
    """pyproject's packages are every folder of evocov_core with an ``__init__.py`` (a folder left out is
    installed without its modules) and the bundled data."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "evocov_core").rglob("__init__.py")}
    assert {"evocov_core.data", "evocov_core.present.charts"} <= found  # the check sees nested folders
    assert listed == found | {"evocov_data"}


@pytest.mark.slow
def test_installed_package_runs_without_the_clone(tmp_path):
    # Build from a copy: pip builds in the source tree (build/, *.egg-info), which must stay clean.
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for name in ("evocov_core", "data"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "site"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-cache-dir",
         "--target", str(target), str(src)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    assert (target / "bin" / "evocov").is_file()
    # Outside the clone, with only the installed copy on the path.
    env = {**os.environ, "PYTHONPATH": str(target)}
    code = ("import evocov_core, evocov_core.data as d, evocov_core.present.figures; "
            "print(evocov_core.__file__); print(d.DATA_DIR); print(len(d.bundled_datasets()))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    module, data_dir, n = run.stdout.split()
    assert Path(module).is_relative_to(target) and Path(data_dir).is_relative_to(target)
    assert int(n) >= 5 and (Path(data_dir) / "airline.csv").is_file()
    cli = subprocess.run([str(target / "bin" / "evocov"), "search", "--help"], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=300)
    assert cli.returncode == 0 and "--time-budget" in cli.stdout and "--families" in cli.stdout


@pytest.mark.slow
def test_the_wheel_holds_the_package_not_the_lab(tmp_path):
    """Issue 56: the benchmarks and studies (``bench/``) stay in the clone; the wheel ships the package,
    the dashboard's wall-time estimate (``evocov_core/searches/wall_time.py``) included."""
    import importlib.util
    import zipfile

    if importlib.util.find_spec("setuptools") is None:
        pytest.skip("setuptools is not installed: no wheel to build without build isolation")
    # Build from a copy that has the lab beside the package, as a clone does: pip builds in the
    # source tree (build/, *.egg-info), which must stay clean.
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for name in ("evocov_core", "data", "bench"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "results"))
    out = tmp_path / "wheels"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-cache-dir",
         "-w", str(out), str(src)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    wheels = list(out.glob("evocov-*.whl"))
    assert len(wheels) == 1, wheels
    names = zipfile.ZipFile(wheels[0]).namelist()
    assert "evocov_core/searches/wall_time.py" in names and "evocov_data/airline.csv" in names
    # Every module of every layer (a subpackage missing from pyproject's list would be left out).
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "evocov_core").rglob("*.py")
               if "__pycache__" not in p.parts}
    assert sources - set(names) == set()
    assert [n for n in names if "bench" in n] == []  # no bench/, no benchmarks subpackage

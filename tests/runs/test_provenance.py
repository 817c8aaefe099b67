"""The git commit and dirty flag recorded beside results, and what happens without git."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np

from evocov_core.compute import measure, provenance
from evocov_core.fitting.optimize import FitResult, FitStatus
from evocov_core.language.library import squared_exponential
from evocov_core.runs.kernel_file import dump_kernel_file, kernel_file_dict, parse_kernel_file

ROOT = Path(__file__).resolve().parents[2]


def _fit() -> FitResult:
    k = squared_exponential()
    return FitResult(k, (0.1, -0.5), -3.0, 0.0, FitStatus.OK, "", "lml", 1.0, 1.0, 2.0, k.q, 20, 5, 0.1)


def test_git_state_of_this_checkout() -> None:
    state = provenance.git_state(ROOT)
    if not (ROOT / ".git").exists():  # an exported tree: nothing to say
        assert state == {"commit": None, "dirty": None}
        return
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert state["commit"] == head and re.fullmatch(r"[0-9a-f]{40}", head)
    assert isinstance(state["dirty"], bool)


def test_git_state_outside_a_checkout_is_none(tmp_path: Path) -> None:
    assert provenance.git_state(tmp_path) == {"commit": None, "dirty": None}


def test_git_state_never_raises(tmp_path: Path, monkeypatch) -> None:

    def missing(*args, **kwargs):
        raise FileNotFoundError("git")

    def slow(*args, **kwargs):
        raise subprocess.TimeoutExpired("git", provenance.GIT_TIMEOUT)

    for broken in (missing, slow):
        provenance._state.cache_clear()
        monkeypatch.setattr(measure.subprocess, "run", broken)
        assert provenance.git_state(tmp_path / "sub") == {"commit": None, "dirty": None}
    provenance._state.cache_clear()


def test_dirty_means_a_tracked_file_changed(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "a.txt").write_text("one")
    git("add", "a.txt")
    git("-c", "user.email=t@example.org", "-c", "user.name=t", "commit", "-qm", "one")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "new.csv").write_text("untracked output")
    provenance._state.cache_clear()
    clean = provenance.git_state(tmp_path)
    assert clean["commit"] is not None and clean["dirty"] is False
    (tmp_path / "a.txt").write_text("two")
    provenance._state.cache_clear()
    assert provenance.git_state(tmp_path) == {"commit": clean["commit"], "dirty": True}
    provenance._state.cache_clear()


def test_kernel_files_record_the_commit_and_old_files_still_load() -> None:
    doc = kernel_file_dict(_fit(), None)
    assert doc["git"] == provenance.git_state()
    kf = parse_kernel_file(dump_kernel_file(doc))
    assert (kf.git_commit, kf.git_dirty) == (doc["git"]["commit"], doc["git"]["dirty"])
    old = {k: v for k, v in doc.items() if k != "git"}  # written before the field existed
    kf_old = parse_kernel_file(json.dumps(old))
    assert (kf_old.git_commit, kf_old.git_dirty) == (None, None)
    assert kf_old.theta == kf.theta and np.isclose(kf_old.log_noise, -3.0)
    odd = {**doc, "git": {"commit": "not a hash", "dirty": "yes"}}  # malformed: ignored, not refused
    assert parse_kernel_file(json.dumps(odd)).git_commit is None

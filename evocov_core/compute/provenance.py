"""Which code made a result: the git commit of the EvoCov checkout and whether it had local changes.

Every kernel file and every benchmark folder's ``run.json`` records :func:`git_state` under
``"git"``: ``{"commit": "<40 hex digits>", "dirty": false}``. ``dirty`` is true when tracked
files differ from the commit (``git status --porcelain --untracked-files=no``: results being
written into an untracked folder of the checkout do not count). Both are ``None`` when the code
is not a git checkout (an installed package), git is missing or does not answer in time.

Never raises. Asked once per process, when this module is imported: the code a process runs is
the code it imported, not what the checkout holds when a long run ends.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from evocov_core.compute.measure import command_output

__all__ = ["GIT_TIMEOUT", "git_state"]

#: Seconds each git call may take before the answer is taken as unknown.
GIT_TIMEOUT = 5.0

_HERE = Path(__file__).resolve().parent


def _git(*args: str, cwd: Path) -> str | None:
    """Standard output of ``git <args>`` in ``cwd``, or None on any failure."""
    return command_output(["git", *args], cwd=cwd, timeout=GIT_TIMEOUT)


@lru_cache(maxsize=8)
def _state(where: Path) -> tuple[str | None, bool | None]:
    head = _git("rev-parse", "HEAD", cwd=where)
    commit = head.strip() if head else None
    if not commit or len(commit) not in (40, 64) or any(c not in "0123456789abcdef" for c in commit):
        return None, None
    status = _git("status", "--porcelain", "--untracked-files=no", cwd=where)
    return commit, (None if status is None else bool(status.strip()))


def git_state(where: str | Path | None = None) -> dict[str, str | bool | None]:
    """``{"commit": str or None, "dirty": bool or None}`` of the checkout holding ``where``.

    Parameters
    ----------
    where : path, optional
        A folder inside the checkout; default: the one holding this package.

    Returns
    -------
    dict
        ``commit`` is the full hash of ``HEAD``; ``dirty`` whether tracked files have changes.
        Both None when not a git checkout, git is missing or slower than :data:`GIT_TIMEOUT`.
    """
    try:
        path = Path(where).resolve() if where is not None else _HERE
        commit, dirty = _state(path if path.is_dir() else path.parent)
    except Exception:  # never fail a result for want of its provenance
        commit, dirty = None, None
    return {"commit": commit, "dirty": dirty}


_state(_HERE)  # now, at import (see the module docstring); later calls read the cache

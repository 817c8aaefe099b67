"""A search's run record in its result file, both ways: written after the search
(:func:`run_record`), read back for a replay (:func:`replay_inputs`, untrusted input).
The replay itself is :mod:`~evocov_core.searches.replay`."""

from __future__ import annotations

from typing import Any, NamedTuple

from evocov_core._version import __version__
from evocov_core.compute.provenance import git_state
from evocov_core.searches.config import SearchConfig
from evocov_core.searches.replay import RunLog

__all__ = ["ReplayInputs", "replay_inputs", "run_record"]


def run_record(result: Any, config: Any, seed: int) -> dict:
    """What a search did, for its result file: enough to replay it (:func:`replay_inputs`).

    Parameters
    ----------
    result : SearchResult
    config : SearchConfig
        The settings it ran with.
    seed : int
    """
    return {
        "algorithm": config.algorithm,
        "seed": int(seed),
        "settings": config.to_dict(),
        "generations": len(result.history),
        "evaluations": int(result.n_evaluations),
        "screen_fits": int(result.n_screen_fits),
        "restarts": int(result.restarts),
        "budget_spent": bool(result.budget_spent),
        "software": f"evocov {__version__}",
        "git": git_state(),
        "log": result.run_log.to_dict(),
    }


class ReplayInputs(NamedTuple):
    """What a replay reruns (a tuple: ``config, seed, log = replay_inputs(run)``).

    Attributes
    ----------
    config : SearchConfig
        The settings the run had.
    seed : int
    log : RunLog
        Where its clock stopped it and the evaluations of every fit it used.
    """

    config: SearchConfig
    seed: int
    log: RunLog


def replay_inputs(run: object) -> ReplayInputs:
    """The settings, seed and log of a result file's ``run`` record, validated (untrusted input).

    Raises
    ------
    ValueError
        Naming what is missing or malformed (a ``ConfigError`` for a bad setting).
    """
    if not isinstance(run, dict):
        raise ValueError("this kernel file has no record of its search ('run'); only files written by "
                         "`search` since replays exist can be replayed")
    seed = run.get("seed")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError("the run record's seed must be a non-negative whole number")
    settings = run.get("settings")
    if not isinstance(settings, dict):
        raise ValueError("the run record has no settings")
    return ReplayInputs(SearchConfig.from_dict(settings), seed, RunLog.from_dict(run.get("log")))

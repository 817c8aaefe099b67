"""How the dashboard writes values: run statuses, algorithm names, numbers, figure layout."""

from __future__ import annotations

import math
from typing import Any

from evocov_core.searches import ALGORITHM_LABELS, RunStatus

STATUS_ICONS = {
    RunStatus.QUEUED: ":material/hourglass_top:",
    RunStatus.RUNNING: ":material/sync:",
    RunStatus.FINISHED: ":material/check_circle:",
    RunStatus.CANCELLED: ":material/stop_circle:",
    RunStatus.FAILED: ":material/error:",
    RunStatus.INTERRUPTED: ":material/warning:",
}
STATUS_COLORS = {
    RunStatus.QUEUED: "gray",
    RunStatus.RUNNING: "blue",
    RunStatus.FINISHED: "green",
    RunStatus.CANCELLED: "orange",
    RunStatus.FAILED: "red",
    RunStatus.INTERRUPTED: "orange",
}


def status_badge(status: str) -> str:
    """Markdown for a run status, e.g. ``:green[:material/check_circle: finished]``."""
    return f":{STATUS_COLORS.get(status, 'gray')}[{STATUS_ICONS.get(status, '')} {status}]"


def algorithm_label(algorithm: str) -> str:
    """The name a person reads for an algorithm (``explore`` is the Mutation explorer)."""
    if algorithm == "explore":
        return "Mutation explorer"
    return ALGORITHM_LABELS.get(algorithm, algorithm)


def finite(v: Any, default: float = math.nan) -> float:
    """``v`` as a finite float, else ``default``."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return default
    return f if math.isfinite(f) else default


def fmt(v: Any, spec: str = ".4g") -> str:
    """A number for a metric or a caption; ``–`` when there is none."""
    f = finite(v)
    return format(f, spec) if math.isfinite(f) else "–"


def dash_empty(table: Any, formats: dict[str, str]) -> Any:
    """A copy of ``table`` with the columns of ``formats`` written out (column -> format spec), ``—`` where a
    cell has no number (:func:`evocov_core.present.glance.text_cells`): a table then never prints None."""
    from evocov_core.present.glance import text_cells

    out = table.copy()
    for col, spec in formats.items():
        if col in out:
            out[col] = text_cells(out[col], spec)
    return out


def polish(fig: Any) -> Any:
    """Dashboard layout of a core figure: the legend under the x-axis title, not on top of it."""
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.2, x=0, xanchor="left"))
    fig.update_layout(margin=dict(b=60))
    return fig


def poll_every(active: bool, interval: float = 1.0) -> float | None:
    """A fragment's ``run_every``: poll while something runs, not after."""
    return interval if active else None

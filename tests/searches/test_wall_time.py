"""The wall-time estimate of a fixed-count search (``evocov_core.searches.wall_time``), which the dashboard shows."""

from __future__ import annotations

import re

import pytest

from evocov_core.searches import preset
from evocov_core.searches.wall_time import cost_key, estimate_wall_time, format_duration


def test_wall_time_estimate_meets_the_measured_runs() -> None:
    """quick-fixed EvoCov, 1500 fits, 2 workers on an idle 2-core machine (the calibration runs
    cited in wall_time.py): each measured wall time lies in the range shown."""
    for n_train, measured in ((129, 34.0), (490, 357.6), (899, 1415.0)):
        est = estimate_wall_time(preset("quick-fixed"), n_train, workers=2, cores=2)
        assert est.fits == 1500
        assert est.low < measured < est.high, (n_train, est)
        assert est.low < est.central < est.high


def test_wall_time_estimate_follows_the_settings() -> None:
    base = preset("quick-fixed")
    est = estimate_wall_time(base, 393, workers=2, cores=2)
    assert estimate_wall_time(base.with_(generations=60), 393, 2, 2).central > 1.9 * est.central
    assert estimate_wall_time(base.with_(n_restarts=3), 393, 2, 2).central > 2 * est.central
    assert estimate_wall_time(base, 786, 2, 2).central > 4 * est.central  # cost ∝ n^2.2
    serial = estimate_wall_time(base, 393, 1, 2)
    assert serial.central > 1.8 * est.central
    # Workers beyond the cores share them: no faster.
    assert estimate_wall_time(base, 393, 8, 2).central == pytest.approx(est.central)
    # Screening: a candidate is fitted on 240 points, 30 % of them again on all the data.
    budgeted = preset("quick", time_budget=0.0, population=50, generations=30)
    assert estimate_wall_time(budgeted, 900, 2, 2).central < 0.5 * estimate_wall_time(base, 900, 2, 2).central
    assert cost_key(preset("paper", metric="sopl")) == "evocov-sopl"
    assert cost_key(preset("paper", "gwtf")) == "gwtf"


def test_wall_time_estimate_text() -> None:
    assert [format_duration(s) for s in (0.2, 42, 89.6, 95, 600, 5399, 5400, 9000, 2 * 86400)] == [
        "1 s", "42 s", "90 s", "1.6 min", "10 min", "90 min", "1.5 h", "2.5 h", "2 days"]
    est = estimate_wall_time(preset("quick-fixed"), 393, workers=2, cores=2)
    assert re.fullmatch(r"about [\d.]+–[\d.]+ min on these 393 training points with 2 workers", est.text), est.text
    many = estimate_wall_time(preset("quick-fixed", population=6, mu=2, generations=2), 129, workers=4, cores=2)
    assert many.text.endswith("with 4 workers on 2 cores") and " s on these" in many.text, many.text



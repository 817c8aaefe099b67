"""The verdict on a search's forecast (evocov_core.present.glance) and the one count of fits
(evocov_core.runs.counts)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd
import pytest

from evocov_core.forecast.combination import Combination
from evocov_core.present.glance import (
    MISSING,
    compared_in_words,
    forecast_row,
    kernel_weight,
    text_cells,
    verdict,
    weight_sentence,
)
from evocov_core.runs.counts import FitCounts, count_scores, fit_counts


def table(rows: list[tuple[str, str, float, float, str]]) -> pd.DataFrame:
    return pd.DataFrame([{"method": m, "kind": k, "test_rmse": r, "coverage_95": c, "status": s}
                         for m, k, r, c, s in rows])


COMBINED = Combination(members=("kernel", "AutoETS", "AutoTheta"), weights=(0.41, 0.35, 0.24), origins=4,
                       origin_sse=(("kernel", 1.0), ("AutoETS", 1.1), ("AutoTheta", 1.3)))


def test_ratios_in_words():
    assert compared_in_words(0.88, "AutoETS") == "12 % lower than AutoETS (ratio 0.88)"
    assert compared_in_words(1.25, "seasonal naive") == "25 % higher than seasonal naive (ratio 1.25)"
    assert compared_in_words(1.001, "AutoARIMA").startswith("the same as AutoARIMA")


def test_the_verdict_compares_the_kernel_s_forecast_with_the_classical_ones():
    t = table([("this kernel", "GP", 8.8, 0.93, "ok"), ("SE", "GP", 20.0, 0.5, "ok"),
               ("SeasonalNaive", "classical", 16.0, math.nan, "ok"), ("AutoETS", "classical", 10.0, 0.9, "ok"),
               ("AutoARIMA", "classical", math.nan, math.nan, "running")])
    v = verdict(t, Combination(), "a yearly cycle, on a rising trend", n_test=14)
    assert v.ratios == pytest.approx({"AutoETS": 0.88, "seasonal naive": 0.55})
    assert v.forecast == ("The kernel's forecast's test RMSE is 8.8 over the 14 test points: 12 % lower than AutoETS "
                          "(ratio 0.88); AutoARIMA: running…; 45 % lower than seasonal naive (ratio 0.55).")
    assert v.waiting == ("AutoARIMA",)
    assert v.coverage.startswith("93 % of the test points fall inside the kernel's 95 % interval")
    assert v.kernel == "A yearly cycle, on a rising trend."
    assert v.who == "The kernel alone forecasts."
    assert [label for label, _ in v.lines()] == ["Forecast", "Intervals", "The kernel", "Who forecasts"]


def test_a_combined_forecast_is_judged_by_its_own_row_and_states_its_weights():
    t = table([("this kernel", "GP", 12.0, 0.6, "ok"), ("forecast (kernel 0.41 + …)", "combined", 9.0, math.nan, "ok"),
               ("AutoETS", "classical", 10.0, 0.9, "ok")])
    assert forecast_row(t, COMBINED)["method"].startswith("forecast (")
    assert forecast_row(t, Combination())["method"] == "this kernel"
    v = verdict(t, COMBINED, None, n_test=10)
    assert v.ratios == pytest.approx({"AutoETS": 0.9})
    assert v.forecast.startswith("The forecast's test RMSE is 9")
    assert "too narrow" in v.coverage and "the interval is the kernel's" in v.coverage
    assert v.kernel is None
    assert v.who == "The kernel carries 41 % of the forecast; AutoETS 35 %, AutoTheta 24 %."
    assert kernel_weight(COMBINED) == pytest.approx(0.41) and kernel_weight(None) == 1.0


def test_the_guard_s_forecast_says_the_kernel_was_left_out():
    c = Combination(members=("kernel", "AutoETS", "AutoTheta"), weights=(0.0, 0.7, 0.3), origins=4,
                    guard="the kernel's forecast leaves AutoETS's 95 % interval")
    s = weight_sentence(c)
    assert s.startswith("The classical members forecast (AutoETS 70 %, AutoTheta 30 %)")
    assert "leaves AutoETS's 95 % interval" in s


def test_no_table_no_forecast_line():
    v = verdict(None, None, "noise only")
    assert v.forecast is None and v.coverage is None and v.ratios == {}
    assert [label for label, _ in v.lines()] == ["The kernel", "Who forecasts"]


def test_empty_cells_are_a_dash_never_none():
    cells = text_cells([1.23456, None, math.nan, math.inf, "x", 3, True], ".3g")
    assert cells == ["1.23", MISSING, MISSING, MISSING, MISSING, "3", MISSING]
    assert "None" not in cells and "nan" not in cells


def test_fit_counts_read_the_same_numbers_from_every_record():
    result = SimpleNamespace(n_evaluations=48, n_screen_fits=163)
    counts = fit_counts(result)
    assert counts == FitCounts(48, 163)
    assert counts.describe() == "48 kernels fitted, 163 screening fits"
    assert count_scores(result) == {"kernels_fitted": 48, "screening_fits": 163}
    # A stored run (screening fits in its extra), a row of the run list, a kernel file and its older form.
    assert fit_counts(SimpleNamespace(n_evaluations=48, extra={"n_screen_fits": 163})) == counts
    assert fit_counts({"n_evaluations": 48, "n_screen_fits": 163}) == counts
    assert fit_counts({"scores": {"kernels_fitted": 48, "screening_fits": 163}}) == counts
    assert fit_counts({"scores": {"evaluations": 48}, "run": {"screen_fits": 163}}) == counts
    assert fit_counts(SimpleNamespace(scores={"evaluations": 48}, run={"screen_fits": 163})) == counts
    assert fit_counts({}) == FitCounts(0, 0)
    assert fit_counts({"n_evaluations": float("nan"), "n_screen_fits": -1}) == FitCounts(0, 0)

"""bench/mcomp_combine.py: equal-weight combinations of a benchmark run's forecasts, scored post hoc."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from bench.common import BenchError
from bench.mcomp import Forecast, McSeries
from bench.mcomp_combine import combine, rule_forecast, rule_scores, summary

Z95 = norm.ppf(0.975)


def _member(mean, sd) -> Forecast:
    mean, sd = np.asarray(mean, dtype=float), np.asarray(sd, dtype=float)
    z80 = norm.ppf(0.9)
    return Forecast(mean, mean - z80 * sd, mean + z80 * sd, mean - Z95 * sd, mean + Z95 * sd)


def test_one_member_is_itself_and_equal_members_pool_as_one_normal():
    a = _member([1.0, 2.0], [0.5, 1.0])
    assert rule_forecast([a]) is a
    twice = rule_forecast([a, a])  # a mixture of two identical normals is that normal
    for got, want in zip(twice, a, strict=True):
        assert got == pytest.approx(want, abs=1e-9)
    b = _member([3.0, 2.0], [0.5, 1.0])
    both = rule_forecast([a, b])
    assert both.mean == pytest.approx([2.0, 2.0])
    # Two normals 2 sd apart (step 0): the mixture's 95 % interval is wider than either's, centred on 2.
    assert both.hi_95[0] - both.lo_95[0] > a.hi_95[0] - a.lo_95[0]
    assert (both.lo_95[0] + both.hi_95[0]) / 2 == pytest.approx(2.0, abs=1e-9)
    assert both.lo_80[0] > both.lo_95[0] and both.hi_80[0] < both.hi_95[0]


def _forecasts(rows: list[tuple[str, str, list[float]]], h: int) -> pd.DataFrame:
    out = []
    for uid, method, mean in rows:
        for k, m in enumerate(mean):
            out.append({"set": "M3", "unique_id": uid, "method": method, "ds": k + 1, "y": math.nan, "mean": m,
                        "lo_80": m - 1, "hi_80": m + 1, "lo_95": m - 2, "hi_95": m + 2})
    assert all(len(m) == h for _, _, m in rows)
    return pd.DataFrame(out)


def test_a_rule_is_scored_on_its_members_average_and_summarised_against_the_product():
    """Hand-computed: the training parts step by 1 (MASE scale 1), so MASE is the mean absolute error."""
    s1 = McSeries("A1", "yearly", np.arange(10.0), np.array([10.0, 12.0]), 2, 1)
    s2 = McSeries("A2", "yearly", np.arange(10.0), np.array([10.0, 10.0]), 2, 1)
    df = _forecasts([
        ("A1", "EvoCov", [11.0, 13.0]), ("A1", "AutoETS", [8.0, 12.0]), ("A1", "EvoCov-kernel", [12.0, 12.0]),
        ("A2", "EvoCov", [12.0, 12.0]), ("A2", "AutoETS", [10.0, 11.0]), ("A2", "EvoCov-kernel", [10.0, 13.0]),
        ("A3", "EvoCov", [0.0, 0.0]),  # a series outside the selection: ignored
    ], 2)
    rules = {"EvoCov": ("EvoCov",), "AutoETS": ("AutoETS",), "mix": ("EvoCov-kernel", "AutoETS"),
             "needs ARIMA": ("EvoCov-kernel", "AutoARIMA")}
    scores = rule_scores([s1, s2], df, rules)
    mase = scores.pivot(index="unique_id", columns="method", values="mase")
    assert sorted(mase.columns) == ["AutoETS", "EvoCov", "mix"]  # no AutoARIMA forecast: no row
    assert mase.loc["A1", "mix"] == pytest.approx(0.0) and mase.loc["A2", "mix"] == pytest.approx(1.0)
    assert mase.loc["A1", "EvoCov"] == pytest.approx(1.0) and mase.loc["A2", "EvoCov"] == pytest.approx(2.0)
    assert mase.loc["A1", "AutoETS"] == pytest.approx(1.0) and mase.loc["A2", "AutoETS"] == pytest.approx(0.5)
    table = summary(scores).set_index("rule")
    # fev: one stratum, mean MASE over mean AutoETS MASE: EvoCov 1.5 / 0.75, mix 0.5 / 0.75.
    assert table.loc["EvoCov", "fev_vs_autoets"] == pytest.approx(2.0)
    assert table.loc["mix", "fev_vs_autoets"] == pytest.approx(2 / 3)
    # Paired against EvoCov: a series with a ratio of 0 (log -inf) is left out, so A2 alone (1/2) and no SE.
    assert math.isnan(table.loc["mix", "paired_vs_EvoCov"])
    assert table.loc["AutoETS", "paired_vs_EvoCov"] == pytest.approx(math.sqrt(1.0 * 0.25))
    assert table.loc["AutoETS", "se_log"] == pytest.approx(np.std([0.0, math.log(0.25)], ddof=1) / math.sqrt(2))
    # Coverage pooled over the test points: EvoCov's ±2 band holds 4 of 4 points, AutoETS's too.
    assert table.loc["EvoCov", "cover_95"] == 1.0 and table.loc["EvoCov", "n"] == 2


def test_the_command_writes_combine_md_from_a_folders_forecasts(tmp_path):
    """``python -m bench mcomp-combine`` on a folder holding M3 N0001's forecasts by three methods; a folder with
    none gets one line."""
    import subprocess
    import sys
    from pathlib import Path

    from bench.mcomp import load_set

    s = next(x for x in load_set("M3") if x.unique_id == "N0001")
    last = float(s.x[-1])
    df = _forecasts([(s.unique_id, m, [last + k * d for k in range(s.h)])
                     for m, d in (("EvoCov", 400.0), ("EvoCov-kernel", 300.0), ("AutoETS", 500.0))], s.h)
    df.to_csv(tmp_path / "forecasts.csv.gz", index=False)
    root = Path(__file__).resolve().parents[2]
    res = subprocess.run([sys.executable, "-m", "bench", "mcomp-combine", "--out", str(tmp_path)], cwd=root,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "EvoCov_fev=" in res.stdout and "AutoETS_fev=1.0000" in res.stdout
    text = (tmp_path / "combine.md").read_text()
    assert "| EvoCov | 1 |" in text and "| AutoETS | 1 | 1.000 |" in text
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(BenchError, match="holds no forecasts of M3"):  # the CLI's one line (bench/cli.py)
        combine(empty)

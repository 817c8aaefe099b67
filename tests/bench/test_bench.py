"""The benchmark commands (``python -m bench ...``) on tiny budgets.

Tests that read the 13 TSDL series use the ``tsdl_dir`` fixture (``tests/conftest.py``),
which skips them when ``../shared/data/tsdl`` is absent.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench.budget import (
    ALGORITHMS,
    QUICK_TRIAL_CORE_SECONDS,
    budget_config,
    predicted_core_seconds,
    quick_fits,
)
from bench.common import BenchError, ResultFile, load_series, resolve_series
from bench.gpss_params import (
    GpssParseError,
    convert,
    parse_gpss,
    read_gpss_entries,
    structure,
    verify,
)
from bench.report import PAPER_TABLE3, PAPER_TABLE4, PAPER_TABLE6, PAPER_TABLE6_COLUMNS, SERIES
from evocov_core.fitting.optimize import powell_budget
from evocov_core.language.library import GPSS_PUBLISHED, compose
from evocov_core.searches import preset
from evocov_core.searches.wall_time import COST_EXPONENT, REF_N, estimated_fits

AIRLINE_GPSS = ("RQ[len=0.622,alp=-9.83,sf=-0.833] × Lin[loc=1942.25,invsf=-2.11,offset=1.64] × "
                "(SE[len=3.65,sf=2.29] + Per[len=-0.425,per=0.00241,sf=-1.11] × "
                "Lin[loc=1948.75,invsf=1.42,offset=0.668])")


# --- transcribed tables -------------------------------------------------------------------


def test_paper_tables_cover_the_13_series() -> None:
    for table in (PAPER_TABLE3, PAPER_TABLE4, PAPER_TABLE6):
        assert tuple(table) == SERIES
    assert all(len(v) == len(PAPER_TABLE6_COLUMNS) for v in PAPER_TABLE6.values())
    # The paper's Table 6 GPSS column is the q of the published structure in our grammar.
    j = PAPER_TABLE6_COLUMNS.index("GPSS")
    assert all(compose(GPSS_PUBLISHED[s]).q == PAPER_TABLE6[s][j] for s in SERIES)


# --- GPSS parser and conversion -------------------------------------------------------------


def test_parse_gpss_structure_and_values() -> None:
    tree = parse_gpss(AIRLINE_GPSS)
    assert structure(tree) == GPSS_PUBLISHED["01-airline"]
    assert structure(parse_gpss("SE[len=1,sf=2] + SE[len=3,sf=4] + Per[len=0,per=1,sf=0]")) == ["+", "SE", "SE", "PER"]


@pytest.mark.parametrize("text", [
    "CW@1677.22,st=-2.29,w=exp(4.44)(C[sf=7.18], WN[sf=-5.92])",  # change window: not in our grammar
    "WN[sf=1.7] + SE[len=-0.5,sf=2.5]",  # white noise is the model's noise term, not a kernel
    "SE[len=1] + SE[len=1,sf=2]",  # missing parameter
    "SE[len=1,sf=2] × (Per[len=0,per=1,sf=0]",  # unbalanced
])
def test_parse_gpss_refuses(text: str) -> None:
    with pytest.raises(GpssParseError):
        parse_gpss(text)


def test_every_published_gpss_kernel_parses(tsdl_dir: Path) -> None:
    entries = read_gpss_entries(tsdl_dir / "gpss_kernels.md")
    assert sorted(entries) == list(SERIES)
    j = PAPER_TABLE6_COLUMNS.index("GPSS")
    for s, e in entries.items():
        assert structure(e.tree) == GPSS_PUBLISHED[s], s
        ds = load_series(tsdl_dir, s)
        conv = convert(e.tree, ds)
        assert conv.kernel.q == compose(GPSS_PUBLISHED[s]).q == PAPER_TABLE6[s][j], s
        assert len(conv.theta) == conv.kernel.n_params and all(math.isfinite(t) for t in conv.theta)


def test_conversion_reproduces_published_lml_and_rmse(tsdl_dir: Path) -> None:
    """With the published values, our LML is GPSS's −nll + n log s_y and our RMSE its RMSE.

    Measured: |ΔLML| ≤ 0.44 nats and RMSE within 1.5 % on all 13 series (values in the md
    file are rounded to 3 digits; the two sensitive periods are transcribed in full).
    """
    entries = read_gpss_entries(tsdl_dir / "gpss_kernels.md")
    v = verify(entries["01-airline"], load_series(tsdl_dir, "01-airline"))
    assert v.rmse_published == pytest.approx(16.8356, rel=1e-4)
    assert v.rmse_gpss_convention == pytest.approx(16.84, rel=0.02)
    assert abs(v.lml_difference) < 0.05
    for s, e in entries.items():
        v = verify(e, load_series(tsdl_dir, s))
        assert abs(v.lml_difference) < 1.0, (s, v.lml_difference)
        assert abs(v.rmse_ratio - 1) < 0.03, (s, v.rmse_ratio)


# --- budgets ---------------------------------------------------------------------------------


def test_quick_budget_rule() -> None:
    for key, alg in ALGORITHMS.items():
        base = preset("quick-fixed", alg.algorithm, metric=alg.metric)
        assert budget_config(key, "paper", 500) == preset("paper", alg.algorithm, metric=alg.metric)
        fits = [estimated_fits(budget_config(key, "quick", n)) for n in (129, 216, 490, 909)]
        assert fits == sorted(fits, reverse=True), key  # fewer fits for larger series
        assert fits[0] <= estimated_fits(base), key  # never more than the preset
        cfg = budget_config(key, "quick", 216)
        assert (cfg.d_min, cfg.d_max, cfg.n_restarts) == (base.d_min, base.d_max, base.n_restarts)
    # The rule: fits × (n/129)^2.2 constant (the cost model's T per trial) where no floor applies.
    for n in (REF_N, 216, 333):
        cfg = budget_config("random", "quick", n)
        assert estimated_fits(cfg) == pytest.approx(quick_fits("random", n), abs=1)
        assert predicted_core_seconds("random", cfg, n) == pytest.approx(QUICK_TRIAL_CORE_SECONDS, rel=0.05)
    assert quick_fits("random", 2 * REF_N) == pytest.approx(quick_fits("random", REF_N) / 2**COST_EXPONENT)
    assert quick_fits("random", 400, factor=2.0) == pytest.approx(2 * quick_fits("random", 400))
    # Floors at n = 909.
    big = budget_config("evocov-lml", "quick", 909)
    assert big.population >= 6 and big.generations >= 2 and 2 <= big.mu < big.population
    assert budget_config("gpss", "quick", 909).generations >= 2
    # Powell fits get the same evaluations on every series in the quick budget.
    evals = {powell_budget(budget_config("evocov-sopl", "quick", n).ref_fun_call, n) for n in (129, 490, 909)}
    assert max(evals) - min(evals) <= 0.1 * max(evals)
    assert budget_config("evocov-sopl", "quick", 490).optim.resolved_method == "powell"
    with pytest.raises(ValueError):
        budget_config("nope", "quick", 100)


# --- series and result files -----------------------------------------------------------------


def test_split_is_checked(tsdl_dir: Path, tmp_path: Path) -> None:
    assert resolve_series(tsdl_dir, "airline,08")[0] == "01-airline"
    with pytest.raises(BenchError):
        resolve_series(tsdl_dir, "nope")
    shutil.copy(tsdl_dir / "01-airline.csv", tmp_path / "01-airline.csv")
    splits = pd.read_csv(tsdl_dir / "splits.csv")
    splits.loc[splits["file"] == "01-airline.csv", "n_train"] = 130
    splits.to_csv(tmp_path / "splits.csv", index=False)
    with pytest.raises(BenchError, match="refusing"):
        load_series(tmp_path, "01-airline")


def test_result_file_last_row_wins(tmp_path: Path) -> None:
    rf = ResultFile(tmp_path / "r.csv", ["a", "b", "v"], ["a", "b"])
    rf.append({"a": "x", "b": 1, "v": "error"})
    rf.append({"a": "x", "b": 2, "v": "ok"})
    rf.append({"a": "x", "b": 1, "v": "ok"})
    assert len(rf.read()) == 2
    assert rf.keys(lambda r: r["v"] == "ok") == {("x", 1), ("x", 2)}


# --- reproduce, resume, report --------------------------------------------------------------


def _reproduce(tsdl_dir: Path, out: Path, trials: int, workers: int = 1) -> dict:
    from bench.reproduce import reproduce

    return reproduce(tsdl_dir, out, algorithms="random,gpss", trials=trials, budget="quick", workers=workers,
                     scheduler=None, series="01-airline", quick_scale=0.02, argv=["reproduce", "test"],
                     log=lambda s: None)


@pytest.mark.slow
def test_reproduce_is_resumable(tsdl_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    _reproduce(tsdl_dir, out, trials=1, workers=2)  # the process pool path
    rows = pd.read_csv(out / "trials.csv")
    assert len(rows) == 2 and set(rows["status"]) == {"ok"} and set(rows["seed"]) == {0}
    kernels = sorted((out / "kernels").glob("*.json"))
    mtimes = {p: p.stat().st_mtime_ns for p in kernels}
    assert len(kernels) == 2
    # Second run: nothing recomputed.
    run = _reproduce(tsdl_dir, out, trials=1)
    assert run["invocations"][-1]["trials_run"] == 0
    assert len(pd.read_csv(out / "trials.csv")) == 2
    assert {p: p.stat().st_mtime_ns for p in kernels} == mtimes
    # A missing kernel file, an error row and a new trial are (re)run; the rest is not.
    kernels[0].unlink()
    from bench.report import trials_file

    trials_file(out).append({"series": "01-airline", "algorithm": "random", "seed": 1, "budget": "quick",
                             "status": "error", "reason": "boom"})
    run = _reproduce(tsdl_dir, out, trials=2)
    assert run["invocations"][-1]["trials_run"] == 3  # the deleted one + seeds 1 of random and gpss
    assert kernels[0].is_file()
    final = pd.read_csv(out / "trials.csv").drop_duplicates(["series", "algorithm", "seed"], keep="last")
    assert len(final) == 4 and set(final["status"]) == {"ok"}
    # Same seed, same result, whichever executor ran it.
    again = pd.read_csv(out / "trials.csv")
    first = again[(again["algorithm"] == "random") & (again["seed"] == 0)]["test_rmse"]
    assert first.nunique() == 1
    # The report is regenerated from the folder alone.
    (out / "report.md").unlink()
    from bench.cli import main

    assert main(["report", "--out", str(out)]) == 0
    text = (out / "report.md").read_text(encoding="utf-8")
    for part in ("Table 5", "Table 6", "figure5.html", "paper budget: estimated cost", "bench reproduce test"):
        assert part in text
    assert (out / "figure5.html").stat().st_size > 1000
    doc = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert doc["budget"] == "quick" and len(doc["invocations"]) == 3
    # Another budget in the same folder is refused.
    from bench.reproduce import reproduce

    with pytest.raises(BenchError):
        reproduce(tsdl_dir, out, algorithms="random", trials=1, budget="paper", workers=1, scheduler=None,
                  series="01-airline")


def test_table5_standardises_each_row(tsdl_dir: Path) -> None:
    from bench.report import table5, table6

    trials = pd.DataFrame({
        "series": ["01-airline", "01-airline", "03-mauna", "03-mauna"],
        "algorithm": ["evocov-lml"] * 4, "seed": [0, 1, 0, 1], "status": ["ok"] * 4,
        "test_rmse": [30.0, 10.0, 2.0, 4.0], "q": [5, 7, 6, 6],
    })
    raw, std = table5(trials, tsdl_dir)
    assert list(raw.index) == ["01-airline", "03-mauna"]
    series_rows = std.loc[["01-airline", "03-mauna"]]
    assert np.allclose(series_rows.min(axis=1), 1.0)
    assert std.at["01-airline", "ours evocov-lml best"] == pytest.approx(1.0)  # 10 beats the paper's 12.46
    assert std.at["01-airline", "ours evocov-lml mean"] == pytest.approx(2.0)
    # With the paper's best (EvoCov LML, 0.5968 on Mauna) as reference, GPSS is the paper's 1.460.
    assert std.at["03-mauna", "GPSS"] == pytest.approx(0.812238 / 0.596803, rel=1e-6)
    assert "Mean" in std.index and "Median" in std.index
    t6 = table6(trials)
    assert t6.at["01-airline", "ours evocov-lml mean"] == pytest.approx(6.0)
    assert t6.at["01-airline", "paper GPSS"] == 15 == t6.at["01-airline", "GPSS kernel, our q"]


def test_report_from_a_hand_made_folder(tsdl_dir: Path, tmp_path: Path) -> None:
    from bench.report import TRIAL_COLUMNS, report

    out = tmp_path / "f"
    out.mkdir()
    (out / "run.json").write_text(json.dumps({
        "budget": "quick", "quick_scale": 1.0, "data_dir": str(tsdl_dir), "settings": {},
        "invocations": [{"command": "python -m bench reproduce …", "started": "t0", "finished": "t1",
                         "wall_seconds": 12.5, "machine": {"CPU": "test"}}]}), encoding="utf-8")
    row = dict.fromkeys(TRIAL_COLUMNS, "")
    row.update(series="08-radio", algorithm="gwtf", seed=0, budget="quick", status="ok", test_rmse=0.5, q=6,
               wall_seconds=3.0, cpu_seconds=2.5, n_evaluations=10, infix="x*x'")
    pd.DataFrame([row]).to_csv(out / "trials.csv", index=False)
    text = report(out).read_text(encoding="utf-8")
    assert "08-radio" in text and "12.5" in text and "GWTF best" in text
    std = pd.read_csv(out / "table5.csv", index_col=0)
    assert std.loc["08-radio"].min() == pytest.approx(1.0)


def test_run_records_are_written_at_start_and_updated_at_the_end(tmp_path: Path) -> None:
    from bench.common import append_run, read_runs, update_run

    path = tmp_path / "runs.json"
    assert append_run(path, {"command": "a", "finished": "t1"}) == 0
    i = append_run(path, {"command": "b"})  # a killed invocation stays like this
    assert i == 1 and [r["command"] for r in read_runs(path)] == ["a", "b"]
    update_run(path, i, {"command": "b", "finished": "t2"})
    assert read_runs(path) == [{"command": "a", "finished": "t1"}, {"command": "b", "finished": "t2"}]


def test_interrupted_invocation_counts_until_its_last_trial() -> None:
    from bench.common import invocation_walls

    invs = [{"started": "2026-01-01T10:00:00+00:00"},  # killed: no wall_seconds
            {"started": "2026-01-01T11:00:00+00:00", "wall_seconds": 30.0},
            {"started": "2026-01-01T12:00:00+00:00"}]  # killed before any trial finished
    trials = pd.DataFrame({"finished": ["2026-01-01T10:01:00+00:00", "2026-01-01T10:05:00+00:00",
                                        "2026-01-01T11:00:20+00:00"]})
    assert invocation_walls(invs, trials) == [(300.0, True), (30.0, False), (0.0, True)]


# --- the other experiments, tiny ------------------------------------------------------------


@pytest.mark.slow
def test_mutations_metrics_scaling_tiny(tsdl_dir: Path, tmp_path: Path) -> None:
    from bench.hpmetrics import hp_metrics
    from bench.mutations import mutations
    from bench.scaling import scaling

    quiet = {"log": lambda s: None, "argv": ["test"]}
    rep = mutations(tsdl_dir, tmp_path / "m", n_mutations=2, series="01-airline", workers=1, **quiet)
    t3 = pd.read_csv(tmp_path / "m" / "table3.csv")
    assert len(t3) == 1 and t3.at[0, "base_q"] == 15 and t3.at[0, "paper_better"] == 0.38
    assert len(pd.read_csv(tmp_path / "m" / "mutants" / "01-airline.csv")) == 2
    assert "Table 3" in rep.read_text(encoding="utf-8")
    mutations(tsdl_dir, tmp_path / "m", n_mutations=2, series="01-airline", workers=1, **quiet)  # resumes
    assert len(pd.read_csv(tmp_path / "m" / "table3.csv")) == 1

    rep = hp_metrics(tsdl_dir, tmp_path / "h", trials=1, series="01-airline", method="default", workers=1, **quiet)
    rows = pd.read_csv(tmp_path / "h" / "metrics.csv")
    assert sorted(rows["metric"]) == sorted(["lml", "loocv", "posterior_lml", "sopl", "rmse"])
    assert "Table 4" in rep.read_text(encoding="utf-8")

    rep = scaling(tsdl_dir, tmp_path / "s", kernels=1, series="01-airline", workers_series="01-airline",
                  population=2, reps=1, dask=False, **quiet)
    text = rep.read_text(encoding="utf-8")
    assert "Seconds per kernel fit" in text and "process pool, 2 workers" in text
    prof = pd.read_csv(tmp_path / "s" / "profile.csv")
    # profile.csv stores 6 significant digits, so each fraction carries up to 5e-7 of rounding
    assert prof["fraction"].sum() == pytest.approx(1.0, abs=5e-7 * len(prof) + 1e-12)


def test_bench_runs_as_a_module_and_the_package_cli_points_there(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 56: the benchmarks run as ``python -m bench`` from the clone, not as a subcommand of the
    package; ``evocov bench ...`` says where they went, in one line, with exit status 2."""
    import subprocess
    import sys

    from bench.cli import build_parser, main
    from evocov_core.present.cli import main as evocov_main

    root = Path(__file__).resolve().parents[2]
    assert not list((root / "evocov_core").glob("benchmarks/*.py"))  # one home for the benchmarks
    res = subprocess.run([sys.executable, "-m", "bench", "--help"], capture_output=True, text=True, cwd=root,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert "usage: python -m bench" in res.stdout
    assert all(cmd in res.stdout for cmd in ("reproduce", "accuracy-report", "accuracy-headline", "long-report"))

    args = build_parser().parse_args(["report", "--out", "x"])
    assert args.bench_command == "report"
    assert main(["report", "--out", "/nonexistent/folder"]) == 2
    capsys.readouterr()

    assert evocov_main(["bench", "accuracy", "--out", "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "python -m bench" in err, err


def test_benchmark_modules_import_without_cycles() -> None:
    """Issue 12: no module of ``bench/`` imports, even lazily, one that imports it back."""
    import ast
    import graphlib

    root = Path(__file__).resolve().parents[2] / "bench"
    graph = {}
    for f in root.glob("*.py"):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        graph[f.stem] = {n.module.split(".")[1] for n in ast.walk(tree)
                         if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("bench.")}
    order = list(graphlib.TopologicalSorter(graph).static_order())  # raises CycleError on a cycle
    assert order.index("report") < order.index("reproduce") and order.index("common") < order.index("report")

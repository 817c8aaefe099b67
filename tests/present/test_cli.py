"""The command line, run as users run it: ``python -m evocov_core ...`` in a subprocess."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_cases import TINY, cli

from evocov_core.runs.kernel_file import VERSION, load_kernel_file

ROOT = Path(__file__).resolve().parents[2]




@pytest.fixture(scope="module")
def series_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(0)
    x = np.arange(72) / 12.0
    y = 10 + 2 * x + 3 * np.sin(2 * np.pi * x) + 0.3 * rng.standard_normal(x.size)
    p = tmp_path_factory.mktemp("cli") / "series.csv"
    pd.DataFrame({"t": x, "value": y}).to_csv(p, index=False)
    return p


@pytest.fixture(scope="module")
def searched(series_csv: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp("search") / "best.json"
    res = cli("search", "--data", str(series_csv), "--x", "t", "--y", "value", *TINY, "--out", str(out),
              "--records", str(out.with_suffix(".csv")))
    return out, res


def test_search_writes_a_loadable_kernel_file(searched: tuple[Path, subprocess.CompletedProcess]) -> None:
    out, res = searched
    assert res.returncode == 0, res.stderr
    kf = load_kernel_file(out)
    doc = json.loads(out.read_text())
    assert doc["format"] == "evocov-kernel" and doc["version"] == VERSION
    assert kf.q == doc["q"]
    assert "[1/2]" in res.stderr and "[2/2]" in res.stderr  # progress on the terminal
    records = pd.read_csv(out.with_suffix(".csv"))
    assert len(records) == 16  # 8 kernels × 2 generations
    assert doc["scores"]["bic"] == pytest.approx(records.bic.min())


def test_predict_reproduces_the_search_rmse(series_csv: Path, searched: tuple[Path, subprocess.CompletedProcess],
                                            tmp_path: Path) -> None:
    out, _ = searched
    pred = tmp_path / "pred.csv"
    res = cli("predict", "--kernel", str(out), "--data", str(series_csv), "--x", "t", "--y", "value",
              "--out", str(pred))
    assert res.returncode == 0, res.stderr
    p = pd.read_csv(pred)
    assert list(p.columns) == ["x", "mean", "std", "std_latent"]
    assert (p["std"] >= p["std_latent"]).all()
    data = pd.read_csv(series_csv)
    test = data[data.t > data.t.min() + 0.9 * (data.t.max() - data.t.min())]
    assert np.allclose(p.x, test.t)
    rmse = float(np.sqrt(np.mean((p["mean"].to_numpy() - test.value.to_numpy()) ** 2)))
    stored = json.loads(out.read_text())["scores"]["test_rmse"]
    assert rmse == pytest.approx(stored, rel=1e-9)
    assert f"test RMSE: {stored:.6g}" in res.stdout


def test_check_kernel(searched: tuple[Path, subprocess.CompletedProcess], tmp_path: Path) -> None:
    out, _ = searched
    res = cli("check-kernel", str(out))
    assert res.returncode == 0, res.stderr
    assert "PSD check passed" in res.stdout and "q:" in res.stdout
    bad = tmp_path / "bad.json"
    doc = json.loads(out.read_text())
    doc["expression"] = "__import__('os').system('echo pwned')"
    bad.write_text(json.dumps(doc))
    res = cli("check-kernel", str(bad))
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("error:")
    assert "pwned" not in res.stdout + res.stderr.split("error:")[0]
    assert "Traceback" not in res.stderr


def test_closed_stdout_is_quiet(searched: tuple[Path, subprocess.CompletedProcess]) -> None:
    """``check-kernel K.json | head -1``: a reader that went away is no error message."""
    out, _ = searched
    r, w = os.pipe()
    os.close(r)  # every write to w now fails with EPIPE
    try:
        res = subprocess.run([sys.executable, "-m", "evocov_core", "check-kernel", str(out)], stdout=w,
                             stderr=subprocess.PIPE, text=True, cwd=ROOT, timeout=120,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        os.close(w)
    assert res.returncode == 1
    assert res.stderr == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", "--data", "nope.csv", "--out", "x.json"], "no such file"),
        (["search", "--data", "{csv}", "--mu", "50", "--out", "x.json"], "mu must satisfy"),
        (["search", "--data", "{csv}", "--y", "missing", "--out", "x.json"], "no column named 'missing'"),
        (["search", "--data", "{bin}", "--out", "x.json"], "not a readable CSV"),
        (["predict", "--kernel", "nope.json", "--data", "{csv}", "--out", "p.csv"], "no such file"),
        (["search", "--data", "{csv}", "--metric", "sopl", "--method", "lbfgs", "--out", "x.json"],
         "needs a gradient"),
        (["search", "--data", str(ROOT / "data" / "airline.csv"), "--test-fraction", "0.95", "--out", "x.json"],
         "test fraction 0.95 refused"),
        (["search", "--data", "{csv}", "--test-fraction", "0.5", "--out", "x.json"], "below 0.5"),
        (["search", "--data", "{csv}", "--test-fraction", "-0.1", "--out", "x.json"], "at least 0"),
        (["search", "--data", "{short}", "--test-fraction", "0.3", "--out", "x.json"],
         "leaves 9 training points; at least 10 are needed"),
    ],
)
def test_user_errors_are_one_line(args: list[str], message: str, series_csv: Path, tmp_path: Path) -> None:
    binary = tmp_path / "binary.csv"
    binary.write_bytes(bytes(range(256)) * 10)
    short = tmp_path / "short.csv"  # 13 points: a test fraction of 0.3 leaves 9 to train on
    pd.DataFrame({"t": np.arange(13.0), "value": np.sin(np.arange(13.0))}).to_csv(short, index=False)
    args = [a.replace("{csv}", str(series_csv)).replace("{bin}", str(binary)).replace("{short}", str(short))
            for a in args]
    res = cli(*args, cwd=tmp_path)
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    assert res.stderr.strip().count("\n") == 0
    assert message in res.stderr


def test_explore(series_csv: Path, searched: tuple[Path, subprocess.CompletedProcess], tmp_path: Path) -> None:
    out, _ = searched
    dest = tmp_path / "explore.csv"
    res = cli("explore", "--kernel", str(out), "--data", str(series_csv), "--x", "t", "--y", "value",
              "--mutations", "4", "--workers", "1", "--out", str(dest))
    assert res.returncode == 0, res.stderr
    rows = pd.read_csv(dest)
    assert len(rows) == 4
    assert "better fitted" in res.stdout


def test_search_with_a_time_budget(series_csv: Path, tmp_path: Path) -> None:
    """``--time-budget`` bounds the run, the progress shows the time left, the model choice is reported."""
    out = tmp_path / "best.json"
    res = cli("search", "--data", str(series_csv), "--x", "t", "--y", "value", "--time-budget", "4",
              "--workers", "1", "--seed", "2", "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert "s left)" in res.stderr
    # Five candidates when the run fitted that many distinct kernels (fewer on a loaded machine).
    assert re.search(r"among the [2-5] lowest-BIC ones, the one whose forecasts from four earlier points in time "
                     r".*have the lowest mean CRPS\. A kernel without a level, trend or damped trend .* only when its "
                     r"CRPS is below 80% of that one's\.", res.stdout), res.stdout
    kf = load_kernel_file(out)
    assert kf.q >= 2
    assert kf.combination.describe() in res.stdout  # what the forecast is (the kernel's, an average) and why
    bad = cli("search", "--data", str(series_csv), "--time-budget", "-3", "--out", str(out))
    assert bad.returncode != 0 and "time_budget" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_search_refuses_a_text_value_column(tmp_path: Path) -> None:
    csv = tmp_path / "hostile.csv"
    csv.write_text("year,value\n" + "".join(f"{1990 + i},=cmd|'/c calc'!A{i}\n" for i in range(12)))
    out = cli("search", "--data", str(csv), "--out", str(tmp_path / "k.json"))
    assert out.returncode != 0 and not (tmp_path / "k.json").exists()
    assert "'value' is not numeric" in out.stderr and "--y" in out.stderr and "Traceback" not in out.stderr


def test_report_writes_a_self_contained_html(series_csv: Path, searched: tuple[Path, subprocess.CompletedProcess],
                                             tmp_path: Path) -> None:
    out, _ = searched
    page = tmp_path / "report.html"
    res = cli("report", "--kernel", str(out), "--data", str(series_csv), "--x", "t", "--y", "value",
              "--out", str(page), "--baseline-budget", "1")
    assert res.returncode == 0, res.stderr
    text = page.read_text(encoding="utf-8")
    assert text.count("<script src=") == 0 and "plotly" in text.lower()  # JavaScript inline: opens offline
    assert "What the kernel says" in text and "Residual checks" in text and "of the variance" in text
    assert "In short, the kernel says the series is the sum of" in text and "Against the baselines" in text
    assert load_kernel_file(out).kernel.infix.replace("'", "&#x27;") in text


def test_families_option_names_the_grammar_families() -> None:
    """``--families`` names the grammar's optional families (the option alone: none); without it a
    preset keeps its own; an unknown family is refused."""
    from evocov_core.present.cli import _config_from_args, build_parser

    def config(*extra: str):
        return _config_from_args(build_parser().parse_args(["search", "--data", "d.csv", "--out", "k.json", *extra]))

    assert config().families == ("changepoint",) and config("--preset", "paper").families == ()
    assert config("--families", "statespace", "changewindow").families == ("changewindow", "statespace")
    assert config("--families").families == ()
    with pytest.raises(SystemExit):
        build_parser().parse_args(["search", "--data", "d.csv", "--out", "k.json", "--families", "cosines"])
    help_text = build_parser()._subparsers._group_actions[0].choices["search"].format_help()
    assert "--families" in help_text and "statespace" in help_text


@pytest.fixture(scope="module")
def airline_kernel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kernel fitted on the bundled Airline data (its published 10 % test split), as a kernel file."""
    from evocov_core.data import load_csv
    from evocov_core.fitting.metrics import FitData
    from evocov_core.fitting.optimize import OptimConfig, fit_kernel
    from evocov_core.language.library import compose
    from evocov_core.runs.kernel_file import dump_kernel_file, kernel_file_dict

    ds = load_csv(ROOT / "data" / "airline.csv", test_fraction=0.1)
    fit = fit_kernel(compose(["+", ["*", "SE", "PER"], "LIN"]), FitData.from_dataset(ds),
                     OptimConfig(n_restarts=1, n_screen=10, data_bounds=True), np.random.default_rng(0))
    assert fit.ok
    path = tmp_path_factory.mktemp("airline") / "kernel.json"
    path.write_text(dump_kernel_file(kernel_file_dict(fit, ds.norm, dataset="airline", n_test=ds.n_test,
                                                      test_fraction=ds.test_fraction)))
    return path


def _comparison(page: Path) -> tuple[list[dict], str]:
    text = page.read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="evocov-comparison">(.*?)</script>', text, re.S)
    assert m, "no comparison data in the report"
    table = re.search(r'<table[^>]*class="[^"]*comparison[^"]*".*?</table>', text, re.S)
    assert table, "no comparison table in the report"
    return json.loads(m.group(1)), table.group(0)


def test_report_compares_with_the_se_and_gpss_baselines(airline_kernel: Path, tmp_path: Path) -> None:
    """Three rows (the kernel, SE, GPSS) with finite BICs; the kernel's BIC is its file's; the baselines'
    forecasts are drawn dashed; seeded: a second report has the same numbers."""
    pages = []
    for name in ("a.html", "b.html"):
        page = tmp_path / name
        res = cli("report", "--kernel", str(airline_kernel), "--data", "data/airline.csv", "--out", str(page),
                  "--baseline-budget", "0.5")
        assert res.returncode == 0, res.stderr
        pages.append(page)
    rows, table = _comparison(pages[0])
    assert [r["model"] for r in rows] == ["this kernel", "SE", "GPSS"]
    assert table.split("<tbody>")[1].count("<tr>") == 3  # three models
    assert all(r["bic"] is not None and math.isfinite(r["bic"]) for r in rows)
    assert all(r["test_rmse"] is not None and r["tail_score"] is not None for r in rows)
    kf = load_kernel_file(airline_kernel)
    assert rows[0]["bic"] == pytest.approx(kf.scores["bic"], rel=1e-9, abs=1e-9)
    assert rows[0]["test_rmse"] == pytest.approx(kf.scores["test_rmse"], rel=1e-9)
    assert rows[1]["q"] == 3 and "exp" in rows[1]["expression"]
    assert rows[0]["bic"] < rows[1]["bic"]  # a seasonal kernel beats SE on Airline
    assert "level" in rows[2]["note"]
    text = pages[0].read_text(encoding="utf-8")
    assert '"name":"SE mean"' in text and '"name":"GPSS mean"' in text and '"dash":"dash"' in text
    again = _comparison(pages[1])[0]
    assert again[:2] == rows[:2]
    # GPSS's budget is checked between levels: the same seed gives the same kernel unless the next level's
    # predicted end falls on the budget (gpss_baseline), which a 0.5 s budget can meet on a faster machine.
    if again[2]["note"] == rows[2]["note"]:
        assert again[2] == rows[2]
    # 0 leaves GPSS out.
    page = tmp_path / "se.html"
    res = cli("report", "--kernel", str(airline_kernel), "--data", "data/airline.csv", "--out", str(page),
              "--baseline-budget", "0")
    assert res.returncode == 0, res.stderr
    assert [r["model"] for r in _comparison(page)[0]] == ["this kernel", "SE"]


def test_a_budget_too_short_to_fit_anything_says_so_without_a_traceback(tmp_path: Path) -> None:
    """Starting Python and reading the data come out of the budget; the pool's workers, still starting when
    the search gives up, are ended instead of failing after the command has exited."""
    res = cli("search", "--data", "data/airline.csv", "--time-budget", "1", "--out", str(tmp_path / "k.json"))
    assert "Traceback" not in res.stderr, res.stderr
    # Any start-up time leaves less than the 1 s floor of a 1 s budget, and the command says it will run over.
    assert "the search gets its floor of 1 s" in res.stderr
    if res.returncode != 0:  # a fast machine may still fit a kernel in the second left
        assert "no kernel was fitted within the 1 s time budget" in res.stderr and "raise --time-budget" in res.stderr


def test_report_and_compare_score_a_gpss_search_given_instead_of_searching_again(airline_kernel: Path,
                                                                                 tmp_path: Path) -> None:
    """``--gpss-kernel``: the GPSS row is that search's kernel, scored with no search of its own; a kernel
    file not found by GPSS, or fitted on another split, is refused with a message."""
    gpss = tmp_path / "gpss.json"
    res = cli("search", "--data", "data/airline.csv", "--algorithm", "gpss", "--time-budget", "10",
              "--out", str(gpss))
    assert res.returncode == 0, res.stderr
    found = load_kernel_file(gpss)
    page = tmp_path / "r.html"
    res = cli("report", "--kernel", str(airline_kernel), "--data", "data/airline.csv", "--out", str(page),
              "--gpss-kernel", str(gpss), "--no-classical")
    assert res.returncode == 0, res.stderr
    rows = _comparison(page)[0]
    assert [r["model"] for r in rows] == ["this kernel", "SE", "GPSS"]
    assert rows[2]["expression"] == found.kernel.infix and str(gpss) in rows[2]["note"]
    assert rows[2]["test_rmse"] == pytest.approx(found.scores["test_rmse"], rel=1e-6)
    table = tmp_path / "c.csv"
    res = cli("compare", "--kernel", str(airline_kernel), "--data", "data/airline.csv", "--out", str(table),
              "--gpss-kernel", str(gpss))
    assert res.returncode == 0, res.stderr
    gp = pd.read_csv(table).set_index("method")
    assert gp.loc["GPSS", "test_rmse"] == pytest.approx(found.scores["test_rmse"], rel=1e-6)
    # Not a GPSS search's file; a GPSS search on another split.
    res = cli("report", "--kernel", str(airline_kernel), "--data", "data/airline.csv", "--out", str(page),
              "--gpss-kernel", str(airline_kernel))
    assert res.returncode != 0 and "takes the kernel file of a GPSS search" in res.stderr
    # The GPSS search saw the first 90 %; compared on the first 80 %, it is refused.
    res = cli("report", "--kernel", str(airline_kernel), "--data", "data/airline.csv", "--out", str(page),
              "--test-fraction", "0.2", "--gpss-kernel", str(gpss), "--no-classical")
    assert res.returncode != 0 and "training points of these data" in res.stderr, res.stderr


#: Settings valid only with another: weighing the forecast reuses the calibration's refits at the origins.
NEEDS = {"combine": {"calibration": "origins"}}


def _other_value(name: str, typ: type, meta, default, algorithm: str = "evocov"):
    """A value of setting ``name`` other than ``default`` that the quick-fixed preset accepts alone."""
    from evocov_core.searches import ConfigError, preset

    if typ is bool:
        candidates = [not default]
    elif typ is tuple:
        candidates = [tuple(c for c in meta.choices if c not in default)[:1] or meta.choices[:1]]
    elif meta.choices is not None:
        candidates = [c for c in meta.choices if c != default]
    else:
        lo, hi = meta.lo, meta.hi
        candidates = [v for v in (default + 1, default * 2, lo, hi, (lo or 0) + 1) if v is not None]
        candidates = [typ(v) for v in candidates]
        if typ is float:
            candidates = [0.5 * default if default else 0.05, *candidates]
    # p_mutation and p_crossover sum to 1: the CLI sets the other one (the page derives it).
    partner = {"p_mutation": "p_crossover", "p_crossover": "p_mutation"}.get(name)
    for v in candidates:
        if v == default:
            continue
        try:
            preset("quick-fixed", algorithm, **{name: v}, **({partner: 1.0 - v} if partner else {}),
                   **NEEDS.get(name, {}))
        except ConfigError:
            continue
        return v
    raise AssertionError(f"no valid non-default value found for {name}")


def test_every_setting_is_reachable_from_the_cli(series_csv: Path, tmp_path: Path) -> None:
    """Each SearchConfig field has an option generated from its metadata, and it reaches the config."""
    from evocov_core.present.cli import _config_from_args, build_parser
    from evocov_core.searches import preset
    from evocov_core.searches.config import settings

    parser = build_parser()
    base = ["search", "--data", str(series_csv), "--out", str(tmp_path / "k.json"), "--preset", "quick-fixed"]
    default = preset("quick-fixed")
    for name, typ, meta in settings():
        if name == "algorithm":
            assert _config_from_args(parser.parse_args([*base, "--algorithm", "gpss"])).algorithm == "gpss"
            continue
        value = _other_value(name, typ, meta, getattr(default, name))
        flag = "--" + name.replace("_", "-")
        if typ is bool:
            argv = [flag if value else "--no-" + name.replace("_", "-")]
        elif typ is tuple:
            argv = [flag, *value]
        else:
            argv = [flag, str(value)]
        for other, v in NEEDS.get(name, {}).items():
            argv += ["--" + other.replace("_", "-"), str(v)]
        config = _config_from_args(parser.parse_args([*base, *argv]))
        assert getattr(config, name) == pytest.approx(value) if typ is float else getattr(config, name) == value, name
    # Bounds come from the metadata: out of range is a clear one-line error.
    res = subprocess.run([sys.executable, "-m", "evocov_core", *base, "--d-max", "31"], capture_output=True,
                         text=True, cwd=ROOT)
    assert res.returncode == 2 and "d_max must be in [0, 30], got 31" in res.stderr


def test_a_search_budget_counts_from_the_process_start() -> None:
    """process_seconds: this process has run for a while (imports included), and a new one for less."""
    import time

    from evocov_core.present.cli import process_seconds

    if not Path("/proc/self/stat").is_file():
        pytest.skip("needs Linux /proc")
    t0 = time.perf_counter()
    here = process_seconds()
    assert 0.0 < here < 86400
    fresh = subprocess.run([sys.executable, "-c", "import time; time.sleep(0.5); from evocov_core.present.cli import "
                            "process_seconds; print(process_seconds())"], capture_output=True, text=True,
                           cwd=Path(__file__).resolve().parents[2], timeout=120, check=True)
    assert 0.5 <= float(fresh.stdout) <= time.perf_counter() - t0 + 0.05


def test_a_kernel_file_on_data_it_cannot_serve_gets_one_line(airline_kernel: Path, tmp_path: Path) -> None:
    """A file with no recorded split takes the default one; reading notes (rows sorted) are printed;
    data far from the kernel's units get a warning, and a covariance that fails there an error line,
    not a traceback."""
    doc = json.loads(airline_kernel.read_text())
    doc["scores"].pop("test_fraction", None)
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(doc))
    shuffled = tmp_path / "shuffled.csv"
    pd.read_csv("data/airline.csv").sample(frac=1.0, random_state=0).to_csv(shuffled, index=False)
    res = cli("predict", "--kernel", str(bare), "--data", str(shuffled), "--out", str(tmp_path / "p.csv"))
    assert res.returncode == 0, res.stderr
    assert len(pd.read_csv(tmp_path / "p.csv")) == 15  # the default 10 % of Airline's 144 months
    assert "note:" in res.stderr and "sorted" in res.stderr
    # exp of a linear kernel, in Airline's units, on inputs near 1e98: the covariance overflows.
    doc["expression"] = "exp(dot_prod(euc(x), hp0, hp1))"
    doc["hyperparameters"] = {"hp0": {"value": 0.5}, "hp1": {"value": 2.0}}
    doc["q"] = 3
    lin = tmp_path / "explin.json"
    lin.write_text(json.dumps(doc))
    far = tmp_path / "far.csv"
    pd.DataFrame({"x": np.arange(40) * 1e98, "y": np.sin(np.arange(40) / 3.0)}).to_csv(far, index=False)
    res = cli("predict", "--kernel", str(lin), "--data", str(far), "--out", str(tmp_path / "q.csv"))
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert f"warning: {lin} was fitted on other data" in res.stderr
    assert "error: the kernel's covariance cannot be used on these data" in res.stderr


def test_outputs_and_counts_that_cannot_work_are_refused_before_any_work(tmp_path: Path) -> None:
    """An --out or --records that cannot be written is refused before the data are read (the data file
    here does not even exist), not after a search of hours; --workers and --w out of range likewise."""
    missing = tmp_path / "no-such-folder"
    for extra, message in ((["--out", str(missing / "k.json")], f"folder {missing} does not exist"),
                           (["--out", str(tmp_path)], "is a folder; give a file name"),
                           (["--out", str(tmp_path / "k.json"), "--records", str(missing / "r.csv")],
                            f"--records {missing / 'r.csv'}: folder {missing} does not exist")):
        res = cli("search", "--data", str(tmp_path / "absent.csv"), *extra)
        assert res.returncode == 2 and message in res.stderr, res.stderr
    res = cli("search", "--data", "data/airline.csv", "--out", str(tmp_path / "k.json"), "--workers", "0")
    assert res.returncode == 2 and "--workers takes 1 to 1024, got 0" in res.stderr
    res = cli("check-kernel", str(tmp_path / "k.json"), "--w", "0")
    assert res.returncode == 2 and "--w takes 1 to 1000, got 0" in res.stderr


def test_a_programming_error_keeps_its_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the user's errors become one line: a ValueError from our own code (an inverted random range,
    say) used to print as 'error: high - low < 0', which tells the user nothing and hides the bug."""
    from evocov_core.present import cli as cli_module

    def broken(args):
        raise ValueError("high - low < 0")

    monkeypatch.setattr(cli_module, "cmd_check_kernel", broken)
    with pytest.raises(ValueError, match="high - low"):
        cli_module.main(["check-kernel", "kernel.json"])

"""The Panel page and the Data page's long table (issue 73, item 1), without a browser.

The runs are real: a worker process runs the ``panel`` engine on a few short series with the panel preset at
fixed counts (:data:`FIXED`, seconds a run). The browser side (upload, run, sort, a row opened, the zip, the
server killed and restarted) is in ``tests/dashboard/test_browser_panel.py``.
"""

from __future__ import annotations

import io
import json
import math
import os
import signal
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dashboard.panel_runs import LOCK, OUT, PROGRESS, STATE, PanelRequest, PanelRuns, holds_lock
from dashboard.panel_view import (
    format_eta,
    panel_of_run,
    register_series_run,
    series_notes,
    series_rows,
    series_run_id,
    settings_from_text,
)
from evocov_core.data import read_table
from evocov_core.panel.table import panel_from_frame
from evocov_core.runs.kernel_file import parse_kernel_file
from evocov_core.runs.store import RunStore

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app.py"
TIMEOUT = 120
#: The panel preset at fixed counts and no clock: each series takes about half a second.
FIXED = dict(population=6, mu=2, generations=2, d_min=2, d_max=4, psd_w=6, max_evals=15, n_screen=4, rho_max=30)
FIXED_TEXT = " ".join(f"{k}={v}" for k, v in FIXED.items())

pytestmark = pytest.mark.filterwarnings("ignore:Discarding nonzero nanoseconds:UserWarning")


def long_csv(lengths: dict[str, int], *, header: str = "unique_id,ds,y", seed: int = 0) -> bytes:
    """A long table of monthly series (trend, a yearly cycle, noise), ``lengths`` points each."""
    rng = np.random.default_rng(seed)
    rows = [header]
    for k, (uid, n) in enumerate(lengths.items()):
        for i in range(n):
            v = 50 + 3 * k + 0.4 * i + 5 * np.sin(2 * np.pi * i / 12 + k) + rng.normal(0, 0.8)
            rows.append(f"{uid},{2010 + i // 12}-{i % 12 + 1:02d}-01,{v:.3f}")
    return ("\n".join(rows) + "\n").encode()


def request(data: bytes, *, h: int = 4, workers: int = 1, name: str = "t.csv") -> PanelRequest:
    n = len(panel_from_frame(read_table(data)))
    return PanelRequest(name, "unique_id", "ds", "y", h, None, "panel", 0, workers, {**FIXED, "time_budget": 0.0},
                        n, time.time())


def wait_for(check, timeout: float = TIMEOUT, what: str = "the condition"):
    t0 = time.time()
    while time.time() - t0 < timeout:
        got = check()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"{what} did not happen within {timeout:.0f} s")


def finished(runs: PanelRuns, run_id: str) -> None:
    wait_for(lambda: not runs.status(run_id).active, what=f"panel run {run_id} ending")
    s = runs.status(run_id)
    assert s.state == "finished", (s, (runs.folder(run_id) / "worker.log").read_text())


@pytest.fixture(scope="module")
def done_run(tmp_path_factory):
    """A finished run: three monthly series, one of 6 points (seasonal naive) and one of a single point."""
    data_dir = tmp_path_factory.mktemp("evocov-panel")
    data = long_csv({"alpha": 40, "beta": 48, "short": 6, "one": 1})
    runs = PanelRuns(data_dir)
    run_id = runs.start(data, request(data))
    finished(runs, run_id)
    return data_dir, runs, run_id


# --- settings, notes, the table ------------------------------------------------------------------------------


def test_settings_are_typed_as_the_command_line_names_them():
    got = settings_from_text("population=6 --mu=2; d-min=2 combine=AutoETS,AutoTheta families=changepoint+statespace",
                             "panel")
    assert got == {"population": 6, "mu": 2, "d_min": 2, "combine": ("AutoETS", "AutoTheta"),
                   "families": ("changepoint", "statespace")}
    assert settings_from_text("  ", "panel") == {}


@pytest.mark.parametrize(("text", "message"), [
    ("popsize=6", "unknown setting 'popsize'"),
    ("population=six", "population is a whole number, not 'six'"),
    ("population", "'population' is not name=value"),
    ("metric=best", "metric is one of"),
    ("time_budget=3", "set the time budget with Seconds per series"),
    ("population=4 mu=4", r"mu must satisfy 1 <= mu < population"),  # as a run would refuse it
])
def test_bad_settings_are_one_line_before_a_run_starts(text, message):
    with pytest.raises(ValueError, match=message) as err:
        settings_from_text(text, "panel")
    assert "\n" not in str(err.value)


def test_the_series_a_search_cannot_serve_are_said_with_what_they_get():
    df = pd.DataFrame({"unique_id": ["ok"] * 24 + ["one"] + ["few"] * 4 + ["flat"] * 12 + ["none"] * 2,
                       "ds": [*range(24), 0, *range(4), *range(12), 0, 1],
                       "y": [*np.sin(np.arange(24.0)), 3.0, 1.0, 2.0, np.nan, 4.0, *[5.0] * 12, np.nan, np.nan]})
    notes = series_notes(panel_from_frame(df))
    text = " ".join(notes)
    assert "1 series with a single observed point (one): that value is its forecast, with no interval" in text
    assert "fewer than 10 observed points (few): seasonal naive" in text
    assert "1 constant series (flat)" in text and "without any value (none)" in text
    assert "3 empty values of y are points not observed" in text
    assert "ok" not in text.replace("(ok", "")  # the searchable series is not named
    assert series_notes(panel_from_frame(df[df.unique_id == "ok"])) == []


def test_the_eta_reads_as_a_clock():
    assert format_eta(42.4) == "0:42" and format_eta(3723) == "1:02:03" and format_eta(math.nan) == "—"


def test_a_finished_run_keeps_the_engine_s_folder_and_its_table(done_run):
    _, runs, run_id = done_run
    series = runs.series_table(run_id)
    assert list(series.unique_id) == ["alpha", "beta", "short", "one"]
    assert list(series.status) == ["ok", "ok", "fallback", "fallback"]
    rows = series_rows(series, runs.forecasts(run_id), {p.uid: p.y for p in panel_of_run(runs, run_id).series})
    alpha = rows.set_index("series").loc["alpha"]
    assert len(alpha["spark"]) == 40 + 4 and alpha["kernel"] != "—" and "kernel" in alpha["forecast by"]
    assert math.isfinite(alpha["holdout ÷ AutoETS"])
    one = rows.set_index("series").loc["one"]
    assert one["kernel"] == "—" and "1 observed point" in one["why"] and len(one["spark"]) == 1 + 4
    s = runs.status(run_id)
    assert (s.done, s.total, s.state, s.error) == (4, 4, "finished", "")
    assert json.loads((runs.folder(run_id) / STATE).read_text())["counts"] == {"ok": 2, "fallback": 2}


def test_the_zip_holds_the_forecasts_the_table_and_every_kernel_file(done_run):
    _, runs, run_id = done_run
    z = zipfile.ZipFile(io.BytesIO(runs.zip_bytes(run_id)))
    assert sorted(z.namelist()) == ["forecasts.csv", "kernels/alpha.json", "kernels/beta.json", "series.csv"]
    forecasts = pd.read_csv(z.open("forecasts.csv"))
    assert forecasts.groupby("unique_id").size().to_dict() == {"alpha": 4, "beta": 4, "one": 4, "short": 4}
    assert parse_kernel_file(z.read("kernels/beta.json").decode()).scores["dataset"] == "beta"


def test_a_series_becomes_a_finished_run_of_the_store_once(done_run):
    data_dir, runs, run_id = done_run
    store = RunStore(data_dir)
    row = runs.series_table(run_id).set_index("unique_id").loc["beta"]
    rid = register_series_run(store, runs, run_id, "beta", row.kernel_file, float(row.seconds))
    assert rid == series_run_id(run_id, "beta")
    run = store.get_run(rid)
    assert run.status == "finished" and run.kind == "search" and run.label == f"Panel {run_id} · beta"
    assert run.dataset.name == "beta" and run.dataset.n == 48 and run.dataset.n_test == 0
    kernel = json.loads(runs.kernel_text(run_id, row.kernel_file))
    assert run.best.expression == kernel["expression"] and run.best.bic == pytest.approx(float(row.bic))
    n_runs = len(store.list_runs())
    assert register_series_run(store, runs, run_id, "beta", row.kernel_file, 1.0) == rid
    assert len(store.list_runs()) == n_runs  # a second click opens the same run
    assert register_series_run(store, runs, run_id, "short", "", 1.0) is None  # a fallback has no kernel
    assert runs.kernel_text(run_id, "../request.json") is None  # the table's cell cannot leave the folder


# --- a run's process: stop, kill, resume -----------------------------------------------------------------------


def _parts(runs: PanelRuns, run_id: str) -> dict[str, tuple[int, bytes]]:
    parts = (runs.folder(run_id) / OUT / "parts").glob("*.json")
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in parts}


def test_a_killed_run_resumes_when_the_server_starts_again_and_redoes_no_series(tmp_path):
    """The worker is killed (SIGKILL, with the server: nothing is said to anyone); the next server's first page
    resumes the run from its folder; the series finished before are read, not redone, and none is lost."""
    data = long_csv({f"s{k}": 36 + 2 * k for k in range(8)})
    runs = PanelRuns(tmp_path)
    run_id = runs.start(data, request(data))
    wait_for(lambda: len(_parts(runs, run_id)) >= 2, what="two series finishing")
    pid = json.loads((runs.folder(run_id) / STATE).read_text())["pid"]
    os.killpg(pid, signal.SIGKILL)  # the worker's own session: it and nothing else
    wait_for(lambda: not holds_lock(runs.folder(run_id) / LOCK), what="the killed worker's lock going")
    assert runs.status(run_id).state == "interrupted" and runs.status(run_id).resumable
    before = _parts(runs, run_id)
    assert 2 <= len(before) < 8, "the run ended before it could be killed"

    again = PanelRuns(tmp_path)  # what a restarted server makes on its first page
    assert again.resumed_at_start == (run_id,)
    finished(again, run_id)
    after = _parts(again, run_id)
    assert len(after) == 8 and all(after[name] == before[name] for name in before)  # read, not redone
    assert json.loads((again.folder(run_id) / PROGRESS).read_text())["resumed"] == len(before)
    assert len(again.series_table(run_id)) == 8 and again.status(run_id).resumed == len(before)
    assert PanelRuns(tmp_path).resumed_at_start == ()  # a finished run is not run again


def test_a_stopped_run_keeps_its_series_and_resumes_by_one_click(tmp_path):
    data = long_csv({f"s{k}": 36 + 2 * k for k in range(6)})
    runs = PanelRuns(tmp_path)
    run_id = runs.start(data, request(data))
    wait_for(lambda: len(_parts(runs, run_id)) >= 1, what="one series finishing")
    runs.stop(run_id)
    wait_for(lambda: not runs.status(run_id).active, what="the run stopping")
    s = runs.status(run_id)
    assert s.state == "stopped" and s.resumable and 1 <= s.done < 6, s
    assert len(runs.series_table(run_id)) == s.done  # the table of what is finished
    assert PanelRuns(tmp_path).resumed_at_start == ()  # a user's stop is not undone by a restart
    assert runs.resume(run_id)
    finished(runs, run_id)
    assert len(runs.series_table(run_id)) == 6


def test_a_server_restarted_while_a_worker_runs_leaves_it_alone(tmp_path):
    """A server killed alone leaves its worker running: the next server shows that run as running, from its
    folder, and starts no second worker on it."""
    data = long_csv({f"s{k}": 40 for k in range(4)})
    runs = PanelRuns(tmp_path)
    run_id = runs.start(data, request(data))
    wait_for(lambda: holds_lock(runs.folder(run_id) / LOCK), what="the worker taking its lock")
    other = PanelRuns(tmp_path)
    assert other.resumed_at_start == () and other.status(run_id).state == "running"
    assert not other.resume(run_id)  # a worker holds it
    finished(other, run_id)
    log = (runs.folder(run_id) / "worker.log").read_text()
    assert log.count(" starts") == 1, log


# --- the pages ---------------------------------------------------------------------------------------------------



def app() -> AppTest:
    return AppTest.from_file(str(APP), default_timeout=TIMEOUT)


def texts(at: AppTest, kind: str) -> list[str]:
    return [str(e.value) for e in getattr(at, kind)]


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def upload_long(at: AppTest, content: bytes, name: str = "long.csv") -> AppTest:
    at.file_uploader(key="data_panel_upload").set_value((name, content, "text/csv"))
    return at.run()


def _has_button(at: AppTest, key: str) -> bool:
    return any(b.key == key for b in at.button)


def test_the_data_page_guesses_a_long_table_s_columns_and_makes_it_the_session_s_panel(data_dir):
    at = app().run()
    upload_long(at, long_csv({"a": 30, "b": 30}, header="item,date,sales"))
    no_exception(at)
    assert [s.value for s in at.selectbox if s.key and s.key.startswith("data_panel_")] == ["item", "date", "sales"]
    assert any("Ready" in s and "2 series · 60 rows · dates" in s for s in texts(at, "success"))
    assert "evocov_panel_table" not in at.session_state  # not before "Use this panel"
    at.button(key="data_use_panel").click().run()
    table = at.session_state["evocov_panel_table"]
    assert (table.id_col, table.ds_col, table.y_col, table.n_series) == ("item", "date", "sales", 2)
    assert at.session_state["evocov_dataset"].name == "airline"  # the single-series dataset is another thing


def test_columns_the_names_do_not_tell_are_chosen(data_dir):
    at = app().run()
    upload_long(at, long_csv({"a": 20, "b": 20}, header="who,when,how_many"))
    no_exception(at)
    boxes = [s for s in at.selectbox if s.key and s.key.startswith("data_panel_")]
    assert boxes[0].value is None and boxes[1].value == "when"  # dates are found by their values
    assert any("Choose the column of each role" in i for i in texts(at, "info"))
    boxes[0].set_value("who").run()
    no_exception(at)
    assert any("2 series" in s for s in texts(at, "success"))


def test_the_single_series_upload_points_to_the_long_table_tab(data_dir):
    at = app().run()
    at.file_uploader(key="data_upload").set_value(("long.csv", long_csv({"a": 20, "b": 20}), "text/csv")).run()
    no_exception(at)
    assert any("long table of 2 series" in i and "Many series" in i for i in texts(at, "info"))


BAD_LONG = {
    "duplicated (unique_id, ds)": (b"unique_id,ds,y\na,2020-01-01,1\na,2020-02-01,2\na,2020-01-01,3\n",
                                   "series 'a' has two rows at ds 2020-01-01 (row 4 repeats an earlier one)"),
    "y not a number": (b"unique_id,ds,y\na,1,1.5\na,2,lots\n", "column 'y' (y) holds 'lots' in row 3, which is not a "
                       "number"),
    "ds unreadable": (b"unique_id,ds,y\na,np.float64(1.0),1\na,np.float64(2.0),2\n",
                      "column 'ds' (ds) holds 'np.float64(1.0)' in row 2, which is neither a date nor a number; "
                      "nothing was guessed in its place"),
}


@pytest.mark.parametrize("case", list(BAD_LONG))
def test_a_bad_long_table_is_one_line_and_keeps_the_session_s_panel(data_dir, case):
    content, message = BAD_LONG[case]
    at = app().run()
    upload_long(at, long_csv({"a": 20, "b": 20}), "good.csv")
    at.button(key="data_use_panel").click().run()
    upload_long(at, content, "bad.csv")
    no_exception(at)
    errors = texts(at, "error")
    assert len(errors) == 1 and "\n" not in errors[0], errors
    assert message in errors[0] and "The current panel (good.csv) is unchanged" in errors[0], errors[0]
    assert not _has_button(at, "data_use_panel")
    assert at.session_state["evocov_panel_table"].name == "good.csv"


def test_an_unreadable_time_column_chosen_by_hand_is_named_and_not_guessed_around(data_dir):
    """The issue's case: a column ``x`` of text such as ``np.float64(1.0)`` is said, never replaced by the row order."""
    at = app().run()
    upload_long(at, b"unique_id,x,y\na,np.float64(1.0),1\na,np.float64(2.0),2\n")
    box = next(s for s in at.selectbox if s.key and s.key.startswith("data_panel_ds"))
    assert box.value is None  # not guessed
    box.set_value("x").run()
    no_exception(at)
    assert texts(at, "error") == [
        "**Cannot use long.csv as a panel:** column 'x' (ds) holds 'np.float64(1.0)' in row 2, which is neither a "
        "date nor a number; nothing was guessed in its place."]


def test_a_series_with_one_point_is_accepted_and_said_to_get_a_fallback(data_dir):
    at = app().run()
    upload_long(at, long_csv({"a": 24, "lonely": 1}))
    no_exception(at)
    assert not at.error
    notes = " ".join(texts(at, "info"))
    assert "1 series with a single observed point (lonely): that value is its forecast, with no interval" in notes
    assert "fallback" in notes and _has_button(at, "data_use_panel")


def test_the_panel_page_without_a_table_says_where_to_get_one(data_dir):
    at = app().run()
    at.switch_page("pages/6_panel.py").run()
    no_exception(at)
    assert texts(at, "title") == ["Panel"]
    assert any("Upload a long table" in i for i in texts(at, "info"))
    assert not _has_button(at, "panel_start")


def panel_page_with(content: bytes, name: str) -> AppTest:
    at = app().run()
    upload_long(at, content, name)
    at.button(key="data_use_panel").click().run()
    at.switch_page("pages/6_panel.py").run()
    at.number_input(key="panel_budget").set_value(0.0).run()
    at.number_input(key="panel_workers").set_value(1).run()
    at.number_input(key="panel_h").set_value(3).run()
    return at


def test_invalid_settings_on_the_panel_page_are_one_line_and_nothing_starts(data_dir):
    at = panel_page_with(long_csv({"a": 20}), "one.csv")
    at.text_input(key="panel_settings").set_value("population=6 popsize=3").run()
    no_exception(at)
    assert [e for e in texts(at, "error") if "Invalid settings" in e] == [
        "**Invalid settings:** unknown setting 'popsize' (the names of `python -m evocov_core search --help`, such as "
        "population, generations, mu, max_evals)."]
    assert not _has_button(at, "panel_start")


def _table_series(at: AppTest) -> list[str]:
    return list(at.dataframe[0].value["series"])


def test_two_sessions_run_two_panels_at_once_and_each_sees_its_own(data_dir):
    """Two users: each uploads a table and starts a run; both run at once, each page shows its own run and
    table, and a reload (a new session on the page's URL) comes back to the same run."""
    a = panel_page_with(long_csv({"a1": 30, "a2": 34, "a3": 36}, seed=1), "first.csv")
    b = panel_page_with(long_csv({"b1": 30, "b2": 32}, seed=2), "second.csv")
    for at in (a, b):
        at.text_input(key="panel_settings").set_value(FIXED_TEXT).run()
        at.button(key="panel_start").click().run()
        no_exception(at)
    ra, rb = a.session_state["evocov_panel_run"], b.session_state["evocov_panel_run"]
    assert ra != rb and a.query_params.get("panel") == ra and b.query_params.get("panel") == rb
    runs = PanelRuns(data_dir, resume=False)  # reads the folders, as the page does
    assert runs.status(ra).active and runs.status(rb).active  # both at once
    bar = next(p.proto.text for p in a.get("progress"))  # drawn at once, with the ETA unknown or known
    assert bar.split(" · ETA ")[0] in {f"{k}/3 series" for k in range(4)}, bar
    for at, rid in ((a, ra), (b, rb)):
        wait_for(lambda rid=rid: not runs.status(rid).active, what=f"run {rid} ending")
        at.run()
        no_exception(at)
        assert any(rid in h for h in texts(at, "subheader"))
        assert any(":material/check_circle: finished" in m for m in texts(at, "markdown")), texts(at, "markdown")
    assert _table_series(a) == ["a1", "a2", "a3"] and _table_series(b) == ["b1", "b2"]
    assert any("Holdout ÷ AutoETS" in c and "RMSE" in c for c in texts(a, "caption"))
    assert any(d.proto.label.startswith("Download forecasts and kernels") for d in a.get("download_button"))

    reload = app()
    reload.query_params["panel"] = rb
    reload.run()
    reload.switch_page("pages/6_panel.py").run()
    no_exception(reload)
    assert reload.session_state["evocov_panel_run"] == rb and _table_series(reload) == ["b1", "b2"]


def test_a_panel_series_opens_on_the_results_page_as_a_single_search(done_run, monkeypatch):
    data_dir, runs, run_id = done_run
    monkeypatch.setenv("EVOCOV_DATA_DIR", str(data_dir))
    monkeypatch.chdir(ROOT)
    row = runs.series_table(run_id).set_index("unique_id").loc["alpha"]
    rid = register_series_run(RunStore(data_dir), runs, run_id, "alpha", row.kernel_file, float(row.seconds))
    at = app()
    at.query_params["run"] = rid
    at.run()
    at.switch_page("pages/3_results.py").run()
    no_exception(at)
    assert any("on **alpha** (40 training, 0 test points)" in m for m in texts(at, "markdown"))
    assert any("**The kernel.**" in m for m in texts(at, "markdown"))


def priced_long_csv(lengths: dict[str, int], future: int = 0) -> bytes:
    """A long table with a price each series' sales follow (``future``: the next steps' prices alone, X_df)."""
    rng = np.random.default_rng(5)
    rows = ["unique_id,ds,price" + ("" if future else ",y")]
    for k, (uid, n) in enumerate(lengths.items()):
        for i in range(n, n + future) if future else range(n):
            price = 5 + np.sin(i / 3 + k) + rng.normal(0, 0.3)
            y = 80 + 0.3 * i + 4 * np.sin(2 * np.pi * i / 12) - 5 * price + rng.normal(0, 0.2)
            rows.append(f"{uid},{2010 + i // 12}-{i % 12 + 1:02d}-01,{price:.3f}" + ("" if future else f",{y:.3f}"))
    return ("\n".join(rows) + "\n").encode()


def test_a_panel_with_covariates_takes_their_future_values_and_opens_a_series_with_them(data_dir):
    """The Panel page's covariates: a future file without a series' rows is one line and nothing starts; with
    the right one the run records them as ``panel --covariates --future`` does, and a series opened on Results
    forecasts with the panel's future values of it."""
    lengths = {"north": 30, "south": 34}
    at = panel_page_with(priced_long_csv(lengths), "priced.csv")
    no_exception(at)
    [box] = [m for m in at.multiselect if m.label == "Covariates (known in advance)"]
    assert box.options == ["price"]
    assert _has_button(at, "panel_start")  # without covariates, as before
    box.set_value(["price"]).run()
    assert any("Upload the future values of price" in i for i in texts(at, "info"))
    assert not _has_button(at, "panel_start")
    short = priced_long_csv({"north": 30}, future=3)  # no rows for south
    at.file_uploader(key="panel_future").set_value(("x.csv", short, "text/csv")).run()
    no_exception(at)
    errors = texts(at, "error")
    assert len(errors) == 1 and "**Cannot use x.csv:** series 'south' has 0 rows of future values" in errors[0]
    assert not _has_button(at, "panel_start")
    future = priced_long_csv(lengths, future=3)
    at.file_uploader(key="panel_future").set_value(("x.csv", future, "text/csv")).run()
    assert not at.error
    at.text_input(key="panel_settings").set_value(FIXED_TEXT).run()
    at.button(key="panel_start").click().run()
    no_exception(at)
    run_id = at.session_state["evocov_panel_run"]
    runs = PanelRuns(data_dir, resume=False)
    finished(runs, run_id)
    assert runs.status(run_id).request.covariates == ["price"]
    assert (runs.folder(run_id) / "future.csv").read_bytes() == future
    forecasts = runs.forecasts(run_id)
    assert list(forecasts.groupby("unique_id").size()) == [3, 3]
    series = runs.series_table(run_id).set_index("unique_id")
    assert list(series.status) == ["ok", "ok"]
    kernel = json.loads(runs.kernel_text(run_id, series.loc["north"].kernel_file))
    assert kernel["covariates"]["names"] == ["price"]
    at.run()
    assert any("covariates price" in m for m in texts(at, "markdown"))

    rid = register_series_run(RunStore(data_dir), runs, run_id, "north", series.loc["north"].kernel_file, 1.0)
    run = RunStore(data_dir).get_run(rid)
    assert run.dataset.covariates == ("price",) and len(run.extra["future_covariates"]["x"]) == 3
    results = app()
    results.query_params["run"] = rid
    results.run()
    results.switch_page("pages/3_results.py").run()
    no_exception(results)
    assert any(f"future values of panel {run_id}" in c for c in texts(results, "caption"))
    assert [d for d in results.get("download_button") if "Download the forecast" in str(d.proto.label)]

"""Dashboard tests with Streamlit's AppTest (no browser): every page, uploads, settings, runs.

Each test points ``EVOCOV_DATA_DIR`` at its own temporary folder, so the run store (and
the process-wide job manager, cached per folder) never touches ``~/.local``.
"""

from __future__ import annotations

import json
import math
import re
from concurrent.futures import Future
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dashboard.state import PAGES as PAGE_LIST
from evocov_core.searches import preset

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app.py"
PAGES = [script for script, _, _ in PAGE_LIST]
TIMEOUT = 60

# Plotly converting decimal-year dates (core figures) is noisy and harmless.
pytestmark = [pytest.mark.filterwarnings("ignore:Discarding nonzero nanoseconds:UserWarning"),
              pytest.mark.usefixtures("data_dir")]



@pytest.fixture(autouse=True)
def no_background_fits(monkeypatch):
    """Reference fits (SE baseline, fixed structures) and classical forecasts would start a worker process;
    tests keep them pending (keyed ``("se", ...)``, ``("classical", ...)``...) and may resolve them."""
    import dashboard.fits as fits

    pending: dict = {}

    def fake(key, fn, *args, **kwargs):
        fut = pending.setdefault(key, Future())
        fut.call = (fn, args, kwargs)  # what its process would run (run_pending)
        return fut

    for lane in ("fit", "forecast", "report"):
        monkeypatch.setattr(fits, f"background_{lane}", fake)
        monkeypatch.setattr(fits, f"existing_{lane}", lambda key: pending.get(key))
    return pending


def app() -> AppTest:
    return AppTest.from_file(str(APP), default_timeout=TIMEOUT)


def texts(at: AppTest, kind: str) -> list[str]:
    return [str(e.value) for e in getattr(at, kind)]


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def csv_bytes(n: int = 60, *, header: str = "t,value", shuffle: bool = False, dup: int = 0) -> bytes:
    t = np.arange(n, dtype=float)
    y = 10 + 0.1 * t + 3 * np.sin(2 * np.pi * t / 12)
    rows = [f"{a:g},{b:.4f}" for a, b in zip(t, y, strict=True)]
    rows += rows[:dup]
    if shuffle:
        rows = rows[::-1]
    return (header + "\n" + "\n".join(rows) + "\n").encode()


def tiny_search(data_dir: Path, algorithm: str = "gpss", ds=None, seed: int = 0) -> str:
    """A finished run in the store, made synchronously with the core (GPSS, one level, serial), on
    ``ds`` (default: the bundled Airline series)."""
    from evocov_core.data import load_bundled
    from evocov_core.runs.jobs import JobManager, JobSpec
    from evocov_core.runs.store import RunStore
    from evocov_core.searches import preset

    ds = ds if ds is not None else load_bundled("airline")
    cfg = preset("quick", "gpss", generations=1, n_restarts=1, max_evals=20)
    jm = JobManager(RunStore(data_dir), max_concurrent=1)
    jid = jm.submit(JobSpec("search", ds, cfg, seed=seed, workers=1, label="test run"))
    job = jm.get(jid)
    assert job.wait(120), "the tiny search did not finish"
    snap = job.snapshot()
    assert snap.status == "finished", snap.error
    return jid


def wait_job(job_id: str, timeout: float = 120) -> None:
    from dashboard.runs import manager

    job = manager().get(job_id)
    assert job is not None
    assert job.wait(timeout), f"job {job_id} did not finish in {timeout} s"


# --- every page ----------------------------------------------------------------------------------


def test_page_list():
    assert PAGES[0] == "pages/1_data.py"
    assert len(PAGES) == 6
    # Streamlit serves every script in pages/ as a page: nothing else may live there, and
    # every one of them is in the sidebar's list.
    assert sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "pages").glob("*.py")) == sorted(PAGES)


def test_no_private_streamlit_api():
    """Only documented Streamlit API: no runtime internals flipped to steer the page mode."""
    sources = [APP, *(ROOT / "pages").glob("*.py"), *(ROOT / "dashboard").glob("*.py")]
    for path in sources:
        text = path.read_text()
        assert "streamlit.runtime" not in text and "PagesManager" not in text, path
        assert "st.navigation" not in text, f"{path}: st.navigation would turn off the pages/ mode"


def test_pages_are_thin_and_dashboard_modules_small():
    """A page script draws by calling its dashboard module (no functions or loops of its own); what is
    computed lives in evocov_core. Page files stay short, dashboard modules under 400 lines."""
    for path in (ROOT / "pages").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert len(text.splitlines()) <= 250, path
        assert not re.search(r"^\s*(def|class|for|while|if) ", text, re.MULTILINE), f"{path} has logic of its own"
    for path in (ROOT / "dashboard").glob("*.py"):
        assert len(path.read_text(encoding="utf-8").splitlines()) <= 400, path


def test_sidebar_lists_every_page():
    at = app().run()
    no_exception(at)
    links = at.sidebar.get("page_link")
    labels = [link.proto.label for link in links]
    assert labels[: len(PAGE_LIST)] == [label for _, label, _ in PAGE_LIST]


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders(page):
    at = app().run()
    no_exception(at)
    at.switch_page(page).run()
    no_exception(at)
    assert at.title, f"{page} has no title"


def test_default_dataset_is_airline():
    at = app().run()
    no_exception(at)
    assert texts(at, "title") == ["Data"]
    ds = at.session_state["evocov_dataset"]
    assert ds.name == "airline" and ds.n == 144 and ds.n_test == 15
    assert any("airline" in m for m in texts(at.sidebar, "markdown"))
    assert at.selectbox(key="data_bundled").value == "airline"
    assert math.isclose(at.slider(key="data_test_fraction").value, 0.1)


def test_bundled_switch_and_test_fraction():
    at = app().run()
    at.selectbox(key="data_bundled").set_value("co2").run()
    no_exception(at)
    assert at.session_state["evocov_dataset"].name == "co2"
    at.slider(key="data_test_fraction").set_value(0.2).run()
    no_exception(at)
    ds = at.session_state["evocov_dataset"]
    assert ds.name == "co2" and math.isclose(ds.test_fraction, 0.2)


def test_the_search_page_describes_a_watched_run_in_its_own_data(data_dir, no_background_fits):
    """A run on Airline watched after the Data page moved to CO2: its best kernel's test RMSE is in
    passengers, not in CO2's units."""
    jid = tiny_search(data_dir)
    at = app().run()
    at.selectbox(key="data_bundled").set_value("co2").run()
    at.query_params["job"] = jid
    at.switch_page("pages/2_search.py").run()
    no_exception(at)
    rmse = next(m for m in at.metric if m.label == "Test RMSE")
    assert "passengers" in rmse.help and "co2" not in rmse.help.lower(), rmse.help


def test_a_reload_watching_a_search_shows_that_search_s_settings(data_dir, no_background_fits):
    """A new session (a reload) on ``?job=`` shows the settings the run was started with, not the
    form's defaults; a session that already has settings keeps its own."""
    jid = tiny_search(data_dir, seed=7)
    at = app()
    at.query_params["job"] = jid
    at.run()
    at.switch_page("pages/2_search.py").run()
    no_exception(at)
    assert at.selectbox(key="s_algorithm").value == "gpss"
    assert at.selectbox(key="s_preset").value == "quick"
    assert at.number_input(key="s_seed").value == 7
    assert at.number_input(key="s_generations").value == 1  # the run's, not the preset's
    mine = search_page()
    mine.selectbox(key="s_algorithm").set_value("random").run()
    mine.query_params["job"] = jid
    mine.switch_page("pages/1_data.py").run()
    mine.switch_page("pages/2_search.py").run()
    assert mine.selectbox(key="s_algorithm").value == "random"


def test_the_search_page_given_an_exploration_says_so_instead_of_showing_it_as_a_search(data_dir):
    from evocov_core.data import load_bundled
    from evocov_core.runs.store import RunStore
    from evocov_core.searches import preset

    RunStore(data_dir).create_run("explore00001", kind="explore", algorithm="explore", dataset=load_bundled("airline"),
                                  settings=preset("quick", "evocov").to_dict(), seed=0, label="an exploration")
    at = app()
    at.query_params["job"] = "explore00001"
    at.run()
    at.switch_page("pages/2_search.py").run()
    no_exception(at)
    assert "Run `explore00001` is a mutation exploration, not a search." in texts(at, "warning")
    assert not any("Best kernel" in m for m in texts(at, "markdown"))


def test_a_split_no_search_should_use_is_refused_on_the_data_page():
    """A test fraction of 0.5 (the training part no longer the larger) is refused with one clear line."""
    at = app().run()
    at.slider(key="data_test_fraction").set_value(0.5).run()
    no_exception(at)
    errors = texts(at, "error")
    assert any("Cannot use test fraction 0.50" in e and "below 0.5" in e for e in errors), errors
    assert math.isclose(at.session_state["evocov_dataset"].test_fraction, 0.1)  # the split is unchanged
    assert math.isclose(at.slider(key="data_test_fraction").value, 0.1)


def test_an_upload_leaving_too_few_training_points_is_refused():
    at = app().run()
    at.slider(key="data_test_fraction").set_value(0.4).run()
    upload(at, csv_bytes(14), "short.csv")  # 0.4 of the x-range leaves 8 points to train on
    no_exception(at)
    errors = texts(at, "error")
    assert any("leaves 8 training points; at least 10 are needed" in e and "unchanged" in e for e in errors), errors
    assert not _has_key(at, "data_use_upload")


# --- uploads -----------------------------------------------------------------------------------------


def upload(at: AppTest, content: bytes, name: str = "data.csv") -> AppTest:
    at.file_uploader(key="data_upload").set_value((name, content, "text/csv"))
    return at.run()


def test_good_upload_replaces_dataset():
    at = app().run()
    upload(at, csv_bytes(60), "sales.csv")
    no_exception(at)
    assert not at.error
    assert any("Ready" in s for s in texts(at, "success"))
    assert at.session_state["evocov_dataset"].name == "airline"  # not before "Use this dataset"
    at.button(key="data_use_upload").click().run()
    no_exception(at)
    ds = at.session_state["evocov_dataset"]
    assert ds.name == "sales" and ds.n == 60


BAD_UPLOADS = {
    "not a csv": (bytes(range(256)) * 8, "not a readable CSV"),
    "empty": (b"", "empty"),
    "header only": (b"a,b\n", "no data rows"),
    "no numeric column": (b"name,colour\nx,red\ny,blue\nz,green\n", "no numeric column"),
    "missing values": (csv_bytes(30).replace(b"\n5,", b"\n5,nan\n", 1)[:-1] + b"\n7,\n", "missing"),
    "too few points": (csv_bytes(5), "at least 10"),
}


@pytest.mark.parametrize("case", list(BAD_UPLOADS))
def test_bad_upload_shows_error_and_keeps_dataset(case):
    content, message = BAD_UPLOADS[case]
    at = app().run()
    upload(at, content)
    no_exception(at)
    errors = texts(at, "error")
    assert errors, f"no st.error for {case}"
    assert any(message in e for e in errors), errors
    assert any("unchanged" in e for e in errors)
    assert at.session_state["evocov_dataset"].name == "airline"
    assert not _has_key(at, "data_use_upload")


def _has_key(at: AppTest, key: str) -> bool:
    try:
        at.button(key=key)
    except KeyError:
        return False
    return True


def test_missing_values_can_be_kept():
    content = b"t,value\n" + b"".join(f"{i},{'' if i == 7 else i * 1.5}\n".encode() for i in range(40))
    at = app().run()
    upload(at, content)
    assert any("missing" in e for e in texts(at, "error"))
    at.checkbox(key="data_drop_missing").check().run()
    no_exception(at)
    assert not at.error
    assert any("kept as points not observed" in s for s in texts(at, "info"))
    at.button(key="data_use_upload").click().run()
    assert at.session_state["evocov_dataset"].n == 39
    assert 7.0 not in at.session_state["evocov_dataset"].x[:, 0]  # the gap stays a gap: 8 keeps its x


def test_unsorted_and_duplicated_x_are_notes():
    at = app().run()
    upload(at, csv_bytes(40, shuffle=True, dup=3))
    no_exception(at)
    assert not at.error
    infos = " ".join(texts(at, "info"))
    assert "sorted" in infos and "repeated x values" in infos


def test_too_many_points_offers_subsampling():
    at = app().run()
    upload(at, csv_bytes(300))
    at.number_input(key="data_max_points").set_value(100).run()
    errors = texts(at, "error")
    assert any("more than the maximum of 100" in e and "slower" in e for e in errors), errors
    assert at.session_state["evocov_dataset"].name == "airline"
    at.checkbox(key="data_subsample").check().run()
    no_exception(at)
    assert not at.error
    at.button(key="data_use_upload").click().run()
    assert at.session_state["evocov_dataset"].n == 100


def test_upload_size_limit(monkeypatch):
    import dashboard.datasets as datasets

    monkeypatch.setattr(datasets, "max_upload_bytes", lambda: 1000)
    at = app().run()
    upload(at, csv_bytes(200))
    errors = texts(at, "error")
    assert any("above the limit" in e for e in errors), errors
    assert at.session_state["evocov_dataset"].name == "airline"


def test_an_upload_with_a_one_megabyte_number_is_refused_in_seconds():
    """Issue 58: 21 short rows and a value of 1,000,000 digits took a minute to refuse (dateutil); the page reads
    it with the core reader and its limits. Target 2 s; limit 8 s for the rerun (generous: a busy machine)."""
    from bench.bench_reader import long_number_field

    at = app().run()
    upload(at, long_number_field(), "long.csv")
    no_exception(at)
    errors = texts(at, "error")
    assert any("holds a field of 1,000,000 characters" in e and "10,000 characters" in e for e in errors), errors
    assert at.session_state["evocov_dataset"].name == "airline"


def test_upload_validation_helper():
    from dashboard.datasets import ROW_NUMBER, upload_to_dataset
    from evocov_core.data import DataError

    ds = upload_to_dataset(csv_bytes(50), name="u")
    assert ds.n == 50 and ds.x_label == "t"
    ds = upload_to_dataset(csv_bytes(50), x=ROW_NUMBER, y="value", guess=False)
    assert ds.x_label == "row"
    for content, message in BAD_UPLOADS.values():
        with pytest.raises(DataError, match=re.escape(message)):
            upload_to_dataset(content)
    with pytest.raises(DataError, match="maximum"):
        upload_to_dataset(csv_bytes(300), max_points=100)
    assert upload_to_dataset(csv_bytes(300), max_points=100, subsample=True).n == 100


def test_upload_dates_column():
    rows = "\n".join(f"{2000 + i // 12}-{i % 12 + 1:02d}-01,{i * 2 + (i % 12)}" for i in range(48))
    at = app().run()
    upload(at, f"month,sales\n{rows}\n".encode(), "monthly.csv")
    no_exception(at)
    assert [s.value for s in at.selectbox if s.label == "x column"] == ["month"]
    at.button(key="data_use_upload").click().run()
    ds = at.session_state["evocov_dataset"]
    assert ds.x_kind == "date" and ds.n == 48


# --- search settings --------------------------------------------------------------------------------


def search_page() -> AppTest:
    at = app().run()
    at.switch_page("pages/2_search.py").run()
    no_exception(at)
    return at


def test_search_defaults_are_quick_evocov():
    at = search_page()
    assert at.selectbox(key="s_algorithm").value == "evocov"
    assert at.selectbox(key="s_preset").value == "quick"
    assert at.number_input(key="s_population").value == preset("quick", "evocov").population
    assert not at.error
    assert not at.button(key="search_start").disabled


def test_time_budget_follows_the_preset():
    at = search_page()
    assert at.number_input(key="s_time_budget").value == preset("quick").time_budget == 60.0
    at.selectbox(key="s_preset").set_value("standard").run()
    no_exception(at)
    assert at.number_input(key="s_time_budget").value == 300.0
    at.selectbox(key="s_preset").set_value("quick-fixed").run()
    assert at.number_input(key="s_time_budget").value == 0.0
    assert at.number_input(key="s_select_top").value == 1
    # A budget the core refuses is reported, and Start is disabled.
    at.number_input(key="s_time_budget").set_value(30.0).run()
    at.number_input(key="s_screen_points").set_value(5).run()
    assert any("screen_points" in e for e in texts(at, "error"))
    assert at.button(key="search_start").disabled


def estimate_seconds(at: AppTest) -> tuple[float, float]:
    """The range of the page's "Estimated time: about 2.6–6 min …" caption, in seconds."""
    (text,) = [c for c in texts(at, "caption") if "Estimated time" in c]
    unit = {"s": 1.0, "min": 60.0, "h": 3600.0, "days": 86400.0}
    m = re.search(r"about ([\d.]+)(?: (s|min|h|days))?(?:–| – )([\d.]+) (s|min|h|days) on these", text)
    assert m, text
    return float(m[1]) * unit[m[2] or m[4]], float(m[3]) * unit[m[4]]


def test_fixed_count_settings_show_a_time_estimate():
    at = search_page()
    assert not [c for c in texts(at, "caption") if "Estimated time" in c]  # quick: its budget is the time
    at.selectbox(key="s_preset").set_value("quick-fixed").run()
    no_exception(at)
    (text,) = [c for c in texts(at, "caption") if "Estimated time" in c]
    assert "on these 129 training points with" in text and "1500 kernel fits" in text  # Airline, 50 × 30
    lo, hi = estimate_seconds(at)
    assert 0 < lo < hi
    at.number_input(key="s_generations").set_value(90).run()
    lo3, hi3 = estimate_seconds(at)
    assert lo3 > 2 * lo and hi3 > 2 * hi  # three times the generations
    at.number_input(key="s_n_restarts").set_value(3).run()
    assert estimate_seconds(at)[1] > 1.5 * hi3  # fits of 3 L-BFGS-B runs (the text is rounded)
    at.number_input(key="s_workers").set_value(1).run()
    one = estimate_seconds(at)
    at.number_input(key="s_workers").set_value(2).run()
    assert estimate_seconds(at)[1] < 0.6 * one[1]  # on 2 cores or more
    # A custom fixed count on a budgeted preset gets one too; a budget again, none.
    at.selectbox(key="s_preset").set_value("quick").run()
    at.number_input(key="s_time_budget").set_value(0.0).run()
    at.number_input(key="s_generations").set_value(30).run()
    assert "1200 kernel fits" in " ".join(texts(at, "caption"))  # 40 × 30
    assert estimate_seconds(at)
    at.number_input(key="s_time_budget").set_value(60.0).run()
    assert not [c for c in texts(at, "caption") if "Estimated time" in c]


@pytest.mark.parametrize("preset_name", ["quick", "standard", "paper", "quick-fixed"])
def test_every_preset_value_fits_its_widget(preset_name):
    """Streamlit resets a number input whose value is out of its bounds to the minimum: the quick
    preset's generation cap (100000) once became G = 1, a search of the first population only."""
    from evocov_core.searches import ALGORITHMS

    at = search_page()
    for algo in ALGORITHMS:
        at.selectbox(key="s_algorithm").set_value(algo).run()
        at.selectbox(key="s_preset").set_value(preset_name).run()
        no_exception(at)
        cfg = preset(preset_name, algo)
        for w in at.number_input:
            field = w.key.removeprefix("s_") if w.key else ""
            if hasattr(cfg, field):
                assert w.value == pytest.approx(getattr(cfg, field)), (algo, field, w.value)


def test_families_multiselect_offers_the_families_of_the_table():
    """One multiselect names the grammar's optional families, its options the table's; the preset's families
    at first, usable by every algorithm, a family added when selected."""
    from evocov_core.language.grammar import FAMILIES

    at = search_page()
    families = at.multiselect(key="s_families")
    assert list(families.options) == list(FAMILIES) and not families.disabled
    assert families.value == list(preset("quick").families)
    at.selectbox(key="s_algorithm").set_value("gpss").run()
    assert not at.multiselect(key="s_families").disabled
    at.multiselect(key="s_families").select("changewindow").run()
    no_exception(at)
    assert at.multiselect(key="s_families").value == ["changepoint", "changewindow"] and not at.error


def test_mu_not_below_population_is_refused():
    at = search_page()
    at.number_input(key="s_mu").set_value(preset("quick", "evocov").population).run()  # μ = N
    no_exception(at)
    errors = texts(at, "error")
    assert any("mu must satisfy" in e for e in errors), errors
    assert at.button(key="search_start").disabled
    at.number_input(key="s_mu").set_value(6).run()
    assert not at.error
    assert not at.button(key="search_start").disabled


def test_preset_and_algorithm_reset_settings():
    at = search_page()
    at.selectbox(key="s_preset").set_value("paper").run()
    assert at.number_input(key="s_population").value == 141
    at.selectbox(key="s_algorithm").set_value("gpss").run()
    no_exception(at)
    assert at.number_input(key="s_generations").value == 10
    assert at.number_input(key="s_population").disabled  # unused by GPSS
    assert "Crossover probability p_cx = 1 − p_m = 0.60" in texts(at, "caption")


def test_settings_survive_a_page_switch():
    at = search_page()
    at.number_input(key="s_generations").set_value(5).run()
    at.switch_page("pages/1_data.py").run()
    at.switch_page("pages/2_search.py").run()
    assert at.number_input(key="s_generations").value == 5


def test_start_search_runs_in_background_and_reattaches():
    at = search_page()
    at.selectbox(key="s_algorithm").set_value("gpss").run()
    at.number_input(key="s_generations").set_value(1).run()
    at.number_input(key="s_n_restarts").set_value(1).run()
    at.number_input(key="s_workers").set_value(1).run()
    at.button(key="search_start").click().run()
    no_exception(at)
    job_id = at.session_state["evocov_search_job"]
    assert at.query_params.get("job") == job_id
    wait_job(job_id)
    at.run()
    no_exception(at)
    status = " ".join(texts(at, "markdown"))
    assert job_id in status and "finished" in status
    assert at.button(key="search_open_results")

    # Another browser session does not see this job...
    other = search_page()
    assert "evocov_search_job" not in other.session_state
    assert not any(job_id in m for m in texts(other, "markdown"))
    # ...unless it opens the run's URL (a reload, or a second tab on the same link).
    again = app()
    again.query_params["job"] = job_id
    again.run()
    again.switch_page("pages/2_search.py").run()
    no_exception(again)
    assert again.session_state["evocov_search_job"] == job_id
    assert any(job_id in m for m in texts(again, "markdown"))


# --- runs and results ----------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["folder is a file", "file is no database"])
def test_a_store_that_cannot_be_opened_is_one_message_on_every_page(tmp_path, monkeypatch, how):
    """EVOCOV_DATA_DIR under a file, or a runs.sqlite3 of random bytes: each page says which folder and
    why, with the variable to set, instead of a traceback."""
    if how == "folder is a file":
        (tmp_path / "a-file").write_text("x")
        folder = tmp_path / "a-file" / "sub"
    else:
        folder = tmp_path / "store"
        folder.mkdir()
        (folder / "runs.sqlite3").write_bytes(np.random.default_rng(0).bytes(4096))
    monkeypatch.setenv("EVOCOV_DATA_DIR", str(folder))
    at = app().run()
    for page in ("pages/1_data.py", "pages/2_search.py", "pages/3_results.py", "pages/4_explorer.py",
                 "pages/5_runs.py"):
        at.switch_page(page).run()
        no_exception(at)
        errors = texts(at, "error")
        assert len(errors) == 1 and f"The run store in `{folder}` cannot be used" in errors[0], errors
        assert "EVOCOV_DATA_DIR" in errors[0]


def test_runs_page_lists_a_stored_run(data_dir):
    from evocov_core.data import load_bundled
    from evocov_core.runs.store import RunStore
    from evocov_core.searches import preset

    store = RunStore(data_dir)
    ds = load_bundled("airline")
    store.create_run(
        "abc123def456",
        kind="search",
        algorithm="evocov",
        dataset=ds,
        settings=preset("quick", "evocov").to_dict(),
        seed=7,
        label="stored directly",
    )
    store.finish_run("abc123def456", "cancelled", best_doc=None, elapsed=1.5, n_evaluations=0)
    at = app().run()
    at.switch_page("pages/5_runs.py").run()
    no_exception(at)
    table = at.dataframe[0].value
    assert "abc123def456" in set(table["run"])
    row = table[table["run"] == "abc123def456"].iloc[0]
    assert row["status"] == "cancelled" and row["seed"] == "7" and row["dataset"] == "airline"
    assert row["BIC"] == row["test RMSE"] == row["q"] == row["returned kernel"] == "—"  # no kernel: no "None"


def test_results_page_asked_for_a_run_without_results_says_why_and_shows_no_other(data_dir, no_background_fits):
    """?run= with an unknown id, a failed run, or one cancelled before any kernel: a warning saying which
    and why, no run drawn in its place, and the URL left alone until the user picks one."""
    from evocov_core.data import load_bundled
    from evocov_core.runs.store import RunStore
    from evocov_core.searches import preset

    jid = tiny_search(data_dir)
    store = RunStore(data_dir)
    for rid, status, error in (("failed000001", "failed", "the data file vanished"),
                               ("cancel000001", "cancelled", None)):
        store.create_run(rid, kind="search", algorithm="evocov", dataset=load_bundled("airline"),
                         settings=preset("quick", "evocov").to_dict(), seed=0, label=rid)
        store.finish_run(rid, status, best_doc=None, elapsed=1.0, n_evaluations=0, error=error)
    for rid, said in (("doesnotexist", "There is no run `doesnotexist` in the store"),
                      ("failed000001", "Run `failed000001` failed: the data file vanished."),
                      ("cancel000001", "Run `cancel000001` ended (cancelled) before any kernel was fitted.")):
        at = app()
        at.query_params["run"] = rid
        at.run()
        at.switch_page("pages/3_results.py").run()
        no_exception(at)
        assert any(w.startswith(said) for w in texts(at, "warning")), texts(at, "warning")
        assert at.query_params.get("run") == rid
        assert not at.latex and not at.get("download_button")  # no other run drawn instead
        pick = next(s for s in at.selectbox if s.label == "Run")
        assert pick.value is None and len(pick.options) == 1 and pick.options[0].endswith(jid)
        pick.select(jid).run()
        no_exception(at)
        assert at.query_params.get("run") == jid and at.latex


def test_results_page_renders_a_finished_run(data_dir, no_background_fits):
    jid = tiny_search(data_dir)
    at = app().run()
    at.switch_page("pages/3_results.py").run()
    no_exception(at)
    assert [s.value for s in at.selectbox if s.label == "Run"] == [jid]
    assert at.query_params.get("run") == jid
    assert at.latex, "no LaTeX formula"
    assert at.get("download_button"), "no kernel download"
    # What the kernel says: one sentence per additive component, and the noise.
    said = texts(at, "markdown")
    assert any("of the variance" in m for m in said) and any(m.startswith("**Noise** with") for m in said)
    assert any(e.label == "As evolved (the stored tree)" for e in at.expander)
    at.number_input(key="results_report_budget").set_value(0).run()  # the SE baseline only: seconds
    at.button(key="results_make_report").click().run()
    no_exception(at)
    assert any("in the background" in str(m.value) for m in at.info)  # made in its own process: the page waits
    assert not report_downloads(at) and at.button(key="results_make_report").disabled
    report = run_pending(no_background_fits, "report")
    at.run()
    no_exception(at)
    assert report_downloads(at), "no report download once it is made"
    assert report.startswith("<!DOCTYPE html>") and "What the kernel says" in report
    assert "Against the baselines" in report and "evocov-comparison" in report
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["SE baseline"] == "…"  # fitting in the background (kept pending in tests)
    assert metrics["GPSS baseline"] not in ("–", "…")  # the run itself is a GPSS run on these data
    assert metrics["This run"] == metrics["GPSS baseline"]
    # The quick preset chose among the lowest-BIC kernels: the page says how, and offers the average.
    assert any("How the kernel was chosen" in m for m in texts(at, "markdown"))
    radio = [r for r in at.radio if r.label == "Forecast"]
    assert radio and "average" in radio[0].options[1].lower()
    radio[0].set_value("average").run()
    no_exception(at)
    assert {m.label: m.value for m in at.metric}["This run"] not in ("–", "…")


def test_results_baselines_say_when_the_se_fit_failed_and_lowest_bic_opens(data_dir, no_background_fits):
    """The view functions of the Results page: a failed background SE fit is said, not raised; the
    lowest-BIC forecast draws its own kernel."""
    jid = tiny_search(data_dir)
    at = app().run()
    at.switch_page("pages/3_results.py").run()
    no_exception(at)
    [future] = [f for k, f in no_background_fits.items() if k[0] == "se"]
    future.set_exception(RuntimeError("no luck"))
    at.run()
    no_exception(at)
    assert {m.label: m.value for m in at.metric}["SE baseline"] == "–"
    assert any("The SE fit failed: no luck" in c for c in texts(at, "caption"))
    radio = [r for r in at.radio if r.label == "Forecast"]
    assert radio and radio[0].options[-1].startswith("Lowest BIC")  # the search chose among the lowest BICs
    radio[0].set_value("lowest").run()
    no_exception(at)
    assert any(m.startswith("**Lowest-BIC kernel") for m in texts(at, "markdown"))
    assert at.query_params.get("run") == jid


def comparison_table(at: AppTest):
    """The Results page's table of every forecast, indexed by method."""
    [table] = [t.value for t in at.table if "95 % coverage" in t.value.columns]
    return table


def dashed_traces(at: AppTest, dash: str = "dash") -> set[str]:
    """Names of the dashed (or ``dash``: dotted…) lines in the page's Plotly figures (from each figure's spec)."""
    import json

    return {t["name"] for chart in at.get("plotly_chart") for t in json.loads(chart.proto.spec)["data"]
            if t.get("line", {}).get("dash") == dash}


def run_pending(pending: dict, kind: str):
    """Run the pending background job of this kind here, as its process would, and give it its result."""
    [key] = [k for k, f in pending.items() if k[0] == kind and not f.done()]
    fn, args, kwargs = pending[key].call
    pending[key].set_result(fn(*args, **kwargs))
    return pending[key].result()


def report_downloads(at: AppTest) -> list:
    return [e for e in at.get("download_button") if "report" in str(e.proto.label).lower()]


def resolve(pending: dict, kind: str, value=None, error: BaseException | None = None) -> tuple:
    """Give the pending background job of this kind its result (what its process would return)."""
    [key] = [k for k, f in pending.items() if k[0] == kind and not f.done()]
    if error is not None:
        pending[key].set_exception(error)
    else:
        pending[key].set_result(value)
    return key


def test_results_page_compares_every_forecast(data_dir, no_background_fits):
    """The table of every forecast: running rows at first, then every classical row with its scores
    (or its reason) and the classical forecasts dashed in the figure; a rerun refits nothing; another
    season starts another background run; a typo in the seasons is one line."""
    from evocov_core.data import load_bundled
    from evocov_core.fitting.metrics import FitData
    from evocov_core.forecast.classical import MODELS, classical_forecasts
    from evocov_core.searches.gp_baselines import se_baseline

    jid = tiny_search(data_dir)
    at = app().run()
    at.switch_page("pages/3_results.py").run()
    no_exception(at)
    view = comparison_table(at)
    # The one-level GPSS kernel's forecast leaves AutoETS's and AutoTheta's intervals: the search's forecast
    # is theirs, weighted by their errors from four earlier origins, a row after the kernel's.
    from dashboard.runs import get_run

    combination = get_run(jid).best.combination
    assert combination.guard.startswith("the kernel's forecast leaves AutoETS's and AutoTheta's 95 % intervals")
    assert combination.member_weights[0] == 0 and combination.models == ("AutoETS", "AutoTheta")
    combined = f"forecast ({combination.label})"
    assert combined.startswith("forecast (AutoETS 0.")
    assert list(view.index) == ["this kernel", combined, "model average", "SE", "GPSS", *MODELS]
    assert set(view.loc[["SE", combined, *MODELS], "status"]) == {"running…"}
    assert any(c.startswith(":material/merge: **The classical members forecast (AutoETS ") and
               "The forecast is AutoETS's and AutoTheta's, not the kernel's: the kernel's forecast leaves" in c
               for c in texts(at, "caption"))
    assert view.loc["this kernel", "status"] == "ok" and view.loc["this kernel", "test RMSE"] != "–"
    assert view.loc["GPSS", "status"] == "ok"  # the run itself is a GPSS run on these data
    assert "Seasons given to the classical forecasters (steps): **12 (monthly dates)**." in texts(at, "caption")
    assert not dashed_traces(at)
    [line] = [t for t in texts(at, "markdown") if t.startswith("**Forecast.**")]
    assert "AutoETS: running…" in line  # the verdict waits for them, and says so
    ds = load_bundled("airline")
    resolve(no_background_fits, "se", se_baseline(FitData.from_dataset(ds)))
    key = resolve(no_background_fits, "classical", classical_forecasts(ds, time_limit=60))
    assert key[2:] == ((12,), 30.0)  # seasons, time limit
    at.run()
    no_exception(at)
    view = comparison_table(at)
    assert view.loc["SE", "status"] == "ok" and view.loc["SE", "test RMSE"] != "–"
    for m in MODELS:
        row = view.loc[m]
        assert row["kind"] == "classical"
        if row["status"] == "ok":
            assert row["test RMSE"] != "–" and row["95 % coverage"].endswith("%") and row["CRPS"] != "–"
        else:  # MSTL on monthly data: one line saying why
            assert row["status"] == "skipped" and row["notes"].startswith(f"{m}: ") and "\n" not in row["notes"]
    assert set(view.loc[view.status == "ok"].index) >= {"SeasonalNaive", "AutoETS", "AutoARIMA", "AutoTheta"}
    assert list(view["best"]).count("★") == 1
    # The weighted average of the page's AutoETS and AutoTheta: the forecast the search recorded.
    from dashboard.format import fmt

    stored = get_run(jid).best.doc["scores"]["forecast_test_rmse"]
    assert view.loc[combined, "kind"] == "combined" and view.loc[combined, "test RMSE"] == fmt(stored)
    assert view.loc[combined, "95 % coverage"] == "–"  # a point forecast
    # The classical forecasts dashed on the forecast, and AutoETS's test RMSE a dashed level on the Pareto tab.
    assert dashed_traces(at) == {f"{m} (classical)" for m in ("SeasonalNaive", "AutoETS", "AutoARIMA", "AutoTheta")
                                 } | {"AutoETS"}
    # Drawn dotted, in the kernel's colour, on the forecast; a dotted level on the Pareto tab.
    assert dashed_traces(at, "dot") == {f"the {combined}"}
    # The verdict card, first on the page: the forecast against AutoETS, AutoARIMA and seasonal naive, in words.
    said = texts(at, "markdown")
    [line] = [t for t in said if t.startswith("**Forecast.**")]
    assert line.startswith("**Forecast.** The forecast's test RMSE is " + fmt(stored))
    assert all(re.search(rf"\d+ % (lower|higher) than {n} \(ratio \d\.\d\d\)|the same as {n}", line)
               for n in ("AutoETS", "AutoARIMA", "seasonal naive")), line
    assert any(t.startswith("**Who forecasts.** The classical members forecast (AutoETS ") for t in said)
    assert any(t.startswith("**The kernel.** ") for t in said)
    jobs = set(no_background_fits)
    at.run()
    assert set(no_background_fits) == jobs  # cached per data, split and seasons: nothing refitted
    at.text_input(key=f"results_seasons_{jid}").set_value("6").run()
    no_exception(at)
    assert set(no_background_fits) - jobs == {("classical", key[1], (6,), 30.0)}
    assert set(comparison_table(at).loc[list(MODELS), "status"]) == {"running…"}
    assert "Seasons given to the classical forecasters (steps): **6 (given)**." in texts(at, "caption")
    at.text_input(key=f"results_seasons_{jid}").set_value("twelve").run()
    no_exception(at)
    assert any(e.startswith("Seasons: seasons are whole numbers") for e in texts(at, "error"))
    assert comparison_table(at).loc["AutoETS", "status"] == "ok"  # back to the seasons read from the data


def test_results_page_a_baseline_failing_on_a_tiny_series_says_why(data_dir, no_background_fits):
    """Six training points: statsforecast's ETS refuses them. Its row gives the one-line reason, the
    other rows their scores, and the page renders; a failed SE fit and a dead background run say so too."""
    import pandas as pd

    from evocov_core.data import Dataset, dates_to_decimal_years
    from evocov_core.forecast.classical import MODELS, classical_forecasts

    x = dates_to_decimal_years(pd.Series(pd.date_range("2000-01-01", periods=12, freq="MS")))
    y = 10 + np.random.default_rng(0).standard_normal(12)
    ds = Dataset.from_arrays(x, y, x_kind="date", test_fraction=0.5, name="tiny")
    assert ds.n_train == 6
    jid = tiny_search(data_dir, ds=ds)
    at = app().run()
    at.switch_page("pages/3_results.py").run()
    no_exception(at)
    resolve(no_background_fits, "se", error=RuntimeError("no luck"))
    resolve(no_background_fits, "classical", classical_forecasts(ds, time_limit=60))
    at.run()
    no_exception(at)
    view = comparison_table(at)
    assert view.loc["AutoETS", "status"] == "failed"
    assert view.loc["AutoETS", "notes"] == "AutoETS: NotImplementedError: tiny datasets"
    assert view.loc["SE", "status"] == "failed"
    assert view.loc["SE", "notes"] == "SE: the fit failed: RuntimeError: no luck"
    assert view.loc["SeasonalNaive", "status"] == "ok" and view.loc["this kernel", "status"] == "ok"
    assert "AutoETS (classical)" not in dashed_traces(at) and "SeasonalNaive (classical)" in dashed_traces(at)
    assert at.latex and at.get("download_button")  # the rest of the page is there
    # The background run itself dying (with another time limit): every classical row says so.
    at.number_input(key=f"results_time_limit_{jid}").set_value(5.0).run()
    resolve(no_background_fits, "classical", error=RuntimeError("the process died (exit code -9)"))
    at.run()
    no_exception(at)
    view = comparison_table(at)
    assert set(view.loc[list(MODELS), "status"]) == {"failed"}
    assert view.loc["AutoARIMA", "notes"] == (
        "AutoARIMA: the background run failed: RuntimeError: the process died (exit code -9)")


def test_results_download_is_a_valid_kernel_file(data_dir):
    from evocov_core.runs.kernel_file import parse_kernel_file
    from evocov_core.runs.store import RunStore

    jid = tiny_search(data_dir)
    doc = RunStore(data_dir).get_run(jid).best.doc
    from evocov_core.runs.kernel_file import dump_kernel_file

    kf = parse_kernel_file(dump_kernel_file(doc))
    assert kf.normalisation is not None and kf.q >= 2


def test_results_applies_an_uploaded_kernel_file(data_dir):
    from evocov_core.runs.kernel_file import dump_kernel_file
    from evocov_core.runs.store import RunStore

    jid = tiny_search(data_dir)
    text = dump_kernel_file(RunStore(data_dir).get_run(jid).best.doc)
    at = app().run()
    at.switch_page("pages/3_results.py").run()
    at.file_uploader(key="results_kernel_file").set_value(("k.json", text.encode(), "application/json")).run()
    no_exception(at)
    assert any("test RMSE on airline" in s for s in texts(at, "success"))
    at.file_uploader(key="results_kernel_file").set_value(("bad.json", b'{"format": "nope"}', "application/json"))
    at.run()
    assert any("format" in e for e in texts(at, "error"))


def test_results_and_runs_with_no_runs():
    at = app().run()
    at.switch_page("pages/3_results.py").run()
    no_exception(at)
    assert any("No finished search" in s for s in texts(at, "info"))


# --- mutation explorer ---------------------------------------------------------------------------------


def test_explorer_runs_mutations_of_a_gpss_result(data_dir):
    jid = tiny_search(data_dir)
    at = app().run()
    at.switch_page("pages/4_explorer.py").run()
    no_exception(at)
    assert at.radio(key="ex_source").value == "gpss_run"
    assert not at.button(key="ex_start").disabled
    at.number_input(key="ex_n").set_value(4).run()
    at.number_input(key="ex_workers").set_value(1).run()
    at.button(key="ex_start").click().run()
    no_exception(at)
    ex_id = at.session_state["evocov_explore_job"]
    assert ex_id != jid
    wait_job(ex_id)
    at.run()
    no_exception(at)
    labels = [m.label for m in at.metric]
    assert {"Better fitted", "Simpler", "Both"} <= set(labels)
    table = at.dataframe[-1].value
    assert len(table) == 4


def test_explorer_other_sources_render():
    at = app().run()
    at.switch_page("pages/4_explorer.py").run()
    for source in ("published", "well_known", "file", "search"):
        at.radio(key="ex_source").set_value(source).run()
        no_exception(at)
        assert at.button(key="ex_start").disabled  # no fitted base yet


def test_runs_page_compare_preselects_runs_on_the_same_data(data_dir):
    from evocov_core.data import load_bundled

    first = tiny_search(data_dir)
    tiny_search(data_dir, ds=load_bundled("a10"))
    newest = tiny_search(data_dir)
    at = app().run()
    at.switch_page("pages/5_runs.py").run()
    no_exception(at)
    # BICs on different data are not comparable: the a10 run in between is not preselected.
    assert at.multiselect(key="runs_compare").value == [newest, first]


def test_runs_page_compare_export_delete(data_dir):
    jid = tiny_search(data_dir)
    at = app().run()
    at.switch_page("pages/5_runs.py").run()
    no_exception(at)
    assert at.multiselect(key="runs_compare").value == [jid]
    at.checkbox(key=f"runs_delete_confirm_{jid}").check().run()
    at.button(key="runs_delete").click().run()
    no_exception(at)
    from evocov_core.runs.store import RunStore

    assert RunStore(data_dir).get_run(jid) is None


def _start_search(at: AppTest, algorithm: str, **numbers: int) -> str:
    at.selectbox(key="s_algorithm").set_value(algorithm).run()
    for key, value in numbers.items():
        at.number_input(key=f"s_{key}").set_value(value).run()
    at.number_input(key="s_workers").set_value(1).run()
    at.button(key="search_start").click().run()
    no_exception(at)
    return at.session_state["evocov_search_job"]


def test_queue_position_and_stop():
    from dashboard.runs import manager

    # EVOCOV_MAX_CONCURRENT=1: a long search in one session makes the next one wait.
    first = search_page()
    long_id = _start_search(first, "evocov", population=10, generations=500, mu=2)
    assert first.button(key="search_start").disabled  # this session is watching a running search
    second = search_page()
    short_id = _start_search(second, "gpss", generations=1, n_restarts=1)
    assert short_id != long_id
    assert manager().get(short_id).snapshot().status == "queued"
    infos = texts(second, "info")
    assert any("Waiting: 1 run ahead of you; the server runs 1 search at once" in i for i in infos), infos
    # Stop the long one from its own session: the queued one then runs and finishes.
    first.button(key="search_stop").click().run()
    no_exception(first)
    wait_job(long_id)
    wait_job(short_id)
    assert manager().get(long_id).snapshot().status == "cancelled"
    assert manager().get(short_id).snapshot().status == "finished"
    first.run()
    assert "cancelled" in " ".join(texts(first, "markdown"))


def test_fit_runner_runs_in_a_child_process():
    import math as m

    from dashboard.background import FitRunner

    runner = FitRunner(slots=1)
    ok = runner.submit(("ok",), m.factorial, 5)
    bad = runner.submit(("bad",), m.factorial, -1)
    assert ok.result(timeout=120) == 120
    assert isinstance(bad.exception(timeout=120), ValueError)
    assert runner.submit(("ok",), m.factorial, 6) is ok  # one run per key
    assert runner.submit(("bad",), m.factorial, 3).result(timeout=120) == 6  # failures are retried


def test_the_report_is_made_in_a_child_process(data_dir):
    """What the Results page sends to the reports' lane (the kernel file, the data, the classical forecasts
    made) crosses into the child process, and the report comes back."""
    from dashboard.background import FitRunner
    from evocov_core.data import load_bundled
    from evocov_core.forecast.classical import classical_forecasts
    from evocov_core.present.report_html import report_html
    from evocov_core.runs.kernel_file import parse_kernel_file
    from evocov_core.runs.store import RunStore

    jid = tiny_search(data_dir)
    ds = load_bundled("airline")
    done = classical_forecasts(ds, models=("SeasonalNaive",), time_limit=60)
    kf = parse_kernel_file(RunStore(data_dir).get_run(jid).best.text)
    html = FitRunner(slots=1).submit(("report", jid), report_html, kf, ds, baseline_budget=0.0,
                                     classical_done=done).result(timeout=300)
    assert html.startswith("<!DOCTYPE html>") and "Against the baselines" in html and "SeasonalNaive" in html


def test_explorer_base_from_a_kernel_file(data_dir):
    from evocov_core.runs.kernel_file import dump_kernel_file
    from evocov_core.runs.store import RunStore

    jid = tiny_search(data_dir)
    text = dump_kernel_file(RunStore(data_dir).get_run(jid).best.doc)
    at = app().run()
    at.switch_page("pages/4_explorer.py").run()
    at.radio(key="ex_source").set_value("file").run()
    at.file_uploader(key="ex_kernel_file").set_value(("k.json", text.encode(), "application/json")).run()
    no_exception(at)
    assert not at.button(key="ex_start").disabled
    assert at.latex
    at.file_uploader(key="ex_kernel_file").set_value(("k.json", b"not json", "application/json")).run()
    assert any("Cannot load" in e for e in texts(at, "error"))
    assert at.button(key="ex_start").disabled


def test_explorer_well_known_base_is_fitted_in_the_background(no_background_fits):
    from evocov_core.data import load_bundled
    from evocov_core.fitting.metrics import FitData
    from evocov_core.language.library import WELL_KNOWN
    from evocov_core.searches.gp_baselines import fit_fixed

    at = app().run()
    at.switch_page("pages/4_explorer.py").run()
    at.radio(key="ex_source").set_value("well_known").run()
    assert at.selectbox(key="ex_well_known").value == "CON"
    at.button(key="ex_fit_well_known_CON").click().run()
    no_exception(at)
    assert any("in the background" in i for i in texts(at, "info"))
    assert at.button(key="ex_start").disabled
    # The background fit completes (here: done in the test, cheaply).
    (key,) = [k for k in no_background_fits if k[0] == "well_known"]
    fit = fit_fixed(WELL_KNOWN["CON"](), FitData.from_dataset(load_bundled("airline")), n_restarts=1, max_evals=20)
    no_background_fits[key].set_result(fit)
    at.run()
    no_exception(at)
    assert not at.button(key="ex_start").disabled


def test_upload_with_a_text_value_column_says_so():
    """The value column is text: the page says which column and shows values before anything is modelled."""
    rows = "\n".join(f"{1990 + i},=cmd|'/c calc'!A{i}" for i in range(12))
    at = app().run()
    upload(at, f"year,value\n{rows}\n".encode(), "hostile.csv")
    no_exception(at)
    warnings = " ".join(w.value for w in at.warning)
    assert "'value' is not numeric" in warnings and "=cmd" in warnings


def _setting_widget(at: AppTest, key: str):
    for kind in ("number_input", "checkbox", "selectbox", "multiselect", "slider"):
        found = [w for w in at.get(kind) if getattr(w, "key", None) == key]
        if found:
            return found[0]
    return None


def test_every_setting_is_reachable_from_the_page():
    """Each SearchConfig field has a widget generated from its metadata (p_crossover: shown from p_m),
    enabled exactly for the algorithms that use it, and what it holds reaches the run's settings."""
    from evocov_core.searches import ALGORITHMS
    from evocov_core.searches.config import settings

    at = search_page()
    for algo in ALGORITHMS:
        at.selectbox(key="s_algorithm").set_value(algo).run()
        no_exception(at)
        for name, _, meta in settings():
            if name == "algorithm":
                continue
            if meta.derived_from:
                assert any(c.startswith(meta.label) for c in texts(at, "caption")), name
                continue
            w = _setting_widget(at, f"s_{name}")
            assert w is not None, f"no widget for {name}"
            assert w.disabled == (algo not in meta.used_by), (algo, name)
    # A changed widget reaches the search that starts.
    at.selectbox(key="s_algorithm").set_value("evocov").run()
    at.number_input(key="s_metric_split").set_value(0.2).run()
    at.number_input(key="s_patience").set_value(7).run()
    assert not at.error
    at.button(key="search_start").click().run()
    no_exception(at)
    job_id = at.session_state["evocov_search_job"]
    from dashboard.runs import manager

    job = manager().get(job_id)
    assert job.spec.config.metric_split == pytest.approx(0.2) and job.spec.config.patience == 7
    manager().cancel(job_id)
    wait_job(job_id)


# --- long series ------------------------------------------------------------------------------------------


def long_csv(n: int = 30_000) -> bytes:
    """``n`` half-hourly points with a daily cycle, as ``time,value``."""
    t = np.arange(n) / 48.0
    y = 100 + 0.01 * t + 4 * np.sin(2 * np.pi * t) + np.random.default_rng(0).standard_normal(n)
    times = np.datetime64("2000-01-03T00:00") + (np.arange(n) * 30).astype("timedelta64[m]")
    rows = [f"{str(a).replace('T', ' ')},{b:.4f}" for a, b in zip(times, y, strict=True)]
    return ("time,value\n" + "\n".join(rows) + "\n").encode()


def test_a_long_upload_is_accepted_and_says_fits_use_a_subset():
    """30,000 rows need no subsampling: the Data page says fits use a subset, and which setting sets it."""
    at = app().run()
    upload(at, long_csv(), "long.csv")
    no_exception(at)
    assert not at.error
    note = "an exact GP on 2,000 of the 27,000 training points"
    assert any(note in s and "Points an exact fit uses" in s for s in texts(at, "info")), texts(at, "info")
    at.button(key="data_use_upload").click().run()
    no_exception(at)
    ds = at.session_state["evocov_dataset"]
    assert ds.n == 30_000 and ds.x_kind == "date" and not ds.notes
    assert any(note in s for s in texts(at, "info"))  # the current dataset says it too
    assert any("drawn: " in c and "of 30,000 points" in c for c in texts(at, "caption"))


@pytest.mark.slow
def test_a_search_on_a_long_upload_shows_its_approximation():
    at = app().run()
    upload(at, long_csv(), "long.csv")
    at.button(key="data_use_upload").click().run()
    at.switch_page("pages/2_search.py").run()
    at.selectbox(key="s_algorithm").set_value("gpss").run()
    for name, value in (("generations", 1), ("n_restarts", 1), ("workers", 1), ("fit_points", 300)):
        at.number_input(key=f"s_{name}").set_value(value).run()
    at.button(key="search_start").click().run()
    no_exception(at)
    job_id = at.session_state["evocov_search_job"]
    line = "Fitted with an exact GP on 300 of 27,000 training points"
    assert any(line in c for c in texts(at, "caption")), texts(at, "caption")  # the progress says it at once
    wait_job(job_id)
    at.run()
    no_exception(at)
    at.switch_page("pages/3_results.py").run()
    no_exception(at)
    assert [s.value for s in at.selectbox if s.label == "Run"] == [job_id]
    assert any(line in c for c in texts(at, "caption")), texts(at, "caption")


def test_the_report_scores_the_gp_baselines_the_page_fitted(data_dir, no_background_fits, monkeypatch):
    """With the page's SE fit done and another GPSS run on these data finished, the report fits no GP
    baseline: it scores those (on a 100,000-point series they took its GPSS budget and an SE fit). Its SE row
    is the one it would have made; its GPSS row is the other run's kernel, and the tab says so."""
    import evocov_core.searches.gp_baselines as baselines_module
    from dashboard.runs import get_run
    from evocov_core.data import load_bundled
    from evocov_core.fitting.metrics import FitData
    from evocov_core.searches.gp_baselines import se_baseline

    other = tiny_search(data_dir)
    jid = tiny_search(data_dir)
    ds = load_bundled("airline")
    at = app().run()
    at.switch_page("pages/3_results.py").run()
    no_exception(at)
    assert at.query_params.get("run") == jid
    assert any(c.startswith(f"GPSS baseline: GPSS run {other} on these data") for c in texts(at, "caption"))
    assert not [n for n in at.number_input if n.key == "results_report_budget"]  # no search of its own to budget
    se = se_baseline(FitData.from_dataset(ds))
    resolve(no_background_fits, "se", se)
    at.run()

    def no_fit(*_a, **_k):
        raise AssertionError("the report fitted a GP baseline again")

    monkeypatch.setattr(baselines_module, "se_baseline", no_fit)
    monkeypatch.setattr(baselines_module, "gpss_baseline", no_fit)
    at.button(key="results_make_report").click().run()
    no_exception(at)
    report = run_pending(no_background_fits, "report")
    rows = {r["model"]: r for r in json.loads(re.search(
        r'<script type="application/json" id="evocov-comparison">(.*?)</script>', report, re.S).group(1))}
    assert rows["SE"]["bic"] == pytest.approx(se.bic, rel=1e-12) and rows["SE"]["note"].startswith("squared exp")
    gpss = get_run(other).best
    assert rows["GPSS"]["expression"] == gpss.infix
    assert rows["GPSS"]["note"] == f"GPSS run {other} on these data (the Results page's GPSS baseline)"
    at.run()
    no_exception(at)
    assert report_downloads(at)


def test_the_report_uses_the_classical_forecasts_the_page_made(data_dir, no_background_fits, monkeypatch):
    """Once the Results page's background classical forecasts are done, the report shows them instead of
    fitting them again (on 100,000 points that took minutes)."""
    import evocov_core.present.compare as compare_module
    from evocov_core.data import load_bundled
    from evocov_core.forecast.classical import classical_forecasts

    tiny_search(data_dir)
    at = app().run()
    at.switch_page("pages/3_results.py").run()
    done = classical_forecasts(load_bundled("airline"), time_limit=60)
    resolve(no_background_fits, "classical", done)

    def refit(*_a, **_k):
        raise AssertionError("the report fitted the classical forecasters again")

    monkeypatch.setattr(compare_module, "classical_forecasts", refit)
    at.number_input(key="results_report_budget").set_value(0).run()
    at.button(key="results_make_report").click().run()
    no_exception(at)
    report = run_pending(no_background_fits, "report")
    rows = {r["method"]: r for r in json.loads(re.search(
        r'<script type="application/json" id="evocov-forecast-comparison">(.*?)</script>', report, re.S).group(1))}
    assert rows["AutoETS"]["status"] == "ok" and rows["AutoETS"]["test_rmse"] > 0


def test_results_page_forecasts_past_the_data_and_offers_it_as_csv(data_dir, no_background_fits):
    """The next steps after the last observation: the kernel's own while the search's classical members are
    fitted in the background, then the search's average; another horizon is another background run. (The
    CSV's rows are tested on the core: tests/forecast/test_future.py.)"""
    import json

    from evocov_core.runs.store import RunStore

    jid = tiny_search(data_dir)
    run = RunStore(data_dir).get_run(jid)
    combined = run.best.combination.combined
    at = app().run()
    at.switch_page("pages/3_results.py").run()
    no_exception(at)
    assert any("Forecast past the data" in m for m in texts(at, "markdown"))
    horizon = at.number_input(key=f"results_horizon_{jid}")
    assert horizon.value == run.dataset.n_test == 15
    download = [d for d in at.get("download_button") if "forecast" in str(d.proto.label).lower()]
    assert len(download) == 1
    if combined:  # the members are fitted in the background first: the kernel's own meanwhile, no download
        assert any("are being fitted on every observed point" in str(m.value) for m in at.info)
        assert download[0].proto.disabled
        [key] = [k for k in no_background_fits if k[0] == "future"]
        assert key[2:] == (jid, 15)
        members = no_background_fits[key].call[1][0]
        assert members.n_train == run.dataset.n and members.n_test == 15
        run_pending(no_background_fits, "future")
        at.run()
        no_exception(at)
        download = [d for d in at.get("download_button") if "forecast" in str(d.proto.label).lower()]
        assert not download[0].proto.disabled
        assert any("with the weights the search chose" in c for c in texts(at, "caption"))
    else:
        assert not [k for k in no_background_fits if k[0] == "future"]
        assert any("The kernel's forecast of the next 15 steps" in c for c in texts(at, "caption"))
    assert any(t.get("name") == "forecast" for chart in at.get("plotly_chart")
               for t in json.loads(chart.proto.spec)["data"])
    at.number_input(key=f"results_horizon_{jid}").set_value(24).run()
    no_exception(at)
    if combined:
        assert any(k[0] == "future" and k[3] == 24 for k in no_background_fits)


def test_the_choice_is_described_by_the_rule_the_run_used():
    """A run that fitted a subset of a long series chose by ``long_choice``; another by ``choice``."""
    from types import SimpleNamespace

    from dashboard.results_page import choice_rule
    from evocov_core.data import load_bundled
    from evocov_core.fitting.metrics import FitData
    from evocov_core.fitting.optimize import OptimConfig, fit_kernel
    from evocov_core.fitting.subset import plan_subset
    from evocov_core.language.library import compose
    from evocov_core.runs.kernel_file import dump_kernel_file, kernel_file_dict

    ds = load_bundled("airline")
    fit = fit_kernel(compose("SE"), FitData.from_dataset(ds), OptimConfig(n_restarts=1, n_screen=4),
                     np.random.default_rng(0))
    doc = kernel_file_dict(fit, ds.norm, n_train=ds.n_train)
    settings = {"choice": "tail", "long_choice": "origins_density"}
    short = SimpleNamespace(best=SimpleNamespace(text=dump_kernel_file(doc)), settings=settings)
    assert choice_rule(short) == "tail"
    doc["approximation"] = plan_subset(20_000, 2000).to_dict()
    long = SimpleNamespace(best=SimpleNamespace(text=dump_kernel_file(doc)), settings=settings)
    assert choice_rule(long) == "origins_density"


def test_the_sidebar_gives_a_timed_search_its_time_left_not_its_generation_cap():
    from dataclasses import replace
    from types import SimpleNamespace

    from dashboard.sidebar import _progress_words
    from evocov_core.runs.jobs import JobSnapshot
    from evocov_core.searches import RunStatus, preset

    snap = JobSnapshot(id="r1", kind="search", status=RunStatus.RUNNING, label="", algorithm="evocov",
                       generation=10, total_generations=100_000, elapsed=17.6, n_evaluations=0,
                       evals_per_second=0.0, restarts=0, best=None, history=(), n_records=0, queue_position=0,
                       error="")
    timed = SimpleNamespace(spec=SimpleNamespace(config=preset("quick")))
    assert _progress_words(timed, snap) == "generation 10 · 42 s left"
    fixed = SimpleNamespace(spec=SimpleNamespace(config=preset("quick-fixed")))
    assert _progress_words(fixed, replace(snap, total_generations=preset("quick-fixed").generations)) == (
        f"generation 10/{preset('quick-fixed').generations}")


def test_one_count_of_fits_on_every_page_the_cli_and_the_kernel_file(data_dir, no_background_fits, tmp_path, capsys):
    """One search, with screening: the Search page, Results, Runs, the kernel file the dashboard stores and the
    command line's last line and kernel file (the same seeded run of fixed size, made by ``python -m evocov_core
    search``) all give the same two counts, named the same way (evocov_core.runs.counts)."""
    from evocov_core.data import load_csv
    from evocov_core.present import cli
    from evocov_core.runs.counts import fit_counts
    from evocov_core.runs.jobs import JobManager, JobSpec
    from evocov_core.runs.kernel_file import load_kernel_file
    from evocov_core.runs.store import RunStore

    csv = tmp_path / "series.csv"
    csv.write_bytes(csv_bytes(72))
    out = tmp_path / "kernel.json"
    argv = ["search", "--data", str(csv), "--test-fraction", "0.1", "--preset", "quick-fixed", "--population", "6",
            "--generations", "2", "--mu", "2", "--screen-points", "20", "--n-restarts", "1", "--seed", "3",
            "--workers", "1", "--quiet", "--out", str(out)]
    assert cli.main(argv) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    m = re.match(r"(\d+) kernels fitted, (\d+) screening fits in [\d.]+ s; wrote ", last)
    assert m, last
    said = (int(m.group(1)), int(m.group(2)))
    assert said[1] > 0  # the run screened: both counts are exercised
    kf = load_kernel_file(out)
    assert (kf.scores["kernels_fitted"], kf.scores["screening_fits"]) == said
    assert fit_counts(kf) == fit_counts({"scores": kf.scores})

    # The same run in the dashboard's store (same data, settings and seed: the same fits).
    args = cli.build_parser().parse_args(argv)
    config = cli._config_from_args(args)
    ds = load_csv(str(csv), test_fraction=0.1, max_points=None)
    jm = JobManager(RunStore(data_dir), max_concurrent=1)
    jid = jm.submit(JobSpec("search", ds, config, seed=3, workers=1, label="counts"))
    assert jm.get(jid).wait(180)
    from dashboard.runs import get_run

    run = get_run(jid)
    assert run.status == "finished"
    stored_doc = run.best.doc  # what the Results page's download writes
    assert (stored_doc["scores"]["kernels_fitted"], stored_doc["scores"]["screening_fits"]) == said
    words = f"{said[0]} kernels fitted, {said[1]} screening fits"

    at = app()
    at.query_params["job"] = jid
    at.run()
    at.switch_page("pages/2_search.py").run()
    no_exception(at)
    metrics = {m.label: m.value for m in at.metric}
    assert (int(metrics["Kernels fitted"]), int(metrics["Screening fits"])) == said

    at.switch_page("pages/3_results.py").run()
    no_exception(at)
    assert any(words in t for t in texts(at, "markdown")), texts(at, "markdown")[:3]
    assert any(c.startswith(words) for c in texts(at, "caption"))  # the Pareto tab's

    at.switch_page("pages/5_runs.py").run()
    no_exception(at)
    table = at.dataframe[0].value
    row = table[table["run"] == jid].iloc[0]
    assert (int(row["kernels fitted"]), int(row["screening fits"])) == said
    assert "None" not in {str(v) for v in row.to_numpy()}


def test_a_servers_first_page_compiles_the_fused_loops_once_in_a_child_process(monkeypatch):
    """The first page a server draws starts the compile of the fused loops of short series in a child process
    (a new machine's 20-40 s, done while the user picks data); later pages and sessions start none."""
    import dashboard.sidebar as sidebar
    from evocov_core.compute.runners import run_in_daemon_process
    from evocov_core.fitting.gp import load_fused_loop

    started = []

    def record(fn, *args, **kwargs):
        started.append(fn)
        return Future()

    monkeypatch.setattr(sidebar, "run_in_daemon_process", record)
    sidebar._fused_loops_loaded.clear()
    try:
        for _ in range(2):
            at = app().run()
            no_exception(at)
    finally:
        sidebar._fused_loops_loaded.clear()
    assert started == [load_fused_loop]
    # What the child runs: the loops load (from the suite's cache) in a spawned process, with no error.
    assert run_in_daemon_process(load_fused_loop, name="evocov-compile").result(timeout=300) is None

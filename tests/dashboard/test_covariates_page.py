"""Covariates with known futures on the dashboard (issue 73): the Data page's choice, the background search
that estimates their effect as the command line does, and the Results page's forecast at their future values.

Streamlit's AppTest (no browser); the helpers of :mod:`dashboard.covariates` are tested directly.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from evocov_core.data import DataError, Dataset

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app.py"
N = 72  # six years of months: the last tenth (8 months) is the test part

pytestmark = [pytest.mark.filterwarnings("ignore:Discarding nonzero nanoseconds:UserWarning"),
              pytest.mark.usefixtures("data_dir")]



@pytest.fixture(autouse=True)
def no_background_fits(monkeypatch):
    """Background fits would start processes: kept pending (the page shows the kernel's own forecast)."""
    from concurrent.futures import Future

    import dashboard.fits as fits

    pending: dict = {}

    def fake(key, fn, *args, **kwargs):
        fut = pending.setdefault(key, Future())
        fut.call = (fn, args, kwargs)
        return fut

    for lane in ("fit", "forecast", "report"):
        monkeypatch.setattr(fits, f"background_{lane}", fake)
        monkeypatch.setattr(fits, f"existing_{lane}", lambda key: pending.get(key))
    return pending


def months(n: int, start: int = 0) -> list[str]:
    return [f"{2000 + (start + i) // 12}-{(start + i) % 12 + 1:02d}-01" for i in range(n)]


def sales_csv(n: int = N) -> bytes:
    """Monthly sales driven by a price (strongly) beside a trend and a season; a store id that is noise."""
    rng = np.random.default_rng(3)
    t = np.arange(n)
    price = 5 + rng.normal(0, 1, n)
    sales = 100 + 0.5 * t + 8 * np.sin(2 * np.pi * t / 12) - 6 * price + rng.normal(0, 0.3, n)
    store = rng.integers(1, 4, n)
    table = pd.DataFrame({"month": months(n), "price": price.round(3), "store": store, "sales": sales.round(3)})
    return table.to_csv(index=False).encode()


def future_csv(rows: int = 6, *, drop: str | None = None, hole: bool = False) -> bytes:
    table = pd.DataFrame({"month": months(rows, N), "price": np.linspace(4, 6, rows), "store": 1})
    if hole:
        table["price"] = table["price"].astype(object)
        table.loc[2, "price"] = ""
    if drop:
        table = table.drop(columns=drop)
    return table.to_csv(index=False).encode()


def app() -> AppTest:
    return AppTest.from_file(str(APP), default_timeout=60)


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def texts(at: AppTest, kind: str) -> list[str]:
    return [str(e.value) for e in getattr(at, kind)]


def covariates_box(at: AppTest):
    [box] = [m for m in at.multiselect if m.label == "Covariates (known in advance)"]
    return box


def uploaded(at: AppTest, content: bytes = b"", name: str = "sales.csv") -> AppTest:
    at.file_uploader(key="data_upload").set_value((name, content or sales_csv(), "text/csv"))
    return at.run()


def covariate_dataset() -> Dataset:
    from dashboard.datasets import upload_to_dataset

    return upload_to_dataset(sales_csv(), name="sales", x="month", y="sales", guess=False, covariates=["price"])


def stored_search(data_dir: Path, ds: Dataset) -> str:
    """A finished GPSS run (one level, serial) on ``ds`` through the job manager the pages use."""
    from evocov_core.runs.jobs import JobManager, JobSpec
    from evocov_core.runs.store import RunStore
    from evocov_core.searches import preset

    jm = JobManager(RunStore(data_dir), max_concurrent=1)
    jid = jm.submit(JobSpec("search", ds, preset("quick", "gpss", generations=1, n_restarts=1, max_evals=20),
                            seed=0, workers=1, label="covariates"))
    job = jm.get(jid)
    assert job.wait(120) and job.snapshot().status == "finished", job.snapshot().error
    return jid


# --- the helpers ------------------------------------------------------------------------------------------------


def test_the_covariates_offered_are_the_other_columns_of_numbers():
    from dashboard.covariates import covariate_options

    df = pd.read_csv(io.BytesIO(sales_csv()))
    assert covariate_options(df, "month", "sales") == ["price", "store"]
    assert covariate_options(df, "store", "sales") == ["price"]
    assert covariate_options(df, None, "price") == ["store", "sales"]


def test_modelled_takes_the_effect_out_along_time_and_says_so_in_the_label():
    from dashboard.covariates import applied_to, data_effect, modelled
    from evocov_core.forecast.covariates import CovariateEffect, searched_on

    ds = covariate_dataset()
    assert ds.covariates == ("price",) and ds.x.shape == (N, 2)
    effect = data_effect(ds)
    assert effect.used and -7 < effect.coef[0] < -5
    m = modelled(ds)
    on, same = searched_on(ds)  # what the search (command line, front door, background job) runs on
    assert same == effect and np.array_equal(m.y, on.y) and np.array_equal(m.x, on.x) and m.x.shape == (N, 1)
    assert m.y_label == "sales − effect of price"
    assert np.allclose(m.y, ds.y - effect.coef[0] * ds.x[:, 1])
    left_out = CovariateEffect(("price",), (0.0,), False, "left out")
    assert np.array_equal(modelled(ds, left_out).y, ds.y) and modelled(ds, left_out).y_label == "sales"
    plain = Dataset.from_arrays(np.arange(30.0), np.sin(np.arange(30.0)))
    assert modelled(plain) is plain and applied_to(plain, None) is plain
    assert applied_to(ds, None).x.shape == (N, 1) and np.array_equal(applied_to(ds, None).y, ds.y)
    with pytest.raises(DataError, match="'temp'"):
        applied_to(ds, CovariateEffect(("temp",), (1.0,), True, ""))


def test_future_values_are_read_or_refused_in_one_line():
    from dashboard.covariates import data_effect, future_template, read_future

    ds = covariate_dataset()
    effect = data_effect(ds)
    x, C = read_future(future_csv(), ds, effect)
    assert x.shape == (6,) and C.shape == (6, 1) and np.all(x > ds.x[:, 0].max())
    assert np.allclose(C[:, 0], np.linspace(4, 6, 6))
    for content, said in ((future_csv(drop="price"), "no column 'price'"),
                          (future_csv(hole=True), "covariate 'price' is missing"),
                          (b"", "empty"),
                          (future_csv().replace(b"2006-01-01", b"soon"), "'soon'"),
                          (b"month,price\n2001-01-01,3\n", "not after the last observation")):
        with pytest.raises(DataError, match=said) as err:
            read_future(content, ds, effect)
        assert "\n" not in str(err.value)
    template = pd.read_csv(io.BytesIO(future_template(ds, effect)))
    assert list(template.columns) == ["month", "price"] and len(template) == ds.n_test
    assert template["month"].iloc[0] == "2006-01-01" and template["price"].isna().all()


def test_the_store_keeps_a_dataset_s_covariates(tmp_path):
    from evocov_core.runs.store import RunStore, dataset_from_json, dataset_to_json

    ds = covariate_dataset()
    back = dataset_from_json(dataset_to_json(ds))
    assert back.covariates == ("price",) and np.array_equal(back.x, ds.x)
    plain = Dataset.from_arrays(np.arange(30.0), np.sin(np.arange(30.0)))
    assert "covariates" not in json.loads(dataset_to_json(plain))  # rows as they were before covariates
    store = RunStore(tmp_path)
    store.create_run("r1", kind="search", algorithm="gpss", dataset=ds, settings={}, seed=0, extra={"a": 1})
    store.update_extra("r1", {"b": 2})
    assert dict(store.get_run("r1").extra) == {"a": 1, "b": 2}
    with pytest.raises(KeyError):
        store.update_extra("nope", {"b": 2})


# --- the pages ------------------------------------------------------------------------------------------------


def test_the_data_page_offers_covariates_and_the_dataset_takes_them():
    at = uploaded(app().run())
    no_exception(at)
    box = covariates_box(at)
    assert box.options == ["price", "store"] and box.value == []
    box.set_value(["price"]).run()
    no_exception(at)
    assert any("covariates price" in s for s in texts(at, "success"))
    at.button(key="data_use_upload").click().run()
    no_exception(at)
    ds = at.session_state["evocov_dataset"]
    assert ds.covariates == ("price",) and ds.x.shape[1] == 2
    assert any("Covariates known in advance:" in i and "price: used" in i for i in texts(at, "info"))
    # y chosen among the covariates: it is no longer offered as one (and no error)
    [y_box] = [s for s in at.selectbox if s.label == "y column (to model)"]
    y_box.set_value("price").run()
    no_exception(at)
    assert covariates_box(at).value == [] and covariates_box(at).options == ["store", "sales"]


def test_a_search_with_covariates_records_them_and_the_results_page_forecasts_at_their_future(data_dir):
    """The Search page's job estimates the effect as the command line does; Results needs their future values:
    a file missing the column is one line, a valid one gives the forecast and its CSV, kept on reload."""
    at = uploaded(app().run())
    covariates_box(at).set_value(["price"]).run()
    at.button(key="data_use_upload").click().run()
    at.switch_page("pages/2_search.py").run()
    no_exception(at)
    assert any("estimated first" in c for c in texts(at, "caption"))
    at.selectbox(key="s_algorithm").set_value("gpss").run()
    for name, value in (("generations", 1), ("n_restarts", 1), ("workers", 1)):
        at.number_input(key=f"s_{name}").set_value(value).run()
    at.button(key="search_start").click().run()
    no_exception(at)
    job_id = at.session_state["evocov_search_job"]
    from dashboard.runs import get_run, manager

    assert manager().get(job_id).wait(120)
    run = get_run(job_id)
    assert run.status == "finished", run.error
    assert run.dataset.covariates == ("price",)
    doc = run.best.doc
    assert doc["covariates"]["names"] == ["price"] and doc["covariates"]["used"]
    assert len(doc["normalisation"]["x_offset"]) == 1  # the kernel is of time alone
    from evocov_core.forecast.covariates import fit_covariates

    assert doc["covariates"]["coef"] == list(fit_covariates(run.dataset).coef)  # the command line's estimate

    at.switch_page("pages/3_results.py").run()
    no_exception(at)
    assert any("**Covariates:** price" in i for i in texts(at, "info"))
    assert any("No forecast past the data until" in i for i in texts(at, "info"))
    assert not [d for d in at.get("download_button") if "Download the forecast" in str(d.proto.label)]
    uploader = at.file_uploader(key=f"results_future_file_{job_id}")
    uploader.set_value(("future.csv", future_csv(drop="price"), "text/csv")).run()
    no_exception(at)
    errors = texts(at, "error")
    assert len(errors) == 1 and "Cannot use future.csv" in errors[0] and "'price'" in errors[0]
    assert "\n" not in errors[0]
    uploader = at.file_uploader(key=f"results_future_file_{job_id}")
    uploader.set_value(("future.csv", future_csv(hole=True), "text/csv")).run()
    assert any("'price' is missing" in e and "line 4" in e for e in texts(at, "error"))
    uploader = at.file_uploader(key=f"results_future_file_{job_id}")
    uploader.set_value(("future.csv", future_csv(), "text/csv")).run()
    no_exception(at)
    assert not at.error
    [download] = [d for d in at.get("download_button") if "Download the forecast" in str(d.proto.label)]
    assert not download.proto.disabled or run.best.combination.combined  # (the members fitted first)
    forecast = [t for c in at.get("plotly_chart") for t in json.loads(c.proto.spec)["data"]
                if t.get("name") == "forecast"]
    assert len(forecast) == 1 and len(base64.b64decode(forecast[0]["y"]["bdata"])) == 6 * 8  # six float64
    assert any("covariates' effect (price, at their given future values)" in c for c in texts(at, "caption"))
    kept = get_run(job_id).extra["future_covariates"]
    assert kept["file"] == "future.csv" and len(kept["x"]) == 6

    # A reload: a new session on the run's URL forecasts with the values kept, the dataset with its covariates.
    again = app()
    again.query_params["run"] = job_id
    again.run()
    again.switch_page("pages/3_results.py").run()
    no_exception(again)
    assert again.session_state["evocov_dataset"].covariates == ("price",)
    assert any("future.csv" in c and "uploaded before" in c for c in texts(again, "caption"))
    assert [d for d in again.get("download_button") if "Download the forecast" in str(d.proto.label)]


def test_the_forecast_at_the_future_values_is_the_front_door_s(data_dir):
    """The page's forecast is the API's ``forecast(future=...)`` with the same kernel file and data."""
    from dashboard.covariates import kernel_effect, read_future, run_data
    from evocov_core.api import KernelResult
    from evocov_core.forecast.combination import Combination
    from evocov_core.forecast.covariates import add_effect
    from evocov_core.forecast.future import forecast_future
    from evocov_core.runs.kernel_file import parse_kernel_file
    from evocov_core.runs.store import RunStore

    jid = stored_search(data_dir, covariate_dataset())
    run = RunStore(data_dir).get_run(jid)
    kf = parse_kernel_file(run.best.text)
    ds = run_data(run)
    effect = kernel_effect(run.best.doc)
    assert effect == kf.covariates
    x, C = read_future(future_csv(), ds, effect)
    kernel_only = dataclasses.replace(kf, combination=Combination())
    page = add_effect(forecast_future(kernel_only, ds, at=x), effect, C)
    api = KernelResult(kernel_only, ds, run.best.text).forecast(future=pd.read_csv(io.BytesIO(future_csv())))
    assert np.allclose(page.mean, api.mean) and np.allclose(page.upper, api.upper)
    assert not np.allclose(page.mean, forecast_future(kernel_only, ds, at=x).mean)  # the effect is added

"""Timing (issue 28): the dashboard on a 100,000-point series; see ``docs/long-series.md``.

The 100,000-point synthetic series of ``bench long`` (half-hourly, 90,000 training points),
one budgeted EvoCov search on it (the quick preset, 60 s, two workers, the default
2,000-point subset of data), then the pages a user opens, each rendered by Streamlit's
``AppTest`` (the script's run on the server: what the user waits for before the browser
draws), three times, median; the first render of each page is reported too (cold caches):

* the Data page uploading the series' CSV (3 MB) until it offers "Use this dataset", and with
  the series as the current dataset (its chart thinned to at most 8,000 drawn points,
  :func:`evocov_core.present.figures.minmax_indices`);
* the Search page watching the finished run (progress, fitness curve, best kernel);
* the Results page of the run: every tab (Best kernel with its forecast and components,
  Report, All kernels (Pareto), Apply a kernel file) is built on each render; the SE
  baseline, which the page fits in a background process, is left pending as in the tests;
* the HTML report of the returned kernel (``report_html``), with the Results page's
  default GPSS baseline of 20 s and the classical forecasters (``--se-report``: also without
  either); then reusing the classical forecasts the page makes in the background, and last
  also the page's background SE fit and a finished GPSS run (the quick GPSS preset, as the
  page's button starts it), as the dashboard's report does once they are done.

Also the bytes of the series chart's JSON (what the browser receives), thinned and not.

Run from the repository root: ``python -m bench.bench_dashboard_long`` (about 7 minutes).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from concurrent.futures import Future
from pathlib import Path

import plotly.graph_objects as go

from bench._common import limit_threads, write_report
from bench.common import md_table
from bench.long import load_long, write_series


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--series", default="synthetic-100k", help="a series of bench long (default synthetic-100k)")
    ap.add_argument("--time-budget", type=float, default=60.0, help="seconds of the search (default 60, the quick "
                                                                    "preset's)")
    ap.add_argument("--reps", type=int, default=3, help="renders of each page (default 3)")
    ap.add_argument("--gpss", type=float, default=20.0, help="GPSS baseline seconds of the report (default 20)")
    ap.add_argument("--no-report", action="store_true", help="leave the HTML report out")
    ap.add_argument("--se-report", action="store_true",
                    help="also time the report with the SE baseline only and no classical forecasters")
    args = ap.parse_args()
    SERIES, REPS = args.series, args.reps
    threads = limit_threads()
    tmp = Path(tempfile.mkdtemp(prefix="evocov-dash-"))
    os.environ["EVOCOV_DATA_DIR"] = str(tmp / "store")
    write_series(tmp / "data", [SERIES])
    t_read = _timed(lambda: load_long(tmp / "data" / f"{SERIES}.csv"))
    ds = load_long(tmp / "data" / f"{SERIES}.csv")
    rows: list[list[str]] = [["read and validate the CSV (load_csv)", f"{t_read:.2f}", "-"]]

    from evocov_core.present.figures import series_data, series_figure

    t_fig = _timed(lambda: series_figure(ds))
    thin = len(series_figure(ds).to_json())
    df = series_data(ds)
    full = len(go.Figure([go.Scattergl(x=df.x, y=df.y)]).to_json())
    rows.append(["series chart built (series_figure)", f"{t_fig:.2f}", "-"])

    from evocov_core.runs.jobs import JobManager, JobSpec
    from evocov_core.runs.store import RunStore
    from evocov_core.search import preset

    jm = JobManager(RunStore(tmp / "store"), max_concurrent=1)
    cfg = preset("quick", "evocov", time_budget=args.time_budget)
    t0 = time.perf_counter()
    jid = jm.submit(JobSpec("search", ds, cfg, seed=0, workers=2, label="bench"))
    job = jm.get(jid)
    assert job is not None and job.wait(600), "the search did not finish"
    t_search = time.perf_counter() - t0
    snap = job.snapshot()

    from streamlit.testing.v1 import AppTest

    import dashboard.fits as fits

    pending: dict = {}
    fits.background_fit = lambda key, fn, *a, **k: pending.setdefault(key, Future())  # type: ignore[assignment]
    fits.existing_fit = lambda key: pending.get(key)  # type: ignore[assignment]
    app = str(Path(__file__).resolve().parent.parent / "app.py")

    def page(name: str, title: str, **query: str) -> list[float]:
        times = []
        for _ in range(REPS):
            at = AppTest.from_file(app, default_timeout=600)
            at.session_state["evocov_dataset"] = ds
            at.session_state["evocov_dataset_source"] = {"kind": "upload", "name": ds.name}
            for k, v in query.items():
                at.query_params[k] = v
            at.switch_page(name)
            t0 = time.perf_counter()
            at.run()  # a new session opening the page: every cache of the page's own is cold
            times.append(time.perf_counter() - t0)
            assert at.title and at.title[0].value == title, [t.value for t in at.title]
            assert not at.exception, [e.value for e in at.exception]
        return times

    content = (tmp / "data" / f"{SERIES}.csv").read_bytes()
    up = []
    for _ in range(REPS):
        at = AppTest.from_file(app, default_timeout=600)
        at.run()
        t0 = time.perf_counter()
        at.file_uploader(key="data_upload").set_value((f"{SERIES}.csv", content, "text/csv")).run()
        up.append(time.perf_counter() - t0)
        assert not at.error and any("Ready" in str(m.value) for m in at.success), [e.value for e in at.error]
    rows.append([f"Data page: upload the {len(content) / 1e6:.1f} MB CSV until it is ready to use",
                 f"{statistics.median(up):.2f}", f"{up[0]:.2f}"])
    for label, name, title, q in (("Data page", "pages/1_data.py", "Data", {}),
                                  ("Search page, watching the run", "pages/2_search.py", "Search", {"job": jid}),
                                  ("Results page (all four tabs)", "pages/3_results.py", "Results", {"run": jid})):
        t = page(name, title, **q)
        rows.append([label, f"{statistics.median(t):.2f}", f"{t[0]:.2f}"])

    # A click on the Pareto tab opens that kernel: its forecast and components (what show_kernel computes).
    from evocov_core.fitting.model import FittedModel
    from evocov_core.present.figures import components_data, extrapolation_data, extrapolation_figure
    from evocov_core.search import EvalRecord

    records = RunStore(tmp / "store").evaluations(jid)
    ok = records[records["status"] == "ok"]
    if len(ok):
        row = ok.iloc[len(ok) // 2]

        def open_record() -> None:
            fit = EvalRecord.from_row(row).to_fit(ds.n_train)
            model = FittedModel.from_fit(fit, ds.norm, ds.n_train)
            extrapolation_figure(extrapolation_data(model, ds), ds)
            components_data(model, ds)

        rows.append(["Pareto tab: opening a kernel (its forecast and components)", f"{_timed(open_record):.2f}",
                     "-"])

    from evocov_core.present.report_html import report_html
    from evocov_core.runs.kernel_file import parse_kernel_file
    run = RunStore(tmp / "store").get_run(jid)
    assert run is not None and run.best is not None
    kf = parse_kernel_file(run.best.text)
    reports = [(f"HTML report, GPSS baseline {args.gpss:g} s and classical forecasters (the Results page's "
                "default: 20 s)", {"baseline_budget": args.gpss}),
               ("HTML report, SE baseline only, no classical forecasters",
                {"baseline_budget": 0.0, "classical": False})]
    for label, kwargs in [] if args.no_report else reports if args.se_report else reports[:1]:
        t0 = time.perf_counter()
        html = report_html(kf, ds, **kwargs)
        rows.append([label, f"{time.perf_counter() - t0:.2f}", f"{len(html) / 1e6:.1f} MB"])
    if not args.no_report:
        # The dashboard's way: the Results page fits the classical forecasters in the background when it
        # opens, and the report made afterwards reuses them (dashboard.comparison.classical_for_report).
        from evocov_core.forecast.classical import classical_forecasts

        t0 = time.perf_counter()
        done = classical_forecasts(ds)
        rows.append(["classical forecasters alone (the Results page's background run)",
                     f"{time.perf_counter() - t0:.2f}", "-"])
        t0 = time.perf_counter()
        html = report_html(kf, ds, baseline_budget=args.gpss, classical_done=done)
        rows.append([f"HTML report, GPSS baseline {args.gpss:g} s, reusing those classical forecasts",
                     f"{time.perf_counter() - t0:.2f}", f"{len(html) / 1e6:.1f} MB"])
        # And the GP baselines the page has fitted: its background SE fit, and a GPSS run its button starts
        # (dashboard.comparison.baselines_for_report): the report then fits nothing.
        from dashboard.comparison import baselines_for_report
        from dashboard.datasets import dataset_fingerprint
        from evocov_core.fitting.metrics import FitData
        from evocov_core.present.baselines import se_baseline

        t0 = time.perf_counter()
        se_fit = se_baseline(FitData.from_dataset(ds))
        rows.append(["the SE fit alone (the Results page's background fit)", f"{time.perf_counter() - t0:.2f}", "-"])
        pending.setdefault(("se", dataset_fingerprint(ds)), Future()).set_result(se_fit)
        t0 = time.perf_counter()
        gid = jm.submit(JobSpec("search", ds, preset("quick", "gpss"), seed=0, label="GPSS baseline"))
        gjob = jm.get(gid)
        assert gjob is not None and gjob.wait(900), "the GPSS search did not finish"
        rows.append(["a GPSS run (the Results page's button: the quick GPSS preset)", f"{time.perf_counter() - t0:.2f}",
                     "-"])
        se_done, gpss_done = baselines_for_report(ds, kf, RunStore(tmp / "store").get_run(gid))
        assert se_done is not None and gpss_done is not None, "the page's baselines do not fit the kernel's points"
        t0 = time.perf_counter()
        html = report_html(kf, ds, baseline_budget=0.0, classical_done=done, se_done=se_done, gpss_done=gpss_done)
        rows.append(["HTML report reusing the classical forecasts, the SE fit and the GPSS run (the dashboard once "
                     "they are done)", f"{time.perf_counter() - t0:.2f}", f"{len(html) / 1e6:.1f} MB"])

    table = md_table(["what", f"seconds (median of {REPS})", "first render / size"], rows, "lrr")
    facts = (f"{ds.n:,} points, {ds.n_train:,} training; the search: {snap.status}, {snap.n_evaluations} kernels "
             f"fitted in {t_search:.0f} s; best {snap.best.kernel.infix if snap.best else '-'}; "
             f"{run.best.doc.get('approximation', {}).get('description', '')}.\n\n"
             f"Series chart JSON: {thin / 1e6:.2f} MB thinned, {full / 1e6:.2f} MB with every point.")
    doc = __doc__.split("\n\n", 1)[1].split("Run from")[0].strip()
    path = write_report("bench_dashboard_long", f"The dashboard on a {ds.n:,}-point series (issue 28)",
                        [doc, facts, table], threads)
    print(facts)
    print(table)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""The Panel page in headless Chromium (issue 73, item 1): a long CSV of 12 series uploaded, run, the server and
the run's process killed midway, the server restarted and the run resumed with no series lost, the table
sorted, one series opened on the Results page, the zip downloaded; bad long tables get one line.

The run uses the panel preset at fixed counts (population 6, 2 generations...) in one worker process, so that
its 12 series take about ten seconds. Screenshots go to ``artifacts/``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_browser import ARTIFACTS, _free_port, _no_exceptions, _wait_app, _wait_http, browser  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.slow]

try:
    from playwright.sync_api import Page, expect
except ImportError:  # pragma: no cover - test_browser's skip reason says so
    Page = expect = None

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = "population=6 mu=2 generations=2 d_min=2 d_max=4 psd_w=6 max_evals=15 n_screen=4 rho_max=30"
N_SERIES, H = 12, 6
ROW_PX, MARKER_PX, SERIES_PX = 35, 34, 90  # the table's rows, its selection column and its first column


def _long_csv(path: Path) -> None:
    """12 monthly series of 36 to 80 points: a trend, a yearly cycle, noise."""
    rng = np.random.default_rng(3)
    rows = ["unique_id,ds,y"]
    for k in range(N_SERIES):
        for i in range(36 + 4 * k):
            v = 100 + 2 * k + 0.3 * (k + 1) * i + 8 * np.sin(2 * np.pi * i / 12 + k) + rng.normal(0, 1.5)
            rows.append(f"S{k:02d},{2010 + i // 12}-{i % 12 + 1:02d}-01,{v:.3f}")
    path.write_text("\n".join(rows) + "\n")


def _start(data_dir: Path) -> tuple[subprocess.Popen, str]:
    """``streamlit run app.py`` on a free port, in a process group of its own (so that it can be killed whole)."""
    port = _free_port()
    env = {**os.environ, "EVOCOV_DATA_DIR": str(data_dir), "EVOCOV_MAX_CONCURRENT": "1"}
    log = open(data_dir / f"streamlit-{port}.log", "w")  # noqa: SIM115 - the child keeps its copy
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                             "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false"], cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    url = f"http://127.0.0.1:{port}"
    _wait_http(f"{url}/_stcore/health", proc)
    return proc, url


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL the server's process group: no shutdown, nothing told to anyone."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def _workers(data_dir: Path) -> list[int]:
    """The panel workers' process ids (each leads its own process group), as their runs' state files say."""
    pids = []
    for state in (data_dir / "panels").glob("*/state.json"):
        pid = json.loads(state.read_text()).get("pid")
        if pid:
            pids.append(int(pid))
    return pids


def _settle(page: Page) -> None:
    time.sleep(0.5)  # the rerun a widget's change starts
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=60_000)


def _fill(page: Page, label: str, value: str) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(value)
    box.press("Enter")
    expect(box).to_have_value(re.compile(rf"^{re.escape(value)}(\.0+)?$"), timeout=30_000)
    _settle(page)


def _shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def _upload_long(page: Page, path: Path) -> None:
    page.get_by_role("tab", name=re.compile("Many series")).click()
    page.locator(".st-key-data_panel_upload [data-testid='stFileUploaderDropzoneInput']").set_input_files(str(path))


def _finished_count(page: Page) -> tuple[str, int]:
    """The run's state and its finished series, as the page says them (``running · 3/12 series finished``)."""
    text = page.locator('[data-testid="stMain"]').inner_text(timeout=30_000)
    m = re.search(r"(running|finished|interrupted|stopped|failed) · (\d+)/12 series finished", text)
    return (m.group(1), int(m.group(2))) if m else ("", -1)


def _column(page: Page, col: int) -> list[str]:
    """A column of the table as drawn, top to bottom (the grid's accessible cells: the canvas's order)."""
    grid = page.locator('[data-testid="stDataFrame"]').first
    return [grid.locator(f'[data-testid="glide-cell-{col}-{r}"]').inner_text() for r in range(N_SERIES)]


def _parts(data_dir: Path, run_id: str) -> dict[str, tuple[int, bytes]]:
    parts = (data_dir / "panels" / run_id / "out" / "parts").glob("*.json")
    return {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in parts}


def test_a_panel_runs_survives_a_killed_server_and_opens_sorts_and_downloads(browser, tmp_path):  # noqa: F811
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    csv = tmp_path / "twelve.csv"
    _long_csv(csv)
    proc, url = _start(data_dir)
    procs = [proc]
    try:
        ctx = browser.new_context(viewport={"width": 1440, "height": 1400}, accept_downloads=True)
        page = ctx.new_page()
        page.set_default_timeout(60_000)

        # --- Data: the long table, its columns guessed ------------------------------------------------------
        page.goto(url)
        _wait_app(page, "Data")
        _upload_long(page, csv)
        expect(page.get_by_text(re.compile(r"Ready: twelve\.csv — 12 series"))).to_be_visible(timeout=60_000)
        page.locator(".st-key-data_use_panel button").click()
        expect(page.get_by_text(re.compile("twelve.csv is the current panel"))).to_be_visible(timeout=60_000)
        _no_exceptions(page)

        # --- Panel: small fixed-count settings, start, watch the bar and its ETA ------------------------------
        page.locator('[data-testid="stSidebar"] [data-testid="stPageLink"] a').filter(has_text="Panel").first.click()
        _wait_app(page, "Panel")
        _fill(page, "Seconds per series", "0")
        _fill(page, "Worker processes", "1")
        _fill(page, "Horizon (steps)", str(H))
        _fill(page, "Other search settings", SETTINGS)
        _no_exceptions(page)
        page.locator(".st-key-panel_start button").click()
        page.wait_for_url(re.compile(r"[?&]panel=[0-9a-f]{12}"), timeout=30_000)
        run_id = re.search(r"panel=([0-9a-f]{12})", page.url).group(1)
        bars: list[str] = []
        t0 = time.time()
        while time.time() - t0 < 180:
            state, done = _finished_count(page)
            bar = page.locator('[data-testid="stProgress"]')
            if bar.count():
                bars.append(bar.first.inner_text())
            if done >= 2 or state not in ("", "running"):
                break
            time.sleep(0.3)
        assert state == "running" and 2 <= done < N_SERIES, f"not killed midway: {state} {done}/12 ({bars[-3:]})"
        assert any(re.search(r"\d+/12 series · ETA \d+:\d\d", b) for b in bars), bars[-5:]
        _shot(page, "panel-01-running")

        # --- Kill the server and the run's process (SIGKILL: nothing is told), restart the server ------------
        for pid in _workers(data_dir):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        _kill(proc)
        time.sleep(1.0)  # the killed worker's lock is the kernel's to free
        before = _parts(data_dir, run_id)
        assert 2 <= len(before) < N_SERIES, len(before)
        ctx.close()
        proc, url = _start(data_dir)
        procs.append(proc)
        ctx = browser.new_context(viewport={"width": 1440, "height": 1400}, accept_downloads=True)
        page = ctx.new_page()  # a new session: the run comes back by its URL
        page.set_default_timeout(60_000)
        page.goto(f"{url}/panel?panel={run_id}")
        _wait_app(page, "Panel")
        expect(page.get_by_text(re.compile("it resumed by itself when the server started again"))).to_be_visible()
        t1 = time.time()
        while (seen := _finished_count(page))[0] != "finished":
            # One reading a turn: the run may finish between two readings.
            assert time.time() - t1 < 180, seen
            assert seen[0] in ("running", ""), seen
            time.sleep(0.5)
        after = _parts(data_dir, run_id)
        assert len(after) == N_SERIES and all(after[k] == before[k] for k in before), "a series was redone or lost"
        expect(page.get_by_text(f"{len(before)} read from before an interruption")).to_be_visible(timeout=30_000)
        grid = page.locator('[data-testid="stDataFrame"]').first
        expect(grid).to_be_visible(timeout=60_000)
        _no_exceptions(page)
        _shot(page, "panel-02-resumed-finished")

        # --- Sort by the holdout ratio: a click on its header --------------------------------------------------
        series_before = _column(page, 1)
        assert sorted(series_before) == [f"S{k:02d}" for k in range(N_SERIES)]
        box = grid.bounding_box()
        page.mouse.click(box["x"] + MARKER_PX + SERIES_PX + 60, box["y"] + ROW_PX / 2)
        t2 = time.time()
        while _column(page, 1) == series_before and time.time() - t2 < 15:
            time.sleep(0.3)
        ratios = [float(v) if v else float("nan") for v in _column(page, 2)]
        finite = [r for r in ratios if r == r]
        assert finite == sorted(finite) and _column(page, 1) != series_before, (ratios, _column(page, 1))
        _shot(page, "panel-03-sorted")

        # --- Open the first series (the lowest ratio) on the Results page -------------------------------------
        first = _column(page, 1)[0]
        page.mouse.click(box["x"] + MARKER_PX / 2, box["y"] + ROW_PX * 1.5)
        page.wait_for_url(re.compile(r"/results\?run=[0-9a-f]{12}"), timeout=60_000)
        _wait_app(page, "Results")
        expect(page.get_by_text(re.compile(rf"on {first} \(\d+ training, 0 test points\)"))).to_be_visible()
        expect(page.get_by_text("The kernel.").first).to_be_visible()
        _no_exceptions(page)
        _shot(page, "panel-04-series-results")

        # --- Back on the Panel page: the zip of forecasts and kernel files -------------------------------------
        page.locator('[data-testid="stSidebar"] [data-testid="stPageLink"] a').filter(has_text=f"Panel {run_id}") \
            .first.click()
        _wait_app(page, "Panel")
        download = page.get_by_role("button", name=re.compile("Download forecasts and kernels"))
        expect(download).to_be_visible(timeout=30_000)
        with page.expect_download() as dl:
            download.click()
        path = tmp_path / "panel.zip"
        dl.value.save_as(str(path))
        z = zipfile.ZipFile(path)
        series = pd.read_csv(io.BytesIO(z.read("series.csv")))
        forecasts = pd.read_csv(io.BytesIO(z.read("forecasts.csv")))
        assert len(series) == N_SERIES and forecasts.groupby("unique_id").size().eq(H).all()
        kernels = {n for n in z.namelist() if n.startswith("kernels/")}
        assert kernels == {f"kernels/{u}.json" for u in series.loc[series.status == "ok", "unique_id"]} != set()
        _no_exceptions(page)
        ctx.close()
    finally:
        for p in procs:
            if p.poll() is None:
                _kill(p)
        for pid in _workers(data_dir):  # a worker the test started, should it still run after a failure
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


BAD = {
    "duplicated.csv": (b"unique_id,ds,y\na,2020-01-01,1\na,2020-02-01,2\na,2020-01-01,3\n",
                       "series 'a' has two rows at ds 2020-01-01"),
    "text_y.csv": (b"unique_id,ds,y\na,1,1.5\na,2,lots\n",
                   "column 'y' (y) holds 'lots' in row 3, which is not a number"),
    "bad_ds.csv": (b"unique_id,ds,y\na,np.float64(1.0),1\na,np.float64(2.0),2\n",
                   "holds 'np.float64(1.0)' in row 2, which is neither a date nor a number; nothing was guessed"),
}


def test_a_bad_long_table_gets_one_line_on_the_page(browser, tmp_path):  # noqa: F811
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    proc, url = _start(data_dir)
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.set_default_timeout(60_000)
        page.goto(url)
        _wait_app(page, "Data")
        page.get_by_role("tab", name=re.compile("Many series")).click()
        for name, (content, message) in BAD.items():
            path = tmp_path / name
            path.write_bytes(content)
            page.locator(".st-key-data_panel_upload [data-testid='stFileUploaderDropzoneInput']") \
                .set_input_files(str(path))
            error = page.locator('[data-testid="stAlertContentError"]')
            expect(error.filter(has_text=f"Cannot use {name} as a panel")).to_be_visible(timeout=60_000)
            said = error.first.locator('[data-testid="stMarkdownContainer"]').inner_text().strip()
            assert error.count() == 1 and message in said and "\n" not in said, said
            expect(page.locator(".st-key-data_use_panel")).to_have_count(0)
            _no_exceptions(page)
        page.close()
    finally:
        _kill(proc)

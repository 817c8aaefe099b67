"""End-to-end test of the dashboard in headless Chromium (Playwright).

Starts ``streamlit run app.py`` on a free port with a temporary run store, uploads a CSV,
runs a small search while watching it live, reloads the tab mid-run, opens the result and
downloads the kernel file. Screenshots of every page go to ``artifacts/`` (gitignored).
"""

from __future__ import annotations

import math
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
CHROMIUM = "/usr/bin/chromium"

pytestmark = [pytest.mark.browser, pytest.mark.slow]

try:
    from playwright.sync_api import Page, expect, sync_playwright
except ImportError:  # pragma: no cover - depends on the machine
    sync_playwright = None

# Small enough to finish in well under a minute on 2 cores, long enough to watch it move.
GENERATIONS = 60  # long enough to watch it move and reload mid-run; the test then stops it
POPULATION = 8
MU = 2


def _skip_reason() -> str | None:
    if sync_playwright is None:
        return "playwright is not installed (pip install playwright)"
    if not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM} (apt-get install -y chromium)"
    if shutil.which("streamlit") is None and not _has_module("streamlit"):
        return "streamlit is not installed"
    return None


def _has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_http(url: str, proc: subprocess.Popen, timeout: float = 90.0) -> None:
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise TimeoutError(f"streamlit did not answer at {url} within {timeout:.0f} s")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    data_dir = tmp_path_factory.mktemp("evocov-data")
    port = _free_port()
    env = {**os.environ, "EVOCOV_DATA_DIR": str(data_dir), "EVOCOV_MAX_CONCURRENT": "1"}
    log_path = data_dir / "streamlit.log"
    log = open(log_path, "w")  # noqa: SIM115 - closed in the teardown
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app.py",
            "--server.headless",
            "true",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--browser.gatherUsageStats",
            "false",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_http(f"{url}/_stcore/health", proc)
        yield {"url": url, "data_dir": data_dir, "log": log_path}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


@pytest.fixture(scope="module")
def browser():
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    with sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield b
        b.close()


def _shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    time.sleep(0.8)  # let charts finish drawing
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def _wait_app(page: Page, title: str, timeout: float = 60_000) -> None:
    expect(page.locator("h1").filter(has_text=title)).to_be_visible(timeout=timeout)
    # Wait until the script run has finished (the status widget shows "Running..." meanwhile).
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout)


def _no_exceptions(page: Page) -> None:
    exc = page.locator('[data-testid="stException"]')
    assert exc.count() == 0, exc.first.inner_text()


def _start_search(page: Page) -> None:
    """Click Start search once the page has settled: while a rerun (after a setting changed) is
    drawn, Streamlit can show the stale button beside the new one, both disabled."""
    button = page.locator(".st-key-search_start button")
    # Generous: on a loaded machine (the suite beside other work) a rerun can take tens of seconds.
    expect(button).to_have_count(1, timeout=90_000)
    expect(button).to_be_enabled(timeout=90_000)
    button.click()


def _search_to_results(page: Page) -> str:
    """A 4 s search on one worker, from the Search page to its Results; returns the job's id."""
    _set_float(page, "Time budget (seconds)", 4)
    _set_number(page, "Worker processes", 1)
    _start_search(page)
    page.wait_for_url(re.compile(r"[?&]job=[0-9a-f]{12}"), timeout=30_000)
    job_id = re.search(r"job=([0-9a-f]{12})", page.url).group(1)
    t0 = time.time()
    while _status(page) != "finished":
        assert time.time() - t0 < 90, page.locator(".st-key-search_status").inner_text()
        time.sleep(0.3)
    page.locator(".st-key-search_open_results button").click(timeout=30_000)
    _wait_app(page, "Results")
    return job_id


def _nav(page: Page, label: str, title: str) -> None:
    page.locator('[data-testid="stSidebar"] [data-testid="stPageLink"] a').filter(has_text=label).first.click()
    _wait_app(page, title)


def _set_number(page: Page, label: str, value: int) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    expect(box).to_have_value(str(value), timeout=20_000)
    time.sleep(0.5)  # the rerun triggered by the change
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=30_000)


def _generation(page: Page, wait: float = 0.0) -> tuple[int, int] | None:
    t0 = time.time()
    while True:
        text = page.locator(".st-key-search_status").first.inner_text(timeout=30_000)
        # "Generation 3 / 60" (fixed counts) or "Generation 3 · 41 s left of 60 s" (a time budget).
        m = re.search(r"Generation (\d+)(?: / (\d+))?", text)
        if m or time.time() - t0 >= wait:
            return (int(m.group(1)), int(m.group(2) or 0)) if m else None
        time.sleep(0.3)


def _fitness_points(page: Page) -> int:
    """Markers drawn in the live fitness chart (one per generation, on the "best of generation"
    trace, the only one with markers), -1 while there is no chart: what the user sees."""
    return page.evaluate("""() => {
        const gd = document.querySelector('.st-key-search_fitness .js-plotly-plot');
        return gd ? gd.querySelectorAll('.scatterlayer .points path').length : -1;
    }""")


def _status(page: Page) -> str:
    text = page.locator(".st-key-search_status").first.inner_text(timeout=30_000)
    for s in ("finished", "cancelled", "failed", "interrupted", "running", "queued"):
        if s in text:
            return s
    return ""


def _write_csv(path: Path) -> None:
    rng = np.random.default_rng(1)
    t = np.arange(120)
    y = 50 + 0.4 * t + 10 * np.sin(2 * np.pi * t / 12) + rng.normal(0, 1.0, t.size)
    months = [f"{2000 + i // 12}-{i % 12 + 1:02d}-01" for i in t]
    path.write_text("month,sales\n" + "\n".join(f"{m},{v:.3f}" for m, v in zip(months, y, strict=True)) + "\n")


# Records, from the first paint on, whether Streamlit's own list of the pages/ files (which would
# name helper modules and the entry script) ever showed, even for a moment.
_WATCH_NAV = """
window.__evocovNavSeen = false;
new MutationObserver(() => {
  if (document.querySelector('[data-testid="stSidebarNav"]')) window.__evocovNavSeen = true;
}).observe(document, {childList: true, subtree: true});
"""


def _page_links(page) -> list[str]:
    # The text of a link is its icon's ligature name, then the label.
    texts = page.locator('[data-testid="stSidebar"] [data-testid="stPageLink"]').all_inner_texts()
    return [t.strip().split("\n")[-1] for t in texts]


def test_fresh_server_deep_link_uses_the_page_list(server, browser):
    """The first visit to a fresh server may be a deep link (a bookmarked /runs): it opens that
    page with the shared sidebar (page list, dataset), and no file-name page list ever shows."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.add_init_script(_WATCH_NAV)
    page.goto(f"{server['url']}/runs")
    _wait_app(page, "Runs")
    expect(page.locator('[data-testid="stSidebar"]')).to_contain_text("Current dataset")
    # The sidebar may draw its links after the page's own content: read them once all are there.
    expect(page.locator('[data-testid="stSidebar"] [data-testid="stPageLink"]')).to_have_count(6)
    links = _page_links(page)
    assert links[:6] == ["Data", "Search", "Results", "Mutation explorer", "Runs", "Panel"], links
    assert not page.evaluate("window.__evocovNavSeen")
    _no_exceptions(page)
    page.close()


def test_entry_page_opens_data_without_a_flash_of_files(server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.add_init_script(_WATCH_NAV)
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto(server["url"])
    _wait_app(page, "Data")
    page.wait_for_url("**/data")
    # Offline machines: nothing is fetched from another host (the tab's icon is an inline SVG,
    # not a Material icon from fonts.gstatic.com).
    here = server["url"].split("//", 1)[1].split("/", 1)[0]
    away = [u for u in requested if not u.startswith("data:") and u.split("//", 1)[-1].split("/", 1)[0] != here]
    assert not away, away
    expect(page.locator("link[rel='shortcut icon']")).to_have_attribute("href", re.compile(r"^data:image/svg"))
    expect(page.locator('[data-testid="stSidebar"]')).to_contain_text("airline")
    assert not page.evaluate("window.__evocovNavSeen")
    # The sidebar's links go to the pages at their own URLs.
    page.locator('[data-testid="stSidebar"] [data-testid="stPageLink"]', has_text="Results").click()
    _wait_app(page, "Results")
    page.wait_for_url("**/results")
    _no_exceptions(page)
    page.close()


def test_upload_search_reload_results_download(server, browser, tmp_path):
    csv = tmp_path / "synthetic_sales.csv"
    _write_csv(csv)
    ctx = browser.new_context(viewport={"width": 1440, "height": 1400}, accept_downloads=True)
    page = ctx.new_page()
    page.set_default_timeout(60_000)

    # --- Data: Airline by default, then upload a CSV ------------------------------------------------
    page.goto(server["url"])
    _wait_app(page, "Data")
    expect(page.locator('[data-testid="stSidebar"]')).to_contain_text("airline")
    _no_exceptions(page)
    _shot(page, "01-data-airline")

    page.get_by_role("tab", name=re.compile("Upload a CSV")).click()
    page.locator(".st-key-data_upload [data-testid='stFileUploaderDropzoneInput']").set_input_files(str(csv))
    expect(page.get_by_text(re.compile(r"Ready: .*synthetic_sales"))).to_be_visible(timeout=60_000)
    page.locator(".st-key-data_use_upload button").click()
    expect(page.locator('[data-testid="stSidebar"]')).to_contain_text("synthetic_sales", timeout=30_000)
    expect(page.locator("h3").filter(has_text="Current dataset: synthetic_sales")).to_be_visible()
    _no_exceptions(page)
    _shot(page, "02-data-uploaded")

    # --- Search: small settings, start, watch it move ------------------------------------------------
    _nav(page, "Search", "Search")
    _set_number(page, "Population size N", POPULATION)
    _set_number(page, "Survivors μ", MU)
    _set_number(page, "Generations G", GENERATIONS)
    _set_number(page, "Worker processes", 2)
    _no_exceptions(page)
    _start_search(page)
    page.wait_for_url(re.compile(r"[?&]job=[0-9a-f]{12}"), timeout=30_000)
    job_id = re.search(r"job=([0-9a-f]{12})", page.url).group(1)

    seen: list[int] = []
    drawn: list[int] = []  # points of the fitness chart, each time it changes
    t0 = time.time()
    while time.time() - t0 < 240:
        g = _generation(page)
        if g and (not seen or g[0] != seen[-1]):
            seen.append(g[0])
        p = _fitness_points(page)
        if p > 0 and (not drawn or p != drawn[-1]):
            drawn.append(p)
        if len([s for s in seen if s > 0]) >= 2 and len(drawn) >= 2 and _status(page) == "running":
            break
        if _status(page) in ("finished", "cancelled", "failed"):
            break
        time.sleep(0.3)
    assert len(set(seen) - {0}) >= 2, f"generation counter did not move twice while running: {seen}"
    status_text = page.locator(".st-key-search_status").first.inner_text()
    assert _status(page) != "running" or re.search(r"\d+ s left of 60 s", status_text), status_text
    assert len(drawn) >= 2 and drawn == sorted(drawn), f"the fitness chart did not grow twice while running: {drawn}"
    expect(page.locator('[data-testid="stPlotlyChart"]').first).to_be_visible()
    _shot(page, "03-search-running")

    # --- Reload the tab mid-run: same job, still moving -------------------------------------------------
    before = seen[-1]
    running_at_reload = _status(page) == "running"
    page.reload()
    _wait_app(page, "Search")
    assert f"job={job_id}" in page.url
    expect(page.locator(".st-key-search_status")).to_contain_text(job_id)
    # A reloaded tab is a new session: it takes the run's data as its dataset.
    expect(page.locator('[data-testid="stSidebar"]')).to_contain_text("synthetic_sales")
    after = _generation(page, wait=30)
    assert after is not None and after[0] >= before, page.locator(".st-key-search_status").inner_text()
    if running_at_reload:
        t1 = time.time()
        while time.time() - t1 < 180:
            g = _generation(page)
            if (g and g[0] > after[0]) or _status(page) == "finished":
                break
            time.sleep(0.3)
        g = _generation(page)
        assert (g and g[0] > after[0]) or _status(page) == "finished", "the run did not continue after a reload"

    # --- Stop it: the best kernel so far is kept ------------------------------------------------------
    if _status(page) == "running":
        page.locator(".st-key-search_stop button").first.click()
    t2 = time.time()
    while _status(page) not in ("finished", "cancelled", "failed") and time.time() - t2 < 120:
        time.sleep(0.5)
    assert _status(page) in ("finished", "cancelled"), page.locator(".st-key-search_status").inner_text()
    expect(page.locator(".st-key-search_open_results button")).to_be_visible(timeout=30_000)
    _no_exceptions(page)
    _shot(page, "04-search-finished")

    # --- Results: open, download the kernel, check it -------------------------------------------------
    page.locator(".st-key-search_open_results button").click()
    _wait_app(page, "Results")
    assert f"run={job_id}" in page.url
    download = page.get_by_role("button", name="Download kernel (JSON)").first
    expect(download).to_be_visible(timeout=30_000)  # the page draws its figures first; 4-5 s on a busy machine
    _no_exceptions(page)
    _shot(page, "05-results")
    with page.expect_download() as dl:
        download.click()
    path = tmp_path / "kernel.json"
    dl.value.save_as(str(path))

    from evocov_core.language.psd import check_psd
    from evocov_core.runs.kernel_file import load_kernel_file

    kf = load_kernel_file(path)
    assert kf.scores.get("dataset") == "synthetic_sales"
    assert kf.normalisation is not None
    assert math.isfinite(kf.log_noise)
    assert check_psd(kf.kernel, np.random.default_rng(0)).ok  # what `check-kernel` checks

    # --- The other pages render ---------------------------------------------------------------------------
    page.get_by_role("tab", name="All kernels (Pareto)").click()
    time.sleep(1.0)
    _shot(page, "06-results-pareto")
    _nav(page, "Mutation explorer", "Mutation explorer")
    _no_exceptions(page)
    _shot(page, "07-explorer")
    _nav(page, "Runs", "Runs")
    expect(page.locator('[data-testid="stMain"]')).to_contain_text("Runs")
    _no_exceptions(page)
    _shot(page, "08-runs")
    ctx.close()


def _set_float(page: Page, label: str, value: float) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(f"{value:g}")
    box.press("Enter")
    expect(box).to_have_value(re.compile(rf"^{value:g}(\.0+)?$"), timeout=20_000)
    time.sleep(0.5)  # the rerun triggered by the change
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=30_000)


def test_a_run_that_finishes_by_itself_offers_open_in_results(server, browser):
    """Nobody touches the page while the run ends: the live part (a fragment that reruns every
    second) must redraw the whole page when the job finishes, so that "Open in Results" and
    "New search" appear within seconds of the status reading finished."""
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.set_default_timeout(60_000)
    page.goto(f"{server['url']}/search")
    _wait_app(page, "Search")
    _set_float(page, "Time budget (seconds)", 4)  # the quick preset with 4 s instead of 60
    _set_number(page, "Worker processes", 1)  # no worker processes to start: the 4 s go to the search
    _start_search(page)
    page.wait_for_url(re.compile(r"[?&]job=[0-9a-f]{12}"), timeout=30_000)
    expect(page.locator(".st-key-search_status")).to_be_visible(timeout=30_000)

    t0 = time.time()
    while (status := _status(page)) != "finished":
        assert status in ("queued", "running"), page.locator(".st-key-search_status").inner_text()
        assert time.time() - t0 < 90, "the 4 s search did not finish within 90 s"
        time.sleep(0.2)
    finished_at = time.time()
    open_results = page.locator(".st-key-search_open_results button")
    # Without the fragment's full rerun the buttons never appear. The wait is generous: on a CI
    # machine 2.5x slower than this one, the redraw once took more than 8 s (0.0-0.3 s here).
    expect(open_results).to_be_visible(timeout=30_000)
    delay = time.time() - finished_at
    expect(page.locator(".st-key-search_new button").first).to_be_visible()
    expect(page.locator(".st-key-search_stop button")).to_have_count(0)
    _no_exceptions(page)
    _shot(page, "09-search-finished-by-itself")
    print(f"'Open in Results' appeared {delay:.1f} s after the status read finished")
    page.close()


_DASHED = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(
    gd => (gd.data || []).filter(t => t.line && t.line.dash === 'dash').map(t => t.name))"""


def _comparison_rows(page: Page) -> dict[str, list[str]]:
    """The Results page's table of every forecast: method -> the other cells, as the user reads them."""
    rows = page.locator(".st-key-results_comparison table tbody tr")
    out = {}
    for i in range(rows.count()):
        cells = [c.strip() for c in rows.nth(i).locator("th, td").all_inner_texts()]
        if cells:
            out[cells[0]] = cells[1:]
    return out


def test_results_compare_every_forecast_with_the_classical_ones(server, browser):
    """After a short search on the bundled Airline series, the Results page shows within 30 s the table of
    every forecast with every classical forecaster's row finished (scores, or a one-line reason), and
    their forecasts dashed on the forecast figure."""
    from evocov_core.forecast.classical import MODELS

    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    page.set_default_timeout(60_000)
    page.goto(f"{server['url']}/search")
    _wait_app(page, "Search")
    expect(page.locator('[data-testid="stSidebar"]')).to_contain_text("airline")
    _search_to_results(page)
    opened = time.time()
    rows: dict[str, list[str]] = {}
    while time.time() - opened < 30:
        rows = _comparison_rows(page)
        done = [m for m in MODELS if m in rows and "running…" not in rows[m]]
        if len(done) == len(MODELS) and len(page.evaluate(_DASHED)) >= 4:
            break
        time.sleep(0.5)
    waited = time.time() - opened
    _no_exceptions(page)
    _shot(page, "10-results-comparison")
    assert {"this kernel", "SE", "GPSS", *MODELS} <= set(rows), rows
    for m in MODELS:
        cells = " ".join(rows[m])
        assert "running…" not in cells, f"{m} still running {waited:.0f} s after the page opened: {rows[m]}"
        assert ("ok" in rows[m] and "%" in cells) or f"{m}: " in cells, rows[m]  # scores, or why not
    assert sum("ok" in rows[m] for m in MODELS) >= 4
    dashed = set(page.evaluate(_DASHED))
    assert {f"{m} (classical)" for m in ("SeasonalNaive", "AutoETS", "AutoARIMA", "AutoTheta")} <= dashed, dashed
    print(f"every classical row finished {waited:.1f} s after the Results page opened")
    page.close()


def test_report_html_renders_offline(browser, tmp_path):
    """The HTML report opens from a file with no network and every Plotly figure draws."""
    from evocov_core.data import Dataset
    from evocov_core.fitting.metrics import FitData
    from evocov_core.fitting.optimize import OptimConfig, fit_kernel
    from evocov_core.language.library import compose
    from evocov_core.present.report_html import report_html
    from evocov_core.runs.kernel_file import dump_kernel_file, kernel_file_dict, parse_kernel_file

    x = 1990 + np.arange(96) / 12.0
    y = 0.5 * (x - 1990) + np.sin(2 * math.pi * x) + 0.1 * np.random.default_rng(1).standard_normal(96)
    ds = Dataset.from_arrays(x, y, name="toy", test_fraction=0.1)
    fit = fit_kernel(compose(["+", "SE", "PER"]), FitData.from_dataset(ds), OptimConfig(n_restarts=1, n_screen=5),
                     np.random.default_rng(0))
    kf = parse_kernel_file(dump_kernel_file(kernel_file_dict(fit, ds.norm, dataset="toy", n_test=ds.n_test)))
    path = tmp_path / "report.html"
    path.write_text(report_html(kf, ds, baseline_budget=1.0), encoding="utf-8")  # SE and GPSS drawn too
    ctx = browser.new_context(offline=True)
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    n_divs = page.locator("div.plotly-graph-div").count()
    assert n_divs >= 6  # forecast, >= 2 components, 3 residual checks
    page.wait_for_function(f"document.querySelectorAll('div.plotly-graph-div .main-svg').length >= {n_divs}",
                           timeout=30_000)
    assert errors == []
    ctx.close()


def _write_covariate_csvs(folder: Path) -> tuple[Path, Path, Path]:
    """Monthly sales driven by a price, the price's next 6 months, and those months without the price."""
    rng = np.random.default_rng(2)
    t = np.arange(72)
    price = 5 + rng.normal(0, 1, t.size)
    sales = 100 + 0.5 * t + 8 * np.sin(2 * np.pi * t / 12) - 6 * price + rng.normal(0, 0.3, t.size)
    months = [f"{2000 + i // 12}-{i % 12 + 1:02d}-01" for i in range(78)]
    data, future, bad = folder / "priced_sales.csv", folder / "future_prices.csv", folder / "future_no_price.csv"
    data.write_text("month,price,sales\n" + "".join(f"{m},{p:.3f},{s:.3f}\n" for m, p, s in
                                                    zip(months, price, sales, strict=False)))
    future.write_text("month,price\n" + "".join(f"{m},{4 + i * 0.4:.2f}\n" for i, m in enumerate(months[72:])))
    bad.write_text("month,cost\n" + "".join(f"{m},1\n" for m in months[72:]))
    return data, future, bad


def test_a_covariate_chosen_on_data_forecasts_at_its_uploaded_future(server, browser, tmp_path):
    """Upload a CSV with a price column, pick it as a covariate, run a 4 s search, then on Results: a future
    file without the price is one line (no traceback), the right one draws the forecast and offers its CSV."""
    data, future, bad = _write_covariate_csvs(tmp_path)
    ctx = browser.new_context(viewport={"width": 1400, "height": 1400}, accept_downloads=True)
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    page.goto(server["url"])
    _wait_app(page, "Data")
    page.get_by_role("tab", name=re.compile("Upload a CSV")).click()
    page.locator(".st-key-data_upload [data-testid='stFileUploaderDropzoneInput']").set_input_files(str(data))
    expect(page.get_by_text(re.compile(r"Ready: .*priced_sales"))).to_be_visible(timeout=60_000)
    page.locator('[data-testid="stMultiSelect"]').filter(has_text="Covariates").locator("input").click()
    page.get_by_role("option", name="price").click()
    page.keyboard.press("Escape")
    expect(page.get_by_text(re.compile(r"Ready: .*covariates price"))).to_be_visible(timeout=30_000)
    page.locator(".st-key-data_use_upload button").click()
    expect(page.locator('[data-testid="stSidebar"]')).to_contain_text("covariates price", timeout=30_000)
    expect(page.get_by_text("Covariates known in advance:")).to_be_visible()
    _no_exceptions(page)
    _shot(page, "11-data-covariates")

    _nav(page, "Search", "Search")
    job_id = _search_to_results(page)
    expect(page.get_by_text(re.compile(r"No forecast past the data until the future values of price"))
           ).to_be_visible(timeout=30_000)
    drop = page.locator(f".st-key-results_future_file_{job_id} [data-testid='stFileUploaderDropzoneInput']")
    drop.set_input_files(str(bad))
    error = page.locator('[data-testid="stAlertContentError"]').filter(has_text="Cannot use future_no_price.csv")
    expect(error).to_be_visible(timeout=30_000)
    said = [line for line in error.inner_text().splitlines() if line.strip() not in ("", "block")]  # (its icon)
    assert len(said) == 1 and "'price'" in said[0], said
    _no_exceptions(page)
    drop.set_input_files(str(future))
    expect(error).to_have_count(0, timeout=30_000)
    download = page.get_by_role("button", name="Download the forecast (CSV)")
    expect(download).to_be_enabled(timeout=60_000)  # the classical members, when averaged, are fitted first
    _no_exceptions(page)
    download.scroll_into_view_if_needed()  # the screenshot shows the forecast, far down the page
    _shot(page, "12-results-covariate-forecast")
    with page.expect_download() as dl:
        download.click()
    got = dl.value.path().read_text().splitlines()
    assert got[0].startswith("month,forecast") and len(got) == 7, got  # the six months of the future file
    assert got[1].startswith("2006-01")
    ctx.close()

"""Make the README's pictures of the report: its top on Airline and Mauna Loa, seed-0 quick kernels.

    python -m bench.report_pictures [--data-dir ../shared/data/tsdl] [--baseline-budget 20]

For each series, the kernel the ``quick`` accuracy benchmark returned at seed 0
(``bench/results/accuracy/quick/kernels/``) is reported on the series at its published split
(``bench.common.load_series``), the HTML is opened in headless Chromium with
no network, and the top of the page is saved as ``docs/report-<series>.png`` (checked under
300 KB). The HTML itself goes to a temporary folder: it embeds Plotly (4 MB) and is remade
by the same command.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench.common import load_series
from evocov_core.compute.setup import prepare_process
from evocov_core.present.report_html import report_html
from evocov_core.runs.kernel_file import load_kernel_file

ROOT = Path(__file__).resolve().parents[1]
SERIES = {"01-airline": "Airline passengers", "03-mauna": "Mauna Loa CO₂"}
KERNELS = ROOT / "bench" / "results" / "accuracy" / "quick" / "kernels"
CHROMIUM = "/usr/bin/chromium"
MAX_BYTES = 300_000
#: Width of the page and height of the part shown: the title, the forecast and the comparison table.
VIEWPORT = {"width": 1040, "height": 1180}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data" / "tsdl")
    parser.add_argument("--baseline-budget", type=float, default=20.0, help="seconds for the GPSS baseline")
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    prepare_process()
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        for name, title in SERIES.items():
            ds = load_series(args.data_dir, name)
            kf = load_kernel_file(KERNELS / f"{name}__full__seed0.json")
            t0 = time.perf_counter()
            page_html = Path(tmp) / f"{name}.html"
            page_html.write_text(report_html(kf, ds, title=f"EvoCov report: {title} (TSDL {name})",
                                             baseline_budget=args.baseline_budget, seed=0), encoding="utf-8")
            ctx = browser.new_context(offline=True, viewport=VIEWPORT)
            page = ctx.new_page()
            page.goto(page_html.as_uri())
            n = page.locator("div.plotly-graph-div").count()
            page.wait_for_function(f"document.querySelectorAll('div.plotly-graph-div .main-svg').length >= {n}",
                                   timeout=60_000)
            time.sleep(1.0)  # let the figures finish drawing
            png = args.out / f"report-{name.split('-', 1)[1]}.png"
            page.screenshot(path=str(png), full_page=False)
            ctx.close()
            size = png.stat().st_size
            print(f"{png.relative_to(ROOT)}: {size / 1000:.0f} KB ({time.perf_counter() - t0:.0f} s)")
            if size > MAX_BYTES:
                raise SystemExit(f"{png} is {size} bytes, over {MAX_BYTES}: lower VIEWPORT")
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Results at a glance in headless Chromium: the verdict card in view at load, formulas that stay in
their column, a tree whose labels never overlap, at 1280×800 and 1920×1080.

The run shown is built from a stored kernel file (``tests/fixtures/widest-airline.json``: the kernel of
the test data with the widest tree, fitted on the bundled Airline series), so no search runs here. The
server and the browser are those of :mod:`test_browser`.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_browser import ARTIFACTS, _no_exceptions, _wait_app, browser, server  # noqa: F401 - fixtures

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "widest-airline.json"
RUN_ID = "widest000001"


def _store_run(data_dir: Path) -> str:
    """A finished search on Airline whose returned kernel is the fixture's, in the server's run store."""
    from evocov_core.data import load_bundled
    from evocov_core.runs.kernel_file import load_kernel_file
    from evocov_core.runs.store import RunStore
    from evocov_core.searches import preset
    from evocov_core.searches.common import EvalRecord, GenerationStats, RunStatus

    ds = load_bundled("airline")
    doc = __import__("json").loads(FIXTURE.read_text(encoding="utf-8"))
    fit = load_kernel_file(FIXTURE).to_fit(ds.n_train)
    store = RunStore(data_dir)
    if store.get_run(RUN_ID) is None:
        store.create_run(RUN_ID, kind="search", algorithm="evocov", dataset=ds, settings=preset("quick").to_dict(),
                         seed=0, label="widest kernel", status=RunStatus.RUNNING)
        store.add_generation(RUN_ID, GenerationStats(1, fit.bic, fit.bic, fit.bic, 1, 0, False, 1.0),
                             [EvalRecord.from_fit(fit, 1, 0, "fixture")], 1, doc)
        store.finish_run(RUN_ID, RunStatus.FINISHED, best_doc=doc, elapsed=1.0, n_evaluations=1,
                         extra={"n_screen_fits": 0})
    return RUN_ID


# Every visible formula box: does it overflow its column, and can it scroll when it is wider than itself?
_FORMULAS = """() => [...document.querySelectorAll("[class*='st-key-formula_']")]
  .filter(b => b.offsetParent !== null && b.getBoundingClientRect().width > 0)
  .map(b => {
    const col = b.closest('[data-testid="stColumn"]') || b.closest('[data-testid="stMain"]');
    const r = b.getBoundingClientRect(), c = col.getBoundingClientRect();
    const style = getComputedStyle(b);
    const inner = b.querySelector('.katex-display') || b;
    return {key: [...b.classList].find(k => k.startsWith('st-key-')), scroll: b.scrollWidth, client: b.clientWidth,
            overflow: style.overflowX, right: r.right, colRight: c.right, left: r.left, colLeft: c.left,
            innerScroll: inner.scrollWidth, innerClient: inner.clientWidth,
            innerOverflow: getComputedStyle(inner).overflowX,
            innerRight: inner.getBoundingClientRect().right};
  })"""

# The tree's label boxes as drawn (SVG text of the Plotly chart in the tree box).
_LABELS = """() => [...document.querySelectorAll("[class*='st-key-treebox_'] .textpoint text")]
  .map(t => { const r = t.getBoundingClientRect();
              return {text: t.textContent, x0: r.left, x1: r.right, y0: r.top, y1: r.bottom}; })
  .filter(b => b.x1 > b.x0)"""


def _overlaps(boxes: list[dict], tol: float = 0.5) -> list[tuple[str, str]]:
    out = []
    for i, p in enumerate(boxes):
        for q in boxes[i + 1:]:
            if (p["x0"] + tol < q["x1"] and q["x0"] + tol < p["x1"]
                    and p["y0"] + tol < q["y1"] and q["y0"] + tol < p["y1"]):
                out.append((p["text"], q["text"]))
    return out


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (1920, 1080)])
def test_results_at_a_glance_on_the_widest_kernel(server, browser, width, height):  # noqa: F811 - fixtures
    rid = _store_run(server["data_dir"])
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(60_000)
    page.goto(f"{server['url']}/results?run={rid}")
    _wait_app(page, "Results")
    card = page.locator(".st-key-results_verdict")
    card.wait_for(state="visible")
    # In the viewport at load, without scrolling.
    assert page.evaluate("() => window.scrollY") == 0
    box = card.bounding_box()
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= height, (box, height)
    assert "Who forecasts." in card.inner_text() and "The kernel." in card.inner_text()
    # The formulas: the simplified one and the stored tree's (opened), each inside its column.
    page.get_by_text("As evolved (the stored tree)").first.click()
    page.wait_for_function("() => document.querySelectorAll(\"[class*='st-key-formula_'] .katex\").length >= 2")
    page.wait_for_function("() => document.querySelectorAll(\"[class*='st-key-treebox_'] .textpoint text\")"
                           ".length > 10")
    time.sleep(0.5)
    formulas = page.evaluate(_FORMULAS)
    assert len(formulas) >= 2, formulas
    for f in formulas:
        assert f["right"] <= f["colRight"] + 1 and f["left"] >= f["colLeft"] - 1, f  # inside its column
        assert f["scroll"] <= f["client"] or f["overflow"] in ("auto", "scroll"), f
        # The formula itself (KaTeX's display block) scrolls inside the box, which it does not overflow.
        assert f["innerRight"] <= f["right"] + 1, f
        assert f["innerScroll"] <= f["innerClient"] or f["innerOverflow"] in ("auto", "scroll"), f
    # The widest kernel's formulas are wider than their column: they are scroll containers, not cut off.
    assert any(max(f["scroll"] - f["client"], f["innerScroll"] - f["innerClient"]) > 0 for f in formulas), formulas
    labels = page.evaluate(_LABELS)
    assert len(labels) > 10
    assert _overlaps(labels) == []
    _no_exceptions(page)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"glance-{width}x{height}.png"))
    page.close()

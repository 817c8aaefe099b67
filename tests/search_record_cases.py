"""The searches behind ``tests/fixtures/search_record.json``: fixed-count runs and what they returned.

The fixture was written once, before issue 56's changes (a front door, a scikit-learn estimator, the
split of :mod:`evocov_core.parallel`), by ``python tests/search_record_cases.py``, so that
``tests/test_search_record.py`` checks that the ``quick-fixed`` and ``paper`` searches still give the
same kernels and BICs, bit for bit (the floats' ``repr``). Rerun it only to add cases, never to accept a
change.

Each case is a preset with smaller counts (N, G, μ) and every other setting the preset's, seeded,
on the bundled Airline series, in a serial executor: about a second each. New grammar operations
that are off in these presets do not change what the runs draw.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

FIXTURE = Path(__file__).parent / "fixtures" / "search_record.json"

#: name -> (preset, algorithm, seed, overrides of the preset)
CASES: dict[str, tuple[str, str, int, dict]] = {
    "quick-fixed/evocov": ("quick-fixed", "evocov", 0, dict(population=24, generations=6, mu=4)),
    "quick-fixed/evocov-seed-3": ("quick-fixed", "evocov", 3, dict(population=16, generations=5, mu=4)),
    "quick-fixed/gpss": ("quick-fixed", "gpss", 0, dict(generations=2, base_kernels=("SE", "PER", "LIN"))),
    "paper/evocov": ("paper", "evocov", 0, dict(population=24, generations=6, mu=4)),
    "paper/evocov-seed-5": ("paper", "evocov", 5, dict(population=16, generations=5, mu=4)),
}


def _float(v: float | None) -> str | None:
    return None if v is None else repr(float(v))


def run_case(name: str) -> dict:
    """The record of one case: the returned kernel, its BIC and every kernel the run fitted."""
    from evocov_core.data import load_bundled
    from evocov_core.fitting.fits import SerialExecutor
    from evocov_core.search import preset, run_search, search_data

    preset_name, algorithm, seed, overrides = CASES[name]
    config = preset(preset_name, algorithm, **overrides)
    ds = load_bundled("airline")
    data = search_data(ds, config)
    with SerialExecutor(data, config.optim) as ex:
        result = run_search(data, config, seed=seed, executor=ex)
    best, low = result.best, result.best_bic
    assert best is not None and low is not None
    return {
        "preset": preset_name,
        "algorithm": algorithm,
        "seed": seed,
        "overrides": {k: list(v) if isinstance(v, tuple) else v for k, v in overrides.items()},
        "best": {"prefix": best.kernel.prefix, "canonical": best.kernel.canonical, "bic": _float(best.bic),
                 "theta": [_float(t) for t in best.theta], "log_noise": _float(best.log_noise)},
        "best_bic": {"prefix": low.kernel.prefix, "bic": _float(low.bic)},
        "n_evaluations": result.n_evaluations,
        "records": [[r.expression, _float(r.bic) if math.isfinite(r.bic) else str(r.bic)] for r in result.records],
    }


def write() -> None:
    import numpy as np
    import scipy

    from evocov_core.compute.setup import prepare_process

    prepare_process()
    doc = {"note": "written by tests/search_record_cases.py before issue 56's changes; do not regenerate to "
                   "accept a change",
           "numpy": np.__version__, "scipy": scipy.__version__,
           "cases": {name: run_case(name) for name in CASES}}
    FIXTURE.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write()

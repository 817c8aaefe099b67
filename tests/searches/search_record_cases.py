"""The searches behind ``tests/fixtures/search_record.json``: fixed-count runs and what they returned.

``tests/searches/test_search_record.py`` checks that the ``quick-fixed`` and ``paper`` searches still give the same
kernels and BICs, bit for bit (the floats' ``repr``). Each case is a preset with smaller counts (N, G, μ)
and every other setting the preset's, seeded, on the bundled Airline series, in a serial executor: a few
seconds each. New grammar operations that are off in these presets do not change what the runs draw.

**The arithmetic is pinned.** A genetic search amplifies a difference in the last bit of one fit into
another kernel, and the last bits depend on which code numpy and OpenBLAS pick for the processor: on
an AMD EPYC, OpenBLAS's Haswell kernels and numpy's AVX-512 loops gave another best kernel than an
Intel Xeon's SkylakeX kernels (issue 74). So the cases run in a child process whose environment
(:data:`PINNED`) picks the same code on every x86-64 processor with AVX2 and FMA (x86-64-v3: Intel from
Haswell, 2013, AMD from Zen, 2017): OpenBLAS's Haswell kernels, and numpy's x86-64-v3 loops. The child
reports the arithmetic it ran with (:func:`arithmetic`), the test checks it against the record's, and
``requirements-dev.txt`` pins the numpy, scipy and DEAP the record was made with.

Write the record again (``python tests/searches/search_record_cases.py --write``) only when the search is meant
to behave differently, or when a pinned library moves, and say so in the commit.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "search_record.json"
ROOT = Path(__file__).resolve().parents[2]

#: The environment that makes numpy and OpenBLAS pick the same code on any x86-64-v3 processor. Both
#: are read when the libraries load, hence a child process.
PINNED = {"OPENBLAS_CORETYPE": "Haswell", "NPY_ENABLE_CPU_FEATURES": "X86_V3", "NUMBA_CPU_NAME": "haswell"}

#: Cases on a short series: the first this many months of Airline, where the fused loop
#: (evocov_core/language/fused.py) evaluates the trees.
SHORT = 48

#: name -> (preset, algorithm, seed, overrides of the preset)
CASES: dict[str, tuple[str, str, int, dict]] = {
    "quick-fixed/evocov": ("quick-fixed", "evocov", 0, dict(population=24, generations=6, mu=4)),
    "quick-fixed/evocov-seed-3": ("quick-fixed", "evocov", 3, dict(population=16, generations=5, mu=4)),
    "quick-fixed/gpss": ("quick-fixed", "gpss", 0, dict(generations=2, base_kernels=("SE", "PER", "LIN"))),
    "paper/evocov": ("paper", "evocov", 0, dict(population=24, generations=6, mu=4)),
    "paper/evocov-seed-5": ("paper", "evocov", 5, dict(population=16, generations=5, mu=4)),
    "quick-fixed/evocov-short": ("quick-fixed", "evocov", 2, dict(population=16, generations=5, mu=4)),
}


def _float(v: float | None) -> str | None:
    return None if v is None else repr(float(v))


def run_case(name: str) -> dict:
    """The record of one case: the returned kernel, its BIC and every kernel the run fitted."""
    from evocov_core.data import Dataset, load_bundled
    from evocov_core.fitting.fits import SerialExecutor
    from evocov_core.searches import preset, run_search, search_data

    preset_name, algorithm, seed, overrides = CASES[name]
    config = preset(preset_name, algorithm, **overrides)
    ds = load_bundled("airline")
    if name.endswith("-short"):
        ds = Dataset.from_arrays(ds.x[:SHORT], ds.y[:SHORT], name=f"airline-{SHORT}")
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


def arithmetic() -> dict:
    """What decides this process's last bits: the library versions, numpy's enabled SIMD targets and each
    loaded OpenBLAS's version and kernels (after :func:`~evocov_core.compute.setup.prepare_process`)."""
    from importlib.metadata import version

    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    from threadpoolctl import threadpool_info

    blas = sorted({(i.get("internal_api", ""), i.get("version") or "", i.get("architecture") or "")
                   for i in threadpool_info() if i.get("user_api") == "blas"})
    return {"numpy": version("numpy"), "scipy": version("scipy"), "deap": version("deap"), "numba": version("numba"),
            "numpy_simd": [f for f in __cpu_dispatch__ if __cpu_features__.get(f)],
            "blas": [{"api": a, "version": v, "kernels": k} for a, v, k in blas]}


def machine_supports_pin() -> str:
    """Why this machine cannot run the pinned arithmetic; empty when it can (an x86-64-v3 processor)."""
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64"):
        return f"the pinned arithmetic is x86-64's; this machine is {platform.machine()}"
    from numpy._core._multiarray_umath import __cpu_features__

    if not __cpu_features__.get("X86_V3"):
        return "this processor lacks x86-64-v3 (AVX2, FMA), which the pinned arithmetic needs"
    return ""


def pinned_run(names: list[str] | None = None, timeout: float = 600) -> dict:
    """Run ``names`` (default every case) in a child process with the :data:`PINNED` environment.

    Returns
    -------
    dict
        ``{"arithmetic": arithmetic(), "cases": {name: run_case(name)}}`` from the child.
    """
    env = {**os.environ, **PINNED, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                                                os.environ.get("PYTHONPATH")]))}
    env.pop("NPY_DISABLE_CPU_FEATURES", None)  # numpy refuses both at once
    args = [sys.executable, str(Path(__file__).resolve()), "--json", *(names or [])]
    out = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    if out.returncode != 0:
        raise RuntimeError(f"the pinned search record's child failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout)


def _child(names: list[str]) -> None:
    from evocov_core.compute.setup import prepare_process

    prepare_process()
    doc = {"arithmetic": arithmetic(), "cases": {name: run_case(name) for name in (names or CASES)}}
    sys.stdout.write(json.dumps(doc))


def write() -> None:
    """Write the fixture from a pinned child (refuses on a machine that cannot pin)."""
    why = machine_supports_pin()
    if why:
        raise SystemExit(why)
    run = pinned_run()
    doc = {"note": "written by `python tests/searches/search_record_cases.py --write` in the pinned arithmetic "
                   "(tests/searches/search_record_cases.py's PINNED); write again only to record an intended change",
           "pinned": PINNED, "arithmetic": run["arithmetic"], "cases": run["cases"]}
    FIXTURE.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--json"]:
        _child(sys.argv[2:])
    elif sys.argv[1:] == ["--write"]:
        write()
    else:
        raise SystemExit("usage: python tests/searches/search_record_cases.py --write | --json [CASE ...]")

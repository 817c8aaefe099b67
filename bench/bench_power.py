"""Benchmark: LML + gradient of a kernel with ``power``, current reverse step against the previous one.

A profile of a budgeted search on Internet (n = 909; ``python -m bench.profile_search``) spent
about 42 % of its time in the ``power`` primitive: its forward step and its reverse step, which
computed a second power, ``th·base**(th − 1)``, and masked every array with ``np.where``. The
reverse step now takes ``th·z / base`` (z = base**th, already computed) and skips the masks
when the base is positive, as it is in the rational-quadratic form ``(1 + r²/(2αℓ²))**(−α)``.

Kernel: RQ written in the grammar, ``div(power(add(1, sq_dist(euc(x), hp0)), hp1))``
(``1 / (1 + r²/ℓ²)**α``) times an SE (``exp(-0.5·sq_dist)``), on irregular inputs (sorted
uniform draws; the Toeplitz fast path of regular grids would hide the cost) at n = 129, 490,
909. Contenders, timed in interleaved blocks in one run (median over repetitions):

``before``  :func:`evocov_core.fitting.gp.lml_and_grad` with the previous reverse step (kept as
            the reference in this script, swapped into the evaluator for its blocks);
``after``   the same with the evaluator as it is.

Before timing, the two gradients must agree to 1e-10 (relative to the largest entry).
Ratio = after / before (below 1: faster). Results also go to ``bench/results/bench_power.md``.

Run from the repository root: ``python -m bench.bench_power`` (about a minute).
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from bench._common import interleaved, limit_threads, report_ratio_table
from bench.common import md_table
from evocov_core.fitting.gp import lml_and_grad
from evocov_core.language import operators
from evocov_core.language.evaluate import Inputs
from evocov_core.language.kernel import Kernel

SIZES = (129, 490, 909)
KERNEL = Kernel(("multiply", "div", "power", "add", "1", "sq_dist", "euc", "x", "hp0", "hp1",
                 "exp", "multiply", "-0.5", "sq_dist", "euc", "x", "hp2"))
#: Log slot values: RQ lengthscale 0.2 and exponent α = 1.5, SE lengthscale 0.5.
THETA = np.log([0.2, 1.5, 0.5])
LOG_NOISE = -3.0


def _previous_power_rev(w: Any, i: int, ch: tuple[int, ...], a: Any) -> None:
    """The reverse step of ``power`` before this change (the reference)."""
    base = np.asarray(w.vals[ch[0]])
    z = np.asarray(w.vals[i])
    th = float(w.vals[ch[1]])
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        dzdw = np.where(base != 0, th * np.power(base, th - 1.0), 0.0)
        dlog = np.where(base > 0, z * np.log(np.where(base > 0, base, 1.0)), 0.0)
    if w.prog.has_param[ch[0]]:
        w.adjs[ch[0]] = a * dzdw
    gz = a * dlog
    w.grad[..., w.slot(ch[1])] += (operators._sum2(gz) if operators._is_mat(w.vals[i]) else gz) * th


@contextlib.contextmanager
def previous_reverse() -> Iterator[None]:
    """The evaluator with the previous reverse step of ``power``, restored on exit."""
    op = operators._OPS["power"]
    operators._OPS["power"] = operators._Op(op.forward, _previous_power_rev, reads_output=op.reads_output)
    try:
        yield
    finally:
        operators._OPS["power"] = op


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=7, help="interleaved repetitions (default 7)")
    ap.add_argument("--block", type=float, default=0.5, help="seconds per timed block (default 0.5)")
    args = ap.parse_args(argv)
    threads = limit_threads()

    rows, summary = [], []
    for n in SIZES:
        rng = np.random.default_rng(n)
        inputs = Inputs(np.sort(rng.uniform(1.0, 2.0, n))[:, None])
        y = rng.standard_normal(n)

        def after(inputs: Inputs = inputs, y: np.ndarray = y) -> tuple[float, np.ndarray, float]:
            return lml_and_grad(KERNEL, inputs, y, THETA, LOG_NOISE)

        def before(inputs: Inputs = inputs, y: np.ndarray = y) -> tuple[float, np.ndarray, float]:
            with previous_reverse():
                return lml_and_grad(KERNEL, inputs, y, THETA, LOG_NOISE)

        (v_a, g_a, _), (v_b, g_b, _) = after(), before()
        scale = float(np.max(np.abs(g_b)))
        if not (abs(v_a - v_b) <= 1e-10 * abs(v_b) and np.max(np.abs(g_a - g_b)) <= 1e-10 * scale):
            raise SystemExit(f"n={n}: the two reverse steps disagree (LML {v_a} vs {v_b}, "
                             f"gradient {g_a} vs {g_b})")
        t = interleaved({"before": before, "after": after}, args.reps, args.block)
        ratio = t["after"][1] / t["before"][1]
        rows.append([str(n), f"{1e3 * t['before'][1]:.2f}", f"{1e3 * t['after'][1]:.2f}", f"{ratio:.2f}"])
        summary.append(f"n{n}_ratio={ratio:.2f}")

    table = md_table(["n", "before, ms (CPU)", "after, ms (CPU)", "after / before"], rows, "rrrr")
    line = "power_grad " + " ".join(summary)
    report_ratio_table("bench_power", "LML + gradient of a kernel with power: previous and current reverse step",
                       __doc__, table, line, threads)


if __name__ == "__main__":
    main()

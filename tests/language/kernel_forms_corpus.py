"""The corpus behind ``tests/fixtures/kernel_forms.json``: kernels and what each printer made of them.

The fixture was written once by the code *before* the printers read the grammar's symbol records
(``python tests/language/kernel_forms_corpus.py``), so ``tests/language/test_kernel_forms.py`` checks that every form
of every kernel stayed byte-identical. Rerun it only to add kernels, never to accept a change.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "kernel_forms.json"
N_RANDOM = 300


def corpus() -> list[tuple[str, tuple[str, ...]]]:
    """``(origin, tokens)`` of the library's kernels and of seeded random trees."""
    from evocov_core.language.grammar import get_grammar, typed_grow
    from evocov_core.language.library import BASE_KERNELS, GPSS_PUBLISHED, WELL_KNOWN, compose

    out: list[tuple[str, tuple[str, ...]]] = []
    for name, make in WELL_KNOWN.items():
        out.append((f"well_known:{name}", make().tokens))
    for name, (n_slots, make) in BASE_KERNELS.items():
        out.append((f"base:{name}", make(*[f"hp{k}" for k in range(n_slots)]).tokens))
    for name, expr in GPSS_PUBLISHED.items():
        out.append((f"gpss:{name}", compose(expr).tokens))
    g = get_grammar(20, families=("changepoint", "changewindow"))
    rng = np.random.default_rng(20240530)
    for i in range(N_RANDOM):
        d_min = int(rng.integers(0, 4))
        d_max = d_min + int(rng.integers(0, 5))
        out.append((f"random:{i}", typed_grow(g, rng, d_min, d_max)))
    return out


def forms(tokens: tuple[str, ...], *, simplify: bool) -> dict:
    """Every printed form of one kernel, and its slot roles."""
    from evocov_core.fitting.optimize import slot_roles
    from evocov_core.language.kernel import Kernel
    from evocov_core.language.simplify import display_latex, to_sympy

    k = Kernel(tokens)
    d = {
        "prefix": k.prefix,
        "canonical": k.canonical,
        "infix": k.infix,
        "latex": k.latex,
        "sympy": str(to_sympy(k)),
        "stationary": k.is_stationary,
        "roles": {s: sorted(r) for s, r in slot_roles(k).items()},
    }
    if simplify:
        d["display_latex"] = display_latex(k)
    return d


def main() -> None:
    rows = [{"origin": origin, "tokens": list(tokens), **forms(tokens, simplify=not origin.startswith("random"))}
            for origin, tokens in corpus()]
    FIXTURE.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(rows)} kernels to {FIXTURE}")


if __name__ == "__main__":
    main()

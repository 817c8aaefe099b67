"""The cosine of a covariance, ``cos(w)``: an elementary operation in the family ``trig``, off by default.

One record in the grammar's table (its rules beside the others in ``language/operators.py``) is all it takes:
its value and gradient, the compiled steps, the three printers, the parser and the families' draws all read it.
cos of a covariance is not positive semi-definite in general; the PSD check refuses the trees that are not.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp
from test_evaluate import _check_jacobian

from evocov_core.language import compiled, library
from evocov_core.language.evaluate import Inputs, covariance, covariance_vjp
from evocov_core.language.grammar import FAMILIES, Cov, get_grammar, symbol, typed_grow
from evocov_core.language.kernel import Kernel
from evocov_core.language.simplify import to_sympy
from evocov_core.runs.kernel_file import FORMAT, VERSION, parse_kernel_file
from evocov_core.searches.presets import PRESETS, preset

SE = library.squared_exponential("hp0", "hp1")
COS_SE = Kernel(("cos", *SE.tokens))  # cos(θ0² exp(−r²/(2θ1²)))
# cos of a product of a constant and a periodic distance: scalar and matrix children both.
COS_MIX = Kernel(("add", "cos", "multiply", "0.5", "sq_dist", "spectral", "x", "hp0", "hp1", "cos", "hp", "hp2"))


def test_the_record_types_and_family():
    s = symbol("cos")
    assert (s.args, s.ret, s.kind, s.family) == ((Cov,), Cov, "nestable", "trig")
    assert "trig" in FAMILIES and s.forward is not None and s.reverse is not None


def test_value_is_the_cosine_of_the_child():
    x = np.linspace(0.0, 3.0, 11)[:, None]
    theta = np.log([1.3, 0.7])
    np.testing.assert_allclose(covariance(COS_SE, x, theta), np.cos(covariance(SE, x, theta)), rtol=1e-15)


@pytest.mark.parametrize("kernel", [COS_SE, COS_MIX], ids=["cos-se", "cos-mix"])
def test_gradient_matches_finite_differences(kernel):
    """d cos(w) = −sin(w) dw, through matrix and scalar children."""
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(0.0, 3.0, 9))[:, None]
    assert _check_jacobian(kernel, Inputs(x), rng.uniform(-0.5, 0.5, kernel.n_params))


def test_compiled_steps_give_the_walks_floats():
    """The compiled tree runs the record's rules: the walk's K and vector-Jacobian product, every bit."""
    rng = np.random.default_rng(1)
    inputs = Inputs(np.sort(rng.uniform(0.0, 3.0, 12))[:, None])
    for kernel in (COS_SE, COS_MIX):
        theta = rng.uniform(-0.5, 0.5, kernel.n_params)
        G = rng.standard_normal(inputs.shape)
        G = G + G.T
        fast = compiled.covariance_vjp(kernel, inputs, theta)
        assert fast is not None
        K1, vjp1 = fast
        K0, vjp0 = covariance_vjp(kernel, inputs, theta)
        assert K1.tobytes() == K0.tobytes() and vjp1(G).tobytes() == vjp0(G).tobytes()


def test_printed_in_infix_latex_and_sympy():
    assert COS_SE.infix.startswith("cos(") and r"\cos\left(" in COS_SE.latex
    assert Kernel(("multiply", "cos", "2", *SE.tokens)).infix.startswith("-0.416147*")  # folded: cos(2)
    assert to_sympy(COS_SE).has(sp.cos)


def test_parsed_from_a_kernel_file():
    doc = {"format": FORMAT, "version": VERSION, "expression": COS_SE.prefix,
           "hyperparameters": {"hp0": {"value": 1.5}, "hp1": {"value": 0.25}},
           "noise_variance": 0.01, "jitter": 0.0, "q": 3}
    assert COS_SE.prefix.startswith("cos(")
    assert parse_kernel_file(json.dumps(doc)).kernel == COS_SE


def test_drawn_only_with_the_family_and_off_by_default():
    plain, trig = get_grammar(20), get_grammar(20, families=("trig",))
    assert "cos" not in plain.nestable(Cov) and trig.nestable(Cov) == (*plain.nestable(Cov), "cos")
    rng = np.random.default_rng(2)
    assert not any("cos" in typed_grow(plain, rng, 3, 8) for _ in range(300))
    assert any("cos" in typed_grow(trig, rng, 3, 8) for _ in range(300))
    assert not any("trig" in preset(name, algo).families for name in PRESETS for algo in PRESETS[name])
    assert "cos" in preset("quick", families=("changepoint", "trig")).grammar.nestable(Cov)

"""The fused loop (evocov_core.language.fused): K, its reverse pass and the LML of short series in one call."""

from __future__ import annotations

import numpy as np
import pytest
from test_evaluate import ALL_NAMED, _mixed_kernels, _month_starts, _random_kernels

from evocov_core.fitting import gp
from evocov_core.fitting.gp import FitStatus, NumericalFailure
from evocov_core.language import fused, library
from evocov_core.language.evaluate import Inputs, covariance, covariance_vjp
from evocov_core.language.kernel import Kernel

ETS = [library.compose(e) for e in library.ETS_FORMS.values()]
PER_SE = library.compose(["+", "SE", ["*", "PER", "SE"]])


def _x(kind: str, rng: np.random.Generator) -> np.ndarray:
    return {"regular": np.linspace(1.0, 2.0, 19), "gappy": np.delete(np.linspace(1.0, 2.0, 30), [3, 4, 17]),
            "irregular": np.sort(rng.uniform(1.0, 2.0, 23)), "months": _month_starts(44),
            "2-d": rng.uniform(0.8, 2.4, size=(17, 2))}[kind]


def _close(a: np.ndarray, b: np.ndarray, rtol: float, what: str) -> None:
    """Equal to ``rtol`` of the larger entries, with the same entries finite."""
    assert a.shape == b.shape, what
    fin = np.isfinite(b)
    assert np.array_equal(np.isfinite(a), fin), what
    scale = max(1.0, float(np.max(np.abs(b[fin]), initial=0.0)))
    assert float(np.max(np.abs(a[fin] - b[fin]), initial=0.0)) <= rtol * scale, what


@pytest.mark.parametrize("kind", ["regular", "gappy", "irregular", "months", "2-d"])
def test_fused_trees_give_the_walks_values_and_gradients(kind):
    """K and the VJP of the fused loop are the walk's to rounding, on the lag row, on the full pair and in
    mixed geometry, for named kernels (change points, the state-space forms) and random trees."""
    rng = np.random.default_rng(71)
    x = _x(kind, rng)
    inputs = Inputs(x)
    d = 1 if x.ndim == 1 else x.shape[1]
    kernels = [*ALL_NAMED.values(), *ETS, *_random_kernels(120, 7100, d=d)]
    if d == 1:
        kernels += _mixed_kernels()
    done = 0
    for k in kernels:
        theta = rng.normal(0.0, 1.0, k.n_params)
        fast = fused.covariance_vjp(k, inputs, theta)
        if fast is None:
            assert "changewindow" in k.tokens, k.prefix  # the one operator the loop leaves to the walk
            continue
        K1, vjp1 = fast
        K0, vjp0 = covariance_vjp(k, inputs, theta)
        G = rng.standard_normal(K0.shape)
        G = G + G.T
        _close(K1, K0, 1e-12, k.prefix)
        _close(fused.covariance(k, inputs, theta), covariance(k, inputs, theta), 1e-12, k.prefix)
        if np.isfinite(K0).all():
            with np.errstate(all="ignore"):
                _close(vjp1(G), vjp0(G), 1e-10, k.prefix)
        done += 1
    assert done >= 0.9 * len(kernels)


def _general(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gp, "_fused_lml", lambda *args, **kwargs: None)


@pytest.mark.parametrize("kind", ["regular", "gappy", "irregular"])
def test_lml_and_gradient_are_the_general_paths(kind, monkeypatch):
    """One compiled call gives the LML and its gradient (slots and noise) of the general path."""
    rng = np.random.default_rng(5)
    x = _x(kind, rng)
    inputs = Inputs(x)
    y = np.sin(9.0 * x) + 0.1 * rng.standard_normal(x.size)
    cases = []
    for k in [*ALL_NAMED.values(), *ETS, *_random_kernels(60, 300), *_mixed_kernels()]:
        theta = rng.normal(0.0, 0.5, k.n_params)
        got = gp._fused_lml(k, inputs, y, theta, -2.0, want_grad=True)
        value = gp._fused_lml(k, inputs, y, theta, -2.0, want_grad=False)
        if got is not None:
            assert value is not None and value[0] == got[0]
            cases.append((k, theta, got))
    assert len(cases) >= 50
    _general(monkeypatch)
    for k, theta, (v1, g1) in cases:
        v0, g0, jitter = gp.lml_and_grad(k, inputs, y, theta, -2.0)
        assert jitter == 0.0
        assert abs(v1 - v0) <= 1e-9 * max(1.0, abs(v0)), k.prefix
        # K⁻¹'s conditioning scales the gradient's rounding (a few 1e-9 on the worst random tree).
        _close(g1, g0, 1e-7, k.prefix)


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(2)
    x = np.linspace(1.0, 3.0, 30)
    inputs = Inputs(x)
    y = np.sin(4.0 * x) + 0.1 * rng.standard_normal(x.size)
    for k in (PER_SE, *ETS[:3], *_mixed_kernels()[:3]):
        z = np.concatenate([rng.normal(0.0, 0.3, k.n_params), [-2.0]])
        got = gp._fused_lml(k, inputs, y, z[:-1], z[-1], want_grad=True)
        assert got is not None, k.prefix
        h = 1e-6
        fd = [(gp._fused_lml(k, inputs, y, (z + e)[:-1], (z + e)[-1], want_grad=False)[0]  # type: ignore[index]
               - gp._fused_lml(k, inputs, y, (z - e)[:-1], (z - e)[-1], want_grad=False)[0]) / (2 * h)  # type: ignore[index]
              for e in np.eye(z.size) * h]
        np.testing.assert_allclose(got[1], fd, rtol=1e-5, atol=1e-5, err_msg=k.prefix)


def test_what_the_loop_leaves_to_the_general_path(monkeypatch):
    """Large sets, cross-covariances, change windows and non-finite slots are not fused; the LML is the same."""
    rng = np.random.default_rng(3)
    big = np.sort(rng.uniform(1.0, 2.0, fused.FUSED_MAX_N + 1))
    assert fused.fused(PER_SE, Inputs(big)) is None
    x = np.linspace(1.0, 2.0, 20)
    assert fused.fused(PER_SE, Inputs(x, x)) is None
    window = ALL_NAMED["changewindow"]
    assert fused.fused(window, Inputs(x)) is None
    assert fused.fused(PER_SE, Inputs(x)) is not None
    y = np.cos(5.0 * x)
    huge = np.full(PER_SE.n_params, 800.0)  # θ = e^800 overflows: the general path decides
    assert gp._fused_lml(PER_SE, Inputs(x), y, huge, -2.0, want_grad=True) is None
    assert gp._fused_lml(PER_SE, Inputs(x), y, np.zeros(PER_SE.n_params), 800.0, want_grad=True) is None
    theta = rng.normal(0.0, 0.5, window.n_params)
    v1, g1, _ = gp.lml_and_grad(window, Inputs(x), y, theta, -2.0)
    _general(monkeypatch)
    v0, g0, _ = gp.lml_and_grad(window, Inputs(x), y, theta, -2.0)
    assert v1 == v0 and np.array_equal(g1, g0)


def test_a_failed_factorisation_takes_the_general_paths_ladder_and_reasons():
    """Not positive definite without jitter: the loop says so, and the general path's jitter ladder and
    failure reasons apply as before."""
    x = np.linspace(1.0, 2.0, 25)
    inputs = Inputs(x)
    y = np.sin(3.0 * x)
    negative = Kernel(("multiply", "-1", *library.squared_exponential("hp0", "hp1").tokens))
    assert gp._fused_lml(negative, inputs, y, np.zeros(2), -20.0, want_grad=True) is None
    with pytest.raises(NumericalFailure) as err:
        gp.lml_and_grad(negative, inputs, y, np.zeros(2), -20.0)
    assert err.value.status is FitStatus.CHOLESKY_FAILED
    # A smooth kernel with a noise far below its smallest eigenvalue: the fit needs jitter.
    smooth = library.squared_exponential("hp0", "hp1")
    theta = np.array([0.0, np.log(5.0)])
    assert gp._fused_lml(smooth, inputs, y, theta, -60.0, want_grad=True) is None
    _, _, jitter = gp.lml_and_grad(smooth, inputs, y, theta, -60.0)
    assert jitter > 0.0


def test_one_compiled_version_serves_every_caller():
    """Writable and read-only arrays, every geometry: the loop is compiled once (its signature is declared)."""
    from evocov_core.fitting._lml_loop import lml_grad
    from evocov_core.language._fused_loops import forward, reverse

    x = np.linspace(1.0, 2.0, 24)
    y = np.sin(x)
    y_ro = y.copy()
    y_ro.flags.writeable = False
    for inputs in (Inputs(x), Inputs(np.sort(np.random.default_rng(0).uniform(1, 2, 24)))):
        for k in (PER_SE, _mixed_kernels()[0], ETS[2]):
            for yy in (y, y_ro):
                assert gp._fused_lml(k, inputs, yy, np.zeros(k.n_params), -2.0, want_grad=True) is not None
    assert len(lml_grad.signatures) == len(forward.signatures) == len(reverse.signatures) == 1

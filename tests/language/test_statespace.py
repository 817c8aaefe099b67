"""The state-space operations (issue 55): local level, local trend and damped trend.

Each operation is checked against its definition (a double integral, computed by quadrature), for
positive semi-definiteness and for its gradient; the local-level kernel's forecast is checked
against the Kalman filter of the local-level state-space model (statsmodels), which is the same
model written the other way.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate

from evocov_core.fitting.gp import posterior
from evocov_core.language import library
from evocov_core.language.evaluate import covariance, covariance_diag, covariance_jacobian
from evocov_core.language.grammar import OPERATORS, check_tree, get_grammar
from evocov_core.language.kernel import Kernel
from evocov_core.language.simplify import display_latex
from evocov_core.runs.kernel_file import (
    VERSION,
    KernelFileError,
    dump_kernel_file,
    load_kernel_file,
    parse_kernel_file,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

LEVEL = library.local_level("hp0")
TREND = library.local_trend("hp0")
DAMPED = library.damped_trend("hp0", "hp1")
FORMS = {"level": LEVEL, "trend": TREND, "damped": DAMPED}


def _inputs(seed: int, n: int = 9) -> np.ndarray:
    # Some inputs before the first training input (t clipped to 0) and some past the training range.
    return np.sort(np.random.default_rng(seed).uniform(0.9, 2.6, size=(n, 1)), axis=0)


def _t(x: float) -> float:
    return max(x - 1.0, 0.0)


def _by_quadrature(name: str, t: float, s: float, tau: float = 1.0) -> float:
    """The covariance of each process from its definition, as a double integral of the covariance
    of its derivative (white noise for the Wiener process, a Wiener process for the integrated
    one, a stationary Ornstein-Uhlenbeck slope for the damped trend)."""
    if name == "level":
        return min(t, s)  # ∫₀^t ∫₀^s δ(u − v) du dv
    if name == "trend":
        inner = lambda v, u: min(u, v)  # noqa: E731
    else:
        inner = lambda v, u: math.exp(-abs(u - v) / tau)  # noqa: E731
    if t == 0.0 or s == 0.0:
        return 0.0

    def row(u: float) -> float:
        # Both integrands have a kink at v = u: split there so that quadrature stays exact.
        kink = [u] if 0.0 < u < s else None
        return integrate.quad(inner, 0.0, s, args=(u,), points=kink, epsabs=1e-14, epsrel=1e-12)[0]

    return integrate.quad(row, 0.0, t, epsabs=1e-14, epsrel=1e-12)[0]


@pytest.mark.parametrize("name", ["level", "trend", "damped"])
def test_closed_forms_match_their_definition(name):
    tau = 0.37
    theta = np.log([1.0, tau]) if name == "damped" else np.log([1.0])
    X = _inputs(0, n=6)
    K = covariance(FORMS[name], X, theta)
    for i in range(len(X)):
        for j in range(i, len(X)):
            want = _by_quadrature(name, _t(X[i, 0]), _t(X[j, 0]), tau)
            assert K[i, j] == pytest.approx(want, rel=1e-8, abs=1e-12), (name, i, j)


@pytest.mark.parametrize("tau", [1e-4, 0.05, 0.3, 3.0, 1e4])
def test_damped_trend_limits(tau):
    """Short time constants give a Wiener process of variance 2τ per unit time (the slope is white
    noise); long ones the integrated constant slope t·t' (a straight line of random slope)."""
    X = np.linspace(1.0, 2.0, 7)[:, None]
    K = covariance(DAMPED, X, np.log([1.0, tau]))
    assert np.all(np.isfinite(K))
    t = X[:, 0] - 1.0
    if tau <= 1e-4:
        np.testing.assert_allclose(K, 2 * tau * np.minimum.outer(t, t), rtol=1e-3, atol=1e-10)
    if tau >= 1e4:
        np.testing.assert_allclose(K, np.outer(t, t), rtol=1e-3, atol=1e-12)


@pytest.mark.parametrize("name", ["level", "trend", "damped"])
def test_positive_semi_definite(name):
    X = np.concatenate([np.linspace(0.8, 2.0, 60), np.linspace(2.0, 3.0, 25)])[:, None]
    for tau in (0.01, 0.2, 5.0):
        theta = np.log([1.3, tau]) if name == "damped" else np.log([1.3])
        K = covariance(FORMS[name], X, theta)
        np.testing.assert_allclose(K, K.T, atol=1e-13)
        w = np.linalg.eigvalsh(K)
        assert w.min() >= -1e-9 * max(1.0, w.max()), (name, tau, w.min())


@pytest.mark.parametrize("name", ["level", "trend", "damped"])
def test_diagonal_matches_the_matrix(name):
    X = _inputs(3)
    theta = np.log([0.7, 0.25]) if name == "damped" else np.log([0.7])
    np.testing.assert_allclose(covariance_diag(FORMS[name], X, theta),
                               np.diag(covariance(FORMS[name], X, theta)), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("expr", [["+", "C", "W"], ["+", "LIN", "W", "IW"], ["+", "C", "W", "DT"],
                                  ["*", ["+", "C", "W", "DT"], "SF"], ["*", "DT", "DT"]])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gradients_match_finite_differences(expr, seed):
    kernel = library.compose(expr)
    rng = np.random.default_rng(seed)
    theta = rng.uniform(-1.5, 1.5, size=kernel.n_params)
    # τ across the series-expansion switch (t/τ < 0.1) and well above it.
    X = np.concatenate([_inputs(seed, n=5), [[1.0], [1.004], [1.01]]])
    K, J = covariance_jacobian(kernel, X, theta)
    h = 1e-6
    for p in range(kernel.n_params):
        e = np.zeros_like(theta)
        e[p] = h
        fd = (covariance(kernel, X, theta + e) - covariance(kernel, X, theta - e)) / (2 * h)
        np.testing.assert_allclose(J[..., p], fd, rtol=1e-6, atol=1e-9 * max(1.0, np.abs(K).max()),
                                   err_msg=f"{expr} slot {p}")


def test_damped_gradient_near_zero_time():
    """At t/τ below the series switch the derivative in log τ comes from the series, without the
    cancellation of ``e^(−u) − 1 + u``: checked against 50-digit arithmetic (finite differences
    cannot: K there is ``t·t'`` to 15 digits and its change with τ sits in the last ones)."""
    import mpmath as mp

    def k(t, s, log_tau):
        tau = mp.e ** log_tau
        phi = lambda u: mp.e ** (-u) - 1 + u  # noqa: E731
        return tau ** 2 * (phi(t / tau) + phi(s / tau) - phi(abs(t - s) / tau))

    X = np.array([[1.0], [1.0 + 1e-7], [1.0 + 1e-4], [1.05], [1.9]])
    _, J = covariance_jacobian(DAMPED, X, np.log([1.0, 2.0]))
    with mp.workdps(50):
        t = [mp.mpf(float(x)) - 1 for x in X[:, 0]]
        for i in range(1, len(X)):
            for j in range(i, len(X)):
                want = float(mp.diff(lambda lt, a=t[i], b=t[j]: k(a, b, lt), mp.log(2)))
                assert J[i, j, 1] == pytest.approx(want, rel=1e-9), (i, j)


def test_forms_obey_the_typing_rules_and_print():
    g = get_grammar(10, families=("statespace",))
    for name, expr in library.ETS_FORMS.items():
        k = library.compose(expr)
        check_tree(k.tokens, n_hyper=g.n_hyper)  # raises on a typing or nesting error
        assert "W(x,x')" in k.infix or "IW(x,x')" in k.infix, name
        assert display_latex(k), name
    assert {s.name for s in OPERATORS if s.family == "statespace"} == {"wiener", "iwiener", "damped"}


def test_statespace_off_by_default_and_nowhere_in_default_draws():
    assert not get_grammar(10).families
    names = {s.name for s in get_grammar(10).symbols()}
    assert names.isdisjoint({"wiener", "iwiener", "damped"})
    assert {"wiener", "iwiener", "damped"} <= {s.name for s in get_grammar(10, families=("statespace",)).symbols()}


# --- the local level is the local-level state-space model ----------------------------------------------


def test_local_level_forecast_is_the_kalman_filter():
    """``C + W`` on a regular grid is the local-level model ``y_i = μ_i + ε_i``, ``μ_{i+1} = μ_i + η_i``
    with ``μ_0 ~ N(0, c²)``, ``var η = s²Δ`` and ``var ε`` the noise: the GP's forecast (mean, and the
    variance of a new observation) must equal the Kalman filter's."""
    import statsmodels.api as sm

    # US quarterly inflation (statsmodels' macrodata): any series will do; Nile is reserved for independent checks.
    y = sm.datasets.macrodata.load_pandas().data["infl"].to_numpy(dtype=float)
    y = (y - y.mean()) / y.std()
    n, h = len(y), 12
    step = 1.0 / (n - 1)
    X = (1.0 + step * np.arange(n))[:, None]
    X_new = (1.0 + step * np.arange(n, n + h))[:, None]
    kernel = library.compose(["+", "C", "W"])
    c2, s2, noise = 0.8, 4.0, 0.5  # initial level variance, level variance per unit x, irregular variance
    theta = np.log([math.sqrt(c2), math.sqrt(s2)])
    post = posterior(kernel, X, y, theta, math.log(noise), X_new, jitter=0.0)

    model = sm.tsa.UnobservedComponents(y, level="llevel")
    model.ssm.initialize_known(np.zeros(1), np.array([[c2]]))
    res = model.filter(np.array([noise, s2 * step]))  # params: sigma2.irregular, sigma2.level
    fc = res.get_forecast(h)
    np.testing.assert_allclose(post.mean, fc.predicted_mean, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(post.var + noise, fc.var_pred_mean, rtol=1e-6, atol=1e-9)
    # Simple exponential smoothing's forecast: flat at the filtered last level.
    assert np.ptp(post.mean) < 1e-9


# --- kernel files ----------------------------------------------------------------------------------------


def test_version_one_file_still_loads(tmp_path):
    """A file written before version 2 (a real one, from bench/results/corpus/quick-39-combine, in the git history at
    27df7e1) loads, and written again it becomes version 2 with the same kernel and values."""
    path = FIXTURES / "kernel_v1.json"
    doc = json.loads(path.read_text())
    assert doc["version"] == 1
    kf = load_kernel_file(path)
    assert kf.kernel.n_params == len(doc["hyperparameters"])
    for s, t in zip(kf.kernel.slots, kf.theta, strict=True):
        assert math.exp(t) == pytest.approx(doc["hyperparameters"][s]["value"], rel=1e-12)
    X = np.linspace(1.0, 2.2, 20)[:, None]
    assert np.all(np.isfinite(covariance(kf.kernel, X, np.array(kf.theta))))
    again = dict(doc, version=VERSION)
    kf2 = parse_kernel_file(dump_kernel_file(again))
    assert kf2.kernel.tokens == kf.kernel.tokens and kf2.theta == kf.theta


def test_statespace_kernel_needs_version_two():
    doc = json.loads((FIXTURES / "kernel_v1.json").read_text())
    kernel = library.compose(["+", "C", "W", "DT"])
    doc.update(expression=kernel.prefix, hyperparameters={s: 0.5 for s in kernel.slots}, q=kernel.q)
    assert parse_kernel_file(json.dumps(dict(doc, version=2))).kernel.tokens == kernel.tokens
    with pytest.raises(KernelFileError, match="operation 'damped' needs a version-2 file; this one is version 1"):
        parse_kernel_file(json.dumps(dict(doc, version=1)))


def test_kernel_tokens_are_hashable_and_immutable():
    assert isinstance(LEVEL, Kernel) and hash(LEVEL) == hash(library.local_level("hp0"))


# --- the report's words --------------------------------------------------------------------------------


def test_decomposition_names_level_and_damped_trend():
    """The report says what the state-space terms are, in the data's time units."""
    from evocov_core.present.decompose import DAMPING_SPANS, decompose

    kernel = library.compose(["+", "C", "W", "DT"])  # slots: C hp0, W hp1, DT hp2 (amplitude), hp3 (θτ)
    rng = np.random.default_rng(0)
    n = 60
    X = np.linspace(1.0, 2.0, n)[:, None]
    y = np.cumsum(rng.normal(size=n)) / 4
    y = (y - y.mean()) / y.std()
    tau = 0.1  # model units; the data span 10 years per model unit
    theta = np.log([0.5, 1.0, 0.8, tau])
    comps, _ = decompose(kernel, theta, math.log(0.05), X, y, X, x_scale=10.0, x_offset=1990.0,
                         x_unit="years", y_unit="units")
    sentences = [c.sentence for c in comps]
    assert any(s.startswith("a level that wanders as a random walk") for s in sentences), sentences
    damped = [s for s in sentences if "damps out" in s]
    assert damped == [f"a trend that damps out within about {DAMPING_SPANS * tau * 10:.1f} years"] or \
        damped[0].startswith(f"a trend that damps out within about {DAMPING_SPANS * tau * 10:.1f} years,"), damped

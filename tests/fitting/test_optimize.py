"""Hyperparameter fitting: recovery, determinism, inheritance, failures, budgets, slot roles."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from evocov_core.data import Dataset
from evocov_core.fitting import optimize
from evocov_core.fitting.gp import NumericalFailure
from evocov_core.fitting.metrics import FitData, metric_value
from evocov_core.fitting.optimize import (
    NUMERIC_ERRORS,
    FitResult,
    FitStatus,
    HyperSpace,
    OptimConfig,
    Start,
    fit_kernel,
    init_ranges,
    powell_budget,
    slot_roles,
)
from evocov_core.language import library
from evocov_core.language.evaluate import covariance
from evocov_core.language.kernel import Kernel
from evocov_core.runs.kernel_file import KernelFile
from evocov_core.runs.scores import Scores

SE = library.squared_exponential()
TRUE_LENGTHSCALE = 0.1
TRUE_NOISE = 0.01


@pytest.fixture(scope="module")
def se_data():
    """n = 200 points in [1, 2] drawn from a GP with SE(amplitude 1, lengthscale 0.1) plus noise 0.01."""
    rng = np.random.default_rng(2024)
    X = np.sort(rng.uniform(1.0, 2.0, 200))[:, None]
    K = covariance(SE, X, np.log([1.0, TRUE_LENGTHSCALE])) + TRUE_NOISE * np.eye(200)
    y = np.linalg.cholesky(K) @ rng.standard_normal(200)
    return FitData.from_arrays(X, y)


@pytest.fixture(scope="module")
def small_data():
    """A small data set with a train/test split in original units, for cheap fits."""
    rng = np.random.default_rng(7)
    x = np.sort(rng.uniform(0, 10, 40))
    y = 20 + 3 * np.sin(1.3 * x) + 0.2 * rng.standard_normal(40)
    return FitData.from_dataset(Dataset.from_arrays(x, y))


def _same(a: FitResult, b: FitResult) -> bool:
    """Equal in every field except the wall time."""
    return dataclasses.replace(a, seconds=0.0) == dataclasses.replace(b, seconds=0.0)


# --- recovery ---------------------------------------------------------------------------------------


def test_lbfgs_recovers_lengthscale(se_data):
    """L-BFGS-B on LML recovers the generating lengthscale within 20 %."""
    r = fit_kernel(SE, se_data, OptimConfig(), np.random.default_rng(0))
    assert r.ok and r.status == "ok" and r.reason == ""
    ell = math.exp(r.theta[1])
    assert abs(ell - TRUE_LENGTHSCALE) / TRUE_LENGTHSCALE < 0.2, ell
    assert 0.5 * TRUE_NOISE < r.noise_variance < 2 * TRUE_NOISE


def test_powell_recovers_lengthscale(se_data):
    """Budgeted Powell (larger ref_fun_call) recovers the lengthscale within 20 % and stays in budget."""
    config = OptimConfig(method="powell", ref_fun_call=500)
    r = fit_kernel(SE, se_data, config, np.random.default_rng(0))
    assert r.ok
    ell = math.exp(r.theta[1])
    assert abs(ell - TRUE_LENGTHSCALE) / TRUE_LENGTHSCALE < 0.2, ell
    assert r.n_evals <= powell_budget(500, se_data.n)


def test_fit_result_fields(small_data):
    """FitResult: lml at theta, BIC = −2 lml + q log n, q and n, a finite test RMSE in original units."""
    k = library.compose(["+", "SE", "C"])
    r = fit_kernel(k, small_data, OptimConfig(n_restarts=2), np.random.default_rng(1))
    assert r.ok and r.q == k.q == 4 and r.n == small_data.n
    z = r.z
    assert len(r.theta) == k.n_params and z[-1] == r.log_noise
    assert r.lml == pytest.approx(metric_value("lml", k, small_data, z), rel=1e-12)
    assert r.metric_value == r.lml and r.metric == "lml"
    assert r.bic == pytest.approx(-2 * r.lml + r.q * math.log(r.n), rel=1e-12)
    assert r.test_rmse is not None and math.isfinite(r.test_rmse)
    lo, hi = OptimConfig().space.lower_upper(k.n_params)
    assert np.all(z >= lo) and np.all(z <= hi)
    assert r.start() == Start(r.theta, r.log_noise)


@pytest.mark.parametrize("metric", ["loocv", "posterior_lml", "sopl", "rmse"])
def test_other_metrics_report_their_value(metric, small_data):
    """With metric m, metric_value is m at the returned point; lml is still the LML there."""
    config = OptimConfig(metric=metric, ref_fun_call=3, n_restarts=1)
    r = fit_kernel(SE, small_data, config, np.random.default_rng(2))
    assert r.ok and r.metric == metric
    assert r.metric_value == pytest.approx(metric_value(metric, SE, small_data, r.z), rel=1e-9)
    assert r.lml == pytest.approx(metric_value("lml", SE, small_data, r.z), rel=1e-12)


# --- determinism and inheritance --------------------------------------------------------------------


@pytest.mark.parametrize("method", ["lbfgs", "powell"])
def test_same_seed_same_result(method, small_data):
    """The same seed gives an identical FitResult (wall time aside); another seed may differ."""
    k = library.compose(["+", "SE", ["*", "PER", "C"]])
    config = OptimConfig(method=method, ref_fun_call=5, n_restarts=2)
    a = fit_kernel(k, small_data, config, np.random.default_rng(3))
    b = fit_kernel(k, small_data, config, np.random.default_rng(3))
    assert _same(a, b)


@pytest.mark.parametrize(
    ("method", "metric"),
    [("lbfgs", "lml"), ("lbfgs", "loocv"), ("powell", "lml"), ("powell", "loocv"), ("powell", "rmse"),
     ("powell", "sopl")],
)
def test_inherited_start_never_worse(method, metric, small_data):
    """A Start equal to a good optimum gives a metric at least as good as the start (the exact start is tried)."""
    k = library.compose(["+", "SE", ["*", "PER", "C"]])
    config = OptimConfig(metric=metric, method=method, ref_fun_call=3, n_restarts=2, max_evals=20)
    first = fit_kernel(k, small_data, OptimConfig(n_restarts=2), np.random.default_rng(4))
    start = first.start()
    at_start = metric_value(metric, k, small_data, first.z)
    again = fit_kernel(k, small_data, config, np.random.default_rng(5), start=start)
    assert again.ok
    if metric == "rmse":
        assert again.metric_value <= at_start + 1e-12
    else:
        assert again.metric_value >= at_start - 1e-9 * abs(at_start)


def test_partial_start(small_data):
    """NaN entries of a Start are drawn anew; known ones are used exactly in the first start."""
    k = library.compose(["+", "SE", "C"])
    r = fit_kernel(k, small_data, OptimConfig(n_restarts=1, max_evals=2),
                   np.random.default_rng(6), start=Start((0.0, math.nan, 0.5), math.log(0.1)))
    assert r.ok and r.n_evals >= 1


def test_wrong_start_length_is_a_caller_error(small_data):
    """A Start with the wrong number of slot values is a programming error, refused loudly (not a
    numerical failure to hide in a penalised fitness)."""
    with pytest.raises(ValueError, match="start has 1 slot values but the kernel has 2"):
        fit_kernel(SE, small_data, OptimConfig(), np.random.default_rng(0), start=Start((0.0,), 0.0))


# --- failures ---------------------------------------------------------------------------------------

ALWAYS_NON_FINITE = {
    "sqrt(-1)": Kernel(("sqrt", "-1")),
    "1/0": Kernel(("div", "add", "1", "-1")),
    "theta*sqrt(-1)": Kernel(("multiply", "hp", "hp0", "sqrt", "-1")),
    "exp(1/r2)": Kernel(("exp", "div", "sq_dist", "euc", "x", "hp0")),  # 1/0 on the diagonal
}


@pytest.mark.parametrize("method", ["lbfgs", "powell"])
@pytest.mark.parametrize("name", sorted(ALWAYS_NON_FINITE))
def test_always_failing_kernel_returns_failed_result(name, method, small_data):
    """A kernel that can never be evaluated gives status != ok, a reason and BIC = +inf, without raising."""
    k = ALWAYS_NON_FINITE[name]
    r = fit_kernel(k, small_data, OptimConfig(method=method, ref_fun_call=5), np.random.default_rng(0))
    assert r.status == "non_finite" and not r.ok
    assert r.reason
    assert r.bic == math.inf
    assert r.q == k.q and r.n_evals >= 1
    assert all(math.isnan(t) for t in r.theta) and r.test_rmse is None


@pytest.mark.parametrize("method", ["lbfgs", "powell"])
def test_negative_kernel_cholesky_failure(method, small_data):
    """−θ·11ᵀ with θ ≥ e² and tiny noise is never positive definite: status 'cholesky_failed'."""
    space = HyperSpace(bounds=(2.0, 10.0), noise_bounds=(math.log(1e-6), math.log(1e-3)))
    config = OptimConfig(method=method, ref_fun_call=5, space=space)
    r = fit_kernel(Kernel(("multiply", "-1", "hp", "hp0")), small_data, config, np.random.default_rng(0))
    assert r.status == "cholesky_failed"
    assert "not positive definite" in r.reason
    assert r.bic == math.inf


@pytest.mark.parametrize("method", ["lbfgs", "powell"])
@pytest.mark.parametrize("error", [ValueError("bug"), TypeError("bug"), KeyError("bug")])
def test_a_programming_error_in_a_fit_propagates(method, error, small_data, monkeypatch):
    """A bug inside the objective raises out of fit_kernel instead of becoming a failed status."""

    def broken(*_args, **_kwargs):
        raise error

    monkeypatch.setattr(optimize, "loss_and_grad", broken)
    monkeypatch.setattr(optimize, "loss", broken)
    with pytest.raises(type(error), match="bug"):
        fit_kernel(SE, small_data, OptimConfig(method=method, ref_fun_call=5), np.random.default_rng(0))


def test_a_programming_error_after_the_search_propagates(small_data, monkeypatch):
    """The final LML at the best point is inside the catch too: a bug there raises as well."""

    def broken(*_args, **_kwargs):
        raise ValueError("bug in lml")

    monkeypatch.setattr(optimize, "gp_lml", broken)
    with pytest.raises(ValueError, match="bug in lml"):
        fit_kernel(SE, small_data, OptimConfig(ref_fun_call=5), np.random.default_rng(0))


@pytest.mark.parametrize("method", ["lbfgs", "powell"])
@pytest.mark.parametrize(("error", "status"), [
    (NumericalFailure(FitStatus.CHOLESKY_FAILED, "not positive definite"), FitStatus.CHOLESKY_FAILED),
    (np.linalg.LinAlgError("singular matrix"), FitStatus.OPTIMISER_FAILED),
    (FloatingPointError("K⁻¹ has a non-positive diagonal"), FitStatus.OPTIMISER_FAILED),
    (OverflowError("math range error"), FitStatus.OPTIMISER_FAILED),
])
def test_a_numerical_error_in_a_fit_is_a_failed_status(method, error, status, small_data, monkeypatch):
    """Each kind of numerical failure the fit catches gives its status and its message as the reason."""
    assert isinstance(error, NUMERIC_ERRORS)

    def failing(*_args, **_kwargs):
        raise error

    monkeypatch.setattr(optimize, "loss_and_grad", failing)
    monkeypatch.setattr(optimize, "loss", failing)
    r = fit_kernel(SE, small_data, OptimConfig(method=method, ref_fun_call=5), np.random.default_rng(0))
    assert r.status is status and not r.ok
    assert r.reason == str(error)
    assert r.bic == math.inf and r.n_evals >= 1


def test_a_nan_kernel_is_a_failed_status_with_a_reason(small_data):
    """A kernel whose covariance is NaN everywhere (0·∞) is a NON_FINITE fit, never an exception."""
    k = Kernel(("multiply", "hp", "hp0", "div", "add", "1", "-1"))  # θ · 1/0
    r = fit_kernel(k, small_data, OptimConfig(ref_fun_call=5), np.random.default_rng(0))
    assert r.status is FitStatus.NON_FINITE and "NaN or infinite" in r.reason and r.bic == math.inf


def test_fit_status_values_are_the_stored_strings():
    """The enum's values are the strings written to the store, CSV and JSON before it existed."""
    assert [s.value for s in FitStatus] == ["ok", "non_finite", "cholesky_failed", "optimiser_failed",
                                            "screened_out"]
    assert json.dumps({"status": FitStatus.CHOLESKY_FAILED}) == '{"status": "cholesky_failed"}'
    assert f"{FitStatus.OK}" == str(FitStatus.OK) == "ok" == FitStatus.OK


def test_fit_result_status_given_as_a_string_becomes_the_member(small_data):
    r = fit_kernel(SE, small_data, OptimConfig(), np.random.default_rng(0))
    assert r.status is FitStatus.OK
    failed = dataclasses.replace(r, status="cholesky_failed")
    assert failed.status is FitStatus.CHOLESKY_FAILED and not failed.ok
    with pytest.raises(ValueError, match="not a valid FitStatus"):
        dataclasses.replace(r, status="fine")


def test_kernel_file_to_fit():
    """A kernel file's values and stored scores; absent scores are NaN / +inf / None, n from the caller."""
    kf = KernelFile(SE, (0.1, -2.0), -4.0, 1e-8, None,
                    Scores({"metric": "loocv", "metric_value": 3.5, "lml": 2.0, "bic": -1.5, "test_rmse": 0.25,
                            "n_train": 30}))
    f = kf.to_fit(n=99)
    assert (f.kernel, f.theta, f.log_noise, f.jitter, f.status, f.reason) == (SE, (0.1, -2.0), -4.0, 1e-8,
                                                                               FitStatus.OK, "")
    assert (f.metric, f.metric_value, f.lml, f.bic, f.q, f.n, f.n_evals, f.test_rmse) == (
        "loocv", 3.5, 2.0, -1.5, SE.q, 30, 0, 0.25)
    bare = KernelFile(SE, (0.1, -2.0), -4.0).to_fit(n=99)
    assert bare.metric == "lml" and math.isnan(bare.lml) and bare.bic == math.inf
    assert bare.n == 99 and bare.test_rmse is None and bare.ok


# --- Powell budget ------------------------------------------------------------------------------------


def test_powell_budget_formula():
    """max_fun_call = ref_fun_call · 350² / n², at least 1."""
    assert powell_budget(300, 350) == 300
    assert powell_budget(300, 700) == 75
    assert powell_budget(300, 175) == 1200
    assert powell_budget(1, 10**6) == 1


@pytest.mark.parametrize("ref", [1, 5, 20])
def test_powell_respects_budget(ref, small_data):
    """Powell (with restarts and out-of-box penalties) never spends more than its budget."""
    k = library.compose(["+", "SE", ["*", "PER", "C"]])
    budget = powell_budget(ref, small_data.n)
    for metric in ("lml", "sopl"):
        r = fit_kernel(k, small_data, OptimConfig(metric=metric, method="powell", ref_fun_call=ref),
                       np.random.default_rng(ref))
        # Powell restarts every time it stops, until the budget is spent, and never beyond it.
        assert r.n_evals == budget, metric


def test_lbfgs_respects_max_evals(small_data):
    """L-BFGS-B: at most max_evals evaluations per start, plus the n_screen scored starts
    (OptimConfig docstring)."""
    k = library.compose(["+", "SE", ["*", "PER", "C"]])
    for n_screen in (0, 6):
        for max_evals in (2, 5, 10):
            for seed in range(5):
                config = OptimConfig(n_restarts=2, max_evals=max_evals, n_screen=n_screen)
                r = fit_kernel(k, small_data, config, np.random.default_rng(seed))
                assert r.n_evals <= n_screen + config.n_restarts * max_evals, (max_evals, seed, r.n_evals)
                assert r.n_evals > n_screen


# --- slot roles and ranges ---------------------------------------------------------------------------


def test_slot_roles_library():
    """Roles of the Table 1 kernels: value, lengthscale, periodic lengthscale, frequency, exponent, shift, scale."""
    assert slot_roles(library.squared_exponential()) == {"hp0": {"value"}, "hp1": {"lengthscale"}}
    assert slot_roles(library.periodic()) == {"hp0": {"value"}, "hp1": {"periodic_lengthscale"},
                                              "hp2": {"frequency"}}
    assert slot_roles(library.linear()) == {"hp0": {"shift"}, "hp1": {"scale"}}
    assert slot_roles(library.rational_quadratic()) == {"hp0": {"value"}, "hp1": {"lengthscale"},
                                                        "hp2": {"value", "exponent"}}
    assert slot_roles(library.gamma_exponential())["hp2"] == {"exponent"}
    assert slot_roles(library.white_noise()) == {}


def test_slot_roles_shared_and_spectral_dot():
    """A slot used in several places collects every role; spectral inside dot_prod is a frequency."""
    k = Kernel(("add", "dot_prod", "spectral", "x", "hp3", "hp1", "hp2",
                "power", "sq_dist", "spectral", "x", "hp1", "hp3", "hp2"))
    assert slot_roles(k) == {"hp1": {"shift", "frequency"}, "hp2": {"scale", "exponent"},
                             "hp3": {"frequency", "periodic_lengthscale"}}


def test_init_ranges(small_data):
    """Start ranges follow the data's median spacing h: lengthscales [log h, log 10], frequencies up to π/h."""
    r = init_ranges(small_data)
    x = np.sort(small_data.X[:, 0])
    h = float(np.median(np.diff(x)))
    assert r["lengthscale"] == pytest.approx((math.log(h), math.log(10.0)))
    assert r["frequency"] == pytest.approx((math.log(math.pi), math.log(math.pi / h)))
    for lo, hi in r.values():
        assert lo < hi


def test_init_ranges_never_turn_over_on_inputs_far_apart():
    """Inputs 100 model units apart (a kernel file's units on other data, as compare refits its
    baselines there): every range still has its low end below its high end, so starts can be drawn."""
    X = 1.0 + 100.0 * np.arange(20.0)[:, None]
    r = init_ranges(FitData.from_arrays(X, np.sin(np.arange(20.0))))
    assert r["lengthscale"][0] == pytest.approx(math.log(100.0))
    for lo, hi in r.values():
        assert lo < hi
    rng = np.random.default_rng(0)
    assert all(lo <= rng.uniform(lo, hi) <= hi for lo, hi in r.values())


# --- configuration -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"metric": "mse"}, "unknown metric"),
        ({"method": "adam"}, "unknown method"),
        ({"method": "lbfgs", "metric": "sopl"}, "needs a gradient"),
        ({"method": "lbfgs", "metric": "rmse"}, "needs a gradient"),
        ({"method": "lbfgs", "metric": "posterior_lml"}, "needs a gradient"),
        ({"n_restarts": 0}, "n_restarts"),
        ({"max_evals": 1}, "max_evals"),
        ({"ref_fun_call": 0}, "ref_fun_call"),
        ({"sigma_theta": -0.1}, "sigma_theta"),
        ({"init": "random"}, "init"),
    ],
)
def test_optim_config_validation(kwargs, message):
    """Invalid settings are refused when the config is built."""
    with pytest.raises(ValueError, match=message):
        OptimConfig(**kwargs)


def test_resolved_method():
    """auto means L-BFGS-B for gradient metrics and Powell for the others."""
    assert OptimConfig(metric="lml").resolved_method == "lbfgs"
    assert OptimConfig(metric="loocv").resolved_method == "lbfgs"
    assert OptimConfig(metric="sopl").resolved_method == "powell"
    assert OptimConfig(metric="lml", method="powell").resolved_method == "powell"


def test_paper_init_draws_in_box(small_data):
    """init='paper' works and stays inside the box."""
    r = fit_kernel(SE, small_data, OptimConfig(init="paper", n_restarts=2), np.random.default_rng(8))
    assert r.ok
    lo, hi = OptimConfig().space.lower_upper(SE.n_params)
    assert np.all(r.z >= lo) and np.all(r.z <= hi)


def test_lbfgs_fit_of_linear_kernel_reaches_optimum():
    """L-BFGS-B on LIN reaches (within 0.5) the LML that a long Powell run finds on linear data."""
    rng = np.random.default_rng(0)
    X = np.sort(rng.uniform(1, 2, 60))[:, None]
    y = 3 * (X[:, 0] - 1.5) + 0.1 * rng.standard_normal(60)
    data = FitData.from_arrays(X, (y - y.mean()) / y.std())
    lin = library.linear()
    by_lbfgs = fit_kernel(lin, data, OptimConfig(), np.random.default_rng(1))
    by_powell = fit_kernel(lin, data, OptimConfig(method="powell", ref_fun_call=40), np.random.default_rng(1))
    assert by_lbfgs.ok and by_powell.ok
    assert by_lbfgs.lml >= by_powell.lml - 0.5


# --- the lean L-BFGS-B driver (evocov_core.fitting.lbfgs) ------------------------------------------------


def _visits(fast: bool, fun, x0, lo, hi, maxiter=60, maxfun=60):
    from evocov_core.fitting.lbfgs import minimize_lbfgsb

    seen: list[tuple[np.ndarray, float]] = []

    def f(x):
        v, g = fun(x)
        seen.append((x.copy(), v))
        return v, g

    minimize_lbfgsb(f, np.asarray(x0, dtype=float), np.asarray(lo, dtype=float), np.asarray(hi, dtype=float),
                    maxiter=maxiter, maxfun=maxfun, fast=fast)
    return seen


def _rosenbrock(x):
    f = float(np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return f, g


@pytest.mark.parametrize("maxiter", [5, 60, 1000])
def test_lbfgs_driver_visits_the_points_scipys_minimize_visits(maxiter):
    """The direct setulb loop and scipy's public minimize evaluate the same points, bit for bit, and stop
    at the same optimum: on a bounded Rosenbrock whose optimum sits on a bound, and with iteration caps."""
    from evocov_core.fitting import lbfgs

    x0, lo, hi = [-1.2, 1.0, 0.3, 0.9], [-2.0, -2.0, -2.0, -2.0], [2.0, 2.0, 0.8, 2.0]
    public = _visits(False, _rosenbrock, x0, lo, hi, maxiter=maxiter, maxfun=maxiter)
    fast = _visits(True, _rosenbrock, x0, lo, hi, maxiter=maxiter, maxfun=maxiter)
    assert lbfgs.FAST_PATH  # the pinned scipy has the private routine this loop drives
    assert len(fast) == len(public) > 1
    for (xa, fa), (xb, fb) in zip(fast, public, strict=True):
        assert np.array_equal(xa, xb) and fa == fb
    # Equal bounds: minimize removes the fixed variable; the driver hands such a box to it.
    fixed = _visits(True, _rosenbrock, x0, [-2.0, -2.0, 0.3, -2.0], [2.0, 2.0, 0.3, 2.0])
    assert all(x[2] == 0.3 for x, _ in fixed)


def test_lbfgs_driver_fits_a_kernel_as_the_public_path_does(small_data, monkeypatch):
    """A whole fit (screened starts, three L-BFGS-B runs) gives the same result through either path."""
    from evocov_core.fitting import lbfgs

    kern = library.compose(["+", "SE", ["*", "PER", "SE"]])
    cfg = OptimConfig(n_restarts=3, max_evals=40)
    fast = fit_kernel(kern, small_data, cfg, np.random.default_rng(3))
    monkeypatch.setattr(lbfgs, "FAST_PATH", False)
    public = fit_kernel(kern, small_data, cfg, np.random.default_rng(3))
    assert fast.theta == public.theta and fast.log_noise == public.log_noise and fast.lml == public.lml
    assert fast.n_evals == public.n_evals

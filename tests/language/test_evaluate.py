"""The stack evaluator: K, diag(K), the Toeplitz fast path and reverse-mode gradients."""

from __future__ import annotations

import sys
import zlib

import numpy as np
import pytest

from evocov_core.language import library
from evocov_core.language.evaluate import Inputs, covariance, covariance_diag, covariance_jacobian, covariance_vjp
from evocov_core.language.grammar import get_grammar
from evocov_core.language.kernel import Kernel
from evocov_core.language.psd import PSDConfig
from evocov_core.searches.variation import VariationConfig, random_kernel

LIBRARY = {name: make() for name, make in library.WELL_KNOWN.items()}
COMPOSITIONS = {
    "SE+PER*SE": library.compose(["+", "SE", ["*", "PER", "SE"]]),
    "LIN*SE+RQ": library.compose(["+", ["*", "LIN", "SE"], "RQ"]),
    "C*PER+LIN": library.compose(["+", ["*", "C", "PER"], "LIN"]),
    "SE*SE*PER": library.compose(["*", "SE", "SE", "PER"]),
}
SPECIAL = {
    "spectral_dot_prod": Kernel(("dot_prod", "spectral", "x", "hp0", "hp1", "hp2")),
    "spectral_dot_prod_shared": Kernel(("dot_prod", "spectral", "x", "hp0", "hp0", "hp1")),
    "spectral_sq_dist": Kernel(("exp", "multiply", "-1", "sq_dist", "spectral", "x", "hp0", "hp1")),
    "power": Kernel(("power", "add", "1", "sq_dist", "euc", "x", "hp0", "hp1")),
    "power_scalar": Kernel(("multiply", "power", "hp", "hp0", "hp1", "exp", "multiply", "-1",
                            "sq_dist", "euc", "x", "hp2")),
    "div": Kernel(("div", "add", "hp", "hp0", "sq_dist", "euc", "x", "hp1")),
    "sqrt": Kernel(("exp", "multiply", "-1", "sqrt", "sq_dist", "euc", "x", "hp0")),
    "square": Kernel(("square", "exp", "multiply", "-0.5", "sq_dist", "euc", "x", "hp0")),
    "square_dot": Kernel(("square", "dot_prod", "euc", "x", "hp0", "hp1")),
    "shared_everywhere": Kernel(("multiply", "hp", "hp0", "add", "dot_prod", "euc", "x", "hp0", "hp0",
                                 "exp", "multiply", "-1", "sq_dist", "spectral", "x", "hp0", "hp0")),
    "scalar_only": Kernel(("add", "hp", "hp0", "square", "hp", "hp1")),
    # ABCD's change point CP(SE, LIN) and variants (scalar operands, a slot shared with an operand).
    "changepoint": Kernel(("changepoint", "x", *library.squared_exponential("hp0", "hp1").tokens,
                           *library.linear("hp2", "hp3").tokens, "hp4", "hp5")),
    "changepoint_scalar": Kernel(("changepoint", "x", "hp", "hp0", "1", "hp1", "hp2")),
    "changepoint_shared": Kernel(("changepoint", "x", "exp", "multiply", "-0.5", "sq_dist", "euc", "x", "hp0",
                                  "hp", "hp1", "hp0", "hp0")),
    "changepoint_nested": Kernel(("multiply", "changepoint", "x", "1", "changepoint", "x", "hp", "hp0", "2",
                                  "hp1", "hp2", "hp3", "hp4", "sq_dist", "spectral", "x", "hp5", "hp6")),
    # ABCD's change window CW(SE, LIN) and variants (scalar operands, slots shared with an operand).
    "changewindow": Kernel(("changewindow", "x", *library.squared_exponential("hp0", "hp1").tokens,
                            *library.linear("hp2", "hp3").tokens, "hp4", "hp5", "hp6")),
    "changewindow_scalar": Kernel(("changewindow", "x", "hp", "hp0", "1", "hp1", "hp2", "hp3")),
    "changewindow_shared": Kernel(("changewindow", "x", "exp", "multiply", "-0.5", "sq_dist", "euc", "x", "hp0",
                                   "hp", "hp1", "hp0", "hp1", "hp0")),
    "changewindow_in_changepoint": Kernel(("changepoint", "x", "changewindow", "x", "1", "hp", "hp0", "hp1", "hp2",
                                           "hp3", "sq_dist", "spectral", "x", "hp4", "hp5", "hp6", "hp7")),
}
ALL_NAMED = {**LIBRARY, **COMPOSITIONS, **SPECIAL}
SE_KERNEL = library.squared_exponential()


def _random_kernels(count, seed0, d_min=2, d_max=7, d=1):
    g = get_grammar(20)
    cfg = VariationConfig(psd=PSDConfig(d=d))
    out = []
    for seed in range(seed0, seed0 + count):
        k, _ = random_kernel(g, np.random.default_rng(seed), d_min, d_max, cfg)
        out.append(k)
    return out


def _inputs(kind, d, rng, n=7):
    if kind == "regular":
        if d == 1:
            return np.linspace(1.0, 2.0, n)[:, None]
        a, b = np.meshgrid(np.linspace(1, 2, 4), np.linspace(1, 2, 2))  # a regular 4x2 grid
        return np.column_stack([a.ravel(), b.ravel()])
    return rng.uniform(0.8, 2.4, size=(n, d))


def _amax(a):
    """Largest absolute entry (0 for an empty array)."""
    return float(np.max(np.abs(a), initial=0.0))


def _fd_jacobian(kernel, inputs, theta, h=1e-6):
    """Central finite differences of K with respect to log theta."""
    cols = []
    for p in range(len(theta)):
        e = np.zeros(len(theta))
        e[p] = h
        cols.append((covariance(kernel, inputs, theta + e) - covariance(kernel, inputs, theta - e)) / (2 * h))
    K = covariance(kernel, inputs, theta)
    return np.stack(cols, axis=-1) if cols else np.zeros((*K.shape, 0))


def _check_jacobian(kernel, inputs, theta):
    K, J = covariance_jacobian(kernel, inputs, theta)
    assert J.shape == (*K.shape, kernel.n_params)
    np.testing.assert_array_equal(K, covariance(kernel, inputs, theta))
    if not (np.all(np.isfinite(K)) and np.all(np.isfinite(J))):
        return False
    Jfd = _fd_jacobian(kernel, inputs, theta)
    if not np.all(np.isfinite(Jfd)):
        return False
    scale = max(1.0, _amax(Jfd), _amax(K))
    np.testing.assert_allclose(J, Jfd, rtol=1e-5, atol=2e-6 * scale, err_msg=kernel.prefix)
    return True


# --- values ---------------------------------------------------------------------------------------


def test_covariance_symmetric_and_shapes():
    """K(X, X) is symmetric and K(X1, X2) has shape (n, m) and equals the block of the joint matrix."""
    rng = np.random.default_rng(0)
    X1 = rng.uniform(1, 2, (6, 2))
    X2 = rng.uniform(1, 2, (4, 2))
    for name, k in ALL_NAMED.items():
        theta = rng.uniform(-1, 1, k.n_params)
        K = covariance(k, X1, theta)
        assert K.shape == (6, 6)
        np.testing.assert_allclose(K, K.T, rtol=0, atol=1e-12 * max(1, _amax(K)), err_msg=name)
        Kx = covariance(k, X1, theta, X2)
        assert Kx.shape == (6, 4)
        Kall = covariance(k, np.vstack([X1, X2]), theta)
        np.testing.assert_allclose(Kx, Kall[:6, 6:], rtol=1e-12, atol=1e-12, err_msg=name)


def test_covariance_matches_hand_formula():
    """SE and LIN evaluate to their closed forms (theta is the log of the slot values)."""
    rng = np.random.default_rng(1)
    X = rng.uniform(0, 3, (5, 2))
    a, ell = 1.7, 0.6
    D2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    np.testing.assert_allclose(covariance(LIBRARY["SE"], X, np.log([a, ell])),
                               a**2 * np.exp(-0.5 * D2 / ell**2), rtol=1e-13)
    s, sc = 0.4, 2.5
    np.testing.assert_allclose(covariance(LIBRARY["LIN"], X, np.log([s, sc])), (X - s) @ (X - s).T / sc, rtol=1e-13)


def test_spectral_features_closed_form():
    """sq_dist and dot_prod of spectral features equal the explicit [sin, cos] feature formulas."""
    rng = np.random.default_rng(2)
    X = rng.uniform(0, 3, (6, 2))
    om, ell, s = 2.3, 0.7, 0.3
    F = np.hstack([np.sin(om * X), np.cos(om * X)])
    D2 = ((F[:, None, :] - F[None, :, :]) ** 2).sum(-1)
    k = Kernel(("sq_dist", "spectral", "x", "hp0", "hp1"))
    np.testing.assert_allclose(covariance(k, X, np.log([om, ell])), D2 / ell**2, atol=1e-13)
    k = SPECIAL["spectral_dot_prod"]
    np.testing.assert_allclose(covariance(k, X, np.log([om, s, ell])), (F - s) @ (F - s).T / ell, rtol=1e-12)


def test_constant_kernel_broadcasts():
    """A tree without inputs evaluates to a full constant matrix; without slots theta is empty."""
    K = covariance(Kernel(("add", "2", "3")), np.zeros((3, 1)), [])
    np.testing.assert_array_equal(K, np.full((3, 3), 5.0))
    K = covariance(Kernel(("hp", "hp0")), np.zeros((4, 1)), [np.log(2.0)], np.zeros((2, 1)))
    np.testing.assert_allclose(K, np.full((4, 2), 2.0))


def test_theta_length_checked():
    """theta must have one value per slot."""
    with pytest.raises(ValueError, match="slots"):
        covariance(LIBRARY["SE"], np.zeros((3, 1)), [0.0])
    with pytest.raises(ValueError, match="dimensions"):
        Inputs(np.zeros((3, 1)), np.zeros((2, 2)))


def test_inputs_reused_for_many_kernels():
    """A prebuilt Inputs gives the same K as raw arrays, and evaluation does not modify its caches."""
    rng = np.random.default_rng(3)
    X = rng.uniform(1, 2, (8, 1))
    inp = Inputs(X)
    for k in list(ALL_NAMED.values()) * 2:
        theta = rng.uniform(-1, 1, k.n_params)
        np.testing.assert_array_equal(covariance(k, inp, theta), covariance(k, X, theta))


# --- diagonal ---------------------------------------------------------------------------------


def _check_diag(k, X, theta):
    K = covariance(k, Inputs(X, toeplitz=False), theta)
    D = covariance_diag(k, X, theta)
    assert D.shape == (X.shape[0],)
    if np.all(np.isfinite(K)):
        np.testing.assert_allclose(D, np.diag(K), rtol=1e-12, atol=1e-12 * max(1, _amax(K)),
                                   err_msg=k.prefix)


@pytest.mark.parametrize("d", [1, 2])
def test_diag_library(d):
    """covariance_diag equals the diagonal of the full matrix for every named kernel."""
    rng = np.random.default_rng(4)
    X = rng.uniform(0.8, 2.4, (7, d))
    for k in ALL_NAMED.values():
        _check_diag(k, X, rng.uniform(-1.5, 1.5, k.n_params))


@pytest.mark.parametrize("d", [1, 2])
def test_diag_random_kernels(d):
    """covariance_diag equals diag(K) for random PSD-checked kernels."""
    rng = np.random.default_rng(5 + d)
    for k in _random_kernels(40, 100 * d, d=d):
        X = rng.uniform(0.8, 2.4, (6, d))
        _check_diag(k, X, rng.uniform(-2, 2, k.n_params))


# --- Toeplitz fast path -----------------------------------------------------------------------


def _stationary_kernels():
    named = [k for k in ALL_NAMED.values() if k.is_stationary]
    rand = [k for k in _random_kernels(60, 500) if k.is_stationary]
    assert len(rand) > 20
    return named + rand


def test_toeplitz_path_is_used_only_when_valid():
    """The row path is used for 1-D inputs with few distinct lags and stationary kernels only."""
    grid = np.linspace(1, 2, 9)
    assert Inputs(grid).expansion == "toeplitz"
    assert Inputs(grid, toeplitz=False).row is None
    assert Inputs(grid[::-1]).expansion == "gather"  # descending: not a lattice, same 9 lags
    assert Inputs(np.r_[grid[:-1], 2.0 + 0.37 * 0.125]).row is None  # 16 distinct lags of 81 pairs
    assert Inputs(np.random.default_rng(0).uniform(0, 1, 40)).row is None  # irregular: ~n²/2 lags
    assert Inputs(np.column_stack([grid, grid])).row is None  # 2-D
    assert Inputs(grid, grid).row is None  # cross covariance
    inp = Inputs(grid)
    assert inp.pair_for(LIBRARY["SE"].is_stationary)[1] is True
    assert inp.pair_for(LIBRARY["LIN"].is_stationary)[1] is False


def test_toeplitz_values_equal_general_path():
    """On a regular grid the Toeplitz K equals the general K for stationary kernels."""
    rng = np.random.default_rng(6)
    X = np.linspace(1.0, 2.0, 11)
    fast, slow = Inputs(X), Inputs(X, toeplitz=False)
    for k in _stationary_kernels():
        theta = rng.uniform(-1.5, 1.5, k.n_params)
        K1, K2 = covariance(k, fast, theta), covariance(k, slow, theta)
        if not np.all(np.isfinite(K2)):
            continue
        np.testing.assert_allclose(K1, K2, rtol=1e-9, atol=1e-9 * max(1, _amax(K2)), err_msg=k.prefix)


def test_toeplitz_vjp_equals_general_path():
    """The Toeplitz reverse pass gives the same gradients as the general one, for any adjoint."""
    rng = np.random.default_rng(7)
    X = np.linspace(1.0, 2.0, 10)
    fast, slow = Inputs(X), Inputs(X, toeplitz=False)
    checked = 0
    for k in _stationary_kernels():
        theta = rng.uniform(-1.5, 1.5, k.n_params)
        _K1, vjp1 = covariance_vjp(k, fast, theta)
        K2, vjp2 = covariance_vjp(k, slow, theta)
        if not np.all(np.isfinite(K2)):
            continue
        G = rng.standard_normal((3, 10, 10))  # not symmetric on purpose
        g1, g2 = vjp1(G), vjp2(G)
        if not (np.all(np.isfinite(g1)) and np.all(np.isfinite(g2))):
            continue
        checked += 1
        np.testing.assert_allclose(g1, g2, rtol=1e-7, atol=1e-7 * max(1, _amax(g2)), err_msg=k.prefix)
    assert checked > 25


def _compare_with_general_path(X, kernels, rng, tol, grad_tol):
    """Assert that K (both entry points) and the VJP on ``Inputs(X)`` equal the general path's
    (``toeplitz=False``), and that one forward pass serves a second reverse walk alike.

    Returns the number of kernels whose gradients were compared (finite ones).
    """
    fast, slow = Inputs(X), Inputs(X, toeplitz=False)
    n = X.shape[0]
    checked = 0
    for k in kernels:
        theta = rng.uniform(-1.5, 1.5, k.n_params)
        K1, vjp1 = covariance_vjp(k, fast, theta)
        K2, vjp2 = covariance_vjp(k, slow, theta)
        if not np.all(np.isfinite(K2)):
            continue
        for K in (K1, covariance(k, fast, theta)):
            np.testing.assert_allclose(K, K2, rtol=tol, atol=tol * max(1, _amax(K2)), err_msg=k.prefix)
        G = rng.standard_normal((2, n, n))  # not symmetric on purpose
        g1, g2 = vjp1(G), vjp2(G)
        if np.all(np.isfinite(g2)):
            checked += 1
            np.testing.assert_allclose(g1, g2, rtol=grad_tol, atol=grad_tol * max(1, _amax(g2)), err_msg=k.prefix)
            np.testing.assert_array_equal(vjp1(G), g1)
    return checked


def test_gappy_grid_equals_general_path():
    """A regular grid with missing points (e.g. missing months): fast or not, K and its VJP are the general ones."""
    X = np.delete(np.linspace(1.0, 2.0, 13), [3, 4, 9])
    assert Inputs(X).expansion == "gather"
    checked = _compare_with_general_path(X, _stationary_kernels()[:40], np.random.default_rng(8), 1e-9, 1e-7)
    assert checked > 25


def _month_starts(n_months: int) -> np.ndarray:
    """Month starts as decimal years (day of year / 365), like the TSDL monthly series."""
    days = np.cumsum([0] + [[31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m % 12] for m in range(n_months - 1)])
    return 1962.0 + days / 365.0


def test_dates_of_monthly_data_take_the_distinct_lag_path():
    """Months given as decimal years are no lattice (steps of 28-31 days), but their lags repeat:
    the tree is evaluated once per distinct lag, and the lags are the pairs' lags to 1e-7 of a step."""
    X = _month_starts(60)
    inp = Inputs(X)
    assert inp.expansion == "gather"
    n_lags = inp.row.X2.shape[0]
    assert n_lags < 60 * 60 / 8
    lags = inp.row.X2[:, 0] - X[0]
    D = np.abs(X[:, None] - X[None, :])
    np.testing.assert_allclose(lags[inp.lag_matrix], D, rtol=0, atol=1e-7 * np.diff(X).min())
    assert inp.pair_for(LIBRARY["SE"].is_stationary)[1] is True
    assert inp.pair_for(LIBRARY["LIN"].is_stationary)[1] is False


@pytest.mark.parametrize("order", ["sorted", "shuffled"])
def test_distinct_lag_path_equals_general_path(order):
    """On monthly dates (sorted or not), K and its VJP from the lag row equal the general path's."""
    rng = np.random.default_rng(16)
    X = _month_starts(48)
    if order == "shuffled":
        X = rng.permutation(X)
    assert Inputs(X).expansion == "gather"
    assert _compare_with_general_path(X, _stationary_kernels()[:40], rng, 1e-6, 1e-5) > 25


def test_row_subtrees_are_the_large_stationary_parts_of_a_non_stationary_tree():
    """In LIN × (SE + PER) the sum is evaluated on the lag row; LIN's pieces and a lone
    sq_dist (one pass over cached distances) are not, and a stationary tree has no row subtree
    (it is evaluated on the row as a whole)."""
    from evocov_core.language.program import _compile

    k = library.compose(["*", "LIN", ["+", "SE", "PER"]])
    prog = _compile(k.tokens)
    (root,) = prog.row_roots
    assert k.tokens[root] == "add"
    assert not any(k.tokens[i] == "dot_prod" for i, flag in enumerate(prog.row_node) if flag)
    assert sum(prog.row_node) == len(library.compose(["+", "SE", "PER"]).tokens)
    assert _compile(library.compose(["*", "LIN", "SE"]).tokens).row_roots  # SE alone has 4 operators
    lone = Kernel(("multiply", "dot_prod", "euc", "x", "hp0", "hp1", "sq_dist", "euc", "x", "hp2"))
    assert not _compile(lone.tokens).row_roots
    assert not _compile(LIBRARY["SE"].tokens).row_roots


def _mixed_kernels() -> list[Kernel]:
    """Non-stationary kernels with stationary subtrees evaluated on the lag row."""
    from evocov_core.language.program import _compile

    named = [library.compose(e) for e in (["*", "LIN", ["+", "SE", "PER"]], ["+", "LIN", ["*", "RQ", "PER"]],
                                          ["*", ["*", "LIN", "LIN"], ["+", "RQ", "RQ"]])]
    se, per = library.squared_exponential("hp0", "hp1").tokens, library.periodic("hp2", "hp3", "hp4").tokens
    named += [Kernel(("changepoint", "x", *se, *per, "hp5", "hp6")),  # both sides on the row, gated in full
              Kernel(("changewindow", "x", *per, *se, "hp5", "hp6", "hp7"))]
    lin = library.linear("hp0", "hp1").tokens
    rand = []
    with_x = [k for k in _stationary_kernels() if "x" in k.tokens][:40]
    for i, k in enumerate(with_x):  # LIN + k or LIN × k, k's slots renumbered
        shifted = tuple(f"hp{int(t[2:]) + 2}" if t.startswith("hp") and t[2:].isdigit() else t for t in k.tokens)
        rand.append(Kernel((("add", "multiply")[i % 2], *lin, *shifted)))
    kernels = [k for k in named + rand if _compile(k.tokens).row_roots]
    assert len(kernels) >= 15
    return kernels


@pytest.mark.parametrize("inputs", ["grid", "months", "shuffled months"])
def test_mixed_geometry_equals_general_path(inputs):
    """Stationary subtrees on the lag row, expanded into a non-stationary tree: K and the VJP
    equal the general path's, and a second reverse walk on the same forward pass gives the same."""
    rng = np.random.default_rng(17)
    X = {"grid": np.linspace(1.0, 2.0, 12), "months": _month_starts(48),
         "shuffled months": rng.permutation(_month_starts(48))}[inputs]
    assert Inputs(X).row is not None
    tol = 1e-9 if inputs == "grid" else 1e-6
    assert _compare_with_general_path(X, _mixed_kernels(), rng, tol, 100 * tol) >= 12


def test_evaluation_is_repeatable():
    """Evaluating the same kernel twice on one Inputs (and through the VJP) gives identical K:
    no cached data-only array is modified by in-place work."""
    rng = np.random.default_rng(15)
    for X in (rng.uniform(1, 2, (7, 1)), np.linspace(1, 2, 7), rng.uniform(1, 2, (7, 2))):
        inp = Inputs(X)
        for k in list(ALL_NAMED.values()) + _random_kernels(20, 3000):
            theta = rng.uniform(-1, 1, k.n_params)
            K1 = covariance(k, inp, theta)
            K2, vjp = covariance_vjp(k, inp, theta)
            vjp(np.ones_like(K2))
            K3 = covariance(k, inp, theta)
            np.testing.assert_array_equal(K1, K2)
            np.testing.assert_array_equal(K1, K3)
            np.testing.assert_array_equal(K1, covariance(k, X, theta))


# --- gradients -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["irregular", "regular"])
@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("name", sorted(ALL_NAMED))
def test_jacobian_named_kernels(name, d, kind):
    """covariance_jacobian matches central finite differences for library, GPSS and special kernels."""
    k = ALL_NAMED[name]
    rng = np.random.default_rng(zlib.crc32(f"{name}-{d}-{kind}".encode()))
    X = _inputs(kind, d, rng)
    theta = rng.uniform(-1.0, 1.0, k.n_params)
    if name.startswith("gamma"):
        theta[2] = np.log(rng.uniform(0.5, 1.8))  # exponent in (0, 2]: PSD and smooth off the diagonal
    assert _check_jacobian(k, Inputs(X), theta)


@pytest.mark.parametrize("kind", ["irregular", "regular"])
@pytest.mark.parametrize("d", [1, 2])
def test_jacobian_random_kernels(d, kind):
    """covariance_jacobian matches finite differences for ~30 random generated kernels."""
    rng = np.random.default_rng(11 * d + (kind == "regular"))
    checked = 0
    for k in _random_kernels(32, 1000 + 50 * d, d_min=2, d_max=8, d=d):
        X = _inputs(kind, d, rng, n=6)
        theta = rng.uniform(-1.0, 1.0, k.n_params)
        checked += _check_jacobian(k, Inputs(X), theta)
    assert checked >= 25


def test_jacobian_cross_covariance():
    """The Jacobian of a cross covariance K(X1, X2) matches finite differences."""
    rng = np.random.default_rng(12)
    X1, X2 = rng.uniform(1, 2, (5, 2)), rng.uniform(0.5, 2.5, (4, 2))
    for name, k in ALL_NAMED.items():
        theta = rng.uniform(-1, 1, k.n_params)
        inp = Inputs(X1, X2)
        K, J = covariance_jacobian(k, inp, theta)
        assert K.shape == (5, 4) and J.shape == (5, 4, k.n_params)
        np.testing.assert_allclose(J, _fd_jacobian(k, inp, theta), rtol=1e-5,
                                   atol=2e-6 * max(1, _amax(J)), err_msg=name)
        # Passing the arrays directly gives the same result.
        K2, J2 = covariance_jacobian(k, X1, theta, X2)
        np.testing.assert_array_equal(K, K2)
        np.testing.assert_array_equal(J, J2)


def test_batched_vjp_equals_single_vjps():
    """vjp of a batch of adjoints equals the stack of single vjps; vjp is linear in the adjoint."""
    rng = np.random.default_rng(13)
    for X in (rng.uniform(1, 2, (6, 1)), np.linspace(1, 2, 6), rng.uniform(1, 2, (6, 2))):
        for k in list(ALL_NAMED.values())[:12] + _random_kernels(8, 2000):
            theta = rng.uniform(-1, 1, k.n_params)
            _, vjp = covariance_vjp(k, Inputs(X), theta)
            G = rng.standard_normal((2, 3, 6, 6))
            batch = vjp(G)
            assert batch.shape == (2, 3, k.n_params)
            single = np.array([[vjp(G[i, j]) for j in range(3)] for i in range(2)])
            np.testing.assert_allclose(batch, single, rtol=1e-12, atol=1e-12 * max(1, _amax(single)))
            np.testing.assert_allclose(vjp(2 * G[0, 0] - G[1, 2]), 2 * single[0, 0] - single[1, 2],
                                       rtol=1e-10, atol=1e-10 * max(1, _amax(single)))


def test_vjp_rejects_wrong_adjoint_shape():
    """An adjoint of the wrong shape is a ValueError."""
    _, vjp = covariance_vjp(LIBRARY["SE"], np.zeros((3, 1)) + np.arange(3)[:, None], [0.0, 0.0])
    with pytest.raises(ValueError, match="adjoint"):
        vjp(np.zeros((3, 4)))


def test_vjp_without_slots():
    """A kernel without slots has an empty gradient."""
    _, vjp = covariance_vjp(Kernel(("add", "1", "2")), np.arange(4.0), [])
    assert vjp(np.ones((4, 4))).shape == (0,)
    assert vjp(np.ones((2, 4, 4))).shape == (2, 0)


# --- deep trees ------------------------------------------------------------------------------------


def _damped_chain(depth):
    """exp(-0.5 * exp(-0.5 * ... sq_dist ...)), with a fresh lengthscale slot at the bottom."""
    tokens = ("sq_dist", "euc", "x", "hp0")
    while Kernel(tokens).depth < depth:
        tokens = ("exp", "multiply", "-0.5", *tokens)
    return Kernel(tokens)


def _add_chain(n_slots):
    tokens = ("hp", "hp0")
    for k in range(1, n_slots):
        tokens = ("add", *tokens, "multiply", "hp", f"hp{k}", "exp", "multiply", "-0.5",
                  "sq_dist", "euc", "x", f"hp{k}")
    return Kernel(tokens)


@pytest.mark.parametrize("make", [lambda: _damped_chain(40), lambda: _add_chain(40)], ids=["exp_chain", "add_chain"])
def test_depth_40_trees(make):
    """Trees 40 levels deep evaluate, with correct gradients."""
    k = make()
    assert k.depth >= 40
    rng = np.random.default_rng(14)
    X = rng.uniform(1, 2, (5, 1))
    assert _check_jacobian(k, Inputs(X), rng.uniform(-0.5, 0.5, k.n_params))
    _check_diag(k, X, rng.uniform(-0.5, 0.5, k.n_params))


def test_deeper_than_recursion_limit():
    """The evaluator is iterative: a tree deeper than Python's recursion limit evaluates."""
    k = _damped_chain(sys.getrecursionlimit() + 300)
    X = np.linspace(1, 2, 4)
    K, vjp = covariance_vjp(k, Inputs(X, toeplitz=False), [0.0])
    assert np.all(np.isfinite(K)) and np.all(np.isfinite(vjp(np.ones((4, 4)))))
    np.testing.assert_allclose(covariance(k, Inputs(X), [0.0]), K, rtol=1e-12)
    assert covariance_diag(k, X, [0.0]).shape == (4,)


def test_gradient_convention_at_non_differentiable_points():
    """Where sqrt or power meet w = 0 (infinite slope) the documented gradient contribution is 0."""
    X = np.linspace(1, 2, 3)
    # w = θ0 − θ1 is exactly 0 when θ0 = θ1, while dw/dlog θ0 = θ0 ≠ 0.
    w = ("add", "hp", "hp0", "multiply", "-1", "hp", "hp1")
    for k in (Kernel(("sqrt", *w)), Kernel(("power", *w, "hp2"))):
        theta = np.array([0.3, 0.3, np.log(0.5)])[: k.n_params]
        K, J = covariance_jacobian(k, Inputs(X, toeplitz=False), theta)
        np.testing.assert_array_equal(K, 0.0)
        np.testing.assert_array_equal(J, 0.0)


def test_non_finite_values_are_returned_not_raised():
    """Overflow, 1/0 and sqrt of a negative give inf/NaN entries without raising or warning."""
    X = np.linspace(1, 2, 4)
    with np.errstate(all="raise"):
        assert np.isinf(covariance(Kernel(("div", "add", "1", "-1")), X, [])).all()
        assert np.isnan(covariance(Kernel(("sqrt", "-1")), X, [])).all()
        K = covariance(Kernel(("exp", "exp", "exp", "hp", "hp0")), X, [3.0])
        assert np.isinf(K).all()
        assert np.isinf(covariance(Kernel(("div", "sq_dist", "euc", "x", "hp0")), X, [0.0])).any()


# --- compiled trees (evocov_core.language.compiled) --------------------------------------------------


@pytest.mark.parametrize("kind", ["regular", "gappy", "irregular", "months"])
def test_compiled_trees_give_the_walks_floats_bit_for_bit(kind):
    """K and the VJP of a compiled tree are the stack walk's, every bit (signs of zeros included), on
    the lag row, on the full pair and in mixed geometry, for named kernels and random trees."""
    from evocov_core.language import compiled

    rng = np.random.default_rng(71)
    x = {"regular": np.linspace(1.0, 2.0, 19), "gappy": np.delete(np.linspace(1.0, 2.0, 30), [3, 4, 17]),
         "irregular": np.sort(rng.uniform(1.0, 2.0, 23)), "months": _month_starts(44)}[kind]
    inputs = Inputs(x)
    kernels = [*ALL_NAMED.values(), *_random_kernels(150, 7100), *_mixed_kernels()]
    done = 0
    for k in kernels:
        theta = rng.normal(0.0, 1.0, k.n_params)
        fast = compiled.covariance_vjp(k, inputs, theta)
        assert fast is not None
        K1, vjp1 = fast
        K0, vjp0 = covariance_vjp(k, inputs, theta)
        with np.errstate(all="ignore"):
            G = rng.standard_normal(K0.shape)
            G = G + G.T
        for a, b in ((K1, K0), (compiled.covariance(k, inputs, theta), covariance(k, inputs, theta)),
                     (vjp1(G), vjp0(G)), (vjp1(2 * G), vjp0(2 * G))):
            assert a.shape == b.shape, k.prefix
            assert np.array_equal(a, b, equal_nan=True), k.prefix
            assert np.array_equal(np.signbit(a), np.signbit(b)), k.prefix
        done += 1
    assert done == len(kernels)
    assert compiled.covariance(SE_KERNEL, Inputs(x, x), np.zeros(2)) is None  # cross-covariances: the walk
    big = np.sort(rng.uniform(1.0, 2.0, compiled.FULL_MAX_N + 1))
    assert compiled.covariance(SE_KERNEL, Inputs(big), np.zeros(2)) is None  # large full pairs: the walk


def test_toeplitz_adjoint_workspaces_are_per_thread():
    """The diagonal sums of small matrices use a workspace kept per n and per thread: threads summing
    at once (a dashboard's sessions) get the general path's sums, bit for bit."""
    import threading

    from evocov_core.language import inputs as inputs_module

    rng = np.random.default_rng(72)
    mats = [rng.standard_normal((19, 19)) for _ in range(8)]
    want = [inputs_module._diagonal_sums(a[None])[0] for a in mats]  # the batched (general) path
    bad: list[int] = []

    def work(k: int) -> None:
        for _ in range(300):
            if not np.array_equal(inputs_module._diagonal_sums(mats[k]), want[k]):
                bad.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []

"""ABCD's change-point operator: grammar option, values, PSD, bounds, files, variation, search."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evocov_core.data import Dataset
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import OptimConfig, fit_kernel, slot_bounds, slot_roles
from evocov_core.language import library
from evocov_core.language.evaluate import covariance, covariance_diag
from evocov_core.language.grammar import Cov, TreeError, check_tree, get_grammar, typed_grow
from evocov_core.language.kernel import Kernel
from evocov_core.language.psd import PSDConfig, check_psd
from evocov_core.runs.kernel_file import KernelFileError, parse_expression
from evocov_core.searches import preset, run_search
from evocov_core.searches.structures import expand_once
from evocov_core.searches.variation import VariationConfig, mutate

SE = library.squared_exponential("hp0", "hp1").tokens
LIN = library.linear("hp2", "hp3").tokens
CP_SE_LIN = Kernel(("changepoint", "x", *SE, *LIN, "hp4", "hp5"))


def _sigmoid(x: np.ndarray, loc: float, width: float) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(x - loc) / width))


def test_value_is_abcd_changepoint():
    """CP(k1, k2) = (1 − σ)(1 − σ')·k1 + σσ'·k2 with σ the logistic of (x − θc)/θs, off and on the diagonal."""
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(1, 2, 7), rng.uniform(0.8, 2.2, 5)
    theta = np.log([1.3, 0.2, 0.5, 0.7, 1.4, 0.05])
    k1 = covariance(Kernel(SE), x1[:, None], theta[:2], x2[:, None])
    k2 = covariance(Kernel(LIN), x1[:, None], theta[2:4], x2[:, None])  # LIN uses hp2, hp3
    s1, s2 = _sigmoid(x1, 1.4, 0.05), _sigmoid(x2, 1.4, 0.05)
    want = np.outer(1 - s1, 1 - s2) * k1 + np.outer(s1, s2) * k2
    np.testing.assert_allclose(covariance(CP_SE_LIN, x1[:, None], theta, x2[:, None]), want, rtol=1e-12)
    K = covariance(CP_SE_LIN, x1[:, None], theta)
    np.testing.assert_allclose(covariance_diag(CP_SE_LIN, x1[:, None], theta), np.diag(K), rtol=1e-12)


def test_switches_between_the_two_kernels():
    """Far before the location the covariance is the first kernel's, far after the second's."""
    x = np.array([1.0, 1.05, 1.95, 2.0])[:, None]
    theta = np.log([1.0, 0.3, 0.5, 0.7, 1.5, 0.01])
    K = covariance(CP_SE_LIN, x, theta)
    np.testing.assert_allclose(K[:2, :2], covariance(Kernel(SE), x[:2], theta[:2]), rtol=1e-12)
    np.testing.assert_allclose(K[2:, 2:], covariance(Kernel(LIN), x[2:], theta[2:4]), rtol=1e-12)
    np.testing.assert_allclose(K[:2, 2:], 0.0, atol=1e-12)  # no covariance across the change


def test_psd_and_not_stationary():
    assert check_psd(CP_SE_LIN, np.random.default_rng(1), PSDConfig(w=20)).ok
    assert not CP_SE_LIN.is_stationary  # the Toeplitz path must not be used


def test_grammar_option_decides_what_is_drawn():
    """The paper's grammar never grows a change point; the option's grammar does; both parse one."""
    paper, cp = get_grammar(20), get_grammar(20, families=("changepoint",))
    assert "changepoint" not in paper.nestable(Cov) and "changepoint" in cp.nestable(Cov)
    assert "changepoint" not in paper.pset.mapping and "changepoint" in cp.pset.mapping
    rng = np.random.default_rng(2)
    assert not any("changepoint" in typed_grow(paper, rng, 3, 8) for _ in range(300))
    assert any("changepoint" in typed_grow(cp, rng, 3, 8) for _ in range(300))
    check_tree(CP_SE_LIN.tokens)  # any grammar's files may hold change points
    assert parse_expression(CP_SE_LIN.prefix) == CP_SE_LIN


def test_parser_checks_changepoint_arguments():
    with pytest.raises(KernelFileError, match="'changepoint' takes 5 arguments"):
        parse_expression("changepoint(x, hp(hp0), 1, hp1)")  # one argument short
    with pytest.raises((KernelFileError, TreeError), match="Hyper is expected"):
        parse_expression("changepoint(x, hp(hp0), 1, hp1, 2)")  # a constant where a slot is expected


def test_rendering():
    assert CP_SE_LIN.infix.startswith("CP[hp4, hp5](")
    assert r"\mathrm{CP}" in CP_SE_LIN.latex


def test_roles_and_data_bounds():
    """Location bounded to the training inputs, width between a quarter step and the span."""
    x = 1960 + np.arange(60) / 12.0
    data = FitData.from_dataset(Dataset.from_arrays(x, np.sin(x), test_fraction=0.1))
    roles = slot_roles(CP_SE_LIN)
    assert roles["hp4"] == {"location"} and roles["hp5"] == {"steepness"}
    lo, hi = slot_bounds(CP_SE_LIN, data, OptimConfig(data_bounds=True))
    xs = data.X[:, 0]
    assert math.exp(lo[4]) == pytest.approx(xs.min()) and math.exp(hi[4]) == pytest.approx(xs.max())
    assert math.exp(lo[5]) == pytest.approx(data.step / 4) and math.exp(hi[5]) == pytest.approx(data.span)


def test_fit_finds_a_level_shift():
    """A series that drops at a known point: CP(SE, SE) puts its location there, and beats one SE by BIC."""
    rng = np.random.default_rng(3)
    x = np.linspace(0, 10, 120)
    y = np.where(x < 6.0, 5.0, 0.0) + 0.2 * np.sin(x) + 0.1 * rng.standard_normal(x.size)
    data = FitData.from_dataset(Dataset.from_arrays(x, y, test_fraction=0.0))
    cfg = OptimConfig(n_restarts=3, n_screen=30, data_bounds=True)
    se2 = library.squared_exponential("hp2", "hp3").tokens
    cp = fit_kernel(Kernel(("changepoint", "x", *SE, *se2, "hp4", "hp5")), data, cfg, np.random.default_rng(0))
    se = fit_kernel(Kernel(SE), data, cfg, np.random.default_rng(0))
    assert cp.ok and se.ok and cp.bic < se.bic
    loc_model = math.exp(cp.theta[4])  # model units: x̃ = 1 + (x − 0)/10
    assert abs((loc_model - 1.0) * 10.0 - 6.0) < 0.3


def test_expansions_and_mutations_use_it_only_with_the_option():
    rng = np.random.default_rng(4)
    base = library.compose(["+", "SE", "PER"])
    with_cp = [expand_once(base, rng, 20, families=("changepoint",)) for _ in range(60)]
    without = [expand_once(base, rng, 20) for _ in range(60)]
    assert any("changepoint" in (t or ()) for t in with_cp)
    assert not any("changepoint" in (t or ()) for t in without)
    for t in with_cp:
        if t is not None:
            check_tree(t, n_hyper=20)
    vcfg = VariationConfig(psd=PSDConfig(w=6))
    kids = [mutate(base, rng, vcfg, get_grammar(20, families=("changepoint",))).kernel for _ in range(80)]
    assert any("changepoint" in k.tokens for k in kids)
    assert all(check_psd(k, np.random.default_rng(5), PSDConfig(w=6)).ok for k in kids if "changepoint" in k.tokens)


def test_search_with_changepoints_is_reproducible():
    x = 1950 + np.arange(72) / 12.0
    y = np.where(x < 1954, 3.0, 0.0) + np.sin(2 * np.pi * x) + 0.1 * np.random.default_rng(6).standard_normal(72)
    data = FitData.from_dataset(Dataset.from_arrays(x, y, test_fraction=0.1))
    cfg = preset("quick", population=10, mu=3, generations=3, d_min=2, d_max=5, psd_w=6, max_evals=15, n_screen=4,
                 rho_max=30, time_budget=0.0, families=("changepoint",), changepoints_by_expansion=False, select_top=1)
    a = run_search(data, cfg, seed=3, workers=1)
    b = run_search(data, cfg, seed=3, workers=1)
    assert [r.expression for r in a.records] == [r.expression for r in b.records]
    assert any("changepoint" in r.expression for r in a.records)
    assert a.best is not None and a.best.ok


def test_change_points_by_expansion_keep_the_operator_out_of_the_tree_grammar():
    assert preset("quick").changepoints_by_expansion and preset("standard").changepoints_by_expansion
    on = preset("quick", families=("changepoint",), changepoints_by_expansion=False)
    assert "changepoint" in on.grammar.families and "changepoint" in on.grammar.nestable(Cov)
    by_expansion = on.with_(changepoints_by_expansion=True)
    assert by_expansion.families == ("changepoint",)  # the expansions still make them
    assert not by_expansion.grammar.families and "changepoint" not in by_expansion.grammar.nestable(Cov)
    assert not preset("quick", families=(), changepoints_by_expansion=True).grammar.families


@pytest.mark.parametrize(("by_expansion", "p_expand", "drawn"), [(False, 0.0, True), (True, 0.0, False),
                                                                 (True, 1.0, True)])
def test_change_points_by_expansion_come_only_from_expansions(by_expansion, p_expand, drawn):
    x = 1950 + np.arange(72) / 12.0
    y = np.where(x < 1954, 3.0, 0.0) + np.sin(2 * np.pi * x) + 0.1 * np.random.default_rng(6).standard_normal(72)
    data = FitData.from_dataset(Dataset.from_arrays(x, y, test_fraction=0.1))
    cfg = preset("quick", population=12, mu=4, generations=4, d_min=2, d_max=5, psd_w=6, max_evals=15, n_screen=4,
                 rho_max=30, time_budget=0.0, families=("changepoint",), changepoints_by_expansion=by_expansion,
                 p_expand=p_expand, p_mutation=1.0, p_crossover=0.0, select_top=1)
    result = run_search(data, cfg, seed=4, workers=1)
    with_cp = [r for r in result.records if "changepoint" in r.expression]
    assert bool(with_cp) is drawn
    if by_expansion:  # random trees and mutations never draw it: it first appears in an expansion child
        assert all(r.origin in ("expansion", "selected") for r in with_cp)


def test_gpss_baseline_expands_with_changepoints():
    """ABCD's S -> CP(S, S): both copies inherit the parent's values; the structure builds a valid tree."""
    from evocov_core.searches.gpss import _start, build, expansions, structure_str

    parent = ("+", ("leaf", "SE", 0), ("leaf", "PER", 1))
    plain = expansions(parent, ("SE", "LIN"))
    with_cp = expansions(parent, ("SE", "LIN"), families=("changepoint",))
    assert not any("CP" in structure_str(s) for s in plain)
    cps = [s for s in with_cp if s[0] == "cp"]
    assert len(cps) == 1 and structure_str(cps[0]) == "CP(SE + PER, SE + PER)"
    kernel, _ = build(cps[0])
    check_tree(kernel.tokens)
    pk, _ = build(parent)
    p = pk.n_params  # SE (2) + PER (3)
    assert kernel.tokens[0] == "changepoint" and kernel.n_params == 2 * p + 2
    # Values: the parent's SE/PER values go to both copies; location and width are new (NaN).
    x = 1950 + np.arange(48) / 12.0
    data = FitData.from_dataset(Dataset.from_arrays(x, np.sin(2 * np.pi * x), test_fraction=0.1))
    pfit = fit_kernel(pk, data, OptimConfig(n_restarts=1, n_screen=4, max_evals=10), np.random.default_rng(0))
    _, start = _start(cps[0], pfit, {0: list(pk.slots[:2]), 1: list(pk.slots[2:])})
    assert start is not None
    vals = np.array(start.theta)
    assert np.isnan(vals[-2:]).all() and np.isfinite(vals[:-2]).all()
    np.testing.assert_allclose(vals[:p], vals[p:2 * p])  # both copies of S start from the same values
    np.testing.assert_allclose(np.sort(vals[:p]), np.sort(pfit.theta))


def test_gpss_search_with_changepoints_runs():
    x = 1950 + np.arange(60) / 12.0
    y = np.where(x < 1953, 2.0, 0.0) + 0.1 * np.random.default_rng(7).standard_normal(60)
    data = FitData.from_dataset(Dataset.from_arrays(x, y, test_fraction=0.1))
    cfg = preset("quick-fixed", "gpss", generations=2, n_restarts=1, families=("changepoint",), base_kernels=("SE",))
    r = run_search(data, cfg, seed=0, workers=1)
    assert any(r.expression.startswith("changepoint") for r in r.records)

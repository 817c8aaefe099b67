"""ABCD's change-window operator: values, PSD, grammar option, files, bounds, variation, GPSS, presets unchanged."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from evocov_core.data import Dataset
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import OptimConfig, fit_kernel, slot_bounds, slot_roles
from evocov_core.language import library
from evocov_core.language.evaluate import covariance, covariance_diag
from evocov_core.language.grammar import Cov, Grammar, check_tree, get_grammar, subtree_end, typed_grow
from evocov_core.language.kernel import Kernel
from evocov_core.language.psd import PSDConfig, check_psd
from evocov_core.runs.kernel_file import KernelFileError, parse_expression
from evocov_core.searches import SearchConfig, preset, run_search
from evocov_core.searches.common import sub_rng
from evocov_core.searches.evocov import run_evocov
from evocov_core.searches.structures import expand_once, seed_kernels
from evocov_core.searches.variation import VariationConfig, mutate, random_kernel

SE = library.squared_exponential("hp0", "hp1").tokens
LIN = library.linear("hp2", "hp3").tokens
CW_SE_LIN = Kernel(("changewindow", "x", *SE, *LIN, "hp4", "hp5", "hp6"))


def _sigmoid(x: np.ndarray, loc: float, steep: float) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(x - loc) / steep))


def _window(x: np.ndarray, centre: float, width: float, steep: float) -> np.ndarray:
    a, b = centre - width / 2, centre + width / 2
    return _sigmoid(x, a, steep) * (1.0 - _sigmoid(x, b, steep))


def test_value_is_abcd_change_window():
    """CW(k1, k2) = (1 − ω)(1 − ω')·k1 + ωω'·k2, ω = σ((x − a)/s)(1 − σ((x − b)/s)), off and on the diagonal."""
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(1, 2, 7), rng.uniform(0.8, 2.2, 5)
    theta = np.log([1.3, 0.2, 0.5, 0.7, 1.5, 0.3, 0.04])
    k1 = covariance(Kernel(SE), x1[:, None], theta[:2], x2[:, None])
    k2 = covariance(Kernel(LIN), x1[:, None], theta[2:4], x2[:, None])
    w1, w2 = _window(x1, 1.5, 0.3, 0.04), _window(x2, 1.5, 0.3, 0.04)
    want = np.outer(1 - w1, 1 - w2) * k1 + np.outer(w1, w2) * k2
    np.testing.assert_allclose(covariance(CW_SE_LIN, x1[:, None], theta, x2[:, None]), want, rtol=1e-12)
    K = covariance(CW_SE_LIN, x1[:, None], theta)
    np.testing.assert_allclose(covariance_diag(CW_SE_LIN, x1[:, None], theta), np.diag(K), rtol=1e-12)


def test_second_kernel_inside_the_window_first_outside():
    x = np.array([1.0, 1.05, 1.48, 1.52, 1.95, 2.0])[:, None]
    theta = np.log([1.0, 0.3, 0.5, 0.7, 1.5, 0.2, 0.002])  # window [1.4, 1.6], sharp edges
    K = covariance(CW_SE_LIN, x, theta)
    out = [0, 1, 4, 5]
    np.testing.assert_allclose(K[np.ix_(out, out)], covariance(Kernel(SE), x[out], theta[:2]), rtol=1e-12)
    np.testing.assert_allclose(K[2:4, 2:4], covariance(Kernel(LIN), x[2:4], theta[2:4]), rtol=1e-12)
    np.testing.assert_allclose(K[2:4, out], 0.0, atol=1e-12)  # nothing carries across an edge


def test_psd_and_not_stationary():
    assert check_psd(CW_SE_LIN, np.random.default_rng(1), PSDConfig(w=20)).ok
    assert not CW_SE_LIN.is_stationary  # the Toeplitz path must not be used
    x = np.linspace(1, 2, 9)[:, None]  # a regular grid: the lag path would be taken if it were stationary
    theta = np.log([1.0, 0.3, 0.5, 0.7, 1.5, 0.2, 0.05])
    w = _window(x[:, 0], 1.5, 0.2, 0.05)
    k1 = covariance(Kernel(SE), x, theta[:2])
    k2 = covariance(Kernel(LIN), x, theta[2:4])
    np.testing.assert_allclose(covariance(CW_SE_LIN, x, theta), np.outer(1 - w, 1 - w) * k1 + np.outer(w, w) * k2,
                               rtol=1e-12)


def test_grammar_option_decides_what_is_drawn():
    """Only grammars with the family ``changewindow`` grow windows; every grammar parses them; the other
    grammars list exactly the symbols, in the order, they listed before (their draws are unchanged)."""
    paper, cp = get_grammar(20), get_grammar(20, families=("changepoint",))
    cw = get_grammar(20, families=("changepoint", "changewindow"))
    assert "changewindow" not in cp.nestable(Cov) and "changewindow" in cw.nestable(Cov)
    assert "changewindow" not in paper.pset.mapping and "changewindow" in cw.pset.mapping
    assert [t for t in cw.nestable(Cov) if t != "changewindow"] == list(cp.nestable(Cov))
    assert get_grammar(20, families=("changewindow",)).nestable(Cov) == (*paper.nestable(Cov), "changewindow")
    rng = np.random.default_rng(2)
    assert not any("changewindow" in typed_grow(cp, rng, 3, 8) for _ in range(300))
    assert any("changewindow" in typed_grow(cw, rng, 3, 8) for _ in range(300))
    check_tree(CW_SE_LIN.tokens)
    assert parse_expression(CW_SE_LIN.prefix) == CW_SE_LIN


def test_parser_checks_changewindow_arguments():
    with pytest.raises(KernelFileError, match="'changewindow' takes 6 arguments"):
        parse_expression("changewindow(x, hp(hp0), 1, hp1, hp2)")  # one argument short
    with pytest.raises((KernelFileError, ValueError), match="Hyper is expected"):
        parse_expression("changewindow(x, hp(hp0), 1, hp1, hp2, 2)")


def test_rendering():
    assert CW_SE_LIN.infix.startswith("CW[hp4, hp5, hp6](")
    assert r"\mathrm{CW}" in CW_SE_LIN.latex


def test_roles_and_data_bounds():
    """Centre inside the training inputs, width between a step and the span, steepness as a change point's."""
    x = 1960 + np.arange(60) / 12.0
    data = FitData.from_dataset(Dataset.from_arrays(x, np.sin(x), test_fraction=0.1))
    roles = slot_roles(CW_SE_LIN)
    assert roles["hp4"] == {"window_centre"} and roles["hp5"] == {"window_width"} and roles["hp6"] == {"steepness"}
    lo, hi = slot_bounds(CW_SE_LIN, data, OptimConfig(data_bounds=True))
    xs = data.X[:, 0]
    assert math.exp(lo[4]) == pytest.approx(xs.min()) and math.exp(hi[4]) == pytest.approx(xs.max())
    assert math.exp(lo[5]) == pytest.approx(data.step) and math.exp(hi[5]) == pytest.approx(data.span)
    assert math.exp(lo[6]) == pytest.approx(data.step / 4) and math.exp(hi[6]) == pytest.approx(data.span)
    plain_lo, plain_hi = slot_bounds(CW_SE_LIN, data, OptimConfig(data_bounds=False))
    assert plain_lo[4] < lo[4] and plain_hi[5] > hi[5]


def test_fit_finds_a_window():
    """A level raised between x = 4 and 6: CW(SE, SE) beats one SE by BIC, and the best of a few seeded
    multi-start fits (the likelihood of a window is multi-modal, as a search sees it) puts its edges there."""
    rng = np.random.default_rng(3)
    x = np.linspace(0, 10, 150)
    y = np.where((x > 4.0) & (x < 6.0), 4.0, 0.0) + 0.2 * np.sin(x) + 0.1 * rng.standard_normal(x.size)
    data = FitData.from_dataset(Dataset.from_arrays(x, y, test_fraction=0.0))
    cfg = OptimConfig(n_restarts=3, n_screen=30, data_bounds=True)
    se2 = library.squared_exponential("hp2", "hp3").tokens
    k = Kernel(("changewindow", "x", *SE, *se2, "hp4", "hp5", "hp6"))
    fits = [fit_kernel(k, data, cfg, np.random.default_rng(seed)) for seed in (1, 2, 3)]
    se = fit_kernel(Kernel(SE), data, cfg, np.random.default_rng(0))
    assert se.ok and all(f.ok and f.bic < se.bic - 100 for f in fits)
    best = min(fits, key=lambda f: f.bic)
    centre, width = math.exp(best.theta[4]), math.exp(best.theta[5])  # model units: x̃ = 1 + x/10
    a, b = (centre - width / 2 - 1.0) * 10.0, (centre + width / 2 - 1.0) * 10.0
    assert abs(a - 4.0) < 0.1 and abs(b - 6.0) < 0.1


def test_expansions_and_mutations_use_it_only_with_the_option():
    rng = np.random.default_rng(4)
    base = library.compose(["+", "SE", "PER"])
    with_cw = [expand_once(base, rng, 20, families=("changewindow",)) for _ in range(60)]
    without = [expand_once(base, rng, 20, families=("changepoint",)) for _ in range(60)]
    assert any("changewindow" in (t or ()) for t in with_cw)
    assert not any("changewindow" in (t or ()) for t in without)
    assert not any("changepoint" in (t or ()) for t in with_cw)  # the two options are independent
    for t in with_cw:
        if t is not None:
            check_tree(t, n_hyper=20)
    vcfg = VariationConfig(psd=PSDConfig(w=6))
    kids = [mutate(base, rng, vcfg, get_grammar(20, families=("changewindow",))).kernel for _ in range(80)]
    windows = [k for k in kids if "changewindow" in k.tokens]
    assert windows
    # PSD by construction: a window over two operands that pass the check passes it too. (A window
    # over an indefinite operand, e.g. the constant −1, can slip through the empirical check when
    # its random windows miss the random inputs; its fit then fails, as any non-PSD kernel's.)
    checked = 0
    for k in windows:
        i = k.tokens.index("changewindow")
        first = subtree_end(k.tokens, i + 2)
        second = subtree_end(k.tokens, first)
        parts = [Kernel(k.tokens[i + 2:first]), Kernel(k.tokens[first:second])]
        if all(check_psd(p, np.random.default_rng(5), PSDConfig(w=6)).ok for p in parts):
            assert check_psd(Kernel(k.subtree(i)), np.random.default_rng(5), PSDConfig(w=6)).ok
            checked += 1
    assert checked >= 1
    plain = [mutate(base, rng, vcfg, get_grammar(20, families=("changepoint",))).kernel for _ in range(80)]
    assert not any("changewindow" in k.tokens for k in plain)


def test_expansion_draws_without_windows_are_those_with_change_points_only():
    """Same generator state, option absent or False: the same trees (the window moves are appended last)."""
    base = library.compose(["*", "SE", "PER"])
    for seed in range(30):
        a = expand_once(base, np.random.default_rng(seed), 20, families=("changepoint",))
        b = expand_once(base, np.random.default_rng(seed), 20, families=frozenset({"changepoint"}))
        assert a == b


class _Recorder:
    """An executor that fits nothing and records the kernels it is given, batch by batch."""

    stages = frozenset()
    workers = 1
    replay = None

    def __init__(self) -> None:
        self.batches: list[list[tuple[str, ...]]] = []

    def map(self, tasks, should_stop=None, on_result=None):
        self.batches.append([t.tokens for t in tasks])
        return [None] * len(tasks)


@dataclass(frozen=True)
class _WithoutWindows(Grammar):
    """The symbol lists of the grammar with windows, minus ``changewindow``."""

    def _by_kind(self, typ: type) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        full = get_grammar(self.n_hyper, {*self.families, "changewindow"})._by_kind(typ)
        return tuple(tuple(t for t in kind if t != "changewindow") for kind in full)  # type: ignore[return-value]


def _first_population(data: FitData, cfg: SearchConfig, seed: int) -> list[str]:
    """Canonical forms of the first batch a search sends to be fitted (a kernel drawn twice goes once).

    One generation: the first population is drawn before the generation loop, whatever its cap.
    """
    ex = _Recorder()
    run_evocov(data, cfg.with_(generations=1), ex, seed=seed)  # type: ignore[arg-type]
    return [Kernel(t).canonical for t in ex.batches[0]]


def test_quick_preset_first_population_is_unchanged():
    """The ``quick`` preset draws, for a fixed seed, the first population it drew before windows existed:
    the same with the option absent or False, and equal to a population drawn (seeds, then random trees
    as ``run_evocov`` draws them) from a grammar that has no window operator at all."""
    x = 1950 + np.arange(96) / 12.0
    data = FitData.from_dataset(Dataset.from_arrays(x, np.sin(2 * np.pi * x) + 0.1 * x, test_fraction=0.1))
    cfg = preset("quick", ets_seeds=False)  # the draws from the grammar (the ETS seeds come before them)
    assert "changewindow" not in cfg.families and not any(
        "changewindow" in preset(p, a).families for p in ("quick", "standard", "paper", "quick-fixed")
        for a in ("evocov", "random", "gwtf", "gpss"))
    seed = 11
    absent = _first_population(data, cfg, seed)
    explicit = _first_population(data, cfg.with_(families=("changepoint",)), seed)
    assert absent == explicit and len(absent) > cfg.population // 2
    # The reference draw: the grammar with windows, the window symbol struck out by hand (what the
    # grammar was before it had one: the symbol was appended to every list it is in).
    grammar = _WithoutWindows(cfg.n_hyper, get_grammar(cfg.n_hyper).pset, cfg.grammar.families)
    n_seed = round(cfg.seed_fraction * cfg.population)
    ref = list(seed_kernels(n_seed, sub_rng(seed, 1)))
    rng = sub_rng(seed, 0)
    ref += [random_kernel(grammar, rng, cfg.d_min, cfg.d_max, cfg.variation)[0]
            for _ in range(cfg.population - len(ref))]
    assert absent == list(dict.fromkeys(k.canonical for k in ref))  # the cache fits a repeated kernel once
    # And the option does change what is drawn (the comparison can fail).
    with_cw = _first_population(data, cfg.with_(families=("changepoint", "changewindow")), seed)
    assert with_cw != absent


def test_search_with_changewindows_is_reproducible():
    x = 1950 + np.arange(72) / 12.0
    y = np.where((x > 1952) & (x < 1953.5), 3.0, 0.0) + np.sin(2 * np.pi * x)
    y = y + 0.1 * np.random.default_rng(6).standard_normal(72)
    data = FitData.from_dataset(Dataset.from_arrays(x, y, test_fraction=0.1))
    cfg = preset("quick", ets_seeds=False, population=10, mu=3, generations=3, d_min=2, d_max=5, psd_w=6,
                 max_evals=15, n_screen=4, rho_max=30, time_budget=0.0, families=("changepoint", "changewindow"),
                 p_expand=0.6, select_top=1)
    a = run_search(data, cfg, seed=3, workers=1)
    b = run_search(data, cfg, seed=3, workers=1)
    assert [r.expression for r in a.records] == [r.expression for r in b.records]
    assert any("changewindow" in r.expression for r in a.records)
    assert a.best is not None and a.best.ok


def test_gpss_baseline_expands_with_changewindows():
    """ABCD's S -> CW(S, S): both copies inherit the parent's values; centre, width and steepness are new."""
    from evocov_core.searches.gpss import _start, build, expansions, structure_str

    parent = ("+", ("leaf", "SE", 0), ("leaf", "PER", 1))
    assert not any("CW" in structure_str(s) for s in expansions(parent, ("SE", "LIN"), families=("changepoint",)))
    cws = [s for s in expansions(parent, ("SE", "LIN"), families=("changewindow",)) if "CW" in structure_str(s)]
    assert len(cws) == 3 and structure_str(cws[0]) == "CW(SE + PER, SE + PER)"  # at the root and at each leaf
    assert structure_str(cws[1]) == "CW(SE, SE) + PER"
    kernel, _ = build(cws[0])
    check_tree(kernel.tokens)
    pk, _ = build(parent)
    p = pk.n_params
    assert kernel.tokens[0] == "changewindow" and kernel.n_params == 2 * p + 3
    x = 1950 + np.arange(48) / 12.0
    data = FitData.from_dataset(Dataset.from_arrays(x, np.sin(2 * np.pi * x), test_fraction=0.1))
    pfit = fit_kernel(pk, data, OptimConfig(n_restarts=1, n_screen=4, max_evals=10), np.random.default_rng(0))
    _, start = _start(cws[0], pfit, {0: list(pk.slots[:2]), 1: list(pk.slots[2:])})
    assert start is not None
    vals = np.array(start.theta)
    assert np.isnan(vals[-3:]).all() and np.isfinite(vals[:-3]).all()
    np.testing.assert_allclose(vals[:p], vals[p:2 * p])


def test_gpss_search_with_changewindows_runs():
    x = 1950 + np.arange(60) / 12.0
    y = np.where((x > 1952) & (x < 1953), 2.0, 0.0) + 0.1 * np.random.default_rng(7).standard_normal(60)
    data = FitData.from_dataset(Dataset.from_arrays(x, y, test_fraction=0.1))
    cfg = preset("quick-fixed", "gpss", generations=2, n_restarts=1, families=("changewindow",), base_kernels=("SE",))
    r = run_search(data, cfg, seed=0, workers=1)
    assert any(rec.expression.startswith("changewindow") for rec in r.records)

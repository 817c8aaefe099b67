"""Searches: Algorithm 1 bookkeeping, reproducibility, executors, cancellation, the explorer."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

from evocov_core.data import Dataset
from evocov_core.fitting.fits import DaskExecutor, ProcessExecutor, SerialExecutor
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import OptimConfig, fit_kernel
from evocov_core.language.grammar import check_tree
from evocov_core.language.library import compose
from evocov_core.searches import ConfigError, SearchConfig, explore_mutations, preset, run_search
from evocov_core.searches.gpss import build, expansions


@pytest.fixture(scope="module")
def data() -> FitData:
    """A small periodic series with a trend (n = 48), the test part held out."""
    rng = np.random.default_rng(7)
    x = np.arange(60) / 12.0
    y = 0.5 * x + np.sin(2 * np.pi * x) + 0.1 * rng.standard_normal(x.size)
    return FitData.from_dataset(Dataset.from_arrays(x, y, test_fraction=0.2))


def tiny(algorithm: str = "evocov", **kw: object) -> SearchConfig:
    base = dict(population=8, generations=3, mu=3, d_min=2, d_max=5, psd_w=6, n_restarts=1, max_evals=15,
                n_screen=4, rho_max=30)
    if algorithm == "gwtf":
        base.update(population=2, generations=3)
    if algorithm == "gpss":
        base.update(generations=2, base_kernels=("SE", "PER"))
    if algorithm == "random":
        base.update(population=10)
    base.update(kw)
    return preset("quick-fixed", algorithm, **base)


def signature(result) -> list[tuple]:
    return [(r.generation, r.index, r.expression, r.bic) for r in result.records]


@pytest.mark.parametrize("algorithm", ["evocov", "random", "gwtf", "gpss"])
def test_seeded_runs_are_reproducible(data: FitData, algorithm: str) -> None:
    """Same seed, same kernels and scores; a different seed explores differently."""
    cfg = tiny(algorithm)
    with SerialExecutor(data, cfg.optim) as ex:
        a = run_search(data, cfg, seed=3, executor=ex)
        b = run_search(data, cfg, seed=3, executor=ex)
    assert signature(a) == signature(b)
    assert a.best is not None and a.best.ok
    assert a.best.bic == min(r.bic for r in a.records if math.isfinite(r.bic))
    if algorithm != "gpss":  # GPSS is deterministic in its candidates
        with SerialExecutor(data, cfg.optim) as ex:
            c = run_search(data, cfg, seed=4, executor=ex)
        assert signature(c) != signature(a)


def test_evocov_generation_count_and_progress(data: FitData) -> None:
    """G generations are evaluated (Algorithm 1: G−1 loop steps + the final evaluation),
    each reported once with N kernels, and every kernel is well typed and within o_max."""
    cfg = tiny()
    seen = []
    with SerialExecutor(data, cfg.optim) as ex:
        res = run_search(data, cfg, seed=1, executor=ex, progress=seen.append)
    assert [p.generation for p in seen] == list(range(1, cfg.generations + 1))
    assert all(len(p.evaluated) == cfg.population for p in seen)
    assert res.n_evaluations == cfg.population * cfg.generations
    assert all(p.best is not None for p in seen)
    best_curve = [p.stats.best_so_far_bic for p in seen]
    assert best_curve == sorted(best_curve, reverse=True)  # the best so far never gets worse
    for r in res.records:
        check_tree(tuple(_tokens(r.expression)), max_depth=cfg.o_max)
    # The selected kernels come back in the next generation with origin "selected".
    if not seen[0].stats.restarted:
        assert sum(r.origin == "selected" for r in seen[1].evaluated) == cfg.mu


def _tokens(expr: str) -> list[str]:
    from evocov_core.runs.kernel_file import parse_expression

    return list(parse_expression(expr).tokens)


def test_restart_when_no_improvement(data: FitData) -> None:
    """With β huge, a fresh population continues once (its previous best is ∞), then the
    next generation cannot improve enough and restarts: every second step restarts."""
    cfg = tiny(beta=1e9, generations=6, patience=1)
    with SerialExecutor(data, cfg.optim) as ex:
        res = run_search(data, cfg, seed=2, executor=ex)
    assert [h.restarted for h in res.history] == [False, True, False, True, False, False]
    assert res.restarts == 2


def test_restart_patience(data: FitData) -> None:
    """With patience 2 a restart needs two stalled generations in a row."""
    cfg = tiny(beta=1e9, generations=7, patience=2)
    with SerialExecutor(data, cfg.optim) as ex:
        res = run_search(data, cfg, seed=2, executor=ex)
    assert [h.restarted for h in res.history] == [False, False, True, False, False, True, False]


def test_process_pool_and_dask_equal_serial(data: FitData) -> None:
    """Per-task seeds make the executor irrelevant to the result."""
    cfg = tiny(generations=2)
    with SerialExecutor(data, cfg.optim) as ex:
        serial = run_search(data, cfg, seed=5, executor=ex)
    with ProcessExecutor(data, cfg.optim, workers=2) as ex:
        pool = run_search(data, cfg, seed=5, executor=ex)
    assert signature(pool) == signature(serial)
    with DaskExecutor(data, cfg.optim, workers=2) as ex:
        dask = run_search(data, cfg, seed=5, executor=ex)
    assert signature(dask) == signature(serial)


def test_cancel_returns_promptly_with_a_valid_best(data: FitData) -> None:
    """Cancelling mid-run stops within about one kernel fit and keeps the best so far."""
    cfg = tiny(generations=50, population=10, mu=3)
    stop = threading.Event()
    seen = []

    def progress(p) -> None:
        seen.append(p)
        if p.generation == 2:
            stop.set()

    with SerialExecutor(data, cfg.optim) as ex:
        res = run_search(data, cfg, seed=1, executor=ex, progress=progress, should_stop=stop.is_set)
    assert res.status == "cancelled"
    assert len(seen) <= 3
    assert res.best is not None and res.best.ok


def test_cancel_inside_a_generation(data: FitData) -> None:
    """A stop requested between two fits ends the run before the generation completes."""
    cfg = tiny(generations=5, population=12, mu=3)
    calls = {"n": 0}

    def should_stop() -> bool:
        calls["n"] += 1
        return calls["n"] > 16  # a few fits into generation 2

    with SerialExecutor(data, cfg.optim) as ex:
        res = run_search(data, cfg, seed=1, executor=ex, should_stop=should_stop)
    assert res.status == "cancelled"
    assert res.n_evaluations < cfg.population * cfg.generations


def test_config_validation_messages() -> None:
    with pytest.raises(ConfigError, match="mu must satisfy"):
        SearchConfig(population=10, mu=10)
    with pytest.raises(ConfigError, match="p_mutation \\+ p_crossover"):
        SearchConfig(p_mutation=0.5, p_crossover=0.6)
    with pytest.raises(ConfigError, match="d_min <= d_max"):
        SearchConfig(d_min=6, d_max=5)
    with pytest.raises(ConfigError, match="metric must be one of"):
        SearchConfig(metric="aic")
    with pytest.raises(ConfigError, match="L-BFGS-B needs a gradient"):
        SearchConfig(metric="sopl", method="lbfgs")
    with pytest.raises(ConfigError, match="unknown setting"):
        SearchConfig.from_dict({"populations": 3})
    assert SearchConfig.from_dict(SearchConfig().to_dict()) == SearchConfig()


def test_paper_preset_is_section_6_2() -> None:
    c = preset("paper", "evocov")
    assert (c.population, c.generations, c.mu, c.p_mutation, c.p_crossover, c.beta) == (141, 141, 14, 0.4, 0.6, 1e-5)
    assert (c.d_min, c.d_max, c.psd_w, c.o_max, c.rho_max, c.sigma_theta, c.ref_fun_call) == (5, 15, 20, 40, 250, 0.1,
                                                                                             300)
    assert preset("paper", "random").population == 20000
    g = preset("paper", "gwtf")
    assert (g.generations, g.population) == (13, 200)


def test_gpss_expansions_follow_the_grammar() -> None:
    """S → S + B, S → S × B at every subexpression, and B → B' at every leaf."""
    s = ("+", ("leaf", "SE", 0), ("leaf", "PER", 1))
    ex = expansions(s, ("SE", "PER"))
    texts = {build(e)[0].canonical for e in ex}
    assert build(("+", ("leaf", "SE", 0), ("leaf", "PER", 1), ("leaf", "SE", None)))[0].canonical in texts
    assert build(("*", s, ("leaf", "PER", None)))[0].canonical in texts
    assert build(("+", ("leaf", "PER", None), ("leaf", "PER", 1)))[0].canonical in texts
    # 3 nodes × 2 bases × 2 operators + 2 leaves × 1 replacement
    assert len(ex) == 14


def test_gpss_children_inherit_parent_values(data: FitData) -> None:
    """Expanding the best structure starts its kept base kernels at the fitted values."""
    from evocov_core.searches.gpss import _start

    parent = ("leaf", "SE", 0)
    kernel, leaves = build(parent)
    fit = fit_kernel(kernel, data, OptimConfig(n_restarts=1, max_evals=20), np.random.default_rng(0))
    child = ("+", ("leaf", "SE", 0), ("leaf", "PER", None))
    k2, start = _start(child, fit, {0: leaves[0][1]})
    assert start is not None
    values = dict(zip(k2.slots, start.theta, strict=True))
    assert values["hp0"] == fit.theta[0] and values["hp1"] == fit.theta[1]
    assert all(math.isnan(values[s]) for s in k2.slots[2:])


def test_explorer_ratios(data: FitData) -> None:
    """Ratios are fractions of mutants better in RMSE, smaller in q, and both."""
    base = fit_kernel(compose(["+", "SE", "PER"]), data, OptimConfig(n_restarts=1, max_evals=30),
                      np.random.default_rng(1))
    cfg = tiny()
    with SerialExecutor(data, cfg.optim) as ex:
        res = explore_mutations(base, data, cfg, ex, n_mutations=6, seed=2, batch=3)
    recs = res.search.records
    assert len(recs) == 6
    better = sum(r.test_rmse is not None and r.test_rmse < base.test_rmse for r in recs) / 6
    simpler = sum(r.q < base.q for r in recs) / 6
    assert res.better_fitted == pytest.approx(better)
    assert res.simpler == pytest.approx(simpler)
    assert 0.0 <= res.both <= min(res.better_fitted, res.simpler)
    assert all(r.origin.startswith("mutation:") or r.origin == "parent" for r in recs)


def test_with_derived_fills_crossover_from_mutation_and_back():
    """p_crossover = 1 − p_mutation, derived in one place for the command line and the dashboard."""
    from evocov_core.searches import preset
    from evocov_core.searches.config import with_derived

    assert with_derived({"p_mutation": 0.25}) == {"p_mutation": 0.25, "p_crossover": 0.75}
    assert with_derived({"p_crossover": 0.7, "seed_fraction": 0.5}) == {
        "p_crossover": 0.7, "p_mutation": 1.0 - 0.7, "seed_fraction": 0.5}
    both = {"p_mutation": 0.3, "p_crossover": 0.7}
    assert with_derived(both) == both and with_derived({}) == {}
    cfg = preset("quick", "evocov", **with_derived({"p_mutation": 0.35}))
    assert (cfg.p_mutation, cfg.p_crossover) == (0.35, 1.0 - 0.35)

"""The budgeted search: time budget, fit cache, screening, seeded structures, model choice, averaging."""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np
import pytest

from evocov_core.data import Dataset
from evocov_core.fitting.averaging import bic_weights, ensemble_predict, mixture, score_weights
from evocov_core.fitting.fits import SerialExecutor
from evocov_core.fitting.gp import posterior
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import FitStatus, OptimConfig, fit_kernel, slot_bounds, slot_roles
from evocov_core.language.grammar import check_tree, subtree_end
from evocov_core.language.kernel import Kernel
from evocov_core.language.library import compose
from evocov_core.language.psd import PSDConfig, check_psd
from evocov_core.runs.kernel_file import parse_expression
from evocov_core.searches import ConfigError, preset, run_search, search_stages, select
from evocov_core.searches.select import INDEFINITE, choose_model, indefiniteness
from evocov_core.searches.stages import screen_mask
from evocov_core.searches.structures import expand, expand_once, seed_kernels, seed_structures
from evocov_core.searches.validate import DEFAULT_ORIGINS
from evocov_core.searches.variation import VariationConfig


def _series(n: int, seed: int = 0) -> FitData:
    """Monthly-like series with trend and a yearly cycle; the last 10 % held out."""
    rng = np.random.default_rng(seed)
    x = 1950 + np.arange(n) / 12.0
    y = 0.3 * (x - 1950) + 2 * np.sin(2 * np.pi * x) + 0.3 * rng.standard_normal(n)
    return FitData.from_dataset(Dataset.from_arrays(x, y, test_fraction=0.1))


@pytest.fixture(scope="module")
def small() -> FitData:
    return _series(90)


def _budgeted(**kw: object):
    # The mechanics of budget, cache and screening, without the exponential-smoothing seeds (eight of a
    # ten-kernel population; tests/searches/test_spectral_seeds.py and test_statespace.py cover them), and the
    # tail choice's head refits (the preset's choice of origins: test_validate.py and
    # test_the_preset_chooses_by_the_origins_without_a_head_refit).
    base = dict(population=10, mu=3, generations=3, d_min=2, d_max=5, psd_w=6, max_evals=15, n_screen=4, rho_max=30,
                time_budget=0.0, ets_seeds=False, choice="tail", form_margin=1.0)
    base.update(kw)
    return preset("quick", **base)


# --- presets and settings ---------------------------------------------------------------


def test_presets_by_time() -> None:
    assert preset("quick").time_budget == 60.0
    assert preset("standard").time_budget == 300.0
    assert preset("paper").time_budget == 0.0 and not preset("paper").cache_fits
    fixed = preset("quick-fixed")
    assert fixed.time_budget == 0.0 and fixed.select_top == 1 and fixed.screen_points == 0
    assert fixed.population * fixed.generations == 1500
    with pytest.raises(ConfigError, match="time_budget"):
        preset("quick", time_budget=-1.0)
    with pytest.raises(ConfigError, match="screen_points"):
        preset("quick", screen_points=5)


# --- time budget --------------------------------------------------------------------------


def test_budget_respected_on_900_points() -> None:
    """A 5 s budget on a 900-point series ends by its clock (not by running out of generations) with a valid
    kernel. How close to 5 s it ends is measured in bench/ (``bench long``, ``bench accuracy``), not here."""
    data = _series(1000)
    assert data.n >= 900
    cfg = preset("quick", time_budget=5.0)
    res = run_search(data, cfg, seed=0, workers=1)
    assert res.best is not None and res.best.ok and math.isfinite(res.best.bic)
    assert res.budget_spent and res.status == "finished"
    # 900 > 240 points: candidates are screened first. With the preset's exponential-smoothing seeds,
    # fitted unscreened first, a 5 s budget may end before any screening: checked without them.
    bare = run_search(data, cfg.with_(ets_seeds=False), seed=0, workers=1)
    assert bare.n_screen_fits > 0


def test_fit_deadline_returns_best_point_so_far(small: FitData) -> None:
    k = compose(["*", "SE", "PER"])
    cfg = OptimConfig(n_screen=30, n_restarts=3, max_evals=200)
    fit = fit_kernel(k, small, cfg, np.random.default_rng(0), deadline=time.time())
    assert fit.ok and fit.n_evals == 1  # stops after the first evaluation, with a valid point


# --- cache and screening ------------------------------------------------------------------


def test_cache_never_fits_a_canonical_kernel_twice(small: FitData) -> None:
    cfg = _budgeted(generations=6, population=12, mu=4, select_top=1)
    with SerialExecutor(small, cfg.optim, search_stages(small, cfg)) as ex:
        res = run_search(small, cfg, seed=2, executor=ex)
    canon = [r.canonical for r in res.records]
    assert len(canon) == len(set(canon))
    assert res.n_cache_hits > 0  # selected parents come back every generation
    # Without the cache the same run refits them.
    cfg2 = cfg.with_(cache_fits=False)
    with SerialExecutor(small, cfg2.optim, search_stages(small, cfg2)) as ex:
        res2 = run_search(small, cfg2, seed=2, executor=ex)
    assert len({r.canonical for r in res2.records}) < len(res2.records)


def test_screening_promotes_the_best_share() -> None:
    data = _series(160)
    cfg = _budgeted(screen_points=60, promote_fraction=0.3, generations=2, select_top=1)
    assert "screen" in search_stages(data, cfg) and search_stages(data, cfg)["screen"][0].n == 60
    with SerialExecutor(data, cfg.optim, search_stages(data, cfg)) as ex:
        res = run_search(data, cfg, seed=1, executor=ex)
    first = [r for r in res.records if r.generation == 1]
    out = [r for r in first if r.status == FitStatus.SCREENED_OUT]
    full = [r for r in first if r.status != FitStatus.SCREENED_OUT]
    assert len(full) == math.ceil(0.3 * (len(first)))
    assert res.n_screen_fits >= len(out) > 0
    assert all(math.isinf(r.bic) for r in out)
    assert res.best.kernel.canonical not in {r.canonical for r in out}


@pytest.mark.parametrize("metric", ["posterior_lml", "sopl", "rmse"])
def test_split_metrics_are_fitted_as_lml_on_subsets(metric: str) -> None:
    """Screening and head subsets have no split: there the stages fit LML, and a screened search with a
    split metric finds kernels (each such subset fit used to fail, and the search returned none)."""
    data = _series(160)
    cfg = _budgeted(metric=metric, screen_points=60, select_top=3, generations=2)
    stages = search_stages(data, cfg)
    assert stages["screen"][0].split is None and stages["screen"][1].metric == "lml"
    assert stages["head"][0].split is None and stages["head"][1].metric == "lml"
    assert stages["promote"][1].metric == metric  # all the data: the search's own metric
    with SerialExecutor(data, cfg.optim, stages) as ex:
        res = run_search(data, cfg, seed=1, executor=ex)
    assert res.best is not None and res.best.ok and res.best.metric == metric
    assert any(r.status == FitStatus.SCREENED_OUT for r in res.records)
    assert any(math.isfinite(row["tail_score"]) for row in res.selection)


def test_a_search_choosing_by_refitted_origins_is_reproducible(small: FitData) -> None:
    """``choice="refit_origins"``: every candidate is refitted at each origin (recorded in the run's
    log, so a replay has them), its row carries the origins' CRPS, the returned kernel is one of the
    candidates, its spread is calibrated on those forecasts, and the same seed gives the same run."""
    cfg = _budgeted(select_top=4, choice="refit_origins", calibration="origins", generations=2)
    runs = []
    for _ in range(2):
        with SerialExecutor(small, cfg.optim, search_stages(small, cfg)) as ex:
            runs.append(run_search(small, cfg, seed=3, executor=ex))
    res, again = runs
    assert len(res.selection) >= 2 and all(math.isfinite(r["origins_crps"]) for r in res.selection)
    chosen = [r for r in res.selection if r["chosen"]]
    assert len(chosen) == 1 and chosen[0]["origins_crps"] == min(r["origins_crps"] for r in res.selection)
    assert res.best.kernel.canonical == chosen[0]["canonical"]
    assert res.calibration.rule == "origins" and res.calibration.errors > 0
    refits = [key for key in res.run_log.fits if len(key) == 4 and key[:2] == (3, 7937)]
    assert len(refits) == 4 * len(res.selection)  # four origins per candidate, each in the run's log
    assert again.best.kernel.canonical == res.best.kernel.canonical and again.best.bic == res.best.bic
    assert [r["origins_crps"] for r in again.selection] == [r["origins_crps"] for r in res.selection]


def test_screening_needs_the_stage() -> None:
    data = _series(160)
    cfg = _budgeted(screen_points=60, select_top=1)
    with SerialExecutor(data, cfg.optim) as ex, pytest.raises(ValueError, match="no stage 'screen'"):
        run_search(data, cfg, seed=1, executor=ex)


@pytest.mark.parametrize(("n", "m"), [(100, 40), (901, 240), (50, 50), (30, 60)])
def test_screen_mask_spreads_and_keeps_the_end(n: int, m: int) -> None:
    mask = screen_mask(n, m)
    assert mask.sum() == min(n, m) or (m < n and m - 2 <= mask.sum() <= m)
    assert mask[0] and mask[-1]
    if m < n:
        assert mask[n - m // 2:].all()  # the most recent half, contiguous


# --- seeded structures and expansions ---------------------------------------------------


def test_seeded_structures_are_well_typed_and_psd() -> None:
    structs = seed_structures()
    assert len(structs) == 24
    kernels = seed_kernels(100, np.random.default_rng(0))
    assert len(kernels) == 24 and len({k.canonical for k in kernels}) == 24
    assert [k.canonical for k in kernels[:4]] == [compose(b).canonical for b in ("SE", "PER", "LIN", "RQ")]
    for k in kernels:
        check_tree(k.tokens, n_hyper=20)
        assert check_psd(k, np.random.default_rng(1), PSDConfig(w=8)).ok, k.infix


def test_expansion_keeps_the_parent_and_adds_a_base_kernel() -> None:
    rng = np.random.default_rng(3)
    parent = compose(["*", "SE", "PER"])
    theta = tuple(float(v) for v in range(parent.n_params))
    cfg = VariationConfig(psd=PSDConfig(w=6))
    kinds = set()
    for _ in range(30):
        child = expand(parent, rng, cfg, 20, theta=theta, log_noise=-2.0)
        assert child.origin == "expansion"
        check_tree(child.kernel.tokens, n_hyper=20)
        kept = dict(zip(parent.slots, theta, strict=True))
        for s, v in zip(child.kernel.slots, child.theta, strict=True):
            assert (v == kept[s]) if s in kept else math.isnan(v)
        kinds.add(child.kernel.tokens[0])
        assert child.kernel.n_params > parent.n_params or child.kernel.canonical != parent.canonical
    assert {"add", "multiply"} <= kinds


def test_expansion_replaces_a_base_kernel() -> None:
    rng = np.random.default_rng(0)
    parent = compose("SE")
    seen = {tuple(t) for t in (expand_once(parent, rng, 20) for _ in range(60)) if t is not None}
    # Some child is a base kernel other than SE (B -> B'), none keeps SE's slots for it.
    bases = {compose(b).canonical for b in ("PER", "LIN", "RQ")}
    assert any(Kernel(t).canonical in bases for t in seen)


def test_expansion_without_free_slots_returns_the_parent() -> None:
    parent = compose(["+", "SE", "SE"])  # 4 slots
    child = expand(parent, np.random.default_rng(0), VariationConfig(psd=PSDConfig(w=4)), 4)
    assert child.origin == "parent" and child.kernel == parent


# --- data-tied bounds -----------------------------------------------------------------------


def test_data_bounds_tie_lengthscales_and_periods(small: FitData) -> None:
    k = compose(["+", "SE", "PER"])
    roles = slot_roles(k)
    plain_lo, plain_hi = slot_bounds(k, small, OptimConfig())
    lo, hi = slot_bounds(k, small, OptimConfig(data_bounds=True))
    h = small.step
    for i, s in enumerate(k.slots):
        if roles[s] == {"lengthscale"}:
            assert lo[i] == pytest.approx(math.log(h / 2))
        elif roles[s] == {"frequency"}:
            assert lo[i] == pytest.approx(math.log(2 * math.pi / small.span))
            assert hi[i] == pytest.approx(math.log(math.pi / h))
        else:
            assert (lo[i], hi[i]) == (plain_lo[i], plain_hi[i])
    fit = fit_kernel(k, small, OptimConfig(data_bounds=True, n_screen=10), np.random.default_rng(0))
    z = fit.z
    assert np.all(z >= lo - 1e-9) and np.all(z <= hi + 1e-9)


def test_subset_keeps_units_and_bounds(small: FitData) -> None:
    mask = screen_mask(small.n, 40)
    sub = small.subset(mask)
    assert sub.n == mask.sum()
    assert sub.step == small.step and sub.span == small.span and sub.frequency_peaks == small.frequency_peaks
    np.testing.assert_array_equal(sub.y, small.y[mask])


# --- model choice and averaging ----------------------------------------------------------


def test_mixture_equals_hand_computation() -> None:
    means = [[0.0, 1.0], [2.0, 3.0]]
    variances = [[1.0, 0.5], [4.0, 0.5]]
    w = [0.25, 0.75]
    mean, var = mixture(means, variances, w)
    np.testing.assert_allclose(mean, [0.25 * 0 + 0.75 * 2, 0.25 * 1 + 0.75 * 3])
    # E[y²] − E[y]²
    e2 = [0.25 * (1 + 0) + 0.75 * (4 + 4), 0.25 * (0.5 + 1) + 0.75 * (0.5 + 9)]
    np.testing.assert_allclose(var, np.array(e2) - mean**2)
    with pytest.raises(ValueError, match="sum to 1"):
        mixture(means, variances, [0.5, 0.6])


def test_weights() -> None:
    np.testing.assert_allclose(bic_weights([10.0, 12.0, math.inf]), np.array([1, math.exp(-1), 0]) / (1 + math.exp(-1)))
    np.testing.assert_allclose(score_weights([0.0, math.log(3.0)]), [0.25, 0.75])
    with pytest.raises(ValueError, match="no finite"):
        score_weights([-math.inf])


def test_ensemble_predict_is_the_mixture_of_the_posteriors(small: FitData) -> None:
    cfg = OptimConfig(n_screen=10)
    fits = [fit_kernel(compose(s), small, cfg, np.random.default_rng(i)) for i, s in enumerate(["SE", "PER"])]
    X = np.linspace(1.8, 2.3, 7)[:, None]
    mean, var = ensemble_predict(small, [(fits[0], 0.4), (fits[1], 0.6)], X)
    posts = [posterior(f.kernel, small.inputs, small.y, np.array(f.theta), f.log_noise, X, jitter=f.jitter)
             for f in fits]
    m_hand = 0.4 * posts[0].mean + 0.6 * posts[1].mean
    v_parts = [p.var + f.noise_variance for p, f in zip(posts, fits, strict=True)]
    v_hand = 0.4 * (v_parts[0] + posts[0].mean**2) + 0.6 * (v_parts[1] + posts[1].mean**2) - m_hand**2
    np.testing.assert_allclose(mean, m_hand, rtol=1e-10)
    np.testing.assert_allclose(var, v_hand, rtol=1e-8, atol=1e-12)


def test_model_choice_by_tail_score(small: FitData) -> None:
    cfg = _budgeted(select_top=4, generations=4)
    stages = search_stages(small, cfg)
    assert "head" in stages and stages["head"][0].n == small.split.X_t.shape[0]
    with SerialExecutor(small, cfg.optim, stages) as ex:
        res = run_search(small, cfg, seed=5, executor=ex)
        again = run_search(small, cfg, seed=5, executor=ex)
    assert res.best_bic is not None and res.best_bic.bic == min(r.bic for r in res.records)
    rows = res.selection
    assert 2 <= len(rows) <= 4
    assert [r["bic"] for r in rows] == sorted(r["bic"] for r in rows)
    chosen = [r for r in rows if r["chosen"]]
    assert len(chosen) == 1 and chosen[0]["canonical"] == res.best.kernel.canonical
    assert chosen[0]["tail_score"] == max(r["tail_score"] for r in rows)
    assert sum(w for _, w in res.ensemble) == pytest.approx(1.0)
    # Fixed counts and no budget: same seed, same result, model choice included.
    assert again.best.kernel.canonical == res.best.kernel.canonical and again.selection == res.selection


def test_choose_model_without_head_stage_keeps_lowest_bic(small: FitData) -> None:
    cfg = OptimConfig(n_screen=6)
    fits = sorted((fit_kernel(compose(s), small, cfg, np.random.default_rng(0)) for s in ("SE", "PER", "LIN")),
                  key=lambda f: f.bic)
    with SerialExecutor(small, cfg) as ex:
        choice = choose_model(small, fits, ex, seed=0)
    assert choice.chosen is fits[0] and choice.rows == () and choice.ensemble == ()


def test_indefiniteness_separates_a_kernel_from_round_off(small: FitData) -> None:
    se = fit_kernel(compose("SE"), small, OptimConfig(n_screen=6), np.random.default_rng(0))
    assert se.ok and indefiniteness(small, se) < 1e-6
    # |x - x'|^2 / l^2 is no covariance: zero diagonal, so K has negative eigenvalues.
    bad = replace(se, kernel=parse_expression("sq_dist(euc(x), hp0)"), theta=(0.0,))
    assert indefiniteness(small, bad) > 100 * INDEFINITE


def test_indefiniteness_of_a_long_irregular_series_is_decided_without_sorting_its_lags(monkeypatch) -> None:
    """Above EIG_MAX_POINTS the Cholesky decides; the search for distinct lags (a sort of every n² lag, which
    gives up on irregular inputs after 0.8 s at 2,200 points) is not made, and the verdicts are the same."""
    import evocov_core.language.inputs as inputs

    rng = np.random.default_rng(3)
    x = np.sort(rng.uniform(0.0, 100.0, select.EIG_MAX_POINTS + 100))
    long = FitData.from_dataset(Dataset.from_arrays(x, np.sin(x / 3) + 0.1 * rng.normal(size=x.size),
                                                    test_fraction=0.0))
    se = fit_kernel(compose("SE"), long, OptimConfig(n_screen=4, n_restarts=1, max_evals=20), np.random.default_rng(0))
    bad = replace(se, kernel=parse_expression("sq_dist(euc(x), hp0)"), theta=(0.0,))

    def no_sort(*_a, **_k):
        raise AssertionError("distinct lags searched")
    monkeypatch.setattr(inputs, "_distinct_lags", no_sort)
    assert math.isnan(indefiniteness(long, se))  # the Cholesky proved it within the bound
    assert indefiniteness(long, bad) > 100 * INDEFINITE


def test_choose_model_skips_an_indefinite_candidate(small: FitData, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = _budgeted(select_top=4)
    fits = sorted((fit_kernel(compose(s), small, cfg.optim, np.random.default_rng(0)) for s in ("SE", "PER", "LIN")),
                  key=lambda f: f.bic)
    bad = replace(fits[0], kernel=parse_expression("sq_dist(euc(x), hp0)"), theta=(0.0,))
    # The indefinite kernel gets the best tail score: only the validity check keeps it out.
    scores = iter([100.0, 1.0, 3.0, 2.0])
    monkeypatch.setattr(select, "tail_score", lambda data, head, marginal=False: next(scores))
    with SerialExecutor(small, cfg.optim, search_stages(small, cfg)) as ex:
        choice = choose_model(small, [bad, *fits], ex, seed=0)
    chosen, rows, ensemble = choice.chosen, choice.rows, choice.ensemble
    assert [r["valid"] for r in rows] == [False, True, True, True]
    assert rows[0]["indefinite"] > INDEFINITE and rows[0]["weight"] == 0.0 and rows[0]["tail_score"] == 100.0
    assert chosen is fits[1] and rows[2]["chosen"]
    assert bad not in [f for f, _ in ensemble] and math.isclose(sum(w for _, w in ensemble), 1.0)

    # With no valid candidate the choice falls back to all of them, and the rows still say so.
    scores = iter([100.0, 1.0])
    worse = replace(bad, theta=(0.5,))
    with SerialExecutor(small, cfg.optim, search_stages(small, cfg)) as ex:
        choice = choose_model(small, [bad, worse], ex, seed=0)
    chosen, rows = choice.chosen, choice.rows
    assert chosen is bad and [r["valid"] for r in rows] == [False, False] and rows[0]["chosen"]


def test_seeded_first_population(small: FitData) -> None:
    cfg = _budgeted(seed_fraction=0.5, population=10, generations=2, select_top=1)
    with SerialExecutor(small, cfg.optim, search_stages(small, cfg)) as ex:
        res = run_search(small, cfg, seed=0, executor=ex)
    first = [r for r in res.records if r.generation == 1]
    assert sum(r.origin == "seed" for r in first) == 5
    seeded = {compose(b).canonical for b in ("SE", "PER", "LIN", "RQ")}
    assert seeded <= {r.canonical for r in first}


def test_seed_bases_set_the_seeded_structures_and_the_expansions(small: FitData) -> None:
    """With M12 among the seed bases, the first population holds it and expansions can add it;
    the default bases are GPSS's (what the presets ran before the setting existed)."""
    from evocov_core.searches import SearchConfig

    assert preset("quick").seed_bases == ("SE", "PER", "LIN", "RQ")
    bases = ("SE", "PER", "LIN", "RQ", "M12")
    assert len(seed_structures(bases)) == 5 + 15 + 15
    kernels = seed_kernels(100, np.random.default_rng(0), bases)
    assert compose("M12").canonical in {k.canonical for k in kernels}
    for k in kernels:
        assert check_psd(k, np.random.default_rng(1), PSDConfig(w=6)).ok, k.infix
    cfg = _budgeted(seed_fraction=0.5, population=10, generations=2, select_top=1, seed_bases=bases)
    assert SearchConfig.from_dict(cfg.to_dict()) == cfg and cfg.to_dict()["seed_bases"] == list(bases)
    with SerialExecutor(small, cfg.optim, search_stages(small, cfg)) as ex:
        res = run_search(small, cfg, seed=0, executor=ex)
    first = [r for r in res.records if r.generation == 1 and r.origin == "seed"]
    assert compose("M12").canonical in {r.canonical for r in first}
    grew = set()
    rng = np.random.default_rng(5)
    for _ in range(60):
        child = expand(compose("PER"), rng, VariationConfig(psd=PSDConfig(w=4)), 20, bases=("M12",))
        grew.add(child.origin)
        if child.origin == "expansion":
            assert "sqrt" in child.kernel.tokens  # the Matérn-1/2's r = sqrt(r²)
    assert "expansion" in grew


@pytest.mark.parametrize("reseed", [False, True])
def test_restarts_seeded_only_when_asked(small: FitData, reseed: bool) -> None:
    # beta = 1e9: no improvement is ever enough, so each epoch's second generation restarts
    # (the first after a restart always continues: its improvement over f_prev = inf is infinite).
    # Twelve, not ten: with ten, every random tree of the restart at this seed repeats one fitted in
    # generation 1 (the cache does not record it again), and the test would see no "random" origin.
    cfg = _budgeted(seed_fraction=0.5, population=12, generations=4, patience=1, beta=1e9, select_top=1,
                    reseed_restarts=reseed)
    with SerialExecutor(small, cfg.optim, search_stages(small, cfg)) as ex:
        res = run_search(small, cfg, seed=0, executor=ex)
    origins = {g: {r.origin for r in res.records if r.generation == g} for g in (1, 2, 3)}
    assert origins[1] == {"seed", "random"}
    assert not origins[2] & {"seed", "random"}, "generation 2 varies the first population"
    # Generation 3 is the restart: new random trees, and seeds only when asked (a seed already
    # fitted in generation 1 comes from the cache and is not recorded again).
    assert "random" in origins[3] and origins[3] <= {"seed", "random"}
    assert ("seed" in origins[3]) is reseed


def test_expansion_subtrees_are_covariances() -> None:
    # Every expansion wraps a Cov subtree: the parent's tokens survive as one contiguous block.
    rng = np.random.default_rng(11)
    parent = compose(["*", "PER", "LIN"])
    for _ in range(20):
        t = expand_once(parent, rng, 20)
        assert t is not None
        if t[0] in ("add", "multiply") and t[1:1 + len(parent.tokens)] == parent.tokens:
            assert subtree_end(t, 1) == 1 + len(parent.tokens)


def test_horizon_spread_flags_exploding_variance(small: FitData) -> None:
    from dataclasses import replace

    from evocov_core.searches.select import EXPLODING_SPREAD, horizon_spread

    cfg = OptimConfig(n_screen=10)
    se = fit_kernel(compose("SE"), small, cfg, np.random.default_rng(0))
    spread = horizon_spread(small, se)
    assert math.isfinite(spread) and 0 < spread < EXPLODING_SPREAD
    # LIN × SE with a tiny LIN scale θl and a short SE lengthscale: beyond the data the posterior
    # falls back to the prior, whose variance (x − θs)²/θl is huge.
    fit = fit_kernel(compose(["*", "LIN", "SE"]), small, cfg, np.random.default_rng(0))
    roles = slot_roles(fit.kernel)
    new = {"scale": math.log(1e-4), "lengthscale": math.log(0.01)}
    theta = tuple(new.get(next(iter(roles[s])), t) if len(roles[s]) == 1 else t
                  for s, t in zip(fit.kernel.slots, fit.theta, strict=True))
    assert horizon_spread(small, replace(fit, theta=theta)) > EXPLODING_SPREAD


class _StopsAtPromotion(SerialExecutor):
    """A serial executor whose promotions meet the end of the budget before any has run."""

    def __init__(self, *args, tracker=None, **kw):
        super().__init__(*args, **kw)
        self.tracker = tracker

    def map(self, tasks, should_stop=None):
        if should_stop is not None and tasks and tasks[0].stage == "promote":
            self.tracker.clock.stop_at = 0.0  # the budget ends now, as the promotions start
            assert should_stop()
            return [None] * len(tasks)
        return super().map(tasks, should_stop)


def test_a_run_out_of_time_at_its_promotions_still_gets_a_full_fit() -> None:
    """The race behind a once-flaky 900-point test: screening ends just inside the budget and the
    promotions just outside it. The run must still get one full fit (and so return a kernel)."""
    from evocov_core.searches.tracker import Tracker

    data = _series(120)
    cfg = _budgeted(screen_points=40, time_budget=60.0, select_top=1)
    tr = Tracker("evocov", 1, None, None, 0, config=cfg, n_train=data.n)
    kernels = seed_kernels(6, np.random.default_rng(0))
    with _StopsAtPromotion(data, cfg.optim, search_stages(data, cfg), tracker=tr) as ex:
        fits = tr.evaluate(ex, kernels, [None] * len(kernels), ["seed"] * len(kernels))
    assert tr.stopped and not tr.clock.cancelled
    full = [f for f in fits if f is not None and f.ok]
    assert len(full) == 1 and full[0].n == data.n  # one full fit, on all the points
    assert tr.best is full[0]


def test_the_choice_reserve_waits_for_two_candidates():
    """Time is kept for the model choice's refits only once there are two kernels to choose from:
    with none or one fitted, the search keeps fitting (its base share aside)."""
    from evocov_core.searches.budget import CALIBRATE_ABOVE, CHOICE_EXTRA_EVALS, SPLIT
    from evocov_core.searches.tracker import Tracker

    data = _series(CALIBRATE_ABOVE + 200)
    cfg = _budgeted(screen_points=0, time_budget=60.0, select_top=5, max_evals=5, n_screen=0)
    tr = Tracker("evocov", 1, None, None, 0, config=cfg, n_train=data.n, data=data)
    base = cfg.time_budget * 0.12
    assert tr.budget.choice_reserve() == pytest.approx(base)  # one evaluation timed, nothing fitted
    with SerialExecutor(data, cfg.optim) as ex:
        tr.evaluate(ex, [compose("SE")], [None], ["seed"])
        tr.budget.cost.eval_costs[:] = [1.0]  # as on a long series: a second per evaluation
        assert tr.budget.choice_reserve() == pytest.approx(base)  # one kernel: nothing to choose
        tr.evaluate(ex, [compose("SE"), compose(["+", "SE", "PER"])], [None, None], ["seed", "seed"])
    # Two distinct kernels (SE was a cache hit): the head refits of two and the returned kernel's four
    # refits at the origins (calibration="origins"), each round run side by side or not, ending by
    # SPLIT.end_share of the budget.
    tr.budget.cost.eval_costs[:] = [0.5]
    rounds = math.ceil(2 / tr.budget.cost.workers) + math.ceil(4 / tr.budget.cost.workers)
    after = cfg.time_budget * (1.0 - SPLIT.end_share)
    assert tr.budget.choice_reserve() == pytest.approx(0.5 * (rounds * cfg.max_evals + 2 * CHOICE_EXTRA_EVALS) + after)
    # Without the calibration at the origins, only the head refits.
    tail = Tracker("evocov", 1, None, None, 0, config=cfg.with_(calibration="tail", combine=()), n_train=data.n,
                   data=data)
    tail.budget.cost.eval_costs[:] = [0.5]
    tail.candidates.best_by_key.update(tr.candidates.best_by_key)
    assert tail.budget.choice_reserve() == pytest.approx(0.5 * (math.ceil(2 / tail.budget.cost.workers) * cfg.max_evals
                                                         + 2 * CHOICE_EXTRA_EVALS) + after)


def test_the_marginal_tail_score_judges_each_point_on_its_own(small: FitData) -> None:
    """The tail's marginal densities: the sum of N(y_i; μ_i, σ_i²) from the head's posterior. Above
    the joint density of the same tail for a smooth kernel (its one-step-ahead predictions inside the
    tail are sharper than the forecast from the head)."""
    from evocov_core.fitting.gp import posterior
    from evocov_core.searches.select import tail_score
    from evocov_core.searches.stages import head_stage

    head_data, head_optim = head_stage(small, small_optim := OptimConfig(n_restarts=1, max_evals=20))
    fit = fit_kernel(compose("SE"), small, small_optim, np.random.default_rng(0))
    head = fit_kernel(fit.kernel, head_data, head_optim, np.random.default_rng(1), fit.start())
    sp = small.split
    post = posterior(head.kernel, sp.inputs_t, sp.y_t, np.asarray(head.theta), head.log_noise, sp.X_v,
                     jitter=head.jitter)
    var = post.var + math.exp(head.log_noise) + head.jitter
    expected = float(np.sum(-0.5 * (sp.y_v - post.mean) ** 2 / var - 0.5 * np.log(2 * math.pi * var)))
    assert tail_score(small, head, marginal=True) == pytest.approx(expected, rel=1e-9)
    assert tail_score(small, head) > tail_score(small, head, marginal=True)


def test_promotions_stop_in_time_for_the_checks_of_the_candidates_they_make():
    """On a long series a check of a candidate costs CHOICE_EXTRA_EVALS slow evaluations: the
    promotions' deadline leaves them, for the kernels already fitted and those being promoted."""
    from evocov_core.searches.budget import CALIBRATE_ABOVE, CHOICE_EXTRA_EVALS
    from evocov_core.searches.tracker import Tracker

    data = _series(CALIBRATE_ABOVE + 200)
    cfg = _budgeted(screen_points=0, time_budget=60.0, select_top=5, max_evals=5, n_screen=0)
    tr = Tracker("evocov", 1, None, None, 0, config=cfg, n_train=data.n, data=data)
    assert tr.budget.promote_deadline(4, None) is None  # no deadline: nothing to shorten
    far = time.time() + 1000.0
    tr.budget.cost.eval_costs[:] = [0.01]  # fast evaluations: the base share covers the checks
    assert tr.budget.promote_deadline(4, far) - time.time() == pytest.approx(
        tr.clock.t0 + 0.88 * cfg.time_budget - time.perf_counter(), abs=0.5)
    tr.budget.cost.eval_costs[:] = [0.4]  # as on 2,000 points: four checks of 12 evaluations, 19.2 s
    left = tr.budget.promote_deadline(4, far) - time.time()
    assert left == pytest.approx(tr.clock.t0 + cfg.time_budget - 0.4 * 4 * CHOICE_EXTRA_EVALS - time.perf_counter(),
                                 abs=0.5)
    assert tr.budget.promote_deadline(4, time.time() + 1.0) - time.time() <= 1.0  # never later than asked


def _long_cycles(n: int = 900, fit_points: int = 300) -> FitData:
    """A series longer than its fit points: fitted on a subset, as a long series is."""
    rng = np.random.default_rng(3)
    t = np.arange(n, dtype=np.float64)
    y = 0.01 * t + 2 * np.sin(2 * np.pi * t / 24) + 0.3 * rng.standard_normal(n)
    return FitData.from_dataset(Dataset.from_arrays(t, y, test_fraction=0.1), max_points=fit_points)


@pytest.mark.parametrize("rule", ["bic", "origins", "origins_density"])
def test_long_choice_rules_refit_nothing_and_calibrate_on_the_origins(rule: str) -> None:
    """On a long series, ``long_choice`` replaces ``choice``: ``bic`` returns the lowest valid BIC,
    ``origins`` the lowest mean CRPS of the forecasts from the origins; no candidate is refitted
    on the head, and the spread is calibrated on the origins' errors whatever ``calibration`` says."""
    from evocov_core.searches.tracker import Tracker
    from evocov_core.searches.validate import origin_scores

    data = _long_cycles()
    assert data.on_subset
    cfg = _budgeted(select_top=3, calibration="tail", combine=(), long_choice=rule)
    fits = sorted((fit_kernel(compose(s), data, cfg.optim, np.random.default_rng(0)) for s in ("SE", "PER", "LIN")),
                  key=lambda f: f.bic)

    class NoRefits(SerialExecutor):
        def map(self, tasks, should_stop=None):  # type: ignore[no-untyped-def]
            raise AssertionError(f"no refit expected, got {len(tasks)} tasks")

    with NoRefits(data, cfg.optim, search_stages(data, cfg)) as ex:
        choice = choose_model(data, fits, ex, seed=0, rule=rule, calibration="tail")
    chosen, rows, ensemble, calib = choice.chosen, choice.rows, choice.ensemble, choice.calibration
    scores = [origin_scores(data, f) for f in fits]
    if rule == "origins":
        assert [r["origins_crps"] for r in rows] == [sc.mean_crps for sc in scores]
    expected = {"bic": 0, "origins": int(np.argmin([sc.mean_crps for sc in scores])),
                "origins_density": int(np.argmax([sc.total_log_density for sc in scores]))}[rule]
    assert chosen is fits[expected] and rows[expected]["chosen"]
    assert all(math.isnan(r["tail_score"]) for r in rows)
    assert calib.rule == "origins_fitted" and calib.errors > 0 and calib.spread >= 1.0
    assert "fitted values (partly in sample)" in (calib.describe() or "")
    assert math.isclose(sum(w for _, w in ensemble), 1.0)
    if rule == "bic":  # weighted by BIC: the lowest BIC weighs most
        assert max(ensemble, key=lambda fw: fw[1])[0] is fits[0]
    # The search keeps no time for head refits it will not make: none on a long series, one on a short one.
    assert Tracker("evocov", 1, None, None, 0, config=cfg, n_train=data.n, data=data).budget.cost.refits == 0
    tail = _budgeted(select_top=3, long_choice="tail")
    assert Tracker("evocov", 1, None, None, 0, config=tail, n_train=data.n, data=data).budget.cost.refits == 1
    assert Tracker("evocov", 1, None, None, 0, config=cfg, n_train=90, data=_series(90)).budget.cost.refits == 1


def test_long_choice_applies_only_to_long_series() -> None:
    """A whole search: on a long series ``long_choice="bic"`` returns the lowest BIC of
    its candidates; on a short one the tail choice still decides (``choice``)."""
    data = _long_cycles()
    cfg = _budgeted(select_top=3, long_choice="bic", generations=2, population=6)
    with SerialExecutor(data, cfg.optim, search_stages(data, cfg)) as ex:
        res = run_search(data, cfg, seed=0, executor=ex)
    assert res.selection and res.best is not None
    valid = [r for r in res.selection if r["valid"]]
    assert res.best.bic == min(r["bic"] for r in valid) and all(math.isnan(r["tail_score"]) for r in res.selection)
    short = _series(90)
    with SerialExecutor(short, cfg.optim, search_stages(short, cfg)) as ex:
        res = run_search(short, cfg, seed=0, executor=ex)
    assert res.selection and all(math.isfinite(r["tail_score"]) or r["tail_score"] == -math.inf
                                 for r in res.selection)


def test_the_choice_reserve_of_a_long_series_counts_its_checks_and_what_follows_them():
    """On a long series each candidate's checks cost LONG_CHECK_EVALS evaluations, and the run's
    finish (the combination's forecasts, the scores) LONG_FINISH_EVALS once; the choice makes no
    refits there. Capped at half the budget, like every reserve."""
    from evocov_core.searches.budget import LONG_CHECK_EVALS, LONG_FINISH_EVALS, SPLIT
    from evocov_core.searches.tracker import Tracker

    data = _long_cycles()
    cfg = _budgeted(time_budget=60.0, select_top=5, long_choice="origins_density")
    tr = Tracker("evocov", 1, None, None, 0, config=cfg, n_train=data.n, data=data)
    fit = fit_kernel(compose("SE"), data, cfg.optim, np.random.default_rng(0))
    tr.candidates.best_by_key.update({f"k{i}": fit for i in range(4)})
    tr.budget.cost.eval_costs[:] = [0.25]
    after = cfg.time_budget * (1.0 - SPLIT.end_share)
    assert tr.budget.choice_reserve() == pytest.approx(0.25 * (4 * LONG_CHECK_EVALS + LONG_FINISH_EVALS) + after)
    far = time.time() + 1000.0  # promotions: for the 4 kernels fitted and 1 more, the checks only
    assert tr.budget.promote_deadline(1, far) - time.time() == pytest.approx(
        tr.clock.t0 + cfg.time_budget - 0.25 * (5 * LONG_CHECK_EVALS + LONG_FINISH_EVALS) - time.perf_counter(),
        abs=0.5)
    tr.budget.cost.eval_costs[:] = [5.0]  # slow evaluations: the search still keeps half the budget
    assert tr.budget.choice_reserve() == pytest.approx(30.0)


def test_a_long_series_screens_only_until_the_seeds_leave_time_for_their_choice():
    """The spectral seeds' fits count at once: their cost and their checks move the stop before the
    other kernels are screened, so the screening's deadline is the new stop, not the generation's
    (a 15 s search on 20,000 points screened on to its first deadline, and took 20 s)."""
    from evocov_core.searches.rules import SPECTRAL_SEED
    from evocov_core.searches.spectral_seeds import spectral_seeds
    from evocov_core.searches.stages import search_stages
    from evocov_core.searches.tracker import Tracker

    data = _long_cycles(1200, fit_points=300)
    cfg = _budgeted(time_budget=60.0, select_top=5, screen_points=150, max_evals=10, n_screen=0)
    seeds = spectral_seeds(data)
    assert len(seeds) >= 2
    others = seed_kernels(4, np.random.default_rng(0))
    kernels = [k for k, _ in seeds] + others
    starts = [s for _, s in seeds] + [None] * len(others)
    origins = [SPECTRAL_SEED] * len(seeds) + ["seed"] * len(others)
    tr = Tracker("evocov", 1, None, None, 0, config=cfg, n_train=data.n, data=data)
    first = tr.clock.fit_deadline()
    assert first is not None
    deadlines: dict[str, list[float]] = {}
    with SerialExecutor(data, cfg.optim, stages=search_stages(data, cfg)) as ex:
        serial_map = ex.map

        def slow_map(tasks, *args, **kwargs):
            deadlines.setdefault(tasks[0].stage, []).extend(t.deadline for t in tasks)
            # As on 2,000 fit points: two seconds an evaluation.
            return [None if f is None else replace(f, seconds=2.0 * max(f.n_evals, 1))
                    for f in serial_map(tasks, *args, **kwargs)]

        ex.map = slow_map  # type: ignore[method-assign]
        tr.evaluate(ex, kernels, starts, origins)
    assert set(deadlines) >= {"seed", "screen"}
    # Two seconds an evaluation: the checks of the seeds alone take more than half the budget,
    # so the stop is at half of it, and the screening stops there too.
    stop = time.time() + (tr.clock.t0 + 0.5 * cfg.time_budget - time.perf_counter())
    assert all(d == pytest.approx(stop, abs=0.5) for d in deadlines["screen"])
    assert max(deadlines["screen"]) < first - 10.0  # the generation's deadline was 88 % of the budget


def test_the_head_stage_is_built_only_for_a_choice_that_refits_on_it():
    """A long series chosen by its fitted values' forecasts (``long_choice`` other than ``tail``)
    gets no head stage; a long series chosen by the tail, and a short one, do."""
    long, short = _long_cycles(), _series(300)
    cfg = _budgeted(select_top=5, long_choice="origins_density")
    assert "head" not in search_stages(long, cfg)
    assert "head" in search_stages(long, cfg.with_(long_choice="tail"))
    assert "head" in search_stages(short, cfg)
    assert "head" not in search_stages(short, cfg.with_(select_top=1))


@pytest.mark.parametrize(("choice", "refits", "calib"), [("tail", 1, 4), ("origins", 0, 4), ("refit_origins", 4, 0)])
def test_the_choice_reserve_counts_the_refits_each_rule_makes(choice: str, refits: int, calib: int) -> None:
    """The head refit of ``tail``, the four origin refits of ``refit_origins`` (which also calibrate), none for
    ``origins`` (fitted values), and then the returned kernel's four calibration refits where they are separate."""
    from evocov_core.searches.select import choice_refits

    assert choice_refits(_budgeted(time_budget=60.0, select_top=5, choice=choice, calibration="origins"),
                         on_subset=False) == (refits, calib)
    assert choice_refits(_budgeted(time_budget=60.0, select_top=5, choice=choice, calibration="tail", combine=()),
                         on_subset=False)[1] == 0


def test_the_preset_chooses_by_the_origins_without_a_head_refit() -> None:
    """``quick``'s evolutionary search scores its candidates by their forecasts from the origins with their
    fitted values (no head refit: only the returned kernel's calibration refits run, at the origins), and
    prefers a candidate with a state-space term unless another's CRPS is below ``form_margin`` times its own."""
    cfg = preset("quick", population=10, mu=3, generations=2, time_budget=0.0)
    assert (cfg.choice, cfg.form_margin) == ("origins", 0.8)
    data = _series(90)
    stages_run: list[str] = []

    class Counting(SerialExecutor):
        def map(self, tasks, should_stop=None, on_result=None):  # type: ignore[no-untyped-def]
            stages_run.extend(t.stage for t in tasks)
            return super().map(tasks, should_stop, on_result)

    with Counting(data, cfg.optim, search_stages(data, cfg)) as ex:
        res = run_search(data, cfg, seed=0, executor=ex)
    rows = res.selection
    assert len(rows) >= 2 and "head" not in stages_run
    assert {s for s in stages_run if s.startswith("origin:")} == {f"origin:{o:g}" for o in DEFAULT_ORIGINS}
    assert all(math.isnan(r["tail_score"]) and math.isfinite(r["origins_crps"]) for r in rows)
    chosen = next(r for r in rows if r["chosen"])
    assert any(r["statespace"] for r in rows)  # the exponential-smoothing seeds are offered
    forms = [r["origins_crps"] for r in rows if r["statespace"] and r["valid"]]
    if chosen["statespace"]:
        assert chosen["origins_crps"] == min(forms)
    else:
        assert chosen["origins_crps"] == min(r["origins_crps"] for r in rows if r["valid"])
        assert chosen["origins_crps"] < cfg.form_margin * min(forms)


def test_a_candidate_whose_forecast_leaves_the_data_far_behind_is_left_out_of_the_choice(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """forecast_reach: a linear trend carried on stays within its horizon's share of the range; the same trend
    divided by a linear term that crosses zero just past the data (a pole, as kernels evolved on short series
    have) leaves it several times over, and the choice passes it over whatever its score."""
    from evocov_core.searches.select import REACH, forecast_reach

    x = np.arange(20.0)
    ds = Dataset.from_arrays(x, 3.0 + 0.5 * x + 0.1 * np.sin(x), test_fraction=0.0)
    data = FitData.from_dataset(ds, horizon=6)  # forecasts of 6 steps: 6/19 of the training span
    cfg = _budgeted(select_top=4)
    lin = fit_kernel(compose(["+", "LIN", "SE"]), data, cfg.optim, np.random.default_rng(0))
    assert lin.ok and 0.0 < forecast_reach(data, lin, data.split_fraction) < 0.5
    # (x - a)(x' - a) / ((x - s)(x' - s)) with s just past the last input (model units: x runs from 1 to 2),
    # the kernel the search returned on M3's N0046 (14 points).
    expr = "multiply(dot_prod(euc(x), hp2, hp3), div(dot_prod(euc(x), hp0, hp1)))"
    pole = replace(lin, kernel=parse_expression(expr), theta=(math.log(2.05), 0.0, 0.0, 0.0))
    assert forecast_reach(data, pole, data.split_fraction) > 5 * REACH
    scores = iter([100.0, 1.0])  # the pole scores best: only the check keeps it out
    monkeypatch.setattr(select, "tail_score", lambda data, head, marginal=False: next(scores))
    with SerialExecutor(data, cfg.optim, search_stages(data, cfg)) as ex:
        choice = choose_model(data, [pole, lin], ex, seed=0)
    assert choice.chosen is lin and [r["valid"] for r in choice.rows] == [False, True]
    assert choice.rows[0]["reach"] > REACH

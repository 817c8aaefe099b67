"""The search's forecast: the kernel's own or its equal-weight average with classical forecasts, chosen on
earlier origins (evocov_core.combination, evocov_core.search.combine), and where it is recorded and shown."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from evocov_core.classical import ClassicalForecast, ClassicalForecasts, classical_forecasts, classical_forecasts_many
from evocov_core.combination import KERNEL, Combination, candidate_members, choose_members
from evocov_core.compare import forecast_comparison
from evocov_core.data import Dataset, load_bundled
from evocov_core.kernel_file import KernelFileError, dump_kernel_file, kernel_file_dict, parse_kernel_file
from evocov_core.library import compose
from evocov_core.metrics import FitData, rmse
from evocov_core.model import FittedModel
from evocov_core.optimize import OptimConfig, fit_kernel
from evocov_core.search import preset, run_search, search_data, search_executor
from evocov_core.search.combine import ClassicalBeside, combined_test_mean, eligibility, forecast_test_rmse
from evocov_core.search.validate import origin_windows
from evocov_core.seasons import Seasons


def _series(n: int = 96, seed: int = 0) -> Dataset:
    """Monthly-like: a trend, a 12-step cycle and noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=np.float64)
    return Dataset.from_arrays(t, 0.3 * t + 5 * np.sin(2 * np.pi * t / 12) + rng.standard_normal(n),
                               test_fraction=0.1)


# --- the choice -------------------------------------------------------------------------------------


def test_the_candidates_are_the_kernel_alone_then_with_each_model_then_with_all():
    assert candidate_members(("AutoETS", "AutoTheta")) == (
        (KERNEL,), (KERNEL, "AutoETS"), (KERNEL, "AutoTheta"), (KERNEL, "AutoETS", "AutoTheta"))
    assert candidate_members(("AutoETS",)) == ((KERNEL,), (KERNEL, "AutoETS"))


def test_the_average_with_the_lowest_error_from_the_origins_is_chosen():
    y = [np.array([1.0, 2.0]), np.array([3.0, 3.0])]
    kernel = [np.array([3.0, 4.0]), np.array([5.0, 5.0])]  # 2 too high everywhere
    # Theta 2 too low: the kernel's average with it is exact; ETS is as far off as the kernel.
    classical = [{"AutoETS": a + 2.0, "AutoTheta": a - 2.0} for a in y]
    c = choose_members(kernel, classical, y, ("AutoETS", "AutoTheta"))
    assert c.members == (KERNEL, "AutoTheta") and c.combined and c.origins == 2
    sse = dict(c.origin_sse)
    assert sse == {"kernel": 16.0, "kernel + AutoETS": 16.0, "kernel + AutoTheta": 0.0,
                   "kernel + AutoETS + AutoTheta": pytest.approx(4 * (2 / 3) ** 2)}
    assert np.allclose(c.mean(kernel[0], classical[0]), y[0])


def test_ties_and_missing_forecasts_go_to_the_kernel_alone():
    y = [np.array([1.0, 2.0])]
    same = choose_members([y[0] + 1], [{"AutoETS": y[0] + 1}], y, ("AutoETS",))
    assert same.members == (KERNEL,) and not same.combined  # a tie: fewer members
    # ETS failed at one origin: every average containing it is infinitely wrong.
    y2 = [np.array([1.0]), np.array([2.0])]
    c = choose_members([np.array([3.0]), np.array([4.0])], [{"AutoETS": np.array([1.0])}, {"AutoETS": None}], y2,
                       ("AutoETS",))
    assert c.members == (KERNEL,) and dict(c.origin_sse)["kernel + AutoETS"] == math.inf
    # The kernel failed everywhere: nothing is finite, the kernel alone (and its own forecast) stays.
    c = choose_members([None, None], [{"AutoETS": np.array([1.0])}] * 2, y2, ("AutoETS",))
    assert c.members == (KERNEL,) and all(v == math.inf for _, v in c.origin_sse)
    assert "no earlier origin" in choose_members([], [], [], ("AutoETS",)).reason
    with pytest.raises(ValueError, match="targets"):
        choose_members([None], [{}, {}], y, ("AutoETS",))


def test_the_description_says_which_forecast_and_why():
    assert Combination().describe() is None  # no combination asked for
    own = Combination((KERNEL,), (("kernel", 1.0), ("kernel + AutoETS", 2.0)), 4)
    assert own.describe().startswith("The forecast is the kernel's own: from 4 earlier points in time")
    avg = Combination((KERNEL, "AutoTheta"), (("kernel", 3.0), ("kernel + AutoTheta", 2.0)), 4)
    text = avg.describe()
    assert "averaged with equal weights with AutoTheta's" in text and "2" in text and "3" in text
    assert avg.label == "kernel + AutoTheta" and avg.models == ("AutoTheta",)
    assert Combination(reason="a reason").describe() == "The forecast is the kernel's own: a reason."
    assert avg.mean(np.ones(3), {"AutoTheta": np.ones(2)}) is None  # another horizon: no average
    assert avg.mean(np.ones(3), {}) is None


# --- the kernel file -----------------------------------------------------------------------------


def _doc(combination=None):
    ds = _series(40)
    fit = fit_kernel(compose("SE"), FitData.from_dataset(ds), OptimConfig(n_restarts=1, max_evals=30),
                     np.random.default_rng(0))
    return kernel_file_dict(fit, ds.norm, n_train=ds.n_train, combination=combination)


def test_a_kernel_file_carries_the_combination_and_an_infinite_error_survives_json():
    c = Combination((KERNEL, "AutoETS", "AutoTheta"), (("kernel", 2.5), ("kernel + AutoETS", math.inf)), 4)
    kf = parse_kernel_file(dump_kernel_file(_doc(c)))
    assert kf.combination == c
    assert parse_kernel_file(dump_kernel_file(_doc())).combination == Combination()  # older files


@pytest.mark.parametrize("bad", [
    {"members": ["AutoETS"]}, {"members": ["kernel", "eval"]}, {"members": ["kernel", "AutoETS", "AutoETS"]},
    {"members": []}, {"members": ["kernel"], "origins": True}, {"members": ["kernel"], "origins": -1},
    {"members": ["kernel"], "origin_sse": {"kernel": -1.0}}, {"members": ["kernel"], "origin_sse": {"kernel": "x"}},
    {"members": ["kernel"], "reason": "x" * 501}, ["kernel"]])
def test_a_malformed_combination_in_a_kernel_file_is_refused(bad):
    doc = _doc()
    doc["combination"] = bad
    with pytest.raises(KernelFileError, match="combination"):
        parse_kernel_file(dump_kernel_file(doc))


# --- the comparison table -----------------------------------------------------------------------------


def _classical(ds: Dataset, theta: np.ndarray | None, status: str = "ok") -> ClassicalForecasts:
    rows = (ClassicalForecast("AutoTheta", theta if status == "ok" else None, None, None, status,
                              "" if status == "ok" else f"AutoTheta: {status}", 0.1),)
    return ClassicalForecasts(ds.X_test[:, 0].copy(), Seasons(12), rows)


def test_the_comparison_shows_the_combined_forecast_beside_the_kernels():
    ds = _series()
    kf = parse_kernel_file(dump_kernel_file(_doc(Combination((KERNEL, "AutoTheta"), (), 4))))
    kf = dataclasses.replace(kf, normalisation=ds.norm)
    kernel_mean = FittedModel.from_file(kf).predict_dataset(ds).mean
    theta = ds.y_test + 1.0
    table = forecast_comparison(ds, kf, classical=_classical(ds, theta)).table.set_index("method")
    row = table.loc["forecast (kernel + AutoTheta)"]
    assert row["kind"] == "combined" and row["status"] == "ok"
    assert row["test_rmse"] == pytest.approx(rmse(ds.y_test, (kernel_mean + theta) / 2))
    assert math.isnan(row["coverage_95"])  # a point forecast
    running = forecast_comparison(ds, kf, classical=_classical(ds, None, "running")).table.set_index("method")
    assert running.loc["forecast (kernel + AutoTheta)", "status"] == "running"
    failed = forecast_comparison(ds, kf, classical=_classical(ds, None, "timeout")).table.set_index("method")
    assert failed.loc["forecast (kernel + AutoTheta)", "status"] == "failed"
    assert "AutoTheta has no forecast" in failed.loc["forecast (kernel + AutoTheta)", "reason"]
    plain = forecast_comparison(ds, kf, classical=_classical(ds, theta), combination=Combination()).table
    assert not (plain["kind"] == "combined").any()


# --- in a search ----------------------------------------------------------------------------------------


def _config(**kw):
    return preset("quick", population=6, mu=2, generations=2, d_min=2, d_max=4, psd_w=6, max_evals=15, n_screen=4,
                  rho_max=30, time_budget=0.0, **kw)


@pytest.fixture(scope="module")
def searched():
    ds = load_bundled("airline")
    cfg = _config()
    data = search_data(ds, cfg)
    with search_executor(data, cfg, workers=1) as ex:
        res = run_search(data, cfg, seed=0, executor=ex, dataset=ds)
    return ds, data, cfg, res


def test_a_search_chooses_its_forecast_on_the_origins_as_the_post_hoc_study_did(searched):
    """The classical forecasts at the origins are those of the cut series (bench/bench_combine.py's
    origin_sets, fitted independently here), and the recorded errors are the averages' errors there."""
    from bench.bench_combine import origin_sets

    ds, data, cfg, res = searched
    assert cfg.combine == ("AutoETS", "AutoTheta") and res.origins is not None
    c = res.combination
    assert c.origins == 4 and c.reason == "" and len(c.origin_sse) == 4
    cuts = origin_sets(ds)
    ets = classical_forecasts_many(cuts, season_lengths=(12,), models=("AutoETS",))
    kernel = np.split(res.origins.mean * data.y_std + data.y_mean, np.cumsum(res.origins.n_targets)[:-1])
    sse = sum(float(np.sum(((k + e.get("AutoETS").mean) / 2 - cut.y_test) ** 2))
              for k, e, cut in zip(kernel, ets, cuts, strict=True))
    assert dict(c.origin_sse)["kernel + AutoETS"] == pytest.approx(sse, rel=1e-9)
    # The forecast's test RMSE follows the combination; the full-data classical forecasts are the page's.
    page = classical_forecasts(ds, models=("AutoETS", "AutoTheta"))
    kernel_test = FittedModel.from_fit(res.best, ds.norm, ds.n_train).predict_dataset(ds).mean
    expected = combined_test_mean(c, kernel_test, page)
    assert forecast_test_rmse(res, ds) == pytest.approx(rmse(ds.y_test, expected), rel=1e-9)
    if not c.combined:
        assert forecast_test_rmse(res, ds) == res.best.test_rmse


def test_the_same_seed_gives_the_same_forecast(searched):
    ds, data, cfg, res = searched
    with search_executor(data, cfg, workers=1) as ex:
        again = run_search(data, cfg, seed=0, executor=ex, dataset=ds)
    assert again.combination == res.combination and again.best.kernel.canonical == res.best.kernel.canonical


def test_the_kernels_own_forecast_is_kept_with_a_reason_where_no_choice_can_be_made():
    ds = _series(80)
    data = FitData.from_dataset(ds)
    assert eligibility(ds, data) == ""
    cfg = _config(calibration="tail")
    with search_executor(data, cfg, workers=1) as ex:
        res = run_search(data, cfg, seed=0, executor=ex, dataset=ds)
    assert not res.combination.combined and "interval calibration" in res.combination.reason
    with search_executor(data, cfg, workers=1) as ex:  # without the data set: nothing is said
        assert run_search(data, cfg, seed=0, executor=ex).combination == Combination()
    # A long series fitted on a subset, and two inputs.
    long = _series(400)
    sub = FitData.from_dataset(long, max_points=200)
    assert "long series" in eligibility(long, sub)
    beside = ClassicalBeside(long, sub, ("AutoETS",))
    assert "long series" in beside.choose(None)[0].reason
    two = Dataset.from_arrays(np.c_[np.arange(30.0), np.arange(30.0) % 7], np.arange(30.0), test_fraction=0.1)
    assert "one input" in eligibility(two, FitData.from_dataset(two))
    assert ClassicalBeside(ds, data, ()).choose(None) == (Combination(), None)


def test_classical_forecasts_many_matches_one_call_per_data_set():
    ds = _series(60)
    cut = dataclasses.replace(ds, x=ds.x[:40], y=ds.y[:40], train=np.arange(40) < 36)
    many = classical_forecasts_many([ds, cut], season_lengths=(12,), models=("AutoETS", "SeasonalNaive"))
    for one_ds, got in zip((ds, cut), many, strict=True):
        one = classical_forecasts(one_ds, season_lengths=(12,), models=("AutoETS", "SeasonalNaive"))
        assert [f.name for f in got.forecasts] == ["AutoETS", "SeasonalNaive"]
        for a, b in zip(got.forecasts, one.forecasts, strict=True):
            assert a.status == b.status == "ok" and np.allclose(a.mean, b.mean)
    assert len(many[0].startup) == 1  # one child for both


def test_origin_windows_of_the_search_data_are_the_cut_series():
    ds = _series(90)
    data = FitData.from_dataset(ds)
    from bench.bench_combine import origin_sets

    for (_, head, target), cut in zip(origin_windows(data), origin_sets(ds), strict=True):
        assert np.array_equal(ds.y_train[head], cut.y_train) and np.array_equal(ds.y_train[target], cut.y_test)


def test_the_report_says_what_the_forecast_is():
    from evocov_core.report_html import report_html

    ds = _series(60)
    avg = Combination((KERNEL, "AutoTheta"), (("kernel", 3.0), ("kernel + AutoTheta", 2.0)), 4)
    kf = dataclasses.replace(parse_kernel_file(dump_kernel_file(_doc(avg))), normalisation=ds.norm)
    text = report_html(kf, ds, baseline_budget=0, classical=False)
    assert "The forecast is the kernel&#x27;s averaged with equal weights with AutoTheta&#x27;s" in text
    assert "<i>forecast</i> row" in text
    plain = report_html(dataclasses.replace(kf, combination=Combination()), ds, baseline_budget=0, classical=False)
    assert 'class="combination"' not in plain

"""The forecast stage: a search, the classical forecasts made beside it, and their weighing.

:func:`search_and_forecast` starts the classical models of ``config.combine`` (``config.long_combine``
on a long series' subset) in a child process (:class:`~evocov_core.forecast.beside.ClassicalBeside`),
runs the search (:func:`~evocov_core.searches.run_search`) meanwhile, and then weighs the kernel's
forecast with theirs (:mod:`evocov_core.forecast.combination`) within what is left of the time budget.
The search knows nothing of this stage; the result is a :class:`ForecastResult`: the search's result,
and the combination and the classical forecasts beside it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from evocov_core.data.dataset import Dataset
from evocov_core.fitting.fits import Executor
from evocov_core.fitting.gp import load_fused_loop
from evocov_core.fitting.metrics import FitData
from evocov_core.forecast.beside import ClassicalBeside, forecast_test_rmse, kernel_future_mean
from evocov_core.forecast.classical import ClassicalForecasts
from evocov_core.forecast.combination import Combination
from evocov_core.searches import run_search
from evocov_core.searches.common import ProgressCallback, RunStatus, SearchResult, StopCheck
from evocov_core.searches.config import SearchConfig
from evocov_core.searches.replay import RunLog

__all__ = ["ForecastResult", "search_and_forecast"]


@dataclass(frozen=True)
class ForecastResult:
    """A search's result with the forecast made beside it.

    Attributes
    ----------
    search : SearchResult
        The search's own result (its kernels, the model choice, the run log).
    combination : Combination
        Whether the forecast is the kernel's own or its weighted average with classical forecasts, and why
        (:mod:`evocov_core.forecast.combination`; ``config.combine``).
    classical : ClassicalForecasts or None
        The classical forecasts of the test part the combination may average (None when none were made, or
        the data have no test part).
    future : ClassicalForecasts or None
        Their forecasts of the ``horizon`` steps after the training part (None when none were made): what
        the guard read; with no test part, the members of the forecast of those steps.
    horizon : int
        The steps after the training part the forecast was chosen for (0 when no combination was asked).
    """

    search: SearchResult
    combination: Combination = field(default_factory=Combination)
    classical: ClassicalForecasts | None = None
    future: ClassicalForecasts | None = None
    horizon: int = 0

    def test_rmse(self, ds: Dataset) -> float | None:
        """Test RMSE (original units) of the forecast: :func:`~evocov_core.forecast.beside.forecast_test_rmse`."""
        return forecast_test_rmse(self.search.best, self.combination, self.classical, ds)


def search_and_forecast(data: FitData, config: SearchConfig, *, dataset: Dataset, seed: int = 0,
                        executor: Executor | None = None, workers: int | None = None, scheduler: str | None = None,
                        progress: ProgressCallback | None = None, should_stop: StopCheck | None = None,
                        replay: RunLog | None = None, horizon: int | None = None,
                        classical_in_process: bool = False, season_lengths: Sequence[int] | None = None
                        ) -> ForecastResult:
    """Search ``data`` (made from ``dataset``) with ``config``, and weigh the kernel's forecast with the
    classical models' within the same time budget.

    The arguments but ``dataset`` and ``horizon`` are :func:`~evocov_core.searches.run_search`'s. With
    ``config.combine`` (``config.long_combine`` when ``data`` is a long series' subset) the result's
    ``combination`` says how the forecast weighs the kernel's and the classical forecasts, and whether the
    guard left the kernel's out; without, it is the kernel's own forecast. Combining reuses the interval
    calibration's refits at the origins (a :class:`~evocov_core.searches.config.SearchConfig` with
    ``combine`` has them).

    Nothing here reads the test part of ``dataset`` but to score: the classical models are fitted on the
    training part and forecast the ``horizon`` steps after it (default ``config.horizon``, else
    :func:`~evocov_core.forecast.beside.guard_steps`), and the guard checks the kernel's forecast of
    those steps. The same training points give the same forecast with or without a test part.
    ``classical_in_process`` fits the classical models in this process before the search, within its
    budget (:class:`~evocov_core.forecast.beside.ClassicalBeside`'s ``in_process``: a panel's worker);
    ``season_lengths`` gives them their seasons (default: read from the x spacing).
    """
    load_fused_loop(data.n)  # before the clock: a first compile is not the budget's
    t0 = time.perf_counter()
    beside = None
    # Long series: their own members, and no refits at the origins to wait for (ClassicalBeside.choose).
    # (On exact data the settings guarantee the calibration's refits at the origins it reuses.)
    models = config.long_combine if data.on_subset else config.combine
    if models:
        beside = ClassicalBeside(dataset, data, models, horizon=horizon or config.horizon or None,
                                 in_process=classical_in_process, season_lengths=season_lengths,
                                 origins=config.combine_power > 0)
    try:
        result = run_search(data, config, seed=seed, executor=executor, workers=workers, scheduler=scheduler,
                            progress=progress, should_stop=should_stop, replay=replay, started=t0)
    except BaseException:
        if beside is not None:
            beside.cancel()
        raise
    if beside is None:
        return ForecastResult(result)
    if result.status == RunStatus.CANCELLED or result.best is None:
        beside.cancel()
        return ForecastResult(result)
    until = None
    if config.time_budget > 0 and replay is None:
        until = time.time() + (t0 + config.time_budget - time.perf_counter())
    # The guard's input: the kernel's forecast of the horizon (not computed where no combination is made).
    kernel_mean = (kernel_future_mean(result.best, dataset, beside.future_x)
                   if config.combine_guard and not beside.reason else None)
    chosen = beside.choose(result.origins, until=until, kernel_mean=kernel_mean, power=config.combine_power,
                           guard=config.combine_guard, fit=result.best if data.on_subset else None,
                           short=0 if data.on_subset else config.combine_short)
    return ForecastResult(dataclasses.replace(result, elapsed=time.perf_counter() - t0), chosen.combination,
                          chosen.classical, chosen.future, beside.horizon)

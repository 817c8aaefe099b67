"""The front door: read a series, search for a kernel, predict and forecast with it.

``import evocov_core as ec`` gives these names::

    ds = ec.read_series("airline")                 # a CSV file, or a bundled series' name
    res = ec.search(ds, preset="quick-fixed", seed=0, population=20, generations=4)
    res.kernel.infix, res.bic, res.hyperparameters
    res.predict(ds.X_test)                          # mean, std, lower, upper at given inputs
    res.forecast(12)                                # the next 12 steps after the data
    res.save("airline.kernel.json")
    again = ec.load_kernel("airline.kernel.json", ds)

Everything here wraps the modules that do the work: :func:`evocov_core.data.load_csv`,
:func:`evocov_core.searches.run_search`, :mod:`evocov_core.runs.kernel_file`,
:class:`evocov_core.fitting.model.FittedModel` and :func:`evocov_core.forecast.future.forecast_future`. A result
predicts exactly as the command line's ``predict`` and ``forecast`` do with the kernel file the
search would have written (``evocov search --out``), which :meth:`KernelResult.save` writes.

Units: inputs and outputs of :meth:`KernelResult.predict` and :meth:`KernelResult.forecast` are in
the data's own units (decimal years for dates). :attr:`KernelResult.theta`, ``log_noise`` and
:attr:`KernelResult.hyperparameters` are in model units (inputs mapped by the data's
normalisation, outputs standardised; :class:`evocov_core.data.Normalisation`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:  # pragma: no cover - annotations only; each function imports what it runs
    import pandas as pd

    from evocov_core.data import Dataset
    from evocov_core.fitting.model import FittedModel
    from evocov_core.forecast.stage import ForecastResult
    from evocov_core.language.kernel import Kernel
    from evocov_core.panel.run import PanelResult
    from evocov_core.runs.kernel_file import KernelFile
    from evocov_core.searches.config import SearchConfig

__all__ = ["Interval", "KernelResult", "forecast_panel", "load_kernel", "read_series", "search"]

Array = NDArray[np.float64]

#: The level of every interval the front door returns.
LEVEL = 0.95


@dataclass(frozen=True, eq=False)
class Interval:
    """A predictive distribution at ``m`` points: its mean and central 95 % interval.

    Attributes
    ----------
    x : ndarray of shape (m, d)
        Where, in the data's units.
    mean : ndarray of shape (m,)
    std : ndarray of shape (m,)
        Standard deviation of a new observation (latent variance plus noise, times the search's
        calibration). For a forecast that averages the kernel with classical forecasters, the
        standard deviation of the normal with the same 95 % interval, ``(upper − lower) / (2·1.96)``.
    lower, upper : ndarray of shape (m,)
        The central ``level`` interval.
    level : float
        0.95.

    Compared by identity (its arrays have no single truth value).
    """

    x: Array
    mean: Array
    std: Array
    lower: Array
    upper: Array
    level: float = LEVEL


@dataclass(frozen=True, eq=False)
class KernelResult:
    """A fitted kernel and the data it predicts from: what :func:`search` and :func:`load_kernel` return.

    Attributes
    ----------
    kernel_file : KernelFile
        The kernel, its values, normalisation, calibration and combination: what
        :meth:`save` writes, as :func:`evocov_core.runs.kernel_file.parse_kernel_file` reads it back.
    dataset : Dataset or None
        The data predictions are conditioned on (None for a kernel loaded without data: it
        cannot predict until :meth:`with_data` gives it some).
    document : str
        The kernel file's JSON text.
    search_result : ForecastResult or None
        Everything the search returned (``.search``: every kernel fitted, the model choice, the run log) and the
        forecast made beside it (``.combination``); None for a loaded kernel.
    config : SearchConfig or None
        The settings the search ran with; None for a loaded kernel.
    seed : int or None

    Compared by identity (its data hold arrays).
    """

    kernel_file: KernelFile
    dataset: Dataset | None
    document: str = field(repr=False)
    search_result: ForecastResult | None = field(default=None, repr=False, compare=False)
    config: SearchConfig | None = field(default=None, repr=False)
    seed: int | None = None

    # --- what was found -----------------------------------------------------------------
    @property
    def kernel(self) -> Kernel:
        """The kernel's structure (:class:`evocov_core.language.kernel.Kernel`); ``.infix`` reads it."""
        return self.kernel_file.kernel

    @property
    def theta(self) -> Array:
        """Log slot values, shape (p,), ordered as ``kernel.slots`` (model units)."""
        return np.asarray(self.kernel_file.theta, dtype=np.float64)

    @property
    def log_noise(self) -> float:
        """Log noise variance (model units)."""
        return float(self.kernel_file.log_noise)

    @property
    def jitter(self) -> float:
        """Extra diagonal the Cholesky needed at the fitted values (0 when none)."""
        return float(self.kernel_file.jitter)

    @property
    def hyperparameters(self) -> dict[str, float]:
        """Slot name -> natural value (model units), then ``"noise_variance"``."""
        out = {s: math.exp(t) for s, t in zip(self.kernel.slots, self.kernel_file.theta, strict=True)}
        out["noise_variance"] = math.exp(self.kernel_file.log_noise)
        return out

    @property
    def bic(self) -> float:
        """BIC on the training part (paper eq. 7); NaN when the file records none."""
        return self.kernel_file.scores.bic

    @property
    def lml(self) -> float:
        """Log marginal likelihood of the training part in model units; NaN when not recorded."""
        return self.kernel_file.scores.lml

    @property
    def forecast_members(self) -> tuple[tuple[str, float], ...]:
        """What the search's forecast averages, with the weights it chose: ``(("kernel", 1.0),)`` for
        the kernel's own forecast (:mod:`evocov_core.forecast.combination`)."""
        comb = self.kernel_file.combination
        return tuple(zip(comb.members, (float(w) for w in comb.member_weights), strict=True))

    @property
    def model(self) -> FittedModel:
        """The kernel as a :class:`~evocov_core.fitting.model.FittedModel` (values, noise, normalisation,
        calibration)."""
        return self.kernel_file.model(None if self.dataset is None else self.dataset.norm)

    def with_data(self, data: Dataset | str | Path) -> KernelResult:
        """The same kernel conditioned on other data (a :class:`Dataset`, or a CSV path or bundled name,
        split with the test fraction the kernel file records, else 0.1)."""
        from dataclasses import replace

        return replace(self, dataset=_dataset(data, _recorded_fraction(self.kernel_file)))

    # --- predictions ------------------------------------------------------------------------
    def _data(self) -> Dataset:
        if self.dataset is None:
            raise ValueError("this kernel has no data to predict from: load it with data "
                             "(ec.load_kernel(path, data)) or call .with_data(data)")
        return self.dataset

    def predict(self, x: ArrayLike) -> Interval:
        """The posterior predictive at ``x``, conditioned on the data's training part.

        The training part is what the kernel was fitted and scored on, so the mean at the test
        inputs is the one the search's test RMSE measured; :meth:`forecast` conditions on every
        observed point instead.

        Parameters
        ----------
        x : array_like of shape (m,) or (m, d)
            Inputs in the data's units.

        Returns
        -------
        Interval
            Mean, standard deviation and 95 % interval of a new observation, each of shape (m,).
        """
        from evocov_core.fitting.metrics import Z95

        ds = self._data()
        pred = self.model.predict(ds.X_train, ds.y_train, x)
        return Interval(pred.x, pred.mean, pred.std, pred.mean - Z95 * pred.std, pred.mean + Z95 * pred.std)

    def forecast(self, h: int | None = None, *, time_limit: float | Mapping[str, float] | None = None,
                 at: ArrayLike | None = None, future: pd.DataFrame | None = None) -> Interval:
        """The ``h`` steps after the last observation: the search's forecast and its 95 % interval.

        The kernel keeps its fitted values and is conditioned on every observed point (training
        and test). When the search averaged its forecast with classical forecasters
        (:attr:`forecast_members`), they are fitted again on the observed points and averaged
        with the search's weights (:func:`evocov_core.forecast.future.forecast_future`).

        Parameters
        ----------
        h : int, optional
            Steps (default: :func:`evocov_core.forecast.future.default_horizon`).
        time_limit : float or mapping of str to float, optional
            Seconds per classical member (default :data:`evocov_core.forecast.classical.DEFAULT_TIME_LIMIT`).
        at : array_like of shape (h,), optional
            Times to forecast at instead of the next steps, any after the last observation (numbers in
            the data's units, or dates: :func:`evocov_core.forecast.steps.future_times`).
        future : pandas.DataFrame, optional
            For a kernel searched with covariates: the times to forecast at and the covariates' values there
            (a time column and one per covariate; :func:`evocov_core.forecast.covariates.future_covariates`).

        Returns
        -------
        Interval
            ``x`` of shape (h, 1) continues the data's step (or holds ``at``, sorted); ``mean``, ``std``,
            ``lower``, ``upper`` of shape (h,).
        """
        from evocov_core.fitting.metrics import Z95
        from evocov_core.forecast.future import forecast_future

        kw: dict[str, object] = {} if time_limit is None else {"time_limit": time_limit}
        ds = self._data()
        made = self.search_result.future if self.search_result is not None else None
        if at is not None:
            kw["at"] = at
        elif (made is not None and ds is self.dataset and ds.n_test == 0 and h is not None
                and h == self.search_result.horizon):
            kw["classical"] = made  # the search's members already forecast these steps from these points
        if self.kernel_file.covariates is not None or future is not None:
            from evocov_core.forecast.covariates import forecast_with_covariates

            if future is None:
                raise ValueError(f"this kernel uses the covariates {', '.join(self.kernel_file.covariates.names)}: "
                                 "give their future values, forecast(future=frame)")
            fc = forecast_with_covariates(self.kernel_file, ds, future,
                                          **{k: v for k, v in kw.items() if k == "time_limit"})
        else:
            fc = forecast_future(self.kernel_file, ds, h, **kw)
        if fc.combined:
            std = (fc.upper - fc.lower) / (2 * Z95)
        else:
            std = (fc.kernel_upper - fc.kernel_mean) / Z95
        return Interval(np.asarray(fc.x, dtype=np.float64)[:, None], fc.mean, std, fc.lower, fc.upper)

    def save(self, path: str | Path) -> Path:
        """Write the kernel file (``evocov-kernel`` JSON, :mod:`evocov_core.runs.kernel_file`) and return its path."""
        p = Path(path)
        p.write_text(self.document, encoding="utf-8")
        return p


# --- functions ---------------------------------------------------------------------------------


def read_series(path: str | Path, x: str | None = None, y: str | None = None, *, test_fraction: float = 0.1,
                missing: str = "refuse", covariates: Sequence[str] = ()) -> Dataset:
    """Read a series from a CSV file, or a bundled series by name.

    Parameters
    ----------
    path : str or Path
        A CSV (or TSV, semicolon-separated...) file, read by :func:`evocov_core.data.load_csv`;
        when no such file exists, the name of a bundled series (``"airline"``, ``"co2"``...,
        :func:`evocov_core.data.bundled_datasets`).
    x, y : str, optional
        Column names (guessed when not given; dates become decimal years).
    test_fraction : float
        The last share of the x-range held out as the test part.
    missing : {"refuse", "keep"}
        Rows whose value is empty or not a number: refuse the file, or keep them as points not
        observed (the others keep their own x; :func:`evocov_core.data.dataset_from_frame`).
    covariates : sequence of str
        Columns known in advance (temperature, a price), read as inputs after time: :func:`search` estimates
        their effect (:mod:`evocov_core.forecast.covariates`), :meth:`KernelResult.forecast` needs ``future``.

    Returns
    -------
    Dataset
        ``x`` of shape (n, d), ``y`` of shape (n,), the split and the normalisation.

    Raises
    ------
    evocov_core.data.DataError
        The file cannot be used (the message says why) or no such file or bundled series.
    """
    from evocov_core.data.bundled import bundled_datasets, load_bundled
    from evocov_core.data.dataset import validate_split
    from evocov_core.data.frame import load_csv
    from evocov_core.data.limits import DataError

    validate_split(test_fraction)
    p = Path(path)
    if p.is_file():
        ds = load_csv(p, x=x, y=y, test_fraction=test_fraction, max_points=None, missing=missing,
                      covariates=tuple(covariates))
    elif x is None and y is None and str(path) in {e["name"] for e in bundled_datasets()}:
        ds = load_bundled(str(path), test_fraction=test_fraction)
    else:
        raise DataError(f"no such file: {path} (nor a bundled series of that name)")
    validate_split(ds.test_fraction, ds.n_train)
    return ds


def _dataset(data: Dataset | str | Path | tuple[ArrayLike, ArrayLike], test_fraction: float = 0.1) -> Dataset:
    from evocov_core.data.dataset import Dataset

    if isinstance(data, Dataset):
        return data
    if isinstance(data, (str, Path)):
        return read_series(data, test_fraction=test_fraction)
    if isinstance(data, tuple) and len(data) == 2:
        return Dataset.from_arrays(data[0], data[1])
    raise TypeError(f"data must be a Dataset, a path or an (x, y) pair of arrays, got {type(data).__name__}")


def search(data: Dataset | str | Path | tuple[ArrayLike, ArrayLike], preset: str = "quick", seed: int = 0, *,
           algorithm: str = "evocov", workers: int | None = None, horizon: int | None = None,
           **settings: object) -> KernelResult:
    """Search for a kernel of ``data`` and return it fitted, ready to predict.

    Parameters
    ----------
    data : Dataset, str, Path or (x, y)
        The series: a :class:`~evocov_core.data.Dataset` (:func:`read_series`), a CSV path or
        bundled name, or arrays ``x`` of shape (n,) or (n, d) and ``y`` of shape (n,) (the last
        tenth of the x-range held out as the test part).
    preset : str
        ``quick`` (60 s), ``standard`` (5 min), ``paper`` or ``quick-fixed`` (fixed counts of fits,
        no clock: the same seed gives the same kernel); :data:`evocov_core.searches.PRESETS`.
    seed : int
    algorithm : str
        ``evocov``, ``random``, ``gwtf`` or ``gpss``.
    workers : int, optional
        Processes fitting kernels: 1 fits in this process; default every core.
    horizon : int, optional
        Steps after the training part the forecast is for (the setting ``horizon``): the kernel is chosen and
        the forecast's members weighed by their forecasts of as many steps from earlier points in time, the
        classical members forecast them and the guard checks the kernel's forecast of them (default: a tenth
        of the training range). With no test part, :meth:`KernelResult.forecast` of these steps reuses those
        forecasts.
    **settings
        Any :class:`~evocov_core.searches.SearchConfig` setting, overriding the preset's
        (``time_budget=30``, ``population=20``...).

    Returns
    -------
    KernelResult

    Raises
    ------
    evocov_core.searches.ConfigError
        An unknown or invalid setting.
    RuntimeError
        No kernel could be fitted (or none within the time budget).
    """
    from evocov_core.forecast.covariates import searched_on
    from evocov_core.forecast.stage import search_and_forecast
    from evocov_core.runs.kernel_file import dump_kernel_file, parse_kernel_file, search_kernel_file
    from evocov_core.searches import ConfigError, search_data
    from evocov_core.searches import preset as make_preset
    from evocov_core.searches.config import SearchConfig, with_derived

    ds = _dataset(data)
    known = {f for f in SearchConfig.__dataclass_fields__}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise ConfigError(f"unknown setting(s): {', '.join(unknown)}")
    if horizon is not None:
        settings = {**settings, "horizon": horizon}
    config = make_preset(preset, algorithm, **with_derived(settings))
    ds, effect = searched_on(ds)  # with covariates: searched on what they leave, along time
    result = search_and_forecast(search_data(ds, config), config, seed=seed, workers=workers, dataset=ds)
    best = result.search.best
    if best is None or not best.ok:
        raise RuntimeError("no kernel could be fitted on these data"
                           + (" within the time budget" if config.time_budget > 0 else ""))
    doc = search_kernel_file(result, ds, seed=seed, config=config)
    if effect is not None:
        doc["covariates"] = effect.to_dict()
    text = dump_kernel_file(doc)
    return KernelResult(parse_kernel_file(text), ds, text, result, config, seed)


def forecast_panel(df: pd.DataFrame, h: int, *, preset: str = "panel", seed: int = 0, budget: float | None = None,
                   season_length: int | None = None, workers: int | None = None, scheduler: str | None = None,
                   out: str | Path | None = None, **options: object) -> PanelResult:
    """Forecast every series of a long table ``h`` steps ahead, each with its own kernel.

    :func:`evocov_core.panel.forecast_panel` with the kernels described in words in ``series``
    (:func:`evocov_core.present.glance.kernel_phrase`); the parameters are its.

    Parameters
    ----------
    df : pandas.DataFrame
        statsforecast's long format: ``unique_id``, ``ds`` (dates, or numbers of steps), ``y`` (an empty
        ``y`` is a point not observed).
    h : int
        Steps to forecast after each series' last observation.
    preset : str
        ``panel`` (a few seconds of one core a series) or any search preset.
    seed : int
    budget : float, optional
        Seconds of one core per series.
    season_length : int, optional
        Steps in a season when ``ds`` holds numbers (12 monthly, 4 quarterly, 1 yearly).
    workers : int, optional
        Local processes (default every core; 1: this process).
    scheduler : str, optional
        A Dask scheduler's address.
    out : path, optional
        A folder that keeps the run, resumed when called again with the same arguments.
    **options
        ``id_col``, ``ds_col``, ``y_col``, ``progress``, ``should_stop`` and search settings
        (:func:`evocov_core.panel.forecast_panel`).

    Returns
    -------
    evocov_core.panel.PanelResult
        ``forecasts`` (``unique_id, ds, EvoCov, EvoCov-lo-80, ...``, then the kernel's own) and ``series``
        (one row per series).
    """
    from evocov_core.panel.run import forecast_panel as run
    from evocov_core.present.glance import kernel_phrase

    options.setdefault("describe", kernel_phrase)
    return run(df, h, preset=preset, seed=seed, budget=budget, season_length=season_length, workers=workers,
               scheduler=scheduler, out=out, **options)  # type: ignore[arg-type]


def load_kernel(path: str | Path, data: Dataset | str | Path | None = None) -> KernelResult:
    """Load a kernel file (``evocov search --out``, :meth:`KernelResult.save`), validated, never evaluated.

    Parameters
    ----------
    path : str or Path
    data : Dataset, str or Path, optional
        The data to predict from: a Dataset, or a CSV path or bundled name, split with the test
        fraction the file records (as ``evocov predict`` does); without it the result describes the
        kernel but cannot predict until :meth:`KernelResult.with_data`.

    Returns
    -------
    KernelResult

    Raises
    ------
    evocov_core.runs.kernel_file.KernelFileError
        The file is not a valid kernel file (the message names the problem).
    """
    from evocov_core.runs.kernel_file import load_kernel_file

    kf = load_kernel_file(path)
    text = Path(path).read_text(encoding="utf-8")
    return KernelResult(kf, None if data is None else _dataset(data, _recorded_fraction(kf)), text)


def _recorded_fraction(kf: KernelFile) -> float:
    """The test fraction the kernel was scored with (as ``evocov predict`` splits the data), else 0.1."""
    tf = kf.scores.test_fraction
    return 0.1 if tf is None else tf

"""A kernel file set beside the GP baselines (:mod:`evocov_core.searches.gp_baselines`) on the same data and
units: the report's and the Results page's comparison rows (:func:`compare_with_baselines`)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from evocov_core.data.dataset import Dataset, Normalisation
from evocov_core.fitting.gp import NumericalFailure
from evocov_core.fitting.gp import lml as gp_lml
from evocov_core.fitting.metrics import FitData, metric_value
from evocov_core.fitting.model import FittedModel, ModelAverage
from evocov_core.fitting.optimize import NUMERIC_ERRORS, FitResult, OptimConfig, Start, fit_kernel
from evocov_core.fitting.scoring import bic
from evocov_core.fitting.subset import DEFAULT_MAX_POINTS, DataSubset, plan_subset
from evocov_core.language.kernel import Kernel
from evocov_core.runs.kernel_file import KernelFile
from evocov_core.searches import gp_baselines
from evocov_core.searches.gp_baselines import baseline_subset, gpss_config, refine

__all__ = ["Compared", "FittedBaseline", "compare_with_baselines", "comparison_units", "training_data"]


def training_data(ds: Dataset, norm: Normalisation, split_fraction: float = 0.1,
                  approximation: DataSubset | None = None) -> FitData:
    """The data set's training part (and test part) in the model units of ``norm``.

    A kernel file's values live in the normalisation it was fitted in; baselines fitted in the
    same units have BICs that compare with its own. On a long series the data are the subset
    the kernel was fitted on (``approximation``, a kernel file's; None: the default rule,
    :data:`~evocov_core.fitting.subset.DEFAULT_MAX_POINTS`), so that the kernel and its baselines are
    scored on the same points, and no exact GP is built on every point.
    """
    return FitData.from_dataset(ds, split_fraction=split_fraction, max_points=_limit(approximation), norm=norm)


def _limit(approximation: DataSubset | None) -> int:
    return DEFAULT_MAX_POINTS if approximation is None else (0 if approximation.exact else approximation.n_used)


def comparison_units(kf: KernelFile, ds: Dataset) -> tuple[Normalisation, int]:
    """The model units and the number of training points :func:`compare_with_baselines` scores
    ``kf`` and its baselines on: what a :class:`FittedBaseline` must have been fitted with."""
    return kf.normalisation or ds.norm, plan_subset(ds.n_train, _limit(kf.approximation)).n_used


@dataclass(frozen=True)
class FittedBaseline:
    """A GP baseline fitted already, for :func:`compare_with_baselines` to score instead of fitting
    its own: the dashboard's background SE fit, a finished GPSS run's kernel.

    Attributes
    ----------
    fit : FitResult
        Fitted on the training part of the data set compared on, in the model units of ``norm``:
        on every point, or on a long series the ``fit.n`` of them that
        :meth:`~evocov_core.fitting.metrics.FitData.from_dataset` keeps under that limit.
    norm : Normalisation
    note : str
        How it was obtained, for the comparison row.
    seconds : float or None
        Wall seconds it took (None: not known).
    """

    fit: FitResult
    norm: Normalisation
    note: str = ""
    seconds: float | None = None

    def fits(self, kf: KernelFile, ds: Dataset) -> bool:
        """Whether it was fitted on the points and in the units ``kf`` is compared on (:func:`comparison_units`)."""
        return (self.norm, self.fit.n) == comparison_units(kf, ds)


@dataclass(frozen=True)
class Compared:
    """One row of the comparison with the baselines.

    Attributes
    ----------
    name : str
        ``"this kernel"``, ``"SE"`` or ``"GPSS"``.
    expression : str
        Infix form of the kernel (empty when it could not be fitted).
    q : int or None
        Hyperparameters, noise included.
    bic : float
        ``−2·LML + q·log n`` on the training data (+inf when it failed).
    tail_score : float or None
        Posterior log-likelihood of the last ``split_fraction`` of the training range after a
        refit on the rest (:func:`~evocov_core.searches.select.tail_score`); higher is better.
        None without such a split.
    test_rmse : float or None
        RMSE of the predictive mean on the test part (original units); None without one.
    model : FittedModel, ModelAverage or None
        To draw its forecast (a model average's interval and CRPS are those of the normal with
        the mixture's mean and standard deviation).
    note : str
        How it was obtained (the GPSS levels and budget) or why it failed.
    seconds : float or None
        Wall seconds to obtain it: the SE fit, the GPSS search; for this kernel, its search's
        (the kernel file's ``seconds`` score), None when the file does not say.
    status : str
        ``""`` (ok with a model, failed without), or ``"running"`` (still being computed) or
        ``"skipped"`` (not made): a comparison table shows such a row without numbers, with
        ``note`` as its reason.
    """

    name: str
    expression: str
    q: int | None
    bic: float
    tail_score: float | None
    test_rmse: float | None
    model: FittedModel | ModelAverage | None
    note: str = ""
    seconds: float | None = None
    status: str = ""

    @classmethod
    def from_model(cls, name: str, model: FittedModel | ModelAverage, ds: Dataset, *, expression: str = "",
                   q: int | None = None, bic: float = math.nan, note: str = "",
                   seconds: float | None = None) -> Compared:
        """A row of a model already fitted (no refit, no tail score): its test RMSE on ``ds`` (None when it
        cannot predict; the comparison table then says why)."""
        try:
            with np.errstate(all="ignore"):
                rmse = model.test_rmse(ds)
        except (NumericalFailure, np.linalg.LinAlgError, ArithmeticError):
            rmse = None
        return cls(name, expression, q, bic, None, rmse if rmse is not None and math.isfinite(rmse) else None,
                   model, note, seconds)

    @classmethod
    def from_fit(cls, name: str, fit: FitResult, ds: Dataset, *, norm: Normalisation | None = None,
                 note: str = "", seconds: float | None = None) -> Compared:
        """A row of a fit made elsewhere (the dashboard's SE baseline, a stored GPSS run's kernel).

        Parameters
        ----------
        name : str
        fit : FitResult
            Its values in the model units of ``norm`` (default ``ds.norm``), fitted on ``ds``'s
            training part (or a subset of it, ``fit.n`` points).
        ds : Dataset
        norm : Normalisation, optional
        note, seconds
            As the attributes.

        Returns
        -------
        Compared
            Without a model (a failed row, the fit's reason as its note) when the fit failed.
        """
        if not fit.ok:
            return cls(name, fit.kernel.infix, fit.q, math.inf, None, None, None, note or fit.reason, seconds)
        model = FittedModel.from_fit(fit, norm or ds.norm, ds.n_train)
        return cls.from_model(name, model, ds, expression=fit.kernel.infix, q=fit.q, bic=fit.bic, note=note,
                              seconds=seconds)

    @classmethod
    def waiting(cls, name: str, status: str, note: str = "") -> Compared:
        """A row without a model: ``status`` ``"running"``, ``"skipped"`` or ``"failed"``, ``note`` says why."""
        if status not in ("running", "skipped", "failed"):
            raise ValueError(f"a row without a model is running, skipped or failed, not {status!r}")
        return cls(name, "", None, math.nan, None, None, None, note, None, status)


def _tail(kernel: Kernel, start: Start, data: FitData, optim: OptimConfig, seed: tuple[int, ...]) -> float | None:
    """The tail score of the model choice: the last 10 % of ``data``'s range given the rest, after a refit on
    the rest; on a long series' fit points (``data.on_subset``) at the given values, with no refit."""
    from evocov_core.searches.select import tail_score
    from evocov_core.searches.stages import head_stage

    if data.split is None:
        return None
    if data.on_subset:
        # As the search's own choice there reads fitted values: a refit on 1,800 of the 2,000 fit points
        # took 5-35 s per kernel, most of the report's time.
        try:
            with np.errstate(all="ignore"):
                value = metric_value("posterior_lml", kernel, data, np.array((*start.theta, start.log_noise)))
        except NUMERIC_ERRORS:
            return None
        return value if math.isfinite(value) else None
    head, cfg = head_stage(data, optim)
    fit = fit_kernel(kernel, head, cfg, np.random.default_rng(np.random.SeedSequence(list(seed))), start)
    score = tail_score(data, fit)
    return score if math.isfinite(score) else None


def _row(name: str, fit: FitResult, data: FitData, ds: Dataset, norm: Normalisation, optim: OptimConfig,
         seed: tuple[int, ...], note: str = "", seconds: float | None = None) -> Compared:
    if not fit.ok:
        return Compared(name, fit.kernel.infix, fit.q, math.inf, None, None, None, note or fit.reason, seconds)
    model = FittedModel.from_fit(fit, norm, ds.n_train)
    return Compared(name, fit.kernel.infix, fit.q, fit.bic, _tail(fit.kernel, fit.start(), data, optim, seed),
                    model.test_rmse(ds), model, note, seconds)


def compare_with_baselines(kf: KernelFile, ds: Dataset, *, baseline_budget: float = 20.0, seed: int = 0,
                           workers: int | None = 1, se_done: FittedBaseline | None = None,
                           gpss_done: FittedBaseline | None = None) -> list[Compared]:
    """The kernel file's model next to an SE kernel and a GPSS search fitted on the same training data.

    Every model is scored the same way, in the kernel file's normalisation: BIC on the training data (on
    more than :data:`~evocov_core.searches.gp_baselines.BASELINE_POINTS` points, SE and GPSS are fitted on a
    subset of them and refined on all: :func:`~evocov_core.searches.gp_baselines.baseline_subset`), the tail
    score of the model choice (one refit on the head of the training range from the model's values, the
    :func:`~evocov_core.searches.preset` ``quick`` optimiser settings) and the test RMSE. Seeded throughout:
    the same inputs give the same numbers (see :func:`~evocov_core.searches.gp_baselines.gpss_baseline` for
    the one exception, a level boundary on the budget).

    Parameters
    ----------
    kf : KernelFile
    ds : Dataset
        The data, split into training and test parts.
    baseline_budget : float
        Seconds for the GPSS search; 0 leaves GPSS out.
    seed : int
    workers : int or None
        Processes for the GPSS search (1 = in this process).
    se_done, gpss_done : FittedBaseline, optional
        Baselines fitted already (the dashboard's background SE fit, a finished GPSS run on these
        data), scored here as they are instead of fitting them again: on the 100,000-point series
        of ``bench_dashboard_long`` the report's own SE fit takes 5-10 s and its GPSS search
        its budget. ``gpss_done`` replaces the GPSS search whatever ``baseline_budget`` is.

    Returns
    -------
    list of Compared
        This kernel, SE, then GPSS (when ``baseline_budget > 0`` or ``gpss_done`` is given).

    Raises
    ------
    ValueError
        When a baseline given was fitted on other points or in other units than the kernel is
        compared on (:meth:`FittedBaseline.fits`).
    """
    from evocov_core.searches import preset

    for name, done in (("SE", se_done), ("GPSS", gpss_done)):
        if done is not None and not done.fits(kf, ds):
            n = comparison_units(kf, ds)[1]
            raise ValueError(f"the {name} baseline given was fitted on {done.fit.n:,} points, or in other units, "
                             f"not on the {n:,} training points the kernel is compared on")
    model = kf.model(fallback_norm=ds.norm)
    norm = model.norm
    data = training_data(ds, norm, approximation=model.approximation)
    optim = preset("quick").optim
    k = kf.kernel
    theta = np.asarray(kf.theta, dtype=float)
    try:
        with np.errstate(all="ignore"):
            value, _ = gp_lml(k, data.inputs, data.y, theta, kf.log_noise)
        own_bic = bic(value, k.q, data.n)
    except (NumericalFailure, np.linalg.LinAlgError, ArithmeticError):
        own_bic = math.inf
    rows = [Compared("this kernel", k.infix, k.q, own_bic,
                     _tail(k, Start(tuple(theta), kf.log_noise), data, optim, (seed, 7919, 0)),
                     model.test_rmse(ds), model, "the kernel file's values",
                     kf.scores.seconds)]
    small = baseline_subset(data)
    # On many points both baselines search on a subset and are refined on all of them.
    where = "" if small is None else f" on {small.n:,} of the {data.n:,} points, refined on all of them"
    se_note = f"squared exponential + noise, fitted by LML (5 restarts{where})"
    if se_done is not None:
        rows.append(_row("SE", se_done.fit, data, ds, norm, optim, (seed, 7919, 1), se_done.note or se_note,
                         se_done.seconds))
    else:
        t0 = time.perf_counter()
        se = gp_baselines.se_baseline(data, seed=seed)
        rows.append(_row("SE", se, data, ds, norm, optim, (seed, 7919, 1), se_note, time.perf_counter() - t0))
    if gpss_done is not None:
        rows.append(_row("GPSS", gpss_done.fit, data, ds, norm, optim, (seed, 7919, 2), gpss_done.note,
                         gpss_done.seconds))
    elif baseline_budget > 0:
        t0 = time.perf_counter()
        result = gp_baselines.gpss_baseline(data if small is None else small, baseline_budget, seed=seed,
                                            workers=workers)
        best = result.best
        if best is not None and small is not None:
            best = refine(best, data, gpss_config().optim, seed=seed)
        spent = time.perf_counter() - t0
        levels = len(result.history)
        how = (f"{levels} level{'s' * (levels != 1)} in its {baseline_budget:g} s budget"
               if result.status == "cancelled" else f"ended after {levels} level{'s' * (levels != 1)}")
        if best is None:
            rows.append(Compared("GPSS", "", None, math.inf, None, None, None, f"no kernel could be fitted ({how})",
                                 spent))
        else:
            cfg = gpss_config()
            note = (f"greedy search over sums and products of {', '.join(cfg.base_kernels)}"
                    + (" and change points" if "changepoint" in cfg.families else "") + f", {how}{where}")
            rows.append(_row("GPSS", best, data, ds, norm, optim, (seed, 7919, 2), note, spent))
    return rows

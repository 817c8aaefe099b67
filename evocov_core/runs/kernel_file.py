"""Versioned JSON kernel files and their safe parser.

A kernel file holds everything needed to predict again with a fitted kernel::

    {
      "format": "evocov-kernel", "version": 2,
      "expression": "multiply(square(hp(hp0)), exp(multiply(-0.5, sq_dist(euc(x), hp1))))",
      "canonical": "...", "infix": "...", "latex": "...",
      "hyperparameters": {"hp0": {"value": 0.93, "roles": ["value"]}, ...},
      "noise_variance": 0.0021, "jitter": 0.0, "q": 3,
      "normalisation": {"x_offset": [...], "x_scale": [...], "y_mean": ..., "y_std": ...},
      "scores": {"bic": ..., "lml": ..., "metric": "lml", "metric_value": ..., "test_rmse": ...,
                 "dataset": "airline", "n_train": 129, "n_test": 15, "test_fraction": 0.1},
      "software": "evocov 0.1.0", "created": "2026-11-26T10:00:00+00:00",
      "git": {"commit": "<40 hex digits>", "dirty": false}
    }

Version 2 added the state-space operations ``wiener``, ``iwiener`` and ``damped`` (a local level,
a local trend, a damped trend: :mod:`evocov_core.language.grammar`); nothing else changed, so version-1
files load as they always did, and a version-1 file that names one of those operations is refused.

``git`` names the code that wrote the file (:func:`evocov_core.compute.provenance.git_state`; both
None outside a git checkout). Files written before it existed load as before.

Hyperparameter ``value``s are natural (not log) slot values in **model units** (inputs
rescaled with ``normalisation``, outputs standardised); ``noise_variance`` too.

Files are untrusted input. :func:`load_kernel_file` never calls ``eval``, ``pickle`` or
DEAP's ``PrimitiveTree.from_string``: the expression is tokenised and parsed here
against the primitive set, iteratively, with bounds on file size, expression length,
node count and depth. Anything else is refused with a :class:`KernelFileError` that
names the problem.

A model-average file (``"format": "evocov-model-average"``, :func:`model_average_dict`,
:func:`parse_model_average`) lists kernel files with weights: a Bayesian model average.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from evocov_core.compute.provenance import git_state
from evocov_core.data.dataset import Dataset, Normalisation
from evocov_core.fitting.calibration import Calibration
from evocov_core.fitting.gp import FitStatus
from evocov_core.fitting.model import FittedModel, ModelAverage, Prediction
from evocov_core.fitting.optimize import FitResult, finite_or, finite_or_none
from evocov_core.fitting.subset import DataSubset, plan_subset
from evocov_core.forecast.combination import Combination
from evocov_core.forecast.covariates import CovariateEffect
from evocov_core.language.grammar import DEFAULT_N_HYPER
from evocov_core.language.kernel import Kernel, slot_roles
from evocov_core.language.parse import MAX_DEPTH, MAX_NODES, KernelFileError, clipped, parse_expression
from evocov_core.runs.scores import Scores

if TYPE_CHECKING:  # pragma: no cover - types only
    from evocov_core.forecast.stage import ForecastResult
    from evocov_core.searches.common import SearchResult
    from evocov_core.searches.config import SearchConfig

__all__ = [
    "AVERAGE_FORMAT",
    "FORMAT",
    "MAX_AVERAGE_KERNELS",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_NODES",
    "VERSION",
    "KernelFile",
    "KernelFileError",
    "dump_kernel_file",
    "kernel_file_dict",
    "load_kernel_file",
    "model_average",
    "model_average_dict",
    "model_average_predict",
    "parse_expression",
    "parse_kernel_file",
    "parse_model_average",
    "search_kernel_file",
]

FORMAT = "evocov-kernel"
#: Largest |log| of a hyperparameter value a file may hold (1e±100; a search stays within e^±10).
MAX_ABS_LOG_VALUE = 100 * math.log(10.0)
VERSION = 2
#: Versions this program reads, and the operations each version added.
READS_VERSIONS = (1, 2)
_ADDED_IN = {2: frozenset({"wiener", "iwiener", "damped"})}
MAX_FILE_BYTES = 1_000_000
#: A model-average file: kernel files with weights (see :func:`model_average_dict`).
AVERAGE_FORMAT = "evocov-model-average"
MAX_AVERAGE_KERNELS = 100

_HEX = re.compile(r"[0-9a-f]{7,64}")

T = TypeVar("T")


@dataclass(frozen=True)
class KernelFile:
    """A loaded kernel file.

    Attributes
    ----------
    kernel : Kernel
    theta : tuple of float
        Log slot values ordered as ``kernel.slots``.
    log_noise : float
    jitter : float
    normalisation : Normalisation or None
    scores : Scores
        Its scores (:class:`Scores`: BIC, LML, test RMSE, seconds...).
    git_commit : str or None
        Commit of the code that wrote the file (None when unknown or absent: older files).
    git_dirty : bool or None
        Whether that code had uncommitted changes.
    approximation : DataSubset or None
        Which training points the kernel was fitted on and predicts from
        (:mod:`evocov_core.fitting.subset`); None in files written before it was recorded (exact).
    run : dict or None
        What the search that found the kernel did (settings, seed, generations, fits and where
        its clock stopped it: :func:`evocov_core.searches.run_file.run_record`), as stored; read by
        ``search --replay``, which validates it. None for files without it.
    calibration : Calibration
        The factor on the forecast's spread and what it was learned from
        (:mod:`evocov_core.fitting.calibration`; none in files without it).
    combination : Combination
        Whether the search's forecast was the kernel's own or its weighted average with classical
        forecasts, with the weights and the guard's reason (:mod:`evocov_core.forecast.combination`; the
        kernel's own in files without it). A
        prediction from the file is the kernel's: the classical forecasts are not in it.
    covariates : CovariateEffect or None
        The covariates' linear effect when the search ran on a series with covariates
        (:mod:`evocov_core.forecast.covariates`): the kernel is of ``y − βᵀc`` along time, and a prediction
        adds ``βᵀc`` back. None in files without covariates.
    """

    kernel: Kernel
    theta: tuple[float, ...]
    log_noise: float
    jitter: float = 0.0
    normalisation: Normalisation | None = None
    scores: Scores = field(default_factory=Scores)
    git_commit: str | None = None
    git_dirty: bool | None = None
    approximation: DataSubset | None = None
    run: dict | None = None
    calibration: Calibration = field(default_factory=Calibration)
    combination: Combination = field(default_factory=Combination)
    covariates: CovariateEffect | None = None

    @property
    def q(self) -> int:
        return self.kernel.q

    def to_fit(self, n: int = 0) -> FitResult:
        """A fit carrying this file's values and stored scores (no optimisation).

        Parameters
        ----------
        n : int
            Training points, when the file says neither its ``approximation`` nor ``n_train``.

        Returns
        -------
        FitResult
            Status ``OK``; metric, metric value, LML, BIC and test RMSE as stored (NaN,
            +inf and None when absent); no evaluations. Its ``n`` is the points the fit used:
            on a long series the subset's (``approximation``), so that
            :meth:`FittedModel.from_fit` conditions on the same points, never on all of them.
        """
        sc = self.scores
        used = self.approximation.n_used if self.approximation is not None else int(sc.number("n_train") or n)
        return FitResult(
            kernel=self.kernel,
            theta=tuple(self.theta),
            log_noise=self.log_noise,
            jitter=self.jitter,
            status=FitStatus.OK,
            reason="",
            metric=sc.text("metric") or "lml",
            metric_value=finite_or(sc.number("metric_value")),
            lml=sc.lml,
            bic=finite_or(sc.number("bic"), math.inf),
            q=self.q,
            n=used,
            n_evals=0,
            seconds=0.0,
            test_rmse=sc.test_rmse,
        )

    def model(self, fallback_norm: Normalisation | None = None) -> FittedModel:
        """The fitted model this file holds, to predict with (values in the file's normalisation, else
        ``fallback_norm``).

        Raises
        ------
        ValueError
            The file has no normalisation and none was given.
        """
        norm = self.normalisation or fallback_norm
        if norm is None:
            raise ValueError("the kernel file has no normalisation and none was given")
        return FittedModel(self.kernel, tuple(self.theta), self.log_noise, self.jitter, norm, self.approximation,
                           self.calibration.spread)


def _number(v: object, what: str, *, positive: bool = False, nonneg: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise KernelFileError(f"{what} must be a number, not {type(v).__name__}")
    try:
        f = float(v)
    except OverflowError:
        raise KernelFileError(f"{what} is too large") from None
    if not math.isfinite(f):
        raise KernelFileError(f"{what} must be finite, got {v!r}")
    if positive and f <= 0:
        raise KernelFileError(f"{what} must be positive, got {v!r}")
    if nonneg and f < 0:
        raise KernelFileError(f"{what} must not be negative, got {v!r}")
    return f


def _reject_constant(name: str) -> float:
    raise KernelFileError(f"{name} is not allowed in a kernel file (values must be finite numbers)")


def _load_json(text: str | bytes) -> dict:
    """A JSON object from untrusted text: size, encoding, strict numbers checked."""
    if isinstance(text, bytes):
        if len(text) > MAX_FILE_BYTES:
            raise KernelFileError(f"file is {len(text)} bytes, above the limit of {MAX_FILE_BYTES}")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise KernelFileError("file is not UTF-8 text") from None
    if len(text) > MAX_FILE_BYTES:
        raise KernelFileError(f"file is {len(text)} characters, above the limit of {MAX_FILE_BYTES}")
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except KernelFileError:
        raise
    except (json.JSONDecodeError, RecursionError) as exc:
        raise KernelFileError(f"not valid JSON ({exc})") from None
    except ValueError as exc:  # e.g. an integer literal beyond Python's digit limit
        raise KernelFileError(f"not a usable JSON number ({str(exc)[:80]})") from None
    if not isinstance(doc, dict):
        raise KernelFileError("top level must be a JSON object")
    return doc


def _check_header(doc: dict, fmt: str) -> None:
    """Refuse a document of another format or version."""
    if doc.get("format") != fmt:
        raise KernelFileError(f"'format' must be {fmt!r}, got {clipped(repr(doc.get('format')))}")
    v = doc.get("version")
    if isinstance(v, bool) or v not in READS_VERSIONS:
        reads = ", ".join(map(str, READS_VERSIONS))
        raise KernelFileError(f"unsupported version {clipped(repr(v))}; this program reads versions {reads}")


def _check_operations(kernel: Kernel, version: int) -> None:
    """Refuse an operation newer than the file's version (no program of that version wrote it)."""
    for added_in, names in _ADDED_IN.items():
        if version < added_in:
            used = sorted(names.intersection(kernel.tokens))
            if used:
                raise KernelFileError(f"operation {used[0]!r} needs a version-{added_in} file; this one is "
                                      f"version {version}")


def parse_kernel_file(text: str | bytes) -> KernelFile:
    """Validate and parse the content of a kernel file.

    Raises
    ------
    KernelFileError
        With a message naming the first problem found.
    """
    doc = _load_json(text)
    _check_header(doc, FORMAT)
    kernel = parse_expression(doc.get("expression"), n_hyper=10000)
    _check_operations(kernel, doc["version"])
    hps = doc.get("hyperparameters")
    if not isinstance(hps, dict):
        raise KernelFileError("'hyperparameters' must be an object mapping slot names to values")
    unknown = sorted(set(hps) - set(kernel.slots), key=str)
    if unknown:
        raise KernelFileError(f"hyperparameter {clipped(str(unknown[0]))!r} does not appear in the expression")
    theta = []
    for s in kernel.slots:
        if s not in hps:
            raise KernelFileError(f"no value for hyperparameter {s!r}")
        entry = hps[s]
        value = _number(entry.get("value") if isinstance(entry, dict) else entry, f"hyperparameter {s}",
                        positive=True)
        t = math.log(value)
        if abs(t) > MAX_ABS_LOG_VALUE:
            raise KernelFileError(
                f"hyperparameter {s} = {value:g} is outside 1e-100 to 1e100: no search writes such a value "
                "(it fits within e^-10 to e^10), and squaring it would overflow or underflow")
        if isinstance(entry, dict) and "log_value" in entry:
            # Prefer the stored log value (exact round trip: exp(log(exp(t))) can differ
            # from exp(t) in the last bit), once checked against the value.
            lv = _number(entry["log_value"], f"hyperparameter {s} log_value")
            if abs(lv - t) > 1e-9 * max(1.0, abs(t)):
                raise KernelFileError(f"hyperparameter {s}: log_value {lv} does not match value {value}")
            t = lv
        theta.append(t)
    noise = _number(doc.get("noise_variance"), "noise_variance", positive=True)
    log_noise = math.log(noise)
    if "log_noise_variance" in doc:
        ln = _number(doc["log_noise_variance"], "log_noise_variance")
        if abs(ln - log_noise) > 1e-9 * max(1.0, abs(log_noise)):
            raise KernelFileError("log_noise_variance does not match noise_variance")
        log_noise = ln
    jitter = _number(doc.get("jitter", 0.0), "jitter", nonneg=True)
    if "q" in doc and _number(doc["q"], "q") != kernel.q:
        raise KernelFileError(f"q is {doc['q']} but the expression has q = {kernel.q}")
    norm = None
    nd = doc.get("normalisation")
    if nd is not None:
        if not isinstance(nd, dict):
            raise KernelFileError("'normalisation' must be an object")
        try:
            off = nd["x_offset"]
            sc = nd["x_scale"]
            if not isinstance(off, list) or not isinstance(sc, list) or len(off) != len(sc) or not off:
                raise KernelFileError("normalisation x_offset and x_scale must be lists of equal, non-zero length")
            if len(off) > 1000:
                raise KernelFileError("normalisation has too many input dimensions")
            norm = Normalisation(
                tuple(_number(v, "normalisation x_offset") for v in off),
                tuple(_number(v, "normalisation x_scale", positive=True) for v in sc),
                _number(nd["y_mean"], "normalisation y_mean"),
                _number(nd["y_std"], "normalisation y_std", positive=True),
            )
        except KeyError as exc:
            raise KernelFileError(f"normalisation lacks {exc.args[0]!r}") from None
    scores = doc.get("scores", {})
    if not isinstance(scores, dict):
        raise KernelFileError("'scores' must be an object")
    clean_scores = {}
    for k, v in scores.items():
        if isinstance(v, int) and not isinstance(v, bool):
            clean_scores[str(k)[:40]] = v
        elif isinstance(v, float):
            clean_scores[str(k)[:40]] = v if math.isfinite(v) else None
        elif isinstance(v, str):
            clean_scores[str(k)[:40]] = v[:200]
        elif v is None:
            clean_scores[str(k)[:40]] = None
    approx = None
    if doc.get("approximation") is not None:
        if not isinstance(doc["approximation"], dict):
            raise KernelFileError("'approximation' must be an object")
        try:
            approx = DataSubset.from_dict(doc["approximation"])
        except ValueError as exc:
            raise KernelFileError(str(exc)) from None
    commit, dirty = _git_fields(doc.get("git"))
    run = doc.get("run")
    if run is not None and not isinstance(run, dict):
        raise KernelFileError("'run' must be an object")
    calib = _optional(doc, "calibration", Calibration.from_dict, Calibration())
    combination = _optional(doc, "combination", Combination.from_dict, Combination())
    covariates = _optional(doc, "covariates", CovariateEffect.from_dict, None)
    return KernelFile(kernel, tuple(theta), log_noise, jitter, norm, Scores(clean_scores), commit, dirty, approx, run,
                      calib, combination, covariates)


def _optional(doc: dict, key: str, parse: Callable[[object], T], default: T) -> T:
    """``parse(doc[key])``, its ValueError a :class:`KernelFileError`; ``default`` when the key is absent or null."""
    if doc.get(key) is None:
        return default
    try:
        return parse(doc[key])
    except ValueError as exc:
        raise KernelFileError(str(exc)) from None


def _git_fields(g: object) -> tuple[str | None, bool | None]:
    """The ``git`` entry's commit (hex digits) and dirty flag; None for whatever is absent or malformed."""
    if not isinstance(g, dict):
        return None, None
    c, d = g.get("commit"), g.get("dirty")
    commit = c if isinstance(c, str) and _HEX.fullmatch(c) else None
    return commit, d if isinstance(d, bool) else None


def load_kernel_file(path: str | Path) -> KernelFile:
    """Read and validate a kernel file from disk (size checked before reading)."""
    p = Path(path)
    if not p.is_file():
        raise KernelFileError(f"no such file: {p}")
    size = p.stat().st_size
    if size > MAX_FILE_BYTES:
        raise KernelFileError(f"file is {size} bytes, above the limit of {MAX_FILE_BYTES}")
    return parse_kernel_file(p.read_bytes())




def search_kernel_file(result: SearchResult | ForecastResult, ds: Dataset, *, seed: int,
                       config: SearchConfig | None = None, extra_scores: dict | None = None) -> dict:
    """The kernel file of a search's returned kernel: the one writer for the CLI, background jobs, the
    front door and the benchmarks.

    It holds the fit, the interval calibration, the forecast's combination and its test RMSE (when a
    forecast stage ran and the data have a test part), the counts of fits
    (:mod:`evocov_core.runs.counts`), the algorithm, seed and evaluations, and with ``config`` the run
    record that replays the search (:func:`~evocov_core.searches.run_file.run_record`).

    Parameters
    ----------
    result : SearchResult or ForecastResult
        A :class:`~evocov_core.forecast.stage.ForecastResult` gives the combination; a plain search
        result (the mutation explorer's) the kernel's own forecast. Its search's ``best`` must be a fitted kernel.
    ds : Dataset
        The data set the search ran on (its name, split and normalisation are recorded).
    seed : int
    config : SearchConfig, optional
        The settings it ran with (``result.settings`` names them too, but not as a config).
    extra_scores : dict, optional
        Further scores a caller records (they win over the ones above).

    Raises
    ------
    ValueError
        The result has no fitted kernel.
    """
    from evocov_core.runs.counts import count_scores
    from evocov_core.searches.common import SearchResult
    from evocov_core.searches.run_file import run_record

    forecast = None if isinstance(result, SearchResult) else result
    result = forecast.search if forecast is not None else result
    best = result.best
    if best is None or not best.ok:
        raise ValueError("the search returned no fitted kernel")
    combination = forecast.combination if forecast is not None else None
    scores: dict[str, Any] = {"algorithm": result.algorithm, "seed": int(seed), "seconds": round(result.elapsed, 3),
                              "evaluations": result.n_evaluations, **count_scores(result)}
    # Whenever a forecast was asked for (a combination, even one that kept the kernel alone because the
    # origins' forecasts ran out of time), its test RMSE is recorded: the kernel's own where it is the kernel's.
    rmse = forecast.test_rmse(ds) if forecast is not None else None
    if rmse is not None and math.isfinite(rmse):
        scores["forecast_test_rmse"] = rmse
    scores.update(extra_scores or {})
    return kernel_file_dict(best, ds.norm, dataset=ds.name, n_test=ds.n_test, n_train=ds.n_train,
                            test_fraction=ds.test_fraction, calibration=result.calibration, combination=combination,
                            extra_scores=scores, run=run_record(result, config, seed) if config is not None else None)


def kernel_file_dict(fit: FitResult, normalisation: Normalisation | None, *, dataset: str | None = None,
                     n_test: int | None = None, test_fraction: float | None = None,
                     extra_scores: dict | None = None, n_train: int | None = None, run: dict | None = None,
                     calibration: Calibration | None = None, combination: Combination | None = None) -> dict:
    """The JSON document for a fitted kernel.

    ``n_train``: the data set's training points. The file then records which of them the fit
    used (``approximation``: all, or on a long series the ``fit.n`` of
    :func:`~evocov_core.fitting.subset.plan_subset`), so that a prediction conditions on the same points.
    ``run``: what the search did (:func:`evocov_core.searches.run_file.run_record`).
    ``calibration``: the factor on the forecast's spread (:mod:`evocov_core.fitting.calibration`).
    ``combination``: how the search's forecast weighed the kernel's and classical ones
    (:mod:`evocov_core.forecast.combination`).
    """
    from evocov_core._version import __version__

    k = fit.kernel
    roles = slot_roles(k)
    approximation = None
    if n_train is not None:
        approximation = plan_subset(n_train, fit.n if 0 < fit.n < n_train else 0)
    hps = {
        s: {"value": math.exp(t), "log_value": t, "roles": sorted(roles[s])}
        for s, t in zip(k.slots, fit.theta, strict=True)
    }
    scores = {
        "bic": finite_or_none(fit.bic),
        "lml": finite_or_none(fit.lml),
        "metric": fit.metric,
        "metric_value": finite_or_none(fit.metric_value),
        "test_rmse": finite_or_none(fit.test_rmse),
        "dataset": dataset,
        "n_train": approximation.n_total if approximation is not None else fit.n,
        "n_test": n_test,
        "test_fraction": test_fraction,
    }
    if extra_scores:
        scores.update(extra_scores)
    return {
        "format": FORMAT,
        "version": VERSION,
        "expression": k.prefix,
        "canonical": k.canonical,
        "infix": k.infix,
        "latex": k.latex,
        "hyperparameters": hps,
        "noise_variance": math.exp(fit.log_noise),
        "log_noise_variance": fit.log_noise,
        "jitter": fit.jitter,
        "q": k.q,
        "normalisation": normalisation.to_dict() if normalisation is not None else None,
        "scores": scores,
        "units": "hyperparameter values and noise_variance are in model units: inputs mapped by normalisation, "
                 "outputs standardised",
        "software": f"evocov {__version__}",
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "grammar_slots": DEFAULT_N_HYPER,
        "git": git_state(),
        "approximation": approximation.to_dict() if approximation is not None else None,
        **({"calibration": calibration.to_dict()} if calibration is not None else {}),
        **({"combination": combination.to_dict()} if combination is not None else {}),
        **({"run": run} if run is not None else {}),
    }


def dump_kernel_file(doc: dict) -> str:
    """Serialise a kernel-file document (strict JSON: no NaN or Infinity)."""
    return json.dumps(doc, indent=2, allow_nan=False)


# --- model-average files ---------------------------------------------------------------------------


def model_average_dict(kernels: Sequence[dict], weights: Sequence[float], *, dataset: str | None = None,
                       scores: dict | None = None) -> dict:
    """The JSON document of a Bayesian model average: kernel-file documents with weights::

        {"format": "evocov-model-average", "version": 2,
         "kernels": [{"weight": 0.7, "kernel": {<kernel file>}}, ...],
         "scores": {"dataset": "airline", "test_rmse": ...}, ...}

    Its forecast is the mixture ``Σ_k w_k N(μ_k, σ_k²)`` of the kernels' predictive
    distributions (:class:`evocov_core.fitting.model.ModelAverage`).

    Parameters
    ----------
    kernels : sequence of dict
        K kernel-file documents (:func:`kernel_file_dict`).
    weights : sequence of float
        K weights (stored as given; readers normalise them to sum 1).
    dataset : str, optional
    scores : dict, optional
        More scores of the average (e.g. its test RMSE); non-finite floats become None.
    """
    from evocov_core._version import __version__

    if len(kernels) != len(weights):
        raise ValueError(f"{len(weights)} weights for {len(kernels)} kernels")
    sc: dict[str, Any] = {"dataset": dataset, "n_kernels": len(kernels)}
    for k, v in (scores or {}).items():
        sc[k] = finite_or_none(v) if isinstance(v, float) else v
    return {
        "format": AVERAGE_FORMAT,
        "version": VERSION,
        "description": "Bayesian model average: the forecast is the mixture of the kernels' predictive "
                       "distributions, weighted by 'weight' (normalised to sum 1)",
        "kernels": [{"weight": float(w), "kernel": doc} for doc, w in zip(kernels, weights, strict=True)],
        "scores": sc,
        "software": f"evocov {__version__}",
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def parse_model_average(text: str | bytes) -> list[tuple[KernelFile, float]]:
    """Validate and parse a model-average file: ``[(kernel file, weight), ...]``.

    Every kernel is checked as :func:`parse_kernel_file` checks a kernel file; weights
    must be finite and non-negative (returned as stored, not normalised).

    Raises
    ------
    KernelFileError
        With a message naming the first problem found.
    """
    doc = _load_json(text)
    _check_header(doc, AVERAGE_FORMAT)
    entries = doc.get("kernels")
    if not isinstance(entries, list) or not entries:
        raise KernelFileError("'kernels' must be a non-empty list of {\"weight\": ..., \"kernel\": {...}} objects")
    if len(entries) > MAX_AVERAGE_KERNELS:
        raise KernelFileError(f"{len(entries)} kernels, above the limit of {MAX_AVERAGE_KERNELS}")
    out = []
    for i, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict) or not isinstance(entry.get("kernel"), dict):
            raise KernelFileError(f"kernel {i}: each entry must be an object with 'weight' and 'kernel'")
        w = _number(entry.get("weight"), f"kernel {i} weight", nonneg=True)
        try:
            kf = parse_kernel_file(json.dumps(entry["kernel"]))
        except KernelFileError as exc:
            raise KernelFileError(f"kernel {i}: {exc}") from None
        out.append((kf, w))
    if not any(w > 0 for _, w in out):
        raise KernelFileError("every weight is zero")
    return out


def model_average(docs: Sequence[dict | KernelFile], weights: ArrayLike,
                  fallback_norm: Normalisation | None = None) -> ModelAverage:
    """The model average of kernel-file documents (dicts, e.g. a run's stored ``ensemble``), each
    validated by :func:`parse_kernel_file` (never evaluated), or loaded :class:`KernelFile`\\ s.

    Parameters
    ----------
    docs : sequence of dict or KernelFile
        K members; values in each file's normalisation, else in ``fallback_norm``.
    weights : array_like of shape (K,)
        Non-negative; normalised to sum 1 (:func:`~evocov_core.fitting.model.average_weights`).

    Raises
    ------
    KernelFileError
        Naming the member whose document is invalid.
    """
    files = []
    for i, doc in enumerate(docs):
        if isinstance(doc, KernelFile):
            files.append(doc)
            continue
        try:
            if not isinstance(doc, dict):
                raise KernelFileError(f"expected a kernel-file object, got {type(doc).__name__}")
            files.append(parse_kernel_file(dump_kernel_file(doc)))
        except (KernelFileError, TypeError, ValueError) as exc:
            raise KernelFileError(f"kernel {i + 1} of the model average: {exc}") from None
    return ModelAverage(tuple(kf.model(fallback_norm) for kf in files), tuple(np.asarray(weights, float)))


def model_average_predict(docs: Sequence[dict | KernelFile], weights: ArrayLike, ds: Dataset,
                          X_new: ArrayLike | None = None) -> Prediction:
    """Predictive mixture of kernel files at ``X_new``, given a data set's training part.

    Parameters
    ----------
    docs : sequence of dict or KernelFile
        K kernel-file documents (parsed and validated, never evaluated) or loaded files.
        Values are read in each file's normalisation, else in ``ds.norm``.
    weights : array_like of shape (K,)
        Non-negative; normalised to sum 1 (see :func:`average_weights`).
    ds : Dataset
    X_new : array_like of shape (m, d) or (m,), optional
        Default: the test inputs.

    Returns
    -------
    Prediction
        Mixture mean and standard deviations of shape (m,), original units.
    """
    return model_average(docs, weights, ds.norm).predict_dataset(ds, X_new)

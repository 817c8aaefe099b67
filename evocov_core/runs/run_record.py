"""What the run store hands back: a frozen, typed record of one run (as Optuna's ``FrozenTrial``).

:meth:`evocov_core.runs.store.RunStore.get_run` returns a :class:`RunRecord`: attributes with types, a
:class:`~evocov_core.searches.common.RunStatus`, the best kernel and its scores as a
:class:`KernelRecord`, and ``None`` wherever the run has nothing (no kernel yet, an old run
without a model average, a search that is not an exploration). Readers never dig through
nested dicts.

The record is read from the store's columns as they have always been written: rows of every
layout so far (store layout 1, runs written before the model choice, the model average or the
provenance existed) give a record, with ``None`` or empty tuples for what they lack.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

import pandas as pd

from evocov_core.data.dataset import Dataset
from evocov_core.fitting.optimize import FitResult
from evocov_core.forecast.combination import Combination
from evocov_core.runs.kernel_file import dump_kernel_file, parse_kernel_file
from evocov_core.searches.common import EvalRecord, RunStatus
from evocov_core.searches.explore import NeighbourRatios, neighbour_ratios

__all__ = ["EnsembleMember", "KernelRecord", "NeighbourSummary", "RunRecord"]


def _number(v: object) -> float | None:
    """A finite float, or None (absent, null, not a number, NaN or infinite)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _int(v: object) -> int | None:
    f = _number(v)
    return int(f) if f is not None and f.is_integer() else None


def _frozen(d: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(d or {}))


@dataclass(frozen=True)
class KernelRecord:
    """A stored kernel: a kernel-file document (:mod:`evocov_core.runs.kernel_file`) and its scores.

    Attributes
    ----------
    expression : str
        The prefix form (the stored tree).
    infix : str
        The readable formula.
    q : int or None
        Hyperparameters, noise included.
    bic, lml, test_rmse, metric_value : float or None
        Scores as stored; None when absent or not finite.
    metric : str or None
        The hyperparameter metric it was fitted by.
    text : str
        The kernel file itself (strict JSON): what a download writes and :meth:`to_fit` parses.
    """

    expression: str
    infix: str
    q: int | None
    bic: float | None
    lml: float | None
    test_rmse: float | None
    metric: str | None
    metric_value: float | None
    text: str

    @classmethod
    def from_doc(cls, doc: object) -> KernelRecord | None:
        """The record of a kernel-file document; None when ``doc`` is not one (absent, malformed)."""
        if not isinstance(doc, dict) or not isinstance(doc.get("expression"), str):
            return None
        try:
            text = dump_kernel_file(doc)
        except (TypeError, ValueError):
            return None
        sc = doc.get("scores") if isinstance(doc.get("scores"), dict) else {}
        return cls(expression=doc["expression"], infix=str(doc.get("infix") or doc["expression"]),
                   q=_int(doc.get("q")), bic=_number(sc.get("bic")), lml=_number(sc.get("lml")),
                   test_rmse=_number(sc.get("test_rmse")),
                   metric=sc.get("metric") if isinstance(sc.get("metric"), str) else None,
                   metric_value=_number(sc.get("metric_value")), text=text)

    @property
    def doc(self) -> dict:
        """The kernel-file document (a fresh copy: changing it changes nothing stored)."""
        return json.loads(self.text)

    def to_fit(self, n: int = 0) -> FitResult:
        """The kernel and its values as a :class:`FitResult` (see :meth:`KernelFile.to_fit`).

        Raises :class:`~evocov_core.runs.kernel_file.KernelFileError` if the stored document does not parse.
        """
        return parse_kernel_file(self.text).to_fit(n)

    @property
    def combination(self) -> Combination:
        """Whether the run's forecast averaged this kernel's with classical forecasts
        (:mod:`evocov_core.forecast.combination`); the kernel's own when the document records none or a
        malformed one."""
        stored = self.doc.get("combination")
        try:
            return Combination.from_dict(stored) if stored else Combination()
        except ValueError:
            return Combination()

    def same_model(self, other: KernelRecord | None) -> bool:
        """Same tree, hyperparameter values and noise (what a forecast depends on)."""
        if other is None:
            return False
        a, b = self.doc, other.doc
        return all(a.get(k) == b.get(k) for k in ("expression", "hyperparameters", "noise_variance"))


@dataclass(frozen=True)
class EnsembleMember:
    """One kernel of a search's model average, with its weight (None when not stored)."""

    weight: float | None
    kernel: KernelRecord


@dataclass(frozen=True)
class NeighbourSummary:
    """What an exploration measured against its base kernel (the paper's Table 3).

    ``better_fitted``, ``simpler`` and ``both`` are fractions of the mutants (None until the
    exploration has ended: :meth:`RunRecord.neighbour_ratios` computes them from the rows).
    """

    base_q: int | None
    base_test_rmse: float | None
    better_fitted: float | None
    simpler: float | None
    both: float | None


@dataclass(frozen=True)
class RunRecord:
    """One run of the store, frozen.

    Attributes
    ----------
    id, kind, algorithm : str
        ``kind`` is ``"search"`` or ``"explore"``; ``algorithm`` ``"explore"`` for an exploration.
    status : RunStatus
    created, updated : float
        Seconds since the epoch.
    dataset_name : str or None
    dataset : Dataset or None
        The data the run learnt from, split as it was.
    seed : int or None
    label : str
    settings : mapping
        The search settings (:meth:`SearchConfig.to_dict`), plus ``n_mutations`` of an exploration.
    best : KernelRecord or None
        The kernel the run returned (the best so far while it runs).
    n_evaluations, generations_done : int
    elapsed : float
        Seconds.
    error : str or None
    owner_pid : int or None
        The process that ran it.
    selection : tuple of mapping
        The candidates the search chose its kernel among (:func:`~evocov_core.present.figures.selection_data`).
    lowest_bic : KernelRecord or None
        The lowest-BIC kernel, when the model choice kept another.
    ensemble : tuple of EnsembleMember
        The model average.
    base : KernelRecord or None
        An exploration's base kernel.
    neighbours : NeighbourSummary or None
        An exploration's ratios (None for a search).
    extra : mapping
        Everything the run stored beside its row, as stored (read-only).
    """

    id: str
    kind: str
    algorithm: str
    status: RunStatus
    created: float
    updated: float
    dataset_name: str | None
    dataset: Dataset | None
    seed: int | None
    label: str
    settings: Mapping[str, Any]
    best: KernelRecord | None
    n_evaluations: int
    generations_done: int
    elapsed: float
    error: str | None
    owner_pid: int | None
    selection: tuple[Mapping[str, Any], ...]
    lowest_bic: KernelRecord | None
    ensemble: tuple[EnsembleMember, ...]
    base: KernelRecord | None
    neighbours: NeighbourSummary | None
    extra: Mapping[str, Any]

    @classmethod
    def from_row(cls, row: Mapping[str, Any], dataset: Dataset | None) -> RunRecord:
        """The record of a ``runs`` row (column name -> value, JSON columns as text).

        ``dataset`` is the row's ``dataset_json`` already read (the store owns that format).
        """
        settings = json.loads(row.get("settings_json") or "{}")
        best = json.loads(row["best_json"]) if row.get("best_json") else None
        extra = json.loads(row.get("extra_json") or "{}")
        extra = extra if isinstance(extra, dict) else {}
        kind = str(row.get("kind") or "search")
        ensemble = tuple(EnsembleMember(_number(e.get("weight")), k) for e in extra.get("ensemble") or []
                         if isinstance(e, dict) and (k := KernelRecord.from_doc(e.get("kernel"))) is not None)
        base = KernelRecord.from_doc(extra.get("base"))
        neighbours = None
        if kind == "explore":
            stored_q = "base_q" in extra
            neighbours = NeighbourSummary(
                base_q=_int(extra.get("base_q")) if stored_q else (base.q if base else None),
                base_test_rmse=_number(extra.get("base_test_rmse")) if stored_q else (base.test_rmse if base else None),
                better_fitted=_number(extra.get("better_fitted")), simpler=_number(extra.get("simpler")),
                both=_number(extra.get("both")))
        return cls(
            id=str(row["id"]), kind=kind, algorithm=str(row.get("algorithm") or ""),
            status=RunStatus(row["status"]), created=float(row.get("created") or 0.0),
            updated=float(row.get("updated") or 0.0), dataset_name=row.get("dataset_name"), dataset=dataset,
            seed=_int(row.get("seed")), label=str(row.get("label") or ""),
            settings=_frozen(settings if isinstance(settings, dict) else {}), best=KernelRecord.from_doc(best),
            n_evaluations=_int(row.get("n_evaluations")) or 0, generations_done=_int(row.get("generations_done")) or 0,
            elapsed=_number(row.get("elapsed")) or 0.0, error=row.get("error") or None,
            owner_pid=_int(row.get("owner_pid")),
            selection=tuple(_frozen(r) for r in extra.get("selection") or [] if isinstance(r, dict)),
            lowest_bic=KernelRecord.from_doc(extra.get("lowest_bic")), ensemble=ensemble, base=base,
            neighbours=neighbours, extra=_frozen(extra),
        )

    # --- derived views ----------------------------------------------------------------------
    @property
    def best_bic(self) -> float | None:
        """The best kernel's BIC (None without one)."""
        return self.best.bic if self.best is not None else None

    @property
    def total_generations(self) -> int | None:
        """Generations the settings ask for (None for a time budget's open count or a random search)."""
        g = _int(self.settings.get("generations"))
        return g if g and self.algorithm != "random" else None

    @property
    def time_budget(self) -> float:
        """Seconds the search was given (0: a fixed number of fits)."""
        return _number(self.settings.get("time_budget")) or 0.0

    @property
    def n_mutations(self) -> int:
        """Mutants an exploration was asked for (0 for a search)."""
        return _int(self.settings.get("n_mutations")) or 0

    def neighbour_ratios(self, evaluations: pd.DataFrame) -> NeighbourRatios:
        """An exploration's (better fitted, simpler, both) fractions.

        The stored ones once it has ended; while it runs, computed from its ``evaluations`` rows
        (:meth:`RunStore.evaluations`) by :func:`~evocov_core.searches.explore.neighbour_ratios`.
        NaN when there is nothing to compare (no rows, no base).
        """
        nb = self.neighbours
        if nb is not None and None not in (nb.better_fitted, nb.simpler, nb.both):
            return NeighbourRatios(nb.better_fitted, nb.simpler, nb.both)  # type: ignore[arg-type]
        if nb is None or nb.base_q is None or self.base is None or not len(evaluations):
            return NeighbourRatios(math.nan, math.nan, math.nan)
        base = replace(self.base.to_fit(), q=nb.base_q, test_rmse=nb.base_test_rmse)
        return neighbour_ratios(base, _eval_records(evaluations.to_dict("records")))


def _eval_records(rows: Sequence[Mapping[str, Any]]) -> list[EvalRecord]:
    return [EvalRecord.from_row(r) for r in rows]

"""The mutation explorer (the paper's section 6.4.1, Figure 4 and Table 3).

Given a fitted kernel, make M random mutations (each passing the PSD and depth checks),
fit each starting from the parent's values, and compare every mutant with the
original: *better fitted* (lower test RMSE), *simpler* (fewer hyperparameters q),
*both*.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from evocov_core.fitting.fits import Executor
from evocov_core.fitting.metrics import FitData
from evocov_core.fitting.optimize import FitResult, FitStatus, Start
from evocov_core.language.grammar import get_grammar
from evocov_core.searches.common import EvalRecord, ProgressCallback, SearchResult, StopCheck, sub_rng
from evocov_core.searches.config import SearchConfig
from evocov_core.searches.tracker import Tracker
from evocov_core.searches.variation import mutate

__all__ = ["ExploreResult", "NeighbourRatios", "explore_mutations", "neighbour_ratios"]

#: The explorer fits every mutant once on all the data, with no clock and no model choice, whatever
#: the settings it is given say of a budgeted search: the paper's section 6.4.1 measures each mutant.
_PLAIN = dict(time_budget=0.0, cache_fits=False, screen_points=0, select_top=1)


@dataclass(frozen=True)
class ExploreResult:
    """Mutants of a base kernel and the Table 3 ratios.

    Attributes
    ----------
    base : FitResult
    search : SearchResult
        ``search.records`` holds one row per mutant.
    better_fitted, simpler, both : float
        Fractions of the mutants (failed fits count as not better).
    """

    base: FitResult
    search: SearchResult
    better_fitted: float
    simpler: float
    both: float


class NeighbourRatios(NamedTuple):
    """The paper's Table 3 for one base kernel: fractions of its mutants (NaN without any).

    Attributes
    ----------
    better_fitted : float
        Lower test RMSE than the base (a failed fit is not better).
    simpler : float
        Fewer hyperparameters q than the base.
    both : float
        Both at once.
    """

    better_fitted: float
    simpler: float
    both: float


def neighbour_ratios(base: FitResult, records: tuple[EvalRecord, ...] | list[EvalRecord]) -> NeighbourRatios:
    """Fractions of mutants with lower test RMSE, lower q, and both, than ``base``."""
    if not records:
        return NeighbourRatios(math.nan, math.nan, math.nan)
    ref = base.test_rmse if base.test_rmse is not None else math.inf
    better = [r.status == FitStatus.OK and r.test_rmse is not None and r.test_rmse < ref for r in records]
    simpler = [r.q < base.q for r in records]
    n = len(records)
    return NeighbourRatios(sum(better) / n, sum(simpler) / n,
                           sum(b and s for b, s in zip(better, simpler, strict=True)) / n)


def explore_mutations(base: FitResult, data: FitData, config: SearchConfig, executor: Executor, *,
                      n_mutations: int = 200, seed: int = 0, batch: int = 20,
                      progress: ProgressCallback | None = None, should_stop: StopCheck | None = None
                      ) -> ExploreResult:
    """Fit ``n_mutations`` mutants of ``base`` (batches of ``batch``; one report per batch)."""
    if not base.ok:
        raise ValueError(f"the base kernel has no fitted values ({base.reason})")
    if n_mutations < 1:
        raise ValueError("n_mutations must be at least 1")
    grammar = get_grammar(max(config.n_hyper, 1 + max((int(s[2:]) for s in base.kernel.slots), default=0)),
                          config.grammar.families)
    vcfg = config.variation
    rng = sub_rng(seed, 1)
    tr = Tracker("explore", -(-n_mutations // batch), progress, should_stop, seed, config=config.with_(**_PLAIN))
    done = 0
    while done < n_mutations and not tr.stop_requested():
        size = min(batch, n_mutations - done)
        children = [mutate(base.kernel, rng, vcfg, grammar, theta=base.theta, log_noise=base.log_noise)
                    for _ in range(size)]
        tr.evaluate(executor, [c.kernel for c in children], [Start(c.theta, c.log_noise) for c in children],
                    [c.origin for c in children])
        tr.end_generation()
        done += size
    result = tr.result({**config.to_dict(), "n_mutations": n_mutations, "base": base.kernel.prefix})
    b, s, both = neighbour_ratios(base, result.records)
    return ExploreResult(base, result, b, s, both)

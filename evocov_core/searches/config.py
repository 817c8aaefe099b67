"""Search settings: the groups a search reads, their composition, and their validation.

:class:`SearchConfig` composes the groups of settings, each declared by the layer that reads it
(:mod:`evocov_core.compute.settings` says what a setting is): the algorithm and its time budget, the
population and evolution, tree generation (:mod:`evocov_core.language.settings`), the hyperparameter fit
(:mod:`evocov_core.fitting.settings`), the budgeted search's screening and seeds, the grammar's options, the
model choice, and the forecast's members. One flat, frozen record serves every algorithm (it is what the
CLI parses, the dashboard edits and the run store saves); the groups are its sections in the dashboard
and in ``evocov search --help``. The presets are in :mod:`evocov_core.searches.presets`.

What ``population`` and ``generations`` mean depends on the algorithm, as in the paper's section 6.2:

=============  =========================================  =====================================
algorithm      ``population`` (N)                         ``generations`` (G)
=============  =========================================  =====================================
``evocov``     population size                            generations
``random``     kernels drawn (paper: 20000)               (unused)
``gwtf``       hill-climbing mutations per individual     initial individuals (paper: 13)
               (paper: 200)
``gpss``       (unused)                                   search depth (levels; GPSS: 10)
=============  =========================================  =====================================
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace

from evocov_core.compute.settings import Rule, Setting, SettingField, group_fields
from evocov_core.fitting.optimize import HyperSpace, OptimConfig
from evocov_core.fitting.priors import PRIORS
from evocov_core.fitting.settings import FittingSettings, PriorRule
from evocov_core.language.grammar import FAMILIES, Grammar, get_grammar
from evocov_core.language.psd import PSDConfig
from evocov_core.language.settings import GrammarSettings, TreeSettings
from evocov_core.searches.rules import CalibrationRule
from evocov_core.searches.settings import (
    ALGORITHM_LABELS,
    ALGORITHMS,
    AlgorithmSettings,
    BudgetSettings,
    ChoiceSettings,
    EvolutionSettings,
    ForecastSettings,
    ScreeningSettings,
)
from evocov_core.searches.variation import VariationConfig

__all__ = ["ALGORITHMS", "ALGORITHM_LABELS", "GROUPS", "AlgorithmSettings", "BudgetSettings", "ChoiceSettings",
           "ConfigError", "EvolutionSettings", "FittingSettings", "ForecastSettings", "GrammarSettings",
           "ScreeningSettings", "SearchConfig", "Setting", "SettingField", "TreeSettings", "current_settings",
           "settings", "with_derived"]

class ConfigError(ValueError):
    """An invalid setting; the message names it and the accepted range."""


#: The groups, in the order of the dashboard's sections and the command line's options.
_GROUPS = (AlgorithmSettings, BudgetSettings, EvolutionSettings, TreeSettings, FittingSettings, ScreeningSettings,
           GrammarSettings, ChoiceSettings, ForecastSettings)
#: Each group's key and title.
GROUPS = {g.KEY: g.TITLE for g in _GROUPS}


@dataclass(frozen=True)
class SearchConfig(*reversed(_GROUPS)):  # type: ignore[misc]
    """Settings of a kernel search (paper defaults; see the module docstring).

    Its fields are those of its groups, in the order of :data:`GROUPS` (dataclasses collect the fields of
    the bases from the last to the first, so the bases are listed in reverse).
    """

    def __post_init__(self) -> None:
        def need(cond: bool, msg: str) -> None:
            if not cond:
                raise ConfigError(msg)

        # Rules given as strings become their members; an unknown one is refused below by its choices.
        for name, rule in _RULES.items():
            v = getattr(self, name)
            if isinstance(v, str) and not isinstance(v, rule) and v in rule.values():
                object.__setattr__(self, name, rule(v))
        # Per setting, from its metadata: type, bounds, choices.
        for name, typ, meta in settings():
            v = getattr(self, name)
            if typ is bool:
                need(isinstance(v, bool), f"{name} must be true or false, got {v!r}")
            elif typ is int:
                need(isinstance(v, int) and not isinstance(v, bool), f"{name} must be a whole number, got {v!r}")
            elif typ is float:
                need(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
                     f"{name} must be a number, got {v!r}")
            elif typ is tuple:
                need(isinstance(v, tuple), f"{name} must be a tuple of names, got {v!r}")
            if meta.choices is not None:
                values = v if isinstance(v, tuple) else (v,)
                need(all(x in meta.choices for x in values),
                     f"{name} must be {'a subset' if isinstance(v, tuple) else 'one'} of {', '.join(meta.choices)},"
                     f" got {v!r}")
            if meta.lo is not None or meta.hi is not None:
                need((meta.lo is None or v >= meta.lo) and (meta.hi is None or v <= meta.hi),
                     f"{name} must be {meta.range_text}, got {v}")
        # One order whatever order they were named in: the table's.
        object.__setattr__(self, "families", tuple(f for f in FAMILIES if f in self.families))
        # Across settings, and bounds the metadata cannot say (open intervals, "0 or at least").
        need(self.population >= 2 or self.algorithm == "gpss",
             f"population (N) must be at least 2, got {self.population}")
        if self.algorithm == "evocov":
            need(self.mu < self.population,
                 f"mu must satisfy 1 <= mu < population (N = {self.population}), got mu = {self.mu}")
        need(abs(self.p_mutation + self.p_crossover - 1.0) < 1e-9,
             f"p_mutation + p_crossover must equal 1, got {self.p_mutation} + {self.p_crossover}")
        need(self.d_min <= self.d_max, f"need 0 <= d_min <= d_max, got d_min = {self.d_min}, d_max = {self.d_max}")
        need(0.0 < self.metric_split < 0.9, f"metric_split must be in (0, 0.9), got {self.metric_split}")
        need(bool(self.base_kernels), "base_kernels must not be empty")
        need(bool(self.seed_bases), "seed_bases must not be empty")
        need(self.screen_points == 0 or self.screen_points >= 20,
             f"screen_points must be 0 (off) or at least 20, got {self.screen_points}")
        need(self.fit_points == 0 or self.fit_points >= 100,
             f"fit_points must be 0 (every point) or at least 100, got {self.fit_points}")
        need(self.promote_fraction > 0.0, f"promote_fraction must be in (0, 1], got {self.promote_fraction}")
        need(self.priors != PriorRule.PANEL or PRIORS["panel"] is not None,
             "priors=panel takes the prior a panel learns from its own series: run the panel with panel priors "
             "(forecast_panel(..., panel_priors=True), evocov panel --panel-priors)")
        # The forecast's weights come from the kernel's refits at the origins that calibrate it.
        need(not self.combine or self.calibration == CalibrationRule.ORIGINS,
             f"combine ({', '.join(self.combine)}) reuses the refits of the interval calibration from the origins: "
             f"set calibration to origins (it is {self.calibration}) or combine to none")
        try:
            self.optim  # noqa: B018 - validates the optimiser settings
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    @property
    def optim(self) -> OptimConfig:
        return OptimConfig(metric=self.metric, method=self.method, n_restarts=self.n_restarts,
                           max_evals=self.max_evals, n_screen=self.n_screen, ref_fun_call=self.ref_fun_call,
                           sigma_theta=self.sigma_theta,
                           init=self.init, space=HyperSpace(), data_bounds=self.data_bounds,
                           prior=PRIORS[self.priors])

    @property
    def grammar(self) -> Grammar:
        """The grammar random trees and mutations draw from (expansions read ``families`` themselves)."""
        drawn = set(self.families) - ({"changepoint"} if self.changepoints_by_expansion else set())
        return get_grammar(self.n_hyper, drawn)

    @property
    def variation(self) -> VariationConfig:
        return VariationConfig(o_max=self.o_max, rho_max=self.rho_max, require_input=self.require_input,
                               psd=PSDConfig(w=self.psd_w))

    def to_dict(self) -> dict:
        """Plain values, as files and the run store keep them: rules as strings, tuples as lists."""
        d = asdict(self)
        for name, typ, _ in settings():
            if typ is tuple:
                d[name] = list(getattr(self, name))
            elif name in _RULES:
                d[name] = getattr(self, name).value
        return d

    @classmethod
    def from_dict(cls, d: dict) -> SearchConfig:
        """Build from a dict, written by this version or an earlier one (:func:`current_settings`); unknown
        keys are refused with a clear message."""
        d = current_settings(d)
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ConfigError(f"unknown setting(s): {', '.join(unknown)}")
        for name, typ, _ in settings():
            if typ is tuple and name in d:
                if not isinstance(d[name], (list, tuple)):
                    raise ConfigError(f"{name} must be a list, got {d[name]!r}")
                d[name] = tuple(d[name])
        return cls(**d)

    def with_(self, **changes: object) -> SearchConfig:
        return replace(self, **changes)  # type: ignore[arg-type]


def settings() -> tuple[SettingField, ...]:
    """Every :class:`SearchConfig` field as ``(name, type, Setting)``, in declaration order."""
    return _SETTINGS


#: The booleans that named the grammar's optional families before ``families``, one family each.
_FAMILY_FLAGS = {"changepoints": "changepoint", "changewindows": "changewindow", "statespace": "statespace"}


def current_settings(stored: Mapping[str, object]) -> dict[str, object]:
    """Settings as a stored run, a kernel file's run record or a JSON config wrote them, in today's names.

    Earlier versions named each optional family of the grammar by a boolean: ``changepoints``,
    ``changewindows``, ``statespace``. Each becomes ``families`` (a list, as :meth:`SearchConfig.to_dict`
    writes it): a true one adds its family (``changepoint``, ``changewindow``, ``statespace``), a false one
    leaves it out. Every other setting passes unchanged; so do settings without the booleans.

    Raises
    ------
    ConfigError
        One of the booleans is not true or false.
    """
    out = dict(stored)
    flags = {name: out.pop(name) for name in _FAMILY_FLAGS if name in out}
    if not flags:
        return out
    named = set(out.get("families") or ())  # type: ignore[call-overload]
    for name, on in flags.items():
        if not isinstance(on, bool):
            raise ConfigError(f"{name} must be true or false, got {on!r}")
        (named.add if on else named.discard)(_FAMILY_FLAGS[name])
    out["families"] = [f for f in FAMILIES if f in named] + sorted(str(f) for f in named if f not in FAMILIES)
    return out


def with_derived(overrides: Mapping[str, object]) -> dict[str, object]:
    """``overrides`` with the settings derived from another filled in.

    A setting whose metadata names ``derived_from`` is one minus that setting
    (``p_crossover = 1 − p_mutation``): given one of the two, the other follows. The one place
    this rule lives; the command line and the dashboard both pass their overrides through it.
    """
    out = dict(overrides)
    for name, _, meta in _SETTINGS:
        src = meta.derived_from
        if src is not None and src in out and name not in out:
            out[name] = 1.0 - float(out[src])  # type: ignore[arg-type]
        elif src is not None and name in out and src not in out:
            out[src] = 1.0 - float(out[name])  # type: ignore[arg-type]
    return out


_SETTINGS = group_fields(_GROUPS)
#: The settings that name a rule, and their enums.
_RULES: dict[str, type[Rule]] = {f.name: type(f.default) for f in fields(SearchConfig)
                                 if isinstance(f.default, Rule)}

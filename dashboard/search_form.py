"""The Search page's settings: one widget per :class:`SearchConfig` setting, built from its metadata.

Every setting's widget, label, help, bounds and the algorithms that use it come from
SearchConfig's field metadata (:func:`evocov_core.searches.config.settings`); the algorithm and
the preset have their own boxes. A setting derived from another (``p_crossover``) is not a
widget: :func:`evocov_core.searches.config.with_derived` fills it in.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st

from evocov_core.fitting.metrics import METRIC_LABELS
from evocov_core.searches import ALGORITHM_LABELS, ALGORITHMS, PRESETS, ConfigError, SearchConfig, preset
from evocov_core.searches.config import GROUPS, current_settings, settings, with_derived

CPUS = os.cpu_count() or 1
SETTINGS = {name: (typ, meta) for name, typ, meta in settings() if name != "algorithm"}
FIELDS = tuple(name for name, (_, meta) in SETTINGS.items() if meta.derived_from is None)
DERIVED = {meta.derived_from: name for name, (_, meta) in SETTINGS.items() if meta.derived_from}
FORMATS = {"metric": METRIC_LABELS.get}
SAVED = "search_saved_settings"  # survives page switches (widget keys do not)


def key(name: str) -> str:
    """The widget key of a setting."""
    return f"s_{name}"


def apply_preset() -> None:
    """Reset every setting to the chosen preset's value for the chosen algorithm."""
    plain = preset(st.session_state[key("preset")], st.session_state[key("algorithm")]).to_dict()
    for f in FIELDS:  # plain values (rules as strings, lists): what the widgets hold
        st.session_state[key(f)] = plain[f]


#: ``() -> (settings, seed)`` of the search a page watches, or None: called only when needed.
RunSettings = Callable[[], tuple[Mapping[str, Any], int | None] | None]


def restore_settings(watched: RunSettings | None = None) -> None:
    """Restore the settings after a page switch; in a new session (a reload) watching a search,
    show that search's settings (``watched``); else start from the quick EvoCov preset."""
    if key("algorithm") in st.session_state:
        return
    saved = st.session_state.get(SAVED)
    if saved:
        for k, v in saved.items():
            st.session_state[k] = v
        return
    found = watched() if watched is not None else None
    if found is not None and found[0].get("algorithm") in ALGORITHMS:
        _settings_of_run(*found)
        return
    st.session_state[key("algorithm")] = "evocov"
    st.session_state[key("preset")] = "quick"
    st.session_state[key("seed")] = 0
    st.session_state[key("workers")] = CPUS
    apply_preset()


def _settings_of_run(settings: Mapping[str, Any], seed: int | None) -> None:
    """The widgets set to a recorded run's settings, under the preset they differ least from (the
    run records its settings, not the preset it started from, and may name them as an earlier version did)."""
    settings = current_settings(settings)
    algo = str(settings["algorithm"])

    def differences(name: str) -> int:
        cfg = preset(name, algo).to_dict()
        return sum(cfg[f] != settings.get(f, cfg[f]) for f in FIELDS)

    name = min(PRESETS, key=differences)
    st.session_state[key("algorithm")] = algo
    st.session_state[key("preset")] = name
    st.session_state[key("seed")] = int(seed or 0)
    st.session_state[key("workers")] = CPUS
    base = preset(name, algo).to_dict()
    for f in FIELDS:
        v = settings.get(f, base[f])
        st.session_state[key(f)] = list(v) if SETTINGS[f][0] is tuple else v


def setting_widget(name: str, algo: str, where: Any) -> None:
    """The widget of one setting, from its metadata; disabled where the algorithm ignores it."""
    typ, meta = SETTINGS[name]
    used = algo in meta.used_by
    label = meta.label_for(algo) + ("" if used else " (unused)")
    help_ = meta.help + ("" if used else f" Not used by {ALGORITHM_LABELS[algo]}.")
    k = key(name)
    if typ is bool:
        where.checkbox(label, key=k, disabled=not used, help=help_)
    elif typ is tuple:
        where.multiselect(label, list(meta.choices or ()), key=k, disabled=not used, help=help_)
    elif meta.choices is not None:
        where.selectbox(label, meta.choices, key=k, disabled=not used, help=help_, format_func=FORMATS.get(name, str))
    else:
        num = typ if typ is int else float
        where.number_input(
            label,
            min_value=None if meta.lo is None else num(meta.lo),
            max_value=None if meta.hi is None else num(meta.hi),
            step=num(meta.step or 1),
            format=meta.fmt,
            key=k,
            disabled=not used,
            help=help_,
        )
    if name in DERIVED:
        other = SETTINGS[DERIVED[name]][1]
        where.caption(f"{other.label} = 1 − {meta.label.split()[-1]} = {1.0 - float(st.session_state[k]):.2f}")


def algorithm_and_preset() -> str:
    """The algorithm and preset boxes; returns the algorithm."""
    c1, c2 = st.columns(2)
    algo = c1.selectbox(
        "Algorithm",
        ALGORITHMS,
        key=key("algorithm"),
        format_func=ALGORITHM_LABELS.get,
        on_change=apply_preset,
        help="EvoCov: the genetic algorithm of the paper. Random Search: N random kernels. "
        "Go With The First: hill climbing from G random kernels. GPSS baseline: the greedy "
        "compositional search of Duvenaud et al. (2013).",
    )
    c2.selectbox(
        "Preset",
        list(PRESETS),
        key=key("preset"),
        on_change=apply_preset,
        help="quick: a 60 s time budget. standard: 5 minutes. In both, only EvoCov's GPSS expansions make "
        "change points (drawn anywhere, a search fits the training range piecewise and forecasts worse). "
        "paper: the paper's section 6.2 settings (no time limit; hours). "
        "quick-fixed: the former quick preset, a fixed number of fits. "
        "Choosing a preset resets every setting below.",
    )
    return algo


def setting_groups(algo: str) -> None:
    """The budget settings, then one expander per group of settings, then seed and workers."""
    for name in (n for n in FIELDS if SETTINGS[n][1].group == "budget"):
        setting_widget(name, algo, st)
    for group, title in GROUPS.items():
        names = [n for n in FIELDS if SETTINGS[n][1].group == group]
        if group in ("algorithm", "budget") or not names:
            continue
        with st.expander(title, expanded=group == "evolution"):
            cols = st.columns(2)
            for i, name in enumerate(names):
                setting_widget(name, algo, cols[i % 2])
    with st.expander("Run", expanded=True):
        a, b = st.columns(2)
        a.number_input("Seed", min_value=0, max_value=2**31 - 1, step=1, key=key("seed"),
                       help="Same seed, same settings, same data: same run.")
        b.number_input("Worker processes", min_value=1, max_value=max(CPUS, 1) * 4, step=1, key=key("workers"),
                       help=f"Kernel fits run in parallel worker processes ({CPUS} cores here). 1 runs serially.")


def fit_points() -> int:
    """The training points an exact fit uses in the next search (``SearchConfig.fit_points``): the Search
    page's setting once the user has seen it, else the quick preset's."""
    for where in (st.session_state, st.session_state.get(SAVED) or {}):
        v = where.get(key("fit_points"))
        if v is not None:
            return int(v)
    return int(preset("quick").fit_points)


def fit_points_label() -> str:
    """Where the setting is: ``Search → Budgeted search: … → Points an exact fit uses``."""
    meta = SETTINGS["fit_points"][1]
    return f"Search → {GROUPS[meta.group]} → {meta.label}"


def save_settings() -> None:
    """Keep every setting in the session so a page switch does not reset them."""
    st.session_state[SAVED] = {
        k: st.session_state[k]
        for k in [key("algorithm"), key("preset"), key("seed"), key("workers"), *map(key, FIELDS)]
        if k in st.session_state
    }


def config_from_widgets(algo: str) -> SearchConfig:
    """The settings as a SearchConfig, on top of the preset (settings the page does not show keep the
    preset's values); raises :class:`ConfigError` when they are not valid."""
    values: dict[str, Any] = {f: st.session_state.get(key(f)) for f in FIELDS}
    cast = {int: int, float: float, tuple: lambda v: tuple(v or ())}
    for f in FIELDS:
        typ = SETTINGS[f][0]
        if typ in cast and values[f] is not None:
            values[f] = cast[typ](values[f])
    for src in DERIVED:  # number inputs carry float noise: 0.4 must stay 0.4
        values[src] = round(float(values[src]), 6)
    return preset(st.session_state[key("preset")], algo, **with_derived(values))


def settings_form(watched: RunSettings | None = None) -> tuple[SearchConfig | None, int, int]:
    """Every widget of the form; returns ``(config or None when invalid, seed, workers)``.
    ``watched``: the watched search's settings, shown when the session has none yet."""
    restore_settings(watched)
    algo = algorithm_and_preset()
    setting_groups(algo)
    save_settings()
    config = None
    try:
        config = config_from_widgets(algo)
    except ConfigError as exc:
        st.error(f"**Invalid settings:** {exc}", icon=":material/block:")
    return config, int(st.session_state[key("seed")]), int(st.session_state[key("workers")])

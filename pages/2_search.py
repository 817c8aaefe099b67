"""Search page: settings of a kernel search, Start/Stop, and the live view of the run."""

from __future__ import annotations

import os
import time

import pandas as pd
import streamlit as st

from dashboard.common import (
    MY_RUNS_KEY,
    PAGE_RESULTS,
    RESULTS_RUN_KEY,
    SEARCH_JOB_KEY,
    algorithm_label,
    current_dataset,
    dataset_summary,
    fit_from_doc,
    fmt,
    get_run,
    manager,
    page_setup,
    polish,
    poll_every,
    remember_run,
    scrollable_formulas,
    status_badge,
    store,
    watched_job,
)
from evocov_core.benchmarks.budget import estimate_wall_time
from evocov_core.figures import fitness_figure
from evocov_core.jobs import JobSpec
from evocov_core.metrics import METRIC_LABELS
from evocov_core.search import ALGORITHM_LABELS, ALGORITHMS, PRESETS, ConfigError, RunStatus, SearchConfig, preset
from evocov_core.search.config import GROUPS, settings

page_setup("Search")
st.title("Search")
ds = current_dataset()
st.caption(
    f"Evolve a kernel for **{ds.name}** ({dataset_summary(ds)}). Candidates are scored by BIC on the "
    "training part; the test part is only used to report extrapolation error."
)

CPUS = os.cpu_count() or 1
# Every setting's widget, label, help, bounds and the algorithms that use it come from
# SearchConfig's field metadata (evocov_core/search/config.py); the algorithm has its own box.
SETTINGS = {name: (typ, meta) for name, typ, meta in settings() if name != "algorithm"}
FIELDS = tuple(name for name, (_, meta) in SETTINGS.items() if meta.derived_from is None)
DERIVED = {meta.derived_from: name for name, (_, meta) in SETTINGS.items() if meta.derived_from}
FORMATS = {"metric": METRIC_LABELS.get}
SAVED = "search_saved_settings"  # survives page switches (widget keys do not)


def _k(name: str) -> str:
    return f"s_{name}"


def _apply_preset() -> None:
    algo = st.session_state[_k("algorithm")]
    cfg = preset(st.session_state[_k("preset")], algo)
    for f in FIELDS:
        v = getattr(cfg, f)
        st.session_state[_k(f)] = list(v) if SETTINGS[f][0] is tuple else v


# Restore the settings after a page switch, or start from the quick EvoCov preset.
saved = st.session_state.get(SAVED)
if _k("algorithm") not in st.session_state:
    if saved:
        for k, v in saved.items():
            st.session_state[k] = v
    else:
        st.session_state[_k("algorithm")] = "evocov"
        st.session_state[_k("preset")] = "quick"
        st.session_state[_k("seed")] = 0
        st.session_state[_k("workers")] = CPUS
        _apply_preset()

# --- the job this session watches ---------------------------------------------------------------
job_id, job, job_active = watched_job("job", SEARCH_JOB_KEY)

settings_col, run_col = st.columns([2, 3], gap="large")

# --- settings -----------------------------------------------------------------------------------
with settings_col:
    st.subheader("Settings")
    c1, c2 = st.columns(2)
    algo = c1.selectbox(
        "Algorithm",
        ALGORITHMS,
        key=_k("algorithm"),
        format_func=ALGORITHM_LABELS.get,
        on_change=_apply_preset,
        help="EvoCov: the genetic algorithm of the paper. Random Search: N random kernels. "
        "Go With The First: hill climbing from G random kernels. GPSS baseline: the greedy "
        "compositional search of Duvenaud et al. (2013).",
    )
    c2.selectbox(
        "Preset",
        list(PRESETS),
        key=_k("preset"),
        on_change=_apply_preset,
        help="quick: a 60 s time budget. standard: 5 minutes; in EvoCov only the GPSS expansions make "
        "change points (drawn anywhere, a 5-minute search fits the training range piecewise and forecasts "
        "worse). "
        "paper: the paper's section 6.2 settings (no time limit; hours). "
        "quick-fixed: the former quick preset, a fixed number of fits. "
        "Choosing a preset resets every setting below.",
    )

    def widget(name: str, where) -> None:
        """The widget of one setting, from its metadata; disabled where the algorithm ignores it."""
        typ, meta = SETTINGS[name]
        used = algo in meta.used_by
        label = meta.label_for(algo) + ("" if used else " (unused)")
        help_ = meta.help + ("" if used else f" Not used by {ALGORITHM_LABELS[algo]}.")
        key = _k(name)
        if typ is bool:
            where.checkbox(label, key=key, disabled=not used, help=help_)
        elif typ is tuple:
            where.multiselect(label, list(meta.choices or ()), key=key, disabled=not used, help=help_)
        elif meta.choices is not None:
            where.selectbox(label, meta.choices, key=key, disabled=not used, help=help_,
                            format_func=FORMATS.get(name, str))
        else:
            num = typ if typ is int else float
            where.number_input(
                label,
                min_value=None if meta.lo is None else num(meta.lo),
                max_value=None if meta.hi is None else num(meta.hi),
                step=num(meta.step or 1),
                format=meta.fmt,
                key=key,
                disabled=not used,
                help=help_,
            )
        if name in DERIVED:
            other = SETTINGS[DERIVED[name]][1]
            where.caption(f"{other.label} = 1 − {meta.label.split()[-1]} = {1.0 - float(st.session_state[key]):.2f}")

    for name in (n for n in FIELDS if SETTINGS[n][1].group == "budget"):
        widget(name, st)
    for group, title in GROUPS.items():
        names = [n for n in FIELDS if SETTINGS[n][1].group == group]
        if group in ("algorithm", "budget") or not names:
            continue
        with st.expander(title, expanded=group == "evolution"):
            cols = st.columns(2)
            for i, name in enumerate(names):
                widget(name, cols[i % 2])
    with st.expander("Run", expanded=True):
        a, b = st.columns(2)
        a.number_input(
            "Seed",
            min_value=0,
            max_value=2**31 - 1,
            step=1,
            key=_k("seed"),
            help="Same seed, same settings, same data: same run.",
        )
        b.number_input(
            "Worker processes",
            min_value=1,
            max_value=max(CPUS, 1) * 4,
            step=1,
            key=_k("workers"),
            help=f"Kernel fits run in parallel worker processes ({CPUS} cores here). 1 runs serially.",
        )

    # Save every setting so a page switch does not reset them.
    st.session_state[SAVED] = {
        k: st.session_state[k]
        for k in [_k("algorithm"), _k("preset"), _k("seed"), _k("workers"), *map(_k, FIELDS)]
        if k in st.session_state
    }

    config: SearchConfig | None = None
    values = {f: st.session_state.get(_k(f)) for f in FIELDS}
    cast = {int: int, float: float, tuple: lambda v: tuple(v or ())}
    for f in FIELDS:
        typ = SETTINGS[f][0]
        if typ in cast and values[f] is not None:
            values[f] = cast[typ](values[f])
    values["p_mutation"] = round(float(values["p_mutation"]), 6)
    values["p_crossover"] = round(1.0 - values["p_mutation"], 6)
    try:
        # On top of the preset, so settings this page does not show keep the preset's values.
        config = preset(st.session_state[_k("preset")], algo, **values)
    except ConfigError as exc:
        st.error(f"**Invalid settings:** {exc}", icon=":material/block:")

    if config is not None and config.time_budget <= 0:
        # A fixed count of fits can take hours on long series: say so before the user starts.
        est = estimate_wall_time(config, ds.n_train, int(st.session_state[_k("workers")]), CPUS)
        with st.container(key="search_estimate"):
            st.caption(
                f":material/schedule: **Estimated time: {est.text}** ({est.fits} kernel fits; "
                "longer if other searches run on this server)."
            )

    start_help = None
    if config is None:
        start_help = "Fix the settings first."
    elif job_active:
        start_help = "This page is watching a running search: stop it first (or open a new browser tab)."
    if st.button(
        "Start search",
        type="primary",
        key="search_start",
        disabled=start_help is not None,
        help=start_help,
        width="stretch",
    ):
        assert config is not None
        seed = int(st.session_state[_k("seed")])
        spec = JobSpec(
            kind="search",
            dataset=ds,
            config=config,
            seed=seed,
            workers=int(st.session_state[_k("workers")]),
            label=f"{ALGORITHM_LABELS[algo]} · {ds.name} · seed {seed}",
        )
        new_id = manager().submit(spec)
        st.session_state[SEARCH_JOB_KEY] = new_id
        remember_run(new_id)
        st.query_params["job"] = new_id
        st.rerun()

# --- the run --------------------------------------------------------------------------------------


def _history_from_store(run_id: str) -> pd.DataFrame:
    return store().history(run_id)


def _render_run(run_id: str) -> None:
    job = manager().get(run_id)
    if job is not None:
        snap = job.snapshot()
        status, gen, total = snap.status, snap.generation, snap.total_generations
        elapsed, n_eval, eps = snap.elapsed, snap.n_evaluations, snap.evals_per_second
        restarts, best, error, algo_ = snap.restarts, snap.best, snap.error, snap.algorithm
        label = snap.label
        history = snap.history
        budget = float(job.spec.config.time_budget)
    else:
        run = get_run(run_id)
        if run is None:
            st.warning(f"No run with id `{run_id}` in the store (deleted?).")
            return
        status, gen = RunStatus(run["status"]), int(run.get("generations_done") or 0)
        total = int(run["settings"].get("generations") or gen) if run["algorithm"] != "random" else gen
        elapsed, n_eval = float(run.get("elapsed") or 0.0), int(run.get("n_evaluations") or 0)
        restarts, error, algo_, label = 0, run.get("error") or "", run["algorithm"], run.get("label") or ""
        budget = float(run["settings"].get("time_budget") or 0.0)
        best = fit_from_doc(run["best"]) if run.get("best") else None
        history = _history_from_store(run_id)
        if len(history):
            # A failed or interrupted run is closed with zero counters: count from its generations.
            n_eval = n_eval or int(history["n_evaluated"].sum())
            elapsed = elapsed or float(history["elapsed"].max())
            restarts = int(history["restarted"].sum())
        eps = n_eval / elapsed if elapsed > 0 else 0.0
        if status.active:
            status = RunStatus.INTERRUPTED  # not in this server: its process is gone

    with st.container(key="search_status"):
        st.markdown(f"**Run `{run_id}`** · {status_badge(status)} · {label or algorithm_label(algo_)}")
        if status == RunStatus.QUEUED:
            pos = job.snapshot().queue_position if job is not None else 0
            mc = manager().max_concurrent
            st.info(
                f"Waiting: {pos} run{'s' if pos != 1 else ''} ahead of you; the server runs {mc} "
                f"search{'es' if mc != 1 else ''} at once. Yours starts by itself when a slot frees up.",
                icon=":material/hourglass_top:",
            )
        if budget > 0:
            done = not status.active
            frac = 1.0 if done else min(elapsed / budget, 1.0)
            left = max(0.0, budget - elapsed)
            text = f"Generation {gen} · {'finished' if done else f'{left:.0f} s left of {budget:.0f} s'}"
        else:
            frac = min(gen / total, 1.0) if total else 0.0
            text = (
                f"Generation {gen} / {total}"
                if total
                else ("Starting worker processes…" if status == RunStatus.RUNNING else f"Generation {gen}")
            )
        st.progress(frac, text=text)
        m1, m2, m3, m4 = st.columns(4)
        m1.metric("Elapsed", time.strftime("%H:%M:%S", time.gmtime(elapsed)))
        m2.metric("Kernels fitted", n_eval)
        m3.metric("Fits per second", f"{eps:.1f}")
        m4.metric("Restarts", restarts)
        if status == RunStatus.FAILED and error:
            st.error(f"The run failed: {error.splitlines()[0]}")
            with st.expander("Details"):
                st.code(error, language=None)
        elif status == RunStatus.INTERRUPTED:
            st.warning("This run was interrupted (the server stopped while it ran). What it had found is kept.")

    return status, history, best


def _fitness_chart(history) -> None:
    fig = polish(fitness_figure(history))
    fig.update_layout(uirevision="fitness")  # keep the user's zoom across live updates
    n_gen = len(history)
    if n_gen <= 30:
        fig.update_xaxes(dtick=1 if n_gen <= 15 else 2)
    st.plotly_chart(fig, key="search_fitness", config={"displaylogo": False})


def _best_panel(best) -> None:
    st.markdown("**Best kernel so far**" if job_active else "**Best kernel**")
    if best is None:
        st.caption("No kernel fitted yet.")
        return
    scrollable_formulas()  # live: the tree as evolved (simplifying on every new best would stall the updates)
    st.latex(f"k(x, x') = {best.kernel.latex}")
    st.code(best.kernel.infix, language=None, wrap_lines=True)
    c1, c2, c3 = st.columns(3)
    c1.metric("q", best.q, help="Hyperparameters, noise included.")
    c2.metric("BIC", fmt(best.bic, ".2f"))
    c3.metric("Test RMSE", fmt(best.test_rmse), help=f"On the test part, in {ds.y_label} units.")


with run_col:
    st.subheader("Run")
    if not job_id:
        st.info(
            "No search yet in this session. Choose the settings and press **Start search**. "
            "The run continues on the server if you leave this page or reload the tab.",
            icon=":material/genetics:",
        )
        mine = st.session_state.get(MY_RUNS_KEY, [])
        if mine:
            st.caption(f"Runs started in this session: {', '.join(mine)}")
    else:
        paused = st.toggle(
            "Pause live updates",
            key="search_pause",
            help="Stop redrawing the charts so you can zoom and hover; progress keeps updating.",
        )

        @st.fragment(run_every=poll_every(job_active))
        def live_status() -> None:
            out = _render_run(job_id)
            if out is None:
                return
            best = out[2]
            j = manager().get(job_id)
            if j is not None and not j.snapshot().done:
                st.button(
                    "Stop",
                    key="search_stop",
                    icon=":material/stop_circle:",
                    on_click=manager().cancel,
                    args=(job_id,),
                    help="Stops after the kernel fits in progress; the best kernel so far is kept.",
                )
            elif job_active:
                st.rerun()  # it just finished: redraw the page without polling
            if paused and job_active:
                _best_panel(best)

        live_status()

        # The way on comes before the charts, which take a while to draw for a long run.
        if not job_active:
            run = get_run(job_id)
            c1, c2, _ = st.columns([1, 1, 2])
            if (
                run is not None
                and run.get("best")
                and c1.button(
                    "Open in Results", type="primary", key="search_open_results", icon=":material/emoji_events:"
                )
            ):
                st.session_state[RESULTS_RUN_KEY] = job_id
                st.switch_page(PAGE_RESULTS, query_params={"run": job_id})
            if c2.button("New search", key="search_new", help="Stop watching this run and set up another."):
                st.session_state.pop(SEARCH_JOB_KEY, None)
                st.query_params.pop("job", None)
                st.rerun()

        @st.fragment(run_every=poll_every(job_active and not paused))
        def live_charts() -> None:
            j = manager().get(job_id)
            if j is not None:
                snap = j.snapshot()
                history, best = snap.history, snap.best
            else:
                history = _history_from_store(job_id)
                run = get_run(job_id)
                best = fit_from_doc(run["best"]) if run and run.get("best") else None
            if len(history):
                _fitness_chart(history)
            else:
                st.caption("The fitness curve appears after the first generation.")
            if not (paused and job_active):
                _best_panel(best)

        if paused:
            st.caption(":material/pause: Live chart updates are paused.")
        live_charts()


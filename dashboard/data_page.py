"""The Data page: pick a bundled series or upload a CSV, choose the columns and the train/test split."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from dashboard import datasets
from dashboard.covariates import covariate_options, data_effect
from dashboard.datasets import (
    ROW_NUMBER,
    current_dataset,
    dataset_fingerprint,
    dataset_source,
    dataset_summary,
    load_bundled_dataset,
    read_upload,
    set_dataset,
    subset_note,
    upload_to_dataset,
    with_test_fraction,
)
from dashboard.format import polish
from dashboard.long_table import long_table_hint, long_table_tab
from dashboard.search_form import fit_points, fit_points_label
from dashboard.state import DATASET_KEY, PAGE_SEARCH
from evocov_core.data import (
    MAX_COLUMNS,
    MAX_FIELD_CHARS,
    MAX_POINTS,
    MAX_ROWS,
    DataError,
    Dataset,
    date_columns,
    guess_columns,
    numeric_columns,
)
from evocov_core.present.figures import drawn_note, minmax_indices, series_figure

FLASH = "data_flash"  # (kind, message) shown once under the tabs


def _test_fraction(ds: Dataset) -> float:
    return float(st.session_state.get("data_test_fraction", ds.test_fraction))


def _load_bundled() -> None:
    name = st.session_state["data_bundled"]
    try:
        set_dataset(load_bundled_dataset(name, _test_fraction(current_dataset())), {"kind": "bundled", "name": name})
        st.session_state[FLASH] = ("success", f"Loaded the bundled dataset **{name}**.")
    except DataError as exc:
        st.session_state[FLASH] = ("error", f"Could not load {name}: {exc}")


def _apply_fraction() -> None:
    f = float(st.session_state["data_test_fraction"])
    try:
        st.session_state[DATASET_KEY] = with_test_fraction(current_dataset(), f)
    except DataError as exc:
        st.session_state[FLASH] = ("error", f"Cannot use test fraction {f:.2f}: {exc}. The split is unchanged.")
        st.session_state["data_test_fraction"] = current_dataset().test_fraction


def bundled_tab(source: dict) -> None:
    """Choose one of the series shipped with EvoCov; selecting one loads it."""
    by_name = {e["name"]: e for e in datasets.catalog()}
    if "data_bundled" not in st.session_state:
        st.session_state["data_bundled"] = source["name"] if source["kind"] == "bundled" else next(iter(by_name))
    st.selectbox(
        "Dataset",
        list(by_name),
        key="data_bundled",
        on_change=_load_bundled,
        format_func=lambda n: f"{n} — {by_name[n]['title']}",
        help="Series shipped with EvoCov (see data/README.md). Selecting one loads it.",
    )
    entry = by_name[st.session_state["data_bundled"]]
    c1, c2 = st.columns([2, 1])
    with c1:
        st.markdown(f"**{entry['title']}**")
        st.markdown(f"**Source:** {entry['source']}")
        st.markdown(f"**Licence:** {entry['licence']}")
    with c2:
        st.markdown(f"**Points:** {entry['n']} ({entry.get('frequency', '')})")
        st.markdown(f"**Span:** {entry.get('first', '?')} → {entry.get('last', '?')}")
        st.markdown(f"**Units:** {entry.get('units', '')}")
    if not (source["kind"] == "bundled" and source["name"] == entry["name"]):
        st.button(f"Use {entry['name']}", type="primary", key="data_use_bundled", on_click=_load_bundled)


def upload_tab(ds: Dataset) -> None:
    """Upload a table, pick its columns and options; offer the dataset once it validates."""
    limit_mb = max(1, datasets.max_upload_bytes() // (1024 * 1024))
    st.markdown(
        "Upload a table with one row per observation: a column of numbers to model (y) and, "
        "optionally, a column of x values (numbers or dates). Comma, semicolon or tab separated."
    )
    up = st.file_uploader(
        f"CSV file (up to {limit_mb} MB)",
        type=["csv", "txt", "tsv"],
        key="data_upload",
        # The reader's limit, whatever server.maxUploadSize a command line sets: the widget refuses what it would.
        max_upload_size=limit_mb,
        help="The file stays in this browser session; nothing is written to disk. Limits: "
        f"{limit_mb} MB, {MAX_ROWS:,} rows, {MAX_COLUMNS:,} columns, {MAX_FIELD_CHARS:,} characters a field.",
    )
    if up is None:
        return
    try:
        df = read_upload(up.getvalue())
    except DataError as exc:
        st.error(f"**Cannot read {up.name}:** {exc}. The current dataset ({ds.name}) is unchanged.",
                 icon=":material/block:")
        return
    nums, dates = numeric_columns(df), date_columns(df)
    if not nums:
        st.error(
            f"**Cannot use {up.name}:** no numeric column to model; the file needs at least one "
            f"column of numbers (columns: {', '.join(map(str, df.columns))}). "
            f"The current dataset ({ds.name}) is unchanged.",
            icon=":material/block:",
        )
        return
    hint = long_table_hint(df)
    if hint:
        st.info(hint, icon=":material/stacked_line_chart:")
    try:
        gx, gy = guess_columns(df)
    except DataError as exc:  # the last column is text: say so, never substitute silently
        st.warning(f"**{up.name}:** {exc}", icon=":material/warning:")
        gx, gy = guess_columns(df[[c for c in df.columns if c in nums or c in dates]])
    with st.expander(f"Preview of {up.name} ({len(df)} rows, {df.shape[1]} columns)"):
        st.dataframe(df.head(20), hide_index=True)
    fid = getattr(up, "file_id", up.name)
    x_opts = [ROW_NUMBER, *dates, *[c for c in nums if c not in dates]]
    x_opts += [c for c in df.columns if c not in x_opts]
    c1, c2, c3 = st.columns(3)
    x_col = c1.selectbox("x column", x_opts, index=x_opts.index(gx) if gx in x_opts else 0, key=f"data_x_{fid}",
                         help="Numbers, dates (become decimal years) or the row number.")
    y_col = c2.selectbox("y column (to model)", nums, index=nums.index(gy), key=f"data_y_{fid}")
    name = c3.text_input("Name", value=Path(up.name).stem[:40] or "upload", key=f"data_name_{fid}")
    covariates = covariates_box(df, None if x_col == ROW_NUMBER else x_col, y_col, fid)
    o1, o2, o3 = st.columns(3)
    drop = o1.checkbox("Keep missing values", key="data_drop_missing",
                       help="A row whose value is empty, not a number or infinite is a point not observed: the "
                       "search, the forecast and the classical forecasters (on a copy with the gaps filled by "
                       "straight lines) use the other points at their own x. Unticked, such a file is refused. "
                       "A row whose x cannot be read is left out (a note says so).")
    max_points = o2.number_input("Maximum points", min_value=10, max_value=MAX_POINTS, value=MAX_POINTS, step=1000,
                                 key="data_max_points",
                                 help="More rows are refused, or thinned with the box on the right. Fits never "
                                 "use more training points than the search setting *Points an exact fit uses* "
                                 f"({fit_points():,} now): above it they use a subset of the data, so long series "
                                 "need no thinning; reading, drawing and forecasting every point still grow with n.")
    sub = o3.checkbox("Subsample to the maximum", key="data_subsample",
                      help="Keep evenly spaced points (both parts thinned alike), at the price of the detail "
                      "between kept points.")
    try:
        new = upload_to_dataset(up.getvalue(), name=name or "upload", x=x_col, y=y_col, guess=False,
                                test_fraction=_test_fraction(ds), max_points=int(max_points), subsample=sub,
                                drop_missing=drop, frame=df, covariates=covariates)
    except DataError as exc:
        st.error(f"**Cannot use these data:** {exc}. The current dataset ({ds.name}) is unchanged.",
                 icon=":material/block:")
        return
    for note in new.notes:
        st.info(f"Note: {note}.", icon=":material/info:")
    long_series_note(new)
    in_use = new.name == ds.name and dataset_fingerprint(new) == dataset_fingerprint(ds)
    if in_use:
        st.success(f"**{new.name}** is the current dataset.", icon=":material/check_circle:")
    else:
        st.success(f"Ready: **{new.name}** — {dataset_summary(new)}.", icon=":material/check_circle:")
    if not in_use and st.button("Use this dataset", type="primary", key="data_use_upload"):
        set_dataset(new, {"kind": "upload", "name": new.name, "file": up.name})
        st.session_state[FLASH] = ("success", f"Now using the uploaded dataset **{new.name}**.")
        st.rerun()


def covariates_box(df: pd.DataFrame, x: str | None, y: str, fid: str) -> list[str]:
    """The multiselect of covariates known in advance: the file's other columns of numbers."""
    options = covariate_options(df, x, y)
    key = f"data_cov_{fid}"
    if key in st.session_state:  # a column just chosen as x or y is no longer a covariate
        st.session_state[key] = [c for c in st.session_state[key] if c in options]
    return st.multiselect(
        "Covariates (known in advance)", options, key=key, disabled=not options,
        placeholder="Choose columns" if options else "No other column of numbers",
        help="Columns whose future values you will know when you forecast: a temperature forecast, a price, "
        "a holiday flag. The search estimates their linear effect beside trend and season, keeps them when they "
        "lower the BIC, and searches the kernel on what they leave. A forecast past the data then needs their "
        "values at every time it is for (a second CSV on the Results page). A row missing one is a row "
        "missing its value.")


def covariates_note(ds: Dataset) -> None:
    """The current dataset's covariates: their effect as the search will estimate it."""
    effect = data_effect(ds)
    if effect is not None:
        st.info(f"**Covariates known in advance:** {effect.reason}. A forecast past the data needs their future "
                "values (a second CSV on the Results page).", icon=":material/tune:")


def long_series_note(ds: Dataset) -> None:
    """On a long series: fits use a subset of the data, and which setting says how many."""
    note = subset_note(ds, fit_points())
    if note:
        st.info(f"{note} Set how many with **{fit_points_label()}**.", icon=":material/data_thresholding:")


def current_section() -> None:
    """The current dataset: the split (refused when no search should learn from it), counts and the series."""
    ds = current_dataset()
    flash = st.session_state.pop(FLASH, None)
    if flash:
        getattr(st, flash[0])(flash[1])
    st.divider()
    st.subheader(f"Current dataset: {ds.name}")
    if "data_test_fraction" not in st.session_state:
        st.session_state["data_test_fraction"] = float(ds.test_fraction)
    c1, c2, c3, c4 = st.columns([2, 1, 1, 1])
    c1.slider(
        "Test fraction",
        min_value=0.0,
        max_value=0.5,
        step=0.01,
        key="data_test_fraction",
        on_change=_apply_fraction,
        help="The test part is every point whose x lies in the last fraction of the x-range "
        "(the TSDL benchmark uses 0.1). Searches never see it; it scores extrapolation. "
        "Below 0.5, and leaving at least 10 training points.",
    )
    c2.metric("Points", ds.n)
    c3.metric("Training", ds.n_train)
    c4.metric("Test", ds.n_test)
    for note in ds.notes:
        st.info(f"Note: {note}.", icon=":material/info:")
    covariates_note(ds)
    if ds.n_test == 0:
        st.warning("The test fraction is 0: there are no test points, so no test RMSE can be computed.")
    long_series_note(ds)
    st.plotly_chart(
        polish(series_figure(ds, title=f"{ds.name}: training part and test part (after the dashed line)")),
        key="data_series",
        config={"displaylogo": False},
    )
    drawn = sum(len(minmax_indices(ds.y[part])) for part in (ds.train, ~ds.train) if part.any())
    st.caption(
        f"x: {ds.x_label} ({'dates, as decimal years' if ds.x_kind == 'date' else 'numbers'}) · "
        f"y: {ds.y_label}" + (f" · covariates: {', '.join(ds.covariates)}." if ds.covariates else ".")
        + (f" Chart {drawn_note(drawn, ds.n)}." if drawn < ds.n else "")
        + " Next: start a kernel search on the **Search** page."
    )
    st.page_link(PAGE_SEARCH, label="Go to Search", icon=":material/genetics:")


def render() -> None:
    """The whole page."""
    st.title("Data")
    st.caption(
        "Choose the time series to model. Every other page works on the dataset selected here: "
        "searches learn from the training part and are judged on the test part (the last stretch of x)."
    )
    ds, source = current_dataset(), dataset_source()
    tab_bundled, tab_upload, tab_panel = st.tabs([":material/library_books: Bundled datasets",
                                                  ":material/upload: Upload a CSV",
                                                  ":material/stacked_line_chart: Many series (long table)"])
    with tab_bundled:
        bundled_tab(source)
    with tab_upload:
        upload_tab(ds)
    with tab_panel:
        long_table_tab()
    current_section()

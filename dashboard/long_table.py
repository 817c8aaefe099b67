"""The Data page's tab for many series: a long table (``unique_id, ds, y``), its columns guessed and choosable.

The table is read and checked by the core, as the ``panel`` command reads it
(:func:`evocov_core.panel.table.panel_from_frame`): whatever it refuses (a repeated ``(unique_id, ds)``, a
``y`` that is not a number, a ``ds`` that is neither dates nor numbers) is one line on the page, and the
series a search cannot serve are said with what they will get instead. The table accepted becomes the
session's :class:`LongTable`, which the Panel page runs.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from dashboard.datasets import max_upload_bytes, read_upload
from dashboard.panel_view import series_notes
from dashboard.state import PAGE_PANEL, PANEL_TABLE_KEY
from evocov_core.data import DataError
from evocov_core.panel.table import Panel, guess_panel_columns, panel_from_frame

__all__ = ["LongTable", "current_long_table", "long_table_hint", "long_table_tab"]

#: Series the preview draws.
PREVIEW_SERIES = 12


@dataclass(frozen=True, eq=False)
class LongTable:
    """A long table the Data page accepted: the file as uploaded and how to read it.

    Attributes
    ----------
    name : str
        The file's name.
    data : bytes
        The file, byte for byte (the Panel page's run keeps it in its folder).
    id_col, ds_col, y_col : str
    season_length : int or None
        Steps in a season (``ds`` given as numbers only).
    n_series, n_rows : int
    ds_kind : str
        ``"date"`` or ``"number"``.
    notes : tuple of str
        What the series a search cannot serve will get (:func:`~dashboard.panel_view.series_notes`).
    """

    name: str
    data: bytes
    id_col: str
    ds_col: str
    y_col: str
    season_length: int | None
    n_series: int
    n_rows: int
    ds_kind: str
    notes: tuple[str, ...] = ()

    @property
    def fingerprint(self) -> str:
        """The file and the reading: two LongTables with the same one run the same panel."""
        h = hashlib.sha1(self.data)
        h.update(repr((self.id_col, self.ds_col, self.y_col, self.season_length)).encode())
        return h.hexdigest()[:16]

    def summary(self) -> str:
        """``"12 series · 672 rows · dates"``."""
        return (f"{self.n_series:,} series · {self.n_rows:,} rows · "
                + ("dates" if self.ds_kind == "date" else "time steps"
                   + (f", {self.season_length} a season" if self.season_length else "")))


def current_long_table() -> LongTable | None:
    """The long table this session accepted, or None."""
    return st.session_state.get(PANEL_TABLE_KEY)


def long_table_hint(df: pd.DataFrame) -> str | None:
    """A sentence for the single-series upload when ``df`` looks like a long table of several series."""
    id_col, ds_col, y_col = guess_panel_columns(df)
    if id_col is None or ds_col is None or y_col is None:
        return None
    n = df[id_col].nunique()
    if n < 2:
        return None
    return (f"This file looks like a long table of {n:,} series (column `{id_col}`): the **Many series** tab gives "
            "each its own search; here it would be read as one series.")


def _index(options: list[str], guess: str | None) -> int | None:
    return options.index(str(guess)) if guess is not None and str(guess) in options else None


def _preview(panel: Panel) -> None:
    """The first series drawn together."""
    frames = [pd.DataFrame({"ds": s.ds, "y": s.y, "series": s.uid}) for s in panel.series[:PREVIEW_SERIES] if s.y.size]
    if not frames:
        return
    st.line_chart(pd.concat(frames, ignore_index=True), x="ds", y="y", color="series", height=260)
    if len(panel) > PREVIEW_SERIES:
        st.caption(f"The first {PREVIEW_SERIES} of {len(panel):,} series.")


def _columns(df: pd.DataFrame, fid: str) -> tuple[str | None, str | None, str | None, int | None]:
    """The column boxes (guessed first) and the season length; Nones until chosen."""
    cols = [str(c) for c in df.columns]
    guessed = guess_panel_columns(df)
    c1, c2, c3, c4 = st.columns(4)
    picked = []
    for where, role, label, guess in zip((c1, c2, c3), ("id", "ds", "y"),
                                         ("Series (unique_id)", "Time (ds)", "Value (y)"), guessed, strict=True):
        picked.append(where.selectbox(label, cols, index=_index(cols, guess), key=f"data_panel_{role}_{fid}",
                                      placeholder="Choose a column",
                                      help="Guessed from the names (unique_id, ds, y; item, date, sales...) and "
                                      "the values; choose another column if the guess is wrong."))
    id_col, ds_col, y_col = picked
    numeric = ds_col is not None and pd.api.types.is_numeric_dtype(df[ds_col]) \
        and not pd.api.types.is_bool_dtype(df[ds_col])
    season = c4.number_input("Steps in a season", min_value=0, max_value=100_000, value=0, step=1,
                             key=f"data_panel_season_{fid}", disabled=not numeric,
                             help="When ds holds numbers of steps: 12 for monthly steps, 4 quarterly, 1 yearly "
                             "(0: none). Dates give their own seasons.")
    return id_col, ds_col, y_col, int(season) if numeric and season else None


def long_table_tab() -> None:
    """Upload a long table, choose its columns, and make it the session's panel."""
    limit_mb = max(1, max_upload_bytes() // (1024 * 1024))
    current = current_long_table()
    st.markdown("Many series in one **long table**: one row per series and time stamp, with a column naming the "
                "series (`unique_id`), its time (`ds`: dates, or numbers of steps) and its value (`y`), as "
                "statsforecast reads them. An empty `y` is a point not observed. Each series then gets its own "
                "kernel search on the **Panel** page.")
    up = st.file_uploader(f"Long CSV file (up to {limit_mb} MB)", type=["csv", "txt", "tsv"], key="data_panel_upload",
                          max_upload_size=limit_mb, help="Read as the `panel` command reads `--data`.")
    if up is None:
        if current is not None:
            st.caption(f"Current panel: **{current.name}** — {current.summary()}.")
            st.page_link(PAGE_PANEL, label="Go to Panel", icon=":material/stacked_line_chart:")
        return
    try:
        df = read_upload(up.getvalue()).rename(columns=str)
    except DataError as exc:
        st.error(f"**Cannot read {up.name}:** {exc}.", icon=":material/block:")
        return
    id_col, ds_col, y_col, season = _columns(df, getattr(up, "file_id", up.name))
    if id_col is None or ds_col is None or y_col is None:
        st.info("Choose the column of each role.", icon=":material/table_chart:")
        return
    try:
        panel = panel_from_frame(df, id_col=id_col, ds_col=ds_col, y_col=y_col, season_length=season)
    except DataError as exc:
        kept = f" The current panel ({current.name}) is unchanged." if current is not None else ""
        st.error(f"**Cannot use {up.name} as a panel:** {exc}.{kept}", icon=":material/block:")
        return
    table = LongTable(up.name, up.getvalue(), id_col, ds_col, y_col, season, len(panel), len(df), panel.ds_kind,
                      tuple(series_notes(panel)))
    for note in table.notes:
        st.info(f"Note: {note}.", icon=":material/info:")
    _preview(panel)
    if current is not None and current.fingerprint == table.fingerprint:
        st.success(f"**{table.name}** is the current panel: {table.summary()}.", icon=":material/check_circle:")
        st.page_link(PAGE_PANEL, label="Go to Panel", icon=":material/stacked_line_chart:")
    else:
        st.success(f"Ready: **{table.name}** — {table.summary()}.", icon=":material/check_circle:")
        if st.button("Use this panel", type="primary", key="data_use_panel"):
            st.session_state[PANEL_TABLE_KEY] = table
            st.rerun()

"""The dashboard's names: page scripts, the sidebar's page list, session-state keys, defaults.

State that no widget owns lives under its own ``st.session_state`` key, named here once.
"""

from __future__ import annotations

PAGE_DATA = "pages/1_data.py"
PAGE_SEARCH = "pages/2_search.py"
PAGE_RESULTS = "pages/3_results.py"
PAGE_EXPLORER = "pages/4_explorer.py"
PAGE_RUNS = "pages/5_runs.py"
PAGE_PANEL = "pages/6_panel.py"

#: The browser tab's icon. An emoji, which Streamlit draws as an inline SVG: a Material icon would be
#: fetched from fonts.gstatic.com, which an offline machine cannot reach.
FAVICON = "🧬"

#: The pages in sidebar order: script, label, icon. Streamlit's own multipage mode serves every
#: script in ``pages/`` at ``/<name without its number>`` (``/data``, ``/search``...); its
#: automatic sidebar list is off (``client.showSidebarNavigation`` in .streamlit/config.toml)
#: so that :func:`dashboard.sidebar.sidebar` can show these labels and icons instead of file names.
PAGES = (
    (PAGE_DATA, "Data", ":material/show_chart:"),
    (PAGE_SEARCH, "Search", ":material/genetics:"),
    (PAGE_RESULTS, "Results", ":material/emoji_events:"),
    (PAGE_EXPLORER, "Mutation explorer", ":material/science:"),
    (PAGE_RUNS, "Runs", ":material/folder_open:"),
    (PAGE_PANEL, "Panel", ":material/stacked_line_chart:"),
)

DATASET_KEY = "evocov_dataset"  # the selected Dataset, shared by every page
SOURCE_KEY = "evocov_dataset_source"  # {"kind": "bundled" | "upload" | "run", "name": ...}
SEARCH_JOB_KEY = "evocov_search_job"  # id of the search this session watches
EXPLORE_JOB_KEY = "evocov_explore_job"  # id of the exploration this session watches
RESULTS_RUN_KEY = "evocov_results_run"  # run the Results page opens
MY_RUNS_KEY = "evocov_my_runs"  # ids of the runs this session started, oldest first
GPSS_JOBS_KEY = "evocov_gpss_jobs"  # dataset fingerprint -> GPSS baseline job id
PANEL_TABLE_KEY = "evocov_panel_table"  # the long table the Data page accepted (dashboard.long_table.LongTable)
PANEL_RUN_KEY = "evocov_panel_run"  # id of the panel run this session watches

#: A run's stored extra (not the session's) that keeps the covariates' future values last forecast with:
#: ``{"file", "names", "x", "c"}`` (dashboard.future_view; a panel series' from its run, dashboard.panel_view).
FUTURE_VALUES = "future_covariates"

DEFAULT_DATASET = "airline"
DEFAULT_TEST_FRACTION = 0.1

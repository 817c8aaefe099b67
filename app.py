"""EvoCov dashboard, entry page. Run with ``streamlit run app.py``.

The pages are the scripts in ``pages/`` (Streamlit's own multipage mode); each draws the
shared sidebar (:func:`dashboard.sidebar.page_setup`). The entry page opens the Data page.
"""

import streamlit as st

# Worker processes (searches, reference fits) start with "spawn", which re-runs the main
# script as ``__mp_main__``: there is nothing to do there. Streamlit runs it as ``__main__``.
if __name__ == "__main__":
    from dashboard.state import FAVICON, PAGE_DATA

    st.set_page_config(page_title="EvoCov", page_icon=FAVICON, layout="wide")
    # A link to / with a run in it (?job=...) keeps it: the Data page's sidebar adopts the run.
    st.switch_page(PAGE_DATA, query_params=st.query_params.to_dict())

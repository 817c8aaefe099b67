"""EvoCov dashboard: the page list and the shared sidebar. Run with ``streamlit run app.py``."""

import streamlit as st

# Worker processes (searches, reference fits) start with "spawn", which re-runs this file as
# ``__mp_main__``: there is nothing to draw there. Streamlit runs it as ``__main__``.
if __name__ == "__main__":
    from pages._common import leave_pages_directory_mode, sidebar

    leave_pages_directory_mode()
    st.set_page_config(page_title="EvoCov", page_icon=":material/genetics:", layout="wide")
    pages = [
        st.Page("pages/1_data.py", title="Data", icon=":material/show_chart:", default=True),
        st.Page("pages/2_search.py", title="Search", icon=":material/genetics:"),
        st.Page("pages/3_results.py", title="Results", icon=":material/emoji_events:"),
        st.Page("pages/4_explorer.py", title="Mutation explorer", icon=":material/science:"),
        st.Page("pages/5_runs.py", title="Runs", icon=":material/folder_open:"),
    ]
    nav = st.navigation(pages)
    sidebar()
    nav.run()

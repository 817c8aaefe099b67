"""EvoCov dashboard: the page list. Run with ``streamlit run app.py``."""

import streamlit as st

st.set_page_config(page_title="EvoCov", page_icon="🧬", layout="wide")

pages = [
    st.Page("pages/1_data.py", title="Data", icon="📈", default=True),
]
st.navigation(pages).run()

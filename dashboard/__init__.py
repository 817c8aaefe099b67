"""The Streamlit side of the dashboard: what the page scripts in ``pages/`` share.

Streamlit serves every script in ``pages/`` as a page, so helpers live here instead;
:mod:`evocov_core` knows nothing of Streamlit.
"""

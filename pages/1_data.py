"""Data page (placeholder until the dashboard lands)."""

import streamlit as st

from evocov_core.data import load_bundled

st.title("EvoCov")
ds = load_bundled("airline")
st.write(f"{ds.name}: {ds.n} points, {ds.n_train} for training, {ds.n_test} for testing.")

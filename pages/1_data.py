"""Data page: pick a bundled series or upload a CSV, choose the columns and the train/test split."""

from dashboard import data_page
from dashboard.sidebar import page_setup

page_setup("Data")
data_page.render()

"""Runs page: every search and exploration in the store; open, compare, export, delete."""

from dashboard import runs_page
from dashboard.sidebar import page_setup

page_setup("Runs")
runs_page.render()

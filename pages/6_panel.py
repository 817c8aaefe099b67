"""Panel page: many series of a long table, each with its own kernel, run in the background and resumable."""

from dashboard import panel_page
from dashboard.sidebar import page_setup

page_setup("Panel")
panel_page.render()

"""Search page: settings of a kernel search, Start/Stop, and the live view of the run."""

from dashboard import search_page
from dashboard.sidebar import page_setup

page_setup("Search")
search_page.render()

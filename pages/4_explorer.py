"""Mutation explorer: mutate a fitted kernel many times and see how its neighbours extrapolate."""

from dashboard import explorer_page
from dashboard.sidebar import page_setup

page_setup("Mutation explorer")
explorer_page.render()

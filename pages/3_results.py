"""Results page: the best kernel of a run, how it was chosen, its extrapolation (or the model average's),
every forecast of the test part beside the GP baselines and classical forecasters, the Pareto plot, kernel files."""

from dashboard import results_page
from dashboard.sidebar import page_setup

page_setup("Results")
results_page.render()

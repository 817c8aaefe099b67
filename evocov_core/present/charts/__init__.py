"""The charts, each as two functions: ``*_data`` (pure, returns a DataFrame or simple values, tested
without a browser) and ``*_figure`` (draws that data with Plotly). Pages and reports import them from
:mod:`evocov_core.present.figures`.

* :mod:`~evocov_core.present.charts.style`: colours, display x, thinning many points;
* :mod:`~evocov_core.present.charts.forecasts`: the series, its forecasts and the kernel's components;
* :mod:`~evocov_core.present.charts.kernel`: a kernel's tree and its hyperparameters;
* :mod:`~evocov_core.present.charts.search`: fitness curves, model choice, Pareto plots.
"""

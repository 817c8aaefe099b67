"""Many series at once: a long table in, every series' kernel and forecast out (:func:`forecast_panel`).

``table`` reads statsforecast's long format into series, ``series`` is one series' job (a search and its
forecast, or a named fallback), ``store`` the run's folder that makes it resumable, and ``run`` drives the
jobs in local processes or on Dask.
"""

from evocov_core.panel.run import FORECAST_COLUMNS, SERIES_COLUMNS, PanelProgress, PanelResult, forecast_panel

__all__ = ["FORECAST_COLUMNS", "SERIES_COLUMNS", "PanelProgress", "PanelResult", "forecast_panel"]

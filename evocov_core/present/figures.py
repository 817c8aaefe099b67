"""The data behind every chart, and the Plotly figures drawn from it: the one import of the pages and the report.

Each chart is two functions: ``*_data`` (pure, returns a DataFrame or simple values,
tested without a browser) and ``*_figure`` (draws that data with Plotly). Pages only
call these and ``st.plotly_chart``. They are defined by idea in :mod:`evocov_core.present.charts`
(the series and its forecasts, a kernel's tree and hyperparameters, a search's fitness and Pareto
charts, and what they share) and named here.
"""

from __future__ import annotations

from evocov_core.present.charts.forecasts import (
    DETAIL_POINTS,
    Components,
    comparison_forecasts_data,
    component_figure,
    components_data,
    extrapolation_data,
    extrapolation_figure,
    extrapolation_grid,
    forecast_window,
    future_figure,
    series_data,
    series_figure,
    split_value,
)
from evocov_core.present.charts.kernel import (
    TREE_FONT,
    TREE_MAX_WIDTH,
    hyperparameter_table,
    tree_figure,
    tree_fold_depth,
    tree_geometry,
    tree_label_boxes,
    tree_label_width,
    tree_layout,
    tree_outline,
)
from evocov_core.present.charts.search import (
    average_members_data,
    explorer_figure,
    fitness_compare_figure,
    fitness_data,
    fitness_figure,
    fitness_view,
    pareto_data,
    pareto_figure,
    pareto_front,
    robust_range,
    selection_data,
)
from evocov_core.present.charts.style import MAX_DRAWN, WEBGL_FROM, drawn_note, minmax_indices

__all__ = [
    "DETAIL_POINTS",
    "MAX_DRAWN",
    "TREE_FONT",
    "TREE_MAX_WIDTH",
    "WEBGL_FROM",
    "Components",
    "average_members_data",
    "comparison_forecasts_data",
    "component_figure",
    "components_data",
    "drawn_note",
    "explorer_figure",
    "extrapolation_data",
    "extrapolation_figure",
    "extrapolation_grid",
    "fitness_compare_figure",
    "fitness_data",
    "fitness_figure",
    "fitness_view",
    "forecast_window",
    "future_figure",
    "hyperparameter_table",
    "minmax_indices",
    "pareto_data",
    "pareto_figure",
    "pareto_front",
    "robust_range",
    "selection_data",
    "series_data",
    "series_figure",
    "split_value",
    "tree_figure",
    "tree_fold_depth",
    "tree_geometry",
    "tree_label_boxes",
    "tree_label_width",
    "tree_layout",
    "tree_outline",
]

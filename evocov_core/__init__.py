"""EvoCov: evolving Gaussian-process kernels from elementary mathematical expressions.

The package knows nothing of the dashboard. It is layered, one folder a layer (compute, data,
language, fitting, searches, forecast, runs, panel, present, and the front door on top); the module
map is in ``docs/design.md`` ("The package").

The benchmarks (the paper's tables, the accuracy and long-series benchmarks, GPSS's published
kernels) and the studies are not part of the package: they live beside it in a clone's
``bench/`` and run as ``python -m bench ...`` from the repository root.

The front door (``docs/api.md``)::

    import evocov_core as ec

    ds = ec.read_series("airline")                     # a CSV file or a bundled series
    res = ec.search(ds, preset="quick")                # -> KernelResult
    res.predict(ds.X_test); res.forecast(12)           # -> Interval(mean, std, lower, upper)
    ec.load_kernel("airline.kernel.json", ds)          # a saved kernel file
    ec.EvoCovRegressor(preset="quick").fit(X, y)       # scikit-learn's estimator API
    ec.forecast_panel(df, h=18, season_length=12)      # many series: statsforecast's unique_id, ds, y

Everything else is imported from the layer that defines it, by name
(``from evocov_core.data import Dataset``).
"""

from typing import TYPE_CHECKING

from evocov_core._version import __version__
from evocov_core.api import Interval, KernelResult, forecast_panel, load_kernel, read_series, search

if TYPE_CHECKING:  # pragma: no cover
    from evocov_core.sklearn import EvoCovRegressor, to_sklearn_kernel

__all__ = [
    "EvoCovRegressor",
    "Interval",
    "KernelResult",
    "__version__",
    "forecast_panel",
    "load_kernel",
    "read_series",
    "search",
    "to_sklearn_kernel",
]


def __getattr__(name: str) -> object:
    """``EvoCovRegressor`` and ``to_sklearn_kernel``, imported on first use: scikit-learn takes about a second
    to import, and every worker process of a search imports this package."""
    if name in ("EvoCovRegressor", "to_sklearn_kernel"):
        from evocov_core import sklearn

        return getattr(sklearn, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

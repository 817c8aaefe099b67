"""EvoCov: evolving Gaussian-process kernels from elementary mathematical expressions.

The package knows nothing of the dashboard. It is layered, one folder a layer (compute, data,
language, fitting, search, forecast, runs, present, and the front door on top); the module map is in
``docs/design.md`` ("The package").

The benchmarks (the paper's tables, the accuracy and long-series benchmarks, GPSS's published
kernels) and the studies are not part of the package: they live beside it in a clone's
``bench/`` and run as ``python -m bench ...`` from the repository root.

The front door (``docs/api.md``), imported on first use so that ``import evocov_core`` stays cheap::

    import evocov_core as ec

    ds = ec.read_series("airline")                     # a CSV file or a bundled series
    res = ec.search(ds, preset="quick")                # -> KernelResult
    res.predict(ds.X_test); res.forecast(12)           # -> Interval(mean, std, lower, upper)
    ec.load_kernel("airline.kernel.json", ds)          # a saved kernel file
    ec.EvoCovRegressor(preset="quick").fit(X, y)       # scikit-learn (needs scikit-learn)
    ec.forecast_panel(df, h=18, season_length=12)      # many series: statsforecast's unique_id, ds, y
"""

import sys
import types

from evocov_core._version import __version__

#: Front-door name -> the module defining it (imported on first use).
_EXPORTS = {
    "Interval": "api",
    "KernelResult": "api",
    "load_kernel": "api",
    "read_series": "api",
    "search": "api",
    "EvoCovRegressor": "sklearn",
    "to_sklearn_kernel": "sklearn",
    "forecast_panel": "api",
}

__all__ = ["__version__", *_EXPORTS]


class _SearchPackage(types.ModuleType):
    """The class of the ``evocov_core.search`` package once loaded: calling it is the front door's
    :func:`evocov_core.api.search`.

    ``ec.search`` cannot be both a function and the subpackage of the same name (importing the
    subpackage sets the attribute to it), so it is the subpackage, callable: ``ec.search(data, ...)``
    searches, and ``import evocov_core.search``, ``from evocov_core.search import preset`` and
    ``ec.search.run_search`` work as before.
    """

    def __call__(self, *args: object, **kwargs: object) -> object:
        from evocov_core.api import search

        return search(*args, **kwargs)  # type: ignore[arg-type]


class _FrontDoor(types.ModuleType):
    """The class of this package's module: makes the search subpackage callable when it is loaded."""

    def __setattr__(self, name: str, value: object) -> None:
        if name == "search" and isinstance(value, types.ModuleType) and type(value) is types.ModuleType:
            value.__class__ = _SearchPackage
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _FrontDoor


def __getattr__(name: str) -> object:
    """The front door's names, imported on first use (PEP 562): ``import evocov_core`` loads nothing else."""
    where = _EXPORTS.get(name)
    if name == "search":
        from evocov_core.search import run_search  # noqa: F401 - loads the subpackage (callable, see _SearchPackage)

        return globals()["search"]
    if where == "api":
        from evocov_core import api

        return getattr(api, name)
    if where == "sklearn":
        from evocov_core import sklearn

        return getattr(sklearn, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])

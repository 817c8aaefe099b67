"""EvoCov: evolving Gaussian-process kernels from elementary mathematical expressions.

The package knows nothing of the dashboard. Modules, one idea each:

``grammar``      the typed primitive set (paper Table 2, optionally ABCD's change point and
                 change window), one record per operator (types, how it is written, the
                 roles of its hyperparameters), and random generation (Algorithm 2)
``kernel``       the immutable Kernel value, its canonical / infix / LaTeX forms, slot roles
``evaluate``     the stack evaluator, one table entry per operator: K, diag(K), dK/dθ
``simplify``     a readable equivalent of a kernel for display (SymPy)
``decompose``    additive components of a fitted kernel, their posteriors and sentences
``report_html``  the self-contained HTML report of a kernel file on a data set
``library``      well-known kernels (Table 1) and GPSS base kernels in the grammar
``psd``          the fast empirical PSD check (section 4.1.2)
``data``         datasets, CSV validation, the train/test split, normalisation
``gp``           Cholesky with an explicit jitter policy, LML and gradient, posterior
``metrics``      LML, LOOCV, posterior LML, SoPL, RMSE (section 6.3); coverage, CRPS and
                 the interval score of a forecast
``optimize``     hyperparameter fitting with restarts and inheritance -> FitResult
``scoring``      BIC (eq. 7)
``variation``    crossover, the four mutations, bloat control (section 4.2)
``spectrum``     periodogram peaks for the starting frequencies of periodic slots
``averaging``    Bayesian model averaging of fitted kernels (predictive mixture)
``model``        predictions of a fitted kernel or a model average in the data's units
``kernel_file``  versioned JSON kernel files and their safe parser
``parallel``     where work runs in parallel and how its processes are set up (one BLAS
                 thread): serial / process-pool / Dask runners and fit executors; it re-exports
                 ``parallel_setup``, ``parallel_runners``, ``parallel_timed`` (calls with time
                 limits), ``parallel_fits`` (executors) and ``parallel_measure``
``dask_setup``   ships the package to a Dask cluster that has only the dependencies
``search``       EvoCov, Random Search, Go With The First, GPSS baseline, the mutation
                 explorer, what a budgeted search adds, and how long a fixed-count search
                 should take (``search.wall_time``, the cost model of a fit) (package)
``store``        the SQLite run store;  ``jobs``: background runs for the dashboard
``run_record``   the frozen, typed record of one run that the store hands back
``provenance``   the git commit (and dirty flag) recorded beside every result
``figures``      chart data and Plotly figures;  ``cli``: the command line
``baselines``    reference kernels fitted on the user's data (SE, GPSS, fixed structures) and
                 the report's comparison with them
``seasons``      season lengths in steps, read from the x spacing (or the periodogram)
``classical``    classical forecasters (statsforecast) with time limits, in a child process
``compare``      one table of test-part forecasts: the kernel, GP baselines, classical models
``api``          the front door below;  ``sklearn``: :class:`EvoCovRegressor` and the export of a
                 kernel as a scikit-learn ``Kernel``

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
"""

__version__ = "0.1.0"

import sys
import types

#: Front-door name -> the module defining it (imported on first use).
_EXPORTS = {
    "Interval": "api",
    "KernelResult": "api",
    "load_kernel": "api",
    "read_series": "api",
    "search": "api",
    "EvoCovRegressor": "sklearn",
    "to_sklearn_kernel": "sklearn",
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
        from .api import search

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
        from .search import run_search  # noqa: F401 - loads the subpackage (callable, see _SearchPackage)

        return globals()["search"]
    if where == "api":
        from . import api

        return getattr(api, name)
    if where == "sklearn":
        from . import sklearn

        return getattr(sklearn, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])

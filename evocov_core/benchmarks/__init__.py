"""The paper's benchmark on the 13 TSDL series (``python -m evocov_core bench ...``).

Why ``bench`` is a subcommand of the installed package, not a script of the clone: it is a user
feature. A search's worth depends on the machine (the presets are time budgets, so fits per
second decide what a preset returns) and on the series. Users benchmark the search on their own
machine, their own series (``bench accuracy --data-dir`` takes a folder of ``NN-name.csv``
series, judged against AutoETS when they have no published results) and their own Dask cluster
(``--scheduler``), and reproduce the paper's tables, with the code they run. The studies,
one-off questions answered once (which tail score, averaging searches, the evaluator against
scikit-learn...), are not: they live in ``bench/`` of the repository, import the harness from
here (:mod:`~evocov_core.benchmarks.common`: result files, trial statuses, geometric mean,
number format; :func:`~evocov_core.benchmarks.accuracy.read_trials`) and write to
``bench/results/``.

==================  ===========================================================================
``budget``          the benchmark's algorithms and their ``paper`` / ``quick`` budgets
``reproduce``       Tables 5, 6 and Figure 5 (``bench reproduce``, ``bench report``)
``estimate``        the paper budget's cost from timed generations (``bench estimate``)
``mutations``       Table 3: mutants of the published GPSS kernels (``bench mutations``)
``hpmetrics``       Table 4: the five hyperparameter metrics (``bench metrics``)
``scaling``         seconds per kernel fit against n and workers, profile (``bench scaling``)
``accuracy``        budgeted dashboard searches on the 13 series, with ablations (``bench accuracy``,
                    ``bench accuracy-report``)
``long``            long and high-frequency series: the search command within its budget against
                    seasonal naive and MSTL, wall time and memory (``bench long``, ``bench long-report``)
``paper``           numbers transcribed from the paper, the published RMSE files
``common``          the harness: series loading with the split check, resumable result files, trial
                    statuses, job runner, geometric mean, number format, report tables
``cli``             the argument parser
==================  ===========================================================================

See ``bench/README.md`` for the commands and what each output file holds.
"""

from evocov_core.benchmarks.cli import add_parser, main

__all__ = ["add_parser", "main"]

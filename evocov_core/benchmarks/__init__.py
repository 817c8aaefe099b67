"""The paper's benchmark on the 13 TSDL series (``python -m evocov_core bench ...``).

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
``common``          series loading with the split check, resumable result files, job runner
``cli``             the argument parser
==================  ===========================================================================

See ``bench/README.md`` for the commands and what each output file holds.
"""

from .cli import add_parser, main

__all__ = ["add_parser", "main"]

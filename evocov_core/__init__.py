"""EvoCov: evolving Gaussian-process kernels from elementary mathematical expressions.

The package knows nothing of the dashboard. Modules, one idea each:

``grammar``      the typed primitive set (paper Table 2) and random generation (Algorithm 2)
``kernel``       the immutable Kernel value and its canonical / infix / LaTeX forms
``evaluate``     the stack evaluator: K, diag(K), dK/dθ
``library``      well-known kernels (Table 1) and GPSS base kernels in the grammar
``psd``          the fast empirical PSD check (section 4.1.2)
``data``         datasets, CSV validation, the train/test split, normalisation
``gp``           Cholesky with an explicit jitter policy, LML and gradient, posterior
``metrics``      LML, LOOCV, posterior LML, SoPL, RMSE (section 6.3)
``optimize``     hyperparameter fitting with restarts and inheritance -> FitResult
``scoring``      BIC (eq. 7)
``variation``    crossover, the four mutations, bloat control (section 4.2)
``kernel_file``  versioned JSON kernel files and their safe parser
"""

__version__ = "0.1.0"

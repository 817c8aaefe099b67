"""Fitting one kernel: Cholesky and LML, metrics, hyperparameter optimisation, BIC, subsets, seasons."""

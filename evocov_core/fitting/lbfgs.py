"""A lean L-BFGS-B driver: scipy's own Fortran-derived routine, without ``minimize``'s bookkeeping.

On series of 15-150 points one LML and its gradient cost 50-250 µs, and L-BFGS-B's bookkeeping through
``scipy.optimize.minimize`` (``ScalarFunction``, ``MemoizeJac``, an ``OptimizeResult`` each iteration,
bound conversions each start) about 48 µs more an evaluation in a search at n = 19; driven here, about
23 µs (``bench/results/profile_short.md``). :func:`minimize_lbfgsb` runs the
same reverse-communication loop as scipy's ``_minimize_lbfgsb`` (scipy 1.15-1.17) around the same
routine, ``scipy.optimize._lbfgsb.setulb``, with the same arguments in the same order, so it visits
the same points and returns the same optimum, bit for bit (``tests/test_optimize.py`` checks both
paths on fixed problems).

``setulb`` is private to scipy. It is used only when it is there with the signature this loop was
written for (:data:`FAST_PATH`, checked once at import); otherwise, and when a variable's bounds are
equal (``minimize`` then removes it), the public ``minimize(method="L-BFGS-B")`` runs instead, with
the same settings.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize

__all__ = ["FAST_PATH", "minimize_lbfgsb"]

Array = NDArray[np.float64]
Objective = Callable[[Array], tuple[float, Array]]

#: The settings of scipy's L-BFGS-B that the searches use (scipy's defaults): corrections kept,
#: ``ftol``, ``gtol``, line-search steps.
MAXCOR = 10
FTOL = 2.2204460492503131e-09
GTOL = 1e-5
MAXLS = 20

_SIGNATURE = "setulb(m,x,l,u,nbd,f,g,factr,pgtol,wa,iwa,task,lsave,isave,dsave,maxls,ln_task)"


def _find_setulb() -> Callable[..., None] | None:
    """scipy's ``setulb`` when it has the signature of scipy 1.15-1.17, else None."""
    try:
        from scipy.optimize import _lbfgsb  # private: guarded by the signature check below
    except ImportError:  # pragma: no cover - depends on the installed scipy
        return None
    fn = getattr(_lbfgsb, "setulb", None)
    doc = getattr(fn, "__doc__", None) or ""
    if not callable(fn) or not doc.strip().startswith(_SIGNATURE):
        return None  # pragma: no cover - depends on the installed scipy
    return fn


_SETULB = _find_setulb()
#: Whether :func:`minimize_lbfgsb` drives ``setulb`` itself (else it calls ``minimize``).
FAST_PATH = _SETULB is not None


def minimize_lbfgsb(fun: Objective, x0: Array, lower: Array, upper: Array, *, maxiter: int, maxfun: int,
                    fast: bool | None = None) -> None:
    """Minimise ``fun`` from ``x0`` in the box ``[lower, upper]`` with L-BFGS-B; what ``fun`` raises propagates.

    Callers keep the best point themselves (the fitter records every evaluation), so nothing is
    returned: the point where L-BFGS-B stops is not always the best it saw.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (f, g)``: the value (float) and gradient (ndarray of shape (p,)) at ``x`` (p,).
        It gets a copy of the point, and is not called twice in a row at the same point.
    x0 : ndarray of shape (p,)
    lower, upper : ndarray of shape (p,)
        Finite or infinite bounds, ``lower <= upper``.
    maxiter, maxfun : int
        scipy's ``maxiter`` and ``maxfun``: iterations, and evaluations after which no new iteration starts.
    fast : bool, optional
        Drive ``setulb`` directly (default: when :data:`FAST_PATH`); ``False`` calls
        ``scipy.optimize.minimize``. Both visit the same points.
    """
    lower = np.asarray(lower, dtype=np.float64)
    upper = np.asarray(upper, dtype=np.float64)
    use_fast = FAST_PATH if fast is None else (fast and FAST_PATH)
    if not use_fast or bool(np.any(lower == upper)):
        minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=list(zip(lower, upper, strict=True)),
                 options={"maxfun": maxfun, "maxiter": maxiter, "maxcor": MAXCOR, "ftol": FTOL, "gtol": GTOL,
                          "maxls": MAXLS})
        return
    _drive(fun, x0, lower, upper, maxiter, maxfun)


def _drive(fun: Objective, x0: Array, lower: Array, upper: Array, maxiter: int, maxfun: int) -> None:
    """scipy's ``_minimize_lbfgsb`` loop (1.15-1.17) for an objective with its gradient, without its wrappers."""
    assert _SETULB is not None
    x = np.clip(np.asarray(x0, dtype=np.float64).ravel(), lower, upper)
    n = x.shape[0]
    nbd = np.zeros(n, np.int32)
    low_bnd = np.zeros(n, np.float64)
    upper_bnd = np.zeros(n, np.float64)
    has_lo, has_hi = ~np.isinf(lower), ~np.isinf(upper)
    low_bnd[has_lo] = lower[has_lo]
    upper_bnd[has_hi] = upper[has_hi]
    # scipy's bounds_map: none 0, lower only 1, both 2, upper only 3.
    nbd[has_lo & ~has_hi] = 1
    nbd[has_lo & has_hi] = 2
    nbd[~has_lo & has_hi] = 3
    m = MAXCOR
    factr = FTOL / np.finfo(float).eps
    # scipy's ScalarFunction evaluates the start when it is built; later points are evaluated when they differ
    # from the last one (its memo).
    last = x.copy()
    f, g = fun(last.copy())
    nfev = 1
    f_arr = np.array(0.0, dtype=np.float64)
    g_arr = np.zeros((n,), dtype=np.float64)
    wa = np.zeros(2 * m * n + 5 * n + 11 * m * m + 8 * m, np.float64)
    iwa = np.zeros(3 * n, dtype=np.int32)
    task = np.zeros(2, dtype=np.int32)
    ln_task = np.zeros(2, dtype=np.int32)
    lsave = np.zeros(4, dtype=np.int32)
    isave = np.zeros(44, dtype=np.int32)
    dsave = np.zeros(29, dtype=np.float64)
    cur_f: object = f_arr
    cur_g = g_arr
    n_iterations = 0
    while True:
        cur_g = cur_g.astype(np.float64)
        _SETULB(m, x, low_bnd, upper_bnd, nbd, cur_f, cur_g, factr, GTOL, wa, iwa, task, lsave, isave, dsave,
                MAXLS, ln_task)
        if task[0] == 3:
            if not (x == last).all():  # np.array_equal for two arrays of one shape, without its wrapper
                last = x.copy()
                f, g = fun(last.copy())
                nfev += 1
            cur_f, cur_g = f, np.atleast_1d(g)
        elif task[0] == 1:
            n_iterations += 1
            if n_iterations >= maxiter:
                task[0], task[1] = 5, 504
            elif nfev > maxfun:
                task[0], task[1] = 5, 502
        else:
            return

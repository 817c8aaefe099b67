"""scipy's LAPACK routines as functions that Numba-compiled code calls (importing this module imports Numba).

The compiled loops of short series (:mod:`evocov_core.fitting._lml_loop`, :mod:`evocov_core.language._psd_loop`)
call the routines scipy's own wrappers call, through ``scipy.linalg.cython_lapack``, so that their factors and
eigenvalues are the library's; what they save is the Python between the calls.
"""

from __future__ import annotations

import llvmlite.binding as llvm
from numba import types
from numba.extending import get_cython_function_address

__all__ = ["routine"]


def routine(name: str, n_args: int) -> types.ExternalFunction:
    """scipy's LAPACK routine ``name`` (every argument a pointer) as a function the compiled code calls by a
    symbol of its own: a symbol, not a pointer, so that Numba can cache the compiled code on disk."""
    symbol = f"evocov_{name}"
    llvm.add_symbol(symbol, get_cython_function_address("scipy.linalg.cython_lapack", name))
    return types.ExternalFunction(symbol, types.void(*(types.voidptr,) * n_args))

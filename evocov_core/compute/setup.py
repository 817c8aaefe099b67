"""How a process that evaluates kernels is set up: one BLAS thread and glibc malloc thresholds.

Part of :mod:`evocov_core.compute`, the one place that starts and sets up processes: every process this package starts
runs :func:`prepare_process` first, and so does every entry point that evaluates kernels in its own
process (the CLI, the benchmarks of a clone's ``bench/``, the tests).
"""

from __future__ import annotations

import os

__all__ = ["limit_blas_threads", "prepare_process"]


# --- process setup -----------------------------------------------------------------------------------------

_BLAS_LIMITED = False
_MALLOC_TUNED = False


def limit_blas_threads(n: int = 1) -> None:
    """Limit BLAS/OpenMP to ``n`` threads in this process (idempotent).

    Parallelism comes from evaluating candidate kernels in separate processes.
    """
    global _BLAS_LIMITED
    if _BLAS_LIMITED:
        return
    # Libraries loaded later read these; scipy ships its own OpenBLAS, so load it now
    # too, or threadpoolctl would leave it (and every Cholesky) at its default threads.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    import scipy.linalg
    import scipy.spatial.distance  # noqa: F401
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=n)
    _BLAS_LIMITED = True


def _tune_malloc() -> None:
    """Keep large freed blocks in the heap instead of returning them to the OS.

    Every node of a kernel tree makes an n×n temporary (1.9 MB at n = 490). glibc
    serves blocks that large with a fresh ``mmap`` and unmaps them on free, so each
    temporary paid ~0.5 ms of page faults: measured here, SE + PER×SE at n = 490 took
    16.9 ms with the defaults and 4.2 ms with these thresholds. No-op off glibc.
    """
    global _MALLOC_TUNED
    if _MALLOC_TUNED:
        return
    _MALLOC_TUNED = True
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3
        libc.mallopt(m_mmap_threshold, 256 * 1024 * 1024)
        libc.mallopt(m_trim_threshold, 512 * 1024 * 1024)
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        pass


def prepare_process() -> None:
    """Set up this process for kernel evaluation: one BLAS thread, malloc thresholds.

    Every worker of this module runs it before its first call; entry points that evaluate
    kernels in their own process (the CLI, ``python -m bench``, the tests) call it too. Idempotent.
    """
    limit_blas_threads(1)
    _tune_malloc()

"""Make a Dask cluster that has only the dependencies installed run this package's tasks.

A scheduler and workers started with ``dask scheduler`` / ``dask worker`` know nothing of
``evocov_core``. :func:`ship_package` prepares them before a run:

1. it compares Python and the dependencies of every worker with this machine's
   (``Client.get_versions``, which runs none of our code) and stops with one line that
   says what to install where (:class:`DaskSetupError`);
2. it zips this package's sources (``evocov_core-<hash>.zip``, named by a hash of the
   sources) and registers distributed's ``UploadFile`` worker plugin with it: every worker,
   and every worker that joins later, puts the zip first on its ``sys.path`` and imports
   ``evocov_core`` from it. Modules of another version that a long-lived worker imported
   before are forgotten first, so a worker never mixes two versions;
3. it imports ``evocov_core.fitting.fits`` (or the modules the tasks need) on every worker and
   reports a failure in one line.

The scheduler never needs the package. distributed unpickles task graphs on the scheduler
(the ``ModuleNotFoundError`` of an unprepared cluster was raised there), so what we submit
is :func:`remote`: a closure that names our function by two strings and exchanges only
bytes. Plain pickle refuses a nested function and distributed falls back to cloudpickle,
which pickles it by value, so the graph references nothing of ours.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import socket
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "SAME_MINOR_VERSION",
    "WORKER_PACKAGES",
    "DaskSetupError",
    "pack",
    "package_zip",
    "remote",
    "ship_package",
    "unpack",
    "version_problems",
]

#: Packages a kernel fit imports on a worker (``evocov_core.fitting.fits`` and what it imports; Numba when it
#: fits a short series).
WORKER_PACKAGES = ("numpy", "scipy", "pandas", "deap", "threadpoolctl", "numba")

#: Packages whose major.minor version must match this machine's: arrays pickled by numpy 2
#: do not load in numpy 1, and other numerics would make a run differ from a serial one.
SAME_MINOR_VERSION = ("numpy", "scipy")

_INSTALL = "pip install -r requirements.txt"
PACKAGE_DIR = Path(__file__).resolve().parents[1]  # evocov_core/, this module being in compute/


class DaskSetupError(RuntimeError):
    """The Dask cluster cannot run this package's tasks; the message (one line) says what to install where."""


def remote(module: str, name: str, label: str | None = None) -> Callable[..., bytes]:
    """``module.name`` as a task function that the scheduler can unpickle without this package.

    The returned function takes ``(blob, *data)``: ``blob`` is ``pickle.dumps(args)`` and
    ``data`` are values distributed resolves on the worker (scattered futures). It calls
    ``module.name(*data, *args)`` on the worker and returns the result pickled, so the
    scheduler only ever holds bytes and two strings. ``label`` (default ``name``) names the
    tasks on Dask's dashboard.
    """

    def call(blob: bytes, *data: Any) -> bytes:
        # Imports here, not globals: cloudpickle would pickle module globals along with the function.
        import importlib
        import pickle as pkl

        fn = getattr(importlib.import_module(module), name)
        return pkl.dumps(fn(*data, *pkl.loads(blob)), protocol=pkl.HIGHEST_PROTOCOL)

    call.__name__ = call.__qualname__ = f"evocov_{(label or name).strip('_')}"  # what the dashboard shows
    return call


def pack(*args: Any) -> bytes:
    """The ``blob`` argument of a :func:`remote` function."""
    return pickle.dumps(args, protocol=pickle.HIGHEST_PROTOCOL)


def unpack(blob: bytes) -> Any:
    """The value a :func:`remote` function returned."""
    return pickle.loads(blob)


def package_zip(folder: Path, source: Path = PACKAGE_DIR,
                leave_out: frozenset[str] = frozenset({"__pycache__"})) -> Path:
    """Write ``<name>-<hash>.zip`` (the ``.py`` files of the package at ``source``, this one by default)
    into ``folder``; its path.

    The name carries a hash of the sources, so a worker can tell this version from one it imported
    earlier. Files under a folder named in ``leave_out`` are left out.
    """
    files = sorted(p for p in source.rglob("*.py") if not leave_out & set(p.relative_to(source).parts))
    h = hashlib.sha256()
    for p in files:
        h.update(p.relative_to(source).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    path = Path(folder) / f"{source.name}-{h.hexdigest()[:12]}.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for p in files:
            z.write(p, f"{source.name}/{p.relative_to(source).as_posix()}")
    return path


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def version_problems(versions: Mapping[str, Any]) -> list[str]:
    """What keeps the workers from running our tasks, one sentence each (empty: nothing).

    Parameters
    ----------
    versions : mapping
        ``Client.get_versions(packages=WORKER_PACKAGES)``: ``{"client": {"packages": {...}},
        "workers": {address: {"packages": {...}}}}``, ``packages`` mapping a name (and
        ``"python"``) to a version string or None when missing.
    """
    here = versions["client"]["packages"]
    out: list[str] = []
    for address, info in sorted((versions.get("workers") or {}).items()):
        there = info.get("packages", {})
        py, py_here = str(there.get("python") or "?"), str(here.get("python") or "?")
        if _minor(py) != _minor(py_here):
            out.append(f"the Dask worker {address} runs Python {_minor(py)}, this machine Python {_minor(py_here)}: "
                       f"run the workers with Python {_minor(py_here)} (tasks are pickled functions)")
            continue
        for pkg in WORKER_PACKAGES:
            v, v_here = there.get(pkg), here.get(pkg)
            if v is None:
                out.append(f"the Dask worker {address} has no {pkg}: install this package's dependencies on every "
                           f"worker machine ({_INSTALL})")
            elif pkg in SAME_MINOR_VERSION and v_here is not None and _minor(v) != _minor(v_here):
                out.append(f"the Dask worker {address} has {pkg} {v}, this machine {v_here}: install "
                           f"{pkg}=={v_here} on every worker machine (or {pkg} {v} here)")
    return out


def _in_process(client: tuple[str, int]) -> Callable[[], bool]:
    """A function (run on each worker) that tells whether the worker runs in the client's process."""

    def inside() -> bool:
        import os
        import socket

        return (socket.gethostname(), os.getpid()) == client

    return inside


def _forget_other_versions(zip_name: str, client: tuple[str, int]) -> Callable[[], int]:
    """A function (run on each worker) that drops ``evocov_core`` modules not loaded from ``zip_name``."""

    def forget() -> int:
        import os
        import socket
        import sys

        if (socket.gethostname(), os.getpid()) == client:
            return 0  # a worker inside the client process: its modules are the client's own
        prefix = zip_name.split("-")[0]
        stale = [n for n, m in list(sys.modules.items())
                 if (n == prefix or n.startswith(prefix + ".")) and zip_name not in str(getattr(m, "__file__", ""))]
        for n in stale:
            del sys.modules[n]
        # Older zips of the package would shadow nothing (ours goes first) but need not stay.
        sys.path[:] = [p for p in sys.path if not (os.path.basename(p).startswith(prefix + "-") and zip_name not in p)]
        return len(stale)

    return forget


def _import_error(module: str) -> Callable[[], str]:
    """A function (run on each worker) that imports ``module``: "" or the error, one line."""

    def check() -> str:
        import importlib

        try:
            importlib.import_module(module)
        except Exception as exc:  # reported to the client, which says what to install
            return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return ""

    return check


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def ship_package(client: Any, *, modules: tuple[str, ...] = ("evocov_core.fitting.fits",),
                 wait_for_workers: float = 30.0) -> int:
    """Prepare the workers of ``client``'s cluster to run this package's tasks (see the module docstring).

    Parameters
    ----------
    client : distributed.Client
    modules : tuple of str
        Modules the tasks will import: each worker imports them once, so that a missing
        dependency is reported here in one line, not by every task.
    wait_for_workers : float
        Seconds to wait for a first worker when the scheduler has none.

    Returns
    -------
    int
        Workers prepared (0 when every worker runs inside this process: nothing to ship).

    Raises
    ------
    DaskSetupError
        A worker lacks a dependency, has another Python or numpy/scipy version, or cannot
        import the shipped package; the message names the worker and what to install.
    """
    address = getattr(client.scheduler, "address", "the scheduler")
    try:
        client.wait_for_workers(1, timeout=wait_for_workers)
    except TimeoutError:
        raise DaskSetupError(f"the Dask scheduler at {address} has no workers after {wait_for_workers:.0f} s: "
                             f"start some with `dask worker {address} --nthreads 1`") from None
    me = (socket.gethostname(), os.getpid())
    inside = client.run(_in_process(me))
    if all(inside.values()):
        # In-process workers (LocalCluster(processes=False)) already have our modules; an upload
        # would put a zip on this process's sys.path and reload the package here.
        return 0
    problems = version_problems(client.get_versions(packages=list(WORKER_PACKAGES)))
    if problems:
        more = f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})" if len(problems) > 1 else ""
        raise DaskSetupError(problems[0] + more)
    from distributed.diagnostics.plugin import UploadFile

    with tempfile.TemporaryDirectory(prefix="evocov-ship-") as tmp:
        zpath = package_zip(Path(tmp))
        client.run(_forget_other_versions(zpath.name, me))
        try:
            # Registered on the scheduler: workers that join later get it too.
            client.register_plugin(UploadFile(str(zpath)), name="evocov-core-package")
        except Exception as exc:
            raise DaskSetupError(f"could not install evocov_core on the Dask workers ({_one_line(exc)}): install "
                                 f"this package's dependencies on every worker machine ({_INSTALL})") from None
    for module in modules:
        errors = {a: e for a, e in client.run(_import_error(module)).items() if e}
        if not errors:
            continue
        a, e = sorted(errors.items())[0]
        raise DaskSetupError(f"the Dask worker {a} cannot import the shipped {module} ({e}): install this "
                             f"package's dependencies on every worker machine ({_INSTALL})")
    return len(inside)

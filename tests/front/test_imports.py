"""Every module of ``evocov_core`` and ``dashboard`` imports on its own, and no two of them import
each other, directly or through others (a cycle among modules hides which one is the base)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("evocov_core", "dashboard")


def modules() -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, is a package's ``__init__``)."""
    out: dict[str, tuple[Path, bool]] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            init = parts[-1] == "__init__"
            out[".".join(parts[:-1] if init else parts)] = (path, init)
    return out


def _nodes(tree: ast.AST, type_only: bool):
    """The nodes of ``tree`` (as ``ast.walk``), without the bodies of ``if TYPE_CHECKING`` blocks
    unless ``type_only``."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not type_only and isinstance(child, ast.If) and ast.unparse(child.test) == "TYPE_CHECKING":
                todo.extend(child.orelse)
            else:
                todo.append(child)


def import_graph(type_only: bool = True) -> dict[str, set[str]]:
    """Which of the modules each module imports: every ``import`` statement, at module level or
    inside a function (a deferred import is still a dependency), and with ``type_only`` those of
    ``if TYPE_CHECKING`` blocks too (names for annotations, not imported when the code runs)."""
    mods = modules()
    graph: dict[str, set[str]] = {}
    for name, (path, init) in mods.items():
        package = name.split(".") if init else name.split(".")[:-1]
        deps: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _nodes(tree, type_only):
            into = deps
            if isinstance(node, ast.Import):
                into.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                names = {a.name for a in node.names}
                into.add(target)
                into.update(f"{target}.{a}" for a in names)  # ``from pkg import module``
        graph[name] = {d for d in deps if d in mods and d != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_the_cycle_finder_finds_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_relative_and_deferred_imports():
    g = import_graph()
    assert "evocov_core.language.grammar" in g["evocov_core.language.kernel"]
    assert "evocov_core.fitting.optimize" in g["evocov_core.runs.kernel_file"]
    assert "evocov_core.searches.run_file" in g["evocov_core.present.cli"]  # imported inside a function


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_the_front_door_is_plain():
    """``ec.search`` is a function, with its signature, picklable by reference; the package exports at most
    ten names, each the object of the module that defines it."""
    import inspect
    import pickle

    import evocov_core as ec
    import evocov_core.api as api
    import evocov_core.sklearn as sk

    assert inspect.isfunction(ec.search) and ec.search is api.search
    assert {"data", "preset", "seed"} <= set(inspect.signature(ec.search).parameters)
    assert pickle.loads(pickle.dumps(ec.search)) is api.search
    assert len(ec.__all__) <= 10
    for name in ec.__all__:
        assert getattr(ec, name) is getattr(sk if name in ("EvoCovRegressor", "to_sklearn_kernel") else api,
                                            name, ec.__version__), name
    assert sorted(api.__all__) == sorted(n for n in ec.__all__ if hasattr(api, n) and n != "__version__")
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        ec.nonsense  # noqa: B018
    import evocov_core.searches  # the kernel searches' subpackage does not shadow the function

    assert inspect.isfunction(ec.search)


def test_importing_the_package_loads_only_its_front_door():
    """``import evocov_core`` (which every worker process does) loads the front door and numpy, not the
    layers, scipy, pandas or scikit-learn: the front door's functions import what they run."""
    import subprocess
    import sys

    code = ("import sys, evocov_core as ec; loaded = sorted(m for m in sys.modules if m.startswith('evocov_core.')"
            " or m in ('scipy', 'pandas', 'sklearn')); print(loaded); "
            "assert callable(ec.search) and callable(ec.read_series)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "['evocov_core._version', 'evocov_core.api']"


@pytest.mark.parametrize("name", sorted(modules()))
def test_every_module_imports(name):
    importlib.import_module(name)


# --- layers ---------------------------------------------------------------------------------------------

#: The layers of ``evocov_core``, lowest first: a module imports only from its own layer and the layers
#: below (``docs/design.md`` has the module map). The top holds the front door and the command's entry.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("_version",),
    ("compute",),
    ("data",),
    ("language",),
    ("fitting",),
    ("searches",),
    ("forecast",),
    ("runs", "panel"),
    ("present",),
    ("api", "sklearn", "__main__", ""),
)


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of an ``evocov_core`` module (its first name below the package)."""
    part = module.split(".")[1] if "." in module else ""
    for i, names in enumerate(LAYERS):
        if part in names:
            return i
    raise AssertionError(f"{module} is in no layer: add it to LAYERS and to the module map in docs/design.md")


def test_no_import_runs_back_up_a_layer():
    """Every import of every ``evocov_core`` module, deferred ones too, goes to its own layer or one below."""
    g = import_graph()
    core = [m for m in g if m.split(".")[0] == "evocov_core"]
    upward = sorted(f"{m} -> {d}" for m in core for d in g[m]
                    if d.startswith("evocov_core") and layer_of(d) > layer_of(m))
    assert upward == []
    assert len(LAYERS) <= 10
    # The check can fail: a deferred import of a higher layer is seen.
    assert layer_of("evocov_core.present.cli") > layer_of("evocov_core.searches.common")


def floors(graph: dict[str, set[str]]) -> list[str]:
    """The longest chain of imports in ``graph`` (acyclic), from the importing module down: its
    length is the number of floors of the structure the imports draw."""
    memo: dict[str, list[str]] = {}

    def chain(m: str) -> list[str]:
        if m not in memo:
            below = [chain(d) for d in sorted(graph.get(m, ())) if d in graph]
            memo[m] = [m, *max(below, key=len, default=[])]
        return memo[m]

    return max((chain(m) for m in sorted(graph)), key=len, default=[])


def test_the_floor_counter_counts():
    assert floors({"a": {"b", "c"}, "b": {"c"}, "c": set(), "d": {"c"}}) == ["a", "b", "c"]
    assert floors({"a": set()}) == ["a"]


#: The most floors the imports of ``evocov_core`` may draw, counted between files, deferred imports
#: included and type-only ones not (they import nothing when the code runs). It was 22 before the
#: layers were flattened and is a ceiling, not a goal: the pipeline itself is about this deep
#: (notation < grammar < program < evaluate < gp < metrics < optimize < fits < budget < tracker <
#: an algorithm < run_search < the GPSS baseline < compare < the report < the CLI < ``__main__``). A panel
#: (issue 70) put one floor on it: its job is one series' search and forecast, its run the jobs.
MAX_FILE_FLOORS = 18


def test_the_imports_draw_ten_layers_and_few_floors_of_files():
    """Drawn from the imports the code runs: at most 10 floors of layers, and at most
    :data:`MAX_FILE_FLOORS` of files (the longest chain is named when it grows)."""
    g = {m: deps for m, deps in import_graph(type_only=False).items() if m.startswith("evocov_core")}
    by_layer: dict[str, set[str]] = {}
    for m, deps in g.items():
        by_layer.setdefault(str(layer_of(m)), set()).update(str(layer_of(d)) for d in deps
                                                             if layer_of(d) != layer_of(m))
    assert len(floors(by_layer)) <= 10
    chain = floors(g)
    assert len(chain) <= MAX_FILE_FLOORS, " -> ".join(chain)
    # The count sees deferred imports (cli imports the report inside its functions) and skips type-only ones.
    assert "evocov_core.present.report_html" in g["evocov_core.present.cli"]
    assert "evocov_core.searches.clock" not in g["evocov_core.searches.screening"]
    assert "evocov_core.searches.clock" in import_graph()["evocov_core.searches.screening"]


def test_the_layers_are_the_folders():
    """Each layer but the ends is a subpackage, and no module sits loose at the top but the front door's."""
    loose = sorted(p.stem for p in (ROOT / "evocov_core").glob("*.py"))
    assert loose == ["__init__", "__main__", "_version", "api", "sklearn"]
    for names in LAYERS[1:-1]:
        for name in names:
            assert (ROOT / "evocov_core" / name / "__init__.py").is_file(), name


def _core_imports(files: list[Path]) -> set[str]:
    """The ``evocov_core`` modules that these files import (every import statement, deferred ones too)."""
    found: set[str] = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("evocov_core"):
                found.add(node.module or "")
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("evocov_core"))
    return found


def test_the_dashboard_imports_public_names_of_the_core_by_their_module():
    """The dashboard imports the core's public modules by name, and only the names each declares public
    (its ``__all__``): never a ``_``-name, never through a re-export table."""
    files = [*(ROOT / "dashboard").glob("*.py"), *(ROOT / "pages").glob("*.py"), ROOT / "app.py"]
    seen = 0
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("evocov_core")):
                continue
            where = f"{path.name}:{node.lineno}"
            assert not any(p.startswith("_") for p in node.module.split(".")), where
            module = importlib.import_module(node.module)
            public = set(getattr(module, "__all__", ()))
            for alias in node.names:
                seen += 1
                assert not alias.name.startswith("_"), f"{where}: {alias.name}"
                assert alias.name in public, f"{where}: {alias.name} is not in {node.module}.__all__"
    assert seen > 50  # the check sees the imports

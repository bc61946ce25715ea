"""The layers of stormatrix, checked from the modules' own imports (an AST pass, nothing is imported).

Every module of ``harness/``, ``analysis/`` and ``linux-host/`` belongs to exactly one layer of
:data:`LAYERS`, listed bottom to top. A module may import its own layer and the layers below; two
groups of the same rank (the backends and the executors; core and the host tools) may not import each
other. On top of that:

- no import cycle, counting imports inside functions too (a function-level import hides a cycle, it does
  not remove it);
- no function-level import of our own code, except a lazy load of a module that pulls pandas, numpy,
  scipy or openpyxl into a module that does not (so that ``stormatrix run`` or ``plan`` starts without
  them), found from the imports themselves, and the command line's entry point (:data:`LATE_IMPORTERS`,
  with the reason);
- ``core`` and the host tools (``linux-host/``, copied to Proxmox nodes) use the standard library only,
  and the host tools nothing of stormatrix;
- inside analysis, the pipeline's stages point one way (:data:`ANALYSIS_STAGES`): ``read/`` imports neither
  ``score/`` nor ``write/``, ``score/`` imports ``read/`` but not ``write/``, and no stage imports the report
  modules beside them (``comparison_report``, ``efficiency_report``), which may import all three.

A new module must be placed in a layer here: an unplaced one fails the test, so the picture stays whole.
The checker is tested on small made-up trees below, so that each rule is seen to fail.
"""

from __future__ import annotations

import ast
import fnmatch
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import paths

ROOT = paths.ROOT

#: bottom to top: (rank, group, module patterns). Same rank, different group: neither may import the other.
LAYERS: list[tuple[int, str, tuple[str, ...]]] = [
    # the words every layer uses: model, errors, shared values (HostScope, BlockStats, GuestEndpoint), paths
    (0, "core", ("stormatrix", "stormatrix.core", "stormatrix.core.*")),
    # what runs on a hypervisor node (standard library only; analysis reads perf stat output with it)
    (0, "host", ("stormatrix.host", "stormatrix.host.*")),
    # pure functions over measurements and the workbook
    (1, "analysis", ("stormatrix.analysis", "stormatrix.analysis.*")),
    # tools that know no backend: the matrix schema, the TOML file reader, the spec and its cells, the Windows guest's
    # driver rules, secrets, ssh, QMP, the journal, progress, the command's standard streams and signals
    (2, "tools", ("stormatrix.schema", "stormatrix.tomlfile", "stormatrix.spec", "stormatrix.cells",
                  "stormatrix.guestdrivers", "stormatrix.secrets", "stormatrix.ssh", "stormatrix.qmp",
                  "stormatrix.journal", "stormatrix.progress", "stormatrix.guestimage", "stormatrix.repeats",
                  "stormatrix.console", "stormatrix.runorder", "stormatrix.safety")),
    # the worker fleet's parts that know no backend: its journal and the one replay of its typed records, what every
    # [fleet] shares
    (3, "fleet", ("stormatrix.fleet", "stormatrix.fleet.journal", "stormatrix.fleet.records",
                  "stormatrix.fleet.spec")),
    # the contracts a backend and an executor fulfil, the collectors and the records they feed
    (4, "contracts", ("stormatrix.backends", "stormatrix.backends.base", "stormatrix.executors",
                      "stormatrix.executors.base", "stormatrix.collect", "stormatrix.records")),
    (5, "backends", ("stormatrix.backends.*",)),
    (5, "executors", ("stormatrix.executors.*",)),
    # a suite of guests (the [suite] section, the side's guests as a platform gives them: by address, a VM list,
    # the qemu backend's local guests (they read the local agent's READY and probe fio servers, so they sit here,
    # above the executors), and the [fleet] that deploys them, typed as the registry hands it out: fleet.interface);
    # a backend's package spans this layer and the run loop's by module: its fleet and suite guests are listed here
    # by name
    (6, "suite", ("stormatrix.suite", "stormatrix.suiteguests", "stormatrix.backends.qemu.guests",
                  "stormatrix.fleet.template", "stormatrix.fleet.interface", "stormatrix.backends.proxmox.vms",
                  "stormatrix.backends.proxmox.vmcollector",
                  "stormatrix.backends.proxmox.fleetspec", "stormatrix.backends.proxmox.fleetplan",
                  "stormatrix.backends.proxmox.fleet",
                  "stormatrix.backends.vmware.fleet")),
    # the one list of backends, executors and sections
    (7, "registry", ("stormatrix.registry",)),
    # the run loop
    (8, "runner", ("stormatrix.window", "stormatrix.runner", "stormatrix.pipeline", "stormatrix.runsource",
                   "stormatrix.resume", "stormatrix.suiterun", "stormatrix.demosuite",
                   "stormatrix.fleet.suiterun", "stormatrix.backends.proxmox.fleetsuite",
                   "stormatrix.backends.vmware.fleetsuite", "stormatrix.backends.qemu.fleetsuite")),
    # the command line
    (9, "commands", ("stormatrix.cli", "stormatrix.__main__", "stormatrix.commands", "stormatrix.commands.*")),
]

#: modules that import the rest of stormatrix late on purpose, and why
LATE_IMPORTERS: dict[str, str] = {
    "stormatrix.cli": "installs the signal handlers and the stdout guard (console.py) before anything else is "
                      "imported, so that a Ctrl-C or a closed stdout during the imports is handled too",
}

#: third-party libraries whose import costs seconds; a module importing them may be loaded late
HEAVY = frozenset({"pandas", "numpy", "scipy", "openpyxl"})

#: groups that may use the standard library only
STDLIB_ONLY = frozenset({"core", "host"})

#: known cycles, each with the issue that removes it (tolerated with their own late imports): none now
ALLOWED_CYCLES: frozenset[frozenset[str]] = frozenset()

#: the folders whose packages (or single modules) are reached through the registry only: a backend's, an executor's
OWNED_ROOTS = ("stormatrix.backends", "stormatrix.executors")
#: what under those folders is a contract every package fulfils, not a package of its own
CONTRACTS = frozenset({"base"})
REGISTRY = "stormatrix.registry"

#: who imports a backend's or an executor's package from outside it, besides the registry, and why:
#: (importer pattern, imported module pattern) -> reason. An exception that excuses no import fails the test.
REGISTRY_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("stormatrix.*", "stormatrix.executors.fioserver.inputs"):
        "the suite's words: a guest's fio server (FioGuest, its default port) and a point's fio job (FioJob), which "
        "the suite, every platform's suite guests and fleet, the workers' template and the local agent speak",
    ("stormatrix.suiterun", "stormatrix.executors.fioserver.executor"):
        "a suite's executor is the fio-server executor, extended by suiterun.SuiteExecutor for many guests at once",
    ("stormatrix.commands.guest", "stormatrix.executors.winrm.*"):
        "`stormatrix guest check` is the WinRM executor's own command (a Windows guest's Pester validation)",
    ("stormatrix.backends.qemu.guests", "stormatrix.executors.localagent"):
        "the local fleet's guests report READY through the local agent's channel, as a matrix run's guest does",
    ("stormatrix.backends.qemu.guests", "stormatrix.executors.fioserver.probe"):
        "the local fleet's guests' fio servers are probed as they boot",
}


#: the analysis pipeline's stages, first to last: a stage may import its own and the earlier ones. Every other
#: module of the package (``stormatrix.analysis`` itself, the report modules beside the stages) is above them all.
ANALYSIS = "stormatrix.analysis"
ANALYSIS_STAGES = ("read", "score", "write")


@dataclass
class Imp:
    """One import statement's target, as a module of ours (or a third-party top-level name)."""

    source: str
    target: str
    line: int
    in_function: bool = False
    type_only: bool = False


@dataclass
class Graph:
    modules: dict[str, Path] = field(default_factory=dict)
    imports: list[Imp] = field(default_factory=list)  # of our own modules
    external: list[Imp] = field(default_factory=list)  # of anything else, by top-level name


def package_dirs(root: Path) -> dict[str, str]:
    """folder -> package, as pyproject.toml maps them (``harness`` -> ``stormatrix``)."""
    config = tomllib.loads((root / "pyproject.toml").read_text())
    return {folder: pkg for pkg, folder in config["tool"]["setuptools"]["package-dir"].items()}


def module_name(folder_pkg: str, rel: Path) -> str:
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([folder_pkg, *parts])


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def read_graph(root: Path, folders: dict[str, str]) -> Graph:
    graph = Graph()
    sources: dict[str, ast.Module] = {}
    for folder, pkg in folders.items():
        for path in sorted((root / folder).rglob("*.py")):
            name = module_name(pkg, path.relative_to(root / folder))
            graph.modules[name] = path
            sources[name] = ast.parse(path.read_text(), str(path))
    for name, tree in sources.items():
        is_pkg = graph.modules[name].name == "__init__.py"
        _walk(graph, name, is_pkg, tree.body, in_function=False, type_only=False)
    return graph


def _walk(graph: Graph, name: str, is_pkg: bool, body: list[ast.stmt], *, in_function: bool, type_only: bool) -> None:
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for target in _targets(graph, name, is_pkg, node):
                imp = Imp(name, target, node.lineno, in_function, type_only)
                (graph.imports if target in graph.modules else graph.external).append(imp)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _walk(graph, name, is_pkg, node.body, in_function=True, type_only=type_only)
        elif isinstance(node, ast.If):
            _walk(graph, name, is_pkg, node.body, in_function=in_function,
                  type_only=type_only or _is_type_checking(node.test))
            _walk(graph, name, is_pkg, node.orelse, in_function=in_function, type_only=type_only)
        else:
            for child in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, child, None)
                if isinstance(inner, list):
                    stmts = [s for s in inner if isinstance(s, ast.stmt)]
                    for handler in (h for h in inner if isinstance(h, ast.ExceptHandler)):
                        stmts.extend(handler.body)
                    _walk(graph, name, is_pkg, stmts, in_function=in_function, type_only=type_only)


def _targets(graph: Graph, name: str, is_pkg: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import statement loads: ours by full name, others by their top-level name."""
    if isinstance(node, ast.Import):
        return [_ours(graph, a.name, name) for a in node.names]
    if node.level:
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        module = ".".join(base + ([node.module] if node.module else []))
    else:
        module = node.module or ""
    out = []
    for alias in node.names:  # ``from pkg import mod`` loads pkg.mod; ``from mod import name`` loads mod
        sub = f"{module}.{alias.name}"
        out.append(sub if sub in graph.modules else _ours(graph, module, "" if node.level else name))
    return out


def _ours(graph: Graph, dotted: str, importer: str = "") -> str:
    """``dotted`` as a module of ours when it is one; a script's import of a file next to it (``import
    perfstat`` in ``linux-host/``, run on a node) is that sibling; anything else by its top-level name."""
    sibling = f"{importer.rpartition('.')[0]}.{dotted}"
    if importer and dotted.split(".")[0] not in sys.stdlib_module_names and sibling in graph.modules:
        return sibling
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in graph.modules:
            return ".".join(parts[:n])
    return parts[0]


def layer_of(module: str, layers: list[tuple[int, str, tuple[str, ...]]]) -> tuple[int, str] | None:
    """The most specific layer whose pattern matches (an exact name beats a ``.*`` pattern)."""
    exact = [(rank, group) for rank, group, pats in layers if module in pats]
    if exact:
        return exact[0]
    for rank, group, pats in layers:
        if any(fnmatch.fnmatchcase(module, p) for p in pats if "*" in p):
            return rank, group
    return None


def heavy_modules(graph: Graph) -> set[str]:
    """Modules whose import (module level, at run time) loads a HEAVY library, directly or through ours."""
    heavy = {i.source for i in graph.external if i.target in HEAVY and not i.in_function and not i.type_only}
    edges = [(i.source, i.target) for i in graph.imports if not i.in_function and not i.type_only]
    changed = True
    while changed:
        changed = False
        for src, dst in edges:
            if dst in heavy and src not in heavy:
                heavy.add(src)
                changed = True
    return heavy


def find_cycles(graph: Graph) -> list[list[str]]:
    """Strongly connected components of more than one module (run-time imports, function level included)."""
    adj: dict[str, set[str]] = {m: set() for m in graph.modules}
    for i in graph.imports:
        if not i.type_only and i.source != i.target:
            adj[i.source].add(i.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan, iterative enough for a few hundred modules
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(adj[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(adj) + 100))
    try:
        for v in sorted(adj):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


def problems(graph: Graph, layers: list[tuple[int, str, tuple[str, ...]]],
             allowed_cycles: frozenset[frozenset[str]] = frozenset(),
             late_importers: dict[str, str] | None = None) -> list[str]:
    """Every breach of the rules in the module docstring, one sentence each (empty: the layers hold)."""
    out: list[str] = []
    late_importers = late_importers or {}
    where = {m: layer_of(m, layers) for m in graph.modules}
    out += [f"{m} ({graph.modules[m]}) is in no layer: add it to LAYERS" for m, lay in sorted(where.items())
            if lay is None]
    for i in graph.imports:
        src, dst = where[i.source], where[i.target]
        if src is None or dst is None or i.source == i.target:
            continue
        if dst[0] > src[0] or (dst[0] == src[0] and dst[1] != src[1]):
            out.append(f"{i.source}:{i.line} imports {i.target}: layer {src[1]} may not import layer {dst[1]}")
    heavy = heavy_modules(graph)
    for i in graph.imports:
        if i.in_function and not i.type_only and i.source != i.target:
            if i.target in heavy and i.source not in heavy:
                continue  # a lazy load that keeps pandas & co. out of a light module
            if any({i.source, i.target} <= pair for pair in allowed_cycles):
                continue  # the known cycle's own late import
            if i.source in late_importers:
                continue
            out.append(f"{i.source}:{i.line} imports {i.target} inside a function: import it at the top "
                       "(only a module pulling pandas/numpy/scipy/openpyxl may be loaded late, by a light one)")
    for comp in find_cycles(graph):
        if frozenset(comp) not in allowed_cycles:
            out.append(f"import cycle: {' <-> '.join(comp)}")
    for i in graph.external:
        lay = where.get(i.source)
        if lay and lay[1] in STDLIB_ONLY and i.target not in sys.stdlib_module_names and i.target != "__future__":
            out.append(f"{i.source}:{i.line} imports {i.target}: layer {lay[1]} uses the standard library only")
    for i in graph.imports:
        lay = where.get(i.source)
        if lay and lay[1] == "host" and where.get(i.target, (0, ""))[1] != "host":
            out.append(f"{i.source}:{i.line} imports {i.target}: the host tools run on a node without stormatrix")
    return out


def owner(module: str, roots: tuple[str, ...] = OWNED_ROOTS, contracts: frozenset[str] = CONTRACTS) -> str | None:
    """The backend's or executor's package (or single module) ``module`` belongs to; None outside them."""
    for root in roots:
        if module.startswith(root + "."):
            first = module[len(root) + 1:].split(".")[0]
            return None if first in contracts else f"{root}.{first}"
    return None


def registry_only(graph: Graph, exceptions: dict[tuple[str, str], str], registry: str = REGISTRY,
                  roots: tuple[str, ...] = OWNED_ROOTS, contracts: frozenset[str] = CONTRACTS) -> list[str]:
    """Outside a backend's or an executor's package only the registry imports it (type-only imports too: a name
    another layer needs belongs to a contract); each other import is one of ``exceptions``, all of which are used."""
    out: list[str] = []
    used: set[tuple[str, str]] = set()
    for i in graph.imports:
        target = owner(i.target, roots, contracts)
        if target is None or i.source == registry or owner(i.source, roots, contracts) == target:
            continue
        excuse = [k for k in exceptions if fnmatch.fnmatchcase(i.source, k[0]) and fnmatch.fnmatchcase(i.target, k[1])]
        used.update(excuse)
        if not excuse:
            out.append(f"{i.source}:{i.line} imports {i.target}: only {registry} imports a backend's or an executor's "
                       "package (name the class there), or list the import in REGISTRY_EXCEPTIONS with its reason")
    out += [f"REGISTRY_EXCEPTIONS {k} excuses no import: remove it" for k in exceptions if k not in used]
    return out


def stage_of(module: str, package: str = ANALYSIS,
             stages: tuple[str, ...] = ANALYSIS_STAGES) -> tuple[int, str] | None:
    """(order, name) of the stage ``module`` belongs to; the package's modules outside the stages come after them
    all (as "report"); None outside the package."""
    if module != package and not module.startswith(package + "."):
        return None
    first = module[len(package) + 1:].split(".")[0] if module != package else ""
    return (stages.index(first), first) if first in stages else (len(stages), "report")


def stage_problems(graph: Graph, root: Path, package: str = ANALYSIS,
                   stages: tuple[str, ...] = ANALYSIS_STAGES) -> list[str]:
    """Every import (module level, in a function, under TYPE_CHECKING alike) of a later stage by an earlier one,
    naming the importing file, its line and the module imported."""
    out: list[str] = []
    for i in graph.imports:
        src, dst = stage_of(i.source, package, stages), stage_of(i.target, package, stages)
        if src is None or dst is None or dst[0] <= src[0]:
            continue
        path = graph.modules[i.source]
        shown = path.relative_to(root) if path.is_relative_to(root) else path
        out.append(f"{shown}:{i.line} imports {i.target}: the {src[1]} stage may not import the {dst[1]} stage "
                   f"(move what both need into the {src[1]} stage)")
    return out


# --- the product --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def graph() -> Graph:
    return read_graph(ROOT, package_dirs(ROOT))


def test_the_layers_hold(graph: Graph) -> None:
    assert problems(graph, LAYERS, ALLOWED_CYCLES, LATE_IMPORTERS) == []


def test_only_the_registry_reaches_into_a_backend_or_an_executor(graph: Graph) -> None:
    assert registry_only(graph, REGISTRY_EXCEPTIONS) == []


def test_the_analysis_stages_point_one_way(graph: Graph) -> None:
    """read/ imports neither score/ nor write/, score/ not write/, no stage a report module (ANALYSIS_STAGES)."""
    assert stage_problems(graph, ROOT) == []
    stages = {stage_of(m) for m in graph.modules if m.startswith(ANALYSIS + ".")}
    assert {(0, "read"), (1, "score"), (2, "write"), (3, "report")} <= stages


def test_every_folder_of_the_package_is_read(graph: Graph) -> None:
    """The walk sees what setuptools installs: all three folders, and a plausible number of modules."""
    folders = package_dirs(ROOT)
    assert set(folders) == {"harness", "analysis", "linux-host"}
    for pkg in folders.values():
        assert pkg in graph.modules
    assert len(graph.modules) > 100
    assert len(graph.imports) > 300


def test_the_heavy_libraries_stay_out_of_the_run_path(graph: Graph) -> None:
    """What ``stormatrix run`` and ``plan`` load never loads pandas: the exemption above is used for that."""
    heavy = heavy_modules(graph)
    for light in ("stormatrix.cli", "stormatrix.runner", "stormatrix.registry", "stormatrix.spec",
                  "stormatrix.records", "stormatrix.commands.run", "stormatrix.commands.plan"):
        assert light not in heavy, light
    assert "stormatrix.analysis.write.workbook" in heavy


# --- the checker, on made-up trees: each rule can fail ----------------------------------------------------------

TOY_LAYERS: list[tuple[int, str, tuple[str, ...]]] = [
    (0, "core", ("toy", "toy.core")),
    (1, "low", ("toy.low", "toy.low2")),
    (2, "side_a", ("toy.a",)),
    (2, "side_b", ("toy.b",)),
    (3, "high", ("toy.high",)),
]


def toy(tmp_path: Path, files: dict[str, str]) -> Graph:
    for name, text in {"__init__.py": "", "core.py": "", **files}.items():
        (tmp_path / "toy" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "toy" / name).write_text(text)
    return read_graph(tmp_path, {"toy": "toy"})


def test_a_clean_toy_passes(tmp_path: Path) -> None:
    g = toy(tmp_path, {"low.py": "from . import core\n", "high.py": "from .low import x\nfrom . import a, b\n",
                       "a.py": "from .core import y\n", "b.py": "", "low2.py": "import toy.low\n"})
    assert problems(g, TOY_LAYERS) == []


def test_an_upward_import_is_found(tmp_path: Path) -> None:
    g = toy(tmp_path, {"low.py": "from .high import x\n", "high.py": ""})
    assert problems(g, TOY_LAYERS) == ["toy.low:1 imports toy.high: layer low may not import layer high"]


def test_a_sibling_import_is_found(tmp_path: Path) -> None:
    g = toy(tmp_path, {"a.py": "from .b import x\n", "b.py": ""})
    assert problems(g, TOY_LAYERS) == ["toy.a:1 imports toy.b: layer side_a may not import layer side_b"]


def test_a_cycle_hidden_in_a_function_is_found(tmp_path: Path) -> None:
    g = toy(tmp_path, {"low.py": "from . import low2\n", "low2.py": "def f():\n    from . import low\n"})
    found = problems(g, TOY_LAYERS)
    assert "import cycle: toy.low <-> toy.low2" in found
    assert any("toy.low2:2 imports toy.low inside a function" in p for p in found)
    # an allowed cycle is tolerated with its own late import
    assert problems(g, TOY_LAYERS, frozenset({frozenset({"toy.low", "toy.low2"})})) == []


def test_a_late_import_is_allowed_only_for_a_heavy_module(tmp_path: Path) -> None:
    g = toy(tmp_path, {"low.py": "import pandas\n", "low2.py": "",
                       "high.py": "def f():\n    from . import low\n\ndef g():\n    from . import low2\n"})
    assert problems(g, TOY_LAYERS) == [
        "toy.high:5 imports toy.low2 inside a function: import it at the top (only a module pulling "
        "pandas/numpy/scipy/openpyxl may be loaded late, by a light one)"]


def test_type_checking_imports_count_for_layers_not_for_cycles(tmp_path: Path) -> None:
    g = toy(tmp_path, {"low.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .high import H\n",
                       "high.py": "from .low import x\n"})
    assert problems(g, TOY_LAYERS) == ["toy.low:3 imports toy.high: layer low may not import layer high"]


def test_an_unplaced_module_and_a_third_party_import_in_core_are_found(tmp_path: Path) -> None:
    g = toy(tmp_path, {"core.py": "import json\nimport requests\n", "stray.py": ""})
    found = problems(g, TOY_LAYERS)
    assert any(p.startswith("toy.stray ") and "is in no layer" in p for p in found)
    assert "toy.core:2 imports requests: layer core uses the standard library only" in found
    assert not any("json" in p for p in found)


def test_an_import_of_a_later_analysis_stage_is_found(tmp_path: Path) -> None:
    g = toy(tmp_path, {"read/__init__.py": "", "read/rows.py": "from ..score.split import f\n",
                       "read/late.py": "def g():\n    from ..write import sheets\n",
                       "read/ok.py": "from . import rows\n",
                       "score/__init__.py": "", "score/split.py": "from ..read.ok import x\n",
                       "score/typed.py": "from typing import TYPE_CHECKING\n"
                                         "if TYPE_CHECKING:\n    from ..report import R\n",
                       "write/__init__.py": "",
                       "write/sheets.py": "from ..score import split\nfrom ..read import rows\n",
                       "report.py": "from .write import sheets\nfrom .score import split\n"})
    found = stage_problems(g, tmp_path, "toy")
    assert found == [
        "toy/read/late.py:2 imports toy.write.sheets: the read stage may not import the write stage (move what both "
        "need into the read stage)",
        "toy/read/rows.py:1 imports toy.score.split: the read stage may not import the score stage (move what both "
        "need into the read stage)",
        "toy/score/typed.py:3 imports toy.report: the score stage may not import the report stage (move what both "
        "need into the score stage)"]


def test_an_import_of_a_backend_past_the_registry_is_found(tmp_path: Path) -> None:
    g = toy(tmp_path, {"backends/__init__.py": "", "backends/base.py": "", "backends/a/__init__.py": "",
                       "backends/a/x.py": "from . import y\nfrom ..base import B\n", "backends/a/y.py": "",
                       "executors/__init__.py": "", "executors/e.py": "",
                       "registry.py": "from .backends.a import x\nfrom .executors import e\n",
                       "user.py": "from .backends.base import B\nfrom .backends.a.y import Y\nimport toy.executors.e\n"})
    roots, contracts = ("toy.backends", "toy.executors"), frozenset({"base"})
    found = registry_only(g, {}, "toy.registry", roots, contracts)
    assert found == [
        "toy.user:2 imports toy.backends.a.y: only toy.registry imports a backend's or an executor's package (name the "
        "class there), or list the import in REGISTRY_EXCEPTIONS with its reason",
        "toy.user:3 imports toy.executors.e: only toy.registry imports a backend's or an executor's package (name the "
        "class there), or list the import in REGISTRY_EXCEPTIONS with its reason"]
    # an exception with its reason excuses what it names, and one that excuses nothing is found
    excused = {("toy.user", "toy.backends.a.*"): "why", ("toy.user", "toy.executors.e"): "why",
               ("toy.other", "toy.executors.*"): "stale"}
    assert registry_only(g, excused, "toy.registry", roots, contracts) == [
        "REGISTRY_EXCEPTIONS ('toy.other', 'toy.executors.*') excuses no import: remove it"]

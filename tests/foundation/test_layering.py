"""The checkout's import structure: no cycles, no upward imports, one family layout, the Dask list.

Every import is read from the source with :mod:`ast` — module-level, function-level and
``TYPE_CHECKING`` ones alike — so a cycle hidden behind a function-level import is still a cycle.
The layers (docs/architecture.md, "Layers"), lowest first; a module may import its own layer and
the layers below it, never one above:

===========  ===================================================================================
foundation   errors, rcompat, config_io, worker_log, results, row_params, gates, lock, fingerprint, data/,
             datasets/, rmodels/ (the R model ports)
contract     evaluation/ (EvalData, Executor, Params/Measure/Result), blocks
families     profile, risk/*/, utility/, compare_fit/, synth/, measures, synthesisers (the registries)
report       report/
task         tasks, store, privacy_ledger, cluster (what a run reads and the history it writes)
run          runner, run/, nightly
cli          cli
scripts      benchmarks/, tests/, dev.py (nothing in the package imports them)
===========  ===================================================================================

The cycle and layer checks read the whole checkout (the package, benchmarks/, tests/, dev.py);
a bare ``import harness`` of a script resolves to the file beside it or in benchmarks/ or tests/.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pipeline"

#: module-name prefix -> layer (the longest matching prefix wins)
LAYERS = {
    "pipeline": 0,
    "pipeline.errors": 0,
    "pipeline.rcompat": 0,
    "pipeline.config_io": 0,
    "pipeline.worker_log": 0,
    "pipeline.notices": 0,
    "pipeline.interrupts": 0,
    "pipeline.kernel_cache": 0,
    "pipeline.lazy": 0,
    "pipeline.results": 0,
    "pipeline.row_params": 0,
    "pipeline.gates": 0,
    "pipeline.lock": 0,
    "pipeline.fingerprint": 0,
    "pipeline.data": 0,
    "pipeline.datasets": 0,
    "pipeline.rmodels": 0,
    "pipeline.evaluation": 1,
    "pipeline.blocks": 1,
    "pipeline.profile": 2,
    "pipeline.profile_section": 2,
    "pipeline.risk": 2,
    "pipeline.utility": 2,
    "pipeline.compare_fit": 2,
    "pipeline.synth": 2,
    "pipeline.measures": 2,
    "pipeline.synthesisers": 2,
    "pipeline.report": 3,
    "pipeline.tasks": 4,
    "pipeline.store": 4,
    "pipeline.privacy_ledger": 4,
    "pipeline.cluster": 4,
    "pipeline.runner": 5,
    "pipeline.run": 5,
    "pipeline.nightly": 5,
    "pipeline.cli": 6,
    "benchmarks": 7,
    "tests": 7,
    "dev": 7,
}
LAYER_NAMES = ["foundation", "contract", "families", "report", "task", "run", "cli", "scripts"]
#: the checkout's Python outside the package: scripts and tests, above every layer of it
SCRIPTS = [ROOT / "benchmarks", ROOT / "tests", ROOT / "dev.py"]

#: the measure family directories; each has the files of :data:`FAMILY_FILES`, plus its kernels
FAMILIES = [
    "pipeline/risk/disclosure",
    "pipeline/risk/idrisk",
    "pipeline/risk/distance",
    "pipeline/risk/attacks",
    "pipeline/risk/sdcrisk",
    "pipeline/utility",
    "pipeline/compare_fit",
]
#: the files every family has, by role (docs/contributing.md, "Add a family")
FAMILY_FILES = {
    "__init__.py": "the public names",
    "params.py": "the pydantic Params models (the only validation)",
    "measure.py": "the Measure classes",
    "api.py": "the synthpop-named wrappers only",
    "result.py": "the Result classes",
    "compute.py": "the evaluation composed from kernels and executor primitives",
    "plots.py": "the family's figures, fed by tidy rows or results",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    """The package's modules by name."""
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


@cache
def checkout_modules() -> dict[str, Path]:
    """Every Python module of the checkout by name: the package's, benchmarks/, tests/ and dev.py."""
    scripts = [p for s in SCRIPTS for p in ([s] if s.is_file() else sorted(s.rglob("*.py")))]
    return {**modules(), **{_module_name(p): p for p in scripts}}


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The module an imported name lives in (``a.b.C`` -> ``a.b``), None outside ``known``."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _script_module(name: str, module: str) -> str | None:
    """A script's or test's bare import (``harness``, ``conftest``, ``reference``, ``tests.x``): the
    module beside it, else in benchmarks/ or tests/ (the folders they put on ``sys.path``)."""
    known = checkout_modules()
    here = module.rpartition(".")[0]
    for candidate in (name, f"{here}.{name}" if here else name, f"benchmarks.{name}", f"tests.{name}"):
        found = _resolve(candidate, known)
        if found is not None and found.split(".")[0] in ("benchmarks", "tests", "dev"):
            return found
    return None


def imported(module: str, known: dict[str, Path] | None = None) -> Iterator[tuple[str, int]]:
    """Every module of ``known`` (default: the package) that ``module`` imports, at any level of
    its source, with the line."""
    known = modules() if known is None else known
    path = known[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            # ``from pkg import module`` imports the module; ``from module import name`` the module
            targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in known else source for a in node.names]
        else:
            continue
        for target in targets:
            if target.split(".")[0] == "pipeline":
                resolved = _resolve(target, known)
            elif known is modules():
                resolved = None
            else:
                resolved = _script_module(target, module)
            if resolved is not None and resolved != module:
                yield resolved, node.lineno


@cache
def graph() -> dict[str, set[str]]:
    """The package's imports."""
    return {m: {t for t, _ in imported(m)} for m in modules()}


@cache
def checkout_graph() -> dict[str, set[str]]:
    """The whole checkout's imports (the package, benchmarks/, tests/, dev.py)."""
    known = checkout_modules()
    return {m: {t for t, _ in imported(m, known)} for m in known}


def layer(module: str) -> int:
    prefixes = [p for p in LAYERS if module == p or module.startswith(p + ".")]
    assert prefixes, f"{module} has no layer: add it to LAYERS here and to docs/architecture.md"
    return LAYERS[max(prefixes, key=len)]


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_the_import_reader_sees_function_level_imports() -> None:
    # the run folder imports the report inside the function that writes it: still an edge
    assert "pipeline.report.html" in graph()["pipeline.run.folder"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_import_reader_resolves_the_scripts_imports() -> None:
    # benchmarks import the harness beside them; tests import benchmarks' modules, their own
    # helpers (relative, bare and ``tests.``-qualified) and the package
    edges = checkout_graph()
    assert "benchmarks.harness" in edges["benchmarks.bench_attacks"]
    assert "benchmarks.harness" in edges["tests.benchmarks.test_bench_data"]
    assert "tests.utility.helpers" in edges["tests.utility.test_gen_reference"]
    assert "tests.reference" in edges["tests.conftest"]
    assert "pipeline.results" in edges["tests.foundation.test_json_rule"]


def test_no_import_cycles_in_the_whole_checkout() -> None:
    assert _cycles(checkout_graph()) == []


def test_no_upward_imports_in_the_whole_checkout() -> None:
    known = checkout_modules()
    upward = [
        f"{m}:{line} ({LAYER_NAMES[layer(m)]}) imports {t} ({LAYER_NAMES[layer(t)]})"
        for m in known
        for t, line in imported(m, known)
        if layer(t) > layer(m)
    ]
    assert upward == []


def _family(module: str) -> str | None:
    for family in FAMILIES:
        name = family.replace("/", ".")
        if module == name or module.startswith(name + "."):
            return name
    return None


def test_families_import_no_other_family_and_the_report_reads_only_their_plots() -> None:
    crossing = [
        f"{m} imports {t}"
        for m in modules()
        for t in graph()[m]
        if _family(t) is not None
        and _family(m) != _family(t)
        and not (m.startswith("pipeline.report.") and t.endswith(".plots"))
    ]
    assert crossing == []


def test_in_a_family_only_the_wrappers_import_the_measure() -> None:
    """``measure.py`` is imported by ``api.py`` (and the package ``__init__``), ``api.py`` by
    ``__init__`` only: params, results, compute, kernels and plots never reach up to them."""
    wrong = []
    for family in FAMILIES:
        name = family.replace("/", ".")
        allowed = {f"{name}.measure": {f"{name}.api", name}, f"{name}.api": {name}}
        for m in modules():
            for t in graph()[m]:
                if t in allowed and m not in allowed[t]:
                    wrong.append(f"{m} imports {t}")
    assert wrong == []


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_directory_has_the_same_files(family: str) -> None:
    files = {p.name for p in (ROOT / family).glob("*.py")}
    assert set(FAMILY_FILES) <= files, f"{family} lacks {sorted(set(FAMILY_FILES) - files)}"


def _defines(path: Path, base: str) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        n.name
        for n in tree.body
        if isinstance(n, ast.ClassDef) and any(getattr(b, "id", getattr(b, "attr", "")) == base for b in n.bases)
    ]


@pytest.mark.parametrize("family", FAMILIES)
def test_the_family_files_hold_what_their_names_say(family: str) -> None:
    directory = ROOT / family
    assert _defines(directory / "params.py", "Params")
    assert _defines(directory / "measure.py", "Measure") or _defines(directory / "measure.py", "_UtilityMeasure")
    assert _defines(directory / "result.py", "Result")
    api = ast.parse((directory / "api.py").read_text(encoding="utf-8"))
    assert [type(n).__name__ for n in api.body if isinstance(n, ast.ClassDef)] == [], "api.py holds wrappers only"
    # every Measure / Params class of the family lives in its measure.py / params.py
    for path in directory.glob("*.py"):
        if path.name not in ("measure.py", "__init__.py"):
            assert not _defines(path, "Measure"), f"{path.name} defines a Measure"
        if path.name != "params.py":
            assert not _defines(path, "Params"), f"{path.name} defines a Params model"


def _documented_dask_modules() -> set[str]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    line = next(ln for ln in text.splitlines() if ln.startswith("Dask-importing modules:"))
    return set(re.findall(r"`([\w/.]+\.py)`", line))


def test_the_documented_dask_modules_are_the_true_list() -> None:
    dask = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            if any(n.split(".")[0] in ("dask", "distributed") for n in names):
                dask.add(path.relative_to(PACKAGE).as_posix())
    assert _documented_dask_modules() == dask

"""The house rules the code itself can check: no import circles anywhere in clspmv/ (imports
inside functions count; those under ``if TYPE_CHECKING:`` do not, they never run), and no module
above 400 lines unless its docstring says why."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "clspmv"
MAX_LINES = 400



def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Every Import / ImportFrom node, at any depth, except under ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _type_checking_only(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (relative imports resolved;
    ``from . import x`` counts as importing the submodule ``x`` when it is one)."""
    package = root.name
    paths = {module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in paths}
    for name, path in paths.items():
        is_package = path.name == "__init__.py"
        here = name.split(".") if is_package else name.split(".")[:-1]
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    base = here[:len(here) - node.level + 1]
                    prefix = ".".join(base + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                targets = [f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in paths
                           else prefix for alias in node.names]
            for target in targets:
                while target and target not in paths:  # a name inside a module
                    target = target.rpartition(".")[0]
                if target and target.split(".")[0] == package and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
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
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles() -> None:
    graph = import_graph(ROOT)
    assert "clspmv.bench.runner" in graph and graph["clspmv.bench.runner"]
    assert cycles(graph) == []


def test_the_checker_finds_a_planted_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "clspmv"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..c import g\n")  # inside a function
    (pkg / "c.py").write_text("import clspmv.a\ndef g():\n    pass\n")
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from . import a\n")
    graph = import_graph(pkg)
    assert graph["clspmv.sub.b"] == {"clspmv.c"} and graph["clspmv.d"] == set()
    assert cycles(graph) == [["clspmv.a", "clspmv.c", "clspmv.sub.b"]]


def long_modules(root: Path) -> list[str]:
    """Modules above MAX_LINES lines whose docstring does not give a reason: a sentence naming
    the limit ("... above 400 lines because ...")."""
    out = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") <= MAX_LINES:
            continue
        doc = ast.get_docstring(ast.parse(text)) or ""
        if f"{MAX_LINES} lines" not in doc:
            out.append(path.relative_to(root.parent).as_posix())
    return out


def test_no_long_modules_without_a_reason(tmp_path: Path) -> None:
    assert long_modules(ROOT) == []
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "long.py").write_text('"""Long."""\n' + "x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "m" / "said.py").write_text(
        '"""Long: above 400 lines because it is one table."""\n' + "x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "m" / "baselines.py").write_text(  # "lines" alone is not a reason
        '"""The baselines."""\n' + "x = 1\n" * (MAX_LINES + 1))
    assert long_modules(tmp_path / "m") == ["m/baselines.py", "m/long.py"]


@pytest.mark.parametrize("module", ["clspmv.bench.runner", "clspmv.report.tables"])
def test_former_circles_are_gone(module: str) -> None:
    graph = import_graph(ROOT)
    assert not any(module in c for c in cycles(graph))

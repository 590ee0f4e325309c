"""No import circle among the project's modules: a module that imports another, directly or through others,
is never imported back by it. Every import counts, those made only for type checking or inside a function
included (an import moved into a function to dodge a circle hides it). Read from the source with ``ast``:
nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _modules(package: str) -> dict[str, Path]:
    out = {}
    for path in (ROOT / package).rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        out[name] = path
    return out


def _imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports: ``from package import module`` names the module, ``from module
    import thing`` the module; relative imports resolved."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in modules else base)
    return (found & modules.keys()) - {name}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_the_walk_finds_a_circle_when_there_is_one():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


@pytest.mark.parametrize("package", [p for p in ("airflow_sbcrawl", "sbcrawl_dev") if (ROOT / p).is_dir()])
def test_no_import_circle(package):
    modules = _modules(package)
    assert len(modules) > 10  # the walk found the package
    graph = {name: _imported(name, path, modules) for name, path in modules.items()}
    assert sum(map(len, graph.values())) > len(modules)  # and its imports
    assert _circles(graph) == []

"""Every public contract of the runtime package says in a docstring what it takes, gives and raises.

Read from the source (``ast``), so no optional dependency is imported. Checked:

- ``CHECKED``: every public class, function and method of these modules;
- ``CONTRACTS`` and ``CONTRACT_FOLDERS``: the classes other code implements or calls through (a policy, a
  state store, a sink, the hooks and operators), each class and its public methods;
- every public class of the runtime package.

Development tools (the simulator, benches, local infrastructure, the demo) live in ``sbcrawl_dev`` and
are not checked here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "airflow_sbcrawl"

#: Modules (files, or folders ending in "/") whose every public class, function and method is checked.
CHECKED = ("__init__.py", "report.py", "settings.py", "params.py", "tables/", "lake/")

#: Contract classes, (module, class): what other code implements or calls through.
CONTRACTS: tuple[tuple[str, str], ...] = (
    ("crawler/policies/base.py", "Policy"),
    ("crawler/state.py", "StateStore"),
    ("crawler/sinks.py", "Sink"),
)

#: Folders whose public classes are all contracts (Airflow hooks and operators).
CONTRACT_FOLDERS = ("hooks/", "operators/")


def _modules(prefix: str) -> list[str]:
    """Runtime modules under ``prefix`` (a file, a folder ending in "/", or "" for the whole package), relative
    to the package."""
    if prefix and not prefix.endswith("/"):
        return [prefix]
    return sorted(p.relative_to(PACKAGE).as_posix() for p in (PACKAGE / prefix).rglob("*.py"))


def _public(node: ast.AST) -> bool:
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and not node.name.startswith("_")


def undocumented(source: str, *, only_class: str | None = None, methods: bool = True,
                 functions: bool = True) -> list[str]:
    """Public definitions of ``source`` without a docstring, as "name" or "Class.method".

    ``only_class``: look at that class alone (and say so when it is not there); ``methods`` False checks
    classes but not their methods; ``functions`` False leaves module-level functions out.
    """
    tree = ast.parse(source)
    missing: list[str] = []
    nodes = [n for n in tree.body if _public(n) and (functions or isinstance(n, ast.ClassDef))]
    if only_class is not None:
        nodes = [n for n in nodes if isinstance(n, ast.ClassDef) and n.name == only_class]
        if not nodes:
            return [f"{only_class} (class not found: moved? update CONTRACTS)"]
    for node in nodes:
        if not ast.get_docstring(node):
            missing.append(node.name)
        if isinstance(node, ast.ClassDef) and methods:
            missing += [f"{node.name}.{m.name}" for m in node.body if _public(m) and not ast.get_docstring(m)]
    return missing


def _read(rel: str) -> str:
    return (PACKAGE / rel).read_text(encoding="utf-8")


@pytest.mark.parametrize("rel", [rel for prefix in CHECKED for rel in _modules(prefix)])
def test_public_definitions_of_checked_modules_have_docstrings(rel):
    assert undocumented(_read(rel)) == [], f"airflow_sbcrawl/{rel}: public definitions without a docstring"


@pytest.mark.parametrize(("rel", "name"), [pytest.param(rel, name, id=f"{rel}:{name}") for rel, name in CONTRACTS])
def test_contract_classes_and_their_methods_have_docstrings(rel, name):
    assert undocumented(_read(rel), only_class=name) == [], f"airflow_sbcrawl/{rel}: {name}'s contract"


@pytest.mark.parametrize("folder", CONTRACT_FOLDERS)
def test_hooks_and_operators_document_their_classes_and_methods(folder):
    missing = {rel: m for rel in _modules(folder) if (m := undocumented(_read(rel), functions=False))}
    assert missing == {}, f"airflow_sbcrawl/{folder}: classes or methods without a docstring"


def test_every_public_class_of_the_runtime_package_has_a_docstring():
    missing = {rel: m for rel in _modules("") if (m := undocumented(_read(rel), methods=False, functions=False))}
    assert missing == {}, "public classes without a docstring"


def test_what_is_checked_exists():
    # A renamed module or folder must not leave the test checking nothing
    for prefix in (*CHECKED, *CONTRACT_FOLDERS, *(rel for rel, _ in CONTRACTS)):
        assert (PACKAGE / prefix).exists(), f"airflow_sbcrawl/{prefix} is gone: update tests/test_docstrings.py"
        assert _modules(prefix), prefix
    assert len(_modules("tables/")) >= 10  # the readers are walked too


def test_the_checker_finds_what_lacks_a_docstring():
    source = '''
class Documented:
    """Says what it is."""

    def said(self):
        """Says what it does."""

    def unsaid(self):
        pass

    def _private(self):
        pass


class Bare:
    pass


def told():
    """Told."""


def untold():
    return 1


def _helper():
    pass
'''
    assert undocumented(source) == ["Documented.unsaid", "Bare", "untold"]
    assert undocumented(source, methods=False) == ["Bare", "untold"]
    assert undocumented(source, functions=False) == ["Documented.unsaid", "Bare"]
    assert undocumented(source, only_class="Documented") == ["Documented.unsaid"]
    assert undocumented(source, only_class="Gone") == ["Gone (class not found: moved? update CONTRACTS)"]

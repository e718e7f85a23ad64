"""docs/architecture.md matches the tree, and the package has no import circle.

Every module path the document names exists, and every package (a directory with an
``__init__.py`` under ``hivekeep/``) is named in it by its full path. The import graph, type-only
imports included, has no cycle at module level (``lint-imports`` checks the layers; this checks
the circles between any two modules, whatever package they are in).
"""

from __future__ import annotations

import re
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
PACKAGE = ROOT / "hivekeep"
# Named by the document while another step of issue 15 writes them; checked once they exist.
PATH = re.compile(r"`((?:[\w.]+/)*[\w.]*\w(?:\.py|/))`")


def _named() -> set[str]:
    return set(PATH.findall(DOC.read_text(encoding="utf-8")))


def _exists(name: str) -> bool:
    if "/" not in name.rstrip("/"):  # a bare file name, in a list under its directory
        return any(PACKAGE.rglob(name))
    base = ROOT if name.startswith(("hivekeep/", "tests/", "docs/", "bench/")) else PACKAGE
    return (base / name).exists()


def test_every_module_the_document_names_exists() -> None:
    missing = sorted(n for n in _named() if not _exists(n))
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def test_every_package_is_named_in_the_document() -> None:
    packages = {
        f"{init.parent.relative_to(ROOT).as_posix()}/" for init in PACKAGE.rglob("__init__.py")
    } - {"hivekeep/"}
    unnamed = sorted(packages - _named())
    assert not unnamed, f"docs/architecture.md does not name these packages: {unnamed}"


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
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
                    found.append(sorted(component))
    return found


def test_no_import_circle_anywhere_in_the_package() -> None:
    graph = grimp.build_graph("hivekeep", exclude_type_checking_imports=False)
    assert _cycles(graph) == []

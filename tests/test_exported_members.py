"""The public façade: ``hivekeep.__all__`` is exactly its public names, each one loads, and every
type a ``Hive`` or ``Agent`` method takes or returns is among them (callers never import from
the modules below the façade)."""

from __future__ import annotations

import inspect
import subprocess
import sys
import typing
from types import UnionType
from typing import Any

import hivekeep
from hivekeep import Agent, Hive

EAGER = {"HivekeepError", "ValidationError", "BudgetError", "NotFound", "AgentNotFound"}
EAGER |= {"ConflictError", "EmbedderMismatch", "ProviderError", "StoreError", "HiveBusy"}


def test_all_is_sorted_and_names_the_lazy_table_and_the_errors() -> None:
    lazy = set(hivekeep._LAZY)
    assert set(hivekeep.__all__) == lazy | EAGER
    assert len(hivekeep.__all__) == len(set(hivekeep.__all__))
    assert dir(hivekeep) == sorted(hivekeep.__all__)


def test_every_exported_name_loads_from_the_module_that_defines_it() -> None:
    for name in hivekeep.__all__:
        value = getattr(hivekeep, name)
        module = hivekeep._LAZY.get(name, "hivekeep.errors")
        assert value is getattr(sys.modules[module], name), name


def _classes(hint: Any) -> set[type]:
    """The hivekeep classes named by a type hint (unions, generics and iterators unwrapped)."""
    if isinstance(hint, type):
        found = {hint} if hint.__module__.startswith("hivekeep") else set()
        return found
    if isinstance(hint, UnionType) or typing.get_origin(hint) is not None:
        return {c for arg in typing.get_args(hint) for c in _classes(arg)}
    return set()


def test_every_type_of_the_facade_methods_is_exported() -> None:
    exported = {getattr(hivekeep, name) for name in hivekeep.__all__}
    names = {name: getattr(hivekeep, name) for name in hivekeep.__all__}
    missing: set[str] = set()
    for cls in (Hive, Agent):
        for attr, member in inspect.getmembers(cls):
            if attr.startswith("_"):
                continue
            function = member.fget if isinstance(member, property) else member
            if not callable(function):
                continue
            module = sys.modules[cls.__module__]
            hints = typing.get_type_hints(function, vars(module), names)
            for hint in hints.values():
                missing |= {f"{c.__module__}.{c.__qualname__}" for c in _classes(hint)} - {
                    f"{e.__module__}.{e.__qualname__}" for e in exported if isinstance(e, type)
                }
    # ``KEEP`` is exported; its class is only the sentinel's type.
    allowed = {"hivekeep.store.base._Keep"}
    assert missing <= allowed, sorted(missing - allowed)


def test_the_facade_keeps_its_services_private(table_hive: Hive) -> None:
    public = {name for name in vars(table_hive) if not name.startswith("_")}
    assert public == {"settings", "store", "path", "events"}


def test_import_hivekeep_loads_no_service() -> None:
    code = (
        "import sys, hivekeep\nprint(sorted(m for m in sys.modules if m.startswith('hivekeep.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['hivekeep.errors']"

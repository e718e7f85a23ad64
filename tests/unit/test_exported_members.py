from __future__ import annotations

import pkgutil

import hivekeep


def test_all_lists_exactly_the_public_names() -> None:
    public = {name for name in dir(hivekeep) if not name.startswith("_")}
    modules = {m.name for m in pkgutil.iter_modules(hivekeep.__path__)}
    assert set(hivekeep.__all__) == public - modules


def test_every_error_has_one_root() -> None:
    errors = [
        getattr(hivekeep, n) for n in hivekeep.__all__ if n.endswith(("Error", "Found", "Mismatch"))
    ]
    assert all(issubclass(e, hivekeep.HivekeepError) for e in errors)

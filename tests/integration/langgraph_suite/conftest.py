"""Fixtures for LangGraph's own store tests run against ``HivekeepStore`` (swap.py): a fresh
hive per store, and a runner for their ``async def`` tests (LangGraph runs them with
pytest-asyncio's auto mode, which this project does not use)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

from hivekeep import Hive, Settings
from hivekeep.providers.embeddings.local import LocalEmbedder
from tests.integration.langgraph_suite import swap


@pytest.fixture(autouse=True)
def hives(tmp_path: Path, local_embedder: LocalEmbedder) -> Iterator[None]:
    opened: list[Hive] = []

    def new_hive() -> Hive:
        hive = Hive(
            tmp_path / f"hive-{len(opened)}.db", embedder=local_embedder, settings=Settings()
        )
        opened.append(hive)
        return hive

    swap.OPENERS.append(new_hive)
    yield
    swap.OPENERS.remove(new_hive)
    for hive in opened:
        hive.close()


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    asyncio.run(pyfuncitem.obj(**{name: pyfuncitem.funcargs[name] for name in names}))
    return True

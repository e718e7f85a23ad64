"""The one change made to the SDK's memory-tool tests: ``BetaLocalFilesystemMemoryTool(base_path)``
builds a HivekeepMemoryTool on the same directory, for the agent ``assistant`` of the test's
hive (opened by conftest.py, outside the directory the tests look at)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from hivekeep import Hive
from hivekeep.integrations.anthropic_memory import HivekeepMemoryTool

_hives: list[Hive] = []


@contextmanager
def using(hive: Hive) -> Iterator[None]:
    """The hive the tools a test builds write to."""
    _hives.append(hive)
    try:
        yield
    finally:
        _hives.pop()


def BetaLocalFilesystemMemoryTool(
    base_path: str = "./memory",
) -> HivekeepMemoryTool:  # the SDK's name
    return HivekeepMemoryTool(_hives[-1].agent("assistant"), base_path)

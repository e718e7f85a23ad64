"""Runs the Anthropic SDK's own memory-tool tests (ported unchanged) against HivekeepMemoryTool:
each test gets a hive of its own, and the SDK's tests of its async backend, which hivekeep does
not replace, are left out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hivekeep import Hive
from tests.integration import ported_suites
from tests.integration.anthropic_memory_suite import hivekeep_tool


@pytest.fixture(autouse=True)
def hive_for_tools(hive: Hive) -> Iterator[None]:
    with hivekeep_tool.using(hive):
        yield


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        here = item.path.parent == Path(__file__).parent
        if here and "TestBetaAsyncLocalFilesystemMemoryTool" in item.nodeid:
            item.add_marker(pytest.mark.skip(reason="the SDK's async backend: not hivekeep's"))


COUNTS = ported_suites.PassCounts(
    {"test_filesystem.py": "The Anthropic SDK's memory-tool tests"}, "HivekeepMemoryTool"
)
pytest_runtest_logreport = COUNTS.logreport
pytest_terminal_summary = COUNTS.terminal_summary

"""What the conftests of the frameworks' own test suites, ported unchanged (``*_suite/``), share:
a runner for their ``async def`` tests (the frameworks run them with pytest-asyncio, which this
project does not use), and each suite's pass count at the end of the run, for CI's log."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run a coroutine test to its end in a fresh event loop."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    arguments: dict[str, Any] = {name: pyfuncitem.funcargs[name] for name in names}
    asyncio.run(pyfuncitem.obj(**arguments))
    return True


class PassCounts:
    """The outcome of each test function of some ported files (``suites``: file name to title),
    and the count of each file's outcomes, written at the end of the run. A conftest hands its
    two hooks to pytest: ``pytest_runtest_logreport = counts.logreport``, and so on."""

    def __init__(self, suites: dict[str, str], adapter: str) -> None:
        self.suites = suites
        self.adapter = adapter
        self.outcomes: dict[str, dict[str, set[str]]] = {}  # file: outcome: test functions

    def logreport(self, report: pytest.TestReport) -> None:
        """Each ported test's outcome by function (all its parameter cases: the worst one)."""
        path, _, name = report.nodeid.partition("::")
        suite = path.rpartition("/")[2]
        if suite not in self.suites or (report.when != "call" and not report.failed):
            return
        if hasattr(report, "wasxfail"):
            outcome = "xfailed"
        else:
            outcome = "passed" if report.passed else "failed"
        self.outcomes.setdefault(suite, {}).setdefault(outcome, set()).add(name.partition("[")[0])

    def terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        for suite, title in self.suites.items():
            outcomes = self.outcomes.get(suite)
            if not outcomes:
                continue
            failed = outcomes.get("failed", set())
            xfailed = outcomes.get("xfailed", set()) - failed
            passed = outcomes.get("passed", set()) - failed - xfailed
            total = len(passed | xfailed | failed)
            terminalreporter.write_line(
                f"{title} against {self.adapter}: {len(passed)} of {total} pass, "
                f"{len(xfailed)} known differences (xfail), {len(failed)} failed"
            )

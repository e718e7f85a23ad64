"""The framework adapters are optional: ``import hivekeep`` (and its façade) loads none of their
frameworks, and an adapter whose framework is missing says which extra installs it."""

from __future__ import annotations

import subprocess
import sys

import pytest

FRAMEWORKS = ("langgraph", "agents", "langchain_core")


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


def test_importing_hivekeep_and_its_facade_loads_no_framework() -> None:
    done = run(
        "import sys, hivekeep, hivekeep.integrations\n"
        "hivekeep.Hive, hivekeep.Agent, hivekeep.tool_schemas\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r}))\n"
        "print('anthropic.lib.tools' in sys.modules)"
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["[]", "False"]


@pytest.mark.parametrize(
    ("adapter", "framework", "extra"),
    [
        ("langgraph", "langgraph", "langgraph"),
        ("openai_agents", "agents", "openai-agents"),
        ("anthropic_memory", "anthropic.lib.tools", "anthropic-memory"),
    ],
)
def test_an_adapter_without_its_framework_names_the_extra(
    adapter: str, framework: str, extra: str
) -> None:
    done = run(
        f"import sys; sys.modules[{framework!r}] = None\n"  # what a missing package looks like
        f"import hivekeep.integrations.{adapter}"
    )

    assert done.returncode == 1
    assert f"pip install 'hivekeep[{extra}]'" in done.stderr
    assert f"from a clone of hivekeep: pip install '.[{extra}]'" in done.stderr

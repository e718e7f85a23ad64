"""Fixtures shared by the integration tests that need a chat model: the scripted one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hivekeep import Hive, Settings
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.testing import ScriptedLLM


@pytest.fixture
def llm() -> ScriptedLLM:
    """A scripted model (prepared replies, recorded prompts) with room for a few batches."""
    return ScriptedLLM(context_window=16_000)


@pytest.fixture
def scripted_hive(db_path: Path, local_embedder: LocalEmbedder, llm: ScriptedLLM) -> Iterator[Hive]:
    """A real hive file with the bundled model and ``llm`` as its chat model."""
    with Hive(db_path, embedder=local_embedder, settings=Settings(), llm=llm) as opened:
        yield opened

"""Export/import across backends: SQLite -> PostgreSQL -> SQLite carries everything, embeds nothing.

The source hive is the one ``test_transfer.py`` builds (two agents, private and shared memories,
profiles with a Pinned section, a chat with tool calls, compactions with folds, a merge and an
extracted memory), on a SQLite file with the real bundled embedder. Its export is imported into a
clean PostgreSQL schema, that hive is exported again and imported into a new SQLite file. At each
step the whole state (agents, settings, profiles, conversations with messages, summaries and
compaction records, memories with their dates, counts and exact vectors) and the recall results
for a fixed query set must equal the source's, and no memory may be embedded again.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hivekeep import Hive, Settings
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.testing import ScriptedLLM
from tests.integration.test_transfer import QUERIES, Counting, build_source, recalls, snapshot
from tests.postgres import postgres_url


def _same_vectors(got: list[np.ndarray | None], want: list[np.ndarray | None]) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        assert a is not None and b is not None
        np.testing.assert_array_equal(a, b)


def test_sqlite_to_postgres_to_sqlite_round_trip(
    tmp_path: Path, local_embedder: LocalEmbedder
) -> None:
    llm = ScriptedLLM(context_window=8192)
    first_export = tmp_path / "from-sqlite.jsonl"
    with Hive(tmp_path / "source.db", embedder=local_embedder, settings=Settings(), llm=llm) as src:
        build_source(src, llm)
        with first_export.open("w", encoding="utf-8") as out:
            src.export(out)
        want, want_vectors = snapshot(src)
        want_recalls = recalls(src)  # after the snapshot: recall counts retrievals
    assert len(want["memories"]) == 9 and want["conversations"]["sam"]
    assert all(any(hits) for hits in want_recalls.values())  # not a comparison of empty lists

    second_export = tmp_path / "from-postgres.jsonl"
    counting = Counting(local_embedder)
    with postgres_url() as url, Hive(url, embedder=counting, settings=Settings()) as pg:
        report = pg.import_(first_export)
        assert (report.vectors, report.memories_embedded, report.memories_pending) == (
            "reused",
            0,
            0,
        )
        assert counting.texts == 0  # nothing embedded: the file's vectors are stored as they are
        got, got_vectors = snapshot(pg)
        assert got == want
        _same_vectors(got_vectors, want_vectors)
        with second_export.open("w", encoding="utf-8") as out:
            pg.export(out)  # before recalling there, so the retrieval counts are the source's
        assert recalls(pg) == want_recalls
        assert counting.texts == len(QUERIES) * 2  # only the recall queries

    counting = Counting(local_embedder)
    with Hive(tmp_path / "back.db", embedder=counting, settings=Settings()) as back:
        report = back.import_(second_export)
        assert (report.vectors, report.memories_embedded) == ("reused", 0)
        assert counting.texts == 0
        got, got_vectors = snapshot(back)
        assert got == want
        _same_vectors(got_vectors, want_vectors)
        assert recalls(back) == want_recalls

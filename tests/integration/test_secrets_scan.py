"""``hivekeep secrets scan``: what an older hive already holds, found, redacted and purged."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from hivekeep import Hive, Settings
from hivekeep.cli import cli
from hivekeep.providers.embeddings.local import LocalEmbedder

TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
CARD = "4111 1111 1111 1111"


def _older_hive(db_path: Path, embedder: LocalEmbedder) -> None:
    """A hive written before the check: credentials in memories, versions, profile, trash."""
    with Hive(db_path, embedder=embedder, settings=Settings(secrets="allow")) as hive:
        sam = hive.create_agent("sam")
        kit = hive.create_agent("kit")
        memory = sam.memorize(f"CI token {TOKEN}", category="fact").memory
        sam.update_memory(memory.id, content="CI token is in the vault now")  # secret in v1
        sam.memorize(f"Card on file {CARD}", category="fact")
        gone = sam.memorize(f"old key {TOKEN}", category="fact").memory
        sam.forget(gone.id)
        sam.set_profile(f"## Ops\n- token {TOKEN}\n")
        kit.memorize("Kit likes tea", category="preference")


def _run(db_path: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["secrets", "scan", *args, "--db", str(db_path)])
    assert result.exit_code == 0, result.output
    return result.output


def test_scan_lists_then_redact_and_purge_fix_everything(
    db_path: Path, local_embedder: LocalEmbedder
) -> None:
    _older_hive(db_path, local_embedder)
    listed = json.loads(_run(db_path, "--json"))
    assert sorted((f["what"], tuple(f["kinds"])) for f in listed) == [
        ("memory", ("card number",)),
        ("memory version", ("GitHub token",)),
        ("profile", ("GitHub token",)),
        ("trash", ("GitHub token",)),
    ]
    assert not any(f["fixed"] for f in listed)
    assert "left as they are" in _run(db_path)  # the text form says what to run

    fixed = json.loads(_run(db_path, "--redact", "--json"))
    assert {f["what"] for f in fixed if f["fixed"]} == {"memory", "profile"}
    with Hive(db_path, embedder=local_embedder) as hive:
        sam = hive.get_agent("sam")
        texts = [m.content for m in sam.list_memories().memories]
        assert "Card on file [redacted card number]" in texts
        assert TOKEN not in sam.profile_text()
        # the old texts are still in history until a purge
        assert any(TOKEN in v["text"] for v in sam.profile_history())

    purged = json.loads(_run(db_path, "--purge-versions", "--json"))
    assert purged and all(f["fixed"] for f in purged)
    assert json.loads(_run(db_path, "--json")) == []
    assert "No credential found." in _run(db_path)
    with Hive(db_path, embedder=local_embedder) as hive:
        sam = hive.get_agent("sam")
        for memory in sam.list_memories().memories:
            assert all(TOKEN not in v["content"] for v in sam.memory_history(memory.id))
        assert all(TOKEN not in v["text"] for v in sam.profile_history())
        assert sam.trash().total == 0


def test_scan_one_agent_and_python(db_path: Path, local_embedder: LocalEmbedder) -> None:
    _older_hive(db_path, local_embedder)
    with Hive(db_path, embedder=local_embedder) as hive:
        assert hive.secrets.scan(["kit"]) == []
        assert {f.agent for f in hive.secrets.scan()} == {"sam"}

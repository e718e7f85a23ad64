"""Issue 25, item 1: a memory's private-era versions stay private when it is shared.

A version is readable by an agent only if that agent could see the memory when the version was
current: a private one by the memory's author (and a person, the admin path), a shared one by
everyone who sees the memory now. The same through Python, REST and the CLI, on both backends,
and after the author is deleted (then only a person reads the private versions).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result
from fastapi.testclient import TestClient

from hivekeep import Agent, Hive
from hivekeep.cli import cli
from hivekeep.errors import NotFound, ValidationError
from hivekeep.server import create_app
from hivekeep.store.base import PERSON
from hivekeep.types import Scope

PIN = "4921"


@pytest.fixture
def client(backend_hive: Hive) -> Iterator[TestClient]:
    with TestClient(create_app(backend_hive), base_url="http://127.0.0.1") as opened:
        yield opened


def _pin_memory(hive: Hive) -> tuple[Agent, Agent, int]:
    """Alice writes her PIN (v1, private), edits it out (v2, private), then shares (v3)."""
    alice, bob = hive.create_agent("alice"), hive.create_agent("bob")
    memory = alice.memorize(f"Alice's bank PIN is {PIN}", category="fact").memory
    alice.update_memory(memory.id, content="Alice keeps her bank PIN in her password manager")
    alice.update_memory(memory.id, scope="shared")
    return alice, bob, memory.id


def _cli(target: str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", target, *args])


def _versions(history: list[dict[str, object]]) -> list[object]:
    return [v["version"] for v in history]


def test_the_rule_is_one_pure_function() -> None:
    from hivekeep.store.sql.history import version_visible  # here: the rest runs on old code

    alice, bob = 1, 2
    assert version_visible(Scope.SHARED, alice, None, bob)
    assert version_visible(Scope.PRIVATE, alice, None, alice)
    assert not version_visible(Scope.PRIVATE, alice, None, bob)
    assert version_visible(Scope.PRIVATE, alice, None, PERSON)
    assert not version_visible(Scope.PRIVATE, None, None, bob)  # its author deleted
    assert version_visible(Scope.PRIVATE, None, None, PERSON)
    assert version_visible(Scope.PRIVATE, alice, bob, bob)  # another agent's write in it
    assert not version_visible(Scope.PRIVATE, alice, bob, alice)


def test_a_shared_memory_keeps_its_private_versions_from_other_agents(
    backend_hive: Hive,
) -> None:
    alice, bob, memory_id = _pin_memory(backend_hive)
    assert _versions(alice.memory_history(memory_id)) == [3, 2, 1]
    assert PIN in alice.memory_history(memory_id)[-1]["content"]
    assert _versions(backend_hive.memory_history(memory_id)) == [3, 2, 1]  # a person
    seen = bob.memory_history(memory_id)
    assert _versions(seen) == [3] and PIN not in json.dumps(seen)
    for version in (1, 2):
        with pytest.raises(NotFound, match="kept versions are 3"):
            bob.restore_memory(memory_id, version)
    assert PIN not in bob.memory(memory_id).content


def test_a_persons_restore_of_a_private_version_does_not_publish_it(backend_hive: Hive) -> None:
    alice, bob, memory_id = _pin_memory(backend_hive)
    with pytest.raises(ValidationError, match="private to its author") as refused:
        backend_hive.restore_memory(memory_id, version=1)
    assert refused.value.field == "version"
    assert PIN not in bob.memory(memory_id).content
    assert _versions(alice.memory_history(memory_id)) == [3, 2, 1]  # nothing recorded
    restored = alice.restore_memory(memory_id, version=1)  # its author may: private again
    assert PIN in restored.content and restored.scope is Scope.PRIVATE
    with pytest.raises(NotFound):
        bob.memory(memory_id)


def test_rest_and_cli_show_another_agent_only_the_shared_versions(
    backend_hive: Hive, backend_target: str, client: TestClient
) -> None:
    _, _, memory_id = _pin_memory(backend_hive)
    path = f"/api/agents/{{}}/memories/{memory_id}"
    own = client.get(f"{path.format('alice')}/history")
    assert _versions(own.json()) == [3, 2, 1] and PIN in own.text
    seen = client.get(f"{path.format('bob')}/history")
    assert seen.status_code == 200 and _versions(seen.json()) == [3] and PIN not in seen.text
    refused = client.post(f"{path.format('bob')}/restore", json={"version": 1})
    assert refused.status_code == 404 and PIN not in refused.text
    shown = _cli(backend_target, "history", "--agent", "bob", str(memory_id), "--json")
    assert shown.exit_code == 0 and _versions(json.loads(shown.output)) == [3]
    listed = _cli(backend_target, "history", "--agent", "bob", str(memory_id))
    assert listed.exit_code == 0 and "v1" not in listed.output and PIN not in listed.output
    restore = _cli(backend_target, "restore", "--agent", "bob", str(memory_id), "--version", "1")
    assert restore.exit_code != 0 and PIN not in restore.output
    assert restore.exception is None or isinstance(restore.exception, SystemExit)
    assert PIN not in client.get(f"{path.format('bob')}").text


def test_after_the_author_is_deleted_only_a_person_reads_the_private_versions(
    backend_hive: Hive, backend_target: str, client: TestClient
) -> None:
    _, bob, memory_id = _pin_memory(backend_hive)
    backend_hive.delete_agent("alice")
    assert _versions(bob.memory_history(memory_id)) == [3]
    seen = client.get(f"/api/agents/bob/memories/{memory_id}/history")
    assert _versions(seen.json()) == [3] and PIN not in seen.text
    shown = _cli(backend_target, "history", "--agent", "bob", str(memory_id), "--json")
    assert shown.exit_code == 0 and PIN not in shown.output
    assert PIN in backend_hive.memory_history(memory_id)[-1]["content"]
    with pytest.raises(ValidationError, match="private to its author"):
        backend_hive.restore_memory(memory_id, version=1)
    # in the trash: a person lists it and reads it whole; a restore of v1 is refused there too
    backend_hive.forget_memory(memory_id)
    assert [t.memory.id for t in backend_hive.trash()] == [memory_id]
    assert PIN not in backend_hive.trash()[0].memory.content
    with pytest.raises(NotFound):
        bob.memory_history(memory_id)
    with pytest.raises(ValidationError, match="private to its author"):
        backend_hive.restore_memory(memory_id, version=1)
    assert [t.memory.id for t in backend_hive.trash()] == [memory_id]  # still there
    backend_hive.restore_memory(memory_id)
    seen_again = bob.memory_history(memory_id)
    assert _versions(seen_again) == [5, 4, 3] and PIN not in json.dumps(seen_again)

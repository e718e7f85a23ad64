"""Bootstrap, regenerate (SPEC §9) and review_memories (SPEC §6) with a scripted model."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hivekeep import Agent, Hive, Settings, ValidationError
from hivekeep.errors import ProviderError
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.providers.llm.base import Message
from hivekeep.store.leases import AgentLease
from hivekeep.testing import ScriptedLLM

PINNED = "## Pinned\n- Never share the user's address.\n"


def open_hive(db_path: Path, embedder: LocalEmbedder, llm: ScriptedLLM) -> Hive:
    # Dedup at 0.99: the numbered notes below are near-duplicates for the embedder on purpose.
    return Hive(db_path, embedder=embedder, settings=Settings(dedup_threshold=0.99), llm=llm)


@pytest.fixture
def llm() -> ScriptedLLM:
    return ScriptedLLM(context_window=16_000)


@pytest.fixture
def hive(db_path: Path, local_embedder: LocalEmbedder, llm: ScriptedLLM) -> Iterator[Hive]:
    with open_hive(db_path, local_embedder, llm) as opened:
        yield opened


def seed(agent: Agent, *contents: str) -> list[int]:
    return [agent.memorize(c, category="fact").memory.id for c in contents]


# --- bootstrap ---------------------------------------------------------------------------------


def test_bootstrap_after_an_outage_retries_on_the_next_start(
    db_path: Path, local_embedder: LocalEmbedder
) -> None:
    down = ScriptedLLM([ProviderError("LLM unreachable")])
    with open_hive(db_path, local_embedder, down) as hive:
        sam = hive.create_agent("sam")
        hive.create_agent("kim")  # nothing to compile: never blocks the flag
        seed(sam, "Ann lives in Lisbon", "Ann works as a nurse")
        outcome = hive.bootstrap()
        assert outcome.ran and not outcome.done
        assert [o.success for o in outcome.agents] == [False, True]
        assert "LLM unreachable" in (outcome.agents[0].error or "")
        assert sam.profile_text() == ""

    up = ScriptedLLM(["<profile>\n## User\n- Lives in Lisbon; nurse\n</profile>"])
    with open_hive(db_path, local_embedder, up) as hive:
        outcome = hive.resume().bootstrap
        assert outcome.ran and outcome.done
        assert hive.get_agent("sam").profile_text() == "## User\n- Lives in Lisbon; nurse\n"
        prompt = up.calls[0]
        assert prompt.call_site == "bootstrap" and "Ann works as a nurse" in prompt.text
        assert len(hive.get_agent("sam").list_memories().memories) == 2  # archive untouched

    with open_hive(db_path, local_embedder, ScriptedLLM()) as hive:
        assert hive.bootstrap().ran is False  # done once: no call at all


def test_bootstrap_skips_agents_that_already_have_a_profile(hive: Hive, llm: ScriptedLLM) -> None:
    sam = hive.create_agent("sam")
    seed(sam, "Ann lives in Lisbon")
    sam.set_profile("## User\n- Ann\n")
    assert hive.bootstrap().done and llm.calls == []


def test_an_agent_without_a_model_waits_and_resume_can_take_one_agent(
    db_path: Path, local_embedder: LocalEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    """No model for an agent: not a failure (no outcome, no warning), but the flag waits for it.
    ``resume(agent)`` does that agent's work only, and leaves the flag to a full run."""
    compiled = "<profile>\n## User\n- Ann\n</profile>"
    with Hive(db_path, embedder=local_embedder, settings=Settings()) as hive:
        ada, bob, cat = (hive.create_agent(name) for name in ("ada", "bob", "cat"))
        for agent in (ada, bob, cat):
            seed(agent, f"{agent.name} notes that Ann lives in Lisbon")
        hive.set_agent_llm("ada", ScriptedLLM([compiled]))
        hive.set_agent_llm("cat", ScriptedLLM([compiled]))
        full = hive.bootstrap()
        assert full.ran and not full.done  # bob waits for a model
        assert [o.agent_id for o in full.agents] == [ada.id, cat.id]
        assert "bob" not in caplog.text and "failed" not in caplog.text
        assert bob.profile_text() == "" and ada.profile_text() == "## User\n- Ann\n"

        hive.set_agent_llm("bob", ScriptedLLM([compiled]))
        dan = hive.create_agent("dan")
        seed(dan, "Dan likes tea")
        hive.set_agent_llm("dan", ScriptedLLM([compiled]))
        only_bob = hive.resume("bob").bootstrap
        assert [o.agent_id for o in only_bob.agents] == [bob.id] and not only_bob.done
        assert dan.profile_text() == ""  # another agent's: not this run's
        assert hive.bootstrap().done  # dan's, and now the flag


def test_bootstrap_can_be_turned_off_for_resume(
    db_path: Path, local_embedder: LocalEmbedder
) -> None:
    llm = ScriptedLLM(["<profile>\n## User\n- Ann\n</profile>"])
    settings = Settings.from_env({"HIVEKEEP_BOOTSTRAP": "off"})
    with Hive(db_path, embedder=local_embedder, settings=settings, llm=llm) as hive:
        seed(hive.create_agent("ada"), "Ann lives in Lisbon")
        assert hive.resume().bootstrap.ran is False and llm.calls == []
        assert hive.bootstrap().done  # called by name, it still runs
    with pytest.raises(ValidationError, match="HIVEKEEP_BOOTSTRAP"):
        Settings.from_env({"HIVEKEEP_BOOTSTRAP": "maybe"})


def test_bootstrap_respects_the_agent_lease(hive: Hive, llm: ScriptedLLM) -> None:
    sam = hive.create_agent("sam")
    seed(sam, "Ann lives in Lisbon")
    with AgentLease(hive.store, sam.id):
        outcome = hive.bootstrap()
    assert not outcome.done and "already running" in (outcome.agents[0].error or "")
    assert llm.calls == []


# --- regenerate --------------------------------------------------------------------------------


def test_regenerate_preserves_pinned_and_reports_success(hive: Hive, llm: ScriptedLLM) -> None:
    sam = hive.create_agent("sam")
    sam.set_profile(PINNED + "\n## Old\n- stale line\n")
    seed(sam, "Ann moved to Porto in 2024")
    llm.enqueue("<profile>\n## User\n- Lives in Porto\n</profile>")  # the model dropped Pinned
    outcome = sam.regenerate_profile()
    assert outcome.success and outcome.updated and outcome.memories_read == 1
    assert sam.profile_text().startswith(PINNED) and "Lives in Porto" in sam.profile_text()
    assert "stale line" not in sam.profile_text()
    assert "## Pinned" in llm.calls[0].text  # the model saw the current profile


@pytest.mark.parametrize(
    "reply", ["I cannot do that.", ProviderError("timeout")], ids=["no-block", "outage"]
)
def test_regenerate_reports_failure_and_keeps_the_profile(
    hive: Hive, llm: ScriptedLLM, reply: Any
) -> None:
    sam = hive.create_agent("sam")
    sam.set_profile(PINNED)
    seed(sam, "Ann moved to Porto in 2024")
    llm.enqueue(reply)
    outcome = sam.regenerate_profile()
    assert not outcome.success and outcome.error and sam.profile_text() == PINNED


def test_regenerate_with_an_empty_archive_succeeds_without_a_call(
    hive: Hive, llm: ScriptedLLM
) -> None:
    outcome = hive.create_agent("sam").regenerate_profile()
    assert outcome.success and not outcome.updated and llm.calls == []


# --- review_memories ---------------------------------------------------------------------------


def review_reply(issues: list[dict[str, Any]], summary: str = "Mostly fine.") -> str:
    return json.dumps({"issues": issues, "summary": summary})


def test_review_returns_validated_issues(hive: Hive, llm: ScriptedLLM) -> None:
    sam = hive.create_agent("sam")
    lisbon, porto, _ = seed(sam, "Ann lives in Lisbon", "Ann lives in Porto", "Ann likes tea")
    llm.enqueue(
        "```json\n"
        + review_reply(
            [
                {
                    "type": "contradiction",
                    "memory_ids": [lisbon, porto],
                    "description": "Two home towns.",
                    "suggestion": "delete",
                },
                {
                    "type": "duplicate",
                    "memory_ids": [99999],
                    "description": "Not shown.",
                    "suggestion": "delete",
                },
            ]
        )
        + "\n```"
    )
    result = sam.call_tool("review_memories", {})
    assert result["issues"] == [
        {
            "type": "contradiction",
            "memory_ids": [lisbon, porto],
            "description": "Two home towns.",
            "suggestion": "delete",
            "suggested_content": None,
        }
    ]
    assert result["summary"] == "Mostly fine." and result["reviewed"] == 3 and result["complete"]
    assert any("not shown" in e for e in result["errors"])
    assert llm.calls[0].call_site == "review" and llm.calls[0].timeout is not None
    assert len(sam.list_memories().memories) == 3  # the audit changes nothing


def test_review_covers_the_whole_selection_in_batches(
    db_path: Path, local_embedder: LocalEmbedder
) -> None:
    llm = ScriptedLLM(context_window=600)  # ~300 tokens of memories per batch
    with open_hive(db_path, local_embedder, llm) as hive:
        sam = hive.create_agent("sam")
        sam.memorize_many(
            [
                {
                    "content": f"Note number {n} about topic {n}",
                    "category": "fact",
                    "subject": "notes",
                }
                for n in range(40)
            ]
        )
        seed(sam, "Unrelated memory without the subject")
        for _ in range(10):
            llm.enqueue(review_reply([], "ok"))
        result = sam.review_memories(subject="notes")
        assert result.reviewed == 40 and result.complete and result.batches == len(llm.calls) > 1
        shown = "".join(c.text for c in llm.calls)
        assert all(f"Note number {n} about" in shown for n in range(40))
        assert "Unrelated" not in shown


def test_review_with_unusable_replies_is_an_error(hive: Hive, llm: ScriptedLLM) -> None:
    sam = hive.create_agent("sam")
    seed(sam, "Ann lives in Lisbon")
    llm.enqueue(json.dumps({"issues": [{"type": "weird", "memory_ids": []}]}))
    assert "did not match the schema" in sam.call_tool("review_memories", {})["error"]


def test_review_stops_at_its_deadline(db_path: Path, local_embedder: LocalEmbedder) -> None:
    def slow(messages: list[Message], tools: Any) -> str:
        time.sleep(0.3)
        return review_reply([])

    llm = ScriptedLLM([slow] * 5, context_window=600)
    with open_hive(db_path, local_embedder, llm) as hive:
        sam = hive.create_agent("sam")
        sam.memorize_many(
            [{"content": f"Note number {n} about topic {n}", "category": "fact"} for n in range(40)]
        )
        result = sam.review_memories(timeout=0.5)
        assert not result.complete and 0 < result.reviewed < 40
        assert any("timed out" in e for e in result.errors)

"""``export`` / ``import`` (JSONL): real SQLite files, the real bundled embedder, ScriptedLLM.

One source hive is built per module — two agents with private and shared memories, profiles with
a Pinned section, a chat with tool calls, compactions with a fold, a merge and an extracted memory
— and exported once; each test imports the file into a fresh hive and compares what it finds
there with the source, by content (ids differ between hives).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result

from hivekeep import Hive, Settings, ValidationError
from hivekeep.cli import cli
from hivekeep.providers.embeddings.local import LocalEmbedder
from hivekeep.providers.llm.base import Completion, ToolCall
from hivekeep.testing import ScriptedLLM

from .conversation_support import add_turns, maintenance_reply

QUERIES = (
    "what seat does Ann like?",
    "food allergies",
    "Lisbon",
    "trains or flights",
    "passport expiry",
    "sourdough",
)
LOCAL_MODEL = "local:all-MiniLM-L6-v2-int8"


class Counting:
    """The real embedder, counting the texts it embeds (to prove an import embedded nothing)."""

    def __init__(self, inner: LocalEmbedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dimension = inner.dimension
        self.recall_defaults = inner.recall_defaults
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> Any:
        self.texts += len(texts)
        return self.inner.embed(texts)


def memorize_call(content: str) -> Completion:
    return Completion(
        tool_calls=[ToolCall("call_1", "memorize", {"content": content, "category": "preference"})]
    )


def build_source(hive: Hive, llm: ScriptedLLM) -> None:
    sam = hive.create_agent("sam", role="Travel assistant for Ann.")
    kit = hive.create_agent("kit", role="Cook")
    sam.configure(compaction={"max_summaries": 3})
    kit.configure(model="openai:gpt-4o-mini", context_window=32768)
    sam.memorize_many(
        [
            {
                "content": "Ann's passport expires in March 2026.",
                "category": "fact",
                "subject": "Ann",
                "importance": 8,
                "created_at": "2024-01-15",
            },
            {
                "content": "Ann prefers aisle seats on short flights.",
                "category": "preference",
                "subject": "Ann",
                "source_context": "booking chat",
            },
            {
                "content": "The team works from the Lisbon office on Fridays.",
                "category": "knowledge",
                "scope": "shared",
                "created_at": "2023-11-02T09:30:00",
            },
            {
                "content": "We decided to book trains over flights under 500 km.",
                "category": "decision",
                "scope": "shared",
                "importance": 6,
            },
        ]
    )
    kit.memorize_many(
        [
            {
                "content": "Ann is allergic to peanuts.",
                "category": "fact",
                "subject": "Ann",
                "importance": 10,
                "scope": "shared",
            },
            {"content": "Kit feeds the sourdough starter every Sunday.", "category": "knowledge"},
            {"content": "Ann dislikes coriander.", "category": "preference", "subject": "Ann"},
        ]
    )
    sam.edit_profile("User", "append", "Name: Ann")
    sam.edit_profile("Rules", "append", "Never book red-eye flights.", pin=True)
    kit.edit_profile("Kitchen", "append", "Gas stove, no oven.")

    # a chat with a tool call, then a forced compaction that extracts a memory
    llm.enqueue(memorize_call("Ann prefers window seats on long flights."), "Noted.")
    chat = sam.chat("On long flights I always pick a window seat.", speaker="Ann").conversation_id
    llm.enqueue("Lisbon in May, got it.")
    sam.chat("I'm flying to Lisbon in May.", chat, speaker="Ann")
    archive = [{"op": "add", "content": "Ann flies to Lisbon in May 2024.", "category": "fact"}]
    llm.enqueue("Ann likes window seats; she flies to Lisbon in May.")
    llm.enqueue(maintenance_reply(archive, profile=None))
    assert sam.compact(chat).status == "done"

    # four compactions of a long conversation: the fourth merges the oldest summaries
    long = sam.start_conversation("Planning").id
    for day in range(4):
        add_turns(hive, long, 4, start=f"2024-05-0{day + 1}T10:00", with_tools=day == 0)
        llm.enqueue(f"Summary of day {day + 1}.")
        if day == 3:
            llm.enqueue("Days 1 and 2, compressed.")
        llm.enqueue(maintenance_reply(profile=None))
        assert sam.compact(long).status == "done"
    sam.recall("passport")  # some retrieval counts to carry over


@dataclass
class Source:
    path: Path
    export: Path
    snapshot: dict[str, Any]
    vectors: list[np.ndarray | None]
    recalls: dict[str, list[list[str]]]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory, local_embedder: LocalEmbedder) -> Source:
    folder = tmp_path_factory.mktemp("source")
    path, export = folder / "source.db", folder / "export.jsonl"
    llm = ScriptedLLM(context_window=8192)
    with Hive(path, embedder=local_embedder, settings=Settings(), llm=llm) as hive:
        build_source(hive, llm)
        assert llm.remaining == 0
        with export.open("w", encoding="utf-8") as out:
            hive.export(out)
        state, vectors = snapshot(hive)
        return Source(path, export, state, vectors, recalls(hive))


def snapshot(hive: Hive) -> tuple[dict[str, Any], list[np.ndarray | None]]:
    """Everything the hive holds, by content and position instead of ids."""
    store = hive.store
    agents = store.list_agents()
    state: dict[str, Any] = {
        "agents": [(a.name, a.role, asdict(store.get_agent_settings(a.id))) for a in agents],
        "profiles": {a.name: store.get_profile(a.id).text for a in agents},
        "conversations": {},
    }
    message_at: dict[int, tuple[str, str]] = {}
    for agent in agents:
        conversations = []
        for c in sorted(store.list_conversations(agent.id), key=lambda c: c.created_at):
            messages = store.list_messages(c.id, limit=1000)
            summaries = store.list_summaries(c.id)
            m_at = {m.id: i for i, m in enumerate(messages)}
            s_at = {s.id: i for i, s in enumerate(summaries)}
            message_at |= {m.id: (m.role, m.content) for m in messages}

            def record(details: dict[str, Any] | None, s_at: dict[int, int] = s_at) -> Any:
                if details is None:
                    return None
                return {
                    k: [s_at[i] for i in v] if k.endswith("summary_ids") else v
                    for k, v in details.items()
                }

            conversations.append(
                {
                    "conversation": (c.title, c.created_at, c.updated_at),
                    "messages": [
                        (
                            m.role,
                            m.content,
                            m.tokens,
                            m.tool_calls,
                            m.tool_call_id,
                            m.tool_name,
                            m.speaker,
                            None if m.summary_id is None else s_at[m.summary_id],
                            m.is_compaction_record,
                            record(m.record),
                            m.created_at,
                        )
                        for m in messages
                    ],
                    "summaries": [
                        (
                            s.text,
                            s.tokens,
                            s.first_at,
                            s.last_at,
                            s.message_count,
                            m_at.get(s.first_message_id or 0),
                            m_at.get(s.last_message_id or 0),
                            s.depth,
                            [s_at[i] for i in s.source_ids],
                            s.in_context,
                            s.maintenance_status,
                            s.maintenance_attempts,
                            s.maintenance_error,
                            s.created_at,
                        )
                        for s in summaries
                    ],
                }
            )
        state["conversations"][agent.name] = conversations
    memories = store.memories_with_vectors(None, limit=10_000)
    state["memories"] = [
        (
            m.author_name,
            m.content,
            m.category,
            m.subject,
            m.importance,
            m.scope,
            m.source,
            m.source_context,
            None if m.source_message_id is None else message_at[m.source_message_id],
            m.retrieval_count,
            m.last_retrieved_at,
            m.created_at,
            m.updated_at,
            m.embedding_state,
        )
        for m, _ in memories
    ]
    return state, [vector for _, vector in memories]


def recalls(hive: Hive) -> dict[str, list[list[str]]]:
    return {
        agent.name: [[hit.memory.content for hit in agent.recall(q).hits] for q in QUERIES]
        for agent in hive.agents()
    }


@pytest.fixture
def counting(local_embedder: LocalEmbedder) -> Counting:
    return Counting(local_embedder)


@pytest.fixture
def target(tmp_path: Path, counting: Counting) -> Iterator[Hive]:
    with Hive(tmp_path / "target.db", embedder=counting, settings=Settings()) as hive:
        yield hive


def test_the_source_has_everything_the_round_trip_must_carry(source: Source) -> None:
    state = source.snapshot
    assert len(state["memories"]) == 9 and sum(v is None for v in source.vectors) == 0
    assert {m[5] for m in state["memories"]} == {"private", "shared"}
    assert {m[6] for m in state["memories"]} == {"explicit", "automatic"}
    assert any(m[8] is not None for m in state["memories"])  # a memory from a conversation
    assert any(m[9] for m in state["memories"])  # retrieved at least once
    chat, planning = state["conversations"]["sam"]
    assert any(m[3] for m in chat["messages"])  # tool calls
    assert any(m[8] for m in chat["messages"])  # a compaction record
    assert any(s[8] for s in planning["summaries"])  # a merged summary
    assert "## Pinned" in state["profiles"]["sam"]


def test_round_trip_restores_everything_without_embedding_again(
    source: Source, target: Hive, counting: Counting
) -> None:
    report = target.import_(source.export)

    assert counting.texts == 0  # the file's vectors were used as they are
    assert (report.vectors, report.memories_embedded, report.memories_pending) == ("reused", 0, 0)
    assert (report.agents_created, report.agents_merged, report.profiles_imported) == (2, 0, 2)
    assert (report.memories_imported, report.memories_duplicate) == (9, 0)
    assert (report.conversations_imported, report.conversations_skipped) == (2, 0)
    assert report.messages == sum(
        len(c["messages"]) for c in source.snapshot["conversations"]["sam"]
    )
    state, vectors = snapshot(target)
    assert state == source.snapshot
    for got, want in zip(vectors, source.vectors, strict=True):
        assert got is not None and want is not None
        np.testing.assert_array_equal(got, want)
    assert recalls(target) == source.recalls
    assert counting.texts == len(QUERIES) * 2  # only the recall queries were embedded
    # the restored conversation goes on as usual
    chat = target.get_agent("sam").conversations()[-1]
    assert "Ann likes window seats" in target.get_agent("sam").context(chat.id).messages[0].content


def test_importing_twice_adds_nothing(source: Source, target: Hive) -> None:
    target.import_(source.export)
    before = snapshot(target)[0]
    again = target.import_(source.export)
    assert (again.agents_created, again.agents_merged) == (0, 2)
    assert (again.memories_imported, again.memories_duplicate) == (0, 9)
    assert (again.conversations_imported, again.conversations_skipped) == (0, 2)
    assert (again.profiles_imported, again.messages, again.summaries) == (0, 0, 0)
    assert snapshot(target)[0] == before


def test_another_model_in_the_header_means_re_embedding(
    source: Source, target: Hive, counting: Counting, tmp_path: Path
) -> None:
    lines = lines_of(source)
    header = json.loads(lines[0])
    header["embedding"]["model"] = "other:minilm-like"  # same dimension, another model's space
    lines[0] = json.dumps(header)
    changed = tmp_path / "other-model.jsonl"
    changed.write_text("\n".join(lines) + "\n")

    report = target.import_(changed)
    assert report.vectors == "re-embedded" and report.memories_embedded == 9
    assert counting.texts == 9
    state, vectors = snapshot(target)
    assert state == source.snapshot
    for got, want in zip(vectors, source.vectors, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-5)  # type: ignore[arg-type]
    assert recalls(target) == source.recalls


def test_memories_without_a_vector_are_embedded_on_import(
    source: Source, target: Hive, counting: Counting, tmp_path: Path
) -> None:
    lines = lines_of(source)
    i = next(i for i, line in enumerate(lines) if "passport" in line and '"memory"' in line)
    memory = json.loads(lines[i])
    memory["vector"] = None
    lines[i] = json.dumps(memory)
    changed = tmp_path / "pending.jsonl"
    changed.write_text("\n".join(lines) + "\n")
    report = target.import_(changed)
    assert (report.vectors, report.memories_embedded, counting.texts) == ("reused", 1, 1)
    assert recalls(target) == source.recalls


def test_import_merges_into_an_existing_agent(source: Source, target: Hive) -> None:
    sam = target.create_agent("SAM")  # names match case-insensitively
    sam.memorize("Ann is allergic to peanuts!", category="fact")  # kit's shared one, seen by sam
    sam.memorize("Sam's own note.", category="fact")
    sam.edit_profile("Notes", "append", "Local profile.")
    local_profile = sam.profile_text()

    report = target.import_(source.export)
    assert (report.agents_created, report.agents_merged) == (1, 1)
    assert (report.profiles_imported, report.profiles_kept) == (1, 1)
    assert report.memories_imported == 9  # kit's shared memory is kit's: sam's is private
    sam = target.get_agent("sam")
    assert sam.name == "SAM" and sam.role == "Travel assistant for Ann."  # empty role filled in
    assert sam.profile_text() == local_profile
    assert sam.settings().compaction == {"max_summaries": 3}
    kit = target.get_agent("kit")
    assert (kit.settings().model, kit.settings().context_window) == ("openai:gpt-4o-mini", 32768)
    records = [json.loads(line) for line in source.export.read_text().splitlines()]
    written = {r["name"]: r["settings"] for r in records if r["type"] == "agent"}
    assert "context_window" not in written["sam"] and written["kit"]["context_window"] == 32768
    assert sam.list_memories(limit=100).total == 2 + 6 + 1  # its own, imported, kit's shared

    replaced = target.import_(source.export, replace_profiles=True)
    assert replaced.profiles_imported == 1 and replaced.memories_imported == 0
    assert sam.profile_text() == source.snapshot["profiles"]["sam"]


def test_a_duplicate_in_the_target_is_skipped(source: Source, target: Hive) -> None:
    kit = target.create_agent("kit")
    kit.memorize("Ann dislikes coriander", category="preference", subject="ann")
    report = target.import_(source.export)
    assert (report.memories_imported, report.memories_duplicate) == (8, 1)


def lines_of(source: Source) -> list[str]:
    return source.export.read_text().splitlines()


def broken(source: Source, tmp_path: Path, change: str) -> tuple[Path, int, str]:
    """The export with one line broken; returns (file, line number, what the error says)."""
    lines = lines_of(source)
    first_memory = next(i for i, line in enumerate(lines) if '"type":"memory"' in line)
    if change == "bad JSON on line 3":
        at, lines[2], says = 3, lines[2][:-5], "not valid JSON"
    elif change == "unknown type":
        at, says = first_memory + 1, "unknown type 'memorie'"
        lines[first_memory] = lines[first_memory].replace('"memory"', '"memorie"', 1)
    elif change == "missing field":
        memory = json.loads(lines[first_memory])
        del memory["content"]
        at, lines[first_memory], says = first_memory + 1, json.dumps(memory), "'content': Field"
    elif change == "unknown agent":
        memory = json.loads(lines[-1])
        memory["author"] = "zed"
        at, lines[-1], says = len(lines), json.dumps(memory), "agent 'zed' has no agent line"
    elif change == "dangling summary":
        at = next(i for i, line in enumerate(lines) if '"summary":"s' in line) + 1
        message = json.loads(lines[at - 1])
        message["summary"] = "s999"
        lines[at - 1], says = json.dumps(message), "summary 's999' is not in conversation"
    elif change == "no header":
        at, says = 1, "starts with a header"
        del lines[0]
    else:
        raise AssertionError(change)
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path, at, says


@pytest.mark.parametrize(
    "change",
    [
        "bad JSON on line 3",
        "unknown type",
        "missing field",
        "unknown agent",
        "dangling summary",
        "no header",
    ],
)
def test_an_invalid_file_names_the_line_and_writes_nothing(
    source: Source, target: Hive, tmp_path: Path, change: str
) -> None:
    path, at, says = broken(source, tmp_path, change)
    with pytest.raises(ValidationError) as raised:
        target.import_(path)
    message = str(raised.value)
    assert f"line {at}: " in message and says in message, message
    assert "nothing was imported" in message
    assert target.store.list_agents() == [] and target.store.memories_with_vectors(None) == []


def test_every_problem_is_listed_up_to_a_limit(
    source: Source, target: Hive, tmp_path: Path
) -> None:
    path = tmp_path / "junk.jsonl"
    path.write_text(lines_of(source)[0] + "\n" + "{}\n" * 30 + "[1]\n")
    with pytest.raises(ValidationError) as raised:
        target.import_(path)
    message = str(raised.value)
    assert "line 2: invalid record: no 'type' field" in message
    assert "line 11: " in message and "line 12: " not in message and "maybe more" in message


def test_exporting_one_agent(source: Source, tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    out = io.StringIO()
    with Hive(source.path, embedder=local_embedder, settings=Settings()) as hive:
        report = hive.export(out, agent="kit")
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert records[0]["type"] == "header" and records[0]["agent"] == "kit"
    assert [r["name"] for r in records if r["type"] == "agent"] == ["kit"]
    memories = {r["content"] for r in records if r["type"] == "memory"}
    assert memories == {  # its shared memory included, sam's shared ones not
        "Ann is allergic to peanuts.",
        "Kit feeds the sourdough starter every Sunday.",
        "Ann dislikes coriander.",
    }
    assert report.conversations == 0 and report.memories == 3 and report.agents == 1


# -- the command line ---------------------------------------------------------------------------


def run(args: list[str], code: int = 0) -> Result:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result


def test_cli_export_to_a_file_and_import_with_progress(source: Source, tmp_path: Path) -> None:
    backup, target = tmp_path / "backup.jsonl", str(tmp_path / "new.db")
    exported = run(["export", "-o", str(backup), "--db", str(source.path)])
    assert exported.stdout == (
        f"Exported 2 agents, 9 memories, 2 conversations ({source_messages(source)} messages, "
        f"6 summaries) to {backup}.\n"
    )
    # the same lines as the first export (memories' retrieval counts have moved on since)
    same = [line for line in lines_of(source)[1:] if '"type":"memory"' not in line]
    assert [line for line in backup.read_text().splitlines()[1:] if line in same] == same
    assert not list(tmp_path.glob("*.partial"))  # no staged file left (hidden ones too)

    imported = run(["import", str(backup), "--db", target])
    assert "Importing" in imported.stderr
    assert imported.stdout.splitlines() == [
        "Agents: 2 created, 0 merged.",
        "Profiles: 2 imported, 0 kept.",
        "Memories: 9 imported, 0 duplicates skipped; vectors from the file reused.",
        f"Conversations: 2 imported, 0 already there; {source_messages(source)} messages, "
        "6 summaries.",
    ]
    again = run(["import", str(backup), "--db", target])
    assert "Memories: 0 imported, 9 duplicates skipped" in again.stdout


def source_messages(source: Source) -> int:
    return sum(len(c["messages"]) for c in source.snapshot["conversations"]["sam"])


def test_cli_export_to_stdout_with_one_agent(source: Source, tmp_path: Path) -> None:
    result = run(["export", "--agent", "kit", "--db", str(source.path)])
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["type"] for r in records] == ["header", "agent", "profile", *["memory"] * 3]
    assert result.stderr == (
        "Exported 1 agent, 3 memories, 0 conversations (0 messages, 0 summaries).\n"
    )
    path = tmp_path / "kit.jsonl"
    path.write_text(result.stdout)
    imported = run(["import", str(path), "--db", str(tmp_path / "kit.db")])
    assert "Memories: 3 imported" in imported.stdout


def test_cli_reports_an_invalid_file_and_an_unknown_agent(source: Source, tmp_path: Path) -> None:
    path, at, _ = broken(source, tmp_path, "bad JSON on line 3")
    result = run(["import", str(path), "--db", str(tmp_path / "new.db")], code=1)
    assert f"line {at}: not valid JSON" in result.stderr and "Traceback" not in result.output
    missing = run(["export", "--agent", "nobody", "--db", str(source.path)], code=1)
    assert "No agent 'nobody'" in missing.stderr

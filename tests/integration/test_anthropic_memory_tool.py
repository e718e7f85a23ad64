"""HivekeepMemoryTool, Claude's memory tool (memory_20250818) on a hive agent: every command
through the SDK's own entry point (``call``, as the tool runner calls it), files that are
memories, the profile and the hive's view, path traversal refused, and the SDK's tool runner
against a local server speaking the Messages wire format. (The SDK's own tests of its file
backend run against the tool in anthropic_memory_suite/.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("anthropic.tools.memory", reason="needs anthropic>=2.17")

from anthropic import Anthropic
from anthropic.lib.tools import ToolError

from hivekeep import Agent, Hive, Scope, Settings
from hivekeep.integrations.anthropic_memory import HivekeepMemoryTool
from tests.integration.test_llm_providers import anthropic_reply
from tests.wire_servers import WireServer

PROFILE = "## Pinned\n- Never share the door code\n\n## User\n- Name: Ann\n"


@pytest.fixture
def agent(hive: Hive) -> Agent:
    agent = hive.agent("assistant")
    agent.set_profile(PROFILE)
    return agent


@pytest.fixture
def tool(agent: Agent, tmp_path: Path) -> HivekeepMemoryTool:
    return HivekeepMemoryTool(agent, tmp_path / "files")


def run(tool: HivekeepMemoryTool, command: str, **arguments: Any) -> str:
    result = tool.call({"command": command, **arguments})
    assert isinstance(result, str)
    return result


def contents(agent: Agent) -> list[str]:
    return sorted(m.content for m in agent.list_memories().memories)


def test_the_root_lists_the_files_the_profile_and_the_hives_view(
    tool: HivekeepMemoryTool,
) -> None:
    run(tool, "create", path="/memories/notes/cat.md", file_text="Ann's cat is called Miso")

    listing = run(tool, "view", path="/memories").splitlines()

    assert [line.split("\t")[1] for line in listing[1:]] == [
        "/memories",
        "/memories/notes/",
        "/memories/notes/cat.md",
        "/memories/profile.md",
        "/memories/hive/ (memories no file holds; search)",
    ]
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}


def test_viewing_the_profile_numbers_its_lines_and_honours_the_range(
    tool: HivekeepMemoryTool,
) -> None:
    whole = run(tool, "view", path="/memories/profile.md")
    part = run(tool, "view", path="/memories/profile.md", view_range=[4, 5])

    assert whole.splitlines()[1] == "     1\t## Pinned"
    assert part.splitlines()[1:] == ["     4\t## User", "     5\t- Name: Ann"]


def test_profile_edits_become_edit_profile_operations(
    tool: HivekeepMemoryTool, agent: Agent
) -> None:
    run(
        tool,
        "str_replace",
        path="/memories/profile.md",
        old_str="Name: Ann",
        new_str="Name: Ann Lee",
    )
    run(tool, "insert", path="/memories/profile.md", insert_line=5, insert_text="- Lives in Lisbon")

    assert agent.profile_text() == (
        "## Pinned\n- Never share the door code\n\n## User\n- Name: Ann Lee\n- Lives in Lisbon\n"
    )
    assert [v["operation"] for v in agent.profile_history()[:2]] == ["edit", "edit"]


def test_a_rewrite_that_drops_pinned_keeps_it(tool: HivekeepMemoryTool, agent: Agent) -> None:
    result = run(
        tool,
        "str_replace",
        path="/memories/profile.md",
        old_str="## Pinned\n- Never share the door code\n\n## User\n- Name: Ann",
        new_str="## User\n- Name: Bo",
    )

    assert "## Pinned is kept" in result
    assert "- Never share the door code" in agent.profile_text()
    assert "- Name: Bo" in agent.profile_text()
    assert "Name: Ann" not in agent.profile_text()


def test_an_edit_over_the_budget_is_refused_and_writes_nothing(
    db_path: Any, local_embedder: Any
) -> None:
    with Hive(db_path, embedder=local_embedder, settings=Settings(profile_max_tokens=60)) as hive:
        agent = hive.agent("assistant")
        agent.set_profile(PROFILE)
        tool = HivekeepMemoryTool(agent, db_path.parent / "files")
        long = "\n".join(f"- Fact number {n} about the user's many hobbies" for n in range(20))

        with pytest.raises(ToolError, match="over the budget"):
            run(
                tool,
                "insert",
                path="/memories/profile.md",
                insert_line=5,
                insert_text=f"\n## More\n{long}",
            )

        assert agent.profile_text() == PROFILE


def test_a_file_is_kept_as_written_and_its_text_is_a_memory(
    tool: HivekeepMemoryTool, agent: Agent
) -> None:
    created = run(tool, "create", path="/memories/notes/coffee.md", file_text="Ann drinks tea\n")
    memory = agent.recall("what does Ann drink?").hits[0].memory

    assert created == "File created successfully at: /memories/notes/coffee.md"
    assert memory.content == "Ann drinks tea"
    assert (tool.memory_root / "notes" / "coffee.md").read_text() == "Ann drinks tea\n"
    run(tool, "str_replace", path="/memories/notes/coffee.md", old_str="tea", new_str="coffee")
    run(tool, "insert", path="/memories/notes/coffee.md", insert_line=1, insert_text="at noon")
    assert agent.memory(memory.id).content == "Ann drinks coffee\nat noon"  # in place
    assert "update" in [v["operation"] for v in agent.memory_history(memory.id)]

    run(tool, "rename", old_path="/memories/notes", new_path="/memories/drinks")
    assert agent.memory(memory.id).content == "Ann drinks coffee\nat noon"  # same memory
    assert run(tool, "view", path="/memories/drinks/coffee.md").endswith(
        "     2\tat noon\n     3\t"
    )
    run(tool, "delete", path="/memories/drinks")
    assert contents(agent) == [] and agent.trash().memories[0].memory.id == memory.id


def test_a_known_text_under_a_new_name_is_one_memory_until_one_file_changes(
    tool: HivekeepMemoryTool, agent: Agent
) -> None:
    run(tool, "create", path="/memories/a.md", file_text="Ann drinks green tea")
    run(tool, "create", path="/memories/b.md", file_text="Ann drinks green tea")
    assert contents(agent) == ["Ann drinks green tea"]

    run(tool, "str_replace", path="/memories/b.md", old_str="green", new_str="black")

    assert run(tool, "view", path="/memories/a.md").endswith("Ann drinks green tea")
    assert contents(agent) == ["Ann drinks black tea", "Ann drinks green tea"]
    run(tool, "delete", path="/memories/a.md")
    assert contents(agent) == ["Ann drinks black tea"]


@pytest.mark.parametrize("reword", [False, True])
def test_a_create_that_succeeds_leaves_its_file_whatever_the_text(
    tool: HivekeepMemoryTool, agent: Agent, hive: Hive, reword: bool
) -> None:
    """Text another agent shares word for word, or a restatement of one of the agent's own
    memories: the file is there, reading what was written."""
    other = hive.agent("planner")
    other.memorize("The office is in Berlin", category="fact", scope=Scope.SHARED)
    agent.memorize("Ann drinks green tea", category="fact")
    text = "ann drinks green tea." if reword else "The office is in Berlin"

    created = run(tool, "create", path="/memories/fact.md", file_text=text)

    assert created == "File created successfully at: /memories/fact.md"
    assert (tool.memory_root / "fact.md").read_text() == text
    assert run(tool, "view", path="/memories/fact.md").endswith(f"     1\t{text}")


def test_the_hives_view_shows_what_no_file_holds_and_each_is_usable(
    tool: HivekeepMemoryTool, agent: Agent, hive: Hive
) -> None:
    own = agent.memorize("Ann's cat is called Miso", category="fact").memory
    planner = hive.agent("planner")
    shared = planner.memorize("The office is in Berlin", category="fact", scope=Scope.SHARED).memory
    run(tool, "create", path="/memories/tea.md", file_text="Ann drinks tea")

    listing = run(tool, "view", path="/memories/hive").splitlines()
    mine, theirs = f"/memories/hive/memory-{own.id}.md", f"/memories/hive/shared-{shared.id}.md"
    assert {line.split("\t")[1] for line in listing[3:]} == {mine, theirs}  # not tea.md
    assert run(tool, "view", path=theirs).endswith("     1\tThe office is in Berlin")
    with pytest.raises(ToolError, match=r"planner's shared memory.*create /memories/"):
        run(tool, "str_replace", path=theirs, old_str="Berlin", new_str="Paris")

    run(tool, "str_replace", path=mine, old_str="Miso", new_str="Mochi")
    assert agent.memory(own.id).content == "Ann's cat is called Mochi"
    run(tool, "create", path="/memories/cat.md", file_text="Ann has a cat")
    with pytest.raises(ToolError, match=r"^The destination /memories/cat\.md already exists$"):
        run(tool, "rename", old_path=mine, new_path="/memories/cat.md")
    with pytest.raises(ToolError, match=r"^The path /memories/hive/memory-0\.md does not exist$"):
        run(tool, "rename", old_path="/memories/hive/memory-0.md", new_path="/memories/x.md")
    run(tool, "delete", path="/memories/cat.md")
    run(tool, "rename", old_path=mine, new_path="/memories/cat.md")  # now a file: same memory
    assert (tool.memory_root / "cat.md").read_text() == "Ann's cat is called Mochi"
    run(tool, "rename", old_path=theirs, new_path="/memories/office.md")  # a copy of one's own
    assert (tool.memory_root / "office.md").read_text() == "The office is in Berlin"
    listing = run(tool, "view", path="/memories/hive").splitlines()
    assert [line.split("\t")[1] for line in listing[3:]] == [theirs]
    run(tool, "delete", path="/memories/cat.md")
    assert agent.trash().memories[0].memory.id == own.id
    with pytest.raises(ToolError, match="does not exist"):
        run(tool, "view", path=mine)  # forgotten
    with pytest.raises(ToolError, match="hive's view"):
        run(tool, "create", path="/memories/hive/mine.md", file_text="x")


def test_clearing_all_memory_forgets_what_only_files_held(
    tool: HivekeepMemoryTool, agent: Agent
) -> None:
    agent.memorize("Ann's cat is called Miso", category="fact")
    run(tool, "create", path="/memories/a.md", file_text="Ann drinks tea")
    run(tool, "create", path="/memories/notes/b.md", file_text="The office is in Berlin")

    assert tool.clear_all_memory() == "All memory cleared"

    assert list(tool.memory_root.iterdir()) == []
    assert contents(agent) == ["Ann's cat is called Miso"] and agent.profile_text() == PROFILE


def test_a_new_tool_writes_the_files_its_memories_name_that_the_disk_lacks(
    agent: Agent, tmp_path: Path
) -> None:
    kept = HivekeepMemoryTool(agent, tmp_path / "kept")
    run(kept, "create", path="/memories/notes/tea.md", file_text="Ann drinks tea\n")
    run(kept, "create", path="/memories/books.md", file_text="x" * 2001)  # a file only

    fresh = HivekeepMemoryTool(agent)  # a temporary directory of its own: rebuilt from the hive
    (kept.memory_root / "notes" / "tea.md").unlink()  # removed by hand
    again = HivekeepMemoryTool(agent, tmp_path / "kept")

    assert (fresh.memory_root / "notes" / "tea.md").read_text() == "Ann drinks tea"
    assert not (fresh.memory_root / "books.md").exists()
    assert (again.memory_root / "notes" / "tea.md").read_text() == "Ann drinks tea"
    assert fresh.memory_root != kept.memory_root and contents(agent) == ["Ann drinks tea"]


def test_search_lists_the_memories_recall_ranks_best(tool: HivekeepMemoryTool) -> None:
    run(tool, "create", path="/memories/coffee.md", file_text="Ann takes her coffee black")
    run(tool, "create", path="/memories/office.md", file_text="The office is in Berlin")

    found = run(tool, "view", path="/memories/hive/search/how does Ann drink coffee")

    assert found.splitlines()[1] == "/memories/coffee.md\tAnn takes her coffee black"


def test_a_file_too_large_for_one_memory_is_kept_as_a_file_only(
    tool: HivekeepMemoryTool, agent: Agent
) -> None:
    big = "Ann's reading list\n" + "\n".join(f"- book {n}" for n in range(400))

    created = run(tool, "create", path="/memories/books.md", file_text=big)

    assert created.startswith("File created successfully at: /memories/books.md\n(Note:")
    assert "too large for one memory" in created and contents(agent) == []
    assert (tool.memory_root / "books.md").read_text() == big
    run(tool, "str_replace", path="/memories/books.md", old_str=big, new_str="Ann reads Dune")
    assert contents(agent) == ["Ann reads Dune"]  # small again: a memory
    edited = run(tool, "str_replace", path="/memories/books.md", old_str="Dune", new_str=big)
    assert "too large for one memory" in edited and contents(agent) == []


def test_a_text_hivekeep_refuses_as_a_memory_is_kept_as_a_file_with_why(
    tool: HivekeepMemoryTool, agent: Agent
) -> None:
    created = run(tool, "create", path="/memories/raw.bin", file_text="tea\x00time")

    assert "kept as a file only" in created and "NUL" in created
    assert (tool.memory_root / "raw.bin").read_text() == "tea\x00time" and contents(agent) == []
    run(tool, "str_replace", path="/memories/raw.bin", old_str="\x00", new_str=" ")
    assert contents(agent) == ["tea time"]
    edited = run(tool, "str_replace", path="/memories/raw.bin", old_str=" ", new_str="\x00")
    assert "NUL" in edited and contents(agent) == []  # its memory went with the text


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("/etc/passwd", "must start with /memories"),
        ("/memories/../etc/passwd", "would escape /memories"),
        ("/memories/notes/../../secrets", "would escape /memories"),
        ("memories/profile.md", "must start with /memories"),
        ("/memories/a\x00b", "NUL"),
    ],
)
def test_paths_outside_memories_are_refused(
    tool: HivekeepMemoryTool, path: str, error: str
) -> None:
    for command, arguments in (
        ("view", {"path": path}),
        ("create", {"path": path, "file_text": "x"}),
        ("delete", {"path": path}),
        ("rename", {"old_path": "/memories/profile.md", "new_path": path}),
    ):
        with pytest.raises(ToolError, match=error):
            run(tool, command, **arguments)


@pytest.mark.parametrize(
    "name",
    [
        "a.md\n/memories/forged.md",  # a second, fake line in the listing
        "a.md\r",
        "a\tb.md",
        "price \u202e0001$.md",  # shown reversed: "price $1000.md"
        "a\u2066b.md",
        "a\u2028b.md",
        "a\x1b[31mred.md",
    ],
)
def test_file_names_that_would_forge_listing_lines_are_refused(
    tool: HivekeepMemoryTool, agent: Agent, name: str
) -> None:
    with pytest.raises(ToolError, match="line break, control or bidi character"):
        run(tool, "create", path=f"/memories/{name}", file_text="Ann likes tea")
    run(tool, "create", path="/memories/tea.md", file_text="Ann likes tea")
    with pytest.raises(ToolError, match="line break, control or bidi character"):
        run(tool, "rename", old_path="/memories/tea.md", new_path=f"/memories/{name}")
    assert [p.name for p in tool.memory_root.iterdir()] == ["tea.md"]
    assert contents(agent) == ["Ann likes tea"]


# -- the SDK's tool runner ----------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[WireServer]:
    with WireServer() as fake:
        yield fake


def tool_use(call_id: str, **command: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "memory", "input": command}


def test_the_tool_runner_drives_the_memory_tool_against_the_messages_api(
    server: WireServer, tool: HivekeepMemoryTool, agent: Agent
) -> None:
    server.script(
        anthropic_reply([tool_use("t1", command="view", path="/memories")], stop="tool_use"),
        anthropic_reply(
            [
                tool_use(
                    "t2",
                    command="create",
                    path="/memories/notes/coffee.md",
                    file_text="Ann takes her coffee black",
                ),
                tool_use(
                    "t3",
                    command="view",
                    path="/memories/../../etc/passwd",
                ),
            ],
            stop="tool_use",
        ),
        anthropic_reply([{"type": "text", "text": "Noted: black coffee."}]),
    )
    client = Anthropic(api_key="test-key", base_url=server.url, max_retries=0)

    final = client.beta.messages.tool_runner(
        model="claude-sonnet-4-5",
        max_tokens=1024,
        tools=[tool],
        messages=[{"role": "user", "content": "I take my coffee black, remember that."}],
    ).until_done()

    assert final.content[0].type == "text"
    assert agent.recall("how does Ann drink coffee?").hits[0].memory.content == (
        "Ann takes her coffee black"
    )
    first, second, third = (request.body for request in server.requests)
    assert {"type": "memory_20250818", "name": "memory"} in first["tools"]
    (listing,) = second["messages"][-1]["content"]
    assert listing["tool_use_id"] == "t1" and "/memories/profile.md" in str(listing["content"])
    created, refused = third["messages"][-1]["content"]
    assert "File created successfully" in str(created["content"])
    assert (tool.memory_root / "notes" / "coffee.md").read_text() == "Ann takes her coffee black"
    assert refused["is_error"] is True and "escape" in str(refused["content"])


def test_a_file_and_a_langgraph_key_on_one_text_keep_each_other(
    tool: HivekeepMemoryTool, hive: Hive
) -> None:
    langgraph = pytest.importorskip("hivekeep.integrations.langgraph")
    store = langgraph.HivekeepStore(hive)
    store.put(("assistant",), "bike", {"content": "Ann rides a red bike"})
    run(tool, "create", path="/memories/bike.md", file_text="Ann rides a red bike")
    item = store.get(("assistant",), "bike")  # the key still reaches it, its value intact
    assert item.value == {"content": "Ann rides a red bike"}

    store.put(("assistant",), "bike", {"content": "Ann rides a blue bike"})  # the key moves

    assert store.get(("assistant",), "bike").value["content"] == "Ann rides a blue bike"
    assert run(tool, "view", path="/memories/bike.md").endswith("Ann rides a red bike")
    run(tool, "delete", path="/memories/bike.md")
    assert store.get(("assistant",), "bike").value["content"] == "Ann rides a blue bike"
    assert contents(hive.get_agent("assistant")) == ["Ann rides a blue bike"]

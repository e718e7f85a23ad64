"""HivekeepMemoryTool, Claude's memory tool (memory_20250818) on a hive agent: every command
through the SDK's own entry point (``call``, as the tool runner calls it), path traversal refused,
and the SDK's tool runner against a local server speaking the Messages wire format."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("anthropic.lib.tools", reason="needs anthropic>=0.90")

from anthropic import Anthropic
from anthropic.lib.tools import ToolError

from hivekeep import Agent, Hive, Settings
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
def tool(agent: Agent) -> HivekeepMemoryTool:
    return HivekeepMemoryTool(agent)


def run(tool: HivekeepMemoryTool, command: str, **arguments: Any) -> str:
    result = tool.call({"command": command, **arguments})
    assert isinstance(result, str)
    return result


def test_the_root_lists_the_profile_the_archive_and_the_search_directory(
    tool: HivekeepMemoryTool, agent: Agent
) -> None:
    agent.memorize("Ann's cat is called Miso", category="fact")

    listing = run(tool, "view", path="/memories")

    assert listing.splitlines()[1:] == [
        "/memories",
        "/memories/profile.md",
        "/memories/archive/",
        "/memories/search/",
        f"/memories/archive/memory-{agent.list_memories().memories[0].id}.md",
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
        tool = HivekeepMemoryTool(agent)
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


def test_archive_files_are_memories(tool: HivekeepMemoryTool, agent: Agent) -> None:
    created = run(tool, "create", path="/memories/archive/tea.md", file_text="Ann drinks green tea")
    run(tool, "str_replace", path="/memories/archive/tea.md", old_str="green", new_str="oolong")
    run(tool, "insert", path="/memories/archive/tea.md", insert_line=1, insert_text="since 2024")

    assert created == "File created successfully at: /memories/archive/tea.md"
    memory = agent.list_memories().memories[0]
    assert memory.content == "Ann drinks oolong tea\nsince 2024"
    assert [v["content"] for v in agent.memory_history(memory.id)][-1] == "Ann drinks green tea"
    viewed = run(tool, "view", path="/memories/archive/tea.md")
    assert viewed.splitlines()[1:] == ["     1\tAnn drinks oolong tea", "     2\tsince 2024"]
    assert "/memories/archive/tea.md" in run(tool, "view", path="/memories/archive")


def test_creating_a_known_text_under_a_new_name_leaves_a_file_there(
    tool: HivekeepMemoryTool, agent: Agent
) -> None:
    run(tool, "create", path="/memories/archive/tea.md", file_text="Ann drinks green tea")

    again = run(tool, "create", path="/memories/archive/tea2.md", file_text="Ann drinks green tea")

    assert again == "File created successfully at: /memories/archive/tea2.md"
    for path in ("/memories/archive/tea.md", "/memories/archive/tea2.md"):
        assert run(tool, "view", path=path).splitlines()[1:] == ["     1\tAnn drinks green tea"]
    assert agent.list_memories().total == 1  # one memory, reached by both names
    listing = run(tool, "view", path="/memories/archive").splitlines()
    assert {"/memories/archive/tea.md", "/memories/archive/tea2.md"} <= set(listing)


def test_creating_a_known_fact_in_other_words_is_refused_with_where_it_is(
    tool: HivekeepMemoryTool, agent: Agent
) -> None:
    run(tool, "create", path="/memories/archive/tea.md", file_text="Ann drinks green tea")

    with pytest.raises(ToolError, match=r"already holds this as /memories/archive/tea.md"):
        run(tool, "create", path="/memories/archive/tea2.md", file_text="Ann drinks green tea.")

    with pytest.raises(ToolError, match="does not exist"):
        run(tool, "view", path="/memories/archive/tea2.md")  # no success, and no file
    assert agent.list_memories().total == 1


def test_a_text_another_agent_shares_is_refused_with_whose_it_is(
    tool: HivekeepMemoryTool, hive: Hive
) -> None:
    hive.agent("planner").memorize("The release is on 3 June", category="fact", scope="shared")

    with pytest.raises(ToolError, match=r"planner's shared memory \d+"):
        run(
            tool,
            "create",
            path="/memories/archive/release.md",
            file_text="The release is on 3 June",
        )


def test_files_that_share_a_memory_change_and_go_one_by_one(
    tool: HivekeepMemoryTool, agent: Agent
) -> None:
    text = "The standup is at 10am"
    for name in ("a.md", "b.md", "c.md"):
        run(tool, "create", path=f"/memories/archive/{name}", file_text=text)

    run(tool, "str_replace", path="/memories/archive/b.md", old_str="10am", new_str="11am")
    run(tool, "insert", path="/memories/archive/c.md", insert_line=1, insert_text="on Mondays")
    run(tool, "rename", old_path="/memories/archive/a.md", new_path="/memories/archive/d.md")

    def read(name: str) -> str:
        return "\n".join(
            line.split("\t", 1)[1]
            for line in run(tool, "view", path=f"/memories/archive/{name}").splitlines()[1:]
        )

    assert read("d.md") == text
    assert read("b.md") == "The standup is at 11am"
    assert read("c.md") == f"{text}\non Mondays"
    run(tool, "delete", path="/memories/archive/d.md")
    assert agent.trash().total == 1 and agent.list_memories().total == 2


def test_search_lists_the_files_recall_ranks_best(tool: HivekeepMemoryTool) -> None:
    run(tool, "create", path="/memories/archive/pet.md", file_text="Ann's cat is called Miso")
    run(tool, "create", path="/memories/archive/job.md", file_text="Ann works as a nurse")

    found = run(tool, "view", path="/memories/search/what is the name of Ann's pet?")

    assert found.splitlines()[1] == "/memories/archive/pet.md\tAnn's cat is called Miso"


def test_rename_and_delete(tool: HivekeepMemoryTool, agent: Agent) -> None:
    run(tool, "create", path="/memories/archive/a.md", file_text="The standup is at 10am")

    run(tool, "rename", old_path="/memories/archive/a.md", new_path="/memories/archive/b.md")
    assert "b.md" in run(tool, "view", path="/memories/archive/b.md").splitlines()[0]
    with pytest.raises(ToolError, match="does not exist"):
        run(tool, "view", path="/memories/archive/a.md")

    run(tool, "delete", path="/memories/archive/b.md")
    assert agent.list_memories().total == 0
    assert agent.trash().total == 1  # a rename kept the memory (and its history); delete trashed it
    with pytest.raises(ToolError, match="cannot be deleted"):
        run(tool, "delete", path="/memories/profile.md")


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "/memories/../etc/passwd",
        "/memories/archive/../../secrets",
        "/memoriesX/profile.md",
        "memories/profile.md",
        "/memories/archive/..",
        "/memories/archive\\..\\x",
        "/memories/archive/a\x00b",
    ],
)
def test_paths_outside_memories_are_refused(tool: HivekeepMemoryTool, path: str) -> None:
    for command, arguments in (
        ("view", {"path": path}),
        ("create", {"path": path, "file_text": "x"}),
        ("delete", {"path": path}),
        ("rename", {"old_path": "/memories/profile.md", "new_path": path}),
    ):
        with pytest.raises(ToolError, match=r"must start with /memories|escape"):
            run(tool, command, **arguments)


@pytest.mark.parametrize(
    "name",
    [
        "a.md\n/memories/archive/forged.md",  # a second, fake line in the listing
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
        run(tool, "create", path=f"/memories/archive/{name}", file_text="Ann likes tea")
    run(tool, "create", path="/memories/archive/tea.md", file_text="Ann likes tea")
    with pytest.raises(ToolError, match="line break, control or bidi character"):
        run(
            tool,
            "rename",
            old_path="/memories/archive/tea.md",
            new_path=f"/memories/archive/{name}",
        )
    listing = run(tool, "view", path="/memories/archive").splitlines()
    assert listing[1:] == ["/memories/archive", "/memories/archive/tea.md"]  # no forged line
    assert agent.list_memories().total == 1


def test_files_hivekeep_cannot_hold_are_refused_with_the_layout(tool: HivekeepMemoryTool) -> None:
    with pytest.raises(ToolError, match="one memory per file"):
        run(tool, "create", path="/memories/notes/todo.md", file_text="x")
    with pytest.raises(ToolError, match="one memory per file"):
        run(tool, "create", path="/memories/archive/deep/todo.md", file_text="x")
    with pytest.raises(ToolError, match="at most 2000"):
        run(tool, "create", path="/memories/archive/big.md", file_text="x" * 2001)


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
                    path="/memories/archive/coffee.md",
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
    assert refused["is_error"] is True and "escape" in str(refused["content"])


def test_a_file_and_a_langgraph_key_on_one_text_keep_each_other(
    tool: HivekeepMemoryTool, hive: Hive
) -> None:
    langgraph = pytest.importorskip("hivekeep.integrations.langgraph")
    store = langgraph.HivekeepStore(hive)
    store.put(("assistant",), "bike", {"content": "Ann rides a red bike"})
    run(tool, "create", path="/memories/archive/bike.md", file_text="Ann rides a red bike")
    item = store.get(("assistant",), "bike")  # the key still reaches it, its value intact
    assert item.value == {"content": "Ann rides a red bike"}

    store.put(("assistant",), "bike", {"content": "Ann rides a blue bike"})  # the key moves

    assert store.get(("assistant",), "bike").value["content"] == "Ann rides a blue bike"
    viewed = run(tool, "view", path="/memories/archive/bike.md")
    assert viewed.splitlines()[1:] == ["     1\tAnn rides a red bike"]
    run(tool, "rename", old_path="/memories/archive/bike.md", new_path="/memories/archive/b.md")
    store.delete(("assistant",), "bike")
    assert run(tool, "view", path="/memories/archive/b.md").endswith("Ann rides a red bike")
    run(tool, "delete", path="/memories/archive/b.md")
    # the memory was reached as memory-1.md before the file was named: that name stays with it
    memory_id = hive.get_agent("assistant").list_memories().memories[0].id
    run(tool, "delete", path=f"/memories/archive/memory-{memory_id}.md")
    assert hive.get_agent("assistant").list_memories().total == 0

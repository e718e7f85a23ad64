"""The ``hivekeep`` command, run in-process with CliRunner against real hive files in tmp_path.

Every command opens a real SQLite hive with the real bundled embedder; the only stand-in is an
embedding provider that is down (``Outage``), for the failure paths of reembed and recall.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from hivekeep import Hive, ProviderError
from hivekeep.cli import cli
from hivekeep.providers.embeddings import registry

CLEAN_ENV = ("HIVEKEEP_DB", "HIVEKEEP_AGENT", "HIVEKEEP_EMBEDDINGS", "MEMORY_PROFILE_MAX_TOKENS")
LOCAL_MODEL = "local:all-MiniLM-L6-v2-int8"
LISBON = "The user moved to Lisbon in May 2024."


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in CLEAN_ENV:
        monkeypatch.delenv(name, raising=False)


def run(
    args: list[str], *, code: int = 0, input: str | None = None, env: dict[str, str] | None = None
) -> Result:
    """``hivekeep ARGS`` in-process; checks the exit code, and that a failure shows no traceback."""
    result = CliRunner().invoke(cli, args, input=input, env=env, catch_exceptions=False)
    assert result.exit_code == code, result.output
    if code:
        assert "Traceback" not in result.output
    return result


class Hivekeep:
    """``hk("memorize --agent a", "some text")`` runs ``hivekeep memorize --agent a 'some text'``
    on this hive: the first string is split on spaces, the others are passed as they are."""

    def __init__(self, db: str) -> None:
        self.db = db

    def __call__(self, command: str, *args: str, **options: Any) -> Result:
        return run([*command.split(), *args, "--db", self.db], **options)

    def json(self, command: str, *args: str, **options: Any) -> Any:
        return json.loads(self(command, *args, "--json", **options).stdout)

    def profile(self) -> dict[str, Any]:
        shown: dict[str, Any] = self.json("profile show --agent assistant")
        return shown


@pytest.fixture
def hk(tmp_path: Path) -> Hivekeep:
    return Hivekeep(str(tmp_path / "hive.db"))


@pytest.fixture
def hka(hk: Hivekeep) -> Hivekeep:
    """A hive with one agent, 'assistant'."""
    hk("agents create assistant --role", "General helper")
    return hk


# -- help --------------------------------------------------------------------------------------


def walk(command: click.Command, path: tuple[str, ...] = ()) -> Iterator[tuple[str, click.Command]]:
    yield " ".join(path), command
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            yield from walk(sub, (*path, name))


def test_every_command_has_help_with_an_example() -> None:
    commands = dict(walk(cli))
    assert set(commands) >= {
        "",
        "agents",
        "agents list",
        "agents create",
        "memorize",
        "recall",
        "profile",
        "profile show",
        "profile edit",
        "reembed",
    }
    for name, command in commands.items():
        assert command.help and command.help.strip(), f"'hivekeep {name}' has no help"
        assert "Example" in command.help, f"'hivekeep {name}' has no example in its help"
        assert command.get_short_help_str().strip(), name
        assert "Usage: " in run([*name.split(), "--help"]).stdout


def test_version() -> None:
    assert "version 0.1.0" in run(["--version"]).stdout


# -- agents ------------------------------------------------------------------------------------


def test_agents_create_and_list(hk: Hivekeep) -> None:
    assert "no hive at" in hk("agents", code=1).output  # a read never creates the file
    assert hk("agents create assistant --role", "General helper").stdout == (
        "Created agent 1 'assistant'.\n"
    )
    made = hk.json("agents create planner")
    assert (made["id"], made["name"], made["role"]) == (2, "planner", "")

    table = hk("agents").stdout.splitlines()
    assert [line.split() for line in table] == [
        ["ID", "NAME", "ROLE"],
        ["1", "assistant", "General", "helper"],
        ["2", "planner"],
    ]
    assert hk("agents list").stdout.splitlines() == table
    listed = [(a["id"], a["name"], a["role"]) for a in hk.json("agents")]
    assert listed == [(1, "assistant", "General helper"), (2, "planner", "")]
    assert hk.json("agents list") == hk.json("agents")


def test_duplicate_or_invalid_agent_name_fails_with_the_message(hka: Hivekeep) -> None:
    taken = hka("agents create Assistant", code=1)
    assert (
        taken.stderr == "Error: An agent named 'Assistant' already exists; choose another name.\n"
    )
    assert "is not valid" in hka("agents create 9lives", code=1).stderr
    assert len(hka.json("agents")) == 1


def test_agents_delete_says_what_goes_and_what_stays(hka: Hivekeep) -> None:
    hka("agents create reader")
    hka("memorize --agent assistant --scope shared --category fact", "Standup is at 10am.")
    hka("memorize --agent assistant --category fact", "The user hums while thinking.")
    kept = hka("agents delete assistant", input="n\n", code=1)
    assert kept.stdout.startswith(
        "Delete agent 'assistant'? This deletes its profile, 1 private memory and 0 "
        "conversations (with their messages and summaries). Kept: its 1 shared memory, "
        "recallable by every agent as shared by assistant (deleted). [y/N]: "
    )
    assert "Aborted" in kept.stderr
    assert len(hka.json("agents")) == 2  # nothing deleted
    gone = hka("agents delete assistant", input="y\n").stdout
    assert gone.endswith(
        "Deleted agent 'assistant': its profile, 1 private memory and 0 conversations. Kept 1 "
        "shared memory, recallable by every agent as shared by assistant (deleted).\n"
    )
    recalled = hka("recall --agent reader", "standup").stdout
    assert "shared by assistant (deleted)" in recalled
    hka("agents create helper")
    assert hka.json("agents delete helper --yes") == {
        "name": "helper",
        "private_memories": 0,
        "shared_memories": 0,
        "conversations": 0,
    }


def test_db_from_the_environment_or_from_any_level(tmp_path: Path) -> None:
    path = str(tmp_path / "from-env.db")
    run(["agents", "create", "first"], env={"HIVEKEEP_DB": path})
    assert Path(path).exists()
    run(["--db", path, "agents", "create", "second"])  # on the root group
    run(["agents", "--db", path, "create", "third"])  # on the agents group
    listed = run(["agents", "--json"], env={"HIVEKEEP_DB": path}).stdout
    assert [a["name"] for a in json.loads(listed)] == ["first", "second", "third"]
    assert "first" in run(["agents", "list", "--db", path]).stdout
    assert not (tmp_path / "hivekeep.db").exists()


def test_json_before_a_subcommand_is_a_usage_error(hk: Hivekeep) -> None:
    result = run(["agents", "--json", "create", "x", "--db", hk.db], code=2)
    assert "after the subcommand" in result.stderr
    assert not Path(hk.db).exists()


# -- memorize and recall -----------------------------------------------------------------------


@pytest.mark.slow
def test_memorize_then_recall(hka: Hivekeep) -> None:
    saved = hka("memorize --agent assistant --category fact --subject user --importance 7", LISBON)
    assert saved.stdout == "Saved memory 1.\n"
    again = hka("memorize --agent 1 --category fact --subject user", LISBON)
    assert again.stdout == "Already known as memory 1 (duplicate).\n"  # an exact repeat
    reworded = hka("memorize --agent 1 --category fact --subject user", LISBON.lower())
    assert reworded.stdout.splitlines() == [
        "Reworded memory 1: the same fact, now in your words (reworded; the previous text is "
        "kept in `hivekeep history --agent 1 1`)."
    ]
    hka("restore --agent 1 1 --version 1")  # undo
    hka("agents create planner")
    hka(
        "memorize --agent planner --category decision --scope shared --source-context standup",
        "Deploys go out on Tuesdays.",
    )

    lines = hka("recall --agent assistant", "where does the user live?").stdout.splitlines()
    # the match in words (issue 34: a raw fused score told nothing), and which search found it
    assert lines[0] == (
        "1. #1 · fact · subject: user · just now · strong match: some words of the query, "
        "and close in meaning"
    )
    assert lines[1] == f"   {LISBON}"
    shared = hka("recall --agent assistant --category decision", "when do deploys go out?")
    assert shared.stdout.splitlines()[0].endswith(" · shared by planner")
    assert "Deploys go out on Tuesdays." in shared.stdout and "Lisbon" not in shared.stdout

    found = hka.json("recall --agent assistant --limit 1", "Lisbon")
    with Hive(hka.db) as hive:
        direct = hive.get_agent("assistant").call_tool("recall", {"query": "Lisbon", "limit": 1})
    assert set(found) == set(direct) == {"memories"}
    assert [set(m) for m in found["memories"]] == [set(m) for m in direct["memories"]]
    memory = found["memories"][0]
    assert (memory["id"], memory["content"], memory["importance"]) == (1, LISBON, 7)
    assert isinstance(memory["score"], float)
    assert (memory["match"], memory["found_by"]) == ("strong", ["vector", "text"])
    assert memory["why"] == "strong match: every word of the query, and close in meaning"

    none = hka("recall --agent assistant --since 2999-01-01", "Lisbon")
    assert none.stdout == "No memories found.\n"


def test_memorize_json_is_the_tool_result(hka: Hivekeep) -> None:
    assert hka.json("memorize --agent assistant --category preference", "User likes tea") == {
        "id": 1,
        "content": "User likes tea",
        "category": "preference",
        "subject": None,
        "scope": "private",
        "duplicate": False,
    }


def test_tool_errors_exit_non_zero_with_the_tools_rules_in_the_clis_words(hka: Hivekeep) -> None:
    """The tools' rules, worded with the CLI's option and argument names (not the model-facing
    'Parameters: ...' message)."""
    bad = hka("memorize --agent assistant --category gossip x", code=1)
    assert bad.stderr == (
        "Error: Invalid value for '--category': input should be 'fact', 'preference', "
        "'decision' or 'knowledge'.\n"
    )
    assert bad.stdout == ""
    missing = hka("memorize --agent assistant x", code=1)
    assert missing.stderr == "Error: Missing option '--category'.\n"
    too_many = hka("recall --agent assistant --limit 99 --json x", code=1)
    assert too_many.stderr == (
        "Error: Invalid value for '--limit': input should be less than or equal to 50.\n"
    )
    assert too_many.stdout == ""
    too_long = hka("memorize --agent assistant --category fact", "x" * 2001, code=1).stderr
    assert too_long.startswith("Error: Invalid value for 'CONTENT': ")
    assert "Parameters:" not in too_long + missing.stderr + bad.stderr


def test_unknown_or_missing_agent(hka: Hivekeep) -> None:
    assert "No agent 'nobody'" in hka("recall --agent nobody tea", code=1).stderr
    assert "No agent 42" in hka("profile show --agent 42", code=1).stderr
    assert "--agent" in hka("recall tea", code=2).stderr
    from_env = hka("recall tea", env={"HIVEKEEP_AGENT": "assistant"})
    assert from_env.stdout == "No memories found.\n"


# -- profile -----------------------------------------------------------------------------------


def test_profile_edit_from_a_file_then_show(hka: Hivekeep, tmp_path: Path) -> None:
    empty = hka("profile show --agent assistant")
    assert empty.stdout == "" and "empty" in empty.stderr
    document = "## Preferences\n- Likes green tea\n"
    source = tmp_path / "profile.md"
    source.write_text(document, encoding="utf-8")

    saved = hka("profile edit --agent assistant --file", str(source))
    assert saved.stdout.startswith("Saved the profile of assistant (revision 1, ")
    assert hka("profile show --agent assistant").stdout == document
    shown = hka.profile()
    assert shown["profile"] == document and shown["revision"] == 1 and shown["budget"] == 1500
    assert 0 < shown["tokens"] < 20

    assert hka("profile edit --agent assistant --file", str(source)).stdout == "No changes.\n"
    assert hka.profile()["revision"] == 1


def test_profile_edit_from_stdin(hka: Hivekeep) -> None:
    hka("profile edit --agent assistant --file -", input="## Work\n- Ships on Fridays\n")
    assert hka.profile()["profile"] == "## Work\n- Ships on Fridays\n"


def test_profile_over_budget_is_refused_and_unchanged(hka: Hivekeep) -> None:
    small = {"MEMORY_PROFILE_MAX_TOKENS": "20"}
    hka("profile edit --agent assistant --file -", env=small, input="## Notes\n- short\n")
    before = hka.profile()
    long = "## Notes\n" + "".join(f"- a long line of detail number {i}\n" for i in range(20))
    result = hka("profile edit --agent assistant --file -", env=small, input=long, code=1)
    assert "over its budget of 20" in result.stderr and "edit_profile" not in result.stderr
    assert hka.profile() == before


def editor(tmp_path: Path, body: str) -> dict[str, str]:
    """EDITOR set to a Python script that runs ``body`` with ``path`` bound to the edited file."""
    script = tmp_path / "editor.py"
    script.write_text(f"import sys\npath = sys.argv[1]\n{textwrap.dedent(body)}", encoding="utf-8")
    return {"EDITOR": f'"{sys.executable}" "{script}"'}


def test_profile_edit_in_the_editor(hka: Hivekeep, tmp_path: Path) -> None:
    hka("profile edit --agent assistant --file -", input="## Drinks\n- tea\n")
    swap = """
        text = open(path).read().replace("tea", "coffee")
        open(path, "w").write(text)
    """
    hka("profile edit --agent assistant", env=editor(tmp_path, swap))
    assert hka.profile()["profile"] == "## Drinks\n- coffee\n"

    untouched = hka("profile edit --agent assistant", env=editor(tmp_path, "pass\n"))
    assert untouched.stdout == "No changes.\n"
    assert hka.profile()["revision"] == 2


def test_profile_edit_reports_a_concurrent_change_and_keeps_the_edit(
    hka: Hivekeep, tmp_path: Path
) -> None:
    hka("profile edit --agent assistant --file -", input="## Drinks\n- tea\n")
    theirs = tmp_path / "theirs.md"
    theirs.write_text("## Drinks\n- water\n", encoding="utf-8")
    # While the user is in the editor, another process replaces the profile.
    race = f"""
        import subprocess
        command = ["profile", "edit", "--agent", "assistant", "--file", {str(theirs)!r}]
        subprocess.run([sys.executable, "-m", "hivekeep", *command, "--db", {hka.db!r}],
                       check=True, capture_output=True)
        open(path, "w").write("## Drinks\\n- coffee\\n")
    """
    result = hka("profile edit --agent assistant", env=editor(tmp_path, race), code=1)
    assert "changed since it was read" in result.stderr
    assert "- coffee" in result.stderr  # the user's edit is shown, not lost
    assert hka.profile()["profile"] == "## Drinks\n- water\n"


# -- reembed -----------------------------------------------------------------------------------


def test_reembed_all_with_progress(hka: Hivekeep) -> None:
    for fact in ("The user moved to Lisbon.", "The user likes tea.", "Deploys are on Tuesdays."):
        hka("memorize --agent assistant --category fact", fact)
    result = hka("reembed --all")
    assert result.stdout == f"Re-embedded 3 memories with {LOCAL_MODEL}.\n"
    assert "Re-embedding" in result.stderr  # the progress bar (without a tty, its label only)
    found = hka.json("recall --agent assistant", "release schedule")["memories"]
    assert found[0]["content"] == "Deploys are on Tuesdays."  # no word in common: by vector
    assert hka("reembed").stdout == f"Re-embedded 0 memories with {LOCAL_MODEL}.\n"


class Outage:
    """An embedding provider that is down."""

    model_id = "outage:test"
    dimension = 384

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise ProviderError("Embedder 'outage:test' is unreachable (connection refused).")


def test_reembed_to_a_model_that_fails_switches_nothing(
    hka: Hivekeep, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: a failed `reembed --embeddings X` had already switched the hive to X."""
    for fact in ("The user moved to Lisbon.", "The user likes green tea."):
        hka("memorize --agent assistant --category fact", fact)
    monkeypatch.setitem(registry._REGISTRY, "outage", lambda model: Outage())
    result = hka("reembed --embeddings outage", code=1)
    assert "connection refused" in result.stderr
    assert f"Nothing was switched: the hive still uses '{LOCAL_MODEL}'" in result.stderr
    found = hka.json("recall --agent assistant", "green tea")["memories"]  # no model mismatch
    assert found[0]["content"] == "The user likes green tea."
    assert "Unknown embedding provider" in hka("reembed --embeddings nope", code=1).stderr


# -- issue 34 ---------------------------------------------------------------------------------


def test_configure_set_adds_an_override_and_keeps_the_others(hka: Hivekeep) -> None:
    hka("agents configure assistant --set threshold_percent=60")
    shown = hka("agents configure assistant --set keep_percent=30").stdout
    assert "threshold_percent: 60  (this agent's)" in shown
    assert "keep_percent: 30  (this agent's)" in shown
    cleared = hka("agents configure assistant --reset-compaction --set keep_percent=20").stdout
    assert "threshold_percent: 75.0\n" in cleared and "keep_percent: 20  (this agent's)" in cleared


def test_bench_leaves_the_recall_counts_alone(hka: Hivekeep) -> None:
    for fact in ("The user moved to Lisbon.", "The user likes green tea.", "Deploys on Tuesdays."):
        hka("memorize --agent assistant --category fact", fact)
    hka("bench --agent assistant --queries 5 --writes 2")
    with Hive(hka.db) as hive:
        counts = [m.retrieval_count for m in hive.get_agent("assistant").list_memories().memories]
    assert counts == [0, 0, 0]


def test_memorize_from_the_command_line_is_recorded_as_the_persons(hka: Hivekeep) -> None:
    hka("memorize --agent assistant --category fact", "The user moved to Lisbon.")
    [version] = hka.json("history --agent assistant 1")
    assert version["changed_by"] == "person"


def test_backup_into_a_missing_folder_names_the_folder(hka: Hivekeep, tmp_path: Path) -> None:
    target = tmp_path / "no-such-folder" / "copy.db"
    failed = hka("backup", str(target), code=1)
    assert f"The folder {target.parent} does not exist" in failed.stderr
    assert "hive" not in failed.stderr.split("does not exist")[0]


def test_mcp_http_on_a_busy_port_says_so_before_serving(hka: Hivekeep) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        failed = hka("mcp --agent assistant --http", str(port), code=1)
    assert f"Port {port} on 127.0.0.1 is already in use" in failed.stderr
    assert "--http PORT" in failed.stderr and "Serving" not in failed.output


# -- the installed command ---------------------------------------------------------------------


@pytest.mark.slow
def test_console_script_and_python_m(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in CLEAN_ENV}

    def shell(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, capture_output=True, text=True, env=env, check=False)

    helped = shell(sys.executable, "-m", "hivekeep", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "Usage: hivekeep" in helped.stdout and "reembed" in helped.stdout

    script = shutil.which("hivekeep") or str(Path(sys.executable).parent / "hivekeep")
    path = str(tmp_path / "script.db")
    made = shell(script, "agents", "create", "scripted", "--db", path)
    assert made.returncode == 0, made.stderr
    listed = shell(script, "agents", "--db", path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[1].split() == ["1", "scripted"]
    taken = shell(script, "agents", "create", "scripted", "--db", path)
    assert taken.returncode == 1
    assert taken.stderr == "Error: An agent named 'scripted' already exists; choose another name.\n"

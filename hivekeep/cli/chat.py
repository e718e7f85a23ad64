"""``hivekeep chat``: talk to an agent in the terminal, with its memory at work.

A line-by-line REPL over ``Agent.chat_stream``: the reply streams as it arrives, each memory tool
the model calls shows as a dim line, and a turn that triggered compaction ends with one line saying
what it did. Input is read with ``readline`` from stdin, not a TTY prompt, so a pipe works too
(``printf 'hi\\n/profile\\n' | hivekeep chat --agent a``). Errors of one turn (a provider outage)
are printed and the session goes on; only a missing LLM or agent stops it before it starts.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

import click

from hivekeep import Agent, ChatReply, HivekeepError, Resumed, TextDelta, ToolUse, ValidationError
from hivekeep.cli import ID, agent_option, db_option, echo, open_hive
from hivekeep.cli.upkeep import compaction_line
from hivekeep.core.text import safe_for_terminal

HELP = """Commands:
  /compact        compact this conversation now (summarise older messages, update memory)
  /profile        show the agent's profile
  /recall QUERY   search the agent's memories
  /help           show this list
  /quit           leave (Ctrl-D does too)"""

ARGUMENT_CHARS = 60  # of each tool argument shown in the dim tool line


def dim(text: str) -> str:
    return click.style(text, dim=True)


def describe_tool_use(use: ToolUse) -> str:
    """``· recall(query="tea") → 2 memories``: what the model did, short enough for one line."""
    shown = []
    for name, value in use.arguments.items():
        text = json.dumps(value, ensure_ascii=False)
        if len(text) > ARGUMENT_CHARS:
            text = text[: ARGUMENT_CHARS - 1] + "…"
        shown.append(f"{name}={text}")
    return f"· {use.name}({', '.join(shown)}){_result(use.result)}"


def _result(result: dict[str, Any]) -> str:
    if "error" in result:
        message = str(result["error"])
        return f" → error: {message[:200]}"
    if isinstance(result.get("memories"), list):
        return f" → {len(result['memories'])} memories"
    if result.get("reworded"):
        return f" → reworded #{result['id']}"
    if result.get("duplicate"):
        return f" → already known as #{result['id']}"
    if "id" in result:
        return f" → #{result['id']}"
    return ""


def _upkeep_line(resumed: Resumed) -> str | None:
    """What the deferred start-up work did for this chat's agent, if anything worth a line (a
    failed bootstrap is logged once by the library, saying what bootstrap is)."""
    parts = []
    if any(o.updated for o in resumed.bootstrap.agents):
        parts.append("compiled its first profile from the archive")
    if resumed.maintenance:
        parts.append(f"ran {len(resumed.maintenance)} pending maintenance call(s)")
    return f"· upkeep: {'; '.join(parts)}" if parts else None


@click.command()
@agent_option
@click.option(
    "--conversation",
    "conversation_id",
    type=ID,
    metavar="ID",
    help="Continue this conversation (default: a new one, started by your first message).",
)
@click.option("--speaker", metavar="NAME", help="Your name, stored with each message you send.")
@db_option
def chat(agent_key: str, conversation_id: int | None, speaker: str | None, db: str) -> None:
    """Chat with an agent in the terminal, using the configured LLM (HIVEKEEP_LLM).

    The agent sees its profile, recalls and memorizes with its tools, and compacts the conversation
    when the context fills. Type /help for the commands (/compact, /profile, /recall QUERY, /quit).
    A new conversation prints its id (`hivekeep conversations list` shows them all). Lines can
    come from a pipe; if no message got an answer, the exit status is 1. Example:

    \b
        HIVEKEEP_LLM=openai:gpt-4o-mini hivekeep chat --agent assistant
        hivekeep chat --agent assistant --conversation 3 --speaker Ada
        printf 'I moved to Lisbon.\\n/profile\\n' | hivekeep chat --agent assistant
    """
    if speaker is not None and not 1 <= len(speaker.strip()) <= 100:
        raise click.BadParameter("must be 1-100 characters.", param_hint="--speaker")
    with open_hive(db) as hive:
        agent = hive.get_agent(agent_key)
        model = agent.chat_model()  # no LLM: say what to set, before the REPL starts
        if conversation_id is not None:
            agent.conversation(conversation_id)  # an unknown id is an error now, not at turn one
        stdin = sys.stdin  # read at call time: a pipe, a TTY, or what CliRunner gives
        where = f"conversation {conversation_id}" if conversation_id else "a new conversation"
        click.echo(
            dim(
                f"Chatting with {agent.name} ({model.model_id}) in {where}. "
                "/help lists the commands; /quit or Ctrl-D leaves."
            ),
            err=True,
        )
        room = agent.room_warning()  # a window too small for the fixed part: said up front
        if room:
            click.echo(click.style(f"Warning: {room}", fg="yellow"), err=True)
        upkeep = _upkeep_line(hive.resume(agent.id))  # this agent's upkeep: others wait
        if upkeep:
            click.echo(dim(upkeep), err=True)
        session = Session(agent, conversation_id, speaker, interactive=stdin.isatty())
        session.run(stdin)
        if session.failed and not session.answered:  # a script must see that nothing worked
            raise click.ClickException(
                f"{session.failed} message(s) sent, none answered (the errors are above)."
            )


class Session:
    """One REPL: the conversation it talks in (set by the first turn when new) and its commands."""

    def __init__(
        self, agent: Agent, conversation_id: int | None, speaker: str | None, *, interactive: bool
    ) -> None:
        self.agent = agent
        self.conversation_id = conversation_id
        self.speaker = speaker
        self.interactive = interactive
        self.answered = 0  # turns that ended in a reply
        self.failed = 0  # turns that ended in an error

    def run(self, stdin: TextIO) -> None:
        while True:
            if self.interactive:
                click.echo(click.style("you> ", bold=True), nl=False)
            try:
                line = stdin.readline()
            except KeyboardInterrupt:
                click.echo()
                return
            if not line:  # end of input: Ctrl-D, or the pipe is done
                if self.interactive:
                    click.echo()
                return
            text = line.strip()
            if not text:
                continue
            if text.startswith("/"):
                if not self.command(text):
                    return
            else:
                self.turn(text)

    def turn(self, text: str) -> None:
        """One message and the streamed reply; a failure is shown and the session goes on."""
        at_line_start = True
        try:
            if self.conversation_id is None:  # started here so a failed first turn keeps it
                self.conversation_id = self.agent.conversations.start().id
                click.echo(
                    dim(
                        f"· conversation {self.conversation_id} (continue it later with "
                        f"--conversation {self.conversation_id})"
                    ),
                    err=True,
                )
            events = self.agent.chat_stream(text, self.conversation_id, speaker=self.speaker)
            for event in events:
                if isinstance(event, TextDelta):
                    if at_line_start and self.interactive:
                        click.echo(click.style(f"{self.agent.name}> ", fg="cyan"), nl=False)
                    echo(event.text, nl=False)
                    at_line_start = event.text.endswith("\n")
                elif isinstance(event, ToolUse):
                    if not at_line_start:
                        click.echo()
                    click.echo(dim(safe_for_terminal(describe_tool_use(event))))
                    at_line_start = True
                elif isinstance(event, ChatReply):
                    if not at_line_start:
                        click.echo()
                    at_line_start = True
                    self.answered += 1
                    if event.compaction is not None:
                        click.echo(dim(f"· {compaction_line(event.compaction)}"))
        except KeyboardInterrupt:
            click.echo("" if at_line_start else "\n", nl=False)
            click.echo(dim("(interrupted)"))
        except HivekeepError as exc:
            self.failed += 1
            if not at_line_start:
                click.echo()
            click.echo(click.style(f"Error: {safe_for_terminal(str(exc))}", fg="red"), err=True)

    def command(self, text: str) -> bool:
        """Run a slash command; False means leave."""
        name, _, argument = text.partition(" ")
        argument = argument.strip()
        try:
            if name in ("/quit", "/exit"):
                return False
            if name == "/help":
                click.echo(HELP)
            elif name == "/profile":
                self.show_profile()
            elif name == "/recall":
                self.recall(argument)
            elif name == "/compact":
                self.compact()
            else:
                click.echo(f"Unknown command {name}; /help lists the commands.", err=True)
        except HivekeepError as exc:
            click.echo(click.style(f"Error: {safe_for_terminal(str(exc))}", fg="red"), err=True)
        return True

    def show_profile(self) -> None:
        text = self.agent.profile_text()
        if text.strip():
            echo(text, nl=not text.endswith("\n"))
        else:
            click.echo(f"The profile of {self.agent.name} is empty.")

    def recall(self, query: str) -> None:
        if not query:
            click.echo("Usage: /recall QUERY", err=True)
            return
        result = self.agent.call_tool("recall", {"query": query})
        if "error" in result:
            raise ValidationError(str(result["error"]))
        if "warning" in result:
            click.echo(f"Warning: {result['warning']}", err=True)
        if not result["memories"]:
            click.echo("No memories found.")
        for rank, memory in enumerate(result["memories"], start=1):
            about = f", {memory['subject']}" if memory.get("subject") else ""
            echo(f"{rank}. #{memory['id']} ({memory['category']}{about}) {memory['content']}")

    def compact(self) -> None:
        if self.conversation_id is None:
            click.echo("Nothing to compact yet: the conversation starts with your first message.")
            return
        click.echo(compaction_line(self.agent.compact(self.conversation_id)))

"""``hivekeep compact``: fold a conversation's older messages into a summary now, on request.

Compaction normally runs by itself after a chat turn that fills the context; this command forces it
(at least half of the raw history is folded), e.g. before a long task or to see what maintenance
extracts. ``compaction_line`` is shared with ``hivekeep chat``, which reports the same outcome.
"""

from __future__ import annotations

import click

from hivekeep import CompactionOutcome
from hivekeep.cli import ID, agent_option, db_option, echo_json, json_option, open_hive


def compaction_line(outcome: CompactionOutcome) -> str:
    """One line a person reads: what was folded and extracted, or why it failed."""
    maintenance = outcome.maintenance
    if outcome.status == "error":
        done = f" after folding {outcome.messages_folded} messages" if outcome.summary_ids else ""
        return f"Compaction failed{done}: {outcome.error}"
    if outcome.status == "nothing" and maintenance is None:
        return "Nothing to compact: no messages are left to fold."
    folded = outcome.messages_folded
    parts = [f"Compacted {_count(folded, 'message')}" if folded else "No messages to fold"]
    if outcome.merged_ids:
        parts.append(f"merged {len(outcome.merged_ids)} summaries")
    if maintenance is not None and maintenance.status != "done":
        parts.append(f"maintenance failed ({maintenance.error}); it will be retried")
    else:
        parts.append(f"{_count(outcome.memories_extracted, 'memory', 'memories')} extracted")
        if maintenance is not None and maintenance.memories_updated:
            parts.append(f"{_count(maintenance.memories_updated, 'memory', 'memories')} updated")
        if maintenance is not None and maintenance.memories_consolidated:
            consolidated = _count(maintenance.memories_consolidated, "memory", "memories")
            parts.append(f"{consolidated} consolidated")
        parts.append("profile updated" if outcome.profile_updated else "profile unchanged")
    return ", ".join(parts) + "."


def _count(number: int, one: str, many: str | None = None) -> str:
    return f"{number} {one if number == 1 else many or one + 's'}"


@click.command()
@agent_option
@click.option(
    "--conversation",
    "conversation_id",
    type=ID,
    metavar="ID",
    help="The conversation to compact (default: the agent's most recently active one).",
)
@db_option
@json_option
def compact(agent_key: str, conversation_id: int | None, db: str, as_json: bool) -> None:
    """Compact a conversation now: summarise its older messages, then update memory from them.

    Uses the configured LLM (HIVEKEEP_LLM, or COMPACTING_MODEL / MEMORY_EXTRACTION_MODEL). Exits
    with status 1 when the compaction failed or another one of this agent is running. Example:

    \b
        hivekeep compact --agent assistant
        hivekeep compact --agent assistant --conversation 3 --json
    """
    with open_hive(db) as hive:
        agent = hive.get_agent(agent_key)
        agent.chat_model("compaction")  # say what to configure before anything else
        if conversation_id is None:
            conversations = agent.conversations()
            if not conversations:
                raise click.ClickException(
                    f"{agent.name} has no conversations to compact; start one with "
                    f"`hivekeep chat --agent {agent.name}`."
                )
            conversation_id = conversations[0].id
        outcome = agent.compact(conversation_id)  # AgentBusy: a clean error from the group
    failed = outcome.status == "error"
    if as_json:
        echo_json(
            {"conversation_id": outcome.conversation_id, "record_id": outcome.record_id}
            | outcome.details
        )
        if failed:
            click.echo(f"Error: compaction failed: {outcome.error}", err=True)
    else:
        line = compaction_line(outcome)
        click.echo(f"Conversation {outcome.conversation_id} of {agent.name}: {line}", err=failed)
        for note in outcome.maintenance.notes if outcome.maintenance else ():
            click.echo(f"  note: {note}")
    if failed:
        raise click.exceptions.Exit(1)

"""Conversations that mirror a thread kept elsewhere: a Claude Code session, an exported chat.

Each is keyed by its source and its id there (``meta`` row ``thread:AGENT:SOURCE:KEY``, holding
the conversation's id and how many of the thread's messages it holds), so running the same import
or hook again stores only the messages that are new since. A thread whose conversation was
deleted is stored again, as new. The check, the write and the key change in one transaction.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from hivekeep.errors import NotFound
from hivekeep.store.base import Store
from hivekeep.store.conversations import (
    NewMessage,
    RestoredConversation,
    RestoredMessage,
)


@dataclass(frozen=True)
class Synced:
    conversation_id: int
    created: bool  # the conversation is new
    added: int  # messages stored by this call (0: nothing new)


def thread_key(agent_id: int, source: str, key: str) -> str:
    return f"thread:{agent_id}:{source}:{key}"


class ThreadService:
    def __init__(self, store: Store) -> None:
        self.store = store

    def known(self, agent_id: int, source: str, key: str) -> tuple[int, int] | None:
        """(conversation id, messages held) of a thread already stored; None: not yet."""
        raw = self.store.get_meta(thread_key(agent_id, source, key))
        if raw is None:
            return None
        state = json.loads(raw)
        try:
            conversation = self.store.get_conversation(int(state["conversation_id"]))
        except NotFound:
            return None
        if conversation.agent_id != agent_id:
            return None
        return conversation.id, int(state["messages"])

    def sync(
        self,
        agent_id: int,
        source: str,
        key: str,
        title: str,
        messages: Sequence[NewMessage],
        *,
        created_at: str,
        updated_at: str,
    ) -> Synced:
        """Store the thread's messages (all of them, in order) that are not stored yet.

        ``messages`` is the whole thread as it is now; a thread already stored gets only those
        past the count it holds. A new one is created with the thread's title and times.
        """
        with self.store.transaction():
            known = self.known(agent_id, source, key)
            if known is None:
                restored = self.store.restore_conversation(
                    agent_id,
                    RestoredConversation(
                        title=title,
                        created_at=created_at,
                        updated_at=updated_at,
                        messages=tuple(RestoredMessage(m) for m in messages),
                    ),
                )
                conversation_id, created, added = restored.conversation.id, True, len(messages)
            else:
                conversation_id, held = known
                new = list(messages[held:])
                if new:
                    self.store.add_messages(conversation_id, new)
                created, added = False, len(new)
            state = {"conversation_id": conversation_id, "messages": len(messages)}
            if known is None or added:
                self.store.set_meta(thread_key(agent_id, source, key), json.dumps(state))
        return Synced(conversation_id, created, added)

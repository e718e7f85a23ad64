"""Chat exports in the formats ChatGPT and Claude write, for the import tests."""

from __future__ import annotations

from typing import Any


def chatgpt_node(
    node_id: str,
    parent: str | None,
    children: list[str],
    role: str | None,
    text: str = "",
    *,
    at: float | None = 1714557600.0,
    content_type: str = "text",
    hidden: bool = False,
    recipient: str = "all",
) -> dict[str, Any]:
    message: dict[str, Any] | None = None
    if role is not None:
        message = {
            "id": node_id,
            "author": {"role": role, "name": None, "metadata": {}},
            "create_time": at,
            "update_time": None,
            "content": {"content_type": content_type, "parts": [text]},
            "status": "finished_successfully",
            "end_turn": True,
            "weight": 1.0,
            "metadata": {"is_visually_hidden_from_conversation": True} if hidden else {},
            "recipient": recipient,
        }
    return {"id": node_id, "message": message, "parent": parent, "children": children}


def chatgpt_conversation() -> dict[str, Any]:
    """Lisbon trip planning: a root, a hidden system message, a user message edited once (two
    branches; the current one is the edit), a tool call and its output, an empty message."""
    t = 1714557600.0  # 2024-05-01T10:00:00Z
    nodes = [
        chatgpt_node("root", None, ["sys"], None),
        chatgpt_node("sys", "root", ["u1"], "system", "You are ChatGPT.", hidden=True),
        chatgpt_node("u1", "sys", ["a1"], "user", "I am moving to Lisbon in May.", at=t),
        chatgpt_node("a1", "u1", ["u2old", "u2"], "assistant", "Congratulations!", at=t + 5),
        chatgpt_node("u2old", "a1", ["a2old"], "user", "My dog is called Max.", at=t + 60),
        chatgpt_node("a2old", "u2old", [], "assistant", "Max is a fine name.", at=t + 65),
        chatgpt_node("u2", "a1", ["code"], "user", "My dog is called Rex.", at=t + 70),
        chatgpt_node(
            "code",
            "u2",
            ["tool"],
            "assistant",
            "print(1)",
            at=t + 72,
            content_type="code",
            recipient="python",
        ),
        chatgpt_node("tool", "code", ["empty"], "tool", "1", at=t + 73),
        chatgpt_node("empty", "tool", ["a2"], "assistant", "", at=t + 74),
        chatgpt_node("a2", "empty", [], "assistant", "Rex will love Lisbon.", at=t + 75),
    ]
    return {
        "title": "Moving to Lisbon",
        "create_time": t,
        "update_time": t + 75,
        "mapping": {n["id"]: n for n in nodes},
        "moderation_results": [],
        "current_node": "a2",
        "plugin_ids": None,
        "conversation_id": "6a1f-lisbon",
        "conversation_template_id": None,
        "id": "6a1f-lisbon",
    }


def chatgpt_short(conversation_id: str, title: str, at: float, text: str) -> dict[str, Any]:
    nodes = [
        chatgpt_node("r", None, ["u"], None),
        chatgpt_node("u", "r", ["a"], "user", text, at=at),
        chatgpt_node("a", "u", [], "assistant", "Noted.", at=at + 1),
    ]
    return {
        "title": title,
        "create_time": at,
        "update_time": at + 1,
        "mapping": {n["id"]: n for n in nodes},
        "current_node": "a",
        "conversation_id": conversation_id,
        "id": conversation_id,
    }


def claude_conversation() -> dict[str, Any]:
    return {
        "uuid": "c0ffee-garden",
        "name": "Garden plans",
        "created_at": "2024-06-02T08:00:00.000000Z",
        "updated_at": "2024-06-02T08:05:00.000000Z",
        "account": {"uuid": "acc-1"},
        "chat_messages": [
            {
                "uuid": "m1",
                "text": "I grow tomatoes on my balcony.",
                "content": [
                    {
                        "start_timestamp": "2024-06-02T08:00:00.000000Z",
                        "stop_timestamp": "2024-06-02T08:00:00.000000Z",
                        "type": "text",
                        "text": "I grow tomatoes on my balcony.",
                        "citations": [],
                    }
                ],
                "sender": "human",
                "created_at": "2024-06-02T08:00:00.000000Z",
                "updated_at": "2024-06-02T08:00:00.000000Z",
                "attachments": [],
                "files": [],
            },
            {
                "uuid": "m2",
                "text": "",
                "content": [
                    {"type": "thinking", "thinking": "The user gardens."},
                    {"type": "text", "text": "Tomatoes like full sun.", "citations": []},
                ],
                "sender": "assistant",
                "created_at": "2024-06-02T08:00:05.000000Z",
                "updated_at": "2024-06-02T08:00:05.000000Z",
                "attachments": [],
                "files": [],
            },
            {
                "uuid": "m3",
                "text": "",
                "content": [],
                "sender": "human",
                "created_at": "2024-06-02T08:01:00.000000Z",
                "updated_at": "2024-06-02T08:01:00.000000Z",
                "attachments": [],
                "files": [],
            },
        ],
    }

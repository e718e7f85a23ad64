"""What is read from each exported conversation and Claude Code transcript (core/chats.py)."""

from __future__ import annotations

import json

import pytest

from hivekeep.core.chats import chat_from, claude_code_messages, text_of
from hivekeep.errors import ValidationError
from tests.chat_exports import chatgpt_conversation, chatgpt_node, claude_conversation


def test_chatgpt_follows_the_current_branch_only() -> None:
    chat = chat_from("chatgpt", chatgpt_conversation())
    assert chat.key == "6a1f-lisbon" and chat.title == "Moving to Lisbon"
    assert [m.content for m in chat.messages] == [
        "I am moving to Lisbon in May.",
        "Congratulations!",
        "My dog is called Rex.",
        "Rex will love Lisbon.",
    ]
    assert chat.messages[0].created_at == "2024-05-01T10:00:00.000000Z"


def test_chatgpt_message_without_a_time_and_multimodal_parts() -> None:
    conversation = chatgpt_conversation()
    node = chatgpt_node(
        "u1", "sys", ["a1"], "user", "I am moving.", at=None, content_type="multimodal_text"
    )
    node["message"]["content"]["parts"] = [{"asset_pointer": "file-1"}, "I am moving."]
    conversation["mapping"]["u1"] = node
    first = chat_from("chatgpt", conversation).messages[0]
    assert (first.content, first.created_at) == ("I am moving.", None)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"mapping": []}, "needs a 'mapping' object"),
        ({"current_node": "nowhere"}, "not in the conversation's mapping"),
        ({"create_time": "yesterday"}, "not a number of seconds"),
    ],
)
def test_chatgpt_wrong_shapes_say_what_is_wrong(change: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        chat_from("chatgpt", chatgpt_conversation() | change)


def test_a_cycle_in_the_mapping_is_refused() -> None:
    conversation = chatgpt_conversation()
    conversation["mapping"]["root"]["parent"] = "a2"
    with pytest.raises(ValidationError, match="its own ancestor"):
        chat_from("chatgpt", conversation)


def test_claude_keeps_the_text_blocks_of_human_and_assistant() -> None:
    chat = chat_from("claude", claude_conversation())
    assert (chat.key, chat.title) == ("c0ffee-garden", "Garden plans")
    assert [(m.role, m.content) for m in chat.messages] == [
        ("user", "I grow tomatoes on my balcony."),
        ("assistant", "Tomatoes like full sun."),
    ]
    with pytest.raises(ValidationError, match="chat_messages"):
        chat_from("claude", {"uuid": "x"})
    with pytest.raises(ValidationError, match="not an ISO date"):
        chat_from("claude", claude_conversation() | {"created_at": "soon"})


def test_text_of_keeps_only_text() -> None:
    assert text_of("  hi ") == "hi"
    assert text_of([{"type": "tool_result", "content": "x"}, {"type": "text", "text": "a"}]) == "a"
    assert text_of(None) == ""


def test_claude_code_transcript_keeps_the_text_turns() -> None:
    lines = [
        json.dumps(
            {
                "type": "user",
                "message": {"role": "user", "content": "Fix the build."},
                "timestamp": "2024-05-01T10:00:00Z",
            }
        ),
        json.dumps(
            {
                "type": "assistant",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "t", "name": "Bash", "input": {}},
                        {"type": "text", "text": "Done."},
                    ],
                },
                "timestamp": "2024-05-01T10:01:00Z",
            }
        ),
        json.dumps(
            {
                "type": "user",
                "isCompactSummary": True,
                "message": {"role": "user", "content": "This session is being continued"},
            }
        ),
        json.dumps(
            {
                "type": "assistant",
                "isSidechain": True,
                "message": {"role": "assistant", "content": "sub"},
            }
        ),
        json.dumps(
            {"type": "user", "message": {"role": "user", "content": "x"}, "timestamp": "not a time"}
        ),
        '{"type": "user", "mess',
    ]
    found = claude_code_messages(lines)
    assert [(m.role, m.content) for m in found] == [
        ("user", "Fix the build."),
        ("assistant", "Done."),
        ("user", "x"),
    ]
    assert found[0].created_at == "2024-05-01T10:00:00.000000Z" and found[2].created_at is None

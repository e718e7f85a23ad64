# Ported from openai/openai-agents-python tests/test_responses.py (get_text_message) and
# tests/utils/hitl.py (HITL_REJECTION_MSG) at 7f7a44f8dc06 (MIT License,
# Copyright (c) 2025 OpenAI; the licence text is in LICENSE beside this file).
# The helpers the session tests use, unchanged.
from openai.types.responses import ResponseOutputItem, ResponseOutputMessage, ResponseOutputText


def get_text_message(content: str) -> ResponseOutputItem:
    return ResponseOutputMessage(
        id="1",
        type="message",
        role="assistant",
        content=[ResponseOutputText(text=content, type="output_text", annotations=[], logprobs=[])],
        status="completed",
    )


HITL_REJECTION_MSG = "Tool execution was not approved."

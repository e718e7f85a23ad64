"""``POST /api/agents/{agent}/remember``: the maintenance call now, over a text or messages."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter
from pydantic import Field, model_validator

from hivekeep import MAX_MESSAGE_CHARS
from hivekeep.server.deps import AgentDep
from hivekeep.server.errors import ErrorOut
from hivekeep.server.schemas import Body

router = APIRouter(tags=["conversations"])

MAX_MESSAGES = 200


class RememberIn(Body):
    """A ``text`` (one user message) or ``messages`` in OpenAI's form, not both."""

    text: str | None = Field(default=None, min_length=1, max_length=MAX_MESSAGE_CHARS)
    # an OpenAI-style message: role, content, name and the like (a few keys), checked by
    # ``agent.remember`` as ``add_messages`` checks them
    messages: list[Annotated[dict[str, Any], Field(max_length=8)]] | None = Field(
        default=None, min_length=1, max_length=MAX_MESSAGES
    )

    @model_validator(mode="after")
    def one_of(self) -> RememberIn:
        if (self.text is None) == (self.messages is None):
            raise ValueError("give either 'text' or 'messages'")
        return self


@router.post(
    "/agents/{agent}/remember",
    responses={
        409: {"model": ErrorOut, "description": "A compaction of this agent is running."},
        422: {"model": ErrorOut, "description": "Bad messages, or no model (llm_not_configured)."},
    },
)
def remember(body: RememberIn, agent: AgentDep) -> dict[str, Any]:
    """Extract memories from the text or messages now (one maintenance call), and say what was
    added, reworded or left alone. Without a model: 422 ``llm_not_configured``, nothing stored.
    A failed call is still 200, with ``status: "failed"`` and the error (the batch is retried)."""
    given = body.text if body.text is not None else body.messages or []
    return agent.remember(given).to_json()

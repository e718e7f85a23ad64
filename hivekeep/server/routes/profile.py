"""``/api/agents/{agent}/profile``: the document always in the agent's system prompt."""

from __future__ import annotations

from fastapi import APIRouter

from hivekeep import Agent, ProfileRecord
from hivekeep.server.deps import AgentDep
from hivekeep.server.errors import ErrorOut
from hivekeep.server.schemas import ProfileOut, ProfileUpdate

router = APIRouter(prefix="/agents/{agent}/profile", tags=["profile"])


def _out(agent: Agent, profile: ProfileRecord) -> ProfileOut:
    return ProfileOut(
        agent_id=profile.agent_id,
        text=profile.text,
        tokens=profile.tokens,
        budget=agent.profile_budget,
        revision=profile.revision,
        updated_at=profile.updated_at,
        manually_edited_at=profile.manually_edited_at,
        last_rewrite_at=profile.last_rewrite_at,
    )


@router.get("")
def get_profile(agent: AgentDep) -> ProfileOut:
    return _out(agent, agent.profile())


@router.put(
    "",
    responses={
        409: {"model": ErrorOut, "description": "The profile moved past expected_revision."},
        413: {"model": ErrorOut, "description": "The document would exceed the token budget."},
    },
)
def put_profile(agent: AgentDep, body: ProfileUpdate) -> ProfileOut:
    """Replace the whole document (a user's edit), under the same budget rule as the tool."""
    return _out(agent, agent.set_profile(body.text, expected_revision=body.expected_revision))

"""``/api/agents``: list, create, read, rename or re-describe, and delete agents."""

from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter

from hivekeep.agent import Agent
from hivekeep.errors import ValidationError
from hivekeep.server.auth import AccessDep
from hivekeep.server.deps import AgentDep, HiveDep
from hivekeep.server.schemas import AgentDeleted, AgentList, AgentOut, AgentPatch, NewAgent
from hivekeep.views import deletion_summary

router = APIRouter(prefix="/agents", tags=["agents"])


def agent_out(agent: Agent) -> AgentOut:
    return AgentOut(**asdict(agent.record))


@router.get("")
def list_agents(hive: HiveDep, access: AccessDep) -> AgentList:
    """Every agent of the hive (a scoped token's agents only), oldest first."""
    return AgentList(agents=[agent_out(agent) for agent in hive.agents() if access.sees(agent.id)])


@router.post("", status_code=201, responses={409: {"description": "The name is taken."}})
def create_agent(body: NewAgent, hive: HiveDep) -> AgentOut:
    """A new agent with an empty profile; names are unique, case-insensitively."""
    return agent_out(hive.create_agent(body.name, role=body.role))


@router.get("/{agent}")
def get_agent(agent: AgentDep) -> AgentOut:
    """One agent, by id or name."""
    return agent_out(agent)


@router.patch("/{agent}", responses={409: {"description": "The new name is taken."}})
def update_agent(agent: AgentDep, body: AgentPatch, hive: HiveDep) -> AgentOut:
    """Rename the agent and/or change its role."""
    if body.name is None and body.role is None:
        raise ValidationError("Send at least one of 'name' and 'role' to change.")
    return agent_out(hive.update_agent(agent.id, name=body.name, role=body.role))


@router.delete("/{agent}")
def delete_agent(agent: AgentDep, hive: HiveDep) -> AgentDeleted:
    """Delete the agent with its profile, private memories and conversations. Its shared
    memories stay, recallable by every agent under its name (``author_deleted``)."""
    gone = hive.delete_agent(agent.id)
    return AgentDeleted(
        name=agent.name,
        private_memories_deleted=gone.private_memories,
        conversations_deleted=gone.conversations,
        shared_memories_kept=gone.shared_memories,
        message=deletion_summary(agent.name, gone),
    )

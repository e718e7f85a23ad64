"""``/api/access-tokens``: the hive's scoped tokens, managed with the admin token only.

The same as ``hivekeep tokens`` and ``hive.tokens``. (``/api/tokens`` is taken: it counts text
with the profile's tokenizer.) A new token is in the response once; only its hash is kept.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request, Response

from hivekeep import Hive
from hivekeep.server.deps import HiveDep
from hivekeep.server.events import EventStreams
from hivekeep.server.schemas import AccessTokenOut, CreatedAccessToken, NewAccessToken
from hivekeep.views import token_view

router = APIRouter(prefix="/access-tokens", tags=["access tokens"])


def _names(hive: Hive) -> dict[int, str]:
    return {agent.id: agent.name for agent in hive.agents()}


@router.get("")
def list_access_tokens(hive: HiveDep) -> list[AccessTokenOut]:
    """Every token: label, agents, read_only, created_at, last_used_at (never the token)."""
    names = _names(hive)
    return [AccessTokenOut(**token_view(record, names)) for record in hive.tokens.list()]


@router.post("", status_code=201, responses={409: {"description": "The label is taken."}})
def create_access_token(body: NewAccessToken, hive: HiveDep) -> CreatedAccessToken:
    """A new token; ``token`` is in this response only."""
    created = hive.tokens.create(body.label, body.agents, read_only=body.read_only)
    return CreatedAccessToken(**token_view(created.record, _names(hive)), token=created.token)


@router.delete("/{label}", status_code=204)
def revoke_access_token(
    label: Annotated[str, Path(min_length=1, max_length=64)], hive: HiveDep, request: Request
) -> Response:
    """Revoke: every server refuses the token from its next request on, and this one ends the
    event streams open with it now (another server's end within ``events.RECHECK_S``)."""
    hive.tokens.revoke(label)
    streams: EventStreams = request.app.state.event_streams
    streams.close_where(lambda stream: stream.access.label == label.strip())
    return Response(status_code=204)

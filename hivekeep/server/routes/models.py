"""``/api/settings``: the hive's models as configured, whether the chat model can be used (a
missing API key is said at once, not at the first chat), and the credentials a person gives the
running server (``PUT /api/settings/llm-credentials``: in memory only, never shown back)."""

from __future__ import annotations

import dataclasses
from typing import Any

from fastapi import APIRouter
from pydantic import Field

from hivekeep import Hive
from hivekeep.server.deps import HiveDep
from hivekeep.server.schemas import Body

router = APIRouter(tags=["settings"])


class LLMCredentials(Body):
    """A provider's API key and/or base URL for this server process; both null forgets them."""

    provider: str = Field(min_length=1, max_length=64, description="e.g. openai, anthropic.")
    api_key: str | None = Field(default=None, min_length=1, max_length=1000)
    base_url: str | None = Field(
        default=None, min_length=8, max_length=2000, pattern=r"^https?://\S+$"
    )


def hive_settings_view(hive: Hive) -> dict[str, Any]:
    settings = hive.settings
    embedder = hive.embedder
    model, problem = hive.llm_status()
    return {
        "llm": {
            "configured": hive.llm_configured,
            "spec": settings.llm,
            "model": model,
            "error": problem,
            "credentials": hive.llm_credentials(),
            "compacting_model": settings.compacting_model,
            "extraction_model": settings.extraction_model,
        },
        "embedder": {
            "spec": settings.embeddings,
            "model_id": embedder.model_id,
            "dimension": int(embedder.dimension),
        },
        "profile_max_tokens": hive.profile_budget,
        "compaction_defaults": dataclasses.asdict(hive.compaction_defaults),
    }


@router.get("/settings")
def hive_settings(hive: HiveDep) -> dict[str, Any]:
    """The hive's models as configured (specs and model ids, never a key); ``llm.error`` says
    why the chat model cannot be used (e.g. no API key), ``llm.credentials`` what was set here."""
    return hive_settings_view(hive)


@router.put("/settings/llm-credentials")
def set_llm_credentials(hive: HiveDep, body: LLMCredentials) -> dict[str, Any]:
    """Give a provider's API key and/or base URL to this server process (kept in memory only:
    never stored in the hive, exported, logged or sent back). Answers the hive's settings."""
    hive.set_llm_credentials(body.provider, api_key=body.api_key, base_url=body.base_url)
    return hive_settings_view(hive)

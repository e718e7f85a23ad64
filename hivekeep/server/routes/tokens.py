"""``/api/tokens``: count text with the tokenizer the profile budget is measured with.

The web UI's profile editor shows this count as the user types, so the number it shows is the
number a save is judged by (no client-side guess).
"""

from __future__ import annotations

from fastapi import APIRouter

from hivekeep.core.tokens import count_tokens
from hivekeep.server.schemas import TokenCount, TokenText

router = APIRouter(tags=["profile"])


@router.post("/tokens")
def count(body: TokenText) -> TokenCount:
    """The token count of ``text`` (cl100k_base, as the profile budget counts)."""
    return TokenCount(tokens=count_tokens(body.text))

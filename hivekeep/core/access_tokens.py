"""The shape of a scoped API token and the hash it is stored as (pure: no I/O, no clock).

A token reads ``hk_<key id>_<secret>``: the key id (16 hex digits) is public and finds the row in
one indexed read; the secret (43 URL-safe characters, 256 random bits) is never stored. What is
stored is ``HMAC-SHA256(salt, secret)`` with a random salt per token. A fast keyed hash rather
than a slow KDF (scrypt, PBKDF2) is a decision: those slow down guessing a *low-entropy* password,
while a 256-bit random secret cannot be guessed at any speed, and a slow KDF would cost every
request tens of milliseconds (docs/server.md, "Scoped tokens").
"""

from __future__ import annotations

import hashlib
import hmac
import re

from hivekeep.errors import ValidationError

PREFIX = "hk_"
KEY_ID_HEX = 16
MAX_LABEL_CHARS = 64
_TOKEN = re.compile(rf"{PREFIX}([0-9a-f]{{{KEY_ID_HEX}}})_([A-Za-z0-9_-]{{40,100}})")


def compose(key_id: str, secret: str) -> str:
    return f"{PREFIX}{key_id}_{secret}"


def is_scoped_token(text: str) -> bool:
    """Whether ``text`` claims to be a scoped token (it may still be wrong, or revoked)."""
    return text.startswith(PREFIX)


def split(token: str) -> tuple[str, str] | None:
    """``(key id, secret)`` of a well-formed token, else None (never a hivekeep token)."""
    match = _TOKEN.fullmatch(token)
    return (match.group(1), match.group(2)) if match else None


def secret_hash(salt: str, secret: str) -> str:
    """What is stored of ``secret``: HMAC-SHA256 under the token's own ``salt``, in hex."""
    return hmac.new(bytes.fromhex(salt), secret.encode(), hashlib.sha256).hexdigest()


def matches(salt: str, secret: str, stored_hash: str) -> bool:
    """Constant time: the comparison takes as long whatever prefix of the hash is right."""
    return hmac.compare_digest(secret_hash(salt, secret), stored_hash)


def token_label(label: str) -> str:
    """A label as stored: trimmed, 1-64 printable characters."""
    label = label.strip()
    if not label or len(label) > MAX_LABEL_CHARS or not label.isprintable():
        raise ValidationError(
            f"A token label must be 1-{MAX_LABEL_CHARS} printable characters, not {label!r}."
        )
    return label

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
# what a URL path segment carries as is, so REST can address every label
# (``DELETE /api/access-tokens/{label}``): no '/', '?', '#', '%', and no '.' or '..'
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@ -]*")
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
    """A label as stored: trimmed, 1-64 characters that a URL path carries as they are."""
    label = label.strip()
    if len(label) > MAX_LABEL_CHARS or not _LABEL.fullmatch(label):
        raise ValidationError(
            f"A token label is 1-{MAX_LABEL_CHARS} letters, digits, spaces, '.', '_', ':', "
            f"'@' or '-', starting with a letter or digit, not {label!r}.",
            field="label",
        )
    return label


MIN_ADMIN_TOKEN_CHARS = 16


def admin_token_problem(secret: str) -> str | None:
    """Why ``secret`` cannot be a server's admin token (``HIVEKEEP_API_TOKEN``), or None: the
    one rule of ``hivekeep serve`` and ``hivekeep mcp --http``.

    Refused at start rather than failing every request later: a header is read as latin-1, so a
    non-ASCII token could never match, and a short one could be guessed.
    """
    if not secret.strip():
        return "An API token must not be empty."
    if not secret.isascii() or not secret.isprintable():
        return (
            "The API token (HIVEKEEP_API_TOKEN) must be printable ASCII: an HTTP header cannot "
            "carry other characters reliably, so no client could ever match it. Use e.g. "
            "`openssl rand -hex 32`."
        )
    if len(secret) < MIN_ADMIN_TOKEN_CHARS:
        return (
            f"The API token (HIVEKEEP_API_TOKEN) has {len(secret)} characters; use at least "
            f"{MIN_ADMIN_TOKEN_CHARS}, e.g. `openssl rand -hex 32`."
        )
    return None

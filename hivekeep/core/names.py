"""The rules for an agent's name and role, stated once: ``Hive`` applies them when it creates or
renames an agent, and an import applies them to every agent line before it writes anything."""

from __future__ import annotations

import re

from hivekeep.errors import ValidationError

AGENT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9 _.\-]{0,63}")
MAX_ROLE_CHARS = 4000


def agent_name(name: str) -> str:
    """The name with outer spaces removed; raises ValidationError if it breaks the rule."""
    name = name.strip()
    if not AGENT_NAME.fullmatch(name):
        raise ValidationError(
            f"Agent name {name!r} is not valid: use 1-64 letters, digits, spaces, '_', '.' "
            "or '-', starting with a letter.",
            field="name",
        )
    return name


def agent_role(role: str) -> str:
    """The role as given; raises ValidationError when it is too long."""
    if len(role) > MAX_ROLE_CHARS:
        raise ValidationError(
            f"An agent's role is at most {MAX_ROLE_CHARS} characters, got {len(role)}.",
            field="role",
        )
    return role
